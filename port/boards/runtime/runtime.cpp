// SPDX-License-Identifier: MIT
// The boards' shared run-time start and fault printer (runtime.hpp).
#include "runtime.hpp"

#include <cstddef>
#include <cstring>

#include "loopcanary/board.hpp"

// Linker script symbols (each board's .ld).
extern "C" {
extern std::uint32_t __data_start[];
extern std::uint32_t __data_end[];
extern const std::uint32_t __data_load[];
extern std::uint32_t __bss_start[];
extern std::uint32_t __bss_end[];
using InitFunction = void (*)();
extern const InitFunction __init_array_start[];
extern const InitFunction __init_array_end[];
}

// The firmware's main(), called through an assembler label: ISO C++ forbids naming ::main.
int loopcanary_board_main() __asm__("main");

namespace loopcanary::board::detail {
namespace {
char hex_digit(std::uint32_t v) noexcept { return static_cast<char>(v < 10 ? '0' + v : 'a' + (v - 10)); }
}  // namespace

void write_hex_line(const char* label, std::uint32_t value) noexcept {
  char line[48];
  std::size_t n = 0;
  for (const char* p = label; *p != '\0' && n < 30; ++p) line[n++] = *p;
  line[n++] = ' ';
  line[n++] = '0';
  line[n++] = 'x';
  for (int shift = 28; shift >= 0; shift -= 4) line[n++] = hex_digit((value >> shift) & 0xFu);
  line[n++] = '\n';
  line[n] = '\0';
  loopcanary::board::write(line);
}

}  // namespace loopcanary::board::detail

extern "C" {

// Used: only the boards' reset code names it, in assembly, which link-time optimisation cannot
// see.
[[noreturn, gnu::used]] void loopcanary_board_start() {
  std::memcpy(__data_start, __data_load,
              static_cast<std::size_t>(reinterpret_cast<char*>(__data_end) - reinterpret_cast<char*>(__data_start)));
  std::memset(__bss_start, 0,
              static_cast<std::size_t>(reinterpret_cast<char*>(__bss_end) - reinterpret_cast<char*>(__bss_start)));
  for (const InitFunction* f = __init_array_start; f != __init_array_end; ++f) (*f)();
  loopcanary::board::exit(loopcanary_board_main());
}

}  // extern "C"
