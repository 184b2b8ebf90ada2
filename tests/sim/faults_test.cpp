// SPDX-License-Identifier: MIT
// Faults of the platform, injected with the sim port's fault knobs, in virtual time: the clock
// steps back or forward, is set across the wrap or stops; the watchdog polls seconds late or
// stops and resumes; stack captures fail; the records' consumer fails its writes or stops
// popping, so the record ring fills; more blocks end between two polls than the note ring
// holds. Each test checks what docs/reliability.md ("Faults of the platform") promises: every
// loss counted, no block or hang the docs do not state, and normal reports once the fault ends.
//
// Every test runs from tick 0 and from one second before the 32-bit tick counter wraps; the
// faults happen around the one second mark (kWrapOffset), so in the second run they straddle
// the wrap. The loop: threshold 100 ms (armed at 25 ms), a sample every 10 ms, hang after 1 s;
// the watchdog polls every 10 ms. A dispatch that begins at a poll is seen at elapsed 10, 20,
// 30 ... ms; armed at 30 ms, it is sampled at every poll from then on.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"
#include "../sim_rig.hpp"

namespace {

namespace lc = loopcanary;
namespace sim = loopcanary::sim;
using lc::BlockRecord;
using lc::Phase;
using lc::Status;
using lc::tick_t;
using sim::ms;

constexpr tick_t kPeriod = ms(10);
constexpr tick_t kThreshold = ms(100);
constexpr tick_t kWrapOffset = ms(1000);
constexpr tick_t kBeforeWrap = static_cast<tick_t>(tick_t{0} - kWrapOffset);
constexpr lc::Frame kPc = 0x1234;

constexpr lc::Event kWork{"work"};

using lc::test::collect;
using lc::test::later;

/// Sample attempts in a dispatch of `d` ms (a multiple of 10, at least 30) that begins at a poll.
constexpr std::uint32_t samples_in(std::uint32_t d) { return (d - 30u) / 10u + 1u; }

bool has_flag(const BlockRecord& r, lc::RecordFlag flag) { return (r.flags & flag) != 0; }


/// One loop, one watchdog with a ring of Records (sim_rig.hpp), a consumer (RecordSink), virtual
/// time from `start`. `reports` gets every report (interceptor), `written` every record the sink
/// wrote. idle_until() counts by the clock, which no fault has moved yet.
template <std::size_t Records = 16>
struct Rig : lc::test::SimRig<lc::StaticWatchdog<1, Records>> {
  using Base = lc::test::SimRig<lc::StaticWatchdog<1, Records>>;
  using Base::Base;
  using Base::align;
  using Base::compute;
  using Base::idle;
  using Base::machine;
  using Base::monitor;
  using Base::now;
  using Base::of;
  using Base::reports;
  using Base::thread;
  using Base::watchdog;

  /// Starts with the loop "main" (threshold 100 ms, samples every 10 ms, hang at 1 s) and the
  /// loop thread's PC captured in every sample.
  testing::AssertionResult start() {
    lc::MonitorConfig config;
    config.name = "main";
    config.threshold_us = kThreshold;
    config.sample_interval_us = ms(10);
    config.hang_limit_us = ms(1000);
    machine.set_pc_capture(true);
    thread.pc = kPc;
    return Base::start(config, kPeriod);
  }

  /// A dispatch that begins at a poll and computes `ticks`, then one period; returns its begin.
  tick_t block(tick_t ticks) {
    align();
    const tick_t begin = now();
    monitor.begin(kWork);
    compute(ticks);
    monitor.end();
    idle(kPeriod);
    return begin;
  }

  /// The accounting of docs/reliability.md, after a poll that follows the last dispatch: the
  /// loop's blocks are the final records without end_estimated plus the notes dropped; every
  /// report is written, failed, dropped from the ring or still in it.
  void expect_accounting() const {
    const lc::LoopStats loop = monitor.stats();
    const lc::WatchdogStats dog = watchdog.stats();
    std::uint32_t confirmed = 0;
    for (const BlockRecord& r : reports) {
      if (r.phase == Phase::final && !has_flag(r, lc::kFlagEndEstimated)) ++confirmed;
    }
    EXPECT_EQ(loop.blocks, confirmed + dog.suppressed + dog.notes_dropped);
    EXPECT_EQ(dog.notes_dropped, loop.notes_dropped);
    EXPECT_EQ(dog.reports, reports.size());
    EXPECT_EQ(dog.reports, sink.popped() + dog.records_dropped + watchdog.pending());
  }

  /// Checks a watched block's final record after recovery: the exact duration, samples of
  /// every poll from the arm point, nothing missed.
  void expect_normal_block(std::uint32_t number, tick_t begin, std::uint32_t d_ms) const {
    SCOPED_TRACE("dispatch " + std::to_string(number) + " after the fault");
    const std::vector<BlockRecord> rs = of(number);
    ASSERT_EQ(rs.size(), 2u);
    EXPECT_EQ(rs[0].phase, Phase::in_progress);
    EXPECT_EQ(rs[0].duration_ticks, kThreshold + ms(10));
    EXPECT_EQ(rs[1].phase, Phase::final);
    EXPECT_EQ(rs[1].flags, 0u);
    EXPECT_EQ(rs[1].start, begin);
    EXPECT_EQ(rs[1].end, later(begin, ms(d_ms)));
    EXPECT_EQ(rs[1].duration_ticks, ms(d_ms));
    EXPECT_EQ(rs[1].samples_taken, samples_in(d_ms));
    EXPECT_EQ(rs[1].samples_missed, 0u);
    EXPECT_EQ(rs[1].window_ticks, ms(d_ms - 30));
  }

  std::vector<BlockRecord> written;
  sim::RecordSink sink{&collect, &written};
};

class FaultTest : public testing::TestWithParam<tick_t> {
 protected:
  Rig<> rig{GetParam()};
};

std::string start_name(const testing::TestParamInfo<tick_t>& info) {
  return info.param == kBeforeWrap ? "before_wrap" : "from_zero";
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultTest, testing::Values(tick_t{0}, kBeforeWrap), start_name);

// ---- The clock -----------------------------------------------------------------------------

// A clock set back during a dispatch, by more than the dispatch had run: its end stamp reads
// before its begin. A step forward of more than half the wrap reads the same. Neither is a
// block (not a 2^32-tick one) nor a hang: the loop counts it in clock_steps_back; its
// statistics take the difference as read (near 2^32 ticks).
TEST_P(FaultTest, ClockStepBackDuringADispatchIsNeitherABlockNorAHang) {
  ASSERT_TRUE(rig.start());
  rig.idle_until(kWrapOffset - ms(100));
  const struct {
    const char* what;
    void (*fault)(sim::VirtualTime&);
  } faults[] = {
      {"step back 500 ms", [](sim::VirtualTime& t) { t.step_back(ms(500)); }},
      {"step forward past half the wrap", [](sim::VirtualTime& t) { t.step_forward(3'000'000'000u); }},
  };
  std::uint32_t number = 0;
  for (const auto& f : faults) {
    SCOPED_TRACE(f.what);
    const lc::LoopStats before = rig.monitor.stats();
    const std::size_t reported = rig.reports.size();
    rig.align();
    const tick_t begin = rig.now();
    rig.monitor.begin(kWork);
    rig.compute(ms(50));  // watched and armed (elapsed 30 ms), sampled
    f.fault(rig.time);
    rig.compute(ms(50));
    const tick_t read = lc::ticks_between(begin, rig.now());
    ASSERT_GT(read, lc::kMaxIntervalTicks);
    rig.monitor.end();
    rig.idle(kPeriod);
    ++number;

    EXPECT_EQ(rig.reports.size(), reported) << "no report: the loop counted no block and no hang";
    const lc::LoopStats loop = rig.monitor.stats();
    EXPECT_EQ(loop.dispatches, before.dispatches + 1u);
    EXPECT_EQ(loop.blocks, before.blocks);
    EXPECT_EQ(loop.hangs, 0u);
    EXPECT_EQ(loop.clock_steps_back, before.clock_steps_back + 1u);
    EXPECT_EQ(loop.max_duration, read > before.max_duration ? read : before.max_duration);
    EXPECT_EQ(loop.busy_ticks, static_cast<tick_t>(before.busy_ticks + read));
    EXPECT_EQ(loop.histogram[31], before.histogram[31] + 1u);

    // Recovery: the next block is measured and reported as any other.
    const tick_t next = rig.block(ms(150));
    ++number;
    rig.expect_normal_block(number, next, 150);
    EXPECT_EQ(rig.monitor.stats().clock_steps_back, before.clock_steps_back + 1u);
  }
  EXPECT_EQ(rig.monitor.stats().blocks, 2u);
  rig.expect_accounting();
}

// A clock set back by less than the dispatch had run: the loop measures the dispatch that much
// shorter (here 200 - 40 = 160 ms: still a block). The watchdog's elapsed time never goes back
// (it stands still for the poll that sees the step), and the final record carries the loop's
// measure: duration_ticks is end - start.
TEST_P(FaultTest, ClockStepBackShorterThanTheDispatchShortensItsMeasureByTheStep) {
  ASSERT_TRUE(rig.start());
  rig.idle_until(kWrapOffset - ms(100));
  const tick_t begin = rig.now();
  rig.monitor.begin(kWork);
  rig.compute(ms(100));
  rig.time.step_back(ms(40));
  rig.compute(ms(100));
  rig.monitor.end();
  rig.idle(kPeriod);

  const lc::LoopStats loop = rig.monitor.stats();
  EXPECT_EQ(loop.blocks, 1u);
  EXPECT_EQ(loop.max_duration, ms(160));
  EXPECT_EQ(loop.clock_steps_back, 0u);
  const std::vector<BlockRecord> rs = rig.of(1);
  ASSERT_EQ(rs.size(), 2u);
  // Polls at 110 ms (the clock reads 70: it stands still) and 120 ms (80: 10 ms on).
  EXPECT_EQ(rs[0].phase, Phase::in_progress);
  EXPECT_EQ(rs[0].duration_ticks, ms(110));
  EXPECT_EQ(rs[1].phase, Phase::final);
  EXPECT_EQ(rs[1].flags, 0u);
  EXPECT_EQ(rs[1].start, begin);
  EXPECT_EQ(rs[1].end, later(begin, ms(160)));
  EXPECT_EQ(rs[1].duration_ticks, ms(160)) << "the loop's measure, not the watchdog's polls";
  EXPECT_EQ(rs[1].samples_missed, 0u);

  const tick_t next = rig.block(ms(150));
  rig.expect_normal_block(2, next, 150);
  rig.expect_accounting();
}

// A clock set forward during a dispatch (by less than half the wrap) cannot be told from time:
// that one dispatch is measured longer by the step, a block when it passes the threshold and a
// hang when it passes the hang limit, and the dispatches after it are measured as before. The
// first step crosses the counter's wrap in the before_wrap run.
TEST_P(FaultTest, ClockStepForwardLengthensOnlyTheDispatchItHappensIn) {
  ASSERT_TRUE(rig.start());
  rig.idle_until(kWrapOffset - ms(100));
  const tick_t begin = rig.now();
  rig.monitor.begin(kWork);
  rig.compute(ms(30));
  rig.time.step_forward(ms(200));  // the clock reads 70 ms before the wrap, then 130 ms after it
  rig.compute(ms(30));
  rig.monitor.end();
  rig.idle(kPeriod);

  std::vector<BlockRecord> rs = rig.of(1);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].phase, Phase::in_progress);
  EXPECT_EQ(rs[0].duration_ticks, ms(240));  // the poll at 40 ms reads 240
  EXPECT_EQ(rs[1].phase, Phase::final);
  EXPECT_EQ(rs[1].start, begin);
  EXPECT_EQ(rs[1].duration_ticks, ms(260));
  EXPECT_EQ(rs[1].end, later(begin, ms(260)));

  // A short dispatch after the step: nothing to report.
  rig.block(ms(50));
  EXPECT_EQ(rig.reports.size(), 2u);

  // A step past the hang limit: a hang, as the clock says.
  rig.align();
  rig.monitor.begin(kWork);
  rig.compute(ms(30));
  rig.time.step_forward(ms(2000));
  rig.compute(ms(30));
  rig.monitor.end();
  rig.idle(kPeriod);
  rs = rig.of(3);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].phase, Phase::in_progress);
  EXPECT_EQ(rs[1].phase, Phase::hang);
  EXPECT_EQ(rs[1].duration_ticks, ms(2040));
  EXPECT_EQ(rs[2].phase, Phase::final);
  EXPECT_EQ(rs[2].flags, lc::kFlagHung);
  EXPECT_EQ(rs[2].duration_ticks, ms(2060));

  const tick_t next = rig.block(ms(150));
  rig.expect_normal_block(4, next, 150);
  const lc::LoopStats loop = rig.monitor.stats();
  EXPECT_EQ(loop.blocks, 3u);
  EXPECT_EQ(loop.hangs, 1u);
  EXPECT_EQ(loop.clock_steps_back, 0u);
  rig.expect_accounting();
}

// A clock that stops: no time passes for loopcanary while it stands still. A dispatch that
// runs 5 s of real time, 4.93 s of it with the clock stopped, is measured 70 ms: no block, no
// hang (a real hang then goes unseen). Polls go on; once the clock runs again, so does
// measuring, from the value it stopped at.
TEST_P(FaultTest, StoppedClockHidesTheTimeItStoodStill) {
  ASSERT_TRUE(rig.start());
  rig.idle_until(kWrapOffset - ms(100));
  const std::uint32_t polls = rig.watchdog.stats().polls;
  rig.monitor.begin(kWork);
  rig.compute(ms(50));
  rig.time.set_stopped(true);
  rig.compute(ms(4930));
  rig.time.set_stopped(false);
  rig.compute(ms(20));
  rig.monitor.end();
  rig.idle(kPeriod);

  EXPECT_TRUE(rig.reports.empty());
  const lc::LoopStats loop = rig.monitor.stats();
  EXPECT_EQ(loop.dispatches, 1u);
  EXPECT_EQ(loop.blocks, 0u);
  EXPECT_EQ(loop.hangs, 0u);
  EXPECT_EQ(loop.max_duration, ms(70));
  EXPECT_EQ(rig.watchdog.stats().polls - polls, 501u) << "the watchdog polled all along";

  const tick_t next = rig.block(ms(150));
  rig.expect_normal_block(2, next, 150);
  rig.expect_accounting();
}

// ---- The watchdog's polls ------------------------------------------------------------------

// A poll 2 s late sees a dispatch that began at the poll before: it arms, samples, and reports
// it in progress and hung at once; the final record has the exact duration. The sample
// intervals the late poll skipped were never attempted: not counted as missed.
TEST_P(FaultTest, PollLateBySecondsReportsAtOnceAndFinalisesExactly) {
  ASSERT_TRUE(rig.start());
  rig.idle_until(kWrapOffset - ms(100));
  rig.scheduler->delay_next_poll(ms(2000));
  const tick_t begin = rig.now();
  rig.monitor.begin(kWork);
  rig.compute(ms(3000));
  rig.monitor.end();
  rig.idle(kPeriod);

  const std::vector<BlockRecord> rs = rig.of(1);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].phase, Phase::in_progress);
  EXPECT_EQ(rs[0].duration_ticks, ms(2010));
  EXPECT_EQ(rs[0].samples_taken, 1u);
  EXPECT_EQ(rs[1].phase, Phase::hang);
  EXPECT_EQ(rs[1].duration_ticks, ms(2010));
  EXPECT_EQ(rs[1].end, later(begin, ms(2010)));
  EXPECT_EQ(rs[2].phase, Phase::final);
  EXPECT_EQ(rs[2].flags, lc::kFlagHung);
  EXPECT_EQ(rs[2].start, begin);
  EXPECT_EQ(rs[2].duration_ticks, ms(3000));
  EXPECT_EQ(rs[2].samples_taken, (3000u - 2010u) / 10u + 1u);
  EXPECT_EQ(rs[2].samples_missed, 0u);
  EXPECT_EQ(rs[2].window_ticks, ms(3000 - 2010));

  // Late again, by 1 s, while the loop ends two blocks more than its note ring holds: the
  // first kNoteCapacity are reported (unwatched: no poll saw them), the rest counted.
  constexpr std::uint32_t kOver = 2;
  constexpr std::uint32_t kBurst = static_cast<std::uint32_t>(lc::kNoteCapacity) + kOver;
  rig.align();
  rig.scheduler->delay_next_poll(ms(1000));
  for (std::uint32_t i = 0; i < kBurst; ++i) {
    rig.monitor.begin(kWork);
    rig.compute(ms(120));
    rig.monitor.end();
  }
  rig.align();  // the late poll
  const lc::WatchdogStats dog = rig.watchdog.stats();
  EXPECT_EQ(dog.notes_dropped, kOver);
  EXPECT_EQ(rig.monitor.stats().notes_dropped, kOver);
  ASSERT_EQ(rig.reports.size(), 3u + lc::kNoteCapacity);
  for (std::size_t i = 3; i < rig.reports.size(); ++i) {
    SCOPED_TRACE("report " + std::to_string(i));
    EXPECT_EQ(rig.reports[i].phase, Phase::final);
    EXPECT_EQ(rig.reports[i].flags, lc::kFlagUnwatched);
    EXPECT_EQ(rig.reports[i].duration_ticks, ms(120));
    EXPECT_EQ(rig.reports[i].notes_dropped, kOver);
  }

  const tick_t next = rig.block(ms(150));
  rig.expect_normal_block(2u + kBurst, next, 150);
  EXPECT_EQ(rig.reports.back().notes_dropped, kOver) << "every later record shows the loss";
  rig.expect_accounting();
}

// The watchdog stops for 2 s and resumes. Meanwhile a dispatch it had reported in progress
// ends, another block begins and ends, and a third dispatch runs into a hang. The first poll
// after the resume reports all three: the first final with the loop's own end, the second
// unwatched, the third in progress and hung at once.
TEST_P(FaultTest, PollingStoppedAndResumedReportsWhatHappenedMeanwhile) {
  ASSERT_TRUE(rig.start());
  rig.idle_until(kWrapOffset - ms(100));
  const tick_t a = rig.now();
  rig.monitor.begin(kWork);
  rig.compute(ms(150));  // reported in progress at 110 ms, sampled through 150 ms
  rig.scheduler->stop_polling();
  rig.compute(ms(100));
  rig.monitor.end();  // a: 250 ms
  rig.idle(ms(20));
  const tick_t b = rig.now();
  rig.monitor.begin(kWork);
  rig.compute(ms(120));
  rig.monitor.end();  // b: 120 ms
  rig.idle(ms(10));
  const tick_t c = rig.now();
  rig.monitor.begin(kWork);
  rig.compute(ms(1500));
  rig.scheduler->resume_polling();
  rig.compute(ms(100));  // the poll at once: c has run 1.5 s
  rig.monitor.end();     // c: 1.6 s
  rig.idle(kPeriod);

  std::vector<BlockRecord> rs = rig.of(1);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].phase, Phase::in_progress);
  EXPECT_EQ(rs[1].phase, Phase::final);
  EXPECT_EQ(rs[1].flags, 0u);
  EXPECT_EQ(rs[1].start, a);
  EXPECT_EQ(rs[1].duration_ticks, ms(250));
  EXPECT_EQ(rs[1].samples_taken, samples_in(150));

  rs = rig.of(2);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].phase, Phase::final);
  EXPECT_EQ(rs[0].flags, lc::kFlagUnwatched);
  EXPECT_EQ(rs[0].start, b);
  EXPECT_EQ(rs[0].duration_ticks, ms(120));

  rs = rig.of(3);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].phase, Phase::in_progress);
  EXPECT_EQ(rs[0].duration_ticks, ms(1500));
  EXPECT_EQ(rs[1].phase, Phase::hang);
  EXPECT_EQ(rs[2].phase, Phase::final);
  EXPECT_EQ(rs[2].flags, lc::kFlagHung);
  EXPECT_EQ(rs[2].start, c);
  EXPECT_EQ(rs[2].duration_ticks, ms(1600));
  EXPECT_EQ(rs[2].samples_taken, 11u);  // at the resume, then every 10 ms through 1.6 s

  EXPECT_EQ(rig.monitor.stats().blocks, 3u);
  EXPECT_EQ(rig.monitor.stats().hangs, 1u);
  const tick_t next = rig.block(ms(150));
  rig.expect_normal_block(4, next, 150);
  rig.expect_accounting();
}

// ---- Stack samples -------------------------------------------------------------------------

// The first five captures of a block fail (no program counter, no scope): five missed samples,
// in the record and in the statistics; the sampling goes on and the next block misses none.
TEST_P(FaultTest, CapturesFailingForAWhileAreMissedSamplesAndSamplingRecovers) {
  ASSERT_TRUE(rig.start());
  rig.idle_until(kWrapOffset - ms(100));
  constexpr std::uint32_t kFailing = 5;
  rig.machine.fail_captures(kFailing);
  const tick_t begin = rig.block(ms(150));

  std::vector<BlockRecord> rs = rig.of(1);
  ASSERT_EQ(rs.size(), 2u);
  const BlockRecord& r = rs[1];
  EXPECT_EQ(r.samples_missed, kFailing);
  EXPECT_EQ(r.samples_taken, samples_in(150) - kFailing);
  ASSERT_GT(r.sample_count, 0u);
  EXPECT_EQ(r.samples[0].at, later(begin, ms(30 + 10 * kFailing))) << "the first capture after the failures";
  EXPECT_EQ(r.samples[0].pc_count, 1u);
  EXPECT_EQ(r.samples[0].frames[0], kPc);
  EXPECT_EQ(rig.watchdog.stats().samples_missed, kFailing);
  EXPECT_EQ(rig.machine.captures_failed(), kFailing);

  const tick_t next = rig.block(ms(150));
  rig.expect_normal_block(2, next, 150);
  EXPECT_EQ(rig.watchdog.stats().samples_missed, kFailing);
  rig.expect_accounting();
}

// ---- The records' consumer and the record ring ---------------------------------------------

// The consumer's writes fail for a while: the records it popped are lost to it and counted
// (failed), the ring and the report numbers carry on, and later records are written.
TEST_P(FaultTest, ConsumerWritesFailingAreCountedAndLaterRecordsGoThrough) {
  ASSERT_TRUE(rig.start());
  rig.idle_until(kWrapOffset - ms(100));
  rig.sink.fail_writes(3);
  for (int i = 0; i < 3; ++i) rig.block(ms(150));  // two reports each
  EXPECT_EQ(rig.sink.drain(rig.watchdog), 3u);
  EXPECT_EQ(rig.sink.failed(), 3u);
  EXPECT_EQ(rig.sink.written(), 3u);
  ASSERT_EQ(rig.written.size(), 3u);
  EXPECT_EQ(rig.written[0].report, 4u) << "reports 1..3 failed";

  const tick_t next = rig.block(ms(150));
  EXPECT_EQ(rig.sink.drain(rig.watchdog), 2u);
  EXPECT_EQ(rig.sink.last_report(), 8u);
  EXPECT_EQ(rig.written.back().duration_ticks, ms(150));
  rig.expect_normal_block(4, next, 150);
  EXPECT_EQ(rig.watchdog.stats().records_dropped, 0u);
  rig.expect_accounting();
}

// Nobody pops: the ring (4 records) fills and every further report is counted in
// records_dropped, carried by the records from then on and visible as a gap in the report
// numbers. Once the consumer pops again, records flow.
TEST_P(FaultTest, StalledConsumerFillsTheRecordRingAndEveryDropIsCounted) {
  Rig<4> small{GetParam()};
  ASSERT_TRUE(small.start());
  small.idle_until(kWrapOffset - ms(100));
  small.sink.set_stalled(true);
  for (int i = 0; i < 5; ++i) small.block(ms(150));
  EXPECT_EQ(small.sink.drain(small.watchdog), 0u);
  lc::WatchdogStats dog = small.watchdog.stats();
  EXPECT_EQ(dog.reports, 10u);
  EXPECT_EQ(small.watchdog.pending(), 4u);
  EXPECT_EQ(dog.records_dropped, 6u);
  small.expect_accounting();

  small.sink.set_stalled(false);
  EXPECT_EQ(small.sink.drain(small.watchdog), 4u);
  ASSERT_EQ(small.written.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) EXPECT_EQ(small.written[i].report, i + 1u);

  const tick_t next = small.block(ms(150));
  EXPECT_EQ(small.sink.drain(small.watchdog), 2u);
  ASSERT_EQ(small.written.size(), 6u);
  EXPECT_EQ(small.written[4].report, 11u) << "reports 5..10 were dropped";
  EXPECT_EQ(small.written[4].records_dropped, 6u);
  EXPECT_EQ(small.written[5].duration_ticks, ms(150));
  small.expect_normal_block(6, next, 150);
  dog = small.watchdog.stats();
  EXPECT_EQ(dog.records_dropped, 6u);
  small.expect_accounting();
}

}  // namespace
