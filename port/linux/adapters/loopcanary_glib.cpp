// SPDX-License-Identifier: MIT
// GLib adapter: the context's poll function ends the dispatch, waits with the poll function the
// context had, and begins the next.
#include "loopcanary/linux/glib.hpp"

namespace loopcanary::port_linux {

const Event kGlibIteration{"glib.iteration"};

namespace {
// The loop of the calling thread's watched context and the poll function the context had.
struct GlibThread {
  PortMonitor* monitor;
  GPollFunc previous;
};
thread_local GlibThread t_glib = {nullptr, nullptr};
}  // namespace

ScopedGlibLoop::ScopedGlibLoop(Setup& setup, GMainContext* context, const char* name) noexcept
    : scoped_(setup, name) {
  if (!scoped_.ok()) return;
  context_ = context != nullptr ? context : g_main_context_default();
  previous_ = g_main_context_get_poll_func(context_);
  t_glib = GlibThread{&scoped_.monitor(), previous_};
  scoped_.monitor().begin(kGlibIteration);
  g_main_context_set_poll_func(context_, &ScopedGlibLoop::poll);
}

ScopedGlibLoop::~ScopedGlibLoop() {
  if (context_ == nullptr) return;
  g_main_context_set_poll_func(context_, previous_);
  t_glib = GlibThread{nullptr, nullptr};
  scoped_.monitor().end();
}

gint ScopedGlibLoop::poll(GPollFD* fds, guint count, gint timeout_ms) {
  const GlibThread self = t_glib;
  if (self.monitor == nullptr) {
    // A thread without a watched context iterates this one: GLib's default poll, unwatched
    // (the context's previous function is not reachable from here).
    return g_poll(fds, count, timeout_ms);
  }
  self.monitor->end();
  const gint ready = self.previous(fds, count, timeout_ms);
  self.monitor->begin(kGlibIteration);
  return ready;
}

}  // namespace loopcanary::port_linux
