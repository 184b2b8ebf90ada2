// SPDX-License-Identifier: MIT
// Board "mps2": QEMU's ARM MPS2 FPGA images mps2-an385 (Cortex-M3), mps2-an386 (Cortex-M4F) and
// mps2-an500 (Cortex-M7). Startup code, memory map, console, host files, exit code and reset;
// of loopcanary only the ResetCause and PacketSink types. Every board's library provides this
// header, loopcanary/board.hpp, with the same names, so firmware (and the device tests) build
// for another board by linking another board library.
//
//   loopcanary_board_mps2 (CMake): vector table, reset handler (.data copy, .bss zero,
//   init_array, FPU on for hard-float builds), then main(); its return value is the exit code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/packet.hpp"

/// Places a variable in the board's no-init RAM (mps2.ld: section .noinit, 16 KiB at
/// 0x20000000): start-up code neither zeroes nor initialises it, so it keeps its bytes across a
/// system reset and holds garbage after power-on (QEMU: zeros at start). Only for types with a
/// trivial default constructor and no initialiser (a StaticCrashBox), at namespace scope.
#define LOOPCANARY_BOARD_NOINIT __attribute__((section(".noinit")))

namespace loopcanary::board {

/// Core clock of the MPS2 FPGA images, Hz. SysTick (processor clock source) and DWT CYCCNT
/// count it.
inline constexpr std::uint32_t kCoreHz = 25'000'000;

/// Board and CPU, for log lines ("mps2-an385 cortex-m3").
const char* name() noexcept;

/// The firmware's code as the linker placed it, [code_begin(), code_end()): every function, after
/// the vector table (mps2.ld: __code_start, __code_end). The code range of the port's stack evidence
/// (cortex_m::StackWordsConfig). Any context.
std::uintptr_t code_begin() noexcept;
std::uintptr_t code_end() noexcept;

/// Writes `text` (NUL-terminated) to the console: semihosting SYS_WRITE0. QEMU sends it to the
/// chardev named by -semihosting-config. Any context; blocks the CPU while the host writes.
void write(const char* text) noexcept;

/// Ends the run with `code` (0..255 reach the host): semihosting SYS_EXIT_EXTENDED, so QEMU
/// exits with that status. Any context.
[[noreturn]] void exit(int code) noexcept;

/// A file on the host that the firmware writes over semihosting: how this board streams packets
/// off the device (a board with a UART sends them there instead: docs/porting-cortex-m.md).
/// Zero-initialised (HostFile{}) = not open. Nothing is dropped without a count.
struct HostFile {
  std::uint32_t handle;         ///< semihosting file handle; 0 while not open
  std::uint32_t bytes_written;  ///< bytes the host wrote
  std::uint32_t bytes_lost;     ///< bytes not written: the file was not open, or the host wrote
                                ///< fewer than asked (disk full, closed by the host)
};

/// Opens `path` (NUL-terminated; relative to QEMU's or the debugger's working directory, or
/// absolute) on the host for writing in binary, created or truncated: semihosting SYS_OPEN, mode
/// "wb". Closes `file` first if it is open; clears its counters. Returns false when the host
/// refuses (`file` stays closed). Any context; like every semihosting call it stops the CPU
/// while the host works.
bool open_host_file(HostFile& file, const char* path) noexcept;

/// Appends `size` bytes at `data` to `file` (semihosting SYS_WRITE) and counts them in
/// bytes_written, or in bytes_lost when `file` is not open or the host writes fewer. Any context.
void write_host_file(HostFile& file, const std::uint8_t* data, std::size_t size) noexcept;

/// Closes `file` (semihosting SYS_CLOSE); its counters stay. Returns false when it was not open
/// or the host reports an error. Any context.
bool close_host_file(HostFile& file) noexcept;

/// A PacketSink (cortex_m::drain, CrashBox::drain, EvidenceRing::drain) that appends the
/// bytes of every call to `file` with write_host_file(); `file` must outlive the sink.
PacketSink host_file_sink(HostFile& file) noexcept;

/// Why the core last reset. The MPS2 images have no reset-cause register that QEMU models (the
/// SCC's registers hold LEDs, remap and clocks; Cortex-M itself records no cause), so this is
/// always ResetCause::unknown: the crash box then uses the cause the firmware set before
/// requesting the reset (CrashBox::set_reset_cause). Any context.
ResetCause reset_cause() noexcept;

/// Requests a system reset (SCB AIRCR.SYSRESETREQ, keeping the priority grouping), as a hardware
/// watchdog would, and waits for it: RAM keeps its contents, start-up runs again. Writes
/// pending before the call complete first. Any context (privileged).
[[noreturn]] void request_reset() noexcept;

}  // namespace loopcanary::board
