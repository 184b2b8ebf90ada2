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
#include <cstdint>

#include "loopcanary/compiler.hpp"
#include "loopcanary/config.hpp"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOOPCANARY_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define LOOPCANARY_TSAN 1
#endif

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(LOOPCANARY_TSAN)
#define LOOPCANARY_X86_PLAIN_ADD 1
#else
#define LOOPCANARY_X86_PLAIN_ADD 0
#endif

// LOOPCANARY_TEST_HOOKS (test builds only, never the library's: tests/CMakeLists.txt,
// loopcanary_preemption_test): every store and load below calls a function the test defines
// right after it, so a test can stop the writer after each store of its update and run a
// reader there (an interrupt on the same core), or let the writer move between a reader's
// loads. Without the macro the hooks are not compiled: the helpers are the same code.
#if defined(LOOPCANARY_TEST_HOOKS)
namespace loopcanary::detail {
/// Defined by the test: called after each store (`word` is the atomic written) and each load.
void test_after_store(const void* word) noexcept;
void test_after_load(const void* word) noexcept;
}  // namespace loopcanary::detail
#define LOOPCANARY_AFTER_STORE(word) ::loopcanary::detail::test_after_store(&(word))
#define LOOPCANARY_AFTER_LOAD(word) ::loopcanary::detail::test_after_load(&(word))
#else
#define LOOPCANARY_AFTER_STORE(word) static_cast<void>(0)
#define LOOPCANARY_AFTER_LOAD(word) static_cast<void>(0)
#endif

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
  LOOPCANARY_AFTER_STORE(word);
}

/// Acquire load: pairs with store_release.
template <class T>
LOOPCANARY_INLINE T load_acquire(const std::atomic<T>& word) noexcept {
  if constexpr (kSingleCore) {
    const T value = word.load(std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_acquire);
    LOOPCANARY_AFTER_LOAD(word);
    return value;
  } else {
    const T value = word.load(std::memory_order_acquire);
    LOOPCANARY_AFTER_LOAD(word);
    return value;
  }
}

/// Plain relaxed accessors, named so the protocol code reads as what it is.
template <class T>
LOOPCANARY_INLINE T load_relaxed(const std::atomic<T>& word) noexcept {
  const T value = word.load(std::memory_order_relaxed);
  LOOPCANARY_AFTER_LOAD(word);
  return value;
}
template <class T, class V>
LOOPCANARY_INLINE void store_relaxed(std::atomic<T>& word, V value) noexcept {
  word.store(static_cast<T>(value), std::memory_order_relaxed);
  LOOPCANARY_AFTER_STORE(word);
}

/// Single-writer increment: a load and a store, never a read-modify-write. Only the word's one
/// writer may call it.
///
/// On x86 it is one `add` to memory (not `lock add`): what clang makes of the load and store,
/// which gcc 12 keeps as three instructions (two more per bump on the hot path). The single
/// writer's add is a load and an aligned 32-bit store in hardware; a reader sees the old or the
/// new value, exactly as with the load and store. ThreadSanitizer builds keep the load and store
/// it can see.
template <class T>
LOOPCANARY_INLINE void bump(std::atomic<T>& word, T by = 1) noexcept {
#if LOOPCANARY_X86_PLAIN_ADD
  if constexpr (sizeof(T) == 4 && sizeof(std::atomic<T>) == 4) {
    asm("addl %1, %0" : "+m"(word) : "ri"(static_cast<std::uint32_t>(by)));
    LOOPCANARY_AFTER_STORE(word);
    return;
  }
#endif
  word.store(static_cast<T>(word.load(std::memory_order_relaxed) + by), std::memory_order_relaxed);
  LOOPCANARY_AFTER_STORE(word);
}

}  // namespace loopcanary::detail
