// SPDX-License-Identifier: MIT
// One-call set-up of a Linux process (loopcanary/linux/setup.hpp).
#include "loopcanary/linux/setup.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "loopcanary/format.hpp"

namespace loopcanary::port_linux {

namespace {

constexpr std::uint32_t kMaxMs = 600'000;

// The one list of variables (environment_variables(), docs/adapters.md "Environment"), indexed
// by Var, in the order read_environment() applies them (a value bad only against an earlier one
// is the later one's fault).
enum class Var : std::uint8_t { threshold, hang, sample, log_dir, qualifier, stderr_reports };
constexpr EnvironmentVariable kVars[] = {
    {"LOOPCANARY_THRESHOLD_MS", "SetupConfig::threshold_ms", "100", "1..600000 (ms)",
     "a dispatch longer than this is a block"},
    {"LOOPCANARY_HANG_MS", "SetupConfig::hang_ms", "5000", "the threshold..600000 (ms)",
     "a dispatch still running after this long is a hang"},
    {"LOOPCANARY_SAMPLE_MS", "SetupConfig::sample_interval_ms", "a tenth of the threshold, 1..10",
     "1..the threshold (ms)", "the stack-sample interval once armed, and the watchdog thread's poll period"},
    {"LOOPCANARY_LOG_DIR", "SetupConfig::log_dir", "none: no log files", "a path, 1..4095 characters",
     "the log directory (created when missing, one level): rotated JSON Lines and text logs"},
    {"LOOPCANARY_QUALIFIER", "SetupConfig::qualifier", "empty", "printable ASCII, 0..31 characters",
     "printed in every report and in the log files' names"},
    {"LOOPCANARY_STDERR", "SetupConfig::stderr_reports", "1", "0 or 1", "1: each report as text on stderr"},
};
static_assert(sizeof kVars / sizeof kVars[0] == static_cast<std::size_t>(Var::stderr_reports) + 1,
              "one entry per Var, in its order");

// Decimal digits only, at most kMaxMs; false otherwise.
bool parse_ms(const char* text, std::uint32_t& out) noexcept {
  if (*text == '\0') return false;
  std::uint32_t value = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return false;
    value = value * 10u + static_cast<std::uint32_t>(*p - '0');
    if (value > kMaxMs) return false;
  }
  out = value;
  return true;
}

bool printable(const char* text) noexcept {
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < 0x20 || *p > 0x7e) return false;
  }
  return true;
}

// The reason `value` is bad for `var` on its own, or null when it is good (then applied to
// `config`; read_environment() checks the values against each other afterwards).
const char* apply(Var var, const char* value, SetupConfig& config, EnvironmentStrings& strings) noexcept {
  std::uint32_t ms = 0;
  switch (var) {
    case Var::threshold:
    case Var::hang:
    case Var::sample:
      if (!parse_ms(value, ms) || ms == 0) return "not a whole number of milliseconds in 1..600000";
      (var == Var::threshold ? config.threshold_ms : var == Var::hang ? config.hang_ms : config.sample_interval_ms) = ms;
      return nullptr;
    case Var::log_dir: {
      const std::size_t length = std::strlen(value);
      if (length == 0) return "empty (unset it for no log files)";
      if (length > kSetupPathMax) return "longer than 4095 characters";
      std::memcpy(strings.log_dir, value, length + 1);
      config.log_dir = strings.log_dir;
      return nullptr;
    }
    case Var::qualifier: {
      const std::size_t length = std::strlen(value);
      if (length > kQualifierMax) return "longer than 31 characters";
      if (!printable(value)) return "not printable ASCII";
      std::memcpy(strings.qualifier, value, length + 1);
      config.qualifier = strings.qualifier;
      return nullptr;
    }
    case Var::stderr_reports:
      if (std::strcmp(value, "0") == 0 || std::strcmp(value, "1") == 0) {
        config.stderr_reports = value[0] == '1';
        return nullptr;
      }
      return "neither 0 nor 1";
  }
  return "unknown variable";
}

void note_bad(EnvironmentResult& result, const char* variable, const char* value, const char* reason) noexcept {
  if (result.bad++ != 0) return;
  // The value is shown cut to 40 characters, with its unprintable bytes as '?'.
  char shown[41] = {};
  std::size_t n = 0;
  for (; n < 40 && value[n] != '\0'; ++n) shown[n] = value[n] >= 0x20 && value[n] <= 0x7e ? value[n] : '?';
  std::snprintf(result.message, sizeof result.message, "%s=\"%s%s\": %s", variable, shown,
                value[n] != '\0' ? "..." : "", reason);
}

const char* environment_get(void*, const char* name) { return std::getenv(name); }

}  // namespace

EnvironmentSource process_environment() noexcept { return EnvironmentSource{&environment_get, nullptr}; }

const EnvironmentVariable* environment_variables(std::size_t& count) noexcept {
  count = sizeof kVars / sizeof kVars[0];
  return kVars;
}

EnvironmentResult read_environment(const EnvironmentSource& source, SetupConfig& config,
                                   EnvironmentStrings& strings) noexcept {
  EnvironmentResult result;
  if (source.get == nullptr) return result;
  const SetupConfig before = config;
  const char* values[sizeof kVars / sizeof kVars[0]] = {};
  bool applied[sizeof kVars / sizeof kVars[0]] = {};
  for (std::size_t i = 0; i < sizeof kVars / sizeof kVars[0]; ++i) {
    values[i] = source.get(source.context, kVars[i].name);
    if (values[i] == nullptr) continue;
    const char* reason = apply(static_cast<Var>(i), values[i], config, strings);
    applied[i] = reason == nullptr;
    if (reason != nullptr) note_bad(result, kVars[i].name, values[i], reason);
  }
  // The milliseconds against each other: a pair out of order refuses the later variable of the
  // list, or the earlier one when only it came from the environment.
  const auto refuse = [&](std::size_t i, std::uint32_t SetupConfig::*field, const char* reason) {
    config.*field = before.*field;
    applied[i] = false;
    note_bad(result, kVars[i].name, values[i], reason);
  };
  // Each pair must hold low <= high; reasons name what the refused value is measured against.
  struct Order {
    std::size_t low, high;  // indices into kVars
    std::uint32_t SetupConfig::*low_field;
    std::uint32_t SetupConfig::*high_field;
    const char* low_reason;   // the low variable refused
    const char* high_reason;  // the high variable refused
  };
  const Order orders[] = {
      {0, 1, &SetupConfig::threshold_ms, &SetupConfig::hang_ms, "above the hang limit (SetupConfig::hang_ms)",
       "below the threshold (LOOPCANARY_THRESHOLD_MS or SetupConfig::threshold_ms)"},
      {2, 0, &SetupConfig::sample_interval_ms, &SetupConfig::threshold_ms,
       "above the threshold (LOOPCANARY_THRESHOLD_MS or SetupConfig::threshold_ms)",
       "below the sample interval (SetupConfig::sample_interval_ms)"},
  };
  for (const Order& o : orders) {
    while (config.*o.low_field > config.*o.high_field) {
      const std::size_t later = o.low > o.high ? o.low : o.high;
      const std::size_t earlier = o.low > o.high ? o.high : o.low;
      const std::size_t i = applied[later] ? later : applied[earlier] ? earlier : sizeof kVars / sizeof kVars[0];
      if (i == sizeof kVars / sizeof kVars[0]) break;  // the configuration itself: validate() refuses it
      refuse(i, i == o.low ? o.low_field : o.high_field, i == o.low ? o.low_reason : o.high_reason);
    }
  }
  for (const bool a : applied) result.applied += a ? 1u : 0u;
  return result;
}

SetupError validate(const SetupConfig& config, char* message, std::size_t size) noexcept {
  const auto fail = [&](SetupError error, const char* text) {
    if (message != nullptr && size > 0) std::snprintf(message, size, "%s", text);
    return error;
  };
  if (config.threshold_ms == 0 || config.threshold_ms > kMaxMs) {
    return fail(SetupError::threshold_out_of_range, "SetupConfig::threshold_ms is outside 1..600000");
  }
  if (config.hang_ms < config.threshold_ms || config.hang_ms > kMaxMs) {
    return fail(SetupError::hang_out_of_range, "SetupConfig::hang_ms is below threshold_ms or above 600000");
  }
  if (config.sample_interval_ms > config.threshold_ms) {
    return fail(SetupError::sample_interval_out_of_range, "SetupConfig::sample_interval_ms is above threshold_ms");
  }
  if (config.qualifier == nullptr || std::strlen(config.qualifier) > kQualifierMax || !printable(config.qualifier)) {
    return fail(SetupError::qualifier_invalid, "SetupConfig::qualifier is null, longer than 31 or not printable ASCII");
  }
  if (config.log_dir != nullptr && std::strlen(config.log_dir) > kSetupPathMax) {
    return fail(SetupError::log_dir_too_long, "SetupConfig::log_dir is longer than 4095 characters");
  }
  if (message != nullptr && size > 0) message[0] = '\0';
  return SetupError::none;
}

const char* name(SetupError error) noexcept {
  switch (error) {
    case SetupError::none: return "none";
    case SetupError::threshold_out_of_range: return "threshold_out_of_range";
    case SetupError::hang_out_of_range: return "hang_out_of_range";
    case SetupError::sample_interval_out_of_range: return "sample_interval_out_of_range";
    case SetupError::qualifier_invalid: return "qualifier_invalid";
    case SetupError::log_dir_too_long: return "log_dir_too_long";
    case SetupError::bad_environment: return "bad_environment";
    case SetupError::already_started: return "already_started";
    case SetupError::platform_failed: return "platform_failed";
    case SetupError::watchdog_failed: return "watchdog_failed";
    case SetupError::sink_failed: return "sink_failed";
    case SetupError::watchdog_thread_failed: return "watchdog_thread_failed";
  }
  return "unknown";
}

Setup::Setup() noexcept {
  for (std::size_t i = 0; i < kSetupMaxLoops; ++i) {
    std::snprintf(loops_[i].name, sizeof loops_[i].name, "loop-%zu", i);
    loops_[i].state.store(kFree, std::memory_order_relaxed);
  }
}

Setup::~Setup() { stop(); }

SetupStatus Setup::start(const SetupConfig& config) noexcept {
  SetupStatus status;
  const auto fail = [&](SetupError error) {
    status.error = error;
    if (status.message[0] == '\0') std::snprintf(status.message, sizeof status.message, "%s", name(error));
    return status;
  };
  if (started_) return fail(SetupError::already_started);

  SetupConfig c = config;
  if (c.environment) {
    const EnvironmentResult env = read_environment(process_environment(), c, strings_);
    if (env.bad != 0) {
      if (c.refuse_bad_environment) {
        std::snprintf(status.message, sizeof status.message, "%s", env.message);
        return fail(SetupError::bad_environment);
      }
      environment_errors_.fetch_add(env.bad, std::memory_order_relaxed);
      std::fprintf(stderr, "loopcanary: ignored %s (%u bad variable%s; the configured values stay)\n", env.message,
                   static_cast<unsigned>(env.bad), env.bad == 1 ? "" : "s");
    }
  }
  const SetupError invalid = validate(c, status.message, sizeof status.message);
  if (invalid != SetupError::none) return fail(invalid);
  if (c.sample_interval_ms == 0) {
    c.sample_interval_ms = c.threshold_ms / 10u;
    if (c.sample_interval_ms < 1u) c.sample_interval_ms = 1u;
    if (c.sample_interval_ms > 10u) c.sample_interval_ms = 10u;
  }
  config_ = c;

  status.port = platform_.init();
  if (!status.port.ok()) {
    format(status.port, status.message, sizeof status.message);
    return fail(SetupError::platform_failed);
  }
  WatchdogConfig dog;
  dog.qualifier = c.qualifier;
  status.status = watchdog_.init(dog, platform_.hal());
  for (std::size_t i = 0; i < kSetupMaxLoops && status.status == Status::ok; ++i) {
    MonitorConfig mc;
    mc.name = loops_[i].name;
    mc.tick_hz = tick_hz();
    mc.threshold_us = c.threshold_ms * 1000u;
    mc.hang_limit_us = c.hang_ms * 1000u;
    mc.sample_interval_us = c.sample_interval_ms * 1000u;
    mc.context = &loops_[i].thread;
    status.status = loops_[i].monitor.init(mc);
    if (status.status == Status::ok) status.status = watchdog_.add(loops_[i].monitor);
  }
  if (status.status != Status::ok) {
    std::snprintf(status.message, sizeof status.message, "the watchdog refused its configuration: %s",
                  loopcanary::name(status.status));
    return fail(SetupError::watchdog_failed);
  }
  if (c.log_dir != nullptr && c.log_dir[0] != '\0') {
    FileSinkConfig sc;
    sc.directory = c.log_dir;
    sc.qualifier = c.qualifier[0] != '\0' ? c.qualifier : nullptr;
    status.sink = sink_.open(sc);
    // A run-time fault (directory unwritable) is retried by the sink on later records and
    // shown in sink().status(); only a refused configuration stops the set-up.
    if (status.sink == SinkError::directory_missing || status.sink == SinkError::prefix_invalid ||
        status.sink == SinkError::max_file_bytes_too_small || status.sink == SinkError::max_files_zero ||
        status.sink == SinkError::no_output) {
      std::snprintf(status.message, sizeof status.message, "the file sink refused its configuration: %s",
                    name(status.sink));
      return fail(SetupError::sink_failed);
    }
    sink_open_ = true;
  }
  DrainThreadConfig dc;
  dc.consume = &Setup::consume;
  dc.context = this;
  status.port = drain_thread_.start(watchdog_, dc);
  if (status.port.ok()) {
    WatchdogThreadConfig tc;
    tc.period_us = c.sample_interval_ms * 1000u;
    tc.fifo_priority = c.fifo_priority;
    tc.after_poll = &DrainThread::after_poll;
    tc.after_poll_context = &drain_thread_;
    status.port = watchdog_thread_.start(watchdog_, tc);
    if (status.port.error == Error::thread_create_failed && status.port.sys_errno == EPERM && tc.fifo_priority != 0) {
      tc.fifo_priority = 0;
      status.port = watchdog_thread_.start(watchdog_, tc);
    }
    if (!status.port.ok()) drain_thread_.stop();
  }
  if (!status.port.ok()) {
    format(status.port, status.message, sizeof status.message);
    sink_.close();
    sink_open_ = false;
    return fail(SetupError::watchdog_thread_failed);
  }
  started_ = true;
  return status;
}

void Setup::stop() noexcept {
  if (!started_ || stopped_) return;
  stopped_ = true;
  watchdog_thread_.stop();
  // This thread is the watchdog's context now: the last poll, then every record to its consumer.
  watchdog_.finish(Clock::now());
  drain_thread_.stop();
  if (sink_open_) sink_.close();
  sink_open_ = false;
}

SetupStats Setup::stats() const noexcept {
  SetupStats s;
  s.environment_errors = environment_errors_.load(std::memory_order_relaxed);
  s.loops_attached = loops_attached_.load(std::memory_order_relaxed);
  s.loops_refused = loops_refused_.load(std::memory_order_relaxed);
  return s;
}

void Setup::consume(void* self, const BlockRecord& record) {
  auto* setup = static_cast<Setup*>(self);
  if (setup->sink_open_) FileSink::interceptor(&setup->sink_, record);
  if (setup->config_.stderr_reports) {
    static char text[16384];  // one consumer at a time: the drain thread, then the stopping thread
    format_text(record, text, sizeof text);
    std::fputs(text, stderr);
  }
  if (setup->config_.interceptor != nullptr) setup->config_.interceptor(setup->config_.interceptor_context, record);
}

Setup::Loop* Setup::claim(const char* name) noexcept {
  static std::mutex mutex;  // claims are rare (once per loop thread) and cold
  std::lock_guard<std::mutex> lock(mutex);
  char wanted[kSetupNameMax + 1];
  std::snprintf(wanted, sizeof wanted, "%s", name != nullptr && name[0] != '\0' ? name : "loop");
  const auto live = [&](const char* n) {
    for (const Loop& l : loops_) {
      if (l.state.load(std::memory_order_relaxed) == kTaken && std::strcmp(l.name, n) == 0) return true;
    }
    return false;
  };
  char candidate[kSetupNameMax + 1];
  std::snprintf(candidate, sizeof candidate, "%s", wanted);
  for (unsigned k = 2; live(candidate) && k <= kSetupMaxLoops + 1; ++k) {
    char suffix[8];
    const int n = std::snprintf(suffix, sizeof suffix, "-%u", k);
    const std::size_t keep = std::strlen(wanted) < kSetupNameMax - static_cast<std::size_t>(n)
                                 ? std::strlen(wanted)
                                 : kSetupNameMax - static_cast<std::size_t>(n);
    std::memcpy(candidate, wanted, keep);
    std::memcpy(candidate + keep, suffix, static_cast<std::size_t>(n) + 1);
  }
  // A released loop of that name first (its name never changes once a watchdog may print it),
  // then a loop never used.
  for (Loop& l : loops_) {
    if (l.state.load(std::memory_order_relaxed) == kReleased && std::strcmp(l.name, candidate) == 0) {
      l.state.store(kTaken, std::memory_order_relaxed);
      return &l;
    }
  }
  for (Loop& l : loops_) {
    if (l.state.load(std::memory_order_relaxed) == kFree) {
      std::memcpy(l.name, candidate, sizeof candidate);
      l.state.store(kTaken, std::memory_order_relaxed);
      return &l;
    }
  }
  return nullptr;
}

ScopedLoop::ScopedLoop(Setup& setup, const char* name) noexcept {
  Setup::Loop* loop = setup.started() && detail::t_loop == nullptr ? setup.claim(name) : nullptr;
  if (loop != nullptr && !loop->thread.attach().ok()) {
    loop->state.store(Setup::kReleased, std::memory_order_release);
    loop = nullptr;
  }
  if (loop == nullptr) {
    setup.loops_refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  setup.loops_attached_.fetch_add(1, std::memory_order_relaxed);
  loop_ = loop;
  detail::t_loop = &loop->monitor;
}

ScopedLoop::~ScopedLoop() {
  if (loop_ == nullptr) return;
  detail::t_loop = nullptr;
  loop_->thread.detach();
  loop_->state.store(Setup::kReleased, std::memory_order_release);
}

}  // namespace loopcanary::port_linux
