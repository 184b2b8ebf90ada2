// SPDX-License-Identifier: MIT
// The module's handlers under test with block budgets, in virtual time: a BlockGuard runs the
// test's loop on a VirtualBoard, so every duration is exactly what the handlers' simulated
// costs add up to, and a budget test never flakes.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary_testing/gtest.hpp"
#include "sensor_log.hpp"
#include "simrt/runtime.hpp"
#include "simrt/virtual_board.hpp"

namespace {

namespace lc = loopcanary;
namespace simrt = loopcanary::simrt;
namespace lct = loopcanary::testing;

// The module on the runtime under a guard: `readings` samples, then one flush at 100 ms.
struct Rig {
  explicit Rig(const sensor_log::Costs& costs, lct::GuardConfig config, lct::FailureCallback on_failure = {})
      : guard(board, std::move(config), std::move(on_failure)), logger(board, guard.monitor(), costs),
        runtime(board, guard.monitor()) {}

  bool run(std::uint32_t readings) {
    if (!runtime.init(simrt::RuntimeConfig{sensor_log::kTypes, sensor_log::kTypeCount, &logger})) return false;
    const int flush = runtime.add_timer(sensor_log::kFlush, 0);
    if (flush < 0 || !guard.start()) return false;
    for (std::uint32_t i = 0; i < readings; ++i) runtime.post(sensor_log::kSample, i);
    runtime.start_timer(static_cast<simrt::TimerId>(flush), 100'000);
    return runtime.run_for(150'000);
  }

  simrt::VirtualBoard board;
  lct::BlockGuard guard;
  sensor_log::Logger logger;
  simrt::Runtime runtime;
};

// Every handler within budget: the loop's 5 ms for a reading, the flush's own 20 ms.
TEST(SensorLogBudget, HandlersWithinBudgetPass) {
  lct::GuardConfig config;
  config.budget_us = 5'000;
  Rig rig(sensor_log::Costs{}, config);
  ASSERT_TRUE(rig.run(30));
  LOOPCANARY_EXPECT_NO_BLOCKS(rig.guard);
  EXPECT_EQ(rig.logger.pages(), 1u);
  EXPECT_EQ(rig.guard.monitor().stats().dispatches, 31u);
}

// A slow flash part: the flush takes 30 x 10 us of CRC plus 25 ms of programming, exactly
// 25.300 ms, over its 20 ms budget. The guard fails the test once, and the report names the
// handler's function, the event, the cause and the scope.
TEST(SensorLogBudget, FlushOverItsBudgetFailsWithTheReport) {
  sensor_log::Costs costs;
  costs.flash_program_us = 25'000;
  lct::GuardConfig config;
  config.budget_us = 5'000;
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter capture(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    Rig rig(costs, config, lct::gtest_failure());
    ASSERT_TRUE(rig.run(30));
    EXPECT_EQ(rig.guard.finish(), 1u);
    ASSERT_EQ(rig.guard.failures().size(), 1u);
    EXPECT_EQ(rig.guard.failures()[0].duration_us, 25'300u);
    EXPECT_EQ(rig.guard.failures()[0].budget_us, 20'000u);
  }
  ASSERT_EQ(failures.size(), 1) << "the guard reports the one dispatch over budget, nothing else";
  const ::testing::TestPartResult& failure = failures.GetTestPartResult(0);
  EXPECT_TRUE(failure.nonfatally_failed());
  const std::string message = failure.message();
  EXPECT_NE(message.find("dispatch 31 of event \"flush\" on loop \"test\" ran 25.300 ms (virtual time), over the "
                         "event's budget of 20.000 ms"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("cause: waiting"), std::string::npos) << message;
  // The culprit over every sample of the dispatch: the flash scope it spent them all in.
  EXPECT_NE(message.find("culprit: flash (50/50 samples)"), std::string::npos) << message;
  EXPECT_NE(message.find("sensor_log::Logger::on_flush("), std::string::npos) << "the symbolised stack\n" << message;
}

// A budget per scope: the flash programming may take 10 ms of the flush. A 25 ms flash part is
// over it although the flush's own 30 ms budget holds.
TEST(SensorLogBudget, ScopeOverItsBudgetFails) {
  sensor_log::Costs costs;
  costs.flash_program_us = 25'000;
  lct::GuardConfig config;
  config.budget_us = 30'000;
  config.scopes = {{"flash", 10'000}};
  config.sample_interval_us = 500;
  Rig rig(costs, config);
  ASSERT_TRUE(rig.run(0));
  ASSERT_EQ(rig.guard.finish(), 1u) << rig.guard.report();
  const lct::Failure& failure = rig.guard.failures()[0];
  EXPECT_EQ(failure.measure, "scope flash");
  EXPECT_STREQ(failure.event, "flush");
  // Sampled: every 500 us over the 25 ms in the scope.
  EXPECT_NEAR(static_cast<double>(failure.duration_us), 25'000.0, 500.0);
  EXPECT_NE(failure.report.find("over its scope's budget of 10.000 ms"), std::string::npos) << failure.report;
}

// Handlers called by the test itself, through the guard's dispatch(): the loop's budget holds
// for 1 ms readings; a 1.5 ms reading is over it by exactly 0.5 ms.
TEST(SensorLogBudget, DispatchThroughTheGuard) {
  simrt::VirtualBoard board;
  lct::GuardConfig config;
  config.budget_us = 1'000;
  lct::BlockGuard guard(board, config);
  sensor_log::Costs costs;
  costs.filter_us = 1'000;
  sensor_log::Logger logger(board, guard.monitor(), costs);
  ASSERT_TRUE(guard.start()) << guard.error();
  for (std::uint32_t i = 0; i < 5; ++i) guard.dispatch(sensor_log::kTypes[sensor_log::kSample].event, [&] { logger.on_sample(i); });
  sensor_log::Costs slow = costs;
  slow.filter_us = 1'500;
  sensor_log::Logger slow_logger(board, guard.monitor(), slow);
  guard.dispatch(sensor_log::kTypes[sensor_log::kSample].event, [&] { slow_logger.on_sample(0); });
  ASSERT_EQ(guard.finish(), 1u);
  EXPECT_EQ(guard.failures()[0].record.dispatch, 6u);
  EXPECT_EQ(guard.failures()[0].duration_us, 1'500u);
  EXPECT_EQ(guard.failures()[0].function, "filter");  // the scope on_sample ran its filter in
}

// A flush that holds the loop past the hang limit (5 s) is reported as a hang, then ends: one
// failure, from its final record (flagged as hung), exactly 6 s long.
TEST(SensorLogBudget, HungFlushFailsOnce) {
  sensor_log::Costs costs;
  costs.flash_program_us = 6'000'000;
  lct::GuardConfig config;
  config.budget_us = 5'000;
  Rig rig(costs, config);
  ASSERT_TRUE(rig.run(0));
  ASSERT_EQ(rig.guard.finish(), 1u) << rig.guard.report();
  const lct::Failure& failure = rig.guard.failures()[0];
  EXPECT_EQ(failure.record.phase, lc::Phase::final);
  EXPECT_NE(failure.record.flags & lc::kFlagHung, 0u);
  EXPECT_EQ(failure.duration_us, 6'000'000u);
  bool hang_reported = false;
  for (const lc::BlockRecord& record : rig.guard.records()) hang_reported |= record.phase == lc::Phase::hang;
  EXPECT_TRUE(hang_reported);
}

TEST(SensorLogBudget, ConfigurationOutOfRangeIsRefused) {
  simrt::VirtualBoard board;
  lct::GuardConfig config;
  config.budget_us = 1'000;
  config.scopes = {{"flash", 6'000'000}};
  lct::BlockGuard guard(board, config);
  EXPECT_FALSE(guard.start());
  EXPECT_STREQ(guard.error(), "GuardConfig::scopes: a scope budget is outside 1..5'000'000");
}

}  // namespace
