// SPDX-License-Identifier: MIT
// Cold tier of the Linux port: the Hal the watchdog calls, and the loop thread's identity.
//
//   LoopThread  attach() on the loop thread: its kernel thread id, its CPU-time clock and its
//               stack range. Pass its address as MonitorConfig::context.
//   Platform    init() installs the sample signal handler; hal() is the loopcanary::Hal:
//                 capture_stack      signal round trip to the loop thread (see below)
//                 read_cpu           the loop thread's CPU time (clock_gettime on its CPU-time
//                                    clock) and run-queue wait (/proc/self/task/<tid>/schedstat),
//                                    /proc/stat (machine, steal) and /proc/self/stat (process)
//                 debugger_attached  TracerPid of /proc/self/status, re-read at most every
//                                    debugger_check_ms
//                 read_memory        resident set and its peak, heap in use, the loop thread's
//                                    stack high-water mark and size
//                                    (loopcanary/port/linux/memory.hpp)
//                 read_wait          what an off-CPU loop thread waits on, a lock's holder and
//                                    the holder's stack (loopcanary/port/linux/wait.hpp)
//                 thread_id          the loop thread's kernel thread id
//
// Stack capture. The watchdog publishes a request in a preallocated slot, sends the sample
// signal to the loop thread with tgkill, and waits on a semaphore with a timeout. The handler
// (on the loop thread) claims the request with a compare-and-swap, records the interrupted
// program counter and walks the frame-pointer chain, bounded by the thread's stack range and
// by the interrupted stack pointer, so it only reads memory that is mapped. It uses only
// lock-free atomics, memory reads and the async-signal-safe calls syscall(SYS_gettid) and
// sem_post, and restores errno. A thread that blocks the signal or does not answer in time,
// but is parked in a system call, is sampled without the signal instead: the watchdog reads
// the thread's program counter and stack pointer from /proc/self/task/<tid>/syscall and the
// return addresses from its stack (process_vm_readv), and ends the stack with
// without_signal_frame(). Otherwise such a thread is a counted missed sample, as is one that
// is gone, and every attempt while the application has put its own action on the signal
// (nothing is sent then); the watchdog never waits longer than the timeout.
// Details and the exact rules: docs/porting-linux.md.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/hal.hpp"
#include "loopcanary/port/linux/memory.hpp"
#include "loopcanary/port/linux/proc.hpp"
#include "loopcanary/port/linux/status.hpp"

namespace loopcanary::port_linux {

namespace detail {
struct CaptureRequest;  // the port's signal round trip (internal)
}  // namespace detail

/// Set-up of a Platform. Zero-initialised fields (a value-initialised config) mean defaults.
struct PlatformConfig {
  /// Signal that interrupts the loop thread for a stack sample; 0 picks SIGRTMIN + 4. Must be
  /// a real-time signal (SIGRTMIN..SIGRTMAX): the C library and shells do not use them. The
  /// handler stays installed for the life of the process: a sample signal still pending in a
  /// thread that blocked it must never meet the default action, which ends the process.
  int sample_signal = 0;
  /// How long the watchdog waits for the loop thread to answer, microseconds; 0 picks 5000.
  /// 100..1'000'000; keep it well below the watchdog period.
  std::uint32_t sample_timeout_us = 0;
  /// Recover the frames that lack a frame pointer (libc, the vDSO, code built without frame
  /// pointers) between the interrupted instruction and the first frame-pointer frame, by
  /// scanning that stretch of stack for return addresses that follow a call instruction.
  bool no_stack_scan = false;
  /// Sleep on the answer at once instead of spinning on it first. By default the watchdog thread
  /// spins up to 20 us (never past sample_timeout_us) before it sleeps: a loop thread running on
  /// another CPU answers within a few microseconds, and a sleeping watchdog pays the scheduler's
  /// wake-up on top (docs/benchmarks.md, BM_StackSample). After two spins in a row without the
  /// answer (the loop thread was not running: more runnable threads than CPUs) it spins once in
  /// 16 samples until a spin is answered again. Set it where the watchdog shares its only CPU
  /// with the loops, or where its CPU time matters more than the round trip.
  bool no_sample_spin = false;
  /// Re-read TracerPid at most once per this many milliseconds; 0 picks 100.
  std::uint32_t debugger_check_ms = 0;
  /// Take over sample_signal even when another handler is installed for it.
  bool replace_existing_handler = false;
  /// Give kMemoryHeapUsed in read_memory, through mallinfo2(). Off by default: mallinfo2() waits
  /// for malloc's arena locks, so a loop thread blocked inside malloc (a block the watchdog must
  /// report) would stall the watchdog thread itself (loopcanary/port/linux/memory.hpp). Turn it
  /// on where the loops do not block inside the allocator, or where a stalled watchdog is
  /// acceptable.
  bool heap_reading = false;
};

/// Counters of a Platform. Any thread may read them.
struct PlatformStats {
  std::uint32_t samples_requested = 0;    ///< capture_stack calls
  std::uint32_t samples_answered = 0;     ///< the loop thread answered with a stack
  /// The signal could not be delivered (the thread blocks it, or no answer came in time) and the
  /// stack was read from where the thread is parked in a system call instead: not answers, not
  /// misses. Each such sample ends with without_signal_frame().
  std::uint32_t samples_without_signal = 0;
  std::uint32_t missed_not_attached = 0;  ///< no LoopThread, it is detached, or no init() yet
  std::uint32_t missed_gone = 0;          ///< the loop thread no longer exists
  /// The loop thread blocks the sample signal, and is not parked in a system call (it runs, or
  /// /proc/self/task/<tid>/syscall is unreadable) so no sample was taken without the signal.
  std::uint32_t missed_blocked = 0;
  std::uint32_t missed_timeout = 0;       ///< no answer within sample_timeout_us, and not parked either
  std::uint32_t missed_busy = 0;          ///< the capture slot was held (another capture, a late answer)
  std::uint32_t missed_signal_error = 0;  ///< tgkill failed otherwise (EAGAIN: signal queue full)
  /// The sample signal's action is not loopcanary's handler (the application installed its
  /// own, SIG_IGN or SIG_DFL after init()): no signal was sent.
  std::uint32_t missed_foreign_handler = 0;
  std::uint32_t cpu_time_failures = 0;    ///< the loop thread's CPU clock could not be read
  std::uint32_t counter_failures = 0;     ///< /proc/stat or /proc/self/stat unreadable or malformed
  std::uint32_t debugger_checks = 0;      ///< TracerPid reads
};

/// The frame that ends every stack sampled without the signal (PlatformStats::
/// samples_without_signal): the address of the function loopcanary::port_linux::
/// sampled_without_signal plus one, a return-address-style value, so reports symbolised as
/// usual name it as the outermost frame of such a sample. Any context.
Frame without_signal_frame() noexcept;
/// The function without_signal_frame() points into. Never called by loopcanary; do not call.
void sampled_without_signal() noexcept;

/// The identity of one loop thread. Give it storage that outlives the watchdog's use of it.
class LoopThread {
 public:
  LoopThread() noexcept = default;
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;

  /// Records the calling thread: kernel thread id, CPU-time clock, stack range. Call on the
  /// loop thread before its dispatches are watched. Errors: already_attached,
  /// thread_attr_failed, thread_stack_unknown, cpu_clock_failed (with errno).
  Result attach() noexcept;

  /// Forgets the thread: later samples count as missed (not attached). Call on the loop
  /// thread before it exits (its CPU time so far is then kept, so the report of a dispatch
  /// that ended just before still has its CPU readings), or on any thread once it has been
  /// joined.
  void detach() noexcept;

  /// Kernel thread id, 0 when detached.
  pid_t tid() const noexcept { return tid_.load(std::memory_order_acquire); }
  bool attached() const noexcept { return tid() != 0; }
  /// Stack range [low, high) recorded at attach.
  std::uintptr_t stack_low() const noexcept { return stack_low_.load(std::memory_order_relaxed); }
  std::uintptr_t stack_high() const noexcept { return stack_high_.load(std::memory_order_relaxed); }

 private:
  friend class Platform;

  std::atomic<pid_t> tid_{0};
  std::atomic<clockid_t> cpu_clock_{0};
  std::atomic<std::uintptr_t> stack_low_{0};
  std::atomic<std::uintptr_t> stack_high_{0};
  std::atomic<bool> signal_blocked_{false};  // watchdog side: last check found the signal blocked
  std::atomic<std::uint64_t> final_cpu_us_{0};  // CPU time at detach on the thread itself
  std::atomic<bool> has_final_cpu_{false};
};

/// Attaches the calling thread on construction and detaches it on destruction (both on the
/// loop thread). Check result().
class ScopedLoopThread {
 public:
  explicit ScopedLoopThread(LoopThread& thread) noexcept : thread_(thread), result_(thread.attach()) {}
  ~ScopedLoopThread() {
    if (result_.ok()) thread_.detach();
  }
  ScopedLoopThread(const ScopedLoopThread&) = delete;
  ScopedLoopThread& operator=(const ScopedLoopThread&) = delete;
  Result result() const noexcept { return result_; }

 private:
  LoopThread& thread_;
  Result result_;
};

/// The platform services behind the Hal. One per watchdog (several may share a signal).
class Platform {
 public:
  Platform() noexcept = default;
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  /// Validates `config` and installs the sample signal handler (process-wide, once per
  /// signal). Errors name the field or step: signal_out_of_range, signal_in_use,
  /// sample_timeout_out_of_range, sigaction_failed, semaphore_failed, already_initialised.
  Result init(const PlatformConfig& config = PlatformConfig{}) noexcept;

  /// The Hal bound to this platform (valid while it lives). MonitorConfig::context of every
  /// loop must point to its LoopThread. Usable before init(): capture then reports "missed".
  Hal hal() noexcept;

  // The services behind hal(), callable directly (tests, benchmarks). Watchdog context: one
  // call at a time per Platform.

  /// Up to `max` program counters of `thread`, innermost first; 0 when no sample was taken
  /// (counted in stats() by reason). The first is the interrupted instruction, the others are
  /// return addresses (symbolise them at address - 1).
  std::size_t capture_stack(LoopThread& thread, Frame* pcs, std::size_t max) noexcept;
  /// CPU time `thread` consumed so far, microseconds.
  bool thread_cpu_us(const LoopThread& thread, std::uint64_t& cpu_us) noexcept;
  /// Run-queue wait of `thread` so far (µs), from /proc/self/task/<tid>/schedstat; false when
  /// the thread is detached or the kernel lacks scheduler statistics.
  bool thread_wait_us(const LoopThread& thread, std::uint64_t& wait_us) noexcept;
  /// Sets kCpuBusy and kCpuTotal of the machine from /proc/stat and kCpuProcess from
  /// /proc/self/stat (all in USER_HZ ticks), and kCpuStealUs; false (nothing set) when either
  /// file cannot be read.
  bool cpu_counters(CpuReading& out) noexcept;
  /// True while a tracer is attached (TracerPid != 0), cached for debugger_check_ms. Any thread.
  bool debugger_attached() noexcept;
  /// Up to `max` program counters of thread `tid` of this process, one the port did not attach
  /// (a lock's holder), innermost first: parked in a system call, from the registers the kernel
  /// shows (sample_parked_thread, no signal); on a CPU, by the sample signal, whose handler copies
  /// the top of the thread's stack (4 KiB) for this call to scan as the parked walk does
  /// (docs/porting-linux.md, "Wait objects"). 0 when the thread is gone, blocks the sample signal
  /// (none is sent then), does not answer within the sample timeout, or the capture slot is
  /// busy. Not counted in stats(), which counts the loops' samples. Watchdog context.
  std::size_t sample_thread(pid_t tid, Frame* pcs, std::size_t max) noexcept;
  /// What `thread` waits on now into `out` (reset first), as Hal::read_wait gives it: the object
  /// (read_wait_object, loopcanary/port/linux/wait.hpp); when that names a holder, up to
  /// `max_frames` program counters of the holder's stack (sample_thread), kept only when the lock
  /// still names that holder after the sample (lock_still_held); and the chain of holders while
  /// each waits on a lock (read_wait_chain, at most kWaitChainMax hops) with `deadlock` when it
  /// comes back to a thread in it. `out.object` is none for a detached or running thread.
  void read_wait(const LoopThread& thread, WaitReading& out, std::size_t max_frames) noexcept;
  /// The reader behind read_memory (its read() and counters). Configured by init().
  MemoryReader& memory() noexcept { return memory_; }
  const MemoryReader& memory() const noexcept { return memory_; }

  PlatformStats stats() const noexcept;
  int sample_signal() const noexcept { return signal_; }
  std::uint32_t sample_timeout_us() const noexcept { return timeout_us_; }
  bool initialised() const noexcept { return initialised_; }

 private:
  // The sample of a thread the signal did not reach, from its parked system call: a stack that
  // ends with without_signal_frame(), counted in samples_without_signal; or 0, counted in `missed`.
  std::size_t capture_parked(const LoopThread& thread, Frame* pcs, std::size_t max,
                             std::atomic<std::uint32_t>& missed) noexcept;
  // sample_thread from `call`, thread `tid`'s system call as just read: parked, or on a CPU.
  std::size_t sample_thread(pid_t tid, const ThreadSyscall& call, Frame* pcs, std::size_t max) noexcept;
  // A signal capture of thread `tid` (`max` PCs) as init() configured it; no stack bounds.
  void signal_request(pid_t tid, std::size_t max, detail::CaptureRequest& request) const noexcept;
  static std::size_t hal_capture(void* context, const Monitor& loop, Frame* pcs, std::size_t max);
  static void hal_read_cpu(void* context, const Monitor& loop, CpuReading* out);
  static bool hal_debugger(void* context);
  static void hal_read_memory(void* context, const Monitor& loop, MemoryReading* out);
  static void hal_read_wait(void* context, const Monitor& loop, WaitReading* out, std::size_t max_frames);
  static std::uint32_t hal_thread_id(void* context, const Monitor& loop);

  bool initialised_ = false;
  int signal_ = 0;
  std::uint32_t timeout_us_ = 5'000;
  bool spin_ = true;  // PlatformConfig::no_sample_spin, inverted
  std::uint32_t debugger_check_ms_ = 100;
  std::uint64_t us_per_clock_tick_ = 10'000;  // /proc/stat unit (USER_HZ), from sysconf at init
  std::uint64_t cpus_ = 1;                    // online CPUs, from sysconf at init (steal per CPU)
  bool scan_ = true;
  MemoryReader memory_;

  // TracerPid cache: any thread may ask (the watchdog through the Hal, the application).
  std::atomic<bool> debugger_cached_{false};
  std::atomic<std::uint64_t> debugger_checked_at_ms_{0};  // 0: never checked

  std::atomic<std::uint32_t> samples_requested_{0};
  std::atomic<std::uint32_t> samples_answered_{0};
  std::atomic<std::uint32_t> samples_without_signal_{0};
  std::atomic<std::uint32_t> missed_not_attached_{0};
  std::atomic<std::uint32_t> missed_gone_{0};
  std::atomic<std::uint32_t> missed_blocked_{0};
  std::atomic<std::uint32_t> missed_timeout_{0};
  std::atomic<std::uint32_t> missed_busy_{0};
  std::atomic<std::uint32_t> missed_signal_error_{0};
  std::atomic<std::uint32_t> missed_foreign_handler_{0};
  std::atomic<std::uint32_t> cpu_time_failures_{0};
  std::atomic<std::uint32_t> counter_failures_{0};
  std::atomic<std::uint32_t> debugger_checks_{0};
};

}  // namespace loopcanary::port_linux
