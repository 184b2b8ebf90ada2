// SPDX-License-Identifier: MIT
// libuv adapter: one object makes the calling thread a loop of a port_linux::Setup and watches
// the uv_loop_t it runs. libuv calls no hook around each callback; its prepare and check
// handles bracket the poll phase, where the loop waits for I/O. A prepare handle ends the
// dispatch before the poll, a check handle begins the next one after it:
//
//   loopcanary::port_linux::Setup canary;
//   canary.start();
//   loopcanary::port_linux::ScopedUvLoop watch(canary, uv_default_loop(), "uv");
//   uv_run(uv_default_loop(), UV_RUN_DEFAULT);
//
// What is a dispatch (event "uv.iteration", one per turn of the loop): from the check phase of
// one turn to the prepare phase of the next, that is the check callbacks, the close callbacks,
// the timers, the pending callbacks (deferred write and connect completions, errors), the idle
// and the prepare callbacks. The reports' stacks name the callback; the event does not.
// What is not: the poll phase, which is the wait and also the I/O callbacks libuv runs inside
// it as epoll reports the descriptors ready (uv_read_start's, uv_poll_start's, uv_udp_recv's,
// a listener's connection callback): libuv has no hook between its epoll_wait and those. Check
// and prepare handles the program started before this object run on the far side of its own
// (libuv runs the handles of a phase newest first) and are outside too. The wait itself is
// never a block.
//
// The handles are unreferenced: they never keep uv_run from returning. Cost per turn: one
// begin/end pair, two handle callbacks.
#pragma once

#include <uv.h>

#include "linux_setup.hpp"
#include "loopcanary/event.hpp"

namespace loopcanary::port_linux {

/// The Event of every libuv dispatch: "uv.iteration".
extern const Event kUvIteration;

/// Makes the calling thread a loop of `setup` (a ScopedLoop named `name`) and watches `loop`,
/// which this thread runs, from construction to destruction: construction begins the first
/// dispatch, each turn of the loop ends it before its poll and begins the next after it, and
/// destruction ends the last one. Construct it on the thread that calls uv_run, before uv_run
/// and after setup.start(); destroy it on the same thread after uv_run returned (never from a
/// callback). When refused (the ScopedLoop refused, or libuv refused a handle: error() says
/// which) ok() is false and the loop runs unwatched.
class ScopedUvLoop {
 public:
  ScopedUvLoop(Setup& setup, uv_loop_t* loop, const char* name) noexcept;
  /// Ends the running dispatch and closes the two handles, then runs `loop` once without
  /// waiting (uv_run UV_RUN_NOWAIT) to finish closing them: that turn also runs whatever else
  /// is ready.
  ~ScopedUvLoop();
  ScopedUvLoop(const ScopedUvLoop&) = delete;
  ScopedUvLoop& operator=(const ScopedUvLoop&) = delete;

  bool ok() const noexcept { return started_; }
  /// 0, UV_EBUSY when the ScopedLoop was refused (SetupStats::loops_refused), UV_EINVAL when
  /// `loop` is null, or libuv's error starting a handle.
  int error() const noexcept { return error_; }
  ScopedLoop& loop() noexcept { return scoped_; }

 private:
  static void on_prepare(uv_prepare_t* handle);
  static void on_check(uv_check_t* handle);

  ScopedLoop scoped_;
  uv_loop_t* uv_ = nullptr;
  uv_prepare_t prepare_{};
  uv_check_t check_{};
  bool started_ = false;
  bool open_ = false;  // a dispatch of this loop is running
  int error_ = 0;
};

}  // namespace loopcanary::port_linux
