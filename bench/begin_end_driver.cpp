// SPDX-License-Identifier: MIT
// loopcanary_begin_end_driver: N begin/end pairs on a ClockedMonitor<sim::Clock>, and nothing
// else, for counting instructions per pair with Valgrind (docs/benchmarks.md):
//
//   valgrind --tool=callgrind --toggle-collect=run_pairs build/bench/bench/loopcanary_begin_end_driver 1000000
//
// run_pairs() is kept out of line so callgrind can collect it alone; inside it, begin() and end()
// are inlined as in any instrumented loop. lc_begin_at()/lc_end_at() are out-of-line copies of
// Monitor::begin_at()/end_at() whose disassembly shows the hot path's instructions
// (objdump -d --no-show-raw-insn -C, see docs/benchmarks.md).
#include <cstdio>
#include <cstdlib>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary_port.hpp"

namespace lc = loopcanary;

namespace {
constexpr lc::Event kEvent{"sensor_read"};
}  // namespace

extern "C" {
#if defined(__GNUC__)
#define LOOPCANARY_DRIVER_NOINLINE __attribute__((noinline))
#else
#define LOOPCANARY_DRIVER_NOINLINE
#endif

LOOPCANARY_DRIVER_NOINLINE void lc_begin_at(lc::Monitor& monitor, const lc::Event& event, lc::tick_t now) {
  monitor.begin_at(event, now);
}
LOOPCANARY_DRIVER_NOINLINE void lc_end_at(lc::Monitor& monitor, lc::tick_t now) { monitor.end_at(now); }

LOOPCANARY_DRIVER_NOINLINE void run_pairs(lc::sim::PortMonitor& monitor, unsigned long pairs) {
  for (unsigned long i = 0; i < pairs; ++i) {
    monitor.begin(kEvent);
    monitor.end();
  }
}
}

int main(int argc, char** argv) {
  const unsigned long pairs = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1'000'000ul;
  static lc::sim::VirtualTime time;
  time.set_read_step(1);
  static lc::sim::PortMonitor monitor{lc::sim::Clock{time}};
  lc::MonitorConfig config;
  config.name = "driver";
  config.tick_hz = lc::sim::kTickHz;
  if (monitor.init(config) != lc::Status::ok) return 1;
  run_pairs(monitor, pairs);
  // Keep the out-of-line copies linked (and exercised once).
  lc_begin_at(monitor, kEvent, time.read());
  lc_end_at(monitor, time.read());
  const lc::LoopStats stats = monitor.stats();
  std::printf("%lu pairs, %u dispatches\n", pairs, stats.dispatches);
  return stats.dispatches == static_cast<std::uint32_t>(pairs + 1u) ? 0 : 1;
}
