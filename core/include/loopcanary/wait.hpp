// SPDX-License-Identifier: MIT
// What a loop thread that is off the CPU waits on, as a port reads it while a dispatch runs
// long: a lock and the thread that holds it, a descriptor and what it is, a sleep and its
// length, the kernel's wait channel of an uninterruptible sleep, or the system call. Plain
// data of a fixed size; a port fills it (the Linux port: loopcanary/port/linux/wait.hpp).
// WaitReading adds what the watchdog keeps with it: the holder's stack, the chain of holders.
// Header only; any context.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loopcanary/config.hpp"

namespace loopcanary {

/// Bytes of WaitObject::text, its NUL included. Longer descriptions are cut and end in "...".
inline constexpr std::size_t kWaitTextMax = 64;
/// Bytes of WaitObject::owner_name, its NUL included (Linux thread names are at most 15 bytes).
inline constexpr std::size_t kThreadNameMax = 16;

/// The kinds of wait. Which WaitObject members each one sets is given beside it; the others are
/// left at their defaults (0, -1, "").
enum class WaitKind : std::uint8_t {
  none = 0,   ///< not waiting: on a CPU or runnable, or nothing could be read
  mutex,      ///< a lock: `address` (the lock word), `owner` and `owner_name` when the lock names its holder
  condition,  ///< a condition variable (or a semaphore: the same wait): `address`; no owner exists
  futex,      ///< another futex word: `address`
  file,       ///< a descriptor of a file or device: `fd`, `text` its path
  socket,     ///< a socket: `fd`, `text` "<protocol> <local> > <peer>" (a listening socket: no peer)
  pipe,       ///< a pipe or FIFO: `fd`, `text` "pipe:[inode]" or the FIFO's path
  poll,       ///< several descriptors (poll, select, epoll): `fd` the first one (epoll: its
              ///< instance), `value` their count (0 for epoll), `text` the first one's description
  sleep,      ///< a sleep: `value` the requested ns (an absolute deadline: the ns left to it)
  disk,       ///< uninterruptible sleep (disk I/O, a page fault): `text` the kernel's wait channel
              ///< where readable
  syscall,    ///< any other system call: `value` its number, `text` its name where known
};

/// "none", "mutex", "condition", "futex", "file", "socket", "pipe", "poll", "sleep", "disk",
/// "syscall"; "unknown_wait" outside the enumeration.
constexpr const char* to_string(WaitKind kind) noexcept {
  switch (kind) {
    case WaitKind::none: return "none";
    case WaitKind::mutex: return "mutex";
    case WaitKind::condition: return "condition";
    case WaitKind::futex: return "futex";
    case WaitKind::file: return "file";
    case WaitKind::socket: return "socket";
    case WaitKind::pipe: return "pipe";
    case WaitKind::poll: return "poll";
    case WaitKind::sleep: return "sleep";
    case WaitKind::disk: return "disk";
    case WaitKind::syscall: return "syscall";
  }
  return "unknown_wait";
}

/// One reading of what a thread waits on.
struct WaitObject {
  WaitKind kind = WaitKind::none;
  std::int32_t fd = -1;               ///< the descriptor (file, socket, pipe, poll); -1 otherwise
  std::uint64_t address = 0;          ///< the futex word's address (mutex, condition, futex)
  std::uint64_t value = 0;            ///< sleep: ns; poll: descriptors; syscall: its number
  std::uint32_t owner = 0;            ///< mutex: the holder's thread id; 0 when none or not known
  char owner_name[kThreadNameMax] = {};  ///< mutex: the holder's thread name; "" when not known
  char text[kWaitTextMax] = {};       ///< the description the kind names; NUL-terminated
};

/// Further links a wait reading keeps of a chain of holders: the holder waits on a lock whose
/// holder waits on another, and so on.
inline constexpr std::size_t kWaitChainMax = 3;

/// One further link of a chain of holders: the lock the previous holder waits on, and its holder.
struct WaitHop {
  std::uint64_t address = 0;             ///< the lock word the previous holder waits on
  std::uint32_t owner = 0;               ///< the thread id of its holder; 0 when not known
  char owner_name[kThreadNameMax] = {};  ///< its name; "" when not known
};

/// One reading of what a loop's thread waits on (Hal::read_wait), taken with a stack sample while
/// the thread was off the CPU: the object, and for a lock the holder's stack and, when the holder
/// waits on a lock itself, the chain of holders, all read in the same poll.
struct WaitReading {
  WaitObject object;  ///< what it waited on; kind none: not waiting, or not read
  /// The watched loop whose thread is object.owner (MonitorConfig::name; set by the watchdog
  /// through Hal::thread_id), null when the holder is no loop of the watchdog or not known.
  const char* owner_loop = nullptr;
  std::uint8_t holder_pc_count = 0;  ///< holder_frames[0, holder_pc_count): the holder's stack
  /// Program counters of object.owner's stack, innermost first (the first is its current
  /// instruction, the others return addresses); none when the port could not sample it.
  Frame holder_frames[kMaxFrames] = {};
  /// When the holder itself waits on a lock: that lock and its holder, then what that holder
  /// waits on, and so on: chain[0, chain_count), at most kWaitChainMax.
  std::uint8_t chain_count = 0;
  WaitHop chain[kWaitChainMax] = {};
  /// The chain comes back to a thread already in it (the loop's own thread, or a holder before):
  /// a deadlock, whose last hop's owner is that thread.
  bool deadlock = false;
};

}  // namespace loopcanary
