// SPDX-License-Identifier: MIT
#include "loopcanary/histogram.hpp"

#include "loopcanary/time.hpp"

namespace loopcanary {

std::uint64_t histogram_total(const std::uint32_t (&buckets)[kHistogramBuckets]) noexcept {
  std::uint64_t n = 0;
  for (std::uint32_t count : buckets) n += count;
  return n;
}

tick_t histogram_percentile(const std::uint32_t (&buckets)[kHistogramBuckets], std::uint32_t permille) noexcept {
  if (permille == 0) permille = 1;
  if (permille > 1000u) permille = 1000u;
  const std::uint64_t n = histogram_total(buckets);
  if (n == 0) return 0;
  // Nearest rank, ceil(n * permille / 1000): n < 2^37, so the product fits.
  const std::uint64_t rank = detail::divide(n * permille + 999u, 1000u);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kHistogramBuckets; ++i) {
    cumulative += buckets[i];
    if (cumulative >= rank) return histogram_bucket_max(i);
  }
  return histogram_bucket_max(kHistogramBuckets - 1u);  // not reached: rank <= n
}

}  // namespace loopcanary
