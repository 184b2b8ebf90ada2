// SPDX-License-Identifier: MIT
// Port "cortex-m": bare-metal Arm Cortex-M (ARMv6-M, ARMv7-M, ARMv7E-M), the watchdog in the
// SysTick interrupt on the loop's own core (build with LOOPCANARY_SINGLE_CORE=ON).
//
//   Clock        hot tier: DWT CYCCNT when it counts (checked at init), else SysTick's current
//                value extended to 32 bits by the SysTick interrupt. Ticks are core clock cycles;
//                the rate is the board's core clock (Config::core_hz), not a constant here.
//   init()       starts SysTick at Config::poll_hz and picks the clock source
//   attach()     the SysTick interrupt polls this watchdog: poll(Clock::now()) every tick
//   make_hal()   cold tier: PC and LR from the exception frame of the interrupted loop (with
//                LOOPCANARY_STACK_WORDS > 0 also its SP, r7 and the stack words above SP that
//                may be return addresses, for the host to unwind), CPU load from idle_wait(),
//                debugger attached from DHCSR.C_DEBUGEN
//   idle_wait()  the loop's sleep (WFI) that the CPU-load counters measure
//   drain()      the records' one consumer: records from the watchdog's RAM ring, encoded as
//                binary packets, to a PacketSink (UART, semihosting file, RAM buffer); its
//                overload for a Sink formats them as text or JSON instead, for a device that
//                has the flash for the formatter
//   finish()     a planned stop: SysTick stops polling, the watchdog closes what it watched
//
// The port owns SysTick_Handler (define LOOPCANARY_CORTEX_M_OWN_SYSTICK=0 to route your own
// handler to loopcanary_cortex_m_systick instead). Board code (startup, memory map, console)
// lives in port/cortex-m/boards/<board>/. docs/porting-cortex-m.md has the details and figures.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/hal.hpp"
#include "loopcanary/instrument.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/time.hpp"
#include "loopcanary/watchdog.hpp"

/// 1 (default): the port defines SysTick_Handler. 0: it defines only the entry
/// loopcanary_cortex_m_systick, which your SysTick handler must tail-call (branch to it with
/// LR still holding EXC_RETURN and SP untouched) so it can find the interrupted frame.
#ifndef LOOPCANARY_CORTEX_M_OWN_SYSTICK
#define LOOPCANARY_CORTEX_M_OWN_SYSTICK 1
#endif

#if defined(__ARM_ARCH_6M__)
/// ARMv6-M (Cortex-M0/M0+/M1) has no DWT cycle counter and software cannot read DHCSR.
#define LOOPCANARY_CORTEX_M_HAS_DWT 0
#else
#define LOOPCANARY_CORTEX_M_HAS_DWT 1
#endif

/// Clock sources compiled in (LOOPCANARY_CORTEX_M_CLOCK; every translation unit of a firmware
/// must see the same value, so set it for the whole build):
///   ..._DETECT  (default) DWT CYCCNT if it counts at init, else SysTick: a load and a branch
///               more per clock read than a fixed source.
///   ..._DWT     CYCCNT only: one load per clock read; init() fails without a counting CYCCNT.
///   ..._SYSTICK SysTick only (what ARMv6-M always uses).
#define LOOPCANARY_CORTEX_M_CLOCK_DETECT 0
#define LOOPCANARY_CORTEX_M_CLOCK_DWT 1
#define LOOPCANARY_CORTEX_M_CLOCK_SYSTICK 2
#ifndef LOOPCANARY_CORTEX_M_CLOCK
#define LOOPCANARY_CORTEX_M_CLOCK LOOPCANARY_CORTEX_M_CLOCK_DETECT
#endif
#if LOOPCANARY_CORTEX_M_CLOCK == LOOPCANARY_CORTEX_M_CLOCK_DWT && !LOOPCANARY_CORTEX_M_HAS_DWT
#error "LOOPCANARY_CORTEX_M_CLOCK_DWT: this architecture (ARMv6-M) has no DWT cycle counter"
#endif

namespace loopcanary::cortex_m {

/// Counter behind Clock::now(), among those the build compiled in (LOOPCANARY_CORTEX_M_CLOCK).
enum class ClockSource : std::uint8_t {
  automatic,   ///< DWT CYCCNT if it counts (checked at init), else SysTick
  dwt_cyccnt,  ///< the cycle counter; init() fails with dwt_unavailable if it does not count
  systick,     ///< SysTick's current value extended by the SysTick interrupt (every Cortex-M)
};

/// Where the SysTick interrupt looks for stack evidence (Hal::capture_words; builds with
/// LOOPCANARY_STACK_WORDS > 0: sent on the evidence stream, kept in a StaticWatchdog's records):
/// the words of the interrupted stack from its SP up, at most `budget_bytes` and never past the
/// stack's top, that lie in the code range and have bit 0 set (a Thumb return address always
/// has), or that end a chain (EXC_RETURN values, LR's reset value 0xFFFFFFFF), up to
/// LOOPCANARY_STACK_WORDS of them.
/// docs/porting-cortex-m.md ("Stack evidence") has the costs measured.
struct StackWordsConfig {
  /// The firmware's code, [code_begin, code_end): its .text (linker symbols), or the default, the
  /// architectural Code region (0x00000000..0x1FFFFFFF, where every Cortex-M part's flash lies).
  /// Narrower ranges send fewer words that are not return addresses. code_begin < code_end.
  std::uintptr_t code_begin = 0;
  std::uintptr_t code_end = 0x20000000u;
  /// Bytes above SP examined per sample, a multiple of 4, 4..65536: the deepest call chain's
  /// frames that the host should see (a frame of GCC -O2/-Os code is 8..40 bytes, plus its
  /// locals). Cost: about 5 cycles per word examined, in the SysTick interrupt.
  std::uint32_t budget_bytes = 1024;
  /// One past the highest address of the main stack (MSP), which the super-loop runs on; 0
  /// (default): the initial stack pointer in the vector table (VTOR's first word; address 0 on
  /// ARMv6-M). A loop with a LoopContext is bounded by its stack_high instead; one interrupted
  /// on PSP without a LoopContext gets no words (its stack's top is not known).
  std::uintptr_t stack_top = 0;
};

/// Board facts and choices, for init().
struct Config {
  /// Core clock in Hz, from the board (loopcanary::board::kCoreHz). SysTick (processor clock
  /// source) and CYCCNT count it; it is the tick rate of Clock and MonitorConfig::tick_hz. > 0.
  std::uint32_t core_hz = 0;
  /// SysTick interrupts per second: the watchdog polls this often. core_hz / poll_hz is the
  /// SysTick period and must fit its 24-bit reload (at most 16777216 cycles).
  std::uint32_t poll_hz = 1000;
  /// Counter behind Clock.
  ClockSource source = ClockSource::automatic;
  /// Clock value right after init(). Tests start just before the 2^32 wrap.
  tick_t start = 0;
  /// SysTick exception priority (SHPR3 byte; 0xFF = lowest). Interrupts above it are never
  /// sampled (they cannot be preempted) and delay polls; interrupts below it are preempted.
  std::uint8_t systick_priority = 0xFF;
  /// Stack evidence (only read in builds with LOOPCANARY_STACK_WORDS > 0).
  StackWordsConfig stack_words;
};

/// Outcome of init(). Every refusal names the Config field.
enum class PortStatus : std::uint8_t {
  ok = 0,
  core_hz_zero,            ///< Config::core_hz is 0
  poll_hz_zero,            ///< Config::poll_hz is 0
  poll_hz_above_core_hz,   ///< Config::poll_hz > core_hz: a SysTick period under one cycle
  poll_period_too_long,    ///< core_hz / poll_hz does not fit SysTick's 24-bit reload
  dwt_unavailable,         ///< Config::source is dwt_cyccnt (or the build has only CYCCNT), but
                           ///< CYCCNT is absent or does not count
  source_not_built,        ///< Config::source names a clock LOOPCANARY_CORTEX_M_CLOCK left out
  stack_budget_out_of_range,  ///< Config::stack_words.budget_bytes is not a multiple of 4 in 4..65536
  code_range_empty,        ///< Config::stack_words.code_begin is not below code_end
};

/// One line naming the field at fault, e.g. "cortex_m::Config.poll_hz is 0; ...". Never null.
const char* describe(PortStatus status) noexcept;

/// Per-loop handle for MonitorConfig::context. Null (the default) is the bare-metal super-loop:
/// whatever Thread-mode code the SysTick interrupt preempts is the loop. A loop with its own
/// stack (an RTOS task, a loop run on PSP) passes its stack range: a sample is taken only when
/// the interrupted stack pointer lies inside it, so another task is never blamed.
struct LoopContext {
  std::uintptr_t stack_low = 0;   ///< lowest address of the loop's stack
  std::uintptr_t stack_high = 0;  ///< one past its highest address
};

/// Port counters. Any context.
struct PortStats {
  std::uint32_t ticks = 0;              ///< SysTick interrupts
  std::uint32_t polls = 0;              ///< watchdog polls (ticks with a watchdog attached)
  std::uint32_t captures = 0;           ///< stack samples taken from an exception frame
  std::uint32_t refused_handler = 0;    ///< samples refused: SysTick preempted another handler
  std::uint32_t refused_stack = 0;      ///< samples refused: another stack than the loop's
  std::uint32_t stack_words = 0;        ///< words of stack evidence captured, all samples together
  tick_t poll_ticks_max = 0;            ///< longest poll, ticks (the cost of the watchdog ISR)
  std::uint64_t poll_ticks_total = 0;   ///< all polls, ticks
  std::uint32_t idle_waits = 0;         ///< idle_wait() calls
  std::uint32_t packets_refused = 0;    ///< records drain() or drain_health() popped but could not send: their
                                        ///< packet was larger than its buffer (the records are lost)
};

/// Stops SysTick, selects the clock source, programs SysTick to interrupt at poll_hz and starts
/// it (the clock runs from then on, no watchdog polled yet). Privileged Thread mode, before
/// any monitor stamps. Calling it again restarts the clock and clears the counters. A refused
/// Config field leaves the port as it was; dwt_unavailable leaves it uninitialised (SysTick
/// stopped, no watchdog attached).
PortStatus init(const Config& config) noexcept;

/// The source init() selected (automatic before a successful init()).
ClockSource clock_source() noexcept;
/// Ticks per second of Clock (Config::core_hz); 0 before init(). Use it as MonitorConfig::tick_hz.
std::uint32_t tick_hz() noexcept;
/// SysTick period in ticks (core_hz / poll_hz).
tick_t poll_period() noexcept;

/// The SysTick interrupt polls `watchdog` (initialised, loops added) from the next tick on;
/// null stops polling. Any context.
void attach(Watchdog* watchdog) noexcept;

/// A planned stop (a shutdown, a controlled reset, the end of a test run): SysTick stops
/// polling the attached watchdog (as attach(nullptr)), which then closes what it watched with
/// Watchdog::finish() at Clock::now(): each dispatch that ended has its final record, and one
/// still running that had been reported in progress gets a final record flagged
/// running_at_stop. drain() afterwards sends them. The clock keeps running. Thread mode (not
/// from an interrupt: SysTick must not be in a poll); nothing when no watchdog is attached.
void finish() noexcept;

/// The cold tier, bound to the port's state. Pass to StaticWatchdog::init().
Hal make_hal() noexcept;

/// The loop's sleep: waits for the next interrupt (WFI) with interrupts masked around it, and
/// counts the time asleep as idle for the CPU-load counters. Returns after the waking interrupt
/// has run (unless the caller had masked interrupts itself: then it stays pending, as in the
/// usual "mask; check queue; sleep; unmask" idiom). Thread mode.
void idle_wait() noexcept;

/// idle_wait(), and the time asleep added to `loop`'s idle time (Monitor::add_idle: its health
/// records' idle share). Thread mode, `loop`'s own context, between its dispatches.
void idle_wait(Monitor& loop) noexcept;

/// DHCSR.C_DEBUGEN: a debugger has enabled halting debug (it stays set after the probe
/// disconnects until a power-on reset). Always false on ARMv6-M, where software cannot read
/// DHCSR. Any context.
bool debugger_attached() noexcept;

/// The port counters.
PortStats stats() noexcept;

/// Pops every record waiting in `watchdog`'s ring, encodes each as one `block` packet
/// (encode_packet: docs/report-format.md, "Binary form") into `buffer` (`size` bytes) and hands
/// the packet's bytes to `sink`, one call per packet, in the order of the ring. A record whose
/// packet does not fit `buffer` is popped, not sent, and counted in PortStats::packets_refused;
/// a buffer of kMaxPacketBytes (packet.hpp) never refuses one. A null `sink.write` or `buffer`
/// pops nothing and returns 0. The records' one consumer context (usually the main loop's idle
/// path, or an interrupt that the watchdog's SysTick cannot preempt); `sink.write` runs there.
/// Returns the packets handed to `sink`. Links neither format_text nor format_json.
std::uint32_t drain(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer, std::size_t size) noexcept;

/// drain() for the watchdog's health ring (WatchdogConfig::health_period_us): each health
/// record as one `health` packet (encode_health_packet; a buffer of kMaxHealthPacketBytes never
/// refuses one; refusals counted in PortStats::packets_refused). Same context rules. A firmware
/// that does not call it links no health encoder.
std::uint32_t drain_health(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer,
                                   std::size_t size) noexcept;

/// A place for formatted reports: console, UART, flash log. `write` gets one formatted record
/// (NUL-terminated) at a time, in the context that calls drain().
struct Sink {
  void (*write)(void* context, const char* text);
  void* context;
};

enum class Format : std::uint8_t {
  text,  ///< format_text: BlockCanary-style lines
  json,  ///< format_json: one JSON object per line
};

/// Pops every record waiting in `watchdog`'s ring, formats it into `buffer` (`size` bytes; a
/// short buffer truncates the text, flagged in it) and hands it to `sink`. The records' one
/// consumer context (usually the main loop's idle path). Returns the records written; a null
/// `sink.write` or `buffer`, or a `size` of 0, pops nothing and returns 0. Links the core's
/// formatter (format_text, format_json: about 5.8 KiB of flash on Cortex-M3); a device that
/// sends packets uses the PacketSink overload instead.
std::uint32_t drain(Watchdog& watchdog, const Sink& sink, Format format, char* buffer, std::size_t size) noexcept;

// ---- Hot tier ---------------------------------------------------------------------------------

namespace detail {

// The hot tier is inlined even at -Os, where gcc would otherwise call these out of line.
#define LOOPCANARY_CORTEX_M_INLINE inline __attribute__((always_inline))

LOOPCANARY_CORTEX_M_INLINE volatile std::uint32_t& reg(std::uintptr_t address) noexcept {
  return *reinterpret_cast<volatile std::uint32_t*>(address);
}

inline constexpr std::uintptr_t kSystCvr = 0xE000E018;    // SysTick current value (24-bit, down)
inline constexpr std::uintptr_t kScbIcsr = 0xE000ED04;    // interrupt control and state
inline constexpr std::uint32_t kIcsrPendStSet = 1u << 26;  // SysTick pending
inline constexpr std::uintptr_t kDwtCyccnt = 0xE0001004;  // DWT cycle counter

/// The clock's state. `base` is written by the SysTick interrupt only; the rest by init().
struct ClockState {
  std::atomic<tick_t> base{0};  ///< SysTick source: clock value at the start of the current period
  tick_t reload = 0;            ///< SYST_RVR (period - 1)
  tick_t period = 0;            ///< SysTick period, ticks (0 before init)
  bool use_dwt = false;         ///< CYCCNT is the source
};
extern ClockState g_clock;

/// SysTick's current value extended to 32 bits. The counter counts down from `reload` to 0;
/// every wrap pends the SysTick interrupt, which adds one period to `base`. Consistent without
/// masking interrupts: if the interrupt ran during the read (`base` changed) it reads again; a
/// wrap that is pending but not yet counted (the reader runs with SysTick masked or at a
/// higher priority, or the exception is being taken) adds one period when the value it read
/// is past the wrap (in the upper half of the period). Correct while a pending SysTick is
/// taken within half a period (keep interrupts unmasked for less than that).
LOOPCANARY_CORTEX_M_INLINE tick_t systick_now() noexcept {
  for (;;) {
    const tick_t base = g_clock.base.load(std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const std::uint32_t cvr = reg(kSystCvr);
    const bool pending = (reg(kScbIcsr) & kIcsrPendStSet) != 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (g_clock.base.load(std::memory_order_relaxed) != base) continue;  // the interrupt ran
    tick_t t = static_cast<tick_t>(base + (g_clock.reload - cvr));
    if (pending && cvr > (g_clock.reload >> 1)) t = static_cast<tick_t>(t + g_clock.period);
    return t;
  }
}

/// systick_now() out of line: the clock that detects its source at init calls it only when
/// CYCCNT does not count, so each inlined clock read stays the size of a CYCCNT read.
tick_t systick_now_call() noexcept;

}  // namespace detail

/// Hot-tier clock: core clock cycles, free-running modulo 2^32, the same time base in the loop
/// and in the SysTick interrupt. Valid after init().
struct Clock {
  LOOPCANARY_CORTEX_M_INLINE static tick_t now() noexcept {
#if LOOPCANARY_CORTEX_M_CLOCK == LOOPCANARY_CORTEX_M_CLOCK_DWT
    return detail::reg(detail::kDwtCyccnt);
#elif LOOPCANARY_CORTEX_M_CLOCK == LOOPCANARY_CORTEX_M_CLOCK_SYSTICK || !LOOPCANARY_CORTEX_M_HAS_DWT
    return detail::systick_now();
#else
    if (detail::g_clock.use_dwt) return detail::reg(detail::kDwtCyccnt);
    return detail::systick_now_call();
#endif
  }
};

/// The monitor type firmware on this port declares.
using PortMonitor = ClockedMonitor<Clock>;

}  // namespace loopcanary::cortex_m

extern "C" {
/// SysTick entry (naked): finds the interrupted exception frame (MSP or PSP by EXC_RETURN bit 2)
/// and runs the port's tick with it, EXC_RETURN and the interrupted r7. SysTick_Handler is an alias of it unless
/// LOOPCANARY_CORTEX_M_OWN_SYSTICK is 0.
void loopcanary_cortex_m_systick();
}
