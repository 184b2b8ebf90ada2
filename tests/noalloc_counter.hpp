// SPDX-License-Identifier: MIT
// The no-allocation tests' counter (noalloc_counter.cpp replaces every global allocation
// function of the program): a MeasuredSection counts the allocations and deallocations made
// while it is alive. Not usable under the sanitizers (they replace the allocator themselves).
#pragma once

#include <atomic>
#include <cstdint>

namespace noalloc {

struct AllocationCounter {
  std::atomic<bool> active{false};
  std::atomic<std::uint64_t> allocations{0};    // malloc, calloc, realloc, aligned, operator new
  std::atomic<std::uint64_t> deallocations{0};  // free and operator delete of a non-null pointer
};
extern AllocationCounter g_counter;

/// Keeps a pointer observable so the compiler cannot remove the allocation that produced it.
void escape(void* p) noexcept;

// Counts the allocations and deallocations made while it is alive. One at a time; the test
// body asserts on the counts only after the section has ended (a failing assertion allocates).
class MeasuredSection {
 public:
  MeasuredSection() noexcept {
    g_counter.allocations.store(0, std::memory_order_relaxed);
    g_counter.deallocations.store(0, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_counter.active.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~MeasuredSection() { stop(); }
  MeasuredSection(const MeasuredSection&) = delete;
  MeasuredSection& operator=(const MeasuredSection&) = delete;

  void stop() noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_counter.active.store(false, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (!stopped_) {
      allocations_ = g_counter.allocations.load(std::memory_order_relaxed);
      deallocations_ = g_counter.deallocations.load(std::memory_order_relaxed);
      stopped_ = true;
    }
  }
  std::uint64_t allocations() const noexcept { return allocations_; }
  std::uint64_t deallocations() const noexcept { return deallocations_; }

 private:
  bool stopped_ = false;
  std::uint64_t allocations_ = 0;
  std::uint64_t deallocations_ = 0;
};

}  // namespace noalloc
