// SPDX-License-Identifier: MIT
// The packet bodies' field lists (loopcanary/packet_fields.hpp) against their specification,
// docs/report-format.md: every entry the lists name is a field of its packet's table, in the
// list's order, with the encoding its codec writes. (The encoders and the decoder walk the same
// lists; the packet round-trip tests hold them to each other.)
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loopcanary/packet_fields.hpp"

namespace {

// One row of a specification table: its names (the backquoted words of the first cell) and its
// encoding cell.
struct Row {
  std::vector<std::string> names;
  std::string encoding;
};

std::vector<std::string> backquoted(const std::string& cell) {
  std::vector<std::string> names;
  for (std::size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', at)) {
    const std::size_t close = cell.find('`', at + 1);
    if (close == std::string::npos) break;
    names.push_back(cell.substr(at + 1, close - at - 1));
    at = close + 1;
  }
  return names;
}

// The rows of the first table after the line that starts with `heading`.
std::vector<Row> table_after(const std::string& heading) {
  std::ifstream in(std::string(LOOPCANARY_SCHEMA_DIR) + "/../report-format.md");
  EXPECT_TRUE(in.good()) << "docs/report-format.md";
  std::string line;
  while (std::getline(in, line) && line.rfind(heading, 0) != 0) {
  }
  EXPECT_TRUE(in.good()) << "docs/report-format.md has no line starting " << heading;
  std::vector<Row> rows;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("|", 0) != 0) {
      if (in_table) break;
      continue;
    }
    in_table = true;
    std::vector<std::string> cells;
    std::stringstream split(line.substr(1));
    for (std::string cell; std::getline(split, cell, '|');) cells.push_back(cell);
    if (cells.size() >= 2) rows.push_back(Row{backquoted(cells[0]), cells[1]});
  }
  EXPECT_FALSE(rows.empty()) << heading;
  return rows;
}

// One entry of a list: its name as the specification spells it (the member after the last '.'),
// its codec and width.
struct Entry {
  std::string name;
  std::string codec;
  int bits;
};
#define LOOPCANARY_ENTRY(name, codec, bits, since) entries.push_back(Entry{#name, #codec, bits});

std::string spec_name(const std::string& member) { return member.substr(member.rfind('.') + 1); }

// The encoding a codec writes, as the specification's encoding cell starts.
std::string encoding_of(const Entry& e) {
  if (e.codec == "number") return "`uv` " + std::to_string(e.bits);
  return "`u8`";  // byte, phase, cause, flags
}

// Each entry other than `section` and `memory` (their rows name their parts) is a row of `rows`
// after the previous one, with its encoding.
void expect_in_order(const std::vector<Entry>& entries, const std::vector<Row>& rows, const std::string& table) {
  std::size_t next = 0;
  for (const Entry& e : entries) {
    if (e.codec == "section" || e.codec == "memory") continue;
    const std::string name = spec_name(e.name);
    std::size_t at = next;
    while (at < rows.size() && std::find(rows[at].names.begin(), rows[at].names.end(), name) == rows[at].names.end()) {
      ++at;
    }
    ASSERT_LT(at, rows.size()) << table << ": no row for " << e.name << " after the previous entry's";
    EXPECT_EQ(rows[at].encoding.find(" " + encoding_of(e)), 0u)
        << table << ": " << e.name << " is " << encoding_of(e) << ", the specification says" << rows[at].encoding;
    next = at;  // a row may name several fields ("`dispatches`, `busy_ticks`")
  }
}

TEST(PacketFields, TheBlockPacketsListsFollowTheSpecification) {
  std::vector<Entry> entries;
  LOOPCANARY_BLOCK_PACKET_FIELDS(LOOPCANARY_ENTRY)
  LOOPCANARY_BLOCK_PACKET_SAMPLE_FIELDS(LOOPCANARY_ENTRY)
  expect_in_order(entries, table_after("### Body of a `block` packet"), "block packet");
}

TEST(PacketFields, TheWaitObjectsListFollowsTheSpecification) {
  std::vector<Entry> entries;
  LOOPCANARY_WAIT_PACKET_FIELDS(LOOPCANARY_ENTRY)
  expect_in_order(entries, table_after("A wait object ("), "wait object");
}

TEST(PacketFields, TheHealthPacketsListsFollowTheSpecification) {
  std::vector<Entry> entries;
  LOOPCANARY_HEALTH_PACKET_FIELDS(LOOPCANARY_ENTRY)
  const std::vector<Row> rows = table_after("### Binary form: a `health` packet");
  expect_in_order(entries, rows, "health packet");

  // The events row names each value in its encoding cell, in order, all `uv` 32.
  entries.clear();
  LOOPCANARY_EVENT_HEALTH_PACKET_FIELDS(LOOPCANARY_ENTRY)
  const auto events = std::find_if(rows.begin(), rows.end(), [](const Row& r) { return r.encoding.find("each: ") != std::string::npos; });
  ASSERT_NE(events, rows.end()) << "health packet: no events row";
  const std::vector<std::string> spec = backquoted(events->encoding.substr(events->encoding.find("each: ")));
  ASSERT_EQ(spec.size(), entries.size()) << "health packet events: " << events->encoding;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(spec[i], entries[i].name) << "health packet events, value " << i;
    EXPECT_EQ(encoding_of(entries[i]), "`uv` 32") << entries[i].name;
  }
}

TEST(PacketFields, TheObservationPacketsListFollowsTheSpecification) {
  std::vector<Entry> entries;
  LOOPCANARY_OBSERVATION_PACKET_FIELDS(LOOPCANARY_ENTRY)
  expect_in_order(entries, table_after("**`observation` (type 6)**"), "observation packet");
}

}  // namespace
