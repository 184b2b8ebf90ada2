// SPDX-License-Identifier: MIT
// loopcanary-sim: the thermostat firmware on the simulator runtime, watched by loopcanary, in
// real or virtual time. `loopcanary-sim --help` explains the options; docs/demo.md the rest.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "loopcanary/linux/file_sink.hpp"
#include "loopcanary/loopcanary.hpp"
#include "options.hpp"
#include "scenarios.hpp"
#include "simrt/real_board.hpp"
#include "simrt/run_sink.hpp"
#include "simrt/runtime.hpp"
#include "simrt/virtual_board.hpp"
#include "thermostat.hpp"

namespace {

// The host tool as the user can run it: beside this program in a build tree (sim/tool/) or an
// installed one, else by name from PATH.
std::string tool_command() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path dir = self.parent_path();
    for (const std::filesystem::path& candidate : {dir / "tool" / "loopcanary", dir / "loopcanary"}) {
      if (std::filesystem::is_regular_file(candidate, error)) return candidate.string();
    }
  }
  return "loopcanary";
}

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;
namespace simrt = loopcanary::simrt;
using namespace thermostat;

// One health record per second per loop in the logs (`loopcanary health`).
constexpr std::uint32_t kHealthPeriodUs = 1'000'000;

// Everything a run needs, allocated once at start-up.
struct Simulation {
  lc::Monitor monitor;
  lc::StaticWatchdog<1, 16, 1, 4> watchdog;  // and a health ring of 4
  Plan plan;
  lx::FileSink sink;
};

int fail(const std::string& message, int status) {
  std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
  return status;
}

// The board: real time on the Linux port, or virtual time on the sim port; `clock` names its
// clock. Null with `error` set when the Linux port cannot start.
std::unique_ptr<simrt::Board> make_board(const Options& options, std::string& clock, std::string& error) {
  if (options.virtual_time) {
    clock = "sim port, 1 MHz virtual clock";
    return std::make_unique<simrt::VirtualBoard>();
  }
  auto real = std::make_unique<simrt::RealBoard>();
  char message[256];
  if (!real->init(lx::PlatformConfig{}, message, sizeof message)) {
    error = message;
    return nullptr;
  }
  clock = std::string("linux port, ") + real->clock_name() + " clock";
  return real;
}

// After the run: every record must be in --log-dir, and the logs still writable. Then where to
// read them.
int check_logs(const Options& options, const lx::FileSink& sink, bool sink_healthy) {
  const lx::SinkStatus s = sink.status();
  if (s.records_failed != 0) {
    std::string message = std::to_string(s.records_failed) + " of " +
                          std::to_string(s.records_written + s.records_failed) + " records are not in --log-dir";
    if (s.records_lost != 0) {
      message += " (" + std::to_string(s.records_lost) + " written into a file that was deleted)";
    }
    return fail(message + "; last error: " + s.message, kExitFailed);
  }
  if (!sink_healthy) return fail(std::string("--log-dir: not writable at the end of the run: ") + s.message, kExitFailed);
  // The host tool (docs/tool.md) reads the logs.
  if (!options.json) {
    std::printf("\nlogs: open them with `%s report %s`\n", tool_command().c_str(), options.log_dir.c_str());
  }
  return kExitOk;
}

int run(const Options& options) {
  auto sim = std::make_unique<Simulation>();
  std::string clock;
  std::string board_error;
  const std::unique_ptr<simrt::Board> board = make_board(options, clock, board_error);
  if (board == nullptr) return fail(board_error, kExitFailed);

  const std::uint32_t threshold_us = options.threshold_ms * 1000u;
  const std::uint32_t interval_us = sample_interval_us(threshold_us);
  lc::MonitorConfig monitor_config;
  monitor_config.name = "main";
  monitor_config.tick_hz = board->tick_hz();
  monitor_config.threshold_us = threshold_us;
  monitor_config.sample_interval_us = interval_us;
  monitor_config.hang_limit_us = options.hang_ms * 1000u;
  monitor_config.context = board->loop_context();
  lc::WatchdogConfig watchdog_config;
  watchdog_config.qualifier = kQualifier;
  watchdog_config.health_period_us = kHealthPeriodUs;
  for (const lc::Status status : {sim->monitor.init(monitor_config), sim->watchdog.init(watchdog_config, board->hal()),
                                  sim->watchdog.add(sim->monitor)}) {
    if (status != lc::Status::ok) return fail(std::string("loopcanary: ") + lc::describe(status), kExitFailed);
  }

  simrt::Runtime runtime(*board, sim->monitor);
  Firmware firmware(runtime);
  Lines lines;
  if (!runtime.init(simrt::RuntimeConfig{Firmware::kTypes, kEventCount, &firmware}) || !firmware.init(lines)) {
    return fail("the firmware does not fit the runtime's tables", kExitFailed);
  }

  PlanInput plan_input = plan_input_for(options);
  plan_input.lines = lines;
  Plan& plan = sim->plan;
  make_plan(plan_input, plan);

  lx::FileSink* sink = nullptr;
  if (!options.log_dir.empty()) {
    lx::FileSinkConfig sink_config;
    sink_config.directory = options.log_dir.c_str();
    sink_config.qualifier = kQualifier;
    if (sim->sink.open(sink_config) != lx::SinkError::none) {
      return fail(std::string("--log-dir: ") + sim->sink.status().message, kExitFailed);
    }
    sink = &sim->sink;
    // Health records go to the same logs, written in watchdog context as the run_sink's block
    // records are (the board drains those after each poll, on the same thread).
    const lc::Status status = sim->watchdog.add_health_interceptor(&lx::FileSink::health_interceptor, sink);
    if (status != lc::Status::ok) return fail(std::string("loopcanary: ") + lc::describe(status), kExitFailed);
  }

  simrt::RunSinkConfig run_sink_config;
  run_sink_config.board = board.get();
  run_sink_config.sink = sink;
  run_sink_config.on_record = &Firmware::on_record;
  run_sink_config.on_record_context = &firmware;
  simrt::RunSink run_sink(run_sink_config);

  simrt::BoardStart start;
  start.watchdog = &sim->watchdog;
  start.poll_period_us = interval_us;
  start.sink = &simrt::RunSink::take;
  start.sink_context = &run_sink;
  start.lines = runtime.lines();
  start.line_count = runtime.line_count();
  start.peripherals = plan.peripherals;
  start.peripheral_count = plan.peripheral_count;
  const simrt::BoardError error = board->start(start);
  if (error != simrt::BoardError::none) return fail(simrt::describe(error), kExitFailed);

  firmware.start(plan.workload);
  const bool ran = runtime.run_for(options.run_us);  // false only past simrt::kMaxRunUs
  board->finish();
  if (!ran) return fail("--duration-s: longer than the runtime's limit (2^40 us)", kExitUsage);
  // Closing the sink checks its files once more: records written into a file deleted since its
  // last check are counted as failed.
  const bool sink_healthy = sim->sink.status().healthy;
  if (sink != nullptr) sink->close();

  simrt::SummaryInput summary;
  summary.header.program = kProgram;
  summary.header.firmware = kFirmware;
  summary.header.time = board->time_name();
  summary.header.clock = clock.c_str();
  summary.header.scenarios = options.scenario_names.c_str();
  summary.header.threshold_us = threshold_us;
  summary.header.hang_limit_us = monitor_config.hang_limit_us;
  summary.header.run_us = options.run_us;
  summary.runtime = &runtime;
  summary.run_sink = &run_sink;
  summary.monitor = &sim->monitor;
  summary.watchdog = &sim->watchdog;
  summary.board = board.get();
  if (options.json) {
    simrt::print_summary_json(stdout, summary);
  } else {
    simrt::print_summary_text(stdout, summary);
  }
  return sink != nullptr ? check_logs(options, *sink, sink_healthy) : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string error;
  if (!parse_options(argc, argv, options, error)) return fail(error + " (see --help)", kExitUsage);
  if (options.help) {
    print_help(stdout);
    return kExitOk;
  }
  return run(options);
}
