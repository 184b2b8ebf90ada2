// SPDX-License-Identifier: MIT
// The command line of loopcanary-sim.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "scenarios.hpp"

namespace thermostat {

inline constexpr const char* kProgram = "loopcanary-sim";

/// Exit statuses.
inline constexpr int kExitOk = 0;       ///< ran as asked (blocks found are not an error)
inline constexpr int kExitFailed = 1;   ///< could not run as asked (platform, log directory)
inline constexpr int kExitUsage = 2;    ///< bad command line

struct Options {
  bool selected[kScenarioCount] = {};
  std::string scenario_names;          ///< the selected names, comma-separated, in run order
  std::uint32_t threshold_ms = 100;    ///< 1..10'000 (at most 800 with the seed scenario)
  std::uint32_t hang_ms = 0;           ///< threshold_ms..600'000; 0 until resolved (default: depends on the threshold)
  std::uint64_t duration_ms = 0;       ///< 1..604'800'000 (7 days); 0: as long as the scenarios need
  std::uint64_t run_us = 0;            ///< resolved: the duration, or what the scenarios need
  bool virtual_time = false;
  std::string log_dir;                 ///< empty: no log files
  bool json = false;
  bool help = false;
};

/// Parses `argv`. False with a one-line message (naming the option and, for a value out of
/// range, the range) in `error` when the command line is wrong; on success, every default is
/// resolved.
bool parse_options(int argc, char** argv, Options& options, std::string& error);

void print_help(std::FILE* out);

/// The plan's input for `options` (interrupt lines left at their defaults: the caller sets them).
PlanInput plan_input_for(const Options& options) noexcept;

}  // namespace thermostat
