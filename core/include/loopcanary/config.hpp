// SPDX-License-Identifier: MIT
// Compile-time configuration of loopcanary: the tick type and every capacity.
//
// Capacities are fixed at build time so the core never allocates. Each one can be overridden
// with a compile definition; the CMake build sets them from cache variables of the same name
// as PUBLIC definitions, so every translation unit of one build sees the same values (a
// mismatch would break the one-definition rule). `docs/benchmarks.md` lists the memory each
// configuration costs.
#pragma once

#include <cstddef>
#include <cstdint>

/// Stack samples kept per block record (the latest ones; older samples are counted as
/// overwritten). A power of two, 1..128.
#ifndef LOOPCANARY_MAX_SAMPLES
#define LOOPCANARY_MAX_SAMPLES 16
#endif

/// Frames kept per stack sample (named scopes plus program counters). Range 1..64.
#ifndef LOOPCANARY_MAX_FRAMES
#define LOOPCANARY_MAX_FRAMES 8
#endif

/// Depth of the per-loop named-scope shadow stack. Deeper pushes are counted, not stored.
/// Range 0..64; 0 leaves named scopes out (no RAM, no code): push_scope() and pop_scope() do
/// nothing, LOOPCANARY_SCOPE still type-checks its arguments, and samples carry program counters
/// only.
#ifndef LOOPCANARY_SCOPE_DEPTH
#define LOOPCANARY_SCOPE_DEPTH 8
#endif

/// Completed-block notes a loop can queue for the watchdog between two polls. Power of two.
#ifndef LOOPCANARY_NOTE_CAPACITY
#define LOOPCANARY_NOTE_CAPACITY 4
#endif

/// Distinct top frames counted per block record; the rest go to an "other" count. Range 1..64.
#ifndef LOOPCANARY_TOP_FRAMES
#define LOOPCANARY_TOP_FRAMES 8
#endif

/// Named stages kept per dispatch (Monitor::stage_at): marks past this many in one dispatch are
/// counted (LoopStats::stages_dropped), not kept. Range 0..16; 0 leaves stages out (no RAM, every
/// mark counted as dropped). RAM: 8 bytes per stage (plus 8 per loop, 4 per note slot when not
/// 0) per loop, per queued note and per record (32-bit targets).
#ifndef LOOPCANARY_MAX_STAGES
#define LOOPCANARY_MAX_STAGES 4
#endif

/// Event types with health storage a loop lists in its health records (Monitor::init_event
/// registers them). Range 0..32. RAM: a pointer per event per loop, 44 bytes per event per
/// health record (32-bit targets).
#ifndef LOOPCANARY_HEALTH_EVENTS
#define LOOPCANARY_HEALTH_EVENTS 8
#endif

/// Distinct wait objects (what an off-CPU loop thread waited on: wait.hpp) counted per block
/// record; readings of others are counted in WaitSummary::other. Range 0..16; 0 leaves wait
/// objects out (no RAM, no code). Default: 4 on Linux, whose port reads them; 0 elsewhere (a
/// device's ports read none). RAM: 304 bytes per object per record and per watch (x86-64, 8
/// frames).
#ifndef LOOPCANARY_WAIT_OBJECTS
#if defined(__linux__)
#define LOOPCANARY_WAIT_OBJECTS 4
#else
#define LOOPCANARY_WAIT_OBJECTS 0
#endif
#endif

/// Stack words a sample carries for the host to unwind (StackEvidence, hal.hpp): words above the
/// interrupted stack pointer that may be return addresses, each with its offset. Range 0..255; 0
/// (default) leaves stack evidence out (no RAM, no code). A device port's Hal::capture_words
/// fills them; the host's decoder unwinds each sample (the evidence stream) or each top entry of
/// a record (the records road: StackSamples::evidence) with the firmware's call-frame
/// information (docs/porting-cortex-m.md, "Stack evidence"). RAM: the sample being taken grows by
/// 6 bytes per word on the watchdog's stack (32-bit targets), its packet by 2..7 bytes per word
/// sent; a record and a watch of a StaticWatchdog keep LOOPCANARY_STACK_SLOTS evidences of
/// 16 + 6 bytes per word.
#ifndef LOOPCANARY_STACK_WORDS
#define LOOPCANARY_STACK_WORDS 0
#endif

/// Distinct stack evidences a block record keeps for its top entries (StackSamples::evidence;
/// builds with LOOPCANARY_STACK_WORDS > 0): entries whose samples had the same words share one; a
/// sample whose words find no slot is counted without them. Range 1..64.
#ifndef LOOPCANARY_STACK_SLOTS
#define LOOPCANARY_STACK_SLOTS 8
#endif

/// 1 (default): the watchdog reads the CPU counters of a watched dispatch (Hal::read_cpu) when it
/// arms and at every poll after, and a record's cause comes from them (cause.hpp). 0 leaves CPU
/// readings out (no code): Hal::read_cpu is never called (a port's make_hal() leaves it null),
/// every reading is empty, so a record has no CPU values and its cause is `unknown`; the packets
/// say so with their presence bits (docs/report-format.md).
#ifndef LOOPCANARY_CPU_READINGS
#define LOOPCANARY_CPU_READINGS 1
#endif

/// 1 (default): the watchdog reads the memory context (Hal::read_memory) into every record and
/// health record. 0 leaves it out (no code): Hal::read_memory is never called and every record's
/// memory values are absent (the packets' presence byte 0).
#ifndef LOOPCANARY_MEMORY_CONTEXT
#define LOOPCANARY_MEMORY_CONTEXT 1
#endif

/// Interceptors a watchdog can call per report. Range 1..64.
#ifndef LOOPCANARY_MAX_INTERCEPTORS
#define LOOPCANARY_MAX_INTERCEPTORS 4
#endif

/// 1 when every reader of the stamps runs on the same core as the loop it reads (a timer ISR on
/// a single-core MCU): barriers then only need to stop the compiler, not the CPU. 0 (default)
/// for hosts and multi-core parts, where the watchdog may run on another core.
#ifndef LOOPCANARY_SINGLE_CORE
#define LOOPCANARY_SINGLE_CORE 0
#endif

/// 1 (default): every loop keeps a dispatch-duration histogram (LoopStats::histogram), 32
/// counters = 128 bytes per loop and one increment per dispatch. 0 leaves it out (the
/// histogram then reads as all zero) for parts where every byte of RAM counts.
#ifndef LOOPCANARY_HISTOGRAM
#define LOOPCANARY_HISTOGRAM 1
#endif

/// 0 compiles the instrumentation macros out (they still type-check their arguments).
#ifndef LOOPCANARY_ENABLED
#define LOOPCANARY_ENABLED 1
#endif

namespace loopcanary {

/// Raw port ticks. One unsigned width everywhere: durations are `later - earlier` in this type,
/// which stays correct across the counter's wrap as long as the interval is shorter than one
/// wrap period (init refuses hang limits longer than half of it).
using tick_t = std::uint32_t;

/// One stack frame: a named-scope name pointer or a program counter, by the sample's layout.
using Frame = std::uintptr_t;

inline constexpr std::size_t kMaxSamples = LOOPCANARY_MAX_SAMPLES;
inline constexpr std::size_t kMaxFrames = LOOPCANARY_MAX_FRAMES;
inline constexpr std::size_t kScopeDepth = LOOPCANARY_SCOPE_DEPTH;
inline constexpr std::size_t kNoteCapacity = LOOPCANARY_NOTE_CAPACITY;
inline constexpr std::size_t kTopFrames = LOOPCANARY_TOP_FRAMES;
inline constexpr std::size_t kMaxInterceptors = LOOPCANARY_MAX_INTERCEPTORS;
inline constexpr std::size_t kMaxStages = LOOPCANARY_MAX_STAGES;
inline constexpr std::size_t kHealthEvents = LOOPCANARY_HEALTH_EVENTS;
inline constexpr std::size_t kWaitObjects = LOOPCANARY_WAIT_OBJECTS;
inline constexpr std::size_t kStackWords = LOOPCANARY_STACK_WORDS;
inline constexpr std::size_t kStackSlots = LOOPCANARY_STACK_SLOTS;
inline constexpr bool kSingleCore = LOOPCANARY_SINGLE_CORE != 0;
inline constexpr bool kHistogram = LOOPCANARY_HISTOGRAM != 0;
inline constexpr bool kCpuReadings = LOOPCANARY_CPU_READINGS != 0;
inline constexpr bool kMemoryContext = LOOPCANARY_MEMORY_CONTEXT != 0;

/// Buckets of the per-loop dispatch-duration histogram: bucket i counts durations d (ticks)
/// with floor(log2(d)) == i (bucket 0 also holds d == 0), so 32 buckets cover every tick_t.
inline constexpr std::size_t kHistogramBuckets = 32;

static_assert(kMaxSamples >= 1 && kMaxSamples <= 128 && (kMaxSamples & (kMaxSamples - 1)) == 0,
              "LOOPCANARY_MAX_SAMPLES must be a power of two, 1..128");
static_assert(kMaxFrames >= 1 && kMaxFrames <= 64, "LOOPCANARY_MAX_FRAMES must be 1..64");
static_assert(kScopeDepth <= 64, "LOOPCANARY_SCOPE_DEPTH must be 0..64");
static_assert(kNoteCapacity >= 2 && (kNoteCapacity & (kNoteCapacity - 1)) == 0,
              "LOOPCANARY_NOTE_CAPACITY must be a power of two >= 2");
static_assert(kTopFrames >= 1 && kTopFrames <= 64, "LOOPCANARY_TOP_FRAMES must be 1..64");
static_assert(kMaxStages <= 16, "LOOPCANARY_MAX_STAGES must be 0..16");
static_assert(kHealthEvents <= 32, "LOOPCANARY_HEALTH_EVENTS must be 0..32");
static_assert(kWaitObjects <= 16, "LOOPCANARY_WAIT_OBJECTS must be 0..16");
static_assert(kStackWords <= 255, "LOOPCANARY_STACK_WORDS must be 0..255");
static_assert(kStackSlots >= 1 && kStackSlots <= 64, "LOOPCANARY_STACK_SLOTS must be 1..64");
namespace detail {
// The size of arrays that hold stages: kMaxStages, but at least 1 (C++ has no empty arrays).
inline constexpr std::size_t kStageSlots = kMaxStages > 0 ? kMaxStages : 1;
inline constexpr std::size_t kScopeSlots = kScopeDepth > 0 ? kScopeDepth : 1;
inline constexpr std::size_t kHealthEventSlots = kHealthEvents > 0 ? kHealthEvents : 1;
inline constexpr std::size_t kStackWordSlots = kStackWords > 0 ? kStackWords : 1;
}  // namespace detail
static_assert(kMaxInterceptors >= 1 && kMaxInterceptors <= 64,
              "LOOPCANARY_MAX_INTERCEPTORS must be 1..64");

}  // namespace loopcanary
