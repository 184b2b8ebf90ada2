// SPDX-License-Identifier: MIT
// BlockGuard: block budgets in a hosted unit test. A test creates one around the code under
// test; the guard wires a monitor and a watchdog for the test's loop on a simulator board
// (loopcanary::simrt), collects every record the watchdog makes, and at its end (finish(), or
// the destructor) fails the test once for each dispatch over its budget, through a failure
// callback, with the block as a report: event, duration, budget, cause, scopes, and the stacks
// symbolised (core format_text plus the Linux port's Symbolizer).
//
// Budgets: one per loop (GuardConfig::budget_us), one per event (its Event::threshold_us, as
// in the core: the loop's budget is the floor), one per named scope (GuardConfig::scopes).
//
// Time bases (docs/testing.md):
//   virtual (simrt::VirtualBoard)  board time, exact and deterministic: what the handlers'
//                                  simulated costs (Board::compute, wait_us) add up to.
//   real (simrt::RealBoard)        the loop thread's CPU time per dispatch by default, so a
//                                  test descheduled on a loaded machine does not fail; wall
//                                  time when GuardConfig::wall_time is set. CPU time needs the
//                                  dispatch to go through BlockGuard::dispatch().
//
// The core is framework-neutral (FailureCallback); loopcanary_testing/gtest.hpp connects it to
// GoogleTest. Host only: the guard allocates (records, reports) and uses the standard library.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loopcanary/event.hpp"
#include "loopcanary/monitor.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/watchdog.hpp"
#include "simrt/board.hpp"

namespace loopcanary::testing {

/// The budget of one named scope (LOOPCANARY_SCOPE): a dispatch that spends more than
/// `budget_us` inside the scope fails, whether or not the dispatch is over its own budget. In
/// virtual time the time in the scope is exact: the board reports every tick it advances, and
/// the guard adds it to each budgeted scope on the loop's scope stack then. In real time it is
/// sampled: every sample of the dispatch (its stack table) that had the scope on the stack, times
/// the sample interval, off by up to one interval each time the scope is entered or left, and
/// judged only for a dispatch that made a record (longer than the smallest budget and its
/// event's own threshold).
struct ScopeBudget {
  const char* scope = "";         ///< the scope's name, as given to LOOPCANARY_SCOPE
  /// 1..5'000'000; above GuardConfig::budget_us only when the scope's events have a budget
  /// (Event::threshold_us) of their own at least as large.
  std::uint32_t budget_us = 0;
};

struct GuardConfig {
  /// Loop name in the reports. Static, non-empty.
  const char* loop = "test";
  /// Per loop: a dispatch longer than this (strictly), microseconds, fails. 1..5'000'000.
  std::uint32_t budget_us = 10'000;
  /// Per scope, besides the loop's and the events' budgets.
  std::vector<ScopeBudget> scopes;
  /// Stack-sample interval (and watchdog poll period), microseconds; 0 picks a tenth of the
  /// smallest budget, at least 100 (the board's shortest poll period). 100..the smallest budget.
  std::uint32_t sample_interval_us = 0;
  /// Real time only: judge a dispatch by its wall time instead of the loop thread's CPU time.
  /// Virtual time is always judged by board time.
  bool wall_time = false;
};

/// One dispatch over its budget.
struct Failure {
  BlockRecord record;            ///< the watchdog's final (or hang) record of the dispatch
  const char* event = "";        ///< its event's name
  /// What was judged: "virtual time", "CPU time", "wall time", or "scope NAME" for a scope.
  std::string measure;
  std::uint64_t duration_us = 0; ///< the judged duration (for a scope: its sampled time)
  std::uint32_t budget_us = 0;   ///< the budget it exceeded
  std::string function;          ///< the culprit (docs/tool.md, "Culprit") over every sample, "" when none
  std::string report;            ///< the whole report, as the failure message shows it
};

/// Called once per failure by finish(). Loop thread.
using FailureCallback = std::function<void(const Failure& failure)>;

class BlockGuard {
 public:
  /// Initialises the monitor and the watchdog on `board` (not started yet: call start()).
  /// `board` must outlive the guard (declare it first). `on_failure` may be empty (read
  /// failures() or report() instead). A configuration out of range leaves the guard unusable:
  /// error() says which field, start() returns false. Loop thread (in real time, the thread
  /// RealBoard::init attached).
  BlockGuard(simrt::Board& board, GuardConfig config, FailureCallback on_failure = {});
  /// finish(), when not called yet.
  ~BlockGuard();
  BlockGuard(const BlockGuard&) = delete;
  BlockGuard& operator=(const BlockGuard&) = delete;

  /// The test's loop: give it to simrt::Runtime, or dispatch through dispatch(). Initialised
  /// by the constructor (unless error() says otherwise). Loop thread.
  Monitor& monitor() noexcept { return monitor_; }
  /// The watchdog watching monitor(); the board polls it once started. Set-up only (before
  /// start()), e.g. to add an interceptor.
  Watchdog& watchdog() noexcept;

  /// Starts the board (its watchdog and record sink are the guard's; the rest of `extra`,
  /// such as interrupt lines and peripherals, is passed on). Loop thread. False with error()
  /// when the configuration was refused or the board refused to start.
  bool start(const simrt::BoardStart& extra = simrt::BoardStart{}) noexcept;

  /// One dispatch of `event` (static storage, as every Event) on the test's loop: `handler()`
  /// between the monitor's begin and end stamps on the board's clock, with its CPU time
  /// measured in real time. Loop thread, after start(); `handler` must not throw.
  template <typename Handler>
  void dispatch(const Event& event, Handler&& handler) {
    const std::uint32_t number = monitor_.stats().dispatches + 1u;
    const std::uint64_t cpu_before = thread_cpu_us();
    monitor_.begin_at(event, board_.now());
    handler();
    monitor_.end_at(board_.now());
    note_cpu(number, thread_cpu_us() - cpu_before);
  }

  /// Finishes the board, judges every final record (and the hang record of a dispatch that
  /// never ended) against its budgets and calls the failure callback once per budget a
  /// dispatch exceeded. Loop thread. Idempotent; the number of failures.
  std::size_t finish();

  /// Every record the watchdog made (in progress, hang, final, deadline miss), in order. After
  /// finish() (before it the watchdog may still be adding to it).
  const std::vector<BlockRecord>& records() const noexcept { return records_; }
  /// The dispatches over budget, after finish().
  const std::vector<Failure>& failures() const noexcept { return failures_; }
  /// Whether a dispatch of `event` went over a budget (a failure names it), after finish().
  bool blocked(const Event& event) const noexcept;
  /// Every failure's report, one after the other ("" when none). After finish().
  std::string report() const;
  /// Why the guard is unusable, "" when it is not.
  const char* error() const noexcept { return error_; }
  /// The sample interval in use, microseconds.
  std::uint32_t sample_interval_us() const noexcept { return sample_interval_us_; }

 private:
  static void take(void* self, const BlockRecord& record) noexcept;
  static void on_time(void* self, tick_t ticks) noexcept;
  void judge_scopes_exactly();
  static std::uint64_t thread_cpu_us() noexcept;
  void note_cpu(std::uint32_t dispatch, std::uint64_t cpu_us);
  void judge(const BlockRecord& record);
  void fail(const BlockRecord& record, std::string measure, std::uint64_t duration_us, std::uint32_t budget_us,
            bool has_record);

  struct Parts;
  simrt::Board& board_;
  GuardConfig config_;
  FailureCallback on_failure_;
  bool real_ = false;
  std::uint32_t sample_interval_us_ = 0;
  Monitor monitor_;
  std::unique_ptr<Parts> parts_;  // the watchdog and the symbolisers
  const char* error_ = "";
  bool started_ = false;
  bool finished_ = false;
  std::mutex records_mutex_;  // the sink runs on the watchdog's thread in real time
  std::vector<BlockRecord> records_;
  std::map<std::uint32_t, std::uint64_t> cpu_us_;  // dispatch number -> its CPU time (real time)
  // Virtual time: per dispatch number, its event and its ticks inside each budgeted scope.
  struct ScopeTicks {
    const Event* event = nullptr;
    std::vector<std::uint64_t> ticks;  // per GuardConfig::scopes entry
  };
  std::map<std::uint32_t, ScopeTicks> scope_ticks_;
  std::vector<Failure> failures_;
};

}  // namespace loopcanary::testing
