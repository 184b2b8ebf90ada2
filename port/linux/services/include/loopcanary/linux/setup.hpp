// SPDX-License-Identifier: MIT
// One-call set-up of a Linux process: a Setup owns the platform, the watchdog, the watchdog
// thread, the drain thread (the records' one consumer: log files when a directory is given,
// stderr, your interceptor) and start() brings them up from one SetupConfig whose every field
// has a default, overridable from the environment:
//
//   loopcanary::port_linux::Setup canary;    // static storage, or a local of main()
//   canary.start();                          // SetupConfig{} + LOOPCANARY_* variables
//   // on each loop thread:
//   loopcanary::port_linux::ScopedLoop loop(canary, "main");
//   LOOPCANARY_DISPATCH(loop.monitor(), kEvent);   // or an adapter does it (docs/adapters.md)
//
// Environment (read by start() when SetupConfig::environment is set, the default): the
// LOOPCANARY_* variables of environment_variables() (name, field, default, range, effect; the
// same table is in docs/adapters.md, "Environment", and a test compares them), plus the Linux
// port's LOOPCANARY_CLOCK (the clock source, docs/porting-linux.md).
// Numbers are decimal digits only (no sign, no spaces, no suffix). A bad value is never used:
// with refuse_bad_environment off (the default) start() prints one line naming the variable,
// its value and the rule to stderr, keeps the configured value and goes on (counted in
// SetupStats::environment_errors); with it on, start() fails with bad_environment and the same
// message in SetupStatus::message.
//
// Loops: a Setup watches up to kSetupMaxLoops loop threads, each a PortMonitor of its own,
// every one initialised and added to the watchdog by start() (so attaching a thread later never
// touches a running watchdog). A ScopedLoop claims one for the calling thread. Nothing here is
// on the hot path: a dispatch is the monitor's begin/end as without a Setup.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/linux/file_sink.hpp"
#include "loopcanary/linux/watchdog_thread.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "loopcanary/port/linux/status.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary::port_linux {

/// Loop threads one Setup can watch at the same time and over its life (a released loop is
/// reused by a later thread of the same name only).
inline constexpr std::size_t kSetupMaxLoops = 16;
/// Records the Setup's watchdog ring holds for its drain thread (a power of two): what a
/// stalled consumer (log files on a disk that does not answer) lets pile up before the
/// watchdog counts records_dropped.
inline constexpr std::size_t kSetupRecordCapacity = 32;
/// Longest loop name a ScopedLoop keeps, in characters (longer names are cut).
inline constexpr std::size_t kSetupNameMax = 31;
/// Longest LOOPCANARY_LOG_DIR, in characters.
inline constexpr std::size_t kSetupPathMax = 4095;

/// Everything a Setup needs; a value-initialised SetupConfig is a working set-up.
struct SetupConfig {
  /// A dispatch longer than this is a block, milliseconds: 1..600000.
  std::uint32_t threshold_ms = 100;
  /// A dispatch still running after this long is a hang, milliseconds: threshold_ms..600000.
  std::uint32_t hang_ms = 5'000;
  /// Stack-sample interval once armed, milliseconds: 0 (threshold_ms / 10, at least 1 and at
  /// most 10) or 1..threshold_ms. The watchdog thread polls at this interval, at most every 10 ms.
  std::uint32_t sample_interval_ms = 0;
  /// The log directory (created when missing, one level); null or "": no log files.
  const char* log_dir = nullptr;
  /// Printed in every report (firmware version, build flavour): printable ASCII, 0..31
  /// characters. Also in the log files' names.
  const char* qualifier = "";
  /// Print each final, hang and in-progress report as text on stderr.
  bool stderr_reports = true;
  /// Read the LOOPCANARY_* variables (above) at start(); they override the fields here.
  bool environment = true;
  /// A bad variable makes start() fail (bad_environment) instead of being reported and ignored.
  bool refuse_bad_environment = false;
  /// The watchdog thread at SCHED_FIFO (1..99), falling back to normal scheduling when the
  /// process has no right to it; 0: normal scheduling.
  int fifo_priority = 0;
  /// Called with every record on the Setup's drain thread (never the watchdog's: a slow
  /// interceptor delays no poll), after the log files and stderr, in report order; at stop(),
  /// the last ones on the stopping thread. A test's collector, a forwarder. Must not call back
  /// into the Setup. May be null.
  Interceptor interceptor = nullptr;
  void* interceptor_context = nullptr;
};

/// What start() refused, or none.
enum class SetupError : std::uint8_t {
  none = 0,
  threshold_out_of_range,        ///< threshold_ms outside 1..600000
  hang_out_of_range,             ///< hang_ms below threshold_ms or above 600000
  sample_interval_out_of_range,  ///< sample_interval_ms above threshold_ms
  qualifier_invalid,             ///< qualifier null, longer than 31 or not printable ASCII
  log_dir_too_long,              ///< log_dir longer than kSetupPathMax
  bad_environment,               ///< a LOOPCANARY_* variable is bad (refuse_bad_environment)
  already_started,               ///< start() on a started Setup
  platform_failed,               ///< Platform::init (SetupStatus::port says why)
  watchdog_failed,               ///< the watchdog refused its configuration (SetupStatus::status)
  sink_failed,                   ///< the file sink refused its configuration (SetupStatus::sink)
  watchdog_thread_failed,        ///< WatchdogThread::start (SetupStatus::port says why)
};

/// "threshold_out_of_range", ... Never null.
const char* name(SetupError error) noexcept;

/// The outcome of start(): the error and, for the steps that have one, their own status, and a
/// sentence naming the field or variable at fault ("" when none).
struct SetupStatus {
  SetupError error = SetupError::none;
  Result port{};
  Status status = Status::ok;
  SinkError sink = SinkError::none;
  char message[160] = {};
  bool ok() const noexcept { return error == SetupError::none; }
};

/// Counters of a Setup. Any thread.
struct SetupStats {
  std::uint32_t environment_errors = 0;  ///< bad LOOPCANARY_* values ignored by start()
  std::uint32_t loops_attached = 0;      ///< ScopedLoops that got a loop
  std::uint32_t loops_refused = 0;       ///< ScopedLoops refused: every loop taken, or not started
};

/// One LOOPCANARY_* variable start() reads: its name, the SetupConfig field it sets, that
/// field's default, the values it takes and what it does (all static text).
struct EnvironmentVariable {
  const char* name;
  const char* field;
  const char* default_value;
  const char* range;
  const char* effect;
};

/// The variables start() reads, in the order read_environment() applies them; `count` is set
/// to their number. Any thread.
const EnvironmentVariable* environment_variables(std::size_t& count) noexcept;

/// Where a Setup reads the environment: `get(context, name)` returns the value or null.
struct EnvironmentSource {
  const char* (*get)(void* context, const char* name) = nullptr;
  void* context = nullptr;
};

/// The process environment (getenv). Read it only where no thread calls setenv.
EnvironmentSource process_environment() noexcept;

/// Text a SetupConfig's string fields point into after read_environment(): copies of the
/// variables' values (the environment may change afterwards).
struct EnvironmentStrings {
  char log_dir[kSetupPathMax + 1] = {};
  char qualifier[kQualifierMax + 1] = {};
};

/// Outcome of read_environment().
struct EnvironmentResult {
  std::uint32_t applied = 0;  ///< variables set, valid and applied
  std::uint32_t bad = 0;      ///< variables set but refused (their fields keep their values)
  /// The first refusal: "LOOPCANARY_HANG_MS=\"12x\": not a decimal number of milliseconds";
  /// "" when none.
  char message[160] = {};
};

/// Overrides `config` with the LOOPCANARY_* variables `source` has. A bad value (not a number,
/// out of range, too long, not printable) leaves its field as it was and is counted; of two
/// millisecond values out of order (a hang below the threshold, a sample interval above it) the
/// later variable in the list above is refused, or the earlier one when only it is set. String fields end up pointing into `strings`. Pure:
/// reads nothing but `source`. Any thread.
EnvironmentResult read_environment(const EnvironmentSource& source, SetupConfig& config,
                                   EnvironmentStrings& strings) noexcept;

/// Checks `config` as start() does: SetupError::none or the first field at fault (with a
/// sentence naming it in `message`, when not null; `size` bytes).
SetupError validate(const SetupConfig& config, char* message = nullptr, std::size_t size = 0) noexcept;

class ScopedLoop;

/// The whole set-up of one process. Give it storage that outlives every loop thread it watches
/// (a static, or a local of main() that the loop threads are joined before).
class Setup {
 public:
  Setup() noexcept;
  /// stop().
  ~Setup();
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;

  /// Applies the environment (when config.environment), validates, selects the clock, installs
  /// the sample signal, initialises every loop's monitor, opens the sink, adds the interceptors
  /// and starts the watchdog thread. On error nothing runs and the status names the field,
  /// variable or step. Call once, from any thread but a loop thread.
  SetupStatus start(const SetupConfig& config = SetupConfig{}) noexcept;

  /// Stops the watchdog thread, takes one last poll (Watchdog::finish: every dispatch that ended
  /// gets its final record; one still running past its threshold gets a final record flagged
  /// running_at_stop), lets the drain thread consume every record, joins it and closes the
  /// files. So a block that ends just before a normal exit (the destructor of a static Setup)
  /// is in the log. Idempotent. Call after the loop threads' last dispatches, from a thread
  /// that is neither the watchdog's nor the drain thread (not from an interceptor).
  void stop() noexcept;

  bool started() const noexcept { return started_; }
  /// The configuration in use (after the environment), valid after a successful start().
  const SetupConfig& config() const noexcept { return config_; }
  /// The watchdog, for stats() and the rest. Do not add loops or interceptors to it, nor pop():
  /// the drain thread is the ring's one consumer (SetupConfig::interceptor sees every record).
  Watchdog& watchdog() noexcept { return watchdog_; }
  Platform& platform() noexcept { return platform_; }
  const FileSink& sink() const noexcept { return sink_; }
  SetupStats stats() const noexcept;

 private:
  friend class ScopedLoop;
  struct Loop {
    PortMonitor monitor;
    LoopThread thread;
    char name[kSetupNameMax + 1];
    std::atomic<std::uint8_t> state;  // Setup::kFree, kTaken, kReleased
  };
  static constexpr std::uint8_t kFree = 0;
  static constexpr std::uint8_t kTaken = 1;
  static constexpr std::uint8_t kReleased = 2;

  Loop* claim(const char* name) noexcept;
  static void consume(void* self, const BlockRecord& record);

  bool started_ = false;
  bool stopped_ = false;
  SetupConfig config_{};
  EnvironmentStrings strings_{};
  Platform platform_;
  StaticWatchdog<kSetupMaxLoops, kSetupRecordCapacity> watchdog_;
  WatchdogThread watchdog_thread_;
  DrainThread drain_thread_;
  FileSink sink_;
  bool sink_open_ = false;
  Loop loops_[kSetupMaxLoops];
  std::atomic<std::uint32_t> environment_errors_{0};
  std::atomic<std::uint32_t> loops_attached_{0};
  std::atomic<std::uint32_t> loops_refused_{0};
};

/// The loop the calling thread runs (its ScopedLoop's monitor), or null when the thread has
/// none. Adapters and handlers use it (`LOOPCANARY_SCOPE(*loopcanary::port_linux::this_thread_loop(), "x")`).
/// Loop thread.
inline PortMonitor* this_thread_loop() noexcept;

namespace detail {
/// The calling thread's loop; set and cleared by ScopedLoop only.
inline thread_local PortMonitor* t_loop = nullptr;
}  // namespace detail

inline PortMonitor* this_thread_loop() noexcept { return detail::t_loop; }

/// Makes the calling thread a loop of `setup` for its lifetime: claims one of the Setup's loops
/// (named `name`, cut to kSetupNameMax; a second live loop of the same name gets "-2", "-3", ...),
/// attaches the thread (stack, CPU clock) and makes it this_thread_loop(). Construct it on the
/// loop thread, after setup.start(); destroy it on the same thread. When refused (no loop left,
/// the Setup not started, the thread already a loop, attach failed) ok() is false, monitor()
/// is a monitor no watchdog watches (dispatches on it cost the same and report nothing) and the
/// refusal is counted in SetupStats::loops_refused.
class ScopedLoop {
 public:
  ScopedLoop(Setup& setup, const char* name) noexcept;
  ~ScopedLoop();
  ScopedLoop(const ScopedLoop&) = delete;
  ScopedLoop& operator=(const ScopedLoop&) = delete;

  bool ok() const noexcept { return loop_ != nullptr; }
  PortMonitor& monitor() noexcept { return loop_ != nullptr ? loop_->monitor : unwatched_; }
  /// The loop's name as reports print it ("" when refused).
  const char* name() const noexcept { return loop_ != nullptr ? loop_->name : ""; }

 private:
  Setup::Loop* loop_ = nullptr;
  PortMonitor unwatched_;
};

}  // namespace loopcanary::port_linux
