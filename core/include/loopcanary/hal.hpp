// SPDX-License-Identifier: MIT
// Cold tier of the hardware abstraction: what the watchdog asks of the platform, off the hot
// path. A plain struct of callbacks plus one context pointer; zero-initialised means "not
// available" for every service, and the watchdog then reports without that evidence. The hot
// tier (the clock that stamps begin/end) is a compile-time type instead: see
// docs/porting.md and port/template/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/config.hpp"

namespace loopcanary {

class Monitor;

/// Cumulative CPU counters, all in one unit (jiffies on Linux, idle-counter ticks on an MCU).
struct CpuCounters {
  std::uint64_t system_busy = 0;   ///< time any CPU spent not idle
  std::uint64_t system_total = 0;  ///< total CPU time (all CPUs)
  std::uint64_t process = 0;       ///< time spent by this process (0 when not applicable)
  /// Time a hypervisor ran something else on this machine's CPUs, in MICROSECONDS PER CPU (the
  /// machine's total divided by its CPU count; unlike the fields above, an absolute unit): what
  /// one thread's CPU lost on average. 0 when not applicable. The cause rule takes it off the
  /// window: a loop thread whose CPU was stolen did not wait.
  std::uint64_t steal_us = 0;
};

/// Platform services, every one optional. All callbacks run in watchdog context (a thread or
/// a timer ISR), one at a time, and must not block longer than a small fraction of the
/// watchdog period. Each receives `context` first.
struct Hal {
  void* context;

  /// Writes up to `max` program counters of `loop`'s current stack, innermost first, into
  /// `pcs`; returns how many (0: no program counters this time; a sample with neither
  /// scopes nor program counters is counted as missed). `loop.context()`
  /// identifies the loop's thread or execution context.
  std::size_t (*capture_stack)(void* context, const Monitor& loop, Frame* pcs, std::size_t max);

  /// Stores the CPU time `loop`'s thread has consumed so far, in microseconds, monotonic;
  /// returns false when unavailable.
  bool (*thread_cpu_us)(void* context, const Monitor& loop, std::uint64_t* cpu_us);

  /// Stores the cumulative machine and process counters; returns false when unavailable.
  bool (*cpu_counters)(void* context, CpuCounters* out);

  /// True while a debugger is attached (reports are then suppressed and counted when
  /// WatchdogConfig::stop_when_debugging is set).
  bool (*debugger_attached)(void* context);

  /// Stores the time `loop`'s thread has spent runnable but waiting for a CPU (run-queue
  /// delay) so far, in microseconds, monotonic; returns false when unavailable. With it the
  /// cause rule tells *starved* from *waiting* by what the loop thread itself went through,
  /// not by how busy the machine was (a sleeping loop on a busy machine is still *waiting*).
  bool (*thread_wait_us)(void* context, const Monitor& loop, std::uint64_t* wait_us);
};

}  // namespace loopcanary
