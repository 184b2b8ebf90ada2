// SPDX-License-Identifier: MIT
// The hot-tier clock: which source, at what rate, how it agrees with CLOCK_MONOTONIC, and what
// hang limits its 32-bit wrap allows; the selection's decisions (plan_clock) and the counter's
// checks (counter_refusal) on every branch, with the inputs of both architectures; the CPU's
// own counter (the TSC, CNTVCT_EL0 under QEMU too) against its rate. Also run with
// LOOPCANARY_CLOCK=monotonic, =counter and with the other architecture's counter named (see
// CMakeLists.txt), so both sources and the refusal are tested whatever the kernel's clocksource,
// and from just before the 32-bit wrap (wrap.*, tick_wrap_main.cpp).
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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
// (CNTVCT_EL0's read has its ISB already: read_counter().)
lc::tick_t ordered_now() {
#if LOOPCANARY_LINUX_HAS_TSC
  _mm_lfence();
#endif
  return lx::Clock::now();
}

bool contains(const char* text, const char* part) { return text != nullptr && std::strstr(text, part) != nullptr; }

// This CPU's counter as LOOPCANARY_CLOCK names it, and the other architecture's.
constexpr const char* kOwnCounterName = LOOPCANARY_LINUX_HAS_TSC ? "tsc" : LOOPCANARY_LINUX_HAS_CNTVCT ? "cntvct" : "";
constexpr const char* kForeignCounterName = LOOPCANARY_LINUX_HAS_TSC ? "cntvct" : "tsc";

// The counter's rate against CLOCK_MONOTONIC over `ns`, the read brackets taken tight (as the
// port's calibration does, independently of it).
double measure_counter_hz(long ns) {
  const std::int64_t n0 = monotonic_ns();
  const std::uint64_t c0 = lx::detail::read_counter();
  timespec wait{0, ns};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, &wait) != 0) {
  }
  const std::uint64_t c1 = lx::detail::read_counter();
  const std::int64_t n1 = monotonic_ns();
  return static_cast<double>(c1 - c0) * 1e9 / static_cast<double>(n1 - n0);
}

}  // namespace

TEST(LinuxClock, ChoiceIsVisibleAndConsistent) {
  const lx::ClockInfo& info = lx::clock_info();
  const char* forced = std::getenv("LOOPCANARY_CLOCK");
  std::printf("[ CLOCK    ] %s @ %u Hz (shift %u), counter reported %llu Hz, measured %llu Hz, kernel clocksource "
              "'%s': %s\n",
              info.name, info.tick_hz, info.counter_shift, static_cast<unsigned long long>(info.counter_reported_hz),
              static_cast<unsigned long long>(info.counter_measured_hz), info.kernel_clocksource, info.reason);
  EXPECT_STRNE(info.reason, "");
  EXPECT_EQ(info.tick_offset_hook, LOOPCANARY_LINUX_TICK_OFFSET_HOOK != 0) << "only test builds have the hook";
  EXPECT_EQ(lx::tick_hz(), info.tick_hz);
  const std::string wanted = forced == nullptr ? "" : forced;
  if (wanted == "monotonic") {
    EXPECT_EQ(info.source, lx::ClockSource::monotonic);
    EXPECT_TRUE(contains(info.reason, "LOOPCANARY_CLOCK=monotonic")) << info.reason;
  } else if (wanted == kForeignCounterName) {
    // The other architecture's counter: refused, the reason naming it.
    EXPECT_EQ(info.source, lx::ClockSource::monotonic);
    EXPECT_TRUE(contains(info.reason, ("LOOPCANARY_CLOCK=" + wanted + " names").c_str())) << info.reason;
    EXPECT_TRUE(contains(info.reason, "which this CPU does not have")) << info.reason;
  } else if (LOOPCANARY_LINUX_HAS_COUNTER && (wanted == "counter" || wanted == kOwnCounterName)) {
    // Asked for this CPU's counter: taken unless it failed its checks, and then the figures
    // ClockInfo keeps give the refusal its reason names.
    if (info.source == lx::ClockSource::monotonic) {
      const char* refusal =
          lx::detail::counter_refusal(lx::detail::kCounterKind, info.counter_measured_hz, info.counter_reported_hz);
      EXPECT_TRUE(refusal != nullptr ? std::strcmp(info.reason, refusal) == 0 : contains(info.reason, "not invariant"))
          << info.reason;
    } else {
      EXPECT_TRUE(contains(info.reason, ("LOOPCANARY_CLOCK=" + wanted).c_str())) << info.reason;
    }
  }
  if (info.source == lx::ClockSource::counter) {
    EXPECT_STREQ(info.name, kOwnCounterName);
    EXPECT_GE(info.tick_hz, 1'000'000u);
    EXPECT_LT(info.tick_hz, 2'000'001u);
    EXPECT_EQ(info.counter_shift, lx::detail::counter_shift_for(info.counter_hz));
    EXPECT_NEAR(static_cast<double>(info.counter_hz >> info.counter_shift), static_cast<double>(info.tick_hz), 1.0);
    EXPECT_EQ(lx::detail::counter_refusal(lx::detail::kCounterKind, info.counter_measured_hz, info.counter_reported_hz),
              nullptr);
    // The TSC's rate is its calibration; CNTVCT_EL0's is CNTFRQ_EL0, the calibration checks it.
    EXPECT_EQ(info.counter_hz, LOOPCANARY_LINUX_HAS_CNTVCT ? info.counter_reported_hz : info.counter_measured_hz);
  } else {
    EXPECT_STREQ(info.name, "clock_monotonic");
    EXPECT_EQ(info.tick_hz, 1'000'000u);
    EXPECT_EQ(info.counter_hz, 0u);
    EXPECT_EQ(info.counter_shift, 0u);
  }
  if (!LOOPCANARY_LINUX_HAS_CNTVCT) {
    EXPECT_EQ(info.counter_reported_hz, 0u) << "only CNTFRQ_EL0 reports a rate";
  }
  // 2^32 ticks is at least 35 minutes: hang limits up to 17 minutes are accepted.
  EXPECT_GE(info.wrap_seconds, 2147u);
  EXPECT_EQ(info.wrap_seconds, static_cast<std::uint32_t>((std::uint64_t{1} << 32) / info.tick_hz));
}

TEST(LinuxClock, SelectionIsFixedOnceMade) {
  const lx::ClockInfo& info = lx::clock_info();
  EXPECT_TRUE(lx::select_clock(lx::ClockChoice::automatic));
  const bool counter = info.source == lx::ClockSource::counter;
  EXPECT_EQ(lx::select_clock(lx::ClockChoice::counter), counter);
  EXPECT_EQ(lx::select_clock(lx::ClockChoice::monotonic), !counter);
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

// ---- The CPU's counter itself, whatever clock the selection chose (under QEMU, where the
// automatic choice is CLOCK_MONOTONIC, this is where CNTVCT_EL0 is read) ----

TEST(LinuxClock, CounterRunsAtTheRateItPassesItsChecksWith) {
  if (!LOOPCANARY_LINUX_HAS_COUNTER) GTEST_SKIP() << "no CPU counter on this architecture";
  const lx::ClockInfo& info = lx::clock_info();
  const double hz = measure_counter_hz(100'000'000);
  std::printf("[ COUNTER  ] %s: measured %.0f Hz over 100 ms, reported %llu Hz\n", kOwnCounterName, hz,
              static_cast<unsigned long long>(info.counter_reported_hz));
  EXPECT_EQ(lx::detail::counter_refusal(lx::detail::kCounterKind, static_cast<std::uint64_t>(hz + 0.5),
                                        info.counter_reported_hz),
            nullptr);
  if (LOOPCANARY_LINUX_HAS_CNTVCT) {
    // CNTVCT_EL0 counts at CNTFRQ_EL0 (the architecture's promise the port relies on).
    EXPECT_NEAR(hz, static_cast<double>(info.counter_reported_hz), static_cast<double>(info.counter_reported_hz) * 0.02);
  }
  if (info.source == lx::ClockSource::counter) {
    // The rate the port took at selection agrees with this later measurement.
    EXPECT_NEAR(hz, static_cast<double>(info.counter_hz), static_cast<double>(info.counter_hz) * 0.01);
  }
}

TEST(LinuxClock, CounterReadsNeverGoBackwardsOnOneThread) {
  if (!LOOPCANARY_LINUX_HAS_COUNTER) GTEST_SKIP() << "no CPU counter on this architecture";
  std::uint64_t previous = lx::detail::read_counter();
  std::uint32_t backwards = 0;
  for (int i = 0; i < 100'000; ++i) {
    const std::uint64_t now = lx::detail::read_counter();
    if (now < previous) ++backwards;
    previous = now;
  }
  EXPECT_EQ(backwards, 0u);
}

// ---- The selection's decision (plan_clock): every branch, both architectures' inputs ----

TEST(LinuxClockPlan, AutomaticTakesTheCounterOnlyWhenTheKernelUsesIt) {
  using lx::detail::CounterKind;
  const lx::detail::ClockPlan tsc = lx::detail::plan_clock(lx::ClockChoice::automatic, nullptr, CounterKind::tsc, nullptr, "tsc");
  EXPECT_TRUE(tsc.try_counter);
  EXPECT_FALSE(tsc.fail_if_refused);
  EXPECT_TRUE(contains(tsc.reason, "the kernel uses it as its clocksource")) << tsc.reason;
  const lx::detail::ClockPlan kvm =
      lx::detail::plan_clock(lx::ClockChoice::automatic, nullptr, CounterKind::tsc, nullptr, "kvm-clock");
  EXPECT_FALSE(kvm.try_counter);
  EXPECT_TRUE(contains(kvm.reason, "clocksource is not tsc")) << kvm.reason;
  const lx::detail::ClockPlan arm =
      lx::detail::plan_clock(lx::ClockChoice::automatic, nullptr, CounterKind::cntvct, nullptr, "arch_sys_counter");
  EXPECT_TRUE(arm.try_counter);
  EXPECT_FALSE(arm.fail_if_refused);
  EXPECT_TRUE(contains(arm.reason, "arch_sys_counter")) << arm.reason;
  // Under qemu-user the clocksource file is the host's: automatic is CLOCK_MONOTONIC there.
  for (const char* other : {"tsc", "kvm-clock", ""}) {
    const lx::detail::ClockPlan plan =
        lx::detail::plan_clock(lx::ClockChoice::automatic, "auto", CounterKind::cntvct, nullptr, other);
    EXPECT_FALSE(plan.try_counter) << other;
    EXPECT_FALSE(plan.fail_if_refused) << other;
    EXPECT_TRUE(contains(plan.reason, "clocksource is not arch_sys_counter")) << plan.reason;
  }
}

TEST(LinuxClockPlan, AnExplicitChoiceOfTheCounterIgnoresTheKernelsClocksource) {
  using lx::detail::CounterKind;
  for (CounterKind kind : {CounterKind::tsc, CounterKind::cntvct}) {
    const lx::detail::ClockPlan call = lx::detail::plan_clock(lx::ClockChoice::counter, nullptr, kind, nullptr, "hpet");
    EXPECT_TRUE(call.try_counter);
    EXPECT_TRUE(call.fail_if_refused) << "select_clock(counter) returns false on a refusal";
    EXPECT_TRUE(contains(call.reason, "select_clock(counter)")) << call.reason;
    const lx::detail::ClockPlan generic = lx::detail::plan_clock(lx::ClockChoice::automatic, "counter", kind, nullptr, "hpet");
    EXPECT_TRUE(generic.try_counter);
    EXPECT_FALSE(generic.fail_if_refused) << "a refused environment choice falls back to CLOCK_MONOTONIC";
    EXPECT_TRUE(contains(generic.reason, "LOOPCANARY_CLOCK=counter")) << generic.reason;
    const char* own = kind == CounterKind::tsc ? "tsc" : "cntvct";
    const lx::detail::ClockPlan named = lx::detail::plan_clock(lx::ClockChoice::automatic, own, kind, nullptr, "hpet");
    EXPECT_TRUE(named.try_counter) << own;
    EXPECT_TRUE(contains(named.reason, (std::string("LOOPCANARY_CLOCK=") + own).c_str())) << named.reason;
  }
}

TEST(LinuxClockPlan, TheOtherArchitecturesCounterIsRefusedWithItsName) {
  using lx::detail::CounterKind;
  const lx::detail::ClockPlan on_x86 =
      lx::detail::plan_clock(lx::ClockChoice::automatic, "cntvct", CounterKind::tsc, nullptr, "tsc");
  EXPECT_FALSE(on_x86.try_counter);
  EXPECT_FALSE(on_x86.fail_if_refused);
  EXPECT_TRUE(contains(on_x86.reason, "LOOPCANARY_CLOCK=cntvct names AArch64's CNTVCT_EL0, which this CPU does not have"))
      << on_x86.reason;
  const lx::detail::ClockPlan on_arm =
      lx::detail::plan_clock(lx::ClockChoice::automatic, "tsc", CounterKind::cntvct, nullptr, "arch_sys_counter");
  EXPECT_FALSE(on_arm.try_counter);
  EXPECT_TRUE(contains(on_arm.reason, "LOOPCANARY_CLOCK=tsc names x86-64's TSC, which this CPU does not have"))
      << on_arm.reason;
  // And on this machine's own counter kind, the other name.
  const lx::detail::ClockPlan here = lx::detail::plan_clock(lx::ClockChoice::automatic, kForeignCounterName,
                                                            lx::detail::kCounterKind, nullptr, "arch_sys_counter");
  EXPECT_FALSE(here.try_counter);
  EXPECT_TRUE(contains(here.reason, kForeignCounterName)) << here.reason;
}

TEST(LinuxClockPlan, AnUnusableOrMissingCounterIsNeverTried) {
  using lx::detail::CounterKind;
  const char* unusable = "the TSC is not invariant (no constant_tsc + nonstop_tsc)";
  const lx::detail::ClockPlan call = lx::detail::plan_clock(lx::ClockChoice::counter, nullptr, CounterKind::tsc, unusable, "tsc");
  EXPECT_FALSE(call.try_counter);
  EXPECT_TRUE(call.fail_if_refused);
  EXPECT_STREQ(call.reason, unusable);
  const lx::detail::ClockPlan env = lx::detail::plan_clock(lx::ClockChoice::automatic, "tsc", CounterKind::tsc, unusable, "tsc");
  EXPECT_FALSE(env.try_counter);
  EXPECT_FALSE(env.fail_if_refused);
  EXPECT_STREQ(env.reason, unusable);
  for (const char* value : {"counter", static_cast<const char*>(nullptr)}) {
    const lx::detail::ClockPlan none =
        lx::detail::plan_clock(lx::ClockChoice::automatic, value, CounterKind::none, nullptr, "arch_sys_counter");
    EXPECT_FALSE(none.try_counter);
    EXPECT_TRUE(contains(none.reason, "no CPU counter on this architecture")) << none.reason;
  }
  EXPECT_TRUE(lx::detail::plan_clock(lx::ClockChoice::counter, nullptr, CounterKind::none, nullptr, "").fail_if_refused);
}

TEST(LinuxClockPlan, MonotonicAskedForIsTakenAndUnknownValuesAreAutomatic) {
  using lx::detail::CounterKind;
  const lx::detail::ClockPlan call =
      lx::detail::plan_clock(lx::ClockChoice::monotonic, "counter", CounterKind::cntvct, nullptr, "arch_sys_counter");
  EXPECT_FALSE(call.try_counter);
  EXPECT_FALSE(call.fail_if_refused);
  EXPECT_TRUE(contains(call.reason, "select_clock(monotonic)")) << "the call wins over the environment: " << call.reason;
  const lx::detail::ClockPlan env =
      lx::detail::plan_clock(lx::ClockChoice::automatic, "monotonic", CounterKind::cntvct, nullptr, "arch_sys_counter");
  EXPECT_FALSE(env.try_counter);
  EXPECT_TRUE(contains(env.reason, "LOOPCANARY_CLOCK=monotonic")) << env.reason;
  for (const char* value : {"auto", "TSC", "garbage", ""}) {
    const lx::detail::ClockPlan plan =
        lx::detail::plan_clock(lx::ClockChoice::automatic, value, CounterKind::cntvct, nullptr, "arch_sys_counter");
    EXPECT_TRUE(plan.try_counter) << value;
    EXPECT_TRUE(contains(plan.reason, "the kernel uses the counter as its clocksource")) << plan.reason;
  }
}

// ---- The counter's checks (counter_refusal) and its shift ----

TEST(LinuxClockCheck, CntvctMustAgreeWithCntfrqWithinTwoPercent) {
  using lx::detail::CounterKind;
  constexpr std::uint64_t kQemuHz = 62'500'000;  // CNTFRQ_EL0 under qemu-user 7.2
  EXPECT_EQ(lx::detail::counter_refusal(CounterKind::cntvct, 62'510'068, kQemuHz), nullptr);
  EXPECT_EQ(lx::detail::counter_refusal(CounterKind::cntvct, kQemuHz + kQemuHz / 50, kQemuHz), nullptr) << "2 % is in";
  EXPECT_EQ(lx::detail::counter_refusal(CounterKind::cntvct, kQemuHz - kQemuHz / 50, kQemuHz), nullptr);
  for (std::uint64_t measured : {kQemuHz + kQemuHz / 50 + 1, kQemuHz - kQemuHz / 50 - 1, std::uint64_t{1'000'000'000},
                                 std::uint64_t{19'200'000}}) {
    const char* refusal = lx::detail::counter_refusal(CounterKind::cntvct, measured, kQemuHz);
    EXPECT_TRUE(contains(refusal, "disagrees with CNTFRQ_EL0 by more than 2 %")) << measured;
  }
}

TEST(LinuxClockCheck, CntvctUnderOneMegahertzOrStillIsRefused) {
  using lx::detail::CounterKind;
  EXPECT_TRUE(contains(lx::detail::counter_refusal(CounterKind::cntvct, 0, 0), "CNTFRQ_EL0 is 0"));
  EXPECT_TRUE(contains(lx::detail::counter_refusal(CounterKind::cntvct, 999'999, 999'999), "CNTFRQ_EL0 is under 1 MHz"));
  EXPECT_TRUE(contains(lx::detail::counter_refusal(CounterKind::cntvct, 0, 24'000'000), "did not advance"));
  EXPECT_TRUE(contains(lx::detail::counter_refusal(CounterKind::cntvct, 990'000, 1'000'000), "runs under 1 MHz"));
  EXPECT_EQ(lx::detail::counter_refusal(CounterKind::cntvct, 1'000'000, 1'000'000), nullptr) << "1 MHz is the floor";
}

TEST(LinuxClockCheck, TheTscMustMeasureFiftyMegahertzToTenGigahertz) {
  using lx::detail::CounterKind;
  for (std::uint64_t hz : {std::uint64_t{0}, std::uint64_t{49'999'999}, std::uint64_t{10'000'000'001}}) {
    EXPECT_TRUE(contains(lx::detail::counter_refusal(CounterKind::tsc, hz, 0), "implausible rate")) << hz;
  }
  EXPECT_EQ(lx::detail::counter_refusal(CounterKind::tsc, 2'596'000'000, 0), nullptr);
  EXPECT_TRUE(contains(lx::detail::counter_refusal(CounterKind::none, 1'000'000, 1'000'000), "no CPU counter"));
}

TEST(LinuxClockCheck, ShiftMakesATickHalfToOneMicrosecond) {
  struct Case {
    std::uint64_t hz;
    std::uint8_t shift;
  };
  // 1..2 MHz counters need no shift; 19.2 MHz, 24 MHz, 54 MHz and 62.5 MHz (qemu) are
  // common CNTFRQ_EL0 values, 1 GHz that of Armv8.6 and later, 2.6 GHz a TSC.
  for (const Case c : {Case{1'000'000, 0}, Case{1'999'999, 0}, Case{2'000'000, 1}, Case{19'200'000, 4},
                       Case{24'000'000, 4}, Case{54'000'000, 5}, Case{62'500'000, 5}, Case{1'000'000'000, 9},
                       Case{2'596'000'000, 11}}) {
    const std::uint8_t shift = lx::detail::counter_shift_for(c.hz);
    EXPECT_EQ(shift, c.shift) << c.hz;
    EXPECT_GE(c.hz >> shift, 1'000'000u) << c.hz;
    EXPECT_LT(c.hz >> shift, 2'000'000u) << c.hz;
  }
}
