// SPDX-License-Identifier: MIT
// Reading binary captures (docs/report-format.md, "Binary form: `encode_packet`"): packets back
// to back, possibly with garbage between them, decoded into the core's BlockRecord (or
// HealthRecord, for a `health` packet) with storage of their own for the names. The reader follows the specification's "Reading a capture"
// algorithm; every problem is reported with its byte offset and kind (model.hpp's WarningKind),
// never a crash. Memory is bounded whatever the input: one window of 128 KiB (the largest packet
// and a read chunk), and per record storage in proportion to its packet.
//
// Host code for the tool `loopcanary` (docs/tool.md); one thread per CaptureReader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loopcanary/event.hpp"
#include "arm_unwind.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/record.hpp"
#include "model.hpp"

namespace loopcanary::tool {

/// The state of the evidence packets a CaptureReader has read (packet_reader.cpp).
struct EvidenceState;

/// What the decoder unwinds device samples' stack evidence with (docs/tool.md, "Stack
/// evidence"): the firmware's call-frame information, or why there is none.
struct StackUnwind {
  std::shared_ptr<const ArmCfi> cfi;  ///< null: samples keep the PC and LR the device sent
  std::string missing;                ///< when `cfi` is null: why, e.g. "fw.elf: no section .debug_frame"
};

/// What the decoder made of the stack evidence of a record's samples: every sample of its watch
/// that carried some, by outcome (arm_unwind.hpp, ArmUnwindStatus), and why chains end early.
struct UnwindSummary {
  std::uint32_t unwound = 0;     ///< chains to the outermost frame
  std::uint32_t partial = 0;     ///< chains cut short (`reasons` says why)
  std::uint32_t pc_lr_only = 0;  ///< samples left as the device sent them (PC and LR)
  /// Samples per reason a chain ended early (partial, pc_lr_only); at most kMaxReasons distinct,
  /// the rest under kOtherReasons.
  std::map<std::string, std::uint32_t> reasons;
  static constexpr std::size_t kMaxReasons = 8;
  static constexpr const char* kOtherReasons = "(other reasons)";

  bool empty() const noexcept { return unwound + partial + pc_lr_only == 0; }
  /// Counts `samples` samples' outcome (`reason` empty for unwound).
  void add(ArmUnwindStatus status, const std::string& reason, std::uint32_t samples = 1);
};


/// One record decoded from a packet. The name pointers of `record` (qualifier, loop, event and
/// its name, the delaying event, stage names, scope frames) and of `health` (qualifier, loop, the
/// events and their names) point into storage this object owns on the heap, so they stay valid when
/// the object is moved and until it is destroyed or decoded into again. Not copyable (a copy of
/// `record` alone would still point into this object's storage).
class DecodedRecord {
 public:
  DecodedRecord();
  ~DecodedRecord();
  DecodedRecord(DecodedRecord&&) noexcept;
  DecodedRecord& operator=(DecodedRecord&&) noexcept;
  DecodedRecord(const DecodedRecord&) = delete;
  DecodedRecord& operator=(const DecodedRecord&) = delete;

  /// A `health` packet (type 3): `health` holds the record and `record` is unused. Otherwise a
  /// block record (types 1 and 2) in `record`.
  bool is_health = false;
  BlockRecord record;                ///< as the device's watchdog built it (names cut to 31 bytes get "...")
  HealthRecord health;               ///< with is_health: as the device's watchdog built it
  bool previous_boot = false;        ///< a `previous_boot` packet (type 2): kept across a reset
  ResetCause reset_cause = ResetCause::unknown;  ///< with previous_boot
  /// A block packet of version 1 or 2: its top entries hold the innermost frame only, not the
  /// whole stack (the JSON form says so with "top_innermost":true; the culprit then comes from
  /// the kept samples).
  bool top_innermost = false;
  /// How the stack evidence of the record's samples was unwound: an assembled record's (evidence
  /// packets), each sample of its watch that carried some; a block packet's with stack evidence,
  /// the samples of each top entry that had some (unwind_block). Empty when they carried none;
  /// the JSON form's "unwind" member.
  UnwindSummary unwind;
  std::uint64_t offset = 0;          ///< byte offset of the packet's first magic byte in its capture

 private:
  friend bool decode_packet_body(const std::uint8_t* body, std::size_t size, std::uint8_t version, bool previous_boot,
                                 DecodedRecord& out, WarningKind& kind, std::string& what);
  friend void unwind_block(EvidenceState&, DecodedRecord&, WarningKind&, std::string&);
  friend bool decode_evidence(const std::uint8_t*, std::size_t, std::uint8_t, EvidenceState&, DecodedRecord&, bool&,
                              WarningKind&, std::string&, std::string&);
  friend bool decode_health_body(const std::uint8_t* body, std::size_t size, std::uint8_t version,
                                 DecodedRecord& out, WarningKind& kind, std::string& what);
  // Every decoder member above (is_health, previous_boot, reset_cause, top_innermost, unwind) to
  // its value for a new record of that kind, and the storage made when moved from: the one place
  // a decoder starts a record, so nothing of the record decoded before into this object remains.
  void begin(bool is_health_record, bool previous);
  struct Storage;
  std::unique_ptr<Storage> storage_;
};

/// The packet format versions this tool decodes (docs/report-format.md, "Binary form"): version
/// 1 (no stages), 2 (stages, deadline misses, health packets), 3 (whole stacks in the top
/// entries) and 4 (a block's wait objects). A packet of another version is skipped whole.
inline constexpr std::uint8_t kPacketVersionOldest = 1;
inline constexpr std::uint8_t kPacketVersionNewest = 4;
static_assert(kPacketVersion >= kPacketVersionOldest && kPacketVersion <= kPacketVersionNewest,
              "the tool must decode the packet version this build's encoder writes");

/// Decodes the body of a packet of format `version` (kPacketVersionOldest..kPacketVersionNewest;
/// `size` bytes at `body`; type 2 when `previous_boot`) into `out` (its record is reset first;
/// `out.offset` is left to the caller; a record with stack evidence keeps its stack parts for
/// unwind_block). Returns true for a record. Otherwise false with `kind` =
/// WarningKind::unknown_config (a version outside that range, configuration bits this tool does
/// not know, capacities out of the specified ranges, or counts that do not fit this build's
/// kMaxSamples, kMaxFrames, kTopFrames, kMaxStages) or WarningKind::malformed_packet (a varint
/// longer than 10 bytes or over its field's width, the body ending inside a field, bytes after
/// the last sample, a value or string index out of range, counts over the packet's own
/// capacities), and `what` saying which field at which body offset. Never reads outside
/// [body, body + size); allocates in proportion to `size` (the names, and a table entry per name:
/// at most about 40 bytes per body byte), never more.
bool decode_packet_body(const std::uint8_t* body, std::size_t size, std::uint8_t version, bool previous_boot,
                        DecodedRecord& out, WarningKind& kind, std::string& what);

/// Decodes the body of a `health` packet (type 3; docs/report-format.md, "Binary form: a
/// `health` packet") of format `version` into `out` (is_health set, its health record reset
/// first). Returns true for a record; otherwise false with `kind` and `what` as
/// decode_packet_body gives them: WarningKind::unknown_config (a version other than 2,
/// configuration bits this tool does not know, max health events above 32, an event count over
/// this build's LOOPCANARY_HEALTH_EVENTS) or WarningKind::malformed_packet (a bad or cut varint,
/// a histogram count above 32 or buckets not increasing within 0..31, a string count below 2, a
/// string index out of range, an event count over the packet's max health events, bytes after
/// the last event). Never reads outside [body, body + size); allocates in proportion to `size`.
bool decode_health_body(const std::uint8_t* body, std::size_t size, std::uint8_t version, DecodedRecord& out,
                        WarningKind& kind, std::string& what);

/// Unwinds the stack evidence a block packet's record carried (configuration bit 3; after
/// decode_packet_body into `out`) with the state's firmware call-frame information
/// (CaptureReader::set_unwind): each top entry once for all its samples, at every innermost program
/// counter of its range (one unwind must hold for all of them, else the entry keeps its PC and
/// LR, counted pc_lr_only), each kept sample with its entry's words at its own program counter;
/// then merges the entries the chains made equal. Counts the entries' samples by outcome in
/// `out.unwind`; the first partial and the first pc_lr_only outcome of a capture set `kind`
/// (not_unwound) and `warning` with the reason. Does nothing for a record without stack evidence.
void unwind_block(EvidenceState& state, DecodedRecord& out, WarningKind& kind, std::string& warning);

/// A fresh evidence state (no watch started, this boot's), for decode_evidence.
std::shared_ptr<EvidenceState> make_evidence_state();

/// Decodes the body of an evidence packet of `type` (4..7; docs/report-format.md, "Evidence
/// packets") into `state`; for an observation (type 6), assembles its record into `out` and
/// sets `produced`. Returns false with `kind` and `what` as decode_packet_body gives them for a
/// body that does not decode (nothing of it is applied then). A packet that decodes but does not
/// fit the state (a sample or an observation for a watch that has not started; a `boot` packet
/// saying the device discarded its ring) returns true with `warning` saying so (kind
/// orphan_evidence or box_discarded, in `kind`); `warning` is empty otherwise.
bool decode_evidence(const std::uint8_t* body, std::size_t size, std::uint8_t type, EvidenceState& state,
                     DecodedRecord& out, bool& produced, WarningKind& kind, std::string& what, std::string& warning);

/// The record's JSON line, without its newline: for a block record the core's format_json, then,
/// for a previous_boot record, `,"previous_boot":true,"reset_cause":"<cause>"` before the closing
/// brace; for a health record the core's format_health_json (docs/report-format.md). `line` is
/// overwritten (its capacity reused).
void format_record_json(const DecodedRecord& decoded, std::string& line);

/// True when the first bytes of a file (up to 4 KiB of them) say it is a binary capture rather
/// than JSON Lines: the packet magic 0xA5 0x4C occurs before the first '{', or there is no '{'
/// and the magic occurs (docs/tool.md, "Input").
bool looks_like_capture(const std::uint8_t* data, std::size_t size) noexcept;
/// How many first bytes looks_like_capture looks at.
inline constexpr std::size_t kCaptureSniffBytes = 4096;

/// Counts of one or more captures read.
struct CaptureStats {
  std::uint64_t captures = 0;       ///< captures read
  std::uint64_t bytes = 0;          ///< bytes read
  std::uint64_t packets = 0;        ///< whole packets (CRC correct), decoded or not
  std::uint64_t decoded = 0;        ///< packets decoded: into records, or evidence fed to the assembler
  std::uint64_t skipped_bytes = 0;  ///< bytes not part of a decoded packet (every problem's bytes)
  std::uint64_t decoded_bytes = 0;  ///< bytes of the decoded packets (with skipped_bytes: every byte read)
  std::uint64_t evidence = 0;       ///< evidence packets (types 4..7) decoded (also in `decoded`)
};

/// Reads captures: scans for packets, checks them, decodes them. Evidence packets (types 4..7,
/// docs/report-format.md "Evidence packets") are fed to the core's assembler (watch_started,
/// add_sample, assemble) as the host-side watchdog does, and each observation becomes a record
/// equal to the one that watchdog would have built; the state of the watches carries across
/// the captures one reader reads (a device's captures, in order). A sample or observation for a
/// watch that has not started is warned (WarningKind::orphan_evidence; the observation's record
/// is still made, without samples), never a crash. Streams from a byte source with
/// one bounded window (the largest packet plus a 64 KiB read chunk); reuses one DecodedRecord.
class CaptureReader {
 public:
  /// Reads bytes into `to` (at most `size`): the count, 0 at the end, -1 on an error (errno set).
  using Fill = std::function<long(std::uint8_t* to, std::size_t size)>;
  /// Called per decoded record; valid during the call (the record is reused; the callee may
  /// move it away: the reader then decodes into a new one).
  using OnRecord = std::function<void(DecodedRecord& record)>;
  /// Called per problem: its kind, the byte offset in the capture where it starts, and the text
  /// of the warning (without the offset).
  using OnProblem = std::function<void(WarningKind kind, std::uint64_t offset, const std::string& what)>;

  CaptureReader();
  /// Reads one capture to its end. Returns 0, or the errno of a read error (what was read before
  /// it is decoded and reported as if the capture ended there).
  int read(const Fill& fill, const OnRecord& on_record, const OnProblem& on_problem);
  /// Reads a capture held in memory.
  void read(const std::uint8_t* data, std::size_t size, const OnRecord& on_record, const OnProblem& on_problem);

  const CaptureStats& stats() const noexcept { return stats_; }

  /// Unwinds the stack evidence of the samples that carry some with `unwind` (null: not unwound,
  /// each such sample counted pc_lr_only with the reason "no firmware ELF"). Before read().
  void set_unwind(std::shared_ptr<const StackUnwind> unwind);

 private:
  CaptureStats stats_;
  std::vector<std::uint8_t> window_;
  DecodedRecord record_;
  std::shared_ptr<EvidenceState> evidence_;  // the evidence packets' state across packets and captures
};

}  // namespace loopcanary::tool
