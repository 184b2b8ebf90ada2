// SPDX-License-Identifier: MIT
// Seeds for the fuzz targets that read bytes the core writes: packets made by the core's encoder
// (encode_packet, a deadline miss among them, and encode_health_packet), evidence packets a
// StaticEvidenceWatchdog sends (on the sim port: a block with scopes and a hang, in one boot and
// kept across a reset), crash-box memory left by the core's CrashBox (store, set_reset_cause)
// and evidence-ring memory left by a StaticEvidenceRing (push, set_reset_cause, drain), written
// as files into <dir>/capture, <dir>/crash_box and <dir>/evidence_ring. Made at build time, so they follow
// the encoder and this build's capacities (kMaxSamples, kMaxFrames, kTopFrames).
//
//   loopcanary_fuzz_make_seeds DIR
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "crash_box_memory.hpp"
#include "loopcanary/crash_box.hpp"
#include "loopcanary/evidence.hpp"
#include "loopcanary/loopcanary.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/port/sim.hpp"
#include "loopcanary/record.hpp"

namespace {

namespace lc = loopcanary;
using Bytes = std::vector<std::uint8_t>;

constexpr lc::Event kShort{"tick"};
constexpr lc::Event kLong{"an_event_name_longer_than_thirty_one_bytes_to_be_cut"};
const char* const kScopes[] = {"flash.program", "ota.crc32", "a.scope.name.longer.than.thirty.one.bytes"};

// A record of `samples` samples of `frames` frames each (the first `scopes` of them scope names),
// every field set.
lc::BlockRecord make_record(lc::Phase phase, std::size_t samples, std::size_t frames, std::size_t scopes) {
  lc::BlockRecord r{};
  r.report = 7;
  r.phase = phase;
  r.cause = lc::Cause::waiting;
  r.flags = phase == lc::Phase::final ? lc::kFlagHung : 0;
  r.loop_index = 1;
  r.qualifier = "fw-1.2.3";
  r.loop = "main";
  r.event = samples % 2 == 0 ? &kShort : &kLong;
  r.dispatch = 1234;
  r.tick_hz = 1'000'000;
  r.start = 0xFFFF'F000u;  // wraps before the end
  r.duration_ticks = 250'000;
  r.end = r.start + 250'000u;
  r.threshold_ticks = 100'000;
  r.window_ticks = 200'000;
  r.thread_cpu_us = 12'000;
  r.has_thread_cpu = true;
  r.thread_wait_us = 300;
  r.has_thread_wait = samples != 0;
  r.system_busy_permille = 420;
  r.steal_us = 5;
  r.records_dropped = 2;
  r.notes_dropped = 1;
  r.samples_taken = static_cast<std::uint32_t>(samples + 3);
  r.samples_missed = 1;
  r.samples_overwritten = 3;
  r.sample_count = static_cast<std::uint8_t>(samples);
  for (std::size_t s = 0; s < samples; ++s) {
    lc::Sample& sample = r.samples[s];
    sample.at = r.start + static_cast<lc::tick_t>(10'000 * (s + 1));
    sample.seq = 2 * r.dispatch - 1;
    sample.scope_count = static_cast<std::uint8_t>(scopes);
    sample.pc_count = static_cast<std::uint8_t>(frames - scopes);
    for (std::size_t f = 0; f < frames; ++f) {
      sample.frames[f] = f < scopes ? reinterpret_cast<lc::Frame>(kScopes[(f + s) % 3])
                                    : static_cast<lc::Frame>(0x8000'1000u + 0x40u * f + s);
    }
  }
  // Stages (format version 2): as many as samples, up to the build's; one name shared with a scope.
  const char* const stage_names[] = {"input", kScopes[0], "output"};
  r.stage_count = static_cast<std::uint8_t>(samples < lc::kMaxStages ? samples : lc::kMaxStages);
  for (std::size_t i = 0; i < r.stage_count; ++i) {
    r.stages[i] = {stage_names[i % 3], static_cast<lc::tick_t>(1'000 * (i + 1))};
  }
  if (samples != 0) {
    // The stack table: the first sample's stack for all of them, its innermost PC a range (when
    // it has callers), and a stack of one PC; one more sample in top_other.
    r.top_count = 2;
    lc::TopStack& first = r.top[0];
    const lc::Sample& s0 = r.samples[0];
    first.count = static_cast<std::uint32_t>(samples);
    first.scope_count = s0.scope_count;
    first.pc_count = s0.pc_count;
    for (std::size_t f = 0; f < std::size_t{s0.scope_count} + s0.pc_count; ++f) first.frames[f] = s0.frames[f];
    first.leaf_high = s0.pc_count > 1 ? s0.frames[s0.scope_count] + 0x20u : (s0.pc_count != 0 ? s0.frames[s0.scope_count] : 0u);
    lc::TopStack& second = r.top[1];
    second.count = 1;
    second.pc_count = 1;
    second.frames[0] = static_cast<lc::Frame>(0x8000'2000u);
    second.leaf_high = second.frames[0];
    r.top_other = 1;
  }
  return r;
}

std::vector<lc::BlockRecord> records() {
  return {
      make_record(lc::Phase::final, 0, 0, 0),
      make_record(lc::Phase::in_progress, 1, 1, 0),
      make_record(lc::Phase::hang, 2, 3, 1),
      make_record(lc::Phase::final, 3, 4, 2),
      make_record(lc::Phase::hang, lc::kMaxSamples, lc::kMaxFrames, lc::kMaxFrames > 2 ? 2 : 0),
  };
}

constexpr lc::Event kDisplay{"display"};

// Health records: one with every event slot this build has (names shared, one cut), idle time and
// memory, across the tick wrap; one with no events and no idle time.
std::vector<lc::HealthRecord> health_records() {
  lc::HealthRecord full{};
  full.number = 12;
  full.qualifier = "fw-1.2.3";
  full.loop = "main";
  full.loop_index = 1;
  full.tick_hz = 1'000'000;
  full.start = 0xFFFF'0000u;
  full.end = full.start + 1'000'000u;
  full.dispatches = 900;
  full.busy_ticks = 450'000;
  full.idle_ticks = 500'000;
  full.has_idle = true;
  full.blocks = 2;
  full.hangs = 1;
  full.max_duration = 180'000;
  full.histogram[2] = 800;
  full.histogram[17] = 100;
  full.memory.set(lc::kMemoryStackPeak, 2048);
  full.health_dropped = 1;
  const lc::Event* const events[] = {&kShort, &kLong, &kDisplay};
  full.event_count = static_cast<std::uint8_t>(lc::kHealthEvents);
  for (std::size_t i = 0; i < lc::kHealthEvents; ++i) {
    lc::EventHealthWindow& e = full.events[i];
    e.event = events[i % 3];
    e.dispatches = static_cast<std::uint32_t>(100 + i);
    e.deadline_misses = static_cast<std::uint32_t>(i);
    e.missed_periods = static_cast<std::uint32_t>(2 * i);
    e.p50 = 100;
    e.p95 = 900;
    e.p99 = 4000;
    e.max_latency = 0xFFFF'FFFFu;
    e.period_ticks = i == 0 ? 10'000u : 0u;
    e.deadline_ticks = i == 0 ? 5'000u : 0u;
  }
  lc::HealthRecord bare{};
  bare.number = 13;
  bare.loop = "net";
  bare.tick_hz = 32'768;
  bare.end = 32'768;
  return {full, bare};
}

// A deadline miss delayed by a dispatch of another event, with that dispatch's evidence.
lc::BlockRecord deadline_miss() {
  lc::BlockRecord r = make_record(lc::Phase::hang, 2, 3, 1);
  r.phase = lc::Phase::deadline_miss;
  r.flags = 0;
  r.event = &kDisplay;
  r.delayed_by_dispatch = 1233;
  r.delayed_by = &kShort;
  return r;
}

// A block that waited on a lock held by another thread, and on a pipe (a version 4 wait part).
lc::BlockRecord waiting() {
  lc::BlockRecord r = make_record(lc::Phase::final, 2, 3, 1);
  r.cause = lc::Cause::waiting;
  if constexpr (lc::kWaitObjects >= 2) {
    r.wait.count = 2;
    r.wait.other = 1;
    lc::WaitSeen& lock = r.wait.objects[0];
    lock.object.kind = lc::WaitKind::mutex;
    lock.object.address = 0x7f00a0;
    lock.object.owner = 4242;
    std::memcpy(lock.object.owner_name, "journal", 8);
    lock.owner_loop = "journal";
    lock.holder_pc_count = 2;
    lock.holder_frames[0] = 0x401000;
    lock.holder_frames[1] = 0x401234;
    lock.samples = 2;
    lc::WaitSeen& pipe = r.wait.objects[1];
    pipe.object.kind = lc::WaitKind::pipe;
    pipe.object.fd = 5;
    std::memcpy(pipe.object.text, "pipe:[81234]", 13);
    pipe.samples = 1;
  }
  return r;
}

Bytes packet_of(const lc::HealthRecord& record) {
  Bytes packet(lc::kMaxHealthPacketBytes);
  packet.resize(lc::encode_health_packet(record, packet.data(), packet.size()));
  return packet;
}

Bytes packet_of(const lc::BlockRecord& record) {
  Bytes packet(lc::kMaxPacketBytes);
  packet.resize(lc::encode_packet(record, packet.data(), packet.size()));
  return packet;
}

bool write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::fprintf(stderr, "loopcanary_fuzz_make_seeds: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

bool make_dir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "loopcanary_fuzz_make_seeds: cannot create %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

void append_packet(void* capture, const std::uint8_t* packet, std::size_t size) {
  auto* out = static_cast<Bytes*>(capture);
  out->insert(out->end(), packet, packet + size);
}

// Evidence packets of a scenario on the sim port: a dispatch of 120 ms under two scopes and one
// that hangs (600 ms), from one boot; with `reset`, what a second boot drains after a reset that
// the hang ended (the first boot's evidence marked as the previous boot's).
Bytes evidence(bool reset) {
  namespace sim = loopcanary::sim;
  static lc::StaticEvidenceRing<1u << 14> ring;
  ring.open(lc::ResetCause::power_on);
  Bytes sent;
  ring.drain({&append_packet, &sent});  // the last run's bytes
  sent.clear();
  sim::VirtualTime time(0xFFFF'0000u);
  sim::Machine machine;
  sim::Thread thread;
  thread.pc = 0x1234;
  machine.set_pc_capture(true);
  sim::PortMonitor monitor{sim::Clock{time}};
  lc::StaticEvidenceWatchdog<1> watchdog;
  sim::Scheduler scheduler(time, machine, watchdog, sim::ms(5));
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = sim::kTickHz;
  config.threshold_us = 50'000;
  config.sample_interval_us = 10'000;
  config.hang_limit_us = 300'000;
  config.context = &thread;
  lc::WatchdogConfig dog;
  dog.qualifier = "fw-1.2";
  if (monitor.init(config) != lc::Status::ok || watchdog.init(dog, machine.hal(), ring) != lc::Status::ok ||
      watchdog.add(monitor) != lc::Status::ok) {
    return sent;
  }
  monitor.begin(kShort);
  {
    LOOPCANARY_SCOPE(monitor, kScopes[0]);
    LOOPCANARY_SCOPE(monitor, kScopes[2]);
    scheduler.compute(thread, sim::ms(120));
  }
  monitor.end();
  monitor.begin(kLong);
  scheduler.wait(sim::ms(600));
  if (reset) {
    ring.set_reset_cause(lc::ResetCause::software);
    ring.open(lc::ResetCause::unknown);
  } else {
    monitor.end();
    scheduler.idle(sim::ms(20));
  }
  ring.drain({&append_packet, &sent});
  return sent;
}

// `packet` (a whole packet) sealed again with `body` as its body.
Bytes resealed(const Bytes& packet, const Bytes& body) {
  Bytes out(lc::kPacketHeaderBytes + body.size() + lc::kPacketTrailerBytes);
  std::memcpy(out.data() + lc::kPacketHeaderBytes, body.data(), body.size());
  out.resize(lc::detail::seal_packet(out.data(), static_cast<lc::PacketType>(packet[3]), body.size()));
  return out;
}

// A sample of watch 0 at `pc` (and the LR frame `lr_frame`, 0: none) with a stack part as
// docs/report-format.md lays it out: `presence` (0, 1, or 3 with a frame pointer), SP, LR and the
// words (offset, value).
Bytes stack_sample(std::uint32_t pc, std::uint32_t lr_frame, unsigned presence, std::uint32_t lr,
                   std::initializer_list<std::pair<unsigned, std::uint32_t>> words) {
  std::uint8_t body[96];
  lc::detail::ByteWriter w{body, sizeof body, 0};
  w.u8(0);
  w.uv(12000);
  w.uv(1);
  w.u8(0);
  w.u8(lr_frame != 0 ? 2 : 1);
  w.uv(pc);
  if (lr_frame != 0) w.uv(lr_frame);
  w.u8(presence);
  if (presence != 0) {
    w.uv(0x20000100u);
    w.uv(lr);
    if (presence == 3) w.uv(0x20000180u);
    w.u8(static_cast<unsigned>(words.size()));
    unsigned next = 0;
    for (const auto& [offset, value] : words) {
      w.uv(offset - next);
      w.uv(value);
      next = offset + 1;
    }
  }
  Bytes packet(lc::kPacketHeaderBytes);
  packet[3] = static_cast<std::uint8_t>(lc::PacketType::sample);
  return resealed(packet, Bytes(body, body + w.pos));
}

// The sim scenario's evidence as a device with stack evidence sends it (configuration bit 3, 4
// stack words): its `watch` and `observation` packets with that configuration, its samples
// replaced by samples whose chains the fuzz target's CFI (tests/tool/arm_cfi_fixture.hpp: A at
// 0x1000, C at 0x3000) unwinds whole, cuts short, cannot start, and one without a stack part.
Bytes stack_evidence(const Bytes& evidence) {
  Bytes out;
  bool samples_sent = false;
  for (std::size_t at = 0; at + lc::kPacketHeaderBytes <= evidence.size();) {
    const std::size_t n = lc::packet_size(&evidence[at]);
    const Bytes packet(evidence.begin() + static_cast<std::ptrdiff_t>(at),
                       evidence.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    Bytes body(packet.begin() + lc::kPacketHeaderBytes, packet.end() - lc::kPacketTrailerBytes);
    const auto type = static_cast<lc::PacketType>(packet[3]);
    if (type == lc::PacketType::sample) {
      if (samples_sent) continue;
      samples_sent = true;
      for (const Bytes& sample : {stack_sample(0x1010, 0x9998, 1, 0x9999, {{0, 0x1041}, {1, 0x3005}}),
                                  stack_sample(0x1010, 0x9998, 3, 0x9999, {{0, 0x1041}}),
                                  stack_sample(0x5010, 0x9998, 1, 0x9999, {{2, 0x3005}}),
                                  stack_sample(0x1000, 0, 1, 0x3005, {}), stack_sample(0x1010, 0, 0, 0, {})}) {
        out.insert(out.end(), sample.begin(), sample.end());
      }
      continue;
    }
    if (type == lc::PacketType::watch || type == lc::PacketType::observation) {
      body[0] = static_cast<std::uint8_t>(body[0] | lc::detail::kConfigurationStackEvidence);
      body.insert(body.begin() + 5, 4);  // stack words, after the five capacities
      const Bytes sealed = resealed(packet, body);
      out.insert(out.end(), sealed.begin(), sealed.end());
      continue;
    }
    out.insert(out.end(), packet.begin(), packet.end());
  }
  return out;
}

// A version 4 block packet with stack evidence (configuration bit 3, 4 stack words) as
// docs/report-format.md lays it out: two stack parts, three top entries (one unwinds whole with
// the fuzz target's CFI, one cannot start, one without a part) and two kept samples.
Bytes stack_block() {
  std::uint8_t body[256];
  lc::detail::ByteWriter w{body, sizeof body, 0};
  for (unsigned v : {8u, 8u, 4u, 8u, 2u, 4u}) w.u8(v);  // configuration .. stack words
  w.uv(1000000);                                          // tick_hz
  w.uv(1);                                                // report
  for (unsigned v : {2u, 1u, 0u, 0u}) w.u8(v);            // final, running, flags, loop 0
  for (unsigned v : {3u, 1000u, 250000u, 0u, 100000u, 0u, 0u}) w.uv(v);  // dispatch .. window
  w.u8(0);                                                // CPU presence
  w.uv(0);                                                // steal
  w.u8(0);                                                // memory presence
  for (unsigned v : {0u, 0u, 3u}) w.uv(v);                // dropped, dropped, strings
  for (const char* name : {"fw", "main", "slow"}) w.str(name);
  w.u8(0);                                                // stages
  for (unsigned v : {9u, 0u, 0u}) w.uv(v);                // taken, missed, overwritten
  w.u8(3);                                                // top_count
  w.uv(0);                                                // top_other
  w.u8(2);                                                // stack parts
  for (unsigned offset : {1u, 2u}) {  // presence 1, SP, LR, one word: 0x3005 at that offset
    w.u8(1);
    w.uv(0x20000100u);
    w.uv(0x9999u);
    w.u8(1);
    w.uv(offset);
    w.uv(0x3005u);
  }
  // Entries: count, scope_count 0, the PCs as deltas from the entry before, the range, the part.
  const unsigned entries[3][5] = {{5, 0x1010, 0x9998, 4, 1}, {3, 0x5010, 0x9998, 0, 2}, {1, 0x1030, 0, 0, 0}};
  unsigned before[2] = {0, 0};
  for (const auto& e : entries) {
    w.uv(e[0]);
    w.u8(0);
    w.u8(e[2] != 0 ? 2 : 1);
    for (unsigned f = 0; f < (e[2] != 0 ? 2u : 1u); ++f) {  // the delta's zigzag
      const std::int64_t delta = std::int64_t{e[1 + f]} - std::int64_t{before[f]};
      w.uv(delta >= 0 ? static_cast<std::uint64_t>(delta) << 1 : (static_cast<std::uint64_t>(-delta) << 1) - 1u);
    }
    before[0] = e[1];
    before[1] = e[2];
    w.uv(e[3]);
    w.u8(e[4]);
  }
  w.u8(2);  // samples: time, sequence, scope_count, pc_count, the PC, the part
  for (const unsigned* x : {entries[0], entries[1]}) {
    w.uv(1000);
    w.uv(0);
    w.u8(0);
    w.u8(1);
    w.uv(x == entries[0] ? 0x1012u << 1 : (0x5010u - 0x1012u) << 1);  // deltas >= 0
    w.u8(x[4]);
  }
  Bytes packet(lc::kPacketHeaderBytes);
  packet[3] = static_cast<std::uint8_t>(lc::PacketType::block);
  return resealed(packet, Bytes(body, body + w.pos));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: loopcanary_fuzz_make_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::string capture = dir + "/capture/";
  const std::string box_dir = dir + "/crash_box/";
  const std::string ring_dir = dir + "/evidence_ring/";
  if (!make_dir(dir) || !make_dir(capture) || !make_dir(box_dir) || !make_dir(ring_dir)) return 1;
  bool ok = true;

  // Captures: each packet alone, all of them back to back, and with garbage and a torn tail.
  const std::vector<lc::BlockRecord> all = records();
  Bytes together;
  Bytes damaged;
  std::vector<Bytes> packets;
  for (const lc::BlockRecord& r : all) packets.push_back(packet_of(r));
  packets.push_back(packet_of(deadline_miss()));
  packets.push_back(packet_of(waiting()));
  for (const lc::HealthRecord& h : health_records()) packets.push_back(packet_of(h));
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const Bytes& p = packets[i];
    if (p.empty()) {
      std::fprintf(stderr, "loopcanary_fuzz_make_seeds: record %zu does not encode\n", i);
      return 1;
    }
    ok = ok && write_file(capture + "packet" + std::to_string(i) + ".lcb", p.data(), p.size());
    together.insert(together.end(), p.begin(), p.end());
    damaged.insert(damaged.end(), {0x00, 0xA5, 0x4C, 0xA5, '{', '\n'});  // garbage, a lone magic pair
    damaged.insert(damaged.end(), p.begin(), p.end());
  }
  const Bytes last = packet_of(all[1]);
  damaged.insert(damaged.end(), last.begin(), last.begin() + static_cast<std::ptrdiff_t>(last.size() / 2));
  ok = ok && write_file(capture + "together.lcb", together.data(), together.size());
  Bytes evidence_packets;
  for (const bool reset : {false, true}) {
    const Bytes e = evidence(reset);
    if (!reset) evidence_packets = e;
    if (e.size() < 200) {
      std::fprintf(stderr, "loopcanary_fuzz_make_seeds: the evidence scenario sent %zu bytes\n", e.size());
      return 1;
    }
    ok = ok && write_file(capture + (reset ? "evidence_previous_boot.lcb" : "evidence.lcb"), e.data(), e.size());
  }
  const Bytes stack = stack_evidence(evidence_packets);
  ok = ok && write_file(capture + "evidence_stack.lcb", stack.data(), stack.size());
  const Bytes stack_record = stack_block();
  ok = ok && write_file(capture + "block_stack.lcb", stack_record.data(), stack_record.size());
  ok = ok && write_file(capture + "damaged.lcb", damaged.data(), damaged.size());

  // Crash-box memory as a board finds it at boot: empty, with records stored before the reset
  // (some with the cause the firmware set), overflowed; and the previous_boot packets it sends.
  loopcanary::fuzz::CrashBoxMemory memory;
  for (unsigned stored = 0; stored <= 12; stored += (stored < 3 ? 1 : 9)) {
    memory.fill_garbage(stored + 1);
    lc::CrashBox& box = memory.box();
    memory.box().open(lc::ResetCause::power_on);
    for (unsigned i = 0; i < stored; ++i) box.store(all[i % all.size()]);
    if (stored == 2) box.set_reset_cause(lc::ResetCause::software);
    ok = ok && write_file(box_dir + "stored" + std::to_string(stored) + ".bin", memory.bytes, sizeof memory.bytes);
    if (stored != 0) {
      Bytes sent;
      memory.box().open(lc::ResetCause::unknown);
      memory.box().drain({&append_packet, &sent});
      ok = ok && write_file(capture + "previous_boot" + std::to_string(stored) + ".lcb", sent.data(), sent.size());
    }
  }

  // Evidence-ring memory as a board finds it at boot: this boot's boot packet alone, with a few
  // of the scenario's packets (one with the cause the firmware set), full, and written past the
  // ring's end after a drain.
  std::vector<Bytes> pieces;  // the scenario's packets, cut by their headers
  for (std::size_t at = 0; at + lc::kPacketHeaderBytes <= evidence_packets.size();) {
    const std::size_t n = lc::packet_size(&evidence_packets[at]);
    if (at + n > evidence_packets.size()) break;
    pieces.emplace_back(evidence_packets.begin() + static_cast<std::ptrdiff_t>(at),
                        evidence_packets.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  loopcanary::fuzz::EvidenceRingMemory ring_memory;
  for (unsigned kept : {0u, 3u, 100u}) {
    for (const bool wrapped : {false, true}) {
      ring_memory.fill_garbage(kept + (wrapped ? 7u : 1u));
      loopcanary::fuzz::FuzzEvidenceRing& ring = ring_memory.ring();
      ring.open(lc::ResetCause::power_on);
      if (wrapped) {  // advance head and tail most of the way round
        for (std::size_t i = 0; i < pieces.size() && ring.push(pieces[i].data(), pieces[i].size()); ++i) {
        }
        Bytes drained;
        ring.drain({&append_packet, &drained});
      }
      for (std::size_t i = 0; i < kept && i < pieces.size() && ring.push(pieces[i].data(), pieces[i].size()); ++i) {
      }
      if (kept == 3) ring.set_reset_cause(lc::ResetCause::software);
      ok = ok && write_file(ring_dir + "kept" + std::to_string(kept) + (wrapped ? "_wrapped" : "") + ".bin",
                            ring_memory.bytes, sizeof ring_memory.bytes);
    }
  }
  return ok ? 0 : 1;
}
