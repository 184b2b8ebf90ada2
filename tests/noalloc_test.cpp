// SPDX-License-Identifier: MIT
// No-allocation test: every global allocation function of this process is
// replaced by a counting one that forwards to glibc's allocator, and the test asserts that the
// core, driven through the sim port, allocates nothing: monitoring (begin/end, scopes, queue
// latency and deadlines with their window arithmetic), watchdog
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
#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/port/sim.hpp"
#include "noalloc_counter.hpp"

namespace {

namespace lc = loopcanary;

using noalloc::escape;
using noalloc::g_counter;
using noalloc::MeasuredSection;

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

// Queue latency and deadlines (health.hpp): recording on both paths (the histogram alone and
// the out-of-line one: new maximum, deadline miss, missed periods, a stamp ahead), reading the
// counters, and the window arithmetic of percentiles, rate and load.
lc::EventHealth g_tick_health;
constexpr lc::Event kTickWithHealth{"tick", 0, &g_tick_health};

TEST(NoAlloc, QueueLatencyAndDeadlinesAllocateNothing) {
  lc::sim::VirtualTime time(0u - 5'000u);  // crosses the tick counter's wrap
  lc::sim::Thread thread;
  auto monitor = std::make_unique<lc::sim::PortMonitor>(lc::sim::Clock{time});
  ASSERT_EQ(monitor->init(monitor_config(thread)), lc::Status::ok);

  MeasuredSection section;
  const lc::Status configured = monitor->init_event(kTickWithHealth, lc::EventHealthConfig{10'000, 2'000});
  const lc::LoopStats loop_before = monitor->stats();
  const lc::EventStats before = g_tick_health.stats();
  const lc::tick_t start = time.read();
  for (std::uint32_t i = 0; i < 10'000; ++i) {
    const lc::tick_t now = time.read();
    monitor->begin_at(kTickWithHealth, now, now - (i % 13u) * 1'000u);  // up to 12 ms late
    time.advance(i % 7u);
    monitor->end();
    monitor->add_idle(3u);
  }
  monitor->begin_at(kTickWithHealth, time.read(), time.read() + 100u);  // a stamp ahead
  monitor->end();
  const lc::tick_t window = lc::ticks_between(start, time.read());
  const lc::EventStats in_window = lc::difference(before, g_tick_health.stats());
  const lc::LoopStats loop_after = monitor->stats();
  const lc::tick_t p99 = lc::latency_percentile(in_window, 990);
  const std::uint32_t rate = lc::rate_mhz(in_window.dispatches, window, lc::sim::kTickHz);
  const std::uint32_t load = lc::load_permille(loop_before, loop_after, window);
  const std::uint32_t idle = lc::idle_permille(loop_before, loop_after, window);
  section.stop();

  EXPECT_EQ(section.allocations(), 0u);
  EXPECT_EQ(section.deallocations(), 0u);
  // The section did what it claims.
  EXPECT_EQ(configured, lc::Status::ok);
  EXPECT_EQ(in_window.dispatches, 10'001u);
  EXPECT_GT(in_window.deadline_misses, 0u);
  EXPECT_GT(in_window.missed_periods, 0u);
  EXPECT_EQ(in_window.posted_ahead, 1u);
  EXPECT_EQ(in_window.max_latency, 12'000u);
  EXPECT_GT(p99, 0u);
  EXPECT_GT(rate, 0u);
  EXPECT_GT(load, 0u);
  EXPECT_GT(idle, 0u);
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

// The evidence stream (evidence.hpp): an evidence watchdog's observer encoding its evidence into
// an evidence ring, reopened as after a reset and drained.
lc::StaticEvidenceRing<8192> g_evidence_ring;

TEST(NoAlloc, EvidenceStreamAllocatesNothing) {
  lc::sim::VirtualTime time(0u - 250'000u);  // crosses the tick counter's wrap
  lc::sim::Machine machine;
  lc::sim::Thread thread;
  auto monitor = std::make_unique<lc::sim::PortMonitor>(lc::sim::Clock{time});
  auto watchdog = std::make_unique<lc::StaticEvidenceWatchdog<1>>();
  struct Drained {
    std::size_t writes = 0;
    std::size_t bytes = 0;
  } drained;

  MeasuredSection section;
  machine.set_pc_capture(true);
  g_evidence_ring.open(lc::ResetCause::power_on);
  const lc::Status monitor_status = monitor->init(monitor_config(thread));
  const lc::Status dog_status = watchdog->init(lc::WatchdogConfig{}, machine.hal(), g_evidence_ring);
  const lc::Status add_status = watchdog->add(*monitor);
  {
    lc::sim::Scheduler scheduler(time, machine, *watchdog, lc::sim::ms(5));
    for (int i = 0; i < 20; ++i) {
      LOOPCANARY_DISPATCH(*monitor, kTick);
      scheduler.compute(thread, lc::sim::ms(2));
    }
    {
      LOOPCANARY_DISPATCH(*monitor, kSlow);
      LOOPCANARY_SCOPE(*monitor, "update");
      thread.pc = 0x2000;
      scheduler.compute(thread, lc::sim::ms(450));  // in progress, hang
    }
    scheduler.idle(lc::sim::ms(20));
  }
  g_evidence_ring.set_reset_cause(lc::ResetCause::software);
  const lc::CrashBoxStatus reopened = g_evidence_ring.open(lc::ResetCause::unknown);
  const std::uint32_t sent = g_evidence_ring.drain(
      {[](void* context, const std::uint8_t*, std::size_t size) {
         auto* d = static_cast<Drained*>(context);
         ++d->writes;
         d->bytes += size;
       },
       &drained});
  const lc::EvidenceRingStats stats = g_evidence_ring.stats();
  section.stop();

  EXPECT_EQ(section.allocations(), 0u);
  EXPECT_EQ(section.deallocations(), 0u);
  // The section did what it claims.
  ASSERT_EQ(monitor_status, lc::Status::ok);
  ASSERT_EQ(dog_status, lc::Status::ok);
  ASSERT_EQ(add_status, lc::Status::ok);
  EXPECT_EQ(reopened, lc::CrashBoxStatus::kept);
  EXPECT_EQ(watchdog->stats().reports, 3u);  // in progress, hang, final
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_GT(stats.pushed, 0u);
  EXPECT_GT(sent, 200u);  // the boot packets, a watch, its samples, three observations
  EXPECT_EQ(drained.bytes, sent);
  EXPECT_EQ(stats.sent_bytes, sent);
  EXPECT_GE(drained.writes, 2u);  // the marker, then the ring's bytes
}

}  // namespace
