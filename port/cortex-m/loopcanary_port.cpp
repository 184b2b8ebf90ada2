// SPDX-License-Identifier: MIT
// Port "cortex-m", cold tier: SysTick setup and interrupt, exception-frame PC capture, idle
// accounting, debugger check, the packet drain. The text/JSON drain is in
// cortex_m_format_drain.cpp, so a firmware that sends packets never links the formatter.
#include "loopcanary/port/cortex_m.hpp"

#include <cstring>

#include "loopcanary/packet.hpp"
#include "loopcanary/packet_drain.hpp"

namespace loopcanary::cortex_m {
namespace detail {
ClockState g_clock;
__attribute__((noinline)) tick_t systick_now_call() noexcept { return systick_now(); }
}  // namespace detail

namespace {

using detail::reg;

#if LOOPCANARY_CORTEX_M_HAS_DWT
// ARMv7-M: byte access to the priority registers (ARMv6-M has word access only).
volatile std::uint8_t& reg8(std::uintptr_t address) noexcept {
  return *reinterpret_cast<volatile std::uint8_t*>(address);
}
#endif

// System control space: SysTick, SCB, debug registers, as offsets from its base.
constexpr std::uintptr_t kScs = 0xE000E000;
constexpr std::uintptr_t kSystCsr = 0x010;  // SysTick control and status
constexpr std::uintptr_t kSystRvr = 0x014;  // SysTick reload value
constexpr std::uintptr_t kSystCvr = detail::kSystCvr - kScs;
constexpr std::uint32_t kCsrEnable = 1u << 0;
constexpr std::uint32_t kCsrTickInt = 1u << 1;
constexpr std::uint32_t kCsrClkSource = 1u << 2;  // processor clock
constexpr std::uintptr_t kScbIcsr = detail::kScbIcsr - kScs;
constexpr std::uint32_t kIcsrPendStClr = 1u << 25;
constexpr std::uintptr_t kScbVtor = 0xD08;   // vector table offset (ARMv7-M; optional on ARMv6-M)
constexpr std::uintptr_t kScbShpr3 = 0xD20;  // priorities of PendSV (23:16) and SysTick (31:24)
constexpr std::uint32_t kMaxReload = 0x00FFFFFFu;
#if LOOPCANARY_CORTEX_M_HAS_DWT
constexpr std::uintptr_t kDhcsr = 0xDF0;      // debug halting control and status
constexpr std::uint32_t kDhcsrCDebugEn = 1u << 0;
constexpr std::uintptr_t kDemcr = 0xDFC;      // debug exception and monitor control
constexpr std::uint32_t kDemcrTrcEna = 1u << 24;
// DWT (absolute addresses).
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
constexpr std::size_t kFrameXpsr = 7;
constexpr std::size_t kFrameWords = 8;          // a basic frame
constexpr std::size_t kFrameFpWords = 18;       // an extended frame's S0-S15, FPSCR and a reserved word
constexpr std::uint32_t kXpsrRealigned = 1u << 9;     // the frame was pushed with a padding word above it
constexpr std::uint32_t kExcReturnBasicFrame = 1u << 4;  // clear: an extended frame (FP context)
constexpr std::uint32_t kExcReturnPsp = 1u << 2;         // the interrupted code ran on PSP
constexpr std::uint32_t kLrEndMarkers = 0xFFFFFFE0u;     // EXC_RETURN values and LR's reset value lie above

// The PortStats counters in PortState::count.
enum Counter : std::uint8_t {
  kTicks,
  kPolls,
  kCaptures,
  kRefusedHandler,
  kRefusedStack,
  kStackWordsCaptured,
  kIdleWaits,
  kPacketsRefused,
  kCounters
};

// Everything but the clock, zero until init() succeeds. init() (Thread mode, SysTick stopped)
// clears it all and sets core_hz and source; attach() sets watchdog. Then frame/exc_return, the
// tick and poll counters and the 64-bit time totals are written by the SysTick interrupt only;
// idle_ticks and idle_waits by idle_wait() only, with interrupts masked (so the interrupt, the
// only other reader, never sees half of them).
// packets_refused by drain() only (the records' one consumer).
struct PortState {
  std::atomic<Watchdog*> watchdog{nullptr};
  std::uint32_t core_hz = 0;                    // 0: not initialised (the Hal reports "unavailable")
  ClockSource source = ClockSource::automatic;  // before init(): none chosen
  const std::uint32_t* frame = nullptr;  // interrupted exception frame, during a poll only
  std::uint32_t exc_return = 0;
  std::uint32_t r7 = 0;                  // the interrupted r7, during a poll only
  // Stack evidence (Config::stack_words), set by init().
  std::uintptr_t code_begin = 0;
  std::uintptr_t code_end = 0;
  std::uintptr_t msp_top = 0;
  std::uint32_t budget_bytes = 0;
  tick_t last_now = 0;                   // clock at the last tick
  std::uint64_t total_ticks = 0;         // clock ticks from init() to last_now
  std::uint64_t idle_ticks = 0;          // ticks spent in idle_wait()
  std::uint64_t poll_ticks_total = 0;
  std::atomic<std::uint32_t> count[kCounters]{};  // PortStats counters, by Counter
  std::atomic<tick_t> poll_ticks_max{0};
};
PortState g_state;

// g_state through a base register: gcc otherwise takes the address of each field from the
// literal pool as a constant of its own.
LOOPCANARY_CORTEX_M_INLINE PortState& state() noexcept {
  PortState* s = &g_state;
  __asm__("" : "+r"(s));
  return *s;
}

// Single writer: load + store, no read-modify-write. Inline: a call costs as much as the body.
template <class T>
LOOPCANARY_CORTEX_M_INLINE void bump(std::atomic<T>& word) noexcept {
  word.store(static_cast<T>(word.load(std::memory_order_relaxed) + 1u), std::memory_order_relaxed);
}

#if LOOPCANARY_CORTEX_M_HAS_DWT
// Enables CYCCNT at `start` and reports whether it counts (QEMU implements the registers but
// not the counting: it reads back a constant). `scs`: the system control space.
bool start_cycle_counter(std::uintptr_t scs, tick_t start) noexcept {
  reg(scs + kDemcr) = reg(scs + kDemcr) | kDemcrTrcEna;
  reg(kDwtLar) = kLarUnlock;  // ignored where the DWT has no software lock
  const std::uint32_t ctrl = reg(kDwtCtrl);
  if ((ctrl & kDwtCtrlNoCycCnt) != 0) return false;
  reg(detail::kDwtCyccnt) = start;
  reg(kDwtCtrl) = ctrl | kDwtCtrlCycCntEna;
  const std::uint32_t first = reg(detail::kDwtCyccnt);
  for (int i = 0; i < 16; ++i) __asm__ volatile("nop");
  return reg(detail::kDwtCyccnt) != first;
}
#endif

// The clock for the cold code: one out-of-line copy instead of the inlined hot-tier read at
// every call site (flash).
__attribute__((noinline)) tick_t clock_now() noexcept { return Clock::now(); }

// ---- Hal callbacks (watchdog context: the SysTick interrupt) --------------------------------

std::size_t capture_stack(void* /*context*/, const Monitor& loop, Frame* pcs, std::size_t max) {
  PortState& s = state();
  const std::uint32_t* frame = s.frame;
  if (frame == nullptr || max == 0) return 0;  // not called from the SysTick poll
  // Each sample lands in one counter: refused, or taken (one bump for all three outcomes).
  std::atomic<std::uint32_t>* outcome;
  std::size_t n = 0;
  const auto* loop_context = static_cast<const LoopContext*>(loop.context());
  const auto sp = reinterpret_cast<std::uintptr_t>(frame);
  if ((s.exc_return & kExcReturnThread) == 0) {
    outcome = &s.count[kRefusedHandler];  // SysTick preempted another handler: not the loop's code
  } else if (loop_context != nullptr && (sp < loop_context->stack_low || sp >= loop_context->stack_high)) {
    outcome = &s.count[kRefusedStack];  // another task's (or the main) stack
  } else {
    outcome = &s.count[kCaptures];
    pcs[n++] = frame[kFramePc];
    // The stacked LR: the caller in leaf code, stale in deeper code. Only a Thumb code address
    // (bit 0 set, not an EXC_RETURN or the reset value 0xFFFFFFFF); stored as the return address
    // (bit 0 cleared: lr - 1 here, a SUBS where lr & ~1 needs a 32-bit BIC).
    const std::uint32_t lr = frame[kFrameLr];
    if (n < max && (lr & 1u) != 0 && lr < 0xF0000000u) pcs[n++] = lr - 1u;
  }
  bump(*outcome);
  return n;
}

// The interrupted stack pointer: above the exception frame, its FP part (an extended frame) and
// the padding word the core pushed to align it (xPSR bit 9).
std::uintptr_t interrupted_sp(const std::uint32_t* frame, std::uint32_t exc_return) noexcept {
  std::uintptr_t sp = reinterpret_cast<std::uintptr_t>(frame) + kFrameWords * 4u;
  if ((exc_return & kExcReturnBasicFrame) == 0) sp += kFrameFpWords * 4u;
  if ((frame[kFrameXpsr] & kXpsrRealigned) != 0) sp += 4u;
  return sp;
}

// Stack evidence of the sample capture_stack has just taken (same frame): SP, LR and r7 as
// interrupted, and the words of [SP, min(SP + budget, stack top)) that can be Thumb return
// addresses (bit 0 set, inside the code range) or end a chain (EXC_RETURN values and LR's reset
// value 0xFFFFFFFF, which the reset handler's frame holds), up to kStackWords.
bool capture_words(void* /*context*/, const Monitor& loop, StackEvidence* out) {
  PortState& s = state();
  const std::uint32_t* frame = s.frame;
  if (frame == nullptr) return false;  // not called from the SysTick poll
  const std::uintptr_t sp = interrupted_sp(frame, s.exc_return);
  out->sp = sp;
  out->lr = frame[kFrameLr];
  out->fp = s.r7;
  out->has_fp = true;
  const auto* loop_context = static_cast<const LoopContext*>(loop.context());
  std::uintptr_t top = loop_context != nullptr ? loop_context->stack_high
                       : (s.exc_return & kExcReturnPsp) != 0 ? 0  // a stack whose top is not known
                                                              : s.msp_top;
  if (top > sp && top - sp > s.budget_bytes) top = sp + s.budget_bytes;
  // The hot loop of the scan: most words are even (saved registers, pointers), rejected by one
  // test; an odd one by one range compare (unsigned: below code_begin wraps high).
  const std::uintptr_t code_begin = s.code_begin;
  const std::uintptr_t code_size = s.code_end - code_begin;
  for (std::uintptr_t address = sp; address < top; address += 4u) {
    const std::uint32_t word = *reinterpret_cast<const volatile std::uint32_t*>(address);
    if ((word & 1u) == 0) continue;
    if ((word - code_begin < code_size || word >= kLrEndMarkers) &&
        !out->add(static_cast<std::uint16_t>((address - sp) / 4u), word)) {
      break;
    }
  }
  s.count[kStackWordsCaptured].store(s.count[kStackWordsCaptured].load(std::memory_order_relaxed) + out->count,
                                     std::memory_order_relaxed);
  return true;
}

// Config::stack_words into the port's state (validated by init()); the main stack's top from the
// vector table when not given.
void set_stack_words(PortState& s, const StackWordsConfig& words) noexcept {
  s.code_begin = words.code_begin;
  s.code_end = words.code_end;
  s.budget_bytes = words.budget_bytes;
  std::uintptr_t top = words.stack_top;
  if (top == 0) {
    std::uintptr_t vectors = 0;  // ARMv6-M: VTOR is optional; the table is at 0
#if !defined(__ARM_ARCH_6M__)
    vectors = reg(kScs + kScbVtor);
#endif
    __asm__("" : "+r"(vectors));  // address 0 is the vector table here, not a null pointer
    top = *reinterpret_cast<const volatile std::uint32_t*>(vectors);
  }
  s.msp_top = top;
}

// CPU load from idle_wait(): the time since init() is the total, everything that was not
// idle_wait() (interrupts included) is busy, and the firmware is the only "process". The
// super-loop's CPU time is that busy time, in µs; a loop with its own LoopContext (an RTOS task)
// gets none: per-task CPU time is the scheduler's. Nothing before init().
void read_cpu(void* /*context*/, const Monitor& loop, CpuReading* out) {
  const PortState& s = state();
  if (s.core_hz == 0) return;
  const tick_t now = clock_now();
  std::atomic_signal_fence(std::memory_order_seq_cst);  // the state after the call: fewer registers to keep
  const std::uint64_t total = s.total_ticks + ticks_between(s.last_now, now);
  const std::uint64_t busy = total > s.idle_ticks ? total - s.idle_ticks : 0;
  out->set(kCpuBusy, busy);
  out->set(kCpuTotal, total);
  out->set(kCpuProcess, busy);
  if (loop.context() == nullptr) out->set(kCpuThreadUs, us_from_ticks(busy, s.core_hz));
}

#if LOOPCANARY_CORTEX_M_HAS_DWT
bool debugger(void* /*context*/) { return debugger_attached(); }
#endif

}  // namespace

// ---- SysTick --------------------------------------------------------------------------------

extern "C" {

// The port's tick, reached from loopcanary_cortex_m_systick with the interrupted frame. The
// frame is published for capture_stack from entry to exit (stored at once, so the arguments need
// not be kept across calls; one clear at the shared end). Order: the clock's period first (so
// every read in this interrupt is on the new period), then the 64-bit totals, then the poll.
[[gnu::used]] void loopcanary_cortex_m_tick(const std::uint32_t* frame, std::uint32_t exc_return, std::uint32_t r7) {
  using detail::g_clock;
  PortState& s = state();
  s.frame = frame;
  s.exc_return = exc_return;
  s.r7 = r7;
  g_clock.base.store(static_cast<tick_t>(g_clock.base.load(std::memory_order_relaxed) + g_clock.period),
                     std::memory_order_relaxed);
  const tick_t now = clock_now();
  s.total_ticks += ticks_between(s.last_now, now);
  s.last_now = now;
  bump(s.count[kTicks]);
  Watchdog* watchdog = s.watchdog.load(std::memory_order_relaxed);
  if (watchdog != nullptr) {
    watchdog->poll(now);
    const tick_t spent = ticks_between(now, clock_now());
    s.poll_ticks_total += spent;
    if (spent > s.poll_ticks_max.load(std::memory_order_relaxed)) s.poll_ticks_max.store(spent, std::memory_order_relaxed);
    bump(s.count[kPolls]);
  }
  s.frame = nullptr;
}

// Naked: SP still points at the exception frame (MSP, or PSP when EXC_RETURN bit 2 is set) and
// LR holds EXC_RETURN; the tick returns through it. r0 = MSP, replaced by PSP when bit 2 is set;
// r1 = EXC_RETURN; r2 = r7 as the interrupted code left it (the hardware stacks r0-r3, r12, LR,
// PC and xPSR only).
__attribute__((naked)) void loopcanary_cortex_m_systick() {
#if defined(__ARM_ARCH_6M__)
  __asm__ volatile(  // ARMv6-M: no IT blocks, and B reaches only 2 KiB
      "mrs r0, msp\n"
      "mov r1, lr\n"
      "movs r2, #4\n"
      "tst r2, r1\n"
      "beq 1f\n"
      "mrs r0, psp\n"
      "1:\n"
      "mov r2, r7\n"
      "ldr r3, =loopcanary_cortex_m_tick\n"
      "bx r3\n"
      ".ltorg\n");
#else
  __asm__ volatile(
      "mrs r0, msp\n"
      "mov r1, lr\n"
      "lsls r2, r1, #29\n"
      "it mi\n"
      "mrsmi r0, psp\n"
      "mov r2, r7\n"
      "b.w loopcanary_cortex_m_tick\n");
#endif
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
    case PortStatus::stack_budget_out_of_range:
      return "cortex_m::Config.stack_words.budget_bytes must be a multiple of 4 in 4..65536";
    case PortStatus::code_range_empty:
      return "cortex_m::Config.stack_words.code_begin must lie below code_end";
  }
  return "unknown cortex_m::PortStatus";
}

PortStatus init(const Config& config) noexcept {
  const std::uint32_t core_hz = config.core_hz;
  const std::uint32_t poll_hz = config.poll_hz;
  if (core_hz == 0) return PortStatus::core_hz_zero;
  if (poll_hz == 0) return PortStatus::poll_hz_zero;
  const std::uint32_t period = core_hz / poll_hz;
  if (period == 0) return PortStatus::poll_hz_above_core_hz;
  if (period - 2u > kMaxReload - 1u) return PortStatus::poll_period_too_long;  // reload 1 .. 2^24 - 1

  constexpr bool kDwtBuilt = LOOPCANARY_CORTEX_M_HAS_DWT && LOOPCANARY_CORTEX_M_CLOCK != LOOPCANARY_CORTEX_M_CLOCK_SYSTICK;
  constexpr bool kSysTickBuilt = LOOPCANARY_CORTEX_M_CLOCK != LOOPCANARY_CORTEX_M_CLOCK_DWT;
  const ClockSource source = config.source;
  if ((source == ClockSource::dwt_cyccnt && !kDwtBuilt) || (source == ClockSource::systick && !kSysTickBuilt)) {
    return PortStatus::source_not_built;
  }
  const StackWordsConfig& words = config.stack_words;
  if (kStackWords > 0) {
    if (words.budget_bytes < 4 || words.budget_bytes > 65536 || (words.budget_bytes & 3u) != 0) {
      return PortStatus::stack_budget_out_of_range;
    }
    if (words.code_begin >= words.code_end) return PortStatus::code_range_empty;
  }
  // Every refusal above leaves the port as it was.

  // The system control space through one base register (gcc would rebuild the constant
  // address for each access).
  std::uintptr_t scs = kScs;
  __asm__("" : "+r"(scs));
  reg(scs + kSystCsr) = 0;  // stop SysTick (and its interrupt) while reconfiguring
  PortState& s = state();
  s.watchdog.store(nullptr, std::memory_order_relaxed);  // a SysTick still pending polls nothing
  bool use_dwt = false;
#if LOOPCANARY_CORTEX_M_HAS_DWT
  if (kDwtBuilt && source != ClockSource::systick) use_dwt = start_cycle_counter(scs, config.start);
#endif

  using detail::g_clock;
  g_clock.reload = period - 1u;
  g_clock.period = period;
  reg(scs + kSystRvr) = period - 1u;
  reg(scs + kSystCvr) = 0;
#if LOOPCANARY_CORTEX_M_HAS_DWT
  reg8(scs + kScbShpr3 + 3) = config.systick_priority;  // ARMv7-M: the priority byte on its own
#else
  reg(scs + kScbShpr3) = (reg(scs + kScbShpr3) & 0x00FFFFFFu) | (std::uint32_t{config.systick_priority} << 24);
#endif
  // Run without the interrupt until the counter has loaded its reload value (writing CVR
  // cleared it to 0), drop a wrap that may have pended meanwhile, then anchor the clock: from
  // here on the value is base + (reload - CVR). Silicon loads it on the next clock edge, QEMU
  // within a few dozen iterations in real time (1 under -icount); the bound only keeps a
  // missing SysTick from hanging init().
  reg(scs + kSystCsr) = kCsrClkSource | kCsrEnable;
  for (std::uint32_t spin = 1u << 16; reg(scs + kSystCvr) == 0 && spin != 0; --spin) {
  }
  reg(scs + kScbIcsr) = kIcsrPendStClr;
  g_clock.base.store(config.start, std::memory_order_relaxed);

  // From here on the port is as before any init(): no watchdog, the Hal callbacks report
  // "unavailable", every counter and total 0.
  std::memset(static_cast<void*>(&s), 0, sizeof s);  // PortState{}: all of it zero
  if ((source == ClockSource::dwt_cyccnt || !kSysTickBuilt) && !use_dwt) {
    reg(scs + kSystCsr) = 0;
    return PortStatus::dwt_unavailable;
  }
  g_clock.use_dwt = use_dwt;
  s.core_hz = core_hz;
  s.source = use_dwt ? ClockSource::dwt_cyccnt : ClockSource::systick;
  if (kStackWords > 0) set_stack_words(s, words);
  s.last_now = clock_now();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  reg(scs + kSystCsr) = kCsrClkSource | kCsrTickInt | kCsrEnable;
  return PortStatus::ok;
}

ClockSource clock_source() noexcept { return g_state.source; }
std::uint32_t tick_hz() noexcept { return g_state.core_hz; }
tick_t poll_period() noexcept { return detail::g_clock.period; }

void attach(Watchdog* watchdog) noexcept { g_state.watchdog.store(watchdog, std::memory_order_relaxed); }

void finish() noexcept {
  PortState& s = state();
  Watchdog* watchdog = s.watchdog.load(std::memory_order_relaxed);
  // Thread mode: a SysTick that preempts us runs its poll to the end before we go on, so after
  // this store no poll is in flight or to come. The fence keeps the compiler from moving the
  // watchdog's accesses below above the store.
  s.watchdog.store(nullptr, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (watchdog != nullptr) watchdog->finish(clock_now());
}

Hal make_hal() noexcept {
  Hal hal;  // every field set below (a Hal{} would be cleared first)
  hal.context = nullptr;  // the callbacks keep their state in g_state
  hal.capture_stack = &capture_stack;
  hal.capture_words = kStackWords > 0 ? &capture_words : nullptr;
  hal.read_cpu = kCpuReadings ? &read_cpu : nullptr;  // none in a build without CPU readings
#if LOOPCANARY_CORTEX_M_HAS_DWT
  hal.debugger_attached = &debugger;
#else
  hal.debugger_attached = nullptr;  // software cannot read DHCSR on ARMv6-M
#endif
  // The firmware sets &read_memory after init_memory() (loopcanary/port/cortex_m/stack.hpp).
  hal.read_memory = nullptr;
  hal.read_wait = nullptr;  // a device's loop does not wait on objects a port can name
  hal.thread_id = nullptr;
  return hal;
}

namespace {
// idle_wait(): the ticks it slept.
tick_t sleep_until_interrupt() noexcept {
  PortState& s = state();
  std::uint32_t primask;
  __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
  // Before init() the clock reads nonsense and the sums are junk: init() clears them.
  const tick_t asleep = clock_now();
  __asm__ volatile("dsb\n wfi" ::: "memory");  // wakes on a pending interrupt even while masked
  const tick_t slept = ticks_between(asleep, clock_now());
  s.idle_ticks += slept;
  bump(s.count[kIdleWaits]);
  __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");  // the waking interrupt runs here
  return slept;
}
}  // namespace

void idle_wait() noexcept { static_cast<void>(sleep_until_interrupt()); }

void idle_wait(Monitor& loop) noexcept { loop.add_idle(sleep_until_interrupt()); }

bool debugger_attached() noexcept {
#if LOOPCANARY_CORTEX_M_HAS_DWT
  return (reg(kScs + kDhcsr) & kDhcsrCDebugEn) != 0;
#else
  return false;
#endif
}

PortStats stats() noexcept {
  const PortState& s = state();
  // poll_ticks_total is 64-bit, written by the SysTick interrupt: read again if a tick ran
  // meanwhile (the reader never preempts the writer here, so this ends; from the interrupt
  // itself it reads once).
  std::uint32_t ticks;
  std::uint64_t poll_ticks_total;
  do {
    ticks = s.count[kTicks].load(std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    poll_ticks_total = s.poll_ticks_total;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } while (s.count[kTicks].load(std::memory_order_relaxed) != ticks);
  return PortStats{ticks,
                   s.count[kPolls].load(std::memory_order_relaxed),
                   s.count[kCaptures].load(std::memory_order_relaxed),
                   s.count[kRefusedHandler].load(std::memory_order_relaxed),
                   s.count[kRefusedStack].load(std::memory_order_relaxed),
                   s.count[kStackWordsCaptured].load(std::memory_order_relaxed),
                   s.poll_ticks_max.load(std::memory_order_relaxed),
                   poll_ticks_total,
                   s.count[kIdleWaits].load(std::memory_order_relaxed),
                   s.count[kPacketsRefused].load(std::memory_order_relaxed)};
}

std::uint32_t drain(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer, std::size_t size) noexcept {
  return drain_packets(watchdog, sink, buffer, size, state().count[kPacketsRefused]);
}

std::uint32_t drain_health(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer,
                                   std::size_t size) noexcept {
  return drain_health_packets(watchdog, sink, buffer, size, state().count[kPacketsRefused]);
}

}  // namespace loopcanary::cortex_m
