// SPDX-License-Identifier: MIT
// A watchdog's rings drained as packets: what a device port's drain() and drain_health() run.
// Inline templates, so each port's drain compiles to one loop, as if written there.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/packet.hpp"
#include "loopcanary/slot.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary {

namespace detail {
// Pops every record of one of the watchdog's rings, encodes and sends it (drain_packets).
template <class Record, bool (Watchdog::*Pop)(Record&), std::size_t (*Encode)(const Record&, std::uint8_t*, std::size_t)>
std::uint32_t drain_ring(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer, std::size_t size,
                         std::atomic<std::uint32_t>& refused) noexcept {
  if (sink.write == nullptr || buffer == nullptr) return 0;
  std::uint32_t sent = 0;
  Slot<Record> record;  // written by pop() before it is read: not constructed
  while ((watchdog.*Pop)(record.value)) {
    const std::size_t length = Encode(record.value, buffer, size);
    if (length == 0) {
      refused.store(refused.load(std::memory_order_relaxed) + 1u, std::memory_order_relaxed);  // one writer
      continue;
    }
    sink.write(sink.context, buffer, length);
    ++sent;
  }
  return sent;
}
}  // namespace detail

/// Pops every record waiting in `watchdog`'s ring, encodes each as one `block` packet
/// (encode_packet) into `buffer` (`size` bytes) and hands the packet's bytes to `sink`, one call
/// per packet, in the order of the ring. A record whose packet does not fit `buffer` is popped,
/// not sent, and counted in `refused` (the port's counter; this is its one writer: load and
/// store, no read-modify-write; a buffer of kMaxPacketBytes never refuses one). A null
/// `sink.write` or `buffer` pops nothing and returns 0. The records' one consumer context;
/// `sink.write` runs there. Returns the packets handed to `sink`.
inline std::uint32_t drain_packets(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer, std::size_t size,
                                   std::atomic<std::uint32_t>& refused) noexcept {
  return detail::drain_ring<BlockRecord, &Watchdog::pop, &encode_packet>(watchdog, sink, buffer, size, refused);
}

/// drain_packets() for the watchdog's health ring: each health record as one `health` packet
/// (encode_health_packet; a buffer of kMaxHealthPacketBytes never refuses one).
inline std::uint32_t drain_health_packets(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer,
                                          std::size_t size, std::atomic<std::uint32_t>& refused) noexcept {
  return detail::drain_ring<HealthRecord, &Watchdog::pop_health, &encode_health_packet>(watchdog, sink, buffer, size,
                                                                                        refused);
}

}  // namespace loopcanary
