// SPDX-License-Identifier: MIT
#include "loopcanary/monitor.hpp"

namespace loopcanary {
namespace {

// Validated tick values of a configuration.
struct Resolved {
  tick_t threshold;
  tick_t arm;
  tick_t interval;
  tick_t hang;
};

Status resolve(const MonitorConfig& c, Resolved& r) noexcept {
  if (c.name == nullptr || c.name[0] == '\0') return Status::name_missing;
  if (c.tick_hz == 0) return Status::tick_hz_zero;
  if (c.threshold_us == 0) return Status::threshold_zero;
  if (c.arm_permille >= 1000) return Status::arm_not_below_threshold;
  if (c.sample_interval_us == 0) return Status::sample_interval_zero;
  if (c.sample_interval_us > c.threshold_us) return Status::sample_interval_above_threshold;
  if (c.hang_limit_us < c.threshold_us) return Status::hang_limit_below_threshold;
  const std::uint64_t hang = ticks_from_us(c.hang_limit_us, c.tick_hz);
  if (hang > kMaxIntervalTicks) return Status::hang_limit_too_long;
  if (below_one_tick(c.threshold_us, c.tick_hz)) return Status::threshold_below_one_tick;
  if (below_one_tick(c.sample_interval_us, c.tick_hz)) return Status::sample_interval_below_one_tick;
  const std::uint64_t threshold = ticks_from_us(c.threshold_us, c.tick_hz);
  const std::uint64_t interval = ticks_from_us(c.sample_interval_us, c.tick_hz);
  r.threshold = static_cast<tick_t>(threshold);
  r.arm = static_cast<tick_t>(detail::divide(threshold * c.arm_permille, 1000u));
  r.interval = static_cast<tick_t>(interval);
  r.hang = static_cast<tick_t>(hang);
  return Status::ok;
}

}  // namespace

Status Monitor::init(const MonitorConfig& config) noexcept {
  if (watchdog_ != nullptr) return Status::already_initialised;
  Resolved r{};
  const Status status = resolve(config, r);
  if (status != Status::ok) return status;
  threshold_ticks_ = r.threshold;
  arm_ticks_ = r.arm;
  interval_ticks_ = r.interval;
  hang_ticks_ = r.hang;
  arm_permille_ = config.arm_permille;
  tick_hz_ = config.tick_hz;
  name_ = config.name;
  context_ = config.context;
  notes_.bind(note_slots_, kNoteCapacity);
  return Status::ok;
}

Limits Monitor::limits_for(const Event& event) const noexcept {
  Limits l{threshold_ticks_, arm_ticks_, interval_ticks_, hang_ticks_};
  if (event.threshold_us == 0 || tick_hz_ == 0) return l;  // tick_hz_ 0: not initialised
  std::uint64_t t = ticks_from_us(event.threshold_us, tick_hz_);
  if (t <= threshold_ticks_) return l;  // the loop's threshold is the floor
  if (t > kMaxIntervalTicks) t = kMaxIntervalTicks;  // and half the wrap the ceiling
  // A raised threshold keeps the loop's arm fraction, interval and hang margin.
  const std::uint64_t hang = t + (hang_ticks_ - threshold_ticks_);
  l.threshold = static_cast<tick_t>(t);
  l.arm = static_cast<tick_t>(detail::divide(t * arm_permille_, 1000u));
  l.hang = static_cast<tick_t>(hang < kMaxIntervalTicks ? hang : kMaxIntervalTicks);
  return l;
}

void Monitor::end_unusual(std::uint32_t seq) noexcept {
  if ((seq & 1u) == 0) {
    detail::bump(unbalanced_ends_);  // no dispatch running
    return;
  }
  // Closes one nesting level; the last one returns to the outermost dispatch.
  open_end_ = open_end_ == 1u ? seq + 1u : open_end_ - 2u;
}

void Monitor::end_over_threshold(std::uint32_t seq, tick_t begin, tick_t end) noexcept {
  const Event* event = detail::load_relaxed(event_);
  const tick_t d = ticks_between(begin, end);
  if (d > kMaxIntervalTicks) {
    // The end reads before the begin: the clock stepped back during the dispatch (or it ran
    // longer than half the wrap, which cannot be told apart). Counted, not a block.
    detail::bump(clock_steps_back_);
  } else if (initialised() && d > limits_for(*event).threshold) {
    // Before init() the threshold is 0 and every dispatch comes here: none is a block.
    detail::bump(blocks_);
    BlockNote note{{}, seq, begin, end, event};
    copy_to(seq, begin, note);
    if (!notes_.push(note)) detail::bump(notes_dropped_);
  }
  // The note is queued before the end is published: a watchdog that sees the end sees the note.
  detail::store_release(seq_, seq + 1u);
}

bool Monitor::scope_snapshot(const char** out, std::size_t max, std::size_t& count) const noexcept {
  if constexpr (kScopeDepth == 0) {  // a build without scopes: an empty stack, never torn
    static_cast<void>(out);
    static_cast<void>(max);
    count = 0;
    return true;
  }
  const std::uint32_t w1 = detail::load_acquire(scope_word_);
  std::size_t depth = w1 & kScopeDepthMask;
  if (depth > kScopeDepth) depth = kScopeDepth;
  std::size_t n = 0;
  for (std::size_t i = depth; i > 0 && n < max; --i) out[n++] = detail::load_relaxed(scopes_[i - 1]);
  detail::fence_acquire();
  if (detail::load_relaxed(scope_word_) != w1) return false;
  count = n;
  return true;
}

LoopStats Monitor::stats() const noexcept {
  LoopStats s;
  s.dispatches = detail::load_relaxed(seq_) / 2u;
  s.blocks = detail::load_relaxed(blocks_);
  s.hangs = detail::load_relaxed(hangs_);
  s.max_duration = detail::load_relaxed(max_duration_);
  s.busy_ticks = detail::load_relaxed(busy_ticks_);
  s.idle_ticks = detail::load_relaxed(idle_ticks_);
  s.nested = detail::load_relaxed(nested_);
  s.unbalanced_ends = detail::load_relaxed(unbalanced_ends_);
  s.notes_dropped = detail::load_relaxed(notes_dropped_);
  s.deadline_notes_dropped = detail::load_relaxed(deadline_notes_dropped_);
  s.scope_overflows = detail::load_relaxed(scope_overflows_);
  s.scope_underflows = detail::load_relaxed(scope_underflows_);
  s.stages_dropped = detail::load_relaxed(stages_dropped_);
  s.clock_steps_back = detail::load_relaxed(clock_steps_back_);
  s.tick_hz = tick_hz_;
  for (std::size_t i = 0; i < kHistogramBuckets; ++i) s.histogram[i] = bucket(i);
  return s;
}

}  // namespace loopcanary
