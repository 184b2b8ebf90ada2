// SPDX-License-Identifier: MIT
// Helpers of the tool's tests: fixture paths, temporary directories and files, records.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "../temp_dir.hpp"
#include "loopcanary/format.hpp"
#include "loopcanary/health.hpp"
#include "model.hpp"

namespace loopcanary::tool::test {

inline std::string fixture(const std::string& name) { return std::string(LOOPCANARY_TOOL_FIXTURES) + "/" + name; }

using loopcanary::test::TempDir;  // tests/temp_dir.hpp

/// One JSON line of a report (docs/report-format.md), with the fields the tests vary.
struct RecordSpec {
  std::uint64_t report = 1;
  const char* phase = "final";
  std::uint64_t dispatch = 5;
  std::uint64_t start = 1000;
  std::uint64_t duration_us = 200000;
  const char* loop = "main";
  const char* event = "ota";
  const char* cause = "running";
  const char* flags = "";
  /// The "stacks" array's items, e.g. {"at_us":1,"scopes":["s"],"pcs":["0x10"]}.
  std::string stacks = "{\"at_us\":30000,\"scopes\":[\"crc\"],\"pcs\":[\"0x1234\"]}";
  /// Extra top-level members, each starting with a comma.
  std::string extra;
};

inline std::string json_line(const RecordSpec& s) {
  return "{\"report\":" + std::to_string(s.report) + ",\"phase\":\"" + s.phase +
         "\",\"qualifier\":\"fw-1.0\",\"loop\":\"" + s.loop + "\",\"loop_index\":0,\"event\":\"" + s.event +
         "\",\"dispatch\":" + std::to_string(s.dispatch) + ",\"tick_hz\":1000000,\"start\":" + std::to_string(s.start) +
         ",\"end\":" + std::to_string(s.start + s.duration_us) + ",\"duration_ticks\":" + std::to_string(s.duration_us) +
         ",\"duration_us\":" + std::to_string(s.duration_us) + ",\"threshold_us\":100000,\"cause\":\"" + s.cause +
         "\",\"flags\":[" + s.flags + "],\"samples\":{\"taken\":1,\"kept\":1,\"overwritten\":0,\"missed\":0},\"stacks\":[" +
         s.stacks + "],\"records_dropped\":0,\"notes_dropped\":0" + s.extra + "}\n";
}

/// The core's JSON line of a health record (format_health_json), newline included.
inline std::string health_line(const loopcanary::HealthRecord& record) {
  std::string text(1 << 16, '\0');
  text.resize(loopcanary::format_health_json(record, &text[0], text.size()).length);
  return text;
}

/// A health record of loop `loop` for the window [start, start + window) at 1 MHz: `dispatches`
/// ended, `busy` ticks of them, `idle` ticks reported idle (negative: none), and one event type
/// `event` with the given p99 and counts (the other percentiles below it).
struct HealthSpecJson {
  std::uint32_t number = 1;
  const char* loop = "main";
  std::uint8_t loop_index = 0;
  loopcanary::tick_t start = 0;
  loopcanary::tick_t window = 1000000;
  std::uint32_t dispatches = 500;
  loopcanary::tick_t busy = 250000;
  long long idle = 700000;
  const loopcanary::Event* event = nullptr;
  std::uint32_t event_dispatches = 100;
  loopcanary::tick_t p99 = 900;
  std::uint32_t misses = 0;
  std::uint32_t missed_periods = 0;
};

inline loopcanary::HealthRecord health_record(const HealthSpecJson& s) {
  loopcanary::HealthRecord h{};
  h.number = s.number;
  h.qualifier = "fw-1.0";
  h.loop = s.loop;
  h.loop_index = s.loop_index;
  h.tick_hz = 1000000;
  h.start = s.start;
  h.end = static_cast<loopcanary::tick_t>(s.start + s.window);
  h.dispatches = s.dispatches;
  h.busy_ticks = s.busy;
  h.has_idle = s.idle >= 0;
  h.idle_ticks = s.idle >= 0 ? static_cast<loopcanary::tick_t>(s.idle) : 0;
  if (s.event != nullptr) {
    h.event_count = 1;
    loopcanary::EventHealthWindow& e = h.events[0];
    e.event = s.event;
    e.dispatches = s.event_dispatches;
    e.p50 = s.p99 / 4;
    e.p95 = s.p99 / 2;
    e.p99 = s.p99;
    e.max_latency = s.p99;
    e.deadline_misses = s.misses;
    e.missed_periods = s.missed_periods;
    e.period_ticks = 10000;
    e.deadline_ticks = 5000;
  }
  return h;
}

}  // namespace loopcanary::tool::test
