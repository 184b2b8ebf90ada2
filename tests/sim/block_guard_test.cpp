// SPDX-License-Identifier: MIT
// The test helper's budgets judge what they say (docs/testing.md), in virtual time: a scope's
// budget is judged on the exact time in the scope, whether or not the dispatch made a record;
// a failure is reported at the user's line; the fatal and the expected-block forms.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "loopcanary/loopcanary.hpp"
#include "loopcanary_testing/gtest.hpp"
#include "simrt/virtual_board.hpp"

namespace {

namespace lc = loopcanary;
namespace simrt = loopcanary::simrt;
namespace lct = loopcanary::testing;

void compute(simrt::Board& board, std::uint32_t us) {
  for (simrt::Burn burn(us); board.compute(burn);) {
  }
}

// A guard on a virtual board, started: `budget_us` for the loop, `scopes` budgets.
struct Guarded {
  explicit Guarded(std::uint32_t budget_us, std::vector<lct::ScopeBudget> scopes = {},
                   lct::FailureCallback on_failure = {}, std::uint32_t sample_interval_us = 0)
      : guard(board, config(budget_us, std::move(scopes), sample_interval_us), std::move(on_failure)) {
    started = guard.start();
  }
  static lct::GuardConfig config(std::uint32_t budget_us, std::vector<lct::ScopeBudget> scopes,
                                 std::uint32_t sample_interval_us) {
    lct::GuardConfig c;
    c.budget_us = budget_us;
    c.scopes = std::move(scopes);
    c.sample_interval_us = sample_interval_us;
    return c;
  }
  simrt::VirtualBoard board;
  lct::BlockGuard guard;
  bool started = false;
};

constexpr lc::Event kPlain{"plain"};
constexpr lc::Event kPatient{"patient", 12'000};  // its own threshold, above the loop's budget

// An event whose own threshold (12 ms) is above the loop's budget (10 ms): a 10 ms dispatch is
// within both and makes no record, but its 10 ms inside scope "b" are over b's 3 ms budget.
TEST(BlockGuardScopes, AScopeIsJudgedWhenItsDispatchMadeNoRecord) {
  Guarded g(10'000, {{"b", 3'000}});
  lct::BlockGuard& guard = g.guard;
  ASSERT_TRUE(g.started) << guard.error();
  guard.dispatch(kPatient, [&] {
    LOOPCANARY_SCOPE(guard.monitor(), "b");
    compute(g.board, 10'000);
  });
  ASSERT_EQ(guard.finish(), 1u) << guard.report();
  EXPECT_TRUE(guard.records().empty()) << "within every threshold: no record";
  const lct::Failure& f = guard.failures()[0];
  EXPECT_EQ(f.measure, "scope b");
  EXPECT_EQ(f.duration_us, 10'000u);
  EXPECT_EQ(f.budget_us, 3'000u);
  EXPECT_STREQ(f.event, "patient");
}

// 9 ms in scope "a", then 3 ms in "b", sampled every 200 us: in virtual time a scope's time is
// exact, 9.000 ms over a's 4 ms budget, and b's 3 ms are within its 4 ms.
TEST(BlockGuardScopes, VirtualTimeJudgesTheExactTimeInEachScope) {
  Guarded g(20'000, {{"a", 4'000}, {"b", 4'000}}, {}, 200);
  lct::BlockGuard& guard = g.guard;
  ASSERT_TRUE(g.started) << guard.error();
  guard.dispatch(kPlain, [&] {
    {
      LOOPCANARY_SCOPE(guard.monitor(), "a");
      compute(g.board, 9'000);
    }
    LOOPCANARY_SCOPE(guard.monitor(), "b");
    compute(g.board, 3'000);
  });
  ASSERT_EQ(guard.finish(), 1u) << guard.report();
  EXPECT_EQ(guard.failures()[0].measure, "scope a");
  EXPECT_EQ(guard.failures()[0].duration_us, 9'000u);
}

// A scope budget above the loop's budget is valid where its event's own budget is larger still.
TEST(BlockGuardScopes, AScopeBudgetMayExceedTheLoopsWhenItsEventsDoes) {
  constexpr lc::Event kLong{"long", 50'000};
  Guarded g(5'000, {{"c", 20'000}});
  lct::BlockGuard& guard = g.guard;
  ASSERT_TRUE(g.started) << guard.error();
  guard.dispatch(kLong, [&] {
    LOOPCANARY_SCOPE(guard.monitor(), "c");
    compute(g.board, 30'000);
  });
  ASSERT_EQ(guard.finish(), 1u) << guard.report();
  EXPECT_EQ(guard.failures()[0].measure, "scope c");
  EXPECT_EQ(guard.failures()[0].duration_us, 30'000u);
}

// gtest_failure() reports each dispatch over budget at the line that called it.
TEST(BlockGuardGtest, AFailureIsReportedAtTheUsersLine) {
  ::testing::TestPartResultArray results;
  int line = 0;
  {
    ::testing::ScopedFakeTestPartResultReporter capture(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    line = __LINE__ + 1;
    Guarded g(5'000, {}, lct::gtest_failure());
    ASSERT_TRUE(g.started);
    g.guard.dispatch(kPlain, [&] { compute(g.board, 8'000); });
  }
  ASSERT_EQ(results.size(), 1);
  const ::testing::TestPartResult& r = results.GetTestPartResult(0);
  EXPECT_TRUE(r.nonfatally_failed());
  EXPECT_NE(std::string(r.file_name()).find("block_guard_test.cpp"), std::string::npos) << r.file_name();
  EXPECT_EQ(r.line_number(), line);
}

void assert_no_blocks_over(std::uint32_t us) {
  Guarded g(5'000);
  ASSERT_TRUE(g.started);
  g.guard.dispatch(kPlain, [&] { compute(g.board, us); });
  LOOPCANARY_ASSERT_NO_BLOCKS(g.guard);
}

// The fatal form stops the test with the reports; within budget it passes.
TEST(BlockGuardGtest, AssertNoBlocksIsFatal) {
  EXPECT_FATAL_FAILURE(assert_no_blocks_over(8'000), "dispatches over budget:");
  assert_no_blocks_over(4'000);
}

void expect_block(const lc::Event& event, std::uint32_t us) {
  Guarded g(5'000);
  ASSERT_TRUE(g.started);
  g.guard.dispatch(event, [&] { compute(g.board, us); });
  LOOPCANARY_EXPECT_BLOCK(g.guard, event);
}

// A test of a case that must block: it passes when the event went over budget, fails when not.
TEST(BlockGuardGtest, ExpectBlockPassesOnlyWhenTheEventBlocked) {
  expect_block(kPlain, 8'000);
  EXPECT_NONFATAL_FAILURE(expect_block(kPlain, 4'000), "expected a dispatch of \"plain\" over its budget");
}

}  // namespace
