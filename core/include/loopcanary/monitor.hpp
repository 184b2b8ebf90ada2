// SPDX-License-Identifier: MIT
// Monitor: the per-loop dispatch stamps, statistics, named-scope stack and block notes.
//
// One loop (the single writer) calls begin_at()/end_at() around each dispatch; any number of
// readers (a watchdog thread, a timer ISR, a signal handler) read the stamps lock-free.
//
// Stamp protocol (docs/design.md has the full argument):
//   seq    32-bit word: 2n when idle after n dispatches, 2n+1 while dispatch n+1 runs.
//   begin  begin timestamp of the dispatch `seq` names (valid when seq is odd).
//   event  descriptor of that dispatch.
//   begin_at: release fence; begin = now; event = &ev; seq = 2n+1 (release store)
//   end_at:   statistics; block note when over threshold; seq = 2n+2 (release store)
//             (so seq / 2 is also the number of dispatches ended)
//   next_at:  end_at then begin_at at one stamp. Within the threshold: statistics;
//             seq = 2n+2 (relaxed store: begin_at's leading fence orders it before the new
//             data); begin_at's stores (seq = 2n+3). A reader may see 2n+2 in passing.
//   reader:   s1 = seq (acquire); if odd, read begin and event; acquire fence; s2 = seq.
//             s1 == s2 -> a consistent snapshot of dispatch s1. Otherwise the writer moved on:
//             the reader gives up this attempt (it never waits for the writer).
// The data of dispatch n+2 is written only after seq left 2n+1 (the leading release fence
// orders the end store of seq before them), so a reader that saw new data also sees a new seq.
//
// Hot path cost: two clock reads (by the caller; one per dispatch with next_at), a handful of
// plain loads and stores of 32-bit words, no read-modify-write, no call, no lock. A dispatch over the loop's threshold
// takes one out-of-line call that decides with the event's own threshold and queues a note for
// the watchdog; a full note queue is counted, never silent.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/compiler.hpp"
#include "loopcanary/config.hpp"
#include "loopcanary/event.hpp"
#include "loopcanary/health.hpp"
#include "loopcanary/histogram.hpp"
#include "loopcanary/spsc_ring.hpp"
#include "loopcanary/status.hpp"
#include "loopcanary/sync.hpp"
#include "loopcanary/time.hpp"

namespace loopcanary {

class Watchdog;

namespace detail {
// The duration histogram (histogram.hpp) as a base of Monitor, so that without it
// (LOOPCANARY_HISTOGRAM=0) it takes no byte, and with it it sits at the object's address:
// end() indexes its counters with no offset to add.
template <bool Enabled, bool CountsLater = kHistogramCountsLater>
struct HistogramCounters : Log2Histogram {};
template <bool CountsLater>
struct HistogramCounters<false, CountsLater> {
  LOOPCANARY_INLINE void count(tick_t /*duration*/) noexcept {}
  std::uint32_t bucket(std::size_t /*log2*/) const noexcept { return 0; }
};
// Counting each duration at the next count() (x86: kHistogramCountsLater, histogram.hpp, says
// why): the loop's own word `pending_` holds
// 1 + floor(log2(d)) of the latest duration (0 before the first), which readers add to its
// bucket, so a reading while the loop is between count()s is exact; one taken while count()
// runs may show that bucket one ahead.
template <>
struct HistogramCounters<true, true> {
  // Loop context: counts the previous duration, keeps `d`'s bucket for the next call.
  LOOPCANARY_INLINE void count(tick_t d) noexcept {
    bump(counters_[load_relaxed(pending_)]);  // its address is known long before this call
    store_relaxed(pending_, top_bit(d | 1u) + 1u);  // x86: BSR and one add
  }
  std::uint32_t bucket(std::size_t log2) const noexcept {
    if (log2 >= kHistogramBuckets) return 0;
    const std::uint32_t pending = load_relaxed(pending_);
    return load_relaxed(counters_[log2 + 1u]) + (pending == log2 + 1u ? 1u : 0u);
  }

 private:
  std::atomic<std::uint32_t> counters_[kHistogramBuckets + 1] = {};  // [0]: before the first
  std::atomic<std::uint32_t> pending_{0};
};
}  // namespace detail

/// Per-loop configuration. Times are microseconds (32-bit: at most 2^32 - 1 us, 71.6 minutes)
/// and are converted to ticks once, at init. What bounds them is the tick counter: the hang
/// limit, and with it the threshold and the sample interval, must stay below half the counter's
/// wrap period at tick_hz (kMaxIntervalTicks ticks: 2147.48 s at 1 MHz, 1073.7 s at 2 MHz,
/// 85.9 s at 25 MHz, 4.47 s at 480 MHz; the whole 32-bit range at 32768 Hz). init() refuses a
/// value outside its range with the Status naming the field.
/// The defaults follow BlockCanary's (1 s threshold) but arm much earlier (25 %), so a culprit
/// that ran early in a long dispatch is still sampled.
struct MonitorConfig {
  /// Loop name printed in reports. Static, non-empty.
  const char* name = "loop";
  /// Tick rate of the clock that stamps this loop, in Hz (> 0). The port provides it.
  std::uint32_t tick_hz = 0;
  /// A dispatch longer than this (strictly) is a block. At least one tick at tick_hz ..
  /// hang_limit_us (threshold_zero, threshold_below_one_tick, hang_limit_below_threshold).
  std::uint32_t threshold_us = 1'000'000;
  /// The watchdog starts sampling a dispatch once it has run arm_permille / 1000 of the
  /// threshold. 0..999 (0 samples from the first poll of every dispatch).
  std::uint16_t arm_permille = 250;
  /// Stack-sample interval once armed. 1 tick .. threshold_us (sample_interval_zero,
  /// sample_interval_below_one_tick, sample_interval_above_threshold). The default suits thresholds
  /// from 10 ms up (a 1 s block gets 75 samples, the record keeps the latest
  /// LOOPCANARY_MAX_SAMPLES and counts all in its top frames); set it for shorter thresholds.
  std::uint32_t sample_interval_us = 10'000;
  /// A dispatch still running after this long is reported as a hang (the event may never
  /// end). threshold_us .. half the tick counter's wrap period at tick_hz: at most
  /// kMaxIntervalTicks ticks (hang_limit_below_threshold, hang_limit_too_long).
  std::uint32_t hang_limit_us = 5'000'000;
  /// Opaque handle passed back to the HAL callbacks for this loop (the loop thread on Linux,
  /// the simulated thread in the sim port). May be null.
  void* context = nullptr;
};

/// Tick limits of one event kind on one loop, resolved from the loop's configuration and the
/// event's own threshold.
struct Limits {
  tick_t threshold;  ///< a dispatch longer than this is a block
  tick_t arm;        ///< start sampling at this elapsed time (< threshold)
  tick_t interval;   ///< sample interval once armed (>= 1)
  tick_t hang;       ///< report a hang past this elapsed time (>= threshold)
};

/// A consistent view of a loop's stamps.
struct StampSnapshot {
  std::uint32_t seq = 0;          ///< odd while a dispatch runs
  tick_t begin = 0;               ///< begin timestamp (valid when in_dispatch())
  const Event* event = nullptr;   ///< event being dispatched (valid when in_dispatch())
  bool in_dispatch() const noexcept { return (seq & 1u) != 0; }
};

/// The start of one named stage of a dispatch (Monitor::stage_at).
struct StageMark {
  const char* name;  ///< static, NUL-terminated
  tick_t start;      ///< loop clock, port ticks
};

namespace detail {
// The stage marks a BlockNote carries: none, and no byte, when LOOPCANARY_MAX_STAGES is 0.
template <std::size_t N>
struct NoteStages {
  std::uint8_t stage_count;  // stages[0, stage_count): the dispatch's marks
  StageMark stages[N];
};
template <>
struct NoteStages<0> {
  static constexpr std::uint8_t stage_count = 0;
  static constexpr const StageMark* stages = nullptr;
};

// A loop's stage marks (Monitor::stage_at, docs/design.md "Stages"), as a base of Monitor: no
// byte when LOOPCANARY_MAX_STAGES is 0, and then every mark is dropped.
//   word: (dispatch number modulo 2^27) << 5 | marks published (0..16)
//   begin: begin stamp of the marked dispatch (loop-private)
template <std::size_t N>
class StageBoard {
 public:
  // Loop context. `seq` odd (a dispatch runs); false when the mark is not kept (count it). Out
  // of line: a mark is not on the begin/end path, and inlined at each call site it would cost
  // ~140 bytes of flash per mark on Cortex-M3.
  LOOPCANARY_NOINLINE bool mark(std::uint32_t seq, tick_t begin, const char* name, tick_t now) noexcept {
    const std::uint32_t dispatch = dispatch_bits(seq);
    std::uint32_t w = load_relaxed(word_);
    // The marks belong to the dispatch in word_ begun at begin_: both must match, as the
    // dispatch bits come back after 2^27 dispatches.
    if ((w & ~kCountMask) != dispatch || begin_ != begin) {
      // This dispatch's first mark: a reader that then sees any overwritten mark also sees the
      // new word (the fence orders them) and gives up.
      store_relaxed(word_, dispatch);
      begin_ = begin;
      fence_release();
      w = dispatch;
    }
    const std::uint32_t count = w & kCountMask;
    if (count == N) return false;
    store_relaxed(names_[count], name);
    store_relaxed(starts_[count], now);
    store_release(word_, w + 1u);
    return true;
  }

  // Any context: one attempt at the marks of dispatch `seq` (see Monitor::stage_snapshot).
  bool read(std::uint32_t seq, StageMark* out, std::size_t& count) const noexcept {
    const std::uint32_t w1 = load_acquire(word_);
    std::size_t n = 0;
    if ((w1 & ~kCountMask) == dispatch_bits(seq)) {
      n = w1 & kCountMask;
      for (std::size_t i = 0; i < n; ++i) out[i] = StageMark{load_relaxed(names_[i]), load_relaxed(starts_[i])};
    }
    fence_acquire();
    if (load_relaxed(word_) != w1) return false;
    count = n;
    return true;
  }

  // Loop context: the marks of dispatch `seq` begun at `begin` into `note` (its own: never torn).
  void copy_to(std::uint32_t seq, tick_t begin, NoteStages<N>& note) const noexcept {
    std::size_t count = 0;
    if (begin_ == begin) read(seq, note.stages, count);
    note.stage_count = static_cast<std::uint8_t>(count);
  }

 private:
  static constexpr std::uint32_t kCountMask = 0x1Fu;
  static_assert(N <= kCountMask, "the mark count must fit the word's low bits");
  static LOOPCANARY_INLINE std::uint32_t dispatch_bits(std::uint32_t seq) noexcept { return (seq >> 1) << 5; }

  std::atomic<std::uint32_t> word_{0};
  tick_t begin_ = 0;
  std::atomic<const char*> names_[N] = {};
  std::atomic<tick_t> starts_[N] = {};
};
template <>
class StageBoard<0> {
 public:
  LOOPCANARY_INLINE bool mark(std::uint32_t, tick_t, const char*, tick_t) noexcept { return false; }
  bool read(std::uint32_t, StageMark*, std::size_t& count) const noexcept {
    count = 0;
    return true;
  }
  void copy_to(std::uint32_t, tick_t, NoteStages<0>&) const noexcept {}
};
}  // namespace detail

struct BlockNote;
namespace detail {
struct WatchdogTrack;

// The event types a loop lists in its health records (Monitor::init_event): none, and no byte,
// when LOOPCANARY_HEALTH_EVENTS is 0. Written by the loop, the count last.
template <std::size_t N>
class HealthEventList {
 public:
  // True when `event` is listed now (or was already); false when the list is full.
  bool list(const Event& event) noexcept {
    const std::uint32_t listed = load_relaxed(count_);
    if (position(event) < listed) return true;
    if (listed == N) return false;
    events_[listed] = &event;
    store_release(count_, listed + 1u);  // the pointer before the count
    return true;
  }
  // True when `event` is not listed and there is no room for it.
  bool full_without(const Event& event) const noexcept {
    const std::uint32_t listed = load_relaxed(count_);
    return listed == N && position(event) == listed;
  }
  const Event* const* read_events(std::size_t& count) const noexcept {
    count = load_acquire(count_);
    return events_;
  }

 private:
  // Index of `event` in the list; the count when it is not listed. Loop context.
  std::uint32_t position(const Event& event) const noexcept {
    const std::uint32_t listed = load_relaxed(count_);
    std::uint32_t i = 0;
    while (i < listed && events_[i] != &event) ++i;
    return i;
  }

  const Event* events_[N] = {};
  std::atomic<std::uint32_t> count_{0};
};
template <>
class HealthEventList<0> {
 public:
  bool list(const Event&) noexcept { return true; }  // lists nothing
  bool full_without(const Event&) const noexcept { return false; }
  const Event* const* read_events(std::size_t& count) const noexcept {
    count = 0;
    return nullptr;
  }
};

/// How the watchdog handles a note that is not a block's (BlockNote::handler).
using NoteHandler = void (*)(Watchdog& watchdog, WatchdogTrack& track, const BlockNote& note, bool suppressed);
/// The watchdog's handler of deadline-miss notes (watchdog.cpp). Named only where a deadline
/// miss is queued (Monitor::deadline_missed), so a firmware without deadlines links none of it.
void report_deadline_note(Watchdog& watchdog, WatchdogTrack& track, const BlockNote& note, bool suppressed) noexcept;
}  // namespace detail

/// A block the loop saw end: queued by end_at() for the watchdog, which turns it into a
/// final record (with samples when it watched the dispatch, without when it was too short).
/// Its stage marks are its base: stage_count, stages[0, stage_count) (none, and no byte, when
/// LOOPCANARY_MAX_STAGES is 0). A deadline-miss note (begin_at with a post stamp) has no marks
/// and an even seq: the late dispatch's seq - 1; begin is its due time, end its begin stamp,
/// event the late event.
struct BlockNote : detail::NoteStages<kMaxStages> {
  std::uint32_t seq;    ///< odd seq of the dispatch (a block); even: a deadline miss
  tick_t begin;
  tick_t end;
  const Event* event;
};

/// Per-loop counters. Each counter is read atomically; the set is read counter by counter, so
/// a snapshot taken while end() runs may show one counter a dispatch ahead of another.
/// 32-bit counters wrap; take modular differences (busy_ticks wraps like the clock, dispatches
/// at 2^31: mask differences with 0x7FFFFFFF).
struct LoopStats {
  std::uint32_t dispatches = 0;         ///< dispatches ended (outermost only); wraps at 2^31
  std::uint32_t blocks = 0;             ///< dispatches that ended over their threshold
  std::uint32_t hangs = 0;              ///< dispatches the watchdog reported as hung
  tick_t max_duration = 0;              ///< longest dispatch, ticks
  tick_t busy_ticks = 0;                ///< sum of dispatch durations, ticks, modular
  /// Sum of the waits the loop reported with Monitor::add_idle(), ticks, modular (0 when the
  /// loop reports none).
  tick_t idle_ticks = 0;
  std::uint32_t nested = 0;             ///< begin() calls inside a dispatch (folded into it)
  std::uint32_t unbalanced_ends = 0;    ///< end() calls with no dispatch running (ignored)
  std::uint32_t notes_dropped = 0;      ///< blocks the watchdog could not be told about in time
  /// Deadline misses (counted in their EventHealth) the watchdog could not be told about: the
  /// note ring was full, so no deadline_miss report.
  std::uint32_t deadline_notes_dropped = 0;
  std::uint32_t scope_overflows = 0;    ///< scope pushes deeper than LOOPCANARY_SCOPE_DEPTH
  std::uint32_t scope_underflows = 0;   ///< scope pops with no scope pushed (ignored)
  /// Stage marks not kept: past LOOPCANARY_MAX_STAGES in one dispatch, or with no dispatch
  /// running.
  std::uint32_t stages_dropped = 0;
  /// Dispatches whose end stamp reads more than half the wrap (kMaxIntervalTicks) after their
  /// begin stamp: the clock stepped back during the dispatch, or the dispatch ran longer than
  /// half the wrap, which cannot be told apart. Not a block; the fields above take the
  /// difference as read (end - begin modulo the wrap, so a step back reads near 2^32 ticks).
  std::uint32_t clock_steps_back = 0;
  std::uint32_t tick_hz = 0;            ///< for converting the tick fields
  /// Dispatch durations: histogram[i] counts d (ticks) with floor(log2(d)) == i (d == 0 in 0);
  /// histogram_percentile() reads percentiles from it.
  /// All zero when the build leaves the histogram out (has_histogram false).
  std::uint32_t histogram[kHistogramBuckets] = {};
  bool has_histogram = kHistogram;  ///< LOOPCANARY_HISTOGRAM of this build
};

/// Dispatches that ended between two readings of LoopStats::dispatches, `before` taken first:
/// LoopStats::dispatches wraps at 2^31, so the difference is masked with 0x7FFFFFFF (exact
/// while fewer than 2^31 dispatches end between them). With the ticks between the snapshots,
/// rate_mhz() gives the loop's dispatch rate. Any context.
constexpr std::uint32_t dispatches_between(std::uint32_t before, std::uint32_t after) noexcept {
  return (after - before) & 0x7FFF'FFFFu;
}
/// dispatches_between() of two snapshots' LoopStats::dispatches.
constexpr std::uint32_t dispatches_between(const LoopStats& before, const LoopStats& after) noexcept {
  return dispatches_between(before.dispatches, after.dispatches);
}

/// The loop's load between two snapshots, `before` taken first, `window_ticks` (the clock's
/// ticks_between() the two, under one wrap) apart: the busy share of the window per mille,
/// share_permille(busy_ticks difference, window_ticks). Any context.
inline std::uint32_t load_permille(const LoopStats& before, const LoopStats& after, tick_t window_ticks) noexcept {
  return share_permille(ticks_between(before.busy_ticks, after.busy_ticks), window_ticks);
}

/// The loop's idle share between two snapshots (as load_permille(), from the waits the loop
/// reported with Monitor::add_idle()). Any context.
inline std::uint32_t idle_permille(const LoopStats& before, const LoopStats& after, tick_t window_ticks) noexcept {
  return share_permille(ticks_between(before.idle_ticks, after.idle_ticks), window_ticks);
}

/// The stamps, statistics and scope stack of one event loop. Not copyable; give it static
/// storage (or any storage that outlives its registration with a watchdog). Constexpr and all
/// zero until init(): a static Monitor costs no start-up code and no initialised data.
class Monitor : private detail::HistogramCounters<kHistogram>,
                private detail::StageBoard<kMaxStages>,
                private detail::HealthEventList<kHealthEvents> {
 public:
  constexpr Monitor() noexcept = default;
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  /// Validates `config` and applies it. Loop context, before the monitor is added to a
  /// watchdog (dispatches before init() are counted, never reported as blocks). Returns
  /// Status::ok, or the status naming the first invalid field (the monitor then keeps its
  /// previous configuration), or Status::already_initialised once a watchdog watches this
  /// monitor.
  Status init(const MonitorConfig& config) noexcept;

  /// True after a successful init().
  bool initialised() const noexcept { return tick_hz_ != 0; }

  // ---- Hot path: loop context only --------------------------------------------------------

  /// Marks the start of a dispatch of `event` at `now` (port ticks). Loop context only. A
  /// begin() inside a running dispatch (a handler that pumps the loop) is folded into the
  /// outer dispatch and counted in LoopStats::nested; its end() closes only the nesting.
  LOOPCANARY_INLINE void begin_at(const Event& event, tick_t now) noexcept {
    const std::uint32_t s = detail::load_relaxed(seq_);
    if ((s & 1u) != 0) {
      open_end_ = (open_end_ & 1u) == 0 ? 1u : open_end_ + 2u;  // one nesting level deeper
      detail::bump(nested_);
      return;
    }
    open_dispatch(event, s, now);
  }

  /// begin_at(event, now) for a message the loop's queue stamped at `posted` (port ticks: when
  /// it was posted, or for a periodic event when it was due), and records its queue latency
  /// now - posted (wrap-safe) into event.health when the event has storage (health.hpp): the
  /// latency histogram, the maximum, and, as configured by init_event(), missed periods and
  /// deadline misses. Loop context only, on the one loop that dispatches `event`; a nested
  /// dispatch records its latency too. Without storage it is begin_at(event, now) plus one
  /// load and test. A `posted` more than kMaxIntervalTicks before `now` reads as a stamp ahead
  /// of the clock (EventStats::posted_ahead, latency 0).
  LOOPCANARY_INLINE void begin_at(const Event& event, tick_t now, tick_t posted) noexcept {
    begin_at(event, now);
    record_latency(event, now, posted);
  }

  /// Marks the end of the running dispatch at `now`. Loop context only. Updates the
  /// statistics and, for a block, queues a note for the watchdog. An end() with no dispatch
  /// running is counted in LoopStats::unbalanced_ends and otherwise ignored.
  LOOPCANARY_INLINE void end_at(tick_t now) noexcept {
    const std::uint32_t s = detail::load_relaxed(seq_);
    if (close_dispatch(s, now)) detail::store_release(seq_, s + 1u);
  }

  /// Back-to-back dispatch: ends the running dispatch and begins one of `event`, both at `now`
  /// (port ticks), so a loop that drains its queue reads its clock once per dispatch. Loop
  /// context only. Its effect is exactly end_at(now) then begin_at(event, now): the same
  /// statistics, block note and stage marks for the dispatch it ends, the same nesting rules
  /// (inside a nested dispatch it closes that level and opens another, counted in
  /// LoopStats::nested), and with no dispatch running it counts an unbalanced end and begins.
  /// The loop's own time between two handlers belongs to the dispatch before it; end the last
  /// one (end_at) before the loop waits for work. ScopedDrain (instrument.hpp) pairs the calls
  /// for a draining loop.
  LOOPCANARY_INLINE void next_at(const Event& event, tick_t now) noexcept {
    const std::uint32_t s = detail::load_relaxed(seq_);
    if (!close_dispatch(s, now)) {
      begin_at(event, now);  // the end was taken apart (a block, nesting, nothing running)
      return;
    }
    // The end (seq_ even), not released: open_dispatch()'s leading fence orders it before the
    // new dispatch's data, so a reader that sees the new data also sees seq_ move.
    detail::store_relaxed(seq_, s + 1u);
    open_dispatch(event, s + 1u, now);
  }

  /// next_at(event, now) for a message the loop's queue stamped at `posted`: also records its
  /// queue latency, as begin_at(event, now, posted) does. Loop context only.
  LOOPCANARY_INLINE void next_at(const Event& event, tick_t now, tick_t posted) noexcept {
    next_at(event, now);
    record_latency(event, now, posted);
  }

  /// Adds `ticks` the loop spent waiting for work (its idle wait, when the port can tell) to
  /// LoopStats::idle_ticks (modular). Loop context only; off the hot path, between dispatches.
  void add_idle(tick_t ticks) noexcept { detail::bump(idle_ticks_, ticks); }

  /// Sets the period and deadline of `event` on this loop (its storage, Event::health),
  /// converted to ticks at this loop's tick_hz here, once. Loop context, between dispatches of
  /// `event` (before its first, or to change them: the counters are kept). Returns Status::ok,
  /// not_initialised before init(), event_health_missing when the event has no storage, or the
  /// status naming the invalid EventHealthConfig field (the event then keeps its previous
  /// configuration).
  /// It also lists `event` in this loop's health records (once, however often it is called):
  /// health_events_full when LOOPCANARY_HEALTH_EVENTS are already listed (nothing changed). With
  /// LOOPCANARY_HEALTH_EVENTS 0 nothing is listed and no call fails for it.
  Status init_event(const Event& event, const EventHealthConfig& config) noexcept;

  /// The event types init_event() listed, in order: `count` of them at the pointer returned.
  /// Any context.
  const Event* const* health_events(std::size_t& count) const noexcept { return this->read_events(count); }

  // ---- Named scopes: loop context only ----------------------------------------------------

  /// Pushes `name` (static, NUL-terminated) onto the loop's shadow stack. Loop context only.
  /// Deeper than LOOPCANARY_SCOPE_DEPTH: counted in scope_overflows and not stored, but still
  /// balanced by its pop. Nothing at all in a build without scopes (LOOPCANARY_SCOPE_DEPTH 0).
  LOOPCANARY_INLINE void push_scope(const char* name) noexcept {
    if constexpr (kScopeDepth == 0) {
      static_cast<void>(name);
    } else {
      const std::uint32_t w = detail::load_relaxed(scope_word_);
      const std::uint32_t depth = w & kScopeDepthMask;
      if (depth < kScopeDepth) {
        detail::fence_release();  // the previous pop is ordered before the name it overwrites
        detail::store_relaxed(scopes_[depth], name);
      } else {
        detail::bump(scope_overflows_);
        if (depth == kScopeDepthMask) return;  // 255 deep: the depth saturates (unbalanced)
      }
      detail::store_release(scope_word_, w + kScopeGeneration + 1u);
    }
  }

  /// Pops the innermost scope. Loop context only. A pop with nothing pushed is counted in
  /// scope_underflows and ignored. Nothing at all in a build without scopes.
  LOOPCANARY_INLINE void pop_scope() noexcept {
    if constexpr (kScopeDepth > 0) {
      const std::uint32_t w = detail::load_relaxed(scope_word_);
      if ((w & kScopeDepthMask) == 0) {
        detail::bump(scope_underflows_);
        return;
      }
      detail::store_release(scope_word_, w + kScopeGeneration - 1u);
    }
  }

  // ---- Stages: loop context only -----------------------------------------------------------

  /// Starts stage `name` (static, NUL-terminated: "input", "compute", "output") of the running
  /// dispatch at `now` (port ticks), ending the stage before it. A block record carries each
  /// stage's time (BlockRecord::stages); time before the first mark belongs to no stage, and
  /// the last stage ends with the dispatch. Loop context only, inside a dispatch (a nested
  /// dispatch's marks belong to the outer one). A mark with no dispatch running, or past
  /// LOOPCANARY_MAX_STAGES in one dispatch (every mark, when it is 0), is counted in
  /// LoopStats::stages_dropped and not kept. Costs nothing on begin/end: a dispatch without
  /// marks never touches them.
  LOOPCANARY_INLINE void stage_at(const char* name, tick_t now) noexcept {
    const std::uint32_t s = detail::load_relaxed(seq_);
    if ((s & 1u) == 0 || !this->mark(s, detail::load_relaxed(begin_), name, now)) detail::bump(stages_dropped_);
  }

  // ---- Readers: any context (watchdog thread, timer ISR, signal handler) -------------------

  /// One attempt at a consistent snapshot of the stamps. Never waits: false when the loop
  /// moved during the read (retry at the caller's discretion; a reader that preempts the loop
  /// always succeeds, since the loop cannot move while it runs).
  bool snapshot(StampSnapshot& out) const noexcept {
    const std::uint32_t s1 = detail::load_acquire(seq_);
    StampSnapshot snap;
    snap.seq = s1;
    if ((s1 & 1u) != 0) {
      snap.begin = detail::load_relaxed(begin_);
      snap.event = detail::load_relaxed(event_);
    }
    detail::fence_acquire();
    if (detail::load_relaxed(seq_) != s1) return false;
    out = snap;
    return true;
  }

  /// One attempt at reading the named-scope stack, innermost first, at most `max` names into
  /// `out`. Sets `count` to the number written (the stack may be deeper: pushes beyond
  /// LOOPCANARY_SCOPE_DEPTH are not stored, and then the innermost name read is the deepest
  /// stored one). Never waits: false when the loop pushed or popped during the read (`count`
  /// is then left as it was). A build without scopes (LOOPCANARY_SCOPE_DEPTH 0) reads none.
  bool scope_snapshot(const char** out, std::size_t max, std::size_t& count) const noexcept;

  /// One attempt at reading the stage marks of the dispatch whose odd sequence is `seq`, at most
  /// kMaxStages into `out`, in the order they were made. Sets `count` (0 when that dispatch has
  /// none). Never waits: false when the loop moved on to another dispatch's marks during the
  /// read (`count` is then left as it was).
  bool stage_snapshot(std::uint32_t seq, StageMark* out, std::size_t& count) const noexcept {
    return this->read(seq, out, count);
  }

  /// Statistics, counter by counter (see LoopStats). Any context.
  LoopStats stats() const noexcept;

  /// Limits for `event` on this loop (its own threshold or the loop's). Any context. All zero
  /// before init().
  Limits limits_for(const Event& event) const noexcept;

  /// MonitorConfig::name; null before init().
  const char* name() const noexcept { return name_; }
  void* context() const noexcept { return context_; }
  std::uint32_t tick_hz() const noexcept { return tick_hz_; }

 private:
  friend class Watchdog;

  // Low byte: depth (stored names are at most 64 deep). The upper 24 bits count every push
  // and pop, so a reader stalled across 2^24 of them could be fooled, not one across 2^16.
  static constexpr std::uint32_t kScopeDepthMask = 0xFFu;
  static constexpr std::uint32_t kScopeGeneration = 0x100u;

  // Loop context: publishes the begin of an outermost dispatch of `event` at `now` after the
  // idle (even) `seq`.
  LOOPCANARY_INLINE void open_dispatch(const Event& event, std::uint32_t seq, tick_t now) noexcept {
    detail::fence_release();  // the previous end's stores are ordered before the new data
    detail::store_relaxed(begin_, now);
    detail::store_relaxed(event_, &event);
    detail::store_release(seq_, seq + 1u);
    open_end_ = seq + 2u;
  }

  // Loop context: the end at `now` of what `seq` (seq_ as loaded) shows running. True for an
  // outermost dispatch within its threshold: its statistics are counted and the caller
  // publishes its end (seq_ = seq + 1). False when the end is taken here in full: a block
  // (statistics, note, end published), a nesting level closed, or an unbalanced end counted.
  LOOPCANARY_INLINE bool close_dispatch(std::uint32_t seq, tick_t now) noexcept {
    if (seq + 1u != open_end_) {  // no dispatch running, or a nested one: one compare decides both
      end_unusual(seq);
      return false;
    }
    const tick_t begin = detail::load_relaxed(begin_);
    const tick_t d = ticks_between(begin, now);
    detail::bump(busy_ticks_, d);
    if (d > detail::load_relaxed(max_duration_)) detail::store_relaxed(max_duration_, d);
    this->count(d);  // nothing without the histogram
    if (d > threshold_ticks_) {
      end_over_threshold(seq, begin, now);  // queues the note, then publishes the end
      return false;
    }
    return true;
  }

  // Loop context: the queue latency now - posted of a dispatch of `event` that has begun, into
  // its health storage (none: one load and test). The out-of-line call takes the latency, not
  // `now`, so nothing but the latency outlives the subtraction.
  LOOPCANARY_INLINE void record_latency(const Event& event, tick_t now, tick_t posted) noexcept {
    if (EventHealth* health = event.health) {
      const tick_t latency = ticks_between(posted, now);
      if (!health->record_usual(latency)) record_unusual_latency(event, posted, latency);
    }
  }
  // record_latency() for a latency its event's record_usual() refused: the counters, and for a
  // deadline miss the note (deadline_missed).
  LOOPCANARY_NOINLINE void record_unusual_latency(const Event& event, tick_t posted, tick_t latency) noexcept;

  LOOPCANARY_NOINLINE void end_unusual(std::uint32_t seq) noexcept;
  LOOPCANARY_NOINLINE void end_over_threshold(std::uint32_t seq, tick_t begin, tick_t end) noexcept;
  void deadline_missed(const Event& event, tick_t due, tick_t now) noexcept;

  // Stamps: written by the loop only. What begin/end touch sits together, in one cache line.
  std::atomic<std::uint32_t> seq_{0};
  std::atomic<tick_t> begin_{0};
  std::atomic<const Event*> event_{nullptr};
  // Loop-private: the seq that ends the open dispatch (seq_ + 1, even) exactly while an
  // outermost dispatch runs with nothing nested, so end() tests one word. While idle it is
  // a past end (even: never seq_ + 1, which is odd then; 0 before the first dispatch), and
  // 2 x the nesting depth - 1 (odd, never the even seq_ + 1) while nested begin()s are open.
  std::uint32_t open_end_ = 0;
  tick_t threshold_ticks_ = 0;  // 0 before init(): every dispatch takes end_over_threshold()

  // Statistics: written by the loop only, except hangs_ (the watchdog only). The dispatch
  // count is seq_ / 2.
  std::atomic<std::uint32_t> blocks_{0};
  std::atomic<std::uint32_t> hangs_{0};
  std::atomic<tick_t> max_duration_{0};
  std::atomic<tick_t> busy_ticks_{0};
  std::atomic<tick_t> idle_ticks_{0};
  std::atomic<std::uint32_t> nested_{0};
  std::atomic<std::uint32_t> unbalanced_ends_{0};
  std::atomic<std::uint32_t> notes_dropped_{0};
  std::atomic<std::uint32_t> deadline_notes_dropped_{0};
  std::atomic<std::uint32_t> scope_overflows_{0};
  std::atomic<std::uint32_t> scope_underflows_{0};
  std::atomic<std::uint32_t> stages_dropped_{0};
  std::atomic<std::uint32_t> clock_steps_back_{0};

  // Named-scope stack: (generation << 8) | depth, and the names.
  std::atomic<std::uint32_t> scope_word_{0};
  std::atomic<const char*> scopes_[detail::kScopeSlots] = {};

  // Blocks for the watchdog: the loop produces, the watchdog consumes. init() binds the slots.
  detail::LateBoundSpscRing<BlockNote> notes_;
  detail::Slot<BlockNote> note_slots_[kNoteCapacity];

  // Configuration, fixed between init() and registration (threshold_ticks_ is above); all
  // zero (name_ null) before init().
  tick_t arm_ticks_ = 0;
  tick_t interval_ticks_ = 0;
  tick_t hang_ticks_ = 0;
  std::uint32_t tick_hz_ = 0;
  std::uint16_t arm_permille_ = 0;
  const char* name_ = nullptr;
  void* context_ = nullptr;
  const Watchdog* watchdog_ = nullptr;  // set while a watchdog watches this monitor

  // Event types listed in health records (init_event): written by the loop, the count last.
  // The watchdog's handler of this loop's deadline-miss notes: set with the first one.
  std::atomic<detail::NoteHandler> deadline_handler_{nullptr};
};

// The protocol needs only loads and stores of these words to be atomic. ARMv6-M (Cortex-M0/M0+)
// reports them as not "always lock-free" because it has no read-modify-write; its aligned
// 32-bit loads and stores are atomic, and any read-modify-write would fail to link there.
#if !defined(__ARM_ARCH_6M__)
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "32-bit atomics must be lock-free");
static_assert(std::atomic<const Event*>::is_always_lock_free, "pointer atomics must be lock-free");
#endif

}  // namespace loopcanary
