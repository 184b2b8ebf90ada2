// SPDX-License-Identifier: MIT
// Loop health on the device: instructions per dispatch with queue latency and deadlines on,
// against off, counted under QEMU -icount (icount_stopwatch.hpp), for docs/benchmarks.md ("Loop
// health: cost per feature"). Each body is one dispatch through Monitor::begin_at()/end_at()
// with stamps from a counter in RAM (no clock read: the clock's cost is figures.hotpath's), the
// event passed in as a runtime's dispatcher has it (from its table, not a constant), except
// where the line says "constant event":
//   pair                      begin_at(event, now) + end_at: the plain pair, what a dispatch
//                             costs with the features off
//   posted, no storage        begin_at(event, now, posted) for an event without EventHealth
//   posted, latency           the same, event with storage (queue latency only)
//   posted, period+deadline   the same, storage with a period and a deadline (init_event)
//   ... constant event        the last with the event a constant at the call site
//   late (deadline miss)      the last, every dispatch later than its deadline: the out-of-line
//                             path (missed periods, the miss counted)
//   pair + 1 stage mark       the plain pair and one Monitor::stage_at() inside it
// Every latency on the common path is 6 ticks and every dispatch 10 ticks (under the threshold),
// so only the "late" line leaves the common path. Prints "health <what> = <n> instructions"; fails
// only on regressions far past the figures (loose bounds below) or a stopwatch wrap.
#include "device_test.hpp"
#include "icount_stopwatch.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/cortex_m.hpp"

namespace lc = loopcanary;

namespace {

lc::EventHealth g_latency_health;
lc::EventHealth g_deadline_health;
lc::EventHealth g_late_health;
constexpr lc::Event kPlain{"plain"};
constexpr lc::Event kLatency{"latency", 0, &g_latency_health};
constexpr lc::Event kDeadline{"deadline", 0, &g_deadline_health};
constexpr lc::Event kLate{"late", 0, &g_late_health};
constexpr std::uint32_t kPeriodUs = 1'000;
constexpr std::uint32_t kDeadlineUs = 200;

lc::Monitor g_monitor;
lc::tick_t g_clock = 0;  // the stamps: 16 ticks per dispatch

}  // namespace

// The measured bodies, out of line so the loop around them is identical. Each takes the stamps
// as the empty body does, so the difference is the monitor's work alone.
#define LC_STAMPS()                    \
  const lc::tick_t now = g_clock;      \
  g_clock = now + 16u;                 \
  __asm__ volatile("" ::: "memory")

extern "C" __attribute__((noinline)) void lc_health_empty(lc::Monitor& monitor, const lc::Event& event) {
  LC_STAMPS();
  __asm__ volatile("" ::"r"(&monitor), "r"(&event), "r"(now) : "memory");
}
extern "C" __attribute__((noinline)) void lc_health_pair(lc::Monitor& monitor, const lc::Event& event) {
  LC_STAMPS();
  monitor.begin_at(event, now);
  monitor.end_at(now + 10u);
}
extern "C" __attribute__((noinline)) void lc_health_posted(lc::Monitor& monitor, const lc::Event& event) {
  LC_STAMPS();
  monitor.begin_at(event, now, now - 6u);
  monitor.end_at(now + 10u);
}
extern "C" __attribute__((noinline)) void lc_health_posted_constant(lc::Monitor& monitor, const lc::Event& event) {
  LC_STAMPS();
  static_cast<void>(event);
  monitor.begin_at(kDeadline, now, now - 6u);
  monitor.end_at(now + 10u);
}
extern "C" __attribute__((noinline)) void lc_health_late(lc::Monitor& monitor, const lc::Event& event) {
  LC_STAMPS();
  // Posted 1.5 periods before: past the deadline, one missed period.
  monitor.begin_at(event, now, now - kPeriodUs * (lc::board::kCoreHz / 1'000'000u) * 3u / 2u);
  monitor.end_at(now + 10u);
}
extern "C" __attribute__((noinline)) void lc_health_stage(lc::Monitor& monitor, const lc::Event& event) {
  LC_STAMPS();
  monitor.begin_at(event, now);
  monitor.stage_at("compute", now + 5u);
  monitor.end_at(now + 10u);
}

namespace {

// Few enough that the slowest body (a deadline miss, ~180 instructions) stays within one turn
// of the 24-bit SysTick counter.
constexpr std::uint32_t kIterations = 8'000;

std::uint64_t instructions_x100(void (*body)(lc::Monitor&, const lc::Event&), const lc::Event& event) {
  bool wrapped = false;
  const std::uint64_t x100 = lc::device_test::instructions_x100<lc::Monitor&, const lc::Event&>(
      body, &lc_health_empty, kIterations, wrapped, g_monitor, event);
  DT_EXPECT(!wrapped);
  return x100;
}

std::uint64_t print_figure(const char* what, std::uint64_t x100) {
  return lc::device_test::print_instructions("health", what, x100);
}

}  // namespace

DT_TEST(Health, instructions_per_dispatch) {
  lc::device_test::start_stopwatch();
  lc::MonitorConfig config;
  config.tick_hz = lc::board::kCoreHz;
  DT_ASSERT_EQ(g_monitor.init(config), lc::Status::ok);
  DT_ASSERT_EQ(g_monitor.init_event(kDeadline, {kPeriodUs, kDeadlineUs}), lc::Status::ok);
  DT_ASSERT_EQ(g_monitor.init_event(kLate, {kPeriodUs, kDeadlineUs}), lc::Status::ok);

  const std::uint64_t pair = print_figure("pair (features off)", instructions_x100(&lc_health_pair, kPlain));
  const std::uint64_t no_storage =
      print_figure("posted, no storage", instructions_x100(&lc_health_posted, kPlain));
  const std::uint64_t latency = print_figure("posted, latency", instructions_x100(&lc_health_posted, kLatency));
  const std::uint64_t deadline =
      print_figure("posted, period+deadline", instructions_x100(&lc_health_posted, kDeadline));
  const std::uint64_t constant =
      print_figure("posted, period+deadline, constant event", instructions_x100(&lc_health_posted_constant, kDeadline));
  const std::uint64_t late = print_figure("late (deadline miss)", instructions_x100(&lc_health_late, kLate));
  const std::uint64_t stage = print_figure("pair + 1 stage mark", instructions_x100(&lc_health_stage, kPlain));

  // What the bodies did: every dispatch counted where it belongs, none a block.
  const std::uint32_t runs = 2u * kIterations;  // warm-up and measured run of each body
  const lc::EventStats on_time = g_deadline_health.stats();
  DT_EXPECT_EQ(g_latency_health.stats().dispatches, runs);
  DT_EXPECT_EQ(g_latency_health.stats().max_latency, 6u);
  DT_EXPECT_EQ(on_time.dispatches, 2u * runs);  // through a table and as a constant
  DT_EXPECT_EQ(on_time.deadline_misses, 0u);
  const lc::EventStats late_stats = g_late_health.stats();
  DT_EXPECT_EQ(late_stats.deadline_misses, runs);
  DT_EXPECT_EQ(late_stats.missed_periods, runs);
  DT_EXPECT_EQ(g_monitor.stats().blocks, 0u);
  DT_EXPECT_EQ(g_monitor.stats().stages_dropped, 0u);

  // Loose bounds: a regression far past the figures in docs/benchmarks.md fails, noise cannot
  // (the count is exact under -icount; the bounds leave room for another compiler's choices).
  DT_EXPECT_GT(pair, 0u);
  DT_EXPECT_LE(pair, 4000u);                    // the plain pair: 40 instructions at most
  DT_EXPECT_LE(no_storage, pair + 600u);        // the storage test: at most 6 more
  DT_EXPECT_LE(latency, pair + 1600u);          // recording the latency: at most 16 more
  DT_EXPECT_LE(deadline, latency + 200u);       // a period and deadline: nothing more on time
  // A constant event: no more than through a table (the same count: the table's load and test
  // of the storage pointer against the constant's literal load of the event's address), within
  // the stopwatch's tenth (the same body reads 42.9 and 43.0 for two events).
  DT_EXPECT_LE(constant, deadline + 50u);
  DT_EXPECT_LE(late, pair + 25000u);            // the out-of-line miss: at most 250 more
  DT_EXPECT_LE(stage, pair + 4500u);            // one stage mark (an out-of-line call): at most 45 more
}

int main() { return lc::device_test::run_all(&lc::board::write); }
