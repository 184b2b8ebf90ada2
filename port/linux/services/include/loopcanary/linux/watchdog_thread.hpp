// SPDX-License-Identifier: MIT
// The two threads around a Watchdog on Linux: WatchdogThread polls it every period, on absolute
// CLOCK_MONOTONIC deadlines (so it does not drift); DrainThread is the records' one consumer,
// so writing them (files, fdatasync, a slow stderr) never delays a poll. Both stop cleanly (the
// thread is joined; nothing leaks).
#pragma once

#include <pthread.h>
#include <semaphore.h>

#include <atomic>
#include <cstdint>

#include "loopcanary/port/linux/status.hpp"
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

/// What a DrainThread does with each record.
struct DrainThreadConfig {
  /// Called with each record popped from the watchdog's ring, in report order, on the drain
  /// thread (and, at stop(), on the stopping thread). Required.
  Interceptor consume = nullptr;
  void* context = nullptr;
  /// Thread name shown by ps, top and gdb (cut to 15 characters). May be null.
  const char* name = "lc-drain";
};

/// The record ring's one consumer (Watchdog::pop) on a thread of its own. The watchdog's thread
/// wakes it after a poll that left records in the ring (WatchdogThreadConfig::after_poll =
/// &DrainThread::after_poll, context = the DrainThread): a post on a semaphore, nothing more,
/// so a consumer that is slow or stalled (a disk that does not answer) never delays a poll. What
/// the ring cannot hold meanwhile is the watchdog's records_dropped, and only that.
class DrainThread {
 public:
  DrainThread() noexcept = default;
  /// stop().
  ~DrainThread();
  DrainThread(const DrainThread&) = delete;
  DrainThread& operator=(const DrainThread&) = delete;

  /// Starts consuming `watchdog`'s records. The new thread blocks every signal. Errors:
  /// consume_null (config.consume is null), already_running, thread_create_failed (with errno).
  Result start(Watchdog& watchdog, const DrainThreadConfig& config) noexcept;

  /// Wakes the drain thread when `self`'s watchdog holds records. WatchdogThreadConfig::after_poll
  /// form; watchdog thread. No allocation, no lock: one sem_post.
  static void after_poll(void* self) noexcept;

  /// Joins the drain thread, then consumes what is left in the ring on the calling thread. Call
  /// once the watchdog no longer polls (WatchdogThread::stop(), then Watchdog::finish()), so
  /// that every record reaches `consume`. Idempotent. Any thread but the drain thread.
  void stop() noexcept;

  bool running() const noexcept { return running_; }
  /// Records consumed so far. Any thread.
  std::uint32_t consumed() const noexcept { return consumed_.load(std::memory_order_relaxed); }

 private:
  static void* body(void* self) noexcept;
  void drain() noexcept;

  Watchdog* watchdog_ = nullptr;
  DrainThreadConfig config_{};
  pthread_t thread_{};
  sem_t wake_{};
  bool running_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint32_t> consumed_{0};
};

}  // namespace loopcanary::port_linux
