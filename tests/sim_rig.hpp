// SPDX-License-Identifier: MIT
// The core tests' rig: one loop and one watchdog on the sim port, in virtual time. Built fresh
// per test: virtual time starting at `start`, the simulated machine and loop thread, a monitor,
// the watchdog (type Watchdog: its capacities are the test's), and after start() the scheduler
// that polls it. Every report reaches `reports`, in order, through an interceptor.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"

namespace loopcanary::test {

/// `base + offset` in the tick width (wraps like the counter).
constexpr tick_t later(tick_t base, tick_t offset) { return static_cast<tick_t>(base + offset); }

/// An interceptor (or sink) that appends each record to the std::vector<BlockRecord> `context`.
inline void collect(void* context, const BlockRecord& record) {
  static_cast<std::vector<BlockRecord>*>(context)->push_back(record);
}

template <class Watchdog>
struct SimRig {
  explicit SimRig(tick_t start) : start_tick(start), time(start), monitor(sim::Clock{time}) {}
  SimRig(const SimRig&) = delete;
  SimRig& operator=(const SimRig&) = delete;

  /// Initialises the monitor with `config` (tick rate and thread filled in) and the watchdog
  /// with `dog`, registers the loop, optionally the collecting interceptor, and starts the
  /// scheduler: the first poll is one `period` from now. A failure names the call that failed.
  testing::AssertionResult start(MonitorConfig config, tick_t period, const WatchdogConfig& dog = {},
                                 bool collect_reports = true) {
    config.tick_hz = sim::kTickHz;
    config.context = &thread;
    if (const Status s = monitor.init(config); s != Status::ok) {
      return testing::AssertionFailure() << "monitor.init: " << describe(s);
    }
    if (const Status s = watchdog.init(dog, machine.hal()); s != Status::ok) {
      return testing::AssertionFailure() << "watchdog.init: " << describe(s);
    }
    if (const Status s = watchdog.add(monitor); s != Status::ok) {
      return testing::AssertionFailure() << "watchdog.add: " << describe(s);
    }
    if (collect_reports) {
      if (const Status s = watchdog.add_interceptor(&collect, &reports); s != Status::ok) {
        return testing::AssertionFailure() << "add_interceptor: " << describe(s);
      }
    }
    scheduler.emplace(time, machine, watchdog, period);
    return testing::AssertionSuccess();
  }

  tick_t now() const { return time.peek(); }

  void compute(tick_t ticks) { scheduler->compute(thread, ticks); }
  void wait(tick_t ticks) { scheduler->wait(ticks); }
  void starve(tick_t ticks) { scheduler->starve(ticks); }
  /// The loop thread sits in the run queue (its run-queue wait grows) on a saturated machine.
  void starve_runnable(tick_t ticks) { scheduler->starve(ticks, &thread); }
  void idle(tick_t ticks) { scheduler->idle(ticks); }

  /// Idles until `offset` ticks after the start tick (not before now).
  void idle_until(tick_t offset) { idle(ticks_between(now(), later(start_tick, offset))); }

  /// Idles up to the next poll and lets it run: the next dispatch begins exactly at a poll.
  void align() { idle(ticks_between(now(), scheduler->next_poll())); }

  /// Runs `body` as one dispatch of `event`; returns the begin stamp.
  template <class Body>
  tick_t dispatch(const Event& event, Body&& body) {
    const tick_t begin = now();
    LOOPCANARY_DISPATCH(monitor, event);
    body();
    return begin;
  }

  /// A dispatch of `event` whose handler computes for `ticks`; returns the begin stamp.
  tick_t run(const Event& event, tick_t ticks) {
    return dispatch(event, [&] { compute(ticks); });
  }

  /// The first report of `phase` about dispatch number `dispatch_number`, if any.
  std::optional<BlockRecord> find(std::uint32_t dispatch_number, Phase phase) const {
    for (const BlockRecord& r : reports) {
      if (r.dispatch == dispatch_number && r.phase == phase) return r;
    }
    return std::nullopt;
  }

  /// Every report about dispatch number `dispatch_number`, in order.
  std::vector<BlockRecord> of(std::uint32_t dispatch_number) const {
    std::vector<BlockRecord> out;
    for (const BlockRecord& r : reports) {
      if (r.dispatch == dispatch_number) out.push_back(r);
    }
    return out;
  }

  const tick_t start_tick;
  sim::VirtualTime time;
  sim::Machine machine;
  sim::Thread thread;
  sim::PortMonitor monitor;
  Watchdog watchdog;
  std::optional<sim::Scheduler> scheduler;
  std::vector<BlockRecord> reports;
};

}  // namespace loopcanary::test
