// SPDX-License-Identifier: MIT
// Must NOT compile: a port clock without now() stops the build with an explanation.
#include "loopcanary/instrument.hpp"

struct ClockWithoutNow {};

loopcanary::ClockedMonitor<ClockWithoutNow> monitor;
