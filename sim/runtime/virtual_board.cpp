// SPDX-License-Identifier: MIT
#include "simrt/virtual_board.hpp"

#include <cstring>

namespace loopcanary::simrt {

VirtualBoard::VirtualBoard(const VirtualBoardConfig& config) noexcept : time_(config.start) {
  for (int& owner : bus_owner_) owner = kNone;
  machine_.set_pc_capture(true);
  machine_.set_other_load_permille(config.background_load_permille);
}

BoardError VirtualBoard::start_impl(const BoardStart& start) noexcept {
  set_start(time_.peek());
  start_elapsed_ = time_.elapsed();
  // poll_period_us is at most 1 s (Board::start): well within tick_t.
  scheduler_.emplace(time_, machine_, *start.watchdog, static_cast<tick_t>(ticks_from_us(start.poll_period_us)));
  peripheral_count_ = start.peripheral_count;
  thread_.id = 1;
  for (std::size_t i = 0; i < peripheral_count_; ++i) {
    peripherals_[i] = PeripheralState{Timeline(start.peripherals[i])};
    peripherals_[i].thread.id = static_cast<std::uint32_t>(2 + i);
    peripherals_[i].thread.name = start.peripherals[i].name;
  }
  return BoardError::none;
}

bool VirtualBoard::compute_step(Burn& burn, CallerPc caller) noexcept {
  if (burn.started) return false;
  burn.started = true;
  advance(ticks_from_us(burn.us), Activity::compute, caller, 0);
  return true;  // the caller runs its step once: real work, no virtual time
}

void VirtualBoard::wait_impl(std::uint32_t us, CallerPc caller) noexcept {
  advance(ticks_from_us(us), Activity::wait, caller, 0);
}

void VirtualBoard::acquire_impl(BusId bus, CallerPc caller) noexcept {
  if (bus >= kMaxBuses) return;
  // A peripheral's hold ends at its end time or when reset_hold() is called (by the record
  // consumer, which runs inside advance()); either wakes this wait.
  // What read_wait gives meanwhile: the bus as a lock, held by the peripheral that has it.
  thread_.waiting_on.kind = WaitKind::mutex;
  thread_.waiting_on.address = bus;
  std::memcpy(thread_.waiting_on.text, "bus", sizeof "bus");
  while (bus_owner_[bus] >= 0) {
    thread_.holder = &peripherals_[static_cast<std::size_t>(bus_owner_[bus])].thread;
    advance(kMaxIntervalTicks, Activity::wait, caller, kWakeBusFree);
  }
  thread_.waiting_on = WaitObject{};
  thread_.holder = nullptr;
  bus_owner_[bus] = kLoop;
}

void VirtualBoard::release(BusId bus) noexcept {
  if (bus >= kMaxBuses || bus_owner_[bus] != kLoop) return;
  bus_owner_[bus] = kNone;
  grant_waiting(bus);
}

// A peripheral that waited for `bus` takes it now (the lowest-numbered one first).
void VirtualBoard::grant_waiting(BusId bus) noexcept {
  for (std::size_t p = 0; p < peripheral_count_; ++p) {
    PeripheralState& state = peripherals_[p];
    if (state.waiting_for == bus) {
      state.waiting_for = kNone;
      take_bus(p, bus, state.wait_hold_us);
      return;
    }
  }
}

void VirtualBoard::idle_until(tick_t deadline) noexcept {
  const tick_t now = time_.peek();
  advance(tick_before(now, deadline) ? ticks_between(now, deadline) : 0u, Activity::idle, 0, kWakeInterrupt);
}

void VirtualBoard::reset_hold(BusId bus) noexcept {
  if (bus < kMaxBuses && bus_owner_[bus] >= 0) free_bus(bus);
}

void VirtualBoard::finish() noexcept {
  if (!started_ || finished_) return;
  peripherals_stopped_ = true;
  // The next poll (within one period) finalises a block that ended at the last moment; the last
  // poll (Watchdog::finish) closes one still running, and the consumer gets the rest.
  advance(scheduler_->period(), Activity::idle, 0, 0);
  if (config_.watchdog != nullptr) config_.watchdog->finish(time_.peek());
  drain();
  finished_ = true;
}

void VirtualBoard::advance(std::uint64_t ticks, Activity activity, CallerPc caller, std::uint8_t wake_on) noexcept {
  if (!scheduler_) {  // not started: nothing to run on the way
    for (; ticks > kMaxIntervalTicks; ticks -= kMaxIntervalTicks) time_.advance(kMaxIntervalTicks);
    time_.advance(static_cast<tick_t>(ticks));
    return;
  }
  thread_.pc = caller;
  std::uint64_t remaining = ticks;
  for (;;) {
    run_due_peripherals();
    drain();
    if ((wakes_ & wake_on) != 0) {
      wakes_ = static_cast<std::uint8_t>(wakes_ & ~wake_on);
      break;
    }
    if (remaining == 0) break;
    // Step to the next thing that happens: a peripheral event or a watchdog poll (after which
    // the records are drained), never past the time asked for. The poll is at most one period
    // (<= 1 s) away, so every step fits tick_t.
    const std::uint64_t now = time_.elapsed();
    tick_t step = ticks_between(time_.peek(), scheduler_->next_poll());
    if (remaining < step) step = static_cast<tick_t>(remaining);
    std::uint64_t at = 0;
    if (next_peripheral_event(at) && at - now < step) step = static_cast<tick_t>(at - now);
    if (config_.on_time != nullptr && step != 0) config_.on_time(config_.on_time_context, step);
    switch (activity) {
      case Activity::compute: scheduler_->compute(thread_, step); break;
      case Activity::wait: scheduler_->wait(step); break;
      case Activity::idle: scheduler_->idle(step); break;
    }
    remaining -= step;
  }
  thread_.pc = 0;
}

bool VirtualBoard::next_peripheral_event(std::uint64_t& at) const noexcept {
  if (peripherals_stopped_) return false;
  const std::uint64_t now = time_.elapsed();
  bool found = false;
  for (std::size_t p = 0; p < peripheral_count_; ++p) {
    const PeripheralState& state = peripherals_[p];
    std::uint64_t t = 0;
    if (state.holding != kNone) {
      t = state.hold_end;
    } else if (state.waiting_for != kNone) {
      continue;  // until the loop releases the bus
    } else {
      std::uint64_t at_us = 0;
      const Action* action = nullptr;
      if (!state.timeline.peek(at_us, action)) continue;
      t = elapsed_at(at_us);
    }
    if (t < now) t = now;  // overdue: now
    if (!found || t < at) at = t;
    found = true;
  }
  return found;
}

// Everything due at or before now, earliest first (ties: the lower peripheral).
void VirtualBoard::run_due_peripherals() noexcept {
  if (peripherals_stopped_) return;
  const std::uint64_t now = time_.elapsed();
  for (;;) {
    std::uint64_t at = 0;
    if (!next_peripheral_event(at) || at != now) return;
    for (std::size_t p = 0; p < peripheral_count_; ++p) {
      PeripheralState& state = peripherals_[p];
      if (state.holding != kNone) {
        if (state.hold_end <= now) free_bus(static_cast<BusId>(state.holding));
        continue;
      }
      if (state.waiting_for != kNone) continue;
      std::uint64_t at_us = 0;
      const Action* action = nullptr;
      if (!state.timeline.peek(at_us, action) || now < elapsed_at(at_us)) continue;
      state.timeline.pop();
      if (action->kind == Action::Kind::raise) {
        config_.lines[action->target].raise(time_.peek(), action->arg);
        wakes_ |= kWakeInterrupt;
      } else if (bus_owner_[action->target] == kNone) {
        take_bus(p, action->target, action->arg);
      } else {
        state.waiting_for = action->target;
        state.wait_hold_us = action->arg;
      }
    }
  }
}

void VirtualBoard::take_bus(std::size_t peripheral, BusId bus, std::uint32_t hold_us) noexcept {
  bus_owner_[bus] = static_cast<int>(peripheral);
  peripherals_[peripheral].holding = bus;
  peripherals_[peripheral].hold_end = time_.elapsed() + ticks_from_us(hold_us);
}

// The peripheral holding `bus` lets go; periodic actions that fell due meanwhile are skipped.
void VirtualBoard::free_bus(BusId bus) noexcept {
  const int owner = bus_owner_[bus];
  if (owner < 0) return;
  PeripheralState& state = peripherals_[owner];
  state.holding = kNone;
  state.timeline.skip_before(us_from_ticks(time_.elapsed() - start_elapsed_));
  bus_owner_[bus] = kNone;
  wakes_ |= kWakeBusFree;
  grant_waiting(bus);
}

}  // namespace loopcanary::simrt
