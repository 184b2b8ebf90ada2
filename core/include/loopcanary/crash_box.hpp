// SPDX-License-Identifier: MIT
// Crash box: the last records kept in RAM that start-up code does not clear, so that they survive
// a reset (a hardware watchdog, a requested reset after a hang) and are sent at the next boot as
// `previous_boot` packets (docs/report-format.md, "Binary form"). No heap, no OS.
//
//   board's no-init section:  StaticCrashBox<1024> box;       (never zeroed or constructed)
//   boot:      box.open(board cause)   validate, keep what is intact, count what is not
//              box.drain(sink)          send the kept records, empty the box
//   watchdog:  box.store(record)        e.g. from the hang interceptor
//              box.set_reset_cause(ResetCause::software); then request the reset
//
// Memory (for a debugger reading RAM): the header (CrashBoxHeader, native byte order, guarded
// by its own CRC-32), this boot's state, then the packet bytes: whole `previous_boot` packets
// back to back from the first byte, `used` bytes in all, oldest first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/packet.hpp"
#include "loopcanary/record.hpp"

namespace loopcanary {

/// What open() found.
enum class CrashBoxStatus : std::uint8_t {
  empty,      ///< a valid box with no record: nothing to send
  kept,       ///< a valid box with records from before the reset: drain() sends them
  discarded,  ///< no valid box (power-on garbage, a damaged header, another layout or size):
              ///< the box is set up empty and the loss counted (CrashBoxStats::boxes_discarded)
};

/// Counters of a crash box. The first three belong to the box and survive resets while it stays
/// valid (a discarded box starts them again from 0); the others describe this boot. A plain
/// aggregate without default values: the box keeps one in its no-init memory.
struct CrashBoxStats {
  std::uint32_t stored;             ///< records stored
  std::uint32_t overwritten;        ///< oldest records dropped to make room for newer ones
  std::uint32_t refused;            ///< records larger than the whole box (not stored)
  std::uint32_t kept;               ///< records open() found intact (this boot)
  std::uint32_t records_discarded;  ///< damaged spans of packet bytes open() dropped (this boot;
                                    ///< one count per run of bad bytes, usually one record)
  std::uint32_t boxes_discarded;    ///< 1 when open() found no valid box this boot, else 0
  std::uint32_t drained;            ///< records drain() sent (this boot)
  ResetCause reset_cause;           ///< cause of the reset before this boot, as open() decided it
};

/// The header at the start of the box memory. Native byte order; `crc` is the CRC-32
/// (packet.hpp) of the bytes before it.
struct CrashBoxHeader {
  std::uint32_t magic;        ///< kCrashBoxMagic
  std::uint32_t layout;       ///< kCrashBoxLayout
  std::uint32_t capacity;     ///< packet bytes of the box (its Bytes parameter)
  std::uint32_t used;         ///< packet bytes in use, from the first (<= capacity)
  std::uint32_t stored;       ///< CrashBoxStats::stored
  std::uint32_t overwritten;  ///< CrashBoxStats::overwritten
  std::uint32_t refused;      ///< CrashBoxStats::refused
  std::uint32_t reset_cause;  ///< ResetCause set by set_reset_cause() since open()
  std::uint32_t crc;          ///< CRC-32 of the fields above
};

/// "LCbx" read as a little-endian word.
inline constexpr std::uint32_t kCrashBoxMagic = 0x7862434Cu;
/// Version of the box's memory layout (header and stored form); another value is discarded.
inline constexpr std::uint32_t kCrashBoxLayout = 1;

/// The capacity-free part of StaticCrashBox. Trivial (no constructor): it lives in memory that
/// start-up code neither zeroes nor constructs, and open() makes sense of whatever it holds.
/// One context at a time: open() and drain() at boot before the watchdog polls, store() and
/// set_reset_cause() from the watchdog context (or the loop) afterwards; none is reentrant.
/// Every call except open() requires open() to have run this boot.
class CrashBox {
 public:
  /// Stores `record` as a `previous_boot` packet (its reset cause filled in by the next open()),
  /// dropping the oldest records while it does not fit (counted in `overwritten`). Returns
  /// false, and counts it in `refused`, when the record is larger than the whole box; the
  /// records dropped in the attempt stay dropped. Cost: one encode_packet per record dropped
  /// plus one, a CRC over the packet and a move of the kept bytes.
  bool store(const BlockRecord& record) noexcept;

  /// Records `cause` as the cause of the reset the firmware is about to request (before
  /// SYSRESETREQ, or from a watchdog's early-warning interrupt). The next open() gives it to the
  /// records stored before that reset when the board cannot tell the cause itself.
  void set_reset_cause(ResetCause cause) noexcept;

  /// Sends the records open() kept to `sink`, oldest first, one `previous_boot` packet per
  /// call, and removes them from the box; records stored since open() stay for the next boot.
  /// Returns the records sent. A null `sink.write` sends nothing and keeps them.
  std::uint32_t drain(const PacketSink& sink) noexcept;

  /// The counters.
  CrashBoxStats stats() const noexcept;

  /// An Interceptor (Watchdog::add_interceptor with the box as context) that stores the `hang`
  /// and `final` records (an `in_progress` report is followed by one of those).
  static void intercept(void* box, const BlockRecord& record) noexcept;

 protected:
  /// Validates the box at boot: header magic, layout, capacity and CRC, then every packet's
  /// framing and CRC. Intact packets are kept (moved together), damaged bytes dropped and
  /// counted; an invalid header discards the whole box (counted). Packets stored before this
  /// reset get their reset cause: `board_cause` when it is not unknown, else the cause set by
  /// set_reset_cause(). Never decodes a record.
  CrashBoxStatus open(std::uint8_t* packets, std::uint32_t capacity, ResetCause board_cause) noexcept;

 private:
  void seal() noexcept;

  CrashBoxHeader header_;
  std::uint8_t* packets_;
  CrashBoxStats boot_;
};

/// A crash box of `Bytes` packet bytes (plus about 80 bytes of header and state). A record
/// takes its encoded size plus one byte (typically 60..300 bytes; at most kMaxPacketBytes,
/// packet.hpp): a box of kMaxPacketBytes or more never refuses one. Declare it at namespace
/// scope in the board's no-init section (loopcanary/board.hpp: LOOPCANARY_BOARD_NOINIT) and
/// call open() first at every boot.
template <std::size_t Bytes>
class StaticCrashBox : public CrashBox {
  static_assert(Bytes >= 16 && Bytes <= 0x7FFFFFFF, "StaticCrashBox: Bytes out of range");

 public:
  /// CrashBox::open for this box's memory. At boot, before any other call; `board_cause` from
  /// the board (loopcanary/board.hpp: board::reset_cause()), ResetCause::unknown when it cannot
  /// tell. Returns what it found.
  CrashBoxStatus open(ResetCause board_cause) noexcept {
    return CrashBox::open(packets_, static_cast<std::uint32_t>(Bytes), board_cause);
  }

 private:
  std::uint8_t packets_[Bytes];
};

}  // namespace loopcanary
