// SPDX-License-Identifier: MIT
// `loopcanary report` and `loopcanary show` (commands.hpp, docs/tool.md).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>

#include "commands.hpp"
#include "export.hpp"
#include "report_waits.hpp"

namespace loopcanary::tool {

std::string ms_text(std::uint64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%" PRIu64 ".%03" PRIu64, us / 1000, us % 1000);
  return text;
}

namespace {

constexpr std::size_t kMaxGroups = 10000;        // further keys go into kOtherGroups
constexpr std::size_t kMaxNamesPerGroup = 32;    // events, qualifiers, culprits listed per group
constexpr std::size_t kExactDurations = 1024;    // per group, before the histogram takes over
const char* const kOtherGroups = "(other groups)";

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f", share * 100.0);
  return text;
}

// Durations of a group: exact while there are at most kExactDurations, then a log-bucket
// histogram of relative resolution 1/128 (values < 128 µs exact).
class Durations {
 public:
  void add(std::uint64_t us) {
    ++count_;
    max_ = std::max(max_, us);
    min_ = count_ == 1 ? us : std::min(min_, us);
    if (exact_) {
      values_.push_back(us);
      if (values_.size() <= kExactDurations) return;
      exact_ = false;
      for (std::uint64_t v : values_) ++buckets_[bucket(v)];
      values_.clear();
      values_.shrink_to_fit();
      return;
    }
    ++buckets_[bucket(us)];
  }
  bool exact() const noexcept { return exact_; }
  std::uint64_t max() const noexcept { return max_; }
  /// Nearest rank: the ceil(p × n)-th smallest value (p in (0, 1]).
  std::uint64_t percentile(double p) {
    if (count_ == 0) return 0;
    auto rank = static_cast<std::uint64_t>(p * static_cast<double>(count_) + 0.999999);
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    if (exact_) {
      std::sort(values_.begin(), values_.end());
      return values_[rank - 1];
    }
    std::uint64_t seen = 0;
    for (const auto& [b, n] : buckets_) {
      seen += n;
      if (seen >= rank) return std::clamp(middle(b), min_, max_);
    }
    return max_;
  }

 private:
  static std::uint32_t bucket(std::uint64_t v) noexcept {
    if (v < 128) return static_cast<std::uint32_t>(v);
    int e = 63;
    while ((v >> e) == 0) --e;  // e >= 7
    const auto mantissa = static_cast<std::uint32_t>((v >> (e - 7)) & 127u);
    return static_cast<std::uint32_t>(e - 6) * 128u + mantissa;
  }
  static std::uint64_t middle(std::uint32_t b) noexcept {
    if (b < 128) return b;
    const int e = static_cast<int>(b / 128) + 6;
    const std::uint64_t low = (std::uint64_t{128} + (b % 128)) << (e - 7);
    return low + ((std::uint64_t{1} << (e - 7)) >> 1);
  }
  bool exact_ = true;
  std::vector<std::uint64_t> values_;
  std::map<std::uint32_t, std::uint64_t> buckets_;
  std::uint64_t count_ = 0, max_ = 0, min_ = 0;
};

// Counts by name, at most kMaxNamesPerGroup names; the rest in `other`.
struct NameCounts {
  std::map<std::string, std::uint64_t> counts;
  std::uint64_t other = 0;
  void add(const std::string& name) {
    auto it = counts.find(name);
    if (it != counts.end()) {
      ++it->second;
    } else if (counts.size() < kMaxNamesPerGroup) {
      counts.emplace(name, 1);
    } else {
      ++other;
    }
  }
  // Most frequent first.
  std::vector<std::pair<std::string, std::uint64_t>> sorted() const {
    std::vector<std::pair<std::string, std::uint64_t>> out(counts.begin(), counts.end());
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return out;
  }
};

// The stage split of a group's blocks (docs/tool.md, "report"): per block with stages and a
// non-zero duration, each stage's share of the block's duration (the times of the stages of one
// name added up); per stage name, the mean of those shares over these blocks (a block without
// that stage counts 0). What no stage covers is the rest. Names in order of first appearance, at
// most kMaxNamesPerGroup; the shares of further names go to `other`.
class StageSplit {
 public:
  void add(const LogRecord& r) {
    if (r.stages.empty() || r.duration_us == 0) return;
    ++blocks_;
    const auto duration = static_cast<double>(r.duration_us);
    double covered = 0;
    for (const Stage& stage : r.stages) {
      const double share = static_cast<double>(stage.us) / duration;
      covered += share;
      auto it = std::find_if(shares_.begin(), shares_.end(), [&](const auto& s) { return s.first == stage.name; });
      if (it != shares_.end()) {
        it->second += share;
      } else if (shares_.size() < kMaxNamesPerGroup) {
        shares_.emplace_back(stage.name, share);
      } else {
        other_ += share;
      }
    }
    outside_ += std::max(0.0, 1.0 - covered);
  }
  std::uint64_t blocks() const noexcept { return blocks_; }
  /// (name, mean share in [0, 1]) in order of first appearance.
  std::vector<std::pair<std::string, double>> means() const {
    std::vector<std::pair<std::string, double>> out = shares_;
    for (auto& [name, share] : out) share = mean(share);
    return out;
  }
  double other() const noexcept { return mean(other_); }
  double outside() const noexcept { return mean(outside_); }

 private:
  double mean(double sum) const noexcept { return blocks_ == 0 ? 0.0 : sum / static_cast<double>(blocks_); }
  std::uint64_t blocks_ = 0;
  std::vector<std::pair<std::string, double>> shares_;  // name, sum of shares
  double other_ = 0;
  double outside_ = 0;
};

struct Group {
  std::string key;
  std::uint64_t blocks = 0;
  std::uint64_t hangs = 0;
  Durations durations;
  std::array<std::uint64_t, 4> causes{};  // by Cause
  NameCounts events, qualifiers, culprits;
  std::optional<std::int64_t> first_ms, last_ms;
  std::uint64_t without_wall_time = 0;
  std::string worst_id;
  std::uint64_t worst_us = 0;
  std::uint64_t culprit_samples = 0;  // samples of each block's culprit, summed
  std::uint64_t samples_counted = 0;     // samples the blocks' culprits were counted over, summed
  bool all_samples = true;            // every block's culprit counted every sample of its dispatch
  StageSplit stages;
};

// The deadline misses of one late event (report's deadline-miss section, docs/tool.md).
struct MissGroup {
  std::uint64_t misses = 0;
  std::uint64_t worst_late_us = 0;
  std::uint64_t deadline_us = 0;  // of the latest miss
  std::uint64_t unwatched = 0;    // misses whose delayer the watchdog did not watch
  NameCounts delayed_by;          // the delaying events
  NameCounts culprits;            // the delaying culprits
};

std::string miss_culprit_key(const LogRecord& r, const CulpritRules& rules) {
  const Culprit c = deadline_culprit(r, rules);
  if (c.known()) return c.label;
  return r.unwatched ? "(unwatched)" : "(no samples)";
}

void add_miss(MissGroup& g, const LogRecord& r, const CulpritRules& rules) {
  ++g.misses;
  g.worst_late_us = std::max(g.worst_late_us, r.duration_us);
  g.deadline_us = r.threshold_us;
  if (r.unwatched) ++g.unwatched;
  g.delayed_by.add(r.delayed_by_dispatch == 0 ? std::string("(unknown)") : r.delayed_by);
  g.culprits.add(miss_culprit_key(r, rules));
}

std::string culprit_key(const Block& block) {
  if (block.culprit.known()) return block.culprit.label;
  return block.record.stacks.empty() ? "(no samples)" : "(no culprit frame)";
}

std::string group_key(GroupBy by, const Block& block) {
  switch (by) {
    case GroupBy::culprit: return culprit_key(block);
    case GroupBy::event: return block.record.event;
    case GroupBy::qualifier: return block.record.qualifier;
    case GroupBy::cause: return to_string(block.record.cause);
    case GroupBy::loop: return block.record.loop;
  }
  return {};
}

void add_block(Group& g, const Block& block) {
  const LogRecord& r = block.record;
  ++g.blocks;
  if (block.hung) ++g.hangs;
  g.durations.add(r.duration_us);
  ++g.causes[static_cast<std::size_t>(r.cause)];
  g.events.add(r.event);
  g.qualifiers.add(r.qualifier);
  g.culprits.add(culprit_key(block));
  if (r.wall_ms) {
    if (!g.first_ms || *r.wall_ms < *g.first_ms) g.first_ms = r.wall_ms;
    if (!g.last_ms || *r.wall_ms > *g.last_ms) g.last_ms = r.wall_ms;
  } else {
    ++g.without_wall_time;
  }
  if (g.worst_id.empty() || r.duration_us > g.worst_us) {
    g.worst_id = block.id;
    g.worst_us = r.duration_us;
  }
  g.culprit_samples += block.culprit.samples;
  g.samples_counted += block.culprit.of;
  if (!block.culprit.all_samples && block.culprit.of != 0) g.all_samples = false;
  g.stages.add(r);
}

// "input 10.0 %, compute 85.0 %, outside stages 5.0 %" (report's text).
std::string stages_text(const StageSplit& split) {
  std::string out;
  for (const auto& [name, share] : split.means()) out += name + " " + percent(share) + " %, ";
  if (split.other() > 0) out += "other stages " + percent(split.other()) + " %, ";
  return out + "outside stages " + percent(split.outside()) + " %";
}

// {"blocks":N,"split":[{"name":NAME,"percent":P},...],"other_percent":P,"outside_percent":P}
std::string stages_json(const StageSplit& split) {
  std::string out = "{\"blocks\":" + std::to_string(split.blocks()) + ",\"split\":[";
  bool first = true;
  for (const auto& [name, share] : split.means()) {
    out += (first ? "{\"name\":" : ",{\"name\":") + json_string(name) + ",\"percent\":" + percent(share) + '}';
    first = false;
  }
  return out + "],\"other_percent\":" + percent(split.other()) + ",\"outside_percent\":" + percent(split.outside()) + '}';
}

// "input 1.200 ms, compute 80.000 ms" (show's stages line, as the core's text form).
std::string stage_times_text(const std::vector<Stage>& stages) {
  std::string out;
  for (const Stage& stage : stages) out += (out.empty() ? "" : ", ") + stage.name + " " + ms_text(stage.us) + " ms";
  return out;
}

std::string names_text(const NameCounts& names) {
  std::string out;
  for (const auto& [name, count] : names.sorted()) {
    if (!out.empty()) out += ", ";
    out += (name.empty() ? std::string("\"\"") : name) + " " + std::to_string(count);
  }
  if (names.other > 0) out += ", others " + std::to_string(names.other);
  return out;
}

std::string names_json(const NameCounts& names) {
  std::string out = "{";
  for (const auto& [name, count] : names.sorted()) {
    if (out.size() > 1) out += ',';
    out += json_string(name) + ":" + std::to_string(count);
  }
  out += '}';
  return out;
}

std::string seen_text(const std::optional<std::int64_t>& ms_since_epoch) {
  return ms_since_epoch ? format_utc_time(*ms_since_epoch) : "n/a (no wall time)";
}

void print_warning_counts_json(std::ostream& out, const ReadStats& stats) {
  out << "{";
  bool first = true;
  for (std::size_t k = 0; k < kWarningKinds; ++k) {
    out << (first ? "" : ",") << json_string(to_string(static_cast<WarningKind>(k))) << ':' << stats.warnings[k];
    first = false;
  }
  out << "}";
}

// Exit status from what was read.
int read_status(const Reader& reader, std::ostream& err) {
  if (reader.stats().records == 0) {
    err << "loopcanary: nothing readable: no record in the input\n";
    return 1;
  }
  return 0;
}

// One PC frame for show: `function+0xoff`, the nearest symbol as a hint, or the bare PC; then
// (module+offset, build-id) and file:line when known.
std::string describe(const Frame& f) {
  if (f.is_scope()) return f.scope;
  char hex[32];
  std::string out;
  if (!f.function.empty()) {
    std::snprintf(hex, sizeof hex, "+0x%" PRIx64, f.function_offset);
    out = f.function + hex;
  } else if (!f.nearest_symbol.empty()) {
    std::snprintf(hex, sizeof hex, "+0x%" PRIx64, f.nearest_offset);
    out = "? (after " + f.nearest_symbol + hex + ")";
  } else {
    std::snprintf(hex, sizeof hex, "0x%" PRIx64, f.pc);
    out = hex;
  }
  if (!f.file.empty()) out += " at " + f.file + ":" + std::to_string(f.line);
  if (f.has_module()) {
    const std::size_t slash = f.module.rfind('/');
    std::snprintf(hex, sizeof hex, "+0x%" PRIx64, f.module_offset);
    out += " (" + (slash == std::string::npos ? f.module : f.module.substr(slash + 1)) + hex;
    if (!f.build_id.empty()) out += ", build-id " + f.build_id;
    out += ")";
  }
  if (!f.function.empty() || !f.nearest_symbol.empty() || f.has_module()) {
    std::snprintf(hex, sizeof hex, " [0x%" PRIx64 "]", f.pc);
    out += hex;
  }
  return out;
}

std::string optional_ms(const std::optional<std::uint64_t>& us) { return us ? ms_text(*us) + " ms" : "n/a"; }

std::string optional_permille(const std::optional<std::uint64_t>& permille) {
  if (!permille || *permille == 0xFFFF) return "n/a";
  return std::to_string(*permille / 10) + "." + std::to_string(*permille % 10) + " %";
}

// The waits of a record: each object with its share of the samples taken, its description and
// its holder's stack (frames as the loop's, symbolised when the record says how).
void print_waits(std::ostream& out, const LogRecord& r) {
  if (r.wait.empty()) return;
  out << "  waits (samples off the CPU, by object; holder stacks innermost first):\n";
  for (const WaitEntry& o : r.wait.objects) {
    out << "    " << share_percent(o.samples, r.samples_taken) << " % " << o.samples << ' ' << wait_text(o) << '\n';
    if (!o.owner || o.owner->frames.empty()) continue;
    out << "      holder " << holder_text(*o.owner) << ":\n";
    for (const Frame& f : o.owner->frames) out << "        " << describe(f) << '\n';
  }
  if (r.wait.other > 0) out << "    other " << r.wait.other << '\n';
}

void print_report(std::ostream& out, const LogRecord& r, const CulpritRules& rules) {
  out << "report " << r.report << " (" << to_string(r.phase) << ")  " << r.file << (r.from_capture ? " offset " : ":")
      << r.line << '\n';
  out << "  qualifier = " << r.qualifier << '\n';
  out << "  loop = " << r.loop << " (index " << r.loop_index << ")\n";
  out << "  event = " << r.event << '\n';
  out << "  dispatch = " << r.dispatch << '\n';
  out << "  time-start = " << r.start << " ticks @ " << r.tick_hz << " Hz\n";
  out << "  time-end = " << r.end << " ticks" << (r.phase == Phase::final || r.phase == Phase::deadline_miss ? "" : " (still running)") << '\n';
  if (r.wall_ms) out << "  written = " << format_utc_time(*r.wall_ms) << (r.clock.empty() ? "" : " (clock " + r.clock + ")") << '\n';
  if (r.phase == Phase::deadline_miss) {
    out << "  duration = late by " << ms_text(r.duration_us) << " ms (deadline " << ms_text(r.threshold_us) << " ms)\n";
    out << "  delayed-by = "
        << (r.delayed_by_dispatch == 0 ? std::string("unknown")
                                       : "dispatch " + std::to_string(r.delayed_by_dispatch) + " (" + r.delayed_by + ")")
        << '\n';
  } else {
    out << "  duration = " << ms_text(r.duration_us) << " ms (threshold " << ms_text(r.threshold_us) << " ms)\n";
  }
  if (!r.stages.empty()) out << "  stages = " << stage_times_text(r.stages) << '\n';
  out << "  thread-time = " << optional_ms(r.cpu_thread_us) << " over a " << ms_text(r.cpu_window_us) << " ms window, waiting for a CPU "
      << optional_ms(r.cpu_thread_wait_us) << ", stolen " << ms_text(r.cpu_steal_us) << " ms\n";
  out << "  cpu-busy = " << optional_permille(r.cpu_system_busy_permille) << ", process "
      << optional_permille(r.cpu_process_permille) << '\n';
  out << "  cause = " << to_string(r.cause);
  if (r.cause == Cause::waiting && !r.wait.objects.empty()) {
    out << " on " << wait_text(r.wait.objects.front()) << cause_holder_text(r.wait.objects.front());
  }
  out << '\n';
  out << "  flags =";
  for (const std::string& flag : exporting::flag_names(r)) out << ' ' << flag;
  out << '\n';
  out << "  samples = " << r.samples_taken << " taken, " << r.samples_kept << " kept, " << r.samples_overwritten
      << " overwritten, " << r.samples_missed << " missed\n";
  if (!r.top.empty()) {
    out << (r.top_stacks ? "  top stacks (every sample, by stack; innermost first):\n" : "  top frames:\n");
    for (const TopEntry& t : r.top) {
      out << "    " << share_percent(t.count, r.samples_taken) << " % " << t.count << '\n';
      const std::size_t leaf = t.leaf();
      for (std::size_t i = 0; i < t.frames.size(); ++i) {
        out << "      " << describe(t.frames[i]);
        if (i == leaf && t.leaf_high.pc != t.frames[i].pc) {
          out << " .. " << describe(t.leaf_high) << (t.leaf_known() ? "" : " (not one known function)");
        }
        out << '\n';
      }
    }
    if (r.top_other > 0) out << "    other " << r.top_other << '\n';
  }
  if (!r.stacks.empty()) {
    out << "  stacks (kept samples, innermost first; * the sample's culprit):\n";
    for (const Sample& s : r.stacks) {
      const std::optional<std::size_t> culprit = sample_culprit(s, rules);
      out << "    +" << ms_text(s.at_us) << " ms\n";
      for (std::size_t i = 0; i < s.frames.size(); ++i) {
        out << "      " << (culprit && *culprit == i ? "* " : "  ") << describe(s.frames[i]) << '\n';
      }
    }
  }
  if (!r.top.empty() || !r.stacks.empty()) {
    const Culprit c = block_culprit(r, rules);
    out << "  culprit = " << (c.known() ? c.label : std::string("(no culprit frame)")) << " (" << c.samples << '/'
        << c.of << (c.all_samples ? " samples, " : " kept samples, ") << share_percent(c.samples, c.of) << " %)\n";
  }
  print_waits(out, r);
  out << "  dropped = " << r.records_dropped << " records, " << r.notes_dropped << " notes\n";
}

}  // namespace

namespace {

// What `loopcanary report` gathered: the groups of blocks and of deadline misses, in the order
// they are printed.
struct Tally {
  std::map<std::string, Group> groups;
  std::map<std::string, MissGroup> misses;  // by late event
  std::uint64_t overflowed = 0;             // blocks put in kOtherGroups
  std::uint64_t misses_overflowed = 0;      // deadline misses put in kOtherGroups
  BlockStats stats;
  std::vector<Group*> order;                // most blocks first, then by worst duration
  std::size_t shown = 0;                    // of them, printed (--top)
  std::vector<std::pair<const std::string*, const MissGroup*>> miss_order;  // most misses first
  std::uint64_t miss_total = 0;
  WaitTally waits;                          // the blocks' wait objects, by object and holder
};

void tally(Reader& reader, const Options& options, Tally& t) {
  OtherRecords others;
  others.on_deadline_miss = [&](const LogRecord& r) {
    auto it = t.misses.find(r.event);
    if (it == t.misses.end()) {
      if (t.misses.size() >= kMaxGroups) {
        ++t.misses_overflowed;
        it = t.misses.emplace(kOtherGroups, MissGroup{}).first;
      } else {
        it = t.misses.emplace(r.event, MissGroup{}).first;
      }
    }
    add_miss(it->second, r, options.rules);
  };
  t.stats = read_blocks(reader, options.paths, options.rules, options.filter, [&](const Block& block) {
    std::string key = group_key(options.by, block);
    auto it = t.groups.find(key);
    if (it == t.groups.end()) {
      if (t.groups.size() >= kMaxGroups) {
        key = kOtherGroups;
        ++t.overflowed;
      }
      it = t.groups.emplace(key, Group{}).first;
      it->second.key = key;
    }
    add_block(it->second, block);
    t.waits.add(block);
  }, others);
  // Deadline misses: most first, then by worst lateness.
  for (const auto& [event, g] : t.misses) {
    t.miss_order.emplace_back(&event, &g);
    t.miss_total += g.misses;
  }
  std::stable_sort(t.miss_order.begin(), t.miss_order.end(), [](const auto& a, const auto& b) {
    if (a.second->misses != b.second->misses) return a.second->misses > b.second->misses;
    return a.second->worst_late_us > b.second->worst_late_us;
  });
  for (auto& [key, g] : t.groups) t.order.push_back(&g);
  std::stable_sort(t.order.begin(), t.order.end(), [](const Group* a, const Group* b) {
    if (a->blocks != b->blocks) return a->blocks > b->blocks;
    return a->worst_us > b->worst_us;
  });
  t.shown = options.top == 0 ? t.order.size() : std::min(options.top, t.order.size());
}

void write_report_json(std::ostream& out, const Options& options, const Tally& t, const ReadStats& rs) {
  const char* by = to_string(options.by);
  out << "{\"format_version\":" << kFormatVersion << ",\"by\":" << json_string(by) << ",\"groups\":[";
  for (std::size_t i = 0; i < t.shown; ++i) {
    Group& g = *t.order[i];
    out << (i == 0 ? "" : ",") << "{\"key\":" << json_string(g.key) << ",\"blocks\":" << g.blocks
        << ",\"hangs\":" << g.hangs << ",\"worst_ms\":" << ms_text(g.durations.max())
        << ",\"p50_ms\":" << ms_text(g.durations.percentile(0.50)) << ",\"p95_ms\":" << ms_text(g.durations.percentile(0.95))
        << ",\"percentiles_exact\":" << (g.durations.exact() ? "true" : "false") << ",\"causes\":{";
    for (std::size_t c = 0; c < g.causes.size(); ++c) {
      out << (c == 0 ? "" : ",") << json_string(to_string(static_cast<Cause>(c))) << ':' << g.causes[c];
    }
    out << "},\"events\":" << names_json(g.events) << ",\"events_other\":" << g.events.other
        << ",\"qualifiers\":" << names_json(g.qualifiers) << ",\"qualifiers_other\":" << g.qualifiers.other
        << ",\"culprits\":" << names_json(g.culprits) << ",\"culprits_other\":" << g.culprits.other
        << ",\"culprit_samples\":" << g.culprit_samples << ",\"samples\":" << g.samples_counted
        << ",\"stages\":" << stages_json(g.stages)
        << ",\"first_seen\":" << (g.first_ms ? json_string(format_utc_time(*g.first_ms)) : "null")
        << ",\"last_seen\":" << (g.last_ms ? json_string(format_utc_time(*g.last_ms)) : "null")
        << ",\"without_wall_time\":" << g.without_wall_time << ",\"worst_block\":" << json_string(g.worst_id) << '}';
  }
  out << "],\"groups_total\":" << t.groups.size() << ",\"groups_overflowed_blocks\":" << t.overflowed
      << ",\"summary\":{\"files\":" << rs.files << ",\"lines\":" << rs.lines << ",\"records\":" << rs.records
      << ",\"warnings\":";
  print_warning_counts_json(out, rs);
  out << ",\"blocks\":" << t.stats.blocks << ",\"kept\":" << t.stats.kept << ",\"filtered\":" << t.stats.filtered
      << ",\"ignored\":" << t.stats.ignored << ",\"no_wall_time\":" << t.stats.no_wall_time
      << ",\"out_of_order\":" << t.stats.out_of_order << ",\"deadline_misses\":" << t.stats.deadline_misses
      << ",\"deadline_misses_kept\":" << t.stats.deadline_misses_kept << "},\"deadline_misses\":{\"total\":" << t.miss_total
      << ",\"events\":[";
  for (std::size_t i = 0; i < t.miss_order.size(); ++i) {
    const MissGroup& g = *t.miss_order[i].second;
    out << (i == 0 ? "" : ",") << "{\"event\":" << json_string(*t.miss_order[i].first) << ",\"misses\":" << g.misses
        << ",\"worst_late_ms\":" << ms_text(g.worst_late_us) << ",\"deadline_ms\":" << ms_text(g.deadline_us)
        << ",\"unwatched\":" << g.unwatched << ",\"delayed_by\":" << names_json(g.delayed_by)
        << ",\"delayed_by_other\":" << g.delayed_by.other << ",\"culprits\":" << names_json(g.culprits)
        << ",\"culprits_other\":" << g.culprits.other << '}';
  }
  out << "]},\"waits\":";
  t.waits.write_json(out);
  out << "}\n";
}

void write_misses_text(std::ostream& out, const Tally& t) {
  // The late events and what delayed them: the delaying dispatch's event and its culprit.
  char line[256];
  out << "\ndeadline misses by event: " << t.miss_order.size() << (t.miss_order.size() == 1 ? " event, " : " events, ")
      << t.miss_total << (t.miss_total == 1 ? " miss\n" : " misses\n");
  std::size_t w = 5;
  for (const auto& [event, g] : t.miss_order) w = std::max(w, event->size());
  w = std::min<std::size_t>(w, 60);
  std::snprintf(line, sizeof line, "  %-*s %7s %14s %12s\n", static_cast<int>(w), "event", "misses", "worst late ms",
                "deadline ms");
  out << line;
  for (const auto& [event, g] : t.miss_order) {
    const std::string key = event->empty() ? "\"\"" : *event;
    out << "  " << key << std::string(key.size() < w ? w - key.size() : 0, ' ');
    std::snprintf(line, sizeof line, " %7" PRIu64 " %14s %12s\n", g->misses, ms_text(g->worst_late_us).c_str(),
                  ms_text(g->deadline_us).c_str());
    out << line;
  }
  for (const auto& [event, g] : t.miss_order) {
    out << '\n' << (event->empty() ? "\"\"" : *event) << '\n';
    out << "  delayed by: " << names_text(g->delayed_by) << '\n';
    out << "  delaying culprits: " << names_text(g->culprits) << '\n';
  }
  if (t.misses_overflowed > 0) {
    out << t.misses_overflowed << " deadline misses beyond " << kMaxGroups << " events are in \"" << kOtherGroups << "\"\n";
  }
}

void write_report_text(std::ostream& out, const Options& options, const Tally& t) {
  const char* by = to_string(options.by);
  out << "blocks by " << by << ": " << t.groups.size() << (t.groups.size() == 1 ? " group" : " groups");
  if (t.shown < t.order.size()) out << " (top " << t.shown << " shown)";
  out << '\n';
  std::size_t width = std::string(by).size();
  for (std::size_t i = 0; i < t.shown; ++i) width = std::max(width, t.order[i]->key.size());
  width = std::min<std::size_t>(width, 60);
  char line[256];
  std::snprintf(line, sizeof line, "  %-*s %7s %6s %11s %11s %11s  %s\n", static_cast<int>(width), by, "blocks", "hangs",
                "worst ms", "p50 ms", "p95 ms", "running/waiting/starved/unknown");
  out << line;
  for (std::size_t i = 0; i < t.shown; ++i) {
    Group& g = *t.order[i];
    const std::string key = g.key.empty() ? "\"\"" : g.key;
    out << "  " << key << std::string(key.size() < width ? width - key.size() : 0, ' ');
    std::snprintf(line, sizeof line, " %7" PRIu64 " %6" PRIu64 " %11s %11s %11s  %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "\n",
                  g.blocks, g.hangs, ms_text(g.durations.max()).c_str(), ms_text(g.durations.percentile(0.50)).c_str(),
                  ms_text(g.durations.percentile(0.95)).c_str(), g.causes[1], g.causes[2], g.causes[3], g.causes[0]);
    out << line;
  }
  out << '\n';
  for (std::size_t i = 0; i < t.shown; ++i) {
    const Group& g = *t.order[i];
    out << (g.key.empty() ? "\"\"" : g.key) << '\n';
    if (options.by != GroupBy::event) out << "  events: " << names_text(g.events) << '\n';
    if (options.by != GroupBy::qualifier) out << "  qualifiers: " << names_text(g.qualifiers) << '\n';
    if (options.by != GroupBy::culprit) out << "  culprits: " << names_text(g.culprits) << '\n';
    if (options.by == GroupBy::culprit) {
      out << "  culprit share: " << g.culprit_samples << '/' << g.samples_counted
          << (g.all_samples ? " samples (" : " kept samples (") << share_percent(g.culprit_samples, g.samples_counted)
          << " %)\n";
    }
    if (g.stages.blocks() > 0) {
      out << "  stages (mean share of " << g.stages.blocks() << " of " << g.blocks
          << (g.blocks == 1 ? " block): " : " blocks): ") << stages_text(g.stages) << '\n';
    }
    out << "  first seen: " << seen_text(g.first_ms) << ", last seen: " << seen_text(g.last_ms);
    if (g.without_wall_time > 0 && g.first_ms) out << " (" << g.without_wall_time << " blocks without wall time)";
    out << '\n';
    out << "  worst: block " << g.worst_id << " (" << ms_text(g.worst_us) << " ms)"
        << (g.durations.exact() ? "" : "; p50/p95 from a histogram (1/128 resolution)") << '\n';
  }
  if (t.overflowed > 0) out << t.overflowed << " blocks beyond " << kMaxGroups << " groups are in \"" << kOtherGroups << "\"\n";
  if (!t.miss_order.empty()) write_misses_text(out, t);
  t.waits.write_text(out);
}

}  // namespace

int run_report(const Options& options, std::ostream& out, std::ostream& err) {
  Reader reader(err);
  Tally t;
  tally(reader, options, t);
  if (options.format == "json") {
    write_report_json(out, options, t, reader.stats());
  } else {
    write_report_text(out, options, t);
  }
  print_summary(err, reader.stats(), &t.stats);
  return read_status(reader, err);
}

int run_show(const Options& options, std::ostream& out, std::ostream& err) {
  std::string id = options.id;
  std::transform(id.begin(), id.end(), id.begin(), [](char c) { return static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c); });
  if (id.size() < 6 || id.size() > 12 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    err << "loopcanary: option --id: expected 6 to 12 hex digits of a block ID, got \"" << options.id << "\"\n";
    return 2;
  }
  Reader reader(err);
  std::uint64_t reports = 0;
  std::string last_block;  // the block whose reports are being printed (source + id)
  std::uint64_t blocks = 0;
  for (const std::string& path : options.paths) {
    reader.read_path(path, [&](const LogRecord& r) {
      const std::string block = block_id(r);
      if (block.compare(0, id.size(), id) != 0) return;
      const std::string key = r.source + '\n' + block;
      if (key != last_block) {
        out << (blocks == 0 ? "" : "\n") << "block " << block << "  " << r.qualifier << " / " << r.loop << " / "
            << r.event << " / dispatch " << r.dispatch << "  (" << r.source << ")\n";
        last_block = key;
        ++blocks;
      }
      ++reports;
      print_report(out, r, options.rules);
    });
  }
  print_summary(err, reader.stats());
  const int status = read_status(reader, err);
  if (status != 0) return status;
  if (reports == 0) {
    err << "loopcanary: show: no block with ID " << options.id << '\n';
    return 1;
  }
  return 0;
}

}  // namespace loopcanary::tool
