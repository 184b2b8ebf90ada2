// SPDX-License-Identifier: MIT
// Setup, output and verdict helpers of the scenario firmware (block, hang, deadline, crash box):
// the port, monitor and watchdog set up as every scenario runs them, checks that print as they go,
// records in the text form, the capture of packets check_firmware.cmake decodes on the host, the
// exit code.
#pragma once

#include <cstdint>

#include "loopcanary/crash_box.hpp"
#include "loopcanary/evidence.hpp"
#include "loopcanary/monitor.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/time.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary::device_report {

/// Prints the firmware's name and the board.
void start(const char* firmware) noexcept;

/// Prints "check ok: <what>" or "check FAILED: <what>" and counts failures.
void check(bool passed, const char* what) noexcept;
/// True once a check of this boot failed.
bool failed() noexcept;
/// Counts this boot in no-init RAM (a reset keeps the count; power-on garbage starts it at 1),
/// prints "lc-boot <n>" and returns n. Once, first in main(), after start().
std::uint32_t count_boot() noexcept;

/// Starts the port (cortex_m::init with the board's core clock, or riscv::init with its timer
/// rate and the firmware's code and stack bounds), 1000 timer polls a second and the clock
/// starting at `start` (ticks); checks "port init". Thread mode, first in main(), after
/// start().
void init_port(tick_t start) noexcept;

/// A scenario loop's monitor configuration: named "main", on the port clock (device_port::tick_hz(),
/// so after init_port()), block threshold `threshold_us` (microseconds, > 0); every other field at
/// its default, for the caller to set.
MonitorConfig loop_config(std::uint32_t threshold_us) noexcept;

/// Adds `monitor` (initialised) and the interceptor `on_report` (context nullptr) to `watchdog`
/// (initialised, with device_port::make_hal()) and attaches the watchdog to the port's timer poll;
/// checks each step ("watchdog add", "interceptor"). Thread mode, after init_port().
void watch(Watchdog& watchdog, Monitor& monitor, Interceptor on_report) noexcept;

/// The record in the core's text form (format_text).
void print_record(const BlockRecord& record) noexcept;

/// Sends every record waiting in `watchdog`'s ring to the host file `path` as binary packets
/// (device_port::drain, then drain_health for its health ring, through the board's
/// semihosting file sink), closes the file, checks
/// that nothing was refused or lost, and prints "lc-capture packets=<n> refused=<r> bytes=<b>
/// lost=<l>" for check_firmware.cmake, which decodes the file with the host tool. The ring's
/// consumer context. Returns the packets sent.
std::uint32_t send_capture(Watchdog& watchdog, const char* path) noexcept;

/// The same for the records `box` kept from before the reset (CrashBox::drain: `previous_boot`
/// packets; refused is always 0). At boot, after box.open(). Returns the packets sent.
std::uint32_t send_capture(CrashBox& box, const char* path) noexcept;

/// The same for the bytes waiting in an evidence ring (EvidenceRing::drain: `boot` packets, and
/// `watch`, `sample` and `observation` packets the host assembles into records), counted into
/// packets by their headers as they go; refused is always 0. Returns the packets sent.
std::uint32_t send_capture(EvidenceRing& ring, const char* path) noexcept;

/// The port counters (ticks, polls, captures, poll cost).
void print_port_stats() noexcept;

/// Prints the verdict; returns the exit code (0: every check passed).
int finish() noexcept;

}  // namespace loopcanary::device_report
