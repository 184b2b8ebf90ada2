// SPDX-License-Identifier: MIT
#include "simrt/run_sink.hpp"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "loopcanary/format.hpp"
#include "loopcanary_culprit/culprit_rule.hpp"

namespace loopcanary::simrt {
namespace {

void copy_text(char* out, std::size_t size, const char* text) noexcept {
  if (size == 0) return;
  std::size_t n = std::strlen(text);
  if (n >= size) n = size - 1;
  std::memcpy(out, text, n);
  out[n] = '\0';
}


// Microseconds as milliseconds with one decimal: "400.0".
std::string ms_text(std::uint64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%llu.%llu", static_cast<unsigned long long>(us / 1000u),
                static_cast<unsigned long long>(us % 1000u / 100u));
  return text;
}

// Microseconds as seconds with three decimals: "1.100".
std::string s_text(std::uint64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%llu.%03llu", static_cast<unsigned long long>(us / 1'000'000u),
                static_cast<unsigned long long>(us % 1'000'000u / 1000u));
  return text;
}

std::string number(std::uint64_t value) { return std::to_string(value); }

// A value in tenths with one decimal: 931 -> "93.1".
std::string tenths_text(std::uint64_t tenths) {
  return std::to_string(tenths / 10u) + "." + std::to_string(tenths % 10u);
}

// `part` of `whole` per mille, rounded down, at most 1000; 0 for an empty whole. The rule of the
// core's share_permille(), over a whole run (64 bits: a run outlasts the tick wrap).
std::uint64_t permille_of(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return 0;
  return part >= whole ? 1000u : part * 1000u / whole;
}

// `events` per second over `window_us`, in tenths, rounded down (the core's rate_mhz() rule, in
// 64 bits); 0 for an empty window. events < 2^32 and window_us <= kMaxRunUs: no overflow.
std::uint64_t rate_tenths(std::uint64_t events, std::uint64_t window_us) {
  return window_us == 0 ? 0u : events * 10'000'000u / window_us;
}

// A configured time (a period, a deadline) in microseconds: exactly as configured (the core
// rounds configured microseconds up to whole ticks, which read back as configured).
std::uint64_t config_us(tick_t ticks, std::uint32_t tick_hz) { return us_from_ticks(ticks, tick_hz); }
std::uint64_t config_us(const Board& board, tick_t ticks) { return config_us(ticks, board.tick_hz()); }

// config_us() as milliseconds with one decimal, or "-" for 0 (not set).
std::string config_ms(const Board& board, tick_t ticks) {
  return ticks == 0 ? "-" : ms_text(config_us(board, ticks));
}

// The queue-latency percentiles the summary shows, per mille: p50, p95, p99.
constexpr std::uint32_t kPercentiles[] = {500, 950, 990};

const char* event_name(const BlockRecord& record) noexcept {
  return record.event != nullptr ? record.event->name : "?";
}

std::uint64_t duration_us(const BlockRecord& record) noexcept {
  return us_from_ticks(record.duration_ticks, record.tick_hz);
}

// Thread CPU share of the CPU window, per cent; -1 when unknown.
int cpu_percent(const BlockRecord& record) noexcept {
  const std::uint64_t window = us_from_ticks(record.window_ticks, record.tick_hz);
  if (!record.has_thread_cpu || window == 0) return -1;
  const std::uint64_t percent = record.thread_cpu_us * 100u / window;
  return static_cast<int>(percent > 100u ? 100u : percent);
}

// "a (58/61)" or "-".
std::string with_votes(const char* name, std::uint32_t votes, std::uint32_t voters) {
  if (name[0] == '\0') return "-";
  return std::string(name) + " (" + number(votes) + "/" + number(voters) + ")";
}

// ---- Text tables ---------------------------------------------------------------------------

using Row = std::vector<std::string>;

// Left-aligned text columns, right-aligned number columns (those whose bit is set).
void print_table(std::FILE* out, const std::vector<Row>& rows, std::uint32_t right_aligned) {
  std::vector<std::size_t> width;
  for (const Row& row : rows) {
    if (row.size() > width.size()) width.resize(row.size(), 0);
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += "  ";
      line += ((right_aligned >> c) & 1u) != 0 ? pad + row[c] : row[c] + (c + 1 < row.size() ? pad : "");
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
}

// ---- JSON ----------------------------------------------------------------------------------

class Json {
 public:
  Json& key(const char* name) {
    separate();
    quote(name);
    text_ += ':';
    fresh_ = true;
    return *this;
  }
  Json& string(const char* value) {
    separate();
    quote(value);
    return *this;
  }
  Json& value(std::uint64_t v) {
    separate();
    text_ += std::to_string(v);
    return *this;
  }
  Json& ms(std::uint64_t us) {  // milliseconds, one decimal
    separate();
    text_ += ms_text(us);
    return *this;
  }
  Json& tenths(std::uint64_t v) {  // a value in tenths, one decimal
    separate();
    text_ += tenths_text(v);
    return *this;
  }
  Json& boolean(bool v) {
    separate();
    text_ += v ? "true" : "false";
    return *this;
  }
  Json& open(char bracket) {
    separate();
    text_ += bracket;
    fresh_ = true;
    return *this;
  }
  Json& close(char bracket) {
    text_ += bracket;
    fresh_ = false;
    return *this;
  }
  const std::string& text() const { return text_; }

 private:
  void quote(const char* value) {
    text_ += '"';
    for (const char* p = value; *p != '\0'; ++p) {
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"' || c == '\\') {
        text_ += '\\';
        text_ += *p;
      } else if (c < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
        text_ += escaped;
      } else {
        text_ += *p;
      }
    }
    text_ += '"';
  }
  void separate() {
    if (!fresh_) text_ += ',';
    fresh_ = false;
  }
  std::string text_;
  bool fresh_ = true;
};

// ---- The summary's rows --------------------------------------------------------------------

// Final records grouped by event, in order of first appearance.
struct EventBlocks {
  const Event* event = nullptr;
  std::vector<const KeptRecord*> records;
  const KeptRecord* worst = nullptr;
  std::uint64_t delayed = 0;
  std::uint64_t delayed_wait_max_us = 0;
  std::uint64_t irqs_lost = 0;
  bool hung = false;
};

std::vector<EventBlocks> group_blocks(const SummaryInput& in) {
  std::vector<EventBlocks> groups;
  for (std::size_t i = 0; i < in.run_sink->kept_count(); ++i) {
    const KeptRecord& kept = in.run_sink->kept(i);
    const BlockRecord& r = kept.record;
    EventBlocks* group = nullptr;
    for (EventBlocks& g : groups) {
      if (g.event == r.event) group = &g;
    }
    if (group == nullptr) {
      groups.push_back(EventBlocks{});
      group = &groups.back();
      group->event = r.event;
    }
    group->records.push_back(&kept);
    if (group->worst == nullptr || r.duration_ticks > group->worst->record.duration_ticks) group->worst = &kept;
    if ((r.flags & kFlagHung) != 0) group->hung = true;
    if (const BlockSpan* span = in.runtime->span_of(r.dispatch)) {
      group->delayed += span->delayed_total;
      group->delayed_wait_max_us =
          std::max<std::uint64_t>(group->delayed_wait_max_us, in.board->us_from_ticks(span->delayed_wait_max));
      group->irqs_lost += span->irqs_lost;
    }
  }
  return groups;
}

// "erase 40.0 ms, program 240.0 ms, verify 40.0 ms", or "none marked".
std::string stages_text(const BlockRecord& r) {
  std::string text;
  for (std::uint8_t i = 0; i < r.stage_count; ++i) {
    if (i != 0) text += ", ";
    text += r.stages[i].name != nullptr ? r.stages[i].name : "?";
    text += " " + ms_text(us_from_ticks(r.stages[i].ticks, r.tick_hz)) + " ms";
  }
  return text.empty() ? "none marked" : text;
}

// The loop's figures over the run.
struct LoopFigures {
  std::uint64_t window_us = 0;
  std::uint64_t busy_us = 0;
  std::uint64_t idle_us = 0;
  std::uint64_t load_permille = 0;
  std::uint64_t idle_permille = 0;
  std::uint64_t rate_tenths = 0;  ///< dispatches per second, tenths
};

LoopFigures loop_figures(const SummaryInput& in) {
  const LoopTotals& t = in.runtime->totals();
  LoopFigures f;
  f.window_us = in.board->us_from_ticks(t.window_ticks);
  f.busy_us = in.board->us_from_ticks(t.busy_ticks);
  f.idle_us = in.board->us_from_ticks(t.idle_ticks);
  f.load_permille = permille_of(t.busy_ticks, t.window_ticks);
  f.idle_permille = permille_of(t.idle_ticks, t.window_ticks);
  f.rate_tenths = rate_tenths(t.dispatches, f.window_us);
  return f;
}

std::string delayed_by_type(const Runtime& runtime, const BlockSpan& span) {
  std::string text;
  for (std::size_t t = 0; t < runtime.type_count(); ++t) {
    if (span.delayed[t] == 0) continue;
    if (!text.empty()) text += ", ";
    text += runtime.type(static_cast<TypeId>(t)).event.name;
    text += " " + number(span.delayed[t]);
  }
  return text.empty() ? "none" : text;
}

// A culprit frame's name, as the tool names it (docs/tool.md, "Culprit"): the lambda it runs
// inline (culprit::culprit_name), else the function, else the scope, else <module base
// name>+0x<offset>, else the PC.
void label_of(const culprit::FrameFacts& f, Frame pc, const port_linux::Symbol& symbol, char* out, std::size_t size) {
  if (!f.function.empty()) {
    const std::string_view name = culprit::culprit_name(f, f.function);
    std::snprintf(out, size, "%.*s", static_cast<int>(name.size()), name.data());
  } else if (!f.scope.empty()) {
    std::snprintf(out, size, "%.*s", static_cast<int>(f.scope.size()), f.scope.data());
  } else if (symbol.in_module) {
    const char* base = std::strrchr(symbol.module_path, '/');
    std::snprintf(out, size, "%s+0x%" PRIx64, base != nullptr ? base + 1 : symbol.module_path, symbol.module_offset);
  } else {
    std::snprintf(out, size, "0x%" PRIxPTR, pc);
  }
}

}  // namespace

// ---- CulpritFinder -------------------------------------------------------------------------

CulpritFinder::CulpritFinder() noexcept {
  port_linux::Symbol warm_up;
  symbolizer_.symbolize(reinterpret_cast<std::uintptr_t>(&label_of), false, warm_up);
}

bool CulpritFinder::find(const BlockRecord& record, char* name, std::size_t size, std::uint32_t& votes,
                         std::uint32_t& voters) {
  // Every sample of the dispatch, by its stack table, under the one culprit rule.
  culprit::Tally tally;
  char labels[kTopFrames][kCulpritMax];
  std::uint64_t counted = record.top_other;
  for (std::uint8_t e = 0; e < record.top_count; ++e) {
    const TopStack& t = record.top[e];
    counted += t.count;
    const std::size_t count = std::size_t{t.scope_count} + t.pc_count;
    port_linux::Symbol symbols[kMaxFrames];
    culprit::FrameFacts facts[kMaxFrames];
    for (std::size_t f = 0; f < count; ++f) {
      if (f < t.scope_count) {
        const char* scope = reinterpret_cast<const char*>(t.frames[f]);
        facts[f].scope = scope != nullptr && scope[0] != '\0' ? scope : "?";
        continue;
      }
      port_linux::Symbol& s = symbols[f];
      symbolizer_.symbolize(t.frames[f], f != t.scope_count, s);
      if (s.has_function && s.exact) facts[f].function = s.function;
      if (s.has_function && !s.exact) facts[f].nearest_symbol = s.function;
      if (s.in_module) facts[f].module = s.module_path;
    }
    std::size_t unknown = count;  // none
    if (t.pc_count != 0 && t.leaf_high != t.frames[t.scope_count]) {
      port_linux::Symbol high;
      symbolizer_.symbolize(t.leaf_high, false, high);
      const culprit::FrameFacts high_facts{{}, high.has_function && high.exact ? high.function : "", {},
                                           high.in_module ? high.module_path : ""};
      if (!culprit::leaf_known(false, facts[t.scope_count], high_facts)) unknown = t.scope_count;
    }
    const std::optional<std::size_t> at =
        culprit::first(count, unknown, {}, [&](std::size_t i) { return facts[i]; });
    if (!at) continue;
    label_of(facts[*at], t.frames[*at], symbols[*at], labels[e], sizeof labels[e]);
    tally.add(labels[e], t.count, e);
  }
  voters = static_cast<std::uint32_t>(counted > record.samples_taken ? counted : record.samples_taken);
  votes = static_cast<std::uint32_t>(tally.samples());
  copy_text(name, size, tally.known() ? labels[tally.entry()] : "");
  return tally.known();
}

// ---- RunSink ------------------------------------------------------------------------------

RunSink::RunSink(const RunSinkConfig& config) noexcept : config_(config), kept_(new KeptRecord[kMaxKeptRecords]) {}

void RunSink::take(void* self, const BlockRecord& record) noexcept { static_cast<RunSink*>(self)->handle(record); }

void RunSink::handle(const BlockRecord& record) noexcept {
  char function[kCulpritMax];
  std::uint32_t votes = 0;
  std::uint32_t voters = 0;
  culprits_.find(record, function, sizeof function, votes, voters);
  switch (record.phase) {
    case Phase::in_progress: ++in_progress_; break;
    case Phase::hang: ++hangs_; break;
    case Phase::deadline_miss: ++deadline_misses_; break;
    case Phase::final:
      ++finals_;
      if (kept_count_ < kMaxKeptRecords) {
        KeptRecord& kept = kept_[kept_count_++];
        kept.record = record;
        kept.start_us = config_.board != nullptr ? config_.board->us_since_start(record.start) : 0u;
        copy_text(kept.function, sizeof kept.function, function);
        kept.function_votes = votes;
        kept.function_voters = voters;
      } else {
        ++not_kept_;
      }
      break;
  }
  print_live(record, function);
  if (config_.sink != nullptr) config_.sink->write(record);
  if (config_.on_record != nullptr) config_.on_record(config_.on_record_context, record);
}

void RunSink::print_live(const BlockRecord& record, const char* function) noexcept {
  if (config_.live == nullptr || config_.board == nullptr) return;
  const char* where = function[0] != '\0' ? function : "-";
  const std::string at = s_text(config_.board->us_since_start(record.end));
  const std::string ms = ms_text(duration_us(record));
  const int cpu = cpu_percent(record);
  char cpu_text[16];
  if (cpu < 0) {
    copy_text(cpu_text, sizeof cpu_text, "?");
  } else {
    std::snprintf(cpu_text, sizeof cpu_text, "%d%%", cpu);
  }
  // What it waited on most, as every form names it ("  on mutex 0x.. held by 'radio' (tid 3)");
  // a description too long for the line ends in "..." (never in the formatter's marker, whose
  // newline would split the line).
  char on[512] = "";
  if (record.wait.count > 0) {
    copy_text(on, sizeof on, "  on ");
    if (format_wait(record.wait.objects[0], on + 5, sizeof on - 5).truncated) {
      constexpr std::size_t kMarker = sizeof "...[truncated]\n" - 1;  // what finish() ends the text with
      const std::size_t n = std::strlen(on);
      if (n >= kMarker) copy_text(on + n - kMarker, 4, "...");
    }
  }
  switch (record.phase) {
    case Phase::in_progress:
      std::fprintf(config_.live, "[loopcanary] %7s s  block in progress  %-16s %8s ms so far  %s, cpu %s  in %s%s\n",
                   at.c_str(), event_name(record), ms.c_str(), to_string(record.cause), cpu_text, where, on);
      break;
    case Phase::hang:
      std::fprintf(config_.live, "[loopcanary] %7s s  HANG, still stuck  %-16s %8s ms so far  %s, cpu %s  in %s%s\n",
                   at.c_str(), event_name(record), ms.c_str(), to_string(record.cause), cpu_text, where, on);
      break;
    case Phase::final:
      std::fprintf(config_.live, "[loopcanary] %7s s  block ended        %-16s %8s ms total    %s, cpu %s  in %s%s%s\n",
                   at.c_str(), event_name(record), ms.c_str(), to_string(record.cause), cpu_text, where, on,
                   (record.flags & kFlagHung) != 0 ? "  (had hung)" : "");
      break;
    case Phase::deadline_miss: {
      for (std::size_t i = 0; i < missed_count_; ++i) {
        if (missed_[i] == record.event) return;  // counted in the summary
      }
      if (missed_count_ < kMaxEventTypes) missed_[missed_count_++] = record.event;
      const std::string deadline = ms_text(config_us(record.threshold_ticks, record.tick_hz));
      const std::string delayer =
          record.delayed_by != nullptr ? std::string(", while ") + record.delayed_by->name + " ran" : std::string();
      std::fprintf(config_.live,
                   "[loopcanary] %7s s  deadline missed    %-16s %8s ms late     deadline %s ms%s"
                   "  (the next misses of %s are counted in the summary)\n",
                   at.c_str(), event_name(record), ms.c_str(), deadline.c_str(), delayer.c_str(), event_name(record));
      break;
    }
  }
  std::fflush(config_.live);
}


// ---- Summary -------------------------------------------------------------------------------

void print_summary_text(std::FILE* out, const SummaryInput& in) {
  const SummaryHeader& h = in.header;
  std::fprintf(out, "%s: %s, %s time (%s), scenarios: %s\n", h.program, h.firmware, h.time, h.clock, h.scenarios);
  std::fprintf(out, "threshold %s ms, hang limit %s ms, ran %s s\n\n", ms_text(h.threshold_us).c_str(),
               ms_text(h.hang_limit_us).c_str(), s_text(h.run_us).c_str());

  const std::vector<EventBlocks> groups = group_blocks(in);
  std::fprintf(out, "Blocks by event\n");
  if (groups.empty()) {
    std::fprintf(out, "  none: no dispatch went over its threshold\n");
  } else {
    std::vector<Row> rows{{"event", "blocks", "worst ms", "cause", "hang", "culprit", "delayed", "max wait ms",
                           "irqs lost"}};
    for (const EventBlocks& g : groups) {
      const BlockRecord& w = g.worst->record;
      rows.push_back(Row{g.event->name, number(g.records.size()), ms_text(duration_us(w)), to_string(w.cause),
                         g.hung ? "yes" : "no",
                         with_votes(g.worst->function, g.worst->function_votes, g.worst->function_voters),
                         number(g.delayed), ms_text(g.delayed_wait_max_us), number(g.irqs_lost)});
    }
    print_table(out, rows, 0b111000110u);

    std::fprintf(out, "\nEach block: its stages, and the events it delayed (posted before it ended, dispatched after)\n");
    for (std::size_t i = 0; i < in.run_sink->kept_count(); ++i) {
      const KeptRecord& kept = in.run_sink->kept(i);
      const BlockRecord& r = kept.record;
      const BlockSpan* span = in.runtime->span_of(r.dispatch);
      std::fprintf(out, "  at %s s  %s, dispatch %u, %s ms\n    stages: %s\n    delayed: %s\n",
                   s_text(kept.start_us).c_str(), event_name(r), r.dispatch, ms_text(duration_us(r)).c_str(),
                   stages_text(r).c_str(),
                   span != nullptr ? delayed_by_type(*in.runtime, *span).c_str() : "(not tracked)");
    }
  }

  const LoopFigures figures = loop_figures(in);
  std::fprintf(out,
               "\nEvents by type over the run: rate; queue latency (post -> dispatch; for a periodic event its\n"
               "lateness; percentiles are log2-bucket upper bounds); deadline misses and missed periods\n");
  std::vector<Row> rows{{"event", "dispatched", "rate /s", "blocks", "p50 ms", "p95 ms", "p99 ms", "max ms",
                         "period ms", "deadline ms", "deadline misses", "missed periods", "lost", "timer skips"}};
  for (std::size_t t = 0; t < in.runtime->type_count(); ++t) {
    const auto type = static_cast<TypeId>(t);
    const TypeStats& s = in.runtime->stats(type);
    const EventStats health = in.runtime->health(type);
    Row row{in.runtime->type(type).event.name, number(health.dispatches),
            tenths_text(rate_tenths(health.dispatches, figures.window_us)), number(s.blocks)};
    for (const std::uint32_t permille : kPercentiles) {
      row.push_back(ms_text(in.board->us_from_ticks(latency_percentile(health, permille))));
    }
    row.insert(row.end(), {ms_text(in.board->us_from_ticks(health.max_latency)),
                           config_ms(*in.board, health.period_ticks), config_ms(*in.board, health.deadline_ticks),
                           number(health.deadline_misses), number(health.missed_periods), number(s.lost),
                           number(s.timer_skips)});
    rows.push_back(row);
  }
  print_table(out, rows, 0b11111111111110u);

  const LoopStats loop = in.monitor->stats();
  const WatchdogStats dog = in.watchdog->stats();
  std::fprintf(out, "\nloop %s: %u dispatches, blocks %u, hangs %u, longest %s ms, %u pending at the end\n",
               in.monitor->name(), loop.dispatches, loop.blocks, loop.hangs,
               ms_text(in.board->us_from_ticks(loop.max_duration)).c_str(), in.runtime->pending());
  std::fprintf(out, "loop %s over %s ms: load %s %% (busy %s ms), idle %s %% (%s ms), %s dispatches /s\n",
               in.monitor->name(), ms_text(figures.window_us).c_str(), tenths_text(figures.load_permille).c_str(),
               ms_text(figures.busy_us).c_str(), tenths_text(figures.idle_permille).c_str(),
               ms_text(figures.idle_us).c_str(), tenths_text(figures.rate_tenths).c_str());
  std::fprintf(out,
               "watchdog: %u polls, %u reports (%u in progress, %u hang, %u final, %u of them end estimated; "
               "%u deadline misses), %u notes dropped, %u records dropped, %u samples missed\n",
               dog.polls, dog.reports, in.run_sink->in_progress_reports(), in.run_sink->hang_reports(),
               in.run_sink->final_reports(), dog.finals_estimated, in.run_sink->deadline_miss_reports(),
               dog.notes_dropped, dog.records_dropped, dog.samples_missed);
}

void print_summary_json(std::FILE* out, const SummaryInput& in) {
  const SummaryHeader& h = in.header;
  Json o;
  o.open('{');
  o.key("program").string(h.program).key("firmware").string(h.firmware).key("time").string(h.time);
  o.key("clock").string(h.clock).key("scenarios").string(h.scenarios);
  o.key("threshold_ms").ms(h.threshold_us).key("hang_limit_ms").ms(h.hang_limit_us).key("run_ms").ms(h.run_us);

  o.key("blocks").open('[');
  for (const EventBlocks& g : group_blocks(in)) {
    const BlockRecord& w = g.worst->record;
    o.open('{').key("event").string(g.event->name).key("blocks").value(g.records.size());
    o.key("worst_ms").ms(duration_us(w)).key("cause").string(to_string(w.cause)).key("hang").boolean(g.hung);
    o.key("culprit").string(g.worst->function).key("culprit_samples").value(g.worst->function_votes);
    o.key("samples").value(g.worst->function_voters);
    o.key("delayed").value(g.delayed).key("max_wait_ms").ms(g.delayed_wait_max_us);
    o.key("irqs_lost").value(g.irqs_lost);
    o.key("dispatches").open('[');
    for (const KeptRecord* kept : g.records) {
      const BlockRecord& r = kept->record;
      o.open('{').key("dispatch").value(r.dispatch).key("start_ms").ms(kept->start_us);
      o.key("duration_ms").ms(duration_us(r)).key("cause").string(to_string(r.cause));
      o.key("stages").open('[');
      for (std::uint8_t i = 0; i < r.stage_count; ++i) {
        o.open('{').key("name").string(r.stages[i].name != nullptr ? r.stages[i].name : "?");
        o.key("ms").ms(us_from_ticks(r.stages[i].ticks, r.tick_hz)).close('}');
      }
      o.close(']');
      o.key("delayed_by_event").open('{');
      if (const BlockSpan* span = in.runtime->span_of(r.dispatch)) {
        for (std::size_t t = 0; t < in.runtime->type_count(); ++t) {
          if (span->delayed[t] != 0) o.key(in.runtime->type(static_cast<TypeId>(t)).event.name).value(span->delayed[t]);
        }
      }
      o.close('}').close('}');
    }
    o.close(']').close('}');
  }
  o.close(']');

  const LoopFigures figures = loop_figures(in);
  o.key("events").open('[');
  for (std::size_t t = 0; t < in.runtime->type_count(); ++t) {
    const auto type = static_cast<TypeId>(t);
    const TypeStats& s = in.runtime->stats(type);
    const EventStats health = in.runtime->health(type);
    o.open('{').key("event").string(in.runtime->type(type).event.name);
    o.key("dispatched").value(health.dispatches);
    o.key("rate_per_s").tenths(rate_tenths(health.dispatches, figures.window_us)).key("blocks").value(s.blocks);
    o.key("p50_ms").ms(in.board->us_from_ticks(latency_percentile(health, kPercentiles[0])));
    o.key("p95_ms").ms(in.board->us_from_ticks(latency_percentile(health, kPercentiles[1])));
    o.key("p99_ms").ms(in.board->us_from_ticks(latency_percentile(health, kPercentiles[2])));
    o.key("max_ms").ms(in.board->us_from_ticks(health.max_latency));
    o.key("period_ms").ms(config_us(*in.board, health.period_ticks));
    o.key("deadline_ms").ms(config_us(*in.board, health.deadline_ticks));
    o.key("deadline_misses").value(health.deadline_misses).key("missed_periods").value(health.missed_periods);
    o.key("lost").value(s.lost).key("timer_skips").value(s.timer_skips).close('}');
  }
  o.close(']');

  const LoopStats loop = in.monitor->stats();
  const WatchdogStats dog = in.watchdog->stats();
  o.key("loop").open('{').key("name").string(in.monitor->name()).key("dispatches").value(loop.dispatches);
  o.key("blocks").value(loop.blocks).key("hangs").value(loop.hangs);
  o.key("longest_ms").ms(in.board->us_from_ticks(loop.max_duration)).key("pending").value(in.runtime->pending());
  o.key("window_ms").ms(figures.window_us).key("busy_ms").ms(figures.busy_us).key("idle_ms").ms(figures.idle_us);
  o.key("load_percent").tenths(figures.load_permille).key("idle_percent").tenths(figures.idle_permille);
  o.key("rate_per_s").tenths(figures.rate_tenths);
  o.close('}');
  o.key("watchdog").open('{').key("polls").value(dog.polls).key("reports").value(dog.reports);
  o.key("in_progress").value(in.run_sink->in_progress_reports()).key("hang").value(in.run_sink->hang_reports());
  o.key("final").value(in.run_sink->final_reports()).key("finals_estimated").value(dog.finals_estimated);
  o.key("deadline_misses").value(in.run_sink->deadline_miss_reports());
  o.key("notes_dropped").value(dog.notes_dropped).key("records_dropped").value(dog.records_dropped);
  o.key("samples_missed").value(dog.samples_missed).close('}');
  o.close('}');
  std::fprintf(out, "%s\n", o.text().c_str());
}

}  // namespace loopcanary::simrt
