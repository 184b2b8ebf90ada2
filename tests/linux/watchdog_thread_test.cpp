// SPDX-License-Identifier: MIT
// The watchdog thread: start/stop, its period on absolute deadlines, errors, clean shutdown.
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "loopcanary/linux/watchdog_thread.hpp"
#include "loopcanary/loopcanary.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

std::int64_t monotonic_us() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000 + t.tv_nsec / 1000;
}

// Counts polls and lets the test wait for the n-th one. With `thread` set, it also notes, on the
// watchdog thread right after polls 1 and `mark_at`, the time and the grid slots the thread has
// accounted for (polls + overruns).
struct PollCounter {
  std::mutex mutex;
  std::condition_variable cv;
  std::uint32_t polls = 0;
  const lx::WatchdogThread* thread = nullptr;
  std::uint32_t mark_at = 0;
  std::int64_t first_us = 0;
  std::int64_t mark_us = 0;
  std::uint64_t first_slots = 0;
  std::uint64_t mark_slots = 0;
  static void after_poll(void* self) {
    auto* c = static_cast<PollCounter*>(self);
    {
      std::lock_guard<std::mutex> lock(c->mutex);
      ++c->polls;
      if (c->thread != nullptr && (c->polls == 1 || c->polls == c->mark_at)) {
        const lx::WatchdogThreadStats s = c->thread->stats();
        const std::uint64_t slots = std::uint64_t{s.polls} + s.overruns;
        (c->polls == 1 ? c->first_us : c->mark_us) = monotonic_us();
        (c->polls == 1 ? c->first_slots : c->mark_slots) = slots;
      }
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
  lx::WatchdogThread thread;
  PollCounter counter;
  counter.thread = &thread;
  counter.mark_at = 100;
  lx::WatchdogThreadConfig config;
  config.period_us = 2'000;
  config.after_poll = &PollCounter::after_poll;
  config.after_poll_context = &counter;
  ASSERT_TRUE(thread.start(watchdog, config).ok());
  EXPECT_TRUE(thread.running());
  ASSERT_TRUE(counter.wait_for(100));
  thread.stop();
  EXPECT_FALSE(thread.running());
  const lx::WatchdogThreadStats s = thread.stats();
  EXPECT_EQ(s.polls, watchdog.stats().polls);
  // Absolute deadlines: poll k runs at the first deadline + (slots_k - slots_1) periods, plus
  // its lateness, so the grid slots accounted for (polls + skipped periods) track the time
  // between two polls within the latenesses, whatever the load: no drift from each poll's cost
  // and wake-up latency, as relative sleeps would accumulate. Both sides are read on the
  // watchdog thread right after its poll; the slack is the worst lateness seen plus one period
  // for the poll itself.
  std::lock_guard<std::mutex> lock(counter.mutex);
  const double period = config.period_us;
  const double grid = static_cast<double>(counter.mark_us - counter.first_us) / period;
  const double slots = static_cast<double>(counter.mark_slots - counter.first_slots);
  EXPECT_NEAR(slots, grid, s.max_lateness_us / period + 1.0)
      << "max lateness " << s.max_lateness_us << " us, overruns " << s.overruns;
  EXPECT_GE(counter.mark_slots - counter.first_slots, 99u);
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
