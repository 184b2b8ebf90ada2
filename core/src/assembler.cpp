// SPDX-License-Identifier: MIT
// The assembler: BlockRecords from the observer's evidence (assembler.hpp).
#include "loopcanary/assembler.hpp"

#include <cstring>
#include <new>

namespace loopcanary {
namespace {

// The growth of CPU counter `which` from `a` to `b` into `out`: false (`out` untouched) unless
// both readings have it and it did not go backwards.
bool cpu_delta(const CpuReading& a, const CpuReading& b, CpuValue which, std::uint64_t& out) noexcept {
  if (!a.has(which) || !b.has(which) || b.value[which] < a.value[which]) return false;
  out = b.value[which] - a.value[which];
  return true;
}

// The CPU window of `o` (armed: its first and last readings) into `r`.
void set_cpu(BlockRecord& r, const Observation& o) noexcept {
  const CpuReading& a = o.first.counters;
  const CpuReading& b = o.last.counters;
  r.window_ticks = o.last.elapsed - o.first.elapsed;
  r.has_thread_cpu = cpu_delta(a, b, kCpuThreadUs, r.thread_cpu_us);
  r.has_thread_wait = cpu_delta(a, b, kCpuWaitUs, r.thread_wait_us);
  std::uint64_t busy = 0;
  std::uint64_t total = 0;
  std::uint64_t process = 0;
  if (cpu_delta(a, b, kCpuBusy, busy) && cpu_delta(a, b, kCpuTotal, total) && cpu_delta(a, b, kCpuProcess, process)) {
    r.system_busy_permille = detail::permille(busy, total);
    r.process_permille = detail::permille(process, total);
    cpu_delta(a, b, kCpuStealUs, r.steal_us);
  }
}

// The stages of `record` from the marks of `note`, each up to the next mark, the last up to
// the record's end.
void set_stages(BlockRecord& record, const BlockNote& note) noexcept {
  if constexpr (kMaxStages > 0) {
    const std::size_t count = note.stage_count;
    for (std::size_t i = 0; i < count; ++i) {
      const tick_t until = i + 1 < count ? note.stages[i + 1].start : record.end;
      record.stages[i] = StageTime{note.stages[i].name, ticks_between(note.stages[i].start, until)};
    }
    record.stage_count = static_cast<std::uint8_t>(count);
  } else {
    static_cast<void>(record);
    static_cast<void>(note);
  }
}

// Keeps a table ordered by `count`, largest first, after entry i grew by one.
template <class Entry>
void move_up(Entry* table, std::size_t i, std::uint32_t Entry::*count) noexcept {
  for (; i > 0 && table[i - 1].*count < table[i].*count; --i) {
    const Entry swap = table[i - 1];
    table[i - 1] = table[i];
    table[i] = swap;
  }
}

// The sample's entry key (TopStack): the same scopes, the same callers and the same stack
// evidence slot (`slot`; kNoStack: none, in both); the innermost program counter may differ when
// there are callers to tell the call sites apart (two PCs or more), or stack evidence, within one
// kStackLeafBlock. A stack of one PC without stack evidence has neither: its PC is the key.
bool same_stack(const TopStack& entry, const Sample& sample, std::uint8_t slot) noexcept {
  if (entry.scope_count != sample.scope_count || entry.pc_count != sample.pc_count || entry.stack != slot) {
    return false;
  }
  const std::size_t frames = std::size_t{sample.scope_count} + sample.pc_count;
  const bool evidence = slot != kNoStack;
  const std::size_t any_leaf = sample.pc_count > 1 || evidence ? sample.scope_count : frames;  // frames: none
  for (std::size_t f = 0; f < frames; ++f) {
    if (f != any_leaf && entry.frames[f] != sample.frames[f]) return false;
  }
  return !evidence || sample.pc_count == 0 ||
         entry.frames[entry.scope_count] / kStackLeafBlock == sample.frames[sample.scope_count] / kStackLeafBlock;
}

// The slot of `slots` whose evidence is the same as `evidence` (same_stack_evidence); kNoStack
// when none is, or without evidence.
template <std::size_t Words>
std::uint8_t find_evidence(const StackEvidenceSlots<Words>& slots, const StackEvidence* evidence) noexcept {
  for (std::uint8_t slot = 1; evidence != nullptr && slot <= slots.count; ++slot) {
    if (same_stack_evidence(slots.stacks[slot - 1u], *evidence)) return slot;
  }
  return kNoStack;
}
[[maybe_unused]] std::uint8_t find_evidence(const StackEvidenceSlots<0>&, const StackEvidence*) noexcept { return kNoStack; }

// The entry of `sample` whose stack evidence slot is `slot`, or null.
TopStack* find_entry(StackSamples& stack, const Sample& sample, std::uint8_t slot, std::uint8_t& index) noexcept {
  for (index = 0; index < stack.top_count; ++index) {
    if (same_stack(stack.top[index], sample, slot)) return &stack.top[index];
  }
  return nullptr;
}

// Counts `sample` under its stack's entry (a new one while there is room, else top_other),
// widening the entry's innermost program counter range. `evidence`: the sample's, kept in a new
// slot with a new entry when no slot has it yet; a sample whose evidence finds no slot (all in
// use) is counted as one without. Returns the entry's stack evidence slot (kNoStack: none, or
// counted in top_other).
std::uint8_t count_top(StackSamples& stack, const Sample& sample, const StackEvidence* evidence,
                       std::size_t capacity) noexcept {
  std::uint8_t slot = find_evidence(stack.evidence, evidence);
  std::uint8_t i = 0;
  TopStack* entry = evidence == nullptr || slot != kNoStack ? find_entry(stack, sample, slot, i) : nullptr;
  if (entry == nullptr && stack.top_count >= capacity) {
    ++stack.top_other;
    return kNoStack;
  }
  if (entry == nullptr && evidence != nullptr && slot == kNoStack) {
    slot = stack.evidence.keep(*evidence);
    if (slot == kNoStack) entry = find_entry(stack, sample, slot, i);  // every slot in use: counted without
  }
  if (entry != nullptr) {
    ++entry->count;
    if (sample.pc_count != 0) {
      const Frame leaf = sample.frames[sample.scope_count];
      if (leaf < entry->frames[entry->scope_count]) entry->frames[entry->scope_count] = leaf;
      if (leaf > entry->leaf_high) entry->leaf_high = leaf;
    }
    move_up(stack.top, i, &TopStack::count);  // most frequent first
    return slot;
  }
  TopStack& added = stack.top[stack.top_count++];
  added.count = 1;
  added.scope_count = sample.scope_count;
  added.pc_count = sample.pc_count;
  const std::size_t frames = std::size_t{sample.scope_count} + sample.pc_count;
  for (std::size_t f = 0; f < frames; ++f) added.frames[f] = sample.frames[f];
  added.leaf_high = sample.pc_count != 0 ? sample.frames[sample.scope_count] : 0u;
  added.stack = slot;
  return slot;
}

// A watch's capacity: `own` when it is 1..`build`, else `build` (0 in a zeroed WatchSamples).
std::size_t capacity_of(std::size_t own, std::size_t build) noexcept { return own != 0 && own < build ? own : build; }

}  // namespace

void watch_started(WatchSamples& samples, std::size_t max_samples, std::size_t top_frames) noexcept {
  StackSamples& stack = samples.stack;
  stack.samples_taken = 0;
  stack.samples_overwritten = 0;
  stack.sample_count = 0;
  stack.top_count = 0;
  stack.top_other = 0;
  stack.evidence.clear();
  samples.wait.count = 0;
  samples.wait.other = 0;
  samples.oldest = 0;
  samples.max_samples = static_cast<std::uint8_t>(capacity_of(max_samples, kMaxSamples));
  samples.top_frames = static_cast<std::uint8_t>(capacity_of(top_frames, kTopFrames));
}

bool same_stack_evidence(const StackEvidence& a, const StackEvidence& b) noexcept {
  if (a.count != b.count) return false;
  for (std::size_t i = 0; i < a.count; ++i) {
    if (a.offset[i] != b.offset[i] || a.value[i] != b.value[i]) return false;
  }
  return true;
}

void add_sample(WatchSamples& samples, const Sample& sample, const StackEvidence* stack_evidence) noexcept {
  StackSamples& stack = samples.stack;
  const std::size_t capacity = capacity_of(samples.max_samples, kMaxSamples);
  std::size_t slot = stack.sample_count;
  if (slot < capacity) {
    ++stack.sample_count;
  } else {  // full: the newest replaces the oldest (assemble puts them back in order)
    slot = samples.oldest;
    samples.oldest = static_cast<std::uint8_t>((slot + 1u) % capacity);
    ++stack.samples_overwritten;
  }
  Sample& kept = stack.samples[slot];
  kept = sample;
  ++stack.samples_taken;
  kept.stack = count_top(stack, sample, kStackWords > 0 ? stack_evidence : nullptr,
                         capacity_of(samples.top_frames, kTopFrames));
}

bool same_wait(const WaitReading& a, const WaitReading& b) noexcept {
  const WaitObject& x = a.object;
  const WaitObject& y = b.object;
  if (x.kind != y.kind || x.owner != y.owner) return false;
  switch (x.kind) {
    case WaitKind::mutex:
    case WaitKind::condition:
    case WaitKind::futex: return x.address == y.address;
    case WaitKind::file:
    case WaitKind::socket:
    case WaitKind::pipe:
    case WaitKind::poll: return x.fd == y.fd && std::strcmp(x.text, y.text) == 0;
    case WaitKind::disk: return std::strcmp(x.text, y.text) == 0;
    case WaitKind::syscall: return x.value == y.value;
    case WaitKind::none:
    case WaitKind::sleep: break;
  }
  return true;
}

void add_wait(WatchSamples& samples, const WaitReading& reading) noexcept {
  if constexpr (kWaitObjects > 0) {
    WaitSummary& wait = samples.wait;
    for (std::size_t i = 0; i < wait.count; ++i) {
      WaitSeen& seen = wait.objects[i];
      if (!same_wait(seen, reading)) continue;
      ++seen.samples;
      if (reading.holder_pc_count != 0) {
        seen.holder_pc_count = reading.holder_pc_count;
        std::memcpy(seen.holder_frames, reading.holder_frames, sizeof seen.holder_frames);
      }
      seen.chain_count = reading.chain_count;  // the chain as last read
      std::memcpy(seen.chain, reading.chain, sizeof seen.chain);
      seen.deadlock = reading.deadlock;
      move_up(wait.objects, i, &WaitSeen::samples);
      return;
    }
    if (wait.count < kWaitObjects) {
      WaitSeen& seen = wait.objects[wait.count++];
      static_cast<WaitReading&>(seen) = reading;
      seen.samples = 1;
    } else {
      ++wait.other;
    }
  } else {
    static_cast<void>(samples);
    static_cast<void>(reading);
  }
}

void assemble(const Observation& o, const WatchSamples* samples, const char* qualifier, const CauseRule& rule,
              BlockRecord& out) noexcept {
  // Placement new: value-initialises the record in its existing storage and allocates nothing
  // (an assignment from BlockRecord{} would build a temporary on the stack: 448 bytes of a
  // timer ISR's stack on Cortex-M3). Every field not set below keeps its documented default.
  BlockRecord& r = *::new (static_cast<void*>(&out)) BlockRecord{};
  r.report = o.report;
  r.phase = o.phase;
  r.flags = o.flags;
  r.loop_index = o.loop_index;
  r.qualifier = qualifier;
  r.loop = o.loop;
  r.event = o.note.event;
  r.dispatch = o.note.seq / 2u + 1u;  // seq 2n+1 is dispatch n+1 (a deadline note's 2n: the late one)
  r.tick_hz = o.tick_hz;
  r.start = o.note.begin;
  r.end = o.note.end;
  r.duration_ticks = o.duration_ticks;
  r.threshold_ticks = o.threshold_ticks;
  r.delayed_by_dispatch = o.delayed_by_dispatch;
  r.delayed_by = o.delayed_by;
  set_stages(r, o.note);
  r.memory = o.memory;
  r.records_dropped = o.records_dropped;
  r.notes_dropped = o.notes_dropped;
  if ((o.flags & kFlagUnwatched) == 0) set_cpu(r, o);
  derive(r, rule);

  if (samples != nullptr && o.watch != kNoWatch) {
    static_cast<StackSamples&>(r) = samples->stack;
    r.wait = samples->wait;
    if (samples->oldest != 0) {  // the watch's samples wrapped: oldest first in the record
      const std::size_t older = samples->stack.sample_count - samples->oldest;  // full: the capacity
      std::memcpy(&r.samples[0], &samples->stack.samples[samples->oldest], older * sizeof(Sample));
      std::memcpy(&r.samples[older], &samples->stack.samples[0], samples->oldest * sizeof(Sample));
    }
  }
  r.samples_missed = o.samples_missed;
}

}  // namespace loopcanary
