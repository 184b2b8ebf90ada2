// SPDX-License-Identifier: MIT
// Monitor: stamps, statistics, histogram, nesting, named scopes, per-event limits, and the
// instrumentation macros on a ClockedMonitor in virtual time. Every timing test runs from tick 0
// and again from just before the 32-bit counter wraps (the parameter is the start tick).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/instrument.hpp"
#include "loopcanary/monitor.hpp"
#include "loopcanary/port/sim.hpp"

namespace {

namespace lc = loopcanary;
namespace sim = loopcanary::sim;
using lc::LoopStats;
using lc::Monitor;
using lc::MonitorConfig;
using lc::Status;
using lc::tick_t;

constexpr lc::Event kPlain{"plain"};
constexpr lc::Event kOther{"other"};

constexpr std::uint32_t kMHz = 1'000'000;
constexpr std::uint32_t kThresholdUs = 100'000;  // 100 ms

// A valid configuration at `tick_hz` with a 100 ms threshold, 10 ms interval, 5 s hang limit.
MonitorConfig config_at(std::uint32_t tick_hz, std::uint32_t threshold_us = kThresholdUs) {
  MonitorConfig c;
  c.name = "loop";
  c.tick_hz = tick_hz;
  c.threshold_us = threshold_us;
  c.arm_permille = 250;
  c.sample_interval_us = threshold_us / 10u;
  c.hang_limit_us = 5'000'000;
  return c;
}

void init_monitor(Monitor& m, const MonitorConfig& c) {
  const Status s = m.init(c);
  ASSERT_EQ(s, Status::ok) << lc::describe(s);
}

// One dispatch of `event` from `begin` lasting `duration` ticks.
void dispatch(Monitor& m, tick_t begin, tick_t duration, const lc::Event& event = kPlain) {
  m.begin_at(event, begin);
  m.end_at(static_cast<tick_t>(begin + duration));
}

std::uint32_t histogram_total(const LoopStats& s) {
  std::uint32_t total = 0;
  for (std::uint32_t count : s.histogram) total += count;
  return total;
}

// Runs one dispatch of `duration` ticks from `begin` and returns the index of the histogram
// bucket it landed in; -1 when no bucket changed, -2 when the change was not exactly one count
// in one bucket.
int bucket_hit(Monitor& m, tick_t begin, tick_t duration) {
  const LoopStats before = m.stats();
  dispatch(m, begin, duration);
  const LoopStats after = m.stats();
  int hit = -1;
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) {
    if (after.histogram[i] == before.histogram[i]) continue;
    if (hit != -1 || after.histogram[i] != before.histogram[i] + 1u) return -2;
    hit = static_cast<int>(i);
  }
  return hit;
}

lc::StampSnapshot snapshot_of(const Monitor& m) {
  lc::StampSnapshot snap;
  // Single-threaded: nothing can move the stamps during the read, so one attempt must succeed.
  EXPECT_TRUE(m.snapshot(snap));
  return snap;
}

// Scope names of `m`, innermost first (at most 64).
std::vector<const char*> scopes_of(const Monitor& m, std::size_t max = 64) {
  std::array<const char*, 64> names{};
  std::size_t count = 999;
  EXPECT_TRUE(m.scope_snapshot(names.data(), max < names.size() ? max : names.size(), count));
  EXPECT_LE(count, max);
  return std::vector<const char*>(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(count));
}

// ---- Timing tests, from tick 0 and across the wrap -----------------------------------------

// Test name suffix for a start tick.
std::string start_name(const ::testing::TestParamInfo<tick_t>& param) {
  return "at_" + std::to_string(param.param);
}

class MonitorTiming : public ::testing::TestWithParam<tick_t> {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(init_monitor(monitor_, config_at(kMHz))); }
  tick_t at(tick_t offset) const { return static_cast<tick_t>(GetParam() + offset); }

  Monitor monitor_;
};

INSTANTIATE_TEST_SUITE_P(Start, MonitorTiming,
                         ::testing::Values(tick_t{0}, static_cast<tick_t>(0u - 50'000u),
                                           static_cast<tick_t>(0x7FFF'FFFFu - 10u)),
                         start_name);

TEST_P(MonitorTiming, SnapshotIdleThenInDispatchThenIdle) {
  lc::StampSnapshot snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 0u);
  EXPECT_FALSE(snap.in_dispatch());

  monitor_.begin_at(kPlain, at(100));
  snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 1u);
  EXPECT_TRUE(snap.in_dispatch());
  EXPECT_EQ(snap.begin, at(100));
  EXPECT_EQ(snap.event, &kPlain);

  monitor_.end_at(at(150));
  snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 2u);
  EXPECT_FALSE(snap.in_dispatch());  // begin and event are not valid now

  monitor_.begin_at(kOther, at(300));
  snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 3u);
  EXPECT_EQ(snap.begin, at(300));
  EXPECT_EQ(snap.event, &kOther);
}

TEST_P(MonitorTiming, CountsDispatchesMaxDurationAndBusyTicks) {
  const tick_t durations[] = {30'000, 70'000, 50'000};
  tick_t t = 0;
  for (tick_t d : durations) {
    dispatch(monitor_, at(t), d);
    t += d + 1'000u;
  }
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 3u);
  EXPECT_EQ(s.max_duration, 70'000u);
  EXPECT_EQ(s.busy_ticks, 30'000u + 70'000u + 50'000u);
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.tick_hz, kMHz);
  EXPECT_EQ(histogram_total(s), 3u);
}

TEST_P(MonitorTiming, BlockIsStrictlyLongerThanTheThreshold) {
  const tick_t threshold = kThresholdUs;  // 1 tick per microsecond
  dispatch(monitor_, at(0), threshold);                 // equal: not a block
  dispatch(monitor_, at(200'000), threshold + 1u);      // one tick over: a block
  dispatch(monitor_, at(400'000), threshold - 1u);      // under
  dispatch(monitor_, at(600'000), 2u * threshold);      // well over
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 4u);
  EXPECT_EQ(s.blocks, 2u);
  EXPECT_EQ(s.max_duration, 2u * threshold);
}

TEST_P(MonitorTiming, BusyTicksIsModular) {
  // Three dispatches of 0x6000'0000 ticks sum to 0x1'2000'0000: busy_ticks keeps the low 32 bits.
  constexpr tick_t kLong = 0x6000'0000u;
  dispatch(monitor_, at(0), kLong);
  dispatch(monitor_, at(kLong), kLong);
  dispatch(monitor_, at(2u * kLong), kLong);
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.busy_ticks, static_cast<tick_t>(3ull * kLong));
  EXPECT_EQ(s.busy_ticks, 0x2000'0000u);
  EXPECT_EQ(s.max_duration, kLong);
  EXPECT_EQ(s.blocks, 3u);
}

TEST_P(MonitorTiming, NestedBeginIsFoldedIntoTheOuterDispatch) {
  monitor_.begin_at(kPlain, at(0));
  monitor_.begin_at(kOther, at(10));  // a handler that pumps the loop
  lc::StampSnapshot snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 1u);
  EXPECT_EQ(snap.event, &kPlain);
  EXPECT_EQ(snap.begin, at(0));

  monitor_.end_at(at(20));  // closes the nesting only
  snap = snapshot_of(monitor_);
  EXPECT_TRUE(snap.in_dispatch());
  EXPECT_EQ(monitor_.stats().dispatches, 0u);

  monitor_.end_at(at(150'000));  // closes the outer dispatch, over the 100 ms threshold
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.nested, 1u);
  EXPECT_EQ(s.unbalanced_ends, 0u);
  EXPECT_EQ(s.max_duration, 150'000u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(histogram_total(s), 1u);
  EXPECT_FALSE(snapshot_of(monitor_).in_dispatch());
}

TEST_P(MonitorTiming, DeepNestingClosesLevelByLevelThenTheOuterDispatch) {
  monitor_.begin_at(kPlain, at(0));
  for (int level = 0; level < 3; ++level) monitor_.begin_at(kOther, at(10));
  for (int level = 0; level < 3; ++level) {
    monitor_.end_at(at(20));  // closes one nesting level
    EXPECT_TRUE(snapshot_of(monitor_).in_dispatch()) << "after closing level " << level;
    EXPECT_EQ(monitor_.stats().dispatches, 0u);
  }
  monitor_.end_at(at(30));  // the outer dispatch
  LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.nested, 3u);
  EXPECT_EQ(s.max_duration, 30u);
  EXPECT_EQ(s.unbalanced_ends, 0u);

  dispatch(monitor_, at(100), 50);  // the next dispatch is a plain one again
  monitor_.end_at(at(200));         // and an extra end is unbalanced, not a nesting level
  s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 2u);
  EXPECT_EQ(s.max_duration, 50u);
  EXPECT_EQ(s.unbalanced_ends, 1u);
  EXPECT_EQ(s.nested, 3u);
}

TEST_P(MonitorTiming, UnbalancedEndIsCountedAndIgnored) {
  monitor_.end_at(at(5));
  LoopStats s = monitor_.stats();
  EXPECT_EQ(s.unbalanced_ends, 1u);
  EXPECT_EQ(s.dispatches, 0u);
  EXPECT_EQ(snapshot_of(monitor_).seq, 0u);

  dispatch(monitor_, at(10), 40);
  monitor_.end_at(at(200'000));  // would be a 200 ms dispatch if it were not ignored
  s = monitor_.stats();
  EXPECT_EQ(s.unbalanced_ends, 2u);
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.max_duration, 40u);
  EXPECT_EQ(s.busy_ticks, 40u);
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(snapshot_of(monitor_).seq, 2u);
}

TEST_P(MonitorTiming, EventThresholdAboveTheLoopsDecidesTheBlock) {
  constexpr lc::Event kFlashErase{"flash_erase", 300'000};  // 300 ms, slow by design
  dispatch(monitor_, at(0), 250'000, kFlashErase);          // over the loop's 100 ms, under its own
  dispatch(monitor_, at(1'000'000), 300'000, kFlashErase);  // equal to its own: not a block
  EXPECT_EQ(monitor_.stats().blocks, 0u);
  dispatch(monitor_, at(2'000'000), 300'001, kFlashErase);  // one tick over its own
  EXPECT_EQ(monitor_.stats().blocks, 1u);
  dispatch(monitor_, at(3'000'000), 250'000);  // the same length is a block for a plain event
  EXPECT_EQ(monitor_.stats().blocks, 2u);
}

TEST_P(MonitorTiming, EventThresholdBelowTheLoopsIsRaisedToIt) {
  constexpr lc::Event kEager{"eager", 20'000};  // asks for 20 ms; the loop's 100 ms is the floor
  dispatch(monitor_, at(0), 50'000, kEager);
  dispatch(monitor_, at(200'000), kThresholdUs, kEager);
  EXPECT_EQ(monitor_.stats().blocks, 0u);
  dispatch(monitor_, at(400'000), kThresholdUs + 1u, kEager);
  EXPECT_EQ(monitor_.stats().blocks, 1u);
}

TEST_P(MonitorTiming, FullNoteQueueIsCounted) {
  // No watchdog drains the notes: the first kNoteCapacity blocks are queued, the rest dropped.
  constexpr std::uint32_t kExtra = 3;
  constexpr auto kBlocks = static_cast<std::uint32_t>(lc::kNoteCapacity) + kExtra;
  for (std::uint32_t i = 0; i < kBlocks; ++i) dispatch(monitor_, at(i * 1'000'000u), 200'000);
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.blocks, kBlocks);
  EXPECT_EQ(s.notes_dropped, kExtra);
}

// Histogram: bucket i holds d (ticks) with floor(log2(d)) == i, and 0 also holds d == 0.
// Checked at every power of two and one below it, which are the bucket edges.
void check_histogram_edges(Monitor& m, tick_t t0) {
  EXPECT_EQ(bucket_hit(m, t0, 0), 0);
  for (unsigned i = 0; i < 32; ++i) {
    const tick_t power = tick_t{1} << i;
    EXPECT_EQ(bucket_hit(m, t0, power), static_cast<int>(i)) << "d = 2^" << i;
    if (i == 0) continue;
    EXPECT_EQ(bucket_hit(m, t0, power - 1u), static_cast<int>(i) - 1) << "d = 2^" << i << " - 1";
  }
  EXPECT_EQ(bucket_hit(m, t0, 0xFFFF'FFFFu), 31);
}

TEST_P(MonitorTiming, HistogramBucketEdgesAtOneMegahertz) { check_histogram_edges(monitor_, at(0)); }

TEST_P(MonitorTiming, HistogramIsInTicksAtAnyRate) {
  Monitor fast;
  ASSERT_NO_FATAL_FAILURE(init_monitor(fast, config_at(64'000'000)));
  check_histogram_edges(fast, at(0));
}

// ---- Back-to-back dispatch: next_at() ------------------------------------------------------

// Every field of two LoopStats.
void expect_same_stats(const LoopStats& a, const LoopStats& b) {
  EXPECT_EQ(a.dispatches, b.dispatches);
  EXPECT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.hangs, b.hangs);
  EXPECT_EQ(a.max_duration, b.max_duration);
  EXPECT_EQ(a.busy_ticks, b.busy_ticks);
  EXPECT_EQ(a.idle_ticks, b.idle_ticks);
  EXPECT_EQ(a.nested, b.nested);
  EXPECT_EQ(a.unbalanced_ends, b.unbalanced_ends);
  EXPECT_EQ(a.notes_dropped, b.notes_dropped);
  EXPECT_EQ(a.deadline_notes_dropped, b.deadline_notes_dropped);
  EXPECT_EQ(a.scope_overflows, b.scope_overflows);
  EXPECT_EQ(a.scope_underflows, b.scope_underflows);
  EXPECT_EQ(a.stages_dropped, b.stages_dropped);
  EXPECT_EQ(a.clock_steps_back, b.clock_steps_back);
  EXPECT_EQ(a.tick_hz, b.tick_hz);
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) EXPECT_EQ(a.histogram[i], b.histogram[i]) << "bucket " << i;
}

// One dispatch of a back-to-back stream: it begins where the previous one ended.
struct Step {
  const lc::Event* event;
  tick_t duration;     // modular: 0 - 5 ends 5 ticks before it began (the clock stepped back)
  bool nested = false; // a handler that pumps the loop: a nested begin/end inside it
  bool staged = false; // one stage mark inside it
};

constexpr lc::Event kSlow{"slow", 300'000};  // its own threshold, above the loop's 100 ms

// Runs `steps` back to back from `start` on `m`; `next` true: next_at() between them, else
// end_at() then begin_at() at the same stamp. The last one is closed with end_at().
void run_stream(Monitor& m, tick_t start, const std::vector<Step>& steps, bool next) {
  tick_t t = start;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    if (i == 0) {
      m.begin_at(*step.event, t);
    } else if (next) {
      m.next_at(*step.event, t);
    } else {
      m.end_at(t);
      m.begin_at(*step.event, t);
    }
    if (step.nested) {
      m.begin_at(kOther, static_cast<tick_t>(t + 1u));
      m.end_at(static_cast<tick_t>(t + 2u));
    }
    if (step.staged) m.stage_at("stage", static_cast<tick_t>(t + 1u));
    t = static_cast<tick_t>(t + step.duration);
  }
  m.end_at(t);
}

// Blocks (more than the note queue holds), exactly the threshold, zero, one tick, an event with
// its own threshold on both sides of it, a step back of the clock, a nested dispatch, stage marks
// and every histogram range up to 2^30.
std::vector<Step> mixed_steps() {
  std::vector<Step> steps;
  for (int round = 0; round < 3; ++round) {
    steps.push_back({&kPlain, 30'000});
    steps.push_back({&kPlain, kThresholdUs + 1u, false, true});  // a block, with a mark
    steps.push_back({&kOther, kThresholdUs});                    // exactly the threshold: no block
    steps.push_back({&kPlain, 0});
    steps.push_back({&kOther, 1, true});                         // nested inside
    steps.push_back({&kSlow, 250'000});                          // under its own threshold
    steps.push_back({&kSlow, 300'001});                          // over it
    steps.push_back({&kPlain, static_cast<tick_t>(0u - 5u)});    // the clock stepped back 5 ticks
    steps.push_back({&kPlain, tick_t{1} << 30});                 // a long block
    steps.push_back({&kOther, 7, false, true});
  }
  return steps;
}

TEST_P(MonitorTiming, NextGivesTheStatisticsOfEndThenBegin) {
  const std::vector<Step> steps = mixed_steps();
  Monitor pairs;
  ASSERT_NO_FATAL_FAILURE(init_monitor(pairs, config_at(kMHz)));
  run_stream(pairs, at(0), steps, false);
  run_stream(monitor_, at(0), steps, true);
  const LoopStats expected = pairs.stats();
  expect_same_stats(monitor_.stats(), expected);
  // The reference itself: what the steps make.
  EXPECT_EQ(expected.dispatches, steps.size());
  EXPECT_EQ(expected.blocks, 3u * 3u);
  EXPECT_EQ(expected.notes_dropped, 3u * 3u - std::min<std::size_t>(3u * 3u, lc::kNoteCapacity));
  EXPECT_EQ(expected.clock_steps_back, 3u);
  EXPECT_EQ(expected.nested, 3u);
  EXPECT_EQ(expected.max_duration, static_cast<tick_t>(0u - 5u));  // a step back reads near 2^32
  EXPECT_EQ(expected.unbalanced_ends, 0u);
  EXPECT_EQ(expected.stages_dropped, 0u);
  EXPECT_EQ(snapshot_of(monitor_).seq, snapshot_of(pairs).seq);
}

TEST_P(MonitorTiming, NextEndsTheDispatchAndBeginsTheNextAtTheSameStamp) {
  monitor_.begin_at(kPlain, at(0));
  monitor_.next_at(kOther, at(40'000));
  lc::StampSnapshot snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 3u);  // dispatch 2 runs
  EXPECT_EQ(snap.begin, at(40'000));
  EXPECT_EQ(snap.event, &kOther);
  LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.busy_ticks, 40'000u);
  EXPECT_EQ(s.max_duration, 40'000u);

  monitor_.next_at(kPlain, at(40'000 + kThresholdUs + 1u));  // dispatch 2 was a block
  snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 5u);
  EXPECT_EQ(snap.begin, at(40'000 + kThresholdUs + 1u));
  EXPECT_EQ(snap.event, &kPlain);
  s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 2u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.max_duration, kThresholdUs + 1u);

  monitor_.end_at(at(40'000 + kThresholdUs + 11u));
  EXPECT_FALSE(snapshot_of(monitor_).in_dispatch());
  EXPECT_EQ(monitor_.stats().busy_ticks, 40'000u + kThresholdUs + 11u);
}

TEST_P(MonitorTiming, NextWithNoDispatchRunningCountsAnUnbalancedEndAndBegins) {
  monitor_.next_at(kOther, at(10));
  lc::StampSnapshot snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 1u);
  EXPECT_EQ(snap.begin, at(10));
  EXPECT_EQ(snap.event, &kOther);
  LoopStats s = monitor_.stats();
  EXPECT_EQ(s.unbalanced_ends, 1u);
  EXPECT_EQ(s.dispatches, 0u);
  monitor_.end_at(at(30));
  s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.max_duration, 20u);
}

TEST_P(MonitorTiming, NextInsideANestedDispatchClosesAndReopensTheNesting) {
  monitor_.begin_at(kPlain, at(0));
  monitor_.begin_at(kOther, at(10));  // a handler that drains the loop inside a dispatch
  monitor_.next_at(kOther, at(20));   // closes that nesting level and opens another
  monitor_.next_at(kOther, at(30));
  lc::StampSnapshot snap = snapshot_of(monitor_);
  EXPECT_EQ(snap.seq, 1u);
  EXPECT_EQ(snap.begin, at(0));
  EXPECT_EQ(snap.event, &kPlain);
  LoopStats s = monitor_.stats();
  EXPECT_EQ(s.nested, 3u);
  EXPECT_EQ(s.dispatches, 0u);
  monitor_.end_at(at(40));  // the last nesting level
  EXPECT_TRUE(snapshot_of(monitor_).in_dispatch());
  monitor_.end_at(at(150'000));  // the outer dispatch, a block
  s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.nested, 3u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.max_duration, 150'000u);
  EXPECT_EQ(s.unbalanced_ends, 0u);
}

TEST_P(MonitorTiming, StageMarksBelongToTheDispatchNextBegan) {
  if (lc::kMaxStages < 2) GTEST_SKIP() << "needs two stage marks";
  monitor_.begin_at(kPlain, at(0));
  monitor_.stage_at("first", at(5));
  monitor_.next_at(kOther, at(10));
  const std::uint32_t seq = snapshot_of(monitor_).seq;
  std::array<lc::StageMark, lc::detail::kStageSlots> marks{};
  std::size_t count = 99;
  ASSERT_TRUE(monitor_.stage_snapshot(seq, marks.data(), count));
  EXPECT_EQ(count, 0u) << "the previous dispatch's mark is not this one's";
  monitor_.stage_at("second", at(12));
  ASSERT_TRUE(monitor_.stage_snapshot(seq, marks.data(), count));
  ASSERT_EQ(count, 1u);
  EXPECT_STREQ(marks[0].name, "second");
  EXPECT_EQ(marks[0].start, at(12));
}

// ---- Not timing-dependent -------------------------------------------------------------------

TEST(Monitor, BeforeInitNeverCountsBlocks) {
  constexpr lc::Event kOwnThreshold{"own", 1};
  Monitor m;
  EXPECT_FALSE(m.initialised());
  dispatch(m, 0, 0xFFFF'FFFFu);                 // the longest measurable dispatch
  dispatch(m, 0, 0xFFFF'FFFFu, kOwnThreshold);  // with a 1 us event threshold
  LoopStats s = m.stats();
  EXPECT_EQ(s.dispatches, 2u);
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.notes_dropped, 0u);
  EXPECT_EQ(s.max_duration, 0xFFFF'FFFFu);

  // A failed init leaves it uninitialised, still blind to blocks.
  MonitorConfig bad = config_at(kMHz);
  bad.tick_hz = 0;
  EXPECT_EQ(m.init(bad), Status::tick_hz_zero);
  EXPECT_FALSE(m.initialised());
  dispatch(m, 0, 0xFFFF'FFFFu);
  s = m.stats();
  EXPECT_EQ(s.dispatches, 3u);
  EXPECT_EQ(s.blocks, 0u);
}

TEST(Monitor, LimitsForDeriveFromTheEffectiveThreshold) {
  Monitor m;
  ASSERT_NO_FATAL_FAILURE(init_monitor(m, config_at(kMHz)));  // 100 ms, 25 %, 10 ms, 5 s
  const auto expect_limits = [&](const lc::Event& e, tick_t threshold, tick_t arm, tick_t interval,
                                 tick_t hang) {
    const lc::Limits l = m.limits_for(e);
    EXPECT_EQ(l.threshold, threshold) << e.name;
    EXPECT_EQ(l.arm, arm) << e.name;
    EXPECT_EQ(l.interval, interval) << e.name;
    EXPECT_EQ(l.hang, hang) << e.name;
  };
  // The loop's own limits: threshold, 25 % of it, the interval, the hang limit (1 tick = 1 us).
  expect_limits(kPlain, 100'000, 25'000, 10'000, 5'000'000);
  // At or below the loop's threshold, the loop's limits apply unchanged.
  constexpr lc::Event kBelow{"below", 20'000};
  constexpr lc::Event kEqual{"equal", 100'000};
  expect_limits(kBelow, 100'000, 25'000, 10'000, 5'000'000);
  expect_limits(kEqual, 100'000, 25'000, 10'000, 5'000'000);
  // Above: its own threshold, arm at 25 % of it, the loop's interval, and the loop's hang
  // margin (hang limit - threshold = 4.9 s) on top of the raised threshold.
  constexpr lc::Event kLonger{"longer", 300'000};
  expect_limits(kLonger, 300'000, 75'000, 10'000, 300'000 + 4'900'000);
  constexpr lc::Event kVeryLong{"very_long", 10'000'000};
  expect_limits(kVeryLong, 10'000'000, 2'500'000, 10'000, 10'000'000 + 4'900'000);
}

TEST(Monitor, LimitsForCapAnEventThresholdAndHangAtHalfTheWrap) {
  Monitor m;
  MonitorConfig config = config_at(1'000'000'000);  // 1 GHz: the counter wraps every 4.29 s
  config.hang_limit_us = 2'000'000;                 // hang margin 1.9 s = 1.9e9 ticks
  ASSERT_NO_FATAL_FAILURE(init_monitor(m, config));

  // 1 s: threshold 1e9 ticks; 1e9 + 1.9e9 is past half the wrap, so the hang is capped.
  constexpr lc::Event kSecond{"second", 1'000'000};
  lc::Limits l = m.limits_for(kSecond);
  EXPECT_EQ(l.threshold, 1'000'000'000u);
  EXPECT_EQ(l.arm, 250'000'000u);
  EXPECT_EQ(l.interval, 10'000'000u);  // 10 ms at 1 GHz
  EXPECT_EQ(l.hang, lc::kMaxIntervalTicks);

  // 4000 s = 4e12 ticks: the threshold itself is capped at half the wrap.
  constexpr lc::Event kHuge{"huge", 4'000'000'000u};
  l = m.limits_for(kHuge);
  EXPECT_EQ(l.threshold, lc::kMaxIntervalTicks);
  EXPECT_EQ(l.arm, static_cast<tick_t>(std::uint64_t{lc::kMaxIntervalTicks} * 250u / 1000u));
  EXPECT_EQ(l.interval, 10'000'000u);
  EXPECT_EQ(l.hang, lc::kMaxIntervalTicks);
}

// A static Monitor is constant-initialised (no start-up code): this only compiles if it can be.
constexpr Monitor kUnconfigured;

// The two ways the monitor counts its duration histogram (histogram.hpp, kHistogramCountsLater:
// at each end, or at the next end with the latest duration pending) read the same after every
// count, from the first (nothing pending yet) on, for durations in every bucket and zero.
TEST(MonitorHistogram, CountingAtOnceAndAtTheNextEndReadTheSame) {
  auto at_once = std::make_unique<lc::detail::HistogramCounters<true, false>>();
  auto later = std::make_unique<lc::detail::HistogramCounters<true, true>>();
  std::array<std::uint32_t, lc::kHistogramBuckets> expected{};
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) {
    EXPECT_EQ(later->bucket(i), 0u) << "bucket " << i << " before the first count";
  }
  std::vector<tick_t> durations{0u, 1u, 2u, 3u, 1000u, 1000u, 0xFFFF'FFFFu, 0u};
  for (std::uint32_t bit = 0; bit < 32; ++bit) durations.push_back(tick_t{1} << bit);
  for (const tick_t d : durations) {
    at_once->count(d);
    later->count(d);
    ++expected[lc::histogram_bucket(d)];
    for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) {
      ASSERT_EQ(later->bucket(i), expected[i]) << "bucket " << i << " after counting " << d;
      ASSERT_EQ(at_once->bucket(i), expected[i]) << "bucket " << i << " after counting " << d;
    }
  }
  EXPECT_EQ(later->bucket(lc::kHistogramBuckets), 0u) << "past the last bucket";
}

TEST(Monitor, UninitialisedMonitorIsAllZero) {
  constexpr lc::Event kOwn{"own", 1'000};
  for (const lc::Event* e : {&kPlain, &kOwn}) {
    const lc::Limits l = kUnconfigured.limits_for(*e);
    EXPECT_EQ(l.threshold, 0u) << e->name;
    EXPECT_EQ(l.arm, 0u) << e->name;
    EXPECT_EQ(l.interval, 0u) << e->name;
    EXPECT_EQ(l.hang, 0u) << e->name;
  }
  EXPECT_EQ(kUnconfigured.name(), nullptr);
  EXPECT_EQ(kUnconfigured.tick_hz(), 0u);
  EXPECT_FALSE(kUnconfigured.initialised());
  EXPECT_EQ(kUnconfigured.stats().dispatches, 0u);
}

TEST(Monitor, EndWithoutBeginOnAFreshMonitorIsUnbalanced) {
  Monitor m;
  m.end_at(5);
  LoopStats s = m.stats();
  EXPECT_EQ(s.unbalanced_ends, 1u);
  EXPECT_EQ(s.dispatches, 0u);
  lc::StampSnapshot snap;
  ASSERT_TRUE(m.snapshot(snap));
  EXPECT_FALSE(snap.in_dispatch());
  // Initialised, still the same: the first dispatch is the first one counted.
  ASSERT_NO_FATAL_FAILURE(init_monitor(m, config_at(kMHz)));
  m.end_at(6);
  dispatch(m, 10, 20);
  s = m.stats();
  EXPECT_EQ(s.unbalanced_ends, 2u);
  EXPECT_EQ(s.dispatches, 1u);
}

// ---- Named scopes ---------------------------------------------------------------------------

TEST(MonitorScopes, PushPopAndSnapshotInnermostFirst) {
  static constexpr char kA[] = "a";
  static constexpr char kB[] = "b";
  static constexpr char kC[] = "c";
  Monitor m;
  EXPECT_TRUE(scopes_of(m).empty());
  m.push_scope(kA);
  m.push_scope(kB);
  m.push_scope(kC);
  EXPECT_EQ(scopes_of(m), (std::vector<const char*>{kC, kB, kA}));
  // A reader with room for two gets the innermost two.
  EXPECT_EQ(scopes_of(m, 2), (std::vector<const char*>{kC, kB}));
  EXPECT_TRUE(scopes_of(m, 0).empty());
  m.pop_scope();
  EXPECT_EQ(scopes_of(m), (std::vector<const char*>{kB, kA}));
  m.push_scope(kC);
  EXPECT_EQ(scopes_of(m), (std::vector<const char*>{kC, kB, kA}));
  m.pop_scope();
  m.pop_scope();
  m.pop_scope();
  EXPECT_TRUE(scopes_of(m).empty());
  const LoopStats s = m.stats();
  EXPECT_EQ(s.scope_overflows, 0u);
  EXPECT_EQ(s.scope_underflows, 0u);
}

TEST(MonitorScopes, OverflowIsCountedNotStoredAndStillBalanced) {
  constexpr std::size_t kExtra = 3;
  constexpr std::size_t kPushes = lc::kScopeDepth + kExtra;
  std::array<std::string, kPushes> names;  // distinct storage per scope: pointers identify them
  for (std::size_t i = 0; i < kPushes; ++i) names[i] = "scope" + std::to_string(i);
  // The stored stack, innermost first, when the first `depth` names are pushed.
  const auto stored = [&](std::size_t depth) {
    std::vector<const char*> out;
    for (std::size_t i = depth; i > 0; --i) out.push_back(names[i - 1].c_str());
    return out;
  };

  Monitor m;
  for (const std::string& n : names) m.push_scope(n.c_str());
  EXPECT_EQ(m.stats().scope_overflows, kExtra);
  EXPECT_EQ(scopes_of(m), stored(lc::kScopeDepth));  // the deeper names were not stored

  for (std::size_t i = 0; i < kExtra; ++i) m.pop_scope();  // pops of the unstored scopes
  EXPECT_EQ(scopes_of(m), stored(lc::kScopeDepth));
  m.pop_scope();  // now the innermost stored one goes
  EXPECT_EQ(scopes_of(m), stored(lc::kScopeDepth - 1));
  for (std::size_t i = 1; i < lc::kScopeDepth; ++i) m.pop_scope();
  EXPECT_TRUE(scopes_of(m).empty());
  EXPECT_EQ(m.stats().scope_underflows, 0u);  // every pop matched a push
}

TEST(MonitorScopes, UnderflowIsCountedAndIgnored) {
  static constexpr char kA[] = "a";
  Monitor m;
  m.pop_scope();
  m.pop_scope();
  EXPECT_EQ(m.stats().scope_underflows, 2u);
  EXPECT_TRUE(scopes_of(m).empty());
  // The stack still works from depth 0.
  m.push_scope(kA);
  EXPECT_EQ(scopes_of(m), (std::vector<const char*>{kA}));
  m.pop_scope();
  m.pop_scope();
  EXPECT_EQ(m.stats().scope_underflows, 3u);
}

// ---- ClockedMonitor and the macros in virtual time -------------------------------------------

class ClockedMonitorTiming : public ::testing::TestWithParam<tick_t> {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(init_monitor(monitor_, config_at(sim::kTickHz))); }

  sim::VirtualTime time_{GetParam()};
  sim::PortMonitor monitor_{sim::Clock{time_}};
};

INSTANTIATE_TEST_SUITE_P(Start, ClockedMonitorTiming,
                         ::testing::Values(tick_t{0}, static_cast<tick_t>(0u - sim::ms(30))),
                         start_name);

TEST_P(ClockedMonitorTiming, BeginAndEndStampTheClock) {
  const tick_t begin = time_.peek();
  monitor_.begin(kPlain);
  EXPECT_EQ(snapshot_of(monitor_).begin, begin);
  time_.advance(sim::ms(42));
  monitor_.end();
  EXPECT_EQ(monitor_.stats().max_duration, sim::ms(42));
}

TEST_P(ClockedMonitorTiming, MacrosStampADispatchAndNameScopes) {
  static constexpr char kOuter[] = "outer";
  static constexpr char kInner[] = "inner";
  const tick_t begin = time_.peek();
  {
    LOOPCANARY_DISPATCH(monitor_, kPlain);
    const lc::StampSnapshot snap = snapshot_of(monitor_);
    EXPECT_TRUE(snap.in_dispatch());
    EXPECT_EQ(snap.begin, begin);
    EXPECT_EQ(snap.event, &kPlain);
    LOOPCANARY_SCOPE(monitor_, kOuter);
    time_.advance(sim::ms(20));
    {
      LOOPCANARY_SCOPE(monitor_, kInner);
      EXPECT_EQ(scopes_of(monitor_), (std::vector<const char*>{kInner, kOuter}));
      time_.advance(sim::ms(130));
    }
    EXPECT_EQ(scopes_of(monitor_), (std::vector<const char*>{kOuter}));
  }
  EXPECT_TRUE(scopes_of(monitor_).empty());
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.max_duration, sim::ms(150));
  EXPECT_EQ(s.blocks, 1u);  // 150 ms > 100 ms
  EXPECT_FALSE(snapshot_of(monitor_).in_dispatch());
}

// A loop that drains its queue: one clock read per dispatch, the last one ended with the drain.
TEST_P(ClockedMonitorTiming, DrainStampsEachDispatchFromTheEndOfThePreviousOne) {
  const tick_t durations[] = {sim::ms(20), sim::ms(130), 0, sim::ms(5)};
  const tick_t start = time_.peek();
  {
    LOOPCANARY_DRAIN(monitor_, drain);
    EXPECT_FALSE(snapshot_of(monitor_).in_dispatch()) << "a drain begins nothing before its first next()";
    tick_t begin = start;
    for (tick_t d : durations) {
      drain.next(kPlain);
      const lc::StampSnapshot snap = snapshot_of(monitor_);
      EXPECT_TRUE(snap.in_dispatch());
      EXPECT_EQ(snap.begin, begin);
      time_.advance(d);
      begin = static_cast<tick_t>(begin + d);
    }
  }
  EXPECT_FALSE(snapshot_of(monitor_).in_dispatch()) << "the drain ended the last dispatch";
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 4u);
  EXPECT_EQ(s.busy_ticks, sim::ms(155));
  EXPECT_EQ(s.max_duration, sim::ms(130));
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.unbalanced_ends, 0u);
  EXPECT_EQ(s.nested, 0u);
  EXPECT_EQ(histogram_total(s), 4u);
}

TEST_P(ClockedMonitorTiming, DrainEndBeforeTheLoopWaitsAndAnEmptyDrainStampsNothing) {
  {
    LOOPCANARY_DRAIN(monitor_, drain);
    drain.end();  // nothing running: nothing to end, nothing counted
    EXPECT_EQ(monitor_.stats().unbalanced_ends, 0u);
    drain.next(kPlain);
    time_.advance(sim::ms(3));
    drain.end();                  // the queue is empty: the loop will wait
    time_.advance(sim::ms(500));  // idle, not part of any dispatch
    drain.next(kOther);           // the first after the wait begins afresh
    EXPECT_EQ(snapshot_of(monitor_).event, &kOther);
    time_.advance(sim::ms(4));
  }
  { LOOPCANARY_DRAIN(monitor_, empty); }
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 2u);
  EXPECT_EQ(s.busy_ticks, sim::ms(7));
  EXPECT_EQ(s.max_duration, sim::ms(4));
  EXPECT_EQ(s.unbalanced_ends, 0u);
  EXPECT_FALSE(snapshot_of(monitor_).in_dispatch());
}

TEST_P(ClockedMonitorTiming, DrainInsideADispatchNestsLikeBeginAndEnd) {
  {
    LOOPCANARY_DISPATCH(monitor_, kPlain);  // a handler that pumps the loop
    time_.advance(sim::ms(1));
    {
      LOOPCANARY_DRAIN(monitor_, drain);
      drain.next(kOther);
      time_.advance(sim::ms(1));
      drain.next(kOther);
      time_.advance(sim::ms(1));
    }
    const lc::StampSnapshot snap = snapshot_of(monitor_);
    EXPECT_TRUE(snap.in_dispatch());
    EXPECT_EQ(snap.event, &kPlain);
    EXPECT_EQ(monitor_.stats().dispatches, 0u);
  }
  const LoopStats s = monitor_.stats();
  EXPECT_EQ(s.dispatches, 1u);
  EXPECT_EQ(s.nested, 2u);
  EXPECT_EQ(s.max_duration, sim::ms(3));
  EXPECT_EQ(s.unbalanced_ends, 0u);
}

TEST_P(ClockedMonitorTiming, DrainWithPostStampsRecordsTheQueueLatency) {
  lc::EventHealth health;
  const lc::Event timed{"timed", 0, &health};
  const tick_t posted = time_.peek();
  time_.advance(sim::ms(2));
  {
    LOOPCANARY_DRAIN(monitor_, drain);
    drain.next(timed, posted);  // waited 2 ms
    time_.advance(sim::ms(3));
    drain.next(timed, posted);  // waited 5 ms, behind the first
    time_.advance(sim::ms(1));
  }
  const lc::EventStats e = health.stats();
  EXPECT_EQ(e.dispatches, 2u);
  EXPECT_EQ(e.max_latency, sim::ms(5));
  EXPECT_EQ(monitor_.stats().dispatches, 2u);
}

TEST(ClockedMonitor, DispatchAcrossTheCounterWrapHasItsExactDuration) {
  // Begins 1 s before the 32-bit counter wraps, ends 0.5 s after it.
  sim::VirtualTime time{static_cast<tick_t>(0u - sim::ms(1'000))};
  sim::PortMonitor monitor{sim::Clock{time}};
  ASSERT_NO_FATAL_FAILURE(init_monitor(monitor, config_at(sim::kTickHz, 1'000'000)));  // 1 s
  const tick_t begin = time.peek();
  {
    LOOPCANARY_DISPATCH(monitor, kPlain);
    time.advance(sim::ms(1'500));
  }
  ASSERT_LT(time.peek(), begin);  // the counter did wrap
  LoopStats s = monitor.stats();
  EXPECT_EQ(s.max_duration, sim::ms(1'500));
  EXPECT_EQ(s.busy_ticks, sim::ms(1'500));
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.histogram[20], 1u);  // 1.5e6 us is in [2^20, 2^21)

  // Exactly the 1 s threshold, again across the wrap: not a block.
  sim::VirtualTime time2{static_cast<tick_t>(0u - sim::ms(400))};
  sim::PortMonitor monitor2{sim::Clock{time2}};
  ASSERT_NO_FATAL_FAILURE(init_monitor(monitor2, config_at(sim::kTickHz, 1'000'000)));
  {
    LOOPCANARY_DISPATCH(monitor2, kPlain);
    time2.advance(sim::ms(1'000));
  }
  s = monitor2.stats();
  EXPECT_EQ(s.max_duration, sim::ms(1'000));
  EXPECT_EQ(s.blocks, 0u);
}

}  // namespace
