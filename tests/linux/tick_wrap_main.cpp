// SPDX-License-Identifier: MIT
// main() of loopcanary_linux_wrap_test: the Linux timing tests (block, clock, watchdog thread),
// each started with the 32-bit tick counter a little before it wraps, and each failed unless the
// counter did cross 2^32 during it and, when the test produced records, one of them spans the
// wrap (start stamped before it, end or report after it).
//
// Linked to loopcanary_port_linux_tick_offset: Clock::now() is the clock source's tick plus an
// offset that this file sets before every test (lx::set_tick_offset), while nothing stamps.
//
// Environment: LOOPCANARY_WRAP_LEAD_US=<us> replaces every test's lead (how long before the
// wrap it starts). For the self-check that a run which does not wrap fails (wrap.self_check.*).
#include <gtest/gtest.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tick_wrap.hpp"

#if !LOOPCANARY_LINUX_TICK_OFFSET_HOOK
#error "tick_wrap_main.cpp needs the port with the tick offset hook: link loopcanary_port_linux_tick_offset"
#endif

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace lctest::wrap {
namespace {

// How long before the wrap a test starts, in microseconds. The default puts the wrap inside the
// first dispatch of every block test (they begin within a few ms of the test's start, seen up to
// 6 ms under the sanitizers, and last 60..300 ms; with the rig's default 50 ms threshold the
// watchdog arms before the wrap and reports after it), and inside the sleeps and poll runs of
// the clock and watchdog thread tests. Each test prints when its first block began.
constexpr std::uint32_t kDefaultLeadUs = 30'000;
constexpr std::uint32_t kUntimed = 0;

struct Plan {
  const char* test;       // "Suite.Name"
  std::uint32_t lead_us;  // kUntimed: measures no interval, so not run here
};

constexpr Plan kPlans[] = {
    {"LinuxClock.ChoiceIsVisibleAndConsistent", kUntimed},
    {"LinuxClock.SelectionIsFixedOnceMade", kUntimed},
    {"LinuxClock.MonitorAcceptsHangLimitsWithinHalfTheWrap", kUntimed},
    {"LinuxClock.CounterRunsAtTheRateItPassesItsChecksWith", kUntimed},  // the raw counter, not Clock::now()
    {"LinuxClock.CounterReadsNeverGoBackwardsOnOneThread", kUntimed},
    {"LinuxClockPlan.*", kUntimed},  // pure functions
    {"LinuxClockCheck.*", kUntimed},
    {"LinuxWatchdogThread.RefusesBadPeriodAndDoubleStart", kUntimed},
    // 200'000 ordered cross-thread reads: 2.8 ms at best here (a 5 ms lead missed the wrap in
    // about 1 run of 40), longer under load or sanitizers.
    {"LinuxClock.NeverGoesBackwardsAcrossThreads", 500},
    {"LinuxClock.BeginEndStampWithThePortClock", 1'000},    // one 3 ms dispatch
    // Starts 2 x cores + 2 busy threads before its loop thread, which then waits for a CPU:
    // its 300 ms dispatch began 10..60 ms in, once over 100 ms (ASan).
    {"LinuxBlock.ComputingAgainstMoreBusyThreadsThanCoresIsStarved", 250'000},
    // One 200 ms dispatch, begun once its loop thread has started and blocked the signal: seen
    // 40 ms in under a load average of 6 on two cores, which the default lead missed.
    {"LinuxBlock.LoopThreadBlockingTheSignalIsAMissedSampleNeverAHang", 100'000},
};

std::atomic<std::uint32_t> g_records{0};
std::atomic<std::uint32_t> g_spanning{0};
std::atomic<lc::tick_t> g_test_start{0};                // Clock::now() when the test started
std::atomic<lc::tick_t> g_first_begin{~lc::tick_t{0}};  // earliest record start, ticks after it

std::string full_name(const testing::TestInfo& info) { return std::string(info.test_suite_name()) + "." + info.name(); }

std::uint32_t lead_us_of(const std::string& test) {
  const char* forced = std::getenv("LOOPCANARY_WRAP_LEAD_US");
  if (forced != nullptr && *forced != '\0') return static_cast<std::uint32_t>(std::strtoul(forced, nullptr, 10));
  for (const Plan& plan : kPlans) {
    if (test == plan.test) return plan.lead_us;
  }
  return kDefaultLeadUs;
}

// Starts each test `lead` before the wrap; checks at its end that the wrap was crossed.
class WrapListener : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo& info) override {
    const lx::ClockInfo& clock = lx::clock_info();
    EXPECT_TRUE(clock.tick_offset_hook) << "clock_info() must say that the tick offset hook is compiled in";
    EXPECT_NE(std::strstr(clock.reason, "tick offset"), nullptr) << clock.reason;
    lead_ticks_ = static_cast<lc::tick_t>(lc::ticks_from_us(lead_us_of(full_name(info)), clock.tick_hz));
    g_records.store(0, std::memory_order_relaxed);
    g_spanning.store(0, std::memory_order_relaxed);
    g_first_begin.store(~lc::tick_t{0}, std::memory_order_relaxed);
    // Nothing stamps between tests: the clock may move. Clock::now() becomes 2^32 - lead.
    const lc::tick_t source = static_cast<lc::tick_t>(lx::Clock::now() - lx::tick_offset());
    lx::set_tick_offset(static_cast<lc::tick_t>(lc::tick_t{0} - lead_ticks_ - source));
    start_ = lx::Clock::now();
    g_test_start.store(start_, std::memory_order_relaxed);
  }

  void OnTestEnd(const testing::TestInfo& info) override {
    const lc::tick_t end = lx::Clock::now();
    const std::uint32_t records = g_records.load(std::memory_order_relaxed);
    const std::uint32_t spanning = g_spanning.load(std::memory_order_relaxed);
    const lx::ClockInfo& clock = lx::clock_info();
    // Both reads within half a wrap of each other: the counter crossed 2^32 iff it went down.
    const bool crossed = end < start_;
    std::printf("[ WRAP     ] %s @ %" PRIu32 " Hz, lead %" PRIu32 " ticks: clock %" PRIu32 " -> %" PRIu32
                " (%s), %" PRIu32 " records, %" PRIu32 " spanning the wrap",
                clock.name, clock.tick_hz, lead_ticks_, start_, end, crossed ? "crossed 2^32" : "did NOT cross 2^32",
                records, spanning);
    if (records > 0) {
      std::printf(", first begin %" PRIu32 " ticks into the test", g_first_begin.load(std::memory_order_relaxed));
    }
    std::printf("\n");
    std::fflush(stdout);
    if (info.result()->Skipped()) return;  // a skipped test (its reason printed) measured nothing
    EXPECT_TRUE(crossed) << "the test did not cross the wrap: it started at tick " << start_ << " and ended at " << end
                         << "; give it a shorter lead in kPlans (tests/linux/tick_wrap_main.cpp)";
    EXPECT_TRUE(records == 0 || spanning > 0)
        << "none of the " << records << " records spans the wrap (start > end): the wrap fell outside every "
        << "block; adjust the test's lead in kPlans (tests/linux/tick_wrap_main.cpp)";
  }

 private:
  lc::tick_t lead_ticks_ = 0;
  lc::tick_t start_ = 0;
};

// Leaves the untimed tests out of the run (and out of CTest's discovery listing).
void exclude_untimed() {
  std::string filter = GTEST_FLAG_GET(filter);
  char separator = filter.find('-') == std::string::npos ? '-' : ':';  // after the negative patterns
  for (const Plan& plan : kPlans) {
    if (plan.lead_us != kUntimed) continue;
    filter += separator;
    filter += plan.test;
    separator = ':';
  }
  GTEST_FLAG_SET(filter, filter);
}

}  // namespace

void witness(const lc::BlockRecord& record) noexcept {
  g_records.fetch_add(1, std::memory_order_relaxed);
  if (record.start > record.end) g_spanning.fetch_add(1, std::memory_order_relaxed);
  // Only the watchdog thread calls this during a test: a plain read-compare-store suffices.
  const lc::tick_t into = lc::ticks_between(g_test_start.load(std::memory_order_relaxed), record.start);
  if (into < g_first_begin.load(std::memory_order_relaxed)) g_first_begin.store(into, std::memory_order_relaxed);
}

}  // namespace lctest::wrap

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  lctest::wrap::exclude_untimed();
  lx::clock_info();  // select and calibrate the clock (10 ms) before any test's lead runs
  testing::UnitTest::GetInstance()->listeners().Append(new lctest::wrap::WrapListener);
  return RUN_ALL_TESTS();
}
