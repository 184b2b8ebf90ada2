// SPDX-License-Identifier: MIT
// Device test 3: the core's virtual-time scenarios, run on the device.
//
// The same scenarios and assertions as the core's hosted requirements (issue 2's list), on the
// sim port compiled for Cortex-M: port/sim has no OS dependency, so the watchdog logic, the
// stamps, the rings and the formatting run here exactly as on the host, with 32-bit pointers,
// the Arm ABI and newlib. Only what needs host services stays on the host (threads, a
// replaced malloc). Every timing scenario runs from three clock starts: 0, 1 s before the
// 32-bit wrap, and a start that puts the wrap inside the dispatch under test.
#include <cstring>

#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"

namespace lc = loopcanary;
namespace sim = loopcanary::sim;
using lc::device_test::print;
using lc::device_test::print_u64;

namespace {

constexpr lc::Event kA{"event_a"};
constexpr lc::Event kB{"event_b"};
constexpr lc::Event kC{"event_c"};

// What the interceptors saw, in order.
struct Report {
  lc::Phase phase;
  const lc::Event* event;
  std::uint32_t report;
  std::uint64_t duration;
  bool loop_running;  // the loop was inside the dispatch when the report came
};

// One loop, its watchdog and the simulated machine, starting at `start`.
template <std::size_t RecordCapacity = 8>
struct Rig {
  sim::VirtualTime time;
  sim::Machine machine;
  sim::Thread thread;
  sim::PortMonitor monitor;
  lc::StaticWatchdog<1, RecordCapacity> watchdog;
  sim::Scheduler scheduler;
  Report reports[16] = {};
  std::uint32_t report_count = 0;
  bool running = false;

  Rig(lc::tick_t start, lc::tick_t period)
      : time(start), monitor(sim::Clock{time}), scheduler(time, machine, watchdog, period) {}

  static void intercept(void* context, const lc::BlockRecord& record) {
    auto* self = static_cast<Rig*>(context);
    if (self->report_count < 16) {
      self->reports[self->report_count] =
          Report{record.phase, record.event, record.report, record.duration_ticks, self->running};
    }
    ++self->report_count;
  }

  lc::Status init(const lc::MonitorConfig& config, const lc::WatchdogConfig& dog = lc::WatchdogConfig{}) {
    lc::MonitorConfig c = config;
    c.tick_hz = sim::kTickHz;
    c.context = &thread;
    lc::Status s = monitor.init(c);
    if (s == lc::Status::ok) s = watchdog.init(dog, machine.hal());
    if (s == lc::Status::ok) s = watchdog.add(monitor);
    if (s == lc::Status::ok) s = watchdog.add_interceptor(&Rig::intercept, this);
    return s;
  }

  // One dispatch of `event` that computes for `ticks`.
  void dispatch(const lc::Event& event, lc::tick_t ticks) {
    monitor.begin(event);
    running = true;
    scheduler.compute(thread, ticks);
    running = false;
    monitor.end();
  }

  // Pops the next record with `phase` (skipping others); false when none is left.
  bool pop(lc::Phase phase, lc::BlockRecord& out) {
    while (watchdog.pop(out)) {
      if (out.phase == phase) return true;
    }
    return false;
  }
};

lc::MonitorConfig config_ms(std::uint32_t threshold_ms, std::uint32_t interval_ms, std::uint32_t hang_ms) {
  lc::MonitorConfig c;
  c.name = "loop";
  c.threshold_us = threshold_ms * 1000u;
  c.sample_interval_us = interval_ms * 1000u;
  c.hang_limit_us = hang_ms * 1000u;
  return c;
}

// The starts every timing scenario runs from: 0, 1 s before the wrap, and `wrap_inside_ms`
// before the wrap (chosen per scenario so the wrap falls inside the dispatch under test).
void for_each_start(std::uint32_t wrap_inside_ms, void (*scenario)(lc::tick_t start)) {
  const lc::tick_t starts[] = {0u, static_cast<lc::tick_t>(0u - 1'000'000u),
                               static_cast<lc::tick_t>(0u - wrap_inside_ms * 1000u)};
  for (const lc::tick_t start : starts) {
    print("  start = ");
    print_u64(start);
    print("\n");
    scenario(start);
  }
}

constexpr lc::tick_t ms(std::uint32_t v) { return sim::ms(v); }

}  // namespace

// 1. Under, exactly at and over the threshold: only "over" is a block, with its exact duration.
DT_TEST(Scenario, threshold_is_strictly_greater) {
  for_each_start(250, [](lc::tick_t start) {  // the wrap falls inside event_c (199..300 ms)
    Rig<> rig(start, ms(5));
    DT_ASSERT_EQ(rig.init(config_ms(100, 10, 1000)), lc::Status::ok);
    rig.dispatch(kA, ms(99));
    rig.dispatch(kB, ms(100));
    rig.dispatch(kC, ms(101));
    rig.scheduler.idle(ms(20));
    const lc::LoopStats stats = rig.monitor.stats();
    DT_EXPECT_EQ(stats.dispatches, 3u);
    DT_EXPECT_EQ(stats.blocks, 1u);
    DT_EXPECT_EQ(stats.max_duration, ms(101));
    lc::BlockRecord r;
    DT_ASSERT(rig.pop(lc::Phase::final, r));
    DT_EXPECT_EQ(r.event, &kC);
    DT_EXPECT_EQ(r.duration_ticks, std::uint64_t{ms(101)});
    DT_EXPECT_EQ(r.threshold_ticks, ms(100));
    DT_EXPECT_EQ(r.end - r.start, ms(101));
    DT_EXPECT(!rig.pop(lc::Phase::final, r));
  });
}

// 2. Block in progress within one watchdog period after the threshold, while still running.
DT_TEST(Scenario, in_progress_within_one_period) {
  for_each_start(150, [](lc::tick_t start) {
    Rig<> rig(start, ms(5));
    DT_ASSERT_EQ(rig.init(config_ms(100, 10, 1000)), lc::Status::ok);
    rig.dispatch(kA, ms(300));
    rig.scheduler.idle(ms(10));
    DT_ASSERT_EQ(rig.report_count, 2u);
    const Report& in_progress = rig.reports[0];
    DT_EXPECT_EQ(in_progress.phase, lc::Phase::in_progress);
    DT_EXPECT(in_progress.loop_running);
    DT_EXPECT_GT(in_progress.duration, std::uint64_t{ms(100)});
    DT_EXPECT_LE(in_progress.duration, std::uint64_t{ms(105)});
    DT_EXPECT_EQ(rig.reports[1].phase, lc::Phase::final);
    DT_EXPECT(!rig.reports[1].loop_running);
    DT_EXPECT_EQ(rig.reports[1].duration, std::uint64_t{ms(300)});
  });
}

// 3. A hang (the event does not end) within one period after the hang limit, with samples.
DT_TEST(Scenario, hang_within_one_period_with_samples) {
  for_each_start(400, [](lc::tick_t start) {
    Rig<> rig(start, ms(5));
    rig.machine.set_pc_capture(true);
    rig.thread.pc = 0x1234;
    DT_ASSERT_EQ(rig.init(config_ms(100, 10, 500)), lc::Status::ok);
    rig.monitor.begin(kA);
    rig.running = true;
    rig.scheduler.compute(rig.thread, ms(800));  // still inside the dispatch
    DT_ASSERT_EQ(rig.report_count, 2u);
    const Report& hang = rig.reports[1];
    DT_EXPECT_EQ(hang.phase, lc::Phase::hang);
    DT_EXPECT(hang.loop_running);
    DT_EXPECT_GT(hang.duration, std::uint64_t{ms(500)});
    DT_EXPECT_LE(hang.duration, std::uint64_t{ms(505)});
    DT_EXPECT_EQ(rig.monitor.stats().hangs, 1u);
    lc::BlockRecord r;
    DT_ASSERT(rig.pop(lc::Phase::hang, r));
    DT_EXPECT_NE(r.flags & lc::kFlagHung, 0);
    DT_EXPECT_GT(r.samples_taken, 30u);  // every 10 ms from the arm point (25 ms)
    DT_ASSERT_GT(r.sample_count, 0u);
    DT_EXPECT_EQ(r.samples[0].pc_count, 1u);
    DT_EXPECT_EQ(r.samples[0].frames[0], lc::Frame{0x1234});
    DT_EXPECT_EQ(r.top_count, 1u);
    DT_EXPECT_EQ(r.top[0].count, r.samples_taken);
    rig.running = false;
    rig.monitor.end();
    rig.scheduler.idle(ms(10));
    DT_ASSERT(rig.pop(lc::Phase::final, r));
    DT_EXPECT_NE(r.flags & lc::kFlagHung, 0);
    DT_EXPECT_EQ(r.duration_ticks, std::uint64_t{ms(800)});
  });
}

// 4. The seed's case: threshold 800 ms, 780 ms in scope a then 30 ms in scope b. Sampling from
// the arm point (25 %) puts >= 90 % of the samples on a (BlockCanary's 0.8 x threshold start
// would see only b).
DT_TEST(Scenario, early_culprit_dominates_the_histogram) {
  for_each_start(500, [](lc::tick_t start) {
    Rig<> rig(start, ms(10));
    DT_ASSERT_EQ(rig.init(config_ms(800, 20, 5000)), lc::Status::ok);
    static const char* const kScopeA = "a";
    static const char* const kScopeB = "b";
    rig.monitor.begin(kA);
    {
      LOOPCANARY_SCOPE(rig.monitor, kScopeA);
      rig.scheduler.compute(rig.thread, ms(780));
    }
    {
      LOOPCANARY_SCOPE(rig.monitor, kScopeB);
      rig.scheduler.compute(rig.thread, ms(30));
    }
    rig.monitor.end();
    rig.scheduler.idle(ms(20));
    lc::BlockRecord r;
    DT_ASSERT(rig.pop(lc::Phase::final, r));
    DT_EXPECT_EQ(r.duration_ticks, std::uint64_t{ms(810)});
    DT_ASSERT_GE(r.top_count, 1u);
    DT_EXPECT(r.top[0].scope_count == 1);
    DT_EXPECT_EQ(r.top[0].frames[0], reinterpret_cast<lc::Frame>(kScopeA));
    DT_EXPECT_GE(r.top[0].count * 10u, r.samples_taken * 9u);
    DT_EXPECT_GT(r.samples_taken, 20u);
  });
}

// 5. Record ring overflow: the drop counter counts, the records kept are intact.
DT_TEST(Scenario, ring_overflow_counts_drops) {
  Rig<2> rig(0, ms(5));
  DT_ASSERT_EQ(rig.init(config_ms(20, 5, 1000)), lc::Status::ok);
  for (int i = 0; i < 4; ++i) {
    rig.dispatch(i == 0 ? kA : kB, ms(30));  // in progress + final: 2 reports each
    rig.scheduler.idle(ms(10));
  }
  DT_EXPECT_EQ(rig.report_count, 8u);
  DT_EXPECT_EQ(rig.watchdog.stats().records_dropped, 6u);
  DT_EXPECT_EQ(rig.watchdog.pending(), 2u);
  lc::BlockRecord r;
  DT_ASSERT(rig.watchdog.pop(r));
  DT_EXPECT_EQ(r.report, 1u);
  DT_EXPECT_EQ(r.phase, lc::Phase::in_progress);
  DT_EXPECT_EQ(r.event, &kA);
  DT_ASSERT(rig.watchdog.pop(r));
  DT_EXPECT_EQ(r.report, 2u);
  DT_EXPECT_EQ(r.phase, lc::Phase::final);
  DT_EXPECT_EQ(r.event, &kA);
  DT_EXPECT_EQ(r.duration_ticks, std::uint64_t{ms(30)});
  DT_EXPECT(!rig.watchdog.pop(r));
  rig.dispatch(kC, ms(30));
  rig.scheduler.idle(ms(10));
  DT_ASSERT(rig.watchdog.pop(r));
  DT_EXPECT_EQ(r.report, 9u);  // reports 3..8 were dropped
  DT_EXPECT_EQ(r.event, &kC);
  DT_EXPECT_EQ(r.records_dropped, 6u);
}

// 6. Every invalid configuration field gives its own status.
DT_TEST(Scenario, each_invalid_field_has_its_status) {
  struct MonitorCase {
    void (*mutate)(lc::MonitorConfig&);
    lc::Status expected;
    const char* field;
  };
  const MonitorCase monitor_cases[] = {
      {[](lc::MonitorConfig& c) { c.name = nullptr; }, lc::Status::name_missing, "name"},
      {[](lc::MonitorConfig& c) { c.name = ""; }, lc::Status::name_missing, "name"},
      {[](lc::MonitorConfig& c) { c.tick_hz = 0; }, lc::Status::tick_hz_zero, "tick_hz"},
      {[](lc::MonitorConfig& c) { c.threshold_us = 0; }, lc::Status::threshold_zero, "threshold_us"},
      {[](lc::MonitorConfig& c) {
         c.tick_hz = 1000;
         c.threshold_us = 999;
         c.sample_interval_us = 999;
       },
       lc::Status::threshold_below_one_tick, "threshold_us"},
      {[](lc::MonitorConfig& c) { c.arm_permille = 1000; }, lc::Status::arm_not_below_threshold, "arm_permille"},
      {[](lc::MonitorConfig& c) { c.sample_interval_us = 0; }, lc::Status::sample_interval_zero, "sample_interval_us"},
      {[](lc::MonitorConfig& c) { c.sample_interval_us = c.threshold_us + 1; },
       lc::Status::sample_interval_above_threshold, "sample_interval_us"},
      {[](lc::MonitorConfig& c) {
         c.tick_hz = 1000;
         c.sample_interval_us = 999;
       },
       lc::Status::sample_interval_below_one_tick, "sample_interval_us"},
      {[](lc::MonitorConfig& c) { c.hang_limit_us = c.threshold_us - 1; }, lc::Status::hang_limit_below_threshold,
       "hang_limit_us"},
      {[](lc::MonitorConfig& c) {
         c.tick_hz = 1'000'000'000;
         c.hang_limit_us = 3'000'000;
       },
       lc::Status::hang_limit_too_long, "hang_limit_us"},
  };
  for (const MonitorCase& test : monitor_cases) {
    lc::MonitorConfig c = config_ms(100, 10, 1000);
    c.tick_hz = sim::kTickHz;
    test.mutate(c);
    lc::Monitor monitor;
    DT_EXPECT_EQ(monitor.init(c), test.expected);
    DT_EXPECT(std::strstr(lc::describe(test.expected), test.field) != nullptr);
    DT_EXPECT(!monitor.initialised());
  }

  struct WatchdogCase {
    void (*mutate)(lc::WatchdogConfig&);
    lc::Status expected;
  };
  const WatchdogCase watchdog_cases[] = {
      {[](lc::WatchdogConfig& c) { c.qualifier = nullptr; }, lc::Status::qualifier_missing},
      {[](lc::WatchdogConfig& c) { c.qualifier = "0123456789abcdef0123456789abcdef"; }, lc::Status::qualifier_too_long},
      {[](lc::WatchdogConfig& c) { c.qualifier = "tab\there"; }, lc::Status::qualifier_invalid},
      {[](lc::WatchdogConfig& c) { c.max_frames = 0; }, lc::Status::max_frames_out_of_range},
      {[](lc::WatchdogConfig& c) { c.max_frames = lc::kMaxFrames + 1; }, lc::Status::max_frames_out_of_range},
      {[](lc::WatchdogConfig& c) { c.snapshot_attempts = 0; }, lc::Status::snapshot_attempts_out_of_range},
      {[](lc::WatchdogConfig& c) { c.snapshot_attempts = 9; }, lc::Status::snapshot_attempts_out_of_range},
      {[](lc::WatchdogConfig& c) { c.cause.running_permille = 0; }, lc::Status::running_permille_out_of_range},
      {[](lc::WatchdogConfig& c) { c.cause.running_permille = 1001; }, lc::Status::running_permille_out_of_range},
      {[](lc::WatchdogConfig& c) { c.cause.starved_busy_permille = 0; }, lc::Status::starved_permille_out_of_range},
      {[](lc::WatchdogConfig& c) { c.cause.starved_busy_permille = 1001; }, lc::Status::starved_permille_out_of_range},
  };
  for (const WatchdogCase& test : watchdog_cases) {
    lc::WatchdogConfig c;
    test.mutate(c);
    lc::StaticWatchdog<1, 2> watchdog;
    DT_EXPECT_EQ(watchdog.init(c), test.expected);
    lc::Monitor monitor;
    DT_EXPECT_EQ(monitor.init([] {
                   lc::MonitorConfig m = config_ms(100, 10, 1000);
                   m.tick_hz = sim::kTickHz;
                   return m;
                 }()),
                 lc::Status::ok);
    DT_EXPECT_EQ(watchdog.add(monitor), lc::Status::not_initialised);
  }

  // Registration errors.
  lc::StaticWatchdog<1, 2> watchdog;
  lc::Monitor first;
  lc::Monitor second;
  lc::MonitorConfig c = config_ms(100, 10, 1000);
  c.tick_hz = sim::kTickHz;
  DT_EXPECT_EQ(watchdog.add_interceptor(&Rig<>::intercept, nullptr), lc::Status::not_initialised);
  DT_ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}), lc::Status::ok);
  DT_EXPECT_EQ(watchdog.add(first), lc::Status::not_initialised);  // monitor not initialised
  DT_ASSERT_EQ(first.init(c), lc::Status::ok);
  DT_ASSERT_EQ(second.init(c), lc::Status::ok);
  DT_EXPECT_EQ(watchdog.add(first), lc::Status::ok);
  DT_EXPECT_EQ(watchdog.add(first), lc::Status::already_registered);
  DT_EXPECT_EQ(first.init(c), lc::Status::already_initialised);
  DT_EXPECT_EQ(watchdog.add(second), lc::Status::registry_full);
  DT_EXPECT_EQ(watchdog.add_interceptor(nullptr, nullptr), lc::Status::interceptor_null);
}

// 9. Each interceptor is called once per report, in the order added; the chain has a capacity.
DT_TEST(Scenario, interceptors_once_per_report_in_order) {
  struct Log {
    std::uint8_t calls[32] = {};
    std::uint32_t count = 0;
  };
  static Log log;
  log = Log{};
  static std::uint8_t ids[lc::kMaxInterceptors];
  Rig<> rig(0, ms(5));
  DT_ASSERT_EQ(rig.init(config_ms(20, 5, 1000)), lc::Status::ok);  // the rig's own is first
  const lc::Interceptor append = [](void* context, const lc::BlockRecord&) {
    if (log.count < 32) log.calls[log.count] = *static_cast<std::uint8_t*>(context);
    ++log.count;
  };
  for (std::size_t i = 1; i < lc::kMaxInterceptors; ++i) {
    ids[i] = static_cast<std::uint8_t>(i);
    DT_ASSERT_EQ(rig.watchdog.add_interceptor(append, &ids[i]), lc::Status::ok);
  }
  DT_EXPECT_EQ(rig.watchdog.add_interceptor(append, &ids[1]), lc::Status::interceptor_chain_full);
  rig.dispatch(kA, ms(30));
  rig.scheduler.idle(ms(10));
  DT_ASSERT_EQ(rig.report_count, 2u);  // in progress + final
  const std::uint32_t chained = lc::kMaxInterceptors - 1;
  DT_ASSERT_EQ(log.count, 2u * chained);
  for (std::uint32_t report = 0; report < 2; ++report) {
    for (std::uint32_t i = 0; i < chained; ++i) DT_EXPECT_EQ(log.calls[report * chained + i], i + 1u);
  }
}

// Cause classes from the simulated CPU counters, and unknown without counters.
DT_TEST(Scenario, cause_running_waiting_starved_unknown) {
  struct CauseCase {
    int mode;  // 0 compute, 1 wait, 2 starve, 3 compute without counters
    lc::Cause expected;
  };
  const CauseCase cases[] = {{0, lc::Cause::running}, {1, lc::Cause::waiting}, {2, lc::Cause::starved},
                             {3, lc::Cause::unknown}};
  for (const CauseCase& test : cases) {
    Rig<> rig(0, ms(5));
    rig.machine.set_counters_available(test.mode != 3);
    DT_ASSERT_EQ(rig.init(config_ms(100, 10, 1000)), lc::Status::ok);
    rig.monitor.begin(kA);
    if (test.mode == 1) {
      rig.scheduler.wait(ms(200));
    } else if (test.mode == 2) {
      rig.scheduler.starve(ms(200));
    } else {
      rig.scheduler.compute(rig.thread, ms(200));
    }
    rig.monitor.end();
    rig.scheduler.idle(ms(10));
    lc::BlockRecord r;
    DT_ASSERT(rig.pop(lc::Phase::final, r));
    DT_EXPECT_EQ(r.cause, test.expected);
    DT_EXPECT_EQ(r.has_thread_cpu, test.mode != 3);
  }
}

// A debugger attached suppresses the reports and counts them.
DT_TEST(Scenario, debugger_suppresses_reports) {
  Rig<> rig(0, ms(5));
  rig.machine.set_debugger_attached(true);
  DT_ASSERT_EQ(rig.init(config_ms(20, 5, 1000)), lc::Status::ok);
  rig.dispatch(kA, ms(30));
  rig.scheduler.idle(ms(10));
  DT_EXPECT_EQ(rig.report_count, 0u);
  DT_EXPECT_EQ(rig.watchdog.pending(), 0u);
  DT_EXPECT_EQ(rig.watchdog.stats().suppressed, 2u);
  DT_EXPECT_EQ(rig.monitor.stats().blocks, 1u);
}

// A begin() inside a dispatch folds into it; its end() closes only the nesting.
DT_TEST(Scenario, nested_dispatch_folds_into_the_outer) {
  Rig<> rig(0, ms(5));
  DT_ASSERT_EQ(rig.init(config_ms(100, 10, 1000)), lc::Status::ok);
  rig.monitor.begin(kA);
  rig.scheduler.compute(rig.thread, ms(10));
  rig.monitor.begin(kB);
  rig.scheduler.compute(rig.thread, ms(10));
  rig.monitor.end();
  rig.scheduler.compute(rig.thread, ms(10));
  rig.monitor.end();
  rig.monitor.end();  // unbalanced
  const lc::LoopStats stats = rig.monitor.stats();
  DT_EXPECT_EQ(stats.dispatches, 1u);
  DT_EXPECT_EQ(stats.nested, 1u);
  DT_EXPECT_EQ(stats.unbalanced_ends, 1u);
  DT_EXPECT_EQ(stats.max_duration, ms(30));
}

// A block that ends between two polls, before the watchdog armed: still reported, flagged.
DT_TEST(Scenario, short_block_between_polls_is_reported_unwatched) {
  for_each_start(10, [](lc::tick_t start) {
    Rig<> rig(start, ms(50));
    DT_ASSERT_EQ(rig.init(config_ms(10, 5, 1000)), lc::Status::ok);
    rig.dispatch(kA, ms(20));  // ends at 20 ms, first poll at 50 ms
    rig.scheduler.idle(ms(40));
    lc::BlockRecord r;
    DT_ASSERT(rig.pop(lc::Phase::final, r));
    DT_EXPECT_EQ(r.flags, lc::kFlagUnwatched);
    DT_EXPECT_EQ(r.duration_ticks, std::uint64_t{ms(20)});
    DT_EXPECT_EQ(r.samples_taken, 0u);
    DT_EXPECT_EQ(r.cause, lc::Cause::unknown);
  });
}

// The record formats into a bounded buffer; a short buffer truncates with a flag.
DT_TEST(Scenario, record_formats_text_and_json) {
  Rig<> rig(0, ms(5));
  DT_ASSERT_EQ(rig.init(config_ms(20, 5, 1000)), lc::Status::ok);
  rig.dispatch(kA, ms(30));
  rig.scheduler.idle(ms(10));
  lc::BlockRecord r;
  DT_ASSERT(rig.pop(lc::Phase::final, r));
  static char text[2048];
  const lc::FormatResult t = lc::format_text(r, text, sizeof text);
  DT_EXPECT(!t.truncated);
  DT_EXPECT(std::strstr(text, "event_a") != nullptr);
  const lc::FormatResult j = lc::format_json(r, text, sizeof text);
  DT_EXPECT(!j.truncated);
  DT_EXPECT_EQ(text[0], '{');
  DT_EXPECT_EQ(text[j.length - 1], '\n');
  char small[32];
  const lc::FormatResult s = lc::format_json(r, small, sizeof small);
  DT_EXPECT(s.truncated);
  DT_EXPECT_EQ(s.needed, j.length);
  DT_EXPECT_LT(s.length, sizeof small);
}

int main() {
  print(lc::board::name());
  print("\n");
  return lc::device_test::run_all(&lc::board::write);
}
