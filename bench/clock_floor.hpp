// SPDX-License-Identifier: MIT
// The floor the instruction-count drivers measure against: `reads` reads of the Linux port's
// clock (Clock::now(), the hot path's one clock read) in a counted loop. Included by one
// translation unit per program (an extern "C" definition): linux_hotpath_driver.cpp,
// linux_sample_driver.cpp. Counted by callgrind or QEMU's execution log: docs/benchmarks.md.
#pragma once

#include "loopcanary/port/linux.hpp"

extern "C" {

/// `reads` clock reads, each consumed at no instruction cost. Any thread.
__attribute__((noinline)) void lc_run_clock_reads(unsigned long reads) {
  for (unsigned long i = 0; i < reads; ++i) {
    const loopcanary::tick_t a = loopcanary::port_linux::Clock::now();
    asm volatile("" : : "r"(a));
  }
}
}
