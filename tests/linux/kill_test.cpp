// SPDX-License-Identifier: MIT
// Crash safety of the Linux file sink (issue 16): a process writing every form of log (JSON
// Lines, text, binary packets) is killed with SIGKILL at random moments and restarted on the
// same directory, as a crashing device restarts. After each kill, every file is read back with
// the host tool's readers (loopcanary::tool::Reader for .jsonl, CaptureReader for .lcb; the text
// form by its own structure) and must hold only whole records, in order, none missing: the
// records of each run up to what the writer counted as written (or one more, the one it was
// writing), a torn record only at the very end of a file, reported by the reader as a torn tail.
//
// The writer is loopcanary_kill_writer (kill_writer.cpp), started under LOOPCANARY_TEST_EMULATOR
// in a cross build (tests/CMakeLists.txt: qemu-aarch64 for AArch64; the kill then ends the
// emulator, which is the writer's process). LOOPCANARY_KILL_SEED=<n> repeats the random delays of
// a run (the seed is printed; where a delay lands in the writer's work varies).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../temp_dir.hpp"
#include "loopcanary/packet.hpp"
#include "model.hpp"
#include "packet_reader.hpp"

namespace lc = loopcanary;
namespace lt = loopcanary::tool;

namespace {

using loopcanary::test::TempDir;

constexpr char kStem[] = "loopcanary-kill";  // kill_writer.cpp: prefix "loopcanary", qualifier "kill"
constexpr std::size_t kMaxFiles = 6;          // kill_writer.cpp: FileSinkConfig::max_files
constexpr char kTextHeader[] = "==== loopcanary report ";

std::string slurp(const std::string& path) {
  std::string text;
  if (FILE* file = std::fopen(path.c_str(), "rb")) {
    char chunk[65536];
    std::size_t n = 0;
    while ((n = std::fread(chunk, 1, sizeof chunk, file)) > 0) text.append(chunk, n);
    std::fclose(file);
  }
  return text;
}


// The command that runs a program of this build: LOOPCANARY_TEST_EMULATOR split at "|" (none in
// a native build).
std::vector<std::string> emulator() {
  std::vector<std::string> words;
  std::stringstream command(LOOPCANARY_TEST_EMULATOR);
  for (std::string word; std::getline(command, word, '|');) {
    if (!word.empty()) words.push_back(word);
  }
  return words;
}

// What a run of the writer counted (its progress file): records whose write() it entered, and
// records written whole to every form.
struct Progress {
  std::uint32_t started = 0;
  std::uint32_t written = 0;
};

// The writer process of one run, on `logs`: started by the constructor, which returns when it
// has written its first record (the writer's "R") or, with `records`, all of them ("D").
class Writer {
 public:
  Writer(const std::string& logs, const std::string& progress_path, std::uint32_t run, std::uint32_t records = 0)
      : progress_path_(progress_path), run_(run) {
    const int fd = ::open(progress_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) {
      ADD_FAILURE() << progress_path << ": " << std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return;
    }
    ::close(fd);
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe: " << std::strerror(errno);
      return;
    }
    const std::string writer = LOOPCANARY_KILL_WRITER;
    const std::string run_text = std::to_string(run);
    const std::string records_text = std::to_string(records);
    std::vector<std::string> words = emulator();
    for (const std::string& w : {writer, logs, progress_path, run_text}) words.push_back(w);
    if (records != 0) words.push_back(records_text);
    std::vector<char*> args;
    for (std::string& w : words) args.push_back(w.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      execv(args[0], args.data());
      _exit(127);
    }
    ::close(out[1]);
    if (pid_ < 0) {
      ADD_FAILURE() << "fork: " << std::strerror(errno);
      ::close(out[0]);
      return;
    }
    const char cue = records != 0 ? 'D' : 'R';  // with records: "R", then "D"
    for (char c = 0; !ready_;) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 30'000) != 1 || ::read(out[0], &c, 1) != 1) break;  // 30 s: stuck, or it died
      ready_ = c == cue;
    }
    ::close(out[0]);
    EXPECT_TRUE(ready_) << "run " << run << ": the writer did not get ready";
  }
  ~Writer() {
    if (pid_ > 0) kill_now();
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  bool ready() const { return ready_; }

  // Stops it where it is (SIGSTOP: a write(2) in progress completes first) until resume().
  void stop() {
    ASSERT_GT(pid_, 0);
    ASSERT_EQ(kill(pid_, SIGSTOP), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid_, &status, WUNTRACED), pid_);
    ASSERT_TRUE(WIFSTOPPED(status)) << "run " << run_ << ": the writer ended, status " << status;
  }
  void resume() {
    ASSERT_GT(pid_, 0);
    ASSERT_EQ(kill(pid_, SIGCONT), 0);
  }

  // SIGKILL, and checks that it was the kill that ended the writer.
  void kill_now() {
    if (pid_ <= 0) return;
    EXPECT_EQ(kill(pid_, SIGKILL), 0);
    int status = 0;
    EXPECT_EQ(waitpid(pid_, &status, 0), pid_);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "run " << run_ << ": the writer ended on its own, status " << status;
    pid_ = -1;
  }

  // What it has counted so far (stopped or killed: it does not move meanwhile).
  Progress progress() const {
    Progress p;
    const std::string words = slurp(progress_path_);
    EXPECT_GE(words.size(), 8u);
    if (words.size() >= 8) {
      std::memcpy(&p.started, words.data(), 4);
      std::memcpy(&p.written, words.data() + 4, 4);
    }
    return p;
  }

 private:
  std::string progress_path_;
  std::uint32_t run_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

// The files of one form in reading order: rotated ones by serial, then the current one.
std::vector<std::string> files_of(const std::string& dir, const std::string& suffix) {
  std::vector<std::pair<std::uint64_t, std::string>> found;
  const std::string current = std::string(kStem) + suffix;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
      if (name == current) {
        found.emplace_back(~std::uint64_t{0}, name);
        continue;
      }
      const std::size_t dash = name.rfind('-');
      if (name.rfind(std::string(kStem) + ".", 0) != 0 || dash == std::string::npos) {
        ADD_FAILURE() << "a file the sink did not name: " << name;
        continue;
      }
      found.emplace_back(std::strtoull(name.c_str() + dash + 1, nullptr, 10), name);
    }
    closedir(d);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (const auto& f : found) names.push_back(dir + "/" + f.second);
  return names;
}

bool is_current(const std::string& path, const char* suffix) {
  const std::string name = std::string("/") + kStem + suffix;
  return path.size() > name.size() && path.compare(path.size() - name.size(), name.size(), name) == 0;
}

// A record as read back: its run (the record's dispatch) and its number in the run (report).
struct Key {
  std::uint32_t run;
  std::uint32_t n;
};

// What one form's files hold.
struct FormRead {
  std::vector<Key> records;   // in reading order
  std::size_t files = 0;
  std::size_t torn_tails = 0; // files ending inside a record
  bool current_torn = false;  // the current file is one of them
  std::vector<std::string> problems;  // anything but whole records and a torn tail at a file's end
};

FormRead read_jsonl(const std::string& dir) {
  FormRead out;
  for (const std::string& path : files_of(dir, ".jsonl")) {
    ++out.files;
    const std::string bytes = slurp(path);
    std::size_t complete_lines = 0;
    for (std::size_t at = bytes.find('\n'); at != std::string::npos; at = bytes.find('\n', at + 1)) ++complete_lines;
    const bool ends_inside = !bytes.empty() && bytes.back() != '\n';
    std::ostringstream warnings;
    lt::Reader reader(warnings, lt::ReaderOptions{});
    std::size_t records = 0;
    reader.read_file(path, [&](lt::LogRecord& r) {
      ++records;
      out.records.push_back(Key{static_cast<std::uint32_t>(r.dispatch), static_cast<std::uint32_t>(r.report)});
    });
    const lt::ReadStats& stats = reader.stats();
    const std::uint64_t torn = stats.warnings_of(lt::WarningKind::torn_tail);
    out.torn_tails += torn;
    out.current_torn = torn != 0 && is_current(path, ".jsonl");
    if (stats.warnings_total() != torn) out.problems.push_back(path + ": " + warnings.str());
    if (torn != (ends_inside ? 1u : 0u)) {
      out.problems.push_back(path + (ends_inside ? ": a torn tail the reader did not report" : ": a torn tail reported"));
    }
    if (records != complete_lines) {
      out.problems.push_back(path + ": " + std::to_string(records) + " records read of " +
                             std::to_string(complete_lines) + " complete lines");
    }
  }
  return out;
}

FormRead read_lcb(const std::string& dir) {
  FormRead out;
  for (const std::string& path : files_of(dir, ".lcb")) {
    ++out.files;
    const std::string bytes = slurp(path);
    lt::CaptureReader reader;
    std::uint64_t decoded_bytes = 0;
    const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
    reader.read(
        data, bytes.size(),
        [&](lt::DecodedRecord& d) {
          const auto at = static_cast<std::size_t>(d.offset);
          decoded_bytes += lc::kPacketHeaderBytes + (data[at + 4] | (std::size_t{data[at + 5]} << 8)) +
                           lc::kPacketTrailerBytes;
          out.records.push_back(Key{d.record.dispatch, d.record.report});
        },
        [&](lt::WarningKind kind, std::uint64_t offset, const std::string& what) {
          // The bytes from the last whole packet to the end. A packet cut after its first byte
          // leaves no magic pair: the reader calls that byte garbage (docs/report-format.md).
          const bool lone_magic_byte = kind == lt::WarningKind::garbage && offset + 1 == bytes.size() &&
                                       data[offset] == lc::kPacketMagic0;
          if ((kind == lt::WarningKind::torn_tail || lone_magic_byte) && offset == decoded_bytes) {
            ++out.torn_tails;
            out.current_torn = is_current(path, ".lcb");
          } else {
            out.problems.push_back(path + ": offset " + std::to_string(offset) + ": " + what);
          }
        });
    if (reader.stats().skipped_bytes != bytes.size() - decoded_bytes) {
      out.problems.push_back(path + ": " + std::to_string(bytes.size() - decoded_bytes) + " bytes not in a packet, " +
                             std::to_string(reader.stats().skipped_bytes) + " reported");
    }
  }
  return out;
}

// The text form has no reader in the tool: each record is a block that starts with its header
// line "==== loopcanary report <n> (<phase>) ====", ends with a blank line and has none inside.
// What follows the last blank line of a file can only be the start of a record (a torn tail).
FormRead read_text(const std::string& dir) {
  FormRead out;
  const std::size_t header = sizeof kTextHeader - 1;
  for (const std::string& path : files_of(dir, ".log")) {
    ++out.files;
    const std::string bytes = slurp(path);
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t end = bytes.find("\n\n", at);
      const std::size_t length = end == std::string::npos ? bytes.size() - at : end + 2 - at;
      const std::string block = bytes.substr(at, length);
      const std::string where = path + ": offset " + std::to_string(at);
      if (block.compare(0, std::min(header, length), kTextHeader, std::min(header, length)) != 0) {
        out.problems.push_back(where + ": not the start of a record");
      } else if (block.find(std::string("\n") + kTextHeader) != std::string::npos) {
        out.problems.push_back(where + ": an incomplete record followed by another one");
      } else if (end == std::string::npos) {
        ++out.torn_tails;
        out.current_torn = is_current(path, ".log");
      } else {
        const std::size_t dispatch = block.find("\ndispatch = ");
        if (length < header || dispatch == std::string::npos) {
          out.problems.push_back(where + ": a record without its dispatch line");
        } else {
          out.records.push_back(Key{static_cast<std::uint32_t>(std::strtoul(block.c_str() + dispatch + 12, nullptr, 10)),
                                    static_cast<std::uint32_t>(std::strtoul(block.c_str() + header, nullptr, 10))});
        }
      }
      at += length;
    }
  }
  return out;
}

// Checks that `form` holds the records of runs 1..runs.size() in order with none missing: within
// a run, numbers go up by one; a run's last record is the last one it counted as written or
// the one after it (which it was writing when killed: whole in some forms, torn or absent in
// others); runs in between that wrote nothing leave nothing. The oldest records may have gone
// with the oldest files (max_files): the sequence may start inside a run, and then the form
// has max_files files (one fewer while a rotation was cut short). runs.back() may be a writer
// that is stopped, not killed. `lowered`: runs whose last record the test cut in half (one
// fewer whole record).
void expect_every_record(const char* name, const FormRead& form, const std::vector<Progress>& runs,
                         const std::vector<std::uint32_t>& lowered = {}) {
  SCOPED_TRACE(name);
  for (const std::string& problem : form.problems) ADD_FAILURE() << problem;
  const auto lowest_last = [&](std::uint32_t run) {
    const std::uint32_t written = runs[run - 1].written;
    return std::count(lowered.begin(), lowered.end(), run) != 0 && written > 0 ? written - 1 : written;
  };
  // Runs with no whole record, from `after` (exclusive) to `before` (exclusive).
  const auto none_between = [&](std::uint32_t after, std::uint32_t before) {
    for (std::uint32_t r = after + 1; r < before; ++r) {
      EXPECT_EQ(lowest_last(r), 0u) << "run " << r << " wrote records and none is left";
    }
  };
  const auto last_of_run = [&](const Key& k) {
    EXPECT_GE(k.n, lowest_last(k.run)) << "run " << k.run << ": the last record read is " << k.n << ", "
                                       << runs[k.run - 1].written << " were written";
    EXPECT_LE(k.n, runs[k.run - 1].started) << "run " << k.run << ": record " << k.n << " was never written";
  };
  const auto total_runs = static_cast<std::uint32_t>(runs.size());
  if (form.records.empty()) {
    none_between(0, total_runs + 1);
    return;
  }
  const Key& first = form.records.front();
  ASSERT_TRUE(first.run >= 1 && first.run <= total_runs) << first.run;
  // Until the sink first removes a file, a form has fewer than max_files - 1 files (after that,
  // never: at most one missing while a rotation is cut short), and the oldest record is there.
  if (form.files < kMaxFiles - 1) {
    EXPECT_EQ(first.n, 1u) << "run " << first.run << " starts at " << first.n;
    none_between(0, first.run);
  }
  for (std::size_t i = 1; i < form.records.size(); ++i) {
    const Key& a = form.records[i - 1];
    const Key& b = form.records[i];
    if (b.run == a.run) {
      ASSERT_EQ(b.n, a.n + 1) << "run " << a.run << " at record " << i;
      continue;
    }
    ASSERT_GT(b.run, a.run) << "record " << i;
    ASSERT_LE(b.run, total_runs);
    last_of_run(a);
    none_between(a.run, b.run);
    ASSERT_EQ(b.n, 1u) << "run " << b.run << " starts at " << b.n;
  }
  last_of_run(form.records.back());
  none_between(form.records.back().run, total_runs + 1);
}

struct Forms {
  FormRead json, text, binary;
};

Forms check_directory(const std::string& logs, const std::vector<Progress>& runs,
                      const std::vector<std::uint32_t>& lowered = {}) {
  Forms f{read_jsonl(logs), read_text(logs), read_lcb(logs)};
  expect_every_record(".jsonl", f.json, runs, lowered);
  expect_every_record(".log", f.text, runs, lowered);
  expect_every_record(".lcb", f.binary, runs, lowered);
  return f;
}

std::uint64_t seed_from_environment() {
  if (const char* text = std::getenv("LOOPCANARY_KILL_SEED")) return std::strtoull(text, nullptr, 10);
  return std::random_device{}();
}

}  // namespace

TEST(LinuxCrash, EveryRecordReadsBackAfterKillsAtRandomMoments) {
  constexpr std::uint32_t kKills = 24;
  const std::uint64_t seed = seed_from_environment();
  std::printf("seed = %llu (LOOPCANARY_KILL_SEED=%llu repeats the delays)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  RecordProperty("seed", std::to_string(seed));
  SCOPED_TRACE("LOOPCANARY_KILL_SEED=" + std::to_string(seed));
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int> stop_us(0, 2'000);
  std::uniform_int_distribution<int> kill_us(1'000, 200'000);

  TempDir dir;
  const std::string logs = dir.sub("logs");
  std::vector<Progress> runs;
  std::size_t torn[3] = {};  // kills that left the current file of a form ending inside a record
  std::uint64_t written = 0;
  for (std::uint32_t run = 1; run <= kKills && !HasFailure(); ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const auto stop_after = std::chrono::microseconds(stop_us(random));
    const auto kill_after = std::chrono::microseconds(kill_us(random));
    Writer writer(logs, dir.sub("progress"), run);
    ASSERT_TRUE(writer.ready());
    // Soon after the restart, while the files still hold the end of the run before (max_files
    // removes the oldest files as the writer goes on): the new records follow the old ones,
    // and a record torn by the last kill stays at the end of its file.
    std::this_thread::sleep_for(stop_after);  // a random moment, not a synchronisation
    writer.stop();
    runs.push_back(writer.progress());
    {
      SCOPED_TRACE("stopped after the restart");
      check_directory(logs, runs);
    }
    writer.resume();
    std::this_thread::sleep_for(kill_after);  // a random moment
    writer.kill_now();
    runs.back() = writer.progress();
    written += runs.back().written;
    SCOPED_TRACE("after the kill");
    const Forms f = check_directory(logs, runs);
    torn[0] += f.json.current_torn ? 1u : 0u;
    torn[1] += f.text.current_torn ? 1u : 0u;
    torn[2] += f.binary.current_torn ? 1u : 0u;
  }
  std::printf("%zu kills, %llu records written whole; kills that tore a record (.jsonl .log .lcb): %zu %zu %zu\n",
              runs.size(), static_cast<unsigned long long>(written), torn[0], torn[1], torn[2]);
}

// A kill inside write(2) leaves the current file of a form ending inside a record (the kernel
// stops a write to a file between pages when the process is killed; the random kills above
// hit that only sometimes). Here the test cuts the last record of each form in half itself, in
// the middle of a JSON line, between two lines of a text block and in the middle of a packet,
// and restarts the writer: the fragment stays at the end of its file, where the readers report
// a torn tail, and the next run's records follow in a file of their own.
TEST(LinuxCrash, RecordTornByAKillStaysAtTheEndOfItsFileAfterARestart) {
  TempDir dir;
  const std::string logs = dir.sub("logs");
  std::vector<Progress> runs;
  {
    Writer writer(logs, dir.sub("progress"), 1, 5);
    ASSERT_TRUE(writer.ready());
    writer.kill_now();
    runs.push_back(writer.progress());
  }
  ASSERT_EQ(runs[0].written, 5u);

  const auto cut = [&](const char* suffix, std::size_t size) {
    ASSERT_EQ(truncate((logs + "/" + kStem + suffix).c_str(), static_cast<off_t>(size)), 0) << std::strerror(errno);
  };
  const std::string json = slurp(logs + "/" + kStem + ".jsonl");
  ASSERT_GT(json.size(), 2u);
  const std::size_t json_last = json.rfind('\n', json.size() - 2) + 1;
  cut(".jsonl", json_last + (json.size() - json_last) / 2);
  const std::string text = slurp(logs + "/" + kStem + ".log");
  const std::size_t text_last = text.rfind(kTextHeader);
  ASSERT_NE(text_last, std::string::npos);
  cut(".log", text.find('\n', text_last + (text.size() - text_last) / 2) + 1);
  const std::string binary = slurp(logs + "/" + kStem + ".lcb");
  std::size_t packet = 0;
  std::size_t next = 0;
  while (next + lc::kPacketHeaderBytes <= binary.size()) {
    packet = next;
    next += lc::kPacketHeaderBytes + (static_cast<std::uint8_t>(binary[next + 4]) |
                                      (std::size_t{static_cast<std::uint8_t>(binary[next + 5])} << 8)) +
            lc::kPacketTrailerBytes;
  }
  ASSERT_EQ(next, binary.size());
  cut(".lcb", packet + (next - packet) / 2);
  {
    SCOPED_TRACE("after the cut");
    const Forms f = check_directory(logs, runs, {1});
    EXPECT_TRUE(f.json.current_torn && f.text.current_torn && f.binary.current_torn);
  }

  {
    Writer writer(logs, dir.sub("progress"), 2, 5);
    ASSERT_TRUE(writer.ready());
    writer.kill_now();
    runs.push_back(writer.progress());
  }
  ASSERT_EQ(runs[1].written, 5u);
  const Forms f = check_directory(logs, runs, {1});
  for (const FormRead* form : {&f.json, &f.text, &f.binary}) {
    EXPECT_EQ(form->torn_tails, 1u);
    EXPECT_FALSE(form->current_torn) << "the torn record is at the end of a file the next run does not write to";
    EXPECT_EQ(form->records.size(), 9u);
  }
}
