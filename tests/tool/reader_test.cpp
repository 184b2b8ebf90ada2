// SPDX-License-Identifier: MIT
// The tool's reader (sim/tool/reader.cpp): fields picked from real-format records, the Linux
// extension merged into PC frames, and every fault of the input as one warning with file:line,
// counted, without stopping the read.
#include <gtest/gtest.h>

#include <sstream>

#include "test_util.hpp"

namespace loopcanary::tool {
namespace {

using test::fixture;
using test::json_line;
using test::RecordSpec;
using test::TempDir;

std::vector<LogRecord> read_all(Reader& reader, const std::string& path) {
  std::vector<LogRecord> records;
  reader.read_path(path, [&](const LogRecord& r) { records.push_back(r); });
  return records;
}

TEST(ToolReader, PicksTheFieldsOfValidRecords) {
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records = read_all(reader, fixture("valid.jsonl"));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(warnings.str(), "");
  const LogRecord& first = records[0];
  EXPECT_EQ(first.phase, Phase::in_progress);
  EXPECT_EQ(first.report, 1u);
  EXPECT_EQ(first.dispatch, 5u);
  EXPECT_EQ(first.duration_us, 150000u);
  EXPECT_EQ(first.threshold_us, 100000u);
  EXPECT_EQ(first.cause, Cause::running);
  EXPECT_EQ(first.loop, "main");
  EXPECT_EQ(first.qualifier, "fw-1.0");
  EXPECT_EQ(first.line, 1u);
  EXPECT_EQ(first.file, fixture("valid.jsonl"));
  EXPECT_FALSE(first.cpu_thread_wait_us.has_value());  // null in the record
  ASSERT_TRUE(first.cpu_thread_us.has_value());
  EXPECT_EQ(*first.cpu_thread_us, 80000u);
  ASSERT_EQ(first.stacks.size(), 2u);
  EXPECT_EQ(first.stacks[0].at_us, 30000u);
  ASSERT_EQ(first.stacks[0].frames.size(), 3u);  // scopes crc < verify, then one PC
  EXPECT_EQ(first.stacks[0].frames[0].scope, "crc");
  EXPECT_EQ(first.stacks[0].frames[1].scope, "verify");
  EXPECT_EQ(first.samples_taken, 2u);
  EXPECT_EQ(records[1].phase, Phase::final);
  EXPECT_EQ(records[2].cause, Cause::waiting);
  EXPECT_EQ(reader.stats().records, 3u);
  EXPECT_EQ(reader.stats().lines, 3u);
  EXPECT_EQ(reader.stats().warnings_total(), 0u);
}

TEST(ToolReader, MergesTheLinuxFramesIntoPcFrames) {
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records = read_all(reader, fixture("valid.jsonl"));
  ASSERT_FALSE(records.empty());
  const Frame& pc = records[0].stacks[0].frames[2];
  EXPECT_FALSE(pc.is_scope());
  EXPECT_EQ(pc.pc, 0x1234u);
  EXPECT_EQ(pc.function, "fw::crc32(unsigned int)");
  EXPECT_EQ(pc.function_offset, 0x10u);
  EXPECT_EQ(pc.module, "/opt/fw/thermostat");
  EXPECT_EQ(pc.build_id, "abcd");
  EXPECT_EQ(pc.module_offset, 0x234u);
  EXPECT_EQ(pc.label(), "fw::crc32(unsigned int)");
  ASSERT_TRUE(records[0].wall_ms.has_value());
  std::int64_t expected = 0;
  ASSERT_TRUE(parse_utc_time("2026-01-02T03:04:05.678Z", expected));
  EXPECT_EQ(*records[0].wall_ms, expected);
  EXPECT_EQ(records[0].clock, "monotonic");
}

// A device record after `loopcanary symbolize --elf`: "symbols"."frames" (docs/tool.md) names
// the function and source position of its PCs, which then label its PC frames and make the
// culprit; a PC the member does not list stays bare.
TEST(ToolReader, MergesTheSymbolsFramesOfADeviceRecordIntoPcFrames) {
  TempDir dir;
  RecordSpec spec;
  spec.stacks = "{\"at_us\":10,\"pcs\":[\"0x8000140\",\"0x8000200\"]},{\"at_us\":20,\"pcs\":[\"0x8000140\"]}";
  spec.extra =
      ",\"symbols\":{\"frames\":[{\"pc\":\"0x8000140\",\"module\":\"fw.elf\",\"build_id\":\"\","
      "\"offset\":\"0x8000140\",\"function\":\"ota_crc32\",\"file\":\"src/ota.c\",\"line\":42,"
      "\"inlined\":[{\"function\":\"crc_step\",\"file\":\"src/crc.h\",\"line\":7}]}]}";
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records = read_all(reader, dir.write("device.jsonl", json_line(spec)));
  ASSERT_EQ(records.size(), 1u) << warnings.str();
  EXPECT_EQ(warnings.str(), "");
  const LogRecord& r = records[0];
  ASSERT_EQ(r.stacks.size(), 2u);
  ASSERT_EQ(r.stacks[0].frames.size(), 2u);
  const Frame& symbolised = r.stacks[0].frames[0];
  EXPECT_EQ(symbolised.pc, 0x8000140u);
  EXPECT_EQ(symbolised.function, "ota_crc32");
  EXPECT_EQ(symbolised.file, "src/ota.c");
  EXPECT_EQ(symbolised.line, 42u);
  EXPECT_EQ(symbolised.module, "fw.elf");
  EXPECT_EQ(symbolised.module_offset, 0x8000140u);
  EXPECT_EQ(symbolised.label(), "ota_crc32");
  EXPECT_EQ(r.stacks[1].frames[0].function, "ota_crc32");
  const Frame& bare = r.stacks[0].frames[1];
  EXPECT_EQ(bare.pc, 0x8000200u);
  EXPECT_EQ(bare.function, "");
  EXPECT_EQ(bare.label(), "0x8000200");
  EXPECT_FALSE(r.has_linux);
  const Culprit c = block_culprit(r, {});
  EXPECT_EQ(c.label, "ota_crc32");
  EXPECT_EQ(c.samples, 2u);
  EXPECT_EQ(c.of, 2u);
  EXPECT_EQ(c.frame.file, "src/ota.c");
}

// The same checks on "symbols"."frames" as on "linux"."frames": a malformed entry is a
// wrong-type warning naming the member.
TEST(ToolReader, ABadSymbolsFramesEntryIsAWarning) {
  TempDir dir;
  RecordSpec spec;
  spec.extra = ",\"symbols\":{\"frames\":[{\"pc\":\"0x10\",\"line\":\"seven\"}]}";
  const std::string bad_line = json_line(spec);
  spec.extra = ",\"symbols\":{\"frames\":[{\"function\":\"f\"}]}";
  const std::string no_pc = json_line(spec);
  spec.extra = ",\"symbols\":[]";
  const std::string not_object = json_line(spec);
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::string path = dir.write("bad_symbols.jsonl", bad_line + no_pc + not_object);
  EXPECT_EQ(read_all(reader, path).size(), 0u);
  EXPECT_EQ(warnings.str(),
            path + ":1: field \"symbols.frames.line\": expected a non-negative integer, got a string\n" + path +
                ":2: field \"symbols.frames\": an entry without \"pc\"\n" + path +
                ":3: field \"symbols\": expected an object, got an array\n");
  EXPECT_EQ(reader.stats().warnings_of(WarningKind::wrong_type), 3u);
}

TEST(ToolReader, DecodesEscapesAndIgnoresUnknownFields) {
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records = read_all(reader, fixture("valid.jsonl"));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2].event, "e\xC3\xA9\"x");  // "e\u00e9\"x": é in UTF-8, an escaped quote
  EXPECT_EQ(warnings.str(), "");                // "future_field" and cpu.future_cpu: silent
}

TEST(ToolReader, FrameLabelFallsBackFromFunctionToScopeToModuleToPc) {
  Frame f;
  f.pc = 0xabc;
  EXPECT_EQ(f.label(), "0xabc");
  f.module = "/lib/libfoo.so";
  f.module_offset = 0x10;
  EXPECT_EQ(f.label(), "libfoo.so+0x10");
  f.function = "foo()";
  EXPECT_EQ(f.label(), "foo()");
  Frame scope;
  scope.scope = "ota.crc32";
  EXPECT_EQ(scope.label(), "ota.crc32");
}

// Each fault line of fixtures/faults.jsonl, with the warning it gives.
TEST(ToolReader, EveryFaultIsOneWarningWithFileAndLine) {
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::string file = fixture("faults.jsonl");
  const std::vector<LogRecord> records = read_all(reader, file);
  ASSERT_EQ(records.size(), 2u);  // lines 1 and 7
  EXPECT_EQ(records[0].line, 1u);
  EXPECT_EQ(records[1].line, 7u);
  const std::vector<std::string> expected = {
      file + ":2: malformed JSON at column 1: expected '{'",
      file + ":3: field \"dispatch\": expected a non-negative integer, got a string",
      file + ":4: missing field loop",
      file + ":5: format_version 3 is unknown (this reader reads versions 1 to 2)",
      file + ":6: nesting deeper than 64 levels",
      file + ":8: malformed JSON at column 41: the line ends where a value should be (truncated record)",
      file + ":9: field \"duration_us\": expected a non-negative integer, got -3",
      file + ":10: field \"phase\": unknown value \"done\"",
      file + ":11: field \"stacks.at_us\": expected a non-negative integer, got 1.5",
      file + ":12: malformed JSON at column",  // bytes after the object
      file + ":13: malformed JSON at column",  // bad escape
      file + ":14: the file ends inside a line (70 bytes without a newline): torn last record skipped",
  };
  std::istringstream lines(warnings.str());
  std::string line;
  std::size_t i = 0;
  while (std::getline(lines, line)) {
    ASSERT_LT(i, expected.size()) << line;
    EXPECT_EQ(line.compare(0, expected[i].size(), expected[i]), 0) << "got:      " << line << "\nexpected: " << expected[i];
    ++i;
  }
  EXPECT_EQ(i, expected.size());
  EXPECT_NE(warnings.str().find(":12: malformed JSON at column 642: bytes after the object"), std::string::npos);
  EXPECT_NE(warnings.str().find(":13: malformed JSON at column 92: bad escape in a string"), std::string::npos);
  const ReadStats& s = reader.stats();
  EXPECT_EQ(s.lines, 14u);
  EXPECT_EQ(s.records, 2u);
  EXPECT_EQ(s.warnings_of(WarningKind::malformed_json), 4u);
  EXPECT_EQ(s.warnings_of(WarningKind::wrong_type), 4u);
  EXPECT_EQ(s.warnings_of(WarningKind::missing_field), 1u);
  EXPECT_EQ(s.warnings_of(WarningKind::unknown_version), 1u);
  EXPECT_EQ(s.warnings_of(WarningKind::too_deep), 1u);
  EXPECT_EQ(s.warnings_of(WarningKind::torn_tail), 1u);
  EXPECT_EQ(s.warnings_total(), 12u);
}

// A value the warning quotes holds control characters (escaped in the JSON: a newline, CR, NUL):
// the warning shows them escaped and stays one line, so a log cannot forge warning lines
// (fixtures/control_characters.jsonl; its first line is an input the fuzz target jsonl found).
TEST(ToolReader, QuotedValuesAreEscapedSoEachWarningIsOneLine) {
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::string file = fixture("control_characters.jsonl");
  EXPECT_TRUE(read_all(reader, file).empty());
  const std::vector<std::string> expected = {
      file + ":1: field \"cause\": unknown value \"\\u000a\"",
      file + ":2: field \"phase\": unknown value \"final\\u000afake.jsonl:1: a line the log wrote\"",
      file + ":3: field \"stacks.pcs\": expected \"0x<hex>\", got \"0x\\u000d\\u000a1\"",
      file + ":4: field \"linux.time\": not an ISO-8601 UTC time: \"2026-01-02\\u000003:04:05Z\"",
  };
  std::istringstream lines(warnings.str());
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) got.push_back(line);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(reader.stats().warnings_of(WarningKind::wrong_type), 4u);
}

TEST(ToolReader, DepthSixtyFourIsReadSixtyFiveIsNot) {
  TempDir dir;
  RecordSpec spec;
  // The record's object is level 1: an unknown field holding 63 nested arrays reaches 64.
  spec.extra = ",\"x\":" + std::string(63, '[') + std::string(63, ']');
  const std::string ok = json_line(spec);
  spec.extra = ",\"x\":" + std::string(64, '[') + std::string(64, ']');
  const std::string deep = json_line(spec);
  std::ostringstream warnings;
  Reader reader(warnings);
  EXPECT_EQ(read_all(reader, dir.write("depth.jsonl", ok + deep)).size(), 1u);
  EXPECT_EQ(reader.stats().warnings_of(WarningKind::too_deep), 1u);
  EXPECT_NE(warnings.str().find("depth.jsonl:2: nesting deeper than 64 levels"), std::string::npos) << warnings.str();
}

// A 10 MB line between two records: skipped with one warning, never buffered whole, and the
// records around it are read.
TEST(ToolReader, ATenMegabyteLineIsSkippedWithAWarning) {
  TempDir dir;
  const std::string huge = "{\"x\":\"" + std::string(10u << 20, 'a') + "\"}\n";
  RecordSpec second;
  second.dispatch = 6;
  const std::string path = dir.write("long.jsonl", json_line(RecordSpec{}) + huge + json_line(second));
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records = read_all(reader, path);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].line, 3u);
  EXPECT_EQ(warnings.str(), path + ":2: line of " + std::to_string(huge.size() - 1) +
                                " bytes is longer than the limit of 1048576 bytes: skipped\n");
  EXPECT_EQ(reader.stats().warnings_of(WarningKind::too_long), 1u);
}

TEST(ToolReader, TheLineLimitIsInclusive) {
  TempDir dir;
  ReaderOptions options;
  options.max_line_bytes = 4096;
  RecordSpec spec;
  const std::size_t base = json_line(spec).size() - 1;  // without the newline
  // Pad with an unknown string field to exactly the limit, then one byte over.
  const std::string pad_field = ",\"pad\":\"\"";
  spec.extra = ",\"pad\":\"" + std::string(4096 - base - pad_field.size(), 'p') + "\"";
  const std::string at_limit = json_line(spec);
  ASSERT_EQ(at_limit.size() - 1, 4096u);
  spec.extra.insert(spec.extra.size() - 1, "p");
  const std::string over = json_line(spec);
  std::ostringstream warnings;
  Reader reader(warnings, options);
  EXPECT_EQ(read_all(reader, dir.write("limit.jsonl", at_limit + over)).size(), 1u);
  EXPECT_EQ(reader.stats().warnings_of(WarningKind::too_long), 1u);
  EXPECT_NE(warnings.str().find("limit.jsonl:2: line of 4097 bytes"), std::string::npos) << warnings.str();
}

TEST(ToolReader, AMissingPathIsUnreadable) {
  std::ostringstream warnings;
  Reader reader(warnings);
  EXPECT_FALSE(reader.read_path(fixture("no-such-file.jsonl"), nullptr));
  EXPECT_EQ(warnings.str(), fixture("no-such-file.jsonl") + ": cannot read: No such file or directory\n");
  EXPECT_EQ(reader.stats().warnings_of(WarningKind::unreadable), 1u);
}

TEST(ToolReader, WarningsBeyondTheLimitAreCountedNotPrinted) {
  TempDir dir;
  std::string garbage;
  for (int i = 0; i < 30; ++i) garbage += "garbage\n";
  ReaderOptions options;
  options.max_printed_per_kind = 20;
  std::ostringstream warnings;
  Reader reader(warnings, options);
  reader.read_path(dir.write("g.jsonl", garbage), nullptr);
  EXPECT_EQ(reader.stats().warnings_of(WarningKind::malformed_json), 30u);
  std::size_t lines = 0;
  for (char c : warnings.str()) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 21u);  // 20 warnings and the line that says the rest are counted
  EXPECT_NE(warnings.str().find("g.jsonl:21: more malformed JSON warnings in this file are counted, not printed"),
            std::string::npos)
      << warnings.str();
}

// "stages" (docs/report-format.md): names and µs in order; an empty name reads as "?", members
// of a newer writer inside an entry are ignored.
TEST(ToolReader, ReadsTheStagesOfARecord) {
  TempDir dir;
  RecordSpec spec;
  spec.extra = ",\"stages\":[{\"name\":\"input\",\"us\":1500},{\"us\":180000,\"name\":\"compute\",\"future\":[1]},"
               "{\"name\":\"\",\"us\":0}]";
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records = read_all(reader, dir.write("stages.jsonl", json_line(spec)));
  EXPECT_EQ(warnings.str(), "");
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(records[0].stages.size(), 3u);
  EXPECT_EQ(records[0].stages[0].name, "input");
  EXPECT_EQ(records[0].stages[0].us, 1500u);
  EXPECT_EQ(records[0].stages[1].name, "compute");
  EXPECT_EQ(records[0].stages[1].us, 180000u);
  EXPECT_EQ(records[0].stages[2].name, "?");
  EXPECT_EQ(records[0].stages[2].us, 0u);
}

// A line without "stages" (a log written before stages) and a line with "stages":[] read as no
// stages, also right after a line with stages (the reader reuses its record).
TEST(ToolReader, ALineWithoutStagesHasNone) {
  TempDir dir;
  RecordSpec with, without, empty;
  with.extra = ",\"stages\":[{\"name\":\"input\",\"us\":1500}]";
  without.report = 2;
  empty.report = 3;
  empty.extra = ",\"stages\":[]";
  std::ostringstream warnings;
  Reader reader(warnings);
  std::vector<std::size_t> counts;
  reader.read_path(dir.write("mixed.jsonl", json_line(with) + json_line(without) + json_line(with) + json_line(empty)),
                   [&](const LogRecord& r) { counts.push_back(r.stages.size()); });
  EXPECT_EQ(warnings.str(), "");
  EXPECT_EQ(counts, (std::vector<std::size_t>{1, 0, 1, 0}));
}

// A file of one line per case, each a record whose member `member` has the case's value, then a
// good record: each case is one warning (its text after file and line), the good record is read.
// Returns the wrong-type warnings counted.
std::uint64_t expect_member_warnings(TempDir& dir, const std::string& member,
                                     const std::vector<std::pair<std::string, std::string>>& cases) {
  std::string content;
  std::string expected;
  const std::string path = dir.path() + "/bad_" + member + ".jsonl";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    RecordSpec spec;
    spec.report = i + 1;
    spec.extra = ",\"" + member + "\":" + cases[i].first;
    content += json_line(spec);
    expected += path + ":" + std::to_string(i + 1) + ": " + cases[i].second + "\n";
  }
  RecordSpec good;
  good.report = 99;
  content += json_line(good);
  dir.write("bad_" + member + ".jsonl", content);
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records = read_all(reader, path);
  EXPECT_EQ(warnings.str(), expected);
  EXPECT_EQ(records.size(), 1u);
  if (!records.empty()) {
    EXPECT_EQ(records[0].report, 99u);
  }
  return reader.stats().warnings_of(WarningKind::wrong_type);
}

// A malformed "stages" member skips its record with a wrong-type warning naming the member, with
// file and line, as any malformed member; the next line is read.
TEST(ToolReader, AMalformedStagesMemberIsAWarningWithFileAndLine) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{}", "field \"stages\": expected an array, got an object"},
      {"[1]", "field \"stages\": expected an object, got a number"},
      {"[{\"name\":1,\"us\":2}]", "field \"stages.name\": expected a string, got a number"},
      {"[{\"name\":\"a\",\"us\":\"2\"}]", "field \"stages.us\": expected a non-negative integer, got a string"},
      {"[{\"name\":\"a\",\"us\":-2}]", "field \"stages.us\": expected a non-negative integer, got -2"},
      {"[{\"name\":\"a\",\"us\":1.5}]", "field \"stages.us\": expected a non-negative integer, got 1.5"},
      {"[{\"us\":2}]", "field \"stages\": an entry without \"name\""},
      {"[{\"name\":\"a\"}]", "field \"stages\": an entry without \"us\""},
  };
  EXPECT_EQ(expect_member_warnings(dir, "stages", cases), cases.size());
}

// The "wait" member: each object with its holder, the holder's PCs symbolised by "linux"."frames"
// as the stacks' are; a line without "wait" after it has none (the reader reuses its record).
TEST(ToolReader, ReadsTheWaitObjectsAndSymbolisesTheHolderStack) {
  TempDir dir;
  RecordSpec with, without;
  with.extra = ",\"wait\":{\"other\":2,\"objects\":[{\"kind\":\"mutex\",\"samples\":5,\"address\":\"0x7f00a0\","
               "\"fd\":null,\"value\":0,\"text\":\"\",\"owner\":{\"tid\":4242,\"name\":\"journal\",\"loop\":null,"
               "\"scopes\":[],\"pcs\":[\"0x401000\",\"0x401234\"]}},{\"kind\":\"pipe\",\"samples\":1,\"address\":\"0x0\","
               "\"fd\":5,\"value\":0,\"text\":\"pipe:[81234]\",\"owner\":null,\"future\":1}]},"
               "\"linux\":{\"frames\":[{\"pc\":\"0x401000\",\"function\":\"journal_flush\",\"function_offset\":\"0x10\"}]}";
  without.report = 2;
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records =
      read_all(reader, dir.write("waits.jsonl", json_line(with) + json_line(without)));
  EXPECT_EQ(warnings.str(), "");
  ASSERT_EQ(records.size(), 2u);
  const WaitSummary& wait = records[0].wait;
  EXPECT_EQ(wait.other, 2u);
  ASSERT_EQ(wait.objects.size(), 2u);
  EXPECT_EQ(wait.objects[0].kind, WaitKind::mutex);
  EXPECT_EQ(wait.objects[0].samples, 5u);
  EXPECT_EQ(wait.objects[0].address, 0x7f00a0u);
  EXPECT_FALSE(wait.objects[0].fd.has_value());
  ASSERT_TRUE(wait.objects[0].owner.has_value());
  const WaitHolder& holder = *wait.objects[0].owner;
  EXPECT_EQ(holder.tid, 4242u);
  EXPECT_EQ(holder.name, "journal");
  EXPECT_FALSE(holder.loop.has_value());
  ASSERT_EQ(holder.frames.size(), 2u);
  EXPECT_EQ(holder.frames[0].function, "journal_flush");
  EXPECT_EQ(holder.frames[0].function_offset, 0x10u);
  EXPECT_EQ(holder.frames[1].pc, 0x401234u);
  EXPECT_EQ(holder.frames[1].function, "");
  EXPECT_EQ(wait_text(wait.objects[0]), "mutex 0x7f00a0 held by 'journal' (tid 4242)");
  EXPECT_EQ(wait.objects[1].kind, WaitKind::pipe);
  EXPECT_EQ(wait.objects[1].fd, std::optional<std::uint64_t>(5));
  EXPECT_FALSE(wait.objects[1].owner.has_value());
  EXPECT_EQ(wait_text(wait.objects[1]), "pipe fd 5 pipe:[81234]");
  EXPECT_TRUE(records[1].wait.empty());
}

// A malformed "wait" member skips its record with a warning naming the member, with file and
// line, as any malformed member; the next line is read.
TEST(ToolReader, AMalformedWaitMemberIsAWarningWithFileAndLine) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", "field \"wait\": expected an object, got an array"},
      {"{\"objects\":{}}", "field \"wait.objects\": expected an array, got an object"},
      {"{\"other\":-1}", "field \"wait.other\": expected a non-negative integer, got -1"},
      {"{\"objects\":[{\"kind\":\"lock\",\"samples\":1}]}", "field \"wait.objects.kind\": unknown value \"lock\""},
      {"{\"objects\":[{\"samples\":1}]}", "field \"wait.objects\": an entry without \"kind\""},
      {"{\"objects\":[{\"kind\":\"sleep\"}]}", "field \"wait.objects\": an entry without \"samples\""},
      {"{\"objects\":[{\"kind\":\"file\",\"samples\":1,\"fd\":\"3\"}]}",
       "field \"wait.objects.fd\": expected a non-negative integer, got a string"},
      {"{\"objects\":[{\"kind\":\"mutex\",\"samples\":1,\"owner\":{\"name\":\"x\"}}]}",
       "field \"wait.objects.owner\": an object without \"tid\""},
      {"{\"objects\":[{\"kind\":\"mutex\",\"samples\":1,\"owner\":{\"tid\":1,\"pcs\":[1]}}]}",
       "field \"wait.objects.owner.pcs\": expected a string, got a number"},
  };
  expect_member_warnings(dir, "wait", cases);
}

TEST(ToolReader, CrLfAndBlankLinesAreAccepted) {
  TempDir dir;
  std::string line = json_line(RecordSpec{});
  line.insert(line.size() - 1, "\r");
  std::ostringstream warnings;
  Reader reader(warnings);
  EXPECT_EQ(read_all(reader, dir.write("crlf.jsonl", "\n" + line + "  \n")).size(), 1u);
  EXPECT_EQ(warnings.str(), "");
}

TEST(ToolReader, ADirectoryIsReadOldestRotationFirstCurrentLast) {
  TempDir dir;
  RecordSpec a, b, c;
  a.report = 1;
  b.report = 2;
  c.report = 3;
  // Serial 10 is newer than serial 9 (numeric, not by name); the current file comes last.
  dir.write("dev.jsonl", json_line(c));
  dir.write("dev.20260101T000000Z-000010.jsonl", json_line(b));
  dir.write("dev.20260101T000000Z-9.jsonl", json_line(a));
  dir.write("dev.log", "not read\n");
  const std::vector<std::string> files = Reader::list_logs(dir.path());
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0], dir.path() + "/dev.20260101T000000Z-9.jsonl");
  EXPECT_EQ(files[1], dir.path() + "/dev.20260101T000000Z-000010.jsonl");
  EXPECT_EQ(files[2], dir.path() + "/dev.jsonl");
  std::ostringstream warnings;
  Reader reader(warnings);
  const std::vector<LogRecord> records = read_all(reader, dir.path());
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].report, 1u);
  EXPECT_EQ(records[2].report, 3u);
  EXPECT_EQ(records[0].source, dir.path() + "/dev.jsonl");  // rotated files belong to the current log
  EXPECT_EQ(warnings.str(), "");
}

TEST(ToolReader, LogSourceRemovesOnlyARotationSuffix) {
  EXPECT_EQ(log_source("d/x.20260101T101010Z-000003.jsonl"), "d/x.jsonl");
  EXPECT_EQ(log_source("d/x.jsonl"), "d/x.jsonl");
  EXPECT_EQ(log_source("d/x.2026-3.jsonl"), "d/x.2026-3.jsonl");
  EXPECT_EQ(log_source("notes.txt"), "notes.txt");
}

TEST(ToolReader, UtcTimesParseAndFormat) {
  std::int64_t ms = 0;
  ASSERT_TRUE(parse_utc_time("1970-01-02T00:00:00Z", ms));
  EXPECT_EQ(ms, 86'400'000);
  ASSERT_TRUE(parse_utc_time("2000-03-01T00:00:00.5Z", ms));
  EXPECT_EQ(ms, 951'868'800'500);  // 11017 days after the epoch
  EXPECT_EQ(format_utc_time(951'868'800'500), "2000-03-01T00:00:00.500Z");
  ASSERT_TRUE(parse_utc_time("2000-03-01", ms));
  EXPECT_EQ(ms, 951'868'800'000);
  EXPECT_FALSE(parse_utc_time("2000-13-01", ms));
  EXPECT_FALSE(parse_utc_time("yesterday", ms));
}

}  // namespace
}  // namespace loopcanary::tool
