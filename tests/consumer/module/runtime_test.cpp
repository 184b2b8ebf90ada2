// SPDX-License-Identifier: MIT
// The module's handlers on the simulator runtime in a test, in virtual time: timers feed them,
// and what the loop measured follows exactly from the costs the test gives.
#include <gtest/gtest.h>

#include "loopcanary/loopcanary.hpp"
#include "sensor_log.hpp"
#include "simrt/runtime.hpp"
#include "simrt/virtual_board.hpp"

namespace {

namespace lc = loopcanary;
namespace simrt = loopcanary::simrt;

TEST(SensorLogOnRuntime, FlushesEveryPageInVirtualTime) {
  simrt::VirtualBoard board;
  lc::Monitor monitor;
  lc::StaticWatchdog<1, 8> watchdog;
  lc::MonitorConfig config;
  config.tick_hz = board.tick_hz();
  config.threshold_us = 5'000;
  config.sample_interval_us = 1'000;
  config.context = board.loop_context();
  ASSERT_EQ(monitor.init(config), lc::Status::ok);
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}, board.hal()), lc::Status::ok);
  ASSERT_EQ(watchdog.add(monitor), lc::Status::ok);

  const sensor_log::Costs costs;
  sensor_log::Logger logger(board, monitor, costs);
  simrt::Runtime runtime(board, monitor);
  ASSERT_TRUE(runtime.init(simrt::RuntimeConfig{sensor_log::kTypes, sensor_log::kTypeCount, &logger}));
  const int flush_timer = runtime.add_timer(sensor_log::kFlush, 100'000);  // after init(): it names a type
  ASSERT_GE(flush_timer, 0);
  simrt::BoardStart start;
  start.watchdog = &watchdog;
  ASSERT_EQ(board.start(start), simrt::BoardError::none);

  runtime.start_timer(static_cast<simrt::TimerId>(flush_timer), 100'000);
  for (std::uint32_t i = 0; i < 30; ++i) runtime.post(sensor_log::kSample, i);
  ASSERT_TRUE(runtime.run_for(250'000));  // the 30 readings, then flushes at 100 ms and 200 ms
  board.finish();

  EXPECT_EQ(logger.pages(), 2u);
  EXPECT_EQ(runtime.health(sensor_log::kSample).dispatches, 30u);
  EXPECT_EQ(runtime.health(sensor_log::kFlush).dispatches, 2u);
  // The longest dispatch is the first flush: the CRC over 30 readings and the flash program.
  const lc::LoopStats stats = monitor.stats();
  EXPECT_EQ(stats.max_duration, 30 * costs.crc_us_per_reading + costs.flash_program_us);
  EXPECT_EQ(stats.blocks, 0u);
}

}  // namespace
