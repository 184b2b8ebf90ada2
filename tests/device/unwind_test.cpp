// SPDX-License-Identifier: MIT
// Device test: whole call chains from stack evidence. A StaticEvidenceWatchdog in the SysTick
// interrupt sends each sample with its stack evidence (the interrupted SP, LR, r7 and the stack
// words that may be return addresses: LOOPCANARY_STACK_WORDS); the host tool decodes the capture
// with the firmware's ELF, unwinds every sample with its call-frame information and symbolises
// the chains. check_firmware.cmake then requires, over every sample of the block (its stack
// table), the chain the firmware is in: lc_unwind_handler -> lc_chain_1 -> ... -> lc_chain_6,
// root to leaf, in at least 95 % of them (measured: all); and the block's culprit (`loopcanary
// report`) is lc_chain_6, the user's innermost function, for at least 80 % of its samples
// (measured 94.6 %; the rest are in lc_leaf_tiny, a user function too), although most samples
// land in the compiler's 64-bit division helper (__aeabi_uldivmod, __udivmoddi4) that it calls:
// decoded without the ELF's CFI (PC and LR only) its share is 19.5 %.
//
// Figures (docs/benchmarks.md, "Stack evidence"): a first block of 100 ms (event slow_pc_lr) runs
// with the port's capture_words switched off by a wrapper (samples of PC and LR only), the
// second with it on; the firmware prints the SysTick interrupt's ticks per poll in each (every
// poll samples: the sample interval is the poll period), the ticks capture_words itself takes per
// sample and the words it finds: "lc-unwind-figures ...". Under -icount a tick (40 ns at 25 MHz)
// is 40 / 2^LC_ICOUNT_SHIFT instructions.
//
// Built with LC_RECORDS=1 (device.unwind_records, device.unwind_records_o2) the records road
// does the same: a StaticWatchdog keeps each top entry's stack evidence in its records (the
// samples of an entry had the same words), the records leave as block packets, and the host
// unwinds each entry once for all its samples.
//
// The chain's functions (call_chain.cpp) have frames of several shapes (callee-saved registers
// only, locals, an array on the stack), and lc_leaf_tiny, called in every round, is mostly prologue and
// epilogue (three registers pushed and popped around two instructions): samples land there on
// purpose and must unwind as well as any other. Built at -Os and at -O2 (device.unwind_o2), with
// LTO in the cortex-m4f workflow: noipa keeps every function of the chain a function of its own.
#include <cstdint>

#include "call_chain.hpp"
#include "device_report.hpp"
#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/cortex_m.hpp"

#ifndef LC_CAPTURE
#define LC_CAPTURE "unwind_test.lcb"
#endif
#ifndef LC_RECORDS
#define LC_RECORDS 0
#endif

namespace lc = loopcanary;
namespace cm = loopcanary::cortex_m;
namespace board = loopcanary::board;
using lc::device_report::check;

namespace {

constexpr lc::Event kShort{"short_handler"};
constexpr lc::Event kSlow{"slow_handler"};
constexpr lc::Event kSlowPcLr{"slow_pc_lr"};

#if LC_RECORDS
// Each block's in-progress and final records, drained at the end.
lc::StaticWatchdog<1, 4> g_watchdog;
#else
// Plain RAM (not the crash box): room for every sample of the block, which nothing drains while
// the handler runs.
lc::StaticEvidenceRing<32768> g_ring;
lc::StaticEvidenceWatchdog<1> g_watchdog;
#endif
cm::PortMonitor g_monitor;

// The port's capture_words behind a switch, timed (SysTick context).
bool (*g_port_words)(void*, const lc::Monitor&, lc::StackEvidence*) = nullptr;
bool g_words_on = false;
std::uint64_t g_words_ticks = 0;
std::uint32_t g_words_calls = 0;
std::uint32_t g_words_found = 0;

bool timed_words(void* context, const lc::Monitor& loop, lc::StackEvidence* out) {
  if (!g_words_on) return false;
  const lc::tick_t begin = cm::Clock::now();
  const bool got = g_port_words(context, loop, out);
  g_words_ticks += lc::ticks_between(begin, cm::Clock::now());
  ++g_words_calls;
  g_words_found += out->count;
  return got;
}

volatile std::uint32_t g_sink = 0;

// "lc-unwind-figures": ticks per poll without and with stack evidence, capture_words' ticks and
// words per sample.
void print_figures(const cm::PortStats& before, const cm::PortStats& between, const cm::PortStats& after) {
  using lc::device_test::print;
  using lc::device_test::print_u64;
  const std::uint32_t polls_without = between.polls - before.polls;
  const std::uint32_t polls_with = after.polls - between.polls;
  check(polls_without > 0 && polls_with > 0 && g_words_calls > 0, "both blocks polled");
  if (polls_without == 0 || polls_with == 0 || g_words_calls == 0) return;
  print("lc-unwind-figures ticks_per_poll_without=");
  print_u64((between.poll_ticks_total - before.poll_ticks_total) / polls_without);
  print(" ticks_per_poll_with=");
  print_u64((after.poll_ticks_total - between.poll_ticks_total) / polls_with);
  print(" capture_words_ticks=");
  print_u64(g_words_ticks / g_words_calls);
  print(" samples=");
  print_u64(g_words_calls);
  print(" words_per_sample_x10=");
  print_u64(std::uint64_t{g_words_found} * 10u / g_words_calls);
  print(" icount_shift=");
  print_u64(LC_ICOUNT_SHIFT);
  print("\n");
}

}  // namespace

int main() {
  lc::device_report::start("unwind_test");
#if !LC_RECORDS
  check(g_ring.open(board::reset_cause()) == lc::CrashBoxStatus::discarded, "a fresh ring");
#endif
  lc::device_report::init_port(0);
  lc::MonitorConfig config = lc::device_report::loop_config(20'000);
  config.arm_permille = 250;
  config.sample_interval_us = 1'000;
  check(g_monitor.init(config) == lc::Status::ok, "monitor init");
  lc::WatchdogConfig dog;
  dog.qualifier = board::name();
  lc::Hal hal = cm::make_hal();
  g_port_words = hal.capture_words;
  check(g_port_words != nullptr, "the port captures stack evidence (LOOPCANARY_STACK_WORDS > 0)");
  hal.capture_words = &timed_words;
#if LC_RECORDS
  check(g_watchdog.init(dog, hal) == lc::Status::ok, "watchdog init");
#else
  check(g_watchdog.init(dog, hal, g_ring) == lc::Status::ok, "evidence watchdog init");
#endif
  check(g_watchdog.add(g_monitor) == lc::Status::ok, "watchdog add");
  cm::attach(&g_watchdog);

  for (int i = 0; i < 3; ++i) {
    LOOPCANARY_DISPATCH(g_monitor, kShort);
    g_sink = lc_leaf_tiny(g_sink);
  }
  const cm::PortStats before = cm::stats();
  {
    LOOPCANARY_DISPATCH(g_monitor, kSlowPcLr);
    lc_unwind_handler(100u * (cm::tick_hz() / 1000u));  // 100 ms, PC and LR only
  }
  for (int i = 0; i < 5; ++i) cm::idle_wait();
  const cm::PortStats between = cm::stats();
  g_words_on = true;
  {
    LOOPCANARY_DISPATCH(g_monitor, kSlow);
    lc_unwind_handler(250u * (cm::tick_hz() / 1000u));  // 250 ms
  }
  for (int i = 0; i < 5; ++i) cm::idle_wait();  // the watchdog sees the end
  cm::attach(nullptr);
  const cm::PortStats after = cm::stats();
  print_figures(before, between, after);

  const cm::PortStats port = cm::stats();
#if LC_RECORDS
  check(g_watchdog.stats().records_dropped == 0, "the ring kept every record");
#else
  const lc::EvidenceRingStats ring = g_ring.stats();
  check(ring.dropped == 0, "the ring kept every packet");
#endif
  check(g_monitor.stats().blocks == 2, "two blocks");
  check(g_words_calls > 150 && g_words_found >= 6u * g_words_calls,
        "every sample of the second block carries at least the chain's six return addresses");
  check(port.stack_words == g_words_found, "the port counted the words it found");
#if LC_RECORDS
  lc::device_report::send_capture(g_watchdog, LC_CAPTURE);
#else
  lc::device_test::print("lc-unwind packets=");
  lc::device_test::print_u64(ring.pushed);
  lc::device_test::print("\n");
  lc::device_report::send_capture(g_ring, LC_CAPTURE);
#endif
  board::exit(lc::device_report::finish());
}
