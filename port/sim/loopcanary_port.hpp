// SPDX-License-Identifier: MIT
// Port "sim": virtual time, fully deterministic, for hosted unit tests and the simulator.
//
//   VirtualTime  the clock state: settable start (wrap tests), optional cost per read
//   Clock        the hot-tier clock: a handle to a VirtualTime
//   Thread       a simulated loop thread: its CPU time and its current program counter
//   Machine      the cold tier (Hal): thread CPU, machine counters, PC capture, debugger,
//                with fault knobs (counters unavailable, capture failing, debugger attached)
//   Scheduler    advances virtual time and polls the watchdog at its period, accounting CPU
//                as the loop computes, waits or is starved
//
// All state lives in these objects: nothing global, nothing shared between tests.
#pragma once

#include <cstdint>

#include "loopcanary/hal.hpp"
#include "loopcanary/instrument.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary::sim {

/// The sim clock runs at 1 MHz: one tick is one microsecond.
inline constexpr std::uint32_t kTickHz = 1'000'000;

/// Microseconds to sim ticks: any tick_t value (up to 2^32 - 1 us, 71.6 minutes).
constexpr tick_t us(std::uint32_t v) noexcept { return v; }
/// Milliseconds to sim ticks: v up to 4'294'967 (71.6 minutes, the largest that fits tick_t);
/// a larger v wraps modulo 2^32 ticks.
constexpr tick_t ms(std::uint32_t v) noexcept { return v * 1000u; }

/// Virtual time. Starts at `start` (e.g. `tick_t{0} - ms(1000)` to cross the wrap one second
/// in). Besides the 32-bit tick value it counts every tick it advanced in 64 bits (elapsed()),
/// so spans of any length compare exactly. Single context.
class VirtualTime {
 public:
  explicit VirtualTime(tick_t start = 0) noexcept : now_(start) {}
  /// The current time; then advances by the read step (0 by default), modelling a clock read
  /// that takes time.
  tick_t read() noexcept {
    const tick_t t = now_;
    advance(read_step_);
    return t;
  }
  /// The current time, without the read step.
  tick_t peek() const noexcept { return now_; }
  /// Ticks advanced since construction, read steps included; 64-bit, never wraps.
  std::uint64_t elapsed() const noexcept { return elapsed_; }
  /// Moves time forward by `ticks` (0 .. 2^32 - 1).
  void advance(tick_t ticks) noexcept {
    now_ = static_cast<tick_t>(now_ + ticks);
    elapsed_ += ticks;
  }
  void set_read_step(tick_t ticks) noexcept { read_step_ = ticks; }

 private:
  tick_t now_;
  tick_t read_step_ = 0;
  std::uint64_t elapsed_ = 0;
};

/// Hot-tier clock of the sim port: a handle to a VirtualTime.
class Clock {
 public:
  explicit Clock(VirtualTime& time) noexcept : time_(&time) {}
  tick_t now() const noexcept { return time_->read(); }

 private:
  VirtualTime* time_;
};

/// A monitor stamped by virtual time.
using PortMonitor = ClockedMonitor<Clock>;

/// A simulated loop thread. Pass its address as MonitorConfig::context.
struct Thread {
  std::uint64_t cpu_ticks = 0;  ///< CPU time consumed so far
  std::uint64_t wait_ticks = 0; ///< time spent runnable, waiting for a CPU (Scheduler::starve)
  Frame pc = 0;                 ///< "program counter" the PC capture reports (0: none)
};

/// The simulated platform behind the cold HAL tier.
class Machine {
 public:
  Machine() noexcept = default;
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  /// The HAL bound to this machine (valid while the machine lives).
  Hal hal() noexcept;

  // Fault knobs.
  /// false: thread CPU time and machine counters report "unavailable".
  void set_counters_available(bool available) noexcept { counters_available_ = available; }
  /// true: PC capture reports the thread's pc; false (default): no PC capture (scopes only).
  void set_pc_capture(bool enabled) noexcept { pc_capture_ = enabled; }
  /// true: every PC capture fails (a missed sample).
  void set_capture_failing(bool failing) noexcept { capture_failing_ = failing; }
  void set_debugger_attached(bool attached) noexcept { debugger_attached_ = attached; }
  /// Share of the machine other work keeps busy while the loop is off the CPU, per mille.
  void set_other_load_permille(std::uint16_t permille) noexcept { other_load_permille_ = permille; }
  /// true: the HAL reports each thread's run-queue wait (kCpuWaitUs in Hal::read_cpu), as an OS with
  /// scheduler statistics does; false (default): it does not, and the cause rule falls back to
  /// the machine's load.
  void set_thread_wait_available(bool available) noexcept { thread_wait_available_ = available; }

  /// Accounts `ticks` of wall time: `running` (may be null) was on the CPU, or the machine
  /// was saturated by others (`saturated`), or it carried only the background load.
  void account(tick_t ticks, Thread* running, bool saturated) noexcept;

  std::uint32_t captures() const noexcept { return captures_; }

 private:
  static std::size_t capture(void* context, const Monitor& loop, Frame* pcs, std::size_t max);
  static void read_cpu(void* context, const Monitor& loop, CpuReading* out);
  static bool debugger(void* context);

  bool counters_available_ = true;
  bool pc_capture_ = false;
  bool capture_failing_ = false;
  bool debugger_attached_ = false;
  bool thread_wait_available_ = false;
  std::uint16_t other_load_permille_ = 0;
  std::uint64_t busy_permille_ticks_ = 0;  // busy time x 1000, so background load stays exact
  std::uint64_t total_ticks_ = 0;
  std::uint64_t process_ticks_ = 0;
  std::uint32_t captures_ = 0;
};

/// Drives virtual time: every period, the watchdog polls (as a timer interrupt or watchdog
/// thread would). The loop's handlers call compute()/wait()/starve() to spend time. Every
/// span is counted in 64 bits (VirtualTime::elapsed()), so polls stay on their grid over runs
/// of any length and for any period.
class Scheduler {
 public:
  /// The first poll happens one `period` after the current time. `period`: 1 .. 2^32 - 1
  /// ticks (0 is taken as 1). The watchdog needs a poll at least every kMaxIntervalTicks
  /// (Watchdog::poll); a longer period is timed exactly but leaves it unable to tell long
  /// dispatches from wrapped ones.
  Scheduler(VirtualTime& time, Machine& machine, Watchdog& watchdog, tick_t period) noexcept;

  /// Each of these spends `ticks` (0 .. 2^32 - 1) of virtual time, polling on the way.
  /// `thread` runs on the CPU for `ticks`.
  void compute(Thread& thread, tick_t ticks) noexcept { spend(ticks, &thread, false); }
  /// The loop is off the CPU (sleep, I/O, lock) for `ticks`; the machine has room.
  void wait(tick_t ticks) noexcept { spend(ticks, nullptr, false); }
  /// The loop wants the CPU but other work saturates the machine for `ticks`; `runnable`, when
  /// given, is the loop thread waiting in the run queue (its Thread::wait_ticks grow).
  void starve(tick_t ticks, Thread* runnable = nullptr) noexcept { spend(ticks, nullptr, true, runnable); }
  /// Nothing of the loop's runs for `ticks` (idle between events).
  void idle(tick_t ticks) noexcept { spend(ticks, nullptr, false); }

  /// Polls so far; wraps at 2^32.
  std::uint32_t polls() const noexcept { return polls_; }
  tick_t period() const noexcept { return period_; }
  /// Tick time of the next poll (the clock reads its start plus elapsed(), modulo 2^32).
  tick_t next_poll() const noexcept {
    return static_cast<tick_t>(time_.peek() + (next_poll_elapsed_ - time_.elapsed()));
  }

 private:
  void spend(tick_t ticks, Thread* running, bool saturated, Thread* runnable = nullptr) noexcept;

  VirtualTime& time_;
  Machine& machine_;
  Watchdog& watchdog_;
  tick_t period_;
  std::uint64_t next_poll_elapsed_;  // the next poll, in VirtualTime::elapsed() terms
  std::uint32_t polls_ = 0;
};

}  // namespace loopcanary::sim
