// SPDX-License-Identifier: MIT
// The watchdog thread: start/stop, its period on absolute deadlines, errors, clean shutdown.
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "linux_watchdog_thread.hpp"
#include "loopcanary/loopcanary.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

std::int64_t monotonic_us() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000 + t.tv_nsec / 1000;
}

// Counts polls and lets the test wait for the n-th one.
struct PollCounter {
  std::mutex mutex;
  std::condition_variable cv;
  std::uint32_t polls = 0;
  static void after_poll(void* self) {
    auto* c = static_cast<PollCounter*>(self);
    {
      std::lock_guard<std::mutex> lock(c->mutex);
      ++c->polls;
    }
    c->cv.notify_all();
  }
  bool wait_for(std::uint32_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return polls >= n; });
  }
};

}  // namespace

TEST(LinuxWatchdogThread, PollsOnItsGridAndStopsCleanly) {
  lc::StaticWatchdog<1, 4> watchdog;
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}), lc::Status::ok);
  PollCounter counter;
  lx::WatchdogThread thread;
  lx::WatchdogThreadConfig config;
  config.period_us = 2'000;
  config.after_poll = &PollCounter::after_poll;
  config.after_poll_context = &counter;
  const std::int64_t start = monotonic_us();
  ASSERT_TRUE(thread.start(watchdog, config).ok());
  EXPECT_TRUE(thread.running());
  ASSERT_TRUE(counter.wait_for(100));
  const std::int64_t elapsed = monotonic_us() - start;
  thread.stop();
  EXPECT_FALSE(thread.running());
  const lx::WatchdogThreadStats s = thread.stats();
  EXPECT_EQ(s.polls, watchdog.stats().polls);
  // Absolute deadlines: polls plus skipped periods track elapsed time / period, without the
  // drift that relative sleeps accumulate (each poll's cost and wake-up latency).
  const double grid = static_cast<double>(elapsed) / config.period_us;
  EXPECT_NEAR(static_cast<double>(s.polls + s.overruns), grid, grid * 0.1 + 3) << "elapsed " << elapsed << " us";
  thread.stop();  // idempotent
}

TEST(LinuxWatchdogThread, RefusesBadPeriodAndDoubleStart) {
  lc::StaticWatchdog<1, 4> watchdog;
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}), lc::Status::ok);
  lx::WatchdogThread thread;
  lx::WatchdogThreadConfig config;
  config.period_us = 99;
  EXPECT_EQ(thread.start(watchdog, config).error, lx::Error::period_out_of_range);
  config.period_us = 1'000'001;
  EXPECT_EQ(thread.start(watchdog, config).error, lx::Error::period_out_of_range);
  config.period_us = 10'000;
  config.fifo_priority = 100;
  EXPECT_EQ(thread.start(watchdog, config).error, lx::Error::priority_out_of_range);
  config.fifo_priority = 0;
  ASSERT_TRUE(thread.start(watchdog, config).ok());
  EXPECT_EQ(thread.start(watchdog, config).error, lx::Error::already_running);
  // The destructor stops and joins it.
}

TEST(LinuxWatchdogThread, StopReturnsWithinAboutOnePeriod) {
  lc::StaticWatchdog<1, 4> watchdog;
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}), lc::Status::ok);
  PollCounter counter;
  lx::WatchdogThread thread;
  lx::WatchdogThreadConfig config;
  config.period_us = 100'000;
  config.after_poll = &PollCounter::after_poll;
  config.after_poll_context = &counter;
  ASSERT_TRUE(thread.start(watchdog, config).ok());
  ASSERT_TRUE(counter.wait_for(1));
  const std::int64_t before = monotonic_us();
  thread.stop();
  EXPECT_LT(monotonic_us() - before, 1'000'000) << "one period is 100 ms; the bound is loose";
}
