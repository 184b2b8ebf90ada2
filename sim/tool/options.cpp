// SPDX-License-Identifier: MIT
// The command line and config files of the tool `loopcanary` (commands.hpp, docs/tool.md).
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "commands.hpp"

namespace loopcanary::tool {

namespace {

// Which subcommands take an option (bits).
enum : unsigned {
  kReport = 1,
  kShow = 2,
  kExport = 4,
  kSymbolize = 8,
  kDecode = 16,
  kHealth = 32,
  kFiltering = kReport | kShow | kExport
};

struct OptionSpec {
  const char* name;     // without the dashes; also the config-file key
  unsigned commands;    // where it applies
  bool in_config;       // may appear in a config file
};

constexpr OptionSpec kOptions[] = {
    {"by", kReport, true},           {"since", kFiltering | kHealth, true},     {"until", kFiltering | kHealth, true},
    {"qualifier", kFiltering | kHealth, true}, {"event", kFiltering | kHealth, true}, {"cause", kFiltering, true},
    {"loop", kFiltering | kHealth, true},
    {"min-ms", kFiltering, true},    {"top", kReport, true},          {"format", kReport | kExport | kHealth, true},
    {"concern", kFiltering, true},   {"ignore", kFiltering, true},    {"config", kFiltering | kHealth, false},
    {"id", kShow, false},            {"output", kExport | kSymbolize | kDecode, false},
    {"elf", kSymbolize | kDecode, false}, {"debug-dir", kSymbolize, false},
};

unsigned command_bit(const std::string& command) noexcept {
  if (command == "report") return kReport;
  if (command == "show") return kShow;
  if (command == "export") return kExport;
  if (command == "symbolize") return kSymbolize;
  if (command == "decode") return kDecode;
  if (command == "health") return kHealth;
  return 0;
}

const OptionSpec* find_option(const std::string& name) noexcept {
  for (const OptionSpec& o : kOptions) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

// Sets one option from its text (command line or config file). false with `error` (without
// the option's name, which the caller adds).
bool set_option(Options& options, const std::string& name, const std::string& value, std::string& error) {
  if (name == "by") {
    if (!parse_group_by(value, options.by)) return error = "expected culprit, event, qualifier, cause or loop, got \"" + value + "\"", false;
  } else if (name == "since" || name == "until") {
    std::int64_t ms = 0;
    if (!parse_utc_time(value, ms)) return error = "expected a UTC time YYYY-MM-DD[THH:MM[:SS[.fff]]][Z], got \"" + value + "\"", false;
    (name == "since" ? options.filter.since_ms : options.filter.until_ms) = ms;
  } else if (name == "qualifier") {
    options.filter.qualifiers.push_back(value);
  } else if (name == "event") {
    options.filter.events.push_back(value);
  } else if (name == "loop") {
    options.filter.loops.push_back(value);
  } else if (name == "cause") {
    Cause cause{};
    if (!parse_cause(value, cause)) return error = "expected running, waiting, starved or unknown, got \"" + value + "\"", false;
    options.filter.causes.push_back(cause);
  } else if (name == "min-ms") {
    char* end = nullptr;
    errno = 0;
    const double ms = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || errno != 0 || !(ms >= 0.0) || ms > 1e12) {
      return error = "expected a duration in ms (a non-negative number), got \"" + value + "\"", false;
    }
    options.filter.min_us = static_cast<std::uint64_t>(ms * 1000.0 + 0.5);
  } else if (name == "top") {
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || end != value.c_str() + value.size() || errno != 0 || n == 0) {
      return error = "expected a positive integer, got \"" + value + "\"", false;
    }
    options.top = static_cast<std::size_t>(n);
  } else if (name == "format") {
    options.format = value;
  } else if (name == "concern" || name == "ignore") {
    if (value.empty()) return error = "expected a non-empty prefix", false;
    (name == "concern" ? options.rules.concern : options.rules.ignore).push_back(value);
  } else if (name == "id") {
    options.id = value;
  } else if (name == "output") {
    options.output = value;
  } else if (name == "elf") {
    options.elf = value;
  } else if (name == "debug-dir") {
    options.debug_dir = value;
  } else if (name == "config") {
    options.config = value;
    std::string file_error;
    if (!apply_config_file(value, options, file_error)) return error = file_error, false;
  }
  return true;
}

std::string trim(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  const std::size_t last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

const char* to_string(GroupBy by) noexcept {
  switch (by) {
    case GroupBy::culprit: return "culprit";
    case GroupBy::event: return "event";
    case GroupBy::qualifier: return "qualifier";
    case GroupBy::cause: return "cause";
    case GroupBy::loop: return "loop";
  }
  return "?";
}

bool parse_group_by(const std::string& text, GroupBy& out) noexcept {
  for (GroupBy by : {GroupBy::culprit, GroupBy::event, GroupBy::qualifier, GroupBy::cause, GroupBy::loop}) {
    if (text == to_string(by)) {
      out = by;
      return true;
    }
  }
  return false;
}

bool apply_config_file(const std::string& path, Options& options, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot open the config file: " + std::strerror(errno);
    return false;
  }
  std::string text;
  for (std::uint64_t line = 1; std::getline(in, text); ++line) {
    const std::string where = path + ":" + std::to_string(line) + ": ";
    const std::string content = trim(text.substr(0, text.find('#')));
    if (content.empty()) continue;
    const std::size_t eq = content.find('=');
    if (eq == std::string::npos) {
      error = where + "expected `key = value`";
      return false;
    }
    const std::string key = trim(content.substr(0, eq));
    const std::string value = trim(content.substr(eq + 1));
    const OptionSpec* spec = find_option(key);
    if (spec == nullptr || !spec->in_config) {
      error = where + "unknown key \"" + key + "\"";
      return false;
    }
    std::string why;
    if (!set_option(options, key, value, why)) {
      error = where + key + ": " + why;
      return false;
    }
  }
  return true;
}

bool parse_command_line(const std::vector<std::string>& args, Options& options, bool& help, std::string& error) {
  help = false;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      help = true;
      return true;
    }
  }
  if (args.empty()) {
    error = "no subcommand (report, show, export, health, symbolize, decode; --help)";
    return false;
  }
  options.command = args[0];
  const unsigned bit = command_bit(options.command);
  if (bit == 0) {
    error = "unknown subcommand \"" + options.command + "\" (report, show, export, health, symbolize, decode; --help)";
    return false;
  }
  bool only_paths = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_paths || a.empty() || a[0] != '-' || a == "-") {
      options.paths.push_back(a);
      continue;
    }
    if (a == "--") {
      only_paths = true;
      continue;
    }
    std::string name;
    std::string value;
    bool has_value = false;
    if (a == "-o") {
      name = "output";
    } else if (a.rfind("--", 0) == 0) {
      const std::size_t eq = a.find('=');
      name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        has_value = true;
      }
    } else {
      error = "unknown option " + a;
      return false;
    }
    const std::string shown = name == "output" && a == "-o" ? "-o" : "--" + name;
    const OptionSpec* spec = find_option(name);
    if (spec == nullptr) {
      error = "unknown option " + shown;
      return false;
    }
    if ((spec->commands & bit) == 0) {
      error = "option " + shown + " does not apply to " + options.command;
      return false;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) {
        error = "option " + shown + " needs a value";
        return false;
      }
      value = args[++i];
    }
    std::string why;
    if (!set_option(options, name, value, why)) {
      error = name == "config" ? why : "option " + shown + ": " + why;
      return false;
    }
  }
  if (options.paths.empty()) {
    error = options.command + ": no PATH given (log files or directories)";
    return false;
  }
  if ((bit == kReport || bit == kHealth) && !options.format.empty() && options.format != "text" &&
      options.format != "json") {
    error = "option --format: expected text or json for " + options.command + ", got \"" + options.format + "\"";
    return false;
  }
  if (bit == kExport) {
    if (options.format.empty()) {
      error = "option --format: export needs --format folded, chrome, html or pprof";
      return false;
    }
    if (options.format != "folded" && options.format != "chrome" && options.format != "html" &&
        options.format != "pprof") {
      error = "option --format: expected folded, chrome, html or pprof for export, got \"" + options.format + "\"";
      return false;
    }
  }
  if (bit == kShow && options.id.empty()) {
    error = "option --id: show needs --id ID (a block ID from report)";
    return false;
  }
  if (bit == kSymbolize && !options.elf.empty() && !options.debug_dir.empty()) {
    error = "option --elf: give --elf or --debug-dir, not both";
    return false;
  }
  return true;
}

const char* usage() noexcept {
  return "usage: loopcanary COMMAND PATH... [OPTIONS]\n"
         "Reads loopcanary block reports (JSON Lines, *.jsonl, or binary captures of packets, *.lcb;\n"
         "a directory means those files, rotated ones included) and groups, shows, exports,\n"
         "symbolises or decodes them (docs/tool.md).\n"
         "\n"
         "commands:\n"
         "  report PATH...        blocks grouped: count, hangs, worst/p50/p95 ms, causes, events,\n"
         "                        qualifiers, first and last seen\n"
         "  show PATH... --id ID  every report of one block (ID from report), stacks and evidence\n"
         "  export PATH... --format folded|chrome|html|pprof [-o FILE]\n"
         "  symbolize PATH... [--elf FILE | --debug-dir DIR] [-o FILE]\n"
         "  decode CAPTURE... [--elf FIRMWARE] [-o FILE]   binary captures as JSON Lines\n"
         "  health PATH... [--loop L] [--event E] [--format text|json]\n"
         "                        health records per loop over time: dispatches, rate, load, idle,\n"
         "                        per event rate, latency p50/p95/p99, deadline misses, missed periods\n"
         "\n"
         "options (report, show, export; health takes --since, --until, --qualifier, --loop, --event,\n"
         "--format, --config):\n"
         "  --by culprit|event|qualifier|cause|loop   grouping of report (default culprit)\n"
         "  --since TIME, --until TIME   wall time (UTC, YYYY-MM-DD[THH:MM[:SS]]), blocks without it excluded\n"
         "  --qualifier Q, --event E, --cause C        keep these only (repeatable)\n"
         "  --loop L                     keep the records of loop L only (repeatable)\n"
         "  --min-ms MS                  keep blocks of at least MS ms\n"
         "  --top N                      report: the N groups with the most blocks\n"
         "  --format text|json           report's and health's output (default text)\n"
         "  --concern PREFIX             the user's code: module path or function/scope prefix (repeatable)\n"
         "  --ignore PREFIX              leave out blocks whose culprit matches (repeatable)\n"
         "  --config FILE                `key = value` lines: by, since, until, qualifier, event, cause,\n"
         "                               loop, min-ms, top, format, concern, ignore\n"
         "\n"
         "exit status: 0 something was read, 1 nothing readable (or show: no such block), 2 bad command line\n";
}

}  // namespace loopcanary::tool
