// SPDX-License-Identifier: MIT
// GLib adapter: one object makes the calling thread a loop of a port_linux::Setup and watches
// the GMainContext it iterates. The context's poll function is the only place GLib waits, so
// the adapter wraps it (g_main_context_set_poll_func): the dispatch ends before the real poll
// and the next begins when it returns:
//
//   loopcanary::port_linux::Setup canary;
//   canary.start();
//   loopcanary::port_linux::ScopedGlibLoop watch(canary, context, "glib");
//   g_main_loop_run(main_loop);   // a GMainLoop of `context`
//
// What is a dispatch (event "glib.iteration", one per iteration of the context): everything the
// context does between two waits, that is the check and dispatch of the sources found ready
// (every callback: timeouts, idles, I/O watches, GTask completions) and the prepare and query of
// the next iteration. When several sources are ready in one iteration, their callbacks share
// the dispatch; the reports' stacks name the callback, the event does not. The wait itself is
// never a block.
//
// The poll function has no user data: the object reaches itself through a thread-local
// pointer, so the context must be iterated on the thread that made the object (the thread that
// acquires it), one watched context per thread. Another thread iterating it polls with
// g_poll, its work not watched. Cost per iteration: one begin/end pair and one indirect call.
#pragma once

#include <glib.h>

#include "loopcanary/event.hpp"
#include "loopcanary/linux/setup.hpp"

namespace loopcanary::port_linux {

/// The Event of every GLib dispatch: "glib.iteration".
extern const Event kGlibIteration;

/// Makes the calling thread a loop of `setup` (a ScopedLoop named `name`) and watches `context`
/// (null: the global default context), which this thread iterates, from construction to
/// destruction: construction begins the first dispatch and installs the poll function,
/// destruction puts the context's previous poll function back and ends the running dispatch.
/// Construct it on the thread that iterates the context, after setup.start() and while no
/// thread iterates it; destroy it on the same thread, outside any iteration of the context.
/// When refused (the ScopedLoop refused) ok() is false and the context runs unwatched.
class ScopedGlibLoop {
 public:
  ScopedGlibLoop(Setup& setup, GMainContext* context, const char* name) noexcept;
  ~ScopedGlibLoop();
  ScopedGlibLoop(const ScopedGlibLoop&) = delete;
  ScopedGlibLoop& operator=(const ScopedGlibLoop&) = delete;

  bool ok() const noexcept { return context_ != nullptr; }
  ScopedLoop& loop() noexcept { return scoped_; }

 private:
  static gint poll(GPollFD* fds, guint count, gint timeout_ms);

  ScopedLoop scoped_;
  GMainContext* context_ = nullptr;
  GPollFunc previous_ = nullptr;
};

}  // namespace loopcanary::port_linux
