// SPDX-License-Identifier: MIT
#include "busy.hpp"

#include "device_port.hpp"

// Floating point on FPU builds, so the SysTick interrupt sees extended exception frames.
__attribute__((noinline)) std::uint32_t busy_compute(std::uint32_t iterations) {
  std::uint32_t a = 0x12345678u;
  std::uint32_t b = 0x9abcdef0u;
#if defined(__ARM_FP)
  float f = 1.0f;
#endif
  for (std::uint32_t i = 0; i < iterations; ++i) {
    a = a * 1664525u + 1013904223u;
    b ^= a >> 7;
#if defined(__ARM_FP)
    f = f * 0.999f + 0.5f;
#endif
    __asm__ volatile("" : "+r"(a), "+r"(b));
  }
#if defined(__ARM_FP)
  b += static_cast<std::uint32_t>(f);
#endif
  return a ^ b;
}

namespace loopcanary::device_test {

void spend_ticks(tick_t begin, tick_t length, std::uint32_t chunk) {
  while (ticks_between(begin, device_port::Clock::now()) < length) busy_compute(chunk);
}

}  // namespace loopcanary::device_test
