// SPDX-License-Identifier: MIT
// Board: everything the simulated firmware asks of the machine it runs on, behind one small
// virtual interface, so the same firmware code runs in real time (RealBoard: Linux port, real
// threads, real CPU work, signal-sampled stacks) and in virtual time (VirtualBoard: sim port,
// deterministic, the work advances a virtual clock).
//
//   time        now(), tick_hz(), ticks_from_us()
//   CPU work    for (Burn burn(us); board.compute(burn);) { one step of the real work }
//   off CPU     wait_us(): a sleep, a flash page program, an I2C transfer
//   buses       acquire()/release(): a bus the loop shares with a peripheral that may hold it
//   idle        idle_until(): the loop has nothing to do until a deadline or an interrupt
//   peripherals a timeline of actions each (raise an interrupt line, hold a bus): a thread of
//               their own in real time, events on the virtual timeline in virtual time
//   watchdog    the board polls it (a thread / the virtual scheduler) and hands every record
//               to its sink (Board::drain)
//
// compute(), wait_us() and acquire() pass the address of the firmware code that called them to
// the board, so a virtual board can report it as the loop's program counter: samples then name
// the same firmware function in virtual time as the signal-sampled stacks do in real time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/hal.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/time.hpp"
#include "loopcanary/watchdog.hpp"
#include "simrt/irq.hpp"

namespace loopcanary::simrt {

/// Buses a board models.
inline constexpr std::size_t kMaxBuses = 4;
/// Peripherals a board runs.
inline constexpr std::size_t kMaxPeripherals = 4;
/// Actions in one peripheral's timeline.
inline constexpr std::size_t kMaxActions = 16;
/// The latest time a board and a runtime take, microseconds from the start of a run: 2^40 us
/// (12.7 days). Every span up to it is exact in virtual and real time (64-bit ticks at any
/// tick rate, nanoseconds of CLOCK_MONOTONIC); Board::start() refuses a timeline that goes
/// further (BoardError::action_too_late), Runtime::run_for() a longer run.
inline constexpr std::uint64_t kMaxRunUs = std::uint64_t{1} << 40;

using BusId = std::uint8_t;

/// One thing a peripheral does, once or periodically, at a time counted from the start of the
/// run. The actions of one peripheral happen one after the other: while it holds a bus, its
/// other actions wait, and periodic ones that fell due meanwhile are skipped (a wedged chip
/// does not queue up its interrupts).
struct Action {
  enum class Kind : std::uint8_t {
    raise,     ///< raise interrupt line `target` with `arg`
    hold_bus,  ///< hold bus `target` for `arg` microseconds, or until Board::reset_hold()
  };
  Kind kind = Kind::raise;
  std::uint8_t target = 0;
  std::uint32_t arg = 0;
  std::uint64_t at_us = 0;      ///< first occurrence, microseconds from the start of the run, 0..kMaxRunUs
  std::uint32_t period_us = 0;  ///< repeat every period_us (any u32: up to 71.6 minutes); 0: once
  std::uint32_t count = 0;      ///< occurrences when periodic; 0: until the run ends
};

/// A simulated peripheral (a sensor, a radio coprocessor, a keypad): its name and timeline.
struct Peripheral {
  const char* name = "";
  const Action* actions = nullptr;
  std::size_t action_count = 0;
};

/// Walks one peripheral's timeline in time order (ties: the earlier action in the list).
class Timeline {
 public:
  Timeline() noexcept = default;
  explicit Timeline(const Peripheral& peripheral) noexcept;

  /// The next occurrence: its time and its action. False when the timeline is exhausted.
  bool peek(std::uint64_t& at_us, const Action*& action) const noexcept;
  /// Consumes the occurrence peek() returned.
  void pop() noexcept;
  /// Drops periodic occurrences due before `us` (they fell due while the peripheral was busy);
  /// returns how many.
  std::uint32_t skip_before(std::uint64_t us) noexcept;

 private:
  bool next_of(std::size_t i, std::uint64_t& at_us) const noexcept;

  const Action* actions_ = nullptr;
  std::size_t count_ = 0;
  std::uint32_t fired_[kMaxActions] = {};
};

/// CPU work of a known length: `for (Burn burn(us); board.compute(burn);) step();`. In real
/// time the loop runs the step until `us` have elapsed; in virtual time the board advances the
/// clock by `us` and the step runs once. `us`: any u32 (up to 71.6 minutes), exact at any tick
/// rate (the board counts the time in 64 bits; in real time each step must be shorter than one
/// wrap of the tick counter).
struct Burn {
  explicit Burn(std::uint32_t duration_us) noexcept : us(duration_us) {}
  std::uint32_t us;
  bool started = false;
  WideTicks clock;        ///< the board's: time since the first step
  std::uint64_t end = 0;  ///< the board's: clock value at which the work is done
};

/// Where Board::drain puts every record the watchdog produces, in watchdog context (the
/// watchdog thread in real time, inside the loop's board calls in virtual time).
using Sink = void (*)(void* context, const BlockRecord& record);

struct BoardStart {
  Watchdog* watchdog = nullptr;        ///< initialised, its loops added
  std::uint32_t poll_period_us = 10'000;
  Sink sink = nullptr;                 ///< may be null (records are then discarded)
  void* sink_context = nullptr;
  IrqLine* lines = nullptr;            ///< the loop's interrupt lines, `line_count` of them
  std::size_t line_count = 0;
  const Peripheral* peripherals = nullptr;
  std::size_t peripheral_count = 0;
  /// Virtual time only: called on the loop thread with each span of ticks the board advances
  /// its clock by (computing, waiting, idle), before the watchdog's poll at its end, so a
  /// caller sees every tick with the loop's state (its dispatch, its scopes) as it was during
  /// it. A RealBoard never calls it. May be null.
  void (*on_time)(void* context, tick_t ticks) = nullptr;
  void* on_time_context = nullptr;
};

/// Why BoardStart was refused, or the start-up step that failed. describe() says it in words.
enum class BoardError : std::uint8_t {
  none = 0,
  watchdog_missing,       ///< BoardStart::watchdog is null
  poll_period_invalid,    ///< poll_period_us is outside 100..1'000'000
  too_many_peripherals,   ///< more than kMaxPeripherals
  too_many_actions,       ///< a peripheral has more than kMaxActions actions
  too_many_lines,         ///< line_count is above kMaxIrqLines
  action_too_late,        ///< an action's at_us is past kMaxRunUs
  line_out_of_range,      ///< a raise action names a line >= line_count
  line_shared,            ///< two peripherals raise the same line (each line has one producer)
  bus_out_of_range,       ///< a hold_bus action names a bus >= kMaxBuses
  platform_failed,        ///< the platform could not be set up (real time: see the message)
  thread_failed,          ///< a thread could not be started
  already_started,
};
const char* describe(BoardError error) noexcept;

class Board {
 public:
  Board() noexcept = default;
  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;
  virtual ~Board() = default;

  // ---- Set-up, on the loop thread ----------------------------------------------------------

  /// Tick rate of now(): MonitorConfig::tick_hz.
  virtual std::uint32_t tick_hz() const noexcept = 0;
  /// The platform services for StaticWatchdog::init.
  virtual Hal hal() noexcept = 0;
  /// MonitorConfig::context of the loop.
  virtual void* loop_context() noexcept = 0;
  /// Validates `start`, then starts polling the watchdog and running the peripherals. Time 0
  /// of the peripherals' timelines is now.
  BoardError start(const BoardStart& start) noexcept;
  /// Stops the peripherals, polls the watchdog at least once more and ends with
  /// Watchdog::finish (so a block that ended after its last poll is finalised, and one still
  /// running gets a final record flagged running_at_stop), hands the last records to the
  /// sink and stops polling.
  /// Call on the loop thread once the loop has stopped. Idempotent.
  virtual void finish() noexcept = 0;
  /// "real" or "virtual".
  virtual const char* time_name() const noexcept = 0;

  // ---- Loop context ------------------------------------------------------------------------

  /// Board time, ticks at tick_hz(). Loop or watchdog context.
  virtual tick_t now() noexcept = 0;
  /// See Burn. True while the caller should run one more step.
  bool compute(Burn& burn) noexcept;
  /// Off the CPU for `us` microseconds (sleep, flash program, transfer): any u32, up to
  /// 71.6 minutes.
  void wait_us(std::uint32_t us) noexcept;
  /// Takes `bus`, waiting while a peripheral holds it.
  void acquire(BusId bus) noexcept;
  /// Gives `bus` back.
  virtual void release(BusId bus) noexcept = 0;
  /// Nothing to do until `deadline` (ticks, at most kMaxIntervalTicks after now(); one at or
  /// before now() returns at once); returns early when an interrupt is raised, and may return
  /// early for no reason (the loop checks again).
  virtual void idle_until(tick_t deadline) noexcept = 0;

  // ---- Any context -------------------------------------------------------------------------

  /// Ends a peripheral's hold of `bus` now (resets the wedged peripheral). No effect when no
  /// peripheral holds it.
  virtual void reset_hold(BusId bus) noexcept = 0;

  /// Board time of the start of the run (timeline time 0).
  tick_t start_tick() const noexcept { return start_tick_; }
  /// Microseconds to ticks at tick_hz(), rounded down; 64-bit, exact for us up to kMaxRunUs.
  std::uint64_t ticks_from_us(std::uint64_t us) const noexcept { return loopcanary::ticks_from_us(us, tick_hz()); }
  std::uint64_t us_from_ticks(std::uint64_t ticks) const noexcept {
    return loopcanary::us_from_ticks(ticks, tick_hz());
  }
  /// Microseconds from the start of the run to `t`, a board time within half a wrap
  /// (kMaxIntervalTicks) of the board's latest watchdog poll, however long the run has lasted:
  /// the board extends its clock to 64 bits at every poll. Watchdog context (the record
  /// sink), or the loop thread once finish() returned; 0 before start().
  std::uint64_t us_since_start(tick_t t) const noexcept;

 protected:
  /// Program counter inside the firmware code that called compute(), wait_us() or acquire().
  using CallerPc = Frame;

  virtual BoardError start_impl(const BoardStart& start) noexcept = 0;
  virtual bool compute_step(Burn& burn, CallerPc caller) noexcept = 0;
  virtual void wait_impl(std::uint32_t us, CallerPc caller) noexcept = 0;
  virtual void acquire_impl(BusId bus, CallerPc caller) noexcept = 0;

  /// Marks time 0 of the run at board time `start`. In start_impl(), before polling starts.
  void set_start(tick_t start) noexcept;
  /// Hands every record waiting in the watchdog's ring to the sink, after extending the
  /// run's clock to now(). Watchdog context, after every poll (the run's clock relies on it).
  void drain() noexcept;

  tick_t start_tick_ = 0;
  WideTicks run_clock_;           // watchdog context: now() at the latest drain()
  std::uint64_t run_start_ = 0;   // run_clock_ value of start_tick_
  BoardStart config_{};
  bool started_ = false;
};

/// True when `a` is strictly before `b` (both within half a wrap of each other).
constexpr bool tick_before(tick_t a, tick_t b) noexcept {
  return a != b && ticks_between(a, b) <= kMaxIntervalTicks;
}

}  // namespace loopcanary::simrt
