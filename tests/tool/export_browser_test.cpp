// SPDX-License-Identifier: MIT
// The HTML export in a real browser: headless Chromium loads the page from file:// and dumps the
// document after its scripts ran. The test fails on any console message or uncaught exception,
// and checks the DOM holds the table rows (with their waits), flame-graph nodes and timeline bars
// of the records.
// Skipped (reported as skipped by CTest) when Chromium is not installed: Debian `chromium`, or
// the program named by the environment variable LOOPCANARY_CHROMIUM (only that one when set).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "export.hpp"
#include "export_fixture.hpp"
#include "test_util.hpp"

namespace loopcanary::tool::testing {
namespace {

// LOOPCANARY_CHROMIUM when set (only it: an unusable path skips the tests), else Debian's chromium.
std::string chromium_path() {
  const char* env = std::getenv("LOOPCANARY_CHROMIUM");
  if (env != nullptr && *env != '\0') return access(env, X_OK) == 0 ? std::string(env) : std::string();
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (access(candidate, X_OK) == 0) return candidate;
  return "";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

struct Loaded {
  int status = -1;
  std::string dom;
  std::vector<std::string> console;  // lines with a console message or an uncaught exception
};

// Loads `page` (an absolute path) in headless Chromium with a fresh profile under `dir`.
Loaded load(const std::string& chromium, test::TempDir& dir, const std::string& page,
            const std::string& fragment = "") {
  const std::string dom = dir.write("dom.html", "");
  const std::string log = dir.write("chromium.log", "");
  const std::string profile = dir.path() + "/profile";
  // A page that stops (a modal dialog: an injected alert()) would block Chromium: 60 s at most.
  const std::string command = "timeout -k 5 60 '" + chromium +
                              "' --headless --no-sandbox --disable-gpu --disable-background-networking"
                              " --disable-component-update --disable-sync --no-first-run --user-data-dir='" +
                              profile +
                              "' --virtual-time-budget=5000 --enable-logging=stderr --v=0 --dump-dom 'file://" + page +
                              fragment + "' > '" + dom + "' 2> '" + log + "'";
  Loaded loaded;
  loaded.status = std::system(command.c_str());
  std::system(("rm -rf '" + profile + "'").c_str());
  loaded.dom = read_all(dom);
  std::istringstream lines(read_all(log));
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos)
      loaded.console.push_back(line);
  return loaded;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Text as the DOM serialiser writes it inside an element.
std::string html_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

FixtureSample sample(std::uint64_t at, std::vector<std::string> scopes, std::vector<std::string> pcs = {}) {
  return FixtureSample{at, std::move(scopes), std::move(pcs)};
}

TEST(ExportBrowser, TheHarnessSeesAConsoleErrorAndAnUncaughtException) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium): browser check skipped";
  test::TempDir dir;
  const std::string page = dir.write("bad.html",
                                     "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>t</title></head><body>"
                                     "<script>console.error('lc-probe');</script><script>undefinedFunction();</script>"
                                     "</body></html>\n");
  const Loaded loaded = load(chromium, dir, page);
  ASSERT_EQ(loaded.status, 0);
  std::string all;
  for (const auto& line : loaded.console) all += line + "\n";
  EXPECT_NE(all.find("lc-probe"), std::string::npos) << all;
  EXPECT_NE(all.find("undefinedFunction"), std::string::npos) << all;
}

TEST(ExportBrowser, TheHtmlReportRunsWithoutConsoleErrorsAndBuildsTableFlameGraphsAndTimeline) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium): browser check skipped";
  test::TempDir dir;
  std::vector<FixtureRecord> records;
  FixtureRecord r;
  r.report = 1, r.event = "ota_verify", r.dispatch = 10, r.start = 1000, r.duration_us = 400000;
  r.samples = {sample(100000, {"ota.crc32", "ota.verify"}, {"0x1000"}),
               sample(110000, {"ota.crc32", "ota.verify"}, {"0x1000"}),
               sample(120000, {"ota.read", "ota.verify"}, {"0x1000"})};
  r.stages = {{"input", 100000}, {"compute", 200000}, {"<i>out</i>", 50000}};
  records.push_back(r);
  r = FixtureRecord{};
  r.report = 2, r.event = "</script><script>alert(1)</script>", r.dispatch = 11, r.start = 900000,
  r.duration_us = 250000, r.cause = "waiting", r.flags = {"hung"};
  r.samples = {sample(200000, {"<img src=x onerror=alert(2)>"})};
  r.wait = "{\"other\":1,\"objects\":[{\"kind\":\"mutex\",\"samples\":1,\"address\":\"0x7f00a0\",\"fd\":null,"
           "\"value\":0,\"text\":\"\",\"owner\":{\"tid\":4242,\"name\":\"<b>journal</b>\",\"loop\":null,\"scopes\":[],"
           "\"pcs\":[\"0x401000\",\"0x401234\"]}},{\"kind\":\"sleep\",\"samples\":1,\"address\":\"0x0\",\"fd\":null,"
           "\"value\":10000000,\"text\":\"\",\"owner\":null}]}";
  records.push_back(r);
  r = FixtureRecord{};
  r.report = 3, r.loop = "net", r.loop_index = 1, r.event = "idle", r.dispatch = 2, r.start = 50000,
  r.duration_us = 120000, r.cause = "unknown", r.flags = {"unwatched"};
  records.push_back(r);

  const std::string page = dir.write("report.html", "");
  const auto run = run_export_on("html", {write_records(dir, "a.jsonl", records)}, page);
  ASSERT_EQ(run.status, 0) << run.err;
  const Loaded loaded = load(chromium, dir, page);
  ASSERT_EQ(loaded.status, 0);
  std::string all;
  for (const auto& line : loaded.console) all += line + "\n";
  EXPECT_TRUE(loaded.console.empty()) << all;

  const std::string& dom = loaded.dom;
  EXPECT_NE(dom.find("data-ready=\"true\""), std::string::npos) << "the page's script did not finish";
  EXPECT_EQ(count(dom, "<tr class=\"block-row"), records.size());
  EXPECT_EQ(count(dom, "class=\"tl-block\""), records.size());
  EXPECT_EQ(count(dom, "<script"), 2u) << "a name became a script element";
  EXPECT_EQ(count(dom, "<img"), 0u) << "a name became an element";
  EXPECT_NE(dom.find(">" + html_text(records[1].event) + "</td>"), std::string::npos);

  // The stage split of the first block: one bar segment per stage, its width the stage's share
  // of the block, its name as text (never markup); the blocks without stages have none.
  const auto& stages = records[0].stages;
  EXPECT_EQ(count(dom, "class=\"st-bar\""), 1u);
  EXPECT_EQ(count(dom, "class=\"st-seg\""), stages.size());
  EXPECT_EQ(count(dom, "<i>"), 0u) << "a stage name became an element";
  std::vector<std::string> segments;  // the attributes of each segment, in order
  const std::regex seg("<span class=\"st-seg\"([^>]*)>");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), seg); it != std::sregex_iterator(); ++it)
    segments.push_back((*it)[1].str());
  ASSERT_EQ(segments.size(), stages.size());
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto& [name, us] = stages[i];
    std::ostringstream width;
    width << "width: " << 100.0 * static_cast<double>(us) / static_cast<double>(records[0].duration_us) << "%";
    EXPECT_NE(segments[i].find(" data-stage=\"" + html_text(name) + "\""), std::string::npos) << segments[i];
    EXPECT_NE(segments[i].find(" data-us=\"" + std::to_string(us) + "\""), std::string::npos) << segments[i];
    EXPECT_NE(segments[i].find(width.str()), std::string::npos) << segments[i];
  }

  // The waits of the second block beside it: each object as every form names it, with its
  // samples, then the main object's holder and its stack (names as text, never markup); the
  // other blocks waited on nothing.
  EXPECT_EQ(count(dom, "<span class=\"wait\""), 2u);
  EXPECT_EQ(count(dom, "<b>"), 0u) << "a holder name became an element";
  EXPECT_NE(dom.find(">" + html_text("mutex 0x7f00a0 held by '<b>journal</b>' (tid 4242) (1)") + "</span>"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find(">sleep 10.000 ms (1)</span>"), std::string::npos);
  EXPECT_NE(dom.find(">other 1</span>"), std::string::npos);
  EXPECT_NE(dom.find("<summary>" + html_text("holder <b>journal</b> (tid 4242)") + "</summary><ol><li>0x401000</li>"
                     "<li>0x401234</li></ol>"),
            std::string::npos)
      << dom;

  // A flame graph per culprit with samples, each node a box holding its frame's label, with
  // the samples under it.
  EXPECT_EQ(count(dom, "<div class=\"fg\""), 2u);
  std::set<std::string> labels = {"all"};
  for (const auto& rec : records)
    for (const auto& s : rec.samples) {
      for (const auto& f : s.scopes) labels.insert(f);
      for (const auto& f : s.pcs) labels.insert(f);
    }
  for (const auto& label : labels) EXPECT_NE(dom.find(">" + html_text(label) + "</div>"), std::string::npos) << label;
  // Nodes: ota_verify's graph has all, 0x1000, ota.verify, ota.crc32, ota.read; the other all
  // and its one scope.
  EXPECT_EQ(count(dom, "<div class=\"fg-node\""), 5u + 2u);
  EXPECT_TRUE(std::regex_search(dom, std::regex("<div class=\"fg-node\"[^>]* data-samples=\"3\"[^>]*>all</div>")));
  EXPECT_TRUE(
      std::regex_search(dom, std::regex("<div class=\"fg-node\"[^>]* data-samples=\"2\"[^>]*>ota\\.crc32</div>")));
}

TEST(ExportBrowser, TheAddressPresetsTheSortAndTheFilterOfTheTable) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium): browser check skipped";
  test::TempDir dir;
  std::vector<FixtureRecord> records;
  const std::vector<std::pair<std::string, std::uint64_t>> blocks = {
      {"ota_small", 150000}, {"net_poll", 900000}, {"ota_large", 700000}, {"ota_mid", 300000}};
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    FixtureRecord r;
    r.report = i + 1, r.dispatch = i + 1, r.start = i * 1000000, r.event = blocks[i].first,
    r.duration_us = blocks[i].second;
    records.push_back(r);
  }
  const std::string page = dir.write("report.html", "");
  const auto run = run_export_on("html", {write_records(dir, "a.jsonl", records)}, page);
  ASSERT_EQ(run.status, 0) << run.err;
  const Loaded loaded = load(chromium, dir, page, "#sort=-duration&filter=OTA");
  ASSERT_EQ(loaded.status, 0);
  EXPECT_TRUE(loaded.console.empty()) << loaded.console.front();

  // Expected: the rows whose text holds "ota" (case ignored), longest first.
  std::vector<std::pair<std::uint64_t, std::string>> expected;
  for (const auto& [event, us] : blocks)
    if (event.find("ota") != std::string::npos) expected.emplace_back(us, event);
  std::sort(expected.rbegin(), expected.rend());
  std::vector<std::string> shown;
  std::size_t hidden = 0;
  const std::regex row("<tr class=\"block-row\"( style=\"([^\"]*)\")?>(.*?)</tr>");
  const std::regex any_cell("<td[^>]*>([^<]*)</td>");
  for (auto it = std::sregex_iterator(loaded.dom.begin(), loaded.dom.end(), row); it != std::sregex_iterator(); ++it) {
    if ((*it)[2].str().find("display: none") != std::string::npos) {
      ++hidden;
      continue;
    }
    const std::string cells = (*it)[3].str();
    // The fourth cell is the event (start, qualifier, loop, event).
    auto cell = std::sregex_iterator(cells.begin(), cells.end(), any_cell);
    for (int k = 0; k < 3 && cell != std::sregex_iterator(); ++k) ++cell;
    ASSERT_NE(cell, std::sregex_iterator());
    shown.push_back((*cell)[1].str());
  }
  std::vector<std::string> expected_events;
  for (const auto& e : expected) expected_events.push_back(e.second);
  EXPECT_EQ(shown, expected_events);
  EXPECT_EQ(hidden, blocks.size() - expected.size());
  EXPECT_NE(loaded.dom.find("<th class=\"num desc\" data-key=\"duration\">"), std::string::npos);
}

constexpr loopcanary::Event kTickHealth{"tick", 0};
constexpr loopcanary::Event kDisplayHealth{"<b>display</b>", 0};

// The charts' polylines: (chart, loop, series) → the number of points in its `points` attribute,
// checked against its data-points.
std::map<std::string, std::size_t> chart_lines(const std::string& dom) {
  std::map<std::string, std::size_t> lines;
  const std::regex svg("<svg class=\"hc\"[^>]* data-chart=\"([a-z]+)\" data-loop=\"([^\"]*)\">(.*?)</svg>");
  const std::regex line("<polyline class=\"hc-line\" points=\"([^\"]*)\"[^>]* data-series=\"([^\"]*)\" data-points=\"([0-9]+)\">");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), svg); it != std::sregex_iterator(); ++it) {
    const std::string body = (*it)[3].str();
    for (auto l = std::sregex_iterator(body.begin(), body.end(), line); l != std::sregex_iterator(); ++l) {
      const std::string points = (*l)[1].str();
      const std::size_t n = points.empty() ? 0 : count(points, " ") + 1;
      EXPECT_EQ(std::to_string(n), (*l)[3].str()) << (*l)[2].str();
      lines[(*it)[1].str() + "/" + (*it)[2].str() + "/" + (*l)[2].str()] = n;
    }
  }
  return lines;
}

TEST(ExportBrowser, HealthRecordsBecomeChartsOfLoadRateAndLatencyOverTime) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium): browser check skipped";
  test::TempDir dir;
  std::vector<FixtureRecord> records(1);
  records[0].report = 1, records[0].event = "ota_verify", records[0].dispatch = 10, records[0].duration_us = 400000;
  std::string content = to_json_line(records[0]);
  // Loop main: 4 windows, events tick (every window) and a display with markup in its name
  // (the last 2 windows); loop net: 2 windows without idle time and without events.
  const std::size_t main_points = 4, net_points = 2;
  for (std::uint32_t i = 0; i < main_points; ++i) {
    test::HealthSpecJson s;
    s.number = i + 1, s.start = 1000000 * i, s.dispatches = 100 * (i + 1), s.busy = 200000 * (i + 1);
    s.event = &kTickHealth, s.p99 = 500 * (i + 1);
    loopcanary::HealthRecord h = test::health_record(s);
    if (i >= 2) {
      h.event_count = 2;
      h.events[1] = h.events[0];
      h.events[1].event = &kDisplayHealth;
    }
    content += test::health_line(h);
  }
  for (std::uint32_t i = 0; i < net_points; ++i) {
    test::HealthSpecJson s;
    s.number = 10 + i, s.loop = "net", s.loop_index = 1, s.start = 500000 * i, s.window = 500000, s.idle = -1;
    content += test::health_line(test::health_record(s));
  }
  const std::string page = dir.write("report.html", "");
  const auto run = run_export_on("html", {dir.write("a.jsonl", content)}, page);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("; 6 health records, 6 charted for 2 loops"), std::string::npos) << run.err;
  const Loaded loaded = load(chromium, dir, page);
  ASSERT_EQ(loaded.status, 0);
  EXPECT_TRUE(loaded.console.empty()) << loaded.console.front();
  const std::string& dom = loaded.dom;
  EXPECT_NE(dom.find("data-ready=\"true\""), std::string::npos) << "the page's script did not finish";
  EXPECT_EQ(count(dom, "<svg class=\"hc\""), 6u) << "load, rate and latency per loop";
  EXPECT_EQ(count(dom, "<b>"), 0u) << "an event name became an element";
  const std::map<std::string, std::size_t> expected = {
      {"load/main/load", main_points},  {"load/main/idle", main_points}, {"rate/main/dispatches", main_points},
      {"latency/main/tick", main_points}, {"latency/main/" + html_text("<b>display</b>"), 2},
      {"load/net/load", net_points},    {"rate/net/dispatches", net_points}};
  EXPECT_EQ(chart_lines(dom), expected);
  EXPECT_NE(dom.find("<h2 id=\"health-head\">Health over time</h2>"), std::string::npos);
}

TEST(ExportBrowser, WithoutHealthRecordsThePageHasNoCharts) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (Debian package chromium): browser check skipped";
  test::TempDir dir;
  std::vector<FixtureRecord> records(1);
  records[0].report = 1, records[0].event = "ota_verify", records[0].dispatch = 10;
  const std::string page = dir.write("report.html", "");
  const auto run = run_export_on("html", {write_records(dir, "a.jsonl", records)}, page);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err.find("health records"), std::string::npos) << run.err;
  const Loaded loaded = load(chromium, dir, page);
  ASSERT_EQ(loaded.status, 0);
  EXPECT_TRUE(loaded.console.empty()) << loaded.console.front();
  EXPECT_EQ(count(loaded.dom, "<svg class=\"hc\""), 0u);
  EXPECT_NE(loaded.dom.find("<h2 id=\"health-head\" style=\"display: none;\">"), std::string::npos);
}

}  // namespace
}  // namespace loopcanary::tool::testing
