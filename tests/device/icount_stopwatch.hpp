// SPDX-License-Identifier: MIT
// Instructions of a code path counted on the device under QEMU -icount: virtual time is
// instructions x 2^LC_ICOUNT_SHIFT ns, so a timer counting virtual time over a loop of calls
// counts instructions. The timer: SysTick at the core clock on Cortex-M, the CLINT's mtime
// (board::kTimerHz) on RISC-V. For the figures firmware (hotpath_test.cpp,
// packet_figures_test.cpp, health_figures_test.cpp, evidence_figures_test.cpp), which runs with
// the port not initialised: the timer is the stopwatch and nothing else runs.
#pragma once

#include <cstdint>

#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "device_port.hpp"

#ifndef LC_ICOUNT_SHIFT
#error "LC_ICOUNT_SHIFT: the -icount shift QEMU runs this firmware with"
#endif

namespace loopcanary::device_test {

#if defined(__riscv)

namespace stopwatch_detail {
inline constexpr std::uint32_t kHz = board::kTimerHz;
}  // namespace stopwatch_detail

/// mtime runs from reset: nothing to start.
inline void start_stopwatch() {}

/// mtime ticks of `iterations` calls of `f(args...)` (32 bits, counting up: `wrapped` is never
/// set). Never inlined: every function measured runs in the same loop, called through a pointer.
template <class... Args>
__attribute__((noinline)) std::uint64_t stopwatch_cycles(void (*f)(Args...), std::uint32_t iterations, bool& /*wrapped*/,
                                                         Args... args) {
  const std::uint32_t c0 = device_port::Clock::now();
  for (std::uint32_t i = 0; i < iterations; ++i) f(args...);
  return static_cast<std::uint32_t>(device_port::Clock::now() - c0);
}

#else

namespace stopwatch_detail {
constexpr std::uintptr_t kSystCsr = 0xE000E010;
constexpr std::uintptr_t kSystRvr = 0xE000E014;
constexpr std::uintptr_t kSystCvr = 0xE000E018;
constexpr std::uint32_t kSystCountFlag = 1u << 16;
inline constexpr std::uint32_t kHz = board::kCoreHz;
inline volatile std::uint32_t& reg(std::uintptr_t address) { return cortex_m::detail::reg(address); }
}  // namespace stopwatch_detail

/// Starts SysTick free-running at the core clock (24 bits, counting down, no interrupt).
inline void start_stopwatch() {
  using namespace stopwatch_detail;
  reg(kSystCsr) = 0;
  reg(kSystRvr) = 0x00FFFFFFu;
  reg(kSystCvr) = 0;
  reg(kSystCsr) = 5u;  // processor clock, enabled, no interrupt
  while (reg(kSystCvr) == 0) {
  }
}

/// SysTick cycles of `iterations` calls of `f(args...)`. Sets `wrapped` when the 24-bit counter
/// reached zero meanwhile (the count is then wrong). Never inlined: every function measured
/// runs in the same loop, called through a pointer.
template <class... Args>
__attribute__((noinline)) std::uint64_t stopwatch_cycles(void (*f)(Args...), std::uint32_t iterations, bool& wrapped,
                                                         Args... args) {
  using namespace stopwatch_detail;
  const std::uint32_t cleared = reg(kSystCsr);  // reading clears COUNTFLAG
  static_cast<void>(cleared);
  const std::uint32_t c0 = reg(kSystCvr);
  for (std::uint32_t i = 0; i < iterations; ++i) f(args...);
  const std::uint32_t c1 = reg(kSystCvr);
  if ((reg(kSystCsr) & kSystCountFlag) != 0) wrapped = true;
  return (c0 - c1) & 0x00FFFFFFu;  // counts down
}

#endif

/// Instructions x100 per call, of `calls` calls that took `cycles` stopwatch ticks in all (under
/// -icount: each instruction 2^LC_ICOUNT_SHIFT ns). `calls` > 0.
inline std::uint64_t instructions_x100_per_call(std::uint64_t cycles, std::uint64_t calls) {
  const std::uint64_t ns = cycles * 1'000'000'000ull / stopwatch_detail::kHz;
  return ns * 100u / (std::uint64_t{1} << LC_ICOUNT_SHIFT) / calls;
}

/// Instructions x100 of one call of `body(args...)` beyond one of `empty(args...)` (the same
/// call without the measured work), each run `iterations` times after a warm-up run (QEMU
/// translates code on first use). Sets `wrapped` as stopwatch_cycles does.
template <class... Args>
std::uint64_t instructions_x100(void (*body)(Args...), void (*empty)(Args...), std::uint32_t iterations, bool& wrapped,
                                Args... args) {
  stopwatch_cycles<Args...>(body, iterations, wrapped, args...);
  const std::uint64_t base = stopwatch_cycles<Args...>(empty, iterations, wrapped, args...);
  const std::uint64_t cycles = stopwatch_cycles<Args...>(body, iterations, wrapped, args...);
  if (cycles <= base) return 0;
  return instructions_x100_per_call(cycles - base, iterations);
}

/// Prints "<figure> <what> = <n.d> instructions" for `x100` (an instructions_x100() result, the
/// tenths truncated) and returns `x100`.
inline std::uint64_t print_instructions(const char* figure, const char* what, std::uint64_t x100) {
  print(figure);
  print(" ");
  print(what);
  print(" = ");
  print_u64(x100 / 100u);
  print(".");
  print_u64(x100 % 100u / 10u);
  print(" instructions\n");
  return x100;
}

}  // namespace loopcanary::device_test
