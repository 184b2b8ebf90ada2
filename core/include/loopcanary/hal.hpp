// SPDX-License-Identifier: MIT
// Cold tier of the hardware abstraction: what the watchdog asks of the platform, off the hot
// path. A plain struct of callbacks plus one context pointer; zero-initialised means "not
// available" for every service, and the watchdog then reports without that evidence. The hot
// tier (the clock that stamps begin/end) is a compile-time type instead: see
// docs/porting.md and port/template/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/config.hpp"
#include "loopcanary/wait.hpp"

namespace loopcanary {

class Monitor;

/// The cumulative counters of one CPU reading, by index into CpuReading::value. Each is
/// monotonic; the watchdog uses only their differences over a window.
enum CpuValue : std::uint8_t {
  kCpuThreadUs,  ///< CPU time the loop's thread has consumed, microseconds
  kCpuWaitUs,    ///< time the loop's thread spent runnable but waiting for a CPU, microseconds
  // kCpuBusy, kCpuTotal and kCpuProcess share one unit of the port's choice (jiffies,
  // idle-counter ticks): only their ratios are used.
  kCpuBusy,     ///< time any CPU spent not idle
  kCpuTotal,    ///< CPU time of all CPUs together
  kCpuProcess,  ///< time this process spent on any CPU (0 when not applicable)
  /// Time a hypervisor ran something else on this machine's CPUs, MICROSECONDS PER CPU (the
  /// machine's total divided by its CPU count): what one thread's CPU lost on average. The
  /// cause rule takes it off the window: a loop thread whose CPU was stolen did not wait.
  kCpuStealUs,
  kCpuValues
};

/// One reading of the CPU counters of a loop and its machine, taken at one instant. Only the
/// values whose bit is set in `valid` were read; the machine shares need kCpuBusy, kCpuTotal
/// and kCpuProcess all valid (kCpuProcess = kCpuBusy where there is only one "process").
struct CpuReading {
  std::uint64_t value[kCpuValues];  ///< by CpuValue
  std::uint8_t valid;               ///< bit (1 << CpuValue) set: that value was read

  /// Stores `v` as value `which` and marks it read.
  void set(CpuValue which, std::uint64_t v) noexcept {
    value[which] = v;
    valid = static_cast<std::uint8_t>(valid | (1u << which));
  }
  /// True when value `which` was read.
  bool has(CpuValue which) const noexcept { return (valid & (1u << which)) != 0; }
};

/// The values of one memory reading, by index into MemoryReading::value. All are in BYTES and
/// describe one instant (not counters). docs/porting.md says what each port provides.
enum MemoryValue : std::uint8_t {
  kMemoryResident,      ///< the process's resident set (RAM it occupies now)
  kMemoryResidentPeak,  ///< the largest resident set the process has had
  kMemoryHeapUsed,      ///< heap handed out by the allocator and not freed, bookkeeping included
  kMemoryHeapFree,      ///< heap the allocator can still hand out without growing it (a device
                        ///< heap's free bytes; not given where the heap grows on demand)
  /// The loop's stack HIGH-WATER MARK: the deepest the stack has ever reached, measured from
  /// its top, where the port can tell (a painted stack, resident pages). Interrupts that run
  /// on the same stack are included; 0 < value <= kMemoryStackSize. A value equal to
  /// kMemoryStackSize means the stack reached its limit (it may have overflowed).
  kMemoryStackPeak,
  /// The loop's stack in use at the instant of the reading (top minus the loop's stack
  /// pointer), where the port cannot tell a high-water mark but knows the stack pointer.
  kMemoryStackCurrent,
  kMemoryStackSize,  ///< the size of the loop's stack (its top minus its lowest usable address)
  kMemoryValues
};

/// One reading of the memory state of a loop and its process or device. Only the values whose
/// bit is set in `valid` were read: a value left out is unknown, never zero.
struct MemoryReading {
  std::uint64_t value[kMemoryValues];  ///< by MemoryValue, bytes
  std::uint8_t valid;                  ///< bit (1 << MemoryValue) set: that value was read

  /// Stores `v` as value `which` and marks it read.
  void set(MemoryValue which, std::uint64_t v) noexcept {
    value[which] = v;
    valid = static_cast<std::uint8_t>(valid | (1u << which));
  }
  /// True when value `which` was read.
  bool has(MemoryValue which) const noexcept { return (valid & (1u << which)) != 0; }
};

/// "resident", "resident_peak", "heap_used", "heap_free", "stack_peak", "stack_current",
/// "stack_size" (the JSON members of a record's `memory`); "unknown_memory_value" outside the
/// enumeration. Any context.
const char* to_string(MemoryValue value) noexcept;

/// What a host needs, beside a sample's program counters, to unwind its stack with the
/// firmware's call-frame information (a device port's Hal::capture_words; builds with
/// LOOPCANARY_STACK_WORDS > 0): the interrupted registers the unwind rules start from, and the
/// words above the interrupted stack pointer that may be return addresses (a return address can
/// only be a word that lies in the firmware's code), each with its offset. Sent in the sample's
/// evidence packet (docs/report-format.md, "Evidence packets"), and kept in a record's stack
/// table (StackSamples::evidence) in a build that has it.
struct StackEvidence {
  Frame sp;  ///< the interrupted stack pointer (byte address)
  Frame lr;  ///< the interrupted link register as it was (a return address, or not one)
  Frame fp;  ///< the interrupted frame-pointer register (r7 on Thumb), valid when has_fp
  bool has_fp;
  std::uint8_t count;  ///< words in offset[0, count) and value[0, count); at most kStackWords
  /// Offsets from `sp` in words (sizeof(Frame) bytes), strictly increasing: value[i] is the word
  /// at sp + offset[i] * sizeof(Frame).
  std::uint16_t offset[detail::kStackWordSlots];
  Frame value[detail::kStackWordSlots];

  /// Appends the word at offset `at` when there is room; false when full (count == kStackWords).
  bool add(std::uint16_t at, Frame word) noexcept {
    if (count >= kStackWords) return false;
    offset[count] = at;
    value[count] = word;
    ++count;
    return true;
  }
};

/// Platform services, every one optional. All callbacks run in watchdog context (a thread or
/// a timer ISR), one at a time, and must not block longer than a small fraction of the
/// watchdog period. Each receives `context` first.
struct Hal {
  void* context;

  /// Writes up to `max` program counters of `loop`'s current stack, innermost first, into
  /// `pcs`; returns how many (0: no program counters this time; a sample with neither
  /// scopes nor program counters is counted as missed). `loop.context()`
  /// identifies the loop's thread or execution context.
  std::size_t (*capture_stack)(void* context, const Monitor& loop, Frame* pcs, std::size_t max);

  /// Fills `*out` (zeroed on entry) with the stack evidence of the sample capture_stack has just
  /// taken of `loop` (the same interrupted context: called right after it returned program
  /// counters, in the same watchdog context): the interrupted SP, LR and frame pointer, and up to
  /// kStackWords words above SP that may be return addresses, each with its offset. Returns
  /// false when it has none (the sample then goes without). Called only in a build with
  /// LOOPCANARY_STACK_WORDS > 0: an EvidenceWatchdog sends it with the sample, a StaticWatchdog
  /// keeps it in the record's stack table (StackSamples::evidence). Null: no stack evidence.
  bool (*capture_words)(void* context, const Monitor& loop, StackEvidence* out);

  /// Reads the CPU counters of `loop` (its thread) and of the machine into `*out`, whose
  /// `valid` is 0 on entry: CpuReading::set() each value the platform has, leave out the rest
  /// (nothing set: nothing read this time). Called at the arming poll of a watched
  /// dispatch and at every poll after it while the dispatch runs; never in a build without CPU
  /// readings (LOOPCANARY_CPU_READINGS 0).
  void (*read_cpu)(void* context, const Monitor& loop, CpuReading* out);

  /// True while a debugger is attached (reports are then suppressed and counted when
  /// WatchdogConfig::stop_when_debugging is set).
  bool (*debugger_attached)(void* context);

  /// Reads the memory state of `loop` (its stack) and of its process or device into `*out`,
  /// whose `valid` is 0 on entry: MemoryReading::set() each value the platform has, in bytes,
  /// leave out the rest (nothing set: no memory evidence for this reading; nothing is counted
  /// by the watchdog). Watchdog context, like the others: a port whose readings take a lock the
  /// loop may hold says so (docs/porting.md). Null: no memory values. Never called in a build
  /// without memory context (LOOPCANARY_MEMORY_CONTEXT 0).
  void (*read_memory)(void* context, const Monitor& loop, MemoryReading* out);

  /// Reads what `loop`'s thread waits on now into `*out` (a default WaitReading on entry: kind
  /// none): WaitReading::object, and when the object names a holder (WaitObject::owner) up to
  /// `max_frames` program counters of the holder's stack, innermost first, and, when the holder
  /// waits on a lock itself, the chain of holders and whether it is a deadlock; leaves
  /// `owner_loop` to the watchdog. Leaves it all at its default when the thread is not waiting
  /// (on a CPU, runnable) or nothing could be read. Called with a stack sample, before it, when
  /// the loop's CPU readings do not show it running since the previous poll (at most once per
  /// poll and loop). Null: no wait objects. Called only by a watchdog that keeps wait objects (a
  /// StaticWatchdog in a build with LOOPCANARY_WAIT_OBJECTS > 0); an EvidenceWatchdog, whose
  /// stream carries none, never calls it.
  void (*read_wait)(void* context, const Monitor& loop, WaitReading* out, std::size_t max_frames);

  /// The id of the thread that runs `loop` as the platform names a wait's owner
  /// (WaitObject::owner); 0 when not known. The watchdog calls it after read_wait named an owner,
  /// for each loop it watches, so a holder that is a watched loop is named as that loop. Null:
  /// holders are never named as loops.
  std::uint32_t (*thread_id)(void* context, const Monitor& loop);
};

}  // namespace loopcanary
