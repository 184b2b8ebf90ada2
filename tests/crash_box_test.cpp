// SPDX-License-Identifier: MIT
// CrashBox: records stored, kept through a "reset" (open() again on the same memory), sent as
// previous_boot packets; a full box drops its oldest records; a damaged box or packet is
// discarded and counted, never decoded. The drained bytes are read back by the host tool's
// capture reader (sim/tool/packet_reader.hpp), which checks them by docs/report-format.md.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/crash_box.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/record.hpp"
#include "packet_reader.hpp"

namespace {

namespace lc = loopcanary;
using lc::BlockRecord;
using lc::CrashBoxStatus;
using lc::ResetCause;
using Bytes = std::vector<std::uint8_t>;
namespace lt = loopcanary::tool;

// ---- The drained packets, read by the host tool ---------------------------------------------

// A packet the box sent: its bytes, and its record as the host tool decodes it.
struct Packet {
  Bytes bytes;
  lt::DecodedRecord decoded;

  // The body after the reset cause byte: the block body.
  Bytes block_body() const {
    if (bytes.size() < lc::kPacketHeaderBytes + 1 + lc::kPacketTrailerBytes) return {};
    return Bytes(bytes.begin() + static_cast<std::ptrdiff_t>(lc::kPacketHeaderBytes + 1),
                 bytes.end() - static_cast<std::ptrdiff_t>(lc::kPacketTrailerBytes));
  }
  // The reset cause byte, in the core's enumeration (the packet's values, docs/report-format.md).
  ResetCause reset_cause() const { return decoded.reset_cause; }
  lc::Phase phase() const { return decoded.record.phase; }
  std::uint32_t dispatch() const { return decoded.record.dispatch; }
  std::string event() const {
    const lc::Event* e = decoded.record.event;
    return e != nullptr && e->name != nullptr ? e->name : "";
  }
};

// The bytes of one sink call, read with the host tool's capture reader
// (sim/tool/packet_reader.hpp); fails the test on anything but exactly one whole previous_boot
// packet that decodes (garbage, a bad CRC, a truncated tail, a malformed body, a block packet):
// the box must emit packets only.
Packet read_packet(const Bytes& call) {
  Packet packet;
  packet.bytes = call;
  std::size_t records = 0;
  lt::CaptureReader reader;
  reader.read(
      call.data(), call.size(),
      [&](lt::DecodedRecord& d) {
        ++records;
        packet.decoded = std::move(d);
      },
      [](lt::WarningKind, std::uint64_t offset, const std::string& what) {
        ADD_FAILURE() << "offset " << offset << ": " << what;
      });
  EXPECT_EQ(records, 1u) << "one packet per sink call";
  EXPECT_TRUE(packet.decoded.previous_boot) << "a previous_boot packet";
  return packet;
}

// ---- Fixtures ---------------------------------------------------------------------------------

constexpr lc::Event kEvents[] = {{"evt-one"}, {"evt-two"}, {"evt-three"}, {"evt-four"}, {"evt-five"}};

BlockRecord make_record(std::size_t i, lc::Phase phase = lc::Phase::hang) {
  BlockRecord r{};
  r.report = static_cast<std::uint32_t>(i + 1);
  r.phase = phase;
  r.cause = lc::Cause::running;
  r.loop = "main";
  r.event = &kEvents[i];
  r.dispatch = static_cast<std::uint32_t>(100 + i);
  r.tick_hz = 1'000'000;
  r.start = 5'000;
  r.duration_ticks = 120'000;
  r.end = r.start + 120'000;
  r.threshold_ticks = 100'000;
  r.sample_count = 2;
  r.samples_taken = 2;
  r.samples[0] = {r.start + 25'000, 2 * r.dispatch - 1, 0, 1, lc::kNoStack, {0x8001234}};
  r.samples[1] = {r.start + 75'000, 2 * r.dispatch - 1, 0, 1, lc::kNoStack, {0x8001240}};
  return r;
}

// The block packet's body of `record`, as encode_packet writes it.
Bytes block_body(const BlockRecord& record) {
  Bytes packet(lc::kMaxPacketBytes);
  const std::size_t n = lc::encode_packet(record, packet.data(), packet.size());
  EXPECT_GT(n, 10u);
  return Bytes(packet.begin() + 6, packet.begin() + static_cast<std::ptrdiff_t>(n - 4));
}

void append(void* capture, const std::uint8_t* packet, std::size_t size) {
  auto* out = static_cast<std::vector<Bytes>*>(capture);
  out->emplace_back(packet, packet + size);
}

// Drains `box`; returns the packets, one per sink call, each checked as a whole packet.
template <class Box>
std::vector<Packet> drain(Box& box, std::uint32_t expected) {
  std::vector<Bytes> calls;
  EXPECT_EQ(box.drain({&append, &calls}), expected);
  std::vector<Packet> packets;
  for (const Bytes& call : calls) packets.push_back(read_packet(call));
  return packets;
}

// Memory of a box as the MCU would find it: these bytes are the no-init RAM.
template <std::size_t N>
struct Memory {
  alignas(lc::StaticCrashBox<N>) std::uint8_t bytes[sizeof(lc::StaticCrashBox<N>)];
  lc::StaticCrashBox<N>& box() { return *reinterpret_cast<lc::StaticCrashBox<N>*>(bytes); }
  // Flips a bit of the first occurrence of `text` in the memory.
  void damage(const char* text) {
    const std::size_t n = std::strlen(text);
    for (std::size_t i = 0; i + n <= sizeof bytes; ++i) {
      if (std::memcmp(bytes + i, text, n) == 0) {
        bytes[i + n / 2] ^= 0x10;
        return;
      }
    }
    ADD_FAILURE() << "\"" << text << "\" not in the box";
  }
};

template <std::size_t N>
void fill_random(Memory<N>& memory, unsigned seed) {
  std::mt19937 random(seed);
  for (auto& byte : memory.bytes) byte = static_cast<std::uint8_t>(random());
}

// A box set up as after a first power-on (garbage, discarded).
template <std::size_t N>
lc::StaticCrashBox<N>& fresh(Memory<N>& memory) {
  fill_random(memory, 1);
  EXPECT_EQ(memory.box().open(ResetCause::power_on), CrashBoxStatus::discarded);
  return memory.box();
}

// ---- Tests ------------------------------------------------------------------------------------

TEST(CrashBox, KeepsRecordsThroughAResetAndSendsThemAsPreviousBootPackets) {
  Memory<1024> memory;
  auto& box = fresh(memory);
  ASSERT_TRUE(box.store(make_record(0)));
  ASSERT_TRUE(box.store(make_record(1, lc::Phase::final)));
  box.set_reset_cause(ResetCause::software);
  EXPECT_EQ(box.stats().stored, 2u);

  // Reset: the same memory, opened again; the board cannot tell the cause.
  ASSERT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::kept);
  const lc::CrashBoxStats stats = box.stats();
  EXPECT_EQ(stats.kept, 2u);
  EXPECT_EQ(stats.stored, 2u);
  EXPECT_EQ(stats.records_discarded, 0u);
  EXPECT_EQ(stats.boxes_discarded, 0u);
  EXPECT_EQ(stats.reset_cause, ResetCause::software);

  const std::vector<Packet> packets = drain(box, 2);
  ASSERT_EQ(packets.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(packets[i].reset_cause(), ResetCause::software);
    EXPECT_EQ(packets[i].event(), kEvents[i].name);
    EXPECT_EQ(packets[i].dispatch(), 100 + i);
    // The body is the cause byte, then exactly the block body encode_packet writes.
    const Bytes expected = block_body(make_record(i, i == 0 ? lc::Phase::hang : lc::Phase::final));
    EXPECT_EQ(packets[i].block_body(), expected);
  }
  EXPECT_EQ(packets[0].phase(), lc::Phase::hang);
  EXPECT_EQ(packets[1].phase(), lc::Phase::final);
  EXPECT_EQ(box.stats().drained, 2u);

  // Drained means gone, also after the next reset; the box's counters stay.
  EXPECT_TRUE(drain(box, 0).empty());
  EXPECT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::empty);
  EXPECT_EQ(box.stats().stored, 2u);
  EXPECT_EQ(box.stats().reset_cause, ResetCause::unknown) << "a cause applies to one reset only";
}

TEST(CrashBox, EachRecordGetsTheCauseOfTheFirstResetAfterIt) {
  Memory<1024> memory;
  auto& box = fresh(memory);
  ASSERT_TRUE(box.store(make_record(0)));
  box.set_reset_cause(ResetCause::software);
  ASSERT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::kept);  // not drained
  ASSERT_TRUE(box.store(make_record(1)));
  box.set_reset_cause(ResetCause::software);
  // The board can tell this time: its cause wins over the one the firmware set.
  ASSERT_EQ(memory.box().open(ResetCause::watchdog), CrashBoxStatus::kept);
  EXPECT_EQ(box.stats().reset_cause, ResetCause::watchdog);
  const std::vector<Packet> packets = drain(box, 2);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(packets[0].reset_cause(), ResetCause::software);
  EXPECT_EQ(packets[1].reset_cause(), ResetCause::watchdog);
}

TEST(CrashBox, RecordsStoredSinceOpenStayForTheNextBoot) {
  Memory<1024> memory;
  auto& box = fresh(memory);
  ASSERT_TRUE(box.store(make_record(0)));
  ASSERT_EQ(memory.box().open(ResetCause::reset_pin), CrashBoxStatus::kept);
  ASSERT_TRUE(box.store(make_record(1)));
  std::vector<Packet> packets = drain(box, 1);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].event(), "evt-one");
  EXPECT_EQ(packets[0].reset_cause(), ResetCause::reset_pin);

  ASSERT_EQ(memory.box().open(ResetCause::lockup), CrashBoxStatus::kept);
  packets = drain(box, 1);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].event(), "evt-two");
  EXPECT_EQ(packets[0].reset_cause(), ResetCause::lockup);
}

TEST(CrashBox, AFullBoxDropsItsOldestRecordsAndCountsThem) {
  const std::size_t record_bytes = block_body(make_record(0)).size() + 11;  // + header, cause, CRC
  Memory<280> memory;  // three records of this size, not four
  ASSERT_GE(280u, 3 * record_bytes);
  ASSERT_LT(280u, 4 * record_bytes);
  auto& box = fresh(memory);
  for (std::size_t i = 0; i < 5; ++i) ASSERT_TRUE(box.store(make_record(i)));
  EXPECT_EQ(box.stats().stored, 5u);
  EXPECT_EQ(box.stats().overwritten, 2u);

  ASSERT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::kept);
  EXPECT_EQ(box.stats().kept, 3u);
  EXPECT_EQ(box.stats().overwritten, 2u) << "the count survives the reset";
  const std::vector<Packet> packets = drain(box, 3);
  ASSERT_EQ(packets.size(), 3u);
  EXPECT_EQ(packets[0].event(), "evt-three");
  EXPECT_EQ(packets[1].event(), "evt-four");
  EXPECT_EQ(packets[2].event(), "evt-five");
  EXPECT_EQ(packets[2].reset_cause(), ResetCause::unknown);
}

TEST(CrashBox, RefusesARecordLargerThanTheWholeBox) {
  Memory<32> memory;
  auto& box = fresh(memory);
  EXPECT_FALSE(box.store(make_record(0)));
  EXPECT_EQ(box.stats().refused, 1u);
  EXPECT_EQ(box.stats().stored, 0u);
  ASSERT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::empty);
  EXPECT_EQ(box.stats().refused, 1u);
  EXPECT_TRUE(drain(box, 0).empty());
}

TEST(CrashBox, InterceptorKeepsHangAndFinalRecords) {
  Memory<1024> memory;
  auto& box = fresh(memory);
  lc::CrashBox::intercept(&box, make_record(0, lc::Phase::in_progress));
  lc::CrashBox::intercept(&box, make_record(1, lc::Phase::hang));
  lc::CrashBox::intercept(&box, make_record(2, lc::Phase::final));
  EXPECT_EQ(box.stats().stored, 2u);
  ASSERT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::kept);
  const std::vector<Packet> packets = drain(box, 2);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(packets[0].event(), "evt-two");
  EXPECT_EQ(packets[1].event(), "evt-three");
}

TEST(CrashBox, NullSinkSendsNothingAndKeepsTheRecords) {
  Memory<1024> memory;
  auto& box = fresh(memory);
  ASSERT_TRUE(box.store(make_record(0)));
  ASSERT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::kept);
  EXPECT_EQ(box.drain({nullptr, nullptr}), 0u);
  EXPECT_EQ(drain(box, 1).size(), 1u);
}

// A box whose records all vanish: open() reports it discarded, counts it, and nothing is sent.
template <std::size_t N>
void expect_discarded(Memory<N>& memory) {
  auto& box = memory.box();
  EXPECT_EQ(box.open(ResetCause::unknown), CrashBoxStatus::discarded);
  const lc::CrashBoxStats stats = box.stats();
  EXPECT_EQ(stats.boxes_discarded, 1u);
  EXPECT_EQ(stats.kept, 0u);
  EXPECT_EQ(stats.stored, 0u) << "the counters of a discarded box are not trusted";
  EXPECT_TRUE(drain(box, 0).empty());
  // Set up anew: valid and empty from now on.
  EXPECT_EQ(box.open(ResetCause::unknown), CrashBoxStatus::empty);
  EXPECT_EQ(box.stats().boxes_discarded, 0u);
}

template <std::size_t N>
void store_three(Memory<N>& memory) {
  auto& box = fresh(memory);
  for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(box.store(make_record(i)));
  box.set_reset_cause(ResetCause::software);
}

TEST(CrashBox, DiscardsABoxWithABadMagic) {
  Memory<1024> memory;
  store_three(memory);
  memory.bytes[offsetof(lc::CrashBoxHeader, magic)] ^= 0x01;
  expect_discarded(memory);
}

TEST(CrashBox, DiscardsABoxWithABadHeaderCrc) {
  Memory<1024> memory;
  store_three(memory);
  memory.bytes[offsetof(lc::CrashBoxHeader, stored)] ^= 0x04;  // a counter: only the CRC tells
  expect_discarded(memory);
}

TEST(CrashBox, DiscardsABoxOfAnotherSize) {
  Memory<1024> memory;
  store_three(memory);
  // The same memory taken as a smaller box (a firmware update that changed the size).
  auto& smaller = *reinterpret_cast<lc::StaticCrashBox<512>*>(memory.bytes);
  EXPECT_EQ(smaller.open(ResetCause::unknown), CrashBoxStatus::discarded);
  EXPECT_EQ(smaller.stats().boxes_discarded, 1u);
}

TEST(CrashBox, DropsADamagedPacketAndKeepsTheOthers) {
  Memory<1024> memory;
  store_three(memory);
  memory.damage("evt-two");
  ASSERT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::kept);
  const lc::CrashBoxStats stats = memory.box().stats();
  EXPECT_EQ(stats.kept, 2u);
  EXPECT_EQ(stats.records_discarded, 1u);
  EXPECT_EQ(stats.boxes_discarded, 0u);
  const std::vector<Packet> packets = drain(memory.box(), 2);
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(packets[0].event(), "evt-one");
  EXPECT_EQ(packets[1].event(), "evt-three");
  EXPECT_EQ(packets[1].reset_cause(), ResetCause::software);
}

TEST(CrashBox, DropsEveryPacketOfAGarbledPacketArea) {
  Memory<1024> memory;
  store_three(memory);
  memory.damage("evt-one");
  memory.damage("evt-two");
  memory.damage("evt-three");
  ASSERT_EQ(memory.box().open(ResetCause::unknown), CrashBoxStatus::empty);
  EXPECT_EQ(memory.box().stats().kept, 0u);
  EXPECT_EQ(memory.box().stats().records_discarded, 1u) << "one run of bad bytes";
  EXPECT_TRUE(drain(memory.box(), 0).empty());
}

TEST(CrashBox, RandomMemoryAsAfterPowerOnIsDiscardedNeverDecoded) {
  for (unsigned seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE(seed);
    Memory<256> memory;
    fill_random(memory, seed);
    expect_discarded(memory);
  }
  Memory<256> zeros;  // QEMU's RAM at start
  std::memset(zeros.bytes, 0, sizeof zeros.bytes);
  expect_discarded(zeros);
}

}  // namespace
