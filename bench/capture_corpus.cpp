// SPDX-License-Identifier: MIT
// loopcanary_capture_corpus: writes a binary capture for the host tool's decode benchmark
// (bench/tool_bench.sh --packets; docs/benchmarks.md, "Binary packets"). Usage:
//
//   loopcanary_capture_corpus [--evidence] OUT.lcb RECORDS
//
// RECORDS typical device blocks, as a watchdog polled with a manual clock (1 MHz ticks) sees
// them: one loop, each block a dispatch of 120..125 ms (threshold 100 ms) sampled 8 times from
// 25 ms (armed at 25 % of the threshold, every 10 ms), each sample 4 program counters (a leaf
// that moves among three PCs from sample to sample and from block to block, callers that move a
// little from block to block), CPU counters read at every poll (the loop 94 % on CPU: running),
// and the final report made at the poll 1 ms after the dispatch ends (no poll between the
// threshold and the end: no in-progress report). Two short dispatches between blocks.
//   default      records: a StaticWatchdog builds each block's final record, written as one
//                packet of the core's encode_packet (what a device sends with cortex_m::drain)
//   --evidence   evidence: a StaticEvidenceWatchdog sends each block's watch, 8 sample and
//                observation packets into a StaticEvidenceRing, drained to the file after each
//                block (what a device that sends evidence sends; the ring's first boot packet
//                says the ring was discarded, power-on RAM: the decoder warns once)
// `loopcanary decode` assembles the same records from both captures. Exit status 0, or 1 with a
// message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/packet.hpp"

namespace lc = loopcanary;

namespace {

constexpr lc::Event kEvent{"sensor_poll", 0};
constexpr std::uint32_t kTickHz = 1'000'000;
constexpr unsigned kSamples = 8;

// The watchdog's view of the device: the clock (64 bits here, the ticks are its low 32), the
// block and the sample being taken.
struct Device {
  std::uint64_t clock = 0;
  std::uint64_t block = 0;
  unsigned sample = 0;
} g_device;

std::size_t capture_stack(void* /*context*/, const lc::Monitor& /*loop*/, lc::Frame* pcs, std::size_t max) {
  if (max < 4) return 0;
  const std::uint64_t n = g_device.block;
  pcs[0] = 0x08001200u + 4u * ((n + g_device.sample++) % 3u);
  pcs[1] = 0x08003400u + 2u * (n % 7u);
  pcs[2] = 0x08000a10u;
  pcs[3] = 0x08000400u;
  return 4;
}

// Cumulative counters from the clock: the loop's thread on CPU 94 % of the time, the machine
// busy 41.2 %, this process 25 % (µs and ticks are one unit at 1 MHz).
void read_cpu(void* /*context*/, const lc::Monitor& /*loop*/, lc::CpuReading* out) {
  const std::uint64_t t = g_device.clock;
  out->set(lc::kCpuThreadUs, t * 94u / 100u);
  out->set(lc::kCpuBusy, t * 412u / 1000u);
  out->set(lc::kCpuTotal, t);
  out->set(lc::kCpuProcess, t / 4u);
}

lc::tick_t at(std::uint64_t clock) {
  g_device.clock = clock;
  return static_cast<lc::tick_t>(clock);
}

lc::Monitor g_monitor;
lc::StaticWatchdog<1, 16> g_records;
lc::StaticEvidenceWatchdog<1> g_evidence;
lc::StaticEvidenceRing<4096> g_ring;  // zero as power-on RAM: open() discards it

struct Output {
  std::ofstream file;
  std::uint64_t bytes = 0;
  std::uint64_t packets = 0;
};

void write_packet(void* context, const std::uint8_t* packet, std::size_t size) {
  auto& out = *static_cast<Output*>(context);
  out.file.write(reinterpret_cast<const char*>(packet), static_cast<std::streamsize>(size));
  out.bytes += size;
  ++out.packets;
}

}  // namespace

int main(int argc, char** argv) {
  const bool evidence = argc == 4 && std::strcmp(argv[1], "--evidence") == 0;
  if (argc != 3 && !evidence) {
    std::fprintf(stderr, "usage: loopcanary_capture_corpus [--evidence] OUT.lcb RECORDS\n");
    return 1;
  }
  const char* path = argv[argc - 2];
  const unsigned long long records = std::strtoull(argv[argc - 1], nullptr, 10);
  Output out;
  out.file.open(path, std::ios::binary | std::ios::trunc);
  if (!out.file || records == 0) {
    std::fprintf(stderr, "loopcanary_capture_corpus: cannot write %s, or RECORDS is 0\n", path);
    return 1;
  }

  lc::MonitorConfig monitor_config;
  monitor_config.name = "main";
  monitor_config.tick_hz = kTickHz;
  monitor_config.threshold_us = 100'000;
  monitor_config.sample_interval_us = 10'000;
  lc::WatchdogConfig config;
  config.qualifier = "fw-1.4.2";
  lc::Hal hal{};
  hal.capture_stack = &capture_stack;
  hal.read_cpu = &read_cpu;
  lc::Watchdog& watchdog = evidence ? static_cast<lc::Watchdog&>(g_evidence) : g_records;
  lc::Status status = g_monitor.init(monitor_config);
  if (status == lc::Status::ok) {
    if (evidence) {
      g_ring.open(lc::ResetCause::power_on);
      status = g_evidence.init(config, hal, g_ring);
    } else {
      status = g_records.init(config, hal);
    }
  }
  if (status == lc::Status::ok) status = watchdog.add(g_monitor);
  if (status != lc::Status::ok) {
    std::fprintf(stderr, "loopcanary_capture_corpus: init: %s\n", lc::describe(status));
    return 1;
  }

  const lc::PacketSink sink{&write_packet, &out};
  std::vector<std::uint8_t> buffer(lc::kMaxPacketBytes);  // a record's packet
  static lc::BlockRecord record;  // static: large
  // The first block is dispatch 100, then every third: 99 short dispatches first.
  for (unsigned i = 0; i < 99; ++i) {
    g_monitor.begin_at(kEvent, at(0));
    g_monitor.end_at(at(0));
  }
  std::uint64_t pushed = 0;  // evidence packets the ring took before this block
  for (std::uint64_t n = 0; n < records; ++n) {
    g_device.block = n;
    g_device.sample = 0;
    const std::uint64_t start = 1'000'000 + n * 1'000'003u;
    const std::uint64_t end = start + 120'000 + n % 5'000;
    g_monitor.begin_at(kEvent, at(start));
    watchdog.poll(at(start + 1'000));  // the watch starts
    for (unsigned i = 0; i < kSamples; ++i) watchdog.poll(at(start + 25'000 + 10'000 * i));
    g_monitor.end_at(at(end));
    watchdog.poll(at(end + 1'000));  // the final report
    for (unsigned i = 0; i < 2; ++i) {
      g_monitor.begin_at(kEvent, at(end + 2'000));
      g_monitor.end_at(at(end + 2'100));
    }
    const std::uint64_t packets = out.packets;
    std::uint64_t expected = 1;
    std::uint64_t made = 0;
    if (evidence) {
      // The ring's bytes go out as they lie (drain() does not cut them into packets): the
      // packets are counted as pushed, the bytes as written.
      const std::uint64_t bytes = out.bytes;
      const std::uint32_t sent = g_ring.drain(sink);
      made = g_ring.stats().pushed - pushed;
      pushed = g_ring.stats().pushed;
      expected = (n == 0 ? 1 : 0) + 2 + kSamples;  // the boot packet first; watch, samples, observation
      if (out.bytes - bytes != sent || g_ring.stats().dropped != 0) {
        std::fprintf(stderr, "loopcanary_capture_corpus: block %llu: the ring dropped or lost bytes\n",
                     static_cast<unsigned long long>(n));
        return 1;
      }
    } else {
      while (g_records.pop(record)) {
        const std::size_t size = lc::encode_packet(record, buffer.data(), buffer.size());
        if (size == 0 || record.phase != lc::Phase::final || record.sample_count != kSamples) {
          std::fprintf(stderr, "loopcanary_capture_corpus: block %llu: not one final record of %u samples\n",
                       static_cast<unsigned long long>(n), kSamples);
          return 1;
        }
        write_packet(&out, buffer.data(), size);
      }
      made = out.packets - packets;
    }
    if (made != expected) {
      std::fprintf(stderr, "loopcanary_capture_corpus: block %llu: %llu packets, expected %llu\n",
                   static_cast<unsigned long long>(n), static_cast<unsigned long long>(made),
                   static_cast<unsigned long long>(expected));
      return 1;
    }
  }
  std::printf("%llu records, %llu bytes (%.1f bytes per record, %llu packets)\n", records,
              static_cast<unsigned long long>(out.bytes),
              static_cast<double>(out.bytes) / static_cast<double>(records),
              static_cast<unsigned long long>(evidence ? g_ring.stats().pushed : out.packets));
  return out.file ? 0 : 1;
}
