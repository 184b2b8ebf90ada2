// SPDX-License-Identifier: MIT
// The field lists (loopcanary/record_fields.hpp) against everything that reads them: each field
// in docs/schema with the JSON type its value has, every scalar of the schemas in a list or
// named here as written by hand, and a health record read from its JSON line equal, field by
// field, to the same record taken into the model from a decoded packet.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "json_scanner.hpp"
#include "loopcanary/format.hpp"
#include "loopcanary/record_fields.hpp"
#include "model.hpp"

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
#define LOOPCANARY_LISTED(name, value, unit) listed[prefix + #name] = json_type(value);

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

// A health record with every field set, distinct values, and its events.
HealthRecord full_health() {
  static const Event tick{"control_tick"};
  static const Event unnamed{""};
  HealthRecord r;
  r.number = 3;
  r.qualifier = "fw-2.1";
  r.loop = "main";
  r.loop_index = 2;
  r.tick_hz = 32'768;
  r.start = 0xFFFF'0000u;  // the window wraps
  r.end = 0x0000'8000u;
  r.dispatches = 1'234;
  r.busy_ticks = 40'000;
  r.idle_ticks = 30'000;
  r.has_idle = true;
  r.blocks = 5;
  r.hangs = 1;
  r.max_duration = 9'999;
  r.health_dropped = 7;
  r.event_count = 2;
  r.events[0] = {&tick, 100, 2, 3, 4, 33, 66, 99, 1'000, 3'277, 164};
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

#define LOOPCANARY_EXPECT_SAME(name, value, unit) EXPECT_EQ(from_packet.name, from_json.name) << case_name << ": " #name;

void expect_same(const HealthLog& from_packet, const HealthLog& from_json, const char* case_name) {
  LOOPCANARY_HEALTH_FIELDS(LOOPCANARY_EXPECT_SAME)
  ASSERT_EQ(from_packet.events.size(), from_json.events.size()) << case_name;
  for (std::size_t i = 0; i < from_json.events.size(); ++i) {
    const EventHealth& a = from_packet.events[i];
    const EventHealth& b = from_json.events[i];
#define LOOPCANARY_EXPECT_SAME_EVENT(name, value, unit) EXPECT_EQ(a.name, b.name) << case_name << ": events." #name;
    LOOPCANARY_EVENT_HEALTH_FIELDS(LOOPCANARY_EXPECT_SAME_EVENT)
#undef LOOPCANARY_EXPECT_SAME_EVENT
  }
}

TEST(RecordFields, AHealthPacketGoesIntoTheModelAsItsJsonLineReads) {
  HealthRecord r = full_health();
  HealthLog direct;
  health_log_from(r, direct);
  expect_same(direct, parsed(r), "full");
  EXPECT_EQ(direct.events[1].event, "?");  // an empty event name reads as the writers print a null one
  EXPECT_EQ(direct.idle_us, std::optional<std::uint64_t>(915'527u));  // 30000 ticks at 32768 Hz

  r.has_idle = false;
  r.event_count = 0;
  r.qualifier = nullptr;
  health_log_from(r, direct);
  expect_same(direct, parsed(r), "no idle, no events, no qualifier");
  EXPECT_FALSE(direct.idle_us.has_value());

  r.tick_hz = 0;
  health_log_from(r, direct);
  expect_same(direct, parsed(r), "no tick rate");
  EXPECT_EQ(direct.window_us, 0u);
}

}  // namespace
}  // namespace loopcanary::tool
