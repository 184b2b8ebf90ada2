// SPDX-License-Identifier: MIT
// Console and exit code over Arm semihosting (QEMU: -semihosting-config enable=on,...).
// A semihosting call on M-profile is `bkpt 0xAB` with the operation in r0 and a pointer to its
// argument block in r1; the result comes back in r0. Without a host (no debugger, QEMU without
// semihosting) the breakpoint faults: this board is for QEMU and debug probes.
#include <cstdint>

#include "loopcanary_board.hpp"

namespace loopcanary::board {
namespace {

constexpr std::uint32_t kSysWrite0 = 0x04;         // write a NUL-terminated string
constexpr std::uint32_t kSysExitExtended = 0x20;   // exit with a reason and a status
constexpr std::uint32_t kApplicationExit = 0x20026;  // ADP_Stopped_ApplicationExit

std::uint32_t semihost(std::uint32_t operation, const void* argument) noexcept {
  register std::uint32_t r0 __asm__("r0") = operation;
  register const void* r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

}  // namespace

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

void write(const char* text) noexcept { semihost(kSysWrite0, text); }

void exit(int code) noexcept {
  const std::uint32_t block[2] = {kApplicationExit, static_cast<std::uint32_t>(code)};
  for (;;) semihost(kSysExitExtended, block);
}

}  // namespace loopcanary::board
