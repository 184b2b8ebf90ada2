// SPDX-License-Identifier: MIT
// `loopcanary export` (sim/tool/export*.cpp): the folded, chrome and html formats checked
// structurally against the records they were made from (tests/tool/export_fixture.hpp).
#include "export.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "export_fixture.hpp"

namespace loopcanary::tool::testing {
namespace {

FixtureSample sample(std::uint64_t at, std::vector<std::string> scopes, std::vector<std::string> pcs = {}) {
  return FixtureSample{at, std::move(scopes), std::move(pcs)};
}

// Records of two firmware versions, two loops: a dispatch reported in progress then final (the
// in-progress samples differ and must not count), a hang + final, an in-progress-only dispatch,
// a final without samples, and names that need escaping or replacing.
std::vector<FixtureRecord> mixed_records() {
  std::vector<FixtureRecord> v;
  FixtureRecord r;
  r.report = 1, r.phase = "in_progress", r.event = "ota_verify", r.dispatch = 10, r.start = 1000,
  r.duration_us = 110000;
  r.samples = {sample(30000, {"early"}, {"0x9000"}), sample(40000, {"early"}, {"0x9000"})};
  v.push_back(r);
  r.report = 2, r.phase = "final", r.duration_us = 400000;
  r.samples = {
      sample(100000, {"ota.crc32", "ota.verify"}, {"0x1000"}), sample(110000, {"ota.crc32", "ota.verify"}, {"0x1000"}),
      sample(120000, {"ota.crc32", "ota.verify"}, {"0x1000"}), sample(130000, {"ota.read", "ota.verify"}, {"0x1000"})};
  v.push_back(r);
  r = FixtureRecord{};
  r.report = 3, r.phase = "hang", r.event = "cloud_sync", r.dispatch = 12, r.start = 900000, r.duration_us = 600000,
  r.cause = "waiting", r.flags = {"hung"};
  r.samples = {sample(500000, {"radio.spi"}, {"0x2000"})};
  v.push_back(r);
  r.report = 4, r.phase = "final", r.duration_us = 700000;
  r.samples = {sample(600000, {"radio.spi"}, {"0x2000"}), sample(650000, {"radio.spi"}, {"0x2000"}),
               sample(700000, {"radio.spi"}, {"0x2000"})};
  v.push_back(r);
  r = FixtureRecord{};
  r.report = 5, r.loop = "net", r.loop_index = 1, r.event = "</script><script>alert(\"x\")</script>", r.dispatch = 3,
  r.start = 50000, r.duration_us = 200000;
  r.samples = {sample(150000, {"a;b", "x\ny"}), sample(160000, {"a;b", "x\ny"}), sample(170000, {"<b>&amp;"})};
  v.push_back(r);
  r = FixtureRecord{};
  r.report = 6, r.loop = "net", r.loop_index = 1, r.event = "idle_flush", r.dispatch = 4, r.start = 400000,
  r.duration_us = 150000, r.cause = "unknown", r.flags = {"unwatched"};
  v.push_back(r);
  r = FixtureRecord{};
  r.report = 1, r.phase = "in_progress", r.qualifier = "fw-2.0", r.event = "ota_verify", r.dispatch = 5, r.start = 7000,
  r.duration_us = 120000;
  r.samples = {sample(100000, {"ota.crc32", "ota.verify"}, {"0x1000"}),
               sample(120000, {"ota.crc32", "ota.verify"}, {"0x1000"})};
  v.push_back(r);
  return v;
}

// The record that stands for each dispatch: its final report, else its latest one.
std::vector<FixtureRecord> representatives(const std::vector<FixtureRecord>& records) {
  std::map<std::tuple<std::string, std::string, std::uint64_t>, FixtureRecord> by;
  std::vector<std::tuple<std::string, std::string, std::uint64_t>> order;
  for (const auto& r : records) {
    const auto key = std::make_tuple(r.qualifier, r.loop, r.dispatch);
    auto it = by.find(key);
    if (it == by.end()) {
      order.push_back(key);
      by.emplace(key, r);
    } else if (it->second.phase != "final") {
      it->second = r;
    }
  }
  std::vector<FixtureRecord> out;
  for (const auto& key : order) out.push_back(by.at(key));
  return out;
}

std::string sanitised(std::string label) {
  for (char& c : label)
    if (c == ';' || static_cast<unsigned char>(c) < 0x20) c = '_';
  return label;
}

// Root first: the PCs (outermost first), then the scopes (outermost first).
std::string folded_key(const FixtureSample& s) {
  std::vector<std::string> frames = s.scopes;
  frames.insert(frames.end(), s.pcs.begin(), s.pcs.end());
  std::string key;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) key += (key.empty() ? "" : ";") + sanitised(*it);
  return key;
}

std::map<std::string, std::uint64_t> expected_folded(const std::vector<FixtureRecord>& records) {
  std::map<std::string, std::uint64_t> counts;
  for (const auto& r : representatives(records))
    for (const auto& s : r.samples) ++counts[folded_key(s)];
  return counts;
}

std::map<std::string, std::uint64_t> parse_folded(const std::string& text) {
  std::map<std::string, std::uint64_t> counts;
  const std::regex line("([^;\\n ][^;\\n]*(;[^;\\n]+)*) ([1-9][0-9]*)");
  std::size_t from = 0;
  while (from < text.size()) {
    const auto nl = text.find('\n', from);
    EXPECT_NE(nl, std::string::npos) << "the last line ends with a newline";
    if (nl == std::string::npos) break;
    const std::string l = text.substr(from, nl - from);
    std::smatch m;
    EXPECT_TRUE(std::regex_match(l, m, line)) << "not `frame;frame COUNT`: " << l;
    if (!m.empty()) {
      EXPECT_EQ(counts.count(m[1]), 0u) << "stack listed twice: " << m[1];
      counts[m[1]] = std::stoull(m[3]);
    }
    from = nl + 1;
  }
  return counts;
}

TEST(ExportFolded, OneLinePerDistinctStackRootFirstCountingEachBlocksSamplesOnce) {
  test::TempDir dir;
  const auto records = mixed_records();
  const auto run = run_export_on("folded", {write_records(dir, "a.jsonl", records)});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto counts = parse_folded(run.out);
  EXPECT_EQ(counts, expected_folded(records));
  // The in-progress samples of a dispatch with a final report are not counted.
  EXPECT_EQ(counts.count("0x9000;early"), 0u);
  EXPECT_EQ(counts.at("0x1000;ota.verify;ota.crc32"), 3u + 2u);  // fw-1.0 final + fw-2.0 in progress
  EXPECT_EQ(counts.at("x_y;a_b"), 2u);                           // root first; ';' and the newline replaced
}

TEST(ExportFolded, FiltersApplyAsForReport) {
  test::TempDir dir;
  const auto records = mixed_records();
  Filter filter;
  filter.qualifiers = {"fw-2.0"};
  const auto run = run_export_on("folded", {write_records(dir, "a.jsonl", records)}, "", filter);
  ASSERT_EQ(run.status, 0) << run.err;
  std::vector<FixtureRecord> kept;
  for (const auto& r : records)
    if (r.qualifier == "fw-2.0") kept.push_back(r);
  EXPECT_EQ(parse_folded(run.out), expected_folded(kept));
}

TEST(ExportFolded, WritesTheFileGivenWithDashO) {
  test::TempDir dir;
  const auto records = mixed_records();
  const std::string out = dir.write("out.folded", "");  // removed with the directory
  const auto run = run_export_on("folded", {write_records(dir, "a.jsonl", records)}, out);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(parse_folded(run.out), expected_folded(records));
  EXPECT_NE(run.err.find("export folded:"), std::string::npos) << run.err;
}

TEST(Export, RefusesAnUnknownFormatNamingTheOption) {
  test::TempDir dir;
  const std::string out = dir.path() + "/never";
  const auto run = run_export_on("svg", {write_records(dir, "a.jsonl", mixed_records())}, out);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--format"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  std::ifstream never(out);
  EXPECT_FALSE(never.good()) << "nothing is created for a refused command";
}

TEST(Export, RefusesAnUnwritableOutputNamingTheOption) {
  test::TempDir dir;
  const auto run =
      run_export_on("folded", {write_records(dir, "a.jsonl", mixed_records())}, dir.path() + "/no/such/dir/out");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("-o"), std::string::npos) << run.err;
}

TEST(Export, ExitsOneWhenNothingWasReadable) {
  test::TempDir dir;
  for (const char* format : {"folded", "chrome", "html"}) {
    const auto run = run_export_on(format, {dir.path() + "/missing.jsonl"});
    EXPECT_EQ(run.status, 1) << format << ": " << run.err;
  }
}

// --- chrome ------------------------------------------------------------------------------

Json parse_or_fail(const std::string& text) {
  Json doc;
  std::string error;
  EXPECT_TRUE(JsonParser::parse(text, doc, error)) << error;
  return doc;
}

// Pointers into `doc`: keep it alive while they are used.
std::vector<const Json*> events_where(const Json& doc, const std::string& ph, const std::string& cat = "") {
  std::vector<const Json*> out;
  for (const Json& e : doc.at("traceEvents").array)
    if (e.at("ph").string == ph && (cat.empty() || e.at("cat").string == cat)) out.push_back(&e);
  return out;
}

TEST(ExportChrome, ValidJsonWithAProcessPerQualifierAThreadPerLoopAndABlockSlicePerDispatch) {
  test::TempDir dir;
  const auto records = mixed_records();
  const auto run = run_export_on("chrome", {write_records(dir, "a.jsonl", records)});
  ASSERT_EQ(run.status, 0) << run.err;
  const Json doc = parse_or_fail(run.out);
  ASSERT_EQ(doc.type, Json::Type::object);

  std::map<double, std::string> processes;
  for (const Json* e : events_where(doc, "M"))
    if (e->at("name").string == "process_name") processes[e->at("pid").number] = e->at("args").at("name").string;
  std::set<std::string> qualifiers;
  for (const auto& r : records) qualifiers.insert(r.qualifier);
  ASSERT_EQ(processes.size(), qualifiers.size());
  for (const auto& [pid, name] : processes) {
    (void)pid;
    EXPECT_TRUE(qualifiers.count(name.substr(0, name.find(' ')))) << name;
  }

  std::map<std::pair<double, double>, std::string> threads;
  for (const Json* e : events_where(doc, "M"))
    if (e->at("name").string == "thread_name")
      threads[{e->at("pid").number, e->at("tid").number}] = e->at("args").at("name").string;
  std::set<std::pair<std::string, std::string>> loops;
  for (const auto& r : records) loops.insert({r.qualifier, r.loop});
  EXPECT_EQ(threads.size(), loops.size());

  const auto reps = representatives(records);
  const auto blocks = events_where(doc, "X", "block");
  ASSERT_EQ(blocks.size(), reps.size());
  for (std::size_t i = 0; i < reps.size(); ++i) {
    const Json& b = *blocks[i];
    EXPECT_EQ(b.at("name").string, reps[i].event);
    EXPECT_EQ(b.at("dur").number, static_cast<double>(reps[i].duration_us));
    EXPECT_EQ(threads.at({b.at("pid").number, b.at("tid").number}), reps[i].loop);
    EXPECT_EQ(b.at("args").at("event").string, reps[i].event);
    EXPECT_EQ(b.at("args").at("cause").string, reps[i].cause);
    EXPECT_EQ(b.at("args").at("phase").string, reps[i].phase);
    std::vector<std::string> flags;
    for (const Json& f : b.at("args").at("flags").array) flags.push_back(f.string);
    EXPECT_EQ(flags, reps[i].flags);
    std::size_t reports = 0;
    for (const auto& r : records)
      reports += (r.qualifier == reps[i].qualifier && r.loop == reps[i].loop && r.dispatch == reps[i].dispatch);
    EXPECT_EQ(b.at("args").at("reports").number, static_cast<double>(reports));
    // Start: the device's ticks in µs (no wall time in these records; tick_hz = 1 MHz).
    EXPECT_EQ(b.at("ts").number, static_cast<double>(reps[i].start));
  }
  EXPECT_EQ(blocks[0]->at("args").at("culprit").string, "ota.crc32");
  EXPECT_EQ(blocks[0]->at("args").at("culprit_share_pct").number, 75.0);
}

TEST(ExportChrome, SamplesAreSlicesNestedInTheirBlockWithEqualConsecutiveFramesMerged) {
  test::TempDir dir;
  const auto records = mixed_records();
  const auto run = run_export_on("chrome", {write_records(dir, "a.jsonl", records)});
  ASSERT_EQ(run.status, 0) << run.err;
  const Json doc = parse_or_fail(run.out);
  const auto blocks = events_where(doc, "X", "block");
  const auto samples = events_where(doc, "X", "sample");
  const auto reps = representatives(records);
  for (std::size_t i = 0; i < reps.size(); ++i) {
    const Json& b = *blocks[i];
    const double begin = b.at("ts").number;
    const double end = begin + b.at("dur").number;
    std::vector<const Json*> mine;
    for (const Json* s : samples)
      if (s->at("pid").number == b.at("pid").number && s->at("tid").number == b.at("tid").number &&
          s->at("ts").number >= begin && s->at("ts").number < end)
        mine.push_back(s);
    for (const Json* s : mine) {
      EXPECT_GT(s->at("dur").number, 0.0);
      EXPECT_LE(s->at("ts").number + s->at("dur").number, end) << "slice past its block " << reps[i].event;
    }
    // Merged: each distinct label run gives one slice; a record whose samples share one stack
    // of depth D gives exactly D slices.
    std::set<std::string> stacks;
    std::size_t depth = 0;
    for (const auto& s : reps[i].samples) {
      stacks.insert(folded_key(s));
      depth = s.scopes.size() + s.pcs.size();
    }
    if (stacks.size() == 1) {
      EXPECT_EQ(mine.size(), depth) << reps[i].event;
    }
    if (reps[i].samples.empty()) {
      EXPECT_TRUE(mine.empty());
    }
  }
  // ota_verify's final: 3 × crc32 then 1 × read under the shared root 0x1000 > ota.verify:
  // 0x1000, ota.verify (merged over the 4 samples), ota.crc32 (3 merged), ota.read.
  std::map<std::string, int> names;
  const Json& first = *blocks[0];
  for (const Json* s : samples)
    if (s->at("pid").number == first.at("pid").number && s->at("tid").number == first.at("tid").number &&
        s->at("ts").number >= first.at("ts").number &&
        s->at("ts").number < first.at("ts").number + first.at("dur").number)
      ++names[s->at("name").string];
  EXPECT_EQ(names, (std::map<std::string, int>{{"0x1000", 1}, {"ota.verify", 1}, {"ota.crc32", 1}, {"ota.read", 1}}));
}

TEST(ExportChrome, UnwrapsA32BitTickCounter) {
  test::TempDir dir;
  FixtureRecord a;
  a.dispatch = 1, a.start = 0xFFFF0000u, a.duration_us = 200000;
  FixtureRecord b = a;
  b.report = 2, b.dispatch = 2, b.start = 0x00050000u;  // after the wrap
  const auto run = run_export_on("chrome", {write_records(dir, "a.jsonl", {a, b})});
  ASSERT_EQ(run.status, 0) << run.err;
  const Json doc = parse_or_fail(run.out);
  const auto blocks = events_where(doc, "X", "block");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[1]->at("ts").number - blocks[0]->at("ts").number,
            static_cast<double>((b.start - a.start) & 0xFFFFFFFFu));
}

TEST(ExportChrome, PlacesBlocksOnTheWallClockWhenRecordsCarryIt) {
  test::TempDir dir;
  FixtureRecord a;
  a.duration_us = 250000, a.start = 123456, a.wall_time = "2026-01-02T03:04:05.678Z";
  const auto run = run_export_on("chrome", {write_records(dir, "a.jsonl", {a})});
  ASSERT_EQ(run.status, 0) << run.err;
  const Json doc = parse_or_fail(run.out);
  const auto blocks = events_where(doc, "X", "block");
  ASSERT_EQ(blocks.size(), 1u);
  std::int64_t wall_ms = 0;
  ASSERT_TRUE(parse_utc_time(*a.wall_time, wall_ms));
  EXPECT_EQ(blocks[0]->at("ts").number, static_cast<double>(wall_ms) * 1000.0 - 250000.0);

  FixtureRecord virtual_time = a;  // clock "other": the wall time is not the ticks' clock
  virtual_time.clock = "other";
  const auto run2 = run_export_on("chrome", {write_records(dir, "b.jsonl", {virtual_time})});
  const Json doc2 = parse_or_fail(run2.out);
  const auto blocks2 = events_where(doc2, "X", "block");
  ASSERT_EQ(blocks2.size(), 1u);
  EXPECT_EQ(blocks2[0]->at("ts").number, static_cast<double>(a.start));
}

TEST(ExportJsonString, EscapesAndKeepsValidUtf8AndReplacesInvalidBytes) {
  std::ostringstream out;
  tool::write_json_string(out, std::string("a\"\\\n\x01 \xc3\xa9 \xff </script>&"), true);
  Json v;
  std::string error;
  ASSERT_TRUE(JsonParser::parse(out.str(), v, error)) << error << ": " << out.str();
  EXPECT_EQ(v.string, "a\"\\\n\x01 \xc3\xa9 \xef\xbf\xbd </script>&");
  EXPECT_EQ(out.str().find('<'), std::string::npos);
  EXPECT_EQ(out.str().find('&'), std::string::npos);
}

// --- html --------------------------------------------------------------------------------

// Checks the tags of `html` nest: every element the export writes is closed in order, void
// elements excepted; the text of <script> and <style> elements is skipped. Returns "" or the fault.
std::string unbalanced_tags(const std::string& html) {
  static const std::set<std::string> kVoid = {"meta", "link", "input", "br", "img", "hr"};
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 9, "<!DOCTYPE") == 0) {
      i = html.find('>', i);
      continue;
    }
    const bool closing = html.compare(i + 1, 1, "/") == 0;
    std::size_t p = i + (closing ? 2 : 1);
    std::string name;
    while (p < html.size() && (std::isalnum(static_cast<unsigned char>(html[p])) || html[p] == '-')) name += html[p++];
    const auto end = html.find('>', p);
    if (name.empty() || end == std::string::npos) return "stray '<' at byte " + std::to_string(i);
    if (closing) {
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
      i = end + 1;
      continue;
    }
    i = end + 1;
    if (kVoid.count(name)) continue;
    if (name == "script" || name == "style") {
      const auto close = html.find("</" + name + ">", i);
      if (close == std::string::npos) return "<" + name + "> never closed";
      i = close + name.size() + 3;
      continue;
    }
    open.push_back(name);
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

TEST(ExportHtml, OneWellFormedSelfContainedPage) {
  test::TempDir dir;
  const auto run = run_export_on("html", {write_records(dir, "a.jsonl", mixed_records())});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string& html = run.out;
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(unbalanced_tags(html), "");
  // Nothing loaded from elsewhere: no src attribute, no link but the empty data: icon, no CSS url()
  // or @import, and no URL but the SVG namespace name (an identifier, never fetched).
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  std::string rest = html;
  const std::string svg_ns = "http://www.w3.org/2000/svg";
  for (auto at = rest.find(svg_ns); at != std::string::npos; at = rest.find(svg_ns)) rest.erase(at, svg_ns.size());
  EXPECT_EQ(rest.find("://"), std::string::npos);
  std::size_t links = 0;
  for (auto at = html.find("<link"); at != std::string::npos; at = html.find("<link", at + 1), ++links)
    EXPECT_EQ(html.compare(at, 30, "<link rel=\"icon\" href=\"data:,\""), 0);
  EXPECT_LE(links, 1u);
  // Exactly the two script elements the export writes: the malicious event name did not end one.
  std::size_t scripts = 0;
  for (auto at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1)) ++scripts;
  EXPECT_EQ(scripts, 2u);
}

TEST(ExportHtml, EmbeddedDataHoldsEveryBlockAndAFlameGraphPerCulprit) {
  test::TempDir dir;
  const auto records = mixed_records();
  const auto run = run_export_on("html", {write_records(dir, "a.jsonl", records)});
  ASSERT_EQ(run.status, 0) << run.err;
  const Json data = parse_or_fail(html_data(run.out));
  const auto reps = representatives(records);
  ASSERT_EQ(data.at("blocks").array.size(), reps.size());
  for (std::size_t i = 0; i < reps.size(); ++i) {
    EXPECT_EQ(data.at("blocks").array[i].at("ev").string, reps[i].event);
    EXPECT_EQ(data.at("blocks").array[i].at("d").number, static_cast<double>(reps[i].duration_us));
  }
  // One flame graph per culprit of the blocks with samples; its root counts their samples.
  std::map<std::string, double> roots;
  for (const Json& f : data.at("flames").array) roots[f.at("culprit").string] = f.at("tree").array[1].number;
  EXPECT_EQ(roots, (std::map<std::string, double>{{"ota.crc32", 4 + 2}, {"radio.spi", 3}, {"a;b", 3}}));
}

// Each block's stages, as (name, µs) pairs in order, escaped like every string; [] without.
TEST(ExportHtml, EmbeddedDataHoldsEachBlocksStages) {
  test::TempDir dir;
  std::vector<FixtureRecord> records(3);
  for (std::size_t i = 0; i < records.size(); ++i) {
    records[i].report = i + 1, records[i].dispatch = i + 1, records[i].start = i * 1000000;
    records[i].duration_us = 200000;
  }
  records[0].stages = {{"input", 1500}, {"compute", 180000}, {"output", 500}};
  records[2].stages = {{"</script><b>", 7}};
  const auto run = run_export_on("html", {write_records(dir, "a.jsonl", records)});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out.find("</script><b>"), std::string::npos);
  const Json data = parse_or_fail(html_data(run.out));
  const auto& blocks = data.at("blocks").array;
  ASSERT_EQ(blocks.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE(i);
    const auto& st = blocks[i].at("st").array;
    ASSERT_EQ(st.size(), records[i].stages.size());
    for (std::size_t k = 0; k < st.size(); ++k) {
      ASSERT_EQ(st[k].array.size(), 2u);
      EXPECT_EQ(st[k].array[0].string, records[i].stages[k].first);
      EXPECT_EQ(st[k].array[1].number, static_cast<double>(records[i].stages[k].second));
    }
  }
}

TEST(ExportHtml, TableAndTimelineHoldAtMostTheLimitLongestBlocksAndSaySo) {
  test::TempDir dir;
  std::vector<FixtureRecord> records;
  const std::size_t n = exporting::kMaxHtmlBlocks + 25;
  for (std::size_t i = 0; i < n; ++i) {
    FixtureRecord r;
    r.report = i + 1, r.dispatch = i + 1, r.start = i * 1000000, r.duration_us = 100000 + (i * 7919) % 100000;
    records.push_back(r);
  }
  const auto run = run_export_on("html", {write_records(dir, "a.jsonl", records)});
  ASSERT_EQ(run.status, 0) << run.err;
  const Json data = parse_or_fail(html_data(run.out));
  const auto& blocks = data.at("blocks").array;
  ASSERT_EQ(blocks.size(), exporting::kMaxHtmlBlocks);
  EXPECT_EQ(data.at("summary").at("blocks").number, static_cast<double>(n));
  std::vector<std::uint64_t> durations;
  for (const auto& r : records) durations.push_back(r.duration_us);
  std::sort(durations.rbegin(), durations.rend());
  double shortest_kept = 1e300;
  for (const Json& b : blocks) shortest_kept = std::min(shortest_kept, b.at("d").number);
  EXPECT_EQ(shortest_kept, static_cast<double>(durations[exporting::kMaxHtmlBlocks - 1]));
}

}  // namespace
}  // namespace loopcanary::tool::testing
