// SPDX-License-Identifier: MIT
// libuv adapter: the prepare handle ends the dispatch before the poll phase, the interposed
// epoll wait begins the next as it returns, the check handle when the poll phase did not wait.
#include "loopcanary/linux/uv.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <sys/epoll.h>

#include <atomic>
#include <cerrno>

namespace loopcanary::port_linux {

const Event kUvIteration{"uv.iteration"};

namespace detail {

// The watch whose loop is in its poll phase on this thread (from its prepare to its check
// callback), or null.
thread_local ScopedUvLoop* t_polling = nullptr;

struct UvWait {
  using EpollWait = int (*)(int, epoll_event*, int, int);
  using EpollPwait = int (*)(int, epoll_event*, int, int, const sigset_t*);

  // The C library's function `name` (the next definition after this one), found once.
  template <class F>
  static F next(std::atomic<F>& cache, const char* name) noexcept {
    F f = cache.load(std::memory_order_acquire);
    if (f == nullptr) {
      f = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
      cache.store(f, std::memory_order_release);
    }
    return f;
  }

  static int unavailable() noexcept {
    errno = ENOSYS;
    return -1;
  }

  // The watch polling on `fd` on this thread, or null: its dispatch ends when the wait may block.
  static ScopedUvLoop* before(int fd, int timeout_ms) noexcept {
    ScopedUvLoop* self = t_polling;
    if (self == nullptr || fd != uv_backend_fd(self->uv_)) return nullptr;
    if (self->open_ && timeout_ms != 0) {
      self->scoped_.monitor().end();
      self->open_ = false;
    }
    return self;
  }

  static int after(ScopedUvLoop* self, int result) noexcept {
    if (self != nullptr && result >= 0 && !self->open_) {
      self->scoped_.monitor().begin(kUvIteration);
      self->open_ = true;
    }
    return result;
  }
};

std::atomic<UvWait::EpollWait> g_epoll_wait{nullptr};
std::atomic<UvWait::EpollPwait> g_epoll_pwait{nullptr};

}  // namespace detail

ScopedUvLoop::ScopedUvLoop(Setup& setup, uv_loop_t* loop, const char* name) noexcept : scoped_(setup, name), uv_(loop) {
  if (!scoped_.ok()) {
    error_ = UV_EBUSY;
    return;
  }
  if (loop == nullptr) {
    error_ = UV_EINVAL;
    return;
  }
  prepare_.data = this;
  check_.data = this;
  // Initialised handles must be closed, whatever happens next.
  error_ = uv_prepare_init(loop, &prepare_);
  if (error_ != 0) return;
  error_ = uv_check_init(loop, &check_);
  if (error_ != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&prepare_), nullptr);
    uv_run(loop, UV_RUN_NOWAIT);
    return;
  }
  uv_prepare_start(&prepare_, &on_prepare);  // never fails on an initialised handle with a callback
  uv_check_start(&check_, &on_check);
  uv_unref(reinterpret_cast<uv_handle_t*>(&prepare_));
  uv_unref(reinterpret_cast<uv_handle_t*>(&check_));
  started_ = true;
  scoped_.monitor().begin(kUvIteration);
  open_ = true;
}

ScopedUvLoop::~ScopedUvLoop() {
  if (!started_) return;
  if (detail::t_polling == this) detail::t_polling = nullptr;  // uv_stop() in the poll phase
  if (open_) scoped_.monitor().end();
  open_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&prepare_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
  uv_run(uv_, UV_RUN_NOWAIT);
}

void ScopedUvLoop::on_prepare(uv_prepare_t* handle) {
  auto* self = static_cast<ScopedUvLoop*>(handle->data);
  if (self->open_) self->scoped_.monitor().end();
  self->open_ = false;
  detail::t_polling = self;
}

void ScopedUvLoop::on_check(uv_check_t* handle) {
  auto* self = static_cast<ScopedUvLoop*>(handle->data);
  detail::t_polling = nullptr;
  if (!self->open_) self->scoped_.monitor().begin(kUvIteration);
  self->open_ = true;
}

}  // namespace loopcanary::port_linux

// The interposed waits (see loopcanary_uv.hpp). When the C library's cannot be found, they fail
// with ENOSYS.
extern "C" int epoll_wait(int fd, epoll_event* events, int max_events, int timeout_ms) {
  using loopcanary::port_linux::detail::UvWait;
  const UvWait::EpollWait wait = UvWait::next(loopcanary::port_linux::detail::g_epoll_wait, "epoll_wait");
  if (wait == nullptr) return UvWait::unavailable();
  auto* self = UvWait::before(fd, timeout_ms);
  return UvWait::after(self, wait(fd, events, max_events, timeout_ms));
}

extern "C" int epoll_pwait(int fd, epoll_event* events, int max_events, int timeout_ms, const sigset_t* mask) {
  using loopcanary::port_linux::detail::UvWait;
  const UvWait::EpollPwait wait = UvWait::next(loopcanary::port_linux::detail::g_epoll_pwait, "epoll_pwait");
  if (wait == nullptr) return UvWait::unavailable();
  auto* self = UvWait::before(fd, timeout_ms);
  return UvWait::after(self, wait(fd, events, max_events, timeout_ms, mask));
}
