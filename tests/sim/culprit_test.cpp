// SPDX-License-Identifier: MIT
// The culprit over the whole block, in virtual time: a block's culprit and share come from every
// sample of the dispatch (its stack table), not from the samples kept (the latest
// LOOPCANARY_MAX_SAMPLES), through the test helper's failure (the runtime's CulpritFinder, the
// one culprit rule of docs/tool.md).
#include <gtest/gtest.h>

#include <string>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary_testing/block_guard.hpp"
#include "simrt/virtual_board.hpp"

namespace lc = loopcanary;
namespace simrt = loopcanary::simrt;
namespace lct = loopcanary::testing;

// The firmware's functions: each computes for the time given, in virtual time. Not inlined, so
// each is a frame of its own (the board reports its call site in them as the sampled PC).
__attribute__((noinline)) void culprit_test_early_work(simrt::Board& board, std::uint32_t us) {
  for (simrt::Burn burn(us); board.compute(burn);) {
  }
}
__attribute__((noinline)) void culprit_test_late_work(simrt::Board& board, std::uint32_t us) {
  for (simrt::Burn burn(us); board.compute(burn);) {
  }
}

namespace {

constexpr lc::Event kWork{"work"};

// One dispatch of kWork on a guard with `budget_us`: `early_us` in culprit_test_early_work, then
// `late_us` in culprit_test_late_work. Returns its one failure.
lct::Failure one_block(std::uint32_t budget_us, std::uint32_t early_us, std::uint32_t late_us) {
  simrt::VirtualBoard board;
  lct::GuardConfig config;
  config.budget_us = budget_us;
  lct::BlockGuard guard(board, config);
  EXPECT_TRUE(guard.start()) << guard.error();
  guard.dispatch(kWork, [&] {
    culprit_test_early_work(board, early_us);
    culprit_test_late_work(board, late_us);
  });
  EXPECT_EQ(guard.finish(), 1u);
  return guard.failures().empty() ? lct::Failure{} : guard.failures()[0];
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

// 9 ms in early_work() then 5 ms in late_work(), threshold 5 ms, sampled every 0.5 ms from the
// first poll: 28 samples, 18 in early_work (9/14 of the time: 64 %). The 16 kept are the last
// ones, 10 of them in late_work: read from them, late_work would be named.
TEST(CulpritOverTheWholeBlock, AnEarlyLongCallIsNamedWithItsTrueShare) {
  const lct::Failure f = one_block(5'000, 9'000, 5'000);
  EXPECT_TRUE(starts_with(f.function, "culprit_test_early_work(")) << f.report;
  EXPECT_EQ(f.record.samples_taken, 28u);
  EXPECT_EQ(f.record.sample_count, lc::kMaxSamples);
  std::uint32_t kept_late = 0;
  for (std::size_t i = 0; i < f.record.sample_count; ++i) kept_late += f.record.samples[i].at > f.record.start + 9'000u;
  EXPECT_GT(kept_late * 2, std::uint32_t{f.record.sample_count}) << "most kept samples are late_work's";
  EXPECT_NE(f.report.find("(18/28 samples)"), std::string::npos) << f.report;
}

// A hang whose first 90 % is in one function: its final record (flagged hung) names that
// function for 90 % of the samples, though every kept sample is in the last 10 %.
TEST(CulpritOverTheWholeBlock, AHangNamesTheFunctionOfItsFirstNinetyPercent) {
  const lct::Failure f = one_block(100'000, 9'000'000, 1'000'000);
  EXPECT_TRUE((f.record.flags & lc::kFlagHung) != 0) << f.report;
  EXPECT_TRUE(starts_with(f.function, "culprit_test_early_work(")) << f.report;
  EXPECT_EQ(f.record.samples_taken, 1000u);
  EXPECT_NE(f.report.find("(900/1000 samples)"), std::string::npos) << f.report;
  for (std::size_t i = 0; i < f.record.sample_count; ++i) {
    EXPECT_GT(f.record.samples[i].at - f.record.start, 9'000'000u) << "kept sample " << i << " is in late_work";
  }
}
