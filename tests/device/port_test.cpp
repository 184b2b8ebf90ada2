// SPDX-License-Identifier: MIT
// The Cortex-M port on the device: init refusals, the clock (rate, monotonic across SysTick
// periods and across the 2^32 wrap, with and without the SysTick interrupt masked), idle-based
// CPU counters, the debugger check, and PC capture from the exception frame on MSP and PSP,
// refused when SysTick preempted another handler or another stack; the text/JSON drain and the
// packet drain (whole packets, refusals counted); the board's host files.
#include <cstring>

#include "asm_helpers.hpp"
#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/port/cortex_m.hpp"

namespace lc = loopcanary;
namespace cm = loopcanary::cortex_m;

namespace {

constexpr std::uint32_t kPollHz = 1000;  // SysTick every 1 ms
constexpr lc::tick_t kPeriod = lc::board::kCoreHz / kPollHz;

cm::Config port_config(lc::tick_t start = 0) {
  cm::Config c;
  c.core_hz = lc::board::kCoreHz;
  c.poll_hz = kPollHz;
  c.start = start;
  return c;
}

// Waits until `n` more SysTick interrupts have run (sleeping in idle_wait()).
void sleep_ticks(std::uint32_t n) {
  const std::uint32_t first = cm::stats().ticks;
  while (cm::stats().ticks - first < n) cm::idle_wait();
}

// Spins (no sleep) until `n` more SysTick interrupts have run.
void spin_ticks(std::uint32_t n) {
  const std::uint32_t first = cm::stats().ticks;
  while (cm::stats().ticks - first < n) {
  }
}

void mask_interrupts() { __asm__ volatile("cpsid i" ::: "memory"); }
void unmask_interrupts() { __asm__ volatile("cpsie i" ::: "memory"); }

bool contains(const char* text, const char* part) { return std::strstr(text, part) != nullptr; }

}  // namespace

DT_TEST(PortInit, refuses_each_invalid_field) {
  cm::Config c = port_config();
  c.core_hz = 0;
  DT_EXPECT_EQ(cm::init(c), cm::PortStatus::core_hz_zero);
  DT_EXPECT(contains(cm::describe(cm::PortStatus::core_hz_zero), "core_hz"));
  c = port_config();
  c.poll_hz = 0;
  DT_EXPECT_EQ(cm::init(c), cm::PortStatus::poll_hz_zero);
  DT_EXPECT(contains(cm::describe(cm::PortStatus::poll_hz_zero), "poll_hz"));
  c = port_config();
  c.poll_hz = c.core_hz + 1;
  DT_EXPECT_EQ(cm::init(c), cm::PortStatus::poll_hz_above_core_hz);
  c = port_config();
  c.poll_hz = 1;  // 25'000'000 cycles: more than SysTick's 24 bits
  DT_EXPECT_EQ(cm::init(c), cm::PortStatus::poll_period_too_long);
  DT_EXPECT(contains(cm::describe(cm::PortStatus::poll_period_too_long), "24-bit"));
  if (lc::kStackWords > 0) {  // stack evidence: its budget and its code range
    for (const std::uint32_t budget : {0u, 6u, 65540u}) {
      c = port_config();
      c.stack_words.budget_bytes = budget;
      DT_EXPECT_EQ(cm::init(c), cm::PortStatus::stack_budget_out_of_range);
    }
    DT_EXPECT(contains(cm::describe(cm::PortStatus::stack_budget_out_of_range), "stack_words.budget_bytes"));
    c = port_config();
    c.stack_words.code_begin = c.stack_words.code_end;
    DT_EXPECT_EQ(cm::init(c), cm::PortStatus::code_range_empty);
    DT_EXPECT(contains(cm::describe(cm::PortStatus::code_range_empty), "stack_words.code_begin"));
    c = port_config();
    c.stack_words.budget_bytes = 65536;  // the largest
    DT_EXPECT_EQ(cm::init(c), cm::PortStatus::ok);
  }
  DT_EXPECT_EQ(cm::init(port_config()), cm::PortStatus::ok);
  DT_EXPECT_EQ(cm::tick_hz(), lc::board::kCoreHz);
  DT_EXPECT_EQ(cm::poll_period(), kPeriod);
}

DT_TEST(PortInit, dwt_source_counts_or_is_refused) {
  cm::Config c = port_config();
  c.source = cm::ClockSource::dwt_cyccnt;
  const cm::PortStatus status = cm::init(c);
  if (status == cm::PortStatus::ok) {  // silicon: CYCCNT counts
    DT_EXPECT_EQ(cm::clock_source(), cm::ClockSource::dwt_cyccnt);
    const lc::tick_t t0 = cm::Clock::now();
    spin_ticks(2);
    DT_EXPECT_GT(lc::ticks_between(t0, cm::Clock::now()), kPeriod);
  } else if (LOOPCANARY_CORTEX_M_HAS_DWT) {  // QEMU: the registers exist, the counter does not count
    DT_EXPECT_EQ(status, cm::PortStatus::dwt_unavailable);
    DT_EXPECT(contains(cm::describe(status), "dwt_cyccnt"));
    // Refused after the hardware was touched: SysTick stopped, the port uninitialised.
    DT_EXPECT_EQ(cm::detail::reg(0xE000E010) & 1u, 0u);  // SYST_CSR.ENABLE
    DT_EXPECT_EQ(cm::tick_hz(), 0u);
    DT_EXPECT_EQ(cm::clock_source(), cm::ClockSource::automatic);
  } else {  // ARMv6-M: no cycle counter in the build
    DT_EXPECT_EQ(status, cm::PortStatus::source_not_built);
  }
  // Automatic selection falls back to SysTick when CYCCNT does not count.
  DT_ASSERT_EQ(cm::init(port_config()), cm::PortStatus::ok);
  lc::device_test::print(cm::clock_source() == cm::ClockSource::dwt_cyccnt ? "  clock: DWT CYCCNT\n"
                                                                            : "  clock: SysTick\n");
}

DT_TEST(Clock, counts_core_clock_cycles) {
  DT_ASSERT_EQ(cm::init(port_config()), cm::PortStatus::ok);
  sleep_ticks(1);  // align to a tick
  const lc::tick_t t0 = cm::Clock::now();
  spin_ticks(20);
  const lc::tick_t elapsed = lc::ticks_between(t0, cm::Clock::now());
  // 20 SysTick periods of 25'000 cycles, give or take the interrupt latency.
  DT_EXPECT_GE(elapsed, 20 * kPeriod - kPeriod / 10);
  DT_EXPECT_LE(elapsed, 20 * kPeriod + kPeriod / 10);
  DT_EXPECT_EQ(cm::stats().polls, 0u);  // no watchdog attached
}

// Every read is at most a little later than the previous one: never backwards (a huge modular
// delta), never a period ahead. Across SysTick periods and across the 2^32 wrap.
DT_TEST(Clock, monotonic_across_periods_and_the_wrap) {
  const lc::tick_t start = static_cast<lc::tick_t>(0u - 5u * kPeriod / 2u);  // wraps in 2.5 periods
  DT_ASSERT_EQ(cm::init(port_config(start)), cm::PortStatus::ok);
  lc::tick_t previous = cm::Clock::now();
  bool wrapped = false;
  std::uint32_t reads = 0;
  const std::uint32_t first_tick = cm::stats().ticks;
  while (cm::stats().ticks - first_tick < 6) {
    const lc::tick_t t = cm::Clock::now();
    const lc::tick_t step = lc::ticks_between(previous, t);
    if (step > kPeriod / 4) {
      DT_EXPECT_LE(step, kPeriod / 4);
      return;
    }
    if (t < previous) wrapped = true;
    previous = t;
    ++reads;
  }
  DT_EXPECT(wrapped);
  DT_EXPECT_GT(reads, 100u);
}

// With interrupts masked, a SysTick wrap stays pending: the clock must still count the period.
DT_TEST(Clock, counts_a_pending_wrap_while_masked) {
  DT_ASSERT_EQ(cm::init(port_config()), cm::PortStatus::ok);
  if (cm::clock_source() != cm::ClockSource::systick) return;  // silicon with CYCCNT: n/a
  const volatile std::uint32_t& cvr = lc::cortex_m::detail::reg(lc::cortex_m::detail::kSystCvr);
  const volatile std::uint32_t& icsr = lc::cortex_m::detail::reg(lc::cortex_m::detail::kScbIcsr);
  sleep_ticks(1);
  while (cvr > kPeriod / 4) {  // the last quarter of a period
  }
  mask_interrupts();
  lc::tick_t previous = cm::Clock::now();
  bool bad_step = false;
  bool saw_pending = false;
  // Read through the wrap until 40 % of the next period (less than half: the port's limit).
  for (;;) {
    const lc::tick_t t = cm::Clock::now();
    if (lc::ticks_between(previous, t) > kPeriod / 8) bad_step = true;
    previous = t;
    const bool pending = (icsr & lc::cortex_m::detail::kIcsrPendStSet) != 0;
    saw_pending = saw_pending || pending;
    if (pending && cvr < kPeriod * 6 / 10) break;
  }
  const lc::tick_t before_unmask = cm::Clock::now();
  unmask_interrupts();  // the SysTick interrupt runs now and counts the period itself
  const lc::tick_t after_unmask = cm::Clock::now();
  DT_EXPECT(saw_pending);
  DT_EXPECT(!bad_step);
  DT_EXPECT_LE(lc::ticks_between(before_unmask, after_unmask), kPeriod / 8);
}

DT_TEST(Idle, counters_tell_idle_from_busy) {
  DT_ASSERT_EQ(cm::init(port_config()), cm::PortStatus::ok);
  const lc::Hal hal = cm::make_hal();
  DT_ASSERT(hal.read_cpu != nullptr);
  lc::Monitor super_loop;  // no LoopContext: the bare-metal super-loop, whose CPU time is the busy time
  lc::CpuReading c0{};
  lc::CpuReading c1{};
  lc::CpuReading c2{};
  // The callbacks run in the SysTick interrupt normally; mask interrupts to call them here.
  mask_interrupts();
  hal.read_cpu(hal.context, super_loop, &c0);
  unmask_interrupts();
  sleep_ticks(20);
  mask_interrupts();
  hal.read_cpu(hal.context, super_loop, &c1);
  unmask_interrupts();
  spin_ticks(20);
  mask_interrupts();
  hal.read_cpu(hal.context, super_loop, &c2);
  unmask_interrupts();
  constexpr unsigned kRead = (1u << lc::kCpuThreadUs) | (1u << lc::kCpuBusy) | (1u << lc::kCpuTotal) | (1u << lc::kCpuProcess);
  DT_EXPECT_EQ(c0.valid, kRead);
  DT_EXPECT_EQ(c2.valid, kRead);
  const std::uint64_t idle_total = c1.value[lc::kCpuTotal] - c0.value[lc::kCpuTotal];
  const std::uint64_t idle_busy = c1.value[lc::kCpuBusy] - c0.value[lc::kCpuBusy];
  const std::uint64_t spin_total = c2.value[lc::kCpuTotal] - c1.value[lc::kCpuTotal];
  const std::uint64_t spin_busy = c2.value[lc::kCpuBusy] - c1.value[lc::kCpuBusy];
  DT_EXPECT_GE(idle_total, 19u * kPeriod);
  DT_EXPECT_LT(idle_busy * 10u, idle_total);        // sleeping: under 10 % busy
  DT_EXPECT_GE(spin_total, 19u * kPeriod);
  DT_EXPECT_EQ(spin_busy, spin_total);              // spinning: all busy
  DT_EXPECT_EQ(c2.value[lc::kCpuProcess], c2.value[lc::kCpuBusy]);
  DT_EXPECT_EQ(c2.value[lc::kCpuThreadUs], lc::us_from_ticks(c2.value[lc::kCpuBusy], cm::tick_hz()));
  DT_EXPECT_GE(cm::stats().idle_waits, 19u);

  // A loop on its own stack (an RTOS task): no thread CPU time, the machine counters still.
  static cm::LoopContext task{0x20000000u, 0x20001000u};
  lc::MonitorConfig config;
  config.tick_hz = cm::tick_hz();
  config.context = &task;
  lc::Monitor rtos_task;
  DT_ASSERT_EQ(rtos_task.init(config), lc::Status::ok);
  lc::CpuReading c3{};
  mask_interrupts();
  hal.read_cpu(hal.context, rtos_task, &c3);
  unmask_interrupts();
  DT_EXPECT_EQ(c3.valid, kRead & ~(1u << lc::kCpuThreadUs));
}

DT_TEST(Debugger, not_attached_under_qemu) {
  // QEMU reads DHCSR as 0; on a board with a probe attached this test reports true.
  DT_EXPECT(!cm::debugger_attached());
  const lc::Hal hal = cm::make_hal();
#if LOOPCANARY_CORTEX_M_HAS_DWT
  DT_ASSERT(hal.debugger_attached != nullptr);
  DT_EXPECT(!hal.debugger_attached(hal.context));
#else
  DT_EXPECT(hal.debugger_attached == nullptr);
#endif
}

// ---- Capture ---------------------------------------------------------------------------------

namespace {

constexpr lc::Event kSpin{"spin"};

// The interceptor releases the spinning loop at the in-progress report.
volatile std::uint32_t g_release = 0;
lc::BlockRecord g_final{};
volatile std::uint32_t g_finals = 0;

void on_report(void* /*context*/, const lc::BlockRecord& record) {
  if (record.phase == lc::Phase::in_progress) g_release = 1;
  if (record.phase == lc::Phase::final) {
    g_final = record;
    g_finals = g_finals + 1u;
  }
}

struct CaptureRun {
  cm::PortMonitor* monitor;
};

void spin_dispatch(void* argument) {
  cm::PortMonitor& monitor = *static_cast<CaptureRun*>(argument)->monitor;
  monitor.begin(kSpin);
  dt_spin_until(&g_release);
  monitor.end();
}

// The port started, `monitor` (named `name`, threshold `threshold_us`, sampling from the first
// poll every 1 ms, on `context`) watched by `watchdog` with on_report, SysTick polling it.
bool watch_one_loop(lc::StaticWatchdog<1, 4>& watchdog, cm::PortMonitor& monitor, const char* name,
                    std::uint32_t threshold_us, const cm::LoopContext* context) {
  if (cm::init(port_config()) != cm::PortStatus::ok) return false;
  lc::MonitorConfig config;
  config.name = name;
  config.tick_hz = cm::tick_hz();
  config.threshold_us = threshold_us;
  config.arm_permille = 0;
  config.sample_interval_us = 1'000;
  config.hang_limit_us = 1'000'000;
  config.context = const_cast<cm::LoopContext*>(context);
  if (monitor.init(config) != lc::Status::ok) return false;
  if (watchdog.init(lc::WatchdogConfig{}, cm::make_hal()) != lc::Status::ok) return false;
  if (watchdog.add(monitor) != lc::Status::ok) return false;
  if (watchdog.add_interceptor(&on_report, nullptr) != lc::Status::ok) return false;
  g_release = 0;
  g_finals = 0;
  cm::attach(&watchdog);
  return true;
}

// One dispatch that spins in dt_spin_until until the block is reported in progress, on MSP or
// on PSP; returns the final record. 20 ms threshold.
bool run_capture(lc::StaticWatchdog<1, 4>& watchdog, cm::PortMonitor& monitor, const cm::LoopContext* context,
                 void* psp_top) {
  if (!watch_one_loop(watchdog, monitor, "capture", 20'000, context)) return false;
  CaptureRun run{&monitor};
  if (psp_top != nullptr) {
    dt_run_on_psp(&spin_dispatch, &run, psp_top);
  } else {
    spin_dispatch(&run);
  }
  while (g_finals == 0) cm::idle_wait();
  cm::attach(nullptr);
  return true;
}

// Code address of a Thumb function (its pointer has bit 0 set).
lc::Frame code_address(const void* function) { return reinterpret_cast<lc::Frame>(function) & ~lc::Frame{1}; }

bool in_spin(lc::Frame pc) {
  return pc >= code_address(reinterpret_cast<const void*>(&dt_spin_until)) && pc < code_address(dt_spin_until_end);
}

alignas(8) std::uint8_t g_psp_stack[2048];

lc::StaticWatchdog<1, 4> g_watchdog_msp;
cm::PortMonitor g_monitor_msp;
lc::StaticWatchdog<1, 4> g_watchdog_psp;
cm::PortMonitor g_monitor_psp;
lc::StaticWatchdog<1, 4> g_watchdog_other;
cm::PortMonitor g_monitor_other;

}  // namespace

DT_TEST(Capture, pc_and_lr_from_the_main_stack_frame) {
  DT_ASSERT(run_capture(g_watchdog_msp, g_monitor_msp, nullptr, nullptr));
  const lc::BlockRecord& r = g_final;
  DT_EXPECT_GE(r.samples_taken, 19u);  // ~20 ms at one sample per 1 ms poll
  DT_EXPECT_EQ(r.samples_missed, 0u);
  DT_ASSERT_GT(r.sample_count, 0u);
  for (std::uint8_t i = 0; i < r.sample_count; ++i) {
    const lc::Sample& s = r.samples[i];
    DT_EXPECT_EQ(s.scope_count, 0u);
    DT_EXPECT_EQ(s.pc_count, 2u);  // PC and the caller's return address
    DT_EXPECT(in_spin(s.frames[0]));
    DT_EXPECT_EQ(s.frames[1] & 1u, 0u);
    DT_EXPECT_LT(code_address(reinterpret_cast<const void*>(&spin_dispatch)), s.frames[1]);  // into the caller
  }
  DT_EXPECT_EQ(r.cause, lc::Cause::running);
  DT_EXPECT_EQ(cm::stats().refused_handler, 0u);
}

DT_TEST(Capture, process_stack_frame_with_loop_context) {
  const cm::LoopContext context{reinterpret_cast<std::uintptr_t>(g_psp_stack),
                                reinterpret_cast<std::uintptr_t>(g_psp_stack + sizeof g_psp_stack)};
  DT_ASSERT(run_capture(g_watchdog_psp, g_monitor_psp, &context, g_psp_stack + sizeof g_psp_stack));
  const lc::BlockRecord& r = g_final;
  DT_EXPECT_GE(r.samples_taken, 19u);
  DT_EXPECT_EQ(r.samples_missed, 0u);
  DT_EXPECT_EQ(cm::stats().refused_stack, 0u);
  for (std::uint8_t i = 0; i < r.sample_count; ++i) DT_EXPECT(in_spin(r.samples[i].frames[0]));
  // A loop with its own context gets no thread CPU time from the port (the scheduler's job).
  DT_EXPECT(!r.has_thread_cpu);
}

DT_TEST(Capture, refuses_another_stack) {
  // The loop says it runs on the PSP stack, but the code runs on MSP: every sample is refused.
  const cm::LoopContext context{reinterpret_cast<std::uintptr_t>(g_psp_stack),
                                reinterpret_cast<std::uintptr_t>(g_psp_stack + sizeof g_psp_stack)};
  DT_ASSERT(run_capture(g_watchdog_other, g_monitor_other, &context, nullptr));
  const lc::BlockRecord& r = g_final;
  DT_EXPECT_EQ(r.samples_taken, 0u);
  DT_EXPECT_GE(r.samples_missed, 19u);
  DT_EXPECT_GE(cm::stats().refused_stack, 19u);
}

// SysTick (priority 0x80) preempts PendSV (0xFF) while PendSV spins: the frame is a handler's,
// not the loop's, and the sample is refused.
namespace {
lc::StaticWatchdog<1, 4> g_watchdog_handler;
cm::PortMonitor g_monitor_handler;
}  // namespace

extern "C" void PendSV_Handler() { dt_spin_until(&g_release); }

DT_TEST(Capture, refuses_frames_of_another_handler) {
  cm::Config c = port_config();
  c.systick_priority = 0x80;
  DT_ASSERT_EQ(cm::init(c), cm::PortStatus::ok);
  volatile std::uint32_t& shpr3 = cm::detail::reg(0xE000ED20);
  shpr3 = (shpr3 & 0xFF00FFFFu) | (0xFFu << 16);  // PendSV: lowest priority
  lc::MonitorConfig config;
  config.name = "handler";
  config.tick_hz = cm::tick_hz();
  config.threshold_us = 5'000;
  config.arm_permille = 0;
  config.sample_interval_us = 1'000;
  config.hang_limit_us = 1'000'000;
  DT_ASSERT_EQ(g_monitor_handler.init(config), lc::Status::ok);
  DT_ASSERT_EQ(g_watchdog_handler.init(lc::WatchdogConfig{}, cm::make_hal()), lc::Status::ok);
  DT_ASSERT_EQ(g_watchdog_handler.add(g_monitor_handler), lc::Status::ok);
  DT_ASSERT_EQ(g_watchdog_handler.add_interceptor(&on_report, nullptr), lc::Status::ok);
  g_release = 0;  // the in-progress report releases PendSV
  g_finals = 0;
  cm::attach(&g_watchdog_handler);
  g_monitor_handler.begin(kSpin);
  cm::detail::reg(cm::detail::kScbIcsr) = 1u << 28;  // PENDSVSET: PendSV runs now and spins
  __asm__ volatile("dsb\n isb" ::: "memory");
  g_monitor_handler.end();
  while (g_finals == 0) cm::idle_wait();
  cm::attach(nullptr);
  const lc::BlockRecord& r = g_final;
  DT_EXPECT_EQ(r.samples_taken, 0u);
  DT_EXPECT_GE(r.samples_missed, 4u);
  DT_EXPECT_GE(cm::stats().refused_handler, 4u);
}

DT_TEST(Drain, formats_records_into_the_sink) {
  // g_watchdog_msp still holds the records of the first capture test.
  struct Collected {
    std::uint32_t calls = 0;
    bool saw_event = false;
  } collected;
  char buffer[1536];
  const cm::Sink sink{[](void* context, const char* text) {
                        auto* c = static_cast<Collected*>(context);
                        ++c->calls;
                        c->saw_event = c->saw_event || std::strstr(text, "spin") != nullptr;
                      },
                      &collected};
  const std::uint32_t pending = g_watchdog_msp.pending();
  DT_EXPECT_GE(pending, 2u);  // in progress + final
  DT_EXPECT_EQ(cm::drain(g_watchdog_msp, sink, cm::Format::json, buffer, sizeof buffer), pending);
  DT_EXPECT_EQ(collected.calls, pending);
  DT_EXPECT(collected.saw_event);
  DT_EXPECT_EQ(g_watchdog_msp.pending(), 0u);
}

// ---- Packets ---------------------------------------------------------------------------------

namespace {

// What a packet sink saw: calls, and whether every packet was whole (framing and CRC-32 as
// docs/report-format.md specifies) and named the dispatch's event.
struct PacketCheck {
  std::uint32_t calls = 0;
  std::uint32_t whole = 0;
  std::uint32_t naming_spin = 0;
};

void check_packet(void* context, const std::uint8_t* packet, std::size_t size) {
  auto* c = static_cast<PacketCheck*>(context);
  ++c->calls;
  if (size < lc::kPacketHeaderBytes + lc::kPacketTrailerBytes) return;
  const std::size_t body = packet[4] | (std::size_t{packet[5]} << 8);
  const std::size_t crc_at = lc::kPacketHeaderBytes + body;
  if (crc_at + lc::kPacketTrailerBytes != size) return;
  const std::uint32_t stored = packet[crc_at] | (std::uint32_t{packet[crc_at + 1]} << 8) |
                               (std::uint32_t{packet[crc_at + 2]} << 16) | (std::uint32_t{packet[crc_at + 3]} << 24);
  if (packet[0] == lc::kPacketMagic0 && packet[1] == lc::kPacketMagic1 && packet[2] == lc::kPacketVersion &&
      packet[3] == static_cast<std::uint8_t>(lc::PacketType::block) && lc::crc32(packet + 2, crc_at - 2) == stored) {
    ++c->whole;
  }
  // The event name as a packet string: its length byte (4 << 1, not cut), then "spin".
  for (std::size_t i = lc::kPacketHeaderBytes; i + 5 <= crc_at; ++i) {
    if (packet[i] == 8 && std::memcmp(packet + i + 1, "spin", 4) == 0) {
      ++c->naming_spin;
      break;
    }
  }
}

std::uint8_t g_packet[lc::kMaxPacketBytes];

}  // namespace

DT_TEST(DrainPackets, sends_each_record_as_one_whole_packet) {
  // g_watchdog_psp still holds the records of its capture test (in progress + final).
  PacketCheck seen;
  const lc::PacketSink sink{&check_packet, &seen};
  const std::uint32_t pending = g_watchdog_psp.pending();
  const std::uint32_t refused = cm::stats().packets_refused;
  DT_EXPECT_GE(pending, 2u);
  DT_EXPECT_EQ(cm::drain(g_watchdog_psp, sink, g_packet, sizeof g_packet), pending);
  DT_EXPECT_EQ(seen.calls, pending);
  DT_EXPECT_EQ(seen.whole, pending);
  DT_EXPECT_EQ(seen.naming_spin, pending);
  DT_EXPECT_EQ(g_watchdog_psp.pending(), 0u);
  DT_EXPECT_EQ(cm::stats().packets_refused, refused);
}

DT_TEST(DrainPackets, counts_records_whose_packet_does_not_fit) {
  // g_watchdog_other still holds the records of its capture test.
  PacketCheck seen;
  const std::uint32_t pending = g_watchdog_other.pending();
  DT_EXPECT_GE(pending, 2u);
  // Nothing to send to, or nowhere to encode: nothing popped.
  DT_EXPECT_EQ(cm::drain(g_watchdog_other, lc::PacketSink{nullptr, &seen}, g_packet, sizeof g_packet), 0u);
  DT_EXPECT_EQ(cm::drain(g_watchdog_other, lc::PacketSink{&check_packet, &seen}, nullptr, 64), 0u);
  DT_EXPECT_EQ(g_watchdog_other.pending(), pending);
  // A buffer smaller than any packet: every record popped, none sent, each counted.
  const std::uint32_t refused = cm::stats().packets_refused;
  std::uint8_t small[lc::kPacketHeaderBytes + lc::kPacketTrailerBytes];
  DT_EXPECT_EQ(cm::drain(g_watchdog_other, lc::PacketSink{&check_packet, &seen}, small, sizeof small), 0u);
  DT_EXPECT_EQ(seen.calls, 0u);
  DT_EXPECT_EQ(g_watchdog_other.pending(), 0u);
  DT_EXPECT_EQ(cm::stats().packets_refused - refused, pending);
}

// ---- A planned stop -------------------------------------------------------------------------

namespace {
lc::StaticWatchdog<1, 4> g_watchdog_stop;
cm::PortMonitor g_monitor_stop;
}  // namespace

DT_TEST(Finish, closes_the_dispatch_still_running_and_stops_polling) {
  DT_ASSERT(watch_one_loop(g_watchdog_stop, g_monitor_stop, "stop", 5'000, nullptr));
  g_monitor_stop.begin(kSpin);
  dt_spin_until(&g_release);  // the block is reported in progress; the dispatch runs on
  cm::finish();
  DT_EXPECT_EQ(g_finals, 1u);
  const lc::BlockRecord& r = g_final;
  DT_EXPECT(r.phase == lc::Phase::final);
  DT_EXPECT((r.flags & lc::kFlagRunningAtStop) != 0u);
  DT_EXPECT(r.event == &kSpin);
  DT_EXPECT_EQ(g_watchdog_stop.stats().finals_at_stop, 1u);
  // SysTick polls it no more: its poll count stands while the clock ticks on.
  const std::uint32_t polls = g_watchdog_stop.stats().polls;
  sleep_ticks(3);
  DT_EXPECT_EQ(g_watchdog_stop.stats().polls, polls);
  g_monitor_stop.end();
  // Both records (in progress, final at the stop) wait for the one consumer.
  PacketCheck seen;
  DT_EXPECT_EQ(cm::drain(g_watchdog_stop, lc::PacketSink{&check_packet, &seen}, g_packet, sizeof g_packet), 2u);
  DT_EXPECT_EQ(seen.whole, 2u);
  cm::finish();  // nothing attached: nothing happens
  DT_EXPECT_EQ(g_watchdog_stop.stats().polls, polls);
}

// ---- The board's host files (semihosting), the packet sink of the device tests -----------------

DT_TEST(HostFile, counts_what_the_host_wrote_and_what_was_lost) {
  lc::board::HostFile file{};
  const std::uint8_t bytes[5] = {0xA5, 0x4C, 1, 2, 3};
  // Never opened: nothing reaches the host, all of it counted.
  lc::board::write_host_file(file, bytes, sizeof bytes);
  DT_EXPECT_EQ(file.bytes_written, 0u);
  DT_EXPECT_EQ(file.bytes_lost, 5u);
  DT_EXPECT(!lc::board::close_host_file(file));
  // The host refuses a file in a directory that does not exist.
  DT_EXPECT(!lc::board::open_host_file(file, "no-such-directory/device.port.lcb"));
  DT_EXPECT_EQ(file.handle, 0u);
  DT_EXPECT_EQ(file.bytes_lost, 0u);  // cleared by the attempt
  // Opened in QEMU's working directory: every byte written, through the sink too.
  DT_ASSERT(lc::board::open_host_file(file, "device.port.lcb"));
  DT_EXPECT_NE(file.handle, 0u);
  lc::board::write_host_file(file, bytes, sizeof bytes);
  const lc::PacketSink sink = lc::board::host_file_sink(file);
  sink.write(sink.context, bytes, 2);
  DT_EXPECT_EQ(file.bytes_written, 7u);
  DT_EXPECT_EQ(file.bytes_lost, 0u);
  DT_EXPECT(lc::board::close_host_file(file));
  DT_EXPECT(!lc::board::close_host_file(file));
  sink.write(sink.context, bytes, 2);  // closed: lost, counted
  DT_EXPECT_EQ(file.bytes_lost, 2u);
  DT_EXPECT_EQ(file.bytes_written, 7u);
}

int main() { return lc::device_test::run_all(&lc::board::write); }
