// SPDX-License-Identifier: MIT
// read_wait_object: what a thread of this process that is off the CPU waits on, from its /proc
// entries and, through process_vm_readv, the memory its system call's arguments point to.
#include "loopcanary/port/linux/wait.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "linux_capture.hpp"
#include "loopcanary/format.hpp"

namespace loopcanary::port_linux {
namespace {

// ---- text -----------------------------------------------------------------------------------

// The core's TextWriter on a fixed buffer, chained, ended when it goes: NUL-terminated, and when
// something did not fit, the last characters "..." (finish()'s "[truncated]" marker is for
// whole records).
class Text {
 public:
  template <std::size_t N>
  explicit Text(char (&buffer)[N]) noexcept : w_(buffer, N), s_(buffer), size_(N) {
    static_assert(N >= 4, "room for the cut marker");
  }
  ~Text() {
    s_[w_.length()] = '\0';
    if (w_.overflowed()) std::memcpy(s_ + size_ - 4, "...", 4);
  }
  Text(const Text&) = delete;
  Text& operator=(const Text&) = delete;

  Text& put(char c) noexcept {
    w_.put(c);
    return *this;
  }
  Text& put(const char* t) noexcept {
    w_.puts(t);
    return *this;
  }
  Text& number(std::uint64_t v) noexcept {
    w_.u64(v);
    return *this;
  }

 private:
  TextWriter w_;
  char* s_;
  std::size_t size_;
};

// ---- /proc ----------------------------------------------------------------------------------

// Thread `tid`'s file `name` (/proc/self/task/<tid>/<name>) into `buffer`, NUL-terminated.
// False when it cannot be read.
template <std::size_t N>
bool read_task_file(pid_t tid, const char* name, char (&buffer)[N], std::size_t& length) noexcept {
  char path[64];
  detail::make_path(path, "/proc/self/task/", static_cast<std::uint64_t>(tid), name);
  return read_small_file(path, buffer, N, length) == 0;
}

// A one-line file's text without its newline: the new length.
std::size_t without_newline(char* text, std::size_t length) noexcept {
  if (length > 0 && text[length - 1] == '\n') text[--length] = '\0';
  return length;
}

bool read_thread_state(pid_t tid, char& state) noexcept {
  char buffer[1024];
  std::size_t length = 0;
  ProcPidStat stat;
  if (!read_task_file(tid, "/stat", buffer, length) || parse_proc_pid_stat(buffer, length, stat) != ParseError::ok) {
    return false;
  }
  state = stat.state;
  return true;
}

// ---- descriptors ----------------------------------------------------------------------------

void put_address(Text& t, const sockaddr_storage& a, socklen_t length) noexcept {
  char host[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET && length >= sizeof(sockaddr_in)) {
    sockaddr_in in{};
    std::memcpy(&in, &a, sizeof in);
    inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    t.put(host).put(':').number(ntohs(in.sin_port));
  } else if (a.ss_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, &a, sizeof in6);
    inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
    t.put('[').put(host).put("]:").number(ntohs(in6.sin6_port));
  } else if (a.ss_family == AF_UNIX) {
    // The path (not always NUL-terminated in the address) as a string.
    char path[sizeof(sockaddr_un::sun_path) + 1] = {};
    const std::size_t at = offsetof(sockaddr_un, sun_path);
    const std::size_t path_length = length > at ? length - at : 0;
    std::memcpy(path, reinterpret_cast<const char*>(&a) + at, path_length < sizeof path - 1 ? path_length : sizeof path - 1);
    if (path_length == 0) {
      t.put("(unnamed)");
    } else if (path[0] == '\0') {
      t.put('@').put(path + 1);  // abstract
    } else {
      t.put(path);
    }
  } else {
    t.put("family ").number(a.ss_family);
  }
}

// "<protocol> <local> > <peer>" of socket `fd` (no peer: "<protocol> <local>").
void describe_socket(int fd, Text& t) noexcept {
  int type = 0;
  int protocol = 0;
  socklen_t size = sizeof type;
  getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size);
  size = sizeof protocol;
  getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &size);
  sockaddr_storage local{};
  socklen_t local_length = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0) local_length = 0;
  if (local.ss_family == AF_UNIX) {
    t.put(type == SOCK_DGRAM ? "unix-dgram " : "unix ");
  } else if (protocol == IPPROTO_TCP) {
    t.put("tcp ");
  } else if (protocol == IPPROTO_UDP) {
    t.put("udp ");
  } else {
    t.put("socket ");
  }
  put_address(t, local, local_length);
  sockaddr_storage peer{};
  socklen_t peer_length = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) == 0) {
    t.put(" > ");
    put_address(t, peer, peer_length);
  }
}

// What descriptor `fd` is: its kind (file, socket or pipe) and description in `out`.
void describe_fd(int fd, WaitObject& out) noexcept {
  out.fd = fd;
  char path[64];
  detail::make_path(path, "/proc/self/fd/", static_cast<std::uint64_t>(fd), "");
  char target[256];
  const ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) {
    out.kind = WaitKind::file;
    Text(out.text).put("fd ").number(static_cast<std::uint64_t>(fd)).put(" (closed)");
    return;
  }
  target[n] = '\0';
  if (std::strncmp(target, "socket:", 7) == 0) {
    out.kind = WaitKind::socket;
    Text t(out.text);
    describe_socket(fd, t);
    return;
  }
  struct stat st {};
  const bool fifo = std::strncmp(target, "pipe:", 5) == 0 || (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode));
  out.kind = fifo ? WaitKind::pipe : WaitKind::file;
  Text(out.text).put(target);
}

// A multi-descriptor wait: one descriptor is described as itself; several as `poll` with the
// first one's description and their count.
void describe_fds(int first, std::uint64_t count, WaitObject& out) noexcept {
  describe_fd(first, out);
  if (count != 1) {
    out.kind = WaitKind::poll;
    out.value = count;
  }
}

// poll/ppoll(fds, nfds, ...): the first entry's descriptor.
bool poll_wait(std::uint64_t fds, std::uint64_t nfds, WaitObject& out) noexcept {
  pollfd first{};
  if (nfds == 0 || !detail::read_own_memory(static_cast<std::uintptr_t>(fds), &first, sizeof first)) return false;
  describe_fds(first.fd, nfds, out);
  return true;
}

// select/pselect6(nfds, readfds, writefds, exceptfds, ...): the set descriptors.
bool select_wait(const std::uint64_t (&args)[6], WaitObject& out) noexcept {
  const std::uint64_t nfds = args[0] < FD_SETSIZE ? args[0] : FD_SETSIZE;
  int first = -1;
  std::uint64_t count = 0;
  for (int set = 1; set <= 3; ++set) {
    unsigned char bits[FD_SETSIZE / 8] = {};
    const std::size_t bytes = static_cast<std::size_t>((nfds + 7) / 8);
    if (args[set] == 0 || bytes == 0 || !detail::read_own_memory(static_cast<std::uintptr_t>(args[set]), bits, bytes)) {
      continue;
    }
    for (std::uint64_t fd = 0; fd < nfds; ++fd) {
      if ((bits[fd / 8] & (1u << (fd % 8))) == 0) continue;
      if (first < 0) first = static_cast<int>(fd);
      ++count;
    }
  }
  if (first < 0) return false;
  describe_fds(first, count, out);
  return true;
}

// ---- futexes --------------------------------------------------------------------------------

// The head of glibc's pthread_mutex_t (struct __pthread_mutex_s, the same on x86-64 and
// AArch64): the lock word the waiter's futex points at, then the owner's thread id.
struct GlibcMutexHead {
  std::int32_t lock;
  std::uint32_t count;
  std::int32_t owner;
  std::uint32_t users;
  std::int32_t kind;
};
#if defined(__GLIBC__)
static_assert(offsetof(pthread_mutex_t, __data.__lock) == offsetof(GlibcMutexHead, lock) &&
                  offsetof(pthread_mutex_t, __data.__owner) == offsetof(GlibcMutexHead, owner) &&
                  offsetof(pthread_mutex_t, __data.__kind) == offsetof(GlibcMutexHead, kind),
              "glibc's mutex layout");
#endif
// The kinds glibc gives a mutex: the type (0..3) and its flags (robust, priority inheritance,
// priority protection, process-shared, elision, no elision).
constexpr std::int32_t kGlibcMutexKindBits = 0x3 | 0x10 | 0x20 | 0x40 | 0x80 | 0x100 | 0x200;

constexpr std::uint32_t kFutexTidMask = 0x3FFFFFFFu;  // FUTEX_TID_MASK: the owner in a PI lock word
constexpr std::uint64_t kFutexLockPi2 = 13;           // FUTEX_LOCK_PI2 (Linux 5.14), not in every header

// `owner` as the mutex's holder when it is a live thread of this process; its name with it.
void name_owner(std::uint32_t owner, WaitObject& out) noexcept {
  char name[kThreadNameMax];
  if (owner == 0 || owner > 0x3FFFFFFFu || !read_thread_name(static_cast<pid_t>(owner), name)) return;
  out.owner = owner;
  std::memcpy(out.owner_name, name, sizeof name);
}

// The holder of the mutex whose lock word is at `address`, as the lock records it: for a
// priority-inheritance lock the word itself, else glibc's owner field, read only when the head
// looks like a held glibc mutex.
std::uint32_t mutex_owner(std::uint64_t address, bool pi) noexcept {
  GlibcMutexHead head{};
  if (pi) {
    std::uint32_t word = 0;
    if (!detail::read_own_memory(static_cast<std::uintptr_t>(address), &word, sizeof word)) return 0;
    return word & kFutexTidMask;
  }
  if (!detail::read_own_memory(static_cast<std::uintptr_t>(address), &head, sizeof head)) return 0;
  if (head.lock == 0 || head.owner <= 0 || (head.kind & ~kGlibcMutexKindBits) != 0) return 0;
  return static_cast<std::uint32_t>(head.owner);
}

// futex(uaddr, op, val, ...): a mutex (glibc waits on a contended lock word with the value 2;
// a priority-inheritance lock), a condition variable or semaphore (glibc's bitset wait for 0),
// or another word.
void futex_wait(pid_t tid, const ThreadSyscall& call, WaitObject& out) noexcept {
  const std::uint64_t command = call.args[1] & static_cast<std::uint32_t>(FUTEX_CMD_MASK);
  const auto expected = static_cast<std::uint32_t>(call.args[2]);
  out.address = call.args[0];
  const bool pi = command == FUTEX_LOCK_PI || command == kFutexLockPi2;
  const bool waits = command == FUTEX_WAIT || command == FUTEX_WAIT_BITSET;
  if (pi || (waits && expected == 2)) {
    out.kind = WaitKind::mutex;
    const std::uint32_t owner = mutex_owner(out.address, pi);
    if (owner == 0 || owner == static_cast<std::uint32_t>(tid)) return;
    // The same owner after its name was read: else the lock changed hands meanwhile and the
    // name could be of another thread that reused the id.
    name_owner(owner, out);
    if (mutex_owner(out.address, pi) != owner) {
      out.owner = 0;
      out.owner_name[0] = '\0';
    }
    return;
  }
  out.kind = (command == FUTEX_WAIT_BITSET && expected == 0) || command == FUTEX_WAIT_REQUEUE_PI ? WaitKind::condition
                                                                                                 : WaitKind::futex;
}

// ---- sleeps ---------------------------------------------------------------------------------

std::uint64_t ns_of(const timespec& t) noexcept {
  if (t.tv_sec < 0 || t.tv_nsec < 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// The requested length at `request` (a timespec); for an absolute deadline on `clock`, the
// time left to it.
void sleep_wait(std::uint64_t request, bool absolute, clockid_t clock, WaitObject& out) noexcept {
  out.kind = WaitKind::sleep;
  timespec t{};
  if (!detail::read_own_memory(static_cast<std::uintptr_t>(request), &t, sizeof t)) return;
  out.value = ns_of(t);
  timespec now{};
  if (absolute && clock_gettime(clock, &now) == 0) {
    const std::uint64_t at = ns_of(now);
    out.value = out.value > at ? out.value - at : 0;
  }
}

// ---- system calls ---------------------------------------------------------------------------

struct SyscallName {
  long number;
  const char* name;
};
#define LOOPCANARY_SYSCALL(name) {SYS_##name, #name},
constexpr SyscallName kSyscallNames[] = {
    LOOPCANARY_SYSCALL(read) LOOPCANARY_SYSCALL(write) LOOPCANARY_SYSCALL(readv) LOOPCANARY_SYSCALL(writev)
    LOOPCANARY_SYSCALL(pread64) LOOPCANARY_SYSCALL(pwrite64) LOOPCANARY_SYSCALL(preadv) LOOPCANARY_SYSCALL(pwritev)
    LOOPCANARY_SYSCALL(preadv2) LOOPCANARY_SYSCALL(pwritev2) LOOPCANARY_SYSCALL(recvfrom) LOOPCANARY_SYSCALL(recvmsg)
    LOOPCANARY_SYSCALL(recvmmsg) LOOPCANARY_SYSCALL(sendto) LOOPCANARY_SYSCALL(sendmsg) LOOPCANARY_SYSCALL(sendmmsg)
    LOOPCANARY_SYSCALL(accept) LOOPCANARY_SYSCALL(accept4) LOOPCANARY_SYSCALL(connect) LOOPCANARY_SYSCALL(fsync)
    LOOPCANARY_SYSCALL(fdatasync) LOOPCANARY_SYSCALL(sync_file_range) LOOPCANARY_SYSCALL(flock)
    LOOPCANARY_SYSCALL(fcntl) LOOPCANARY_SYSCALL(ioctl) LOOPCANARY_SYSCALL(sendfile) LOOPCANARY_SYSCALL(splice)
    LOOPCANARY_SYSCALL(io_uring_enter) LOOPCANARY_SYSCALL(io_getevents) LOOPCANARY_SYSCALL(ppoll)
    LOOPCANARY_SYSCALL(pselect6) LOOPCANARY_SYSCALL(epoll_pwait) LOOPCANARY_SYSCALL(futex)
    LOOPCANARY_SYSCALL(clock_nanosleep) LOOPCANARY_SYSCALL(nanosleep) LOOPCANARY_SYSCALL(wait4)
    LOOPCANARY_SYSCALL(waitid) LOOPCANARY_SYSCALL(rt_sigtimedwait) LOOPCANARY_SYSCALL(rt_sigsuspend)
    LOOPCANARY_SYSCALL(msgrcv) LOOPCANARY_SYSCALL(msgsnd) LOOPCANARY_SYSCALL(semtimedop) LOOPCANARY_SYSCALL(mq_timedreceive)
    LOOPCANARY_SYSCALL(mq_timedsend) LOOPCANARY_SYSCALL(openat) LOOPCANARY_SYSCALL(close) LOOPCANARY_SYSCALL(mmap)
    LOOPCANARY_SYSCALL(munmap) LOOPCANARY_SYSCALL(mprotect) LOOPCANARY_SYSCALL(madvise) LOOPCANARY_SYSCALL(msync)
    LOOPCANARY_SYSCALL(getrandom) LOOPCANARY_SYSCALL(sched_yield) LOOPCANARY_SYSCALL(membarrier)
#if defined(SYS_poll)
    LOOPCANARY_SYSCALL(poll) LOOPCANARY_SYSCALL(select) LOOPCANARY_SYSCALL(epoll_wait) LOOPCANARY_SYSCALL(pause)
    LOOPCANARY_SYSCALL(open)
#endif
#if defined(SYS_epoll_pwait2)
    LOOPCANARY_SYSCALL(epoll_pwait2)
#endif
#if defined(SYS_futex_waitv)
    LOOPCANARY_SYSCALL(futex_waitv)
#endif
};
#undef LOOPCANARY_SYSCALL

// System calls whose first argument is the descriptor they wait on.
constexpr long kFdCalls[] = {
    SYS_read,     SYS_write,    SYS_readv,           SYS_writev,  SYS_pread64,  SYS_pwrite64,       SYS_preadv,
    SYS_pwritev,  SYS_preadv2,  SYS_pwritev2,        SYS_recvfrom, SYS_recvmsg, SYS_recvmmsg,       SYS_sendto,
    SYS_sendmsg,  SYS_sendmmsg, SYS_accept,          SYS_accept4, SYS_connect,  SYS_fsync,          SYS_fdatasync,
    SYS_sync_file_range, SYS_flock, SYS_fcntl,       SYS_ioctl,   SYS_splice,   SYS_io_uring_enter,
};

bool is_fd_call(std::int64_t number) noexcept {
  for (long n : kFdCalls) {
    if (n == number) return true;
  }
  return false;
}

// A thread parked in system call `call` (state S).
void syscall_wait(pid_t tid, const ThreadSyscall& call, WaitObject& out) noexcept {
  const std::int64_t nr = call.number;
  const std::uint64_t* a = call.args;
  if (nr == SYS_futex) return futex_wait(tid, call, out);
  if (is_fd_call(nr)) return describe_fd(static_cast<int>(a[0]), out);
  if (nr == SYS_ppoll && poll_wait(a[0], a[1], out)) return;
  if (nr == SYS_pselect6 && select_wait(call.args, out)) return;
#if defined(SYS_poll)
  if (nr == SYS_poll && poll_wait(a[0], a[1], out)) return;
  if (nr == SYS_select && select_wait(call.args, out)) return;
#endif
  bool epoll = nr == SYS_epoll_pwait;
#if defined(SYS_poll)
  epoll = epoll || nr == SYS_epoll_wait;
#endif
#if defined(SYS_epoll_pwait2)
  epoll = epoll || nr == SYS_epoll_pwait2;
#endif
  if (epoll) {
    describe_fds(static_cast<int>(a[0]), 0, out);
    return;
  }
  if (nr == SYS_nanosleep) return sleep_wait(a[0], false, CLOCK_MONOTONIC, out);
  if (nr == SYS_clock_nanosleep) {
    return sleep_wait(a[2], (a[1] & TIMER_ABSTIME) != 0, static_cast<clockid_t>(a[0]), out);
  }
  out.kind = WaitKind::syscall;
  out.value = static_cast<std::uint64_t>(nr);
  const char* name = syscall_name(nr);
  if (name != nullptr) {
    Text(out.text).put(name);
  } else {
    Text(out.text).put("syscall ").number(static_cast<std::uint64_t>(nr));
  }
}

}  // namespace

const char* syscall_name(std::int64_t number) noexcept {
  for (const SyscallName& s : kSyscallNames) {
    if (s.number == number) return s.name;
  }
  return nullptr;
}

bool read_thread_name(pid_t tid, char (&name)[kThreadNameMax]) noexcept {
  char buffer[64];
  std::size_t length = 0;
  name[0] = '\0';
  if (!read_task_file(tid, "/comm", buffer, length)) return false;
  without_newline(buffer, length);
  Text(name).put(buffer);  // at most 15 bytes: the kernel's limit
  return true;
}

bool read_wait_object(pid_t tid, WaitObject& out) noexcept {
  ThreadSyscall call;
  return read_wait_object(tid, out, call);
}

bool read_wait_object(pid_t tid, WaitObject& out, ThreadSyscall& call) noexcept {
  out = WaitObject{};
  call = ThreadSyscall{};
  char state = '?';
  if (!read_thread_state(tid, state) || state == 'Z' || state == 'X') return false;
  if (state == 'R') return true;  // on a CPU or runnable: not waiting
  if (!read_thread_syscall(tid, call)) return false;
  if (state == 'D') {
    // Uninterruptible: disk I/O or a page fault, named by the kernel's wait channel ("0" when
    // the kernel hides it).
    out.kind = WaitKind::disk;
    char wchan[64];
    std::size_t length = 0;
    if (read_task_file(tid, "/wchan", wchan, length)) length = without_newline(wchan, length);
    if (length > 0 && std::strcmp(wchan, "0") != 0) Text(out.text).put(wchan);
    return true;
  }
  if (call.state == ThreadSyscall::State::in_syscall) syscall_wait(tid, call, out);
  return true;
}

std::size_t sample_parked_thread(pid_t tid, Frame* pcs, std::size_t max) noexcept {
  ThreadSyscall call;
  return max != 0 && read_thread_syscall(tid, call) ? sample_parked_thread(tid, call, pcs, max) : 0;
}

std::size_t sample_parked_thread(pid_t tid, const ThreadSyscall& call, Frame* pcs, std::size_t max) noexcept {
  if (max == 0 || call.state != ThreadSyscall::State::in_syscall) return 0;
  detail::CaptureRequest request;
  request.tid = tid;
  request.stack_low = static_cast<std::uintptr_t>(call.sp);
  request.stack_high = static_cast<std::uintptr_t>(call.sp) + kParkedStackBytes;
  request.max = max;
  std::size_t count = 0;
  if (detail::capture_parked(request, static_cast<std::uintptr_t>(call.sp), static_cast<std::uintptr_t>(call.pc), pcs,
                             count) != detail::CaptureOutcome::answered) {
    return 0;
  }
  return count;
}

bool lock_still_held(const WaitObject& lock) noexcept {
  return lock.kind == WaitKind::mutex && lock.owner != 0 &&
         (mutex_owner(lock.address, false) == lock.owner || mutex_owner(lock.address, true) == lock.owner);
}

std::size_t read_wait_chain(pid_t tid, WaitLink* links, std::size_t max, bool& cycle) noexcept {
  cycle = false;
  std::size_t n = 0;
  while (n < max && read_wait_object(tid, links[n].wait, links[n].call)) {
    links[n].tid = tid;
    const WaitObject& w = links[n++].wait;
    if (w.kind != WaitKind::mutex || w.owner == 0) break;
    tid = static_cast<pid_t>(w.owner);
    for (std::size_t i = 0; i < n; ++i) {
      if (links[i].tid == tid) {
        cycle = true;
        return n;
      }
    }
  }
  return n;
}

}  // namespace loopcanary::port_linux
