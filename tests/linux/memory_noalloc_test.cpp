// SPDX-License-Identifier: MIT
// No-allocation test of the Linux port's memory reading (the watchdog's path through
// Hal::read_memory): every global allocation function is replaced by the counting one of
// tests/noalloc_counter.cpp, and reading the resident set, the heap and a loop thread's stack
// high-water mark through Platform::hal() allocates nothing. A positive control first: the
// counter sees an allocation made inside a section in this executable.
//
// Not built under the sanitizers (LOOPCANARY_NOALLOC_TEST).
#include <gtest/gtest.h>

#include <cstdlib>

#include "loopcanary/monitor.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/memory.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "noalloc_counter.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

TEST(LinuxMemoryNoAlloc, CounterSeesAnAllocation) {
  noalloc::MeasuredSection section;
  void* p = std::malloc(64);
  noalloc::escape(p);
  std::free(p);
  section.stop();
  EXPECT_EQ(section.allocations(), 1u);
  EXPECT_EQ(section.deallocations(), 1u);
}

TEST(LinuxMemoryNoAlloc, ReadMemoryAllocatesNothing) {
  lx::Platform platform;
  lx::PlatformConfig config;
  config.heap_reading = true;  // the whole path, mallinfo2() included
  ASSERT_TRUE(platform.init(config).ok());
  lx::LoopThread thread;
  ASSERT_TRUE(thread.attach().ok());
  lx::PortMonitor monitor;
  lc::MonitorConfig mc;
  mc.name = "noalloc";
  mc.tick_hz = lx::tick_hz();
  mc.context = &thread;
  ASSERT_EQ(monitor.init(mc), lc::Status::ok);
  const lc::Hal hal = platform.hal();
  ASSERT_NE(hal.read_memory, nullptr);

  lc::MemoryReading readings[3] = {};
  noalloc::MeasuredSection section;
  for (lc::MemoryReading& r : readings) hal.read_memory(hal.context, monitor, &r);
  section.stop();
  thread.detach();

  EXPECT_EQ(section.allocations(), 0u);
  EXPECT_EQ(section.deallocations(), 0u);
  for (const lc::MemoryReading& r : readings) {
    // Every value this port gives was read: the path measured is the whole one.
    for (const lc::MemoryValue v : {lc::kMemoryResident, lc::kMemoryResidentPeak, lc::kMemoryHeapUsed,
                                    lc::kMemoryStackPeak, lc::kMemoryStackSize}) {
      EXPECT_TRUE(r.has(v)) << "value " << int{v};
    }
  }
}
