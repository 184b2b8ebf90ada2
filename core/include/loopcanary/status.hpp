// SPDX-License-Identifier: MIT
// Status codes. Every refusal names what is wrong: a configuration error names the field.
#pragma once

#include <cstdint>

namespace loopcanary {

enum class Status : std::uint8_t {
  ok = 0,
  // MonitorConfig fields
  name_missing,                     ///< MonitorConfig::name is null or empty
  tick_hz_zero,                     ///< MonitorConfig::tick_hz is 0
  threshold_zero,                   ///< MonitorConfig::threshold_us is 0
  threshold_below_one_tick,         ///< threshold_us is shorter than one tick at tick_hz
  arm_not_below_threshold,          ///< arm_permille >= 1000: the arm point must precede the threshold
  sample_interval_zero,             ///< sample_interval_us is 0
  sample_interval_above_threshold,  ///< sample_interval_us > threshold_us
  sample_interval_below_one_tick,   ///< sample_interval_us is shorter than one tick at tick_hz
  hang_limit_below_threshold,       ///< hang_limit_us < threshold_us
  hang_limit_too_long,              ///< hang_limit_us is not below half the tick counter's wrap
  // WatchdogConfig fields
  qualifier_missing,                ///< WatchdogConfig::qualifier is null
  qualifier_too_long,               ///< qualifier longer than kQualifierMax characters
  qualifier_invalid,                ///< qualifier holds a character outside printable ASCII
  max_frames_out_of_range,          ///< max_frames is 0 or above LOOPCANARY_MAX_FRAMES
  snapshot_attempts_out_of_range,   ///< snapshot_attempts is 0 or above 8
  running_permille_out_of_range,    ///< cause.running_permille is 0 or above 1000
  starved_permille_out_of_range,    ///< cause.starved_busy_permille is 0 or above 1000
  starved_wait_permille_out_of_range,  ///< cause.starved_wait_permille is 0 or above 1000
  // Registration and use
  not_initialised,                  ///< the object was used before a successful init()
  already_initialised,              ///< init() on a monitor already registered with a watchdog
  registry_full,                    ///< the watchdog already watches its MaxLoops monitors
  already_registered,               ///< this monitor is already watched by a watchdog
  tick_rate_mismatch,               ///< the monitor's tick_hz differs from the watched loops'
  interceptor_null,                 ///< an interceptor function pointer is null
  interceptor_chain_full,           ///< LOOPCANARY_MAX_INTERCEPTORS interceptors already added
  // Monitor::init_event: the event and its EventHealthConfig fields
  event_health_missing,             ///< the Event has no EventHealth storage (Event::health is null)
  period_below_one_tick,            ///< EventHealthConfig::period_us is shorter than one tick at tick_hz
  period_too_long,                  ///< period_us is not below half the tick counter's wrap period
  deadline_below_one_tick,          ///< EventHealthConfig::deadline_us is shorter than one tick at tick_hz
  deadline_too_long,                ///< deadline_us is not below half the tick counter's wrap period
  health_events_full,               ///< the loop already lists LOOPCANARY_HEALTH_EVENTS event types
  // Watchdog::add: WatchdogConfig::health_period_us at the loops' tick rate
  health_period_below_one_tick,     ///< health_period_us is shorter than one tick
  health_period_too_long,           ///< health_period_us is not below half the tick counter's wrap period
  // StaticWatchdog::init
  health_ring_missing,              ///< health_period_us is set but the StaticWatchdog's HealthCapacity is 0
  // Watchdog::add_interceptor
  interceptor_unused,               ///< a record interceptor on an evidence watchdog, which builds no records
};

/// A one-line English explanation naming the field or argument at fault, e.g.
/// "MonitorConfig.threshold_us is 0; it must be > 0". Never null. Any context.
const char* describe(Status status) noexcept;

/// The enumerator's name, e.g. "threshold_zero". Never null. Any context.
const char* name(Status status) noexcept;

}  // namespace loopcanary
