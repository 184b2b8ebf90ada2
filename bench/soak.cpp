// SPDX-License-Identifier: MIT
// Soak test of the Linux port (docs/benchmarks.md, "Soak"): N real loop threads dispatching
// short events as fast as they can, the watchdog thread polling at 1 kHz, and blocks injected
// at known dispatch numbers. An interceptor reads every report and a consumer thread pops the
// record ring, as a sink would; at the end the program checks
//
//   - every injected block is reported exactly once as a final record (matched by loop and
//     dispatch number, with the block's event), and no final record names a short dispatch
//     whose loop thread ran on the CPU (at least a tenth of the record's CPU window). A short
//     dispatch that the machine descheduled past the threshold is a real block: such records
//     are counted and listed apart (thread off the CPU, or no CPU readings when the watchdog
//     did not arm on it), not a failure unless --strict;
//   - the accounting of docs/reliability.md: per loop and in total, LoopStats::blocks equals
//     the final records without end_estimated plus suppressed plus notes_dropped; the
//     interceptor sees reports 1..reports in order; reports equal the records
//     popped plus records_dropped plus pending, and the gaps in the popped report numbers equal
//     records_dropped; finals_estimated equals the estimated finals; the dispatches the loops
//     counted equal the dispatches they ran;
//   - torn snapshots at most one per loop and poll (each is counted; none hides a block);
//   - RSS (VmRSS, sampled every second) grows by at most --rss-bound-kb after --warmup-s;
//
// and prints dispatches/s. Exit status: 0 all checks pass, 1 a check fails, 2 bad usage or a
// set-up error. Not a CTest test (a run takes half a minute or more); see docs/benchmarks.md for the command.
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "loopcanary/linux/watchdog_thread.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "loopcanary/port/linux/proc.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

constexpr std::uint32_t kMaxLoops = 64;
constexpr std::uint32_t kPollPeriodUs = 1'000;  // the watchdog at 1 kHz

constexpr lc::Event kShort{"short"};
constexpr lc::Event kBlockBusy{"block_busy"};
constexpr lc::Event kBlockSleep{"block_sleep"};

enum class BlockKind { busy, sleep, mixed };

struct Options {
  std::uint32_t loops = 8;
  std::uint64_t dispatches = 100'000'000;  // total, across the loops
  std::uint64_t block_every = 0;           // per loop; 0: dispatches per loop / 50
  std::uint32_t block_ms = 30;
  std::uint32_t threshold_ms = 20;
  BlockKind kind = BlockKind::mixed;
  std::uint32_t seconds = 3600;            // cap on the dispatching phase
  std::uint32_t work = 128;                // LCG steps per short dispatch
  std::uint32_t sample_ms = 5;             // MonitorConfig::sample_interval_us, in ms
  std::uint32_t sample_timeout_us = 300;   // PlatformConfig::sample_timeout_us
  std::uint32_t warmup_s = 5;
  std::uint64_t rss_bound_kb = 1024;
  bool strict = false;
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: loopcanary_soak [--loops N] [--dispatches N] [--block-every K] [--block-ms MS]\n"
               "                       [--threshold-ms MS] [--block-kind busy|sleep|mixed] [--seconds S]\n"
               "                       [--work N] [--sample-ms MS] [--sample-timeout-us US]\n"
               "                       [--warmup-s S] [--rss-bound-kb KB] [--strict]\n"
               "  --loops N          loop threads, 1..64 (default 8)\n"
               "  --dispatches N     dispatches in total across the loops, >= loops (default 100000000)\n"
               "  --block-every K    each loop injects a block every K of its dispatches, staggered\n"
               "                     across loops; >= 2 (default: dispatches per loop / 50)\n"
               "  --block-ms MS      length of an injected block, > threshold (default 30)\n"
               "  --threshold-ms MS  the loops' block threshold, 1..10000 (default 20)\n"
               "  --block-kind K     busy (spins), sleep (clock_nanosleep), mixed (alternate; default)\n"
               "  --seconds S        stop dispatching after S seconds, 1..86400 (default 3600)\n"
               "  --work N           LCG steps per short dispatch, 1..100000 (default 128)\n"
               "  --sample-ms MS     stack-sample interval, 1..threshold (default 5)\n"
               "  --sample-timeout-us US  how long the watchdog waits for a sample, 100..1000000\n"
               "                     (default 300)\n"
               "  --warmup-s S       RSS growth is measured from the sample at S seconds (default 5)\n"
               "  --rss-bound-kb KB  largest RSS growth after warm-up (default 1024)\n"
               "  --strict           a short dispatch reported as a block is a failure even when\n"
               "                     its thread was descheduled\n");
}

bool parse_u64(const char* text, std::uint64_t min, std::uint64_t max, std::uint64_t& out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  out = v;
  return true;
}

// Returns 0 on success, 2 (after a message) on bad usage, 3 for --help.
int parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    std::uint64_t n = 0;
    auto number = [&](std::uint64_t min, std::uint64_t max) {
      if (!parse_u64(v, min, max, n)) {
        std::fprintf(stderr, "loopcanary_soak: %s: '%s' is not a number in %" PRIu64 "..%" PRIu64 "\n", a,
                     v == nullptr ? "" : v, min, max);
        return false;
      }
      ++i;
      return true;
    };
    if (std::strcmp(a, "--help") == 0) {
      usage(stdout);
      return 3;
    } else if (std::strcmp(a, "--strict") == 0) {
      o.strict = true;
    } else if (std::strcmp(a, "--loops") == 0) {
      if (!number(1, kMaxLoops)) return 2;
      o.loops = static_cast<std::uint32_t>(n);
    } else if (std::strcmp(a, "--dispatches") == 0) {
      if (!number(1, 100'000'000'000ull)) return 2;
      o.dispatches = n;
    } else if (std::strcmp(a, "--block-every") == 0) {
      if (!number(2, 1'000'000'000'000ull)) return 2;
      o.block_every = n;
    } else if (std::strcmp(a, "--block-ms") == 0) {
      if (!number(1, 100'000)) return 2;
      o.block_ms = static_cast<std::uint32_t>(n);
    } else if (std::strcmp(a, "--threshold-ms") == 0) {
      if (!number(1, 10'000)) return 2;
      o.threshold_ms = static_cast<std::uint32_t>(n);
    } else if (std::strcmp(a, "--seconds") == 0) {
      if (!number(1, 86'400)) return 2;
      o.seconds = static_cast<std::uint32_t>(n);
    } else if (std::strcmp(a, "--work") == 0) {
      if (!number(1, 100'000)) return 2;
      o.work = static_cast<std::uint32_t>(n);
    } else if (std::strcmp(a, "--sample-ms") == 0) {
      if (!number(1, 10'000)) return 2;
      o.sample_ms = static_cast<std::uint32_t>(n);
    } else if (std::strcmp(a, "--sample-timeout-us") == 0) {
      if (!number(100, 1'000'000)) return 2;
      o.sample_timeout_us = static_cast<std::uint32_t>(n);
    } else if (std::strcmp(a, "--warmup-s") == 0) {
      if (!number(0, 86'400)) return 2;
      o.warmup_s = static_cast<std::uint32_t>(n);
    } else if (std::strcmp(a, "--rss-bound-kb") == 0) {
      if (!number(0, 1'000'000'000)) return 2;
      o.rss_bound_kb = n;
    } else if (std::strcmp(a, "--block-kind") == 0) {
      if (v != nullptr && std::strcmp(v, "busy") == 0) {
        o.kind = BlockKind::busy;
      } else if (v != nullptr && std::strcmp(v, "sleep") == 0) {
        o.kind = BlockKind::sleep;
      } else if (v != nullptr && std::strcmp(v, "mixed") == 0) {
        o.kind = BlockKind::mixed;
      } else {
        std::fprintf(stderr, "loopcanary_soak: --block-kind: '%s' is not busy, sleep or mixed\n",
                     v == nullptr ? "" : v);
        return 2;
      }
      ++i;
    } else {
      std::fprintf(stderr, "loopcanary_soak: unknown option '%s' (--help lists them)\n", a);
      return 2;
    }
  }
  if (o.dispatches < o.loops) {
    std::fprintf(stderr, "loopcanary_soak: --dispatches (%" PRIu64 ") must be at least --loops (%u)\n",
                 o.dispatches, o.loops);
    return 2;
  }
  if (o.block_ms <= o.threshold_ms) {
    std::fprintf(stderr, "loopcanary_soak: --block-ms (%u) must be above --threshold-ms (%u)\n", o.block_ms,
                 o.threshold_ms);
    return 2;
  }
  if (o.sample_ms > o.threshold_ms) {
    std::fprintf(stderr, "loopcanary_soak: --sample-ms (%u) must be at most --threshold-ms (%u)\n", o.sample_ms,
                 o.threshold_ms);
    return 2;
  }
  if (o.dispatches / o.loops >= (1ull << 31)) {
    std::fprintf(stderr, "loopcanary_soak: at most 2^31 - 1 dispatches per loop (LoopStats::dispatches wraps)\n");
    return 2;
  }
  if (o.block_every == 0) o.block_every = std::max<std::uint64_t>(2, o.dispatches / o.loops / 50);
  return 0;
}

// The injection schedule: loop l blocks at its dispatch numbers first(l), first(l) + K, ...
// (dispatch numbers count from 1, as BlockRecord::dispatch does). The first block of each loop
// is staggered by K / loops so that the loops do not block in step.
struct Schedule {
  std::uint64_t every = 2;
  std::uint32_t loops = 1;
  std::uint64_t first(std::uint32_t loop) const {
    const std::uint64_t offset = (static_cast<std::uint64_t>(loop) * (every / loops)) % every;
    return offset == 0 ? every : offset;
  }
  bool injected(std::uint32_t loop, std::uint64_t dispatch) const {
    const std::uint64_t f = first(loop);
    return dispatch >= f && (dispatch - f) % every == 0;
  }
  std::uint64_t index(std::uint32_t loop, std::uint64_t dispatch) const { return (dispatch - first(loop)) / every; }
  std::uint64_t count(std::uint32_t loop, std::uint64_t dispatches) const {
    const std::uint64_t f = first(loop);
    return dispatches >= f ? (dispatches - f) / every + 1 : 0;
  }
};

// Static storage, as the library asks (monitors and watchdog outlive their registration).
lx::Platform g_platform;
lx::LoopThread g_threads[kMaxLoops];
lx::PortMonitor g_monitors[kMaxLoops];
char g_names[kMaxLoops][16];
lc::StaticWatchdog<kMaxLoops, 64> g_watchdog;
lx::WatchdogThread g_runner;

std::atomic<std::uint32_t> g_ready{0};
std::atomic<bool> g_go{false};
std::atomic<bool> g_stop{false};
std::atomic<std::uint64_t> g_done[kMaxLoops];  // dispatches each loop ran
std::atomic<std::uint32_t> g_finished{0};      // loops that ran their last dispatch
std::atomic<std::uint32_t> g_sink{0};          // keeps the short work observable

__attribute__((noinline)) void short_work(std::uint32_t steps, std::uint32_t seed) {
  std::uint32_t x = seed;
  for (std::uint32_t i = 0; i < steps; ++i) {
    x = x * 1664525u + 1013904223u;
    __asm__ volatile("" : "+r"(x));
  }
  if (x == 0) g_sink.store(x, std::memory_order_relaxed);
}

__attribute__((noinline)) void block_busy(lc::tick_t ticks) {
  const lc::tick_t start = lx::Clock::now();
  while (static_cast<lc::tick_t>(lx::Clock::now() - start) < ticks) {
  }
}

__attribute__((noinline)) void block_sleep(std::uint32_t ms) {
  timespec until{};
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += static_cast<time_t>(ms / 1000);
  until.tv_nsec += static_cast<long>(ms % 1000) * 1'000'000L;
  if (until.tv_nsec >= 1'000'000'000L) {
    until.tv_sec += 1;
    until.tv_nsec -= 1'000'000'000L;
  }
  // The sample signal interrupts the sleep: sleep on to the same absolute time.
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
}

struct LoopArgs {
  std::uint32_t loop;
  std::uint64_t dispatches;
  Schedule schedule;
  const Options* options;
  lc::tick_t block_ticks;
};

void loop_body(LoopArgs a) {
  lx::ScopedLoopThread attach(g_threads[a.loop]);
  if (!attach.result().ok()) {
    char text[160];
    std::fprintf(stderr, "loopcanary_soak: loop %u: %s\n", a.loop, lx::format(attach.result(), text, sizeof text));
    std::exit(2);
  }
  g_ready.fetch_add(1);
  while (!g_go.load(std::memory_order_acquire)) std::this_thread::yield();
  lx::PortMonitor& m = g_monitors[a.loop];
  std::uint64_t next_block = a.schedule.first(a.loop);
  std::uint64_t blocks = 0;
  std::uint64_t d = 1;
  for (; d <= a.dispatches; ++d) {
    if (g_stop.load(std::memory_order_relaxed)) break;
    if (d == next_block) {
      next_block += a.schedule.every;
      const bool busy = a.options->kind == BlockKind::busy ||
                        (a.options->kind == BlockKind::mixed && (blocks & 1u) == 0);
      ++blocks;
      m.begin(busy ? kBlockBusy : kBlockSleep);
      if (busy) {
        block_busy(a.block_ticks);
      } else {
        block_sleep(a.options->block_ms);
      }
      m.end();
    } else {
      m.begin(kShort);
      short_work(a.options->work, static_cast<std::uint32_t>(d));
      m.end();
    }
  }
  g_done[a.loop].store(d - 1, std::memory_order_release);
  g_finished.fetch_add(1, std::memory_order_release);
}

// ---- What the interceptor keeps of the reports: finals matched with the schedule ------------

struct Extra {  // a final record of a short dispatch (not injected)
  std::uint32_t loop;
  std::uint32_t dispatch;
  std::uint64_t duration_us;
  lc::Cause cause;
  std::uint8_t flags;
  std::uint64_t window_us;
  std::uint64_t thread_cpu_us;
  std::uint64_t thread_wait_us;
  bool has_cpu;
  bool has_wait;
};

struct Tally {
  std::vector<std::vector<std::uint8_t>> hits;  // per loop, per injected block: finals seen
  std::uint64_t seen = 0;
  std::uint64_t in_progress = 0;
  std::uint64_t in_progress_injected = 0;
  std::uint64_t hang = 0;
  std::uint64_t finals = 0;
  std::uint64_t finals_estimated = 0;
  std::uint64_t finals_estimated_injected = 0;
  std::uint64_t wrong_event = 0;      // an injected dispatch number with a short event, or back
  std::uint64_t out_of_order = 0;     // report numbers not consecutive (the interceptor sees all)
  std::uint32_t last_report = 0;
  std::uint64_t finals_per_loop[kMaxLoops] = {};  // without end_estimated
  std::uint64_t extra = 0;
  std::uint64_t extra_by_cause[4] = {};
  std::uint64_t extra_unwatched = 0;
  std::uint64_t extra_off_cpu = 0;     // thread CPU in the window under a tenth of it: descheduled
  std::uint64_t extra_on_cpu = 0;      // the thread ran during the window: not explained by the load
  std::uint64_t extra_no_evidence = 0; // no CPU window (unwatched, or armed at its last poll)
  std::uint64_t extra_min_us = ~0ull;
  std::uint64_t extra_max_us = 0;
  Extra extra_list[10] = {};
  std::uint64_t block_min_us = ~0ull;  // injected blocks as reported
  std::uint64_t block_max_us = 0;
  std::uint64_t block_samples = 0;
  std::uint64_t block_samples_missed = 0;
};

std::uint64_t us_of(std::uint64_t ticks, std::uint32_t hz) { return hz == 0 ? 0 : ticks * 1'000'000u / hz; }

void take(const lc::BlockRecord& r, const Schedule& schedule, Tally& t) {
  ++t.seen;
  if (r.report != t.last_report + 1) ++t.out_of_order;
  t.last_report = r.report;
  const bool injected = r.loop_index < schedule.loops && schedule.injected(r.loop_index, r.dispatch);
  if ((r.event == &kShort) == injected) ++t.wrong_event;
  if (r.phase == lc::Phase::in_progress) {
    ++t.in_progress;
    if (injected) ++t.in_progress_injected;
    return;
  }
  if (r.phase == lc::Phase::hang) {
    ++t.hang;
    return;
  }
  ++t.finals;
  if ((r.flags & lc::kFlagEndEstimated) != 0) {
    ++t.finals_estimated;
    if (injected) ++t.finals_estimated_injected;
    return;
  }
  ++t.finals_per_loop[r.loop_index];
  const std::uint64_t duration_us = us_of(r.duration_ticks, r.tick_hz);
  if (injected) {
    std::vector<std::uint8_t>& h = t.hits[r.loop_index];
    const std::uint64_t i = schedule.index(r.loop_index, r.dispatch);
    if (i < h.size() && h[i] < 255) ++h[i];
    t.block_min_us = std::min(t.block_min_us, duration_us);
    t.block_max_us = std::max(t.block_max_us, duration_us);
    t.block_samples += r.samples_taken;
    t.block_samples_missed += r.samples_missed;
    return;
  }
  if (t.extra < sizeof t.extra_list / sizeof t.extra_list[0]) {
    t.extra_list[t.extra] = Extra{r.loop_index,     r.dispatch,          duration_us,       r.cause,
                                  r.flags,          us_of(r.window_ticks, r.tick_hz), r.thread_cpu_us,
                                  r.thread_wait_us, r.has_thread_cpu,    r.has_thread_wait};
  }
  ++t.extra;
  ++t.extra_by_cause[static_cast<std::size_t>(r.cause) & 3u];
  if ((r.flags & lc::kFlagUnwatched) != 0) ++t.extra_unwatched;
  // A short dispatch makes no system call: off the CPU it is runnable, waiting for a CPU.
  if (!r.has_thread_cpu || r.window_ticks == 0) {
    ++t.extra_no_evidence;
  } else if (r.thread_cpu_us * 10u < us_of(r.window_ticks, r.tick_hz)) {
    ++t.extra_off_cpu;
  } else {
    ++t.extra_on_cpu;
  }
  t.extra_min_us = std::min(t.extra_min_us, duration_us);
  t.extra_max_us = std::max(t.extra_max_us, duration_us);
}

// The interceptor: called by poll() on the watchdog thread with every report, including those
// the record ring then cannot hold.
struct Interception {
  const Schedule* schedule;
  Tally* tally;
  static void call(void* self, const lc::BlockRecord& record) {
    const auto* i = static_cast<const Interception*>(self);
    take(record, *i->schedule, *i->tally);
  }
};

// The consumer of the record ring (a sink would sit here): counts what it pops and the gaps in
// the report numbers, which are the records the ring dropped.
struct Consumed {
  std::uint64_t popped = 0;
  std::uint64_t gaps = 0;
  std::uint32_t last_report = 0;
};

std::uint64_t rss_kb() {
  char buffer[4096];
  std::size_t length = 0;
  std::uint64_t kb = 0;
  // "VmRSS:\t   1234 kB": lx::parse_status_field takes a bare number, so the unit is read here.
  if (lx::read_small_file("/proc/self/status", buffer, sizeof buffer, length) != 0) return 0;
  const char* line = std::strstr(buffer, "\nVmRSS:");
  if (line == nullptr) return 0;
  char* end = nullptr;
  kb = std::strtoull(line + 7, &end, 10);
  return std::strncmp(end, " kB", 3) == 0 ? kb : 0;
}

double seconds_since(const timespec& start) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - start.tv_sec) + static_cast<double>(now.tv_nsec - start.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const int parsed = parse_options(argc, argv, o);
  if (parsed == 3) return 0;
  if (parsed != 0) return 2;

  char text[256];
  lx::PlatformConfig pc;
  pc.sample_timeout_us = o.sample_timeout_us;  // default well below the 1 ms poll period
  const lx::Result p = g_platform.init(pc);
  if (!p.ok()) {
    std::fprintf(stderr, "loopcanary_soak: Platform::init: %s\n", lx::format(p, text, sizeof text));
    return 2;
  }
  lc::WatchdogConfig wc;
  wc.qualifier = "soak";
  if (g_watchdog.init(wc, g_platform.hal()) != lc::Status::ok) {
    std::fprintf(stderr, "loopcanary_soak: Watchdog::init failed\n");
    return 2;
  }
  const Schedule schedule{o.block_every, o.loops};
  const std::uint64_t per_loop = o.dispatches / o.loops;
  for (std::uint32_t l = 0; l < o.loops; ++l) {
    std::snprintf(g_names[l], sizeof g_names[l], "loop%02u", l);
    lc::MonitorConfig mc;
    mc.name = g_names[l];
    mc.tick_hz = lx::tick_hz();
    mc.threshold_us = o.threshold_ms * 1000u;
    mc.sample_interval_us = o.sample_ms * 1000u;
    mc.hang_limit_us = std::max<std::uint32_t>(5'000'000, mc.threshold_us);
    mc.context = &g_threads[l];
    const lc::Status s = g_monitors[l].init(mc);
    if (s != lc::Status::ok || g_watchdog.add(g_monitors[l]) != lc::Status::ok) {
      std::fprintf(stderr, "loopcanary_soak: Monitor::init or Watchdog::add failed for loop %u\n", l);
      return 2;
    }
  }

  // Everything the run needs is allocated before it starts (RSS is compared later).
  Tally tally;
  tally.hits.resize(o.loops);
  for (std::uint32_t l = 0; l < o.loops; ++l) tally.hits[l].assign(schedule.count(l, per_loop), 0);
  std::vector<std::uint64_t> rss(o.seconds + 16u, 0);
  std::size_t rss_samples = 0;

  const lx::ClockInfo& clock = lx::clock_info();
  const lc::tick_t block_ticks =
      static_cast<lc::tick_t>(static_cast<std::uint64_t>(o.block_ms) * clock.tick_hz / 1000u);
  std::vector<std::thread> loops;
  loops.reserve(o.loops);
  for (std::uint32_t l = 0; l < o.loops; ++l) {
    loops.emplace_back(loop_body, LoopArgs{l, per_loop, schedule, &o, block_ticks});
  }
  while (g_ready.load() != o.loops) std::this_thread::yield();

  Interception interception{&schedule, &tally};
  if (g_watchdog.add_interceptor(&Interception::call, &interception) != lc::Status::ok) {
    std::fprintf(stderr, "loopcanary_soak: Watchdog::add_interceptor failed\n");
    return 2;
  }
  lx::WatchdogThreadConfig tc;
  tc.period_us = kPollPeriodUs;
  tc.fifo_priority = 2;  // on time although the loops keep both cores busy; normal when not allowed
  lx::Result r = g_runner.start(g_watchdog, tc);
  const bool fifo = r.ok();
  if (r.error == lx::Error::thread_create_failed && r.sys_errno == EPERM) {
    tc.fifo_priority = 0;
    r = g_runner.start(g_watchdog, tc);
  }
  if (!r.ok()) {
    std::fprintf(stderr, "loopcanary_soak: WatchdogThread::start: %s\n", lx::format(r, text, sizeof text));
    return 2;
  }

  std::atomic<bool> consumer_stop{false};
  Consumed consumed;
  std::thread consumer([&] {
    lc::BlockRecord record;
    const timespec pause{0, 1'000'000};
    for (;;) {
      const bool last = consumer_stop.load(std::memory_order_acquire);
      while (g_watchdog.pop(record)) {
        ++consumed.popped;
        consumed.gaps += static_cast<std::uint32_t>(record.report - consumed.last_report - 1u);
        consumed.last_report = record.report;
      }
      if (last) break;
      nanosleep(&pause, nullptr);
    }
  });
  // The consumer drains every millisecond, at a real-time priority when allowed (below the
  // watchdog's), so the busy loops do not starve it.
  sched_param consumer_priority{};
  consumer_priority.sched_priority = 1;
  const bool consumer_fifo = pthread_setschedparam(consumer.native_handle(), SCHED_FIFO, &consumer_priority) == 0;

  std::printf("soak: %u loops, %" PRIu64 " dispatches (%" PRIu64 " per loop), a %u ms %s block every %" PRIu64
              " dispatches per loop, threshold %u ms, samples every %u ms (timeout %u us), watchdog %u us (%s), "
              "clock %s @ %u Hz, work %u\n",
              o.loops, per_loop * o.loops, per_loop, o.block_ms,
              o.kind == BlockKind::busy ? "busy" : o.kind == BlockKind::sleep ? "sleeping" : "busy/sleeping",
              o.block_every, o.threshold_ms, o.sample_ms, o.sample_timeout_us, kPollPeriodUs, fifo ? "SCHED_FIFO 2" : "normal priority", clock.name,
              clock.tick_hz, o.work);
  std::fflush(stdout);

  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  g_go.store(true, std::memory_order_release);
  rss[rss_samples++] = rss_kb();
  bool capped = false;
  double elapsed = 0;
  for (std::uint32_t second = 1;; ++second) {
    // About once per second (RSS sample, progress, cap), or as soon as every loop is done.
    bool all_done = false;
    for (int tick = 0; tick < 100 && !all_done; ++tick) {
      const timespec pause{0, 10'000'000};
      nanosleep(&pause, nullptr);
      all_done = g_finished.load(std::memory_order_acquire) == o.loops;
    }
    elapsed = seconds_since(start);
    if (all_done) break;
    if (rss_samples < rss.size()) rss[rss_samples++] = rss_kb();
    if (second % 30 == 0) {
      std::uint64_t d = 0;
      for (std::uint32_t l = 0; l < o.loops; ++l) d += g_monitors[l].stats().dispatches;
      std::printf("  %4.0f s: %" PRIu64 " dispatches, RSS %" PRIu64 " kB, %" PRIu64 " records\n", elapsed, d,
                  rss[rss_samples - 1], static_cast<std::uint64_t>(g_watchdog.stats().reports));
      std::fflush(stdout);
    }
    if (elapsed >= o.seconds && !g_stop.load()) {
      g_stop.store(true);
      capped = true;
    }
  }
  for (std::thread& t : loops) t.join();
  elapsed = seconds_since(start);
  if (rss_samples < rss.size()) rss[rss_samples++] = rss_kb();

  // A poll after every loop's last dispatch, then stop polling and drain the ring.
  const std::uint32_t polls_at_join = g_runner.stats().polls;
  while (static_cast<std::uint32_t>(g_runner.stats().polls - polls_at_join) < 3u) {
    const timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
  }
  g_runner.stop();
  consumer_stop.store(true, std::memory_order_release);
  consumer.join();

  // ---- Figures and checks --------------------------------------------------------------------
  int failures = 0;
  auto fail = [&failures](const char* what) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  };
  const lc::WatchdogStats ws = g_watchdog.stats();
  const lx::WatchdogThreadStats ts = g_runner.stats();
  const lx::PlatformStats ps = g_platform.stats();

  std::uint64_t ran = 0;
  std::uint64_t counted = 0;
  std::uint64_t blocks = 0;
  std::uint64_t hangs = 0;
  std::uint64_t injected = 0;
  std::uint64_t missing = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t loops_unbalanced = 0;
  std::uint64_t loop_notes_dropped = 0;
  for (std::uint32_t l = 0; l < o.loops; ++l) {
    const lc::LoopStats s = g_monitors[l].stats();
    const std::uint64_t done = g_done[l].load();
    ran += done;
    counted += s.dispatches;
    blocks += s.blocks;
    hangs += s.hangs;
    loop_notes_dropped += s.notes_dropped;
    const std::uint64_t n = schedule.count(l, done);
    injected += n;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint8_t h = tally.hits[l][i];
      if (h == 0 || h > 1) {
        if (missing + duplicated < 10) {
          std::printf("  loop %u dispatch %" PRIu64 ": injected block reported %u times as final\n", l,
                      schedule.first(l) + i * schedule.every, h);
        }
        (h == 0 ? missing : duplicated) += 1;
      }
    }
    if (s.blocks != tally.finals_per_loop[l] + s.notes_dropped) {
      if (loops_unbalanced < 10) {
        std::printf("  loop %u: LoopStats::blocks %u != finals %" PRIu64 " + notes_dropped %u\n", l, s.blocks,
                    tally.finals_per_loop[l], s.notes_dropped);
      }
      ++loops_unbalanced;
    }
  }
  const std::uint64_t finals_confirmed = tally.finals - tally.finals_estimated;
  const std::uint64_t rss_first = rss[0];
  std::uint64_t rss_max = 0;
  for (std::size_t i = 0; i < rss_samples; ++i) rss_max = std::max(rss_max, rss[i]);
  const std::uint64_t rss_last = rss[rss_samples - 1];
  const std::size_t warm = std::min<std::size_t>(o.warmup_s, rss_samples - 1);
  std::uint64_t rss_after_max = 0;
  for (std::size_t i = warm; i < rss_samples; ++i) rss_after_max = std::max(rss_after_max, rss[i]);
  const std::uint64_t rss_growth = rss_after_max - rss[warm];

  std::printf("dispatches: %" PRIu64 " in %.1f s: %.0f dispatches/s%s\n", ran, elapsed,
              static_cast<double>(ran) / elapsed, capped ? " (stopped by --seconds)" : "");
  std::printf("injected blocks: %" PRIu64 ", reported as final: %" PRIu64 " (missing %" PRIu64 ", reported twice or more %" PRIu64
              "), duration as reported %.1f..%.1f ms, samples %" PRIu64 " taken, %" PRIu64 " missed\n",
              injected, injected - missing, missing, duplicated,
              tally.block_min_us == ~0ull ? 0.0 : static_cast<double>(tally.block_min_us) / 1000.0,
              static_cast<double>(tally.block_max_us) / 1000.0, tally.block_samples, tally.block_samples_missed);
  std::printf("records: %" PRIu64 " reported (interceptor): %" PRIu64 " final (%" PRIu64 " end_estimated, %" PRIu64
              " of them injected), %" PRIu64 " in_progress (%" PRIu64 " injected), %" PRIu64 " hang\n",
              tally.seen, tally.finals, tally.finals_estimated, tally.finals_estimated_injected, tally.in_progress,
              tally.in_progress_injected, tally.hang);
  std::printf("record ring: %" PRIu64 " popped by the consumer (%s), %u dropped (ring full), %u pending\n",
              consumed.popped, consumer_fifo ? "SCHED_FIFO 1" : "normal priority", ws.records_dropped,
              g_watchdog.pending());
  std::printf("short dispatches reported as blocks: %" PRIu64, tally.extra);
  if (tally.extra != 0) {
    std::printf(" (%.1f..%.1f ms; thread off the CPU in the window %" PRIu64 ", on it %" PRIu64
                ", no CPU readings %" PRIu64 "; cause running %" PRIu64 ", waiting %" PRIu64 ", starved %" PRIu64
                ", unknown %" PRIu64 "; unwatched %" PRIu64 ")",
                static_cast<double>(tally.extra_min_us) / 1000.0, static_cast<double>(tally.extra_max_us) / 1000.0,
                tally.extra_off_cpu, tally.extra_on_cpu, tally.extra_no_evidence,
                tally.extra_by_cause[static_cast<int>(lc::Cause::running)],
                tally.extra_by_cause[static_cast<int>(lc::Cause::waiting)],
                tally.extra_by_cause[static_cast<int>(lc::Cause::starved)],
                tally.extra_by_cause[static_cast<int>(lc::Cause::unknown)], tally.extra_unwatched);
  }
  std::printf("\n");
  const std::uint64_t shown = std::min<std::uint64_t>(tally.extra, 10);  // the first ten
  for (std::uint64_t i = 0; i < shown; ++i) {
    const Extra& e = tally.extra_list[i];
    std::printf("  loop %u dispatch %u: %.1f ms, cause %s%s, window %.1f ms, thread CPU ", e.loop, e.dispatch,
                static_cast<double>(e.duration_us) / 1000.0, lc::to_string(e.cause),
                (e.flags & lc::kFlagUnwatched) != 0 ? " (unwatched)" : "", static_cast<double>(e.window_us) / 1000.0);
    if (e.has_cpu) {
      std::printf("%.2f ms", static_cast<double>(e.thread_cpu_us) / 1000.0);
    } else {
      std::printf("?");
    }
    if (e.has_wait) std::printf(", run-queue wait %.1f ms", static_cast<double>(e.thread_wait_us) / 1000.0);
    std::printf("\n");
  }
  std::printf("LoopStats: dispatches %" PRIu64 ", blocks %" PRIu64 ", hangs %" PRIu64 ", notes_dropped %" PRIu64 "\n",
              counted, blocks, hangs, loop_notes_dropped);
  std::printf("WatchdogStats: polls %u, reports %u, records_dropped %u, torn_snapshots %u (%.2e per poll and loop), "
              "samples_missed %u, suppressed %u, watches_busy %u, notes_dropped %u, finals_estimated %u\n",
              ws.polls, ws.reports, ws.records_dropped, ws.torn_snapshots,
              ws.polls == 0 ? 0.0 : static_cast<double>(ws.torn_snapshots) / ws.polls / o.loops, ws.samples_missed,
              ws.suppressed, ws.watches_busy, ws.notes_dropped, ws.finals_estimated);
  std::printf("watchdog thread: polls %u, overruns %u, max lateness %u us\n", ts.polls, ts.overruns,
              ts.max_lateness_us);
  std::printf("samples: requested %u, answered %u, missed: timeout %u, busy %u, blocked %u, gone %u, not attached %u, "
              "signal error %u, foreign handler %u\n",
              ps.samples_requested, ps.samples_answered, ps.missed_timeout, ps.missed_busy, ps.missed_blocked,
              ps.missed_gone, ps.missed_not_attached, ps.missed_signal_error, ps.missed_foreign_handler);
  std::printf("RSS: first %" PRIu64 " kB, max %" PRIu64 " kB, last %" PRIu64 " kB; after %zu s of warm-up: %" PRIu64
              " kB, growth %" PRIu64 " kB (bound %" PRIu64 " kB), %zu samples\n",
              rss_first, rss_max, rss_last, warm, rss[warm], rss_growth, o.rss_bound_kb, rss_samples);

  if (missing != 0) fail("an injected block was not reported as a final record");
  if (duplicated != 0) fail("an injected block was reported as final more than once");
  if (tally.wrong_event != 0) fail("a record's event does not match the schedule at its dispatch number");
  if (tally.extra_on_cpu != 0) fail("a short dispatch was reported as a block while its thread ran on the CPU");
  if (o.strict && tally.extra != 0) fail("--strict: a short dispatch was reported as a block");
  if (ran != counted) fail("LoopStats::dispatches (summed) differs from the dispatches the loops ran");
  if (loops_unbalanced != 0) fail("a loop's LoopStats::blocks != its final records + its notes_dropped");
  if (blocks != finals_confirmed + ws.suppressed + ws.notes_dropped) {
    fail("sum of LoopStats::blocks != final records without end_estimated + suppressed + notes_dropped");
  }
  if (ws.notes_dropped != loop_notes_dropped) fail("WatchdogStats::notes_dropped != sum of LoopStats::notes_dropped");
  if (ws.reports != tally.seen || tally.out_of_order != 0) {
    fail("the interceptor did not see reports 1..WatchdogStats::reports, each once, in order");
  }
  if (ws.reports != consumed.popped + ws.records_dropped + g_watchdog.pending()) {
    fail("reports != records popped + records_dropped + pending");
  }
  const std::uint64_t tail_dropped = ws.reports - consumed.last_report - g_watchdog.pending();
  if (consumed.gaps + tail_dropped != ws.records_dropped) {
    fail("gaps in the popped report numbers != records_dropped");
  }
  if (ws.finals_estimated != tally.finals_estimated) fail("finals_estimated != end_estimated finals reported");
  if (static_cast<std::uint64_t>(ws.torn_snapshots) > static_cast<std::uint64_t>(ws.polls) * o.loops) {
    fail("more torn snapshots than loop snapshots taken");
  }
  if (rss_growth > o.rss_bound_kb) fail("RSS grew past the bound after warm-up");
  std::printf("soak: %s\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
