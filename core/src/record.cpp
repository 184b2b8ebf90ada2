// SPDX-License-Identifier: MIT
// The names of record.hpp's enums.
#include "loopcanary/record.hpp"

namespace loopcanary {

const char* to_string(Phase phase) noexcept {
  switch (phase) {
    case Phase::in_progress: return "in_progress";
    case Phase::hang: return "hang";
    case Phase::final: return "final";
    case Phase::deadline_miss: return "deadline_miss";
  }
  return "unknown_phase";
}

const char* to_string(Cause cause) noexcept {
  switch (cause) {
    case Cause::unknown: return "unknown";
    case Cause::running: return "running";
    case Cause::waiting: return "waiting";
    case Cause::starved: return "starved";
  }
  return "unknown_cause";
}

}  // namespace loopcanary
