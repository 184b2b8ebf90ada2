// SPDX-License-Identifier: MIT
// The call chain the stack-sample tests block in (unwind_test.cpp: unwound from stack evidence
// on the host; frame_chain_test.cpp: the frame-pointer chain walked on the device):
// lc_unwind_handler -> lc_chain_1 -> ... -> lc_chain_6, seven user functions (noipa: each a
// function of its own, kept so at -O2 and under LTO) with frames of several shapes (callee-saved
// registers only, locals, an array on the stack). lc_chain_6 computes until the clock passes a
// deadline, calling lc_leaf_tiny and the compiler's 64-bit division helper in every round.
// Outside any namespace: addr2line names the functions plainly ("lc_chain_6(...)"), as the
// host checks (CHAIN and CULPRIT of device.unwind and device.frame_chain) expect.
#pragma once

#include <cstdint>

#include "loopcanary/time.hpp"

/// A user function as small as a leaf gets (on Cortex-M it also saves three registers, a
/// prologue and an epilogue of its own, so samples land there on purpose and must unwind as
/// well as any other). Returns x * 3 + 1. Any context; no error.
std::uint32_t lc_leaf_tiny(std::uint32_t x);

/// Computes inside the chain until `length` ticks of the port's clock (device_port::Clock) have
/// passed, then returns. Loop context, after the port's init(); `length` below 2^31 ticks.
void lc_unwind_handler(loopcanary::tick_t length);
