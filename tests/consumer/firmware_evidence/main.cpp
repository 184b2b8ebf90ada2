// SPDX-License-Identifier: MIT
// A bare-metal super-loop on the mps2 board that sends its evidence: the watchdog in the SysTick
// interrupt streams what it observes into an evidence ring in no-init RAM, the crash box. A
// handler hangs; the hang's observation reaches the ring, and the interceptor resets the device
// as a hardware watchdog would. The next boot finds the ring kept, with the reset cause, and
// drains it to the host file sensor_node.lcb (semihosting), which `loopcanary decode` reads.
// The exit code (semihosting) is the verdict.
#include <cstdint>

#include "loopcanary/board.hpp"
#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/cortex_m.hpp"

namespace lc = loopcanary;
namespace cm = loopcanary::cortex_m;

namespace {

constexpr lc::Event kPoll{"poll_sensors"};
constexpr lc::Event kFlush{"flush_log"};

LOOPCANARY_BOARD_NOINIT lc::StaticEvidenceRing<4096> g_ring;  // the crash box too
lc::StaticEvidenceWatchdog<1> g_watchdog;
cm::PortMonitor g_loop;
lc::board::HostFile g_capture;

volatile std::uint32_t g_flash_ready = 0;  // never set: the flush waits forever

__attribute__((noinline)) void wait_for_flash() {
  while (g_flash_ready == 0) {
  }
}

// SysTick context: a hang's observation is already in the ring; reset as a hardware watchdog would.
void reset_on_hang(void* /*context*/, const lc::Observation& observation, bool /*kept*/) {
  if (observation.phase != lc::Phase::hang) return;
  g_ring.set_reset_cause(lc::ResetCause::software);  // the next boot's packet names it
  lc::board::request_reset();                         // SYSRESETREQ
}

int verdict(bool passed, const char* what) {
  lc::board::write(what);
  return passed ? 0 : 1;
}

}  // namespace

int main() {
  // Boot: what the ring kept from before the reset goes to the host first.
  const lc::CrashBoxStatus kept = g_ring.open(lc::board::reset_cause());
  if (kept == lc::CrashBoxStatus::kept) {
    if (!lc::board::open_host_file(g_capture, "sensor_node.lcb")) return 2;
    const std::uint32_t sent = g_ring.drain(lc::board::host_file_sink(g_capture));
    const bool closed = lc::board::close_host_file(g_capture);
    const lc::EvidenceRingStats s = g_ring.stats();
    return verdict(closed && sent == g_capture.bytes_written && g_capture.bytes_lost == 0 &&
                       s.reset_cause == lc::ResetCause::software && s.boot == 2,
                   "firmware consumer: boot 2 sent the hang kept across the reset\n");
  }

  cm::Config port;
  port.core_hz = lc::board::kCoreHz;
  if (cm::init(port) != cm::PortStatus::ok) return 3;
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = cm::tick_hz();
  config.threshold_us = 10'000;    // a dispatch over 10 ms is a block
  config.sample_interval_us = 1'000;
  config.hang_limit_us = 100'000;  // one still running after 100 ms is a hang
  if (g_loop.init(config) != lc::Status::ok || g_watchdog.init(lc::WatchdogConfig{}, cm::make_hal(), g_ring) != lc::Status::ok ||
      g_watchdog.add(g_loop) != lc::Status::ok || g_watchdog.add_interceptor(&reset_on_hang, nullptr) != lc::Status::ok) {
    return 4;
  }
  cm::attach(&g_watchdog);  // SysTick polls the watchdog from now on

  for (std::uint32_t i = 0; i < 4; ++i) {
    LOOPCANARY_DISPATCH(g_loop, kPoll);
    cm::idle_wait();
  }
  LOOPCANARY_DISPATCH(g_loop, kFlush);
  wait_for_flash();  // the hang: reset_on_hang() resets the device from SysTick
  return verdict(false, "firmware consumer: no reset at the hang\n");
}
