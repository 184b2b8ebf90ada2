// SPDX-License-Identifier: MIT
// Port "cortex-m", cold tier: SysTick setup and interrupt, exception-frame PC capture, idle
// accounting, debugger check, report drain.
#include "loopcanary_port.hpp"

#include "loopcanary/format.hpp"

namespace loopcanary::cortex_m {
namespace detail {
ClockState g_clock;
}  // namespace detail

namespace {

using detail::reg;

// System control space.
constexpr std::uintptr_t kSystCsr = 0xE000E010;  // SysTick control and status
constexpr std::uintptr_t kSystRvr = 0xE000E014;  // SysTick reload value
constexpr std::uint32_t kCsrEnable = 1u << 0;
constexpr std::uint32_t kCsrTickInt = 1u << 1;
constexpr std::uint32_t kCsrClkSource = 1u << 2;  // processor clock
constexpr std::uint32_t kIcsrPendStClr = 1u << 25;
constexpr std::uintptr_t kScbShpr3 = 0xE000ED20;  // priorities of PendSV (23:16) and SysTick (31:24)
constexpr std::uint32_t kMaxReload = 0x00FFFFFFu;
#if LOOPCANARY_CORTEX_M_HAS_DWT
constexpr std::uintptr_t kDhcsr = 0xE000EDF0;      // debug halting control and status
constexpr std::uint32_t kDhcsrCDebugEn = 1u << 0;
constexpr std::uintptr_t kDemcr = 0xE000EDFC;      // debug exception and monitor control
constexpr std::uint32_t kDemcrTrcEna = 1u << 24;
constexpr std::uintptr_t kDwtCtrl = 0xE0001000;
constexpr std::uintptr_t kDwtLar = 0xE0001FB0;     // CoreSight lock access (Cortex-M7 locks the DWT)
constexpr std::uint32_t kLarUnlock = 0xC5ACCE55u;
constexpr std::uint32_t kDwtCtrlCycCntEna = 1u << 0;
constexpr std::uint32_t kDwtCtrlNoCycCnt = 1u << 25;
#endif

// EXC_RETURN bits.
constexpr std::uint32_t kExcReturnThread = 1u << 3;  // returning to Thread mode
// Exception frame, in words from the stack pointer at entry: r0-r3, r12, lr, pc, xpsr (the same
// offsets in an extended frame with FP registers).
constexpr std::size_t kFrameLr = 5;
constexpr std::size_t kFramePc = 6;

// Everything but the clock. Written by init() (Thread mode, SysTick stopped), then:
// frame/exc_return, the counters and the 64-bit time totals by the SysTick interrupt only;
// idle_ticks by idle_wait() only, with interrupts masked (so the interrupt, its only reader,
// never sees half of it).
struct PortState {
  std::uint32_t core_hz = 0;
  ClockSource source = ClockSource::automatic;  // before init(): none chosen
  std::atomic<Watchdog*> watchdog{nullptr};
  const std::uint32_t* frame = nullptr;  // interrupted exception frame, during a poll only
  std::uint32_t exc_return = 0;
  tick_t last_now = 0;                   // clock at the last tick
  std::uint64_t total_ticks = 0;         // clock ticks from init() to last_now
  std::uint64_t idle_ticks = 0;          // ticks spent in idle_wait()
  std::atomic<std::uint32_t> ticks{0};
  std::atomic<std::uint32_t> polls{0};
  std::atomic<std::uint32_t> captures{0};
  std::atomic<std::uint32_t> refused_handler{0};
  std::atomic<std::uint32_t> refused_stack{0};
  std::atomic<tick_t> poll_ticks_max{0};
  std::uint64_t poll_ticks_total = 0;
  std::atomic<std::uint32_t> idle_waits{0};
};
PortState g_state;

template <class T>
void bump(std::atomic<T>& word) noexcept {  // single writer: load + store, no read-modify-write
  word.store(static_cast<T>(word.load(std::memory_order_relaxed) + 1u), std::memory_order_relaxed);
}

#if LOOPCANARY_CORTEX_M_HAS_DWT
// Enables CYCCNT at `start` and reports whether it counts (QEMU implements the registers but
// not the counting: it reads back a constant).
bool start_cycle_counter(tick_t start) noexcept {
  reg(kDemcr) = reg(kDemcr) | kDemcrTrcEna;
  reg(kDwtLar) = kLarUnlock;  // ignored where the DWT has no software lock
  if ((reg(kDwtCtrl) & kDwtCtrlNoCycCnt) != 0) return false;
  reg(detail::kDwtCyccnt) = start;
  reg(kDwtCtrl) = reg(kDwtCtrl) | kDwtCtrlCycCntEna;
  const std::uint32_t first = reg(detail::kDwtCyccnt);
  for (int i = 0; i < 16; ++i) __asm__ volatile("nop");
  return reg(detail::kDwtCyccnt) != first;
}
#endif

// The clock for the cold code: one out-of-line copy instead of the inlined hot-tier read at
// every call site (flash).
__attribute__((noinline)) tick_t clock_now() noexcept { return Clock::now(); }

// Time since init(), 64-bit, at `now`. SysTick context.
std::uint64_t total_at(tick_t now) noexcept {
  return g_state.total_ticks + ticks_between(g_state.last_now, now);
}

// ---- Hal callbacks (watchdog context: the SysTick interrupt) --------------------------------

std::size_t capture_stack(void* /*context*/, const Monitor& loop, Frame* pcs, std::size_t max) {
  PortState& s = g_state;
  const std::uint32_t* frame = s.frame;
  if (frame == nullptr || max == 0) return 0;  // not called from the SysTick poll
  if ((s.exc_return & kExcReturnThread) == 0) {
    bump(s.refused_handler);  // SysTick preempted another handler: not the loop's code
    return 0;
  }
  if (const auto* loop_context = static_cast<const LoopContext*>(loop.context())) {
    const auto sp = reinterpret_cast<std::uintptr_t>(frame);
    if (sp < loop_context->stack_low || sp >= loop_context->stack_high) {
      bump(s.refused_stack);  // another task's (or the main) stack
      return 0;
    }
  }
  bump(s.captures);
  pcs[0] = frame[kFramePc];
  std::size_t n = 1;
  // The stacked LR: the caller in leaf code, stale in deeper code. Only a Thumb code address
  // (bit 0 set, not an EXC_RETURN or the reset value 0xFFFFFFFF); stored as the return address.
  const std::uint32_t lr = frame[kFrameLr];
  if (n < max && (lr & 1u) != 0 && lr < 0xF0000000u) pcs[n++] = lr & ~1u;
  return n;
}

// The super-loop's CPU time: everything that was not idle_wait(), interrupts included. A loop
// with its own LoopContext (an RTOS task) gets none: per-task CPU time is the scheduler's.
bool thread_cpu_us(void* /*context*/, const Monitor& loop, std::uint64_t* cpu_us) {
  const PortState& s = g_state;
  if (loop.context() != nullptr || s.core_hz == 0) return false;
  const std::uint64_t total = total_at(clock_now());
  const std::uint64_t busy = total > s.idle_ticks ? total - s.idle_ticks : 0;
  *cpu_us = us_from_ticks(busy, s.core_hz);
  return true;
}

bool cpu_counters(void* /*context*/, CpuCounters* out) {
  const PortState& s = g_state;
  if (s.core_hz == 0) return false;
  const std::uint64_t total = total_at(clock_now());
  const std::uint64_t busy = total > s.idle_ticks ? total - s.idle_ticks : 0;
  out->system_total = total;
  out->system_busy = busy;
  out->process = busy;  // the firmware is the only "process"
  return true;
}

#if LOOPCANARY_CORTEX_M_HAS_DWT
bool debugger(void* /*context*/) { return debugger_attached(); }
#endif

}  // namespace

// ---- SysTick --------------------------------------------------------------------------------

extern "C" {

// The port's tick, reached from loopcanary_cortex_m_systick with the interrupted frame. Order:
// the clock's period first (so every read in this interrupt is on the new period), then the
// 64-bit totals, then the poll with the frame published for capture_stack.
[[gnu::used]] void loopcanary_cortex_m_tick(const std::uint32_t* frame, std::uint32_t exc_return) {
  using detail::g_clock;
  PortState& s = g_state;
  g_clock.base.store(static_cast<tick_t>(g_clock.base.load(std::memory_order_relaxed) + g_clock.period),
                     std::memory_order_relaxed);
  const tick_t now = clock_now();
  s.total_ticks = total_at(now);
  s.last_now = now;
  bump(s.ticks);
  Watchdog* watchdog = s.watchdog.load(std::memory_order_relaxed);
  if (watchdog == nullptr) return;
  s.frame = frame;
  s.exc_return = exc_return;
  watchdog->poll(now);
  s.frame = nullptr;
  const tick_t spent = ticks_between(now, clock_now());
  s.poll_ticks_total += spent;
  if (spent > s.poll_ticks_max.load(std::memory_order_relaxed)) s.poll_ticks_max.store(spent, std::memory_order_relaxed);
  bump(s.polls);
}

// Naked: SP still points at the exception frame (MSP, or PSP when EXC_RETURN bit 2 is set) and
// LR holds EXC_RETURN; the tick returns through it. ARMv6-M instructions only.
__attribute__((naked)) void loopcanary_cortex_m_systick() {
  __asm__ volatile(
      "movs r0, #4\n"
      "mov r1, lr\n"
      "tst r0, r1\n"
      "bne 1f\n"
      "mrs r0, msp\n"
      "b 2f\n"
      "1:\n"
      "mrs r0, psp\n"
      "2:\n"
      "ldr r2, =loopcanary_cortex_m_tick\n"
      "bx r2\n"
      ".ltorg\n");
}

#if LOOPCANARY_CORTEX_M_OWN_SYSTICK
void SysTick_Handler() noexcept __attribute__((alias("loopcanary_cortex_m_systick")));
#endif

}  // extern "C"

// ---- Public API ---------------------------------------------------------------------------------

const char* describe(PortStatus status) noexcept {
  switch (status) {
    case PortStatus::ok: return "ok";
    case PortStatus::core_hz_zero: return "cortex_m::Config.core_hz is 0; give the board's core clock in Hz";
    case PortStatus::poll_hz_zero: return "cortex_m::Config.poll_hz is 0; it must be > 0";
    case PortStatus::poll_hz_above_core_hz: return "cortex_m::Config.poll_hz is above core_hz";
    case PortStatus::poll_period_too_long:
      return "cortex_m::Config.poll_hz is too low: core_hz / poll_hz exceeds SysTick's 24-bit reload";
    case PortStatus::dwt_unavailable:
      return "cortex_m::Config.source is dwt_cyccnt (or the build has only that clock), but the DWT cycle "
             "counter is absent or does not count";
    case PortStatus::source_not_built:
      return "cortex_m::Config.source names a clock that LOOPCANARY_CORTEX_M_CLOCK left out of this build";
  }
  return "unknown cortex_m::PortStatus";
}

PortStatus init(const Config& config) noexcept {
  if (config.core_hz == 0) return PortStatus::core_hz_zero;
  if (config.poll_hz == 0) return PortStatus::poll_hz_zero;
  if (config.poll_hz > config.core_hz) return PortStatus::poll_hz_above_core_hz;
  const std::uint32_t period = config.core_hz / config.poll_hz;
  if (period - 1u > kMaxReload || period < 2u) return PortStatus::poll_period_too_long;

  reg(kSystCsr) = 0;  // stop SysTick (and its interrupt) while reconfiguring
  PortState& s = g_state;
  s.watchdog.store(nullptr, std::memory_order_relaxed);
  s.core_hz = 0;  // not initialised until the end (the Hal callbacks report "unavailable")
  s.source = ClockSource::automatic;

  constexpr bool kDwtBuilt = LOOPCANARY_CORTEX_M_HAS_DWT && LOOPCANARY_CORTEX_M_CLOCK != LOOPCANARY_CORTEX_M_CLOCK_SYSTICK;
  constexpr bool kSysTickBuilt = LOOPCANARY_CORTEX_M_CLOCK != LOOPCANARY_CORTEX_M_CLOCK_DWT;
  if ((config.source == ClockSource::dwt_cyccnt && !kDwtBuilt) ||
      (config.source == ClockSource::systick && !kSysTickBuilt)) {
    return PortStatus::source_not_built;
  }
  bool use_dwt = false;
#if LOOPCANARY_CORTEX_M_HAS_DWT
  if (kDwtBuilt && config.source != ClockSource::systick) use_dwt = start_cycle_counter(config.start);
#endif
  if ((config.source == ClockSource::dwt_cyccnt || !kSysTickBuilt) && !use_dwt) return PortStatus::dwt_unavailable;

  using detail::g_clock;
  g_clock.use_dwt = use_dwt;
  g_clock.reload = period - 1u;
  g_clock.period = period;
  reg(kSystRvr) = period - 1u;
  reg(detail::kSystCvr) = 0;
  reg(kScbShpr3) = (reg(kScbShpr3) & 0x00FFFFFFu) | (std::uint32_t{config.systick_priority} << 24);
  // Run without the interrupt until the counter has loaded its reload value (writing CVR
  // cleared it to 0), drop a wrap that may have pended meanwhile, then anchor the clock: from
  // here on the value is base + (reload - CVR).
  reg(kSystCsr) = kCsrClkSource | kCsrEnable;
  for (std::uint32_t spin = 0; reg(detail::kSystCvr) == 0 && spin < (1u << 26); ++spin) {
  }
  reg(detail::kScbIcsr) = kIcsrPendStClr;
  g_clock.base.store(config.start, std::memory_order_relaxed);

  s.core_hz = config.core_hz;
  s.source = use_dwt ? ClockSource::dwt_cyccnt : ClockSource::systick;
  s.frame = nullptr;
  s.last_now = clock_now();
  s.total_ticks = 0;
  s.idle_ticks = 0;
  s.ticks.store(0, std::memory_order_relaxed);
  s.polls.store(0, std::memory_order_relaxed);
  s.captures.store(0, std::memory_order_relaxed);
  s.refused_handler.store(0, std::memory_order_relaxed);
  s.refused_stack.store(0, std::memory_order_relaxed);
  s.poll_ticks_max.store(0, std::memory_order_relaxed);
  s.poll_ticks_total = 0;
  s.idle_waits.store(0, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  reg(kSystCsr) = kCsrClkSource | kCsrTickInt | kCsrEnable;
  return PortStatus::ok;
}

ClockSource clock_source() noexcept { return g_state.source; }
std::uint32_t tick_hz() noexcept { return g_state.core_hz; }
tick_t poll_period() noexcept { return detail::g_clock.period; }

void attach(Watchdog* watchdog) noexcept { g_state.watchdog.store(watchdog, std::memory_order_relaxed); }

Hal make_hal() noexcept {
  Hal hal{};
  hal.context = &g_state;
  hal.capture_stack = &capture_stack;
  hal.thread_cpu_us = &thread_cpu_us;
  hal.cpu_counters = &cpu_counters;
#if LOOPCANARY_CORTEX_M_HAS_DWT
  hal.debugger_attached = &debugger;
#endif
  return hal;
}

void idle_wait() noexcept {
  PortState& s = g_state;
  std::uint32_t primask;
  __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
  if (s.core_hz == 0) {
    __asm__ volatile("dsb\n wfi" ::: "memory");  // before init(): just sleep
  } else {
    const tick_t asleep = clock_now();
    __asm__ volatile("dsb\n wfi" ::: "memory");  // wakes on a pending interrupt even while masked
    s.idle_ticks += ticks_between(asleep, clock_now());
    bump(s.idle_waits);
  }
  __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");  // the waking interrupt runs here
}

bool debugger_attached() noexcept {
#if LOOPCANARY_CORTEX_M_HAS_DWT
  return (reg(kDhcsr) & kDhcsrCDebugEn) != 0;
#else
  return false;
#endif
}

PortStats stats() noexcept {
  const PortState& s = g_state;
  PortStats out;
  out.ticks = s.ticks.load(std::memory_order_relaxed);
  out.polls = s.polls.load(std::memory_order_relaxed);
  out.captures = s.captures.load(std::memory_order_relaxed);
  out.refused_handler = s.refused_handler.load(std::memory_order_relaxed);
  out.refused_stack = s.refused_stack.load(std::memory_order_relaxed);
  out.poll_ticks_max = s.poll_ticks_max.load(std::memory_order_relaxed);
  // 64-bit, written by the SysTick interrupt: read again if a tick ran meanwhile (the reader
  // never preempts the writer here, so this ends; from the interrupt itself it reads once).
  std::uint32_t ticks;
  do {
    ticks = s.ticks.load(std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    out.poll_ticks_total = s.poll_ticks_total;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } while (s.ticks.load(std::memory_order_relaxed) != ticks);
  out.idle_waits = s.idle_waits.load(std::memory_order_relaxed);
  return out;
}

std::uint32_t drain(Watchdog& watchdog, const Sink& sink, Format format, char* buffer, std::size_t size) noexcept {
  if (sink.write == nullptr || buffer == nullptr || size == 0) return 0;
  std::uint32_t written = 0;
  BlockRecord record;
  while (watchdog.pop(record)) {
    if (format == Format::json) {
      format_json(record, buffer, size);
    } else {
      format_text(record, buffer, size);
    }
    sink.write(sink.context, buffer);
    ++written;
  }
  return written;
}

}  // namespace loopcanary::cortex_m
