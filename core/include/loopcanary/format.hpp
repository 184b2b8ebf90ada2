// SPDX-License-Identifier: MIT
// Formatting a BlockRecord into a caller-provided buffer: a human text form in the spirit of
// BlockCanary's log, and one JSON object per record (JSON Lines). No allocation, no stdio.
// docs/report-format.md describes both forms field by field.
#pragma once

#include <cstddef>
#include <cstdint>

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

/// Names are UTF-8 in every form: the length in bytes (2 to 4) of the well-formed UTF-8 sequence
/// of one code point from U+0080 that starts at `s`, or 0 when none starts there (an ASCII byte,
/// a continuation byte, an overlong form, a surrogate, a code point above U+10FFFF, a sequence
/// cut short by any other byte or the NUL). Reads at most 4 bytes, none past a NUL. The writers
/// below show a byte for which it gives 0 as U+FFFD; the host tool reads names by the same rule.
/// Any context; reentrant.
std::size_t utf8_sequence(const char* s) noexcept;

/// Appends text to a fixed buffer, never past its end, and counts what did not fit so the caller
/// learns the size the whole text needs. One byte is kept for the NUL that finish() writes.
/// The building block of format_text/format_json, public so a port's sink can write its own
/// lines the same way. Any context; one writer per buffer.
class TextWriter {
 public:
  TextWriter(char* buffer, std::size_t size) noexcept : buffer_(buffer), size_(size) {}

  void put(char c) noexcept {
    if (size_ != 0 && used_ + 1 < size_) buffer_[used_++] = c;
    ++needed_;
  }
  void puts(const char* s) noexcept;
  /// A name for the text form: control characters print as '?' so a name cannot forge lines;
  /// UTF-8 as it is, each byte that is not part of a well-formed UTF-8 sequence as U+FFFD.
  void name(const char* s) noexcept;
  /// Unsigned decimal.
  void u64(std::uint64_t v) noexcept;
  /// "0x" and lower-case hex digits, no leading zeros.
  void hex(std::uint64_t v) noexcept;
  /// Microseconds as milliseconds with three decimals: 810000 -> "810.000".
  void ms(std::uint64_t us) noexcept;
  /// Per mille as a percentage with one decimal: 923 -> "92.3".
  void percent(std::uint32_t permille) noexcept;
  /// A JSON string: quotes and backslashes escaped, control characters as \u00XX, UTF-8 as it
  /// is, each byte that is not part of a well-formed UTF-8 sequence as \ufffd (U+FFFD), so the
  /// output is valid JSON whatever the input holds and a JSON reader reads the name as written.
  void json_string(const char* s) noexcept;

  /// Characters written so far (excluding the NUL).
  std::size_t length() const noexcept { return used_; }
  /// Characters the text needs so far (excluding the NUL).
  std::size_t needed() const noexcept { return needed_; }
  /// True once something did not fit.
  bool overflowed() const noexcept { return needed_ > used_; }

  /// Writes the NUL (when size > 0) and, when something did not fit, replaces the tail with the
  /// "...[truncated]\n" marker if the buffer can hold it.
  FormatResult finish() noexcept;

 private:
  // The UTF-8 sequence at `s` (its first byte from 0x80) or, when none starts there, `replacement`;
  // returns the bytes of `s` consumed (the sequence's length, or 1).
  std::size_t non_ascii(const char* s, const char* replacement) noexcept;

  char* buffer_;
  std::size_t size_;
  std::size_t used_ = 0;
  std::size_t needed_ = 0;
};

/// Multi-line text, each line "key = value", then the top frames and the stacks. Program
/// counters print as hex (symbolise on the host). Any context; reentrant.
FormatResult format_text(const BlockRecord& record, char* buffer, std::size_t size) noexcept;

/// Frames of the main wait object's holder the cause line names after the object, innermost
/// first: "cause = waiting on OBJECT; holder in A <- B <- C", then " <- ..." when the holder's
/// stack has more (docs/report-format.md, "Text"). The text form prints them as PCs, the host
/// tool symbolised.
inline constexpr std::size_t kCauseHolderFrames = 3;

/// One wait object as every form names it (docs/report-format.md, "Wait objects"), e.g.
/// "mutex 0x7f3a9c0 held by 'journal' (tid 4242)", "socket fd 5 tcp 127.0.0.1:40112 >
/// 127.0.0.1:5000", "sleep 10.000 ms". Any context; reentrant.
FormatResult format_wait(const WaitReading& reading, char* buffer, std::size_t size) noexcept;

/// The JSON Lines format version that format_json and format_health_json write in every record
/// ("format_version", docs/report-format.md "Format version"; schemas in docs/schema/). Fields
/// are added within a version, never renamed, retyped or removed; such a change takes the next.
inline constexpr unsigned kJsonFormatVersion = 2;

/// Members a writer of JSON Lines adds to a record's object, facts only a host has (the Linux
/// port's symbolised frames and wall time, a decoder's previous_boot): format_json and
/// format_health_json call `write` after the record's own members, before the closing brace.
/// `write` appends whole members, each starting with ',', to `w`, and runs in the formatter's
/// context with `context`. A null `write` adds nothing.
struct JsonExtension {
  void (*write)(void* context, TextWriter& w) noexcept = nullptr;
  void* context = nullptr;
};

/// One JSON object on one line ("format_version" first), with the members of `extension` last,
/// ending with '\n'. Any context; reentrant.
FormatResult format_json(const BlockRecord& record, char* buffer, std::size_t size,
                         const JsonExtension& extension) noexcept;
/// format_json() with no extension.
inline FormatResult format_json(const BlockRecord& record, char* buffer, std::size_t size) noexcept {
  return format_json(record, buffer, size, JsonExtension{});
}

/// A health record as text lines (docs/report-format.md, "Health records"). Any context;
/// reentrant.
FormatResult format_health_text(const HealthRecord& record, char* buffer, std::size_t size) noexcept;

/// A health record as one JSON object on one line ("kind":"health" first, then "format_version"),
/// with the members of `extension` last, ending with '\n'. Any context; reentrant.
FormatResult format_health_json(const HealthRecord& record, char* buffer, std::size_t size,
                                const JsonExtension& extension) noexcept;
/// format_health_json() with no extension.
inline FormatResult format_health_json(const HealthRecord& record, char* buffer, std::size_t size) noexcept {
  return format_health_json(record, buffer, size, JsonExtension{});
}

}  // namespace loopcanary
