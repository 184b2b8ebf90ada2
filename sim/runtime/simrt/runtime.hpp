// SPDX-License-Identifier: MIT
// Runtime: the event loop of the simulated firmware, of the kind an MCU product runs.
//
//   interrupt lines (SPSC rings, one per source) ─┐
//   timers (fixed table, periodic and one-shot) ──┼─▶ event queue (fixed FIFO) ─▶ dispatch
//   post() from handlers ─────────────────────────┘          one message at a time
//
// Every dispatch is stamped with loopcanary with the message's post stamp, back to back while
// the loop drains its queue (Monitor::next_at: the stamp that begins a dispatch ends the one
// before it, one clock read per dispatch; the last one ends before the loop waits). So the
// core measures what a user perceives as lag: for each event type, how long messages waited
// between post and dispatch (the runtime gives each type core storage,
// loopcanary::EventHealth), and, for a type declared periodic (init_event), its lateness,
// missed periods and deadline misses. The runtime adds, for each block, which
// messages it held up ("events delayed by this block"), and reports the loop's idle waits
// (Monitor::add_idle). Nothing allocates: every table is fixed at compile time.
//
// Time: the loop extends the board's 32-bit ticks to 64 bits (Runtime::now(), a WideTicks
// value) at every turn, so runs, timers and waits of any length up to kMaxRunUs compare
// exactly, across any number of counter wraps. The one condition: no single handler runs for a
// whole wrap period of the board's counter (71.6 minutes at 1 MHz, 35.8 at 2 MHz).
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/event.hpp"
#include "loopcanary/health.hpp"
#include "loopcanary/monitor.hpp"
#include "loopcanary/status.hpp"
#include "simrt/board.hpp"
#include "simrt/irq.hpp"

namespace loopcanary::simrt {

inline constexpr std::size_t kMaxEventTypes = 16;
inline constexpr std::size_t kQueueCapacity = 64;
inline constexpr std::size_t kMaxTimers = 8;
/// Blocks whose delayed events are tracked (the latest ones).
inline constexpr std::size_t kMaxBlockSpans = 32;
/// How often run_for() folds the core's loop counters into LoopTotals, microseconds of loop time.
inline constexpr std::uint32_t kFoldPeriodUs = 1'000'000;

struct Message;

/// A handler: `app` is RuntimeConfig::app (the firmware object).
using Handler = void (*)(void* app, const Message& message);

/// Static descriptor of one kind of message: loopcanary's identity (name, optional own
/// threshold) and the handler. The firmware keeps them in one table indexed by TypeId. The
/// runtime dispatches each type under its own copy of `event` that points at the runtime's
/// storage for the type (Runtime::event()); `event.health` here is not used.
struct EventType {
  Event event;
  Handler handler;
};

using TimerId = std::uint8_t;
/// Message::timer of a message no timer posted.
inline constexpr TimerId kNoTimer = 0xFF;

/// One queued message.
struct Message {
  TypeId type = 0;
  std::uint32_t arg = 0;
  /// When it became due (interrupt stamp, timer deadline or post() time), in Runtime::now()
  /// terms: 64-bit ticks whose low 32 bits are the board's tick.
  std::uint64_t posted = 0;
  /// The timer that posted it, or kNoTimer.
  TimerId timer = kNoTimer;
};

/// What the runtime counts of one event type besides the core's queue latency
/// (Runtime::health()).
struct TypeStats {
  std::uint32_t lost = 0;          ///< interrupts lost (line full) + messages the queue refused
  std::uint32_t blocks = 0;        ///< dispatches over the type's threshold
  /// Periods a timer skipped because the loop was late: it fell due again while its previous
  /// message was still queued, or passed while the loop was busy (one message per firing, as
  /// a hardware timer's pending flag gives one interrupt).
  std::uint32_t timer_skips = 0;
};

/// The loop's time and dispatches over every run_for() so far, in 64 bits (a run outlasts the
/// 32-bit counters of LoopStats, and its window the tick wrap): the core's counters
/// (Monitor::stats()), folded in every second of loop time and at the end of each run_for().
/// busy_ticks + idle_ticks is window_ticks less the loop's own time from the end of a drain to
/// its idle wait (none in virtual time): its time between two dispatches of a drain belongs to
/// the dispatch before (Monitor::next_at), and so does its time from the last handler of a
/// drain to the end stamp.
struct LoopTotals {
  std::uint64_t window_ticks = 0;  ///< time spent in run_for(), ticks
  std::uint64_t busy_ticks = 0;    ///< LoopStats::busy_ticks over it: dispatches
  std::uint64_t idle_ticks = 0;    ///< LoopStats::idle_ticks over it: the loop's idle waits
  std::uint64_t dispatches = 0;    ///< LoopStats::dispatches over it
};

/// One block seen by the loop, and the messages it held up: posted before it ended and
/// dispatched after it.
struct BlockSpan {
  std::uint32_t dispatch = 0;      ///< dispatch number on the loop (BlockRecord::dispatch)
  TypeId type = 0;
  std::uint64_t begin = 0;         ///< Runtime::now() terms
  std::uint64_t end = 0;           ///< Runtime::now() terms
  std::uint32_t delayed[kMaxEventTypes] = {};  ///< by type
  std::uint32_t delayed_total = 0;
  std::uint64_t delayed_wait_max = 0;  ///< longest post -> dispatch wait among them, ticks
  std::uint32_t irqs_lost = 0;     ///< interrupts lost (lines full) while it ran
};

struct RuntimeConfig {
  const EventType* types = nullptr;  ///< the firmware's table, indexed by TypeId
  std::size_t type_count = 0;        ///< 1..kMaxEventTypes
  void* app = nullptr;               ///< passed to every handler
};

class Runtime {
 public:
  /// `monitor` must be initialised (the runtime reads each type's threshold from it). `board`
  /// must tick (its now()) from here on: the runtime's clock starts at init().
  Runtime(Board& board, Monitor& monitor) noexcept : board_(board), monitor_(monitor) {}
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // ---- Set-up (before run; lines and timers after init()) ------------------------------------

  /// False when the table is empty or too large, or the monitor is not initialised.
  bool init(const RuntimeConfig& config) noexcept;
  /// A new interrupt line posting `type`; its index (for Action::target), or -1 when the lines
  /// are full or `type` is not in the table. After init(): before it the table is empty, so
  /// every type is unknown and the call returns -1.
  int add_irq_line(TypeId type) noexcept;
  /// A timer posting `type`: periodic every `period_us` (any u32: up to 71.6 minutes, exact),
  /// or one-shot when 0. Inactive until start_timer(). Its id, or -1 when the table is full or
  /// `type` is not in the table. After init(): before it every type is unknown (-1).
  int add_timer(TypeId type, std::uint32_t period_us) noexcept;
  /// Declares `type`'s period and deadline on the loop (Monitor::init_event on the type's
  /// storage): its messages' post stamps are their due times, so their latency is their
  /// lateness. After init(); Status::not_initialised before it or for an unknown type, else
  /// Monitor::init_event's status.
  Status init_event(TypeId type, const EventHealthConfig& config) noexcept;

  IrqLine* lines() noexcept { return lines_; }
  std::size_t line_count() const noexcept { return line_count_; }

  // ---- Loop context (handlers) -------------------------------------------------------------

  /// Arms `timer` to fire `delay_us` from now (any u32: up to 71.6 minutes, exact; then every
  /// period for a periodic timer). An unknown timer is ignored.
  void start_timer(TimerId timer, std::uint32_t delay_us) noexcept;
  void stop_timer(TimerId timer) noexcept;
  /// Queues a message; false when the queue is full (counted as lost).
  bool post(TypeId type, std::uint32_t arg) noexcept;
  /// Starts stage `name` (static, NUL-terminated) of the running dispatch now:
  /// Monitor::stage_at on the loop's clock, so LOOPCANARY_STAGE(runtime, "name") marks it.
  void stage(const char* name) noexcept { monitor_.stage_at(name, static_cast<tick_t>(now())); }

  /// Runs the loop for `duration_us` (0..kMaxRunUs) from now: drain lines, fire timers,
  /// dispatch, idle. False, without running, when duration_us is past kMaxRunUs.
  bool run_for(std::uint64_t duration_us) noexcept;

  /// The loop's clock: the board's now(), extended to 64 bits (a WideTicks value; its low 32
  /// bits are the board's tick). Loop context.
  std::uint64_t now() noexcept { return clock_.update(board_.now()); }

  Board& board() noexcept { return board_; }
  Monitor& monitor() noexcept { return monitor_; }

  // ---- Results (after run, or from the loop) -----------------------------------------------

  const TypeStats& stats(TypeId type) const noexcept { return stats_[type]; }
  /// The core's queue-latency and deadline counters of `type` (dispatches, latency histogram,
  /// maximum, missed periods, deadline misses). Any context.
  EventStats health(TypeId type) const noexcept { return health_[type].stats(); }
  /// The descriptor `type` is dispatched under: the firmware's name and threshold, the
  /// runtime's storage. Block records point at it (BlockRecord::event == &event(type)).
  const Event& event(TypeId type) const noexcept { return events_[type]; }
  std::size_t type_count() const noexcept { return type_count_; }
  const EventType& type(TypeId type) const noexcept { return types_[type]; }
  std::uint32_t dispatches() const noexcept { return dispatches_; }
  /// The loop's window, busy and idle time and dispatches over every run_for() so far.
  const LoopTotals& totals() const noexcept { return totals_; }
  /// Messages still queued (or in the lines) when the run ended.
  std::uint32_t pending() const noexcept { return queue_size_; }
  /// The block span of dispatch number `dispatch`, or null when it was no block or is no
  /// longer kept.
  const BlockSpan* span_of(std::uint32_t dispatch) const noexcept;
  std::uint32_t spans_overwritten() const noexcept { return spans_overwritten_; }

 private:
  struct Timer {
    TypeId type = 0;
    bool active = false;
    bool pending = false;      // its message is queued and not yet dispatched
    std::uint64_t period = 0;  // ticks
    std::uint64_t due = 0;     // now() terms
  };

  void drain_lines() noexcept;
  void fire_timers(std::uint64_t now) noexcept;
  bool next_deadline(std::uint64_t& deadline) const noexcept;
  bool enqueue(const Message& message) noexcept;
  bool dequeue(Message& out) noexcept;
  void dispatch(const Message& message) noexcept;
  void end_dispatch(std::uint64_t at) noexcept;
  void close_span(std::uint64_t at) noexcept;
  void attribute_delay(const Message& message, std::uint64_t dispatched_at) noexcept;
  std::uint32_t irq_overflows() const noexcept;
  void fold_totals(std::uint64_t now) noexcept;

  Board& board_;
  Monitor& monitor_;
  WideTicks clock_;  // now(): read at every turn of the loop, so never a wrap apart
  const EventType* types_ = nullptr;
  std::size_t type_count_ = 0;
  void* app_ = nullptr;
  tick_t threshold_[kMaxEventTypes] = {};
  TypeStats stats_[kMaxEventTypes] = {};
  EventHealth health_[kMaxEventTypes];
  Event events_[kMaxEventTypes] = {};  // the firmware's, pointing at health_

  IrqLine lines_[kMaxIrqLines];
  std::size_t line_count_ = 0;
  std::uint32_t overflows_seen_[kMaxIrqLines] = {};  // line overflows already counted as lost

  Timer timers_[kMaxTimers] = {};
  std::size_t timer_count_ = 0;

  Message queue_[kQueueCapacity] = {};
  std::uint32_t queue_head_ = 0;  // next to dequeue
  std::uint32_t queue_size_ = 0;

  BlockSpan spans_[kMaxBlockSpans] = {};
  std::uint32_t span_count_ = 0;  // spans ever recorded; the latest kMaxBlockSpans are kept
  std::uint32_t spans_overwritten_ = 0;

  std::uint32_t dispatches_ = 0;

  // The dispatch the monitor has open: it ends when the next one begins (back to back) or when
  // the loop goes idle or returns from run_for().
  struct OpenDispatch {
    bool active = false;
    TypeId type = 0;
    std::uint32_t dispatch = 0;          // its number (BlockSpan::dispatch)
    std::uint32_t overflows_before = 0;  // irq_overflows() when it began
    std::uint64_t begin = 0;             // now() terms
  };
  OpenDispatch open_;

  LoopTotals totals_;
  LoopStats folded_;             // the core's counters at the latest fold
  std::uint64_t folded_at_ = 0;  // now() at the latest fold
};

}  // namespace loopcanary::simrt
