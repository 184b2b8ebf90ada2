// SPDX-License-Identifier: MIT
// Evidence stream figures on the device (docs/benchmarks.md, "Evidence stream (cortex-m3)"): the
// instructions a StaticEvidenceWatchdog spends to encode and push a `sample` packet (4 program
// counters) and the `observation` packet of a typical block into its StaticEvidenceRing, and
// those the ring's drain() spends to send a block's bytes, counted under QEMU -icount
// (icount_stopwatch.hpp).
//
// Only the public API is driven: a watchdog polled with a manual clock (25 MHz ticks), whose Hal
// captures 4 fixed program counters (flash at 0x08000000, as on an STM32) and reads CPU counters
// as the Cortex-M port does (busy, total, process, thread µs). Each block: a dispatch begins;
// polls at 1 ms (the watch starts), at 25 ms (armed: the first sample, with the `watch` packet),
// then every 10 ms to 95 ms (7 samples, each followed 1 tick later by a poll that finds nothing
// to do); the dispatch ends at 120 ms (over its 100 ms threshold) and the poll at 125 ms sends the
// final observation; a poll at 126 ms finds nothing running. Each poll is timed alone (one call
// between two SysTick reads; QEMU counts instructions exactly, so every one is repeatable), and
// a figure is the difference of two sums over many blocks:
//   sample poll    - poll 1 tick later      whole sampling step: scope snapshot, the Hal's
//                                           capture (a copy of 4 words here), encode, push
//   sample poll    - sample poll with no PC encode and push of the sample packet (a capture
//                                           without PCs is a missed sample: nothing sent)
//   final poll     - poll with nothing running  the end note, the observation, encode, push
//   drain of a block's bytes - drain of an empty ring (a sink that does nothing)
// Prints
//   evidence: sample packet N B, I instructions; observation packet N B, I instructions; drain J instructions per block
// and a line of detail. Fails on a broken measurement (a packet missing from the ring or the
// drain, a packet of the wrong type or content, counts that differ from poll to poll), not on a
// figure.
#include <cstddef>
#include <cstdint>

#include "device_test.hpp"
#include "icount_stopwatch.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"

namespace lc = loopcanary;
namespace dt = loopcanary::device_test;
using dt::print;
using dt::print_u64;

namespace {

constexpr lc::tick_t kMs = lc::board::kCoreHz / 1000u;
constexpr lc::tick_t kStart = 0x3B9ACA00u;  // the clock's value at the first block
constexpr lc::tick_t kBlockSpacing = 200 * kMs;
constexpr unsigned kSamples = 8;            // per block: at 25, 35, ... 95 ms
constexpr unsigned kMeasuredSamples = kSamples - 1;  // the first also sends the `watch` packet
// Two warm-up blocks, then kMeasured blocks with PCs and as many without, alternately. Few enough
// that every varint keeps its length from block to block (the dispatch's seq stays below 128),
// so each kind of poll runs the same instructions every time.
constexpr unsigned kMeasured = 29;
constexpr unsigned kBlocks = 2 + 2 * kMeasured;
constexpr unsigned kBlockPackets = 2 + kSamples;  // watch, samples, observation
constexpr lc::Frame kLeaf = 0x08001A40u;
constexpr lc::Frame kCallers[] = {0x08001C2Eu, 0x08000E52u, 0x08000412u};

constexpr lc::Event kEvent{"sensor_poll"};

lc::Monitor g_monitor;
lc::StaticEvidenceRing<4096> g_ring;
lc::StaticEvidenceWatchdog<1> g_watchdog;
lc::tick_t g_now = 0;
std::size_t g_pcs = 4;       // program counters the Hal captures
std::uint32_t g_captures = 0;
volatile std::uint32_t g_drained = 0;

// The Hal: 4 program counters, a leaf that moves among three addresses, as a busy loop's does.
std::size_t capture_stack(void* /*context*/, const lc::Monitor& /*loop*/, lc::Frame* pcs, std::size_t max) {
  const std::size_t n = g_pcs < max ? g_pcs : max;
  if (n == 0) return 0;
  pcs[0] = kLeaf + 2u * (g_captures++ % 3u);
  for (std::size_t i = 1; i < n; ++i) pcs[i] = kCallers[(i - 1) % 3];
  return n;
}

// CPU counters as the Cortex-M port reads them: busy and total ticks since boot (about three
// minutes: 5-byte varints for every block), the firmware the only process, the loop's CPU time
// the busy time in µs (90 % busy here).
void read_cpu(void* /*context*/, const lc::Monitor& /*loop*/, lc::CpuReading* out) {
  const std::uint64_t total = (std::uint64_t{1} << 32) + (g_now - kStart);
  const std::uint64_t busy = total - total / 10u;
  out->set(lc::kCpuBusy, busy);
  out->set(lc::kCpuTotal, total);
  out->set(lc::kCpuProcess, busy);
  out->set(lc::kCpuThreadUs, busy / (kMs / 1000u));
}

}  // namespace

// The timed calls, out of line: every poll runs the same code, only the watchdog's state differs.
extern "C" __attribute__((noinline)) void lc_evidence_poll() { g_watchdog.poll(g_now); }
extern "C" __attribute__((noinline)) void lc_evidence_sink(void* /*context*/, const std::uint8_t* packet,
                                                          std::size_t size) {
  __asm__ volatile("" ::"r"(packet), "r"(size) : "memory");
}
extern "C" __attribute__((noinline)) void lc_evidence_drain() {
  g_drained = g_ring.drain(lc::PacketSink{&lc_evidence_sink, nullptr});
}

namespace {

// Cycles of one call of `f` between two SysTick reads. One call is far shorter than a turn of
// the 24-bit counter, and the difference modulo 2^24 is right across a reload, so the wrap flag
// stopwatch_cycles() raises for a loop does not apply.
std::uint32_t cycles_of(void (*f)()) {
  bool wrapped = false;
  return static_cast<std::uint32_t>(dt::stopwatch_cycles<>(f, 1, wrapped));
}

// A sum of single-call measurements, with their spread.
struct Tally {
  std::uint64_t cycles = 0;
  std::uint32_t calls = 0;
  std::uint32_t min = 0xFFFFFFFFu;
  std::uint32_t max = 0;
  void add(std::uint32_t c) {
    cycles += c;
    ++calls;
    min = c < min ? c : min;
    max = c > max ? c : max;
  }
};

// Instructions x100 per call by which `a` exceeds `b` (both of `calls` calls); 0 when it does not.
std::uint64_t excess_x100(const Tally& a, const Tally& b, std::uint32_t calls) {
  return a.cycles > b.cycles ? dt::instructions_x100_per_call(a.cycles - b.cycles, calls) : 0;
}

// Ring pushes of one timed poll at `at`, added to `tally`.
std::uint32_t timed_poll(lc::tick_t at, Tally& tally) {
  g_now = at;
  const std::uint32_t before = g_ring.stats().pushed;
  tally.add(cycles_of(&lc_evidence_poll));
  return g_ring.stats().pushed - before;
}

// What the first block's drain sent: packet types and sizes, in order.
struct Seen {
  std::uint8_t type[kBlockPackets + 1];
  std::size_t size[kBlockPackets + 1];
  std::uint32_t count;
  std::size_t sample_pcs;  // program counters of the first sample packet
  lc::Frame first_pc;      // its innermost
};
Seen g_seen;

std::uint64_t read_uv(const std::uint8_t*& p) {
  std::uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    const std::uint8_t b = *p++;
    v |= std::uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80u) == 0) break;
  }
  return v;
}

// The bytes of the first block's drain, then cut into packets by their headers.
std::uint8_t g_stream[1024];
std::size_t g_stream_bytes = 0;
std::uint32_t g_stream_writes = 0;

void record_stream(void* /*context*/, const std::uint8_t* bytes, std::size_t size) {
  for (std::size_t i = 0; i < size && g_stream_bytes < sizeof g_stream; ++i) g_stream[g_stream_bytes++] = bytes[i];
  ++g_stream_writes;
}

void record_packet(const std::uint8_t* packet, std::size_t size) {
  Seen& s = g_seen;
  if (s.count <= kBlockPackets) {
    s.type[s.count] = packet[3];
    s.size[s.count] = size;
  }
  if (packet[3] == static_cast<std::uint8_t>(lc::PacketType::sample) && s.sample_pcs == 0) {
    const std::uint8_t* p = packet + lc::kPacketHeaderBytes + 1;  // after the watch index
    read_uv(p);                                                    // at
    read_uv(p);                                                    // seq
    const std::uint8_t scopes = *p++;
    s.sample_pcs = scopes == 0 ? *p : 0;
    ++p;
    s.first_pc = static_cast<lc::Frame>(read_uv(p));
  }
  ++s.count;
}

// g_stream cut into packets for record_packet(); false when it does not end with a whole one.
bool record_packets() {
  std::size_t at = 0;
  while (at + lc::kPacketHeaderBytes <= g_stream_bytes) {
    const std::size_t size = lc::packet_size(g_stream + at);
    if (at + size > g_stream_bytes) return false;
    record_packet(g_stream + at, size);
    at += size;
  }
  return at == g_stream_bytes;
}

}  // namespace

DT_TEST(Evidence, packet_sizes_and_instructions) {
  dt::start_stopwatch();
  lc::MonitorConfig monitor_config;
  monitor_config.name = "main";
  monitor_config.tick_hz = lc::board::kCoreHz;
  monitor_config.threshold_us = 100'000;
  monitor_config.sample_interval_us = 10'000;  // arm at 25 % of the threshold: 25 ms
  DT_ASSERT_EQ(g_monitor.init(monitor_config), lc::Status::ok);
  g_ring.open(lc::ResetCause::power_on);
  lc::WatchdogConfig config;
  config.qualifier = "fw-1.4.2";
  lc::Hal hal{};
  hal.capture_stack = &capture_stack;
  hal.read_cpu = &read_cpu;
  DT_ASSERT_EQ(g_watchdog.init(config, hal, g_ring), lc::Status::ok);
  DT_ASSERT_EQ(g_watchdog.add(g_monitor), lc::Status::ok);

  Tally sample, sample_idle, missed, final_poll, idle, drain, drain_empty;
  std::uint32_t drained_bytes = 0;  // of the measured drains
  std::uint32_t sent_bytes = 0;     // of all drains
  std::uint32_t block_bytes = 0;    // a block's with PCs: watch, samples, observation
  std::uint32_t wrong_pushes = 0;  // a timed poll that did not push what it should have
  std::uint32_t wrong_drains = 0;
  for (unsigned block = 0; block < kBlocks; ++block) {
    const bool measured = block >= 2;
    const bool with_pcs = block % 2 == 0;
    g_pcs = with_pcs ? 4 : 0;
    const lc::tick_t start = kStart + block * kBlockSpacing;
    Tally scratch;
    g_monitor.begin_at(kEvent, start);
    wrong_pushes += timed_poll(start + 1 * kMs, scratch) != 0;            // the watch starts
    wrong_pushes += timed_poll(start + 25 * kMs, scratch) != (with_pcs ? 2u : 0u);  // watch + sample
    for (unsigned i = 1; i < kSamples; ++i) {
      const lc::tick_t at = start + (25 + 10 * i) * kMs;
      Tally& into = !measured ? scratch : with_pcs ? sample : missed;
      wrong_pushes += timed_poll(at, into) != (with_pcs ? 1u : 0u);
      if (with_pcs) wrong_pushes += timed_poll(at + 1, measured ? sample_idle : scratch) != 0;
    }
    g_monitor.end_at(start + 120 * kMs + 7);
    // Without samples, the `watch` packet goes with the observation.
    wrong_pushes += timed_poll(start + 125 * kMs, measured && with_pcs ? final_poll : scratch) != (with_pcs ? 1u : 2u);
    wrong_pushes += timed_poll(start + 126 * kMs, measured && with_pcs ? idle : scratch) != 0;

    if (block == 0) {  // the packets, checked once: the boot packet, then the block's
      const std::uint32_t sent = g_ring.drain(lc::PacketSink{&record_stream, nullptr});
      sent_bytes += sent;
      DT_ASSERT_EQ(sent, g_stream_bytes);
      DT_EXPECT_EQ(g_stream_writes, 1u);  // from the ring's start: no wrap
      DT_ASSERT(record_packets());
      DT_ASSERT_EQ(g_seen.count, kBlockPackets + 1);
      for (unsigned i = 1; i <= kBlockPackets; ++i) block_bytes += static_cast<std::uint32_t>(g_seen.size[i]);
      DT_EXPECT_EQ(g_seen.type[0], static_cast<std::uint8_t>(lc::PacketType::boot));
      DT_EXPECT_EQ(g_seen.type[1], static_cast<std::uint8_t>(lc::PacketType::watch));
      for (unsigned i = 2; i < 2 + kSamples; ++i) {
        DT_EXPECT_EQ(g_seen.type[i], static_cast<std::uint8_t>(lc::PacketType::sample));
        DT_EXPECT_EQ(g_seen.size[i], g_seen.size[2]);
      }
      DT_EXPECT_EQ(g_seen.type[kBlockPackets], static_cast<std::uint8_t>(lc::PacketType::observation));
      DT_EXPECT_EQ(g_seen.sample_pcs, 4u);
      DT_EXPECT_EQ(g_seen.first_pc, kLeaf);
    } else if (measured && with_pcs) {
      drain.add(cycles_of(&lc_evidence_drain));
      wrong_drains += g_drained != block_bytes;
      drained_bytes += g_drained;
      sent_bytes += g_drained;
      drain_empty.add(cycles_of(&lc_evidence_drain));
      wrong_drains += g_drained != 0;
    } else {
      lc_evidence_drain();
      wrong_drains += with_pcs ? g_drained != block_bytes : g_drained == 0;  // without: watch, observation
      sent_bytes += g_drained;
    }
  }
  DT_EXPECT_EQ(wrong_pushes, 0u);
  DT_EXPECT_EQ(wrong_drains, 0u);
  const lc::EvidenceRingStats ring = g_ring.stats();
  DT_EXPECT_EQ(ring.dropped, 0u);
  DT_EXPECT_EQ(ring.sent_bytes, sent_bytes);  // every byte pushed was sent, the boot packet's too
  DT_EXPECT_GT(drained_bytes, 2u * 4096u);     // the measured drains went round the ring
  DT_EXPECT_EQ(g_watchdog.stats().reports, kBlocks);
  DT_EXPECT_EQ(g_watchdog.stats().samples_missed, (kBlocks / 2) * kSamples);

  // Each kind of poll runs the same instructions every time: a spread wider than the stopwatch's
  // resolution (1 cycle either way) means something else ran. A drain whose bytes cross the
  // ring's end calls the sink twice: a few more.
  const Tally* const polls[] = {&sample, &sample_idle, &missed, &final_poll, &idle};
  for (const Tally* t : polls) {
    DT_EXPECT_EQ(t->calls, t == &final_poll || t == &idle ? kMeasured : kMeasured * kMeasuredSamples);
    DT_EXPECT_LE(t->max - t->min, 2u);
  }
  DT_EXPECT_EQ(drain.calls, kMeasured);
  DT_EXPECT_EQ(drain_empty.calls, kMeasured);
  DT_EXPECT_LE(drain.max - drain.min, 10u);
  DT_EXPECT_LE(drain_empty.max - drain_empty.min, 2u);

  const std::uint32_t samples = kMeasured * kMeasuredSamples;
  const std::uint64_t sample_step = excess_x100(sample, sample_idle, samples);
  const std::uint64_t sample_packet = excess_x100(sample, missed, samples);
  const std::uint64_t observation = excess_x100(final_poll, idle, kMeasured);
  const std::uint64_t per_block = excess_x100(drain, drain_empty, kMeasured);
  // All measured, each a part of the one before it where it is one.
  DT_EXPECT_GT(sample_packet, 0u);
  DT_EXPECT_GT(sample_step, sample_packet);
  DT_EXPECT_GT(observation, sample_packet);
  DT_EXPECT_GT(per_block, 0u);

  const std::size_t sample_bytes = g_seen.size[2];
  const std::size_t observation_bytes = g_seen.size[kBlockPackets];
  print("evidence: sample packet ");
  print_u64(sample_bytes);
  print(" B, ");
  print_u64(sample_packet / 100u);
  print(" instructions; observation packet ");
  print_u64(observation_bytes);
  print(" B, ");
  print_u64(observation / 100u);
  print(" instructions; drain ");
  print_u64(per_block / 100u);
  print(" instructions per block\n");
  print("evidence detail: sampling step (scopes, capture of 4 PCs, encode, push) ");
  print_u64(sample_step / 100u);
  print(" instructions; watch packet ");
  print_u64(g_seen.size[1]);
  print(" B; a block of ");
  print_u64(kSamples);
  print(" samples of 4 PCs: ");
  print_u64(kBlockPackets);
  print(" packets, ");
  print_u64(block_bytes);
  print(" B; kMaxEvidencePacketBytes = ");
  print_u64(lc::kMaxEvidencePacketBytes);
  print("\n");
}

int main() { return dt::run_all(&lc::board::write); }
