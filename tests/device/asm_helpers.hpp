// SPDX-License-Identifier: MIT
// Assembly helpers of the device tests, with exactly known code ranges (asm_helpers.cpp).
#pragma once

#include <cstdint>

extern "C" {
/// Spins until `*flag` is non-zero. A leaf function: every PC sample taken while it runs lies in
/// [dt_spin_until, dt_spin_until_end), and the stacked LR is its caller.
void dt_spin_until(const volatile std::uint32_t* flag);
extern const char dt_spin_until_end[];

/// Calls `function(argument)` in Thread mode on the process stack (PSP = `stack_top`, CONTROL.SPSEL
/// = 1), then returns to the main stack.
void dt_run_on_psp(void (*function)(void*), void* argument, void* stack_top);
}
