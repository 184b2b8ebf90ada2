// SPDX-License-Identifier: MIT
// An Asio program watched by loopcanary: three lines of set-up, no handler touched. Built with
// loopcanary::adapter_asio (which names loopcanary/linux/asio.hpp as Asio's handler-tracking
// header).
// Its timer's handler sleeps 500 ms: stderr shows the block, "event = deadline_timer.async_wait".
#include <asio.hpp>

#include <chrono>
#include <thread>

#include "loopcanary/linux/setup.hpp"

int main() {
  loopcanary::port_linux::Setup canary;                   // loopcanary 1/3
  if (!canary.start().ok()) return 1;                     // loopcanary 2/3 (LOOPCANARY_* variables apply)
  asio::io_context io;
  asio::steady_timer timer(io, std::chrono::milliseconds(10));
  timer.async_wait([](const asio::error_code&) { std::this_thread::sleep_for(std::chrono::milliseconds(500)); });
  loopcanary::port_linux::ScopedLoop loop(canary, "io");  // loopcanary 3/3
  io.run();
}
