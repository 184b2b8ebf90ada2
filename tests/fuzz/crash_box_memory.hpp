// SPDX-License-Identifier: MIT
// The memory of the crash boxes that the crash-box fuzz targets open and that their seeds are
// taken from (make_seeds.cpp): the bytes of a StaticCrashBox, laid out as
// core/include/loopcanary/crash_box.hpp describes (the header first), and of a
// StaticEvidenceRing, laid out as docs/report-format.md ("The evidence ring") describes, as a
// board finds them in no-init RAM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "loopcanary/crash_box.hpp"
#include "loopcanary/evidence.hpp"
#include "loopcanary/packet.hpp"

namespace loopcanary::fuzz {

/// Power-on garbage in `bytes`, the same for the same seed.
template <std::size_t N>
void fill_garbage(std::uint8_t (&bytes)[N], std::uint32_t seed) noexcept {
  for (std::uint8_t& b : bytes) {
    seed = seed * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(seed >> 24);
  }
}

/// Packet bytes of the box (room for a few records, and for packets longer than the box).
inline constexpr std::size_t kCrashBoxBytes = 1024;
using FuzzCrashBox = StaticCrashBox<kCrashBoxBytes>;

struct CrashBoxMemory {
  alignas(FuzzCrashBox) std::uint8_t bytes[sizeof(FuzzCrashBox)];

  FuzzCrashBox& box() noexcept { return *reinterpret_cast<FuzzCrashBox*>(bytes); }

  /// Power-on garbage, the same for the same seed.
  void fill_garbage(std::uint32_t seed) noexcept { fuzz::fill_garbage(bytes, seed); }

  /// Makes the header valid whatever it holds (magic, layout, capacity, `used` folded into
  /// 0..capacity, CRC), keeping its other fields, so that open() goes on to the packet bytes.
  void make_header_valid() noexcept {
    CrashBoxHeader h;
    std::memcpy(&h, bytes, sizeof h);
    h.magic = kCrashBoxMagic;
    h.layout = kCrashBoxLayout;
    h.capacity = static_cast<std::uint32_t>(kCrashBoxBytes);
    h.used %= static_cast<std::uint32_t>(kCrashBoxBytes + 1);
    h.crc = crc32(reinterpret_cast<const std::uint8_t*>(&h), offsetof(CrashBoxHeader, crc));
    std::memcpy(bytes, &h, sizeof h);
  }
};

/// Packet bytes of the evidence ring (a few blocks' packets).
inline constexpr std::size_t kEvidenceRingBytes = 1024;
using FuzzEvidenceRing = StaticEvidenceRing<kEvidenceRingBytes>;

struct EvidenceRingMemory {
  alignas(FuzzEvidenceRing) std::uint8_t bytes[sizeof(FuzzEvidenceRing)];

  FuzzEvidenceRing& ring() noexcept { return *reinterpret_cast<FuzzEvidenceRing*>(bytes); }

  /// Power-on garbage, the same for the same seed.
  void fill_garbage(std::uint32_t seed) noexcept { fuzz::fill_garbage(bytes, seed); }

  /// Makes the ring's header valid whatever it holds, as docs/report-format.md lays it out
  /// (native 32-bit words: magic, layout, capacity, CRC of those three, head, tail, ...): the
  /// guard words set, the unread span head - tail folded into 0..capacity, the rest kept, so
  /// that open() keeps the bytes.
  void make_header_valid() noexcept {
    std::uint32_t w[6];
    std::memcpy(w, bytes, sizeof w);
    w[0] = kEvidenceRingMagic;
    w[1] = kEvidenceRingLayout;
    w[2] = static_cast<std::uint32_t>(kEvidenceRingBytes);
    w[3] = crc32(reinterpret_cast<const std::uint8_t*>(w), 3 * sizeof w[0]);
    w[5] = w[4] - (w[4] - w[5]) % static_cast<std::uint32_t>(kEvidenceRingBytes + 1);
    std::memcpy(bytes, w, sizeof w);
  }
};

/// A fuzz input as box memory, opened twice by `open_and_drain(memory, board_cause)`: as given
/// (shorter inputs end in zeros), then with the header made valid so that the bytes behind it are
/// read. A byte beyond the memory, if any, is the board's reset cause (else unknown).
template <class Memory, class OpenAndDrain>
void open_as_found_and_made_valid(Memory& memory, const std::uint8_t* data, std::size_t size,
                                  OpenAndDrain open_and_drain) {
  const std::size_t n = size < sizeof memory.bytes ? size : sizeof memory.bytes;
  const ResetCause board_cause =
      size > sizeof memory.bytes ? static_cast<ResetCause>(data[sizeof memory.bytes] % 7u) : ResetCause::unknown;
  for (const bool make_valid : {false, true}) {
    std::memset(memory.bytes, 0, sizeof memory.bytes);
    if (n != 0) std::memcpy(memory.bytes, data, n);
    if (make_valid) memory.make_header_valid();
    open_and_drain(memory, board_cause);
  }
}

}  // namespace loopcanary::fuzz
