// SPDX-License-Identifier: MIT
// The device port the firmware tests run on, chosen by the target: loopcanary::device_port is
// cortex_m on Arm, riscv on RISC-V. The tests shared by both name only what the two ports
// have in common (init() aside: device_report.cpp's init_port()): Clock, PortMonitor,
// tick_hz(), make_hal(), attach(), idle_wait(), drain(), stats().
#pragma once

#if defined(__riscv)
#include "loopcanary/port/riscv.hpp"
namespace loopcanary {
namespace device_port = riscv;
}
#else
#include "loopcanary/port/cortex_m.hpp"
namespace loopcanary {
namespace device_port = cortex_m;
}
#endif
