// SPDX-License-Identifier: MIT
// EvidenceRing: whole packets in, the same bytes out in order (one write, two across the end of
// the ring), a packet that does not fit dropped and counted, never overwriting; kept across a
// "reset" (open() again on the same memory) and sent after a boot packet that marks them, this
// boot's boot packet after them even when they filled the ring; a damaged header discards the
// ring (counted); bytes damaged inside it are sent as they are and the host warns of them,
// decoding the packets around them. The sent bytes are read by the host
// tool's capture reader (sim/tool/packet_reader.hpp).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"
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

// What drain() sent: the byte stream, the calls, and the stream cut into packets by their
// headers (magic, type, 16-bit body length), as a decoder does.
struct Sent {
  Bytes stream;
  std::size_t writes = 0;
  static void write(void* self, const std::uint8_t* bytes, std::size_t size) {
    Sent& sent = *static_cast<Sent*>(self);
    EXPECT_GT(size, 0u) << "an empty write";
    sent.stream.insert(sent.stream.end(), bytes, bytes + size);
    ++sent.writes;
  }
  lc::PacketSink sink() { return {&Sent::write, this}; }
  std::vector<Bytes> packets() const {
    std::vector<Bytes> out;
    for (std::size_t at = 0; at < stream.size();) {
      const std::size_t total = lc::packet_size(&stream[at]);
      EXPECT_EQ(stream[at], lc::kPacketMagic0) << at;
      EXPECT_LE(at + total, stream.size());
      if (at + total > stream.size()) break;
      out.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(at),
                       stream.begin() + static_cast<std::ptrdiff_t>(at + total));
      at += total;
    }
    return out;
  }
};

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
  EXPECT_EQ(m.ring().drain(sent.sink()), 14u);  // this boot's boot packet
  ASSERT_EQ(sent.packets().size(), 1u);
  EXPECT_EQ(boot_of(sent.packets()[0]).kind, 1u);
  std::vector<Bytes> pushed;
  std::size_t wrapped = 0;
  for (std::uint32_t i = 0; i < 20; ++i) {  // 20 × 60 B through 256: wraps several times
    pushed.push_back(sample(i, 60));
    ASSERT_TRUE(m.ring().push(pushed.back().data(), pushed.back().size()));
    if (i % 3 == 2) {
      const std::size_t writes = sent.writes;
      EXPECT_EQ(m.ring().drain(sent.sink()), 180u);
      EXPECT_LE(sent.writes - writes, 2u);
      wrapped += sent.writes - writes == 2u;
    }
  }
  EXPECT_EQ(m.ring().drain(sent.sink()), 120u);
  EXPECT_GT(wrapped, 0u) << "no drain crossed the end of the ring";
  const std::vector<Bytes> packets = sent.packets();
  ASSERT_EQ(packets.size(), 21u);
  for (std::size_t i = 0; i < pushed.size(); ++i) EXPECT_EQ(packets[i + 1], pushed[i]) << i;
  EXPECT_EQ(m.ring().stats().dropped, 0u);
  EXPECT_EQ(m.ring().stats().sent_bytes, 14u + 20u * 60u);
  const std::size_t writes = sent.writes;
  EXPECT_EQ(m.ring().drain(sent.sink()), 0u);
  EXPECT_EQ(sent.writes, writes) << "nothing waiting: no write";
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
  EXPECT_EQ(m.ring().drain(sent.sink()), 214u);
  const std::vector<Bytes> packets = sent.packets();
  ASSERT_EQ(packets.size(), 3u);
  EXPECT_EQ(packets[1], p);
  EXPECT_EQ(packets[2], p);
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
  EXPECT_EQ(m.ring().drain(sent.sink()), 13u + 14u + 40u + 14u);  // the marker has no `discarded` byte
  const std::vector<Bytes> packets = sent.packets();
  ASSERT_EQ(packets.size(), 4u);
  const Boot marker = boot_of(packets[0]);
  EXPECT_EQ(marker.kind, 0u);
  EXPECT_EQ(marker.cause, static_cast<unsigned>(lc::ResetCause::software));
  EXPECT_EQ(marker.boot, 2u);
  EXPECT_EQ(boot_of(packets[1]).boot, 1u);  // boot 1's own boot packet, carried
  EXPECT_EQ(packets[2], p);
  EXPECT_EQ(boot_of(packets[3]).kind, 1u);
  EXPECT_EQ(boot_of(packets[3]).boot, 2u);
  // The marker goes once: the next drain sends only what was pushed since.
  Sent more;
  m.ring().push(p.data(), p.size());
  EXPECT_EQ(m.ring().drain(more.sink()), 40u);
  EXPECT_EQ(more.stream, p);
  // The host finds four whole packets (no garbage, no CRC mismatch, no torn tail).
  const Bytes& capture = sent.stream;
  lt::CaptureReader reader;
  reader.read(capture.data(), capture.size(), nullptr, [](lt::WarningKind kind, std::uint64_t, const std::string& what) {
    EXPECT_TRUE(kind != lt::WarningKind::garbage && kind != lt::WarningKind::crc_mismatch &&
                kind != lt::WarningKind::torn_tail)
        << what;
  });
  EXPECT_EQ(reader.stats().packets, 4u);
}

// A `boot` packet of kind 1 (14 bytes), as a filler of known size.
Bytes boot_starts(unsigned boot) {
  Bytes p(14);
  lc::detail::ByteWriter w{p.data(), p.size(), lc::kPacketHeaderBytes};
  w.u8(1);
  w.u8(static_cast<unsigned>(lc::ResetCause::power_on));
  w.uv(boot);
  w.u8(0);
  EXPECT_EQ(lc::detail::seal_packet(p.data(), lc::PacketType::boot, w.pos - lc::kPacketHeaderBytes), p.size());
  return p;
}

// Boot 1 fills the ring to its last 12 bytes: 14 + 3 × 60 + 50 = 244 of 256 (a 14-byte boot
// packet does not fit; a 12-byte packet would).
std::vector<Bytes> fill_boot_one(lc::EvidenceRing& ring) {
  std::vector<Bytes> pushed;
  for (std::uint32_t i = 0; i < 4; ++i) {
    pushed.push_back(sample(i, i < 3 ? 60 : 50));
    EXPECT_TRUE(ring.push(pushed.back().data(), pushed.back().size()));
  }
  return pushed;
}

TEST(EvidenceRing, WhenEarlierBootsFillTheRingThisBootsBootPacketFollowsThemAtTheFirstDrain) {
  Memory m;
  m.ring().open(lc::ResetCause::power_on);
  const std::vector<Bytes> boot_one = fill_boot_one(m.ring());
  m.ring().set_reset_cause(lc::ResetCause::watchdog);
  ASSERT_EQ(m.ring().open(lc::ResetCause::unknown), lc::CrashBoxStatus::kept);  // boot 2: 12 bytes free
  // Boot 2's packets wait for its boot packet: refused, counted, even one that would fit.
  Bytes tiny(12);  // a `watch` packet with a 2-byte body (the ring does not read bodies)
  ASSERT_EQ(lc::detail::seal_packet(tiny.data(), lc::PacketType::watch, 2), tiny.size());
  const Bytes p = sample(20, 40);
  EXPECT_FALSE(m.ring().push(tiny.data(), tiny.size()));
  m.ring().set_reset_cause(lc::ResetCause::software);
  // Boot 3, before any drain: the ring holds boot 1's bytes only.
  ASSERT_EQ(m.ring().open(lc::ResetCause::unknown), lc::CrashBoxStatus::kept);
  EXPECT_EQ(m.ring().stats().carried_bytes, 244u);
  EXPECT_EQ(m.ring().stats().boot, 3u);
  EXPECT_FALSE(m.ring().push(p.data(), p.size()));
  EXPECT_EQ(m.ring().stats().dropped, 2u);
  Sent sent;
  EXPECT_EQ(m.ring().drain(sent.sink()), 13u + 244u + 14u);
  std::vector<Bytes> packets = sent.packets();
  ASSERT_EQ(packets.size(), 7u);
  EXPECT_EQ(boot_of(packets[0]).kind, 0u);
  EXPECT_EQ(boot_of(packets[0]).boot, 3u);
  EXPECT_EQ(boot_of(packets[0]).cause, static_cast<unsigned>(lc::ResetCause::software));
  EXPECT_EQ(boot_of(packets[1]).boot, 1u);
  for (std::size_t i = 0; i < boot_one.size(); ++i) EXPECT_EQ(packets[2 + i], boot_one[i]) << i;
  EXPECT_EQ(boot_of(packets[6]).kind, 1u) << "boot 3 starts after boot 1's bytes";
  EXPECT_EQ(boot_of(packets[6]).boot, 3u);
  EXPECT_EQ(m.ring().stats().sent_bytes, 13u + 244u + 14u);
  // From here this boot's packets go in, after its boot packet; it goes out once.
  EXPECT_TRUE(m.ring().push(tiny.data(), tiny.size()));
  EXPECT_TRUE(m.ring().push(p.data(), p.size()));
  Sent more;
  EXPECT_EQ(m.ring().drain(more.sink()), 12u + 40u);
  packets = more.packets();
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(packets[0], tiny);
  EXPECT_EQ(packets[1], p);
}

// A hang nothing drained fills the ring; after the reset the decoder still tells the boots
// apart: boot 1's reports are the previous boot's, boot 2's are not, and boot 2's watch packet,
// refused while its boot packet waited, goes out with its next sample.
TEST(EvidenceRing, AfterAFullRingTheHostTellsTheBootsApart) {
  Memory m;
  constexpr lc::Event kStuck{"wait_for_ack"};
  const auto capture_two = [](void*, const lc::Monitor&, lc::Frame* pcs, std::size_t max) -> std::size_t {
    const std::size_t n = max < 2 ? max : 2;
    for (std::size_t i = 0; i < n; ++i) pcs[i] = static_cast<lc::Frame>(0x1000u + 0x10u * i);
    return n;
  };
  struct Firmware {  // one boot's monitor and watchdog
    lc::Monitor monitor;
    lc::StaticEvidenceWatchdog<1> watchdog;
    Firmware(lc::EvidenceRing& ring, decltype(lc::Hal::capture_stack) capture) {
      lc::MonitorConfig config;
      config.name = "main";
      config.tick_hz = 1'000'000;
      config.threshold_us = 20'000;
      config.sample_interval_us = 5'000;
      config.hang_limit_us = 100'000;
      EXPECT_EQ(monitor.init(config), lc::Status::ok);
      lc::Hal hal{};
      hal.capture_stack = capture;
      EXPECT_EQ(watchdog.init(lc::WatchdogConfig{}, hal, ring), lc::Status::ok);
      EXPECT_EQ(watchdog.add(monitor), lc::Status::ok);
    }
  };
  m.ring().open(lc::ResetCause::power_on);
  {
    Firmware one(m.ring(), capture_two);
    one.monitor.begin_at(kStuck, 0);
    for (lc::tick_t now = 0; now <= 150'000; now += 5'000) one.watchdog.poll(now);  // in progress, hang
    EXPECT_EQ(one.watchdog.stats().reports, 2u);
    const Bytes filler = boot_starts(1);
    while (m.ring().push(filler.data(), filler.size())) {
    }
  }
  m.ring().set_reset_cause(lc::ResetCause::watchdog);
  ASSERT_EQ(m.ring().open(lc::ResetCause::unknown), lc::CrashBoxStatus::kept);
  Sent sent;
  Firmware two(m.ring(), capture_two);
  two.monitor.begin_at(kStuck, 0);
  for (lc::tick_t now = 0; now <= 20'000; now += 5'000) two.watchdog.poll(now);  // refused: not drained
  m.ring().drain(sent.sink());
  for (lc::tick_t now = 25'000; now <= 40'000; now += 5'000) two.watchdog.poll(now);
  two.monitor.end_at(42'000);
  two.watchdog.poll(45'000);
  m.ring().drain(sent.sink());

  std::vector<std::pair<bool, lc::Phase>> records;  // previous boot, phase
  std::vector<std::uint32_t> samples;
  lt::CaptureReader reader;
  reader.read(
      sent.stream.data(), sent.stream.size(),
      [&](lt::DecodedRecord& r) {
        records.emplace_back(r.previous_boot, r.record.phase);
        samples.push_back(r.record.sample_count);
      },
      [](lt::WarningKind, std::uint64_t offset, const std::string& what) { ADD_FAILURE() << offset << ": " << what; });
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0], std::make_pair(true, lc::Phase::in_progress));
  EXPECT_EQ(records[1], std::make_pair(true, lc::Phase::hang));
  EXPECT_EQ(records[2], std::make_pair(false, lc::Phase::in_progress));  // past 20 ms: after the drain
  EXPECT_EQ(records[3], std::make_pair(false, lc::Phase::final));
  EXPECT_GT(samples[3], 0u) << "boot 2's samples after the drain reach its record";
  EXPECT_GT(two.watchdog.stats().samples_missed, 0u) << "boot 2's samples before the drain";
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
    EXPECT_EQ(m.ring().drain(sent.sink()), 14u);  // only the new boot packet
    ASSERT_EQ(sent.packets().size(), 1u);
    EXPECT_EQ(sent.stream[9], 1u) << "discarded";
  }
}

// The warnings the host tool gives for a capture of `ring` drained.
std::vector<lt::WarningKind> warnings_of(lc::EvidenceRing& ring) {
  Sent sent;
  ring.drain(sent.sink());
  const Bytes& capture = sent.stream;
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

TEST(EvidenceRing, DamagedBytesAreSentAsTheyAreAndTheHostWarnsOfThem) {
  Memory m;
  m.ring().open(lc::ResetCause::power_on);
  const Bytes a = sample(1, 40);
  const Bytes b = sample(2, 40);
  m.ring().push(a.data(), a.size());
  m.ring().push(b.data(), b.size());
  m.ring().set_reset_cause(lc::ResetCause::watchdog);
  // A byte inside `a` flips in RAM across the reset (the ring's bytes follow its state).
  unsigned char* data = m.bytes + sizeof(lc::EvidenceRing);
  std::size_t flipped_at = 256;
  for (std::size_t i = 0; i + a.size() <= 256 && flipped_at == 256; ++i) {
    if (std::memcmp(data + i, a.data(), a.size()) == 0) flipped_at = i + 20;
  }
  ASSERT_LT(flipped_at, 256u);
  data[flipped_at] ^= 0x40;
  ASSERT_EQ(m.ring().open(lc::ResetCause::unknown), lc::CrashBoxStatus::kept);
  Sent sent;
  m.ring().drain(sent.sink());
  // `a` goes out with its flipped byte: the host refuses it by its CRC, at its offset (after
  // the marker and boot 1's boot packet), and decodes `b` after it.
  std::vector<std::pair<lt::WarningKind, std::uint64_t>> warnings;
  lt::CaptureReader reader;
  reader.read(sent.stream.data(), sent.stream.size(), nullptr,
              [&warnings](lt::WarningKind kind, std::uint64_t offset, const std::string&) { warnings.emplace_back(kind, offset); });
  ASSERT_FALSE(warnings.empty());
  EXPECT_EQ(warnings[0].first, lt::WarningKind::crc_mismatch);
  EXPECT_EQ(warnings[0].second, 13u + 14u);
  EXPECT_EQ(reader.stats().packets, 4u) << "the marker, two boot packets and b";
}

TEST(EvidenceRing, ANullSinkSendsNothingAndKeepsTheBytes) {
  Memory m;
  m.ring().open(lc::ResetCause::power_on);
  EXPECT_EQ(m.ring().drain(lc::PacketSink{nullptr, nullptr}), 0u);
  Sent sent;
  EXPECT_EQ(m.ring().drain(sent.sink()), 14u);
}

}  // namespace
