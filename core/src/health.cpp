// SPDX-License-Identifier: MIT
#include "loopcanary/health.hpp"

#include <cstddef>

namespace loopcanary {

EventStats difference(const EventStats& before, const EventStats& after) noexcept {
  EventStats d = after;
  d.dispatches = after.dispatches - before.dispatches;
  d.deadline_misses = after.deadline_misses - before.deadline_misses;
  d.missed_periods = after.missed_periods - before.missed_periods;
  d.posted_ahead = after.posted_ahead - before.posted_ahead;
  for (std::size_t i = 0; i < kHistogramBuckets; ++i) d.latency[i] = after.latency[i] - before.latency[i];
  return d;
}

tick_t latency_percentile(const EventStats& stats, std::uint32_t permille) noexcept {
  const tick_t p = histogram_percentile(stats.latency, permille);
  return p < stats.max_latency ? p : stats.max_latency;
}

EventStats EventHealth::stats() const noexcept {
  EventStats s;
  latency_.read_buckets(s.latency);
  s.dispatches = static_cast<std::uint32_t>(histogram_total(s.latency));  // modulo 2^32
  s.max_latency = detail::load_relaxed(max_latency_);
  s.deadline_misses = detail::load_relaxed(deadline_misses_);
  s.missed_periods = detail::load_relaxed(missed_periods_);
  s.posted_ahead = detail::load_relaxed(posted_ahead_);
  s.period_ticks = detail::load_relaxed(period_);
  s.deadline_ticks = detail::load_relaxed(deadline_);
  return s;
}

tick_t EventHealth::watch() const noexcept {
  tick_t w = detail::load_relaxed(max_latency_);
  const tick_t deadline = detail::load_relaxed(deadline_);
  const tick_t period = detail::load_relaxed(period_);
  if (deadline != 0 && deadline < w) w = deadline;
  if (period != 0 && period - 1u < w) w = period - 1u;
  return w;
}

bool EventHealth::record_unusual(tick_t latency) noexcept {
  if (latency > kMaxIntervalTicks) {
    detail::bump(posted_ahead_);
    latency_.count(0);  // watch_end_ <= kMaxIntervalTicks + 1: the next one comes here too
    return false;
  }
  if (latency > detail::load_relaxed(max_latency_)) detail::store_relaxed(max_latency_, latency);
  const tick_t deadline = detail::load_relaxed(deadline_);
  const bool missed = deadline != 0 && latency > deadline;
  if (missed) detail::bump(deadline_misses_);
  const tick_t period = detail::load_relaxed(period_);
  if (period != 0 && latency >= period) detail::bump(missed_periods_, static_cast<std::uint32_t>(latency / period));
  latency_.count(latency);
  watch_end_ = watch() + 1u;  // watch() <= kMaxIntervalTicks: no wrap
  return missed;
}

Status EventHealth::configure(const EventHealthConfig& config, std::uint32_t tick_hz) noexcept {
  const std::uint64_t period = ticks_from_us(config.period_us, tick_hz);
  if (config.period_us != 0 && below_one_tick(config.period_us, tick_hz)) return Status::period_below_one_tick;
  if (period > kMaxIntervalTicks) return Status::period_too_long;
  const std::uint64_t deadline = ticks_from_us(config.deadline_us, tick_hz);
  if (config.deadline_us != 0 && below_one_tick(config.deadline_us, tick_hz)) return Status::deadline_below_one_tick;
  if (deadline > kMaxIntervalTicks) return Status::deadline_too_long;
  detail::store_relaxed(period_, static_cast<tick_t>(period));
  detail::store_relaxed(deadline_, static_cast<tick_t>(deadline));
  if (watch_end_ != 0) watch_end_ = watch() + 1u;  // before the first record it stays 0
  return Status::ok;
}

std::uint32_t rate_mhz(std::uint32_t events, tick_t window_ticks, std::uint32_t tick_hz) noexcept {
  if (window_ticks == 0 || tick_hz == 0) return 0;
  const std::uint64_t milli_events = std::uint64_t{events} * 1000u;  // < 2^42
  // events * 1000 * tick_hz / window: the whole part alone at 2^32 saturates, and below it
  // scale() forms no product past 64 bits.
  if (detail::divide(milli_events, window_ticks) > 0xFFFF'FFFFu) return 0xFFFF'FFFFu;
  const std::uint64_t rate = detail::scale(milli_events, tick_hz, window_ticks);
  return rate > 0xFFFF'FFFFu ? 0xFFFF'FFFFu : static_cast<std::uint32_t>(rate);
}

std::uint32_t share_permille(tick_t part_ticks, tick_t window_ticks) noexcept {
  if (window_ticks == 0) return 0;
  if (part_ticks >= window_ticks) return 1000u;
  return static_cast<std::uint32_t>(detail::divide(std::uint64_t{part_ticks} * 1000u, window_ticks));
}

}  // namespace loopcanary
