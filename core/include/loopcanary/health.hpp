// SPDX-License-Identifier: MIT
// Loop health beyond blocks: each event type's queue latency and deadlines (EventHealth), and
// the window arithmetic that turns two snapshots of counters into a rate and a load.
//
// Queue latency: the loop's queue stamps each message with its post time (a tick_t; for a
// periodic event, the time it was due), and Monitor::begin_at(event, now, posted) records
// now - posted into the event's EventHealth, when the event's descriptor points at one
// (Event::health). An event without storage records nothing and costs nothing more.
//
//   loopcanary::EventHealth g_control_health;                       // static storage
//   constexpr loopcanary::Event kControl{"control_tick", 0, &g_control_health};
//   monitor.init_event(kControl, {10'000, 2'000});  // periodic 10 ms, late past 2 ms: a miss
//   ...
//   monitor.begin_at(kControl, now, message.posted);
//
// Rate and load over a window: take two snapshots (EventHealth::stats(), Monitor::stats()) and
// the clock at each; difference() and dispatches_between() give the counts in between, and
// rate_mhz() / share_permille() turn them into per-second and per-mille figures.
#pragma once

#include <atomic>
#include <cstdint>

#include "loopcanary/compiler.hpp"
#include "loopcanary/config.hpp"
#include "loopcanary/histogram.hpp"
#include "loopcanary/status.hpp"
#include "loopcanary/sync.hpp"
#include "loopcanary/time.hpp"

namespace loopcanary {

class Monitor;

namespace detail {
// EventHealth's latency histogram: each latency counted at once, or (CountsLater, x86:
// kHistogramCountsLater, histogram.hpp, says why) at the event's next record, so the counter's
// address no longer depends on the clock read the dispatch just took. Counting later, `pending_`
// holds the latest latency's bucket once `started_` is 1, and readers add it in: a reading
// between records is exact, one taken while a record runs may show that bucket one off. Written
// by the loop that dispatches the event only.
template <bool CountsLater = kHistogramCountsLater>
struct LatencyCounters {
  // Counts `d` (ticks) on the hot path; counting later, only once a count() has run.
  LOOPCANARY_INLINE void count_usual(tick_t d) noexcept { histogram.count(d); }
  // Counts `d`, any time.
  void count(tick_t d) noexcept { histogram.count(d); }
  // Bucket i into out[i]. Any context.
  void read_buckets(std::uint32_t (&out)[kHistogramBuckets]) const noexcept { histogram.read_buckets(out); }

  Log2Histogram histogram;
};
template <>
struct LatencyCounters<true> {
  // Counts the previous latency and keeps `d`'s bucket for the next: one add to a counter whose
  // address is known long before, and a store. Only once a count() has run (started_).
  LOOPCANARY_INLINE void count_usual(tick_t d) noexcept {
    histogram.count_in_bucket(load_relaxed(pending_));
    store_relaxed(pending_, top_bit(d | 1u));
  }
  // Counts the previous latency, if any, and keeps `d`'s bucket.
  void count(tick_t d) noexcept {
    if (load_relaxed(started_) != 0) histogram.count_in_bucket(load_relaxed(pending_));
    store_relaxed(pending_, top_bit(d | 1u));
    store_relaxed(started_, 1u);
  }
  // Bucket i into out[i], the pending latency included. Any context.
  void read_buckets(std::uint32_t (&out)[kHistogramBuckets]) const noexcept {
    histogram.read_buckets(out);
    if (load_relaxed(started_) != 0) ++out[load_relaxed(pending_)];
  }

  Log2Histogram histogram;
  std::atomic<std::uint32_t> pending_{0};  // 0..31: the latest latency's bucket
  std::atomic<std::uint32_t> started_{0};  // 1 once a latency is pending
};
}  // namespace detail

/// Deadlines of one event type, for Monitor::init_event(). Times are microseconds, converted
/// to ticks at the loop's tick_hz once, by init_event(). Zero-initialised: no period and no
/// deadline (queue latency alone, which needs no init_event() at all).
struct EventHealthConfig {
  /// The event is due every period_us (a periodic timer, a frame): each dispatch counts
  /// lateness / period whole missed periods (EventStats::missed_periods). 0: not periodic.
  /// Otherwise 1 tick at tick_hz .. kMaxIntervalTicks ticks (period_below_one_tick,
  /// period_too_long).
  std::uint32_t period_us = 0;
  /// A dispatch whose lateness (post -> dispatch latency; for a periodic event, dispatch time -
  /// due time) is longer than this (strictly) is a deadline miss (EventStats::deadline_misses),
  /// periodic or not. 0: no deadline. Otherwise 1 tick at tick_hz .. kMaxIntervalTicks ticks
  /// (deadline_below_one_tick, deadline_too_long).
  std::uint32_t deadline_us = 0;
};

/// A snapshot of one event type's counters (EventHealth::stats()), or the difference of two
/// (difference()). Every 32-bit counter wraps at 2^32: difference() takes modular differences,
/// exact while fewer than 2^32 of each count happen between the two snapshots.
struct EventStats {
  /// Dispatches recorded (begin_at with a post stamp): the total of `latency`, modulo 2^32.
  std::uint32_t dispatches = 0;
  /// Longest latency recorded since the start, ticks (0..kMaxIntervalTicks). Not windowed:
  /// difference() keeps the later snapshot's.
  tick_t max_latency = 0;
  /// Dispatches later than the deadline (EventHealthConfig::deadline_us).
  std::uint32_t deadline_misses = 0;
  /// Sum over the dispatches of a periodic event of lateness / period (whole periods), modular.
  std::uint32_t missed_periods = 0;
  /// Dispatches whose post stamp reads more than kMaxIntervalTicks before their dispatch
  /// stamp: a post stamp ahead of the loop's clock (a clock step, a stamp from another clock)
  /// or a wait longer than half the wrap, which cannot be told apart. Counted in the histogram
  /// as latency 0, and in nothing else.
  std::uint32_t posted_ahead = 0;
  /// The configuration in ticks (0: not periodic / no deadline).
  tick_t period_ticks = 0;
  tick_t deadline_ticks = 0;
  /// Latency histogram: latency[i] counts latencies d (ticks) with floor(log2(d)) == i (d == 0
  /// in 0). histogram_percentile(latency, 500 / 950 / 990) gives p50 / p95 / p99.
  std::uint32_t latency[kHistogramBuckets] = {};
};

/// The counters between two snapshots of one event type, `before` taken first: each counter's
/// modular difference (dispatches, deadline_misses, missed_periods, posted_ahead, every latency
/// bucket). max_latency, period_ticks and deadline_ticks are `after`'s. Any context.
EventStats difference(const EventStats& before, const EventStats& after) noexcept;

/// A latency percentile of `stats` (a snapshot or a difference()), in ticks:
/// histogram_percentile(stats.latency, permille), the upper bound of the log2 bucket that holds
/// it, capped at stats.max_latency (no latency counted is longer). 0 when nothing was counted.
/// Any context; off the hot path.
tick_t latency_percentile(const EventStats& stats, std::uint32_t permille) noexcept;

/// The queue-latency and deadline counters of one event type: 128 bytes of histogram and 28 of
/// counters and configuration (on x86 8 more: the latest latency's bucket, counted at the next
/// record), and the health records' window start. Give it static storage, point the event's
/// descriptor at it (Event::health), and dispatch that event on one loop only: that loop is the
/// counters' only writer. All zero at construction (a static one costs no start-up code and no initialised
/// data), which is queue latency alone; Monitor::init_event() adds a period and a deadline.
class EventHealth {
 public:
  constexpr EventHealth() noexcept = default;
  EventHealth(const EventHealth&) = delete;
  EventHealth& operator=(const EventHealth&) = delete;

  /// The counters, one by one (a snapshot taken while the loop records may show one counter a
  /// dispatch ahead of another). Any context.
  EventStats stats() const noexcept;

  /// The deadline in ticks (0: none). Any context.
  tick_t deadline_ticks() const noexcept { return detail::load_relaxed(deadline_); }

  /// The counters since the previous call (the first: since the start): difference() of the
  /// previous snapshot and a new one, which becomes the next window's start. For the one
  /// consumer of windows (a watchdog's health records); watchdog context.
  EventStats take_window() noexcept {
    const EventStats now = stats();
    const EventStats window = difference(window_start_, now);
    window_start_ = now;
    return window;
  }

 private:
  friend class Monitor;

  // Records one dispatch's latency (ticks) when it changes nothing but the histogram (below
  // watch_end_) and returns true; false for any other (the first, a new maximum, a deadline
  // miss, a missed period or a stamp ahead), which record_unusual() must take, out of line.
  // Loop context.
  LOOPCANARY_INLINE bool record_usual(tick_t latency) noexcept {
    if (latency >= watch_end_) return false;
    latency_.count_usual(latency);
    return true;
  }
  // Records a latency at or above watch_end_ (the first one too): updates the counters, counts
  // it in the histogram (a stamp ahead as 0); true for a deadline miss. Out of line, on the rare
  // path (its caller is Monitor::record_unusual_latency, itself out of line).
  bool record_unusual(tick_t latency) noexcept;
  // Validates and applies `config` at `tick_hz` (> 0). Loop context.
  Status configure(const EventHealthConfig& config, std::uint32_t tick_hz) noexcept;
  // The largest latency that changes nothing but the histogram: min(max latency, deadline,
  // period - 1), those that are set; at most kMaxIntervalTicks.
  tick_t watch() const noexcept;

  detail::LatencyCounters<> latency_;  // first: record_usual() indexes it with no offset to add
  // Loop-private: 1 + watch() once a latency is recorded; 0 before, so the first record is
  // record_unusual()'s (which starts a histogram that counts later).
  tick_t watch_end_ = 0;
  std::atomic<tick_t> max_latency_{0};
  std::atomic<std::uint32_t> deadline_misses_{0};
  std::atomic<std::uint32_t> missed_periods_{0};
  std::atomic<std::uint32_t> posted_ahead_{0};
  std::atomic<tick_t> period_{0};    // ticks; 0: not periodic
  std::atomic<tick_t> deadline_{0};  // ticks; 0: none
  EventStats window_start_;          // take_window()'s: written by the watchdog only
};

/// Events per second, in thousandths (milli-events per second: 50 Hz is 50'000), for `events`
/// counted over `window_ticks` ticks at `tick_hz` (> 0), rounded down. The window is shorter
/// than one wrap of the tick counter (a ticks_between() of two clock readings). Returns 0 for
/// an empty window (0 ticks) or tick_hz 0, and 0xFFFFFFFF (saturated) for rates of 2^32 mHz
/// (about 4.3 million per second) and above. Any context; off the hot path (64-by-32 divisions).
std::uint32_t rate_mhz(std::uint32_t events, tick_t window_ticks, std::uint32_t tick_hz) noexcept;

/// `part_ticks` as a share of `window_ticks`, per mille, rounded down, at most 1000: the load
/// (busy ticks) or idle share of a window. Returns 0 for an empty window. A part longer than
/// its window (busy_ticks counts a dispatch when it ends, whole, though it began before the
/// window) reads 1000. The same rule gives every share of a record's samples that a form prints
/// (a top stack's, a wait object's, the culprit's: count of samples taken). Any context.
std::uint32_t share_permille(tick_t part_ticks, tick_t window_ticks) noexcept;

}  // namespace loopcanary
