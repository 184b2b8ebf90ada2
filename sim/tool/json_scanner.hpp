// SPDX-License-Identifier: MIT
// The tool's JSON scanner: validates one JSON Lines record in place and hands its caller each
// key and value, with no tree (model.hpp's reader decodes straight into its reused records).
// Keys and short values are compared in place (views into the line); strings are scanned 8 or
// 16 bytes at a time. Every fault is recorded once with its column (kind and what), in the
// WarningKind vocabulary of model.hpp. Host code; one Scanner per line and thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "model.hpp"

// The scanner's small hot functions are inlined into their callers, whatever the compiler's
// size heuristics say of the large record parsers.
#if defined(__GNUC__)
#define LOOPCANARY_TOOL_HOT inline __attribute__((always_inline))
#else
#define LOOPCANARY_TOOL_HOT inline
#endif

namespace loopcanary::tool::json {

/// What a value starting with `c` is, for a wrong_type warning: "a string", "an object", "an
/// array", "a boolean", "null", "a number" or "no value".
const char* type_name(char c) noexcept;

/// A value of the log in a warning: its first 40 bytes as a JSON string (quoted, control
/// characters escaped), so that the warning stays one line whatever the value holds.
std::string quoted(std::string_view value);

// Whether the sizeof(Word) bytes at a and b are equal (one load each).
template <class Word>
LOOPCANARY_TOOL_HOT bool same_word(const char* a, const char* b) noexcept {
  Word x{}, y{};
  std::memcpy(&x, a, sizeof x);
  std::memcpy(&y, b, sizeof y);
  return x == y;
}

// A key (or short value) equal to a literal: length first, then word compares, the last one
// overlapping the one before (N is a constant: the compiler unrolls it all).
template <std::size_t N>
LOOPCANARY_TOOL_HOT bool is(std::string_view text, const char (&literal)[N]) noexcept {
  constexpr std::size_t n = N - 1;
  if (text.size() != n) return false;
  const char* a = text.data();
  if constexpr (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      if (!same_word<std::uint64_t>(a + i, literal + i)) return false;
    }
    return same_word<std::uint64_t>(a + n - 8, literal + n - 8);
  } else if constexpr (n >= 4) {
    return same_word<std::uint32_t>(a, literal) && same_word<std::uint32_t>(a + n - 4, literal + n - 4);
  } else if constexpr (n >= 2) {
    return same_word<std::uint16_t>(a, literal) && same_word<std::uint16_t>(a + n - 2, literal + n - 2);
  } else {
    return n == 0 || a[0] == literal[0];
  }
}

// The value of a hex digit, -1 for another byte.
inline constexpr std::array<std::int8_t, 256> kHexDigit = [] {
  std::array<std::int8_t, 256> digits{};
  for (std::size_t c = 0; c < 256; ++c) {
    digits[c] = c >= '0' && c <= '9'   ? static_cast<std::int8_t>(c - '0')
                : c >= 'a' && c <= 'f' ? static_cast<std::int8_t>(c - 'a' + 10)
                : c >= 'A' && c <= 'F' ? static_cast<std::int8_t>(c - 'A' + 10)
                                       : std::int8_t{-1};
  }
  return digits;
}();

// Sets `to` to `from`, copying only when they differ: a reused frame often holds the same
// text already (the same scope or symbol at the same place as on the line before).
LOOPCANARY_TOOL_HOT void set_text(std::string& to, std::string_view from) {
  if (to.size() != from.size() || (!from.empty() && std::memcmp(to.data(), from.data(), from.size()) != 0)) {
    to.clear();  // then append: cheaper than a general assign (no overlap to handle)
    to.append(from.data(), from.size());
  }
}

// A byte that continues a JSON string's plain run (not '"', '\\' or a control character).
LOOPCANARY_TOOL_HOT bool plain(char c) noexcept { return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20; }

// The first byte of [p, end) that is not plain, or end: 8 bytes per step where the byte order
// allows it. In each test word a byte's high bit marks a hit (a byte equal to '"' or '\\', or
// below 0x20); a borrow only reaches bytes above a true hit, so the lowest mark is exact.
LOOPCANARY_TOOL_HOT const char* plain_run(const char* p, const char* end) noexcept {
#if defined(__SSE2__)
  // 16 bytes per step: a byte equal to '"' or '\\', or at most 0x1F (max(v, 0x1F) == 0x1F).
  const __m128i quotes = _mm_set1_epi8('"');
  const __m128i backslashes = _mm_set1_epi8('\\');
  const __m128i controls = _mm_set1_epi8(0x1F);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hits = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quotes), _mm_cmpeq_epi8(v, backslashes)),
                                      _mm_cmpeq_epi8(_mm_max_epu8(v, controls), controls));
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(hits));
    if (mask != 0) return p + __builtin_ctz(mask);
    p += 16;
  }
#endif
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  while (end - p >= 8) {
    std::uint64_t v = 0;
    std::memcpy(&v, p, 8);
    const std::uint64_t quote = v ^ (kOnes * 0x22);
    const std::uint64_t backslash = v ^ (kOnes * 0x5C);
    const std::uint64_t hits =
        (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | ((v - kOnes * 0x20) & ~v)) & kHigh;
    if (hits != 0) return p + (__builtin_ctzll(hits) >> 3);
    p += 8;
  }
#endif
  while (p != end && plain(*p)) ++p;
  return p;
}

// A JSON scanner over one line. Every method returns false after recording the first fault.
class Scanner {
 public:
  Scanner(const char* data, std::size_t length) : begin_(data), p_(data), end_(data + length) {}

  WarningKind kind = WarningKind::malformed_json;
  std::string what;

  LOOPCANARY_TOOL_HOT void ws() noexcept {
    if (p_ != end_ && static_cast<unsigned char>(*p_) > ' ') return;  // no blank to skip
    skip_blanks();
  }
  bool at_end() noexcept {
    ws();
    return p_ == end_;
  }
  LOOPCANARY_TOOL_HOT char peek() noexcept {
    if (p_ != end_ && static_cast<unsigned char>(*p_) > ' ') return *p_;  // no blank to skip
    skip_blanks();
    return p_ == end_ ? '\0' : *p_;
  }

  bool malformed(const char* expected);
  bool wrong_type(const char* field, const char* expected);
  bool bad_value(const char* field, const std::string& why);

  // An object: calls on_key(key) positioned at the value; on_key must consume it. The key is a
  // view valid until on_key starts consuming the value.
  template <class OnKey>
  bool object(OnKey&& on_key) {
    if (peek() != '{') return malformed("expected '{'");
    ++p_;
    if (!enter()) return false;
    if (peek() == '}') {
      ++p_;
      --depth_;
      return true;
    }
    std::string escaped;  // a key with escapes, decoded
    for (;;) {
      if (peek() != '"') return malformed("expected a key string");
      std::string_view key;
      if (!view(key, escaped)) return false;
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

  // A string as a view: into the line when it has no escape, else decoded into `escaped`.
  LOOPCANARY_TOOL_HOT bool view(std::string_view& out, std::string& escaped) {
    if (p_ == end_ || *p_ != '"') return malformed("expected a string");
    const char* run = p_ + 1;
    const char* stop = plain_run(run, end_);
    if (stop != end_ && *stop == '"') {
      out = std::string_view(run, static_cast<std::size_t>(stop - run));
      p_ = stop + 1;
      return true;
    }
    if (!string(&escaped)) return false;
    out = escaped;
    return true;
  }

  // A string; out may be null (validated only).
  bool string(std::string* out);

  // A JSON number that must be a non-negative integer fitting 64 bits (every number of the
  // format is one). Plain digits are converted in one pass; anything else (a sign, a fraction,
  // an exponent, a value near the limit) takes the checking path.
  LOOPCANARY_TOOL_HOT bool u64(const char* field, std::uint64_t& out) {
    const char* q = p_;
    if (q != end_ && *q >= '0' && *q <= '9') {
      std::uint64_t value = static_cast<std::uint64_t>(*q++ - '0');
      bool simple = true;
      if (value != 0) {  // a leading 0 is the whole number (JSON)
        while (q != end_ && *q >= '0' && *q <= '9') {
          if (value >= 1000000000000000000ULL) {  // 19 digits: the checking path decides
            simple = false;
            break;
          }
          value = value * 10 + static_cast<std::uint64_t>(*q++ - '0');
        }
      }
      if (simple && (q == end_ || (*q != '.' && *q != 'e' && *q != 'E'))) {
        p_ = q;
        out = value;
        return true;
      }
    }
    return u64_checked(field, out);
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
    const char* run = p_ + 1;
    const char* stop = plain_run(run, end_);
    if (stop != end_ && *stop == '"') {  // no escape: copied as it is
      out.clear();
      out.append(run, static_cast<std::size_t>(stop - run));
      p_ = stop + 1;
      return true;
    }
    return string(&out);
  }

  // A string as a view (see view()), or a wrong_type fault.
  bool str_view(const char* field, std::string_view& out, std::string& escaped) {
    if (p_ == end_ || *p_ != '"') return wrong_type(field, "a string");
    return view(out, escaped);
  }

  // A string "0x<hex>" (how PCs and offsets print): 1 to 16 digits without escapes are
  // converted in one pass; anything else takes the checking path.
  LOOPCANARY_TOOL_HOT bool hex_string(const char* field, std::uint64_t& out, std::string& escaped) {
    const char* q = p_;
    if (end_ - q >= 4 && q[0] == '"' && q[1] == '0' && (q[2] == 'x' || q[2] == 'X')) {
      q += 3;
      const char* digits = q;
      std::uint64_t value = 0;
      while (q != end_ && q - digits < 17) {
        const std::int8_t digit = kHexDigit[static_cast<unsigned char>(*q)];
        if (digit < 0) break;
        value = value << 4 | static_cast<std::uint64_t>(digit);
        ++q;
      }
      if (q != end_ && *q == '"' && q != digits && q - digits <= 16) {
        p_ = q + 1;
        out = value;
        return true;
      }
    }
    return hex_string_checked(field, out, escaped);
  }

  bool hex_string_checked(const char* field, std::uint64_t& out, std::string& escaped);

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

  LOOPCANARY_TOOL_HOT bool is(char c) noexcept { return peek() == c; }

  // Any value, validated and dropped (unknown fields, values the caller does not keep).
  bool skip_value();

 private:
  void skip_blanks() noexcept {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }

  bool enter();

  template <std::size_t N>
  bool literal(const char (&word)[N]) noexcept {
    if (static_cast<std::size_t>(end_ - p_) < N - 1 || std::memcmp(p_, word, N - 1) != 0) return false;
    p_ += N - 1;
    return true;
  }

  bool number();

  // u64 for what the one-pass conversion leaves: validates the JSON number, then requires
  // plain digits within 64 bits.
  bool u64_checked(const char* field, std::uint64_t& out);

  bool hex4(std::uint32_t& out);

  static void utf8(std::uint32_t code, std::string& out);

  const char* begin_;
  const char* p_;
  const char* end_;
  int depth_ = 0;
};

}  // namespace loopcanary::tool::json
