// SPDX-License-Identifier: MIT
// Fuzz target: the Linux port's /proc parsers (loopcanary/port/linux/proc.hpp). The input is the
// content of a /proc file, given to every parser (/proc/stat, /proc/<pid>/stat, the status
// fields the port reads, schedstat, a thread's syscall file) in a buffer of exactly its size,
// so that AddressSanitizer sees any read past `length` (the parsers must not rely on the NUL
// that read_small_file adds when it fits). Asserts: every outcome is one of ParseError's values, described.
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "fuzz_check.hpp"
#include "loopcanary/port/linux/proc.hpp"

namespace {

namespace pl = loopcanary::port_linux;

void check(pl::ParseError error) {
  FUZZ_CHECK(static_cast<unsigned>(error) <= static_cast<unsigned>(pl::ParseError::truncated), "ParseError %u",
             static_cast<unsigned>(error));
  FUZZ_CHECK(pl::describe(error) != nullptr, "describe() returned null");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  pl::ProcStatCpu cpu;
  check(pl::parse_proc_stat(text, size, cpu));
  pl::ProcPidStat stat;
  check(pl::parse_proc_pid_stat(text, size, stat));
  pl::SchedStat sched;
  check(pl::parse_schedstat(text, size, sched));
  pl::ThreadSyscall where;
  check(pl::parse_thread_syscall(text, size, where));
  struct Key {
    const char* name;
    bool hex;
  };
  for (const Key key : {Key{"TracerPid", false}, Key{"SigBlk", true}, Key{"SigPnd", true}}) {
    std::uint64_t value = 0;
    check(pl::parse_status_field(text, size, key.name, key.hex, value));
  }
  return 0;
}
