// SPDX-License-Identifier: MIT
// Test rig for the Linux port: one loop monitored by a real watchdog thread, records collected
// by an interceptor that tests can wait on (no sleeps standing in for synchronisation).
#pragma once

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "loopcanary/linux/symbolizer.hpp"
#include "loopcanary/linux/watchdog_thread.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/linux.hpp"
#include "loopcanary/port/linux/platform.hpp"
#include "tick_wrap.hpp"

namespace lctest {

namespace lc = loopcanary;
namespace lx = loopcanary::port_linux;

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

/// The compiled code calls functions its source does not show: a sanitizer's runtime, or,
/// unoptimised, the out-of-line members of std::atomic. A signal may then interrupt the loop
/// thread in one of those rather than in the test's own function.
#if defined(__OPTIMIZE__)
inline constexpr bool kInstrumentedBuild = kThreadSanitizer || kAddressSanitizer;
#else
inline constexpr bool kInstrumentedBuild = true;
#endif

/// Collects copies of every report; tests wait on it with a generous timeout.
class Collector {
 public:
  /// Called on the watchdog thread with each record, before it is stored.
  std::function<void(const lc::BlockRecord&)> on_record;

  static void intercept(void* self, const lc::BlockRecord& record) {
#if LOOPCANARY_LINUX_TICK_OFFSET_HOOK
    wrap::witness(record);  // the wrap reruns check that some record spans the wrap
#endif
    auto* c = static_cast<Collector*>(self);
    if (c->on_record) c->on_record(record);
    {
      std::lock_guard<std::mutex> lock(c->mutex_);
      c->records_.push_back(record);
    }
    c->changed_.notify_all();
  }

  /// Waits until a record satisfying `match` arrived (true) or `timeout` passed (false);
  /// copies it into `out`.
  bool wait_for(const std::function<bool(const lc::BlockRecord&)>& match, lc::BlockRecord& out,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] {
      for (const lc::BlockRecord& r : records_) {
        if (match(r)) {
          out = r;
          return true;
        }
      }
      return false;
    });
  }

  bool wait_for_phase(lc::Phase phase, lc::BlockRecord& out,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return wait_for([phase](const lc::BlockRecord& r) { return r.phase == phase; }, out, timeout);
  }

  std::vector<lc::BlockRecord> records() {
    std::lock_guard<std::mutex> lock(mutex_);
    return records_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<lc::BlockRecord> records_;
};

struct RigConfig {
  std::uint32_t threshold_us = 50'000;
  std::uint32_t sample_interval_us = 10'000;
  std::uint32_t hang_limit_us = 5'000'000;
  std::uint16_t arm_permille = 250;
  std::uint32_t period_us = 5'000;
  std::uint8_t max_frames = static_cast<std::uint8_t>(lc::kMaxFrames);
  lx::PlatformConfig platform{};
};

/// One loop, one watchdog, one watchdog thread. start() from the test thread; the loop runs
/// on a thread the test creates, which must attach `loop_thread` first.
class Rig {
 public:
  lx::Platform platform;
  lx::LoopThread loop_thread;
  lx::PortMonitor monitor;
  lc::StaticWatchdog<1, 32> watchdog;
  lx::WatchdogThread runner;
  Collector collector;

  void start(const RigConfig& config = RigConfig{}) {
    char text[256];
    const lx::Result p = platform.init(config.platform);
    ASSERT_TRUE(p.ok()) << lx::format(p, text, sizeof text);
    lc::MonitorConfig mc;
    mc.name = "loop";
    mc.tick_hz = lx::tick_hz();
    mc.threshold_us = config.threshold_us;
    mc.sample_interval_us = config.sample_interval_us;
    mc.hang_limit_us = config.hang_limit_us;
    mc.arm_permille = config.arm_permille;
    mc.context = &loop_thread;
    ASSERT_EQ(monitor.init(mc), lc::Status::ok);
    lc::WatchdogConfig wc;
    wc.qualifier = "linux-test";
    wc.max_frames = config.max_frames;
    ASSERT_EQ(watchdog.init(wc, platform.hal()), lc::Status::ok);
    ASSERT_EQ(watchdog.add(monitor), lc::Status::ok);
    ASSERT_EQ(watchdog.add_interceptor(&Collector::intercept, &collector), lc::Status::ok);
    // A real-time watchdog when allowed (loop threads in these tests may run at a real-time
    // priority, and the machine may be loaded); the normal one otherwise.
    lx::WatchdogThreadConfig tc;
    tc.period_us = config.period_us;
    tc.fifo_priority = 2;
    lx::Result r = runner.start(watchdog, tc);
    if (r.error == lx::Error::thread_create_failed && r.sys_errno == EPERM) {
      tc.fifo_priority = 0;
      r = runner.start(watchdog, tc);
    }
    ASSERT_TRUE(r.ok()) << lx::format(r, text, sizeof text);
  }

  ~Rig() { runner.stop(); }
};

/// The share of `record`'s kept samples whose innermost program counter lies in a function
/// whose demangled name contains `function`.
inline double share_of_top_in(const lc::BlockRecord& record, const char* function) {
  lx::Symbolizer symbolizer;
  int hits = 0;
  int with_pc = 0;
  for (std::uint8_t i = 0; i < record.sample_count; ++i) {
    const lc::Sample& s = record.samples[i];
    if (s.pc_count == 0) continue;
    ++with_pc;
    lx::Symbol sym;
    if (symbolizer.symbolize(s.frames[s.scope_count], false, sym) && sym.has_function &&
        std::strstr(sym.function, function) != nullptr) {
      ++hits;
    }
  }
  return with_pc == 0 ? 0.0 : static_cast<double>(hits) / with_pc;
}

/// True when any frame of any kept sample of `record` lies in a function whose name contains
/// `function`.
inline bool any_frame_in(const lc::BlockRecord& record, const char* function) {
  lx::Symbolizer symbolizer;
  for (std::uint8_t i = 0; i < record.sample_count; ++i) {
    const lc::Sample& s = record.samples[i];
    for (std::uint8_t f = 0; f < s.pc_count; ++f) {
      lx::Symbol sym;
      if (symbolizer.symbolize(s.frames[s.scope_count + f], f != 0, sym) && sym.has_function &&
          std::strstr(sym.function, function) != nullptr) {
        return true;
      }
    }
  }
  return false;
}

/// True when a frame of the holder's stack `seen` carries lies in a function whose name contains
/// `function`.
/// The holder's stack of `seen`, symbolised, innermost first, for failure messages.
inline std::string describe_holder(const lc::WaitSeen& seen) {
  lx::Symbolizer symbolizer;
  std::string out = std::to_string(int{seen.holder_pc_count}) + " holder frames:";
  for (std::uint8_t f = 0; f < seen.holder_pc_count; ++f) {
    lx::Symbol sym;
    out += " ";
    out += symbolizer.symbolize(seen.holder_frames[f], f != 0, sym) && sym.has_function ? sym.function : "?";
  }
  return out;
}

inline bool holder_frame_in(const lc::WaitSeen& seen, const char* function) {
  lx::Symbolizer symbolizer;
  for (std::uint8_t f = 0; f < seen.holder_pc_count; ++f) {
    lx::Symbol sym;
    if (symbolizer.symbolize(seen.holder_frames[f], f != 0, sym) && sym.has_function &&
        std::strstr(sym.function, function) != nullptr) {
      return true;
    }
  }
  return false;
}

/// Human dump of a record's stacks, for failure messages.
inline std::string describe_stacks(const lc::BlockRecord& record) {
  lx::Symbolizer symbolizer;
  std::string out;
  for (std::uint8_t i = 0; i < record.sample_count; ++i) {
    const lc::Sample& s = record.samples[i];
    out += "  sample:";
    for (std::uint8_t f = 0; f < s.pc_count; ++f) {
      lx::Symbol sym;
      symbolizer.symbolize(s.frames[s.scope_count + f], f != 0, sym);
      out += " ";
      out += sym.has_function ? sym.function : "?";
    }
    out += "\n";
  }
  return out;
}

}  // namespace lctest
