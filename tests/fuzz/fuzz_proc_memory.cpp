// SPDX-License-Identifier: MIT
// Fuzz target: the Linux port's reader of the memory fields of /proc/<pid>/status
// (loopcanary/port/linux/memory.hpp: parse_status_memory, and parse_status_kib under it) and the
// message that names a refused field. The input is the content of a status file, in a buffer of
// exactly its size, so that AddressSanitizer sees any read past `length`. Asserts: every
// outcome is one of ParseError's values; a refusal names VmRSS or VmHWM on a line the input
// has (0 only for empty input); an accepted value is a whole number of KiB and matches what
// parse_status_kib reads for that field alone; the message is NUL-terminated inside its
// buffer, whatever the buffer's size.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "fuzz_check.hpp"
#include "loopcanary/port/linux/memory.hpp"
#include "loopcanary/port/linux/proc.hpp"

namespace {

namespace pl = loopcanary::port_linux;

std::size_t count_lines(const char* text, std::size_t size) {
  std::size_t lines = size == 0 ? 0 : 1;
  for (std::size_t i = 0; i + 1 < size; ++i) {
    if (text[i] == '\n') ++lines;
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  pl::StatusMemory memory;
  memory.resident = 1;  // untouched unless both fields parse
  memory.resident_peak = 3;
  const pl::StatusFailure failure = pl::parse_status_memory(text, size, memory);
  FUZZ_CHECK(static_cast<unsigned>(failure.error) <= static_cast<unsigned>(pl::ParseError::truncated), "ParseError %u",
             static_cast<unsigned>(failure.error));
  if (failure.error == pl::ParseError::ok) {
    FUZZ_CHECK(memory.resident % 1024u == 0 && memory.resident_peak % 1024u == 0, "not whole KiB: %llu %llu",
               static_cast<unsigned long long>(memory.resident), static_cast<unsigned long long>(memory.resident_peak));
    std::uint64_t alone = 0;
    std::size_t line = 0;
    FUZZ_CHECK(pl::parse_status_kib(text, size, "VmRSS", alone, line) == pl::ParseError::ok && alone == memory.resident,
               "VmRSS alone differs");
    FUZZ_CHECK(line >= 1 && line <= count_lines(text, size), "VmRSS on line %zu of %zu", line, count_lines(text, size));
  } else {
    FUZZ_CHECK(memory.resident == 1 && memory.resident_peak == 3, "a refused parse wrote its output");
    FUZZ_CHECK(std::strcmp(failure.field, "VmRSS") == 0 || std::strcmp(failure.field, "VmHWM") == 0, "field '%s'",
               failure.field);
    FUZZ_CHECK(failure.line <= count_lines(text, size), "line %zu of %zu", failure.line, count_lines(text, size));
    FUZZ_CHECK((failure.line == 0) == (failure.error == pl::ParseError::empty), "line %zu for error %u", failure.line,
               static_cast<unsigned>(failure.error));
  }
  // The message, in a buffer cut at every small size and in a roomy one.
  char buffer[96];
  for (const std::size_t limit : {std::size_t{1}, std::size_t{7}, std::size_t{30}, sizeof buffer}) {
    std::memset(buffer, 'x', sizeof buffer);
    const char* text_out = pl::format(failure, "/proc/self/status", buffer, limit);
    FUZZ_CHECK(text_out == buffer, "format() returned another buffer");
    FUZZ_CHECK(std::memchr(buffer, '\0', limit) != nullptr, "no NUL within %zu bytes", limit);
  }
  return 0;
}
