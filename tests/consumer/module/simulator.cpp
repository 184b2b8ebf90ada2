// SPDX-License-Identifier: MIT
// A simulator program: the module's handlers on the simulator runtime, fed by two timers (a
// reading every 10 ms, a flush every 250 ms), watched by loopcanary for one second: flushes at
// 250, 500 and 750 ms. Virtual time by default, real time with the argument "real". A slow
// flash part (25 ms a page) makes every flush a block against the flush's own 20 ms threshold:
// the run_sink prints a line for each, and a summary at the end.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "loopcanary/loopcanary.hpp"
#include "sensor_log.hpp"
#include "simrt/real_board.hpp"
#include "simrt/run_sink.hpp"
#include "simrt/runtime.hpp"
#include "simrt/virtual_board.hpp"

namespace lc = loopcanary;
namespace simrt = loopcanary::simrt;

int main(int argc, char** argv) {
  const bool real = argc > 1 && std::strcmp(argv[1], "real") == 0;
  std::unique_ptr<simrt::Board> board;
  std::string clock = "sim port, 1 MHz virtual clock";
  if (real) {
    auto real_board = std::make_unique<simrt::RealBoard>();
    char message[256];
    if (!real_board->init(lc::port_linux::PlatformConfig{}, message, sizeof message)) {
      std::fprintf(stderr, "simulator: %s\n", message);
      return 1;
    }
    clock = std::string("linux port, ") + real_board->clock_name() + " clock";
    board = std::move(real_board);
  } else {
    board = std::make_unique<simrt::VirtualBoard>();
  }

  lc::Monitor monitor;
  lc::StaticWatchdog<1, 8> watchdog;
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = board->tick_hz();
  config.threshold_us = 2'000;  // a dispatch over 2 ms is a block
  config.sample_interval_us = 500;
  config.context = board->loop_context();
  if (monitor.init(config) != lc::Status::ok || watchdog.init(lc::WatchdogConfig{}, board->hal()) != lc::Status::ok ||
      watchdog.add(monitor) != lc::Status::ok) {
    std::fputs("simulator: loopcanary set-up failed\n", stderr);
    return 1;
  }

  sensor_log::Costs costs;
  costs.flash_program_us = 25'000;  // a slow flash part
  sensor_log::Logger logger(*board, monitor, costs);
  simrt::Runtime runtime(*board, monitor);
  // Timers name a type of the table, so they are added after init().
  const bool initialised = runtime.init(simrt::RuntimeConfig{sensor_log::kTypes, sensor_log::kTypeCount, &logger});
  const int sample_timer = runtime.add_timer(sensor_log::kSample, 10'000);
  const int flush_timer = runtime.add_timer(sensor_log::kFlush, 250'000);
  if (!initialised || sample_timer < 0 || flush_timer < 0) {
    std::fputs("simulator: the module does not fit the runtime\n", stderr);
    return 1;
  }

  simrt::RunSinkConfig run_sink_config;
  run_sink_config.board = board.get();
  simrt::RunSink run_sink(run_sink_config);  // live lines on stderr
  simrt::BoardStart start;
  start.watchdog = &watchdog;
  start.poll_period_us = 500;
  start.sink = &simrt::RunSink::take;
  start.sink_context = &run_sink;
  const simrt::BoardError error = board->start(start);
  if (error != simrt::BoardError::none) {
    std::fprintf(stderr, "simulator: %s\n", simrt::describe(error));
    return 1;
  }
  runtime.start_timer(static_cast<simrt::TimerId>(sample_timer), 10'000);
  runtime.start_timer(static_cast<simrt::TimerId>(flush_timer), 250'000);
  runtime.run_for(1'000'000);
  board->finish();

  simrt::SummaryInput summary;
  summary.header.program = "simulator";
  summary.header.firmware = "sensor_log";
  summary.header.time = board->time_name();
  summary.header.clock = clock.c_str();
  summary.header.scenarios = "readings every 10 ms, a flush every 250 ms";
  summary.header.threshold_us = config.threshold_us;
  summary.header.hang_limit_us = config.hang_limit_us;
  summary.header.run_us = 1'000'000;
  summary.runtime = &runtime;
  summary.run_sink = &run_sink;
  summary.monitor = &monitor;
  summary.watchdog = &watchdog;
  summary.board = board.get();
  simrt::print_summary_text(stdout, summary);
  // Flushes at 250, 500 and 750 ms (the one due at 1 s is past the run), each a block. In real
  // time a loaded machine may hold up a reading past the threshold too: the flushes must be there.
  std::uint32_t flush_blocks = 0;
  for (std::size_t i = 0; i < run_sink.kept_count(); ++i) {
    const lc::Event* event = run_sink.kept(i).record.event;
    flush_blocks += event != nullptr && std::strcmp(event->name, "flush") == 0 ? 1u : 0u;
  }
  const bool ok = logger.pages() == 3 && flush_blocks == 3 && (real || run_sink.final_reports() == 3);
  std::printf("simulator: %u pages, %u blocks reported\n", logger.pages(), run_sink.final_reports());
  return ok ? 0 : 1;
}
