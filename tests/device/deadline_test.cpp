// SPDX-License-Identifier: MIT
// Device test: a deadline miss. A periodic event (control_tick: period 2 ms, deadline 500 us,
// its EventHealth set up with Monitor::init_event) is posted by a timer interrupt (the board's
// CMSDK APB timer 0, not the port's SysTick) into a small queue, stamped with its post time; the
// super-loop dispatches each with begin_at(event, now, posted). After the 4th tick the loop runs
// a 7 ms dispatch (flash_erase, over the 5 ms block threshold) that holds it while three ticks
// come due: they are dispatched late, one after another, when it ends.
//
// Expected, by design (ticks due at p4 + 2, 4, 6 ms wait for the hold that ends near
// p4 + 7.1 ms): three deadline misses, lateness about 5.1, 3.2 and 1.3 ms, so 2 + 1 + 0 = 3 missed
// periods; the other nine ticks on time (the loop sleeps between them and wakes with the
// interrupt). Under -icount time is instructions, so the run is the same every time; the firmware
// also keeps its own reference of every latency it handed to the monitor (the `now` it passed
// minus the post stamp) and requires the monitor's histogram, maximum, deadline misses and missed
// periods to equal the ones it computes from them. flash_erase is a block: its in-progress and
// final records are checked here and sent, with every other record, as binary packets to the
// host file LC_CAPTURE, which check_firmware.cmake decodes, requiring the final record's samples
// in busy_compute.
//
// QEMU (7.2, -icount sleep=off) delivers only every other SysTick interrupt while the CPU sleeps
// in WFI, so the port's clock advances at half rate across the loop's idle waits: the timer's
// ticks read about 1 ms apart there and 2 ms apart while the loop computes (the hold). Nothing
// checked here spans an idle wait: the hold and the late ticks' waits are busy time.
//
// Variant: LC_TEST_START = the clock's start value; a start just before 2^32 puts the wrap inside
// the hold, between the post and the dispatch of a late tick.
#include "busy.hpp"
#include "device_report.hpp"
#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/cortex_m.hpp"

#ifndef LC_TEST_START
#define LC_TEST_START 0u
#endif
#ifndef LC_CAPTURE
#define LC_CAPTURE "deadline_test.lcb"
#endif

namespace lc = loopcanary;
namespace cm = loopcanary::cortex_m;
using lc::device_report::check;
using lc::device_test::print;
using lc::device_test::print_u64;

extern "C" void Irq_Handler() noexcept;

namespace {

// The control tick and its counters; the hold (no counters: it is not queued).
lc::EventHealth g_control_health;
constexpr lc::Event kControl{"control_tick", 0, &g_control_health};
constexpr lc::Event kHold{"flash_erase"};

constexpr std::uint32_t kPeriodUs = 2'000;
constexpr std::uint32_t kDeadlineUs = 500;
constexpr std::uint32_t kThresholdUs = 5'000;
constexpr std::uint32_t kHoldUs = 7'000;
// Health records of the loop, decoded on the host: a run of about 30 ms makes 4 to 6 (the port's
// SysTick clock runs slow across WFI under QEMU's -icount sleep=off).
constexpr std::uint32_t kHealthPeriodUs = 5'000;
constexpr std::uint32_t kWorkUs = 100;       // each tick's handler
constexpr std::uint32_t kTicks = 12;         // the timer posts this many, then stops
constexpr std::uint32_t kHoldAfterTick = 4;  // the hold runs after this tick's dispatch

// CMSDK APB timer 0 of the MPS2 images (IRQ 8), counting the 25 MHz peripheral clock down from
// RELOAD: an interrupt every RELOAD + 1 cycles.
constexpr std::uintptr_t kTimerCtrl = 0x40000000;
constexpr std::uintptr_t kTimerValue = 0x40000004;
constexpr std::uintptr_t kTimerReload = 0x40000008;
constexpr std::uintptr_t kTimerIntClear = 0x4000000C;
constexpr std::uint32_t kTimerEnable = 1u << 0;
constexpr std::uint32_t kTimerIrqEnable = 1u << 3;
constexpr std::uint32_t kTimerIrq = 8;
constexpr std::uintptr_t kNvicIser0 = 0xE000E100;
constexpr std::uintptr_t kNvicIcer0 = 0xE000E180;
constexpr std::uintptr_t kNvicIpr = 0xE000E400;  // one priority byte per IRQ

struct Message {
  const lc::Event* event;
  lc::tick_t posted;  // port clock when the timer interrupt queued it
};

lc::StaticWatchdog<1, 8, 1, 8> g_watchdog;  // and a health ring of 8
cm::PortMonitor g_monitor;
lc::SpscRing<Message, 4> g_queue;  // the timer interrupt produces, the loop consumes
volatile std::uint32_t g_posted = 0;
volatile std::uint32_t g_queue_full = 0;  // ticks the queue had no room for (lost: counted)
volatile std::uint32_t g_hold_reports = 0;
volatile std::uint32_t g_misses_reported = 0;
volatile std::uint32_t g_misses_by_hold = 0;
volatile std::uint32_t g_reports = 0;
lc::BlockRecord g_in_progress{};
lc::BlockRecord g_final{};

// The firmware's own account of every latency it gave the monitor.
struct Reference {
  std::uint32_t buckets[lc::kHistogramBuckets] = {};
  std::uint32_t dispatches = 0;
  lc::tick_t max_latency = 0;
  std::uint32_t deadline_misses = 0;
  std::uint32_t missed_periods = 0;
  std::uint32_t late = 0;          // ticks posted while the hold ran
  lc::tick_t on_time_max = 0;      // longest latency of the other ticks
  lc::tick_t late_min = ~lc::tick_t{0};
  bool wrapped_in_queue = false;   // a tick posted before the wrap, dispatched after it
};
Reference g_reference;

std::uint32_t floor_log2(lc::tick_t value) {
  std::uint32_t i = 0;
  while (value > 1u) {
    value >>= 1;
    ++i;
  }
  return i;
}

void timer_start(std::uint32_t period_ticks) {
  cm::detail::reg(kTimerCtrl) = 0;
  cm::detail::reg(kTimerReload) = period_ticks - 1u;
  cm::detail::reg(kTimerValue) = period_ticks - 1u;
  cm::detail::reg(kTimerIntClear) = 1u;
  // The SysTick's priority (the lowest): neither interrupt preempts the other, so a tick never
  // reads the clock while the SysTick interrupt is half-way through extending it.
  reinterpret_cast<volatile std::uint8_t*>(kNvicIpr)[kTimerIrq] = 0xFF;
  cm::detail::reg(kNvicIser0) = 1u << kTimerIrq;
  cm::detail::reg(kTimerCtrl) = kTimerEnable | kTimerIrqEnable;
}

void timer_stop() {
  cm::detail::reg(kTimerCtrl) = 0;
  cm::detail::reg(kNvicIcer0) = 1u << kTimerIrq;
}

// Interceptor, SysTick context: keeps the hold's records for the checks.
void on_report(void* /*context*/, const lc::BlockRecord& record) {
  g_reports = g_reports + 1u;
  if (record.phase == lc::Phase::deadline_miss) {
    g_misses_reported = g_misses_reported + 1u;
    if (record.delayed_by == &kHold && record.delayed_by_dispatch == kHoldAfterTick + 1u && record.samples_taken > 0) {
      g_misses_by_hold = g_misses_by_hold + 1u;
    }
    return;
  }
  if (record.event != &kHold) return;
  if (record.phase == lc::Phase::in_progress) {
    g_in_progress = record;
    g_hold_reports = g_hold_reports + 1u;
  } else if (record.phase == lc::Phase::final) {
    g_final = record;
    g_hold_reports = g_hold_reports + 1u;
  }
}

// Health interceptor, SysTick context: how many health records carried an idle share.
volatile std::uint32_t g_health_with_idle = 0;
void on_health(void* /*context*/, const lc::HealthRecord& record) {
  if (record.has_idle && record.idle_ticks > 0) g_health_with_idle = g_health_with_idle + 1u;
}

void dispatch_tick(const Message& message, lc::tick_t hold_begin, lc::tick_t hold_end, bool held) {
  const lc::tick_t now = cm::Clock::now();
  g_monitor.begin_at(*message.event, now, message.posted);
  const lc::tick_t latency = lc::ticks_between(message.posted, now);
  Reference& r = g_reference;
  ++r.buckets[floor_log2(latency)];
  ++r.dispatches;
  if (latency > r.max_latency) r.max_latency = latency;
  const lc::tick_t deadline = kDeadlineUs * (cm::tick_hz() / 1'000'000u);
  const lc::tick_t period = kPeriodUs * (cm::tick_hz() / 1'000'000u);
  if (latency > deadline) ++r.deadline_misses;
  r.missed_periods += latency / period;
  // Posted while the hold ran (wrap-safe: measured from the hold's begin).
  if (held && lc::ticks_between(hold_begin, message.posted) < lc::ticks_between(hold_begin, hold_end)) {
    ++r.late;
    if (latency < r.late_min) r.late_min = latency;
    if (now < message.posted) r.wrapped_in_queue = true;
  } else if (latency > r.on_time_max) {
    r.on_time_max = latency;
  }
  lc::device_test::spend_ticks(now, kWorkUs * (cm::tick_hz() / 1'000'000u), 50);
  g_monitor.end();
}

void print_ticks(const char* what, lc::tick_t ticks) {
  print(what);
  print_u64(ticks);
  print(" ticks (");
  print_u64(lc::us_from_ticks(ticks, cm::tick_hz()));
  print(" us)\n");
}

void print_health(const lc::EventStats& s) {
  print("control_tick: dispatches=");
  print_u64(s.dispatches);
  print(" deadline_misses=");
  print_u64(s.deadline_misses);
  print(" missed_periods=");
  print_u64(s.missed_periods);
  print(" posted_ahead=");
  print_u64(s.posted_ahead);
  print("\n");
  print_ticks("  max latency ", s.max_latency);
  print_ticks("  p50 ", lc::latency_percentile(s, 500));
  print_ticks("  p95 ", lc::latency_percentile(s, 950));
  print_ticks("  p99 ", lc::latency_percentile(s, 990));
  print("  lateness histogram (ticks at 25 MHz, log2 buckets):\n");
  for (std::uint32_t i = 0; i < lc::kHistogramBuckets; ++i) {
    if (s.latency[i] == 0) continue;
    print("    [");
    print_u64(i == 0 ? 0u : std::uint64_t{1} << i);
    print(", ");
    print_u64(lc::histogram_bucket_max(i));
    print("]: ");
    print_u64(s.latency[i]);
    print("\n");
  }
}

}  // namespace

// The timer's interrupt (the board routes every IRQ here; only the timer is enabled): queues one
// control tick stamped with the clock, and stops the timer after the last one.
extern "C" void Irq_Handler() noexcept {
  cm::detail::reg(kTimerIntClear) = 1u;
  const Message message{&kControl, cm::Clock::now()};
  if (g_queue.push(message)) {
    g_posted = g_posted + 1u;
  } else {
    g_queue_full = g_queue_full + 1u;
  }
  if (g_posted + g_queue_full >= kTicks) timer_stop();
}

int main() {
  lc::device_report::start("deadline_test");
  lc::device_report::init_port(LC_TEST_START);
  lc::MonitorConfig config = lc::device_report::loop_config(kThresholdUs);
  config.sample_interval_us = 1'000;
  config.hang_limit_us = 1'000'000;
  check(g_monitor.init_event(kControl, {kPeriodUs, kDeadlineUs}) == lc::Status::not_initialised,
        "init_event before init: not_initialised");
  check(g_monitor.init(config) == lc::Status::ok, "monitor init");
  check(g_monitor.init_event(kHold, {kPeriodUs, kDeadlineUs}) == lc::Status::event_health_missing,
        "init_event of an event without storage: event_health_missing");
  check(g_monitor.init_event(kControl, {kPeriodUs, kDeadlineUs}) == lc::Status::ok, "init_event control_tick");
  lc::WatchdogConfig dog;
  dog.qualifier = lc::board::name();
  dog.health_period_us = kHealthPeriodUs;
  check(g_watchdog.init(dog, cm::make_hal()) == lc::Status::ok, "watchdog init");
  lc::device_report::watch(g_watchdog, g_monitor, &on_report);
  check(g_watchdog.add_health_interceptor(&on_health, nullptr) == lc::Status::ok, "health interceptor");

  const lc::tick_t ticks_per_us = cm::tick_hz() / 1'000'000u;
  const lc::tick_t start = cm::Clock::now();
  timer_start(kPeriodUs * ticks_per_us);
  lc::tick_t hold_begin = 0;
  lc::tick_t hold_end = 0;
  bool held = false;
  std::uint32_t dispatched = 0;
  while (dispatched < kTicks) {
    Message message{};
    // Mask, check the queue, sleep: a tick posted after the check wakes the WFI.
    __asm__ volatile("cpsid i" ::: "memory");
    if (g_queue.size() == 0) cm::idle_wait(g_monitor);  // the wait counts as the loop's idle time
    __asm__ volatile("cpsie i" ::: "memory");
    if (!g_queue.pop(message)) continue;
    dispatch_tick(message, hold_begin, hold_end, held);
    if (++dispatched == kHoldAfterTick) {
      hold_begin = cm::Clock::now();
      g_monitor.begin_at(kHold, hold_begin);
      lc::device_test::spend_ticks(hold_begin, kHoldUs * ticks_per_us, 400);  // 400: few samples land in the clock read
      hold_end = cm::Clock::now();
      g_monitor.end_at(hold_end);
      held = true;
    }
  }
  // The final record of the hold came at the poll after it ended; sleep until the ring has it.
  for (int i = 0; i < 20 && g_hold_reports < 2; ++i) cm::idle_wait();
  cm::attach(nullptr);

  const lc::EventStats health = g_control_health.stats();
  const Reference& ref = g_reference;
  print_health(health);
  print_ticks("hold begins after ", lc::ticks_between(start, hold_begin));
  print_ticks("hold lasts ", lc::ticks_between(hold_begin, hold_end));
  const lc::BlockRecord& in_progress = g_in_progress;
  const lc::BlockRecord& final_record = g_final;
  lc::device_report::print_record(in_progress);
  lc::device_report::print_record(final_record);
  const std::uint32_t reports = g_reports;
  const std::uint32_t records = lc::device_report::send_capture(g_watchdog, LC_CAPTURE);

  // The run as designed.
  check(g_posted == kTicks && g_queue_full == 0, "the timer posted 12 ticks, none refused by the queue");
  check(ref.dispatches == kTicks, "12 ticks dispatched");
  check(ref.late == 3, "3 ticks came due during the hold");
  check(health.deadline_misses == 3, "3 deadline misses");
  check(health.missed_periods == 3, "3 missed periods (2 + 1 + 0)");
  check(health.max_latency > 5'000 * ticks_per_us && health.max_latency < 5'500 * ticks_per_us,
        "longest lateness 5.0..5.5 ms (the first tick of the hold)");
  check(ref.late_min > 1'000 * ticks_per_us && ref.late_min < 1'500 * ticks_per_us,
        "shortest late lateness 1.0..1.5 ms (the last tick of the hold)");
  check(ref.on_time_max < 50 * ticks_per_us, "the other ticks dispatched within 50 us of their post");
  // Exact: the monitor against the firmware's own account of the same latencies.
  check(health.dispatches == ref.dispatches, "dispatches recorded = dispatches made");
  check(health.max_latency == ref.max_latency, "max latency = reference");
  check(health.deadline_misses == ref.deadline_misses, "deadline misses = reference");
  check(health.missed_periods == ref.missed_periods, "missed periods = reference");
  bool histogram_equal = true;
  for (std::uint32_t i = 0; i < lc::kHistogramBuckets; ++i) histogram_equal = histogram_equal && health.latency[i] == ref.buckets[i];
  check(histogram_equal, "lateness histogram = reference, bucket by bucket");
  check(health.posted_ahead == 0, "no post stamp ahead of the clock");
  check(health.period_ticks == kPeriodUs * ticks_per_us && health.deadline_ticks == kDeadlineUs * ticks_per_us,
        "period and deadline in ticks");
  check(lc::latency_percentile(health, 500) < kDeadlineUs * ticks_per_us, "p50 within the deadline");
  check(lc::latency_percentile(health, 990) == health.max_latency, "p99 = the longest (12 dispatches)");
  // The hold: a block, reported while it ran and when it ended.
  const lc::LoopStats stats = g_monitor.stats();
  check(stats.dispatches == kTicks + 1u, "13 dispatches (12 ticks and the hold)");
  check(stats.blocks == 1, "one block (the hold)");
  check(g_hold_reports == 2, "two reports of the hold: in progress and final");
  check(g_misses_reported == 3, "3 deadline_miss reports");
  check(g_misses_by_hold == 3, "each names the hold (dispatch 5) as what delayed it, with its samples");
  const lc::WatchdogStats watchdog_stats = g_watchdog.stats();
  check(records == reports + watchdog_stats.health_records, "every record and health record sent as a packet");
  check(watchdog_stats.health_records >= 2 && watchdog_stats.health_dropped == 0,
        "a health record every 5 ms over the run, none dropped");
  check(g_monitor.stats().idle_ticks > 0 && g_health_with_idle > 0,
        "the loop's waits (idle_wait(monitor)) in its idle time and its health records");
  check(in_progress.phase == lc::Phase::in_progress && in_progress.event == &kHold, "in-progress record of flash_erase");
  check(final_record.phase == lc::Phase::final && final_record.flags == 0, "final record, watched");
  check(final_record.start == hold_begin && final_record.end == hold_end, "final record: the hold's stamps");
  check(final_record.duration_ticks >= kHoldUs * ticks_per_us &&
            final_record.duration_ticks < (kHoldUs + 100u) * ticks_per_us,
        "final record: 7.0..7.1 ms");
  // Armed at 1.25 ms, one sample per 1 ms poll to the end: 5 or 6.
  check(final_record.samples_taken >= 5 && final_record.samples_taken <= 6 && final_record.samples_missed == 0,
        "5..6 samples, none missed");
  if (LC_TEST_START > 0x80000000u) {
    check(hold_end < hold_begin, "the clock wrapped inside the hold");
    check(ref.wrapped_in_queue, "a late tick waited across the wrap");
  }
  lc::device_report::print_port_stats();
  return lc::device_report::finish();
}
