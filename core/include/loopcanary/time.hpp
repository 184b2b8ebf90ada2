// SPDX-License-Identifier: MIT
// Tick arithmetic: one unsigned width (tick_t), subtracted in that width, converted to human
// units only off the hot path.
#pragma once

#include <cstdint>

#include "loopcanary/config.hpp"

namespace loopcanary {

/// Ticks from `earlier` to `later`, correct across the counter's wrap when the true interval is
/// shorter than one wrap period. Any context.
constexpr tick_t ticks_between(tick_t earlier, tick_t later) noexcept {
  return static_cast<tick_t>(later - earlier);
}

/// Microseconds to ticks at `tick_hz`, rounded down; exact for us below 2^32 seconds. Any
/// context; costs a 64-bit division (keep it off the hot path).
constexpr std::uint64_t ticks_from_us(std::uint64_t us, std::uint32_t tick_hz) noexcept {
  // Whole seconds and the remainder separately, so no intermediate product overflows.
  const std::uint64_t whole_s = us / 1'000'000u;
  const std::uint64_t rest_us = us % 1'000'000u;
  return whole_s * tick_hz + (rest_us * tick_hz) / 1'000'000u;
}

/// Ticks to microseconds at `tick_hz` (> 0), rounded down. Any context.
constexpr std::uint64_t us_from_ticks(std::uint64_t ticks, std::uint32_t tick_hz) noexcept {
  const std::uint64_t whole_s = ticks / tick_hz;
  const std::uint64_t rest = ticks % tick_hz;
  return whole_s * 1'000'000u + (rest * 1'000'000u) / tick_hz;
}

/// The longest interval init() accepts for a hang limit: half the counter's wrap period, so a
/// watchdog that polls at least that often can never confuse "long" with "wrapped".
inline constexpr tick_t kMaxIntervalTicks = static_cast<tick_t>(~tick_t{0} / 2u);

}  // namespace loopcanary
