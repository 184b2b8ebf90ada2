// SPDX-License-Identifier: MIT
// Port "linux": a firmware simulator (or any event loop) running as a Linux process.
//
// Hot tier (this header, inlined into begin/end): the clock.
//   - The CPU's counter, shifted right so one tick is 0.5..1 us: begin/end cost one counter read
//     and a shift. On x86-64 the invariant TSC (`rdtsc`), its rate calibrated once against
//     CLOCK_MONOTONIC; on AArch64 the architected virtual counter CNTVCT_EL0 (`isb; mrs`), its
//     rate CNTFRQ_EL0, checked once against CLOCK_MONOTONIC. Chosen automatically when the
//     kernel itself uses that counter as its clocksource (`tsc`, `arch_sys_counter`): the kernel
//     then has checked that it agrees across CPUs, which matters, as the loop and the watchdog
//     thread stamp on different CPUs.
//   - Otherwise CLOCK_MONOTONIC in microseconds, read through the vDSO (no system call as long
//     as the kernel's clocksource is one the vDSO can read: tsc, arch_sys_counter, kvm-clock,
//     hyperv, ...).
//   tick_t is 32 bits: at 1..2 MHz (counter) or 1 MHz (monotonic) it wraps after 36..72 minutes,
//   so any hang limit below 18 minutes is accepted by Monitor::init (half the wrap).
//   The choice is made once per process, on first use, and is visible through clock_info()
//   (name, rate, reason) and in every record the file sink writes.
//
// Cold tier (loopcanary/port/linux/*.hpp, see docs/porting-linux.md):
//   platform.hpp  Platform (the Hal: stack capture by signal, thread CPU, /proc counters,
//                 TracerPid) and LoopThread (the loop's thread identity)
//   memory.hpp    the memory context: resident set, heap, the loop thread's stack
//   proc.hpp      /proc parsers working on caller buffers
//   status.hpp    Error, Result: how the port's calls fail
// Services built on the port (loopcanary/linux/*.hpp):
//   watchdog_thread.hpp  WatchdogThread: polls a Watchdog on absolute deadlines
//   symbolizer.hpp       program counters -> module + offset, build-id, function + offset
//   file_sink.hpp        rotated .jsonl and text logs, written whole or not at all
//   setup.hpp            Setup: the platform, the watchdog, its thread and a sink in one call
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

#include "loopcanary/instrument.hpp"

// Test hook (test builds only, never in a product): 1 makes Clock::now() add a settable tick
// offset (set_tick_offset()), so tests can start the 32-bit tick counter just before it wraps.
// It must be the same in every translation unit of a program that reads the clock: it is set
// PUBLIC on the test-only library loopcanary_port_linux_tick_offset, never by hand.
#if !defined(LOOPCANARY_LINUX_TICK_OFFSET_HOOK)
#define LOOPCANARY_LINUX_TICK_OFFSET_HOOK 0
#endif

// The CPU's counter this architecture has: the TSC on x86-64, CNTVCT_EL0 on AArch64. Elsewhere
// none (LOOPCANARY_LINUX_HAS_COUNTER 0): the clock is always CLOCK_MONOTONIC.
#if defined(__x86_64__)
#include <x86intrin.h>
#define LOOPCANARY_LINUX_HAS_TSC 1
#define LOOPCANARY_LINUX_HAS_CNTVCT 0
#elif defined(__aarch64__)
#define LOOPCANARY_LINUX_HAS_TSC 0
#define LOOPCANARY_LINUX_HAS_CNTVCT 1
#else
#define LOOPCANARY_LINUX_HAS_TSC 0
#define LOOPCANARY_LINUX_HAS_CNTVCT 0
#endif
#define LOOPCANARY_LINUX_HAS_COUNTER (LOOPCANARY_LINUX_HAS_TSC || LOOPCANARY_LINUX_HAS_CNTVCT)

namespace loopcanary::port_linux {

/// Where the hot-tier clock reads its time.
enum class ClockSource : std::uint8_t {
  counter,    ///< the CPU's counter, shifted: the TSC (x86-64) or CNTVCT_EL0 (AArch64)
  monotonic,  ///< CLOCK_MONOTONIC in microseconds (vDSO)
};

/// What to select. `automatic` honours the environment variable LOOPCANARY_CLOCK and otherwise
/// picks the CPU's counter when the kernel uses it as its clocksource (see above). LOOPCANARY_CLOCK
/// values: `counter` (this CPU's counter, whatever it is), `tsc` (x86-64 only), `cntvct` (AArch64
/// only), `monotonic`, `auto`; a counter of another architecture selects CLOCK_MONOTONIC with a
/// reason naming it; any other value is `auto`.
enum class ClockChoice : std::uint8_t {
  automatic,  ///< LOOPCANARY_CLOCK, else the counter when the kernel vouches for it
  counter,    ///< the CPU's counter, if this CPU has one and it passes its checks
  monotonic,  ///< CLOCK_MONOTONIC
};

/// The clock this process uses, fixed at selection.
struct ClockInfo {
  ClockSource source = ClockSource::monotonic;
  const char* name = "clock_monotonic";  ///< "tsc", "cntvct" or "clock_monotonic"
  std::uint32_t tick_hz = 1'000'000;     ///< ticks per second (MonitorConfig::tick_hz)
  std::uint8_t counter_shift = 0;        ///< tick = counter >> counter_shift (counter only, 0..63)
  /// The counter's rate in Hz, the one tick_hz derives from (counter only, else 0): the TSC's
  /// calibrated rate; CNTFRQ_EL0 on AArch64.
  std::uint64_t counter_hz = 0;
  /// The counter's rate in Hz as measured against CLOCK_MONOTONIC at selection; 0 when it was
  /// not measured (CLOCK_MONOTONIC chosen before the counter was tried) or did not advance. Kept
  /// when the counter is refused, so the refusal can be checked.
  std::uint64_t counter_measured_hz = 0;
  /// The rate the CPU reports for its counter, in Hz: CNTFRQ_EL0 on AArch64 (read at every
  /// selection, whatever is chosen); 0 on x86-64 (the TSC reports none) and elsewhere.
  std::uint64_t counter_reported_hz = 0;
  std::uint32_t wrap_seconds = 0;        ///< 2^32 ticks, in seconds
  const char* reason = "";               ///< why this source (and why not the counter), one static sentence
  char kernel_clocksource[24] = {};      ///< /sys/.../current_clocksource, "" when unreadable
  /// True only in a test build with the tick offset hook compiled in (LOOPCANARY_LINUX_TICK_
  /// OFFSET_HOOK): Clock::now() is then the source's tick plus tick_offset(). The reason says
  /// so too, and the file sink marks every record it writes.
  bool tick_offset_hook = false;
};

namespace detail {

// One word holds the whole hot-path state, so now() costs one relaxed load and a test:
// 0 before selection; kClockCounter | shift; or kClockMonotonic. Written once, at selection.
inline constexpr std::uint32_t kClockCounter = 1u << 8;
inline constexpr std::uint32_t kClockMonotonic = 1u << 9;
inline constexpr std::uint32_t kClockShiftMask = 0x3Fu;
extern std::atomic<std::uint32_t> g_clock_word;

/// CLOCK_MONOTONIC in microseconds, modulo 2^32.
inline tick_t monotonic_us() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<tick_t>(static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000u +
                             static_cast<std::uint64_t>(ts.tv_nsec) / 1'000u);
}

/// The CPU's counter, unshifted, in counts of ClockInfo::counter_hz: the TSC (x86-64),
/// CNTVCT_EL0 (AArch64); 0 on other architectures. Any thread, signal handlers included; no
/// system call. For the hot path (through Clock::now()), calibration and benchmarks.
inline std::uint64_t read_counter() noexcept {
#if LOOPCANARY_LINUX_HAS_TSC
  // Not serialising: a read may run ahead of earlier loads (docs/porting-linux.md, Ordering).
  return __rdtsc();
#elif LOOPCANARY_LINUX_HAS_CNTVCT
  // The ISB keeps the read in program order. Without it the architecture lets a CNTVCT_EL0 read
  // be performed speculatively and out of order, even ahead of an earlier read of the same
  // register (Arm ARM, "Generic Timer"), so an empty dispatch could stamp its end before its
  // begin and read as a clock step back of nearly 2^32 ticks. Linux's own vDSO and
  // arch_timer_read_cntvct_el0() put an ISB before the MRS for the same reason. It costs one
  // instruction (a pipeline flush, tens of cycles), no system call and no memory access.
  std::uint64_t value = 0;
  asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(value));
  return value;
#else
  return 0;
#endif
}

/// Which counter the CPU has (LOOPCANARY_LINUX_HAS_*): what the counter's checks and names follow.
enum class CounterKind : std::uint8_t {
  none,    ///< no counter this port reads (neither x86-64 nor AArch64)
  tsc,     ///< x86-64's time-stamp counter
  cntvct,  ///< AArch64's architected virtual counter, CNTVCT_EL0
};
inline constexpr CounterKind kCounterKind = LOOPCANARY_LINUX_HAS_TSC      ? CounterKind::tsc
                                            : LOOPCANARY_LINUX_HAS_CNTVCT ? CounterKind::cntvct
                                                                          : CounterKind::none;

/// The selection's decision before any measurement, from what select_clock() read. Pure (no
/// clock, file or environment read), any thread; exposed so tests can check every branch.
struct ClockPlan {
  /// True: measure the counter (counter_refusal()) and use it unless refused; false: use
  /// CLOCK_MONOTONIC, or nothing (fail_if_refused).
  bool try_counter = false;
  /// True for select_clock(counter): when the counter cannot serve (try_counter false) or its
  /// measurement is refused, select_clock() returns false and selects nothing. False: such a
  /// refusal selects CLOCK_MONOTONIC, its reason saying why.
  bool fail_if_refused = false;
  /// Why: the reason for CLOCK_MONOTONIC (try_counter false), or for the counter when it passes
  /// its measurement (try_counter true). A static sentence, never null.
  const char* reason = "";
};

/// The plan for select_clock(`choice`) with LOOPCANARY_CLOCK = `environment` (nullptr: unset),
/// on a CPU with counter `kind`; `counter_unusable` is why that counter cannot serve at all
/// (x86-64: a TSC that is not invariant), nullptr when it can; `kernel_clocksource` is the
/// kernel's clocksource name ("" when unknown, never null). The counter is tried when asked
/// for (`choice` counter, or the environment names this CPU's counter or `counter`) or, for
/// `automatic`, when the kernel's clocksource is this counter (`tsc`, `arch_sys_counter`).
ClockPlan plan_clock(ClockChoice choice, const char* environment, CounterKind kind, const char* counter_unusable,
                     const char* kernel_clocksource) noexcept;

/// Why a counter of `kind` whose rate measured against CLOCK_MONOTONIC is `measured_hz` (0:
/// it did not advance) cannot be the clock, given the rate the CPU reports for it
/// (`reported_hz`: CNTFRQ_EL0; 0 for the TSC, which reports none); nullptr when it can. The
/// TSC: measured 50 MHz..10 GHz. CNTVCT_EL0: CNTFRQ_EL0 at least 1 MHz, the measured rate at
/// least 1 MHz and within kCounterRateTolerancePercent of CNTFRQ_EL0. Pure, any thread.
const char* counter_refusal(CounterKind kind, std::uint64_t measured_hz, std::uint64_t reported_hz) noexcept;

/// How far (in percent of CNTFRQ_EL0) the measured rate of CNTVCT_EL0 may be from CNTFRQ_EL0.
inline constexpr std::uint32_t kCounterRateTolerancePercent = 2;

/// The right shift that brings a counter at `counter_hz` (at least 1 MHz) to a tick rate of
/// 1..2 MHz (a tick of 0.5..1 us): the smallest with (counter_hz >> shift) < 2 MHz. Pure.
inline std::uint8_t counter_shift_for(std::uint64_t counter_hz) noexcept {
  std::uint8_t shift = 0;
  while ((counter_hz >> shift) >= 2'000'000u) ++shift;
  return shift;
}

/// Out of line: selects the clock automatically (first use only), then reads it.
tick_t now_first_use() noexcept;

/// The selected source's tick (selecting it on first use).
inline tick_t source_now() noexcept {
  const std::uint32_t word = g_clock_word.load(std::memory_order_relaxed);
#if LOOPCANARY_LINUX_HAS_COUNTER
  if ((word & kClockCounter) != 0) return static_cast<tick_t>(read_counter() >> (word & kClockShiftMask));
#endif
  if ((word & kClockMonotonic) != 0) return monotonic_us();
  return now_first_use();
}

#if LOOPCANARY_LINUX_TICK_OFFSET_HOOK
extern std::atomic<std::uint32_t> g_tick_offset;  // test hook: added to every Clock::now()
#endif

}  // namespace detail

/// Hot-tier clock of the Linux port. Callable from any thread, and from a signal handler once
/// the clock is selected (before that, the first call selects it, which is not signal-safe:
/// call clock_info() or tick_hz() during start-up).
struct Clock {
  static tick_t now() noexcept {
#if LOOPCANARY_LINUX_TICK_OFFSET_HOOK
    return static_cast<tick_t>(detail::source_now() + detail::g_tick_offset.load(std::memory_order_relaxed));
#else
    return detail::source_now();
#endif
  }
};

#if LOOPCANARY_LINUX_TICK_OFFSET_HOOK
/// Test hook: from now on Clock::now() returns the source's tick plus `offset_ticks` (in ticks
/// of tick_hz(), modulo 2^32), e.g. to start a test just before the counter wraps. Call it only
/// while nothing stamps or compares ticks (no monitor in a dispatch, no watchdog polling: test
/// set-up and tear-down): moving the clock under a running dispatch is a jump in time, not a
/// wrap. Selects the clock first if needed. Any thread.
void set_tick_offset(tick_t offset_ticks) noexcept;

/// Test hook: the offset Clock::now() adds (0 until set_tick_offset()).
tick_t tick_offset() noexcept;
#endif

/// Selects the clock, once per process; thread-safe. Trying the counter takes a ~10 ms
/// measurement against CLOCK_MONOTONIC (calibration on x86-64, a check of CNTFRQ_EL0 on AArch64).
/// `counter` is accepted whatever the kernel's clocksource when the counter passes its checks;
/// `automatic` takes the counter only when the kernel uses it as its clocksource. Returns true
/// when the clock in use is the one asked for (`automatic` always matches; its reasons say why
/// the counter was not used, e.g. `LOOPCANARY_CLOCK=cntvct` on x86-64); false when `counter` is
/// asked for and this CPU has no counter, its counter is unusable or fails its measurement
/// (nothing is selected then: a later call may choose another), or when another clock was
/// already selected (it stays: stamps of two clocks must never mix).
bool select_clock(ClockChoice choice) noexcept;

/// The clock in use; selects it automatically on first call. Thread-safe.
const ClockInfo& clock_info() noexcept;

/// clock_info().tick_hz: what MonitorConfig::tick_hz must be for monitors stamped by Clock.
inline std::uint32_t tick_hz() noexcept { return clock_info().tick_hz; }

/// The monitor type a loop on this port declares.
using PortMonitor = ClockedMonitor<Clock>;

}  // namespace loopcanary::port_linux
