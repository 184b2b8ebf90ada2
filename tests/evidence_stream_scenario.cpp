// SPDX-License-Identifier: MIT
// One scenario on the sim port, every record it produces written field by field to stdout.
// Built twice (tests/CMakeLists.txt): with a StaticWatchdog, whose records are printed as it
// pops them, and with LC_EVIDENCE_STREAM=1, where the watchdog is a StaticEvidenceWatchdog that
// sends its evidence as packets into an evidence ring and the records printed are those the
// tool's CaptureReader assembles from the drained bytes: the device's two roads. The test
// `evidence_stream.records_equal` (evidence_stream_compare.cmake) requires both outputs to be
// identical apart from their first line, which names the build.
//
// The scenario covers every cause (running, waiting, starved with and without a run-queue
// counter, unknown without counters), in-progress, hang and final reports, and a rule other than
// the defaults.
#include <cstdint>
#include <cstdio>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"

#ifndef LC_EVIDENCE_STREAM
#define LC_EVIDENCE_STREAM 0
#endif
#if LC_EVIDENCE_STREAM
#include <vector>

#include "loopcanary/evidence.hpp"
#include "packet_reader.hpp"  // sim/tool
#endif

namespace lc = loopcanary;
namespace sim = loopcanary::sim;

namespace {

constexpr lc::Event kCompute{"compute"};
constexpr lc::Event kWait{"wait"};
constexpr lc::Event kStarve{"starve"};

int g_failures = 0;

void print_u(const char* name, std::uint64_t value) {
  std::printf(" %s=%llu", name, static_cast<unsigned long long>(value));
}

// Every field of the record; pointers as the names they point to.
void print(const lc::BlockRecord& r) {
  std::printf("record");
  print_u("report", r.report);
  std::printf(" phase=%s cause=%s", lc::to_string(r.phase), lc::to_string(r.cause));
  print_u("flags", r.flags);
  print_u("loop_index", r.loop_index);
  std::printf(" qualifier=%s loop=%s event=%s", r.qualifier, r.loop, r.event != nullptr ? r.event->name : "-");
  print_u("dispatch", r.dispatch);
  print_u("tick_hz", r.tick_hz);
  print_u("start", r.start);
  print_u("end", r.end);
  print_u("duration_ticks", r.duration_ticks);
  print_u("threshold_ticks", r.threshold_ticks);
  print_u("window_ticks", r.window_ticks);
  print_u("thread_cpu_us", r.thread_cpu_us);
  print_u("has_thread_cpu", r.has_thread_cpu);
  print_u("thread_wait_us", r.thread_wait_us);
  print_u("has_thread_wait", r.has_thread_wait);
  print_u("system_busy_permille", r.system_busy_permille);
  print_u("process_permille", r.process_permille);
  print_u("steal_us", r.steal_us);
  print_u("records_dropped", r.records_dropped);
  print_u("notes_dropped", r.notes_dropped);
  print_u("samples_taken", r.samples_taken);
  print_u("samples_missed", r.samples_missed);
  print_u("samples_overwritten", r.samples_overwritten);
  print_u("sample_count", r.sample_count);
  print_u("top_count", r.top_count);
  print_u("top_other", r.top_other);
  // Scope frames are names (their addresses differ between a device and the decoder).
  const auto frame = [](lc::Frame f, bool is_scope) {
    if (is_scope) {
      std::printf("%s", reinterpret_cast<const char*>(f));
    } else {
      std::printf("%llx", static_cast<unsigned long long>(f));
    }
  };
  for (std::uint8_t i = 0; i < r.top_count; ++i) {
    const lc::TopStack& t = r.top[i];
    std::printf(" top=%lu/%d/%d", static_cast<unsigned long>(t.count), t.scope_count, t.pc_count);
    for (std::uint8_t f = 0; f < t.scope_count + t.pc_count; ++f) {
      std::printf(",");
      frame(t.frames[f], f < t.scope_count);
    }
    std::printf("..%llx", static_cast<unsigned long long>(t.leaf_high));
  }
  for (std::uint8_t i = 0; i < r.sample_count; ++i) {
    const lc::Sample& s = r.samples[i];
    std::printf(" sample=%lu/%lu/%d/%d", static_cast<unsigned long>(s.at), static_cast<unsigned long>(s.seq),
                s.scope_count, s.pc_count);
    for (std::uint8_t f = 0; f < s.scope_count + s.pc_count; ++f) {
      std::printf(":");
      frame(s.frames[f], f < s.scope_count);
    }
  }
  std::printf("\n");
}

// A case: a machine, a loop and a watchdog with `rule`; `run` drives the loop.
template <class Run>
void run_case(const char* name, const lc::WatchdogConfig& rule, Run run) {
  sim::VirtualTime time(0xFFFF'0000u);  // the clock wraps during the case
  sim::Machine machine;
  sim::Thread thread;
  thread.pc = 0x1234;
  machine.set_pc_capture(true);
  sim::PortMonitor monitor{sim::Clock{time}};
#if LC_EVIDENCE_STREAM
  static lc::StaticEvidenceRing<1u << 16> ring;  // zero at the first case: discarded, then valid
  ring.open(lc::ResetCause::unknown);
  lc::StaticEvidenceWatchdog<1> watchdog;
#else
  lc::StaticWatchdog<1, 16> watchdog;
#endif
  sim::Scheduler scheduler(time, machine, watchdog, sim::ms(5));
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = sim::kTickHz;
  config.threshold_us = 50'000;
  config.sample_interval_us = 5'000;
  config.hang_limit_us = 300'000;
  config.context = &thread;
#if LC_EVIDENCE_STREAM
  const lc::Status watchdog_status = watchdog.init(rule, machine.hal(), ring);
#else
  const lc::Status watchdog_status = watchdog.init(rule, machine.hal());
#endif
  if (monitor.init(config) != lc::Status::ok || watchdog_status != lc::Status::ok ||
      watchdog.add(monitor) != lc::Status::ok) {
    std::printf("%s: init failed\n", name);
    ++g_failures;
    return;
  }
  std::printf("case %s\n", name);
  run(machine, thread, monitor, scheduler);
  scheduler.idle(sim::ms(20));
#if LC_EVIDENCE_STREAM
  // What the device sends, read by the tool as `loopcanary decode` reads a capture.
  std::vector<std::uint8_t> capture;
  const lc::PacketSink sink{[](void* context, const std::uint8_t* packet, std::size_t size) {
                              auto& bytes = *static_cast<std::vector<std::uint8_t>*>(context);
                              bytes.insert(bytes.end(), packet, packet + size);
                            },
                            &capture};
  ring.drain(sink);
  if (ring.stats().dropped != 0) {
    std::printf("%s: the evidence ring dropped packets\n", name);
    ++g_failures;
  }
  lc::tool::CaptureReader reader;
  reader.read(
      capture.data(), capture.size(), [](lc::tool::DecodedRecord& decoded) { print(decoded.record); },
      [name](lc::tool::WarningKind kind, std::uint64_t offset, const std::string& what) {
        if (kind == lc::tool::WarningKind::box_discarded) return;  // the ring's first open
        std::printf("%s: capture offset %llu: %s\n", name, static_cast<unsigned long long>(offset), what.c_str());
        ++g_failures;
      });
#else
  lc::BlockRecord r;
  while (watchdog.pop(r)) print(r);
#endif
}

}  // namespace

int main() {
  std::printf("LC_EVIDENCE_STREAM=%d (the output below must not depend on it)\n", LC_EVIDENCE_STREAM);
  const lc::WatchdogConfig defaults;
  run_case("compute", defaults, [](sim::Machine&, sim::Thread& thread, sim::PortMonitor& monitor, sim::Scheduler& s) {
    monitor.begin(kCompute);
    s.compute(thread, sim::ms(120));
    monitor.end();
  });
  run_case("wait", defaults, [](sim::Machine&, sim::Thread&, sim::PortMonitor& monitor, sim::Scheduler& s) {
    monitor.begin(kWait);
    s.wait(sim::ms(120));
    monitor.end();
  });
  run_case("starve", defaults, [](sim::Machine&, sim::Thread&, sim::PortMonitor& monitor, sim::Scheduler& s) {
    monitor.begin(kStarve);
    s.starve(sim::ms(120));
    monitor.end();
  });
  run_case("starve_run_queue", defaults,
           [](sim::Machine& machine, sim::Thread& thread, sim::PortMonitor& monitor, sim::Scheduler& s) {
             machine.set_thread_wait_available(true);
             monitor.begin(kStarve);
             s.compute(thread, sim::ms(20));
             s.starve(sim::ms(100), &thread);
             monitor.end();
           });
  run_case("no_counters", defaults,
           [](sim::Machine& machine, sim::Thread& thread, sim::PortMonitor& monitor, sim::Scheduler& s) {
             machine.set_counters_available(false);
             monitor.begin(kCompute);
             s.compute(thread, sim::ms(120));
             monitor.end();
           });
  run_case("hang", defaults,
           [](sim::Machine& machine, sim::Thread& thread, sim::PortMonitor& monitor, sim::Scheduler& s) {
             machine.set_other_load_permille(400);
             monitor.begin(kCompute);
             s.compute(thread, sim::ms(200));
             s.wait(sim::ms(150));
             monitor.end();
           });
  lc::WatchdogConfig strict;
  strict.cause.running_permille = 990;
  strict.cause.starved_busy_permille = 100;
  run_case("other_rule", strict,
           [](sim::Machine& machine, sim::Thread& thread, sim::PortMonitor& monitor, sim::Scheduler& s) {
             machine.set_other_load_permille(300);
             monitor.begin(kCompute);
             s.compute(thread, sim::ms(60));
             s.wait(sim::ms(60));
             monitor.end();
           });
  if (g_failures != 0) std::printf("FAILED: %d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
