// SPDX-License-Identifier: MIT
// Semihosting on the mps2 boards (QEMU: -semihosting-config enable=on,...): the call, the
// board's name and the exit code; console and host files are in
// port/boards/semihosting/semihosting.cpp.
// A semihosting call on M-profile is `bkpt 0xAB` with the operation in r0 and a pointer to its
// argument block in r1; the result comes back in r0. Without a host (no debugger, QEMU without
// semihosting) the breakpoint faults: this board is for QEMU and debug probes.
#include <cstdint>

#include "loopcanary/board.hpp"
#include "semihost.hpp"

namespace loopcanary::board {
namespace {

constexpr std::uint32_t kSysExitExtended = 0x20;   // exit with a reason and a status
constexpr std::uint32_t kApplicationExit = 0x20026;  // ADP_Stopped_ApplicationExit

}  // namespace

std::uint32_t detail::semihost(std::uint32_t operation, const void* argument) noexcept {
  register std::uint32_t r0 __asm__("r0") = operation;
  register const void* r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

const char* name() noexcept {
#if defined(__ARM_ARCH_7EM__) && defined(__ARM_FP) && (__ARM_FP & 8)
  return "mps2-an500 cortex-m7";
#elif defined(__ARM_ARCH_7EM__)
  return "mps2-an386 cortex-m4f";
#elif defined(__ARM_ARCH_7M__)
  return "mps2-an385 cortex-m3";
#else
  return "mps2 (link check only)";
#endif
}

void exit(int code) noexcept {
  const std::uint32_t block[2] = {kApplicationExit, static_cast<std::uint32_t>(code)};
  for (;;) detail::semihost(kSysExitExtended, block);
}

}  // namespace loopcanary::board
