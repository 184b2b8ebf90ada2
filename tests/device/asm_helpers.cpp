// SPDX-License-Identifier: MIT
// ARMv6-M/ARMv7-M Thumb code (runs on every Cortex-M).
#include "asm_helpers.hpp"

__asm__(
    ".syntax unified\n"
    ".thumb\n"
    ".section .text.dt_spin_until,\"ax\",%progbits\n"
    ".global dt_spin_until\n"
    ".type dt_spin_until, %function\n"
    ".thumb_func\n"
    ".align 2\n"
    "dt_spin_until:\n"
    "1:\n"
    "  ldr r1, [r0]\n"
    "  cmp r1, #0\n"
    "  beq 1b\n"
    "  bx lr\n"
    ".global dt_spin_until_end\n"
    "dt_spin_until_end:\n"
    ".size dt_spin_until, . - dt_spin_until\n"
    "\n"
    ".section .text.dt_run_on_psp,\"ax\",%progbits\n"
    ".global dt_run_on_psp\n"
    ".type dt_run_on_psp, %function\n"
    ".thumb_func\n"
    ".align 2\n"
    "dt_run_on_psp:\n"
    "  push {r4, lr}\n"       // on the main stack
    "  msr psp, r2\n"
    "  mrs r4, control\n"     // r4 (callee-saved) keeps the old CONTROL
    "  movs r3, #2\n"
    "  orrs r3, r4\n"
    "  msr control, r3\n"     // SPSEL = 1: Thread mode now uses PSP
    "  isb\n"
    "  mov r3, r0\n"
    "  mov r0, r1\n"
    "  blx r3\n"
    "  msr control, r4\n"     // back to the main stack
    "  isb\n"
    "  pop {r4, pc}\n"
    ".size dt_run_on_psp, . - dt_run_on_psp\n"
    ".text\n");
