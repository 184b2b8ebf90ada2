// SPDX-License-Identifier: MIT
// loopcanary_begin_end_driver: N begin/end pairs on a ClockedMonitor<sim::Clock>, and nothing
// else, for counting instructions per pair with Valgrind (docs/benchmarks.md):
//
//   valgrind --tool=callgrind --toggle-collect=run_pairs build/bench/bench/loopcanary_begin_end_driver 1000000
//
// run_posted_pairs() runs N more pairs with the queue-latency overload, begin_at(event, now,
// posted), for the event passed in (a table's event, as a runtime's dispatcher has it): once an
// event without EventHealth storage (toggle-collect=run_posted_pairs, first call) and once one
// with storage and a period and deadline (the second call); the post stamps advance 2 ticks per
// pair, as the sim clock does, so every latency is 6 ticks. docs/benchmarks.md has the commands.
//
// run_pairs() is kept out of line so callgrind can collect it alone; inside it, begin() and end()
// are inlined as in any instrumented loop. lc_begin_at()/lc_end_at() are out-of-line copies of
// Monitor::begin_at()/end_at() whose disassembly shows the hot path's instructions
// (objdump -d --no-show-raw-insn -C, see docs/benchmarks.md).
#include <cstdio>
#include <cstdlib>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"

namespace lc = loopcanary;

namespace {
constexpr lc::Event kEvent{"sensor_read"};
lc::EventHealth g_health;
constexpr lc::Event kEventWithHealth{"sensor_read", 0, &g_health};
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

LOOPCANARY_DRIVER_NOINLINE void run_posted_pairs(lc::sim::PortMonitor& monitor, const lc::Event& event,
                                                 lc::tick_t posted, unsigned long pairs) {
  for (unsigned long i = 0; i < pairs; ++i) {
    monitor.begin_at(event, monitor.clock().now(), posted);
    monitor.end();
    posted += 2u;
  }
}

// Separate copies, so callgrind's --toggle-collect can take each alone.
LOOPCANARY_DRIVER_NOINLINE void run_posted_pairs_without_health(lc::sim::PortMonitor& monitor, lc::tick_t posted,
                                                                unsigned long pairs) {
  run_posted_pairs(monitor, kEvent, posted, pairs);
}
LOOPCANARY_DRIVER_NOINLINE void run_posted_pairs_with_health(lc::sim::PortMonitor& monitor, lc::tick_t posted,
                                                             unsigned long pairs) {
  run_posted_pairs(monitor, kEventWithHealth, posted, pairs);
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
  if (monitor.init_event(kEventWithHealth, lc::EventHealthConfig{1'000, 500}) != lc::Status::ok) return 1;
  run_pairs(monitor, pairs);
  run_posted_pairs_without_health(monitor, time.read() - 5u, pairs);
  run_posted_pairs_with_health(monitor, time.read() - 5u, pairs);
  // Keep the out-of-line copies linked (and exercised once).
  lc_begin_at(monitor, kEvent, time.read());
  lc_end_at(monitor, time.read());
  const lc::LoopStats stats = monitor.stats();
  const lc::EventStats health = g_health.stats();
  std::printf("%lu pairs x 3, %u dispatches, %u with latency recorded (max %u ticks)\n", pairs, stats.dispatches,
              health.dispatches, health.max_latency);
  return stats.dispatches == static_cast<std::uint32_t>(3u * pairs + 1u) &&
                 health.dispatches == static_cast<std::uint32_t>(pairs)
             ? 0
             : 1;
}
