// SPDX-License-Identifier: MIT
// Tick arithmetic: the 64-by-32 division every conversion uses (the 32-bit targets' algorithm,
// checked against the host's own division) and the microsecond/tick conversions built on it.
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "loopcanary/time.hpp"

namespace {

namespace lc = loopcanary;
using lc::detail::divide;
using lc::detail::divide_in_steps;

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
  EXPECT_EQ(scale(0u, 7u, 3u), 0u);
  // x * mul is 2^72 here: the whole and the remainder are scaled separately.
  EXPECT_EQ(scale(std::uint64_t{1} << 40, 1u << 31, 1u << 30), std::uint64_t{1} << 41);
  const std::uint64_t x = (std::uint64_t{1} << 40) + 5u;  // here x * 1000 fits: the plain formula is the oracle
  EXPECT_EQ(scale(x, 1000u, 3u), x * 1000u / 3u);
  EXPECT_EQ(scale(x, 3u, 1000u), x * 3u / 1000u);
}

TEST(Conversions, TicksFromMicrosecondsRoundsDownWithoutOverflow) {
  EXPECT_EQ(lc::ticks_from_us(0u, 1'000'000u), 0u);
  EXPECT_EQ(lc::ticks_from_us(1u, 1'953'125u), 1u);         // 1.953125 ticks
  EXPECT_EQ(lc::ticks_from_us(1'000'000u, 1'953'125u), 1'953'125u);
  EXPECT_EQ(lc::ticks_from_us(999'999u, 32'768u), 32'767u);  // 32767.967...
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

}  // namespace
