// SPDX-License-Identifier: MIT
// The evidence stream (evidence.hpp): the evidence packets' encoder (the ring, the crash box
// part, is evidence_ring.cpp). Small on purpose: it is what a device links instead of the
// assembler and the record encoder.
// docs/report-format.md ("Evidence packets") is the specification this follows field by field.
#include "loopcanary/evidence.hpp"

#include "loopcanary/packet_fields.hpp"

namespace loopcanary {
namespace {

using detail::ByteWriter;

// Without CPU readings (LOOPCANARY_CPU_READINGS 0) every reading is empty: no value present.
void cpu_reading(ByteWriter& w, const TimedCpuReading& r) noexcept {
  w.uv(r.elapsed);
  if constexpr (!kCpuReadings) {
    w.u8(0);
  } else {
    w.u8(r.counters.valid);
    for (unsigned i = 0; i < kCpuValues; ++i) {
      if (r.counters.has(static_cast<CpuValue>(i))) w.uv(r.counters.value[i]);
    }
  }
}

// The `section` entries of LOOPCANARY_OBSERVATION_PACKET_FIELDS.
struct ObservationSections {
  ByteWriter& w;
  const Observation& o;

  // delayed_by_dispatch, then (when not 0) the delaying event's name.
  void delayed_by() const noexcept {
    w.uv(o.delayed_by_dispatch);
    if (o.delayed_by_dispatch != 0) w.str(o.delayed_by != nullptr ? o.delayed_by->name : nullptr);
  }
  // The first and last CPU readings, unless the dispatch was not watched.
  void cpu() const noexcept {
    if ((o.flags & kFlagUnwatched) != 0) return;
    cpu_reading(w, o.first);
    cpu_reading(w, o.last);
  }
};

}  // namespace

// ---- The evidence sink ------------------------------------------------------------------------

Status EvidenceWatchdog::init(const WatchdogConfig& config, const Hal& hal, const Storage& storage, EvidenceRing& ring,
                              std::uint8_t* scratch, bool* announced) noexcept {
  const Status status = Watchdog::init(config, hal, storage, kStream, nullptr);
  if (status != Status::ok) return status;
  ring_ = &ring;
  scratch_ = scratch;
  announced_ = announced;
  rule_[0] = config.cause.running_permille;
  rule_[1] = config.cause.starved_busy_permille;
  rule_[2] = config.cause.starved_wait_permille;
  sample_reserve_ = static_cast<std::uint32_t>(evidence_report_reserve(ring.capacity()));
  return Status::ok;
}

Status EvidenceWatchdog::add_interceptor(ObservationInterceptor function, void* context) noexcept {
  if (ring_ == nullptr) return Status::not_initialised;
  if (function == nullptr) return Status::interceptor_null;
  if (interceptor_ != nullptr) return Status::interceptor_chain_full;
  interceptor_context_ = context;
  interceptor_ = function;
  return Status::ok;
}

void EvidenceWatchdog::send_watch(Watchdog& self, std::size_t watch) noexcept {
  static_cast<EvidenceWatchdog&>(self).announced_[watch] = false;  // sent with its first evidence
}

// The `watch` packet of `watch`, once per dispatch it watches, before its first evidence; one
// the ring refused goes again before the next.
void EvidenceWatchdog::announce(std::size_t watch) noexcept {
  if (announced_[watch]) return;
  ByteWriter w{scratch_, kMaxEvidencePacketBytes, kPacketHeaderBytes};
  w.configuration();
  w.u8(static_cast<unsigned>(watch));
  announced_[watch] = ring_->push(scratch_, detail::seal_packet(scratch_, PacketType::watch, w.pos - kPacketHeaderBytes));
}

bool EvidenceWatchdog::send_sample(Watchdog& self, std::size_t watch, const Sample& s,
                                   const StackEvidence* stack) noexcept {
  auto& me = static_cast<EvidenceWatchdog&>(self);
  me.announce(watch);
  ByteWriter w{me.scratch_, kMaxEvidencePacketBytes, kPacketHeaderBytes};
  w.u8(static_cast<unsigned>(watch));
  w.uv(s.at);
  w.uv(s.seq);
  w.u8(s.scope_count);
  w.u8(s.pc_count);
  for (unsigned f = 0; f < s.scope_count; ++f) w.str(reinterpret_cast<const char*>(s.frames[f]));
  for (unsigned f = s.scope_count; f < s.scope_count + s.pc_count; ++f) w.uv(s.frames[f]);
  if constexpr (kStackWords > 0) w.stack_part(stack);
  return me.ring_->push(me.scratch_, detail::seal_packet(me.scratch_, PacketType::sample, w.pos - kPacketHeaderBytes),
                        me.sample_reserve_);
}

bool EvidenceWatchdog::send_observation(Watchdog& self, const Observation& o) noexcept {
  auto& me = static_cast<EvidenceWatchdog&>(self);
  if (o.watch != kNoWatch) me.announce(o.watch);
  ByteWriter w{me.scratch_, kMaxEvidencePacketBytes, kPacketHeaderBytes};
  w.configuration();
  for (std::uint16_t permille : me.rule_) w.uv(permille);
  const ObservationSections section{w, o};
  const Observation& r = o;  // the lists' expansions name the record `r`
  LOOPCANARY_OBSERVATION_PACKET_FIELDS(LOOPCANARY_PUT)
  w.str(self.qualifier());
  w.str(o.loop);
  w.str(o.note.event != nullptr ? o.note.event->name : nullptr);
  w.u8(o.note.stage_count);
  if constexpr (kMaxStages > 0) {
    const std::size_t count = o.note.stage_count;
    for (std::size_t i = 0; i < count; ++i) {
      w.str(o.note.stages[i].name);
      w.uv(o.note.stages[i].start);
    }
  }
  const bool kept =
      me.ring_->push(me.scratch_, detail::seal_packet(me.scratch_, PacketType::observation, w.pos - kPacketHeaderBytes));
  if (me.interceptor_ != nullptr) me.interceptor_(me.interceptor_context_, o, kept);
  return kept;
}

}  // namespace loopcanary
