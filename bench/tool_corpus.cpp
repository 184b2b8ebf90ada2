// SPDX-License-Identifier: MIT
// loopcanary_tool_corpus: writes a JSON Lines corpus for the host tool's benchmark
// (docs/benchmarks.md, "Host tool"). Usage:
//
//   loopcanary_tool_corpus SEED.jsonl OUT.jsonl BYTES [DEVICES [VERSIONS]]
//   loopcanary_tool_corpus --fleet OUT_DIR DEVICES DAYS VERSION=SEED.jsonl...
//
// SEED holds block records as the demo writes them (loopcanary-sim --time virtual --log-dir).
// OUT receives at least BYTES bytes (whole lines): the seed's records replayed again and again
// as if from DEVICES units (default 100) running VERSIONS firmware versions (default 8): each
// replay gets its qualifier ("<seed qualifier>-v<version>-unit<device>"), its loop
// ("main" or "radio"), later dispatch, report and start numbers and a later wall time, so the
// tool sees many distinct blocks, groups and qualifiers. Exit status 0, or 1 with a message.
//
// --fleet: a fleet's logs (docs/fleet.md) in OUT_DIR (created when missing): DEVICES units, each
// with one log rotated daily over DAYS days, `unitNNN.<day>T000000Z-<serial>.jsonl` (day 1 is
// 2026-01-01). The M firmware versions are given in release order, each by its qualifier and a
// seed log written by that firmware (every kind of line of it: blocks, deadline misses, health).
// Unit d on day k runs version floor((k * DEVICES + d) * M / (DEVICES * DAYS)), a staged roll-out
// in which every version runs somewhere when DEVICES * DAYS >= M, and writes its version's seed
// once that day: qualifier set to the version, dispatch numbers moved past the previous days' and
// other units' (distinct block IDs; a deadline miss's "delayed_by" dispatch with them), wall time
// on that day (from 01:00, a minute apart per unit, a second apart per line).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

// Adds `shift` to the number of every `"key":` member in `line` (a deadline miss names the
// dispatch that delayed it in "delayed_by":{"dispatch":N,...}: it moves with the others).
void shift_members(std::string& line, const std::string& key, std::uint64_t shift) {
  const std::string needle = "\"" + key + "\":";
  for (std::size_t at = line.find(needle); at != std::string::npos; at = line.find(needle, at + 1)) {
    const std::size_t begin = at + needle.size();
    std::size_t end = begin;
    while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
    if (end == begin) continue;  // null
    line.replace(begin, end - begin, std::to_string(std::strtoull(line.c_str() + begin, nullptr, 10) + shift));
  }
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

std::vector<std::string> read_seed(const char* path) {
  std::ifstream seed_file(path);
  std::vector<std::string> seed;
  for (std::string line; std::getline(seed_file, line);) {
    if (!line.empty() && line.front() == '{') seed.push_back(line);
  }
  return seed;
}

int write_fleet(int argc, char** argv) {
  if (argc < 6) {
    std::cerr << "usage: loopcanary_tool_corpus --fleet OUT_DIR DEVICES DAYS VERSION=SEED.jsonl...\n";
    return 1;
  }
  const std::string dir = argv[2];
  const std::uint64_t devices = std::strtoull(argv[3], nullptr, 10);
  const std::uint64_t days = std::strtoull(argv[4], nullptr, 10);
  if (devices == 0 || devices > 999 || days == 0 || days > 28) {
    std::cerr << "loopcanary_tool_corpus: DEVICES must be 1..999 and DAYS 1..28\n";
    return 1;
  }
  std::vector<std::string> versions;
  std::vector<std::vector<std::string>> seeds;
  for (int i = 5; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "loopcanary_tool_corpus: expected VERSION=SEED.jsonl, got " << arg << "\n";
      return 1;
    }
    versions.push_back(arg.substr(0, eq));
    seeds.push_back(read_seed(arg.c_str() + eq + 1));
    if (seeds.back().empty()) {
      std::cerr << "loopcanary_tool_corpus: " << arg.substr(eq + 1) << ": no records\n";
      return 1;
    }
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    std::cerr << "loopcanary_tool_corpus: " << dir << ": " << error.message() << "\n";
    return 1;
  }
  char name[64];
  char time[40];
  std::string line;
  for (std::uint64_t d = 0; d < devices; ++d) {
    for (std::uint64_t k = 0; k < days; ++k) {
      const std::uint64_t version = (k * devices + d) * versions.size() / (devices * days);
      std::snprintf(name, sizeof name, "/unit%03u.202601%02uT000000Z-%06u.jsonl", static_cast<unsigned>(d),
                    static_cast<unsigned>(k + 1), static_cast<unsigned>(k + 1));
      std::ofstream out(dir + name, std::ios::binary | std::ios::trunc);
      const std::uint64_t shift = (d * days + k + 1) * 1'000'000;
      std::uint64_t n = 0;
      for (const std::string& record : seeds[version]) {
        line = record;
        set_member(line, "qualifier", versions[version], true);
        shift_members(line, "dispatch", shift);
        const std::uint64_t seconds = 3600 + d * 60 + n;  // from 01:00, a minute apart per unit
        std::snprintf(time, sizeof time, "2026-01-%02uT%02u:%02u:%02u.000Z", static_cast<unsigned>(k + 1),
                      static_cast<unsigned>(seconds / 3600 % 24), static_cast<unsigned>(seconds / 60 % 60),
                      static_cast<unsigned>(seconds % 60));
        set_member(line, "time", time, true);
        line += '\n';
        out.write(line.data(), static_cast<std::streamsize>(line.size()));
        ++n;
      }
      out.flush();
      if (!out) {
        std::cerr << "loopcanary_tool_corpus: " << dir << name << ": write failed\n";
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--fleet") return write_fleet(argc, argv);
  if (argc < 4 || argc > 6) {
    std::cerr << "usage: loopcanary_tool_corpus SEED.jsonl OUT.jsonl BYTES [DEVICES [VERSIONS]]\n"
                 "       loopcanary_tool_corpus --fleet OUT_DIR DEVICES DAYS VERSION=SEED.jsonl...\n";
    return 1;
  }
  const std::uint64_t bytes = std::strtoull(argv[3], nullptr, 10);
  const std::uint64_t devices = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 100;
  const std::uint64_t versions = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 8;
  if (bytes == 0 || devices == 0 || versions == 0) {
    std::cerr << "loopcanary_tool_corpus: BYTES, DEVICES and VERSIONS must be positive numbers\n";
    return 1;
  }
  const std::vector<std::string> seed = read_seed(argv[1]);
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
