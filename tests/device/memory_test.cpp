// SPDX-License-Identifier: MIT
// The Cortex-M port's memory context on the device (loopcanary/port/cortex_m/stack.hpp):
// init_memory refuses bad bounds naming the field; a painted stack's high-water mark covers a
// recursion of known depth and stays below the stack's size; read_memory's scan is bounded per call
// and catches up within one pass; the heap values come from the firmware's callback only; a loop on
// another stack gets no stack values.
#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/cortex_m.hpp"
#include "loopcanary/port/cortex_m/stack.hpp"

#include <cstring>

namespace lc = loopcanary;
namespace cm = loopcanary::cortex_m;

extern "C" std::uint32_t __stack_top[];  // mps2.ld: the main stack's top

namespace {

constexpr std::uintptr_t kStackBytes = 64 * 1024;  // the stack this test declares (far above .bss)
constexpr std::uint32_t kDepth = 8 * 1024;          // bytes the recursion adds below its caller

cm::StackBounds test_stack() {
  const auto top = reinterpret_cast<std::uintptr_t>(__stack_top);
  return cm::StackBounds{top - kStackBytes, top};
}

std::uintptr_t stack_pointer() {
  std::uintptr_t sp = 0;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  return sp;
}

// Recurses until `bytes` of stack lie below the stack pointer it started at; writes every word
// of every frame's array.
__attribute__((noinline)) std::uint32_t recurse(std::uintptr_t start, std::uint32_t bytes) {
  volatile std::uint32_t frame[32];
  for (std::uint32_t i = 0; i < 32; ++i) frame[i] = i;
  std::uint32_t sum = frame[31];
  if (start - stack_pointer() < bytes) sum += recurse(start, bytes);
  __asm__ volatile("" ::: "memory");  // no tail call: every level keeps its frame
  return sum;
}

std::uint64_t peak_of(const lc::MemoryReading& r) { return r.has(lc::kMemoryStackPeak) ? r.value[lc::kMemoryStackPeak] : 0; }

void free_heap(void* context, lc::MemoryReading* out) {
  out->set(lc::kMemoryHeapFree, *static_cast<const std::uint32_t*>(context));
}

}  // namespace

DT_TEST(Memory, init_refuses_bad_bounds_naming_the_field) {
  const cm::StackBounds good = test_stack();
  cm::MemoryConfig c;
  c.stack = cm::StackBounds{good.top, good.top};
  DT_EXPECT_EQ(cm::init_memory(c), cm::MemoryStatus::stack_empty);
  c.stack = cm::StackBounds{good.top, good.limit};
  DT_EXPECT_EQ(cm::init_memory(c), cm::MemoryStatus::stack_empty);
  c.stack = cm::StackBounds{good.limit, good.limit + 2};  // less than a word once rounded
  DT_EXPECT_EQ(cm::init_memory(c), cm::MemoryStatus::stack_empty);
  DT_EXPECT(std::strstr(cm::describe(cm::MemoryStatus::stack_empty), "MemoryConfig.stack") != nullptr);
  c.stack = cm::StackBounds{good.limit - kStackBytes, good.limit};  // below this stack
  DT_EXPECT_EQ(cm::init_memory(c), cm::MemoryStatus::stack_pointer_outside);
  DT_EXPECT(std::strstr(cm::describe(cm::MemoryStatus::stack_pointer_outside), "MemoryConfig.stack") != nullptr);
  c.stack = good;
  c.scan_words = 65'537;
  DT_EXPECT_EQ(cm::init_memory(c), cm::MemoryStatus::scan_words_out_of_range);
  DT_EXPECT(std::strstr(cm::describe(cm::MemoryStatus::scan_words_out_of_range), "scan_words") != nullptr);
  // Nothing was painted by a refusal: no stack values.
  lc::Monitor super_loop;
  lc::MemoryReading r{};
  cm::read_memory(nullptr, super_loop, &r);
  DT_EXPECT_EQ(r.valid, 0u);
}

DT_TEST(Memory, high_water_mark_covers_a_known_recursion) {
  const cm::StackBounds stack = test_stack();
  cm::MemoryConfig c;
  c.stack = stack;
  c.scan_words = 16;  // small, so the bounded scan shows
  DT_ASSERT_EQ(cm::init_memory(c), cm::MemoryStatus::ok);
  const std::uintptr_t here = stack_pointer();
  const std::uint32_t depth_here = static_cast<std::uint32_t>(stack.top - here);
  const std::uint32_t painted = cm::measure_stack(stack);
  DT_EXPECT_GT(painted, 0u);
  DT_EXPECT_LT(painted, depth_here + 512u);  // init_memory's own frame, a little below this one

  lc::Monitor super_loop;
  lc::MemoryReading before{};
  cm::read_memory(nullptr, super_loop, &before);
  DT_EXPECT(before.has(lc::kMemoryStackSize) && before.has(lc::kMemoryStackPeak));
  DT_EXPECT_EQ(before.value[lc::kMemoryStackSize], kStackBytes);
  DT_EXPECT(!before.has(lc::kMemoryStackCurrent) && !before.has(lc::kMemoryResident));
  DT_EXPECT(!before.has(lc::kMemoryHeapFree) && !before.has(lc::kMemoryHeapUsed));  // no heap callback

  DT_EXPECT_GT(recurse(here, kDepth), 0u);
  const std::uint32_t measured = cm::measure_stack(stack);
  DT_EXPECT_GE(measured, depth_here + kDepth);
  DT_EXPECT_LT(measured, static_cast<std::uint32_t>(kStackBytes));

  // The first read examines 16 words from the limit, far below the new depth: the mark it
  // reports is the one from before the recursion. A pass finds the new depth within
  // ceil(unused words / 16) + 1 reads.
  lc::MemoryReading first{};
  cm::read_memory(nullptr, super_loop, &first);
  DT_EXPECT_LT(peak_of(first), depth_here + kDepth);
  const std::uint32_t unused_words = static_cast<std::uint32_t>((kStackBytes - measured) / 4u);
  const std::uint32_t bound = unused_words / 16u + 2u;
  std::uint32_t reads = 1;
  lc::MemoryReading r{};
  do {
    r = lc::MemoryReading{};
    cm::read_memory(nullptr, super_loop, &r);
    ++reads;
  } while (peak_of(r) < measured && reads <= bound);
  DT_EXPECT_EQ(peak_of(r), measured);
  DT_EXPECT_LE(reads, bound);
  DT_EXPECT_GT(reads, bound / 2u);  // bounded: not found in a few reads
}

DT_TEST(Memory, heap_values_come_from_the_firmware) {
  static std::uint32_t free_bytes = 12'345;
  cm::MemoryConfig c;  // no stack
  c.read_heap = &free_heap;
  c.heap_context = &free_bytes;
  DT_ASSERT_EQ(cm::init_memory(c), cm::MemoryStatus::ok);
  lc::Monitor super_loop;
  lc::MemoryReading r{};
  cm::read_memory(nullptr, super_loop, &r);
  DT_EXPECT_EQ(r.valid, 1u << lc::kMemoryHeapFree);
  DT_EXPECT_EQ(r.value[lc::kMemoryHeapFree], 12'345u);
}

DT_TEST(Memory, a_loop_on_another_stack_gets_no_stack_values) {
  cm::MemoryConfig c;
  c.stack = test_stack();
  DT_ASSERT_EQ(cm::init_memory(c), cm::MemoryStatus::ok);
  static cm::LoopContext task{0x20000000u, 0x20001000u};
  static cm::LoopContext same{c.stack.limit, c.stack.top};
  lc::MonitorConfig config;
  config.tick_hz = lc::board::kCoreHz;
  config.context = &task;
  lc::Monitor other;
  DT_ASSERT_EQ(other.init(config), lc::Status::ok);
  config.context = &same;
  lc::Monitor on_it;
  DT_ASSERT_EQ(on_it.init(config), lc::Status::ok);
  lc::MemoryReading a{};
  cm::read_memory(nullptr, other, &a);
  DT_EXPECT_EQ(a.valid, 0u);
  lc::MemoryReading b{};
  cm::read_memory(nullptr, on_it, &b);
  DT_EXPECT(b.has(lc::kMemoryStackPeak) && b.has(lc::kMemoryStackSize));
}

int main() { return lc::device_test::run_all(&lc::board::write); }
