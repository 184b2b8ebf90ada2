// SPDX-License-Identifier: MIT
// Outcome of the Linux port's set-up calls: which step or field failed, and the errno the
// system gave when one was involved.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loopcanary::port_linux {

enum class Error : std::uint8_t {
  none = 0,
  // PlatformConfig
  signal_out_of_range,          ///< sample_signal is neither 0 nor in SIGRTMIN..SIGRTMAX
  signal_in_use,                ///< another handler is installed for sample_signal
  sample_timeout_out_of_range,  ///< sample_timeout_us is outside 100..1'000'000
  sigaction_failed,             ///< installing the sample signal handler failed (errno)
  semaphore_failed,             ///< sem_init of the capture slot failed (errno)
  already_initialised,          ///< Platform::init called twice
  // LoopThread
  thread_attr_failed,           ///< pthread_getattr_np on the loop thread failed (errno)
  thread_stack_unknown,         ///< pthread_attr_getstack on the loop thread failed (errno)
  cpu_clock_failed,             ///< pthread_getcpuclockid on the loop thread failed (errno)
  already_attached,             ///< LoopThread::attach on an attached LoopThread
  // WatchdogThread, DrainThread
  period_out_of_range,          ///< WatchdogThreadConfig::period_us is outside 100..1'000'000
  priority_out_of_range,        ///< WatchdogThreadConfig::fifo_priority is outside 0..99
  already_running,              ///< WatchdogThread::start or DrainThread::start while it runs
  thread_create_failed,         ///< pthread_create (or the drain thread's sem_init) failed (errno)
  consume_null,                 ///< DrainThreadConfig::consume is null
};

/// An Error plus the errno of the failing call (0 when none was involved).
struct Result {
  Error error = Error::none;
  int sys_errno = 0;
  bool ok() const noexcept { return error == Error::none; }
};

/// One English sentence naming the field or step at fault. Never null.
const char* describe(Error error) noexcept;

/// The enumerator's name, e.g. "signal_in_use". Never null.
const char* name(Error error) noexcept;

/// "<describe(error)>: <strerror(sys_errno)>" into `buffer` (always NUL-terminated when
/// size > 0, truncated to fit). Returns `buffer`.
const char* format(Result result, char* buffer, std::size_t size) noexcept;

}  // namespace loopcanary::port_linux
