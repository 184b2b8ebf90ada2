// SPDX-License-Identifier: MIT
// A build without the duration histogram (LOOPCANARY_HISTOGRAM=0; this test compiles the core's
// monitor on its own with it, see tests/CMakeLists.txt): the histogram takes no byte,
// statistics and blocks work as before, and the histogram reads as all zero.
#include <cstdint>
#include <type_traits>

#include <gtest/gtest.h>

#include "loopcanary/monitor.hpp"

static_assert(LOOPCANARY_HISTOGRAM == 0, "this test must be built with LOOPCANARY_HISTOGRAM=0");

namespace {

namespace lc = loopcanary;

// Without the histogram its base is empty, so it takes no byte of the Monitor (empty base).
static_assert(std::is_empty_v<lc::detail::HistogramCounters<false>>, "no histogram, no bytes");
static_assert(sizeof(lc::detail::HistogramCounters<true>) == lc::kHistogramBuckets * 4u,
              "the histogram is 32 counters of 4 bytes");

constexpr lc::Event kWork{"work"};

TEST(NoHistogram, StatisticsAndBlocksWithoutTheHistogram) {
  lc::Monitor monitor;
  lc::MonitorConfig config;
  config.tick_hz = 1'000'000;
  config.threshold_us = 1'000;
  config.sample_interval_us = 100;
  ASSERT_EQ(monitor.init(config), lc::Status::ok);
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
