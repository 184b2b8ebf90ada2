// SPDX-License-Identifier: MIT
// format_text and format_json: records built by hand and one from a virtual-time scenario.
// The JSON output is parsed by a small strict recursive-descent parser below (RFC 8259: grammar,
// escapes, UTF-8, no duplicate keys), so "valid JSON" is checked, not assumed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/format.hpp"
#include "loopcanary/health.hpp"
#include "loopcanary/instrument.hpp"
#include "loopcanary/port/sim.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/watchdog.hpp"
#include "record_fixtures.hpp"
#include "top_stack.hpp"

namespace {

namespace lc = loopcanary;
namespace sim = loopcanary::sim;
using lc::BlockRecord;
using lc::FormatResult;
using lc::Frame;

using FormatFn = FormatResult (*)(const BlockRecord&, char*, std::size_t);

constexpr char kMarker[] = "...[truncated]\n";
constexpr std::size_t kMarkerLength = sizeof(kMarker) - 1;

// ---- A strict JSON parser -------------------------------------------------------------------

struct Json {
  enum class Kind { missing, null, boolean, number, string, array, object };
  Kind kind = Kind::missing;
  bool boolean = false;
  std::string text;  // a number's lexeme, or a string's decoded UTF-8 value
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  // The member `key` of an object; a `missing` value when absent (or not an object).
  const Json& operator[](const char* key) const {
    static const Json kMissing;
    for (const auto& m : members) {
      if (m.first == key) return m.second;
    }
    return kMissing;
  }
  const Json& at(std::size_t i) const {
    static const Json kMissing;
    return i < items.size() ? items[i] : kMissing;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& m : members) out.push_back(m.first);
    return out;
  }
};

// Parses one JSON text: `parse` is false (and `error` says where) on anything RFC 8259 refuses.
class JsonParser {
 public:
  explicit JsonParser(std::string input) : s_(std::move(input)) {}

  bool parse(Json& out) {
    skip_space();
    if (!value(out, 0)) return false;
    skip_space();
    return pos_ == s_.size() || fail("trailing characters");
  }
  const std::string& error() const { return error_; }

 private:
  bool fail(const char* why) {
    error_ = std::string(why) + " at offset " + std::to_string(pos_);
    return false;
  }
  bool at_end() const { return pos_ >= s_.size(); }
  unsigned char peek() const { return at_end() ? 0u : static_cast<unsigned char>(s_[pos_]); }
  bool eat(char c) {
    if (at_end() || s_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void skip_space() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return fail("bad literal");
    pos_ += n;
    return true;
  }

  bool value(Json& out, int depth) {
    if (depth > 64) return fail("nested too deep");
    switch (peek()) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"':
        out.kind = Json::Kind::string;
        return string(out.text);
      case 't':
        out.kind = Json::Kind::boolean;
        out.boolean = true;
        return literal("true");
      case 'f':
        out.kind = Json::Kind::boolean;
        return literal("false");
      case 'n':
        out.kind = Json::Kind::null;
        return literal("null");
      default:
        out.kind = Json::Kind::number;
        return number(out.text);
    }
  }

  bool object(Json& out, int depth) {
    out.kind = Json::Kind::object;
    ++pos_;  // '{'
    skip_space();
    if (eat('}')) return true;
    for (;;) {
      skip_space();
      std::string key;
      if (peek() != '"' || !string(key)) return fail("expected a key");
      for (const auto& m : out.members) {
        if (m.first == key) return fail("duplicate key");
      }
      skip_space();
      if (!eat(':')) return fail("expected ':'");
      skip_space();
      Json member;
      if (!value(member, depth + 1)) return false;
      out.members.emplace_back(std::move(key), std::move(member));
      skip_space();
      if (eat('}')) return true;
      if (!eat(',')) return fail("expected ',' or '}'");
    }
  }

  bool array(Json& out, int depth) {
    out.kind = Json::Kind::array;
    ++pos_;  // '['
    skip_space();
    if (eat(']')) return true;
    for (;;) {
      skip_space();
      Json item;
      if (!value(item, depth + 1)) return false;
      out.items.push_back(std::move(item));
      skip_space();
      if (eat(']')) return true;
      if (!eat(',')) return fail("expected ',' or ']'");
    }
  }

  bool hex4(std::uint32_t& v) {
    v = 0;
    for (int i = 0; i < 4; ++i) {
      const unsigned char c = peek();
      std::uint32_t d = 0;
      if (c >= '0' && c <= '9') {
        d = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        return fail("bad \\u escape");
      }
      v = v * 16u + d;
      ++pos_;
    }
    return true;
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    const auto byte = [&out](std::uint32_t b) { out.push_back(static_cast<char>(static_cast<unsigned char>(b))); };
    if (cp < 0x80) {
      byte(cp);
    } else if (cp < 0x800) {
      byte(0xC0 | (cp >> 6));
      byte(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      byte(0xE0 | (cp >> 12));
      byte(0x80 | ((cp >> 6) & 0x3F));
      byte(0x80 | (cp & 0x3F));
    } else {
      byte(0xF0 | (cp >> 18));
      byte(0x80 | ((cp >> 12) & 0x3F));
      byte(0x80 | ((cp >> 6) & 0x3F));
      byte(0x80 | (cp & 0x3F));
    }
  }

  bool escape(std::string& out) {
    const unsigned char c = peek();
    ++pos_;
    switch (c) {
      case '"': out.push_back('"'); return true;
      case '\\': out.push_back('\\'); return true;
      case '/': out.push_back('/'); return true;
      case 'b': out.push_back('\b'); return true;
      case 'f': out.push_back('\f'); return true;
      case 'n': out.push_back('\n'); return true;
      case 'r': out.push_back('\r'); return true;
      case 't': out.push_back('\t'); return true;
      case 'u': {
        std::uint32_t cp = 0;
        if (!hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("lone low surrogate");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          std::uint32_t low = 0;
          if (!eat('\\') || !eat('u') || !hex4(low) || low < 0xDC00 || low > 0xDFFF) {
            return fail("unpaired high surrogate");
          }
          cp = 0x10000u + ((cp - 0xD800u) << 10) + (low - 0xDC00u);
        }
        append_utf8(out, cp);
        return true;
      }
      default: return fail("bad escape");
    }
  }

  // One UTF-8 sequence starting at a byte >= 0x80 (shortest form, no surrogates, <= U+10FFFF).
  bool utf8(std::string& out) {
    const unsigned char lead = peek();
    std::size_t extra = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      extra = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      extra = 2;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      extra = 3;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      return fail("invalid UTF-8 lead byte");
    }
    out.push_back(s_[pos_++]);
    for (std::size_t i = 0; i < extra; ++i) {
      const unsigned char c = peek();
      if (at_end() || c < lo || c > hi) return fail("invalid UTF-8 continuation");
      lo = 0x80;
      hi = 0xBF;
      out.push_back(s_[pos_++]);
    }
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // '"'
    for (;;) {
      if (at_end()) return fail("unterminated string");
      const unsigned char c = peek();
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return fail("raw control character in a string");
      if (c == '\\') {
        ++pos_;
        if (!escape(out)) return false;
      } else if (c >= 0x80) {
        if (!utf8(out)) return false;
      } else {
        out.push_back(static_cast<char>(c));
        ++pos_;
      }
    }
  }

  bool digits() {
    const std::size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') ++pos_;
    return pos_ > start;
  }

  bool number(std::string& out) {
    const std::size_t start = pos_;
    eat('-');
    if (eat('0')) {
      if (peek() >= '0' && peek() <= '9') return fail("leading zero");
    } else if (!digits()) {
      return fail("expected a value");
    }
    if (eat('.') && !digits()) return fail("bad fraction");
    if (eat('e') || eat('E')) {
      if (!eat('+')) eat('-');
      if (!digits()) return fail("bad exponent");
    }
    out = s_.substr(start, pos_ - start);
    return true;
  }

  std::string s_;
  std::size_t pos_ = 0;
  std::string error_;
};

// The parsed document; a test failure (and an empty value) if `text` is not valid JSON.
Json parse_json(const std::string& text) {
  Json doc;
  JsonParser parser(text);
  EXPECT_TRUE(parser.parse(doc)) << parser.error() << "\n" << text;
  return doc;
}

bool is_valid_json(const std::string& text) {
  Json doc;
  return JsonParser(text).parse(doc);
}

// The unsigned integer a JSON number holds; a test failure when it is something else.
std::uint64_t u64_of(const Json& v) {
  EXPECT_EQ(v.kind, Json::Kind::number);
  EXPECT_FALSE(v.text.empty());
  EXPECT_EQ(v.text.find_first_not_of("0123456789"), std::string::npos) << v.text;
  return v.text.empty() ? ~std::uint64_t{0} : std::stoull(v.text);
}

std::string string_of(const Json& v) {
  EXPECT_EQ(v.kind, Json::Kind::string);
  return v.text;
}

std::vector<std::string> strings_of(const Json& v) {
  EXPECT_EQ(v.kind, Json::Kind::array);
  std::vector<std::string> out;
  for (const Json& item : v.items) out.push_back(string_of(item));
  return out;
}

TEST(JsonChecker, AcceptsValidAndRejectsInvalidDocuments) {
  EXPECT_TRUE(is_valid_json(R"({"a":[1,-2.5e+3,0,true,false,null,"x\u00e9\n\"\\"],"b":{},"c":[]})"));
  EXPECT_TRUE(is_valid_json("\"caf\xc3\xa9 \xf0\x9f\x90\xa6\"\n"));
  EXPECT_TRUE(is_valid_json(R"("\ud83d\udc26")"));
  for (const char* bad : {
           R"({"a":1,})", R"({"a":1)", R"({"a" 1})", R"([1 2])", R"({"a":01})", R"({"a":1}{"b":2})",
           R"({"a":1,"a":2})", R"("\q")", R"("\ud83d")", R"({a:1})", R"([.5])", R"([1.])", "\"a\x01\"",
           "\"a\nb\"", "\"\xff\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "", "nul", R"(["a])",
       }) {
    EXPECT_FALSE(is_valid_json(bad)) << bad;
  }
}

// ---- Records and format helpers ---------------------------------------------------------------

using loopcanary::test::hand_block;
using loopcanary::test::hand_waiting_block;
using loopcanary::test::set_text;
using loopcanary::test::kButton;
using loopcanary::test::kDebounce;
using loopcanary::test::kInputTask;
using loopcanary::test::make_sample;
using loopcanary::test::scope_frame;

// The whole form, from a buffer far larger than any record needs.
std::string format_whole(FormatFn fn, const BlockRecord& r) {
  std::vector<char> buffer(1u << 16, '#');
  const FormatResult result = fn(r, buffer.data(), buffer.size());
  EXPECT_FALSE(result.truncated);
  EXPECT_EQ(result.length, result.needed);
  EXPECT_EQ(buffer[result.length], '\0');
  return std::string(buffer.data(), result.length);
}

std::string text_of(const BlockRecord& r) { return format_whole(&lc::format_text, r); }

// The JSON form, checked to be one line ending in '\n', parsed.
Json json_of(const BlockRecord& r) {
  const std::string text = format_whole(&lc::format_json, r);
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  return parse_json(text);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The first line of `text` that starts with `key` (e.g. "duration = "); "" if none.
std::string line_of(const std::string& text, const std::string& key) {
  for (const std::string& line : lines_of(text)) {
    if (line.compare(0, key.size(), key) == 0) return line;
  }
  ADD_FAILURE() << "no line starting with \"" << key << "\" in:\n" << text;
  return "";
}

bool has_line(const std::string& text, const std::string& line) {
  const std::vector<std::string> lines = lines_of(text);
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// ---- format_text ----------------------------------------------------------------------------

TEST(FormatText, HandRecordGivesBlockCanaryStyleLines) {
  const std::string text = text_of(hand_block());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const std::vector<std::string> expected = {
      "qualifier = fw-2.1.0",
      "loop = main",
      "event = button",
      "report = 7 (final)",
      "dispatch = 42",
      "time-start = 1000 ticks @ 1000000 Hz",
      "time-end = 251042 ticks",
      "duration = 250.042 ms (threshold 100.000 ms)",          // 250042 us, 100000 us
      "stages = input 2.500 ms, compute 247.000 ms",           // 2500 and 247000 ticks at 1 MHz
      "thread-time = 180.500 ms over a 200.000 ms window",     // 180500 us of a 200000 us window
      "cpu-busy = 92.3 %, process 45.6 %",                     // 923 and 456 per mille
      "memory = resident 12345678 B, stack_peak 2048 B, stack_size 8192 B",  // the known values
      "cause = running",
      "flags = hung",
      "samples = 7 taken, 2 kept, 5 overwritten, 1 missed",
      "top stacks:",
      "  28.5 % 2 debounce",                                   // 2 of 7 samples: 285 per mille
      "  14.2 % 1 pc 0xdeadbeef..0xdeadbf00 0x10",             // 1 of 7: 142 per mille
      "  other 4",
      "stacks:",
      "  +25.000 ms debounce < input_task | pc 0x8000123",     // 26000 - start 1000
      "  +125.000 ms pc 0xdeadbeef 0x10",                      // 126000 - 1000
      "dropped = 5 records, 6 notes",
  };
  EXPECT_EQ(lines_of(text), expected);
}

TEST(FormatText, AWaitingRecordNamesWhatItWaitedOnAndWhoHeldIt) {
  const std::string text = text_of(hand_waiting_block());
  EXPECT_EQ(line_of(text, "cause = "),
            "cause = waiting on mutex 0x7f00a0 held by 'journal' (tid 4242, loop 'journal'); holder in 0x401000 <- "
            "0x401234");
  const std::vector<std::string> lines = lines_of(text);
  const auto waits = std::find(lines.begin(), lines.end(), "waits:");
  ASSERT_NE(waits, lines.end()) << text;
  const std::vector<std::string> expected = {
      "waits:",
      "  71.4 % 5 mutex 0x7f00a0 held by 'journal' (tid 4242, loop 'journal')",  // 5 of 7 samples
      "    holder pc 0x401000 0x401234",
      "  14.2 % 1 pipe fd 5 pipe:[81234]",
      "  other 1",
      "samples = 7 taken, 2 kept, 5 overwritten, 1 missed",
  };
  EXPECT_EQ(std::vector<std::string>(waits, waits + static_cast<std::ptrdiff_t>(expected.size())), expected);
}

TEST(FormatText, ADeadlockNamesTheChainOfHolders) {
  const std::string text = text_of(loopcanary::test::hand_deadlock_block());
  EXPECT_EQ(line_of(text, "cause = "),
            "cause = waiting on mutex 0x7f00a0 held by 'journal' (tid 4242), which waits on mutex 0x7f00c8 held "
            "by 'main-loop' (tid 7): deadlock; holder in 0x401000");
}

// The cause line names the holder's innermost kCauseHolderFrames frames, and says when there are
// more; a holder whose stack was not read adds nothing.
TEST(FormatText, TheCauseLineNamesTheHoldersInnermostFrames) {
  BlockRecord r = hand_waiting_block();
  loopcanary::WaitSeen& lock = r.wait.objects[0];
  static_assert(loopcanary::kCauseHolderFrames == 3, "the expected line below names three");
  lock.holder_pc_count = 5;
  for (std::uint8_t i = 0; i < 5; ++i) lock.holder_frames[i] = 0x401000u + 0x100u * i;
  EXPECT_EQ(line_of(text_of(r), "cause = "),
            "cause = waiting on mutex 0x7f00a0 held by 'journal' (tid 4242, loop 'journal'); holder in 0x401000 <- "
            "0x401100 <- 0x401200 <- ...");
  lock.holder_pc_count = 3;
  EXPECT_EQ(line_of(text_of(r), "cause = "),
            "cause = waiting on mutex 0x7f00a0 held by 'journal' (tid 4242, loop 'journal'); holder in 0x401000 <- "
            "0x401100 <- 0x401200");
  lock.holder_pc_count = 0;
  EXPECT_EQ(line_of(text_of(r), "cause = "),
            "cause = waiting on mutex 0x7f00a0 held by 'journal' (tid 4242, loop 'journal')");
}

TEST(FormatText, ARecordWithoutWaitsHasNoWaitLines) {
  BlockRecord r = hand_waiting_block();
  r.wait = {};  // waiting, but nothing was read: the cause alone
  const std::string text = text_of(r);
  EXPECT_EQ(line_of(text, "cause = "), "cause = waiting");
  EXPECT_FALSE(has_line(text, "waits:")) << text;
}

TEST(FormatText, AnotherCauseKeepsItsNameAndListsTheWaits) {
  BlockRecord r = hand_waiting_block();
  r.cause = lc::Cause::starved;
  const std::string text = text_of(r);
  EXPECT_EQ(line_of(text, "cause = "), "cause = starved");
  EXPECT_TRUE(has_line(text, "waits:")) << text;
}

// format_wait: each kind names what it gives (docs/report-format.md, "Wait objects").
TEST(FormatWait, EveryKindNamesItsObject) {
  struct Case {
    lc::WaitKind kind;
    std::int32_t fd;
    std::uint64_t address;
    std::uint64_t value;
    std::uint32_t owner;
    const char* owner_name;
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {lc::WaitKind::mutex, -1, 0x1000, 0, 77, "", "", "mutex 0x1000 held by (tid 77)"},
      {lc::WaitKind::mutex, -1, 0x1000, 0, 0, "", "", "mutex 0x1000 (holder not known)"},
      {lc::WaitKind::condition, -1, 0x2028, 0, 0, "", "", "condition 0x2028 (no owner)"},
      {lc::WaitKind::futex, -1, 0x3000, 0, 0, "", "", "futex 0x3000"},
      {lc::WaitKind::file, 3, 0, 0, 0, "", "/var/log/x", "file fd 3 /var/log/x"},
      {lc::WaitKind::socket, 7, 0, 0, 0, "", "tcp 127.0.0.1:40112 > 127.0.0.1:5000",
       "socket fd 7 tcp 127.0.0.1:40112 > 127.0.0.1:5000"},
      {lc::WaitKind::poll, 4, 0, 3, 0, "", "pipe:[9]", "poll fd 4 (+2 more) pipe:[9]"},
      {lc::WaitKind::poll, 9, 0, 0, 0, "", "anon_inode:[eventpoll]", "poll fd 9 anon_inode:[eventpoll]"},
      {lc::WaitKind::sleep, -1, 0, 10'000'000, 0, "", "", "sleep 10.000 ms"},
      {lc::WaitKind::disk, -1, 0, 0, 0, "", "folio_wait_bit_common", "disk folio_wait_bit_common"},
      {lc::WaitKind::syscall, -1, 0, 61, 0, "", "wait4", "syscall 61 wait4"},
      {lc::WaitKind::file, 3, 0, 0, 0, "", "/tmp/a\nb", "file fd 3 /tmp/a?b"},  // no forged line
  };
  for (const Case& c : cases) {
    lc::WaitReading reading;
    reading.object.kind = c.kind;
    reading.object.fd = c.fd;
    reading.object.address = c.address;
    reading.object.value = c.value;
    reading.object.owner = c.owner;
    set_text(reading.object.owner_name, c.owner_name);
    set_text(reading.object.text, c.text);
    char buffer[256];
    const FormatResult result = lc::format_wait(reading, buffer, sizeof buffer);
    EXPECT_FALSE(result.truncated);
    EXPECT_STREQ(buffer, c.expected);
  }
}

TEST(FormatText, InProgressReportSaysStillRunning) {
  BlockRecord r = hand_block();
  r.phase = lc::Phase::in_progress;
  const std::string text = text_of(r);
  EXPECT_EQ(line_of(text, "report = "), "report = 7 (in_progress)");
  EXPECT_EQ(line_of(text, "time-end = "), "time-end = 251042 ticks (still running)");
  r.phase = lc::Phase::hang;
  EXPECT_EQ(line_of(text_of(r), "report = "), "report = 7 (hang)");
}

TEST(FormatText, MissingCpuEvidenceIsNotApplicable) {
  BlockRecord r = hand_block();
  r.has_thread_cpu = false;
  r.system_busy_permille = lc::kUnknownPermille;
  r.process_permille = lc::kUnknownPermille;
  r.cause = lc::Cause::unknown;
  const std::string text = text_of(r);
  EXPECT_EQ(line_of(text, "thread-time = "), "thread-time = n/a");
  EXPECT_EQ(line_of(text, "cpu-busy = "), "cpu-busy = n/a");
  EXPECT_EQ(line_of(text, "cause = "), "cause = unknown");
}

// The JSON form prints an unknown process share as null: the text form says n/a rather than
// printing the 0xFFFF sentinel as "6553.5 %".
TEST(FormatText, UnknownProcessShareIsNotApplicable) {
  BlockRecord r = hand_block();
  r.process_permille = lc::kUnknownPermille;
  EXPECT_EQ(line_of(text_of(r), "cpu-busy = "), "cpu-busy = 92.3 %, process n/a");
}

TEST(FormatText, FlagsAreListedByName) {
  BlockRecord r = hand_block();
  r.flags = 0;
  EXPECT_EQ(line_of(text_of(r), "flags ="), "flags =");
  r.flags = lc::kFlagHung | lc::kFlagUnwatched | lc::kFlagEndEstimated;
  EXPECT_EQ(line_of(text_of(r), "flags ="), "flags = hung unwatched end_estimated");
  r.flags = lc::kFlagEndEstimated;
  EXPECT_EQ(line_of(text_of(r), "flags ="), "flags = end_estimated");
}

TEST(FormatText, NoSamplesMeansNoTopFramesOrStacks) {
  BlockRecord r = hand_block();
  r.sample_count = 0;
  r.top_count = 0;
  r.top_other = 0;
  const std::string text = text_of(r);
  EXPECT_FALSE(has_line(text, "top stacks:"));
  EXPECT_FALSE(has_line(text, "stacks:"));
  // The dropped line directly follows the samples line.
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2], "samples = 7 taken, 0 kept, 5 overwritten, 1 missed");
  EXPECT_EQ(lines.back(), "dropped = 5 records, 6 notes");
}

TEST(FormatText, DurationsAreMillisecondsWithThreeDecimals) {
  struct Case {
    std::uint32_t tick_hz;
    std::uint64_t ticks;
    const char* ms;
  };
  const Case cases[] = {
      {1'000'000, 0, "0.000"},
      {1'000'000, 1, "0.001"},
      {1'000'000, 999, "0.999"},
      {1'000'000, 1'000, "1.000"},
      {1'000'000, 123'456'789, "123456.789"},
      {1'000'000, std::uint64_t{1} << 40, "1099511627.776"},  // 2^40 us
      {64'000'000, 64u * 1'234'567u, "1234.567"},
      {64'000'000, 63, "0.000"},        // 0.98 us rounds down
      {32'768, 32'768, "1000.000"},     // one second of a watch crystal
      {32'768, 1, "0.030"},             // 30.5 us rounds down
      {0, 5'000, "0.000"},              // unknown rate: no conversion
  };
  for (const Case& c : cases) {
    BlockRecord r = hand_block();
    r.tick_hz = c.tick_hz;
    r.duration_ticks = c.ticks;
    r.threshold_ticks = 0;
    EXPECT_EQ(line_of(text_of(r), "duration = "), std::string("duration = ") + c.ms + " ms (threshold 0.000 ms)")
        << c.ticks << " ticks at " << c.tick_hz << " Hz";
  }
}

TEST(FormatText, ProgramCountersAreHex) {
  struct Case {
    Frame pc;
    std::string hex;
  };
  const Case cases[] = {
      {0, "0x0"},
      {0x10, "0x10"},
      {0xdeadbeef, "0xdeadbeef"},
      {~Frame{0}, "0x" + std::string(2 * sizeof(Frame), 'f')},
  };
  for (const Case& c : cases) {
    BlockRecord r = hand_block();
    r.sample_count = 1;
    r.samples[0] = make_sample(r.start, {}, {c.pc});
    r.top_count = 1;
    r.top[0] = loopcanary::test::top_entry(c.pc, false, 7);
    r.top_other = 0;
    const std::string text = text_of(r);
    EXPECT_TRUE(has_line(text, "  +0.000 ms pc " + c.hex)) << text;
    EXPECT_TRUE(has_line(text, "  100.0 % 7 pc " + c.hex)) << text;
  }
}

TEST(FormatText, DefaultRecordFormats) {
  const BlockRecord r;  // no event, empty names, tick rate 0
  const std::string text = text_of(r);
  EXPECT_EQ(line_of(text, "qualifier ="), "qualifier = ");
  EXPECT_EQ(line_of(text, "loop = "), "loop = ");
  EXPECT_EQ(line_of(text, "event = "), "event = ?");
  EXPECT_EQ(line_of(text, "duration = "), "duration = 0.000 ms (threshold 0.000 ms)");
}

// A record whose every name is null: "?" for loop, event and scope names, "" for the qualifier.
BlockRecord null_names_record() {
  static constexpr lc::Event kNameless{nullptr};
  BlockRecord r = hand_block();
  r.qualifier = nullptr;
  r.loop = nullptr;
  r.event = &kNameless;
  r.sample_count = 1;
  r.samples[0] = make_sample(r.start, {scope_frame(nullptr)}, {});
  r.top_count = 1;
  r.top[0] = loopcanary::test::top_entry(scope_frame(nullptr), true, 7);
  r.top_other = 0;
  return r;
}

TEST(FormatText, NullNamesPrintAsQuestionMarks) {
  const std::string text = text_of(null_names_record());
  EXPECT_EQ(line_of(text, "qualifier ="), "qualifier = ");
  EXPECT_EQ(line_of(text, "loop = "), "loop = ?");
  EXPECT_EQ(line_of(text, "event = "), "event = ?");
  EXPECT_TRUE(has_line(text, "  100.0 % 7 ?")) << text;
  EXPECT_TRUE(has_line(text, "  +0.000 ms ?")) << text;
}

// ---- format_json ----------------------------------------------------------------------------

TEST(FormatJson, HandRecordIsOneValidObjectWithEveryField) {
  const Json doc = json_of(hand_block());
  ASSERT_EQ(doc.kind, Json::Kind::object);
  EXPECT_EQ(doc.keys(), (std::vector<std::string>{
                            "format_version", "report", "phase", "qualifier", "loop", "loop_index", "event", "dispatch",
                            "tick_hz", "start", "end", "duration_ticks", "duration_us", "threshold_us", "cause",
                            "top_other", "records_dropped", "notes_dropped", "delayed_by", "flags", "stages", "cpu",
                            "memory", "wait", "samples", "top", "stacks"}));
  EXPECT_EQ(u64_of(doc["format_version"]), loopcanary::kJsonFormatVersion);
  EXPECT_EQ(u64_of(doc["report"]), 7u);
  EXPECT_EQ(string_of(doc["phase"]), "final");
  EXPECT_EQ(string_of(doc["qualifier"]), "fw-2.1.0");
  EXPECT_EQ(string_of(doc["loop"]), "main");
  EXPECT_EQ(u64_of(doc["loop_index"]), 1u);
  EXPECT_EQ(string_of(doc["event"]), "button");
  EXPECT_EQ(u64_of(doc["dispatch"]), 42u);
  EXPECT_EQ(u64_of(doc["tick_hz"]), 1'000'000u);
  EXPECT_EQ(u64_of(doc["start"]), 1'000u);
  EXPECT_EQ(u64_of(doc["end"]), 251'042u);
  EXPECT_EQ(u64_of(doc["duration_ticks"]), 250'042u);
  EXPECT_EQ(u64_of(doc["duration_us"]), 250'042u);
  EXPECT_EQ(u64_of(doc["threshold_us"]), 100'000u);
  EXPECT_EQ(string_of(doc["cause"]), "running");
  EXPECT_EQ(strings_of(doc["flags"]), (std::vector<std::string>{"hung"}));
  const Json& stages = doc["stages"];
  ASSERT_EQ(stages.items.size(), 2u);
  EXPECT_EQ(string_of(stages.at(0)["name"]), "input");
  EXPECT_EQ(u64_of(stages.at(0)["us"]), 2'500u);
  EXPECT_EQ(string_of(stages.at(1)["name"]), "compute");
  EXPECT_EQ(u64_of(stages.at(1)["us"]), 247'000u);

  const Json& cpu = doc["cpu"];
  EXPECT_EQ(u64_of(cpu["window_us"]), 200'000u);
  EXPECT_EQ(u64_of(cpu["thread_us"]), 180'500u);
  EXPECT_EQ(u64_of(cpu["system_busy_permille"]), 923u);
  EXPECT_EQ(u64_of(cpu["process_permille"]), 456u);

  const Json& memory = doc["memory"];
  EXPECT_EQ(memory.keys(), (std::vector<std::string>{"resident", "resident_peak", "heap_used", "heap_free",
                                                      "stack_peak", "stack_current", "stack_size"}));
  EXPECT_EQ(u64_of(memory["resident"]), 12'345'678u);
  EXPECT_EQ(memory["resident_peak"].kind, Json::Kind::null);
  EXPECT_EQ(memory["heap_used"].kind, Json::Kind::null);
  EXPECT_EQ(u64_of(memory["stack_peak"]), 2'048u);
  EXPECT_EQ(u64_of(memory["stack_size"]), 8'192u);

  const Json& samples = doc["samples"];
  EXPECT_EQ(u64_of(samples["taken"]), 7u);
  EXPECT_EQ(u64_of(samples["kept"]), 2u);
  EXPECT_EQ(u64_of(samples["overwritten"]), 5u);
  EXPECT_EQ(u64_of(samples["missed"]), 1u);

  const Json& top = doc["top"];
  ASSERT_EQ(top.items.size(), 2u);
  EXPECT_EQ(u64_of(top.at(0)["count"]), 2u);
  EXPECT_EQ(strings_of(top.at(0)["scopes"]), std::vector<std::string>{"debounce"});
  EXPECT_TRUE(top.at(0)["pcs"].items.empty());
  EXPECT_EQ(top.at(0)["leaf_high"].kind, Json::Kind::null);
  EXPECT_EQ(u64_of(top.at(1)["count"]), 1u);
  EXPECT_TRUE(top.at(1)["scopes"].items.empty());
  EXPECT_EQ(strings_of(top.at(1)["pcs"]), (std::vector<std::string>{"0xdeadbeef", "0x10"}));
  EXPECT_EQ(string_of(top.at(1)["leaf_high"]), "0xdeadbf00");
  EXPECT_EQ(u64_of(doc["top_other"]), 4u);

  const Json& stacks = doc["stacks"];
  ASSERT_EQ(stacks.items.size(), 2u);
  EXPECT_EQ(u64_of(stacks.at(0)["at_us"]), 25'000u);
  EXPECT_EQ(strings_of(stacks.at(0)["scopes"]), (std::vector<std::string>{"debounce", "input_task"}));
  EXPECT_EQ(strings_of(stacks.at(0)["pcs"]), (std::vector<std::string>{"0x8000123"}));
  EXPECT_EQ(u64_of(stacks.at(1)["at_us"]), 125'000u);
  EXPECT_TRUE(strings_of(stacks.at(1)["scopes"]).empty());
  EXPECT_EQ(strings_of(stacks.at(1)["pcs"]), (std::vector<std::string>{"0xdeadbeef", "0x10"}));

  EXPECT_EQ(u64_of(doc["records_dropped"]), 5u);
  EXPECT_EQ(u64_of(doc["notes_dropped"]), 6u);
}

TEST(FormatText, NoMemoryValueMeansNoMemoryLineAndNullsInJson) {
  BlockRecord r = hand_block();
  r.memory = lc::MemoryReading{};
  for (const std::string& line : lines_of(text_of(r))) EXPECT_NE(line.rfind("memory", 0), 0u) << line;
  const Json doc = json_of(r);
  for (const std::string& key : doc["memory"].keys()) EXPECT_EQ(doc["memory"][key.c_str()].kind, Json::Kind::null) << key;
}

TEST(FormatText, NoStagesMeansNoStagesLine) {
  BlockRecord r = hand_block();
  r.stage_count = 0;
  for (const std::string& line : lines_of(text_of(r))) EXPECT_NE(line.rfind("stages", 0), 0u) << line;
  EXPECT_TRUE(json_of(r)["stages"].items.empty());
  EXPECT_EQ(json_of(r)["stages"].kind, Json::Kind::array);
}

// ---- Deadline misses ------------------------------------------------------------------------

TEST(FormatText, ADeadlineMissSaysHowLateAndWhatDelayedIt) {
  BlockRecord r = hand_block();
  r.phase = lc::Phase::deadline_miss;
  r.flags = 0;
  r.duration_ticks = 40'000;
  r.threshold_ticks = 5'000;
  r.delayed_by_dispatch = 41;
  r.delayed_by = &kButton;
  const std::string text = text_of(r);
  EXPECT_EQ(line_of(text, "report = "), "report = 7 (deadline_miss)");
  EXPECT_EQ(line_of(text, "time-end = "), "time-end = 251042 ticks");
  EXPECT_EQ(line_of(text, "duration = "), "duration = late by 40.000 ms (deadline 5.000 ms)");
  EXPECT_EQ(line_of(text, "delayed-by = "), "delayed-by = dispatch 41 (button)");
  const Json doc = json_of(r);
  EXPECT_EQ(string_of(doc["phase"]), "deadline_miss");
  EXPECT_EQ(u64_of(doc["delayed_by"]["dispatch"]), 41u);
  EXPECT_EQ(string_of(doc["delayed_by"]["event"]), "button");

  r.delayed_by_dispatch = 0;
  r.delayed_by = nullptr;
  EXPECT_EQ(line_of(text_of(r), "delayed-by = "), "delayed-by = unknown");
  EXPECT_EQ(json_of(r)["delayed_by"].kind, Json::Kind::null);
  EXPECT_EQ(json_of(hand_block())["delayed_by"].kind, Json::Kind::null) << "a block names no delayer";
  for (const std::string& line : lines_of(text_of(hand_block()))) EXPECT_NE(line.rfind("delayed-by", 0), 0u);
}

// ---- Health records -------------------------------------------------------------------------

using loopcanary::test::hand_health;

TEST(FormatHealth, TextGivesTheWindowLoadRateAndEachEvent) {
  std::vector<char> buffer(4096);
  const lc::FormatResult result = lc::format_health_text(hand_health(), buffer.data(), buffer.size());
  ASSERT_FALSE(result.truncated);
  const std::vector<std::string> expected = {
      "qualifier = fw-2.1.0",
      "loop = main",
      "health = 3",
      "window = 4294901760 .. 934464 ticks @ 1000000 Hz (1000.000 ms)",
      "dispatches = 1234 (1234.0 /s), load 93.1 %, idle 6.0 %",  // 931500 and 60000 of 1000000 ticks
      "blocks = 2, hangs = 1",
      "longest = 250.042 ms",
      "memory = resident 4096 B",
      "event control_tick = 98 (98.0 /s), latency p50 0.127 ms, p95 4.095 ms, p99 16.383 ms, max 20.000 ms, "
      "3 deadline misses, 5 missed periods, period 10.000 ms, deadline 5.000 ms",
      "dropped = 4 health records",
  };
  EXPECT_EQ(lines_of(std::string(buffer.data(), result.length)), expected);
}

TEST(FormatHealth, JsonIsOneObjectKindHealthWithEveryField) {
  lc::HealthRecord r = hand_health();
  std::vector<char> buffer(8192);
  lc::FormatResult result = lc::format_health_json(r, buffer.data(), buffer.size());
  ASSERT_FALSE(result.truncated);
  std::string text(buffer.data(), result.length);
  ASSERT_EQ(text.back(), '\n');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  Json doc = parse_json(text);
  EXPECT_EQ(doc.keys(), (std::vector<std::string>{"kind", "format_version", "number", "qualifier", "loop",
                                                   "loop_index", "tick_hz", "start", "end", "window_us",
                                                   "dispatches", "rate_mhz", "busy_us",
                                                   "load_permille", "idle_us", "idle_permille", "blocks", "hangs",
                                                   "max_duration_us", "health_dropped", "histogram", "memory",
                                                   "events"}));
  EXPECT_EQ(string_of(doc["kind"]), "health");
  EXPECT_EQ(u64_of(doc["format_version"]), loopcanary::kJsonFormatVersion);
  EXPECT_EQ(u64_of(doc["number"]), 3u);
  EXPECT_EQ(u64_of(doc["window_us"]), 1'000'000u);
  EXPECT_EQ(u64_of(doc["rate_mhz"]), 1'234'000u);
  EXPECT_EQ(u64_of(doc["load_permille"]), 931u);
  EXPECT_EQ(u64_of(doc["idle_permille"]), 60u);
  EXPECT_EQ(doc["histogram"].items.size(), lc::kHistogramBuckets);
  EXPECT_EQ(u64_of(doc["histogram"].at(17)), 34u);
  EXPECT_EQ(u64_of(doc["memory"]["resident"]), 4'096u);
  const Json& e = doc["events"].at(0);
  EXPECT_EQ(string_of(e["event"]), "control_tick");
  EXPECT_EQ(u64_of(e["rate_mhz"]), 98'000u);
  EXPECT_EQ(u64_of(e["p99_us"]), 16'383u);
  EXPECT_EQ(u64_of(e["deadline_us"]), 5'000u);
  EXPECT_EQ(u64_of(doc["health_dropped"]), 4u);

  r.has_idle = false;
  r.event_count = 0;
  result = lc::format_health_json(r, buffer.data(), buffer.size());
  doc = parse_json(std::string(buffer.data(), result.length));
  EXPECT_EQ(doc["idle_us"].kind, Json::Kind::null);
  EXPECT_EQ(doc["idle_permille"].kind, Json::Kind::null);
  EXPECT_TRUE(doc["events"].items.empty());
  result = lc::format_health_text(r, buffer.data(), buffer.size());
  EXPECT_TRUE(has_line(std::string(buffer.data(), result.length), "dispatches = 1234 (1234.0 /s), load 93.1 %, idle n/a"));
}

TEST(FormatHealth, ASmallBufferIsTruncatedAndSaysHowMuchItNeeds) {
  std::vector<char> whole(8192);
  const lc::FormatResult full = lc::format_health_json(hand_health(), whole.data(), whole.size());
  std::vector<char> small(64);
  const lc::FormatResult cut = lc::format_health_json(hand_health(), small.data(), small.size());
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.needed, full.length);
  EXPECT_EQ(small.back(), '\0');
}

TEST(FormatJson, UnknownCpuEvidenceIsNull) {
  BlockRecord r = hand_block();
  r.has_thread_cpu = false;
  r.window_ticks = 0;
  r.system_busy_permille = lc::kUnknownPermille;
  r.process_permille = lc::kUnknownPermille;
  const Json doc = json_of(r);
  const Json& cpu = doc["cpu"];
  EXPECT_EQ(u64_of(cpu["window_us"]), 0u);
  EXPECT_EQ(cpu["thread_us"].kind, Json::Kind::null);
  EXPECT_EQ(cpu["system_busy_permille"].kind, Json::Kind::null);
  EXPECT_EQ(cpu["process_permille"].kind, Json::Kind::null);
}

TEST(FormatJson, EveryFlagAndNoFlag) {
  BlockRecord r = hand_block();
  r.flags = lc::kFlagHung | lc::kFlagUnwatched | lc::kFlagEndEstimated;
  EXPECT_EQ(strings_of(json_of(r)["flags"]), (std::vector<std::string>{"hung", "unwatched", "end_estimated"}));
  r.flags = 0;
  EXPECT_TRUE(strings_of(json_of(r)["flags"]).empty());
}

TEST(FormatJson, NamesAreEscaped) {
  // Quotes, backslashes, every kind of control character and DEL in every name field.
  static constexpr char kEventName[] = "say \"hi\" \\ back\nnew\ttab\r\b\f\x01\x1f\x7f cafe";
  static constexpr char kLoopName[] = "c:\\loops\\\"main\"";
  static constexpr char kScopeName[] = "scope\"\\\n";
  static constexpr lc::Event kTricky{kEventName};
  BlockRecord r = hand_block();
  r.event = &kTricky;
  r.loop = kLoopName;
  r.qualifier = "q\"\\";
  r.samples[0] = make_sample(26'000, {scope_frame(kScopeName)}, {});
  r.top[0] = loopcanary::test::top_entry(scope_frame(kScopeName), true, 2);

  const std::string text = format_whole(&lc::format_json, r);
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    EXPECT_GE(static_cast<unsigned char>(text[i]), 0x20u) << "raw control character at " << i;
  }
  EXPECT_NE(text.find(R"(\"hi\")"), std::string::npos);
  EXPECT_NE(text.find(R"(\u0001)"), std::string::npos);
  EXPECT_NE(text.find(R"(\u001f)"), std::string::npos);

  const Json doc = json_of(r);
  EXPECT_EQ(string_of(doc["event"]), kEventName);
  EXPECT_EQ(string_of(doc["loop"]), kLoopName);
  EXPECT_EQ(string_of(doc["qualifier"]), "q\"\\");
  EXPECT_EQ(strings_of(doc["stacks"].at(0)["scopes"]), (std::vector<std::string>{kScopeName}));
  EXPECT_EQ(strings_of(doc["top"].at(0)["scopes"]), std::vector<std::string>{kScopeName});
}

TEST(Utf8Sequence, GivesTheLengthOfAWellFormedSequenceAndZeroForAnythingElse) {
  EXPECT_EQ(lc::utf8_sequence("\xC3\xA9"), 2u);          // U+00E9
  EXPECT_EQ(lc::utf8_sequence("\xE2\x82\xAC"), 3u);      // U+20AC
  EXPECT_EQ(lc::utf8_sequence("\xF0\x9F\x98\x80"), 4u);  // U+1F600
  EXPECT_EQ(lc::utf8_sequence("\xF4\x8F\xBF\xBF"), 4u);  // U+10FFFF, the last
  EXPECT_EQ(lc::utf8_sequence("a"), 0u);                  // ASCII starts no multi-byte sequence
  EXPECT_EQ(lc::utf8_sequence(""), 0u);
  EXPECT_EQ(lc::utf8_sequence("\xA9"), 0u);               // a continuation byte
  EXPECT_EQ(lc::utf8_sequence("\xC0\xAF"), 0u);           // overlong '/'
  EXPECT_EQ(lc::utf8_sequence("\xE0\x80\xAF"), 0u);       // overlong, 3 bytes
  EXPECT_EQ(lc::utf8_sequence("\xED\xA0\x80"), 0u);       // U+D800, a surrogate
  EXPECT_EQ(lc::utf8_sequence("\xF4\x90\x80\x80"), 0u);   // above U+10FFFF
  EXPECT_EQ(lc::utf8_sequence("\xFF"), 0u);
  EXPECT_EQ(lc::utf8_sequence("\xE2\x82"), 0u);           // cut short by the NUL
  EXPECT_EQ(lc::utf8_sequence("\xE2\x82x"), 0u);          // cut short by another byte
}

// Names are UTF-8 in every form: JSON carries them as they are (a JSON reader reads what was
// written), each byte that is not part of a well-formed sequence as \ufffd; the text form the
// same, U+FFFD in UTF-8.
TEST(FormatJson, Utf8NamesAreWrittenAsTheyAreOtherBytesAsReplacementCharacters) {
  static constexpr lc::Event kUtf8{"caf\xc3\xa9 \xf0\x9f\x98\x80"};
  BlockRecord r = hand_block();
  r.event = &kUtf8;
  std::string text = format_whole(&lc::format_json, r);
  EXPECT_NE(text.find("\"event\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\""), std::string::npos) << text;
  EXPECT_EQ(string_of(json_of(r)["event"]), "caf\xc3\xa9 \xf0\x9f\x98\x80");

  // A stray byte, a lead byte without its continuation, an overlong form, a surrogate, a code
  // point past U+10FFFF, a sequence cut by the end: one U+FFFD per byte not taken.
  static constexpr lc::Event kBroken{"a\xff b\xc3 c\xc0\xaf d\xed\xa0\x80 e\xf4\x90\x80\x80 f\xe2\x82"};
  r.event = &kBroken;
  text = format_whole(&lc::format_json, r);
  const std::string r1 = "\\ufffd";
  const std::string expected = "\"event\":\"a" + r1 + " b" + r1 + " c" + r1 + r1 + " d" + r1 + r1 + r1 + " e" +
                               r1 + r1 + r1 + r1 + " f" + r1 + r1 + "\"";
  EXPECT_NE(text.find(expected), std::string::npos) << text;
  for (const char c : text) EXPECT_LT(static_cast<unsigned char>(c), 0x80u);  // nothing else left

  const std::string u = "\xEF\xBF\xBD";
  EXPECT_EQ(string_of(json_of(r)["event"]),
            "a" + u + " b" + u + " c" + u + u + " d" + u + u + u + " e" + u + u + u + u + " f" + u + u);
  text = format_whole(&lc::format_text, r);
  EXPECT_NE(text.find("\nevent = a" + u + " b" + u + " c" + u + u + " d" + u + u + u + " e" + u + u + u + u + " f" +
                          u + u + "\n"),
            std::string::npos)
      << text;
  r.event = &kUtf8;
  text = format_whole(&lc::format_text, r);
  EXPECT_NE(text.find("\nevent = caf\xc3\xa9 \xf0\x9f\x98\x80\n"), std::string::npos) << text;
}

TEST(FormatText, ControlCharactersInNamesCannotBreakTheLines) {
  static constexpr lc::Event kTwoLines{"evil\nevent = forged"};
  BlockRecord r = hand_block();
  r.event = &kTwoLines;
  const std::string text = format_whole(&lc::format_text, r);
  EXPECT_NE(text.find("\nevent = evil?event = forged\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("\nevent = forged"), std::string::npos);
}

TEST(FormatJson, NullNamesPrintAsQuestionMarks) {
  const Json doc = json_of(null_names_record());
  EXPECT_EQ(string_of(doc["qualifier"]), "");
  EXPECT_EQ(string_of(doc["loop"]), "?");
  EXPECT_EQ(string_of(doc["event"]), "?");
  EXPECT_EQ(strings_of(doc["top"].at(0)["scopes"]), std::vector<std::string>{"?"});
  EXPECT_EQ(strings_of(doc["stacks"].at(0)["scopes"]), (std::vector<std::string>{"?"}));
}

TEST(FormatJson, DefaultRecordIsValid) {
  const Json doc = json_of(BlockRecord{});
  EXPECT_EQ(string_of(doc["event"]), "?");
  EXPECT_EQ(u64_of(doc["report"]), 0u);
  EXPECT_TRUE(doc["top"].items.empty());
  EXPECT_TRUE(doc["stacks"].items.empty());
}

// A writer's own members (JsonExtension) come last, inside the object, and count toward its size:
// a buffer one short of the whole line truncates, as without them.
TEST(FormatJson, AnExtensionsMembersComeLastInsideTheObject) {
  const BlockRecord r = hand_block();
  const lc::JsonExtension extension{[](void* context, lc::TextWriter& w) noexcept {
                                      w.puts(",\"host\":{\"name\":");
                                      w.json_string(static_cast<const char*>(context));
                                      w.put('}');
                                    },
                                    const_cast<char*>("bench \"7\"")};
  std::vector<char> buffer(1u << 16);
  const FormatResult whole = lc::format_json(r, buffer.data(), buffer.size(), extension);
  ASSERT_FALSE(whole.truncated);
  const std::string text(buffer.data(), whole.length);
  const Json doc = parse_json(text);
  ASSERT_FALSE(doc.keys().empty());
  EXPECT_EQ(doc.keys().back(), "host");
  EXPECT_EQ(string_of(doc["host"]["name"]), "bench \"7\"");
  const std::string plain = format_whole(&lc::format_json, r);
  EXPECT_EQ(text.substr(0, plain.size() - 2), plain.substr(0, plain.size() - 2)) << "the record's own members first";
  EXPECT_TRUE(lc::format_json(r, buffer.data(), whole.length, extension).truncated);  // no room for the NUL
  EXPECT_FALSE(lc::format_json(r, buffer.data(), whole.length + 1, extension).truncated);
  EXPECT_EQ(lc::format_json(r, buffer.data(), buffer.size(), lc::JsonExtension{}).length, plain.size());
}

TEST(FormatJson, TheWaitMemberHoldsEveryObjectAndItsHolder) {
  const Json doc = json_of(hand_waiting_block());
  const Json& wait = doc["wait"];
  EXPECT_EQ(u64_of(wait["other"]), 1u);
  ASSERT_EQ(wait["objects"].items.size(), 2u);
  const Json& lock = wait["objects"].items[0];
  EXPECT_EQ(lock.keys(),
            (std::vector<std::string>{"kind", "samples", "address", "fd", "value", "text", "owner", "chain", "deadlock"}));
  EXPECT_EQ(string_of(lock["kind"]), "mutex");
  EXPECT_EQ(u64_of(lock["samples"]), 5u);
  EXPECT_EQ(string_of(lock["address"]), "0x7f00a0");
  EXPECT_EQ(lock["fd"].kind, Json::Kind::null);
  EXPECT_EQ(u64_of(lock["owner"]["tid"]), 4242u);
  EXPECT_EQ(string_of(lock["owner"]["name"]), "journal");
  EXPECT_EQ(string_of(lock["owner"]["loop"]), "journal");
  ASSERT_EQ(lock["owner"]["pcs"].items.size(), 2u);
  EXPECT_EQ(string_of(lock["owner"]["pcs"].items[1]), "0x401234");
  const Json& pipe = wait["objects"].items[1];
  EXPECT_EQ(string_of(pipe["kind"]), "pipe");
  EXPECT_EQ(u64_of(pipe["fd"]), 5u);
  EXPECT_EQ(string_of(pipe["text"]), "pipe:[81234]");
  EXPECT_EQ(pipe["owner"].kind, Json::Kind::null);
}

TEST(FormatJson, ADeadlocksChainIsInItsObject) {
  const Json doc = json_of(loopcanary::test::hand_deadlock_block());
  const Json& lock = doc["wait"]["objects"].at(0);
  EXPECT_EQ(lock["deadlock"].kind, Json::Kind::boolean);
  EXPECT_TRUE(lock["deadlock"].boolean);
  ASSERT_EQ(lock["chain"].items.size(), 1u);
  EXPECT_EQ(string_of(lock["chain"].at(0)["address"]), "0x7f00c8");
  EXPECT_EQ(u64_of(lock["chain"].at(0)["tid"]), 7u);
  EXPECT_EQ(string_of(lock["chain"].at(0)["name"]), "main-loop");
  const Json waiting = json_of(hand_waiting_block());
  const Json& plain = waiting["wait"]["objects"].at(0);
  EXPECT_FALSE(plain["deadlock"].boolean);
  EXPECT_EQ(plain["chain"].items.size(), 0u);
}

TEST(FormatJson, LargeNumbersStayExact) {
  BlockRecord r = hand_block();
  r.duration_ticks = ~std::uint64_t{0};
  r.tick_hz = 1'000'000;
  r.start = 0xFFFF'FFFFu;
  const Json doc = json_of(r);
  EXPECT_EQ(doc["duration_ticks"].text, "18446744073709551615");
  EXPECT_EQ(u64_of(doc["duration_us"]), ~std::uint64_t{0});  // 1 tick = 1 us
  EXPECT_EQ(u64_of(doc["start"]), 0xFFFF'FFFFu);
}

// A dispatch longer than one counter wrap (a hang of hours, or seconds at a fast core clock):
// its kept samples, the latest ones, are placed from the record's end back, so their offsets
// count the whole wraps the start stamp alone cannot tell.
TEST(FormatJson, SampleOffsetsOfADispatchLongerThanOneWrapCountTheWholeWraps) {
  BlockRecord r = hand_block();  // 1 tick = 1 us; samples at ticks 26'000 and 126'000
  constexpr std::uint64_t kWrap = std::uint64_t{1} << 32;
  r.duration_ticks = kWrap + 250'042;  // start 1'000, end 251'042 after one wrap
  const Json doc = json_of(r);
  EXPECT_EQ(u64_of(doc["stacks"].at(0)["at_us"]), kWrap + 25'000);
  EXPECT_EQ(u64_of(doc["stacks"].at(1)["at_us"]), kWrap + 125'000);
  EXPECT_TRUE(has_line(text_of(r), "  +4295092.296 ms pc 0xdeadbeef 0x10")) << text_of(r);
}

// ---- Truncation, for both forms ---------------------------------------------------------------

struct Form {
  const char* name;
  FormatFn fn;
};

void PrintTo(const Form& form, std::ostream* os) { *os << form.name; }

class Truncation : public ::testing::TestWithParam<Form> {
 protected:
  FormatFn fn() const { return GetParam().fn; }
  // Formats into a `size`-byte window of a larger sentinel-filled buffer; `tail_intact` tells
  // whether anything past the window was written.
  std::string format_into(std::size_t size, FormatResult& result, bool& tail_intact) const {
    std::vector<char> buffer(size + 64, '#');
    result = fn()(record_, buffer.data(), size);
    tail_intact = std::all_of(buffer.begin() + static_cast<std::ptrdiff_t>(size), buffer.end(),
                              [](char c) { return c == '#'; });
    if (size == 0) return std::string(buffer.begin(), buffer.end());
    EXPECT_EQ(buffer[result.length], '\0') << "size " << size;
    return std::string(buffer.data(), result.length);
  }

  const BlockRecord record_ = hand_block();
};

INSTANTIATE_TEST_SUITE_P(Form, Truncation,
                         ::testing::Values(Form{"text", &lc::format_text}, Form{"json", &lc::format_json}),
                         [](const ::testing::TestParamInfo<Form>& param) { return std::string(param.param.name); });

TEST_P(Truncation, EverySmallBufferGivesAPrefixTheMarkerAndTheFullSize) {
  const std::string whole = format_whole(fn(), record_);
  ASSERT_GT(whole.size(), 2 * kMarkerLength);
  for (std::size_t size = 1; size <= whole.size(); ++size) {
    FormatResult result;
    bool tail_intact = false;
    const std::string got = format_into(size, result, tail_intact);
    ASSERT_TRUE(tail_intact) << "wrote past a " << size << "-byte buffer";
    EXPECT_TRUE(result.truncated) << "size " << size;
    EXPECT_EQ(result.needed, whole.size()) << "size " << size;
    EXPECT_EQ(result.length, size - 1) << "size " << size;
    const std::string expected = size - 1 >= kMarkerLength
                                     ? whole.substr(0, size - 1 - kMarkerLength) + kMarker
                                     : whole.substr(0, size - 1);
    ASSERT_EQ(got, expected) << "size " << size;
  }
}

// format.hpp: the truncated text "ends with the marker when the buffer can hold it". A buffer
// of strlen(marker) + 1 bytes holds the marker and its NUL.
TEST_P(Truncation, MarkerWhenTheBufferHoldsExactlyTheMarker) {
  FormatResult result;
  bool tail_intact = false;
  const std::string got = format_into(kMarkerLength + 1, result, tail_intact);
  EXPECT_TRUE(tail_intact);
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(got, kMarker);
}

TEST_P(Truncation, SizeZeroWritesNothingAndReportsTheFullSize) {
  const std::string whole = format_whole(fn(), record_);
  FormatResult result;
  bool tail_intact = false;
  format_into(0, result, tail_intact);
  EXPECT_TRUE(tail_intact);
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.length, 0u);
  EXPECT_EQ(result.needed, whole.size());
  // A null buffer of size 0 is a pure size query.
  const FormatResult query = fn()(record_, nullptr, 0);
  EXPECT_EQ(query.needed, whole.size());
  EXPECT_EQ(query.length, 0u);
}

TEST_P(Truncation, ExactFitIsNotTruncatedOneLessIs) {
  const std::string whole = format_whole(fn(), record_);
  FormatResult result;
  bool tail_intact = false;
  std::string got = format_into(whole.size() + 1, result, tail_intact);
  EXPECT_TRUE(tail_intact);
  EXPECT_FALSE(result.truncated);
  EXPECT_EQ(result.length, whole.size());
  EXPECT_EQ(result.needed, whole.size());
  EXPECT_EQ(got, whole);

  got = format_into(whole.size(), result, tail_intact);  // no room for the NUL
  EXPECT_TRUE(tail_intact);
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.needed, whole.size());
  EXPECT_EQ(got, whole.substr(0, whole.size() - 1 - kMarkerLength) + kMarker);
}

// ---- A record from a virtual-time scenario ----------------------------------------------------

constexpr lc::Event kFilterUpdate{"filter_update"};
constexpr char kFirFilter[] = "fir_filter";
constexpr Frame kLoopPc = 0x4000abcd;

// One 180 ms dispatch in a loop with a 100 ms threshold (arm at 25 %, sample every 10 ms),
// watched by a watchdog polled every 5 ms from tick 0, with PC capture on.
class FormatScenario : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kThresholdMs = 100;
  static constexpr std::uint32_t kArmMs = 25;
  static constexpr std::uint32_t kIntervalMs = 10;
  static constexpr std::uint32_t kDurationMs = 180;
  static constexpr std::uint32_t kPeriodMs = 5;

  void SetUp() override {
    thread_.pc = kLoopPc;
    machine_.set_pc_capture(true);
    lc::MonitorConfig config;
    config.name = "main";
    config.tick_hz = sim::kTickHz;
    config.threshold_us = kThresholdMs * 1000u;
    config.arm_permille = static_cast<std::uint16_t>(kArmMs * 1000u / kThresholdMs);
    config.sample_interval_us = kIntervalMs * 1000u;
    config.context = &thread_;
    lc::WatchdogConfig dog_config;
    dog_config.qualifier = "thermostat-1.4.2";
    ASSERT_EQ(loop_.init(config), lc::Status::ok);
    ASSERT_EQ(dog_.init(dog_config, machine_.hal()), lc::Status::ok);
    ASSERT_EQ(dog_.add(loop_), lc::Status::ok);

    sim::Scheduler scheduler(time_, machine_, dog_, sim::ms(kPeriodMs));
    {
      LOOPCANARY_DISPATCH(loop_, kFilterUpdate);
      LOOPCANARY_SCOPE(loop_, kFirFilter);
      scheduler.compute(thread_, sim::ms(kDurationMs));
    }
    scheduler.idle(sim::ms(2 * kPeriodMs));
    ASSERT_TRUE(dog_.pop(in_progress_));
    ASSERT_TRUE(dog_.pop(final_));
    BlockRecord extra;
    ASSERT_FALSE(dog_.pop(extra));
    ASSERT_EQ(in_progress_.phase, lc::Phase::in_progress);
    ASSERT_EQ(final_.phase, lc::Phase::final);
  }

  // Samples are taken from the arm point every interval while the dispatch runs; the record
  // keeps the latest kMaxSamples.
  static std::uint32_t samples_until(std::uint32_t ms) { return (ms - kArmMs) / kIntervalMs + 1u; }
  static std::uint32_t kept(std::uint32_t taken) {
    return taken < lc::kMaxSamples ? taken : static_cast<std::uint32_t>(lc::kMaxSamples);
  }
  // "+<ms>.000 ms fir_filter | pc 0x4000abcd" for each kept sample of `taken`.
  static std::vector<std::string> stack_lines(std::uint32_t taken) {
    std::vector<std::string> lines;
    const std::uint32_t first = kArmMs + (taken - kept(taken)) * kIntervalMs;
    for (std::uint32_t i = 0; i < kept(taken); ++i) {
      lines.push_back("  +" + std::to_string(first + i * kIntervalMs) + ".000 ms fir_filter | pc 0x4000abcd");
    }
    return lines;
  }
  static void expect_lines_in_order(const std::string& text, const std::vector<std::string>& wanted) {
    const std::vector<std::string> lines = lines_of(text);
    auto it = lines.begin();
    for (const std::string& w : wanted) {
      it = std::find(it, lines.end(), w);
      ASSERT_NE(it, lines.end()) << "missing (or out of order): \"" << w << "\" in\n" << text;
    }
  }

  sim::VirtualTime time_;
  sim::Machine machine_;
  sim::Thread thread_;
  sim::PortMonitor loop_{sim::Clock{time_}};
  lc::StaticWatchdog<1, 4> dog_;
  BlockRecord in_progress_;
  BlockRecord final_;
};

TEST_F(FormatScenario, FinalRecordAsText) {
  const std::uint32_t taken = samples_until(kDurationMs);  // 25, 35, ..., 175 ms: 16
  const std::string text = text_of(final_);
  std::vector<std::string> wanted = {
      "qualifier = thermostat-1.4.2",
      "loop = main",
      "event = filter_update",
      "report = 2 (final)",  // the in-progress report was number 1
      "dispatch = 1",
      "time-start = 0 ticks @ 1000000 Hz",
      "time-end = 180000 ticks",
      "duration = 180.000 ms (threshold 100.000 ms)",
      "cause = running",
      "flags =",
      "samples = " + std::to_string(taken) + " taken, " + std::to_string(kept(taken)) + " kept, " +
          std::to_string(taken - kept(taken)) + " overwritten, 0 missed",
      "top stacks:",
      "  100.0 % " + std::to_string(taken) + " fir_filter | pc 0x4000abcd",
      "stacks:",
  };
  for (const std::string& line : stack_lines(taken)) wanted.push_back(line);
  wanted.push_back("dropped = 0 records, 0 notes");
  expect_lines_in_order(text, wanted);
  // CPU window: from the arming poll (25 ms) to the last poll that saw the dispatch running
  // (180 ms), during which the loop thread computed throughout.
  EXPECT_EQ(line_of(text, "thread-time = "), "thread-time = 155.000 ms over a 155.000 ms window");
}

TEST_F(FormatScenario, InProgressRecordAsText) {
  // Reported at the first poll past the threshold: 105 ms.
  constexpr std::uint32_t kReportMs = (kThresholdMs / kPeriodMs + 1) * kPeriodMs;
  const std::uint32_t taken = samples_until(kReportMs);
  const std::string text = text_of(in_progress_);
  std::vector<std::string> wanted = {
      "report = 1 (in_progress)",
      "time-end = " + std::to_string(kReportMs * 1000u) + " ticks (still running)",
      "duration = " + std::to_string(kReportMs) + ".000 ms (threshold 100.000 ms)",
      "samples = " + std::to_string(taken) + " taken, " + std::to_string(kept(taken)) + " kept, " +
          std::to_string(taken - kept(taken)) + " overwritten, 0 missed",
      "stacks:",
  };
  for (const std::string& line : stack_lines(taken)) wanted.push_back(line);
  expect_lines_in_order(text, wanted);
}

TEST_F(FormatScenario, FinalRecordAsJson) {
  const std::uint32_t taken = samples_until(kDurationMs);
  const Json doc = json_of(final_);
  EXPECT_EQ(u64_of(doc["report"]), 2u);
  EXPECT_EQ(string_of(doc["phase"]), "final");
  EXPECT_EQ(string_of(doc["qualifier"]), "thermostat-1.4.2");
  EXPECT_EQ(string_of(doc["loop"]), "main");
  EXPECT_EQ(string_of(doc["event"]), "filter_update");
  EXPECT_EQ(u64_of(doc["duration_us"]), kDurationMs * 1000u);
  EXPECT_EQ(u64_of(doc["threshold_us"]), kThresholdMs * 1000u);
  EXPECT_EQ(string_of(doc["cause"]), "running");
  EXPECT_EQ(u64_of(doc["cpu"]["thread_us"]), (kDurationMs - kArmMs) * 1000u);
  EXPECT_EQ(u64_of(doc["cpu"]["window_us"]), (kDurationMs - kArmMs) * 1000u);
  EXPECT_EQ(u64_of(doc["samples"]["taken"]), taken);
  EXPECT_EQ(u64_of(doc["samples"]["kept"]), kept(taken));
  ASSERT_EQ(doc["top"].items.size(), 1u);
  EXPECT_EQ(strings_of(doc["top"].at(0)["scopes"]), std::vector<std::string>{kFirFilter});
  EXPECT_EQ(u64_of(doc["top"].at(0)["count"]), taken);
  const Json& stacks = doc["stacks"];
  ASSERT_EQ(stacks.items.size(), kept(taken));
  const std::uint32_t first = kArmMs + (taken - kept(taken)) * kIntervalMs;
  for (std::uint32_t i = 0; i < kept(taken); ++i) {
    EXPECT_EQ(u64_of(stacks.at(i)["at_us"]), (first + i * kIntervalMs) * 1000u) << i;
    EXPECT_EQ(strings_of(stacks.at(i)["scopes"]), (std::vector<std::string>{kFirFilter})) << i;
    EXPECT_EQ(strings_of(stacks.at(i)["pcs"]), (std::vector<std::string>{"0x4000abcd"})) << i;
  }
}

}  // namespace
