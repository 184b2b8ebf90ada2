// SPDX-License-Identifier: MIT
// The cause rule (cause.hpp).
#include "loopcanary/cause.hpp"

#include "loopcanary/time.hpp"

namespace loopcanary {

namespace detail {
std::uint16_t permille(std::uint64_t part, std::uint64_t whole) noexcept {
  if (whole == 0) return kUnknownPermille;
  if (part >= whole) return 1000;
  while ((whole >> 32) != 0) {  // a 32-bit divisor: both halved keep the ratio (to 2^-32)
    whole >>= 1;
    part >>= 1;
  }
  return static_cast<std::uint16_t>(divide(part * 1000u, static_cast<std::uint32_t>(whole)));
}
}  // namespace detail

Cause classify(const BlockRecord& r, const CauseRule& rule) noexcept {
  using detail::permille;
  // Stolen time per CPU: what the loop thread's CPU lost on average (at most the whole window).
  const std::uint64_t wall = us_from_ticks(r.window_ticks, r.tick_hz);
  const std::uint64_t window = wall - (r.steal_us < wall ? r.steal_us : wall);
  if (!r.has_thread_cpu || window == 0) return Cause::unknown;
  // floor(x) >= n exactly when x >= n for a whole n: comparing rounded-down shares is exact.
  if (permille(r.thread_cpu_us, window) >= rule.running_permille) return Cause::running;
  if (r.has_thread_wait) {
    const std::uint64_t off_cpu = window - r.thread_cpu_us;  // > 0: below the running share
    return permille(r.thread_wait_us, off_cpu) >= rule.starved_wait_permille ? Cause::starved : Cause::waiting;
  }
  if (r.system_busy_permille == kUnknownPermille) return Cause::unknown;
  return r.system_busy_permille >= rule.starved_busy_permille ? Cause::starved : Cause::waiting;
}

void derive(BlockRecord& record, const CauseRule& rule) noexcept { record.cause = classify(record, rule); }

}  // namespace loopcanary
