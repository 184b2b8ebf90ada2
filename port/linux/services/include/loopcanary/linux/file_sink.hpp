// SPDX-License-Identifier: MIT
// File sink: a log directory with one JSON object per record (<stem>.jsonl), a human text
// log in the spirit of BlockCanary's (<stem>.log) and, when enabled, the compact binary form:
// one encode_packet() packet per record, back to back (<stem>.lcb; docs/report-format.md).
// Health records (write_health, health_interceptor) go to the same files, in the same three
// forms (format_health_json with the "linux" time and clock, format_health_text, a `health`
// packet), under the same rotation, retention and whole-or-nothing rules.
//
// Bounds: a file is rotated before a record would take it past max_file_bytes (renamed to
// <stem>.<UTC time>-<serial>.jsonl|.log|.lcb; the serial goes on from the highest one in the
// directory, across runs). At most max_files files per kind are in the directory at every
// instant (the current one included; the oldest rotated file is removed before a new current
// file is created) and rotated files older than max_age_s are removed, at open, at each
// rotation and hourly. "Oldest" is by serial, so a restart within the same second or a wall
// clock set back does not make retention remove newer records first.
//
// Files that vanish: at most once per check_files_ms (default one second), before every
// rotation, on check() and at close(), the sink checks that its directory and current files
// are still where it opened them (link counts and identities: fstat, fstatat, stat). A file or
// directory found deleted, moved or replaced is reported once (file_vanished or
// directory_vanished, on_error, errors + 1), recreated, and writing goes on. When a file was
// deleted, the records written since the previous check went with it: they move from
// records_written to records_failed and are counted in records_lost (an upper bound: some of
// them may have been on disk before the deletion; records older than the previous check are
// not counted). docs/reliability.md states the details.
//
// Whole or nothing: each record is one write(2) on an O_APPEND descriptor. A short write (disk
// full) is cut back with ftruncate, so a record is on disk whole or not at all; if even that
// fails, the torn fragment stays on a line of its own (counted in fragments_left), and
// read_log() skips it with a warning naming file and line (in a .lcb file it stays as it is: a
// reader of packets skips it by their magic and CRC). A current file found at open() ending
// inside a record (the process was killed or power failed mid-write) is rotated, so the torn
// record stays at the end of a file, where readers report a torn tail, and never lies between
// whole records. What is on the storage device after a power loss is what the kernel had
// written back: with `sync` every record counted written, without it an unknown, uncounted tail.
//
// Faults (directory missing or unwritable, disk full, rotation impossible) never stop
// monitoring: the record stays in the watchdog's RAM ring (the sink is an interceptor and
// takes nothing out of it), status() says what failed and on which file (a path too long for
// the message keeps its end behind a leading "…"), on_error is called, and a closed sink
// retries opening at most once per retry_open_ms (default one second).
//
// Threads: write() (the interceptor) runs on the watchdog thread; check(), close() and status()
// on any thread. The sink allocates its buffers (and a copy of the directory path, any length)
// at open(), lists the directory into a vector when it cleans up (at open, each rotation and
// hourly), reads the module list again for a program counter in no module it knows, and, with
// symbol_names, loads a module's symbol table when first needed and demangles every function
// name it writes. Otherwise writing a record allocates nothing (docs/reliability.md).
//
// Paths: every file is opened relative to the directory's descriptor with O_NOFOLLOW, and the
// qualifier is reduced to [A-Za-z0-9._-] with no leading dot, so neither it nor a planted
// symlink can steer a write outside the directory. Files are created 0600, the directory 0700.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>

#include "loopcanary/format.hpp"
#include "loopcanary/linux/symbolizer.hpp"
#include "loopcanary/record.hpp"

namespace loopcanary::port_linux {


enum class SinkError : std::uint8_t {
  none = 0,
  // FileSinkConfig fields (open() refuses, nothing is created)
  directory_missing,         ///< FileSinkConfig::directory is null or empty
  prefix_invalid,            ///< file_prefix is empty, longer than 24, starts with '.', or has a
                             ///< character outside [A-Za-z0-9._-]
  max_file_bytes_too_small,  ///< max_file_bytes is below 4096
  max_files_zero,            ///< max_files is 0
  no_output,                 ///< json, text and binary are all off
  // Run-time faults (the sink keeps the error in status() and retries)
  directory_not_found,       ///< the directory does not exist and create_directory is off
  directory_create_failed,   ///< mkdir failed (parent missing, read-only, permission)
  directory_open_failed,     ///< the path cannot be opened as a directory
  file_open_failed,          ///< a log file cannot be created or opened
  write_failed,              ///< write(2) failed (errno)
  disk_full,                 ///< the write hit ENOSPC, EDQUOT or EFBIG
  rotate_failed,             ///< the file is at its size limit and cannot be renamed
  cleanup_failed,            ///< listing or removing old files failed (writing goes on)
  record_too_large,          ///< the formatted record exceeds max_record_bytes
  not_open,                  ///< write() before a successful open(), or after close()
  file_vanished,             ///< the current file was deleted, moved or replaced (a new one is opened)
  directory_vanished,        ///< the directory was deleted, moved or replaced (it is recreated)
  sync_failed,               ///< FileSinkConfig::sync: fdatasync of a file or fsync of the directory failed
};

/// "directory_not_found", ... Never null.
const char* name(SinkError error) noexcept;

/// What the sink has done and the last thing that went wrong.
struct SinkStatus {
  bool open = false;                 ///< the directory and the current files are open
  bool healthy = false;              ///< open, and the last write succeeded
  SinkError last_error = SinkError::none;
  int last_errno = 0;
  char message[640] = {};            ///< the last error in words, naming the file; "" when none
  std::uint64_t records_written = 0; ///< records written to every enabled log (and not lost since)
  std::uint64_t health_written = 0;  ///< of records_written: health records
  std::uint64_t records_failed = 0;  ///< records that missed at least one log, lost ones included
  std::uint64_t records_lost = 0;    ///< of records_failed: written, then found to have gone with a
                                     ///< deleted file (those written since the check before it)
  /// Of records_written (FileSinkConfig::sync): records in the files whose fdatasync failed, so
  /// they may not survive a power loss.
  std::uint64_t records_unsynced = 0;
  /// Short writes whose ftruncate failed too: the torn fragment of the record stays in the file
  /// (the record itself counts in records_failed; readers skip the fragment with a warning).
  std::uint32_t fragments_left = 0;
  std::uint64_t bytes_written = 0;
  std::uint32_t rotations = 0;
  std::uint32_t removed_by_count = 0;
  std::uint32_t removed_by_age = 0;
  std::uint32_t errors = 0;          ///< error events (each also passed to on_error)
};

struct FileSinkConfig {
  /// The log directory. Required.
  const char* directory = nullptr;
  /// Create the directory (one level, mode 0700) when it is missing.
  bool create_directory = true;
  /// File name prefix: 1..24 characters of [A-Za-z0-9._-], not starting with '.'.
  const char* file_prefix = "loopcanary";
  /// Added to the file names as "-<qualifier>" after reduction to [A-Za-z0-9._-] (other
  /// characters become '_', a leading '.' too). Usually WatchdogConfig::qualifier. May be null.
  const char* qualifier = nullptr;
  /// Rotate before a record would take a file past this size. >= 4096.
  std::uint32_t max_file_bytes = 1u << 20;
  /// Files kept per kind, the current one included. >= 1.
  std::uint16_t max_files = 8;
  /// Rotated files older than this are removed (BlockCanary: 2 days). 0: no age limit.
  std::uint32_t max_age_s = 2u * 24u * 3600u;
  /// Largest formatted record (each form); larger ones fail with record_too_large.
  std::uint32_t max_record_bytes = 64u * 1024u;
  bool json = true;   ///< write <stem>.jsonl
  bool text = true;   ///< write <stem>.log
  /// Write <stem>.lcb: encode_packet() packets back to back, read by `loopcanary decode`.
  /// Program counters are raw (no module, offset or function names) and there is no wall time.
  bool binary = false;
  /// While the directory or the files cannot be opened, retry at most this often (ms).
  std::uint32_t retry_open_ms = 1000;
  /// While open, check at most this often (ms), on the next record, that the directory and the
  /// current files are still in place (also before every rotation). 0: before every record.
  /// A deletion is found at most this long (plus the time to the next record) after it happens.
  std::uint32_t check_files_ms = 1000;
  /// Power loss: fdatasync(2) each file after every record written to it, and fsync(2) the
  /// directory after a file is created or renamed in it, so a record counted in records_written
  /// is on the storage device (as far as the device honours a flush) when write() returns.
  /// Costs a device flush per record and log (docs/benchmarks.md, "File sink"). A failed sync is
  /// reported (sync_failed, on_error) and the record counted in records_unsynced. Off (default):
  /// records still in the page cache when the machine loses power are lost, uncounted.
  bool sync = false;
  /// Function names next to module + offset (loads symbol tables on the first record). Each
  /// name is demangled, which allocates on the writing thread (the watchdog's, for the
  /// interceptor); off, records keep module, offset and build-id for the tool to name.
  bool symbol_names = true;
  /// Called after every failed record or open and when a check finds a file or the directory
  /// gone, on the thread that wrote (or called check() or close(), the destructor included),
  /// outside the sink's lock (it may call status()). May be null; its context must outlive the
  /// sink.
  void (*on_error)(void* context, const SinkStatus& status) = nullptr;
  void* on_error_context = nullptr;
  /// Fault-injection seam for tests: used instead of write(2) when not null.
  ssize_t (*fake_write)(int fd, const void* data, std::size_t size) = nullptr;
  /// Fault-injection seam for tests: used instead of ftruncate(2) (cutting a short write back)
  /// when not null. Returns 0 or -1 with errno set, as ftruncate does.
  int (*fake_ftruncate)(int fd, off_t length) = nullptr;
  /// Fault-injection seam for tests: used instead of fdatasync(2) on a file and fsync(2) on the
  /// directory (sync) when not null. `directory` tells which. Returns 0 or -1 with errno set.
  int (*fake_sync)(int fd, bool directory) = nullptr;
};

/// The sink. Use it as a watchdog interceptor (add_interceptor(&FileSink::interceptor, &sink))
/// or call write() from the thread that pops records.
class FileSink {
 public:
  FileSink() noexcept;
  ~FileSink();
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  /// Validates `config` (a config error is returned and nothing happens) and opens the
  /// directory and the current files. A run-time fault (directory missing, unwritable) is
  /// returned too, but the sink stays configured and retries on later writes.
  SinkError open(const FileSinkConfig& config) noexcept;

  /// Checks now that the directory and the current files are still in place (write() does so
  /// itself every check_files_ms and before a rotation). Something gone is reported (status(),
  /// on_error), the records it took are counted, and the directory and files are opened or
  /// created again. True when everything was in place; false when something was gone or the
  /// sink is not open. Any thread.
  bool check() noexcept;

  /// Checks the files a last time (counting records that went with a deleted file, without
  /// reopening it), then closes the files and the directory. Idempotent. Any thread.
  void close() noexcept;

  /// Writes `record` to every enabled log. False when any log missed it, or (sync) its fdatasync
  /// failed (see status()).
  bool write(const BlockRecord& record) noexcept;

  /// Interceptor adapter: `context` is the FileSink.
  static void interceptor(void* context, const BlockRecord& record);

  /// Writes a health record to every enabled log: the JSON line of format_health_json with a
  /// "linux" member (time, clock) before its closing brace; in the text log a header line
  /// "==== loopcanary health N ====", the time and clock lines, format_health_text and a blank
  /// line; in the binary log one `health` packet. The same rules as write() (rotation, whole or
  /// nothing, faults counted in status(), records_failed included). False when any log missed
  /// it. The watchdog thread (the health interceptor) or the thread that pops health records.
  bool write_health(const HealthRecord& record) noexcept;

  /// Health interceptor adapter (Watchdog::add_health_interceptor): `context` is the FileSink.
  static void health_interceptor(void* context, const HealthRecord& record);

  SinkStatus status() const noexcept;

  /// The file name stem in use ("loopcanary-<qualifier>"), "" before open().
  const char* stem() const noexcept { return stem_; }

 private:
  struct Log;

  SinkError validate(const FileSinkConfig& config) noexcept;
  // Where an open file or the directory is: still under its name, deleted (no link left), or
  // moved or replaced (its name leads elsewhere or nowhere).
  enum class Presence : std::uint8_t { in_place, deleted, moved };

  bool open_locked() noexcept;
  bool open_log(Log& log) noexcept;
  void close_files(bool directory_too) noexcept;
  Presence directory_presence() const noexcept;
  Presence file_presence(const Log& log) const noexcept;
  bool check_locked(bool reopen) noexcept;
  bool rotation_due(const Log& log, std::size_t length) const noexcept;
  bool write_log(Log& log, char* data, std::size_t length) noexcept;
  // FileSinkConfig::sync: fsyncs the directory (after a file was created or renamed in it);
  // a failure is reported (sync_failed). False on failure.
  bool sync_directory() noexcept;
  bool rotate(Log& log) noexcept;
  void cleanup(Log& log, std::time_t now) noexcept;
  void fail(SinkError error, int sys_errno, const char* what, const char* file,
            const char* detail = nullptr) noexcept;
  enum class Part : std::uint8_t { json, text_head, text_legend };
  // The port's own facts about a record (wall time, clock, symbols of its program counters),
  // as the JSON "linux" member (through format_json's JsonExtension), the text form's head or
  // its legend.
  void write_extension(const BlockRecord& record, TextWriter& w, Part part) noexcept;
  std::size_t format_json_line(const BlockRecord& record) noexcept;
  std::size_t format_text_block(const BlockRecord& record) noexcept;
  std::size_t format_packet(const BlockRecord& record) noexcept;
  void write_time_clock(std::uint32_t tick_hz, TextWriter& w, Part part) noexcept;
  // The "linux" member of a record's JSON object: wall time and clock, and for a block record the
  // symbols of its program counters.
  void write_linux_member(const BlockRecord& record, TextWriter& w) noexcept;
  void write_linux_member(const HealthRecord& record, TextWriter& w) noexcept;
  // The JSON line of `record` by `format` (format_json or format_health_json) with the "linux"
  // member, in the log's buffer; kOverflow when it does not fit.
  template <class Record>
  std::size_t json_line(const Record& record,
                        FormatResult (*format)(const Record&, char*, std::size_t, const JsonExtension&) noexcept) noexcept;
  std::size_t format_health_json_line(const HealthRecord& record) noexcept;
  std::size_t format_health_text_block(const HealthRecord& record) noexcept;
  std::size_t format_health_packet(const HealthRecord& record) noexcept;
  // A record's form for one log (the log's formatter of that record type).
  std::size_t format_for(const Log& log, const BlockRecord& record) noexcept;
  std::size_t format_for(const Log& log, const HealthRecord& record) noexcept;
  // write() and write_health(): every form made, then written; counted in status().
  template <class Record>
  bool write_record(const Record& record) noexcept;

  mutable std::mutex mutex_;
  FileSinkConfig config_{};
  bool configured_ = false;
  std::unique_ptr<char[]> directory_;  // as configured, any length
  char stem_[64] = {};
  int dir_fd_ = -1;
  std::unique_ptr<Log> json_;
  std::unique_ptr<Log> text_;
  std::unique_ptr<Log> binary_;
  Log* logs_[3];  // every kind, in the order a record is written to them
  std::unique_ptr<Symbolizer> symbolizer_;
  std::uint64_t last_open_attempt_ms_ = 0;
  std::uint64_t last_cleanup_ms_ = 0;
  std::uint64_t last_check_ms_ = 0;
  std::uint64_t written_since_check_ = 0;  // records written to every log since the last check
  std::uint64_t health_since_check_ = 0;   // of them, health records
  std::uint64_t rotation_serial_ = 0;      // the last serial used or found in the directory
  bool error_pending_ = false;  // notify on_error after unlocking
  bool unsynced_ = false;       // the record being written missed an fdatasync (sync)
  SinkStatus status_{};
};

/// Outcome of read_log().
struct LogReadResult {
  std::uint64_t records = 0;    ///< well-formed lines passed to on_record
  std::uint32_t malformed = 0;  ///< lines skipped as malformed (each with a warning)
  bool torn_tail = false;       ///< the file ended inside a record (skipped, with a warning)
  int sys_errno = 0;            ///< the file could not be read (with a warning)
};

/// Reads a .jsonl log: `on_record` gets every complete, well-formed JSON object line (without
/// its newline); every other line is skipped with a warning "<path>:<line>: ..." passed to
/// `on_warning` (a torn tail, a line that is not one JSON object). Either callback may be null.
LogReadResult read_log(const char* path, void (*on_record)(void* context, const char* line, std::size_t length),
                       void (*on_warning)(void* context, const char* message), void* context) noexcept;

}  // namespace loopcanary::port_linux
