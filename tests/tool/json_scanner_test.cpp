// SPDX-License-Identifier: MIT
// The tool's JSON scanner (sim/tool/json_scanner.hpp) on its own: keys and values handed over in
// order, the one-pass and the checked number paths agreeing, escapes decoded, and each fault
// reported once with its kind and column.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "json_scanner.hpp"

namespace loopcanary::tool::json {
namespace {

// A scanner over `text`, which must outlive it (a literal, or a string of the test).
Scanner scan(std::string_view text) { return Scanner(text.data(), text.size()); }

TEST(JsonScanner, HandsEveryKeyOverInOrderAndSkipsWhatTheCallerDoesNotRead) {
  const std::string line = R"({"a":1, "b" : {"x":[1,2,{"y":null}]}, "c":"three", "d":true})";
  Scanner s = scan(line);
  std::vector<std::string> keys;
  std::uint64_t a = 0;
  std::string c;
  const bool ok = s.object([&](std::string_view key) {
    keys.emplace_back(key);
    if (is(key, "a")) return s.u64("a", a);
    if (is(key, "c")) return s.str("c", c);
    return s.skip_value();
  });
  ASSERT_TRUE(ok) << s.what;
  EXPECT_TRUE(s.at_end());
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(c, "three");
}

TEST(JsonScanner, NumbersTakeTheSameValueOnTheFastAndTheCheckedPath) {
  // 19 digits and more leave the one-pass conversion; the checked path decides the range.
  for (const char* text : {"0", "7", "1000000000000000000", "18446744073709551615"}) {
    const std::string line = std::string("[") + text + "]";
    Scanner s = scan(line);
    std::uint64_t value = 1;
    ASSERT_TRUE(s.array([&](std::size_t) { return s.u64("n", value); })) << text << ": " << s.what;
    EXPECT_EQ(std::to_string(value), text);
  }
  std::uint64_t value = 0;
  Scanner over = scan("18446744073709551616");
  EXPECT_FALSE(over.u64("n", value));
  EXPECT_EQ(over.kind, WarningKind::wrong_type);
  EXPECT_EQ(over.what, "field \"n\": integer out of the 64-bit range");
  for (const char* text : {"-1", "1.5", "2e3"}) {
    Scanner s = scan(text);
    EXPECT_FALSE(s.u64("n", value)) << text;
    EXPECT_EQ(s.kind, WarningKind::wrong_type) << text;
    EXPECT_EQ(s.what, std::string("field \"n\": expected a non-negative integer, got ") + text);
  }
  std::optional<std::uint64_t> maybe = 3;
  Scanner null = scan("null");
  ASSERT_TRUE(null.u64_or_null("n", maybe));
  EXPECT_FALSE(maybe.has_value());
}

TEST(JsonScanner, HexStringsReadAsTheWritersPrintThem) {
  std::string escaped;
  std::uint64_t value = 0;
  Scanner fast = scan(R"("0xffffffffffffffff")");
  ASSERT_TRUE(fast.hex_string("pc", value, escaped));
  EXPECT_EQ(value, ~std::uint64_t{0});
  Scanner with_escape = scan(R"("0x1\u0030")");  // "0x10" with an escape: the checked path
  ASSERT_TRUE(with_escape.hex_string("pc", value, escaped)) << with_escape.what;
  EXPECT_EQ(value, 0x10u);
  for (const char* bad : {R"("0x")", R"("12")", R"("0x12345678901234567")", R"("0xg")"}) {
    Scanner s = scan(bad);
    EXPECT_FALSE(s.hex_string("pc", value, escaped)) << bad;
    EXPECT_EQ(s.kind, WarningKind::wrong_type) << bad;
    EXPECT_EQ(s.what.rfind("field \"pc\": expected \"0x<hex>\", got ", 0), 0u) << s.what;
  }
}

TEST(JsonScanner, StringsDecodeEveryEscapeAndSurrogatePairs) {
  Scanner s = scan(R"("q\" b\\ s\/ \b\f\n\r\t \u00e9 \ud83d\ude00 \ud800x")");
  std::string out;
  ASSERT_TRUE(s.str("s", out)) << s.what;
  EXPECT_EQ(out, "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xF0\x9F\x98\x80 \xEF\xBF\xBDx");
}

TEST(JsonScanner, EachFaultIsReportedOnceWithItsColumn) {
  struct Case {
    const char* line;
    WarningKind kind;
    const char* what;
  };
  const Case cases[] = {
      {R"({"a":1 "b":2})", WarningKind::malformed_json, "malformed JSON at column 8: expected ',' or '}'"},
      {R"({"b":"x)", WarningKind::malformed_json, "malformed JSON at column 8: unterminated string"},
      {"{\"b\":\"\x01\"}", WarningKind::malformed_json, "malformed JSON at column 7: control character in a string"},
      {R"({"b":"\q"})", WarningKind::malformed_json, "malformed JSON at column 8: bad escape in a string"},
      {R"({"a":)", WarningKind::malformed_json,
       "malformed JSON at column 6: the line ends where a value should be (truncated record)"},
      {R"({"a":"text"})", WarningKind::wrong_type, "field \"a\": expected a non-negative integer, got a string"},
  };
  for (const Case& c : cases) {
    Scanner s = scan(c.line);
    std::uint64_t value = 0;
    EXPECT_FALSE(s.object([&](std::string_view key) { return is(key, "a") ? s.u64("a", value) : s.skip_value(); }))
        << c.line;
    EXPECT_EQ(s.kind, c.kind) << c.line;
    EXPECT_EQ(s.what, c.what) << c.line;
  }
}

TEST(JsonScanner, NestingDeeperThanTheLimitIsRefused) {
  const std::string deep(static_cast<std::size_t>(kMaxJsonDepth) + 1, '[');
  Scanner s = scan(deep);
  EXPECT_FALSE(s.skip_value());
  EXPECT_EQ(s.kind, WarningKind::too_deep);
  const std::string limit(static_cast<std::size_t>(kMaxJsonDepth), '[');
  const std::string nested = limit + std::string(static_cast<std::size_t>(kMaxJsonDepth), ']');
  Scanner ok = scan(nested);
  EXPECT_TRUE(ok.skip_value()) << ok.what;
}

}  // namespace
}  // namespace loopcanary::tool::json
