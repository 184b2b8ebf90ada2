// SPDX-License-Identifier: MIT
// Device test: a hang survives the reset that ends it, in the crash box (no-init RAM).
//
// Boot 1: the box is discarded (no valid box after power-on: mps2.ld). A handler hangs
// (threshold 20 ms, hang limit 100 ms, watchdog in the SysTick interrupt); the interceptor
// stores the hang record in the box, sets the reset cause to `software` and requests a system
// reset (SYSRESETREQ), as a hardware watchdog would reset the device. A check that fails on
// boot 1 ends the run there with the verdict (the reset would forget it).
// Boot 2: the box is valid and holds the hang record; it goes as one `previous_boot` packet to
// the host file LC_CAPTURE (semihosting), the firmware prints how many packets it sent
// ("lc-capture packets=<n>") and exits with its verdict. On the host check_firmware.cmake decodes
// the file with the firmware's ELF (`loopcanary decode`) and requires that one record: the hang
// of wait_for_ack, previous_boot, reset cause software, its samples in stuck_forever.
//
// LC_TEST_CORRUPT=1: the interceptor damages the box's header after storing the record (as a
// power dip or a stray write would): boot 2 must find no valid box, count it, and send nothing
// (an empty capture, which the host decodes to no record and no warning).
#include <cstddef>
#include <cstdint>

#include "device_report.hpp"
#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/crash_box.hpp"
#include "loopcanary/loopcanary.hpp"
#include "device_port.hpp"

#ifndef LC_TEST_CORRUPT
#define LC_TEST_CORRUPT 0
#endif
#ifndef LC_CAPTURE
#define LC_CAPTURE "crash_box_test.lcb"
#endif

namespace lc = loopcanary;
namespace dp = loopcanary::device_port;
namespace board = loopcanary::board;
using lc::device_report::check;
using lc::device_test::print;
using lc::device_test::print_u64;

namespace {

constexpr lc::Event kTick{"tick"};
constexpr lc::Event kStuck{"wait_for_ack"};

// In no-init RAM: what this test is about.
LOOPCANARY_BOARD_NOINIT lc::StaticCrashBox<1024> g_box;

lc::StaticWatchdog<1, 4> g_watchdog;
dp::PortMonitor g_monitor;
volatile std::uint32_t g_ack = 0;  // never set: the handler waits forever

void print_stats(const lc::CrashBoxStats& s) {
  const struct {
    const char* name;
    std::uint32_t value;
  } fields[] = {{" stored=", s.stored},
                {" overwritten=", s.overwritten},
                {" refused=", s.refused},
                {" kept=", s.kept},
                {" records_discarded=", s.records_discarded},
                {" boxes_discarded=", s.boxes_discarded},
                {" drained=", s.drained},
                {" reset_cause=", static_cast<std::uint32_t>(s.reset_cause)}};
  print("lc-crash-box");
  for (const auto& f : fields) {
    print(f.name);
    print_u64(f.value);
  }
  print("\n");
}

[[noreturn]] void finish() { board::exit(lc::device_report::finish()); }

// Interceptor, SysTick context: the loop is stuck; keep the hang and reset, as a watchdog would.
void on_report(void* /*context*/, const lc::BlockRecord& record) {
  if (record.phase != lc::Phase::hang) return;
  check(record.event == &kStuck, "hang names wait_for_ack");
  check(g_box.store(record), "hang record stored in the crash box");
  g_box.set_reset_cause(lc::ResetCause::software);
  if (LC_TEST_CORRUPT) {
    // A stray write into the header, after its CRC was computed.
    reinterpret_cast<volatile std::uint8_t*>(&g_box)[offsetof(lc::CrashBoxHeader, used)] ^= 0x01;
  }
  if (lc::device_report::failed()) finish();
  print("requesting a system reset\n");
  board::request_reset();
}

__attribute__((noinline)) void stuck_forever(const volatile std::uint32_t* ack) {
  const lc::tick_t begin = dp::Clock::now();
  const lc::tick_t give_up = 2u * dp::tick_hz();
  while (*ack == 0) {
    for (int spin = 0; spin < 1000 && *ack == 0; ++spin) {
    }
    if (lc::ticks_between(begin, dp::Clock::now()) > give_up) return;
  }
}

[[noreturn]] __attribute__((noinline)) void first_boot() {  // a frame of its own: the chain checked
  lc::device_report::init_port(0);
  lc::MonitorConfig config = lc::device_report::loop_config(20'000);
  config.arm_permille = 250;
  config.sample_interval_us = 2'000;
  config.hang_limit_us = 100'000;
  check(g_monitor.init(config) == lc::Status::ok, "monitor init");
  check(g_watchdog.init(lc::WatchdogConfig{}, dp::make_hal()) == lc::Status::ok, "watchdog init");
  lc::device_report::watch(g_watchdog, g_monitor, &on_report);
  for (int i = 0; i < 5; ++i) {
    LOOPCANARY_DISPATCH(g_monitor, kTick);
    dp::idle_wait();
  }
  {
    LOOPCANARY_DISPATCH(g_monitor, kStuck);
    stuck_forever(&g_ack);
  }
  check(false, "the watchdog reported no hang within 2 s");
  finish();
}

}  // namespace

int main() {
  lc::device_report::start("crash_box_test");
  const std::uint32_t boot = lc::device_report::count_boot();

  const lc::CrashBoxStatus status = g_box.open(board::reset_cause());
  lc::CrashBoxStats stats = g_box.stats();
  print_stats(stats);
  if (boot == 1) {
    check(status == lc::CrashBoxStatus::discarded, "boot 1: no valid box in RAM after power-on");
    check(stats.boxes_discarded == 1, "boot 1: the discarded box is counted");
    first_boot();
  }
  check(boot == 2, "boot 2: no-init RAM kept the boot count across the reset");
  if (LC_TEST_CORRUPT) {
    check(status == lc::CrashBoxStatus::discarded, "boot 2: the damaged box is discarded");
    check(stats.boxes_discarded == 1, "boot 2: the discarded box is counted");
    check(stats.kept == 0, "boot 2: no record kept from a damaged box");
  } else {
    check(status == lc::CrashBoxStatus::kept, "boot 2: the box kept records");
    check(stats.kept == 1 && stats.stored == 1, "boot 2: the one hang record");
    check(stats.reset_cause == lc::ResetCause::software, "boot 2: reset cause software (set before the reset)");
  }
  const std::uint32_t sent = lc::device_report::send_capture(g_box, LC_CAPTURE);
  check(sent == (LC_TEST_CORRUPT ? 0u : 1u),
        LC_TEST_CORRUPT ? "boot 2: nothing sent" : "boot 2: one previous_boot packet sent");
  stats = g_box.stats();
  print_stats(stats);
  check(stats.drained == sent, "boot 2: the box counts what it sent");
  finish();
}
