// SPDX-License-Identifier: MIT
// The file sink. Issue 3, test 6 (sink faults: directory missing, read-only, a file that hits
// its size limit mid-run, disk full: no record lost from the ring, the status says what
// happened), plus rotation and age bounds, permissions, path safety and the torn-tail reader.
// Issue 19: a log file or directory deleted mid-run, rotation order across a restart, the
// max_files bound during a rotation, and paths too long for a message. Issue 14: the binary form.
// Records come from a real watchdog in virtual time (port "sim"), so runs are deterministic.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/fsuid.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../temp_dir.hpp"
#include "loopcanary/linux/file_sink.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/sim.hpp"
#if defined(LOOPCANARY_SINK_TEST_CAPTURES)
#include <sstream>

#include "model.hpp"
#include "packet_reader.hpp"
#endif

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;
namespace sim = loopcanary::sim;
#if defined(LOOPCANARY_SINK_TEST_CAPTURES)
namespace lt = loopcanary::tool;
#endif

// The "program counter" the simulated loop thread reports: a real function of this binary,
// so the sink can name it.
__attribute__((noinline)) void lc_test_sim_pc() { asm volatile("" ::: "memory"); }

namespace {

using loopcanary::test::TempDir;

constexpr lc::Event kEvent{"sensor_read"};


std::vector<std::string> list(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* dir = opendir(path.c_str())) {
    while (const dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.' || (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)) {
        names.emplace_back(e->d_name);
      }
    }
    closedir(dir);
  }
  return names;
}

std::string slurp(const std::string& path) {
  std::string text;
  if (FILE* file = std::fopen(path.c_str(), "rb")) {
    char chunk[4096];
    std::size_t n = 0;
    while ((n = std::fread(chunk, 1, sizeof chunk, file)) > 0) text.append(chunk, n);
    std::fclose(file);
  }
  return text;
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// How many times `what` stands in `text` (overlapping ones too).
std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A loop in virtual time whose blocks the watchdog reports through the sink (an interceptor).
// Every block makes two records: in progress, then final.
class SimRig {
 public:
  explicit SimRig(lx::FileSink* sink, const char* qualifier = "sink-test") {
    lc::MonitorConfig mc;
    mc.name = "main";
    mc.tick_hz = sim::kTickHz;
    mc.threshold_us = 100'000;
    mc.sample_interval_us = 10'000;
    mc.context = &thread_;
    EXPECT_EQ(monitor_.init(mc), lc::Status::ok);
    lc::WatchdogConfig wc;
    wc.qualifier = qualifier;
    machine_.set_pc_capture(true);
    thread_.pc = reinterpret_cast<lc::Frame>(&lc_test_sim_pc);
    EXPECT_EQ(watchdog_.init(wc, machine_.hal()), lc::Status::ok);
    EXPECT_EQ(watchdog_.add(monitor_), lc::Status::ok);
    if (sink != nullptr) {
      EXPECT_EQ(watchdog_.add_interceptor(&lx::FileSink::interceptor, sink), lc::Status::ok);
    }
  }

  void blocks(int n) {
    for (int i = 0; i < n; ++i) {
      LOOPCANARY_DISPATCH(monitor_, kEvent);
      LOOPCANARY_SCOPE(monitor_, "filter");
      scheduler_.compute(thread_, sim::ms(150));
    }
    scheduler_.idle(sim::ms(10));
  }

  // The contract under every fault: each report is still in the RAM ring.
  void expect_ring_holds_every_report() const {
    EXPECT_EQ(watchdog_.pending(), watchdog_.stats().reports);
    EXPECT_EQ(watchdog_.stats().records_dropped, 0u);
  }
  std::uint32_t reports() const { return watchdog_.stats().reports; }

 private:
  sim::VirtualTime time_;
  sim::Machine machine_;
  sim::Thread thread_;
  sim::PortMonitor monitor_{sim::Clock{time_}};
  lc::StaticWatchdog<1, 256> watchdog_;
  sim::Scheduler scheduler_{time_, machine_, watchdog_, sim::ms(5)};
};

struct ErrorLog {
  int calls = 0;
  lx::SinkStatus last;
  static void on_error(void* self, const lx::SinkStatus& status) {
    auto* log = static_cast<ErrorLog*>(self);
    ++log->calls;
    log->last = status;
  }
};

struct Lines {
  std::vector<std::string> records;
  std::vector<std::string> warnings;
  static void on_record(void* self, const char* line, std::size_t length) {
    static_cast<Lines*>(self)->records.emplace_back(line, length);
  }
  static void on_warning(void* self, const char* message) { static_cast<Lines*>(self)->warnings.emplace_back(message); }
};

lx::LogReadResult read_all(const std::string& path, Lines& lines) {
  return lx::read_log(path.c_str(), &Lines::on_record, &Lines::on_warning, &lines);
}

lx::FileSinkConfig config_for(const std::string& directory, ErrorLog* errors = nullptr) {
  lx::FileSinkConfig config;
  config.directory = directory.c_str();
  config.qualifier = "fw-1.4.2";
  if (errors != nullptr) {
    config.on_error = &ErrorLog::on_error;
    config.on_error_context = errors;
  }
  return config;
}

// Writes as user "nobody" (fsuid, this thread only) while it lives, so a read-only directory
// is read-only even when the tests run as root.
class AsNobody {
 public:
  AsNobody() : active_(geteuid() == 0) {
    if (active_) setfsuid(65534);
  }
  ~AsNobody() {
    if (active_) setfsuid(0);
  }
  AsNobody(const AsNobody&) = delete;
  AsNobody& operator=(const AsNobody&) = delete;

 private:
  bool active_;
};

}  // namespace

TEST(LinuxFileSink, WritesJsonLinesAndATextLog) {
  TempDir dir;
  const std::string logs = dir.sub("logs");
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config_for(logs)), lx::SinkError::none) << sink.status().message;
  EXPECT_STREQ(sink.stem(), "loopcanary-fw-1.4.2");
  SimRig rig(&sink);
  rig.blocks(3);
  const lx::SinkStatus status = sink.status();
  EXPECT_TRUE(status.healthy);
  EXPECT_EQ(status.records_written, rig.reports());
  EXPECT_EQ(rig.reports(), 6u);
  rig.expect_ring_holds_every_report();

  struct stat st {};
  ASSERT_EQ(stat(logs.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "created owner-only";
  const std::string jsonl = logs + "/loopcanary-fw-1.4.2.jsonl";
  const std::string text = logs + "/loopcanary-fw-1.4.2.log";
  for (const std::string& file : {jsonl, text}) {
    ASSERT_EQ(stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
  Lines lines;
  const lx::LogReadResult read = read_all(jsonl, lines);
  EXPECT_EQ(read.records, 6u);
  EXPECT_TRUE(lines.warnings.empty());
  for (const std::string& line : lines.records) {
    EXPECT_NE(line.find("\"qualifier\":\"sink-test\""), std::string::npos);
    EXPECT_NE(line.find("\"linux\":{\"time\":"), std::string::npos) << line;
    // These records are stamped by the sim port's 1 MHz clock: the process clock names them
    // only when it runs at that rate (CLOCK_MONOTONIC does, the TSC does not).
    const std::string clock = sim::kTickHz == lx::clock_info().tick_hz ? lx::clock_info().name : "other";
    EXPECT_NE(line.find("\"clock\":\"" + clock + "\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"build_id\":\""), std::string::npos);
    EXPECT_NE(line.find("\"offset\":\"0x"), std::string::npos);
    EXPECT_NE(line.find("\"function\":\"lc_test_sim_pc()\""), std::string::npos) << line;
  }
  const std::string log = slurp(text);
  EXPECT_NE(log.find("==== loopcanary report 1 (in_progress) ===="), std::string::npos);
  EXPECT_NE(log.find("time = "), std::string::npos);
  EXPECT_NE(log.find("event = sensor_read"), std::string::npos);
  EXPECT_NE(log.find("cause = "), std::string::npos);
  EXPECT_NE(log.find("thread-time = "), std::string::npos);
  EXPECT_NE(log.find("lc_test_sim_pc()+0x0"), std::string::npos) << log;
}

TEST(LinuxFileSink, ConfigErrorsNameTheField) {
  TempDir dir;
  lx::FileSink sink;
  lx::FileSinkConfig config = config_for(dir.path());
  config.directory = nullptr;
  EXPECT_EQ(sink.open(config), lx::SinkError::directory_missing);
  config.directory = "";
  EXPECT_EQ(sink.open(config), lx::SinkError::directory_missing);
  config = config_for(dir.path());
  for (const char* bad : {"", ".hidden", "a/b", "with space", "0123456789012345678901234"}) {
    config.file_prefix = bad;
    EXPECT_EQ(sink.open(config), lx::SinkError::prefix_invalid) << bad;
  }
  config = config_for(dir.path());
  config.max_file_bytes = 4095;
  EXPECT_EQ(sink.open(config), lx::SinkError::max_file_bytes_too_small);
  config = config_for(dir.path());
  config.max_files = 0;
  EXPECT_EQ(sink.open(config), lx::SinkError::max_files_zero);
  config = config_for(dir.path());
  config.json = false;
  config.text = false;
  EXPECT_EQ(sink.open(config), lx::SinkError::no_output);
  EXPECT_TRUE(list(dir.path()).empty()) << "a refused configuration creates nothing";
  EXPECT_STREQ(lx::name(lx::SinkError::disk_full), "disk_full");
}

TEST(LinuxFileSink, MissingDirectoryIsReportedAndRetried) {
  TempDir dir;
  const std::string logs = dir.sub("not-yet");
  ErrorLog errors;
  lx::FileSinkConfig config = config_for(logs, &errors);
  config.create_directory = false;
  config.retry_open_ms = 0;
  lx::FileSink sink;
  EXPECT_EQ(sink.open(config), lx::SinkError::directory_not_found);
  lx::SinkStatus status = sink.status();
  EXPECT_FALSE(status.open);
  EXPECT_EQ(status.last_error, lx::SinkError::directory_not_found);
  EXPECT_EQ(status.last_errno, ENOENT);
  EXPECT_NE(std::strstr(status.message, logs.c_str()), nullptr) << status.message;
  EXPECT_EQ(errors.calls, 1);

  SimRig rig(&sink);
  rig.blocks(2);
  status = sink.status();
  EXPECT_EQ(status.records_failed, 4u);
  EXPECT_EQ(status.records_written, 0u);
  EXPECT_EQ(errors.calls, 5);
  EXPECT_EQ(errors.last.last_error, lx::SinkError::directory_not_found);
  rig.expect_ring_holds_every_report();

  ASSERT_EQ(mkdir(logs.c_str(), 0700), 0);  // the directory appears: the sink recovers
  rig.blocks(1);
  status = sink.status();
  EXPECT_TRUE(status.open);
  EXPECT_TRUE(status.healthy);
  EXPECT_EQ(status.records_written, 2u);
  rig.expect_ring_holds_every_report();
}

TEST(LinuxFileSink, ReadOnlyDirectoryIsReportedRecordsStayInTheRing) {
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0555), 0);
  ErrorLog errors;
  lx::FileSink sink;
  SimRig rig(&sink);
  {
    AsNobody nobody;
    lx::FileSinkConfig config = config_for(dir.path(), &errors);
    config.retry_open_ms = 0;
    EXPECT_EQ(sink.open(config), lx::SinkError::file_open_failed);
    rig.blocks(2);
  }
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::file_open_failed);
  EXPECT_EQ(status.last_errno, EACCES);
  EXPECT_NE(std::strstr(status.message, "loopcanary-fw-1.4.2.jsonl"), nullptr) << status.message;
  EXPECT_NE(std::strstr(status.message, "Permission denied"), nullptr) << status.message;
  EXPECT_EQ(status.records_failed, 4u);
  EXPECT_GE(errors.calls, 5);
  rig.expect_ring_holds_every_report();
  EXPECT_TRUE(list(dir.path()).empty());
}

TEST(LinuxFileSink, SizeLimitRotatesAndBoundsTheFiles) {
  TempDir dir;
  lx::FileSinkConfig config = config_for(dir.path());
  config.max_file_bytes = 8192;
  config.max_files = 3;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(40);
  const lx::SinkStatus status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(status.records_written, 80u);
  EXPECT_GT(status.rotations, 4u);
  EXPECT_GT(status.removed_by_count, 0u);
  rig.expect_ring_holds_every_report();

  int jsonl = 0;
  int logs = 0;
  std::uint64_t on_disk = 0;
  bool newest_kept = false;
  for (const std::string& name : list(dir.path())) {
    const std::string path = dir.sub(name.c_str());
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_LE(st.st_size, 8192) << name;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
    if (ends_with(name, ".jsonl")) {
      ++jsonl;
      Lines lines;
      on_disk += read_all(path, lines).records;
      EXPECT_TRUE(lines.warnings.empty()) << name;
      for (const std::string& line : lines.records) newest_kept |= line.find(",\"report\":80,") != std::string::npos;
    } else if (ends_with(name, ".log")) {
      ++logs;
    }
  }
  EXPECT_EQ(jsonl, 3);
  EXPECT_EQ(logs, 3);
  EXPECT_GT(on_disk, 0u);
  EXPECT_TRUE(newest_kept);
}

TEST(LinuxFileSink, FullFileThatCannotRotateIsReported) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSinkConfig config = config_for(dir.path(), &errors);
  config.max_file_bytes = 8192;
  config.text = false;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  ASSERT_EQ(chmod(dir.path().c_str(), 0555), 0);  // the directory turns read-only mid-run
  {
    AsNobody nobody;
    rig.blocks(10);  // the open file fills up; renaming it is refused
  }
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::rotate_failed) << status.message;
  EXPECT_NE(std::strstr(status.message, "loopcanary-fw-1.4.2.jsonl"), nullptr) << status.message;
  EXPECT_GT(status.records_written, 2u);
  EXPECT_GT(status.records_failed, 0u);
  EXPECT_EQ(status.records_written + status.records_failed, rig.reports());
  rig.expect_ring_holds_every_report();
  struct stat st {};
  ASSERT_EQ(stat(dir.sub("loopcanary-fw-1.4.2.jsonl").c_str(), &st), 0);
  EXPECT_LE(st.st_size, 8192) << "the size bound holds even when rotation fails";
}

namespace {

// Fake write(2) with a space budget: a write past it is cut short, the next one fails ENOSPC.
std::size_t g_space_left = 0;
ssize_t fake_write_with_budget(int fd, const void* data, std::size_t size) {
  if (g_space_left == 0) {
    errno = ENOSPC;
    return -1;
  }
  const std::size_t n = size < g_space_left ? size : g_space_left;
  const ssize_t written = ::write(fd, data, n);
  if (written > 0) g_space_left -= static_cast<std::size_t>(written);
  return written;
}

// More space than any of these tests writes.
constexpr std::size_t kPlentyOfSpace = 1'000'000;

// `config` writing through fake_write_with_budget, the budget reset to plenty of space.
lx::FileSinkConfig on_budget(lx::FileSinkConfig config) {
  config.fake_write = &fake_write_with_budget;
  g_space_left = kPlentyOfSpace;
  return config;
}

}  // namespace

TEST(LinuxFileSink, DiskFullLeavesOnlyWholeRecords) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(on_budget(config_for(dir.path(), &errors))), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  g_space_left = 700;  // the disk fills up in the middle of the next record
  rig.blocks(2);
  lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::disk_full);
  EXPECT_EQ(status.last_errno, ENOSPC);
  EXPECT_NE(std::strstr(status.message, "No space left on device"), nullptr) << status.message;
  EXPECT_FALSE(status.healthy);
  EXPECT_EQ(status.records_written, 2u);
  EXPECT_EQ(status.records_failed, 4u);
  EXPECT_GT(errors.calls, 0);
  rig.expect_ring_holds_every_report();

  g_space_left = kPlentyOfSpace;  // space again: writing resumes
  rig.blocks(1);
  status = sink.status();
  EXPECT_TRUE(status.healthy);
  EXPECT_EQ(status.records_written, 4u);
  for (const char* suffix : {".jsonl", ".log"}) {
    const std::string path = dir.sub((std::string("loopcanary-fw-1.4.2") + suffix).c_str());
    if (std::strcmp(suffix, ".jsonl") == 0) {
      Lines lines;
      const lx::LogReadResult read = read_all(path, lines);
      EXPECT_EQ(read.records, 4u);
      EXPECT_FALSE(read.torn_tail);
      EXPECT_TRUE(lines.warnings.empty()) << lines.warnings.front();
    } else {
      const std::string log = slurp(path);
      EXPECT_EQ(occurrences(log, "==== loopcanary report"), 4u);
      EXPECT_TRUE(ends_with(log, "\n\n")) << "the text log ends with a whole record";
    }
  }
}

// ---- A short write whose ftruncate fails too; sync (power loss) --------------------------------

namespace {

// Fake ftruncate(2) that always fails (EIO), counting its calls.
int g_truncate_calls = 0;
int failing_ftruncate(int /*fd*/, off_t /*length*/) {
  ++g_truncate_calls;
  errno = EIO;
  return -1;
}

// Fake fdatasync(2) / fsync(2): records what was synced (the file's inode and its size then, or
// the directory) and fails while g_sync_fails is set.
struct SyncCall {
  bool directory;
  ino_t inode;
  off_t size;
};
std::vector<SyncCall> g_syncs;
bool g_sync_fails = false;
int recording_sync(int fd, bool directory) {
  struct stat st {};
  fstat(fd, &st);
  g_syncs.push_back(SyncCall{directory, st.st_ino, st.st_size});
  if (g_sync_fails) {
    errno = EIO;
    return -1;
  }
  return 0;
}

struct FileId {
  ino_t inode = 0;
  off_t size = 0;
};
FileId file_id(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return FileId{st.st_ino, st.st_size};
}

std::size_t syncs_of(ino_t inode) {
  return static_cast<std::size_t>(
      std::count_if(g_syncs.begin(), g_syncs.end(), [inode](const SyncCall& c) { return !c.directory && c.inode == inode; }));
}
std::size_t directory_syncs() {
  return static_cast<std::size_t>(
      std::count_if(g_syncs.begin(), g_syncs.end(), [](const SyncCall& c) { return c.directory; }));
}

}  // namespace

TEST(LinuxFileSink, ShortWriteWhoseTruncateFailsLeavesAFragmentThatReadersSkipAndCount) {
  TempDir dir;
  std::vector<std::string> messages;  // every error's message, in order
  lx::FileSinkConfig config = on_budget(config_for(dir.path()));
  config.on_error = [](void* context, const lx::SinkStatus& status) {
    static_cast<std::vector<std::string>*>(context)->emplace_back(status.message);
  };
  config.on_error_context = &messages;
  config.text = false;  // one log, so each failed record's message is its own
  config.fake_ftruncate = &failing_ftruncate;
  g_truncate_calls = 0;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);  // records 1 and 2: lines 1 and 2 of the .jsonl file
  EXPECT_EQ(g_truncate_calls, 0);
  g_space_left = 700;  // record 3's JSON line is cut after 700 bytes, and cannot be cut back
  rig.blocks(1);       // records 3 and 4 fail
  lx::SinkStatus status = sink.status();
  EXPECT_EQ(g_truncate_calls, 1);
  EXPECT_EQ(status.fragments_left, 1u);
  EXPECT_EQ(status.last_error, lx::SinkError::disk_full);
  EXPECT_EQ(status.records_written, 2u);
  EXPECT_EQ(status.records_failed, 2u);
  const std::string jsonl = dir.sub("loopcanary-fw-1.4.2.jsonl");
  g_space_left = kPlentyOfSpace;
  rig.blocks(1);  // records 5 and 6: the first starts on a line of its own
  status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(status.records_written, 4u);
  EXPECT_EQ(status.records_failed, 2u);
  EXPECT_EQ(status.fragments_left, 1u);
  rig.expect_ring_holds_every_report();

  // The fragment: 700 bytes on line 3, closed by the newline the next record starts with.
  const std::string text = slurp(jsonl);
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    ASSERT_NE(end, std::string::npos) << "the file ends with a whole line";
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[2].size(), 700u);
  EXPECT_EQ(lines[2].front(), '{');
  EXPECT_NE(lines[3].find("\"report\":5,"), std::string::npos) << lines[3].substr(0, 80);

  // read_log(): four records, the fragment skipped with one warning naming the file and line 3.
  Lines read;
  const lx::LogReadResult result = read_all(jsonl, read);
  EXPECT_EQ(result.records, 4u);
  EXPECT_EQ(result.malformed, 1u);
  EXPECT_FALSE(result.torn_tail);
  ASSERT_EQ(read.warnings.size(), 1u);
  EXPECT_NE(read.warnings[0].find(jsonl + ":3: "), std::string::npos) << read.warnings[0];

#if defined(LOOPCANARY_SINK_TEST_CAPTURES)
  // The tool: the same four records, the fragment one malformed_json warning at file:3.
  std::ostringstream warnings;
  lt::Reader reader(warnings);
  std::vector<std::uint32_t> reports;
  ASSERT_TRUE(reader.read_file(jsonl, [&](lt::LogRecord& r) { reports.push_back(static_cast<std::uint32_t>(r.report)); }));
  EXPECT_EQ(reports, (std::vector<std::uint32_t>{1, 2, 5, 6}));
  EXPECT_EQ(reader.stats().warnings_of(lt::WarningKind::malformed_json), 1u);
  EXPECT_EQ(reader.stats().warnings_total(), 1u);
  EXPECT_NE(warnings.str().find(jsonl + ":3:"), std::string::npos) << warnings.str();
#endif

  // Record 3's error names the file, the write's error, the failed ftruncate and the fragment;
  // record 4 found no space at all (nothing to cut back).
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], "write '" + jsonl + "': No space left on device; ftruncate failed (Input/output error): " +
                             "700 bytes of the record stay in the file");
  EXPECT_EQ(messages[1], "write '" + jsonl + "': No space left on device");
}

TEST(LinuxFileSink, SyncFlushesEachFileAfterEveryRecordAndTheDirectoryAfterEachNewName) {
  TempDir dir;
  lx::FileSinkConfig config = config_for(dir.path());
  config.fake_sync = &recording_sync;
  config.max_file_bytes = 8192;  // a few records per file: rotations
  g_syncs.clear();
  g_sync_fails = false;

  {  // Off (the default): never called.
    TempDir other;
    lx::FileSinkConfig off = config_for(other.path());
    off.fake_sync = &recording_sync;
    lx::FileSink sink;
    ASSERT_EQ(sink.open(off), lx::SinkError::none);
    SimRig rig(&sink);
    rig.blocks(2);
    EXPECT_EQ(sink.status().records_written, 4u);
    EXPECT_TRUE(g_syncs.empty());
  }

  config.sync = true;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  EXPECT_EQ(directory_syncs(), 2u) << "the two new files' names";
  const std::string jsonl = dir.sub("loopcanary-fw-1.4.2.jsonl");
  const std::string log = dir.sub("loopcanary-fw-1.4.2.log");
  SimRig rig(&sink);
  rig.blocks(1);
  // Each record flushed each file, after it was written: the last flush saw the file whole.
  const FileId json_id = file_id(jsonl);
  const FileId log_id = file_id(log);
  EXPECT_EQ(syncs_of(json_id.inode), 2u);
  EXPECT_EQ(syncs_of(log_id.inode), 2u);
  ASSERT_FALSE(g_syncs.empty());
  EXPECT_EQ(g_syncs.back().inode, log_id.inode);
  EXPECT_EQ(g_syncs.back().size, log_id.size);
  const auto last_json =
      std::find_if(g_syncs.rbegin(), g_syncs.rend(), [&](const SyncCall& c) { return c.inode == json_id.inode; });
  EXPECT_EQ(last_json->size, json_id.size);

  // Rotations: every rename and every new file is followed by a flush of the directory.
  rig.blocks(6);
  const lx::SinkStatus status = sink.status();
  EXPECT_GT(status.rotations, 0u);
  EXPECT_EQ(directory_syncs(), 2u + 2u * status.rotations);  // the rename, then the new file
  std::size_t file_syncs = g_syncs.size() - directory_syncs();
  EXPECT_EQ(file_syncs, 2u * status.records_written);
  EXPECT_EQ(status.records_written, 14u);
  EXPECT_EQ(status.records_unsynced, 0u);
  EXPECT_TRUE(status.healthy);
}

TEST(LinuxFileSink, FailedSyncIsReportedAndTheRecordCountedUnsynced) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSinkConfig config = config_for(dir.path(), &errors);
  config.fake_sync = &recording_sync;
  config.sync = true;
  g_syncs.clear();
  g_sync_fails = false;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  EXPECT_EQ(errors.calls, 0);

  g_sync_fails = true;  // the device reports an I/O error on flush
  lc::BlockRecord record{};
  record.qualifier = "sink-test";
  record.loop = "main";
  record.event = &kEvent;
  record.tick_hz = sim::kTickHz;
  record.report = 99;
  EXPECT_FALSE(sink.write(record)) << "write() says the record may not be on the device";
  lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::sync_failed);
  EXPECT_EQ(status.last_errno, EIO);
  const std::string jsonl = dir.sub("loopcanary-fw-1.4.2.jsonl");
  EXPECT_NE(std::strstr(status.message, ("sync (fdatasync) '" + dir.sub("loopcanary-fw-1.4.2.log")).c_str()), nullptr)
      << status.message;  // the last of the two files that failed
  EXPECT_NE(std::strstr(status.message, "Input/output error"), nullptr) << status.message;
  EXPECT_FALSE(status.healthy);
  EXPECT_EQ(status.records_written, 3u) << "in the files: readers see it";
  EXPECT_EQ(status.records_unsynced, 1u);
  EXPECT_EQ(status.records_failed, 0u);
  EXPECT_EQ(status.errors, 2u) << "one per file";
  EXPECT_EQ(errors.calls, 1);
  Lines lines;
  EXPECT_EQ(read_all(jsonl, lines).records, 3u);

  g_sync_fails = false;  // the flush works again
  rig.blocks(1);
  status = sink.status();
  EXPECT_TRUE(status.healthy);
  EXPECT_EQ(status.records_written, 5u);
  EXPECT_EQ(status.records_unsynced, 1u);
  EXPECT_EQ(errors.calls, 1);
}

TEST(LinuxFileSink, RecordLargerThanTheLimitIsReported) {
  TempDir dir;
  lx::FileSinkConfig config = config_for(dir.path());
  config.max_record_bytes = 512;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::record_too_large);
  EXPECT_EQ(status.records_failed, 2u);
  rig.expect_ring_holds_every_report();
}

TEST(LinuxFileSink, QualifierCannotSteerAPathOutsideTheDirectory) {
  TempDir outer;
  const std::string logs = outer.sub("logs");
  ASSERT_EQ(mkdir(logs.c_str(), 0700), 0);
  for (const char* qualifier : {"../../evil", "/etc/passwd", "..", "a/b\\c", ".hidden", "x\ny"}) {
    lx::FileSinkConfig config = config_for(logs);
    config.qualifier = qualifier;
    lx::FileSink sink;
    ASSERT_EQ(sink.open(config), lx::SinkError::none) << qualifier;
    lc::BlockRecord record;
    record.qualifier = qualifier;
    EXPECT_TRUE(sink.write(record));
    EXPECT_EQ(std::strchr(sink.stem(), '/'), nullptr);
    EXPECT_EQ(std::strncmp(sink.stem(), "loopcanary-", 11), 0) << sink.stem();
    EXPECT_NE(sink.stem()[11], '.') << sink.stem();
  }
  const std::vector<std::string> outside = list(outer.path());
  ASSERT_EQ(outside.size(), 1u) << "nothing but logs/ in the parent";
  for (const std::string& name : list(logs)) EXPECT_EQ(name.rfind("loopcanary-", 0), 0u) << name;
}

TEST(LinuxFileSink, PlantedSymlinkIsNotFollowed) {
  TempDir dir;
  const std::string target = dir.sub("target.txt");
  { std::ofstream(target) << "precious\n"; }
  ASSERT_EQ(symlink(target.c_str(), dir.sub("loopcanary-fw-1.4.2.jsonl").c_str()), 0);
  lx::FileSink sink;
  EXPECT_EQ(sink.open(config_for(dir.path())), lx::SinkError::file_open_failed);
  EXPECT_EQ(sink.status().last_errno, ELOOP);
  EXPECT_EQ(slurp(target), "precious\n");
}

TEST(LinuxFileSink, OldFilesAreRemovedByAge) {
  TempDir dir;
  const timespec old_times[2] = {{std::time(nullptr) - 3 * 24 * 3600, 0}, {std::time(nullptr) - 3 * 24 * 3600, 0}};
  const std::vector<std::string> rotated = {"loopcanary-fw-1.4.2.20200101T000000Z-000001.jsonl",
                                            "loopcanary-fw-1.4.2.20200101T000000Z-000002.log",
                                            "loopcanary-fw-1.4.2.20200101T000000Z-000003.lcb"};
  for (const std::string& name : rotated) {
    { std::ofstream(dir.sub(name.c_str())) << "{}\n"; }
    ASSERT_EQ(utimensat(AT_FDCWD, dir.sub(name.c_str()).c_str(), old_times, 0), 0);
  }
  { std::ofstream(dir.sub("loopcanary-fw-1.4.2.jsonl")) << "{\"old\":1}\n"; }  // a current file, also old
  ASSERT_EQ(utimensat(AT_FDCWD, dir.sub("loopcanary-fw-1.4.2.jsonl").c_str(), old_times, 0), 0);
  { std::ofstream(dir.sub("notes.txt")) << "not ours\n"; }
  ASSERT_EQ(utimensat(AT_FDCWD, dir.sub("notes.txt").c_str(), old_times, 0), 0);

  lx::FileSinkConfig config = config_for(dir.path());
  config.binary = true;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.removed_by_age, 4u) << "three rotated files and the stale current one";
  EXPECT_EQ(status.rotations, 1u);
  std::vector<std::string> left = list(dir.path());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"loopcanary-fw-1.4.2.jsonl", "loopcanary-fw-1.4.2.lcb",
                                            "loopcanary-fw-1.4.2.log", "notes.txt"}));
}

TEST(LinuxFileSink, ReopeningAFileWithATornTailRotatesIt) {
  TempDir dir;
  const std::string jsonl = dir.sub("loopcanary-fw-1.4.2.jsonl");
  { std::ofstream(jsonl) << "{\"report\":1}\n{\"report\":2,\"pha"; }  // a crash mid-record
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config_for(dir.path())), lx::SinkError::none);
  EXPECT_EQ(sink.status().rotations, 1u);
  SimRig rig(&sink);
  rig.blocks(1);
  Lines lines;
  const lx::LogReadResult read = read_all(jsonl, lines);
  EXPECT_EQ(read.records, 2u);
  EXPECT_EQ(read.malformed, 0u);
  EXPECT_TRUE(lines.warnings.empty());
  // The torn record stays at the end of the rotated file (kill_test.cpp: every form, real kills).
  std::string rotated;
  for (const std::string& name : list(dir.path())) {
    if (name != "loopcanary-fw-1.4.2.jsonl" && ends_with(name, ".jsonl")) rotated = dir.sub(name.c_str());
  }
  ASSERT_NE(rotated, "");
  Lines old;
  const lx::LogReadResult left = read_all(rotated, old);
  EXPECT_EQ(left.records, 1u);
  EXPECT_EQ(left.malformed, 0u);
  EXPECT_TRUE(left.torn_tail);
}

TEST(LinuxFileSink, ReaderSkipsATornTailAndGarbageWithWarnings) {
  TempDir dir;
  const std::string path = dir.sub("log.jsonl");
  {
    std::ofstream out(path, std::ios::binary);
    out << "{\"report\":1,\"stacks\":[{\"pcs\":[\"0x1\"]}]}\n";
    out << "{\"report\":2,\"unbalanced\":[}\n";
    out << "garbage\x01\x02\n";
    out << "\n";
    out << "{\"report\":3,\"s\":\"a \\\" } quoted brace\"}\n";
    out << "{\"report\":4,\"phase\":\"fi";
  }
  Lines lines;
  const lx::LogReadResult read = read_all(path, lines);
  EXPECT_EQ(read.records, 2u);
  EXPECT_EQ(read.malformed, 2u);
  EXPECT_TRUE(read.torn_tail);
  ASSERT_EQ(lines.warnings.size(), 3u);
  EXPECT_NE(lines.warnings[0].find(path + ":2: "), std::string::npos) << lines.warnings[0];
  EXPECT_NE(lines.warnings[1].find(path + ":3: "), std::string::npos) << lines.warnings[1];
  EXPECT_NE(lines.warnings[2].find(path + ":6: torn record"), std::string::npos) << lines.warnings[2];

  Lines missing;
  const lx::LogReadResult none = read_all(dir.sub("absent.jsonl"), missing);
  EXPECT_EQ(none.sys_errno, ENOENT);
  ASSERT_EQ(missing.warnings.size(), 1u);
}

TEST(LinuxFileSink, WriteBeforeOpenOrAfterCloseFails) {
  lx::FileSink sink;
  lc::BlockRecord record;
  EXPECT_FALSE(sink.write(record));
  EXPECT_EQ(sink.status().last_error, lx::SinkError::not_open);
  TempDir dir;
  ASSERT_EQ(sink.open(config_for(dir.path())), lx::SinkError::none);
  EXPECT_TRUE(sink.write(record));
  sink.close();
  EXPECT_FALSE(sink.write(record));
  EXPECT_FALSE(sink.status().open);
}

// ---- Issue 19: files that vanish, rotation order across restarts, long paths --------------

namespace {

const char* const kJsonl = "loopcanary-fw-1.4.2.jsonl";
const char* const kTextLog = "loopcanary-fw-1.4.2.log";

// "<qualifier>#<report>" of every record in a .jsonl file, in file order.
std::vector<std::string> records_in(const std::string& path) {
  Lines lines;
  read_all(path, lines);
  std::vector<std::string> ids;
  for (const std::string& line : lines.records) {
    const std::size_t q = line.find("\"qualifier\":\"");
    const std::size_t q_end = line.find('"', q + 13);
    const std::string qualifier = q == std::string::npos ? "?" : line.substr(q + 13, q_end - q - 13);
    const std::size_t r = line.find("\"report\":");  // {"format_version":1,"report":N
    ids.push_back(qualifier + "#" + (r == std::string::npos ? std::string("?")
                                                            : std::to_string(std::strtoul(line.c_str() + r + 9, nullptr, 10))));
  }
  return ids;
}

// Every record in the directory's .jsonl files: rotated files in name order, then the current one.
std::vector<std::string> records_in_name_order(const std::string& directory) {
  std::vector<std::string> rotated;
  for (const std::string& name : list(directory)) {
    if (ends_with(name, ".jsonl") && name != kJsonl) rotated.push_back(name);
  }
  std::sort(rotated.begin(), rotated.end());
  rotated.emplace_back(kJsonl);
  std::vector<std::string> all;
  for (const std::string& name : rotated) {
    for (std::string& id : records_in(directory + "/" + name)) all.push_back(std::move(id));
  }
  return all;
}

lx::FileSinkConfig no_periodic_check(lx::FileSinkConfig config) {
  config.check_files_ms = 3'600'000;  // only check() and rotations check in these tests
  return config;
}

std::string repeat(char c, std::size_t n) { return std::string(n, c); }

}  // namespace

TEST(LinuxFileSink, DeletedFileIsReportedOnceRecreatedAndItsLostRecordsCounted) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(no_periodic_check(config_for(dir.path(), &errors))), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);  // reports 1, 2: on disk
  EXPECT_TRUE(sink.check());
  ASSERT_EQ(unlink(dir.sub(kJsonl).c_str()), 0);  // a cleaner removes the current file
  rig.blocks(2);                                  // reports 3..6 go into the unlinked file
  EXPECT_EQ(errors.calls, 0) << "not noticed before the next check";
  EXPECT_FALSE(sink.check());
  lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::file_vanished);
  EXPECT_EQ(status.records_lost, 4u);
  EXPECT_EQ(status.records_failed, 4u);
  EXPECT_EQ(status.records_written, 2u);
  EXPECT_EQ(status.errors, 1u);
  EXPECT_TRUE(status.open);
  EXPECT_NE(std::strstr(status.message, dir.sub(kJsonl).c_str()), nullptr) << status.message;
  EXPECT_NE(std::strstr(status.message, "deleted"), nullptr) << status.message;
  EXPECT_EQ(errors.calls, 1);
  EXPECT_EQ(errors.last.last_error, lx::SinkError::file_vanished);

  rig.blocks(1);  // reports 7, 8: in a new file
  EXPECT_TRUE(sink.check());
  status = sink.status();
  EXPECT_TRUE(status.healthy);
  EXPECT_EQ(status.errors, 1u) << "said once";
  EXPECT_EQ(errors.calls, 1);
  EXPECT_EQ(status.records_written, 4u);
  EXPECT_EQ(status.records_written + status.records_failed, rig.reports());
  EXPECT_EQ(records_in(dir.sub(kJsonl)), (std::vector<std::string>{"sink-test#7", "sink-test#8"}));
  // The text log was not touched: it holds every record.
  std::size_t headers = 0;
  const std::string log = slurp(dir.sub(kTextLog));
  for (std::size_t at = log.find("==== loopcanary"); at != std::string::npos;
       at = log.find("==== loopcanary", at + 1)) {
    ++headers;
  }
  EXPECT_EQ(headers, 8u);
  rig.expect_ring_holds_every_report();
}

TEST(LinuxFileSink, DeletedFileIsNoticedAtTheNextPeriodicCheck) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSinkConfig config = config_for(dir.path(), &errors);
  config.check_files_ms = 0;  // before every record
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);  // reports 1, 2, each after a check
  ASSERT_EQ(unlink(dir.sub(kJsonl).c_str()), 0);
  ASSERT_EQ(unlink(dir.sub(kTextLog).c_str()), 0);
  rig.blocks(1);  // noticed before report 3 is written
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::file_vanished);
  // Report 2 was written after the last check that found the file: it counts as lost (it went
  // with the file), none after it does.
  EXPECT_EQ(status.records_lost, 1u);
  EXPECT_EQ(status.records_written, 3u);
  EXPECT_EQ(status.errors, 1u);
  EXPECT_EQ(errors.calls, 1);
  EXPECT_EQ(records_in(dir.sub(kJsonl)), (std::vector<std::string>{"sink-test#3", "sink-test#4"}));
  EXPECT_NE(slurp(dir.sub(kTextLog)).find("==== loopcanary report 4 "), std::string::npos);
}

TEST(LinuxFileSink, MovedFileLosesNothingAndANewOneIsStarted) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(no_periodic_check(config_for(dir.path(), &errors))), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  ASSERT_EQ(rename(dir.sub(kJsonl).c_str(), dir.sub("shipped.jsonl").c_str()), 0);  // a log shipper
  rig.blocks(1);
  EXPECT_FALSE(sink.check());
  rig.blocks(1);
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::file_vanished);
  EXPECT_NE(std::strstr(status.message, "moved"), nullptr) << status.message;
  EXPECT_EQ(status.records_lost, 0u);
  EXPECT_EQ(status.records_failed, 0u);
  EXPECT_EQ(status.errors, 1u);
  EXPECT_EQ(errors.calls, 1);
  EXPECT_EQ(records_in(dir.sub("shipped.jsonl")),
            (std::vector<std::string>{"sink-test#1", "sink-test#2", "sink-test#3", "sink-test#4"}));
  EXPECT_EQ(records_in(dir.sub(kJsonl)), (std::vector<std::string>{"sink-test#5", "sink-test#6"}));
}

TEST(LinuxFileSink, DeletedDirectoryIsRecreated) {
  TempDir dir;
  const std::string logs = dir.sub("logs");
  ErrorLog errors;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(no_periodic_check(config_for(logs, &errors))), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  EXPECT_TRUE(sink.check());
  TempDir::remove_tree(logs);  // rm -rf logs
  rig.blocks(1);               // reports 3, 4: into unlinked files
  EXPECT_FALSE(sink.check());
  lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::directory_vanished);
  EXPECT_NE(std::strstr(status.message, logs.c_str()), nullptr) << status.message;
  EXPECT_EQ(status.records_lost, 2u);
  EXPECT_EQ(status.errors, 1u);
  EXPECT_EQ(errors.calls, 1);
  struct stat st {};
  ASSERT_EQ(stat(logs.c_str(), &st), 0) << "recreated";
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  rig.blocks(1);
  status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(status.records_written, 4u);
  EXPECT_EQ(status.records_failed, 2u);
  EXPECT_EQ(records_in(logs + "/" + kJsonl), (std::vector<std::string>{"sink-test#5", "sink-test#6"}));
  EXPECT_NE(slurp(logs + "/" + kTextLog).find("==== loopcanary report 6 "), std::string::npos);
  rig.expect_ring_holds_every_report();
}

TEST(LinuxFileSink, DeletedDirectoryThatCannotBeRecreatedIsRetried) {
  TempDir dir;
  const std::string logs = dir.sub("logs");
  ErrorLog errors;
  lx::FileSinkConfig config = config_for(logs, &errors);
  config.check_files_ms = 0;
  config.create_directory = false;
  config.retry_open_ms = 0;
  ASSERT_EQ(mkdir(logs.c_str(), 0700), 0);
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  TempDir::remove_tree(logs);
  rig.blocks(1);  // noticed, cannot be recreated (create_directory off): both records fail
  lx::SinkStatus status = sink.status();
  EXPECT_FALSE(status.open);
  EXPECT_EQ(status.last_error, lx::SinkError::directory_not_found);
  EXPECT_EQ(status.records_lost, 1u) << "report 2, written after the last check, went with the directory";
  EXPECT_EQ(status.records_failed, 3u);
  EXPECT_EQ(status.errors, 3u) << "the directory vanished, then two failed attempts to open it";
  ASSERT_EQ(mkdir(logs.c_str(), 0700), 0);
  rig.blocks(1);
  status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(records_in(logs + "/" + kJsonl), (std::vector<std::string>{"sink-test#5", "sink-test#6"}));
}

TEST(LinuxFileSink, LostRecordsAreCountedAtClose) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(no_periodic_check(config_for(dir.path(), &errors))), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  ASSERT_EQ(unlink(dir.sub(kJsonl).c_str()), 0);
  rig.blocks(1);
  sink.close();  // the last check
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.records_lost, 4u) << "every record since the last check (here: open)";
  EXPECT_EQ(status.records_failed, 4u);
  EXPECT_EQ(status.records_written, 0u);
  EXPECT_EQ(errors.calls, 1);
  EXPECT_FALSE(status.open);
}

TEST(LinuxFileSink, SmallSizeLimitRotationRecoversAfterDeletion) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSinkConfig config = no_periodic_check(config_for(dir.path(), &errors));
  config.max_file_bytes = 8192;
  config.max_files = 3;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(3);
  ASSERT_EQ(unlink(dir.sub(kJsonl).c_str()), 0);
  ASSERT_EQ(unlink(dir.sub(kTextLog).c_str()), 0);
  rig.blocks(30);  // the first rotation due finds the file gone: a new one, then rotations as usual
  const lx::SinkStatus status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(status.errors, 1u) << status.message;
  EXPECT_EQ(errors.calls, 1);
  EXPECT_EQ(status.records_failed, status.records_lost);
  EXPECT_GT(status.records_written, 50u);
  EXPECT_EQ(status.records_written + status.records_failed, rig.reports());
  EXPECT_GT(status.rotations, 2u);
  const std::vector<std::string> on_disk = records_in_name_order(dir.path());
  ASSERT_FALSE(on_disk.empty());
  EXPECT_EQ(on_disk.back(), "sink-test#66");
  rig.expect_ring_holds_every_report();
}

namespace {

// Returns just after the wall clock's second changes, so what follows runs within one second.
void wait_for_next_second() {
  timespec start{};
  clock_gettime(CLOCK_REALTIME, &start);
  timespec now = start;
  while (now.tv_sec == start.tv_sec) clock_gettime(CLOCK_REALTIME, &now);
}

// The qualifier's records numbered in write order across both runs: run-a#1 is 1, run-b#1 is
// `a_count` + 1.
std::vector<unsigned long> write_order(const std::vector<std::string>& ids, unsigned long a_count) {
  std::vector<unsigned long> order;
  for (const std::string& id : ids) {
    const unsigned long n = std::strtoul(id.c_str() + id.find('#') + 1, nullptr, 10);
    order.push_back(id.rfind("run-b#", 0) == 0 ? a_count + n : n);
  }
  return order;
}

}  // namespace

TEST(LinuxFileSink, RestartInTheSameSecondKeepsTheNewestRecords) {
  TempDir dir;
  lx::FileSinkConfig config = config_for(dir.path());
  config.max_file_bytes = 8192;
  config.max_files = 3;
  config.text = false;
  wait_for_next_second();  // both runs rotate within one wall-clock second
  {
    lx::FileSink first;
    ASSERT_EQ(first.open(config), lx::SinkError::none);
    SimRig rig(&first, "run-a");
    rig.blocks(30);  // 60 records
    ASSERT_GT(first.status().rotations, 2u);
  }
  lx::FileSink second;  // the restarted process
  ASSERT_EQ(second.open(config), lx::SinkError::none);
  SimRig rig(&second, "run-b");
  rig.blocks(10);  // 20 records, fewer rotations than the first run made
  ASSERT_GT(second.status().rotations, 2u);
  EXPECT_TRUE(second.status().healthy) << second.status().message;

  // Read back in name order, the records are in write order and are the newest ones: a
  // contiguous run ending with run-b's last record.
  const std::vector<unsigned long> order = write_order(records_in_name_order(dir.path()), 60);
  ASSERT_FALSE(order.empty());
  EXPECT_EQ(order.back(), 80u);
  for (std::size_t i = 1; i < order.size(); ++i) {
    EXPECT_EQ(order[i], order[i - 1] + 1) << "record " << i << " of " << order.size();
  }
  EXPECT_GE(order.size(), 10u);
}

TEST(LinuxFileSink, RetentionRemovesTheOldestRecordsWhenTheClockWentBack) {
  TempDir dir;
  // A predecessor's rotated files, named by a wall clock that was ahead (it has been set back
  // since): their names sort after every file this run rotates.
  for (const char* name : {"loopcanary-fw-1.4.2.29991231T235959Z-000006.jsonl",
                           "loopcanary-fw-1.4.2.29991231T235959Z-000007.jsonl"}) {
    std::ofstream(dir.sub(name)) << "{\"report\":1,\"qualifier\":\"old\"}\n";
  }
  lx::FileSinkConfig config = config_for(dir.path());
  config.max_file_bytes = 8192;
  config.max_files = 3;
  config.text = false;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(6);
  ASSERT_GE(sink.status().rotations, 2u);
  EXPECT_EQ(sink.status().removed_by_count, sink.status().rotations) << "one file out per file in";
  const std::vector<std::string> left = list(dir.path());
  for (const std::string& name : left) {
    EXPECT_EQ(name.find("29991231"), std::string::npos) << "the predecessor's files go first: " << name;
    // The serial goes on from the highest one found.
    if (name != kJsonl) {
      const unsigned long serial = std::strtoul(name.c_str() + name.rfind('-') + 1, nullptr, 10);
      EXPECT_GT(serial, 7u) << name;
    }
  }
  EXPECT_EQ(left.size(), 3u);
}

TEST(LinuxFileSink, MaxFilesHoldsAtEveryInstantOfARotation) {
  TempDir dir;
  const int watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(inotify_add_watch(watch, dir.path().c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO), 0);
  lx::FileSinkConfig config = config_for(dir.path());
  config.max_file_bytes = 8192;
  config.max_files = 3;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(30);
  ASSERT_GT(sink.status().rotations, 6u);

  // Replay the directory's events in order: the number of files of each kind at every instant.
  int count[2] = {0, 0};
  int most[2] = {0, 0};
  int events = 0;
  alignas(inotify_event) char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = read(watch, buffer, sizeof buffer);
    if (n <= 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      ASSERT_EQ(e->mask & IN_Q_OVERFLOW, 0u);
      const std::string name = e->len > 0 ? e->name : "";
      const int kind = ends_with(name, ".jsonl") ? 0 : ends_with(name, ".log") ? 1 : -1;
      if (kind < 0) continue;
      ++events;
      count[kind] += (e->mask & (IN_CREATE | IN_MOVED_TO)) != 0 ? 1 : -1;
      most[kind] = std::max(most[kind], count[kind]);
    }
  }
  close(watch);
  EXPECT_GT(events, 20);
  EXPECT_EQ(most[0], 3) << "at most max_files .jsonl files at any time";
  EXPECT_EQ(most[1], 3) << "at most max_files .log files at any time";
  EXPECT_EQ(count[0], 3);
  EXPECT_EQ(count[1], 3);
}

TEST(LinuxFileSink, ErrorsNameAPathTooLongForTheMessage) {
  TempDir dir;
  lx::FileSink sink;
  // One name longer than NAME_MAX: the kernel refuses it, the message names it.
  const std::string over_long = dir.sub(repeat('a', 300).c_str());
  lx::FileSinkConfig config = config_for(over_long);
  EXPECT_EQ(sink.open(config), lx::SinkError::directory_open_failed);
  lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_errno, ENAMETOOLONG);
  EXPECT_NE(std::strstr(status.message, (over_long + "': File name too long").c_str()), nullptr) << status.message;

  // A valid path longer than the message: shortened at the front, never empty.
  std::string deep = dir.path();
  for (int i = 0; i < 5; ++i) deep += "/" + repeat(static_cast<char>('b' + i), 200);
  config = config_for(deep);
  config.create_directory = false;
  EXPECT_EQ(sink.open(config), lx::SinkError::directory_not_found);
  status = sink.status();
  const std::string message = status.message;
  EXPECT_EQ(message.rfind("open directory '\u2026", 0), 0u) << message;
  EXPECT_NE(message.find(repeat('f', 200) + "': No such file or directory"), std::string::npos) << message;
}

TEST(LinuxFileSink, DirectoryPathLongerThan255BytesWorks) {
  TempDir dir;
  const std::string parent = dir.sub(repeat('p', 200).c_str());
  const std::string logs = parent + "/" + repeat('l', 100);
  ASSERT_EQ(mkdir(parent.c_str(), 0700), 0);
  ErrorLog errors;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config_for(logs, &errors)), lx::SinkError::none) << sink.status().message;
  SimRig rig(&sink);
  rig.blocks(1);
  EXPECT_EQ(records_in(logs + "/" + kJsonl), (std::vector<std::string>{"sink-test#1", "sink-test#2"}));
  ASSERT_EQ(unlink((logs + "/" + kJsonl).c_str()), 0);
  EXPECT_FALSE(sink.check());  // the message names the file under the long path
  EXPECT_NE(std::strstr(sink.status().message, (logs + "/" + kJsonl).c_str()), nullptr) << sink.status().message;
}

TEST(LinuxFileSink, ReaderWarningsNameALongPathAndTheLine) {
  TempDir dir;
  std::string deep = dir.path();
  for (int i = 0; i < 4; ++i) {
    deep += "/" + repeat(static_cast<char>('c' + i), 200);
    ASSERT_EQ(mkdir(deep.c_str(), 0700), 0);
  }
  const std::string path = deep + "/torn.jsonl";
  { std::ofstream(path) << "{\"report\":1}\n{\"report\":2,\"pha"; }
  Lines lines;
  const lx::LogReadResult read = read_all(path, lines);
  EXPECT_TRUE(read.torn_tail);
  ASSERT_EQ(lines.warnings.size(), 1u);
  EXPECT_NE(lines.warnings[0].find(repeat('f', 200) + "/torn.jsonl:2: torn record"), std::string::npos)
      << lines.warnings[0];
  Lines missing;
  read_all(deep + "/absent.jsonl", missing);
  ASSERT_EQ(missing.warnings.size(), 1u);
  EXPECT_NE(missing.warnings[0].find("/absent.jsonl: cannot open: No such file or directory"), std::string::npos)
      << missing.warnings[0];
}

// ---- Issue 14: the binary form (<stem>.lcb) -------------------------------------------------

namespace {

const char* const kBinary = "loopcanary-fw-1.4.2.lcb";

lx::FileSinkConfig binary_only(lx::FileSinkConfig config) {
  config.json = false;
  config.text = false;
  config.binary = true;
  return config;
}

}  // namespace

TEST(LinuxFileSink, BinaryAloneIsAnOutput) {
  TempDir dir;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(binary_only(config_for(dir.path()))), lx::SinkError::none) << sink.status().message;
  EXPECT_EQ(list(dir.path()), (std::vector<std::string>{kBinary}));
  lx::FileSinkConfig none = binary_only(config_for(dir.path()));
  none.binary = false;
  EXPECT_EQ(sink.open(none), lx::SinkError::no_output);
}

TEST(LinuxFileSink, BinaryRecordLargerThanTheLimitIsReported) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSinkConfig config = binary_only(config_for(dir.path(), &errors));
  config.max_record_bytes = 64;  // below any packet of these records
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::record_too_large);
  EXPECT_NE(std::strstr(status.message, kBinary), nullptr) << status.message;
  EXPECT_EQ(status.records_failed, 2u);
  EXPECT_EQ(status.records_written, 0u);
  EXPECT_EQ(errors.calls, 2);
  rig.expect_ring_holds_every_report();
  EXPECT_EQ(slurp(dir.sub(kBinary)), "") << "nothing of a refused packet is written";
}

#if defined(LOOPCANARY_SINK_TEST_CAPTURES)  // the .lcb files read back: the tool's capture reader

namespace {

// The packets of a .lcb file, read by the host tool's capture reader (sim/tool/packet_reader.hpp):
// report numbers, packet lengths (from the header's length field) and the records' JSON lines
// (format_record_json) in file order; `error`
// names the first problem the reader met (garbage, a torn or damaged packet, a malformed body,
// a previous_boot packet), "" when the file is whole block packets and nothing else.
struct Packets {
  std::vector<std::uint32_t> reports;  // in file order
  std::vector<std::size_t> sizes;
  std::vector<std::string> json;
  std::string error;
};

Packets packets_in(const std::string& path) {
  const std::string bytes = slurp(path);
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  Packets out;
  const auto fail = [&out](const std::string& what) {
    if (out.error.empty()) out.error = what;
  };
  lt::CaptureReader reader;
  reader.read(
      p, bytes.size(),
      [&](lt::DecodedRecord& d) {
        const auto at = static_cast<std::size_t>(d.offset);
        if (d.previous_boot) fail("a previous_boot packet at offset " + std::to_string(at));
        out.reports.push_back(d.record.report);
        out.sizes.push_back(lc::kPacketHeaderBytes + (p[at + 4] | (std::size_t{p[at + 5]} << 8)) +
                            lc::kPacketTrailerBytes);
        out.json.emplace_back();
        lt::format_record_json(d, out.json.back());
      },
      [&](lt::WarningKind, std::uint64_t offset, const std::string& what) {
        fail("offset " + std::to_string(offset) + ": " + what);
      });
  return out;
}

}  // namespace

TEST(LinuxFileSink, BinaryFormHoldsOnePacketPerRecordBesideTheOtherForms) {
  TempDir dir;
  lx::FileSinkConfig config = config_for(dir.path());
  config.binary = true;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none) << sink.status().message;
  SimRig rig(&sink);
  rig.blocks(3);
  const lx::SinkStatus status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(status.records_written, 6u);
  rig.expect_ring_holds_every_report();
  std::vector<std::string> names = list(dir.path());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{kJsonl, kBinary, kTextLog}));
  struct stat st {};
  ASSERT_EQ(stat(dir.sub(kBinary).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const Packets packets = packets_in(dir.sub(kBinary));
  EXPECT_EQ(packets.error, "");
  EXPECT_EQ(packets.reports, (std::vector<std::uint32_t>{1, 2, 3, 4, 5, 6}));
  Lines lines;
  EXPECT_EQ(read_all(dir.sub(kJsonl), lines).records, 6u);
  // Each packet holds the record of its JSON line (the line without the Linux port's "linux"
  // member, which the binary form does not carry).
  std::vector<std::string> core_lines;
  for (const std::string& line : lines.records) core_lines.push_back(line.substr(0, line.find(",\"linux\":")) + "}");
  EXPECT_EQ(packets.json, core_lines);
  std::size_t binary_bytes = 0;
  for (const std::size_t n : packets.sizes) binary_bytes += n;
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), binary_bytes);
  std::size_t json_bytes = 0;
  for (const std::string& line : lines.records) json_bytes += line.size() + 1;
  EXPECT_LT(binary_bytes * 4, json_bytes) << "the binary form is compact";
}

TEST(LinuxFileSink, BinaryFilesRotateAtTheSizeLimitAndHoldWholePackets) {
  TempDir dir;
  lx::FileSinkConfig config = binary_only(config_for(dir.path()));
  config.max_file_bytes = 4096;
  config.max_files = 3;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(100);
  const lx::SinkStatus status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(status.records_written, 200u);
  EXPECT_GT(status.rotations, 3u);
  EXPECT_GT(status.removed_by_count, 0u);
  rig.expect_ring_holds_every_report();

  std::vector<std::string> rotated;
  for (const std::string& name : list(dir.path())) {
    ASSERT_TRUE(ends_with(name, ".lcb")) << name;
    if (name != kBinary) rotated.push_back(name);
  }
  ASSERT_EQ(rotated.size(), 2u) << "max_files counts the current file";
  std::sort(rotated.begin(), rotated.end());  // by time, then serial: oldest first
  std::vector<std::uint32_t> reports;
  std::size_t previous_size = 0;  // of the file before this one (0: none)
  for (const std::string& name : {rotated[0], rotated[1], std::string(kBinary)}) {
    // <stem>.YYYYmmddTHHMMSSZ-<serial>.lcb
    if (name != kBinary) {
      EXPECT_EQ(name.rfind("loopcanary-fw-1.4.2.", 0), 0u) << name;
      EXPECT_EQ(name.size(), std::strlen("loopcanary-fw-1.4.2.") + 17 + 6 + 4) << name;
      EXPECT_EQ(name[std::strlen("loopcanary-fw-1.4.2.") + 15], 'Z') << name;
    }
    struct stat st {};
    ASSERT_EQ(stat(dir.sub(name.c_str()).c_str(), &st), 0);
    EXPECT_LE(st.st_size, 4096) << name;
    const Packets packets = packets_in(dir.sub(name.c_str()));
    EXPECT_EQ(packets.error, "") << name;
    EXPECT_FALSE(packets.reports.empty()) << name;
    if (previous_size != 0 && !packets.sizes.empty()) {
      EXPECT_GT(previous_size + packets.sizes.front(), 4096u)
          << name << ": the file before it was rotated only when this file's first packet did not fit";
    }
    previous_size = static_cast<std::size_t>(st.st_size);
    reports.insert(reports.end(), packets.reports.begin(), packets.reports.end());
  }
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back(), 200u) << "the newest record is kept";
  for (std::size_t i = 1; i < reports.size(); ++i) EXPECT_EQ(reports[i], reports[i - 1] + 1) << i;
}

TEST(LinuxFileSink, ReopenedBinaryFileGoesOnWithNothingBetweenPackets) {
  TempDir dir;
  const lx::FileSinkConfig config = binary_only(config_for(dir.path()));
  {
    lx::FileSink sink;
    ASSERT_EQ(sink.open(config), lx::SinkError::none);
    SimRig rig(&sink);
    rig.blocks(1);
  }
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  const Packets packets = packets_in(dir.sub(kBinary));
  EXPECT_EQ(packets.error, "") << "a packet's last byte is not a torn text line";
  EXPECT_EQ(packets.reports, (std::vector<std::uint32_t>{1, 2, 1, 2}));
}

TEST(LinuxFileSink, DiskFullLeavesOnlyWholePackets) {
  TempDir dir;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(on_budget(binary_only(config_for(dir.path())))), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  const Packets first = packets_in(dir.sub(kBinary));
  ASSERT_EQ(first.sizes.size(), 2u);
  g_space_left = first.sizes[0] / 2;  // the disk fills up in the middle of the next packet
  rig.blocks(1);
  EXPECT_EQ(sink.status().last_error, lx::SinkError::disk_full);
  g_space_left = kPlentyOfSpace;  // space again
  rig.blocks(1);
  const lx::SinkStatus status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(status.records_written, 4u);
  EXPECT_EQ(status.records_failed, 2u);
  const Packets packets = packets_in(dir.sub(kBinary));
  EXPECT_EQ(packets.error, "");
  EXPECT_EQ(packets.reports, (std::vector<std::uint32_t>{1, 2, 5, 6}));
}

#endif  // LOOPCANARY_SINK_TEST_CAPTURES

// ---- Health records (issue 15): the same files, forms and rules as block records.

namespace {

constexpr lc::Event kTickEvent{"tick"};

// A health record of loop "main" for the window ending at `number` seconds (1 MHz ticks).
lc::HealthRecord sink_health(std::uint32_t number) {
  lc::HealthRecord h{};
  h.number = number;
  h.qualifier = "sink-test";
  h.loop = "main";
  h.tick_hz = 1'000'000;
  h.start = (number - 1) * 1'000'000u;
  h.end = number * 1'000'000u;
  h.dispatches = 100 * number;
  h.busy_ticks = 250'000;
  h.has_idle = true;
  h.idle_ticks = 700'000;
  h.event_count = 1;
  h.events[0].event = &kTickEvent;
  h.events[0].dispatches = 100;
  h.events[0].p99 = 900;
  return h;
}

}  // namespace

TEST(LinuxFileSink, WritesHealthRecordsBesideBlockRecordsInTheTextForms) {
  TempDir dir;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config_for(dir.path())), lx::SinkError::none) << sink.status().message;
  SimRig rig(&sink);
  rig.blocks(1);
  lx::FileSink::health_interceptor(&sink, sink_health(1));
  EXPECT_TRUE(sink.write_health(sink_health(2)));
  const lx::SinkStatus status = sink.status();
  EXPECT_TRUE(status.healthy) << status.message;
  EXPECT_EQ(status.records_written, rig.reports() + 2u);
  EXPECT_EQ(status.health_written, 2u);
  Lines lines;
  EXPECT_EQ(read_all(dir.sub(kJsonl), lines).records, rig.reports() + 2u);
  EXPECT_TRUE(lines.warnings.empty());
  std::vector<std::string> health;
  for (const std::string& line : lines.records) {
    if (line.rfind("{\"kind\":\"health\"", 0) == 0) health.push_back(line);
  }
  ASSERT_EQ(health.size(), 2u);
  // The core's line, with the "linux" member (time and clock) before its closing brace.
  const lc::HealthRecord h = sink_health(2);
  std::string core(8192, '\0');
  core.resize(lc::format_health_json(h, &core[0], core.size()).length);
  ASSERT_GT(core.size(), 2u);
  const std::string clock = lx::clock_info().tick_hz == 1'000'000u ? lx::clock_info().name : "other";
  EXPECT_EQ(health[1].substr(0, core.size() - 2), core.substr(0, core.size() - 2));
  EXPECT_NE(health[1].find(",\"linux\":{\"time\":\"", core.size() - 2), std::string::npos) << health[1];
  EXPECT_NE(health[1].find("\"clock\":\"" + clock + "\"}}"), std::string::npos) << health[1];
  // The text log: a header per health record, the core's text form, a blank line after it.
  const std::string log = slurp(dir.sub(kTextLog));
  EXPECT_EQ(occurrences(log, "==== loopcanary health "), 2u);
  EXPECT_NE(log.find("==== loopcanary health 2 ====\ntime = "), std::string::npos) << log;
  EXPECT_NE(log.find("\nhealth = 2\n"), std::string::npos) << log;
  EXPECT_NE(log.find("\nevent tick = "), std::string::npos) << log;
  EXPECT_TRUE(ends_with(log, "\n\n"));
}

TEST(LinuxFileSink, HealthRecordsRotateUnderTheSizeLimitAndStayWhole) {
  TempDir dir;
  lx::FileSinkConfig config = config_for(dir.path());
  config.max_file_bytes = 4096;
  config.max_files = 3;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  for (std::uint32_t i = 1; i <= 60; ++i) ASSERT_TRUE(sink.write_health(sink_health(i))) << sink.status().message;
  const lx::SinkStatus status = sink.status();
  EXPECT_GT(status.rotations, 0u);
  EXPECT_EQ(status.health_written, 60u);
  std::size_t jsonl = 0;
  std::uint64_t records = 0;
  for (const std::string& name : list(dir.path())) {
    struct stat st {};
    ASSERT_EQ(stat(dir.sub(name).c_str(), &st), 0);
    EXPECT_LE(st.st_size, 4096) << name;
    if (!ends_with(name, ".jsonl")) continue;
    ++jsonl;
    Lines lines;
    const lx::LogReadResult read = read_all(dir.sub(name), lines);
    EXPECT_FALSE(read.torn_tail) << name;
    EXPECT_TRUE(lines.warnings.empty()) << name;
    records += read.records;
  }
  EXPECT_EQ(jsonl, 3u) << "max_files holds for health records too";
  EXPECT_GT(records, 0u);
  EXPECT_LT(records, 60u) << "the oldest files were removed";
}

TEST(LinuxFileSink, HealthRecordsOnAFullDiskAreWholeOrAbsent) {
  TempDir dir;
  ErrorLog errors;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(on_budget(config_for(dir.path(), &errors))), lx::SinkError::none);
  ASSERT_TRUE(sink.write_health(sink_health(1)));
  g_space_left = 200;  // the disk fills up in the middle of the next record
  EXPECT_FALSE(sink.write_health(sink_health(2)));
  lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::disk_full);
  EXPECT_EQ(status.records_failed, 1u);
  EXPECT_EQ(status.health_written, 1u);
  g_space_left = kPlentyOfSpace;  // space again
  ASSERT_TRUE(sink.write_health(sink_health(3)));
  Lines lines;
  const lx::LogReadResult read = read_all(dir.sub(kJsonl), lines);
  EXPECT_EQ(read.records, 2u);
  EXPECT_FALSE(read.torn_tail);
  EXPECT_TRUE(lines.warnings.empty()) << lines.warnings.front();
  EXPECT_EQ(occurrences(slurp(dir.sub(kTextLog)), "==== loopcanary health "), 2u);
}

TEST(LinuxFileSink, AHealthRecordLargerThanTheLimitIsReported) {
  TempDir dir;
  lx::FileSinkConfig config = config_for(dir.path());
  config.max_record_bytes = 256;  // below the JSON line of a health record
  lx::FileSink sink;
  ASSERT_EQ(sink.open(config), lx::SinkError::none);
  EXPECT_FALSE(sink.write_health(sink_health(1)));
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.last_error, lx::SinkError::record_too_large);
  EXPECT_EQ(status.records_failed, 1u);
  EXPECT_EQ(status.health_written, 0u);
}

TEST(LinuxFileSink, HealthRecordsThatWentWithADeletedFileAreNoLongerCountedWritten) {
  TempDir dir;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(no_periodic_check(config_for(dir.path()))), lx::SinkError::none);
  ASSERT_TRUE(sink.write_health(sink_health(1)));
  ASSERT_TRUE(sink.write_health(sink_health(2)));
  ASSERT_EQ(unlink(dir.sub(kJsonl).c_str()), 0);
  EXPECT_FALSE(sink.check());
  const lx::SinkStatus status = sink.status();
  EXPECT_EQ(status.records_lost, 2u);
  EXPECT_EQ(status.health_written, 0u);
  EXPECT_EQ(status.records_written, 0u);
}

#if defined(LOOPCANARY_SINK_TEST_CAPTURES)
TEST(LinuxFileSink, BinaryFormHoldsAHealthPacketPerHealthRecord) {
  TempDir dir;
  lx::FileSink sink;
  ASSERT_EQ(sink.open(binary_only(config_for(dir.path()))), lx::SinkError::none);
  SimRig rig(&sink);
  rig.blocks(1);
  ASSERT_TRUE(sink.write_health(sink_health(1)));
  rig.blocks(1);
  const std::string bytes = slurp(dir.sub(kBinary));
  std::vector<bool> kinds;  // health, in file order
  std::string health_json;
  std::string problem;
  lt::CaptureReader reader;
  reader.read(
      reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
      [&](lt::DecodedRecord& d) {
        kinds.push_back(d.is_health);
        if (d.is_health) lt::format_record_json(d, health_json);
      },
      [&](lt::WarningKind, std::uint64_t offset, const std::string& what) {
        if (problem.empty()) problem = std::to_string(offset) + ": " + what;
      });
  EXPECT_EQ(problem, "");
  EXPECT_EQ(kinds, (std::vector<bool>{false, false, true, false, false}));
  std::string core(8192, '\0');
  core.resize(lc::format_health_json(sink_health(1), &core[0], core.size()).length);
  EXPECT_EQ(health_json + "\n", core);
}
#endif
