// SPDX-License-Identifier: MIT
// A simulated interrupt line: the "ISR" (a peripheral's thread in real time, the virtual board
// in virtual time) stamps each interrupt and pushes it into the line's SPSC ring; the event
// loop drains the ring and posts one message per entry. Loads and stores only, no lock, no
// allocation: what an ISR may do on a device.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/spsc_ring.hpp"
#include "loopcanary/time.hpp"

namespace loopcanary::simrt {

/// Index of an event type in the firmware's table (see runtime.hpp).
using TypeId = std::uint8_t;

/// Interrupt lines a loop has.
inline constexpr std::size_t kMaxIrqLines = 4;
/// Interrupts a line can hold before the loop drains it; more are counted as lost.
inline constexpr std::size_t kIrqRingCapacity = 16;

/// One interrupt: when it was raised (board ticks) and what the peripheral passed along.
struct IrqEntry {
  tick_t at = 0;
  std::uint32_t arg = 0;
};

/// One interrupt line. Exactly one producer context (the peripheral that raises it) and one
/// consumer (the loop).
class IrqLine {
 public:
  IrqLine() noexcept = default;
  IrqLine(const IrqLine&) = delete;
  IrqLine& operator=(const IrqLine&) = delete;

  /// Producer side. False when the ring is full: the interrupt is lost and counted.
  bool raise(tick_t now, std::uint32_t arg) noexcept {
    if (ring_.push(IrqEntry{now, arg})) return true;
    overflows_.store(overflows_.load(std::memory_order_relaxed) + 1u, std::memory_order_relaxed);
    return false;
  }

  /// Consumer side: the oldest pending interrupt.
  bool take(IrqEntry& out) noexcept { return ring_.pop(out); }

  /// Interrupts lost because the ring was full. Any context.
  std::uint32_t overflows() const noexcept { return overflows_.load(std::memory_order_relaxed); }

  /// The message type the loop posts for each interrupt. Set before the board starts.
  TypeId type = 0;

 private:
  SpscRing<IrqEntry, kIrqRingCapacity> ring_;
  std::atomic<std::uint32_t> overflows_{0};  // written by the producer only
};

}  // namespace loopcanary::simrt
