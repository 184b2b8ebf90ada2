// SPDX-License-Identifier: MIT
// GoogleTest integration of BlockGuard (header only: the test links GoogleTest, the package
// does not).
//
//   loopcanary::testing::BlockGuard guard(board, config, loopcanary::testing::gtest_failure());
//     each dispatch over budget is a non-fatal failure of the running test, its report the
//     message (at finish() or when the guard goes out of scope);
//   LOOPCANARY_EXPECT_NO_BLOCKS(guard);
//     finishes the guard and expects no dispatch over budget, printing every report.
#pragma once

#include <gtest/gtest.h>

#include "loopcanary_testing/block_guard.hpp"

namespace loopcanary::testing {

/// A FailureCallback that adds a non-fatal GoogleTest failure with the block's report. Loop
/// thread (the test's).
inline FailureCallback gtest_failure() {
  return [](const Failure& failure) { ADD_FAILURE() << failure.report; };
}

}  // namespace loopcanary::testing

/// Finishes `guard` (a BlockGuard) and expects no dispatch over its budget; the failure message
/// holds every report.
#define LOOPCANARY_EXPECT_NO_BLOCKS(guard) \
  EXPECT_EQ((guard).finish(), 0u) << "dispatches over budget:\n" << (guard).report()
