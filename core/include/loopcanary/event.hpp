// SPDX-License-Identifier: MIT
// Event identity: a pointer to a static descriptor, never a string built at run time.
#pragma once

#include <cstdint>

namespace loopcanary {

/// Static descriptor of one kind of dispatched event. Define one per event type with static
/// storage duration (`constexpr loopcanary::Event kButton{"button"};`); the monitor stores its
/// address, and reports print its name, so both must outlive every report.
struct Event {
  /// Name printed in reports. Static, NUL-terminated, non-null.
  const char* name;
  /// Block threshold for this event in microseconds; 0 uses the loop's threshold. A non-zero
  /// value moves the block decision of this event's end() to a short out-of-line path (a
  /// 64-bit division), so give thresholds only to the events that need them. Arm point,
  /// sample interval and hang limit follow (see Monitor::limits_for).
  std::uint32_t threshold_us = 0;
};

}  // namespace loopcanary
