// SPDX-License-Identifier: MIT
// Port "riscv", cold tier: machine timer set-up and interrupt, the stack sample (mepc, ra and
// the frame-pointer chain), idle accounting, the packet drain.
#include "loopcanary/port/riscv.hpp"

#include <cstring>

#include "loopcanary/packet.hpp"
#include "loopcanary/packet_drain.hpp"

namespace loopcanary::riscv {
namespace {

volatile std::uint32_t& reg(std::uintptr_t address) noexcept {
  return *reinterpret_cast<volatile std::uint32_t*>(address);
}

constexpr std::uintptr_t kMtimeLo = LOOPCANARY_RISCV_MTIME;
constexpr std::uintptr_t kMtimeHi = LOOPCANARY_RISCV_MTIME + 4u;
constexpr std::uintptr_t kMtimecmpLo = LOOPCANARY_RISCV_MTIMECMP;
constexpr std::uintptr_t kMtimecmpHi = LOOPCANARY_RISCV_MTIMECMP + 4u;
constexpr std::uint32_t kMieMtie = 1u << 7;     // mie: machine timer interrupt enable
constexpr std::uint32_t kMstatusMie = 1u << 3;  // mstatus: machine interrupts enabled

// The trap entry's frame (loopcanary_riscv_mtimer below), in words from the sp it passes: the
// caller-saved registers of the interrupted code. Its sp is the frame's address + kFrameBytes.
constexpr std::size_t kFrameRa = 0;
constexpr std::uintptr_t kFrameBytes = 64;

// The PortStats counters in PortState::count.
enum Counter : std::uint8_t {
  kTicks,
  kPolls,
  kCaptures,
  kRefusedStack,
  kChainFrames,
  kChainStops,
  kIdleWaits,
  kPacketsRefused,
  kCounters
};

// Everything but the clock, zero until init() succeeds. init() (timer interrupt off) clears it
// and sets the configuration; attach() sets watchdog. frame, pc and fp, the tick and poll
// counters and the 64-bit totals are written by the timer interrupt only; idle_ticks and
// idle_waits by idle_wait() only, with interrupts off (the interrupt, the only other reader,
// never sees half of them); packets_refused by drain() only.
struct PortState {
  std::atomic<Watchdog*> watchdog{nullptr};
  std::uint32_t timer_hz = 0;            // 0: not initialised (the Hal reports "unavailable")
  tick_t period = 0;                     // timer ticks between interrupts
  std::uint64_t compare = 0;             // mtimecmp programmed for the next interrupt
  const std::uint32_t* frame = nullptr;  // the interrupted registers, during a poll only
  std::uint32_t pc = 0;                  // the interrupted pc (mepc), during a poll only
  std::uint32_t fp = 0;                  // the interrupted s0, during a poll only
  StackConfig stack;                     // Config::stack
  tick_t last_now = 0;                   // clock at the last tick
  std::uint64_t total_ticks = 0;         // clock ticks from init() to last_now
  std::uint64_t idle_ticks = 0;          // ticks spent in idle_wait()
  std::uint64_t poll_ticks_total = 0;
  std::atomic<std::uint32_t> count[kCounters]{};  // PortStats counters, by Counter
  std::atomic<tick_t> poll_ticks_max{0};
};
PortState g_state;

// Single writer: load + store, no read-modify-write.
template <class T>
inline __attribute__((always_inline)) void bump(std::atomic<T>& word, T by = 1) noexcept {
  word.store(static_cast<T>(word.load(std::memory_order_relaxed) + by), std::memory_order_relaxed);
}

// The clock for the cold code: one out-of-line copy.
__attribute__((noinline)) tick_t clock_now() noexcept { return Clock::now(); }

// mtime as 64 bits: the high word read again until it did not change around the low word.
std::uint64_t mtime64() noexcept {
  for (;;) {
    const std::uint32_t hi = reg(kMtimeHi);
    const std::uint32_t lo = reg(kMtimeLo);
    if (reg(kMtimeHi) == hi) return (std::uint64_t{hi} << 32) | lo;
  }
}

// mtimecmp = `value`, never passing through a smaller value on the way (the high word first
// all ones, so no spurious interrupt between the two halves).
void set_compare(std::uint64_t value) noexcept {
  reg(kMtimecmpHi) = 0xFFFFFFFFu;
  reg(kMtimecmpLo) = static_cast<std::uint32_t>(value);
  reg(kMtimecmpHi) = static_cast<std::uint32_t>(value >> 32);
}

std::uint32_t read_mepc() noexcept {
  std::uint32_t pc;
  __asm__ volatile("csrr %0, mepc" : "=r"(pc));
  return pc;
}

// ---- The stack sample ------------------------------------------------------------------------

bool in_code(const StackConfig& c, std::uint32_t address) noexcept {
  return address - c.code_begin < c.code_end - c.code_begin;  // unsigned: below code_begin wraps high
}

std::uint32_t halfword_at(std::uintptr_t address) noexcept {
  return *reinterpret_cast<const volatile std::uint16_t*>(address);
}

// True when `ra` can be a return address: even, in the code, and right after a call that links
// ra: a 2-byte c.jalr/c.jal (RVC) or a 4-byte jal/jalr (rd = ra) ending at `ra`.
bool follows_call(const StackConfig& c, std::uint32_t ra) noexcept {
  if ((ra & 1u) != 0 || !in_code(c, ra) || ra - c.code_begin < 4u) return false;
  const std::uint32_t last = halfword_at(ra - 2u);
  if ((last & 0xF07Fu) == 0x9002u && (last & 0x0F80u) != 0) return true;  // c.jalr rs1
  if ((last & 0xE003u) == 0x2001u) return true;                           // c.jal (rv32)
  const std::uint32_t first = halfword_at(ra - 4u);
  if ((first & 3u) != 3u) return false;  // not the start of a 4-byte instruction
  const std::uint32_t instruction = first | (last << 16);
  return (instruction & 0xFFFu) == 0x0EFu ||   // jal ra, offset
         (instruction & 0x7FFFu) == 0x00E7u;   // jalr ra, offset(rs1)
}

// The target of the direct call that returns to `ra` (follows_call(ra) holds): jal, auipc ra
// + jalr ra (a `call` the linker did not relax) or c.jal; the 4-byte forms are tried first (the
// halfword before ra may be the upper half of one). False for an indirect call.
bool call_target(const StackConfig& c, std::uint32_t ra, std::uint32_t& target) noexcept {
  const std::uint32_t last = halfword_at(ra - 2u);
  const std::uint32_t first = halfword_at(ra - 4u);
  const std::uint32_t instruction = first | (last << 16);
  if ((first & 3u) == 3u && (instruction & 0xFFFu) == 0x0EFu) {  // jal ra: imm[20|10:1|11|19:12]
    std::uint32_t offset = (instruction >> 31) << 20 | ((instruction >> 21) & 0x3FFu) << 1 |
                           ((instruction >> 20) & 1u) << 11 | ((instruction >> 12) & 0xFFu) << 12;
    if ((offset & 0x100000u) != 0) offset |= 0xFFE00000u;
    target = ra - 4u + offset;
    return true;
  }
  if ((first & 3u) == 3u && (instruction & 0xFFFFFu) == 0x080E7u && ra - c.code_begin >= 8u) {  // jalr ra, imm(ra)
    const std::uint32_t upper = halfword_at(ra - 8u) | (halfword_at(ra - 6u) << 16);
    if ((upper & 0xFFFu) != 0x097u) return false;  // not after auipc ra
    const auto low = static_cast<std::uint32_t>(static_cast<std::int32_t>(instruction) >> 20);
    target = ra - 8u + (upper & 0xFFFFF000u) + low;
    return true;
  }
  if ((last & 0xE003u) == 0x2001u) {  // c.jal: offset[11|4|9:8|10|6|7|3:1|5] in bits 12..2
    std::uint32_t offset = ((last >> 12) & 1u) << 11 | ((last >> 11) & 1u) << 4 | ((last >> 9) & 3u) << 8 |
                           ((last >> 8) & 1u) << 10 | ((last >> 7) & 1u) << 6 | ((last >> 6) & 1u) << 7 |
                           ((last >> 3) & 7u) << 1 | ((last >> 2) & 1u) << 5;
    if ((offset & 0x800u) != 0) offset |= 0xFFFFF000u;
    target = ra - 2u + offset;
    return true;
  }
  return false;  // jalr or c.jalr through another register
}

// True when the interrupted ra is the caller of the interrupted function rather than a stale
// return address left by a call it made earlier: the call before ra went to a function that
// starts at or below the interrupted pc, and ra does not lie between the two (then pc and ra
// are in one function: the one ra returned to). Unknown for an indirect call: kept. A stale ra
// from a call to a function placed below, with pc before that call (a loop's head), passes:
// the interrupted function then shows twice in a row.
bool ra_is_callers(const StackConfig& c, std::uint32_t ra, std::uint32_t pc) noexcept {
  std::uint32_t target = 0;
  if (!call_target(c, ra, target)) return true;
  return target <= pc && !(target <= ra && ra <= pc);
}

// Appends the return addresses of the frame-pointer chain from `fp` to pcs[n..max): GCC's
// RISC-V frame with a frame pointer has s0 = the frame's top (the caller's sp); a function that
// calls others saves ra at s0 - 4 and the caller's s0 at s0 - 8; a leaf (GCC 12 saves no ra)
// saves the caller's s0 at s0 - 4. So the innermost frame either holds a return address at
// s0 - 4 (then the interrupted ra comes first when ra_is_callers() says it is not stale) or is
// a leaf whose caller is the interrupted ra. Every frame lies in (sp, top], above the one before; every return
// address follows a call in the code. The chain ends at s0 = 0 (start-up's) or at the first
// frame that breaks a bound (counted); when not even the innermost frame holds, the interrupted
// ra alone stands for the caller. Returns the new n.
std::size_t walk_chain(PortState& s, std::uintptr_t sp, std::uintptr_t top, Frame* pcs, std::size_t n,
                       std::size_t max) noexcept {
  const StackConfig& c = s.stack;
  std::uintptr_t fp = s.fp;
  std::uintptr_t floor = sp;
  bool innermost = true;
  std::uint32_t frames = 0;
  bool stopped = false;
  while (n < max && fp != 0) {
    if ((fp & 3u) != 0 || fp < floor + 8u || fp > top) {
      stopped = true;
      break;
    }
    const auto* record = reinterpret_cast<const volatile std::uint32_t*>(fp);
    const std::uint32_t saved = record[-1];
    if (saved == 0) break;  // the outermost frame: start-up entered it with ra = 0 and s0 = 0
    std::uintptr_t next;
    if (follows_call(c, saved)) {
      // The innermost frame holds its return address: s0 is the interrupted function's frame,
      // or (in a prologue or epilogue, or in code without frame pointers) its caller's, whose
      // caller is then the interrupted ra.
      const std::uint32_t ra = s.frame[kFrameRa];
      if (innermost && ra != saved && n + 1 < max && follows_call(c, ra) && ra_is_callers(c, ra, s.pc)) {
        pcs[n++] = ra;
      }
      pcs[n++] = saved;
      next = record[-2];
    } else if (innermost) {  // a leaf: its caller is the interrupted ra, s0 - 4 the caller's s0
      const std::uint32_t ra = s.frame[kFrameRa];
      if (!follows_call(c, ra)) {
        stopped = true;
        break;
      }
      pcs[n++] = ra;
      next = saved;
    } else {
      stopped = true;
      break;
    }
    ++frames;
    innermost = false;
    floor = fp;
    fp = next;
  }
  // No frame of the chain at all (s0 not a frame pointer: start-up, code built without them):
  // the interrupted ra is the one caller known.
  if (innermost && n < max && follows_call(c, s.frame[kFrameRa])) pcs[n++] = s.frame[kFrameRa];
  bump(s.count[kChainFrames], frames);
  if (stopped) bump(s.count[kChainStops]);
  return n;
}

// The top of the interrupted stack: the loop's own (LoopContext) or the configured one.
std::uintptr_t stack_top(const PortState& s, const Monitor& loop) noexcept {
  const auto* context = static_cast<const LoopContext*>(loop.context());
  return context != nullptr ? context->stack_high : s.stack.stack_top;
}

// ---- Hal callbacks (watchdog context: the machine timer interrupt) ----------------------------

std::size_t capture_stack(void* /*context*/, const Monitor& loop, Frame* pcs, std::size_t max) {
  PortState& s = g_state;
  if (s.frame == nullptr || max == 0) return 0;  // not called from the timer poll
  const auto* context = static_cast<const LoopContext*>(loop.context());
  const std::uintptr_t sp = reinterpret_cast<std::uintptr_t>(s.frame) + kFrameBytes;
  if (context != nullptr && (sp < context->stack_low || sp >= context->stack_high)) {
    bump(s.count[kRefusedStack]);  // another task's (or the main) stack
    return 0;
  }
  pcs[0] = s.pc;
  const std::size_t n = walk_chain(s, sp, stack_top(s, loop), pcs, 1, max);
  bump(s.count[kCaptures]);
  return n;
}

// CPU load from idle_wait(), as on Cortex-M: the time since init() is the total, everything that
// was not idle_wait() (interrupts included) is busy, and the firmware is the only "process".
// The super-loop's CPU time is that busy time, in µs; a loop with its own LoopContext gets none.
void read_cpu(void* /*context*/, const Monitor& loop, CpuReading* out) {
  const PortState& s = g_state;
  if (s.timer_hz == 0) return;
  const tick_t now = clock_now();
  const std::uint64_t total = s.total_ticks + ticks_between(s.last_now, now);
  const std::uint64_t busy = total > s.idle_ticks ? total - s.idle_ticks : 0;
  out->set(kCpuBusy, busy);
  out->set(kCpuTotal, total);
  out->set(kCpuProcess, busy);
  if (loop.context() == nullptr) out->set(kCpuThreadUs, us_from_ticks(busy, s.timer_hz));
}

}  // namespace

// ---- The machine timer interrupt ----------------------------------------------------------------

extern "C" {

// The port's tick, from loopcanary_riscv_mtimer with the saved registers and the interrupted
// s0. The interrupted context is published for capture_stack from entry to exit. Order: the
// next compare first, then the totals, then the poll.
[[gnu::used]] void loopcanary_riscv_tick(const std::uint32_t* frame, std::uint32_t fp) {
  PortState& s = g_state;
  s.frame = frame;
  s.pc = read_mepc();
  s.fp = fp;
  s.compare += s.period;
  const std::uint64_t now64 = mtime64();
  if (static_cast<std::int64_t>(s.compare - now64) <= 0) s.compare = now64 + s.period;  // late: skip ahead
  set_compare(s.compare);
  const tick_t now = clock_now();
  s.total_ticks += ticks_between(s.last_now, now);
  s.last_now = now;
  bump(s.count[kTicks]);
  Watchdog* watchdog = s.watchdog.load(std::memory_order_relaxed);
  if (watchdog != nullptr) {
    watchdog->poll(now);
    const tick_t spent = ticks_between(now, clock_now());
    s.poll_ticks_total += spent;
    if (spent > s.poll_ticks_max.load(std::memory_order_relaxed)) s.poll_ticks_max.store(spent, std::memory_order_relaxed);
    bump(s.count[kPolls]);
  }
  s.frame = nullptr;
}

}  // extern "C"

// The entry: the caller-saved registers (ra, t0-t6, a0-a7: 16 words, a multiple of the ABI's
// 16-byte stack alignment) below the interrupted sp, then the tick with a0 = that frame and
// a1 = the interrupted s0 (callee-saved: the tick keeps it), then back with mret.
__asm__(
    ".section .text.loopcanary_riscv_mtimer,\"ax\",@progbits\n"
    ".globl loopcanary_riscv_mtimer\n"
    ".type loopcanary_riscv_mtimer, @function\n"
    ".p2align 2\n"
    "loopcanary_riscv_mtimer:\n"
    "  addi sp, sp, -64\n"
    "  sw ra, 0(sp)\n  sw t0, 4(sp)\n  sw t1, 8(sp)\n  sw t2, 12(sp)\n"
    "  sw a0, 16(sp)\n  sw a1, 20(sp)\n  sw a2, 24(sp)\n  sw a3, 28(sp)\n"
    "  sw a4, 32(sp)\n  sw a5, 36(sp)\n  sw a6, 40(sp)\n  sw a7, 44(sp)\n"
    "  sw t3, 48(sp)\n  sw t4, 52(sp)\n  sw t5, 56(sp)\n  sw t6, 60(sp)\n"
    "  mv a0, sp\n"
    "  mv a1, s0\n"
    "  call loopcanary_riscv_tick\n"
    "  lw ra, 0(sp)\n  lw t0, 4(sp)\n  lw t1, 8(sp)\n  lw t2, 12(sp)\n"
    "  lw a0, 16(sp)\n  lw a1, 20(sp)\n  lw a2, 24(sp)\n  lw a3, 28(sp)\n"
    "  lw a4, 32(sp)\n  lw a5, 36(sp)\n  lw a6, 40(sp)\n  lw a7, 44(sp)\n"
    "  lw t3, 48(sp)\n  lw t4, 52(sp)\n  lw t5, 56(sp)\n  lw t6, 60(sp)\n"
    "  addi sp, sp, 64\n"
    "  mret\n"
    ".size loopcanary_riscv_mtimer, . - loopcanary_riscv_mtimer\n"
    ".text\n");

// ---- Public API ---------------------------------------------------------------------------------

const char* describe(PortStatus status) noexcept {
  switch (status) {
    case PortStatus::ok: return "ok";
    case PortStatus::timer_hz_zero: return "riscv::Config.timer_hz is 0; give the board's mtime rate in Hz";
    case PortStatus::poll_hz_zero: return "riscv::Config.poll_hz is 0; it must be > 0";
    case PortStatus::poll_hz_above_timer_hz: return "riscv::Config.poll_hz is above timer_hz";
    case PortStatus::code_range_empty: return "riscv::Config.stack.code_begin must lie below code_end";
    case PortStatus::stack_top_zero: return "riscv::Config.stack.stack_top is 0; give the loop stack's top";
  }
  return "unknown riscv::PortStatus";
}

PortStatus init(const Config& config) noexcept {
  if (config.timer_hz == 0) return PortStatus::timer_hz_zero;
  if (config.poll_hz == 0) return PortStatus::poll_hz_zero;
  const std::uint32_t period = config.timer_hz / config.poll_hz;
  if (period == 0) return PortStatus::poll_hz_above_timer_hz;
  const StackConfig& stack = config.stack;
  if (stack.code_begin >= stack.code_end) return PortStatus::code_range_empty;
  if (stack.stack_top == 0) return PortStatus::stack_top_zero;
  // Every refusal above leaves the port as it was.

  __asm__ volatile("csrc mie, %0" ::"r"(kMieMtie) : "memory");  // no timer interrupt meanwhile
  PortState& s = g_state;
  std::memset(static_cast<void*>(&s), 0, sizeof s);  // PortState{}: all of it zero
  // mtime = start: the low word cleared first, so the high word's write sees no carry.
  reg(kMtimeLo) = 0;
  reg(kMtimeHi) = 0;
  reg(kMtimeLo) = config.start;
  s.timer_hz = config.timer_hz;
  s.period = period;
  s.stack = stack;
  s.last_now = clock_now();
  s.compare = mtime64() + period;
  set_compare(s.compare);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  __asm__ volatile("csrs mie, %0\n csrs mstatus, %1" ::"r"(kMieMtie), "r"(kMstatusMie) : "memory");
  return PortStatus::ok;
}

std::uint32_t tick_hz() noexcept { return g_state.timer_hz; }
tick_t poll_period() noexcept { return g_state.period; }

void attach(Watchdog* watchdog) noexcept { g_state.watchdog.store(watchdog, std::memory_order_relaxed); }

void finish() noexcept {
  PortState& s = g_state;
  Watchdog* watchdog = s.watchdog.load(std::memory_order_relaxed);
  // Loop context: an interrupt that preempts us runs its poll to the end before we go on, so
  // after this store no poll is in flight or to come.
  s.watchdog.store(nullptr, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (watchdog != nullptr) watchdog->finish(clock_now());
}

Hal make_hal() noexcept {
  Hal hal;  // every field set below
  hal.context = nullptr;  // the callbacks keep their state in g_state
  hal.capture_stack = &capture_stack;
  hal.capture_words = nullptr;  // the chain is walked here; the host's unwinder reads Arm CFI only
  hal.read_cpu = kCpuReadings ? &read_cpu : nullptr;
  hal.debugger_attached = nullptr;  // dcsr is readable in debug mode only
  hal.read_memory = nullptr;
  hal.read_wait = nullptr;  // a device's loop does not wait on objects a port can name
  hal.thread_id = nullptr;
  return hal;
}

namespace {
// idle_wait(): the ticks it slept.
tick_t sleep_until_interrupt() noexcept {
  PortState& s = g_state;
  std::uint32_t mstatus;
  __asm__ volatile("csrrc %0, mstatus, %1" : "=r"(mstatus) : "r"(kMstatusMie) : "memory");
  const tick_t asleep = clock_now();
  __asm__ volatile("wfi" ::: "memory");  // wakes on a pending enabled interrupt even with MIE clear
  const tick_t slept = ticks_between(asleep, clock_now());
  s.idle_ticks += slept;
  bump(s.count[kIdleWaits]);
  __asm__ volatile("csrs mstatus, %0" ::"r"(mstatus & kMstatusMie) : "memory");  // the waking interrupt runs here
  return slept;
}
}  // namespace

void idle_wait() noexcept { static_cast<void>(sleep_until_interrupt()); }

void idle_wait(Monitor& loop) noexcept { loop.add_idle(sleep_until_interrupt()); }

PortStats stats() noexcept {
  const PortState& s = g_state;
  // poll_ticks_total is 64-bit, written by the timer interrupt: read again if a tick ran meanwhile.
  std::uint32_t ticks;
  std::uint64_t poll_ticks_total;
  do {
    ticks = s.count[kTicks].load(std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    poll_ticks_total = s.poll_ticks_total;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } while (s.count[kTicks].load(std::memory_order_relaxed) != ticks);
  const auto get = [&s](Counter c) { return s.count[c].load(std::memory_order_relaxed); };
  return PortStats{get(kTicks),       get(kPolls),
                   get(kCaptures),    get(kRefusedStack),
                   get(kChainFrames), get(kChainStops),
                   s.poll_ticks_max.load(std::memory_order_relaxed),
                   poll_ticks_total,  get(kIdleWaits),
                   get(kPacketsRefused)};
}

std::uint32_t drain(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer, std::size_t size) noexcept {
  return drain_packets(watchdog, sink, buffer, size, g_state.count[kPacketsRefused]);
}

std::uint32_t drain_health(Watchdog& watchdog, const PacketSink& sink, std::uint8_t* buffer,
                           std::size_t size) noexcept {
  return drain_health_packets(watchdog, sink, buffer, size, g_state.count[kPacketsRefused]);
}

}  // namespace loopcanary::riscv
