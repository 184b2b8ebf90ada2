// SPDX-License-Identifier: MIT
// Records the tests of several forms share: a health record with every field set, by hand.
#pragma once

#include "loopcanary/health.hpp"
#include "loopcanary/record.hpp"

namespace loopcanary::test {

/// A health record with every field set: a 1 s window across the tick wrap at 1 MHz, one event
/// ("control_tick") with a period and a deadline, a resident memory reading.
inline HealthRecord hand_health() {
  static EventHealth tick_health;
  static const Event control{"control_tick", 0, &tick_health};
  HealthRecord r;
  r.number = 3;
  r.qualifier = "fw-2.1.0";
  r.loop = "main";
  r.loop_index = 1;
  r.tick_hz = 1'000'000;
  r.start = 0xFFFF'0000u;
  r.end = 0xFFFF'0000u + 1'000'000u;  // a 1 s window across the tick wrap
  r.dispatches = 1'234;
  r.busy_ticks = 931'500;
  r.idle_ticks = 60'000;
  r.has_idle = true;
  r.blocks = 2;
  r.hangs = 1;
  r.max_duration = 250'042;
  r.histogram[3] = 1'200;
  r.histogram[17] = 34;
  r.memory.set(kMemoryResident, 4'096);
  r.event_count = 1;
  EventHealthWindow& e = r.events[0];
  e.event = &control;
  e.dispatches = 98;
  e.deadline_misses = 3;
  e.missed_periods = 5;
  e.posted_ahead = 1;
  e.p50 = 127;
  e.p95 = 4'095;
  e.p99 = 16'383;
  e.max_latency = 20'000;
  e.period_ticks = 10'000;
  e.deadline_ticks = 5'000;
  r.health_dropped = 4;
  return r;
}

}  // namespace loopcanary::test
