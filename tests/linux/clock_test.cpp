// SPDX-License-Identifier: MIT
// The hot-tier clock: which source, at what rate, how it agrees with CLOCK_MONOTONIC, and what
// hang limits its 32-bit wrap allows. Also run with LOOPCANARY_CLOCK=monotonic (see
// CMakeLists.txt), so both sources are tested on a machine that has an invariant TSC, and from
// just before the 32-bit wrap (wrap.*, tick_wrap_main.cpp).
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/linux.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

std::int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Orders the clock read after the loads before it. A plain rdtsc may execute ahead of an
// earlier load still waiting for its cache line (microseconds on a contended VM): the port
// accepts that (the watchdog clamps a stamp slightly ahead of its own clock to 0 elapsed); this
// test checks the clocks themselves, so it takes ordered reads.
lc::tick_t ordered_now() {
#if LOOPCANARY_LINUX_HAS_TSC
  _mm_lfence();
#endif
  return lx::Clock::now();
}

}  // namespace

TEST(LinuxClock, ChoiceIsVisibleAndConsistent) {
  const lx::ClockInfo& info = lx::clock_info();
  const char* forced = std::getenv("LOOPCANARY_CLOCK");
  if (forced != nullptr && std::strcmp(forced, "monotonic") == 0) {
    EXPECT_EQ(info.source, lx::ClockSource::monotonic);
  }
  EXPECT_STRNE(info.reason, "");
  EXPECT_EQ(info.tick_offset_hook, LOOPCANARY_LINUX_TICK_OFFSET_HOOK != 0) << "only test builds have the hook";
  EXPECT_EQ(lx::tick_hz(), info.tick_hz);
  if (info.source == lx::ClockSource::tsc) {
    EXPECT_STREQ(info.name, "tsc");
    EXPECT_GE(info.tick_hz, 1'000'000u);
    EXPECT_LT(info.tick_hz, 2'000'001u);
    EXPECT_NEAR(static_cast<double>(info.tsc_hz >> info.tsc_shift), static_cast<double>(info.tick_hz), 1.0);
  } else {
    EXPECT_STREQ(info.name, "clock_monotonic");
    EXPECT_EQ(info.tick_hz, 1'000'000u);
  }
  // 2^32 ticks is at least 35 minutes: hang limits up to 17 minutes are accepted.
  EXPECT_GE(info.wrap_seconds, 2147u);
  EXPECT_EQ(info.wrap_seconds, static_cast<std::uint32_t>((std::uint64_t{1} << 32) / info.tick_hz));
}

TEST(LinuxClock, SelectionIsFixedOnceMade) {
  const lx::ClockInfo& info = lx::clock_info();
  EXPECT_TRUE(lx::select_clock(lx::ClockChoice::automatic));
  const bool tsc = info.source == lx::ClockSource::tsc;
  EXPECT_EQ(lx::select_clock(lx::ClockChoice::tsc), tsc);
  EXPECT_EQ(lx::select_clock(lx::ClockChoice::monotonic), !tsc);
  EXPECT_EQ(lx::clock_info().source, info.source) << "stamps of two clocks must never mix";
}

TEST(LinuxClock, AdvancesWithClockMonotonic) {
  const std::uint32_t hz = lx::tick_hz();
  const std::int64_t n0 = monotonic_ns();
  const lc::tick_t t0 = lx::Clock::now();
  timespec wait{0, 100'000'000};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, &wait) != 0) {
  }
  const lc::tick_t t1 = lx::Clock::now();
  const std::int64_t n1 = monotonic_ns();
  const double clock_s = static_cast<double>(lc::ticks_between(t0, t1)) / hz;
  const double mono_s = static_cast<double>(n1 - n0) / 1e9;
  EXPECT_NEAR(clock_s, mono_s, mono_s * 0.01 + 200e-6) << lx::clock_info().name;
}

TEST(LinuxClock, NeverGoesBackwardsAcrossThreads) {
  // The loop stamps begin on one CPU, the watchdog reads now on another: a stamp read after
  // another thread published its own must not be earlier (the CPUs' clocks agree).
  std::atomic<lc::tick_t> published{lx::Clock::now()};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop.load(std::memory_order_relaxed)) published.store(ordered_now());
  });
  std::uint32_t backwards = 0;
  lc::tick_t worst = 0;
  for (int i = 0; i < 200'000; ++i) {
    const lc::tick_t seen = published.load();
    const lc::tick_t now = ordered_now();
    if (lc::ticks_between(seen, now) > lc::kMaxIntervalTicks) {
      ++backwards;
      if (lc::ticks_between(now, seen) > worst) worst = lc::ticks_between(now, seen);
    }
  }
  stop = true;
  writer.join();
  EXPECT_EQ(backwards, 0u) << "by up to " << worst << " ticks";
}

TEST(LinuxClock, MonitorAcceptsHangLimitsWithinHalfTheWrap) {
  lc::MonitorConfig config;
  config.tick_hz = lx::tick_hz();
  config.threshold_us = 1'000'000;
  config.hang_limit_us = 10u * 60u * 1'000'000u;  // 10 minutes
  lx::PortMonitor ok_monitor;
  EXPECT_EQ(ok_monitor.init(config), lc::Status::ok);
  config.hang_limit_us = 40u * 60u * 1'000'000u;  // 40 minutes: beyond half of any wrap here
  lx::PortMonitor refused;
  EXPECT_EQ(refused.init(config), lc::Status::hang_limit_too_long);
}

TEST(LinuxClock, BeginEndStampWithThePortClock) {
  lc::MonitorConfig config;
  config.tick_hz = lx::tick_hz();
  config.threshold_us = 1'000;
  config.sample_interval_us = 1'000;
  lx::PortMonitor monitor;
  ASSERT_EQ(monitor.init(config), lc::Status::ok);
  static constexpr lc::Event kEvent{"stamp"};
  {
    LOOPCANARY_DISPATCH(monitor, kEvent);
    timespec wait{0, 3'000'000};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, &wait) != 0) {
    }
  }
  const lc::LoopStats s = monitor.stats();
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_GE(lc::us_from_ticks(s.max_duration, s.tick_hz), 2'900u);
}
