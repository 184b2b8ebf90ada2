// SPDX-License-Identifier: MIT
// Blocks from records (sim/tool/blocks.cpp): one block per dispatch whatever reports it had,
// the culprit rule with and without --concern, --ignore, filters, block IDs; and `show`, waits
// included.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "commands.hpp"
#include "loopcanary/format.hpp"
#include "loopcanary_culprit/culprit_rule.hpp"
#include "../record_fixtures.hpp"
#include "test_util.hpp"

namespace loopcanary::tool {
namespace {

using test::json_line;
using test::RecordSpec;
using test::TempDir;

LogRecord parse(const RecordSpec& spec, const std::string& source = "dev.jsonl") {
  LogRecord r;
  WarningKind kind{};
  std::string what;
  const std::string line = json_line(spec);
  EXPECT_TRUE(parse_record(line.data(), line.size() - 1, r, kind, what)) << what;
  r.file = r.source = source;
  return r;
}

std::vector<Block> assemble(const std::vector<LogRecord>& records, CulpritRules rules = {}) {
  std::vector<Block> blocks;
  BlockGrouper grouper(std::move(rules), [&](const Block& b) { blocks.push_back(b); });
  for (const LogRecord& r : records) grouper.add(r);
  grouper.finish();
  return blocks;
}

TEST(ToolBlocks, InProgressHangAndFinalOfADispatchAreOneBlock) {
  RecordSpec in_progress, hang, final_;
  in_progress.phase = "in_progress";
  in_progress.duration_us = 110000;
  hang.report = 2;
  hang.phase = "hang";
  hang.flags = "\"hung\"";
  hang.duration_us = 1000000;
  final_.report = 3;
  final_.duration_us = 1010000;
  final_.flags = "\"hung\"";
  const std::vector<Block> blocks = assemble({parse(in_progress), parse(hang), parse(final_)});
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].reports, 3u);
  EXPECT_TRUE(blocks[0].has_final);
  EXPECT_TRUE(blocks[0].hung);
  EXPECT_EQ(blocks[0].record.phase, Phase::final);
  EXPECT_EQ(blocks[0].record.duration_us, 1010000u);
}

TEST(ToolBlocks, WithoutAFinalTheLatestReportStands) {
  RecordSpec in_progress, hang, next;
  in_progress.phase = "in_progress";
  hang.report = 2;
  hang.phase = "hang";
  hang.duration_us = 1000000;
  next.report = 3;
  next.dispatch = 6;
  next.start = 2'000'000;
  const std::vector<Block> blocks = assemble({parse(in_progress), parse(hang), parse(next)});
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].reports, 2u);
  EXPECT_FALSE(blocks[0].has_final);
  EXPECT_TRUE(blocks[0].hung);
  EXPECT_EQ(blocks[0].record.phase, Phase::hang);
  EXPECT_EQ(blocks[1].record.dispatch, 6u);
}

TEST(ToolBlocks, LoopsAndSourcesAreKeptApart) {
  RecordSpec a, b;
  a.phase = "in_progress";
  b.phase = "in_progress";
  b.loop = "radio";
  RecordSpec a_final = a, b_final = b;
  a_final.phase = b_final.phase = "final";
  a_final.report = 3;
  b_final.report = 4;
  b.report = 2;
  // Same dispatch numbers on two loops, interleaved; and the same loop in another device's log.
  const std::vector<Block> blocks =
      assemble({parse(a), parse(b), parse(a, "other.jsonl"), parse(a_final), parse(b_final)});
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].record.loop, "main");
  EXPECT_EQ(blocks[0].reports, 2u);
  EXPECT_EQ(blocks[1].record.loop, "radio");
  EXPECT_EQ(blocks[1].reports, 2u);
  EXPECT_EQ(blocks[2].record.source, "other.jsonl");
  EXPECT_EQ(blocks[2].reports, 1u);
}

TEST(ToolBlocks, AReportAfterItsFinalIsCountedApart) {
  RecordSpec final_, late;
  late.report = 2;
  late.phase = "in_progress";
  std::vector<Block> blocks;
  BlockGrouper grouper({}, [&](const Block& b) { blocks.push_back(b); });
  grouper.add(parse(final_));
  grouper.add(parse(late));
  grouper.finish();
  EXPECT_EQ(blocks.size(), 2u);
  EXPECT_EQ(grouper.out_of_order(), 1u);
}

// The in-progress report in a rotated file and the final one in the current file of the same
// log: one block, through the reader.
TEST(ToolBlocks, ADispatchAcrossARotationIsOneBlock) {
  TempDir dir;
  RecordSpec in_progress, final_;
  in_progress.phase = "in_progress";
  final_.report = 2;
  dir.write("dev.20260101T000000Z-000001.jsonl", json_line(in_progress));
  dir.write("dev.jsonl", json_line(final_));
  std::ostringstream warnings;
  Reader reader(warnings);
  std::vector<Block> blocks;
  const BlockStats stats = read_blocks(reader, {dir.path()}, {}, {}, [&](const Block& b) { blocks.push_back(b); });
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].reports, 2u);
  EXPECT_EQ(stats.blocks, 1u);
  EXPECT_EQ(stats.kept, 1u);
}

Sample sample(std::initializer_list<Frame> frames) {
  Sample s;
  s.frames = frames;
  return s;
}

Frame scope(const char* name) {
  Frame f;
  f.scope = name;
  return f;
}

Frame function(const char* name, const char* module = "/opt/fw/app") {
  Frame f;
  f.pc = 0x1000;
  f.function = name;
  f.module = module;
  return f;
}

TEST(ToolCulprit, TheDefaultSkipsTheRuntimeAndTheCLibraries) {
  const Sample s = sample({function("memcpy", "/lib/x86_64-linux-gnu/libc.so.6"),
                           function("loopcanary::simrt::Board::wait_us(unsigned int)"),
                           function("std::vector<int>::push_back(int const&)"),
                           function("__vdso_clock_gettime", "[vdso]"), function("app::flush()")});
  const std::optional<std::size_t> at = sample_culprit(s, {});
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(*at, 4u);
}

// A firmware links the C library and the compiler's helpers into its own image: no module says
// whose they are, their names do (whole names for the C library, so a user's memcpy_fast stays
// the user's).
TEST(ToolCulprit, TheDefaultSkipsAFirmwaresLibraryLeaves) {
  const Sample s = sample({function("__aeabi_uldivmod", ""), function("__udivmoddi4", ""), function("memcpy", ""),
                           function("lc_chain_6(unsigned int)", ""), function("lc_chain_5(unsigned int)", "")});
  EXPECT_EQ(sample_culprit(s, {}), std::optional<std::size_t>(3));
  EXPECT_EQ(sample_culprit(sample({function("memcpy_fast(void*)", ""), function("memcpy", "")}), {}),
            std::optional<std::size_t>(0));
  EXPECT_EQ(sample_culprit(sample({function("strlen", ""), function("__aeabi_memcpy", "")}), {}), std::nullopt);
}

// A function template's demangled name starts with its return type: the rule reads the
// qualified name after it ("void std::this_thread::sleep_for<...>" is the C++ library's).
TEST(ToolCulprit, AReturnTypeBeforeATemplatesNameHidesNoRuntimeFrame) {
  const Sample s = sample({function("void std::this_thread::sleep_for<long, std::ratio<1l, 1000l> >("
                                    "std::chrono::duration<long, std::ratio<1l, 1000l> > const&)"),
                           function("std::vector<int, std::allocator<int> > asio::detail::make<int>(int)"),
                           function("(anonymous namespace)::tick(int)")});
  EXPECT_EQ(sample_culprit(s, {}), std::optional<std::size_t>(2));
  EXPECT_EQ(culprit::qualified_name("unsigned long app::count<3>(char const*)"), "app::count<3>(char const*)");
  EXPECT_EQ(culprit::qualified_name("main::{lambda(void*)#1}::_FUN(void*)"), "main::{lambda(void*)#1}::_FUN(void*)");
}

// A handler the compiler inlined into the runtime's wrapper (Asio's do_complete, std::function's
// _M_invoke) is named by its lambda, read from the wrapper's template argument; a function it
// calls that kept its own frame comes first.
TEST(ToolCulprit, ALambdaInlinedIntoTheRuntimesWrapperIsTheCulprit) {
  const std::string asio_frame =
      "asio::detail::wait_handler<main::{lambda(std::error_code const&)#1}, asio::any_io_executor>::do_complete("
      "void*, asio::detail::scheduler_operation*, std::error_code const&, unsigned long)";
  const Sample s = sample({function("clock_nanosleep", "/lib/x86_64-linux-gnu/libc.so.6"), function(asio_frame.c_str()),
                           function("asio::detail::scheduler::run(std::error_code&)"), function("main")});
  EXPECT_EQ(sample_culprit(s, {}), std::optional<std::size_t>(1));
  const auto lambda = [](const std::string& name) {
    return std::string(culprit::inlined_lambda(culprit::FrameFacts{{}, name, {}, "/opt/app/server"}));
  };
  EXPECT_EQ(lambda(asio_frame), "main::{lambda(std::error_code const&)#1}");
  EXPECT_EQ(lambda("std::_Function_handler<void (), app::Timer::arm(int)::{lambda()#1}>::_M_invoke(std::_Any_data const&)"),
            "app::Timer::arm(int)::{lambda()#1}");
  EXPECT_EQ(lambda("asio::detail::executor_op<asio::detail::binder0<main::$_0>, std::allocator<void>, "
                   "asio::detail::scheduler_operation>::do_complete(void*)"),
            "main::$_0");
  EXPECT_EQ(lambda("std::_Function_handler<void (), main::{lambda()#1}::operator()() const::{lambda()#2}>::_M_invoke("
                   "std::_Any_data const&)"),
            "main::{lambda()#1}::operator()() const::{lambda()#2}");
  // Not a runtime class template running a lambda: no lambda, the frame keeps its own name.
  EXPECT_EQ(lambda("app::Dispatcher<main::{lambda()#1}>::run()"), "");                         // the user's own
  EXPECT_EQ(lambda("void std::sort<int*, main::{lambda(int, int)#1}>(int*, int*)"), "");       // a function template
  EXPECT_EQ(lambda("std::vector<int, std::allocator<int> >::push_back(int const&)"), "");     // no lambda
  EXPECT_EQ(lambda("asio::detail::scheduler::run(std::error_code&)"), "");
  EXPECT_EQ(lambda("main::{lambda(uv_timer_s*)#1}::_FUN(uv_timer_s*)"), "");  // the lambda's own frame
  // The block's culprit goes by the lambda's name.
  LogRecord r;
  r.stacks = {s, s};
  EXPECT_EQ(block_culprit(r, {}).label, "main::{lambda(std::error_code const&)#1}");
}

TEST(ToolCulprit, AScopeIsTheUsersOwnCode) {
  const Sample s = sample({scope("flash.program"), function("app::flash_program_page()")});
  EXPECT_EQ(sample_culprit(s, {}), std::optional<std::size_t>(0));
}

TEST(ToolCulprit, ConcernPicksTheFirstMatchingFrameByFunctionOrModule) {
  const Sample s = sample({scope("radio.spi"), function("hal::spi_wait()", "/opt/fw/libhal.so"),
                           function("app::radio_exchange()")});
  CulpritRules by_function;
  by_function.concern = {"app::"};
  EXPECT_EQ(sample_culprit(s, by_function), std::optional<std::size_t>(2));
  CulpritRules by_module;
  by_module.concern = {"libhal"};  // a module's base name
  EXPECT_EQ(sample_culprit(s, by_module), std::optional<std::size_t>(1));
  CulpritRules by_path;
  by_path.concern = {"/opt/fw/app"};
  EXPECT_EQ(sample_culprit(s, by_path), std::optional<std::size_t>(2));
  CulpritRules none;
  none.concern = {"nothing::"};
  EXPECT_FALSE(sample_culprit(s, none).has_value());
}

TEST(ToolCulprit, TheBlockCulpritIsTheMostFrequentWithItsShare) {
  LogRecord r;
  r.stacks = {sample({scope("b")}), sample({scope("a")}), sample({scope("a")}), sample({scope("b")}),
              sample({scope("a")})};
  const Culprit c = block_culprit(r, {});
  EXPECT_EQ(c.label, "a");
  EXPECT_EQ(c.samples, 3u);
  EXPECT_EQ(c.of, 5u);
  EXPECT_EQ(c.share_permille(), 600u);
  r.stacks.pop_back();  // 2 and 2: the first seen wins
  EXPECT_EQ(block_culprit(r, {}).label, "b");
  EXPECT_FALSE(block_culprit(LogRecord{}, {}).known());
}

TEST(ToolCulprit, IgnoreLeavesOutBlocksWhoseCulpritMatches) {
  TempDir dir;
  RecordSpec a, b;
  a.stacks = "{\"at_us\":1,\"scopes\":[\"radio.spi\"]}";
  b.report = 2;
  b.dispatch = 6;
  b.start = 5'000'000;
  b.stacks = "{\"at_us\":1,\"scopes\":[\"ota.crc32\"]}";
  const std::string path = dir.write("dev.jsonl", json_line(a) + json_line(b));
  std::ostringstream warnings;
  Reader reader(warnings);
  CulpritRules rules;
  rules.ignore = {"radio."};
  std::vector<std::string> culprits;
  const BlockStats stats =
      read_blocks(reader, {path}, rules, {}, [&](const Block& block) { culprits.push_back(block.culprit.label); });
  ASSERT_EQ(culprits.size(), 1u);
  EXPECT_EQ(culprits[0], "ota.crc32");
  EXPECT_EQ(stats.ignored, 1u);
  EXPECT_EQ(stats.blocks, 2u);
}

TEST(ToolFilter, EachCriterionHolds) {
  Block block;
  block.record.duration_us = 300000;
  block.record.event = "ota";
  block.record.qualifier = "fw-1";
  block.record.cause = Cause::waiting;
  Filter f;
  EXPECT_TRUE(f.accepts(block));
  f.min_us = 300000;
  EXPECT_TRUE(f.accepts(block));
  f.min_us = 300001;
  EXPECT_FALSE(f.accepts(block));
  f = Filter{};
  f.events = {"other", "ota"};
  EXPECT_TRUE(f.accepts(block));
  f.qualifiers = {"fw-2"};
  EXPECT_FALSE(f.accepts(block));
  f = Filter{};
  f.causes = {Cause::running};
  EXPECT_FALSE(f.accepts(block));
  f = Filter{};
  f.since_ms = 0;
  EXPECT_FALSE(f.accepts(block));  // no wall time
  block.record.wall_ms = 1000;
  EXPECT_TRUE(f.accepts(block));
  f.until_ms = 1000;
  EXPECT_FALSE(f.accepts(block));  // until is exclusive
}

TEST(ToolBlocks, TheIdIsTwelveHexDigitsAndNamesTheDispatch) {
  const LogRecord a = parse(RecordSpec{});
  RecordSpec other;
  other.dispatch = 6;
  const std::string id = block_id(a);
  EXPECT_EQ(id.size(), 12u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(block_id(parse(RecordSpec{}, "elsewhere.jsonl")), id);  // the same dispatch of the same firmware
  EXPECT_NE(block_id(parse(other)), id);
}

TEST(ToolShow, PrintsEveryReportOfTheBlockWithItsStacks) {
  TempDir dir;
  RecordSpec in_progress, final_, other;
  in_progress.phase = "in_progress";
  final_.report = 2;
  other.report = 3;
  other.dispatch = 9;
  other.start = 9'000'000;
  const std::string path = dir.write("dev.jsonl", json_line(in_progress) + json_line(final_) + json_line(other));
  Options options;
  options.command = "show";
  options.paths = {path};
  options.id = block_id(parse(RecordSpec{}));
  std::ostringstream out, err;
  EXPECT_EQ(run_show(options, out, err), 0);
  const std::string text = out.str();
  EXPECT_NE(text.find("block " + options.id), std::string::npos) << text;
  EXPECT_NE(text.find("report 1 (in_progress)  " + path + ":1"), std::string::npos) << text;
  EXPECT_NE(text.find("report 2 (final)  " + path + ":2"), std::string::npos) << text;
  EXPECT_EQ(text.find("report 3"), std::string::npos) << text;
  EXPECT_NE(text.find("      * crc\n        0x1234\n"), std::string::npos) << text;
  options.id = "ffffffffffff" == options.id ? "000000000000" : "ffffffffffff";
  std::ostringstream out2, err2;
  EXPECT_EQ(run_show(options, out2, err2), 1);
  EXPECT_NE(err2.str().find("no block with ID"), std::string::npos);
}

// The core's JSON line of hand_waiting_block() (record_fixtures.hpp), with a "linux" member that
// names the function of the lock holder's innermost PC.
std::string waiting_line() {
  std::string line(1 << 16, '\0');
  line.resize(format_json(loopcanary::test::hand_waiting_block(), &line[0], line.size()).length);
  line.insert(line.rfind('}'), ",\"linux\":{\"frames\":[{\"pc\":\"0x401000\",\"function\":\"journal_flush\","
                               "\"function_offset\":\"0x10\"}]}");
  return line;
}

// show: the cause names the main wait object and its holder's innermost frames, symbolised; the
// waits list every object as the core's text form does (one description, format_wait), each
// holder's stack symbolised as the loop's frames.
TEST(ToolShow, PrintsTheWaitsWithTheHoldersStack) {
  if constexpr (kWaitObjects < 2) GTEST_SKIP() << "a build without wait objects";
  TempDir dir;
  const std::string line = waiting_line();
  const std::string path = dir.write("dev.jsonl", line);
  LogRecord r;
  WarningKind kind{};
  std::string what;
  ASSERT_TRUE(parse_record(line.data(), line.size() - 1, r, kind, what)) << what;
  Options options;
  options.command = "show";
  options.paths = {path};
  options.id = block_id(r);
  std::ostringstream out, err;
  ASSERT_EQ(run_show(options, out, err), 0) << err.str();
  const std::string text = out.str();
  const std::string lock = "mutex 0x7f00a0 held by 'journal' (tid 4242, loop 'journal')";
  EXPECT_NE(text.find("\n  cause = waiting on " + lock + "; holder in journal_flush <- 0x401234\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\n    71.4 % 5 " + lock + "\n      holder journal (tid 4242):\n"
                      "        journal_flush+0x10 [0x401000]\n        0x401234\n"
                      "    14.2 % 1 pipe fd 5 pipe:[81234]\n    other 1\n"),
            std::string::npos)
      << text;
  // Each object's line of the core's text form, its share of the samples included (one rounding
  // rule: 1 of 7 is 14.2 %), is in show's list as it is there, two columns further in.
  std::string core(1 << 16, '\0');
  core.resize(format_text(loopcanary::test::hand_waiting_block(), &core[0], core.size()).length);
  const std::size_t waits = core.find("\nwaits:\n");
  ASSERT_NE(waits, std::string::npos) << core;
  for (const char* object : {"5 mutex", "1 pipe"}) {
    const std::size_t at = core.find(object, waits);
    ASSERT_NE(at, std::string::npos) << core;
    const std::size_t begin = core.rfind('\n', at) + 1;
    EXPECT_NE(text.find("\n  " + core.substr(begin, core.find('\n', at) - begin) + "\n"), std::string::npos)
        << object << "\n" << core << text;
  }
}

// A stage list for RecordSpec::extra: "stages" with (name, µs) entries.
std::string stages_member(const std::vector<std::pair<std::string, std::uint64_t>>& stages) {
  std::string out = ",\"stages\":[";
  for (std::size_t i = 0; i < stages.size(); ++i) {
    out += (i == 0 ? "{\"name\":\"" : ",{\"name\":\"") + stages[i].first + "\",\"us\":" + std::to_string(stages[i].second) + "}";
  }
  return out + "]";
}

std::string ms_text(std::uint64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%llu.%03llu", static_cast<unsigned long long>(us / 1000),
                static_cast<unsigned long long>(us % 1000));
  return text;
}

TEST(ToolShow, PrintsTheStagesOfEachReportThatHasThem) {
  TempDir dir;
  RecordSpec in_progress, final_;
  in_progress.phase = "in_progress";  // no stages member: a log written before stages
  final_.report = 2;
  const std::vector<std::pair<std::string, std::uint64_t>> stages = {{"input", 1500}, {"compute", 180250}};
  final_.extra = stages_member(stages);
  const std::string path = dir.write("dev.jsonl", json_line(in_progress) + json_line(final_));
  Options options;
  options.command = "show";
  options.paths = {path};
  options.id = block_id(parse(RecordSpec{}));
  std::ostringstream out, err;
  ASSERT_EQ(run_show(options, out, err), 0) << err.str();
  const std::string text = out.str();
  const std::string line = "  stages = " + stages[0].first + " " + ms_text(stages[0].second) + " ms, " + stages[1].first +
                           " " + ms_text(stages[1].second) + " ms\n";
  // Once, in the final report, right after its duration line.
  const std::size_t final_at = text.find("report 2 (final)");
  ASSERT_NE(final_at, std::string::npos) << text;
  const std::size_t at = text.find(line);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_GT(at, final_at);
  EXPECT_EQ(text.rfind("stages =", at == 0 ? 0 : at - 1), std::string::npos) << text;
  EXPECT_EQ(text.compare(text.rfind('\n', at - 2) + 1, 13, "  duration = "), 0) << text;  // the line before
}

// report: per group, each stage's mean share of its blocks' durations, over the blocks that have
// stages; what no stage covers is "outside stages". Shares here are exact binary fractions.
TEST(ToolReport, PrintsTheStageSplitOfEachGroupWithStages) {
  TempDir dir;
  struct In {
    std::uint64_t duration;
    std::vector<std::pair<std::string, std::uint64_t>> stages;
  };
  const std::vector<In> blocks = {
      {200000, {{"input", 50000}, {"compute", 100000}}},
      {100000, {{"input", 50000}, {"output", 25000}}},
      {100000, {}},  // no stages: not in the split
  };
  std::string content;
  std::map<std::string, double> sums;
  std::vector<std::string> order;
  double outside = 0;
  std::size_t with_stages = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    RecordSpec r;
    r.report = i + 1;
    r.dispatch = i + 1;
    r.start = 1000000 * i;
    r.duration_us = blocks[i].duration;
    if (!blocks[i].stages.empty()) r.extra = stages_member(blocks[i].stages);
    content += json_line(r);
    if (blocks[i].stages.empty()) continue;
    ++with_stages;
    double covered = 0;
    for (const auto& [name, us] : blocks[i].stages) {
      if (sums.count(name) == 0) order.push_back(name);
      const double share = static_cast<double>(us) / static_cast<double>(blocks[i].duration);
      sums[name] += share;
      covered += share;
    }
    outside += 1 - covered;
  }
  // A second culprit whose block has no stages: no stages line.
  RecordSpec plain;
  plain.report = 9, plain.dispatch = 9, plain.start = 9000000;
  plain.stacks = "{\"at_us\":1,\"scopes\":[\"other\"],\"pcs\":[]}";
  content += json_line(plain);
  const std::string path = dir.write("dev.jsonl", content);
  const auto pct = [&](double sum) {
    char text[16];
    std::snprintf(text, sizeof text, "%.1f", sum / static_cast<double>(with_stages) * 100.0);
    return std::string(text);
  };
  std::string split;
  for (const std::string& name : order) split += name + " " + pct(sums[name]) + " %, ";
  Options options;
  options.command = "report";
  options.paths = {path};
  std::ostringstream out, err;
  ASSERT_EQ(run_report(options, out, err), 0) << err.str();
  const std::string line = "  stages (mean share of " + std::to_string(with_stages) + " of " + std::to_string(blocks.size()) +
                           " blocks): " + split + "outside stages " + pct(outside) + " %\n";
  ASSERT_NE(out.str().find("\ncrc\n"), std::string::npos) << out.str();
  EXPECT_GT(out.str().find(line), out.str().find("\ncrc\n")) << out.str();
  EXPECT_NE(out.str().find(line), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("stages (", out.str().find("\nother\n")), std::string::npos) << out.str();
  // JSON: the same split.
  options.format = "json";
  std::ostringstream json, json_err;
  ASSERT_EQ(run_report(options, json, json_err), 0) << json_err.str();
  std::string members;
  for (const std::string& name : order) {
    members += (members.empty() ? "" : ",") + std::string("{\"name\":\"") + name + "\",\"percent\":" + pct(sums[name]) + "}";
  }
  EXPECT_NE(json.str().find("\"stages\":{\"blocks\":" + std::to_string(with_stages) + ",\"split\":[" + members +
                            "],\"other_percent\":0.0,\"outside_percent\":" + pct(outside) + "}"),
            std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"stages\":{\"blocks\":0,\"split\":[],"), std::string::npos) << json.str();
}

// More distinct stage names in a group than it lists (32): the rest is one "other stages" share.
TEST(ToolReport, StageNamesBeyondTheLimitAreOneOtherShare) {
  TempDir dir;
  std::vector<std::pair<std::string, std::uint64_t>> stages;
  for (int i = 0; i < 40; ++i) stages.emplace_back("s" + std::to_string(i), 2500);  // 2.5 % of 100 ms each
  RecordSpec r;
  r.duration_us = 100000;
  r.extra = stages_member(stages);
  Options options;
  options.command = "report";
  options.paths = {dir.write("dev.jsonl", json_line(r))};
  std::ostringstream out, err;
  ASSERT_EQ(run_report(options, out, err), 0) << err.str();
  EXPECT_NE(out.str().find(", s31 2.5 %, other stages 20.0 %, outside stages 0.0 %\n"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("s32 "), std::string::npos) << out.str();
}

TEST(ToolReport, NothingReadableIsStatusOne) {
  TempDir dir;
  Options options;
  options.command = "report";
  options.paths = {dir.write("garbage.jsonl", "garbage\n")};
  std::ostringstream out, err;
  EXPECT_EQ(run_report(options, out, err), 1);
  EXPECT_NE(err.str().find("nothing readable"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace loopcanary::tool
