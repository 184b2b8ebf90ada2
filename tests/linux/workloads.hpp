// SPDX-License-Identifier: MIT
// Workloads a loop's handler runs in the Linux tests (named functions the samples must point
// at), and the checks of a block's cause that tolerate a loaded machine. Shared by the block
// tests and the adapter tests.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "linux_rig.hpp"

namespace lctest {

inline std::int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

inline std::uint64_t us_of(const lc::BlockRecord& r, std::uint64_t ticks) { return lc::us_from_ticks(ticks, r.tick_hz); }

inline std::string evidence(const lc::BlockRecord& r) {
  return "thread CPU " + std::to_string(r.thread_cpu_us) + " us over a " + std::to_string(us_of(r, r.window_ticks)) +
         " us window, machine busy " + std::to_string(r.system_busy_permille) + " permille, cause " +
         lc::to_string(r.cause);
}

// Best effort: lift the loop thread above other load on the machine (other jobs may share
// it), so "running" means what the handler did, not what the scheduler allowed: a real-time
// priority when there is another core for the watchdog, else a better nice value. Both need
// CAP_SYS_NICE; without it the test runs at normal priority and skips the cause check when
// the machine starved the thread.
inline void prefer_this_thread() {
  sched_param param{};
  param.sched_priority = 1;
  if (std::thread::hardware_concurrency() >= 2 && pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0) {
    return;
  }
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), -10);
}

inline bool machine_starved_the_thread(const lc::BlockRecord& r) {
  return r.has_thread_cpu && r.thread_cpu_us * 1000 < us_of(r, r.window_ticks) * 700 &&
         r.system_busy_permille != lc::kUnknownPermille && r.system_busy_permille >= 900;
}

}  // namespace lctest

// The named workloads the samples must point at. Global, not inlined: each is a frame.
__attribute__((noinline)) inline void lc_test_spin_for(std::int64_t ns) {
  const std::int64_t end = lctest::monotonic_ns() + ns;
  volatile std::uint64_t x = 1;
  do {
    for (int i = 0; i < 4096; ++i) x = x * 6364136223846793005u + 1442695040888963407u;
  } while (lctest::monotonic_ns() < end);
}

__attribute__((noinline)) inline void lc_test_sleep_until(std::int64_t deadline_ns) {
  timespec t{};
  t.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000);
  t.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000);
  // The sample signal interrupts the sleep (clock_nanosleep is never restarted): sleep on.
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR) {
  }
}

__attribute__((noinline)) inline void lc_test_wait_on_lock(std::mutex& mutex) {
  mutex.lock();
  mutex.unlock();
}

namespace lctest {

// The last checks of an on-CPU block: most samples on top in `function` (the culprit), and the
// cause running. Skipped under ThreadSanitizer (it defers signals, so samples land anywhere)
// and where other processes kept the loop thread off the CPU. Call it last: a skip ends only
// this helper.
inline void expect_running_in(const lc::BlockRecord& final, const char* function) {
  if (kThreadSanitizer) GTEST_SKIP() << "ThreadSanitizer defers signals: sample placement is not meaningful";
  EXPECT_GE(final.sample_count, 5u) << "missed " << final.samples_missed;
  EXPECT_GE(share_of_top_in(final, function), 0.8) << describe_stacks(final);
  if (machine_starved_the_thread(final)) {
    GTEST_SKIP() << "other processes kept the loop thread off the CPU (no CAP_SYS_NICE to prefer it): "
                 << evidence(final);
  }
  EXPECT_EQ(final.cause, lc::Cause::running) << evidence(final);
}

// The last check of an off-CPU block: its cause is waiting. Skipped only where other processes
// saturated the machine (every CPU busy), since then neither rule can tell waiting from starved
// (docs/porting-linux.md): without a run-queue wait the load rule reads starved, and with one
// the wait includes the sampler's own doing, as each sample's signal wakes the sleeping loop
// thread, which then queues for a CPU behind the others. Call it last: a skip ends only this
// helper.
inline void expect_waiting(const lc::BlockRecord& final) {
  if (final.system_busy_permille != lc::kUnknownPermille && final.system_busy_permille >= 900) {
    GTEST_SKIP() << "other processes saturated the machine: the cause rule cannot tell waiting from starved: "
                 << evidence(final);
  }
  EXPECT_EQ(final.cause, lc::Cause::waiting) << evidence(final);
}

}  // namespace lctest
