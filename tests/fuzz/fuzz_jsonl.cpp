// SPDX-License-Identifier: MIT
// Fuzz target: the host tool's reader of JSON Lines block reports (sim/tool/model.hpp, Reader
// and parse_record in reader.cpp). The input is a log file, read with Reader::read_stream (which
// also takes a binary capture when the first bytes say so) twice: with the default options, and
// with the smallest line limit (1 KiB) and stacks not kept. Asserts: every byte is read; the
// callbacks (block and health records) see exactly the records counted; every warning line names the file and a line
// (`<file>:<line>: `) or, in a capture, a byte offset (`<file>: offset <n>: `).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_check.hpp"
#include "model.hpp"

namespace {

namespace lt = loopcanary::tool;

constexpr char kName[] = "fuzz.jsonl";

// `<kName>:<digits>: ` or `<kName>: offset <digits>: `, or the notice that further warnings of
// a kind are counted only (`<kName>[:<digits>]: more ...`).
bool names_where(const std::string& line) {
  const std::string prefix = std::string(kName) + ":";
  if (line.compare(0, prefix.size(), prefix) != 0) return false;
  std::size_t at = prefix.size();
  const auto digits = [&] {
    const std::size_t from = at;
    while (at < line.size() && std::isdigit(static_cast<unsigned char>(line[at])) != 0) ++at;
    return at > from;
  };
  if (digits()) return line.compare(at, 2, ": ") == 0;
  if (line.compare(at, 8, " offset ") == 0) {
    at += 8;
    return digits() && line.compare(at, 2, ": ") == 0;
  }
  return line.compare(at, 6, " more ") == 0;
}

void read_with(lt::Reader& reader, std::ostringstream& warnings, const std::string& input) {
  warnings.str("");
  const lt::ReadStats before = reader.stats();
  std::uint64_t seen = 0;
  std::istringstream in(input);
  reader.set_health_callback([&](lt::HealthLog& health) {
    ++seen;
    FUZZ_CHECK(health.file == kName, "health record of file \"%s\"", health.file.c_str());
  });
  reader.read_stream(in, kName, [&](lt::LogRecord& record) {
    ++seen;
    FUZZ_CHECK(record.file == kName, "record of file \"%s\"", record.file.c_str());
  });
  const lt::ReadStats& after = reader.stats();
  FUZZ_CHECK(after.bytes - before.bytes == input.size(), "read %llu of %zu bytes",
             static_cast<unsigned long long>(after.bytes - before.bytes), input.size());
  FUZZ_CHECK(after.records - before.records == seen, "%llu records counted, %llu passed on",
             static_cast<unsigned long long>(after.records - before.records), static_cast<unsigned long long>(seen));
  std::istringstream lines(warnings.str());
  for (std::string line; std::getline(lines, line);) {
    FUZZ_CHECK(names_where(line), "a warning that names no line or offset: %s", line.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One Reader per option set for every input, as the tool reads many files with one.
  static std::ostringstream warnings;
  static lt::Reader standard(warnings);
  static lt::Reader small(warnings, [] {
    lt::ReaderOptions o;
    o.max_line_bytes = 1024;
    o.want_stacks = false;
    o.max_printed_per_kind = 3;
    return o;
  }());
  const std::string input(reinterpret_cast<const char*>(data), size);
  read_with(standard, warnings, input);
  read_with(small, warnings, input);
  return 0;
}
