// SPDX-License-Identifier: MIT
// Block record: the fixed-size value a report carries. docs/report-format.md describes the
// text and JSON forms.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/config.hpp"
#include "loopcanary/event.hpp"
#include "loopcanary/hal.hpp"
#include "loopcanary/wait.hpp"

namespace loopcanary {

/// Which report a record is.
enum class Phase : std::uint8_t {
  /// At a poll the dispatch had not ended and had run past its threshold by the poll's clock.
  in_progress,
  /// The same, past its hang limit.
  hang,
  /// The dispatch ended over its threshold (the BlockCanary report). Flagged kFlagEndEstimated:
  /// a dispatch reported in progress ended, and no block is confirmed; flagged
  /// kFlagRunningAtStop: the watchdog stopped while it still ran.
  final,
  /// A dispatch began later than its event's deadline after its due time: the record is about
  /// the dispatch that delayed it (BlockRecord::delayed_by).
  deadline_miss,
};

/// Why the block took long, from the loop's CPU time against wall time over the window.
enum class Cause : std::uint8_t {
  unknown,  ///< no CPU readings (counter unavailable, or the block ended before it was armed)
  running,  ///< the loop computed: thread CPU time close to wall time
  waiting,  ///< the loop was off the CPU while the machine had room (I/O, lock, sleep)
  starved,  ///< the loop was off the CPU while the machine was busy with other work
};

/// Per-permille value that could not be measured.
inline constexpr std::uint16_t kUnknownPermille = 0xFFFFu;

/// Sample::stack and TopStack::stack of a sample or entry without stack evidence (0, so that a
/// zeroed record, and a static watchdog's storage, need no initialised data).
inline constexpr std::uint8_t kNoStack = 0;

/// One stack sample of the loop, taken by the watchdog while the dispatch ran.
struct Sample {
  tick_t at = 0;                ///< watchdog time of the sample, port ticks
  std::uint32_t seq = 0;        ///< dispatch (stamp sequence) the sample belongs to
  std::uint8_t scope_count = 0; ///< frames[0, scope_count): scope names (const char*), innermost first
  std::uint8_t pc_count = 0;    ///< frames[scope_count, +pc_count): program counters, innermost first
  /// In a record of a build with stack evidence (LOOPCANARY_STACK_WORDS > 0): the slot of
  /// StackSamples::evidence (1..) that holds this sample's stack evidence (that of the top entry
  /// it was counted under: equal words at equal offsets from its own stack pointer); kNoStack:
  /// none (no evidence, or the sample was counted in top_other).
  std::uint8_t stack = kNoStack;
  Frame frames[kMaxFrames] = {};
};

/// A stack that `count` samples of one dispatch had: every sample of the dispatch is counted
/// under one entry (or in StackSamples::top_other), so a block's attribution covers the whole
/// dispatch, not only the samples kept. Samples share an entry when their scopes and their
/// callers (every program counter but the innermost) are equal, and in a build with stack
/// evidence their stack evidence too (same_stack_evidence) with their innermost program counters
/// in one kStackLeafBlock (one unwind then holds for all of them); with callers (two program
/// counters or more) or stack evidence the innermost program counter may differ between them (a
/// loop runs through many addresses of one function), and the entry keeps the lowest and the
/// highest seen. A stack of one program counter without stack evidence has nothing to tell call
/// sites apart: that PC is its key. When both lie in one function, every sample of the
/// entry was in it (a function's code is contiguous); when not (one call site calling several
/// functions through a pointer), the innermost frame is not known for the entry and only its
/// callers are.
struct TopStack {
  std::uint32_t count = 0;       ///< samples counted under this entry
  std::uint8_t scope_count = 0;  ///< frames[0, scope_count): scope names (const char*), innermost first
  std::uint8_t pc_count = 0;     ///< frames[scope_count, +pc_count): program counters, innermost first
  /// The slot of StackSamples::evidence (1..) with the stack evidence every sample of this entry
  /// had (builds with LOOPCANARY_STACK_WORDS > 0); kNoStack: its samples had none.
  std::uint8_t stack = kNoStack;
  /// As in a Sample; frames[scope_count] (when pc_count > 0) is the lowest innermost program
  /// counter the entry's samples had.
  Frame frames[kMaxFrames] = {};
  Frame leaf_high = 0;           ///< the highest innermost program counter (pc_count > 0; else 0)
};

/// With stack evidence, the innermost program counters of one top entry lie in one aligned block
/// of this many bytes: a caller's body and a leaf it calls that pushes nothing have the same words
/// and LR, and only their program counters tell them apart (functions are contiguous, so an
/// entry spans two only where a block holds the end of one and the start of the next).
inline constexpr Frame kStackLeafBlock = 32;

/// The stack evidence of a record's top entries (builds with LOOPCANARY_STACK_WORDS > 0): one
/// slot per distinct evidence, numbered from 1 in the order they were first kept (TopStack::stack
/// and Sample::stack name the slot); entries whose samples had the same words share one. The
/// registers (sp, lr, fp) are the first sample's; the other samples had the same words at the
/// same offsets from their own stack pointer (same_stack_evidence), and the same link register
/// where their entry's callers hold it.
template <std::size_t Words>
struct StackEvidenceSlots {
  std::uint8_t count = 0;  ///< slots in use: 1..count, in stacks[0, count)
  StackEvidence stacks[kStackSlots] = {};

  /// The evidence in `slot` (1..count); null for kNoStack or a slot not in use.
  const StackEvidence* at(std::uint8_t slot) const noexcept {
    return slot != kNoStack && slot <= count ? &stacks[slot - 1u] : nullptr;
  }
  /// Keeps a copy of `evidence` in the next slot and returns it; kNoStack when every slot is in use.
  std::uint8_t keep(const StackEvidence& evidence) noexcept {
    if (count >= kStackSlots) return kNoStack;
    stacks[count++] = evidence;
    return count;
  }
  void clear() noexcept { count = 0; }
};
template <>
struct StackEvidenceSlots<0> {  // no stack evidence: no storage, every call a no-op
  static constexpr std::uint8_t count = 0;
  static constexpr const StackEvidence* at(std::uint8_t) noexcept { return nullptr; }
  static constexpr std::uint8_t keep(const StackEvidence&) noexcept { return kNoStack; }
  static constexpr void clear() noexcept {}
};

/// What the watchdog sampled of one dispatch's stack: the latest samples, and every sample
/// counted by its stack. A BlockRecord carries it as its base (record.samples_taken,
/// record.top, ...); the watchdog collects it in this form while it watches the dispatch.
struct StackSamples {
  std::uint32_t samples_taken = 0;        ///< samples taken in this dispatch (all of them)
  /// Sample attempts that produced no usable stack, or whose sample an evidence ring did not
  /// keep (EvidenceWatchdog).
  std::uint32_t samples_missed = 0;
  std::uint32_t samples_overwritten = 0;  ///< older samples not kept (only the latest are)
  std::uint8_t sample_count = 0;          ///< samples[0, sample_count), oldest first
  std::uint8_t top_count = 0;             ///< top[0, top_count), most frequent first
  std::uint32_t top_other = 0;            ///< samples whose stack did not fit in top[]
  Sample samples[kMaxSamples] = {};
  TopStack top[kTopFrames] = {};          ///< every sample of the dispatch, by stack
  /// The top entries' stack evidence (TopStack::stack); empty in a build without it.
  StackEvidenceSlots<kStackWords> evidence = {};
};

/// A wait object one dispatch's samples saw, and how many of them: readings share an entry when
/// they name the same object and the same holder (same_wait, assembler.hpp). holder_frames are
/// those of the latest reading of it that had any; the chain and `deadlock` those of its latest
/// reading.
struct WaitSeen : WaitReading {
  std::uint32_t samples = 0;  ///< samples whose reading named this object
};

/// Every wait reading of one dispatch, by object, most samples first: what a block that waited
/// waited on. Capacity LOOPCANARY_WAIT_OBJECTS (0: no objects, `count` stays 0).
template <std::size_t Objects>
struct WaitSummaryOf {
  std::uint8_t count = 0;   ///< objects[0, count), most samples first
  std::uint32_t other = 0;  ///< readings of objects that did not fit in objects[]
  WaitSeen objects[Objects];  // each as WaitSeen{} (its members have defaults)
};
template <>
struct WaitSummaryOf<0> {
  std::uint8_t count = 0;
  std::uint32_t other = 0;
  static constexpr WaitSeen* objects = nullptr;  // never indexed: count stays 0
};
using WaitSummary = WaitSummaryOf<kWaitObjects>;

/// One named stage of a dispatch (Monitor::stage_at) and how long it ran.
struct StageTime {
  const char* name = nullptr;  ///< the static name given to stage_at
  tick_t ticks = 0;            ///< from its mark to the next (the last: to the record's end), modulo the wrap
};

/// Record flags.
enum RecordFlag : std::uint8_t {
  kFlagHung = 1u << 0,           ///< the dispatch had been reported as a hang
  kFlagUnwatched = 1u << 1,      ///< ended before the watchdog armed on it: no samples, no CPU
  /// Reported in progress, then ended without the loop's note: no block confirmed (its end
  /// stamp was within the threshold, or its note was dropped); end = the first poll that found
  /// it ended. Counted in WatchdogStats::finals_estimated.
  kFlagEndEstimated = 1u << 2,
  /// The watchdog stopped (Watchdog::finish) while the dispatch, already reported in progress,
  /// still ran: end = the stopping poll, duration = the time it had run by then. The loop
  /// counted no block (it never ended). Counted in WatchdogStats::finals_at_stop.
  kFlagRunningAtStop = 1u << 3,
};

/// Everything one report says about one block: the fields below plus its StackSamples. A plain
/// value (an aggregate): copy it anywhere. Name pointers refer to static strings (loop and
/// event names) and to the watchdog's qualifier copy.
struct BlockRecord : StackSamples {
  std::uint32_t report = 0;      ///< watchdog-wide report number, from 1; gaps mean dropped records
  Phase phase = Phase::final;
  Cause cause = Cause::unknown;
  std::uint8_t flags = 0;        ///< RecordFlag bits
  std::uint8_t loop_index = 0;   ///< registration order of the loop in its watchdog
  const char* qualifier = "";    ///< WatchdogConfig::qualifier
  const char* loop = "";         ///< MonitorConfig::name
  const Event* event = nullptr;  ///< the dispatched event
  std::uint32_t dispatch = 0;    ///< dispatch number on this loop, from 1
  std::uint32_t tick_hz = 0;     ///< tick rate of start, end and the tick durations
  tick_t start = 0;              ///< begin stamp
  tick_t end = 0;                ///< final: end stamp; otherwise watchdog time of the report
  std::uint64_t duration_ticks = 0;  ///< final: end - start; otherwise elapsed so far
  tick_t threshold_ticks = 0;    ///< threshold that applied to this event (deadline_miss: the deadline)
  /// deadline_miss: the dispatch number and event of the dispatch running at the due time,
  /// whose evidence this record carries; 0 and null when unknown, and for every other phase.
  std::uint32_t delayed_by_dispatch = 0;
  const Event* delayed_by = nullptr;
  /// The dispatch's named stages in the order they started, up to the record's end; time
  /// before the first mark belongs to none. None on a final report flagged kFlagEndEstimated.
  std::uint8_t stage_count = 0;
  StageTime stages[detail::kStageSlots] = {};

  // CPU readings over the window from the arming poll to the last poll that saw the dispatch
  // running (for in_progress and hang: the reporting poll); window_ticks == 0 when never armed
  // or armed at the last poll.
  std::uint64_t window_ticks = 0;     ///< wall length of the CPU window
  std::uint64_t thread_cpu_us = 0;    ///< loop thread CPU time in the window (has_thread_cpu)
  bool has_thread_cpu = false;
  std::uint64_t thread_wait_us = 0;   ///< loop thread run-queue wait in the window (has_thread_wait)
  bool has_thread_wait = false;
  std::uint16_t system_busy_permille = kUnknownPermille;  ///< machine busy share in the window
  std::uint16_t process_permille = kUnknownPermille;      ///< this process's share in the window
  std::uint64_t steal_us = 0;         ///< CPU time stolen by a hypervisor in the window, per CPU

  /// Memory state when the report was made (Hal::read_memory), bytes; a value is known only
  /// when memory.has() it (all unknown without the callback).
  MemoryReading memory = {};

  /// What the loop's thread waited on in the samples taken while it was off the CPU (with
  /// Hal::read_wait), by object; objects[0] is the main one. Empty without the callback, for a
  /// dispatch that computed, and in a build with LOOPCANARY_WAIT_OBJECTS 0.
  WaitSummary wait = {};

  // Loss accounting, so nothing disappears silently.
  std::uint32_t records_dropped = 0;  ///< records the watchdog's ring refused so far (all loops)
  std::uint32_t notes_dropped = 0;    ///< blocks the loops (all) could not queue for the watchdog so far
};

/// One event type in a health record: its window's counts and latency percentiles, and its
/// configuration (health.hpp).
struct EventHealthWindow {
  const Event* event = nullptr;
  std::uint32_t dispatches = 0;       ///< dispatches with a post stamp in the window
  std::uint32_t deadline_misses = 0;  ///< in the window
  std::uint32_t missed_periods = 0;   ///< in the window
  std::uint32_t posted_ahead = 0;     ///< in the window
  tick_t p50 = 0;                     ///< latency percentiles of the window, ticks (latency_percentile)
  tick_t p95 = 0;
  tick_t p99 = 0;
  tick_t max_latency = 0;             ///< since the start, ticks
  tick_t period_ticks = 0;            ///< 0: not periodic
  tick_t deadline_ticks = 0;          ///< 0: no deadline
};

/// A periodic snapshot of one loop's health (WatchdogConfig::health_period_us):
/// docs/report-format.md, "Health records". A plain value.
struct HealthRecord {
  std::uint32_t number = 0;           ///< watchdog-wide, from 1; gaps mean dropped health records
  const char* qualifier = "";
  const char* loop = "";
  std::uint8_t loop_index = 0;
  std::uint32_t tick_hz = 0;
  tick_t start = 0;                   ///< window start (this loop's previous health record)
  tick_t end = 0;                     ///< window end (this record), end - start under one wrap
  std::uint32_t dispatches = 0;       ///< ended in the window
  tick_t busy_ticks = 0;              ///< their durations, summed
  tick_t idle_ticks = 0;              ///< waits the loop reported in the window (has_idle)
  bool has_idle = false;              ///< the loop has reported waits (Monitor::add_idle)
  std::uint32_t blocks = 0;           ///< in the window
  std::uint32_t hangs = 0;            ///< in the window
  tick_t max_duration = 0;            ///< since the start
  std::uint32_t histogram[kHistogramBuckets] = {};  ///< dispatch durations since the start (LoopStats)
  MemoryReading memory = {};          ///< as in a BlockRecord
  std::uint8_t event_count = 0;
  EventHealthWindow events[detail::kHealthEventSlots] = {};
  std::uint32_t health_dropped = 0;   ///< health records the health ring refused so far
};

/// "in_progress", "hang", "final", "deadline_miss". Any context.
const char* to_string(Phase phase) noexcept;
/// "unknown", "running", "waiting", "starved". Any context.
const char* to_string(Cause cause) noexcept;

}  // namespace loopcanary
