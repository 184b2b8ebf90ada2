// SPDX-License-Identifier: MIT
// The C and C++ run-time start and the fault printer every board shares (private to the boards'
// libraries; runtime.cpp). Each board's reset code sets up the stack (and what its CPU needs
// first, such as the FPU) and then calls loopcanary_board_start().
#pragma once

#include <cstdint>

namespace loopcanary::board::detail {

/// Writes "<label> 0x<value in 8 hex digits>\n" to the board's console (board::write) without a
/// formatting library: what a fault handler prints, whatever state the firmware is in. `label`
/// is cut at 30 characters. Any context.
void write_hex_line(const char* label, std::uint32_t value) noexcept;

}  // namespace loopcanary::board::detail

extern "C" {
/// Copies .data from its load image, zeroes .bss, runs the static constructors (init_array) and
/// calls main(); main's return value goes to board::exit(). The no-init RAM (.noinit) is left as
/// the reset found it. Called once, by the board's reset code, with the stack set up; never
/// returns. Uses the linker script symbols every board's script defines (__data_start,
/// __data_end, __data_load, __bss_start, __bss_end, __init_array_start, __init_array_end).
[[noreturn]] void loopcanary_board_start();
}
