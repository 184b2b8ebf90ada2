// SPDX-License-Identifier: MIT
// The wire pieces of `loopcanary export --format pprof` (sim/tool/pprof.hpp): protobuf varints
// and fields, and the stored gzip member around them. The profile itself is read by Go's pprof
// in tests/fleet (fleet.pprof).
#include "pprof.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>

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

}  // namespace
}  // namespace loopcanary::tool::exporting
