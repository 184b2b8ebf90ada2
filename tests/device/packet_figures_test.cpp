// SPDX-License-Identifier: MIT
// Binary packet figures on the device (docs/benchmarks.md, "Binary packets"): the encoded size of
// a typical record against its JSON line, and the instructions encode_packet executes for it,
// counted under QEMU -icount (virtual time = instructions x 2^shift ns, so a loop timed with
// SysTick counts instructions; the method of hotpath_test.cpp). The record is the build's full
// sample storage (kMaxSamples samples of kMaxFrames program counters: 8 of 4 at the cortex-m3
// preset), short names and a top table of three PCs, as the watchdog makes it for a computing
// block. Prints
//   packet: N B (JSON line M B), encode_packet I instructions, crc32 C instructions
// where crc32 is the checksum of that packet, which encode_packet computes as part of its I.
// format_json is linked only to measure the JSON line: a device that sends packets does not
// need it.
#include "device_test.hpp"
#include "icount_stopwatch.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/format.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/port/cortex_m.hpp"
#include "loopcanary/watchdog.hpp"

namespace lc = loopcanary;
namespace cm = loopcanary::cortex_m;
using lc::device_test::print;
using lc::device_test::print_u64;

namespace {

lc::BlockRecord g_record;
std::uint8_t g_packet[lc::kMaxPacketBytes];
std::size_t g_packet_size = 0;  // of the packet in g_packet, for the crc32 run
volatile std::size_t g_encoded = 0;
volatile std::uint32_t g_crc = 0;
char g_json[4096];

}  // namespace

// The measured bodies, out of line so the loop around them is identical; the empty one takes the
// same arguments to the same registers.
extern "C" __attribute__((noinline)) void lc_bench_empty() {
  __asm__ volatile("" ::"r"(&g_record), "r"(g_packet), "r"(sizeof(g_packet)) : "memory");
}
extern "C" __attribute__((noinline)) void lc_bench_encode() {
  g_encoded = lc::encode_packet(g_record, g_packet, sizeof(g_packet));
}
extern "C" __attribute__((noinline)) void lc_bench_crc() {
  // The bytes encode_packet checksums: from the version byte to the end of the body.
  g_crc = lc::crc32(g_packet + 2, g_packet_size - 2 - lc::kPacketTrailerBytes);
}

namespace {

constexpr std::uint32_t kIterations = 200;  // a few million instructions: SysTick does not wrap

// Instructions of one call of `body` beyond an empty call.
std::uint64_t instructions(void (*body)(), bool& wrapped) {
  return lc::device_test::instructions_x100(body, &lc_bench_empty, kIterations, wrapped) / 100u;
}

constexpr lc::Event kEvent{"sensor_poll"};

// A final record of a 150 ms computing block on a 25 MHz tick (threshold 100 ms), sampled every
// 10 ms: 12 samples taken, the latest kMaxSamples kept, each kMaxFrames program counters deep
// (a busy loop in the leaf, fixed return addresses above it, in flash at 0x08000000 as on an
// STM32), and the three leaf PCs on top of those samples.
void make_typical_record(lc::BlockRecord& r) {
  r = lc::BlockRecord{};
  r.report = 3;
  r.phase = lc::Phase::final;
  r.qualifier = "fw-1.4.2";
  r.loop = "main";
  r.event = &kEvent;
  r.dispatch = 1234;
  r.tick_hz = lc::board::kCoreHz;
  r.start = 0x3B9ACA00u;
  r.duration_ticks = 3'750'000;  // 150 ms
  r.end = static_cast<lc::tick_t>(r.start + r.duration_ticks);
  r.threshold_ticks = 2'500'000;  // 100 ms
  r.window_ticks = 3'500'000;
  r.has_thread_cpu = true;
  r.thread_cpu_us = 139'800;
  r.system_busy_permille = 999;
  r.process_permille = 999;
  lc::derive(r, lc::CauseRule{});

  constexpr std::uint32_t kTaken = 12;
  constexpr std::uint32_t kPeriod = 250'000;  // 10 ms
  r.samples_taken = kTaken;
  r.samples_overwritten = kTaken > lc::kMaxSamples ? kTaken - lc::kMaxSamples : 0;
  r.sample_count = static_cast<std::uint8_t>(kTaken < lc::kMaxSamples ? kTaken : lc::kMaxSamples);
  constexpr lc::Frame kLeaf = 0x08001A40u;
  constexpr lc::Frame kCallers[] = {0x08001C2Eu, 0x08000E52u, 0x08000412u, 0x080003C8u,
                                    0x0800031Au, 0x080002A4u, 0x08000210u};
  for (std::uint32_t i = 0; i < r.sample_count; ++i) {
    const std::uint32_t taken = kTaken - r.sample_count + i;  // index among all samples taken
    lc::Sample& s = r.samples[i];
    s.at = static_cast<lc::tick_t>(r.start + kPeriod * (taken + 1));
    s.seq = 2 * r.dispatch - 1;
    s.pc_count = static_cast<std::uint8_t>(lc::kMaxFrames);
    s.frames[0] = kLeaf + 2u * (taken % 3);
    for (std::size_t f = 1; f < lc::kMaxFrames; ++f) s.frames[f] = kCallers[(f - 1) % 7];
  }
  // The stack table of those samples: one stack (the same callers), its innermost PC over the
  // three leaf addresses.
  r.top_count = 1;
  lc::TopStack& t = r.top[0];
  t.count = kTaken;
  t.pc_count = static_cast<std::uint8_t>(lc::kMaxFrames);
  t.frames[0] = kLeaf;
  for (std::size_t f = 1; f < lc::kMaxFrames; ++f) t.frames[f] = kCallers[(f - 1) % 7];
  t.leaf_high = kLeaf + 4u;
}

std::uint32_t read_le32(const std::uint8_t* p) {
  return p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}

}  // namespace

DT_TEST(Packet, typical_record_size_and_encoder_instructions) {
  lc::device_test::start_stopwatch();
  make_typical_record(g_record);

  const lc::FormatResult json = lc::format_json(g_record, g_json, sizeof(g_json));
  DT_ASSERT(!json.truncated);
  g_packet_size = lc::encode_packet(g_record, g_packet, sizeof(g_packet));
  DT_ASSERT_GT(g_packet_size, lc::kPacketHeaderBytes + lc::kPacketTrailerBytes);
  // A whole packet: its length field covers the rest, its trailer is the CRC measured below.
  DT_ASSERT_EQ(g_packet_size, lc::kPacketHeaderBytes + (g_packet[4] | (std::size_t{g_packet[5]} << 8)) +
                                  lc::kPacketTrailerBytes);
  lc_bench_crc();
  DT_ASSERT_EQ(read_le32(g_packet + g_packet_size - lc::kPacketTrailerBytes), g_crc);
  DT_EXPECT_LT(g_packet_size, json.length);

  bool wrapped = false;
  g_encoded = 0;
  const std::uint64_t encode = instructions(&lc_bench_encode, wrapped);
  DT_EXPECT_EQ(g_encoded, g_packet_size);  // the measured calls encoded the same packet
  const std::uint64_t crc = instructions(&lc_bench_crc, wrapped);
  DT_ASSERT(!wrapped);
  // Both ran, and the CRC is a part of the encoder's work.
  DT_EXPECT_GT(crc, 0u);
  DT_EXPECT_GT(encode, crc);

  print("packet: ");
  print_u64(g_packet_size);
  print(" B (JSON line ");
  print_u64(json.length);
  print(" B), encode_packet ");
  print_u64(encode);
  print(" instructions, crc32 ");
  print_u64(crc);
  print(" instructions\n");
  print("packet record: ");
  print_u64(g_record.sample_count);
  print(" samples of ");
  print_u64(lc::kMaxFrames);
  print(" PCs, ");
  print_u64(g_record.top_count);
  print(" top frames; kMaxPacketBytes = ");
  print_u64(lc::kMaxPacketBytes);
  print("\n");
}

int main() { return lc::device_test::run_all(&lc::board::write); }
