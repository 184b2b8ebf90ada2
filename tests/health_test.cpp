// SPDX-License-Identifier: MIT
// Loop health in the core (health.hpp, histogram.hpp): per-event queue latency, lateness,
// missed periods and deadline misses recorded by Monitor::begin_at(event, now, posted); the
// log2 histogram and its percentiles against a reference computed here from the raw values;
// rate and load over a window; the wrap of the counters and of the tick counter; init_event's
// validation. Virtual time: every stamp is a tick value the test chooses, so every figure is
// exact, and each timing test also runs starting just before the tick counter wraps.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loopcanary/loopcanary.hpp"

namespace {

namespace lc = loopcanary;
using lc::Status;
using lc::tick_t;

constexpr std::uint32_t kHz = 1'000'000;  // 1 tick = 1 us

// The reference: floor(log2(v)) by shifting (0 for v == 0), and the largest value of that
// bucket, 2^(i+1) - 1, computed in 64 bits.
std::size_t reference_bucket(tick_t v) {
  std::size_t i = 0;
  while (v > 1u) {
    v >>= 1;
    ++i;
  }
  return i;
}
tick_t reference_bucket_max(std::size_t i) {
  return static_cast<tick_t>((std::uint64_t{2} << i) - 1u);
}

// The nearest-rank percentile of `values` (ceil(n * permille / 1000)-th smallest), reported as
// the upper bound of its log2 bucket.
tick_t reference_percentile(std::vector<tick_t> values, std::uint32_t permille) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::uint64_t n = values.size();
  std::uint64_t rank = (n * permille + 999u) / 1000u;
  if (rank == 0) rank = 1;
  return reference_bucket_max(reference_bucket(values[rank - 1u]));
}

lc::MonitorConfig loop_config(std::uint32_t tick_hz = kHz) {
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = tick_hz;
  config.threshold_us = 100'000;
  config.sample_interval_us = 10'000;
  config.hang_limit_us = 1'000'000;
  return config;
}

// A monitor and one event type with storage; dispatch() runs one zero-length dispatch whose
// message was posted `latency` ticks before `now`.
struct Rig {
  Rig() { EXPECT_EQ(monitor->init(loop_config()), Status::ok); }

  void dispatch(tick_t now, tick_t latency) {
    monitor->begin_at(event, now, static_cast<tick_t>(now - latency));
    monitor->end_at(now);
  }

  std::unique_ptr<lc::Monitor> monitor = std::make_unique<lc::Monitor>();
  std::unique_ptr<lc::EventHealth> health = std::make_unique<lc::EventHealth>();
  lc::Event event{"control_tick", 0, health.get()};
};

// Each test runs from tick 1000 and from just before the tick counter wraps.
class Health : public ::testing::TestWithParam<tick_t> {
 protected:
  tick_t start() const { return GetParam(); }
};
INSTANTIATE_TEST_SUITE_P(Start, Health, ::testing::Values(tick_t{1000}, tick_t{0xFFFF'FF00u}),
                         [](const ::testing::TestParamInfo<tick_t>& start_tick) {
                           return start_tick.param == 1000u ? std::string("Tick1000") : std::string("BeforeTheWrap");
                         });

// ---- Queue latency ---------------------------------------------------------------------

TEST_P(Health, LatencyIsDispatchMinusPostInItsBucket) {
  Rig rig;
  const tick_t latencies[] = {0, 1, 2, 3, 4, 7, 8, 1000, 65'535, 65'536, 3'000'000};
  tick_t now = start();
  for (tick_t latency : latencies) {
    now += 5'000'000u;  // each message posted and dispatched anew
    rig.dispatch(now, latency);
  }
  const lc::EventStats s = rig.health->stats();
  EXPECT_EQ(s.dispatches, std::size(latencies));
  EXPECT_EQ(s.max_latency, 3'000'000u);
  EXPECT_EQ(s.posted_ahead, 0u);
  std::uint32_t expected[lc::kHistogramBuckets] = {};
  for (tick_t latency : latencies) ++expected[reference_bucket(latency)];
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) EXPECT_EQ(s.latency[i], expected[i]) << "bucket " << i;
  EXPECT_EQ(rig.monitor->stats().dispatches, std::size(latencies)) << "the loop counts them as dispatches";
}

// A deadline set before the first dispatch, then latencies that change nothing but the
// histogram (the hot path's, which counts each at the next record on x86): a snapshot after
// every dispatch holds every latency so far, the latest included.
TEST_P(Health, EverySnapshotBetweenDispatchesHoldsTheLatestLatency) {
  Rig rig;
  ASSERT_EQ(rig.monitor->init_event(rig.event, lc::EventHealthConfig{0, 5'000}), Status::ok);
  const tick_t latencies[] = {3, 3, 0, 1, 2, 3, 2, 0, 3};  // the first sets the maximum: 3
  std::uint32_t expected[lc::kHistogramBuckets] = {};
  tick_t now = start();
  std::uint32_t n = 0;
  for (tick_t latency : latencies) {
    now += 100u;
    rig.dispatch(now, latency);
    ++expected[reference_bucket(latency)];
    ++n;
    const lc::EventStats s = rig.health->stats();
    ASSERT_EQ(s.dispatches, n);
    for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) {
      ASSERT_EQ(s.latency[i], expected[i]) << "bucket " << i << " after dispatch " << n;
    }
  }
  EXPECT_EQ(rig.health->stats().max_latency, 3u);
  EXPECT_EQ(rig.health->stats().deadline_misses, 0u);
}

TEST(HealthTickWrap, PostedJustBeforeTheTickWrapDispatchedAfterIt) {
  Rig rig;
  const tick_t posted = 0xFFFF'FD00u;
  const tick_t now = 0x0000'0200u;
  rig.monitor->begin_at(rig.event, now, posted);
  rig.monitor->end_at(now);
  const lc::EventStats s = rig.health->stats();
  EXPECT_EQ(s.max_latency, 0x500u);
  EXPECT_EQ(s.latency[reference_bucket(0x500u)], 1u);
  EXPECT_EQ(s.posted_ahead, 0u);
}

TEST_P(Health, PostStampAheadOfTheClockIsCountedAsLatencyZero) {
  Rig rig;
  const tick_t now = start();
  rig.dispatch(now, 40);
  rig.monitor->begin_at(rig.event, now, now + 5u);  // posted 5 ticks "after" its dispatch
  rig.monitor->end_at(now);
  rig.monitor->begin_at(rig.event, now, now + 7u);  // the next one takes the same path
  rig.monitor->end_at(now);
  const lc::EventStats s = rig.health->stats();
  EXPECT_EQ(s.posted_ahead, 2u);
  EXPECT_EQ(s.dispatches, 3u);
  EXPECT_EQ(s.latency[0], 2u) << "counted as latency 0";
  EXPECT_EQ(s.max_latency, 40u) << "not as a huge latency";
  EXPECT_EQ(s.deadline_misses, 0u);
}

TEST_P(Health, NestedDispatchRecordsItsLatencyToo) {
  Rig rig;
  const lc::Event outer{"outer"};
  rig.monitor->begin_at(outer, start());
  rig.monitor->begin_at(rig.event, start() + 10u, start() + 4u);
  rig.monitor->end_at(start() + 11u);
  rig.monitor->end_at(start() + 12u);
  EXPECT_EQ(rig.health->stats().dispatches, 1u);
  EXPECT_EQ(rig.health->stats().max_latency, 6u);
  EXPECT_EQ(rig.monitor->stats().nested, 1u);
}

// An event without storage through the same overload: the loop's statistics are exactly those
// of begin_at(event, now), and no storage anywhere changes.
TEST_P(Health, EventWithoutStorageRecordsNothing) {
  const lc::Event plain{"plain"};
  Rig posted;
  Rig unposted;
  for (tick_t i = 0; i < 100; ++i) {
    const tick_t now = start() + i * 1000u;
    posted.monitor->begin_at(plain, now, now - i);
    posted.monitor->end_at(now + i);
    unposted.monitor->begin_at(plain, now);
    unposted.monitor->end_at(now + i);
  }
  const lc::LoopStats a = posted.monitor->stats();
  const lc::LoopStats b = unposted.monitor->stats();
  EXPECT_EQ(a.dispatches, 100u);
  EXPECT_EQ(a.dispatches, b.dispatches);
  EXPECT_EQ(a.busy_ticks, b.busy_ticks);
  EXPECT_EQ(a.max_duration, b.max_duration);
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) EXPECT_EQ(a.histogram[i], b.histogram[i]);
  for (const Rig* rig : {&posted, &unposted}) {
    const lc::EventStats s = rig->health->stats();
    EXPECT_EQ(s.dispatches, 0u);
    EXPECT_EQ(s.max_latency, 0u);
    EXPECT_EQ(lc::histogram_total(s.latency), 0u);
  }
}

// ---- Periodic events: lateness, missed periods, deadline misses --------------------------

// Period 10 ms, deadline 2 ms: the lateness of each dispatch is its latency against its due
// time. The order mixes a large lateness early (so later misses fall under the maximum) with
// lateness at each boundary.
TEST_P(Health, LatenessMissedPeriodsAndDeadlineMissesAreExact) {
  Rig rig;
  ASSERT_EQ(rig.monitor->init_event(rig.event, lc::EventHealthConfig{10'000, 2'000}), Status::ok);
  const std::vector<tick_t> lateness = {0,      1'999,  35'000, 2'000, 2'001, 9'999, 10'000,
                                        10'001, 25'000, 1,      2'500, 19'999, 20'000, 0};
  tick_t due = start();
  for (tick_t late : lateness) {
    due += 10'000u;
    rig.dispatch(due + late, late);
  }
  std::uint32_t missed = 0;
  std::uint32_t misses = 0;
  for (tick_t late : lateness) {
    missed += late / 10'000u;
    if (late > 2'000u) ++misses;
  }
  const lc::EventStats s = rig.health->stats();
  EXPECT_EQ(s.period_ticks, 10'000u);
  EXPECT_EQ(s.deadline_ticks, 2'000u);
  EXPECT_EQ(s.dispatches, lateness.size());
  EXPECT_EQ(s.missed_periods, missed);
  EXPECT_EQ(missed, 3u + 0u + 1u + 1u + 2u + 1u + 2u) << "the reference itself";
  EXPECT_EQ(s.deadline_misses, misses);
  EXPECT_EQ(misses, 9u) << "the reference itself";
  EXPECT_EQ(s.max_latency, 35'000u);
}

// A deadline without a period: late dispatches are misses, no period is ever missed.
TEST_P(Health, DeadlineWithoutPeriod) {
  Rig rig;
  ASSERT_EQ(rig.monitor->init_event(rig.event, lc::EventHealthConfig{0, 50'000}), Status::ok);
  rig.dispatch(start(), 50'000);
  rig.dispatch(start() + 1'000'000u, 50'001);
  rig.dispatch(start() + 2'000'000u, 900'000);
  const lc::EventStats s = rig.health->stats();
  EXPECT_EQ(s.deadline_misses, 2u);
  EXPECT_EQ(s.missed_periods, 0u);
  EXPECT_EQ(s.period_ticks, 0u);
}

// Changing the configuration keeps the counters and applies from the next dispatch: a latency
// below the maximum seen before still counts as a miss against a new, tighter deadline.
TEST_P(Health, ReconfiguringKeepsCountersAndAppliesAtOnce) {
  Rig rig;
  rig.dispatch(start(), 30'000);  // no deadline yet: not a miss
  ASSERT_EQ(rig.monitor->init_event(rig.event, lc::EventHealthConfig{0, 5'000}), Status::ok);
  rig.dispatch(start() + 100'000u, 6'000);
  const lc::EventStats s = rig.health->stats();
  EXPECT_EQ(s.dispatches, 2u);
  EXPECT_EQ(s.deadline_misses, 1u);
  EXPECT_EQ(s.max_latency, 30'000u);
}

// ---- The histogram and its percentiles ----------------------------------------------------

// Both counter layouts (histogram.hpp, detail::kHistogramByBucket: by bucket on x86, by
// leading zeros elsewhere) read the same buckets, whichever one the target uses.
template <class Histogram>
void expect_buckets_of_each_value() {
  const tick_t values[] = {0, 1, 2, 3, 4, 5, 7, 8, 255, 256, 0x7FFF'FFFFu, 0x8000'0000u, 0xFFFF'FFFFu};
  Histogram h;
  for (tick_t v : values) h.count(v);
  for (std::uint32_t bit = 0; bit < 32; ++bit) h.count(tick_t{1} << bit);
  std::uint32_t read[lc::kHistogramBuckets];
  h.read_buckets(read);
  std::uint32_t expected[lc::kHistogramBuckets] = {};
  for (tick_t v : values) ++expected[reference_bucket(v)];
  for (std::uint32_t bit = 0; bit < 32; ++bit) ++expected[bit];
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) {
    EXPECT_EQ(read[i], expected[i]) << "bucket " << i;
    EXPECT_EQ(h.bucket(i), expected[i]) << "bucket " << i;
  }
  EXPECT_EQ(h.bucket(lc::kHistogramBuckets), 0u) << "out of range";
  EXPECT_EQ(lc::histogram_total(read), std::size(values) + 32u);
}

TEST(Histogram, BucketOfEachValueAndItsUpperBound) {
  const tick_t values[] = {0, 1, 2, 3, 4, 5, 7, 8, 255, 256, 0x7FFF'FFFFu, 0x8000'0000u, 0xFFFF'FFFFu};
  for (tick_t v : values) EXPECT_EQ(lc::histogram_bucket(v), reference_bucket(v)) << v;
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) {
    EXPECT_EQ(lc::histogram_bucket_max(i), reference_bucket_max(i)) << i;
  }
  EXPECT_EQ(lc::histogram_bucket_max(lc::kHistogramBuckets), 0xFFFF'FFFFu) << "out of range";
  expect_buckets_of_each_value<lc::Log2Histogram>();
}

TEST(Histogram, BothCounterLayoutsReadTheSameBuckets) {
  expect_buckets_of_each_value<lc::BasicLog2Histogram<true>>();
  expect_buckets_of_each_value<lc::BasicLog2Histogram<false>>();
}

// EventHealth's latency histogram counted at once and at the next record (health.hpp,
// detail::LatencyCounters; x86 counts later) read the same after every count, from the first
// (nothing pending yet) on, whether a count comes through count() or the hot path's
// count_usual() (which needs a count() first).
TEST(Histogram, LatencyCountedAtOnceAndLaterReadTheSame) {
  lc::detail::LatencyCounters<false> at_once;
  lc::detail::LatencyCounters<true> later;
  std::uint32_t read[lc::kHistogramBuckets];
  later.read_buckets(read);
  EXPECT_EQ(lc::histogram_total(read), 0u) << "nothing before the first count";
  std::vector<tick_t> values{5u, 0u, 1u, 2u, 3u, 1000u, 1000u, 0xFFFF'FFFFu, 0u};
  for (std::uint32_t bit = 0; bit < 32; ++bit) values.push_back(tick_t{1} << bit);
  std::uint32_t expected[lc::kHistogramBuckets] = {};
  for (std::size_t n = 0; n < values.size(); ++n) {
    const tick_t v = values[n];
    if (n == 0 || n % 3 == 1) {  // the first through count(), and every third after it
      at_once.count(v);
      later.count(v);
    } else {
      at_once.count_usual(v);
      later.count_usual(v);
    }
    ++expected[reference_bucket(v)];
    std::uint32_t a[lc::kHistogramBuckets];
    at_once.read_buckets(a);
    later.read_buckets(read);
    for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) {
      ASSERT_EQ(a[i], expected[i]) << "bucket " << i << " after counting " << v;
      ASSERT_EQ(read[i], expected[i]) << "bucket " << i << " after counting " << v;
    }
  }
}

// Percentiles from the buckets against the reference from the raw latencies: 2003 latencies (a
// prime count, so most ranks round up) spread over 17 buckets (fixed seed), each permille from
// 1 to 1000 in steps, the classic three and the ends; out-of-range permilles clamp.
TEST_P(Health, PercentilesMatchTheReferenceFromRawLatencies) {
  Rig rig;
  std::mt19937 random(12345);
  std::vector<tick_t> latencies;
  tick_t now = start();
  for (int i = 0; i < 2003; ++i) {
    const auto bits = static_cast<std::uint32_t>(random() % 17u);  // latencies of 0 .. 17 bits
    const tick_t latency = bits == 0 ? 0 : static_cast<tick_t>(random() & ((1u << bits) - 1u));
    latencies.push_back(latency);
    now += 200'000u;
    rig.dispatch(now, latency);
  }
  const lc::EventStats s = rig.health->stats();
  ASSERT_EQ(s.dispatches, latencies.size());
  std::vector<std::uint32_t> permilles = {1, 10, 250, 500, 900, 950, 990, 999, 1000};
  for (std::uint32_t p = 3; p <= 1000; p += 7) permilles.push_back(p);
  for (std::uint32_t p : permilles) {
    EXPECT_EQ(lc::histogram_percentile(s.latency, p), reference_percentile(latencies, p)) << "permille " << p;
  }
  EXPECT_EQ(lc::histogram_percentile(s.latency, 0), reference_percentile(latencies, 1)) << "0 is taken as 1";
  EXPECT_EQ(lc::histogram_percentile(s.latency, 5000), reference_percentile(latencies, 1000)) << "capped at 1000";
  // latency_percentile: the same, capped at the maximum.
  const tick_t max = *std::max_element(latencies.begin(), latencies.end());
  EXPECT_EQ(s.max_latency, max);
  EXPECT_EQ(lc::latency_percentile(s, 500), std::min(reference_percentile(latencies, 500), max));
  EXPECT_EQ(lc::latency_percentile(s, 1000), max) << "the top bucket's bound is above the maximum";
}

// The nearest rank rounds up: of 3 values, p50 is the 2nd and p1 the 1st.
TEST(Histogram, PercentileRankRoundsUp) {
  lc::Log2Histogram h;
  for (tick_t v : {1u, 100u, 10'000u}) h.count(v);
  std::uint32_t buckets[lc::kHistogramBuckets];
  h.read_buckets(buckets);
  EXPECT_EQ(lc::histogram_percentile(buckets, 1), 1u);
  EXPECT_EQ(lc::histogram_percentile(buckets, 333), 1u);
  EXPECT_EQ(lc::histogram_percentile(buckets, 334), 127u);
  EXPECT_EQ(lc::histogram_percentile(buckets, 500), 127u);
  EXPECT_EQ(lc::histogram_percentile(buckets, 667), 16'383u);
}

TEST(Histogram, PercentileOfAnEmptyHistogramIsZero) {
  const std::uint32_t empty[lc::kHistogramBuckets] = {};
  EXPECT_EQ(lc::histogram_percentile(empty, 500), 0u);
  EXPECT_EQ(lc::latency_percentile(lc::EventStats{}, 990), 0u);
}

// Buckets near 2^32 (a window's differences can be that large): the total is exact in 64 bits
// and the rank does not overflow.
TEST(Histogram, PercentileOfHugeCountsIsExact) {
  std::uint32_t buckets[lc::kHistogramBuckets] = {};
  buckets[3] = 0xFFFF'FFFFu;
  buckets[20] = 0xFFFF'FFFFu;
  EXPECT_EQ(lc::histogram_total(buckets), 2u * 0xFFFF'FFFFull);
  EXPECT_EQ(lc::histogram_percentile(buckets, 500), lc::histogram_bucket_max(3));
  EXPECT_EQ(lc::histogram_percentile(buckets, 501), lc::histogram_bucket_max(20));
}

// The loop's dispatch-duration histogram is the same type: a percentile of it works alike.
TEST_P(Health, LoopDurationHistogramGivesPercentilesToo) {
  if (!lc::kHistogram) GTEST_SKIP() << "built without the duration histogram";
  Rig rig;
  const lc::Event plain{"plain"};
  std::vector<tick_t> durations;
  for (tick_t i = 0; i < 300; ++i) {
    const tick_t d = (i * 37u) % 5000u;
    durations.push_back(d);
    rig.monitor->begin_at(plain, start() + i * 10'000u);
    rig.monitor->end_at(start() + i * 10'000u + d);
  }
  const lc::LoopStats s = rig.monitor->stats();
  for (std::uint32_t p : {500u, 950u, 990u}) {
    EXPECT_EQ(lc::histogram_percentile(s.histogram, p), reference_percentile(durations, p)) << p;
  }
}

// ---- The wrap of the 32-bit counters ------------------------------------------------------

// missed_periods wraps for real: period 1 tick, three dispatches each almost half a wrap late.
TEST_P(Health, MissedPeriodsWrapModulo2To32) {
  Rig rig;
  ASSERT_EQ(rig.monitor->init_event(rig.event, lc::EventHealthConfig{1, 0}), Status::ok);
  const tick_t late = lc::kMaxIntervalTicks;  // 2^31 - 1 periods each
  for (tick_t i = 0; i < 3; ++i) rig.dispatch(start() + i, late);
  EXPECT_EQ(rig.health->stats().missed_periods, static_cast<std::uint32_t>(3ull * late));
  EXPECT_EQ(rig.health->stats().posted_ahead, 0u);
}

// The other counters take 2^32 events to wrap: difference() of two snapshots on either side
// of a wrap gives the count between them, for every counter and every bucket.
TEST(HealthWindow, DifferenceIsModularForEveryCounter) {
  lc::EventStats before;
  lc::EventStats after;
  before.dispatches = 0xFFFF'FFF0u;
  after.dispatches = 0x10u;
  before.deadline_misses = 0xFFFF'FFFFu;
  after.deadline_misses = 0x1u;
  before.missed_periods = 0x8000'0000u;
  after.missed_periods = 0x7FFF'FFFFu;
  before.posted_ahead = 0xFFFF'FFFEu;
  after.posted_ahead = 0u;
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) {
    before.latency[i] = static_cast<std::uint32_t>(0xFFFF'FFFFu - i);
    after.latency[i] = static_cast<std::uint32_t>(i + 1u);
  }
  before.max_latency = 10;
  after.max_latency = 20;
  after.period_ticks = 1000;
  after.deadline_ticks = 100;
  const lc::EventStats d = lc::difference(before, after);
  EXPECT_EQ(d.dispatches, 0x20u);
  EXPECT_EQ(d.deadline_misses, 2u);
  EXPECT_EQ(d.missed_periods, 0xFFFF'FFFFu);
  EXPECT_EQ(d.posted_ahead, 2u);
  for (std::size_t i = 0; i < lc::kHistogramBuckets; ++i) EXPECT_EQ(d.latency[i], 2u * (i + 1u)) << i;
  EXPECT_EQ(d.max_latency, 20u) << "the later snapshot's";
  EXPECT_EQ(d.period_ticks, 1000u);
  EXPECT_EQ(d.deadline_ticks, 100u);
}

// The loop's counters: dispatches wrap at 2^31, busy and idle ticks at 2^32.
TEST(HealthWindow, LoopCountersAcrossTheirWrap) {
  lc::LoopStats before;
  lc::LoopStats after;
  before.dispatches = 0x7FFF'FFF0u;
  after.dispatches = 0x0000'0010u;
  EXPECT_EQ(lc::dispatches_between(before, after), 0x20u);
  before.busy_ticks = 0xFFFF'FF00u;
  after.busy_ticks = 0x0000'0100u;  // 0x200 busy
  before.idle_ticks = 0xFFFF'FFFFu;
  after.idle_ticks = 0x0000'05FFu;  // 0x600 idle
  EXPECT_EQ(lc::load_permille(before, after, 0x800u), 250u);
  EXPECT_EQ(lc::idle_permille(before, after, 0x800u), 750u);
}

// ---- Rate and load over a window ----------------------------------------------------------

// One second of a 50 Hz event that keeps the loop busy 3 ms each time, the rest idle: rate
// 50 Hz, load 15 %, idle 85 %, from two snapshots of the counters.
TEST_P(Health, RateAndLoadOverAWindow) {
  Rig rig;
  tick_t now = start();
  const lc::LoopStats loop_before = rig.monitor->stats();
  const lc::EventStats event_before = rig.health->stats();
  const tick_t window_start = now;
  for (int i = 0; i < 50; ++i) {
    rig.monitor->begin_at(rig.event, now, now - 100u);
    now += 3'000u;
    rig.monitor->end_at(now);
    rig.monitor->add_idle(17'000u);
    now += 17'000u;
  }
  const tick_t window = lc::ticks_between(window_start, now);
  ASSERT_EQ(window, 1'000'000u);
  const lc::LoopStats loop_after = rig.monitor->stats();
  const lc::EventStats event = lc::difference(event_before, rig.health->stats());
  EXPECT_EQ(event.dispatches, 50u);
  EXPECT_EQ(lc::rate_mhz(event.dispatches, window, kHz), 50'000u);
  EXPECT_EQ(lc::rate_mhz(lc::dispatches_between(loop_before, loop_after), window, kHz), 50'000u);
  EXPECT_EQ(lc::load_permille(loop_before, loop_after, window), 150u);
  EXPECT_EQ(lc::idle_permille(loop_before, loop_after, window), 850u);
}

TEST(HealthWindow, RateIsMilliEventsPerSecondRoundedDown) {
  EXPECT_EQ(lc::rate_mhz(7, 3'000'000, kHz), 2'333u);   // 7 in 3 s
  EXPECT_EQ(lc::rate_mhz(1, 32'768, 32'768), 1'000u);   // 1 in 1 s at 32768 Hz
  EXPECT_EQ(lc::rate_mhz(1000, 1, 480'000'000), 0xFFFF'FFFFu) << "saturates";
  EXPECT_EQ(lc::rate_mhz(0xFFFF'FFFFu, 1, 0xFFFF'FFFFu), 0xFFFF'FFFFu) << "saturates, no overflow";
  EXPECT_EQ(lc::rate_mhz(1u << 30, 1, 1u << 31), 0xFFFF'FFFFu) << "2^30 * 1000 * 2^31 = 125 * 2^64: no wrap to 0";
  EXPECT_EQ(lc::rate_mhz(4'294'967, 1'000'000, kHz), 4'294'967'000u) << "just below saturation";
  EXPECT_EQ(lc::rate_mhz(0xFFFF'FFFFu, 0xFFFF'FFFFu, 0xFFFF'FFFFu), 0xFFFF'FFFFu);
  EXPECT_EQ(lc::rate_mhz(5, 0, kHz), 0u) << "empty window";
  EXPECT_EQ(lc::rate_mhz(5, 100, 0), 0u) << "no tick rate";
}

TEST(HealthWindow, ShareIsPerMilleCappedAtTheWindow) {
  EXPECT_EQ(lc::share_permille(1, 3), 333u);
  EXPECT_EQ(lc::share_permille(0xFFFF'FFFEu, 0xFFFF'FFFFu), 999u) << "no overflow";
  EXPECT_EQ(lc::share_permille(200, 100), 1000u) << "a dispatch longer than the window";
  EXPECT_EQ(lc::share_permille(5, 0), 0u) << "empty window";
}

// ---- init_event validation ----------------------------------------------------------------

TEST(HealthInit, RefusesBeforeTheLoopIsInitialised) {
  auto monitor = std::make_unique<lc::Monitor>();
  lc::EventHealth health;
  const lc::Event event{"e", 0, &health};
  EXPECT_EQ(monitor->init_event(event, lc::EventHealthConfig{1000, 0}), Status::not_initialised);
}

TEST(HealthInit, RefusesAnEventWithoutStorage) {
  Rig rig;
  const lc::Event plain{"plain"};
  EXPECT_EQ(rig.monitor->init_event(plain, lc::EventHealthConfig{1000, 0}), Status::event_health_missing);
}

struct BadConfig {
  const char* name;
  std::uint32_t tick_hz;
  lc::EventHealthConfig config;
  Status expected;
};

class HealthInitRefuses : public ::testing::TestWithParam<BadConfig> {};

INSTANTIATE_TEST_SUITE_P(
    Fields, HealthInitRefuses,
    ::testing::Values(
        BadConfig{"PeriodBelowOneTick", 32'768, {30, 0}, Status::period_below_one_tick},  // 30 us < 30.5 us
        BadConfig{"PeriodTooLong", kHz, {0xFFFF'FFFFu, 0}, Status::period_too_long},     // 4295 s > 2147 s
        BadConfig{"PeriodJustPastHalfTheWrap", kHz, {2'147'483'648u, 0}, Status::period_too_long},
        BadConfig{"DeadlineBelowOneTick", 32'768, {1'000, 30}, Status::deadline_below_one_tick},
        BadConfig{"DeadlineTooLong", kHz, {1'000, 0xFFFF'FFFFu}, Status::deadline_too_long},
        BadConfig{"DeadlineJustPastHalfTheWrap", kHz, {0, 2'147'483'648u}, Status::deadline_too_long}),
    [](const ::testing::TestParamInfo<BadConfig>& bad) { return std::string(bad.param.name); });

// A refused configuration names its field and leaves the previous one in force.
TEST_P(HealthInitRefuses, NamesTheFieldAndKeepsThePreviousConfiguration) {
  const BadConfig& p = GetParam();
  auto monitor = std::make_unique<lc::Monitor>();
  ASSERT_EQ(monitor->init(loop_config(p.tick_hz)), Status::ok);
  lc::EventHealth health;
  const lc::Event event{"e", 0, &health};
  ASSERT_EQ(monitor->init_event(event, lc::EventHealthConfig{100'000, 50'000}), Status::ok);
  const lc::EventStats before = health.stats();
  EXPECT_EQ(monitor->init_event(event, p.config), p.expected) << lc::describe(p.expected);
  const lc::EventStats after = health.stats();
  EXPECT_EQ(after.period_ticks, before.period_ticks);
  EXPECT_EQ(after.deadline_ticks, before.deadline_ticks);
  // A dispatch 60 ms late still counts against the kept configuration (deadline 50 ms).
  monitor->begin_at(event, 1'000'000, 1'000'000 - static_cast<tick_t>(lc::ticks_from_us(60'000, p.tick_hz)));
  monitor->end_at(1'000'000);
  EXPECT_EQ(health.stats().deadline_misses, 1u);
}

TEST(HealthInit, ConvertsToTicksOnceAtTheLoopsRate) {
  auto monitor = std::make_unique<lc::Monitor>();
  ASSERT_EQ(monitor->init(loop_config(32'768)), Status::ok);
  lc::EventHealth health;
  const lc::Event event{"e", 0, &health};
  ASSERT_EQ(monitor->init_event(event, lc::EventHealthConfig{10'000, 2'000}), Status::ok);
  EXPECT_EQ(health.stats().period_ticks, 328u);   // 10 ms at 32768 Hz (327.68), rounded up
  EXPECT_EQ(health.stats().deadline_ticks, 66u);  // 2 ms (65.536)
  // All zero: queue latency alone.
  EXPECT_EQ(monitor->init_event(event, lc::EventHealthConfig{}), Status::ok);
  EXPECT_EQ(health.stats().period_ticks, 0u);
  EXPECT_EQ(health.stats().deadline_ticks, 0u);
}

TEST(HealthInit, AcceptsUpToHalfTheWrap) {
  auto monitor = std::make_unique<lc::Monitor>();
  ASSERT_EQ(monitor->init(loop_config(kHz)), Status::ok);
  lc::EventHealth health;
  const lc::Event event{"e", 0, &health};
  EXPECT_EQ(monitor->init_event(event, lc::EventHealthConfig{2'147'483'647u, 2'147'483'647u}), Status::ok);
  EXPECT_EQ(health.stats().period_ticks, lc::kMaxIntervalTicks);
  EXPECT_EQ(health.stats().deadline_ticks, lc::kMaxIntervalTicks);
}

}  // namespace
