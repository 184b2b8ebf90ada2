// SPDX-License-Identifier: MIT
// The watchdog in two halves. The observer (Watchdog::poll) decides: it reads the loops' stamps
// and notes, arms on a long dispatch, reads the CPU counters, takes stack samples and decides
// when to report. What it sees goes out as three kinds of evidence: a watch starts, a sample of
// a watch, an Observation per report (what it saw, raw). The assembler turns that evidence into
// BlockRecords: it keeps each watch's latest samples and top frames, and computes the stages,
// the CPU window and shares and the cause.
//
//   observer --watch_started(w)--> --add_sample(w, sample)--> --assemble(observation)--> record
//
// A StaticWatchdog runs both halves in poll(). Everything the assembler computes depends only
// on the evidence, so a program that receives the same evidence in the same order (a decoder of
// a device's packets) builds the same records with these functions.
#pragma once

#include <cstdint>

#include "loopcanary/cause.hpp"
#include "loopcanary/config.hpp"
#include "loopcanary/hal.hpp"
#include "loopcanary/monitor.hpp"
#include "loopcanary/record.hpp"

namespace loopcanary {

/// A CPU reading taken `elapsed` ticks into the watched dispatch.
struct TimedCpuReading {
  std::uint64_t elapsed;  ///< ticks since the dispatch began (extended past the tick width)
  CpuReading counters;
};

/// What the observer saw for one report, raw: everything a BlockRecord holds but the stack
/// samples (kept by the assembler per watch) and what is computed from it. The observer fills
/// every field before it hands one on.
struct Observation {
  std::uint32_t report;           ///< BlockRecord::report
  std::uint32_t records_dropped;  ///< BlockRecord::records_dropped
  std::uint32_t notes_dropped;    ///< BlockRecord::notes_dropped
  Phase phase;
  std::uint8_t flags;             ///< RecordFlag bits; without kFlagUnwatched the CPU readings are valid
  std::uint8_t loop_index;
  const char* loop;               ///< MonitorConfig::name
  std::uint32_t tick_hz;
  /// The dispatch (odd seq) or, for deadline_miss, the deadline note (even seq: its due time
  /// and the late dispatch's begin); `end` is the record's end, and the stage marks those that
  /// started before it (their times are computed up to `end`).
  BlockNote note;
  std::uint64_t duration_ticks;   ///< BlockRecord::duration_ticks
  tick_t threshold_ticks;         ///< BlockRecord::threshold_ticks
  std::uint32_t delayed_by_dispatch;  ///< BlockRecord::delayed_by_dispatch
  const Event* delayed_by;            ///< BlockRecord::delayed_by
  /// The CPU counters at the arming poll and at the last poll that saw the dispatch running
  /// (not read with kFlagUnwatched).
  TimedCpuReading first;
  TimedCpuReading last;
  MemoryReading memory;           ///< BlockRecord::memory
  std::uint32_t samples_missed;   ///< StackSamples::samples_missed
  /// The watch (its index in the watchdog) whose samples the record carries; kNoWatch: none.
  std::uint8_t watch;
};

/// Observation::watch of a report that carries no samples.
inline constexpr std::uint8_t kNoWatch = 0xFF;

/// The assembler's state of one watch: the samples of the dispatch it watches, latest first
/// once full (samples[oldest] is the oldest), and its top frames. Zero is a valid empty state.
struct WatchSamples {
  StackSamples stack;
  WaitSummary wait;  ///< the dispatch's wait readings, by object (add_wait)
  std::uint8_t oldest;
  /// Samples kept and top frames counted: those of the build that observed them (a decoder
  /// assembles a device's evidence with the device's capacities). 0: kMaxSamples, kTopFrames.
  std::uint8_t max_samples;
  std::uint8_t top_frames;
};

/// A watch starts on a new dispatch: forgets the samples of the last one and keeps
/// `max_samples` samples (1..kMaxSamples) and `top_frames` top frames (1..kTopFrames) of the
/// next (larger values are cut to those). Watchdog context (or the decoder's).
void watch_started(WatchSamples& samples, std::size_t max_samples = kMaxSamples,
                   std::size_t top_frames = kTopFrames) noexcept;

/// Adds `sample` to a watch: kept among the latest WatchSamples::max_samples (the oldest is overwritten and
/// counted once full) and counted under its stack (TopStack: same scopes and callers, and the
/// same `stack` evidence), or in top_other when the table is full. `sample` has at least one
/// frame. `stack`: the sample's stack evidence (Hal::capture_words), null when it has none;
/// ignored in a build without stack evidence (LOOPCANARY_STACK_WORDS 0). A new entry keeps a
/// copy of it (StackSamples::evidence) and the kept sample names that slot (Sample::stack).
/// Watchdog context (or the decoder's).
void add_sample(WatchSamples& samples, const Sample& sample, const StackEvidence* stack = nullptr) noexcept;

/// True when both samples' stack evidence has the same words at the same offsets from its stack
/// pointer (the stack pointers themselves may differ): one unwind with the firmware's call-frame
/// information from those words holds for both at the same program counter, as long as it reads
/// no register but the stack pointer, and the link register only where the samples' callers
/// (TopStack's key) hold it. The registers (sp, lr, fp) are not compared: the link register and
/// r7 are general registers in most code, and keying on them would split samples of one stack.
/// Any context.
bool same_stack_evidence(const StackEvidence& a, const StackEvidence& b) noexcept;

/// True when two wait readings name the same object held by the same thread, so they count
/// under one WaitSeen: the same kind and owner and, by kind, the same address (mutex, condition,
/// futex), descriptor and description (file, socket, pipe, poll), wait channel (disk) or system
/// call (syscall); every sleep is one object. Any context.
bool same_wait(const WaitReading& a, const WaitReading& b) noexcept;

/// Adds a wait reading of a watch's dispatch (kind not none) to its WaitSummary: counted under
/// the entry of its object (same_wait; the entry takes the reading's holder stack when it has
/// one, and its chain of holders and deadlock flag always), else a new entry while there is
/// room, else in WaitSummary::other. Watchdog context (or the decoder's). Does nothing in a build
/// with LOOPCANARY_WAIT_OBJECTS 0.
void add_wait(WatchSamples& samples, const WaitReading& reading) noexcept;

/// Builds the record of `observation` into `out` (every field written): its stack samples from
/// `samples` (the watch Observation::watch names; null or kNoWatch: none), `qualifier` (a
/// static or long-lived string), the cause by derive() with `rule`. Reads only its arguments.
void assemble(const Observation& observation, const WatchSamples* samples, const char* qualifier,
              const CauseRule& rule, BlockRecord& out) noexcept;

}  // namespace loopcanary
