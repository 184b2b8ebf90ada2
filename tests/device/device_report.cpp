// SPDX-License-Identifier: MIT
#include "device_report.hpp"

#include "device_test.hpp"
#include "loopcanary/format.hpp"
#include "loopcanary_board.hpp"
#include "loopcanary_port.hpp"

namespace loopcanary::device_report {
namespace {

using device_test::print;
using device_test::print_hex;
using device_test::print_u64;

std::uint32_t g_failures = 0;
char g_text[2048];  // one formatted record (static: this may run in the SysTick interrupt)

}  // namespace

void start(const char* firmware) noexcept {
  device_test::set_output(&board::write);
  print(firmware);
  print(" on ");
  print(board::name());
  print("\n");
}

void check(bool passed, const char* what) noexcept {
  print(passed ? "check ok: " : "check FAILED: ");
  print(what);
  print("\n");
  if (!passed) ++g_failures;
}

void print_record(const BlockRecord& record) noexcept {
  const FormatResult result = format_text(record, g_text, sizeof g_text);
  print(g_text);
  if (result.truncated) print("(record text truncated)\n");
}

namespace {

struct SampledPc {
  Frame pc;
  std::uint32_t count;
};
Hal g_inner{};
SampledPc g_pcs[128];
std::uint32_t g_pc_count = 0;
std::uint32_t g_pc_other = 0;

std::size_t recording_capture(void* /*context*/, const Monitor& loop, Frame* pcs, std::size_t max) {
  const std::size_t n = g_inner.capture_stack(g_inner.context, loop, pcs, max);
  if (n == 0) return 0;
  for (std::uint32_t i = 0; i < g_pc_count; ++i) {
    if (g_pcs[i].pc == pcs[0]) {
      ++g_pcs[i].count;
      return n;
    }
  }
  if (g_pc_count < sizeof g_pcs / sizeof g_pcs[0]) {
    g_pcs[g_pc_count++] = SampledPc{pcs[0], 1};
  } else {
    ++g_pc_other;
  }
  return n;
}

}  // namespace

Hal recording_hal(const Hal& hal) noexcept {
  g_inner = hal;
  Hal spy = hal;
  if (hal.capture_stack != nullptr) spy.capture_stack = &recording_capture;
  return spy;
}

void print_sampled_pcs() noexcept {
  for (std::uint32_t i = 0; i < g_pc_count; ++i) {
    print("lc-pc ");
    print_hex(g_pcs[i].pc);
    print(" ");
    print_u64(g_pcs[i].count);
    print("\n");
  }
  print("lc-pc-other ");
  print_u64(g_pc_other);
  print("\n");
}

void print_port_stats() noexcept {
  const cortex_m::PortStats s = cortex_m::stats();
  print("port: ticks=");
  print_u64(s.ticks);
  print(" polls=");
  print_u64(s.polls);
  print(" captures=");
  print_u64(s.captures);
  print(" refused_handler=");
  print_u64(s.refused_handler);
  print(" refused_stack=");
  print_u64(s.refused_stack);
  print(" poll_ticks_max=");
  print_u64(s.poll_ticks_max);
  print(" poll_ticks_mean=");
  print_u64(s.polls != 0 ? s.poll_ticks_total / s.polls : 0);
  print(" idle_waits=");
  print_u64(s.idle_waits);
  print("\n");
}

int finish() noexcept {
  if (g_failures == 0) {
    print("verdict: PASS\n");
    return 0;
  }
  print("verdict: FAIL (");
  print_u64(g_failures);
  print(" checks)\n");
  return 1;
}

}  // namespace loopcanary::device_report
