// SPDX-License-Identifier: MIT
// Blocks from records (sim/tool/blocks.cpp): one block per dispatch whatever reports it had,
// the culprit rule with and without --concern, --ignore, filters, block IDs; and `show`.
#include <gtest/gtest.h>

#include <sstream>

#include "commands.hpp"
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
  BlockAssembler assembler(std::move(rules), [&](const Block& b) { blocks.push_back(b); });
  for (const LogRecord& r : records) assembler.add(r);
  assembler.finish();
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
  BlockAssembler assembler({}, [&](const Block& b) { blocks.push_back(b); });
  assembler.add(parse(final_));
  assembler.add(parse(late));
  assembler.finish();
  EXPECT_EQ(blocks.size(), 2u);
  EXPECT_EQ(assembler.out_of_order(), 1u);
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
  EXPECT_DOUBLE_EQ(c.share(), 0.6);
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
