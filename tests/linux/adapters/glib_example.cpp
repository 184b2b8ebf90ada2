// SPDX-License-Identifier: MIT
// A GLib program watched by loopcanary: three lines of set-up, no callback touched. Its timeout's
// callback sleeps 500 ms: stderr shows the block, "event = glib.iteration".
#include <glib.h>

#include <chrono>
#include <thread>

#include "loopcanary/linux/glib.hpp"

int main() {
  GMainLoop* main_loop = g_main_loop_new(nullptr, FALSE);
  g_timeout_add(10, [](gpointer loop) -> gboolean {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    g_main_loop_quit(static_cast<GMainLoop*>(loop));
    return G_SOURCE_REMOVE;
  }, main_loop);
  loopcanary::port_linux::Setup canary;                                   // loopcanary 1/3
  if (!canary.start().ok()) return 1;                                     // loopcanary 2/3
  loopcanary::port_linux::ScopedGlibLoop watch(canary, nullptr, "glib");  // loopcanary 3/3
  g_main_loop_run(main_loop);
  g_main_loop_unref(main_loop);
}
