// SPDX-License-Identifier: MIT
// Rig of the adapter tests: a started port_linux::Setup whose interceptor collects every report
// (lctest::Collector), threshold 50 ms, no stderr, no environment. The loops are the adapted
// event loops, each run on a thread of the test that holds a ScopedLoop.
#pragma once

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "emulation.hpp"
#include "linux_rig.hpp"
#include "loopcanary/linux/setup.hpp"
#include "workloads.hpp"

namespace lctest {

class AdapterRig {
 public:
  Collector collector;
  lx::Setup setup;  // declared after the collector: stopped before it goes

  void start(std::uint32_t hang_ms = 5'000) {
    lx::SetupConfig config;
    config.environment = false;
    config.threshold_ms = 50;
    config.hang_ms = hang_ms;
    config.sample_interval_ms = 10;
    config.stderr_reports = false;
    config.fifo_priority = 2;  // above a loop thread that prefer_this_thread() lifted, when allowed
    config.interceptor = &Collector::intercept;
    config.interceptor_context = &collector;
    const lx::SetupStatus s = setup.start(config);
    ASSERT_TRUE(s.ok()) << s.message;
  }
};

/// True when `record` is of an event named `name`.
inline bool event_named(const lc::BlockRecord& record, const char* name) {
  return record.event != nullptr && std::strcmp(record.event->name, name) == 0;
}

/// The record of a dispatch that waited on `mutex`, held by the calling thread (the test's,
/// which sleeps in lc_test_sleep_until meanwhile), names the lock, its holder and the holder's
/// stack: the main wait object is the mutex, held by this thread, whose stack reaches the sleep.
inline void expect_names_this_thread_as_holder(const lc::BlockRecord& final, const std::mutex& mutex) {
  LCTEST_SKIP_WITHOUT(proc_syscall);  // the lock, its holder and the holder's stack come from there
  ASSERT_GE(final.wait.count, 1u) << evidence(final);
  const lc::WaitSeen& lock = final.wait.objects[0];
  EXPECT_EQ(lock.object.kind, lc::WaitKind::mutex);
  EXPECT_EQ(lock.object.address, reinterpret_cast<std::uintptr_t>(&mutex));
  EXPECT_EQ(lock.object.owner, static_cast<std::uint32_t>(syscall(SYS_gettid)));
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  EXPECT_STREQ(lock.object.owner_name, name);
  EXPECT_TRUE(holder_frame_in(lock, "lc_test_sleep_until"))
      << int{lock.holder_pc_count} << " holder frames, none in lc_test_sleep_until";
}

// The scenarios every adapter is tested with, on an adapted loop type `L`: `L(callback)` sets up
// a loop whose first callback (handler) runs `callback`, and `L::run(rig)` runs that loop on a
// new loop thread of `rig` until it has no work left. `event` is the Event the adapter names
// that callback's dispatch.

/// A callback waiting 200 ms on a lock another thread holds: a final record of `event` whose
/// evidence says waiting (the loop thread's CPU time under a fifth of the window).
template <class L>
void check_callback_waiting_on_a_lock_is_a_waiting_block(const lc::Event& event) {
  AdapterRig rig;
  rig.start();
  std::mutex mutex;
  mutex.lock();
  std::promise<void> entered;
  L adapted([&] {
    entered.set_value();
    lc_test_wait_on_lock(mutex);
  });
  std::thread loop = adapted.run(rig);
  entered.get_future().wait();
  lc_test_sleep_until(monotonic_ns() + 200'000'000);  // the workload: hold the lock 200 ms
  mutex.unlock();
  loop.join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_EQ(final.event, &event) << (final.event != nullptr ? final.event->name : "null");
  EXPECT_GE(us_of(final, final.duration_ticks), 190'000u);
  ASSERT_TRUE(final.has_thread_cpu);
  EXPECT_LT(final.thread_cpu_us * 5, us_of(final, final.window_ticks)) << evidence(final);
  expect_names_this_thread_as_holder(final, mutex);
  expect_waiting(final);
}

/// A callback that does not return until the test releases it (hang limit 300 ms): a hang record
/// of `event` while it is stuck, its stacks in the waiting function; then the final record,
/// flagged hung.
template <class L>
void check_callback_that_never_returns_is_a_hang_with_stacks(const lc::Event& event) {
  AdapterRig rig;
  rig.start(300);
  std::mutex mutex;
  mutex.lock();
  std::atomic<bool> released{false};
  std::atomic<int> hang_while_stuck{-1};
  rig.collector.on_record = [&](const lc::BlockRecord& r) {
    if (r.phase == lc::Phase::hang) hang_while_stuck = released.load() ? 0 : 1;
  };
  L adapted([&] {
    lc_test_wait_on_lock(mutex);
    released = true;
  });
  std::thread loop = adapted.run(rig);
  lc::BlockRecord hang;
  const bool got_hang = rig.collector.wait_for_phase(lc::Phase::hang, hang);
  mutex.unlock();
  loop.join();
  ASSERT_TRUE(got_hang);
  EXPECT_EQ(hang_while_stuck.load(), 1);
  EXPECT_EQ(hang.event, &event) << (hang.event != nullptr ? hang.event->name : "null");
  EXPECT_GE(us_of(hang, hang.duration_ticks), 300'000u);
  if (!kThreadSanitizer) {  // ThreadSanitizer holds signals back while a thread blocks in a lock
    EXPECT_GT(hang.sample_count, 0u);
    EXPECT_TRUE(any_frame_in(hang, "lc_test_wait_on_lock")) << describe_stacks(hang);
  }
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_NE(final.flags & lc::kFlagHung, 0u);
}

}  // namespace lctest
