// SPDX-License-Identifier: MIT
// Formatting a BlockRecord into a caller-provided buffer: a human text form in the spirit of
// BlockCanary's log, and one JSON object per record (JSON Lines). No allocation, no stdio.
// docs/report-format.md describes both forms field by field.
#pragma once

#include <cstddef>

#include "loopcanary/record.hpp"

namespace loopcanary {

/// Outcome of a format call. The buffer always ends with a NUL when its size is > 0.
struct FormatResult {
  std::size_t length = 0;   ///< characters written, excluding the NUL
  std::size_t needed = 0;   ///< characters the whole form needs, excluding the NUL
  bool truncated = false;   ///< needed > length: the buffer was too small; the text written
                            ///< is a prefix and ends with the marker "...[truncated]\n" when
                            ///< the buffer can hold it
};

/// Multi-line text, each line "key = value", then the top frames and the stacks. Program
/// counters print as hex (symbolise on the host). Any context; reentrant.
FormatResult format_text(const BlockRecord& record, char* buffer, std::size_t size) noexcept;

/// One JSON object on one line, ending with '\n'. Any context; reentrant.
FormatResult format_json(const BlockRecord& record, char* buffer, std::size_t size) noexcept;

}  // namespace loopcanary
