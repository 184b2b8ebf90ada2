// SPDX-License-Identifier: MIT
// Event identity: a pointer to a static descriptor, never a string built at run time.
#pragma once

#include <cstdint>

namespace loopcanary {

class EventHealth;

/// Static descriptor of one kind of dispatched event. Define one per event type with static
/// storage duration (`constexpr loopcanary::Event kButton{"button"};`); the monitor stores its
/// address, and reports print its name, so both must outlive every report.
struct Event {
  /// Name printed in reports. Static, NUL-terminated, non-null.
  const char* name;
  /// A longer block threshold for this event, in microseconds (an operation that is slow by
  /// design, such as a flash erase); 0 uses the loop's threshold. The loop's threshold is the
  /// floor: a smaller value is raised to it, so end() needs only one comparison. Half the tick
  /// counter's wrap at the loop's tick_hz is the ceiling (kMaxIntervalTicks: 2147.48 s at
  /// 1 MHz): a larger value is capped there, as is the hang limit that follows, since no
  /// longer interval can be told from a wrapped one (an Event is a constant, checked by no
  /// init). Arm point, sample interval and hang limit follow (see Monitor::limits_for).
  std::uint32_t threshold_us = 0;
  /// Queue-latency and deadline counters of this event type (health.hpp), or null for none:
  /// static storage the descriptor points at (`constexpr Event kTick{"tick", 0, &g_tick_health};`).
  /// Monitor::begin_at(event, now, posted) records into it. An event with storage is dispatched
  /// on one loop only: that loop is the counters' single writer.
  EventHealth* health = nullptr;
};

}  // namespace loopcanary
