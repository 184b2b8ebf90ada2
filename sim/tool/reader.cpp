// SPDX-License-Identifier: MIT
// The streaming reader of JSON Lines records (model.hpp): a line splitter with a bounded buffer,
// and the record parsers, which walk each line with the JSON scanner (json_scanner.hpp) and pick
// the fields the tool uses, decoding straight into a reused LogRecord or HealthLog (no tree).
// Frames and samples keep their storage from line to line.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <istream>
#include <ostream>
#include <set>
#include <string_view>
#include <system_error>

#include <dirent.h>
#include <sys/stat.h>

#include "json_scanner.hpp"
#include "loopcanary/record_fields.hpp"
#include "model.hpp"
#include "packet_reader.hpp"

namespace loopcanary::tool {

namespace {

using json::is;
using json::quoted;
using json::Scanner;
using json::set_text;

// The fields of a record kind's lists (loopcanary/record_fields.hpp) are read into the model's
// members of the same names, each by its member's type.
bool read_value(Scanner& s, const char* field, std::uint64_t& out) { return s.u64(field, out); }
bool read_value(Scanner& s, const char* field, std::optional<std::uint64_t>& out) { return s.u64_or_null(field, out); }
bool read_value(Scanner& s, const char* field, std::string& out) { return s.str(field, out); }
template <class Enum>
bool read_enum(Scanner& s, const char* field, Enum& out, bool (*parse)(std::string_view, Enum&) noexcept) {
  std::string_view value;
  std::string escaped;
  if (!s.str_view(field, value, escaped)) return false;
  return parse(value, out) || s.bad_value(field, "unknown value " + quoted(value));
}
bool read_value(Scanner& s, const char* field, Phase& out) { return read_enum(s, field, out, parse_phase); }
bool read_value(Scanner& s, const char* field, Cause& out) { return read_enum(s, field, out, parse_cause); }

// A reader's required fields: `name`'s bit among them, 0 for a field that is not required.
template <std::size_t N>
constexpr unsigned required_bit(std::string_view name, const std::string_view (&required)[N]) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    if (required[i] == name) return 1u << i;
  }
  return 0;
}

// "missing field a" / "missing fields a, b" for the required fields whose bit `seen` lacks.
template <std::size_t N>
std::string missing_fields(unsigned seen, const std::string_view (&required)[N]) {
  std::string missing;
  for (std::size_t i = 0; i < N; ++i) {
    if ((seen & (1u << i)) != 0) continue;
    if (!missing.empty()) missing += ", ";
    missing += required[i];
  }
  return "missing field" + std::string(missing.find(',') == std::string::npos ? " " : "s ") + missing;
}

// A record without one of these is skipped with a missing_field warning.
constexpr std::string_view kBlockRequired[] = {"report", "phase", "loop", "dispatch", "duration_us"};
constexpr std::string_view kHealthRequired[] = {"kind", "number", "loop", "end", "window_us"};
constexpr std::string_view kEventRequired[] = {"event"};

// One field of a list read when `key` is its name, `field` naming it in warnings: into `member`
// (of `out`), its bit among the `required` fields set in `seen`.
#define LOOPCANARY_READ_AS(field, member, name)                 \
  if (is(key, #name)) {                                         \
    constexpr unsigned bit = required_bit(#name, required);     \
    seen |= bit;                                                \
    return read_value(s, field, member);                        \
  }
#define LOOPCANARY_READ_FIELD(name, kind, value, unit) LOOPCANARY_READ_AS(#name, out.name, name)
#define LOOPCANARY_READ_EVENT_FIELD(name, kind, value, unit) LOOPCANARY_READ_AS("events." #name, out.name, name)
// The "cpu" and "samples" objects have no required member.
#define LOOPCANARY_READ_CPU_FIELD(name, kind, value, unit) \
  if (is(key, #name)) return read_value(s, "cpu." #name, out.cpu_##name);
#define LOOPCANARY_READ_SAMPLE_FIELD(name, kind, value, unit) \
  if (is(key, #name)) return read_value(s, "samples." #name, out.samples_##name);

// A name the record gives empty reads "?", as the writers print a null one.
void unknown_if_empty(std::string& name) {
  if (name.empty()) name = "?";
}

// A block record's "cpu" or "samples" object (`cpu`: which): its listed members read, the others
// skipped.
bool parse_group(Scanner& s, LogRecord& out, bool cpu) {
  if (!s.is('{')) return s.wrong_type(cpu ? "cpu" : "samples", "an object");
  return s.object([&](std::string_view key) {
    if (cpu) {
      LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_READ_CPU_FIELD)
    } else {
      LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_READ_SAMPLE_FIELD)
    }
    return s.skip_value();
  });
}

// One entry of a health record's "events".
bool parse_event_health(Scanner& s, EventHealth& out) {
  if (!s.is('{')) return s.wrong_type("events", "an object");
  const auto& required = kEventRequired;
  unsigned seen = 0;
  const bool ok = s.object([&](std::string_view key) {
    LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_READ_EVENT_FIELD)
    return s.skip_value();
  });
  if (!ok) return false;
  if (seen == 0) return s.bad_value("events", "an entry without \"event\"");
  unknown_if_empty(out.event);
  return true;
}

// Spare elements kept between lines (their strings' and vectors' capacity is reused), at most
// this many of each kind: the rest of a huge line's frames is freed.
constexpr std::size_t kMaxSpare = 4096;

// Scratch of parse_record that outlives one call (capacity reuse): the symbol entries
// ("linux"."frames", "symbols"."frames"), their order by PC, and spare samples and frames.
struct Scratch {
  std::vector<Frame> symbols;
  std::vector<std::uint32_t> by_pc;  // indices into symbols, by PC then by position
  std::string text;
  std::vector<Sample> spare_samples;
  std::vector<Frame> spare_frames;
  std::vector<TopEntry> spare_top;
  std::vector<Stage> spare_stages;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// The next element of a vector filled from the front (`used` so far): an element kept from an
// earlier line, else a spare one, else a new one. Its content is the caller's to reset.
template <class T>
T& next_slow(std::vector<T>& items, std::size_t& used, std::vector<T>& spare) {
  if (spare.empty()) {
    items.emplace_back();
  } else {
    items.push_back(std::move(spare.back()));
    spare.pop_back();
  }
  return items[used++];
}
template <class T>
LOOPCANARY_TOOL_HOT T& next(std::vector<T>& items, std::size_t& used, std::vector<T>& spare) {
  if (used < items.size()) return items[used++];
  return next_slow(items, used, spare);
}

// Shrinks `items` to `used` elements, moving the others to `spare` (up to kMaxSpare).
template <class T>
void trim(std::vector<T>& items, std::size_t used, std::vector<T>& spare) {
  while (items.size() > used) {
    if (spare.size() < kMaxSpare) spare.push_back(std::move(items.back()));
    items.pop_back();
  }
}

// Where a symbol entry comes from, for warnings: "linux"."frames" or "symbols"."frames".
struct SymbolFields {
  const char* frames;
  const char* pc;
  const char* module;
  const char* build_id;
  const char* offset;
  const char* function;
  const char* function_offset;
  const char* nearest_symbol;
  const char* nearest_offset;
  const char* file;
  const char* line;
};
constexpr SymbolFields kLinuxFrames{"linux.frames",          "linux.frames.pc",
                                    "linux.frames.module",   "linux.frames.build_id",
                                    "linux.frames.offset",   "linux.frames.function",
                                    "linux.frames.function_offset", "linux.frames.nearest_symbol",
                                    "linux.frames.nearest_offset",  "linux.frames.file",
                                    "linux.frames.line"};
constexpr SymbolFields kSymbolsFrames{"symbols.frames",          "symbols.frames.pc",
                                      "symbols.frames.module",   "symbols.frames.build_id",
                                      "symbols.frames.offset",   "symbols.frames.function",
                                      "symbols.frames.function_offset", "symbols.frames.nearest_symbol",
                                      "symbols.frames.nearest_offset",  "symbols.frames.file",
                                      "symbols.frames.line"};

bool parse_frame_symbol(Scanner& s, Frame& f, std::string& text, const SymbolFields& names) {
  f.clear();
  bool has_pc = false;
  const bool ok = s.object([&](std::string_view key) {
    if (is(key, "pc")) return has_pc = true, s.hex_string(names.pc, f.pc, text);
    if (is(key, "module")) return s.str(names.module, f.module);
    if (is(key, "build_id")) return s.str(names.build_id, f.build_id);
    if (is(key, "offset")) return s.hex_string(names.offset, f.module_offset, text);
    if (is(key, "function")) return s.str(names.function, f.function);
    if (is(key, "function_offset")) return s.hex_string(names.function_offset, f.function_offset, text);
    if (is(key, "nearest_symbol")) return s.str(names.nearest_symbol, f.nearest_symbol);
    if (is(key, "nearest_offset")) return s.hex_string(names.nearest_offset, f.nearest_offset, text);
    if (is(key, "file")) return s.str(names.file, f.file);
    if (is(key, "line")) {
      std::uint64_t line = 0;
      if (!s.u64(names.line, line)) return false;
      f.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(line, 0xFFFFFFFFu));
      return true;
    }
    return s.skip_value();
  });
  if (ok && !has_pc) return s.bad_value(names.frames, "an entry without \"pc\"");
  return ok;
}

// The symbol entry of a PC: the first of the record's entries with that PC (`by_pc` orders
// them by PC, then by position), null when none.
const Frame* find_symbol(std::uint64_t pc, const std::vector<Frame>& symbols, const std::vector<std::uint32_t>& by_pc) {
  const auto it = std::lower_bound(by_pc.begin(), by_pc.end(), pc,
                                   [&](std::uint32_t i, std::uint64_t value) { return symbols[i].pc < value; });
  return it == by_pc.end() || symbols[*it].pc != pc ? nullptr : &symbols[*it];
}

// Sets what a PC frame says of its symbol from the entry (none: empty), whatever the frame held.
void set_symbol(Frame& frame, const Frame* symbol) {
  if (symbol == nullptr) {
    frame.clear_symbol();
    return;
  }
  set_text(frame.function, symbol->function);
  frame.function_offset = symbol->function_offset;
  set_text(frame.nearest_symbol, symbol->nearest_symbol);
  frame.nearest_offset = symbol->nearest_offset;
  set_text(frame.module, symbol->module);
  set_text(frame.build_id, symbol->build_id);
  frame.module_offset = symbol->module_offset;
  set_text(frame.file, symbol->file);
  frame.line = symbol->line;
}

}  // namespace

namespace {

// A "kind" member on a line being read as another kind of record: an unknown_kind fault, its
// value kept in `kind_value` (parse_line reads the line again as that kind when it knows it).
bool other_kind(Scanner& s, std::string& kind_value, const char* reading) {
  std::string_view value;
  std::string escaped;
  if (!s.str_view("kind", value, escaped)) return false;
  kind_value.assign(value.data(), value.size());
  s.kind = WarningKind::unknown_kind;
  s.what = is(value, "health") ? std::string("a health record is not a ") + reading
                               : "unknown record kind " + quoted(value) + ": skipped";
  return false;
}

// A record's "format_version" (kFormatVersionOldest when absent): false with an
// unknown_version warning for one this reader does not read.
bool known_version(std::uint64_t version, WarningKind& kind, std::string& what) {
  if (version >= kFormatVersionOldest && version <= kFormatVersion) return true;
  kind = WarningKind::unknown_version;
  what = "format_version " + std::to_string(version) + " is unknown (this reader reads versions " +
         std::to_string(kFormatVersionOldest) + " to " + std::to_string(kFormatVersion) + ")";
  return false;
}

// The frames of a stack ("stacks" and "top" entries): "scopes" and "pcs" arrays into `frames`
// (null: checked and dropped). Scopes come before PCs in the frames whatever the key order: PCs
// found before the scopes are moved behind them by finish().
struct StackFrames {
  std::vector<Frame>* frames;
  std::size_t used = 0;
  std::size_t scopes = 0;
  std::size_t pcs_before_scopes = 0;
  bool seen_scopes = false;
  // A reused frame keeps its strings: each field is set by the caller or, for a PC frame's
  // symbol, after the parse (set_symbol).
  Frame& add(std::vector<Frame>& spare) { return next(*frames, used, spare); }
  void finish(std::vector<Frame>& spare) {
    if (frames == nullptr) return;
    trim(*frames, used, spare);
    if (pcs_before_scopes > 0 && scopes > 0) {
      std::rotate(frames->begin(), frames->begin() + static_cast<std::ptrdiff_t>(pcs_before_scopes), frames->end());
    }
  }
};

// One block record line into a LogRecord (parse_record): the scalars by the field lists, each
// structured member by a method of its own. The record's samples, top entries and stages are
// refilled in place (their storage kept from line to line).
class BlockParser {
 public:
  BlockParser(const char* data, std::size_t length, LogRecord& out, bool want_stacks)
      : s(data, length), out_(out), sc_(scratch()), text_(sc_.text), want_stacks_(want_stacks) {
    stacks_.swap(out.stacks);
    top_.swap(out.top);
    stages_.swap(out.stages);
    out.clear_fields();
  }

  bool parse(WarningKind& kind, std::string& what, std::string& kind_value) {
    kind_value_ = &kind_value;
    bool ok = s.object([this](std::string_view key) { return member(key); });
    if (ok && !s.at_end()) ok = s.malformed("bytes after the object");
    trim(stacks_, want_stacks_ ? stacks_used_ : 0, sc_.spare_samples);
    trim(top_, top_used_, sc_.spare_top);
    trim(stages_, stages_used_, sc_.spare_stages);
    out_.stacks.swap(stacks_);
    out_.top.swap(top_);
    out_.stages.swap(stages_);
    if (!ok) {
      kind = s.kind;
      what = std::move(s.what);
      return false;
    }
    if (!known_version(version_, kind, what)) return false;
    if (seen_ != (1u << std::size(kBlockRequired)) - 1) {
      kind = WarningKind::missing_field;
      what = missing_fields(seen_, kBlockRequired);
      return false;
    }
    merge_symbols();
    out_.top_stacks = version_ >= 2 && !top_innermost_;
    return true;
  }

 private:
  bool member(std::string_view key) {
    const auto& required = kBlockRequired;
    LogRecord& out = out_;
    unsigned& seen = seen_;
    LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_READ_FIELD)
    switch (key.empty() ? '\0' : key[0]) {
      case 'c':
        if (is(key, "cpu")) return parse_group(s, out, true);
        break;
      case 'd':
        if (is(key, "delayed_by")) return delayed_by();
        break;
      case 'f':
        if (is(key, "flags")) return flags();
        if (is(key, "format_version")) return s.u64("format_version", version_);
        break;
      case 'l':
        if (is(key, "linux")) return linux_members();
        break;
      case 'k':
        if (is(key, "kind")) return other_kind(s, *kind_value_, "block record");
        break;
      case 's':
        if (is(key, "stages")) return stages();
        if (is(key, "samples")) return parse_group(s, out, false);
        if (is(key, "stacks")) return stacks();
        if (is(key, "symbols")) {
          if (!s.is('{')) return s.wrong_type("symbols", "an object");
          return s.object([this](std::string_view k) {
            if (is(k, "frames")) return symbol_frames(kSymbolsFrames);
            return s.skip_value();
          });
        }
        break;
      case 't':
        if (is(key, "top_innermost")) return s.boolean("top_innermost", top_innermost_);
        if (is(key, "top")) return top();
        break;
      case 'w':
        if (is(key, "wait")) return wait();
        break;
      default:
        break;
    }
    return s.skip_value();  // a field of a newer writer
  }

  bool delayed_by() {
    if (s.is('n')) return s.skip_value();  // null: unknown, or not a deadline miss
    if (!s.is('{')) return s.wrong_type("delayed_by", "an object or null");
    bool has_dispatch = false;
    const bool ok = s.object([&](std::string_view k) {
      if (is(k, "dispatch")) return has_dispatch = true, s.u64("delayed_by.dispatch", out_.delayed_by_dispatch);
      if (is(k, "event")) return s.str("delayed_by.event", out_.delayed_by);
      return s.skip_value();
    });
    if (!ok) return false;
    if (!has_dispatch) return s.bad_value("delayed_by", "an object without \"dispatch\"");
    unknown_if_empty(out_.delayed_by);
    return true;
  }

  bool flags() {
    if (!s.is('[')) return s.wrong_type("flags", "an array");
    return s.array([this](std::size_t) {
      std::string_view flag;
      if (!s.str_view("flags", flag, text_)) return false;
      if (is(flag, "hung")) out_.hung = true;
      else if (is(flag, "unwatched")) out_.unwatched = true;
      else if (is(flag, "end_estimated")) out_.end_estimated = true;
      else if (is(flag, "running_at_stop")) out_.running_at_stop = true;
      return true;  // a flag of a newer writer: ignored
    });
  }

  bool linux_members() {
    if (!s.is('{')) return s.wrong_type("linux", "an object");
    out_.has_linux = true;
    return s.object([this](std::string_view k) {
      if (is(k, "time")) {
        std::string_view time;
        if (!s.str_view("linux.time", time, text_)) return false;
        std::int64_t ms = 0;
        if (!parse_utc_time(time, ms)) return s.bad_value("linux.time", "not an ISO-8601 UTC time: " + quoted(time));
        out_.wall_ms = ms;
        return true;
      }
      if (is(k, "clock")) return s.str("linux.clock", out_.clock);
      if (is(k, "frames")) return symbol_frames(kLinuxFrames);
      return s.skip_value();
    });
  }

  bool stages() {
    if (!s.is('[')) return s.wrong_type("stages", "an array");
    return s.array([this](std::size_t) {
      if (!s.is('{')) return s.wrong_type("stages", "an object");
      Stage& stage = next(stages_, stages_used_, sc_.spare_stages);
      stage.us = 0;
      bool has_name = false, has_us = false;
      const bool ok = s.object([&](std::string_view k) {
        if (is(k, "name")) return has_name = true, s.str("stages.name", stage.name);
        if (is(k, "us")) return has_us = true, s.u64("stages.us", stage.us);
        return s.skip_value();
      });
      if (!ok) return false;
      if (!has_name) return s.bad_value("stages", "an entry without \"name\"");
      if (!has_us) return s.bad_value("stages", "an entry without \"us\"");
      unknown_if_empty(stage.name);
      return true;
    });
  }

  bool stacks() {
    if (!s.is('[')) return s.wrong_type("stacks", "an array");
    return s.array([this](std::size_t) {
      if (!s.is('{')) return s.wrong_type("stacks", "an object");
      Sample* sample = nullptr;
      if (want_stacks_) sample = &next(stacks_, stacks_used_, sc_.spare_samples);
      if (sample != nullptr) sample->at_us = 0;
      StackFrames frames{sample != nullptr ? &sample->frames : nullptr};
      const bool ok = s.object([&](std::string_view k) {
        if (is(k, "at_us")) {
          std::uint64_t at = 0;
          if (!s.u64("stacks.at_us", at)) return false;
          if (sample != nullptr) sample->at_us = at;
          return true;
        }
        const bool is_scopes = is(k, "scopes");
        if (!is_scopes && !is(k, "pcs")) return s.skip_value();
        return stack_frames(frames, is_scopes, is_scopes ? "stacks.scopes" : "stacks.pcs");
      });
      frames.finish(sc_.spare_frames);
      return ok;
    });
  }

  bool top() {
    if (!s.is('[')) return s.wrong_type("top", "an array");
    return s.array([this](std::size_t) {
      if (!s.is('{')) return s.wrong_type("top", "an object");
      TopEntry& entry = next(top_, top_used_, sc_.spare_top);
      entry.count = 0;
      entry.leaf_high.clear();
      StackFrames frames{&entry.frames};
      // Version 2: "scopes", "pcs" and "leaf_high"; version 1: "scope" or "pc", one frame.
      const bool ok = s.object([&](std::string_view k) {
        if (is(k, "count")) return s.u64("top.count", entry.count);
        if (is(k, "scopes") || is(k, "pcs")) {
          const bool is_scopes = is(k, "scopes");
          return stack_frames(frames, is_scopes, is_scopes ? "top.scopes" : "top.pcs");
        }
        if (is(k, "leaf_high")) return s.is('n') ? s.skip_value() : s.hex_string("top.leaf_high", entry.leaf_high.pc, text_);
        if (is(k, "scope")) {
          Frame& f = frames.add(sc_.spare_frames);
          f.clear();
          if (!s.str("top.scope", f.scope)) return false;
          unknown_if_empty(f.scope);
          ++frames.scopes;
          return true;
        }
        if (is(k, "pc")) {
          Frame& f = frames.add(sc_.spare_frames);
          f.clear();
          if (!s.hex_string("top.pc", f.pc, text_)) return false;
          entry.leaf_high.pc = f.pc;
          return true;
        }
        return s.skip_value();
      });
      frames.finish(sc_.spare_frames);
      if (entry.leaf() < entry.frames.size() && entry.leaf_high.pc == 0) {
        entry.leaf_high.pc = entry.frames[entry.leaf()].pc;  // no range given: one PC
      }
      return ok;
    });
  }

  // "wait": {"other":N,"objects":[...]}.
  bool wait() {
    if (!s.is('{')) return s.wrong_type("wait", "an object");
    return s.object([this](std::string_view k) {
      if (is(k, "other")) return s.u64("wait.other", out_.wait.other);
      if (is(k, "objects")) {
        if (!s.is('[')) return s.wrong_type("wait.objects", "an array");
        return s.array([this](std::size_t) { return wait_object(out_.wait.objects.emplace_back()); });
      }
      return s.skip_value();
    });
  }

  // One "wait"."objects" entry; "kind" and "samples" are required.
  bool wait_object(WaitEntry& o) {
    if (!s.is('{')) return s.wrong_type("wait.objects", "an object");
    bool has_kind = false, has_samples = false;
    const bool ok = s.object([&](std::string_view k) {
      if (is(k, "kind")) {
        std::string_view kind;
        if (!s.str_view("wait.objects.kind", kind, text_)) return false;
        has_kind = true;
        return parse_wait_kind(kind, o.kind) || s.bad_value("wait.objects.kind", "unknown value " + quoted(kind));
      }
      if (is(k, "samples")) return has_samples = true, s.u64("wait.objects.samples", o.samples);
      if (is(k, "address")) return s.hex_string("wait.objects.address", o.address, text_);
      if (is(k, "fd")) return s.u64_or_null("wait.objects.fd", o.fd);
      if (is(k, "value")) return s.u64("wait.objects.value", o.value);
      if (is(k, "text")) return s.str("wait.objects.text", o.text);
      if (is(k, "owner")) return s.is('n') ? s.skip_value() : wait_owner(o.owner.emplace());
      if (is(k, "deadlock")) return s.boolean("wait.objects.deadlock", o.deadlock);
      if (is(k, "chain")) {
        if (!s.is('[')) return s.wrong_type("wait.objects.chain", "an array");
        return s.array([&](std::size_t) { return wait_hop(o.chain.emplace_back()); });
      }
      return s.skip_value();
    });
    if (!ok) return false;
    if (!has_kind) return s.bad_value("wait.objects", "an entry without \"kind\"");
    if (!has_samples) return s.bad_value("wait.objects", "an entry without \"samples\"");
    return true;
  }

  // One "chain" entry of a wait object: "address", "tid" and "name".
  bool wait_hop(WaitChainHop& hop) {
    if (!s.is('{')) return s.wrong_type("wait.objects.chain", "an object");
    return s.object([&](std::string_view k) {
      if (is(k, "address")) return s.hex_string("wait.objects.chain.address", hop.address, text_);
      if (is(k, "tid")) return s.u64("wait.objects.chain.tid", hop.tid);
      if (is(k, "name")) return s.str("wait.objects.chain.name", hop.name);
      return s.skip_value();
    });
  }

  // A wait object's "owner" (not null); "tid" is required.
  bool wait_owner(WaitHolder& h) {
    if (!s.is('{')) return s.wrong_type("wait.objects.owner", "an object or null");
    bool has_tid = false;
    StackFrames frames{&h.frames};
    const bool ok = s.object([&](std::string_view k) {
      if (is(k, "tid")) return has_tid = true, s.u64("wait.objects.owner.tid", h.tid);
      if (is(k, "name")) return s.str("wait.objects.owner.name", h.name);
      if (is(k, "loop")) return s.is('n') ? s.skip_value() : s.str("wait.objects.owner.loop", h.loop.emplace());
      const bool is_scopes = is(k, "scopes");
      if (!is_scopes && !is(k, "pcs")) return s.skip_value();
      return stack_frames(frames, is_scopes, is_scopes ? "wait.objects.owner.scopes" : "wait.objects.owner.pcs");
    });
    frames.finish(sc_.spare_frames);
    if (!ok) return false;
    if (!has_tid) return s.bad_value("wait.objects.owner", "an object without \"tid\"");
    return true;
  }

  // A "scopes" or "pcs" array of a stack into `to`.
  bool stack_frames(StackFrames& to, bool is_scopes, const char* field) {
    if (!s.is('[')) return s.wrong_type(field, "an array");
    if (is_scopes) to.seen_scopes = true;
    return s.array([&](std::size_t) {
      if (to.frames == nullptr) {
        std::uint64_t pc = 0;
        std::string_view ignored;
        return is_scopes ? s.str_view(field, ignored, text_) : s.hex_string(field, pc, text_);
      }
      Frame& f = to.add(sc_.spare_frames);
      if (is_scopes) {
        std::string_view scope;
        if (!s.str_view(field, scope, text_)) return false;
        set_text(f.scope, scope.empty() ? std::string_view("?") : scope);
        f.pc = 0;
        f.clear_symbol();
        ++to.scopes;
        return true;
      }
      f.scope.clear();
      if (!to.seen_scopes) ++to.pcs_before_scopes;
      return s.hex_string(field, f.pc, text_);
    });
  }

  // "linux"."frames" and "symbols"."frames": entries collected in sc_.symbols, merged at the end.
  bool symbol_frames(const SymbolFields& names) {
    if (!s.is('[')) return s.wrong_type(names.frames, "an array");
    return s.array([&](std::size_t) {
      if (!s.is('{')) return s.wrong_type(names.frames, "an object");
      return parse_frame_symbol(s, next(sc_.symbols, symbols_used_, sc_.spare_frames), text_, names);
    });
  }

  // Every PC frame gets what the symbol entries say of its PC, or nothing.
  void merge_symbols() {
    std::vector<std::uint32_t>& by_pc = sc_.by_pc;
    by_pc.resize(symbols_used_);
    for (std::size_t i = 0; i < symbols_used_; ++i) by_pc[i] = static_cast<std::uint32_t>(i);
    const std::vector<Frame>& symbols = sc_.symbols;
    std::sort(by_pc.begin(), by_pc.end(), [&](std::uint32_t a, std::uint32_t b) {
      return symbols[a].pc != symbols[b].pc ? symbols[a].pc < symbols[b].pc : a < b;
    });
    const bool any = symbols_used_ != 0;
    const Frame* last = nullptr;  // the entry of the PC before (samples repeat PCs)
    for (Sample& sample : out_.stacks) {
      for (Frame& f : sample.frames) {
        if (f.is_scope()) continue;
        if (last == nullptr || last->pc != f.pc) last = any ? find_symbol(f.pc, symbols, by_pc) : nullptr;
        set_symbol(f, last != nullptr && last->pc == f.pc ? last : nullptr);
      }
    }
    for (TopEntry& entry : out_.top) {
      for (Frame& f : entry.frames) {
        if (!f.is_scope()) set_symbol(f, any ? find_symbol(f.pc, symbols, by_pc) : nullptr);
      }
      if (entry.leaf() < entry.frames.size()) {
        set_symbol(entry.leaf_high, any ? find_symbol(entry.leaf_high.pc, symbols, by_pc) : nullptr);
      }
    }
    for (WaitEntry& o : out_.wait.objects) {
      if (!o.owner) continue;
      for (Frame& f : o.owner->frames) {
        if (!f.is_scope()) set_symbol(f, any ? find_symbol(f.pc, symbols, by_pc) : nullptr);
      }
    }
  }

  Scanner s;
  LogRecord& out_;
  Scratch& sc_;
  std::string& text_;  // decoded escapes of a value read as a view
  const bool want_stacks_;
  std::string* kind_value_ = nullptr;
  std::vector<Sample> stacks_;
  std::vector<TopEntry> top_;
  std::vector<Stage> stages_;
  std::size_t stacks_used_ = 0;
  std::size_t top_used_ = 0;
  std::size_t stages_used_ = 0;
  std::size_t symbols_used_ = 0;
  unsigned seen_ = 0;
  std::uint64_t version_ = kFormatVersionOldest;  // a line without "format_version" predates it
  bool top_innermost_ = false;
};

bool parse_block(const char* data, std::size_t length, LogRecord& out, WarningKind& kind, std::string& what,
                 bool want_stacks, std::string& kind_value) {
  return BlockParser(data, length, out, want_stacks).parse(kind, what, kind_value);
}

}  // namespace

bool parse_record(const char* data, std::size_t length, LogRecord& out, WarningKind& kind, std::string& what,
                  bool want_stacks) {
  std::string kind_value;
  return parse_block(data, length, out, kind, what, want_stacks, kind_value);
}

bool parse_health_record(const char* data, std::size_t length, HealthLog& out, WarningKind& kind, std::string& what) {
  out.clear();
  Scratch& sc = scratch();
  std::string& text = sc.text;
  unsigned seen = 0;
  std::uint64_t version = kFormatVersion;
  std::string kind_value;
  Scanner s(data, length);
  const auto& required = kHealthRequired;
  bool ok = s.object([&](std::string_view key) -> bool {
    LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_READ_FIELD)
    if (is(key, "kind")) {
      std::string_view value;
      if (!s.str_view("kind", value, text)) return false;
      if (!is(value, "health")) {
        s.kind = WarningKind::unknown_kind;
        s.what = "unknown record kind " + quoted(value) + ": skipped";
        return false;
      }
      seen |= required_bit("kind", required);
      return true;
    }
    if (is(key, "format_version")) return s.u64("format_version", version);
    if (is(key, "histogram")) {
      if (!s.is('[')) return s.wrong_type("histogram", "an array");
      return s.array([&](std::size_t) {
        std::uint64_t count = 0;
        return s.u64("histogram", count);
      });
    }
    if (is(key, "events")) {
      if (!s.is('[')) return s.wrong_type("events", "an array");
      return s.array([&](std::size_t) { return parse_event_health(s, out.events.emplace_back()); });
    }
    if (is(key, "linux")) {
      if (!s.is('{')) return s.wrong_type("linux", "an object");
      return s.object([&](std::string_view k) {
        if (is(k, "time")) {
          std::string_view time;
          if (!s.str_view("linux.time", time, text)) return false;
          std::int64_t ms = 0;
          if (!parse_utc_time(time, ms)) return s.bad_value("linux.time", "not an ISO-8601 UTC time: " + quoted(time));
          out.wall_ms = ms;
          return true;
        }
        if (is(k, "clock")) return s.str("linux.clock", out.clock);
        return s.skip_value();
      });
    }
    return s.skip_value();  // memory, and fields of a newer writer
  });
  if (ok && !s.at_end()) ok = s.malformed("bytes after the object");
  if (!ok) {
    kind = s.kind;
    what = std::move(s.what);
    return false;
  }
  if (!known_version(version, kind, what)) return false;
  if (seen != (1u << std::size(required)) - 1) {
    kind = WarningKind::missing_field;
    what = "health record: " + missing_fields(seen, required);
    return false;
  }
  return true;
}

namespace {

// A value of a field list (record_fields.hpp) into the model's member of its name.
void take_value(std::uint64_t& to, std::uint64_t value) { to = value; }
void take_value(std::optional<std::uint64_t>& to, Maybe value) {
  if (value.known) {
    to = value.value;
  } else {
    to.reset();
  }
}
// A name as its JSON line carries it (name_text).
void take_value(std::string& to, const char* value) { to = name_text(value); }
#define LOOPCANARY_TAKE_FIELD(name, kind, value, unit) take_value(out.name, value);
#define LOOPCANARY_TAKE_EVENT_FIELD(name, kind, value, unit) take_value(to.name, value);

}  // namespace

void health_log_from(const loopcanary::HealthRecord& r, HealthLog& out) {
  out.clear();
  const tick_t window = ticks_between(r.start, r.end);
  LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_TAKE_FIELD)
  for (std::uint8_t i = 0; i < r.event_count; ++i) {
    const EventHealthWindow& e = r.events[i];
    EventHealth& to = out.events.emplace_back();
    LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_TAKE_EVENT_FIELD)
    unknown_if_empty(to.event);
  }
}

namespace {

#define LOOPCANARY_TAKE_CPU_FIELD(name, kind, value, unit) take_value(out.cpu_##name, value);
#define LOOPCANARY_TAKE_SAMPLE_FIELD(name, kind, value, unit) take_value(out.samples_##name, value);
void take_value(Phase& to, Phase value) { to = value; }
void take_value(Cause& to, Cause value) { to = value; }

// A stack of the core's record (scopes, then PCs) into the model's frames, as the JSON reader
// makes them of the record's "scopes" and "pcs".
void take_frames(std::vector<Frame>& to, std::uint8_t scope_count, std::uint8_t pc_count,
                 const loopcanary::Frame* frames) {
  to.resize(std::size_t{scope_count} + pc_count);
  for (std::size_t i = 0; i < to.size(); ++i) {
    Frame& f = to[i];
    f.clear_symbol();
    if (i < scope_count) {
      take_value(f.scope, fields::scope_name(frames[i]));
      unknown_if_empty(f.scope);
      f.pc = 0;
    } else {
      f.scope.clear();
      f.pc = frames[i];
    }
  }
}

// The record's wait summary into the model's, as the JSON reader makes it of "wait" (a
// build without wait objects has none: the member is absent).
template <std::size_t N>
void take_waits(const loopcanary::WaitSummaryOf<N>& from, WaitSummary& to) {
  to.objects.clear();
  to.other = from.other;
  if constexpr (N > 0) {
    for (std::size_t i = 0; i < from.count; ++i) {
      const WaitSeen& seen = from.objects[i];
      const WaitObject& o = seen.object;
      WaitEntry& entry = to.objects.emplace_back();
      entry.kind = o.kind;
      entry.samples = seen.samples;
      entry.address = o.address;
      if (o.fd >= 0) entry.fd = static_cast<std::uint64_t>(o.fd);
      entry.value = o.value;
      take_value(entry.text, o.text);
      for (std::size_t h = 0; h < seen.chain_count && h < loopcanary::kWaitChainMax; ++h) {
        WaitChainHop& hop = entry.chain.emplace_back();
        hop.address = seen.chain[h].address;
        hop.tid = seen.chain[h].owner;
        take_value(hop.name, seen.chain[h].owner_name);
      }
      entry.deadlock = seen.deadlock;
      if (o.owner == 0) continue;
      WaitHolder& holder = entry.owner.emplace();
      holder.tid = o.owner;
      take_value(holder.name, o.owner_name);
      if (seen.owner_loop != nullptr) take_value(holder.loop.emplace(), seen.owner_loop);
      take_frames(holder.frames, 0, seen.holder_pc_count, seen.holder_frames);
    }
  }
}

}  // namespace

void block_log_from(const loopcanary::BlockRecord& r, bool top_innermost, LogRecord& out, bool want_stacks) {
  out.clear_fields();
  LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_TAKE_FIELD)
  LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_TAKE_CPU_FIELD)
  LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_TAKE_SAMPLE_FIELD)
  if (r.delayed_by_dispatch != 0) {
    out.delayed_by_dispatch = r.delayed_by_dispatch;
    take_value(out.delayed_by, fields::event_name(r.delayed_by));
    unknown_if_empty(out.delayed_by);
  }
  out.hung = (r.flags & kFlagHung) != 0;
  out.unwatched = (r.flags & kFlagUnwatched) != 0;
  out.end_estimated = (r.flags & kFlagEndEstimated) != 0;
  out.running_at_stop = (r.flags & kFlagRunningAtStop) != 0;
  out.stages.resize(r.stage_count);
  for (std::size_t i = 0; i < out.stages.size(); ++i) {
    take_value(out.stages[i].name, fields::name_or(r.stages[i].name, "?"));
    unknown_if_empty(out.stages[i].name);
    out.stages[i].us = fields::us(r.tick_hz, r.stages[i].ticks);
  }
  out.top.resize(r.top_count);
  for (std::size_t i = 0; i < out.top.size(); ++i) {
    const TopStack& from = r.top[i];
    TopEntry& entry = out.top[i];
    entry.count = from.count;
    take_frames(entry.frames, from.scope_count, from.pc_count, from.frames);
    entry.leaf_high.clear();
    entry.leaf_high.pc = from.pc_count != 0 ? from.leaf_high : 0u;
    if (entry.leaf() < entry.frames.size() && entry.leaf_high.pc == 0) {
      entry.leaf_high.pc = entry.frames[entry.leaf()].pc;  // no range given: one PC
    }
  }
  out.stacks.resize(want_stacks ? r.sample_count : 0u);
  for (std::size_t i = 0; i < out.stacks.size(); ++i) {
    const loopcanary::Sample& from = r.samples[i];
    out.stacks[i].at_us = fields::sample_offset_us(r, from);
    take_frames(out.stacks[i].frames, from.scope_count, from.pc_count, from.frames);
  }
  take_waits(r.wait, out.wait);
  out.top_stacks = !top_innermost;
}

bool parse_line(const char* data, std::size_t length, LogRecord& block, HealthLog& health, LineKind& which,
                WarningKind& kind, std::string& what, bool want_stacks) {
  // format_health_json starts its lines so: no block parse first.
  static constexpr char kHealthStart[] = "{\"kind\":\"health\"";
  if (length >= sizeof kHealthStart - 1 && std::memcmp(data, kHealthStart, sizeof kHealthStart - 1) == 0) {
    which = LineKind::health;
    return parse_health_record(data, length, health, kind, what);
  }
  std::string kind_value;
  which = LineKind::block;
  if (parse_block(data, length, block, kind, what, want_stacks, kind_value)) return true;
  if (kind != WarningKind::unknown_kind || kind_value != "health") return false;
  which = LineKind::health;  // "kind":"health" elsewhere than first
  return parse_health_record(data, length, health, kind, what);
}

Reader::Reader(std::ostream& warnings, ReaderOptions options) : warnings_(warnings), options_(options) {
  options_.max_line_bytes = std::clamp<std::size_t>(options_.max_line_bytes, 1024, std::size_t{1} << 30);
}

void Reader::warn(const std::string& file, std::uint64_t line, WarningKind kind, const std::string& what) {
  const auto k = static_cast<std::size_t>(kind);
  ++stats_.warnings[k];
  const std::uint32_t limit = options_.max_printed_per_kind;
  if (limit != 0 && printed_[k] > limit) return;
  ++printed_[k];
  warnings_ << file;
  if (line != 0) warnings_ << ':' << line;
  if (limit != 0 && printed_[k] > limit) {
    warnings_ << ": more " << to_string(kind) << " warnings in this file are counted, not printed\n";
  } else {
    warnings_ << ": " << what << '\n';
  }
}

namespace {

// Splits a byte source into lines with one bounded buffer. fill(buffer, size) returns the
// bytes read (0 at the end, -1 on an error with errno set).
template <class Fill, class OnLine, class OnLong, class OnTorn>
int split_lines(std::string& buffer, std::size_t max_line, Fill&& fill, std::uint64_t& bytes, OnLine&& on_line,
                OnLong&& on_long, OnTorn&& on_torn) {
  const std::size_t chunk = 1u << 16;
  const std::size_t capacity = max_line + chunk + 1;
  if (buffer.size() < capacity) buffer.resize(capacity);
  char* const data = &buffer[0];
  std::size_t begin = 0, end = 0, scanned = 0;
  bool skipping = false;        // inside a line longer than max_line
  std::uint64_t skipped = 0;    // its length so far
  for (;;) {
    // Whole lines in [begin, end).
    for (;;) {
      const void* nl = std::memchr(data + scanned, '\n', end - scanned);
      if (nl == nullptr) break;
      const auto at = static_cast<std::size_t>(static_cast<const char*>(nl) - data);
      if (skipping) {
        on_long(skipped + (at - begin));
        skipping = false;
      } else if (at - begin > max_line) {  // whole in the buffer, still over the limit
        on_long(at - begin);
      } else {
        on_line(data + begin, at - begin);
      }
      begin = scanned = at + 1;
    }
    scanned = end;
    if (!skipping && end - begin > max_line) {
      skipping = true;
      skipped = 0;
    }
    if (skipping) {
      skipped += end - begin;
      begin = scanned = end = 0;
    } else if (begin > 0 && capacity - end < chunk) {
      std::memmove(data, data + begin, end - begin);
      end -= begin;
      scanned -= begin;
      begin = 0;
    }
    const long got = fill(data + end, capacity - 1 - end < chunk ? capacity - 1 - end : chunk);
    if (got < 0) return errno == 0 ? EIO : errno;
    if (got == 0) break;
    bytes += static_cast<std::uint64_t>(got);
    end += static_cast<std::size_t>(got);
  }
  if (skipping) {
    on_long(skipped + (end - begin));
  } else if (end > begin) {
    on_torn(end - begin);
  }
  return 0;
}

}  // namespace

void Reader::deliver_health(const std::string& name, const std::string& source, std::uint64_t line,
                            bool from_capture) {
  ++stats_.records;
  ++stats_.health_records;
  health_.file = name;
  health_.source = source;
  health_.line = line;
  health_.from_capture = from_capture;
  if (on_health_) on_health_(health_);
  current_line_ = {};
  packet_ = nullptr;
}

std::string_view Reader::current_line() {
  if (packet_ != nullptr) {
    format_record_json(*packet_, packet_line_);
    current_line_ = packet_line_;
    packet_ = nullptr;
  }
  return current_line_;
}

void Reader::take_line(const std::string& name, const std::string& source, std::uint64_t line, bool from_capture,
                       const char* data, std::size_t length, const Callback& on_record) {
  WarningKind kind{};
  record_.line = line;
  LineKind which = LineKind::block;
  if (!parse_line(data, length, record_, health_, which, kind, what_, options_.want_stacks)) {
    warn(name, line, kind, what_);
    return;
  }
  current_line_ = std::string_view(data, length);
  if (which == LineKind::health) {
    deliver_health(name, source, line, from_capture);
    return;
  }
  deliver_block(name, source, line, from_capture, on_record);
}

void Reader::deliver_block(const std::string& name, const std::string& source, std::uint64_t line,
                           bool from_capture, const Callback& on_record) {
  ++stats_.records;
  // The callback may have swapped another record's storage in (Callback).
  if (record_.file != name) record_.file = name;
  if (record_.source != source) record_.source = source;
  record_.line = line;
  record_.from_capture = from_capture;
  if (on_record) on_record(record_);
  current_line_ = {};
  packet_ = nullptr;
}

void Reader::read_any(const std::string& name, const Fill& fill, const Callback& on_record) {
  // The first bytes say whether it is a capture; then they are served again, first.
  std::string head(kCaptureSniffBytes, '\0');
  std::size_t got = 0;
  int error = 0;
  while (got < head.size()) {
    const long n = fill(&head[got], head.size() - got);
    if (n < 0) {
      error = errno == 0 ? EIO : errno;
      break;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  head.resize(got);
  std::size_t served = 0;
  const Fill replay = [&](char* to, std::size_t size) -> long {
    if (served < head.size()) {
      const std::size_t n = std::min(size, head.size() - served);
      std::memcpy(to, head.data() + served, n);
      served += n;
      return static_cast<long>(n);
    }
    if (error != 0) {
      errno = error;
      return -1;
    }
    return fill(to, size);
  };
  if (looks_like_capture(reinterpret_cast<const std::uint8_t*>(head.data()), head.size())) {
    read_capture(name, replay, on_record);
  } else {
    read_lines(name, replay, on_record);
  }
}

void Reader::read_capture(const std::string& name, const Fill& fill, const Callback& on_record) {
  printed_.fill(0);
  ++stats_.files;
  ++stats_.captures;
  const std::string source = log_source(name);
  CaptureReader capture;
  capture.set_unwind(options_.unwind);
  const int error = capture.read(
      [&fill](std::uint8_t* to, std::size_t size) { return fill(reinterpret_cast<char*>(to), size); },
      [&](DecodedRecord& decoded) {
        // Into the model directly; the record's JSON line is made only when asked for.
        packet_ = &decoded;
        if (decoded.is_health) {
          health_log_from(decoded.health, health_);
          deliver_health(name, source, decoded.offset, true);
        } else {
          block_log_from(decoded.record, decoded.top_innermost, record_, options_.want_stacks);
          deliver_block(name, source, decoded.offset, true, on_record);
        }
      },
      [&](WarningKind kind, std::uint64_t offset, const std::string& what) {
        warn(name, 0, kind, "offset " + std::to_string(offset) + ": " + what);
      });
  const CaptureStats& counts = capture.stats();
  stats_.bytes += counts.bytes;
  stats_.packets += counts.decoded;
  stats_.skipped_bytes += counts.skipped_bytes;
  if (error != 0) {
    warn(name, 0, WarningKind::unreadable,
         "offset " + std::to_string(counts.bytes) + ": read error: " + std::strerror(error));
  }
}

void Reader::read_lines(const std::string& name, const Fill& fill, const Callback& on_record) {
  printed_.fill(0);
  ++stats_.files;
  const std::string source = log_source(name);
  std::uint64_t line = 0;
  const int error = split_lines(
      buffer_, options_.max_line_bytes, fill, stats_.bytes,
      [&](const char* data, std::size_t length) {
        ++line;
        ++stats_.lines;
        while (length > 0 && (data[length - 1] == '\r' || data[length - 1] == ' ' || data[length - 1] == '\t')) --length;
        std::size_t lead = 0;
        while (lead < length && (data[lead] == ' ' || data[lead] == '\t')) ++lead;
        if (lead == length) return;  // a blank line
        take_line(name, source, line, false, data + lead, length - lead, on_record);
      },
      [&](std::uint64_t length) {
        ++line;
        ++stats_.lines;
        warn(name, line, WarningKind::too_long,
             "line of " + std::to_string(length) + " bytes is longer than the limit of " +
                 std::to_string(options_.max_line_bytes) + " bytes: skipped");
      },
      [&](std::size_t length) {
        ++line;
        ++stats_.lines;
        warn(name, line, WarningKind::torn_tail,
             "the file ends inside a line (" + std::to_string(length) +
                 " bytes without a newline): torn last record skipped");
      });
  if (error != 0) warn(name, line + 1, WarningKind::unreadable, std::string("read error: ") + std::strerror(error));
}

void Reader::read_stream(std::istream& in, const std::string& name, const Callback& on_record) {
  read_any(
      name,
      [&in](char* to, std::size_t size) -> long {
        in.read(to, static_cast<std::streamsize>(size));
        const std::streamsize got = in.gcount();
        if (got == 0 && in.bad()) {
          errno = EIO;
          return -1;
        }
        return static_cast<long>(got);
      },
      on_record);
}

bool Reader::read_file(const std::string& path, const Callback& on_record) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error = errno;
    warn(path, 0, WarningKind::unreadable, std::string("cannot open: ") + std::strerror(error));
    return false;
  }
  struct stat st {};
  if (fstat(fileno(file), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fclose(file);
    return read_path(path, on_record);
  }
  read_any(
      path,
      [file](char* to, std::size_t size) -> long {
        const std::size_t got = std::fread(to, 1, size, file);
        if (got == 0 && std::ferror(file)) return -1;
        return static_cast<long>(got);
      },
      on_record);
  std::fclose(file);
  return true;
}

bool Reader::read_path(const std::string& path, const Callback& on_record) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int error = errno;
    warn(path, 0, WarningKind::unreadable, std::string("cannot read: ") + std::strerror(error));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) return read_file(path, on_record);
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) {
    const int error = errno;
    warn(path, 0, WarningKind::unreadable, std::string("cannot list the directory: ") + std::strerror(error));
    return false;
  }
  closedir(dir);
  const std::vector<std::string> files = list_logs(path);
  if (files.empty()) {
    warn(path, 0, WarningKind::unreadable, std::string("no *.jsonl or *") + kCaptureSuffix + " file in the directory");
    return false;
  }
  for (const std::string& file : files) read_file(file, on_record);
  return true;
}

std::vector<std::string> Reader::list_logs(const std::string& directory) {
  struct Entry {
    std::string stem;
    bool capture;
    bool current;
    std::uint64_t serial;
    std::string name;
  };
  std::vector<Entry> entries;
  std::set<std::string> json_stems;  // stems with JSON Lines files: their captures are not read
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return {};
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    const auto ends_with = [&name](std::string_view suffix) {
      return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const bool capture = ends_with(kCaptureSuffix);
    if (!capture && !ends_with(".jsonl")) continue;
    const std::string current = log_source(name);
    const std::size_t suffix = capture ? sizeof kCaptureSuffix - 1 : 6;
    Entry entry{current.substr(0, current.size() - suffix), capture, current == name, 0, name};
    if (!entry.current) {
      const std::size_t dash = name.rfind('-');
      entry.serial = std::strtoull(name.c_str() + dash + 1, nullptr, 10);
    }
    if (!capture) json_stems.insert(entry.stem);
    entries.push_back(std::move(entry));
  }
  closedir(dir);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.stem != b.stem) return a.stem < b.stem;
    if (a.current != b.current) return b.current;
    if (a.serial != b.serial) return a.serial < b.serial;
    return a.name < b.name;
  });
  std::vector<std::string> paths;
  const std::string prefix = directory.empty() || directory.back() == '/' ? directory : directory + "/";
  for (const Entry& e : entries) {
    if (e.capture && json_stems.count(e.stem) != 0) continue;  // the same records, with less in them
    paths.push_back(prefix + e.name);
  }
  return paths;
}

}  // namespace loopcanary::tool
