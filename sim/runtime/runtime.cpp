// SPDX-License-Identifier: MIT
#include "simrt/runtime.hpp"

namespace loopcanary::simrt {

bool Runtime::init(const RuntimeConfig& config) noexcept {
  if (config.types == nullptr || config.type_count == 0 || config.type_count > kMaxEventTypes) return false;
  if (!monitor_.initialised()) return false;
  clock_ = WideTicks(board_.now());
  types_ = config.types;
  type_count_ = config.type_count;
  app_ = config.app;
  for (std::size_t i = 0; i < type_count_; ++i) {
    events_[i] = Event{types_[i].event.name, types_[i].event.threshold_us, &health_[i]};
    threshold_[i] = monitor_.limits_for(events_[i]).threshold;
  }
  return true;
}

Status Runtime::init_event(TypeId type, const EventHealthConfig& config) noexcept {
  if (type >= type_count_) return Status::not_initialised;
  return monitor_.init_event(events_[type], config);
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
  timers_[timer].due = now() + board_.ticks_from_us(delay_us);
  timers_[timer].active = true;
}

void Runtime::stop_timer(TimerId timer) noexcept {
  if (timer < timer_count_) timers_[timer].active = false;
}

bool Runtime::post(TypeId type, std::uint32_t arg) noexcept {
  if (type >= type_count_) return false;
  return enqueue(Message{type, arg, now()});
}

bool Runtime::run_for(std::uint64_t duration_us) noexcept {
  if (duration_us > kMaxRunUs) return false;
  folded_at_ = now();
  folded_ = monitor_.stats();
  const std::uint64_t fold_period = board_.ticks_from_us(kFoldPeriodUs);
  const std::uint64_t end = folded_at_ + board_.ticks_from_us(duration_us);
  for (;;) {
    const std::uint64_t t = now();
    if (t - folded_at_ >= fold_period) fold_totals(t);
    if (t >= end) break;
    drain_lines();
    fire_timers(t);
    Message message;
    if (dequeue(message)) {
      dispatch(message);
      continue;
    }
    end_dispatch(now());  // the queue is empty: the last dispatch of the drain ends before the wait
    std::uint64_t deadline = end;
    std::uint64_t timer_due = 0;
    if (next_deadline(timer_due) && timer_due < deadline) deadline = timer_due;
    // The board takes a deadline within half a wrap: a longer idle is taken in steps.
    const std::uint64_t idle = deadline > t ? deadline - t : 0u;
    const std::uint64_t idle_from = now();
    board_.idle_until(static_cast<tick_t>(t + (idle < kMaxIntervalTicks ? idle : kMaxIntervalTicks)));
    monitor_.add_idle(static_cast<tick_t>(now() - idle_from));  // under one wrap: at most half a wrap and a poll
  }
  const std::uint64_t stop = now();
  end_dispatch(stop);
  drain_lines();  // what is left is counted as pending
  fold_totals(stop);
  return true;
}

// The core's counters since the previous fold, into the 64-bit totals. A fold period (plus one
// dispatch) apart, under half the wrap: the modular differences are exact.
void Runtime::fold_totals(std::uint64_t now) noexcept {
  const LoopStats stats = monitor_.stats();
  totals_.window_ticks += now - folded_at_;
  totals_.busy_ticks += ticks_between(folded_.busy_ticks, stats.busy_ticks);
  totals_.idle_ticks += ticks_between(folded_.idle_ticks, stats.idle_ticks);
  totals_.dispatches += dispatches_between(folded_, stats);
  folded_ = stats;
  folded_at_ = now;
}

void Runtime::drain_lines() noexcept {
  for (std::size_t i = 0; i < line_count_; ++i) {
    IrqLine& line = lines_[i];
    IrqEntry entry;
    // An entry was stamped by its producer a moment ago (before or, in real time, just after
    // the loop's latest reading): within half a wrap of the clock.
    while (line.take(entry)) enqueue(Message{line.type, entry.arg, clock_.widen(entry.at)});
    const std::uint32_t overflows = line.overflows();
    stats_[line.type].lost += overflows - overflows_seen_[i];
    overflows_seen_[i] = overflows;
  }
}

void Runtime::fire_timers(std::uint64_t now) noexcept {
  for (std::size_t i = 0; i < timer_count_; ++i) {
    Timer& t = timers_[i];
    if (!t.active || now < t.due) continue;
    // One message per firing, as a hardware timer's pending flag gives one interrupt: a timer
    // whose previous message is still queued skips this period, and counts it.
    if (t.pending) {
      ++stats_[t.type].timer_skips;
    } else if (enqueue(Message{t.type, 0, t.due, static_cast<TimerId>(i)})) {
      t.pending = true;
    }
    if (t.period == 0) {
      t.active = false;
      continue;
    }
    t.due += t.period;
    if (t.due <= now) {
      // The loop was late by whole periods: skip them, and count them.
      const std::uint64_t behind = (now - t.due) / t.period + 1u;
      t.due += behind * t.period;
      stats_[t.type].timer_skips += static_cast<std::uint32_t>(behind);
    }
  }
}

bool Runtime::next_deadline(std::uint64_t& deadline) const noexcept {
  bool found = false;
  for (std::size_t i = 0; i < timer_count_; ++i) {
    const Timer& t = timers_[i];
    if (!t.active) continue;
    if (!found || t.due < deadline) deadline = t.due;
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

// Back to back: the stamp that begins this dispatch ends the one before it (Monitor::next_at),
// so the loop reads its clock once per dispatch while it drains the queue.
void Runtime::dispatch(const Message& message) noexcept {
  const std::uint64_t begin = now();
  const bool back_to_back = open_.active;
  close_span(begin);  // the previous dispatch's block span, before this message is attributed
  attribute_delay(message, begin);
  if (message.timer < timer_count_) timers_[message.timer].pending = false;

  // The core records the queue latency begin - posted into the type's EventHealth.
  const Event& event = events_[message.type];
  if (back_to_back) {
    monitor_.next_at(event, static_cast<tick_t>(begin), static_cast<tick_t>(message.posted));
  } else {
    monitor_.begin_at(event, static_cast<tick_t>(begin), static_cast<tick_t>(message.posted));
  }
  open_ = OpenDispatch{true, message.type, dispatches_ + 1u, irq_overflows(), begin};
  types_[message.type].handler(app_, message);
  ++dispatches_;
}

void Runtime::end_dispatch(std::uint64_t at) noexcept {
  if (!open_.active) return;
  monitor_.end_at(static_cast<tick_t>(at));
  close_span(at);
}

// The open dispatch ended at `at`: a block gets its span.
void Runtime::close_span(std::uint64_t at) noexcept {
  if (!open_.active) return;
  open_.active = false;
  if (at - open_.begin <= threshold_[open_.type]) return;
  ++stats_[open_.type].blocks;
  if (span_count_ >= kMaxBlockSpans) ++spans_overwritten_;
  BlockSpan& span = spans_[span_count_ % kMaxBlockSpans];
  span = BlockSpan{};
  span.dispatch = open_.dispatch;
  span.type = open_.type;
  span.begin = open_.begin;
  span.end = at;
  span.irqs_lost = irq_overflows() - open_.overflows_before;
  ++span_count_;
}

// Spans are kept in the order their blocks ended. A message posted before a block ended and
// dispatched after it was held up by it; walking back from the newest block, the first one
// that ended before the message was posted ends the search.
void Runtime::attribute_delay(const Message& message, std::uint64_t dispatched_at) noexcept {
  const std::uint32_t kept = span_count_ < kMaxBlockSpans ? span_count_ : static_cast<std::uint32_t>(kMaxBlockSpans);
  const std::uint64_t wait = message.posted < dispatched_at ? dispatched_at - message.posted : 0u;
  for (std::uint32_t k = 0; k < kept; ++k) {
    BlockSpan& span = spans_[(span_count_ - 1u - k) % kMaxBlockSpans];
    if (message.posted >= span.end) break;
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
