// SPDX-License-Identifier: MIT
#include "loopcanary/port/linux/proc.hpp"

#include "linux_capture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace loopcanary::port_linux {

void detail::make_path(char* out, const char* prefix, std::uint64_t value, const char* suffix) noexcept {
  std::size_t n = 0;
  for (; *prefix != '\0'; ++prefix) out[n++] = *prefix;
  char digits[20];
  std::size_t d = 0;
  do {
    digits[d++] = static_cast<char>('0' + value % 10u);
    value /= 10u;
  } while (value != 0);
  while (d > 0) out[n++] = digits[--d];
  for (; *suffix != '\0'; ++suffix) out[n++] = *suffix;
  out[n] = '\0';
}

namespace {

// A cursor over [pos, end). The parsers never read past `end` and never rely on a NUL.
struct Cursor {
  const char* pos;
  const char* end;

  bool at_end() const noexcept { return pos == end; }
  void skip_blanks() noexcept {
    while (pos != end && (*pos == ' ' || *pos == '\t')) ++pos;
  }
};

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The end of the line starting at `from`: the '\n', or nullptr when the content ends first.
const char* line_end(const char* from, const char* end) noexcept {
  for (const char* p = from; p != end; ++p) {
    if (*p == '\n') return p;
  }
  return nullptr;
}

// Parses one blank-separated number of the line [c.pos, line_end). Decimal unless `hex`.
ParseError number(Cursor& c, bool hex, std::uint64_t& out) noexcept {
  c.skip_blanks();
  if (c.at_end()) return ParseError::missing_field;
  std::uint64_t value = 0;
  const char* start = c.pos;
  const std::uint64_t base = hex ? 16u : 10u;
  while (!c.at_end()) {
    const int digit = hex ? hex_value(*c.pos) : (is_digit(*c.pos) ? *c.pos - '0' : -1);
    if (digit < 0) break;
    const auto d = static_cast<std::uint64_t>(digit);
    if (value > (~std::uint64_t{0} - d) / base) return ParseError::bad_field;
    value = value * base + d;
    ++c.pos;
  }
  if (c.pos == start) return ParseError::bad_field;
  if (!c.at_end() && *c.pos != ' ' && *c.pos != '\t') return ParseError::bad_field;
  out = value;
  return ParseError::ok;
}

bool starts_with(const char* p, const char* end, const char* prefix) noexcept {
  for (; *prefix != '\0'; ++prefix, ++p) {
    if (p == end || *p != *prefix) return false;
  }
  return true;
}


}  // namespace

const char* describe(ParseError error) noexcept {
  switch (error) {
    case ParseError::ok: return "ok";
    case ParseError::empty: return "empty content";
    case ParseError::missing_line: return "the expected line or key is missing";
    case ParseError::missing_field: return "a required field is missing";
    case ParseError::bad_field: return "a field is malformed (not a number, or over 64 bits)";
    case ParseError::truncated: return "the content ends inside the needed line";
  }
  return "unknown parse error";
}

ParseError parse_proc_stat(const char* text, std::size_t length, ProcStatCpu& out) noexcept {
  if (text == nullptr || length == 0) return ParseError::empty;
  const char* end = text + length;
  // The aggregate line is the first one on every kernel; accept it anywhere to be lenient.
  for (const char* line = text; line != end;) {
    const char* eol = line_end(line, end);
    if (starts_with(line, end, "cpu ")) {
      if (eol == nullptr) return ParseError::truncated;
      Cursor c{line + 4, eol};
      std::uint64_t fields[8] = {};
      for (std::size_t i = 0; i < 8; ++i) {
        const ParseError e = number(c, false, fields[i]);
        if (e == ParseError::missing_field && i >= 4) break;  // older kernels: fewer fields
        if (e != ParseError::ok) return e;
      }
      ProcStatCpu cpu;
      cpu.user = fields[0];
      cpu.nice = fields[1];
      cpu.system = fields[2];
      cpu.idle = fields[3];
      cpu.iowait = fields[4];
      cpu.irq = fields[5];
      cpu.softirq = fields[6];
      cpu.steal = fields[7];
      out = cpu;
      return ParseError::ok;
    }
    if (eol == nullptr) return ParseError::truncated;
    line = eol + 1;
  }
  return ParseError::missing_line;
}

ParseError parse_proc_pid_stat(const char* text, std::size_t length, ProcPidStat& out) noexcept {
  if (text == nullptr || length == 0) return ParseError::empty;
  const char* end = text + length;
  const char* eol = line_end(text, end);
  const char* limit = eol != nullptr ? eol : end;
  // "pid (comm) state ppid ...": the comm may hold ')' itself, so take the last one.
  const char* close = nullptr;
  for (const char* p = text; p != limit; ++p) {
    if (*p == ')') close = p;
  }
  if (close == nullptr) return eol != nullptr ? ParseError::missing_field : ParseError::truncated;
  if (eol == nullptr) return ParseError::truncated;
  Cursor c{close + 1, eol};
  c.skip_blanks();
  if (c.at_end()) return ParseError::missing_field;
  const char state = *c.pos++;
  if (!c.at_end() && *c.pos != ' ') return ParseError::bad_field;
  // After the state: ppid(4) pgrp session tty_nr tpgid flags minflt cminflt majflt
  // cmajflt(13) utime(14) stime(15).
  std::uint64_t value = 0;
  for (int field = 4; field <= 13; ++field) {
    const ParseError e = number(c, false, value);
    if (e != ParseError::ok) {
      // tty_nr and tpgid may be negative on some kernels' formats: accept a leading '-'.
      if (e == ParseError::bad_field && (field == 7 || field == 8) && !c.at_end() && *c.pos == '-') {
        ++c.pos;
        const ParseError again = number(c, false, value);
        if (again != ParseError::ok) return again;
        continue;
      }
      return e;
    }
  }
  ProcPidStat result;
  result.state = state;
  ParseError e = number(c, false, result.utime);
  if (e != ParseError::ok) return e;
  e = number(c, false, result.stime);
  if (e != ParseError::ok) return e;
  out = result;
  return ParseError::ok;
}

namespace {

// Finds the line "<key>:..." of a /proc/<pid>/status text: `value` then spans the rest of that
// line after the ':', and `line` is its 1-based number (the last line seen when the key is
// absent or its line is cut).
ParseError find_status_value(const char* text, std::size_t length, const char* key, Cursor& value,
                             std::size_t& line) noexcept {
  line = 0;
  if (text == nullptr || length == 0) return ParseError::empty;
  const char* end = text + length;
  for (const char* start = text; start != end;) {
    ++line;
    const char* eol = line_end(start, end);
    const char* p = start;
    const char* k = key;
    while (*k != '\0' && p != end && *p == *k) {
      ++p;
      ++k;
    }
    if (*k == '\0' && p != end && *p == ':') {
      if (eol == nullptr) return ParseError::truncated;
      value = Cursor{p + 1, eol};
      return ParseError::ok;
    }
    if (eol == nullptr) return ParseError::truncated;
    start = eol + 1;
  }
  return ParseError::missing_line;
}

}  // namespace

ParseError parse_status_field(const char* text, std::size_t length, const char* key, bool hex,
                              std::uint64_t& out) noexcept {
  Cursor c{nullptr, nullptr};
  std::size_t line = 0;
  ParseError e = find_status_value(text, length, key, c, line);
  if (e != ParseError::ok) return e;
  std::uint64_t value = 0;
  e = number(c, hex, value);
  if (e != ParseError::ok) return e;
  c.skip_blanks();
  if (!c.at_end()) return ParseError::bad_field;
  out = value;
  return ParseError::ok;
}

ParseError parse_status_kib(const char* text, std::size_t length, const char* key, std::uint64_t& bytes,
                            std::size_t& line) noexcept {
  Cursor c{nullptr, nullptr};
  ParseError e = find_status_value(text, length, key, c, line);
  if (e != ParseError::ok) return e;
  std::uint64_t kib = 0;
  e = number(c, false, kib);
  if (e != ParseError::ok) return e;
  c.skip_blanks();
  if (c.at_end()) return ParseError::missing_field;  // no unit
  if (!starts_with(c.pos, c.end, "kB")) return ParseError::bad_field;
  c.pos += 2;
  c.skip_blanks();
  if (!c.at_end()) return ParseError::bad_field;
  if (kib > (~std::uint64_t{0} >> 10)) return ParseError::bad_field;  // bytes over 64 bits
  bytes = kib << 10;
  return ParseError::ok;
}

ParseError parse_schedstat(const char* text, std::size_t length, SchedStat& out) noexcept {
  if (text == nullptr || length == 0) return ParseError::empty;
  const char* end = text + length;
  const char* eol = line_end(text, end);
  if (eol == nullptr) return ParseError::truncated;
  Cursor c{text, eol};
  SchedStat s;
  ParseError e = number(c, false, s.run_ns);
  if (e == ParseError::ok) e = number(c, false, s.wait_ns);
  if (e == ParseError::ok) e = number(c, false, s.slices);
  if (e != ParseError::ok) return e;
  out = s;
  return ParseError::ok;
}

namespace {

// One "0x"-prefixed hexadecimal field of the syscall file.
ParseError prefixed_hex(Cursor& c, std::uint64_t& out) noexcept {
  c.skip_blanks();
  if (c.at_end()) return ParseError::missing_field;
  if (c.end - c.pos < 2 || c.pos[0] != '0' || c.pos[1] != 'x') return ParseError::bad_field;
  c.pos += 2;
  if (c.at_end() || *c.pos == ' ' || *c.pos == '\t') return ParseError::bad_field;
  return number(c, true, out);
}

}  // namespace

ParseError parse_thread_syscall(const char* text, std::size_t length, ThreadSyscall& out) noexcept {
  if (text == nullptr || length == 0) return ParseError::empty;
  const char* end = text + length;
  const char* eol = line_end(text, end);
  if (eol == nullptr) return ParseError::truncated;
  Cursor c{text, eol};
  ThreadSyscall result;
  if (starts_with(text, eol, "running")) {
    c.pos += 7;
    c.skip_blanks();
    if (!c.at_end()) return ParseError::bad_field;
    out = result;
    return ParseError::ok;
  }
  c.skip_blanks();
  const bool negative = !c.at_end() && *c.pos == '-';
  if (negative) ++c.pos;
  std::uint64_t magnitude = 0;
  ParseError e = number(c, false, magnitude);
  if (e == ParseError::missing_field && negative) e = ParseError::bad_field;  // a lone '-'
  if (e != ParseError::ok) return e;
  if (magnitude > (negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1u)) return ParseError::bad_field;
  result.number = negative ? static_cast<std::int64_t>(0u - magnitude) : static_cast<std::int64_t>(magnitude);
  if (result.number >= 0) {
    for (std::uint64_t& arg : result.args) {
      e = prefixed_hex(c, arg);
      if (e != ParseError::ok) return e;
    }
  }
  e = prefixed_hex(c, result.sp);
  if (e == ParseError::ok) e = prefixed_hex(c, result.pc);
  if (e != ParseError::ok) return e;
  c.skip_blanks();
  if (!c.at_end()) return ParseError::bad_field;
  result.state = result.number >= 0 ? ThreadSyscall::State::in_syscall : ThreadSyscall::State::not_in_syscall;
  out = result;
  return ParseError::ok;
}

int read_small_file(const char* path, char* buffer, std::size_t size, std::size_t& length) noexcept {
  length = 0;
  if (size == 0) return EINVAL;
  int fd = -1;
  do {
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  int error = 0;
  while (length + 1 < size) {
    const ssize_t n = ::read(fd, buffer + length, size - 1 - length);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    if (n == 0) break;
    length += static_cast<std::size_t>(n);
  }
  buffer[length] = '\0';
  ::close(fd);
  return error;
}

bool read_proc_stat(ProcStatCpu& out) noexcept {
  // The aggregate line comes first; 4 KiB holds it on any machine (the per-CPU lines that
  // follow may be cut, which the parser does not mind).
  char buffer[4096];
  std::size_t length = 0;
  if (read_small_file("/proc/stat", buffer, sizeof buffer, length) != 0) return false;
  return parse_proc_stat(buffer, length, out) == ParseError::ok;
}

bool read_self_stat(ProcPidStat& out) noexcept {
  char buffer[1024];
  std::size_t length = 0;
  if (read_small_file("/proc/self/stat", buffer, sizeof buffer, length) != 0) return false;
  return parse_proc_pid_stat(buffer, length, out) == ParseError::ok;
}

bool read_tracer_pid(std::uint64_t& tracer_pid) noexcept {
  char buffer[4096];
  std::size_t length = 0;
  if (read_small_file("/proc/self/status", buffer, sizeof buffer, length) != 0) return false;
  return parse_status_field(buffer, length, "TracerPid", false, tracer_pid) == ParseError::ok;
}

bool read_thread_signals(pid_t tid, std::uint64_t& blocked, std::uint64_t& pending) noexcept {
  char path[64];
  detail::make_path(path, "/proc/self/task/", static_cast<std::uint64_t>(tid), "/status");
  char buffer[4096];
  std::size_t length = 0;
  if (read_small_file(path, buffer, sizeof buffer, length) != 0) return false;
  return parse_status_field(buffer, length, "SigBlk", true, blocked) == ParseError::ok &&
         parse_status_field(buffer, length, "SigPnd", true, pending) == ParseError::ok;
}

bool read_thread_syscall(pid_t tid, ThreadSyscall& out) noexcept {
  char path[64];
  detail::make_path(path, "/proc/self/task/", static_cast<std::uint64_t>(tid), "/syscall");
  char buffer[256];
  std::size_t length = 0;
  if (read_small_file(path, buffer, sizeof buffer, length) != 0) return false;
  return parse_thread_syscall(buffer, length, out) == ParseError::ok;
}

bool read_thread_schedstat(pid_t tid, SchedStat& out) noexcept {
  char path[64];
  detail::make_path(path, "/proc/self/task/", static_cast<std::uint64_t>(tid), "/schedstat");
  char buffer[128];
  std::size_t length = 0;
  if (read_small_file(path, buffer, sizeof buffer, length) != 0) return false;
  return parse_schedstat(buffer, length, out) == ParseError::ok;
}

}  // namespace loopcanary::port_linux
