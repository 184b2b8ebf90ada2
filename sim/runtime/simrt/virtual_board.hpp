// SPDX-License-Identifier: MIT
// VirtualBoard: the Board in virtual time, on loopcanary's sim port. Single-threaded and fully
// deterministic: CPU work and waits advance the virtual clock (the sim Scheduler polls the
// watchdog at its period meanwhile and the sim Machine accounts the loop's CPU time),
// peripherals are events on the same timeline, and the loop's "program counter" is the
// firmware call site of the running compute()/wait_us()/acquire(), so samples symbolise to the
// same firmware functions as in real time. The timelines run on the virtual clock's 64-bit
// count (sim::VirtualTime::elapsed()), so an action hours into the run happens on time. While
// the loop waits in acquire() for a bus a peripheral holds, the sim Machine's Hal::read_wait
// names the bus as a lock ("mutex 0x1 bus") held by the peripheral (its name, id 2 + its index;
// the loop's thread is id 1), as the Linux port names a real lock and its holder.
#pragma once

#include <cstdint>
#include <optional>

#include "loopcanary/port/sim.hpp"
#include "simrt/board.hpp"

namespace loopcanary::simrt {

struct VirtualBoardConfig {
  /// Virtual time at the start of the run. The default starts 3 s before the 32-bit tick
  /// counter wraps, so every run also crosses the wrap.
  tick_t start = static_cast<tick_t>(tick_t{0} - sim::ms(3000));
  /// Share of the machine other work keeps busy, per mille (the sim Machine's background).
  std::uint16_t background_load_permille = 100;
};

class VirtualBoard final : public Board {
 public:
  explicit VirtualBoard(const VirtualBoardConfig& config = VirtualBoardConfig{}) noexcept;

  std::uint32_t tick_hz() const noexcept override { return sim::kTickHz; }
  Hal hal() noexcept override { return machine_.hal(); }
  void* loop_context() noexcept override { return &thread_; }
  void finish() noexcept override;
  const char* time_name() const noexcept override { return "virtual"; }

  tick_t now() noexcept override { return time_.read(); }
  void release(BusId bus) noexcept override;
  void idle_until(tick_t deadline) noexcept override;
  void reset_hold(BusId bus) noexcept override;

 private:
  enum class Activity : std::uint8_t { compute, wait, idle };
  // Reasons advance() returns before its time is up.
  static constexpr std::uint8_t kWakeInterrupt = 1u << 0;
  static constexpr std::uint8_t kWakeBusFree = 1u << 1;
  static constexpr int kNone = -1;
  static constexpr int kLoop = -2;

  struct PeripheralState {
    Timeline timeline;
    int holding = kNone;       // bus held, or kNone
    std::uint64_t hold_end = 0;  // VirtualTime::elapsed() at which the hold ends
    int waiting_for = kNone;   // bus it waits for (the loop holds it), or kNone
    std::uint32_t wait_hold_us = 0;
    sim::Thread thread{};        // the peripheral as a wait's holder: its id and name
  };

  BoardError start_impl(const BoardStart& start) noexcept override;
  bool compute_step(Burn& burn, CallerPc caller) noexcept override;
  void wait_impl(std::uint32_t us, CallerPc caller) noexcept override;
  void acquire_impl(BusId bus, CallerPc caller) noexcept override;

  /// Spends `ticks` doing `activity` (with `caller` as the loop's program counter), running the
  /// peripherals and the watchdog on the way; returns early when a wake in `wake_on` happens.
  void advance(std::uint64_t ticks, Activity activity, CallerPc caller, std::uint8_t wake_on) noexcept;
  void run_due_peripherals() noexcept;
  /// The VirtualTime::elapsed() of the next peripheral event (now when overdue).
  bool next_peripheral_event(std::uint64_t& at) const noexcept;
  void take_bus(std::size_t peripheral, BusId bus, std::uint32_t hold_us) noexcept;
  void free_bus(BusId bus) noexcept;
  void grant_waiting(BusId bus) noexcept;
  /// VirtualTime::elapsed() at `us` into the run.
  std::uint64_t elapsed_at(std::uint64_t us) const noexcept { return start_elapsed_ + ticks_from_us(us); }

  sim::VirtualTime time_;
  sim::Machine machine_;
  sim::Thread thread_;
  std::optional<sim::Scheduler> scheduler_;
  std::uint64_t start_elapsed_ = 0;  // VirtualTime::elapsed() at the start of the run
  PeripheralState peripherals_[kMaxPeripherals];
  std::size_t peripheral_count_ = 0;
  int bus_owner_[kMaxBuses];  // peripheral index, kLoop or kNone
  std::uint8_t wakes_ = 0;
  bool peripherals_stopped_ = false;
  bool finished_ = false;
};

}  // namespace loopcanary::simrt
