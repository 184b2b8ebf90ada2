// SPDX-License-Identifier: MIT
// Device test of the RISC-V port's stack sample: whole call chains from the frame-pointer
// chain, walked on the device. A handler calls lc_chain_1 -> ... -> lc_chain_6
// (call_chain.cpp; noipa: each a function of its own, with frames of several shapes), and
// lc_chain_6 computes until the clock passes a deadline, calling a tiny leaf and the compiler's 64-bit division helper (libgcc's
// __udivdi3, built without frame pointers) in every round. Each sample is mepc, the interrupted
// ra where it is the caller, and the return addresses of the chain from s0; with
// LOOPCANARY_MAX_FRAMES = 8 that holds the helper and all seven user functions. On the host,
// check_firmware.cmake requires the chain lc_unwind_handler -> lc_chain_1 -> ... -> lc_chain_6
// in >= 95 % of the block's samples and lc_chain_6 as the culprit (`loopcanary report`) of
// >= 80 % of them: a sample in the helper names lc_chain_6 through ra, one in the leaf through
// ra too, one in lc_chain_6 through its frame.
#include <cstdint>

#include "call_chain.hpp"
#include "device_port.hpp"
#include "device_report.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"

#ifndef LC_CAPTURE
#define LC_CAPTURE "frame_chain_test.lcb"
#endif

namespace lc = loopcanary;
namespace dp = loopcanary::device_port;
using lc::device_report::check;

namespace {

constexpr lc::Event kShort{"short_handler"};
constexpr lc::Event kSlow{"slow_handler"};

lc::StaticWatchdog<1, 4> g_watchdog;
dp::PortMonitor g_monitor;

volatile std::uint32_t g_sink = 0;

void on_report(void* /*context*/, const lc::BlockRecord& /*record*/) {}

}  // namespace

int main() {
  lc::device_report::start("frame_chain_test");
  lc::device_report::init_port(0);
  lc::MonitorConfig config = lc::device_report::loop_config(20'000);
  config.arm_permille = 250;
  config.sample_interval_us = 1'000;
  check(g_monitor.init(config) == lc::Status::ok, "monitor init");
  lc::WatchdogConfig dog;
  dog.qualifier = lc::board::name();
  check(g_watchdog.init(dog, dp::make_hal()) == lc::Status::ok, "watchdog init");
  lc::device_report::watch(g_watchdog, g_monitor, &on_report);

  for (int i = 0; i < 3; ++i) {
    LOOPCANARY_DISPATCH(g_monitor, kShort);
    g_sink = lc_leaf_tiny(g_sink);
  }
  {
    LOOPCANARY_DISPATCH(g_monitor, kSlow);
    lc_unwind_handler(100u * (dp::tick_hz() / 1000u));  // 100 ms
  }
  for (int i = 0; i < 5; ++i) dp::idle_wait();  // the watchdog sees the end
  dp::attach(nullptr);
  const dp::PortStats port = dp::stats();
  check(g_monitor.stats().blocks == 1, "one block");
  check(port.captures >= 80, "samples every 1 ms past the arm point");
  check(port.chain_frames >= 6u * port.captures, "every sample walked at least six frames of the chain");
  lc::device_report::print_port_stats();
  lc::device_report::send_capture(g_watchdog, LC_CAPTURE);
  return lc::device_report::finish();
}
