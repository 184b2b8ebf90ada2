// SPDX-License-Identifier: MIT
#include "loopcanary/port/template.hpp"

namespace loopcanary::port_template {
namespace {

// TODO(port): write up to `max` program counters of the loop's context, innermost first. On
// an MCU, read PC (and LR) from the exception frame of the interrupted loop; on an OS, signal
// the loop thread and walk its frames. Return 0 when no sample could be taken.
std::size_t capture_stack(void* /*context*/, const Monitor& /*loop*/, Frame* /*pcs*/, std::size_t /*max*/) {
  return 0;
}

// TODO(port): the CPU counters you have, each with out->set(): the loop thread's CPU time
// (kCpuThreadUs) and run-queue wait (kCpuWaitUs) in microseconds, cumulative busy/total/process
// counters of the machine in one unit (kCpuBusy, kCpuTotal, kCpuProcess). Set nothing when
// there are none: the cause is then "unknown".
void read_cpu(void* /*context*/, const Monitor& /*loop*/, CpuReading* /*out*/) {}

// TODO(port): true while a debugger is attached (e.g. DHCSR.C_DEBUGEN on Cortex-M).
bool debugger_attached(void* /*context*/) { return false; }

// TODO(port): the memory values you have, in bytes, each with out->set(): the loop's stack
// high-water mark (kMemoryStackPeak, e.g. from a painted stack) or its current depth
// (kMemoryStackCurrent) and its size (kMemoryStackSize); the heap's free bytes (kMemoryHeapFree)
// and bytes in use (kMemoryHeapUsed); on an OS the resident set (kMemoryResident,
// kMemoryResidentPeak). Set nothing when there are none: every value is then "unknown".
void read_memory(void* /*context*/, const Monitor& /*loop*/, MemoryReading* /*out*/) {}

}  // namespace

Hal make_hal() noexcept {
  Hal hal{};
  hal.context = nullptr;  // TODO(port): state your callbacks need
  hal.capture_stack = &capture_stack;
  // Optional: hal.capture_words, the stack evidence the host unwinds whole chains from (builds
  // with LOOPCANARY_STACK_WORDS > 0 sending the evidence stream; docs/porting.md).
  hal.read_cpu = &read_cpu;
  hal.debugger_attached = &debugger_attached;
  hal.read_memory = &read_memory;
  return hal;
}

}  // namespace loopcanary::port_template
