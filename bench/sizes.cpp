// SPDX-License-Identifier: MIT
// loopcanary_sizes: byte sizes of the main types for this build's configuration (the
// LOOPCANARY_* capacities), printed as a Markdown table row for docs/benchmarks.md.
//
// For a target this cannot run on, compile it to assembly and read the constants:
//   arm-none-eabi-g++ -mcpu=cortex-m3 -mthumb -std=c++17 -O2 -fno-exceptions -fno-rtti
//     -Icore/include -I<build>/generated/include -S -o - bench/sizes.cpp | grep -A1 '^loopcanary_sizeof'
// (one command line; docs/benchmarks.md has it in full).
#include <cstddef>
#include <cstdio>

#include "loopcanary/loopcanary.hpp"

namespace lc = loopcanary;

extern "C" {
extern const std::size_t loopcanary_sizeof_monitor;
extern const std::size_t loopcanary_sizeof_block_record;
extern const std::size_t loopcanary_sizeof_sample;
extern const std::size_t loopcanary_sizeof_watchdog_track;
extern const std::size_t loopcanary_sizeof_watch;
extern const std::size_t loopcanary_sizeof_static_watchdog_1_8;
extern const std::size_t loopcanary_sizeof_static_watchdog_4_16;
const std::size_t loopcanary_sizeof_monitor = sizeof(lc::Monitor);
const std::size_t loopcanary_sizeof_block_record = sizeof(lc::BlockRecord);
const std::size_t loopcanary_sizeof_sample = sizeof(lc::Sample);
const std::size_t loopcanary_sizeof_watchdog_track = sizeof(lc::detail::WatchdogTrack);
const std::size_t loopcanary_sizeof_watch = sizeof(lc::detail::Watch);
const std::size_t loopcanary_sizeof_static_watchdog_1_8 = sizeof(lc::StaticWatchdog<1, 8>);
const std::size_t loopcanary_sizeof_static_watchdog_4_16 = sizeof(lc::StaticWatchdog<4, 16>);
}

int main() {
  std::printf("| samples %zu, frames %zu, scopes %zu, notes %zu, top %zu, histogram %d | %zu | %zu | %zu | %zu | %zu | %zu | %zu |\n",
              lc::kMaxSamples, lc::kMaxFrames, lc::kScopeDepth, lc::kNoteCapacity, lc::kTopFrames,
              lc::kHistogram ? 1 : 0, loopcanary_sizeof_monitor, loopcanary_sizeof_block_record,
              loopcanary_sizeof_sample, loopcanary_sizeof_watchdog_track, loopcanary_sizeof_watch,
              loopcanary_sizeof_static_watchdog_1_8,
              loopcanary_sizeof_static_watchdog_4_16);
  return 0;
}
