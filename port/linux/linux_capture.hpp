// SPDX-License-Identifier: MIT
// Internal to the Linux port (not installed): the signal round trip that samples a loop
// thread's stack, and the sample taken without the signal from a thread parked in a system
// call; the helpers the port's readers share (own memory, /proc paths). linux_capture.cpp holds
// the only code that runs in signal context.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "loopcanary/config.hpp"
#include "loopcanary/port/linux/status.hpp"

namespace loopcanary::port_linux::detail {

/// Reads `bytes` of this process's memory at `address` into `out` through the kernel
/// (process_vm_readv), which fails (EFAULT) on an unmapped address instead of faulting: for
/// memory another thread may change or unmap under the read (a parked thread's stack, a lock's
/// fields). Returns false unless every byte was read. Async-signal-safe.
bool read_own_memory(std::uintptr_t address, void* out, std::size_t bytes) noexcept;

/// Writes "<prefix><decimal><suffix>" into `out` (at least 64 bytes for the /proc paths the port
/// builds). Async-signal-safe.
void make_path(char* out, const char* prefix, std::uint64_t value, const char* suffix) noexcept;

/// Most program counters one capture can record.
inline constexpr std::size_t kMaxCapturePcs = 64;

/// Installs the sample handler for `signal` (once per signal; idempotent). Refuses a signal
/// that has another handler unless `replace`. Thread-safe.
Result install_sample_handler(int signal, bool replace) noexcept;

struct CaptureRequest {
  pid_t tid = 0;
  std::uintptr_t stack_low = 0;   // the thread's stack range
  std::uintptr_t stack_high = 0;
  std::size_t max = 0;            // program counters wanted, <= kMaxCapturePcs
  bool scan = true;               // recover frames without frame pointers
  int signal = 0;
  std::uint32_t timeout_us = 0;
  bool spin = true;               // spin on the answer a few microseconds before sleeping
  // > 0: the thread's stack range is not known (a thread the port did not attach, such as a
  // lock's holder). The handler then copies the top of its stack, at most kCopyBytes from the
  // interrupted stack pointer (up to the first unreadable page), and the requester looks for
  // return addresses in the copy as capture_parked does on a parked stack, following frame
  // records at most `copy_reach` bytes above the stack pointer. `stack_low`/`stack_high` unused.
  std::size_t copy_reach = 0;
};

/// Bytes of stack a capture with `copy_reach` copies in the handler (the parked scan's reach).
inline constexpr std::size_t kCopyBytes = 4096;

enum class CaptureOutcome : std::uint8_t {
  answered,      // `count` program counters written
  gone,          // tgkill: no such thread
  timeout,       // no answer in time (the thread may block the signal: the caller checks)
  busy,          // the slot is held by another capture or by a late handler still writing
  signal_error,  // tgkill (or the sigaction query) failed otherwise; `sys_errno` says why
  foreign_handler,  // the signal's action is not the sample handler (the application replaced
                    // it, or set SIG_IGN or SIG_DFL): nothing was sent
};

/// True while a sample handler runs on some thread (the signal is then blocked in that thread
/// because it is being handled, not because the thread refuses it). Any context.
bool handler_in_progress() noexcept;

/// One signal round trip. Watchdog side; thread-safe (concurrent callers get `busy`). Looks at
/// the signal's action first (one sigaction query) and sends nothing unless it is the sample
/// handler: another handler would take the signal for its own, SIG_DFL would end the process.
/// With `request.spin` it spins on the answer for at most 20 us before it sleeps on the
/// semaphore (after two spins in a row without the answer, once in 16 captures); it never
/// waits past `request.timeout_us`. With `request.copy_reach` the handler copies the top of the
/// stack instead of walking it, and the scan of the copy runs here, in the requester.
CaptureOutcome capture(const CaptureRequest& request, Frame* pcs, std::size_t& count, int& sys_errno) noexcept;

/// A sample of thread `request.tid` taken without the signal, from the registers the kernel
/// shows for a thread parked in a system call (/proc/self/task/<tid>/syscall): `pc`, then,
/// unless `request.scan` is false, the return addresses found on its stack from `sp` up: a scan
/// of at most 4 KiB for words that point just after a call instruction in a loaded module,
/// which follows the frame-pointer chain from each return address that has a plausible frame
/// record below it, and resumes above the last record the chain reached. The stack is read with process_vm_readv on this process, so an address
/// that is no longer mapped fails the read instead of faulting; a failed read leaves the PC
/// alone. `sp` outside [stack_low, stack_high) gives the PC alone. Heuristic: a stale return
/// address left on the stack may appear as a frame. Watchdog side; uses the capture slot, so
/// it returns `busy` while another capture (or a late handler) holds it, else `answered`.
CaptureOutcome capture_parked(const CaptureRequest& request, std::uintptr_t sp, std::uintptr_t pc, Frame* pcs,
                              std::size_t& count) noexcept;

}  // namespace loopcanary::port_linux::detail
