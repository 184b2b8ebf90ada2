// SPDX-License-Identifier: MIT
#include "loopcanary/linux/file_sink.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loopcanary/format.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/port/linux.hpp"

namespace loopcanary::port_linux {

// One kind of log file (.jsonl, .log, .lcb): its current file and the buffer its form of a
// record is made in.
struct FileSink::Log {
  const char* suffix = "";  // ".jsonl", ".log" or ".lcb"
  bool lines = true;        // a text form: a torn fragment is closed with a newline before the next record
  const char* record_end = "\n";  // the bytes a text form's record ends with (.log: a blank line)
  bool enabled = false;     // written in this configuration
  // Makes the form of a record in buffer + 1 and returns its length (kOverflow: too large).
  std::size_t (FileSink::*format)(const BlockRecord& record) noexcept = nullptr;
  std::size_t (FileSink::*format_health)(const HealthRecord& record) noexcept = nullptr;  // the same for health records
  std::unique_ptr<char[]> buffer;  // max_record_bytes + 1: byte 0 is spare for that newline
  std::size_t pending = 0;  // the formatted length of the record being written
  char name[96] = {};       // current file name, relative to the directory
  int fd = -1;
  std::uint64_t size = 0;
  bool torn = false;        // the file ends inside a record: start the next one on a new line
};

namespace {

constexpr std::size_t kMaxPrefix = 24;
constexpr std::uint32_t kMinFileBytes = 4096;
constexpr std::uint64_t kCleanupEveryMs = 3600u * 1000u;
constexpr std::size_t kRotatedTime = 17;     // "YYYYmmddTHHMMSSZ-"
constexpr std::size_t kMinSerialDigits = 6;  // the serial is printed with at least 6 digits
constexpr std::size_t kMaxSerialDigits = 18; // and read back with at most 18 (fits 64 bits)
constexpr std::size_t kOverflow = ~std::size_t{0};  // a form did not fit its buffer

std::uint64_t monotonic_ms() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000u;
}

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

bool all_digits(const char* p, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] < '0' || p[i] > '9') return false;
  }
  return true;
}

// "<stem>.YYYYmmddTHHMMSSZ-<serial><suffix>" (serial: 6 to 18 digits): a file this sink
// rotated. Sets `serial`.
bool parse_rotated(const char* name, const char* stem, const char* suffix, std::uint64_t& serial) noexcept {
  const std::size_t n = std::strlen(name);
  const std::size_t s = std::strlen(stem);
  const std::size_t x = std::strlen(suffix);
  if (n < s + 1 + kRotatedTime + kMinSerialDigits + x || n > s + 1 + kRotatedTime + kMaxSerialDigits + x) return false;
  if (std::strncmp(name, stem, s) != 0 || name[s] != '.' || std::strcmp(name + n - x, suffix) != 0) return false;
  const char* m = name + s + 1;
  const std::size_t digits = n - x - (s + 1 + kRotatedTime);
  if (!(all_digits(m, 8) && m[8] == 'T' && all_digits(m + 9, 6) && m[15] == 'Z' && m[16] == '-' &&
        all_digits(m + kRotatedTime, digits))) {
    return false;
  }
  serial = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    serial = serial * 10u + static_cast<std::uint64_t>(m[kRotatedTime + i] - '0');
  }
  return true;
}

// `directory`, or "<directory>/<file>", into `out` for a message. A path longer than `size` - 1
// keeps its end (the file name and the folders nearest to it) behind a leading "…"; it is
// never empty. `size` >= 8.
void fit_path(char* out, std::size_t size, const char* directory, const char* file) noexcept {
  static constexpr char kEllipsis[] = "\xE2\x80\xA6";  // U+2026 in UTF-8
  constexpr std::size_t kEllipsisBytes = sizeof kEllipsis - 1;
  const std::size_t d = std::strlen(directory);
  const std::size_t total = file != nullptr ? d + 1 + std::strlen(file) : d;
  const auto at = [&](std::size_t i) { return i < d ? directory[i] : i == d ? '/' : file[i - d - 1]; };
  std::size_t from = 0;
  std::size_t n = 0;
  if (total + 1 > size) {
    std::memcpy(out, kEllipsis, kEllipsisBytes);
    n = kEllipsisBytes;
    from = total - (size - 1 - kEllipsisBytes);
    while (from < total && (static_cast<unsigned char>(at(from)) & 0xC0u) == 0x80u) ++from;  // not mid-character
  }
  for (std::size_t i = from; i < total; ++i) out[n++] = at(i);
  out[n] = '\0';
}

// strerror_r comes in a GNU flavour (returns the text) and an XSI one (fills the buffer).
[[maybe_unused]] const char* pick_text(int /*xsi_result*/, const char* buffer) noexcept { return buffer; }
[[maybe_unused]] const char* pick_text(const char* gnu_result, const char* /*buffer*/) noexcept { return gnu_result; }

// UTC wall time: "2025-01-31T12:34:56.789Z" (iso) or "20250131T123456Z" (compact).
void utc_time(char* out, std::size_t size, bool compact) noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm parts{};
  gmtime_r(&ts.tv_sec, &parts);
  if (compact) {
    std::strftime(out, size, "%Y%m%dT%H%M%SZ", &parts);
  } else {
    char seconds[24];
    std::strftime(seconds, sizeof seconds, "%Y-%m-%dT%H:%M:%S", &parts);
    std::snprintf(out, size, "%s.%03uZ", seconds, static_cast<unsigned>(ts.tv_nsec / 1'000'000L) % 1000u);
  }
}

const char* base_name(const char* path) noexcept {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

ssize_t real_write(int fd, const void* data, std::size_t size) { return ::write(fd, data, size); }
int real_ftruncate(int fd, off_t length) { return ::ftruncate(fd, length); }
int real_sync(int fd, bool directory) { return directory ? ::fsync(fd) : ::fdatasync(fd); }

// Whether the file `fd` of `size` bytes ends inside a record of its form: a text form's file
// that does not end with its record end, a .lcb file where the packets, followed by their
// headers' lengths from the start, do not end exactly at the end (also when a header is not
// one: bytes that are no packet).
bool ends_inside_record(int fd, std::uint64_t size, bool lines, const char* record_end) noexcept {
  if (size == 0) return false;
  if (lines) {
    const std::size_t n = std::strlen(record_end);
    char last[8] = {};
    return size < n || pread(fd, last, n, static_cast<off_t>(size - n)) != static_cast<ssize_t>(n) ||
           std::memcmp(last, record_end, n) != 0;
  }
  std::uint64_t at = 0;
  while (at < size) {
    std::uint8_t header[kPacketHeaderBytes];
    if (pread(fd, header, sizeof header, static_cast<off_t>(at)) != static_cast<ssize_t>(sizeof header) ||
        header[0] != kPacketMagic0 || header[1] != kPacketMagic1) {
      return true;
    }
    at += packet_size(header);
  }
  return at != size;
}

struct PcUse {
  std::uintptr_t pc;
  bool return_address;
};

// Most program counters one record holds: its samples', its stack table's (with each entry's
// highest innermost PC) and its wait objects' holders'.
constexpr std::size_t kMaxPcUses = (kMaxSamples + kTopFrames + kWaitObjects) * kMaxFrames + kTopFrames;

// Every distinct program counter of `r` into `uses` (kMaxPcUses of them), sorted, each with its
// role (the first PC of a stack is the interrupted instruction, the others are return
// addresses); returns how many.
std::size_t distinct_pcs(const BlockRecord& r, PcUse (&uses)[kMaxPcUses]) noexcept {
  std::size_t count = 0;
  for (std::uint8_t i = 0; i < r.sample_count; ++i) {
    const Sample& s = r.samples[i];
    for (std::uint8_t f = 0; f < s.pc_count; ++f) uses[count++] = PcUse{s.frames[s.scope_count + f], f != 0};
  }
  for (std::uint8_t i = 0; i < r.top_count; ++i) {
    const TopStack& t = r.top[i];
    for (std::uint8_t f = 0; f < t.pc_count; ++f) uses[count++] = PcUse{t.frames[t.scope_count + f], f != 0};
    if (t.pc_count != 0) uses[count++] = PcUse{t.leaf_high, false};
  }
  for (std::uint8_t i = 0; i < r.wait.count; ++i) {  // each holder's stack
    const WaitSeen& seen = r.wait.objects[i];
    for (std::uint8_t f = 0; f < seen.holder_pc_count; ++f) uses[count++] = PcUse{seen.holder_frames[f], f != 0};
  }
  std::sort(uses, uses + count, [](const PcUse& a, const PcUse& b) {
    return a.pc != b.pc ? a.pc < b.pc : a.return_address < b.return_address;
  });
  return static_cast<std::size_t>(
      std::unique(uses, uses + count, [](const PcUse& a, const PcUse& b) { return a.pc == b.pc; }) - uses);
}

}  // namespace

const char* name(SinkError error) noexcept {
  switch (error) {
    case SinkError::none: return "none";
    case SinkError::directory_missing: return "directory_missing";
    case SinkError::prefix_invalid: return "prefix_invalid";
    case SinkError::max_file_bytes_too_small: return "max_file_bytes_too_small";
    case SinkError::max_files_zero: return "max_files_zero";
    case SinkError::no_output: return "no_output";
    case SinkError::directory_not_found: return "directory_not_found";
    case SinkError::directory_create_failed: return "directory_create_failed";
    case SinkError::directory_open_failed: return "directory_open_failed";
    case SinkError::file_open_failed: return "file_open_failed";
    case SinkError::write_failed: return "write_failed";
    case SinkError::disk_full: return "disk_full";
    case SinkError::rotate_failed: return "rotate_failed";
    case SinkError::cleanup_failed: return "cleanup_failed";
    case SinkError::record_too_large: return "record_too_large";
    case SinkError::not_open: return "not_open";
    case SinkError::file_vanished: return "file_vanished";
    case SinkError::directory_vanished: return "directory_vanished";
    case SinkError::sync_failed: return "sync_failed";
  }
  return "unknown_sink_error";
}

FileSink::FileSink() noexcept
    : json_(std::make_unique<Log>()),
      text_(std::make_unique<Log>()),
      binary_(std::make_unique<Log>()),
      logs_{json_.get(), text_.get(), binary_.get()} {
  json_->suffix = ".jsonl";
  json_->format = &FileSink::format_json_line;
  json_->format_health = &FileSink::format_health_json_line;
  text_->suffix = ".log";
  text_->record_end = "\n\n";
  text_->format = &FileSink::format_text_block;
  text_->format_health = &FileSink::format_health_text_block;
  binary_->suffix = ".lcb";
  binary_->lines = false;
  binary_->format = &FileSink::format_packet;
  binary_->format_health = &FileSink::format_health_packet;
}

FileSink::~FileSink() { close(); }

SinkError FileSink::validate(const FileSinkConfig& c) noexcept {
  if (c.directory == nullptr || c.directory[0] == '\0') return SinkError::directory_missing;
  const char* prefix = c.file_prefix;
  if (prefix == nullptr || prefix[0] == '\0' || prefix[0] == '.' || std::strlen(prefix) > kMaxPrefix) {
    return SinkError::prefix_invalid;
  }
  for (const char* p = prefix; *p != '\0'; ++p) {
    if (!name_char(*p)) return SinkError::prefix_invalid;
  }
  if (c.max_file_bytes < kMinFileBytes) return SinkError::max_file_bytes_too_small;
  if (c.max_files == 0) return SinkError::max_files_zero;
  if (!c.json && !c.text && !c.binary) return SinkError::no_output;
  return SinkError::none;
}

SinkError FileSink::open(const FileSinkConfig& config) noexcept {
  close();
  std::unique_lock<std::mutex> lock(mutex_);
  status_ = SinkStatus{};
  const SinkError invalid = validate(config);
  if (invalid != SinkError::none) {
    status_.last_error = invalid;
    std::snprintf(status_.message, sizeof status_.message, "invalid FileSinkConfig: %s", name(invalid));
    return invalid;
  }
  config_ = config;
  if (config_.fake_write == nullptr) config_.fake_write = &real_write;
  if (config_.fake_ftruncate == nullptr) config_.fake_ftruncate = &real_ftruncate;
  if (config_.fake_sync == nullptr) config_.fake_sync = &real_sync;
  const std::size_t directory_length = std::strlen(config.directory);
  directory_ = std::make_unique<char[]>(directory_length + 1);
  std::memcpy(directory_.get(), config.directory, directory_length + 1);

  // The stem: prefix, then "-" and the qualifier reduced to safe characters.
  std::size_t n = 0;
  for (const char* p = config.file_prefix; *p != '\0'; ++p) stem_[n++] = *p;
  if (config.qualifier != nullptr && config.qualifier[0] != '\0') {
    stem_[n++] = '-';
    for (std::size_t i = 0; config.qualifier[i] != '\0' && n + 1 < sizeof stem_ && i < 31; ++i) {
      const char c = config.qualifier[i];
      stem_[n++] = name_char(c) && !(i == 0 && c == '.') ? c : '_';
    }
  }
  stem_[n] = '\0';

  const std::size_t capacity = std::size_t{config.max_record_bytes} + 1;  // + 1: room for a leading '\n'
  json_->enabled = config.json;
  text_->enabled = config.text;
  binary_->enabled = config.binary;
  for (Log* log : logs_) log->buffer = log->enabled ? std::make_unique<char[]>(capacity) : nullptr;
  symbolizer_ = std::make_unique<Symbolizer>();
  rotation_serial_ = 0;  // cleanup() continues it from the highest one in the directory
  configured_ = true;
  const bool opened = open_locked();
  const bool notify = error_pending_;
  error_pending_ = false;
  const SinkStatus copy = status_;
  lock.unlock();
  if (notify && config_.on_error != nullptr) config_.on_error(config_.on_error_context, copy);
  return opened ? SinkError::none : copy.last_error;
}

FileSink::Presence FileSink::directory_presence() const noexcept {
  struct stat held {};
  if (fstat(dir_fd_, &held) != 0) return Presence::in_place;  // cannot tell
  if (held.st_nlink == 0) return Presence::deleted;
  struct stat named {};
  if (stat(directory_.get(), &named) != 0) {
    return errno == ENOENT || errno == ENOTDIR ? Presence::moved : Presence::in_place;
  }
  return named.st_dev == held.st_dev && named.st_ino == held.st_ino ? Presence::in_place : Presence::moved;
}

FileSink::Presence FileSink::file_presence(const Log& log) const noexcept {
  struct stat held {};
  if (fstat(log.fd, &held) != 0) return Presence::in_place;  // cannot tell
  if (held.st_nlink == 0) return Presence::deleted;
  struct stat named {};
  if (fstatat(dir_fd_, log.name, &named, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Presence::moved : Presence::in_place;
  }
  return named.st_dev == held.st_dev && named.st_ino == held.st_ino ? Presence::in_place : Presence::moved;
}

void FileSink::close_files(bool directory_too) noexcept {
  for (Log* log : logs_) {
    if (log->fd >= 0) ::close(log->fd);
    log->fd = -1;
    log->size = 0;
  }
  if (directory_too && dir_fd_ >= 0) {
    ::close(dir_fd_);
    dir_fd_ = -1;
  }
}

bool FileSink::open_locked() noexcept {
  last_open_attempt_ms_ = monotonic_ms();
  // A directory deleted or replaced since it was opened is opened (or created) again by path.
  if (dir_fd_ >= 0 && directory_presence() != Presence::in_place) close_files(true);
  if (dir_fd_ < 0) {
    int fd = ::open(directory_.get(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (!config_.create_directory) {
        fail(SinkError::directory_not_found, ENOENT, "open directory", nullptr);
        return false;
      }
      if (::mkdir(directory_.get(), 0700) != 0 && errno != EEXIST) {
        fail(SinkError::directory_create_failed, errno, "create directory", nullptr);
        return false;
      }
      fd = ::open(directory_.get(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0) {
      fail(SinkError::directory_open_failed, errno, "open directory", nullptr);
      return false;
    }
    dir_fd_ = fd;
  }
  std::time_t now = std::time(nullptr);
  // Old files go before a current file is created, so max_files holds at every instant; this
  // also finds the highest rotation serial in the directory.
  for (Log* log : logs_) {
    if (log->enabled && log->fd < 0) cleanup(*log, now);
  }
  for (Log* log : logs_) {
    if (log->enabled && log->fd < 0 && !open_log(*log)) return false;
  }
  for (Log* log : logs_) {
    if (!log->enabled) continue;
    // A current file left from an earlier run that is over the age limit is rotated, so the
    // cleanup in rotate() removes it. So is one that ends inside a record (a kill or a power
    // loss mid-write): the torn record stays at the end of a file, where readers report a torn
    // tail, instead of ending up between whole records.
    struct stat st {};
    const bool too_old = config_.max_age_s != 0 && log->size > 0 && fstat(log->fd, &st) == 0 &&
                         st.st_mtime + static_cast<std::time_t>(config_.max_age_s) < now;
    if ((too_old || ends_inside_record(log->fd, log->size, log->lines, log->record_end)) && !rotate(*log)) {
      return false;
    }
  }
  last_cleanup_ms_ = monotonic_ms();
  last_check_ms_ = last_cleanup_ms_;
  written_since_check_ = 0;
  health_since_check_ = 0;
  status_.open = true;
  status_.healthy = true;
  return true;
}

bool FileSink::open_log(Log& log) noexcept {
  std::snprintf(log.name, sizeof log.name, "%s%s", stem_, log.suffix);
  // O_NOFOLLOW: a symlink planted under this name fails (ELOOP) instead of being followed.
  // O_NONBLOCK: a FIFO planted under this name cannot block the open. O_RDWR: to check how an
  // existing file ends.
  const int fd = ::openat(dir_fd_, log.name, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (fd < 0) {
    fail(SinkError::file_open_failed, errno, "open", log.name);
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    fail(SinkError::file_open_failed, errno, "stat", log.name);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    fail(SinkError::file_open_failed, EINVAL, "open (not a regular file)", log.name);
    ::close(fd);
    return false;
  }
  if ((st.st_mode & 077) != 0) fchmod(fd, 0600);  // owner-only, whoever created it
  log.fd = fd;
  log.size = static_cast<std::uint64_t>(st.st_size);
  log.torn = false;  // a file that ends inside a record is rotated by open_locked()
  if (st.st_size == 0) sync_directory();  // its name, created now (or empty anyway), survives a power loss
  return true;
}

bool FileSink::sync_directory() noexcept {
  if (!config_.sync) return true;
  if (config_.fake_sync(dir_fd_, true) == 0) return true;
  fail(SinkError::sync_failed, errno, "sync (fsync)", nullptr);
  return false;
}

bool FileSink::check_locked(bool reopen) noexcept {
  last_check_ms_ = monotonic_ms();
  if (!status_.open || dir_fd_ < 0) return false;
  const Presence directory = directory_presence();
  Presence file = Presence::in_place;
  const Log* vanished = nullptr;
  for (Log* log : logs_) {
    if (log->fd < 0) continue;
    const Presence p = file_presence(*log);
    if (p == Presence::in_place) continue;
    if (vanished == nullptr || p == Presence::deleted) {
      vanished = log;
      file = p;
    }
  }
  if (directory == Presence::in_place && file == Presence::in_place) {
    written_since_check_ = 0;
    health_since_check_ = 0;
    return true;
  }
  // A deleted file takes every record written to it with it; those written since the last
  // check were not on disk under a name when it was seen last, so they count as lost.
  const std::uint64_t lost =
      directory == Presence::deleted || file == Presence::deleted ? written_since_check_ : 0;
  const std::uint64_t health_lost = health_since_check_;
  written_since_check_ = 0;
  health_since_check_ = 0;
  status_.records_written -= lost;
  status_.health_written -= lost != 0 ? health_lost : 0;
  status_.records_failed += lost;
  status_.records_lost += lost;
  const bool whole_directory = directory != Presence::in_place;
  const Presence what = whole_directory ? directory : file;
  char detail[192];
  std::snprintf(detail, sizeof detail, "%s %s, %llu record%s written since the last check lost; %s",
                whole_directory ? "directory" : "file", what == Presence::deleted ? "deleted" : "moved or replaced",
                static_cast<unsigned long long>(lost), lost == 1 ? "" : "s",
                !reopen ? "closing" : whole_directory ? "recreating it" : "starting a new file");
  fail(whole_directory ? SinkError::directory_vanished : SinkError::file_vanished, 0, "check",
       whole_directory ? nullptr : vanished->name, detail);
  if (whole_directory) {
    close_files(true);
  } else {
    for (Log* log : logs_) {
      if (log->fd >= 0 && file_presence(*log) != Presence::in_place) {
        ::close(log->fd);
        log->fd = -1;
        log->size = 0;
      }
    }
  }
  status_.open = false;
  status_.healthy = false;
  if (reopen) open_locked();  // a failure there is reported on its own, and retried
  return false;
}

bool FileSink::check() noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool in_place = configured_ && status_.open && check_locked(true);
  const bool notify = error_pending_;
  error_pending_ = false;
  const SinkStatus copy = status_;
  lock.unlock();
  if (notify && config_.on_error != nullptr) config_.on_error(config_.on_error_context, copy);
  return in_place;
}

void FileSink::close() noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  // The last check: records written since the previous one into a file deleted since are counted.
  if (configured_ && status_.open) check_locked(false);
  close_files(true);
  configured_ = false;
  status_.open = false;
  status_.healthy = false;
  const bool notify = error_pending_;
  error_pending_ = false;
  const SinkStatus copy = status_;
  lock.unlock();
  if (notify && config_.on_error != nullptr) config_.on_error(config_.on_error_context, copy);
}

void FileSink::fail(SinkError error, int sys_errno, const char* what, const char* file, const char* detail) noexcept {
  status_.last_error = error;
  status_.last_errno = sys_errno;
  ++status_.errors;
  char text[128] = {};
  const char* reason = detail != nullptr ? detail
                       : sys_errno != 0  ? pick_text(strerror_r(sys_errno, text, sizeof text), text)
                                         : name(error);
  if (directory_ == nullptr) {  // before the first open(): no path to name
    std::snprintf(status_.message, sizeof status_.message, "%s: %s", what, reason);
    error_pending_ = true;
    return;
  }
  // The path gets what the operation and the reason leave of the message, at least a third.
  constexpr std::size_t kMessage = sizeof status_.message;
  const std::size_t fixed = std::strlen(what) + std::strlen(reason) + 6;  // " '" "': " and the NUL
  const std::size_t room = std::max(kMessage > fixed ? kMessage - fixed : 0, kMessage / 3);
  char path[kMessage];
  fit_path(path, room, directory_.get(), file);
  // "<what> '<path>': <reason>", the reason cut at the end if it does not fit what is left.
  std::size_t used = 0;
  for (const char* part : {what, " '", static_cast<const char*>(path), "': ", reason}) {
    for (; *part != '\0' && used + 1 < kMessage; ++part) status_.message[used++] = *part;
  }
  status_.message[used] = '\0';
  error_pending_ = true;
}

bool FileSink::rotate(Log& log) noexcept {
  char stamp[24];
  utc_time(stamp, sizeof stamp, true);
  char target[sizeof log.name + 48];
  bool renamed = false;
  for (int attempt = 0; attempt < 100 && !renamed; ++attempt) {
    ++rotation_serial_;
    std::snprintf(target, sizeof target, "%s.%s-%06llu%s", stem_, stamp,
                  static_cast<unsigned long long>(rotation_serial_), log.suffix);
    if (renameat2(dir_fd_, log.name, dir_fd_, target, RENAME_NOREPLACE) == 0) {
      renamed = true;
    } else if (errno == EINVAL) {
      // The file system has no RENAME_NOREPLACE: check, then rename.
      struct stat st {};
      if (fstatat(dir_fd_, target, &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
      if (renameat(dir_fd_, log.name, dir_fd_, target) != 0) break;
      renamed = true;
    } else if (errno != EEXIST) {
      break;
    }
  }
  if (!renamed) {
    fail(SinkError::rotate_failed, errno, "rotate (rename)", log.name);
    return false;
  }
  ::close(log.fd);
  log.fd = -1;
  log.size = 0;
  ++status_.rotations;
  sync_directory();  // the rename
  // The oldest rotated file goes before the new current file is created: the directory never
  // holds more than max_files of this kind (a rename does not add a file).
  cleanup(log, std::time(nullptr));
  return open_log(log);
}

void FileSink::cleanup(Log& log, std::time_t now) noexcept {
  const int fd = ::openat(dir_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = fd >= 0 ? fdopendir(fd) : nullptr;
  if (dir == nullptr) {
    fail(SinkError::cleanup_failed, errno, "list directory", nullptr);
    if (fd >= 0) ::close(fd);
    return;
  }
  struct Rotated {
    std::uint64_t serial;
    std::string name;
    std::time_t mtime;
  };
  std::vector<Rotated> rotated;
  while (const dirent* entry = readdir(dir)) {
    std::uint64_t serial = 0;
    if (!parse_rotated(entry->d_name, stem_, log.suffix, serial)) continue;
    struct stat st {};
    if (fstatat(dir_fd_, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
      rotated.push_back(Rotated{serial, entry->d_name, st.st_mtime});
      rotation_serial_ = std::max(rotation_serial_, serial);
    }
  }
  closedir(dir);
  // Oldest first by the serial, which goes on across runs from the highest one found: the
  // wall-clock time in the names may repeat (a restart within a second) or go back.
  std::sort(rotated.begin(), rotated.end(), [](const Rotated& a, const Rotated& b) {
    return a.serial != b.serial ? a.serial < b.serial : a.name < b.name;
  });
  std::size_t keep = std::size_t{config_.max_files} - 1u;  // the current file is one of them
  std::size_t left = rotated.size();
  for (const Rotated& file : rotated) {
    const bool too_old = config_.max_age_s != 0 && file.mtime + static_cast<std::time_t>(config_.max_age_s) < now;
    if (!too_old && left <= keep) continue;
    if (unlinkat(dir_fd_, file.name.c_str(), 0) != 0) {
      fail(SinkError::cleanup_failed, errno, "remove", file.name.c_str());
      continue;
    }
    --left;
    if (too_old) {
      ++status_.removed_by_age;
    } else {
      ++status_.removed_by_count;
    }
  }
}

bool FileSink::rotation_due(const Log& log, std::size_t length) const noexcept {
  return log.size > 0 && log.size + length + (log.torn ? 1u : 0u) > config_.max_file_bytes;
}

bool FileSink::write_log(Log& log, char* data, std::size_t length) noexcept {
  // `data - 1` is a spare byte of the same buffer for the newline that closes a torn fragment.
  char* spare = data - 1;
  if (length > config_.max_file_bytes) {
    fail(SinkError::record_too_large, 0, "write (record larger than max_file_bytes)", log.name);
    return false;
  }
  if (log.fd < 0) {
    fail(SinkError::not_open, 0, "write", log.name);
    return false;
  }
  if (rotation_due(log, length) && !rotate(log)) return false;
  const char* out = data;
  std::size_t n = length;
  if (log.torn) {
    *spare = '\n';
    out = spare;
    ++n;
  }
  ssize_t written = 0;
  do {
    written = config_.fake_write(log.fd, out, n);
  } while (written < 0 && errno == EINTR);
  if (written >= 0 && static_cast<std::size_t>(written) == n) {
    log.size += n;
    log.torn = false;
    status_.bytes_written += n;
    if (config_.sync && config_.fake_sync(log.fd, false) != 0) {
      // The record is in the file (readers see it) but may not be on the device.
      unsynced_ = true;
      fail(SinkError::sync_failed, errno, "sync (fdatasync)", log.name);
    }
    return true;
  }
  // A short write to a regular file means the space (or the file size limit) ran out.
  const int error = written < 0 ? errno : ENOSPC;
  const bool full = error == ENOSPC || error == EDQUOT || error == EFBIG;
  if (written > 0 && config_.fake_ftruncate(log.fd, static_cast<off_t>(log.size)) != 0) {
    // The fragment stays: in a text form the next record starts on a new line; a reader of
    // packets skips it by their magic and CRC.
    const int truncate_error = errno;
    log.torn = log.lines;
    log.size += static_cast<std::uint64_t>(written);
    ++status_.fragments_left;
    char write_text[128] = {};
    char truncate_text[128] = {};
    char detail[320];
    std::snprintf(detail, sizeof detail, "%s; ftruncate failed (%s): %zd bytes of the record stay in the file",
                  pick_text(strerror_r(error, write_text, sizeof write_text), write_text),
                  pick_text(strerror_r(truncate_error, truncate_text, sizeof truncate_text), truncate_text), written);
    fail(full ? SinkError::disk_full : SinkError::write_failed, error, "write", log.name, detail);
    return false;
  }
  fail(full ? SinkError::disk_full : SinkError::write_failed, error, "write", log.name);
  return false;
}

void FileSink::write_time_clock(std::uint32_t tick_hz, TextWriter& w, Part part) noexcept {
  // The process clock names the record's ticks only when the record was stamped by it (a
  // record from another clock, e.g. the sim port's virtual time, carries its own tick_hz).
  const ClockInfo& clock = clock_info();
  const char* clock_name = tick_hz == clock.tick_hz ? clock.name : "other";
  char when[40];
  utc_time(when, sizeof when, false);
  if (part == Part::text_head) {
    w.puts("time = ");
    w.puts(when);
    w.puts(" (written)\nclock = ");
    w.puts(clock_name);
    w.puts(" @ ");
    w.u64(tick_hz);
    w.puts(" Hz");
    if (clock.tick_offset_hook) w.puts(" (test build: tick offset hook)");
    w.put('\n');
  } else {  // the "linux" member's start: ,"linux":{"time":...,"clock":...
    w.puts(",\"linux\":{\"time\":");
    w.json_string(when);
    w.puts(",\"clock\":");
    w.json_string(clock_name);
    if (clock.tick_offset_hook) w.puts(",\"tick_offset_hook\":true");
  }
}

void FileSink::write_extension(const BlockRecord& r, TextWriter& w, Part part) noexcept {
  if (part == Part::text_head) return write_time_clock(r.tick_hz, w, part);
  const bool json = part == Part::json;
  if (json) write_time_clock(r.tick_hz, w, part);
  PcUse uses[kMaxPcUses];
  const std::size_t count = distinct_pcs(r, uses);

  if (json) {
    w.puts(",\"frames\":[");
  } else if (count > 0) {
    w.puts("symbols:\n");
  }
  bool refreshed = false;
  for (std::size_t i = 0; i < count; ++i) {
    Symbol sym;
    const bool found = config_.symbol_names ? symbolizer_->symbolize(uses[i].pc, uses[i].return_address, sym)
                                            : symbolizer_->locate(uses[i].pc, sym);
    if (!found && !refreshed) {  // a module loaded since the last look (dlopen)
      refreshed = true;
      symbolizer_->refresh();
      if (config_.symbol_names) {
        symbolizer_->symbolize(uses[i].pc, uses[i].return_address, sym);
      } else {
        symbolizer_->locate(uses[i].pc, sym);
      }
    }
    if (json) {
      if (i != 0) w.put(',');
      w.puts("{\"pc\":\"");
      w.hex(uses[i].pc);
      w.put('"');
      if (sym.in_module) {
        w.puts(",\"module\":");
        w.json_string(sym.module_path);
        w.puts(",\"build_id\":");
        w.json_string(sym.build_id);
        w.puts(",\"offset\":\"");
        w.hex(sym.module_offset);
        w.put('"');
      }
      if (sym.has_function) {
        // Outside every sized symbol (a stripped library's internal function): only the
        // nearest symbol below is known, which is a hint, not a name.
        w.puts(sym.exact ? ",\"function\":" : ",\"nearest_symbol\":");
        w.json_string(sym.function);
        w.puts(sym.exact ? ",\"function_offset\":\"" : ",\"nearest_offset\":\"");
        w.hex(sym.function_offset);
        w.put('"');
      }
      w.put('}');
    } else {
      w.puts("  ");
      w.hex(uses[i].pc);
      w.puts("  ");
      if (sym.has_function && sym.exact) {
        w.puts(sym.function);
        w.put('+');
        w.hex(sym.function_offset);
      } else if (sym.has_function) {
        w.puts("? (after ");
        w.puts(sym.function);
        w.put('+');
        w.hex(sym.function_offset);
        w.put(')');
      } else {
        w.put('?');
      }
      if (sym.in_module) {
        w.puts("  (");
        w.puts(base_name(sym.module_path));
        w.put('+');
        w.hex(sym.module_offset);
        if (sym.build_id[0] != '\0') {
          w.puts(", build-id ");
          w.puts(sym.build_id);
        }
        w.put(')');
      }
      w.put('\n');
    }
  }
  if (json) w.puts("]}");
}

void FileSink::write_linux_member(const BlockRecord& record, TextWriter& w) noexcept {
  write_extension(record, w, Part::json);
}

void FileSink::write_linux_member(const HealthRecord& record, TextWriter& w) noexcept {
  write_time_clock(record.tick_hz, w, Part::json);
  w.put('}');  // closes "linux"
}

template <class Record>
std::size_t FileSink::json_line(const Record& record,
                                FormatResult (*format)(const Record&, char*, std::size_t, const JsonExtension&) noexcept) noexcept {
  // The core's JSON object with the "linux" member last.
  struct Extension {
    FileSink* self;
    const Record* record;
  } extension{this, &record};
  const JsonExtension linux_member{[](void* context, TextWriter& w) noexcept {
                                     const auto* e = static_cast<const Extension*>(context);
                                     e->self->write_linux_member(*e->record, w);
                                   },
                                   &extension};
  const FormatResult f = format(record, json_->buffer.get() + 1, config_.max_record_bytes, linux_member);
  return f.truncated ? kOverflow : f.length;
}

std::size_t FileSink::format_json_line(const BlockRecord& record) noexcept { return json_line(record, &format_json); }

std::size_t FileSink::format_text_block(const BlockRecord& record) noexcept {
  const std::size_t capacity = config_.max_record_bytes;
  char* text = text_->buffer.get() + 1;
  TextWriter w(text, capacity);
  char header[96];
  std::snprintf(header, sizeof header, "==== loopcanary report %u (%s) ====\n", static_cast<unsigned>(record.report),
                to_string(record.phase));
  w.puts(header);
  write_extension(record, w, Part::text_head);
  const std::size_t used = w.length();
  const FormatResult f = format_text(record, text + used, used < capacity ? capacity - used : 0);
  if (f.truncated || w.overflowed() || used + f.length >= capacity) return kOverflow;
  std::size_t length = used + f.length;
  TextWriter legend(text + length, capacity - length - 1);  // - 1: the blank line
  write_extension(record, legend, Part::text_legend);
  if (legend.overflowed()) return kOverflow;
  length += legend.length();
  text[length++] = '\n';  // a blank line between records
  return length;
}

std::size_t FileSink::format_packet(const BlockRecord& record) noexcept {
  const std::size_t length =
      encode_packet(record, reinterpret_cast<std::uint8_t*>(binary_->buffer.get() + 1), config_.max_record_bytes);
  return length != 0 ? length : kOverflow;
}

std::size_t FileSink::format_health_json_line(const HealthRecord& record) noexcept {
  return json_line(record, &format_health_json);
}

std::size_t FileSink::format_health_text_block(const HealthRecord& record) noexcept {
  const std::size_t capacity = config_.max_record_bytes;
  char* text = text_->buffer.get() + 1;
  TextWriter w(text, capacity);
  w.puts("==== loopcanary health ");
  w.u64(record.number);
  w.puts(" ====\n");
  write_time_clock(record.tick_hz, w, Part::text_head);
  if (w.overflowed()) return kOverflow;
  const std::size_t body = w.length();
  const FormatResult f = format_health_text(record, text + body, body < capacity ? capacity - body : 0);
  if (f.truncated || body + f.length + 1 >= capacity) return kOverflow;
  std::size_t length = body + f.length;
  text[length++] = '\n';  // a blank line between records
  return length;
}

std::size_t FileSink::format_health_packet(const HealthRecord& record) noexcept {
  const std::size_t length = encode_health_packet(record, reinterpret_cast<std::uint8_t*>(binary_->buffer.get() + 1),
                                                  config_.max_record_bytes);
  return length != 0 ? length : kOverflow;
}

std::size_t FileSink::format_for(const Log& log, const BlockRecord& record) noexcept {
  return (this->*log.format)(record);
}

std::size_t FileSink::format_for(const Log& log, const HealthRecord& record) noexcept {
  return (this->*log.format_health)(record);
}

bool FileSink::write(const BlockRecord& record) noexcept { return write_record(record); }

bool FileSink::write_health(const HealthRecord& record) noexcept { return write_record(record); }

template <class Record>
bool FileSink::write_record(const Record& record) noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  bool ok = configured_;
  if (!configured_) {
    fail(SinkError::not_open, 0, "write (sink not open)", nullptr);
  } else if (!status_.open && monotonic_ms() - last_open_attempt_ms_ >= config_.retry_open_ms) {
    ok = open_locked();
  } else if (!status_.open) {
    ok = false;
    error_pending_ = true;  // still closed since the last failed attempt: report again
  } else if (monotonic_ms() - last_check_ms_ >= config_.check_files_ms) {
    check_locked(true);
    ok = status_.open;
  }
  if (ok && monotonic_ms() - last_cleanup_ms_ >= kCleanupEveryMs) {
    const std::time_t now = std::time(nullptr);
    for (Log* log : logs_) {
      if (log->enabled) cleanup(*log, now);
    }
    last_cleanup_ms_ = monotonic_ms();
  }

  if (ok) {
    // Every form is made first, so a check before a rotation falls between records.
    bool rotation = false;
    for (Log* log : logs_) {
      if (!log->enabled) continue;
      log->pending = format_for(*log, record);
      rotation = rotation || (log->pending != kOverflow && rotation_due(*log, log->pending));
    }
    if (rotation) {
      check_locked(true);  // a file that vanished is replaced, not renamed
      ok = status_.open;
    }
    for (Log* log : logs_) {
      if (!log->enabled || !status_.open) continue;
      if (log->pending == kOverflow) {
        fail(SinkError::record_too_large, 0, "format (record larger than max_record_bytes)", log->name);
        ok = false;
      } else if (!write_log(*log, log->buffer.get() + 1, log->pending)) {
        ok = false;
      }
    }
  }
  if (ok) {
    ++status_.records_written;
    if (std::is_same<Record, HealthRecord>::value) {
      ++status_.health_written;
      ++health_since_check_;
    }
    ++written_since_check_;
    // In the files but, its fdatasync failed, perhaps not on the device: written, and unsynced.
    if (unsynced_) ++status_.records_unsynced;
    ok = !unsynced_;
  } else {
    ++status_.records_failed;
  }
  unsynced_ = false;
  status_.healthy = ok && status_.open;
  const bool notify = error_pending_;
  error_pending_ = false;
  const SinkStatus copy = status_;
  lock.unlock();
  if (notify && config_.on_error != nullptr) config_.on_error(config_.on_error_context, copy);
  return ok;
}

void FileSink::interceptor(void* context, const BlockRecord& record) {
  static_cast<FileSink*>(context)->write(record);
}

void FileSink::health_interceptor(void* context, const HealthRecord& record) {
  static_cast<FileSink*>(context)->write_health(record);
}

SinkStatus FileSink::status() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

// ---- Reader --------------------------------------------------------------------------------

namespace {

// One JSON object: balanced braces and brackets outside strings, valid escapes, no control
// characters, nothing after the closing brace. Enough to tell a whole record from a torn or
// garbled one; it does not check the values.
bool is_json_object(const char* s, std::size_t n) noexcept {
  if (n < 2 || s[0] != '{' || s[n - 1] != '}') return false;
  char stack[64];
  std::size_t depth = 0;
  bool in_string = false;
  bool escape = false;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20) return false;
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (depth == sizeof stack) return false;
      stack[depth++] = static_cast<char>(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (depth == 0 || stack[depth - 1] != static_cast<char>(c)) return false;
      if (--depth == 0 && i + 1 != n) return false;
    }
  }
  return depth == 0 && !in_string;
}

}  // namespace

LogReadResult read_log(const char* path, void (*on_record)(void*, const char*, std::size_t),
                       void (*on_warning)(void*, const char*), void* context) noexcept {
  LogReadResult result;
  // The path is shortened (its end kept) so a long one leaves room for the line and the reason.
  char shown[384];
  fit_path(shown, sizeof shown, path, nullptr);
  char message[512];
  FILE* file = std::fopen(path, "re");
  if (file == nullptr) {
    result.sys_errno = errno;
    char text[128] = {};
    std::snprintf(message, sizeof message, "%s: cannot open: %s", shown,
                  pick_text(strerror_r(result.sys_errno, text, sizeof text), text));
    if (on_warning != nullptr) on_warning(context, message);
    return result;
  }
  char* line = nullptr;
  std::size_t capacity = 0;
  std::uint64_t number = 0;
  for (;;) {
    const ssize_t got = getline(&line, &capacity, file);
    if (got < 0) break;
    ++number;
    auto length = static_cast<std::size_t>(got);
    const bool terminated = length > 0 && line[length - 1] == '\n';
    if (terminated) --length;
    if (!terminated) {
      result.torn_tail = true;
      std::snprintf(message, sizeof message, "%s:%llu: torn record at the end of the file (no newline), skipped", shown,
                    static_cast<unsigned long long>(number));
      if (on_warning != nullptr) on_warning(context, message);
      break;
    }
    if (length == 0) continue;  // the newline that closed a torn fragment
    if (!is_json_object(line, length)) {
      ++result.malformed;
      std::snprintf(message, sizeof message, "%s:%llu: not a whole JSON record (torn or garbled), skipped", shown,
                    static_cast<unsigned long long>(number));
      if (on_warning != nullptr) on_warning(context, message);
      continue;
    }
    ++result.records;
    if (on_record != nullptr) on_record(context, line, length);
  }
  if (std::ferror(file) != 0) {
    result.sys_errno = errno;
    std::snprintf(message, sizeof message, "%s:%llu: read error", shown, static_cast<unsigned long long>(number));
    if (on_warning != nullptr) on_warning(context, message);
  }
  std::free(line);
  std::fclose(file);
  return result;
}

}  // namespace loopcanary::port_linux
