// SPDX-License-Identifier: MIT
// EvidenceWatchdog's interceptor: called with each report's observation once its packet is in
// the ring (or dropped: kept false), in report order, so a firmware can reset on a hang with the
// hang already in the crash box; one interceptor, set after init. Virtual time: a Monitor stamped
// with explicit ticks, the watchdog polled by hand.
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"

namespace {

namespace lc = loopcanary;

constexpr lc::Event kStuck{"wait_for_ack"};
constexpr std::uint32_t kTickHz = 1'000'000;  // 1 tick = 1 us

struct Seen {
  std::vector<lc::Phase> phases;
  std::vector<bool> kept;
  std::vector<std::uint32_t> pushed_before;  // the ring's pushed count when the interceptor ran
  lc::EvidenceRing* ring = nullptr;
  static void on(void* self, const lc::Observation& o, bool kept) {
    auto& seen = *static_cast<Seen*>(self);
    seen.phases.push_back(o.phase);
    seen.kept.push_back(kept);
    seen.pushed_before.push_back(seen.ring->stats().pushed);
  }
};

void ignore(void*, const lc::Observation&, bool) {}

// A ring in zeroed memory (open() finds no valid ring) with `Bytes` bytes.
template <std::size_t Bytes>
struct Ring {
  alignas(lc::StaticEvidenceRing<Bytes>) unsigned char bytes[sizeof(lc::StaticEvidenceRing<Bytes>)] = {};
  lc::StaticEvidenceRing<Bytes>& ring = *::new (static_cast<void*>(bytes)) lc::StaticEvidenceRing<Bytes>;
  Ring() { ring.open(lc::ResetCause::unknown); }
};

struct Rig {
  lc::Monitor monitor;
  lc::StaticEvidenceWatchdog<1> watchdog;
  explicit Rig(lc::EvidenceRing& ring) {
    lc::MonitorConfig config;
    config.name = "main";
    config.tick_hz = kTickHz;
    config.threshold_us = 20'000;
    config.sample_interval_us = 5'000;
    config.hang_limit_us = 100'000;
    EXPECT_EQ(monitor.init(config), lc::Status::ok);
    EXPECT_EQ(watchdog.init(lc::WatchdogConfig{}, lc::Hal{}, ring), lc::Status::ok);
    EXPECT_EQ(watchdog.add(monitor), lc::Status::ok);
  }
  // A dispatch that begins at 0 and is polled every 5 ms up to `until` ticks.
  void stuck_until(lc::tick_t until) {
    monitor.begin_at(kStuck, 0);
    for (lc::tick_t now = 0; now <= until; now += 5'000) watchdog.poll(now);
  }
};

TEST(EvidenceWatchdog, TheInterceptorSeesEachReportAfterItsPacketIsInTheRing) {
  Ring<4096> memory;
  Rig rig(memory.ring);
  Seen seen;
  seen.ring = &memory.ring;
  ASSERT_EQ(rig.watchdog.add_interceptor(&Seen::on, &seen), lc::Status::ok);
  rig.stuck_until(150'000);
  rig.monitor.end_at(160'000);
  rig.watchdog.poll(165'000);
  ASSERT_EQ(seen.phases, (std::vector<lc::Phase>{lc::Phase::in_progress, lc::Phase::hang, lc::Phase::final}));
  EXPECT_EQ(seen.kept, (std::vector<bool>{true, true, true}));
  // Each observation is the latest packet pushed when its interceptor runs: boot, watch and
  // samples come first, so the count grows and the last report's packet is the last pushed.
  EXPECT_LT(seen.pushed_before[0], seen.pushed_before[1]);
  EXPECT_LT(seen.pushed_before[1], seen.pushed_before[2]);
  EXPECT_EQ(seen.pushed_before[2], memory.ring.stats().pushed);
  EXPECT_EQ(rig.watchdog.stats().reports, 3u);
}

TEST(EvidenceWatchdog, TheInterceptorIsToldWhenTheRingDroppedTheReport) {
  Ring<64> memory;  // room for the boot packet and little else: observations do not fit
  Rig rig(memory.ring);
  Seen seen;
  seen.ring = &memory.ring;
  ASSERT_EQ(rig.watchdog.add_interceptor(&Seen::on, &seen), lc::Status::ok);
  rig.stuck_until(150'000);
  ASSERT_EQ(seen.phases, (std::vector<lc::Phase>{lc::Phase::in_progress, lc::Phase::hang}));
  EXPECT_EQ(seen.kept, (std::vector<bool>{false, false}));
  EXPECT_EQ(rig.watchdog.stats().records_dropped, 2u);
  EXPECT_GE(memory.ring.stats().dropped, 2u);
}

// Four program counters of 7-byte varints: a sample packet of about 45 bytes.
std::size_t capture_four(void*, const lc::Monitor&, lc::Frame* pcs, std::size_t max) {
  const std::size_t n = max < 4 ? max : 4;
  for (std::size_t i = 0; i < n; ++i) pcs[i] = static_cast<lc::Frame>(0x5555'5555'0000ull + 0x40u * i);
  return n;
}

struct Missed {
  std::vector<lc::Phase> phases;
  std::vector<bool> kept;
  std::vector<std::uint32_t> missed;
  static void on(void* self, const lc::Observation& o, bool kept) {
    auto& seen = *static_cast<Missed*>(self);
    seen.phases.push_back(o.phase);
    seen.kept.push_back(kept);
    seen.missed.push_back(o.samples_missed);
  }
};

// A hang that nothing drains (the loop is stuck, as before a reset) samples every 5 ms for
// 100 ms: far more than a 512-byte ring holds. The samples stop where the ring's reserve starts,
// so the in-progress and hang reports both fit; the samples not kept count as missed.
TEST(EvidenceWatchdog, SamplesLeaveRoomForTheReportsOfAHangNothingDrains) {
  Ring<512> memory;
  lc::Monitor monitor;
  lc::StaticEvidenceWatchdog<1> watchdog;
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = kTickHz;
  config.threshold_us = 20'000;
  config.sample_interval_us = 5'000;
  config.hang_limit_us = 100'000;
  ASSERT_EQ(monitor.init(config), lc::Status::ok);
  lc::Hal hal{};
  hal.capture_stack = &capture_four;
  ASSERT_EQ(watchdog.init(lc::WatchdogConfig{}, hal, memory.ring), lc::Status::ok);
  ASSERT_EQ(watchdog.add(monitor), lc::Status::ok);
  Missed seen;
  ASSERT_EQ(watchdog.add_interceptor(&Missed::on, &seen), lc::Status::ok);

  monitor.begin_at(kStuck, 0);
  for (lc::tick_t now = 0; now <= 150'000; now += 5'000) watchdog.poll(now);

  ASSERT_EQ(seen.phases, (std::vector<lc::Phase>{lc::Phase::in_progress, lc::Phase::hang}));
  EXPECT_EQ(seen.kept, (std::vector<bool>{true, true}));
  EXPECT_EQ(lc::evidence_report_reserve(512), 256u);
  // A sample at every poll from the first at or past the arm point to 150 ms; the ring kept
  // some, refused the rest (its only drops), and the reports say how many were missed so far.
  const std::uint32_t arm = config.threshold_us * config.arm_permille / 1000u;
  const std::uint32_t first = (arm + 4'999u) / 5'000u * 5'000u;
  const std::uint32_t attempts = (150'000u - first) / 5'000u + 1u;
  const lc::EvidenceRingStats ring = memory.ring.stats();
  const std::uint32_t missed = watchdog.stats().samples_missed;
  EXPECT_GT(missed, 0u);
  EXPECT_LT(missed, attempts);
  EXPECT_EQ(ring.dropped, missed);
  EXPECT_EQ(ring.pushed, 1u /* boot */ + 1u /* watch */ + (attempts - missed) + 2u /* reports */);
  EXPECT_LE(seen.missed[0], seen.missed[1]);
  EXPECT_LT(seen.missed[1], missed + 1u);
}

TEST(EvidenceWatchdog, OneInterceptorSetAfterInit) {
  Ring<256> memory;
  lc::StaticEvidenceWatchdog<1> idle;
  EXPECT_EQ(idle.add_interceptor(&ignore, nullptr), lc::Status::not_initialised);
  Rig rig(memory.ring);
  EXPECT_EQ(rig.watchdog.add_interceptor(nullptr, nullptr), lc::Status::interceptor_null);
  EXPECT_EQ(rig.watchdog.add_interceptor(&ignore, nullptr), lc::Status::ok);
  EXPECT_EQ(rig.watchdog.add_interceptor(&ignore, nullptr), lc::Status::interceptor_chain_full);
  // A record interceptor would never be called: refused, through the base class too.
  lc::Watchdog& base = rig.watchdog;
  EXPECT_EQ(base.add_interceptor([](void*, const lc::BlockRecord&) {}, nullptr), lc::Status::interceptor_unused);
}

}  // namespace
