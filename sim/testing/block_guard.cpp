// SPDX-License-Identifier: MIT
#include "loopcanary_testing/block_guard.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "loopcanary/format.hpp"
#include "loopcanary/linux/symbolizer.hpp"
#include "loopcanary/time.hpp"
#include "simrt/run_sink.hpp"

namespace loopcanary::testing {

namespace {

constexpr std::uint32_t kMinIntervalUs = 100;  // the board's shortest poll period
constexpr std::uint32_t kMaxBudgetUs = 5'000'000;  // the monitor's default hang limit

std::string format_ms(std::uint64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%" PRIu64 ".%03" PRIu64 " ms", us / 1000, us % 1000);
  return text;
}

bool has_scope(const TopStack& stack, const char* scope) {
  for (std::size_t i = 0; i < stack.scope_count; ++i) {
    const auto* name = reinterpret_cast<const char*>(stack.frames[i]);
    if (name != nullptr && std::strcmp(name, scope) == 0) return true;
  }
  return false;
}

}  // namespace

struct BlockGuard::Parts {
  StaticWatchdog<1, 64> watchdog;
  simrt::CulpritFinder culprits;
  port_linux::Symbolizer symbolizer;
};

BlockGuard::BlockGuard(simrt::Board& board, GuardConfig config, FailureCallback on_failure)
    : board_(board), config_(std::move(config)), on_failure_(std::move(on_failure)),
      real_(std::strcmp(board.time_name(), "real") == 0), parts_(std::make_unique<Parts>()) {
  std::uint32_t smallest = config_.budget_us;
  for (const ScopeBudget& scope : config_.scopes) {
    if (scope.scope == nullptr || scope.scope[0] == '\0') {
      error_ = "GuardConfig::scopes: a scope budget names no scope";
      return;
    }
    if (scope.budget_us == 0 || scope.budget_us > kMaxBudgetUs) {
      error_ = "GuardConfig::scopes: a scope budget is outside 1..5'000'000";
      return;
    }
    smallest = std::min(smallest, scope.budget_us);
  }
  if (config_.budget_us == 0 || config_.budget_us > kMaxBudgetUs) {
    error_ = "GuardConfig::budget_us is outside 1..5'000'000";
    return;
  }
  sample_interval_us_ = config_.sample_interval_us != 0 ? config_.sample_interval_us
                                                         : std::max(kMinIntervalUs, smallest / 10);
  if (sample_interval_us_ < kMinIntervalUs || sample_interval_us_ > smallest) {
    error_ = "GuardConfig::sample_interval_us is outside 100..the smallest budget";
    return;
  }
  MonitorConfig monitor;
  monitor.name = config_.loop;
  monitor.tick_hz = board_.tick_hz();
  // Every dispatch over the smallest budget gets a record; finish() judges each against the
  // budget that applies to it.
  monitor.threshold_us = smallest;
  monitor.arm_permille = 0;  // sample from the first poll: scope times count every sample
  monitor.sample_interval_us = sample_interval_us_;
  monitor.context = board_.loop_context();
  const Status status = monitor_.init(monitor);
  if (status != Status::ok) {
    error_ = describe(status);
    return;
  }
  if (parts_->watchdog.init(WatchdogConfig{}, board_.hal()) != Status::ok ||
      parts_->watchdog.add(monitor_) != Status::ok) {
    error_ = "the watchdog refused the test's loop";
  }
}

BlockGuard::~BlockGuard() {
  if (!finished_) finish();
}

Watchdog& BlockGuard::watchdog() noexcept { return parts_->watchdog; }

bool BlockGuard::start(const simrt::BoardStart& extra) noexcept {
  if (error_[0] != '\0') return false;
  simrt::BoardStart start = extra;
  start.watchdog = &parts_->watchdog;
  start.poll_period_us = sample_interval_us_;
  start.sink = &BlockGuard::take;
  start.sink_context = this;
  start.on_time = &BlockGuard::on_time;  // virtual time: the exact time in each budgeted scope
  start.on_time_context = this;
  const simrt::BoardError error = board_.start(start);
  if (error != simrt::BoardError::none) {
    error_ = simrt::describe(error);
    return false;
  }
  started_ = true;
  return true;
}

void BlockGuard::take(void* self, const BlockRecord& record) noexcept {
  auto& guard = *static_cast<BlockGuard*>(self);
  const std::lock_guard<std::mutex> lock(guard.records_mutex_);
  guard.records_.push_back(record);
}

void BlockGuard::on_time(void* self, tick_t ticks) noexcept {
  auto& guard = *static_cast<BlockGuard*>(self);
  if (guard.config_.scopes.empty()) return;
  StampSnapshot snap;
  if (!guard.monitor_.snapshot(snap) || !snap.in_dispatch()) return;
  const char* names[detail::kScopeSlots];
  std::size_t count = 0;
  if (!guard.monitor_.scope_snapshot(names, kScopeDepth, count)) return;  // the loop thread: never torn
  ScopeTicks& dispatch = guard.scope_ticks_[(snap.seq + 1u) / 2u];
  dispatch.event = snap.event;
  dispatch.ticks.resize(guard.config_.scopes.size());
  for (std::size_t b = 0; b < guard.config_.scopes.size(); ++b) {
    for (std::size_t i = 0; i < count; ++i) {
      if (names[i] != nullptr && std::strcmp(names[i], guard.config_.scopes[b].scope) == 0) {
        dispatch.ticks[b] += ticks;
        break;
      }
    }
  }
}

// Virtual time: every dispatch's exact time in each budgeted scope, whether or not it made a
// record (the record, when there is one, goes into the failure's report).
void BlockGuard::judge_scopes_exactly() {
  for (const auto& [number, dispatch] : scope_ticks_) {
    for (std::size_t b = 0; b < dispatch.ticks.size(); ++b) {
      const std::uint64_t us = us_from_ticks(dispatch.ticks[b], board_.tick_hz());
      const ScopeBudget& scope = config_.scopes[b];
      if (us <= scope.budget_us) continue;
      BlockRecord record;
      bool found = false;
      for (const BlockRecord& r : records_) {
        if (r.dispatch == number && (r.phase == Phase::final || (!found && r.phase == Phase::hang))) {
          record = r;
          found = true;
        }
      }
      if (!found) {  // within every threshold: no record, only what the guard measured
        record.dispatch = number;
        record.event = dispatch.event;
        record.loop = config_.loop;
        record.tick_hz = board_.tick_hz();
      }
      fail(record, std::string("scope ") + scope.scope, us, scope.budget_us, found);
    }
  }
}

std::uint64_t BlockGuard::thread_cpu_us() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

void BlockGuard::note_cpu(std::uint32_t dispatch, std::uint64_t cpu_us) {
  if (real_ && !config_.wall_time) cpu_us_[dispatch] = cpu_us;
}

std::size_t BlockGuard::finish() {
  if (finished_) return failures_.size();
  finished_ = true;
  if (started_) board_.finish();
  std::vector<BlockRecord> records;
  {
    const std::lock_guard<std::mutex> lock(records_mutex_);
    records = records_;
  }
  for (const BlockRecord& record : records) {
    // A hung dispatch that ended has a final record too: judge that one only.
    const bool ended_later = record.phase == Phase::hang &&
                             std::any_of(records.begin(), records.end(), [&](const BlockRecord& other) {
                               return other.phase == Phase::final && other.dispatch == record.dispatch;
                             });
    if (!ended_later) judge(record);
  }
  if (!real_) judge_scopes_exactly();
  return failures_.size();
}

void BlockGuard::judge(const BlockRecord& record) {
  if (record.phase != Phase::final && record.phase != Phase::hang) return;
  if (record.event == nullptr) return;
  // The event's budget: its own threshold, with the loop's budget as the floor (as the core
  // applies Event::threshold_us).
  const std::uint32_t budget = std::max(config_.budget_us, record.event->threshold_us);
  std::uint64_t duration = us_from_ticks(record.duration_ticks, record.tick_hz);
  std::string measure = real_ ? "wall time" : "virtual time";
  const auto cpu = cpu_us_.find(record.dispatch);
  if (real_ && !config_.wall_time && cpu != cpu_us_.end() && record.phase == Phase::final) {
    duration = cpu->second;
    measure = "CPU time";
  }
  if (duration > budget) fail(record, measure, duration, budget, true);

  if (!real_) return;  // virtual time: judge_scopes_exactly()
  for (const ScopeBudget& scope : config_.scopes) {
    // Every sample of the dispatch that had the scope on its stack (the stack table).
    std::uint64_t in_scope = 0;
    for (std::size_t i = 0; i < record.top_count; ++i) {
      if (has_scope(record.top[i], scope.scope)) in_scope += record.top[i].count;
    }
    const std::uint64_t us = in_scope * sample_interval_us_;
    if (us > scope.budget_us) {
      fail(record, std::string("scope ") + scope.scope + ", sampled every " + format_ms(sample_interval_us_), us,
           scope.budget_us, true);
    }
  }
}

void BlockGuard::fail(const BlockRecord& record, std::string measure, std::uint64_t duration_us,
                      std::uint32_t budget_us, bool has_record) {
  Failure failure;
  failure.record = record;
  failure.event = record.event != nullptr ? record.event->name : "?";
  failure.measure = std::move(measure);
  failure.duration_us = duration_us;
  failure.budget_us = budget_us;
  char function[simrt::kCulpritMax] = {};
  std::uint32_t votes = 0;
  std::uint32_t voters = 0;
  if (has_record && parts_->culprits.find(record, function, sizeof function, votes, voters)) failure.function = function;

  std::string& text = failure.report;
  const bool is_scope = failure.measure.compare(0, 6, "scope ") == 0;
  const char* whose = is_scope ? "its scope's"
                      : record.event != nullptr && record.event->threshold_us > config_.budget_us ? "the event's"
                                                                                                : "the loop's";
  text += "loopcanary: dispatch " + std::to_string(record.dispatch) + " of event \"" + failure.event + "\" on loop \"" +
          record.loop + "\" " + (record.phase == Phase::hang ? "hung: " : "") + "ran " + format_ms(duration_us) +
          " (" + failure.measure + "), over " + whose + " budget of " + format_ms(budget_us) + "\n";
  if (!has_record) {
    text += "  (the dispatch stayed within its thresholds: no record; its time in the scope is exact, in virtual time)\n";
  } else {
    text += "  cause: " + std::string(to_string(record.cause)) + "\n";
    text += "  culprit: " + (failure.function.empty() ? std::string("(no sample named one)") : failure.function) +
            (voters != 0 ? " (" + std::to_string(votes) + "/" + std::to_string(voters) + " samples)" : "") + "\n";

    // The record in the core's text form (the same as a device's log).
    std::string record_text(format_text(record, nullptr, 0).needed + 1, '\0');
    const FormatResult result = format_text(record, record_text.data(), record_text.size());
    record_text.resize(result.length);
    text += record_text;

    // Every sample of the dispatch by its stack (the stack table), symbolised in this process.
    if (record.top_count != 0) text += "stacks (every sample, by stack; innermost first), symbolised:\n";
    for (std::size_t e = 0; e < record.top_count; ++e) {
      const TopStack& t = record.top[e];
      text += "  " + std::to_string(t.count) + " of " + std::to_string(record.samples_taken) + " samples:\n";
      for (std::size_t i = 0; i < t.scope_count; ++i) {
        text += "    scope " + std::string(reinterpret_cast<const char*>(t.frames[i])) + "\n";
      }
      for (std::size_t i = 0; i < t.pc_count; ++i) {
        const Frame pc = t.frames[t.scope_count + i];
        port_linux::Symbol symbol;
        char line[512];
        if (parts_->symbolizer.symbolize(pc, i != 0, symbol) && symbol.has_function) {
          std::snprintf(line, sizeof line, "    0x%" PRIxPTR " %s+0x%" PRIx64 " (%s)\n", pc, symbol.function,
                        symbol.function_offset, symbol.module_path);
        } else {
          std::snprintf(line, sizeof line, "    0x%" PRIxPTR " (%s)\n", pc, symbol.in_module ? symbol.module_path : "?");
        }
        text += line;
      }
    }
  }
  failures_.push_back(failure);
  if (on_failure_) on_failure_(failures_.back());
}

bool BlockGuard::blocked(const Event& event) const noexcept {
  return std::any_of(failures_.begin(), failures_.end(),
                     [&](const Failure& f) { return f.record.event == &event; });
}

std::string BlockGuard::report() const {
  std::string all;
  for (const Failure& failure : failures_) all += failure.report;
  return all;
}

}  // namespace loopcanary::testing
