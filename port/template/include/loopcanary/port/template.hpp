// SPDX-License-Identifier: MIT
// Port "template": the skeleton of a new port. Copy port/template to port/<name>, name this
// header include/loopcanary/port/<name>.hpp, fill in every TODO(port), and read
// docs/porting.md. It compiles as it is (the test workflow builds it), so a copy starts from a
// build that works; the stubs report every service as unavailable.
//
// Hot tier (this header, inlined into begin/end): the clock and its rate.
// Cold tier (loopcanary_port.cpp): the Hal callbacks the watchdog calls.
#pragma once

#include <cstdint>

#include "loopcanary/hal.hpp"
#include "loopcanary/instrument.hpp"

namespace loopcanary::port_template {

/// Tick rate of Clock, in Hz. TODO(port): the rate of your free-running counter. Pick a
/// counter whose wrap period is at least twice the longest hang limit you configure.
inline constexpr std::uint32_t kTickHz = 1'000'000;

/// Hot-tier clock. now() must be cheap (a register or memory read), callable from the loop
/// and from the watchdog context, monotonic modulo 2^32.
struct Clock {
  static tick_t now() noexcept {
    // TODO(port): return the free-running counter, e.g. a timer's count register.
    return 0;
  }
};

/// The monitor type firmware on this port declares.
using PortMonitor = ClockedMonitor<Clock>;

/// The cold tier: fill the callbacks your platform can serve; leave the others null.
Hal make_hal() noexcept;

}  // namespace loopcanary::port_template
