// SPDX-License-Identifier: MIT
// Helpers of the tool's tests: fixture paths, temporary directories and files, records.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "../temp_dir.hpp"
#include "model.hpp"

namespace loopcanary::tool::test {

inline std::string fixture(const std::string& name) { return std::string(LOOPCANARY_TOOL_FIXTURES) + "/" + name; }

using loopcanary::test::TempDir;  // tests/temp_dir.hpp

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
