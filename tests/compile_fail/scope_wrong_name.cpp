// SPDX-License-Identifier: MIT
// Must NOT compile with LOOPCANARY_ENABLED=0: a compiled-out macro still checks its arguments.
#include "loopcanary/instrument.hpp"
#include "loopcanary/port/sim.hpp"

void handler(loopcanary::sim::PortMonitor& monitor) {
  const double not_a_name = 1.0;
  LOOPCANARY_SCOPE(monitor, not_a_name);
}
