// SPDX-License-Identifier: MIT
// Device test: the evidence stream end to end. A StaticEvidenceWatchdog in the SysTick interrupt
// sends what it observes as evidence packets into an evidence ring in no-init RAM (the crash box);
// the firmware drains the ring to the host file LC_CAPTURE (semihosting); check_firmware.cmake
// decodes it with the host tool, which assembles the records, symbolises them with the ELF and
// checks them (event, phase, cause, >= 80 % of the samples in the culprit function, and for the
// crash box the previous boot and its reset cause). The device checks only what it can see
// without records: the loop's counters and the ring's.
//
// LC_SCENARIO 1 (block): ten short dispatches, then one of 50 ms in busy_compute (threshold
//   20 ms): an in-progress and a final observation; the ring is drained at the end.
// LC_SCENARIO 2 (hang): a handler stuck in stuck_forever past the hang limit (100 ms): in-progress
//   and hang observations; drained while it is still stuck (from the loop, as a device's idle task
//   would once the handler gives up).
// LC_SCENARIO 3 (crash box): boot 1 hangs as in 2; the watchdog's interceptor, in the SysTick
//   interrupt, sees the hang's observation already in the ring, sets the reset cause `software`
//   and requests a system reset (SYSRESETREQ) as a hardware watchdog would reset the device,
//   without draining; boot 2 finds the ring kept and drains it: the hang record decodes as
//   previous_boot with reset cause software.
// LC_SCENARIO 4 (damaged box): as 3, but the interceptor damages the ring's header before the reset:
//   boot 2 discards the ring (counted); the capture holds boot 2's own boot packet only, which
//   says so (the decoder warns "crash box discarded").
#include <cstddef>
#include <cstdint>

#include "busy.hpp"
#include "device_report.hpp"
#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"
#include "device_port.hpp"

#ifndef LC_SCENARIO
#define LC_SCENARIO 1
#endif
#ifndef LC_CAPTURE
#define LC_CAPTURE "evidence_test.lcb"
#endif

namespace lc = loopcanary;
namespace dp = loopcanary::device_port;
namespace board = loopcanary::board;
using lc::device_report::check;
using lc::device_test::print;
using lc::device_test::print_u64;

namespace {

constexpr lc::Event kShort{"short_handler"};
constexpr lc::Event kSlow{"slow_handler"};
constexpr lc::Event kStuck{"wait_for_ack"};

// 8 KiB: a hang that nothing drains fills it with samples up to its reserve for the reports; a
// sample with stack evidence takes about 60 bytes.
LOOPCANARY_BOARD_NOINIT lc::StaticEvidenceRing<8192> g_ring;

lc::StaticEvidenceWatchdog<1> g_watchdog;
dp::PortMonitor g_monitor;
volatile std::uint32_t g_ack = 0;  // never set: the stuck handler waits until the hang is counted

void print_ring(const char* when) {
  const lc::EvidenceRingStats s = g_ring.stats();
  print("lc-evidence-ring ");
  print(when);
  const std::uint32_t values[] = {s.pushed,          s.dropped, s.sent_bytes, s.carried_bytes,
                                  s.boxes_discarded, s.boot,    static_cast<std::uint32_t>(s.reset_cause)};
  const char* const names[] = {" pushed=",          " dropped=", " sent_bytes=", " carried_bytes=",
                               " boxes_discarded=", " boot=",    " reset_cause="};
  for (std::size_t i = 0; i < sizeof values / sizeof values[0]; ++i) {
    print(names[i]);
    print_u64(values[i]);
  }
  print("\n");
}

[[noreturn]] void finish() {
  print_ring("end");
  check(g_ring.stats().dropped == 0, "the ring dropped no packet");
  board::exit(lc::device_report::finish());
}

// The watchdog's interceptor, SysTick context: the reports' phases in order (scenario 2 checks
// them); at a hang in scenarios 3 and 4, the reset a hardware watchdog would make.
lc::Phase g_phases[4];
std::uint32_t g_reports_seen = 0;
void on_report(void* /*context*/, const lc::Observation& observation, bool kept) {
  if (g_reports_seen < 4) g_phases[g_reports_seen] = observation.phase;
  ++g_reports_seen;
  if (LC_SCENARIO < 3 || observation.phase != lc::Phase::hang) return;
  check(kept && observation.note.event == &kStuck, "the hang of wait_for_ack is in the ring");
  g_ring.set_reset_cause(lc::ResetCause::software);
  if (LC_SCENARIO == 4) {
    // A stray write into the header (the ring's capacity word), as a power dip would leave it.
    reinterpret_cast<volatile std::uint8_t*>(&g_ring)[2 * sizeof(std::uint32_t)] ^= 0x01;
  }
  if (lc::device_report::failed()) finish();  // a failed boot 1 ends the run with its verdict
  print("requesting a system reset from the hang interceptor\n");
  board::request_reset();
}

void setup() {
  lc::device_report::init_port(0);
  lc::MonitorConfig config = lc::device_report::loop_config(20'000);
  config.arm_permille = 250;
  config.sample_interval_us = 2'000;
  config.hang_limit_us = 100'000;
  check(g_monitor.init(config) == lc::Status::ok, "monitor init");
  lc::WatchdogConfig dog;
  dog.qualifier = board::name();
  check(g_watchdog.init(dog, dp::make_hal(), g_ring) == lc::Status::ok, "evidence watchdog init");
  check(g_watchdog.add(g_monitor) == lc::Status::ok, "watchdog add");
  check(g_watchdog.add_interceptor(&on_report, nullptr) == lc::Status::ok, "interceptor set");
  dp::attach(&g_watchdog);
}

__attribute__((noinline)) void stuck_forever(const volatile std::uint32_t* ack) {
  const lc::tick_t begin = dp::Clock::now();
  const lc::tick_t give_up = 2u * dp::tick_hz();
  while (*ack == 0 && g_monitor.stats().hangs == 0) {  // stats() now and then: few samples land there
    for (int spin = 0; spin < 50'000 && *ack == 0; ++spin) {
    }
    if (lc::ticks_between(begin, dp::Clock::now()) > give_up) return;
  }
}

[[maybe_unused]] __attribute__((noinline)) void run_hang() {  // a frame of its own: the chain checked
  for (int i = 0; i < 5; ++i) {
    LOOPCANARY_DISPATCH(g_monitor, kShort);
    dp::idle_wait();
  }
  LOOPCANARY_DISPATCH(g_monitor, kStuck);
  stuck_forever(&g_ack);
  check(g_monitor.stats().hangs == 1, "the watchdog counted the hang");
}

}  // namespace

int main() {
  lc::device_report::start("evidence_test");
  [[maybe_unused]] const std::uint32_t boot = lc::device_report::count_boot();  // scenarios 3 and 4 reset
  const lc::CrashBoxStatus status = g_ring.open(board::reset_cause());
  print_ring("open");

#if LC_SCENARIO == 1
  check(status == lc::CrashBoxStatus::discarded, "no valid ring in RAM after power-on");
  setup();
  for (int i = 0; i < 10; ++i) {
    LOOPCANARY_DISPATCH(g_monitor, kShort);
    lc::device_test::spend_ticks(dp::Clock::now(), dp::tick_hz() / 1000u, 1'000u);
  }
  {
    LOOPCANARY_DISPATCH(g_monitor, kSlow);
    lc::device_test::spend_ticks(dp::Clock::now(), 50u * (dp::tick_hz() / 1000u), 1'000u);
  }
  for (int i = 0; i < 5; ++i) dp::idle_wait();  // the watchdog sees the end
  dp::attach(nullptr);
  const lc::LoopStats stats = g_monitor.stats();
  check(stats.dispatches == 11 && stats.blocks == 1, "11 dispatches, one block");
  check(g_watchdog.stats().reports == 2, "two reports: in progress and final");
  lc::device_report::send_capture(g_ring, LC_CAPTURE);
#elif LC_SCENARIO == 2
  check(status == lc::CrashBoxStatus::discarded, "no valid ring in RAM after power-on");
  setup();
  run_hang();
  dp::attach(nullptr);
  check(g_watchdog.stats().reports == 2, "two reports: in progress and hang");
  check(g_reports_seen == 2 && g_phases[0] == lc::Phase::in_progress && g_phases[1] == lc::Phase::hang,
        "the interceptor saw the in-progress and the hang report, in order");
  lc::device_report::send_capture(g_ring, LC_CAPTURE);
#else
  if (boot == 1) {
    check(status == lc::CrashBoxStatus::discarded, "boot 1: no valid ring in RAM after power-on");
    setup();
    run_hang();  // the interceptor resets the device at the hang report
    check(false, "boot 1: the hang interceptor requested a reset");
    finish();
  }
  check(boot == 2, "boot 2: no-init RAM kept the boot count across the reset");
  const lc::EvidenceRingStats s = g_ring.stats();
  if (LC_SCENARIO == 4) {
    check(status == lc::CrashBoxStatus::discarded && s.boxes_discarded == 1, "boot 2: the damaged ring is discarded, counted");
    check(s.carried_bytes == 0, "boot 2: nothing kept from a damaged ring");
  } else {
    check(status == lc::CrashBoxStatus::kept && s.carried_bytes > 0, "boot 2: the ring kept boot 1's evidence");
    check(s.reset_cause == lc::ResetCause::software, "boot 2: reset cause software (set before the reset)");
    check(s.boot == 2, "boot 2: the ring's second boot");
  }
  lc::device_report::send_capture(g_ring, LC_CAPTURE);
#endif
  finish();
}
