// SPDX-License-Identifier: MIT
#include "scenarios.hpp"

namespace thermostat {

const ScenarioInfo kScenarios[kScenarioCount] = {
    {Scenario::normal, "normal", "1.5 s of normal traffic only: nothing may be reported"},
    {Scenario::cpu, "cpu", "ota_verify computes a CRC for 4 x threshold (running)"},
    {Scenario::flash, "flash", "log_flush erases, programs 4 pages, verifies: 3.2 x threshold (waiting)"},
    {Scenario::seed, "seed", "the seed's case: 780 ms in a(), then 30 ms in b(); threshold 800 ms"},
    {Scenario::hang, "hang", "the radio wedges the SPI link: cloud_sync hangs until it is reset"},
    {Scenario::overload, "overload", "an OTA download: a 4.8 ms chunk every 5 ms for 8 s; no block, load > 90 %"},
};

namespace {

using simrt::Action;

class Script {
 public:
  explicit Script(Action* actions) noexcept : actions_(actions) {}
  void raise(std::uint8_t line, std::uint32_t arg, std::uint64_t at_us, std::uint32_t period_us = 0,
             std::uint32_t count = 0) noexcept {
    add(Action{Action::Kind::raise, line, arg, at_us, period_us, count});
  }
  void hold(simrt::BusId bus, std::uint32_t hold_us, std::uint64_t at_us) noexcept {
    add(Action{Action::Kind::hold_bus, bus, hold_us, at_us, 0, 0});
  }
  std::size_t count() const noexcept { return count_; }

 private:
  void add(const Action& action) noexcept {
    if (count_ < simrt::kMaxActions) actions_[count_++] = action;
  }
  Action* actions_;
  std::size_t count_ = 0;
};

}  // namespace

void make_plan(const PlanInput& in, Plan& plan) noexcept {
  const std::uint32_t t_us = in.threshold_us;
  plan.workload = Workload{};
  plan.workload.ota_crc_us = 4u * t_us;
  plan.workload.flash_erase_us = t_us / 5u * 2u;
  plan.workload.flash_pages = 4;
  plan.workload.flash_page_us = t_us / 5u * 3u;
  plan.workload.flash_verify_us = t_us / 5u * 2u;
  // After each scenario the loop gets time to drain what the block held up.
  const std::uint64_t gap_us = 300'000u + t_us;

  Script sensor(plan.sensor);
  Script radio(plan.radio);
  Script keypad(plan.keypad);

  // Normal traffic, all run long.
  sensor.raise(in.lines.sensor, 0, 20'000, 50'000);          // data ready at 20 Hz
  radio.raise(in.lines.radio, kRxSetpoint, 250'000, 500'000); // a set-point from the cloud every 0.5 s
  keypad.raise(in.lines.keypad, kButtonSync, 300'000);        // Sync while the radio is healthy
  keypad.raise(in.lines.keypad, kButtonUp, 700'000, 2'000'000);
  keypad.raise(in.lines.keypad, kButtonDown, 1'700'000, 2'000'000);

  std::uint64_t t = 200'000;  // start-up
  for (const ScenarioInfo& s : kScenarios) {
    if (!in.selected[static_cast<std::size_t>(s.id)]) continue;
    switch (s.id) {
      case Scenario::normal:
        t += 1'500'000;
        break;
      case Scenario::cpu:
        radio.raise(in.lines.radio, kRxVerifyImage, t);
        t += plan.workload.ota_crc_us + gap_us;
        break;
      case Scenario::flash:
        radio.raise(in.lines.radio, kRxFlushLog, t);
        t += plan.workload.flash_erase_us + std::uint64_t{plan.workload.flash_pages} * plan.workload.flash_page_us +
             plan.workload.flash_verify_us + gap_us;
        break;
      case Scenario::seed:
        radio.raise(in.lines.radio, kRxNewSchedule, t);
        t += plan.workload.seed_a_us + plan.workload.seed_b_us + gap_us;
        break;
      case Scenario::hang: {
        // The radio holds the link until it is reset, or gives up by itself after 5 s more
        // than the hang limit (so a run can never stay stuck).
        radio.hold(kRadioBus, in.hang_limit_us + 5'000'000u, t);
        keypad.raise(in.lines.keypad, kButtonSync, t + 50'000);
        t += 50'000u + in.hang_limit_us + 2u * in.poll_period_us + gap_us;
        break;
      }
      case Scenario::overload:
        radio.raise(in.lines.radio, kRxImageChunk, t, kOverloadChunkPeriodUs, kOverloadUs / kOverloadChunkPeriodUs);
        t += kOverloadUs + gap_us;
        break;
    }
  }
  plan.needed_us = t + 200'000;  // the last records arrive

  plan.peripherals[0] = simrt::Peripheral{"sensor", plan.sensor, sensor.count()};
  plan.peripherals[1] = simrt::Peripheral{"radio", plan.radio, radio.count()};
  plan.peripherals[2] = simrt::Peripheral{"keypad", plan.keypad, keypad.count()};
  plan.peripheral_count = 3;
}

}  // namespace thermostat
