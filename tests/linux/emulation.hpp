// SPDX-License-Identifier: MIT
// The premises of the Linux tests that QEMU's user-mode emulation (qemu-aarch64 running the
// cross-built tests on an x86-64 host) breaks, each probed at run time from the fact the tests
// need, once per process. LCTEST_SKIP_WITHOUT(premise) skips the calling test, naming the
// premise and what the probe saw, where the premise does not hold; everywhere else it does
// nothing, so a test that fails for another reason still fails. The list and the reasons:
// docs/porting-linux.md, "Under emulation".
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

namespace lctest {

enum class Premise {
  proc_syscall,      ///< /proc/<tid>/syscall shows the system call the thread made
  process_vm_readv,  ///< process_vm_readv reads this process's memory
  proc_signals,      ///< /proc/<tid>/status shows the signals the thread blocks and has pending
  exec_self,         ///< this program's file can be executed (death tests re-execute it)
};

namespace emulation_detail {

inline std::string read_first_line(const std::string& path) {
  char line[512] = {};
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    if (std::fgets(line, sizeof line, f) == nullptr) line[0] = '\0';
    std::fclose(f);
  }
  return line;
}

// A thread parked in read() on a pipe: its /proc syscall line must begin with SYS_read.
inline std::string probe_proc_syscall() {
  int fds[2];
  if (pipe(fds) != 0) return "";
  std::atomic<pid_t> tid{0};
  std::thread reader([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    char c;
    while (read(fds[0], &c, 1) < 0 && errno == EINTR) {
    }
  });
  while (tid.load() == 0) std::this_thread::yield();
  const std::string path = "/proc/self/task/" + std::to_string(tid.load()) + "/syscall";
  std::string line;
  long nr = -1;
  for (int i = 0; i < 200; ++i) {  // until the thread is in read(), at most 2 s
    line = read_first_line(path);
    if (std::sscanf(line.c_str(), "%ld", &nr) == 1 && nr == SYS_read) break;
    usleep(10'000);
  }
  (void)!write(fds[1], "x", 1);
  reader.join();
  close(fds[0]);
  close(fds[1]);
  if (nr == SYS_read) return "";
  return "/proc/<tid>/syscall of a thread parked in read() (system call " + std::to_string(SYS_read) +
         ") reads \"" + line.substr(0, line.find('\n')) + "\": the emulator's own host system call";
}

inline std::string probe_process_vm_readv() {
  long source = 42;
  long copy = 0;
  iovec local{&copy, sizeof copy};
  iovec remote{&source, sizeof source};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof copy) && copy == source) {
    return "";
  }
  return std::string("process_vm_readv on this process fails: ") + std::strerror(errno);
}

inline bool status_has_bit(const std::string& status, const char* field, int sig) {
  const std::size_t at = status.find(std::string(field) + ":");
  if (at == std::string::npos) return false;
  const unsigned long long mask = std::strtoull(status.c_str() + at + std::strlen(field) + 1, nullptr, 16);
  return ((mask >> (sig - 1)) & 1u) != 0;
}

// A thread that blocks a real-time signal and sends it to itself: its status must show the
// signal blocked and pending. The signal is then taken with sigtimedwait, never delivered.
inline std::string probe_proc_signals() {
  const int sig = SIGRTMAX - 1;
  bool blocked = false;
  bool pending = false;
  std::thread probe([&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
    syscall(SYS_tgkill, getpid(), tid, sig);
    std::string status;
    if (FILE* f = std::fopen(("/proc/self/task/" + std::to_string(tid) + "/status").c_str(), "r")) {
      char buffer[4096];
      const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
      std::fclose(f);
      status.assign(buffer, n);
    }
    blocked = status_has_bit(status, "SigBlk", sig);
    pending = status_has_bit(status, "ShdPnd", sig) || status_has_bit(status, "SigPnd", sig);
    const timespec none{};
    sigtimedwait(&set, nullptr, &none);
  });
  probe.join();
  if (blocked && pending) return "";
  return std::string("/proc/<tid>/status of a thread that blocks a signal sent to it shows it ") +
         (blocked ? "blocked" : "not blocked") + " and " + (pending ? "pending" : "not pending") +
         ": the emulator keeps the program's signal mask and queue itself";
}

// Forks, and the child executes this program's file (listing no test): it must run.
inline std::string probe_exec_self() {
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return "";
  const pid_t child = fork();
  if (child == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    char list[] = "--gtest_list_tests";
    char filter[] = "--gtest_filter=-*";
    char* argv[] = {self, list, filter, nullptr};
    execv(self, argv);
    _exit(errno == ENOEXEC ? 126 : 127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 126) {
    return std::string("executing this program's own file (") + self + ") fails with ENOEXEC: the host kernel " +
           "cannot run it (no binfmt_misc handler for it)";
  }
  return "";
}

}  // namespace emulation_detail

/// The premise spelled `name` (its enumerator's name, as LCTEST_SKIP_WITHOUT takes it); false
/// for a name that is none.
inline bool premise_named(const std::string& name, Premise& out) {
  static constexpr struct {
    const char* name;
    Premise premise;
  } kNames[] = {{"proc_syscall", Premise::proc_syscall},
                {"process_vm_readv", Premise::process_vm_readv},
                {"proc_signals", Premise::proc_signals},
                {"exec_self", Premise::exec_self}};
  for (const auto& n : kNames) {
    if (name == n.name) {
      out = n.premise;
      return true;
    }
  }
  return false;
}

/// Empty when `premise` holds here; else what its probe saw (each probe runs once, when first
/// asked).
inline const std::string& broken_premise(Premise premise) {
  switch (premise) {
    case Premise::proc_syscall: {
      static const std::string why = emulation_detail::probe_proc_syscall();
      return why;
    }
    case Premise::process_vm_readv: {
      static const std::string why = emulation_detail::probe_process_vm_readv();
      return why;
    }
    case Premise::proc_signals: {
      static const std::string why = emulation_detail::probe_proc_signals();
      return why;
    }
    case Premise::exec_self: break;
  }
  static const std::string why = emulation_detail::probe_exec_self();
  return why;
}

/// Waits (at most 2 s) until `tid` has left /proc/self/task: true once it has. A joined thread
/// has left on a kernel that runs the program; under QEMU's user mode the join returns when the
/// emulator clears the thread's tid word, a moment before its host thread exits.
inline bool left_proc(pid_t tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid);
  for (int i = 0; i < 2000; ++i) {
    if (access(path.c_str(), F_OK) != 0) return true;
    usleep(1000);
  }
  return false;
}

}  // namespace lctest

/// Skips the calling test (or, in a helper, marks it skipped and returns from the helper) when
/// `premise` does not hold, with the probe's evidence: under QEMU's user-mode emulation.
#define LCTEST_SKIP_WITHOUT(premise)                                                                          \
  do {                                                                                                        \
    const std::string& lctest_why = ::lctest::broken_premise(::lctest::Premise::premise);                     \
    if (!lctest_why.empty()) {                                                                                \
      GTEST_SKIP() << "premise " #premise " does not hold (user-mode emulation breaks it; "                   \
                   << "docs/porting-linux.md, 'Under emulation'): " << lctest_why;                            \
    }                                                                                                         \
  } while (0)
