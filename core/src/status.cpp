// SPDX-License-Identifier: MIT
#include <cstddef>

#include "loopcanary/status.hpp"

namespace loopcanary {
namespace {

struct StatusText {
  const char* name;
  const char* description;
};

// Indexed by Status; the static_assert below keeps it in step with the enum.
constexpr StatusText kStatusText[] = {
    {"ok", "ok"},
    {"name_missing", "MonitorConfig.name is null or empty; give the loop a static name"},
    {"tick_hz_zero", "MonitorConfig.tick_hz is 0; it must be the stamping clock's rate in Hz"},
    {"threshold_zero", "MonitorConfig.threshold_us is 0; it must be > 0"},
    {"threshold_below_one_tick", "MonitorConfig.threshold_us is shorter than one tick at tick_hz"},
    {"arm_not_below_threshold",
     "MonitorConfig.arm_permille is >= 1000; the arm point must come before the threshold"},
    {"sample_interval_zero", "MonitorConfig.sample_interval_us is 0; it must be > 0"},
    {"sample_interval_above_threshold",
     "MonitorConfig.sample_interval_us is above threshold_us; it must be <= threshold_us"},
    {"sample_interval_below_one_tick",
     "MonitorConfig.sample_interval_us is shorter than one tick at tick_hz"},
    {"hang_limit_below_threshold", "MonitorConfig.hang_limit_us is below threshold_us"},
    {"hang_limit_too_long",
     "MonitorConfig.hang_limit_us is not below half the tick counter's wrap period at tick_hz"},
    {"qualifier_missing", "WatchdogConfig.qualifier is null; use \"\" for none"},
    {"qualifier_too_long", "WatchdogConfig.qualifier is longer than 31 characters"},
    {"qualifier_invalid", "WatchdogConfig.qualifier holds a character outside printable ASCII"},
    {"max_frames_out_of_range", "WatchdogConfig.max_frames must be 1..LOOPCANARY_MAX_FRAMES"},
    {"snapshot_attempts_out_of_range", "WatchdogConfig.snapshot_attempts must be 1..8"},
    {"running_permille_out_of_range", "WatchdogConfig.cause.running_permille must be 1..1000"},
    {"starved_permille_out_of_range", "WatchdogConfig.cause.starved_busy_permille must be 1..1000"},
    {"starved_wait_permille_out_of_range", "WatchdogConfig.cause.starved_wait_permille must be 1..1000"},
    {"not_initialised", "used before a successful init()"},
    {"already_initialised", "the monitor is already watched by a watchdog; configure it before add()"},
    {"registry_full", "the watchdog already watches as many loops as its MaxLoops"},
    {"already_registered", "the monitor is already watched by a watchdog"},
    {"tick_rate_mismatch",
     "MonitorConfig.tick_hz differs from the loops this watchdog already watches; one watchdog, one clock"},
    {"interceptor_null", "the interceptor function is null"},
    {"interceptor_chain_full", "LOOPCANARY_MAX_INTERCEPTORS interceptors are already added"},
    {"event_health_missing",
     "the Event has no EventHealth storage (Event::health is null); point it at a static EventHealth"},
    {"period_below_one_tick", "EventHealthConfig.period_us is shorter than one tick at the loop's tick_hz"},
    {"period_too_long",
     "EventHealthConfig.period_us is not below half the tick counter's wrap period at the loop's tick_hz"},
    {"deadline_below_one_tick", "EventHealthConfig.deadline_us is shorter than one tick at the loop's tick_hz"},
    {"deadline_too_long",
     "EventHealthConfig.deadline_us is not below half the tick counter's wrap period at the loop's tick_hz"},
    {"health_events_full",
     "the loop already lists LOOPCANARY_HEALTH_EVENTS event types in its health records; raise it"},
    {"health_period_below_one_tick", "WatchdogConfig.health_period_us is shorter than one tick at the loops' tick_hz"},
    {"health_period_too_long",
     "WatchdogConfig.health_period_us is not below half the tick counter's wrap period at the loops' tick_hz"},
    {"health_ring_missing",
     "WatchdogConfig.health_period_us is set but the StaticWatchdog has no health ring; give it a HealthCapacity"},
    {"interceptor_unused",
     "an evidence watchdog builds no records, so a record Interceptor is never called; give it an "
     "ObservationInterceptor (EvidenceWatchdog::add_interceptor)"},
};
static_assert(sizeof(kStatusText) / sizeof(kStatusText[0]) ==
                  static_cast<std::size_t>(Status::interceptor_unused) + 1,
              "kStatusText must have one entry per Status");

const StatusText& text_of(Status status) noexcept {
  const auto i = static_cast<std::size_t>(status);
  static constexpr StatusText kUnknown{"unknown_status", "unknown status value"};
  return i < sizeof(kStatusText) / sizeof(kStatusText[0]) ? kStatusText[i] : kUnknown;
}

}  // namespace

const char* describe(Status status) noexcept { return text_of(status).description; }
const char* name(Status status) noexcept { return text_of(status).name; }

}  // namespace loopcanary
