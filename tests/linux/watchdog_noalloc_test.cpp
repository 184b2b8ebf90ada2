// SPDX-License-Identifier: MIT
// No-allocation test of the Linux port's watchdog path, on real threads: every global
// allocation function is replaced by the counting one of tests/noalloc_counter.cpp (which
// counts the calls of every thread of the process), and while a loop thread blocks (running,
// sampled by the signal; then parked in a system call with every signal blocked, sampled from
// /proc/self/task/<tid>/syscall and its stack) the watchdog thread polls at 2 kHz: stack
// captures and the signal handler, CPU readings (/proc/stat, /proc/self/stat, schedstat),
// debugger checks (/proc/self/status), memory readings and the file sink writing every report
// in its three forms, after open() and a first round of the same records. Nothing is allocated.
// The positive control: the same round with an interceptor that allocates once per report is
// counted.
//
// The file sink runs with symbol_names off: naming functions demangles (abi::__cxa_demangle
// allocates) and loads a module's symbol table when it is first needed; module + offset and
// build-id need no allocation (docs/reliability.md).
//
// Not built under the sanitizers (LOOPCANARY_NOALLOC_TEST).
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "emulation.hpp"
#include "../temp_dir.hpp"
#include "loopcanary/linux/file_sink.hpp"
#include "loopcanary/linux/watchdog_thread.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "loopcanary/port/linux/wait.hpp"
#include "noalloc_counter.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

constexpr lc::Event kWork{"noalloc_work"};

/// Waits (sleeping 1 ms at a time, which allocates nothing) until `done` holds, at most 20 s.
template <class Done>
bool wait_until(Done done) {
  for (int i = 0; i < 20'000; ++i) {
    if (done()) return true;
    const timespec ms{0, 1'000'000};
    nanosleep(&ms, nullptr);
  }
  return done();
}

__attribute__((noinline)) void lc_noalloc_spin(const lx::PortMonitor& monitor, lc::tick_t ticks) {
  const lc::tick_t start = lx::Clock::now();
  while (lx::Clock::now() - start < ticks) asm volatile("" ::: "memory");
  static_cast<void>(monitor);
}

__attribute__((noinline)) void lc_noalloc_park(pthread_mutex_t& mutex, pthread_cond_t& cond, const bool& open) {
  pthread_mutex_lock(&mutex);
  while (!open) pthread_cond_wait(&cond, &mutex);
  pthread_mutex_unlock(&mutex);
  asm volatile("" ::: "memory");
}

std::atomic<bool> g_allocate_in_interceptor{false};
void allocating_interceptor(void*, const lc::BlockRecord&) {
  if (!g_allocate_in_interceptor.load()) return;
  void* p = std::malloc(32);
  noalloc::escape(p);
  std::free(p);
}

/// A loop thread that runs one round per go(): a dispatch that runs 40 ms (sampled by the
/// signal), then one parked in pthread_cond_wait with every signal blocked until the test
/// opens the gate. Each dispatch is a block: an in_progress and a final report.
class Loop {
 public:
  explicit Loop(lx::PortMonitor& monitor, lx::LoopThread& thread) : monitor_(monitor), thread_(thread) {
    worker_ = std::thread([this] { run(); });
  }
  ~Loop() {
    quit_.store(true);
    go();
    worker_.join();
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  void go() { rounds_requested_.fetch_add(1); }
  bool parked() const { return parked_.load(); }
  void open_gate() {
    pthread_mutex_lock(&mutex_);
    open_ = true;
    pthread_cond_signal(&cond_);
    pthread_mutex_unlock(&mutex_);
  }
  std::uint32_t rounds_done() const { return rounds_done_.load(); }
  bool attached() const { return attached_.load(); }

 private:
  void run() {
    lx::ScopedLoopThread attach(thread_);
    attached_.store(attach.result().ok());
    std::uint32_t done = 0;
    for (;;) {
      while (rounds_requested_.load() == done) {
        const timespec ms{0, 1'000'000};
        nanosleep(&ms, nullptr);
      }
      if (quit_.load()) return;
      {
        LOOPCANARY_DISPATCH(monitor_, kWork);
        LOOPCANARY_SCOPE(monitor_, "spinning");
        lc_noalloc_spin(monitor_, lx::tick_hz() / 25u);  // 40 ms
      }
      sigset_t all;
      sigset_t old;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, &old);
      {
        LOOPCANARY_DISPATCH(monitor_, kWork);
        LOOPCANARY_SCOPE(monitor_, "parked");
        parked_.store(true);
        lc_noalloc_park(mutex_, cond_, open_);
        parked_.store(false);
      }
      pthread_mutex_lock(&mutex_);
      open_ = false;
      pthread_mutex_unlock(&mutex_);
      pthread_sigmask(SIG_SETMASK, &old, nullptr);  // a sample signal still queued is answered, or finds no request
      rounds_done_.store(++done);
    }
  }

  lx::PortMonitor& monitor_;
  lx::LoopThread& thread_;
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond_ = PTHREAD_COND_INITIALIZER;
  bool open_ = false;
  std::atomic<bool> parked_{false};
  std::atomic<bool> quit_{false};
  std::atomic<bool> attached_{false};
  std::atomic<std::uint32_t> rounds_requested_{0};
  std::atomic<std::uint32_t> rounds_done_{0};
  std::thread worker_;
};

/// One round: the running dispatch, then the parked one, released once it was sampled three
/// times without the signal and reported in progress; done when the sink has written the
/// round's four reports.
testing::AssertionResult round(Loop& loop, const lx::Platform& platform, const lx::FileSink& sink,
                               std::uint32_t number) {
  const std::uint32_t without_signal = platform.stats().samples_without_signal;
  const std::uint64_t written = sink.status().records_written;
  loop.go();
  // Parked, sampled, and reported in progress (the running dispatch's two reports before it).
  if (!wait_until([&] {
        return loop.parked() && platform.stats().samples_without_signal >= without_signal + 3 &&
               sink.status().records_written >= written + 3;
      })) {
    return testing::AssertionFailure() << "the parked dispatch was not sampled without the signal and reported";
  }
  loop.open_gate();
  if (!wait_until([&] { return loop.rounds_done() == number && sink.status().records_written >= written + 4; })) {
    return testing::AssertionFailure() << "the round's four reports did not reach the sink: rounds done "
                                       << loop.rounds_done() << ", records written "
                                       << sink.status().records_written - written << ", sink: " << sink.status().message;
  }
  return testing::AssertionSuccess();
}

}  // namespace

TEST(LinuxWatchdogNoAlloc, SamplingProcReadsAndTheFileSinkAllocateNothing) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  loopcanary::test::TempDir dir;
  lx::Platform platform;
  lx::PlatformConfig pc;
  pc.sample_timeout_us = 1'000;
  ASSERT_TRUE(platform.init(pc).ok());
  lx::LoopThread thread;
  lx::PortMonitor monitor;
  lc::MonitorConfig mc;
  mc.name = "noalloc";
  mc.tick_hz = lx::tick_hz();
  mc.threshold_us = 20'000;
  mc.sample_interval_us = 2'000;
  mc.hang_limit_us = 1'000'000;
  mc.context = &thread;
  ASSERT_EQ(monitor.init(mc), lc::Status::ok);

  lx::FileSink sink;
  lx::FileSinkConfig sc;
  sc.directory = dir.path().c_str();
  sc.binary = true;
  sc.symbol_names = false;
  ASSERT_EQ(sink.open(sc), lx::SinkError::none);

  lc::StaticWatchdog<1, 64> watchdog;
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}, platform.hal()), lc::Status::ok);
  ASSERT_EQ(watchdog.add(monitor), lc::Status::ok);
  ASSERT_EQ(watchdog.add_interceptor(&lx::FileSink::interceptor, &sink), lc::Status::ok);
  ASSERT_EQ(watchdog.add_interceptor(&allocating_interceptor, nullptr), lc::Status::ok);
  lx::WatchdogThread runner;
  lx::WatchdogThreadConfig wc;
  wc.period_us = 500;
  Loop loop(monitor, thread);
  ASSERT_TRUE(wait_until([&] { return loop.attached(); }));
  ASSERT_TRUE(runner.start(watchdog, wc).ok());

  // Round 1, not measured: the same records once, so what is done once per process (the clock
  // and time-zone set-up of the C library, the first /proc reads) is done.
  ASSERT_TRUE(round(loop, platform, sink, 1));

  const lx::PlatformStats p0 = platform.stats();
  const lx::SinkStatus s0 = sink.status();
  const std::uint32_t polls0 = runner.stats().polls;
  noalloc::MeasuredSection section;
  const testing::AssertionResult measured = round(loop, platform, sink, 2);
  section.stop();
  ASSERT_TRUE(measured);
  const lx::PlatformStats p1 = platform.stats();
  const lx::SinkStatus s1 = sink.status();

  EXPECT_EQ(section.allocations(), 0u);
  EXPECT_EQ(section.deallocations(), 0u);
  // The path measured is the whole one.
  EXPECT_GE(p1.samples_answered - p0.samples_answered, 5u) << "samples taken by the signal";
  EXPECT_GE(p1.samples_without_signal - p0.samples_without_signal, 3u) << "samples taken from /proc";
  EXPECT_GE(p1.debugger_checks - p0.debugger_checks, 1u) << "TracerPid read from /proc/self/status";
  EXPECT_EQ(p1.counter_failures, 0u) << "/proc/stat and /proc/self/stat read";
  EXPECT_EQ(p1.cpu_time_failures, 0u);
  EXPECT_EQ(s1.records_written - s0.records_written, 4u) << "two blocks: in progress and final each";
  EXPECT_EQ(s1.records_failed, 0u);
  EXPECT_GT(s1.bytes_written, s0.bytes_written);
  EXPECT_GE(runner.stats().polls - polls0, 50u);

  // Positive control: the same round with an interceptor that allocates once per report.
  g_allocate_in_interceptor.store(true);
  noalloc::MeasuredSection control;
  const testing::AssertionResult controlled = round(loop, platform, sink, 3);
  control.stop();
  g_allocate_in_interceptor.store(false);
  ASSERT_TRUE(controlled);
  EXPECT_GE(control.allocations(), 4u) << "the counter sees the watchdog thread's allocations";

  runner.stop();
}

// Reading what a thread waits on allocates nothing: a lock with its holder named (the longest
// path: the lock's memory, the holder's name, the confirming second reading) and a socket.
TEST(LinuxWatchdogNoAlloc, ReadingAWaitObjectAllocatesNothing) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  std::atomic<bool> held{false}, release{false};
  std::thread holder([&] {
    pthread_setname_np(pthread_self(), "holder");
    pthread_mutex_lock(&m);
    held.store(true);
    while (!release.load()) std::this_thread::yield();
    pthread_mutex_unlock(&m);
  });
  while (!held.load()) std::this_thread::yield();
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
  });
  while (tid.load() == 0) std::this_thread::yield();
  lc::WaitObject w;
  ASSERT_TRUE(wait_until([&] { return lx::read_wait_object(tid.load(), w) && w.owner != 0; }));

  noalloc::MeasuredSection section;
  bool read = true;
  for (int i = 0; i < 20; ++i) read = lx::read_wait_object(tid.load(), w) && read;
  section.stop();
  release.store(true);
  holder.join();
  waiter.join();
  EXPECT_TRUE(read);
  EXPECT_EQ(w.kind, lc::WaitKind::mutex);
  EXPECT_STREQ(w.owner_name, "holder") << "the measured path is the whole one";
  EXPECT_EQ(section.allocations(), 0u);
}
