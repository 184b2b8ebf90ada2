// SPDX-License-Identifier: MIT
#include "call_chain.hpp"

#include <cstddef>
#include <cstdint>

#include "device_port.hpp"

namespace dp = loopcanary::device_port;

#define LC_CHAIN __attribute__((noipa))

namespace {

volatile std::uint64_t g_dividend = 0x0123456789ABCDEFull;
volatile std::uint64_t g_divisor = 0x00000000FEDCBA98ull;
volatile std::uint32_t g_sink = 0;

}  // namespace

LC_CHAIN std::uint32_t lc_leaf_tiny(std::uint32_t x) {
#if defined(__arm__)
  __asm__ volatile("" ::: "r4", "r5", "r6");  // a prologue and an epilogue of their own
#endif
  return x * 3u + 1u;
}

// The innermost user function: a round of its own arithmetic, the tiny leaf, a 64-bit division
// (a library call on rv32 and on every Cortex-M: libgcc's __udivdi3, __aeabi_uldivmod), until the
// clock passes `until`.
LC_CHAIN std::uint32_t lc_chain_6(loopcanary::tick_t until) {
  std::uint32_t acc = 0;
  while (static_cast<std::int32_t>(until - dp::Clock::now()) > 0) {
    acc += lc_leaf_tiny(acc);
    acc ^= static_cast<std::uint32_t>(g_dividend / (g_divisor + acc));
  }
  return acc;
}

LC_CHAIN std::uint32_t lc_chain_5(loopcanary::tick_t until) { return lc_chain_6(until) + 5u; }

LC_CHAIN std::uint32_t lc_chain_4(loopcanary::tick_t until) {
  volatile std::uint32_t local[6] = {1, 2, 3, 4, 5, 6};  // a frame with an array in it
  const std::uint32_t r = lc_chain_5(until);
  return r ^ local[static_cast<std::size_t>(r % 6u)];
}

LC_CHAIN std::uint32_t lc_chain_3(loopcanary::tick_t until) {
  const std::uint32_t r = lc_chain_4(until);
  return r * 7u + g_sink;
}

LC_CHAIN std::uint32_t lc_chain_2(loopcanary::tick_t until, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  const std::uint32_t r = lc_chain_3(until);
  return r + a * b + c;  // values live across the call: callee-saved registers saved (pushed)
}

LC_CHAIN std::uint32_t lc_chain_1(loopcanary::tick_t until) { return lc_chain_2(until, g_sink, 3u, 4u) - 1u; }

LC_CHAIN void lc_unwind_handler(loopcanary::tick_t length) { g_sink = lc_chain_1(dp::Clock::now() + length); }
