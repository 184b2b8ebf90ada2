// SPDX-License-Identifier: MIT
// The evidence ring (evidence.hpp): whole packets in a byte ring that survives a reset (the
// crash box of a device that sends evidence), sent on as raw bytes (the host checks them).
// docs/report-format.md ("Evidence packets", "The evidence ring") specifies the boot packets it
// adds.
#include <type_traits>

#include "loopcanary/evidence.hpp"
#include "loopcanary/sync.hpp"

namespace loopcanary {
namespace {

using detail::ByteWriter;

static_assert(std::is_trivially_default_constructible<StaticEvidenceRing<64>>::value,
              "an evidence ring lives in no-init RAM: no constructor may run at start-up");

// `boot` kinds.
constexpr unsigned kBootPrevious = 0;  // the bytes that follow were kept from before the reset
constexpr unsigned kBootStarts = 1;    // a boot starts: its evidence follows
// A `boot` packet: kind, reset cause, boot number, and for kBootStarts whether the ring was
// discarded.
constexpr std::size_t kBootPacketBytes = kPacketHeaderBytes + 3 + detail::varint_bytes(32) + kPacketTrailerBytes;

}  // namespace

std::uint32_t EvidenceRing::header_crc() const noexcept {
  return crc32(reinterpret_cast<const std::uint8_t*>(&magic_), 3 * sizeof(std::uint32_t));
}

std::size_t EvidenceRing::boot_packet(std::uint8_t* packet, unsigned kind) const noexcept {
  ByteWriter w{packet, kBootPacketBytes, kPacketHeaderBytes};
  w.u8(kind);
  w.u8(static_cast<unsigned>(cause_));
  w.uv(boots_);
  if (kind == kBootStarts) w.u8(discarded_);
  return detail::seal_packet(packet, PacketType::boot, w.pos - kPacketHeaderBytes);
}

CrashBoxStatus EvidenceRing::open(std::uint8_t* bytes, std::uint32_t capacity, ResetCause board_cause) noexcept {
  bytes_ = bytes;
  pushed_.store(0, std::memory_order_relaxed);
  sent_bytes_ = 0;
  discarded_ = 0;
  cause_ = board_cause;
  const std::uint32_t head = head_.load(std::memory_order_relaxed);
  const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
  if (magic_ != kEvidenceRingMagic || layout_ != kEvidenceRingLayout || capacity_ != capacity ||
      crc_ != header_crc() || head - tail > capacity) {
    magic_ = kEvidenceRingMagic;
    layout_ = kEvidenceRingLayout;
    capacity_ = capacity;
    crc_ = header_crc();
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    dropped_.store(0, std::memory_order_relaxed);
    boots_ = 0;
    discarded_ = 1;
  } else if (board_cause == ResetCause::unknown && reset_check_ == ~reset_cause_ &&
             reset_cause_ <= static_cast<std::uint32_t>(ResetCause::brown_out)) {
    cause_ = static_cast<ResetCause>(reset_cause_);
  }
  set_reset_cause(ResetCause::unknown);
  // The bytes of earlier boots (drain() sends them after a `boot` packet marking them).
  carried_ = head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
  carried_bytes_ = carried_;
  // This boot starts here; when earlier boots' bytes fill the ring, after them at the first drain.
  ++boots_;
  std::uint8_t packet[kBootPacketBytes];
  const std::size_t size = boot_packet(packet, kBootStarts);
  const bool fits = size <= capacity - carried_;
  boot_unsent_.store(fits ? 0u : 1u, std::memory_order_relaxed);
  if (fits) push(packet, size);
  if (discarded_ != 0) return CrashBoxStatus::discarded;
  return carried_ != 0 ? CrashBoxStatus::kept : CrashBoxStatus::empty;
}

bool EvidenceRing::push(const std::uint8_t* packet, std::size_t size, std::size_t keep_free) noexcept {
  const std::uint32_t head = head_.load(std::memory_order_relaxed);
  const std::uint32_t room = capacity_ - (head - detail::load_acquire(tail_));
  if (size > room || keep_free > room - size || detail::load_acquire(boot_unsent_) != 0) {
    detail::bump(dropped_);
    return false;
  }
  for (std::size_t i = 0; i < size; ++i) bytes_[(head + i) & (capacity_ - 1u)] = packet[i];
  detail::store_release(head_, head + static_cast<std::uint32_t>(size));
  detail::bump(pushed_);
  return true;
}

std::uint32_t EvidenceRing::drain(const PacketSink& sink) noexcept {
  if (sink.write == nullptr) return 0;
  std::uint32_t sent = 0;
  std::uint8_t packet[kBootPacketBytes];
  if (carried_ != 0) {
    // The previous boot's bytes come first: a `boot` packet marks them.
    const std::size_t n = boot_packet(packet, kBootPrevious);
    sink.write(sink.context, packet, n);
    sent += static_cast<std::uint32_t>(n);
    carried_ = 0;  // all of them go out below
  }
  const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
  const std::uint32_t head = detail::load_acquire(head_);
  const std::uint32_t waiting = head - tail;
  const std::uint32_t start = tail & (capacity_ - 1u);
  const std::uint32_t first = waiting < capacity_ - start ? waiting : capacity_ - start;
  if (first != 0) sink.write(sink.context, bytes_ + start, first);
  if (waiting != first) sink.write(sink.context, bytes_, waiting - first);  // from the ring's start
  sent += waiting;
  const bool boot_unsent = boot_unsent_.load(std::memory_order_relaxed) != 0;
  if (boot_unsent) {
    // This boot's `boot` packet found no room at open(): it follows the earlier boots' bytes,
    // which are all that waited (push() refused this boot's packets).
    const std::size_t n = boot_packet(packet, kBootStarts);
    sink.write(sink.context, packet, n);
    sent += static_cast<std::uint32_t>(n);
  }
  detail::store_release(tail_, head);  // the producer may reuse the bytes once they are sent
  if (boot_unsent) detail::store_release(boot_unsent_, 0u);  // and append this boot's packets
  sent_bytes_ += sent;
  return sent;
}

void EvidenceRing::set_reset_cause(ResetCause cause) noexcept {
  reset_cause_ = static_cast<std::uint32_t>(cause);
  reset_check_ = ~reset_cause_;
}

EvidenceRingStats EvidenceRing::stats() const noexcept {
  return EvidenceRingStats{detail::load_relaxed(pushed_), detail::load_relaxed(dropped_), sent_bytes_,
                           carried_bytes_, discarded_, boots_, cause_};
}

}  // namespace loopcanary
