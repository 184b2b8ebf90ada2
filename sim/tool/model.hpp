// SPDX-License-Identifier: MIT
// The data model of the host tool `loopcanary` (docs/tool.md) and its reading API: a streaming
// reader of JSON Lines block reports (docs/report-format.md, plus the Linux file sink's "linux"
// extension), the grouping of reports into blocks (one per dispatch) and the culprit rule.
//
// Host code: the whole standard library, exceptions not used for control flow (no function
// here throws on bad input; bad input is a warning, counted). Nothing here is thread-safe: one
// Reader, one BlockGrouper per thread. Memory is bounded: a record is parsed into a reused
// LogRecord, never a tree, and the grouper keeps one open dispatch per loop.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "loopcanary/format.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/record_fields.hpp"

namespace loopcanary::tool {

class DecodedRecord;  // packet_reader.hpp
struct StackUnwind;   // packet_reader.hpp

/// One frame of a sample: a scope name (the firmware's own label, LOOPCANARY_SCOPE) or a program
/// counter with what the record says about it. Innermost first in Sample::frames: the scopes
/// (innermost first), then the PCs (innermost first), as in the record.
struct Frame {
  std::string scope;                 ///< scope name; non-empty exactly for a scope frame
  std::uint64_t pc = 0;              ///< program counter (PC frames)
  std::string function;              ///< symbolised function (exact symbol), "" when unknown
  std::uint64_t function_offset = 0; ///< bytes from the function's start (with `function`)
  std::string nearest_symbol;        ///< nearest symbol below the PC when not inside a sized one (a hint)
  std::uint64_t nearest_offset = 0;  ///< bytes from `nearest_symbol`
  std::string module;                ///< module path (executable or shared object), "" when unknown
  std::string build_id;              ///< module's GNU build-id in hex, "" when unknown
  std::uint64_t module_offset = 0;   ///< PC − module load address (with `module`)
  std::string file;                  ///< source file (symbolize output), "" when unknown
  std::uint32_t line = 0;            ///< source line (with `file`), 0 when unknown

  bool is_scope() const noexcept { return !scope.empty(); }
  bool has_module() const noexcept { return !module.empty(); }
  /// For display and grouping: the function, else the scope name, else `<module base
  /// name>+0x<offset>`, else `0x<pc>` (lower-case hex, as docs/report-format.md prints PCs).
  std::string label() const;
  /// Empties every field, keeping the strings' capacity (the reader reuses frames).
  void clear() noexcept {
    scope.clear();
    pc = 0;
    clear_symbol();
  }
  /// Empties what a symbol entry says of a PC: every field but `scope` and `pc`.
  void clear_symbol() noexcept {
    function.clear();
    function_offset = 0;
    nearest_symbol.clear();
    nearest_offset = 0;
    module.clear();
    build_id.clear();
    module_offset = 0;
    file.clear();
    line = 0;
  }
};

/// One kept sample of a report.
struct Sample {
  std::uint64_t at_us = 0;    ///< µs from the dispatch's start (the record's `at_us`)
  std::vector<Frame> frames;  ///< innermost first: scopes, then PCs
};

/// One entry of a report's stack table (`top`, docs/report-format.md): `count` samples of the
/// dispatch had these scopes and callers, and an innermost program counter from the one in
/// `frames` (the lowest seen) to `leaf_high` (the highest). Every sample of the dispatch is
/// under one entry or in LogRecord::top_other. A record of format version 1 has one frame per
/// entry, the innermost (a scope, else a PC).
struct TopEntry {
  std::vector<Frame> frames;  ///< innermost first: scopes, then PCs (symbolised as the stacks' PCs)
  Frame leaf_high;            ///< a PC frame: the highest innermost PC (pc 0 when the entry has no PC)
  std::uint64_t count = 0;
  /// Index in `frames` of the innermost PC (the first PC frame); frames.size() when none.
  std::size_t leaf() const noexcept;
  /// Whether every innermost PC of the entry is known to lie in one function: the lowest and
  /// the highest are one PC, or both symbolised to one function. When not (one call site
  /// calling several functions, or no symbols), only the callers are known, and the culprit
  /// rule skips the innermost PC.
  bool leaf_known() const noexcept;
};

/// One named stage of a dispatch (the record's `stages`, docs/report-format.md): the part of the
/// dispatch from the stage's mark (Monitor::stage_at) to the next mark, the last one to the
/// record's end.
struct Stage {
  std::string name;       ///< the stage's name; "?" for an empty or null one
  std::uint64_t us = 0;   ///< its time, µs
};

/// The core's report phase and cause (loopcanary/record.hpp), the kinds of wait
/// (loopcanary/wait.hpp), and their spellings in a record (loopcanary::to_string).
using loopcanary::Cause;
using loopcanary::Phase;
using loopcanary::WaitKind;
using loopcanary::to_string;

/// Parses the record's spelling; false (output untouched) for anything else.
bool parse_phase(std::string_view text, Phase& out) noexcept;
bool parse_cause(std::string_view text, Cause& out) noexcept;
bool parse_wait_kind(std::string_view text, WaitKind& out) noexcept;

/// The thread that held a waited-on lock (a wait object's "owner", docs/report-format.md).
struct WaitHolder {
  std::uint64_t tid = 0;            ///< its thread id
  std::string name;                 ///< its thread name, "" when not known
  std::optional<std::string> loop;  ///< the watched loop it runs; std::nullopt when none or not known
  /// Its stack read with the wait, innermost first: scopes, then PCs (symbolised as the stacks'
  /// PCs); empty when the port could not sample it.
  std::vector<Frame> frames;
};

/// One further link of a chain of holders (a `chain` entry): the lock the previous holder waits
/// on, and its holder.
struct WaitChainHop {
  std::uint64_t address = 0;  ///< the lock word
  std::uint64_t tid = 0;      ///< its holder's thread id; 0 when not known
  std::string name;           ///< its holder's name; "" when not known
};

/// One object the loop's thread waited on in a dispatch's samples (a `wait.objects` entry),
/// and how many samples named it. The members the kind sets are as in loopcanary::WaitObject.
struct WaitEntry {
  WaitKind kind = WaitKind::none;
  std::uint64_t samples = 0;         ///< samples whose reading named this object (and holder)
  std::uint64_t address = 0;         ///< the futex word (mutex, condition, futex); 0 otherwise
  std::optional<std::uint64_t> fd;   ///< the descriptor (file, socket, pipe, poll); std::nullopt otherwise
  std::uint64_t value = 0;           ///< sleep: ns; poll: descriptors; syscall: its number
  std::string text;                  ///< the description the kind names, "" when none
  std::optional<WaitHolder> owner;   ///< mutex: its holder; std::nullopt when none or not known
  /// When the holder waits on a lock itself: that lock and its holder, and on (the record's
  /// `chain`, at most loopcanary::kWaitChainMax); `deadlock` when it comes back to a thread in it.
  std::vector<WaitChainHop> chain;
  bool deadlock = false;
};

/// What a dispatch's loop thread waited on (the record's `wait`): objects, most samples first
/// (the first is the main one), and the readings of objects that did not fit. Empty for a
/// record without `wait` (a device build's, or one written before wait objects existed).
struct WaitSummary {
  std::uint64_t other = 0;
  std::vector<WaitEntry> objects;
  bool empty() const noexcept { return other == 0 && objects.empty(); }
};

/// `entry` as the core's formatters take it: the object, its holder's loop (pointing into
/// `entry`, valid while it lives) and its holder's PCs (up to kMaxFrames). Texts are the
/// model's (UTF-8), cut to the core's sizes at a character boundary.
loopcanary::WaitReading wait_reading(const WaitEntry& entry) noexcept;
/// The one description of a wait object (loopcanary::format_wait of wait_reading()), e.g.
/// "mutex 0x7f00a0 held by 'journal' (tid 4242, loop 'journal')".
std::string wait_text(const WaitEntry& entry);
/// `count` of `of` samples (count <= of) as every form prints the share: loopcanary::share_permille
/// (per mille, rounded down) with one decimal, "14.2" for 1 of 7. Totals above 2^32 - 1 are
/// scaled down with the count first.
std::string share_percent(std::uint64_t count, std::uint64_t of);

/// What the cause line adds after the main wait object: "; holder in A <- B <- C[ <- ...]", the
/// holder's innermost loopcanary::kCauseHolderFrames frames by their labels (Frame::label(), so
/// symbolised where the record is), as the core's text form adds them as PCs; "" when the
/// holder's stack was not read.
std::string cause_holder_text(const WaitEntry& entry);
/// "journal (tid 4242)": a holder as a label names it ("(tid 4242)" without a name).
std::string holder_text(const WaitHolder& holder);

// The model's member for each field of the core's lists (loopcanary/record_fields.hpp), by its
// kind: the list's name, the type the kind reads into, its default. A `cpu` member is
// cpu_<name>, a `samples` member samples_<name>.
#define LOOPCANARY_MODEL_TYPE_count std::uint64_t
#define LOOPCANARY_MODEL_TYPE_text std::string
#define LOOPCANARY_MODEL_TYPE_maybe std::optional<std::uint64_t>
#define LOOPCANARY_MODEL_TYPE_phase Phase
#define LOOPCANARY_MODEL_TYPE_cause Cause
#define LOOPCANARY_MODEL_INIT_count = 0
#define LOOPCANARY_MODEL_INIT_text
#define LOOPCANARY_MODEL_INIT_maybe
#define LOOPCANARY_MODEL_INIT_phase = Phase::final
#define LOOPCANARY_MODEL_INIT_cause = Cause::unknown
#define LOOPCANARY_MODEL_MEMBER(name, kind, value, unit) LOOPCANARY_MODEL_TYPE_##kind name LOOPCANARY_MODEL_INIT_##kind;
#define LOOPCANARY_MODEL_CPU_MEMBER(name, kind, value, unit) \
  LOOPCANARY_MODEL_TYPE_##kind cpu_##name LOOPCANARY_MODEL_INIT_##kind;
#define LOOPCANARY_MODEL_SAMPLES_MEMBER(name, kind, value, unit) \
  LOOPCANARY_MODEL_TYPE_##kind samples_##name LOOPCANARY_MODEL_INIT_##kind;

/// One JSON line of a block report as read (docs/report-format.md, JSON Lines form). Fields not
/// listed are ignored (a newer writer may add some). Optional numbers of the record (`null`
/// there) are std::nullopt here.
struct LogRecord {
  // Where the line came from.
  std::string file;               ///< the file as given or found in a directory
  std::uint64_t line = 0;         ///< line number in `file`, from 1; in a binary capture, the packet's byte offset
  bool from_capture = false;      ///< read from a binary capture (docs/tool.md, "Input"): `line` is a byte offset
  std::string source;             ///< the log it belongs to: `file` without its rotation suffix (see log_source())

  /// The record's scalars, named and with their units as the core's list gives them
  /// (LOOPCANARY_BLOCK_FIELDS, loopcanary/record_fields.hpp); 0, "" or the default when absent.
  /// Required (a record without one is skipped with a warning "missing field"): report, phase,
  /// loop, dispatch, duration_us.
  LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_MODEL_MEMBER)
  /// A deadline_miss: the dispatch number and the event name of the dispatch that ran at the
  /// due time (the record's evidence is that dispatch's); 0 and "" when unknown ("delayed_by":
  /// null) and for every other phase.
  std::uint64_t delayed_by_dispatch = 0;
  std::string delayed_by;
  bool hung = false;              ///< flag "hung"
  bool unwatched = false;         ///< flag "unwatched"
  bool end_estimated = false;     ///< flag "end_estimated"
  bool running_at_stop = false;   ///< flag "running_at_stop"
  /// The dispatch's named stages, in the order they started; empty when the record has none
  /// (a record without `stages`, written before stages existed, has none).
  std::vector<Stage> stages;

  /// The `cpu` object's members as cpu_<name> and the `samples` object's as samples_<name>
  /// (LOOPCANARY_BLOCK_CPU_FIELDS, LOOPCANARY_BLOCK_SAMPLE_FIELDS); `null` in the record is
  /// std::nullopt.
  LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_MODEL_CPU_MEMBER)
  LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_MODEL_SAMPLES_MEMBER)
  std::vector<TopEntry> top;      ///< most frequent first
  /// `top` holds every sample by its whole stack (format version 2, packets of version 3): the
  /// culprit counts every sample. False for format version 1 and "top_innermost" records,
  /// whose entries hold the innermost frame only: the culprit comes from the kept samples.
  bool top_stacks = false;
  std::vector<Sample> stacks;     ///< kept samples, oldest first (empty when ReaderOptions::want_stacks is false)
  WaitSummary wait;               ///< what the loop's thread waited on (the record's `wait`)

  // The Linux file sink's extension object "linux".
  bool has_linux = false;
  std::optional<std::int64_t> wall_ms;  ///< "linux.time" (UTC, ISO-8601) as ms since the Unix epoch
  std::string clock;                    ///< "linux.clock": the clock's name, "other" when the ticks are not the process clock's
  // "linux.frames" and, in a device record symbolised by `loopcanary symbolize`, "symbols.frames"
  // are merged into the PC frames of `stacks` and `top` (by PC) and not kept.

  /// Duration in ms (duration_us / 1000, with decimals).
  double duration_ms() const noexcept { return static_cast<double>(duration_us) / 1000.0; }
  /// Resets every field to its default, keeping allocated capacity where it can.
  void clear() noexcept;
  /// Resets every field but where the record came from (file, line, source), its samples
  /// (stacks, top) and its stages, which the reader refills in place. A new field is reset here.
  void clear_fields() noexcept;
};

/// One event type of a health record (its `events` entry): the window's counts and latency
/// percentiles, and the event's configuration. Numbers as the record gives them.
struct EventHealth {
  /// As the core's list names them and gives their units (LOOPCANARY_EVENT_HEALTH_FIELDS); an
  /// empty event name reads "?".
  LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_MODEL_MEMBER)
};

/// One health record as read (a JSON line with "kind":"health", docs/report-format.md "Health
/// records"). Fields not listed are ignored. Required: number, loop, end, window_us (a record
/// without one is skipped with a "missing field" warning).
struct HealthLog {
  // Where the line came from, as in LogRecord.
  std::string file;
  std::uint64_t line = 0;
  bool from_capture = false;
  std::string source;

  /// As the core's list names them and gives their units (LOOPCANARY_HEALTH_FIELDS); idle_us and
  /// idle_permille are std::nullopt when the loop reports no idle time.
  LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_MODEL_MEMBER)
  std::vector<EventHealth> events;    ///< in the record's order
  std::optional<std::int64_t> wall_ms;  ///< "linux.time" as ms since the Unix epoch
  std::string clock;                    ///< "linux.clock"

  /// Resets every field to its default.
  void clear() noexcept;
};

/// `record` (a decoded block packet's) as the model holds it: every field the value its JSON
/// line (format_record_json) gives parse_record, the scalars computed by the same field lists
/// (loopcanary/record_fields.hpp), without the text. `top_innermost`: the packet's top entries
/// hold the innermost frame only (DecodedRecord::top_innermost). Fields are reset first (as
/// LogRecord::clear_fields, the samples refilled in place); file, line and source are left to
/// the caller. `want_stacks` as in ReaderOptions.
void block_log_from(const loopcanary::BlockRecord& record, bool top_innermost, LogRecord& out, bool want_stacks = true);

/// `record` (a decoded health packet's) as the model holds it: every field the value its JSON
/// line (format_health_json) gives parse_health_record, computed by the same field lists
/// (loopcanary/record_fields.hpp), without the text. `out` is cleared first; file, line and
/// source are left to the caller.
void health_log_from(const loopcanary::HealthRecord& record, HealthLog& out);

/// The log a file belongs to: its path with a rotation suffix `.<UTC>-<serial>` removed before
/// `.jsonl` or kCaptureSuffix (`dir/stem.20260101T000000Z-000003.jsonl` → `dir/stem.jsonl`).
/// Rotated files and the current one of a log share it.
std::string log_source(const std::string& file);

/// The file name suffix of binary captures (the Linux file sink's binary form) that a directory's
/// listing includes (docs/tool.md, "Input"); a file given by name is a capture when its first
/// bytes say so, whatever its name.
inline constexpr char kCaptureSuffix[] = ".lcb";

/// What kind of fault a warning reports; each kind is counted apart in ReadStats.
enum class WarningKind : std::uint8_t {
  unreadable,       ///< a path cannot be opened or read (not found, permission, I/O error)
  torn_tail,        ///< the file ends inside a line (no newline), or a capture inside a packet: the writer was stopped mid-record
  malformed_json,   ///< the line is not one JSON object (garbage, truncated, bad escape, trailing bytes)
  too_deep,         ///< nesting deeper than kMaxJsonDepth
  too_long,         ///< the line is longer than ReaderOptions::max_line_bytes (skipped, not buffered)
  wrong_type,       ///< a known field has the wrong JSON type or an out-of-range value
  missing_field,    ///< a required field is absent
  unknown_version,  ///< "format_version" is present and not one this reader knows; a packet of another format version
  // Binary captures (packet_reader.hpp); each names the byte offset where it starts.
  garbage,          ///< a run of bytes between packets that is no packet
  crc_mismatch,     ///< a magic pair whose packet fails its CRC (damaged, a byte lost, or garbage)
  unknown_type,     ///< a whole packet of a type this reader does not know (skipped)
  unknown_config,   ///< a packet of a configuration this reader does not know or whose counts do not fit this build
  malformed_packet, ///< a whole packet whose body does not decode (bad varint, cut field, bad index, trailing bytes)
  unknown_kind,     ///< a line whose "kind" is not one this reader knows ("health"; none: a block record)
  orphan_evidence,  ///< an evidence packet for a watch that has not started (its watch packet lost or dropped)
  box_discarded,    ///< a device found its evidence ring (crash box) damaged at boot and discarded it
  not_unwound,      ///< device samples' stack evidence left partial or as PC and LR (why: no ELF, no CFI, missing words)
  count_            ///< number of kinds (not a kind)
};
constexpr std::size_t kWarningKinds = static_cast<std::size_t>(WarningKind::count_);
/// A short name for summaries: "unreadable", "torn tail", "malformed JSON", "too deep",
/// "too long", "wrong type", "missing field", "unknown format version", "garbage",
/// "CRC mismatch", "unknown packet type", "unknown configuration", "malformed packet",
/// "unknown record kind", "evidence out of order", "crash box discarded", "stacks not unwound".
const char* to_string(WarningKind kind) noexcept;

/// The format version this reader reads: the one the core writes (kJsonFormatVersion,
/// loopcanary/format.hpp). A record without "format_version" (written before the field existed)
/// is version 1. A record whose "format_version" is another number is skipped with an
/// unknown_version warning.
constexpr std::uint64_t kFormatVersion = loopcanary::kJsonFormatVersion;
/// The oldest JSON format version the reader reads (1: `top` entries hold one frame).
constexpr std::uint64_t kFormatVersionOldest = 1;
/// JSON nesting limit (objects and arrays); deeper lines are skipped (too_deep).
constexpr int kMaxJsonDepth = 64;

/// Counters of one or more reads, for the summary.
struct ReadStats {
  std::uint64_t files = 0;         ///< files opened
  std::uint64_t bytes = 0;         ///< bytes read
  std::uint64_t lines = 0;         ///< lines seen (a torn tail counts as one)
  std::uint64_t records = 0;       ///< well-formed records passed to the callbacks (block and health records)
  std::uint64_t health_records = 0;  ///< of `records`: health records
  std::uint64_t captures = 0;      ///< files read as binary captures (also in `files`)
  std::uint64_t packets = 0;       ///< packets of the captures decoded: into records, or evidence packets
  std::uint64_t skipped_bytes = 0; ///< bytes of the captures not part of a decoded packet (each in a warning)
  std::array<std::uint64_t, kWarningKinds> warnings{};  ///< by WarningKind
  std::uint64_t warnings_total() const noexcept;
  std::uint64_t warnings_of(WarningKind kind) const noexcept { return warnings[static_cast<std::size_t>(kind)]; }
};

struct ReaderOptions {
  /// Longest line accepted, bytes (newline excluded); longer ones are skipped with a too_long
  /// warning while read in fixed-size chunks (never buffered whole). Range 1 KiB .. 1 GiB.
  std::size_t max_line_bytes = std::size_t{1} << 20;
  /// false: stacks are validated but not stored (LogRecord::stacks stays empty); faster.
  bool want_stacks = true;
  /// decode --elf: unwinds the stack evidence of device samples in binary captures
  /// (packet_reader.hpp, StackUnwind); null: not unwound.
  std::shared_ptr<const StackUnwind> unwind;
  /// Warnings printed per kind and per file; further ones are counted only, and one line says
  /// so. 0: no limit.
  std::uint32_t max_printed_per_kind = 20;
};

/// Reads JSON Lines block reports from files and directories, streaming: memory does not grow
/// with the input (one line buffer of at most max_line_bytes plus a reused LogRecord). Every
/// fault is a warning `<file>:<line>: <what>` on the warning stream and a count in stats();
/// nothing throws. Calls from one thread.
class Reader {
 public:
  /// Called once per well-formed record; the reference is valid during the call only (the
  /// record is reused). The callee may modify the record or swap its contents with another
  /// LogRecord (BlockGrouper::take does): the reader resets every field before the next line
  /// and reuses whatever storage it then holds.
  using Callback = std::function<void(LogRecord&)>;

  /// Called once per well-formed health record ("kind":"health"), as Callback is per block
  /// record; valid during the call only (the record is reused).
  using HealthCallback = std::function<void(HealthLog&)>;

  explicit Reader(std::ostream& warnings, ReaderOptions options = {});

  /// Where health records go from now on (none set: they are counted in stats() and dropped).
  /// Health records never reach the block Callback.
  void set_health_callback(HealthCallback on_health) { on_health_ = std::move(on_health); }

  /// A file: read it. A directory: read its *.jsonl files (see list_logs), not recursing. Returns
  /// false when the path cannot be read at all (with an unreadable warning).
  bool read_path(const std::string& path, const Callback& on_record);
  /// Reads one file (any name). false when it cannot be opened (with an unreadable warning).
  bool read_file(const std::string& path, const Callback& on_record);
  /// Reads lines from a stream already open; `name` names it in warnings and in LogRecord::file.
  /// A file or stream whose first bytes say it is a binary capture (looks_like_capture in
  /// packet_reader.hpp) is read as one: each decoded packet's record goes into the model
  /// directly (block_log_from, health_log_from), as its JSON line would read; each problem is a
  /// warning `<file>: offset N: <what>`.
  void read_stream(std::istream& in, const std::string& name, const Callback& on_record);

  const ReadStats& stats() const noexcept { return stats_; }
  /// During the callback: the text of the record's line (blanks around it removed), from which
  /// the record was parsed; for a packet, the JSON line format_record_json makes of it (made on
  /// the first call: a decoded packet goes into the model without it).
  std::string_view current_line();

  /// The *.jsonl files and binary captures (kCaptureSuffix) of a directory in reading order: per
  /// log (stem), the rotated files `<stem>.<UTC>-<serial>.jsonl` by serial, oldest first, then the
  /// current `<stem>.jsonl`; logs by stem name. A stem's captures (`.lcb`, rotated the same way)
  /// are listed only when it has no .jsonl file: the file sink writes the same records to both,
  /// with more in the JSON. Full paths. Empty when the directory cannot be listed.
  static std::vector<std::string> list_logs(const std::string& directory);

 private:
  // Reads bytes: returns the count, 0 at the end, -1 on an error (errno set).
  using Fill = std::function<long(char* to, std::size_t size)>;
  void read_any(const std::string& name, const Fill& fill, const Callback& on_record);
  void read_lines(const std::string& name, const Fill& fill, const Callback& on_record);
  void read_capture(const std::string& name, const Fill& fill, const Callback& on_record);
  // Parses one line into record_ and passes it on, or warns (file and line: the caller's).
  // Count the record in record_ or health_ and pass it on (file and line: the caller's).
  void deliver_block(const std::string& name, const std::string& source, std::uint64_t line, bool from_capture,
                     const Callback& on_record);
  void deliver_health(const std::string& name, const std::string& source, std::uint64_t line, bool from_capture);
  void take_line(const std::string& name, const std::string& source, std::uint64_t line, bool from_capture,
                 const char* data, std::size_t length, const Callback& on_record);
  void warn(const std::string& file, std::uint64_t line, WarningKind kind, const std::string& what);
  std::ostream& warnings_;
  ReaderOptions options_;
  ReadStats stats_;
  std::array<std::uint32_t, kWarningKinds> printed_{};  // in the current file
  LogRecord record_;
  std::string buffer_;
  const DecodedRecord* packet_ = nullptr;  // during a callback on a decoded packet's record
  std::string packet_line_;  // the JSON line of a decoded packet
  HealthCallback on_health_;
  HealthLog health_;
  std::string_view current_line_;
  std::string what_;
};

/// Parses one line (without its newline) into `out` (cleared first; `out.file`, `line` and
/// `source` are left to the caller). Returns true for a record; false with `kind` and `what`
/// (the warning text, without file:line) otherwise. `want_stacks` as in ReaderOptions.
/// A line with a "kind" member is not a block record: false with WarningKind::unknown_kind
/// (use parse_line for lines of every kind).
bool parse_record(const char* data, std::size_t length, LogRecord& out, WarningKind& kind, std::string& what,
                  bool want_stacks = true);

/// Parses a health record line ("kind":"health") into `out` (cleared first; file, line and
/// source left to the caller). false with `kind` and `what` as parse_record gives them (a line
/// whose "kind" is not "health": unknown_kind).
bool parse_health_record(const char* data, std::size_t length, HealthLog& out, WarningKind& kind, std::string& what);

/// What parse_line found on a line.
enum class LineKind : std::uint8_t { block, health };
/// Parses a line of any kind: a block record (no "kind" member) into `block`, a health record
/// into `health`, telling which in `which`. false with `kind` and `what` otherwise (an unknown
/// "kind" value: unknown_kind).
bool parse_line(const char* data, std::size_t length, LogRecord& block, HealthLog& health, LineKind& which,
                WarningKind& kind, std::string& what, bool want_stacks = true);

/// What counts as the user's own code (BlockCanary's concern packages) and which culprits to
/// leave out (its white list). A prefix matches a frame when the frame's module path, module base
/// name, function name or scope name starts with it.
struct CulpritRules {
  std::vector<std::string> concern;  ///< empty: the default rule (is_runtime_frame)
  std::vector<std::string> ignore;   ///< blocks whose culprit frame matches one are left out
};

/// True when a prefix of `prefixes` matches the frame (see CulpritRules).
bool frame_matches(const Frame& frame, const std::vector<std::string>& prefixes);

/// The default rule's "not the user's code": a frame in libc, libm, libstdc++, libgcc_s, the
/// dynamic loader (ld-linux*, ld.so), the vDSO, or a function of loopcanary itself or of the
/// simulator runtime (names starting with `loopcanary::`, which covers `loopcanary::simrt::`),
/// or of the C++ library (`std::`, `__cxa`, `__gnu_cxx::`). Scope frames are user code (the
/// firmware names them). A PC with neither module nor function is user code (nothing says
/// otherwise; device records are like that).
bool is_runtime_frame(const Frame& frame);

/// Index in `sample.frames` of its culprit: with concern prefixes, the first frame matching one;
/// without, the first frame that is not a runtime frame. std::nullopt when no frame qualifies.
std::optional<std::size_t> sample_culprit(const Sample& sample, const CulpritRules& rules);

/// A block's culprit: the most frequent culprit (by Frame::label()) of every sample of the
/// dispatch, by its representative report's stack table (docs/tool.md, "Culprit"), with that
/// share; ties go to the more frequent stack. A record of format version 1 has no stack table:
/// its kept samples then (ties: the oldest sample).
struct Culprit {
  std::string label;          ///< Frame::label() of the culprit; "" when none (no samples, or none qualifies)
  Frame frame;                ///< the culprit frame (first occurrence)
  std::uint64_t samples = 0;  ///< samples whose culprit it is
  std::uint64_t of = 0;       ///< samples counted: every sample of the dispatch, or the kept ones (all_samples false)
  bool all_samples = false;   ///< counted over every sample of the dispatch (the stack table)
  bool known() const noexcept { return !label.empty(); }
  /// samples / of in per mille, rounded down, as every form prints it (share_percent); 0 when of == 0.
  std::uint32_t share_permille() const noexcept;
};
Culprit block_culprit(const LogRecord& record, const CulpritRules& rules);

/// One stack of a record and how many samples had it (record_stacks()).
struct CountedStack {
  Sample stack;                ///< its frames, innermost first (at_us 0)
  std::uint64_t samples = 0;
};

/// Name of the one frame of the stack that stands for the samples of top_other.
inline constexpr const char* kOtherStacks = "(other stacks)";

/// A record's stacks with their sample counts, as the exports draw them (flame graphs, folded,
/// pprof): with a stack table (LogRecord::top_stacks), every sample of the dispatch: each
/// entry's frames (without the innermost PC when it is not known: TopEntry::leaf_known) with its
/// count, and the samples of top_other as one stack of the scope frame kOtherStacks; else the
/// kept samples, one each. Their counts add up to Culprit::of of block_culprit().
std::vector<CountedStack> record_stacks(const LogRecord& record);

/// The delaying culprit of a deadline miss (a deadline_miss record carries the evidence of the
/// dispatch that ran at the due time): block_culprit() of the record, else its most frequent top
/// frame (a record whose samples were not kept), else unknown.
Culprit deadline_culprit(const LogRecord& record, const CulpritRules& rules);

/// One dispatch that was reported: its reports merged.
struct Block {
  /// Block ID (docs/tool.md): 12 lower-case hex digits, FNV-1a 64 of qualifier, loop,
  /// loop_index, dispatch and start, folded to 48 bits. Identical runs of the same firmware
  /// give the same ID (show prints every block with it, with its file).
  std::string id;
  /// The representative report: the final one if there is one, else the latest (hang over
  /// in_progress).
  LogRecord record;
  std::uint32_t reports = 0;   ///< reports merged (1 .. 3 for a well-formed log)
  bool has_final = false;      ///< one of them is the final report
  bool hung = false;           ///< a hang report, or the hung flag on any report
  Culprit culprit;             ///< of `record`, under the grouper's rules
  std::uint64_t first_line = 0;  ///< line of the first report in its file
  std::string first_file;        ///< file of the first report
};

/// The block ID of a record's dispatch (see Block::id).
std::string block_id(const LogRecord& record);

/// Turns a stream of records into Blocks. Deadline-miss records (Phase::deadline_miss) are about
/// a late dispatch, not a block: take() and add() ignore them (read_blocks passes them on apart). The reports of one dispatch (same source, qualifier,
/// loop, loop_index, dispatch and start) become one Block, whatever mix of in_progress, hang
/// and final they are. A Block is emitted when its final report arrives, when a later dispatch
/// (or an earlier report number: a restarted writer) of its loop arrives, or at finish().
/// Memory: one open Block per (source, qualifier, loop, loop_index).
class BlockGrouper {
 public:
  using Callback = std::function<void(const Block&)>;
  BlockGrouper(CulpritRules rules, Callback on_block);
  /// Feeds one record (from Reader's callback).
  void add(const LogRecord& record);
  /// As add(), without copying: takes the record's contents and leaves it holding the storage
  /// of another record (unspecified fields, to be reset by the caller: Reader's callback may
  /// pass its record here).
  void take(LogRecord& record);
  /// Emits every open Block (end of input). The grouper can be fed again afterwards.
  void finish();
  std::uint64_t blocks() const noexcept { return blocks_; }
  /// Reports whose dispatch was already emitted (a report after the final one, or out of
  /// order): emitted as a Block of their own and counted here.
  std::uint64_t out_of_order() const noexcept { return out_of_order_; }
  const CulpritRules& rules() const noexcept { return rules_; }

 private:
  // Per (source, qualifier, loop, loop_index), looked up without copies through KeyView: the
  // open block, if any, and the (dispatch, start) of the last one emitted.
  using Key = std::tuple<std::string, std::string, std::string, std::uint64_t>;
  using KeyView = std::tuple<std::string_view, std::string_view, std::string_view, std::uint64_t>;
  static KeyView key_of(const LogRecord& r) noexcept { return KeyView{r.source, r.qualifier, r.loop, r.loop_index}; }
  struct Loop {
    std::unique_ptr<Block> open;
    bool emitted = false;
    std::uint64_t last_dispatch = 0;
    std::uint64_t last_start = 0;
  };
  void emit(Block& block);
  void close(Loop& loop);  // emits the open block and keeps it (its storage) in spare_blocks_
  CulpritRules rules_;
  Callback on_block_;
  std::map<Key, Loop, std::less<>> loops_;
  Block single_;  // a block of one final report, emitted at once (its storage reused)
  static constexpr std::size_t kSpareBlocks = 16;
  std::vector<std::unique_ptr<Block>> spare_blocks_;  // closed blocks, for the next open ones
  std::uint64_t blocks_ = 0;
  std::uint64_t out_of_order_ = 0;
};

/// Which blocks a command keeps (report, show, export). Every set criterion must hold.
struct Filter {
  std::optional<std::int64_t> since_ms;  ///< wall time ≥ (ms since the epoch); blocks without wall time fail
  std::optional<std::int64_t> until_ms;  ///< wall time < (ms since the epoch); blocks without wall time fail
  std::vector<std::string> qualifiers;   ///< any of them, exactly; empty: all
  std::vector<std::string> events;       ///< any of them, exactly; empty: all
  std::vector<Cause> causes;             ///< any of them; empty: all
  std::vector<std::string> loops;        ///< loop names, any of them, exactly; empty: all
  std::uint64_t min_us = 0;              ///< duration ≥ (µs)
  /// true when the block passes (the ignore rule is not part of the filter; see read_blocks).
  bool accepts(const Block& block) const;
  /// The same test on one record (a deadline miss: its lateness is its duration, its cause
  /// that of the dispatch that delayed it).
  bool accepts(const LogRecord& record) const;
  /// For a health record: wall time, qualifier and loop (the criteria that apply to a loop's
  /// window; events, causes and min_us do not).
  bool accepts(const HealthLog& record) const;
};

/// Why blocks were left out, for the summary.
struct BlockStats {
  std::uint64_t blocks = 0;        ///< grouped
  std::uint64_t kept = 0;          ///< passed the filter and the ignore rule
  std::uint64_t filtered = 0;      ///< failed the filter
  std::uint64_t ignored = 0;       ///< culprit matched an --ignore prefix
  std::uint64_t no_wall_time = 0;  ///< failed --since/--until for lack of wall time (also in filtered)
  std::uint64_t out_of_order = 0;  ///< BlockGrouper::out_of_order()
  std::uint64_t deadline_misses = 0;       ///< deadline-miss records read (not blocks)
  std::uint64_t deadline_misses_kept = 0;  ///< of them, passed the filter and the ignore rule (on the delaying culprit)
  std::uint64_t health_records = 0;        ///< health records read
  std::uint64_t health_kept = 0;           ///< of them, passed the filter
};

/// Where read_blocks sends the records that are not reports of a block; either may be empty.
struct OtherRecords {
  std::function<void(const LogRecord&)> on_deadline_miss;  ///< deadline-miss records the filter keeps
  std::function<void(const HealthLog&)> on_health;         ///< health records the filter keeps
};

/// The pipeline every command shares: reads `paths` (files or directories) with `reader`,
/// groups blocks under `rules`, drops those `filter` rejects and those whose culprit matches
/// rules.ignore, and calls `on_block` for the others, in input order of their completion.
/// Deadline-miss records and health records go to `others` (when the filter keeps them, and for a
/// deadline miss when its delaying culprit, deadline_culprit(), matches no rules.ignore prefix),
/// never into blocks.
BlockStats read_blocks(Reader& reader, const std::vector<std::string>& paths, const CulpritRules& rules,
                       const Filter& filter, const std::function<void(const Block&)>& on_block,
                       const OtherRecords& others = {});

/// Prints the reading summary, one line: `read F files, L lines, R records; [C captures: P packets
/// decoded, S bytes skipped; ]W warnings (K1 N1, ...)` and, when blocks is given, the block counts.
void print_summary(std::ostream& out, const ReadStats& stats, const BlockStats* blocks = nullptr);

/// Parses an ISO-8601 UTC time `YYYY-MM-DD[THH:MM[:SS[.fff]]][Z]` (also with a space for T) into
/// ms since the Unix epoch. false for anything else.
bool parse_utc_time(std::string_view text, std::int64_t& ms) noexcept;
/// Formats ms since the epoch as `YYYY-MM-DDTHH:MM:SS.fffZ`.
std::string format_utc_time(std::int64_t ms);

// ---- JSON output (report --format json, the exports) --------------------------------------

/// Writes `text` as a JSON string (quotes included). Escapes '"', '\\' and control characters;
/// valid UTF-8 sequences are copied, each invalid byte becomes U+FFFD, so the output is always
/// valid JSON. `html_safe`: also '<', '>', '&' as \u003c, \u003e, \u0026, so the string can sit
/// inside an HTML <script> element ("</script>" cannot appear).
void write_json_string(std::ostream& out, const std::string& text, bool html_safe = false);
/// The same as a std::string.
std::string json_string(const std::string& text);
/// A name of a core record (NUL-terminated bytes) as the model holds it: what a JSON reader
/// reads from the core's format_json of it (UTF-8 as it is, each byte that is not part of a
/// well-formed sequence as U+FFFD: loopcanary::utf8_sequence).
std::string name_text(const char* bytes);

}  // namespace loopcanary::tool
