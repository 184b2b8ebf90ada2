// SPDX-License-Identifier: MIT
// EvidenceRing: whole packets in, whole packets out in order (also across the end of the ring),
// a packet that does not fit dropped and counted, never overwriting; kept across a "reset" (open()
// again on the same memory) and sent after a boot packet that marks them; a damaged header
// discards the ring (counted); damaged bytes inside it are skipped and counted, never sent; a
// drain buffer too small for a packet counts it refused. The sent bytes are read by the host
// tool's capture reader (sim/tool/packet_reader.hpp).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/evidence.hpp"
#include "loopcanary/packet.hpp"
#include "packet_reader.hpp"

namespace {

namespace lc = loopcanary;
namespace lt = loopcanary::tool;
using Bytes = std::vector<std::uint8_t>;

// A ring in zeroed memory, as a test's stand-in for no-init RAM (open() sees no valid ring).
struct Memory {
  alignas(lc::StaticEvidenceRing<256>) unsigned char bytes[sizeof(lc::StaticEvidenceRing<256>)] = {};
  lc::StaticEvidenceRing<256>* object = ::new (static_cast<void*>(bytes)) lc::StaticEvidenceRing<256>;  // trivial: bytes stay
  lc::StaticEvidenceRing<256>& ring() { return *object; }
};

// A packet of type `sample` and `size` bytes in all (17..265), its body: watch 0, at `at`,
// seq 1, no scope, one-byte PCs as needed to fill it (more than a decoder's max frames: the ring
// does not read bodies).
Bytes sample(std::uint32_t at, std::size_t size) {
  Bytes p(size);
  lc::detail::ByteWriter w{p.data(), p.size(), lc::kPacketHeaderBytes};
  w.u8(0);
  w.u8(0x80u | (at & 0x7Fu));  // at as a 2-byte uv
  w.u8((at >> 7) & 0x7Fu);
  w.u8(1);
  w.u8(0);
  const std::size_t pcs = size - lc::kPacketHeaderBytes - lc::kPacketTrailerBytes - 6;
  w.u8(static_cast<unsigned>(pcs));
  for (std::size_t i = 0; i < pcs; ++i) w.u8(0x10);
  lc::detail::seal_packet(p.data(), lc::PacketType::sample, w.pos - lc::kPacketHeaderBytes);
  return p;
}

struct Sent {
  std::vector<Bytes> packets;
  static void write(void* self, const std::uint8_t* packet, std::size_t size) {
    static_cast<Sent*>(self)->packets.emplace_back(packet, packet + size);
  }
  lc::PacketSink sink() { return {&Sent::write, this}; }
};

std::uint8_t g_buffer[lc::kMaxEvidencePacketBytes];

// Boot packet fields: kind, reset cause, boot number (a one-byte uv here).
struct Boot {
  unsigned kind;
  unsigned cause;
  unsigned boot;
};
Boot boot_of(const Bytes& p) {
  EXPECT_EQ(p[3], static_cast<std::uint8_t>(lc::PacketType::boot));
  return {p[6], p[7], p[8]};
}

TEST(EvidenceRing, PacketsGoOutWholeAndInOrderAcrossTheEndOfTheRing) {
  Memory m;
  EXPECT_EQ(m.ring().open(lc::ResetCause::power_on), lc::CrashBoxStatus::discarded);
  Sent sent;
  m.ring().drain(sent.sink(), g_buffer, sizeof g_buffer);  // this boot's boot packet
  ASSERT_EQ(sent.packets.size(), 1u);
  EXPECT_EQ(boot_of(sent.packets[0]).kind, 1u);
  std::vector<Bytes> pushed;
  for (std::uint32_t i = 0; i < 20; ++i) {  // 20 × 60 B through 256: wraps several times
    pushed.push_back(sample(i, 60));
    ASSERT_TRUE(m.ring().push(pushed.back().data(), pushed.back().size()));
    if (i % 3 == 2) m.ring().drain(sent.sink(), g_buffer, sizeof g_buffer);
  }
  m.ring().drain(sent.sink(), g_buffer, sizeof g_buffer);
  ASSERT_EQ(sent.packets.size(), 21u);
  for (std::size_t i = 0; i < pushed.size(); ++i) EXPECT_EQ(sent.packets[i + 1], pushed[i]) << i;
  EXPECT_EQ(m.ring().stats().dropped, 0u);
  EXPECT_EQ(m.ring().stats().drained, 21u);
}

TEST(EvidenceRing, APacketThatDoesNotFitIsDroppedAndCountedNeverOverwriting) {
  Memory m;
  m.ring().open(lc::ResetCause::power_on);  // 14 bytes: the boot packet
  const Bytes p = sample(1, 100);
  EXPECT_TRUE(m.ring().push(p.data(), p.size()));
  EXPECT_TRUE(m.ring().push(p.data(), p.size()));
  EXPECT_FALSE(m.ring().push(p.data(), p.size()));  // 14 + 200 + 100 > 256
  EXPECT_EQ(m.ring().stats().dropped, 1u);
  Sent sent;
  EXPECT_EQ(m.ring().drain(sent.sink(), g_buffer, sizeof g_buffer), 3u);
  EXPECT_EQ(sent.packets[1], p);
  EXPECT_EQ(sent.packets[2], p);
}

TEST(EvidenceRing, KeptAcrossAResetAndMarkedAsThePreviousBoots) {
  Memory m;
  m.ring().open(lc::ResetCause::power_on);
  const Bytes p = sample(7, 40);
  m.ring().push(p.data(), p.size());
  m.ring().set_reset_cause(lc::ResetCause::software);
  // Reset: the same memory opened again; the board cannot tell the cause.
  EXPECT_EQ(m.ring().open(lc::ResetCause::unknown), lc::CrashBoxStatus::kept);
  const lc::EvidenceRingStats s = m.ring().stats();
  EXPECT_EQ(s.reset_cause, lc::ResetCause::software);
  EXPECT_EQ(s.boot, 2u);
  EXPECT_EQ(s.carried_bytes, 14u + 40u);
  Sent sent;
  EXPECT_EQ(m.ring().drain(sent.sink(), g_buffer, sizeof g_buffer), 4u);
  const Boot marker = boot_of(sent.packets[0]);
  EXPECT_EQ(marker.kind, 0u);
  EXPECT_EQ(marker.cause, static_cast<unsigned>(lc::ResetCause::software));
  EXPECT_EQ(marker.boot, 2u);
  EXPECT_EQ(boot_of(sent.packets[1]).boot, 1u);  // boot 1's own boot packet, carried
  EXPECT_EQ(sent.packets[2], p);
  EXPECT_EQ(boot_of(sent.packets[3]).kind, 1u);
  EXPECT_EQ(boot_of(sent.packets[3]).boot, 2u);
  // The host finds four whole packets (no garbage, no CRC mismatch, no torn tail).
  Bytes capture;
  for (const Bytes& b : sent.packets) capture.insert(capture.end(), b.begin(), b.end());
  lt::CaptureReader reader;
  reader.read(capture.data(), capture.size(), nullptr, [](lt::WarningKind kind, std::uint64_t, const std::string& what) {
    EXPECT_TRUE(kind != lt::WarningKind::garbage && kind != lt::WarningKind::crc_mismatch &&
                kind != lt::WarningKind::torn_tail)
        << what;
  });
  EXPECT_EQ(reader.stats().packets, 4u);
}

TEST(EvidenceRing, ADamagedHeaderDiscardsTheRing) {
  for (std::size_t byte : {std::size_t{0}, std::size_t{4}, std::size_t{8}, std::size_t{12}}) {
    Memory m;
    m.ring().open(lc::ResetCause::power_on);
    const Bytes p = sample(7, 40);
    m.ring().push(p.data(), p.size());
    m.bytes[byte] ^= 0x01;  // magic, layout, capacity, CRC
    EXPECT_EQ(m.ring().open(lc::ResetCause::unknown), lc::CrashBoxStatus::discarded) << byte;
    EXPECT_EQ(m.ring().stats().boxes_discarded, 1u);
    EXPECT_EQ(m.ring().stats().carried_bytes, 0u);
    EXPECT_EQ(m.ring().stats().boot, 1u);
    Sent sent;
    EXPECT_EQ(m.ring().drain(sent.sink(), g_buffer, sizeof g_buffer), 1u);  // only the new boot packet
    EXPECT_EQ(sent.packets[0][9], 1u) << "discarded";
  }
}

// The warnings the host tool gives for a capture of `ring` drained.
std::vector<lt::WarningKind> warnings_of(lc::EvidenceRing& ring) {
  Sent sent;
  ring.drain(sent.sink(), g_buffer, sizeof g_buffer);
  Bytes capture;
  for (const Bytes& b : sent.packets) capture.insert(capture.end(), b.begin(), b.end());
  std::vector<lt::WarningKind> kinds;
  lt::CaptureReader reader;
  reader.read(capture.data(), capture.size(), nullptr,
              [&kinds](lt::WarningKind kind, std::uint64_t, const std::string&) { kinds.push_back(kind); });
  return kinds;
}

TEST(EvidenceRing, TheHostWarnsOfADiscardedRingUnlessTheBoardSawAPowerOn) {
  Memory unknown;  // a board that cannot tell: the ring may have been damaged
  EXPECT_EQ(unknown.ring().open(lc::ResetCause::unknown), lc::CrashBoxStatus::discarded);
  EXPECT_EQ(warnings_of(unknown.ring()), std::vector<lt::WarningKind>{lt::WarningKind::box_discarded});
  Memory power_on;  // no RAM survives a power-on: nothing was lost
  EXPECT_EQ(power_on.ring().open(lc::ResetCause::power_on), lc::CrashBoxStatus::discarded);
  EXPECT_EQ(power_on.ring().stats().boxes_discarded, 1u) << "still counted on the device";
  EXPECT_TRUE(warnings_of(power_on.ring()).empty());
}

TEST(EvidenceRing, DamagedBytesAreSkippedAndCountedNeverSent) {
  Memory m;
  m.ring().open(lc::ResetCause::power_on);
  Sent sent;
  m.ring().drain(sent.sink(), g_buffer, sizeof g_buffer);
  const Bytes a = sample(1, 40);
  const Bytes b = sample(2, 40);
  m.ring().push(a.data(), a.size());
  m.ring().push(b.data(), b.size());
  // A flipped byte inside `a` (the ring's bytes follow its state): its CRC no longer matches.
  unsigned char* data = m.bytes + sizeof(lc::EvidenceRing);
  bool flipped = false;
  for (std::size_t i = 0; i + a.size() <= 256 && !flipped; ++i) {
    if (std::memcmp(data + i, a.data(), a.size()) == 0) {
      data[i + 20] ^= 0x40;
      flipped = true;
    }
  }
  ASSERT_TRUE(flipped);
  sent.packets.clear();
  EXPECT_EQ(m.ring().drain(sent.sink(), g_buffer, sizeof g_buffer), 1u);
  ASSERT_EQ(sent.packets.size(), 1u);
  EXPECT_EQ(sent.packets[0], b);
  EXPECT_EQ(m.ring().stats().damaged, 1u);  // one run
}

TEST(EvidenceRing, APacketLargerThanTheDrainBufferIsRefusedAndCounted) {
  Memory m;
  m.ring().open(lc::ResetCause::power_on);
  const Bytes p = sample(1, 100);
  m.ring().push(p.data(), p.size());
  Sent sent;
  std::uint8_t small[64];
  EXPECT_EQ(m.ring().drain(sent.sink(), small, sizeof small), 1u);  // the boot packet fits
  EXPECT_EQ(m.ring().stats().refused, 1u);
  EXPECT_EQ(m.ring().drain(sent.sink(), nullptr, 0), 0u);
  EXPECT_EQ(m.ring().drain(lc::PacketSink{nullptr, nullptr}, g_buffer, sizeof g_buffer), 0u);
}

}  // namespace
