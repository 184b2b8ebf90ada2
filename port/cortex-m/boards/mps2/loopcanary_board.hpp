// SPDX-License-Identifier: MIT
// Board "mps2": QEMU's ARM MPS2 FPGA images mps2-an385 (Cortex-M3), mps2-an386 (Cortex-M4F) and
// mps2-an500 (Cortex-M7). Startup code, memory map, console and exit code; nothing of
// loopcanary. Every board folder provides this header with the same names, so firmware (and
// the device tests) build for another board by linking another board library.
//
//   loopcanary_board_mps2 (CMake): vector table, reset handler (.data copy, .bss zero,
//   init_array, FPU on for hard-float builds), then main(); its return value is the exit code.
#pragma once

#include <cstdint>

namespace loopcanary::board {

/// Core clock of the MPS2 FPGA images, Hz. SysTick (processor clock source) and DWT CYCCNT
/// count it.
inline constexpr std::uint32_t kCoreHz = 25'000'000;

/// Board and CPU, for log lines ("mps2-an385 cortex-m3").
const char* name() noexcept;

/// Writes `text` (NUL-terminated) to the console: semihosting SYS_WRITE0. QEMU sends it to the
/// chardev named by -semihosting-config. Any context; blocks the CPU while the host writes.
void write(const char* text) noexcept;

/// Ends the run with `code` (0..255 reach the host): semihosting SYS_EXIT_EXTENDED, so QEMU
/// exits with that status. Any context.
[[noreturn]] void exit(int code) noexcept;

}  // namespace loopcanary::board
