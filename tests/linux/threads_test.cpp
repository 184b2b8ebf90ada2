// SPDX-License-Identifier: MIT
// Threads and signals against the Linux port's stack capture: a loop thread that exits while it
// is sampled, one that blocks the sample signal, an application that installs its own handler
// (or the default action) for the sample signal after loopcanary did, 64 loop threads under
// one watchdog, and one that blocks every signal while parked in a system call (sampled without
// the signal). Each test asserts counters: every sample attempt is answered, taken without the
// signal, or counted as missed, and the attempts add up across the Platform, the Watchdog and the records. Waits are
// on counters and records, with generous deadlines; timing bounds are loose (the CI machine is a
// noisy 2-core VM).
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "emulation.hpp"
#include "linux_rig.hpp"

using namespace lctest;

namespace {

constexpr lc::Event kWork{"work"};
constexpr auto kDeadline = std::chrono::seconds(20);

/// Polls `done` until it holds or `timeout` passed. The pause between polls is the polling
/// granularity, not a wait standing in for the condition.
template <class Done>
bool wait_until(Done done, std::chrono::milliseconds timeout = kDeadline) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    timespec pause{0, 200'000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

/// Spins on the calling (loop) thread until `done` holds or `timeout` passed: the loop thread
/// stays on the CPU, in its dispatch, where the samples find it.
template <class Done>
__attribute__((noinline)) bool lc_test_spin_until(Done done, std::chrono::milliseconds timeout = kDeadline) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  volatile std::uint64_t x = 1;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    for (int i = 0; i < 256; ++i) x = x * 6364136223846793005u + 1442695040888963407u;
  }
  return true;
}

std::uint32_t missed(const lx::PlatformStats& s) {
  return s.missed_not_attached + s.missed_gone + s.missed_blocked + s.missed_timeout + s.missed_busy +
         s.missed_signal_error + s.missed_foreign_handler;
}

/// Waits until the watchdog thread has completed `n` more polls: a capture that was in flight
/// when this is called has then been counted.
bool wait_polls(const lx::WatchdogThread& runner, std::uint32_t n) {
  const std::uint32_t from = runner.stats().polls;
  return wait_until([&] { return runner.stats().polls - from >= n; });
}

/// One line of figures for the test log.
void print_figures(const char* what, const lx::PlatformStats& s, const lc::WatchdogStats& dog) {
  std::printf("[ FIGURES  ] %s: requested %u answered %u without_signal %u | missed: not_attached %u gone %u blocked %u timeout %u "
              "busy %u signal_error %u foreign_handler %u | watchdog samples_missed %u\n",
              what, s.samples_requested, s.samples_answered, s.samples_without_signal, s.missed_not_attached, s.missed_gone, s.missed_blocked,
              s.missed_timeout, s.missed_busy, s.missed_signal_error, s.missed_foreign_handler, dog.samples_missed);
}

std::size_t count_phase(const std::vector<lc::BlockRecord>& records, lc::Phase phase) {
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(), [phase](const lc::BlockRecord& r) { return r.phase == phase; }));
}

/// The attempts add up, for a run whose loops use no named scopes and whose every sampled
/// dispatch ended as a reported block (read once the watchdog thread has stopped):
///   - the Platform answered or counted each capture_stack call (one per sample attempt);
///   - each attempt is in its dispatch's final record, as taken or as missed;
///   - the Watchdog's samples_missed is the records' sum: the Platform's misses plus the
///     answers it discarded because the dispatch moved on during the capture.
void expect_every_attempt_counted(const lx::PlatformStats& p, const lc::WatchdogStats& dog,
                                  const std::vector<lc::BlockRecord>& records) {
  EXPECT_EQ(p.samples_requested, p.samples_answered + p.samples_without_signal + missed(p))
      << "each capture answered, taken without the signal, or counted as missed";
  std::uint64_t taken = 0;
  std::uint64_t record_missed = 0;
  for (const lc::BlockRecord& r : records) {
    if (r.phase != lc::Phase::final) continue;
    taken += r.samples_taken;
    record_missed += r.samples_missed;
  }
  EXPECT_EQ(taken + record_missed, p.samples_requested) << "each attempt is in its dispatch's record";
  EXPECT_EQ(record_missed, dog.samples_missed);
  ASSERT_GE(dog.samples_missed, missed(p)) << "each Platform miss is a missed sample of the watchdog";
  EXPECT_EQ(taken, p.samples_answered + p.samples_without_signal - (dog.samples_missed - missed(p)));
}

RigConfig fast_config() {
  RigConfig config;
  config.threshold_us = 5'000;
  config.sample_interval_us = 1'000;
  config.arm_permille = 0;
  config.hang_limit_us = 60'000'000;
  config.period_us = 1'000;
  return config;
}

}  // namespace

// (1) A loop thread that returns from its thread function in the middle of a long dispatch,
// still attached, just as the watchdog starts a capture of it. Each round a new thread attaches
// the same LoopThread, closes the dispatch its predecessor left open (end()), and begins
// another. The attempts after an exit are missed samples (gone); after detach() from the
// joining thread they are missed samples (not attached); no answer comes from a thread that is
// gone; the watchdog polls on; every dispatch is reported with all its attempts.
TEST(LinuxThreads, LoopThreadThatExitsMidDispatchWhileSampled) {
  constexpr std::uint32_t kRounds = 6;
  Rig rig;
  std::atomic<std::uint32_t> in_progress{0};
  rig.collector.on_record = [&](const lc::BlockRecord& r) {
    if (r.phase == lc::Phase::in_progress) in_progress.fetch_add(1);
  };
  ASSERT_NO_FATAL_FAILURE(rig.start(fast_config()));

  std::uint32_t gone = 0;
  for (std::uint32_t round = 0; round < kRounds; ++round) {
    std::thread loop([&] {
      ASSERT_TRUE(rig.loop_thread.attach().ok());
      if (round > 0) rig.monitor.end();  // the dispatch the previous thread left running
      const std::uint32_t answered = rig.platform.stats().samples_answered;
      rig.monitor.begin(kWork);
      // A block, reported, and sampled with an answer while the thread runs.
      ASSERT_TRUE(lc_test_spin_until(
          [&] { return in_progress.load() > round && rig.platform.stats().samples_answered > answered; }));
      // Exit the moment the watchdog begins its next capture (it counts the attempt, then
      // sends the signal): the thread dies around the signal's delivery.
      const std::uint32_t requested = rig.platform.stats().samples_requested;
      ASSERT_TRUE(lc_test_spin_until([&] { return rig.platform.stats().samples_requested != requested; }));
    });
    loop.join();
    ASSERT_TRUE(wait_polls(rig.runner, 2)) << "the watchdog thread must poll on after the exit";
    const lx::PlatformStats exited = rig.platform.stats();
    ASSERT_TRUE(wait_until([&] { return rig.platform.stats().missed_gone > exited.missed_gone; }))
        << "attempts on the exited thread must be counted as gone";
    const lx::PlatformStats before_detach = rig.platform.stats();
    EXPECT_EQ(before_detach.samples_answered, exited.samples_answered) << "no answer from a thread that is gone";
    EXPECT_EQ(before_detach.samples_requested - exited.samples_requested, missed(before_detach) - missed(exited));
    gone += before_detach.missed_gone - exited.missed_gone;

    rig.loop_thread.detach();  // documented: on any thread once the loop thread is joined
    EXPECT_FALSE(rig.loop_thread.attached());
    std::uint64_t us = 0;
    EXPECT_FALSE(rig.platform.thread_cpu_us(rig.loop_thread, us)) << "detached off its thread: no CPU time kept";
    EXPECT_FALSE(rig.platform.thread_wait_us(rig.loop_thread, us));
    ASSERT_TRUE(wait_until(
        [&] { return rig.platform.stats().missed_not_attached >= before_detach.missed_not_attached + 2; }))
        << "attempts after detach() must be counted as not attached";
  }
  std::thread closer([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    EXPECT_TRUE(attach.result().ok());
    rig.monitor.end();
  });
  closer.join();
  ASSERT_TRUE(wait_until([&] { return count_phase(rig.collector.records(), lc::Phase::final) == kRounds; }));
  ASSERT_TRUE(wait_polls(rig.runner, 2));
  rig.runner.stop();

  const std::vector<lc::BlockRecord> records = rig.collector.records();
  for (const lc::BlockRecord& r : records) {
    if (r.phase != lc::Phase::final) continue;
    EXPECT_EQ(r.flags & lc::kFlagEndEstimated, 0u) << "each end() of a left-over dispatch is its confirmed end";
    EXPECT_GT(r.samples_taken, 0u);
    EXPECT_GT(r.samples_missed, 0u) << "the attempts after the exit are in the record";
  }
  EXPECT_EQ(rig.monitor.stats().blocks, kRounds);
  const lx::PlatformStats s = rig.platform.stats();
  print_figures("exits mid-dispatch", s, rig.watchdog.stats());
  EXPECT_GE(gone, kRounds);
  EXPECT_EQ(s.missed_busy, 0u);
  EXPECT_EQ(s.missed_signal_error, 0u);
  expect_every_attempt_counted(s, rig.watchdog.stats(), records);
  EXPECT_LT(rig.runner.stats().max_lateness_us, 1'000'000u) << "the watchdog must never be held by a capture";
}

// (2) A loop thread that blocks the sample signal (pthread_sigmask) for several dispatches. The
// first attempt times out and finds the signal blocked and pending; every later attempt reads
// /proc and is refused without sending another signal. Every attempt is counted as blocked, one
// signal is queued in all, and sampling resumes once the thread unblocks it.
TEST(LinuxThreads, LoopThreadBlockingTheSignalHasEveryAttemptCounted) {
  LCTEST_SKIP_WITHOUT(proc_signals);
  constexpr std::uint32_t kDispatches = 3;
  constexpr std::uint32_t kAttempts = 8;  // per blocked dispatch, at least
  Rig rig;
  std::atomic<std::uint32_t> in_progress{0};
  std::atomic<std::uint32_t> finals{0};
  rig.collector.on_record = [&](const lc::BlockRecord& r) {
    if (r.phase == lc::Phase::in_progress) in_progress.fetch_add(1);
    if (r.phase == lc::Phase::final) finals.fetch_add(1);
  };
  ASSERT_NO_FATAL_FAILURE(rig.start(fast_config()));

  lx::PlatformStats blocked_phase{};
  int queued = 0;
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    ASSERT_TRUE(attach.result().ok());
    sigset_t sample;
    sigemptyset(&sample);
    sigaddset(&sample, rig.platform.sample_signal());
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &sample, nullptr), 0);
    for (std::uint32_t d = 0; d < kDispatches; ++d) {
      // The previous dispatch's report is out: no capture of it is still being counted.
      ASSERT_TRUE(wait_until([&] { return finals.load() == d; }));
      const std::uint32_t refused = rig.platform.stats().missed_blocked;
      rig.monitor.begin(kWork);
      ASSERT_TRUE(lc_test_spin_until([&] {
        return in_progress.load() > d && rig.platform.stats().missed_blocked >= refused + kAttempts;
      }));
      rig.monitor.end();
    }
    // Once the last final report is out, the watchdog has no dispatch of this loop to sample.
    ASSERT_TRUE(wait_until([&] { return finals.load() == kDispatches; }));
    blocked_phase = rig.platform.stats();
    // The real-time signals still queued for this thread: one per signal loopcanary sent.
    const timespec zero{0, 0};
    while (sigtimedwait(&sample, nullptr, &zero) == rig.platform.sample_signal()) ++queued;
    ASSERT_EQ(pthread_sigmask(SIG_UNBLOCK, &sample, nullptr), 0);

    rig.monitor.begin(kWork);
    ASSERT_TRUE(lc_test_spin_until([&] {
      return in_progress.load() > kDispatches &&
             rig.platform.stats().samples_answered >= blocked_phase.samples_answered + 2;
    })) << "sampling must resume once the thread unblocks the signal";
    rig.monitor.end();
  });
  loop.join();
  ASSERT_TRUE(wait_until([&] { return finals.load() == kDispatches + 1; }));
  ASSERT_TRUE(wait_polls(rig.runner, 2));
  rig.runner.stop();

  print_figures("signal blocked, then unblocked", rig.platform.stats(), rig.watchdog.stats());
  EXPECT_EQ(blocked_phase.samples_answered, 0u);
  EXPECT_GE(blocked_phase.samples_requested, kDispatches * kAttempts);
  EXPECT_EQ(blocked_phase.missed_blocked, blocked_phase.samples_requested) << "every attempt refused and counted";
  EXPECT_EQ(blocked_phase.missed_timeout, 0u) << "a blocked signal is recognised, not counted as a timeout";
  EXPECT_EQ(queued, 1) << "one signal sent in all: later attempts look at /proc instead of queueing more";
  const std::vector<lc::BlockRecord> records = rig.collector.records();
  for (const lc::BlockRecord& r : records) {
    if (r.phase != lc::Phase::final || r.dispatch > kDispatches) continue;
    EXPECT_EQ(r.samples_taken, 0u);
    EXPECT_GE(r.samples_missed, kAttempts);
  }
  expect_every_attempt_counted(rig.platform.stats(), rig.watchdog.stats(), records);
  EXPECT_LT(rig.runner.stats().max_lateness_us, 1'000'000u) << "the watchdog must never be held by a capture";
}

namespace {

std::atomic<std::uint32_t> g_foreign_calls{0};

void foreign_handler(int, siginfo_t*, void*) { g_foreign_calls.fetch_add(1, std::memory_order_relaxed); }

/// The application's own action for `signal`, installed over loopcanary's; the destructor puts
/// loopcanary's back (later tests of this process sample on the same signal).
class ForeignAction {
 public:
  ForeignAction(int signal, bool handler, void (*disposition)(int) = SIG_IGN) : signal_(signal) {
    struct sigaction action {};
    sigemptyset(&action.sa_mask);
    if (handler) {
      action.sa_sigaction = &foreign_handler;
      action.sa_flags = SA_SIGINFO | SA_RESTART;
    } else {
      action.sa_handler = disposition;
    }
    installed_ = sigaction(signal, &action, &saved_) == 0;
  }
  ~ForeignAction() { restore(); }
  ForeignAction(const ForeignAction&) = delete;
  ForeignAction& operator=(const ForeignAction&) = delete;
  bool installed() const { return installed_; }
  void restore() {
    if (installed_) sigaction(signal_, &saved_, nullptr);
    installed_ = false;
  }

 private:
  int signal_;
  struct sigaction saved_ {};
  bool installed_ = false;
};

}  // namespace

namespace {

/// Dispatches of one loop, run on its thread, for the handler tests: each dispatch runs until
/// `done` holds, ends, and returns once its final record is out. The watchdog then has nothing
/// of this loop to sample, and this thread has made system calls since (the polls' sleeps), so
/// no sample signal is still on its way to it: the signal's action may change safely here.
struct HandlerLoop {
  Rig& rig;
  std::atomic<std::uint32_t> in_progress{0};
  std::atomic<std::uint32_t> finals{0};

  explicit HandlerLoop(Rig& r) : rig(r) {
    rig.collector.on_record = [this](const lc::BlockRecord& record) {
      if (record.phase == lc::Phase::in_progress) in_progress.fetch_add(1);
      if (record.phase == lc::Phase::final) finals.fetch_add(1);
    };
  }

  template <class Done>
  bool block(Done done) {
    const std::uint32_t reported = in_progress.load();
    const std::uint32_t ended = finals.load();
    rig.monitor.begin(kWork);
    const bool ok = lc_test_spin_until([&] { return in_progress.load() > reported && done(); });
    rig.monitor.end();
    return ok && wait_until([&] { return finals.load() > ended; });
  }

  /// A block sampled with at least `answers` answers.
  bool answered_block(std::uint32_t answers) {
    const std::uint32_t from = rig.platform.stats().samples_answered;
    return block([&] { return rig.platform.stats().samples_answered >= from + answers; });
  }

  /// A block with at least `attempts` sample attempts.
  bool attempted_block(std::uint32_t attempts) {
    const std::uint32_t from = rig.platform.stats().samples_requested;
    return block([&] { return rig.platform.stats().samples_requested >= from + attempts; });
  }
};

}  // namespace

// (3) The application installs its own handler for the sample signal (sigaction) after
// loopcanary did, and later puts loopcanary's back; then the same with SIG_IGN. While the action
// is not loopcanary's handler, no sample signal is sent (the application's handler is not called
// by loopcanary: it could take the signal for its own), every attempt of a dispatch is counted
// as missed (foreign handler), nothing is waited for, and the watchdog polls on. Sampling
// resumes once loopcanary's handler is back: the application restores the saved action, or
// (after SIG_IGN) another Platform::init with replace_existing_handler installs it again.
TEST(LinuxThreads, HandlerReplacedByTheApplicationIsDetectedAndCounted) {
  constexpr std::uint32_t kAttempts = 10;
  Rig rig;
  HandlerLoop loop(rig);
  ASSERT_NO_FATAL_FAILURE(rig.start(fast_config()));
  const int signal = rig.platform.sample_signal();

  std::thread thread([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    ASSERT_TRUE(attach.result().ok());
    for (int phase = 0; phase < 2; ++phase) {
      ASSERT_TRUE(loop.answered_block(1)) << "phase " << phase << ": sampled with loopcanary's handler";
      ForeignAction foreign(signal, phase == 0);
      ASSERT_TRUE(foreign.installed());
      const lx::PlatformStats from = rig.platform.stats();
      const std::uint32_t calls = g_foreign_calls.load();
      ASSERT_TRUE(loop.attempted_block(kAttempts)) << "phase " << phase;
      const lx::PlatformStats to = rig.platform.stats();
      EXPECT_EQ(g_foreign_calls.load(), calls) << "loopcanary must not signal a handler that is not its own";
      EXPECT_EQ(to.samples_answered, from.samples_answered);
      EXPECT_GE(to.samples_requested - from.samples_requested, kAttempts);
      EXPECT_EQ(to.samples_requested - from.samples_requested, to.missed_foreign_handler - from.missed_foreign_handler)
          << "every attempt counted as refused for the foreign action";
      EXPECT_EQ(to.missed_timeout, from.missed_timeout) << "nothing sent, nothing waited for";
      if (phase == 0) {
        foreign.restore();  // the application puts back the action its sigaction call returned
      } else {
        lx::Platform other;  // or another Platform::init that replaces the handler
        lx::PlatformConfig config;
        config.replace_existing_handler = true;
        EXPECT_EQ(other.init(config).error, lx::Error::none);
      }
      EXPECT_TRUE(loop.answered_block(2)) << "phase " << phase << ": sampling must resume with loopcanary's handler";
    }
  });
  thread.join();
  ASSERT_TRUE(wait_polls(rig.runner, 2));
  rig.runner.stop();
  EXPECT_EQ(loop.finals.load(), 6u);
  print_figures("foreign handler, then SIG_IGN", rig.platform.stats(), rig.watchdog.stats());
  expect_every_attempt_counted(rig.platform.stats(), rig.watchdog.stats(), rig.collector.records());
  EXPECT_LT(rig.runner.stats().max_lateness_us, 1'000'000u) << "the watchdog must never be held by a capture";
}

namespace {

// Runs in a child process (death test): between two dispatches of a sampled loop, the
// application resets the sample signal to its default action, which ends the process for a
// real-time signal; the next dispatch runs past its threshold while the watchdog samples it.
// Exits 0 when the process lived through its sample attempts, each counted as missed.
[[noreturn]] void sample_with_default_action() {
  Rig rig;
  HandlerLoop loop(rig);
  rig.start(fast_config());
  bool ok = false;
  lx::PlatformStats from{};
  std::thread thread([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    if (!attach.result().ok() || !loop.answered_block(1)) return;
    ForeignAction reset(rig.platform.sample_signal(), false, SIG_DFL);
    from = rig.platform.stats();
    ok = reset.installed() && loop.attempted_block(10);
  });
  thread.join();
  ok = ok && wait_polls(rig.runner, 2);
  const lx::PlatformStats to = rig.platform.stats();
  ok = ok && to.samples_answered == from.samples_answered && to.samples_requested - from.samples_requested >= 10 &&
       to.samples_requested - from.samples_requested == to.missed_foreign_handler - from.missed_foreign_handler;
  std::_Exit(ok ? 0 : 3);
}

}  // namespace

// (3b) The application resets the sample signal to SIG_DFL (whose action for a real-time signal
// ends the process) while its loop is monitored: the process lives on, every attempt counted.
TEST(LinuxThreadsDeathTest, SampleSignalResetToTheDefaultActionDoesNotEndTheProcess) {
  LCTEST_SKIP_WITHOUT(exec_self);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(sample_with_default_action(), ::testing::ExitedWithCode(0), "");
}

// (4) 64 loop threads under one watchdog thread, each blocked in a dispatch (waiting on a gate)
// until the watchdog has reported every one in progress; then all end. Every block is reported
// in progress and final (confirmed) for its own loop, nothing is dropped, no capture collides
// with another, and the attempts add up.
TEST(LinuxThreads, SixtyFourLoopThreadsUnderOneWatchdog) {
  constexpr std::size_t kLoops = 64;
  struct World {
    lx::Platform platform;
    lx::LoopThread threads[kLoops];
    lx::PortMonitor monitors[kLoops];
    lc::StaticWatchdog<kLoops, 256> watchdog;  // room for every report (2 per loop)
    lx::WatchdogThread runner;
    Collector collector;
  };
  auto world = std::make_unique<World>();
  World& w = *world;
  char text[256];
  const lx::Result p = w.platform.init();
  ASSERT_TRUE(p.ok()) << lx::format(p, text, sizeof text);
  lc::WatchdogConfig wc;
  wc.qualifier = "threads-64";
  ASSERT_EQ(w.watchdog.init(wc, w.platform.hal()), lc::Status::ok);
  for (std::size_t i = 0; i < kLoops; ++i) {
    lc::MonitorConfig mc;
    mc.name = "loop";
    mc.tick_hz = lx::tick_hz();
    mc.threshold_us = 20'000;
    mc.sample_interval_us = 5'000;
    mc.arm_permille = 0;
    mc.hang_limit_us = 60'000'000;
    mc.context = &w.threads[i];
    ASSERT_EQ(w.monitors[i].init(mc), lc::Status::ok);
    ASSERT_EQ(w.watchdog.add(w.monitors[i]), lc::Status::ok);
  }
  std::mutex reported_mutex;
  std::vector<int> in_progress(kLoops, 0);
  std::vector<int> finals(kLoops, 0);
  std::atomic<std::size_t> loops_in_progress{0};
  std::atomic<std::size_t> loops_final{0};
  w.collector.on_record = [&](const lc::BlockRecord& r) {
    std::lock_guard<std::mutex> lock(reported_mutex);
    if (r.phase == lc::Phase::in_progress && in_progress[r.loop_index]++ == 0) loops_in_progress.fetch_add(1);
    if (r.phase == lc::Phase::final && finals[r.loop_index]++ == 0) loops_final.fetch_add(1);
  };
  ASSERT_EQ(w.watchdog.add_interceptor(&Collector::intercept, &w.collector), lc::Status::ok);
  lx::WatchdogThreadConfig tc;
  tc.period_us = 2'000;
  const lx::Result started = w.runner.start(w.watchdog, tc);
  ASSERT_TRUE(started.ok()) << lx::format(started, text, sizeof text);

  std::mutex gate_mutex;
  std::condition_variable gate;
  bool open = false;
  std::vector<std::thread> loops;
  for (std::size_t i = 0; i < kLoops; ++i) {
    loops.emplace_back([&, i] {
      lx::ScopedLoopThread attach(w.threads[i]);
      EXPECT_TRUE(attach.result().ok());
      w.monitors[i].begin(kWork);
      {
        std::unique_lock<std::mutex> lock(gate_mutex);
        gate.wait(lock, [&] { return open; });  // woken by every sample signal: waits on
      }
      w.monitors[i].end();
    });
  }
  const bool all_reported = wait_until([&] { return loops_in_progress.load() == kLoops; }, std::chrono::seconds(60));
  {
    std::lock_guard<std::mutex> lock(gate_mutex);
    open = true;
  }
  gate.notify_all();
  for (std::thread& t : loops) t.join();
  ASSERT_TRUE(all_reported) << loops_in_progress.load() << " of " << kLoops << " loops reported in progress";
  ASSERT_TRUE(wait_until([&] { return loops_final.load() == kLoops; }, std::chrono::seconds(60)));
  ASSERT_TRUE(wait_polls(w.runner, 2));
  w.runner.stop();

  const std::vector<lc::BlockRecord> records = w.collector.records();
  const lc::WatchdogStats dog = w.watchdog.stats();
  for (std::size_t i = 0; i < kLoops; ++i) {
    EXPECT_EQ(in_progress[i], 1) << "loop " << i;
    EXPECT_EQ(finals[i], 1) << "loop " << i;
    EXPECT_EQ(w.monitors[i].stats().blocks, 1u) << "loop " << i;
  }
  for (const lc::BlockRecord& r : records) {
    if (r.phase == lc::Phase::final) {
      EXPECT_EQ(r.flags & lc::kFlagEndEstimated, 0u);
    }
  }
  EXPECT_EQ(records.size(), 2 * kLoops);
  EXPECT_EQ(dog.reports, records.size());
  EXPECT_EQ(dog.records_dropped, 0u);
  EXPECT_EQ(dog.notes_dropped, 0u);
  EXPECT_EQ(dog.watches_busy, 0u);
  const lx::PlatformStats s = w.platform.stats();
  print_figures("64 loop threads", s, dog);
  EXPECT_GT(s.samples_answered, 0u);
  EXPECT_EQ(s.missed_busy, 0u) << "one watchdog thread: captures never overlap";
  EXPECT_EQ(s.missed_signal_error, 0u);
  EXPECT_EQ(s.missed_foreign_handler, 0u);
  // A capture that races a thread's end() and detach may find it detached or gone: counted.
  expect_every_attempt_counted(s, dog, records);
}

namespace {

/// Parks the calling (loop) thread in pthread_cond_wait until `open` holds: its frame is on the
/// stack, below the C library's, while the thread waits in the futex system call.
__attribute__((noinline)) void lc_test_wait_parked(pthread_mutex_t& mutex, pthread_cond_t& cond, const bool& open) {
  pthread_mutex_lock(&mutex);
  while (!open) pthread_cond_wait(&cond, &mutex);
  pthread_mutex_unlock(&mutex);
  asm volatile("" ::: "memory");  // no tail call: the return address stays in this function
}

}  // namespace

// (5) The case of an RTOS simulator (FreeRTOS's POSIX port parks a waiting task with every
// signal blocked): a loop thread that blocks all signals and waits on a condition variable
// inside a dispatch. The sample signal cannot reach it; the watchdog samples it from
// /proc/self/task/<tid>/syscall instead (the program counter and stack pointer of the parked
// system call, then the return addresses on its stack). The block is reported off the CPU with
// samples taken, the samples name the waiting function, each sample ends with the
// without-signal marker frame, one signal is sent in all, and the attempts add up.
TEST(LinuxThreads, LoopThreadParkedWithAllSignalsBlockedIsSampledFromItsSystemCall) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  constexpr std::uint32_t kSamples = 5;
  Rig rig;
  std::atomic<std::uint32_t> in_progress{0};
  std::atomic<std::uint32_t> finals{0};
  rig.collector.on_record = [&](const lc::BlockRecord& r) {
    if (r.phase == lc::Phase::in_progress) in_progress.fetch_add(1);
    if (r.phase == lc::Phase::final) finals.fetch_add(1);
  };
  RigConfig config = fast_config();
  config.sample_interval_us = 5'000;
  ASSERT_NO_FATAL_FAILURE(rig.start(config));

  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  bool open = false;
  std::atomic<bool> parking{false};
  int queued = 0;
  std::thread loop([&] {
    lx::ScopedLoopThread attach(rig.loop_thread);
    ASSERT_TRUE(attach.result().ok());
    sigset_t all;
    sigfillset(&all);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &all, nullptr), 0);
    rig.monitor.begin(kWork);
    parking.store(true);
    lc_test_wait_parked(mutex, cond, open);
    rig.monitor.end();
    ASSERT_TRUE(wait_until([&] { return finals.load() == 1; }));
    ASSERT_TRUE(wait_polls(rig.runner, 2));
    sigset_t sample;
    sigemptyset(&sample);
    sigaddset(&sample, rig.platform.sample_signal());
    const timespec zero{0, 0};
    while (sigtimedwait(&sample, nullptr, &zero) == rig.platform.sample_signal()) ++queued;
  });
  // Open the gate once the block is reported and sampled a few times (or, before the fix, once
  // the attempts that would have sampled it are over).
  const bool sampled = wait_until([&] {
    return parking.load() && in_progress.load() > 0 && rig.platform.stats().samples_requested >= kSamples + 1;
  });
  pthread_mutex_lock(&mutex);
  open = true;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&mutex);
  loop.join();
  ASSERT_TRUE(sampled);
  rig.runner.stop();

  const std::vector<lc::BlockRecord> records = rig.collector.records();
  lc::BlockRecord final;
  ASSERT_TRUE(rig.collector.wait_for_phase(lc::Phase::final, final, std::chrono::seconds(0)));
  const lx::PlatformStats s = rig.platform.stats();
  print_figures("all signals blocked, parked in a system call", s, rig.watchdog.stats());
  std::printf("[ FIGURES  ] cause %s, samples taken %u missed %u\n%s", lc::to_string(final.cause),
              final.samples_taken, final.samples_missed, describe_stacks(final).c_str());
  EXPECT_NE(final.cause, lc::Cause::running) << "the loop waited off the CPU";
  EXPECT_GE(final.samples_taken, kSamples) << "the parked thread is sampled without the signal";
  EXPECT_TRUE(any_frame_in(final, "lc_test_wait_parked")) << describe_stacks(final);
  ASSERT_GT(final.sample_count, 0u);
  for (std::uint8_t i = 0; i < final.sample_count; ++i) {
    const lc::Sample& sample = final.samples[i];
    ASSERT_GE(sample.pc_count, 2u) << "the parked PC and the marker, at least";
    EXPECT_EQ(sample.frames[sample.scope_count + sample.pc_count - 1], lx::without_signal_frame())
        << "a sample taken without the signal ends with the marker frame";
  }
  EXPECT_TRUE(any_frame_in(final, "sampled_without_signal")) << "the marker symbolises to its name";
  EXPECT_EQ(s.samples_answered, 0u) << "the signal never reached the thread";
  EXPECT_GE(s.samples_without_signal, kSamples);
  EXPECT_EQ(queued, 1) << "one signal sent in all: later attempts look at /proc instead of queueing more";
  expect_every_attempt_counted(s, rig.watchdog.stats(), records);
  EXPECT_LT(rig.runner.stats().max_lateness_us, 1'000'000u) << "the watchdog must never be held by a capture";
}
