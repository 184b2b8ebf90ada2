// SPDX-License-Identifier: MIT
// Instrumentation compiled out: this file is built with LOOPCANARY_ENABLED=0 (see
// tests/CMakeLists.txt). The macros must still compile against real arguments and do nothing.
#include <gtest/gtest.h>

#include "loopcanary/instrument.hpp"
#include "loopcanary/port/sim.hpp"

static_assert(LOOPCANARY_ENABLED == 0, "this test must be built with LOOPCANARY_ENABLED=0");

namespace {

constexpr loopcanary::Event kTick{"tick"};

TEST(CompiledOut, MacrosTypeCheckButStampNothing) {
  loopcanary::sim::VirtualTime time;
  loopcanary::sim::PortMonitor monitor{loopcanary::sim::Clock{time}};
  loopcanary::MonitorConfig config;
  config.tick_hz = loopcanary::sim::kTickHz;
  ASSERT_EQ(monitor.init(config), loopcanary::Status::ok);
  {
    LOOPCANARY_DISPATCH(monitor, kTick);
    LOOPCANARY_SCOPE(monitor, "work");
    LOOPCANARY_STAGE(monitor, "compute");
    time.advance(loopcanary::sim::ms(2000));
  }
  loopcanary::StampSnapshot snap;
  ASSERT_TRUE(monitor.snapshot(snap));
  EXPECT_EQ(snap.seq, 0u);
  EXPECT_EQ(monitor.stats().dispatches, 0u);
  EXPECT_EQ(monitor.stats().blocks, 0u);
  std::size_t depth = 99;
  const char* names[1];
  ASSERT_TRUE(monitor.scope_snapshot(names, 1, depth));
  EXPECT_EQ(depth, 0u);
  EXPECT_EQ(monitor.stats().stages_dropped, 0u) << "no mark was made, not even one refused";
}

TEST(CompiledOut, DrainTypeChecksButStampsNothing) {
  loopcanary::sim::VirtualTime time;
  loopcanary::sim::PortMonitor monitor{loopcanary::sim::Clock{time}};
  loopcanary::MonitorConfig config;
  config.tick_hz = loopcanary::sim::kTickHz;
  ASSERT_EQ(monitor.init(config), loopcanary::Status::ok);
  {
    LOOPCANARY_DRAIN(monitor, drain);
    drain.next(kTick);
    time.advance(loopcanary::sim::ms(2000));
    drain.next(kTick, 0u);
    drain.end();
    drain.next(kTick);
  }
  loopcanary::StampSnapshot snap;
  ASSERT_TRUE(monitor.snapshot(snap));
  EXPECT_EQ(snap.seq, 0u);
  const loopcanary::LoopStats s = monitor.stats();
  EXPECT_EQ(s.dispatches, 0u);
  EXPECT_EQ(s.unbalanced_ends, 0u);
  EXPECT_EQ(s.busy_ticks, 0u);
}

}  // namespace
