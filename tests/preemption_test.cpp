// SPDX-License-Identifier: MIT
// A watchdog that preempts the loop in the middle of an update (a timer interrupt on a single
// core), and a loop that preempts the watchdog in the middle of a read (a higher-priority loop
// task on an RTOS). docs/reliability.md, "Guarantees".
//
// This program compiles the core and the sim port itself with LOOPCANARY_TEST_HOOKS (and
// LOOPCANARY_SINGLE_CORE=1, the build of a single-core part): every store and load of the
// lock-free protocols (core/include/loopcanary/sync.hpp) then calls test_after_store() or
// test_after_load() below.
//
// The watchdog preempts the loop: each update of the loop (begin_at, end_at within and over
// the threshold, next_at within the threshold and after a block, push_scope, pop_scope, a
// dispatch's first stage mark over an earlier dispatch's marks, a later mark) is run once per
// store it makes into the monitor, stopped after that store, and a watchdog poll runs there in
// virtual time. The run, with the polls after the update, must equal a run in which that poll
// came before the update or after it (for next_at also between its end and its begin), and
// the stop points must go from "before" to "after" once, never back: an update is seen whole
// or not at all. Each poll returns (it reads consistently at the first attempt: the loop
// cannot move while it runs), torn_snapshots stays 0, no block or hang is reported that the
// sequential runs do not report, and the polls after the update report it exactly.
//
// The loop preempts the watchdog: the loop begins or ends a dispatch between the watchdog's
// two reads of its sequence word in m of a poll's attempts in a row. With snapshot_attempts A,
// the poll reads the loop at attempt m + 1 when m < A, and otherwise gives up after A
// attempts, counting one torn snapshot; either way it reports nothing false, and the next poll
// reads the loop right.
//
// Every scenario runs from tick 0 and from just before the 32-bit tick counter wraps.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loopcanary/format.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/sim.hpp"

static_assert(LOOPCANARY_SINGLE_CORE == 1, "this test models a single core: build it with LOOPCANARY_SINGLE_CORE=1");

namespace {

namespace lc = loopcanary;
namespace sim = loopcanary::sim;
using lc::tick_t;

constexpr lc::Event kFirst{"first"};
constexpr lc::Event kSecond{"second"};
constexpr lc::Frame kPc = 0x4242;

// Threshold 1 ms (armed at 250 us), a sample every 100 us, a hang past 5 ms; 1 MHz ticks.
constexpr tick_t kThreshold = 1'000;
constexpr tick_t kHang = 5'000;

// A dispatch long before the update under test, so that a reader that mixed an old begin
// stamp with a new sequence word would see a dispatch running for 20 ms: a false hang.
constexpr tick_t kLongAgo = 0;
constexpr tick_t kT = 20'000;  // the dispatches under test begin here

void collect(void* context, const lc::BlockRecord& record);

/// One loop and its watchdog, in virtual time from `base`: times are offsets from it.
struct Rig {
  explicit Rig(tick_t base_tick, std::uint8_t attempts = 2) : base(base_tick) {
    lc::MonitorConfig config;
    config.name = "main";
    config.tick_hz = sim::kTickHz;
    config.threshold_us = kThreshold;
    config.sample_interval_us = 100;
    config.hang_limit_us = kHang;
    config.context = &thread;
    EXPECT_EQ(monitor.init(config), lc::Status::ok);
    lc::WatchdogConfig wc;
    wc.snapshot_attempts = attempts;
    machine.set_pc_capture(true);
    thread.pc = kPc;
    EXPECT_EQ(watchdog.init(wc, machine.hal()), lc::Status::ok);
    EXPECT_EQ(watchdog.add(monitor), lc::Status::ok);
    EXPECT_EQ(watchdog.add_interceptor(&collect, this), lc::Status::ok);
  }
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  tick_t at(tick_t offset) const { return static_cast<tick_t>(base + offset); }
  void poll(tick_t offset) { watchdog.poll(at(offset)); }
  bool owns(const void* word) const {
    const auto* p = static_cast<const unsigned char*>(word);
    const auto* m = reinterpret_cast<const unsigned char*>(&monitor);
    return p >= m && p < m + sizeof monitor;
  }

  /// What the run showed: every report as format_json writes it, then the counters.
  std::string trace() const {
    std::string out;
    for (const std::string& r : json) out += r;
    const lc::WatchdogStats w = watchdog.stats();
    const lc::LoopStats l = monitor.stats();
    out += "reports=" + std::to_string(w.reports) + " torn=" + std::to_string(w.torn_snapshots) +
           " estimated=" + std::to_string(w.finals_estimated) + " missed=" + std::to_string(w.samples_missed) +
           " notes_dropped=" + std::to_string(w.notes_dropped) + " dispatches=" + std::to_string(l.dispatches) +
           " blocks=" + std::to_string(l.blocks) + " hangs=" + std::to_string(l.hangs) +
           " stages_dropped=" + std::to_string(l.stages_dropped) + "\n";
    return out;
  }

  tick_t base;
  sim::Machine machine;
  sim::Thread thread;
  lc::Monitor monitor;
  lc::StaticWatchdog<1, 64> watchdog;
  std::vector<lc::BlockRecord> records;
  std::vector<std::string> json;
};

void collect(void* context, const lc::BlockRecord& record) {
  auto* rig = static_cast<Rig*>(context);
  rig->records.push_back(record);
  char buffer[8192];
  const lc::FormatResult f = lc::format_json(record, buffer, sizeof buffer);
  EXPECT_FALSE(f.truncated);
  rig->json.emplace_back(buffer, f.length);
}

// ---- The hooks ------------------------------------------------------------------------------

/// What the hooks do. One test at a time (GoogleTest runs them one after another).
struct Hooks {
  Rig* rig = nullptr;
  // The watchdog preempts the loop: while `updating`, each store into the monitor gets the next
  // index; after store `stop_after` the watchdog polls at `poll_at`.
  bool updating = false;
  int stores = 0;
  int stop_after = -1;
  tick_t poll_at = 0;
  tick_t poll_again_at = 0;  // nonzero: a second poll there, before the loop resumes
  int polls_inside = 0;
  std::vector<const void*> words;  // the words stored, in order
  // The loop preempts the watchdog: while `polling`, after each acquire load of `sequence`
  // (the first read of an attempt) the loop moves, `moves` times, `move_at` apart.
  bool polling = false;
  const void* sequence = nullptr;
  int moves = 0;
  int moved = 0;
  int sequence_reads = 0;
  tick_t move_at = 0;
  // Inside the reader (or the loop) the hook runs: its own stores and loads are not counted.
  bool inside = false;
  // first_word_read(): the first word loaded.
  bool probing = false;
  const void* first_load = nullptr;
};
Hooks g_hooks;

}  // namespace

namespace loopcanary::detail {

void test_after_store(const void* word) noexcept {
  Hooks& h = g_hooks;
  if (!h.updating || h.inside || h.rig == nullptr || !h.rig->owns(word)) return;
  const int index = h.stores++;
  h.words.push_back(word);
  if (index != h.stop_after) return;
  h.inside = true;  // an interrupt: the loop stands still until it returns
  h.rig->poll(h.poll_at);
  ++h.polls_inside;
  if (h.poll_again_at != 0) {
    h.rig->poll(h.poll_again_at);
    ++h.polls_inside;
  }
  h.inside = false;
}

void test_after_load(const void* word) noexcept {
  Hooks& h = g_hooks;
  if (h.probing && h.first_load == nullptr) h.first_load = word;
  if (!h.polling || h.inside || word != h.sequence) return;
  ++h.sequence_reads;
  // Every read of the sequence word in this poll's stamp attempts is an acquire load; the
  // attempt's second read is relaxed and comes here too: move only on odd reads (the first).
  if (h.sequence_reads % 2 == 0 || h.moved == h.moves) return;
  h.inside = true;  // the loop runs: a dispatch begins or ends between the watchdog's reads
  lc::Monitor& m = h.rig->monitor;
  const tick_t now = h.rig->at(h.move_at);
  if (h.moved % 2 == 0) {
    m.begin_at(kSecond, now);
  } else {
    m.end_at(now);
  }
  ++h.moved;
  h.inside = false;
}

}  // namespace loopcanary::detail

namespace {

/// The address of the first word `read` loads: the sequence word of the stamps, for
/// Monitor::snapshot.
const void* first_word_read(Rig& rig, const std::function<void()>& read) {
  g_hooks = Hooks{};
  g_hooks.rig = &rig;
  g_hooks.probing = true;
  read();
  const void* word = g_hooks.first_load;
  g_hooks = Hooks{};
  return word;
}

/// A loop update under test and where a reader may see it: `splits[i]` runs the update with a
/// poll at time `inside` at its i-th point of publication (0: before the update, last: after it;
/// next_at also between its end and its begin), in the order the loop passes them.
struct Scenario {
  const char* name;
  std::function<void(Rig&)> setup;
  std::function<void(Rig&)> update;
  std::vector<std::function<void(Rig&)>> splits;
  tick_t inside;                            // time of the poll inside the update
  std::function<void(Rig&)> after;          // the polls (and loop calls) after the update
  std::function<void(const Rig&)> check;    // what the run with the poll after the update reports
  int min_stores;                           // the update stores at least this many words
};

/// The usual splits: the poll before the update, or after it.
std::vector<std::function<void(Rig&)>> before_or_after(std::function<void(Rig&)> update, tick_t inside) {
  return {[update, inside](Rig& r) {
            r.poll(inside);
            update(r);
          },
          [update, inside](Rig& r) {
            update(r);
            r.poll(inside);
          }};
}

/// The sequential run `split` (a reference), its trace.
std::string reference(tick_t base, const Scenario& s, const std::function<void(Rig&)>& split,
                      std::vector<lc::BlockRecord>* records = nullptr) {
  Rig rig(base);
  s.setup(rig);
  split(rig);
  s.after(rig);
  if (records != nullptr) *records = rig.records;
  return rig.trace();
}

/// The offset of `word` (one of the monitor's) in `rig`'s Monitor: the same word in every rig.
std::size_t offset_in_monitor(const Rig& rig, const void* word) {
  return static_cast<std::size_t>(static_cast<const unsigned char*>(word) -
                                  reinterpret_cast<const unsigned char*>(&rig.monitor));
}

/// The run with the loop stopped after its store `stop_after` (-1: none) and a poll there (and
/// a second one at `poll_again_at`, when nonzero).
struct Stopped {
  std::string trace;
  int stores;
  int polls_inside;
  std::uint32_t torn;
  std::vector<std::size_t> offsets;  // the word of each store, as its offset in the Monitor
  std::vector<lc::BlockRecord> records;
  std::uint32_t finals_estimated;
};
Stopped stopped_run(tick_t base, const Scenario& s, int stop_after, tick_t poll_again_at = 0) {
  Rig rig(base);
  s.setup(rig);
  g_hooks = Hooks{};
  g_hooks.rig = &rig;
  g_hooks.stop_after = stop_after;
  g_hooks.poll_at = s.inside;
  g_hooks.poll_again_at = poll_again_at;
  g_hooks.words.reserve(256);
  g_hooks.updating = true;
  s.update(rig);
  g_hooks.updating = false;
  Stopped out{{}, g_hooks.stores, g_hooks.polls_inside, rig.watchdog.stats().torn_snapshots, {}, {}, 0};
  for (const void* word : g_hooks.words) out.offsets.push_back(offset_in_monitor(rig, word));
  g_hooks = Hooks{};
  s.after(rig);
  out.trace = rig.trace();
  out.records = rig.records;
  out.finals_estimated = rig.watchdog.stats().finals_estimated;
  return out;
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> list;
  // Before each: one short dispatch long ago, seen by a poll.
  const auto long_ago = [](Rig& r) {
    r.monitor.begin_at(kFirst, r.at(kLongAgo));
    r.monitor.end_at(r.at(kLongAgo + 10));
    r.poll(kLongAgo + 20);
  };
  // A dispatch of kFirst from kT, armed (sampled) by a poll at kT + 300.
  const auto running = [long_ago](Rig& r) {
    long_ago(r);
    r.monitor.begin_at(kFirst, r.at(kT));
    r.poll(kT + 300);
  };
  // Ends whatever runs at kT + 9000 and polls after it.
  const auto close = [](Rig& r) {
    lc::StampSnapshot snap;
    if (r.monitor.snapshot(snap) && snap.in_dispatch()) r.monitor.end_at(r.at(kT + 9'000));
    r.poll(kT + 9'100);
    r.poll(kT + 9'200);
  };

  {  // begin_at: idle -> running. A poll inside sees nothing or the new dispatch, never the old begin.
    Scenario s;
    s.name = "begin_at";
    s.setup = long_ago;
    s.update = [](Rig& r) { r.monitor.begin_at(kFirst, r.at(kT)); };
    s.inside = kT + 1'500;
    s.splits = before_or_after(s.update, s.inside);
    s.after = [close](Rig& r) {
      r.poll(kT + 1'600);
      r.poll(kT + 6'000);  // a hang, by now
      close(r);
    };
    s.check = [](const Rig& r) {
      ASSERT_EQ(r.records.size(), 3u);
      EXPECT_EQ(r.records[0].phase, lc::Phase::in_progress);
      EXPECT_EQ(r.records[0].start, r.at(kT));
      EXPECT_EQ(r.records[0].duration_ticks, 1'500u);
      EXPECT_EQ(r.records[1].phase, lc::Phase::hang);
      EXPECT_EQ(r.records[2].phase, lc::Phase::final);
      EXPECT_EQ(r.records[2].duration_ticks, 9'000u);
    };
    s.min_stores = 3;  // begin, event, sequence
    list.push_back(s);
  }
  {  // end_at within the threshold: a poll inside sees the dispatch running past the threshold
     // (reported in progress, later an estimated end) or ended (nothing).
    Scenario s;
    s.name = "end_at_within_threshold";
    s.setup = running;
    s.update = [](Rig& r) { r.monitor.end_at(r.at(kT + 900)); };
    s.inside = kT + 1'500;
    s.splits = before_or_after(s.update, s.inside);
    s.after = close;
    s.check = [](const Rig& r) { EXPECT_TRUE(r.records.empty()); };
    s.min_stores = 3;  // busy time, maximum or histogram, sequence
    list.push_back(s);
  }
  {  // end_at over the threshold: statistics, the block note, then the end.
    Scenario s;
    s.name = "end_at_over_threshold";
    s.setup = [running](Rig& r) {
      running(r);
      r.poll(kT + 1'200);  // in progress
    };
    s.update = [](Rig& r) { r.monitor.end_at(r.at(kT + 1'300)); };
    s.inside = kT + 1'400;
    s.splits = before_or_after(s.update, s.inside);
    s.after = close;
    s.check = [](const Rig& r) {
      ASSERT_EQ(r.records.size(), 2u);
      EXPECT_EQ(r.records[1].phase, lc::Phase::final);
      EXPECT_EQ(r.records[1].flags, 0u);
      EXPECT_EQ(r.records[1].start, r.at(kT));
      EXPECT_EQ(r.records[1].end, r.at(kT + 1'300));
      EXPECT_EQ(r.records[1].duration_ticks, 1'300u);
    };
    s.min_stores = 4;  // statistics, blocks, the note ring's index, sequence
    list.push_back(s);
  }
  {  // next_at within the threshold: the end (sequence even), then the next begin.
    Scenario s;
    s.name = "next_at_within_threshold";
    s.setup = running;
    s.update = [](Rig& r) { r.monitor.next_at(kSecond, r.at(kT + 900)); };
    s.inside = kT + 1'500;
    s.splits = before_or_after(s.update, s.inside);
    s.splits.insert(s.splits.begin() + 1, [](Rig& r) {
      r.monitor.end_at(r.at(kT + 900));
      r.poll(kT + 1'500);
      r.monitor.begin_at(kSecond, r.at(kT + 900));
    });
    s.after = [close](Rig& r) {
      r.poll(kT + 2'000);  // the second dispatch in progress: 1100 us
      r.monitor.end_at(r.at(kT + 2'100));
      r.poll(kT + 2'200);
      close(r);
    };
    s.check = [](const Rig& r) {
      ASSERT_EQ(r.records.size(), 2u);
      EXPECT_EQ(r.records[0].event, &kSecond);
      EXPECT_EQ(r.records[0].phase, lc::Phase::in_progress);
      EXPECT_EQ(r.records[0].start, r.at(kT + 900));
      EXPECT_EQ(r.records[0].duration_ticks, 1'100u);
      EXPECT_EQ(r.records[1].phase, lc::Phase::final);
      EXPECT_EQ(r.records[1].duration_ticks, 1'200u);
    };
    s.min_stores = 6;
    list.push_back(s);
  }
  {  // next_at after a block: the block's note and end, then the next begin.
    Scenario s;
    s.name = "next_at_after_a_block";
    s.setup = running;
    s.update = [](Rig& r) { r.monitor.next_at(kSecond, r.at(kT + 1'300)); };
    s.inside = kT + 1'700;  // the next dispatch armed (400 us), the one before it a block
    s.splits = before_or_after(s.update, s.inside);
    s.splits.insert(s.splits.begin() + 1, [](Rig& r) {
      r.monitor.end_at(r.at(kT + 1'300));
      r.poll(kT + 1'700);
      r.monitor.begin_at(kSecond, r.at(kT + 1'300));
    });
    s.after = [close](Rig& r) {
      r.poll(kT + 1'800);
      close(r);
    };
    s.check = [](const Rig& r) {
      ASSERT_GE(r.records.size(), 2u);
      EXPECT_EQ(r.records[0].event, &kFirst);
      EXPECT_EQ(r.records[0].phase, lc::Phase::final);
      EXPECT_EQ(r.records[0].duration_ticks, 1'300u);
      EXPECT_EQ(r.records[1].event, &kSecond);
      EXPECT_EQ(r.records[1].start, r.at(kT + 1'300));
    };
    s.min_stores = 6;
    list.push_back(s);
  }
  {  // push_scope: a sample inside shows the stack without the new name or with it.
    Scenario s;
    s.name = "push_scope";
    s.setup = [running](Rig& r) {
      running(r);
      r.monitor.push_scope("outer");
      r.poll(kT + 400);
    };
    s.update = [](Rig& r) { r.monitor.push_scope("inner"); };
    s.inside = kT + 500;
    s.splits = before_or_after(s.update, s.inside);
    s.after = [close](Rig& r) {
      r.poll(kT + 600);
      r.poll(kT + 1'100);
      r.monitor.pop_scope();
      r.monitor.pop_scope();
      close(r);
    };
    s.check = [](const Rig& r) {
      ASSERT_EQ(r.records.size(), 2u);
      const lc::BlockRecord& f = r.records[1];
      ASSERT_GE(f.sample_count, 4u);
      const lc::Sample& inside = f.samples[2];  // samples at 300, 400, 500, 600, ...
      ASSERT_EQ(inside.scope_count, 2u);
      EXPECT_STREQ(reinterpret_cast<const char*>(inside.frames[0]), "inner");
      EXPECT_STREQ(reinterpret_cast<const char*>(inside.frames[1]), "outer");
    };
    s.min_stores = 2;  // the name, the scope word
    list.push_back(s);
  }
  {  // pop_scope
    Scenario s;
    s.name = "pop_scope";
    s.setup = [running](Rig& r) {
      running(r);
      r.monitor.push_scope("outer");
      r.monitor.push_scope("inner");
      r.poll(kT + 400);
    };
    s.update = [](Rig& r) { r.monitor.pop_scope(); };
    s.inside = kT + 500;
    s.splits = before_or_after(s.update, s.inside);
    s.after = [close](Rig& r) {
      r.poll(kT + 600);
      r.monitor.pop_scope();
      close(r);
    };
    s.check = [](const Rig& r) {
      ASSERT_EQ(r.records.size(), 1u);  // final
      const lc::Sample& inside = r.records[0].samples[2];  // samples at 300, 400, 500, ...
      ASSERT_EQ(inside.scope_count, 1u);
      EXPECT_STREQ(reinterpret_cast<const char*>(inside.frames[0]), "outer");
    };
    s.min_stores = 1;
    list.push_back(s);
  }
  {  // A dispatch's first stage mark, over the marks an earlier dispatch left in the same slots.
    Scenario s;
    s.name = "first_stage_mark";
    s.setup = [](Rig& r) {
      r.monitor.begin_at(kFirst, r.at(kLongAgo));
      r.monitor.stage_at("old_a", r.at(kLongAgo + 1));
      r.monitor.stage_at("old_b", r.at(kLongAgo + 2));
      r.monitor.end_at(r.at(kLongAgo + 10));
      r.poll(kLongAgo + 20);
      r.monitor.begin_at(kFirst, r.at(kT));
      r.poll(kT + 300);
    };
    s.update = [](Rig& r) { r.monitor.stage_at("input", r.at(kT + 350)); };
    s.inside = kT + 1'100;  // reported in progress, with the marks read then
    s.splits = before_or_after(s.update, s.inside);
    s.after = close;
    s.check = [](const Rig& r) {
      ASSERT_EQ(r.records.size(), 2u);
      ASSERT_EQ(r.records[0].stage_count, 1u);
      EXPECT_STREQ(r.records[0].stages[0].name, "input");
      EXPECT_EQ(r.records[0].stages[0].ticks, 750u);
    };
    s.min_stores = 4;  // the word, the name, the start, the word
    list.push_back(s);
  }
  {  // A later stage mark of the same dispatch.
    Scenario s;
    s.name = "second_stage_mark";
    s.setup = [running](Rig& r) {
      running(r);
      r.monitor.stage_at("input", r.at(kT + 350));
    };
    s.update = [](Rig& r) { r.monitor.stage_at("compute", r.at(kT + 500)); };
    s.inside = kT + 1'100;
    s.splits = before_or_after(s.update, s.inside);
    s.after = close;
    s.check = [](const Rig& r) {
      ASSERT_EQ(r.records.size(), 2u);
      ASSERT_EQ(r.records[0].stage_count, 2u);
      EXPECT_STREQ(r.records[0].stages[1].name, "compute");
      EXPECT_EQ(r.records[0].stages[0].ticks, 150u);
    };
    s.min_stores = 3;
    list.push_back(s);
  }
  return list;
}

class Preempted : public testing::TestWithParam<tick_t> {};

TEST_P(Preempted, AWatchdogInsideEachUpdateSeesItWholeOrNotAtAllAndNeverTears) {
  const tick_t base = GetParam();
  for (const Scenario& s : scenarios()) {
    SCOPED_TRACE(s.name);
    std::vector<std::string> refs;
    for (const auto& split : s.splits) refs.push_back(reference(base, s, split));
    for (std::size_t i = 0; i + 1 < refs.size(); ++i) {
      ASSERT_NE(refs[i], refs[i + 1]) << "a poll at split " << i << " and " << i + 1 << " report the same: the poll inside would prove nothing";
    }
    {
      SCOPED_TRACE("the sequential run with the poll after the update");
      std::vector<lc::BlockRecord> records;
      reference(base, s, s.splits.back(), &records);
      Rig shown(base);
      shown.records = records;
      s.check(shown);
    }
    for (const std::string& r : refs) EXPECT_NE(r.find(" torn=0 "), std::string::npos) << r;

    const Stopped counted = stopped_run(base, s, -1);  // no poll inside: how many stores
    RecordProperty(std::string(s.name) + "_stores", counted.stores);
    ASSERT_GE(counted.stores, s.min_stores) << "the hook sees the update's stores";
    std::size_t seen = 0;  // the split the last stop point matched
    for (int k = 0; k < counted.stores; ++k) {
      SCOPED_TRACE("stopped after store " + std::to_string(k) + " of " + std::to_string(counted.stores));
      const Stopped run = stopped_run(base, s, k);
      ASSERT_EQ(run.polls_inside, 1);
      EXPECT_EQ(run.torn, 0u) << "a poll that preempts the loop reads it at the first attempt";
      std::size_t match = refs.size();
      for (std::size_t i = seen; i < refs.size() && match == refs.size(); ++i) {
        if (run.trace == refs[i]) match = i;
      }
      ASSERT_LT(match, refs.size()) << "the poll inside saw a state no sequential run shows, or went back:\n"
                                    << run.trace << "\nexpected one of (from split " << seen << "):\n"
                                    << refs[seen];
      seen = match;
    }
    EXPECT_EQ(seen, refs.size() - 1) << "after the update's last store a poll sees it whole";
  }
}

// Two polls while the loop stands between queueing a block's note and publishing its end (two
// timer interrupts, or one after a higher-priority task). The watch is still on the dispatch
// before, which ran exactly the threshold but was seen past it: reported in progress, it ended
// without a note. The first poll reports the block from its note (unwatched) and closes the
// earlier dispatch at an estimated end; neither poll starts watching the block, which still
// shows running, so it gets no in-progress report and no second final record.
TEST_P(Preempted, TwoPollsBetweenABlocksNoteAndItsEndNeverWatchTheBlock) {
  const tick_t base = GetParam();
  Scenario s;
  s.name = "two_polls_between_a_note_and_its_end";
  s.setup = [](Rig& r) {
    r.monitor.begin_at(kFirst, r.at(kT));  // dispatch 1
    r.poll(kT + 300);                        // armed
    r.poll(kT + 1'050);                      // in progress: the loop read its end clock at kT + 1000
    r.monitor.end_at(r.at(kT + 1'000));      // exactly the threshold: no note
    r.monitor.begin_at(kSecond, r.at(kT + 1'001));  // dispatch 2, a block, no poll until its end
  };
  s.update = [](Rig& r) { r.monitor.end_at(r.at(kT + 2'501)); };
  s.inside = kT + 2'600;
  s.after = [](Rig& r) {
    r.poll(kT + 4'000);
    r.poll(kT + 4'100);
  };

  // The store of the block's end_at that publishes the end: the last one to the sequence word.
  std::size_t sequence = 0;
  {
    Rig rig(base);
    sequence = offset_in_monitor(rig, first_word_read(rig, [&rig] {
                                   lc::StampSnapshot snap;
                                   rig.monitor.snapshot(snap);
                                 }));
  }
  const Stopped counted = stopped_run(base, s, -1);
  int publish = -1;
  for (std::size_t i = 0; i < counted.offsets.size(); ++i) {
    if (counted.offsets[i] == sequence) publish = static_cast<int>(i);
  }
  ASSERT_GE(publish, 1) << "the note's stores come before the end's";

  // Stopped after the note is queued, before the end is published: two polls there.
  const Stopped run = stopped_run(base, s, publish - 1, kT + 3'600);
  ASSERT_EQ(run.polls_inside, 2);
  ASSERT_EQ(run.records.size(), 3u) << run.trace;
  EXPECT_EQ(run.records[0].phase, lc::Phase::in_progress);
  EXPECT_EQ(run.records[0].dispatch, 1u);
  EXPECT_EQ(run.records[1].phase, lc::Phase::final);
  EXPECT_EQ(run.records[1].dispatch, 2u);
  EXPECT_EQ(run.records[1].flags, lc::kFlagUnwatched);
  EXPECT_EQ(run.records[1].duration_ticks, 1'500u);
  EXPECT_EQ(run.records[2].phase, lc::Phase::final);
  EXPECT_EQ(run.records[2].dispatch, 1u);
  EXPECT_EQ(run.records[2].flags, lc::kFlagEndEstimated);
  EXPECT_EQ(run.finals_estimated, 1u);
}

TEST_P(Preempted, ALoopMovingBetweenTheWatchdogsReadsIsReadAtTheNextAttemptOrCountedAsOneTornSnapshot) {
  const tick_t base = GetParam();
  for (const std::uint8_t attempts : {std::uint8_t{1}, std::uint8_t{2}, std::uint8_t{8}}) {
    int quiet_reads = -1;  // reads of the sequence word by a poll during which the loop stays still
    for (int m = 0; m <= attempts; ++m) {
      SCOPED_TRACE("snapshot_attempts " + std::to_string(attempts) + ", the loop moves in " + std::to_string(m));
      Rig rig(base, attempts);
      rig.monitor.begin_at(kFirst, rig.at(kLongAgo));  // long ago: a torn read would mix its begin in
      rig.monitor.end_at(rig.at(kLongAgo + 10));
      rig.poll(kLongAgo + 20);
      const void* sequence = first_word_read(rig, [&rig] {
        lc::StampSnapshot snap;
        rig.monitor.snapshot(snap);
      });
      ASSERT_NE(sequence, nullptr);
      ASSERT_TRUE(rig.owns(sequence));

      g_hooks = Hooks{};
      g_hooks.rig = &rig;
      g_hooks.polling = true;
      g_hooks.sequence = sequence;
      g_hooks.moves = m;
      g_hooks.move_at = kT;
      rig.poll(kT + 1'500);
      const int reads = g_hooks.sequence_reads;
      const int moved = g_hooks.moved;
      g_hooks = Hooks{};

      ASSERT_EQ(moved, m);
      const bool torn = m == attempts;
      const bool running = m % 2 == 1;  // begin, end, begin, ...
      EXPECT_EQ(rig.watchdog.stats().torn_snapshots, torn ? 1u : 0u);
      if (m == 0) quiet_reads = reads;
      if (torn) {
        EXPECT_EQ(reads, 2 * attempts) << "the poll gave up after its attempts: two reads each";
        EXPECT_TRUE(rig.records.empty()) << "nothing is reported from a torn read";
      } else {
        EXPECT_EQ(reads - quiet_reads, 2 * m) << "one attempt more per move, then the rest of the poll";
        if (running) {
          ASSERT_EQ(rig.records.size(), 1u);
          EXPECT_EQ(rig.records[0].phase, lc::Phase::in_progress);
          EXPECT_EQ(rig.records[0].event, &kSecond);
          EXPECT_EQ(rig.records[0].start, rig.at(kT));
          EXPECT_EQ(rig.records[0].duration_ticks, 1'500u);
        } else {
          EXPECT_TRUE(rig.records.empty());
        }
      }

      // The next poll, the loop still: it reads the loop right.
      const std::size_t before = rig.records.size();
      rig.poll(kT + 1'600);
      EXPECT_EQ(rig.watchdog.stats().torn_snapshots, torn ? 1u : 0u);
      if (running && torn) {
        ASSERT_EQ(rig.records.size(), before + 1);
        EXPECT_EQ(rig.records.back().phase, lc::Phase::in_progress);
        EXPECT_EQ(rig.records.back().start, rig.at(kT));
        EXPECT_EQ(rig.records.back().duration_ticks, 1'600u);
      } else {
        EXPECT_EQ(rig.records.size(), before);
      }
      if (running) rig.monitor.end_at(rig.at(kT + 2'000));
      rig.poll(kT + 2'100);
      for (const lc::BlockRecord& r : rig.records) {
        EXPECT_NE(r.phase, lc::Phase::hang) << "no false hang";
        EXPECT_EQ(r.start, rig.at(kT)) << "no record of a dispatch the loop did not run then";
      }
      if (running) {
        ASSERT_FALSE(rig.records.empty());
        EXPECT_EQ(rig.records.back().phase, lc::Phase::final);
        EXPECT_EQ(rig.records.back().duration_ticks, 2'000u);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Start, Preempted, testing::Values(tick_t{0}, static_cast<tick_t>(tick_t{0} - 21'000u)),
                         [](const testing::TestParamInfo<tick_t>& param) {
                           return param.param == 0 ? std::string("from_zero") : std::string("before_wrap");
                         });

}  // namespace
