// SPDX-License-Identifier: MIT
// Hot-path cost on the device: instructions executed per begin()+end() pair and per back-to-back
// dispatch (next()), counted under QEMU
// -icount (virtual time = instructions x 2^shift ns, so a loop timed with SysTick counts
// instructions). On RISC-V: the mtime clock the port uses, and the read of mcycle (the clock it
// does not use) for comparison. On Cortex-M built once per clock configuration
// (LOOPCANARY_CORTEX_M_CLOCK):
//   DETECT   the default: both paths are counted, SysTick (what QEMU runs, since its CYCCNT does
//            not count) and CYCCNT (what silicon runs; forced here, its readings are then 0)
//   DWT      CYCCNT only, no source branch (the cheapest)
//   SYSTICK  SysTick only (the ARMv6-M clock)
// Prints "hot-path <what> = <n> instructions"; count_instructions.cmake prints the static
// disassembly of lc_bench_begin_end and lc_bench_next. Also prints the sizes of the core's objects.
#include "device_test.hpp"
#include "icount_stopwatch.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "device_port.hpp"

namespace lc = loopcanary;
namespace dp = loopcanary::device_port;
using lc::device_test::print;
using lc::device_test::print_u64;

constexpr lc::Event kBenchEvent{"bench"};

// The measured bodies, out of line so the loop around them is identical.
extern "C" __attribute__((noinline)) void lc_bench_empty(dp::PortMonitor& monitor) {
  __asm__ volatile("" ::"r"(&monitor) : "memory");
}
extern "C" __attribute__((noinline)) void lc_bench_begin_end(dp::PortMonitor& monitor) {
  monitor.begin(kBenchEvent);
  monitor.end();
}
// One back-to-back dispatch: ends the running one and begins the next with one clock read (the
// monitor is inside a dispatch around the measurement).
extern "C" __attribute__((noinline)) void lc_bench_next(dp::PortMonitor& monitor) { monitor.next(kBenchEvent); }
extern "C" __attribute__((noinline)) void lc_bench_clock(dp::PortMonitor& monitor) {
  __asm__ volatile("" ::"r"(dp::Clock::now()), "r"(&monitor) : "memory");
}
#if defined(__riscv)
// The other clock a RISC-V port could use: the cycle counter, one CSR read.
extern "C" __attribute__((noinline)) void lc_bench_mcycle(dp::PortMonitor& monitor) {
  std::uint32_t cycles;
  __asm__ volatile("csrr %0, mcycle" : "=r"(cycles));
  __asm__ volatile("" ::"r"(cycles), "r"(&monitor) : "memory");
}
#endif

namespace {

constexpr std::uint32_t kIterations = 20'000;
dp::PortMonitor g_monitor;

// Instructions (x100) of one call of `body` beyond an empty call; fails the test if the
// stopwatch wrapped.
std::uint64_t instructions_x100(void (*body)(dp::PortMonitor&)) {
  bool wrapped = false;
  const std::uint64_t x100 =
      lc::device_test::instructions_x100<dp::PortMonitor&>(body, &lc_bench_empty, kIterations, wrapped, g_monitor);
  DT_EXPECT(!wrapped);
  return x100;
}

void print_figure(const char* what, std::uint64_t x100) { lc::device_test::print_instructions("hot-path", what, x100); }

// Instructions per back-to-back dispatch, measured inside one stream of them.
void print_next(const char* what) {
  const std::uint32_t before = g_monitor.stats().dispatches;
  g_monitor.begin(kBenchEvent);
  const std::uint64_t x100 = instructions_x100(&lc_bench_next);
  g_monitor.end();
  DT_EXPECT(g_monitor.stats().dispatches - before > kIterations);  // every next() ended one
  print_figure(what, x100);
}

}  // namespace

DT_TEST(HotPath, begin_end_instruction_count) {
  lc::device_test::start_stopwatch();
  lc::MonitorConfig config;
#if defined(__riscv)
  config.tick_hz = lc::board::kTimerHz;
#else
  config.tick_hz = lc::board::kCoreHz;
#endif
  DT_ASSERT_EQ(g_monitor.init(config), lc::Status::ok);
#if defined(__riscv)
  print_figure("clock read (mtime)", instructions_x100(&lc_bench_clock));
  print_figure("clock read (mcycle, for comparison)", instructions_x100(&lc_bench_mcycle));
  print_figure("begin+end (mtime)", instructions_x100(&lc_bench_begin_end));
  print_next("next, back to back (mtime)");
#elif LOOPCANARY_CORTEX_M_CLOCK == LOOPCANARY_CORTEX_M_CLOCK_DWT
  print_figure("clock read (CYCCNT only)", instructions_x100(&lc_bench_clock));
  print_figure("begin+end (CYCCNT only)", instructions_x100(&lc_bench_begin_end));
  print_next("next, back to back (CYCCNT only)");
#elif LOOPCANARY_CORTEX_M_CLOCK == LOOPCANARY_CORTEX_M_CLOCK_SYSTICK || !LOOPCANARY_CORTEX_M_HAS_DWT
  print_figure("clock read (SysTick only)", instructions_x100(&lc_bench_clock));
  print_figure("begin+end (SysTick only)", instructions_x100(&lc_bench_begin_end));
  print_next("next, back to back (SysTick only)");
#else
  dp::detail::g_clock.use_dwt = false;
  print_figure("clock read (detect: SysTick)", instructions_x100(&lc_bench_clock));
  print_figure("begin+end (detect: SysTick)", instructions_x100(&lc_bench_begin_end));
  dp::detail::g_clock.use_dwt = true;  // the path silicon with a cycle counter takes
  print_figure("clock read (detect: CYCCNT)", instructions_x100(&lc_bench_clock));
  print_figure("begin+end (detect: CYCCNT)", instructions_x100(&lc_bench_begin_end));
  print_next("next, back to back (detect: CYCCNT)");
  dp::detail::g_clock.use_dwt = false;
#endif
  DT_EXPECT_EQ(g_monitor.stats().blocks, 0u);
}

DT_TEST(Sizes, per_configuration) {
  struct Size {
    const char* what;
    std::size_t bytes;
  };
  const Size sizes[] = {
      {"Monitor", sizeof(lc::Monitor)},
      {"PortMonitor (the port's)", sizeof(dp::PortMonitor)},
      {"Watchdog per loop (detail::WatchdogTrack)", sizeof(lc::detail::WatchdogTrack)},
      {"RAM per loop (PortMonitor + WatchdogTrack)", sizeof(dp::PortMonitor) + sizeof(lc::detail::WatchdogTrack)},
      {"Watchdog per watch (detail::Watch)", sizeof(lc::detail::Watch)},
      {"  of which stack samples (StackSamples)", sizeof(lc::StackSamples)},
      {"Sample", sizeof(lc::Sample)},
      {"BlockRecord", sizeof(lc::BlockRecord)},
      {"Watchdog (capacity-free part)", sizeof(lc::Watchdog)},
      {"StaticWatchdog<1, 4>", sizeof(lc::StaticWatchdog<1, 4>)},
  };
  print("sizes: LOOPCANARY_MAX_SAMPLES=");
  print_u64(lc::kMaxSamples);
  print(" MAX_FRAMES=");
  print_u64(lc::kMaxFrames);
  print(" SCOPE_DEPTH=");
  print_u64(lc::kScopeDepth);
  print(" NOTE_CAPACITY=");
  print_u64(lc::kNoteCapacity);
  print(" TOP_FRAMES=");
  print_u64(lc::kTopFrames);
  print(" HISTOGRAM=");
  print_u64(lc::kHistogram ? 1u : 0u);
  print("\n");
  for (const Size& s : sizes) {
    print("sizeof ");
    print(s.what);
    print(" = ");
    print_u64(s.bytes);
    print("\n");
  }
  DT_EXPECT_GT(sizeof(lc::Monitor), 0u);
}

int main() { return lc::device_test::run_all(&lc::board::write); }
