// SPDX-License-Identifier: MIT
// Device test 1: a handler spends ~50 ms in busy_compute() with a 20 ms threshold.
//
// The watchdog runs in the SysTick interrupt (1 ms). Expected: a block-in-progress report while
// the handler still runs, a final report after it ends (duration ~50 ms, cause running, samples
// every 2 ms from the arm point at 5 ms), nothing for the short events. The firmware checks
// all that itself (exit code) on the records its interceptor saw, then sends the records in its
// ring as binary packets to the host file LC_CAPTURE (semihosting) and prints how many; on the
// host check_firmware.cmake decodes the file with the firmware's ELF (`loopcanary decode`) and
// requires both records, with >= 80 % of their samples in busy_compute.
//
// Variants (compile definitions): LC_TEST_START = the clock's start value (a start just before
// 2^32 puts the wrap inside the block); LC_TEST_REALTIME = 1 for the run without -icount, where
// QEMU follows host time: loose bounds.
#include "busy.hpp"
#include "device_report.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "device_port.hpp"

#ifndef LC_TEST_START
#define LC_TEST_START 0u
#endif
#ifndef LC_TEST_REALTIME
#define LC_TEST_REALTIME 0
#endif
#ifndef LC_CAPTURE
#define LC_CAPTURE "block_test.lcb"
#endif

namespace lc = loopcanary;
namespace dp = loopcanary::device_port;
using lc::device_report::check;

namespace {

constexpr lc::Event kShort{"short_handler"};
constexpr lc::Event kSlow{"slow_handler"};
constexpr std::uint32_t kThresholdUs = 20'000;
constexpr std::uint32_t kIntervalUs = 2'000;
constexpr std::uint32_t kBlockMs = 50;

lc::StaticWatchdog<1, 8> g_watchdog;
dp::PortMonitor g_monitor;
volatile std::uint32_t g_in_slow_handler = 0;
volatile std::uint32_t g_reports = 0;
volatile std::uint32_t g_in_progress_reports = 0;
volatile std::uint32_t g_in_progress_while_running = 0;
lc::BlockRecord g_in_progress{};
lc::BlockRecord g_final{};

// Interceptor, SysTick context: keeps the records for the checks (the ring's copies go to the
// host as packets) and notes whether the in-progress report came while the handler still ran.
void on_report(void* /*context*/, const lc::BlockRecord& record) {
  g_reports = g_reports + 1u;
  if (record.phase == lc::Phase::final) g_final = record;
  if (record.phase != lc::Phase::in_progress) return;
  g_in_progress = record;
  g_in_progress_reports = g_in_progress_reports + 1u;
  if (g_in_slow_handler != 0) g_in_progress_while_running = g_in_progress_while_running + 1u;
}

}  // namespace

// Computes in busy_compute() (busy.hpp: the culprit, every PC sample lands there) for `ms`
// milliseconds of the port clock. Chunks: ~0.2 ms under -icount; larger in real time, where QEMU
// emulates each SysTick register read slowly enough (in host time) to draw samples to the clock
// read otherwise.
void spend_ms(std::uint32_t ms) {
  constexpr std::uint32_t kChunk = LC_TEST_REALTIME ? 100'000u : 1'000u;
  lc::device_test::spend_ticks(dp::Clock::now(), ms * (dp::tick_hz() / 1000u), kChunk);
}

int main() {
  lc::device_report::start("block_test");
  lc::device_report::init_port(LC_TEST_START);
  lc::MonitorConfig config = lc::device_report::loop_config(kThresholdUs);
  config.arm_permille = 250;
  config.sample_interval_us = kIntervalUs;
  config.hang_limit_us = 1'000'000;
  check(g_monitor.init(config) == lc::Status::ok, "monitor init");
  lc::WatchdogConfig dog;
  dog.qualifier = lc::board::name();
  check(g_watchdog.init(dog, dp::make_hal()) == lc::Status::ok, "watchdog init");
  lc::device_report::watch(g_watchdog, g_monitor, &on_report);

  for (int i = 0; i < 10; ++i) {
    LOOPCANARY_DISPATCH(g_monitor, kShort);
    spend_ms(1);
  }
  g_in_slow_handler = 1;
  {
    LOOPCANARY_DISPATCH(g_monitor, kSlow);
    spend_ms(kBlockMs);
  }
  g_in_slow_handler = 0;
  // The final record comes at the next poll; sleep until it is there.
  for (int i = 0; i < 20 && g_watchdog.pending() < 2; ++i) dp::idle_wait();
  dp::attach(nullptr);

  const lc::BlockRecord& in_progress = g_in_progress;
  const lc::BlockRecord& final_record = g_final;
  lc::device_report::print_record(in_progress);
  lc::device_report::print_record(final_record);
  const std::uint32_t records = lc::device_report::send_capture(g_watchdog, LC_CAPTURE);

  const std::uint32_t ticks_per_ms = dp::tick_hz() / 1000u;
  const lc::LoopStats stats = g_monitor.stats();
  check(stats.dispatches == 11, "11 dispatches");
  check(stats.blocks == 1, "exactly one block (the short events are not blocks)");
  check(g_reports == 2, "two reports: in progress and final");
  check(records == 2, "both records sent as packets");
  check(g_in_progress_reports == 1, "one in-progress report");
  check(g_in_progress_while_running == 1, "the in-progress report came while the handler ran");
  check(in_progress.event == &kSlow && final_record.event == &kSlow, "both records name slow_handler");
  check(in_progress.duration_ticks > kThresholdUs / 1000u * ticks_per_ms, "in progress: past the threshold");
  check(in_progress.duration_ticks <= (kThresholdUs / 1000u + 2u) * ticks_per_ms,
        "in progress: within two polls of the threshold");
  check(final_record.phase == lc::Phase::final && final_record.flags == 0, "final record, watched");
  check(final_record.duration_ticks == lc::ticks_between(final_record.start, final_record.end),
        "final duration = end - start (modular)");
  const std::uint64_t duration_ms = final_record.duration_ticks / ticks_per_ms;
#if LC_TEST_REALTIME
  // Host time: QEMU's SysTick follows the host clock and stalls while the host is loaded (its
  // timer callback runs late); loose bounds.
  check(duration_ms > 20 && duration_ms < 1000, "duration loosely ~50 ms");
  check(final_record.samples_taken >= 3, "some samples");
#else
  check(duration_ms >= kBlockMs && duration_ms <= kBlockMs + 2, "duration 50..52 ms");
  // Armed at 5 ms, one sample every 2 ms to the end: about 22.
  check(final_record.samples_taken >= 20 && final_record.samples_taken <= 24, "20..24 samples");
  check(final_record.samples_missed == 0, "no missed samples");
  check(final_record.cause == lc::Cause::running, "cause: running");
  const std::uint64_t window_us = lc::us_from_ticks(final_record.window_ticks, dp::tick_hz());
  check(final_record.has_thread_cpu && final_record.thread_cpu_us * 10u >= 9u * window_us,
        "thread CPU >= 90 % of the window");
#endif
  check(final_record.sample_count == lc::kMaxSamples || final_record.sample_count == final_record.samples_taken,
        "kept samples: the latest ones");
  if (LC_TEST_START > 0x80000000u) {
    check(final_record.end < final_record.start, "the clock wrapped inside the block");
  }
  lc::device_report::print_port_stats();
  return lc::device_report::finish();
}
