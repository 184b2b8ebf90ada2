// SPDX-License-Identifier: MIT
#include "loopcanary/port/linux/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "loopcanary/port/linux/platform.hpp"

// The heap's source: the sanitizer's allocator when one replaces glibc's, else mallinfo2().
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LOOPCANARY_LINUX_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LOOPCANARY_LINUX_SANITIZER_HEAP 1
#endif
#endif
#if !defined(LOOPCANARY_LINUX_SANITIZER_HEAP)
#define LOOPCANARY_LINUX_SANITIZER_HEAP 0
#endif

#if LOOPCANARY_LINUX_SANITIZER_HEAP
#include <sanitizer/allocator_interface.h>
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define LOOPCANARY_LINUX_MALLINFO2 1
#endif

namespace loopcanary::port_linux {
namespace {

constexpr const char* kResidentKey = "VmRSS";
constexpr const char* kResidentPeakKey = "VmHWM";
constexpr std::size_t kChunkPages = 256;  // pages per mincore() call (its vector on the stack)

void append(char* buffer, std::size_t size, std::size_t& used, const char* text) noexcept {
  for (; *text != '\0' && used + 1 < size; ++text) buffer[used++] = *text;
  buffer[used] = '\0';
}

void append_decimal(char* buffer, std::size_t size, std::size_t& used, std::uint64_t value) noexcept {
  char digits[21];
  std::size_t n = sizeof digits - 1;
  digits[n] = '\0';
  do {
    digits[--n] = static_cast<char>('0' + value % 10u);
    value /= 10u;
  } while (value != 0);
  append(buffer, size, used, digits + n);
}

// mincore() over `pages` pages from `at`: 0, or the errno.
int resident_pages(std::uintptr_t at, std::size_t pages, std::size_t page, unsigned char* vector) noexcept {
  if (::mincore(reinterpret_cast<void*>(at), pages * page, vector) == 0) return 0;
  return errno;
}

}  // namespace

StatusFailure parse_status_memory(const char* text, std::size_t length, StatusMemory& out) noexcept {
  StatusMemory memory;
  StatusFailure failure;
  failure.field = kResidentKey;
  failure.error = parse_status_kib(text, length, kResidentKey, memory.resident, failure.line);
  if (failure.error != ParseError::ok) return failure;
  failure.field = kResidentPeakKey;
  failure.error = parse_status_kib(text, length, kResidentPeakKey, memory.resident_peak, failure.line);
  if (failure.error != ParseError::ok) return failure;
  out = memory;
  return StatusFailure{};
}

const char* format(const StatusFailure& failure, const char* source, char* buffer, std::size_t size) noexcept {
  if (size == 0) return buffer;
  std::size_t used = 0;
  buffer[0] = '\0';
  append(buffer, size, used, source);
  if (failure.error != ParseError::ok && failure.field != nullptr && failure.field[0] != '\0') {
    append(buffer, size, used, " line ");
    append_decimal(buffer, size, used, failure.line);
    append(buffer, size, used, " (");
    append(buffer, size, used, failure.field);
    append(buffer, size, used, ")");
  }
  append(buffer, size, used, ": ");
  append(buffer, size, used, describe(failure.error));
  return buffer;
}

bool read_heap_used(std::uint64_t& bytes) noexcept {
#if LOOPCANARY_LINUX_SANITIZER_HEAP
  bytes = static_cast<std::uint64_t>(__sanitizer_get_current_allocated_bytes());
  return true;
#elif defined(LOOPCANARY_LINUX_MALLINFO2)
  const struct mallinfo2 info = ::mallinfo2();
  bytes = static_cast<std::uint64_t>(info.uordblks) + static_cast<std::uint64_t>(info.hblkhd);
  return true;
#else
  (void)bytes;
  return false;
#endif
}

bool read_stack_high_water(std::uintptr_t low, std::uintptr_t high, std::uint64_t& bytes, int& sys_errno) noexcept {
  sys_errno = 0;
  if (low >= high) return false;
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size <= 0) return false;
  const auto page = static_cast<std::size_t>(page_size);
  unsigned char vector[kChunkPages];
  std::uintptr_t at = low - low % page;  // the page holding `low`
  while (at < high) {
    std::size_t pages = static_cast<std::size_t>((high - at + page - 1) / page);
    if (pages > kChunkPages) pages = kChunkPages;
    int e = resident_pages(at, pages, page, vector);
    if (e == ENOMEM) {
      // Part of the stretch is unmapped. The stack's mapping ends at `high` and grows down, so
      // the mapped pages of the stretch are its top ones: find the first of them by bisection
      // (mincore of a tail succeeds exactly when the whole tail is mapped).
      std::size_t mapped_from = pages;  // no page mapped
      std::size_t lo = 0;
      std::size_t hi = pages;
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        const int probe = resident_pages(at + mid * page, pages - mid, page, vector);
        if (probe == 0) {
          mapped_from = mid;
          hi = mid;
        } else if (probe == ENOMEM) {
          lo = mid + 1;
        } else {
          sys_errno = probe;
          return false;
        }
      }
      if (mapped_from == pages) {
        at += pages * page;
        continue;
      }
      at += mapped_from * page;
      pages -= mapped_from;
      e = resident_pages(at, pages, page, vector);
    }
    if (e != 0) {
      sys_errno = e;
      return false;
    }
    for (std::size_t i = 0; i < pages; ++i) {
      if ((vector[i] & 1u) != 0) {
        const std::uintptr_t deepest = at + i * page > low ? at + i * page : low;
        bytes = static_cast<std::uint64_t>(high - deepest);
        return true;
      }
    }
    at += pages * page;
  }
  return false;
}

void MemoryReader::read(const LoopThread* thread, MemoryReading& out) noexcept {
  readings_.fetch_add(1, std::memory_order_relaxed);

  char status[4096];  // VmRSS and VmHWM come in the first ~25 lines; a longer file is cut after them
  std::size_t length = 0;
  StatusMemory memory;
  StatusFailure failure;
  if (read_small_file("/proc/self/status", status, sizeof status, length) != 0) {
    failure.error = ParseError::empty;
  } else {
    failure = parse_status_memory(status, length, memory);
  }
  if (failure.error == ParseError::ok) {
    out.set(kMemoryResident, memory.resident);
    out.set(kMemoryResidentPeak, memory.resident_peak);
  } else {
    status_failures_.fetch_add(1, std::memory_order_relaxed);
    last_error_.store(static_cast<std::uint8_t>(failure.error), std::memory_order_relaxed);
    last_field_.store(failure.field, std::memory_order_relaxed);
    last_line_.store(static_cast<std::uint32_t>(failure.line), std::memory_order_relaxed);
  }

  std::uint64_t heap = 0;
  if (heap_reading_ && read_heap_used(heap)) out.set(kMemoryHeapUsed, heap);

  if (thread == nullptr || !thread->attached()) {
    not_attached_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::uintptr_t low = thread->stack_low();
  const std::uintptr_t high = thread->stack_high();
  out.set(kMemoryStackSize, high - low);
  std::uint64_t peak = 0;
  int sys_errno = 0;
  if (read_stack_high_water(low, high, peak, sys_errno)) {
    out.set(kMemoryStackPeak, peak);
  } else {
    stack_failures_.fetch_add(1, std::memory_order_relaxed);
  }
}

MemoryStats MemoryReader::stats() const noexcept {
  MemoryStats s;
  s.readings = readings_.load(std::memory_order_relaxed);
  s.status_failures = status_failures_.load(std::memory_order_relaxed);
  s.stack_failures = stack_failures_.load(std::memory_order_relaxed);
  s.not_attached = not_attached_.load(std::memory_order_relaxed);
  s.last_status_failure.error = static_cast<ParseError>(last_error_.load(std::memory_order_relaxed));
  s.last_status_failure.field = last_field_.load(std::memory_order_relaxed);
  s.last_status_failure.line = last_line_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace loopcanary::port_linux
