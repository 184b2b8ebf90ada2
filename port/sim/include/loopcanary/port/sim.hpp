// SPDX-License-Identifier: MIT
// Port "sim": virtual time, fully deterministic, for hosted unit tests and the simulator.
//
//   VirtualTime  the clock state: settable start (wrap tests), optional cost per read, with
//                fault knobs (the counter steps forward or back, stops)
//   Clock        the hot-tier clock: a handle to a VirtualTime
//   Thread       a simulated loop thread: its CPU time and its current program counter
//   Machine      the cold tier (Hal): thread CPU, machine counters, PC capture, debugger,
//                with fault knobs (counters unavailable, captures failing, debugger attached)
//   Scheduler    advances virtual time and polls the watchdog at its period, accounting CPU
//                as the loop computes, waits or is starved, with fault knobs (a poll late,
//                polling stopped and resumed)
//   RecordSink   the records' consumer: pops the watchdog's ring and writes each record, with
//                fault knobs (writes failing, a consumer that stops popping)
//
// The fault knobs model what the platform can do to loopcanary; tests/sim/faults_test.cpp
// checks what the library promises under each (docs/reliability.md, "Faults of the platform").
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
  /// Moves time forward by `ticks` (0 .. 2^32 - 1); the counter with it unless stopped.
  void advance(tick_t ticks) noexcept {
    if (!stopped_) now_ = static_cast<tick_t>(now_ + ticks);
    elapsed_ += ticks;
  }
  void set_read_step(tick_t ticks) noexcept { read_step_ = ticks; }

  // Fault knobs: the counter misbehaves, time does not (elapsed() and the Scheduler's polls
  // keep real time). Single context, between the loop's and the watchdog's clock reads.
  /// The counter steps `ticks` (0 .. 2^32 - 1) ahead at once, as a clock set forward does; no
  /// time passes. A step of more than half the wrap (kMaxIntervalTicks) reads as a step back.
  void step_forward(tick_t ticks) noexcept { now_ = static_cast<tick_t>(now_ + ticks); }
  /// The counter steps `ticks` (0 .. 2^32 - 1) back at once, as a clock set back does; no time
  /// passes.
  void step_back(tick_t ticks) noexcept { now_ = static_cast<tick_t>(now_ - ticks); }
  /// true: the counter stops: reads return the value it stopped at while time goes on; false
  /// (default): it counts again from that value (the time it was stopped is never read).
  void set_stopped(bool stopped) noexcept { stopped_ = stopped; }

 private:
  tick_t now_;
  tick_t read_step_ = 0;
  bool stopped_ = false;
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
  /// The thread's id as wait objects name holders (WaitObject::owner, Hal::thread_id); 0: none.
  std::uint32_t id = 0;
  const char* name = "";        ///< its name (WaitObject::owner_name, cut to 15 characters)
  /// What it waits on while Scheduler::wait_on() runs (kind none otherwise), and the thread that
  /// holds it (null: none).
  WaitObject waiting_on{};
  const Thread* holder = nullptr;
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
  /// The next `count` PC captures fail (return no program counter), then captures work again
  /// (with set_pc_capture(true)). Counts only the captures the watchdog asks for.
  void fail_captures(std::uint32_t count) noexcept { captures_to_fail_ = count; }
  void set_debugger_attached(bool attached) noexcept { debugger_attached_ = attached; }
  /// Share of the machine other work keeps busy while the loop is off the CPU, per mille.
  void set_other_load_permille(std::uint16_t permille) noexcept { other_load_permille_ = permille; }
  /// true: the HAL reports each thread's run-queue wait (kCpuWaitUs in Hal::read_cpu), as an OS with
  /// scheduler statistics does; false (default): it does not, and the cause rule falls back to
  /// the machine's load.
  void set_thread_wait_available(bool available) noexcept { thread_wait_available_ = available; }
  /// What Hal::read_memory reports for every loop from now on (default: nothing known).
  void set_memory(const MemoryReading& reading) noexcept { memory_ = reading; }
  /// Calls of Hal::read_memory so far.
  std::uint32_t memory_reads() const noexcept { return memory_reads_; }

  /// Accounts `ticks` of wall time: `running` (may be null) was on the CPU, or the machine
  /// was saturated by others (`saturated`), or it carried only the background load.
  void account(tick_t ticks, Thread* running, bool saturated) noexcept;

  /// PC captures that reported a program counter.
  std::uint32_t captures() const noexcept { return captures_; }
  /// PC captures that failed, by set_capture_failing() or fail_captures().
  std::uint32_t captures_failed() const noexcept { return captures_failed_; }
  /// Calls of Hal::read_wait so far.
  std::uint32_t wait_reads() const noexcept { return wait_reads_; }

 private:
  static std::size_t capture(void* context, const Monitor& loop, Frame* pcs, std::size_t max);
  static void read_cpu(void* context, const Monitor& loop, CpuReading* out);
  static bool debugger(void* context);
  static void read_memory(void* context, const Monitor& loop, MemoryReading* out);
  static void read_wait(void* context, const Monitor& loop, WaitReading* out, std::size_t max_frames);
  static std::uint32_t thread_id(void* context, const Monitor& loop);

  bool counters_available_ = true;
  bool pc_capture_ = false;
  bool capture_failing_ = false;
  std::uint32_t captures_to_fail_ = 0;
  bool debugger_attached_ = false;
  bool thread_wait_available_ = false;
  std::uint16_t other_load_permille_ = 0;
  std::uint64_t busy_permille_ticks_ = 0;  // busy time x 1000, so background load stays exact
  std::uint64_t total_ticks_ = 0;
  std::uint64_t process_ticks_ = 0;
  std::uint32_t captures_ = 0;
  std::uint32_t captures_failed_ = 0;
  MemoryReading memory_{};
  std::uint32_t memory_reads_ = 0;
  std::uint32_t wait_reads_ = 0;
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
  /// `thread` is off the CPU for `ticks`, waiting on `object`, which `holder` (may be null)
  /// holds: Hal::read_wait reads it so meanwhile, with the holder's id, name and pc, and, while
  /// the holder itself waits on a lock (its waiting_on and holder), the chain of holders; the
  /// machine has room. `object.owner` and `owner_name` are set from `holder`.
  void wait_on(Thread& thread, const WaitObject& object, const Thread* holder, tick_t ticks) noexcept;
  /// Nothing of the loop's runs for `ticks` (idle between events).
  void idle(tick_t ticks) noexcept { spend(ticks, nullptr, false); }

  // Fault knobs: the watchdog's context runs late or not at all (a watchdog thread
  // descheduled, a timer interrupt masked). Polls never made are not made up afterwards.
  /// The next poll comes `late` ticks (0 .. 2^32 - 1) after it is due, as one poll: the polls
  /// due in between are not made; the period continues from the late poll.
  void delay_next_poll(tick_t late) noexcept { next_poll_elapsed_ += late; }
  /// No poll is made until resume_polling(), however long time runs.
  void stop_polling() noexcept { stopped_ = true; }
  /// Ends stop_polling(): one poll at once (in the next compute/wait/starve/idle call, also of
  /// 0 ticks), then one every period from it. Does nothing while polling runs.
  void resume_polling() noexcept;

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
  bool stopped_ = false;
};

/// The records' one consumer (Watchdog::pop), as a port's log writer or UART drain is: drain()
/// pops every record waiting and writes each, or fails to, as the fault knobs say. A record
/// popped is written or counted failed (popped() == written() + failed()); a record the
/// watchdog could not queue because nobody popped is the watchdog's records_dropped. Single
/// context (the consumer's).
class RecordSink {
 public:
  /// `on_written` (may be null) is called with each record written, in order, with `context`.
  explicit RecordSink(Interceptor on_written = nullptr, void* context = nullptr) noexcept
      : on_written_(on_written), context_(context) {}

  /// Pops every record waiting in `watchdog` and writes it; returns the records written by this
  /// call. Pops nothing while stalled.
  std::uint32_t drain(Watchdog& watchdog) noexcept;

  // Fault knobs.
  /// The next `count` writes fail: those records are popped and lost, counted in failed().
  void fail_writes(std::uint32_t count) noexcept { writes_to_fail_ = count; }
  /// true: drain() pops nothing (a consumer that stopped: the watchdog's ring fills); false
  /// (default): it pops.
  void set_stalled(bool stalled) noexcept { stalled_ = stalled; }

  std::uint32_t popped() const noexcept { return written_ + failed_; }
  std::uint32_t written() const noexcept { return written_; }
  std::uint32_t failed() const noexcept { return failed_; }
  /// Report number (BlockRecord::report) of the last record written; 0 before the first.
  std::uint32_t last_report() const noexcept { return last_report_; }

 private:
  Interceptor on_written_;
  void* context_;
  std::uint32_t writes_to_fail_ = 0;
  bool stalled_ = false;
  std::uint32_t written_ = 0;
  std::uint32_t failed_ = 0;
  std::uint32_t last_report_ = 0;
};

}  // namespace loopcanary::sim
