// SPDX-License-Identifier: MIT
// Memory context of the Linux port: what Hal::read_memory reports (Platform::hal() binds it to
// the Platform's MemoryReader).
//
//   kMemoryResident, kMemoryResidentPeak  VmRSS and VmHWM of /proc/self/status (kB -> bytes)
//   kMemoryHeapUsed   the C library's heap in use: mallinfo2() (glibc >= 2.33), arena chunks in
//                     use plus mmapped chunks; under AddressSanitizer or ThreadSanitizer the
//                     sanitizer's allocator count instead (their allocator replaces glibc's)
//   kMemoryStackPeak  the loop thread's stack high-water mark at PAGE granularity: the stack's
//                     top minus the lowest page of its range that is resident (mincore)
//   kMemoryStackSize  the size of the loop thread's stack (pthread_getattr_np at attach)
//   not given         kMemoryHeapFree (the heap grows on demand: there is no fixed free
//                     amount) and kMemoryStackCurrent (the port keeps no stack pointer of the
//                     loop thread outside a sample)
//
// The stack's high-water mark comes from the kernel: a page of the stack the thread has never
// touched is not resident, a page it touched stays resident. It is an upper bound of the bytes
// really written, by up to one page, and counts the thread descriptor and TLS that glibc keeps
// at the top of a thread's stack block. It overstates when glibc gives a new thread the cached
// stack of a thread that has exited (pages that thread touched stay resident), or when
// transparent huge pages are enabled as `always` and a huge page backs the stack; it
// understates when stack pages were swapped out.
//
// mallinfo2() takes each malloc arena's lock in turn and is not async-signal-safe: the reader
// calls it from the watchdog THREAD only (Hal callbacks never run in a signal handler on this
// port). While another thread holds an arena's lock the call waits for it; a loop thread stuck
// inside malloc (e.g. a signal handler that allocates, interrupting malloc) would hold the
// watchdog there for good. So the heap value is opt-in: PlatformConfig::heap_reading.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/hal.hpp"
#include "loopcanary/port/linux/proc.hpp"

namespace loopcanary::port_linux {

class LoopThread;

/// The process memory fields of /proc/<pid>/status, bytes.
struct StatusMemory {
  std::uint64_t resident = 0;       ///< VmRSS
  std::uint64_t resident_peak = 0;  ///< VmHWM
};

/// Where reading a /proc status text failed: the error, the field it concerns and its line.
struct StatusFailure {
  ParseError error = ParseError::ok;
  const char* field = "";  ///< the key ("VmRSS", "VmHWM"); "" when ok. Never null.
  std::size_t line = 0;    ///< 1-based line, as parse_status_kib() sets it; 0 when ok
};

/// Parses VmRSS and VmHWM of a /proc/<pid>/status text (parse_status_kib). Returns the failure
/// of the first of them that does not parse (error ok when both do); `out` is written only
/// when both parse. A kernel thread's status has neither: missing_line. Any context.
StatusFailure parse_status_memory(const char* text, std::size_t length, StatusMemory& out) noexcept;

/// Writes "<source> line <n> (<field>): <describe(error)>" into `buffer` ("<source>: <describe
/// (error)>" when no field is named, e.g. an unreadable file; "<source>: ok" for no failure),
/// NUL-terminated and cut to fit when size > 0. Returns `buffer`. Any context.
const char* format(const StatusFailure& failure, const char* source, char* buffer, std::size_t size) noexcept;

/// The C library's heap in use, bytes (see the header comment for the source). False when the
/// build has no source for it (a C library without mallinfo2). Watchdog THREAD or application
/// thread only: never from a signal handler (mallinfo2 takes the arena locks). No allocation.
bool read_heap_used(std::uint64_t& bytes) noexcept;

/// The high-water mark of the stack range [low, high) (grows down from `high`), bytes, at page
/// granularity: `high` minus the start of the lowest resident page in the range (clamped to
/// high - low). Unmapped pages in the range (the part of the main thread's stack that the
/// kernel has not grown into yet) count as untouched. Cost: one mincore() per 256 pages of the
/// range up to the first resident page, plus at most 9 for each 256-page stretch that is partly
/// unmapped; no allocation (a 256-byte vector on the stack). False when low >= high, when no
/// page of the range is resident, or when mincore fails otherwise than for an unmapped range
/// (its errno is then in `sys_errno`). Any thread.
bool read_stack_high_water(std::uintptr_t low, std::uintptr_t high, std::uint64_t& bytes, int& sys_errno) noexcept;

/// Counters of a MemoryReader. Any thread may read them.
struct MemoryStats {
  std::uint32_t readings = 0;         ///< read() calls
  /// /proc/self/status could not be read or parsed: kMemoryResident and kMemoryResidentPeak
  /// were left out. last_status_failure says why (the latest one).
  std::uint32_t status_failures = 0;
  std::uint32_t stack_failures = 0;   ///< the loop's stack pages could not be examined: no kMemoryStackPeak
  std::uint32_t not_attached = 0;     ///< no attached LoopThread: no stack values
  /// The latest status failure (error ok when none yet). A status that cannot be read at all
  /// shows as `empty` on line 0.
  StatusFailure last_status_failure;
};

/// Reads the memory values of the header comment. One per Platform (Platform::memory()).
class MemoryReader {
 public:
  MemoryReader() noexcept = default;
  MemoryReader(const MemoryReader&) = delete;
  MemoryReader& operator=(const MemoryReader&) = delete;

  /// Sets the values the port has into `out` (see the header comment); `thread` (null: none,
  /// or a detached one) gives the stack values. A value that cannot be read is left out and
  /// counted in stats(). Watchdog thread (never a signal handler), one call at a time per
  /// reader. No allocation.
  void read(const LoopThread* thread, MemoryReading& out) noexcept;

  /// True (the default): read() reports kMemoryHeapUsed. Set before the watchdog starts.
  void set_heap_reading(bool on) noexcept { heap_reading_ = on; }
  bool heap_reading() const noexcept { return heap_reading_; }

  MemoryStats stats() const noexcept;

 private:
  bool heap_reading_ = false;
  std::atomic<std::uint32_t> readings_{0};
  std::atomic<std::uint32_t> status_failures_{0};
  std::atomic<std::uint32_t> stack_failures_{0};
  std::atomic<std::uint32_t> not_attached_{0};
  // The latest status failure, field by field (a reader may see parts of two failures).
  std::atomic<std::uint8_t> last_error_{0};
  std::atomic<const char*> last_field_{""};
  std::atomic<std::uint32_t> last_line_{0};
};

}  // namespace loopcanary::port_linux
