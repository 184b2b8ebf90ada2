// SPDX-License-Identifier: MIT
// Watchdog scenarios in virtual time (port "sim": 1 tick = 1 us, the scheduler polls the
// watchdog every `period`): the block decision, reports raised while the dispatch still runs,
// hangs, per-dispatch samples and the top-frame histogram, the record ring, the interceptor
// chain, cause classes, the debugger guard, PC capture and nested dispatches.
//
// Every timing test is a TEST_P over the start tick: it runs from tick 0 and from one second
// before the 32-bit tick counter wraps. The scenarios place their long blocks around the one
// second mark (kWrapOffset), so in the second run those blocks straddle the wrap.
//
// Unless a test says otherwise the watchdog polls every 10 ms and the loop uses the library's
// arm point (25 % of the threshold). A dispatch that begins exactly at a poll ("aligned") is
// next seen by the watchdog at elapsed 10, 20, 30 ... ms; a poll that falls on the tick a
// handler's compute() ends runs before the handler returns, i.e. while the dispatch still runs.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"
#include "sim_rig.hpp"

namespace {

namespace lc = loopcanary;
namespace sim = loopcanary::sim;
using lc::BlockRecord;
using lc::Cause;
using lc::Phase;
using lc::Status;
using lc::tick_t;
using sim::ms;
using sim::us;

constexpr tick_t kPeriod = ms(10);         // watchdog poll period, unless a test says otherwise
constexpr tick_t kWrapOffset = ms(1000);   // the before_wrap run's counter wraps here
constexpr tick_t kBeforeWrap = static_cast<tick_t>(tick_t{0} - kWrapOffset);  // its start tick
constexpr std::size_t kRecords = 16;       // record ring of the default rig

constexpr lc::Event kWork{"work"};

// ---- Small helpers -------------------------------------------------------------------------

using lc::test::collect;
using lc::test::later;

/// The odd stamp sequence of dispatch number `dispatch` (what Sample::seq holds).
constexpr std::uint32_t seq_of(std::uint32_t dispatch) { return 2u * dispatch - 1u; }

/// True when `t` lies in [from, to], wrap-safe.
bool within(tick_t from, tick_t t, tick_t to) {
  return lc::ticks_between(from, t) <= lc::ticks_between(from, to);
}

/// Loop configuration in sim ticks (= microseconds); arm point at the default 25 %.
lc::MonitorConfig loop_config(tick_t threshold, tick_t sample_interval, tick_t hang_limit) {
  lc::MonitorConfig config;
  config.name = "main";
  config.threshold_us = threshold;
  config.sample_interval_us = sample_interval;
  config.hang_limit_us = hang_limit;
  return config;
}

const char* scope_name(lc::Frame frame) { return reinterpret_cast<const char*>(frame); }

bool has_flag(const BlockRecord& record, lc::RecordFlag flag) { return (record.flags & flag) != 0; }

/// How many of the record's samples had the named scope `name` innermost, from its stack table.
std::uint32_t top_scope_count(const BlockRecord& record, const char* name) {
  std::uint32_t count = 0;
  for (std::size_t i = 0; i < record.top_count; ++i) {
    const lc::TopStack& top = record.top[i];
    if (top.scope_count > 0 && std::strcmp(scope_name(top.frames[0]), name) == 0) count += top.count;
  }
  return count;
}

/// Every kept sample belongs to the record's dispatch: its sequence, and a time inside
/// [start, end] (end is the report time for a record of a dispatch still running).
void expect_own_samples(const BlockRecord& record) {
  EXPECT_GT(std::size_t{record.sample_count}, 0u);
  for (std::size_t i = 0; i < record.sample_count; ++i) {
    SCOPED_TRACE("sample " + std::to_string(i));
    EXPECT_EQ(record.samples[i].seq, seq_of(record.dispatch));
    EXPECT_TRUE(within(record.start, record.samples[i].at, record.end))
        << "sample at " << record.samples[i].at << " outside [" << record.start << ", " << record.end << "]";
  }
}


/// Interceptor calls as (interceptor id, report number, phase), in call order.
using CallLog = std::vector<std::tuple<int, std::uint32_t, std::string>>;

/// Context of `tap`: which interceptor it is and the log all taps share.
struct Tap {
  int id;
  CallLog* log;
};

void tap(void* context, const BlockRecord& record) {
  const Tap& self = *static_cast<const Tap*>(context);
  self.log->emplace_back(self.id, record.report, lc::to_string(record.phase));
}

// ---- The rig: one loop, one watchdog, virtual time -----------------------------------------

/// One loop and a watchdog whose ring holds RecordCapacity records and a health ring of 2
/// (sim_rig.hpp).
template <std::size_t RecordCapacity>
using Rig = lc::test::SimRig<lc::StaticWatchdog<1, RecordCapacity, 1, 2>>;

// ---- Fixture: every timing test runs from tick 0 and from one second before the wrap --------

class WatchdogTest : public testing::TestWithParam<tick_t> {
 protected:
  /// One dispatch of kWork beginning at the poll 100 ms before the wrap point, whose handler
  /// runs `body` inside the named scope `scope` (none when null); then one period so the
  /// watchdog finalises it. Returns its final record, if any. Meant for start_100ms().
  template <class Body>
  std::optional<BlockRecord> one_block(Body&& body, const char* scope = "handler") {
    rig.idle_until(kWrapOffset - ms(100));
    const std::uint32_t number = rig.monitor.stats().dispatches + 1u;
    rig.dispatch(kWork, [&] {
      if (scope != nullptr) rig.monitor.push_scope(scope);
      body();
      if (scope != nullptr) rig.monitor.pop_scope();
    });
    rig.idle(kPeriod);
    return rig.find(number, Phase::final);
  }

  /// The common loop: threshold 100 ms (arm at 25 ms), a sample every 10 ms, hang after 1 s.
  testing::AssertionResult start_100ms(const lc::WatchdogConfig& dog = {}) {
    return rig.start(loop_config(ms(100), ms(10), ms(1000)), kPeriod, dog);
  }

  /// Sample attempts in an aligned 150 ms dispatch under start_100ms(): armed at the first poll
  /// at or past 25 ms (elapsed 30 ms), then one per poll through elapsed 150 ms.
  static constexpr std::uint32_t kSamplesIn150ms = (150u - 30u) / 10u + 1u;

  /// CPU window of the final record of that dispatch: from the arming poll (30 ms) to the last
  /// poll that saw it running (150 ms, the tick it ends on).
  static constexpr tick_t kWindowIn150ms = ms(150 - 30);

  /// The case a sampler that starts at the threshold gets wrong, after rig.start() with an
  /// 800 ms threshold: a handler spends 780 ms in scope "a", then 30 ms in scope "b". 780 + 20 ms
  /// would be exactly the threshold, which is not a block (strictly greater), so "b" runs 30 ms:
  /// 810 ms in all. The dispatch begins at a poll 300 ms after the start, so it straddles the wrap.
  std::optional<BlockRecord> early_scope_case() {
    rig.idle_until(ms(300));
    rig.dispatch(kWork, [&] {
      {
        LOOPCANARY_SCOPE(rig.monitor, "a");
        rig.compute(ms(780));
      }
      LOOPCANARY_SCOPE(rig.monitor, "b");
      rig.compute(ms(30));
    });
    rig.idle(kPeriod);
    return rig.find(1, Phase::final);
  }

  Rig<kRecords> rig{GetParam()};
};

std::string start_name(const testing::TestParamInfo<tick_t>& info) {
  return info.param == kBeforeWrap ? "before_wrap" : "from_zero";
}

INSTANTIATE_TEST_SUITE_P(Watchdog, WatchdogTest,
                         testing::Values(tick_t{0}, kBeforeWrap),
                         start_name);

// ---- 1. The block decision: strictly greater than the threshold ----------------------------

TEST_P(WatchdogTest, OnlyADispatchStrictlyOverTheThresholdIsABlock) {
  constexpr tick_t kThreshold = ms(300);
  constexpr lc::Event kUnder{"under"};
  constexpr lc::Event kAt{"at"};
  constexpr lc::Event kOver{"over"};
  ASSERT_TRUE(rig.start(loop_config(kThreshold, ms(10), ms(2000)), kPeriod));

  // Each dispatch begins on the poll grid, so the poll at elapsed 300 ms sees exactly the
  // threshold (not over it) and no block in progress is raised for any of them. The third one
  // runs from 690 ms to 990.001 ms and is finalised by the poll at 1000 ms: in the before_wrap
  // run its end stamp is just below the wrap and that poll's time is 0.
  rig.run(kUnder, kThreshold - 1u);
  rig.align();
  rig.run(kAt, kThreshold);
  rig.idle_until(ms(690));
  const tick_t begin = rig.run(kOver, kThreshold + 1u);
  rig.idle(kPeriod);

  ASSERT_EQ(rig.reports.size(), 1u) << "only the dispatch over the threshold is reported";
  const BlockRecord& r = rig.reports[0];
  EXPECT_EQ(r.phase, Phase::final);
  EXPECT_EQ(r.event, &kOver);
  EXPECT_EQ(r.dispatch, 3u);
  EXPECT_EQ(r.start, begin);
  EXPECT_EQ(r.end, later(begin, kThreshold + 1u));
  EXPECT_EQ(r.duration_ticks, std::uint64_t{kThreshold} + 1u);
  EXPECT_EQ(r.threshold_ticks, kThreshold);
  EXPECT_EQ(r.flags, 0) << "watched and armed: neither unwatched nor hung";

  const lc::LoopStats stats = rig.monitor.stats();
  EXPECT_EQ(stats.dispatches, 3u);
  EXPECT_EQ(stats.blocks, 1u);
  EXPECT_EQ(stats.max_duration, kThreshold + 1u);
}

// ---- 2. Block in progress: raised within one period of the threshold, while still running ---

TEST_P(WatchdogTest, BlockInProgressIsRaisedWithinOnePeriodWhileTheDispatchRuns) {
  constexpr tick_t kThreshold = ms(300);
  ASSERT_TRUE(rig.start(loop_config(kThreshold, ms(10), ms(2000)), kPeriod));

  // Each dispatch begins `offset` after a poll, so the first poll past the threshold comes at
  // elapsed threshold + period - offset: offset 0 is the inclusive edge (the poll at exactly
  // the threshold does not count), the others land inside the period. Each runs 310 ms; the
  // last begins 1 us before the wrap point (begin stamp 0xFFFFFFFF in the before_wrap run).
  const struct {
    tick_t poll;    // from the start tick
    tick_t offset;  // after that poll
  } starts[] = {{ms(10), 0u}, {ms(330), us(1)}, {ms(650), ms(3)}, {ms(990), kPeriod - us(1)}};
  std::uint32_t number = 0;
  for (const auto& start : starts) {
    const tick_t offset = start.offset;
    SCOPED_TRACE("begin " + std::to_string(offset) + " ticks after a poll");
    ++number;
    rig.idle_until(start.poll + offset);
    const tick_t begin = rig.now();
    rig.dispatch(kWork, [&] {
      rig.compute(kThreshold + kPeriod);
      // Still inside the handler: the dispatch has not returned.
      lc::StampSnapshot snap;
      ASSERT_TRUE(rig.monitor.snapshot(snap));
      ASSERT_TRUE(snap.in_dispatch());
      EXPECT_FALSE(rig.find(number, Phase::final).has_value());

      const std::optional<BlockRecord> r = rig.find(number, Phase::in_progress);
      ASSERT_TRUE(r.has_value()) << "no block in progress one period past the threshold";
      EXPECT_EQ(r->event, &kWork);
      EXPECT_EQ(r->start, begin);
      const tick_t raised_after = lc::ticks_between(r->start, r->end);
      EXPECT_GT(raised_after, kThreshold);
      EXPECT_LE(raised_after, kThreshold + kPeriod);
      EXPECT_EQ(raised_after, kThreshold + kPeriod - offset) << "not the first poll past the threshold";
      EXPECT_EQ(r->duration_ticks, std::uint64_t{raised_after});
      EXPECT_FALSE(has_flag(*r, lc::kFlagUnwatched));
    });
  }
  EXPECT_EQ(rig.monitor.stats().blocks, number);
}

// ---- 3. Hang: raised within one period of the hang limit, with its samples ------------------

TEST_P(WatchdogTest, HangIsRaisedWithinOnePeriodOfTheLimitWithItsOwnSamples) {
  constexpr tick_t kThreshold = ms(100);
  constexpr tick_t kHang = ms(900);
  constexpr tick_t kOffset = ms(4);  // the dispatch begins 4 ms after a poll
  ASSERT_TRUE(rig.start(loop_config(kThreshold, ms(10), kHang), kPeriod));

  // Begins at 104 ms: the hang limit falls at 1004 ms, just past the wrap in the before_wrap run.
  rig.idle_until(ms(100) + kOffset);
  const tick_t begin = rig.now();
  rig.dispatch(kWork, [&] {
    LOOPCANARY_SCOPE(rig.monitor, "stuck");
    rig.compute(kHang + kPeriod);
    // The handler has not returned, yet the hang is reported, at the first poll past the limit.
    const std::optional<BlockRecord> hang = rig.find(1, Phase::hang);
    ASSERT_TRUE(hang.has_value()) << "no hang report one period past the hang limit";
    EXPECT_EQ(hang->start, begin);
    const tick_t raised_after = lc::ticks_between(hang->start, hang->end);
    EXPECT_GT(raised_after, kHang);
    EXPECT_LE(raised_after, kHang + kPeriod);
    EXPECT_EQ(raised_after, kHang + kPeriod - kOffset);
    EXPECT_TRUE(has_flag(*hang, lc::kFlagHung));
    EXPECT_EQ(hang->samples_taken, std::uint32_t{hang->sample_count} + hang->samples_overwritten);
    expect_own_samples(*hang);
    EXPECT_EQ(rig.monitor.stats().hangs, 1u);
    EXPECT_FALSE(rig.find(1, Phase::final).has_value());

    rig.compute(ms(40));  // ... and finally returns, 950 ms after it began
  });
  rig.idle(kPeriod);

  ASSERT_EQ(rig.reports.size(), 3u);
  EXPECT_EQ(rig.reports[0].phase, Phase::in_progress);
  EXPECT_EQ(rig.reports[1].phase, Phase::hang);
  const BlockRecord& final_record = rig.reports[2];
  EXPECT_EQ(final_record.phase, Phase::final);
  EXPECT_TRUE(has_flag(final_record, lc::kFlagHung));
  EXPECT_EQ(final_record.start, begin);
  EXPECT_EQ(final_record.duration_ticks, std::uint64_t{kHang} + kPeriod + ms(40));
  expect_own_samples(final_record);
  const lc::LoopStats stats = rig.monitor.stats();
  EXPECT_EQ(stats.hangs, 1u) << "one hung dispatch, counted once";
  EXPECT_EQ(stats.blocks, 1u);
}

// ---- 4. The seed case: a culprit that ran early dominates the histogram ---------------------

TEST_P(WatchdogTest, SeedCaseEarlyCulpritDominatesTheTopFrames) {
  // Arm at 25 % (200 ms), a sample every 10 ms, the watchdog every 10 ms.
  lc::MonitorConfig config = loop_config(ms(800), ms(10), ms(5000));
  config.arm_permille = 250;
  ASSERT_TRUE(rig.start(config, kPeriod));
  const std::optional<BlockRecord> r = early_scope_case();
  ASSERT_TRUE(r.has_value());

  // A poll lands on the arm point (elapsed 200 ms) and each poll through 810 ms samples:
  // 59 samples in "a" (200..780 ms), 3 in "b" (790, 800, 810 ms). The histogram counts them
  // all, not only the kept ones.
  EXPECT_EQ(r->duration_ticks, std::uint64_t{ms(810)});
  EXPECT_EQ(r->samples_taken, 62u);
  const std::uint32_t in_a = top_scope_count(*r, "a");
  EXPECT_EQ(in_a, 59u);
  EXPECT_EQ(top_scope_count(*r, "b"), 3u);
  EXPECT_GE(in_a * 10u, r->samples_taken * 9u) << in_a << " of " << r->samples_taken << " samples on \"a\"";
  ASSERT_GT(std::size_t{r->top_count}, 0u);
  EXPECT_STREQ(scope_name(r->top[0].frames[0]), "a") << "the most frequent stack";
}

// The library's defaults (arm at 25 %, 10 ms sample interval), only the threshold set: samples
// from 200 ms on, so "a" dominates. (BlockCanary's sampling from 0.8 x threshold every
// threshold would show only "b".)
TEST_P(WatchdogTest, SeedCaseEarlyCulpritDominatesWithDefaultSampling) {
  lc::MonitorConfig config;
  config.name = "main";
  config.threshold_us = ms(800);
  ASSERT_TRUE(rig.start(config, kPeriod));
  const std::optional<BlockRecord> r = early_scope_case();
  ASSERT_TRUE(r.has_value());

  const std::uint32_t in_a = top_scope_count(*r, "a");
  ASSERT_GT(r->samples_taken, 0u);
  EXPECT_GE(in_a * 10u, r->samples_taken * 9u) << in_a << " of " << r->samples_taken << " samples on \"a\"";
}

// ---- 5. Record ring overflow: counted exactly, later records intact ------------------------

TEST_P(WatchdogTest, RecordRingOverflowIsCountedAndLaterRecordsAreIntact) {
  constexpr tick_t kThreshold = ms(50);
  Rig<2> small{GetParam()};
  ASSERT_TRUE(small.start(loop_config(kThreshold, ms(10), ms(1000)), kPeriod));

  // Dispatch i (from 1) begins at a poll and lasts threshold + i ms: the poll at elapsed 50 ms
  // sees no block yet, so each dispatch makes exactly one report, its final record.
  const auto block = [&](std::uint32_t i) {
    small.align();
    small.dispatch(kWork, [&] {
      LOOPCANARY_SCOPE(small.monitor, "work");
      small.compute(kThreshold + ms(i));
    });
  };
  small.idle_until(kWrapOffset - ms(300));  // block 5 straddles the wrap, block 6 follows it
  for (std::uint32_t i = 1; i <= 5; ++i) block(i);
  small.idle(kPeriod);

  // Ring of 2, nobody popping: reports 3, 4 and 5 are refused and counted.
  lc::WatchdogStats stats = small.watchdog.stats();
  EXPECT_EQ(stats.reports, 5u);
  EXPECT_EQ(stats.records_dropped, 3u);
  EXPECT_EQ(small.watchdog.pending(), 2u);

  BlockRecord r;
  for (std::uint32_t i = 1; i <= 2; ++i) {
    ASSERT_TRUE(small.watchdog.pop(r));
    EXPECT_EQ(r.report, i);
    EXPECT_EQ(r.dispatch, i);
    EXPECT_EQ(r.duration_ticks, std::uint64_t{kThreshold} + ms(i));
    EXPECT_EQ(r.records_dropped, 0u);
  }
  EXPECT_FALSE(small.watchdog.pop(r));

  // After popping, the next block goes through whole; its numbers show the gap.
  block(6);
  small.idle(kPeriod);
  stats = small.watchdog.stats();
  EXPECT_EQ(stats.reports, 6u);
  EXPECT_EQ(stats.records_dropped, 3u);
  ASSERT_TRUE(small.watchdog.pop(r));
  EXPECT_EQ(r.report, 6u) << "reports 3..5 were dropped";
  EXPECT_EQ(r.records_dropped, 3u) << "drops before this record";
  EXPECT_EQ(r.phase, Phase::final);
  EXPECT_EQ(r.event, &kWork);
  EXPECT_EQ(r.dispatch, 6u);
  EXPECT_EQ(r.duration_ticks, std::uint64_t{kThreshold} + ms(6));
  EXPECT_EQ(lc::ticks_between(r.start, r.end), kThreshold + ms(6));
  EXPECT_EQ(top_scope_count(r, "work"), r.samples_taken);
  expect_own_samples(r);
  EXPECT_FALSE(small.watchdog.pop(r));

  // The interceptor saw every report, dropped or not.
  ASSERT_EQ(small.reports.size(), 6u);
  for (std::uint32_t i = 0; i < 6u; ++i) EXPECT_EQ(small.reports[i].report, i + 1u);
}

// ---- 9. Interceptors: each called once per report, in the order added ----------------------

TEST_P(WatchdogTest, InterceptorsAreCalledOncePerReportInOrder) {
  ASSERT_TRUE(rig.start(loop_config(ms(100), ms(10), ms(200)), kPeriod, {}, /*collect_reports=*/false));
  CallLog log;
  Tap taps[] = {{1, &log}, {2, &log}, {3, &log}};
  for (Tap& t : taps) ASSERT_EQ(rig.watchdog.add_interceptor(&tap, &t), Status::ok);

  // A hang (250 ms, hang limit 200 ms): in progress, hang, final. Then a plain block (150 ms):
  // in progress, final. Both begin at a poll; the first one straddles the wrap.
  rig.idle_until(kWrapOffset - ms(100));
  rig.run(kWork, ms(250));
  rig.align();
  rig.run(kWork, ms(150));
  rig.idle(kPeriod);

  const char* const phases[] = {"in_progress", "hang", "final", "in_progress", "final"};
  CallLog expected;
  std::uint32_t report = 0;
  for (const char* phase : phases) {
    ++report;
    for (const Tap& t : taps) expected.emplace_back(t.id, report, phase);
  }
  EXPECT_EQ(log, expected);
  EXPECT_EQ(rig.watchdog.stats().reports, 5u);
}

TEST_P(WatchdogTest, NullAndSurplusInterceptorsAreRefused) {
  ASSERT_TRUE(rig.start(loop_config(ms(100), ms(10), ms(1000)), kPeriod, {}, /*collect_reports=*/false));
  std::vector<BlockRecord> accepted;
  std::vector<BlockRecord> refused;
  EXPECT_EQ(rig.watchdog.add_interceptor(nullptr, &accepted), Status::interceptor_null);
  for (std::size_t i = 0; i < lc::kMaxInterceptors; ++i) {
    ASSERT_EQ(rig.watchdog.add_interceptor(&collect, &accepted), Status::ok) << "interceptor " << i;
  }
  EXPECT_EQ(rig.watchdog.add_interceptor(&collect, &refused), Status::interceptor_chain_full);

  // One report (a block just over the threshold, beginning at a poll: final record only):
  // every interceptor in the chain sees it, the refused ones do not.
  rig.idle_until(kWrapOffset - ms(100));
  rig.run(kWork, ms(100) + 1u);
  rig.idle(kPeriod);
  EXPECT_EQ(rig.watchdog.stats().reports, 1u);
  EXPECT_EQ(accepted.size(), lc::kMaxInterceptors);
  EXPECT_TRUE(refused.empty());
}

// ---- Blocks the watchdog did not watch are reported, never dropped -------------------------

TEST_P(WatchdogTest, BlockShorterThanThePollPeriodIsReportedAsUnwatched) {
  // Threshold 5 ms (armed at 1.25 ms), a sample every 1 ms, the watchdog every 7 ms: polls at
  // 994, 1001, 1008 and 1015 ms after the start.
  constexpr tick_t kPoll = ms(7);
  ASSERT_TRUE(rig.start(loop_config(ms(5), ms(1), ms(1000)), kPoll));

  // Dispatch 1 runs 995 .. 1000.5 ms, between two polls (and across the wrap in the
  // before_wrap run): the watchdog learns of it only from the loop's note.
  rig.idle_until(ms(995));
  const tick_t first = rig.dispatch(kWork, [&] {
    LOOPCANARY_SCOPE(rig.monitor, "quick");
    rig.compute(us(5500));
  });
  // Dispatch 2 runs 1007 .. 1013 ms: the poll at 1008 ms sees it 1 ms in, before its arm point.
  rig.idle_until(ms(1007));
  const tick_t second = rig.dispatch(kWork, [&] {
    LOOPCANARY_SCOPE(rig.monitor, "quick");
    rig.compute(ms(6));
  });
  rig.idle(kPoll);

  const struct {
    std::uint32_t number;
    tick_t begin;
    tick_t duration;
  } expected[] = {{1, first, us(5500)}, {2, second, ms(6)}};
  ASSERT_EQ(rig.reports.size(), 2u);
  for (const auto& e : expected) {
    SCOPED_TRACE("dispatch " + std::to_string(e.number));
    const std::optional<BlockRecord> r = rig.find(e.number, Phase::final);
    ASSERT_TRUE(r.has_value()) << "a block the watchdog did not sample was dropped";
    EXPECT_EQ(r->flags, lc::kFlagUnwatched);
    EXPECT_EQ(r->start, e.begin);
    EXPECT_EQ(r->end, later(e.begin, e.duration));
    EXPECT_EQ(r->duration_ticks, std::uint64_t{e.duration});
    EXPECT_EQ(r->sample_count, 0);
    EXPECT_EQ(r->samples_taken, 0u);
    EXPECT_EQ(r->top_count, 0);
    EXPECT_EQ(r->window_ticks, 0u);
    EXPECT_EQ(r->cause, Cause::unknown);
  }
  EXPECT_EQ(rig.monitor.stats().blocks, 2u);
}

// ---- A record claims no block the loop did not count ----------------------------------------

// The loop read its end clock exactly at the threshold (not a block), then lost its CPU before it
// published the end: the watchdog, polling meanwhile, saw the dispatch still running past the
// threshold and reported it in progress. Only the loop's note confirms a block; without one the
// watchdog closes the dispatch with a final record flagged end_estimated, counted apart.
TEST_P(WatchdogTest, ADispatchSeenPastItsThresholdThatTheLoopEndsWithinItIsAnEstimateNotABlock) {
  ASSERT_TRUE(start_100ms());
  rig.idle_until(kWrapOffset - ms(100));  // a poll: the dispatch begins aligned, ends at the wrap
  const tick_t begin = rig.now();
  rig.monitor.begin(kWork);
  rig.compute(ms(100));          // polls at elapsed 10 .. 100 ms: not over the threshold
  const tick_t end = rig.now();  // the loop's end stamp: 100 ms, exactly the threshold
  rig.starve(ms(20));            // descheduled before end_at(): polls at 110 and 120 ms see it run
  rig.monitor.end_at(end);
  rig.idle(kPeriod);             // the poll at 130 ms finds it ended, without a note

  const lc::LoopStats loop = rig.monitor.stats();
  EXPECT_EQ(loop.dispatches, 1u);
  EXPECT_EQ(loop.blocks, 0u);
  EXPECT_EQ(loop.notes_dropped, 0u);

  ASSERT_EQ(rig.reports.size(), 2u);
  const BlockRecord& running = rig.reports[0];
  EXPECT_EQ(running.phase, Phase::in_progress);  // the watchdog's view at its poll
  EXPECT_EQ(running.duration_ticks, ms(110));
  const BlockRecord& closed = rig.reports[1];
  EXPECT_EQ(closed.phase, Phase::final);
  EXPECT_EQ(closed.dispatch, 1u);
  EXPECT_TRUE(has_flag(closed, lc::kFlagEndEstimated)) << "a final record without the loop's note is an estimate";
  EXPECT_EQ(closed.start, begin);
  EXPECT_EQ(closed.end, later(begin, ms(130))) << "the estimated end is the poll that found the dispatch ended";
  EXPECT_EQ(closed.duration_ticks, ms(130));

  // Counted apart: no final record confirms a block, as the loop counted none.
  const lc::WatchdogStats dog = rig.watchdog.stats();
  EXPECT_EQ(dog.reports, 2u);
  EXPECT_EQ(dog.finals_estimated, 1u);
  EXPECT_EQ(dog.notes_dropped, 0u);
  std::uint32_t confirmed = 0;
  for (const BlockRecord& r : rig.reports) {
    if (r.phase == Phase::final && !has_flag(r, lc::kFlagEndEstimated)) ++confirmed;
  }
  EXPECT_EQ(confirmed, loop.blocks);

  // A block the loop stamps over the threshold in the same way is confirmed by its note.
  rig.align();
  rig.monitor.begin(kWork);
  rig.compute(ms(100) + 1u);
  const tick_t over = rig.now();
  rig.starve(ms(20));
  rig.monitor.end_at(over);
  rig.idle(kPeriod);
  ASSERT_EQ(rig.reports.size(), 4u);
  EXPECT_EQ(rig.reports[3].phase, Phase::final);
  EXPECT_EQ(rig.reports[3].flags, 0u);
  EXPECT_EQ(rig.reports[3].duration_ticks, ms(100) + 1u);
  EXPECT_EQ(rig.monitor.stats().blocks, 1u);
  EXPECT_EQ(rig.watchdog.stats().finals_estimated, 1u);
}

// finish(), the last poll of a watchdog that stops: a block that ended after the last poll gets
// its final record from its note; a dispatch still running past its threshold gets a final
// record flagged running_at_stop (end = the stop, its duration so far), counted apart; one
// still within its threshold gets none. Nothing is reported twice.
TEST_P(WatchdogTest, FinishReportsWhatEndedAndClosesWhatStillRunsPastItsThreshold) {
  ASSERT_TRUE(start_100ms());
  rig.idle_until(kWrapOffset - ms(100));
  rig.monitor.begin(kWork);
  rig.compute(ms(150));
  rig.monitor.end_at(later(rig.now(), 1u));  // ends 1 tick after the poll at 150 ms
  rig.watchdog.finish(later(rig.now(), 2u));
  ASSERT_EQ(rig.reports.size(), 2u);
  EXPECT_EQ(rig.reports[1].phase, Phase::final);
  EXPECT_EQ(rig.reports[1].flags, 0u);
  EXPECT_EQ(rig.reports[1].duration_ticks, ms(150) + 1u);

  // Still running at the stop, past its threshold: a final record that says so.
  rig.align();
  const tick_t begin = rig.now();
  rig.monitor.begin(kWork);
  rig.compute(ms(120) + 5u);  // in progress at the poll at 110 ms
  const tick_t stop = rig.now();
  rig.watchdog.finish(stop);
  ASSERT_EQ(rig.reports.size(), 4u);
  EXPECT_EQ(rig.reports[2].phase, Phase::in_progress);
  const BlockRecord& closed = rig.reports[3];
  EXPECT_EQ(closed.phase, Phase::final);
  EXPECT_EQ(closed.dispatch, 2u);
  EXPECT_EQ(closed.flags, lc::kFlagRunningAtStop);
  EXPECT_EQ(closed.start, begin);
  EXPECT_EQ(closed.end, stop);
  EXPECT_EQ(closed.duration_ticks, ms(120) + 5u);
  EXPECT_EQ(rig.watchdog.stats().finals_at_stop, 1u);
  EXPECT_EQ(rig.watchdog.stats().finals_estimated, 0u);
  EXPECT_EQ(rig.monitor.stats().blocks, 1u) << "the loop counted only the block that ended";
  rig.watchdog.finish(stop);  // a second finish closes nothing again
  EXPECT_EQ(rig.reports.size(), 4u);
  // Polled again after all, the watchdog reports the loop's note when the dispatch ends: the
  // confirmed final record, the one a block count reads.
  rig.monitor.end_at(later(stop, 1u));
  rig.align();
  ASSERT_EQ(rig.reports.size(), 5u);
  EXPECT_EQ(rig.reports[4].phase, Phase::final);
  EXPECT_EQ(rig.reports[4].dispatch, 2u);
  EXPECT_EQ(rig.reports[4].flags, lc::kFlagUnwatched);
  EXPECT_EQ(rig.reports[4].duration_ticks, ms(120) + 6u);
  EXPECT_EQ(rig.monitor.stats().blocks, 2u);

  // Still running at the stop within its threshold: no record.
  rig.align();
  rig.monitor.begin(kWork);
  rig.compute(ms(50));
  rig.watchdog.finish(rig.now());
  EXPECT_EQ(rig.reports.size(), 5u);
  EXPECT_EQ(rig.watchdog.stats().finals_at_stop, 1u);
}

// ---- Samples are kept per dispatch ---------------------------------------------------------

TEST_P(WatchdogTest, EachRecordHoldsOnlyTheSamplesOfItsOwnDispatch) {
  ASSERT_TRUE(start_100ms());
  // Two 150 ms blocks back to back, from 100 ms before the wrap point: the second begins on
  // the tick the first ends, while the first one's samples are still with the watchdog.
  rig.idle_until(kWrapOffset - ms(100));
  const tick_t first = rig.dispatch(kWork, [&] {
    LOOPCANARY_SCOPE(rig.monitor, "first");
    rig.compute(ms(150));
  });
  const tick_t second = rig.dispatch(kWork, [&] {
    LOOPCANARY_SCOPE(rig.monitor, "second");
    rig.compute(ms(150));
  });
  rig.idle(kPeriod);

  const struct {
    std::uint32_t number;
    tick_t begin;
    const char* scope;
  } expected[] = {{1, first, "first"}, {2, second, "second"}};
  for (const auto& e : expected) {
    SCOPED_TRACE(e.scope);
    const std::optional<BlockRecord> r = rig.find(e.number, Phase::final);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->start, e.begin);
    expect_own_samples(*r);
    EXPECT_EQ(r->samples_taken, kSamplesIn150ms);
    ASSERT_EQ(r->top_count, 1);
    EXPECT_STREQ(scope_name(r->top[0].frames[0]), e.scope);
    EXPECT_EQ(r->top[0].count, kSamplesIn150ms);
  }
}

TEST_P(WatchdogTest, RecordKeepsTheLatestSamplesOldestFirst) {
  ASSERT_TRUE(start_100ms());
  // Aligned dispatches sampled at every poll from the arming poll (30 ms): n samples take
  // 30 + 10 (n - 1) ms. Below, at and past the capacity, and past it twice over, so the
  // watch's oldest sample sits at every kind of position when the record is made.
  constexpr std::uint32_t kKept = lc::kMaxSamples;
  const std::uint32_t counts[] = {kKept - 1u, kKept, kKept + 1u, 2u * kKept, 2u * kKept + 3u};
  std::uint32_t number = 0;
  for (const std::uint32_t taken : counts) {
    if (30u + 10u * (taken - 1u) <= 100u) continue;  // not a block: capacity configured small
    SCOPED_TRACE("samples taken " + std::to_string(taken));
    rig.align();
    const tick_t begin = rig.dispatch(kWork, [&] {
      LOOPCANARY_SCOPE(rig.monitor, "handler");  // what each sample holds
      rig.compute(ms(30 + 10 * (taken - 1u)));
    });
    rig.idle(kPeriod);
    const std::optional<BlockRecord> r = rig.find(++number, Phase::final);
    ASSERT_TRUE(r.has_value());
    expect_own_samples(*r);
    ASSERT_EQ(r->samples_taken, taken);
    const std::uint32_t kept = taken < kKept ? taken : kKept;
    ASSERT_EQ(r->sample_count, kept);
    EXPECT_EQ(r->samples_overwritten, taken - kept);
    // The first kept sample is the (overwritten + 1)-th taken; each next one a poll later.
    for (std::uint32_t i = 0; i < kept; ++i) {
      EXPECT_EQ(r->samples[i].at, later(begin, ms(30 + 10 * (r->samples_overwritten + i)))) << "sample " << i;
    }
    EXPECT_EQ(r->top[0].count, taken) << "the histogram counts every sample, overwritten or not";
  }
}

// ---- Per-event thresholds -----------------------------------------------------------------

TEST_P(WatchdogTest, PerEventThresholdsRaiseButNeverLowerTheLoopThreshold) {
  // event.hpp: an event's own threshold can only be longer; a shorter one is raised to the
  // loop's threshold (the floor), so end() needs one comparison.
  constexpr lc::Event kTight{"tight", 20'000};   // 20 ms: below the loop's 100 ms, raised to it
  constexpr lc::Event kLoose{"loose", 300'000};  // 300 ms: above it
  ASSERT_TRUE(start_100ms());

  // Each dispatch begins at a poll; the last one straddles the wrap.
  rig.idle_until(ms(400));
  rig.run(kTight, ms(30));   // 1: over its own 20 ms, under the floor: not a block
  rig.align();
  rig.run(kTight, ms(150));  // 2: over the floor: a block, against 100 ms
  rig.align();
  rig.run(kLoose, ms(200));  // 3: over the loop's threshold, under its own: not a block
  rig.align();
  rig.run(kLoose, ms(310));  // 4: over its own threshold: a block, against 300 ms
  rig.idle(kPeriod);

  const struct {
    std::uint32_t number;
    const lc::Event* event;
    tick_t threshold;
    tick_t duration;
  } blocks[] = {{2, &kTight, ms(100), ms(150)}, {4, &kLoose, ms(300), ms(310)}};
  for (const auto& b : blocks) {
    SCOPED_TRACE("dispatch " + std::to_string(b.number));
    const std::optional<BlockRecord> in_progress = rig.find(b.number, Phase::in_progress);
    ASSERT_TRUE(in_progress.has_value());
    EXPECT_EQ(in_progress->threshold_ticks, b.threshold);
    EXPECT_GT(in_progress->duration_ticks, std::uint64_t{b.threshold});
    const std::optional<BlockRecord> r = rig.find(b.number, Phase::final);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->event, b.event);
    EXPECT_EQ(r->threshold_ticks, b.threshold);
    EXPECT_EQ(r->duration_ticks, std::uint64_t{b.duration});
  }
  EXPECT_EQ(rig.reports.size(), 4u) << "dispatches 1 and 3 are not blocks under their thresholds";
  for (const BlockRecord& r : rig.reports) {
    EXPECT_NE(r.dispatch, 1u);
    EXPECT_NE(r.dispatch, 3u);
  }
  EXPECT_EQ(rig.monitor.stats().blocks, 2u);
}

// ---- Cause classes -------------------------------------------------------------------------

TEST_P(WatchdogTest, HandlerThatComputesIsRunning) {
  ASSERT_TRUE(start_100ms());
  const std::optional<BlockRecord> r = one_block([&] { rig.compute(ms(150)); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cause, Cause::running);
  EXPECT_EQ(r->window_ticks, kWindowIn150ms);
  EXPECT_TRUE(r->has_thread_cpu);
  EXPECT_EQ(r->thread_cpu_us, std::uint64_t{kWindowIn150ms}) << "1 tick = 1 us";
  EXPECT_EQ(r->process_permille, 1000u);
  EXPECT_EQ(r->system_busy_permille, 1000u);
}

TEST_P(WatchdogTest, HandlerOffTheCpuOnAQuietMachineIsWaiting) {
  ASSERT_TRUE(start_100ms());
  rig.machine.set_other_load_permille(100);
  const std::optional<BlockRecord> r = one_block([&] { rig.wait(ms(150)); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cause, Cause::waiting);
  EXPECT_EQ(r->window_ticks, kWindowIn150ms);
  EXPECT_TRUE(r->has_thread_cpu);
  EXPECT_EQ(r->thread_cpu_us, 0u);
  EXPECT_EQ(r->system_busy_permille, 100u);
  EXPECT_EQ(r->process_permille, 0u);
}

TEST_P(WatchdogTest, HandlerOffTheCpuOnASaturatedMachineIsStarved) {
  ASSERT_TRUE(start_100ms());
  const std::optional<BlockRecord> r = one_block([&] { rig.starve(ms(150)); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cause, Cause::starved);
  EXPECT_EQ(r->window_ticks, kWindowIn150ms);
  EXPECT_TRUE(r->has_thread_cpu);
  EXPECT_EQ(r->thread_cpu_us, 0u);
  EXPECT_EQ(r->system_busy_permille, 1000u);
  EXPECT_EQ(r->process_permille, 0u);
}

// With the thread's run-queue wait (kCpuWaitUs from Hal::read_cpu) the rule judges by what the loop
// thread went through: a loop that sleeps on a saturated machine is waiting, not starved.
TEST_P(WatchdogTest, WithRunQueueWaitASleepingLoopOnASaturatedMachineIsWaiting) {
  ASSERT_TRUE(start_100ms());
  rig.machine.set_thread_wait_available(true);
  rig.machine.set_other_load_permille(1000);
  const std::optional<BlockRecord> r = one_block([&] { rig.wait(ms(150)); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->system_busy_permille, 1000u) << "the load rule alone would say starved";
  EXPECT_TRUE(r->has_thread_wait);
  EXPECT_EQ(r->thread_wait_us, 0u);
  EXPECT_EQ(r->cause, Cause::waiting);
}

TEST_P(WatchdogTest, WithRunQueueWaitARunnableLoopIsStarved) {
  ASSERT_TRUE(start_100ms());
  rig.machine.set_thread_wait_available(true);
  const std::optional<BlockRecord> r = one_block([&] { rig.starve_runnable(ms(150)); });
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->has_thread_wait);
  EXPECT_EQ(r->thread_wait_us, std::uint64_t{kWindowIn150ms}) << "runnable for the whole window";
  EXPECT_EQ(r->cause, Cause::starved);
}

TEST_P(WatchdogTest, WithoutCpuCountersTheCauseIsUnknown) {
  ASSERT_TRUE(start_100ms());
  rig.machine.set_counters_available(false);
  const std::optional<BlockRecord> r = one_block([&] { rig.compute(ms(150)); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cause, Cause::unknown);
  EXPECT_FALSE(r->has_thread_cpu);
  EXPECT_EQ(r->system_busy_permille, lc::kUnknownPermille);
  EXPECT_EQ(r->process_permille, lc::kUnknownPermille);
  EXPECT_EQ(r->window_ticks, kWindowIn150ms) << "armed and sampled: only the CPU readings are missing";
  EXPECT_EQ(r->samples_taken, kSamplesIn150ms);
}

TEST_P(WatchdogTest, FinalCpuWindowEndsAtTheLastPollThatSawTheDispatch) {
  // The watchdog every 20 ms. Dispatch 1 waits 110 ms from a poll: polls at elapsed 20, 40
  // (armed), 60, 80 and 100 ms (not over the threshold yet); it ends at 110 ms, between two
  // polls. Dispatch 2 then computes for 10 ms, and the poll at 120 ms finalises dispatch 1:
  // its window is 40 .. 100 ms and holds none of dispatch 2's CPU time.
  constexpr tick_t kPoll = ms(20);
  ASSERT_TRUE(rig.start(loop_config(ms(100), ms(10), ms(1000)), kPoll));
  rig.idle_until(kWrapOffset - ms(100));
  rig.dispatch(kWork, [&] {
    LOOPCANARY_SCOPE(rig.monitor, "io");
    rig.wait(ms(110));
  });
  rig.run(kWork, ms(10));
  rig.idle(kPoll);

  const std::optional<BlockRecord> r = rig.find(1, Phase::final);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->duration_ticks, std::uint64_t{ms(110)});
  EXPECT_EQ(r->window_ticks, std::uint64_t{ms(100) - ms(40)});
  EXPECT_TRUE(r->has_thread_cpu);
  EXPECT_EQ(r->thread_cpu_us, 0u) << "dispatch 2's CPU time charged to dispatch 1";
  EXPECT_EQ(r->cause, Cause::waiting);
}

// ---- Debugger guard ------------------------------------------------------------------------

TEST_P(WatchdogTest, AttachedDebuggerSuppressesReportsAndCountsThem) {
  ASSERT_TRUE(start_100ms());  // default WatchdogConfig: stop_when_debugging
  rig.machine.set_debugger_attached(true);
  EXPECT_FALSE(one_block([&] { rig.compute(ms(150)); }).has_value());
  EXPECT_TRUE(rig.reports.empty());
  EXPECT_EQ(rig.watchdog.pending(), 0u);
  lc::WatchdogStats stats = rig.watchdog.stats();
  EXPECT_EQ(stats.reports, 0u);
  EXPECT_EQ(stats.suppressed, 2u) << "the block in progress and the final record";
  EXPECT_EQ(rig.monitor.stats().blocks, 1u) << "the loop still counts the block";

  // Detached again: the next block is reported, numbered from 1 (gaps mean dropped records,
  // and nothing was dropped).
  rig.machine.set_debugger_attached(false);
  rig.align();
  rig.run(kWork, ms(150));
  rig.idle(kPeriod);
  ASSERT_EQ(rig.reports.size(), 2u);
  EXPECT_EQ(rig.reports[0].phase, Phase::in_progress);
  EXPECT_EQ(rig.reports[0].report, 1u);
  EXPECT_EQ(rig.reports[1].phase, Phase::final);
  EXPECT_EQ(rig.reports[1].report, 2u);
  EXPECT_EQ(rig.reports[1].dispatch, 2u);
  stats = rig.watchdog.stats();
  EXPECT_EQ(stats.suppressed, 2u);
  EXPECT_EQ(stats.records_dropped, 0u);
}

TEST_P(WatchdogTest, DebuggerGuardOffKeepsReporting) {
  lc::WatchdogConfig dog;
  dog.stop_when_debugging = false;
  ASSERT_TRUE(start_100ms(dog));
  rig.machine.set_debugger_attached(true);
  EXPECT_TRUE(one_block([&] { rig.compute(ms(150)); }).has_value());
  EXPECT_EQ(rig.reports.size(), 2u);
  EXPECT_EQ(rig.watchdog.stats().suppressed, 0u);
}

// ---- Program-counter capture ---------------------------------------------------------------

constexpr lc::Frame kFakePc = 0x0800'1234u;

TEST_P(WatchdogTest, PcCaptureFillsSamplesWithProgramCounters) {
  ASSERT_TRUE(start_100ms());
  rig.machine.set_pc_capture(true);
  rig.thread.pc = kFakePc;

  // Dispatch 1 has no scopes: the PC is all a sample holds. Dispatch 2 has one: scope names
  // first, then the PC, and the histogram keys on the scope.
  rig.idle_until(kWrapOffset - ms(100));
  rig.run(kWork, ms(150));
  rig.align();
  rig.dispatch(kWork, [&] {
    LOOPCANARY_SCOPE(rig.monitor, "handler");
    rig.compute(ms(150));
  });
  rig.idle(kPeriod);

  const std::optional<BlockRecord> bare = rig.find(1, Phase::final);
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->samples_taken, kSamplesIn150ms);
  EXPECT_EQ(bare->samples_missed, 0u);
  expect_own_samples(*bare);
  for (std::size_t i = 0; i < bare->sample_count; ++i) {
    EXPECT_EQ(bare->samples[i].scope_count, 0);
    EXPECT_EQ(bare->samples[i].pc_count, 1);
    EXPECT_EQ(bare->samples[i].frames[0], kFakePc);
  }
  ASSERT_EQ(bare->top_count, 1);
  EXPECT_EQ(bare->top[0].scope_count, 0);
  EXPECT_EQ(bare->top[0].pc_count, 1);
  EXPECT_EQ(bare->top[0].frames[0], kFakePc);
  EXPECT_EQ(bare->top[0].leaf_high, kFakePc);
  EXPECT_EQ(bare->top[0].count, kSamplesIn150ms);

  const std::optional<BlockRecord> scoped = rig.find(2, Phase::final);
  ASSERT_TRUE(scoped.has_value());
  expect_own_samples(*scoped);
  for (std::size_t i = 0; i < scoped->sample_count; ++i) {
    EXPECT_EQ(scoped->samples[i].scope_count, 1);
    EXPECT_EQ(scoped->samples[i].pc_count, 1);
    EXPECT_STREQ(scope_name(scoped->samples[i].frames[0]), "handler");
    EXPECT_EQ(scoped->samples[i].frames[1], kFakePc);
  }
  EXPECT_EQ(top_scope_count(*scoped, "handler"), kSamplesIn150ms);
  EXPECT_EQ(rig.machine.captures(), 2u * kSamplesIn150ms);
}

TEST_P(WatchdogTest, FailingCaptureWithoutScopesCountsMissedSamples) {
  ASSERT_TRUE(start_100ms());
  rig.machine.set_pc_capture(true);
  rig.machine.set_capture_failing(true);
  rig.thread.pc = kFakePc;
  const std::optional<BlockRecord> r = one_block([&] { rig.compute(ms(150)); }, /*scope=*/nullptr);
  ASSERT_TRUE(r.has_value()) << "a block without stacks is still reported";
  EXPECT_EQ(r->samples_taken, 0u);
  EXPECT_EQ(r->sample_count, 0);
  EXPECT_EQ(r->top_count, 0);
  EXPECT_EQ(r->samples_missed, kSamplesIn150ms);
  EXPECT_EQ(rig.watchdog.stats().samples_missed, kSamplesIn150ms);
  EXPECT_FALSE(has_flag(*r, lc::kFlagUnwatched)) << "watched and armed; only the captures failed";
}

// ---- Nested dispatch -----------------------------------------------------------------------

TEST_P(WatchdogTest, NestedDispatchIsFoldedIntoTheOuterBlock) {
  constexpr lc::Event kOuter{"outer"};
  constexpr lc::Event kInner{"inner"};
  ASSERT_TRUE(start_100ms());

  // 60 ms, a nested 60 ms dispatch (a handler that pumps the loop), 10 ms: 130 ms in all. The
  // block in progress is raised at elapsed 110 ms, inside the nested dispatch.
  rig.idle_until(kWrapOffset - ms(100));
  const tick_t begin = rig.dispatch(kOuter, [&] {
    rig.compute(ms(60));
    rig.run(kInner, ms(60));
    rig.compute(ms(10));
  });
  rig.idle(kPeriod);

  const lc::LoopStats stats = rig.monitor.stats();
  EXPECT_EQ(stats.nested, 1u);
  EXPECT_EQ(stats.dispatches, 1u);
  EXPECT_EQ(stats.blocks, 1u);
  EXPECT_EQ(stats.unbalanced_ends, 0u);
  EXPECT_EQ(stats.max_duration, ms(130));

  ASSERT_EQ(rig.reports.size(), 2u);
  for (const BlockRecord& r : rig.reports) {
    EXPECT_EQ(r.event, &kOuter);
    EXPECT_EQ(r.dispatch, 1u);
    EXPECT_EQ(r.start, begin);
  }
  EXPECT_EQ(rig.reports[0].phase, Phase::in_progress);
  const BlockRecord& final_record = rig.reports[1];
  EXPECT_EQ(final_record.phase, Phase::final);
  EXPECT_EQ(final_record.duration_ticks, std::uint64_t{ms(130)});
  EXPECT_EQ(final_record.end, later(begin, ms(130)));
}

// ---- Memory context: read through the HAL at each report -----------------------------------

TEST_P(WatchdogTest, EachReportCarriesTheMemoryStateReadWhenItWasMade) {
  ASSERT_TRUE(start_100ms());
  lc::MemoryReading before{};
  before.set(lc::kMemoryStackPeak, 1'024);
  before.set(lc::kMemoryStackSize, 8'192);
  rig.machine.set_memory(before);
  rig.idle_until(kWrapOffset - ms(100));
  rig.dispatch(kWork, [&] {
    rig.compute(ms(120));  // the in-progress report is made here, at elapsed 110 ms
    lc::MemoryReading later_reading = before;
    later_reading.set(lc::kMemoryStackPeak, 4'096);
    later_reading.set(lc::kMemoryHeapFree, 500);
    rig.machine.set_memory(later_reading);
    rig.compute(ms(10));
  });
  rig.idle(kPeriod);

  const std::optional<BlockRecord> running = rig.find(1, Phase::in_progress);
  const std::optional<BlockRecord> done = rig.find(1, Phase::final);
  ASSERT_TRUE(running.has_value());
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(running->memory.valid, before.valid);
  EXPECT_EQ(running->memory.value[lc::kMemoryStackPeak], 1'024u);
  EXPECT_FALSE(running->memory.has(lc::kMemoryHeapFree)) << "unknown, not zero";
  EXPECT_EQ(done->memory.value[lc::kMemoryStackPeak], 4'096u);
  EXPECT_TRUE(done->memory.has(lc::kMemoryHeapFree));
  EXPECT_EQ(done->memory.value[lc::kMemoryHeapFree], 500u);
  EXPECT_FALSE(done->memory.has(lc::kMemoryResident));
  EXPECT_EQ(rig.machine.memory_reads(), 2u) << "one reading per report";
}

// ---- Deadline misses: reported with the evidence of what delayed them -----------------------

TEST_P(WatchdogTest, ADeadlineMissIsReportedWithTheEvidenceOfTheDispatchRunningAtItsDueTime) {
  static lc::EventHealth tick_health;
  static constexpr lc::Event kTick{"tick", 0, &tick_health};
  ASSERT_TRUE(start_100ms());
  ASSERT_EQ(rig.monitor.init_event(kTick, {ms(10), ms(5)}), Status::ok);
  const lc::EventStats before = tick_health.stats();

  // Aligned at a poll: kWork computes 60 ms in scope "slow" (not a block, but armed at 25 ms and
  // sampled). The tick fell due 20 ms in and is dispatched when kWork ends: 40 ms late.
  rig.idle_until(kWrapOffset - ms(30));
  const tick_t begin = rig.dispatch(kWork, [&] {
    LOOPCANARY_SCOPE(rig.monitor, "slow");
    rig.compute(ms(60));
  });
  const tick_t due = later(begin, ms(20));
  rig.monitor.begin_at(kTick, rig.now(), due);
  rig.compute(ms(1));
  rig.monitor.end_at(rig.now());
  rig.idle(kPeriod);

  const std::optional<BlockRecord> late = rig.find(2, Phase::deadline_miss);
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(rig.reports.size(), 1u) << "no block: only the deadline miss";
  EXPECT_EQ(late->event, &kTick);
  EXPECT_EQ(late->start, due);
  EXPECT_EQ(late->end, later(begin, ms(60)));
  EXPECT_EQ(late->duration_ticks, std::uint64_t{ms(40)});
  EXPECT_EQ(late->threshold_ticks, ms(5)) << "the deadline";
  EXPECT_EQ(late->delayed_by_dispatch, 1u);
  EXPECT_EQ(late->delayed_by, &kWork);
  EXPECT_FALSE(has_flag(*late, lc::kFlagUnwatched));
  EXPECT_EQ(top_scope_count(*late, "slow"), late->samples_taken);
  EXPECT_EQ(late->samples_taken, 4u) << "sampled at 30, 40, 50 and 60 ms";
  for (std::size_t i = 0; i < late->sample_count; ++i) EXPECT_EQ(late->samples[i].seq, seq_of(1));
  EXPECT_EQ(late->cause, Cause::running);

  const lc::EventStats window = lc::difference(before, tick_health.stats());
  EXPECT_EQ(window.deadline_misses, 1u);
  EXPECT_EQ(window.missed_periods, 4u);
  EXPECT_EQ(rig.watchdog.stats().deadline_misses, 1u);
  EXPECT_EQ(rig.monitor.stats().blocks, 0u);
}

TEST_P(WatchdogTest, ADeadlineMissAfterABlockCarriesTheBlocksEvidenceAndOneWithoutAWatchedDelayerIsUnwatched) {
  static lc::EventHealth tick_health;
  static constexpr lc::Event kTick{"tick", 0, &tick_health};
  ASSERT_TRUE(start_100ms());
  ASSERT_EQ(rig.monitor.init_event(kTick, {0, ms(5)}), Status::ok);

  // A 150 ms block delays the tick by 140 ms: its final record, then the miss with its samples.
  rig.idle_until(kWrapOffset - ms(100));
  const tick_t begin = rig.run(kWork, ms(150));
  rig.monitor.begin_at(kTick, rig.now(), later(begin, ms(10)));
  rig.monitor.end_at(rig.now());
  // Then a 20 ms dispatch (never armed) delays it by 8 ms.
  rig.align();
  const tick_t short_begin = rig.run(kWork, ms(20));
  rig.monitor.begin_at(kTick, rig.now(), later(short_begin, ms(12)));
  rig.monitor.end_at(rig.now());
  rig.idle(kPeriod);

  const std::optional<BlockRecord> block = rig.find(1, Phase::final);
  const std::optional<BlockRecord> first = rig.find(2, Phase::deadline_miss);
  const std::optional<BlockRecord> second = rig.find(4, Phase::deadline_miss);
  ASSERT_TRUE(block.has_value());
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(first->duration_ticks, std::uint64_t{ms(140)});
  EXPECT_EQ(first->delayed_by_dispatch, 1u);
  EXPECT_EQ(first->samples_taken, block->samples_taken) << "the block's own evidence";
  EXPECT_EQ(first->window_ticks, block->window_ticks);
  EXPECT_LT(block->report, first->report) << "the block's note was queued first";
  EXPECT_EQ(second->duration_ticks, std::uint64_t{ms(8)});
  EXPECT_EQ(second->delayed_by_dispatch, 0u);
  EXPECT_EQ(second->delayed_by, nullptr);
  EXPECT_EQ(second->flags, lc::kFlagUnwatched);
  EXPECT_EQ(second->samples_taken, 0u);
  EXPECT_EQ(rig.watchdog.stats().deadline_misses, 2u);
}

// ---- Health records: one per loop and period ------------------------------------------------

void collect_health(void* context, const lc::HealthRecord& record) {
  static_cast<std::vector<lc::HealthRecord>*>(context)->push_back(record);
}

TEST_P(WatchdogTest, HealthRecordsCountEachWindowExactly) {
  static lc::EventHealth tick_health;
  static constexpr lc::Event kTick{"tick", 0, &tick_health};
  lc::WatchdogConfig dog;
  dog.health_period_us = ms(100);
  ASSERT_TRUE(start_100ms(dog));
  ASSERT_EQ(rig.monitor.init_event(kTick, {ms(10), ms(3)}), Status::ok);
  std::vector<lc::HealthRecord> health;
  ASSERT_EQ(rig.watchdog.add_health_interceptor(&collect_health, &health), Status::ok);
  lc::MemoryReading memory{};
  memory.set(lc::kMemoryStackPeak, 512);
  rig.machine.set_memory(memory);

  // The first poll starts the window; then 10 ticks of 4 ms every 10 ms, each posted 1 ms before
  // it runs but the 5th, 4 ms late (a deadline miss, no missed period), the loop idle between.
  rig.align();
  const tick_t window_start = rig.now();
  for (int i = 0; i < 10; ++i) {
    const tick_t lateness = i == 4 ? ms(4) : ms(1);
    rig.idle(lateness);
    rig.monitor.add_idle(lateness);
    rig.monitor.begin_at(kTick, rig.now(), lc::ticks_between(lateness, rig.now()));
    rig.compute(ms(4));
    rig.monitor.end_at(rig.now());
    rig.idle(ms(10) - lateness - ms(4));
    rig.monitor.add_idle(ms(10) - lateness - ms(4));
  }
  rig.idle(kPeriod / 2);  // the poll at 100 ms makes the record

  ASSERT_EQ(health.size(), 1u);
  const lc::HealthRecord r = health[0];  // a copy: the vector grows below
  EXPECT_EQ(r.number, 1u);
  EXPECT_EQ(r.loop, std::string("main"));
  EXPECT_EQ(r.start, window_start);
  EXPECT_EQ(r.end, later(window_start, ms(100)));
  EXPECT_EQ(r.dispatches, 10u);
  EXPECT_EQ(r.busy_ticks, ms(40));
  EXPECT_TRUE(r.has_idle);
  // 6 ms of waits per tick, but the last 5 ms wait is reported when it ends, after the poll at
  // 100 ms: it belongs to the next window.
  EXPECT_EQ(r.idle_ticks, ms(55));
  EXPECT_EQ(lc::share_permille(r.busy_ticks, lc::ticks_between(r.start, r.end)), 400u);
  EXPECT_EQ(r.blocks, 0u);
  EXPECT_EQ(r.max_duration, ms(4));
  EXPECT_EQ(r.memory.value[lc::kMemoryStackPeak], 512u);
  ASSERT_EQ(r.event_count, 1);
  const lc::EventHealthWindow& e = r.events[0];
  EXPECT_EQ(e.event, &kTick);
  EXPECT_EQ(e.dispatches, 10u);
  EXPECT_EQ(e.deadline_misses, 1u);
  EXPECT_EQ(e.missed_periods, 0u);
  // Nine latencies of 1000 ticks and one of 4000. Rank ceil(10 x 0.5) = 5 falls in the bucket
  // of 1000 (512..1023: its upper bound, 1023); ranks 10 (p95, p99) in the bucket of 4000
  // (2048..4095), capped at the maximum, 4000.
  EXPECT_EQ(e.p50, 1023u);
  EXPECT_EQ(e.p95, 4000u);
  EXPECT_EQ(e.p99, 4000u);
  EXPECT_EQ(e.max_latency, ms(4));
  EXPECT_EQ(e.period_ticks, ms(10));
  EXPECT_EQ(e.deadline_ticks, ms(3));

  // The next window starts where this one ended and counts only its own dispatches.
  rig.run(kTick, ms(2));
  rig.idle(ms(100));
  ASSERT_EQ(health.size(), 2u);
  EXPECT_EQ(health[1].number, 2u);
  EXPECT_EQ(health[1].start, r.end);
  EXPECT_EQ(health[1].dispatches, 1u);
  EXPECT_EQ(health[1].idle_ticks, ms(5));
  EXPECT_EQ(health[1].events[0].dispatches, 0u) << "dispatched without a post stamp";
  EXPECT_EQ(health[1].events[0].max_latency, ms(4)) << "the maximum since the start";

  // The health ring (capacity 2) holds both; a third record is dropped and counted.
  rig.idle(ms(100));
  ASSERT_EQ(health.size(), 3u);
  EXPECT_EQ(health[2].health_dropped, 0u);
  const lc::WatchdogStats stats = rig.watchdog.stats();
  EXPECT_EQ(stats.health_records, 3u);
  EXPECT_EQ(stats.health_dropped, 1u);
  lc::HealthRecord popped;
  ASSERT_TRUE(rig.watchdog.pop_health(popped));
  EXPECT_EQ(popped.number, 1u);
  ASSERT_TRUE(rig.watchdog.pop_health(popped));
  EXPECT_EQ(popped.number, 2u);
  EXPECT_FALSE(rig.watchdog.pop_health(popped));
}

TEST(WatchdogHealth, PeriodOutOfRangeAtTheLoopsTickRateIsRefusedByAdd) {
  struct Case {
    std::uint32_t tick_hz;
    std::uint32_t period_us;
    Status expected;
  } cases[] = {{1000, 500, Status::health_period_below_one_tick},
               {1'000'000, 0xFFFF'FFFFu, Status::health_period_too_long},
               {1000, 0, Status::ok},
               {1000, 1000, Status::ok}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.tick_hz) + " Hz, " + std::to_string(c.period_us) + " us");
    lc::Monitor monitor;
    lc::MonitorConfig config;
    config.tick_hz = c.tick_hz;
    config.threshold_us = 100'000;
    config.sample_interval_us = 10'000;
    ASSERT_EQ(monitor.init(config), Status::ok);
    lc::StaticWatchdog<1, 2, 1, 2> watchdog;
    lc::WatchdogConfig dog;
    dog.health_period_us = c.period_us;
    ASSERT_EQ(watchdog.init(dog), Status::ok);
    EXPECT_EQ(watchdog.add(monitor), c.expected);
    EXPECT_EQ(watchdog.loop_count(), c.expected == Status::ok ? 1u : 0u);
  }
}

TEST(WatchdogHealth, DeadlineMissesBeyondTheNoteRingAreCountedApartFromBlocks) {
  static lc::EventHealth health;
  static constexpr lc::Event kLate{"late", 0, &health};
  lc::Monitor monitor;
  lc::MonitorConfig config;
  config.tick_hz = 1'000'000;
  config.threshold_us = 100'000;
  config.sample_interval_us = 10'000;
  ASSERT_EQ(monitor.init(config), Status::ok);
  ASSERT_EQ(monitor.init_event(kLate, {0, 1'000}), Status::ok);
  for (std::size_t i = 0; i <= lc::kNoteCapacity; ++i) {  // no watchdog drains the ring
    const lc::tick_t now = static_cast<lc::tick_t>(10'000u * (i + 1));
    monitor.begin_at(kLate, now, now - 2'000u);
    monitor.end_at(now + 10u);
  }
  const lc::LoopStats stats = monitor.stats();
  EXPECT_EQ(health.stats().deadline_misses, lc::kNoteCapacity + 1);
  EXPECT_EQ(stats.deadline_notes_dropped, 1u);
  EXPECT_EQ(stats.notes_dropped, 0u) << "block notes only";
}

TEST(WatchdogHealth, AHealthPeriodNeedsAHealthRing) {
  lc::StaticWatchdog<1, 2> without;  // HealthCapacity 0
  lc::WatchdogConfig dog;
  dog.health_period_us = 1'000'000;
  EXPECT_EQ(without.init(dog), Status::health_ring_missing);
  lc::HealthRecord record;
  EXPECT_FALSE(without.pop_health(record)) << "no ring: nothing to pop";
  dog.health_period_us = 0;
  EXPECT_EQ(without.init(dog), Status::ok);
  static_assert(sizeof(lc::StaticWatchdog<1, 2, 1, 2>) >= sizeof(lc::StaticWatchdog<1, 2>) + 3 * sizeof(lc::HealthRecord),
                "two ring slots and the record being built");
}

TEST(WatchdogHealth, InitEventListsEachEventOnceUpToTheCapacity) {
  static lc::EventHealth storage[lc::kHealthEvents + 1];
  static const char* const kNames[] = {"e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8",
                                       "e9", "e10", "e11", "e12", "e13", "e14", "e15", "e16",
                                       "e17", "e18", "e19", "e20", "e21", "e22", "e23", "e24",
                                       "e25", "e26", "e27", "e28", "e29", "e30", "e31", "e32"};
  static std::vector<lc::Event> events;
  for (std::size_t i = 0; i <= lc::kHealthEvents; ++i) events.push_back(lc::Event{kNames[i], 0, &storage[i]});
  lc::Monitor monitor;
  lc::MonitorConfig config;
  config.tick_hz = 1'000'000;
  ASSERT_EQ(monitor.init(config), Status::ok);
  for (std::size_t i = 0; i < lc::kHealthEvents; ++i) ASSERT_EQ(monitor.init_event(events[i], {}), Status::ok);
  EXPECT_EQ(monitor.init_event(events[0], {1000, 0}), Status::ok) << "listed already: reconfigured";
  EXPECT_EQ(monitor.init_event(events[lc::kHealthEvents], {}), Status::health_events_full);
  std::size_t count = 0;
  const lc::Event* const* listed = monitor.health_events(count);
  ASSERT_EQ(count, lc::kHealthEvents);
  for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(listed[i], &events[i]);
  EXPECT_EQ(storage[0].stats().period_ticks, 1000u);
}

// ---- Stages: the named parts of one dispatch ------------------------------------------------

/// The record's stages as (name, ticks) pairs.
std::vector<std::pair<std::string, tick_t>> stages_of(const BlockRecord& r) {
  std::vector<std::pair<std::string, tick_t>> out;
  for (std::size_t i = 0; i < r.stage_count; ++i) out.emplace_back(r.stages[i].name, r.stages[i].ticks);
  return out;
}

using StageList = std::vector<std::pair<std::string, tick_t>>;

TEST_P(WatchdogTest, StagesSplitTheReportInProgressAndTheFinalRecord) {
  ASSERT_TRUE(start_100ms());
  // Aligned at the poll 100 ms before the wrap point: 5 ms before any mark, input 20 ms,
  // compute 100 ms, output 10 ms (135 ms). The first poll past the threshold, at elapsed
  // 110 ms, finds compute 85 ms in. In the before_wrap run the marks straddle the wrap.
  rig.idle_until(kWrapOffset - ms(100));
  const tick_t begin = rig.dispatch(kWork, [&] {
    rig.compute(ms(5));
    rig.monitor.stage_at("input", rig.now());
    rig.compute(ms(20));
    LOOPCANARY_STAGE(rig.monitor, "compute");  // the macro: stage_at with the port's clock
    rig.compute(ms(100));
    LOOPCANARY_STAGE(rig.monitor, "output");
    rig.compute(ms(10));
  });
  rig.idle(kPeriod);

  const std::optional<BlockRecord> running = rig.find(1, Phase::in_progress);
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->end, later(begin, ms(110)));
  EXPECT_EQ(stages_of(*running), (StageList{{"input", ms(20)}, {"compute", ms(85)}}));
  const std::optional<BlockRecord> done = rig.find(1, Phase::final);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->duration_ticks, std::uint64_t{ms(135)});
  EXPECT_EQ(stages_of(*done), (StageList{{"input", ms(20)}, {"compute", ms(100)}, {"output", ms(10)}}));
  EXPECT_EQ(rig.monitor.stats().stages_dropped, 0u);
}

TEST_P(WatchdogTest, StageMarksPastTheCapacityOrOutsideADispatchAreCountedNotKept) {
  ASSERT_TRUE(start_100ms());
  rig.monitor.stage_at("idle", rig.now());  // no dispatch running
  EXPECT_EQ(rig.monitor.stats().stages_dropped, 1u);

  // kMaxStages + 2 marks 30 ms apart: the last kept stage runs to the end of the dispatch.
  rig.idle_until(kWrapOffset - ms(100));
  static const char* const kNames[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8",
                                       "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16", "s17"};
  const std::size_t marks = lc::kMaxStages + 2;
  rig.dispatch(kWork, [&] {
    for (std::size_t i = 0; i < marks; ++i) {
      rig.monitor.stage_at(kNames[i], rig.now());
      rig.compute(ms(30));
    }
  });
  rig.idle(kPeriod);

  const std::optional<BlockRecord> done = rig.find(1, Phase::final);
  ASSERT_TRUE(done.has_value());
  StageList expected;
  for (std::size_t i = 0; i < lc::kMaxStages; ++i) expected.emplace_back(kNames[i], ms(30));
  expected.back().second = ms(30) * 3;  // the last kept stage absorbs the two marks not kept
  EXPECT_EQ(stages_of(*done), expected);
  EXPECT_EQ(rig.monitor.stats().stages_dropped, 3u);
}

TEST_P(WatchdogTest, ABlockBetweenTwoPollsCarriesItsStagesInTheLoopsNote) {
  // Threshold 5 ms, polls every 7 ms (994, 1001 ms): the dispatch runs 995 .. 1000.5 ms,
  // between two polls, across the wrap in the before_wrap run.
  ASSERT_TRUE(rig.start(loop_config(ms(5), ms(1), ms(1000)), ms(7)));
  rig.idle_until(ms(995));
  rig.dispatch(kWork, [&] {
    rig.monitor.stage_at("read", rig.now());
    rig.compute(ms(2));
    rig.monitor.stage_at("write", rig.now());
    rig.compute(us(3500));
  });
  rig.idle(ms(7));
  const std::optional<BlockRecord> done = rig.find(1, Phase::final);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->flags, lc::kFlagUnwatched);
  EXPECT_EQ(stages_of(*done), (StageList{{"read", ms(2)}, {"write", us(3500)}}));
}

TEST_P(WatchdogTest, StagesBelongToTheirOwnDispatchAndANestedDispatchMarksTheOuterOne) {
  constexpr lc::Event kInner{"inner"};
  ASSERT_TRUE(start_100ms());
  rig.idle_until(kWrapOffset - ms(100));
  rig.dispatch(kWork, [&] {
    rig.monitor.stage_at("first", rig.now());
    rig.compute(ms(60));
    rig.dispatch(kInner, [&] {
      rig.monitor.stage_at("nested", rig.now());
      rig.compute(ms(60));
    });
  });
  rig.align();
  rig.run(kWork, ms(130));  // a block without marks: the marks of dispatch 1 are not its own
  rig.idle(kPeriod);

  const std::optional<BlockRecord> first = rig.find(1, Phase::final);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(stages_of(*first), (StageList{{"first", ms(60)}, {"nested", ms(60)}}));
  const std::optional<BlockRecord> second = rig.find(2, Phase::final);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->stage_count, 0);
  const std::optional<BlockRecord> second_running = rig.find(2, Phase::in_progress);
  ASSERT_TRUE(second_running.has_value());
  EXPECT_EQ(second_running->stage_count, 0);
}

}  // namespace

// ---- The cause rule itself ------------------------------------------------------------------

namespace {

// A record whose CPU readings give `cpu` us of thread time over a `window` us window, with the
// machine `busy` per mille (ticks are microseconds here).
BlockRecord evidence(std::uint64_t window, std::uint64_t cpu, std::uint16_t busy) {
  BlockRecord r;
  r.tick_hz = 1'000'000;
  r.window_ticks = window;
  r.has_thread_cpu = true;
  r.thread_cpu_us = cpu;
  r.system_busy_permille = busy;
  return r;
}

BlockRecord with_wait(BlockRecord r, std::uint64_t wait) {
  r.has_thread_wait = true;
  r.thread_wait_us = wait;
  return r;
}

}  // namespace

TEST(Classify, FollowsTheDocumentedRuleAtItsEdges) {
  const lc::CauseRule rule;  // running 700, starved_busy 900, starved_wait 500 per mille
  ASSERT_EQ(rule.running_permille, 700u);
  ASSERT_EQ(rule.starved_busy_permille, 900u);
  ASSERT_EQ(rule.starved_wait_permille, 500u);
  BlockRecord no_cpu = evidence(1000, 1000, 0);
  no_cpu.has_thread_cpu = false;
  EXPECT_EQ(lc::classify(no_cpu, rule), Cause::unknown);
  EXPECT_EQ(lc::classify(evidence(0, 0, 0), rule), Cause::unknown) << "empty window";
  EXPECT_EQ(lc::classify(evidence(1000, 700, 0), rule), Cause::running);
  EXPECT_EQ(lc::classify(evidence(1000, 699, 1000), rule), Cause::starved);
  EXPECT_EQ(lc::classify(evidence(1000, 699, 899), rule), Cause::waiting);
  EXPECT_EQ(lc::classify(evidence(1000, 699, lc::kUnknownPermille), rule), Cause::unknown);
  // With the run-queue wait: off-CPU time is 1000 - 600 = 400 us; starved from 200 us of wait.
  EXPECT_EQ(lc::classify(with_wait(evidence(1000, 600, 0), 200), rule), Cause::starved);
  EXPECT_EQ(lc::classify(with_wait(evidence(1000, 600, 1000), 199), rule), Cause::waiting)
      << "the thread's own wait decides, not the machine's load";
  EXPECT_EQ(lc::classify(with_wait(evidence(1000, 600, lc::kUnknownPermille), 0), rule), Cause::waiting);
}

TEST(Classify, TakesTheWindowInTicksAtTheRecordsTickRate) {
  const lc::CauseRule rule;
  BlockRecord r = evidence(2000, 700, 0);
  r.tick_hz = 2'000'000;  // 2000 ticks = 1000 us: 700 us of thread CPU is 70 %
  EXPECT_EQ(lc::classify(r, rule), Cause::running);
  r.tick_hz = 1'000'000;  // 2000 us: 35 %
  EXPECT_EQ(lc::classify(r, rule), Cause::waiting);
}

TEST(Classify, StolenTimeIsTakenOffTheWindow) {
  const lc::CauseRule rule;
  // 185 ms window, 115 ms of thread CPU, no run-queue wait: waiting on its own; with 63 ms
  // stolen from the machine's CPUs the thread ran 115 of at most 122 ms it could have: running.
  BlockRecord e = with_wait(evidence(185'000, 115'000, 540), 0);
  EXPECT_EQ(lc::classify(e, rule), Cause::waiting);
  e.steal_us = 63'000;
  EXPECT_EQ(lc::classify(e, rule), Cause::running);
  e.steal_us = 500'000;  // more than the window: nothing left to judge
  EXPECT_EQ(lc::classify(e, rule), Cause::unknown);
}

// ---- Fewer watches than loops ----------------------------------------------------------------

namespace {

/// Two loops, "a" and "b", each on its own sim thread and stamped by one virtual time; a
/// watchdog with `Watches` watches (StaticWatchdog<2, kRecords, Watches>) polled by a
/// Scheduler; every report collected.
template <std::size_t Watches>
class TwoLoopTest : public testing::TestWithParam<tick_t> {
 protected:
  /// Both loops with `threshold` and `sample_interval` (hang limit 1 s), polled every `period`.
  void set_up(tick_t threshold, tick_t sample_interval, tick_t period) {
    for (sim::PortMonitor* m : {&loop_a, &loop_b}) {
      lc::MonitorConfig config = loop_config(threshold, sample_interval, ms(1000));
      config.name = m == &loop_a ? "a" : "b";
      config.tick_hz = sim::kTickHz;
      config.context = m == &loop_a ? &thread_a : &thread_b;
      ASSERT_EQ(m->init(config), Status::ok);
    }
    ASSERT_EQ(dog.init(lc::WatchdogConfig{}, machine.hal()), Status::ok);
    ASSERT_EQ(dog.add(loop_a), Status::ok);
    ASSERT_EQ(dog.add(loop_b), Status::ok);
    ASSERT_EQ(dog.add_interceptor(&collect, &reports), Status::ok);
    scheduler.emplace(time, machine, dog, period);
  }

  /// The reports about loop `name` that `keep` accepts (all when null), in order.
  std::vector<BlockRecord> reports_of(const char* name, bool (*keep)(const BlockRecord&) = nullptr) const {
    std::vector<BlockRecord> out;
    for (const BlockRecord& r : reports) {
      if (std::strcmp(r.loop, name) == 0 && (keep == nullptr || keep(r))) out.push_back(r);
    }
    return out;
  }

  sim::VirtualTime time{GetParam()};
  sim::Machine machine;
  sim::Thread thread_a;
  sim::Thread thread_b;
  sim::PortMonitor loop_a{sim::Clock{time}};
  sim::PortMonitor loop_b{sim::Clock{time}};
  lc::StaticWatchdog<2, kRecords, Watches> dog;
  std::optional<sim::Scheduler> scheduler;
  std::vector<BlockRecord> reports;
};

/// Two loops, one watch.
class SharedWatchTest : public TwoLoopTest<1> {
 protected:
  void SetUp() override {
    set_up(ms(100), ms(10), kPeriod);
    thread_a.pc = 0xA000;  // each loop's "program counter" while it runs (the sim captures it)
    thread_b.pc = 0xB000;
    machine.set_pc_capture(true);
    // Start 100 ms before the wrap point: the blocks below straddle it in the before_wrap run.
    scheduler->idle(lc::ticks_between(time.peek(), later(GetParam(), kWrapOffset - ms(100))));
  }

  /// The reports about loop `name`, in order.
  std::vector<BlockRecord> of(const char* name) const { return reports_of(name); }
};

INSTANTIATE_TEST_SUITE_P(Watchdog, SharedWatchTest, testing::Values(tick_t{0}, kBeforeWrap), start_name);

TEST_P(SharedWatchTest, ASecondLongDispatchWaitsForTheWatchAndIsStillReported) {
  loop_a.begin(kWork);
  scheduler->compute(thread_a, ms(20));
  loop_b.begin(kWork);  // a long dispatch on b while a's holds the only watch
  scheduler->compute(thread_b, ms(200));
  loop_b.end();
  loop_a.end();  // a: 220 ms
  scheduler->idle(kPeriod);

  const std::vector<BlockRecord> a = of("a");
  ASSERT_EQ(a.size(), 2u);  // watched: in progress, then final, with samples
  EXPECT_EQ(a[0].phase, Phase::in_progress);
  EXPECT_EQ(a[1].phase, Phase::final);
  EXPECT_EQ(a[1].duration_ticks, ms(220));
  EXPECT_GT(a[1].samples_taken, 0u);
  EXPECT_FALSE(has_flag(a[1], lc::kFlagUnwatched));

  const std::vector<BlockRecord> b = of("b");
  ASSERT_EQ(b.size(), 1u);  // not watched: only its final record, flagged, no samples
  EXPECT_EQ(b[0].phase, Phase::final);
  EXPECT_EQ(b[0].duration_ticks, ms(200));
  EXPECT_TRUE(has_flag(b[0], lc::kFlagUnwatched));
  EXPECT_EQ(b[0].samples_taken, 0u);
  EXPECT_EQ(dog.stats().watches_busy, 1u);  // once for the dispatch, not once per poll

  // The watch is free again: b's next long dispatch is watched like any other.
  reports.clear();
  loop_b.begin(kWork);
  scheduler->compute(thread_b, ms(150));
  loop_b.end();
  scheduler->idle(kPeriod);
  const std::vector<BlockRecord> b2 = of("b");
  ASSERT_EQ(b2.size(), 2u);
  EXPECT_EQ(b2[0].phase, Phase::in_progress);
  EXPECT_EQ(b2[1].phase, Phase::final);
  EXPECT_GT(b2[1].samples_taken, 0u);
  EXPECT_EQ(b2[1].cause, Cause::running);
  EXPECT_EQ(dog.stats().watches_busy, 1u);
}

TEST_P(SharedWatchTest, AWatchFreedMidDispatchStartsWatchingTheWaitingLoop) {
  loop_a.begin(kWork);
  scheduler->compute(thread_a, ms(30));
  loop_b.begin(kWork);
  scheduler->compute(thread_b, ms(40));
  loop_a.end();  // a: 70 ms, not a block; its watch frees at the next poll
  scheduler->compute(thread_b, ms(460));
  loop_b.end();  // b: 500 ms, watched from the poll after a ended
  scheduler->idle(kPeriod);

  EXPECT_TRUE(of("a").empty());
  const std::vector<BlockRecord> b = of("b");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].phase, Phase::in_progress);
  EXPECT_EQ(b[1].phase, Phase::final);
  EXPECT_EQ(b[1].duration_ticks, ms(500));
  EXPECT_FALSE(has_flag(b[1], lc::kFlagUnwatched));
  // Armed once watched (b had run 40..50 ms by then, past its 25 ms arm point): samples every
  // 10 ms from then on, at most the 46 polls left.
  EXPECT_GE(b[1].samples_taken, 40u);
  EXPECT_LE(b[1].samples_taken, 46u);
  EXPECT_EQ(dog.stats().watches_busy, 1u);
}

}  // namespace

// ---- Blocks that end faster than the watchdog drains their notes -----------------------------

namespace {

/// Two loops with a 1 ms threshold, polled every 48 ms (polls at 960 and 1008 ms around the
/// wrap point): a loop can end more blocks between two polls than its note ring holds
/// (LOOPCANARY_NOTE_CAPACITY), as under a watchdog that overruns its period. Both loops stamped
/// by one virtual time.
class NoteRingTest : public TwoLoopTest<2> {
 protected:
  static constexpr tick_t kSlowPoll = ms(48);
  static constexpr tick_t kBlock = ms(2);  // each dispatch of a burst: a block

  void SetUp() override { set_up(ms(1), ms(1), kSlowPoll); }

  /// Idles until `offset` after the start tick.
  void idle_until(tick_t offset) { scheduler->idle(lc::ticks_between(time.peek(), later(GetParam(), offset))); }

  /// `count` blocks in a row on `loop`, one kBlock dispatch each.
  void burst(sim::PortMonitor& loop, sim::Thread& thread, std::uint32_t count) {
    for (std::uint32_t i = 0; i < count; ++i) {
      loop.begin(kWork);
      scheduler->compute(thread, kBlock);
      loop.end();
    }
  }

  /// Idles up to and through the next poll.
  void next_poll() { scheduler->idle(lc::ticks_between(time.peek(), scheduler->next_poll())); }

  /// The final records of loop `name` whose end the loop stamped (no end_estimated), in order.
  std::vector<BlockRecord> confirmed_finals(const char* name) const {
    return reports_of(name, [](const BlockRecord& r) {
      return r.phase == Phase::final && !has_flag(r, lc::kFlagEndEstimated);
    });
  }
};

INSTANTIATE_TEST_SUITE_P(Watchdog, NoteRingTest, testing::Values(tick_t{0}, kBeforeWrap), start_name);

// Every block the loop counts is reported with its stamped end, or counted as dropped in the
// watchdog's statistics and in every record from the poll that learns of it on.
TEST_P(NoteRingTest, BlocksBeyondTheNoteRingAreCountedInTheStatisticsAndTheNextRecords) {
  constexpr std::uint32_t kOver = 3;
  constexpr std::uint32_t kFirst = static_cast<std::uint32_t>(lc::kNoteCapacity) + kOver;
  // Ending at 1007 ms (993 .. 1007 ms with the default capacity of 4, across the wrap in the
  // before_wrap run), between the polls at 960 and 1008 ms.
  idle_until(ms(1007) - kFirst * kBlock);
  burst(loop_a, thread_a, kFirst);
  next_poll();

  lc::LoopStats a = loop_a.stats();
  EXPECT_EQ(a.blocks, kFirst);
  EXPECT_EQ(a.notes_dropped, kOver);
  lc::WatchdogStats stats = dog.stats();
  EXPECT_EQ(stats.notes_dropped, kOver) << "the watchdog's statistics must count the blocks it never heard of";
  std::vector<BlockRecord> finals = confirmed_finals("a");
  ASSERT_EQ(finals.size(), lc::kNoteCapacity);
  for (std::size_t i = 0; i < finals.size(); ++i) {
    SCOPED_TRACE("final " + std::to_string(i));
    EXPECT_EQ(finals[i].dispatch, i + 1u);  // the first blocks were queued, the later ones dropped
    EXPECT_EQ(finals[i].flags, lc::kFlagUnwatched);
    EXPECT_EQ(finals[i].duration_ticks, kBlock);
    EXPECT_EQ(finals[i].notes_dropped, kOver) << "the poll learns of the drops before it reports";
  }
  EXPECT_EQ(finals.size() + stats.notes_dropped, a.blocks);

  // Polls that find nothing new count nothing again; a second burst adds its own drops.
  next_poll();
  EXPECT_EQ(dog.stats().notes_dropped, kOver);
  constexpr std::uint32_t kSecond = static_cast<std::uint32_t>(lc::kNoteCapacity) + 1u;
  burst(loop_a, thread_a, kSecond);
  next_poll();
  a = loop_a.stats();
  stats = dog.stats();
  EXPECT_EQ(a.blocks, kFirst + kSecond);
  EXPECT_EQ(stats.notes_dropped, kOver + 1u);
  EXPECT_EQ(stats.notes_dropped, a.notes_dropped);
  finals = confirmed_finals("a");
  EXPECT_EQ(finals.size() + stats.notes_dropped, a.blocks);
  EXPECT_EQ(finals.back().notes_dropped, kOver + 1u);
  EXPECT_EQ(stats.finals_estimated, 0u);
}

// A loop whose last blocks were dropped (its thread then exits, say) never reports again: the
// next record of any loop carries the count.
TEST_P(NoteRingTest, DropsOfALoopThatNeverReportsAgainShowInTheNextRecordOfAnotherLoop) {
  constexpr std::uint32_t kOver = 2;
  constexpr std::uint32_t kCount = static_cast<std::uint32_t>(lc::kNoteCapacity) + kOver;
  idle_until(ms(1007) - kCount * kBlock);  // between the polls at 960 and 1008 ms
  burst(loop_a, thread_a, kCount);
  next_poll();
  const std::size_t reported_a = reports.size();
  ASSERT_EQ(reported_a, lc::kNoteCapacity);

  burst(loop_b, thread_b, 1);
  next_poll();
  ASSERT_EQ(reports.size(), reported_a + 1u);
  const BlockRecord& b = reports.back();
  EXPECT_STREQ(b.loop, "b");
  EXPECT_EQ(b.phase, Phase::final);
  EXPECT_EQ(b.notes_dropped, kOver) << "blocks lost anywhere show in the next record";
  EXPECT_EQ(dog.stats().notes_dropped, kOver);
  EXPECT_EQ(loop_a.stats().notes_dropped, kOver);
  EXPECT_EQ(loop_b.stats().notes_dropped, 0u);
}

}  // namespace

// ---- The stack table: every sample of a dispatch, by stack ----------------------------------

namespace stack_table {

lc::Sample pc_sample(std::initializer_list<lc::Frame> pcs, const char* scope = nullptr) {
  lc::Sample s;
  if (scope != nullptr) s.frames[s.scope_count++] = reinterpret_cast<lc::Frame>(scope);
  for (const lc::Frame pc : pcs) s.frames[s.scope_count + s.pc_count++] = pc;
  return s;
}

// Samples with the same scopes and callers share an entry whatever their innermost PC, which
// the entry keeps as a range; another caller, another scope or another depth is another entry.
TEST(StackTable, SamplesShareAnEntryByTheirCallersAndKeepTheRangeOfTheirInnermostPc) {
  lc::WatchSamples evidence{};
  lc::watch_started(evidence);
  static const char kScope[] = "parse";
  for (const lc::Frame leaf : {0x1010u, 0x1004u, 0x1020u, 0x1008u}) lc::add_sample(evidence, pc_sample({leaf, 0x2000, 0x3000}));
  lc::add_sample(evidence, pc_sample({0x1010, 0x2100, 0x3000}));          // another call site
  lc::add_sample(evidence, pc_sample({0x1010, 0x2000, 0x3000}, kScope));  // inside a scope
  lc::add_sample(evidence, pc_sample({0x1010, 0x2000}));                   // a shallower stack
  const lc::StackSamples& s = evidence.stack;
  ASSERT_EQ(s.top_count, 4u);
  EXPECT_EQ(s.top_other, 0u);
  const lc::TopStack& loop = s.top[0];  // the most frequent first
  EXPECT_EQ(loop.count, 4u);
  EXPECT_EQ(loop.scope_count, 0u);
  ASSERT_EQ(loop.pc_count, 3u);
  EXPECT_EQ(loop.frames[0], 0x1004u) << "the lowest innermost PC";
  EXPECT_EQ(loop.leaf_high, 0x1020u) << "the highest";
  EXPECT_EQ(loop.frames[1], 0x2000u);
  EXPECT_EQ(loop.frames[2], 0x3000u);
  std::uint32_t counted = 0;
  for (std::size_t i = 0; i < s.top_count; ++i) {
    counted += s.top[i].count;
    if (i == 0) continue;
    EXPECT_EQ(s.top[i].count, 1u);
    EXPECT_EQ(s.top[i].leaf_high, 0x1010u) << "one innermost PC: its range is that PC";
  }
  EXPECT_EQ(counted, s.samples_taken);
  EXPECT_EQ(s.top[2].scope_count, 1u);
  EXPECT_STREQ(scope_name(s.top[2].frames[0]), kScope);
}

// More distinct stacks than the table holds: the rest are counted in top_other, and every sample
// is counted once, in an entry or there.
TEST(StackTable, StacksBeyondTheTableAreCountedInTopOther) {
  lc::WatchSamples evidence{};
  lc::watch_started(evidence, lc::kMaxSamples, 2);
  for (lc::Frame caller = 0x2000; caller < 0x2005; ++caller) lc::add_sample(evidence, pc_sample({0x1000, caller}));
  lc::add_sample(evidence, pc_sample({0x1004, 0x2000}));
  const lc::StackSamples& s = evidence.stack;
  ASSERT_EQ(s.top_count, 2u);
  EXPECT_EQ(s.top[0].count, 2u);
  EXPECT_EQ(s.top[0].frames[1], 0x2000u);
  EXPECT_EQ(s.top_other, 3u);
  EXPECT_EQ(s.top[0].count + s.top[1].count + s.top_other, s.samples_taken);
}

// A stack of one PC has no callers that would tell two functions' samples apart: each PC is an
// entry of its own (a virtual board's call site, a device sample without its return address).
TEST(StackTable, AStackOfOnePcIsKeyedByThatPc) {
  lc::WatchSamples evidence{};
  lc::watch_started(evidence);
  for (const lc::Frame pc : {0x1000u, 0x2000u, 0x1000u}) lc::add_sample(evidence, pc_sample({pc}));
  const lc::StackSamples& s = evidence.stack;
  ASSERT_EQ(s.top_count, 2u);
  EXPECT_EQ(s.top[0].count, 2u);
  EXPECT_EQ(s.top[0].frames[0], 0x1000u);
  EXPECT_EQ(s.top[0].leaf_high, 0x1000u);
  EXPECT_EQ(s.top[1].frames[0], 0x2000u);
}

}  // namespace stack_table
