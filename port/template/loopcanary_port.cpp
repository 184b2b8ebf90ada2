// SPDX-License-Identifier: MIT
#include "loopcanary_port.hpp"

namespace loopcanary::port_template {
namespace {

// TODO(port): write up to `max` program counters of the loop's context, innermost first. On
// an MCU, read PC (and LR) from the exception frame of the interrupted loop; on an OS, signal
// the loop thread and walk its frames. Return 0 when no sample could be taken.
std::size_t capture_stack(void* /*context*/, const Monitor& /*loop*/, Frame* /*pcs*/, std::size_t /*max*/) {
  return 0;
}

// TODO(port): the loop thread's CPU time in microseconds (false when unavailable).
bool thread_cpu_us(void* /*context*/, const Monitor& /*loop*/, std::uint64_t* /*cpu_us*/) { return false; }

// TODO(port): the loop thread's run-queue wait in microseconds, if your OS tracks it (false
// when unavailable: the cause rule then uses the machine's load).
bool thread_wait_us(void* /*context*/, const Monitor& /*loop*/, std::uint64_t* /*wait_us*/) { return false; }

// TODO(port): cumulative busy/total (and process) counters in one unit (false when unavailable).
bool cpu_counters(void* /*context*/, CpuCounters* /*out*/) { return false; }

// TODO(port): true while a debugger is attached (e.g. DHCSR.C_DEBUGEN on Cortex-M).
bool debugger_attached(void* /*context*/) { return false; }

}  // namespace

Hal make_hal() noexcept {
  Hal hal{};
  hal.context = nullptr;  // TODO(port): state your callbacks need
  hal.capture_stack = &capture_stack;
  hal.thread_cpu_us = &thread_cpu_us;
  hal.cpu_counters = &cpu_counters;
  hal.debugger_attached = &debugger_attached;
  hal.thread_wait_us = &thread_wait_us;
  return hal;
}

}  // namespace loopcanary::port_template
