// SPDX-License-Identifier: MIT
// The wire pieces of `loopcanary export --format pprof` (sim/tool/pprof.hpp): protobuf varints
// and fields, and the stored gzip member around them; the labels of a profile's samples, read
// back here. The profile itself is read by Go's pprof in tests/fleet (fleet.pprof).
#include "pprof.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../record_fixtures.hpp"

namespace loopcanary::tool::exporting {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

std::uint32_t le32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
  return v;
}

TEST(PprofWire, VarintsAndFields) {
  std::string out;
  put_varint(out, 0);
  put_varint(out, 1);
  put_varint(out, 300);
  put_varint(out, UINT64_MAX);
  EXPECT_EQ(out, bytes({0x00, 0x01, 0xAC, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
  out.clear();
  put_varint_field(out, 1, 150);    // key (1 << 3) | 0
  put_bytes_field(out, 6, "ab");    // key (6 << 3) | 2, length, bytes
  put_key(out, 16, 2);              // a field number past 15 takes a two-byte key
  EXPECT_EQ(out, bytes({0x08, 0x96, 0x01, 0x32, 0x02, 'a', 'b', 0x82, 0x01}));
}

TEST(PprofWire, StoredGzipMember) {
  std::ostringstream out;
  StoredGzip gzip(out);
  gzip.write("12345", 5);
  gzip.write(std::string("6789"));
  gzip.finish();
  const std::string s = out.str();
  ASSERT_EQ(s.size(), 10u + 5u + 9u + 8u);
  EXPECT_EQ(s.substr(0, 4), bytes({0x1F, 0x8B, 8, 0}));       // magic, deflate, no flags
  EXPECT_EQ(s.substr(10, 5), bytes({0x01, 9, 0, 0xF6, 0xFF}));  // final stored block, LEN 9, NLEN
  EXPECT_EQ(s.substr(15, 9), "123456789");
  EXPECT_EQ(le32(s, 24), 0xCBF43926u);  // CRC-32 of "123456789" (the check value)
  EXPECT_EQ(le32(s, 28), 9u);           // ISIZE
  EXPECT_EQ(gzip.bytes_in(), 9u);
}

TEST(PprofWire, StoredGzipSplitsBlocksAt65535Bytes) {
  std::ostringstream out;
  StoredGzip gzip(out);
  const std::string big(65535 + 10, 'x');
  gzip.write(big);
  gzip.finish();
  const std::string s = out.str();
  ASSERT_EQ(s.size(), 10u + 5u + 65535u + 5u + 10u + 8u);
  EXPECT_EQ(s.substr(10, 5), bytes({0x00, 0xFF, 0xFF, 0x00, 0x00}));  // not final, LEN 65535
  EXPECT_EQ(s.substr(10 + 5 + 65535, 5), bytes({0x01, 10, 0, 0xF5, 0xFF}));
  EXPECT_EQ(le32(s, s.size() - 4), 65545u);
}

// A protobuf message's fields, in order: number, and its varint or its bytes.
struct Field {
  std::uint32_t number = 0;
  std::uint64_t varint = 0;
  std::string bytes;
};

std::uint64_t read_varint(const std::string& s, std::size_t& at) {
  std::uint64_t v = 0;
  for (unsigned shift = 0; at < s.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(s[at++]);
    v |= std::uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80u) == 0) break;
  }
  return v;
}

std::vector<Field> fields_of(const std::string& message) {
  std::vector<Field> out;
  for (std::size_t at = 0; at < message.size();) {
    const std::uint64_t key = read_varint(message, at);
    Field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    if ((key & 7u) == 0) {
      f.varint = read_varint(message, at);
    } else if ((key & 7u) == 2) {
      const std::uint64_t length = read_varint(message, at);
      f.bytes = message.substr(at, static_cast<std::size_t>(length));
      at += static_cast<std::size_t>(length);
    } else {
      ADD_FAILURE() << "wire type " << (key & 7u);
      break;
    }
    out.push_back(std::move(f));
  }
  return out;
}

// The profile's message out of its stored gzip member (10 bytes of header, stored blocks).
std::string gunzip_stored(const std::string& gz) {
  std::string out;
  for (std::size_t at = 10; at + 5 <= gz.size();) {
    const bool final = (gz[at] & 1) != 0;
    const std::size_t length = static_cast<unsigned char>(gz[at + 1]) | std::size_t{static_cast<unsigned char>(gz[at + 2])} << 8;
    out += gz.substr(at + 5, length);
    at += 5 + length;
    if (final) break;
  }
  return out;
}

// Each sample's string labels (key → value) of a profile.
std::vector<std::map<std::string, std::string>> sample_labels(const std::string& gz) {
  std::vector<std::string> strings;
  std::vector<std::string> samples;
  for (const Field& f : fields_of(gunzip_stored(gz))) {
    if (f.number == 6) strings.push_back(f.bytes);
    if (f.number == 2) samples.push_back(f.bytes);
  }
  std::vector<std::map<std::string, std::string>> out;
  for (const std::string& sample : samples) {
    std::map<std::string, std::string>& labels = out.emplace_back();
    for (const Field& label : fields_of(sample)) {
      if (label.number != 3) continue;
      std::uint64_t key = 0, value = 0;
      for (const Field& f : fields_of(label.bytes)) (f.number == 1 ? key : value) = f.number <= 2 ? f.varint : 0;
      labels[strings.at(key)] = strings.at(value);
    }
  }
  return out;
}

// Every sample of a block that waited names its main wait object (as every form does) and the
// object's holder; a block that did not wait has no such labels.
TEST(PprofLabels, TheSamplesOfABlockThatWaitedNameTheObjectAndItsHolder) {
  if constexpr (kWaitObjects < 2) GTEST_SKIP() << "a build without wait objects";
  Block waited, computed;
  block_log_from(loopcanary::test::hand_waiting_block(), false, waited.record);
  waited.id = "aaaaaaaaaaaa";
  block_log_from(loopcanary::test::hand_block(), false, computed.record);
  computed.id = "bbbbbbbbbbbb";
  std::ostringstream out;
  const std::unique_ptr<Writer> writer = make_pprof_writer(out);
  writer->add(waited);
  writer->add(computed);
  writer->finish(ReadStats{}, BlockStats{});
  const std::vector<std::map<std::string, std::string>> samples = sample_labels(out.str());
  std::size_t waiting = 0, other = 0;
  for (const auto& labels : samples) {
    if (labels.at("block_id") == waited.id) {
      ++waiting;
      EXPECT_EQ(labels.at("cause"), "waiting");
      EXPECT_EQ(labels.count("wait") == 1 ? labels.at("wait") : "(none)",
                "mutex 0x7f00a0 held by 'journal' (tid 4242, loop 'journal')");
      EXPECT_EQ(labels.count("holder") == 1 ? labels.at("holder") : "(none)", "journal (tid 4242)");
    } else {
      ++other;
      EXPECT_EQ(labels.count("wait"), 0u);
      EXPECT_EQ(labels.count("holder"), 0u);
    }
  }
  EXPECT_EQ(waiting, 3u);  // its two stacks and the samples of top_other
  EXPECT_EQ(other, 3u);
}

}  // namespace
}  // namespace loopcanary::tool::exporting
