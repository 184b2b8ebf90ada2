// SPDX-License-Identifier: MIT
// Memory-ordering primitives of the lock-free protocols (stamps, rings, scope stack).
//
// Every shared word is a std::atomic of at most pointer width, accessed with relaxed loads and
// stores only: no read-modify-write (Cortex-M0 has none) and no 64-bit atomics (Cortex-M0/M3
// have none lock-free). Ordering comes from the fences below. With LOOPCANARY_SINGLE_CORE the
// only concurrent reader is an interrupt on the same core, which sees the core's own program
// order, so a compiler barrier is enough; otherwise a real barrier is emitted (free on x86,
// a DMB on Arm).
#pragma once

#include <atomic>

#include "loopcanary/config.hpp"

namespace loopcanary::detail {

/// Orders every load and store before it ahead of every store after it.
LOOPCANARY_INLINE void fence_release() noexcept {
  if constexpr (kSingleCore) {
    std::atomic_signal_fence(std::memory_order_release);
  } else {
    std::atomic_thread_fence(std::memory_order_release);
  }
}

/// Orders every load before it ahead of every load and store after it.
LOOPCANARY_INLINE void fence_acquire() noexcept {
  if constexpr (kSingleCore) {
    std::atomic_signal_fence(std::memory_order_acquire);
  } else {
    std::atomic_thread_fence(std::memory_order_acquire);
  }
}

/// Release store: everything written before it is visible to a reader that sees `value`
/// through load_acquire. (A release store rather than fence + relaxed store on multi-core
/// builds: same code on x86 and Arm, and ThreadSanitizer understands it.)
template <class T, class V>
LOOPCANARY_INLINE void store_release(std::atomic<T>& word, V value) noexcept {
  if constexpr (kSingleCore) {
    std::atomic_signal_fence(std::memory_order_release);
    word.store(static_cast<T>(value), std::memory_order_relaxed);
  } else {
    word.store(static_cast<T>(value), std::memory_order_release);
  }
}

/// Acquire load: pairs with store_release.
template <class T>
LOOPCANARY_INLINE T load_acquire(const std::atomic<T>& word) noexcept {
  if constexpr (kSingleCore) {
    const T value = word.load(std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_acquire);
    return value;
  } else {
    return word.load(std::memory_order_acquire);
  }
}

/// Plain relaxed accessors, named so the protocol code reads as what it is.
template <class T>
LOOPCANARY_INLINE T load_relaxed(const std::atomic<T>& word) noexcept {
  return word.load(std::memory_order_relaxed);
}
template <class T, class V>
LOOPCANARY_INLINE void store_relaxed(std::atomic<T>& word, V value) noexcept {
  word.store(static_cast<T>(value), std::memory_order_relaxed);
}

/// Single-writer increment: a load and a store, never a read-modify-write. Only the word's one
/// writer may call it.
template <class T>
LOOPCANARY_INLINE void bump(std::atomic<T>& word, T by = 1) noexcept {
  word.store(static_cast<T>(word.load(std::memory_order_relaxed) + by), std::memory_order_relaxed);
}

}  // namespace loopcanary::detail
