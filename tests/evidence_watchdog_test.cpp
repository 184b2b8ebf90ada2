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
