// SPDX-License-Identifier: MIT
// Test helper: a record's stack-table entry (loopcanary::TopStack) of one frame, a scope name or
// a program counter, as tests that build records by hand write them.
#pragma once

#include <cstdint>

#include "loopcanary/record.hpp"

namespace loopcanary::test {

/// An entry of `count` samples whose stack is the one frame `frame`: a scope name (`is_scope`,
/// its pointer) or a program counter (its innermost PC range is that one PC).
inline TopStack top_entry(Frame frame, bool is_scope, std::uint32_t count) {
  TopStack t;
  t.count = count;
  t.scope_count = is_scope ? 1 : 0;
  t.pc_count = is_scope ? 0 : 1;
  t.frames[0] = frame;
  t.leaf_high = is_scope ? 0 : frame;
  return t;
}

/// Whether `t`'s innermost frame is a scope.
inline bool top_is_scope(const TopStack& t) { return t.scope_count > 0; }

}  // namespace loopcanary::test
