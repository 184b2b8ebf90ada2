// SPDX-License-Identifier: MIT
// Memory context of the Cortex-M port: the loop's stack high-water mark from a painted stack,
// and the firmware's heap when it has one. What Hal::read_memory reports on a device.
//
//   init_memory()   paints the unused part of the loop's stack (below the caller's stack
//                   pointer, down to the stack's limit) with kStackPaint; Thread mode, on that
//                   stack, before the watchdog polls
//   read_memory()   the Hal callback: kMemoryStackPeak (the deepest word no longer holding the
//                   paint, measured from the top) and kMemoryStackSize, and whatever the
//                   firmware's MemoryConfig::read_heap sets (kMemoryHeapFree, kMemoryHeapUsed);
//                   nothing else (no resident set on a device; no current depth: the mark is a
//                   high-water mark)
//   measure_stack() the same mark by one full scan, for the loop's own use (start-up checks,
//                   a shell command)
//
// The mark covers everything that ran on the stack: on a bare-metal super-loop the interrupt
// handlers share the main stack (MSP), so their frames (the watchdog's SysTick included) count.
// A word the program itself writes with the paint's value reads as unused: the mark may then
// understate by the words above it up to the next word the program changed. Bounds come from
// the board or the firmware's linker script (on mps2: the main stack runs from __stack_top down
// to __bss_end; a firmware that reserves a stack section passes its bounds).
//
// Cost: painting writes one word per 4 bytes below the stack pointer (a 4 KiB stack: about
// 1000 stores), once. read_memory() examines at most MemoryConfig::scan_words words per call
// (a load and a compare each) and resumes where it stopped: one pass runs from the limit up to
// the current mark, and a word found overwritten lowers the mark at once and starts a new pass.
// A new depth is seen within one pass: ceil(unused words / scan_words) calls. RAM: 32 bytes of
// state (this file's), no heap. Nothing here links into a firmware that does not call it.
#pragma once

#include <cstdint>

#include "loopcanary/hal.hpp"

namespace loopcanary::cortex_m {

/// The word painted over the unused stack. Not a plausible RAM or flash address on common
/// parts, nor a small integer.
inline constexpr std::uint32_t kStackPaint = 0xC5AC5AC5u;

/// A stack that grows down: its words lie in [limit, top). `limit` is rounded up and `top`
/// down to a multiple of 4.
struct StackBounds {
  std::uintptr_t limit = 0;  ///< lowest address the stack may use
  std::uintptr_t top = 0;    ///< one past its highest address (the initial stack pointer)
};

/// Set-up of the memory context.
struct MemoryConfig {
  /// The loop's stack. Both 0: no stack values (nothing is painted).
  StackBounds stack;
  /// Most stack words one read_memory() call examines, 1..65536; 0 picks 256 (about 1300
  /// cycles on Cortex-M3 with the loop's code in zero-wait-state memory).
  std::uint32_t scan_words = 0;
  /// Optional: sets the firmware heap's values into `out` with MemoryReading::set() (bytes):
  /// kMemoryHeapFree (what the allocator can still hand out; an RTOS heap's free size), and
  /// kMemoryHeapUsed when it knows it. Null: the firmware has no heap, both stay unknown.
  /// Runs in watchdog context (the SysTick interrupt): it must not take a lock the loop may
  /// hold (newlib's malloc lock, an RTOS critical section that the interrupt cannot enter);
  /// read counters the allocator keeps instead.
  void (*read_heap)(void* context, MemoryReading* out) = nullptr;
  void* heap_context = nullptr;  ///< passed to read_heap
};

/// Outcome of init_memory(). Every refusal names the field.
enum class MemoryStatus : std::uint8_t {
  ok = 0,
  stack_empty,          ///< MemoryConfig::stack: limit >= top after rounding to words (and not both 0)
  stack_pointer_outside,  ///< MemoryConfig::stack does not hold the caller's stack pointer: init_memory
                          ///< must run on the stack it paints
  scan_words_out_of_range,  ///< MemoryConfig::scan_words is over 65536
};

/// One line naming the field at fault, e.g. "cortex_m::MemoryConfig.stack: ...". Never null.
const char* describe(MemoryStatus status) noexcept;

/// Validates `config`, paints [stack.limit, the caller's stack pointer) with kStackPaint and
/// makes read_memory() report from it. Call in Thread mode on the stack being painted, before
/// attach() (the SysTick interrupt must not run read_memory() meanwhile); again to start over
/// (the mark then restarts from the current depth). A refused config leaves the previous one in
/// force and paints nothing.
MemoryStatus init_memory(const MemoryConfig& config) noexcept;

/// The Hal callback (Hal::read_memory; make_hal() leaves it null: set it yourself after
/// init_memory()). `context` is not used. The stack values are given for the super-loop (a
/// Monitor without a LoopContext) and for a loop whose LoopContext has the configured stack's
/// bounds; for others, and before init_memory(), none. The heap values come from
/// MemoryConfig::read_heap. Watchdog context, one call at a time.
void read_memory(void* context, const Monitor& loop, MemoryReading* out);

/// The high-water mark of a stack painted with kStackPaint, bytes: `bounds.top` minus the
/// lowest word in [limit, top) that does not hold the paint; 0 when every word does (rounded
/// as StackBounds says). One full scan: one load per unused word. Any context; it changes no
/// state.
std::uint32_t measure_stack(const StackBounds& bounds) noexcept;

}  // namespace loopcanary::cortex_m
