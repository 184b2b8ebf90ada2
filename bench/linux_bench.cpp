// SPDX-License-Identifier: MIT
// Benchmarks of port "linux", registered into loopcanary_bench (this file has no main()).
// docs/benchmarks.md has the figures and the command; compare within one run, interleaved:
//
//   loopcanary_bench --benchmark_filter='Linux|StackSample' --benchmark_repetitions=10
//                    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//
//   BM_LinuxClockRead         one read of the port's hot-tier clock (Clock::now()): the floor
//   BM_LinuxBeginEnd          begin() + end() on a PortMonitor: two clock reads and the stamps;
//                             target: median <= 1.10 x 2 x median of BM_LinuxClockRead
//   BM_LinuxBackToBack        one dispatch of a back-to-back stream (next() on a PortMonitor):
//                             one clock read and the stamps; target: median <= 1.10 x median of
//                             BM_LinuxClockRead
//   BM_LinuxZone              a peer: a zone of a trace profiler written here (two raw counter reads
//                             and a 16-byte record into a ring, as Tracy-style profilers do)
//   BM_LinuxPairHistogramAtOnce / BM_LinuxPairHistogramLater
//                             two clock reads and their difference counted in a log2 histogram
//                             at once, or at the next count (why the monitor counts later on x86)
//   BM_LinuxPostedPairWithoutHealth / BM_LinuxPostedPairWithHealth
//                             a clock read, begin_at(event, now, posted) and end() for an event
//                             without / with EventHealth storage (queue latency counted at once)
//   BM_LinuxCounterRead       the raw CPU counter (x86-64 TSC, AArch64 CNTVCT_EL0), for reference
//   BM_LinuxMonotonicRead     clock_gettime(CLOCK_MONOTONIC) in microseconds (the vDSO fallback)
//   BM_StackSample            one signal round trip sampling a thread 32 frames deep (target
//                             <= 20 us wall); counter loop_us: the sampled thread's own loss per
//                             sample (the median gap the signal leaves in its spin)
//   BM_StackSampleNoSpin      the same with PlatformConfig::no_sample_spin: the watchdog sleeps
//                             on the answer at once
//   BM_WaitObjectMutex        read_wait_object of a thread blocked on a std::mutex a named thread
//                             holds: its state, system call, the lock's head, the holder's name,
//                             and the second reading that confirms them
//   BM_WaitObjectPipe         read_wait_object of a thread blocked reading an idle pipe
//   BM_LinuxWatchdogPoll/N    one poll over N idle loops with the Linux Hal (debugger check
//                             included, cached); per_loop = time / N (target <= 100 ns)
//   BM_FileSinkWrite/sync:S   FileSink::write of one block record (8 samples) to its JSON
//                             Lines and text logs, without (S = 0) and with (S = 1)
//                             FileSinkConfig::sync; in LOOPCANARY_BENCH_DIR (default /var/tmp:
//                             a disk, where tmpfs would make fdatasync free)
//
// Built with frame pointers for this file (bench/CMakeLists.txt), so the sampled thread's 32
// frames are all walked.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "loopcanary/linux/file_sink.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "loopcanary/port/linux/wait.hpp"

#include <pthread.h>
#include <sys/syscall.h>

#include <mutex>

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

constexpr lc::Event kLinuxEvent{"sensor_read"};

lc::MonitorConfig linux_config(const char* name = "bench") {
  lc::MonitorConfig config;
  config.name = name;
  config.tick_hz = lx::tick_hz();
  config.threshold_us = 1'000'000;  // never reached: every dispatch here is short
  return config;
}

void add_clock_context(benchmark::State& state) {
  const lx::ClockInfo& info = lx::clock_info();
  state.SetLabel(std::string(info.name) + " @ " + std::to_string(info.tick_hz) + " Hz");
}

void BM_LinuxClockRead(benchmark::State& state) {
  add_clock_context(state);
  for (auto _ : state) {
    lc::tick_t t = lx::Clock::now();
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_LinuxClockRead);

void BM_LinuxBeginEnd(benchmark::State& state) {
  add_clock_context(state);
  auto monitor = std::make_unique<lx::PortMonitor>();
  if (monitor->init(linux_config()) != lc::Status::ok) {
    state.SkipWithError("Monitor::init failed");
    return;
  }
  for (auto _ : state) {
    monitor->begin(kLinuxEvent);
    monitor->end();
    benchmark::ClobberMemory();  // the stamps are stored every iteration
  }
  if (monitor->stats().dispatches != static_cast<std::uint32_t>(state.iterations())) {
    state.SkipWithError("dispatch count does not match the iterations");
  }
}
BENCHMARK(BM_LinuxBeginEnd);

void BM_LinuxBackToBack(benchmark::State& state) {
  add_clock_context(state);
  auto monitor = std::make_unique<lx::PortMonitor>();
  if (monitor->init(linux_config()) != lc::Status::ok) {
    state.SkipWithError("Monitor::init failed");
    return;
  }
  monitor->begin(kLinuxEvent);
  for (auto _ : state) {
    monitor->next(kLinuxEvent);  // ends the running dispatch, begins the next: one clock read
    benchmark::ClobberMemory();
  }
  monitor->end();
  if (monitor->stats().dispatches != static_cast<std::uint32_t>(state.iterations() + 1)) {
    state.SkipWithError("dispatch count does not match the iterations");
  }
}
BENCHMARK(BM_LinuxBackToBack);

// Why the monitor counts a duration in its histogram at the next end on x86 (histogram.hpp,
// kHistogramCountsLater): two clock reads and their difference counted in the histogram, at
// once (the counter's address depends on the second read) or at the next count (the address
// of the previous difference). Not the monitor's cost: the experiment behind its layout.
template <bool CountsLater>
void histogram_pair(benchmark::State& state) {
  auto histogram = std::make_unique<lc::detail::HistogramCounters<true, CountsLater>>();
  for (auto _ : state) {
    const lc::tick_t a = lx::Clock::now();
    const lc::tick_t b = lx::Clock::now();
    histogram->count(b - a);
  }
  benchmark::DoNotOptimize(histogram->bucket(0));
}
void BM_LinuxPairHistogramAtOnce(benchmark::State& state) { histogram_pair<false>(state); }
BENCHMARK(BM_LinuxPairHistogramAtOnce);
void BM_LinuxPairHistogramLater(benchmark::State& state) { histogram_pair<true>(state); }
BENCHMARK(BM_LinuxPairHistogramLater);

// Queue latency on the hot path (health.hpp): a clock read, begin_at(event, now, posted) and
// end(), the post stamp the previous iteration's clock read (a latency of one iteration, from a
// word the loop keeps, as a queued message carries it), for an event without EventHealth
// storage and one with storage (its latency counted in its histogram at once). The event comes
// through a pointer the compiler cannot see through, as a dispatcher takes it from its table.
// Against BM_LinuxBeginEnd: does the latency counter, whose address depends on the clock read,
// hold the end's read back as the duration counter did (BM_LinuxPairHistogramAtOnce)?
lc::EventHealth g_bench_health;
constexpr lc::Event kLinuxEventWithHealth{"sensor_read", 0, &g_bench_health};

void posted_pair(benchmark::State& state, const lc::Event& table_event) {
  add_clock_context(state);
  auto monitor = std::make_unique<lx::PortMonitor>();
  if (monitor->init(linux_config()) != lc::Status::ok) {
    state.SkipWithError("Monitor::init failed");
    return;
  }
  const lc::Event* event = &table_event;
  benchmark::DoNotOptimize(event);
  const std::uint32_t recorded = event->health != nullptr ? event->health->stats().dispatches : 0u;
  lc::tick_t posted = lx::Clock::now();
  for (auto _ : state) {
    const lc::tick_t now = lx::Clock::now();
    monitor->begin_at(*event, now, posted);
    monitor->end();
    posted = now;
    benchmark::ClobberMemory();
  }
  const auto iterations = static_cast<std::uint32_t>(state.iterations());
  if (monitor->stats().dispatches != iterations ||
      (event->health != nullptr && event->health->stats().dispatches - recorded != iterations)) {
    state.SkipWithError("dispatch or latency count does not match the iterations");
  }
}
void BM_LinuxPostedPairWithoutHealth(benchmark::State& state) { posted_pair(state, kLinuxEvent); }
BENCHMARK(BM_LinuxPostedPairWithoutHealth);
void BM_LinuxPostedPairWithHealth(benchmark::State& state) { posted_pair(state, kLinuxEventWithHealth); }
BENCHMARK(BM_LinuxPostedPairWithHealth);

#if LOOPCANARY_LINUX_HAS_COUNTER
// The peer: what a zone of a trace profiler costs (written here, after the way Tracy-style
// profilers instrument a scope): a raw counter read (the TSC, CNTVCT_EL0) at the start and at
// the end and one 16-byte record (site, start, duration) into a ring a consumer thread would
// drain, the write index published with a release store. No statistics, no threshold, no
// reader protocol: the work is left to the consumer.
struct ZoneRecord {
  const char* site;
  std::uint32_t start;     // low 32 bits of the counter
  std::uint32_t duration;  // counter ticks
};
static_assert(sizeof(ZoneRecord) == 16, "a 16-byte record");

struct ZoneRing {
  static constexpr std::uint32_t kSize = 4096;  // a power of two
  ZoneRecord records[kSize];
  std::atomic<std::uint32_t> written{0};
};

void BM_LinuxZone(benchmark::State& state) {
  auto ring = std::make_unique<ZoneRing>();
  static const char kSite[] = "sensor_read";
  for (auto _ : state) {
    const std::uint64_t start = lx::detail::read_counter();
    const std::uint64_t end = lx::detail::read_counter();
    const std::uint32_t i = ring->written.load(std::memory_order_relaxed);
    ring->records[i & (ZoneRing::kSize - 1u)] =
        ZoneRecord{kSite, static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end - start)};
    ring->written.store(i + 1u, std::memory_order_release);
    benchmark::ClobberMemory();
  }
  if (ring->written.load() != static_cast<std::uint32_t>(state.iterations())) {
    state.SkipWithError("record count does not match the iterations");
  }
}
BENCHMARK(BM_LinuxZone);

// One raw read of the CPU's counter: `rdtsc` (x86-64), `isb; mrs cntvct_el0` (AArch64).
void BM_LinuxCounterRead(benchmark::State& state) {
  for (auto _ : state) {
    std::uint64_t t = lx::detail::read_counter();
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_LinuxCounterRead);
#endif

void BM_LinuxMonotonicRead(benchmark::State& state) {
  for (auto _ : state) {
    lc::tick_t t = lx::detail::monotonic_us();
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_LinuxMonotonicRead);

// The gaps a spinning thread sees in its own clock: each sample's signal stops it for the
// kernel's delivery, the handler and the return. Written by the spinning thread only.
struct SpinGaps {
  static constexpr std::size_t kMax = 1u << 16;
  std::uint64_t gaps[kMax];  // counter ticks (TSC cycles, CNTVCT_EL0 counts), each over 1 us
  std::size_t count = 0;
};

// A thread 32 frames deep, spinning at the bottom until told to stop, noting the gaps over 1 us
// in its spin (none on an architecture without a counter, where read_counter() is 0).
__attribute__((noinline)) int deep_spin(int depth, const std::atomic<bool>& stop, std::atomic<bool>& ready,
                                        SpinGaps& gaps) {
  if (depth == 0) {
    ready.store(true);
    std::uint64_t last = lx::detail::read_counter();
    const std::uint64_t min_gap = lx::clock_info().counter_hz / 1'000'000u;
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint64_t now = lx::detail::read_counter();
      if (now - last > min_gap && gaps.count < SpinGaps::kMax) gaps.gaps[gaps.count++] = now - last;
      last = now;
    }
    return 0;
  }
  const int r = deep_spin(depth - 1, stop, ready, gaps);
  benchmark::ClobberMemory();  // no tail call: every level keeps its frame
  return r + 1;
}

void stack_sample(benchmark::State& state, bool spin) {
  lx::Platform platform;
  lx::PlatformConfig config;
  config.no_sample_spin = !spin;
  if (!platform.init(config).ok()) {
    state.SkipWithError("Platform::init failed");
    return;
  }
  lx::LoopThread loop_thread;
  std::atomic<bool> stop{false};
  std::atomic<bool> ready{false};
  auto gaps = std::make_unique<SpinGaps>();
  std::thread deep([&] {
    lx::ScopedLoopThread attach(loop_thread);
    deep_spin(32, stop, ready, *gaps);
  });
  while (!ready.load()) std::this_thread::yield();
  lc::Frame pcs[64];
  std::size_t fewest = 64;
  for (auto _ : state) {
    const std::size_t frames = platform.capture_stack(loop_thread, pcs, 64);
    if (frames != 0 && frames < fewest) fewest = frames;  // 0: a missed sample, counted below
    benchmark::DoNotOptimize(frames);
  }
  // On a loaded machine every timed sample may have missed (a smoke run times a handful): a few
  // more, untimed, until one is answered, so the walk is still checked.
  for (int extra = 0; extra < 200 && platform.stats().samples_answered == 0; ++extra) {
    const std::size_t frames = platform.capture_stack(loop_thread, pcs, 64);
    if (frames != 0 && frames < fewest) fewest = frames;
  }
  stop = true;
  deep.join();
  const lx::PlatformStats s = platform.stats();
  // A sample misses when the sampled thread is not scheduled within the timeout (a loaded
  // machine); each miss costs the full timeout (5 ms) and shows in the mean.
  state.counters["frames"] = static_cast<double>(fewest);
  state.counters["missed"] = static_cast<double>(s.samples_requested - s.samples_answered);
  // The sampled thread's own loss per sample: the median gap in its spin (preemptions by other
  // work are the rare long gaps the median leaves out). Counter ticks to microseconds.
  const lx::ClockInfo& clock = lx::clock_info();
  if (gaps->count != 0 && clock.source == lx::ClockSource::counter) {
    std::nth_element(gaps->gaps, gaps->gaps + gaps->count / 2, gaps->gaps + gaps->count);
    state.counters["loop_us"] = static_cast<double>(gaps->gaps[gaps->count / 2]) * 1e6 / static_cast<double>(clock.counter_hz);
    state.counters["gaps"] = static_cast<double>(gaps->count);
  }
  if (s.samples_answered == 0 || fewest < 33) state.SkipWithError("no sample walked all 32 frames");
}
void BM_StackSample(benchmark::State& state) { stack_sample(state, true); }
BENCHMARK(BM_StackSample)->UseRealTime();
void BM_StackSampleNoSpin(benchmark::State& state) { stack_sample(state, false); }
BENCHMARK(BM_StackSampleNoSpin)->UseRealTime();

// A thread that names itself and blocks in `wait`; read_wait_object of it until it shows
// `kind`, then timed; `release` ends the wait.
template <typename Wait, typename Release>
void wait_object(benchmark::State& state, lc::WaitKind kind, Wait wait, Release release) {
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    pthread_setname_np(pthread_self(), "bench-waiter");
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    wait();
  });
  while (tid.load() == 0) std::this_thread::yield();
  lc::WaitObject w;
  while (!lx::read_wait_object(tid.load(), w) || w.kind != kind) std::this_thread::yield();
  for (auto _ : state) {
    benchmark::DoNotOptimize(lx::read_wait_object(tid.load(), w));
  }
  if (w.kind != kind) state.SkipWithError("the waiter stopped waiting");
  state.counters["owner_named"] = w.owner != 0 ? 1.0 : 0.0;
  state.SetLabel(w.text);
  release();
  waiter.join();
}

void BM_WaitObjectMutex(benchmark::State& state) {
  std::mutex m;
  std::atomic<bool> held{false}, release{false};
  std::thread holder([&] {
    pthread_setname_np(pthread_self(), "bench-holder");
    std::lock_guard<std::mutex> lock(m);
    held.store(true);
    while (!release.load()) std::this_thread::yield();
  });
  while (!held.load()) std::this_thread::yield();
  wait_object(
      state, lc::WaitKind::mutex, [&] { std::lock_guard<std::mutex> lock(m); }, [&] { release.store(true); });
  holder.join();
}
BENCHMARK(BM_WaitObjectMutex);

void BM_WaitObjectPipe(benchmark::State& state) {
  int fds[2];
  if (pipe(fds) != 0) {
    state.SkipWithError("pipe failed");
    return;
  }
  wait_object(
      state, lc::WaitKind::pipe,
      [&] {
        char c = 0;
        benchmark::DoNotOptimize(read(fds[0], &c, 1));
      },
      [&] { benchmark::DoNotOptimize(write(fds[1], "x", 1)); });
  close(fds[0]);
  close(fds[1]);
}
BENCHMARK(BM_WaitObjectPipe);

// What a poll costs that samples a loop off the CPU, by what it reads of the wait. The loop is
// blocked on a std::mutex whose holder is parked reading an idle pipe; every timed poll takes one
// sample of it (armed at once, a sample interval of one tick) and its CPU readings. Arg 0: the
// Hal without read_wait (the poll without wait objects); 1: read_wait naming the lock and its
// holder (read_wait_object), without the holder's stack; 2: the Platform's read_wait (the lock,
// its holder, what the holder waits on, the holder's stack); 3: the same with the holder on a CPU,
// computing with the lock held (its stack sampled by the signal, the copy of its top scanned).
void wait_without_holder_stack(void*, const lc::Monitor& loop, lc::WaitReading* out, std::size_t) {
  const auto* thread = static_cast<const lx::LoopThread*>(loop.context());
  lx::read_wait_object(thread->tid(), out->object);
}

void BM_LinuxOffCpuSamplePoll(benchmark::State& state) {
  lx::Platform platform;
  auto watchdog = std::make_unique<lc::StaticWatchdog<1, 8>>();
  lc::Hal hal = platform.hal();
  if (state.range(0) == 0) hal.read_wait = nullptr;
  if (state.range(0) == 1) hal.read_wait = &wait_without_holder_stack;
  lx::LoopThread loop_thread;
  auto monitor = std::make_unique<lx::PortMonitor>();
  lc::MonitorConfig config = linux_config("loop");
  config.threshold_us = 50'000'000;  // no report while the benchmark runs
  config.hang_limit_us = 100'000'000;
  config.arm_permille = 0;
  config.sample_interval_us = 1;
  config.context = &loop_thread;
  if (!platform.init().ok() || watchdog->init(lc::WatchdogConfig{}, hal) != lc::Status::ok ||
      monitor->init(config) != lc::Status::ok || watchdog->add(*monitor) != lc::Status::ok) {
    state.SkipWithError("set-up failed");
    return;
  }
  std::mutex m;
  int fds[2];
  if (pipe(fds) != 0) {
    state.SkipWithError("pipe failed");
    return;
  }
  std::atomic<bool> held{false};
  std::atomic<bool> stop{false};
  const bool computes = state.range(0) == 3;
  std::thread holder([&] {
    pthread_setname_np(pthread_self(), "bench-holder");
    std::lock_guard<std::mutex> lock(m);
    held.store(true);
    if (computes) {
      while (!stop.load(std::memory_order_relaxed)) benchmark::ClobberMemory();
      return;
    }
    char c = 0;
    benchmark::DoNotOptimize(read(fds[0], &c, 1));
  });
  while (!held.load()) std::this_thread::yield();
  std::thread loop([&] {
    lx::ScopedLoopThread attach(loop_thread);
    LOOPCANARY_DISPATCH(*monitor, kLinuxEvent);
    std::lock_guard<std::mutex> lock(m);
  });
  lc::WaitObject w;
  while (loop_thread.tid() == 0 || !lx::read_wait_object(loop_thread.tid(), w) || w.kind != lc::WaitKind::mutex) {
    std::this_thread::yield();
  }
  for (auto _ : state) {
    watchdog->poll(lx::Clock::now());
    benchmark::ClobberMemory();
  }
  const lc::WatchdogStats stats = watchdog->stats();
  // What the timed polls read of the holder's stack (the Platform's read_wait, once more).
  lc::WaitReading reading;
  platform.read_wait(loop_thread, reading, 8);
  stop.store(true);
  benchmark::DoNotOptimize(write(fds[1], "x", 1));
  holder.join();
  loop.join();
  close(fds[0]);
  close(fds[1]);
  watchdog->finish(lx::Clock::now());
  state.counters["missed"] = static_cast<double>(stats.samples_missed);
  state.counters["holder_frames"] = static_cast<double>(reading.holder_pc_count);
  if (stats.reports != 0) state.SkipWithError("a poll reported a block");
}
BENCHMARK(BM_LinuxOffCpuSamplePoll)->ArgName("wait")->Arg(0)->Arg(1)->Arg(2)->Arg(3)->UseRealTime();

void BM_LinuxWatchdogPoll(benchmark::State& state) {
  constexpr std::size_t kMaxLoops = 64;
  const auto n = static_cast<std::size_t>(state.range(0));
  lx::Platform platform;
  std::vector<std::unique_ptr<lx::PortMonitor>> monitors;
  std::vector<std::unique_ptr<lx::LoopThread>> threads;
  auto watchdog = std::make_unique<lc::StaticWatchdog<kMaxLoops, 8>>();
  if (n == 0 || n > kMaxLoops || !platform.init().ok() ||
      watchdog->init(lc::WatchdogConfig{}, platform.hal()) != lc::Status::ok) {
    state.SkipWithError("set-up failed");
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    threads.push_back(std::make_unique<lx::LoopThread>());
    monitors.push_back(std::make_unique<lx::PortMonitor>());
    lc::MonitorConfig config = linux_config("loop");
    config.context = threads.back().get();
    if (monitors.back()->init(config) != lc::Status::ok || watchdog->add(*monitors.back()) != lc::Status::ok) {
      state.SkipWithError("Monitor::init or Watchdog::add failed");
      return;
    }
  }
  for (auto _ : state) {
    watchdog->poll(lx::Clock::now());
    benchmark::ClobberMemory();
  }
  if (watchdog->stats().reports != 0) state.SkipWithError("a poll reported a block");
  state.counters["per_loop"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LinuxWatchdogPoll)->Arg(1)->Arg(16)->Arg(64);

void BM_FileSinkWrite(benchmark::State& state) {
  const char* base = std::getenv("LOOPCANARY_BENCH_DIR");
  std::string dir = std::string(base != nullptr ? base : "/var/tmp") + "/loopcanary-bench-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  lx::FileSinkConfig config;
  config.directory = dir.c_str();
  config.symbol_names = false;
  config.max_file_bytes = 1u << 30;  // no rotation in the timed loop
  config.sync = state.range(0) != 0;
  lx::FileSink sink;
  if (sink.open(config) != lx::SinkError::none) {
    state.SkipWithError("FileSink::open failed");
    std::filesystem::remove_all(dir);
    return;
  }
  lc::BlockRecord record;
  record.qualifier = "bench";
  record.loop = "main";
  record.event = &kLinuxEvent;
  record.phase = lc::Phase::final;
  record.tick_hz = lx::tick_hz();
  record.duration_ticks = 250'000;
  record.sample_count = 8;
  record.samples_taken = 8;
  for (std::uint8_t i = 0; i < record.sample_count; ++i) {
    record.samples[i].pc_count = 4;
    for (std::uint8_t f = 0; f < 4; ++f) {
      record.samples[i].frames[f] = reinterpret_cast<lc::Frame>(&BM_FileSinkWrite) + 16u * f + 1u;
    }
  }
  for (auto _ : state) {
    ++record.report;
    benchmark::DoNotOptimize(sink.write(record));
  }
  const lx::SinkStatus status = sink.status();
  state.counters["bytes_per_record"] =
      static_cast<double>(status.bytes_written) / static_cast<double>(status.records_written + status.records_failed);
  if (status.records_failed != 0 || status.records_unsynced != 0) state.SkipWithError(status.message);
  sink.close();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_FileSinkWrite)->ArgName("sync")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
