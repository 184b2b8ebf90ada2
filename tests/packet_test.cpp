// SPDX-License-Identifier: MIT
// encode_packet and crc32 against docs/report-format.md ("Binary form"): a golden packet worked
// out by hand from the specification and a CRC-32 written here (independent oracles of the
// encoder), byte checks of varints, deltas and names; records read back field by field with the
// host tool's decoder (sim/tool/packet_reader.hpp), the one users run. Round trips of typical
// records are the tool's tests' (tests/tool/packet_reader_test.cpp, PacketRoundTrip).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/format.hpp"
#include "loopcanary/health.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/record.hpp"
#include "packet_reader.hpp"
#include "top_stack.hpp"

namespace {

namespace lc = loopcanary;
using lc::BlockRecord;
using lc::Frame;
using Bytes = std::vector<std::uint8_t>;
namespace lt = loopcanary::tool;

constexpr unsigned kPointerBits = sizeof(Frame) * 8;

Frame scope_frame(const char* name) { return reinterpret_cast<Frame>(name); }

// The zlib CRC-32, bit by bit, written separately from lc::crc32.
std::uint32_t reference_crc(const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

// ---- Helpers --------------------------------------------------------------------------------

Bytes encode(const BlockRecord& r) {
  Bytes out(lc::kMaxPacketBytes);
  const std::size_t n = lc::encode_packet(r, out.data(), out.size());
  out.resize(n);
  return out;
}

// The record of `packet`, read by the host tool's capture reader; fails the test unless the
// bytes are exactly one whole packet that decodes.
lt::DecodedRecord decode(const Bytes& packet) {
  lt::DecodedRecord out;
  std::size_t records = 0;
  lt::CaptureReader reader;
  reader.read(
      packet.data(), packet.size(),
      [&](lt::DecodedRecord& d) {
        ++records;
        out = std::move(d);
      },
      [](lt::WarningKind, std::uint64_t offset, const std::string& what) {
        ADD_FAILURE() << "offset " << offset << ": " << what;
      });
  EXPECT_EQ(records, 1u) << "one whole packet";
  return out;
}

lt::DecodedRecord decoded(const BlockRecord& r) { return decode(encode(r)); }

// A scope frame's name as decoded: "" for an empty name (the decoder's null pointer).
std::string name_of(Frame f) { return f == 0 ? std::string() : std::string(reinterpret_cast<const char*>(f)); }

lc::Sample make_sample(lc::tick_t at, std::uint32_t seq, std::vector<const char*> scopes,
                       std::vector<Frame> pcs) {
  lc::Sample s;
  s.at = at;
  s.seq = seq;
  s.scope_count = static_cast<std::uint8_t>(scopes.size());
  s.pc_count = static_cast<std::uint8_t>(pcs.size());
  std::size_t i = 0;
  for (const char* name : scopes) s.frames[i++] = scope_frame(name);
  for (Frame pc : pcs) s.frames[i++] = pc;
  return s;
}

const lc::Event kTick{"tick"};
const char kIo[] = "io";
const char kRun[] = "run";
const char kOut[] = "out";

// The record of the golden packet below.
BlockRecord golden_record() {
  BlockRecord r;
  r.report = 300;
  r.phase = lc::Phase::hang;
  r.cause = lc::Cause::waiting;
  r.flags = lc::kFlagHung;
  r.loop_index = 2;
  r.qualifier = "fw-1";
  r.loop = "main";
  r.event = &kTick;
  r.dispatch = 5;
  r.tick_hz = 1000000;
  r.start = 0xFFFFFFF0u;
  r.duration_ticks = 32;
  r.end = 0x0E;  // start + duration = 0x10 (wrapped): the end is 2 ticks before it
  r.threshold_ticks = 128;
  r.stage_count = 2;
  r.stages[0] = lc::StageTime{kRun, 6};  // the same pointer as a scope below: one string
  r.stages[1] = lc::StageTime{kOut, 20};
  r.window_ticks = 127;
  r.has_thread_cpu = true;
  r.thread_cpu_us = 1000;
  r.has_thread_wait = false;
  r.thread_wait_us = 77;  // not present: not written
  r.system_busy_permille = 250;
  r.memory.set(lc::kMemoryResident, 4096);
  r.memory.set(lc::kMemoryStackPeak, 300);
  r.records_dropped = 1;
  r.notes_dropped = 2;
  r.samples_taken = 20;
  r.samples_overwritten = 17;
  r.top_count = 2;
  r.top[0] = loopcanary::test::top_entry(scope_frame(kIo), true, 3);
  r.top[1] = loopcanary::test::top_entry(0x1000, false, 1);  // innermost 0x1000..0x1040, called from 0x2000
  r.top[1].pc_count = 2;
  r.top[1].frames[1] = 0x2000;
  r.top[1].leaf_high = 0x1040;
  r.top_other = 4;
  r.sample_count = 3;
  r.samples[0] = make_sample(0xFFFFFFFAu, 9, {kIo, kRun}, {0x1000, 0x2000});
  r.samples[1] = make_sample(0x04, 9, {kIo}, {0x0FF0});
  r.samples[2] = make_sample(0x0E, 8, {}, {0x1000, 0x3000});
  return r;
}

// ---- crc32 ----------------------------------------------------------------------------------

TEST(PacketCrc, CheckValueOf123456789) {
  const char* text = "123456789";
  EXPECT_EQ(lc::crc32(reinterpret_cast<const std::uint8_t*>(text), 9), 0xCBF43926u);
}

TEST(PacketCrc, EmptyInputIsZeroAndContinuingEqualsOneRun) {
  EXPECT_EQ(lc::crc32(nullptr, 0), 0u);
  const auto* p = reinterpret_cast<const std::uint8_t*>("123456789");
  for (std::size_t split = 0; split <= 9; ++split) {
    EXPECT_EQ(lc::crc32(p + split, 9 - split, lc::crc32(p, split)), 0xCBF43926u) << split;
  }
}

// ---- The golden packet ----------------------------------------------------------------------

TEST(Packet, GoldenPacketWorkedOutByHandFromTheSpecification) {
  if (lc::kMaxSamples != 16 || lc::kMaxFrames != 8 || lc::kTopFrames != 8 || lc::kMaxStages != 4 ||
      sizeof(Frame) != 8) {
    GTEST_SKIP() << "the golden packet is worked out for 16 samples, 8 frames, 8 top, 4 stages, 64-bit PCs";
  }
  const Bytes expected = {
      0xA5, 0x4C,              // magic
      0x04,                    // version 4
      0x01,                    // type 1: block
      0x73, 0x00,              // body length 115, little-endian
      0x01,                    // configuration: 64-bit PCs, little-endian
      0x10, 0x08, 0x08, 0x04,  // max samples 16, max frames 8, top frames 8, max stages 4
      0xC0, 0x84, 0x3D,        // tick_hz 1000000 = 0xF4240: 0x40|0x80, 0x04|0x80, 0x3D
      0xAC, 0x02,              // report 300 = 0x12C: 0x2C|0x80, 0x02
      0x01,                    // phase hang
      0x02,                    // cause waiting
      0x01,                    // flags: hung
      0x02,                    // loop_index 2
      0x05,                    // dispatch 5
      0xF0, 0xFF, 0xFF, 0xFF, 0x0F,  // start 0xFFFFFFF0
      0x20,                    // duration_ticks 32
      0x03,                    // end adjustment: 0x0E - 0x10 = -2, zigzag 3
      0x80, 0x01,              // threshold_ticks 128
      0x00,                    // delayed_by_dispatch 0 (no delayed-by event follows)
      0x7F,                    // window_ticks 127
      0x05,                    // presence: has_thread_cpu | busy known
      0xE8, 0x07,              // thread_cpu_us 1000 = 0x3E8: 0x68|0x80, 0x07
      0xFA, 0x01,              // system_busy_permille 250: 0x7A|0x80, 0x01
      0x00,                    // steal_us 0
      0x11,                    // memory presence: resident (bit 0), stack peak (bit 4)
      0x80, 0x20,              // resident 4096 = 0x1000: 0x00|0x80, 0x20
      0xAC, 0x02,              // stack peak 300 = 0x12C: 0x2C|0x80, 0x02
      0x01,                    // records_dropped 1
      0x02,                    // notes_dropped 2
      0x06,                    // string count: 3 + "run" + "out" + "io"
      0x08, 'f', 'w', '-', '1',  // 0 qualifier: (4 << 1) | 0
      0x08, 'm', 'a', 'i', 'n',  // 1 loop
      0x08, 't', 'i', 'c', 'k',  // 2 event
      0x06, 'r', 'u', 'n',     // 3: first used by stage 0
      0x06, 'o', 'u', 't',     // 4: stage 1
      0x04, 'i', 'o',          // 5: first used by top[0]
      0x02,                    // stage_count 2
      0x03, 0x06,              // stage 0: "run", 6 ticks
      0x04, 0x14,              // stage 1: "out", 20 ticks
      0x14,                    // samples_taken 20
      0x00,                    // samples_missed 0
      0x11,                    // samples_overwritten 17
      0x02,                    // top_count 2
      0x04,                    // top_other 4
      0x03, 0x01, 0x00, 0x05,  // top[0]: count 3, 1 scope, no PC: "io"
      0x01, 0x00, 0x02,        // top[1]: count 1, no scope, 2 PCs
      0x80, 0x40,              //   PC 0x1000 - 0 (top[0] had no PC), zigzag 0x2000
      0x80, 0x80, 0x01,        //   PC 0x2000 - 0, zigzag 0x4000
      0x40,                    //   the innermost PC's range: 0x1040 - 0x1000
      0x03,                    // sample_count 3
      // sample 0
      0x0A,                    // at - start = 0xFFFFFFFA - 0xFFFFFFF0 = 10
      0x00,                    // seq 9 - (2 * 5 - 1) = 0
      0x02, 0x02,              // 2 scopes, 2 PCs
      0x05, 0x03,              // "io", "run"
      0x80, 0x40,              // PC 0x1000 - 0, zigzag 0x2000
      0x80, 0x80, 0x01,        // PC 0x2000 - 0, zigzag 0x4000
      // sample 1
      0x0A,                    // 0x04 - 0xFFFFFFFA = 10 modulo 2^32
      0x00,                    // seq 9: 0
      0x01, 0x01,              // 1 scope, 1 PC
      0x05,                    // "io" (same pointer: the same string)
      0x1F,                    // PC 0x0FF0 - 0x1000 = -16, zigzag 31
      // sample 2
      0x0A,                    // 0x0E - 0x04 = 10
      0x01,                    // seq 8 - 9 = -1, zigzag 1
      0x00, 0x02,              // no scope, 2 PCs
      0x20,                    // PC 0x1000 - 0x0FF0 = 16, zigzag 32
      0x80, 0xC0, 0x01,        // PC 0x3000 - 0 (sample 1 had one PC), zigzag 0x6000
      0xF3, 0xCD, 0x54, 0xAA,  // CRC-32 0xAA54CDF3 (zlib.crc32 of bytes 2..120), little-endian
  };
  EXPECT_EQ(encode(golden_record()), expected);
}

TEST(Packet, DecodesBackToTheRecord) {
  const BlockRecord r = golden_record();
  const Bytes p = encode(r);
  ASSERT_GT(p.size(), 10u);
  // The configuration bytes: pointer width, this build's capacities.
  EXPECT_EQ(p[6], sizeof(Frame) == 8 ? 1u : 0u);
  EXPECT_EQ(p[7], lc::kMaxSamples);
  EXPECT_EQ(p[8], lc::kMaxFrames);
  EXPECT_EQ(p[9], lc::kTopFrames);
  EXPECT_EQ(p[10], lc::kMaxStages);
  const lt::DecodedRecord decoded_record = decode(p);
  const BlockRecord& d = decoded_record.record;
  EXPECT_FALSE(decoded_record.previous_boot);
  EXPECT_EQ(d.tick_hz, r.tick_hz);
  EXPECT_EQ(d.report, r.report);
  EXPECT_EQ(d.phase, lc::Phase::hang);
  EXPECT_EQ(d.cause, lc::Cause::waiting);
  EXPECT_EQ(d.flags, r.flags);
  EXPECT_EQ(d.loop_index, r.loop_index);
  EXPECT_EQ(d.dispatch, r.dispatch);
  EXPECT_EQ(d.start, r.start);
  EXPECT_EQ(d.end, r.end);
  EXPECT_EQ(d.duration_ticks, r.duration_ticks);
  EXPECT_EQ(d.threshold_ticks, r.threshold_ticks);
  EXPECT_EQ(d.window_ticks, r.window_ticks);
  EXPECT_TRUE(d.has_thread_cpu);
  EXPECT_EQ(d.thread_cpu_us, r.thread_cpu_us);
  EXPECT_FALSE(d.has_thread_wait);
  EXPECT_EQ(d.thread_wait_us, 0u);  // absent: not written
  EXPECT_EQ(d.system_busy_permille, r.system_busy_permille);
  EXPECT_EQ(d.process_permille, lc::kUnknownPermille);
  EXPECT_EQ(d.records_dropped, r.records_dropped);
  EXPECT_EQ(d.notes_dropped, r.notes_dropped);
  EXPECT_STREQ(d.qualifier, "fw-1");
  EXPECT_STREQ(d.loop, "main");
  ASSERT_NE(d.event, nullptr);
  EXPECT_STREQ(d.event->name, "tick");
  EXPECT_EQ(d.samples_taken, r.samples_taken);
  EXPECT_EQ(d.samples_overwritten, r.samples_overwritten);
  EXPECT_EQ(d.top_other, r.top_other);
  ASSERT_EQ(d.top_count, 2u);
  EXPECT_TRUE(d.top[0].scope_count == 1);
  EXPECT_EQ(name_of(d.top[0].frames[0]), "io");
  EXPECT_EQ(d.top[0].count, 3u);
  EXPECT_FALSE(d.top[1].scope_count == 1);
  EXPECT_EQ(d.top[1].frames[0], 0x1000u);
  EXPECT_EQ(d.top[1].count, 1u);
  ASSERT_EQ(d.sample_count, r.sample_count);
  for (std::size_t i = 0; i < d.sample_count; ++i) {
    const lc::Sample& s = r.samples[i];
    const lc::Sample& got = d.samples[i];
    EXPECT_EQ(got.at, s.at) << i;
    EXPECT_EQ(got.seq, s.seq) << i;
    ASSERT_EQ(got.scope_count, s.scope_count) << i;
    for (std::size_t f = 0; f < s.scope_count; ++f) {
      EXPECT_EQ(name_of(got.frames[f]), reinterpret_cast<const char*>(s.frames[f])) << i;
    }
    ASSERT_EQ(got.pc_count, s.pc_count) << i;
    for (std::size_t f = 0; f < s.pc_count; ++f) EXPECT_EQ(got.frames[s.scope_count + f], s.frames[s.scope_count + f]);
  }
}

TEST(Packet, CrcInThePacketVerifiesAndADamagedByteBreaksIt) {
  Bytes p = encode(golden_record());
  ASSERT_GE(p.size(), 10u);
  const std::size_t n = p.size();
  const std::uint32_t stored = p[n - 4] | (std::uint32_t{p[n - 3]} << 8) | (std::uint32_t{p[n - 2]} << 16) |
                               (std::uint32_t{p[n - 1]} << 24);
  EXPECT_EQ(stored, lc::crc32(p.data() + 2, n - 6));
  EXPECT_EQ(stored, reference_crc(p.data() + 2, n - 6));
  p[n / 2] ^= 0x10;
  EXPECT_NE(stored, lc::crc32(p.data() + 2, n - 6));
}

// ---- Varints --------------------------------------------------------------------------------

// tick_hz is the first varint of the body: packet offset 11.
TEST(Packet, VarintBoundaries32) {
  struct Case {
    std::uint32_t value;
    Bytes bytes;
  };
  const Case cases[] = {
      {0, {0x00}},
      {127, {0x7F}},
      {128, {0x80, 0x01}},
      {16383, {0xFF, 0x7F}},
      {16384, {0x80, 0x80, 0x01}},
      {0xFFFFFFFFu, {0xFF, 0xFF, 0xFF, 0xFF, 0x0F}},
  };
  for (const Case& c : cases) {
    BlockRecord r;
    r.tick_hz = c.value;
    const Bytes p = encode(r);
    ASSERT_GT(p.size(), 11 + c.bytes.size());
    EXPECT_EQ(Bytes(p.begin() + 11, p.begin() + 11 + static_cast<std::ptrdiff_t>(c.bytes.size())), c.bytes)
        << c.value;
    EXPECT_EQ(p[11 + c.bytes.size()], 0x00) << "report 0 follows " << c.value;
    EXPECT_EQ(decoded(r).record.tick_hz, c.value);
  }
}

TEST(Packet, VarintBoundaries64TakeTenBytesAtTheMaximum) {
  const BlockRecord base;
  const std::size_t base_size = encode(base).size();
  const std::uint64_t max = ~std::uint64_t{0};
  BlockRecord r = base;
  r.duration_ticks = max;
  r.end = r.start + static_cast<lc::tick_t>(max);  // end adjustment stays 0
  r.window_ticks = max;
  r.steal_us = max;
  r.has_thread_cpu = true;
  r.thread_cpu_us = max;
  r.has_thread_wait = true;
  r.thread_wait_us = max;
  // Five 64-bit fields from 1 byte to 10, plus two present fields of 10 bytes.
  EXPECT_EQ(encode(r).size(), base_size + 3 * 9 + 2 * 10);
  const lt::DecodedRecord decoded_record = decoded(r);
  const BlockRecord& d = decoded_record.record;
  EXPECT_EQ(d.duration_ticks, max);
  EXPECT_EQ(d.window_ticks, max);
  EXPECT_EQ(d.steal_us, max);
  EXPECT_EQ(d.thread_cpu_us, max);
  EXPECT_EQ(d.thread_wait_us, max);
  EXPECT_EQ(d.end, r.end);

  r = base;
  r.duration_ticks = std::uint64_t{1} << 63;  // 64 bits: 10 bytes, the last one 0x01
  const Bytes p = encode(r);
  EXPECT_EQ(p.size(), base_size + 9);
  EXPECT_EQ(decoded(r).record.duration_ticks, std::uint64_t{1} << 63);
}

TEST(Packet, PermilleIsSixteenBitsWhenKnown) {
  BlockRecord r;
  r.system_busy_permille = 0xFFFE;
  r.process_permille = 1000;
  const lt::DecodedRecord d = decoded(r);
  EXPECT_EQ(d.record.system_busy_permille, 0xFFFE);
  EXPECT_EQ(d.record.process_permille, 1000);
  r.system_busy_permille = lc::kUnknownPermille;
  EXPECT_EQ(decoded(r).record.system_busy_permille, lc::kUnknownPermille) << "unknown: not written";
}

// ---- Deltas ---------------------------------------------------------------------------------

TEST(Packet, EndAdjustmentIsSignedAndUsesTheLow32BitsOfTheDuration) {
  const std::uint32_t adjustments[] = {0u, 1u, 0xFFFFFFFFu, 0x7FFFFFFFu, 0x80000000u};
  for (const std::uint32_t adjust : adjustments) {
    BlockRecord r;
    r.start = 0xFFFFFF00u;
    r.duration_ticks = 0x1'0000'0100u;  // longer than one wrap
    r.end = r.start + static_cast<lc::tick_t>(r.duration_ticks) + adjust;
    const lt::DecodedRecord d = decoded(r);
    EXPECT_EQ(d.record.end, r.end) << adjust;
    EXPECT_EQ(d.record.duration_ticks, r.duration_ticks);
  }
  // The zigzag of the adjustment: 0 -> 0x00, -1 -> 0x01, 1 -> 0x02 (the only byte that differs).
  BlockRecord r;
  const Bytes zero = encode(r);
  r.end = static_cast<lc::tick_t>(r.end - 1);
  const Bytes minus_one = encode(r);
  r.end = static_cast<lc::tick_t>(r.end + 2);
  const Bytes plus_one = encode(r);
  std::size_t differing = 0, at = 0;
  for (std::size_t i = 6; i + 4 < zero.size(); ++i) {
    if (zero[i] != minus_one[i]) ++differing, at = i;
  }
  ASSERT_EQ(differing, 1u);
  EXPECT_EQ(zero[at], 0x00);
  EXPECT_EQ(minus_one[at], 0x01);
  EXPECT_EQ(plus_one[at], 0x02);
}

TEST(Packet, ProgramCountersGoingDownAreNegativeZigzagDeltas) {
  BlockRecord r;
  r.dispatch = 1;
  r.sample_count = 4;
  const Frame high = ~Frame{0};
  r.samples[0] = make_sample(0, 1, {}, {0x8000, high});
  r.samples[1] = make_sample(0, 1, {}, {0x7FFF, 0});      // -1, then max -> 0: +1 modulo 2^width
  r.samples[2] = make_sample(0, 1, {}, {0x0001, high});   // -0x7FFE, then 0 -> max: -1
  r.samples[3] = make_sample(0, 1, {}, {0x0000, Frame{1} << (kPointerBits - 1)});  // -1, -2^(w-1)
  const Bytes p = encode(r);
  const lt::DecodedRecord d = decoded(r);
  ASSERT_EQ(d.record.sample_count, 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(d.record.samples[i].pc_count, 2u);
    EXPECT_EQ(d.record.samples[i].frames[0], r.samples[i].frames[0]) << i;
    EXPECT_EQ(d.record.samples[i].frames[1], r.samples[i].frames[1]) << i;
  }
  // Sample 1 is the 6 bytes: time 0, seq 0, 0 scopes, 2 PCs, zigzag(-1) = 1, zigzag(+1) = 2.
  const Bytes sample1 = {0x00, 0x00, 0x00, 0x02, 0x01, 0x02};
  EXPECT_NE(std::search(p.begin(), p.end(), sample1.begin(), sample1.end()), p.end());
}

TEST(Packet, SampleTimesAndSequencesAreDeltasModulo32Bits) {
  BlockRecord r;
  r.dispatch = 0x80000000u;  // 2 * dispatch - 1 wraps
  r.start = 0xFFFFFFFFu;
  r.sample_count = 3;
  r.samples[0] = make_sample(0x00000005u, 0xFFFFFFFFu, {}, {});
  r.samples[1] = make_sample(0xFFFFFFFEu, 0x7FFFFFFFu, {}, {});  // 2^32 - 7 after the previous
  r.samples[2] = make_sample(0xFFFFFFFEu, 0x00000000u, {}, {});
  const lt::DecodedRecord d = decoded(r);
  ASSERT_EQ(d.record.sample_count, 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d.record.samples[i].at, r.samples[i].at) << i;
    EXPECT_EQ(d.record.samples[i].seq, r.samples[i].seq) << i;
  }
}

// ---- Strings --------------------------------------------------------------------------------

TEST(Packet, NamesUpTo31BytesAreWholeLongerOnesAreCut) {
  const std::string n31(31, 'a');
  const std::string n32 = std::string(31, 'b') + "c";
  const std::string n100(100, 'd');
  const lc::Event event{n100.c_str()};
  BlockRecord r;
  r.qualifier = n31.c_str();
  r.loop = n32.c_str();
  r.event = &event;
  r.sample_count = 1;
  r.samples[0] = make_sample(0, 0, {""}, {});
  // The decoder marks a cut name with "...".
  const lt::DecodedRecord d = decoded(r);
  EXPECT_STREQ(d.record.qualifier, n31.c_str());
  EXPECT_EQ(std::string(d.record.loop), std::string(31, 'b') + "...");
  ASSERT_NE(d.record.event, nullptr);
  EXPECT_EQ(std::string(d.record.event->name), std::string(31, 'd') + "...");
  ASSERT_EQ(d.record.sample_count, 1u);
  ASSERT_EQ(d.record.samples[0].scope_count, 1u);
  EXPECT_EQ(name_of(d.record.samples[0].frames[0]), "");
  // The length bytes themselves: (31 << 1) | 0 and (31 << 1) | 1.
  const Bytes p = encode(r);
  const Bytes whole = {0x3E, 'a', 'a'};
  const Bytes cut = {0x3F, 'b', 'b'};
  EXPECT_NE(std::search(p.begin(), p.end(), whole.begin(), whole.end()), p.end());
  EXPECT_NE(std::search(p.begin(), p.end(), cut.begin(), cut.end()), p.end());
}

// The device cuts at a byte count; the decoder drops what the cut left of a UTF-8 character.
TEST(Packet, ACutNameEndsAfterItsLastWholeUtf8Character) {
  const std::string euro = "\xE2\x82\xAC";                      // U+20AC, 3 bytes
  const std::string n = std::string(30, 'e') + euro + "tail";   // the euro at bytes 30..32: cut
  const std::string n2 = std::string(29, 'f') + euro + "tail";  // at 29..31: cut after 2 bytes
  const std::string whole = std::string(28, 'w') + euro + "z";  // at 28..30: whole
  const lc::Event event{n.c_str()};
  BlockRecord r;
  r.qualifier = n2.c_str();
  r.loop = whole.c_str();
  r.event = &event;
  const Bytes p = encode(r);
  const Bytes sent = {0x3F, 'e'};  // (31 << 1) | 1: the device sends 31 bytes, half a euro
  EXPECT_NE(std::search(p.begin(), p.end(), sent.begin(), sent.end()), p.end());
  const lt::DecodedRecord d = decoded(r);
  ASSERT_NE(d.record.event, nullptr);
  EXPECT_EQ(std::string(d.record.event->name), std::string(30, 'e') + "...");
  EXPECT_EQ(std::string(d.record.qualifier), std::string(29, 'f') + "...");
  EXPECT_EQ(std::string(d.record.loop), std::string(28, 'w') + euro + "...");
}

TEST(Packet, NullNamesAreLengthZeroNotCut) {
  static const lc::Event kNameless{nullptr};
  BlockRecord r;
  r.qualifier = nullptr;
  r.loop = nullptr;
  r.event = nullptr;
  r.sample_count = 1;
  r.samples[0] = make_sample(0, 0, {nullptr}, {});
  r.top_count = 1;
  r.top[0] = loopcanary::test::top_entry(scope_frame(nullptr), true, 1);
  // The string table: 4 names (the null scope is one string, used twice), each of length 0 and
  // not cut.
  const Bytes table = {0x04, 0x00, 0x00, 0x00, 0x00};
  Bytes p = encode(r);
  EXPECT_NE(std::search(p.begin(), p.end(), table.begin(), table.end()), p.end());
  lt::DecodedRecord d = decoded(r);
  EXPECT_STREQ(d.record.qualifier, "");
  EXPECT_EQ(d.record.loop, nullptr) << "not cut: no \"...\"";
  ASSERT_NE(d.record.event, nullptr);
  EXPECT_EQ(d.record.event->name, nullptr);
  ASSERT_EQ(d.record.top_count, 1u);
  EXPECT_TRUE(d.record.top[0].scope_count == 1);
  EXPECT_EQ(d.record.top[0].frames[0], Frame{0});
  ASSERT_EQ(d.record.samples[0].scope_count, 1u);
  EXPECT_EQ(d.record.samples[0].frames[0], Frame{0});

  r.event = &kNameless;  // an event whose name is null
  p = encode(r);
  EXPECT_NE(std::search(p.begin(), p.end(), table.begin(), table.end()), p.end());
  d = decoded(r);
  ASSERT_NE(d.record.event, nullptr);
  EXPECT_EQ(d.record.event->name, nullptr);
}

// Scope names are deduplicated by pointer, as the specification says: the same pointer is one
// string; two pointers to equal text are two strings (the encoder never compares text).
TEST(Packet, ScopeStringsAreOnePerPointerInOrderOfFirstUse) {
  static const char kA[] = "alpha";
  static const char kB[] = "beta";
  static const char kA2[] = "alpha";  // equal text, another pointer
  BlockRecord r;
  r.top_count = 2;
  r.top[0] = loopcanary::test::top_entry(scope_frame(kB), true, 2);
  r.top[1] = loopcanary::test::top_entry(0x400, false, 1);
  r.sample_count = 3;
  r.samples[0] = make_sample(0, 0, {kA, kB}, {});
  r.samples[1] = make_sample(0, 0, {kB, kA}, {0x400});
  r.samples[2] = make_sample(0, 0, {kA2, kA}, {});
  // The table after qualifier, loop and event (all empty): 6 strings, "beta" (top[0] first),
  // "alpha" (sample 0's kA), "alpha" (kA2).
  const Bytes table = {0x06, 0x00, 0x00, 0x00, 0x08, 'b', 'e', 't', 'a',
                       0x0A, 'a', 'l', 'p', 'h', 'a', 0x0A, 'a', 'l', 'p', 'h', 'a'};
  const Bytes p = encode(r);
  EXPECT_NE(std::search(p.begin(), p.end(), table.begin(), table.end()), p.end());
  // The indexes: one decoded name per string, so the same index is the same pointer.
  const lt::DecodedRecord decoded_record = decoded(r);
  const BlockRecord& d = decoded_record.record;
  ASSERT_EQ(d.top_count, 2u);
  ASSERT_EQ(d.sample_count, 3u);
  const Frame beta = d.top[0].frames[0];
  const Frame alpha = d.samples[0].frames[0];
  const Frame alpha2 = d.samples[2].frames[0];
  EXPECT_EQ(name_of(beta), "beta");
  EXPECT_EQ(name_of(alpha), "alpha");
  EXPECT_EQ(name_of(alpha2), "alpha");
  EXPECT_NE(alpha2, alpha) << "kA2 is a string of its own";
  const auto scopes = [&d](std::size_t i) {
    return std::vector<Frame>(d.samples[i].frames, d.samples[i].frames + d.samples[i].scope_count);
  };
  EXPECT_EQ(scopes(0), (std::vector<Frame>{alpha, beta}));
  EXPECT_EQ(scopes(1), (std::vector<Frame>{beta, alpha}));
  EXPECT_EQ(scopes(2), (std::vector<Frame>{alpha2, alpha}));
}

TEST(Packet, TopProgramCounterKeyKeepsTheHighestBit) {
  BlockRecord r;
  r.top_count = 2;
  r.top[0] = loopcanary::test::top_entry(~Frame{0}, false, 5);
  r.top[1] = loopcanary::test::top_entry(Frame{1} << (kPointerBits - 1), false, 6);
  const lt::DecodedRecord decoded_record = decoded(r);
  const BlockRecord& d = decoded_record.record;
  ASSERT_EQ(d.top_count, 2u);
  EXPECT_EQ(d.top[0].frames[0], ~Frame{0});
  EXPECT_FALSE(d.top[0].scope_count == 1);
  EXPECT_EQ(d.top[0].count, 5u);
  EXPECT_EQ(d.top[1].frames[0], Frame{1} << (kPointerBits - 1));
  EXPECT_FALSE(d.top[1].scope_count == 1);
}

// ---- Size -----------------------------------------------------------------------------------

// Names that outlive the records below: distinct pointers, each longer than kPacketNameMax.
const std::vector<std::string>& long_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (std::size_t i = 0; i < lc::kMaxStages + (lc::kMaxSamples + lc::kTopFrames) * lc::kMaxFrames; ++i) {
      v.push_back("scope_name_longer_than_the_limit_" + std::to_string(i));
    }
    return v;
  }();
  return names;
}

// Every field at its widest: 64-bit values at the maximum, every sample full. `scopes` frames
// of each sample are distinct long scope names, the rest PCs whose deltas are the widest
// (alternating 0 and 2^(w-1)); top entries the same, with distinct long scopes when
// `top_scopes` (else all PCs), and the widest range of the innermost PC.
BlockRecord worst_record(std::size_t scopes, bool top_scopes) {
  const std::vector<std::string>& names = long_names();
  std::size_t next = 0;
  const std::uint64_t max = ~std::uint64_t{0};
  BlockRecord r;
  r.report = r.dispatch = r.tick_hz = r.threshold_ticks = 0xFFFFFFFFu;
  r.records_dropped = r.notes_dropped = r.samples_taken = r.samples_missed = 0xFFFFFFFFu;
  r.samples_overwritten = r.top_other = 0xFFFFFFFFu;
  r.start = 0xFFFFFFFFu;
  r.duration_ticks = r.window_ticks = r.thread_cpu_us = r.thread_wait_us = r.steal_us = max;
  r.end = r.start + 0xFFFFFFFFu + 0x80000000u;  // end adjustment -2^31: zigzag 2^32 - 1
  r.has_thread_cpu = r.has_thread_wait = true;
  r.system_busy_permille = r.process_permille = 0xFFFE;
  for (unsigned i = 0; i < lc::kMemoryValues; ++i) r.memory.set(static_cast<lc::MemoryValue>(i), max);
  r.qualifier = r.loop = names[0].c_str();
  static const lc::Event kLong{"event_name_longer_than_the_limit"};
  r.event = &kLong;
  r.stage_count = static_cast<std::uint8_t>(lc::kMaxStages);
  for (std::size_t i = 0; i < lc::kMaxStages; ++i) r.stages[i] = lc::StageTime{names[next++].c_str(), 0xFFFFFFFFu};
  // Top entries as long as samples: `scopes` scopes (each its own string) when top_scopes, the
  // rest PCs whose differences need every bit, the innermost PC's range the widest.
  r.top_count = static_cast<std::uint8_t>(lc::kTopFrames);
  const std::size_t top_scope_count = top_scopes ? scopes : 0;
  for (std::size_t i = 0; i < lc::kTopFrames; ++i) {
    lc::TopStack& t = r.top[i];
    t.count = 0xFFFFFFFFu;
    t.scope_count = static_cast<std::uint8_t>(top_scope_count);
    t.pc_count = static_cast<std::uint8_t>(lc::kMaxFrames - top_scope_count);
    for (std::size_t f = 0; f < top_scope_count; ++f) t.frames[f] = scope_frame(names[next++].c_str());
    for (std::size_t f = top_scope_count; f < lc::kMaxFrames; ++f) t.frames[f] = (i % 2 == 0) ? Frame{1} << (kPointerBits - 1) : 0;
    t.leaf_high = t.pc_count != 0 ? ~Frame{0} : 0;
  }
  r.sample_count = static_cast<std::uint8_t>(lc::kMaxSamples);
  for (std::size_t i = 0; i < lc::kMaxSamples; ++i) {
    lc::Sample& s = r.samples[i];
    s.at = static_cast<lc::tick_t>(r.start + 0xFFFFFFFFu * (i + 1));  // each delta 2^32 - 1
    s.seq = 2u * r.dispatch - 1u + 0x80000000u;                       // delta -2^31
    s.scope_count = static_cast<std::uint8_t>(scopes);
    s.pc_count = static_cast<std::uint8_t>(lc::kMaxFrames - scopes);
    for (std::size_t f = 0; f < scopes; ++f) s.frames[f] = scope_frame(names[next++].c_str());
    for (std::size_t f = scopes; f < lc::kMaxFrames; ++f) s.frames[f] = (i % 2 == 0) ? Frame{1} << (kPointerBits - 1) : 0;
  }
  // Every wait object full: the widest numbers, the longest texts and names, every holder frame.
  r.wait.count = static_cast<std::uint8_t>(lc::kWaitObjects);
  r.wait.other = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < lc::kWaitObjects; ++i) {
    lc::WaitSeen& w = r.wait.objects[i];
    w.object.kind = lc::WaitKind::socket;
    w.object.fd = 0x7FFFFFFF;
    w.object.address = w.object.value = max;
    w.object.owner = 0xFFFFFFFFu;
    std::memset(w.object.text, 'x', sizeof w.object.text - 1);
    std::memset(w.object.owner_name, 'n', sizeof w.object.owner_name - 1);
    w.owner_loop = names[0].c_str();
    w.samples = 0xFFFFFFFFu;
    w.holder_pc_count = static_cast<std::uint8_t>(lc::kMaxFrames);
    for (Frame& f : w.holder_frames) f = ~Frame{0};
    w.chain_count = static_cast<std::uint8_t>(lc::kWaitChainMax);
    for (lc::WaitHop& hop : w.chain) {
      hop.address = max;
      hop.owner = 0xFFFFFFFFu;
      std::memset(hop.owner_name, 'h', sizeof hop.owner_name - 1);
    }
    w.deadlock = true;
  }
  return r;
}

TEST(Packet, WorstCaseRecordFitsKMaxPacketBytesWhichIsNotMuchLarger) {
  std::size_t worst = 0;
  for (std::size_t scopes = 0; scopes <= lc::kMaxFrames; ++scopes) {
    for (const bool top_scopes : {false, true}) {
      const BlockRecord r = worst_record(scopes, top_scopes);
      Bytes out(lc::kMaxPacketBytes);
      const std::size_t n = lc::encode_packet(r, out.data(), out.size());
      ASSERT_NE(n, 0u) << scopes << " scopes per sample";
      out.resize(n);
      EXPECT_EQ(decode(out).record.sample_count, lc::kMaxSamples) << scopes;
      worst = std::max(worst, n);
    }
  }
  std::cout << "worst-case packet: " << worst << " B, kMaxPacketBytes: " << lc::kMaxPacketBytes << " B\n";
  EXPECT_LE(worst, lc::kMaxPacketBytes);
  EXPECT_LE(lc::kMaxPacketBytes, worst + worst / 20) << "kMaxPacketBytes is more than 5 % above the worst case";
}

// ---- Buffer sizes ---------------------------------------------------------------------------

void expect_refused_below_length(const BlockRecord& r) {
  const std::size_t length = encode(r).size();
  ASSERT_GT(length, 0u);
  constexpr std::size_t kGuard = 32;
  constexpr std::uint8_t kFill = 0xCD;
  for (std::size_t size = 0; size <= length; ++size) {
    Bytes buffer(size + kGuard, kFill);
    const std::size_t n = lc::encode_packet(r, buffer.data(), size);
    EXPECT_EQ(n, size == length ? length : 0u) << "size " << size;
    for (std::size_t i = size; i < buffer.size(); ++i) {
      if (buffer[i] != kFill) {
        ADD_FAILURE() << "byte " << i << " written with a buffer of " << size;
        return;
      }
    }
  }
  EXPECT_EQ(lc::encode_packet(r, nullptr, 0), 0u);
}

TEST(Packet, EveryBufferBelowThePacketLengthIsRefusedAndNotOverrun) {
  expect_refused_below_length(golden_record());
  expect_refused_below_length(BlockRecord{});
  expect_refused_below_length(worst_record(lc::kMaxFrames / 2, true));
}

TEST(Packet, ADelayedByEventIsOneStringUnlessItIsTheRecordsOwnEvent) {
  static const lc::Event kOther{"other"};
  BlockRecord r = golden_record();
  r.phase = lc::Phase::deadline_miss;
  const std::size_t plain = encode(r).size();
  r.delayed_by_dispatch = 4;
  r.delayed_by = &kOther;
  const Bytes other = encode(r);
  EXPECT_EQ(other.size(), plain + 1 + 6) << "an index byte, and the string \"other\" (length byte + 5)";
  r.delayed_by = &kTick;  // the record's own event: string 2, no new string
  EXPECT_EQ(encode(r).size(), plain + 1);
  // The string count byte (3 + run, out, io, and now "other" first among the names).
  const auto count_at = std::find(other.begin() + 40, other.end(), std::uint8_t{0x07});
  ASSERT_NE(count_at, other.end());
  EXPECT_EQ(Bytes(count_at + 16, count_at + 22), (Bytes{0x0A, 'o', 't', 'h', 'e', 'r'})) << "string 3, before the stages";
}

// ---- Health packets (type 3) ----------------------------------------------------------------

// Every field at its widest and every event a distinct long name.
lc::HealthRecord worst_health() {
  static lc::EventHealth storage;
  static std::vector<lc::Event> events;
  if (events.empty()) {
    for (std::size_t i = 0; i < lc::kHealthEvents; ++i) events.push_back(lc::Event{long_names()[i].c_str(), 0, &storage});
  }
  lc::HealthRecord r;
  r.number = r.tick_hz = r.dispatches = r.blocks = r.hangs = r.health_dropped = 0xFFFF'FFFFu;
  r.start = r.busy_ticks = r.idle_ticks = r.max_duration = 0xFFFF'FFFEu;
  r.end = 0x7FFF'FFFFu;
  r.has_idle = true;
  r.qualifier = r.loop = long_names()[0].c_str();
  for (std::uint32_t& count : r.histogram) count = 0xFFFF'FFFFu;
  for (unsigned i = 0; i < lc::kMemoryValues; ++i) r.memory.set(static_cast<lc::MemoryValue>(i), ~std::uint64_t{0});
  r.event_count = static_cast<std::uint8_t>(lc::kHealthEvents);
  for (std::size_t i = 0; i < lc::kHealthEvents; ++i) {
    lc::EventHealthWindow& e = r.events[i];
    e.event = &events[i];
    e.dispatches = e.deadline_misses = e.missed_periods = e.posted_ahead = 0xFFFF'FFFFu;
    e.p50 = e.p95 = e.p99 = e.max_latency = e.period_ticks = e.deadline_ticks = 0xFFFF'FFFFu;
  }
  return r;
}

TEST(HealthPacket, FramedAsTypeThreeWithTheBuildsConfigurationFirst) {
  lc::HealthRecord r;
  r.tick_hz = 1000;
  r.loop = "main";
  Bytes p(lc::kMaxHealthPacketBytes);
  const std::size_t n = lc::encode_health_packet(r, p.data(), p.size());
  ASSERT_GT(n, 10u);
  p.resize(n);
  EXPECT_EQ(p[0], lc::kPacketMagic0);
  EXPECT_EQ(p[1], lc::kPacketMagic1);
  EXPECT_EQ(p[2], lc::kPacketVersion);
  EXPECT_EQ(p[3], static_cast<std::uint8_t>(lc::PacketType::health));
  EXPECT_EQ(std::size_t{p[4]} | (std::size_t{p[5]} << 8), n - 10);
  EXPECT_EQ(p[6], sizeof(Frame) == 8 ? 1u : 0u);
  EXPECT_EQ(p[7], lc::kHealthEvents);
  EXPECT_EQ(p[8], 0xE8);  // tick_hz 1000 = 0x3E8: 0x68|0x80, 0x07
  EXPECT_EQ(p[9], 0x07);
  std::uint32_t crc = 0;
  for (std::size_t i = 0; i < 4; ++i) crc |= std::uint32_t{p[n - 4 + i]} << (8 * i);
  EXPECT_EQ(crc, reference_crc(p.data() + 2, n - 6));
}

TEST(HealthPacket, WorstCaseFitsKMaxHealthPacketBytesWhichIsNotMuchLarger) {
  Bytes out(lc::kMaxHealthPacketBytes);
  const std::size_t n = lc::encode_health_packet(worst_health(), out.data(), out.size());
  ASSERT_NE(n, 0u);
  std::cout << "worst-case health packet: " << n << " B, kMaxHealthPacketBytes: " << lc::kMaxHealthPacketBytes << " B\n";
  EXPECT_LE(lc::kMaxHealthPacketBytes, n + n / 20) << "kMaxHealthPacketBytes is more than 5 % above the worst case";
}

TEST(HealthPacket, EveryBufferBelowThePacketLengthIsRefusedAndNotOverrun) {
  const lc::HealthRecord r = worst_health();
  Bytes whole(lc::kMaxHealthPacketBytes);
  const std::size_t length = lc::encode_health_packet(r, whole.data(), whole.size());
  ASSERT_GT(length, 0u);
  constexpr std::size_t kGuard = 32;
  constexpr std::uint8_t kFill = 0xCD;
  for (std::size_t size = 0; size <= length; ++size) {
    Bytes buffer(size + kGuard, kFill);
    EXPECT_EQ(lc::encode_health_packet(r, buffer.data(), size), size == length ? length : 0u) << size;
    for (std::size_t i = size; i < buffer.size(); ++i) {
      if (buffer[i] != kFill) {
        ADD_FAILURE() << "byte " << i << " written with a buffer of " << size;
        return;
      }
    }
  }
}

// ---- A typical device record ----------------------------------------------------------------

// 8 samples of 4 PCs (32-bit values, as on a Cortex-M) in a handler and its callers, short
// names: the encoded size against the JSON line. Printed for docs/benchmarks.md.
TEST(Packet, TypicalRecordIsAFractionOfItsJsonLine) {
  static const lc::Event kEvent{"uart_rx"};
  BlockRecord r;
  r.report = 12;
  r.phase = lc::Phase::final;
  r.cause = lc::Cause::running;
  r.qualifier = "fw-1.4.2";
  r.loop = "main";
  r.event = &kEvent;
  r.dispatch = 4711;
  r.tick_hz = 1000000;
  r.start = 123456789u;
  r.duration_ticks = 180000;
  r.end = r.start + 180000u;
  r.threshold_ticks = 100000;
  r.window_ticks = 150000;
  r.samples_taken = 16;
  r.samples_overwritten = 8;
  r.top_count = 2;
  r.top[0] = loopcanary::test::top_entry(0x08001A3Cu, false, 12);
  r.top[1] = loopcanary::test::top_entry(0x08001A52u, false, 4);
  r.sample_count = 8;
  for (std::size_t i = 0; i < 8; ++i) {
    const Frame leaf = (i % 4 == 3) ? 0x08001A52u : 0x08001A3Cu + 2 * (i % 3);
    r.samples[i] = make_sample(static_cast<lc::tick_t>(r.start + 80000u + 10000u * i), 2 * r.dispatch - 1,
                               {}, {leaf, 0x08002B11u, 0x08000C45u, 0x08000411u});
  }
  const Bytes packet = encode(r);
  EXPECT_EQ(decode(packet).record.sample_count, 8u);
  const lc::FormatResult json = lc::format_json(r, nullptr, 0);
  std::cout << "typical record (8 samples x 4 PCs, 32-bit PCs, short names): " << packet.size()
            << " B packet, " << json.needed << " B JSON line\n";
  EXPECT_LT(packet.size() * 4, json.needed);
}

}  // namespace
