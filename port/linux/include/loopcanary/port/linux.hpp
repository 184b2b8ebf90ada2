// SPDX-License-Identifier: MIT
// Port "linux": a firmware simulator (or any event loop) running as a Linux process.
//
// Hot tier (this header, inlined into begin/end): the clock.
//   - An invariant TSC, calibrated once against CLOCK_MONOTONIC, shifted right so one tick is
//     0.5..1 us: begin/end cost one `rdtsc` and a shift. Used on x86-64 when the CPU reports an
//     invariant TSC and the kernel itself uses the TSC as its clocksource (the kernel then has
//     checked that the TSCs of all CPUs agree, which matters: the loop and the watchdog thread
//     stamp on different CPUs).
//   - Otherwise CLOCK_MONOTONIC in microseconds, read through the vDSO (no system call as long
//     as the kernel's clocksource is one the vDSO can read: tsc, kvm-clock, hyperv, ...).
//   tick_t is 32 bits: at 1..2 MHz (TSC) or 1 MHz (monotonic) it wraps after 36..72 minutes,
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

#if defined(__x86_64__)
#include <x86intrin.h>
#define LOOPCANARY_LINUX_HAS_TSC 1
#else
#define LOOPCANARY_LINUX_HAS_TSC 0
#endif

namespace loopcanary::port_linux {

/// Where the hot-tier clock reads its time.
enum class ClockSource : std::uint8_t {
  tsc,        ///< invariant time-stamp counter, shifted (x86-64)
  monotonic,  ///< CLOCK_MONOTONIC in microseconds (vDSO)
};

/// What to select. `automatic` honours the environment variable LOOPCANARY_CLOCK
/// (`tsc`, `monotonic`, `auto`) and otherwise picks the TSC when it is safe (see above).
enum class ClockChoice : std::uint8_t { automatic, tsc, monotonic };

/// The clock this process uses, fixed at selection.
struct ClockInfo {
  ClockSource source = ClockSource::monotonic;
  const char* name = "clock_monotonic";  ///< "tsc" or "clock_monotonic"
  std::uint32_t tick_hz = 1'000'000;     ///< ticks per second (MonitorConfig::tick_hz)
  std::uint8_t tsc_shift = 0;            ///< tick = TSC >> tsc_shift (tsc only)
  std::uint64_t tsc_hz = 0;              ///< calibrated TSC rate in Hz (tsc only, else 0)
  std::uint32_t wrap_seconds = 0;        ///< 2^32 ticks, in seconds
  const char* reason = "";               ///< why this source, one static sentence
  char kernel_clocksource[24] = {};      ///< /sys/.../current_clocksource, "" when unreadable
  /// True only in a test build with the tick offset hook compiled in (LOOPCANARY_LINUX_TICK_
  /// OFFSET_HOOK): Clock::now() is then the source's tick plus tick_offset(). The reason says
  /// so too, and the file sink marks every record it writes.
  bool tick_offset_hook = false;
};

namespace detail {

// One word holds the whole hot-path state, so now() costs one relaxed load and a test:
// 0 before selection; kClockTsc | shift; or kClockMonotonic. Written once, at selection.
inline constexpr std::uint32_t kClockTsc = 1u << 8;
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

/// The raw TSC (x86-64), unshifted. For calibration and benchmarks.
inline std::uint64_t read_tsc() noexcept {
#if LOOPCANARY_LINUX_HAS_TSC
  return __rdtsc();
#else
  return 0;
#endif
}

/// Out of line: selects the clock automatically (first use only), then reads it.
tick_t now_first_use() noexcept;

/// The selected source's tick (selecting it on first use).
inline tick_t source_now() noexcept {
  const std::uint32_t word = g_clock_word.load(std::memory_order_relaxed);
#if LOOPCANARY_LINUX_HAS_TSC
  if ((word & kClockTsc) != 0) return static_cast<tick_t>(read_tsc() >> (word & kClockShiftMask));
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

/// Selects the clock, once per process; thread-safe. The TSC needs a ~10 ms calibration.
/// Returns true when the clock in use is the one asked for (`automatic` always matches); false
/// when `tsc` is asked for on a machine without a usable TSC (nothing is selected then) or when
/// another clock was already selected (it stays: stamps of two clocks must never mix).
bool select_clock(ClockChoice choice) noexcept;

/// The clock in use; selects it automatically on first call. Thread-safe.
const ClockInfo& clock_info() noexcept;

/// clock_info().tick_hz: what MonitorConfig::tick_hz must be for monitors stamped by Clock.
inline std::uint32_t tick_hz() noexcept { return clock_info().tick_hz; }

/// The monitor type a loop on this port declares.
using PortMonitor = ClockedMonitor<Clock>;

}  // namespace loopcanary::port_linux
