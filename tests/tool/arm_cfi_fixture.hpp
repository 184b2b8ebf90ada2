// SPDX-License-Identifier: MIT
// A small Cortex-M call-frame information for the decoder's tests and the capture fuzz target
// (sim/tool/arm_unwind.hpp): function A [0x1000, 0x1100) `push {r4, lr}` (CFA sp+8 from 0x1002,
// r4 at CFA-8, lr at CFA-4), C [0x3000, 0x3010) the outermost (lr undefined), and A's code with
// `bx lr` at 0x1020. A sample at 0x1010 with SP at S and the word 0x3005 at S + 4 unwinds to
// A <- C.
#pragma once

#include <memory>
#include <utility>

#include "arm_unwind.hpp"
#include "packet_reader.hpp"

namespace loopcanary::tool::test {

inline std::shared_ptr<const StackUnwind> two_functions() {
  auto cfi = std::make_shared<ArmCfi>();
  ArmCie cie;
  cie.version = 1;
  cie.code_alignment = 2;
  cie.data_alignment = -4;
  cie.return_column = 14;
  cie.instructions = {0x0c, 13, 0};  // def_cfa sp + 0
  cfi->cies.push_back(cie);
  ArmFde a;
  a.begin = 0x1000;
  a.end = 0x1100;
  a.instructions = {0x41, 0x0e, 8, 0x84, 2, 0x8e, 1};
  ArmFde c;
  c.begin = 0x3000;
  c.end = 0x3010;
  c.instructions = {0x07, 14};
  cfi->fdes = {a, c};
  cfi->reach = {0x1100, 0x3010};
  cfi->code_address = 0x1000;
  cfi->code.assign(0x100, 0);
  cfi->code[0x20] = 0x70;  // 0x4770: bx lr
  cfi->code[0x21] = 0x47;
  auto unwind = std::make_shared<StackUnwind>();
  unwind->cfi = std::move(cfi);
  return unwind;
}

}  // namespace loopcanary::tool::test
