// SPDX-License-Identifier: MIT
// Test support for the export tests: block-report records written as JSON lines from plain
// structs (so a test derives its expectations from the same values), a strict JSON parser (RFC
// 8259: no trailing commas, no leading zeros, valid escapes, no raw control characters in
// strings, nothing after the value), and a runner of `run_export`. Temporary directories:
// test_util.hpp.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "test_util.hpp"

namespace loopcanary::tool::testing {

struct FixtureSample {
  std::uint64_t at_us = 0;
  std::vector<std::string> scopes;  // innermost first
  std::vector<std::string> pcs;     // innermost first, "0x..."
};

struct FixtureRecord {
  std::uint64_t report = 1;
  std::string phase = "final";
  std::string qualifier = "fw-1.0";
  std::string loop = "main";
  std::uint64_t loop_index = 0;
  std::string event = "ev";
  std::uint64_t dispatch = 1;
  std::uint64_t tick_hz = 1000000;
  std::uint64_t start = 0;
  std::uint64_t duration_us = 0;
  std::string cause = "running";
  std::vector<std::string> flags;
  std::vector<std::pair<std::string, std::uint64_t>> stages;  // (name, µs); none: no "stages" member
  std::vector<FixtureSample> samples;
  std::optional<std::string> wall_time;  // "linux.time"
  std::string clock = "monotonic";       // "linux.clock" (with wall_time)
  std::string wait;                      // the "wait" member's value as JSON; "": no member
};

// A JSON string as the core writes it (docs/report-format.md): '"', '\\' and control characters escaped.
inline std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline std::string to_json_line(const FixtureRecord& r) {
  std::ostringstream o;
  const std::uint64_t ticks = r.duration_us * r.tick_hz / 1000000;
  o << "{\"report\":" << r.report << ",\"phase\":" << json_quote(r.phase)
    << ",\"qualifier\":" << json_quote(r.qualifier) << ",\"loop\":" << json_quote(r.loop)
    << ",\"loop_index\":" << r.loop_index << ",\"event\":" << json_quote(r.event) << ",\"dispatch\":" << r.dispatch
    << ",\"tick_hz\":" << r.tick_hz << ",\"start\":" << r.start << ",\"end\":" << ((r.start + ticks) & 0xFFFFFFFFu)
    << ",\"duration_ticks\":" << ticks << ",\"duration_us\":" << r.duration_us
    << ",\"threshold_us\":100000,\"cause\":" << json_quote(r.cause) << ",\"flags\":[";
  for (std::size_t i = 0; i < r.flags.size(); ++i) o << (i ? "," : "") << json_quote(r.flags[i]);
  o << "]";
  if (!r.stages.empty()) {
    o << ",\"stages\":[";
    for (std::size_t i = 0; i < r.stages.size(); ++i)
      o << (i ? "," : "") << "{\"name\":" << json_quote(r.stages[i].first) << ",\"us\":" << r.stages[i].second << "}";
    o << "]";
  }
  o << ",\"cpu\":{\"window_us\":0,\"thread_us\":null,\"thread_wait_us\":null,\"system_busy_permille\":null,"
       "\"process_permille\":null,\"steal_us\":0},\"samples\":{\"taken\":"
    << r.samples.size() << ",\"kept\":" << r.samples.size() << ",\"overwritten\":0,\"missed\":0},\"top\":[],"
    << "\"top_other\":0,\"stacks\":[";
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    o << (i ? "," : "") << "{\"at_us\":" << s.at_us << ",\"scopes\":[";
    for (std::size_t k = 0; k < s.scopes.size(); ++k) o << (k ? "," : "") << json_quote(s.scopes[k]);
    o << "],\"pcs\":[";
    for (std::size_t k = 0; k < s.pcs.size(); ++k) o << (k ? "," : "") << json_quote(s.pcs[k]);
    o << "]}";
  }
  o << "],\"records_dropped\":0,\"notes_dropped\":0";
  if (!r.wait.empty()) o << ",\"wait\":" << r.wait;
  if (r.wall_time)
    o << ",\"linux\":{\"time\":" << json_quote(*r.wall_time) << ",\"clock\":" << json_quote(r.clock)
      << ",\"frames\":[]}";
  o << "}\n";
  return o.str();
}

// Writes the records as one JSON Lines file `name` in `dir`; returns its path.
inline std::string write_records(test::TempDir& dir, const std::string& name,
                                 const std::vector<FixtureRecord>& records) {
  std::string content;
  for (const auto& r : records) content += to_json_line(r);
  return dir.write(name, content);
}

struct ExportRun {
  int status = -1;
  std::string out;  // what was written (standard output, or the -o file)
  std::string err;
};

inline ExportRun run_export_on(const std::string& format, const std::vector<std::string>& paths,
                               const std::string& output = "", Filter filter = {}) {
  Options options;
  options.command = "export";
  options.format = format;
  options.paths = paths;
  options.output = output;
  options.filter = std::move(filter);
  std::ostringstream out;
  std::ostringstream err;
  ExportRun run;
  run.status = run_export(options, out, err);
  run.out = out.str();
  run.err = err.str();
  if (!output.empty()) {
    std::ifstream in(output, std::ios::binary);
    std::ostringstream all;
    all << in.rdbuf();
    run.out = all.str();
  }
  return run;
}

// A JSON value as the strict parser below builds it.
struct Json {
  enum class Type { null, boolean, number, string, array, object } type = Type::null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;

  const Json* find(const std::string& key) const {
    for (const auto& [k, v] : object)
      if (k == key) return &v;
    return nullptr;
  }
  const Json& at(const std::string& key) const {
    static const Json missing;
    const Json* v = find(key);
    return v ? *v : missing;
  }
};

class JsonParser {
 public:
  // true when `text` is exactly one JSON value (whitespace around it allowed); `error` says where not.
  static bool parse(const std::string& text, Json& out, std::string& error) {
    JsonParser p(text);
    p.skip_ws();
    if (!p.value(out, 0)) {
      error = p.error_ + " at byte " + std::to_string(p.pos_);
      return false;
    }
    p.skip_ws();
    if (p.pos_ != text.size()) {
      error = "trailing bytes at byte " + std::to_string(p.pos_);
      return false;
    }
    return true;
  }

 private:
  explicit JsonParser(const std::string& text) : s_(text) {}
  bool fail(const char* what) {
    error_ = what;
    return false;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(const char* word) {
    const std::string w = word;
    if (s_.compare(pos_, w.size(), w) != 0) return fail("bad literal");
    pos_ += w.size();
    return true;
  }
  bool value(Json& v, int depth) {
    if (depth > 200) return fail("too deep");
    if (pos_ >= s_.size()) return fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.type = Json::Type::string;
      return string(v.string);
    }
    if (c == 't' || c == 'f') {
      v.type = Json::Type::boolean;
      v.boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') return literal("null");
    return number(v);
  }
  bool digits() {
    const std::size_t from = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > from;
  }
  bool number(Json& v) {
    const std::size_t from = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      return fail("bad number");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) return fail("bad fraction");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return fail("bad exponent");
    }
    v.type = Json::Type::number;
    v.number = std::strtod(s_.substr(from, pos_ - from).c_str(), nullptr);
    return true;
  }
  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool hex4(unsigned& cp) {
    if (pos_ + 4 > s_.size()) return fail("short \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      cp <<= 4;
      if (h >= '0' && h <= '9')
        cp |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        cp |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        cp |= static_cast<unsigned>(h - 'A' + 10);
      else
        return fail("bad \\u escape");
    }
    return true;
  }
  bool string(std::string& out) {
    ++pos_;  // opening quote
    out.clear();
    while (true) {
      if (pos_ >= s_.size()) return fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("raw control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned low = 0;
            if (s_.compare(pos_, 2, "\\u") != 0) return fail("lone high surrogate");
            pos_ += 2;
            if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("lone low surrogate");
          }
          put_utf8(out, cp);
          break;
        }
        default:
          return fail("bad escape");
      }
    }
  }
  bool array(Json& v, int depth) {
    v.type = Json::Type::array;
    ++pos_;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_ws();
      v.array.emplace_back();
      if (!value(v.array.back(), depth + 1)) return false;
      skip_ws();
      if (pos_ >= s_.size()) return fail("unterminated array");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected , or ]");
    }
  }
  bool object(Json& v, int depth) {
    v.type = Json::Type::object;
    ++pos_;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a key");
      std::string key;
      if (!string(key)) return false;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected :");
      ++pos_;
      skip_ws();
      Json member;
      if (!value(member, depth + 1)) return false;
      v.object.emplace_back(std::move(key), std::move(member));
      skip_ws();
      if (pos_ >= s_.size()) return fail("unterminated object");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected , or }");
    }
  }

  const std::string& s_;
  std::size_t pos_ = 0;
  std::string error_;
};

// The embedded data of an HTML export: the text of <script type="application/json" id="lc-data">.
inline std::string html_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"lc-data\">";
  const auto from = html.find(open);
  if (from == std::string::npos) return "";
  const auto to = html.find("</script>", from + open.size());
  if (to == std::string::npos) return "";
  return html.substr(from + open.size(), to - from - open.size());
}

}  // namespace loopcanary::tool::testing
