// SPDX-License-Identifier: MIT
// The cause rule (docs/design.md, "Cause"): why a block's loop thread did not finish, from the
// CPU readings of its record. One rule, used where records are built (the watchdog's assembler)
// and where a device leaves the cause to the host (derive() on the decoded record).
#pragma once

#include <cstdint>

#include "loopcanary/record.hpp"

namespace loopcanary {

/// The rule's shares, per mille of the window. WatchdogConfig::cause holds the device's.
struct CauseRule {
  /// Thread CPU at least this share of wall time (per mille) is *running*. 1..1000.
  std::uint16_t running_permille = 700;
  /// Without a run-queue counter (kCpuWaitUs of Hal::read_cpu): below the running share, a
  /// machine busy at least this share (per mille) over the window is *starved*, otherwise
  /// *waiting*. 1..1000.
  std::uint16_t starved_busy_permille = 900;
  /// With a run-queue counter: below the running share, a loop thread that spent at least this
  /// share (per mille) of its off-CPU time runnable, waiting for a CPU, is *starved*, otherwise
  /// *waiting*. 1..1000.
  std::uint16_t starved_wait_permille = 500;
};

/// The cause rule on a record's CPU readings: the window (window_ticks at tick_hz) less the
/// stolen time (steal_us, at most all of it) is what the thread could have run; unknown
/// without thread CPU time; running when thread_cpu_us is at least running_permille of that;
/// otherwise starved or waiting, by the thread's run-queue wait when known
/// (starved_wait_permille of its off-CPU time), else by system_busy_permille
/// (starved_busy_permille), else unknown. Reads only those fields. Any context.
Cause classify(const BlockRecord& record, const CauseRule& rule) noexcept;

/// Fills the fields of `record` that are computed from its raw evidence: `cause`, by classify()
/// with `rule`. The assembler calls it for every record it builds (in the watchdog, and in the
/// host's decoder of an evidence stream); the decoder calls it too on a packet whose
/// configuration leaves the cause to it (docs/report-format.md, configuration bit 2). Reads
/// and writes only `record`. Any context.
void derive(BlockRecord& record, const CauseRule& rule) noexcept;

namespace detail {
/// floor(part * 1000 / whole), at most 1000; kUnknownPermille when `whole` is 0. Any context.
std::uint16_t permille(std::uint64_t part, std::uint64_t whole) noexcept;
}  // namespace detail

}  // namespace loopcanary
