// SPDX-License-Identifier: MIT
// No-allocation test: every global allocation function of this process is
// replaced by a counting one that forwards to glibc's allocator, and the test asserts that the
// core, driven through the sim port, allocates nothing: monitoring (begin/end, scopes), watchdog
// polling through a scenario with blocks, hangs, samples and interceptor calls, formatting and
// encoding records into stack buffers, and a crash box storing them and draining them at the
// next "boot". Only calls made inside a measured section are counted; positive
// controls prove the counter sees allocations of every kind it replaces.
//
// Not built under the sanitizers (they replace the allocator themselves): see
// LOOPCANARY_NOALLOC_TEST and the sanitize/tsan presets.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "loopcanary/crash_box.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary_port.hpp"

// ---- The counting allocator ------------------------------------------------------------------

// glibc's own entry points: the replacements below forward to them.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* pointer);
}

namespace {

struct AllocationCounter {
  std::atomic<bool> active{false};
  std::atomic<std::uint64_t> allocations{0};    // malloc, calloc, realloc, aligned, operator new
  std::atomic<std::uint64_t> deallocations{0};  // free and operator delete of a non-null pointer
};
// Constant-initialised (no constructor runs), so it is usable by allocations made before main.
AllocationCounter g_counter;

void count_allocation() noexcept {
  if (g_counter.active.load(std::memory_order_relaxed)) g_counter.allocations.fetch_add(1, std::memory_order_relaxed);
}
void count_deallocation(const void* pointer) noexcept {
  if (pointer != nullptr && g_counter.active.load(std::memory_order_relaxed)) {
    g_counter.deallocations.fetch_add(1, std::memory_order_relaxed);
  }
}

void* allocate(std::size_t size) noexcept {
  count_allocation();
  return __libc_malloc(size != 0 ? size : 1);
}
void* allocate_aligned(std::size_t size, std::align_val_t alignment) noexcept {
  count_allocation();
  return __libc_memalign(static_cast<std::size_t>(alignment), size != 0 ? size : 1);
}
void release(void* pointer) noexcept {
  count_deallocation(pointer);
  __libc_free(pointer);
}

void* allocate_or_throw(std::size_t size) {
  void* p = allocate(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* allocate_aligned_or_throw(std::size_t size, std::align_val_t alignment) {
  void* p = allocate_aligned(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

extern "C" {
void* malloc(std::size_t size) noexcept {
  count_allocation();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) noexcept {
  count_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, std::size_t size) noexcept {
  count_allocation();
  return __libc_realloc(pointer, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  count_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  count_allocation();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* pointer) noexcept {
  count_deallocation(pointer);
  __libc_free(pointer);
}
}

void* operator new(std::size_t size) { return allocate_or_throw(size); }
void* operator new[](std::size_t size) { return allocate_or_throw(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t a) { return allocate_aligned_or_throw(size, a); }
void* operator new[](std::size_t size, std::align_val_t a) { return allocate_aligned_or_throw(size, a); }
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_aligned(size, a);
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_aligned(size, a);
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

namespace {

namespace lc = loopcanary;

// Counts the allocations and deallocations made while it is alive. One at a time; the test
// body asserts on the counts only after the section has ended (a failing assertion allocates).
class MeasuredSection {
 public:
  MeasuredSection() noexcept {
    g_counter.allocations.store(0, std::memory_order_relaxed);
    g_counter.deallocations.store(0, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_counter.active.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~MeasuredSection() { stop(); }
  MeasuredSection(const MeasuredSection&) = delete;
  MeasuredSection& operator=(const MeasuredSection&) = delete;

  void stop() noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    g_counter.active.store(false, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (!stopped_) {
      allocations_ = g_counter.allocations.load(std::memory_order_relaxed);
      deallocations_ = g_counter.deallocations.load(std::memory_order_relaxed);
      stopped_ = true;
    }
  }
  std::uint64_t allocations() const noexcept { return allocations_; }
  std::uint64_t deallocations() const noexcept { return deallocations_; }

 private:
  bool stopped_ = false;
  std::uint64_t allocations_ = 0;
  std::uint64_t deallocations_ = 0;
};

// Keeps a pointer observable so the compiler cannot remove the allocation that produced it.
void* volatile g_sink = nullptr;
void escape(void* p) noexcept { g_sink = p; }

// ---- Positive controls: the counter sees what it replaces ------------------------------------

struct alignas(64) OverAligned {
  char bytes[64];
};

TEST(NoAllocCounter, CountsMallocFamily) {
  MeasuredSection section;
  void* a = std::malloc(24);
  escape(a);
  void* b = std::calloc(4, 8);
  escape(b);
  void* c = std::realloc(a, 4096);
  escape(c);
  void* d = std::aligned_alloc(64, 128);
  escape(d);
  void* e = nullptr;
  const int status = posix_memalign(&e, 64, 64);
  escape(e);
  std::free(c);
  std::free(b);
  std::free(d);
  std::free(e);
  section.stop();
  ASSERT_EQ(status, 0);
  EXPECT_EQ(section.allocations(), 5u);
  EXPECT_EQ(section.deallocations(), 4u);
}

TEST(NoAllocCounter, CountsEveryOperatorNew) {
  MeasuredSection section;
  int* one = new int(7);
  escape(one);
  int* many = new int[9];
  escape(many);
  int* quiet = new (std::nothrow) int(3);
  escape(quiet);
  auto* aligned = new OverAligned;
  escape(aligned);
  auto* aligned_many = new OverAligned[3];
  escape(aligned_many);
  delete one;
  delete[] many;
  delete quiet;
  delete aligned;
  delete[] aligned_many;
  section.stop();
  EXPECT_EQ(section.allocations(), 5u);
  EXPECT_EQ(section.deallocations(), 5u);
}

TEST(NoAllocCounter, CountsStandardContainers) {
  MeasuredSection section;
  {
    std::string text(200, 'x');  // beyond the small-string buffer
    escape(text.data());
    std::vector<int> values;
    values.push_back(1);
    escape(values.data());
    auto shared = std::make_shared<int>(5);
    escape(shared.get());
  }
  section.stop();
  EXPECT_GE(section.allocations(), 3u);
  EXPECT_EQ(section.deallocations(), section.allocations());
}

TEST(NoAllocCounter, CountsNothingOutsideASection) {
  std::uint64_t before = 0;
  {
    MeasuredSection section;
    section.stop();
    before = section.allocations();
    void* p = std::malloc(16);  // after stop(): not counted
    escape(p);
    std::free(p);
  }
  EXPECT_EQ(before, 0u);
  EXPECT_EQ(g_counter.allocations.load(), 0u);
}

// ---- The core allocates nothing --------------------------------------------------------------

constexpr lc::Event kTick{"tick"};
constexpr lc::Event kSlow{"slow"};
constexpr lc::Event kErase{"flash_erase", 300'000};  // its own, longer threshold

lc::MonitorConfig monitor_config(lc::sim::Thread& thread) {
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = lc::sim::kTickHz;
  config.threshold_us = 100'000;
  config.arm_permille = 250;
  config.sample_interval_us = 10'000;
  config.hang_limit_us = 400'000;
  config.context = &thread;
  return config;
}

TEST(NoAlloc, MonitoringAllocatesNothing) {
  lc::sim::VirtualTime time(0u - 5'000u);  // crosses the tick counter's wrap
  lc::sim::Thread thread;
  auto monitor = std::make_unique<lc::sim::PortMonitor>(lc::sim::Clock{time});
  ASSERT_EQ(monitor->init(monitor_config(thread)), lc::Status::ok);

  MeasuredSection section;
  for (std::uint32_t i = 0; i < 10'000; ++i) {
    monitor->begin(kTick);
    monitor->push_scope("handler");
    time.advance(i % 7u);
    monitor->pop_scope();
    monitor->end();
  }
  for (std::uint32_t i = 0; i < 8; ++i) {  // blocks: the out-of-line path; the note queue fills up
    LOOPCANARY_DISPATCH(*monitor, kSlow);
    LOOPCANARY_SCOPE(*monitor, "slow_work");
    time.advance(lc::sim::ms(150));
  }
  {  // an event with its own threshold, over the loop's but under its own
    LOOPCANARY_DISPATCH(*monitor, kErase);
    time.advance(lc::sim::ms(200));
  }
  {  // nested dispatch, scope overflow, unbalanced end and pop
    LOOPCANARY_DISPATCH(*monitor, kTick);
    monitor->begin(kTick);
    monitor->end();
    for (std::size_t i = 0; i < lc::kScopeDepth + 2; ++i) monitor->push_scope("deep");
    for (std::size_t i = 0; i < lc::kScopeDepth + 2; ++i) monitor->pop_scope();
  }
  monitor->end();
  monitor->pop_scope();
  lc::StampSnapshot snap;
  const bool consistent = monitor->snapshot(snap);
  const char* names[lc::kScopeDepth];
  std::size_t count = 0;
  const bool scopes_read = monitor->scope_snapshot(names, lc::kScopeDepth, count);
  const lc::LoopStats stats = monitor->stats();
  section.stop();

  EXPECT_EQ(section.allocations(), 0u);
  EXPECT_EQ(section.deallocations(), 0u);
  // The section did what it claims.
  EXPECT_TRUE(consistent);
  EXPECT_TRUE(scopes_read);
  EXPECT_EQ(stats.dispatches, 10'000u + 8u + 1u + 1u);
  EXPECT_EQ(stats.blocks, 8u);
  EXPECT_GT(stats.notes_dropped, 0u);
  EXPECT_EQ(stats.nested, 1u);
  EXPECT_EQ(stats.unbalanced_ends, 1u);
  EXPECT_EQ(stats.scope_overflows, 2u);
  EXPECT_EQ(stats.scope_underflows, 1u);
}

struct InterceptorLog {
  std::uint32_t calls = 0;
  std::uint32_t finals = 0;
  std::uint32_t in_progress = 0;
  std::uint32_t hangs = 0;
  std::size_t longest_text = 0;
  bool truncated = false;
  std::size_t longest_packet = 0;
  std::uint32_t packets_refused = 0;
  lc::CrashBox* box = nullptr;  // stores the hang and final records when set
};

// An interceptor that formats every record into a stack buffer, as a log sink would, encodes it
// as a packet, as a device's sink would, and keeps it in a crash box.
void log_record(void* context, const lc::BlockRecord& record) {
  auto& log = *static_cast<InterceptorLog*>(context);
  ++log.calls;
  if (record.phase == lc::Phase::final) ++log.finals;
  if (record.phase == lc::Phase::in_progress) ++log.in_progress;
  if (record.phase == lc::Phase::hang) ++log.hangs;
  char text[4096];
  const lc::FormatResult r = lc::format_text(record, text, sizeof text);
  if (r.length > log.longest_text) log.longest_text = r.length;
  log.truncated = log.truncated || r.truncated;
  std::uint8_t packet[lc::kMaxPacketBytes];
  const std::size_t length = lc::encode_packet(record, packet, sizeof packet);
  if (length == 0) ++log.packets_refused;
  if (length > log.longest_packet) log.longest_packet = length;
  if (log.box != nullptr) lc::CrashBox::intercept(log.box, record);
}

// A crash box in static storage, as a device keeps one in its no-init RAM.
lc::StaticCrashBox<4096> g_box;

struct DrainCount {
  std::uint32_t packets = 0;
  std::size_t bytes = 0;
};
void count_packet(void* context, const std::uint8_t* /*packet*/, std::size_t size) {
  auto& count = *static_cast<DrainCount*>(context);
  ++count.packets;
  count.bytes += size;
}

TEST(NoAlloc, WatchdogScenarioAllocatesNothing) {
  lc::sim::VirtualTime time(0u - 250'000u);  // crosses the tick counter's wrap
  lc::sim::Machine machine;
  lc::sim::Thread thread;
  auto monitor = std::make_unique<lc::sim::PortMonitor>(lc::sim::Clock{time});
  auto watchdog = std::make_unique<lc::StaticWatchdog<1, 4>>();  // a small ring: drops happen too
  InterceptorLog log;

  // Setup allocates nothing either.
  MeasuredSection setup;
  machine.set_pc_capture(true);
  machine.set_other_load_permille(300);
  const lc::Status monitor_status = monitor->init(monitor_config(thread));
  lc::WatchdogConfig dog_config;
  dog_config.qualifier = "noalloc-1.0";
  const lc::Status dog_status = watchdog->init(dog_config, machine.hal());
  const lc::Status add_status = watchdog->add(*monitor);
  const lc::Status chain_status = watchdog->add_interceptor(&log_record, &log);
  const char* description = lc::describe(lc::Status::threshold_zero);
  const lc::CrashBoxStatus box_status = g_box.open(lc::ResetCause::power_on);
  log.box = &g_box;
  setup.stop();
  EXPECT_NE(box_status, lc::CrashBoxStatus::kept);
  ASSERT_EQ(monitor_status, lc::Status::ok);
  ASSERT_EQ(dog_status, lc::Status::ok);
  ASSERT_EQ(add_status, lc::Status::ok);
  ASSERT_EQ(chain_status, lc::Status::ok);
  EXPECT_NE(std::strlen(description), 0u);
  EXPECT_EQ(setup.allocations(), 0u);

  lc::sim::Scheduler scheduler(time, machine, *watchdog, lc::sim::ms(5));
  MeasuredSection section;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 50; ++i) {  // short dispatches
      LOOPCANARY_DISPATCH(*monitor, kTick);
      thread.pc = 0x1000;
      scheduler.compute(thread, lc::sim::ms(2));
    }
    {  // a block that computes, under named scopes, with program counters sampled
      LOOPCANARY_DISPATCH(*monitor, kSlow);
      LOOPCANARY_SCOPE(*monitor, "update");
      thread.pc = 0x2000;
      scheduler.compute(thread, lc::sim::ms(60));
      LOOPCANARY_SCOPE(*monitor, "fir_filter");
      thread.pc = 0x2040;
      scheduler.compute(thread, lc::sim::ms(120));
    }
    {  // a block that waits (off the CPU)
      LOOPCANARY_DISPATCH(*monitor, kSlow);
      scheduler.wait(lc::sim::ms(150));
    }
    {  // a hang that eventually returns, starved by other work
      LOOPCANARY_DISPATCH(*monitor, kSlow);
      thread.pc = 0x3000;
      scheduler.starve(lc::sim::ms(500));
    }
    scheduler.idle(lc::sim::ms(20));
  }
  lc::BlockRecord record;
  char text[8192];
  char json[8192];
  char tiny[64];
  std::uint32_t popped = 0;
  std::size_t text_total = 0;
  std::size_t json_total = 0;
  bool tiny_truncated = true;
  while (watchdog->pop(record)) {
    ++popped;
    text_total += lc::format_text(record, text, sizeof text).length;
    json_total += lc::format_json(record, json, sizeof json).length;
    tiny_truncated = tiny_truncated && lc::format_json(record, tiny, sizeof tiny).truncated;
  }
  const lc::WatchdogStats dog = watchdog->stats();
  const lc::LoopStats stats = monitor->stats();
  // The next boot: the box's records go out as previous_boot packets.
  const lc::CrashBoxStatus reopened = g_box.open(lc::ResetCause::software);
  DrainCount drained;
  const std::uint32_t sent = g_box.drain(lc::PacketSink{&count_packet, &drained});
  const lc::CrashBoxStats box = g_box.stats();
  section.stop();

  EXPECT_EQ(section.allocations(), 0u);
  EXPECT_EQ(section.deallocations(), 0u);
  // The section did what it claims: blocks, hangs, samples, interceptor calls, drops, output.
  EXPECT_EQ(stats.blocks, 9u);
  EXPECT_EQ(stats.hangs, 3u);
  EXPECT_GT(machine.captures(), 0u);
  EXPECT_GT(log.finals, 0u);
  EXPECT_GT(log.in_progress, 0u);
  EXPECT_EQ(log.hangs, 3u);
  EXPECT_EQ(log.calls, dog.reports);
  EXPECT_FALSE(log.truncated);
  EXPECT_GT(log.longest_text, 0u);
  EXPECT_GT(dog.records_dropped, 0u);
  EXPECT_EQ(popped + dog.records_dropped, dog.reports);
  EXPECT_GT(popped, 0u);
  EXPECT_GT(text_total, 0u);
  EXPECT_GT(json_total, 0u);
  EXPECT_TRUE(tiny_truncated);
  EXPECT_EQ(log.packets_refused, 0u);
  EXPECT_GT(log.longest_packet, 0u);
  EXPECT_EQ(reopened, lc::CrashBoxStatus::kept);
  EXPECT_GT(box.stored, 0u);
  EXPECT_EQ(sent, box.kept);
  EXPECT_EQ(drained.packets, sent);
  EXPECT_GT(drained.bytes, 0u);
}

}  // namespace
