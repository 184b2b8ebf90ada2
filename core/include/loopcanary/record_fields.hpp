// SPDX-License-Identifier: MIT
// The scalar fields of the records' JSON forms, written once: for each, its JSON name (also the
// member name of the host tool's model, model.hpp), its kind, its value computed from the core
// record, and its unit. Every walker expands the same list with an X macro of its own:
//   - the core's JSON writers (format_json, format_health_json) write each value by its type;
//   - the host tool reads each name into the member of that name, by the member's type, and
//     converts a decoded packet's record into its model by the same values (no JSON round trip);
//   - the text writers (format_text, format_health_text) lay out a chosen subset in their own
//     human form, and read each value through the functions below (fields::block::duration_us(r)
//     ...), so a text value is the JSON's;
//   - a test checks each field against docs/schema (type and nullability) and the two tool
//     paths against each other.
// Structured members (stages, stacks, top entries, flags, the histogram, memory, the events
// array) are written and read by hand beside these lists; their scalar parts are listed here
// where they have any.
//
// The kind names the value's type, and so its JSON form and the tool's member type: `count` (an
// unsigned integer: a number), `text` (`const char*`: a string), `maybe` (`Maybe`: a number, or
// null when not known), `phase` and `cause` (Phase, Cause: a string, to_string). Expansions that
// use the value run in a scope that names the record `r`; the health lists also need `window`
// (the record's window in ticks, ticks_between(r.start, r.end)); the event list needs `e` (the
// EventHealthWindow). Header only; any context.
#pragma once

#include <cstdint>

#include "loopcanary/health.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/time.hpp"

namespace loopcanary {

/// A number that may be unknown (JSON null).
struct Maybe {
  bool known;
  std::uint64_t value;
};

namespace fields {
/// `ticks` at `tick_hz` in µs, rounded down; 0 when tick_hz is 0 (a record with no clock rate).
constexpr std::uint64_t us(std::uint32_t tick_hz, std::uint64_t ticks) noexcept {
  return tick_hz != 0 ? us_from_ticks(ticks, tick_hz) : 0u;
}
/// A name pointer as the forms print it: `fallback` for null.
constexpr const char* name_or(const char* s, const char* fallback) noexcept { return s != nullptr ? s : fallback; }
/// An event's name: "?" for no event or a null name.
constexpr const char* event_name(const Event* event) noexcept {
  return event != nullptr ? name_or(event->name, "?") : "?";
}
/// A scope frame's name: "?" for a null one.
inline const char* scope_name(Frame frame) noexcept { return name_or(reinterpret_cast<const char*>(frame), "?"); }
/// A kept sample's offset from the record's start, µs (a stack's "at_us"). Counted back from
/// `end`: a kept sample is one of the latest, within one counter wrap of the end, while the
/// dispatch itself may be longer than a wrap (duration_ticks is 64-bit); counted from `start` it
/// would lose the whole wraps.
constexpr std::uint64_t sample_offset_us(const BlockRecord& r, const Sample& s) noexcept {
  const std::uint64_t before_end = ticks_between(s.at, r.end);
  return us(r.tick_hz, before_end <= r.duration_ticks ? r.duration_ticks - before_end : 0u);
}
/// A per-mille value, unknown as kUnknownPermille.
constexpr Maybe permille(std::uint16_t value) noexcept { return Maybe{value != kUnknownPermille, value}; }
}  // namespace fields

// ---- BlockRecord ---------------------------------------------------------------------------

/// The top-level scalars of a block record: X(name, kind, value, unit).
#define LOOPCANARY_BLOCK_FIELDS(X)                                                     \
  X(report, count, r.report, "count, from 1")                                          \
  X(phase, phase, r.phase, "Phase")                                                    \
  X(qualifier, text, ::loopcanary::fields::name_or(r.qualifier, ""), "text")           \
  X(loop, text, ::loopcanary::fields::name_or(r.loop, "?"), "text")                    \
  X(loop_index, count, r.loop_index, "index")                                          \
  X(event, text, ::loopcanary::fields::event_name(r.event), "text")                    \
  X(dispatch, count, r.dispatch, "count, from 1")                                      \
  X(tick_hz, count, r.tick_hz, "Hz")                                                   \
  X(start, count, r.start, "ticks")                                                    \
  X(end, count, r.end, "ticks")                                                        \
  X(duration_ticks, count, r.duration_ticks, "ticks")                                  \
  X(duration_us, count, ::loopcanary::fields::us(r.tick_hz, r.duration_ticks), "µs")   \
  X(threshold_us, count, ::loopcanary::fields::us(r.tick_hz, r.threshold_ticks), "µs") \
  X(cause, cause, r.cause, "Cause")                                                    \
  X(top_other, count, r.top_other, "samples")                                          \
  X(records_dropped, count, r.records_dropped, "records")                              \
  X(notes_dropped, count, r.notes_dropped, "notes")

/// The members of a block record's "cpu" object (the tool's model: cpu_<name>).
#define LOOPCANARY_BLOCK_CPU_FIELDS(X)                                                               \
  X(window_us, count, ::loopcanary::fields::us(r.tick_hz, r.window_ticks), "µs")                     \
  X(thread_us, maybe, (::loopcanary::Maybe{r.has_thread_cpu, r.thread_cpu_us}), "µs")                \
  X(thread_wait_us, maybe, (::loopcanary::Maybe{r.has_thread_wait, r.thread_wait_us}), "µs")         \
  X(system_busy_permille, maybe, ::loopcanary::fields::permille(r.system_busy_permille), "permille") \
  X(process_permille, maybe, ::loopcanary::fields::permille(r.process_permille), "permille")         \
  X(steal_us, count, r.steal_us, "µs per CPU")

/// The members of a block record's "samples" object (the tool's model: samples_<name>).
#define LOOPCANARY_BLOCK_SAMPLE_FIELDS(X)                 \
  X(taken, count, r.samples_taken, "samples")             \
  X(kept, count, r.sample_count, "samples")               \
  X(overwritten, count, r.samples_overwritten, "samples") \
  X(missed, count, r.samples_missed, "samples")

// ---- HealthRecord --------------------------------------------------------------------------

/// The scalars of a health record after "kind" and "format_version": X(name, kind, value, unit).
#define LOOPCANARY_HEALTH_FIELDS(X)                                                                              \
  X(number, count, r.number, "count, from 1")                                                                    \
  X(qualifier, text, ::loopcanary::fields::name_or(r.qualifier, ""), "text")                                     \
  X(loop, text, ::loopcanary::fields::name_or(r.loop, "?"), "text")                                              \
  X(loop_index, count, r.loop_index, "index")                                                                    \
  X(tick_hz, count, r.tick_hz, "Hz")                                                                             \
  X(start, count, r.start, "ticks")                                                                              \
  X(end, count, r.end, "ticks")                                                                                  \
  X(window_us, count, ::loopcanary::fields::us(r.tick_hz, window), "µs")                                         \
  X(dispatches, count, r.dispatches, "count")                                                                    \
  X(rate_mhz, count, ::loopcanary::rate_mhz(r.dispatches, window, r.tick_hz), "per 1000 s")                      \
  X(busy_us, count, ::loopcanary::fields::us(r.tick_hz, r.busy_ticks), "µs")                                     \
  X(load_permille, count, ::loopcanary::share_permille(r.busy_ticks, window), "permille")                        \
  X(idle_us, maybe, (::loopcanary::Maybe{r.has_idle, ::loopcanary::fields::us(r.tick_hz, r.idle_ticks)}), "µs")  \
  X(idle_permille, maybe, (::loopcanary::Maybe{r.has_idle, ::loopcanary::share_permille(r.idle_ticks, window)}), \
    "permille")                                                                                                  \
  X(blocks, count, r.blocks, "count")                                                                            \
  X(hangs, count, r.hangs, "count")                                                                              \
  X(max_duration_us, count, ::loopcanary::fields::us(r.tick_hz, r.max_duration), "µs")                           \
  X(health_dropped, count, r.health_dropped, "records")

/// The members of one entry of a health record's "events" array (an EventHealthWindow `e`).
#define LOOPCANARY_EVENT_HEALTH_FIELDS(X)                                                   \
  X(event, text, ::loopcanary::fields::event_name(e.event), "text")                         \
  X(dispatches, count, e.dispatches, "count")                                               \
  X(rate_mhz, count, ::loopcanary::rate_mhz(e.dispatches, window, r.tick_hz), "per 1000 s") \
  X(p50_us, count, ::loopcanary::fields::us(r.tick_hz, e.p50), "µs")                        \
  X(p95_us, count, ::loopcanary::fields::us(r.tick_hz, e.p95), "µs")                        \
  X(p99_us, count, ::loopcanary::fields::us(r.tick_hz, e.p99), "µs")                        \
  X(max_latency_us, count, ::loopcanary::fields::us(r.tick_hz, e.max_latency), "µs")        \
  X(deadline_misses, count, e.deadline_misses, "count")                                     \
  X(missed_periods, count, e.missed_periods, "count")                                       \
  X(posted_ahead, count, e.posted_ahead, "count")                                           \
  X(period_us, count, ::loopcanary::fields::us(r.tick_hz, e.period_ticks), "µs")            \
  X(deadline_us, count, ::loopcanary::fields::us(r.tick_hz, e.deadline_ticks), "µs")

// ---- Each listed value as a function of its record -------------------------------------------

/// One function per listed field, named as the field, returning its value: fields::block::<name>(r),
/// fields::block_cpu::<name>(r), fields::block_samples::<name>(r), fields::health::<name>(r) and
/// fields::event_health::<name>(r, e). Any context; no side effects.
#define LOOPCANARY_FIELD_FUNCTION(name, kind, value, unit) \
  inline auto name(const BlockRecord& r) noexcept { return value; }
#define LOOPCANARY_HEALTH_FIELD_FUNCTION(name, kind, value, unit)      \
  inline auto name(const HealthRecord& r) noexcept {                   \
    [[maybe_unused]] const tick_t window = ticks_between(r.start, r.end); \
    return value;                                                      \
  }
#define LOOPCANARY_EVENT_FIELD_FUNCTION(name, kind, value, unit)                     \
  inline auto name(const HealthRecord& r, const EventHealthWindow& e) noexcept {     \
    [[maybe_unused]] const tick_t window = ticks_between(r.start, r.end);            \
    return value;                                                                    \
  }
namespace fields::block {
LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_FIELD_FUNCTION)
}
namespace fields::block_cpu {
LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_FIELD_FUNCTION)
}
namespace fields::block_samples {
LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_FIELD_FUNCTION)
}
namespace fields::health {
LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_HEALTH_FIELD_FUNCTION)
}
namespace fields::event_health {
LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_EVENT_FIELD_FUNCTION)
}
#undef LOOPCANARY_FIELD_FUNCTION
#undef LOOPCANARY_HEALTH_FIELD_FUNCTION
#undef LOOPCANARY_EVENT_FIELD_FUNCTION

}  // namespace loopcanary
