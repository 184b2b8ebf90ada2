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

/// Finds "<key>:<blanks><decimal> kB" in a /proc/<pid>/status text (VmRSS, VmHWM, ...) and
/// sets `bytes` to the value times 1024 (the kernel's "kB" is KiB). `line` is set to the
/// 1-based line of the key, or to the last line read when the key is absent (missing_line) or
/// the text ends inside the key's line (truncated); 0 for empty content. Errors: no unit after
/// the number is missing_field; another unit, anything after it, a value that is not decimal
/// or a byte count over 64 bits is bad_field. `bytes` is left untouched on error. Any context
/// (pure function).
ParseError parse_status_kib(const char* text, std::size_t length, const char* key, std::uint64_t& bytes,
                            std::size_t& line) noexcept;

/// Parses /proc/<pid>/task/<tid>/schedstat: "<on-cpu ns> <run-queue wait ns> <timeslices>".
struct SchedStat {
  std::uint64_t run_ns = 0;
  std::uint64_t wait_ns = 0;
  std::uint64_t slices = 0;
};
ParseError parse_schedstat(const char* text, std::size_t length, SchedStat& out) noexcept;

/// /proc/<pid>/task/<tid>/syscall: where a thread that is off the CPU sits. The kernel writes
/// "running" for a thread on a CPU (or one it could not look at), "<nr> 0x<sp> 0x<pc>" with a
/// negative nr for one stopped outside a system call (an interrupt, a fault), and
/// "<nr> 0x<a0> ... 0x<a5> 0x<sp> 0x<pc>" for one inside system call <nr>.
struct ThreadSyscall {
  enum class State : std::uint8_t {
    running,         ///< on a CPU: no registers given
    not_in_syscall,  ///< stopped outside a system call: sp and pc given, no arguments
    in_syscall,      ///< parked in system call `number`: arguments, sp and pc given
  };
  State state = State::running;
  std::int64_t number = -1;        ///< system call number (architecture's table); < 0 outside one
  std::uint64_t args[6] = {};      ///< its arguments (in_syscall only)
  std::uint64_t sp = 0;            ///< user stack pointer
  std::uint64_t pc = 0;            ///< user program counter (after the system call instruction)
};
/// Parses the syscall file. Numbers are decimal (nr, optionally negative) and "0x"-prefixed
/// hexadecimal (the rest); a line with another field count is missing_field or bad_field.
ParseError parse_thread_syscall(const char* text, std::size_t length, ThreadSyscall& out) noexcept;

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
/// Where thread `tid` of this process sits (/proc/self/task/<tid>/syscall); false when the
/// file cannot be read (no CONFIG_HAVE_ARCH_TRACEHOOK, the thread is gone) or parsed.
bool read_thread_syscall(pid_t tid, ThreadSyscall& out) noexcept;
/// Scheduler statistics of thread `tid` of this process (needs CONFIG_SCHED_INFO).
bool read_thread_schedstat(pid_t tid, SchedStat& out) noexcept;

}  // namespace loopcanary::port_linux
