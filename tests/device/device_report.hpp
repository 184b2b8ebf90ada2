// SPDX-License-Identifier: MIT
// Output and verdict helpers of the scenario firmware (block, hang, crash box): checks that print
// as they go, records in the text form, the capture of packets check_firmware.cmake decodes on
// the host, the exit code.
#pragma once

#include <cstdint>

#include "loopcanary/crash_box.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary::device_report {

/// Prints the firmware's name and the board.
void start(const char* firmware) noexcept;

/// Prints "check ok: <what>" or "check FAILED: <what>" and counts failures.
void check(bool passed, const char* what) noexcept;

/// The record in the core's text form (format_text).
void print_record(const BlockRecord& record) noexcept;

/// Sends every record waiting in `watchdog`'s ring to the host file `path` as binary packets
/// (cortex_m::drain_packets through the board's semihosting file sink), closes the file, checks
/// that nothing was refused or lost, and prints "lc-capture packets=<n> refused=<r> bytes=<b>
/// lost=<l>" for check_firmware.cmake, which decodes the file with the host tool. The ring's
/// consumer context. Returns the packets sent.
std::uint32_t send_capture(Watchdog& watchdog, const char* path) noexcept;

/// The same for the records `box` kept from before the reset (CrashBox::drain: `previous_boot`
/// packets; refused is always 0). At boot, after box.open(). Returns the packets sent.
std::uint32_t send_capture(CrashBox& box, const char* path) noexcept;

/// The port counters (ticks, polls, captures, poll cost).
void print_port_stats() noexcept;

/// Prints the verdict; returns the exit code (0: every check passed).
int finish() noexcept;

}  // namespace loopcanary::device_report
