// SPDX-License-Identifier: MIT
// The tool's command line and config files (sim/tool/options.cpp): every option reaches its
// field; each bad one is refused with a one-line error that names it.
#include <gtest/gtest.h>

#include "commands.hpp"
#include "test_util.hpp"

namespace loopcanary::tool {
namespace {

using test::TempDir;

bool parse(std::vector<std::string> args, Options& options, std::string& error) {
  bool help = false;
  return parse_command_line(args, options, help, error);
}

TEST(ToolOptions, EveryReportOptionReachesItsField) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse({"report", "a", "--by", "event", "--since=2026-01-01", "--until", "2026-02-01T10:00Z",
                     "--qualifier", "fw-1", "--event", "ota", "--cause", "waiting", "--min-ms", "12.5", "--top", "3",
                     "--format", "json", "--concern", "app::", "--ignore", "radio.", "b"},
                    o, error))
      << error;
  EXPECT_EQ(o.command, "report");
  EXPECT_EQ(o.paths, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o.by, GroupBy::event);
  std::int64_t ms = 0;
  ASSERT_TRUE(parse_utc_time("2026-01-01", ms));
  EXPECT_EQ(o.filter.since_ms, std::optional<std::int64_t>(ms));
  EXPECT_TRUE(o.filter.until_ms.has_value());
  EXPECT_EQ(o.filter.qualifiers, std::vector<std::string>{"fw-1"});
  EXPECT_EQ(o.filter.events, std::vector<std::string>{"ota"});
  EXPECT_EQ(o.filter.causes, std::vector<Cause>{Cause::waiting});
  EXPECT_EQ(o.filter.min_us, 12500u);
  EXPECT_EQ(o.top, 3u);
  EXPECT_EQ(o.format, "json");
  EXPECT_EQ(o.rules.concern, std::vector<std::string>{"app::"});
  EXPECT_EQ(o.rules.ignore, std::vector<std::string>{"radio."});
}

TEST(ToolOptions, BadCommandLinesNameTheOption) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "no subcommand"},
      {{"frobnicate", "x"}, "unknown subcommand \"frobnicate\""},
      {{"report", "x", "--bogus"}, "unknown option --bogus"},
      {{"report", "x", "-q"}, "unknown option -q"},
      {{"report", "x", "--by", "colour"}, "option --by: expected culprit"},
      {{"report", "x", "--by"}, "option --by needs a value"},
      {{"report", "x", "--min-ms", "-1"}, "option --min-ms: expected a duration"},
      {{"report", "x", "--top", "0"}, "option --top: expected a positive integer"},
      {{"report", "x", "--since", "yesterday"}, "option --since: expected a UTC time"},
      {{"report", "x", "--cause", "lazy"}, "option --cause: expected running"},
      {{"report", "x", "--format", "html"}, "option --format: expected text or json for report"},
      {{"report", "x", "--id", "abcdef"}, "option --id does not apply to report"},
      {{"report", "--by", "event"}, "report: no PATH given"},
      {{"show", "x"}, "option --id: show needs --id"},
      {{"export", "x"}, "option --format: export needs --format"},
      {{"export", "x", "--format", "svg"}, "option --format: expected folded, chrome, html or pprof"},
      {{"symbolize", "x", "--elf", "a", "--debug-dir", "d"}, "option --elf: give --elf or --debug-dir, not both"},
      {{"symbolize", "x", "--by", "event"}, "option --by does not apply to symbolize"},
  };
  for (const auto& [args, expected] : cases) {
    Options o;
    std::string error;
    EXPECT_FALSE(parse(args, o, error)) << expected;
    EXPECT_EQ(error.compare(0, expected.size(), expected), 0) << "got: " << error << "\nexpected: " << expected;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(ToolOptions, HelpWinsOverEverythingElse) {
  Options o;
  bool help = false;
  std::string error;
  EXPECT_TRUE(parse_command_line({"report", "--bogus", "--help"}, o, help, error));
  EXPECT_TRUE(help);
}

TEST(ToolOptions, AConfigFileSetsOptionsAndTheCommandLineAddsToThem) {
  TempDir dir;
  const std::string config = dir.write("lc.conf",
                                       "# loopcanary settings\n"
                                       "concern = app::\n"
                                       "\n"
                                       "ignore = radio.   # the radio's own waits\n"
                                       "by = cause\n"
                                       "min-ms = 150\n");
  Options o;
  std::string error;
  ASSERT_TRUE(parse({"report", "logs", "--config", config, "--by", "event", "--concern", "lib::"}, o, error)) << error;
  EXPECT_EQ(o.rules.concern, (std::vector<std::string>{"app::", "lib::"}));
  EXPECT_EQ(o.rules.ignore, std::vector<std::string>{"radio."});
  EXPECT_EQ(o.by, GroupBy::event);  // given after --config
  EXPECT_EQ(o.filter.min_us, 150000u);
}

TEST(ToolOptions, ConfigErrorsNameFileAndLine) {
  TempDir dir;
  const std::string unknown = dir.write("unknown.conf", "by = event\ncolour = blue\n");
  const std::string bad_value = dir.write("bad.conf", "\n\ntop = many\n");
  const std::string no_equals = dir.write("noeq.conf", "concern app::\n");
  Options o;
  std::string error;
  EXPECT_FALSE(parse({"report", "x", "--config", unknown}, o, error));
  EXPECT_EQ(error, unknown + ":2: unknown key \"colour\"");
  EXPECT_FALSE(parse({"report", "x", "--config", bad_value}, o, error));
  EXPECT_EQ(error, bad_value + ":3: top: expected a positive integer, got \"many\"");
  EXPECT_FALSE(parse({"report", "x", "--config", no_equals}, o, error));
  EXPECT_EQ(error, no_equals + ":1: expected `key = value`");
  EXPECT_FALSE(parse({"report", "x", "--config", dir.path() + "/missing.conf"}, o, error));
  EXPECT_EQ(error.rfind(dir.path() + "/missing.conf: cannot open the config file", 0), 0u) << error;
}

}  // namespace
}  // namespace loopcanary::tool
