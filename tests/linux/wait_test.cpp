// SPDX-License-Identifier: MIT
// read_wait_object on real threads: each kind of wait, read from another thread while it lasts,
// with the lock holder named; the holder gone, and the lock's memory reused, give unknowns.
#include <arpa/inet.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "emulation.hpp"
#include "loopcanary/port/linux/wait.hpp"

namespace loopcanary::port_linux {
namespace {

// A thread with a name that publishes its id, then runs `body`.
class NamedThread {
 public:
  NamedThread(const char* name, std::function<void()> body)
      : thread_([this, name, body = std::move(body)] {
          pthread_setname_np(pthread_self(), name);
          tid_.store(static_cast<pid_t>(syscall(SYS_gettid)));
          body();
        }) {
    while (tid_.load() == 0) std::this_thread::yield();
  }
  ~NamedThread() {
    if (thread_.joinable()) thread_.join();
  }
  NamedThread(const NamedThread&) = delete;
  NamedThread& operator=(const NamedThread&) = delete;

  pid_t tid() const { return tid_.load(); }
  pthread_t handle() { return thread_.native_handle(); }
  void join() { thread_.join(); }

 private:
  std::atomic<pid_t> tid_{0};
  std::thread thread_;
};

// Reads `tid`'s wait until it is of `kind` (the thread gets there on its own time), for at most
// 10 s; the last reading otherwise.
WaitObject wait_of_kind(pid_t tid, WaitKind kind) {
  WaitObject w;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    if (read_wait_object(tid, w) && w.kind == kind) return w;
    usleep(500);
  }
  ADD_FAILURE() << "thread " << tid << " never waited on a " << to_string(kind) << "; last: " << to_string(w.kind)
                << " " << w.text;
  return w;
}

// A flag one thread raises and another waits for (the holder has its lock).
struct Flag {
  std::atomic<bool> up{false};
  void raise() { up.store(true); }
  void wait() const {
    while (!up.load()) std::this_thread::yield();
  }
};

std::uint64_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Locks `m` in waits of a second (a futex wait on the lock, as a plain lock's) until it has it,
// or until `give_up` (then false): how a test ends a wait no other thread may end by unlocking.
bool lock_unless(pthread_mutex_t& m, const Flag& give_up) {
  for (;;) {
    timespec deadline{};
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    const int e = pthread_mutex_timedlock(&m, &deadline);
    if (e == 0) return true;
    if (e != ETIMEDOUT || give_up.up.load()) return false;
  }
}

// The holder named, and the chain from the waiter. Then the check the port makes after it sampled
// a holder (lock_still_held): true while the lock names that holder, false for another owner, for
// a reading that is no lock, for an address that cannot be read, and once another thread had it.
TEST(LinuxWait, StdMutexNamesItsHolder) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  std::mutex m;
  Flag held, release;
  NamedThread holder("journal", [&] {
    std::lock_guard<std::mutex> lock(m);
    held.raise();
    release.wait();
  });
  held.wait();
  NamedThread waiter("ui-loop", [&] { std::lock_guard<std::mutex> lock(m); });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::mutex);
  EXPECT_EQ(w.address, address_of(&m));
  EXPECT_EQ(w.owner, static_cast<std::uint32_t>(holder.tid()));
  EXPECT_STREQ(w.owner_name, "journal");
  EXPECT_EQ(w.fd, -1);
  // The chain: the waiter, then its holder, who waits on no lock (it spins): no cycle.
  WaitLink links[4];
  bool cycle = true;
  const std::size_t n = read_wait_chain(waiter.tid(), links, 4, cycle);
  EXPECT_FALSE(cycle);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(links[1].tid, holder.tid());
  EXPECT_NE(links[1].wait.kind, WaitKind::mutex);

  EXPECT_TRUE(lock_still_held(w));
  WaitObject other = w;
  other.owner = static_cast<std::uint32_t>(waiter.tid());
  EXPECT_FALSE(lock_still_held(other));
  WaitObject not_a_lock = w;
  not_a_lock.kind = WaitKind::futex;
  EXPECT_FALSE(lock_still_held(not_a_lock));
  WaitObject unreadable = w;
  unreadable.address = 8;  // the first page is never mapped
  EXPECT_FALSE(lock_still_held(unreadable));
  release.raise();
  holder.join();
  waiter.join();  // the waiter had the lock and let go of it: it names nobody now
  EXPECT_FALSE(lock_still_held(w));
}

// A lock holder that waits itself (reads an idle pipe with the lock held); noinline, so its
// return address lies inside it.
__attribute__((noinline)) void hold_while_reading(std::mutex& m, int fd, Flag& held) {
  std::lock_guard<std::mutex> lock(m);
  held.raise();
  char c = 0;
  EXPECT_EQ(read(fd, &c, 1), 1);
  asm volatile("" ::: "memory");  // no tail call: the frame stays
}

// The holder named by the waiter's wait is sampled from its parked system call: its frames
// include the function that holds the lock.
TEST(LinuxWait, ParkedHolderIsSampledDownToTheFunctionHoldingTheLock) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  std::mutex m;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  Flag held;
  NamedThread holder("journal", [&] { hold_while_reading(m, fds[0], held); });
  held.wait();
  NamedThread waiter("ui-loop", [&] { std::lock_guard<std::mutex> lock(m); });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::mutex);
  ASSERT_EQ(w.owner, static_cast<std::uint32_t>(holder.tid()));
  wait_of_kind(holder.tid(), WaitKind::pipe);
  Frame pcs[32];
  const std::size_t n = sample_parked_thread(static_cast<pid_t>(w.owner), pcs, 32);
  const auto begin = reinterpret_cast<std::uintptr_t>(&hold_while_reading);
  bool found = false;
  for (std::size_t i = 1; i < n; ++i) found = found || (pcs[i] > begin && pcs[i] < begin + 512);
  EXPECT_GE(n, 2u);
  EXPECT_TRUE(found) << n << " frames, none inside hold_while_reading";
  // A thread on a CPU is not sampled this way.
  std::atomic<bool> stop{false};
  NamedThread spinner("spinner", [&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  std::size_t running = 1;
  for (int i = 0; i < 100 && running != 0; ++i) running = sample_parked_thread(spinner.tid(), pcs, 32);
  stop.store(true);
  EXPECT_EQ(running, 0u);
  EXPECT_EQ(write(fds[1], "x", 1), 1);
  holder.join();
  waiter.join();
  close(fds[0]);
  close(fds[1]);
}

TEST(LinuxWait, RecursiveMutexNamesItsHolder) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  std::recursive_mutex m;
  Flag held, release;
  NamedThread holder("flusher", [&] {
    std::lock_guard<std::recursive_mutex> outer(m);
    std::lock_guard<std::recursive_mutex> inner(m);
    held.raise();
    release.wait();
  });
  held.wait();
  NamedThread waiter("ui-loop", [&] { std::lock_guard<std::recursive_mutex> lock(m); });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::mutex);
  EXPECT_EQ(w.address, address_of(&m));
  EXPECT_EQ(w.owner, static_cast<std::uint32_t>(holder.tid()));
  EXPECT_STREQ(w.owner_name, "flusher");
  release.raise();
}

TEST(LinuxWait, PriorityInheritanceMutexNamesItsHolderFromTheLockWord) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  ASSERT_EQ(pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT), 0);
  pthread_mutex_t m;
  ASSERT_EQ(pthread_mutex_init(&m, &attr), 0);
  Flag held, release;
  NamedThread holder("ota_task", [&] {
    pthread_mutex_lock(&m);
    held.raise();
    release.wait();
    pthread_mutex_unlock(&m);
  });
  held.wait();
  NamedThread waiter("radio", [&] {
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
  });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::mutex);
  EXPECT_EQ(w.address, address_of(&m));
  EXPECT_EQ(w.owner, static_cast<std::uint32_t>(holder.tid()));
  EXPECT_STREQ(w.owner_name, "ota_task");
  release.raise();
  waiter.join();
  holder.join();
  pthread_mutex_destroy(&m);
  pthread_mutexattr_destroy(&attr);
}

TEST(LinuxWait, ConditionVariableHasNoOwner) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  std::mutex m;
  std::condition_variable cv;
  bool go = false;
  NamedThread waiter("ui-loop", [&] {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return go; });
  });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::condition);
  EXPECT_GE(w.address, address_of(&cv));
  EXPECT_LT(w.address, address_of(&cv) + sizeof cv);
  EXPECT_EQ(w.owner, 0u);
  EXPECT_STREQ(w.owner_name, "");
  {
    std::lock_guard<std::mutex> lock(m);
    go = true;
  }
  cv.notify_all();
}

TEST(LinuxWait, PipeReadNamesThePipe) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  NamedThread waiter("ui-loop", [&] {
    char c = 0;
    EXPECT_EQ(read(fds[0], &c, 1), 1);
  });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::pipe);
  EXPECT_EQ(w.fd, fds[0]);
  EXPECT_EQ(std::string(w.text).rfind("pipe:[", 0), 0u) << w.text;
  EXPECT_EQ(write(fds[1], "x", 1), 1);
  waiter.join();
  close(fds[0]);
  close(fds[1]);
}

std::uint16_t port_of(int fd) {
  sockaddr_in a{};
  socklen_t length = sizeof a;
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length), 0);
  return ntohs(a.sin_port);
}

TEST(LinuxWait, TcpRecvNamesBothEnds) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  a.sin_port = htons(port_of(listener));
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const int server = accept(listener, nullptr, nullptr);
  ASSERT_GE(server, 0);
  NamedThread waiter("net-loop", [&] {
    char c = 0;
    EXPECT_EQ(recv(client, &c, 1, 0), 1);
  });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::socket);
  EXPECT_EQ(w.fd, client);
  EXPECT_EQ(std::string(w.text), "tcp 127.0.0.1:" + std::to_string(port_of(client)) + " > 127.0.0.1:" +
                                     std::to_string(port_of(listener)));
  EXPECT_EQ(send(server, "x", 1, 0), 1);
  waiter.join();
  close(server);
  close(client);
  close(listener);
}

TEST(LinuxWait, PollOnSeveralDescriptorsCountsThem) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  int a[2], b[2];
  ASSERT_EQ(pipe(a), 0);
  ASSERT_EQ(pipe(b), 0);
  NamedThread waiter("ui-loop", [&] {
    pollfd fds[2] = {{a[0], POLLIN, 0}, {b[0], POLLIN, 0}};
    EXPECT_EQ(poll(fds, 2, 20000), 1);
  });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::poll);
  EXPECT_EQ(w.fd, a[0]);
  EXPECT_EQ(w.value, 2u);
  EXPECT_EQ(std::string(w.text).rfind("pipe:[", 0), 0u) << w.text;
  EXPECT_EQ(write(b[1], "x", 1), 1);
  waiter.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
}

void no_op(int) {}

// A sleep of 30 s, cut short by a signal once it has been read.
TEST(LinuxWait, NanosleepGivesItsRequestedLength) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  struct sigaction action {};
  action.sa_handler = no_op;  // no SA_RESTART: the sleep returns EINTR
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGURG, &action, &before), 0);
  NamedThread waiter("ui-loop", [] {
    const timespec request{30, 250000000};
    timespec left{};
    EXPECT_EQ(nanosleep(&request, &left), -1);
  });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::sleep);
  EXPECT_EQ(w.value, 30250000000u);
  pthread_kill(waiter.handle(), SIGURG);
  waiter.join();
  sigaction(SIGURG, &before, nullptr);
}

TEST(LinuxWait, AbsoluteSleepGivesTheTimeLeft) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  struct sigaction action {};
  action.sa_handler = no_op;
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGURG, &action, &before), 0);
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += 30;
  NamedThread waiter("ui-loop", [&] { EXPECT_NE(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr), 0); });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::sleep);
  EXPECT_LE(w.value, 30000000000u);
  EXPECT_GT(w.value, 20000000000u);  // loose: read within 10 s of the start
  pthread_kill(waiter.handle(), SIGURG);
  waiter.join();
  sigaction(SIGURG, &before, nullptr);
}

// Two threads each holding the lock the other waits for: each names the other.
TEST(LinuxWait, DeadlockedThreadsNameEachOther) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t second = PTHREAD_MUTEX_INITIALIZER;
  Flag a_holds, b_holds, give_up;
  NamedThread a("radio", [&] {
    pthread_mutex_lock(&first);
    a_holds.raise();
    b_holds.wait();
    pthread_mutex_lock(&second);  // until "storage" gives up
    pthread_mutex_unlock(&second);
    pthread_mutex_unlock(&first);
  });
  NamedThread b("storage", [&] {
    pthread_mutex_lock(&second);
    b_holds.raise();
    a_holds.wait();
    if (lock_unless(first, give_up)) pthread_mutex_unlock(&first);
    pthread_mutex_unlock(&second);
  });
  const WaitObject wa = wait_of_kind(a.tid(), WaitKind::mutex);
  const WaitObject wb = wait_of_kind(b.tid(), WaitKind::mutex);
  EXPECT_EQ(wa.address, address_of(&second));
  EXPECT_EQ(wa.owner, static_cast<std::uint32_t>(b.tid()));
  EXPECT_STREQ(wa.owner_name, "storage");
  EXPECT_EQ(wb.address, address_of(&first));
  EXPECT_EQ(wb.owner, static_cast<std::uint32_t>(a.tid()));
  EXPECT_STREQ(wb.owner_name, "radio");
  // The chain from either thread comes back to it: the cycle.
  WaitLink links[4];
  bool cycle = false;
  ASSERT_EQ(read_wait_chain(a.tid(), links, 4, cycle), 2u);
  EXPECT_TRUE(cycle);
  EXPECT_EQ(links[0].tid, a.tid());
  EXPECT_EQ(links[1].tid, b.tid());
  EXPECT_EQ(links[1].wait.owner, static_cast<std::uint32_t>(a.tid()));
  give_up.raise();
}

// A lock shaped as glibc's pthread_mutex_t head (the lock word, then the owner's id at byte 8,
// the kind at byte 16) that a thread waits on as glibc's lock does (FUTEX_WAIT on the word,
// expecting 2: contended). Written by hand, so a test can make its owner a thread that exited,
// or its memory something else, without leaving a real mutex locked.
class HandMadeLock {
 public:
  explicit HandMadeLock(pid_t owner) {
    std::memset(memory_, 0, sizeof memory_);
    set_owner(owner);
    word()->store(2);
  }
  void set_owner(pid_t owner) { std::memcpy(memory_ + 8, &owner, sizeof owner); }
  void fill_after_word(unsigned char byte) { std::memset(memory_ + 4, byte, sizeof memory_ - 4); }
  std::uint64_t address() const { return address_of(memory_); }
  // Blocks until released (a spurious wake-up waits again).
  void wait() {
    while (word()->load() == 2) syscall(SYS_futex, memory_, FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr, 0);
  }
  void release() {
    word()->store(0);
    syscall(SYS_futex, memory_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }

 private:
  std::atomic<std::uint32_t>* word() { return reinterpret_cast<std::atomic<std::uint32_t>*>(memory_); }
  alignas(8) unsigned char memory_[40];
};

// The holder exits with the lock held: its id names no thread any more, so the owner is unknown.
TEST(LinuxWait, HolderThatExitedIsUnknown) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  pid_t gone = 0;
  { NamedThread holder("short-lived", [] {}); gone = holder.tid(); }
  HandMadeLock lock(gone);
  NamedThread waiter("ui-loop", [&] { lock.wait(); });
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::mutex);
  EXPECT_EQ(w.address, lock.address());
  EXPECT_NE(w.owner, static_cast<std::uint32_t>(gone));
  EXPECT_EQ(w.owner, 0u);
  EXPECT_STREQ(w.owner_name, "");
  lock.release();
}

// A thread waits on a lock whose memory then holds something else: no owner is invented.
TEST(LinuxWait, LockMemoryReusedGivesNoOwner) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  Flag release;
  NamedThread holder("journal", [&] { release.wait(); });
  HandMadeLock lock(holder.tid());
  NamedThread waiter("ui-loop", [&] { lock.wait(); });
  WaitObject w = wait_of_kind(waiter.tid(), WaitKind::mutex);
  EXPECT_EQ(w.owner, static_cast<std::uint32_t>(holder.tid())) << "the lock as glibc writes it";
  EXPECT_STREQ(w.owner_name, "journal");
  // The memory reused: a pattern whose "owner" is no thread and whose "kind" is no mutex's (the
  // word kept at 2, so the waiter stays).
  lock.fill_after_word(0x5A);
  w = wait_of_kind(waiter.tid(), WaitKind::mutex);
  EXPECT_EQ(w.address, lock.address());
  EXPECT_EQ(w.owner, 0u);
  EXPECT_STREQ(w.owner_name, "");
  // A live thread's id where the owner was, with a kind no glibc mutex has: still no owner.
  lock.set_owner(holder.tid());
  w = wait_of_kind(waiter.tid(), WaitKind::mutex);
  EXPECT_EQ(w.owner, 0u);
  EXPECT_STREQ(w.owner_name, "");
  lock.release();
  release.raise();
}

TEST(LinuxWait, RunningThreadIsNotWaiting) {
  std::atomic<bool> stop{false};
  NamedThread spinner("spinner", [&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  WaitObject w;
  bool read = true;
  bool seen_running = false;
  for (int i = 0; i < 1000 && read && !seen_running; ++i) {
    read = read_wait_object(spinner.tid(), w);
    seen_running = w.kind == WaitKind::none;
  }
  stop.store(true);
  EXPECT_TRUE(read);
  EXPECT_TRUE(seen_running);
}

TEST(LinuxWait, AThreadThatIsGoneCannotBeRead) {
  pid_t gone = 0;
  { NamedThread t("brief", [] {}); gone = t.tid(); }
  ASSERT_TRUE(lctest::left_proc(gone));
  WaitObject w;
  w.kind = WaitKind::sleep;
  EXPECT_FALSE(read_wait_object(gone, w));
  EXPECT_EQ(w.kind, WaitKind::none);
  char name[kThreadNameMax] = "x";
  EXPECT_FALSE(read_thread_name(gone, name));
  EXPECT_STREQ(name, "");
}

TEST(LinuxWait, OtherSystemCallsByName) {
  LCTEST_SKIP_WITHOUT(proc_syscall);
  EXPECT_STREQ(syscall_name(SYS_read), "read");
  EXPECT_STREQ(syscall_name(SYS_futex), "futex");
  EXPECT_EQ(syscall_name(-1), nullptr);
  EXPECT_EQ(syscall_name(100000), nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGURG);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by the waiter: sigwait takes it
  NamedThread waiter("ui-loop", [&] {
    int signal = 0;
    EXPECT_EQ(sigwait(&set, &signal), 0);
  });
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  const WaitObject w = wait_of_kind(waiter.tid(), WaitKind::syscall);
  EXPECT_EQ(w.value, static_cast<std::uint64_t>(SYS_rt_sigtimedwait));
  EXPECT_STREQ(w.text, "rt_sigtimedwait");
  pthread_kill(waiter.handle(), SIGURG);
}

}  // namespace
}  // namespace loopcanary::port_linux
