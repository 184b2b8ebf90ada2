// SPDX-License-Identifier: MIT
// encode_packet and crc32. Small on purpose (it runs on Cortex-M0/M3 beside the monitor): a
// CRC by nibbles (a 64-byte table), one varint writer, a linear string-table search.
// docs/report-format.md ("Binary form") is the specification this follows field by field.
#include "loopcanary/packet.hpp"

#include <array>

#include "loopcanary/packet_fields.hpp"

namespace loopcanary {
namespace {

static_assert(kPacketNameMax < 64, "a name's length varint (L << 1 | cut) must stay one byte");

using detail::ByteWriter;

// Zigzag form of a two's complement value of T's width: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ...
// Equal to the spec's 64-bit zigzag of the value sign-extended from T's width.
template <typename T>
T zigzag(T v) noexcept {
  return static_cast<T>(static_cast<T>(v << 1) ^ static_cast<T>(T{0} - (v >> (sizeof(T) * 8 - 1))));
}

// A packet's names after its `First` fixed strings, by pointer, in order of first use (a block
// packet: the delayed-by event, stages, top entries' scopes, then samples'; a health packet:
// events).
template <std::size_t Capacity, std::uint32_t First>
struct StringTable {
  const char* names[Capacity > 0 ? Capacity : 1];
  std::uint32_t count = 0;

  // String index (First..) of `name`, added at the end when new.
  std::uint32_t index(Frame frame) noexcept { return index(reinterpret_cast<const char*>(frame)); }
  std::uint32_t index(const char* name) noexcept {
    std::uint32_t i = 0;
    while (i < count && names[i] != name) ++i;
    if (i == count) names[count++] = name;
    return First + i;
  }
};
using ScopeStrings = StringTable<detail::kPacketStringsMax - 3, 3>;

// A stack's frames (a top entry's or a sample's): the scopes' string indices, then each program
// counter as the zigzag difference from the one at the same depth of `previous` (the entry or
// sample before it; none: from 0).
void write_frames(ByteWriter& w, ScopeStrings& scopes, std::uint8_t scope_count, std::uint8_t pc_count,
                  const Frame* frames, std::uint8_t previous_scopes, std::uint8_t previous_pcs,
                  const Frame* previous) noexcept {
  w.u8(scope_count);
  w.u8(pc_count);
  for (unsigned f = 0; f < scope_count; ++f) w.uv(scopes.index(frames[f]));
  for (unsigned f = 0; f < pc_count; ++f) {
    const Frame base = previous != nullptr && f < previous_pcs ? previous[previous_scopes + f] : Frame{0};
    w.uv(zigzag<Frame>(frames[scope_count + f] - base));
  }
}

constexpr unsigned kConfiguration = detail::kPacketConfiguration;

// A deadline miss's delaying event goes in the string table unless it is the record's own event
// (string index 2).
bool delayer_named(const BlockRecord& r) noexcept { return r.delayed_by_dispatch != 0 && r.delayed_by != r.event; }
const char* delayer_name(const BlockRecord& r) noexcept { return r.delayed_by != nullptr ? r.delayed_by->name : nullptr; }

// The `section` entries of LOOPCANARY_BLOCK_PACKET_FIELDS.
struct BlockSections {
  ByteWriter& w;
  const BlockRecord& r;
  ScopeStrings& scopes;

  // The end as its zigzag difference from start + duration_ticks, modulo 2^32.
  void end() const noexcept {
    w.uv(zigzag<std::uint32_t>(r.end - (r.start + static_cast<tick_t>(r.duration_ticks))));
  }
  // delayed_by_dispatch, then (when not 0) the delaying event's string index.
  void delayed_by() const noexcept {
    w.uv(r.delayed_by_dispatch);
    if (r.delayed_by_dispatch != 0) w.uv(delayer_named(r) ? scopes.index(delayer_name(r)) : 2u);
  }
  // The presence byte (bit 0 thread_cpu_us, 1 thread_wait_us, 2 system_busy_permille, 3
  // process_permille), then each present value.
  void cpu() const noexcept {
    const bool busy_known = r.system_busy_permille != kUnknownPermille;
    const bool process_known = r.process_permille != kUnknownPermille;
    w.u8((r.has_thread_cpu ? 1u : 0u) | (r.has_thread_wait ? 2u : 0u) | (busy_known ? 4u : 0u) |
         (process_known ? 8u : 0u));
    if (r.has_thread_cpu) w.uv(r.thread_cpu_us);
    if (r.has_thread_wait) w.uv(r.thread_wait_us);
    if (busy_known) w.uv(r.system_busy_permille);
    if (process_known) w.uv(r.process_permille);
  }
};

// The `section` entries of LOOPCANARY_WAIT_PACKET_FIELDS.
struct WaitSections {
  ByteWriter& w;
  const WaitSeen& r;

  void kind() const noexcept { w.u8(static_cast<unsigned>(r.object.kind)); }
  // fd + 1; 0: no descriptor.
  void fd() const noexcept { w.uv(r.object.fd < 0 ? 0u : static_cast<std::uint64_t>(r.object.fd) + 1u); }
  void text() const noexcept { w.str<kWaitTextMax - 1>(r.object.text); }
  // With an owner: its thread name, then the watched loop it runs (empty: none).
  void owner_names() const noexcept {
    if (r.object.owner == 0) return;
    w.str<kThreadNameMax - 1>(r.object.owner_name);
    w.str(r.owner_loop);
  }
  void holder_frames() const noexcept {
    w.u8(r.holder_pc_count);
    for (unsigned f = 0; f < r.holder_pc_count; ++f) w.uv(r.holder_frames[f]);
  }
  // (hops << 1) | deadlock, then each hop: its lock's address, its holder, the holder's name
  // when there is one.
  void chain() const noexcept {
    w.u8(static_cast<unsigned>(r.chain_count << 1) | (r.deadlock ? 1u : 0u));
    for (unsigned h = 0; h < r.chain_count; ++h) {
      w.uv(r.chain[h].address);
      w.uv(r.chain[h].owner);
      if (r.chain[h].owner != 0) w.str<kThreadNameMax - 1>(r.chain[h].owner_name);
    }
  }
};

// The wait part (version 4): count, other, then each object.
[[maybe_unused]] void write_wait(ByteWriter& w, const WaitSummary& wait) noexcept {
  w.u8(wait.count);
  w.uv(wait.other);
  for (unsigned i = 0; i < wait.count; ++i) {
    const WaitSeen& r = wait.objects[i];
    const WaitSections section{w, r};
    LOOPCANARY_WAIT_PACKET_FIELDS(LOOPCANARY_PUT)
  }
}

// The `section` entries of LOOPCANARY_HEALTH_PACKET_FIELDS.
struct HealthSections {
  ByteWriter& w;
  const HealthRecord& r;

  // The window, end - start modulo 2^32.
  void end() const noexcept { w.uv(static_cast<tick_t>(r.end - r.start)); }
  // idle_ticks + 1, or 0 without an idle reading.
  void idle_ticks() const noexcept { w.uv(r.has_idle ? std::uint64_t{r.idle_ticks} + 1u : 0u); }
  // The count of non-zero buckets, then each one's index and count, increasing.
  void histogram() const noexcept {
    unsigned buckets = 0;
    for (std::uint32_t count : r.histogram) buckets += count != 0 ? 1u : 0u;
    w.u8(buckets);
    for (unsigned i = 0; i < kHistogramBuckets; ++i) {
      if (r.histogram[i] == 0) continue;
      w.u8(i);
      w.uv(r.histogram[i]);
    }
  }
};

// The CRC-32 register after four bitwise steps from each 4-bit value: one lookup does the four
// steps (64 bytes of table; a byte-wide table would take 1 KiB for twice the speed again).
constexpr std::array<std::uint32_t, 16> nibble_table() noexcept {
  std::array<std::uint32_t, 16> table{};
  for (std::uint32_t nibble = 0; nibble < 16; ++nibble) {
    std::uint32_t crc = nibble;
    for (int bit = 0; bit < 4; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    table[nibble] = crc;
  }
  return table;
}
constexpr std::array<std::uint32_t, 16> kNibbleCrc = nibble_table();
static_assert(kNibbleCrc[1] == 0x1DB71064u && kNibbleCrc[8] == 0xEDB88320u, "CRC-32 nibble table");

}  // namespace

std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t crc) noexcept {
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    crc = (crc >> 4) ^ kNibbleCrc[crc & 0xFu];
    crc = (crc >> 4) ^ kNibbleCrc[crc & 0xFu];
  }
  return ~crc;
}

std::size_t encode_packet(const BlockRecord& r, std::uint8_t* buffer, std::size_t size) noexcept {
  ScopeStrings scopes;
  if (delayer_named(r)) scopes.index(delayer_name(r));
  for (unsigned i = 0; i < r.stage_count; ++i) scopes.index(r.stages[i].name);
  for (unsigned i = 0; i < r.top_count; ++i) {
    for (unsigned f = 0; f < r.top[i].scope_count; ++f) scopes.index(r.top[i].frames[f]);
  }
  for (unsigned i = 0; i < r.sample_count; ++i) {
    for (unsigned f = 0; f < r.samples[i].scope_count; ++f) scopes.index(r.samples[i].frames[f]);
  }

  ByteWriter w{buffer, size, kPacketHeaderBytes};
  w.configuration();
  const BlockSections section{w, r, scopes};
  LOOPCANARY_BLOCK_PACKET_FIELDS(LOOPCANARY_PUT)

  w.uv(3 + scopes.count);
  w.str(r.qualifier);
  w.str(r.loop);
  w.str(r.event != nullptr ? r.event->name : nullptr);
  for (std::uint32_t i = 0; i < scopes.count; ++i) w.str(scopes.names[i]);
  w.u8(r.stage_count);
  for (unsigned i = 0; i < r.stage_count; ++i) {
    w.uv(scopes.index(r.stages[i].name));
    w.uv(r.stages[i].ticks);
  }

  LOOPCANARY_BLOCK_PACKET_SAMPLE_FIELDS(LOOPCANARY_PUT)
  w.u8(r.top_count);
  w.uv(r.top_other);
  if constexpr (kStackWords > 0) {  // the stack parts, once each; entries and samples name them
    w.u8(r.evidence.count);
    for (std::uint8_t slot = 1; slot <= r.evidence.count; ++slot) w.stack_part(r.evidence.at(slot));
  }
  for (unsigned i = 0; i < r.top_count; ++i) {
    const TopStack& t = r.top[i];
    const TopStack* before = i != 0 ? &r.top[i - 1] : nullptr;
    w.uv(t.count);
    write_frames(w, scopes, t.scope_count, t.pc_count, t.frames, before != nullptr ? before->scope_count : 0,
                 before != nullptr ? before->pc_count : 0, before != nullptr ? before->frames : nullptr);
    if (t.pc_count != 0) w.uv(t.leaf_high - t.frames[t.scope_count]);
    if constexpr (kStackWords > 0) w.u8(t.stack);
  }
  w.u8(r.sample_count);
  const Sample* previous = nullptr;
  for (unsigned i = 0; i < r.sample_count; ++i) {
    const Sample& s = r.samples[i];
    w.uv(static_cast<tick_t>(s.at - (previous != nullptr ? previous->at : r.start)));
    w.uv(zigzag<std::uint32_t>(s.seq - (2u * r.dispatch - 1u)));
    write_frames(w, scopes, s.scope_count, s.pc_count, s.frames, previous != nullptr ? previous->scope_count : 0,
                 previous != nullptr ? previous->pc_count : 0, previous != nullptr ? previous->frames : nullptr);
    if constexpr (kStackWords > 0) w.u8(s.stack);
    previous = &s;
  }
  if constexpr (kWaitObjects > 0) {  // a record that waited on nothing named ends here
    if (r.wait.count != 0 || r.wait.other != 0) write_wait(w, r.wait);
  }

  if (w.pos + kPacketTrailerBytes > size) return 0;
  // body <= detail::kPacketBodyMax: fits its 16 bits
  return detail::seal_packet(buffer, PacketType::block, w.pos - kPacketHeaderBytes);
}

std::size_t encode_health_packet(const HealthRecord& r, std::uint8_t* buffer, std::size_t size) noexcept {
  StringTable<kHealthEvents, 2> events;
  for (unsigned i = 0; i < r.event_count; ++i) events.index(r.events[i].event != nullptr ? r.events[i].event->name : nullptr);

  ByteWriter w{buffer, size, kPacketHeaderBytes};
  w.u8(kConfiguration);
  w.u8(kHealthEvents);
  const HealthSections section{w, r};
  LOOPCANARY_HEALTH_PACKET_FIELDS(LOOPCANARY_PUT)
  w.uv(2 + events.count);
  w.str(r.qualifier);
  w.str(r.loop);
  for (std::uint32_t i = 0; i < events.count; ++i) w.str(events.names[i]);
  w.u8(r.event_count);
  for (unsigned i = 0; i < r.event_count; ++i) {
    const EventHealthWindow& e = r.events[i];
    w.uv(events.index(e.event != nullptr ? e.event->name : nullptr));
    // Every entry is a number (another codec does not compile here): one loop, less code.
#define LOOPCANARY_EVENT_VALUE(name, codec, bits, since) LOOPCANARY_EVENT_VALUE_##codec(e.name)
#define LOOPCANARY_EVENT_VALUE_number(value) value,
    const std::uint32_t values[] = {LOOPCANARY_EVENT_HEALTH_PACKET_FIELDS(LOOPCANARY_EVENT_VALUE)};
#undef LOOPCANARY_EVENT_VALUE_number
#undef LOOPCANARY_EVENT_VALUE
    for (std::uint32_t v : values) w.uv(v);
  }
  if (w.pos + kPacketTrailerBytes > size) return 0;
  return detail::seal_packet(buffer, PacketType::health, w.pos - kPacketHeaderBytes);
}

std::size_t detail::seal_packet(std::uint8_t* p, PacketType type, std::size_t body) noexcept {
  p[0] = kPacketMagic0;
  p[1] = kPacketMagic1;
  p[2] = kPacketVersion;
  p[3] = static_cast<std::uint8_t>(type);
  p[4] = static_cast<std::uint8_t>(body);
  p[5] = static_cast<std::uint8_t>(body >> 8);
  std::uint32_t crc = crc32(p + 2, 4 + body);
  for (std::size_t i = 0; i < kPacketTrailerBytes; ++i, crc >>= 8) {
    p[kPacketHeaderBytes + body + i] = static_cast<std::uint8_t>(crc);
  }
  return kPacketHeaderBytes + body + kPacketTrailerBytes;
}

const char* to_string(ResetCause cause) noexcept {
  switch (cause) {
    case ResetCause::unknown: return "unknown";
    case ResetCause::power_on: return "power_on";
    case ResetCause::reset_pin: return "reset_pin";
    case ResetCause::software: return "software";
    case ResetCause::watchdog: return "watchdog";
    case ResetCause::lockup: return "lockup";
    case ResetCause::brown_out: return "brown_out";
  }
  return "unknown_reset_cause";
}

}  // namespace loopcanary
