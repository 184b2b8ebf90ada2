// SPDX-License-Identifier: MIT
// Health records as time series (docs/tool.md, "health"): per loop (source, qualifier, loop,
// loop index), one point per health record with the window's end on a time axis that survives
// the 32-bit tick wrap. Shared by `loopcanary health` and the HTML export's charts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "model.hpp"

namespace loopcanary::tool {

/// One event type in one point: the health record's `events` entry for it.
struct HealthEventPoint {
  std::uint32_t event = 0;  ///< index into HealthSeries::events
  std::uint64_t dispatches = 0, rate_mhz = 0, p50_us = 0, p95_us = 0, p99_us = 0, max_latency_us = 0;
  std::uint64_t deadline_misses = 0, missed_periods = 0, period_us = 0, deadline_us = 0;
};

/// One health record of a series.
struct HealthPoint {
  double time_s = 0;  ///< the window's end, s: ticks / tick_hz, unwrapped (below)
  std::optional<std::int64_t> wall_ms;  ///< the record's wall time (linux.time), when it has one
  std::uint64_t number = 0, window_us = 0, dispatches = 0, rate_mhz = 0, load_permille = 0;
  std::optional<std::uint64_t> idle_permille;  ///< unknown when the loop reports no idle time
  std::uint64_t blocks = 0, hangs = 0, health_dropped = 0;
  std::vector<HealthEventPoint> events;  ///< in the record's order
};

/// The health records of one loop of one log, in input order.
struct HealthSeries {
  std::string source, qualifier, loop;
  std::uint64_t loop_index = 0;
  std::vector<std::string> events;   ///< the event names met, in order of first appearance
  std::deque<HealthPoint> points;    ///< at most kMaxHealthPoints, the latest
  std::uint64_t dropped = 0;         ///< older points not kept (over kMaxHealthPoints)
  std::uint64_t numbering_gaps = 0;  ///< health records missing between two numbers (the device's ring dropped them)
  // Unwrapping state.
  bool started = false;
  std::uint64_t last_end = 0;
  std::uint64_t last_number = 0;
};

/// Points kept per series; older ones are counted in HealthSeries::dropped.
inline constexpr std::size_t kMaxHealthPoints = 100000;

/// Collects health records into series. Time axis: the first record's window end is end /
/// tick_hz; each later one adds (end − previous end) modulo 2^32 ticks (the core's tick width),
/// so a counter that wraps between two records does not send the time back. A record whose
/// number is not above the previous one (a restarted writer) adds its own window instead. With
/// tick_hz 0, the windows (window_us) are added up.
class HealthCollector {
 public:
  /// Adds one record (Reader::HealthCallback) to its series, creating the series.
  void add(const HealthLog& record);
  /// The series, in order of first appearance.
  const std::vector<HealthSeries>& series() const noexcept { return series_; }
  /// Health records added.
  std::uint64_t records() const noexcept { return records_; }

 private:
  std::vector<HealthSeries> series_;
  std::map<std::tuple<std::string, std::string, std::string, std::uint64_t>, std::size_t> index_;
  std::uint64_t records_ = 0;
};

/// "12.3" from thousandths per second (rate_mhz), rounded down to 0.1 as the core's text form.
std::string rate_text(std::uint64_t rate_mhz);
/// "92.3" from per mille, rounded down to 0.1.
std::string permille_text(std::uint64_t permille);

}  // namespace loopcanary::tool
