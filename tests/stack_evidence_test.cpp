// SPDX-License-Identifier: MIT
// Stack evidence (LOOPCANARY_STACK_WORDS > 0): the core and this test compiled with
// LOOPCANARY_STACK_WORDS=4 (tests/CMakeLists.txt), a Monitor stamped with explicit ticks, a
// watchdog polled by hand, its Hal's capture_words scripted. The evidence stream: the sample
// packets in the ring are read back field by field as docs/report-format.md lays them out (the
// configuration bit and the stack words byte, each sample's stack part); words whose offsets do
// not increase are dropped by the watchdog; a capture_words that has none gives presence 0. The
// records (a StaticWatchdog): one top entry per stack evidence (same_stack_evidence), kept in the
// record's slots and named by the kept samples (a stack of one PC merged by its words); samples
// beyond the table have none; a block
// packet carries it and a buffer of kMaxPacketBytes holds the largest.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/assembler.hpp"
#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"

static_assert(loopcanary::kStackWords == 4, "this test must be built with LOOPCANARY_STACK_WORDS=4");

namespace {

namespace lc = loopcanary;

constexpr lc::Event kSlow{"slow"};

// One stack evidence capture_words may give.
struct Capture {
  lc::Frame sp = 0x20000100;
  lc::Frame fp = 0x20000180;
  std::vector<std::pair<std::uint16_t, lc::Frame>> words;
};

// What capture_words gives, by script (`variants`, when any, in turn from the first call;
// else `words`); counts its calls.
struct Script {
  bool has = true;
  std::vector<std::pair<std::uint16_t, lc::Frame>> words;
  std::vector<Capture> variants;
  int calls = 0;
};
Script g_script;

// The sample's one PC: 0x1010, or by script (`pcs`, in turn).
std::vector<lc::Frame> g_pcs;
int g_pc_calls = 0;
std::size_t capture_pc(void*, const lc::Monitor&, lc::Frame* pcs, std::size_t max) {
  if (max == 0) return 0;
  const auto call = static_cast<std::size_t>(g_pc_calls++);
  pcs[0] = g_pcs.empty() ? lc::Frame{0x1010} : g_pcs[call % g_pcs.size()];
  return 1;
}

bool capture_words(void*, const lc::Monitor&, lc::StackEvidence* out) {
  const int call = g_script.calls++;
  if (!g_script.has) return false;
  Capture capture;
  capture.words = g_script.words;
  if (!g_script.variants.empty()) capture = g_script.variants[static_cast<std::size_t>(call) % g_script.variants.size()];
  out->sp = capture.sp;
  out->lr = 0x3005;
  out->fp = capture.fp;
  out->has_fp = true;
  for (const auto& [offset, value] : capture.words) {
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

// A records watchdog (StaticWatchdog) polled every 5 ms over a block of `ms` ms: its final record.
lc::BlockRecord recorded_block(lc::tick_t ms = 30) {
  lc::Monitor monitor;
  lc::StaticWatchdog<1, 4> watchdog;
  EXPECT_EQ(monitor.init(loop_config()), lc::Status::ok);
  EXPECT_EQ(watchdog.init(lc::WatchdogConfig{}, scripted_hal()), lc::Status::ok);
  EXPECT_EQ(watchdog.add(monitor), lc::Status::ok);
  monitor.begin_at(kSlow, 0);
  lc::tick_t now = 0;
  for (; now < ms * 1000u; now += 5'000) watchdog.poll(now);
  monitor.end_at(now);
  watchdog.poll(now);
  lc::BlockRecord record;
  while (watchdog.pop(record) && record.phase != lc::Phase::final) {
  }
  record.qualifier = "";  // the watchdog's copy of it ends with the watchdog
  EXPECT_EQ(record.phase, lc::Phase::final);
  EXPECT_EQ(record.samples_taken, static_cast<std::uint32_t>(g_script.calls));
  EXPECT_EQ(record.samples_overwritten, 0u);
  return record;
}

TEST(StackEvidence, ARecordCountsSamplesUnderOneEntryPerStackEvidence) {
  g_script = Script{};
  const Capture a{0x20000100, 0x20000180, {{1, 0x3005}, {4, 0x2001}}};
  const Capture a_lower{0x200000F0, 0x20000170, a.words};  // the same stack, 16 bytes lower
  const Capture b{0x20000100, 0x20000180, {{1, 0x3005}, {4, 0x2003}}};  // another caller's return address
  g_script.variants = {a, a_lower, b};
  const lc::BlockRecord r = recorded_block();
  const std::uint32_t taken = r.samples_taken;
  ASSERT_GE(taken, 3u);
  ASSERT_EQ(r.top_count, 2u);
  EXPECT_EQ(r.top_other, 0u);
  const std::uint32_t b_samples = taken / 3;  // every third sample, from the third
  EXPECT_EQ(r.top[0].count, taken - b_samples);
  EXPECT_EQ(r.top[1].count, b_samples);
  ASSERT_EQ(r.evidence.count, 2u);
  const lc::StackEvidence* first = r.evidence.at(r.top[0].stack);
  const lc::StackEvidence* second = r.evidence.at(r.top[1].stack);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->sp, 0x20000100u);  // the entry's first sample's
  EXPECT_EQ(first->value[1], 0x2001u);
  EXPECT_EQ(second->value[1], 0x2003u);
  for (std::size_t i = 0; i < r.sample_count; ++i) {
    const lc::Sample& s = r.samples[i];
    EXPECT_EQ(s.stack, i % 3 == 2 ? r.top[1].stack : r.top[0].stack) << "sample " << i;  // its capture_words call
  }
}

TEST(StackEvidence, SamplesInAnotherBlockOfCodeAreAnotherEntrySharingTheirSlot) {
  g_script = Script{};
  g_script.words = {{1, 0x3005}};
  g_pcs = {0x1010, 0x101E, 0x1020};  // 0x1020: the next kStackLeafBlock (a leaf the caller calls?)
  g_pc_calls = 0;
  const lc::BlockRecord r = recorded_block();
  g_pcs.clear();
  ASSERT_EQ(r.top_count, 2u);
  EXPECT_EQ(r.evidence.count, 1u) << "one slot for the same words";
  EXPECT_EQ(r.top[0].stack, 1u);
  EXPECT_EQ(r.top[1].stack, 1u);
  EXPECT_EQ(r.top[0].frames[0], 0x1010u);
  EXPECT_EQ(r.top[0].leaf_high, 0x101Eu);
  EXPECT_EQ(r.top[1].frames[0], 0x1020u);
  EXPECT_EQ(r.top[0].count + r.top[1].count, r.samples_taken);
}

TEST(StackEvidence, TheSameStackEvidenceIsTheSameWordsAtTheSameOffsetsWhateverTheRegisters) {
  lc::StackEvidence a{};
  a.sp = 0x20000100;
  a.lr = 0x3005;
  a.fp = 0x20000180;
  a.has_fp = true;
  a.add(1, 0x3005);
  a.add(4, 0x2001);
  lc::StackEvidence b = a;
  b.sp -= 16;
  b.fp += 4;
  b.has_fp = false;
  b.lr = 0x3007;
  EXPECT_TRUE(lc::same_stack_evidence(a, b)) << "the same stack elsewhere, other register values";
  b = a;
  b.offset[1] = 5;
  EXPECT_FALSE(lc::same_stack_evidence(a, b)) << "a word at another offset";
  b = a;
  b.value[0] = 0x3009;
  EXPECT_FALSE(lc::same_stack_evidence(a, b)) << "another word";
  b = a;
  b.add(6, 0x2001);
  EXPECT_FALSE(lc::same_stack_evidence(a, b)) << "one word more";
}

TEST(StackEvidence, SamplesBeyondTheTableHaveNone) {
  g_script = Script{};
  // A new stack at every sample: the first top-frames entries keep theirs, the rest go to top_other.
  for (std::uint16_t i = 0; i < 32; ++i) g_script.variants.push_back(Capture{0x20000100, 0x20000180, {{i, 0x3005}}});
  const lc::BlockRecord r = recorded_block(70);
  ASSERT_GT(r.samples_taken, lc::kTopFrames);
  EXPECT_EQ(r.top_count, lc::kTopFrames);
  EXPECT_EQ(r.top_other, r.samples_taken - lc::kTopFrames);
  EXPECT_EQ(r.evidence.count, lc::kTopFrames);
  const lc::Sample& newest = r.samples[r.sample_count - 1];
  EXPECT_EQ(newest.stack, lc::kNoStack);
}

TEST(StackEvidence, ABlockPacketCarriesItAndFitsItsLargestSize) {
  g_script = Script{};
  g_script.variants = {{0x20000100, 0x20000180, {{1, 0xFFFFFFF0}, {2, 0xFFFFFFF1}, {3, 0xFFFFFFF2}, {400, 0xFFFFFFF3}}}};
  lc::BlockRecord r = recorded_block();
  std::vector<std::uint8_t> packet(lc::kMaxPacketBytes);
  const std::size_t size = lc::encode_packet(r, packet.data(), packet.size());
  ASSERT_GT(size, 0u);
  EXPECT_EQ(packet[6] & lc::detail::kConfigurationStackEvidence, lc::detail::kConfigurationStackEvidence);
  EXPECT_EQ(packet[11], 4u) << "stack words, after the five capacities";
  // Every entry with the largest words: the packet still fits kMaxPacketBytes.
  r.top_count = static_cast<std::uint8_t>(lc::kTopFrames);
  for (std::size_t i = 0; i < lc::kTopFrames; ++i) {
    r.top[i] = r.top[0];
    r.top[i].frames[0] = 0x1010 + 2 * i;
    r.top[i].stack = r.top[0].stack;
  }
  const std::size_t full = lc::encode_packet(r, packet.data(), packet.size());
  EXPECT_GT(full, size);
  EXPECT_EQ(lc::encode_packet(r, packet.data(), full - 1), 0u) << "never cut";
}

