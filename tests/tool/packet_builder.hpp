// SPDX-License-Identifier: MIT
// A test-side builder of binary packets, written from docs/report-format.md ("Binary form")
// alone, independent of the core's encoder: its own CRC-32 (bit by bit), varints and body
// layout. A BodySpec describes a body field by field; `raw` replaces one field's bytes (by the
// field's name in the specification), so each malformed case is one override.
#pragma once

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

// CRC-32/ISO-HDLC as the specification gives it: reflected 0xEDB88320, init and xorout ~0.
inline std::uint32_t spec_crc32(const std::uint8_t* data, std::size_t size) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) != 0 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
  }
  return ~crc;
}

/// magic, version, type, length, body, CRC.
inline Bytes make_packet(const Bytes& body, unsigned type = 1, unsigned version = 2) {
  Bytes p{0xA5, 0x4C, static_cast<std::uint8_t>(version), static_cast<std::uint8_t>(type),
          static_cast<std::uint8_t>(body.size() & 0xFF), static_cast<std::uint8_t>(body.size() >> 8)};
  p.insert(p.end(), body.begin(), body.end());
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
  Bytes b;
  const auto field = [&](const char* name, auto write) {
    const auto it = s.raw.find(name);
    if (it != s.raw.end()) {
      b.insert(b.end(), it->second.begin(), it->second.end());
    } else {
      write();
    }
  };
  const auto u8 = [&](const char* name, unsigned v) { field(name, [&] { put_u8(b, v); }); };
  const auto uv = [&](const char* name, std::uint64_t v) { field(name, [&] { put_uv(b, v); }); };
  const auto sv = [&](const char* name, std::int64_t v) { field(name, [&] { put_sv(b, v); }); };
  if (s.reset_cause >= 0) u8("reset cause", static_cast<unsigned>(s.reset_cause));
  u8("configuration", s.config);
  u8("max samples", s.max_samples);
  u8("max frames", s.max_frames);
  u8("top frames", s.top_frames);
  if (s.version >= 2) u8("max stages", s.max_stages);
  uv("tick_hz", s.tick_hz);
  uv("report", s.report);
  u8("phase", s.phase);
  u8("cause", s.cause);
  u8("flags", s.flags);
  u8("loop_index", s.loop_index);
  uv("dispatch", s.dispatch);
  uv("start", s.start);
  uv("duration_ticks", s.duration);
  sv("end adjustment", s.end_adjust);
  uv("threshold_ticks", s.threshold);
  uv("window_ticks", s.window);
  u8("presence", s.presence);
  if ((s.presence & 1u) != 0) uv("thread_cpu_us", s.thread_cpu);
  if ((s.presence & 2u) != 0) uv("thread_wait_us", s.thread_wait);
  if ((s.presence & 4u) != 0) uv("system_busy_permille", s.busy);
  if ((s.presence & 8u) != 0) uv("process_permille", s.process);
  uv("steal_us", s.steal);
  if (s.version >= 2) {
    u8("memory presence", s.memory_presence);
    field("memory values", [&] {
      for (const std::uint64_t v : s.memory) put_uv(b, v);
    });
  }
  uv("records_dropped", s.records_dropped);
  uv("notes_dropped", s.notes_dropped);
  uv("string count", s.strings.size());
  field("strings", [&] {
    for (const auto& [text, cut] : s.strings) put_str(b, text, cut);
  });
  if (s.version >= 2) {
    u8("stage_count", static_cast<unsigned>(s.stages.size()));
    field("stages", [&] {
      for (const StageSpec& x : s.stages) {
        put_uv(b, x.name);
        put_uv(b, x.ticks);
      }
    });
  }
  uv("samples_taken", s.taken);
  uv("samples_missed", s.missed);
  uv("samples_overwritten", s.overwritten);
  u8("top_count", static_cast<unsigned>(s.top.size()));
  uv("top_other", s.top_other);
  field("top entries", [&] {
    for (const TopSpec& t : s.top) {
      put_key(b, t.value, t.is_scope);
      put_uv(b, t.count);
    }
  });
  u8("sample_count", static_cast<unsigned>(s.samples.size()));
  field("samples", [&] {
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

inline Bytes make_packet(const BodySpec& s) { return make_packet(make_body(s), s.reset_cause >= 0 ? 2u : 1u, s.version); }

inline Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
inline Bytes bytes_of(const std::string& text) { return Bytes(text.begin(), text.end()); }

}  // namespace loopcanary::tool::test
