// SPDX-License-Identifier: MIT
// loopcanary_sizes: byte sizes of the main types for this build's configuration (the
// LOOPCANARY_* capacities), printed as a Markdown table row for docs/benchmarks.md, then the RAM
// each loop-health feature takes (docs/benchmarks.md, "Loop health: cost per feature"), one
// "name = bytes" line each:
//   monitor                 sizeof(Monitor)
//   monitor_histogram       of which the duration histogram (0 with LOOPCANARY_HISTOGRAM=0)
//   monitor_stages          of which the stage marks (0 with LOOPCANARY_MAX_STAGES=0)
//   monitor_note_slots      of which the block-note queue's slots (LOOPCANARY_NOTE_CAPACITY)
//   note_slot               one note slot (its stage marks included)
//   note_slot_stages        of which the stage marks
//   stage_mark              one StageMark (name, start) as a note keeps it
//   event_health            sizeof(EventHealth): per event type with queue-latency storage
//
// For a target this cannot run on, compile it to assembly and read the constants:
//   arm-none-eabi-g++ -mcpu=cortex-m3 -mthumb -std=c++17 -O2 -fno-exceptions -fno-rtti
//     -Icore/include -I<build>/generated/include -S -o - bench/sizes.cpp | grep -A1 '^loopcanary_sizeof'
// (one command line; docs/benchmarks.md has it in full).
#include <cstddef>
#include <cstdio>
#include <type_traits>

#include "loopcanary/loopcanary.hpp"

namespace lc = loopcanary;

extern "C" {
extern const std::size_t loopcanary_sizeof_monitor;
extern const std::size_t loopcanary_sizeof_block_record;
extern const std::size_t loopcanary_sizeof_sample;
extern const std::size_t loopcanary_sizeof_watchdog_track;
extern const std::size_t loopcanary_sizeof_watch;
extern const std::size_t loopcanary_sizeof_static_watchdog_1_8;
extern const std::size_t loopcanary_sizeof_static_watchdog_4_16;
extern const std::size_t loopcanary_sizeof_monitor_histogram;
extern const std::size_t loopcanary_sizeof_monitor_stages;
extern const std::size_t loopcanary_sizeof_monitor_note_slots;
extern const std::size_t loopcanary_sizeof_note_slot;
extern const std::size_t loopcanary_sizeof_note_slot_stages;
extern const std::size_t loopcanary_sizeof_stage_mark;
extern const std::size_t loopcanary_sizeof_event_health;
const std::size_t loopcanary_sizeof_monitor = sizeof(lc::Monitor);
const std::size_t loopcanary_sizeof_block_record = sizeof(lc::BlockRecord);
const std::size_t loopcanary_sizeof_sample = sizeof(lc::Sample);
const std::size_t loopcanary_sizeof_watchdog_track = sizeof(lc::detail::WatchdogTrack);
const std::size_t loopcanary_sizeof_watch = sizeof(lc::detail::Watch);
const std::size_t loopcanary_sizeof_static_watchdog_1_8 = sizeof(lc::StaticWatchdog<1, 8>);
const std::size_t loopcanary_sizeof_static_watchdog_4_16 = sizeof(lc::StaticWatchdog<4, 16>);
// The Monitor's optional parts are empty bases when compiled out (no byte).
const std::size_t loopcanary_sizeof_monitor_histogram =
    std::is_empty_v<lc::detail::HistogramCounters<lc::kHistogram>> ? 0 : sizeof(lc::detail::HistogramCounters<lc::kHistogram>);
const std::size_t loopcanary_sizeof_monitor_stages =
    std::is_empty_v<lc::detail::StageBoard<lc::kMaxStages>> ? 0 : sizeof(lc::detail::StageBoard<lc::kMaxStages>);
const std::size_t loopcanary_sizeof_monitor_note_slots = sizeof(lc::detail::Slot<lc::BlockNote>) * lc::kNoteCapacity;
const std::size_t loopcanary_sizeof_note_slot = sizeof(lc::detail::Slot<lc::BlockNote>);
const std::size_t loopcanary_sizeof_note_slot_stages =
    std::is_empty_v<lc::detail::NoteStages<lc::kMaxStages>> ? 0 : sizeof(lc::detail::NoteStages<lc::kMaxStages>);
const std::size_t loopcanary_sizeof_stage_mark = sizeof(lc::StageMark);
const std::size_t loopcanary_sizeof_event_health = sizeof(lc::EventHealth);
}

int main() {
  std::printf("| samples %zu, frames %zu, scopes %zu, notes %zu, top %zu, histogram %d | %zu | %zu | %zu | %zu | %zu | %zu | %zu |\n",
              lc::kMaxSamples, lc::kMaxFrames, lc::kScopeDepth, lc::kNoteCapacity, lc::kTopFrames,
              lc::kHistogram ? 1 : 0, loopcanary_sizeof_monitor, loopcanary_sizeof_block_record,
              loopcanary_sizeof_sample, loopcanary_sizeof_watchdog_track, loopcanary_sizeof_watch,
              loopcanary_sizeof_static_watchdog_1_8,
              loopcanary_sizeof_static_watchdog_4_16);
  std::printf("stages %zu, notes %zu, histogram %d:\n", lc::kMaxStages, lc::kNoteCapacity, lc::kHistogram ? 1 : 0);
  const struct {
    const char* name;
    std::size_t bytes;
  } parts[] = {
      {"monitor", loopcanary_sizeof_monitor},
      {"monitor_histogram", loopcanary_sizeof_monitor_histogram},
      {"monitor_stages", loopcanary_sizeof_monitor_stages},
      {"monitor_note_slots", loopcanary_sizeof_monitor_note_slots},
      {"note_slot", loopcanary_sizeof_note_slot},
      {"note_slot_stages", loopcanary_sizeof_note_slot_stages},
      {"stage_mark", loopcanary_sizeof_stage_mark},
      {"event_health", loopcanary_sizeof_event_health},
  };
  for (const auto& part : parts) std::printf("  %s = %zu\n", part.name, part.bytes);
  return 0;
}
