// SPDX-License-Identifier: MIT
// Stack capture by signal. The only code of loopcanary that runs in signal context is
// sample_handler() and what it calls (answer, walk, scan helpers), marked SIGNAL CONTEXT
// below. It uses nothing but lock-free std::atomic operations, plain memory reads, and the
// async-signal-safe calls syscall(SYS_gettid) and sem_post; it saves and restores errno.
//
// The slot protocol. One process-wide slot, because a signal handler is process-wide.
// state = (generation << 3) | phase, phases:
//   idle -> setup        requester, CAS: it now owns the slot (others get "busy")
//   setup -> requested   requester, release: the request fields are published
//   requested -> writing handler, CAS: it owns the answer (a late or foreign handler fails)
//   writing -> done      handler, CAS, then sem_post: the answer is published
//   done -> idle         requester, after copying the answer
// Timeouts: requested -> idle (requester, CAS: no handler will answer this generation) or,
// when the handler already claimed it, writing -> abandoned; the handler then ends the slot
// with abandoned -> idle itself. So the requester never waits past its deadline, and nobody
// reuses the answer buffer while a handler writes into it. The requester spins on `done` for a
// few microseconds before it sleeps on the semaphore (an answer then costs it no wake-up), and
// stops spinning while its spins keep missing; a post it did not wait for is drained when it
// next owns the slot.
#include "linux_capture.hpp"

#include <link.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

#if defined(__clang__) || defined(__GNUC__)
// The walk reads other frames' stack slots (a sanitizer would flag redzones of their locals)
// and runs in a signal handler on the loop thread itself.
#define LOOPCANARY_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined"), noinline))
#else
#define LOOPCANARY_NO_SANITIZE
#endif

namespace loopcanary::port_linux::detail {

bool read_own_memory(std::uintptr_t address, void* out, std::size_t bytes) noexcept {
  iovec local{out, bytes};
  iovec remote{reinterpret_cast<void*>(address), bytes};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes);
}

namespace {

enum Phase : std::uint32_t {
  kIdle = 0,
  kSetup = 1,
  kRequested = 2,
  kWriting = 3,
  kDone = 4,
  kAbandoned = 5,
};
constexpr std::uint32_t kPhaseMask = 7u;

// Executable segments of the loaded modules, for the return-address scan. Written by the
// slot's owner in the setup phase only; read by the handler after it claimed a request, so
// the state word's release/acquire orders every access (no data race, no lock).
struct CodeRange {
  std::uintptr_t low;
  std::uintptr_t high;
  std::uint32_t module;
};
constexpr std::size_t kMaxCodeRanges = 128;

struct CodeMap {
  CodeRange ranges[kMaxCodeRanges];
  std::size_t count = 0;
  unsigned long long adds = 0;  // dl_iterate_phdr's load/unload counters at the last build
  unsigned long long subs = 0;
  bool built = false;
};

struct Slot {
  std::atomic<std::uint32_t> state{kIdle};
  std::atomic<pid_t> pid{0};
  std::atomic<pid_t> tid{0};
  std::atomic<std::uintptr_t> stack_low{0};
  std::atomic<std::uintptr_t> stack_high{0};
  std::atomic<std::uint32_t> max{0};
  std::atomic<bool> scan{false};
  std::atomic<std::uint32_t> count{0};
  std::atomic<std::uint32_t> entries{0};  // handler entries and exits, all threads
  std::atomic<std::uint32_t> exits{0};
  std::atomic<std::uintptr_t> pcs[kMaxCapturePcs] = {};
  // A capture with copy_reach: the handler copies the top of the stack here (through the
  // kernel, in the writing phase) and the requester scans it before it frees the slot.
  std::atomic<bool> copy{false};
  std::atomic<std::uintptr_t> copy_sp{0};
  std::atomic<std::uint32_t> copy_bytes{0};
  std::uintptr_t stack_copy[kCopyBytes / sizeof(std::uintptr_t)] = {};
  CodeMap code;
  sem_t done;
  // Requester side only (the slot's owner): consecutive spins that ended without the answer.
  std::uint32_t spins_missed = 0;
};

Slot g_slot;
std::mutex g_install_mutex;
bool g_semaphore_ready = false;        // under g_install_mutex

static_assert(std::atomic<std::uint32_t>::is_always_lock_free && std::atomic<std::uintptr_t>::is_always_lock_free &&
                  std::atomic<pid_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the signal handler may only use lock-free atomics");

constexpr std::uint32_t phase_of(std::uint32_t state) noexcept { return state & kPhaseMask; }
constexpr std::uint32_t with_phase(std::uint32_t state, Phase phase) noexcept {
  return (state & ~kPhaseMask) | phase;
}

// ---- Code map (watchdog side, setup phase) ------------------------------------------------

struct Counters {
  unsigned long long adds = 0;
  unsigned long long subs = 0;
};

int read_counters(dl_phdr_info* info, std::size_t size, void* data) {
  auto* counters = static_cast<Counters*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    counters->adds = info->dlpi_adds;
    counters->subs = info->dlpi_subs;
  }
  return 1;  // the counters are the same in every call: stop after the first module
}

struct Collect {
  CodeMap* map;
  std::uint32_t module;
};

int collect_ranges(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  auto* collect = static_cast<Collect*>(data);
  CodeMap& map = *collect->map;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && map.count < kMaxCodeRanges; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    const std::uintptr_t low = info->dlpi_addr + ph.p_vaddr;
    map.ranges[map.count++] = CodeRange{low, low + ph.p_memsz, collect->module};
  }
  ++collect->module;
  return 0;
}

void refresh_code_map(CodeMap& map) noexcept {
  Counters now;
  dl_iterate_phdr(&read_counters, &now);
  if (map.built && now.adds == map.adds && now.subs == map.subs) return;
  map.count = 0;
  Collect collect{&map, 0};
  dl_iterate_phdr(&collect_ranges, &collect);
  map.adds = now.adds;
  map.subs = now.subs;
  map.built = true;
}

// ---- SIGNAL CONTEXT -----------------------------------------------------------------------

LOOPCANARY_NO_SANITIZE std::uintptr_t load_word(std::uintptr_t address) noexcept {
  return *reinterpret_cast<const volatile std::uintptr_t*>(address);
}

#if defined(__x86_64__)
LOOPCANARY_NO_SANITIZE unsigned code_byte(std::uintptr_t address) noexcept {
  return *reinterpret_cast<const volatile unsigned char*>(address);
}
#elif defined(__aarch64__)
// AArch64 instructions are 4-byte words, aligned.
LOOPCANARY_NO_SANITIZE std::uint32_t code_word(std::uintptr_t address) noexcept {
  return *reinterpret_cast<const volatile std::uint32_t*>(address);
}

// The target of `insn` at `at` when it is BL imm26 (a direct call); 0 otherwise.
std::uintptr_t bl_target(std::uint32_t insn, std::uintptr_t at) noexcept {
  if ((insn & 0xFC000000u) != 0x94000000u) return 0;
  const std::int32_t words = static_cast<std::int32_t>(insn << 6) >> 6;  // imm26, sign-extended
  return at + static_cast<std::uintptr_t>(static_cast<std::intptr_t>(words) * 4);
}
#endif

// SIGNAL CONTEXT. The code range holding `address`, or nullptr.
const CodeRange* code_range_of(const CodeMap& map, std::uintptr_t address) noexcept {
  for (std::size_t i = 0; i < map.count; ++i) {
    if (address >= map.ranges[i].low && address < map.ranges[i].high) return &map.ranges[i];
  }
  return nullptr;
}

// SIGNAL CONTEXT. True when the bytes before `ret` (inside `range`) end with a call instruction:
// on x86-64 E8 rel32, or FF /2 with any ModRM/SIB/displacement form (optionally REX); on AArch64
// the word before `ret` (aligned) is BL, BLR, or a pointer-authenticating BLRAA, BLRAB, BLRAAZ,
// BLRABZ.
LOOPCANARY_NO_SANITIZE bool follows_call(const CodeRange& range, std::uintptr_t ret) noexcept {
#if defined(__aarch64__)
  if ((ret & 3u) != 0 || ret - range.low < 4) return false;
  const std::uint32_t insn = code_word(ret - 4);
  return (insn & 0xFC000000u) == 0x94000000u ||  // BL imm26
         (insn & 0xFFFFFC1Fu) == 0xD63F0000u ||  // BLR Xn
         (insn & 0xFFFFF81Fu) == 0xD63F081Fu ||  // BLRAAZ, BLRABZ Xn
         (insn & 0xFFFFF800u) == 0xD73F0800u;    // BLRAA, BLRAB Xn, Xm
#elif defined(__x86_64__)
  const std::uintptr_t room = ret - range.low;
  if (room >= 5 && code_byte(ret - 5) == 0xE8u) return true;
  for (std::uintptr_t length = 2; length <= 7 && length <= room; ++length) {
    if (code_byte(ret - length) != 0xFFu) continue;
    const unsigned modrm = code_byte(ret - length + 1);
    if (((modrm >> 3) & 7u) != 2u) continue;  // FF /2 is "call r/m64"
    const unsigned mod = modrm >> 6;
    const unsigned rm = modrm & 7u;
    std::uintptr_t expected = 2;
    if (mod != 3u && rm == 4u) {
      ++expected;  // SIB byte
      if (length >= 3 && mod == 0u && (code_byte(ret - length + 2) & 7u) == 5u) expected += 4;
    }
    if (mod == 0u && rm == 5u) expected += 4;  // RIP-relative
    if (mod == 1u) expected += 1;
    if (mod == 2u) expected += 4;
    if (expected == length) return true;
  }
  return false;
#else
  (void)range;
  (void)ret;
  return false;
#endif
}

// SIGNAL CONTEXT. True when `word` points just after a call instruction in a loaded module:
// the stack scan's test for a return address.
bool is_return_address(const CodeMap& map, std::uintptr_t word) noexcept {
  const CodeRange* range = code_range_of(map, word);
  return range != nullptr && follows_call(*range, word);
}

// SIGNAL CONTEXT. True when `ret` follows a direct call (x86-64: E8 rel32; AArch64: BL imm26)
// whose target starts the function that holds `pc`: the target lies at or before `pc`, within
// 64 KiB. This recognises the return address of a function interrupted before it set up its
// frame (at its entry, or in a shrink-wrapped path that never pushes one; on AArch64 a leaf that
// keeps it in the link register), which the frame-pointer chain skips.
LOOPCANARY_NO_SANITIZE bool direct_call_into(const CodeRange& range, std::uintptr_t ret, std::uintptr_t pc) noexcept {
#if defined(__aarch64__)
  if ((ret & 3u) != 0 || ret - range.low < 4) return false;
  const std::uintptr_t target = bl_target(code_word(ret - 4), ret - 4);
  return target != 0 && target <= pc && pc - target < 0x10000u;
#elif defined(__x86_64__)
  if (ret - range.low < 5 || code_byte(ret - 5) != 0xE8u) return false;
  const std::uint32_t rel = code_byte(ret - 4) | (code_byte(ret - 3) << 8) | (code_byte(ret - 2) << 16) |
                            (static_cast<std::uint32_t>(code_byte(ret - 1)) << 24);
  const std::uintptr_t target = ret + static_cast<std::uintptr_t>(static_cast<std::intptr_t>(static_cast<std::int32_t>(rel)));
  return target <= pc && pc - target < 0x10000u;
#else
  (void)range;
  (void)ret;
  (void)pc;
  return false;
#endif
}

// SIGNAL CONTEXT. A frame record at `fp` is usable when it lies in [lowest, high - 16] and is
// aligned: everything there is mapped (it is between the interrupted stack pointer and the
// top of the thread's stack).
bool frame_ok(std::uintptr_t fp, std::uintptr_t lowest, std::uintptr_t high) noexcept {
  return fp >= lowest && high >= 16 && fp <= high - 16 && (fp & (sizeof(std::uintptr_t) - 1)) == 0;
}

struct Registers {
  std::uintptr_t pc = 0;
  std::uintptr_t sp = 0;
  std::uintptr_t fp = 0;
  std::uintptr_t lr = 0;  // the link register (AArch64 x30); 0 where calls push the return address
};

bool registers_of(const ucontext_t* uc, Registers& r) noexcept {
#if defined(__x86_64__)
  r.pc = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  r.sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  r.fp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RBP]);
  return true;
#elif defined(__aarch64__)
  r.pc = static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
  r.sp = static_cast<std::uintptr_t>(uc->uc_mcontext.sp);
  r.fp = static_cast<std::uintptr_t>(uc->uc_mcontext.regs[29]);
  r.lr = static_cast<std::uintptr_t>(uc->uc_mcontext.regs[30]);
  return true;
#else
  (void)uc;
  (void)r;
  return false;
#endif
}

// SIGNAL CONTEXT. The return address of the interrupted function when it has no frame record
// of its own yet (at its entry, or on a shrink-wrapped path that never makes one), which the
// frame-pointer chain from `fp` (its caller's record) would skip; 0 when there is none to find.
// x86-64: the word at the stack pointer, or the word above it when the function has pushed the
// caller's frame pointer but not yet made its own (the word at the stack pointer equals fp); it
// must follow a direct call into the function holding the PC. AArch64: the link register, when
// it follows a direct call (BL) into the function holding the PC and that call's target is
// nearer below the PC than the target of the call before the record's return address (else the
// link register is a return address inside the interrupted function itself, left by a call it
// made, and the record is its own).
LOOPCANARY_NO_SANITIZE std::uintptr_t frameless_return(const CodeMap& map, const Registers& r, std::uintptr_t fp,
                                                       std::uintptr_t high) noexcept {
#if defined(__aarch64__)
  (void)high;
  const CodeRange* range = code_range_of(map, r.lr);
  if (range == nullptr || !direct_call_into(*range, r.lr, r.pc)) return 0;
  const std::uintptr_t record_ret = load_word(fp + sizeof(std::uintptr_t));
  if (record_ret == r.lr) return 0;  // the record is the function's own: the chain has it
  const std::uintptr_t into = bl_target(code_word(r.lr - 4), r.lr - 4);
  const CodeRange* record_range = code_range_of(map, record_ret);
  const std::uintptr_t record_into =
      record_range != nullptr && (record_ret & 3u) == 0 && record_ret - record_range->low >= 4
          ? bl_target(code_word(record_ret - 4), record_ret - 4)
          : 0;
  return record_into == 0 || record_into > r.pc || record_into < into ? r.lr : 0;
#else
  if (r.sp + 2 * sizeof(std::uintptr_t) > high) return 0;
  std::uintptr_t at = r.sp;
  if (load_word(at) == fp) at += sizeof(std::uintptr_t);
  const std::uintptr_t top = load_word(at);
  const CodeRange* range = code_range_of(map, top);
  return range != nullptr && at != fp + sizeof(std::uintptr_t) && direct_call_into(*range, top, r.pc) ? top : 0;
#endif
}

// SIGNAL CONTEXT. Longest stretch of stack the scan reads (a copied stack top is as long).
constexpr std::uintptr_t kScanBytes = kCopyBytes;

// SIGNAL CONTEXT. Copies the top of the interrupted stack, from `sp` up to kCopyBytes, into the
// slot through the kernel (process_vm_readv as a raw system call: an unmapped page fails the
// read instead of faulting). The copy is split at 4 KiB page boundaries, so it ends at the first
// unreadable page: the top of a stack whose bounds the port does not know. Returns the bytes
// copied.
std::uint32_t copy_stack_top(Slot& s, std::uintptr_t sp) noexcept {
  constexpr std::uintptr_t kPage = 4096;  // the smallest page size: each piece lies in one page
  const std::uintptr_t first = kPage - (sp & (kPage - 1));
  iovec local{s.stack_copy, sizeof s.stack_copy};
  iovec remote[2] = {{reinterpret_cast<void*>(sp), first < kScanBytes ? first : kScanBytes},
                     {reinterpret_cast<void*>(sp + first), first < kScanBytes ? kScanBytes - first : 0}};
  const long copied = syscall(SYS_process_vm_readv, static_cast<long>(s.pid.load(std::memory_order_relaxed)),
                              &local, 1L, remote, first < kScanBytes ? 2L : 1L, 0L);
  return copied > 0 ? static_cast<std::uint32_t>(copied) : 0u;
}

// SIGNAL CONTEXT. Appends to `s.pcs` (from index `n`, up to `max`) every word of the stack in
// [from, to) that is a return address, reading at most kScanBytes. Returns the new count.
LOOPCANARY_NO_SANITIZE std::size_t scan_for_returns(Slot& s, std::uintptr_t from, std::uintptr_t to, std::size_t n,
                                                    std::size_t max) noexcept {
  if (to > from && to - from > kScanBytes) to = from + kScanBytes;
  for (std::uintptr_t at = from; at + sizeof(std::uintptr_t) <= to && n < max; at += sizeof(std::uintptr_t)) {
    const std::uintptr_t word = load_word(at);
    if (is_return_address(s.code, word)) s.pcs[n++].store(word, std::memory_order_relaxed);
  }
  return n;
}

// SIGNAL CONTEXT. The code range holding `address`, or nullptr: `hint` when it holds it (one
// bounds check; a frame's range is most often its neighbour's), else code_range_of's search.
// The ranges do not overlap, so the answer is the same either way.
const CodeRange* code_range_near(const CodeMap& map, const CodeRange* hint, std::uintptr_t address) noexcept {
  if (hint != nullptr && address >= hint->low && address < hint->high) return hint;
  return code_range_of(map, address);
}

// SIGNAL CONTEXT. The interrupted PC, frames recovered by the scan, then the frame-pointer
// chain: each record is {saved frame pointer, return address}, and each must lie above the
// previous one, inside [interrupted sp, stack high).
//
// Code of another module than its caller may have been built without frame pointers (libc, the
// vDSO): such a function makes no record, and its caller's return address lies only on the
// stack, between the record below it and the record above it. So where the chain crosses from
// one module into another, that gap is scanned for return addresses (when `scan` is on).
LOOPCANARY_NO_SANITIZE std::size_t walk(const ucontext_t* uc, Slot& s) noexcept {
  const std::uintptr_t low = s.stack_low.load(std::memory_order_relaxed);
  const std::uintptr_t high = s.stack_high.load(std::memory_order_relaxed);
  std::size_t max = s.max.load(std::memory_order_relaxed);
  if (max > kMaxCapturePcs) max = kMaxCapturePcs;
  Registers r;
  if (max == 0 || !registers_of(uc, r)) return 0;

  std::size_t n = 0;
  s.pcs[n++].store(r.pc, std::memory_order_relaxed);
  if (s.copy.load(std::memory_order_relaxed)) {  // the stack's bounds are not known: the requester scans
    s.copy_sp.store(r.sp, std::memory_order_relaxed);
    s.copy_bytes.store(copy_stack_top(s, r.sp), std::memory_order_relaxed);
    return n;
  }
  if (r.sp < low || r.sp >= high) return n;  // not on the thread's stack (sigaltstack): PC only

  const bool scan = s.scan.load(std::memory_order_relaxed);
  std::uintptr_t fp = r.fp;
  bool chain = frame_ok(fp, r.sp, high);
  const CodeRange* last_range = nullptr;  // the range of the frame looked up last: the next one's hint
  if (scan) {
    // The innermost code may lack a frame pointer (libc, the vDSO): then the first record of
    // the chain belongs to an outer module, and the frames in between are only on the stack.
    const CodeRange* pc_range = code_range_of(s.code, r.pc);
    last_range = pc_range;
    const CodeRange* ret_range = chain ? code_range_of(s.code, load_word(fp + sizeof(std::uintptr_t))) : nullptr;
    const bool skipped = !chain || pc_range == nullptr || ret_range == nullptr || pc_range->module != ret_range->module;
    if (skipped) {
      n = scan_for_returns(s, r.sp, chain ? fp : high, n, max);
    } else if (n < max) {
      // Same module: the interrupted function may not have set up its frame yet (or ever, on a
      // shrink-wrapped path): its return address, which the chain would skip.
      const std::uintptr_t ret = frameless_return(s.code, r, fp, high);
      if (ret != 0) s.pcs[n++].store(ret, std::memory_order_relaxed);
    }
  }
  while (chain && n < max) {
    const std::uintptr_t next = load_word(fp);
    const std::uintptr_t ret = load_word(fp + sizeof(std::uintptr_t));
    if (ret == 0) break;  // the outermost frame
    const std::uintptr_t owner = s.pcs[n - 1].load(std::memory_order_relaxed);  // the record's function
    s.pcs[n++].store(ret, std::memory_order_relaxed);
    if (next <= fp) break;
    const std::uintptr_t lowest = fp + 2 * sizeof(std::uintptr_t);
    chain = frame_ok(next, lowest, high);
    if (scan && chain) {
      // Each frame's range is looked up once: the record's owner is most often the return
      // address of the record before, whose range is last_range.
      const CodeRange* owner_range = code_range_near(s.code, last_range, owner);
      last_range = code_range_near(s.code, owner_range, ret);
      if (owner_range != nullptr && last_range != nullptr && owner_range->module != last_range->module) {
        n = scan_for_returns(s, lowest, next, n, max);  // the record crosses into another module
      }
    }
    fp = next;
  }
  return n;
}

// SIGNAL CONTEXT. Answers the pending request when it is addressed to this thread.
void answer(const siginfo_t* info, const ucontext_t* uc) noexcept {
  Slot& s = g_slot;
  std::uint32_t state = s.state.load(std::memory_order_acquire);
  if (phase_of(state) != kRequested || info == nullptr || uc == nullptr) return;
  // Only a tgkill from this process is a request (not a kill from a shell).
  if (info->si_code != SI_TKILL || info->si_pid != s.pid.load(std::memory_order_relaxed)) return;
  if (static_cast<pid_t>(syscall(SYS_gettid)) != s.tid.load(std::memory_order_relaxed)) return;
  if (!s.state.compare_exchange_strong(state, with_phase(state, kWriting), std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
    return;  // the requester gave up, or another generation began
  }
  s.count.store(static_cast<std::uint32_t>(walk(uc, s)), std::memory_order_relaxed);
  std::uint32_t writing = with_phase(state, kWriting);
  if (s.state.compare_exchange_strong(writing, with_phase(state, kDone), std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
    sem_post(&s.done);  // async-signal-safe (POSIX)
  } else {
    s.state.store(with_phase(state, kIdle), std::memory_order_release);  // abandoned: free the slot
  }
}

// SIGNAL CONTEXT. The installed handler.
void sample_handler(int /*signal*/, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  g_slot.entries.fetch_add(1, std::memory_order_relaxed);
  answer(info, static_cast<const ucontext_t*>(context));
  g_slot.exits.fetch_add(1, std::memory_order_release);
  errno = saved_errno;
}

// ---- Watchdog side ------------------------------------------------------------------------

timespec deadline_after(std::uint32_t us) noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  const long add_ns = static_cast<long>(us % 1'000'000u) * 1000L;
  t.tv_sec += static_cast<time_t>(us / 1'000'000u);
  t.tv_nsec += add_ns;
  if (t.tv_nsec >= 1'000'000'000L) {
    t.tv_nsec -= 1'000'000'000L;
    ++t.tv_sec;
  }
  return t;
}

std::int64_t ns_of(const timespec& t) noexcept {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + static_cast<std::int64_t>(t.tv_nsec);
}

// How long a requester spins on the answer before it sleeps on the semaphore, nanoseconds. A
// handler on another CPU answers within a few microseconds of the signal (the walk of a
// 32-frame stack takes about 1 us), and a requester asleep pays the scheduler's wake-up on top
// (10-20 us on a VM): bench/linux_bench.cpp, BM_StackSample. A thread that is not running
// answers later, and then the spin is lost time, bounded by this.
constexpr std::int64_t kAnswerSpinNs = 20'000;

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ volatile("yield");
#endif
}

// Whether to spin, after `missed` spins in a row that ended without the answer: a loop thread
// that is not running when sampled (more runnable threads than CPUs) answers only after the
// scheduler runs it, and a requester that spins then only burns its CPU share, which the
// scheduler charges against its next wake-up. After two misses it spins once in 16 captures
// (`missed` counts the captures that did not spin too), to find out when spinning pays again.
bool should_spin(std::uint32_t missed) noexcept { return missed < 2u || missed % 16u == 0u; }

// Waits for `done` in the slot's state, spinning, for at most kAnswerSpinNs and never past
// `deadline`. True when the answer came.
bool spin_for_answer(const Slot& s, std::uint32_t done, const timespec& deadline) noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  std::int64_t until = ns_of(t) + kAnswerSpinNs;
  if (ns_of(deadline) < until) until = ns_of(deadline);
  for (;;) {
    for (int i = 0; i < 32; ++i) {  // the clock read (vDSO, tens of ns) every 32 looks
      if (s.state.load(std::memory_order_acquire) == done) return true;
      cpu_relax();
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (ns_of(t) >= until) return false;
  }
}

// True when `action` runs sample_handler.
bool is_sample_handler(const struct sigaction& action) noexcept {
  return (action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction == &sample_handler;
}

// The return addresses among the `count` words of a stack from `sp` (see capture_parked):
// `words` holds them, read once; frame records above them are read from the stack itself, at
// most up to `high`. Writes at most `max` entries into `pcs` from index `n`; returns the new count.
std::size_t scan_words(const CodeMap& map, std::uintptr_t sp, std::uintptr_t high, const std::uintptr_t* words,
                       std::size_t count, Frame* pcs, std::size_t n, std::size_t max) noexcept {
  constexpr std::size_t kWord = sizeof(std::uintptr_t);
  if (high - sp < 2 * kWord || (sp & (kWord - 1)) != 0) return n;
  // Each word that points just after a call is a frame. One with a plausible frame record just
  // below it {saved fp above it, return address} starts a frame-pointer chain: each record
  // above the previous one, inside the stack, and each return address after a call. Where the
  // chain ends (code without frame pointers, or not a record after all) the scan resumes above
  // the last record it reached.
  std::size_t i = 0;
  while (i < count && n < max) {
    if (!is_return_address(map, words[i])) {
      ++i;
      continue;
    }
    pcs[n++] = words[i];
    std::size_t resume = i + 1;
    std::uintptr_t record = i > 0 ? sp + (i - 1) * kWord : 0;  // the word below the return address
    if (record != 0 && words[i - 1] > record + kWord && words[i - 1] <= high - 2 * kWord &&
        (words[i - 1] & (kWord - 1)) == 0) {
      while (n < max) {
        std::uintptr_t pair[2];
        if (!read_own_memory(record, pair, sizeof pair)) break;
        const std::uintptr_t next = pair[0];
        if (next <= record + kWord || next > high - 2 * kWord || (next & (kWord - 1)) != 0) break;
        if (!read_own_memory(next, pair, sizeof pair) || !is_return_address(map, pair[1])) break;
        pcs[n++] = pair[1];
        record = next;
      }
      const std::size_t above = static_cast<std::size_t>(record + 2 * kWord - sp) / kWord;
      if (above > resume) resume = above;
    }
    i = resume;
  }
  return n;
}

// The return addresses on the stack of a parked thread, from `sp` (see capture_parked), read
// here in one piece. Writes at most `max` entries into `pcs` from index `n`; returns the new count.
std::size_t scan_parked(const CodeMap& map, const CaptureRequest& request, std::uintptr_t sp, Frame* pcs,
                        std::size_t n, std::size_t max) noexcept {
  constexpr std::size_t kWord = sizeof(std::uintptr_t);
  const std::uintptr_t high = request.stack_high;
  if (sp < request.stack_low || sp >= high) return n;
  std::uintptr_t words[kScanBytes / kWord];
  const std::size_t count = static_cast<std::size_t>(high - sp < kScanBytes ? high - sp : kScanBytes) / kWord;
  if (!read_own_memory(sp, words, count * kWord)) return n;
  return scan_words(map, sp, high, words, count, pcs, n, max);
}

// The answer of generation `done_state`, then the slot freed. A capture with copy_reach scans the
// copied stack first, while it still owns the slot (and with it the copy and the code map).
std::size_t copy_answer(Slot& s, std::uint32_t done_state, const CaptureRequest& request, Frame* pcs) noexcept {
  const std::size_t max = request.max < kMaxCapturePcs ? request.max : kMaxCapturePcs;
  std::size_t n = s.count.load(std::memory_order_relaxed);
  if (n > max) n = max;
  for (std::size_t i = 0; i < n; ++i) pcs[i] = s.pcs[i].load(std::memory_order_relaxed);
  if (request.copy_reach != 0 && request.scan && s.code.built && n > 0) {
    const std::uintptr_t sp = s.copy_sp.load(std::memory_order_relaxed);
    const std::size_t words = s.copy_bytes.load(std::memory_order_relaxed) / sizeof(std::uintptr_t);
    n = scan_words(s.code, sp, sp + request.copy_reach, s.stack_copy, words, pcs, n, max);
  }
  s.state.store(with_phase(done_state, kIdle), std::memory_order_release);
  return n;
}

}  // namespace

bool handler_in_progress() noexcept {
  const std::uint32_t exits = g_slot.exits.load(std::memory_order_acquire);
  return g_slot.entries.load(std::memory_order_relaxed) != exits;
}

Result install_sample_handler(int signal, bool replace) noexcept {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if (!g_semaphore_ready) {
    if (sem_init(&g_slot.done, 0, 0) != 0) return Result{Error::semaphore_failed, errno};
    g_semaphore_ready = true;
  }
  if (signal < 1 || signal > 64) return Result{Error::signal_out_of_range, 0};

  // Installed once per signal; but the application may have replaced it since, so look.
  struct sigaction previous {};
  if (sigaction(signal, nullptr, &previous) != 0) return Result{Error::sigaction_failed, errno};
  if (is_sample_handler(previous)) return Result{};
  const bool has_handler = (previous.sa_flags & SA_SIGINFO) != 0
                               ? previous.sa_sigaction != nullptr
                               : (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN);
  if (has_handler && !replace) return Result{Error::signal_in_use, 0};

  struct sigaction action {};
  action.sa_sigaction = &sample_handler;
  // SA_RESTART: system calls the loop thread was in resume after the sample where the kernel
  // allows it (not nanosleep, poll, epoll_wait...: docs/porting-linux.md).
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal, &action, nullptr) != 0) return Result{Error::sigaction_failed, errno};
  return Result{};
}

CaptureOutcome capture(const CaptureRequest& request, Frame* pcs, std::size_t& count, int& sys_errno) noexcept {
  count = 0;
  sys_errno = 0;
  // The application may have installed its own action for the signal since (sigaction after
  // Platform::init): then the signal is not ours to send. A change between this query and the
  // tgkill below is not seen (docs/porting-linux.md).
  struct sigaction action {};
  if (sigaction(request.signal, nullptr, &action) != 0) {
    sys_errno = errno;
    return CaptureOutcome::signal_error;
  }
  if (!is_sample_handler(action)) return CaptureOutcome::foreign_handler;

  Slot& s = g_slot;
  std::uint32_t state = s.state.load(std::memory_order_acquire);
  if (phase_of(state) != kIdle) return CaptureOutcome::busy;
  const std::uint32_t generation = (state & ~kPhaseMask) + (kPhaseMask + 1u);
  if (!s.state.compare_exchange_strong(state, generation | kSetup, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
    return CaptureOutcome::busy;
  }

  // Owner of the slot from here. No handler reads it until the request is published.
  while (sem_trywait(&s.done) == 0) {
  }
  if (request.scan) refresh_code_map(s.code);
  s.pid.store(getpid(), std::memory_order_relaxed);
  s.tid.store(request.tid, std::memory_order_relaxed);
  s.stack_low.store(request.stack_low, std::memory_order_relaxed);
  s.stack_high.store(request.stack_high, std::memory_order_relaxed);
  s.max.store(static_cast<std::uint32_t>(request.max < kMaxCapturePcs ? request.max : kMaxCapturePcs),
              std::memory_order_relaxed);
  s.scan.store(request.scan && s.code.built, std::memory_order_relaxed);
  s.copy.store(request.copy_reach != 0, std::memory_order_relaxed);
  s.count.store(0, std::memory_order_relaxed);
  const std::uint32_t requested = generation | kRequested;
  s.state.store(requested, std::memory_order_release);

  CaptureOutcome failure = CaptureOutcome::timeout;
  if (syscall(SYS_tgkill, static_cast<long>(getpid()), static_cast<long>(request.tid),
              static_cast<long>(request.signal)) != 0) {
    sys_errno = errno;
    failure = sys_errno == ESRCH ? CaptureOutcome::gone : CaptureOutcome::signal_error;
    std::uint32_t expected = requested;
    if (s.state.compare_exchange_strong(expected, generation | kIdle, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
      return failure;
    }
    // A sample signal queued earlier (the thread had blocked it) claimed this request: wait
    // for its answer like for ours.
  }

  const timespec deadline = deadline_after(request.timeout_us);
  if (request.spin) {
    // Answered in the spin: the semaphore below returns at once. A capture that does not spin
    // counts as a miss too, so that every 16th one tries again.
    const bool spun = should_spin(s.spins_missed);
    s.spins_missed = spun && spin_for_answer(s, generation | kDone, deadline) ? 0u : s.spins_missed + 1u;
  }
  for (;;) {
    const int waited = sem_clockwait(&s.done, CLOCK_MONOTONIC, &deadline);
    const std::uint32_t now = s.state.load(std::memory_order_acquire);
    if (now == (generation | kDone)) {
      count = copy_answer(s, now, request, pcs);
      return CaptureOutcome::answered;
    }
    if (waited != 0 && errno != EINTR) break;  // ETIMEDOUT (or a failing wait: give up too)
    // A post without our answer (cannot happen after the drain, but harmless) or EINTR: wait on.
  }

  std::uint32_t expected = requested;
  if (s.state.compare_exchange_strong(expected, generation | kIdle, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
    return failure;  // no handler claimed it: the thread did not run the handler in time
  }
  if (expected == (generation | kWriting) &&
      s.state.compare_exchange_strong(expected, generation | kAbandoned, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
    return CaptureOutcome::timeout;  // the handler frees the slot when it finishes
  }
  if (expected == (generation | kDone)) {  // answered just at the deadline
    count = copy_answer(s, expected, request, pcs);
    return CaptureOutcome::answered;
  }
  return CaptureOutcome::timeout;
}

CaptureOutcome capture_parked(const CaptureRequest& request, std::uintptr_t sp, std::uintptr_t pc, Frame* pcs,
                              std::size_t& count) noexcept {
  count = 0;
  Slot& s = g_slot;
  std::uint32_t state = s.state.load(std::memory_order_acquire);
  if (phase_of(state) != kIdle) return CaptureOutcome::busy;
  const std::uint32_t setup = ((state & ~kPhaseMask) + (kPhaseMask + 1u)) | kSetup;
  // Owning the slot (setup: no handler claims it) makes the code map this thread's to use.
  if (!s.state.compare_exchange_strong(state, setup, std::memory_order_acq_rel, std::memory_order_relaxed)) {
    return CaptureOutcome::busy;
  }
  const std::size_t max = request.max < kMaxCapturePcs ? request.max : kMaxCapturePcs;
  std::size_t n = 0;
  if (max > 0) pcs[n++] = pc;
  if (request.scan && n < max) {
    refresh_code_map(s.code);
    if (s.code.built) n = scan_parked(s.code, request, sp, pcs, n, max);
  }
  s.state.store(with_phase(setup, kIdle), std::memory_order_release);
  count = n;
  return CaptureOutcome::answered;
}

}  // namespace loopcanary::port_linux::detail
