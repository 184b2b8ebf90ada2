// SPDX-License-Identifier: MIT
// Records the tests of several forms share: a block record and a health record with every
// field set, by hand.
#pragma once

#include <cstddef>
#include <vector>

#include "loopcanary/health.hpp"
#include "loopcanary/record.hpp"
#include "top_stack.hpp"

namespace loopcanary::test {

inline constexpr Event kButton{"button"};
inline constexpr char kDebounce[] = "debounce";
inline constexpr char kInputTask[] = "input_task";

/// A scope frame of `name` (a static string).
inline Frame scope_frame(const char* name) { return reinterpret_cast<Frame>(name); }

/// A sample at `at` of these scopes and program counters, innermost first.
inline Sample make_sample(tick_t at, std::vector<Frame> scopes, std::vector<Frame> pcs) {
  Sample s;
  s.at = at;
  s.scope_count = static_cast<std::uint8_t>(scopes.size());
  s.pc_count = static_cast<std::uint8_t>(pcs.size());
  std::size_t i = 0;
  for (Frame f : scopes) s.frames[i++] = f;
  for (Frame f : pcs) s.frames[i++] = f;
  return s;
}

/// A final record with every field set, at 1 MHz (one tick = one microsecond).
inline BlockRecord hand_block() {
  BlockRecord r;
  r.report = 7;
  r.phase = Phase::final;
  r.cause = Cause::running;
  r.flags = kFlagHung;
  r.loop_index = 1;
  r.qualifier = "fw-2.1.0";
  r.loop = "main";
  r.event = &kButton;
  r.dispatch = 42;
  r.tick_hz = 1'000'000;
  r.start = 1'000;
  r.end = 251'042;
  r.duration_ticks = 250'042;
  r.threshold_ticks = 100'000;
  r.stage_count = 2;
  r.stages[0] = StageTime{"input", 2'500};
  r.stages[1] = StageTime{"compute", 247'000};
  r.window_ticks = 200'000;
  r.thread_cpu_us = 180'500;
  r.has_thread_cpu = true;
  r.system_busy_permille = 923;
  r.process_permille = 456;
  r.memory.set(kMemoryResident, 12'345'678);
  r.memory.set(kMemoryStackPeak, 2'048);
  r.memory.set(kMemoryStackSize, 8'192);
  r.samples_taken = 7;  // 2 kept + 5 overwritten; top: 2 + 1 + 4 other
  r.samples_missed = 1;
  r.samples_overwritten = 5;
  r.sample_count = 2;
  r.samples[0] = make_sample(26'000, {scope_frame(kDebounce), scope_frame(kInputTask)}, {0x8000123});
  r.samples[1] = make_sample(126'000, {}, {0xdeadbeef, 0x10});
  r.top_count = 2;
  r.top[0] = top_entry(scope_frame(kDebounce), true, 2);
  // One sample's stack: its innermost PC anywhere in 0xdeadbeef..0xdeadbf00, called from 0x10.
  r.top[1] = top_entry(0xdeadbeef, false, 1);
  r.top[1].pc_count = 2;
  r.top[1].frames[1] = 0x10;
  r.top[1].leaf_high = 0xdeadbf00;
  r.top_other = 4;
  r.records_dropped = 5;
  r.notes_dropped = 6;
  return r;
}

/// A copy of `text` into a fixed char array (a WaitObject's text or owner name).
template <std::size_t N>
void set_text(char (&to)[N], const char* text) {
  std::size_t i = 0;
  for (; i + 1 < N && text[i] != '\0'; ++i) to[i] = text[i];
  to[i] = '\0';
}

/// hand_block() of a dispatch that waited: cause waiting; of its 7 samples, 5 read a mutex held
/// by thread 4242 "journal" (the watched loop "journal"), with the holder's stack, 1 a pipe, 1
/// an object that did not fit.
inline BlockRecord hand_waiting_block() {
  BlockRecord r = hand_block();
  r.cause = Cause::waiting;
  if constexpr (kWaitObjects >= 2) {
    r.wait.count = 2;
    WaitSeen& lock = r.wait.objects[0];
    lock.object.kind = WaitKind::mutex;
    lock.object.address = 0x7f00a0;
    lock.object.owner = 4242;
    set_text(lock.object.owner_name, "journal");
    lock.owner_loop = "journal";
    lock.holder_pc_count = 2;
    lock.holder_frames[0] = 0x401000;
    lock.holder_frames[1] = 0x401234;
    lock.samples = 5;
    WaitSeen& pipe = r.wait.objects[1];
    pipe.object.kind = WaitKind::pipe;
    pipe.object.fd = 5;
    set_text(pipe.object.text, "pipe:[81234]");
    pipe.samples = 1;
    r.wait.other = 1;
  }
  return r;
}

/// hand_block() of a loop thread (id 7, "main-loop") that hangs on a lock held by thread 4242
/// "journal", which waits on a lock the loop's thread holds: a deadlock, in all of its 7 samples.
inline BlockRecord hand_deadlock_block() {
  BlockRecord r = hand_block();
  r.phase = Phase::hang;
  r.cause = Cause::waiting;
  if constexpr (kWaitObjects >= 1) {
    r.wait.count = 1;
    WaitSeen& lock = r.wait.objects[0];
    lock.object.kind = WaitKind::mutex;
    lock.object.address = 0x7f00a0;
    lock.object.owner = 4242;
    set_text(lock.object.owner_name, "journal");
    lock.holder_pc_count = 1;
    lock.holder_frames[0] = 0x401000;
    lock.chain_count = 1;
    lock.chain[0].address = 0x7f00c8;
    lock.chain[0].owner = 7;
    set_text(lock.chain[0].owner_name, "main-loop");
    lock.deadlock = true;
    lock.samples = 7;
  }
  return r;
}

/// A health record with every field set: a 1 s window across the tick wrap at 1 MHz, one event
/// ("control_tick") with a period and a deadline, a resident memory reading.
inline HealthRecord hand_health() {
  static EventHealth tick_health;
  static const Event control{"control_tick", 0, &tick_health};
  HealthRecord r;
  r.number = 3;
  r.qualifier = "fw-2.1.0";
  r.loop = "main";
  r.loop_index = 1;
  r.tick_hz = 1'000'000;
  r.start = 0xFFFF'0000u;
  r.end = 0xFFFF'0000u + 1'000'000u;  // a 1 s window across the tick wrap
  r.dispatches = 1'234;
  r.busy_ticks = 931'500;
  r.idle_ticks = 60'000;
  r.has_idle = true;
  r.blocks = 2;
  r.hangs = 1;
  r.max_duration = 250'042;
  r.histogram[3] = 1'200;
  r.histogram[17] = 34;
  r.memory.set(kMemoryResident, 4'096);
  r.event_count = 1;
  EventHealthWindow& e = r.events[0];
  e.event = &control;
  e.dispatches = 98;
  e.deadline_misses = 3;
  e.missed_periods = 5;
  e.posted_ahead = 1;
  e.p50 = 127;
  e.p95 = 4'095;
  e.p99 = 16'383;
  e.max_latency = 20'000;
  e.period_ticks = 10'000;
  e.deadline_ticks = 5'000;
  r.health_dropped = 4;
  return r;
}

}  // namespace loopcanary::test
