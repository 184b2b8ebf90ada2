// SPDX-License-Identifier: MIT
// The names of hal.hpp's enums.
#include "loopcanary/hal.hpp"

namespace loopcanary {

const char* to_string(MemoryValue value) noexcept {
  switch (value) {
    case kMemoryResident: return "resident";
    case kMemoryResidentPeak: return "resident_peak";
    case kMemoryHeapUsed: return "heap_used";
    case kMemoryHeapFree: return "heap_free";
    case kMemoryStackPeak: return "stack_peak";
    case kMemoryStackCurrent: return "stack_current";
    case kMemoryStackSize: return "stack_size";
    case kMemoryValues: break;
  }
  return "unknown_memory_value";
}

}  // namespace loopcanary
