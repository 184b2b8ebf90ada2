// SPDX-License-Identifier: MIT
// Ring that keeps the latest N elements: a push into a full ring overwrites the oldest element
// and counts it. Single context only (no concurrent reader): the watchdog uses it for the stack
// samples of the dispatch it is watching, so a long block keeps its most recent samples.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/slot.hpp"

namespace loopcanary {

/// Overwrite ring of N elements (a power of two, 1..2^31), storage included. The capacity is a
/// compile-time constant (the core has one instance type, for LOOPCANARY_MAX_SAMPLES), so the
/// ring holds no pointer and its constructor is constexpr: in a static object it is all zero
/// and costs no start-up code.
template <class T, std::size_t N>
class OverwriteRing {
  static_assert(N >= 1 && N <= (std::size_t{1} << 31) && (N & (N - 1)) == 0,
                "OverwriteRing capacity must be a power of two between 1 and 2^31");
  static constexpr std::uint32_t kMask = static_cast<std::uint32_t>(N - 1);

 public:
  constexpr OverwriteRing() noexcept = default;
  OverwriteRing(const OverwriteRing&) = delete;
  OverwriteRing& operator=(const OverwriteRing&) = delete;

  /// Appends `value`; when full, the oldest element is replaced and overwritten() grows by one.
  void push(const T& value) noexcept {
    if (size_ > kMask) {
      ++overwritten_;
    } else {
      ++size_;
    }
    slots_[next_ & kMask].value = value;
    ++next_;
  }

  /// The i-th element, oldest first; i < size().
  const T& operator[](std::uint32_t i) const noexcept { return slots_[(next_ - size_ + i) & kMask].value; }

  /// The newest element; size() > 0.
  const T& back() const noexcept { return slots_[(next_ - 1u) & kMask].value; }

  std::uint32_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  static constexpr std::uint32_t capacity() noexcept { return kMask + 1u; }
  /// Elements lost to overwriting since the last clear().
  std::uint32_t overwritten() const noexcept { return overwritten_; }

  void clear() noexcept {
    size_ = 0;
    overwritten_ = 0;
  }

 private:
  // Not constructed (see slot.hpp): a slot is always written before it is read.
  detail::Slot<T> slots_[N];
  std::uint32_t next_ = 0;
  std::uint32_t size_ = 0;
  std::uint32_t overwritten_ = 0;
};

}  // namespace loopcanary
