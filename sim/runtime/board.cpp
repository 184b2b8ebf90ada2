// SPDX-License-Identifier: MIT
#include "simrt/board.hpp"

namespace loopcanary::simrt {
namespace {

// The address of the call instruction that returned to `return_address`: inside the caller's
// function even when the call is the caller's last instruction.
Frame call_site(const void* return_address) noexcept { return reinterpret_cast<Frame>(return_address) - 1u; }

}  // namespace

Timeline::Timeline(const Peripheral& peripheral) noexcept
    : actions_(peripheral.actions), count_(peripheral.action_count < kMaxActions ? peripheral.action_count : kMaxActions) {}

bool Timeline::next_of(std::size_t i, std::uint64_t& at_us) const noexcept {
  const Action& a = actions_[i];
  if (a.period_us == 0) {
    if (fired_[i] != 0) return false;
    at_us = a.at_us;
    return true;
  }
  if (a.count != 0 && fired_[i] >= a.count) return false;
  at_us = a.at_us + std::uint64_t{fired_[i]} * a.period_us;
  return true;
}

bool Timeline::peek(std::uint64_t& at_us, const Action*& action) const noexcept {
  bool found = false;
  for (std::size_t i = 0; i < count_; ++i) {
    std::uint64_t t = 0;
    if (next_of(i, t) && (!found || t < at_us)) {
      found = true;
      at_us = t;
      action = &actions_[i];
    }
  }
  return found;
}

void Timeline::pop() noexcept {
  std::uint64_t at_us = 0;
  const Action* action = nullptr;
  if (peek(at_us, action)) ++fired_[static_cast<std::size_t>(action - actions_)];
}

std::uint32_t Timeline::skip_before(std::uint64_t us) noexcept {
  std::uint32_t skipped = 0;
  for (std::size_t i = 0; i < count_; ++i) {
    std::uint64_t t = 0;
    while (actions_[i].period_us != 0 && next_of(i, t) && t < us) {
      ++fired_[i];
      ++skipped;
    }
  }
  return skipped;
}

const char* describe(BoardError error) noexcept {
  switch (error) {
    case BoardError::none: return "no error";
    case BoardError::watchdog_missing: return "BoardStart.watchdog is null";
    case BoardError::poll_period_invalid: return "BoardStart.poll_period_us must be 100..1000000";
    case BoardError::too_many_peripherals: return "more peripherals than kMaxPeripherals";
    case BoardError::too_many_actions: return "a peripheral has more actions than kMaxActions";
    case BoardError::too_many_lines: return "BoardStart.line_count is above kMaxIrqLines";
    case BoardError::action_too_late: return "an action's at_us is past kMaxRunUs (2^40 us, 12.7 days)";
    case BoardError::line_out_of_range: return "a raise action names an interrupt line that does not exist";
    case BoardError::line_shared: return "two peripherals raise the same interrupt line (one producer per line)";
    case BoardError::bus_out_of_range: return "a hold_bus action names a bus >= kMaxBuses";
    case BoardError::platform_failed: return "the platform could not be set up";
    case BoardError::thread_failed: return "a thread could not be started";
    case BoardError::already_started: return "the board was already started";
  }
  return "unknown board error";
}

BoardError Board::start(const BoardStart& start) noexcept {
  if (started_) return BoardError::already_started;
  if (start.watchdog == nullptr) return BoardError::watchdog_missing;
  if (start.poll_period_us < 100 || start.poll_period_us > 1'000'000) return BoardError::poll_period_invalid;
  if (start.peripheral_count > kMaxPeripherals) return BoardError::too_many_peripherals;
  if (start.line_count > kMaxIrqLines) return BoardError::too_many_lines;
  int producer[kMaxIrqLines];  // the peripheral that raises each line, -1: none yet
  for (int& p : producer) p = -1;
  for (std::size_t p = 0; p < start.peripheral_count; ++p) {
    const Peripheral& peripheral = start.peripherals[p];
    if (peripheral.action_count > kMaxActions) return BoardError::too_many_actions;
    for (std::size_t i = 0; i < peripheral.action_count; ++i) {
      const Action& a = peripheral.actions[i];
      if (a.at_us > kMaxRunUs) return BoardError::action_too_late;
      if (a.kind == Action::Kind::raise) {
        if (a.target >= start.line_count) return BoardError::line_out_of_range;
        if (producer[a.target] != -1 && producer[a.target] != static_cast<int>(p)) return BoardError::line_shared;
        producer[a.target] = static_cast<int>(p);
      } else if (a.target >= kMaxBuses) {
        return BoardError::bus_out_of_range;
      }
    }
  }
  config_ = start;
  const BoardError error = start_impl(start);
  started_ = error == BoardError::none;
  return error;
}

// Not inlined, so __builtin_return_address(0) is an address in the firmware function that
// called: the virtual board reports it as the loop's program counter.
__attribute__((noinline)) bool Board::compute(Burn& burn) noexcept {
  return compute_step(burn, call_site(__builtin_return_address(0)));
}

__attribute__((noinline)) void Board::wait_us(std::uint32_t us) noexcept {
  wait_impl(us, call_site(__builtin_return_address(0)));
}

__attribute__((noinline)) void Board::acquire(BusId bus) noexcept {
  acquire_impl(bus, call_site(__builtin_return_address(0)));
}

void Board::set_start(tick_t start) noexcept {
  start_tick_ = start;
  run_clock_ = WideTicks(start);
  run_start_ = run_clock_.value();
}

std::uint64_t Board::us_since_start(tick_t t) const noexcept {
  const std::uint64_t at = run_clock_.widen(t);
  return at > run_start_ ? us_from_ticks(at - run_start_) : 0u;
}

void Board::drain() noexcept {
  run_clock_.update(now());
  BlockRecord record;
  while (config_.watchdog != nullptr && config_.watchdog->pop(record)) {
    if (config_.sink != nullptr) config_.sink(config_.sink_context, record);
  }
}

}  // namespace loopcanary::simrt
