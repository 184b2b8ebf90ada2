// SPDX-License-Identifier: MIT
// A thread that polls a Watchdog every period, on absolute CLOCK_MONOTONIC deadlines (so it
// does not drift), with a clean stop (the thread is joined; nothing leaks).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "linux_status.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary::port_linux {

struct WatchdogThreadConfig {
  /// Poll period, microseconds: 100..1'000'000. Samples land on this grid, so keep it at or
  /// below the loops' sample intervals.
  std::uint32_t period_us = 10'000;
  /// Called on the watchdog thread after each poll (to drain the record ring, say). May be null.
  void (*after_poll)(void* context) = nullptr;
  void* after_poll_context = nullptr;
  /// Thread name shown by ps, top and gdb (cut to 15 characters). May be null.
  const char* name = "lc-watchdog";
  /// 0: the creating thread's scheduling. 1..99: SCHED_FIFO at this priority, so the watchdog
  /// still runs on time when the machine (or the loop itself, at a real-time priority) is
  /// busy. Needs CAP_SYS_NICE (or RLIMIT_RTPRIO); start() fails with EPERM otherwise.
  int fifo_priority = 0;
};

struct WatchdogThreadStats {
  std::uint32_t polls = 0;
  std::uint32_t overruns = 0;          ///< whole periods skipped because the thread woke too late
  std::uint32_t max_lateness_us = 0;   ///< latest wake-up after a deadline seen so far
};

/// Runs Watchdog::poll(Clock::now()) periodically on its own thread. The watchdog must be
/// initialised and its loops added before start(); the thread then owns poll() (and the
/// interceptors it calls) until stop().
class WatchdogThread {
 public:
  WatchdogThread() noexcept = default;
  /// Stops and joins the thread if it still runs.
  ~WatchdogThread();
  WatchdogThread(const WatchdogThread&) = delete;
  WatchdogThread& operator=(const WatchdogThread&) = delete;

  /// Starts polling `watchdog`. The new thread blocks every signal (process-directed signals
  /// go to the application's threads). Errors: period_out_of_range, priority_out_of_range,
  /// already_running, thread_create_failed (with errno; EPERM: no right to fifo_priority).
  Result start(Watchdog& watchdog, const WatchdogThreadConfig& config = WatchdogThreadConfig{}) noexcept;

  /// Asks the thread to stop and joins it: returns within about one period plus one poll.
  /// Idempotent. Any thread but the watchdog thread itself.
  void stop() noexcept;

  bool running() const noexcept { return running_; }
  WatchdogThreadStats stats() const noexcept;

 private:
  static void* body(void* self) noexcept;
  void run() noexcept;

  Watchdog* watchdog_ = nullptr;
  WatchdogThreadConfig config_{};
  pthread_t thread_{};
  bool running_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint32_t> polls_{0};
  std::atomic<std::uint32_t> overruns_{0};
  std::atomic<std::uint32_t> max_lateness_us_{0};
};

}  // namespace loopcanary::port_linux
