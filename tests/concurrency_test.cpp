// SPDX-License-Identifier: MIT
// Concurrency tests (issue test 7): the loop thread writes stamps, scopes and block notes while
// other threads read them, as a watchdog thread does on Linux. Every test checks an invariant
// written into the data by the writer, so a torn read shows up as a wrong value, and counts the
// reads it checked so a test that checked nothing cannot pass. Threads are coordinated with
// atomics and joins only. Meant to run under ThreadSanitizer too (`cmake --workflow --preset
// tsan`).
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loopcanary/loopcanary.hpp"

// ThreadSanitizer slows every atomic access by about an order of magnitude. StampsAreNeverTorn
// runs its 10^7 begin/end pairs under it too (about 20 s on two cores); the back-to-back stamp,
// scope and full-path runs are scaled down to a quarter under it (and only under it) so the tsan
// workflow stays well within two minutes.
#if defined(__SANITIZE_THREAD__)
#define LOOPCANARY_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOOPCANARY_TEST_TSAN 1
#endif
#endif
#ifndef LOOPCANARY_TEST_TSAN
#define LOOPCANARY_TEST_TSAN 0
#endif

namespace lc = loopcanary;

namespace {

constexpr bool kTsan = LOOPCANARY_TEST_TSAN != 0;

// Event descriptors the loop dispatches; dispatch n (from 0) uses kEvents[n % kEventKinds].
// Seven kinds: not a power of two, so the event is not a bit pattern of the sequence number.
constexpr std::size_t kEventKinds = 7;
constexpr lc::Event kEvents[kEventKinds] = {{"ev0"}, {"ev1"}, {"ev2"}, {"ev3"}, {"ev4"}, {"ev5"}, {"ev6"}};

constexpr std::uint32_t kTickHz = 1'000'000;

// Runs `loop` and `reader` on two threads, both started before either runs (so they overlap),
// and joins them.
template <class Loop, class Reader>
void run_pair(Loop loop, Reader reader) {
  std::atomic<int> ready{0};
  auto gate = [&ready] {
    ready.fetch_add(1, std::memory_order_acq_rel);
    while (ready.load(std::memory_order_acquire) < 2) std::this_thread::yield();
  };
  std::thread loop_thread([&] {
    gate();
    loop();
  });
  std::thread reader_thread([&] {
    gate();
    reader();
  });
  loop_thread.join();
  reader_thread.join();
}

// ---------------------------------------------------------------------------------------------
// 1. Stamps: one writer doing >= 10^7 begin/end pairs (or back-to-back dispatches), one reader
//    snapshotting continuously.
// ---------------------------------------------------------------------------------------------

// Dispatch n (from 0) begins at tick begin_tick(n) and ends one tick later. The start is just
// before the 32-bit wrap, so the run crosses it.
constexpr lc::tick_t kStampStart = 0u - 3000u;
constexpr lc::tick_t begin_tick(std::uint32_t n) { return static_cast<lc::tick_t>(kStampStart + 3u * n); }

// How the loop of the stamp stress closes its dispatches.
enum class Closing {
  pairs,         // begin_at/end_at around each: dispatch n lasts 1 tick
  back_to_back,  // next_at from one to the next (3 ticks each); every fifth ends with end_at
};

// True when the loop of the stamp stress ends dispatch n alone (end_at, 1 tick after its
// begin); false when dispatch n + 1's next_at ends it (3 ticks after its begin).
constexpr bool ends_alone(Closing closing, std::uint32_t n) { return closing == Closing::pairs || n % 5u == 4u; }

// One writer stamping at least `min_dispatches` dispatches, one reader snapshotting
// continuously: every consistent snapshot must name dispatch n with its own begin and event.
void stamps_are_never_torn(Closing closing, std::uint32_t min_dispatches) {
  // The loop keeps going past min_dispatches until the reader has checked this many in-dispatch
  // snapshots (the reader thread may start late on a loaded machine), up to kMaxPairs.
  const std::uint64_t kWantedInDispatch = 200'000u;
  const std::uint32_t kMaxPairs = 1u << 30;  // seq = 2n + 1 stays far from the 32-bit wrap

  // On the heap rather than static, so --gtest_repeat starts from a fresh monitor.
  const auto owned = std::make_unique<lc::Monitor>();
  lc::Monitor& monitor = *owned;
  lc::MonitorConfig config;
  config.name = "stamps";
  config.tick_hz = kTickHz;
  config.threshold_us = 1'000'000;  // every dispatch lasts 1 or 3 ticks: never a block
  config.sample_interval_us = 1'000;
  ASSERT_EQ(monitor.init(config), lc::Status::ok);

  std::atomic<bool> loop_done{false};
  std::atomic<bool> reader_satisfied{false};
  std::uint32_t pairs = 0;
  std::uint32_t alone = 0;  // dispatches closed by end_at (the rest by next_at)

  std::uint64_t in_dispatch_checked = 0;
  std::uint64_t idle_checked = 0;
  std::uint64_t torn = 0;
  std::uint64_t wrong_begin = 0;
  std::uint64_t wrong_event = 0;
  std::uint64_t seq_went_back = 0;
  std::uint64_t seq_out_of_range = 0;

  run_pair(
      [&] {
        std::uint32_t n = 0;
        bool running = false;
        while (n < min_dispatches || (!reader_satisfied.load(std::memory_order_relaxed) && n < kMaxPairs)) {
          if (running) {
            monitor.next_at(kEvents[n % kEventKinds], begin_tick(n));
          } else {
            monitor.begin_at(kEvents[n % kEventKinds], begin_tick(n));
          }
          running = !ends_alone(closing, n);
          if (!running) {
            monitor.end_at(static_cast<lc::tick_t>(begin_tick(n) + 1u));
            ++alone;
          }
          ++n;
        }
        if (running) {
          monitor.end_at(static_cast<lc::tick_t>(begin_tick(n - 1u) + 1u));
          ++alone;
        }
        pairs = n;
        loop_done.store(true, std::memory_order_release);
      },
      [&] {
        std::uint32_t last_seq = 0;
        while (!loop_done.load(std::memory_order_acquire)) {
          lc::StampSnapshot snap;
          if (!monitor.snapshot(snap)) {
            ++torn;
            continue;
          }
          if (snap.seq < last_seq) ++seq_went_back;
          last_seq = snap.seq;
          if (snap.seq > 2u * kMaxPairs) ++seq_out_of_range;
          if (!snap.in_dispatch()) {
            ++idle_checked;
            continue;
          }
          const std::uint32_t n = (snap.seq - 1u) / 2u;  // seq = 2n + 1 while dispatch n runs
          if (snap.begin != begin_tick(n)) ++wrong_begin;
          if (snap.event != &kEvents[n % kEventKinds]) ++wrong_event;
          if (++in_dispatch_checked == kWantedInDispatch) reader_satisfied.store(true, std::memory_order_relaxed);
        }
      });

  EXPECT_EQ(wrong_begin, 0u);
  EXPECT_EQ(wrong_event, 0u);
  EXPECT_EQ(seq_went_back, 0u);
  EXPECT_EQ(seq_out_of_range, 0u);
  EXPECT_GE(pairs, min_dispatches);
  EXPECT_GE(in_dispatch_checked, kWantedInDispatch) << "the reader saw too few dispatches to prove anything";

  // Dispatches ended alone last 1 tick, those ended by the next one's next_at 3.
  const std::uint32_t chained = pairs - alone;
  if (closing == Closing::back_to_back) {
    EXPECT_EQ(alone, (pairs + 4u) / 5u) << "every fifth and the last";
  } else {
    EXPECT_EQ(chained, 0u);
  }
  const lc::LoopStats stats = monitor.stats();
  EXPECT_EQ(stats.dispatches, pairs);
  EXPECT_EQ(stats.blocks, 0u);
  EXPECT_EQ(stats.max_duration, chained > 0 ? 3u : 1u);
  EXPECT_EQ(stats.busy_ticks, alone + 3u * chained);  // modular, far from wrapping here
  EXPECT_EQ(stats.histogram[0], alone);
  EXPECT_EQ(stats.histogram[1], chained);
  EXPECT_EQ(stats.nested, 0u);
  EXPECT_EQ(stats.unbalanced_ends, 0u);

  ::testing::Test::RecordProperty("pairs", static_cast<int>(pairs));
  ::testing::Test::RecordProperty("in_dispatch_snapshots", static_cast<int>(in_dispatch_checked));
  ::testing::Test::RecordProperty("idle_snapshots", static_cast<int>(idle_checked));
  ::testing::Test::RecordProperty("torn_snapshots", static_cast<int>(torn));
  std::printf("dispatches %u (%u back to back), snapshots checked: %llu in dispatch, %llu idle, %llu torn (gave up)\n",
              pairs, chained, static_cast<unsigned long long>(in_dispatch_checked),
              static_cast<unsigned long long>(idle_checked), static_cast<unsigned long long>(torn));
}

TEST(Concurrency, StampsAreNeverTorn) {
  stamps_are_never_torn(Closing::pairs, 10'000'000u);  // 10^7 pairs at least, in every build
}

// Back-to-back dispatch: next_at moves the stamps from dispatch n to n + 1 in one go (the reader
// may catch the even seq between them), and every fifth dispatch ends alone.
TEST(Concurrency, BackToBackStampsAreNeverTorn) {
  stamps_are_never_torn(Closing::back_to_back, kTsan ? 2'500'000u : 10'000'000u);
}

// ---------------------------------------------------------------------------------------------
// 2. The full path: loop thread -> watchdog thread polling -> consumer thread popping records.
// ---------------------------------------------------------------------------------------------

// Virtual time, in ticks of 1 us, shared by all threads: only the loop advances it (as time
// passes in its handlers); the watchdog reads it before each poll, as it would read a real
// clock. A poll's `now` is therefore never later than the loop's present, and may be earlier
// than a dispatch the poll then sees begin (the loop moved on between the clock read and the
// snapshot), exactly as with a hardware clock. It may also be later than the end stamp of a
// dispatch the poll sees still running: the loop read its clock for end() and lost its CPU
// before publishing the end (the late ends below).
constexpr lc::tick_t kThreshold = 1'000;  // ticks (1 ms)
constexpr lc::tick_t kHangLimit = 5'000;
constexpr lc::tick_t kTimeStep = 100;             // the loop publishes time in steps this long
constexpr lc::tick_t kPathStart = 0u - 50'000u;   // wraps within the first few hundred dispatches
constexpr lc::tick_t kGap = 1;                    // idle ticks between two dispatches

// Duration of dispatch `d` (numbered from 1, as in BlockRecord::dispatch).
constexpr lc::tick_t duration_of(std::uint32_t d) {
  if (d % 1024u == 0) return kHangLimit + 1'000u + d % 7u;  // a hang that ends
  if (d % 16u == 0) return kThreshold + 1u + d % 97u;       // a block
  if (d % 16u == 8) return kThreshold;                      // exactly the threshold: not a block
  return d % 50u;                                           // short
}
constexpr bool is_block(std::uint32_t d) { return duration_of(d) > kThreshold; }
constexpr const lc::Event& event_of(std::uint32_t d) { return kEvents[d % kEventKinds]; }

// Late ends: dispatches of exactly the threshold (not blocks) whose end the loop stamps, then
// lets the clock run kLateEnd further and waits for the watchdog to poll before it calls
// end_at() with that stamp. That poll reads a clock past the threshold while the dispatch still
// shows running: it reports the dispatch in progress, though the loop counts no block.
constexpr lc::tick_t kLateEnd = 50;
constexpr bool is_late_end(std::uint32_t d) { return d % 1024u == 520u; }
static_assert(duration_of(520) == kThreshold, "a late end is a dispatch of exactly the threshold");

// One report as the watchdog emitted it (seen by an interceptor, in the watchdog thread).
struct Emitted {
  lc::Phase phase;
  std::uint8_t flags;
  std::uint32_t dispatch;
  lc::tick_t start;
  lc::tick_t end;
  std::uint64_t duration;
  const lc::Event* event;
};

// The fields of a final record the consumer checks (a whole BlockRecord is 1.5 KB).
struct Popped {
  std::uint32_t report;
  lc::Phase phase;
  std::uint32_t dispatch;
  lc::tick_t start;
  lc::tick_t end;
  std::uint64_t duration;
  const lc::Event* event;
  const char* loop;
  lc::tick_t threshold;
  std::uint32_t tick_hz;
  std::uint32_t records_dropped;
  std::uint32_t notes_dropped;
};

// Everything the run produced; read by the tests after every thread has been joined.
struct FullPathRun {
  std::uint32_t dispatches = 0;
  std::vector<lc::tick_t> begin;     // index = dispatch number: begin stamp the loop used
  std::vector<Emitted> emitted;      // index = report number (slot 0 unused)
  std::uint64_t emitted_out_of_order = 0;
  std::vector<Popped> popped_finals;
  std::vector<std::uint32_t> popped_reports;
  lc::LoopStats stats{};
  lc::WatchdogStats dog{};
  std::uint64_t polls = 0;
  std::uint32_t late_ends = 0;
  const char* loop_name = nullptr;

  static void intercept(void* context, const lc::BlockRecord& r) {
    auto& self = *static_cast<FullPathRun*>(context);
    if (r.report != self.emitted.size()) ++self.emitted_out_of_order;
    self.emitted.push_back(Emitted{r.phase, r.flags, r.dispatch, r.start, r.end, r.duration_ticks, r.event});
  }
};

// Runs the loop, watchdog and consumer threads once; the ConcurrentFullPath tests check the outcome.
void run_full_path(FullPathRun& run) {
  constexpr std::size_t kRingCapacity = 16;
  run.dispatches = kTsan ? 500'000u : 2'000'000u;

  const auto owned = std::make_unique<lc::Monitor>();  // outlives the threads and the watchdog
  lc::Monitor& monitor = *owned;
  lc::MonitorConfig config;
  config.name = "path";
  config.tick_hz = kTickHz;
  config.threshold_us = kThreshold;
  config.arm_permille = 250;
  config.sample_interval_us = 100;
  config.hang_limit_us = kHangLimit;
  ASSERT_EQ(monitor.init(config), lc::Status::ok);
  run.loop_name = monitor.name();

  auto watchdog = std::make_unique<lc::StaticWatchdog<1, kRingCapacity>>();
  lc::WatchdogConfig dog_config;
  dog_config.qualifier = "concurrency";
  ASSERT_EQ(watchdog->init(dog_config), lc::Status::ok);  // no HAL: no stacks, no CPU readings
  ASSERT_EQ(watchdog->add(monitor), lc::Status::ok);
  run.emitted.reserve(run.dispatches / 8u);
  run.emitted.push_back({});  // report numbers start at 1
  ASSERT_EQ(watchdog->add_interceptor(&FullPathRun::intercept, &run), lc::Status::ok);

  run.begin.assign(run.dispatches + 1u, 0);
  run.popped_reports.reserve(run.dispatches / 8u);
  std::atomic<lc::tick_t> clock{kPathStart};
  std::atomic<bool> loop_done{false};
  std::atomic<bool> watchdog_done{false};
  std::atomic<int> ready{0};
  auto gate = [&ready] {
    ready.fetch_add(1, std::memory_order_acq_rel);
    while (ready.load(std::memory_order_acquire) < 3) std::this_thread::yield();
  };

  // The loop may run at most kPaceWindow dispatches ahead of the watchdog: at every multiple of
  // kPaceWindow it waits until a poll has started since the previous one. Without this, a
  // watchdog thread descheduled for the whole run (two cores, three busy threads) would leave
  // nothing but dropped notes to check. A window holds four blocks, as many as the note queue,
  // and a poll may still come later than one window: both drop paths stay exercised.
  std::atomic<std::uint64_t> polls_started{0};
  constexpr std::uint32_t kPaceWindow = 64;

  std::thread loop_thread([&] {
    gate();
    lc::tick_t t = kPathStart;
    std::uint64_t polls_seen = 0;
    for (std::uint32_t d = 1; d <= run.dispatches; ++d) {
      if (d % kPaceWindow == 0) {
        std::uint64_t p = 0;
        while ((p = polls_started.load(std::memory_order_acquire)) == polls_seen) std::this_thread::yield();
        polls_seen = p;
      }
      run.begin[d] = t;
      monitor.begin_at(event_of(d), t);
      // Time passes inside the handler, published in steps so the watchdog can arm, sample and
      // report while the dispatch runs; every other block publishes it in one jump, so the
      // watchdog's first sight of it may come at the end, when its note is about to be queued.
      const lc::tick_t end = static_cast<lc::tick_t>(t + duration_of(d));
      const lc::tick_t step = d % 32u == 16u ? duration_of(d) : kTimeStep;
      while (t != end) {
        const lc::tick_t left = static_cast<lc::tick_t>(end - t);
        t = static_cast<lc::tick_t>(t + (left < step ? left : step));
        clock.store(t, std::memory_order_release);
      }
      if (is_late_end(d)) {
        // The clock moves on before end_at() publishes the stamp. Sequentially consistent
        // accesses on both sides: poll p + 2 (p: the last one started when the clock moved)
        // reads the clock after this store, and it has taken its snapshot once poll p + 3 starts.
        t = static_cast<lc::tick_t>(t + kLateEnd);
        clock.store(t, std::memory_order_seq_cst);
        const std::uint64_t p = polls_started.load(std::memory_order_seq_cst);
        while (polls_started.load(std::memory_order_seq_cst) < p + 3u) std::this_thread::yield();
        polls_seen = polls_started.load(std::memory_order_acquire);
        ++run.late_ends;
      }
      monitor.end_at(end);
      t = static_cast<lc::tick_t>(t + kGap);
      clock.store(t, std::memory_order_release);
    }
    loop_done.store(true, std::memory_order_release);
  });

  std::thread watchdog_thread([&] {
    gate();
    lc::tick_t previous = kPathStart;
    while (!loop_done.load(std::memory_order_acquire)) {
      const lc::tick_t now = clock.load(std::memory_order_seq_cst);
      polls_started.store(++run.polls, std::memory_order_seq_cst);
      watchdog->poll(now);
      if (now == previous) std::this_thread::yield();  // the loop did not move: let it run
      previous = now;
    }
    // The loop has finished: one poll drains the last notes and closes a dispatch it was
    // watching; a second one must find nothing left to do.
    watchdog->poll(clock.load(std::memory_order_acquire));
    watchdog->poll(clock.load(std::memory_order_acquire));
    run.polls += 2;
    watchdog_done.store(true, std::memory_order_release);
  });

  std::thread consumer_thread([&] {
    gate();
    lc::BlockRecord r;
    for (;;) {
      const bool last_round = watchdog_done.load(std::memory_order_acquire);
      bool any = false;
      while (watchdog->pop(r)) {
        any = true;
        run.popped_reports.push_back(r.report);
        if (r.phase == lc::Phase::final) {
          run.popped_finals.push_back(Popped{r.report, r.phase, r.dispatch, r.start, r.end, r.duration_ticks, r.event,
                                             r.loop, r.threshold_ticks, r.tick_hz, r.records_dropped,
                                             r.notes_dropped});
        }
      }
      if (last_round) break;  // nothing can arrive after watchdog_done
      if (!any) std::this_thread::yield();
    }
  });

  loop_thread.join();
  watchdog_thread.join();
  consumer_thread.join();
  run.stats = monitor.stats();
  run.dog = watchdog->stats();
}

class ConcurrentFullPath : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = new FullPathRun;
    run_full_path(*run_);
    const FullPathRun& r = *run_;
    std::uint32_t exact = 0;
    std::uint32_t estimated = 0;
    for (std::size_t i = 1; i < r.emitted.size(); ++i) {
      if (r.emitted[i].phase != lc::Phase::final) continue;
      ((r.emitted[i].flags & lc::kFlagEndEstimated) != 0 ? estimated : exact) += 1;
    }
    std::printf(
        "dispatches %u, blocks %u, late ends %u: %u final records with the stamped end, %u with an estimated "
        "end, %u notes dropped; reports %u, popped %zu, records dropped %u; polls %llu, torn %u, hangs %u\n",
        r.dispatches, r.stats.blocks, r.late_ends, exact, estimated, r.stats.notes_dropped, r.dog.reports,
        r.popped_reports.size(), r.dog.records_dropped, static_cast<unsigned long long>(r.polls), r.dog.torn_snapshots,
        r.stats.hangs);
  }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
  }
  void SetUp() override {
    // A fatal failure inside the run (an init that failed) leaves nothing to check.
    ASSERT_FALSE(run_->emitted.empty()) << "the run did not start";
    ASSERT_EQ(run_->emitted_out_of_order, 0u);
  }

  static FullPathRun* run_;
};
FullPathRun* ConcurrentFullPath::run_ = nullptr;

// The loop counted exactly the blocks the run made; each produced a final record with its
// stamped end, or its note was dropped and counted (notes_dropped, in the loop's and in the
// watchdog's statistics); final records with an estimated end are counted apart
// (finals_estimated); no report went missing between the watchdog and the consumer without
// being counted (records_dropped).
TEST_F(ConcurrentFullPath, EveryBlockIsReportedOrCounted) {
  const FullPathRun& run = *run_;
  std::uint32_t expected_blocks = 0;
  std::uint32_t expected_hangs = 0;
  for (std::uint32_t d = 1; d <= run.dispatches; ++d) {
    if (is_block(d)) ++expected_blocks;
    if (duration_of(d) > kHangLimit) ++expected_hangs;
  }
  ASSERT_EQ(run.stats.dispatches, run.dispatches);
  ASSERT_EQ(run.stats.blocks, expected_blocks);
  EXPECT_LE(run.stats.hangs, expected_hangs);
  ASSERT_EQ(run.emitted.size() - 1u, run.dog.reports);

  std::uint32_t exact_finals = 0;
  std::uint32_t estimated_finals = 0;
  for (std::size_t i = 1; i < run.emitted.size(); ++i) {
    const Emitted& e = run.emitted[i];
    if (e.phase != lc::Phase::final) continue;
    ((e.flags & lc::kFlagEndEstimated) != 0 ? estimated_finals : exact_finals) += 1;
  }
  EXPECT_EQ(run.dog.notes_dropped, run.stats.notes_dropped);
  EXPECT_EQ(exact_finals + run.dog.notes_dropped, run.stats.blocks);
  EXPECT_EQ(estimated_finals, run.dog.finals_estimated);
  // An estimated final closes a dispatch reported in progress that ended without a note: every
  // late end, and at most each block whose note was dropped.
  EXPECT_GE(estimated_finals, run.late_ends);
  EXPECT_LE(estimated_finals, run.late_ends + run.stats.notes_dropped);

  // Ring: every report was popped, in order, or counted as dropped.
  EXPECT_EQ(run.popped_reports.size() + run.dog.records_dropped, run.dog.reports);
  std::uint32_t previous = 0;
  std::uint64_t gaps = 0;
  for (std::uint32_t report : run.popped_reports) {
    ASSERT_GT(report, previous);
    gaps += report - previous - 1u;
    previous = report;
  }
  gaps += run.dog.reports - previous;
  EXPECT_EQ(gaps, run.dog.records_dropped);
  EXPECT_FALSE(run.popped_finals.empty()) << "no final record made it through the ring";
}

// A final record with the stamped end is made for blocks only; one with an estimated end only
// for a dispatch reported in progress that ended without a note (here: a late end, or a block
// whose note was dropped); at most one final record per dispatch. Every late end is reported in
// progress once, and closed by a final record with an estimated end.
TEST_F(ConcurrentFullPath, OneFinalRecordPerBlock) {
  const FullPathRun& run = *run_;
  ASSERT_GT(run.late_ends, 0u);
  std::vector<std::uint8_t> finals_of(run.dispatches + 1u, 0);
  std::vector<std::uint8_t> in_progress_of(run.dispatches + 1u, 0);
  std::uint32_t not_a_block = 0;
  std::uint32_t duplicated = 0;
  for (std::size_t i = 1; i < run.emitted.size(); ++i) {
    const Emitted& e = run.emitted[i];
    ASSERT_GE(e.dispatch, 1u);
    ASSERT_LE(e.dispatch, run.dispatches);
    if (e.phase == lc::Phase::in_progress) ++in_progress_of[e.dispatch];
    if (e.phase != lc::Phase::final) continue;
    const bool estimated = (e.flags & lc::kFlagEndEstimated) != 0;
    if (is_late_end(e.dispatch) && !estimated) {
      ADD_FAILURE() << "report " << i << ": final record with a stamped end for late end " << e.dispatch;
    }
    if (!is_block(e.dispatch) && !(estimated && is_late_end(e.dispatch))) {
      if (++not_a_block <= 5) {
        ADD_FAILURE() << "report " << i << ": final record (flags " << int{e.flags} << ") for dispatch "
                      << e.dispatch << ", which lasted " << duration_of(e.dispatch) << " ticks, threshold "
                      << kThreshold;
      }
    }
    if (++finals_of[e.dispatch] == 2 && ++duplicated <= 5) {
      std::string history;
      for (std::size_t j = 1; j < run.emitted.size(); ++j) {
        const Emitted& o = run.emitted[j];
        if (o.dispatch != e.dispatch) continue;
        history += " [report " + std::to_string(j) + ": " + lc::to_string(o.phase) + ", flags " +
                   std::to_string(o.flags) + ", duration " + std::to_string(o.duration) + "]";
      }
      ADD_FAILURE() << "dispatch " << e.dispatch << " (" << duration_of(e.dispatch)
                    << " ticks) has more than one final record:" << history;
    }
  }
  EXPECT_EQ(not_a_block, 0u);
  EXPECT_EQ(duplicated, 0u);
  std::uint32_t late_checked = 0;
  for (std::uint32_t d = 1; d <= run.dispatches; ++d) {
    if (!is_late_end(d)) continue;
    ++late_checked;
    EXPECT_EQ(in_progress_of[d], 1u) << "late end " << d;
    EXPECT_EQ(finals_of[d], 1u) << "late end " << d;
  }
  EXPECT_EQ(late_checked, run.late_ends);
}

// Records carry the stamps the loop wrote: a final record with a stamped end says begin, end
// and end - begin exactly; a record made while the dispatch ran says an elapsed time over its
// limit and no longer than the dispatch lasted until the loop published its end (the watchdog
// cannot have seen time the dispatch did not spend: for a late end, up to kLateEnd after its
// end stamp).
TEST_F(ConcurrentFullPath, ReportsCarryTheStampedTimes) {
  const FullPathRun& run = *run_;
  std::uint32_t wrong = 0;
  std::uint32_t checked_exact = 0;
  std::uint32_t checked_running = 0;
  for (std::size_t i = 1; i < run.emitted.size(); ++i) {
    const Emitted& e = run.emitted[i];
    ASSERT_GE(e.dispatch, 1u);
    ASSERT_LE(e.dispatch, run.dispatches);
    const std::uint32_t d = e.dispatch;
    const lc::tick_t begin = run.begin[d];
    const lc::tick_t end = static_cast<lc::tick_t>(begin + duration_of(d));
    const lc::tick_t duration = duration_of(d);
    bool ok = e.start == begin && e.event == &event_of(d);
    if (e.phase == lc::Phase::final) {
      if ((e.flags & lc::kFlagEndEstimated) != 0) {
        // No note (a late end, or a dropped note): the record is closed at the poll that saw
        // the dispatch gone, later than the watchdog saw it past its threshold.
        ok = ok && e.duration > kThreshold;
      } else {
        ok = ok && e.end == end && e.duration == duration;
        ++checked_exact;
      }
    } else {
      const lc::tick_t limit = e.phase == lc::Phase::hang ? kHangLimit : kThreshold;
      ok = ok && e.duration > limit && e.duration <= duration + (is_late_end(d) ? kLateEnd : 0u);
      ++checked_running;
    }
    if (!ok && ++wrong <= 8) {
      ADD_FAILURE() << "report " << i << " (" << lc::to_string(e.phase) << ", flags " << int{e.flags}
                    << ") of dispatch " << d << " says start " << e.start << ", end " << e.end << ", duration "
                    << e.duration << "; the loop stamped begin " << begin << ", end " << end << ", duration "
                    << duration << "; limit " << (e.phase == lc::Phase::hang ? kHangLimit : kThreshold);
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(checked_exact, 0u);

  // The consumer received the same values: records travel through the ring whole.
  for (const Popped& r : run.popped_finals) {
    ASSERT_LT(r.report, run.emitted.size());
    const Emitted& e = run.emitted[r.report];
    EXPECT_EQ(r.phase, e.phase);
    EXPECT_EQ(r.dispatch, e.dispatch);
    EXPECT_EQ(r.start, e.start);
    EXPECT_EQ(r.end, e.end);
    EXPECT_EQ(r.duration, e.duration);
    EXPECT_EQ(r.event, e.event);
    EXPECT_EQ(r.loop, run.loop_name);
    EXPECT_EQ(r.threshold, kThreshold);
    EXPECT_EQ(r.tick_hz, kTickHz);
    EXPECT_LE(r.records_dropped, run.dog.records_dropped);
    EXPECT_LE(r.notes_dropped, run.stats.notes_dropped);
  }
  RecordProperty("final_records_checked", static_cast<int>(checked_exact));
  RecordProperty("running_records_checked", static_cast<int>(checked_running));
}

// ---------------------------------------------------------------------------------------------
// 2b. One interleaving of the full path, replayed deterministically: the watchdog thread reads
// the clock, the loop begins a dispatch, then the watchdog takes its snapshot. The poll's `now`
// is then earlier than the begin stamp it sees (by the time the loop ran in between). The
// watchdog must measure the dispatch from its begin stamp, not from that earlier `now`.
// ---------------------------------------------------------------------------------------------

TEST(ConcurrentInterleaving, PollWithClockReadBeforeTheBeginMeasuresFromTheBegin) {
  for (const lc::tick_t base : {lc::tick_t{0}, static_cast<lc::tick_t>(0u - 20'500u)}) {  // and across the wrap
    SCOPED_TRACE(testing::Message() << "base " << base);
    auto at = [base](lc::tick_t t) { return static_cast<lc::tick_t>(base + t); };
    lc::Monitor monitor;
    lc::MonitorConfig config;
    config.name = "interleave";
    config.tick_hz = kTickHz;
    config.threshold_us = 1'000;
    config.sample_interval_us = 100;
    config.hang_limit_us = 5'000;
    ASSERT_EQ(monitor.init(config), lc::Status::ok);
    auto watchdog = std::make_unique<lc::StaticWatchdog<1, 8>>();
    ASSERT_EQ(watchdog->init(lc::WatchdogConfig{}), lc::Status::ok);
    ASSERT_EQ(watchdog->add(monitor), lc::Status::ok);

    // A 990-tick dispatch (not a block) first seen by a poll whose clock read came 100 ticks
    // before its begin.
    monitor.begin_at(kEvents[0], at(10'000));
    watchdog->poll(at(9'900));
    watchdog->poll(at(10'950));  // 950 ticks into the dispatch
    EXPECT_EQ(watchdog->stats().reports, 0u) << "reported a block in progress after 950 of 1000 ticks";
    monitor.end_at(at(10'990));
    watchdog->poll(at(11'000));
    EXPECT_EQ(monitor.stats().blocks, 0u);
    EXPECT_EQ(watchdog->stats().reports, 0u) << "a 990-tick dispatch was reported as a block";
    lc::BlockRecord r;
    while (watchdog->pop(r)) {
      ADD_FAILURE() << lc::to_string(r.phase) << " record for the 990-tick dispatch, duration " << r.duration_ticks
                    << ", flags " << int{r.flags};
    }

    // A 1200-tick block seen the same way: the in-progress record says the elapsed time at the
    // poll, the final record the stamped duration.
    monitor.begin_at(kEvents[1], at(20'000));
    watchdog->poll(at(19'900));
    watchdog->poll(at(21'100));  // 1100 ticks in: over the threshold
    monitor.end_at(at(21'200));
    watchdog->poll(at(21'300));
    ASSERT_TRUE(watchdog->pop(r));
    EXPECT_EQ(r.phase, lc::Phase::in_progress);
    EXPECT_EQ(r.start, at(20'000));
    EXPECT_EQ(r.duration_ticks, 1'100u);
    ASSERT_TRUE(watchdog->pop(r));
    EXPECT_EQ(r.phase, lc::Phase::final);
    EXPECT_EQ(r.start, at(20'000));
    EXPECT_EQ(r.end, at(21'200));
    EXPECT_EQ(r.duration_ticks, 1'200u);
    EXPECT_EQ(r.flags, 0u);
    EXPECT_FALSE(watchdog->pop(r));
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Named scopes: the loop pushes and pops while a reader takes scope snapshots.
// ---------------------------------------------------------------------------------------------

// Scope names: row r, column i is the name pushed at depth i in a round that uses row r. A
// consistent snapshot holds names of one row only, at consecutive depths. Two columns more than
// the stack holds, so overflowing pushes happen too.
constexpr std::size_t kRows = 5;
constexpr std::size_t kColumns = lc::kScopeDepth + 2;
constexpr std::size_t kNameSize = 8;
char g_names[kRows][kColumns][kNameSize];

struct NamePosition {
  bool valid;
  std::size_t row;
  std::size_t column;
};

NamePosition position_of(const char* name) {
  const auto first = reinterpret_cast<std::uintptr_t>(&g_names[0][0][0]);
  const auto p = reinterpret_cast<std::uintptr_t>(name);
  if (p < first || p >= first + sizeof g_names || (p - first) % kNameSize != 0) return {false, 0, 0};
  const std::size_t index = (p - first) / kNameSize;
  return {true, index / kColumns, index % kColumns};
}

TEST(Concurrency, ScopeSnapshotsAreConsistent) {
  for (std::size_t r = 0; r < kRows; ++r) {
    for (std::size_t c = 0; c < kColumns; ++c) std::snprintf(g_names[r][c], kNameSize, "s%zu.%zu", r, c);
  }
  const std::uint32_t kRounds = kTsan ? 500'000u : 2'000'000u;
  const std::uint64_t kWanted = kTsan ? 50'000u : 200'000u;
  const std::uint32_t kMaxRounds = 1u << 28;
  constexpr std::uint32_t kUnderflowEvery = 1000;  // an extra pop with nothing pushed

  const auto owned = std::make_unique<lc::Monitor>();
  lc::Monitor& monitor = *owned;
  std::atomic<bool> loop_done{false};
  std::atomic<bool> reader_satisfied{false};
  std::uint32_t rounds = 0;
  std::uint64_t overflowing_pushes = 0;

  std::uint64_t checked = 0;
  std::uint64_t empty = 0;
  std::uint64_t torn = 0;
  std::uint64_t bad_name = 0;
  std::uint64_t mixed_rows = 0;
  std::uint64_t not_consecutive = 0;
  std::uint64_t bottom_missing = 0;
  std::uint64_t too_many = 0;

  run_pair(
      [&] {
        std::uint32_t r = 0;
        while (r < kRounds || (!reader_satisfied.load(std::memory_order_relaxed) && r < kMaxRounds)) {
          const std::size_t row = r % kRows;
          const std::size_t depth = (r / kRows) % (kColumns + 1);  // 0 .. kColumns, every row
          for (std::size_t i = 0; i < depth; ++i) {
            monitor.push_scope(g_names[row][i]);
            if (i >= lc::kScopeDepth) ++overflowing_pushes;
          }
          for (std::size_t i = 0; i < depth; ++i) monitor.pop_scope();
          if (r % kUnderflowEvery == 0) monitor.pop_scope();
          ++r;
        }
        rounds = r;
        loop_done.store(true, std::memory_order_release);
      },
      [&] {
        const char* out[lc::kScopeDepth];
        std::uint32_t attempt = 0;
        while (!loop_done.load(std::memory_order_acquire)) {
          // Alternate between reading the whole stack and only its innermost three names.
          const std::size_t max = (attempt++ % 2u == 0) ? lc::kScopeDepth : 3u;
          std::size_t count = 0;
          if (!monitor.scope_snapshot(out, max, count)) {
            ++torn;
            continue;
          }
          if (count > max) {
            ++too_many;
            continue;
          }
          if (count == 0) {
            ++empty;
            continue;
          }
          const NamePosition top = position_of(out[0]);
          if (!top.valid) {
            ++bad_name;
            continue;
          }
          bool ok = true;
          for (std::size_t k = 1; k < count; ++k) {
            const NamePosition p = position_of(out[k]);
            if (!p.valid) {
              ++bad_name;
              ok = false;
              break;
            }
            if (p.row != top.row) {
              ++mixed_rows;
              ok = false;
              break;
            }
            if (p.column + k != top.column) {  // innermost first: columns descend by one
              ++not_consecutive;
              ok = false;
              break;
            }
          }
          // A snapshot shorter than `max` is the whole stack: it reaches depth 0.
          if (ok && count < max && position_of(out[count - 1]).column != 0) {
            ++bottom_missing;
            ok = false;
          }
          if (ok && ++checked == kWanted) reader_satisfied.store(true, std::memory_order_relaxed);
        }
      });

  EXPECT_EQ(bad_name, 0u);
  EXPECT_EQ(mixed_rows, 0u);
  EXPECT_EQ(not_consecutive, 0u);
  EXPECT_EQ(bottom_missing, 0u);
  EXPECT_EQ(too_many, 0u);
  EXPECT_GE(rounds, kRounds);
  EXPECT_GE(checked, kWanted) << "the reader saw too few non-empty stacks to prove anything";

  const lc::LoopStats stats = monitor.stats();
  EXPECT_EQ(stats.scope_overflows, overflowing_pushes);
  EXPECT_EQ(stats.scope_underflows, (rounds + kUnderflowEvery - 1u) / kUnderflowEvery);
  std::size_t count = 99;
  const char* out[lc::kScopeDepth];
  ASSERT_TRUE(monitor.scope_snapshot(out, lc::kScopeDepth, count));
  EXPECT_EQ(count, 0u) << "every push was popped";

  std::printf("rounds %u, scope snapshots: %llu non-empty checked, %llu empty, %llu torn (gave up)\n", rounds,
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(empty),
              static_cast<unsigned long long>(torn));
}

// ---------------------------------------------------------------------------------------------
// Stage marks: one loop marking stages, one reader taking stage snapshots of the dispatch it sees
// running. Dispatch n makes n % (kMaxStages + 3) marks (some past the capacity); mark k is named
// g_stage_names[n % 5][k] and stamped begin_tick(n) + k + 1, so a mark names its dispatch.
// ---------------------------------------------------------------------------------------------

constexpr std::size_t kStageRows = 5;
constexpr std::size_t kStageMarks = lc::kMaxStages + 2;
char g_stage_names[kStageRows][kStageMarks][8];

TEST(Concurrency, StageSnapshotsHoldOnlyTheirOwnDispatchsMarks) {
  for (std::size_t r = 0; r < kStageRows; ++r) {
    for (std::size_t k = 0; k < kStageMarks; ++k) std::snprintf(g_stage_names[r][k], 8, "t%zu.%zu", r, k);
  }
  const std::uint32_t kDispatches = kTsan ? 300'000u : 2'000'000u;
  const std::uint64_t kWanted = kTsan ? 20'000u : 100'000u;
  const std::uint32_t kMaxDispatches = 1u << 26;

  const auto owned = std::make_unique<lc::Monitor>();
  lc::Monitor& monitor = *owned;
  std::atomic<bool> loop_done{false};
  std::atomic<bool> reader_satisfied{false};
  std::uint32_t dispatches = 0;
  std::uint64_t marks_over = 0;
  std::uint64_t checked = 0;
  std::uint64_t torn = 0;
  std::uint64_t wrong = 0;

  run_pair(
      [&] {
        std::uint32_t n = 0;
        while (n < kDispatches || (!reader_satisfied.load(std::memory_order_relaxed) && n < kMaxDispatches)) {
          monitor.begin_at(kEvents[n % kEventKinds], begin_tick(n));
          const std::size_t marks = n % (kStageMarks + 1);
          for (std::size_t k = 0; k < marks; ++k) {
            monitor.stage_at(g_stage_names[n % kStageRows][k], begin_tick(n) + static_cast<lc::tick_t>(k + 1));
            if (k >= lc::kMaxStages) ++marks_over;
          }
          monitor.end_at(begin_tick(n) + 2u);
          ++n;
        }
        dispatches = n;
        loop_done.store(true, std::memory_order_release);
      },
      [&] {
        lc::StageMark out[lc::kMaxStages];
        while (!loop_done.load(std::memory_order_acquire)) {
          lc::StampSnapshot snap;
          if (!monitor.snapshot(snap) || !snap.in_dispatch()) continue;
          std::size_t count = 99;
          if (!monitor.stage_snapshot(snap.seq, out, count)) {
            ++torn;
            continue;
          }
          const std::uint32_t n = snap.seq / 2u;
          bool ok = count <= lc::kMaxStages && count <= n % (kStageMarks + 1);
          for (std::size_t k = 0; ok && k < count; ++k) {
            ok = out[k].name == g_stage_names[n % kStageRows][k] &&
                 out[k].start == begin_tick(n) + static_cast<lc::tick_t>(k + 1);
          }
          if (!ok) {
            ++wrong;
          } else if (count > 0 && ++checked == kWanted) {
            reader_satisfied.store(true, std::memory_order_relaxed);
          }
        }
      });

  EXPECT_EQ(wrong, 0u);
  EXPECT_GE(checked, kWanted) << "the reader saw too few marked dispatches to prove anything";
  EXPECT_EQ(monitor.stats().stages_dropped, marks_over);
  std::printf("dispatches %u, stage snapshots: %llu with marks checked, %llu torn (gave up)\n", dispatches,
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(torn));
}

}  // namespace
