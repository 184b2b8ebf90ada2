// SPDX-License-Identifier: MIT
#include "loopcanary/watchdog.hpp"

#include <cstring>
#include <new>

namespace loopcanary {

// status.cpp's text of Status::qualifier_too_long names the limit.
static_assert(kQualifierMax == 31, "update the qualifier_too_long text in status.cpp");

namespace {

constexpr std::uint8_t kMaxSnapshotAttempts = 8;

// Signed distance from `from` to `to` in ticks: negative when `to` is earlier. Valid for
// intervals shorter than half the wrap period.
std::int64_t signed_ticks(tick_t from, tick_t to) noexcept {
  const tick_t forward = ticks_between(from, to);
  if (forward <= kMaxIntervalTicks) return static_cast<std::int64_t>(forward);
  return -static_cast<std::int64_t>(ticks_between(to, from));
}

// Still running: the marks of dispatch `seq` so far into `out` (none when every read tore).
template <std::size_t N>
void read_marks(const Monitor& monitor, std::uint32_t seq, std::uint8_t attempts, detail::NoteStages<N>& out) noexcept {
  if constexpr (N > 0) {
    std::size_t count = 0;
    bool read = false;
    for (std::uint8_t attempt = 0; attempt < attempts && !read; ++attempt) {
      read = monitor.stage_snapshot(seq, out.stages, count);
    }
    out.stage_count = static_cast<std::uint8_t>(read ? count : 0u);
  } else {
    static_cast<void>(monitor);
    static_cast<void>(seq);
    static_cast<void>(attempts);
    static_cast<void>(out);
  }
}

// A health window opening at `now` on a loop whose counters are `s`.
detail::HealthWindow window_opened(tick_t now, const LoopStats& s) noexcept {
  return detail::HealthWindow{true, now, s.dispatches, s.blocks, s.hangs, s.busy_ticks, s.idle_ticks};
}

}  // namespace

Status Watchdog::init(const WatchdogConfig& config, const Hal& hal, const Storage& storage, const EvidenceSink& sink,
                      HealthStep health) noexcept {
  if (config.qualifier == nullptr) return Status::qualifier_missing;
  const std::size_t length = std::strlen(config.qualifier);
  if (length > kQualifierMax) return Status::qualifier_too_long;
  for (std::size_t i = 0; i < length; ++i) {
    const char c = config.qualifier[i];
    if (c < 0x20 || c > 0x7e) return Status::qualifier_invalid;
  }
  if (config.max_frames == 0 || config.max_frames > kMaxFrames) return Status::max_frames_out_of_range;
  if (config.snapshot_attempts == 0 || config.snapshot_attempts > kMaxSnapshotAttempts) {
    return Status::snapshot_attempts_out_of_range;
  }
  if (config.cause.running_permille == 0 || config.cause.running_permille > 1000) {
    return Status::running_permille_out_of_range;
  }
  if (config.cause.starved_busy_permille == 0 || config.cause.starved_busy_permille > 1000) {
    return Status::starved_permille_out_of_range;
  }
  if (config.cause.starved_wait_permille == 0 || config.cause.starved_wait_permille > 1000) {
    return Status::starved_wait_permille_out_of_range;
  }
  if (config.health_period_us != 0 && health == nullptr) return Status::health_ring_missing;
  config_.value = config;
  std::memcpy(qualifier_, config.qualifier, length + 1);
  config_.value.qualifier = qualifier_;
  hal_ = hal;
  tracks_ = storage.tracks;
  max_loops_ = storage.max_loops;
  watches_ = storage.watches;
  watch_samples_ = storage.watch_samples;
  assembled_ = storage.assembled;
  max_watches_ = storage.max_watches;
  sink_ = sink;
  ring_.bind(storage.records, storage.record_capacity);
  if (health != nullptr) health_ring_.bind(storage.health_records, storage.health_capacity);
  health_scratch_ = storage.health_scratch;
  health_windows_ = storage.health_windows;
  health_step_ = health;
  initialised_ = true;
  return Status::ok;
}

Status Watchdog::add(Monitor& monitor) noexcept {
  if (!initialised_ || !monitor.initialised()) return Status::not_initialised;
  if (monitor.watchdog_ != nullptr) return Status::already_registered;
  if (loops_ != 0 && monitor.tick_hz() != tracks_[0].monitor->tick_hz()) return Status::tick_rate_mismatch;
  if (loops_ == max_loops_) return Status::registry_full;
  if (loops_ == 0) {  // the loops' tick rate is known now: the health period in ticks
    const std::uint32_t us = config_.value.health_period_us;
    const std::uint64_t period = ticks_from_us(us, monitor.tick_hz());
    if (us != 0 && below_one_tick(us, monitor.tick_hz())) return Status::health_period_below_one_tick;
    if (period > kMaxIntervalTicks) return Status::health_period_too_long;
    health_period_ = static_cast<tick_t>(period);
  }
  Track& track = tracks_[loops_++];
  track.monitor = &monitor;
  track.done_seq = 0;
  track.no_watch_seq = 0;
  track.watch = nullptr;
  track.last_watch = nullptr;
  track.last_watch_seq = 0;
  if (health_windows_ != nullptr) health_windows_[&track - tracks_].started = false;
  monitor.watchdog_ = this;
  return Status::ok;
}

Status Watchdog::add_interceptor(Interceptor function, void* context) noexcept {
  if (!initialised_) return Status::not_initialised;
  if (function == nullptr) return Status::interceptor_null;
  if (sink_.report != &assemble_report) return Status::interceptor_unused;  // an evidence watchdog
  if (chain_size_ == kMaxInterceptors) return Status::interceptor_chain_full;
  chain_[chain_size_++] = Chained{function, context};
  return Status::ok;
}

Status Watchdog::add_health_interceptor(HealthInterceptor function, void* context) noexcept {
  if (!initialised_) return Status::not_initialised;
  if (function == nullptr) return Status::interceptor_null;
  if (health_chain_size_ == kMaxInterceptors) return Status::interceptor_chain_full;
  health_chain_[health_chain_size_++] = HealthChained{function, context};
  return Status::ok;
}

WatchdogStats Watchdog::stats() const noexcept {
  WatchdogStats s;
  s.polls = detail::load_relaxed(polls_);
  s.reports = detail::load_relaxed(reports_);
  s.records_dropped = detail::load_relaxed(records_dropped_);
  s.torn_snapshots = detail::load_relaxed(torn_snapshots_);
  s.samples_missed = detail::load_relaxed(samples_missed_);
  s.watches_busy = detail::load_relaxed(watches_busy_);
  s.suppressed = detail::load_relaxed(suppressed_);
  s.notes_dropped = notes_dropped();
  s.finals_estimated = detail::load_relaxed(finals_estimated_);
  s.finals_at_stop = detail::load_relaxed(finals_at_stop_);
  s.deadline_misses = detail::load_relaxed(deadline_misses_);
  s.health_records = detail::load_relaxed(health_records_);
  s.health_dropped = detail::load_relaxed(health_dropped_);
  return s;
}

// The loops keep the count (each its own LoopStats::notes_dropped): one place per fact.
std::uint32_t Watchdog::notes_dropped() const noexcept {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < loops_; ++i) sum += detail::load_relaxed(tracks_[i].monitor->notes_dropped_);
  return sum;
}

void Watchdog::poll(tick_t now) noexcept {
  if (!initialised_) return;
  detail::bump(polls_);
  const bool suppressed = config_.value.stop_when_debugging && hal_.debugger_attached != nullptr &&
                          hal_.debugger_attached(hal_.context);
  for (std::size_t i = 0; i < loops_; ++i) {
    poll_loop(tracks_[i], now, suppressed);
    if (health_period_ != 0) health_step_(*this, tracks_[i], now);  // a period needs the step
  }
}

void Watchdog::finish(tick_t now) noexcept {
  if (!initialised_) return;
  poll(now);
  const bool suppressed = config_.value.stop_when_debugging && hal_.debugger_attached != nullptr &&
                          hal_.debugger_attached(hal_.context);
  for (std::size_t i = 0; i < loops_; ++i) {
    Track& track = tracks_[i];
    if (track.watch == nullptr) continue;
    const std::uint32_t seq = track.watch->dispatch.seq;
    if (track.watch->reported_block) {
      report_watched(track, Phase::final, nullptr, suppressed, kFlagRunningAtStop);
    } else {
      stop_watching(track);  // within its threshold so far: no block
    }
    track.done_seq = seq;  // it still runs: never watch it again
  }
}

void Watchdog::health_step(Watchdog& self, Track& track, tick_t now) noexcept {
  const detail::HealthWindow& window = self.health_windows_[&track - self.tracks_];
  const tick_t since = ticks_between(window.at, now);
  if (!window.started || since > kMaxIntervalTicks) {
    self.start_health(track, now);  // the first poll, or the clock stepped back: a new window
  } else if (since >= self.health_period_) {
    self.emit_health(track, now);
  }
}

// A health window starts at `now`: the loop's counters and its event types' windows.
void Watchdog::start_health(Track& track, tick_t now) noexcept {
  const Monitor& monitor = *track.monitor;
  const LoopStats s = monitor.stats();
  health_windows_[&track - tracks_] = window_opened(now, s);
  std::size_t count = 0;
  const Event* const* events = monitor.health_events(count);
  for (std::size_t i = 0; i < count; ++i) static_cast<void>(events[i]->health->take_window());
}

// The health record of the window ending `now`, to the health interceptors and the health ring;
// the next window starts here.
void Watchdog::emit_health(Track& track, tick_t now) noexcept {
  const Monitor& monitor = *track.monitor;
  const LoopStats s = monitor.stats();
  // Placement new, as for block records: no temporary on a timer ISR's stack.
  HealthRecord& r = *::new (static_cast<void*>(&health_scratch_->value)) HealthRecord{};
  r.qualifier = qualifier_;
  r.loop = monitor.name();
  r.loop_index = static_cast<std::uint8_t>(&track - tracks_);
  r.tick_hz = monitor.tick_hz();
  detail::HealthWindow& window = health_windows_[&track - tracks_];
  r.start = window.at;
  r.end = now;
  r.dispatches = dispatches_between(window.dispatches, s.dispatches);
  r.busy_ticks = ticks_between(window.busy, s.busy_ticks);
  r.idle_ticks = ticks_between(window.idle, s.idle_ticks);
  r.has_idle = s.idle_ticks != 0;
  r.blocks = s.blocks - window.blocks;
  r.hangs = s.hangs - window.hangs;
  r.max_duration = s.max_duration;
  std::memcpy(r.histogram, s.histogram, sizeof r.histogram);
  if constexpr (kMemoryContext) {
    if (hal_.read_memory != nullptr) hal_.read_memory(hal_.context, monitor, &r.memory);
  }
  std::size_t count = 0;
  const Event* const* events = monitor.health_events(count);
  for (std::size_t i = 0; i < count && i < kHealthEvents; ++i) {
    const EventStats w = events[i]->health->take_window();
    EventHealthWindow& e = r.events[i];
    e.event = events[i];
    e.dispatches = w.dispatches;
    e.deadline_misses = w.deadline_misses;
    e.missed_periods = w.missed_periods;
    e.posted_ahead = w.posted_ahead;
    e.p50 = latency_percentile(w, 500);
    e.p95 = latency_percentile(w, 950);
    e.p99 = latency_percentile(w, 990);
    e.max_latency = w.max_latency;
    e.period_ticks = w.period_ticks;
    e.deadline_ticks = w.deadline_ticks;
    r.event_count = static_cast<std::uint8_t>(i + 1);
  }
  // Only this context writes the counter: the record's number is its new value.
  r.number = detail::load_relaxed(health_records_) + 1u;
  detail::store_relaxed(health_records_, r.number);
  r.health_dropped = detail::load_relaxed(health_dropped_);
  for (std::size_t i = 0; i < health_chain_size_; ++i) health_chain_[i].function(health_chain_[i].context, r);
  if (!health_ring_.push(r)) detail::bump(health_dropped_);

  window = window_opened(now, s);
}

// Order matters: the stamps are read before the notes, so a dispatch the snapshot shows ended
// has its note (queued before its end stamp) visible to the drain that follows.
void Watchdog::poll_loop(Track& track, tick_t now, bool suppressed) noexcept {
  Monitor& monitor = *track.monitor;
  StampSnapshot snap;
  bool consistent = false;
  for (std::uint8_t attempt = 0; attempt < config_.value.snapshot_attempts && !consistent; ++attempt) {
    consistent = monitor.snapshot(snap);
  }
  if (!consistent) detail::bump(torn_snapshots_);

  if (track.watch != nullptr) {
    // Elapsed time never goes back: a `now` before the previous poll's (a clock that stepped
    // back) adds nothing, and the next poll counts from it.
    detail::Watch& w = *track.watch;
    const std::int64_t step = signed_ticks(w.dispatch.end, now);
    if (step > 0) w.elapsed += static_cast<std::uint64_t>(step);
    w.dispatch.end = now;
  }

  // A note for the snapshot's own dispatch means it ended after the snapshot was taken: the
  // snapshot is stale and must not start (or continue) watching it.
  bool snap_ended = false;
  BlockNote note;
  while (monitor.notes_.pop(note)) {
    if ((note.seq & 1u) == 0) {  // a deadline miss: about a dispatch beginning, it may still run
      detail::load_relaxed(monitor.deadline_handler_)(*this, track, note, suppressed);
      continue;
    }
    if (consistent && note.seq == snap.seq) snap_ended = true;
    if (track.watch != nullptr && note.seq == track.watch->dispatch.seq) {
      report_watched(track, Phase::final, &note, suppressed);
    } else {
      report_unwatched(track, note, suppressed);
    }
  }
  if (!consistent) return;

  if (track.watch != nullptr && snap.seq != track.watch->dispatch.seq) {
    // The watched dispatch ended without a note: within its threshold by the loop's end stamp
    // (not a block, even if this watchdog saw it run past the threshold: the loop read its
    // end clock before a poll and published the end after it), or its note was dropped
    // (counted by the loop). Only a dispatch already reported is finalised, as an estimate.
    if (track.watch->reported_block) {
      report_watched(track, Phase::final, nullptr, suppressed);  // at an estimated end
    } else {
      stop_watching(track);  // not a block (done_seq stays: it may name a later, ended dispatch)
    }
  }
  if (!snap.in_dispatch() || snap_ended || snap.seq == track.done_seq) return;
  if (track.watch == nullptr && !start_watching(track, snap, now)) return;
  step(track, now, suppressed);
}

bool Watchdog::start_watching(Track& track, const StampSnapshot& snap, tick_t now) noexcept {
  detail::Watch* spare = nullptr;
  for (std::size_t i = 0; i < max_watches_ && spare == nullptr; ++i) {
    if (watches_[i].owner == nullptr) spare = &watches_[i];
  }
  if (spare == nullptr) {
    // Every watch is busy with another loop's dispatch: this one goes unsampled until a watch
    // is released (its block is still reported when it ends). Counted once per dispatch.
    if (track.no_watch_seq != snap.seq) {
      track.no_watch_seq = snap.seq;
      detail::bump(watches_busy_);
    }
    return false;
  }
  detail::Watch& w = *spare;
  w.owner = &track;
  track.watch = &w;
  w.limits = track.monitor->limits_for(*snap.event);
  // A begin stamped after `now` (the loop read its clock later than the watchdog did) counts
  // from the begin itself.
  const std::int64_t elapsed = signed_ticks(snap.begin, now);
  w.elapsed = elapsed > 0 ? static_cast<std::uint64_t>(elapsed) : 0u;
  w.dispatch = BlockNote{{}, snap.seq, snap.begin, elapsed > 0 ? now : snap.begin, snap.event};
  w.next_sample = 0;
  w.armed = false;
  w.reported_block = false;
  w.reported_hang = false;
  w.samples_missed = 0;
  sink_.watch_started(*this, static_cast<std::size_t>(spare - watches_));
  return true;
}

void Watchdog::stop_watching(Track& track) noexcept {
  track.last_watch = track.watch;  // its evidence stays until the slot is taken again
  track.last_watch_seq = track.watch->dispatch.seq;
  track.watch->owner = nullptr;
  track.watch = nullptr;
}

void Watchdog::step(Track& track, tick_t now, bool suppressed) noexcept {
  detail::Watch& w = *track.watch;
  const Limits& limits = w.limits;
  bool running = false;  // the CPU readings show the loop's thread running since the last poll
  if (!w.armed && w.elapsed >= limits.arm) {
    w.armed = true;
    w.next_sample = w.elapsed;
    read_cpu(track, w.first);
    w.last = w.first;
  } else if (w.armed) {
    if constexpr (kWaitObjects > 0) {  // only a watchdog that reads waits needs the difference
      const TimedCpuReading before = w.last;
      read_cpu(track, w.last);
      running = ran(track, before, w.last);
    } else {
      read_cpu(track, w.last);
    }
  }
  if (w.armed && w.elapsed >= w.next_sample) {
    take_sample(track, now, running);
    // Next sample one interval later; a watchdog that fell behind skips the intervals it missed.
    const std::uint64_t behind = detail::divide(w.elapsed - w.next_sample, limits.interval);
    w.next_sample += (behind + 1u) * limits.interval;
  }
  if (!w.reported_block && w.elapsed > limits.threshold) {
    w.reported_block = true;
    report_watched(track, Phase::in_progress, nullptr, suppressed);
  }
  if (!w.reported_hang && w.elapsed > limits.hang) {
    w.reported_hang = true;
    detail::bump(track.monitor->hangs_);
    report_watched(track, Phase::hang, nullptr, suppressed);
  }
}

void Watchdog::read_cpu(const Track& track, TimedCpuReading& reading) const noexcept {
  reading.elapsed = track.watch->elapsed;
  reading.counters.valid = 0;
  if constexpr (kCpuReadings) {
    if (hal_.read_cpu != nullptr) hal_.read_cpu(hal_.context, *track.monitor, &reading.counters);
  }
}

// The cause rule's running share applied to one poll interval: the thread's CPU time from
// `before` to `after` is at least running_permille of the wall time between them. False when
// either reading lacks the thread's CPU time, or no time passed.
bool Watchdog::ran(const Track& track, const TimedCpuReading& before, const TimedCpuReading& after) const noexcept {
  const CpuReading& a = before.counters;
  const CpuReading& b = after.counters;
  if (!a.has(kCpuThreadUs) || !b.has(kCpuThreadUs) || b.value[kCpuThreadUs] < a.value[kCpuThreadUs]) return false;
  const std::uint64_t wall = us_from_ticks(after.elapsed - before.elapsed, track.monitor->tick_hz());
  return wall != 0 && detail::permille(b.value[kCpuThreadUs] - a.value[kCpuThreadUs], wall) >=
                          config_.value.cause.running_permille;
}

// What the loop's thread waits on (Hal::read_wait), unless it ran since the last poll: false when
// not read or not waiting. An owner that is a watched loop's thread is named as that loop.
bool Watchdog::read_wait(const Track& track, bool running, WaitReading& out) const noexcept {
  if (running || hal_.read_wait == nullptr || sink_.wait == nullptr) return false;
  const std::size_t max = config_.value.max_frames;
  hal_.read_wait(hal_.context, *track.monitor, &out, max);
  if (out.object.kind == WaitKind::none) return false;
  // What the port gave, within bounds: a stack of at most max_frames, a chain of at most
  // kWaitChainMax hops, and no loop name but the watchdog's own.
  if (out.holder_pc_count > max) out.holder_pc_count = static_cast<std::uint8_t>(max);
  if (out.chain_count > kWaitChainMax) out.chain_count = static_cast<std::uint8_t>(kWaitChainMax);
  out.owner_loop = nullptr;
  if (out.object.owner != 0 && hal_.thread_id != nullptr) {
    for (std::size_t i = 0; i < loops_ && out.owner_loop == nullptr; ++i) {
      const Monitor& loop = *tracks_[i].monitor;
      if (hal_.thread_id(hal_.context, loop) == out.object.owner) out.owner_loop = loop.name();
    }
  }
  return true;
}

// The stack evidence of the sample just taken into `out`, when the port has it
// (Hal::capture_words after program counters; builds with stack evidence); null otherwise.
const StackEvidence* Watchdog::capture_words(const Monitor& monitor, const Sample& sample,
                                             StackEvidence& out) noexcept {
  if (hal_.capture_words == nullptr || sample.pc_count == 0) return nullptr;
  out = StackEvidence{};
  if (!hal_.capture_words(hal_.context, monitor, &out)) return nullptr;
  std::uint8_t kept = 0;  // the words up to the first whose offset does not increase
  while (kept < out.count && kept < kStackWords && (kept == 0 || out.offset[kept] > out.offset[kept - 1])) ++kept;
  out.count = kept;
  return &out;
}

void Watchdog::take_sample(Track& track, tick_t now, bool running) noexcept {
  const Monitor& monitor = *track.monitor;
  detail::Watch& w = *track.watch;
  Sample sample;
  sample.at = now;
  sample.seq = w.dispatch.seq;
  const std::size_t max = config_.value.max_frames;

  const char* names[kMaxFrames];
  std::size_t scope_count = 0;  // stays 0 when every read is torn
  bool scopes_read = false;
  for (std::uint8_t attempt = 0; attempt < config_.value.snapshot_attempts && !scopes_read; ++attempt) {
    scopes_read = monitor.scope_snapshot(names, max, scope_count);
  }
  for (std::size_t i = 0; i < scope_count; ++i) sample.frames[i] = reinterpret_cast<Frame>(names[i]);
  sample.scope_count = static_cast<std::uint8_t>(scope_count);

  // The wait first: the stack capture may interrupt the thread (a signal) and move it out of
  // its wait for a moment.
  detail::WaitScratch wait{};
  const bool waiting = read_wait(track, running, wait);

  if (hal_.capture_stack != nullptr && scope_count < max) {
    std::size_t pcs = hal_.capture_stack(hal_.context, monitor, &sample.frames[scope_count], max - scope_count);
    if (pcs > max - scope_count) pcs = max - scope_count;
    sample.pc_count = static_cast<std::uint8_t>(pcs);
  }
  StackEvidence stack_storage;
  const StackEvidence* stack = nullptr;
  if constexpr (kStackWords > 0) {
    stack = capture_words(monitor, sample, stack_storage);
  }

  // A sample belongs to the dispatch that was running for the whole capture: if the loop moved
  // on meanwhile (possible when the capture waits for the loop thread), it is not evidence. A
  // single-core build's watchdog preempts the loop (LOOPCANARY_SINGLE_CORE): it cannot move.
  bool same_dispatch = true;
  if constexpr (!kSingleCore) {
    StampSnapshot after;
    same_dispatch = monitor.snapshot(after) && after.seq == w.dispatch.seq;
  }
  // Not evidence, or not kept by the sink (an evidence ring keeping its room for reports):
  // missed, as the record says.
  const auto watch = static_cast<std::size_t>(&w - watches_);
  if (!same_dispatch || (sample.scope_count == 0 && sample.pc_count == 0) || !sink_.sample(*this, watch, sample, stack)) {
    ++w.samples_missed;
    detail::bump(samples_missed_);
  } else if (waiting) {
    hand_on(watch, wait);  // counted with its kept sample
  }
}

// Starts the observation of a report about `note` (odd seq: a dispatch, ended at note.end or
// still running then; even: a deadline note) on `track`'s loop: no evidence, unflagged, its
// stages those of the note.
Observation& Watchdog::observe(const Track& track, const BlockNote& note, Phase phase) noexcept {
  Observation& o = observed_.value;
  const Monitor& monitor = *track.monitor;
  o.phase = phase;
  o.flags = 0;
  o.loop_index = static_cast<std::uint8_t>(&track - tracks_);
  o.loop = monitor.name();
  o.tick_hz = monitor.tick_hz();
  o.note = note;
  o.duration_ticks = ticks_between(note.begin, note.end);
  o.threshold_ticks = monitor.limits_for(*note.event).threshold;
  o.delayed_by_dispatch = 0;
  o.delayed_by = nullptr;
  o.notes_dropped = notes_dropped();  // all loops: the next record shows any loop's loss
  o.memory.valid = 0;
  if constexpr (kMemoryContext) {
    if (hal_.read_memory != nullptr) hal_.read_memory(hal_.context, monitor, &o.memory);
  }
  o.samples_missed = 0;
  o.watch = kNoWatch;
  return o;
}

// What `w` gathered (CPU readings, samples) in `o`; none before it armed.
void Watchdog::add_evidence(Observation& o, const detail::Watch& w) const noexcept {
  o.watch = static_cast<std::uint8_t>(&w - watches_);
  o.samples_missed = w.samples_missed;
  if (w.armed) {
    o.first = w.first;
    o.last = w.last;
  } else {
    o.flags = static_cast<std::uint8_t>(o.flags | kFlagUnwatched);
  }
}

// Reports the watched dispatch of `track` from what the watchdog saw of it up to this poll:
// in_progress or hang while it runs; final once it ended, at the note's end stamp when `ended`
// is given, else at this poll, flagged `open_flag`: kFlagEndEstimated (an estimated end: no note
// confirms a block, counted in finals_estimated) or kFlagRunningAtStop (finish(): it still runs,
// counted in finals_at_stop). A final report releases the watch.
void Watchdog::report_watched(Track& track, Phase phase, const BlockNote* ended, bool suppressed,
                              std::uint8_t open_flag) noexcept {
  const detail::Watch& w = *track.watch;
  Observation& o = observe(track, w.dispatch, phase);  // end: this poll
  o.duration_ticks = w.elapsed;
  if (w.reported_hang) o.flags = kFlagHung;
  add_evidence(o, w);

  if (phase == Phase::final) {
    if (ended != nullptr) {
      o.note = *ended;
      // The loop's own measure (end - start, exact modulo the wrap), plus the whole wraps that
      // bring it nearest the watchdog's: elapsed at this poll less the time since the end stamp.
      // The two agree but for whole wraps unless the clock stepped back while it was watched.
      const std::int64_t watched = static_cast<std::int64_t>(w.elapsed) - signed_ticks(ended->end, w.dispatch.end);
      const std::uint64_t measured = ticks_between(w.dispatch.begin, ended->end);
      std::uint64_t wraps = 0;
      if (watched > static_cast<std::int64_t>(measured)) {
        wraps = (static_cast<std::uint64_t>(watched) - measured + kMaxIntervalTicks) >> 32;
      }
      o.duration_ticks = measured + (wraps << 32);
      track.done_seq = w.dispatch.seq;  // its end may not be published yet: never watch it afterwards
    } else {
      // Ended without a note (a snapshot showed a later dispatch), or still running at finish():
      // done_seq stays here, as it may name a later dispatch whose note came before its end
      // was published.
      o.flags = static_cast<std::uint8_t>(o.flags | open_flag);
      if (!suppressed) detail::bump(open_flag == kFlagRunningAtStop ? finals_at_stop_ : finals_estimated_);
    }
    stop_watching(track);  // the slot keeps its evidence until it is taken again
  } else {
    read_marks(*track.monitor, w.dispatch.seq, config_.value.snapshot_attempts, o.note);
  }
  deliver(suppressed);
}

// A deadline miss: the record of the late event, with the evidence of the dispatch that was
// running at its due time when this loop's watch (still on it, or the one it released last and
// no one has taken since) covers that time.
void Watchdog::report_deadline_miss(Track& track, const BlockNote& note, bool suppressed) noexcept {
  // Began at or before the due time, and is not the late dispatch itself.
  const auto covers = [&note](const detail::Watch& w) {
    return w.dispatch.seq != note.seq + 1u && signed_ticks(w.dispatch.begin, note.begin) >= 0;
  };
  const detail::Watch* delayer = nullptr;
  if (track.watch != nullptr && covers(*track.watch)) {
    delayer = track.watch;
  } else if (const detail::Watch* last = track.last_watch;
             last != nullptr && last->owner == nullptr && last->dispatch.seq == track.last_watch_seq && covers(*last)) {
    delayer = last;
  }
  Observation& o = observe(track, note, Phase::deadline_miss);
  o.threshold_ticks = note.event->health != nullptr ? note.event->health->deadline_ticks() : 0;
  if (delayer != nullptr && delayer->armed) {
    o.delayed_by_dispatch = delayer->dispatch.seq / 2u + 1u;
    o.delayed_by = delayer->dispatch.event;
    add_evidence(o, *delayer);
  } else {
    o.flags = kFlagUnwatched;
  }
  if (!suppressed) detail::bump(deadline_misses_);
  deliver(suppressed);
}

void detail::report_deadline_note(Watchdog& watchdog, WatchdogTrack& track, const BlockNote& note,
                                  bool suppressed) noexcept {
  watchdog.report_deadline_miss(track, note, suppressed);
}

void Watchdog::report_unwatched(Track& track, const BlockNote& note, bool suppressed) noexcept {
  observe(track, note, Phase::final).flags = kFlagUnwatched;
  track.done_seq = note.seq;  // its end may not be published yet: never watch it afterwards
  deliver(suppressed);
}

// Hands the observation on, numbered: a report withheld while a debugger is attached is only
// counted.
void Watchdog::deliver(bool suppressed) noexcept {
  if (suppressed) {
    detail::bump(suppressed_);
    return;
  }
  Observation& o = observed_.value;
  // Only this context writes the counter: the report number is its new value.
  o.report = detail::load_relaxed(reports_) + 1u;
  detail::store_relaxed(reports_, o.report);
  o.records_dropped = detail::load_relaxed(records_dropped_);
  if (!sink_.report(*this, o)) detail::bump(records_dropped_);
}

void Watchdog::assemble_watch(Watchdog& self, std::size_t watch) noexcept { watch_started(self.watch_samples_[watch]); }

// In a build with stack evidence the records keep it in their stack table (add_sample).
bool Watchdog::assemble_sample(Watchdog& self, std::size_t watch, const Sample& sample,
                               const StackEvidence* stack) noexcept {
  add_sample(self.watch_samples_[watch], sample, stack);
  return true;
}

void Watchdog::assemble_wait(Watchdog& self, std::size_t watch, const WaitReading& reading) noexcept {
  add_wait(self.watch_samples_[watch], reading);
}

// The record of `o` to the interceptors, in order, then into the ring.
bool Watchdog::assemble_report(Watchdog& self, const Observation& o) noexcept {
  BlockRecord& r = self.assembled_->value;
  assemble(o, o.watch != kNoWatch ? &self.watch_samples_[o.watch] : nullptr, self.qualifier_, self.config_.value.cause, r);
  for (std::size_t i = 0; i < self.chain_size_; ++i) self.chain_[i].function(self.chain_[i].context, r);
  return self.ring_.push(r);
}
}  // namespace loopcanary
