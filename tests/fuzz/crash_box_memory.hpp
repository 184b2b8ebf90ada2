// SPDX-License-Identifier: MIT
// The memory of the crash box that the crash-box fuzz target opens and that its seeds are taken
// from (make_seeds.cpp): the bytes of a StaticCrashBox as a board finds them in no-init RAM,
// laid out as core/include/loopcanary/crash_box.hpp describes (the header first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "loopcanary/crash_box.hpp"
#include "loopcanary/packet.hpp"

namespace loopcanary::fuzz {

/// Packet bytes of the box (room for a few records, and for packets longer than the box).
inline constexpr std::size_t kCrashBoxBytes = 1024;
using FuzzCrashBox = StaticCrashBox<kCrashBoxBytes>;

struct CrashBoxMemory {
  alignas(FuzzCrashBox) std::uint8_t bytes[sizeof(FuzzCrashBox)];

  FuzzCrashBox& box() noexcept { return *reinterpret_cast<FuzzCrashBox*>(bytes); }

  /// Power-on garbage, the same for the same seed.
  void fill_garbage(std::uint32_t seed) noexcept {
    for (std::uint8_t& b : bytes) {
      seed = seed * 1664525u + 1013904223u;
      b = static_cast<std::uint8_t>(seed >> 24);
    }
  }

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

}  // namespace loopcanary::fuzz
