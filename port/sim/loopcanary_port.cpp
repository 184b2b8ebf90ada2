// SPDX-License-Identifier: MIT
#include "loopcanary/port/sim.hpp"

namespace loopcanary::sim {

Hal Machine::hal() noexcept {
  Hal h{};
  h.context = this;
  h.capture_stack = &Machine::capture;
  h.read_cpu = &Machine::read_cpu;
  h.debugger_attached = &Machine::debugger;
  h.read_memory = &Machine::read_memory;
  h.read_wait = &Machine::read_wait;
  h.thread_id = &Machine::thread_id;
  return h;
}

void Machine::account(tick_t ticks, Thread* running, bool saturated) noexcept {
  total_ticks_ += ticks;
  if (running != nullptr) {
    running->cpu_ticks += ticks;
    process_ticks_ += ticks;
    busy_permille_ticks_ += std::uint64_t{ticks} * 1000u;
  } else if (saturated) {
    busy_permille_ticks_ += std::uint64_t{ticks} * 1000u;
  } else {
    busy_permille_ticks_ += std::uint64_t{ticks} * other_load_permille_;
  }
}

std::size_t Machine::capture(void* context, const Monitor& loop, Frame* pcs, std::size_t max) {
  auto* self = static_cast<Machine*>(context);
  const auto* thread = static_cast<const Thread*>(loop.context());
  if (!self->pc_capture_ || thread == nullptr || thread->pc == 0 || max == 0) return 0;
  if (self->capture_failing_ || self->captures_to_fail_ != 0) {
    if (self->captures_to_fail_ != 0) --self->captures_to_fail_;
    ++self->captures_failed_;
    return 0;
  }
  ++self->captures_;
  pcs[0] = thread->pc;
  return 1;
}

void Machine::read_cpu(void* context, const Monitor& loop, CpuReading* out) {
  const auto* self = static_cast<const Machine*>(context);
  const auto* thread = static_cast<const Thread*>(loop.context());
  if (!self->counters_available_) return;
  if (thread != nullptr) {
    out->set(kCpuThreadUs, us_from_ticks(thread->cpu_ticks, kTickHz));
    if (self->thread_wait_available_) out->set(kCpuWaitUs, us_from_ticks(thread->wait_ticks, kTickHz));
  }
  out->set(kCpuBusy, self->busy_permille_ticks_ / 1000u);
  out->set(kCpuTotal, self->total_ticks_);
  out->set(kCpuProcess, self->process_ticks_);
}

bool Machine::debugger(void* context) { return static_cast<const Machine*>(context)->debugger_attached_; }

void Machine::read_memory(void* context, const Monitor& /*loop*/, MemoryReading* out) {
  auto* self = static_cast<Machine*>(context);
  ++self->memory_reads_;
  *out = self->memory_;
}

namespace {
// `name` into a wait's fixed name field, cut to fit.
void copy_name(char (&to)[kThreadNameMax], const char* name) noexcept {
  std::size_t n = 0;
  for (; name != nullptr && n + 1 < kThreadNameMax && name[n] != '\0'; ++n) to[n] = name[n];
  to[n] = '\0';
}
}  // namespace

void Machine::read_wait(void* context, const Monitor& loop, WaitReading* out, std::size_t max_frames) {
  ++static_cast<Machine*>(context)->wait_reads_;
  const auto* thread = static_cast<const Thread*>(loop.context());
  if (thread == nullptr) return;
  out->object = thread->waiting_on;
  const Thread* holder = thread->holder;
  if (out->object.kind == WaitKind::none || holder == nullptr) return;
  out->object.owner = holder->id;
  copy_name(out->object.owner_name, holder->name);
  if (holder->pc != 0 && max_frames != 0) {
    out->holder_frames[0] = holder->pc;
    out->holder_pc_count = 1;
  }
  // The chain: while a holder waits on a lock held by another, until it comes back.
  for (const Thread* h = holder; h->waiting_on.kind == WaitKind::mutex && h->holder != nullptr;) {
    if (out->chain_count == kWaitChainMax) break;
    WaitHop& hop = out->chain[out->chain_count++];
    hop.address = h->waiting_on.address;
    hop.owner = h->holder->id;
    copy_name(hop.owner_name, h->holder->name);
    bool seen = h->holder == thread;
    for (const Thread* t = holder; !seen && t != h; t = t->holder) seen = t == h->holder;
    if (seen || h->holder == h) {
      out->deadlock = true;
      break;
    }
    h = h->holder;
  }
}

std::uint32_t Machine::thread_id(void* /*context*/, const Monitor& loop) {
  const auto* thread = static_cast<const Thread*>(loop.context());
  return thread != nullptr ? thread->id : 0u;
}

void Scheduler::wait_on(Thread& thread, const WaitObject& object, const Thread* holder, tick_t ticks) noexcept {
  thread.waiting_on = object;
  thread.holder = holder;
  spend(ticks, nullptr, false);
  thread.waiting_on = WaitObject{};
  thread.holder = nullptr;
}

Scheduler::Scheduler(VirtualTime& time, Machine& machine, Watchdog& watchdog, tick_t period) noexcept
    : time_(time),
      machine_(machine),
      watchdog_(watchdog),
      period_(period != 0 ? period : 1u),
      next_poll_elapsed_(time.elapsed() + period_) {}

void Scheduler::resume_polling() noexcept {
  if (!stopped_) return;
  stopped_ = false;
  next_poll_elapsed_ = time_.elapsed();
}

void Scheduler::spend(tick_t ticks, Thread* running, bool saturated, Thread* runnable) noexcept {
  if (stopped_) {
    time_.advance(ticks);
    machine_.account(ticks, running, saturated);
    if (runnable != nullptr) runnable->wait_ticks += ticks;
    return;
  }
  for (;;) {
    // Poll every deadline reached (also one passed by a clock read that costs time).
    while (next_poll_elapsed_ <= time_.elapsed()) {
      watchdog_.poll(next_poll());
      ++polls_;
      next_poll_elapsed_ += period_;
    }
    if (ticks == 0) return;
    const std::uint64_t to_poll = next_poll_elapsed_ - time_.elapsed();
    const tick_t step = to_poll < ticks ? static_cast<tick_t>(to_poll) : ticks;
    time_.advance(step);
    machine_.account(step, running, saturated);
    if (runnable != nullptr) runnable->wait_ticks += step;
    ticks = static_cast<tick_t>(ticks - step);
  }
}

std::uint32_t RecordSink::drain(Watchdog& watchdog) noexcept {
  if (stalled_) return 0;
  std::uint32_t written = 0;
  BlockRecord record;
  while (watchdog.pop(record)) {
    if (writes_to_fail_ != 0) {
      --writes_to_fail_;
      ++failed_;
      continue;
    }
    ++written_;
    ++written;
    last_report_ = record.report;
    if (on_written_ != nullptr) on_written_(context_, record);
  }
  return written;
}

}  // namespace loopcanary::sim
