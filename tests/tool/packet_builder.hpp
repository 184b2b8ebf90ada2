// SPDX-License-Identifier: MIT
// A test-side builder of binary packets, written from docs/report-format.md ("Binary form")
// alone, independent of the core's encoder: its own CRC-32 (bit by bit), varints and body
// layout. A BodySpec describes a body field by field; `raw` replaces one field's bytes (by the
// field's name in the specification), so each malformed case is one override.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace loopcanary::tool::test {

using Bytes = std::vector<std::uint8_t>;

inline void put_u8(Bytes& b, unsigned v) { b.push_back(static_cast<std::uint8_t>(v)); }
inline void put_uv(Bytes& b, std::uint64_t v) {
  do {
    const auto group = static_cast<std::uint8_t>(v & 0x7Fu);
    v >>= 7;
    b.push_back(static_cast<std::uint8_t>(group | (v != 0 ? 0x80u : 0u)));
  } while (v != 0);
}
// A top entry's key (value << 1) | is_scope: 65 bits for a 64-bit value.
inline void put_key(Bytes& b, std::uint64_t value, bool is_scope) {
  std::uint64_t low = (value << 1) | (is_scope ? 1u : 0u);
  std::uint64_t high = value >> 63;
  do {
    const auto group = static_cast<std::uint8_t>(low & 0x7Fu);
    low = (low >> 7) | (high << 57);
    high >>= 7;
    b.push_back(static_cast<std::uint8_t>(group | (low != 0 || high != 0 ? 0x80u : 0u)));
  } while (low != 0 || high != 0);
}
inline void put_sv(Bytes& b, std::int64_t n) {
  put_uv(b, (static_cast<std::uint64_t>(n) << 1) ^ static_cast<std::uint64_t>(n >> 63));
}
inline void put_str(Bytes& b, const std::string& s, bool cut = false) {
  put_uv(b, (static_cast<std::uint64_t>(s.size()) << 1) | (cut ? 1u : 0u));
  b.insert(b.end(), s.begin(), s.end());
}

/// A body under construction, field by field: each field, by its name in the specification, is
/// written by its encoding unless `raw` gives that name's bytes instead.
class BodyWriter {
 public:
  explicit BodyWriter(const std::map<std::string, Bytes>& raw) : raw_(raw) {}

  Bytes bytes;

  template <class Write>
  void field(const char* name, Write write) {
    const auto it = raw_.find(name);
    if (it != raw_.end()) {
      bytes.insert(bytes.end(), it->second.begin(), it->second.end());
    } else {
      write();
    }
  }
  void u8(const char* name, unsigned v) { field(name, [&] { put_u8(bytes, v); }); }
  void uv(const char* name, std::uint64_t v) { field(name, [&] { put_uv(bytes, v); }); }
  void sv(const char* name, std::int64_t v) { field(name, [&] { put_sv(bytes, v); }); }

 private:
  const std::map<std::string, Bytes>& raw_;
};

// CRC-32/ISO-HDLC as the specification gives it: reflected 0xEDB88320, init and xorout ~0.
inline std::uint32_t spec_crc32(const std::uint8_t* data, std::size_t size) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) != 0 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
  }
  return ~crc;
}

/// magic, version, type, length, body, CRC. (Byte by byte: GCC 12 at -O3 warns, wrongly, of
/// an out-of-bounds memcpy in a vector::insert after a six-byte header, and of a null
/// dereference in a vector sized first and filled by index.)
inline Bytes make_packet(const Bytes& body, unsigned type = 1, unsigned version = 2) {
  Bytes p;
  p.reserve(6 + body.size() + 4);
  for (const std::size_t v : {std::size_t{0xA5}, std::size_t{0x4C}, std::size_t{version}, std::size_t{type},
                              body.size() & 0xFF, body.size() >> 8}) {
    p.push_back(static_cast<std::uint8_t>(v));
  }
  for (const std::uint8_t b : body) p.push_back(b);
  const std::uint32_t crc = spec_crc32(p.data() + 2, p.size() - 2);
  for (int i = 0; i < 4; ++i) p.push_back(static_cast<std::uint8_t>(crc >> (8 * i)));
  return p;
}

struct TopSpec {
  bool is_scope = true;
  std::uint64_t value = 3;  // string index or PC
  std::uint64_t count = 1;
};

struct SampleSpec {
  std::uint64_t time = 0;                 // at − previous at (the first: − start)
  std::int64_t sequence = 0;              // seq − (2 × dispatch − 1)
  std::vector<std::uint64_t> scopes;      // string indexes
  std::vector<std::int64_t> pc_deltas;    // as written (deltas from the previous sample's PC i)
};

struct StageSpec {
  std::uint64_t name = 3;  // string index
  std::uint64_t ticks = 0;
};

/// A `block` body, by default a typical final record of format version 2 with 32-bit PCs: 2
/// samples, a scope and PCs, no stages, no memory values. Version 1 leaves out `max stages`, the
/// memory values and the stages.
struct BodySpec {
  unsigned version = 2;
  int reset_cause = -1;  // ≥ 0: a previous_boot body (this byte first)
  unsigned config = 0, max_samples = 16, max_frames = 8, top_frames = 8, max_stages = 4;
  std::uint64_t tick_hz = 1000000, report = 4;
  unsigned phase = 2, cause = 1, flags = 0, loop_index = 1;
  std::uint64_t dispatch = 7, start = 1000, duration = 250000;
  std::int64_t end_adjust = 0;
  std::uint64_t threshold = 100000, window = 200000;
  std::uint64_t delayed_by_dispatch = 0, delayed_by_event = 2;  // version 2; the event index only when the dispatch is not 0
  unsigned presence = 0xF;
  std::uint64_t thread_cpu = 150000, thread_wait = 20, busy = 900, process = 500, steal = 3;
  unsigned memory_presence = 0;          // version 2
  std::vector<std::uint64_t> memory;     // one per set bit, in bit order
  std::uint64_t records_dropped = 1, notes_dropped = 2;
  std::vector<std::pair<std::string, bool>> strings = {{"fw-1.0", false}, {"main", false}, {"tick", false}, {"crc", false}};
  std::vector<StageSpec> stages;  // version 2
  std::uint64_t taken = 3, missed = 1, overwritten = 1;
  std::vector<TopSpec> top = {{true, 3, 2}, {false, 0x8001234, 1}};
  std::uint64_t top_other = 0;
  std::vector<SampleSpec> samples = {{30000, 0, {3}, {0x8001234, 0x8000100}}, {10000, 0, {3}, {0x10, 0}}};
  Bytes trailing;
  std::map<std::string, Bytes> raw;  // field name → its bytes instead of the encoding
};

inline Bytes make_body(const BodySpec& s) {
  BodyWriter w(s.raw);
  Bytes& b = w.bytes;
  if (s.reset_cause >= 0) w.u8("reset cause", static_cast<unsigned>(s.reset_cause));
  w.u8("configuration", s.config);
  w.u8("max samples", s.max_samples);
  w.u8("max frames", s.max_frames);
  w.u8("top frames", s.top_frames);
  if (s.version >= 2) w.u8("max stages", s.max_stages);
  w.uv("tick_hz", s.tick_hz);
  w.uv("report", s.report);
  w.u8("phase", s.phase);
  w.u8("cause", s.cause);
  w.u8("flags", s.flags);
  w.u8("loop_index", s.loop_index);
  w.uv("dispatch", s.dispatch);
  w.uv("start", s.start);
  w.uv("duration_ticks", s.duration);
  w.sv("end adjustment", s.end_adjust);
  w.uv("threshold_ticks", s.threshold);
  if (s.version >= 2) {
    w.uv("delayed_by_dispatch", s.delayed_by_dispatch);
    if (s.delayed_by_dispatch != 0) w.uv("delayed-by event", s.delayed_by_event);
  }
  w.uv("window_ticks", s.window);
  w.u8("presence", s.presence);
  if ((s.presence & 1u) != 0) w.uv("thread_cpu_us", s.thread_cpu);
  if ((s.presence & 2u) != 0) w.uv("thread_wait_us", s.thread_wait);
  if ((s.presence & 4u) != 0) w.uv("system_busy_permille", s.busy);
  if ((s.presence & 8u) != 0) w.uv("process_permille", s.process);
  w.uv("steal_us", s.steal);
  if (s.version >= 2) {
    w.u8("memory presence", s.memory_presence);
    w.field("memory values", [&] {
      for (const std::uint64_t v : s.memory) put_uv(b, v);
    });
  }
  w.uv("records_dropped", s.records_dropped);
  w.uv("notes_dropped", s.notes_dropped);
  w.uv("string count", s.strings.size());
  w.field("strings", [&] {
    for (const auto& [text, cut] : s.strings) put_str(b, text, cut);
  });
  if (s.version >= 2) {
    w.u8("stage_count", static_cast<unsigned>(s.stages.size()));
    w.field("stages", [&] {
      for (const StageSpec& x : s.stages) {
        put_uv(b, x.name);
        put_uv(b, x.ticks);
      }
    });
  }
  w.uv("samples_taken", s.taken);
  w.uv("samples_missed", s.missed);
  w.uv("samples_overwritten", s.overwritten);
  w.u8("top_count", static_cast<unsigned>(s.top.size()));
  w.uv("top_other", s.top_other);
  w.field("top entries", [&] {
    for (const TopSpec& t : s.top) {
      put_key(b, t.value, t.is_scope);
      put_uv(b, t.count);
    }
  });
  w.u8("sample_count", static_cast<unsigned>(s.samples.size()));
  w.field("samples", [&] {
    for (const SampleSpec& x : s.samples) {
      put_uv(b, x.time);
      put_sv(b, x.sequence);
      put_u8(b, static_cast<unsigned>(x.scopes.size()));
      put_u8(b, static_cast<unsigned>(x.pc_deltas.size()));
      for (const std::uint64_t i : x.scopes) put_uv(b, i);
      for (const std::int64_t d : x.pc_deltas) put_sv(b, d);
    }
  });
  b.insert(b.end(), s.trailing.begin(), s.trailing.end());
  return b;
}

struct HealthEventSpec {
  std::uint64_t name = 2;  // string index
  std::uint64_t dispatches = 100, deadline_misses = 1, missed_periods = 2, posted_ahead = 0;
  std::uint64_t p50 = 120, p95 = 250, p99 = 900, max_latency = 4000, period = 10000, deadline = 5000;
};

/// A `health` body (type 3, version 2), by default one window of 1 s at 1 MHz with idle time,
/// a histogram of 2 buckets, a memory value and 2 events.
struct HealthSpec {
  unsigned config = 0, max_events = 8;
  std::uint64_t tick_hz = 1000000, number = 5;
  unsigned loop_index = 1;
  std::uint64_t start = 4000000, window = 1000000, dispatches = 1000, busy = 452000;
  std::uint64_t idle = 548001;  // idle_ticks + 1; 0: no idle
  std::uint64_t blocks = 2, hangs = 1, max_duration = 180000;
  std::vector<std::pair<unsigned, std::uint64_t>> histogram = {{3, 900}, {17, 100}};
  unsigned memory_presence = 1;
  std::vector<std::uint64_t> memory = {123456};
  std::uint64_t health_dropped = 3;
  std::vector<std::pair<std::string, bool>> strings = {{"fw-1.0", false}, {"main", false}, {"tick", false}, {"display", false}};
  std::vector<HealthEventSpec> events = {HealthEventSpec{}, HealthEventSpec{3, 20, 0, 0, 1, 2000, 3000, 3500, 9000, 50000, 0}};
  Bytes trailing;
  std::map<std::string, Bytes> raw;  // field name → its bytes instead of the encoding
};

inline Bytes make_health_body(const HealthSpec& s) {
  BodyWriter w(s.raw);
  Bytes& b = w.bytes;
  w.u8("configuration", s.config);
  w.u8("max health events", s.max_events);
  w.uv("tick_hz", s.tick_hz);
  w.uv("number", s.number);
  w.u8("loop_index", s.loop_index);
  w.uv("start", s.start);
  w.uv("window", s.window);
  w.uv("dispatches", s.dispatches);
  w.uv("busy_ticks", s.busy);
  w.uv("idle", s.idle);
  w.uv("blocks", s.blocks);
  w.uv("hangs", s.hangs);
  w.uv("max_duration", s.max_duration);
  w.u8("histogram count", static_cast<unsigned>(s.histogram.size()));
  w.field("histogram", [&] {
    for (const auto& [bucket, count] : s.histogram) {
      put_u8(b, bucket);
      put_uv(b, count);
    }
  });
  w.u8("memory presence", s.memory_presence);
  w.field("memory values", [&] {
    for (const std::uint64_t v : s.memory) put_uv(b, v);
  });
  w.uv("health_dropped", s.health_dropped);
  w.uv("string count", s.strings.size());
  w.field("strings", [&] {
    for (const auto& [text, cut] : s.strings) put_str(b, text, cut);
  });
  w.u8("event_count", static_cast<unsigned>(s.events.size()));
  w.field("events", [&] {
    for (const HealthEventSpec& e : s.events) {
      for (const std::uint64_t v : {e.name, e.dispatches, e.deadline_misses, e.missed_periods, e.posted_ahead, e.p50,
                                    e.p95, e.p99, e.max_latency, e.period, e.deadline}) {
        put_uv(b, v);
      }
    }
  });
  b.insert(b.end(), s.trailing.begin(), s.trailing.end());
  return b;
}

inline Bytes make_packet(const HealthSpec& s) { return make_packet(make_health_body(s), 3u, 2u); }

inline Bytes make_packet(const BodySpec& s) { return make_packet(make_body(s), s.reset_cause >= 0 ? 2u : 1u, s.version); }

inline Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
inline Bytes bytes_of(const std::string& text) { return Bytes(text.begin(), text.end()); }

}  // namespace loopcanary::tool::test
