// SPDX-License-Identifier: MIT
// A bare-metal super-loop on the mps2 board, monitored with the Cortex-M port: the watchdog
// runs in the SysTick interrupt; one event computes past its 10 ms threshold and is reported.
// The exit code (semihosting) is the verdict.
#include <cstdint>

#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/cortex_m.hpp"

namespace lc = loopcanary;
namespace cm = loopcanary::cortex_m;

namespace {

constexpr lc::Event kPoll{"poll_sensors"};
constexpr lc::Event kCompress{"compress_log"};

volatile std::uint32_t g_work = 0;

__attribute__((noinline)) void spin(std::uint32_t rounds) {
  while (rounds-- != 0) g_work = g_work + rounds;
}

cm::PortMonitor g_loop;
lc::StaticWatchdog<1, 4> g_watchdog;  // 1 loop, 4 records in the ring

}  // namespace

int main() {
  cm::Config port;
  port.core_hz = lc::board::kCoreHz;
  if (cm::init(port) != cm::PortStatus::ok) return 2;
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = cm::tick_hz();
  config.threshold_us = 10'000;  // a dispatch over 10 ms is a block
  config.sample_interval_us = 1'000;
  if (g_loop.init(config) != lc::Status::ok || g_watchdog.init(lc::WatchdogConfig{}, cm::make_hal()) != lc::Status::ok ||
      g_watchdog.add(g_loop) != lc::Status::ok) {
    return 3;
  }
  cm::attach(&g_watchdog);  // SysTick polls the watchdog from now on

  for (std::uint32_t i = 0; i < 4; ++i) {
    LOOPCANARY_DISPATCH(g_loop, kPoll);
    spin(1'000);
  }
  {
    LOOPCANARY_DISPATCH(g_loop, kCompress);
    spin(300'000);  // about 40 ms at 25 MHz: a block
  }
  for (int i = 0; i < 4; ++i) cm::idle_wait();  // the watchdog finalises the record
  cm::attach(nullptr);

  lc::BlockRecord record;
  bool reported = false;
  while (g_watchdog.pop(record)) reported = reported || (record.phase == lc::Phase::final && record.event == &kCompress);
  lc::board::write(reported ? "firmware consumer: compress_log reported\n" : "firmware consumer: no report\n");
  return reported ? 0 : 1;
}
