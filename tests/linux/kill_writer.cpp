// SPDX-License-Identifier: MIT
// The writer that kill_test.cpp kills: a process that writes block records through the Linux
// file sink (JSON Lines, text and binary, small files so they rotate) as fast as it can, until
// it is killed.
//
//   loopcanary_kill_writer <log directory> <progress file> <run> [<records>]
//
// Record n of the run (n from 1) has report = n and dispatch = <run>, so a reader can tell
// which records of which run are in the files. Progress, in the progress file (4 KiB, shared
// with the test by mmap, so what it says survives a SIGKILL): word 0 = records started (the
// sink's write() entered), word 1 = records written whole to every form (write() returned
// true). When the first record is written it writes one byte "R" to standard output: the
// test's cue to start the clock. With <records>, it stops after that many records, writes "D" and waits to be
// killed. Exits 2 on a setup error, 3 when a write fails (the test never lets it end on its
// own: it is killed).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "../top_stack.hpp"
#include "loopcanary/event.hpp"
#include "loopcanary/linux/file_sink.hpp"
#include "loopcanary/record.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

// Functions of this binary, whose addresses the records carry as program counters, so the sink
// symbolises them as it would a real loop's.
extern "C" {
__attribute__((noinline)) void kill_writer_pc_a() { asm volatile("" ::: "memory"); }
__attribute__((noinline)) void kill_writer_pc_b() { asm volatile("" ::: "memory"); }
__attribute__((noinline)) void kill_writer_pc_c() { asm volatile("" ::: "memory"); }
}

namespace {

constexpr lc::Event kEvent{"kill_test_event"};

// A final report with every sample and top frame filled, so each form of a record spans
// several pages of the page cache and a kill can land inside its write(2).
void fill(lc::BlockRecord& r, std::uint32_t run, std::uint32_t n) {
  r.report = n;
  r.phase = lc::Phase::final;
  r.cause = lc::Cause::running;
  r.qualifier = "kill";
  r.loop = "kill_test_loop";
  r.event = &kEvent;
  r.dispatch = run;
  r.tick_hz = 1'000'000;
  r.start = n * 1000u;
  r.duration_ticks = 200'000u + n % 997u;
  r.end = r.start + static_cast<lc::tick_t>(r.duration_ticks);
  r.threshold_ticks = 100'000;
  const lc::Frame pcs[] = {reinterpret_cast<lc::Frame>(&kill_writer_pc_a), reinterpret_cast<lc::Frame>(&kill_writer_pc_b),
                           reinterpret_cast<lc::Frame>(&kill_writer_pc_c)};
  r.samples_taken = static_cast<std::uint32_t>(lc::kMaxSamples) + n % 7u;
  r.samples_overwritten = n % 7u;
  r.sample_count = static_cast<std::uint8_t>(lc::kMaxSamples);
  for (std::size_t i = 0; i < lc::kMaxSamples; ++i) {
    lc::Sample& s = r.samples[i];
    s.at = r.start + static_cast<lc::tick_t>(10'000u * (i + 1));
    s.seq = n;
    s.scope_count = 0;
    s.pc_count = static_cast<std::uint8_t>(lc::kMaxFrames);
    for (std::size_t f = 0; f < lc::kMaxFrames; ++f) s.frames[f] = pcs[(i + f) % 3] + 1 + f;
  }
  r.top_count = static_cast<std::uint8_t>(lc::kTopFrames);
  for (std::size_t i = 0; i < lc::kTopFrames; ++i) {
    r.top[i] = loopcanary::test::top_entry(pcs[i % 3] + 1 + i, false, static_cast<std::uint32_t>(lc::kTopFrames - i));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s <log directory> <progress file> <run> [<records>]\n", argv[0]);
    return 2;
  }
  const auto run = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
  const auto limit = argc == 5 ? static_cast<std::uint32_t>(std::strtoul(argv[4], nullptr, 10)) : 0u;
  const int progress_fd = ::open(argv[2], O_RDWR | O_CLOEXEC);
  if (progress_fd < 0) {
    std::perror("open progress file");
    return 2;
  }
  void* map = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, progress_fd, 0);
  if (map == MAP_FAILED) {
    std::perror("mmap progress file");
    return 2;
  }
  auto* progress = static_cast<std::uint32_t*>(map);

  lx::FileSinkConfig config;
  config.directory = argv[1];
  config.qualifier = "kill";
  config.json = true;
  config.text = true;
  config.binary = true;
  config.max_file_bytes = 256u * 1024u;  // a dozen records per file
  config.max_files = 6;                  // and the oldest files removed as it goes
  config.max_age_s = 0;
  lx::FileSink sink;
  if (sink.open(config) != lx::SinkError::none) {
    std::fprintf(stderr, "open: %s\n", sink.status().message);
    return 2;
  }
  static lc::BlockRecord record;  // large: not on the stack
  for (std::uint32_t n = 1; limit == 0 || n <= limit; ++n) {
    fill(record, run, n);
    __atomic_store_n(&progress[0], n, __ATOMIC_SEQ_CST);
    if (!sink.write(record)) {
      std::fprintf(stderr, "record %u: %s\n", n, sink.status().message);
      return 3;
    }
    __atomic_store_n(&progress[1], n, __ATOMIC_SEQ_CST);
    if (n == 1 && ::write(STDOUT_FILENO, "R", 1) != 1) return 2;
  }
  if (::write(STDOUT_FILENO, "D", 1) != 1) return 2;
  for (;;) pause();
}
