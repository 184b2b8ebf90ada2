// SPDX-License-Identifier: MIT
// Helpers of the tool's tests: fixture paths, temporary directories and files, records.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "model.hpp"

namespace loopcanary::tool::test {

inline std::string fixture(const std::string& name) { return std::string(LOOPCANARY_TOOL_FIXTURES) + "/" + name; }

/// A fresh directory under TMPDIR (or /tmp), removed with its files at destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/loopcanary_tool_test.XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) path_ = buffer.data();
  }
  ~TempDir() {
    for (const std::string& f : files_) std::remove(f.c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  /// Writes `content` to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& content) {
    const std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << content;
    files_.push_back(file);
    return file;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

/// One JSON line of a report (docs/report-format.md), with the fields the tests vary.
struct RecordSpec {
  std::uint64_t report = 1;
  const char* phase = "final";
  std::uint64_t dispatch = 5;
  std::uint64_t start = 1000;
  std::uint64_t duration_us = 200000;
  const char* loop = "main";
  const char* event = "ota";
  const char* cause = "running";
  const char* flags = "";
  /// The "stacks" array's items, e.g. {"at_us":1,"scopes":["s"],"pcs":["0x10"]}.
  std::string stacks = "{\"at_us\":30000,\"scopes\":[\"crc\"],\"pcs\":[\"0x1234\"]}";
  /// Extra top-level members, each starting with a comma.
  std::string extra;
};

inline std::string json_line(const RecordSpec& s) {
  return "{\"report\":" + std::to_string(s.report) + ",\"phase\":\"" + s.phase +
         "\",\"qualifier\":\"fw-1.0\",\"loop\":\"" + s.loop + "\",\"loop_index\":0,\"event\":\"" + s.event +
         "\",\"dispatch\":" + std::to_string(s.dispatch) + ",\"tick_hz\":1000000,\"start\":" + std::to_string(s.start) +
         ",\"end\":" + std::to_string(s.start + s.duration_us) + ",\"duration_ticks\":" + std::to_string(s.duration_us) +
         ",\"duration_us\":" + std::to_string(s.duration_us) + ",\"threshold_us\":100000,\"cause\":\"" + s.cause +
         "\",\"flags\":[" + s.flags + "],\"samples\":{\"taken\":1,\"kept\":1,\"overwritten\":0,\"missed\":0},\"stacks\":[" +
         s.stacks + "],\"records_dropped\":0,\"notes_dropped\":0" + s.extra + "}\n";
}

}  // namespace loopcanary::tool::test
