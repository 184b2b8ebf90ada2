// SPDX-License-Identifier: MIT
// The waits section of `loopcanary report` (report_waits.hpp).
#include "report_waits.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace loopcanary::tool {

namespace {

constexpr std::size_t kMaxObjects = 10000;  // further objects are counted, not listed
constexpr std::size_t kMaxBlocks = 32;      // blocks listed per object

std::string hex_text(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "\"0x%" PRIx64 "\"", value);
  return text;
}

// {"tid":..,"name":..,"loop":..|null} or null.
std::string owner_json(const std::optional<WaitHolder>& owner) {
  if (!owner) return "null";
  return "{\"tid\":" + std::to_string(owner->tid) + ",\"name\":" + json_string(owner->name) +
         ",\"loop\":" + (owner->loop ? json_string(*owner->loop) : std::string("null")) + '}';
}

}  // namespace

void WaitTally::add(const Block& block) {
  const LogRecord& r = block.record;
  if (r.wait.objects.empty()) return;
  ++blocks_;
  for (const WaitEntry& entry : r.wait.objects) {
    const std::string key = wait_text(entry);
    auto it = objects_.find(key);
    if (it == objects_.end()) {
      if (objects_.size() >= kMaxObjects) {
        ++overflowed_;
        continue;
      }
      it = objects_.emplace(key, Object{}).first;
      it->second.entry = entry;
      if (it->second.entry.owner) it->second.entry.owner->frames.clear();
    }
    Object& o = it->second;
    o.samples += entry.samples;
    if (o.waited.size() < kMaxBlocks) {
      o.waited.push_back(Waited{block.id, entry.samples, r.samples_taken});
    } else {
      ++o.waited_other;
    }
  }
}

std::vector<const WaitTally::Object*> WaitTally::sorted() const {
  std::vector<const Object*> out;
  for (const auto& [key, o] : objects_) out.push_back(&o);
  std::stable_sort(out.begin(), out.end(), [](const Object* a, const Object* b) {
    if (a->samples != b->samples) return a->samples > b->samples;
    return a->waited.size() + a->waited_other > b->waited.size() + b->waited_other;
  });
  return out;
}

void WaitTally::write_text(std::ostream& out) const {
  if (objects_.empty()) return;
  out << "\nwaits by object and holder: " << objects_.size() << (objects_.size() == 1 ? " object in " : " objects in ")
      << blocks_ << (blocks_ == 1 ? " block\n" : " blocks\n");
  for (const Object* o : sorted()) {
    const std::uint64_t blocks = o->waited.size() + o->waited_other;
    out << "  " << wait_text(o->entry) << '\n'
        << "    " << blocks << (blocks == 1 ? " block, " : " blocks, ") << o->samples
        << (o->samples == 1 ? " sample:" : " samples:");
    for (std::size_t i = 0; i < o->waited.size(); ++i) {
      const Waited& w = o->waited[i];
      out << (i == 0 ? " " : ", ") << w.block << ' ' << w.samples << '/' << w.of << " (" << share_percent(w.samples, w.of)
          << " %)";
    }
    if (o->waited_other > 0) out << ", others " << o->waited_other;
    out << '\n';
  }
  if (overflowed_ > 0) out << overflowed_ << " waits beyond " << kMaxObjects << " objects are not listed\n";
}

void WaitTally::write_json(std::ostream& out) const {
  out << "{\"objects_total\":" << objects_.size() << ",\"blocks\":" << blocks_
      << ",\"waits_overflowed\":" << overflowed_ << ",\"objects\":[";
  bool first = true;
  for (const Object* o : sorted()) {
    const WaitEntry& e = o->entry;
    out << (first ? "" : ",") << "{\"wait\":" << json_string(wait_text(e)) << ",\"kind\":\"" << to_string(e.kind)
        << "\",\"address\":" << hex_text(e.address) << ",\"fd\":" << (e.fd ? std::to_string(*e.fd) : "null")
        << ",\"value\":" << e.value << ",\"text\":" << json_string(e.text) << ",\"owner\":" << owner_json(e.owner)
        << ",\"blocks\":" << o->waited.size() + o->waited_other << ",\"samples\":" << o->samples << ",\"waited\":[";
    for (std::size_t i = 0; i < o->waited.size(); ++i) {
      const Waited& w = o->waited[i];
      out << (i == 0 ? "" : ",") << "{\"block\":" << json_string(w.block) << ",\"samples\":" << w.samples
          << ",\"of\":" << w.of << ",\"percent\":" << share_percent(w.samples, w.of) << '}';
    }
    out << "],\"waited_other\":" << o->waited_other << '}';
    first = false;
  }
  out << "]}";
}

}  // namespace loopcanary::tool
