// SPDX-License-Identifier: MIT
#include "options.hpp"

#include <cstring>

namespace thermostat {
namespace {

constexpr std::uint32_t kMaxThresholdMs = 10'000;
constexpr std::uint32_t kMaxHangMs = 600'000;
constexpr std::uint64_t kMaxDurationMs = 604'800'000;  // 7 days
// The runtime and boards time a run exactly up to kMaxRunUs; the hang limit must stay below
// half the wrap of the real-time clock's 32-bit ticks at its fastest (2 MHz: 1073 s), which
// Monitor::init checks at run time (MonitorConfig.hang_limit_us).
static_assert(kMaxDurationMs * 1000u <= loopcanary::simrt::kMaxRunUs, "--duration-s must fit the runtime's range");
static_assert(std::uint64_t{kMaxHangMs} * 1000u * 2u < loopcanary::kMaxIntervalTicks,
              "--hang-ms must fit half the tick wrap at 2 MHz");

// A whole number in [low, high], digits only.
bool parse_whole(const char* text, std::uint64_t low, std::uint64_t high, std::uint64_t& out) {
  if (*text == '\0') return false;
  std::uint64_t value = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return false;
    value = value * 10u + static_cast<std::uint64_t>(*p - '0');
    if (value > high) return false;
  }
  if (value < low) return false;
  out = value;
  return true;
}

// Seconds with at most three decimals ("2", "2.5", "0.125") as milliseconds in [1, high].
bool parse_seconds(const char* text, std::uint64_t high_ms, std::uint64_t& out_ms) {
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;
  int decimals = -1;  // -1: no point seen
  bool digits = false;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p == '.' && decimals < 0) {
      decimals = 0;
    } else if (*p >= '0' && *p <= '9') {
      digits = true;
      const auto d = static_cast<std::uint64_t>(*p - '0');
      if (decimals < 0) {
        whole = whole * 10u + d;
        if (whole > high_ms / 1000u) return false;
      } else if (++decimals <= 3) {
        fraction = fraction * 10u + d;
      } else {
        return false;
      }
    } else {
      return false;
    }
  }
  if (!digits) return false;
  for (int i = decimals < 0 ? 0 : decimals; i < 3; ++i) fraction *= 10u;
  const std::uint64_t ms = whole * 1000u + fraction;
  if (ms == 0 || ms > high_ms) return false;
  out_ms = ms;
  return true;
}

bool select_scenarios(const std::string& list, Options& o, std::string& error) {
  bool any = false;
  for (bool& s : o.selected) s = false;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool known = false;
    if (name == "all") {
      for (bool& s : o.selected) s = true;
      known = true;
    }
    for (const ScenarioInfo& info : kScenarios) {
      if (name == info.name) {
        o.selected[static_cast<std::size_t>(info.id)] = true;
        known = true;
      }
    }
    if (!known) {
      std::string names;
      for (const ScenarioInfo& info : kScenarios) names += std::string(info.name) + ", ";
      error = "--scenario: unknown scenario '" + name + "' (" + names + "all, or a comma-separated list)";
      return false;
    }
    any = true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  o.scenario_names.clear();
  for (const ScenarioInfo& info : kScenarios) {
    if (!o.selected[static_cast<std::size_t>(info.id)]) continue;
    if (!o.scenario_names.empty()) o.scenario_names += ",";
    o.scenario_names += info.name;
  }
  return any;
}

// The value of one option that takes one; false with `error` naming the option and the value.
bool take_value(const std::string& option, const std::string& value, Options& o, std::string& scenarios,
                bool& hang_given, std::string& error) {
  std::uint64_t number = 0;
  if (option == "--scenario") {
    scenarios = value;
  } else if (option == "--threshold-ms") {
    if (!parse_whole(value.c_str(), 1, kMaxThresholdMs, number)) {
      error = "--threshold-ms: '" + value + "' is not a whole number of milliseconds in 1..10000";
      return false;
    }
    o.threshold_ms = static_cast<std::uint32_t>(number);
  } else if (option == "--hang-ms") {
    if (!parse_whole(value.c_str(), 1, kMaxHangMs, number)) {
      error = "--hang-ms: '" + value + "' is not a whole number of milliseconds in 1..600000";
      return false;
    }
    o.hang_ms = static_cast<std::uint32_t>(number);
    hang_given = true;
  } else if (option == "--duration-s") {
    if (!parse_seconds(value.c_str(), kMaxDurationMs, number)) {
      error = "--duration-s: '" + value + "' is not a number of seconds in 0.001.." +
              std::to_string(kMaxDurationMs / 1000u) + " (7 days; at most 3 decimals)";
      return false;
    }
    o.duration_ms = number;
  } else if (option == "--time") {
    if (value != "real" && value != "virtual") {
      error = "--time: '" + value + "' is neither 'real' nor 'virtual'";
      return false;
    }
    o.virtual_time = value == "virtual";
  } else if (option == "--log-dir") {
    if (value.empty()) {
      error = "--log-dir: the directory name is empty";
      return false;
    }
    o.log_dir = value;
  } else if (option == "--format") {
    if (value != "text" && value != "json") {
      error = "--format: '" + value + "' is neither 'text' nor 'json'";
      return false;
    }
    o.json = value == "json";
  }
  return true;
}

// What holds across options once all are read: the scenarios, the hang limit against the
// threshold, and a duration long enough for the selected scenarios.
bool check_options(const std::string& scenarios, bool hang_given, Options& o, std::string& error) {
  if (!select_scenarios(scenarios, o, error)) return false;
  if (!hang_given) o.hang_ms = o.threshold_ms * 2u > 1000u ? o.threshold_ms * 2u : 1000u;
  if (o.hang_ms < o.threshold_ms) {
    error = "--hang-ms: " + std::to_string(o.hang_ms) + " is below the threshold (" + std::to_string(o.threshold_ms) +
            " ms); a hang limit is at least the threshold";
    return false;
  }
  if (o.selected[static_cast<std::size_t>(Scenario::seed)] && o.threshold_ms * 1000u > kSeedThresholdUs) {
    error = "--threshold-ms: " + std::to_string(o.threshold_ms) +
            " is above the seed scenario's own 800 ms threshold, which it would raise; use at most 800 or leave "
            "seed out";
    return false;
  }
  // The timeline's length does not depend on the line numbers: plan it now to check --duration-s.
  Plan plan;
  make_plan(plan_input_for(o), plan);
  o.run_us = plan.needed_us;
  if (o.duration_ms != 0) {
    if (o.duration_ms * 1000u < plan.needed_us) {
      char message[160];
      std::snprintf(message, sizeof message,
                    "--duration-s: %llu.%03llu s is shorter than the %llu.%03llu s the selected scenarios need",
                    static_cast<unsigned long long>(o.duration_ms / 1000u),
                    static_cast<unsigned long long>(o.duration_ms % 1000u),
                    static_cast<unsigned long long>(plan.needed_us / 1'000'000u),
                    static_cast<unsigned long long>(plan.needed_us % 1'000'000u / 1000u));
      error = message;
      return false;
    }
    o.run_us = o.duration_ms * 1000u;
  }
  return true;
}

}  // namespace

bool parse_options(int argc, char** argv, Options& o, std::string& error) {
  std::string scenarios = "all";
  bool hang_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string option = argv[i];
    std::string value;
    bool has_value = false;
    const std::size_t equals = option.find('=');
    if (option.rfind("--", 0) == 0 && equals != std::string::npos) {
      value = option.substr(equals + 1);
      option.resize(equals);
      has_value = true;
    }
    if (option == "--help" || option == "-h") {
      o.help = true;
      continue;
    }
    static const char* const kWithValue[] = {"--scenario", "--threshold-ms", "--hang-ms", "--duration-s",
                                             "--time",     "--log-dir",      "--format"};
    bool known = false;
    for (const char* name : kWithValue) known = known || option == name;
    if (!known) {
      error = option.rfind("-", 0) == 0 ? "unknown option '" + option + "'" : "unexpected argument '" + option + "'";
      return false;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        error = option + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (!take_value(option, value, o, scenarios, hang_given, error)) return false;
  }
  if (o.help) return true;
  return check_options(scenarios, hang_given, o, error);
}

PlanInput plan_input_for(const Options& o) noexcept {
  PlanInput in;
  for (std::size_t i = 0; i < kScenarioCount; ++i) in.selected[i] = o.selected[i];
  in.threshold_us = o.threshold_ms * 1000u;
  in.hang_limit_us = o.hang_ms * 1000u;
  in.poll_period_us = sample_interval_us(in.threshold_us);
  return in;
}

void print_help(std::FILE* out) {
  std::fprintf(out,
               "Usage: %s [options]\n"
               "\n"
               "Runs a simulated thermostat firmware on an event loop monitored by loopcanary, plays\n"
               "scenarios in which it blocks, and shows what loopcanary reports: a live line on stderr\n"
               "when a block starts, turns into a hang and ends, and a summary on stdout at the end.\n"
               "\n"
               "Options:\n"
               "  --scenario LIST     which scenarios to play, comma-separated, in this order (default all):\n",
               kProgram);
  for (const ScenarioInfo& s : kScenarios) std::fprintf(out, "                        %-8s %s\n", s.name, s.what);
  std::fprintf(out,
               "                        all      every one of them\n"
               "  --threshold-ms N    a dispatch longer than N ms is a block (1..10000, default 100;\n"
               "                      at most 800 with the seed scenario, which keeps its own 800 ms)\n"
               "  --hang-ms N         a dispatch still running after N ms is reported as a hang\n"
               "                      (threshold..600000, default the larger of 1000 and 2 x threshold)\n"
               "  --duration-s S      run for S seconds (0.001..604800, i.e. up to 7 days; at most 3\n"
               "                      decimals); at least what the scenarios need, which is the default\n"
               "  --time MODE         real: real threads, real CPU work, signal-sampled stacks (default);\n"
               "                      virtual: virtual time, deterministic, finishes at once\n"
               "  --log-dir DIR       also write every report to DIR (loopcanary's file sink: .jsonl and\n"
               "                      a text log, rotated; created when missing)\n"
               "  --format FORMAT     summary as text tables (default) or json (one object on one line)\n"
               "  -h, --help          this help\n"
               "\n"
               "Exit status: 0 when it ran as asked (blocks are what it is for), 1 when it could not\n"
               "(platform set-up, log directory), 2 for a bad command line.\n");
}

}  // namespace thermostat
