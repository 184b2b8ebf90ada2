// SPDX-License-Identifier: MIT
#include "linux_file_sink.hpp"

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
#include <utility>
#include <vector>

#include "loopcanary/format.hpp"
#include "loopcanary_port.hpp"

namespace loopcanary::port_linux {

struct FileSink::Log {
  const char* suffix = "";  // ".jsonl" or ".log"
  char name[96] = {};       // current file name, relative to the directory
  int fd = -1;
  std::uint64_t size = 0;
  bool torn = false;        // the file ends inside a record: start the next one on a new line
};

namespace {

constexpr std::size_t kMaxPrefix = 24;
constexpr std::uint32_t kMinFileBytes = 4096;
constexpr std::uint64_t kCleanupEveryMs = 3600u * 1000u;
constexpr std::size_t kRotatedMiddle = 23;  // "YYYYmmddTHHMMSSZ-NNNNNN"
constexpr std::size_t kOverflow = ~std::size_t{0};  // format_extension: the output did not fit

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

// "<stem>.YYYYmmddTHHMMSSZ-NNNNNN<suffix>": a file this sink rotated.
bool is_rotated(const char* name, const char* stem, const char* suffix) noexcept {
  const std::size_t n = std::strlen(name);
  const std::size_t s = std::strlen(stem);
  const std::size_t x = std::strlen(suffix);
  if (n != s + 1 + kRotatedMiddle + x) return false;
  if (std::strncmp(name, stem, s) != 0 || name[s] != '.' || std::strcmp(name + n - x, suffix) != 0) return false;
  const char* m = name + s + 1;
  return all_digits(m, 8) && m[8] == 'T' && all_digits(m + 9, 6) && m[15] == 'Z' && m[16] == '-' &&
         all_digits(m + 17, 6);
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

struct PcUse {
  std::uintptr_t pc;
  bool return_address;
};

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
  }
  return "unknown_sink_error";
}

FileSink::FileSink() noexcept : json_(std::make_unique<Log>()), text_(std::make_unique<Log>()) {
  json_->suffix = ".jsonl";
  text_->suffix = ".log";
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
  if (!c.json && !c.text) return SinkError::no_output;
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
  if (std::strlen(config.directory) >= sizeof directory_) {
    fail(SinkError::directory_open_failed, ENAMETOOLONG, "open directory", nullptr);
    return SinkError::directory_open_failed;
  }
  std::strcpy(directory_, config.directory);

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
  json_buffer_ = std::make_unique<char[]>(capacity);
  text_buffer_ = std::make_unique<char[]>(capacity);
  extension_buffer_ = std::make_unique<char[]>(capacity);
  symbolizer_ = std::make_unique<Symbolizer>();
  configured_ = true;
  const bool opened = open_locked();
  const bool notify = error_pending_;
  error_pending_ = false;
  const SinkStatus copy = status_;
  lock.unlock();
  if (notify && config_.on_error != nullptr) config_.on_error(config_.on_error_context, copy);
  return opened ? SinkError::none : copy.last_error;
}

bool FileSink::open_locked() noexcept {
  last_open_attempt_ms_ = monotonic_ms();
  if (dir_fd_ < 0) {
    int fd = ::open(directory_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (!config_.create_directory) {
        fail(SinkError::directory_not_found, ENOENT, "open directory", nullptr);
        return false;
      }
      if (::mkdir(directory_, 0700) != 0 && errno != EEXIST) {
        fail(SinkError::directory_create_failed, errno, "create directory", nullptr);
        return false;
      }
      fd = ::open(directory_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0) {
      fail(SinkError::directory_open_failed, errno, "open directory", nullptr);
      return false;
    }
    dir_fd_ = fd;
  }
  Log* logs[2] = {config_.json ? json_.get() : nullptr, config_.text ? text_.get() : nullptr};
  for (Log* log : logs) {
    if (log != nullptr && log->fd < 0 && !open_log(*log)) return false;
  }
  std::time_t now = std::time(nullptr);
  for (Log* log : logs) {
    if (log == nullptr) continue;
    // A current file left from an earlier run that is over the age limit is rotated, so the
    // cleanup below can remove it.
    struct stat st {};
    if (config_.max_age_s != 0 && log->size > 0 && fstat(log->fd, &st) == 0 &&
        st.st_mtime + static_cast<std::time_t>(config_.max_age_s) < now) {
      if (!rotate(*log)) return false;
    }
    cleanup(*log, now);
  }
  last_cleanup_ms_ = monotonic_ms();
  status_.open = true;
  status_.healthy = true;
  return true;
}

bool FileSink::open_log(Log& log) noexcept {
  std::snprintf(log.name, sizeof log.name, "%s%s", stem_, log.suffix);
  // O_NOFOLLOW: a symlink planted under this name fails (ELOOP) instead of being followed.
  // O_NONBLOCK: a FIFO planted under this name cannot block the open. O_RDWR: to check the
  // last byte of an existing file.
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
  log.torn = false;
  if (log.size > 0) {
    char last = '\n';
    if (pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n') log.torn = true;  // a crash mid-record
  }
  return true;
}

void FileSink::close() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Log* log : {json_.get(), text_.get()}) {
    if (log->fd >= 0) ::close(log->fd);
    log->fd = -1;
    log->size = 0;
  }
  if (dir_fd_ >= 0) ::close(dir_fd_);
  dir_fd_ = -1;
  configured_ = false;
  status_.open = false;
  status_.healthy = false;
}

void FileSink::fail(SinkError error, int sys_errno, const char* what, const char* file) noexcept {
  status_.last_error = error;
  status_.last_errno = sys_errno;
  ++status_.errors;
  char text[128] = {};
  const char* reason = sys_errno != 0 ? pick_text(strerror_r(sys_errno, text, sizeof text), text) : name(error);
  if (file != nullptr) {
    std::snprintf(status_.message, sizeof status_.message, "%s '%s/%s': %s", what, directory_, file, reason);
  } else {
    std::snprintf(status_.message, sizeof status_.message, "%s '%s': %s", what, directory_, reason);
  }
  error_pending_ = true;
}

bool FileSink::rotate(Log& log) noexcept {
  char stamp[24];
  utc_time(stamp, sizeof stamp, true);
  char target[sizeof log.name + 32];
  bool renamed = false;
  for (int attempt = 0; attempt < 100 && !renamed; ++attempt) {
    rotation_serial_ = (rotation_serial_ + 1u) % 1'000'000u;
    std::snprintf(target, sizeof target, "%s.%s-%06u%s", stem_, stamp, static_cast<unsigned>(rotation_serial_),
                  log.suffix);
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
  if (!open_log(log)) return false;
  cleanup(log, std::time(nullptr));
  return true;
}

void FileSink::cleanup(Log& log, std::time_t now) noexcept {
  const int fd = ::openat(dir_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = fd >= 0 ? fdopendir(fd) : nullptr;
  if (dir == nullptr) {
    fail(SinkError::cleanup_failed, errno, "list directory", nullptr);
    if (fd >= 0) ::close(fd);
    return;
  }
  std::vector<std::pair<std::string, std::time_t>> rotated;
  while (const dirent* entry = readdir(dir)) {
    if (!is_rotated(entry->d_name, stem_, log.suffix)) continue;
    struct stat st {};
    if (fstatat(dir_fd_, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
      rotated.emplace_back(entry->d_name, st.st_mtime);
    }
  }
  closedir(dir);
  std::sort(rotated.begin(), rotated.end());  // names carry the UTC time: oldest first
  std::size_t keep = std::size_t{config_.max_files} - 1u;  // the current file is one of them
  std::size_t left = rotated.size();
  for (const auto& file : rotated) {
    const bool too_old = config_.max_age_s != 0 && file.second + static_cast<std::time_t>(config_.max_age_s) < now;
    if (!too_old && left <= keep) continue;
    if (unlinkat(dir_fd_, file.first.c_str(), 0) != 0) {
      fail(SinkError::cleanup_failed, errno, "remove", file.first.c_str());
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
  if (log.size > 0 && log.size + length + (log.torn ? 1u : 0u) > config_.max_file_bytes && !rotate(log)) return false;
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
    if (config_.sync) fdatasync(log.fd);
    return true;
  }
  // A short write to a regular file means the space (or the file size limit) ran out.
  const int error = written < 0 ? errno : ENOSPC;
  if (written > 0 && ftruncate(log.fd, static_cast<off_t>(log.size)) != 0) {
    log.torn = true;  // the fragment stays: the next record starts on a new line
    log.size += static_cast<std::uint64_t>(written);
  }
  const bool full = error == ENOSPC || error == EDQUOT || error == EFBIG;
  fail(full ? SinkError::disk_full : SinkError::write_failed, error, "write", log.name);
  return false;
}

std::size_t FileSink::format_extension(const BlockRecord& r, char* out, std::size_t size, Part part) noexcept {
  TextWriter w(out, size);
  // The process clock names the record's ticks only when the record was stamped by it (a
  // record from another clock, e.g. the sim port's virtual time, carries its own tick_hz).
  const ClockInfo& clock = clock_info();
  const char* clock_name = r.tick_hz == clock.tick_hz ? clock.name : "other";
  if (part == Part::text_head) {
    char when[40];
    utc_time(when, sizeof when, false);
    w.puts("time = ");
    w.puts(when);
    w.puts(" (written)\nclock = ");
    w.puts(clock_name);
    w.puts(" @ ");
    w.u64(r.tick_hz);
    w.puts(" Hz");
    if (clock.tick_offset_hook) w.puts(" (test build: tick offset hook)");
    w.put('\n');
    return w.overflowed() ? kOverflow : w.length();
  }
  const bool json = part == Part::json;
  // Every distinct program counter, with its role (the first PC of a sample is the
  // interrupted instruction, the others are return addresses).
  PcUse uses[kMaxSamples * kMaxFrames + kTopFrames];
  std::size_t count = 0;
  for (std::uint8_t i = 0; i < r.sample_count; ++i) {
    const Sample& s = r.samples[i];
    for (std::uint8_t f = 0; f < s.pc_count; ++f) uses[count++] = PcUse{s.frames[s.scope_count + f], f != 0};
  }
  for (std::uint8_t i = 0; i < r.top_count; ++i) {
    if (!r.top[i].is_scope) uses[count++] = PcUse{r.top[i].frame, false};
  }
  std::sort(uses, uses + count, [](const PcUse& a, const PcUse& b) {
    return a.pc != b.pc ? a.pc < b.pc : a.return_address < b.return_address;
  });
  count = static_cast<std::size_t>(
      std::unique(uses, uses + count, [](const PcUse& a, const PcUse& b) { return a.pc == b.pc; }) - uses);

  if (json) {
    char when[40];
    utc_time(when, sizeof when, false);
    w.puts(",\"linux\":{\"time\":");
    w.json_string(when);
    w.puts(",\"clock\":");
    w.json_string(clock_name);
    if (clock.tick_offset_hook) w.puts(",\"tick_offset_hook\":true");
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
  return w.overflowed() ? kOverflow : w.length();
}

bool FileSink::write(const BlockRecord& record) noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  bool ok = configured_;
  if (!configured_) {
    fail(SinkError::not_open, 0, "write (sink not open)", nullptr);
  } else if (!status_.open && monotonic_ms() - last_open_attempt_ms_ >= config_.retry_open_ms) {
    ok = open_locked();
  } else if (!status_.open) {
    ok = false;
    error_pending_ = true;  // still closed since the last failed attempt: report again
  }
  if (ok && monotonic_ms() - last_cleanup_ms_ >= kCleanupEveryMs) {
    const std::time_t now = std::time(nullptr);
    if (config_.json) cleanup(*json_, now);
    if (config_.text) cleanup(*text_, now);
    last_cleanup_ms_ = monotonic_ms();
  }

  if (ok) {
    const std::size_t capacity = config_.max_record_bytes;
    if (config_.json) {
      // The core's JSON object, then a "linux" member (clock, module + offset + build-id of
      // every program counter) spliced in before its closing brace.
      char* line = json_buffer_.get() + 1;
      const FormatResult f = format_json(record, line, capacity);
      std::size_t length = f.length;
      bool fits = !f.truncated && length >= 2 && line[length - 2] == '}' && line[length - 1] == '\n';
      if (fits) {
        length -= 2;
        const std::size_t extension = format_extension(record, extension_buffer_.get(), capacity, Part::json);
        fits = extension != kOverflow && length + extension + 2 <= capacity;
        if (fits) {
          std::memcpy(line + length, extension_buffer_.get(), extension);
          length += extension;
          line[length++] = '}';
          line[length++] = '\n';
        }
      }
      if (!fits) {
        fail(SinkError::record_too_large, 0, "format (record larger than max_record_bytes)", json_->name);
        ok = false;
      } else if (!write_log(*json_, line, length)) {
        ok = false;
      }
    }
    if (config_.text) {
      char* text = text_buffer_.get() + 1;
      TextWriter w(text, capacity);
      char header[96];
      std::snprintf(header, sizeof header, "==== loopcanary report %u (%s) ====\n", static_cast<unsigned>(record.report),
                    to_string(record.phase));
      w.puts(header);
      const std::size_t head = format_extension(record, extension_buffer_.get(), capacity, Part::text_head);
      for (std::size_t i = 0; head != kOverflow && i < head; ++i) w.put(extension_buffer_[i]);
      const std::size_t used = w.length();
      const FormatResult f = format_text(record, text + used, used < capacity ? capacity - used : 0);
      bool fits = head != kOverflow && !f.truncated && !w.overflowed() && used + f.length < capacity;
      std::size_t length = used + f.length;
      if (fits) {
        const std::size_t legend =
            format_extension(record, text + length, capacity - length - 1, Part::text_legend);  // - 1: the blank line
        fits = legend != kOverflow;
        if (fits) {
          length += legend;
          text[length++] = '\n';  // a blank line between records
        }
      }
      if (!fits) {
        fail(SinkError::record_too_large, 0, "format (record larger than max_record_bytes)", text_->name);
        ok = false;
      } else if (!write_log(*text_, text, length)) {
        ok = false;
      }
    }
  }
  if (ok) {
    ++status_.records_written;
  } else {
    ++status_.records_failed;
  }
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
  char message[512];
  FILE* file = std::fopen(path, "re");
  if (file == nullptr) {
    result.sys_errno = errno;
    char text[128] = {};
    std::snprintf(message, sizeof message, "%s: cannot open: %s", path,
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
      std::snprintf(message, sizeof message, "%s:%llu: torn record at the end of the file (no newline), skipped", path,
                    static_cast<unsigned long long>(number));
      if (on_warning != nullptr) on_warning(context, message);
      break;
    }
    if (length == 0) continue;  // the newline that closed a torn fragment
    if (!is_json_object(line, length)) {
      ++result.malformed;
      std::snprintf(message, sizeof message, "%s:%llu: not a whole JSON record (torn or garbled), skipped", path,
                    static_cast<unsigned long long>(number));
      if (on_warning != nullptr) on_warning(context, message);
      continue;
    }
    ++result.records;
    if (on_record != nullptr) on_record(context, line, length);
  }
  if (std::ferror(file) != 0) {
    result.sys_errno = errno;
    std::snprintf(message, sizeof message, "%s:%llu: read error", path, static_cast<unsigned long long>(number));
    if (on_warning != nullptr) on_warning(context, message);
  }
  std::free(line);
  std::fclose(file);
  return result;
}

}  // namespace loopcanary::port_linux
