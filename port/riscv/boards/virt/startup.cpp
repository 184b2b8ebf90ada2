// SPDX-License-Identifier: MIT
// Start-up for the virt board: _start, the trap vector, the trap handler of last resort.
//
// _start (first in the image, at 0x80000000, where QEMU's reset vector jumps with -bios none):
// gp and sp set, s0 and ra cleared (the end of every frame-pointer chain), interrupts off, the
// trap vector installed (vectored mode), then .data copied from its load image, .bss zeroed,
// static constructors (init_array) run and main() called; main's return value becomes the exit
// code. The no-init RAM (.noinit, LOOPCANARY_BOARD_NOINIT) is left as the reset found it.
// Every exception, and every interrupt without a handler of its own, prints its cause, mepc and
// mtval, then exits with 128 + the exception code (interrupts: 192 + the interrupt code), so a
// crashed test fails with a message instead of hanging.
#include <cstddef>
#include <cstdint>

#include "loopcanary/board.hpp"
#include "runtime.hpp"

using loopcanary::board::detail::write_hex_line;

// Linker script symbols (virt.ld); the run-time start's are in port/boards/runtime.
extern "C" {
extern std::uint32_t __stack_top[];
extern const std::uint16_t __code_start[];
extern const std::uint16_t __code_end[];
}

extern "C" {

// Every trap without a handler: name it, then exit. Reached from the trap vector (never
// returns, so the interrupted registers need not be kept).
[[noreturn, gnu::used]] void loopcanary_board_trap() {
  std::uint32_t cause;
  std::uint32_t pc;
  std::uint32_t value;
  __asm__ volatile("csrr %0, mcause\n csrr %1, mepc\n csrr %2, mtval" : "=r"(cause), "=r"(pc), "=r"(value));
  const bool interrupt = (cause & 0x80000000u) != 0;
  loopcanary::board::write(interrupt ? "board: unhandled interrupt\n" : "board: unhandled exception\n");
  write_hex_line("board: mcause", cause);
  write_hex_line("board: mepc", pc);
  write_hex_line("board: mtval", value);
  loopcanary::board::exit(static_cast<int>((interrupt ? 192u : 128u) + (cause & 0x3Fu)));
}

}  // extern "C"

// _start, then the trap vector: in vectored mode exceptions enter at its base, interrupt i at
// base + 4 * i; each entry one uncompressed jump (norvc: a compressed `j` would shift every entry
// after it). Entry 3, the machine software interrupt, is the firmware's
// loopcanary_board_software_interrupt when it defines one; entry 7, the machine timer, the riscv
// port's loopcanary_riscv_mtimer when the firmware links the port; else (weak aliases) the
// handler of last resort. mtvec's base must be 4-byte aligned; 256 covers parts that want more.
__asm__(
    ".section .text.start,\"ax\",@progbits\n"
    ".globl _start\n"
    ".type _start, @function\n"
    "_start:\n"
    "  .option push\n"
    "  .option norelax\n"
    "  la gp, __global_pointer$\n"
    "  .option pop\n"
    "  la sp, __stack_top\n"
    "  li s0, 0\n"
    "  li ra, 0\n"
    "  csrw mie, zero\n"
    "  csrci mstatus, 8\n"
    "  la t0, loopcanary_board_vectors\n"
    "  ori t0, t0, 1\n"
    "  csrw mtvec, t0\n"
    "  tail loopcanary_board_start\n"
    ".size _start, . - _start\n"
    ".section .text.loopcanary_board_vectors,\"ax\",@progbits\n"
    ".balign 256\n"
    ".globl loopcanary_board_vectors\n"
    ".weak loopcanary_riscv_mtimer\n"
    ".set loopcanary_riscv_mtimer, loopcanary_board_trap\n"
    ".weak loopcanary_board_software_interrupt\n"
    ".set loopcanary_board_software_interrupt, loopcanary_board_trap\n"
    "loopcanary_board_vectors:\n"
    "  .option push\n"
    "  .option norvc\n"
    "  j loopcanary_board_trap\n"  // 0: exceptions
    "  .rept 2\n  j loopcanary_board_trap\n  .endr\n"  // 1..2
    "  j loopcanary_board_software_interrupt\n"  // 3: machine software interrupt
    "  .rept 3\n  j loopcanary_board_trap\n  .endr\n"  // 4..6
    "  j loopcanary_riscv_mtimer\n"  // 7: machine timer
    "  .rept 8\n  j loopcanary_board_trap\n  .endr\n"  // 8..15
    "  .option pop\n"
    ".text\n");

namespace loopcanary::board {

std::uintptr_t code_begin() noexcept { return reinterpret_cast<std::uintptr_t>(__code_start); }
std::uintptr_t code_end() noexcept { return reinterpret_cast<std::uintptr_t>(__code_end); }
std::uintptr_t stack_top() noexcept { return reinterpret_cast<std::uintptr_t>(__stack_top); }

}  // namespace loopcanary::board
