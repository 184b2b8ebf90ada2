// SPDX-License-Identifier: MIT
// Issue 3, tests 1-5: real loop threads, a real watchdog thread, real signals and /proc.
// Timing bounds are loose (the CI machine is a noisy 2-core VM); the waits are on records
// arriving, never on sleeps. A sleep here is always the workload itself.
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "emulation.hpp"
#include "linux_rig.hpp"
#include "workloads.hpp"

using namespace lctest;

namespace {

constexpr lc::Event kCompute{"compute"};
constexpr lc::Event kSleep{"sleep"};
constexpr lc::Event kLock{"lock"};

}  // namespace

// Test 1: 200 ms in a named function, threshold 50 ms.
TEST(LinuxBlock, RunningHandlerIsReportedWhileRunningAndSymbolised) {
  Rig rig;
  rig.start();
  std::atomic<bool> returned{false};
  std::atomic<int> in_progress_while_running{-1};
  rig.collector.on_record = [&](const lc::BlockRecord& r) {
    if (r.phase == lc::Phase::in_progress) in_progress_while_running = returned.load() ? 0 : 1;
  };
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    ASSERT_TRUE(attach.result().ok());
    prefer_this_thread();
    rig.monitor.begin(kCompute);
    lc_test_spin_for(200'000'000);
    returned = true;
    rig.monitor.end();
  });
  loop.join();

  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_EQ(in_progress_while_running.load(), 1) << "the in-progress report must come before the function returns";
  EXPECT_GE(us_of(final, final.duration_ticks), 199'000u);
  EXPECT_LT(us_of(final, final.duration_ticks), 5'000'000u);
  EXPECT_EQ(final.event, &kCompute);
  expect_running_in(final, "lc_test_spin_for");
}


// Test 2a: the loop thread sleeps 200 ms.
TEST(LinuxBlock, SleepingHandlerIsWaiting) {
  Rig rig;
  rig.start();
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    ASSERT_TRUE(attach.result().ok());
    rig.monitor.begin(kSleep);
    lc_test_sleep_until(monotonic_ns() + 200'000'000);
    rig.monitor.end();
  });
  loop.join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  ASSERT_TRUE(final.has_thread_cpu);
  EXPECT_LT(final.thread_cpu_us * 5, us_of(final, final.window_ticks)) << evidence(final);
  if (!kThreadSanitizer) {
    EXPECT_TRUE(any_frame_in(final, "lc_test_sleep_until")) << describe_stacks(final);
  }
  expect_waiting(final);
}

// Test 2b: the loop thread waits 200 ms on a mutex another thread holds.
TEST(LinuxBlock, HandlerBlockedOnALockIsWaiting) {
  Rig rig;
  rig.start();
  std::mutex mutex;
  mutex.lock();
  std::promise<void> entered;
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    rig.monitor.begin(kLock);
    entered.set_value();
    lc_test_wait_on_lock(mutex);
    rig.monitor.end();
  });
  entered.get_future().wait();
  lc_test_sleep_until(monotonic_ns() + 200'000'000);  // the workload: hold the lock 200 ms
  mutex.unlock();
  loop.join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  ASSERT_TRUE(final.has_thread_cpu);
  EXPECT_GE(us_of(final, final.duration_ticks), 190'000u);
  EXPECT_LT(final.thread_cpu_us * 5, us_of(final, final.window_ticks)) << evidence(final);
  expect_waiting(final);
}

// Holds `mutex` while it runs `workload`, then lets go: the function every stack of the holder
// shows while it holds the lock (as the function running, or as a caller of the workload), also
// in the moment between the workload's return and the unlock. noinline, and no tail call.
__attribute__((noinline)) void lc_test_hold(std::mutex& mutex, std::promise<pid_t>& holding,
                                            const std::atomic<bool>& entered, void (*workload)()) {
  std::lock_guard<std::mutex> lock(mutex);
  holding.set_value(static_cast<pid_t>(syscall(SYS_gettid)));
  while (!entered.load()) std::this_thread::yield();
  workload();
  asm volatile("" ::: "memory");
}

namespace {

// A dispatch of kLock that waits on a std::mutex while thread `holder_name` holds it and runs
// `workload` (200 ms) with it held (lc_test_hold). The final record into `final`; its main wait
// object checked to be that lock, named with its holder (thread id and name) and read in most
// samples, and the holder's stack to show lc_test_hold.
void block_on_held_lock(Rig& rig, const char* holder_name, void (*workload)(), lc::BlockRecord& final) {
  std::mutex mutex;
  std::promise<pid_t> holding;
  std::atomic<bool> entered{false};
  std::thread holder([&] {
    pthread_setname_np(pthread_self(), holder_name);
    lc_test_hold(mutex, holding, entered, workload);
  });
  const pid_t holder_tid = holding.get_future().get();
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    rig.monitor.begin(kLock);
    entered = true;
    lc_test_wait_on_lock(mutex);
    rig.monitor.end();
  });
  holder.join();
  loop.join();
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  LCTEST_SKIP_WITHOUT(proc_syscall);  // the lock, its holder and the holder's stack come from there
  ASSERT_GE(final.wait.count, 1u) << evidence(final);
  const lc::WaitSeen& lock = final.wait.objects[0];
  EXPECT_EQ(lock.object.kind, lc::WaitKind::mutex);
  EXPECT_EQ(lock.object.address, reinterpret_cast<std::uintptr_t>(&mutex));
  EXPECT_EQ(lock.object.owner, static_cast<std::uint32_t>(holder_tid));
  EXPECT_STREQ(lock.object.owner_name, holder_name);
  EXPECT_EQ(lock.owner_loop, nullptr);
  // Most samples found the loop on the lock (the first may come before it got there).
  EXPECT_GE(lock.samples * 2, final.samples_taken) << lock.samples << " of " << final.samples_taken;
  if (kThreadSanitizer && lock.holder_pc_count == 0) return;  // the sanitizer deferred every signal
  // The record keeps the latest holder stack: lc_test_hold in it, and more than the PC (when the
  // PC is in lc_test_hold itself, its callers).
  EXPECT_GE(lock.holder_pc_count, 2u) << describe_holder(lock);
  EXPECT_TRUE(holder_frame_in(lock, "lc_test_hold")) << describe_holder(lock) << "\n" << evidence(final);
}

}  // namespace

// Issue 33: the same lock held by a named thread that sleeps with it: the record names the lock,
// the holder (thread id and name) and, sampled from its parked system call, the holder's stack
// down to the function that holds the lock.
TEST(LinuxBlock, HandlerBlockedOnALockNamesTheLockAndItsHolder) {
  Rig rig;
  rig.start();
  lc::BlockRecord final;
  ASSERT_NO_FATAL_FAILURE(
      block_on_held_lock(rig, "journal", [] { lc_test_sleep_until(monotonic_ns() + 200'000'000); }, final));
  expect_waiting(final);
}

// Issue 33: the same lock held by a thread that computes with it: the holder is on a CPU, so
// its stack is sampled by the signal (its handler copies the top of the stack for the watchdog
// to scan), down to the function that holds the lock.
TEST(LinuxBlock, HandlerBlockedOnALockHeldByARunningThreadNamesItsStack) {
  Rig rig;
  rig.start();
  lc::BlockRecord final;
  ASSERT_NO_FATAL_FAILURE(block_on_held_lock(rig, "compactor", [] { lc_test_spin_for(200'000'000); }, final));
  // The holder's own computing keeps a CPU busy, so the machine may read as saturated (the cause
  // rule then cannot tell waiting from starved: expect_waiting): the loop itself did not run.
  EXPECT_NE(final.cause, lc::Cause::running) << evidence(final);
}

// Issue 33: a deadlock. The loop's thread holds lock B and waits on A; thread "journal" holds A
// and waits on B. The hang record names both locks and holders and says deadlock; then each side
// gives up (timed locks), and everything shuts down.
TEST(LinuxBlock, DeadlockOfTwoThreadsIsNamedInTheHangRecord) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  RigConfig config;
  config.hang_limit_us = 300'000;
  Rig rig;
  rig.start(config);
  pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;
  std::atomic<bool> give_up{false};
  std::atomic<int> holding{0};
  std::atomic<pid_t> loop_tid{0};
  std::atomic<pid_t> journal_tid{0};
  // Locks `m` in waits of 100 ms until it has it or `give_up` is raised (true: locked).
  const auto lock_unless_given_up = [&](pthread_mutex_t& m) {
    for (;;) {
      timespec deadline{};
      clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_nsec += 100'000'000;
      if (deadline.tv_nsec >= 1'000'000'000) {
        deadline.tv_nsec -= 1'000'000'000;
        ++deadline.tv_sec;
      }
      if (pthread_mutex_timedlock(&m, &deadline) == 0) return true;
      if (give_up.load()) return false;
    }
  };
  std::thread journal([&] {
    pthread_setname_np(pthread_self(), "journal");
    journal_tid = static_cast<pid_t>(syscall(SYS_gettid));
    pthread_mutex_lock(&a);
    ++holding;
    while (holding.load() < 2) std::this_thread::yield();
    if (lock_unless_given_up(b)) pthread_mutex_unlock(&b);
    pthread_mutex_unlock(&a);
  });
  std::thread loop([&] {
    pthread_setname_np(pthread_self(), "main-loop");
    lx::ScopedLoopThread attach(rig.loop_thread);
    loop_tid = static_cast<pid_t>(syscall(SYS_gettid));
    pthread_mutex_lock(&b);
    ++holding;
    while (holding.load() < 2) std::this_thread::yield();
    rig.monitor.begin(kLock);
    if (lock_unless_given_up(a)) pthread_mutex_unlock(&a);
    rig.monitor.end();
    pthread_mutex_unlock(&b);
  });
  lc::BlockRecord hang;
  const bool got_hang = rig.collector.wait_for_phase(lc::Phase::hang, hang);
  give_up = true;
  journal.join();
  loop.join();
  ASSERT_TRUE(got_hang);
  ASSERT_GE(hang.wait.count, 1u) << evidence(hang);
  const lc::WaitSeen& lock = hang.wait.objects[0];
  EXPECT_EQ(lock.object.kind, lc::WaitKind::mutex);
  EXPECT_EQ(lock.object.address, reinterpret_cast<std::uintptr_t>(&a));
  EXPECT_EQ(lock.object.owner, static_cast<std::uint32_t>(journal_tid.load()));
  EXPECT_STREQ(lock.object.owner_name, "journal");
  ASSERT_EQ(lock.chain_count, 1u);
  EXPECT_EQ(lock.chain[0].address, reinterpret_cast<std::uintptr_t>(&b));
  EXPECT_EQ(lock.chain[0].owner, static_cast<std::uint32_t>(loop_tid.load()));
  EXPECT_STREQ(lock.chain[0].owner_name, "main-loop");
  EXPECT_TRUE(lock.deadlock);
  EXPECT_EQ(lock.owner_loop, nullptr) << "journal runs no watched loop";
}

// Test 3: the loop computes while more busy threads than cores compete for the CPUs.
TEST(LinuxBlock, ComputingAgainstMoreBusyThreadsThanCoresIsStarved) {
  Rig rig;
  rig.start();
  const unsigned cores = std::thread::hardware_concurrency() != 0 ? std::thread::hardware_concurrency() : 2;
  const unsigned hogs = 2 * cores + 2;
  std::atomic<bool> stop{false};
  std::atomic<unsigned> running{0};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < hogs; ++i) {
    threads.emplace_back([&] {
      running.fetch_add(1);
      volatile std::uint64_t x = 1;
      while (!stop.load(std::memory_order_relaxed)) x = x * 3 + 1;
    });
  }
  while (running.load() != hogs) std::this_thread::yield();
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    rig.monitor.begin(kCompute);
    lc_test_spin_for(300'000'000);
    rig.monitor.end();
  });
  loop.join();
  lc::BlockRecord final;
  const bool got = rig.collector.wait_for_phase(lc::Phase::final, final);
  stop = true;
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(got);
  ASSERT_TRUE(final.has_thread_cpu);
  EXPECT_LT(final.thread_cpu_us * 1000, us_of(final, final.window_ticks) * 700) << evidence(final);
  EXPECT_GE(final.system_busy_permille, 900u) << evidence(final);
  EXPECT_EQ(final.cause, lc::Cause::starved) << evidence(final);
}

// Test 4: a deadlock. The hang report, with the waiting frame, arrives while the loop thread
// is still stuck; then the lock is released and everything shuts down cleanly.
TEST(LinuxBlock, DeadlockIsReportedAsAHangWithTheWaitingFrame) {
  RigConfig config;
  config.hang_limit_us = 300'000;
  Rig rig;
  rig.start(config);
  std::mutex mutex;
  mutex.lock();
  std::atomic<bool> acquired{false};
  std::atomic<int> hang_while_stuck{-1};
  rig.collector.on_record = [&](const lc::BlockRecord& r) {
    if (r.phase == lc::Phase::hang) hang_while_stuck = acquired.load() ? 0 : 1;
  };
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    rig.monitor.begin(kLock);
    lc_test_wait_on_lock(mutex);
    acquired = true;
    rig.monitor.end();
  });
  lc::BlockRecord hang;
  const bool got_hang = rig.collector.wait_for_phase(lc::Phase::hang, hang);
  mutex.unlock();
  loop.join();
  ASSERT_TRUE(got_hang);
  EXPECT_EQ(hang_while_stuck.load(), 1);
  EXPECT_NE(hang.flags & lc::kFlagHung, 0u);
  EXPECT_GE(us_of(hang, hang.duration_ticks), 300'000u);
  if (!kThreadSanitizer) {  // ThreadSanitizer holds signals back while a thread blocks in a lock
    EXPECT_GT(hang.sample_count, 0u);
    EXPECT_TRUE(any_frame_in(hang, "lc_test_wait_on_lock")) << describe_stacks(hang);
  }

  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_NE(final.flags & lc::kFlagHung, 0u);
  EXPECT_EQ(rig.monitor.stats().hangs, 1u);
  rig.runner.stop();
  EXPECT_FALSE(rig.runner.running());
}

// Test 5a: loop threads that exit while they are being sampled (no end(), no detach()).
TEST(LinuxBlock, LoopThreadThatExitsWhileSampledIsAMissedSample) {
  std::uint32_t gone = 0;
  for (int i = 0; i < 8; ++i) {
    auto rig = std::make_unique<Rig>();
    RigConfig config;
    config.threshold_us = 5'000;
    config.arm_permille = 0;
    config.sample_interval_us = 1'000;
    config.hang_limit_us = 60'000;
    config.period_us = 1'000;
    rig->start(config);
    std::thread loop([&] {
      ASSERT_TRUE(rig->loop_thread.attach().ok());
      rig->monitor.begin(kCompute);
      lc_test_spin_for(2'000'000 + 1'000'000 * i);  // then exit mid-dispatch, still attached
    });
    loop.join();
    lc::BlockRecord hang;
    ASSERT_TRUE(rig->collector.wait_for_phase(lc::Phase::hang, hang));
    EXPECT_GT(hang.samples_missed, 0u);
    const lx::PlatformStats s = rig->platform.stats();
    EXPECT_EQ(s.missed_busy, 0u);
    gone += s.missed_gone + s.missed_timeout;
    rig->runner.stop();
  }
  EXPECT_GT(gone, 0u);
}

// Test 5b: a loop thread that blocks the sampling signal.
TEST(LinuxBlock, LoopThreadBlockingTheSignalIsAMissedSampleNeverAHang) {
  LCTEST_SKIP_WITHOUT(proc_signals);
  Rig rig;
  rig.start();
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, rig.platform.sample_signal());
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    rig.monitor.begin(kCompute);
    lc_test_spin_for(200'000'000);
    rig.monitor.end();
    // Unblock only once the watchdog has stopped: a capture it began just before end() would
    // otherwise find the signal unblocked and be answered (then dropped by the watchdog, the
    // dispatch being over), and this test counts answers.
    lc::BlockRecord ended;
    rig.collector.wait_for_phase(lc::Phase::final, ended);
    rig.runner.stop();
    // The one signal left pending runs the handler now; it finds no request for this thread.
    pthread_sigmask(SIG_UNBLOCK, &block, nullptr);
  });
  loop.join();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_EQ(final.sample_count, 0u);
  EXPECT_GT(final.samples_missed, 0u);
  const lx::PlatformStats s = rig.platform.stats();
  EXPECT_GT(s.missed_blocked, 0u);
  EXPECT_EQ(s.samples_answered, 0u);
  EXPECT_EQ(s.missed_timeout, 0u) << "a blocked signal is recognised, not waited for";
  EXPECT_LT(rig.runner.stats().max_lateness_us, 200'000u) << "the watchdog must never hang on a sample";
}

// Issue 19, part 5: a loop served by short-lived threads in turn (each attaches the loop's
// LoopThread, runs one dispatch past the threshold, detaches and exits) while the watchdog is
// busy: it samples hung loops every millisecond, and between rounds it is held after a poll (a
// watchdog that overran its period) while more blocks end than the loop's note ring holds.
// Every block a loop counted is reported with its stamped end or counted as dropped in the
// watchdog's statistics, and the next record carries that count. Exact accounting, no timing.
TEST(LinuxBlock, BlocksOfShortLivedLoopThreadsAreReportedOrCounted) {
  constexpr int kHung = 4;
  constexpr int kRounds = 4;
  constexpr int kFreeBlocks = 8;  // per round, while the watchdog polls freely
  constexpr int kHeldBlocks = static_cast<int>(lc::kNoteCapacity) + 4;  // per round, watchdog held
  constexpr std::int64_t kBlockNs = 3'000'000;  // threshold 1 ms

  lx::Platform platform;
  char text[256];
  const lx::Result p = platform.init();
  ASSERT_TRUE(p.ok()) << lx::format(p, text, sizeof text);
  lc::StaticWatchdog<kHung + 1, 2> watchdog;  // the interceptor sees every report; the ring may drop
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}, platform.hal()), lc::Status::ok);
  lx::LoopThread threads[kHung + 1];
  lx::PortMonitor monitors[kHung + 1];  // [0]: the short-lived threads' loop
  for (int i = 0; i <= kHung; ++i) {
    lc::MonitorConfig mc;
    mc.name = i == 0 ? "short" : "hung";
    mc.tick_hz = lx::tick_hz();
    mc.threshold_us = 1'000;
    mc.sample_interval_us = 1'000;
    mc.arm_permille = 0;
    mc.hang_limit_us = 60'000'000;
    mc.context = &threads[i];
    ASSERT_EQ(monitors[i].init(mc), lc::Status::ok);
    ASSERT_EQ(watchdog.add(monitors[i]), lc::Status::ok);
  }
  Collector collector;
  ASSERT_EQ(watchdog.add_interceptor(&Collector::intercept, &collector), lc::Status::ok);

  // The hung loops: each thread blocks in a dispatch until the end of the test.
  std::mutex hold_hung;
  hold_hung.lock();
  std::atomic<int> hung_in_dispatch{0};
  std::vector<std::thread> hung;
  for (int i = 1; i <= kHung; ++i) {
    hung.emplace_back([&, i] {
      lx::ScopedLoopThread attach(threads[i]);
      EXPECT_TRUE(attach.result().ok());
      monitors[i].begin(kLock);
      hung_in_dispatch.fetch_add(1);
      lc_test_wait_on_lock(hold_hung);  // takes and releases it: the next hung thread follows
      monitors[i].end();
    });
  }
  while (hung_in_dispatch.load() != kHung) std::this_thread::yield();

  // After each poll the watchdog thread stays here while the test holds it.
  struct Hold {
    std::atomic<bool> wanted{false};
    std::atomic<bool> parked{false};
  } hold;
  lx::WatchdogThreadConfig tc;
  tc.period_us = 1'000;
  tc.after_poll = [](void* context) {
    auto& h = *static_cast<Hold*>(context);
    while (h.wanted.load()) {
      h.parked.store(true);
      std::this_thread::yield();
    }
    h.parked.store(false);
  };
  tc.after_poll_context = &hold;
  lx::WatchdogThread runner;
  const lx::Result started = runner.start(watchdog, tc);
  ASSERT_TRUE(started.ok()) << lx::format(started, text, sizeof text);

  int blocks_run = 0;
  const auto one_block = [&](std::int64_t ns) {
    std::thread loop([&] {
      lx::ScopedLoopThread attach(threads[0]);
      EXPECT_TRUE(attach.result().ok());
      monitors[0].begin(kCompute);
      lc_test_spin_for(ns);
      monitors[0].end();
    });
    loop.join();
    ++blocks_run;
  };
  one_block(100'000'000);  // long enough to span the tick wrap in the wrap rerun
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kFreeBlocks; ++i) one_block(kBlockNs);
    hold.wanted.store(true);
    while (!hold.parked.load()) std::this_thread::yield();
    for (int i = 0; i < kHeldBlocks; ++i) one_block(kBlockNs);
    hold.wanted.store(false);
  }
  hold_hung.unlock();
  for (std::thread& t : hung) t.join();
  // Two polls after every loop has ended: the first drains the last notes, the second finds the
  // dispatches it watched ended.
  const std::uint32_t polls = runner.stats().polls;
  while (runner.stats().polls < polls + 2u) std::this_thread::yield();
  runner.stop();

  std::uint32_t blocks = 0;
  std::uint32_t loop_drops = 0;
  for (const lx::PortMonitor& m : monitors) {
    blocks += m.stats().blocks;
    loop_drops += m.stats().notes_dropped;
  }
  const lc::LoopStats short_loop = monitors[0].stats();
  EXPECT_EQ(short_loop.dispatches, static_cast<std::uint32_t>(blocks_run));
  EXPECT_EQ(short_loop.blocks, static_cast<std::uint32_t>(blocks_run));
  EXPECT_EQ(blocks, static_cast<std::uint32_t>(blocks_run + kHung));
  // Each held round ended more blocks between two polls than the note ring holds.
  constexpr int kSurplus = kHeldBlocks - static_cast<int>(lc::kNoteCapacity);
  EXPECT_GE(short_loop.notes_dropped, static_cast<std::uint32_t>(kRounds * kSurplus));

  const std::vector<lc::BlockRecord> records = collector.records();
  const lc::WatchdogStats dog = watchdog.stats();
  ASSERT_EQ(records.size(), dog.reports);
  std::uint32_t confirmed = 0;
  std::uint32_t estimated = 0;
  std::vector<std::uint32_t> confirmed_of_short;
  for (const lc::BlockRecord& r : records) {
    if (r.phase != lc::Phase::final) continue;
    if ((r.flags & lc::kFlagEndEstimated) != 0) {
      ++estimated;
      continue;
    }
    ++confirmed;
    if (r.loop_index == 0) confirmed_of_short.push_back(r.dispatch);
  }
  EXPECT_EQ(dog.notes_dropped, loop_drops) << "the watchdog's statistics count every dropped note";
  EXPECT_EQ(confirmed + dog.notes_dropped, blocks) << "reported + counted as dropped == blocks the loops counted";
  EXPECT_EQ(estimated, dog.finals_estimated);
  std::sort(confirmed_of_short.begin(), confirmed_of_short.end());
  EXPECT_EQ(std::adjacent_find(confirmed_of_short.begin(), confirmed_of_short.end()), confirmed_of_short.end())
      << "a block reported twice";
  // The records after the last drops carry their count.
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back().notes_dropped, dog.notes_dropped);
}
