// SPDX-License-Identifier: MIT
// The one-call set-up (loopcanary/linux/setup.hpp): the environment reader's every refusal, the
// configuration checks, start()'s errors, the loops ScopedLoop hands out, and one block
// reported end to end through the Setup's own sink and interceptor.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../temp_dir.hpp"
#include "linux_rig.hpp"
#include "loopcanary/linux/setup.hpp"

using namespace lctest;

namespace {

// A fake environment: a map the test fills.
struct FakeEnvironment {
  std::map<std::string, std::string> values;
  static const char* get(void* self, const char* name) {
    auto& v = static_cast<FakeEnvironment*>(self)->values;
    const auto it = v.find(name);
    return it == v.end() ? nullptr : it->second.c_str();
  }
  lx::EnvironmentSource source() { return lx::EnvironmentSource{&get, this}; }
};

struct Read {
  lx::SetupConfig config;
  lx::EnvironmentStrings strings;
  lx::EnvironmentResult result;
};

Read read_with(std::map<std::string, std::string> values, lx::SetupConfig config = lx::SetupConfig{}) {
  FakeEnvironment env{std::move(values)};
  Read r;
  r.config = config;
  r.result = lx::read_environment(env.source(), r.config, r.strings);
  return r;
}

// Sets a variable of the process environment for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

constexpr lc::Event kSlow{"slow"};

__attribute__((noinline)) void setup_test_compute(std::chrono::microseconds how_long) {
  const auto until = std::chrono::steady_clock::now() + how_long;
  volatile std::uint64_t x = 1;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005u + 1442695040888963407u;
  }
}

}  // namespace

TEST(LinuxSetupEnvironment, EveryVariableIsApplied) {
  const Read r = read_with({{"LOOPCANARY_THRESHOLD_MS", "250"},
                            {"LOOPCANARY_HANG_MS", "9000"},
                            {"LOOPCANARY_SAMPLE_MS", "25"},
                            {"LOOPCANARY_LOG_DIR", "/var/log/fw"},
                            {"LOOPCANARY_QUALIFIER", "fw-1.2 debug"},
                            {"LOOPCANARY_STDERR", "0"}});
  EXPECT_EQ(r.result.applied, 6u);
  EXPECT_EQ(r.result.bad, 0u);
  EXPECT_STREQ(r.result.message, "");
  EXPECT_EQ(r.config.threshold_ms, 250u);
  EXPECT_EQ(r.config.hang_ms, 9000u);
  EXPECT_EQ(r.config.sample_interval_ms, 25u);
  EXPECT_STREQ(r.config.log_dir, "/var/log/fw");
  EXPECT_EQ(r.config.log_dir, r.strings.log_dir) << "the value is copied: the environment may change";
  EXPECT_STREQ(r.config.qualifier, "fw-1.2 debug");
  EXPECT_FALSE(r.config.stderr_reports);
}

TEST(LinuxSetupEnvironment, NoVariablesLeaveTheConfiguration) {
  lx::SetupConfig mine;
  mine.threshold_ms = 42;
  const Read r = read_with({}, mine);
  EXPECT_EQ(r.result.applied, 0u);
  EXPECT_EQ(r.result.bad, 0u);
  EXPECT_EQ(r.config.threshold_ms, 42u);
  EXPECT_EQ(r.config.log_dir, nullptr);
}

// Every refusal of a single value: the field keeps its value and the message names the variable.
TEST(LinuxSetupEnvironment, EachBadValueIsRefusedAndNamed) {
  struct Case {
    const char* variable;
    std::string value;
    const char* reason;  // a part of the message
  };
  const std::vector<Case> cases = {
      {"LOOPCANARY_THRESHOLD_MS", "12x", "not a whole number"},
      {"LOOPCANARY_THRESHOLD_MS", "", "not a whole number"},
      {"LOOPCANARY_THRESHOLD_MS", "0", "not a whole number"},
      {"LOOPCANARY_THRESHOLD_MS", "-5", "not a whole number"},
      {"LOOPCANARY_THRESHOLD_MS", " 5", "not a whole number"},
      {"LOOPCANARY_THRESHOLD_MS", "600001", "not a whole number"},
      {"LOOPCANARY_THRESHOLD_MS", "99999999999999999999", "not a whole number"},
      {"LOOPCANARY_HANG_MS", "1e3", "not a whole number"},
      {"LOOPCANARY_SAMPLE_MS", "0", "not a whole number"},
      {"LOOPCANARY_LOG_DIR", "", "empty"},
      {"LOOPCANARY_LOG_DIR", std::string(4096, 'd'), "longer than 4095"},
      {"LOOPCANARY_QUALIFIER", std::string(32, 'q'), "longer than 31"},
      {"LOOPCANARY_QUALIFIER", "fw\n1", "not printable"},
      {"LOOPCANARY_STDERR", "yes", "neither 0 nor 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.variable) + "=" + c.value.substr(0, 40));
    const lx::SetupConfig defaults;
    const Read r = read_with({{c.variable, c.value}});
    EXPECT_EQ(r.result.bad, 1u);
    EXPECT_EQ(r.result.applied, 0u);
    EXPECT_EQ(std::string(r.result.message).rfind(std::string(c.variable) + "=\"", 0), 0u) << r.result.message;
    EXPECT_NE(std::strstr(r.result.message, c.reason), nullptr) << r.result.message;
    EXPECT_EQ(std::strchr(r.result.message, '\n'), nullptr) << "one line";
    EXPECT_EQ(r.config.threshold_ms, defaults.threshold_ms);
    EXPECT_EQ(r.config.hang_ms, defaults.hang_ms);
    EXPECT_EQ(r.config.sample_interval_ms, defaults.sample_interval_ms);
    EXPECT_EQ(r.config.log_dir, defaults.log_dir);
    EXPECT_STREQ(r.config.qualifier, defaults.qualifier);
    EXPECT_EQ(r.config.stderr_reports, defaults.stderr_reports);
  }
}

TEST(LinuxSetupEnvironment, AHangBelowTheThresholdRefusesTheHang) {
  const Read r = read_with({{"LOOPCANARY_THRESHOLD_MS", "300"}, {"LOOPCANARY_HANG_MS", "200"}});
  EXPECT_EQ(r.result.bad, 1u);
  EXPECT_EQ(r.result.applied, 1u);
  EXPECT_EQ(r.config.threshold_ms, 300u);
  EXPECT_EQ(r.config.hang_ms, lx::SetupConfig{}.hang_ms);
  EXPECT_EQ(std::string(r.result.message).rfind("LOOPCANARY_HANG_MS=\"200\": below the threshold", 0), 0u)
      << r.result.message;
}

TEST(LinuxSetupEnvironment, AThresholdAboveTheConfiguredHangRefusesTheThreshold) {
  lx::SetupConfig mine;
  mine.hang_ms = 1000;
  const Read r = read_with({{"LOOPCANARY_THRESHOLD_MS", "2000"}}, mine);
  EXPECT_EQ(r.result.bad, 1u);
  EXPECT_EQ(r.config.threshold_ms, mine.threshold_ms);
  EXPECT_EQ(std::string(r.result.message).rfind("LOOPCANARY_THRESHOLD_MS=\"2000\": above the hang limit", 0), 0u)
      << r.result.message;
}

TEST(LinuxSetupEnvironment, ThresholdAndHangRaisedTogetherAreBothApplied) {
  const Read r = read_with({{"LOOPCANARY_THRESHOLD_MS", "8000"}, {"LOOPCANARY_HANG_MS", "20000"}});
  EXPECT_EQ(r.result.bad, 0u);
  EXPECT_EQ(r.config.threshold_ms, 8000u);
  EXPECT_EQ(r.config.hang_ms, 20000u);
}

TEST(LinuxSetupEnvironment, ASampleIntervalAboveTheThresholdIsRefused) {
  const Read r = read_with({{"LOOPCANARY_THRESHOLD_MS", "20"}, {"LOOPCANARY_SAMPLE_MS", "30"}});
  EXPECT_EQ(r.result.bad, 1u);
  EXPECT_EQ(r.config.threshold_ms, 20u);
  EXPECT_EQ(r.config.sample_interval_ms, 0u);
  EXPECT_EQ(std::string(r.result.message).rfind("LOOPCANARY_SAMPLE_MS=\"30\": above the threshold", 0), 0u)
      << r.result.message;
  // Only the threshold from the environment, below the configured interval: the threshold goes.
  lx::SetupConfig mine;
  mine.sample_interval_ms = 50;
  const Read t = read_with({{"LOOPCANARY_THRESHOLD_MS", "20"}}, mine);
  EXPECT_EQ(t.result.bad, 1u);
  EXPECT_EQ(t.config.threshold_ms, mine.threshold_ms);
  EXPECT_EQ(std::string(t.result.message).rfind("LOOPCANARY_THRESHOLD_MS=\"20\": below the sample interval", 0), 0u)
      << t.result.message;
}

TEST(LinuxSetupEnvironment, TheFirstOfSeveralRefusalsIsNamedAndAllAreCounted) {
  const Read r = read_with({{"LOOPCANARY_THRESHOLD_MS", "x"}, {"LOOPCANARY_STDERR", "2"}, {"LOOPCANARY_QUALIFIER", "ok"}});
  EXPECT_EQ(r.result.bad, 2u);
  EXPECT_EQ(r.result.applied, 1u);
  EXPECT_EQ(std::string(r.result.message).rfind("LOOPCANARY_THRESHOLD_MS=", 0), 0u) << r.result.message;
}

TEST(LinuxSetupEnvironment, ALongOrUnprintableValueIsShownCutAndMasked) {
  const Read r = read_with({{"LOOPCANARY_QUALIFIER", "a\x01" + std::string(60, 'b')}});
  EXPECT_EQ(std::string(r.result.message).rfind("LOOPCANARY_QUALIFIER=\"a?" + std::string(38, 'b') + "...\"", 0), 0u)
      << r.result.message;
}

TEST(LinuxSetupConfig, ValidateNamesTheField) {
  struct Case {
    void (*change)(lx::SetupConfig&);
    lx::SetupError error;
    const char* field;
  };
  const Case cases[] = {
      {[](lx::SetupConfig& c) { c.threshold_ms = 0; }, lx::SetupError::threshold_out_of_range, "threshold_ms"},
      {[](lx::SetupConfig& c) { c.threshold_ms = 600'001; }, lx::SetupError::threshold_out_of_range, "threshold_ms"},
      {[](lx::SetupConfig& c) { c.hang_ms = c.threshold_ms - 1; }, lx::SetupError::hang_out_of_range, "hang_ms"},
      {[](lx::SetupConfig& c) { c.hang_ms = 600'001; }, lx::SetupError::hang_out_of_range, "hang_ms"},
      {[](lx::SetupConfig& c) { c.sample_interval_ms = c.threshold_ms + 1; }, lx::SetupError::sample_interval_out_of_range,
       "sample_interval_ms"},
      {[](lx::SetupConfig& c) { c.qualifier = nullptr; }, lx::SetupError::qualifier_invalid, "qualifier"},
      {[](lx::SetupConfig& c) { c.qualifier = "\t"; }, lx::SetupError::qualifier_invalid, "qualifier"},
      {[](lx::SetupConfig& c) {
         static const std::string long_path(4096, 'p');
         c.log_dir = long_path.c_str();
       },
       lx::SetupError::log_dir_too_long, "log_dir"},
  };
  char message[160];
  EXPECT_EQ(lx::validate(lx::SetupConfig{}, message, sizeof message), lx::SetupError::none);
  EXPECT_STREQ(message, "");
  for (const Case& c : cases) {
    lx::SetupConfig config;
    c.change(config);
    EXPECT_EQ(lx::validate(config, message, sizeof message), c.error) << lx::name(c.error);
    EXPECT_NE(std::strstr(message, c.field), nullptr) << message;
    // start() refuses it the same way, and runs nothing.
    lx::Setup setup;
    config.environment = false;
    const lx::SetupStatus s = setup.start(config);
    EXPECT_EQ(s.error, c.error);
    EXPECT_FALSE(setup.started());
  }
}

TEST(LinuxSetupStart, ABadVariableIsIgnoredAndCountedByDefault) {
  ScopedEnv env("LOOPCANARY_THRESHOLD_MS", "fast");
  lx::Setup setup;
  lx::SetupConfig config;
  config.stderr_reports = false;
  const lx::SetupStatus s = setup.start(config);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(setup.config().threshold_ms, lx::SetupConfig{}.threshold_ms);
  EXPECT_EQ(setup.stats().environment_errors, 1u);
}

TEST(LinuxSetupStart, ABadVariableRefusesWhenAsked) {
  ScopedEnv env("LOOPCANARY_HANG_MS", "10 s");
  lx::Setup setup;
  lx::SetupConfig config;
  config.refuse_bad_environment = true;
  const lx::SetupStatus s = setup.start(config);
  EXPECT_EQ(s.error, lx::SetupError::bad_environment);
  EXPECT_EQ(std::string(s.message).rfind("LOOPCANARY_HANG_MS=\"10 s\"", 0), 0u) << s.message;
  EXPECT_FALSE(setup.started());
}

TEST(LinuxSetupStart, AGoodVariableOverridesTheConfiguration) {
  ScopedEnv env("LOOPCANARY_THRESHOLD_MS", "40");
  lx::Setup setup;
  lx::SetupConfig config;
  config.stderr_reports = false;
  ASSERT_TRUE(setup.start(config).ok());
  EXPECT_EQ(setup.config().threshold_ms, 40u);
  EXPECT_EQ(setup.config().sample_interval_ms, 4u) << "threshold / 10";
  // environment = false: the variable is not read.
  lx::Setup other;
  config.environment = false;
  ASSERT_TRUE(other.start(config).ok());
  EXPECT_EQ(other.config().threshold_ms, lx::SetupConfig{}.threshold_ms);
}

TEST(LinuxSetupStart, StartTwiceIsRefused) {
  lx::Setup setup;
  lx::SetupConfig config;
  config.environment = false;
  ASSERT_TRUE(setup.start(config).ok());
  EXPECT_EQ(setup.start(config).error, lx::SetupError::already_started);
}

TEST(LinuxSetupLoops, ScopedLoopClaimsNamesAndReleases) {
  lx::Setup setup;
  {
    lx::ScopedLoop early(setup, "main");  // not started: refused
    EXPECT_FALSE(early.ok());
    EXPECT_EQ(lx::this_thread_loop(), nullptr);
    early.monitor().begin(kSlow);  // an unwatched monitor still takes dispatches
    early.monitor().end();
  }
  lx::SetupConfig config;
  config.environment = false;
  ASSERT_TRUE(setup.start(config).ok());
  EXPECT_EQ(setup.stats().loops_refused, 1u);

  std::string first_name;
  std::string second_name;
  std::thread([&] {
    lx::ScopedLoop loop(setup, "io");
    ASSERT_TRUE(loop.ok());
    EXPECT_EQ(lx::this_thread_loop(), &loop.monitor());
    first_name = loop.name();
    lx::ScopedLoop again(setup, "other");  // the thread is a loop already
    EXPECT_FALSE(again.ok());
    std::thread([&] {
      lx::ScopedLoop second(setup, "io");  // "io" is live: "io-2"
      ASSERT_TRUE(second.ok());
      second_name = second.name();
    }).join();
  }).join();
  EXPECT_EQ(first_name, "io");
  EXPECT_EQ(second_name, "io-2");
  EXPECT_EQ(setup.stats().loops_refused, 2u);
  EXPECT_EQ(lx::this_thread_loop(), nullptr);

  // Released loops come back by name; the rest until none is left.
  std::vector<std::thread> threads;
  std::vector<std::string> names(lx::kSetupMaxLoops + 1);
  std::mutex mutex;
  std::condition_variable all_claimed;
  std::size_t claimed = 0;
  bool release = false;
  for (std::size_t i = 0; i < names.size(); ++i) {
    threads.emplace_back([&, i] {
      lx::ScopedLoop loop(setup, i == 0 ? "io" : "worker");
      std::unique_lock<std::mutex> lock(mutex);
      names[i] = loop.ok() ? loop.name() : "(refused)";
      ++claimed;
      all_claimed.notify_all();
      all_claimed.wait(lock, [&] { return release; });
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    all_claimed.wait(lock, [&] { return claimed == names.size(); });
    release = true;
    all_claimed.notify_all();
  }
  for (std::thread& t : threads) t.join();
  const std::size_t refused = static_cast<std::size_t>(std::count(names.begin(), names.end(), "(refused)"));
  // 16 loops: "io" and "io-2" are released (only "io" comes back, to thread 0), 14 never used
  // loops go to the workers, so 2 of the 16 workers are refused.
  EXPECT_EQ(names[0], "io");
  EXPECT_EQ(refused, 2u);
  EXPECT_EQ(setup.stats().loops_refused, 4u);
  EXPECT_EQ(setup.stats().loops_attached, 2u + lx::kSetupMaxLoops - 1u);
}

// End to end: a handler computing past the threshold, reported through the Setup's file sink,
// its interceptor, with the loop's name.
TEST(LinuxSetupReport, ABlockReachesTheLogDirectoryAndTheInterceptor) {
  loopcanary::test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  Collector collector;
  lx::Setup setup;
  lx::SetupConfig config;
  config.environment = false;
  config.threshold_ms = 50;
  config.log_dir = dir.path().c_str();
  config.qualifier = "setup-test";
  config.stderr_reports = false;
  config.interceptor = &Collector::intercept;
  config.interceptor_context = &collector;
  const lx::SetupStatus s = setup.start(config);
  ASSERT_TRUE(s.ok()) << s.message;
  std::thread([&] {
    lx::ScopedLoop loop(setup, "main");
    ASSERT_TRUE(loop.ok());
    LOOPCANARY_DISPATCH(loop.monitor(), kSlow);
    setup_test_compute(std::chrono::milliseconds(200));
  }).join();
  lc::BlockRecord final;
  ASSERT_TRUE(collector.wait_for_phase(lc::Phase::final, final));
  EXPECT_EQ(final.event, &kSlow);
  EXPECT_STREQ(final.loop, "main");
  EXPECT_GE(lc::us_from_ticks(final.duration_ticks, final.tick_hz), 199'000u);
  setup.stop();
  EXPECT_GE(setup.sink().status().records_written, 1u);
  std::ifstream log(dir.sub("loopcanary-setup-test.jsonl"));
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("\"slow\""), std::string::npos) << text.str();
}

namespace {

// A Setup with the log directory `dir` (or none), stderr off, reporting into `collector`.
lx::SetupConfig collecting_config(Collector& collector, const char* dir, std::uint32_t threshold_ms) {
  lx::SetupConfig config;
  config.environment = false;
  config.threshold_ms = threshold_ms;
  config.log_dir = dir;
  config.qualifier = "setup-test";
  config.stderr_reports = false;
  config.interceptor = &Collector::intercept;
  config.interceptor_context = &collector;
  return config;
}

std::vector<std::string> log_lines(const std::string& path) {
  std::ifstream log(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(log, line);) lines.push_back(line);
  return lines;
}

// The lines of every JSON Lines file in `dir`, the current one and those rotated.
std::size_t jsonl_lines(const std::string& dir) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".jsonl") count += log_lines(entry.path().string()).size();
  }
  return count;
}

bool has_flag(const lc::BlockRecord& r, std::uint8_t flag) { return (r.flags & flag) != 0; }

}  // namespace

// A block that ends right before the program stops (a handler that is the last thing before
// exit): stop() takes the last poll and drains, so its final record, with its whole duration,
// is in the log and reaches the interceptor. (Without that last poll the final record is lost
// unless a poll happens to fall between the end and stop().)
TEST(LinuxSetupStop, ABlockEndingJustBeforeStopHasItsFinalRecord) {
  loopcanary::test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  Collector collector;
  lx::Setup setup;
  lx::SetupConfig config = collecting_config(collector, dir.path().c_str(), 100);
  config.sample_interval_ms = 100;  // polls 100 ms apart, on a grid from start()
  ASSERT_TRUE(setup.start(config).ok());
  std::thread([&] {
    lx::ScopedLoop loop(setup, "main");
    ASSERT_TRUE(loop.ok());
    LOOPCANARY_DISPATCH(loop.monitor(), kSlow);
    setup_test_compute(std::chrono::milliseconds(250));  // ends half-way between two polls
  }).join();
  setup.stop();
  const std::vector<lc::BlockRecord> records = collector.records();
  ASSERT_FALSE(records.empty());
  const lc::BlockRecord& last = records.back();
  EXPECT_EQ(last.phase, lc::Phase::final);
  EXPECT_EQ(last.flags & (lc::kFlagEndEstimated | lc::kFlagRunningAtStop), 0u);
  EXPECT_GE(lc::us_from_ticks(last.duration_ticks, last.tick_hz), 249'000u);
  const std::vector<std::string> lines = log_lines(dir.sub("loopcanary-setup-test.jsonl"));
  ASSERT_EQ(lines.size(), records.size());
  EXPECT_NE(lines.back().find("\"phase\":\"final\""), std::string::npos) << lines.back();
  EXPECT_EQ(setup.watchdog().stats().records_dropped, 0u);
}

// stop() while a block still runs: its final record says so (running_at_stop), with the time
// it had run, and is counted apart; the loop counted no block.
TEST(LinuxSetupStop, ADispatchStillRunningAtStopGetsAFinalRecordThatSaysSo) {
  Collector collector;
  lx::Setup setup;
  ASSERT_TRUE(setup.start(collecting_config(collector, nullptr, 50)).ok());
  std::atomic<bool> release{false};
  std::thread loop_thread([&] {
    lx::ScopedLoop loop(setup, "main");
    ASSERT_TRUE(loop.ok());
    LOOPCANARY_DISPATCH(loop.monitor(), kSlow);
    while (!release.load()) setup_test_compute(std::chrono::milliseconds(5));
  });
  lc::BlockRecord in_progress;
  ASSERT_TRUE(collector.wait_for_phase(lc::Phase::in_progress, in_progress));
  setup.stop();
  const std::vector<lc::BlockRecord> records = collector.records();
  release = true;
  loop_thread.join();
  ASSERT_FALSE(records.empty());
  const lc::BlockRecord& last = records.back();
  EXPECT_EQ(last.phase, lc::Phase::final);
  EXPECT_TRUE(has_flag(last, lc::kFlagRunningAtStop));
  EXPECT_FALSE(has_flag(last, lc::kFlagEndEstimated));
  EXPECT_EQ(last.dispatch, in_progress.dispatch);
  EXPECT_GE(last.duration_ticks, in_progress.duration_ticks);
  EXPECT_EQ(setup.watchdog().stats().finals_at_stop, 1u);
  EXPECT_EQ(setup.watchdog().stats().finals_estimated, 0u);
}

// The consumer stalls for 2 s (a disk that does not answer) on the first record: the watchdog
// goes on polling, so the in-progress report of a block on another loop comes within a poll or
// two of its threshold, not 2 s late; nothing is counted as dropped, since nothing was.
TEST(LinuxSetupDrain, AStalledConsumerDelaysNoDetection) {
  Collector collector;
  std::atomic<bool> stalled{false};
  collector.on_record = [&](const lc::BlockRecord&) {
    if (!stalled.exchange(true)) std::this_thread::sleep_for(std::chrono::seconds(2));
  };
  lx::Setup setup;
  lx::SetupConfig config = collecting_config(collector, nullptr, 50);
  config.sample_interval_ms = 5;
  ASSERT_TRUE(setup.start(config).ok());
  std::thread([&] {
    lx::ScopedLoop loop(setup, "first");
    ASSERT_TRUE(loop.ok());
    LOOPCANARY_DISPATCH(loop.monitor(), kSlow);
    setup_test_compute(std::chrono::milliseconds(80));
  }).join();
  while (!stalled.load()) std::this_thread::yield();  // the consumer is in its stall now
  std::thread([&] {
    lx::ScopedLoop loop(setup, "second");
    ASSERT_TRUE(loop.ok());
    LOOPCANARY_DISPATCH(loop.monitor(), kSlow);
    setup_test_compute(std::chrono::milliseconds(300));
  }).join();
  setup.stop();
  bool seen = false;
  for (const lc::BlockRecord& r : collector.records()) {
    EXPECT_EQ(r.records_dropped, 0u);
    if (std::string(r.loop) == "second" && r.phase == lc::Phase::in_progress) {
      seen = true;
      // Reported at the first poll past the threshold: within 2 periods (10 ms) plus a loaded
      // machine's scheduling slack, against the 2 s the stall would add on the watchdog thread.
      EXPECT_LT(lc::us_from_ticks(r.duration_ticks, r.tick_hz), 50'000u + 150'000u);
    }
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(setup.watchdog().stats().records_dropped, 0u);
}

// While the consumer stalls, more records come than the ring holds: exactly those the ring
// refused are counted as dropped. Every record is delivered or counted, and each delivered
// record's records_dropped equals the gaps in the report numbers before it.
TEST(LinuxSetupDrain, WhatAStalledConsumerCouldNotTakeIsCountedAndOnlyThat) {
  Collector collector;
  std::atomic<bool> stalled{false};
  collector.on_record = [&](const lc::BlockRecord&) {
    if (!stalled.exchange(true)) std::this_thread::sleep_for(std::chrono::seconds(2));
  };
  lx::Setup setup;
  ASSERT_TRUE(setup.start(collecting_config(collector, nullptr, 5)).ok());
  std::thread([&] {
    lx::ScopedLoop loop(setup, "main");
    ASSERT_TRUE(loop.ok());
    for (int i = 0; i < 3 * static_cast<int>(lx::kSetupRecordCapacity); ++i) {
      LOOPCANARY_DISPATCH(loop.monitor(), kSlow);
      setup_test_compute(std::chrono::milliseconds(8));
    }
  }).join();
  setup.stop();
  const std::vector<lc::BlockRecord> records = collector.records();
  const lc::WatchdogStats stats = setup.watchdog().stats();
  EXPECT_GT(stats.records_dropped, 0u) << "the loop made more records than the ring holds";
  EXPECT_EQ(records.size() + stats.records_dropped, stats.reports);
  std::uint32_t expected_report = 1;
  std::uint32_t gaps = 0;
  for (const lc::BlockRecord& r : records) {
    ASSERT_GE(r.report, expected_report);
    gaps += r.report - expected_report;
    EXPECT_EQ(r.records_dropped, gaps) << "report " << r.report;
    expected_report = r.report + 1u;
  }
  EXPECT_EQ(gaps + (stats.reports + 1u - expected_report), stats.records_dropped);
}

// 1000 blocks through a Setup with a log directory: every record is in the log, in order, and
// no counter moved (nothing was lost, so nothing is counted as lost).
TEST(LinuxSetupDrain, AThousandBlocksAllReachTheLogWithEveryCounterZero) {
  loopcanary::test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  Collector collector;
  lx::Setup setup;
  // Every counter zero needs a watchdog that polls on time: at SCHED_FIFO when allowed, so other
  // tests' busy threads on a loaded machine do not hold it back while the notes pile up.
  lx::SetupConfig config = collecting_config(collector, dir.path().c_str(), 1);
  config.fifo_priority = 2;
  ASSERT_TRUE(setup.start(config).ok());
  constexpr int kBlocks = 1000;
  std::thread([&] {
    lx::ScopedLoop loop(setup, "main");
    ASSERT_TRUE(loop.ok());
    for (int i = 0; i < kBlocks; ++i) {
      {
        LOOPCANARY_DISPATCH(loop.monitor(), kSlow);
        setup_test_compute(std::chrono::microseconds(1'500));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the loop waits for work
    }
  }).join();
  setup.stop();
  const lc::WatchdogStats stats = setup.watchdog().stats();
  const std::vector<lc::BlockRecord> records = collector.records();
  std::size_t finals = 0;
  for (const lc::BlockRecord& r : records) {
    EXPECT_EQ(r.records_dropped, 0u);
    EXPECT_EQ(r.notes_dropped, 0u);
    if (r.phase == lc::Phase::final) ++finals;
  }
  EXPECT_EQ(finals, static_cast<std::size_t>(kBlocks));
  EXPECT_EQ(stats.records_dropped, 0u);
  EXPECT_EQ(stats.notes_dropped, 0u);
  EXPECT_EQ(stats.finals_estimated, 0u);
  EXPECT_EQ(stats.finals_at_stop, 0u);
  EXPECT_EQ(stats.reports, records.size());
  EXPECT_EQ(jsonl_lines(dir.path()), records.size());
  EXPECT_EQ(setup.sink().status().records_written, records.size());
}

// docs/adapters.md, "Environment", lists every variable start() reads with the code's own
// field, default, range and effect; the defaults that are numbers are SetupConfig{}'s.
TEST(LinuxSetupEnvironment, TheDocsTableIsTheCodesTable) {
  std::ifstream doc(std::string(LOOPCANARY_SOURCE_DIR) + "/docs/adapters.md");
  ASSERT_TRUE(doc.good());
  std::stringstream text;
  text << doc.rdbuf();
  std::size_t count = 0;
  const lx::EnvironmentVariable* vars = lx::environment_variables(count);
  ASSERT_EQ(count, 6u);
  for (std::size_t i = 0; i < count; ++i) {
    const lx::EnvironmentVariable& v = vars[i];
    const std::string row = std::string("| `") + v.name + "` | `" + v.field + "` | " + v.default_value + " | " +
                            v.range + " | " + v.effect + " |\n";
    EXPECT_NE(text.str().find(row), std::string::npos) << "docs/adapters.md lacks the row\n" << row;
  }
  const lx::SetupConfig defaults;
  EXPECT_EQ(std::to_string(defaults.threshold_ms), vars[0].default_value);
  EXPECT_EQ(std::to_string(defaults.hang_ms), vars[1].default_value);
  EXPECT_EQ(defaults.sample_interval_ms, 0u) << "0: a tenth of the threshold, as the table says";
  EXPECT_EQ(defaults.log_dir, nullptr);
  EXPECT_STREQ(defaults.qualifier, "");
  EXPECT_EQ(std::to_string(defaults.stderr_reports ? 1 : 0), vars[5].default_value);
  // Each name is one the reader reads: set alone, it is applied or refused.
  for (std::size_t i = 0; i < count; ++i) {
    const Read r = read_with({{vars[i].name, "1"}});
    EXPECT_EQ(r.result.applied + r.result.bad, 1u) << vars[i].name;
  }
  EXPECT_NE(text.str().find("| `LOOPCANARY_CLOCK` |"), std::string::npos);
}
