// SPDX-License-Identifier: MIT
// Semihosting on the virt board (QEMU: -semihosting-config enable=on,...): the call and the
// board's name; console and host files are port/boards/semihosting/semihosting.cpp. A RISC-V
// semihosting call is `ebreak` between `slli zero, zero, 0x1f` and `srai zero, zero, 7` (the
// three uncompressed, in one 16-byte-aligned group so no page boundary splits them), with the
// operation in a0 and its argument in a1; the result comes back in a0. Without semihosting
// the ebreak is a breakpoint exception: the board's trap handler ends the run.
#include <cstdint>

#include "loopcanary/board.hpp"
#include "semihost.hpp"

namespace loopcanary::board {

std::uint32_t detail::semihost(std::uint32_t operation, const void* argument) noexcept {
  register std::uint32_t a0 __asm__("a0") = operation;
  register const void* a1 __asm__("a1") = argument;
  __asm__ volatile(
      ".option push\n"
      ".option norvc\n"
      ".balign 16\n"
      "slli zero, zero, 0x1f\n"
      "ebreak\n"
      "srai zero, zero, 7\n"
      ".option pop\n"
      : "+r"(a0)
      : "r"(a1)
      : "memory");
  return a0;
}

const char* name() noexcept { return "virt rv32imac"; }

}  // namespace loopcanary::board
