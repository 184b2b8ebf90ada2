// SPDX-License-Identifier: MIT
// The field lists (loopcanary/record_fields.hpp) against everything that reads them: each field
// in docs/schema with the JSON type its value has, every scalar of the schemas in a list or
// named here as written by hand, a block or health record read from its JSON line equal, field
// by field (its wait summary too), to the same record taken into the model from a decoded
// packet, and a record with every listed field set carried whole through its binary packet.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "json_scanner.hpp"
#include "loopcanary/format.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/record_fields.hpp"
#include "model.hpp"
#include "../record_fixtures.hpp"
#include "packet_reader.hpp"
#include "same_record.hpp"

namespace loopcanary::tool {
namespace {

using json::Scanner;

// A schema's scalar properties by path ("cpu.thread_us"; an array's items share its path):
// "integer", "string", "integer|null", "enum" or "const".
bool walk_schema(Scanner& s, const std::string& path, std::map<std::string, std::string>& types) {
  return s.object([&](std::string_view key) {
    if (key == "type") {
      std::string type;
      if (s.is('"')) {
        if (!s.str("type", type)) return false;
      } else {
        const bool ok = s.array([&](std::size_t i) {
          std::string one;
          if (!s.str("type", one)) return false;
          type += (i != 0 ? "|" : "") + one;
          return true;
        });
        if (!ok) return false;
      }
      if (type != "object" && type != "array") types[path] = type;
      return true;
    }
    if (key == "enum" || key == "const") {
      types[path] = std::string(key);
      return s.skip_value();
    }
    if (key == "properties") {
      return s.object([&](std::string_view name) {
        return walk_schema(s, path.empty() ? std::string(name) : path + "." + std::string(name), types);
      });
    }
    if (key == "items") return walk_schema(s, path, types);
    if (key == "oneOf" || key == "anyOf") return s.array([&](std::size_t) { return walk_schema(s, path, types); });
    return s.skip_value();  // $defs, descriptions, bounds
  });
}

std::map<std::string, std::string> schema_types(const char* file) {
  std::ifstream in(std::string(LOOPCANARY_SCHEMA_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  const std::string schema = text.str();
  Scanner s(schema.data(), schema.size());
  std::map<std::string, std::string> types;
  EXPECT_TRUE(walk_schema(s, "", types)) << file << ": " << s.what;
  EXPECT_FALSE(types.empty()) << file;
  return types;
}

// The JSON type of a field list's value, by its C++ type (record_fields.hpp).
const char* json_type(const char*) { return "string"; }
const char* json_type(std::uint64_t) { return "integer"; }
const char* json_type(Maybe) { return "integer|null"; }
const char* json_type(Phase) { return "enum"; }
const char* json_type(Cause) { return "enum"; }

// Each field of a list, by path, with the JSON type of its value (`prefix`: the list's object).
using Listed = std::map<std::string, std::string>;
#define LOOPCANARY_LISTED(name, kind, value, unit) listed[prefix + #name] = json_type(value);

Listed block_fields() {
  Listed listed;
  const BlockRecord r{};
  std::string prefix;
  LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_LISTED)
  prefix = "cpu.";
  LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_LISTED)
  prefix = "samples.";
  LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_LISTED)
  return listed;
}

Listed health_fields() {
  Listed listed;
  const HealthRecord r{};
  const EventHealthWindow e{};
  const tick_t window = 1;
  std::string prefix;
  LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_LISTED)
  prefix = "events.";
  LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_LISTED)
  return listed;
}

// Checks each listed field against the schema, and that each scalar of the schema is listed, or
// is one of `by_hand` (written beside the lists), or lies under one of `extension_prefixes`.
void expect_agreement(const char* file, const Listed& listed, const std::set<std::string>& by_hand) {
  const std::map<std::string, std::string> schema = schema_types(file);
  for (const auto& [path, type] : listed) {
    const auto it = schema.find(path);
    ASSERT_NE(it, schema.end()) << file << " has no property " << path;
    EXPECT_EQ(it->second, type) << file << ": " << path;
  }
  for (const auto& [path, type] : schema) {
    if (path.rfind("linux.", 0) == 0 || path.rfind("symbols.", 0) == 0) continue;  // the writers' extensions
    EXPECT_TRUE(listed.count(path) != 0 || by_hand.count(path) != 0)
        << file << ": " << path << " (" << type << ") is in no field list and not written by hand";
  }
  for (const std::string& path : by_hand) {
    EXPECT_EQ(listed.count(path), 0u) << path << " is listed and also named as written by hand";
    EXPECT_NE(schema.count(path), 0u) << file << " has no property " << path;
  }
}

TEST(RecordFields, BlockFieldsAgreeWithTheSchema) {
  expect_agreement("block-record.schema.json", block_fields(),
                   {"format_version", "delayed_by", "delayed_by.dispatch", "delayed_by.event", "flags", "stages.name",
                    "stages.us", "top.count", "top.scopes", "top.pcs", "top.leaf_high", "stacks.at_us", "stacks.scopes",
                    "stacks.pcs",
                    "previous_boot", "reset_cause", "top_innermost"});
}

TEST(RecordFields, HealthFieldsAgreeWithTheSchema) {
  expect_agreement("health-record.schema.json", health_fields(), {"kind", "format_version", "histogram"});
}

// The shared health record (record_fixtures.hpp) at a clock rate whose µs round, with a second
// event of an empty name.
HealthRecord full_health() {
  static const Event unnamed{""};
  HealthRecord r = loopcanary::test::hand_health();
  r.tick_hz = 32'768;
  r.event_count = 2;
  r.events[1] = {&unnamed, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0};
  return r;
}

// The health record as the JSON reader sees it.
HealthLog parsed(const HealthRecord& r) {
  std::vector<char> buffer(8192);
  const FormatResult result = format_health_json(r, buffer.data(), buffer.size());
  EXPECT_FALSE(result.truncated);
  HealthLog log;
  WarningKind kind{};
  std::string what;
  EXPECT_TRUE(parse_health_record(buffer.data(), result.length - 1, log, kind, what)) << what;
  return log;
}

TEST(RecordFields, AHealthPacketGoesIntoTheModelAsItsJsonLineReads) {
  HealthRecord r = full_health();
  HealthLog direct;
  health_log_from(r, direct);
  EXPECT_EQ(test::first_difference(direct, parsed(r)), "") << "full";
  EXPECT_EQ(direct.events[1].event, "?");  // an empty event name reads as the writers print a null one
  EXPECT_EQ(direct.idle_us, std::optional<std::uint64_t>(1'831'054u));  // 60000 ticks at 32768 Hz

  r.has_idle = false;
  r.event_count = 0;
  r.qualifier = nullptr;
  health_log_from(r, direct);
  EXPECT_EQ(test::first_difference(direct, parsed(r)), "") << "no idle, no events, no qualifier";
  EXPECT_FALSE(direct.idle_us.has_value());

  r.tick_hz = 0;
  health_log_from(r, direct);
  EXPECT_EQ(test::first_difference(direct, parsed(r)), "") << "no tick rate";
  EXPECT_EQ(direct.window_us, 0u);
}


// The shared block record (record_fixtures.hpp) made a deadline miss with every field set, at a
// clock rate whose µs round, with names of bytes from 0x80, a null stage name and an empty scope.
DecodedRecord full_block() {
  static const Event crc{"crc"};
  static const char kCompute[] = "compute\xC3\xA9";  // "computé"
  static const char kEmpty[] = "";
  DecodedRecord d;
  BlockRecord& r = d.record;
  r = loopcanary::test::hand_block();
  r.phase = Phase::deadline_miss;
  r.cause = Cause::starved;
  r.flags = kFlagHung | kFlagRunningAtStop;
  r.tick_hz = 32'768;
  r.delayed_by_dispatch = 41;
  r.delayed_by = &crc;
  r.stages[1].name = nullptr;
  r.thread_wait_us = 4'321;
  r.has_thread_wait = true;
  r.steal_us = 77;
  r.samples[0].frames[0] = loopcanary::test::scope_frame(kCompute);
  r.top[0].frames[0] = loopcanary::test::scope_frame(kEmpty);
  return d;
}

// The block record as the JSON reader sees it (the line `loopcanary decode` writes).
LogRecord parsed(const DecodedRecord& d, bool want_stacks) {
  std::string line;
  format_record_json(d, line);
  LogRecord log;
  WarningKind kind{};
  std::string what;
  EXPECT_TRUE(parse_record(line.data(), line.size(), log, kind, what, want_stacks)) << what << "\n" << line;
  return log;
}

TEST(RecordFields, ABlockPacketGoesIntoTheModelAsItsJsonLineReads) {
  DecodedRecord d = full_block();
  LogRecord direct;
  block_log_from(d.record, d.top_innermost, direct);
  EXPECT_EQ(test::first_difference(direct, parsed(d, true)), "") << "full";
  ASSERT_EQ(direct.stacks.size(), 2u);
  EXPECT_EQ(direct.stacks[1].at_us, 3'814'697u);  // 125000 ticks at 32768 Hz
  EXPECT_EQ(direct.top[0].frames[0].scope, "?");
  EXPECT_EQ(direct.stages[1].name, "?");
  EXPECT_EQ(direct.stacks[0].frames[0].scope, "compute\xC3\xA9");  // UTF-8 as the record has it

  // What the loop waited on (record_fixtures.hpp): a lock whose holder runs a watched loop, a
  // pipe, and a lock whose holder has a name with a byte that is not UTF-8, no loop and no stack.
  if constexpr (kWaitObjects >= 3) {
    d.record.wait = loopcanary::test::hand_waiting_block().wait;
    WaitSeen& lock = d.record.wait.objects[d.record.wait.count++];
    lock.object.kind = WaitKind::mutex;
    lock.object.address = 0x7f00c8;
    lock.object.owner = 17;
    std::memcpy(lock.object.owner_name, "log\xE9", 5);
    lock.samples = 1;
    lock.chain_count = 1;  // its holder waits on the first lock: a deadlock
    lock.chain[0].address = 0x7f00a0;
    lock.chain[0].owner = 4242;
    std::memcpy(lock.chain[0].owner_name, "journal", 8);
    lock.deadlock = true;
    block_log_from(d.record, d.top_innermost, direct);
    EXPECT_EQ(test::first_difference(direct, parsed(d, true)), "") << "waits";
    ASSERT_EQ(direct.wait.objects.size(), 3u);
    EXPECT_EQ(direct.wait.other, 1u);
    ASSERT_TRUE(direct.wait.objects[0].owner.has_value());
    EXPECT_EQ(direct.wait.objects[0].owner->loop, std::optional<std::string>("journal"));
    ASSERT_EQ(direct.wait.objects[0].owner->frames.size(), 2u);
    EXPECT_EQ(direct.wait.objects[0].owner->frames[1].pc, 0x401234u);
    EXPECT_FALSE(direct.wait.objects[1].owner.has_value());
    EXPECT_EQ(direct.wait.objects[1].fd, std::optional<std::uint64_t>(5));
    EXPECT_EQ(direct.wait.objects[2].owner->name, "log\xEF\xBF\xBD");  // not UTF-8: U+FFFD, as JSON has it
    EXPECT_FALSE(direct.wait.objects[2].owner->loop.has_value());
    ASSERT_EQ(direct.wait.objects[2].chain.size(), 1u);
    EXPECT_EQ(direct.wait.objects[2].chain[0].tid, 4242u);
    EXPECT_TRUE(direct.wait.objects[2].deadlock);
    // Back to the core's reading, each names its object as the record's own reading does.
    for (std::size_t i = 0; i < direct.wait.objects.size(); ++i) {
      char expected[256];
      const FormatResult result = format_wait(d.record.wait.objects[i], expected, sizeof expected);
      EXPECT_EQ(wait_text(direct.wait.objects[i]), std::string(expected, result.length)) << i;
    }
    d.record.wait = loopcanary::WaitSummary{};
  }

  // The same model object again (its storage reused), with less in it.
  d.top_innermost = true;
  d.record.phase = Phase::final;
  d.record.flags = kFlagUnwatched | kFlagEndEstimated;
  d.record.delayed_by_dispatch = 0;
  d.record.delayed_by = nullptr;
  d.record.stage_count = 0;
  d.record.has_thread_cpu = false;
  d.record.has_thread_wait = true;
  d.record.thread_wait_us = 5;
  d.record.system_busy_permille = kUnknownPermille;
  d.record.process_permille = 300;
  d.record.top_count = 1;
  d.record.sample_count = 1;
  d.record.event = nullptr;
  block_log_from(d.record, d.top_innermost, direct);
  EXPECT_EQ(test::first_difference(direct, parsed(d, true)), "") << "innermost, no stages";
  EXPECT_FALSE(direct.top_stacks);

  block_log_from(d.record, d.top_innermost, direct, false);
  EXPECT_EQ(test::first_difference(direct, parsed(d, false)), "") << "without stacks";
  EXPECT_TRUE(direct.stacks.empty());
}


// Every listed field of a model holds something other than its default: a round trip that lost
// one would show.
bool set(std::uint64_t v) { return v != 0; }
bool set(const std::optional<std::uint64_t>& v) { return v.has_value() && *v != 0; }
bool set(const std::string& v) { return !v.empty(); }
bool set(Phase v) { return v != Phase::final; }
bool set(Cause v) { return v != Cause::unknown; }
#define LOOPCANARY_EXPECT_SET(name, kind, value, unit) EXPECT_TRUE(set(log.name)) << #name;
#define LOOPCANARY_EXPECT_SET_CPU(name, kind, value, unit) EXPECT_TRUE(set(log.cpu_##name)) << "cpu." #name;
#define LOOPCANARY_EXPECT_SET_SAMPLES(name, kind, value, unit) EXPECT_TRUE(set(log.samples_##name)) << "samples." #name;
#define LOOPCANARY_EXPECT_SET_EVENT(name, kind, value, unit) EXPECT_TRUE(set(event.name)) << "events." #name;

// A capture of one packet, decoded by the tool's capture reader.
DecodedRecord decode_one(const std::vector<std::uint8_t>& packet) {
  DecodedRecord decoded;
  int records = 0;
  CaptureReader reader;
  reader.read(
      packet.data(), packet.size(),
      [&](DecodedRecord& d) {
        decoded = std::move(d);
        ++records;
      },
      [](WarningKind, std::uint64_t offset, const std::string& what) { ADD_FAILURE() << offset << ": " << what; });
  EXPECT_EQ(records, 1);
  return decoded;
}

TEST(RecordFields, ABlockPacketCarriesEveryListedField) {
  const DecodedRecord d = full_block();
  LogRecord log;
  block_log_from(d.record, false, log);
  LOOPCANARY_BLOCK_FIELDS(LOOPCANARY_EXPECT_SET)
  LOOPCANARY_BLOCK_CPU_FIELDS(LOOPCANARY_EXPECT_SET_CPU)
  LOOPCANARY_BLOCK_SAMPLE_FIELDS(LOOPCANARY_EXPECT_SET_SAMPLES)

  std::vector<std::uint8_t> packet(kMaxPacketBytes);
  packet.resize(encode_packet(d.record, packet.data(), packet.size()));
  ASSERT_FALSE(packet.empty());
  const DecodedRecord back = decode_one(packet);
  LogRecord from_packet;
  block_log_from(back.record, back.top_innermost, from_packet);
  EXPECT_EQ(test::first_difference(from_packet, log), "") << "packet";
}

TEST(RecordFields, AHealthPacketCarriesEveryListedField) {
  const HealthRecord r = full_health();
  HealthLog log;
  health_log_from(r, log);
  LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_EXPECT_SET)
  const EventHealth& event = log.events[0];
  LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_EXPECT_SET_EVENT)

  std::vector<std::uint8_t> packet(kMaxHealthPacketBytes);
  packet.resize(encode_health_packet(r, packet.data(), packet.size()));
  ASSERT_FALSE(packet.empty());
  const DecodedRecord back = decode_one(packet);
  ASSERT_TRUE(back.is_health);
  HealthLog from_packet;
  health_log_from(back.health, from_packet);
  EXPECT_EQ(test::first_difference(from_packet, log), "") << "packet";
}

}  // namespace
}  // namespace loopcanary::tool
