// SPDX-License-Identifier: MIT
// The Linux port's memory context (loopcanary/port/linux/memory.hpp): the /proc/<pid>/status "kB"
// fields against fixture files, good and malformed (each refusal names its field and line); the
// stack high-water mark from resident pages, on a stack the test maps itself so it knows which
// pages were touched; and Hal::read_memory through Platform::hal() on a live loop thread.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "loopcanary/monitor.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/memory.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "loopcanary/port/linux/proc.hpp"
#include "proc_fixture.hpp"

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

namespace {

using lx::test::Fixture;

lx::StatusFailure memory_of(const char* fixture, lx::StatusMemory& out) {
  Fixture f(fixture);
  return lx::parse_status_memory(f.text, f.length, out);
}

std::string message(const lx::StatusFailure& failure) {
  char text[160];
  return lx::format(failure, "/proc/self/status", text, sizeof text);
}

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// Writes `bytes` of stack below the caller's frame, one page-sized frame at a time, so every
// page down to that depth is touched.
__attribute__((noinline)) void touch_stack(std::size_t bytes) {
  volatile char frame[1024];
  frame[0] = 1;
  frame[sizeof frame - 1] = 1;
  if (bytes > sizeof frame) touch_stack(bytes - sizeof frame);
  // The frame escapes (so it is whole: clang under TSan shrinks an unescaped one) and the
  // statement after the call keeps every level's frame (no tail call).
  asm volatile("" : : "r"(frame) : "memory");
}

}  // namespace

TEST(ProcStatusMemory, ParsesResidentSetAndPeakInBytes) {
  lx::StatusMemory memory;
  const lx::StatusFailure failure = memory_of("proc_status_memory.txt", memory);
  ASSERT_EQ(failure.error, lx::ParseError::ok) << message(failure);
  EXPECT_EQ(memory.resident, 5120u * 1024u);
  EXPECT_EQ(memory.resident_peak, 5524u * 1024u);
  EXPECT_EQ(message(failure), "/proc/self/status: ok");
}

TEST(ProcStatusMemory, BadContentIsRefusedNamingTheFieldAndLine) {
  struct Case {
    const char* fixture;
    lx::ParseError error;
    const char* field;
    std::size_t line;
  };
  const Case cases[] = {
      {"proc_status_memory_no_unit.txt", lx::ParseError::missing_field, "VmRSS", 22},
      {"proc_status_memory_bad_unit.txt", lx::ParseError::bad_field, "VmRSS", 22},
      {"proc_status_memory_overflow.txt", lx::ParseError::bad_field, "VmRSS", 22},
      {"proc_status_memory_truncated.txt", lx::ParseError::truncated, "VmRSS", 22},
      {"proc_status_memory_bad_peak.txt", lx::ParseError::bad_field, "VmHWM", 21},
      {"proc_status_memory_kernel_thread.txt", lx::ParseError::missing_line, "VmRSS", 25},  // the last line
      {"empty.txt", lx::ParseError::empty, "VmRSS", 0},
  };
  for (const Case& c : cases) {
    lx::StatusMemory memory;
    memory.resident = 42;
    const lx::StatusFailure failure = memory_of(c.fixture, memory);
    EXPECT_EQ(failure.error, c.error) << c.fixture;
    EXPECT_STREQ(failure.field, c.field) << c.fixture;
    EXPECT_EQ(failure.line, c.line) << c.fixture;
    EXPECT_EQ(memory.resident, 42u) << c.fixture << ": a refused parse leaves the output untouched";
    const std::string expected = "/proc/self/status line " + std::to_string(c.line) + " (" + c.field +
                                 "): " + lx::describe(c.error);
    EXPECT_EQ(message(failure), expected) << c.fixture;
  }
}

TEST(ProcStatusMemory, UnitAndRangeOfOneField) {
  std::uint64_t bytes = 7;
  std::size_t line = 0;
  const std::string largest = "VmRSS:\t18014398509481983 kB\n";  // (2^54 - 1) KiB: 2^64 - 1024 bytes
  ASSERT_EQ(lx::parse_status_kib(largest.data(), largest.size(), "VmRSS", bytes, line), lx::ParseError::ok);
  EXPECT_EQ(bytes, ~std::uint64_t{0} - 1023u);
  EXPECT_EQ(line, 1u);
  const std::string padded = "Name:\tx\nVmRSS: \t 12 kB \t\n";
  ASSERT_EQ(lx::parse_status_kib(padded.data(), padded.size(), "VmRSS", bytes, line), lx::ParseError::ok);
  EXPECT_EQ(bytes, 12u * 1024u);
  EXPECT_EQ(line, 2u);
  bytes = 7;
  for (const char* bad : {"VmRSS:\t12 kBx\n", "VmRSS:\t12 kB 3\n", "VmRSS:\t12kB\n", "VmRSS:\t12 KB\n", "VmRSS:\t-12 kB\n",
                          "VmRSS:\tkB\n"}) {
    EXPECT_EQ(lx::parse_status_kib(bad, std::strlen(bad), "VmRSS", bytes, line), lx::ParseError::bad_field) << bad;
  }
  const char* no_value = "VmRSS:\t\n";
  EXPECT_EQ(lx::parse_status_kib(no_value, std::strlen(no_value), "VmRSS", bytes, line), lx::ParseError::missing_field);
  EXPECT_EQ(bytes, 7u) << "refusals leave the output untouched";
  // The key must start its line and be followed by ':' (VmRSS is not RssVmRSS or VmRSSx).
  const char* other_keys = "RssVmRSS:\t1 kB\nVmRSSx:\t2 kB\n";
  EXPECT_EQ(lx::parse_status_kib(other_keys, std::strlen(other_keys), "VmRSS", bytes, line), lx::ParseError::missing_line);
  EXPECT_EQ(line, 2u);
}

TEST(ProcStatusMemory, EveryPrefixOfAGoodFileIsRefusedOrCorrect) {
  Fixture f("proc_status_memory.txt");
  for (std::size_t n = 0; n <= f.length; ++n) {
    lx::StatusMemory memory;
    const lx::StatusFailure failure = lx::parse_status_memory(f.text, n, memory);
    if (failure.error == lx::ParseError::ok) {
      EXPECT_EQ(memory.resident, 5120u * 1024u) << n;
      EXPECT_EQ(memory.resident_peak, 5524u * 1024u) << n;
    } else {
      EXPECT_TRUE(failure.error == lx::ParseError::truncated || failure.error == lx::ParseError::missing_line ||
                  failure.error == lx::ParseError::empty)
          << n << ": " << message(failure);
    }
  }
}

TEST(StackHighWater, IsTheLowestResidentPageOfTheRange) {
  const std::size_t page = page_size();
  constexpr std::size_t kPages = 600;  // more than two mincore() stretches
  void* map = mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  const auto low = reinterpret_cast<std::uintptr_t>(map);
  const std::uintptr_t high = low + kPages * page;
  std::uint64_t bytes = 0;
  int sys_errno = 0;
  EXPECT_FALSE(lx::read_stack_high_water(low, high, bytes, sys_errno)) << "nothing touched: unknown, not 0";
  EXPECT_EQ(sys_errno, 0);
  static_cast<volatile char*>(map)[kPages * page - 1] = 1;  // the top page
  ASSERT_TRUE(lx::read_stack_high_water(low, high, bytes, sys_errno));
  EXPECT_EQ(bytes, page);
  static_cast<volatile char*>(map)[(kPages - 400) * page + 5] = 1;  // 400 pages down, a hole above it
  ASSERT_TRUE(lx::read_stack_high_water(low, high, bytes, sys_errno));
  EXPECT_EQ(bytes, 400u * page);
  // A range that starts inside a page counts from `low`, never more than the range.
  ASSERT_TRUE(lx::read_stack_high_water(high - 400 * page + 8, high, bytes, sys_errno));
  EXPECT_EQ(bytes, 400u * page - 8u);
  EXPECT_FALSE(lx::read_stack_high_water(high, high, bytes, sys_errno)) << "an empty range";
  EXPECT_FALSE(lx::read_stack_high_water(high, low, bytes, sys_errno)) << "a reversed range";
  munmap(map, kPages * page);
}

TEST(StackHighWater, UnmappedBottomCountsAsUntouched) {
  // The main thread's stack: its range reaches below the part the kernel has mapped so far.
  const std::size_t page = page_size();
  constexpr std::size_t kPages = 700;
  constexpr std::size_t kUnmapped = 300;  // not a multiple of the 256-page stretch
  char* map = static_cast<char*>(
      mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(static_cast<void*>(map), MAP_FAILED);
  ASSERT_EQ(munmap(map, kUnmapped * page), 0);
  const auto low = reinterpret_cast<std::uintptr_t>(map);
  const std::uintptr_t high = low + kPages * page;
  static_cast<volatile char*>(map)[kPages * page - 1] = 1;
  static_cast<volatile char*>(map)[(kUnmapped + 10) * page] = 1;  // 10 pages above the mapping's start
  std::uint64_t bytes = 0;
  int sys_errno = 0;
  ASSERT_TRUE(lx::read_stack_high_water(low, high, bytes, sys_errno)) << "errno " << sys_errno;
  EXPECT_EQ(bytes, (kPages - kUnmapped - 10) * page);
  ASSERT_EQ(munmap(map + kUnmapped * page, (kPages - kUnmapped) * page), 0);
  EXPECT_FALSE(lx::read_stack_high_water(low, high, bytes, sys_errno)) << "nothing mapped";
  EXPECT_EQ(sys_errno, 0) << "an unmapped range is untouched, not an error";
}

namespace {

// A loop thread on a stack the test maps (never touched before, so its resident pages are the
// ones this thread touches): attaches, reads its memory through the Hal, touches `depth`
// bytes of stack, reads again.
struct StackProbe {
  lx::Platform* platform = nullptr;
  std::size_t depth = 0;
  lc::MemoryReading before{};
  lc::MemoryReading after{};
  bool attached = false;
};

void* probe_thread(void* argument) {
  auto& probe = *static_cast<StackProbe*>(argument);
  lx::LoopThread thread;
  lx::ScopedLoopThread scoped(thread);
  probe.attached = scoped.result().ok();
  lx::PortMonitor monitor;
  lc::MonitorConfig mc;
  mc.name = "memory";
  mc.tick_hz = lx::tick_hz();
  mc.context = &thread;
  if (!probe.attached || monitor.init(mc) != lc::Status::ok) return nullptr;
  const lc::Hal hal = probe.platform->hal();
  hal.read_memory(hal.context, monitor, &probe.before);
  touch_stack(probe.depth);
  hal.read_memory(hal.context, monitor, &probe.after);
  return nullptr;
}

}  // namespace

TEST(LinuxMemory, HalReadsTheLoopThreadsStackHighWaterMark) {
  lx::Platform platform;
  ASSERT_TRUE(platform.init().ok());
  constexpr std::size_t kStack = 1024 * 1024;
  constexpr std::size_t kDepth = 256 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(stack, MAP_FAILED);
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstack(&attr, stack, kStack), 0);
  StackProbe probe;
  probe.platform = &platform;
  probe.depth = kDepth;
  pthread_t id;
  ASSERT_EQ(pthread_create(&id, &attr, &probe_thread, &probe), 0);
  ASSERT_EQ(pthread_join(id, nullptr), 0);
  pthread_attr_destroy(&attr);
  munmap(stack, kStack);
  ASSERT_TRUE(probe.attached);

  for (const lc::MemoryReading* r : {&probe.before, &probe.after}) {
    ASSERT_TRUE(r->has(lc::kMemoryStackSize));
    EXPECT_EQ(r->value[lc::kMemoryStackSize], kStack);
    ASSERT_TRUE(r->has(lc::kMemoryStackPeak));
    EXPECT_LE(r->value[lc::kMemoryStackPeak], kStack);
    EXPECT_FALSE(r->has(lc::kMemoryStackCurrent)) << "the port gives a high-water mark, not a current depth";
    EXPECT_FALSE(r->has(lc::kMemoryHeapFree)) << "no fixed free heap on Linux";
  }
  EXPECT_LT(probe.before.value[lc::kMemoryStackPeak], kDepth / 2) << "before the deep call";
  EXPECT_GE(probe.after.value[lc::kMemoryStackPeak], kDepth) << "after touching " << kDepth << " bytes";
  EXPECT_EQ(platform.memory().stats().stack_failures, 0u);
  EXPECT_EQ(platform.memory().stats().readings, 2u);
}

TEST(LinuxMemory, ResidentSetAndHeapOfThisProcess) {
  lx::Platform platform;
  lx::PlatformConfig config;
  config.heap_reading = true;
  ASSERT_TRUE(platform.init(config).ok());
  lc::MemoryReading before{};
  platform.memory().read(nullptr, before);
  constexpr std::size_t kBlock = 8 * 1024 * 1024;
  char* block = static_cast<char*>(std::malloc(kBlock));
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBlock);  // resident now
  asm volatile("" : : "r"(block) : "memory");
  lc::MemoryReading after{};
  platform.memory().read(nullptr, after);
  std::free(block);

  for (const lc::MemoryReading* r : {&before, &after}) {
    ASSERT_TRUE(r->has(lc::kMemoryResident) && r->has(lc::kMemoryResidentPeak) && r->has(lc::kMemoryHeapUsed));
    EXPECT_LE(r->value[lc::kMemoryResident], r->value[lc::kMemoryResidentPeak]);
    EXPECT_GT(r->value[lc::kMemoryResident], 0u);
    EXPECT_EQ(r->value[lc::kMemoryResident] % 1024u, 0u) << "kB times 1024";
    EXPECT_FALSE(r->has(lc::kMemoryStackSize) || r->has(lc::kMemoryStackPeak)) << "no loop thread given";
  }
  EXPECT_GE(after.value[lc::kMemoryHeapUsed], before.value[lc::kMemoryHeapUsed] + kBlock);
  EXPECT_GE(after.value[lc::kMemoryResident], before.value[lc::kMemoryResident] + kBlock / 2);
  const lx::MemoryStats stats = platform.memory().stats();
  EXPECT_EQ(stats.readings, 2u);
  EXPECT_EQ(stats.status_failures, 0u);
  EXPECT_EQ(stats.not_attached, 2u);
  EXPECT_EQ(stats.last_status_failure.error, lx::ParseError::ok);
}

TEST(LinuxMemory, HeapReadingIsOptIn) {
  lx::Platform platform;
  ASSERT_TRUE(platform.init().ok());
  lc::MemoryReading reading{};
  platform.memory().read(nullptr, reading);
  EXPECT_FALSE(reading.has(lc::kMemoryHeapUsed));
  EXPECT_TRUE(reading.has(lc::kMemoryResident)) << "the other values stay";
  lx::Platform defaults;
  EXPECT_FALSE(defaults.memory().heap_reading()) << "off unless turned on";
}

TEST(LinuxMemory, DetachedThreadHasNoStackValues) {
  lx::Platform platform;
  lx::LoopThread thread;
  ASSERT_TRUE(thread.attach().ok());
  lc::MemoryReading attached{};
  platform.memory().read(&thread, attached);
  thread.detach();
  lc::MemoryReading detached{};
  platform.memory().read(&thread, detached);
  EXPECT_TRUE(attached.has(lc::kMemoryStackSize));
  EXPECT_TRUE(attached.has(lc::kMemoryStackPeak)) << "the main thread's stack, partly unmapped below";
  EXPECT_LE(attached.value[lc::kMemoryStackPeak], attached.value[lc::kMemoryStackSize]);
  EXPECT_FALSE(detached.has(lc::kMemoryStackSize) || detached.has(lc::kMemoryStackPeak));
  EXPECT_EQ(platform.memory().stats().not_attached, 1u);
}
