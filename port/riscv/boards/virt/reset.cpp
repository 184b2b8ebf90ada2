// SPDX-License-Identifier: MIT
// Exit code, reset cause and reset request for the virt board: QEMU's test device (the SiFive
// test finisher at 0x100000) ends the run with a status or resets the machine. The machine
// software interrupt, pended through the CLINT.
#include <cstdint>

#include "loopcanary/board.hpp"

namespace loopcanary::board {
namespace {

constexpr std::uintptr_t kTestDevice = 0x00100000;
constexpr std::uint32_t kPass = 0x5555;   // exit status 0
constexpr std::uint32_t kFail = 0x3333;   // exit status in bits 31:16
constexpr std::uint32_t kReset = 0x7777;  // system reset
constexpr std::uintptr_t kClintMsip = 0x02000000;  // hart 0's machine software interrupt pending
constexpr std::uint32_t kMieMsie = 1u << 3;        // mie: machine software interrupt enable

[[noreturn]] void finisher(std::uint32_t value) noexcept {
  __asm__ volatile("fence" ::: "memory");  // every write before it is done
  *reinterpret_cast<volatile std::uint32_t*>(kTestDevice) = value;
  for (;;) {
  }
}

}  // namespace

void exit(int code) noexcept {
  const auto status = static_cast<std::uint32_t>(code) & 0xFFu;
  finisher(status == 0 ? kPass : (status << 16) | kFail);
}

void pend_software_interrupt() noexcept {
  __asm__ volatile("csrs mie, %0" ::"r"(kMieMsie) : "memory");
  *reinterpret_cast<volatile std::uint32_t*>(kClintMsip) = 1;
}

ResetCause reset_cause() noexcept { return ResetCause::unknown; }

void request_reset() noexcept { finisher(kReset); }

}  // namespace loopcanary::board
