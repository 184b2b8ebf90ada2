// SPDX-License-Identifier: MIT
// Device test 2: a handler that never returns (stuck_forever() spins on a flag nobody sets).
//
// Threshold 20 ms, hang limit 100 ms, watchdog in the port's timer interrupt (1 ms). Expected: a
// block-in-progress report, then a hang report while the loop is still stuck. The loop cannot
// report anything itself, so the interceptor checks the hang report in the timer interrupt
// and pends the consumer (Cortex-M: PendSV, at SysTick's priority; RISC-V: the machine software
// interrupt), which runs right after it, once the hang record is in the ring: it sends the ring's records as binary packets to the host file LC_CAPTURE
// (semihosting) and exits with the verdict. On the host check_firmware.cmake decodes the file
// with the firmware's ELF (`loopcanary decode`) and requires the hang record of wait_for_ack
// with >= 80 % of its samples in stuck_forever. If no hang report comes within 2 s, the stuck
// function gives up and the firmware fails.
//
// LC_TEST_START: the clock's start value (just before 2^32: the wrap falls inside the hang).
#include "device_report.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "device_port.hpp"

#ifndef LC_TEST_START
#define LC_TEST_START 0u
#endif
#ifndef LC_CAPTURE
#define LC_CAPTURE "hang_test.lcb"
#endif

namespace lc = loopcanary;
namespace dp = loopcanary::device_port;
using lc::device_report::check;

namespace {

constexpr lc::Event kTick{"tick"};
constexpr lc::Event kStuck{"wait_for_ack"};
constexpr std::uint32_t kThresholdUs = 20'000;
constexpr std::uint32_t kHangUs = 100'000;

lc::StaticWatchdog<1, 4> g_watchdog;
dp::PortMonitor g_monitor;
volatile std::uint32_t g_ack = 0;          // never set: the handler waits forever
volatile std::uint32_t g_stuck = 0;        // the loop entered the stuck handler
lc::BlockRecord g_in_progress{};
std::uint32_t g_in_progress_reports = 0;

#if defined(__riscv)
// The machine software interrupt (the board's trap vector, entry 3) runs right after the timer
// interrupt returns.
void defer_consumer() { lc::board::pend_software_interrupt(); }
#define LC_CONSUMER_HANDLER loopcanary_board_software_interrupt
#else
// System handler priority register 3: PendSV's priority in bits 23:16, SysTick's in 31:24.
volatile std::uint32_t& shpr3() { return *reinterpret_cast<volatile std::uint32_t*>(0xE000ED20u); }
volatile std::uint32_t& icsr() { return *reinterpret_cast<volatile std::uint32_t*>(0xE000ED04u); }
constexpr std::uint32_t kIcsrPendSvSet = 1u << 28;
// PendSV at SysTick's priority: it runs when this interrupt returns.
void defer_consumer() {
  shpr3() = (shpr3() & 0xFF00FFFFu) | ((shpr3() >> 8) & 0x00FF0000u);
  icsr() = kIcsrPendSvSet;
}
#define LC_CONSUMER_HANDLER PendSV_Handler
#endif

// Interceptor, SysTick context. The loop is stuck, so the verdict comes from here and PendSV.
void on_report(void* /*context*/, const lc::BlockRecord& record) {
  if (record.phase == lc::Phase::in_progress) {
    g_in_progress = record;
    ++g_in_progress_reports;
    return;
  }
  if (record.phase != lc::Phase::hang) return;
  const std::uint32_t ticks_per_ms = dp::tick_hz() / 1000u;
  lc::device_report::print_record(g_in_progress);
  lc::device_report::print_record(record);
  check(g_stuck != 0, "the loop is still in the stuck handler");
  check(g_in_progress_reports == 1 && g_in_progress.event == &kStuck, "block in progress reported first");
  check(record.event == &kStuck, "hang names wait_for_ack");
  check((record.flags & lc::kFlagHung) != 0, "record flagged hung");
  check(record.duration_ticks > kHangUs / 1000u * ticks_per_ms, "hang: past the hang limit");
  check(record.duration_ticks <= (kHangUs / 1000u + 2u) * ticks_per_ms, "hang: within two polls of the limit");
  check(g_monitor.stats().hangs == 1, "LoopStats.hangs == 1");
  check(g_monitor.stats().blocks == 0, "no final block yet (the event never ended)");
  check(record.samples_taken >= 40, "samples every 2 ms since the arm point (5 ms)");
  check(record.samples_missed == 0, "no missed samples");
  check(record.cause == lc::Cause::running, "cause: running (the loop spins)");
  if (LC_TEST_START > 0x80000000u) {
    check(record.end < record.start, "the clock wrapped during the hang");
  }
  // The consumer runs when this interrupt returns, after the watchdog has put the hang record
  // into its ring.
  defer_consumer();
}

}  // namespace

// The ring's consumer while the loop is stuck: sends the records and ends the run.
extern "C" void LC_CONSUMER_HANDLER() {
  dp::attach(nullptr);
  const std::uint32_t records = lc::device_report::send_capture(g_watchdog, LC_CAPTURE);
  check(records == 2, "both records sent as packets: in progress and hang");
  lc::device_report::print_port_stats();
  lc::board::exit(lc::device_report::finish());
}

// The culprit: waits for an acknowledgement that never comes. Gives up after 2 s of clock time
// only so that a watchdog that never reports fails the test instead of hanging it.
// (The clock is read once per 1000 spins, so nearly every PC sample lands in the spin itself,
// not in the inlined clock code, which addr2line would name after the clock.)
__attribute__((noinline)) void stuck_forever(const volatile std::uint32_t* ack) {
  const lc::tick_t begin = dp::Clock::now();
  const lc::tick_t give_up = 2u * dp::tick_hz();
  while (*ack == 0) {
    for (int spin = 0; spin < 1000 && *ack == 0; ++spin) {
    }
    if (lc::ticks_between(begin, dp::Clock::now()) > give_up) return;
  }
}

int main() {
  lc::device_report::start("hang_test");
  lc::device_report::init_port(LC_TEST_START);
  lc::MonitorConfig config = lc::device_report::loop_config(kThresholdUs);
  config.arm_permille = 250;
  config.sample_interval_us = 2'000;
  config.hang_limit_us = kHangUs;
  check(g_monitor.init(config) == lc::Status::ok, "monitor init");
  check(g_watchdog.init(lc::WatchdogConfig{}, dp::make_hal()) == lc::Status::ok, "watchdog init");
  lc::device_report::watch(g_watchdog, g_monitor, &on_report);

  for (int i = 0; i < 5; ++i) {
    LOOPCANARY_DISPATCH(g_monitor, kTick);
    dp::idle_wait();  // a short, idle handler
  }
  {
    LOOPCANARY_DISPATCH(g_monitor, kStuck);
    g_stuck = 1;
    stuck_forever(&g_ack);
  }
  check(false, "the watchdog reported no hang within 2 s");
  return lc::device_report::finish();
}
