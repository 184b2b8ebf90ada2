// SPDX-License-Identifier: MIT
#include "loopcanary/linux/watchdog_thread.hpp"

#include <sched.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "loopcanary/port/linux.hpp"

namespace loopcanary::port_linux {
namespace {

constexpr std::int64_t kNsPerS = 1'000'000'000;

std::int64_t to_ns(const timespec& t) noexcept {
  return static_cast<std::int64_t>(t.tv_sec) * kNsPerS + static_cast<std::int64_t>(t.tv_nsec);
}

timespec from_ns(std::int64_t ns) noexcept {
  timespec t{};
  t.tv_sec = static_cast<time_t>(ns / kNsPerS);
  t.tv_nsec = static_cast<long>(ns % kNsPerS);
  return t;
}

std::int64_t monotonic_ns() noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return to_ns(t);
}

// Creates a thread running body(self) with every signal blocked (a thread inherits the mask in
// force at its creation: process-directed signals go to the application's threads) and names
// it `name` (cut to 15 characters; may be null; a failure to name changes nothing). The
// pthread_create error, 0 on success.
int start_thread(pthread_t& thread, const pthread_attr_t* attr, void* (*body)(void*), void* self,
                 const char* name) noexcept {
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int e = pthread_create(&thread, attr, body, self);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (e == 0 && name != nullptr) {
    char cut[16] = {};
    std::strncpy(cut, name, sizeof cut - 1);
    pthread_setname_np(thread, cut);
  }
  return e;
}

}  // namespace

WatchdogThread::~WatchdogThread() { stop(); }

Result WatchdogThread::start(Watchdog& watchdog, const WatchdogThreadConfig& config) noexcept {
  if (running_) return Result{Error::already_running, 0};
  if (config.period_us < 100u || config.period_us > 1'000'000u) return Result{Error::period_out_of_range, 0};
  if (config.fifo_priority < 0 || config.fifo_priority > 99) return Result{Error::priority_out_of_range, 0};
  clock_info();  // select (and calibrate) the clock here, not on the first poll
  watchdog_ = &watchdog;
  config_ = config;
  stop_.store(false, std::memory_order_relaxed);

  pthread_attr_t attr;
  int e = pthread_attr_init(&attr);
  if (e != 0) return Result{Error::thread_create_failed, e};
  if (config.fifo_priority > 0) {
    sched_param param{};
    param.sched_priority = config.fifo_priority;
    e = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    if (e == 0) e = pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
    if (e == 0) e = pthread_attr_setschedparam(&attr, &param);
    if (e != 0) {
      pthread_attr_destroy(&attr);
      return Result{Error::thread_create_failed, e};
    }
  }
  e = start_thread(thread_, &attr, &WatchdogThread::body, this, config_.name);
  pthread_attr_destroy(&attr);
  if (e != 0) return Result{Error::thread_create_failed, e};
  running_ = true;
  return Result{};
}

void WatchdogThread::stop() noexcept {
  if (!running_) return;
  stop_.store(true, std::memory_order_release);
  pthread_join(thread_, nullptr);
  running_ = false;
}

WatchdogThreadStats WatchdogThread::stats() const noexcept {
  WatchdogThreadStats s;
  s.polls = polls_.load(std::memory_order_relaxed);
  s.overruns = overruns_.load(std::memory_order_relaxed);
  s.max_lateness_us = max_lateness_us_.load(std::memory_order_relaxed);
  return s;
}

void* WatchdogThread::body(void* self) noexcept {
  static_cast<WatchdogThread*>(self)->run();
  return nullptr;
}

void WatchdogThread::run() noexcept {
  const std::int64_t period = static_cast<std::int64_t>(config_.period_us) * 1000;
  std::int64_t deadline = monotonic_ns() + period;
  while (!stop_.load(std::memory_order_acquire)) {
    const timespec wake = from_ns(deadline);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr) == EINTR) {
    }
    if (stop_.load(std::memory_order_acquire)) break;
    const std::int64_t late_us = (monotonic_ns() - deadline) / 1000;
    if (late_us > static_cast<std::int64_t>(max_lateness_us_.load(std::memory_order_relaxed))) {
      max_lateness_us_.store(static_cast<std::uint32_t>(late_us < 0xFFFFFFFF ? late_us : 0xFFFFFFFF),
                             std::memory_order_relaxed);
    }

    watchdog_->poll(Clock::now());
    polls_.fetch_add(1, std::memory_order_relaxed);
    if (config_.after_poll != nullptr) config_.after_poll(config_.after_poll_context);

    const std::int64_t now = monotonic_ns();
    // Next deadline on the same grid; periods already over are skipped (and counted), not
    // made up with a burst of polls.
    deadline += period;
    if (now >= deadline) {
      const std::int64_t behind = (now - deadline) / period + 1;
      overruns_.fetch_add(static_cast<std::uint32_t>(behind), std::memory_order_relaxed);
      deadline += behind * period;
    }
  }
}

DrainThread::~DrainThread() { stop(); }

Result DrainThread::start(Watchdog& watchdog, const DrainThreadConfig& config) noexcept {
  if (running_) return Result{Error::already_running, 0};
  if (config.consume == nullptr) return Result{Error::consume_null, 0};
  watchdog_ = &watchdog;
  config_ = config;
  stop_.store(false, std::memory_order_relaxed);
  if (sem_init(&wake_, 0, 0) != 0) return Result{Error::thread_create_failed, errno};
  const int e = start_thread(thread_, nullptr, &DrainThread::body, this, config_.name);
  if (e != 0) {
    sem_destroy(&wake_);
    return Result{Error::thread_create_failed, e};
  }
  running_ = true;
  return Result{};
}

void DrainThread::after_poll(void* self) noexcept {
  auto& drain = *static_cast<DrainThread*>(self);
  if (drain.watchdog_->pending() != 0) sem_post(&drain.wake_);
}

void DrainThread::stop() noexcept {
  if (!running_) return;
  stop_.store(true, std::memory_order_release);
  sem_post(&wake_);
  pthread_join(thread_, nullptr);
  sem_destroy(&wake_);
  running_ = false;
  drain();  // this thread is the one consumer now: what came after the thread's last drain
}

void* DrainThread::body(void* self) noexcept {
  auto& drain = *static_cast<DrainThread*>(self);
  for (;;) {
    while (sem_wait(&drain.wake_) != 0 && errno == EINTR) {
    }
    drain.drain();
    if (drain.stop_.load(std::memory_order_acquire)) return nullptr;
  }
}

void DrainThread::drain() noexcept {
  BlockRecord record;
  while (watchdog_->pop(record)) {
    config_.consume(config_.context, record);
    consumed_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace loopcanary::port_linux
