// SPDX-License-Identifier: MIT
// The demo's scenarios and the peripheral timelines that play them.
//
// Each scenario is something the outside world does to the thermostat at a point of the run
// (the cloud sends a command, the radio wedges, a button is pressed); normal traffic (sensor
// interrupts, timers, cloud set-points, button presses) runs all the time. The durations of the
// blocking work scale with the threshold, so every blocking scenario blocks for any
// --threshold-ms. The overload scenario blocks nowhere (its longest dispatch is a 4.8 ms chunk)
// but brings more work than the loop can do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simrt/board.hpp"
#include "thermostat.hpp"

namespace thermostat {

enum class Scenario : std::uint8_t { normal, cpu, flash, seed, hang, overload };
inline constexpr std::size_t kScenarioCount = 6;

struct ScenarioInfo {
  Scenario id;
  const char* name;  ///< as given to --scenario
  const char* what;  ///< one line for --help
};

/// In run order.
extern const ScenarioInfo kScenarios[kScenarioCount];

/// The seed's own threshold (schedule_update): a loop threshold above it would raise it.
inline constexpr std::uint32_t kSeedThresholdUs = 800'000;

/// The overload scenario: the cloud streams an OTA image, one chunk (radio_rx, then ota_chunk:
/// Workload::chunk_store_us + chunk_hash_us) every kOverloadChunkPeriodUs for kOverloadUs.
inline constexpr std::uint32_t kOverloadUs = 8'000'000;
inline constexpr std::uint32_t kOverloadChunkPeriodUs = 5'000;

/// Sample interval (and watchdog poll period) for a threshold: 10 ms, or the threshold when it
/// is shorter.
constexpr std::uint32_t sample_interval_us(std::uint32_t threshold_us) noexcept {
  return threshold_us < 10'000u ? threshold_us : 10'000u;
}

struct PlanInput {
  bool selected[kScenarioCount] = {};
  std::uint32_t threshold_us = 100'000;
  std::uint32_t hang_limit_us = 1'000'000;
  std::uint32_t poll_period_us = 10'000;
  Lines lines;
};

/// What the peripherals do and how long the run needs.
struct Plan {
  Workload workload;
  simrt::Action sensor[simrt::kMaxActions];
  simrt::Action radio[simrt::kMaxActions];
  simrt::Action keypad[simrt::kMaxActions];
  simrt::Peripheral peripherals[3];
  std::size_t peripheral_count = 0;
  std::uint64_t needed_us = 0;  ///< the selected scenarios end, with their reports, by then
};

void make_plan(const PlanInput& input, Plan& plan) noexcept;

}  // namespace thermostat
