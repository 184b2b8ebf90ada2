// SPDX-License-Identifier: MIT
// Rig of the adapter tests: a started port_linux::Setup whose interceptor collects every report
// (lctest::Collector), threshold 50 ms, no stderr, no environment. The loops are the adapted
// event loops, each run on a thread of the test that holds a ScopedLoop.
#pragma once

#include <cstdint>
#include <cstring>

#include "linux_rig.hpp"
#include "linux_setup.hpp"
#include "workloads.hpp"

namespace lctest {

class AdapterRig {
 public:
  Collector collector;
  lx::Setup setup;  // declared after the collector: stopped before it goes

  void start(std::uint32_t hang_ms = 5'000) {
    lx::SetupConfig config;
    config.environment = false;
    config.threshold_ms = 50;
    config.hang_ms = hang_ms;
    config.sample_interval_ms = 10;
    config.stderr_reports = false;
    config.fifo_priority = 2;  // above a loop thread that prefer_this_thread() lifted, when allowed
    config.interceptor = &Collector::intercept;
    config.interceptor_context = &collector;
    const lx::SetupStatus s = setup.start(config);
    ASSERT_TRUE(s.ok()) << s.message;
  }
};

/// True when `record` is of an event named `name`.
inline bool event_named(const lc::BlockRecord& record, const char* name) {
  return record.event != nullptr && std::strcmp(record.event->name, name) == 0;
}

}  // namespace lctest
