// SPDX-License-Identifier: MIT
// The binary form of a BlockRecord: one self-delimiting packet per record, with a CRC, for a
// device's byte sinks (UART, semihosting, a RAM buffer a debugger reads, the crash box) and for
// compact log files. The host tool decodes packets (`loopcanary decode`). No allocation, no
// stdio. docs/report-format.md ("Binary form") specifies every byte.
//
//   magic(2) version(1) type(1) length(2, LE) | body(length) | CRC-32(4, LE)
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/config.hpp"
#include "loopcanary/hal.hpp"
#include "loopcanary/record.hpp"

namespace loopcanary {

/// First two bytes of every packet.
inline constexpr std::uint8_t kPacketMagic0 = 0xA5;
inline constexpr std::uint8_t kPacketMagic1 = 0x4C;
/// Format version this build writes (and the newest its decoders read).
inline constexpr std::uint8_t kPacketVersion = 4;
/// Bytes before the body (magic, version, type, length) and after it (CRC-32).
inline constexpr std::size_t kPacketHeaderBytes = 6;
inline constexpr std::size_t kPacketTrailerBytes = 4;

/// Packet types.
enum class PacketType : std::uint8_t {
  block = 1,          ///< a BlockRecord of the boot that sends it
  previous_boot = 2,  ///< a BlockRecord kept across a reset (crash box): reset cause + block body
  health = 3,         ///< a HealthRecord
  // Evidence packets (evidence.hpp): what a device's observer saw, for the host's assembler.
  watch = 4,          ///< a watch starts on a long dispatch
  sample = 5,         ///< a stack sample of a watch
  observation = 6,    ///< a report as the observer saw it (raw: the host assembles the record)
  boot = 7,           ///< where a boot's evidence starts, or where the previous boot's follows
};

/// Why the device reset, as a `previous_boot` packet carries it (docs/report-format.md).
enum class ResetCause : std::uint8_t {
  unknown = 0,    ///< the board cannot tell and the firmware set no cause before the reset
  power_on = 1,   ///< power-on reset (RAM held garbage: the box is discarded)
  reset_pin = 2,  ///< external reset pin
  software = 3,   ///< requested by the firmware (SYSRESETREQ)
  watchdog = 4,   ///< a hardware watchdog expired
  lockup = 5,     ///< the core locked up (a fault inside a fault handler)
  brown_out = 6,  ///< supply voltage dropped
};

/// "unknown", "power_on", "reset_pin", "software", "watchdog", "lockup", "brown_out" (the
/// decoder's JSON member "reset_cause"); "unknown_reset_cause" outside the enumeration. Any
/// context.
const char* to_string(ResetCause cause) noexcept;

/// Where packets go (a UART, a semihosting file, a RAM buffer): the next bytes of the packet
/// stream per call, in order. The Cortex-M port's drain() and CrashBox::drain() send one
/// whole packet per call; EvidenceRing::drain() sends the ring's bytes as they lie, in one or
/// two calls (a packet may be split between them). The stream is self-delimiting: a writer
/// needs no boundaries.
struct PacketSink {
  /// Called with the next `size` bytes (1..) at `packet`, valid only during the call. Runs in the
  /// context that called the sending function.
  void (*write)(void* context, const std::uint8_t* packet, std::size_t size);
  void* context;
};

/// Names longer than this (loop, event, scope names) are cut to it in a packet and marked cut.
inline constexpr std::size_t kPacketNameMax = 31;

namespace detail {
// Worst-case bytes of an unsigned LEB128 varint holding `bits` bits.
constexpr std::size_t varint_bytes(std::size_t bits) noexcept { return (bits + 6) / 7; }
// Bits needed to hold `value`.
constexpr std::size_t bit_width(std::size_t value) noexcept { return value == 0 ? 0 : 1 + bit_width(value >> 1); }
constexpr std::size_t larger(std::size_t a, std::size_t b) noexcept { return a > b ? a : b; }
constexpr std::size_t kPointerBits = sizeof(Frame) * 8;
// A name in the string table: its length varint (1 byte up to kPacketNameMax) and the bytes.
constexpr std::size_t kPacketNameBytes = 1 + kPacketNameMax;
// Strings: qualifier, loop, event, then at most the delayed-by event, one per stage and per scope
// frame of the top entries and of the samples.
constexpr std::size_t kPacketStringsMax = 4 + kMaxStages + (kTopFrames + kMaxSamples) * kMaxFrames;
// A string index.
constexpr std::size_t kPacketIndexBytes = varint_bytes(bit_width(kPacketStringsMax));
// A frame is a scope (its string, counted here, and its index) or a PC delta (zigzag: pointer bits).
constexpr std::size_t kPacketFrameBytes =
    larger(kPacketNameBytes + kPacketIndexBytes, varint_bytes(kPointerBits));
// The wait part (version 4): count, other, then each object: kind, samples, address, fd,
// value, text, owner, its names, its frames, the chain of holders.
constexpr std::size_t kPacketWaitBytes =
    kWaitObjects == 0 ? 0
                      : 1 + varint_bytes(32) +
                            kWaitObjects * (1 + varint_bytes(32) + varint_bytes(64) + varint_bytes(32) +
                                            varint_bytes(64) + kWaitTextMax + varint_bytes(32) + kThreadNameMax +
                                            kPacketNameBytes + 1 + kMaxFrames * varint_bytes(kPointerBits) + 1 +
                                            kWaitChainMax * (varint_bytes(64) + varint_bytes(32) + kThreadNameMax));
// A stack part (builds with stack evidence): presence, sp, lr, fp, count, each word's offset
// gap and value.
constexpr std::size_t kPacketStackPartBytes =
    3 + 3 * varint_bytes(kPointerBits) + kStackWords * (varint_bytes(16) + varint_bytes(kPointerBits));
// Stack evidence in a block packet: the stack words byte, the parts' count and each part, a
// slot byte per top entry and per sample.
constexpr std::size_t kPacketStackEvidenceBytes =
    kStackWords == 0 ? 0 : 2 + kStackSlots * kPacketStackPartBytes + kTopFrames + kMaxSamples;
constexpr std::size_t kPacketBodyMax =
    5 + varint_bytes(32) +                                  // configuration, capacities, tick_hz
    varint_bytes(32) + 4 + varint_bytes(32) +               // report, phase..loop_index, dispatch
    varint_bytes(32) + varint_bytes(64) + varint_bytes(32) + varint_bytes(32) +  // start, duration, end, threshold
    varint_bytes(32) + kPacketIndexBytes + kPacketNameBytes +  // delayed-by dispatch, event (and its string)
    varint_bytes(64) + 1 + 3 * varint_bytes(64) + 2 * varint_bytes(16) +  // window, presence, cpu, wait, steal, permille
    1 + kMemoryValues * varint_bytes(64) +                  // memory presence, values
    2 * varint_bytes(32) +                                  // records_dropped, notes_dropped
    varint_bytes(bit_width(kPacketStringsMax)) + 3 * kPacketNameBytes +  // string count, fixed strings
    1 + kMaxStages * (kPacketNameBytes + kPacketIndexBytes + varint_bytes(32)) +  // stages (and their strings)
    3 * varint_bytes(32) + 1 + varint_bytes(32) +           // sample counters, top_count, top_other
    kTopFrames * (varint_bytes(32) + 2 +                    // top entries: count, frame counts,
                  kMaxFrames * kPacketFrameBytes +          //   frames (and their scope strings),
                  varint_bytes(kPointerBits)) +             //   the innermost PC's range
    1 + kMaxSamples * (2 * varint_bytes(32) + 2 +           // samples: time, sequence, counts
                       kMaxFrames * kPacketFrameBytes) +    //   frames (and their scope strings)
    kPacketWaitBytes +                                      // the wait part
    kPacketStackEvidenceBytes;                              // stack evidence (stack words, parts, samples' entries)
}  // namespace detail

/// Largest packet this build's configuration can produce, in bytes (type `block`; a
/// `previous_boot` packet adds one). A buffer this size never refuses a record.
inline constexpr std::size_t kMaxPacketBytes =
    kPacketHeaderBytes + detail::kPacketBodyMax + kPacketTrailerBytes + 1;
static_assert(detail::kPacketBodyMax <= 0xFFFF, "packet body must fit its 16-bit length");

namespace detail {
constexpr std::size_t kHealthBodyMax =
    2 + 2 * varint_bytes(32) + 1 +                          // configuration, max events, tick_hz, number, loop_index
    9 * varint_bytes(32) +                                  // start .. max_duration
    1 + kHistogramBuckets * (1 + varint_bytes(32)) +         // histogram
    1 + kMemoryValues * varint_bytes(64) +                  // memory
    varint_bytes(32) +                                      // health_dropped
    varint_bytes(32) + (2 + kHealthEvents) * kPacketNameBytes +  // strings
    1 + kHealthEvents * 11 * varint_bytes(32);              // events
}  // namespace detail

/// Largest `health` packet this build's configuration can produce, in bytes.
inline constexpr std::size_t kMaxHealthPacketBytes =
    kPacketHeaderBytes + detail::kHealthBodyMax + kPacketTrailerBytes;
static_assert(detail::kHealthBodyMax <= 0xFFFF, "health packet body must fit its 16-bit length");

/// Writes `record` as one `block` packet into `buffer` (`size` bytes). Returns the packet's
/// length in bytes, or 0 when it does not fit (nothing usable is written then: a packet is never
/// cut). A `size` of kMaxPacketBytes always fits. Any context; reentrant; reads only `record`
/// and the strings it points to.
std::size_t encode_packet(const BlockRecord& record, std::uint8_t* buffer, std::size_t size) noexcept;

/// Writes `record` as one `health` packet (type 3) into `buffer` (`size` bytes). Returns the
/// packet's length, or 0 when it does not fit (nothing usable written). A `size` of
/// kMaxHealthPacketBytes always fits. Any context; reentrant.
std::size_t encode_health_packet(const HealthRecord& record, std::uint8_t* buffer, std::size_t size) noexcept;

/// The whole length of the packet whose header (its first kPacketHeaderBytes bytes) is at
/// `header`: header, body (the 16-bit length field) and CRC, 10..65545 bytes. What a reader of
/// a byte stream cuts packets by; it checks neither the magic nor the CRC. Any context.
constexpr std::size_t packet_size(const std::uint8_t* header) noexcept {
  return kPacketHeaderBytes + (header[4] | static_cast<std::size_t>(header[5]) << 8) + kPacketTrailerBytes;
}

/// CRC-32 (ISO-HDLC, as zlib: reflected polynomial 0xEDB88320, initial value and final XOR
/// 0xFFFFFFFF) of `size` bytes, continuing from `crc` (0 to start). Any context.
std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t crc = 0) noexcept;

namespace detail {
/// Completes the packet whose `body` bytes are at packet + kPacketHeaderBytes: writes the magic,
/// the version, `type`, the length and the CRC-32 after the body. Returns the packet's length.
/// `body` <= 0xFFFF. The one writer of packet headers (encode_packet, the crash box).
std::size_t seal_packet(std::uint8_t* packet, PacketType type, std::size_t body) noexcept;

/// Configuration bit 3 of `block`, `watch` and `observation` packets: the device's samples carry
/// stack evidence (LOOPCANARY_STACK_WORDS > 0), and a `stack words` byte follows the capacities.
inline constexpr unsigned kConfigurationStackEvidence = 8u;

/// The configuration byte of every packet body: bit 0 64-bit pointers, bit 1 big-endian (bit 2,
/// the cause left to the decoder, is never set by this encoder: docs/report-format.md).
inline constexpr unsigned kPacketConfiguration = (sizeof(Frame) == 8 ? 1u : 0u)
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                                                 | 2u
#endif
    ;

/// Appends bytes to a fixed buffer, never at or past `size`, and counts them all: `pos` is the
/// length of everything written so far, whether it fitted or not. The one writer of packet
/// bodies (encode_packet, encode_health_packet, the evidence encoder).
struct ByteWriter {
  std::uint8_t* buffer;
  std::size_t size;
  std::size_t pos;

  void u8(unsigned v) noexcept {
    if (pos < size) buffer[pos] = static_cast<std::uint8_t>(v);
    ++pos;
  }
  /// Unsigned LEB128.
  void uv(std::uint64_t v) noexcept {
    for (; v >= 0x80u; v >>= 7) u8(static_cast<unsigned>(v & 0x7Fu) | 0x80u);
    u8(static_cast<unsigned>(v));
  }
  /// Memory presence byte, then each known value.
  void memory(const MemoryReading& m) noexcept {
    if constexpr (!kMemoryContext) {  // a build without memory context: no value known
      static_cast<void>(m);
      u8(0);
    } else {
      u8(m.valid & ((1u << kMemoryValues) - 1u));
      for (unsigned i = 0; i < kMemoryValues; ++i) {
        if (m.has(static_cast<MemoryValue>(i))) uv(m.value[i]);
      }
    }
  }
  /// The configuration byte and the capacities that head `block`, `watch` and `observation`
  /// bodies: with stack evidence (configuration bit 3), the words a sample carries at most.
  void configuration() noexcept {
    u8(kPacketConfiguration | (kStackWords > 0 ? kConfigurationStackEvidence : 0u));
    u8(kMaxSamples);
    u8(kMaxFrames);
    u8(kTopFrames);
    u8(kMaxStages);
    if constexpr (kStackWords > 0) u8(kStackWords);
  }
  /// A stack part (builds with stack evidence): presence (0 none, 1 registers and words, 3 the
  /// same with the frame pointer), sp, lr, fp, the count, each word's offset gap and value.
  void stack_part(const StackEvidence* stack) noexcept {
    if (stack == nullptr) {
      u8(0);
      return;
    }
    u8(stack->has_fp ? 3u : 1u);
    uv(stack->sp);
    uv(stack->lr);
    if (stack->has_fp) uv(stack->fp);
    u8(stack->count);
    unsigned next = 0;  // the lowest offset the next word may have
    for (unsigned i = 0; i < stack->count; ++i) {
      uv(stack->offset[i] - next);
      uv(stack->value[i]);
      next = stack->offset[i] + 1u;
    }
  }
  /// str: uv (L << 1) | cut, then L bytes (at most Max, 1..63); a null name is length 0.
  template <std::size_t Max = kPacketNameMax>
  void str(const char* s) noexcept {
    static_assert(Max >= 1 && Max <= 63, "a str's length varint (L << 1 | cut) must stay one byte");
    std::size_t length = 0;
    if (s != nullptr) {
      while (length <= Max && s[length] != '\0') ++length;
    }
    const bool cut = length > Max;
    if (cut) length = Max;
    u8(static_cast<unsigned>(length << 1) | (cut ? 1u : 0u));  // uv (L << 1) | cut: one byte
    for (std::size_t i = 0; i < length; ++i) u8(static_cast<unsigned char>(s[i]));
  }
};

}  // namespace detail

}  // namespace loopcanary
