// SPDX-License-Identifier: MIT
// Tick arithmetic: the 64-by-32 division every conversion uses (the 32-bit targets' algorithm,
// checked against the host's own division), the microsecond/tick conversions built on it, the
// 64-bit extension of the wrapping counter, and the sim port's virtual time over long spans.
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "loopcanary/port/sim.hpp"
#include "loopcanary/time.hpp"
#include "loopcanary/watchdog.hpp"

namespace {

namespace lc = loopcanary;
using lc::detail::divide;
using lc::detail::divide_in_steps;
using lc::tick_t;

TEST(Divide, InStepsMatchesTheHostsDivisionAtTheEdges) {
  const std::uint64_t numerators[] = {0u,
                                      1u,
                                      999'999u,
                                      0xFFFF'FFFFu,
                                      0x1'0000'0000u,
                                      0x1'0000'0001u,
                                      0x7FFF'FFFF'FFFF'FFFFu,
                                      0x8000'0000'0000'0000u,
                                      0xFFFF'FFFF'0000'0000u,
                                      0xFFFF'FFFF'FFFF'FFFEu,
                                      0xFFFF'FFFF'FFFF'FFFFu};
  // Divisors with the top bit set exercise the 33-bit remainder (the carry branch).
  const std::uint32_t divisors[] = {1u, 2u, 3u, 10u, 1000u, 1'000'000u, 1'953'125u,
                                    0x7FFF'FFFFu, 0x8000'0000u, 0x8000'0001u, 0xFFFF'FFFEu, 0xFFFF'FFFFu};
  for (const std::uint64_t n : numerators) {
    for (const std::uint32_t d : divisors) {
      EXPECT_EQ(divide_in_steps(n, d), n / d) << n << " / " << d;
      EXPECT_EQ(divide(n, d), n / d) << n << " / " << d;
    }
  }
}

TEST(Divide, InStepsMatchesTheHostsDivisionOnRandomOperands) {
  std::mt19937_64 random(20261122u);
  for (int i = 0; i < 200'000; ++i) {
    const std::uint64_t n = random() >> (random() % 64u);  // every magnitude
    auto d = static_cast<std::uint32_t>(random() >> (32u + random() % 32u));
    if (d == 0) d = 1;
    ASSERT_EQ(divide_in_steps(n, d), n / d) << n << " / " << d;
  }
}

TEST(Divide, IsAConstantExpression) {
  static_assert(divide_in_steps(0xFFFF'FFFF'FFFF'FFFFu, 0xFFFF'FFFFu) == 0x1'0000'0001u);
  static_assert(lc::ticks_from_us(1'500'000u, 25'000'000u) == 37'500'000u);
  SUCCEED();
}

TEST(Scale, MultipliesBeforeDividingWithoutFormingTheProduct) {
  using lc::detail::scale;
  static_assert(scale(0xFFFF'FFFF'FFFF'FFFFu, 0xFFFF'FFFFu, 0xFFFF'FFFFu) == 0xFFFF'FFFF'FFFF'FFFFu);
  EXPECT_EQ(scale(10u, 3u, 4u), 7u) << "7.5 rounds down";
  EXPECT_EQ(scale(10u, 3u, 4u, 3u), 8u) << "7.5 rounds up with round = div - 1";
  EXPECT_EQ(scale(8u, 3u, 4u, 3u), 6u) << "exact: no rounding";
  static_assert(scale(0xFFFF'FFFF'FFFF'FFFEu, 0xFFFF'FFFFu, 0xFFFF'FFFFu, 0xFFFF'FFFEu) == 0xFFFF'FFFF'FFFF'FFFEu);
  EXPECT_EQ(scale(0u, 7u, 3u), 0u);
  // x * mul is 2^72 here: the whole and the remainder are scaled separately.
  EXPECT_EQ(scale(std::uint64_t{1} << 40, 1u << 31, 1u << 30), std::uint64_t{1} << 41);
  const std::uint64_t x = (std::uint64_t{1} << 40) + 5u;  // here x * 1000 fits: the plain formula is the oracle
  EXPECT_EQ(scale(x, 1000u, 3u), x * 1000u / 3u);
  EXPECT_EQ(scale(x, 3u, 1000u), x * 3u / 1000u);
}

TEST(Conversions, TicksFromMicrosecondsRoundsUpWithoutOverflow) {
  EXPECT_EQ(lc::ticks_from_us(0u, 1'000'000u), 0u);
  EXPECT_EQ(lc::ticks_from_us(1u, 1'953'125u), 2u);         // 1.953125 ticks
  EXPECT_EQ(lc::ticks_from_us(1'000'000u, 1'953'125u), 1'953'125u);
  EXPECT_EQ(lc::ticks_from_us(999'999u, 32'768u), 32'768u);  // 32767.967...
  EXPECT_EQ(lc::ticks_from_us(30u, 32'768u), 1u);            // 0.98 of a tick: one whole tick
  EXPECT_EQ(lc::ticks_from_us(5u, 0u), 0u);                  // no clock: no ticks, no division by 0
  // 2^32 - 1 us at 480 MHz: 2'061'584'301'600 ticks, beyond 32 bits, exact.
  EXPECT_EQ(lc::ticks_from_us(0xFFFF'FFFFu, 480'000'000u), 2'061'584'301'600u);
}

TEST(Conversions, MicrosecondsFromTicksRoundsDownWithoutOverflow) {
  EXPECT_EQ(lc::us_from_ticks(0u, 25'000'000u), 0u);
  EXPECT_EQ(lc::us_from_ticks(24u, 25'000'000u), 0u);  // 0.96 us
  EXPECT_EQ(lc::us_from_ticks(25u, 25'000'000u), 1u);
  EXPECT_EQ(lc::us_from_ticks(1'953'125u, 1'953'125u), 1'000'000u);
  EXPECT_EQ(lc::us_from_ticks(32'767u, 32'768u), 999'969u);  // 999969.48...
  // 2^40 ticks at 25 MHz: 43'980'465'111.04 us.
  EXPECT_EQ(lc::us_from_ticks(std::uint64_t{1} << 40, 25'000'000u), 43'980'465'111u);
}

TEST(Conversions, RoundTripLosesLessThanOneTick) {
  for (const std::uint32_t hz : {32'768u, 1'000'000u, 1'953'125u, 25'000'000u, 480'000'000u}) {
    for (const std::uint64_t ticks : {std::uint64_t{1}, std::uint64_t{12'345}, std::uint64_t{0xFFFF'FFFF}}) {
      const std::uint64_t back = lc::ticks_from_us(lc::us_from_ticks(ticks, hz), hz);
      EXPECT_LE(back, ticks);
      EXPECT_LE(ticks - back, (hz + 999'999u) / 1'000'000u) << ticks << " ticks at " << hz << " Hz";
    }
  }
}

// A configured duration reads back exactly at every tick rate of 1 MHz and more, among them
// rates that are not a whole number of MHz (a calibrated TSC: 100 ms at 2'994'374'000 Hz went
// to 299'437'400 ticks and read back 100'000 us; a rate that rounds down read 99'999).
TEST(Conversions, AConfiguredDurationReadsBackExactlyAtOneMegahertzAndAbove) {
  for (const std::uint32_t hz : {1'000'000u, 1'953'125u, 2'994'374'011u, 3'000'000'001u, 999'999'937u, 0xFFFF'FFFFu}) {
    for (const std::uint64_t us : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{999}, std::uint64_t{100'000},
                                   std::uint64_t{5'000'000}, std::uint64_t{600'000'000}, std::uint64_t{0xFFFF'FFFF}}) {
      const std::uint64_t ticks = lc::ticks_from_us(us, hz);
      EXPECT_EQ(lc::us_from_ticks(ticks, hz), us) << us << " us at " << hz << " Hz";
      EXPECT_LT(lc::us_from_ticks(ticks - 1u, hz), us) << "the fewest ticks: " << us << " us at " << hz << " Hz";
    }
  }
  // Below 1 MHz a tick is longer than a microsecond: the duration reads back rounded up to it.
  EXPECT_EQ(lc::us_from_ticks(lc::ticks_from_us(100'000u, 32'768u), 32'768u), 100'006u);  // 3277 ticks
}

// ---- WideTicks: the counter extended to 64 bits -----------------------------------------

// Readings three quarters of a wrap apart, starting just before the wrap: every wrap is counted
// and the low 32 bits stay the reading.
TEST(WideTicks, CountsEveryWrapOfTheReadings) {
  tick_t t = 0xFFFF'FF00u;
  lc::WideTicks clock(t);
  const std::uint64_t first = clock.value();
  EXPECT_EQ(static_cast<tick_t>(first), t);
  for (int i = 0; i < 6; ++i) {
    t = static_cast<tick_t>(t + 0xC000'0000u);
    const std::uint64_t updated = clock.update(t);
    EXPECT_EQ(updated, clock.value());
    EXPECT_EQ(static_cast<tick_t>(updated), t);
  }
  EXPECT_EQ(clock.value() - first, 6u * std::uint64_t{0xC000'0000u});
  EXPECT_EQ(clock.update(t), first + 6u * std::uint64_t{0xC000'0000u}) << "the same reading again: no time passed";
}

// The longest gap between two readings is one wrap less one tick.
TEST(WideTicks, AGapOfOneTickLessThanAWrapIsCounted) {
  lc::WideTicks clock(5u);
  const std::uint64_t first = clock.value();
  clock.update(4u);
  EXPECT_EQ(clock.value() - first, 0xFFFF'FFFFu);
}

// A reading up to half a wrap before or after the latest one widens to its own value, on either
// side of the wrap, also before the first reading.
TEST(WideTicks, WidensReadingsWithinHalfAWrapEitherSide) {
  for (const tick_t start : {tick_t{3}, tick_t{0x8000'0000u}, tick_t{0xFFFF'FFF0u}}) {
    lc::WideTicks clock(start);
    for (int step = 0; step < 3; ++step) {
      const std::uint64_t v = clock.value();
      const tick_t t = static_cast<tick_t>(v);
      EXPECT_EQ(clock.widen(t), v);
      EXPECT_EQ(clock.widen(static_cast<tick_t>(t - 5u)), v - 5u) << start;
      EXPECT_EQ(clock.widen(static_cast<tick_t>(t + 5u)), v + 5u) << start;
      EXPECT_EQ(clock.widen(static_cast<tick_t>(t - lc::kMaxIntervalTicks)), v - lc::kMaxIntervalTicks) << start;
      EXPECT_EQ(clock.widen(static_cast<tick_t>(t + lc::kMaxIntervalTicks)), v + lc::kMaxIntervalTicks) << start;
      EXPECT_EQ(clock.value(), v) << "widen() does not advance";
      clock.update(static_cast<tick_t>(t + 0xA000'0000u));
    }
  }
}

// ---- The sim port over more than half a wrap -------------------------------------------------

namespace sim = loopcanary::sim;

// A poll period longer than half the wrap (3000 s at 1 MHz) still polls one period after the
// start and every period after that, not at once; from just before the wrap.
TEST(SimScheduler, PeriodLongerThanHalfTheWrapPollsOnTime) {
  const auto start = static_cast<tick_t>(0u - 1000u);
  sim::VirtualTime time(start);
  sim::Machine machine;
  lc::StaticWatchdog<1, 2> watchdog;
  const tick_t period = 3'000'000'000u;
  sim::Scheduler scheduler(time, machine, watchdog, period);
  EXPECT_EQ(scheduler.next_poll(), static_cast<tick_t>(start + period));
  scheduler.idle(1);
  EXPECT_EQ(scheduler.polls(), 0u);
  scheduler.idle(period - 2u);
  EXPECT_EQ(scheduler.polls(), 0u) << "one tick before the first poll";
  scheduler.idle(1);
  EXPECT_EQ(scheduler.polls(), 1u);
  scheduler.idle(period - 1u);
  EXPECT_EQ(scheduler.polls(), 1u) << "one tick before the second poll";
  scheduler.idle(1);
  EXPECT_EQ(scheduler.polls(), 2u);
  EXPECT_EQ(time.peek(), static_cast<tick_t>(start + 2u * period));
  EXPECT_EQ(scheduler.next_poll(), static_cast<tick_t>(start + 3u * period));
}

// Virtual time counts every tick it advanced in 64 bits, across any number of wraps.
TEST(SimVirtualTime, ElapsedCountsPastTheWrap) {
  sim::VirtualTime time(static_cast<tick_t>(0u - 10u));
  for (int i = 0; i < 5; ++i) time.advance(0xFFFF'FFFFu);
  time.set_read_step(3);
  (void)time.read();
  EXPECT_EQ(time.elapsed(), 5u * std::uint64_t{0xFFFF'FFFFu} + 3u);
  EXPECT_EQ(time.peek(), static_cast<tick_t>(0u - 10u + 5u * 0xFFFF'FFFFu + 3u));
}

}  // namespace
