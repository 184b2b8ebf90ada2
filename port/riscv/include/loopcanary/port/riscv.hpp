// SPDX-License-Identifier: MIT
// Port "riscv": bare-metal RISC-V microcontrollers in machine mode (rv32imac and up: ESP32-C3,
// GD32VF103, CH32V, ...), the watchdog in the machine timer interrupt on the loop's own hart
// (build with LOOPCANARY_SINGLE_CORE=ON).
//
//   Clock        hot tier: the low 32 bits of the machine timer `mtime` (CLINT/ACLINT, memory
//                mapped): one load. Ticks are timer ticks; the rate is the board's timebase
//                (Config::timer_hz). mcycle (a CSR read) is cheaper by one instruction but
//                counts at a rate the core changes with its clock (and QEMU in host time):
//                docs/porting-riscv.md has both costs measured.
//   init()       programs mtimecmp for Config::poll_hz and enables the machine timer interrupt
//   attach()     the machine timer interrupt polls this watchdog: poll(Clock::now()) every tick
//   make_hal()   cold tier: the interrupted pc (mepc) and return address (ra), then the
//                frame-pointer chain from s0 (code built with -fno-omit-frame-pointer), each
//                frame bounded by the stack and each return address by the code range and the
//                call instruction before it. No stack evidence (Hal::capture_words): the chain
//                is walked here, and the host's unwinder reads Arm call-frame information only.
//                CPU load from idle_wait(). No debugger check: RISC-V's debug registers (dcsr) are readable
//                in debug mode only, so machine-mode code cannot tell a debugger is attached.
//   idle_wait()  the loop's sleep (wfi) that the CPU-load counters measure
//   drain()      the records' one consumer: records from the watchdog's RAM ring, encoded as
//                binary packets, to a PacketSink
//   finish()     a planned stop: the timer interrupt stops polling, the watchdog closes what it
//                watched
//
// The port owns the machine timer interrupt's entry, loopcanary_riscv_mtimer: the board's trap
// vector (vectored mode, entry 7) jumps to it. Board code (start-up, trap vector, memory map,
// console) lives in port/riscv/boards/<board>/. docs/porting-riscv.md has the details.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/hal.hpp"
#include "loopcanary/instrument.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/time.hpp"
#include "loopcanary/watchdog.hpp"

#if !defined(__riscv) || __riscv_xlen != 32
#error "port riscv: an rv32 target (-march=rv32...)"
#endif

/// Address of the machine timer's `mtime` (64-bit, little-endian) and of hart 0's `mtimecmp`.
/// The defaults are the CLINT layout of QEMU virt and SiFive parts (base 0x2000000); define both
/// for the whole build on a part whose timer lies elsewhere.
#ifndef LOOPCANARY_RISCV_MTIME
#define LOOPCANARY_RISCV_MTIME 0x0200BFF8u
#endif
#ifndef LOOPCANARY_RISCV_MTIMECMP
#define LOOPCANARY_RISCV_MTIMECMP 0x02004000u
#endif

namespace loopcanary::riscv {

/// The code and stack bounds the stack sample checks every frame against.
struct StackConfig {
  /// The firmware's code, [code_begin, code_end): its .text (the board's code_begin() and
  /// code_end()). A return address outside it ends the chain. code_begin < code_end.
  std::uintptr_t code_begin = 0;
  std::uintptr_t code_end = 0;
  /// One past the highest address of the stack the super-loop runs on (the board's stack_top());
  /// a loop with a LoopContext is bounded by its stack_high instead. Frame pointers must lie
  /// above the interrupted sp and at most here. > 0.
  std::uintptr_t stack_top = 0;
};

/// Board facts and choices, for init().
struct Config {
  /// Rate of mtime in Hz, from the board (loopcanary::board::kTimerHz): the tick rate of Clock
  /// and MonitorConfig::tick_hz. > 0.
  std::uint32_t timer_hz = 0;
  /// Timer interrupts per second: the watchdog polls this often. 1..timer_hz.
  std::uint32_t poll_hz = 1000;
  /// Clock value right after init() (mtime is written). Tests start just before the 2^32 wrap.
  tick_t start = 0;
  /// Bounds of the stack sample.
  StackConfig stack;
};

/// Outcome of init(). Every refusal names the Config field.
enum class PortStatus : std::uint8_t {
  ok = 0,
  timer_hz_zero,              ///< Config::timer_hz is 0
  poll_hz_zero,               ///< Config::poll_hz is 0
  poll_hz_above_timer_hz,     ///< Config::poll_hz > timer_hz: a timer period under one tick
  code_range_empty,           ///< Config::stack.code_begin is not below code_end
  stack_top_zero,             ///< Config::stack.stack_top is 0
};

/// One line naming the field at fault, e.g. "riscv::Config.poll_hz is 0; ...". Never null.
const char* describe(PortStatus status) noexcept;

/// Per-loop handle for MonitorConfig::context. Null (the default) is the bare-metal super-loop:
/// whatever code the timer interrupt preempts is the loop. A loop with its own stack (an RTOS
/// task) passes its stack range: a sample is taken only when the interrupted sp lies inside it.
struct LoopContext {
  std::uintptr_t stack_low = 0;   ///< lowest address of the loop's stack
  std::uintptr_t stack_high = 0;  ///< one past its highest address
};

/// Port counters. Any context.
struct PortStats {
  std::uint32_t ticks = 0;             ///< timer interrupts
  std::uint32_t polls = 0;             ///< watchdog polls (ticks with a watchdog attached)
  std::uint32_t captures = 0;          ///< stack samples taken
  std::uint32_t refused_stack = 0;     ///< samples refused: another stack than the loop's
  std::uint32_t chain_frames = 0;      ///< return addresses read from the frame-pointer chain, all samples
  std::uint32_t chain_stops = 0;       ///< chains ended by a bound (a frame outside the stack, a
                                       ///< return address outside the code or after no call)
  tick_t poll_ticks_max = 0;           ///< longest poll, ticks (the cost of the watchdog interrupt)
  std::uint64_t poll_ticks_total = 0;  ///< all polls, ticks
  std::uint32_t idle_waits = 0;        ///< idle_wait() calls
  std::uint32_t packets_refused = 0;   ///< records drain() or drain_health() popped but could not
                                       ///< send: their packet was larger than its buffer (lost)
};

/// Stops the timer interrupt, writes mtime = Config::start, programs mtimecmp one poll period
/// ahead and enables the machine timer interrupt (mie.MTIE, mstatus.MIE): the clock runs, no
/// watchdog polled yet. Machine mode, before any monitor stamps. Calling it again restarts the
/// clock and clears the counters. A refused Config leaves the port as it was.
PortStatus init(const Config& config) noexcept;

/// Ticks per second of Clock (Config::timer_hz); 0 before init(). Use it as MonitorConfig::tick_hz.
std::uint32_t tick_hz() noexcept;
/// Timer period in ticks (timer_hz / poll_hz).
tick_t poll_period() noexcept;

/// The timer interrupt polls `watchdog` (initialised, loops added) from the next tick on; null
/// stops polling. Any context.
void attach(Watchdog* watchdog) noexcept;

/// A planned stop: the timer interrupt stops polling the attached watchdog (as attach(nullptr)),
/// which then closes what it watched with Watchdog::finish() at Clock::now(). drain() afterwards
/// sends the final records. The clock keeps running. Loop context (not from the interrupt);
/// nothing when no watchdog is attached.
void finish() noexcept;

/// The cold tier, bound to the port's state. Pass to StaticWatchdog::init().
Hal make_hal() noexcept;

/// The loop's sleep: wfi with mstatus.MIE cleared around it (a pending interrupt wakes it
/// anyway), the time asleep counted as idle for the CPU-load counters. Returns after the waking
/// interrupt has run (unless the caller had cleared MIE itself). Loop context.
void idle_wait() noexcept;

/// idle_wait(), and the time asleep added to `loop`'s idle time (Monitor::add_idle). Loop
/// context, `loop`'s own, between its dispatches.
void idle_wait(Monitor& loop) noexcept;

/// The port counters.
PortStats stats() noexcept;

/// Pops every record waiting in `watchdog`'s ring, encodes each as one `block` packet into
/// `buffer` (`size` bytes) and hands it to `sink`, one call per packet, in ring order. A record
/// whose packet does not fit is popped, not sent, and counted in PortStats::packets_refused (a
/// buffer of kMaxPacketBytes never refuses one). A null `sink.write` or `buffer` pops nothing and
/// returns 0. The records' one consumer context. Returns the packets handed to `sink`.
std::uint32_t drain(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer, std::size_t size) noexcept;

/// drain() for the watchdog's health ring (health packets; kMaxHealthPacketBytes never refuses).
std::uint32_t drain_health(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer,
                           std::size_t size) noexcept;

// ---- Hot tier ---------------------------------------------------------------------------------

/// Hot-tier clock: the low word of mtime, free-running modulo 2^32, the same time base in the
/// loop and in the timer interrupt. Valid after init(). One load (two instructions with the
/// address).
struct Clock {
  static inline __attribute__((always_inline)) tick_t now() noexcept {
    return *reinterpret_cast<const volatile std::uint32_t*>(std::uintptr_t{LOOPCANARY_RISCV_MTIME});
  }
};

/// The monitor type firmware on this port declares.
using PortMonitor = ClockedMonitor<Clock>;

}  // namespace loopcanary::riscv

extern "C" {
/// Machine timer interrupt entry (assembly): saves the caller-saved registers, runs the port's
/// tick with the interrupted frame and s0, restores them and returns with mret. The board's trap
/// vector jumps to it for cause 7 (MTI).
void loopcanary_riscv_mtimer();
}
