// SPDX-License-Identifier: MIT
// libuv adapter: the prepare handle ends the dispatch before the poll, the check handle begins
// the next after it.
#include "loopcanary_uv.hpp"

namespace loopcanary::port_linux {

const Event kUvIteration{"uv.iteration"};

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
}

void ScopedUvLoop::on_check(uv_check_t* handle) {
  auto* self = static_cast<ScopedUvLoop*>(handle->data);
  if (!self->open_) self->scoped_.monitor().begin(kUvIteration);
  self->open_ = true;
}

}  // namespace loopcanary::port_linux
