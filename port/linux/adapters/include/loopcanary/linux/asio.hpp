// SPDX-License-Identifier: MIT
// Asio adapter: Asio's custom handler-tracking header. Named on the compile line of every
// translation unit that includes Asio, it makes each completion handler an io_context runs on
// a loop thread (one with a port_linux::ScopedLoop) a dispatch of that loop, named by the
// operation that queued it as Asio names it ("deadline_timer.async_wait" for any timer's wait,
// "socket.async_receive", "io_context.execute" for asio::post, dispatch and defer on an
// io_context's executor, "io_context.post" for io_context::post), with no change to handler
// code:
//
//   -DASIO_CUSTOM_HANDLER_TRACKING='"loopcanary/linux/asio.hpp"'         (standalone Asio)
//   -DBOOST_ASIO_CUSTOM_HANDLER_TRACKING='"loopcanary/linux/asio.hpp"'   (Boost.Asio)
//
// CMake: link loopcanary::adapter_asio, which adds both definitions and the include path. Every
// translation unit that includes Asio must see the same definition (it changes the layout of
// Asio's operations). Then, per thread that runs the io_context:
//
//   loopcanary::port_linux::ScopedLoop loop(canary, "io");   // canary: a started Setup
//   io.run();
//
// Several threads running one io_context are each a loop of their own. Handlers run on a thread
// without a ScopedLoop are not watched. A handler that runs inside another one (a strand's
// handlers inside the strand's invoker, a handler a handler dispatches inline) is folded into
// the outer dispatch (LoopStats::nested); the samples' stacks name it. The time Asio spends
// waiting for I/O between handlers is outside every dispatch, so it is never a block.
// LOOPCANARY_SCOPE(*loopcanary::port_linux::this_thread_loop(), "name") inside a handler names a
// scope of the running dispatch as usual.
//
// Cost per handler: asio_event() where the operation starts (a per-thread cache of the
// operation's names, a table look-up on a miss) and one begin/end pair around the handler.
#pragma once

#include <cstdint>

#include "loopcanary/event.hpp"
#include "loopcanary/linux/setup.hpp"

namespace loopcanary::port_linux {

/// The Event of every handler of an operation Asio does not name (in the table of
/// loopcanary_asio.cpp): "asio.handler".
extern const Event kAsioHandler;

/// The Event whose handlers ran Asio's operation `op_name` ("post", "async_wait", ...) on an
/// object of `object_type` ("io_context", "deadline_timer", "socket", ...), named
/// "<object_type>.<op_name>"; kAsioHandler when the pair is not one of Asio's. Both are Asio's
/// string literals (static, NUL-terminated); null is taken as unknown. Allocates nothing,
/// never fails. Any thread.
const Event& asio_event(const char* object_type, const char* op_name) noexcept;

/// Base of every operation Asio tracks (ASIO_INHERIT_TRACKED_HANDLER): the Event its handler
/// runs as. Written by asio_creation() on the thread that starts the operation, read by
/// AsioCompletion on the thread that completes it (Asio orders the two).
class AsioTrackedHandler {
 public:
  const Event* loopcanary_event = &kAsioHandler;

 protected:
  AsioTrackedHandler() noexcept = default;
  ~AsioTrackedHandler() = default;
};

/// ASIO_HANDLER_CREATION: names the operation's handler. Any thread.
template <class Context>
inline void asio_creation(Context& /*context*/, AsioTrackedHandler& handler, const char* object_type,
                          void* /*object*/, std::uintmax_t /*native_handle*/, const char* op_name) noexcept {
  handler.loopcanary_event = &asio_event(object_type, op_name);
}

/// ASIO_HANDLER_COMPLETION: lives in the scope that completes one operation;
/// invocation_begin() begins a dispatch of the operation's Event on the calling thread's loop
/// (none when the thread has no ScopedLoop), invocation_end() ends it, and the destructor ends
/// it when the handler left by an exception. The thread that completes the operation.
class AsioCompletion {
 public:
  explicit AsioCompletion(const AsioTrackedHandler& handler) noexcept : event_(handler.loopcanary_event) {}
  ~AsioCompletion() { invocation_end(); }
  AsioCompletion(const AsioCompletion&) = delete;
  AsioCompletion& operator=(const AsioCompletion&) = delete;

  /// The handler's arguments (an error code, a size) are not looked at.
  template <class... Args>
  void invocation_begin(const Args&... /*arguments*/) noexcept {
    monitor_ = this_thread_loop();
    if (monitor_ != nullptr) monitor_->begin(*event_);
  }
  void invocation_end() noexcept {
    if (monitor_ != nullptr) {
      monitor_->end();
      monitor_ = nullptr;
    }
  }

 private:
  const Event* event_;
  PortMonitor* monitor_ = nullptr;
};

}  // namespace loopcanary::port_linux

// The hooks Asio's detail/handler_tracking.hpp requires of a custom tracking header, for
// standalone Asio and Boost.Asio. Only creation and completion are used; the others (the
// reactor's registrations and events, synchronous operations, source locations) do nothing.
#define LOOPCANARY_ASIO_HOOK_NONE(args) static_cast<void>(0)
#ifndef ASIO_INHERIT_TRACKED_HANDLER
#define ASIO_INHERIT_TRACKED_HANDLER : public ::loopcanary::port_linux::AsioTrackedHandler
#define ASIO_ALSO_INHERIT_TRACKED_HANDLER , public ::loopcanary::port_linux::AsioTrackedHandler
#define ASIO_HANDLER_TRACKING_INIT static_cast<void>(0)
#define ASIO_HANDLER_LOCATION(args) LOOPCANARY_ASIO_HOOK_NONE(args)
#define ASIO_HANDLER_CREATION(args) ::loopcanary::port_linux::asio_creation args
#define ASIO_HANDLER_COMPLETION(args) ::loopcanary::port_linux::AsioCompletion tracked_completion args
#define ASIO_HANDLER_INVOCATION_BEGIN(args) tracked_completion.invocation_begin args
#define ASIO_HANDLER_INVOCATION_END tracked_completion.invocation_end()
#define ASIO_HANDLER_OPERATION(args) LOOPCANARY_ASIO_HOOK_NONE(args)
#define ASIO_HANDLER_REACTOR_REGISTRATION(args) LOOPCANARY_ASIO_HOOK_NONE(args)
#define ASIO_HANDLER_REACTOR_DEREGISTRATION(args) LOOPCANARY_ASIO_HOOK_NONE(args)
#define ASIO_HANDLER_REACTOR_READ_EVENT 1
#define ASIO_HANDLER_REACTOR_WRITE_EVENT 2
#define ASIO_HANDLER_REACTOR_ERROR_EVENT 4
#define ASIO_HANDLER_REACTOR_EVENTS(args) LOOPCANARY_ASIO_HOOK_NONE(args)
#define ASIO_HANDLER_REACTOR_OPERATION(args) LOOPCANARY_ASIO_HOOK_NONE(args)
#endif
#ifndef BOOST_ASIO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_INHERIT_TRACKED_HANDLER ASIO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_ALSO_INHERIT_TRACKED_HANDLER ASIO_ALSO_INHERIT_TRACKED_HANDLER
#define BOOST_ASIO_HANDLER_TRACKING_INIT ASIO_HANDLER_TRACKING_INIT
#define BOOST_ASIO_HANDLER_LOCATION(args) ASIO_HANDLER_LOCATION(args)
#define BOOST_ASIO_HANDLER_CREATION(args) ASIO_HANDLER_CREATION(args)
#define BOOST_ASIO_HANDLER_COMPLETION(args) ASIO_HANDLER_COMPLETION(args)
#define BOOST_ASIO_HANDLER_INVOCATION_BEGIN(args) ASIO_HANDLER_INVOCATION_BEGIN(args)
#define BOOST_ASIO_HANDLER_INVOCATION_END ASIO_HANDLER_INVOCATION_END
#define BOOST_ASIO_HANDLER_OPERATION(args) ASIO_HANDLER_OPERATION(args)
#define BOOST_ASIO_HANDLER_REACTOR_REGISTRATION(args) ASIO_HANDLER_REACTOR_REGISTRATION(args)
#define BOOST_ASIO_HANDLER_REACTOR_DEREGISTRATION(args) ASIO_HANDLER_REACTOR_DEREGISTRATION(args)
#define BOOST_ASIO_HANDLER_REACTOR_READ_EVENT ASIO_HANDLER_REACTOR_READ_EVENT
#define BOOST_ASIO_HANDLER_REACTOR_WRITE_EVENT ASIO_HANDLER_REACTOR_WRITE_EVENT
#define BOOST_ASIO_HANDLER_REACTOR_ERROR_EVENT ASIO_HANDLER_REACTOR_ERROR_EVENT
#define BOOST_ASIO_HANDLER_REACTOR_EVENTS(args) ASIO_HANDLER_REACTOR_EVENTS(args)
#define BOOST_ASIO_HANDLER_REACTOR_OPERATION(args) ASIO_HANDLER_REACTOR_OPERATION(args)
#endif
