// SPDX-License-Identifier: MIT
// Log2 histograms of tick durations: the one histogram type of the core (the loop's dispatch
// durations, each event type's queue latency), and the percentile read from its buckets.
//
// Bucket i counts the values d (ticks) with floor(log2(d)) == i; bucket 0 also holds d == 0.
// So bucket i holds 2^i .. 2^(i+1) - 1 (bucket 0: 0 and 1), and 32 buckets cover every tick_t.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "loopcanary/compiler.hpp"
#include "loopcanary/config.hpp"
#include "loopcanary/sync.hpp"

namespace loopcanary {

namespace detail {

/// The number of leading zero bits of `v`, which must not be 0. Any context.
LOOPCANARY_INLINE constexpr std::uint32_t leading_zeros(tick_t v) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return static_cast<std::uint32_t>(__builtin_clz(v));
#else
  std::uint32_t n = 0;
  for (tick_t bit = tick_t{1} << 31; (v & bit) == 0; bit >>= 1) ++n;
  return n;
#endif
}

/// floor(log2(v)) of `v`, which must not be 0: 0..31. Any context.
LOOPCANARY_INLINE constexpr std::uint32_t floor_log2(tick_t v) noexcept { return 31u - leading_zeros(v); }

/// floor_log2(v) as an array index, for the hot path: on x86-64 exactly one BSR (gcc folds
/// 31 - leading zeros into BSR in some contexts only, and then sign-extends the result; clang
/// always folds it). Elsewhere floor_log2(v). `v` must not be 0. Any context.
LOOPCANARY_INLINE std::size_t top_bit(tick_t v) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  std::uint64_t index;
  asm("bsr %1, %0" : "=r"(index) : "r"(std::uint64_t{v}) : "cc");
  return index;
#else
  return floor_log2(v);
#endif
}

// How Log2Histogram lays out its counters: by the bucket itself (floor(log2(d | 1)), one BSR on
// x86) or by the value's leading zeros (31 - bucket, one CLZ on ARM and most other targets), so
// that count() computes its index in one instruction either way.
#if defined(__x86_64__) || defined(__i386__)
inline constexpr bool kHistogramByBucket = true;
#else
inline constexpr bool kHistogramByBucket = false;
#endif

// x86: a duration or latency is counted in its histogram at the next count, not at once. The
// counter's address depends on the clock read just taken, and on AMD Zen a RDTSC does not start
// before every older store has its address: counted at once, the count holds the next clock read
// back until this one's result is in (on an AMD EPYC, 1.30 x two clock reads for begin+end
// instead of 1.00, 1.6 x one read for a back-to-back dispatch instead of 1.00, 1.28 x two reads
// for a dispatch with its queue latency recorded instead of 1.01: docs/benchmarks.md, "Linux
// port" and "Queue latency and deadlines"). Elsewhere the clock is a load or a system register,
// and the count stays where it is, two instructions cheaper. Monitor's duration histogram
// (monitor.hpp) and EventHealth's latency histogram (health.hpp) follow it.
#if defined(__x86_64__) || defined(__i386__)
inline constexpr bool kHistogramCountsLater = true;
#else
inline constexpr bool kHistogramCountsLater = false;
#endif

}  // namespace detail

/// The bucket that holds `d` ticks: floor(log2(d)), 0 for d == 0. Returns 0..31. Any context.
constexpr std::size_t histogram_bucket(tick_t d) noexcept { return detail::floor_log2(d | 1u); }

/// The largest value bucket `i` holds, in ticks: 2^(i+1) - 1 (1 for bucket 0, 0xFFFFFFFF for
/// bucket 31). `i` is 0..31; a larger `i` returns 0xFFFFFFFF. Any context.
constexpr tick_t histogram_bucket_max(std::size_t i) noexcept {
  return i + 1u >= kHistogramBuckets ? ~tick_t{0} : static_cast<tick_t>((tick_t{2} << i) - 1u);
}

/// A log2 histogram of tick values (durations, latencies): 32 counters of 32 bits, 128 bytes,
/// all zero at construction (a static one costs no start-up code).
///
/// Written by one context only (the loop that owns it: count() is a load and a store, not a
/// read-modify-write); read from any context, counter by counter, so a read while count() runs
/// may miss that one value. Counters wrap at 2^32: take modular differences between two reads.
///
/// `ByBucket` is the counters' layout (detail::kHistogramByBucket: the target's), which changes
/// nothing a caller sees: by the bucket (x86: count() is OR, BSR, ADD to memory) or by the
/// value's leading zeros (Cortex-M3: ORR, CLZ, LDR, ADD, STR). Log2Histogram is the target's.
template <bool ByBucket>
class BasicLog2Histogram {
 public:
  constexpr BasicLog2Histogram() noexcept = default;
  BasicLog2Histogram(const BasicLog2Histogram&) = delete;
  BasicLog2Histogram& operator=(const BasicLog2Histogram&) = delete;

  /// Counts one value `d` (ticks, any tick_t) in bucket histogram_bucket(d). The owning context
  /// only (the loop).
  LOOPCANARY_INLINE void count(tick_t d) noexcept {
    detail::bump(counters_[ByBucket ? detail::top_bit(d | 1u) : detail::leading_zeros(d | 1u)]);
  }

  /// Counts one value in bucket `i` (0..31: histogram_bucket() of the value). The owning
  /// context only.
  LOOPCANARY_INLINE void count_in_bucket(std::size_t i) noexcept {
    detail::bump(counters_[ByBucket ? i : kHistogramBuckets - 1u - i]);
  }

  /// The counter of bucket `i` (0..31; values d with floor(log2(d)) == i), modulo 2^32. Any
  /// context. A larger `i` returns 0.
  std::uint32_t bucket(std::size_t i) const noexcept {
    if (i >= kHistogramBuckets) return 0;
    return detail::load_relaxed(counters_[ByBucket ? i : kHistogramBuckets - 1u - i]);
  }

  /// All counters, bucket i into out[i]. Any context.
  void read_buckets(std::uint32_t (&out)[kHistogramBuckets]) const noexcept {
    for (std::size_t i = 0; i < kHistogramBuckets; ++i) out[i] = bucket(i);
  }

 private:
  std::atomic<std::uint32_t> counters_[kHistogramBuckets] = {};
};

/// The log2 histogram of the core, in the target's layout.
using Log2Histogram = BasicLog2Histogram<detail::kHistogramByBucket>;

/// The sum of `buckets` (a histogram read with Log2Histogram::read_buckets, or the difference
/// of two such reads), exact: 64 bits. Any context.
std::uint64_t histogram_total(const std::uint32_t (&buckets)[kHistogramBuckets]) noexcept;

/// A percentile of the values counted in `buckets` (bucket i at buckets[i], as
/// Log2Histogram::read_buckets writes them, or LoopStats::histogram), in ticks. `permille` is
/// 1..1000 (500 = p50, 950 = p95, 990 = p99, 1000 = the largest value); 0 is taken as 1 and
/// anything above 1000 as 1000.
///
/// Exactly: with n the histogram's total (histogram_total) and the nearest rank
/// r = ceil(n * permille / 1000), it returns histogram_bucket_max(i) for the lowest bucket i
/// whose cumulative count (buckets 0..i) reaches r: the upper bound of the bucket that holds the
/// r-th smallest value counted. That value v itself satisfies
/// histogram_bucket_max(i) / 2 < v <= histogram_bucket_max(i) (bucket 0: v is 0 or 1).
/// Returns 0 when the histogram is empty (n == 0). Any context; off the hot path.
tick_t histogram_percentile(const std::uint32_t (&buckets)[kHistogramBuckets], std::uint32_t permille) noexcept;

}  // namespace loopcanary
