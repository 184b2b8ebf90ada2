// SPDX-License-Identifier: MIT
// Port "cortex-m": drain() with the core's text and JSON formatter, in a file of its own so that
// a firmware that sends packets (drain) links no formatter code at all.
#include "loopcanary/format.hpp"
#include "loopcanary/port/cortex_m.hpp"

namespace loopcanary::cortex_m {

std::uint32_t drain(Watchdog& watchdog, const Sink& sink, Format format, char* buffer, std::size_t size) noexcept {
  if (sink.write == nullptr || buffer == nullptr || size == 0) return 0;
  std::uint32_t written = 0;
  loopcanary::detail::Slot<BlockRecord> record;  // written by pop() before it is read: not constructed
  while (watchdog.pop(record.value)) {
    if (format == Format::json) {
      format_json(record.value, buffer, size, JsonExtension{});
    } else {
      format_text(record.value, buffer, size);
    }
    sink.write(sink.context, buffer);
    ++written;
  }
  return written;
}

}  // namespace loopcanary::cortex_m
