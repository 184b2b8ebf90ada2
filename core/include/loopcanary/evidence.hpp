// SPDX-License-Identifier: MIT
// The evidence stream: a device's watchdog that sends what its observer sees (assembler.hpp) as
// small packets instead of building records, and leaves the records to the host. The host's
// decoder feeds the evidence to the same assembler functions the host-side watchdog runs
// (watch_started, add_sample, assemble), so a decoded record equals the record a
// StaticWatchdog would have built from the same evidence. The device links no assembler, no
// record ring, no record encoder and no formatter (docs/report-format.md, "Evidence packets").
//
//   observer --watch / sample / observation packets--> EvidenceRing (bytes, no-init RAM)
//            --drain()--> PacketSink (UART, semihosting) --> host: loopcanary decode
//
// The ring is also the crash box: declared in the board's no-init section, what it held at a
// reset is sent at the next boot after a `boot` packet that marks it as the previous boot's,
// with the reset cause. No heap, no OS.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/crash_box.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary {

namespace detail {
// configuration, max samples, frames, top frames, stages (and stack words, with stack evidence)
constexpr std::size_t kEvidenceConfigBytes = kStackWords > 0 ? 6 : 5;
constexpr std::size_t kCpuReadingBytes = varint_bytes(64) + 1 + kCpuValues * varint_bytes(64);
constexpr std::size_t kObservationBodyMax =
    kEvidenceConfigBytes + 3 * varint_bytes(16) + varint_bytes(32) +  // rule, tick_hz
    3 * varint_bytes(32) + 4 +                                      // report, dropped counts; phase..watch
    3 * varint_bytes(32) + varint_bytes(64) + varint_bytes(32) +    // seq, begin, end, duration, threshold
    varint_bytes(32) + kPacketNameBytes +                           // delayed-by dispatch and event
    2 * kCpuReadingBytes + 1 + kMemoryValues * varint_bytes(64) +   // CPU readings, memory
    varint_bytes(32) + 3 * kPacketNameBytes +                       // samples missed; qualifier, loop, event
    1 + kMaxStages * (kPacketNameBytes + varint_bytes(32));         // stages
// A sample's stack part: presence, SP, LR, FP, count, then per word its offset gap and value.
constexpr std::size_t kStackPartMax =
    kStackWords > 0 ? 2 + 3 * varint_bytes(kPointerBits) + kStackWords * (varint_bytes(16) + varint_bytes(kPointerBits))
                    : 0;
constexpr std::size_t kSampleBodyMax =
    1 + 2 * varint_bytes(32) + 2 + kMaxFrames * larger(kPacketNameBytes, varint_bytes(kPointerBits)) + kStackPartMax;
}  // namespace detail

/// Largest evidence packet this build's configuration can produce (an observation or a
/// sample), in bytes: the encoding buffer of an EvidenceWatchdog (StaticEvidenceWatchdog
/// provides it).
inline constexpr std::size_t kMaxEvidencePacketBytes =
    kPacketHeaderBytes + detail::larger(detail::kObservationBodyMax, detail::kSampleBodyMax) + kPacketTrailerBytes;

/// Counters of an evidence ring. `dropped` belongs to the ring's memory and survives resets
/// while the ring stays valid; the others describe this boot.
struct EvidenceRingStats {
  std::uint32_t pushed;          ///< packets appended this boot
  std::uint32_t dropped;         ///< packets that did not fit the free space (not appended)
  std::uint32_t sent_bytes;      ///< bytes drain() sent this boot (its `boot` packet included)
  std::uint32_t carried_bytes;   ///< bytes open() found from before the reset (this boot)
  std::uint32_t boxes_discarded; ///< 1 when open() found no valid ring this boot, else 0
  std::uint32_t boot;            ///< this boot's number: boots since the ring was last discarded (1..)
  ResetCause reset_cause;        ///< cause of the reset before this boot, as open() decided it
};

/// "LCev" read as a little-endian word.
inline constexpr std::uint32_t kEvidenceRingMagic = 0x7665434Cu;
/// Version of the ring's memory layout; another value is discarded at open().
inline constexpr std::uint32_t kEvidenceRingLayout = 2;

/// A byte ring of whole evidence packets (capacity-free part of StaticEvidenceRing). Trivial
/// (no constructor): it lives in memory that start-up code neither zeroes nor constructs, and
/// open() makes sense of whatever it holds. One producer (the watchdog's context: push(),
/// set_reset_cause()) and one consumer (drain()); open() at boot before either.
class EvidenceRing {
 public:
  /// Appends one whole packet of `size` bytes, leaving at least `keep_free` bytes free after it.
  /// False, counted in `dropped`, when it does not fit (the ring never overwrites what it has
  /// not sent), and while this boot's `boot` packet waits for the first drain() (see open()).
  /// Producer context.
  bool push(const std::uint8_t* packet, std::size_t size, std::size_t keep_free = 0) noexcept;

  /// Sends every byte waiting, oldest first, straight from the ring's memory: one call of
  /// `sink.write`, two where the waiting bytes wrap past the ring's end (a packet may then be
  /// split between the calls: the stream is self-delimiting). The first drain after a reset
  /// that kept bytes (see open()) sends, before them, a `boot` packet that marks them as the
  /// previous boot's, and after them this boot's `boot` packet when open() found no room for
  /// it. Packets go out as pushed, CRC and all: the host's decoder checks each one, and bytes
  /// damaged in RAM across a reset are warned there with their offset, never decoded.
  /// No buffer, no CRC computed here. A null `sink.write` sends nothing. Returns the bytes sent.
  /// Consumer context.
  std::uint32_t drain(const PacketSink& sink) noexcept;

  /// Records `cause` as the cause of the reset the firmware is about to request (before
  /// SYSRESETREQ, or from a watchdog's early-warning interrupt); the next open() uses it when
  /// the board cannot tell. Producer context.
  void set_reset_cause(ResetCause cause) noexcept;

  /// The counters. Any context (each read once; not a consistent snapshot).
  EvidenceRingStats stats() const noexcept;

  /// Packet bytes the ring holds (StaticEvidenceRing's Bytes). After open(); any context.
  std::uint32_t capacity() const noexcept { return capacity_; }

 protected:
  /// Validates the ring at boot: magic, layout, capacity and header CRC, and the unread span
  /// within the capacity. A ring that fails discards its contents (counted). The bytes kept are
  /// earlier boots' (their packets' own CRCs are checked by the host's decoder); a `boot` packet
  /// of this boot (kind 1, the reset cause, this boot's number, whether the ring was discarded)
  /// is appended after them. When they leave no room for it, the first drain() sends it after
  /// them and push() refuses this boot's packets until then: none goes out ahead of it, or the
  /// host would take it for an earlier boot's. `board_cause`: the board's reset cause
  /// (ResetCause::unknown: the one set_reset_cause() recorded is used).
  CrashBoxStatus open(std::uint8_t* bytes, std::uint32_t capacity, ResetCause board_cause) noexcept;

 private:
  std::uint32_t header_crc() const noexcept;
  // Seals a `boot` packet of `kind` (0: the bytes that follow are the previous boot's; 1: this
  // boot starts) into `packet`; returns its size.
  std::size_t boot_packet(std::uint8_t* packet, unsigned kind) const noexcept;

  // In the ring's memory, kept across resets: guarded by magic, layout, capacity and crc.
  std::uint32_t magic_;
  std::uint32_t layout_;
  std::uint32_t capacity_;
  std::uint32_t crc_;         // CRC-32 of magic, layout and capacity
  std::atomic<std::uint32_t> head_;  // bytes ever appended (mod 2^32), written by the producer
  std::atomic<std::uint32_t> tail_;  // bytes ever consumed, written by the consumer
  std::uint32_t reset_cause_;        // set_reset_cause(), read by the next open()
  std::uint32_t reset_check_;        // ~reset_cause_: a cause is only believed when both agree
  std::atomic<std::uint32_t> dropped_;
  std::uint32_t boots_;  // open() calls since the ring was last discarded: this boot's number
  // This boot.
  std::uint8_t* bytes_;
  std::uint32_t carried_;  // bytes of the previous boot not yet sent (drain() sends all at once)
  std::atomic<std::uint32_t> pushed_;
  std::uint32_t sent_bytes_;
  std::uint32_t carried_bytes_;
  std::uint32_t discarded_;
  ResetCause cause_;
  // 1 from open() to the first drain() when earlier boots' bytes left no room for this boot's
  // `boot` packet (drain() sends it after them); push() refuses packets meanwhile.
  std::atomic<std::uint32_t> boot_unsent_;
};

/// An evidence ring of `Bytes` packet bytes (a power of two, 64..2^30; plus 72 bytes of state
/// on a 32-bit target). A packet takes its length (typically 10..60 bytes a sample, 40..120 an
/// observation; at most kMaxEvidencePacketBytes). Declare it at namespace scope in the board's
/// no-init section (LOOPCANARY_BOARD_NOINIT) to make it the crash box, and call open() first at
/// every boot.
template <std::size_t Bytes>
class StaticEvidenceRing : public EvidenceRing {
  static_assert(Bytes >= 64 && Bytes <= (std::size_t{1} << 30) && (Bytes & (Bytes - 1)) == 0,
                "StaticEvidenceRing: Bytes must be a power of two, 64..2^30");

 public:
  /// EvidenceRing::open for this ring's memory. At boot, before any other call.
  CrashBoxStatus open(ResetCause board_cause) noexcept {
    return EvidenceRing::open(bytes_, static_cast<std::uint32_t>(Bytes), board_cause);
  }

 private:
  std::uint8_t bytes_[Bytes];
};

/// Bytes of an evidence ring of `capacity` bytes that an EvidenceWatchdog's samples leave free
/// for reports: room for two observations of the largest size (a block in progress and its
/// hang), at most half the ring.
constexpr std::size_t evidence_report_reserve(std::size_t capacity) noexcept {
  return 2 * kMaxEvidencePacketBytes < capacity / 2 ? 2 * kMaxEvidencePacketBytes : capacity / 2;
}

/// Called with each report of an evidence watchdog, as the observation its `observation` packet
/// carries (phase, loop, event, timing), from poll(), in watchdog context (on a device often
/// the timer interrupt), after the packet went to the ring (`kept`: false when the ring had no
/// room, counted in EvidenceRingStats::dropped). The place for a firmware to act on a hang:
/// set the ring's reset cause and request a reset, as a hardware watchdog would; the packet is
/// already in the crash box. Must not call back into the watchdog.
using ObservationInterceptor = void (*)(void* context, const Observation& observation, bool kept);

/// A watchdog whose observer sends its evidence to an EvidenceRing as packets instead of
/// assembling records: pop() finds nothing (the host decoder builds the records), and its one
/// interceptor sees each report's observation. A watch's `watch` packet is sent with its first
/// sample or report (and again before the next when the ring refused it: the host cannot place
/// evidence of a watch it has not seen start), so a dispatch that ends before the watchdog arms
/// costs no byte. Samples leave the ring's last bytes to reports (evidence_report_reserve()): a
/// long hang that nothing drains (the loop is stuck) fills the ring with samples up to there,
/// and its block and hang reports still fit; a sample not kept counts as missed in its record.
/// Instantiate StaticEvidenceWatchdog.
class EvidenceWatchdog : public Watchdog {
 public:
  /// Sets the interceptor called with each report (ObservationInterceptor); one per watchdog.
  /// After init(), before polling starts, from the watchdog's context. Errors: not_initialised,
  /// interceptor_null, interceptor_chain_full (one is set already). Hides
  /// Watchdog::add_interceptor, whose records an evidence watchdog never builds.
  Status add_interceptor(ObservationInterceptor function, void* context) noexcept;

 protected:
  constexpr EvidenceWatchdog() noexcept = default;
  ~EvidenceWatchdog() = default;
  Status init(const WatchdogConfig& config, const Hal& hal, const Storage& storage, EvidenceRing& ring,
              std::uint8_t* scratch, bool* announced) noexcept;

 private:
  void announce(std::size_t watch) noexcept;
  static void send_watch(Watchdog& self, std::size_t watch) noexcept;
  static bool send_sample(Watchdog& self, std::size_t watch, const Sample& sample, const StackEvidence* stack) noexcept;
  static bool send_observation(Watchdog& self, const Observation& observation) noexcept;
  // No wait objects; stack evidence in builds with LOOPCANARY_STACK_WORDS > 0.
  static constexpr EvidenceSink kStream{&send_watch, &send_sample, &send_observation, nullptr};

  ObservationInterceptor interceptor_ = nullptr;
  void* interceptor_context_ = nullptr;
  EvidenceRing* ring_ = nullptr;
  std::uint8_t* scratch_ = nullptr;  // kMaxEvidencePacketBytes: the packet being encoded
  bool* announced_ = nullptr;        // per watch: its `watch` packet is in the ring for its dispatch
  std::uint16_t rule_[3] = {};       // running, starved_busy, starved_wait permille
  std::uint32_t sample_reserve_ = 0; // ring bytes a sample leaves free, for reports
};

namespace detail {
template <std::size_t MaxLoops, std::size_t Watches>
struct EvidenceWatchdogStorage {
  WatchdogTrack tracks[MaxLoops] = {};
  Watch watches[Watches] = {};
  std::uint8_t scratch[kMaxEvidencePacketBytes] = {};
  bool announced[Watches] = {};
};
}  // namespace detail

/// An evidence-sending watchdog for up to MaxLoops loops (1..255), watching up to Watches long
/// dispatches at once (1..MaxLoops). No health records, no record ring.
template <std::size_t MaxLoops, std::size_t Watches = MaxLoops>
class StaticEvidenceWatchdog final : private detail::EvidenceWatchdogStorage<MaxLoops, Watches>,
                                     public EvidenceWatchdog {
  static_assert(MaxLoops >= 1 && MaxLoops <= 255, "StaticEvidenceWatchdog: MaxLoops must be 1..255");
  static_assert(Watches >= 1 && Watches <= MaxLoops, "StaticEvidenceWatchdog: Watches must be 1..MaxLoops");
  using Own = detail::EvidenceWatchdogStorage<MaxLoops, Watches>;

 public:
  constexpr StaticEvidenceWatchdog() noexcept = default;

  /// As StaticWatchdog::init, with `ring` (opened) receiving the evidence. Errors as
  /// StaticWatchdog::init; health_ring_missing when config.health_period_us is not 0.
  Status init(const WatchdogConfig& config, const Hal& hal, EvidenceRing& ring) noexcept {
    Storage storage;  // no record ring, no health records: the host assembles them
    storage.tracks = Own::tracks;
    storage.max_loops = MaxLoops;
    storage.watches = Own::watches;
    storage.max_watches = Watches;
    return EvidenceWatchdog::init(config, hal, storage, ring, Own::scratch, Own::announced);
  }
};

}  // namespace loopcanary
