// SPDX-License-Identifier: MIT
// Where two models of one record differ: every field of the core's field lists
// (loopcanary/record_fields.hpp) and the structured members beside them (the wait summary too). For the tests and fuzz
// targets that check two readings of a record against each other (a packet taken into the model
// directly, and its JSON line read).
#pragma once

#include <string>
#include <vector>

#include "loopcanary/record_fields.hpp"
#include "model.hpp"

namespace loopcanary::tool::test {

namespace detail {
inline std::string show(std::uint64_t v) { return std::to_string(v); }
inline std::string show(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "null"; }
inline std::string show(const std::string& v) { return '"' + v + '"'; }
inline std::string show(Phase v) { return to_string(v); }
inline std::string show(Cause v) { return to_string(v); }
inline std::string show(bool v) { return v ? "true" : "false"; }

// Appends "<where>: <a> != <b>" when the values differ.
template <class T>
void compare(std::string& out, const std::string& where, const T& a, const T& b) {
  if (out.empty() && !(a == b)) out = where + ": " + show(a) + " != " + show(b);
}

inline void compare_frames(std::string& out, const std::string& where, const std::vector<Frame>& a,
                           const std::vector<Frame>& b) {
  compare(out, where + " frames", std::uint64_t{a.size()}, std::uint64_t{b.size()});
  for (std::size_t i = 0; out.empty() && i < a.size(); ++i) {
    compare(out, where + " frame " + std::to_string(i) + " scope", a[i].scope, b[i].scope);
    compare(out, where + " frame " + std::to_string(i) + " pc", a[i].pc, b[i].pc);
  }
}

inline void compare_waits(std::string& out, const WaitSummary& a, const WaitSummary& b) {
  compare(out, "wait.other", a.other, b.other);
  compare(out, "wait.objects", std::uint64_t{a.objects.size()}, std::uint64_t{b.objects.size()});
  for (std::size_t i = 0; out.empty() && i < a.objects.size(); ++i) {
    const WaitEntry& x = a.objects[i];
    const WaitEntry& y = b.objects[i];
    const std::string where = "wait.objects " + std::to_string(i);
    compare(out, where + " kind", std::string(to_string(x.kind)), std::string(to_string(y.kind)));
    compare(out, where + " samples", x.samples, y.samples);
    compare(out, where + " address", x.address, y.address);
    compare(out, where + " fd", x.fd, y.fd);
    compare(out, where + " value", x.value, y.value);
    compare(out, where + " text", x.text, y.text);
    compare(out, where + " deadlock", x.deadlock, y.deadlock);
    compare(out, where + " chain", std::uint64_t{x.chain.size()}, std::uint64_t{y.chain.size()});
    for (std::size_t h = 0; out.empty() && h < x.chain.size(); ++h) {
      const std::string hop = where + " chain " + std::to_string(h);
      compare(out, hop + " address", x.chain[h].address, y.chain[h].address);
      compare(out, hop + " tid", x.chain[h].tid, y.chain[h].tid);
      compare(out, hop + " name", x.chain[h].name, y.chain[h].name);
    }
    compare(out, where + " owner", x.owner.has_value(), y.owner.has_value());
    if (!out.empty() || !x.owner) continue;
    compare(out, where + " owner tid", x.owner->tid, y.owner->tid);
    compare(out, where + " owner name", x.owner->name, y.owner->name);
    compare(out, where + " owner loop", x.owner->loop.value_or("(null)"), y.owner->loop.value_or("(null)"));
    compare_frames(out, where + " owner", x.owner->frames, y.owner->frames);
  }
}
}  // namespace detail

#define LOOPCANARY_COMPARE(name, kind, value, unit) detail::compare(out, #name, a.name, b.name);
#define LOOPCANARY_COMPARE_CPU(name, kind, value, unit) detail::compare(out, "cpu." #name, a.cpu_##name, b.cpu_##name);
#define LOOPCANARY_COMPARE_SAMPLES(name, kind, value, unit) \
  detail::compare(out, "samples." #name, a.samples_##name, b.samples_##name);

/// The first field in which two block records differ, as "<field>: <a> != <b>"; "" when none.
inline std::string first_difference(const LogRecord& a, const LogRecord& b) {
  std::string out;
  LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_COMPARE)
  LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_COMPARE_CPU)
  LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_COMPARE_SAMPLES)
  detail::compare(out, "delayed_by.dispatch", a.delayed_by_dispatch, b.delayed_by_dispatch);
  detail::compare(out, "delayed_by.event", a.delayed_by, b.delayed_by);
  detail::compare(out, "flags hung", a.hung, b.hung);
  detail::compare(out, "flags unwatched", a.unwatched, b.unwatched);
  detail::compare(out, "flags end_estimated", a.end_estimated, b.end_estimated);
  detail::compare(out, "flags running_at_stop", a.running_at_stop, b.running_at_stop);
  detail::compare(out, "top_stacks", a.top_stacks, b.top_stacks);
  detail::compare(out, "stages", std::uint64_t{a.stages.size()}, std::uint64_t{b.stages.size()});
  for (std::size_t i = 0; out.empty() && i < a.stages.size(); ++i) {
    detail::compare(out, "stage " + std::to_string(i) + " name", a.stages[i].name, b.stages[i].name);
    detail::compare(out, "stage " + std::to_string(i) + " us", a.stages[i].us, b.stages[i].us);
  }
  detail::compare(out, "top", std::uint64_t{a.top.size()}, std::uint64_t{b.top.size()});
  for (std::size_t i = 0; out.empty() && i < a.top.size(); ++i) {
    const std::string where = "top " + std::to_string(i);
    detail::compare(out, where + " count", a.top[i].count, b.top[i].count);
    detail::compare(out, where + " leaf_high", a.top[i].leaf_high.pc, b.top[i].leaf_high.pc);
    detail::compare_frames(out, where, a.top[i].frames, b.top[i].frames);
  }
  detail::compare(out, "stacks", std::uint64_t{a.stacks.size()}, std::uint64_t{b.stacks.size()});
  for (std::size_t i = 0; out.empty() && i < a.stacks.size(); ++i) {
    const std::string where = "stack " + std::to_string(i);
    detail::compare(out, where + " at_us", a.stacks[i].at_us, b.stacks[i].at_us);
    detail::compare_frames(out, where, a.stacks[i].frames, b.stacks[i].frames);
  }
  detail::compare_waits(out, a.wait, b.wait);
  return out;
}

#define LOOPCANARY_COMPARE_EVENT(name, kind, value, unit) \
  detail::compare(out, "events " + std::to_string(i) + " " #name, a.events[i].name, b.events[i].name);

/// The first field in which two health records differ; "" when none.
inline std::string first_difference(const HealthLog& a, const HealthLog& b) {
  std::string out;
  LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_COMPARE)
  detail::compare(out, "events", std::uint64_t{a.events.size()}, std::uint64_t{b.events.size()});
  for (std::size_t i = 0; out.empty() && i < a.events.size(); ++i) {
    LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_COMPARE_EVENT)
  }
  return out;
}

#undef LOOPCANARY_COMPARE
#undef LOOPCANARY_COMPARE_CPU
#undef LOOPCANARY_COMPARE_SAMPLES
#undef LOOPCANARY_COMPARE_EVENT

}  // namespace loopcanary::tool::test
