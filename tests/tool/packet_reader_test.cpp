// SPDX-License-Identifier: MIT
// The binary capture reader (sim/tool/packet_reader.hpp) against packets built from
// docs/report-format.md by the test-side builder (packet_builder.hpp): every field, the scan's
// accounting of garbage, damaged, torn, newer and unknown packets, every malformed body, a
// streamed capture, the tool's Reader on capture files; then round trips through the core's
// encode_packet.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "loopcanary/format.hpp"
#include "loopcanary/packet.hpp"
#include "commands.hpp"
#include "model.hpp"
#include "packet_builder.hpp"
#include "packet_reader.hpp"
#include "test_util.hpp"
#include "arm_cfi_fixture.hpp"
#include "../record_fixtures.hpp"
#include "../top_stack.hpp"

namespace lt = loopcanary::tool;
using lt::WarningKind;
using lt::test::Bytes;
using lt::test::BodySpec;
using lt::test::make_body;
using lt::test::make_packet;
using lt::test::operator+;

namespace {

struct Problem {
  WarningKind kind;
  std::uint64_t offset;
  std::string what;
};

struct Decoded {
  std::vector<lt::DecodedRecord> records;
  std::vector<Problem> problems;
  lt::CaptureStats stats;
};

// Decodes a capture in memory, or streamed in `chunk`-byte reads when chunk > 0; device samples'
// stack evidence unwound with `unwind` (null: none).
Decoded decode(const Bytes& capture, std::size_t chunk = 0, std::shared_ptr<const lt::StackUnwind> unwind = nullptr) {
  Decoded d;
  lt::CaptureReader reader;
  reader.set_unwind(std::move(unwind));
  const auto on_record = [&d](lt::DecodedRecord& r) { d.records.push_back(std::move(r)); };
  const auto on_problem = [&d](WarningKind kind, std::uint64_t offset, const std::string& what) {
    d.problems.push_back(Problem{kind, offset, what});
  };
  if (chunk == 0) {
    reader.read(capture.data(), capture.size(), on_record, on_problem);
  } else {
    std::size_t done = 0;
    reader.read(
        [&](std::uint8_t* to, std::size_t size) -> long {
          const std::size_t n = std::min({size, chunk, capture.size() - done});
          std::memcpy(to, capture.data() + done, n);
          done += n;
          return static_cast<long>(n);
        },
        on_record, on_problem);
  }
  d.stats = reader.stats();
  return d;
}

std::string str(const char* s) { return s == nullptr ? std::string("(null)") : std::string(s); }
std::string scope(loopcanary::Frame f) { return str(reinterpret_cast<const char*>(f)); }

std::string json(const lt::DecodedRecord& r) {
  std::string line;
  lt::format_record_json(r, line);
  return line;
}

// The report numbers of the records, in order.
std::vector<std::uint32_t> reports(const Decoded& d) {
  std::vector<std::uint32_t> out;
  for (const lt::DecodedRecord& r : d.records) out.push_back(r.record.report);
  return out;
}

BodySpec with_report(std::uint64_t report) {
  BodySpec s;
  s.report = report;
  return s;
}

// A good packet, a bad one, a good one: exactly one problem of `kind` at the bad one's offset,
// and both good ones decoded.
void expect_only_problem(const Bytes& bad, WarningKind kind, const std::string& what_has) {
  const Bytes a = make_packet(with_report(1));
  const Bytes b = make_packet(with_report(2));
  const Decoded d = decode(a + bad + b);
  ASSERT_EQ(d.problems.size(), 1u) << (d.problems.empty() ? "" : d.problems[0].what);
  EXPECT_EQ(d.problems[0].kind, kind) << lt::to_string(d.problems[0].kind) << ": " << d.problems[0].what;
  EXPECT_EQ(d.problems[0].offset, a.size()) << d.problems[0].what;
  EXPECT_NE(d.problems[0].what.find(what_has), std::string::npos) << d.problems[0].what;
  EXPECT_EQ(reports(d), (std::vector<std::uint32_t>{1, 2}));
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.records[1].offset, a.size() + bad.size());
}

}  // namespace

// ---- Fields.

TEST(PacketReader, DecodesEveryFieldOfATypicalRecord) {
  const Bytes packet = make_packet(BodySpec{});
  const Decoded d = decode(packet);
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const lt::DecodedRecord& dr = d.records[0];
  EXPECT_EQ(dr.offset, 0u);
  EXPECT_FALSE(dr.previous_boot);
  const loopcanary::BlockRecord& r = dr.record;
  EXPECT_EQ(r.report, 4u);
  EXPECT_EQ(r.phase, loopcanary::Phase::final);
  EXPECT_EQ(r.cause, loopcanary::Cause::running);
  EXPECT_EQ(r.flags, 0u);
  EXPECT_EQ(r.loop_index, 1u);
  EXPECT_EQ(str(r.qualifier), "fw-1.0");
  EXPECT_EQ(str(r.loop), "main");
  ASSERT_NE(r.event, nullptr);
  EXPECT_EQ(str(r.event->name), "tick");
  EXPECT_EQ(r.dispatch, 7u);
  EXPECT_EQ(r.tick_hz, 1000000u);
  EXPECT_EQ(r.start, 1000u);
  EXPECT_EQ(r.duration_ticks, 250000u);
  EXPECT_EQ(r.end, 251000u);
  EXPECT_EQ(r.threshold_ticks, 100000u);
  EXPECT_EQ(r.window_ticks, 200000u);
  EXPECT_TRUE(r.has_thread_cpu);
  EXPECT_EQ(r.thread_cpu_us, 150000u);
  EXPECT_TRUE(r.has_thread_wait);
  EXPECT_EQ(r.thread_wait_us, 20u);
  EXPECT_EQ(r.system_busy_permille, 900u);
  EXPECT_EQ(r.process_permille, 500u);
  EXPECT_EQ(r.steal_us, 3u);
  EXPECT_EQ(r.records_dropped, 1u);
  EXPECT_EQ(r.notes_dropped, 2u);
  EXPECT_EQ(r.samples_taken, 3u);
  EXPECT_EQ(r.samples_missed, 1u);
  EXPECT_EQ(r.samples_overwritten, 1u);
  ASSERT_EQ(r.top_count, 2u);
  EXPECT_TRUE(r.top[0].scope_count == 1);
  EXPECT_EQ(scope(r.top[0].frames[0]), "crc");
  EXPECT_EQ(r.top[0].count, 2u);
  EXPECT_FALSE(r.top[1].scope_count == 1);
  EXPECT_EQ(r.top[1].frames[0], 0x8001234u);
  EXPECT_EQ(r.top[1].count, 1u);
  EXPECT_EQ(r.top_other, 0u);
  ASSERT_EQ(r.sample_count, 2u);
  const loopcanary::Sample& s0 = r.samples[0];
  EXPECT_EQ(s0.at, 31000u);
  EXPECT_EQ(s0.seq, 13u);  // 2 × 7 − 1
  ASSERT_EQ(s0.scope_count, 1u);
  ASSERT_EQ(s0.pc_count, 2u);
  EXPECT_EQ(s0.frames[0], r.top[0].frames[0]);  // one string, one pointer
  EXPECT_EQ(s0.frames[1], 0x8001234u);
  EXPECT_EQ(s0.frames[2], 0x8000100u);
  const loopcanary::Sample& s1 = r.samples[1];
  EXPECT_EQ(s1.at, 41000u);
  EXPECT_EQ(s1.frames[1], 0x8001244u);  // deltas from the previous sample's PC i
  EXPECT_EQ(s1.frames[2], 0x8000100u);
  EXPECT_EQ(d.stats.packets, 1u);
  EXPECT_EQ(d.stats.decoded, 1u);
  EXPECT_EQ(d.stats.skipped_bytes, 0u);
  EXPECT_EQ(d.stats.bytes, packet.size());
}

TEST(PacketReader, AbsentCpuEvidenceIsUnknown) {
  BodySpec s;
  s.presence = 4;  // only the machine's share
  const Decoded d = decode(make_packet(s));
  ASSERT_EQ(d.records.size(), 1u) << (d.problems.empty() ? "" : d.problems[0].what);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_FALSE(r.has_thread_cpu);
  EXPECT_EQ(r.thread_cpu_us, 0u);
  EXPECT_FALSE(r.has_thread_wait);
  EXPECT_EQ(r.thread_wait_us, 0u);
  EXPECT_EQ(r.system_busy_permille, 900u);
  EXPECT_EQ(r.process_permille, loopcanary::kUnknownPermille);
  EXPECT_NE(json(d.records[0]).find("\"thread_us\":null"), std::string::npos) << json(d.records[0]);
}

// Version 2: the stage names come first in the string table (3, 4; an empty one is null),
// then the stage count and per stage a name index and its ticks.
BodySpec with_stages() {
  BodySpec s;
  s.strings = {{"fw-1.0", false}, {"main", false}, {"tick", false}, {"input", false}, {"compute", false},
               {"", false}, {"crc", false}};
  s.stages = {{3, 1500}, {4, 180000}, {5, 20}, {3, 0xFFFFFFFFu}};
  s.top = {{true, 6, 2}, {false, 0x8001234, 1}};
  s.samples = {{30000, 0, {6}, {0x8001234, 0x8000100}}, {10000, 0, {6}, {0x10, 0}}};
  return s;
}

TEST(PacketReader, DecodesTheStagesOfAVersion2Record) {
  const Decoded d = decode(make_packet(with_stages()));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  ASSERT_EQ(r.stage_count, 4u);
  EXPECT_EQ(str(r.stages[0].name), "input");
  EXPECT_EQ(r.stages[0].ticks, 1500u);
  EXPECT_EQ(str(r.stages[1].name), "compute");
  EXPECT_EQ(r.stages[1].ticks, 180000u);
  EXPECT_EQ(r.stages[2].name, nullptr);  // an empty name decodes as a null one
  EXPECT_EQ(r.stages[2].ticks, 20u);
  EXPECT_EQ(r.stages[3].name, r.stages[0].name);  // one string, one pointer
  EXPECT_EQ(r.stages[3].ticks, 0xFFFFFFFFu);
  EXPECT_EQ(scope(r.top[0].frames[0]), "crc");
  EXPECT_EQ(scope(r.samples[1].frames[0]), "crc");
  // The JSON line (format_json) carries them, and the tool's reader reads them back.
  const std::string line = json(d.records[0]);
  EXPECT_NE(line.find("\"flags\":[],\"stages\":[{\"name\":\"input\",\"us\":1500},{\"name\":\"compute\",\"us\":180000},"
                      "{\"name\":\"?\",\"us\":20},{\"name\":\"input\",\"us\":4294967295}],"),
            std::string::npos)
      << line;
  lt::LogRecord record;
  WarningKind kind{};
  std::string what;
  ASSERT_TRUE(lt::parse_record(line.data(), line.size(), record, kind, what)) << what;
  ASSERT_EQ(record.stages.size(), 4u);
  EXPECT_EQ(record.stages[1].name, "compute");
  EXPECT_EQ(record.stages[1].us, 180000u);
}

// Version 1 (no max stages byte, no memory values, no stages) is read as before: the same record
// as version 2 without them.
TEST(PacketReader, Version1RecordsDecodeWithoutStages) {
  BodySpec v1;
  v1.version = 1;
  const Bytes p1 = make_packet(v1);
  ASSERT_EQ(p1[2], 1u);
  // max stages, delayed_by_dispatch, memory presence, stage_count
  ASSERT_EQ(make_body(v1).size() + 4, make_body(BodySpec{}).size());
  const Decoded d1 = decode(p1);
  ASSERT_TRUE(d1.problems.empty()) << d1.problems[0].what;
  ASSERT_EQ(d1.records.size(), 1u);
  EXPECT_EQ(d1.records[0].record.stage_count, 0u);
  const Decoded d2 = decode(make_packet(BodySpec{}));
  ASSERT_EQ(d2.records.size(), 1u);
  EXPECT_EQ(json(d1.records[0]), json(d2.records[0]));
  EXPECT_NE(json(d1.records[0]).find("\"stages\":[]"), std::string::npos) << json(d1.records[0]);
  // Both versions in one capture.
  BodySpec v1b = with_report(7);
  v1b.version = 1;
  const Decoded mixed = decode(make_packet(v1b) + make_packet(with_stages()) + make_packet(v1b));
  EXPECT_TRUE(mixed.problems.empty()) << mixed.problems[0].what;
  ASSERT_EQ(mixed.records.size(), 3u);
  EXPECT_EQ(mixed.records[0].record.stage_count, 0u);
  EXPECT_EQ(mixed.records[1].record.stage_count, 4u);
  EXPECT_EQ(mixed.records[2].record.stage_count, 0u);
}

// A build without stages (max stages 0) sends none; its records decode.
TEST(PacketReader, ABuildWithoutStagesDecodes) {
  BodySpec s;
  s.max_stages = 0;
  const Decoded d = decode(make_packet(s));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].record.stage_count, 0u);
}

// Version 2's memory values: one `uv` 64 per presence bit, in bit order; the others unknown.
// Version 1 has none (all unknown). A presence bit past the defined values is malformed.
TEST(PacketReader, DecodesTheMemoryValuesOfAVersion2Record) {
  BodySpec s;
  s.memory_presence = (1u << loopcanary::kMemoryResident) | (1u << loopcanary::kMemoryStackPeak) |
                      (1u << loopcanary::kMemoryStackSize);
  s.memory = {123456789012u, 0, 8192};
  const Decoded d = decode(make_packet(s));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::MemoryReading& m = d.records[0].record.memory;
  EXPECT_EQ(m.valid, s.memory_presence);
  EXPECT_EQ(m.value[loopcanary::kMemoryResident], 123456789012u);
  EXPECT_EQ(m.value[loopcanary::kMemoryStackPeak], 0u);  // known, and 0
  EXPECT_EQ(m.value[loopcanary::kMemoryStackSize], 8192u);
  EXPECT_FALSE(m.has(loopcanary::kMemoryHeapUsed));
  BodySpec v1;
  v1.version = 1;
  const Decoded d1 = decode(make_packet(v1));
  ASSERT_EQ(d1.records.size(), 1u) << (d1.problems.empty() ? "" : d1.problems[0].what);
  EXPECT_EQ(d1.records[0].record.memory.valid, 0u);
  // Offsets: memory presence follows steal_us.
  BodySpec bad = with_report(9);
  bad.memory_presence = 1u << loopcanary::kMemoryValues;
  bad.memory = {1};
  BodySpec before = bad;
  for (const char* f : {"memory presence", "memory values", "records_dropped", "notes_dropped", "string count", "strings",
                        "stage_count", "stages", "samples_taken", "samples_missed", "samples_overwritten", "top_count",
                        "top_other", "top entries", "sample_count", "samples"}) {
    before.raw[f] = Bytes{};
  }
  const std::size_t at = make_body(before).size();
  expect_only_problem(make_packet(bad), WarningKind::malformed_packet,
                      "at body byte " + std::to_string(at) + " (memory presence): bits other than 0.." +
                          std::to_string(loopcanary::kMemoryValues - 1) + " set (" +
                          std::to_string(1u << loopcanary::kMemoryValues) + ")");
  bad.memory_presence = 1;
  bad.raw["memory values"] = Bytes{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x03};
  expect_only_problem(make_packet(bad), WarningKind::malformed_packet,
                      "at body byte " + std::to_string(at + 1) + " (memory value): value over the field's 64 bits");
}

// The offset of `field` in the body: the size of the body with that field and every later one
// left out (fields after the string table, in the specification's order).
std::size_t body_offset_of(BodySpec s, const std::string& field) {
  const char* const later[] = {"stage_count", "stages", "samples_taken", "samples_missed", "samples_overwritten",
                               "top_count", "top_other", "top entries", "sample_count", "samples"};
  bool from = false;
  for (const char* f : later) {
    from = from || field == f;
    if (from) s.raw[f] = Bytes{};
  }
  return make_body(s).size();
}

TEST(PacketReader, EveryMalformedStageNamesItsFieldAndBodyOffset) {
  struct Case {
    const char* name;
    void (*change)(BodySpec&);
    const char* field;  // where the problem starts
    std::size_t stage;  // for "stages": the entry's index
    const char* what;
  };
  const Case cases[] = {
      {"stage_count over the packet's max stages", [](BodySpec& s) { s.max_stages = 3; }, "stage_count", 0,
       "(stage_count): 4 is over the packet's max stages 3"},
      {"a stage from a build without stages", [](BodySpec& s) { s.max_stages = 0; }, "stage_count", 0,
       "(stage_count): 4 is over the packet's max stages 0"},
      {"stage name past the table", [](BodySpec& s) { s.stages[1].name = 7; }, "stages", 1,
       "(stage name): string index 7 is not in 3..6"},
      {"stage name of a record name", [](BodySpec& s) { s.stages[0].name = 2; }, "stages", 0,
       "(stage name): string index 2 is not in 3..6"},
      {"stage name over 32 bits", [](BodySpec& s) { s.stages[2].name = std::uint64_t{1} << 32; }, "stages", 2,
       "(stage name): value over the field's 32 bits"},
      {"stage ticks over 32 bits", [](BodySpec& s) { s.stages[3].ticks = std::uint64_t{1} << 32; }, "stages", 3,
       "(stage ticks): value over the field's 32 bits"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    BodySpec s = with_stages();
    s.report = 9;
    c.change(s);
    std::size_t at = body_offset_of(s, c.field);
    if (std::string(c.field) == "stages") {  // the entries before this one, then its name when the ticks are bad
      for (std::size_t i = 0; i < c.stage; ++i) {
        Bytes b;
        lt::test::put_uv(b, s.stages[i].name);
        lt::test::put_uv(b, s.stages[i].ticks);
        at += b.size();
      }
      if (std::string(c.what).find("stage ticks") != std::string::npos) {
        Bytes b;
        lt::test::put_uv(b, s.stages[c.stage].name);
        at += b.size();
      }
    }
    expect_only_problem(make_packet(s), WarningKind::malformed_packet,
                        "malformed packet body at body byte " + std::to_string(at) + " " + c.what);
  }
  // The body ends inside a stage's ticks.
  BodySpec cut = with_stages();
  const std::size_t stages_at = body_offset_of(cut, "stages");
  for (const char* f : {"samples_taken", "samples_missed", "samples_overwritten", "top_count", "top_other",
                        "top entries", "sample_count", "samples"}) {
    cut.raw[f] = Bytes{};
  }
  cut.raw["stages"] = Bytes{3, 0x80};
  expect_only_problem(make_packet(cut), WarningKind::malformed_packet,
                      "at body byte " + std::to_string(stages_at + 1) + " (stage ticks): the body ends inside this field");
  // The version byte decides the layout: a version-2 body sent as version 1 does not decode; a
  // version-1 body sent as version 2 has its tick_hz byte (0xC0) where max stages is.
  expect_only_problem(make_packet(make_body(with_stages()), 1, 1), WarningKind::malformed_packet,
                      "malformed packet body");
  BodySpec v1 = with_report(9);
  v1.version = 1;
  expect_only_problem(make_packet(make_body(v1), 1, 2), WarningKind::unknown_config,
                      "at body byte 4 (max stages): 192 is not in 0..16");
}

TEST(PacketReader, TickArithmeticWrapsModulo2To32) {
  BodySpec s;
  s.start = 0xFFFFFFF0u;
  s.duration = 0x20;
  s.end_adjust = -3;
  s.dispatch = 0x80000001u;  // 2 × dispatch − 1 wraps too
  s.samples = {{0x18, -2, {3}, {0x10}}, {0xFFFFFFFFu, 1, {}, {-0x20}}};
  const Decoded d = decode(make_packet(s));
  ASSERT_EQ(d.records.size(), 1u) << (d.problems.empty() ? "" : d.problems[0].what);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_EQ(r.end, 0x0Du);
  EXPECT_EQ(r.samples[0].at, 0x08u);
  EXPECT_EQ(r.samples[0].seq, 0xFFFFFFFFu);  // 2 × 0x80000001 − 1 − 2 modulo 2^32
  EXPECT_EQ(r.samples[1].at, 0x07u);
  EXPECT_EQ(r.samples[1].seq, 2u);
  EXPECT_EQ(r.samples[1].frames[0], 0xFFFFFFF0u);  // 32-bit PCs: 0x10 − 0x20 modulo 2^32
}

// Configuration bit 2: the sender left the cause to the decoder (cause 0 sent), which applies the
// cause rule (loopcanary::derive, the default CauseRule) to the decoded evidence.
TEST(PacketReader, DerivedFieldsAreComputedWhenTheDeviceLeftThemToTheHost) {
  BodySpec s;
  s.cause = 0;
  s.thread_cpu = s.window;  // thread CPU time equal to the whole window (tick_hz 1 MHz): running
  const Decoded as_sent = decode(make_packet(s));
  ASSERT_EQ(as_sent.records.size(), 1u) << (as_sent.problems.empty() ? "" : as_sent.problems[0].what);
  EXPECT_EQ(as_sent.records[0].record.cause, loopcanary::Cause::unknown);  // bit 2 clear: as sent
  s.config = 4;
  const Decoded derived = decode(make_packet(s));
  ASSERT_EQ(derived.records.size(), 1u) << (derived.problems.empty() ? "" : derived.problems[0].what);
  EXPECT_EQ(derived.records[0].record.cause, loopcanary::Cause::running);
  s.thread_cpu = s.window / 10;  // mostly off the CPU, only 20 µs of it runnable: waiting
  const Decoded waiting = decode(make_packet(s));
  ASSERT_EQ(waiting.records.size(), 1u);
  EXPECT_EQ(waiting.records[0].record.cause, loopcanary::Cause::waiting);
}

TEST(PacketReader, SixtyFourBitProgramCounters) {
  if (sizeof(loopcanary::Frame) < 8) GTEST_SKIP() << "a 64-bit host reads 64-bit PCs";
  BodySpec s;
  s.config = 1;
  const std::uint64_t high = 0xFFFF800012345678u;  // its top key needs 65 bits
  s.top = {{false, high, 1}};
  s.samples = {{5, 0, {}, {static_cast<std::int64_t>(high)}}, {5, 0, {}, {static_cast<std::int64_t>(0x10)}}};
  const Decoded d = decode(make_packet(s));
  ASSERT_EQ(d.records.size(), 1u) << (d.problems.empty() ? "" : d.problems[0].what);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_EQ(r.top[0].frames[0], high);
  EXPECT_EQ(r.samples[0].frames[0], high);
  EXPECT_EQ(r.samples[1].frames[0], high + 0x10);
}

TEST(PacketReader, CutNamesGetAnEllipsisAndEmptyNamesPrintAsTheFormatsPrintNull) {
  BodySpec s;
  const std::string first31(31, 'x');
  s.strings = {{"", false}, {"", false}, {first31, true}, {"", false}};
  const Decoded d = decode(make_packet(s));
  ASSERT_EQ(d.records.size(), 1u) << (d.problems.empty() ? "" : d.problems[0].what);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_EQ(str(r.qualifier), "");
  EXPECT_EQ(str(r.event->name), first31 + "...");
  const std::string line = json(d.records[0]);
  EXPECT_NE(line.find("\"qualifier\":\"\",\"loop\":\"?\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"top\":[{\"count\":2,\"scopes\":[\"?\"],\"pcs\":[],\"leaf_high\":null}"), std::string::npos) << line;
}

TEST(PacketReader, PreviousBootRecordsCarryTheResetCause) {
  BodySpec s;
  s.reset_cause = 3;
  s.phase = 1;
  const Bytes packet = make_packet(s);
  ASSERT_EQ(packet[3], 2u);
  const Decoded d = decode(packet);
  ASSERT_EQ(d.records.size(), 1u) << (d.problems.empty() ? "" : d.problems[0].what);
  EXPECT_TRUE(d.records[0].previous_boot);
  EXPECT_EQ(d.records[0].reset_cause, loopcanary::ResetCause::software);
  EXPECT_EQ(d.records[0].record.phase, loopcanary::Phase::hang);
  const std::string line = json(d.records[0]);
  // A version 2 packet: its top entries hold the innermost frame only, as the line says.
  const std::string tail =
      "]}],\"previous_boot\":true,\"reset_cause\":\"software\",\"top_innermost\":true}";
  ASSERT_GT(line.size(), tail.size());
  EXPECT_EQ(line.substr(line.size() - tail.size()), tail) << line;
  // Still one record the tool's reader accepts.
  lt::LogRecord record;
  WarningKind kind{};
  std::string what;
  EXPECT_TRUE(lt::parse_record(line.data(), line.size(), record, kind, what)) << what;
  const char* names[] = {"unknown", "power_on", "reset_pin", "software", "watchdog", "lockup", "brown_out"};
  for (int c = 0; c < 7; ++c) EXPECT_STREQ(loopcanary::to_string(static_cast<loopcanary::ResetCause>(c)), names[c]);
  // A block packet has no such members.
  EXPECT_EQ(json(decode(make_packet(BodySpec{})).records.at(0)).find("previous_boot"), std::string::npos);
}

TEST(PacketReader, DecodedRecordsKeepTheirNamesWhenMoved) {
  std::vector<lt::DecodedRecord> kept;
  std::vector<std::string> lines;
  for (std::uint64_t i = 1; i <= 40; ++i) {  // the vector reallocates several times
    BodySpec s = with_report(i);
    s.strings[1].first = "loop-" + std::to_string(i);
    for (lt::DecodedRecord& r : decode(make_packet(s)).records) {
      lines.push_back(json(r));
      kept.push_back(std::move(r));
    }
  }
  ASSERT_EQ(kept.size(), 40u);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(str(kept[i].record.loop), "loop-" + std::to_string(i + 1));
    EXPECT_EQ(json(kept[i]), lines[i]);
  }
  lt::DecodedRecord moved = std::move(kept[3]);
  EXPECT_EQ(json(moved), lines[3]);
}

// ---- The scan.

TEST(PacketReader, GarbageBeforeBetweenAndAfterPacketsIsCountedInSpans) {
  const Bytes a = make_packet(with_report(1));
  const Bytes b = make_packet(with_report(2));
  const Bytes capture = lt::test::bytes_of("boot\r\n") + a + lt::test::bytes_of("xyz") + b + Bytes{0xA5, 0x00, 0x4C};
  const Decoded d = decode(capture);
  EXPECT_EQ(reports(d), (std::vector<std::uint32_t>{1, 2}));
  ASSERT_EQ(d.problems.size(), 3u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::garbage);
  EXPECT_EQ(d.problems[0].offset, 0u);
  EXPECT_NE(d.problems[0].what.find("6 bytes of garbage"), std::string::npos) << d.problems[0].what;
  EXPECT_EQ(d.problems[1].kind, WarningKind::garbage);
  EXPECT_EQ(d.problems[1].offset, 6 + a.size());
  EXPECT_NE(d.problems[1].what.find("3 bytes"), std::string::npos) << d.problems[1].what;
  EXPECT_EQ(d.problems[2].kind, WarningKind::garbage);
  EXPECT_EQ(d.problems[2].offset, 6 + a.size() + 3 + b.size());
  EXPECT_EQ(d.stats.skipped_bytes, 12u);
  EXPECT_EQ(d.records[0].offset, 6u);
}

TEST(PacketReader, APacketWithALostByteFailsItsCrcAndTheNextIsRead) {
  Bytes a = make_packet(with_report(1));
  a.erase(a.begin() + 20);
  const Bytes b = make_packet(with_report(2));
  const Decoded d = decode(a + b);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::crc_mismatch);
  EXPECT_EQ(d.problems[0].offset, 0u);
  EXPECT_NE(d.problems[0].what.find(std::to_string(a.size()) + " bytes skipped"), std::string::npos) << d.problems[0].what;
  EXPECT_EQ(reports(d), (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(d.records[0].offset, a.size());
}

TEST(PacketReader, ADamagedByteIsACrcMismatch) {
  Bytes bad = make_packet(with_report(9));
  bad[30] ^= 0x40;
  expect_only_problem(bad, WarningKind::crc_mismatch, "CRC mismatch");
  Bytes bad_crc = make_packet(with_report(9));
  bad_crc.back() ^= 1;
  expect_only_problem(bad_crc, WarningKind::crc_mismatch, std::to_string(bad_crc.size()) + " bytes skipped");
}

TEST(PacketReader, AMagicPairInsideADamagedPacketIsPartOfItsOneMismatch) {
  BodySpec s = with_report(9);
  // The magic inside the body, then a header whose 12 bytes lie inside the damaged packet.
  s.strings[3].first = std::string("x\xA5L\x01\x01\x02\x00yy", 9);
  Bytes bad = make_packet(s);
  bad[8] ^= 0x02;
  expect_only_problem(bad, WarningKind::crc_mismatch, std::to_string(bad.size()) + " bytes skipped");
}

TEST(PacketReader, TwoDamagedPacketsInARowAreTwoCrcMismatches) {
  const Bytes a = make_packet(with_report(1));
  Bytes x = make_packet(with_report(8)), y = make_packet(with_report(9));
  x[25] ^= 1;
  y[25] ^= 1;
  const Bytes b = make_packet(with_report(2));
  const Decoded d = decode(a + x + lt::test::bytes_of("??") + y + b);
  ASSERT_EQ(d.problems.size(), 3u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::crc_mismatch);
  EXPECT_EQ(d.problems[0].offset, a.size());
  EXPECT_EQ(d.problems[1].kind, WarningKind::garbage);
  EXPECT_EQ(d.problems[1].offset, a.size() + x.size());
  EXPECT_EQ(d.problems[2].kind, WarningKind::crc_mismatch);
  EXPECT_EQ(d.problems[2].offset, a.size() + x.size() + 2);
  EXPECT_EQ(reports(d), (std::vector<std::uint32_t>{1, 2}));
}

TEST(PacketReader, ATruncatedTailIsATornTail) {
  const Bytes a = make_packet(with_report(1));
  const Bytes b = make_packet(with_report(2));
  for (const std::size_t keep : {std::size_t{1}, std::size_t{5}, std::size_t{9}, b.size() - 1}) {
    const Decoded d = decode(a + Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(keep)));
    EXPECT_EQ(reports(d), (std::vector<std::uint32_t>{1}));
    if (keep == 1) {  // a lone 0xA5: no magic pair, garbage
      ASSERT_EQ(d.problems.size(), 1u);
      EXPECT_EQ(d.problems[0].kind, WarningKind::garbage);
      continue;
    }
    ASSERT_EQ(d.problems.size(), 1u) << keep;
    EXPECT_EQ(d.problems[0].kind, WarningKind::torn_tail) << d.problems[0].what;
    EXPECT_EQ(d.problems[0].offset, a.size());
    EXPECT_NE(d.problems[0].what.find(keep < 10 ? "inside a packet header" : std::to_string(keep) + " of its " +
                                                                                 std::to_string(b.size()) + " bytes"),
              std::string::npos)
        << d.problems[0].what;
    EXPECT_EQ(d.stats.skipped_bytes, keep);
  }
}

TEST(PacketReader, AHeaderClaimingMoreThanTheCaptureHoldsBeforeAWholePacketIsGarbage) {
  const Bytes a = make_packet(with_report(1));
  const Decoded d = decode(Bytes{0xA5, 0x4C, 0x01, 0x01, 0xFF, 0xFF} + a);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::garbage);
  EXPECT_EQ(d.problems[0].offset, 0u);
  EXPECT_EQ(reports(d), (std::vector<std::uint32_t>{1}));
}

TEST(PacketReader, ANewerVersionIsSkippedWhole) {
  expect_only_problem(make_packet(make_body(with_report(9)) + Bytes{1, 2, 3}, 1, 5), WarningKind::unknown_version,
                      "format version 5 (this tool reads 1 to 4)");
  expect_only_problem(make_packet(make_body(with_report(9)), 1, 0), WarningKind::unknown_version, "format version 0");
}

TEST(PacketReader, AnUnknownTypeIsSkipped) {
  expect_only_problem(make_packet(make_body(with_report(9)), 8), WarningKind::unknown_type, "type 8");
}

TEST(PacketReader, AConfigurationItDoesNotKnow) {
  BodySpec s = with_report(9);
  s.config = 8;
  expect_only_problem(make_packet(s), WarningKind::unknown_config, "configuration");
  s = with_report(9);
  s.max_samples = 3;
  expect_only_problem(make_packet(s), WarningKind::unknown_config, "max samples");
  s = with_report(9);
  s.max_samples = 0;
  expect_only_problem(make_packet(s), WarningKind::unknown_config, "max samples");
  s = with_report(9);
  s.max_frames = 65;
  expect_only_problem(make_packet(s), WarningKind::unknown_config, "max frames");
  s = with_report(9);
  s.top_frames = 0;
  expect_only_problem(make_packet(s), WarningKind::unknown_config, "top frames");
  // Version 2's max stages is 0..16; its offset is the byte after top frames.
  for (const unsigned max_stages : {17u, 255u}) {
    s = with_report(9);
    s.max_stages = max_stages;
    expect_only_problem(make_packet(s), WarningKind::unknown_config,
                        "configuration this tool does not know at body byte 4 (max stages): " +
                            std::to_string(max_stages) + " is not in 0..16");
  }
}

TEST(PacketReader, LargerCapacitiesDecodeWhenTheCountsFit) {
  BodySpec s;
  s.max_samples = 128;
  s.max_frames = 64;
  s.top_frames = 64;
  s.max_stages = 16;
  const Decoded d = decode(make_packet(s));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].record.sample_count, 2u);
}

TEST(PacketReader, CountsOverThisBuildsCapacitiesAreAConfigurationItDoesNotKnow) {
  BodySpec s = with_report(9);
  s.max_samples = 128;
  s.samples.assign(loopcanary::kMaxSamples + 1, lt::test::SampleSpec{1, 0, {3}, {}});
  expect_only_problem(make_packet(s), WarningKind::unknown_config, "LOOPCANARY_MAX_SAMPLES");
  s = with_report(9);
  s.max_frames = 64;
  s.samples = {{1, 0, std::vector<std::uint64_t>(loopcanary::kMaxFrames + 1, 3), {}}};
  expect_only_problem(make_packet(s), WarningKind::unknown_config, "LOOPCANARY_MAX_FRAMES");
  s = with_report(9);
  s.top_frames = 64;
  s.top.assign(loopcanary::kTopFrames + 1, lt::test::TopSpec{false, 0x100, 1});
  expect_only_problem(make_packet(s), WarningKind::unknown_config, "LOOPCANARY_TOP_FRAMES");
  if (loopcanary::kMaxStages < 16) {
    s = with_report(9);
    s.max_stages = 16;
    s.stages.assign(loopcanary::kMaxStages + 1, lt::test::StageSpec{3, 10});
    expect_only_problem(make_packet(s), WarningKind::unknown_config,
                        "(stage_count): " + std::to_string(loopcanary::kMaxStages + 1) +
                            " stages do not fit this build's LOOPCANARY_MAX_STAGES " +
                            std::to_string(loopcanary::kMaxStages));
  }
}

TEST(PacketReader, EveryMalformedBodyIsRejectedAndTheNextPacketRead) {
  struct Case {
    const char* name;
    void (*change)(BodySpec&);
    const char* what;
  };
  const Case cases[] = {
      {"varint of 11 bytes", [](BodySpec& s) { s.raw["tick_hz"] = Bytes{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}; },
       "varint longer than 10 bytes"},
      {"uv 32 over 32 bits", [](BodySpec& s) { s.report = std::uint64_t{1} << 32; }, "(report): value over the field's 32 bits"},
      {"uv 64 over 64 bits", [](BodySpec& s) { s.raw["duration_ticks"] = Bytes{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x03}; },
       "(duration_ticks): value over the field's 64 bits"},
      {"uv 16 over 16 bits", [](BodySpec& s) { s.busy = 70000; }, "(system_busy_permille): value over the field's 16 bits"},
      {"sv 32 over 32 bits", [](BodySpec& s) { s.end_adjust = std::int64_t{1} << 31; }, "(end adjustment): value over the field's signed 32 bits"},
      {"32-bit PC delta over 32 bits", [](BodySpec& s) { s.samples[0].pc_deltas[0] = -(std::int64_t{1} << 31) - 1; }, "(pc): value over"},
      {"32-bit top PC over 32 bits", [](BodySpec& s) { s.top[1].value = std::uint64_t{1} << 32; }, "(top key): value over 32 bits"},
      {"ends inside a field", [](BodySpec& s) { s.raw["samples"] = [] {
         Bytes b;
         lt::test::put_uv(b, 5); lt::test::put_sv(b, 0); lt::test::put_u8(b, 0); lt::test::put_u8(b, 1); b.push_back(0x80);
         return b; }(); s.samples.resize(1); },
       "(pc): the body ends inside this field"},
      {"trailing bytes", [](BodySpec& s) { s.trailing = {0}; }, "1 bytes after the last sample"},
      {"scope index past the table", [](BodySpec& s) { s.samples[0].scopes = {4}; }, "(scope): string index 4 is not in 3..3"},
      {"scope index of a record name", [](BodySpec& s) { s.samples[0].scopes = {2}; }, "string index 2"},
      {"top scope index past the table", [](BodySpec& s) { s.top[0].value = 17; }, "(top key): string index 17"},
      {"top_count over the packet's top frames", [](BodySpec& s) { s.top_frames = 1; }, "over the packet's top frames 1"},
      {"sample_count over the packet's max samples", [](BodySpec& s) { s.max_samples = 1; }, "over the packet's max samples 1"},
      {"frames over the packet's max frames", [](BodySpec& s) { s.max_frames = 2; }, "over the packet's max frames 2"},
      {"phase 4", [](BodySpec& s) { s.phase = 4; }, "(phase): 4 is not one of 0..3"},
      {"phase 3 (deadline_miss) in version 1", [](BodySpec& s) { s.version = 1; s.phase = 3; }, "(phase): 3 is not one of 0..2"},
      {"a delaying dispatch on a final record", [](BodySpec& s) { s.delayed_by_dispatch = 6; },
       "(delayed_by_dispatch): 6 on a final record (deadline_miss only)"},
      {"delayed-by event index past the table", [](BodySpec& s) { s.phase = 3; s.delayed_by_dispatch = 6; s.delayed_by_event = 9; },
       "(delayed-by event): string index 9 is not in 2..3"},
      {"delayed-by event index of the loop name", [](BodySpec& s) { s.phase = 3; s.delayed_by_dispatch = 6; s.delayed_by_event = 1; },
       "(delayed-by event): string index 1 is not in 2..3"},
      {"cause 4", [](BodySpec& s) { s.cause = 4; }, "(cause)"},
      {"flag bit 4", [](BodySpec& s) { s.flags = 16; }, "(flags)"},
      {"presence bit 4", [](BodySpec& s) { s.presence = 16 | 15; }, "(presence)"},
      {"string count 2", [](BodySpec& s) { s.strings.resize(2); s.top = {}; s.samples = {}; }, "(string count): 2 is less than 3"},
      {"string count over the body", [](BodySpec& s) { s.raw["string count"] = Bytes{0xFF, 0xFF, 0xFF, 0xFF, 0x0F}; }, "(string count)"},
      {"name longer than the body", [](BodySpec& s) { s.raw["strings"] = Bytes{0x7E}; }, "(string)"},
      {"NUL inside a name", [](BodySpec& s) { s.strings[1].first = std::string("ma\0in", 5); }, "NUL"},
      {"reset cause 7", [](BodySpec& s) { s.reset_cause = 7; }, "(reset cause)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    BodySpec s = with_report(9);
    c.change(s);
    expect_only_problem(make_packet(s), WarningKind::malformed_packet, c.what);
  }
}

TEST(PacketReader, AnEmptyOrShortBodyIsMalformedNotACrash) {
  for (std::size_t keep = 0; keep < make_body(BodySpec{}).size(); keep += 7) {
    const Bytes body = make_body(with_report(9));
    SCOPED_TRACE(keep);
    expect_only_problem(make_packet(Bytes(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(keep))),
                        WarningKind::malformed_packet, "the body ends inside");
  }
}

// Every single-byte change of a body (each bit flipped, and the byte set to 0x00 and 0xFF), and
// every prefix of it, with the CRC made right again: decoded, or rejected as malformed or as a
// configuration it does not know; never anything else (the sanitizer build checks the reads).
TEST(PacketReader, EveryChangedByteWithARightCrcDecodesOrIsRejected) {
  BodySpec spec;
  spec.reset_cause = 2;
  spec.strings.emplace_back("input", false);
  spec.stages = {{4, 7000}, {3, 200000}};
  const Bytes body = make_body(spec);
  lt::DecodedRecord out;
  std::size_t decoded = 0, rejected = 0;
  const auto check = [&](const Bytes& b) {
    WarningKind kind{};
    std::string what;
    if (lt::decode_packet_body(b.data(), b.size(), 2, true, out, kind, what)) {
      ++decoded;
      std::string line;
      lt::format_record_json(out, line);
      EXPECT_FALSE(line.empty());
    } else {
      ++rejected;
      EXPECT_TRUE(kind == WarningKind::malformed_packet || kind == WarningKind::unknown_config) << what;
      EXPECT_FALSE(what.empty());
    }
  };
  for (std::size_t i = 0; i < body.size(); ++i) {
    for (const unsigned change : {0x01u, 0x02u, 0x04u, 0x08u, 0x10u, 0x20u, 0x40u, 0x80u, 0x100u, 0x1FFu}) {
      Bytes b = body;
      b[i] = change == 0x100u ? 0x00 : change == 0x1FFu ? 0xFF : static_cast<std::uint8_t>(b[i] ^ change);
      check(b);
    }
    check(Bytes(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(i)));
  }
  EXPECT_GT(decoded, 0u);
  EXPECT_GT(rejected, body.size());  // every prefix at least
}

// A long capture with every kind of problem, read whole and in reads of 1, 7 and 4096 bytes:
// the same records at the same offsets, the same problems. Packets of the largest body (64 KiB)
// cross the reader's window.
TEST(PacketReader, AStreamedCaptureReadsAsTheSameCaptureInMemory) {
  BodySpec big = with_report(1000);
  big.strings.resize(3);
  big.top = {};
  big.samples = {};
  while (make_body(big).size() + 33 <= 0xFFFF) big.strings.emplace_back(std::string(31, 's'), true);
  const std::size_t left = 0xFFFF - make_body(big).size();
  if (left > 0) big.strings.emplace_back(std::string(left - 1, 'e'), false);
  ASSERT_EQ(make_body(big).size(), 0xFFFFu);
  Bytes capture;
  std::uint32_t expected = 0;
  for (std::uint64_t i = 1; i <= 600; ++i) {
    Bytes p = make_packet(i % 97 == 0 ? big : with_report(i));
    if (i % 13 == 0) p[p.size() / 2] ^= 0x10;  // CRC mismatch
    if (i % 29 == 0) capture = capture + lt::test::bytes_of("garbage");
    if (i % 13 != 0) ++expected;
    capture = capture + p;
  }
  const Bytes tail = make_packet(with_report(9999));
  capture = capture + Bytes(tail.begin(), tail.end() - 5);
  const Decoded whole = decode(capture);
  EXPECT_EQ(whole.records.size(), expected);
  EXPECT_EQ(whole.problems.back().kind, WarningKind::torn_tail);
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{4096}}) {
    SCOPED_TRACE(chunk);
    const Decoded streamed = decode(capture, chunk);
    ASSERT_EQ(streamed.records.size(), whole.records.size());
    for (std::size_t i = 0; i < whole.records.size(); ++i) {
      EXPECT_EQ(streamed.records[i].offset, whole.records[i].offset);
      EXPECT_EQ(json(streamed.records[i]), json(whole.records[i]));
    }
    ASSERT_EQ(streamed.problems.size(), whole.problems.size());
    for (std::size_t i = 0; i < whole.problems.size(); ++i) {
      EXPECT_EQ(streamed.problems[i].kind, whole.problems[i].kind);
      EXPECT_EQ(streamed.problems[i].offset, whole.problems[i].offset);
    }
    EXPECT_EQ(streamed.stats.skipped_bytes, whole.stats.skipped_bytes);
    EXPECT_EQ(streamed.stats.bytes, capture.size());
  }
}

TEST(PacketReader, DecodeTakesElfAndOutputOnly) {
  lt::Options options;
  bool help = false;
  std::string error;
  EXPECT_TRUE(lt::parse_command_line({"decode", "a.lcb", "b.lcb", "--elf", "fw.elf", "-o", "out.jsonl"}, options, help, error))
      << error;
  EXPECT_EQ(options.command, "decode");
  EXPECT_EQ(options.paths, (std::vector<std::string>{"a.lcb", "b.lcb"}));
  EXPECT_EQ(options.elf, "fw.elf");
  EXPECT_EQ(options.output, "out.jsonl");
  lt::Options other;
  EXPECT_FALSE(lt::parse_command_line({"decode", "a.lcb", "--by", "event"}, other, help, error));
  EXPECT_EQ(error, "option --by does not apply to decode");
  lt::Options third, fourth;
  EXPECT_FALSE(lt::parse_command_line({"decode", "a.lcb", "--debug-dir", "d"}, third, help, error));
  EXPECT_FALSE(lt::parse_command_line({"decode"}, fourth, help, error));
  EXPECT_EQ(error, "decode: no PATH given (log files or directories)");
  EXPECT_NE(std::string(lt::usage()).find("decode CAPTURE..."), std::string::npos);
}

TEST(PacketReader, CaptureDetection) {
  const Bytes p = make_packet(BodySpec{});
  EXPECT_TRUE(lt::looks_like_capture(p.data(), p.size()));
  const Bytes after_text = lt::test::bytes_of("boot ok\r\n") + p;
  EXPECT_TRUE(lt::looks_like_capture(after_text.data(), after_text.size()));
  const std::string line = lt::test::json_line({});
  EXPECT_FALSE(lt::looks_like_capture(reinterpret_cast<const std::uint8_t*>(line.data()), line.size()));
  const Bytes json_then_packet = lt::test::bytes_of(line) + p;
  EXPECT_FALSE(lt::looks_like_capture(json_then_packet.data(), json_then_packet.size()));
  EXPECT_FALSE(lt::looks_like_capture(nullptr, 0));
  const Bytes late = Bytes(lt::kCaptureSniffBytes, ' ') + p;
  EXPECT_FALSE(lt::looks_like_capture(late.data(), late.size()));
}

// ---- The tool's Reader: captures are read where logs are.

TEST(PacketReader, TheToolsReaderReadsCapturesWithWarningsNamingFileAndOffset) {
  lt::test::TempDir dir;
  const Bytes a = make_packet(with_report(1));
  Bytes bad = make_packet(with_report(2));
  bad[12] ^= 1;
  BodySpec prev = with_report(3);
  prev.reset_cause = 4;
  const Bytes capture = lt::test::bytes_of("xx") + a + bad + make_packet(prev);
  const std::string path = dir.write("device.lcb", std::string(capture.begin(), capture.end()));
  dir.write("host.jsonl", lt::test::json_line({}));
  std::ostringstream warnings;
  lt::Reader reader(warnings);
  std::vector<lt::LogRecord> records;
  std::vector<std::string> lines;
  ASSERT_TRUE(reader.read_path(dir.path(), [&](lt::LogRecord& r) {
    records.push_back(r);
    lines.emplace_back(reader.current_line());
  }));
  ASSERT_EQ(records.size(), 3u) << warnings.str();
  // Captures rotate as logs do; a stem with JSON Lines is read from them only.
  dir.write("both.jsonl", lt::test::json_line({}));
  dir.write("both.lcb", std::string(a.begin(), a.end()));
  const std::string rotated = dir.write("device.20260101T000000Z-000002.lcb", std::string(a.begin(), a.end()));
  EXPECT_EQ(lt::Reader::list_logs(dir.path()),
            (std::vector<std::string>{dir.path() + "/both.jsonl", rotated, path, dir.path() + "/host.jsonl"}));
  EXPECT_EQ(lt::log_source(rotated), path);
  EXPECT_EQ(records[0].file, path);
  EXPECT_TRUE(records[0].from_capture);
  EXPECT_EQ(records[0].line, 2u);  // the packet's offset
  EXPECT_EQ(records[0].loop, "main");
  EXPECT_EQ(records[0].event, "tick");
  EXPECT_EQ(records[0].duration_us, 250000u);
  ASSERT_EQ(records[0].stacks.size(), 2u);
  EXPECT_EQ(records[0].stacks[0].frames[0].scope, "crc");
  EXPECT_EQ(records[0].stacks[0].frames[1].pc, 0x8001234u);
  EXPECT_EQ(records[1].report, 3u);
  EXPECT_EQ(records[1].line, 2 + a.size() + bad.size());
  EXPECT_NE(lines[1].find("\"reset_cause\":\"watchdog\""), std::string::npos) << lines[1];
  EXPECT_FALSE(records[2].from_capture);  // host.jsonl
  EXPECT_EQ(records[2].line, 1u);
  EXPECT_EQ(warnings.str(), path + ": offset 0: 2 bytes of garbage skipped (no packet)\n" + path + ": offset " +
                                std::to_string(2 + a.size()) +
                                ": CRC mismatch: not a whole packet (a damaged or lost byte, or garbage): " +
                                std::to_string(bad.size()) + " bytes skipped\n");
  const lt::ReadStats& stats = reader.stats();
  EXPECT_EQ(stats.files, 2u);
  EXPECT_EQ(stats.captures, 1u);
  EXPECT_EQ(stats.packets, 2u);
  EXPECT_EQ(stats.records, 3u);
  EXPECT_EQ(stats.skipped_bytes, 2 + bad.size());
  EXPECT_EQ(stats.warnings_of(WarningKind::garbage), 1u);
  EXPECT_EQ(stats.warnings_of(WarningKind::crc_mismatch), 1u);
  // show names a record of a capture by its file and its packet's offset.
  lt::Options options;
  options.command = "show";
  options.paths = {path};
  options.id = lt::block_id(records[0]);
  std::ostringstream shown, shown_err;
  EXPECT_EQ(lt::run_show(options, shown, shown_err), 0) << shown_err.str();
  EXPECT_NE(shown.str().find("(final)  " + path + " offset 2\n"), std::string::npos) << shown.str();
  std::ostringstream summary;
  lt::print_summary(summary, stats);
  EXPECT_EQ(summary.str(), "read 2 files, 1 line, 3 records; 1 capture: 2 packets decoded, " +
                               std::to_string(2 + bad.size()) + " bytes skipped; 2 warnings (garbage 1, CRC mismatch 1)\n");
}

TEST(PacketReader, AStreamIsReadAsACaptureWhenItStartsLikeOne) {
  const Bytes a = make_packet(with_report(5));
  std::istringstream in(std::string(a.begin(), a.end()));
  std::ostringstream warnings;
  lt::Reader reader(warnings);
  std::uint64_t report = 0;
  reader.read_stream(in, "uart", [&](lt::LogRecord& r) { report = r.report; });
  EXPECT_EQ(report, 5u) << warnings.str();
  EXPECT_EQ(reader.stats().captures, 1u);
}

// ---- Round trips through the core's encoder.

namespace {

constexpr loopcanary::Event kFlashErase{"flash_erase", 0};
const char kStorage[] = "storage";
const char kErase[] = "erase_sector";
const char kLongLoop[] = "a-loop-name-longer-than-thirty-one-bytes";

loopcanary::Frame frame_of(const char* s) { return reinterpret_cast<loopcanary::Frame>(s); }

loopcanary::BlockRecord hang_record() {
  loopcanary::BlockRecord r{};
  r.report = 3;
  r.phase = loopcanary::Phase::final;
  r.cause = loopcanary::Cause::waiting;
  r.flags = loopcanary::kFlagHung | loopcanary::kFlagEndEstimated;
  r.loop_index = 2;
  r.qualifier = "fw-1.0";
  r.loop = "main";
  r.event = &kFlashErase;
  r.dispatch = 1;
  r.tick_hz = 1000000;
  r.start = 4294817296u;  // 150 ms before the 32-bit wrap
  r.duration_ticks = 401000;
  r.end = static_cast<loopcanary::tick_t>(r.start + 401000u);
  r.threshold_ticks = 100000;
  r.window_ticks = 375000;
  r.has_thread_cpu = true;
  r.thread_cpu_us = 25000;
  r.has_thread_wait = false;
  r.system_busy_permille = 253;
  r.process_permille = loopcanary::kUnknownPermille;
  r.steal_us = 7;
  r.records_dropped = 5;
  r.notes_dropped = 6;
  r.samples_taken = 8;
  r.samples_missed = 1;
  r.samples_overwritten = 0;
  r.top_other = 1;
  r.top_count = 3;
  r.top[0] = loopcanary::test::top_entry(frame_of(kErase), true, 7);
  r.top[1] = loopcanary::test::top_entry(frame_of(kStorage), true, 1);
  r.top[2] = loopcanary::test::top_entry(0x8004568, false, 1);
  r.sample_count = 8;
  for (std::uint8_t i = 0; i < 8; ++i) {
    loopcanary::Sample& s = r.samples[i];
    s.at = static_cast<loopcanary::tick_t>(r.start + 25000u + 50000u * i);
    s.seq = i == 7 ? 3 : 1;  // the last one from the next dispatch
    std::uint8_t n = 0;
    if (i > 0) s.frames[n++] = frame_of(kErase);
    s.frames[n++] = frame_of(kStorage);
    s.scope_count = n;
    const loopcanary::Frame pcs[] = {i == 0 ? loopcanary::Frame{0x8001234} : loopcanary::Frame{0x8004568} + i,
                                     0x8000100, 0x8000050, static_cast<loopcanary::Frame>(0xFFFFFFF0u - i)};
    s.pc_count = static_cast<std::uint8_t>(i % 5 == 4 ? 1 : 4);
    for (std::uint8_t p = 0; p < s.pc_count && n < loopcanary::kMaxFrames; ++p) s.frames[n++] = pcs[p];
    s.pc_count = static_cast<std::uint8_t>(n - s.scope_count);
  }
  return r;
}

std::string name(const char* s) { return s == nullptr ? "?" : s; }

// Every field, the names by text (the decoded ones are copies).
void expect_same_record(const loopcanary::BlockRecord& a, const loopcanary::BlockRecord& b) {
  EXPECT_EQ(a.report, b.report);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.cause, b.cause);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.loop_index, b.loop_index);
  EXPECT_EQ(std::string(a.qualifier), std::string(b.qualifier));
  EXPECT_EQ(name(a.loop), name(b.loop));
  ASSERT_NE(b.event, nullptr);
  EXPECT_EQ(name(a.event->name), name(b.event->name));
  EXPECT_EQ(a.dispatch, b.dispatch);
  EXPECT_EQ(a.tick_hz, b.tick_hz);
  EXPECT_EQ(a.start, b.start);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.duration_ticks, b.duration_ticks);
  EXPECT_EQ(a.threshold_ticks, b.threshold_ticks);
  EXPECT_EQ(a.delayed_by_dispatch, b.delayed_by_dispatch);
  ASSERT_EQ(a.delayed_by == nullptr, b.delayed_by == nullptr);
  if (a.delayed_by != nullptr) {
    EXPECT_EQ(name(a.delayed_by->name), name(b.delayed_by->name));
  }
  ASSERT_EQ(a.stage_count, b.stage_count);
  for (std::uint8_t i = 0; i < a.stage_count; ++i) {
    EXPECT_EQ(name(a.stages[i].name), name(b.stages[i].name)) << "stage " << int{i};
    EXPECT_EQ(a.stages[i].ticks, b.stages[i].ticks) << "stage " << int{i};
  }
  EXPECT_EQ(a.window_ticks, b.window_ticks);
  EXPECT_EQ(a.has_thread_cpu, b.has_thread_cpu);
  EXPECT_EQ(a.thread_cpu_us, b.thread_cpu_us);
  EXPECT_EQ(a.has_thread_wait, b.has_thread_wait);
  EXPECT_EQ(a.thread_wait_us, b.thread_wait_us);
  EXPECT_EQ(a.system_busy_permille, b.system_busy_permille);
  EXPECT_EQ(a.process_permille, b.process_permille);
  EXPECT_EQ(a.steal_us, b.steal_us);
  EXPECT_EQ(a.records_dropped, b.records_dropped);
  EXPECT_EQ(a.notes_dropped, b.notes_dropped);
  EXPECT_EQ(a.samples_taken, b.samples_taken);
  EXPECT_EQ(a.samples_missed, b.samples_missed);
  EXPECT_EQ(a.samples_overwritten, b.samples_overwritten);
  ASSERT_EQ(a.wait.count, b.wait.count);
  EXPECT_EQ(a.wait.other, b.wait.other);
  for (std::uint8_t i = 0; i < a.wait.count; ++i) {
    const loopcanary::WaitSeen& x = a.wait.objects[i];
    const loopcanary::WaitSeen& y = b.wait.objects[i];
    EXPECT_EQ(x.samples, y.samples) << "wait " << int{i};
    EXPECT_EQ(x.object.kind, y.object.kind) << "wait " << int{i};
    EXPECT_EQ(x.object.fd, y.object.fd) << "wait " << int{i};
    EXPECT_EQ(x.object.address, y.object.address) << "wait " << int{i};
    EXPECT_EQ(x.object.value, y.object.value) << "wait " << int{i};
    EXPECT_EQ(x.object.owner, y.object.owner) << "wait " << int{i};
    EXPECT_STREQ(x.object.owner_name, y.object.owner_name) << "wait " << int{i};
    EXPECT_STREQ(x.object.text, y.object.text) << "wait " << int{i};
    EXPECT_EQ(name(x.owner_loop), name(y.owner_loop)) << "wait " << int{i};
    EXPECT_EQ(x.deadlock, y.deadlock) << "wait " << int{i};
    ASSERT_EQ(x.chain_count, y.chain_count) << "wait " << int{i};
    for (std::uint8_t h = 0; h < x.chain_count; ++h) {
      EXPECT_EQ(x.chain[h].address, y.chain[h].address);
      EXPECT_EQ(x.chain[h].owner, y.chain[h].owner);
      EXPECT_STREQ(x.chain[h].owner_name, y.chain[h].owner_name);
    }
    ASSERT_EQ(x.holder_pc_count, y.holder_pc_count) << "wait " << int{i};
    for (std::uint8_t f = 0; f < x.holder_pc_count; ++f) EXPECT_EQ(x.holder_frames[f], y.holder_frames[f]);
  }
  EXPECT_EQ(a.top_other, b.top_other);
  ASSERT_EQ(a.top_count, b.top_count);
  for (std::uint8_t i = 0; i < a.top_count; ++i) {
    const loopcanary::TopStack& x = a.top[i];
    const loopcanary::TopStack& y = b.top[i];
    EXPECT_EQ(x.count, y.count) << "top " << int{i};
    ASSERT_EQ(x.scope_count, y.scope_count) << "top " << int{i};
    ASSERT_EQ(x.pc_count, y.pc_count) << "top " << int{i};
    for (std::uint8_t f = 0; f < x.scope_count; ++f) EXPECT_EQ(scope(x.frames[f]), scope(y.frames[f])) << "top " << int{i};
    for (std::uint8_t f = x.scope_count; f < x.scope_count + x.pc_count; ++f) {
      EXPECT_EQ(x.frames[f], y.frames[f]) << "top " << int{i} << " frame " << int{f};
    }
    EXPECT_EQ(x.leaf_high, y.leaf_high) << "top " << int{i};
  }
  ASSERT_EQ(a.sample_count, b.sample_count);
  for (std::uint8_t i = 0; i < a.sample_count; ++i) {
    const loopcanary::Sample& x = a.samples[i];
    const loopcanary::Sample& y = b.samples[i];
    EXPECT_EQ(x.at, y.at) << "sample " << int{i};
    EXPECT_EQ(x.seq, y.seq) << "sample " << int{i};
    ASSERT_EQ(x.scope_count, y.scope_count) << "sample " << int{i};
    ASSERT_EQ(x.pc_count, y.pc_count) << "sample " << int{i};
    for (std::uint8_t f = 0; f < x.scope_count; ++f) EXPECT_EQ(scope(x.frames[f]), scope(y.frames[f]));
    for (std::uint8_t f = x.scope_count; f < x.scope_count + x.pc_count; ++f) EXPECT_EQ(x.frames[f], y.frames[f]);
  }
}

lt::DecodedRecord round_trip(const loopcanary::BlockRecord& r) {
  std::vector<std::uint8_t> buffer(loopcanary::kMaxPacketBytes);
  const std::size_t n = loopcanary::encode_packet(r, buffer.data(), buffer.size());
  EXPECT_GT(n, 0u);
  Decoded d = decode(Bytes(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n)));
  EXPECT_TRUE(d.problems.empty()) << (d.problems.empty() ? "" : d.problems[0].what);
  if (d.records.size() != 1) {
    ADD_FAILURE() << "no record decoded";
    return lt::DecodedRecord{};
  }
  return std::move(d.records[0]);
}

std::string format(const loopcanary::BlockRecord& r) {
  std::string text(1 << 16, '\0');
  text.resize(loopcanary::format_json(r, &text[0], text.size()).length);
  return text;
}

}  // namespace

TEST(PacketRoundTrip, EncodedThenDecodedIsTheSameRecordAcrossTheTickWrap) {
  const loopcanary::BlockRecord r = hang_record();
  const lt::DecodedRecord d = round_trip(r);
  expect_same_record(r, d.record);
  EXPECT_EQ(format(d.record), format(r));
}

TEST(PacketRoundTrip, EveryPresenceBitAndFlagCombination) {
  for (unsigned presence = 0; presence < 16; ++presence) {
    SCOPED_TRACE(presence);
    loopcanary::BlockRecord r = hang_record();
    r.flags = static_cast<std::uint8_t>(presence & 7u);
    r.phase = static_cast<loopcanary::Phase>(presence % 3);
    r.cause = static_cast<loopcanary::Cause>(presence % 4);
    r.has_thread_cpu = (presence & 1u) != 0;
    r.thread_cpu_us = r.has_thread_cpu ? 123456789012u : 0;
    r.has_thread_wait = (presence & 2u) != 0;
    r.thread_wait_us = r.has_thread_wait ? 42 : 0;
    r.system_busy_permille = (presence & 4u) != 0 ? 1000 : loopcanary::kUnknownPermille;
    r.process_permille = (presence & 8u) != 0 ? 0 : loopcanary::kUnknownPermille;
    expect_same_record(r, round_trip(r).record);
  }
}

TEST(PacketRoundTrip, EmptyRecordsLongNamesAndTheEndAdjustment) {
  loopcanary::BlockRecord r{};
  r.event = &kFlashErase;
  r.loop = kLongLoop;
  r.flags = loopcanary::kFlagUnwatched;
  r.start = 0xFFFFFFFFu;
  r.duration_ticks = 0x100000005u;  // longer than one wrap: end = start + 5 modulo 2^32
  r.end = 4;
  r.report = 0xFFFFFFFFu;
  lt::DecodedRecord d = round_trip(r);
  EXPECT_EQ(d.record.end, 4u);
  EXPECT_EQ(d.record.duration_ticks, 0x100000005u);
  EXPECT_EQ(d.record.sample_count, 0u);
  EXPECT_EQ(name(d.record.loop), std::string(kLongLoop, 31) + "...");
  d.record.loop = kLongLoop;
  expect_same_record(r, d.record);
  // An end that is not start + duration (an in-progress report made later).
  r.loop = "main";
  r.end = 0x1234;
  expect_same_record(r, round_trip(r).record);
}

TEST(PacketRoundTrip, ManySamplesWithTheSameScopeShareOneName) {
  loopcanary::BlockRecord r = hang_record();
  r.sample_count = static_cast<std::uint8_t>(loopcanary::kMaxSamples);
  for (std::size_t i = 0; i < loopcanary::kMaxSamples; ++i) {
    loopcanary::Sample& s = r.samples[i];
    s = loopcanary::Sample{};
    s.at = static_cast<loopcanary::tick_t>(r.start + 10000u * i);
    s.seq = 1;
    s.scope_count = 1;
    s.frames[0] = frame_of(kErase);
    s.pc_count = static_cast<std::uint8_t>(loopcanary::kMaxFrames - 1);
    for (std::uint8_t p = 0; p < s.pc_count; ++p) s.frames[1 + p] = 0x8000000u + 0x40u * p + i;
  }
  const lt::DecodedRecord d = round_trip(r);
  expect_same_record(r, d.record);
  EXPECT_EQ(d.record.samples[0].frames[0], d.record.samples[loopcanary::kMaxSamples - 1].frames[0]);
}

// Stages through the core's encoder (format version 2): names shared with scopes and with each
// other are one string; a null name comes back as one; ticks across the wrap.
TEST(PacketRoundTrip, StagesSurviveTheEncoderAndTheDecoder) {
  loopcanary::BlockRecord r = hang_record();
  const char* const names[] = {"input", kStorage, nullptr, "input", "output", "compute", "flush", "idle"};
  r.stage_count = static_cast<std::uint8_t>(loopcanary::kMaxStages);
  for (std::size_t i = 0; i < loopcanary::kMaxStages; ++i) {
    r.stages[i].name = names[i % 8];
    r.stages[i].ticks = static_cast<loopcanary::tick_t>(i == 1 ? 0xFFFFFFFFu : 1000u * (i + 1));
  }
  std::vector<std::uint8_t> buffer(loopcanary::kMaxPacketBytes);
  ASSERT_GT(loopcanary::encode_packet(r, buffer.data(), buffer.size()), 2u);
  EXPECT_EQ(buffer[2], 4u) << "the encoder writes format version 4";
  const lt::DecodedRecord d = round_trip(r);
  expect_same_record(r, d.record);
  EXPECT_EQ(format(d.record), format(r));
  EXPECT_NE(format(r).find("\"stages\":[{\"name\":\"input\",\"us\":1000},"), std::string::npos) << format(r);
  if (loopcanary::kMaxStages >= 4) {
    EXPECT_EQ(d.record.stages[0].name, d.record.stages[3].name);  // one string
    EXPECT_EQ(reinterpret_cast<loopcanary::Frame>(d.record.stages[1].name), d.record.top[1].frames[0]);  // "storage"
  }
  // No stages: stage_count 0 comes back.
  r.stage_count = 0;
  EXPECT_EQ(round_trip(r).record.stage_count, 0u);
}

// Memory values through the core's encoder: the known ones come back, the others stay unknown.
TEST(PacketRoundTrip, MemoryValuesSurviveTheEncoderAndTheDecoder) {
  loopcanary::BlockRecord r = hang_record();
  r.memory.set(loopcanary::kMemoryResidentPeak, 0xFFFFFFFFFFFFull);
  r.memory.set(loopcanary::kMemoryHeapFree, 0);
  r.memory.set(loopcanary::kMemoryStackCurrent, 1536);
  const lt::DecodedRecord d = round_trip(r);
  expect_same_record(r, d.record);
  EXPECT_EQ(d.record.memory.valid, r.memory.valid);
  for (unsigned i = 0; i < loopcanary::kMemoryValues; ++i) {
    const auto which = static_cast<loopcanary::MemoryValue>(i);
    if (r.memory.has(which)) {
      EXPECT_EQ(d.record.memory.value[i], r.memory.value[i]) << i;
    }
  }
  EXPECT_EQ(format(d.record), format(r));
}

// ---- Deadline misses and health packets (format version 2).

using lt::test::HealthSpec;

TEST(PacketReader, DecodesADeadlineMissWithTheDispatchThatDelayedIt) {
  BodySpec s = with_report(8);
  s.phase = 3;
  s.delayed_by_dispatch = 6;
  s.delayed_by_event = 3;  // "crc"
  Decoded d = decode(make_packet(s));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_EQ(r.phase, loopcanary::Phase::deadline_miss);
  EXPECT_EQ(r.delayed_by_dispatch, 6u);
  ASSERT_NE(r.delayed_by, nullptr);
  EXPECT_EQ(str(r.delayed_by->name), "crc");
  EXPECT_EQ(r.window_ticks, 200000u);  // the fields after it are where they belong
  const std::string line = json(d.records[0]);
  EXPECT_NE(line.find("\"phase\":\"deadline_miss\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"notes_dropped\":2,\"delayed_by\":{\"dispatch\":6,\"event\":\"crc\"}"), std::string::npos) << line;
  // Index 2: the record's own event (a dispatch of the same event delayed it).
  s.delayed_by_event = 2;
  d = decode(make_packet(s));
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(str(d.records[0].record.delayed_by->name), "tick");
  // No delayer: no index, delayed_by null.
  s.delayed_by_dispatch = 0;
  s.flags = 2;  // unwatched
  d = decode(make_packet(s));
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].record.delayed_by, nullptr);
  EXPECT_NE(json(d.records[0]).find("\"delayed_by\":null"), std::string::npos) << json(d.records[0]);
}

TEST(PacketReader, DecodesEveryFieldOfAHealthPacket) {
  const Decoded d = decode(make_packet(HealthSpec{}));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const lt::DecodedRecord& dr = d.records[0];
  ASSERT_TRUE(dr.is_health);
  const loopcanary::HealthRecord& h = dr.health;
  EXPECT_EQ(h.tick_hz, 1000000u);
  EXPECT_EQ(h.number, 5u);
  EXPECT_EQ(h.loop_index, 1u);
  EXPECT_EQ(str(h.qualifier), "fw-1.0");
  EXPECT_EQ(str(h.loop), "main");
  EXPECT_EQ(h.start, 4000000u);
  EXPECT_EQ(h.end, 5000000u);
  EXPECT_EQ(h.dispatches, 1000u);
  EXPECT_EQ(h.busy_ticks, 452000u);
  EXPECT_TRUE(h.has_idle);
  EXPECT_EQ(h.idle_ticks, 548000u);
  EXPECT_EQ(h.blocks, 2u);
  EXPECT_EQ(h.hangs, 1u);
  EXPECT_EQ(h.max_duration, 180000u);
  for (unsigned i = 0; i < loopcanary::kHistogramBuckets; ++i) {
    EXPECT_EQ(h.histogram[i], i == 3 ? 900u : i == 17 ? 100u : 0u) << "bucket " << i;
  }
  EXPECT_EQ(h.memory.valid, 1u);
  EXPECT_EQ(h.memory.value[loopcanary::kMemoryResident], 123456u);
  EXPECT_EQ(h.health_dropped, 3u);
  ASSERT_EQ(h.event_count, 2u);
  ASSERT_NE(h.events[0].event, nullptr);
  EXPECT_EQ(str(h.events[0].event->name), "tick");
  EXPECT_EQ(str(h.events[1].event->name), "display");
  const loopcanary::EventHealthWindow& e = h.events[0];
  EXPECT_EQ(e.dispatches, 100u);
  EXPECT_EQ(e.deadline_misses, 1u);
  EXPECT_EQ(e.missed_periods, 2u);
  EXPECT_EQ(e.posted_ahead, 0u);
  EXPECT_EQ(e.p50, 120u);
  EXPECT_EQ(e.p95, 250u);
  EXPECT_EQ(e.p99, 900u);
  EXPECT_EQ(e.max_latency, 4000u);
  EXPECT_EQ(e.period_ticks, 10000u);
  EXPECT_EQ(e.deadline_ticks, 5000u);
  EXPECT_EQ(h.events[1].posted_ahead, 1u);
  EXPECT_EQ(h.events[1].deadline_ticks, 0u);
  // Decoded: the core's format_health_json line, "kind":"health" first.
  const std::string line = json(dr);
  EXPECT_EQ(line.rfind("{\"kind\":\"health\",\"format_version\":2,\"number\":5,\"qualifier\":\"fw-1.0\",\"loop\":\"main\",\"loop_index\":1,", 0), 0u)
      << line;
  EXPECT_EQ(line.back(), '}');
  // Without idle time: idle unknown.
  HealthSpec no_idle;
  no_idle.idle = 0;
  const Decoded n = decode(make_packet(no_idle));
  ASSERT_EQ(n.records.size(), 1u);
  EXPECT_FALSE(n.records[0].health.has_idle);
  EXPECT_NE(json(n.records[0]).find("\"idle_us\":null"), std::string::npos) << json(n.records[0]);
}

TEST(PacketReader, AHealthWindowAcrossTheTickWrapEndsModulo2To32) {
  HealthSpec s;
  s.start = 0xFFFFFF00u;
  s.window = 0x200;
  const Decoded d = decode(make_packet(s));
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].health.end, 0x100u);
}

TEST(PacketReader, HealthPacketsBetweenBlockPacketsAreReadInOrder) {
  const Bytes capture = make_packet(with_report(1)) + make_packet(HealthSpec{}) + make_packet(with_report(2));
  const Decoded d = decode(capture, 7);
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 3u);
  EXPECT_FALSE(d.records[0].is_health);
  EXPECT_TRUE(d.records[1].is_health);
  EXPECT_FALSE(d.records[2].is_health);
  EXPECT_EQ(d.records[2].record.report, 2u);
  EXPECT_EQ(d.stats.decoded, 3u);
}

TEST(PacketReader, EveryMalformedHealthBodyNamesItsFieldAndBodyOffset) {
  struct Case {
    const char* name;
    void (*change)(HealthSpec&);
    WarningKind kind;
    const char* what;
  };
  const Case cases[] = {
      {"configuration bit 3", [](HealthSpec& s) { s.config = 8; }, WarningKind::unknown_config,
       "at body byte 0 (configuration)"},
      {"max health events 33", [](HealthSpec& s) { s.max_events = 33; }, WarningKind::unknown_config,
       "at body byte 1 (max health events): 33 is not in 0..32"},
      {"number over 32 bits", [](HealthSpec& s) { s.number = std::uint64_t{1} << 32; }, WarningKind::malformed_packet,
       "(number): value over the field's 32 bits"},
      {"idle over 2^32 + 1", [](HealthSpec& s) { s.idle = std::uint64_t{1} << 33; }, WarningKind::malformed_packet,
       "(idle): value over the field's 33 bits"},
      {"histogram count 33", [](HealthSpec& s) { s.raw["histogram count"] = Bytes{33}; s.histogram = {}; },
       WarningKind::malformed_packet, "(histogram count): 33 is over 32"},
      {"histogram bucket 32", [](HealthSpec& s) { s.histogram = {{32, 1}}; }, WarningKind::malformed_packet,
       "(histogram bucket): 32 is not in 0..31"},
      {"histogram buckets not increasing", [](HealthSpec& s) { s.histogram = {{5, 1}, {5, 2}}; },
       WarningKind::malformed_packet, "(histogram bucket): 5 is not in 6..31"},
      {"memory presence bit 7", [](HealthSpec& s) { s.memory_presence = 0x81; }, WarningKind::malformed_packet,
       "(memory presence)"},
      {"string count 1", [](HealthSpec& s) { s.strings.resize(1); s.events = {}; }, WarningKind::malformed_packet,
       "(string count): 1 is less than 2"},
      {"event name of the loop", [](HealthSpec& s) { s.events[0].name = 1; }, WarningKind::malformed_packet,
       "(event name): string index 1 is not in 2..3"},
      {"event name past the table", [](HealthSpec& s) { s.events[1].name = 4; }, WarningKind::malformed_packet,
       "(event name): string index 4 is not in 2..3"},
      {"event_count over the packet's max", [](HealthSpec& s) { s.max_events = 1; }, WarningKind::malformed_packet,
       "(event_count): 2 is over the packet's max health events 1"},
      {"event_count over this build", [](HealthSpec& s) {
         s.max_events = 32;
         s.events.assign(loopcanary::kHealthEvents + 1, lt::test::HealthEventSpec{}); },
       WarningKind::unknown_config, "do not fit this build's LOOPCANARY_HEALTH_EVENTS"},
      {"ends inside an event", [](HealthSpec& s) { s.raw["events"] = Bytes{2, 5}; }, WarningKind::malformed_packet,
       "the body ends inside this field"},
      {"trailing bytes", [](HealthSpec& s) { s.trailing = {0, 0}; }, WarningKind::malformed_packet,
       "(end): 2 bytes after the last event"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HealthSpec s;
    c.change(s);
    expect_only_problem(make_packet(s), c.kind, c.what);
  }
  // The offset of the trailing bytes is the body's length without them.
  HealthSpec s;
  const std::size_t clean = lt::test::make_health_body(s).size();
  s.trailing = {0};
  expect_only_problem(make_packet(s), WarningKind::malformed_packet, "at body byte " + std::to_string(clean) + " (end)");
}

TEST(PacketReader, HealthPacketsOfVersion1AreAnUnknownType) {
  const Bytes v1 = make_packet(lt::test::make_health_body(HealthSpec{}), 3, 1);
  expect_only_problem(v1, WarningKind::unknown_type, "unknown packet type 3 in format version 1");
}

namespace {

constexpr loopcanary::Event kTick{"tick", 0};
constexpr loopcanary::Event kDisplay{"display", 0};

loopcanary::HealthRecord health_record() {
  loopcanary::HealthRecord h{};
  h.number = 41;
  h.qualifier = "fw-1.0";
  h.loop = "main";
  h.loop_index = 3;
  h.tick_hz = 1000000;
  h.start = 0xFFFF0000u;  // the window crosses the wrap
  h.end = 0x000E0000u;
  h.dispatches = 1234;
  h.busy_ticks = 700000;
  h.idle_ticks = 0xFFFFFFFFu;  // idle + 1 takes 33 bits
  h.has_idle = true;
  h.blocks = 3;
  h.hangs = 1;
  h.max_duration = 250000;
  h.histogram[0] = 7;
  h.histogram[31] = 0xFFFFFFFFu;
  h.memory.set(loopcanary::kMemoryStackPeak, 2048);
  h.health_dropped = 9;
  h.event_count = static_cast<std::uint8_t>(std::min<std::size_t>(loopcanary::kHealthEvents, 3));
  const loopcanary::Event* events[] = {&kTick, &kDisplay, &kTick};  // an event listed twice shares its string
  for (std::uint8_t i = 0; i < h.event_count; ++i) {
    loopcanary::EventHealthWindow& e = h.events[i];
    e.event = events[i];
    e.dispatches = 100u + i;
    e.deadline_misses = i;
    e.missed_periods = 2u * i;
    e.posted_ahead = 3u * i;
    e.p50 = 128u << i;
    e.p95 = 1024u << i;
    e.p99 = 0xFFFFFFFFu - i;
    e.max_latency = 0xFFFFFFFFu;
    e.period_ticks = i == 0 ? 10000u : 0u;
    e.deadline_ticks = i == 0 ? 5000u : 0u;
  }
  return h;
}

std::string format_health(const loopcanary::HealthRecord& h) {
  std::string text(1 << 16, '\0');
  text.resize(loopcanary::format_health_json(h, &text[0], text.size()).length);
  return text;
}

}  // namespace

TEST(PacketRoundTrip, HealthRecordsSurviveTheEncoderAndTheDecoder) {
  const loopcanary::HealthRecord h = health_record();
  std::vector<std::uint8_t> buffer(loopcanary::kMaxHealthPacketBytes);
  const std::size_t n = loopcanary::encode_health_packet(h, buffer.data(), buffer.size());
  ASSERT_GT(n, 0u);
  EXPECT_EQ(buffer[3], 3u) << "packet type 3";
  const Decoded d = decode(Bytes(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n)));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  ASSERT_TRUE(d.records[0].is_health);
  const loopcanary::HealthRecord& g = d.records[0].health;
  EXPECT_EQ(g.number, h.number);
  EXPECT_EQ(g.start, h.start);
  EXPECT_EQ(g.end, h.end);
  EXPECT_EQ(g.idle_ticks, h.idle_ticks);
  EXPECT_EQ(g.has_idle, h.has_idle);
  EXPECT_EQ(g.histogram[31], h.histogram[31]);
  ASSERT_EQ(g.event_count, h.event_count);
  for (std::uint8_t i = 0; i < h.event_count; ++i) {
    EXPECT_EQ(name(g.events[i].event->name), name(h.events[i].event->name)) << int{i};
    EXPECT_EQ(g.events[i].p99, h.events[i].p99) << int{i};
  }
  // The whole record: the decoded one formats exactly as the original.
  EXPECT_EQ(json(d.records[0]) + "\n", format_health(h));
  // A buffer one byte short of the packet: nothing usable.
  EXPECT_EQ(loopcanary::encode_health_packet(h, buffer.data(), n - 1), 0u);
}

TEST(PacketRoundTrip, DeadlineMissesSurviveTheEncoderAndTheDecoder) {
  static constexpr loopcanary::Event kOta{"ota_verify", 0};
  loopcanary::BlockRecord r = hang_record();
  r.phase = loopcanary::Phase::deadline_miss;
  r.flags = 0;
  r.delayed_by_dispatch = 77;
  for (const loopcanary::Event* delayer : {&kOta, &kFlashErase}) {  // another event, and the record's own
    SCOPED_TRACE(delayer->name);
    r.delayed_by = delayer;
    const lt::DecodedRecord d = round_trip(r);
    expect_same_record(r, d.record);
    EXPECT_EQ(format(d.record), format(r));
    EXPECT_NE(format(r).find(std::string("\"delayed_by\":{\"dispatch\":77,\"event\":\"") + delayer->name + "\"}"),
              std::string::npos)
        << format(r);
  }
  // Unknown delayer: 0 and null come back.
  r.delayed_by_dispatch = 0;
  r.delayed_by = nullptr;
  r.flags = loopcanary::kFlagUnwatched;
  const lt::DecodedRecord d = round_trip(r);
  expect_same_record(r, d.record);
  EXPECT_EQ(format(d.record), format(r));
}

// ---- Evidence packets (types 4..7), built from the specification byte by byte.

namespace {

using lt::test::put_str;
using lt::test::put_u8;
using lt::test::put_uv;
using lt::test::put_sv;

// Configuration 0 (32-bit pointers, little-endian), 8 samples, 4 frames, 8 top frames, 2 stages.
void put_evidence_config(Bytes& b, unsigned max_samples = 8) {
  for (unsigned v : {0u, max_samples, 4u, 8u, 2u}) put_u8(b, v);
}

Bytes watch_packet(unsigned watch, unsigned max_samples = 8) {
  Bytes b;
  put_evidence_config(b, max_samples);
  put_u8(b, watch);
  return make_packet(b, 4);
}

// A sample of `watch` at `at` with one scope and one PC.
Bytes sample_packet(unsigned watch, std::uint32_t at, std::uint64_t pc) {
  Bytes b;
  put_u8(b, watch);
  put_uv(b, at);
  put_uv(b, 1);  // seq: dispatch 1
  put_u8(b, 1);
  put_u8(b, 1);
  put_str(b, "parse");
  put_uv(b, pc);
  return make_packet(b, 5);
}

// A final observation of dispatch 1 (begin 1000, end 61000) on `watch`, armed: CPU readings of
// thread time 50 ms over a 50 ms window (running by the packet's rule), no memory.
Bytes observation_packet(unsigned watch, std::uint32_t report = 1) {
  Bytes b;
  put_evidence_config(b);
  for (unsigned permille : {700u, 900u, 500u}) put_uv(b, permille);
  put_uv(b, 1'000'000);  // tick_hz
  put_uv(b, report);
  put_uv(b, 0);  // records_dropped
  put_uv(b, 0);  // notes_dropped
  put_u8(b, 2);  // phase: final
  put_u8(b, 0);  // flags
  put_u8(b, 0);  // loop_index
  put_u8(b, watch);
  put_uv(b, 1);       // seq
  put_uv(b, 1000);    // begin
  put_uv(b, 61000);   // end
  put_uv(b, 60000);   // duration
  put_uv(b, 20000);   // threshold
  put_uv(b, 0);       // delayed_by_dispatch
  for (std::uint64_t elapsed : {10000u, 60000u}) {  // first, last: thread CPU (value 0) only
    put_uv(b, elapsed);
    put_u8(b, 1);
    put_uv(b, elapsed);
  }
  put_u8(b, 0);  // memory presence
  put_uv(b, 0);  // samples_missed
  put_str(b, "fw-1");
  put_str(b, "main");
  put_str(b, "sensor");
  put_u8(b, 0);  // stages
  return make_packet(b, 6);
}

Bytes boot_packet(unsigned kind, unsigned cause, unsigned boot, unsigned discarded = 0) {
  Bytes b;
  put_u8(b, kind);
  put_u8(b, cause);
  put_uv(b, boot);
  if (kind == 1) put_u8(b, discarded);
  return make_packet(b, 7);
}

}  // namespace

TEST(EvidenceReader, AssemblesARecordFromAWatchItsSamplesAndAnObservation) {
  const Decoded d = decode(watch_packet(0) + sample_packet(0, 12000, 0x800) + sample_packet(0, 13000, 0x804) +
                           observation_packet(0));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_EQ(r.report, 1u);
  EXPECT_EQ(r.phase, loopcanary::Phase::final);
  EXPECT_EQ(str(r.qualifier), "fw-1");
  EXPECT_EQ(str(r.loop), "main");
  EXPECT_EQ(str(r.event->name), "sensor");
  EXPECT_EQ(r.dispatch, 1u);
  EXPECT_EQ(r.duration_ticks, 60000u);
  EXPECT_EQ(r.window_ticks, 50000u);
  EXPECT_EQ(r.thread_cpu_us, 50000u);
  EXPECT_EQ(r.cause, loopcanary::Cause::running);  // derived on the host
  ASSERT_EQ(r.sample_count, 2u);
  EXPECT_EQ(r.samples[1].at, 13000u);
  EXPECT_EQ(scope(r.samples[0].frames[0]), "parse");
  EXPECT_EQ(r.samples[1].frames[1], 0x804u);
  // The scope "parse" and one PC, without callers: each PC its own stack (assembled on the host
  // as the device would have).
  ASSERT_EQ(r.top_count, 2u);
  EXPECT_EQ(scope(r.top[0].frames[0]), "parse");
  EXPECT_EQ(r.top[0].frames[1], 0x800u);
  EXPECT_EQ(r.top[1].frames[1], 0x804u);
  EXPECT_EQ(r.top[0].count + r.top[1].count, 2u);
  EXPECT_FALSE(d.records[0].previous_boot);
  EXPECT_EQ(d.stats.evidence, 4u);
  EXPECT_EQ(d.stats.decoded, 4u);  // every packet decoded, one record
}

TEST(EvidenceReader, KeepsTheDevicesSampleCapacity) {
  Bytes capture = watch_packet(0, 2);
  for (std::uint32_t i = 0; i < 3; ++i) capture = capture + sample_packet(0, 12000 + i, 0x800 + i);
  const Decoded d = decode(capture + observation_packet(0));
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_EQ(r.sample_count, 2u);  // the device's 2, not this build's
  EXPECT_EQ(r.samples_taken, 3u);
  EXPECT_EQ(r.samples_overwritten, 1u);
  EXPECT_EQ(r.samples[0].at, 12001u);  // oldest kept first
}

TEST(EvidenceReader, ASampleForAWatchThatHasNotStartedIsWarnedAndTheRestRead) {
  const Bytes orphan = sample_packet(3, 12000, 0x800);
  const Decoded d = decode(orphan + watch_packet(0) + sample_packet(0, 12000, 0x800) + observation_packet(0));
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::orphan_evidence);
  EXPECT_EQ(d.problems[0].offset, 0u);
  EXPECT_NE(d.problems[0].what.find("watch 3"), std::string::npos) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].record.sample_count, 1u);
}

TEST(EvidenceReader, AnObservationBeforeItsWatchStartedIsWarnedAndRecordedWithoutSamples) {
  const Decoded d = decode(observation_packet(1));
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::orphan_evidence);
  EXPECT_NE(d.problems[0].what.find("observation for watch 1"), std::string::npos) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].record.sample_count, 0u);
  EXPECT_EQ(d.records[0].record.report, 1u);
}

TEST(EvidenceReader, ACutOrOverlongEvidenceBodyIsMalformedAndSkipped) {
  const Bytes whole = observation_packet(0);
  const Bytes body(whole.begin() + 6, whole.end() - 4 - 3);  // the last three body bytes lost
  const Decoded d = decode(make_packet(body, 6) + watch_packet(0) + observation_packet(0, 2));
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::malformed_packet);
  EXPECT_EQ(d.problems[0].offset, 0u);
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].record.report, 2u);

  const Bytes watch = watch_packet(0);
  Bytes longer(watch.begin() + 6, watch.end() - 4);
  longer.push_back(0);
  const Decoded e = decode(make_packet(longer, 4));
  ASSERT_EQ(e.problems.size(), 1u);
  EXPECT_EQ(e.problems[0].kind, WarningKind::malformed_packet);
  EXPECT_NE(e.problems[0].what.find("after the watch"), std::string::npos) << e.problems[0].what;
}

TEST(EvidenceReader, CapacitiesOverThisBuildsAreAConfigurationItDoesNotKnow) {
  const Decoded d = decode(watch_packet(0, 200));
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::unknown_config);
  EXPECT_NE(d.problems[0].what.find("max samples"), std::string::npos) << d.problems[0].what;
}

TEST(EvidenceReader, BootPacketsMarkThePreviousBootsRecordsAndStartANewBoot) {
  // Boot 2 sends what boot 1 left in the ring (which starts with boot 1's own boot packet), then
  // its own boot packet.
  const Decoded d = decode(boot_packet(0, 3, 2) + boot_packet(1, 1, 1) + watch_packet(0) +
                           sample_packet(0, 12000, 0x800) + observation_packet(0, 7) + boot_packet(1, 3, 2) +
                           observation_packet(0, 1));
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_TRUE(d.records[0].previous_boot);
  EXPECT_EQ(d.records[0].reset_cause, loopcanary::ResetCause::software);
  EXPECT_NE(json(d.records[0]).find("\"previous_boot\":true,\"reset_cause\":\"software\""), std::string::npos);
  EXPECT_EQ(d.records[0].record.sample_count, 1u);
  EXPECT_FALSE(d.records[1].previous_boot);
  // The new boot has started no watch: its observation on watch 0 is out of order.
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::orphan_evidence);
}

TEST(EvidenceReader, ADiscardedBoxIsWarnedUnlessThatBootWasAPowerOn) {
  const Decoded d = decode(boot_packet(1, 4, 1, 1));  // a watchdog reset that lost the ring
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::box_discarded);
  EXPECT_TRUE(d.records.empty());
  const Decoded p = decode(boot_packet(1, 1, 1, 1));  // power-on: no ring could have survived
  EXPECT_TRUE(p.problems.empty()) << p.problems[0].what;
  EXPECT_TRUE(p.records.empty());
}

// ---- Stack evidence (configuration bit 3): samples unwound on the host --------------------------

namespace {

constexpr std::uint32_t kEvidenceSp = 0x20000100;

// Configuration `config` | 8 (stack evidence), capacities as put_evidence_config, 4 stack words.
void put_stack_config(Bytes& b, unsigned config = 0) {
  for (unsigned v : {config | 8u, 8u, 4u, 8u, 2u, 4u}) put_u8(b, v);
}

Bytes stack_watch_packet(unsigned config = 0) {
  Bytes b;
  put_stack_config(b, config);
  put_u8(b, 0);
  return make_packet(b, 4);
}

// A sample of watch 0 at `pc` with the device's LR frame `lr_frame` (0: none), and the stack part
// `part` as its bytes.
Bytes stack_sample_packet(std::uint64_t pc, std::uint64_t lr_frame, const Bytes& part) {
  Bytes b;
  put_u8(b, 0);
  put_uv(b, 12000);
  put_uv(b, 1);
  put_u8(b, 0);
  put_u8(b, lr_frame != 0 ? 2 : 1);
  put_uv(b, pc);
  if (lr_frame != 0) put_uv(b, lr_frame);
  return make_packet(b + part, 5);
}

// A stack part: SP kEvidenceSp, LR `lr`, no frame pointer, the words (offset, value) in order.
Bytes stack_part(std::uint32_t lr, std::initializer_list<std::pair<unsigned, std::uint32_t>> words) {
  Bytes b;
  put_u8(b, 1);
  put_uv(b, kEvidenceSp);
  put_uv(b, lr);
  put_u8(b, static_cast<unsigned>(words.size()));
  unsigned next = 0;
  for (const auto& [offset, value] : words) {
    put_uv(b, offset - next);
    put_uv(b, value);
    next = offset + 1;
  }
  return b;
}

// The observation_packet of watch 0 with the stack evidence configuration.
Bytes stack_observation_packet() {
  const Bytes plain = observation_packet(0);
  Bytes body(plain.begin() + 6, plain.end() - 4);
  body[0] = 8;                        // configuration: stack evidence
  body.insert(body.begin() + 5, 4);   // stack words, after max stages
  return make_packet(body, 6);
}

using lt::test::two_functions;  // arm_cfi_fixture.hpp

// One sample in A at 0x1010 (its LR stale: 0x9999, sent as the frame 0x9998), its return address
// into C at SP + 4: the chain A <- C, unwound.
Bytes chain_capture(const Bytes& part) {
  return stack_watch_packet() + stack_sample_packet(0x1010, 0x9998, part) + stack_observation_packet();
}

std::string json_of(const lt::DecodedRecord& r) {
  std::string line;
  lt::format_record_json(r, line);
  return line;
}

}  // namespace

TEST(EvidenceReader, SamplesWithStackEvidenceUnwindWithTheFirmwaresCfi) {
  const Decoded d = decode(chain_capture(stack_part(0x9999, {{0, 0x1041}, {1, 0x3005}})), 0, two_functions());
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  ASSERT_EQ(r.sample_count, 1u);
  ASSERT_EQ(r.samples[0].pc_count, 2u);
  EXPECT_EQ(r.samples[0].frames[0], 0x1010u);
  EXPECT_EQ(r.samples[0].frames[1], 0x3004u);  // from the stack, not the stale LR
  ASSERT_EQ(r.top_count, 1u);
  EXPECT_EQ(r.top[0].frames[1], 0x3004u);
  const lt::UnwindSummary& u = d.records[0].unwind;
  EXPECT_EQ(u.unwound, 1u);
  EXPECT_EQ(u.partial + u.pc_lr_only, 0u);
  EXPECT_NE(json_of(d.records[0]).find(R"("unwind":{"unwound":1,"partial":0,"pc_lr_only":0,"reasons":[]})"),
            std::string::npos)
      << json_of(d.records[0]);
}

TEST(EvidenceReader, WithoutAnElfSamplesKeepThePcAndLrAndSaySo) {
  const Decoded d = decode(chain_capture(stack_part(0x9999, {{1, 0x3005}})));
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::not_unwound);
  EXPECT_NE(d.problems[0].what.find("no firmware ELF"), std::string::npos) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::Sample& s = d.records[0].record.samples[0];
  ASSERT_EQ(s.pc_count, 2u);
  EXPECT_EQ(s.frames[1], 0x9998u);  // as the device sent it
  EXPECT_EQ(d.records[0].unwind.pc_lr_only, 1u);
  EXPECT_EQ(d.records[0].unwind.reasons.count("no firmware ELF to unwind with (decode --elf)"), 1u);
  // An ELF without call-frame information: its reason.
  auto missing = std::make_shared<lt::StackUnwind>();
  missing->missing = "--elf fw.elf: no section .debug_frame";
  const Decoded e = decode(chain_capture(stack_part(0x9999, {{1, 0x3005}})), 0, missing);
  ASSERT_EQ(e.problems.size(), 1u);
  EXPECT_NE(e.problems[0].what.find("no section .debug_frame"), std::string::npos) << e.problems[0].what;
}

TEST(EvidenceReader, BadStackEvidenceEndsTheChainWithItsReasonNeverAWrongFrame) {
  // The return address's word missing (a slice cut short, or outside the budget): A only, partial.
  const Decoded cut = decode(chain_capture(stack_part(0x9999, {{0, 0x1041}})), 0, two_functions());
  ASSERT_EQ(cut.records.size(), 1u);
  ASSERT_EQ(cut.problems.size(), 1u);
  EXPECT_EQ(cut.problems[0].kind, WarningKind::not_unwound);
  EXPECT_EQ(cut.records[0].record.samples[0].pc_count, 1u);
  EXPECT_EQ(cut.records[0].unwind.partial, 1u);
  EXPECT_EQ(cut.records[0].unwind.reasons.begin()->first,
            "return address of 0x00001010 at 0x20000104 is not among the sample's stack words");
  // A PC the CFI does not cover (an ELF of another build): the PC and LR as sent.
  const Decoded other = decode(stack_watch_packet() + stack_sample_packet(0x5010, 0x9998, stack_part(0x9999, {})) +
                                   stack_observation_packet(),
                               0, two_functions());
  ASSERT_EQ(other.records.size(), 1u);
  EXPECT_EQ(other.records[0].record.samples[0].frames[1], 0x9998u);
  EXPECT_EQ(other.records[0].unwind.pc_lr_only, 1u);
  EXPECT_EQ(other.records[0].unwind.reasons.begin()->first, "no CFI for 0x00005010");
  // 64-bit program counters: no unwinder for them.
  const Decoded wide = decode(stack_watch_packet(1) + stack_sample_packet(0x1010, 0, stack_part(0x9999, {{1, 0x3005}})),
                              0, two_functions());
  ASSERT_EQ(wide.problems.size(), 1u);
  EXPECT_NE(wide.problems[0].what.find("64-bit program counters"), std::string::npos) << wide.problems[0].what;
}

// The reader decodes every record into one DecodedRecord: a record packet after an assembled
// record must not keep its "unwind" (found by fuzz.capture).
TEST(EvidenceReader, ARecordPacketAfterAnAssembledRecordHasNoUnwindSummary) {
  std::vector<std::string> lines;
  lt::CaptureReader reader;
  reader.set_unwind(two_functions());
  Bytes block(loopcanary::kMaxPacketBytes);
  block.resize(loopcanary::encode_packet(hang_record(), block.data(), block.size()));
  const Bytes capture = chain_capture(stack_part(0x9999, {{1, 0x3005}})) + block;
  reader.read(capture.data(), capture.size(), [&](lt::DecodedRecord& r) { lines.push_back(json_of(r)); }, nullptr);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"unwind\""), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].find("\"unwind\""), std::string::npos) << lines[1];
}

TEST(EvidenceReader, AMalformedStackPartNamesItsField) {
  struct Case {
    Bytes part;
    const char* field;
  };
  Bytes over;  // 5 words, over the watch's 4 stack words
  put_u8(over, 1);
  put_uv(over, kEvidenceSp);
  put_uv(over, 0);
  put_u8(over, 5);
  for (unsigned i = 0; i < 5; ++i) over = over + Bytes{0, 0x11};
  Bytes far;
  put_u8(far, 1);
  put_uv(far, kEvidenceSp);
  put_uv(far, 0);
  put_u8(far, 2);
  put_uv(far, 0xFFFF);
  put_uv(far, 0x3005);
  put_uv(far, 0);  // the second word's offset: 65536
  put_uv(far, 0x3005);
  const Case cases[] = {{Bytes{2}, "stack presence"}, {over, "stack word count"}, {far, "stack word offset"},
                        {Bytes{1}, "stack sp"}, {stack_part(0x9999, {}) + Bytes{0}, "end"}};
  for (const Case& c : cases) {
    const Decoded d = decode(chain_capture(c.part), 0, two_functions());
    ASSERT_EQ(d.problems.size(), 1u) << c.field;
    EXPECT_EQ(d.problems[0].kind, WarningKind::malformed_packet) << c.field;
    EXPECT_NE(d.problems[0].what.find(std::string("(") + c.field + ")"), std::string::npos) << d.problems[0].what;
    ASSERT_EQ(d.records.size(), 1u);
    EXPECT_EQ(d.records[0].record.sample_count, 0u) << c.field;  // the sample not read, the record still made
  }
  // A sample without its stack part (presence 0) is read as sent.
  const Decoded none = decode(chain_capture(Bytes{0}), 0, two_functions());
  ASSERT_TRUE(none.problems.empty()) << none.problems[0].what;
  EXPECT_EQ(none.records[0].record.samples[0].frames[1], 0x9998u);
  EXPECT_TRUE(none.records[0].unwind.empty());
}

// ---- Stack evidence in block packets (configuration bit 3): a device's records road ----------

namespace {

// A top entry of a version 4 block packet with stack evidence: `count` samples, the PCs
// (innermost first), the innermost range and its stack part (0: none; i: the packet's part i).
struct StackEntry {
  std::uint64_t count;
  std::vector<std::uint64_t> pcs;
  std::uint64_t leaf_span;
  unsigned stack;
};
// A kept sample: its PCs and its stack part (as an entry's).
struct StackSample {
  std::vector<std::uint64_t> pcs;
  unsigned stack;
};

// A final record of version 4 with stack evidence (4 stack words), as docs/report-format.md lays
// it out: no CPU or memory values, no stages, names "fw", "main", "slow", the stack parts `parts`
// (their bytes); `version` and `stack_words` to make it wrong.
Bytes stack_block_packet(const std::vector<Bytes>& parts, const std::vector<StackEntry>& entries,
                         const std::vector<StackSample>& samples, unsigned version = 4, unsigned stack_words = 4) {
  Bytes b;
  for (unsigned v : {8u, 8u, 4u, 8u, 2u, stack_words}) put_u8(b, v);  // configuration .. stack words
  for (std::uint64_t v : {1000000u, 1u}) put_uv(b, v);                   // tick_hz, report
  for (unsigned v : {2u, 1u, 0u, 0u}) put_u8(b, v);                      // final, running, flags, loop 0
  for (std::uint64_t v : {3u, 1000u, 250000u}) put_uv(b, v);             // dispatch, start, duration
  put_sv(b, 0);                                                          // end adjustment
  for (std::uint64_t v : {100000u, 0u, 0u}) put_uv(b, v);                // threshold, delayed_by, window
  put_u8(b, 0);                                                          // CPU presence
  put_uv(b, 0);                                                          // steal
  put_u8(b, 0);                                                          // memory presence
  for (std::uint64_t v : {0u, 0u, 3u}) put_uv(b, v);                     // dropped, dropped, strings
  for (const char* name : {"fw", "main", "slow"}) put_str(b, name, false);
  put_u8(b, 0);  // stages
  std::uint64_t taken = 0;
  for (const StackEntry& e : entries) taken += e.count;
  for (std::uint64_t v : {taken, std::uint64_t{0}, std::uint64_t{0}}) put_uv(b, v);
  put_u8(b, static_cast<unsigned>(entries.size()));
  put_uv(b, 0);  // top_other
  put_u8(b, static_cast<unsigned>(parts.size()));
  for (const Bytes& part : parts) b = b + part;
  const std::vector<std::uint64_t>* before = nullptr;
  for (const StackEntry& e : entries) {
    put_uv(b, e.count);
    put_u8(b, 0);
    put_u8(b, static_cast<unsigned>(e.pcs.size()));
    for (std::size_t f = 0; f < e.pcs.size(); ++f) {
      put_sv(b, static_cast<std::int64_t>(e.pcs[f] - (before != nullptr && f < before->size() ? (*before)[f] : 0)));
    }
    put_uv(b, e.leaf_span);
    put_u8(b, e.stack);
    before = &e.pcs;
  }
  put_u8(b, static_cast<unsigned>(samples.size()));
  before = nullptr;
  for (const StackSample& x : samples) {
    put_uv(b, 1000);
    put_sv(b, 0);
    put_u8(b, 0);
    put_u8(b, static_cast<unsigned>(x.pcs.size()));
    for (std::size_t f = 0; f < x.pcs.size(); ++f) {
      put_sv(b, static_cast<std::int64_t>(x.pcs[f] - (before != nullptr && f < before->size() ? (*before)[f] : 0)));
    }
    put_u8(b, x.stack);
    before = &x.pcs;
  }
  return make_packet(b, 1, version);
}

std::vector<loopcanary::Frame> pcs_of(const loopcanary::TopStack& t) {
  return {t.frames + t.scope_count, t.frames + t.scope_count + t.pc_count};
}

}  // namespace

TEST(BlockStackEvidence, EachEntryUnwindsOnceForAllItsSamplesAndEachKeptSampleWithItsEntrysWords) {
  // A's samples at 0x1010..0x1014 with the stale LR 0x9999 (sent as the frame 0x9998); the
  // return address into C at SP + 4.
  const Bytes part = stack_part(0x9999, {{0, 0x1041}, {1, 0x3005}});
  const Decoded d = decode(stack_block_packet({part}, {{7, {0x1010, 0x9998}, 4, 1}}, {{{0x1012, 0x9998}, 1}, {{0x1014, 0x9998}, 0}}),
                           0, two_functions());
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  ASSERT_EQ(r.top_count, 1u);
  EXPECT_EQ(pcs_of(r.top[0]), (std::vector<loopcanary::Frame>{0x1010, 0x3004}));
  EXPECT_EQ(r.top[0].leaf_high, 0x1014u);
  EXPECT_EQ(r.top[0].count, 7u);
  ASSERT_EQ(r.sample_count, 2u);
  EXPECT_EQ(r.samples[0].frames[1], 0x3004u) << "unwound with its entry's words at its own PC";
  EXPECT_EQ(r.samples[1].frames[1], 0x9998u) << "a sample without an entry keeps what was sent";
  EXPECT_EQ(d.records[0].unwind.unwound, 7u);
  EXPECT_NE(json_of(d.records[0]).find(R"("unwind":{"unwound":7,"partial":0,"pc_lr_only":0,"reasons":[]})"),
            std::string::npos)
      << json_of(d.records[0]);
}

TEST(BlockStackEvidence, EntriesTheChainsMakeEqualAreMergedAndKeptInOrder) {
  // Three entries in A: two whose stale LRs differ but whose chain is A <- C, one partial.
  const Decoded d = decode(stack_block_packet({stack_part(0x9999, {{1, 0x3005}}), stack_part(0x1031, {})},
                                              {{3, {0x1010, 0x9998}, 0, 1}, {2, {0x1030}, 0, 2}, {2, {0x1018, 0x7776}, 2, 1}},
                                              {}),
                           0, two_functions());
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  ASSERT_EQ(r.top_count, 2u);
  EXPECT_EQ(r.top[0].count, 5u);
  EXPECT_EQ(pcs_of(r.top[0]), (std::vector<loopcanary::Frame>{0x1010, 0x3004}));
  EXPECT_EQ(r.top[0].leaf_high, 0x101Au);
  EXPECT_EQ(r.top[1].count, 2u);
  EXPECT_EQ(pcs_of(r.top[1]), (std::vector<loopcanary::Frame>{0x1030}));
  EXPECT_EQ(d.records[0].unwind.unwound, 5u);
  EXPECT_EQ(d.records[0].unwind.partial, 2u);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, WarningKind::not_unwound);
}

TEST(BlockStackEvidence, AnEntryWhosePcsUnwindDifferentlyKeepsItsPcAndLr) {
  // 0x1000 is before A's push (its return address in LR: 0x3009), 0x1010 after it (at SP + 4:
  // 0x3005): the two give different chains, so neither is claimed for the entry's samples.
  const Decoded d = decode(stack_block_packet({stack_part(0x3009, {{1, 0x3005}})}, {{4, {0x1000, 0x3008}, 0x10, 1}}, {}),
                           0, two_functions());
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_EQ(pcs_of(r.top[0]), (std::vector<loopcanary::Frame>{0x1000, 0x3008}));
  EXPECT_EQ(d.records[0].unwind.pc_lr_only, 4u);
  EXPECT_EQ(d.records[0].unwind.reasons.count("a stack table entry's program counters unwind differently with its words"),
            1u);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].what.find("as PC and LR"), std::string::npos) << d.problems[0].what;
}

TEST(BlockStackEvidence, AnEntryOfOnePcNeverTakesLrForItsReturnAddress) {
  // A stack of one PC: the device did not take LR for a return address, and the entry's samples
  // may have had different LR values. At 0x1000 (before A's push) the return address is in LR:
  // the chain ends there, partial, never a frame from the first sample's LR.
  const Decoded d = decode(stack_block_packet({stack_part(0x3005, {{1, 0x3005}})}, {{2, {0x1000}, 0, 1}}, {{{0x1000}, 1}}),
                           0, two_functions());
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::BlockRecord& r = d.records[0].record;
  EXPECT_EQ(pcs_of(r.top[0]), (std::vector<loopcanary::Frame>{0x1000}));
  EXPECT_EQ(r.samples[0].pc_count, 1u);
  EXPECT_EQ(d.records[0].unwind.partial, 2u);
  EXPECT_EQ(d.records[0].unwind.reasons.count("return address of 0x00001000 is in r14, which holds no return address of the sample"),
            1u);
}

TEST(BlockStackEvidence, WithoutAnElfEntriesKeepThePcAndLrCountedBySamples) {
  const Bytes packet = stack_block_packet({stack_part(0x9999, {{1, 0x3005}})}, {{3, {0x1010, 0x9998}, 0, 1}}, {});
  const Decoded d = decode(packet + packet);
  ASSERT_EQ(d.records.size(), 2u);
  ASSERT_EQ(d.problems.size(), 1u) << "warned once per capture";
  EXPECT_NE(d.problems[0].what.find("no firmware ELF"), std::string::npos) << d.problems[0].what;
  EXPECT_EQ(pcs_of(d.records[1].record.top[0]), (std::vector<loopcanary::Frame>{0x1010, 0x9998}));
  EXPECT_EQ(d.records[1].unwind.pc_lr_only, 3u);
}

TEST(BlockStackEvidence, AMalformedOrUnknownStackEvidenceNamesItsField) {
  const std::vector<Bytes> parts = {stack_part(0x9999, {{1, 0x3005}})};
  expect_only_problem(stack_block_packet(parts, {{1, {0x1010}, 0, 1}}, {{{0x1010}, 2}}), WarningKind::malformed_packet,
                      "(sample stack)");
  expect_only_problem(stack_block_packet(parts, {{1, {0x1010}, 0, 2}}, {}), WarningKind::malformed_packet, "(top stack)");
  expect_only_problem(stack_block_packet({parts[0], parts[0]}, {{1, {0x1010}, 0, 1}}, {}), WarningKind::malformed_packet,
                      "(stack count)");
  expect_only_problem(stack_block_packet(parts, {{1, {0x1010}, 0, 1}}, {}, 4, 0), WarningKind::malformed_packet,
                      "(stack words)");
  expect_only_problem(stack_block_packet(parts, {{1, {0x1010}, 0, 1}}, {}, 3), WarningKind::unknown_config,
                      "stack evidence (bit 3) in a version 3 packet");
  expect_only_problem(stack_block_packet({Bytes{2}}, {{1, {0x1010}, 0, 1}}, {}), WarningKind::malformed_packet,
                      "(stack presence)");
  expect_only_problem(stack_block_packet({stack_part(0x9999, {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}})}, {{1, {0x1010}, 0, 1}}, {}),
                      WarningKind::malformed_packet, "(stack word count)");
}

TEST(EvidenceReader, RecordsOutliveTheReader) {
  std::vector<lt::DecodedRecord> kept;
  {
    lt::CaptureReader reader;
    const Bytes capture = watch_packet(0) + sample_packet(0, 12000, 0x800) + observation_packet(0);
    reader.read(capture.data(), capture.size(), [&](lt::DecodedRecord& r) { kept.push_back(std::move(r)); }, nullptr);
  }
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(str(kept[0].record.loop), "main");
  EXPECT_EQ(scope(kept[0].record.samples[0].frames[0]), "parse");
}

// ---- Wait objects (version 4) ----------------------------------------------------------------

TEST(PacketRoundTrip, WaitObjectsSurviveTheEncoderAndTheDecoder) {
  for (const loopcanary::BlockRecord& r : {loopcanary::test::hand_waiting_block(), loopcanary::test::hand_deadlock_block()}) {
    ASSERT_GT(r.wait.count, 0u);
    const lt::DecodedRecord d = round_trip(r);
    expect_same_record(r, d.record);
    EXPECT_EQ(format(d.record), format(r));
  }
}

namespace {

// The body of `r`'s packet: encode_packet's bytes without the header and the CRC.
Bytes body_of(const loopcanary::BlockRecord& r) {
  std::vector<std::uint8_t> buffer(loopcanary::kMaxPacketBytes);
  const std::size_t n = loopcanary::encode_packet(r, buffer.data(), buffer.size());
  return Bytes(buffer.begin() + static_cast<std::ptrdiff_t>(loopcanary::kPacketHeaderBytes),
               buffer.begin() + static_cast<std::ptrdiff_t>(n - loopcanary::kPacketTrailerBytes));
}

// A wait part of one object, as the specification lays it out: count 1, other 0, a mutex at
// 0x40 with 3 samples, no descriptor, value 0, `text`, owner 77 "journal" of no loop, `frames`
// holder frames 0x1000 each, no chain.
Bytes wait_part(unsigned kind = 1, unsigned frames = 1, const std::string& text = "") {
  Bytes b{1, 0, static_cast<std::uint8_t>(kind), 3, 0x40, 0, 0};
  lt::test::put_str(b, text, false);
  b.push_back(77);
  lt::test::put_str(b, "journal", false);
  lt::test::put_str(b, "", false);
  b.push_back(static_cast<std::uint8_t>(frames));
  for (unsigned f = 0; f < frames; ++f) lt::test::put_uv(b, 0x1000);
  b.push_back(0);  // no chain of holders
  return b;
}

}  // namespace

TEST(PacketReader, AWaitPartFromTheSpecificationDecodes) {
  const Bytes body = body_of(hang_record()) + wait_part();
  const Decoded d = decode(make_packet(body, 1, 4));
  ASSERT_TRUE(d.problems.empty()) << d.problems[0].what;
  ASSERT_EQ(d.records.size(), 1u);
  const loopcanary::WaitSummary& w = d.records[0].record.wait;
  ASSERT_EQ(w.count, 1u);
  EXPECT_EQ(w.objects[0].object.kind, loopcanary::WaitKind::mutex);
  EXPECT_EQ(w.objects[0].samples, 3u);
  EXPECT_EQ(w.objects[0].object.address, 0x40u);
  EXPECT_EQ(w.objects[0].object.fd, -1);
  EXPECT_EQ(w.objects[0].object.owner, 77u);
  EXPECT_STREQ(w.objects[0].object.owner_name, "journal");
  EXPECT_EQ(w.objects[0].owner_loop, nullptr);
  ASSERT_EQ(w.objects[0].holder_pc_count, 1u);
  EXPECT_EQ(w.objects[0].holder_frames[0], 0x1000u);
  // Version 3 has no wait part: the same bytes are left over.
  const Decoded old = decode(make_packet(body, 1, 3));
  ASSERT_EQ(old.problems.size(), 1u);
  EXPECT_NE(old.problems[0].what.find("bytes after the last sample"), std::string::npos) << old.problems[0].what;
}

TEST(PacketReader, EveryMalformedWaitPartIsRejected) {
  const Bytes base = body_of(hang_record());
  struct Case {
    const char* name;
    Bytes wait;
    WarningKind kind;
    const char* what;
  };
  Bytes too_many = wait_part();
  too_many[0] = static_cast<std::uint8_t>(loopcanary::kWaitObjects + 1);
  Bytes wide_fd = wait_part();
  wide_fd.erase(wide_fd.begin() + 5);  // the fd's one byte becomes five
  wide_fd.insert(wide_fd.begin() + 5, {0x82, 0x80, 0x80, 0x80, 0x08});
  Bytes long_chain = wait_part();
  long_chain.back() = 4 << 1;
  const Bytes whole = wait_part();
  const Bytes cut(whole.begin(), whole.begin() + 9);  // up to the owner: its names are missing
  const Case cases[] = {
      {"kind 0", wait_part(0), WarningKind::malformed_packet, "(wait kind): 0 (none) is no wait object"},
      {"kind 11", wait_part(11), WarningKind::malformed_packet, "(wait kind): 11 is not one of 0..10"},
      {"more objects than this build holds", too_many, WarningKind::unknown_config, "LOOPCANARY_WAIT_OBJECTS"},
      {"a text of 64 bytes", wait_part(1, 1, std::string(64, 'x')), WarningKind::malformed_packet,
       "(wait text): a name of 64 bytes, over 63"},
      {"a descriptor over 2^31 - 1", wide_fd, WarningKind::malformed_packet, "(wait fd)"},
      {"more holder frames than the packet's", wait_part(1, 9), WarningKind::malformed_packet, "max frames"},
      {"ends inside an object", cut, WarningKind::malformed_packet, "the body ends inside"},
      {"a chain of 4 hops", long_chain, WarningKind::malformed_packet, "(wait chain): 4 hops, over 3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expect_only_problem(make_packet(base + c.wait, 1, 4), c.kind, c.what);
  }
}
