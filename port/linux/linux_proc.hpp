// SPDX-License-Identifier: MIT
// /proc parsers and readers. The parsers are pure functions over a caller's buffer (no
// allocation, no stdio, no locale), so they run on a stack buffer in the watchdog thread and
// are tested against fixture files, including truncated and malformed content.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace loopcanary::port_linux {

/// What a parser found wrong, or ok.
enum class ParseError : std::uint8_t {
  ok = 0,
  empty,           ///< no content at all
  missing_line,    ///< the line or key the parser looks for is absent
  missing_field,   ///< the line ends before a required field
  bad_field,      ///< a field is malformed: not a number where one is expected, or over 64 bits
  truncated,       ///< the content ends inside the needed line (buffer too small or torn read)
};

/// "ok", "empty", ... Never null.
const char* describe(ParseError error) noexcept;

/// The aggregate "cpu" line of /proc/stat, in USER_HZ ticks. Fields a kernel does not print
/// (older kernels stop after idle or iowait) read as 0.
struct ProcStatCpu {
  std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                steal = 0;
  /// Time any CPU was not idle. Steal (the hypervisor ran someone else while we wanted the CPU)
  /// counts as busy: it is time the machine was not available to this system. Guest time is
  /// already inside user and nice.
  std::uint64_t busy() const noexcept { return user + nice + system + irq + softirq + steal; }
  /// busy() plus idle and iowait.
  std::uint64_t total() const noexcept { return busy() + idle + iowait; }
};

/// Parses the first "cpu " line of /proc/stat. At least user, nice, system and idle are needed.
ParseError parse_proc_stat(const char* text, std::size_t length, ProcStatCpu& out) noexcept;

/// Fields of /proc/<pid>/stat (or /proc/<pid>/task/<tid>/stat) the port uses.
struct ProcPidStat {
  char state = '?';           ///< R, S, D, Z, T, ...
  std::uint64_t utime = 0;    ///< user time, USER_HZ ticks
  std::uint64_t stime = 0;    ///< system time, USER_HZ ticks
};

/// Parses /proc/<pid>/stat. The command name may hold spaces and parentheses: fields are
/// counted from the last ')'.
ParseError parse_proc_pid_stat(const char* text, std::size_t length, ProcPidStat& out) noexcept;

/// Finds "<key>:\t<value>" in a /proc/<pid>/status text and parses the value as decimal
/// (`hex` false) or hexadecimal (`hex` true): TracerPid (decimal), SigBlk (hex mask), ...
ParseError parse_status_field(const char* text, std::size_t length, const char* key, bool hex,
                              std::uint64_t& out) noexcept;

/// Parses /proc/<pid>/task/<tid>/schedstat: "<on-cpu ns> <run-queue wait ns> <timeslices>".
struct SchedStat {
  std::uint64_t run_ns = 0;
  std::uint64_t wait_ns = 0;
  std::uint64_t slices = 0;
};
ParseError parse_schedstat(const char* text, std::size_t length, SchedStat& out) noexcept;

/// Reads a whole small file (a /proc entry) into `buffer` with open/read/close, no stdio.
/// Sets `length` to the bytes read; the content is NUL-terminated when it fits, and a file
/// longer than `size - 1` bytes is cut (the parsers then report `truncated` if they needed
/// the rest). Returns 0 or the errno of the failing call. Async-signal-safe.
int read_small_file(const char* path, char* buffer, std::size_t size, std::size_t& length) noexcept;

/// Convenience readers for the live system, on stack buffers. Return false when the file
/// cannot be read or parsed.
bool read_proc_stat(ProcStatCpu& out) noexcept;
bool read_self_stat(ProcPidStat& out) noexcept;
bool read_tracer_pid(std::uint64_t& tracer_pid) noexcept;
/// SigBlk and SigPnd of thread `tid` of this process: the signals it blocks and those pending
/// for it (bit n-1 = signal n). A signal both blocked and pending is one the thread refuses; a
/// signal blocked but not pending is usually one whose handler runs right now.
bool read_thread_signals(pid_t tid, std::uint64_t& blocked, std::uint64_t& pending) noexcept;
/// Scheduler statistics of thread `tid` of this process (needs CONFIG_SCHED_INFO).
bool read_thread_schedstat(pid_t tid, SchedStat& out) noexcept;

}  // namespace loopcanary::port_linux
