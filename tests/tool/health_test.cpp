// SPDX-License-Identifier: MIT
// Health records and deadline misses in the tool: the reader keeps health lines apart from block
// records and warns about unknown kinds (with file and line); deadline-miss records are not
// blocks and `report` lists them per event with the delaying culprit; `loopcanary health` prints
// each loop's time series (text and JSON), its filters and its exit status.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "commands.hpp"
#include "health_series.hpp"
#include "packet_builder.hpp"
#include "test_util.hpp"

namespace loopcanary::tool {
namespace {

using test::health_line;
using test::health_record;
using test::HealthSpecJson;
using test::json_line;
using test::RecordSpec;
using test::TempDir;
using test::operator+;

constexpr loopcanary::Event kTick{"tick", 0};
constexpr loopcanary::Event kDisplay{"display", 0};

struct Read {
  std::vector<LogRecord> blocks;
  std::vector<HealthLog> health;
  std::string warnings;
  ReadStats stats;
};

Read read(const std::string& path) {
  Read r;
  std::ostringstream warnings;
  Reader reader(warnings);
  reader.set_health_callback([&](HealthLog& h) { r.health.push_back(h); });
  reader.read_path(path, [&](const LogRecord& b) { r.blocks.push_back(b); });
  r.warnings = warnings.str();
  r.stats = reader.stats();
  return r;
}

TEST(ToolHealthReader, HealthLinesAreHealthRecordsNotBlocks) {
  TempDir dir;
  HealthSpecJson spec;
  spec.number = 7, spec.start = 5000000, spec.event = &kTick, spec.p99 = 1500, spec.misses = 2, spec.missed_periods = 3;
  const loopcanary::HealthRecord h = health_record(spec);
  RecordSpec a, b;
  b.report = 2, b.dispatch = 6, b.start = 9000000;
  const std::string path = dir.write("dev.jsonl", json_line(a) + health_line(h) + json_line(b));
  const Read r = read(path);
  EXPECT_EQ(r.warnings, "");
  ASSERT_EQ(r.blocks.size(), 2u);
  EXPECT_EQ(r.blocks[1].report, 2u);
  ASSERT_EQ(r.health.size(), 1u);
  const HealthLog& g = r.health[0];
  EXPECT_EQ(g.number, 7u);
  EXPECT_EQ(g.loop, "main");
  EXPECT_EQ(g.qualifier, "fw-1.0");
  EXPECT_EQ(g.start, 5000000u);
  EXPECT_EQ(g.end, 6000000u);
  EXPECT_EQ(g.window_us, 1000000u);
  EXPECT_EQ(g.dispatches, 500u);
  EXPECT_EQ(g.rate_mhz, loopcanary::rate_mhz(500, 1000000, 1000000));
  EXPECT_EQ(g.load_permille, loopcanary::share_permille(250000, 1000000));
  ASSERT_TRUE(g.idle_permille.has_value());
  EXPECT_EQ(*g.idle_permille, loopcanary::share_permille(700000, 1000000));
  ASSERT_EQ(g.events.size(), 1u);
  EXPECT_EQ(g.events[0].event, "tick");
  EXPECT_EQ(g.events[0].p99_us, 1500u);
  EXPECT_EQ(g.events[0].p95_us, 750u);
  EXPECT_EQ(g.events[0].deadline_misses, 2u);
  EXPECT_EQ(g.events[0].missed_periods, 3u);
  EXPECT_EQ(g.events[0].period_us, 10000u);
  EXPECT_EQ(g.line, 2u);
  EXPECT_EQ(g.file, path);
  EXPECT_EQ(r.stats.records, 3u);
  EXPECT_EQ(r.stats.health_records, 1u);
  // Without a health callback they are counted, never passed to the block callback.
  std::ostringstream warnings;
  Reader reader(warnings);
  std::size_t blocks = 0;
  reader.read_path(path, [&](const LogRecord&) { ++blocks; });
  EXPECT_EQ(blocks, 2u);
  EXPECT_EQ(reader.stats().health_records, 1u);
}

TEST(ToolHealthReader, AKindMemberAnywhereOnTheLineDecidesTheKind) {
  TempDir dir;
  const std::string path = dir.write(
      "dev.jsonl", "{\"number\":3,\"loop\":\"main\",\"end\":5,\"window_us\":5,\"kind\":\"health\",\"idle_us\":null}\n");
  const Read r = read(path);
  EXPECT_EQ(r.warnings, "");
  ASSERT_EQ(r.health.size(), 1u);
  EXPECT_EQ(r.health[0].number, 3u);
  EXPECT_FALSE(r.health[0].idle_us.has_value());
  EXPECT_TRUE(r.blocks.empty());
  // parse_record alone refuses a health line: it is not a block record.
  LogRecord block;
  WarningKind kind{};
  std::string what;
  const std::string line = health_line(health_record(HealthSpecJson{}));
  EXPECT_FALSE(parse_record(line.data(), line.size() - 1, block, kind, what));
  EXPECT_EQ(kind, WarningKind::unknown_kind);
}

TEST(ToolHealthReader, AnUnknownKindIsAWarningWithFileAndLine) {
  TempDir dir;
  RecordSpec a;
  a.extra = ",\"kind\":\"frame\"";  // a block record's members, and a kind this reader does not know
  const std::string path = dir.write("dev.jsonl", json_line(RecordSpec{}) + "{\"kind\":\"trace\",\"x\":1}\n" + json_line(a));
  const Read r = read(path);
  EXPECT_EQ(r.warnings, path + ":2: unknown record kind \"trace\": skipped\n" + path +
                            ":3: unknown record kind \"frame\": skipped\n");
  EXPECT_EQ(r.stats.warnings_of(WarningKind::unknown_kind), 2u);
  EXPECT_EQ(r.blocks.size(), 1u);
  EXPECT_TRUE(r.health.empty());
  EXPECT_STREQ(to_string(WarningKind::unknown_kind), "unknown record kind");
}

// "format_version" (loopcanary/format.hpp kJsonFormatVersion): the version this reader knows, or
// none, is read; any other is skipped with a warning, as for a block record.
TEST(ToolHealthReader, AnUnknownFormatVersionIsSkippedWithAWarning) {
  TempDir dir;
  const std::string path = dir.write(
      "dev.jsonl",
      "{\"kind\":\"health\",\"format_version\":1,\"number\":1,\"loop\":\"main\",\"end\":1,\"window_us\":5}\n"
      "{\"kind\":\"health\",\"format_version\":3,\"number\":2,\"loop\":\"main\",\"end\":2,\"window_us\":5}\n"
      "{\"kind\":\"health\",\"number\":3,\"loop\":\"main\",\"end\":3,\"window_us\":5}\n");
  const Read r = read(path);
  EXPECT_EQ(r.warnings, path + ":2: format_version 3 is unknown (this reader reads versions 1 to 2)\n");
  EXPECT_EQ(r.stats.warnings_of(WarningKind::unknown_version), 1u);
  ASSERT_EQ(r.health.size(), 2u);
  EXPECT_EQ(r.health[0].number, 1u);
  EXPECT_EQ(r.health[1].number, 3u);
}

TEST(ToolHealthReader, FaultsOfHealthLinesAreWarnedAndCounted) {
  TempDir dir;
  const std::string path = dir.write(
      "dev.jsonl",
      "{\"kind\":\"health\",\"loop\":\"main\",\"end\":1}\n"                                                    // 1
      "{\"kind\":\"health\",\"number\":1,\"loop\":\"main\",\"end\":1,\"window_us\":\"5\"}\n"                   // 2
      "{\"kind\":\"health\",\"number\":1,\"loop\":\"main\",\"end\":1,\"window_us\":5,\"events\":[{\"p99_us\":1}]}\n"  // 3
      "{\"kind\":\"health\",\"number\":1,\"loop\":\"main\",\"end\":1,\"window_us\":5,\"idle_permille\":-1}\n"  // 4
      "{\"kind\":7}\n"                                                                                          // 5
      "{\"kind\":\"health\",\"number\":1,\"loop\":\"main\",\"end\":1,\"window_us\":5}\n");                     // 6: good
  const Read r = read(path);
  EXPECT_EQ(r.warnings, path + ":1: health record: missing fields number, window_us\n" + path +
                            ":2: field \"window_us\": expected a non-negative integer, got a string\n" + path +
                            ":3: field \"events\": an entry without \"event\"\n" + path +
                            ":4: field \"idle_permille\": expected a non-negative integer, got -1\n" + path +
                            ":5: field \"kind\": expected a string, got a number\n");
  EXPECT_EQ(r.stats.warnings_of(WarningKind::missing_field), 1u);
  EXPECT_EQ(r.stats.warnings_of(WarningKind::wrong_type), 4u);
  ASSERT_EQ(r.health.size(), 1u);
  EXPECT_EQ(r.health[0].line, 6u);
}

TEST(ToolHealthReader, OlderLogsReadAsBefore) {
  const Read r = read(test::fixture("valid.jsonl"));
  EXPECT_EQ(r.warnings, "");
  EXPECT_EQ(r.blocks.size(), 3u);
  EXPECT_TRUE(r.health.empty());
  EXPECT_EQ(r.stats.health_records, 0u);
  EXPECT_EQ(r.stats.records, 3u);
}

// ---- Deadline misses.

// A deadline-miss record of `event` delayed by dispatch `by` of `by_event` whose samples are in
// scope `culprit` (none: the delayer was not watched).
RecordSpec miss(std::uint64_t report, const char* event, std::uint64_t dispatch, std::uint64_t late_us,
                std::uint64_t by, const char* by_event, const char* culprit) {
  RecordSpec r;
  r.report = report;
  r.phase = "deadline_miss";
  r.event = event;
  r.dispatch = dispatch;
  r.start = 1000000 * dispatch;
  r.duration_us = late_us;
  if (culprit == nullptr) {
    r.flags = "\"unwatched\"";
    r.stacks = "";
    r.extra = ",\"delayed_by\":null";
  } else {
    r.stacks = std::string("{\"at_us\":1,\"scopes\":[\"") + culprit + "\"],\"pcs\":[]}";
    r.extra = ",\"delayed_by\":{\"dispatch\":" + std::to_string(by) + ",\"event\":\"" + by_event + "\"}";
  }
  return r;
}

TEST(ToolDeadline, DeadlineMissesAreNotBlocksAndDoNotCloseAnOpenOne) {
  TempDir dir;
  RecordSpec in_progress, final_report;
  in_progress.report = 1, in_progress.phase = "in_progress", in_progress.dispatch = 5;
  final_report.report = 3, final_report.dispatch = 5;
  // The miss of dispatch 6 arrives between the reports of dispatch 5, which delayed it.
  const std::string path = dir.write(
      "dev.jsonl", json_line(in_progress) + json_line(miss(2, "tick", 6, 12000, 5, "ota", "crc")) + json_line(final_report));
  std::ostringstream warnings;
  Reader reader(warnings);
  std::vector<Block> blocks;
  std::vector<LogRecord> misses;
  OtherRecords others;
  others.on_deadline_miss = [&](const LogRecord& r) { misses.push_back(r); };
  const BlockStats stats = read_blocks(reader, {path}, {}, {}, [&](const Block& b) { blocks.push_back(b); }, others);
  EXPECT_EQ(warnings.str(), "");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].reports, 2u);
  EXPECT_TRUE(blocks[0].has_final);
  EXPECT_EQ(stats.blocks, 1u);
  EXPECT_EQ(stats.out_of_order, 0u);
  EXPECT_EQ(stats.deadline_misses, 1u);
  ASSERT_EQ(misses.size(), 1u);
  EXPECT_EQ(misses[0].phase, Phase::deadline_miss);
  EXPECT_EQ(misses[0].delayed_by_dispatch, 5u);
  EXPECT_EQ(misses[0].delayed_by, "ota");
  EXPECT_EQ(deadline_culprit(misses[0], {}).label, "crc");
  // A filter applies to the miss record (here its event).
  Filter only_ota;
  only_ota.events = {"ota"};
  Reader again(warnings);
  misses.clear();
  const BlockStats filtered = read_blocks(again, {path}, {}, only_ota, {}, others);
  EXPECT_EQ(filtered.deadline_misses, 1u);
  EXPECT_EQ(filtered.deadline_misses_kept, 0u);
  EXPECT_TRUE(misses.empty());
}

TEST(ToolDeadline, TheDelayingCulpritFallsBackOnTheTopFrame) {
  RecordSpec r = miss(1, "tick", 2, 5000, 1, "ota", "crc");
  r.stacks = "";  // no kept samples, only the top-frame histogram
  r.extra += ",\"top\":[{\"scope\":\"flash.erase\",\"count\":4},{\"pc\":\"0x10\",\"count\":1}]";
  const std::string line = json_line(r);
  LogRecord record;
  WarningKind kind{};
  std::string what;
  ASSERT_TRUE(parse_record(line.data(), line.size() - 1, record, kind, what)) << what;
  const Culprit c = deadline_culprit(record, {});
  EXPECT_EQ(c.label, "flash.erase");
  EXPECT_EQ(c.samples, 4u);
  record.top.clear();
  EXPECT_FALSE(deadline_culprit(record, {}).known());
}

TEST(ToolReport, ListsDeadlineMissesPerEventWithTheDelayingCulprit) {
  TempDir dir;
  std::string content = json_line(RecordSpec{});  // one block: ota, culprit crc
  content += json_line(miss(2, "display", 6, 12000, 5, "ota", "crc"));
  content += json_line(miss(3, "display", 7, 30000, 5, "ota", "crc"));
  content += json_line(miss(4, "display", 8, 2000, 0, "", nullptr));
  content += json_line(miss(5, "tick", 9, 7000, 8, "log_flush", "flash.program"));
  const std::string path = dir.write("dev.jsonl", content);
  Options options;
  options.command = "report";
  options.paths = {path};
  std::ostringstream out, err;
  ASSERT_EQ(run_report(options, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("blocks by culprit: 1 group\n", 0), 0u) << text;
  const std::string n = "[ ]+";
  EXPECT_NE(text.find("\ndeadline misses by event: 2 events, 4 misses\n"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("\n  display" + n + "3" + n + "30\\.000" + n + "100\\.000\n  tick" + n +
                                                 "1" + n + "7\\.000" + n + "100\\.000\n")))
      << text;
  EXPECT_NE(text.find("\ndisplay\n  delayed by: ota 2, (unknown) 1\n  delaying culprits: crc 2, (unwatched) 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\ntick\n  delayed by: log_flush 1\n  delaying culprits: flash.program 1\n"), std::string::npos)
      << text;
  EXPECT_NE(err.str().find("1 block, 1 shown; 4 deadline misses\n"), std::string::npos) << err.str();
  // JSON: the same counts.
  options.format = "json";
  std::ostringstream json, json_err;
  ASSERT_EQ(run_report(options, json, json_err), 0) << json_err.str();
  EXPECT_NE(json.str().find("\"deadline_misses\":{\"total\":4,\"events\":[{\"event\":\"display\",\"misses\":3,"
                            "\"worst_late_ms\":30.000,\"deadline_ms\":100.000,\"unwatched\":1,\"delayed_by\":{\"ota\":2,"
                            "\"(unknown)\":1},\"delayed_by_other\":0,\"culprits\":{\"crc\":2,\"(unwatched)\":1},"
                            "\"culprits_other\":0},{\"event\":\"tick\",\"misses\":1,"),
            std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"blocks\":1,\"kept\":1,"), std::string::npos) << json.str();
  // A log without misses has no section.
  options.format = "";
  options.paths = {test::fixture("valid.jsonl")};
  std::ostringstream plain, plain_err;
  ASSERT_EQ(run_report(options, plain, plain_err), 0);
  EXPECT_EQ(plain.str().find("deadline misses"), std::string::npos) << plain.str();
}

// ---- loopcanary health.

struct HealthRun {
  int status = -1;
  std::string out, err;
};

HealthRun run_health_on(const std::vector<std::string>& paths, const std::string& format = "", Filter filter = {}) {
  Options options;
  options.command = "health";
  options.paths = paths;
  options.format = format;
  options.filter = std::move(filter);
  std::ostringstream out, err;
  HealthRun run;
  run.status = run_health(options, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

std::string ms3(std::uint64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%llu.%03llu", static_cast<unsigned long long>(us / 1000),
                static_cast<unsigned long long>(us % 1000));
  return text;
}

std::string tenths(std::uint64_t value, std::uint64_t unit) {
  return std::to_string(value / unit) + "." + std::to_string(value / (unit / 10) % 10);
}

TEST(ToolHealth, PrintsEachLoopsTimeSeriesOneLinePerRecord) {
  TempDir dir;
  // Loop main: 3 windows of 1 s, the third across the 32-bit tick wrap; loop net: 1 window
  // without idle time; a block record among them.
  std::vector<HealthSpecJson> specs(4);
  const loopcanary::tick_t first_start = 0xFFFFFFFFu - 2500000u;
  for (std::uint32_t i = 0; i < 3; ++i) {
    HealthSpecJson& s = specs[i];
    s.number = 2 * i + 1;
    s.start = static_cast<loopcanary::tick_t>(first_start + 1000000u * i);
    s.dispatches = 400 + 100 * i;
    s.busy = 300000 + 200000 * i;
    s.idle = 600000 - 200000 * static_cast<long long>(i);
    s.event = &kTick;
    s.event_dispatches = 100 + i;
    s.p99 = 1000 * (i + 1);
    s.misses = i;
    s.missed_periods = 2 * i;
  }
  specs[3].number = 2, specs[3].loop = "net", specs[3].loop_index = 1, specs[3].start = 7000000, specs[3].window = 500000;
  specs[3].idle = -1, specs[3].event = &kDisplay, specs[3].dispatches = 10, specs[3].busy = 5000;
  std::string content = health_line(health_record(specs[0])) + health_line(health_record(specs[3])) +
                        json_line(RecordSpec{}) + health_line(health_record(specs[1])) +
                        health_line(health_record(specs[2]));
  const std::string path = dir.write("dev.jsonl", content);
  const HealthRun run = run_health_on({path});
  ASSERT_EQ(run.status, 0) << run.err;
  // The expected lines, from the records: time = window end, unwrapped.
  std::string main_lines;
  double time_s = static_cast<double>(static_cast<loopcanary::tick_t>(first_start + 1000000u)) / 1e6;
  for (std::uint32_t i = 0; i < 3; ++i) {
    const HealthSpecJson& s = specs[i];
    char head[160];
    std::snprintf(head, sizeof head, "  %14.6f %10u %10s %6s %6s", time_s, s.dispatches,
                  tenths(loopcanary::rate_mhz(s.dispatches, s.window, 1000000), 1000).c_str(),
                  tenths(loopcanary::share_permille(s.busy, s.window), 10).c_str(),
                  tenths(loopcanary::share_permille(static_cast<loopcanary::tick_t>(s.idle), s.window), 10).c_str());
    main_lines += std::string(head) + "  tick " +
                  tenths(loopcanary::rate_mhz(s.event_dispatches, s.window, 1000000), 1000) + " /s, " + ms3(s.p99 / 4) +
                  "/" + ms3(s.p99 / 2) + "/" + ms3(s.p99) + " ms, " + std::to_string(s.misses) +
                  (s.misses == 1 ? " miss, " : " misses, ") + std::to_string(s.missed_periods) + " missed\n";
    time_s += 1.0;  // the next window's end, 1 s later whatever the wrap
  }
  EXPECT_NE(run.out.find("loop main (index 0), qualifier fw-1.0, " + path + ": 3 health records, 2 missing by number "
                         "(dropped on the device)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(main_lines), std::string::npos) << run.out << "\nexpected:\n" << main_lines;
  EXPECT_NE(run.out.find("loop net (index 1), qualifier fw-1.0, " + path + ": 1 health record\n"), std::string::npos)
      << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex("\n +7\\.500000 +10 +20\\.0 +1\\.0 +n/a  display ")))
      << run.out;
  EXPECT_NE(run.err.find("read 1 file, 5 lines, 5 records (4 health); 0 warnings\n"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("health: 4 of 4 health records shown (2 loops)\n"), std::string::npos) << run.err;

  // --loop and --event.
  Filter filter;
  filter.loops = {"net"};
  const HealthRun net = run_health_on({path}, "", filter);
  ASSERT_EQ(net.status, 0);
  EXPECT_EQ(net.out.find("loop main"), std::string::npos) << net.out;
  EXPECT_NE(net.err.find("health: 1 of 4 health records shown (1 loop, 3 filtered out)\n"), std::string::npos) << net.err;
  filter = Filter{};
  filter.events = {"display"};
  const HealthRun events = run_health_on({path}, "", filter);
  EXPECT_EQ(events.out.find("tick "), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("display "), std::string::npos) << events.out;

  // JSON: one series per loop, a point per record.
  const HealthRun json = run_health_on({path}, "json");
  ASSERT_EQ(json.status, 0);
  EXPECT_EQ(json.out.rfind("{\"format_version\":2,\"series\":[{\"source\":", 0), 0u) << json.out;
  char point[200];
  std::snprintf(point, sizeof point, "{\"time_s\":%.6f,\"number\":1,\"window_us\":1000000,\"dispatches\":400,\"rate_mhz\":%u,",
                static_cast<double>(static_cast<loopcanary::tick_t>(first_start + 1000000u)) / 1e6,
                loopcanary::rate_mhz(400, 1000000, 1000000));
  EXPECT_NE(json.out.find(point), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"loop\":\"net\",\"loop_index\":1,\"records\":1,"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"idle_permille\":null"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"events\":[{\"event\":\"tick\",\"dispatches\":102,"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"summary\":{\"files\":1,\"records\":5,\"health_records\":4,\"shown\":4,\"filtered\":0,"),
            std::string::npos)
      << json.out;
}

TEST(ToolHealth, AWriterRestartAddsItsWindowInsteadOfGoingBack) {
  HealthCollector c;
  HealthLog h;
  h.source = "x", h.loop = "main", h.tick_hz = 1000000, h.window_us = 1000000;
  h.number = 5, h.end = 9000000;
  c.add(h);
  h.number = 1, h.end = 1000000;  // restarted: numbers and ticks start again
  c.add(h);
  ASSERT_EQ(c.series().size(), 1u);
  ASSERT_EQ(c.series()[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(c.series()[0].points[0].time_s, 9.0);
  EXPECT_DOUBLE_EQ(c.series()[0].points[1].time_s, 10.0);
}

TEST(ToolHealth, NoHealthRecordIsStatusOne) {
  const HealthRun run = run_health_on({test::fixture("valid.jsonl")});
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("loopcanary: health: no health record in the input\n"), std::string::npos) << run.err;
  const HealthRun missing = run_health_on({test::fixture("missing.jsonl")});
  EXPECT_EQ(missing.status, 1);
}

TEST(ToolHealth, TheCommandLineTakesItsOptionsOnly) {
  Options options;
  bool help = false;
  std::string error;
  ASSERT_TRUE(parse_command_line({"health", "x.jsonl", "--loop", "main", "--event", "tick", "--format", "json",
                                  "--qualifier", "fw", "--since", "2026-01-01"},
                                 options, help, error))
      << error;
  EXPECT_EQ(options.command, "health");
  EXPECT_EQ(options.filter.loops, std::vector<std::string>{"main"});
  EXPECT_EQ(options.filter.events, std::vector<std::string>{"tick"});
  Options bad;
  EXPECT_FALSE(parse_command_line({"health", "x", "--min-ms", "5"}, bad, help, error));
  EXPECT_EQ(error, "option --min-ms does not apply to health");
  Options bad_format;
  EXPECT_FALSE(parse_command_line({"health", "x", "--format", "html"}, bad_format, help, error));
  EXPECT_EQ(error, "option --format: expected text or json for health, got \"html\"");
  Options report_loop;
  ASSERT_TRUE(parse_command_line({"report", "x", "--loop", "net"}, report_loop, help, error)) << error;
  EXPECT_EQ(report_loop.filter.loops, std::vector<std::string>{"net"});
  EXPECT_NE(std::string(usage()).find("  health PATH..."), std::string::npos);
}

// A capture with a health packet between block packets: decode writes its JSON line in place,
// every command reads it as a health record.
TEST(ToolHealth, CapturesHoldHealthPacketsThatDecodeAndTheCommandsRead) {
  TempDir dir;
  test::BodySpec block;
  test::HealthSpec health;
  block.report = 1;
  const test::Bytes first = test::make_packet(block);
  block.report = 2;
  const test::Bytes capture = first + test::make_packet(health) + test::make_packet(block);
  const std::string path = dir.write("device.lcb", std::string(capture.begin(), capture.end()));
  Options options;
  options.command = "decode";
  options.paths = {path};
  std::ostringstream out, err;
  ASSERT_EQ(run_decode(options, out, err), 0) << err.str();
  std::istringstream lines(out.str());
  std::vector<std::string> decoded;
  for (std::string line; std::getline(lines, line);) decoded.push_back(line);
  ASSERT_EQ(decoded.size(), 3u) << out.str();
  EXPECT_EQ(decoded[0].rfind("{\"format_version\":2,\"report\":1,", 0), 0u) << decoded[0];
  EXPECT_EQ(decoded[1].rfind("{\"kind\":\"health\",\"format_version\":2,\"number\":5,", 0), 0u) << decoded[1];
  EXPECT_EQ(decoded[2].rfind("{\"format_version\":2,\"report\":2,", 0), 0u) << decoded[2];
  EXPECT_NE(err.str().find("3 records (1 health); 1 capture: 3 packets decoded"), std::string::npos) << err.str();
  const HealthRun run = run_health_on({path});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("loop main (index 1), qualifier fw-1.0, " + path + ": 1 health record\n"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("  tick 100.0 /s, 0.120/0.250/0.900 ms, 1 miss, 2 missed; display 20.0 /s, 2.000/3.000/3.500 ms, 0 misses, 0 missed\n"), std::string::npos)
      << run.out;
}

TEST(ToolFilter, TheLoopCriterionHolds) {
  Filter f;
  f.loops = {"net"};
  LogRecord r;
  r.loop = "main";
  EXPECT_FALSE(f.accepts(r));
  r.loop = "net";
  EXPECT_TRUE(f.accepts(r));
  HealthLog h;
  h.loop = "main";
  EXPECT_FALSE(f.accepts(h));
  h.loop = "net";
  EXPECT_TRUE(f.accepts(h));
  f.since_ms = 0;  // health records without wall time fail --since
  EXPECT_FALSE(f.accepts(h));
  h.wall_ms = 5;
  EXPECT_TRUE(f.accepts(h));
}

}  // namespace
}  // namespace loopcanary::tool
