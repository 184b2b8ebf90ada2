// SPDX-License-Identifier: MIT
// A libuv program watched by loopcanary: three lines of set-up, no callback touched. Its timer's
// callback sleeps 500 ms: stderr shows the block, "event = uv.iteration".
#include <uv.h>

#include <chrono>
#include <thread>

#include "loopcanary/linux/uv.hpp"

int main() {
  uv_loop_t* uv = uv_default_loop();
  uv_timer_t timer;
  uv_timer_init(uv, &timer);
  uv_timer_start(&timer, [](uv_timer_t*) { std::this_thread::sleep_for(std::chrono::milliseconds(500)); }, 10, 0);
  loopcanary::port_linux::Setup canary;                            // loopcanary 1/3
  if (!canary.start().ok()) return 1;                              // loopcanary 2/3
  loopcanary::port_linux::ScopedUvLoop watch(canary, uv, "uv");    // loopcanary 3/3
  return uv_run(uv, UV_RUN_DEFAULT);
}
