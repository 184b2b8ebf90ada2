// SPDX-License-Identifier: MIT
// libuv adapter: one object makes the calling thread a loop of a port_linux::Setup and watches
// the uv_loop_t it runs. libuv calls no hook around each callback, and the callbacks of the
// descriptors it finds ready run inside its poll phase, right after its wait. So the adapter
// brackets the wait itself: a prepare handle ends the dispatch before the poll phase, and the
// wait in the loop's own epoll instance (libuv's epoll_wait and epoll_pwait, on Linux), which
// the adapter interposes, begins the next one as it returns; a check handle begins it instead
// when the poll phase did not wait:
//
//   loopcanary::port_linux::Setup canary;
//   canary.start();
//   loopcanary::port_linux::ScopedUvLoop watch(canary, uv_default_loop(), "uv");
//   uv_run(uv_default_loop(), UV_RUN_DEFAULT);
//
// What is a dispatch (event "uv.iteration", one per turn of the loop): everything from the end
// of one wait to the prepare phase of the next turn, that is the I/O callbacks of the poll
// phase (reads, a listener's connections, uv_poll and uv_udp callbacks, async wake-ups,
// signals), the check callbacks, the close callbacks, the timers, the pending callbacks, the
// idle and the prepare callbacks. Several callbacks of one turn share the dispatch; the
// reports' stacks name the callback, the event does not. What is not: the wait, never a block,
// and check and prepare handles the program started before this object, which libuv runs on the
// far side of its own (it runs the handles of a phase newest first).
//
// The interposition: the adapter's epoll_wait and epoll_pwait replace the C library's for the
// whole process where the executable links the adapter (as a symbol of the executable they
// come first in the dynamic linker's search). On a thread whose watched loop is in its poll
// phase, a wait on that loop's epoll descriptor ends the running dispatch first unless it does
// not block (timeout 0) and begins one when it returns without error; every other call goes
// straight to the C library's, after one thread-local read. Where the adapter is linked into a
// shared library instead, the interposition may not take: the I/O callbacks then run outside
// the dispatch (in the poll phase, with the wait), and the check handle begins the next one.
//
// The handles are unreferenced: they never keep uv_run from returning. Cost per turn: one
// begin/end pair, two handle callbacks, the interposed wait's thread-local read.
#pragma once

#include <uv.h>

#include "loopcanary/event.hpp"
#include "loopcanary/linux/setup.hpp"

namespace loopcanary::port_linux {

namespace detail {
struct UvWait;  // the interposed epoll waits (loopcanary_uv.cpp)
}  // namespace detail

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
  friend struct detail::UvWait;
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
