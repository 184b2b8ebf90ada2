// SPDX-License-Identifier: MIT
// Single-producer single-consumer ring with atomic loads and stores only (no read-modify-write,
// so it works on Cortex-M0), fixed power-of-two capacity, never blocks, never allocates.
//
// Memory-ordering recipe. `head_` is written only by the producer, `tail_` only by the consumer;
// both are free-running 32-bit counters (wrap-safe: `head - tail` is the fill level as long as
// the capacity is a power of two not above 2^31).
//   push: h = head (relaxed, own word); t = tail (acquire: the consumer is done with the slot
//         it released); if h - t >= capacity -> full; write slot[h & mask];
//         head = h + 1 (release: the slot's contents become visible with the new head).
//   pop:  t = tail (relaxed, own word); h = head (acquire: pairs with push's release, so the
//         slot is complete); if h == t -> empty; read slot[t & mask];
//         tail = t + 1 (release: the read is finished before the producer may reuse the slot).
// A producer that preempts the consumer (or the reverse) never waits: each side only ever
// writes its own counter.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/slot.hpp"
#include "loopcanary/sync.hpp"

namespace loopcanary {

/// Capacity-free base: all logic; the storage is handed over by the derived class (bind()).
/// Hand out a reference to the base where code must not depend on the capacity. Until its
/// storage is bound a ring has capacity 0: it refuses every push and is always empty.
template <class T>
class SpscRingBase {
 public:
  SpscRingBase(const SpscRingBase&) = delete;
  SpscRingBase& operator=(const SpscRingBase&) = delete;

  /// Producer side only. Copies `value` in; false when the ring is full (nothing is written;
  /// counting the refusal is the caller's job).
  bool push(const T& value) noexcept {
    const std::uint32_t h = detail::load_relaxed(head_);
    const std::uint32_t t = detail::load_acquire(tail_);
    if (h - t >= capacity_) return false;
    slots_[h & (capacity_ - 1u)].value = value;
    detail::store_release(head_, h + 1u);
    return true;
  }

  /// Consumer side only. Moves the oldest element into `out`; false when empty (`out` untouched).
  bool pop(T& out) noexcept {
    const std::uint32_t t = detail::load_relaxed(tail_);
    const std::uint32_t h = detail::load_acquire(head_);
    if (h == t) return false;
    out = slots_[t & (capacity_ - 1u)].value;
    detail::store_release(tail_, t + 1u);
    return true;
  }

  /// Elements queued. Exact from either side for its own view; a third party gets a value
  /// that was true at some instant during the call.
  std::uint32_t size() const noexcept {
    const std::uint32_t t = detail::load_acquire(tail_);
    const std::uint32_t h = detail::load_acquire(head_);
    return h - t;
  }
  bool empty() const noexcept { return size() == 0; }
  /// Elements the ring holds when full; 0 until its storage is bound.
  std::uint32_t capacity() const noexcept { return capacity_; }

 protected:
  /// No storage yet (capacity 0). Constexpr and all zero: a ring in a static object costs no
  /// start-up code and no initialised data.
  constexpr SpscRingBase() noexcept = default;
  ~SpscRingBase() = default;

  /// Hands the ring `capacity` slots (a power of two, 2..2^31) at `slots`. Before the first
  /// push and pop; binding the same storage again changes nothing (the contents stay).
  void bind(detail::Slot<T>* slots, std::uint32_t capacity) noexcept {
    slots_ = slots;
    capacity_ = capacity;
  }

 private:
  detail::Slot<T>* slots_ = nullptr;
  std::uint32_t capacity_ = 0;
  std::atomic<std::uint32_t> head_{0};
  std::atomic<std::uint32_t> tail_{0};
};

namespace detail {
// Storage as a base class constructed before the ring base that points into it. The slots are
// not constructed (see slot.hpp): a slot is always written before it is read.
template <class T, std::size_t N>
struct SpscRingStorage {
  Slot<T> slots[N];
};

/// A ring whose owner keeps the storage and binds it in its own init(), so that the owner can
/// be constant-initialised (Monitor, Watchdog: no start-up code for static instances).
template <class T>
class LateBoundSpscRing final : public SpscRingBase<T> {
 public:
  constexpr LateBoundSpscRing() noexcept = default;
  using SpscRingBase<T>::bind;
};
}  // namespace detail

/// SPSC ring of N elements, storage included. N is a power of two, 2..2^31.
template <class T, std::size_t N>
class SpscRing final : private detail::SpscRingStorage<T, N>, public SpscRingBase<T> {
  static_assert(N >= 2 && N <= (std::size_t{1} << 31) && (N & (N - 1)) == 0,
                "SpscRing capacity must be a power of two between 2 and 2^31");

 public:
  SpscRing() noexcept { this->bind(detail::SpscRingStorage<T, N>::slots, static_cast<std::uint32_t>(N)); }
};

}  // namespace loopcanary
