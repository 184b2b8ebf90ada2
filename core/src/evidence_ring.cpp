// SPDX-License-Identifier: MIT
// The evidence ring (evidence.hpp): whole packets in a byte ring that survives a reset (the
// crash box of a device that sends evidence). docs/report-format.md ("Evidence packets", "The
// evidence ring") specifies the boot packets it adds.
#include <type_traits>

#include "loopcanary/evidence.hpp"
#include "loopcanary/sync.hpp"

namespace loopcanary {
namespace {

using detail::ByteWriter;

static_assert(std::is_trivially_default_constructible<StaticEvidenceRing<64>>::value,
              "an evidence ring lives in no-init RAM: no constructor may run at start-up");

// A packet: header, an empty body, the CRC.
constexpr std::size_t kMinPacket = kPacketHeaderBytes + kPacketTrailerBytes;
// CRC-32 of any bytes followed by their own CRC-32 (little-endian): its residue.
constexpr std::uint32_t kCrcResidue = 0x2144DF1Cu;
// `boot` kinds.
constexpr unsigned kBootPrevious = 0;  // the bytes that follow were kept from before the reset
constexpr unsigned kBootStarts = 1;    // a boot starts: its evidence follows

}  // namespace

std::uint32_t EvidenceRing::header_crc() const noexcept {
  return crc32(reinterpret_cast<const std::uint8_t*>(&magic_), 3 * sizeof(std::uint32_t));
}

void EvidenceRing::copy_out(std::uint32_t position, std::uint8_t* to, std::size_t n) const noexcept {
  for (std::size_t i = 0; i < n; ++i) to[i] = bytes_[(position + i) & (capacity_ - 1u)];
}

// The length of the whole packet at `position` if one is there before `limit` with a matching
// CRC, else 0.
std::size_t EvidenceRing::packet_at(std::uint32_t position, std::uint32_t limit) const noexcept {
  const std::uint32_t mask = capacity_ - 1u;
  const std::uint32_t available = limit - position;
  const auto at = [&](std::uint32_t i) { return bytes_[(position + i) & mask]; };
  if (available < kMinPacket || at(0) != kPacketMagic0 || at(1) != kPacketMagic1) return 0;
  const std::uint32_t total = kMinPacket + (at(4) | static_cast<std::uint32_t>(at(5)) << 8);
  if (total > available) return 0;
  // The CRC over the bytes after the magic, in at most two pieces (the ring wraps once).
  const std::uint32_t start = (position + 2u) & mask;
  const std::uint32_t first = capacity_ - start < total - 2u ? capacity_ - start : total - 2u;
  const std::uint32_t crc = crc32(bytes_ + start, first);
  return crc32(bytes_, total - 2u - first, crc) == kCrcResidue ? total : 0;
}

CrashBoxStatus EvidenceRing::open(std::uint8_t* bytes, std::uint32_t capacity, ResetCause board_cause) noexcept {
  bytes_ = bytes;
  pushed_.store(0, std::memory_order_relaxed);
  drained_ = 0;
  refused_ = 0;
  damaged_ = 0;
  in_damage_ = false;
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
  const std::uint32_t from = tail_.load(std::memory_order_relaxed);
  const std::uint32_t to = head_.load(std::memory_order_relaxed);
  carried_ = to - from;
  carried_bytes_ = carried_;
  marked_ = false;
  // This boot starts here.
  ++boots_;
  std::uint8_t packet[kPacketHeaderBytes + 3 + detail::varint_bytes(32) + kPacketTrailerBytes];
  ByteWriter w{packet, sizeof packet, kPacketHeaderBytes};
  w.u8(kBootStarts);
  w.u8(static_cast<unsigned>(cause_));
  w.uv(boots_);
  w.u8(discarded_);
  push(packet, detail::seal_packet(packet, PacketType::boot, w.pos - kPacketHeaderBytes));
  if (discarded_ != 0) return CrashBoxStatus::discarded;
  return carried_ != 0 ? CrashBoxStatus::kept : CrashBoxStatus::empty;
}

bool EvidenceRing::push(const std::uint8_t* packet, std::size_t size) noexcept {
  const std::uint32_t head = head_.load(std::memory_order_relaxed);
  if (size > capacity_ - (head - detail::load_acquire(tail_))) {
    detail::bump(dropped_);
    return false;
  }
  for (std::size_t i = 0; i < size; ++i) bytes_[(head + i) & (capacity_ - 1u)] = packet[i];
  detail::store_release(head_, head + static_cast<std::uint32_t>(size));
  detail::bump(pushed_);
  return true;
}

std::uint32_t EvidenceRing::drain(const PacketSink& sink, std::uint8_t* buffer, std::size_t size) noexcept {
  if (sink.write == nullptr || buffer == nullptr) return 0;
  std::uint32_t sent = 0;
  std::uint32_t tail = tail_.load(std::memory_order_relaxed);
  const std::uint32_t head = detail::load_acquire(head_);
  while (tail != head) {
    const std::size_t n = packet_at(tail, head);
    const std::uint32_t step = n != 0 ? static_cast<std::uint32_t>(n) : 1u;
    damaged_ += n == 0 && !in_damage_ ? 1u : 0u;  // a run of damaged bytes counts once
    in_damage_ = n == 0;
    if (carried_ != 0 && !marked_ && n != 0) {
      // The first of the previous boot's packets: a `boot` packet marks what follows.
      ByteWriter w{buffer, size, kPacketHeaderBytes};
      w.u8(kBootPrevious);
      w.u8(static_cast<unsigned>(cause_));
      w.uv(boots_);
      sink.write(sink.context, buffer, detail::seal_packet(buffer, PacketType::boot, w.pos - kPacketHeaderBytes));
      marked_ = true;
      ++sent;
    }
    if (n > size) {
      ++refused_;
    } else if (n != 0) {
      copy_out(tail, buffer, n);
      sink.write(sink.context, buffer, n);
      ++sent;
    }
    carried_ -= carried_ < step ? carried_ : step;
    tail += step;
    detail::store_release(tail_, tail);
  }
  drained_ += sent;
  return sent;
}

void EvidenceRing::set_reset_cause(ResetCause cause) noexcept {
  reset_cause_ = static_cast<std::uint32_t>(cause);
  reset_check_ = ~reset_cause_;
}

EvidenceRingStats EvidenceRing::stats() const noexcept {
  return EvidenceRingStats{detail::load_relaxed(pushed_), detail::load_relaxed(dropped_), drained_, refused_,
                           carried_bytes_, damaged_, discarded_, boots_, cause_};
}

}  // namespace loopcanary
