// SPDX-License-Identifier: MIT
// RunSink: where the records of a simulator run go (Board::drain gives it each one). For each
// record it names the culprit (the innermost frame in the firmware's own code, symbolised), prints
// BlockCanary's notification (one live line on stderr when a block starts, turns into a hang,
// and ends), writes the record to the Linux port's file sink, passes it to the firmware's own
// policy hook (resetting a wedged peripheral, say) and keeps the final ones for the summary.
//
// Summary: blocks by event (worst duration, cause, top scope, top function, events delayed),
// each block's stages and the events it held up; per event type its rate over the run, queue
// latency (from the core's counters: p50, p95 and p99 as the upper bounds of their log2
// buckets, capped at the maximum, and the maximum itself), and for a type with a period or a
// deadline its deadline misses and missed periods; the loop's load, idle share and dispatch
// rate over the run (Runtime::totals()); loop and watchdog counters; as text tables or one
// JSON object.
//
// A deadline-miss record (Phase::deadline_miss) is counted per event; the first of each event
// gets a live line, the others are counted in the summary only (an overloaded loop misses
// hundreds).
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "loopcanary/linux/file_sink.hpp"
#include "loopcanary/linux/symbolizer.hpp"
#include "loopcanary/monitor.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/watchdog.hpp"
#include "simrt/board.hpp"
#include "simrt/runtime.hpp"

namespace loopcanary::simrt {

/// Final records a RunSink keeps for the summary; more are counted.
inline constexpr std::size_t kMaxKeptRecords = 64;
/// Longest culprit name kept (longer ones are cut).
inline constexpr std::size_t kCulpritMax = 96;

/// A record's culprit, named in this process.
class CulpritFinder {
 public:
  /// Loads the symbol tables now (start-up), not at the first block.
  CulpritFinder() noexcept;

  /// `record`'s culprit by the one culprit rule (docs/tool.md, "Culprit";
  /// loopcanary_culprit/culprit_rule.hpp) over its stack table, every sample of the dispatch:
  /// its program counters symbolised with the Linux port's Symbolizer, labelled as the tool
  /// labels them (so `loopcanary report` names the same culprit from the record's log line).
  /// Writes the label, the samples whose culprit it is (`votes`) and the samples of the
  /// dispatch (`voters`); false when no sample has a culprit frame. Allocates (host only).
  bool find(const BlockRecord& record, char* name, std::size_t size, std::uint32_t& votes, std::uint32_t& voters);

 private:
  port_linux::Symbolizer symbolizer_;
};

/// What the run_sink kept of one final record.
struct KeptRecord {
  BlockRecord record;
  /// When the dispatch started, microseconds from the start of the run (Board::us_since_start
  /// when the record arrived: exact however long the run goes on after it). 0 without a board.
  std::uint64_t start_us = 0;
  char function[kCulpritMax] = {};  ///< the culprit (CulpritFinder::find), "" when none
  std::uint32_t function_votes = 0;  ///< samples whose culprit it is
  std::uint32_t function_voters = 0; ///< samples of the dispatch
};

struct RunSinkConfig {
  Board* board = nullptr;                    ///< for times relative to the start of the run (may be null: none)
  std::FILE* live = stderr;                  ///< live lines; null: none
  port_linux::FileSink* sink = nullptr;      ///< every record is written here when set (its status()
                                             ///< counts what could not be)
  Sink on_record = nullptr;        ///< the firmware's policy hook, after the rest
  void* on_record_context = nullptr;
};

class RunSink {
 public:
  explicit RunSink(const RunSinkConfig& config) noexcept;
  RunSink(const RunSink&) = delete;
  RunSink& operator=(const RunSink&) = delete;

  /// A simrt::Sink: `self` is the RunSink. Watchdog context.
  static void take(void* self, const BlockRecord& record) noexcept;

  // After the run (the board finished, so the watchdog context is over).
  std::size_t kept_count() const noexcept { return kept_count_; }
  const KeptRecord& kept(std::size_t i) const noexcept { return kept_[i]; }
  std::uint32_t not_kept() const noexcept { return not_kept_; }
  std::uint32_t in_progress_reports() const noexcept { return in_progress_; }
  std::uint32_t hang_reports() const noexcept { return hangs_; }
  std::uint32_t final_reports() const noexcept { return finals_; }
  std::uint32_t deadline_miss_reports() const noexcept { return deadline_misses_; }

 private:
  void handle(const BlockRecord& record) noexcept;
  void print_live(const BlockRecord& record, const char* function) noexcept;

  RunSinkConfig config_;
  CulpritFinder culprits_;
  std::unique_ptr<KeptRecord[]> kept_;  // allocated once, at construction
  std::size_t kept_count_ = 0;
  std::uint32_t not_kept_ = 0;
  std::uint32_t in_progress_ = 0;
  std::uint32_t hangs_ = 0;
  std::uint32_t finals_ = 0;
  std::uint32_t deadline_misses_ = 0;
  const Event* missed_[kMaxEventTypes] = {};  // events whose first deadline miss had its live line
  std::size_t missed_count_ = 0;
};


/// What the summary says about the run as a whole.
struct SummaryHeader {
  const char* program = "";
  const char* firmware = "";     ///< firmware name and version
  const char* time = "";         ///< "real" or "virtual"
  const char* clock = "";        ///< the board's clock ("tsc", "clock_monotonic", "virtual 1 MHz")
  const char* scenarios = "";    ///< what ran
  std::uint32_t threshold_us = 0;
  std::uint32_t hang_limit_us = 0;
  std::uint64_t run_us = 0;
};

struct SummaryInput {
  SummaryHeader header;
  const Runtime* runtime = nullptr;
  const RunSink* run_sink = nullptr;
  const Monitor* monitor = nullptr;
  const Watchdog* watchdog = nullptr;
  const Board* board = nullptr;
};

/// Tables for people.
void print_summary_text(std::FILE* out, const SummaryInput& input);
/// One JSON object on one line, for scripts.
void print_summary_json(std::FILE* out, const SummaryInput& input);

}  // namespace loopcanary::simrt
