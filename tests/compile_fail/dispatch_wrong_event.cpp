// SPDX-License-Identifier: MIT
// Must NOT compile with LOOPCANARY_ENABLED=0: a compiled-out macro still checks its arguments.
#include "loopcanary/instrument.hpp"
#include "loopcanary/port/sim.hpp"

void handler(loopcanary::sim::PortMonitor& monitor) {
  const int not_an_event = 3;
  LOOPCANARY_DISPATCH(monitor, not_an_event);
}
