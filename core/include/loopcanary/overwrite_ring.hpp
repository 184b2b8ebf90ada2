// SPDX-License-Identifier: MIT
// Ring that keeps the latest N elements: a push into a full ring overwrites the oldest element
// and counts it. Single context only (no concurrent reader): the watchdog uses it for the stack
// samples of the dispatch it is watching, so a long block keeps its most recent samples.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/slot.hpp"

namespace loopcanary {

/// Capacity-free base: all logic, storage supplied by OverwriteRing<T, N>.
template <class T>
class OverwriteRingBase {
 public:
  OverwriteRingBase(const OverwriteRingBase&) = delete;
  OverwriteRingBase& operator=(const OverwriteRingBase&) = delete;

  /// Appends `value`; when full, the oldest element is replaced and overwritten() grows by one.
  void push(const T& value) noexcept {
    if (size_ > mask_) {
      ++overwritten_;
    } else {
      ++size_;
    }
    slots_[next_ & mask_].value = value;
    ++next_;
  }

  /// The i-th element, oldest first; i < size().
  const T& operator[](std::uint32_t i) const noexcept { return slots_[(next_ - size_ + i) & mask_].value; }

  /// The newest element; size() > 0.
  const T& back() const noexcept { return slots_[(next_ - 1u) & mask_].value; }

  std::uint32_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::uint32_t capacity() const noexcept { return mask_ + 1u; }
  /// Elements lost to overwriting since the last clear().
  std::uint32_t overwritten() const noexcept { return overwritten_; }

  void clear() noexcept {
    size_ = 0;
    overwritten_ = 0;
  }

 protected:
  OverwriteRingBase(detail::Slot<T>* slots, std::uint32_t capacity) noexcept : slots_(slots), mask_(capacity - 1u) {}
  ~OverwriteRingBase() = default;

 private:
  detail::Slot<T>* const slots_;
  const std::uint32_t mask_;
  std::uint32_t next_ = 0;
  std::uint32_t size_ = 0;
  std::uint32_t overwritten_ = 0;
};

namespace detail {
// Storage as a base class constructed before the ring base that points into it. The slots are
// not constructed (see slot.hpp): a slot is always written before it is read.
template <class T, std::size_t N>
struct OverwriteRingStorage {
  Slot<T> slots[N];
};
}  // namespace detail

/// Overwrite ring of N elements. N is a power of two, 1..2^31.
template <class T, std::size_t N>
class OverwriteRing final : private detail::OverwriteRingStorage<T, N>, public OverwriteRingBase<T> {
  static_assert(N >= 1 && N <= (std::size_t{1} << 31) && (N & (N - 1)) == 0,
                "OverwriteRing capacity must be a power of two between 1 and 2^31");

 public:
  OverwriteRing() noexcept
      : OverwriteRingBase<T>(detail::OverwriteRingStorage<T, N>::slots, static_cast<std::uint32_t>(N)) {}
};

}  // namespace loopcanary
