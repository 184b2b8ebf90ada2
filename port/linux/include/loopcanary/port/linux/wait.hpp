// SPDX-License-Identifier: MIT
// What a thread of this process that is off the CPU waits on (loopcanary/wait.hpp's
// WaitObject), read from /proc/self/task/<tid>/ (its state, its system call and arguments, its
// kernel wait channel) and, where the arguments point into memory, from that memory through
// process_vm_readv: an address that holds something else, or nothing, gives an unknown, never
// a fault. docs/porting-linux.md ("Wait objects") gives what each kind shows and its limits.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "loopcanary/config.hpp"
#include "loopcanary/port/linux/proc.hpp"
#include "loopcanary/wait.hpp"

namespace loopcanary::port_linux {

/// Reads what thread `tid` of this process waits on now into `out` (reset first):
///   - a futex wait: a glibc mutex (`std::mutex`, `std::recursive_mutex`, `pthread_mutex_t`;
///     priority-inheritance ones from the lock word) with its owner's thread id and name when
///     the lock holds a live thread of this process; a condition variable or semaphore; another
///     futex word;
///   - a descriptor wait (read, write, recv, send, accept, connect, poll, select, epoll, fsync,
///     flock, ...): what the descriptor is (path, socket with its addresses, pipe);
///   - a sleep with its requested length; an uninterruptible sleep with its wait channel;
///   - any other system call by number and name.
/// A thread on a CPU or runnable is `none`. Returns false when the thread's state or system call
/// cannot be read (the thread is gone; a kernel without /proc/<tid>/syscall), `out` then `none`.
/// Watchdog context (any thread but `tid` itself); allocates nothing; costs a few system calls
/// (docs/benchmarks.md). Not async-signal-safe.
bool read_wait_object(pid_t tid, WaitObject& out) noexcept;
/// The same, with the thread's system call as the reading found it into `call` (reset first):
/// state running for a thread on a CPU or runnable (its syscall file is then not read).
bool read_wait_object(pid_t tid, WaitObject& out, ThreadSyscall& call) noexcept;

/// One link of a chain of waits: a thread, what it waits on, and its system call as that reading
/// found it (what a sample of the thread starts from).
struct WaitLink {
  pid_t tid = 0;
  WaitObject wait;
  ThreadSyscall call;
};

/// Follows the holders from thread `tid`: `tid`'s wait, then, while that wait is a mutex with a
/// known owner, the owner's wait, and so on, into `links` (at most `max`). Returns the links
/// written (0 when `tid`'s wait cannot be read). `cycle` is true when the last link's owner is a
/// thread already in the chain: a deadlock, whose threads are the links from that one on. Each
/// link costs one read_wait_object. Watchdog context (no thread of the chain may call it);
/// allocates nothing.
std::size_t read_wait_chain(pid_t tid, WaitLink* links, std::size_t max, bool& cycle) noexcept;

/// Bytes above a parked thread's stack pointer that sample_parked_thread may read: the stack
/// bounds of a thread the port did not attach are not known, so the walk is bounded by this.
inline constexpr std::size_t kParkedStackBytes = 64 * 1024;

/// Samples the stack of thread `tid` of this process without a signal, while it is parked in a
/// system call (a lock holder that writes, syncs, sleeps or waits itself): its program counter,
/// then the return addresses above its stack pointer, as the port samples a parked loop thread
/// (docs/porting-linux.md, "Stack capture"), reading at most kParkedStackBytes above the stack
/// pointer through process_vm_readv. Writes at most `max` entries to `pcs`, innermost first;
/// returns how many: 0 when the thread is on a CPU or not in a system call (a signal sample is
/// the port's way there), is gone, or the port's capture slot is busy. Watchdog context;
/// allocates nothing.
std::size_t sample_parked_thread(pid_t tid, Frame* pcs, std::size_t max) noexcept;
/// The same from `call`, thread `tid`'s syscall file as read_thread_syscall just read it: 0 unless
/// `call.state` is in_syscall.
std::size_t sample_parked_thread(pid_t tid, const ThreadSyscall& call, Frame* pcs, std::size_t max) noexcept;

/// True when the lock `lock` (a mutex reading with an owner, from read_wait_object) still records
/// `lock.owner` as its holder: glibc's owner field, or the owner bits of a priority-inheritance
/// lock word, read through process_vm_readv (a bad address is false, never a fault). What the
/// port checks after it sampled the holder, so that a stack taken after the lock was released is
/// dropped. Watchdog context; allocates nothing.
bool lock_still_held(const WaitObject& lock) noexcept;

/// The name of thread `tid` of this process (/proc/self/task/<tid>/comm, at most 15 bytes) into
/// `name`, NUL-terminated; false (and "") when the thread is gone. Any thread; allocates nothing.
bool read_thread_name(pid_t tid, char (&name)[kThreadNameMax]) noexcept;

/// The name of system call `number` on this architecture ("read", "futex", ...), or nullptr for
/// one the port does not name. Any context.
const char* syscall_name(std::int64_t number) noexcept;

}  // namespace loopcanary::port_linux
