// SPDX-License-Identifier: MIT
// The monitor's event health (monitor.hpp: init_event, the deadline notes), a unit of its own so
// a build that compiles the monitor without the health code (tests/CMakeLists.txt's lean
// builds) links without it.
#include "loopcanary/monitor.hpp"

namespace loopcanary {

Status Monitor::init_event(const Event& event, const EventHealthConfig& config) noexcept {
  if (!initialised()) return Status::not_initialised;
  if (event.health == nullptr) return Status::event_health_missing;
  if (this->full_without(event)) return Status::health_events_full;
  const Status status = event.health->configure(config, tick_hz_);
  if (status == Status::ok) this->list(event);  // room checked above
  return status;
}

void Monitor::record_unusual_latency(const Event& event, tick_t posted, tick_t latency) noexcept {
  if (event.health->record_unusual(latency)) deadline_missed(event, posted, posted + latency);
}

void Monitor::deadline_missed(const Event& event, tick_t due, tick_t now) noexcept {
  // The late dispatch has begun (seq_ is its odd seq); the note waits for the watchdog like a
  // block's. Its stage marks are not read: none are made yet.
  // The handler first: the note's push publishes it. Naming it here links it only into
  // firmware that has deadlines.
  detail::store_relaxed(deadline_handler_, &detail::report_deadline_note);
  BlockNote note{{}, detail::load_relaxed(seq_) - 1u, due, now, &event};
  if (!notes_.push(note)) detail::bump(deadline_notes_dropped_);
}

}  // namespace loopcanary
