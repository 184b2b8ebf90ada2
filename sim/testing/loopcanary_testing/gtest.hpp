// SPDX-License-Identifier: MIT
// GoogleTest integration of BlockGuard (header only: the test links GoogleTest, the package
// does not).
//
//   loopcanary::testing::BlockGuard guard(board, config, loopcanary::testing::gtest_failure());
//     each dispatch over budget is a non-fatal failure of the running test, its report the
//     message (at finish() or when the guard goes out of scope), at the file and line where
//     gtest_failure() was called;
//   LOOPCANARY_EXPECT_NO_BLOCKS(guard);  LOOPCANARY_ASSERT_NO_BLOCKS(guard);
//     finishes the guard and expects (asserts) no dispatch over budget, printing every report;
//   LOOPCANARY_EXPECT_BLOCK(guard, event);
//     finishes the guard and expects a dispatch of `event` over its budget (a test of a case
//     that must block).
#pragma once

#include <gtest/gtest.h>

#include "loopcanary_testing/block_guard.hpp"

namespace loopcanary::testing {

/// A FailureCallback that adds a non-fatal GoogleTest failure with the block's report, at
/// `file`:`line`: by default the line that calls gtest_failure() (GCC's and clang's
/// __builtin_FILE / __builtin_LINE, evaluated at the call). Loop thread (the test's).
inline FailureCallback gtest_failure(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return [file, line](const Failure& failure) { ADD_FAILURE_AT(file, line) << failure.report; };
}

}  // namespace loopcanary::testing

/// Finishes `guard` (a BlockGuard) and expects no dispatch over its budget; the failure message
/// holds every report, at the line of the macro.
#define LOOPCANARY_EXPECT_NO_BLOCKS(guard) \
  EXPECT_EQ((guard).finish(), 0u) << "dispatches over budget:\n" << (guard).report()

/// As LOOPCANARY_EXPECT_NO_BLOCKS, fatal: the test stops there.
#define LOOPCANARY_ASSERT_NO_BLOCKS(guard) \
  ASSERT_EQ((guard).finish(), 0u) << "dispatches over budget:\n" << (guard).report()

/// Finishes `guard` and expects a dispatch of `event` (a loopcanary::Event) over its budget.
#define LOOPCANARY_EXPECT_BLOCK(guard, event)                                                      \
  EXPECT_TRUE(((void)(guard).finish(), (guard).blocked(event)))                                    \
      << "expected a dispatch of \"" << (event).name << "\" over its budget; dispatches over budget:\n" \
      << (guard).report()
