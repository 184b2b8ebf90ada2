// SPDX-License-Identifier: MIT
// loopcanary_tool_corpus: writes a JSON Lines corpus for the host tool's benchmark
// (docs/benchmarks.md, "Host tool"). Usage:
//
//   loopcanary_tool_corpus SEED.jsonl OUT.jsonl BYTES [DEVICES [VERSIONS]]
//
// SEED holds block records as the demo writes them (loopcanary-sim --time virtual --log-dir).
// OUT receives at least BYTES bytes (whole lines): the seed's records replayed again and again
// as if from DEVICES units (default 100) running VERSIONS firmware versions (default 8): each
// replay gets its qualifier ("<seed qualifier>-v<version>-unit<device>"), its loop
// ("main" or "radio"), later dispatch, report and start numbers and a later wall time, so the
// tool sees many distinct blocks, groups and qualifiers. Exit status 0, or 1 with a message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

// Replaces the value of the first `"key":` member in `line` (a number, or a string when
// `quoted`) with `value`. False when the key is absent.
bool set_member(std::string& line, const std::string& key, const std::string& value, bool quoted) {
  const std::string needle = "\"" + key + "\":";
  const std::size_t at = line.find(needle);
  if (at == std::string::npos) return false;
  std::size_t begin = at + needle.size();
  std::size_t end = begin;
  if (quoted) {
    if (line[begin] != '"') return false;
    end = line.find('"', begin + 1);
    if (end == std::string::npos) return false;
    ++begin;
  } else {
    while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
  }
  line.replace(begin, end - begin, value);
  return true;
}

std::uint64_t member_number(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const std::size_t at = line.find(needle);
  return at == std::string::npos ? 0 : std::strtoull(line.c_str() + at + needle.size(), nullptr, 10);
}

std::string member_string(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  const std::size_t at = line.find(needle);
  if (at == std::string::npos) return {};
  const std::size_t begin = at + needle.size();
  return line.substr(begin, line.find('"', begin) - begin);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::cerr << "usage: loopcanary_tool_corpus SEED.jsonl OUT.jsonl BYTES [DEVICES [VERSIONS]]\n";
    return 1;
  }
  const std::uint64_t bytes = std::strtoull(argv[3], nullptr, 10);
  const std::uint64_t devices = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 100;
  const std::uint64_t versions = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 8;
  if (bytes == 0 || devices == 0 || versions == 0) {
    std::cerr << "loopcanary_tool_corpus: BYTES, DEVICES and VERSIONS must be positive numbers\n";
    return 1;
  }
  std::ifstream seed_file(argv[1]);
  std::vector<std::string> seed;
  for (std::string line; std::getline(seed_file, line);) {
    if (!line.empty() && line.front() == '{') seed.push_back(line);
  }
  if (seed.empty()) {
    std::cerr << "loopcanary_tool_corpus: " << argv[1] << ": no records\n";
    return 1;
  }
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  if (!out) {
    std::cerr << "loopcanary_tool_corpus: " << argv[2] << ": cannot create\n";
    return 1;
  }
  const std::string base_qualifier = member_string(seed.front(), "qualifier");
  // Per device: how far its counters have advanced (one replay after the other).
  std::vector<std::uint64_t> replays(devices, 0);
  std::uint64_t written = 0;
  std::string line;
  char time[40];
  for (std::uint64_t n = 0; written < bytes; ++n) {
    const std::uint64_t device = n % devices;
    const std::uint64_t replay = replays[device]++;
    const std::uint64_t version = (device + replay / 50) % versions;  // units upgrade over time
    const std::string qualifier = base_qualifier + "-v" + std::to_string(version) + "-unit" + std::to_string(device);
    const std::string loop = replay % 3 == 2 ? "radio" : "main";
    for (const std::string& record : seed) {
      line = record;
      const std::uint64_t shift = replay * 1000;
      set_member(line, "report", std::to_string(member_number(record, "report") + replay * seed.size()), false);
      set_member(line, "qualifier", qualifier, true);
      set_member(line, "loop", loop, true);
      set_member(line, "dispatch", std::to_string(member_number(record, "dispatch") + shift), false);
      set_member(line, "start", std::to_string(member_number(record, "start") + shift * 1000), false);
      // Wall time: a day of logs, one replay every ~10 s per device.
      const std::uint64_t seconds = (replay * 10 + device) % 86400;
      std::snprintf(time, sizeof time, "2026-01-01T%02u:%02u:%02u.%03uZ", static_cast<unsigned>(seconds / 3600),
                    static_cast<unsigned>(seconds / 60 % 60), static_cast<unsigned>(seconds % 60),
                    static_cast<unsigned>(n % 1000));
      set_member(line, "time", time, true);
      line += '\n';
      out.write(line.data(), static_cast<std::streamsize>(line.size()));
      written += line.size();
    }
  }
  out.flush();
  if (!out) {
    std::cerr << "loopcanary_tool_corpus: " << argv[2] << ": write failed\n";
    return 1;
  }
  return 0;
}
