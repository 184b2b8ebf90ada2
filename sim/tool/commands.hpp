// SPDX-License-Identifier: MIT
// The subcommands of the host tool `loopcanary` (docs/tool.md) and the options they share.
// main.cpp parses the command line (and --config files) into Options and calls one run_*
// function. Each returns the process exit status: 0 when it read at least one record, 1 when
// nothing was readable, 2 for a bad request it detects itself (with a one-line error on `err`).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "model.hpp"

namespace loopcanary::tool {

/// How `report` groups blocks (--by).
enum class GroupBy : std::uint8_t { culprit, event, qualifier, cause, loop };
const char* to_string(GroupBy by) noexcept;
bool parse_group_by(const std::string& text, GroupBy& out) noexcept;

/// Everything the command line and a --config file can set. Unset options keep these defaults.
struct Options {
  std::string command;              ///< "report", "show", "export", "health", "symbolize", "decode"
  std::vector<std::string> paths;   ///< log files and directories, in the order given
  // Filters and culprit rules (report, show, export).
  Filter filter;
  CulpritRules rules;
  // report
  GroupBy by = GroupBy::culprit;
  std::size_t top = 0;              ///< --top N: the N largest groups (by blocks); 0: all
  /// --format: report and health: "text" (default) or "json"; export: "folded", "chrome" or
  /// "html" or "pprof" (required there).
  std::string format;
  // show
  std::string id;                   ///< --id: a block ID or a prefix of one (6+ hex digits)
  // export, symbolize and decode
  std::string output;               ///< -o FILE; "" : standard output
  // symbolize and decode
  std::string elf;                  ///< --elf FILE: the image the addresses belong to
  std::string debug_dir;            ///< --debug-dir DIR: where to find images by build-id
  std::string config;               ///< --config FILE as given (already applied)
};

/// `us` as milliseconds with three decimals ("12.345"), as report and health print durations.
std::string ms_text(std::uint64_t us);

/// `loopcanary report`: grouped table of the blocks (docs/tool.md).
int run_report(const Options& options, std::ostream& out, std::ostream& err);
/// `loopcanary show --id ID`: every report of the matching dispatches, stacks and evidence.
int run_show(const Options& options, std::ostream& out, std::ostream& err);
/// `loopcanary export --format folded|chrome|html|pprof [-o FILE]`. Implemented in export*.cpp.
int run_export(const Options& options, std::ostream& out, std::ostream& err);
/// `loopcanary symbolize [--elf FILE | --debug-dir DIR] [-o FILE]`. Implemented in symbolize*.cpp.
int run_symbolize(const Options& options, std::ostream& out, std::ostream& err);
/// `loopcanary health PATH... [--loop L] [--event E] [--format text|json]`: the health records
/// per loop as a time series (docs/tool.md). In health.cpp.
int run_health(const Options& options, std::ostream& out, std::ostream& err);
/// `loopcanary decode CAPTURE... [--elf FIRMWARE] [-o FILE]`: the records of binary captures (and
/// of JSON Lines logs) as JSON Lines, symbolised with --elf as symbolize does. In symbolize.cpp.
int run_decode(const Options& options, std::ostream& out, std::ostream& err);

/// Parses the command line (argv[0] excluded) into `options`, applying a --config file where
/// it appears (command-line options after it override it; repeatable options accumulate).
/// Returns true on success; false with a one-line error in `error` naming the option (or the
/// config file's `file:line`). `help` is set when --help or -h was given (nothing else checked).
bool parse_command_line(const std::vector<std::string>& args, Options& options, bool& help, std::string& error);
/// Applies `key = value` lines of a config file. false with `error` = `<file>:<line>: <what>`.
bool apply_config_file(const std::string& path, Options& options, std::string& error);
/// The --help text.
const char* usage() noexcept;

}  // namespace loopcanary::tool
