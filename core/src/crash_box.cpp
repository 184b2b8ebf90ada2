// SPDX-License-Identifier: MIT
#include "loopcanary/crash_box.hpp"

#include <cstring>
#include <type_traits>

#include "loopcanary/packet.hpp"

namespace loopcanary {
namespace {

// A stored packet's reset cause until the next open() fills it in (never sent: drain() runs
// after open()).
constexpr std::uint8_t kCausePending = 0xFF;
// A previous_boot packet: header, the cause byte, at least one body byte, the CRC.
constexpr std::size_t kMinPacket = kPacketHeaderBytes + 2 + kPacketTrailerBytes;
static_assert(std::is_trivially_default_constructible<StaticCrashBox<16>>::value,
              "a crash box lives in no-init RAM: no constructor may run at start-up");
static_assert(detail::kPacketBodyMax < 0xFFFF, "a previous_boot body (one byte more) must fit its 16-bit length");

// CRC-32 of any bytes followed by their own CRC-32 (little-endian): its residue.
constexpr std::uint32_t kCrcResidue = 0x2144DF1Cu;

// The length of the whole previous_boot packet at `p` if one is there within `size` bytes with
// a matching CRC, else 0.
std::size_t packet_at(const std::uint8_t* p, std::size_t size) noexcept {
  if (size < kMinPacket || p[0] != kPacketMagic0 || p[1] != kPacketMagic1 || p[2] != kPacketVersion ||
      p[3] != static_cast<std::uint8_t>(PacketType::previous_boot)) {
    return 0;
  }
  const std::size_t total = packet_size(p);
  if (total < kMinPacket || total > size) return 0;
  return crc32(p + 2, total - 2) == kCrcResidue ? total : 0;
}

// Drops the first `n` packet bytes of the box (the caller seals the header).
void remove_front(CrashBoxHeader& h, std::uint8_t* packets, std::size_t n) noexcept {
  h.used -= static_cast<std::uint32_t>(n);
  std::memmove(packets, packets + n, h.used);
}

}  // namespace

void CrashBox::seal() noexcept {
  header_.crc = crc32(reinterpret_cast<const std::uint8_t*>(&header_), offsetof(CrashBoxHeader, crc));
}

CrashBoxStatus CrashBox::open(std::uint8_t* packets, std::uint32_t capacity, ResetCause board_cause) noexcept {
  packets_ = packets;
  boot_ = CrashBoxStats{};
  boot_.reset_cause = board_cause;
  CrashBoxHeader& h = header_;
  const std::uint32_t crc = h.crc;
  seal();  // the CRC the header should have
  if (h.magic != kCrashBoxMagic || h.layout != kCrashBoxLayout || h.capacity != capacity || h.used > capacity ||
      h.crc != crc) {
    h = CrashBoxHeader{kCrashBoxMagic, kCrashBoxLayout, capacity, 0, 0, 0, 0, 0, 0};
    boot_.boxes_discarded = 1;
    seal();
    return CrashBoxStatus::discarded;
  }
  if (board_cause == ResetCause::unknown && h.reset_cause <= static_cast<std::uint32_t>(ResetCause::brown_out)) {
    boot_.reset_cause = static_cast<ResetCause>(h.reset_cause);
  }
  const auto cause = static_cast<std::uint8_t>(boot_.reset_cause);
  // Keep every intact packet, moved to the front in order; a run of other bytes counts once.
  std::size_t kept_bytes = 0;
  bool in_damage = false;
  for (std::size_t at = 0; at < h.used;) {
    const std::size_t n = packet_at(packets + at, h.used - at);
    if (n == 0) {
      if (!in_damage) ++boot_.records_discarded;
      in_damage = true;
      ++at;
      continue;
    }
    in_damage = false;
    std::uint8_t* p = packets + kept_bytes;
    std::memmove(p, packets + at, n);
    if (p[kPacketHeaderBytes] == kCausePending) {
      p[kPacketHeaderBytes] = cause;
      detail::seal_packet(p, PacketType::previous_boot, n - kPacketHeaderBytes - kPacketTrailerBytes);
    }
    kept_bytes += n;
    at += n;
    ++boot_.kept;
  }
  h.used = static_cast<std::uint32_t>(kept_bytes);
  h.reset_cause = 0;
  seal();
  return boot_.kept != 0 ? CrashBoxStatus::kept : CrashBoxStatus::empty;
}

bool CrashBox::store(const BlockRecord& record) noexcept {
  CrashBoxHeader& h = header_;
  std::size_t n;
  // The block packet is encoded one byte in, so that it becomes a previous_boot packet in place:
  // its header moves back over the spare byte and the cause byte takes the header's last place.
  for (;;) {
    const std::size_t room = h.capacity - h.used;
    n = room > 1 ? encode_packet(record, packets_ + h.used + 1, room - 1) : 0;
    if (n != 0) break;
    if (h.used == 0) {
      ++h.refused;
      seal();
      return false;
    }
    const std::size_t oldest = packet_at(packets_, h.used);
    remove_front(h, packets_, oldest != 0 ? oldest : h.used);  // not a packet: cannot happen after open()
    ++h.overwritten;
  }
  std::uint8_t* p = packets_ + h.used;
  const std::size_t body = n - kPacketHeaderBytes - kPacketTrailerBytes + 1;
  p[kPacketHeaderBytes] = kCausePending;
  detail::seal_packet(p, PacketType::previous_boot, body);
  h.used += static_cast<std::uint32_t>(n + 1);
  ++h.stored;
  seal();
  return true;
}

void CrashBox::set_reset_cause(ResetCause cause) noexcept {
  header_.reset_cause = static_cast<std::uint32_t>(cause);
  seal();
}

std::uint32_t CrashBox::drain(const PacketSink& sink) noexcept {
  if (sink.write == nullptr) return 0;
  // The packets open() kept come first; those stored since (cause pending) stay for the next boot.
  std::uint32_t sent = 0;
  std::size_t at = 0;
  for (std::size_t n; at < header_.used; at += n, ++sent) {
    n = packet_at(packets_ + at, header_.used - at);
    if (n == 0 || packets_[at + kPacketHeaderBytes] == kCausePending) break;
    sink.write(sink.context, packets_ + at, n);
  }
  remove_front(header_, packets_, at);
  seal();
  boot_.drained += sent;
  return sent;
}

CrashBoxStats CrashBox::stats() const noexcept {
  CrashBoxStats s = boot_;
  s.stored = header_.stored;
  s.overwritten = header_.overwritten;
  s.refused = header_.refused;
  return s;
}

void CrashBox::intercept(void* box, const BlockRecord& record) noexcept {
  if (record.phase != Phase::in_progress) static_cast<CrashBox*>(box)->store(record);
}

}  // namespace loopcanary
