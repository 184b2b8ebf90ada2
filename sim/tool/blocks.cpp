// SPDX-License-Identifier: MIT
// Blocks from records (model.hpp): the culprit rule, the grouping of a dispatch's reports into
// one Block, the filters every command shares and the reading summary.
#include <algorithm>
#include <ostream>
#include <string_view>

#include "loopcanary_culprit/culprit_rule.hpp"
#include "model.hpp"

namespace loopcanary::tool {

namespace {

// What the culprit rule reads of a frame (loopcanary_culprit/culprit_rule.hpp).
culprit::FrameFacts facts_of(const Frame& f) noexcept {
  return culprit::FrameFacts{f.scope, f.function, f.nearest_symbol, f.module};
}

// The name a culprit frame goes by: the lambda it runs inline, else its label.
std::string culprit_label(const Frame& f) {
  const std::string label = f.label();
  return std::string(culprit::culprit_name(facts_of(f), label));
}

// The culprit rule on a stack's frames, innermost first; `unknown` (an index, or frames.size()
// for none) is a frame not known and skipped.
std::optional<std::size_t> first_culprit(const std::vector<Frame>& frames, std::size_t unknown,
                                         const CulpritRules& rules) {
  return culprit::first(frames.size(), unknown, rules.concern, [&](std::size_t i) { return facts_of(frames[i]); });
}

// The culprit over every sample of the dispatch: each entry of the record's stack table gives
// its count to its stack's culprit; the share is of every sample counted (top_other included).
Culprit table_culprit(const LogRecord& record, const CulpritRules& rules) {
  Culprit best;
  culprit::Tally tally;
  std::vector<const Frame*> named;  // per entry, its culprit frame (null: none)
  std::uint64_t counted = record.top_other;
  for (std::size_t e = 0; e < record.top.size(); ++e) {
    const TopEntry& entry = record.top[e];
    counted += entry.count;
    const std::optional<std::size_t> at =
        first_culprit(entry.frames, entry.leaf_known() ? entry.frames.size() : entry.leaf(), rules);
    named.push_back(at ? &entry.frames[*at] : nullptr);
    if (at) tally.add(culprit_label(entry.frames[*at]), entry.count, e);
  }
  best.of = std::max<std::uint64_t>(counted, record.samples_taken);
  best.all_samples = true;
  if (tally.known()) {
    best.label = tally.label();
    best.frame = *named[tally.entry()];
    best.samples = tally.samples();
  }
  return best;
}

}  // namespace

bool frame_matches(const Frame& frame, const std::vector<std::string>& prefixes) {
  return culprit::matches(facts_of(frame), prefixes);
}

bool is_runtime_frame(const Frame& frame) { return culprit::is_runtime(facts_of(frame)); }

std::optional<std::size_t> sample_culprit(const Sample& sample, const CulpritRules& rules) {
  return first_culprit(sample.frames, sample.frames.size(), rules);
}

Culprit block_culprit(const LogRecord& record, const CulpritRules& rules) {
  // Every sample of the dispatch, by its stack, when the record has its stack table (format
  // version 2); else, for a record of version 1, its kept samples.
  if (record.top_stacks) return table_culprit(record, rules);
  Culprit best;
  best.of = record.stacks.size();
  // Kept samples are at most a few dozen: a small vector of (label, count, first frame). A
  // label that is a field of the frame (function, scope) is compared in place; others
  // (module+offset, bare PC) are built.
  struct Count {
    std::string_view field;  // the label when it is a field of `frame`
    std::string built;       // else the label
    std::uint64_t count;
    const Frame* frame;
    std::string_view label() const noexcept { return field.empty() ? std::string_view(built) : field; }
  };
  std::vector<Count> counts;
  std::string built;
  for (const Sample& sample : record.stacks) {
    const std::optional<std::size_t> at = sample_culprit(sample, rules);
    if (!at) continue;
    const Frame& f = sample.frames[*at];
    std::string_view field;
    if (!f.function.empty()) {
      field = culprit::culprit_name(facts_of(f), f.function);
    } else if (!f.scope.empty()) {
      field = f.scope;
    } else {
      built = f.label();
    }
    const std::string_view label = field.empty() ? std::string_view(built) : field;
    auto it = std::find_if(counts.begin(), counts.end(), [&](const Count& c) { return c.label() == label; });
    if (it == counts.end()) {
      counts.push_back(Count{field, field.empty() ? built : std::string(), 1, &f});
    } else {
      ++it->count;
    }
  }
  const Count* top = nullptr;
  for (const Count& c : counts) {
    if (top == nullptr || c.count > top->count) top = &c;  // ties: the first seen
  }
  if (top != nullptr) {
    best.label = std::string(top->label());
    best.frame = *top->frame;
    best.samples = top->count;
  }
  return best;
}

std::vector<CountedStack> record_stacks(const LogRecord& record) {
  std::vector<CountedStack> out;
  if (!record.top_stacks) {
    out.reserve(record.stacks.size());
    for (const Sample& sample : record.stacks) out.push_back(CountedStack{sample, 1});
    return out;
  }
  out.reserve(record.top.size() + 1);
  std::uint64_t counted = record.top_other;
  for (const TopEntry& entry : record.top) {
    counted += entry.count;
    CountedStack s;
    s.samples = entry.count;
    const std::size_t unknown = entry.leaf_known() ? entry.frames.size() : entry.leaf();
    for (std::size_t i = 0; i < entry.frames.size(); ++i) {
      if (i != unknown) s.stack.frames.push_back(entry.frames[i]);
    }
    out.push_back(std::move(s));
  }
  // Samples counted but in no entry: the table was full (top_other), or a writer counted more.
  const std::uint64_t rest = std::max(counted, record.samples_taken) - (counted - record.top_other);
  if (rest != 0) {
    CountedStack s;
    s.samples = rest;
    Frame other;
    other.scope = kOtherStacks;
    s.stack.frames.push_back(std::move(other));
    out.push_back(std::move(s));
  }
  return out;
}

Culprit deadline_culprit(const LogRecord& record, const CulpritRules& rules) {
  Culprit culprit = block_culprit(record, rules);
  if (culprit.known() || record.top.empty() || record.top.front().frames.empty()) return culprit;
  const TopEntry& top = record.top.front();  // most frequent first: its innermost frame
  culprit.label = top.frames.front().label();
  culprit.frame = top.frames.front();
  culprit.samples = top.count;
  culprit.of = record.samples_taken;
  return culprit;
}

std::string block_id(const LogRecord& record) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
      h ^= bytes[i];
      h *= 0x100000001b3ULL;
    }
  };
  auto mix_string = [&](const std::string& s) { mix(s.c_str(), s.size() + 1); };  // with the NUL
  auto mix_number = [&](std::uint64_t v) {
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(v >> (8 * i));
    mix(le, sizeof le);
  };
  mix_string(record.qualifier);
  mix_string(record.loop);
  mix_number(record.loop_index);
  mix_number(record.dispatch);
  mix_number(record.start);
  const std::uint64_t folded = (h ^ (h >> 48)) & 0xFFFFFFFFFFFFULL;
  std::string text(12, '0');
  for (std::size_t i = 0; i < 12; ++i) text[i] = "0123456789abcdef"[(folded >> (44 - 4 * i)) & 0xF];
  return text;
}

BlockGrouper::BlockGrouper(CulpritRules rules, Callback on_block)
    : rules_(std::move(rules)), on_block_(std::move(on_block)) {}

void BlockGrouper::emit(Block& block) {
  block.culprit = block_culprit(block.record, rules_);
  ++blocks_;
  if (on_block_) on_block_(block);
}

void BlockGrouper::add(const LogRecord& record) {
  LogRecord copy = record;
  take(copy);
}

void BlockGrouper::close(Loop& loop) {
  Block& block = *loop.open;
  emit(block);
  loop.emitted = true;
  loop.last_dispatch = block.record.dispatch;
  loop.last_start = block.record.start;
  if (spare_blocks_.size() < kSpareBlocks) spare_blocks_.push_back(std::move(loop.open));  // storage for the next
  loop.open.reset();
}

void BlockGrouper::take(LogRecord& r) {
  if (r.phase == Phase::deadline_miss) return;  // not a report of a block
  auto it = loops_.find(key_of(r));
  if (it == loops_.end()) {
    it = loops_.emplace(Key{r.source, r.qualifier, r.loop, r.loop_index}, Loop{}).first;
  }
  Loop& loop = it->second;
  if (loop.open) {
    Block& open = *loop.open;
    const bool same = open.record.dispatch == r.dispatch && open.record.start == r.start;
    if (same && r.report > open.record.report) {
      ++open.reports;
      open.hung = open.hung || r.hung || r.phase == Phase::hang;
      const bool final = r.phase == Phase::final;
      // The final one, else the latest (an open block has no final report); r gets the storage
      // of the one it replaces.
      std::swap(open.record, r);
      open.has_final = final;
      if (final) close(loop);
      return;
    }
    // A later dispatch, or a restarted writer (report numbers start again): the open block
    // is complete as it is.
    close(loop);
  }
  if (loop.emitted && loop.last_dispatch == r.dispatch && loop.last_start == r.start) {
    ++out_of_order_;  // a report after its dispatch's final one
  }
  const bool final = r.phase == Phase::final;
  if (!final) {
    if (spare_blocks_.empty()) {
      loop.open = std::make_unique<Block>();
    } else {
      loop.open = std::move(spare_blocks_.back());
      spare_blocks_.pop_back();
    }
  }
  Block& block = final ? single_ : *loop.open;  // a final report is a block of its own at once
  block.id = block_id(r);
  block.reports = 1;
  block.has_final = final;
  block.hung = r.hung || r.phase == Phase::hang;
  block.first_file = r.file;
  block.first_line = r.line;
  std::swap(block.record, r);  // r gets the storage of a block emitted before
  if (final) {
    emit(block);
    loop.emitted = true;
    loop.last_dispatch = block.record.dispatch;
    loop.last_start = block.record.start;
  }
}

void BlockGrouper::finish() {
  for (auto& [key, loop] : loops_) {
    if (loop.open) close(loop);
  }
}

bool Filter::accepts(const Block& block) const { return accepts(block.record); }

bool Filter::accepts(const HealthLog& h) const {
  if (since_ms || until_ms) {
    if (!h.wall_ms) return false;
    if (since_ms && *h.wall_ms < *since_ms) return false;
    if (until_ms && *h.wall_ms >= *until_ms) return false;
  }
  if (!qualifiers.empty() && std::find(qualifiers.begin(), qualifiers.end(), h.qualifier) == qualifiers.end()) return false;
  return loops.empty() || std::find(loops.begin(), loops.end(), h.loop) != loops.end();
}

bool Filter::accepts(const LogRecord& r) const {
  if (since_ms || until_ms) {
    if (!r.wall_ms) return false;
    if (since_ms && *r.wall_ms < *since_ms) return false;
    if (until_ms && *r.wall_ms >= *until_ms) return false;
  }
  if (!qualifiers.empty() && std::find(qualifiers.begin(), qualifiers.end(), r.qualifier) == qualifiers.end()) return false;
  if (!events.empty() && std::find(events.begin(), events.end(), r.event) == events.end()) return false;
  if (!causes.empty() && std::find(causes.begin(), causes.end(), r.cause) == causes.end()) return false;
  if (!loops.empty() && std::find(loops.begin(), loops.end(), r.loop) == loops.end()) return false;
  return r.duration_us >= min_us;
}

BlockStats read_blocks(Reader& reader, const std::vector<std::string>& paths, const CulpritRules& rules,
                       const Filter& filter, const std::function<void(const Block&)>& on_block,
                       const OtherRecords& others) {
  BlockStats stats;
  reader.set_health_callback([&](HealthLog& health) {
    ++stats.health_records;
    if (!filter.accepts(health)) return;
    ++stats.health_kept;
    if (others.on_health) others.on_health(health);
  });
  BlockGrouper grouper(rules, [&](const Block& block) {
    ++stats.blocks;
    if (!filter.accepts(block)) {
      ++stats.filtered;
      if ((filter.since_ms || filter.until_ms) && !block.record.wall_ms) ++stats.no_wall_time;
      return;
    }
    if (!rules.ignore.empty() && block.culprit.known() && frame_matches(block.culprit.frame, rules.ignore)) {
      ++stats.ignored;
      return;
    }
    ++stats.kept;
    if (on_block) on_block(block);
  });
  for (const std::string& path : paths) {
    reader.read_path(path, [&](LogRecord& record) {
      if (record.phase != Phase::deadline_miss) {
        grouper.take(record);
        return;
      }
      ++stats.deadline_misses;
      if (!filter.accepts(record)) return;
      if (!rules.ignore.empty()) {  // the white list applies to what delayed it
        const Culprit culprit = deadline_culprit(record, rules);
        if (culprit.known() && frame_matches(culprit.frame, rules.ignore)) return;
      }
      ++stats.deadline_misses_kept;
      if (others.on_deadline_miss) others.on_deadline_miss(record);
    });
  }
  reader.set_health_callback({});
  grouper.finish();
  stats.out_of_order = grouper.out_of_order();
  return stats;
}

void print_summary(std::ostream& out, const ReadStats& stats, const BlockStats* blocks) {
  out << "read " << stats.files << (stats.files == 1 ? " file, " : " files, ") << stats.lines
      << (stats.lines == 1 ? " line, " : " lines, ") << stats.records << (stats.records == 1 ? " record" : " records");
  if (stats.health_records > 0) out << " (" << stats.health_records << " health)";
  out << "; ";
  if (stats.captures > 0) {
    out << stats.captures << (stats.captures == 1 ? " capture: " : " captures: ") << stats.packets
        << (stats.packets == 1 ? " packet decoded, " : " packets decoded, ") << stats.skipped_bytes
        << (stats.skipped_bytes == 1 ? " byte skipped; " : " bytes skipped; ");
  }
  out << stats.warnings_total() << (stats.warnings_total() == 1 ? " warning" : " warnings");
  bool first = true;
  for (std::size_t k = 0; k < kWarningKinds; ++k) {
    if (stats.warnings[k] == 0) continue;
    out << (first ? " (" : ", ") << to_string(static_cast<WarningKind>(k)) << ' ' << stats.warnings[k];
    first = false;
  }
  if (!first) out << ')';
  if (blocks != nullptr) {
    out << "; " << blocks->blocks << (blocks->blocks == 1 ? " block, " : " blocks, ") << blocks->kept << " shown";
    if (blocks->filtered > 0) {
      out << ", " << blocks->filtered << " filtered out";
      if (blocks->no_wall_time > 0) out << " (" << blocks->no_wall_time << " without wall time)";
    }
    if (blocks->ignored > 0) out << ", " << blocks->ignored << " ignored (--ignore)";
    if (blocks->out_of_order > 0) out << ", " << blocks->out_of_order << " reports after their final one";
    if (blocks->deadline_misses > 0) {
      out << "; " << blocks->deadline_misses << (blocks->deadline_misses == 1 ? " deadline miss" : " deadline misses");
      if (blocks->deadline_misses_kept != blocks->deadline_misses) out << ", " << blocks->deadline_misses_kept << " shown";
    }
  }
  out << '\n';
}

}  // namespace loopcanary::tool
