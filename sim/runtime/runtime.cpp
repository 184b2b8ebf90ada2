// SPDX-License-Identifier: MIT
#include "simrt/runtime.hpp"

namespace loopcanary::simrt {

bool Runtime::init(const RuntimeConfig& config) noexcept {
  if (config.types == nullptr || config.type_count == 0 || config.type_count > kMaxEventTypes) return false;
  if (!monitor_.initialised()) return false;
  types_ = config.types;
  type_count_ = config.type_count;
  app_ = config.app;
  for (std::size_t i = 0; i < type_count_; ++i) threshold_[i] = monitor_.limits_for(types_[i].event).threshold;
  return true;
}

int Runtime::add_irq_line(TypeId type) noexcept {
  if (line_count_ == kMaxIrqLines || type >= type_count_) return -1;
  lines_[line_count_].type = type;
  return static_cast<int>(line_count_++);
}

int Runtime::add_timer(TypeId type, std::uint32_t period_us) noexcept {
  if (timer_count_ == kMaxTimers || type >= type_count_) return -1;
  Timer& t = timers_[timer_count_];
  t.type = type;
  t.period = board_.ticks_from_us(period_us);
  t.active = false;
  return static_cast<int>(timer_count_++);
}

void Runtime::start_timer(TimerId timer, std::uint32_t delay_us) noexcept {
  if (timer >= timer_count_) return;
  timers_[timer].due = static_cast<tick_t>(board_.now() + board_.ticks_from_us(delay_us));
  timers_[timer].active = true;
}

void Runtime::stop_timer(TimerId timer) noexcept {
  if (timer < timer_count_) timers_[timer].active = false;
}

bool Runtime::post(TypeId type, std::uint32_t arg) noexcept {
  if (type >= type_count_) return false;
  return enqueue(Message{type, arg, board_.now()});
}

void Runtime::run_for(std::uint64_t duration_us) noexcept {
  const tick_t end = static_cast<tick_t>(board_.now() + board_.ticks_from_us(duration_us));
  for (;;) {
    const tick_t now = board_.now();
    if (!tick_before(now, end)) break;
    drain_lines();
    fire_timers(now);
    Message message;
    if (dequeue(message)) {
      dispatch(message);
      continue;
    }
    tick_t deadline = end;
    tick_t timer_due = 0;
    if (next_deadline(now, timer_due) && tick_before(timer_due, deadline)) deadline = timer_due;
    board_.idle_until(deadline);
  }
  drain_lines();  // what is left is counted as pending
}

void Runtime::drain_lines() noexcept {
  for (std::size_t i = 0; i < line_count_; ++i) {
    IrqLine& line = lines_[i];
    IrqEntry entry;
    while (line.take(entry)) enqueue(Message{line.type, entry.arg, entry.at});
    const std::uint32_t overflows = line.overflows();
    stats_[line.type].lost += overflows - overflows_seen_[i];
    overflows_seen_[i] = overflows;
  }
}

void Runtime::fire_timers(tick_t now) noexcept {
  for (std::size_t i = 0; i < timer_count_; ++i) {
    Timer& t = timers_[i];
    if (!t.active || tick_before(now, t.due)) continue;
    enqueue(Message{t.type, 0, t.due});
    if (t.period == 0) {
      t.active = false;
      continue;
    }
    t.due = static_cast<tick_t>(t.due + t.period);
    if (!tick_before(now, t.due)) {
      // The loop was late by whole periods: skip them (one message per firing, as a hardware
      // timer's pending flag would), and count them.
      const tick_t behind = static_cast<tick_t>(ticks_between(t.due, now) / t.period + 1u);
      t.due = static_cast<tick_t>(t.due + behind * t.period);
      stats_[t.type].timer_skips += behind;
    }
  }
}

bool Runtime::next_deadline(tick_t now, tick_t& deadline) const noexcept {
  bool found = false;
  for (std::size_t i = 0; i < timer_count_; ++i) {
    const Timer& t = timers_[i];
    if (!t.active) continue;
    if (!found || ticks_between(now, t.due) < ticks_between(now, deadline)) deadline = t.due;
    found = true;
  }
  return found;
}

bool Runtime::enqueue(const Message& message) noexcept {
  if (queue_size_ == kQueueCapacity) {
    ++stats_[message.type].lost;
    return false;
  }
  queue_[(queue_head_ + queue_size_) % kQueueCapacity] = message;
  ++queue_size_;
  return true;
}

bool Runtime::dequeue(Message& out) noexcept {
  if (queue_size_ == 0) return false;
  out = queue_[queue_head_];
  queue_head_ = (queue_head_ + 1u) % kQueueCapacity;
  --queue_size_;
  return true;
}

void Runtime::dispatch(const Message& message) noexcept {
  const EventType& type = types_[message.type];
  TypeStats& stats = stats_[message.type];
  const tick_t begin = board_.now();
  const tick_t wait = tick_before(message.posted, begin) ? ticks_between(message.posted, begin) : 0u;
  ++stats.dispatched;
  stats.wait_sum += wait;
  if (wait > stats.wait_max) stats.wait_max = wait;
  attribute_delay(message, begin);
  const std::uint32_t overflows_before = irq_overflows();

  monitor_.begin_at(type.event, begin);
  type.handler(app_, message);
  const tick_t end = board_.now();
  monitor_.end_at(end);
  ++dispatches_;

  if (ticks_between(begin, end) > threshold_[message.type]) {
    ++stats.blocks;
    if (span_count_ >= kMaxBlockSpans) ++spans_overwritten_;
    BlockSpan& span = spans_[span_count_ % kMaxBlockSpans];
    span = BlockSpan{};
    span.dispatch = dispatches_;
    span.type = message.type;
    span.begin = begin;
    span.end = end;
    span.irqs_lost = irq_overflows() - overflows_before;
    ++span_count_;
  }
}

// Spans are kept in the order their blocks ended. A message posted before a block ended and
// dispatched after it was held up by it; walking back from the newest block, the first one
// that ended before the message was posted ends the search.
void Runtime::attribute_delay(const Message& message, tick_t dispatched_at) noexcept {
  const std::uint32_t kept = span_count_ < kMaxBlockSpans ? span_count_ : static_cast<std::uint32_t>(kMaxBlockSpans);
  const tick_t wait = tick_before(message.posted, dispatched_at) ? ticks_between(message.posted, dispatched_at) : 0u;
  for (std::uint32_t k = 0; k < kept; ++k) {
    BlockSpan& span = spans_[(span_count_ - 1u - k) % kMaxBlockSpans];
    if (!tick_before(message.posted, span.end)) break;
    ++span.delayed[message.type];
    ++span.delayed_total;
    if (wait > span.delayed_wait_max) span.delayed_wait_max = wait;
  }
}

std::uint32_t Runtime::irq_overflows() const noexcept {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < line_count_; ++i) sum += lines_[i].overflows();
  return sum;
}

const BlockSpan* Runtime::span_of(std::uint32_t dispatch) const noexcept {
  const std::uint32_t kept = span_count_ < kMaxBlockSpans ? span_count_ : static_cast<std::uint32_t>(kMaxBlockSpans);
  for (std::uint32_t k = 0; k < kept; ++k) {
    const BlockSpan& span = spans_[(span_count_ - 1u - k) % kMaxBlockSpans];
    if (span.dispatch == dispatch) return &span;
  }
  return nullptr;
}

}  // namespace loopcanary::simrt
