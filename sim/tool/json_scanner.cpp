// SPDX-License-Identifier: MIT
// The JSON scanner's cold paths (json_scanner.hpp): faults, escaped strings, checked numbers,
// skipped values.
#include "json_scanner.hpp"

#include <algorithm>

namespace loopcanary::tool::json {

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

std::string quoted(std::string_view value) { return json_string(std::string(value.substr(0, 40))); }

bool Scanner::malformed(const char* expected) {
  kind = WarningKind::malformed_json;
  what = "malformed JSON at column " + std::to_string(p_ - begin_ + 1) + ": " + expected;
  return false;
}

bool Scanner::wrong_type(const char* field, const char* expected) {
  const char c = peek();
  if (c == '\0') return malformed("the line ends where a value should be (truncated record)");
  if (std::strchr("\"{[tfn-0123456789", c) == nullptr) return malformed("expected a value");
  kind = WarningKind::wrong_type;
  what = std::string("field \"") + field + "\": expected " + expected + ", got " + type_name(peek());
  return false;
}

bool Scanner::bad_value(const char* field, const std::string& why) {
  kind = WarningKind::wrong_type;
  what = std::string("field \"") + field + "\": " + why;
  return false;
}

bool Scanner::string(std::string* out) {
  if (p_ == end_ || *p_ != '"') return malformed("expected a string");
  ++p_;
  if (out != nullptr) out->clear();
  for (;;) {
    const char* run = p_;
    p_ = plain_run(p_, end_);
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
    char decoded = 0;
    switch (e) {
      case '"': decoded = '"'; break;
      case '\\': decoded = '\\'; break;
      case '/': decoded = '/'; break;
      case 'b': decoded = '\b'; break;
      case 'f': decoded = '\f'; break;
      case 'n': decoded = '\n'; break;
      case 'r': decoded = '\r'; break;
      case 't': decoded = '\t'; break;
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
    if (out != nullptr) out->push_back(decoded);
  }
}

bool Scanner::hex_string_checked(const char* field, std::uint64_t& out, std::string& escaped) {
  std::string_view text;
  if (!str_view(field, text, escaped)) return false;
  if (text.size() < 3 || text.size() > 18 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return bad_value(field, "expected \"0x<hex>\", got " + quoted(text));
  }
  std::uint64_t value = 0;
  for (std::size_t i = 2; i < text.size(); ++i) {
    const std::int8_t digit = kHexDigit[static_cast<unsigned char>(text[i])];
    if (digit < 0) return bad_value(field, "expected \"0x<hex>\", got " + quoted(text));
    value = value << 4 | static_cast<std::uint64_t>(digit);
  }
  out = value;
  return true;
}

bool Scanner::skip_value() {
  switch (peek()) {
    case '{': return object([this](std::string_view) { return skip_value(); });
    case '[': return array([this](std::size_t) { return skip_value(); });
    case '"': return string(nullptr);
    case 't': return literal("true") || malformed("bad literal");
    case 'f': return literal("false") || malformed("bad literal");
    case 'n': return literal("null") || malformed("bad literal");
    default: return number();
  }
}

bool Scanner::enter() {
  if (++depth_ > kMaxJsonDepth) {
    kind = WarningKind::too_deep;
    what = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels at column " +
           std::to_string(p_ - begin_);
    return false;
  }
  return true;
}

bool Scanner::number() {
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

bool Scanner::u64_checked(const char* field, std::uint64_t& out) {
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

bool Scanner::hex4(std::uint32_t& out) {
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

void Scanner::utf8(std::uint32_t code, std::string& out) {
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

}  // namespace loopcanary::tool::json
