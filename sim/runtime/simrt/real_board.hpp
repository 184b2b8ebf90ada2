// SPDX-License-Identifier: MIT
// RealBoard: the Board in real time, on loopcanary's Linux port. The loop is the thread that
// calls init() (usually main); CPU work really computes until its time is up, waits really
// sleep, buses are mutexes, each peripheral is a thread of its own that raises its interrupt
// lines and holds buses on its timeline, and a WatchdogThread polls the watchdog, whose stack
// samples come from the port's signal-based capture of the loop thread.
#pragma once

#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "loopcanary/linux/watchdog_thread.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "simrt/board.hpp"

namespace loopcanary::simrt {

class RealBoard final : public Board {
 public:
  RealBoard() noexcept = default;
  ~RealBoard() override;

  /// Selects the port's clock, installs the platform's sample signal handler and attaches the
  /// calling thread as the loop thread. Call on the loop thread, before start(). False on
  /// failure, with the reason in `message`.
  bool init(const port_linux::PlatformConfig& platform, char* message, std::size_t size) noexcept;

  std::uint32_t tick_hz() const noexcept override;
  Hal hal() noexcept override { return platform_.hal(); }
  void* loop_context() noexcept override { return &loop_thread_; }
  void finish() noexcept override;
  const char* time_name() const noexcept override { return "real"; }
  /// The clock the port selected ("tsc", "clock_monotonic").
  const char* clock_name() const noexcept;
  const port_linux::Platform& platform() const noexcept { return platform_; }

  tick_t now() noexcept override;
  void release(BusId bus) noexcept override;
  void idle_until(tick_t deadline) noexcept override;
  void reset_hold(BusId bus) noexcept override;

 private:
  struct PeripheralThread {
    RealBoard* board = nullptr;
    std::size_t index = 0;
    Timeline timeline;
    pthread_t thread{};
    bool running = false;
    sem_t wake{};  // posted to stop it or to end its hold early
  };

  BoardError start_impl(const BoardStart& start) noexcept override;
  bool compute_step(Burn& burn, CallerPc caller) noexcept override;
  void wait_impl(std::uint32_t us, CallerPc caller) noexcept override;
  void acquire_impl(BusId bus, CallerPc caller) noexcept override;

  static void* peripheral_main(void* self) noexcept;
  static void after_poll(void* self) noexcept;
  void run_peripheral(PeripheralThread& peripheral) noexcept;
  bool sleep_until(PeripheralThread& peripheral, std::uint64_t at_us) noexcept;
  void hold_bus(PeripheralThread& peripheral, BusId bus, std::uint32_t us) noexcept;
  std::uint64_t us_now() const noexcept;
  /// CLOCK_MONOTONIC at `at_us` into the run; in int64 nanoseconds for any at_us up to
  /// kMaxRunUs plus a 32-bit period (about 12.7 days), far from overflowing.
  timespec deadline_at(std::uint64_t at_us) const noexcept;
  void stop_peripherals() noexcept;

  port_linux::Platform platform_;
  port_linux::LoopThread loop_thread_;
  port_linux::WatchdogThread watchdog_thread_;
  bool initialised_ = false;
  bool finished_ = false;
  sem_t wake_{};  // interrupts wake the idle loop
  std::int64_t start_ns_ = 0;  // CLOCK_MONOTONIC at the start of the run
  std::mutex buses_[kMaxBuses];
  std::atomic<int> bus_holder_[kMaxBuses] = {};  // peripheral index + 1, 0 when none
  std::atomic<bool> reset_[kMaxBuses] = {};
  PeripheralThread peripherals_[kMaxPeripherals];
  std::size_t peripheral_count_ = 0;
  std::atomic<bool> stopping_{false};
};

}  // namespace loopcanary::simrt
