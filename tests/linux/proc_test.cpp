// SPDX-License-Identifier: MIT
// Issue 3, test 7: the /proc parsers against fixture files, including truncated and malformed
// content, and the live readers on this machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "loopcanary/port/linux/proc.hpp"
#include "proc_fixture.hpp"

namespace lc = loopcanary::port_linux;

namespace {

using lc::test::Fixture;

lc::ParseError stat_of(const char* fixture, lc::ProcStatCpu& cpu) {
  Fixture f(fixture);
  return lc::parse_proc_stat(f.text, f.length, cpu);
}

lc::ParseError pid_stat_of(const char* fixture, lc::ProcPidStat& stat) {
  Fixture f(fixture);
  return lc::parse_proc_pid_stat(f.text, f.length, stat);
}

lc::ParseError field_of(const char* fixture, const char* key, bool hex, std::uint64_t& value) {
  Fixture f(fixture);
  return lc::parse_status_field(f.text, f.length, key, hex, value);
}

}  // namespace

TEST(ProcStat, ParsesTheAggregateCpuLine) {
  lc::ProcStatCpu cpu;
  ASSERT_EQ(stat_of("proc_stat.txt", cpu), lc::ParseError::ok);
  EXPECT_EQ(cpu.user, 149657u);
  EXPECT_EQ(cpu.nice, 1201u);
  EXPECT_EQ(cpu.system, 13065u);
  EXPECT_EQ(cpu.idle, 187028u);
  EXPECT_EQ(cpu.iowait, 419u);
  EXPECT_EQ(cpu.irq, 7u);
  EXPECT_EQ(cpu.softirq, 116u);
  EXPECT_EQ(cpu.steal, 2545u);
  EXPECT_EQ(cpu.busy(), 149657u + 1201u + 13065u + 7u + 116u + 2545u);
  EXPECT_EQ(cpu.total(), cpu.busy() + 187028u + 419u);
}

TEST(ProcStat, OldKernelWithFourFieldsReadsTheRestAsZero) {
  lc::ProcStatCpu cpu;
  ASSERT_EQ(stat_of("proc_stat_old_kernel.txt", cpu), lc::ParseError::ok);
  EXPECT_EQ(cpu.busy(), 1320u);
  EXPECT_EQ(cpu.total(), 6320u);
  EXPECT_EQ(cpu.steal, 0u);
}

TEST(ProcStat, BadContentIsRefusedWithItsReason) {
  lc::ProcStatCpu cpu;
  cpu.user = 42;
  EXPECT_EQ(stat_of("proc_stat_truncated.txt", cpu), lc::ParseError::truncated);
  EXPECT_EQ(stat_of("proc_stat_no_cpu_line.txt", cpu), lc::ParseError::missing_line);
  EXPECT_EQ(stat_of("proc_stat_bad_field.txt", cpu), lc::ParseError::bad_field);
  EXPECT_EQ(stat_of("proc_stat_overflow.txt", cpu), lc::ParseError::bad_field);
  EXPECT_EQ(stat_of("proc_stat_missing_fields.txt", cpu), lc::ParseError::missing_field);
  EXPECT_NE(stat_of("proc_stat_garbage.bin", cpu), lc::ParseError::ok);
  EXPECT_EQ(stat_of("empty.txt", cpu), lc::ParseError::empty);
  EXPECT_EQ(cpu.user, 42u) << "a refused parse leaves the output untouched";
  EXPECT_EQ(lc::parse_proc_stat(nullptr, 0, cpu), lc::ParseError::empty);
}

TEST(ProcStat, EveryPrefixOfAGoodFileIsRefusedOrCorrect) {
  Fixture f("proc_stat.txt");
  lc::ProcStatCpu whole;
  ASSERT_EQ(lc::parse_proc_stat(f.text, f.length, whole), lc::ParseError::ok);
  for (std::size_t n = 0; n < f.length; ++n) {
    lc::ProcStatCpu cpu;
    const lc::ParseError e = lc::parse_proc_stat(f.text, n, cpu);
    if (e == lc::ParseError::ok) {
      EXPECT_EQ(cpu.total(), whole.total()) << "prefix " << n;
    }
  }
}

TEST(ProcPidStat, ParsesUserAndSystemTime) {
  lc::ProcPidStat stat;
  ASSERT_EQ(pid_stat_of("proc_pid_stat.txt", stat), lc::ParseError::ok);
  EXPECT_EQ(stat.state, 'R');
  EXPECT_EQ(stat.utime, 1234u);
  EXPECT_EQ(stat.stime, 567u);
}

TEST(ProcPidStat, CommandNameWithSpacesAndParentheses) {
  lc::ProcPidStat stat;
  ASSERT_EQ(pid_stat_of("proc_pid_stat_paren_comm.txt", stat), lc::ParseError::ok);
  EXPECT_EQ(stat.state, 'S');
  EXPECT_EQ(stat.utime, 77u);
  EXPECT_EQ(stat.stime, 88u);
}

TEST(ProcPidStat, BadContentIsRefusedWithItsReason) {
  lc::ProcPidStat stat;
  EXPECT_EQ(pid_stat_of("proc_pid_stat_truncated.txt", stat), lc::ParseError::truncated);
  EXPECT_EQ(pid_stat_of("proc_pid_stat_short.txt", stat), lc::ParseError::missing_field);
  EXPECT_EQ(pid_stat_of("proc_pid_stat_no_paren.txt", stat), lc::ParseError::missing_field);
  EXPECT_EQ(pid_stat_of("empty.txt", stat), lc::ParseError::empty);
  EXPECT_NE(pid_stat_of("proc_stat_garbage.bin", stat), lc::ParseError::ok);
}

TEST(ProcStatus, TracerPidAndSignalMask) {
  std::uint64_t value = 99;
  ASSERT_EQ(field_of("proc_status.txt", "TracerPid", false, value), lc::ParseError::ok);
  EXPECT_EQ(value, 0u);
  ASSERT_EQ(field_of("proc_status_traced.txt", "TracerPid", false, value), lc::ParseError::ok);
  EXPECT_EQ(value, 4242u);
  ASSERT_EQ(field_of("proc_status_traced.txt", "SigBlk", true, value), lc::ParseError::ok);
  EXPECT_EQ(value, 0x2000000000u);  // bit 37: signal 38 blocked
  // A key must match whole: "Pid" is not "TracerPid" nor "PPid".
  ASSERT_EQ(field_of("proc_status.txt", "Pid", false, value), lc::ParseError::ok);
  EXPECT_EQ(value, 19806u);
}

TEST(ProcStatus, BadContentIsRefusedWithItsReason) {
  std::uint64_t value = 7;
  EXPECT_EQ(field_of("proc_status_no_tracer.txt", "TracerPid", false, value), lc::ParseError::missing_line);
  EXPECT_EQ(field_of("proc_status_bad_value.txt", "TracerPid", false, value), lc::ParseError::bad_field);
  EXPECT_EQ(field_of("proc_status_bad_value.txt", "SigBlk", true, value), lc::ParseError::bad_field);
  EXPECT_EQ(field_of("proc_status_truncated.txt", "SigBlk", true, value), lc::ParseError::truncated);
  EXPECT_EQ(field_of("proc_status_truncated.txt", "TracerPid", false, value), lc::ParseError::ok);
  EXPECT_EQ(field_of("proc_stat_garbage.bin", "TracerPid", false, value), lc::ParseError::truncated);
  EXPECT_EQ(field_of("empty.txt", "TracerPid", false, value), lc::ParseError::empty);
}

TEST(SchedStat, ParsesRunWaitAndSlices) {
  Fixture f("schedstat.txt");
  lc::SchedStat s;
  ASSERT_EQ(lc::parse_schedstat(f.text, f.length, s), lc::ParseError::ok);
  EXPECT_EQ(s.run_ns, 123456789u);
  EXPECT_EQ(s.wait_ns, 3991200u);
  EXPECT_EQ(s.slices, 17u);
  Fixture bad("proc_stat_truncated.txt");
  EXPECT_NE(lc::parse_schedstat(bad.text, bad.length, s), lc::ParseError::ok);
}

lc::ParseError syscall_of(const char* fixture, lc::ThreadSyscall& out) {
  Fixture f(fixture);
  return lc::parse_thread_syscall(f.text, f.length, out);
}

TEST(ThreadSyscall, ParsesAThreadParkedInASystemCall) {
  lc::ThreadSyscall s;
  ASSERT_EQ(syscall_of("proc_syscall.txt", s), lc::ParseError::ok);
  EXPECT_EQ(s.state, lc::ThreadSyscall::State::in_syscall);
  EXPECT_EQ(s.number, 202);
  EXPECT_EQ(s.args[0], 0x7f3a1c0009d8u);
  EXPECT_EQ(s.args[1], 0x80u);
  EXPECT_EQ(s.args[5], 0xffffffffu);
  EXPECT_EQ(s.sp, 0x7f3a21ffd6a0u);
  EXPECT_EQ(s.pc, 0x7f3a2449e34cu);
}

TEST(ThreadSyscall, RunningAndOutsideASystemCallAreStatesNotErrors) {
  lc::ThreadSyscall s;
  s.number = 7;
  ASSERT_EQ(syscall_of("proc_syscall_running.txt", s), lc::ParseError::ok);
  EXPECT_EQ(s.state, lc::ThreadSyscall::State::running);
  EXPECT_EQ(s.number, -1);
  ASSERT_EQ(syscall_of("proc_syscall_not_in_syscall.txt", s), lc::ParseError::ok);
  EXPECT_EQ(s.state, lc::ThreadSyscall::State::not_in_syscall);
  EXPECT_EQ(s.number, -1);
  EXPECT_EQ(s.sp, 0x7ffd5e8a1f40u);
  EXPECT_EQ(s.pc, 0x55d0c3a1b2c4u);
}

TEST(ThreadSyscall, BadContentIsRefusedWithItsReason) {
  lc::ThreadSyscall s;
  s.pc = 42;
  EXPECT_EQ(syscall_of("proc_syscall_truncated.txt", s), lc::ParseError::truncated);
  EXPECT_EQ(syscall_of("proc_syscall_missing_pc.txt", s), lc::ParseError::missing_field);
  EXPECT_EQ(syscall_of("proc_syscall_no_prefix.txt", s), lc::ParseError::bad_field);
  EXPECT_EQ(syscall_of("proc_stat.txt", s), lc::ParseError::bad_field);
  EXPECT_EQ(syscall_of("empty.txt", s), lc::ParseError::empty);
  const char lone_minus[] = "- 0x1 0x2\n";
  EXPECT_EQ(lc::parse_thread_syscall(lone_minus, sizeof lone_minus - 1, s), lc::ParseError::bad_field);
  const char trailing[] = "running now\n";
  EXPECT_EQ(lc::parse_thread_syscall(trailing, sizeof trailing - 1, s), lc::ParseError::bad_field);
  const char extra[] = "-1 0x1 0x2 0x3\n";
  EXPECT_EQ(lc::parse_thread_syscall(extra, sizeof extra - 1, s), lc::ParseError::bad_field);
  EXPECT_EQ(s.pc, 42u) << "a refused parse leaves the output untouched";
  EXPECT_EQ(lc::parse_thread_syscall(nullptr, 0, s), lc::ParseError::empty);
}

TEST(ProcReaders, ReadSmallFileReportsErrnoAndCutsLongFiles) {
  char buffer[16];
  std::size_t length = 99;
  EXPECT_EQ(lc::read_small_file("/nonexistent/loopcanary", buffer, sizeof buffer, length), ENOENT);
  EXPECT_EQ(length, 0u);
  const std::string path = std::string(LOOPCANARY_LINUX_FIXTURES) + "/proc_stat.txt";
  ASSERT_EQ(lc::read_small_file(path.c_str(), buffer, sizeof buffer, length), 0);
  EXPECT_EQ(length, sizeof buffer - 1);
  EXPECT_EQ(buffer[length], '\0');
  lc::ProcStatCpu cpu;
  EXPECT_EQ(lc::parse_proc_stat(buffer, length, cpu), lc::ParseError::truncated);
}

TEST(ProcReaders, LiveSystemIsReadable) {
  lc::ProcStatCpu cpu;
  ASSERT_TRUE(lc::read_proc_stat(cpu));
  EXPECT_GT(cpu.total(), cpu.busy());
  lc::ProcPidStat self;
  ASSERT_TRUE(lc::read_self_stat(self));
  std::uint64_t tracer = 1;
  ASSERT_TRUE(lc::read_tracer_pid(tracer));
  std::uint64_t blocked = 0;
  std::uint64_t pending = 0;
  EXPECT_TRUE(lc::read_thread_signals(static_cast<pid_t>(getpid()), blocked, pending));
  EXPECT_FALSE(lc::read_thread_signals(0x7ffffff0, blocked, pending)) << "no such thread";
  lc::ThreadSyscall here;
  ASSERT_TRUE(lc::read_thread_syscall(static_cast<pid_t>(getpid()), here));
  EXPECT_EQ(here.state, lc::ThreadSyscall::State::in_syscall) << "the thread reading its own file is in read()";
  EXPECT_FALSE(lc::read_thread_syscall(0x7ffffff0, here)) << "no such thread";
}

TEST(ProcReaders, ParseErrorsDescribeThemselves) {
  for (lc::ParseError e : {lc::ParseError::ok, lc::ParseError::empty, lc::ParseError::missing_line,
                           lc::ParseError::missing_field, lc::ParseError::bad_field, lc::ParseError::truncated}) {
    EXPECT_STRNE(lc::describe(e), "");
  }
}
