// SPDX-License-Identifier: MIT
// Watchdog: reads every registered loop's stamps lock-free at each poll, samples the loops that
// run long, raises block-in-progress and hang reports while they still run, and finalises the
// record when the dispatch ends. Reports go to the interceptor chain and into a fixed ring.
//
//   loop --begin/end--> stamps + notes --poll()--> track (samples, CPU) --> BlockRecord
//        --> interceptors (in order) --> record ring --> pop() by one consumer (a sink)
//
// poll() is meant to be called periodically from one context (a thread, a timer ISR, the sim
// scheduler). It never waits on a loop: a torn snapshot is retried at most
// WatchdogConfig::snapshot_attempts times, then counted and left for the next poll.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "loopcanary/assembler.hpp"
#include "loopcanary/cause.hpp"
#include "loopcanary/config.hpp"
#include "loopcanary/hal.hpp"
#include "loopcanary/monitor.hpp"
#include "loopcanary/record.hpp"
#include "loopcanary/slot.hpp"
#include "loopcanary/spsc_ring.hpp"
#include "loopcanary/status.hpp"

namespace loopcanary {

/// Longest qualifier, in characters.
inline constexpr std::size_t kQualifierMax = 31;

/// Called with each report, from poll(), in watchdog context. Must not call back into the
/// watchdog. `record` is valid for the call only: copy what you keep.
using Interceptor = void (*)(void* context, const BlockRecord& record);

/// Called with each health record, from poll(), in watchdog context. Must not call back into
/// the watchdog. `record` is valid for the call only.
using HealthInterceptor = void (*)(void* context, const HealthRecord& record);

/// Watchdog-wide configuration.
struct WatchdogConfig {
  /// BlockCanary's qualifier (firmware version, build flavour), printed in every report.
  /// Printable ASCII, at most kQualifierMax characters; copied at init.
  const char* qualifier = "";
  /// Frames kept per sample: 1..LOOPCANARY_MAX_FRAMES.
  std::uint8_t max_frames = static_cast<std::uint8_t>(kMaxFrames);
  /// Snapshot attempts per loop and poll before a torn read is counted: 1..8.
  std::uint8_t snapshot_attempts = 2;
  /// Suppress (and count) reports while Hal::debugger_attached says a debugger is attached.
  bool stop_when_debugging = true;
  /// The cause rule's shares (cause.hpp): each 1..1000.
  CauseRule cause;
  /// One health record per loop every this many microseconds (docs/report-format.md, "Health
  /// records"); 0 (default): none. Converted at the loops' tick rate by the first add():
  /// 1 tick .. kMaxIntervalTicks ticks there (health_period_below_one_tick,
  /// health_period_too_long).
  std::uint32_t health_period_us = 0;
};

/// Watchdog counters; any context may read them (each counter is atomic). 32-bit counters wrap.
///
/// Accounting of blocks (docs/reliability.md): after a poll that follows the loops' last
/// dispatch, the loops' LoopStats::blocks add up to the final reports without the
/// end_estimated flag (emitted, or withheld and counted in `suppressed`) plus `notes_dropped`.
/// Final reports flagged end_estimated are counted apart, in `finals_estimated`.
struct WatchdogStats {
  std::uint32_t polls = 0;
  std::uint32_t reports = 0;             ///< reports produced (interceptors called): the last report number
  std::uint32_t records_dropped = 0;     ///< reports the ring could not hold
  std::uint32_t torn_snapshots = 0;      ///< polls that gave up on a loop's stamps
  /// Sample attempts with no usable stack, or whose sample an evidence ring did not keep (all
  /// loops).
  std::uint32_t samples_missed = 0;
  std::uint32_t suppressed = 0;          ///< reports withheld while a debugger was attached
  /// Dispatches seen running while every watch slot was busy with other loops (each counted
  /// once): not sampled until a slot freed; a block among them is still reported at its end.
  /// Always 0 when the watchdog has a watch per loop (the default).
  std::uint32_t watches_busy = 0;
  /// Blocks the loops counted (LoopStats::blocks) whose note never reached the watchdog, as
  /// their note ring was full: the sum of every registered loop's LoopStats::notes_dropped.
  /// Every report carries it as it stood when the report was made (BlockRecord::notes_dropped).
  std::uint32_t notes_dropped = 0;
  /// Final reports flagged end_estimated (among `reports`): a dispatch reported in progress
  /// ended without a note from its loop, so no block is confirmed (it ended within its
  /// threshold by the loop's own end stamp, or its note was dropped and is in notes_dropped).
  std::uint32_t finals_estimated = 0;
  /// Final reports flagged running_at_stop (among `reports`): finish() closed a dispatch that
  /// had been reported in progress and still ran. The loop counted no block for it.
  std::uint32_t finals_at_stop = 0;
  std::uint32_t deadline_misses = 0;     ///< deadline_miss reports produced (among `reports`)
  std::uint32_t health_records = 0;      ///< health records produced: the last health record number
  std::uint32_t health_dropped = 0;      ///< health records the health ring could not hold
};

namespace detail {

struct WatchdogTrack;

/// What take_sample reads a wait into: a WaitReading, or nothing in a build without wait objects
/// (LOOPCANARY_WAIT_OBJECTS 0), whose watchdog then has no wait code and no wait on its stack.
struct NoWaitReading {};
using WaitScratch = std::conditional_t<(kWaitObjects > 0), WaitReading, NoWaitReading>;

/// A watch: what the observer keeps of one long dispatch it is watching (timing and CPU
/// evidence; its samples go to the assembler, assembler.hpp). A StaticWatchdog has one per loop
/// by default, or fewer when RAM is tight (see StaticWatchdog). Free while `owner` is null (as
/// constructed: all zero); start_watching() sets every other field before it is read.
struct Watch {
  const WatchdogTrack* owner;  // the loop whose dispatch this watches; nullptr when unused
  BlockNote dispatch;         // its seq, begin and event; end: time of the last poll that saw it
  Limits limits;
  std::uint64_t elapsed;      // dispatch.begin .. dispatch.end, extended past the tick width
  std::uint64_t next_sample;  // elapsed time of the next sample
  bool armed;
  bool reported_block;
  bool reported_hang;
  // CPU readings: read at the arm point and again at every poll while the dispatch runs, so
  // the window [first, last] lies inside the dispatch.
  TimedCpuReading first;
  TimedCpuReading last;
  std::uint32_t samples_missed;  // sample attempts without a usable stack, or not kept
};

/// What the watchdog keeps per loop. Set by Watchdog::add().
struct WatchdogTrack {
  Monitor* monitor;
  std::uint32_t done_seq;      // last dispatch finalised, never watched again
  std::uint32_t no_watch_seq;  // last dispatch that found every watch busy (counted once)
  Watch* watch;                // on its running dispatch (watch->dispatch.seq); null when none
  // The watch this loop released last: its evidence stays in the slot until the slot is taken
  // again (then its owner or dispatch differs), for a deadline miss it delayed.
  Watch* last_watch;
  std::uint32_t last_watch_seq;
};

/// A loop's health window (only in a watchdog with a health ring): when it started (started:
/// after the loop's first poll) and the loop's counters then.
struct HealthWindow {
  bool started;
  tick_t at;
  std::uint32_t dispatches;
  std::uint32_t blocks;
  std::uint32_t hangs;
  tick_t busy;
  tick_t idle;
};

}  // namespace detail

/// The watchdog logic, capacity-free; instantiate StaticWatchdog<MaxLoops, RecordCapacity, Watches>
/// (its init() hands this logic the storage). Every call below is safe before init(): add()
/// and add_interceptor() refuse, poll() does nothing, pop() finds nothing.
class Watchdog {
 public:
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Starts watching `monitor` (initialised, not watched by any watchdog, stamped at the same
  /// tick rate as the loops already added: poll() takes one `now` for all). Before polling
  /// starts, from the watchdog's context. Errors: not_initialised (watchdog or monitor),
  /// already_registered, tick_rate_mismatch, registry_full. There is no removal: a watched
  /// monitor stays watched for the watchdog's lifetime (give both static storage).
  Status add(Monitor& monitor) noexcept;

  /// Appends an interceptor; interceptors are called in the order added, once per report.
  /// Before polling starts. Errors: not_initialised, interceptor_null, interceptor_chain_full,
  /// interceptor_unused (an EvidenceWatchdog, reached through a Watchdog&: it builds no records).
  Status add_interceptor(Interceptor function, void* context) noexcept;

  /// One watchdog step at `now` (port ticks of the loops' clock). Watchdog context only; must
  /// run more often than half the tick counter's wrap period, and at least once per sample
  /// interval for samples to land on time. Does nothing before a successful init().
  void poll(tick_t now) noexcept;

  /// The last step of a watchdog that stops watching (a process exiting, a test's end): a poll
  /// at `now`, so every dispatch that ended has its final record, then a final record flagged
  /// kFlagRunningAtStop for each dispatch still running that had been reported in progress (a
  /// running dispatch still within its threshold is no block and makes none). A watchdog polled
  /// again afterwards never watches a dispatch closed here again; if its loop's note comes (it
  /// ended over its threshold), that note's final record confirms the block. Watchdog context,
  /// or any context once the watchdog's own has stopped polling; then drain the ring (pop) to
  /// its end. Does nothing before init().
  void finish(tick_t now) noexcept;

  /// Takes the oldest record out of the ring. Exactly one consumer context (which may be the
  /// watchdog's own). False when the ring is empty.
  bool pop(BlockRecord& out) noexcept { return ring_.pop(out); }

  /// Appends a health interceptor, called in the order added, once per health record. Before
  /// polling starts. Errors: not_initialised, interceptor_null, interceptor_chain_full.
  Status add_health_interceptor(HealthInterceptor function, void* context) noexcept;

  /// Takes the oldest health record out of the health ring. Exactly one consumer context. False
  /// when it is empty.
  bool pop_health(HealthRecord& out) noexcept { return health_ring_.pop(out); }

  /// Records waiting in the ring. Any context.
  std::uint32_t pending() const noexcept { return ring_.size(); }

  /// The counters (WatchdogStats). Any context, but not while add() runs: notes_dropped is
  /// read from each added loop's own counter.
  WatchdogStats stats() const noexcept;
  const char* qualifier() const noexcept { return qualifier_; }
  std::size_t loop_count() const noexcept { return loops_; }

 protected:
  using Track = detail::WatchdogTrack;

  /// Where the observer's evidence goes (assembler.hpp), in watchdog context: a watch starts
  /// (its index), a sample of a watch, a report (false: it was lost, counted in
  /// WatchdogStats::records_dropped). A StaticWatchdog hands on kAssembler: the assembler,
  /// the interceptors and the record ring.
  struct EvidenceSink {
    void (*watch_started)(Watchdog& self, std::size_t watch) noexcept;
    /// `stack`: the sample's stack evidence (Hal::capture_words: builds with
    /// LOOPCANARY_STACK_WORDS > 0), null when it has none.
    bool (*sample)(Watchdog& self, std::size_t watch, const Sample& sample,
                   const StackEvidence* stack) noexcept;  // false: not kept
    bool (*report)(Watchdog& self, const Observation& observation) noexcept;
    /// The wait reading of a kept sample of a watch; null: the sink keeps none, and
    /// Hal::read_wait is never called.
    void (*wait)(Watchdog& self, std::size_t watch, const WaitReading& reading) noexcept;
  };
  static void assemble_watch(Watchdog& self, std::size_t watch) noexcept;
  static bool assemble_sample(Watchdog& self, std::size_t watch, const Sample& sample,
                              const StackEvidence* stack) noexcept;
  static bool assemble_report(Watchdog& self, const Observation& observation) noexcept;
  static void assemble_wait(Watchdog& self, std::size_t watch, const WaitReading& reading) noexcept;
  static constexpr EvidenceSink kAssembler{&assemble_watch, &assemble_sample, &assemble_report,
                                           kWaitObjects > 0 ? &assemble_wait : nullptr};

  /// A StaticWatchdog's storage: tracks (one per loop), watches (free: owner null), the
  /// assembler's evidence (one per watch), the record it assembles and record slots. A watchdog
  /// that assembles no record (an EvidenceWatchdog) has no evidence, record or record slots.
  struct Storage {
    Track* tracks = nullptr;
    std::size_t max_loops = 0;
    detail::Watch* watches = nullptr;
    WatchSamples* watch_samples = nullptr;  // null: an evidence watchdog (no records assembled)
    std::size_t max_watches = 0;
    detail::Slot<BlockRecord>* assembled = nullptr;  // the record being assembled
    detail::Slot<BlockRecord>* records = nullptr;
    std::uint32_t record_capacity = 0;  // a power of two >= 2
    detail::Slot<HealthRecord>* health_records = nullptr;  // null: no health records (HealthCapacity 0)
    std::uint32_t health_capacity = 0;  // a power of two >= 2, or 0
    detail::Slot<HealthRecord>* health_scratch = nullptr;  // the health record being built
    detail::HealthWindow* health_windows = nullptr;        // one per loop (max_loops)
  };

  /// A loop's health-record step at each poll. A StaticWatchdog with a health ring hands
  /// &Watchdog::health_step to init(); one without never names it, so it links no health-record
  /// code.
  using HealthStep = void (*)(Watchdog& self, Track& track, tick_t now) noexcept;
  static void health_step(Watchdog& self, Track& track, tick_t now) noexcept;

  // Constexpr and all zero: a static watchdog costs no start-up code and no initialised data.
  constexpr Watchdog() noexcept = default;
  ~Watchdog() = default;

  /// StaticWatchdog::init(), with the storage it owns (bound on success; the same storage
  /// every time).
  Status init(const WatchdogConfig& config, const Hal& hal, const Storage& storage, const EvidenceSink& sink,
              HealthStep health) noexcept;

 private:
  friend void detail::report_deadline_note(Watchdog&, detail::WatchdogTrack&, const BlockNote&, bool) noexcept;

  struct Chained {
    Interceptor function;
    void* context;
  };

  void poll_loop(Track& track, tick_t now, bool suppressed) noexcept;
  bool start_watching(Track& track, const StampSnapshot& snap, tick_t now) noexcept;
  void stop_watching(Track& track) noexcept;
  void step(Track& track, tick_t now, bool suppressed) noexcept;
  void take_sample(Track& track, tick_t now, bool running) noexcept;
  const StackEvidence* capture_words(const Monitor& monitor, const Sample& sample, StackEvidence& out) noexcept;
  void read_cpu(const Track& track, TimedCpuReading& reading) const noexcept;
  bool ran(const Track& track, const TimedCpuReading& before, const TimedCpuReading& after) const noexcept;
  bool read_wait(const Track& track, bool running, WaitReading& out) const noexcept;
  static bool read_wait(const Track&, bool, detail::NoWaitReading&) noexcept { return false; }
  void hand_on(std::size_t watch, const WaitReading& reading) noexcept { sink_.wait(*this, watch, reading); }
  static void hand_on(std::size_t, const detail::NoWaitReading&) noexcept {}
  void report_watched(Track& track, Phase phase, const BlockNote* ended, bool suppressed,
                      std::uint8_t open_flag = kFlagEndEstimated) noexcept;
  void report_unwatched(Track& track, const BlockNote& note, bool suppressed) noexcept;
  void report_deadline_miss(Track& track, const BlockNote& note, bool suppressed) noexcept;
  std::uint32_t notes_dropped() const noexcept;
  Observation& observe(const Track& track, const BlockNote& note, Phase phase) noexcept;
  void add_evidence(Observation& o, const detail::Watch& w) const noexcept;
  void deliver(bool suppressed) noexcept;
  void start_health(Track& track, tick_t now) noexcept;
  void emit_health(Track& track, tick_t now) noexcept;

  // Set by init(), read only once initialised_.
  Track* tracks_ = nullptr;
  std::size_t max_loops_ = 0;
  detail::Watch* watches_ = nullptr;
  WatchSamples* watch_samples_ = nullptr;
  std::size_t max_watches_ = 0;
  EvidenceSink sink_{};
  detail::LateBoundSpscRing<BlockRecord> ring_;
  std::size_t loops_ = 0;
  bool initialised_ = false;
  detail::Slot<WatchdogConfig> config_;
  Hal hal_{};
  char qualifier_[kQualifierMax + 1] = {};
  Chained chain_[kMaxInterceptors] = {};
  std::size_t chain_size_ = 0;
  detail::Slot<Observation> observed_;  // the report being observed (off the caller's stack: it is large)
  detail::Slot<BlockRecord>* assembled_ = nullptr;  // the record being assembled (kAssembler only)
  detail::LateBoundSpscRing<HealthRecord> health_ring_;
  struct HealthChained {
    HealthInterceptor function;
    void* context;
  };
  HealthChained health_chain_[kMaxInterceptors] = {};
  std::size_t health_chain_size_ = 0;
  detail::Slot<HealthRecord>* health_scratch_ = nullptr;
  detail::HealthWindow* health_windows_ = nullptr;
  HealthStep health_step_ = nullptr;  // set by init() when the storage has a health ring
  tick_t health_period_ = 0;  // ticks, set by the first add(); 0: no health records

  std::atomic<std::uint32_t> polls_{0};
  std::atomic<std::uint32_t> reports_{0};
  std::atomic<std::uint32_t> records_dropped_{0};
  std::atomic<std::uint32_t> torn_snapshots_{0};
  std::atomic<std::uint32_t> samples_missed_{0};
  std::atomic<std::uint32_t> suppressed_{0};
  std::atomic<std::uint32_t> watches_busy_{0};
  std::atomic<std::uint32_t> finals_estimated_{0};
  std::atomic<std::uint32_t> finals_at_stop_{0};
  std::atomic<std::uint32_t> deadline_misses_{0};
  std::atomic<std::uint32_t> health_records_{0};
  std::atomic<std::uint32_t> health_dropped_{0};
};

namespace detail {
// The storage of a StaticWatchdog, which its init() binds to the Watchdog logic. Every watch
// starts free (owner null); record slots are not constructed (see slot.hpp).
template <std::size_t MaxLoops, std::size_t HealthCapacity>
struct HealthStorage {
  Slot<HealthRecord> health_records[HealthCapacity];
  Slot<HealthRecord> health_scratch;
  HealthWindow windows[MaxLoops] = {};
  Slot<HealthRecord>* health_ring() noexcept { return health_records; }
  Slot<HealthRecord>* health_building() noexcept { return &health_scratch; }
  HealthWindow* health_windows() noexcept { return windows; }
};
template <std::size_t MaxLoops>
struct HealthStorage<MaxLoops, 0> {  // no health records: no byte
  Slot<HealthRecord>* health_ring() noexcept { return nullptr; }
  Slot<HealthRecord>* health_building() noexcept { return nullptr; }
  HealthWindow* health_windows() noexcept { return nullptr; }
};

template <std::size_t MaxLoops, std::size_t RecordCapacity, std::size_t Watches, std::size_t HealthCapacity>
struct WatchdogStorage : HealthStorage<MaxLoops, HealthCapacity> {
  WatchdogTrack tracks[MaxLoops] = {};
  Watch watches[Watches] = {};
  WatchSamples watch_samples[Watches] = {};
  Slot<BlockRecord> assembled;
  Slot<BlockRecord> records[RecordCapacity];
};
}  // namespace detail

/// A watchdog for up to MaxLoops loops (1..255) whose record ring holds RecordCapacity reports
/// (a power of two >= 2), able to watch (time, sample, report in progress) Watches long
/// dispatches at once (1..MaxLoops, default one per loop), and making health records
/// (WatchdogConfig::health_period_us) into a ring of HealthCapacity (a power of two >= 2), or
/// none with HealthCapacity 0 (the default: no RAM, and no health-record code linked).
///
/// RAM: a watch holds a dispatch's samples and CPU readings (most of a watchdog's size, see
/// docs/benchmarks.md); per loop there is only a small track. Fewer watches than loops suit a
/// single-core MCU, where loops rarely block at the same time: a loop that starts a long
/// dispatch while every watch is busy is counted (WatchdogStats::watches_busy) and sampled once
/// a watch frees; its block is reported when it ends either way.
///
/// Constexpr and all zero until init(): a static StaticWatchdog is in .bss with no start-up code.
template <std::size_t MaxLoops, std::size_t RecordCapacity, std::size_t Watches = MaxLoops,
          std::size_t HealthCapacity = 0>
class StaticWatchdog final
    : private detail::WatchdogStorage<MaxLoops, RecordCapacity, Watches, HealthCapacity>,
      public Watchdog {
  static_assert(MaxLoops >= 1 && MaxLoops <= 255, "StaticWatchdog: MaxLoops must be 1..255");
  static_assert(Watches >= 1 && Watches <= MaxLoops, "StaticWatchdog: Watches must be 1..MaxLoops");
  static_assert(RecordCapacity >= 2 && RecordCapacity <= (std::size_t{1} << 31) &&
                    (RecordCapacity & (RecordCapacity - 1)) == 0,
                "StaticWatchdog: RecordCapacity must be a power of two, 2..2^31");
  static_assert(HealthCapacity == 0 || (HealthCapacity >= 2 && HealthCapacity <= (std::size_t{1} << 31) &&
                                         (HealthCapacity & (HealthCapacity - 1)) == 0),
                "StaticWatchdog: HealthCapacity must be 0 or a power of two, 2..2^31");
  using Own = detail::WatchdogStorage<MaxLoops, RecordCapacity, Watches, HealthCapacity>;

  static HealthStep health_step_if_any() noexcept {
    if constexpr (HealthCapacity != 0) {
      return &StaticWatchdog::health_step;
    } else {
      return nullptr;
    }
  }

 public:
  constexpr StaticWatchdog() noexcept = default;

  /// Validates and applies `config` and the platform services `hal` (copied). Call before
  /// add() and poll(), from the context that will own the watchdog. Returns Status::ok or the
  /// status naming the first invalid field (nothing is changed then).
  Status init(const WatchdogConfig& config, const Hal& hal = Hal{}) noexcept {
    Storage storage;
    storage.tracks = Own::tracks;
    storage.max_loops = MaxLoops;
    storage.watches = Own::watches;
    storage.watch_samples = Own::watch_samples;
    storage.max_watches = Watches;
    storage.assembled = &this->assembled;
    storage.records = Own::records;
    storage.record_capacity = static_cast<std::uint32_t>(RecordCapacity);
    storage.health_records = Own::health_ring();
    storage.health_capacity = static_cast<std::uint32_t>(HealthCapacity);
    storage.health_scratch = Own::health_building();
    storage.health_windows = Own::health_windows();
    return Watchdog::init(config, hal, storage, kAssembler, health_step_if_any());
  }
};

}  // namespace loopcanary
