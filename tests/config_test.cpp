// SPDX-License-Identifier: MIT
// Configuration and registration errors: every invalid field gets its own status, a refused
// init changes nothing, and every status has its own name and a description naming the field.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "loopcanary/monitor.hpp"
#include "loopcanary/status.hpp"
#include "loopcanary/time.hpp"
#include "loopcanary/watchdog.hpp"

namespace {

namespace lc = loopcanary;
using lc::MonitorConfig;
using lc::Status;
using lc::WatchdogConfig;

constexpr lc::Event kPlain{"plain"};

// Status comparison that prints the enumerator names on failure.
::testing::AssertionResult StatusIs(const char* actual_expr, const char* expected_expr, Status actual,
                                    Status expected) {
  if (actual == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << actual_expr << " is " << lc::name(actual) << ", expected "
                                       << expected_expr << " (" << lc::name(expected) << ")";
}
#define EXPECT_STATUS(actual, expected) EXPECT_PRED_FORMAT2(StatusIs, actual, expected)
#define ASSERT_STATUS(actual, expected) ASSERT_PRED_FORMAT2(StatusIs, actual, expected)

// Valid at 1 MHz: 100 ms threshold, arm at 25 %, 10 ms interval, 5 s hang limit.
MonitorConfig valid_monitor_config() {
  MonitorConfig c;
  c.name = "main";
  c.tick_hz = 1'000'000;
  c.threshold_us = 100'000;
  c.arm_permille = 250;
  c.sample_interval_us = 10'000;
  c.hang_limit_us = 5'000'000;
  return c;
}

// ---- MonitorConfig ---------------------------------------------------------------------------

// One field (or the tick rate it is measured against) changed from the valid configuration.
struct MonitorCase {
  const char* what;
  void (*change)(MonitorConfig&);
  Status expected;
};

void PrintTo(const MonitorCase& c, std::ostream* os) { *os << c.what; }

const MonitorCase kMonitorCases[] = {
    {"name null", [](MonitorConfig& c) { c.name = nullptr; }, Status::name_missing},
    {"name empty", [](MonitorConfig& c) { c.name = ""; }, Status::name_missing},
    {"tick_hz 0", [](MonitorConfig& c) { c.tick_hz = 0; }, Status::tick_hz_zero},
    {"threshold 0", [](MonitorConfig& c) { c.threshold_us = 0; }, Status::threshold_zero},
    // 500 us at 1 kHz is half a tick. The interval cannot exceed the threshold, so it is
    // necessarily below a tick too; the threshold is the first field reported.
    {"threshold below one tick",
     [](MonitorConfig& c) {
       c.tick_hz = 1'000;
       c.threshold_us = 500;
       c.sample_interval_us = 500;
     },
     Status::threshold_below_one_tick},
    {"arm 1000 per mille", [](MonitorConfig& c) { c.arm_permille = 1000; }, Status::arm_not_below_threshold},
    {"arm 65535 per mille", [](MonitorConfig& c) { c.arm_permille = 65535; }, Status::arm_not_below_threshold},
    {"interval 0", [](MonitorConfig& c) { c.sample_interval_us = 0; }, Status::sample_interval_zero},
    {"interval above threshold", [](MonitorConfig& c) { c.sample_interval_us = c.threshold_us + 1u; },
     Status::sample_interval_above_threshold},
    // 1 kHz: the 100 ms threshold is 100 ticks, a 500 us interval is half a tick.
    {"interval below one tick",
     [](MonitorConfig& c) {
       c.tick_hz = 1'000;
       c.sample_interval_us = 500;
     },
     Status::sample_interval_below_one_tick},
    {"hang limit below threshold", [](MonitorConfig& c) { c.hang_limit_us = c.threshold_us - 1u; },
     Status::hang_limit_below_threshold},
    // 1 GHz: the counter wraps every 4.29 s, so 3 s is past half the wrap.
    {"hang limit past half the wrap",
     [](MonitorConfig& c) {
       c.tick_hz = 1'000'000'000;
       c.hang_limit_us = 3'000'000;
     },
     Status::hang_limit_too_long},
};

class MonitorConfigError : public ::testing::TestWithParam<MonitorCase> {};

INSTANTIATE_TEST_SUITE_P(Field, MonitorConfigError, ::testing::ValuesIn(kMonitorCases));

TEST_P(MonitorConfigError, IsRefusedWithItsOwnStatus) {
  MonitorConfig config = valid_monitor_config();
  GetParam().change(config);
  lc::Monitor m;
  EXPECT_STATUS(m.init(config), GetParam().expected);
  EXPECT_FALSE(m.initialised());
}

TEST_P(MonitorConfigError, RefusalKeepsThePreviousConfiguration) {
  int context = 0;
  MonitorConfig first = valid_monitor_config();
  first.name = "first";
  first.context = &context;
  lc::Monitor m;
  ASSERT_STATUS(m.init(first), Status::ok);
  const lc::Limits before = m.limits_for(kPlain);

  MonitorConfig bad = valid_monitor_config();
  bad.name = "second";
  bad.threshold_us = 200'000;
  bad.hang_limit_us = 6'000'000;
  GetParam().change(bad);
  EXPECT_STATUS(m.init(bad), GetParam().expected);

  EXPECT_TRUE(m.initialised());
  EXPECT_STREQ(m.name(), "first");
  EXPECT_EQ(m.tick_hz(), first.tick_hz);
  EXPECT_EQ(m.context(), &context);
  const lc::Limits after = m.limits_for(kPlain);
  EXPECT_EQ(after.threshold, before.threshold);
  EXPECT_EQ(after.arm, before.arm);
  EXPECT_EQ(after.interval, before.interval);
  EXPECT_EQ(after.hang, before.hang);
  EXPECT_EQ(after.threshold, 100'000u);
}

TEST(MonitorConfig, DefaultsWithATickRateAreValid) {
  MonitorConfig config;
  config.tick_hz = 1'000'000;
  lc::Monitor m;
  EXPECT_STATUS(m.init(config), Status::ok);
  EXPECT_TRUE(m.initialised());
  EXPECT_STREQ(m.name(), "loop");
}

TEST(MonitorConfig, BoundaryValuesAreAccepted) {
  struct Case {
    const char* what;
    void (*change)(MonitorConfig&);
  };
  const Case cases[] = {
      {"arm 0", [](MonitorConfig& c) { c.arm_permille = 0; }},
      {"arm 999", [](MonitorConfig& c) { c.arm_permille = 999; }},
      {"interval equal to threshold", [](MonitorConfig& c) { c.sample_interval_us = c.threshold_us; }},
      {"hang limit equal to threshold", [](MonitorConfig& c) { c.hang_limit_us = c.threshold_us; }},
      {"threshold of exactly one tick",
       [](MonitorConfig& c) {
         c.tick_hz = 1'000;
         c.threshold_us = 1'000;
         c.sample_interval_us = 1'000;
       }},
      {"hang limit 2 s at 1 GHz", [](MonitorConfig& c) {
         c.tick_hz = 1'000'000'000;
         c.hang_limit_us = 2'000'000;
       }},
  };
  for (const Case& c : cases) {
    MonitorConfig config = valid_monitor_config();
    c.change(config);
    lc::Monitor m;
    EXPECT_STATUS(m.init(config), Status::ok) << c.what;
  }
}

// time.hpp: kMaxIntervalTicks is "the longest interval init() accepts for a hang limit", and
// Status::hang_limit_too_long is "not below half the tick counter's wrap". At 1 MHz one tick is
// one microsecond, so a hang limit of kMaxIntervalTicks microseconds must be accepted and one
// tick more refused.
TEST(MonitorConfig, HangLimitOfExactlyMaxIntervalTicksIsAccepted) {
  MonitorConfig config = valid_monitor_config();
  config.hang_limit_us = lc::kMaxIntervalTicks;
  lc::Monitor m;
  EXPECT_STATUS(m.init(config), Status::ok);
  config.hang_limit_us = lc::kMaxIntervalTicks + 1u;
  EXPECT_STATUS(m.init(config), Status::hang_limit_too_long);
}

// The microsecond fields are 32-bit (up to 2^32 - 1 us, 71.6 minutes); what bounds them is the
// tick counter: a hang limit must stay below half its wrap at tick_hz. At 1 MHz a threshold
// and hang limit of 2^31 us are one tick over, and 2^32 - 1 us far over; at a 32768 Hz clock
// (half wrap 18.2 hours) the whole 32-bit range fits and converts exactly.
TEST(MonitorConfig, DurationsPast2p31MicrosecondsAreRefusedOrExactByTickRate) {
  constexpr std::uint32_t k2p31 = 0x8000'0000u;
  constexpr std::uint32_t kMaxUs = 0xFFFF'FFFFu;
  lc::Monitor m;
  MonitorConfig config = valid_monitor_config();
  for (const std::uint32_t us : {k2p31, kMaxUs}) {
    config.threshold_us = us;
    config.hang_limit_us = us;
    EXPECT_STATUS(m.init(config), Status::hang_limit_too_long) << us << " us at 1 MHz";
    config.threshold_us = valid_monitor_config().threshold_us;
    EXPECT_STATUS(m.init(config), Status::hang_limit_too_long) << "hang limit " << us << " us at 1 MHz";
  }
  config.tick_hz = 32'768;
  config.threshold_us = kMaxUs;
  config.hang_limit_us = kMaxUs;
  ASSERT_STATUS(m.init(config), Status::ok);
  const lc::Limits limits = m.limits_for(lc::Event{"e"});
  EXPECT_EQ(limits.threshold, lc::ticks_from_us(kMaxUs, 32'768));
  EXPECT_EQ(limits.threshold, 140'737'489u);  // 4294.967295 s x 32768 Hz, rounded up
  EXPECT_EQ(limits.hang, limits.threshold);
}

TEST(MonitorConfig, InitAfterRegistrationIsRefused) {
  lc::Monitor m;
  ASSERT_STATUS(m.init(valid_monitor_config()), Status::ok);
  lc::StaticWatchdog<1, 2> dog;
  ASSERT_STATUS(dog.init(WatchdogConfig{}), Status::ok);
  ASSERT_STATUS(dog.add(m), Status::ok);

  MonitorConfig other = valid_monitor_config();
  other.threshold_us = 50'000;
  EXPECT_STATUS(m.init(other), Status::already_initialised);
  EXPECT_EQ(m.limits_for(kPlain).threshold, 100'000u);  // unchanged
  // Even an invalid configuration gets already_initialised: registration is checked first.
  other.tick_hz = 0;
  EXPECT_STATUS(m.init(other), Status::already_initialised);
}

// ---- WatchdogConfig --------------------------------------------------------------------------

struct WatchdogCase {
  const char* what;
  void (*change)(WatchdogConfig&);
  Status expected;
};

void PrintTo(const WatchdogCase& c, std::ostream* os) { *os << c.what; }

constexpr char k31Chars[] = "0123456789abcdef0123456789abcde";
static_assert(sizeof(k31Chars) - 1 == lc::kQualifierMax, "exactly the maximum");
constexpr char k32Chars[] = "0123456789abcdef0123456789abcdef";
static_assert(sizeof(k32Chars) - 1 == lc::kQualifierMax + 1, "one character over the maximum");

const WatchdogCase kWatchdogCases[] = {
    {"qualifier null", [](WatchdogConfig& c) { c.qualifier = nullptr; }, Status::qualifier_missing},
    {"qualifier 32 chars", [](WatchdogConfig& c) { c.qualifier = k32Chars; }, Status::qualifier_too_long},
    {"qualifier with newline", [](WatchdogConfig& c) { c.qualifier = "fw\n1.0"; }, Status::qualifier_invalid},
    {"qualifier with tab", [](WatchdogConfig& c) { c.qualifier = "fw\t1.0"; }, Status::qualifier_invalid},
    {"qualifier with 0x01", [](WatchdogConfig& c) { c.qualifier = "\x01"; }, Status::qualifier_invalid},
    {"qualifier with DEL", [](WatchdogConfig& c) { c.qualifier = "fw\x7f"; }, Status::qualifier_invalid},
    {"qualifier with UTF-8", [](WatchdogConfig& c) { c.qualifier = "caf\xc3\xa9"; }, Status::qualifier_invalid},
    {"qualifier with 0xff", [](WatchdogConfig& c) { c.qualifier = "\xff"; }, Status::qualifier_invalid},
    {"max_frames 0", [](WatchdogConfig& c) { c.max_frames = 0; }, Status::max_frames_out_of_range},
    {"max_frames over kMaxFrames",
     [](WatchdogConfig& c) { c.max_frames = static_cast<std::uint8_t>(lc::kMaxFrames + 1); },
     Status::max_frames_out_of_range},
    {"snapshot_attempts 0", [](WatchdogConfig& c) { c.snapshot_attempts = 0; },
     Status::snapshot_attempts_out_of_range},
    {"snapshot_attempts 9", [](WatchdogConfig& c) { c.snapshot_attempts = 9; },
     Status::snapshot_attempts_out_of_range},
    {"running_permille 0", [](WatchdogConfig& c) { c.cause.running_permille = 0; }, Status::running_permille_out_of_range},
    {"running_permille 1001", [](WatchdogConfig& c) { c.cause.running_permille = 1001; },
     Status::running_permille_out_of_range},
    {"starved_busy_permille 0", [](WatchdogConfig& c) { c.cause.starved_busy_permille = 0; },
     Status::starved_permille_out_of_range},
    {"starved_busy_permille 1001", [](WatchdogConfig& c) { c.cause.starved_busy_permille = 1001; },
     Status::starved_permille_out_of_range},
    {"starved_wait_permille 0", [](WatchdogConfig& c) { c.cause.starved_wait_permille = 0; },
     Status::starved_wait_permille_out_of_range},
    {"starved_wait_permille 1001", [](WatchdogConfig& c) { c.cause.starved_wait_permille = 1001; },
     Status::starved_wait_permille_out_of_range},
};

class WatchdogConfigError : public ::testing::TestWithParam<WatchdogCase> {};

INSTANTIATE_TEST_SUITE_P(Field, WatchdogConfigError, ::testing::ValuesIn(kWatchdogCases));

TEST_P(WatchdogConfigError, IsRefusedWithItsOwnStatusAndChangesNothing) {
  WatchdogConfig config;
  config.qualifier = "before";
  lc::StaticWatchdog<1, 2> dog;
  // Refused while uninitialised: still uninitialised (add() says so).
  WatchdogConfig bad = config;
  GetParam().change(bad);
  EXPECT_STATUS(dog.init(bad), GetParam().expected);
  lc::Monitor m;
  ASSERT_STATUS(m.init(valid_monitor_config()), Status::ok);
  EXPECT_STATUS(dog.add(m), Status::not_initialised);

  // Refused after a good init: the qualifier (and the rest) stay as they were.
  ASSERT_STATUS(dog.init(config), Status::ok);
  EXPECT_STATUS(dog.init(bad), GetParam().expected);
  EXPECT_STREQ(dog.qualifier(), "before");
  EXPECT_STATUS(dog.add(m), Status::ok);
}

TEST(WatchdogConfig, BoundaryValuesAreAccepted) {
  struct Case {
    const char* what;
    void (*change)(WatchdogConfig&);
  };
  const Case cases[] = {
      {"default", [](WatchdogConfig&) {}},
      {"qualifier empty", [](WatchdogConfig& c) { c.qualifier = ""; }},
      {"qualifier 31 chars", [](WatchdogConfig& c) { c.qualifier = k31Chars; }},
      {"qualifier space and tilde", [](WatchdogConfig& c) { c.qualifier = " fw-1.0 ~"; }},
      {"max_frames 1", [](WatchdogConfig& c) { c.max_frames = 1; }},
      {"max_frames kMaxFrames", [](WatchdogConfig& c) { c.max_frames = static_cast<std::uint8_t>(lc::kMaxFrames); }},
      {"snapshot_attempts 1", [](WatchdogConfig& c) { c.snapshot_attempts = 1; }},
      {"snapshot_attempts 8", [](WatchdogConfig& c) { c.snapshot_attempts = 8; }},
      {"running_permille 1", [](WatchdogConfig& c) { c.cause.running_permille = 1; }},
      {"running_permille 1000", [](WatchdogConfig& c) { c.cause.running_permille = 1000; }},
      {"starved_busy_permille 1", [](WatchdogConfig& c) { c.cause.starved_busy_permille = 1; }},
      {"starved_busy_permille 1000", [](WatchdogConfig& c) { c.cause.starved_busy_permille = 1000; }},
  };
  for (const Case& c : cases) {
    WatchdogConfig config;
    c.change(config);
    lc::StaticWatchdog<1, 2> dog;
    EXPECT_STATUS(dog.init(config), Status::ok) << c.what;
  }
}

TEST(WatchdogConfig, QualifierIsCopiedAtInit) {
  char qualifier[] = "fw-1.0";
  WatchdogConfig config;
  config.qualifier = qualifier;
  lc::StaticWatchdog<1, 2> dog;
  ASSERT_STATUS(dog.init(config), Status::ok);
  qualifier[0] = 'X';
  EXPECT_STREQ(dog.qualifier(), "fw-1.0");
}

// ---- Watchdog registration ---------------------------------------------------------------------

// A static watchdog is constant-initialised (no start-up code): this only compiles if it can be.
constexpr lc::StaticWatchdog<2, 4, 1> kUnstarted;

TEST(Watchdog, BeforeInitHoldsNothing) {
  EXPECT_EQ(kUnstarted.loop_count(), 0u);
  EXPECT_EQ(kUnstarted.pending(), 0u);
  EXPECT_EQ(kUnstarted.stats().polls, 0u);
  // poll() does nothing and pop() finds nothing before init().
  lc::StaticWatchdog<1, 2> dog;
  dog.poll(1000);
  lc::BlockRecord record;
  EXPECT_FALSE(dog.pop(record));
  EXPECT_EQ(dog.stats().polls, 0u);
}

TEST(WatchdogAdd, BeforeWatchdogInitIsRefused) {
  lc::Monitor m;
  ASSERT_STATUS(m.init(valid_monitor_config()), Status::ok);
  lc::StaticWatchdog<1, 2> dog;
  EXPECT_STATUS(dog.add(m), Status::not_initialised);
  EXPECT_EQ(dog.loop_count(), 0u);
  // The refusal did not register the monitor: after init, it can be added.
  ASSERT_STATUS(dog.init(WatchdogConfig{}), Status::ok);
  EXPECT_STATUS(dog.add(m), Status::ok);
}

TEST(WatchdogAdd, UninitialisedMonitorIsRefused) {
  lc::Monitor m;
  lc::StaticWatchdog<1, 2> dog;
  ASSERT_STATUS(dog.init(WatchdogConfig{}), Status::ok);
  EXPECT_STATUS(dog.add(m), Status::not_initialised);
  EXPECT_EQ(dog.loop_count(), 0u);
  // A monitor whose init failed is still uninitialised.
  MonitorConfig bad = valid_monitor_config();
  bad.threshold_us = 0;
  EXPECT_STATUS(m.init(bad), Status::threshold_zero);
  EXPECT_STATUS(dog.add(m), Status::not_initialised);
  EXPECT_EQ(dog.loop_count(), 0u);
}

TEST(WatchdogAdd, SameMonitorTwiceIsRefused) {
  lc::Monitor m;
  ASSERT_STATUS(m.init(valid_monitor_config()), Status::ok);
  lc::StaticWatchdog<2, 2> dog;
  ASSERT_STATUS(dog.init(WatchdogConfig{}), Status::ok);
  EXPECT_STATUS(dog.add(m), Status::ok);
  EXPECT_STATUS(dog.add(m), Status::already_registered);
  EXPECT_EQ(dog.loop_count(), 1u);
}

TEST(WatchdogAdd, MonitorInASecondWatchdogIsRefused) {
  lc::Monitor m;
  ASSERT_STATUS(m.init(valid_monitor_config()), Status::ok);
  lc::StaticWatchdog<1, 2> first;
  lc::StaticWatchdog<1, 2> second;
  ASSERT_STATUS(first.init(WatchdogConfig{}), Status::ok);
  ASSERT_STATUS(second.init(WatchdogConfig{}), Status::ok);
  EXPECT_STATUS(first.add(m), Status::ok);
  EXPECT_STATUS(second.add(m), Status::already_registered);
  EXPECT_EQ(second.loop_count(), 0u);
}

TEST(WatchdogAdd, MoreThanMaxLoopsIsRefused) {
  constexpr std::size_t kMaxLoops = 3;
  lc::Monitor monitors[kMaxLoops + 1];
  for (lc::Monitor& m : monitors) ASSERT_STATUS(m.init(valid_monitor_config()), Status::ok);
  lc::StaticWatchdog<kMaxLoops, 2> dog;
  ASSERT_STATUS(dog.init(WatchdogConfig{}), Status::ok);
  for (std::size_t i = 0; i < kMaxLoops; ++i) {
    EXPECT_STATUS(dog.add(monitors[i]), Status::ok) << i;
    EXPECT_EQ(dog.loop_count(), i + 1);
  }
  EXPECT_STATUS(dog.add(monitors[kMaxLoops]), Status::registry_full);
  EXPECT_EQ(dog.loop_count(), kMaxLoops);
  // The refused monitor is not registered anywhere: another watchdog takes it.
  lc::StaticWatchdog<1, 2> other;
  ASSERT_STATUS(other.init(WatchdogConfig{}), Status::ok);
  EXPECT_STATUS(other.add(monitors[kMaxLoops]), Status::ok);
}

TEST(WatchdogAdd, MonitorAtAnotherTickRateIsRefused) {
  lc::Monitor first;
  lc::Monitor other_rate;
  lc::Monitor same_rate;
  ASSERT_STATUS(first.init(valid_monitor_config()), Status::ok);  // 1 MHz
  MonitorConfig fast = valid_monitor_config();
  fast.tick_hz = 64'000'000;
  ASSERT_STATUS(other_rate.init(fast), Status::ok);
  ASSERT_STATUS(same_rate.init(valid_monitor_config()), Status::ok);
  lc::StaticWatchdog<3, 2> dog;
  ASSERT_STATUS(dog.init(WatchdogConfig{}), Status::ok);
  EXPECT_STATUS(dog.add(first), Status::ok);
  EXPECT_STATUS(dog.add(other_rate), Status::tick_rate_mismatch);  // poll() takes one `now` for all
  EXPECT_STATUS(dog.add(same_rate), Status::ok);
  EXPECT_EQ(dog.loop_count(), 2u);
  // The refused monitor is not registered: a watchdog of its own takes it.
  lc::StaticWatchdog<1, 2> own;
  ASSERT_STATUS(own.init(WatchdogConfig{}), Status::ok);
  EXPECT_STATUS(own.add(other_rate), Status::ok);
}

void ignore_record(void*, const lc::BlockRecord&) {}

TEST(WatchdogInterceptor, ErrorsHaveTheirOwnStatus) {
  lc::StaticWatchdog<1, 2> dog;
  EXPECT_STATUS(dog.add_interceptor(&ignore_record, nullptr), Status::not_initialised);
  ASSERT_STATUS(dog.init(WatchdogConfig{}), Status::ok);
  EXPECT_STATUS(dog.add_interceptor(nullptr, nullptr), Status::interceptor_null);
  for (std::size_t i = 0; i < lc::kMaxInterceptors; ++i) {
    EXPECT_STATUS(dog.add_interceptor(&ignore_record, nullptr), Status::ok) << i;
  }
  EXPECT_STATUS(dog.add_interceptor(&ignore_record, nullptr), Status::interceptor_chain_full);
}

// ---- Status texts ------------------------------------------------------------------------------

// Every Status, in enum order, with its enumerator name and a word of its description that
// names the field or argument at fault.
struct StatusText {
  Status status;
  const char* name;
  const char* names_field;
};

constexpr StatusText kStatusTexts[] = {
    {Status::ok, "ok", "ok"},
    {Status::name_missing, "name_missing", "MonitorConfig.name"},
    {Status::tick_hz_zero, "tick_hz_zero", "MonitorConfig.tick_hz"},
    {Status::threshold_zero, "threshold_zero", "MonitorConfig.threshold_us"},
    {Status::threshold_below_one_tick, "threshold_below_one_tick", "MonitorConfig.threshold_us"},
    {Status::arm_not_below_threshold, "arm_not_below_threshold", "MonitorConfig.arm_permille"},
    {Status::sample_interval_zero, "sample_interval_zero", "MonitorConfig.sample_interval_us"},
    {Status::sample_interval_above_threshold, "sample_interval_above_threshold",
     "MonitorConfig.sample_interval_us"},
    {Status::sample_interval_below_one_tick, "sample_interval_below_one_tick",
     "MonitorConfig.sample_interval_us"},
    {Status::hang_limit_below_threshold, "hang_limit_below_threshold", "MonitorConfig.hang_limit_us"},
    {Status::hang_limit_too_long, "hang_limit_too_long", "MonitorConfig.hang_limit_us"},
    {Status::qualifier_missing, "qualifier_missing", "WatchdogConfig.qualifier"},
    {Status::qualifier_too_long, "qualifier_too_long", "WatchdogConfig.qualifier"},
    {Status::qualifier_invalid, "qualifier_invalid", "WatchdogConfig.qualifier"},
    {Status::max_frames_out_of_range, "max_frames_out_of_range", "WatchdogConfig.max_frames"},
    {Status::snapshot_attempts_out_of_range, "snapshot_attempts_out_of_range", "WatchdogConfig.snapshot_attempts"},
    {Status::running_permille_out_of_range, "running_permille_out_of_range", "WatchdogConfig.cause.running_permille"},
    {Status::starved_permille_out_of_range, "starved_permille_out_of_range", "WatchdogConfig.cause.starved_busy_permille"},
    {Status::starved_wait_permille_out_of_range, "starved_wait_permille_out_of_range",
     "WatchdogConfig.cause.starved_wait_permille"},
    {Status::not_initialised, "not_initialised", "init()"},
    {Status::already_initialised, "already_initialised", "add()"},
    {Status::registry_full, "registry_full", "MaxLoops"},
    {Status::already_registered, "already_registered", "watchdog"},
    {Status::tick_rate_mismatch, "tick_rate_mismatch", "MonitorConfig.tick_hz"},
    {Status::interceptor_null, "interceptor_null", "interceptor"},
    {Status::interceptor_chain_full, "interceptor_chain_full", "LOOPCANARY_MAX_INTERCEPTORS"},
    {Status::event_health_missing, "event_health_missing", "Event::health"},
    {Status::period_below_one_tick, "period_below_one_tick", "EventHealthConfig.period_us"},
    {Status::period_too_long, "period_too_long", "EventHealthConfig.period_us"},
    {Status::deadline_below_one_tick, "deadline_below_one_tick", "EventHealthConfig.deadline_us"},
    {Status::deadline_too_long, "deadline_too_long", "EventHealthConfig.deadline_us"},
    {Status::health_events_full, "health_events_full", "LOOPCANARY_HEALTH_EVENTS"},
    {Status::health_period_below_one_tick, "health_period_below_one_tick", "WatchdogConfig.health_period_us"},
    {Status::health_period_too_long, "health_period_too_long", "WatchdogConfig.health_period_us"},
    {Status::health_ring_missing, "health_ring_missing", "HealthCapacity"},
    {Status::interceptor_unused, "interceptor_unused", "ObservationInterceptor"},
};
constexpr std::size_t kStatusCount = sizeof(kStatusTexts) / sizeof(kStatusTexts[0]);

TEST(StatusText, TableCoversEveryStatusInOrder) {
  // interceptor_unused is the last enumerator: the table has one row per value.
  ASSERT_EQ(kStatusCount, static_cast<std::size_t>(Status::interceptor_unused) + 1);
  for (std::size_t i = 0; i < kStatusCount; ++i) {
    EXPECT_EQ(static_cast<std::size_t>(kStatusTexts[i].status), i) << kStatusTexts[i].name;
  }
}

TEST(StatusText, NameIsTheEnumerator) {
  for (const StatusText& t : kStatusTexts) {
    ASSERT_NE(lc::name(t.status), nullptr);
    EXPECT_STREQ(lc::name(t.status), t.name);
  }
}

TEST(StatusText, DescriptionNamesTheFieldAtFault) {
  for (const StatusText& t : kStatusTexts) {
    const char* text = lc::describe(t.status);
    ASSERT_NE(text, nullptr) << t.name;
    EXPECT_NE(std::strstr(text, t.names_field), nullptr) << t.name << ": \"" << text << "\"";
  }
}

TEST(StatusText, NamesAndDescriptionsAreDistinct) {
  std::set<std::string> names;
  std::set<std::string> descriptions;
  for (const StatusText& t : kStatusTexts) {
    EXPECT_TRUE(names.insert(lc::name(t.status)).second) << "duplicate name " << lc::name(t.status);
    EXPECT_TRUE(descriptions.insert(lc::describe(t.status)).second)
        << t.name << " shares its description: \"" << lc::describe(t.status) << "\"";
  }
}

TEST(StatusText, OutOfRangeValueStillHasText) {
  const auto bogus = static_cast<Status>(200);
  ASSERT_NE(lc::name(bogus), nullptr);
  ASSERT_NE(lc::describe(bogus), nullptr);
  for (const StatusText& t : kStatusTexts) EXPECT_STRNE(lc::name(bogus), t.name);
}

// Every refusal the config tables above provoke describes a MonitorConfig/WatchdogConfig field.
TEST(StatusText, EveryConfigRefusalDescribesItsConfigStruct) {
  for (const MonitorCase& c : kMonitorCases) {
    EXPECT_NE(std::strstr(lc::describe(c.expected), "MonitorConfig."), nullptr) << c.what;
  }
  for (const WatchdogCase& c : kWatchdogCases) {
    EXPECT_NE(std::strstr(lc::describe(c.expected), "WatchdogConfig."), nullptr) << c.what;
  }
}

}  // namespace
