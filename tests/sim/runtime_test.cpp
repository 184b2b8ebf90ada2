// SPDX-License-Identifier: MIT
// The simulator runtime over long runs, in virtual time: past 2^31 microseconds (half the wrap
// of the 1 MHz 32-bit tick counter, where "before" and "after" become ambiguous), past 2^32
// (the wrap itself), across the wrap, with timers, interrupts and reports that far apart.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/format.hpp"
#include "loopcanary/loopcanary.hpp"
#include "simrt/run_sink.hpp"
#include "simrt/runtime.hpp"
#include "simrt/virtual_board.hpp"

namespace {

namespace lc = loopcanary;
namespace simrt = loopcanary::simrt;

constexpr std::uint64_t kSecondUs = 1'000'000;
constexpr std::uint64_t kHalfWrapUs = std::uint64_t{1} << 31;  // 2^31 ticks at 1 MHz
constexpr std::uint64_t kWrapUs = std::uint64_t{1} << 32;
// Each run_for() call of the tests that check something else than run_for() itself stays
// below half the wrap, so what they check does not depend on run_for()'s own range.
constexpr std::uint64_t kChunkUs = 1000 * kSecondUs;

enum : simrt::TypeId { kTick, kSlow, kLine, kBurst, kFlush, kTypeCount };

struct Firmware {
  simrt::Runtime* runtime = nullptr;
  std::uint32_t slow_us = 0;
  std::uint32_t slow_dispatch = 0;  // dispatch number of the last slow one
  std::uint32_t burst = 0;          // slow messages a burst posts
};

void on_tick(void*, const simrt::Message&) noexcept {}
void on_line(void*, const simrt::Message&) noexcept {}
void on_burst(void* app, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(app);
  for (std::uint32_t i = 0; i < fw.burst; ++i) fw.runtime->post(kSlow, 0);
}
void on_slow(void* app, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(app);
  fw.slow_dispatch = fw.runtime->dispatches() + 1u;
  for (simrt::Burn burn(fw.slow_us); fw.runtime->board().compute(burn);) {
  }
}

// Takes the flash controller's bus (bus 0) for a moment: waits while a peripheral holds it.
void on_flush(void* app, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(app);
  fw.runtime->board().acquire(0);
  fw.runtime->board().release(0);
}
const simrt::EventType kTypes[kTypeCount] = {
    {lc::Event{"tick"}, &on_tick},
    {lc::Event{"slow"}, &on_slow},
    {lc::Event{"line"}, &on_line},
    {lc::Event{"burst"}, &on_burst},
    {lc::Event{"log_flush"}, &on_flush},
};

// A monitored loop on a virtual board starting at `start` (ticks), its runtime and firmware.
struct Rig {
  explicit Rig(lc::tick_t start) : board(simrt::VirtualBoardConfig{start, 0}), runtime(board, monitor) {
    lc::MonitorConfig config;
    config.name = "main";
    config.tick_hz = board.tick_hz();
    config.threshold_us = 100'000;
    config.sample_interval_us = 10'000;
    config.hang_limit_us = 1'000'000;
    config.context = board.loop_context();
    EXPECT_EQ(monitor.init(config), lc::Status::ok);
    EXPECT_EQ(watchdog.init(lc::WatchdogConfig{}, board.hal()), lc::Status::ok);
    EXPECT_EQ(watchdog.add(monitor), lc::Status::ok);
    firmware.runtime = &runtime;
    EXPECT_TRUE(runtime.init(simrt::RuntimeConfig{kTypes, kTypeCount, &firmware}));
    EXPECT_EQ(runtime.add_irq_line(kLine), 0);
  }

  simrt::BoardError start(std::uint32_t poll_period_us, const simrt::Peripheral* peripherals = nullptr,
                          std::size_t peripheral_count = 0, simrt::Sink sink = nullptr,
                          void* sink_context = nullptr) {
    simrt::BoardStart s;
    s.watchdog = &watchdog;
    s.poll_period_us = poll_period_us;
    s.sink = sink;
    s.sink_context = sink_context;
    s.lines = runtime.lines();
    s.line_count = runtime.line_count();
    s.peripherals = peripherals;
    s.peripheral_count = peripheral_count;
    return board.start(s);
  }

  // Runs for `us` in calls of at most kChunkUs.
  void run_in_chunks(std::uint64_t us) {
    while (us > 0) {
      const std::uint64_t chunk = us < kChunkUs ? us : kChunkUs;
      runtime.run_for(chunk);
      us -= chunk;
    }
  }

  std::uint64_t elapsed_us(lc::tick_t since) { return lc::ticks_between(since, board.now()); }

  lc::Monitor monitor;
  lc::StaticWatchdog<1, 16> watchdog;
  simrt::VirtualBoard board;
  simrt::Runtime runtime;
  Firmware firmware;
};

// ---- run_for over long durations ---------------------------------------------------------

struct LongRun {
  const char* name;
  lc::tick_t start;        // board time at the start
  std::uint64_t duration;  // of the one run_for() call, us
};

void PrintTo(const LongRun& run, std::ostream* os) { *os << run.name; }

class RunFor : public ::testing::TestWithParam<LongRun> {};

// Durations just past 2^31 us and just past 2^32 us, each starting just before the counter
// wraps and half a wrap away from that; a periodic timer (1 s) dispatches throughout: as many
// times as whole periods fit, and the run lasts exactly the time asked for.
const LongRun kLongRuns[] = {
    {"HalfWrapPlusHalfSecondFromBeforeTheWrap", static_cast<lc::tick_t>(0u - 1000u), kHalfWrapUs + kSecondUs / 2},
    {"HalfWrapPlusHalfSecondFromMidCounter", static_cast<lc::tick_t>(0x8000'0000u - 1000u), kHalfWrapUs + kSecondUs / 2},
    {"WrapPlusHalfSecondFromBeforeTheWrap", static_cast<lc::tick_t>(0u - 1000u), kWrapUs + kSecondUs / 2},
    {"WrapPlusHalfSecondFromMidCounter", static_cast<lc::tick_t>(0x8000'0000u - 1000u), kWrapUs + kSecondUs / 2},
};
INSTANTIATE_TEST_SUITE_P(Edges, RunFor, ::testing::ValuesIn(kLongRuns),
                         [](const ::testing::TestParamInfo<LongRun>& run) { return std::string(run.param.name); });

TEST_P(RunFor, DispatchesThroughoutAndLastsExactlyTheDuration) {
  const LongRun& p = GetParam();
  const std::uint32_t period_us = 1'000'000;
  auto rig = std::make_unique<Rig>(p.start);
  ASSERT_EQ(rig->start(1'000'000), simrt::BoardError::none);
  const int timer = rig->runtime.add_timer(kTick, period_us);
  ASSERT_GE(timer, 0);
  rig->runtime.start_timer(static_cast<simrt::TimerId>(timer), period_us);
  const lc::tick_t begin = rig->board.now();

  rig->runtime.run_for(p.duration);

  EXPECT_EQ(rig->runtime.health(kTick).dispatches, p.duration / period_us);
  EXPECT_EQ(rig->runtime.stats(kTick).timer_skips, 0u);
  EXPECT_EQ(rig->elapsed_us(begin), p.duration % kWrapUs) << "the clock stops where the run ends";
  EXPECT_EQ(rig->monitor.stats().dispatches, p.duration / period_us);
}

// ---- Timers and peripheral actions far ahead ---------------------------------------------

// A one-shot timer 3000 s ahead (more than half the wrap) fires then, not at once.
TEST(LongTimer, OneShotFurtherThanHalfTheWrapFiresOnTime) {
  auto rig = std::make_unique<Rig>(static_cast<lc::tick_t>(0u - 1000u));
  ASSERT_EQ(rig->start(1'000'000), simrt::BoardError::none);
  const int timer = rig->runtime.add_timer(kTick, 0);
  ASSERT_GE(timer, 0);
  const std::uint32_t delay_us = 3'000'000'000u;
  rig->runtime.start_timer(static_cast<simrt::TimerId>(timer), delay_us);

  rig->run_in_chunks(delay_us - kSecondUs);
  EXPECT_EQ(rig->runtime.health(kTick).dispatches, 0u) << "one second before it is due";
  rig->run_in_chunks(2 * kSecondUs);
  EXPECT_EQ(rig->runtime.health(kTick).dispatches, 1u) << "one second after it is due";
  EXPECT_EQ(rig->runtime.health(kTick).max_latency, 0u) << "dispatched the moment it was due";
}

// A peripheral's one-shot interrupt 3000 s into the run (more than half the wrap) is raised then.
TEST(LongTimeline, ActionFurtherThanHalfTheWrapHappensOnTime) {
  auto rig = std::make_unique<Rig>(static_cast<lc::tick_t>(0u - 1000u));
  const std::uint64_t at_us = 3'000 * kSecondUs;
  const simrt::Action actions[] = {{simrt::Action::Kind::raise, 0, 7, at_us, 0, 0}};
  const simrt::Peripheral peripheral{"late", actions, 1};
  ASSERT_EQ(rig->start(1'000'000, &peripheral, 1), simrt::BoardError::none);

  rig->run_in_chunks(at_us - kSecondUs);
  EXPECT_EQ(rig->runtime.health(kLine).dispatches, 0u) << "one second before it is due";
  rig->run_in_chunks(2 * kSecondUs);
  EXPECT_EQ(rig->runtime.health(kLine).dispatches, 1u) << "one second after it is due";
}

// A peripheral that holds a bus skips the periodic actions that fell due meanwhile, also when
// the hold ends more than 2^32 us into the run: none piles up (nothing lost on the line).
TEST(LongTimeline, HoldPastTheWrapSkipsWhatFellDueMeanwhile) {
  auto rig = std::make_unique<Rig>(static_cast<lc::tick_t>(0u - 1000u));
  constexpr std::uint64_t hold_at_us = kWrapUs + 100 * kSecondUs;
  constexpr std::uint32_t period_us = 100'000;
  const std::uint32_t hold_us = 1'000'000;
  const simrt::Action actions[] = {{simrt::Action::Kind::raise, 0, 1, period_us, period_us, 0},
                                   {simrt::Action::Kind::hold_bus, 0, hold_us, hold_at_us, 0, 0}};
  const simrt::Peripheral peripheral{"sensor", actions, 2};
  ASSERT_EQ(rig->start(1'000'000, &peripheral, 1), simrt::BoardError::none);

  const std::uint64_t run_us = hold_at_us + 10 * kSecondUs;
  rig->run_in_chunks(run_us);

  EXPECT_EQ(rig->runtime.stats(kLine).lost, 0u);
  // Raised at every whole period before the end, except the hold_us / period_us that fell due
  // during the hold (it starts between two periods: 2^32 is no multiple of 100'000).
  static_assert(hold_at_us % period_us != 0);
  const std::uint64_t expected = (run_us - 1u) / period_us - hold_us / period_us;
  EXPECT_EQ(rig->runtime.health(kLine).dispatches, expected);
}

// ---- Queue latency and deadlines in the core ---------------------------------------------

// The runtime dispatches each message with its post stamp, for a periodic timer its due time:
// the core's latency of the type is its lateness. A 35 ms block from 25 ms holds up the 10 ms
// tick due at 30 ms until 60 ms: 30 ms late, 3 whole periods, which the timer skips (one message
// per firing) and the core counts as missed; one deadline miss. The loop waits the rest of the
// window and reports it as idle, so load and idle share add up. Crosses the tick wrap.
TEST(QueueLatency, PeriodicTimerLatenessMissedPeriodsAndIdleInTheCore) {
  auto rig = std::make_unique<Rig>(static_cast<lc::tick_t>(0u - 50'000u));
  ASSERT_EQ(rig->start(1'000'000), simrt::BoardError::none);
  EXPECT_EQ(rig->runtime.init_event(kTick, lc::EventHealthConfig{10'000, 2'000}), lc::Status::ok);
  EXPECT_EQ(rig->runtime.init_event(kTypeCount, lc::EventHealthConfig{}), lc::Status::not_initialised);
  const int tick = rig->runtime.add_timer(kTick, 10'000);
  const int slow = rig->runtime.add_timer(kSlow, 0);
  ASSERT_GE(tick, 0);
  ASSERT_GE(slow, 0);
  rig->firmware.slow_us = 35'000;
  rig->runtime.start_timer(static_cast<simrt::TimerId>(tick), 10'000);
  rig->runtime.start_timer(static_cast<simrt::TimerId>(slow), 25'000);
  const lc::LoopStats before = rig->monitor.stats();
  const lc::tick_t start = rig->board.now();

  rig->runtime.run_for(100'000);

  const lc::tick_t window = lc::ticks_between(start, rig->board.now());
  const lc::LoopStats after = rig->monitor.stats();
  const lc::EventStats tick_health = rig->runtime.health(kTick);
  EXPECT_EQ(window, 100'000u);
  EXPECT_EQ(tick_health.dispatches, 6u) << "due at 10, 20, 30 (run at 60), 70, 80, 90 ms";
  EXPECT_EQ(tick_health.max_latency, 30'000u);
  EXPECT_EQ(tick_health.missed_periods, 3u);
  EXPECT_EQ(rig->runtime.stats(kTick).timer_skips, 3u);
  EXPECT_EQ(tick_health.deadline_misses, 1u);
  EXPECT_EQ(tick_health.latency[0], 5u) << "the others ran when due";
  EXPECT_EQ(rig->runtime.health(kSlow).dispatches, 1u);
  EXPECT_EQ(rig->runtime.health(kSlow).max_latency, 0u);
  EXPECT_EQ(lc::load_permille(before, after, window), 350u);
  EXPECT_EQ(lc::idle_permille(before, after, window), 650u);
  EXPECT_EQ(lc::rate_mhz(tick_health.dispatches, window, rig->board.tick_hz()), 60'000u);
  // The descriptor the runtime dispatches under: the firmware's name, the runtime's storage.
  EXPECT_NE(rig->runtime.event(kSlow).health, nullptr);
  EXPECT_STREQ(rig->runtime.event(kSlow).name, kTypes[kSlow].event.name);
}

// A periodic timer gives one message per firing, as a hardware timer's pending flag gives one
// interrupt: at 5 ms a burst queues four 8 ms messages; the tick due at 10 ms is queued at 13 ms
// behind three of them and dispatched at 37 ms, 27 ms late. The ticks due at 20 and 30 ms fall
// due while it is still queued: the timer skips them (no second message piles up), and the core
// counts the same 2 missed periods. The loop's totals: busy the 32 ms of the four messages,
// idle the rest of the 100 ms.
TEST(QueueLatency, ATimerWhoseMessageIsStillQueuedSkipsThePeriod) {
  auto rig = std::make_unique<Rig>(static_cast<lc::tick_t>(0u - 20'000u));
  ASSERT_EQ(rig->start(1'000'000), simrt::BoardError::none);
  EXPECT_EQ(rig->runtime.init_event(kTick, lc::EventHealthConfig{10'000, 5'000}), lc::Status::ok);
  const int tick = rig->runtime.add_timer(kTick, 10'000);
  const int burst = rig->runtime.add_timer(kBurst, 0);
  ASSERT_GE(tick, 0);
  ASSERT_GE(burst, 0);
  rig->firmware.burst = 4;
  rig->firmware.slow_us = 8'000;
  rig->runtime.start_timer(static_cast<simrt::TimerId>(tick), 10'000);
  rig->runtime.start_timer(static_cast<simrt::TimerId>(burst), 5'000);

  rig->runtime.run_for(100'000);

  const lc::EventStats tick_health = rig->runtime.health(kTick);
  EXPECT_EQ(tick_health.dispatches, 7u) << "due at 10 (run at 37), 40, 50, 60, 70, 80, 90 ms";
  EXPECT_EQ(tick_health.max_latency, 27'000u);
  EXPECT_EQ(tick_health.missed_periods, 2u);
  EXPECT_EQ(rig->runtime.stats(kTick).timer_skips, 2u) << "20 and 30 ms, while the tick of 10 ms was queued";
  EXPECT_EQ(tick_health.deadline_misses, 1u);
  EXPECT_EQ(rig->runtime.stats(kTick).lost, 0u);
  EXPECT_EQ(rig->runtime.health(kSlow).dispatches, 4u);
  EXPECT_EQ(rig->runtime.health(kSlow).max_latency, 24'000u) << "the last, queued at 5 ms, ran at 29 ms";

  const simrt::LoopTotals& totals = rig->runtime.totals();
  EXPECT_EQ(totals.window_ticks, 100'000u);
  EXPECT_EQ(totals.busy_ticks, 32'000u);
  EXPECT_EQ(totals.idle_ticks, 68'000u);
  EXPECT_EQ(totals.dispatches, 12u) << "1 burst, 4 slow, 7 ticks";
}

// The loop's totals over one run_for() longer than the wrap of the 32-bit counters they come
// from (LoopStats::busy_ticks and idle_ticks, 2^32 us at 1 MHz): 7200 s, 60 ms of work every
// 100 ms, so busy passes 2^32 us (4320 s) and the window passes it too.
TEST(LoopTotals, ExactOverARunLongerThanTheWrap) {
  auto rig = std::make_unique<Rig>(static_cast<lc::tick_t>(0u - 1000u));
  ASSERT_EQ(rig->start(1'000'000), simrt::BoardError::none);
  constexpr std::uint32_t period_us = 100'000;
  constexpr std::uint32_t work_us = 60'000;
  constexpr std::uint64_t run_us = 7'200 * kSecondUs;
  const int slow = rig->runtime.add_timer(kSlow, period_us);
  ASSERT_GE(slow, 0);
  rig->firmware.slow_us = work_us;
  rig->runtime.start_timer(static_cast<simrt::TimerId>(slow), period_us);

  ASSERT_TRUE(rig->runtime.run_for(run_us));

  const std::uint64_t dispatches = (run_us - 1u) / period_us;
  const simrt::LoopTotals& totals = rig->runtime.totals();
  static_assert(run_us / period_us * work_us > kWrapUs, "busy time past the wrap");
  EXPECT_EQ(totals.window_ticks, run_us);
  EXPECT_EQ(totals.dispatches, dispatches);
  EXPECT_EQ(totals.busy_ticks, dispatches * work_us);
  EXPECT_EQ(totals.idle_ticks, run_us - dispatches * work_us);
}

// ---- What a block delayed, hours later -----------------------------------------------------

// A 600 ms block at 1.5 s holds up the tick due at 2 s; the ticks of the next 4400 s were posted
// long after it ended and are not counted against it.
TEST(LongRunDelays, ABlockDelaysOnlyWhatWasPostedBeforeItEnded) {
  auto rig = std::make_unique<Rig>(static_cast<lc::tick_t>(0u - 1000u));
  ASSERT_EQ(rig->start(1'000'000), simrt::BoardError::none);
  const int tick = rig->runtime.add_timer(kTick, 1'000'000);
  const int slow = rig->runtime.add_timer(kSlow, 0);
  ASSERT_GE(tick, 0);
  ASSERT_GE(slow, 0);
  rig->firmware.slow_us = 600'000;
  rig->runtime.start_timer(static_cast<simrt::TimerId>(tick), 1'000'000);
  rig->runtime.start_timer(static_cast<simrt::TimerId>(slow), 1'500'000);

  rig->run_in_chunks(10 * kSecondUs);
  const simrt::BlockSpan* span = rig->runtime.span_of(rig->firmware.slow_dispatch);
  ASSERT_NE(span, nullptr);
  EXPECT_EQ(span->delayed_total, 1u) << "the tick posted at 2 s, during the block";
  EXPECT_EQ(span->delayed[kTick], 1u);

  rig->run_in_chunks(kWrapUs + 100 * kSecondUs);
  span = rig->runtime.span_of(rig->firmware.slow_dispatch);
  ASSERT_NE(span, nullptr);
  EXPECT_EQ(span->delayed_total, 1u) << "nothing posted after the block ended is counted";
}

// ---- Reports with times past 2^32 us -------------------------------------------------------

std::string read_all(std::FILE* file) {
  std::string text;
  std::rewind(file);
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
  return text;
}

// A block 4400 s into the run (past the wrap) is reported at 4400 s, live and in the summary,
// also when the run goes on for more than half a wrap after it.
TEST(LongRunReport, TimesCountFromTheStartOfTheRunPastTheWrap) {
  auto rig = std::make_unique<Rig>(static_cast<lc::tick_t>(0u - 1000u));
  std::FILE* live = std::tmpfile();
  std::FILE* summary = std::tmpfile();
  ASSERT_NE(live, nullptr);
  ASSERT_NE(summary, nullptr);
  simrt::RunSinkConfig run_sink_config;
  run_sink_config.board = &rig->board;
  run_sink_config.live = live;
  auto run_sink = std::make_unique<simrt::RunSink>(run_sink_config);
  ASSERT_EQ(rig->start(10'000, nullptr, 0, &simrt::RunSink::take, run_sink.get()), simrt::BoardError::none);
  const int slow = rig->runtime.add_timer(kSlow, 0);
  ASSERT_GE(slow, 0);
  rig->firmware.slow_us = 600'000;

  const std::uint64_t block_at_us = 4'400 * kSecondUs;
  rig->run_in_chunks(block_at_us - 100 * kSecondUs);
  rig->runtime.start_timer(static_cast<simrt::TimerId>(slow), 100'000'000);
  rig->run_in_chunks(110 * kSecondUs + kHalfWrapUs);
  rig->board.finish();

  ASSERT_EQ(run_sink->final_reports(), 1u);
  const std::string live_text = read_all(live);
  EXPECT_NE(live_text.find("4400.600 s  block ended        slow"), std::string::npos) << live_text;

  simrt::SummaryInput in;
  in.header.run_us = block_at_us + 10 * kSecondUs + kHalfWrapUs;
  in.runtime = &rig->runtime;
  in.run_sink = run_sink.get();
  in.monitor = &rig->monitor;
  in.watchdog = &rig->watchdog;
  in.board = &rig->board;
  simrt::print_summary_text(summary, in);
  const std::string summary_text = read_all(summary);
  EXPECT_NE(summary_text.find("at 4400.000 s  slow, dispatch "), std::string::npos) << summary_text;
  std::fclose(live);
  std::fclose(summary);
}

// Lines and timers name a type of the table, so they are added after init(): before it every
// type is unknown and both refuse (-1); after it, a type past the table is refused too.
TEST(RuntimeSetUp, LinesAndTimersNeedTheTableOfInit) {
  simrt::VirtualBoard board;
  lc::Monitor monitor;
  lc::MonitorConfig config;
  config.tick_hz = board.tick_hz();
  config.context = board.loop_context();
  ASSERT_EQ(monitor.init(config), lc::Status::ok);
  simrt::Runtime runtime(board, monitor);
  Firmware firmware;
  EXPECT_EQ(runtime.add_timer(kTick, 1'000), -1);
  EXPECT_EQ(runtime.add_irq_line(kLine), -1);
  ASSERT_TRUE(runtime.init(simrt::RuntimeConfig{kTypes, kTypeCount, &firmware}));
  EXPECT_EQ(runtime.add_timer(kTypeCount, 1'000), -1);
  EXPECT_EQ(runtime.add_irq_line(kTypeCount), -1);
  EXPECT_EQ(runtime.add_timer(kTick, 1'000), 0);
  EXPECT_EQ(runtime.add_irq_line(kLine), 0);
}

}  // namespace

// ---- What a handler waits on --------------------------------------------------------------

void collect_record(void* records, const lc::BlockRecord& record) {
  static_cast<std::vector<lc::BlockRecord>*>(records)->push_back(record);
}

// log_flush takes the flash controller's bus while the peripheral "ota_task" holds it (from 1 ms,
// for 300 ms):
// its record says it waited on that bus, held by ota_task, in every sample it took.
TEST(BusWait, AHandlerWaitingForABusNamesThePeripheralThatHoldsIt) {
  auto rig = std::make_unique<Rig>(0);
  const simrt::Action actions[] = {{simrt::Action::Kind::hold_bus, 0, 300'000, 1'000, 0, 0}};
  const simrt::Peripheral peripherals[] = {{"sensor", nullptr, 0}, {"ota_task", actions, 1}};
  std::vector<lc::BlockRecord> records;
  ASSERT_EQ(rig->start(10'000, peripherals, 2, &collect_record, &records), simrt::BoardError::none);
  rig->run_in_chunks(10'000);  // ota_task holds the bus from 1 ms
  rig->runtime.post(kFlush, 0);
  rig->run_in_chunks(1'000'000);
  rig->board.finish();
  const auto final = std::find_if(records.begin(), records.end(), [](const lc::BlockRecord& r) {
    return r.phase == lc::Phase::final && std::string(r.event->name) == "log_flush";
  });
  ASSERT_NE(final, records.end()) << records.size() << " records";
  EXPECT_EQ(final->cause, lc::Cause::waiting);
  ASSERT_EQ(final->wait.count, 1u);
  const lc::WaitSeen& bus = final->wait.objects[0];
  EXPECT_EQ(bus.samples, final->samples_taken);
  EXPECT_GT(bus.samples, 20u);
  char text[128];
  lc::format_wait(bus, text, sizeof text);
  EXPECT_STREQ(text, "mutex 0x0 bus held by 'ota_task' (tid 3)");
}

// A live line names the main wait object; one too long for the line ends in "..." and stays one
// line (the formatter's truncation marker, which ends in a newline, never reaches it).
TEST(BusWait, ALiveLineNamesTheWaitAndStaysOneLine) {
  auto rig = std::make_unique<Rig>(0);
  std::FILE* live = std::tmpfile();
  ASSERT_NE(live, nullptr);
  simrt::RunSinkConfig run_sink_config;
  run_sink_config.board = &rig->board;
  run_sink_config.live = live;
  auto run_sink = std::make_unique<simrt::RunSink>(run_sink_config);
  ASSERT_EQ(rig->start(10'000), simrt::BoardError::none);
  static const lc::Event kSync{"cloud_sync"};
  static const std::string long_loop(600, 'l');
  lc::BlockRecord r;
  r.phase = lc::Phase::hang;
  r.event = &kSync;
  r.tick_hz = rig->board.tick_hz();
  r.start = rig->board.start_tick();
  r.end = r.start;
  if constexpr (lc::kWaitObjects > 0) {
    r.wait.count = 1;
    r.wait.objects[0].object.kind = lc::WaitKind::mutex;
    r.wait.objects[0].object.address = 0x1;
    r.wait.objects[0].object.owner = 3;
    r.wait.objects[0].samples = 1;
  }
  simrt::RunSink::take(run_sink.get(), r);  // a short description
  if constexpr (lc::kWaitObjects > 0) r.wait.objects[0].owner_loop = long_loop.c_str();
  simrt::RunSink::take(run_sink.get(), r);  // one longer than the line holds
  rig->board.finish();
  const std::string text = read_all(live);
  std::fclose(live);
  if constexpr (lc::kWaitObjects == 0) GTEST_SKIP() << "a build without wait objects";
  const std::size_t first = text.find('\n');
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_NE(text.find("HANG, still stuck  cloud_sync"), std::string::npos) << text;
  const std::string line = text.substr(0, first);
  const std::string expected_end = "in -  on mutex 0x1 held by (tid 3)";
  ASSERT_GE(line.size(), expected_end.size()) << line;
  EXPECT_EQ(line.substr(line.size() - expected_end.size()), expected_end) << line;
  const std::string second = text.substr(first + 1);
  EXPECT_EQ(std::count(second.begin(), second.end(), '\n'), 1) << second;
  EXPECT_EQ(second.find("[truncated]"), std::string::npos) << second;
  EXPECT_EQ(second.substr(second.size() - 4), "...\n") << second;
}
