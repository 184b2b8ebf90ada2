// SPDX-License-Identifier: MIT
// Port "linux": clock selection and calibration, the Platform (Hal) and LoopThread, statuses.
#include "loopcanary/port/linux.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if LOOPCANARY_LINUX_HAS_TSC
#include <cpuid.h>
#endif

#include "linux_capture.hpp"
#include "loopcanary/monitor.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "loopcanary/port/linux/proc.hpp"
#include "loopcanary/port/linux/status.hpp"
#include "loopcanary/port/linux/wait.hpp"

namespace loopcanary::port_linux {

// ---- Clock ---------------------------------------------------------------------------------

namespace detail {
std::atomic<std::uint32_t> g_clock_word{0};
#if LOOPCANARY_LINUX_TICK_OFFSET_HOOK
std::atomic<std::uint32_t> g_tick_offset{0};
#endif
}  // namespace detail

namespace {

// Every reason of a build with the tick offset hook says so, so a log cannot be mistaken for
// one of a product build.
#if LOOPCANARY_LINUX_TICK_OFFSET_HOOK
#define LOOPCANARY_REASON(text) text " [test build: Clock::now() adds a tick offset]"
#else
#define LOOPCANARY_REASON(text) text
#endif

std::mutex g_clock_mutex;
ClockInfo g_clock_info;                 // written once, under g_clock_mutex, before g_clock_ready
std::atomic<bool> g_clock_ready{false};

// Calibration: the counter is read on both sides of a CLOCK_MONOTONIC read; the pair with the
// tightest bracket of a few tries pins the two clocks together. Two pairs 10 ms apart give the
// rate to about 10 ppm (a bracket of ~100 ns over 10 ms).
constexpr long kCalibrationNs = 10'000'000;
constexpr int kPairTries = 7;

struct ClockPair {
  std::uint64_t counter = 0;
  std::uint64_t ns = 0;
};

ClockPair read_pair() noexcept {
  ClockPair best;
  std::uint64_t best_width = ~std::uint64_t{0};
  for (int i = 0; i < kPairTries; ++i) {
    timespec ts{};
    const std::uint64_t t0 = detail::read_counter();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const std::uint64_t t1 = detail::read_counter();
    if (t1 - t0 < best_width) {
      best_width = t1 - t0;
      best.counter = t0 + (t1 - t0) / 2u;
      best.ns = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
    }
  }
  return best;
}

// The counter's rate in Hz as measured against CLOCK_MONOTONIC over ~10 ms; 0 when either did
// not advance. Judged by detail::counter_refusal().
std::uint64_t measure_counter_hz() noexcept {
  const ClockPair a = read_pair();
  timespec wait{0, kCalibrationNs};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, &wait) == EINTR) {
  }
  const ClockPair b = read_pair();
  if (b.ns <= a.ns || b.counter <= a.counter) return 0;
  const double hz = static_cast<double>(b.counter - a.counter) * 1e9 / static_cast<double>(b.ns - a.ns);
  if (hz >= 1e18) return std::uint64_t{1'000'000'000'000'000'000u};  // absurd, refused as out of range
  return static_cast<std::uint64_t>(hz + 0.5);
}

// CNTFRQ_EL0 (AArch64): the counter's rate as the firmware set it; 0 elsewhere. Bits 63:32 are
// reserved (zero).
std::uint64_t reported_counter_hz() noexcept {
#if LOOPCANARY_LINUX_HAS_CNTVCT
  std::uint64_t value = 0;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(value));
  return value & 0xFFFF'FFFFu;
#else
  return 0;
#endif
}

bool cpuid_invariant_tsc() noexcept {
#if LOOPCANARY_LINUX_HAS_TSC
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) return false;
  return (d & (1u << 8)) != 0;  // "TscInvariant"
#else
  return false;
#endif
}

// True when the "flags" line of /proc/cpuinfo lists `flag` (the kernel's view, which also
// covers hypervisors that hide the CPUID leaf).
bool cpuinfo_has_flag(const char* text, std::size_t length, const char* flag) noexcept {
  const std::size_t flag_length = std::strlen(flag);
  const char* end = text + length;
  const char* line = text;
  while (line < end) {
    const char* eol = static_cast<const char*>(std::memchr(line, '\n', static_cast<std::size_t>(end - line)));
    if (eol == nullptr) eol = end;
    if (static_cast<std::size_t>(eol - line) > 6 && std::strncmp(line, "flags", 5) == 0) {
      for (const char* p = line + 1; p + flag_length <= eol; ++p) {
        if ((p[-1] == ' ' || p[-1] == '\t') && std::strncmp(p, flag, flag_length) == 0 &&
            (p + flag_length == eol || p[flag_length] == ' ')) {
          return true;
        }
      }
      return false;  // the first CPU's flags speak for all
    }
    line = eol + 1;
  }
  return false;
}

bool invariant_tsc() noexcept {
  if (cpuid_invariant_tsc()) return true;
  static char cpuinfo[16384];  // under g_clock_mutex
  std::size_t length = 0;
  if (read_small_file("/proc/cpuinfo", cpuinfo, sizeof cpuinfo, length) != 0) return false;
  return cpuinfo_has_flag(cpuinfo, length, "constant_tsc") && cpuinfo_has_flag(cpuinfo, length, "nonstop_tsc");
}

// Why this CPU's counter cannot serve at all, before any measurement; nullptr when it can. The
// architecture requires CNTVCT_EL0 to run at a constant rate, so only the TSC has a condition.
const char* counter_unusable() noexcept {
  if (detail::kCounterKind == detail::CounterKind::tsc && !invariant_tsc()) {
    return LOOPCANARY_REASON("the TSC is not invariant (no constant_tsc + nonstop_tsc)");
  }
  return nullptr;
}

void read_kernel_clocksource(ClockInfo& info) noexcept {
  char buffer[sizeof info.kernel_clocksource];
  std::size_t length = 0;
  info.kernel_clocksource[0] = '\0';
  if (read_small_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", buffer, sizeof buffer,
                      length) != 0) {
    return;
  }
  while (length > 0 && (buffer[length - 1] == '\n' || buffer[length - 1] == ' ')) --length;
  std::memcpy(info.kernel_clocksource, buffer, length);
  info.kernel_clocksource[length] = '\0';
}

void set_monotonic(ClockInfo& info, const char* reason) noexcept {
  info.source = ClockSource::monotonic;
  info.name = "clock_monotonic";
  info.tick_hz = 1'000'000;
  info.counter_shift = 0;
  info.counter_hz = 0;
  info.reason = reason;
}

// Fills `info` for the counter at `counter_hz` (at least 1 MHz): the smallest shift that brings
// the tick rate below 2 MHz, so a tick is 0.5..1 us and 2^32 ticks span 36..72 minutes.
void set_counter(ClockInfo& info, std::uint64_t counter_hz, const char* reason) noexcept {
  const std::uint8_t shift = detail::counter_shift_for(counter_hz);
  info.source = ClockSource::counter;
  info.name = detail::kCounterKind == detail::CounterKind::cntvct ? "cntvct" : "tsc";
  info.counter_shift = shift;
  info.counter_hz = counter_hz;
  info.tick_hz = static_cast<std::uint32_t>((counter_hz + (std::uint64_t{1} << shift) / 2u) >> shift);
  info.reason = reason;
}

// What was asked for: select_clock's choice, and for `automatic` the environment's.
enum class Request : std::uint8_t { automatic, monotonic_call, monotonic_env, counter_call, counter_env, tsc_env, cntvct_env };

Request request_of(ClockChoice choice, const char* environment) noexcept {
  if (choice == ClockChoice::monotonic) return Request::monotonic_call;
  if (choice == ClockChoice::counter) return Request::counter_call;
  if (environment == nullptr) return Request::automatic;
  if (std::strcmp(environment, "monotonic") == 0) return Request::monotonic_env;
  if (std::strcmp(environment, "counter") == 0) return Request::counter_env;
  if (std::strcmp(environment, "tsc") == 0) return Request::tsc_env;
  if (std::strcmp(environment, "cntvct") == 0) return Request::cntvct_env;
  return Request::automatic;  // "auto", or a value the port does not know
}

// The reason the counter is in use, when its measurement passes.
const char* counter_reason(detail::CounterKind kind, Request request) noexcept {
  const bool tsc = kind == detail::CounterKind::tsc;
  switch (request) {
    case Request::counter_call:
      return tsc ? LOOPCANARY_REASON("selected by select_clock(counter) (invariant TSC)")
                 : LOOPCANARY_REASON("selected by select_clock(counter) (CNTVCT_EL0, CNTFRQ_EL0 checked against CLOCK_MONOTONIC)");
    case Request::counter_env:
      return tsc ? LOOPCANARY_REASON("LOOPCANARY_CLOCK=counter (invariant TSC)")
                 : LOOPCANARY_REASON("LOOPCANARY_CLOCK=counter (CNTVCT_EL0, CNTFRQ_EL0 checked against CLOCK_MONOTONIC)");
    case Request::tsc_env:
      return LOOPCANARY_REASON("LOOPCANARY_CLOCK=tsc (invariant TSC)");
    case Request::cntvct_env:
      return LOOPCANARY_REASON("LOOPCANARY_CLOCK=cntvct (CNTVCT_EL0, CNTFRQ_EL0 checked against CLOCK_MONOTONIC)");
    default:
      return tsc ? LOOPCANARY_REASON("invariant TSC, and the kernel uses it as its clocksource")
                 : LOOPCANARY_REASON(
                       "CNTVCT_EL0 at CNTFRQ_EL0 (checked against CLOCK_MONOTONIC), and the kernel uses the counter as its "
                       "clocksource (arch_sys_counter)");
  }
}

bool matches(ClockChoice choice, ClockSource source) noexcept {
  return choice == ClockChoice::automatic || (choice == ClockChoice::counter && source == ClockSource::counter) ||
         (choice == ClockChoice::monotonic && source == ClockSource::monotonic);
}

}  // namespace

detail::ClockPlan detail::plan_clock(ClockChoice choice, const char* environment, CounterKind kind,
                                     const char* counter_unusable, const char* kernel_clocksource) noexcept {
  const Request request = request_of(choice, environment);
  ClockPlan plan;
  plan.fail_if_refused = request == Request::counter_call;
  if (request == Request::monotonic_call) {
    plan.reason = LOOPCANARY_REASON("selected by select_clock(monotonic)");
  } else if (request == Request::monotonic_env) {
    plan.reason = LOOPCANARY_REASON("LOOPCANARY_CLOCK=monotonic");
  } else if (request == Request::tsc_env && kind != CounterKind::tsc) {
    plan.reason = LOOPCANARY_REASON("LOOPCANARY_CLOCK=tsc names x86-64's TSC, which this CPU does not have");
  } else if (request == Request::cntvct_env && kind != CounterKind::cntvct) {
    plan.reason = LOOPCANARY_REASON("LOOPCANARY_CLOCK=cntvct names AArch64's CNTVCT_EL0, which this CPU does not have");
  } else if (kind == CounterKind::none) {
    plan.reason = LOOPCANARY_REASON("no CPU counter on this architecture (the port reads the TSC and CNTVCT_EL0)");
  } else if (counter_unusable != nullptr) {
    plan.reason = counter_unusable;
  } else if (request == Request::automatic && kind == CounterKind::tsc && std::strcmp(kernel_clocksource, "tsc") != 0) {
    plan.reason =
        LOOPCANARY_REASON("the kernel's clocksource is not tsc, so the TSCs of all CPUs are not known to agree");
  } else if (request == Request::automatic && kind == CounterKind::cntvct &&
             std::strcmp(kernel_clocksource, "arch_sys_counter") != 0) {
    plan.reason = LOOPCANARY_REASON(
        "the kernel's clocksource is not arch_sys_counter, so the kernel does not vouch for CNTVCT_EL0");
  } else {
    plan.try_counter = true;
    plan.reason = counter_reason(kind, request);
  }
  return plan;
}

static_assert(detail::kCounterRateTolerancePercent == 2, "counter_refusal's sentence names the tolerance: 2 %");

const char* detail::counter_refusal(CounterKind kind, std::uint64_t measured_hz, std::uint64_t reported_hz) noexcept {
  constexpr std::uint64_t kMinHz = 1'000'000;
  switch (kind) {
    case CounterKind::tsc:
      if (measured_hz < 50'000'000u || measured_hz > 10'000'000'000u) {
        return LOOPCANARY_REASON("TSC calibration against CLOCK_MONOTONIC gave an implausible rate (outside 50 MHz..10 GHz)");
      }
      return nullptr;
    case CounterKind::cntvct: {
      if (reported_hz == 0) return LOOPCANARY_REASON("CNTFRQ_EL0 is 0: the firmware did not set the counter's rate");
      if (reported_hz < kMinHz) return LOOPCANARY_REASON("CNTFRQ_EL0 is under 1 MHz: a tick would be longer than 1 us");
      if (measured_hz == 0) return LOOPCANARY_REASON("CNTVCT_EL0 did not advance against CLOCK_MONOTONIC");
      if (measured_hz < kMinHz) return LOOPCANARY_REASON("CNTVCT_EL0 measured against CLOCK_MONOTONIC runs under 1 MHz");
      const std::uint64_t difference = measured_hz > reported_hz ? measured_hz - reported_hz : reported_hz - measured_hz;
      const std::uint64_t limit = reported_hz / 100u * kCounterRateTolerancePercent +
                                  reported_hz % 100u * kCounterRateTolerancePercent / 100u;
      if (difference > limit) {
        return LOOPCANARY_REASON("CNTVCT_EL0 measured against CLOCK_MONOTONIC disagrees with CNTFRQ_EL0 by more than 2 %");
      }
      return nullptr;
    }
    default:
      return LOOPCANARY_REASON("no CPU counter on this architecture (the port reads the TSC and CNTVCT_EL0)");
  }
}

bool select_clock(ClockChoice choice) noexcept {
  std::lock_guard<std::mutex> lock(g_clock_mutex);
  if (g_clock_ready.load(std::memory_order_acquire)) return matches(choice, g_clock_info.source);

  ClockInfo info;
  read_kernel_clocksource(info);
  info.counter_reported_hz = reported_counter_hz();
  const detail::ClockPlan plan = detail::plan_clock(choice, std::getenv("LOOPCANARY_CLOCK"), detail::kCounterKind,
                                                    counter_unusable(), info.kernel_clocksource);
  if (plan.try_counter) {
    info.counter_measured_hz = measure_counter_hz();
    const char* refusal = detail::counter_refusal(detail::kCounterKind, info.counter_measured_hz, info.counter_reported_hz);
    if (refusal != nullptr) {
      if (plan.fail_if_refused) return false;
      set_monotonic(info, refusal);
    } else {
      // The TSC's rate is its calibration; CNTVCT_EL0's is CNTFRQ_EL0, the rate the kernel's
      // own timekeeping uses, which the measurement only checks.
      const bool cntvct = detail::kCounterKind == detail::CounterKind::cntvct;
      set_counter(info, cntvct ? info.counter_reported_hz : info.counter_measured_hz, plan.reason);
    }
  } else {
    if (plan.fail_if_refused) return false;
    set_monotonic(info, plan.reason);
  }
  info.wrap_seconds = static_cast<std::uint32_t>((std::uint64_t{1} << 32) / info.tick_hz);
  info.tick_offset_hook = LOOPCANARY_LINUX_TICK_OFFSET_HOOK != 0;
  g_clock_info = info;
  g_clock_ready.store(true, std::memory_order_release);
  const std::uint32_t word = info.source == ClockSource::counter ? (detail::kClockCounter | info.counter_shift)
                                                                 : detail::kClockMonotonic;
  detail::g_clock_word.store(word, std::memory_order_release);
  return matches(choice, info.source);
}

const ClockInfo& clock_info() noexcept {
  if (!g_clock_ready.load(std::memory_order_acquire)) select_clock(ClockChoice::automatic);
  return g_clock_info;
}

tick_t detail::now_first_use() noexcept {
  select_clock(ClockChoice::automatic);
  return detail::source_now();
}

#if LOOPCANARY_LINUX_TICK_OFFSET_HOOK
void set_tick_offset(tick_t offset_ticks) noexcept {
  clock_info();  // select (and calibrate) first, so the offset applies to the clock in use
  detail::g_tick_offset.store(offset_ticks, std::memory_order_relaxed);
}

tick_t tick_offset() noexcept { return detail::g_tick_offset.load(std::memory_order_relaxed); }
#endif

// ---- Statuses ------------------------------------------------------------------------------

namespace {

struct ErrorText {
  const char* name;
  const char* description;
};

constexpr ErrorText kErrorText[] = {
    {"none", "ok"},
    {"signal_out_of_range", "PlatformConfig.sample_signal must be 0 (default) or a real-time signal, SIGRTMIN..SIGRTMAX"},
    {"signal_in_use", "PlatformConfig.sample_signal already has another handler; pick another signal or set replace_existing_handler"},
    {"sample_timeout_out_of_range", "PlatformConfig.sample_timeout_us must be 100..1000000 (0: default 5000)"},
    {"sigaction_failed", "installing the sample signal handler (sigaction) failed"},
    {"semaphore_failed", "initialising the capture slot's semaphore (sem_init) failed"},
    {"already_initialised", "Platform::init was already called on this platform"},
    {"thread_attr_failed", "LoopThread::attach: pthread_getattr_np on the calling thread failed"},
    {"thread_stack_unknown", "LoopThread::attach: pthread_attr_getstack on the calling thread failed"},
    {"cpu_clock_failed", "LoopThread::attach: pthread_getcpuclockid on the calling thread failed"},
    {"already_attached", "LoopThread::attach: this LoopThread is already attached to a thread"},
    {"period_out_of_range", "WatchdogThreadConfig.period_us must be 100..1000000"},
    {"priority_out_of_range", "WatchdogThreadConfig.fifo_priority must be 0 (normal) or 1..99 (SCHED_FIFO)"},
    {"already_running", "WatchdogThread::start or DrainThread::start: the thread is already running"},
    {"thread_create_failed", "WatchdogThread::start or DrainThread::start: creating the thread failed"},
    {"consume_null", "DrainThreadConfig.consume must not be null"},
};
static_assert(sizeof(kErrorText) / sizeof(kErrorText[0]) == static_cast<std::size_t>(Error::consume_null) + 1,
              "kErrorText must have one entry per Error");

const ErrorText& text_of(Error error) noexcept {
  static constexpr ErrorText kUnknown{"unknown_error", "unknown error value"};
  const auto i = static_cast<std::size_t>(error);
  return i < sizeof(kErrorText) / sizeof(kErrorText[0]) ? kErrorText[i] : kUnknown;
}

// strerror_r comes in a GNU flavour (returns the text) and an XSI one (fills the buffer).
[[maybe_unused]] const char* pick_text(int /*xsi_result*/, const char* buffer) noexcept { return buffer; }
[[maybe_unused]] const char* pick_text(const char* gnu_result, const char* /*buffer*/) noexcept { return gnu_result; }

void append(char* buffer, std::size_t size, std::size_t& used, const char* text) noexcept {
  for (; *text != '\0' && used + 1 < size; ++text) buffer[used++] = *text;
  buffer[used] = '\0';
}

}  // namespace

const char* describe(Error error) noexcept { return text_of(error).description; }
const char* name(Error error) noexcept { return text_of(error).name; }

const char* format(Result result, char* buffer, std::size_t size) noexcept {
  if (size == 0) return buffer;
  std::size_t used = 0;
  buffer[0] = '\0';
  append(buffer, size, used, describe(result.error));
  if (result.sys_errno != 0) {
    char text[128] = {};
    append(buffer, size, used, ": ");
    append(buffer, size, used, pick_text(strerror_r(result.sys_errno, text, sizeof text), text));
  }
  return buffer;
}

// ---- LoopThread ----------------------------------------------------------------------------

Result LoopThread::attach() noexcept {
  if (attached()) return Result{Error::already_attached, 0};
  pthread_attr_t attr;
  int e = pthread_getattr_np(pthread_self(), &attr);
  if (e != 0) return Result{Error::thread_attr_failed, e};
  void* stack = nullptr;
  std::size_t size = 0;
  e = pthread_attr_getstack(&attr, &stack, &size);
  pthread_attr_destroy(&attr);
  if (e != 0) return Result{Error::thread_stack_unknown, e};
  clockid_t clock = 0;
  e = pthread_getcpuclockid(pthread_self(), &clock);
  if (e != 0) return Result{Error::cpu_clock_failed, e};
  const auto low = reinterpret_cast<std::uintptr_t>(stack);
  stack_low_.store(low, std::memory_order_relaxed);
  stack_high_.store(low + size, std::memory_order_relaxed);
  cpu_clock_.store(clock, std::memory_order_relaxed);
  signal_blocked_.store(false, std::memory_order_relaxed);
  has_final_cpu_.store(false, std::memory_order_relaxed);
  tid_.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
  return Result{};
}

void LoopThread::detach() noexcept {
  timespec ts{};
  if (tid() == static_cast<pid_t>(syscall(SYS_gettid)) && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
    final_cpu_us_.store(static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1'000u,
                        std::memory_order_relaxed);
    has_final_cpu_.store(true, std::memory_order_relaxed);
  }
  tid_.store(0, std::memory_order_release);
}

// ---- Platform ------------------------------------------------------------------------------

namespace {

void bump(std::atomic<std::uint32_t>& counter) noexcept { counter.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

// The marker frame's function: never called, only its address is used. noinline and a body of
// its own keep it a distinct symbol (identical-code folding would merge an empty one).
__attribute__((noinline, used)) void sampled_without_signal() noexcept { asm volatile("" ::: "memory"); }

Frame without_signal_frame() noexcept {
  // + 1: a return address lies after its call, and symbolisers look return addresses up at
  // address - 1, which is then the function's first byte.
  return reinterpret_cast<Frame>(&sampled_without_signal) + 1u;
}

namespace {

std::uint64_t monotonic_ms() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000u;
}

}  // namespace

Result Platform::init(const PlatformConfig& config) noexcept {
  if (initialised_) return Result{Error::already_initialised, 0};
  const int signal = config.sample_signal != 0 ? config.sample_signal : SIGRTMIN + 4;
  if (signal < SIGRTMIN || signal > SIGRTMAX) return Result{Error::signal_out_of_range, 0};
  const std::uint32_t timeout = config.sample_timeout_us != 0 ? config.sample_timeout_us : 5'000u;
  if (timeout < 100u || timeout > 1'000'000u) return Result{Error::sample_timeout_out_of_range, 0};
  const Result installed = detail::install_sample_handler(signal, config.replace_existing_handler);
  if (!installed.ok()) return installed;
  signal_ = signal;
  timeout_us_ = timeout;
  debugger_check_ms_ = config.debugger_check_ms != 0 ? config.debugger_check_ms : 100u;
  const long clock_ticks = sysconf(_SC_CLK_TCK);
  us_per_clock_tick_ = clock_ticks > 0 ? 1'000'000u / static_cast<std::uint64_t>(clock_ticks) : 10'000u;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  cpus_ = cpus > 0 ? static_cast<std::uint64_t>(cpus) : 1u;
  scan_ = !config.no_stack_scan;
  spin_ = !config.no_sample_spin;
  memory_.set_heap_reading(config.heap_reading);
  initialised_ = true;
  return Result{};
}

Hal Platform::hal() noexcept {
  Hal h{};
  h.context = this;
  h.capture_stack = &Platform::hal_capture;
  h.read_cpu = &Platform::hal_read_cpu;
  h.debugger_attached = &Platform::hal_debugger;
  h.read_memory = &Platform::hal_read_memory;
  h.read_wait = &Platform::hal_read_wait;
  h.thread_id = &Platform::hal_thread_id;
  return h;
}

std::size_t Platform::capture_stack(LoopThread& thread, Frame* pcs, std::size_t max) noexcept {
  bump(samples_requested_);
  const pid_t tid = thread.tid();
  if (!initialised_ || tid == 0 || max == 0) {
    bump(missed_not_attached_);
    return 0;
  }
  // The thread refuses the signal when it blocks it and our last one is still pending.
  const std::uint64_t bit = std::uint64_t{1} << (signal_ - 1);
  std::uint64_t blocked = 0;
  std::uint64_t pending = 0;
  if (thread.signal_blocked_.load(std::memory_order_relaxed)) {
    // Sending again would only queue another signal behind the blocked one: look first.
    if (!read_thread_signals(tid, blocked, pending)) {
      bump(missed_gone_);
      return 0;
    }
    if ((blocked & pending & bit) != 0 && !detail::handler_in_progress()) {
      return capture_parked(thread, pcs, max, missed_blocked_);
    }
    thread.signal_blocked_.store(false, std::memory_order_relaxed);
  }

  detail::CaptureRequest request;
  signal_request(tid, max, request);
  request.stack_low = thread.stack_low();
  request.stack_high = thread.stack_high();
  std::size_t count = 0;
  int sys_errno = 0;
  switch (detail::capture(request, pcs, count, sys_errno)) {
    case detail::CaptureOutcome::answered:
      if (count > 0) bump(samples_answered_);
      return count;
    case detail::CaptureOutcome::gone: bump(missed_gone_); return 0;
    case detail::CaptureOutcome::busy: bump(missed_busy_); return 0;
    case detail::CaptureOutcome::signal_error: bump(missed_signal_error_); return 0;
    case detail::CaptureOutcome::foreign_handler: bump(missed_foreign_handler_); return 0;
    case detail::CaptureOutcome::timeout: break;
  }
  // No answer in time: find out why, for the counters and for the next attempt. While a
  // handler runs (late: the thread lost its CPU inside it) the signal is blocked because it is
  // being handled, and a new one may wait behind it: that is a timeout, not a refusal.
  if (!read_thread_signals(tid, blocked, pending)) {
    bump(missed_gone_);
    return 0;
  }
  if ((blocked & pending & bit) != 0 && !detail::handler_in_progress()) {
    thread.signal_blocked_.store(true, std::memory_order_relaxed);
    return capture_parked(thread, pcs, max, missed_blocked_);
  }
  return capture_parked(thread, pcs, max, missed_timeout_);
}

void Platform::signal_request(pid_t tid, std::size_t max, detail::CaptureRequest& request) const noexcept {
  request.tid = tid;
  request.max = max;
  request.scan = scan_;
  request.signal = signal_;
  request.timeout_us = timeout_us_;
  request.spin = spin_;
}

std::size_t Platform::capture_parked(const LoopThread& thread, Frame* pcs, std::size_t max,
                                     std::atomic<std::uint32_t>& missed) noexcept {
  ThreadSyscall where;
  std::size_t count = 0;
  if (max >= 2 && read_thread_syscall(thread.tid(), where) && where.state == ThreadSyscall::State::in_syscall) {
    detail::CaptureRequest request;
    request.tid = thread.tid();
    request.stack_low = thread.stack_low();
    request.stack_high = thread.stack_high();
    request.max = max - 1;  // the last entry is the marker
    request.scan = scan_;
    if (detail::capture_parked(request, static_cast<std::uintptr_t>(where.sp), static_cast<std::uintptr_t>(where.pc),
                               pcs, count) != detail::CaptureOutcome::answered) {
      count = 0;
    }
  }
  if (count == 0) {
    bump(missed);
    return 0;
  }
  pcs[count++] = without_signal_frame();
  bump(samples_without_signal_);
  return count;
}

bool Platform::thread_cpu_us(const LoopThread& thread, std::uint64_t& cpu_us) noexcept {
  if (!thread.attached()) {
    // Detached on its own thread: its CPU time stopped there.
    if (!thread.has_final_cpu_.load(std::memory_order_relaxed)) return false;
    cpu_us = thread.final_cpu_us_.load(std::memory_order_relaxed);
    return true;
  }
  timespec ts{};
  if (clock_gettime(thread.cpu_clock_.load(std::memory_order_relaxed), &ts) != 0) {
    bump(cpu_time_failures_);
    return false;
  }
  cpu_us = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1'000u;
  return true;
}

bool Platform::thread_wait_us(const LoopThread& thread, std::uint64_t& wait_us) noexcept {
  if (!thread.attached()) return false;
  SchedStat stat;
  if (!read_thread_schedstat(thread.tid(), stat)) return false;
  wait_us = stat.wait_ns / 1'000u;
  return true;
}

bool Platform::cpu_counters(CpuReading& out) noexcept {
  ProcStatCpu cpu;
  ProcPidStat self;
  if (!read_proc_stat(cpu) || !read_self_stat(self)) {
    bump(counter_failures_);
    return false;
  }
  out.set(kCpuBusy, cpu.busy());
  out.set(kCpuTotal, cpu.total());
  out.set(kCpuProcess, self.utime + self.stime);
  // /proc/stat's steal sums all CPUs; the loop thread runs on one of them at a time.
  out.set(kCpuStealUs, cpu.steal * us_per_clock_tick_ / cpus_);
  return true;
}

bool Platform::debugger_attached() noexcept {
  const std::uint64_t now = monotonic_ms() + 1;  // + 1: 0 means "never checked"
  const std::uint64_t checked = debugger_checked_at_ms_.load(std::memory_order_acquire);
  if (checked != 0 && now - checked < debugger_check_ms_) return debugger_cached_.load(std::memory_order_relaxed);
  std::uint64_t tracer = 0;
  bump(debugger_checks_);
  if (read_tracer_pid(tracer)) debugger_cached_.store(tracer != 0, std::memory_order_relaxed);
  debugger_checked_at_ms_.store(now, std::memory_order_release);
  return debugger_cached_.load(std::memory_order_relaxed);
}

PlatformStats Platform::stats() const noexcept {
  PlatformStats s;
  s.samples_requested = samples_requested_.load(std::memory_order_relaxed);
  s.samples_answered = samples_answered_.load(std::memory_order_relaxed);
  s.samples_without_signal = samples_without_signal_.load(std::memory_order_relaxed);
  s.missed_not_attached = missed_not_attached_.load(std::memory_order_relaxed);
  s.missed_gone = missed_gone_.load(std::memory_order_relaxed);
  s.missed_blocked = missed_blocked_.load(std::memory_order_relaxed);
  s.missed_timeout = missed_timeout_.load(std::memory_order_relaxed);
  s.missed_busy = missed_busy_.load(std::memory_order_relaxed);
  s.missed_signal_error = missed_signal_error_.load(std::memory_order_relaxed);
  s.missed_foreign_handler = missed_foreign_handler_.load(std::memory_order_relaxed);
  s.cpu_time_failures = cpu_time_failures_.load(std::memory_order_relaxed);
  s.counter_failures = counter_failures_.load(std::memory_order_relaxed);
  s.debugger_checks = debugger_checks_.load(std::memory_order_relaxed);
  return s;
}

std::size_t Platform::hal_capture(void* context, const Monitor& loop, Frame* pcs, std::size_t max) {
  auto* self = static_cast<Platform*>(context);
  auto* thread = static_cast<LoopThread*>(loop.context());
  if (thread == nullptr) {
    bump(self->samples_requested_);
    bump(self->missed_not_attached_);
    return 0;
  }
  return self->capture_stack(*thread, pcs, max);
}

void Platform::hal_read_cpu(void* context, const Monitor& loop, CpuReading* out) {
  auto* self = static_cast<Platform*>(context);
  if (const auto* thread = static_cast<const LoopThread*>(loop.context()); thread != nullptr) {
    std::uint64_t us = 0;
    if (self->thread_cpu_us(*thread, us)) out->set(kCpuThreadUs, us);
    if (self->thread_wait_us(*thread, us)) out->set(kCpuWaitUs, us);
  }
  self->cpu_counters(*out);
}

std::size_t Platform::sample_thread(pid_t tid, Frame* pcs, std::size_t max) noexcept {
  ThreadSyscall call;
  return max != 0 && read_thread_syscall(tid, call) ? sample_thread(tid, call, pcs, max) : 0;
}

std::size_t Platform::sample_thread(pid_t tid, const ThreadSyscall& call, Frame* pcs, std::size_t max) noexcept {
  if (!initialised_ || max == 0) return 0;
  if (call.state == ThreadSyscall::State::in_syscall) return sample_parked_thread(tid, call, pcs, max);
  // On a CPU: a thread that blocks the signal would leave it pending and the watchdog waiting.
  std::uint64_t blocked = 0;
  std::uint64_t pending = 0;
  if (!read_thread_signals(tid, blocked, pending) || (blocked & (std::uint64_t{1} << (signal_ - 1))) != 0) return 0;
  detail::CaptureRequest request;
  signal_request(tid, max, request);
  request.copy_reach = kParkedStackBytes;
  std::size_t count = 0;
  int sys_errno = 0;
  return detail::capture(request, pcs, count, sys_errno) == detail::CaptureOutcome::answered ? count : 0;
}

void Platform::read_wait(const LoopThread& thread, WaitReading& out, std::size_t max_frames) noexcept {
  out = WaitReading{};
  const pid_t tid = thread.tid();
  WaitLink links[1 + kWaitChainMax];  // the loop's wait, then each holder's while it waits on a lock
  bool cycle = false;
  const std::size_t n = tid != 0 ? read_wait_chain(tid, links, 1 + kWaitChainMax, cycle) : 0;
  if (n == 0) return;
  out.object = links[0].wait;
  // links[1] is the holder's wait, read right after the lock named it: absent when the holder is
  // gone, and its system call is where the holder's sample starts.
  if (out.object.owner == 0 || n < 2) return;
  const std::size_t frames = sample_thread(links[1].tid, links[1].call, out.holder_frames,
                                           max_frames < kMaxFrames ? max_frames : kMaxFrames);
  // A holder that let go of the lock meanwhile was sampled doing something else.
  out.holder_pc_count = static_cast<std::uint8_t>(frames > 0 && lock_still_held(out.object) ? frames : 0);
  for (std::size_t i = 1; i < n && links[i].wait.kind == WaitKind::mutex; ++i) {
    WaitHop& hop = out.chain[out.chain_count++];
    hop.address = links[i].wait.address;
    hop.owner = links[i].wait.owner;
    std::memcpy(hop.owner_name, links[i].wait.owner_name, sizeof hop.owner_name);
  }
  out.deadlock = cycle;
}

void Platform::hal_read_wait(void* context, const Monitor& loop, WaitReading* out, std::size_t max_frames) {
  if (const auto* thread = static_cast<const LoopThread*>(loop.context()); thread != nullptr) {
    static_cast<Platform*>(context)->read_wait(*thread, *out, max_frames);
  }
}

std::uint32_t Platform::hal_thread_id(void* /*context*/, const Monitor& loop) {
  const auto* thread = static_cast<const LoopThread*>(loop.context());
  return thread != nullptr ? static_cast<std::uint32_t>(thread->tid()) : 0u;
}

bool Platform::hal_debugger(void* context) { return static_cast<Platform*>(context)->debugger_attached(); }

void Platform::hal_read_memory(void* context, const Monitor& loop, MemoryReading* out) {
  static_cast<Platform*>(context)->memory_.read(static_cast<const LoopThread*>(loop.context()), *out);
}

}  // namespace loopcanary::port_linux
