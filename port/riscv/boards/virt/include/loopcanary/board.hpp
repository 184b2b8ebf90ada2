// SPDX-License-Identifier: MIT
// Board "virt": QEMU's RISC-V `virt` machine, rv32 (qemu-system-riscv32 -M virt -bios none).
// Start-up code, trap vector, memory map, console, host files, exit code and reset; of
// loopcanary only the ResetCause and PacketSink types. Every board's library provides this
// header, loopcanary/board.hpp, with the same names (here with the RISC-V timer's rate,
// kTimerHz, and the stack's top), so firmware and the device tests build for another board by
// linking another board library.
//
//   loopcanary_board_virt (CMake): _start at 0x80000000 (where QEMU's reset vector jumps), the
//   trap vector (vectored mode: exceptions and every interrupt without a handler end the run
//   with a message, the machine timer goes to loopcanary_riscv_mtimer), .data copy, .bss zero,
//   init_array, then main(); its return value is the exit code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/packet.hpp"

/// Places a variable in the board's no-init RAM (virt.ld: section .noinit, 16 KiB at
/// 0x80200000): start-up code neither zeroes nor initialises it, and QEMU's reset does not load
/// it again (a segment without file bytes), so it keeps its bytes across a reset and holds
/// garbage after power-on (QEMU: zeros at start). Only for types with a trivial default
/// constructor and no initialiser (a StaticCrashBox), at namespace scope.
#define LOOPCANARY_BOARD_NOINIT __attribute__((section(".noinit")))

extern "C" {
/// The machine software interrupt's handler (trap vector entry 3), for the firmware to define:
/// entered straight from the vector, with the interrupted registers as they were, so it must
/// save what it uses and return with mret (__attribute__((interrupt("machine")))), or never
/// return. The board's weak default ends the run as an unhandled interrupt.
void loopcanary_board_software_interrupt();
}

namespace loopcanary::board {

/// Rate of the CLINT's mtime on QEMU virt, Hz (10 MHz): the tick rate of the riscv port's clock.
inline constexpr std::uint32_t kTimerHz = 10'000'000;

/// Board and CPU, for log lines ("virt rv32imac").
const char* name() noexcept;

/// The firmware's code as the linker placed it, [code_begin(), code_end()) (virt.ld:
/// __code_start, __code_end): the code range of the riscv port's stack sample. Any context.
std::uintptr_t code_begin() noexcept;
std::uintptr_t code_end() noexcept;

/// One past the highest address of the main stack (virt.ld: __stack_top), where start-up sets
/// sp: the stack top of the riscv port's stack sample. Any context.
std::uintptr_t stack_top() noexcept;

/// Writes `text` (NUL-terminated) to the console: semihosting SYS_WRITE0. QEMU sends it to the
/// chardev named by -semihosting-config. Any context; blocks the CPU while the host writes.
void write(const char* text) noexcept;

/// Ends the run with `code` (0..255 reach the host as QEMU's exit status): virt's test device
/// (SiFive test finisher at 0x100000: 0x5555 for 0, (code << 16) | 0x3333 otherwise). Any context.
[[noreturn]] void exit(int code) noexcept;

/// A file on the host that the firmware writes over semihosting: how this board streams packets
/// off the device (a board with a UART sends them there instead). Zero-initialised (HostFile{})
/// = not open. Nothing is dropped without a count.
struct HostFile {
  std::uint32_t handle;         ///< semihosting file handle; 0 while not open
  std::uint32_t bytes_written;  ///< bytes the host wrote
  std::uint32_t bytes_lost;     ///< bytes not written: the file was not open, or the host wrote
                                ///< fewer than asked (disk full, closed by the host)
};

/// Opens `path` (NUL-terminated; relative to QEMU's working directory, or absolute) on the host
/// for writing in binary, created or truncated: semihosting SYS_OPEN, mode "wb". Closes `file`
/// first if it is open; clears its counters. Returns false when the host refuses (`file` stays
/// closed). Any context; like every semihosting call it stops the CPU while the host works.
bool open_host_file(HostFile& file, const char* path) noexcept;

/// Appends `size` bytes at `data` to `file` (semihosting SYS_WRITE) and counts them in
/// bytes_written, or in bytes_lost when `file` is not open or the host writes fewer. Any context.
void write_host_file(HostFile& file, const std::uint8_t* data, std::size_t size) noexcept;

/// Closes `file` (semihosting SYS_CLOSE); its counters stay. Returns false when it was not open
/// or the host reports an error. Any context.
bool close_host_file(HostFile& file) noexcept;

/// A PacketSink (riscv::drain, CrashBox::drain, EvidenceRing::drain) that appends the bytes of
/// every call to `file` with write_host_file(); `file` must outlive the sink.
PacketSink host_file_sink(HostFile& file) noexcept;

/// Pends the machine software interrupt (CLINT msip, enabled in mie): it is taken as soon as
/// interrupts are enabled, e.g. right after the timer interrupt that pends it returns. Its
/// handler is loopcanary_board_software_interrupt (below). Any context.
void pend_software_interrupt() noexcept;

/// Why the hart last reset. QEMU virt models no reset-cause register, so this is always
/// ResetCause::unknown: the crash box then uses the cause the firmware set before requesting the
/// reset (CrashBox::set_reset_cause). Any context.
ResetCause reset_cause() noexcept;

/// Requests a system reset through the test device (0x7777), as a hardware watchdog would, and
/// waits for it: RAM keeps its contents, QEMU loads the ELF's segments again (not the no-init
/// RAM), start-up runs again. Any context.
[[noreturn]] void request_reset() noexcept;

}  // namespace loopcanary::board
