// SPDX-License-Identifier: MIT
// Stack evidence on the evidence stream (LOOPCANARY_STACK_WORDS > 0): the core and this test
// compiled with LOOPCANARY_STACK_WORDS=4 (tests/CMakeLists.txt), a Monitor stamped with explicit
// ticks, an EvidenceWatchdog polled by hand, its Hal's capture_words scripted. The sample packets
// in the ring are read back field by field as docs/report-format.md lays them out: the
// configuration bit and the stack words byte, each sample's stack part; words whose offsets do
// not increase are dropped by the watchdog; a capture_words that has none gives presence 0; a
// StaticWatchdog, whose records carry no stack evidence, never calls it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"

static_assert(loopcanary::kStackWords == 4, "this test must be built with LOOPCANARY_STACK_WORDS=4");

namespace {

namespace lc = loopcanary;

constexpr lc::Event kSlow{"slow"};

// What capture_words gives, by script; counts its calls.
struct Script {
  bool has = true;
  std::vector<std::pair<std::uint16_t, lc::Frame>> words;
  int calls = 0;
};
Script g_script;

std::size_t capture_pc(void*, const lc::Monitor&, lc::Frame* pcs, std::size_t max) {
  if (max == 0) return 0;
  pcs[0] = 0x1010;
  return 1;
}

bool capture_words(void*, const lc::Monitor&, lc::StackEvidence* out) {
  ++g_script.calls;
  if (!g_script.has) return false;
  out->sp = 0x20000100;
  out->lr = 0x3005;
  out->fp = 0x20000180;
  out->has_fp = true;
  for (const auto& [offset, value] : g_script.words) {
    // As a careless port might: offsets written without add(), whatever their order.
    out->offset[out->count] = offset;
    out->value[out->count] = value;
    ++out->count;
  }
  return true;
}

lc::Hal scripted_hal() {
  lc::Hal hal{};
  hal.capture_stack = &capture_pc;
  hal.capture_words = &capture_words;
  return hal;
}

lc::MonitorConfig loop_config() {
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = 1'000'000;
  config.threshold_us = 20'000;
  config.sample_interval_us = 5'000;
  return config;
}

// The packets of a capture, as (type, body) in order.
struct Packet {
  std::uint8_t type;
  std::vector<std::uint8_t> body;
};
std::vector<Packet> packets_of(const std::vector<std::uint8_t>& bytes) {
  std::vector<Packet> out;
  for (std::size_t at = 0; at + lc::kPacketHeaderBytes <= bytes.size();) {
    const std::size_t n = lc::packet_size(&bytes[at]);
    out.push_back({bytes[at + 3], std::vector<std::uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(at + 6),
                                                            bytes.begin() + static_cast<std::ptrdiff_t>(at + n - 4))});
    at += n;
  }
  return out;
}

void append(void* capture, const std::uint8_t* data, std::size_t size) {
  auto* out = static_cast<std::vector<std::uint8_t>*>(capture);
  out->insert(out->end(), data, data + size);
}

std::uint64_t uv(const std::vector<std::uint8_t>& b, std::size_t& at) {
  std::uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    const std::uint8_t c = b.at(at++);
    v |= std::uint64_t{c & 0x7Fu} << shift;
    if ((c & 0x80u) == 0) return v;
  }
}

// A sample body's stack part: (presence, words as (offset, value)).
struct StackPart {
  unsigned presence = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words;
};
StackPart stack_part_of(const std::vector<std::uint8_t>& body) {
  std::size_t at = 1;  // the watch
  uv(body, at);        // at
  uv(body, at);        // seq
  const unsigned scopes = body.at(at++);
  const unsigned pcs = body.at(at++);
  EXPECT_EQ(scopes, 0u);
  for (unsigned i = 0; i < pcs; ++i) uv(body, at);
  StackPart part;
  part.presence = body.at(at++);
  if (part.presence != 0) {
    EXPECT_EQ(uv(body, at), 0x20000100u);  // sp
    EXPECT_EQ(uv(body, at), 0x3005u);      // lr
    if (part.presence == 3) {
      EXPECT_EQ(uv(body, at), 0x20000180u);  // fp
    }
    const unsigned count = body.at(at++);
    std::uint64_t next = 0;
    for (unsigned i = 0; i < count; ++i) {
      const std::uint64_t offset = next + uv(body, at);
      part.words.emplace_back(offset, uv(body, at));
      next = offset + 1;
    }
  }
  EXPECT_EQ(at, body.size()) << "bytes after the stack part";
  return part;
}

// One block of 30 ms polled every 5 ms by an evidence watchdog: its sample packets' stack parts.
std::vector<StackPart> sampled_block() {
  alignas(lc::StaticEvidenceRing<4096>) static unsigned char memory[sizeof(lc::StaticEvidenceRing<4096>)];
  std::fill(std::begin(memory), std::end(memory), 0);
  auto& ring = *::new (static_cast<void*>(memory)) lc::StaticEvidenceRing<4096>;
  ring.open(lc::ResetCause::unknown);
  lc::Monitor monitor;
  lc::StaticEvidenceWatchdog<1> watchdog;
  EXPECT_EQ(monitor.init(loop_config()), lc::Status::ok);
  EXPECT_EQ(watchdog.init(lc::WatchdogConfig{}, scripted_hal(), ring), lc::Status::ok);
  EXPECT_EQ(watchdog.add(monitor), lc::Status::ok);
  monitor.begin_at(kSlow, 0);
  for (lc::tick_t now = 0; now <= 30'000; now += 5'000) watchdog.poll(now);
  std::vector<std::uint8_t> bytes;
  ring.drain({&append, &bytes});
  std::vector<StackPart> parts;
  for (const Packet& p : packets_of(bytes)) {
    if (p.type == static_cast<std::uint8_t>(lc::PacketType::watch)) {
      EXPECT_EQ(p.body.at(0) & lc::detail::kConfigurationStackEvidence, lc::detail::kConfigurationStackEvidence);
      EXPECT_EQ(p.body.at(5), 4u);  // stack words, after the five capacities
    }
    if (p.type == static_cast<std::uint8_t>(lc::PacketType::sample)) parts.push_back(stack_part_of(p.body));
  }
  return parts;
}

}  // namespace

TEST(StackEvidence, EachSampleCarriesItsWordsByOffset) {
  g_script = Script{};
  g_script.words = {{1, 0x3005}, {4, 0x2001}, {300, 0xFFFFFFFF}};
  const std::vector<StackPart> parts = sampled_block();
  ASSERT_GE(parts.size(), 3u);
  EXPECT_EQ(g_script.calls, static_cast<int>(parts.size()));
  for (const StackPart& part : parts) {
    EXPECT_EQ(part.presence, 3u);
    ASSERT_EQ(part.words.size(), 3u);
    EXPECT_EQ(part.words[0], (std::pair<std::uint64_t, std::uint64_t>{1, 0x3005}));
    EXPECT_EQ(part.words[1], (std::pair<std::uint64_t, std::uint64_t>{4, 0x2001}));
    EXPECT_EQ(part.words[2], (std::pair<std::uint64_t, std::uint64_t>{300, 0xFFFFFFFF}));
  }
}

TEST(StackEvidence, WordsFromTheFirstOffsetThatDoesNotIncreaseAreDropped) {
  g_script = Script{};
  g_script.words = {{2, 0x3005}, {7, 0x2001}, {7, 0x2003}, {9, 0x2005}};
  for (const StackPart& part : sampled_block()) {
    ASSERT_EQ(part.words.size(), 2u);
    EXPECT_EQ(part.words[1].first, 7u);
  }
}

TEST(StackEvidence, APortWithoutWordsGivesASampleWithoutAStackPart) {
  g_script = Script{};
  g_script.has = false;
  const std::vector<StackPart> parts = sampled_block();
  ASSERT_FALSE(parts.empty());
  for (const StackPart& part : parts) EXPECT_EQ(part.presence, 0u);
  // add() keeps at most kStackWords.
  lc::StackEvidence e{};
  for (std::uint16_t i = 0; i < 4; ++i) EXPECT_TRUE(e.add(i, 1));
  EXPECT_FALSE(e.add(9, 1));
  EXPECT_EQ(e.count, 4u);
}

TEST(StackEvidence, ARecordsWatchdogNeverAsksForIt) {
  g_script = Script{};
  lc::Monitor monitor;
  lc::StaticWatchdog<1, 4> watchdog;
  ASSERT_EQ(monitor.init(loop_config()), lc::Status::ok);
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}, scripted_hal()), lc::Status::ok);
  ASSERT_EQ(watchdog.add(monitor), lc::Status::ok);
  monitor.begin_at(kSlow, 0);
  for (lc::tick_t now = 0; now <= 30'000; now += 5'000) watchdog.poll(now);
  lc::BlockRecord record;
  ASSERT_TRUE(watchdog.pop(record));  // the in-progress report, with its samples
  EXPECT_GT(record.samples_taken, 0u);
  EXPECT_EQ(g_script.calls, 0);
}
