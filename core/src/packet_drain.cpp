// SPDX-License-Identifier: MIT
// A watchdog's rings drained as packets (drain_packets, drain_health_packets): what a device
// port's drain() runs. A file of its own, so a firmware that never drains links none of it.
#include "loopcanary/packet.hpp"
#include "loopcanary/slot.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary {
namespace {

// Pops every record of one of the watchdog's rings, encodes and sends it.
template <class Record, bool (Watchdog::*Pop)(Record&), std::size_t (*Encode)(const Record&, std::uint8_t*, std::size_t)>
std::uint32_t drain_ring(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer, std::size_t size,
                         std::uint32_t* refused) noexcept {
  if (sink.write == nullptr || buffer == nullptr || refused == nullptr) return 0;
  std::uint32_t sent = 0;
  detail::Slot<Record> record;  // written by pop() before it is read: not constructed
  while ((watchdog.*Pop)(record.value)) {
    const std::size_t length = Encode(record.value, buffer, size);
    if (length == 0) {
      ++*refused;
      continue;
    }
    sink.write(sink.context, buffer, length);
    ++sent;
  }
  return sent;
}

}  // namespace

std::uint32_t drain_packets(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer, std::size_t size,
                            std::uint32_t* refused) noexcept {
  return drain_ring<BlockRecord, &Watchdog::pop, &encode_packet>(watchdog, sink, buffer, size, refused);
}

std::uint32_t drain_health_packets(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer,
                                   std::size_t size, std::uint32_t* refused) noexcept {
  return drain_ring<HealthRecord, &Watchdog::pop_health, &encode_health_packet>(watchdog, sink, buffer, size,
                                                                                refused);
}

}  // namespace loopcanary
