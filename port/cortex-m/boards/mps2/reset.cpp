// SPDX-License-Identifier: MIT
// Reset cause and reset request for the mps2 boards.
#include <cstdint>

#include "loopcanary/board.hpp"

namespace loopcanary::board {
namespace {

constexpr std::uintptr_t kScbAircr = 0xE000ED0C;
constexpr std::uint32_t kAircrVectKey = 0x05FAu << 16;  // required for a write to take effect
constexpr std::uint32_t kAircrPriGroup = 0x7u << 8;
constexpr std::uint32_t kAircrSysResetReq = 1u << 2;

volatile std::uint32_t& aircr() noexcept { return *reinterpret_cast<volatile std::uint32_t*>(kScbAircr); }

}  // namespace

ResetCause reset_cause() noexcept { return ResetCause::unknown; }

void request_reset() noexcept {
  __asm__ volatile("dsb" ::: "memory");
  aircr() = kAircrVectKey | (aircr() & kAircrPriGroup) | kAircrSysResetReq;
  __asm__ volatile("dsb" ::: "memory");
  for (;;) {
  }
}

}  // namespace loopcanary::board
