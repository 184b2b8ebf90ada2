// SPDX-License-Identifier: MIT
// Output and verdict helpers of the scenario firmware (block, hang): checks that print as they
// go, records in the text form, the lines check_firmware.cmake reads, the exit code.
#pragma once

#include <cstdint>

#include "loopcanary/hal.hpp"
#include "loopcanary/record.hpp"

namespace loopcanary::device_report {

/// Prints the firmware's name and the board.
void start(const char* firmware) noexcept;

/// Prints "check ok: <what>" or "check FAILED: <what>" and counts failures.
void check(bool passed, const char* what) noexcept;

/// The record in the core's text form (format_text).
void print_record(const BlockRecord& record) noexcept;

/// `hal` with a capture_stack that also remembers the program counter of every sample it
/// returns (a spy for the tests: the record keeps only the latest samples and a bounded
/// top-frame table). Pass the result to StaticWatchdog::init.
Hal recording_hal(const Hal& hal) noexcept;

/// Every sampled program counter so far, for check_firmware.cmake: "lc-pc 0x<pc> <count>" per
/// distinct PC, then "lc-pc-other <count>" for samples beyond the table (counted as misses).
void print_sampled_pcs() noexcept;

/// The port counters (ticks, polls, captures, poll cost).
void print_port_stats() noexcept;

/// Prints the verdict; returns the exit code (0: every check passed).
int finish() noexcept;

}  // namespace loopcanary::device_report
