// SPDX-License-Identifier: MIT
// The module's handlers under test with block budgets, in real time: a BlockGuard on a
// RealBoard (the Linux port) judges each dispatch by the loop thread's CPU time, so a test on
// a loaded machine is not failed for the time it spent descheduled; wall time on request.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <atomic>
#include <regex>
#include <string>
#include <thread>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary_testing/gtest.hpp"
#include "sensor_log.hpp"
#include "simrt/real_board.hpp"

namespace {

namespace lc = loopcanary;
namespace simrt = loopcanary::simrt;
namespace lct = loopcanary::testing;

const lc::Event& kVerify = sensor_log::kTypes[sensor_log::kVerify].event;
const lc::Event& kFlush = sensor_log::kTypes[sensor_log::kFlush].event;

// The loop is the test's thread: RealBoard::init attaches it.
class RealTime : public ::testing::Test {
 protected:
  void SetUp() override {
    char message[256];
    ASSERT_TRUE(board.init(lc::port_linux::PlatformConfig{}, message, sizeof message)) << message;
  }
  simrt::RealBoard board;
};

// Keeps a core busy while it lives: the test's loop shares the machine with it.
class BusyCore {
 public:
  BusyCore() : thread_([this] {
    while (!stop_.load(std::memory_order_relaxed)) spins_.fetch_add(1, std::memory_order_relaxed);
  }) {}
  ~BusyCore() {
    stop_.store(true);
    thread_.join();
  }
  std::uint64_t spins() const { return spins_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> spins_{0};
  std::thread thread_;
};

// 20 dispatches of 40 checks of a page (about 1.5 ms of CPU each, 2.6 ms in the sanitize
// build) against a 20 ms CPU-time budget, with the other core kept busy: descheduled time does
// not count.
TEST_F(RealTime, VerifyWithinItsCpuBudgetWithTheOtherCoreBusy) {
  BusyCore busy;
  lct::GuardConfig config;
  config.budget_us = 20'000;
  lct::BlockGuard guard(board, config);
  sensor_log::Logger logger(board, guard.monitor(), sensor_log::Costs{});
  ASSERT_TRUE(guard.start()) << guard.error();
  for (int i = 0; i < 20; ++i) guard.dispatch(kVerify, [&] { logger.on_verify(40); });
  LOOPCANARY_EXPECT_NO_BLOCKS(guard);
  EXPECT_EQ(guard.monitor().stats().dispatches, 20u);
  EXPECT_GT(busy.spins(), 0u) << "the other core was kept busy";
}

// 500 checks of a page (about 18 ms of CPU, 33 ms in the sanitize build) against a 2 ms
// budget: the guard fails the test, and the report names the handler's function, the event
// and the cause.
TEST_F(RealTime, VerifyOverItsCpuBudgetFailsWithTheReport) {
  lct::GuardConfig config;
  config.budget_us = 2'000;
  ::testing::TestPartResultArray failures;
  std::uint64_t cpu_us = 0;
  {
    ::testing::ScopedFakeTestPartResultReporter capture(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    lct::BlockGuard guard(board, config, lct::gtest_failure());
    sensor_log::Logger logger(board, guard.monitor(), sensor_log::Costs{});
    ASSERT_TRUE(guard.start()) << guard.error();
    guard.dispatch(kVerify, [&] { logger.on_verify(500); });
    ASSERT_EQ(guard.finish(), 1u);
    cpu_us = guard.failures()[0].duration_us;
  }
  EXPECT_GT(cpu_us, 2'000u);
  ASSERT_EQ(failures.size(), 1);
  const std::string message = failures.GetTestPartResult(0).message();
  EXPECT_TRUE(std::regex_search(message, std::regex("dispatch 1 of event \"verify\" on loop \"test\" ran "
                                                    "[0-9]+\\.[0-9]{3} ms \\(CPU time\\), over the loop's budget "
                                                    "of 2\\.000 ms")))
      << message;
  // CPU-bound: running, or starved when the machine's other work took the CPU from it.
  EXPECT_TRUE(std::regex_search(message, std::regex("cause: (running|starved)\n"))) << message;
  EXPECT_TRUE(std::regex_search(message, std::regex("culprit: verify \\([0-9]+/[0-9]+ samples\\)\n"))) << message;
}

// A flush that sleeps 30 ms (the flash program, off the CPU): within a 10 ms CPU-time budget,
// over the same budget in wall time.
TEST_F(RealTime, SleepCountsInWallTimeOnly) {
  sensor_log::Costs costs;
  costs.flash_program_us = 30'000;
  lct::GuardConfig config;
  config.budget_us = 10'000;
  {
    lct::BlockGuard guard(board, config);
    sensor_log::Logger logger(board, guard.monitor(), costs);
    ASSERT_TRUE(guard.start()) << guard.error();
    guard.dispatch(kFlush, [&] { logger.on_flush(); });
    LOOPCANARY_EXPECT_NO_BLOCKS(guard);
  }
  simrt::RealBoard wall_board;
  char message[256];
  ASSERT_TRUE(wall_board.init(lc::port_linux::PlatformConfig{}, message, sizeof message)) << message;
  config.wall_time = true;
  config.budget_us = 25'000;  // kFlush's own threshold (20 ms) is below: the loop's applies
  lct::BlockGuard guard(wall_board, config);
  sensor_log::Logger logger(wall_board, guard.monitor(), costs);
  ASSERT_TRUE(guard.start()) << guard.error();
  guard.dispatch(kFlush, [&] { logger.on_flush(); });
  ASSERT_EQ(guard.finish(), 1u);
  const lct::Failure& failure = guard.failures()[0];
  EXPECT_EQ(failure.measure, "wall time");
  EXPECT_GE(failure.duration_us, 30'000u);
  EXPECT_EQ(failure.record.cause, lc::Cause::waiting) << failure.report;
}

}  // namespace
