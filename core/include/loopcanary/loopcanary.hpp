// SPDX-License-Identifier: MIT
// Umbrella header: the whole core API. Port headers (the clock) are separate: see port/.
#pragma once

#include "loopcanary/cause.hpp"       // IWYU pragma: export
#include "loopcanary/config.hpp"      // IWYU pragma: export
#include "loopcanary/event.hpp"       // IWYU pragma: export
#include "loopcanary/format.hpp"      // IWYU pragma: export
#include "loopcanary/hal.hpp"         // IWYU pragma: export
#include "loopcanary/health.hpp"      // IWYU pragma: export
#include "loopcanary/histogram.hpp"   // IWYU pragma: export
#include "loopcanary/instrument.hpp"  // IWYU pragma: export
#include "loopcanary/monitor.hpp"     // IWYU pragma: export
#include "loopcanary/record.hpp"      // IWYU pragma: export
#include "loopcanary/status.hpp"      // IWYU pragma: export
#include "loopcanary/version.hpp"     // IWYU pragma: export
#include "loopcanary/watchdog.hpp"    // IWYU pragma: export
