// SPDX-License-Identifier: MIT
// A build without the optional per-loop features (LOOPCANARY_HISTOGRAM=0, LOOPCANARY_MAX_STAGES=0,
// LOOPCANARY_SCOPE_DEPTH=0, as the minimal profile has them; this test compiles the core's monitor
// on its own with them, see tests/CMakeLists.txt): neither histogram nor stages take a byte,
// statistics and blocks work as they do with them, the histogram reads as all zero, every stage
// mark is counted as dropped, and scope pushes and pops do nothing.
#include <cstdint>
#include <type_traits>

#include <gtest/gtest.h>

#include "loopcanary/monitor.hpp"

static_assert(LOOPCANARY_HISTOGRAM == 0, "this test must be built with LOOPCANARY_HISTOGRAM=0");
static_assert(LOOPCANARY_MAX_STAGES == 0, "this test must be built with LOOPCANARY_MAX_STAGES=0");
static_assert(LOOPCANARY_SCOPE_DEPTH == 0, "this test must be built with LOOPCANARY_SCOPE_DEPTH=0");

namespace {

namespace lc = loopcanary;

// Without the histogram its base is empty, so it takes no byte of the Monitor (empty base).
static_assert(std::is_empty_v<lc::detail::HistogramCounters<false>>, "no histogram, no bytes");
// With it, 32 counters of 4 bytes; where it counts each duration at the next end (x86), a
// 33rd for the count before the first duration, and the pending bucket.
static_assert(sizeof(lc::detail::HistogramCounters<true>) ==
                  (lc::kHistogramBuckets + (lc::detail::kHistogramCountsLater ? 2u : 0u)) * 4u,
              "the histogram is 32 counters of 4 bytes (and two words on x86)");

// Without stages the monitor's board and the notes' marks are empty: no byte either.
static_assert(std::is_empty_v<lc::detail::StageBoard<0>>, "no stages, no bytes in the monitor");
struct PlainNote {
  std::uint32_t seq;
  lc::tick_t begin;
  lc::tick_t end;
  const lc::Event* event;
};
static_assert(sizeof(lc::BlockNote) == sizeof(PlainNote), "no stages, no bytes in a note");

constexpr lc::Event kWork{"work"};

// The tests' monitor configuration: 1 MHz ticks, blocks from 1 ms, a sample every 100 us.
lc::MonitorConfig monitor_config() {
  lc::MonitorConfig config;
  config.tick_hz = 1'000'000;
  config.threshold_us = 1'000;
  config.sample_interval_us = 100;
  return config;
}

TEST(NoStages, MarksAreCountedAsDroppedAndNotesCarryNone) {
  lc::Monitor monitor;
  ASSERT_EQ(monitor.init(monitor_config()), lc::Status::ok);
  monitor.begin_at(kWork, 0);
  monitor.stage_at("input", 10);
  monitor.stage_at("output", 20);
  lc::StampSnapshot snap;
  ASSERT_TRUE(monitor.snapshot(snap));
  lc::StageMark marks[1];
  std::size_t count = 99;
  EXPECT_TRUE(monitor.stage_snapshot(snap.seq, marks, count));
  EXPECT_EQ(count, 0u);
  monitor.end_at(5'000);  // a block: its note has no marks
  EXPECT_EQ(monitor.stats().stages_dropped, 2u);
  EXPECT_EQ(monitor.stats().blocks, 1u);
}

TEST(NoScopes, PushAndPopDoNothingAndSamplesReadNone) {
  lc::Monitor monitor;
  ASSERT_EQ(monitor.init(monitor_config()), lc::Status::ok);
  monitor.begin_at(kWork, 0);
  monitor.push_scope("outer");
  monitor.push_scope("inner");
  const char* names[1] = {"unset"};
  std::size_t count = 99;
  EXPECT_TRUE(monitor.scope_snapshot(names, 1, count));
  EXPECT_EQ(count, 0u);
  monitor.pop_scope();
  monitor.pop_scope();
  monitor.pop_scope();  // one more than pushed: nothing counted either
  monitor.end_at(5'000);
  const lc::LoopStats s = monitor.stats();
  EXPECT_EQ(s.scope_overflows, 0u);
  EXPECT_EQ(s.scope_underflows, 0u);
  EXPECT_EQ(s.blocks, 1u);
}

TEST(NoHistogram, StatisticsAndBlocksWithoutTheHistogram) {
  lc::Monitor monitor;
  ASSERT_EQ(monitor.init(monitor_config()), lc::Status::ok);
  const lc::tick_t start = 0xFFFF'FF00u;  // across the tick wrap
  monitor.begin_at(kWork, start);
  monitor.end_at(start + 500u);
  monitor.begin_at(kWork, start + 600u);
  monitor.end_at(start + 2'600u);  // 2 ms: a block
  const lc::LoopStats s = monitor.stats();
  EXPECT_FALSE(s.has_histogram);
  EXPECT_EQ(s.dispatches, 2u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.max_duration, 2'000u);
  EXPECT_EQ(s.busy_ticks, 2'500u);
  for (std::uint32_t count : s.histogram) EXPECT_EQ(count, 0u);
}

}  // namespace
