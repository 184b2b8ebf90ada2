// SPDX-License-Identifier: MIT
// The streaming reader of JSON Lines block reports (model.hpp): a line splitter with a bounded
// buffer and a recursive-descent JSON scanner that validates each line and picks the fields the
// tool uses, decoding straight into a reused LogRecord (no tree).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <istream>
#include <ostream>
#include <system_error>

#include <dirent.h>
#include <sys/stat.h>

#include "model.hpp"

namespace loopcanary::tool {

namespace {

const char* type_name(char c) noexcept {
  switch (c) {
    case '"': return "a string";
    case '{': return "an object";
    case '[': return "an array";
    case 't':
    case 'f': return "a boolean";
    case 'n': return "null";
    default: return (c == '-' || (c >= '0' && c <= '9')) ? "a number" : "no value";
  }
}

// A JSON scanner over one line. Every method returns false after recording the first fault.
class Scanner {
 public:
  Scanner(const char* data, std::size_t length) : begin_(data), p_(data), end_(data + length) {}

  WarningKind kind = WarningKind::malformed_json;
  std::string what;

  void ws() noexcept {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool at_end() noexcept {
    ws();
    return p_ == end_;
  }
  char peek() noexcept {
    ws();
    return p_ == end_ ? '\0' : *p_;
  }

  bool malformed(const char* expected) {
    kind = WarningKind::malformed_json;
    what = "malformed JSON at column " + std::to_string(p_ - begin_ + 1) + ": " + expected;
    return false;
  }
  bool wrong_type(const char* field, const char* expected) {
    const char c = peek();
    if (c == '\0') return malformed("the line ends where a value should be (truncated record)");
    if (std::strchr("\"{[tfn-0123456789", c) == nullptr) return malformed("expected a value");
    kind = WarningKind::wrong_type;
    what = std::string("field \"") + field + "\": expected " + expected + ", got " + type_name(peek());
    return false;
  }
  bool bad_value(const char* field, const std::string& why) {
    kind = WarningKind::wrong_type;
    what = std::string("field \"") + field + "\": " + why;
    return false;
  }

  // An object: calls on_key(key) positioned at the value; on_key must consume it.
  template <class OnKey>
  bool object(OnKey&& on_key) {
    if (peek() != '{') return malformed("expected '{'");
    ++p_;
    if (!enter()) return false;
    std::string key;
    if (peek() == '}') {
      ++p_;
      --depth_;
      return true;
    }
    for (;;) {
      if (peek() != '"') return malformed("expected a key string");
      if (!string(&key)) return false;
      if (peek() != ':') return malformed("expected ':'");
      ++p_;
      ws();
      if (!on_key(key)) return false;
      const char c = peek();
      ++p_;
      if (c == '}') break;
      if (c != ',') {
        --p_;
        return malformed("expected ',' or '}'");
      }
    }
    --depth_;
    return true;
  }

  // An array: calls on_item(index) positioned at each value; on_item must consume it.
  template <class OnItem>
  bool array(OnItem&& on_item) {
    if (peek() != '[') return malformed("expected '['");
    ++p_;
    if (!enter()) return false;
    if (peek() == ']') {
      ++p_;
      --depth_;
      return true;
    }
    for (std::size_t i = 0;; ++i) {
      ws();
      if (!on_item(i)) return false;
      const char c = peek();
      ++p_;
      if (c == ']') break;
      if (c != ',') {
        --p_;
        return malformed("expected ',' or ']'");
      }
    }
    --depth_;
    return true;
  }

  // A string; out may be null (validated only).
  bool string(std::string* out) {
    if (p_ == end_ || *p_ != '"') return malformed("expected a string");
    ++p_;
    if (out != nullptr) out->clear();
    for (;;) {
      const char* run = p_;
      while (p_ != end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      if (out != nullptr) out->append(run, static_cast<std::size_t>(p_ - run));
      if (p_ == end_) return malformed("unterminated string");
      const char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c != '\\') return malformed("control character in a string");
      ++p_;
      if (p_ == end_) return malformed("unterminated string");
      const char e = *p_++;
      char plain = 0;
      switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
          std::uint32_t code = 0;
          if (!hex4(code)) return false;
          if (code >= 0xD800 && code <= 0xDBFF && end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
            const char* save = p_;
            p_ += 2;
            std::uint32_t low = 0;
            if (!hex4(low)) return false;
            if (low >= 0xDC00 && low <= 0xDFFF) {
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            } else {
              p_ = save;  // a lone high surrogate; the next escape stands on its own
            }
          }
          if (code >= 0xD800 && code <= 0xDFFF) code = 0xFFFD;  // lone surrogate
          if (out != nullptr) utf8(code, *out);
          continue;
        }
        default: --p_; return malformed("bad escape in a string");
      }
      if (out != nullptr) out->push_back(plain);
    }
  }

  // A JSON number that must be a non-negative integer fitting 64 bits (every number of the
  // format is one).
  bool u64(const char* field, std::uint64_t& out) {
    if (p_ == end_ || !(*p_ == '-' || (*p_ >= '0' && *p_ <= '9'))) return wrong_type(field, "a non-negative integer");
    const char* start = p_;
    if (!number()) return false;
    std::uint64_t value = 0;
    for (const char* q = start; q != p_; ++q) {
      if (*q < '0' || *q > '9') {
        const auto shown = std::min<std::size_t>(static_cast<std::size_t>(p_ - start), 40);
        return bad_value(field, "expected a non-negative integer, got " + std::string(start, shown));
      }
      const auto digit = static_cast<std::uint64_t>(*q - '0');
      if (value > (~std::uint64_t{0} - digit) / 10) {
        return bad_value(field, "integer out of the 64-bit range");
      }
      value = value * 10 + digit;
    }
    out = value;
    return true;
  }

  bool u64_or_null(const char* field, std::optional<std::uint64_t>& out) {
    if (literal("null")) {
      out.reset();
      return true;
    }
    std::uint64_t value = 0;
    if (!u64(field, value)) return false;
    out = value;
    return true;
  }

  bool str(const char* field, std::string& out) {
    if (p_ == end_ || *p_ != '"') return wrong_type(field, "a string");
    return string(&out);
  }

  // A string "0x<hex>" (how PCs and offsets print).
  bool hex_string(const char* field, std::uint64_t& out, std::string& scratch) {
    if (!str(field, scratch)) return false;
    if (scratch.size() < 3 || scratch.size() > 18 || scratch[0] != '0' || (scratch[1] != 'x' && scratch[1] != 'X')) {
      return bad_value(field, "expected \"0x<hex>\", got \"" + scratch.substr(0, 40) + "\"");
    }
    std::uint64_t value = 0;
    for (std::size_t i = 2; i < scratch.size(); ++i) {
      const char c = scratch[i];
      unsigned digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<unsigned>(c - 'A' + 10);
      } else {
        return bad_value(field, "expected \"0x<hex>\", got \"" + scratch.substr(0, 40) + "\"");
      }
      value = value << 4 | digit;
    }
    out = value;
    return true;
  }

  bool boolean(const char* field, bool& out) {
    if (literal("true")) {
      out = true;
      return true;
    }
    if (literal("false")) {
      out = false;
      return true;
    }
    return wrong_type(field, "true or false");
  }

  bool is(char c) noexcept { return peek() == c; }

  // Any value, validated and dropped (unknown fields).
  bool skip_value() {
    switch (peek()) {
      case '{': return object([this](const std::string&) { return skip_value(); });
      case '[': return array([this](std::size_t) { return skip_value(); });
      case '"': return string(nullptr);
      case 't': return literal("true") || malformed("bad literal");
      case 'f': return literal("false") || malformed("bad literal");
      case 'n': return literal("null") || malformed("bad literal");
      default: return number();
    }
  }

 private:
  bool enter() {
    if (++depth_ > kMaxJsonDepth) {
      kind = WarningKind::too_deep;
      what = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels at column " +
             std::to_string(p_ - begin_);
      return false;
    }
    return true;
  }

  bool literal(const char* word) noexcept {
    const std::size_t n = std::strlen(word);
    if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  bool number() {
    const char* q = p_;
    if (q != end_ && *q == '-') ++q;
    if (q == end_ || *q < '0' || *q > '9') return malformed("expected a value");
    if (*q == '0') {
      ++q;
    } else {
      while (q != end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (q != end_ && *q == '.') {
      ++q;
      if (q == end_ || *q < '0' || *q > '9') return malformed("bad number");
      while (q != end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (q != end_ && (*q == 'e' || *q == 'E')) {
      ++q;
      if (q != end_ && (*q == '+' || *q == '-')) ++q;
      if (q == end_ || *q < '0' || *q > '9') return malformed("bad number");
      while (q != end_ && *q >= '0' && *q <= '9') ++q;
    }
    p_ = q;
    return true;
  }

  bool hex4(std::uint32_t& out) {
    if (end_ - p_ < 4) return malformed("bad \\u escape");
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_;
      std::uint32_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        return malformed("bad \\u escape");
      }
      value = value << 4 | digit;
      ++p_;
    }
    out = value;
    return true;
  }

  static void utf8(std::uint32_t code, std::string& out) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  int depth_ = 0;
};

// Scratch of parse_record that outlives one call (capacity reuse): the "linux.frames" entries.
struct Scratch {
  std::vector<Frame> symbols;
  std::string text;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Resizes a vector of reusable elements without freeing the capacity of the ones kept.
template <class T>
T& next(std::vector<T>& items, std::size_t& used) {
  if (used == items.size()) items.emplace_back();
  return items[used++];
}

bool parse_frame_symbol(Scanner& s, Frame& f, std::string& text) {
  f.clear();
  bool has_pc = false;
  const bool ok = s.object([&](const std::string& key) {
    if (key == "pc") return has_pc = true, s.hex_string("linux.frames.pc", f.pc, text);
    if (key == "module") return s.str("linux.frames.module", f.module);
    if (key == "build_id") return s.str("linux.frames.build_id", f.build_id);
    if (key == "offset") return s.hex_string("linux.frames.offset", f.module_offset, text);
    if (key == "function") return s.str("linux.frames.function", f.function);
    if (key == "function_offset") return s.hex_string("linux.frames.function_offset", f.function_offset, text);
    if (key == "nearest_symbol") return s.str("linux.frames.nearest_symbol", f.nearest_symbol);
    if (key == "nearest_offset") return s.hex_string("linux.frames.nearest_offset", f.nearest_offset, text);
    if (key == "file") return s.str("linux.frames.file", f.file);
    if (key == "line") {
      std::uint64_t line = 0;
      if (!s.u64("linux.frames.line", line)) return false;
      f.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(line, 0xFFFFFFFFu));
      return true;
    }
    return s.skip_value();
  });
  if (ok && !has_pc) return s.bad_value("linux.frames", "an entry without \"pc\"");
  return ok;
}

void merge_symbol(Frame& frame, const std::vector<Frame>& symbols, std::size_t count) {
  const auto end = symbols.begin() + static_cast<std::ptrdiff_t>(count);
  const auto it = std::lower_bound(symbols.begin(), end, frame.pc,
                                   [](const Frame& f, std::uint64_t pc) { return f.pc < pc; });
  if (it == end || it->pc != frame.pc) return;
  frame.function = it->function;
  frame.function_offset = it->function_offset;
  frame.nearest_symbol = it->nearest_symbol;
  frame.nearest_offset = it->nearest_offset;
  frame.module = it->module;
  frame.build_id = it->build_id;
  frame.module_offset = it->module_offset;
  frame.file = it->file;
  frame.line = it->line;
}

}  // namespace

bool parse_record(const char* data, std::size_t length, LogRecord& out, WarningKind& kind, std::string& what,
                  bool want_stacks) {
  // Keep the reused parts; reset the rest.
  std::vector<Sample> stacks;
  std::vector<TopEntry> top;
  stacks.swap(out.stacks);
  top.swap(out.top);
  {
    std::string file, source;
    file.swap(out.file);
    source.swap(out.source);
    const std::uint64_t line = out.line;
    out.clear();
    out.file.swap(file);
    out.source.swap(source);
    out.line = line;
  }
  std::size_t stacks_used = 0;
  std::size_t top_used = 0;
  Scratch& sc = scratch();
  std::size_t symbols_used = 0;
  std::string& text = sc.text;

  enum : unsigned { kReport = 1, kPhase = 2, kLoop = 4, kDispatch = 8, kDuration = 16 };
  unsigned seen = 0;
  std::uint64_t version = kFormatVersion;

  Scanner s(data, length);
  bool ok = s.object([&](const std::string& key) -> bool {
    switch (key.empty() ? '\0' : key[0]) {
      case 'c':
        if (key == "cause") {
          if (!s.str("cause", text)) return false;
          if (!parse_cause(text, out.cause)) return s.bad_value("cause", "unknown value \"" + text.substr(0, 40) + "\"");
          return true;
        }
        if (key == "cpu") {
          if (!s.is('{')) return s.wrong_type("cpu", "an object");
          return s.object([&](const std::string& k) {
            if (k == "window_us") return s.u64("cpu.window_us", out.cpu_window_us);
            if (k == "thread_us") return s.u64_or_null("cpu.thread_us", out.cpu_thread_us);
            if (k == "steal_us") return s.u64("cpu.steal_us", out.cpu_steal_us);
            if (k == "thread_wait_us") return s.u64_or_null("cpu.thread_wait_us", out.cpu_thread_wait_us);
            if (k == "system_busy_permille") return s.u64_or_null("cpu.system_busy_permille", out.cpu_system_busy_permille);
            if (k == "process_permille") return s.u64_or_null("cpu.process_permille", out.cpu_process_permille);
            return s.skip_value();
          });
        }
        break;
      case 'd':
        if (key == "dispatch") return seen |= kDispatch, s.u64("dispatch", out.dispatch);
        if (key == "duration_us") return seen |= kDuration, s.u64("duration_us", out.duration_us);
        if (key == "duration_ticks") return s.u64("duration_ticks", out.duration_ticks);
        break;
      case 'e':
        if (key == "event") return s.str("event", out.event);
        if (key == "end") return s.u64("end", out.end);
        break;
      case 'f':
        if (key == "flags") {
          if (!s.is('[')) return s.wrong_type("flags", "an array");
          return s.array([&](std::size_t) {
            if (!s.str("flags", text)) return false;
            if (text == "hung") out.hung = true;
            else if (text == "unwatched") out.unwatched = true;
            else if (text == "end_estimated") out.end_estimated = true;
            return true;  // a flag of a newer writer: ignored
          });
        }
        if (key == "format_version") return s.u64("format_version", version);
        break;
      case 'l':
        if (key == "loop") return seen |= kLoop, s.str("loop", out.loop);
        if (key == "loop_index") return s.u64("loop_index", out.loop_index);
        if (key == "linux") {
          if (!s.is('{')) return s.wrong_type("linux", "an object");
          out.has_linux = true;
          return s.object([&](const std::string& k) {
            if (k == "time") {
              if (!s.str("linux.time", text)) return false;
              std::int64_t ms = 0;
              if (!parse_utc_time(text, ms)) return s.bad_value("linux.time", "not an ISO-8601 UTC time: \"" + text.substr(0, 40) + "\"");
              out.wall_ms = ms;
              return true;
            }
            if (k == "clock") return s.str("linux.clock", out.clock);
            if (k == "frames") {
              if (!s.is('[')) return s.wrong_type("linux.frames", "an array");
              return s.array([&](std::size_t) {
                if (!s.is('{')) return s.wrong_type("linux.frames", "an object");
                return parse_frame_symbol(s, next(sc.symbols, symbols_used), text);
              });
            }
            return s.skip_value();
          });
        }
        break;
      case 'n':
        if (key == "notes_dropped") return s.u64("notes_dropped", out.notes_dropped);
        break;
      case 'p':
        if (key == "phase") {
          seen |= kPhase;
          if (!s.str("phase", text)) return false;
          if (!parse_phase(text, out.phase)) return s.bad_value("phase", "unknown value \"" + text.substr(0, 40) + "\"");
          return true;
        }
        break;
      case 'q':
        if (key == "qualifier") return s.str("qualifier", out.qualifier);
        break;
      case 'r':
        if (key == "report") return seen |= kReport, s.u64("report", out.report);
        if (key == "records_dropped") return s.u64("records_dropped", out.records_dropped);
        break;
      case 's':
        if (key == "start") return s.u64("start", out.start);
        if (key == "samples") {
          if (!s.is('{')) return s.wrong_type("samples", "an object");
          return s.object([&](const std::string& k) {
            if (k == "taken") return s.u64("samples.taken", out.samples_taken);
            if (k == "kept") return s.u64("samples.kept", out.samples_kept);
            if (k == "overwritten") return s.u64("samples.overwritten", out.samples_overwritten);
            if (k == "missed") return s.u64("samples.missed", out.samples_missed);
            return s.skip_value();
          });
        }
        if (key == "stacks") {
          if (!s.is('[')) return s.wrong_type("stacks", "an array");
          return s.array([&](std::size_t) {
            if (!s.is('{')) return s.wrong_type("stacks", "an object");
            Sample* sample = nullptr;
            if (want_stacks) sample = &next(stacks, stacks_used);
            if (sample != nullptr) sample->at_us = 0;
            std::size_t frames_used = 0;
            std::size_t scopes = 0;
            // Scopes come before PCs in Sample::frames whatever the key order: PCs found before
            // the scopes are moved behind them at the end.
            std::size_t pcs_before_scopes = 0;
            bool seen_scopes = false;
            const bool sample_ok = s.object([&](const std::string& k) {
              if (k == "at_us") {
                std::uint64_t at = 0;
                if (!s.u64("stacks.at_us", at)) return false;
                if (sample != nullptr) sample->at_us = at;
                return true;
              }
              if (k == "scopes" || k == "pcs") {
                const bool is_scopes = k == "scopes";
                const char* field = is_scopes ? "stacks.scopes" : "stacks.pcs";
                if (!s.is('[')) return s.wrong_type(field, "an array");
                if (is_scopes) seen_scopes = true;
                return s.array([&](std::size_t) {
                  if (sample == nullptr) {
                    std::uint64_t pc = 0;
                    return is_scopes ? s.str(field, text) : s.hex_string(field, pc, text);
                  }
                  Frame& f = next(sample->frames, frames_used);
                  f.clear();
                  if (is_scopes) {
                    if (!s.str(field, f.scope)) return false;
                    if (f.scope.empty()) f.scope = "?";
                    ++scopes;
                    return true;
                  }
                  if (!seen_scopes) ++pcs_before_scopes;
                  return s.hex_string(field, f.pc, text);
                });
              }
              return s.skip_value();
            });
            if (!sample_ok) return false;
            if (sample != nullptr) {
              sample->frames.resize(frames_used);
              if (pcs_before_scopes > 0 && scopes > 0) {
                std::rotate(sample->frames.begin(), sample->frames.begin() + static_cast<std::ptrdiff_t>(pcs_before_scopes),
                            sample->frames.end());
              }
            }
            return true;
          });
        }
        break;
      case 't':
        if (key == "tick_hz") return s.u64("tick_hz", out.tick_hz);
        if (key == "threshold_us") return s.u64("threshold_us", out.threshold_us);
        if (key == "top_other") return s.u64("top_other", out.top_other);
        if (key == "top") {
          if (!s.is('[')) return s.wrong_type("top", "an array");
          return s.array([&](std::size_t) {
            if (!s.is('{')) return s.wrong_type("top", "an object");
            TopEntry& entry = next(top, top_used);
            entry.frame.clear();
            entry.count = 0;
            return s.object([&](const std::string& k) {
              if (k == "scope") {
                if (!s.str("top.scope", entry.frame.scope)) return false;
                if (entry.frame.scope.empty()) entry.frame.scope = "?";
                return true;
              }
              if (k == "pc") return s.hex_string("top.pc", entry.frame.pc, text);
              if (k == "count") return s.u64("top.count", entry.count);
              return s.skip_value();
            });
          });
        }
        break;
      default:
        break;
    }
    return s.skip_value();  // a field of a newer writer
  });
  if (ok && !s.at_end()) ok = s.malformed("bytes after the object");
  stacks.resize(want_stacks ? stacks_used : 0);
  top.resize(top_used);
  out.stacks.swap(stacks);
  out.top.swap(top);
  if (!ok) {
    kind = s.kind;
    what = std::move(s.what);
    return false;
  }
  if (version != kFormatVersion) {
    kind = WarningKind::unknown_version;
    what = "format_version " + std::to_string(version) + " is unknown (this reader reads version " +
           std::to_string(kFormatVersion) + ")";
    return false;
  }
  if (seen != (kReport | kPhase | kLoop | kDispatch | kDuration)) {
    static const char* const names[] = {"report", "phase", "loop", "dispatch", "duration_us"};
    std::string missing;
    for (unsigned i = 0; i < 5; ++i) {
      if ((seen & (1u << i)) == 0) missing += missing.empty() ? std::string(names[i]) : ", " + std::string(names[i]);
    }
    kind = WarningKind::missing_field;
    what = "missing field" + std::string(missing.find(',') == std::string::npos ? " " : "s ") + missing;
    return false;
  }
  if (symbols_used > 0) {
    std::sort(sc.symbols.begin(), sc.symbols.begin() + static_cast<std::ptrdiff_t>(symbols_used),
              [](const Frame& a, const Frame& b) { return a.pc < b.pc; });
    for (Sample& sample : out.stacks) {
      for (Frame& f : sample.frames) {
        if (!f.is_scope()) merge_symbol(f, sc.symbols, symbols_used);
      }
    }
    for (TopEntry& entry : out.top) {
      if (!entry.frame.is_scope()) merge_symbol(entry.frame, sc.symbols, symbols_used);
    }
  }
  return true;
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

void Reader::read_lines(const std::string& name, const Fill& fill, const Callback& on_record) {
  printed_.fill(0);
  ++stats_.files;
  record_.file = name;
  record_.source = log_source(name);
  std::uint64_t line = 0;
  std::string what;
  const int error = split_lines(
      buffer_, options_.max_line_bytes, fill, stats_.bytes,
      [&](const char* data, std::size_t length) {
        ++line;
        ++stats_.lines;
        while (length > 0 && (data[length - 1] == '\r' || data[length - 1] == ' ' || data[length - 1] == '\t')) --length;
        std::size_t lead = 0;
        while (lead < length && (data[lead] == ' ' || data[lead] == '\t')) ++lead;
        if (lead == length) return;  // a blank line
        WarningKind kind{};
        record_.line = line;
        if (parse_record(data + lead, length - lead, record_, kind, what, options_.want_stacks)) {
          ++stats_.records;
          if (on_record) on_record(record_);
        } else {
          warn(name, line, kind, what);
        }
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
  read_lines(
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
  read_lines(
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
    warn(path, 0, WarningKind::unreadable, "no *.jsonl file in the directory");
    return false;
  }
  for (const std::string& file : files) read_file(file, on_record);
  return true;
}

std::vector<std::string> Reader::list_logs(const std::string& directory) {
  struct Entry {
    std::string stem;
    bool current;
    std::uint64_t serial;
    std::string name;
  };
  std::vector<Entry> entries;
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return {};
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() <= 6 || name.compare(name.size() - 6, 6, ".jsonl") != 0) continue;
    const std::string current = log_source(name);
    Entry entry{current.substr(0, current.size() - 6), current == name, 0, name};
    if (!entry.current) {
      const std::size_t dash = name.rfind('-');
      entry.serial = std::strtoull(name.c_str() + dash + 1, nullptr, 10);
    }
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
  for (const Entry& e : entries) paths.push_back(prefix + e.name);
  return paths;
}

}  // namespace loopcanary::tool
