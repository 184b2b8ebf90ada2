// SPDX-License-Identifier: MIT
// loopcanary_capture_corpus: writes a binary capture for the host tool's decode benchmark
// (bench/tool_bench.sh --packets; docs/benchmarks.md, "Host tool"). Usage:
//
//   loopcanary_capture_corpus OUT.lcb RECORDS
//
// RECORDS typical device records, each one packet of the core's encode_packet: a final record
// with CPU evidence, 8 kept samples of 4 program counters each (PCs that move a little from
// sample to sample and from record to record, as a firmware's do) and a top table of 3 PCs.
// Exit status 0, or 1 with a message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "loopcanary/packet.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: loopcanary_capture_corpus OUT.lcb RECORDS\n");
    return 1;
  }
  const unsigned long long records = std::strtoull(argv[2], nullptr, 10);
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  if (!out || records == 0) {
    std::fprintf(stderr, "loopcanary_capture_corpus: cannot write %s, or RECORDS is 0\n", argv[1]);
    return 1;
  }
  static constexpr loopcanary::Event kEvent{"sensor_poll", 0};
  static loopcanary::BlockRecord r{};  // static: large
  std::vector<std::uint8_t> packet(loopcanary::kMaxPacketBytes);
  std::uint64_t bytes = 0;
  for (unsigned long long n = 0; n < records; ++n) {
    r = loopcanary::BlockRecord{};
    r.report = static_cast<std::uint32_t>(n + 1);
    r.phase = loopcanary::Phase::final;
    r.cause = loopcanary::Cause::running;
    r.qualifier = "fw-1.4.2";
    r.loop = "main";
    r.event = &kEvent;
    r.dispatch = static_cast<std::uint32_t>(100 + 3 * n);
    r.tick_hz = 1000000;
    r.start = static_cast<loopcanary::tick_t>(n * 1000003u);
    r.duration_ticks = 120000 + n % 5000;
    r.end = static_cast<loopcanary::tick_t>(r.start + r.duration_ticks);
    r.threshold_ticks = 100000;
    r.window_ticks = 95000;
    r.has_thread_cpu = true;
    r.thread_cpu_us = 94000;
    r.system_busy_permille = 412;
    r.process_permille = 250;
    r.samples_taken = 8;
    r.sample_count = 8;
    for (std::uint8_t i = 0; i < 8; ++i) {
      loopcanary::Sample& s = r.samples[i];
      s.at = static_cast<loopcanary::tick_t>(r.start + 25000u + 10000u * i);
      s.seq = 2 * r.dispatch - 1;
      s.pc_count = 4;
      s.frames[0] = 0x08001200u + 4u * ((n + i) % 16);
      s.frames[1] = 0x08003400u + 2u * (n % 7);
      s.frames[2] = 0x08000a10u;
      s.frames[3] = 0x08000400u;
    }
    r.top_count = 3;
    r.top[0] = {0x08001200u, false, 4};
    r.top[1] = {0x08001204u, false, 3};
    r.top[2] = {0x08001208u, false, 1};
    const std::size_t size = loopcanary::encode_packet(r, packet.data(), packet.size());
    if (size == 0) {
      std::fprintf(stderr, "loopcanary_capture_corpus: encode_packet refused a record\n");
      return 1;
    }
    out.write(reinterpret_cast<const char*>(packet.data()), static_cast<std::streamsize>(size));
    bytes += size;
  }
  std::printf("%llu records, %llu bytes (%.1f bytes per record)\n", records, static_cast<unsigned long long>(bytes),
              static_cast<double>(bytes) / static_cast<double>(records));
  return out ? 0 : 1;
}
