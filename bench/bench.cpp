// SPDX-License-Identifier: MIT
// loopcanary_bench: the cost of monitoring against its floor (one clock read) and against a
// BlockCanary-style hook that builds and times a string per dispatch. docs/benchmarks.md has the
// figures, the machine they were measured on, and how to read them.
//
//   BM_ClockRead               one read of the sim clock: the floor of any timestamp
//   BM_BeginEnd                begin() + end() on a ClockedMonitor<sim::Clock> (two clock reads)
//   BM_ScopePushPop            one named scope pushed and popped
//   BM_NaiveStringHook         ">>>>> Dispatching to ..." / "<<<<< Finished to ..." strings and a
//                              system_clock read each, per dispatch (BlockCanary's Looper hook)
//   BM_WatchdogPoll/N          one poll over N idle loops; per_loop = time / N
//   BM_WatchdogPollInDispatch/N  the same with every loop inside a young dispatch (watched,
//                              not armed yet)
//
// The context printed before the results carries the sizes of the main types for this build's
// configuration.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"

namespace lc = loopcanary;

namespace {

constexpr lc::Event kEvent{"sensor_read"};

lc::MonitorConfig bench_config(const char* name = "bench") {
  lc::MonitorConfig config;
  config.name = name;
  config.tick_hz = lc::sim::kTickHz;
  config.threshold_us = 1'000'000;  // never reached: every dispatch here is short
  return config;
}

// The floor: one read of the sim clock. The clock advances one tick per read, so begin and end
// below stamp distinct times, as a hardware counter would.
void BM_ClockRead(benchmark::State& state) {
  lc::sim::VirtualTime time;
  time.set_read_step(1);
  const lc::sim::Clock clock{time};
  for (auto _ : state) {
    lc::tick_t t = clock.now();
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_ClockRead);

void BM_BeginEnd(benchmark::State& state) {
  lc::sim::VirtualTime time;
  time.set_read_step(1);
  auto monitor = std::make_unique<lc::sim::PortMonitor>(lc::sim::Clock{time});
  if (monitor->init(bench_config()) != lc::Status::ok) {
    state.SkipWithError("Monitor::init failed");
    return;
  }
  for (auto _ : state) {
    monitor->begin(kEvent);
    monitor->end();
    benchmark::ClobberMemory();  // the stamps are stored every iteration
  }
  if (monitor->stats().dispatches != static_cast<std::uint32_t>(state.iterations())) {
    state.SkipWithError("dispatch count does not match the iterations");
  }
}
BENCHMARK(BM_BeginEnd);

void BM_ScopePushPop(benchmark::State& state) {
  lc::sim::VirtualTime time;
  auto monitor = std::make_unique<lc::sim::PortMonitor>(lc::sim::Clock{time});
  if (monitor->init(bench_config()) != lc::Status::ok) {
    state.SkipWithError("Monitor::init failed");
    return;
  }
  for (auto _ : state) {
    monitor->push_scope("fir_filter");
    monitor->pop_scope();
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ScopePushPop);

// What a BlockCanary-style hook does per dispatch: Looper builds ">>>>> Dispatching to " +
// target + " " + callback + ": " + what before the message and "<<<<< Finished to " + ... after
// it; the printer reads the wall clock at each line and compares the difference with the
// threshold. Strings here are as long as typical Android ones (beyond the small-string buffer,
// as on Android every concatenation allocates).
std::string hex(std::uintptr_t v) {
  char digits[2 * sizeof v + 1];
  std::snprintf(digits, sizeof digits, "%llx", static_cast<unsigned long long>(v));
  return digits;
}

void BM_NaiveStringHook(benchmark::State& state) {
  const std::string handler = "com.example.thermostat.SensorHandler";
  const std::string callback = "com.example.thermostat.SensorTask@5f3c2a1";
  const auto handler_id = reinterpret_cast<std::uintptr_t>(&handler);
  const auto threshold = std::chrono::milliseconds(1000);
  int what = 0;
  std::int64_t blocks = 0;
  for (auto _ : state) {
    const std::string begin_line =
        ">>>>> Dispatching to Handler (" + handler + ") {" + hex(handler_id) + "} " + callback + ": " +
        std::to_string(what);
    const auto start = std::chrono::system_clock::now();
    benchmark::DoNotOptimize(begin_line.data());
    const std::string end_line =
        "<<<<< Finished to Handler (" + handler + ") {" + hex(handler_id) + "} " + callback;
    const auto end = std::chrono::system_clock::now();
    benchmark::DoNotOptimize(end_line.data());
    if (end - start > threshold) ++blocks;
    ++what;
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(blocks);
}
BENCHMARK(BM_NaiveStringHook);

// One poll over `n` loops. in_dispatch = false: every loop idle between dispatches (the common
// case); true: every loop inside a dispatch the watchdog is watching but that has not reached
// its arm point, so each poll also steps the track.
void watchdog_poll(benchmark::State& state, bool in_dispatch) {
  constexpr std::size_t kMaxLoops = 64;
  const auto n = static_cast<std::size_t>(state.range(0));
  if (n == 0 || n > kMaxLoops) {
    state.SkipWithError("loop count out of range");
    return;
  }
  std::vector<std::unique_ptr<lc::Monitor>> monitors;
  auto watchdog = std::make_unique<lc::StaticWatchdog<kMaxLoops, 8>>();
  if (watchdog->init(lc::WatchdogConfig{}) != lc::Status::ok) {
    state.SkipWithError("StaticWatchdog::init failed");
    return;
  }
  const lc::tick_t now = 1'000;
  for (std::size_t i = 0; i < n; ++i) {
    monitors.push_back(std::make_unique<lc::Monitor>());
    lc::Monitor& m = *monitors.back();
    if (m.init(bench_config("loop")) != lc::Status::ok || watchdog->add(m) != lc::Status::ok) {
      state.SkipWithError("Monitor::init or Watchdog::add failed");
      return;
    }
    if (in_dispatch) m.begin_at(kEvent, now - 10u);  // 10 us in: far from the 250 ms arm point
  }
  for (auto _ : state) {
    watchdog->poll(now);
    benchmark::ClobberMemory();
  }
  if (watchdog->stats().reports != 0) state.SkipWithError("a poll reported a block");
  state.counters["loops"] = static_cast<double>(n);
  state.counters["per_loop"] = benchmark::Counter(static_cast<double>(n),
                                                  benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

void BM_WatchdogPoll(benchmark::State& state) { watchdog_poll(state, false); }
BENCHMARK(BM_WatchdogPoll)->Arg(1)->Arg(16)->Arg(64);

void BM_WatchdogPollInDispatch(benchmark::State& state) { watchdog_poll(state, true); }
BENCHMARK(BM_WatchdogPollInDispatch)->Arg(1)->Arg(16)->Arg(64);

}  // namespace

int main(int argc, char** argv) {
  // Sizes for this build's configuration (compile definitions LOOPCANARY_*), in bytes.
  benchmark::AddCustomContext("sizeof(Monitor)", std::to_string(sizeof(lc::Monitor)));
  benchmark::AddCustomContext("sizeof(ClockedMonitor<sim::Clock>)", std::to_string(sizeof(lc::sim::PortMonitor)));
  benchmark::AddCustomContext("sizeof(BlockRecord)", std::to_string(sizeof(lc::BlockRecord)));
  benchmark::AddCustomContext("sizeof(StaticWatchdog<1,8>)", std::to_string(sizeof(lc::StaticWatchdog<1, 8>)));
  benchmark::AddCustomContext("capacities", "samples " + std::to_string(lc::kMaxSamples) + ", frames " +
                                                std::to_string(lc::kMaxFrames) + ", scope depth " +
                                                std::to_string(lc::kScopeDepth) + ", notes " +
                                                std::to_string(lc::kNoteCapacity) + ", top frames " +
                                                std::to_string(lc::kTopFrames));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
