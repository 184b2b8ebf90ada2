// SPDX-License-Identifier: MIT
// loopcanary_linux_sample_driver: stack samples of the Linux port and nothing else, for the
// instructions of one sample counted in QEMU's execution log (bench/sample_count.sh;
// docs/benchmarks.md, "Linux port on AArch64").
//
//   loopcanary_linux_sample_driver [depth] [samples]
//       A loop thread descends `depth` levels of lc_deep (default 8, 1..48) and spins at the
//       bottom; the main thread, as the watchdog, takes `samples` stack samples of it (default
//       16, 1..1000) through Platform::capture_stack, each one call of lc_sample_once; then the
//       floor, lc_run_clock_reads(1000) and lc_run_clock_reads(2000) (lc_run_floor). Exit status 0 when every
//       sample was answered and holds the `depth` + 1 frames of lc_deep, innermost first.
//
// The markers the count uses: the loop thread's side of a sample runs from the entry of the
// port's signal handler until the thread is back in lc_deep (the sigreturn trampoline
// included); the watchdog's side from the entry of lc_sample_once until it is back in
// lc_run_samples. The watchdog sleeps on the answer (PlatformConfig::no_sample_spin) so its
// count does not depend on how long it spins; the timeout is long, as the emulated and
// logged loop thread answers slowly. Built with frame pointers (bench/CMakeLists.txt).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "clock_floor.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/platform.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {
constexpr unsigned long kMaxDepth = 48;
constexpr unsigned long kMaxSamples = 1000;
constexpr std::size_t kMaxFrames = 64;

std::atomic<bool> g_stop{false};
std::size_t g_frames = 0;  // frames of the last sample (main thread only)
std::atomic<bool> g_ready{false};
}  // namespace

extern "C" {

// Tells the main thread the loop thread is in place. A call of its own, so the level that
// spins has made a call and with it a frame record of its own (a level that calls nothing may
// keep its return address in the link register only, and in a recursion the walk cannot tell
// that address from its caller's: docs/porting-linux.md, Stack capture).
__attribute__((noinline)) void lc_ready() { g_ready.store(true, std::memory_order_release); }

// `depth` frames of lc_deep above the one that spins until g_stop: the stack every sample walks.
__attribute__((noinline)) unsigned long lc_deep(unsigned long depth) {
  if (depth == 0) {
    lc_ready();
    while (!g_stop.load(std::memory_order_relaxed)) {
    }
    return 0;
  }
  const unsigned long r = lc_deep(depth - 1);
  asm volatile("" : : : "memory");  // no tail call: every level keeps its frame
  return r + 1;
}

// The loop thread: attached, `depth` levels deep until the samples are taken.
__attribute__((noinline)) void lc_loop_body(lx::LoopThread* thread, unsigned long depth) {
  lx::ScopedLoopThread attach(*thread);
  if (!attach.result().ok()) {
    g_ready.store(true, std::memory_order_release);
    return;
  }
  lc_deep(depth);
}

// One sample: the watchdog's side of the round trip.
__attribute__((noinline)) std::size_t lc_sample_once(lx::Platform* platform, lx::LoopThread* thread, lc::Frame* pcs) {
  return platform->capture_stack(*thread, pcs, kMaxFrames);
}

// `samples` samples; the fewest frames of lc_deep one of them held (0 when one was not answered):
// `depth` + 1 when every walk reached the top level.
__attribute__((noinline)) std::size_t lc_run_samples(lx::Platform* platform, lx::LoopThread* thread,
                                                     unsigned long samples) {
  std::size_t fewest = kMaxFrames;
  for (unsigned long i = 0; i < samples; ++i) {
    lc::Frame pcs[kMaxFrames];
    const std::size_t n = lc_sample_once(platform, thread, pcs);
    g_frames = n;
    // The interrupted PC (in lc_deep), then one return address per level below the top one,
    // each the same: just after lc_deep's call to itself.
    std::size_t deep = n > 1 ? 1 : 0;
    for (std::size_t f = 1; f < n; ++f) deep += pcs[f] == pcs[1] ? 1 : 0;
    if (deep < fewest) fewest = deep;
  }
  return fewest;
}

// The floor, in the same run: `reads` and 2 x `reads` clock reads (their difference is `reads`
// reads). `reads` comes from a volatile, so the compiler makes no copy of lc_run_clock_reads
// for a constant count; the barriers keep both calls calls (no tail call).
__attribute__((noinline)) void lc_run_floor(unsigned long reads) {
  lc_run_clock_reads(reads);
  asm volatile("" : : : "memory");
  lc_run_clock_reads(2 * reads);
  asm volatile("" : : : "memory");
}
}

int main(int argc, char** argv) {
  const unsigned long depth = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 8;
  const unsigned long samples = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 16;
  if (depth < 1 || depth > kMaxDepth || samples < 1 || samples > kMaxSamples) {
    std::fprintf(stderr, "usage: %s [depth 1..%lu] [samples 1..%lu]\n", argv[0], kMaxDepth, kMaxSamples);
    return 2;
  }
  const lx::ClockInfo& clock = lx::clock_info();  // chosen here, not in the floor's first run
  lx::Platform platform;
  lx::PlatformConfig config;
  config.no_sample_spin = true;
  config.sample_timeout_us = 1'000'000;
  if (const lx::Result r = platform.init(config); !r.ok()) {
    std::fprintf(stderr, "Platform::init failed\n");
    return 1;
  }
  static lx::LoopThread thread;
  std::thread loop(&lc_loop_body, &thread, depth);
  while (!g_ready.load(std::memory_order_acquire)) std::this_thread::yield();
  const std::size_t fewest = thread.attached() ? lc_run_samples(&platform, &thread, samples) : 0;
  g_stop.store(true, std::memory_order_relaxed);
  loop.join();
  volatile unsigned long floor_reads = 1000;  // the script divides the difference by 1000
  lc_run_floor(floor_reads);
  const lx::PlatformStats s = platform.stats();
  std::printf("depth %lu: %u of %lu samples answered, the fewest frames in lc_deep %zu (want %lu), %zu frames in "
              "the last, clock %s\n",
              depth, s.samples_answered, samples, fewest, depth + 1, g_frames, clock.name);
  return s.samples_answered == samples && fewest == depth + 1 ? 0 : 1;
}
