// SPDX-License-Identifier: MIT
// Memory context of the Cortex-M port: stack painting, the resumable high-water scan, the
// firmware's heap callback (loopcanary/port/cortex_m/stack.hpp).
#include "loopcanary/port/cortex_m/stack.hpp"

#include <atomic>

#include "loopcanary/monitor.hpp"
#include "loopcanary/port/cortex_m.hpp"

namespace loopcanary::cortex_m {
namespace {

constexpr std::uintptr_t kWord = 4;
constexpr std::uint32_t kDefaultScanWords = 256;
constexpr std::uint32_t kMaxScanWords = 65'536;

// Written by init_memory() (Thread mode) while `painted` is false; read and advanced by
// read_memory() (watchdog context) while it is true.
struct MemoryState {
  std::uintptr_t limit = 0;   // lowest word of the stack
  std::uintptr_t top = 0;     // one past its highest word
  std::uintptr_t mark = 0;    // lowest word known not to hold the paint
  std::uintptr_t cursor = 0;  // next word the current pass examines, in [limit, mark]
  std::uint32_t scan_words = 0;  // set by init_memory(); all zero: in .bss
  void (*read_heap)(void* context, MemoryReading* out) = nullptr;
  void* heap_context = nullptr;
  std::atomic<bool> painted{false};
};
MemoryState g_memory;

std::uintptr_t round_up(std::uintptr_t address) noexcept { return (address + kWord - 1) & ~(kWord - 1); }
std::uintptr_t round_down(std::uintptr_t address) noexcept { return address & ~(kWord - 1); }

std::uint32_t word_at(std::uintptr_t address) noexcept {
  return *reinterpret_cast<const volatile std::uint32_t*>(address);
}

// True when `loop` runs on the painted stack: the super-loop (no LoopContext), or a loop whose
// LoopContext has the painted stack's bounds.
bool on_painted_stack(const Monitor& loop, const MemoryState& s) noexcept {
  const auto* context = static_cast<const LoopContext*>(loop.context());
  return context == nullptr || (round_up(context->stack_low) == s.limit && round_down(context->stack_high) == s.top);
}

// Examines up to scan_words words of the current pass; lowers the mark at the first word that
// lost the paint (and starts a new pass), or starts a new pass when this one reached the mark.
void advance_scan(MemoryState& s) noexcept {
  std::uintptr_t at = s.cursor;
  for (std::uint32_t n = 0; n < s.scan_words; ++n) {
    if (at >= s.mark) {
      at = s.limit;
      break;
    }
    if (word_at(at) != kStackPaint) {
      s.mark = at;
      at = s.limit;
      break;
    }
    at += kWord;
  }
  s.cursor = at;
}

}  // namespace

const char* describe(MemoryStatus status) noexcept {
  switch (status) {
    case MemoryStatus::ok: return "ok";
    case MemoryStatus::stack_empty:
      return "cortex_m::MemoryConfig.stack: limit must lie below top (at least one word between them)";
    case MemoryStatus::stack_pointer_outside:
      return "cortex_m::MemoryConfig.stack: the caller's stack pointer is not inside it; call init_memory on the "
             "stack it paints";
    case MemoryStatus::scan_words_out_of_range:
      return "cortex_m::MemoryConfig.scan_words must be 1..65536 (0: default 256)";
  }
  return "unknown memory status";
}

// noinline: the stack pointer read below is this function's own, after its prologue; nothing
// it calls afterwards runs below it while it paints (the loop keeps everything in registers,
// and volatile stores are never turned into a memset call).
__attribute__((noinline)) MemoryStatus init_memory(const MemoryConfig& config) noexcept {
  std::uintptr_t sp = 0;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  const bool has_stack = config.stack.limit != 0 || config.stack.top != 0;
  const std::uintptr_t limit = round_up(config.stack.limit);
  const std::uintptr_t top = round_down(config.stack.top);
  if (config.scan_words > kMaxScanWords) return MemoryStatus::scan_words_out_of_range;
  if (has_stack && (config.stack.limit > config.stack.top || limit >= top)) return MemoryStatus::stack_empty;
  if (has_stack && (sp <= limit || sp > top)) return MemoryStatus::stack_pointer_outside;

  MemoryState& s = g_memory;
  s.painted.store(false, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  s.scan_words = config.scan_words != 0 ? config.scan_words : kDefaultScanWords;
  s.read_heap = config.read_heap;
  s.heap_context = config.heap_context;
  if (!has_stack) return MemoryStatus::ok;
  const std::uintptr_t end = round_down(sp);
  for (auto* p = reinterpret_cast<volatile std::uint32_t*>(limit); p < reinterpret_cast<volatile std::uint32_t*>(end); ++p) {
    *p = kStackPaint;
  }
  s.limit = limit;
  s.top = top;
  s.mark = end;
  s.cursor = limit;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  s.painted.store(true, std::memory_order_relaxed);
  return MemoryStatus::ok;
}

void read_memory(void* /*context*/, const Monitor& loop, MemoryReading* out) {
  MemoryState& s = g_memory;
  if (s.painted.load(std::memory_order_relaxed) && on_painted_stack(loop, s)) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    advance_scan(s);
    if (s.mark < s.top) out->set(kMemoryStackPeak, s.top - s.mark);
    out->set(kMemoryStackSize, s.top - s.limit);
  }
  if (s.read_heap != nullptr) s.read_heap(s.heap_context, out);
}

std::uint32_t measure_stack(const StackBounds& bounds) noexcept {
  const std::uintptr_t limit = round_up(bounds.limit);
  const std::uintptr_t top = round_down(bounds.top);
  for (std::uintptr_t at = limit; at < top; at += kWord) {
    if (word_at(at) != kStackPaint) return static_cast<std::uint32_t>(top - at);
  }
  return 0;
}

}  // namespace loopcanary::cortex_m
