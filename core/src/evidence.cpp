// SPDX-License-Identifier: MIT
// The evidence stream (evidence.hpp): the evidence packets' encoder and the byte ring. Small on
// purpose (it is what a device links instead of the assembler and the record encoder).
// docs/report-format.md ("Evidence packets") is the specification this follows field by field.
#include "loopcanary/evidence.hpp"

#include <type_traits>

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

// The configuration and capacities that head `watch` and `observation` bodies.
void configuration(ByteWriter& w) noexcept {
  w.u8(detail::kPacketConfiguration);
  w.u8(kMaxSamples);
  w.u8(kMaxFrames);
  w.u8(kTopFrames);
  w.u8(kMaxStages);
}

void cpu_reading(ByteWriter& w, const TimedCpuReading& r) noexcept {
  w.uv(r.elapsed);
  w.u8(r.counters.valid);
  for (unsigned i = 0; i < kCpuValues; ++i) {
    if (r.counters.has(static_cast<CpuValue>(i))) w.uv(r.counters.value[i]);
  }
}

}  // namespace

// ---- The ring ---------------------------------------------------------------------------------

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
    discarded_ = 1;
  } else if (board_cause == ResetCause::unknown && reset_check_ == ~reset_cause_ &&
             reset_cause_ <= static_cast<std::uint32_t>(ResetCause::brown_out)) {
    cause_ = static_cast<ResetCause>(reset_cause_);
  }
  set_reset_cause(ResetCause::unknown);
  // The previous boot's bytes: counted, and their damaged runs (drain() skips them).
  const std::uint32_t from = tail_.load(std::memory_order_relaxed);
  const std::uint32_t to = head_.load(std::memory_order_relaxed);
  bool in_damage = false;
  for (std::uint32_t at = from; at != to;) {
    const std::size_t n = packet_at(at, to);
    if (n == 0) {
      damaged_ += in_damage ? 0u : 1u;
      in_damage = true;
      ++at;
    } else {
      in_damage = false;
      at += static_cast<std::uint32_t>(n);
    }
  }
  carried_ = to - from;
  carried_bytes_ = carried_;
  marked_ = false;
  // This boot starts here.
  std::uint8_t packet[kPacketHeaderBytes + 8 + kPacketTrailerBytes];
  ByteWriter w{packet, sizeof packet, kPacketHeaderBytes};
  w.u8(kBootStarts);
  w.u8(static_cast<unsigned>(cause_));
  w.u8(discarded_);
  w.uv(damaged_);
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
    std::size_t n = packet_at(tail, head);
    const std::uint32_t step = n != 0 ? static_cast<std::uint32_t>(n) : 1u;  // damaged: counted by open()
    if (carried_ != 0 && !marked_ && n != 0) {
      // The first of the previous boot's packets: a `boot` packet marks what follows.
      ByteWriter w{buffer, size, kPacketHeaderBytes};
      w.u8(kBootPrevious);
      w.u8(static_cast<unsigned>(cause_));
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
                           carried_bytes_, damaged_, discarded_, cause_};
}

// ---- The evidence sink ------------------------------------------------------------------------

Status EvidenceWatchdog::init(const WatchdogConfig& config, const Hal& hal, const Storage& storage, EvidenceRing& ring,
                              std::uint8_t* scratch) noexcept {
  const Status status = Watchdog::init(config, hal, storage, kStream, nullptr);
  if (status != Status::ok) return status;
  ring_ = &ring;
  scratch_ = scratch;
  rule_[0] = config.running_permille;
  rule_[1] = config.starved_busy_permille;
  rule_[2] = config.starved_wait_permille;
  return Status::ok;
}

void EvidenceWatchdog::send_watch(Watchdog& self, std::size_t watch) noexcept {
  auto& me = static_cast<EvidenceWatchdog&>(self);
  ByteWriter w{me.scratch_, kMaxEvidencePacketBytes, kPacketHeaderBytes};
  configuration(w);
  w.u8(static_cast<unsigned>(watch));
  me.ring_->push(me.scratch_, detail::seal_packet(me.scratch_, PacketType::watch, w.pos - kPacketHeaderBytes));
}

void EvidenceWatchdog::send_sample(Watchdog& self, std::size_t watch, const Sample& s) noexcept {
  auto& me = static_cast<EvidenceWatchdog&>(self);
  ByteWriter w{me.scratch_, kMaxEvidencePacketBytes, kPacketHeaderBytes};
  w.u8(static_cast<unsigned>(watch));
  w.uv(s.at);
  w.uv(s.seq);
  w.u8(s.scope_count);
  w.u8(s.pc_count);
  for (unsigned f = 0; f < s.scope_count; ++f) w.str(reinterpret_cast<const char*>(s.frames[f]));
  for (unsigned f = s.scope_count; f < s.scope_count + s.pc_count; ++f) w.uv(s.frames[f]);
  me.ring_->push(me.scratch_, detail::seal_packet(me.scratch_, PacketType::sample, w.pos - kPacketHeaderBytes));
}

bool EvidenceWatchdog::send_observation(Watchdog& self, const Observation& o) noexcept {
  auto& me = static_cast<EvidenceWatchdog&>(self);
  ByteWriter w{me.scratch_, kMaxEvidencePacketBytes, kPacketHeaderBytes};
  configuration(w);
  for (std::uint16_t permille : me.rule_) w.uv(permille);
  w.uv(o.tick_hz);
  w.uv(o.report);
  w.uv(o.records_dropped);
  w.uv(o.notes_dropped);
  w.u8(static_cast<unsigned>(o.phase));
  w.u8(o.flags);
  w.u8(o.loop_index);
  w.u8(o.watch);
  w.uv(o.note.seq);
  w.uv(o.note.begin);
  w.uv(o.note.end);
  w.uv(o.duration_ticks);
  w.uv(o.threshold_ticks);
  w.uv(o.delayed_by_dispatch);
  if (o.delayed_by_dispatch != 0) w.str(o.delayed_by != nullptr ? o.delayed_by->name : nullptr);
  if ((o.flags & kFlagUnwatched) == 0) {
    cpu_reading(w, o.first);
    cpu_reading(w, o.last);
  }
  w.memory(o.memory);
  w.uv(o.samples_missed);
  w.str(self.qualifier());
  w.str(o.loop);
  w.str(o.note.event != nullptr ? o.note.event->name : nullptr);
  w.u8(o.note.stage_count);
  if constexpr (kMaxStages > 0) {
    const std::size_t count = o.note.stage_count;
    for (std::size_t i = 0; i < count; ++i) {
      w.str(o.note.stages[i].name);
      w.uv(o.note.stages[i].start);
    }
  }
  return me.ring_->push(me.scratch_, detail::seal_packet(me.scratch_, PacketType::observation, w.pos - kPacketHeaderBytes));
}

}  // namespace loopcanary
