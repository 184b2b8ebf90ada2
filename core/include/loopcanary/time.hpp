// SPDX-License-Identifier: MIT
// Tick arithmetic: one unsigned width (tick_t), subtracted in that width, converted to human
// units only off the hot path.
#pragma once

#include <cstdint>

#include "loopcanary/compiler.hpp"
#include "loopcanary/config.hpp"

namespace loopcanary {

/// Ticks from `earlier` to `later`, correct across the counter's wrap when the true interval is
/// shorter than one wrap period. Any context.
constexpr tick_t ticks_between(tick_t earlier, tick_t later) noexcept {
  return static_cast<tick_t>(later - earlier);
}

namespace detail {

/// n / d for d > 0, rounded down, the way a 32-bit target does it here: the high word with one
/// 32-bit division, then 32 shift-and-subtract steps for the low word. Any context. Separate
/// from divide() so hosts test it too.
constexpr std::uint64_t divide_in_steps(std::uint64_t n, std::uint32_t d) noexcept {
  const auto high = static_cast<std::uint32_t>(n >> 32);
  const auto low = static_cast<std::uint32_t>(n);
  std::uint32_t remainder = high % d;  // < d
  std::uint32_t quotient_low = 0;
  for (int bit = 31; bit >= 0; --bit) {
    const bool carry = (remainder >> 31) != 0;  // the shifted remainder needs 33 bits
    remainder = (remainder << 1) | ((low >> bit) & 1u);
    quotient_low <<= 1;
    if (carry || remainder >= d) {  // with a carry the true remainder exceeds d: modular subtract
      remainder -= d;
      quotient_low |= 1u;
    }
  }
  return (static_cast<std::uint64_t>(high / d) << 32) | quotient_low;
}

/// n / d for d > 0, rounded down. Any context; off the hot path.
///
/// On 32-bit targets a `uint64_t / uint32_t` expression calls the compiler's 64-by-64 library
/// division (libgcc's __udivmoddi4: 702 bytes of flash on Cortex-M3). Every division in the
/// core and the ports has a 32-bit divisor, so they all come here: divide_in_steps() is ~60
/// bytes. 64-bit targets divide in one instruction.
constexpr std::uint64_t divide(std::uint64_t n, std::uint32_t d) noexcept {
#if UINTPTR_MAX > 0xFFFFFFFFu
  return n / d;
#else
  return divide_in_steps(n, d);
#endif
}

/// (x * mul + round) / div for div > 0 and round < div, without forming the 64-bit product
/// x * mul: round 0 rounds down, div - 1 rounds up. Exact whenever the result fits 64 bits
/// (x = whole * div + rest, and rest * mul + round < 2^64, as rest and round are below div and
/// every factor is 32-bit). Any context; off the hot path. One out-of-line copy serves both unit
/// conversions below.
LOOPCANARY_NOINLINE constexpr std::uint64_t scale(std::uint64_t x, std::uint32_t mul, std::uint32_t div,
                                                  std::uint32_t round = 0) noexcept {
  const std::uint64_t whole = divide(x, div);
  const std::uint64_t rest = x - whole * div;
  return whole * mul + divide(rest * mul + round, div);
}

}  // namespace detail

/// Ticks to microseconds at `tick_hz` (> 0), rounded down. Any context; off the hot path.
constexpr std::uint64_t us_from_ticks(std::uint64_t ticks, std::uint32_t tick_hz) noexcept {
  return detail::scale(ticks, 1'000'000u, tick_hz);
}

/// Microseconds to ticks at `tick_hz`, rounded up: the fewest whole ticks that last at least
/// `us` (so a threshold never fires early). With tick_hz of 1 MHz or more the round trip is
/// exact, us_from_ticks(ticks_from_us(us)) == us, so a configured duration reads back as
/// configured in every record; a slower clock reads it back rounded up to its tick. Exact
/// whenever the result fits 64 bits (for every us below 2^32 seconds, 136 years, at any
/// tick_hz). The result is 64-bit: a caller that stores it as tick_t checks it against
/// kMaxIntervalTicks first. Any context; off the hot path (64-by-32 divisions).
constexpr std::uint64_t ticks_from_us(std::uint64_t us, std::uint32_t tick_hz) noexcept {
  return detail::scale(us, tick_hz, 1'000'000u, 999'999u);
}

/// True when `us` lasts less than one tick at `tick_hz` (0 included): the clock cannot tell such
/// a duration from none, and a configuration refuses it (*_below_one_tick) rather than round it
/// up to a tick. Any context; off the hot path.
constexpr bool below_one_tick(std::uint32_t us, std::uint32_t tick_hz) noexcept {
  return std::uint64_t{us} * tick_hz < 1'000'000u;  // both 32-bit: the product fits
}

/// The longest interval init() accepts for a hang limit: half the counter's wrap period, so a
/// watchdog that polls at least that often can never confuse "long" with "wrapped".
inline constexpr tick_t kMaxIntervalTicks = static_cast<tick_t>(~tick_t{0} / 2u);

/// The tick counter extended to 64 bits, for spans longer than tick_t can tell apart (a run of
/// hours, a timer due in an hour): fed the counter's readings, it counts their wraps. The low
/// bits of a value are the reading itself (`static_cast<tick_t>(value)`); values are for
/// subtracting and comparing, not an absolute time (the first one lies one wrap period above
/// its reading, so that readings before it widen too). Exact as long as update() sees a
/// reading at least once per wrap period (2^32 ticks: 71.6 minutes at 1 MHz, 8.9 s at
/// 480 MHz); a longer gap loses whole wrap periods. A plain object: one context at a time.
/// Off the hot path.
class WideTicks {
 public:
  constexpr explicit WideTicks(tick_t first = 0) noexcept : value_(kWrap + first) {}

  /// Advances to reading `now`, taken at or after the previous one and less than one wrap
  /// period after it; returns the new value().
  constexpr std::uint64_t update(tick_t now) noexcept {
    value_ += ticks_between(static_cast<tick_t>(value_), now);
    return value_;
  }

  /// The value of the latest reading.
  constexpr std::uint64_t value() const noexcept { return value_; }

  /// The value of reading `t`, taken at most kMaxIntervalTicks before or after the latest one
  /// (a stamp taken in another context, a deadline). Does not advance.
  constexpr std::uint64_t widen(tick_t t) const noexcept {
    const tick_t ahead = ticks_between(static_cast<tick_t>(value_), t);
    if (ahead <= kMaxIntervalTicks) return value_ + ahead;
    return value_ - ticks_between(t, static_cast<tick_t>(value_));
  }

 private:
  static constexpr std::uint64_t kWrap = std::uint64_t{~tick_t{0}} + 1u;
  std::uint64_t value_;
};

}  // namespace loopcanary
