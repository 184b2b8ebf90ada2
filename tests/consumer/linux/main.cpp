// SPDX-License-Identifier: MIT
// An event loop on its own thread, monitored with the Linux port: one handler computes for
// 300 ms against a 100 ms threshold, and its block report names the function that did it.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

#include "loopcanary/linux/symbolizer.hpp"
#include "loopcanary/linux/watchdog_thread.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/platform.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

constexpr lc::Event kButton{"button"};
constexpr lc::Event kRecalibrate{"recalibrate"};

volatile std::uint64_t g_state = 1;

// The culprit: computes for `ms` milliseconds.
__attribute__((noinline)) void recalibrate_sensors(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 1000; ++i) g_state = g_state * 6364136223846793005u + 1442695040888963407u;
  }
}

lx::Platform platform;             // the Hal: stack capture by signal, CPU counters
lx::LoopThread loop_thread;        // the thread that runs the loop
lx::PortMonitor loop;              // the loop's stamps
lc::StaticWatchdog<1, 8> watchdog;  // 1 loop, 8 records in the ring
lx::WatchdogThread watchdog_thread;

int fail(const char* what) {
  std::fprintf(stderr, "consumer: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = lx::tick_hz();  // selects and calibrates the clock
  config.threshold_us = 100'000;   // a dispatch over 100 ms is a block
  config.sample_interval_us = 10'000;
  config.context = &loop_thread;
  if (!platform.init().ok() || loop.init(config) != lc::Status::ok ||
      watchdog.init(lc::WatchdogConfig{}, platform.hal()) != lc::Status::ok || watchdog.add(loop) != lc::Status::ok ||
      !watchdog_thread.start(watchdog).ok()) {
    return fail("set-up failed");
  }

  std::thread loop_runner([] {
    lx::ScopedLoopThread attach(loop_thread);
    for (int i = 0; i < 10; ++i) {
      LOOPCANARY_DISPATCH(loop, kButton);
      recalibrate_sensors(1);
    }
    LOOPCANARY_DISPATCH(loop, kRecalibrate);
    recalibrate_sensors(300);  // a block
  });
  loop_runner.join();

  // The watchdog thread finalises the record at its next polls (every 10 ms). On a loaded
  // machine a descheduled 'button' dispatch may be a block too: the one looked for is the
  // final record of 'recalibrate'.
  lc::BlockRecord record;
  bool final = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!final && std::chrono::steady_clock::now() < deadline) {
    while (!final && watchdog.pop(record)) final = record.phase == lc::Phase::final && record.event == &kRecalibrate;
    if (!final) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  watchdog_thread.stop();
  if (!final) return fail("no final record of 'recalibrate'");

  static char text[8192];
  lc::format_text(record, text, sizeof text);
  std::fputs(text, stdout);

  // Symbolise the sampled program counters: how many samples hold the culprit?
  lx::Symbolizer symbolizer;
  std::uint32_t in_culprit = 0;
  for (std::uint8_t s = 0; s < record.sample_count; ++s) {
    const lc::Sample& sample = record.samples[s];
    for (std::uint8_t f = 0; f < sample.pc_count; ++f) {
      lx::Symbol symbol;
      const bool return_address = f != 0;
      if (symbolizer.symbolize(sample.frames[sample.scope_count + f], return_address, symbol) &&
          std::strstr(symbol.function, "recalibrate_sensors") != nullptr) {
        ++in_culprit;
        break;
      }
    }
  }
  std::printf("consumer: '%s' blocked %llu ms, %u of %u samples in recalibrate_sensors\n", record.event->name,
              static_cast<unsigned long long>(lc::us_from_ticks(record.duration_ticks, record.tick_hz) / 1000u),
              in_culprit, static_cast<unsigned>(record.sample_count));
  // 300 ms by CLOCK_MONOTONIC; the port's clock (the TSC, its rate measured against
  // CLOCK_MONOTONIC at start-up) may read it a few microseconds short.
  const bool ok = lc::us_from_ticks(record.duration_ticks, record.tick_hz) >= 295'000 &&
                  record.sample_count > 0 && in_culprit * 2 > record.sample_count;
  return ok ? 0 : fail("the record does not name the culprit");
}
