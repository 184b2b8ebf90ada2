// SPDX-License-Identifier: MIT
// The Asio adapter's names: one static Event per operation Asio names in its handler tracking
// (the object types and operation names Asio 1.22 passes to ASIO_HANDLER_CREATION on Linux),
// and a per-thread cache in front of the table.
#include "loopcanary/linux/asio.hpp"

#include <cstddef>
#include <cstring>

namespace loopcanary::port_linux {

const Event kAsioHandler{"asio.handler"};

namespace {

struct AsioOperation {
  const char* object_type;
  const char* op_name;
  Event event;
};

#define LOOPCANARY_ASIO_OPERATION(object, op) \
  AsioOperation { object, op, Event { object "." op } }

const AsioOperation kOperations[] = {
    LOOPCANARY_ASIO_OPERATION("io_context", "post"),
    LOOPCANARY_ASIO_OPERATION("io_context", "dispatch"),
    LOOPCANARY_ASIO_OPERATION("io_context", "defer"),
    LOOPCANARY_ASIO_OPERATION("io_context", "execute"),
    LOOPCANARY_ASIO_OPERATION("strand", "post"),
    LOOPCANARY_ASIO_OPERATION("strand", "dispatch"),
    LOOPCANARY_ASIO_OPERATION("strand_executor", "post"),
    LOOPCANARY_ASIO_OPERATION("strand_executor", "dispatch"),
    LOOPCANARY_ASIO_OPERATION("strand_executor", "defer"),
    LOOPCANARY_ASIO_OPERATION("strand_executor", "execute"),
    LOOPCANARY_ASIO_OPERATION("thread_pool", "post"),
    LOOPCANARY_ASIO_OPERATION("thread_pool", "dispatch"),
    LOOPCANARY_ASIO_OPERATION("thread_pool", "defer"),
    LOOPCANARY_ASIO_OPERATION("thread_pool", "execute"),
    LOOPCANARY_ASIO_OPERATION("system_executor", "post"),
    LOOPCANARY_ASIO_OPERATION("system_executor", "dispatch"),
    LOOPCANARY_ASIO_OPERATION("system_executor", "defer"),
    LOOPCANARY_ASIO_OPERATION("system_executor", "execute"),
    LOOPCANARY_ASIO_OPERATION("deadline_timer", "async_wait"),
    LOOPCANARY_ASIO_OPERATION("signal_set", "async_wait"),
    LOOPCANARY_ASIO_OPERATION("resolver", "async_resolve"),
    LOOPCANARY_ASIO_OPERATION("channel", "async_send"),
    LOOPCANARY_ASIO_OPERATION("channel", "async_receive"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_wait"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_accept"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_connect"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_send"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_send(null_buffers)"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_send_to"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_send_to(null_buffers)"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_receive"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_receive(null_buffers)"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_receive_from"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_receive_from(null_buffers)"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_receive_with_flags"),
    LOOPCANARY_ASIO_OPERATION("socket", "async_receive_with_flags(null_buffers)"),
    LOOPCANARY_ASIO_OPERATION("descriptor", "async_wait"),
    LOOPCANARY_ASIO_OPERATION("descriptor", "async_read_some"),
    LOOPCANARY_ASIO_OPERATION("descriptor", "async_read_some(null_buffers)"),
    LOOPCANARY_ASIO_OPERATION("descriptor", "async_write_some"),
    LOOPCANARY_ASIO_OPERATION("descriptor", "async_write_some(null_buffers)"),
};

#undef LOOPCANARY_ASIO_OPERATION

const Event& look_up(const char* object_type, const char* op_name) noexcept {
  if (object_type == nullptr || op_name == nullptr) return kAsioHandler;
  for (const AsioOperation& op : kOperations) {
    if (std::strcmp(op.op_name, op_name) == 0 && std::strcmp(op.object_type, object_type) == 0) return op.event;
  }
  return kAsioHandler;
}

// The last names each thread looked up, by the literals' addresses: one literal has one text,
// so an address seen before names the same operation. Direct-mapped on the op_name address.
constexpr std::size_t kCacheSlots = 8;
struct CacheSlot {
  const char* object_type;
  const char* op_name;
  const Event* event;
};
thread_local CacheSlot t_cache[kCacheSlots] = {};

}  // namespace

const Event& asio_event(const char* object_type, const char* op_name) noexcept {
  CacheSlot& slot = t_cache[(reinterpret_cast<std::uintptr_t>(op_name) >> 3) % kCacheSlots];
  if (slot.op_name == op_name && slot.object_type == object_type && slot.event != nullptr) return *slot.event;
  const Event& event = look_up(object_type, op_name);
  slot = CacheSlot{object_type, op_name, &event};
  return event;
}

}  // namespace loopcanary::port_linux
