// SPDX-License-Identifier: MIT
// Binary captures (packet_reader.hpp), decoded as docs/report-format.md ("Binary form") specifies
// them: the scan for packets with its accounting of skipped bytes, and the body decoder.
#include "packet_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "loopcanary/format.hpp"
#include "loopcanary/packet.hpp"
#include "loopcanary/packet_fields.hpp"
#include "loopcanary/assembler.hpp"
#include "loopcanary/watchdog.hpp"

namespace loopcanary::tool {

// The core's types (the tool has a Frame and a Sample of its own, model.hpp).
using CoreFrame = loopcanary::Frame;
using CoreSample = loopcanary::Sample;
using CoreTopStack = loopcanary::TopStack;


// What a decoded record points into: its event descriptor and its names, on the heap so that
// moving the DecodedRecord keeps every pointer valid.
// The names and event descriptors of evidence packets (one per distinct name, stable addresses):
// a watch's samples span packets, so their scope names live as long as the reader, and every
// record assembled from them keeps the pool alive.
struct EvidencePool {
  std::set<std::string> names;
  std::map<std::string, Event> events;
  const char* name(const std::string& s) { return s.empty() ? nullptr : names.insert(s).first->c_str(); }
  const Event* event(const std::string& s) {
    auto it = events.find(s);
    if (it == events.end()) it = events.emplace(s, Event{nullptr, 0}).first;
    it->second.name = it->first.c_str();
    return &it->second;
  }
};

// A stack part (configuration bit 3: an evidence sample's, a block packet's top entry's): the interrupted registers and the stack words.
struct StackPart {
  bool present = false;
  bool has_fp = false;
  std::uint64_t sp = 0, lr = 0, fp = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> words;  // (word offset from sp, value)
};

struct DecodedRecord::Storage {
  std::shared_ptr<const EvidencePool> pool;  // an assembled record's names
  Event event{nullptr, 0};
  Event delayed_by{nullptr, 0};     // a deadline miss's delaying event
  std::vector<Event> health_events;  // a health record's events (sized before pointers are taken)
  std::vector<char> names;
  std::string owner_loops[kWaitObjects > 0 ? kWaitObjects : 1];  // the wait objects' holder loops
  // A block packet with stack evidence (configuration bit 3), until unwind_block: its stack
  // parts, and each top entry's and kept sample's (0: none; i: stack_parts[i - 1]).
  std::vector<StackPart> stack_parts;
  std::vector<std::uint8_t> entry_stacks;
  std::vector<std::uint8_t> sample_stacks;
  bool wide = false;  // 64-bit program counters
};

DecodedRecord::DecodedRecord() : storage_(std::make_unique<Storage>()) {}

void DecodedRecord::begin(bool is_health_record, bool previous) {
  if (!storage_) storage_ = std::make_unique<Storage>();  // moved from
  is_health = is_health_record;
  previous_boot = previous;
  reset_cause = ResetCause::unknown;
  top_innermost = false;
  unwind = UnwindSummary{};
}
DecodedRecord::~DecodedRecord() = default;
DecodedRecord::DecodedRecord(DecodedRecord&&) noexcept = default;
DecodedRecord& DecodedRecord::operator=(DecodedRecord&&) noexcept = default;

namespace {

// The length of `s[0, length)` without a UTF-8 character its end cuts short: a device cuts a
// long name at a byte count (kPacketNameMax), which may fall inside a character; what is left
// of that character is dropped (the name is shown with "..." after it).
std::size_t whole_characters(const char* s, std::size_t length) noexcept {
  std::size_t lead = length;
  for (int k = 0; k < 3 && lead > 0 && (static_cast<unsigned char>(s[lead - 1]) & 0xC0u) == 0x80u; ++k) --lead;
  if (lead == 0) return length;
  const auto b = static_cast<unsigned char>(s[lead - 1]);
  const std::size_t needs = b >= 0xF0u ? 4 : b >= 0xE0u ? 3 : b >= 0xC0u ? 2 : 1;
  return needs > 1 && length - (lead - 1) < needs ? lead - 1 : length;
}

// Every byte of a name or a number in the body is read through this cursor: it never reads
// past the end and records the first fault.
class Body {
 public:
  Body(const std::uint8_t* data, std::size_t size) : begin_(data), p_(data), end_(data + size) {}

  WarningKind kind = WarningKind::malformed_packet;
  std::string what;

  std::size_t offset() const noexcept { return static_cast<std::size_t>(p_ - begin_); }
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }
  const std::uint8_t* here() const noexcept { return p_; }
  void skip(std::size_t n) noexcept { p_ += n; }

  bool fail(WarningKind k, std::size_t at, const char* field, const std::string& why) {
    kind = k;
    what = std::string(k == WarningKind::unknown_config ? "configuration this tool does not know"
                                                         : "malformed packet body") +
           " at body byte " + std::to_string(at) + " (" + field + "): " + why;
    return false;
  }
  bool malformed(std::size_t at, const char* field, const std::string& why) {
    return fail(WarningKind::malformed_packet, at, field, why);
  }

  bool u8(const char* field, std::uint8_t& v) {
    if (p_ == end_) return malformed(offset(), field, "the body ends inside this field");
    v = *p_++;
    return true;
  }

  // A list's count byte, no more than the packet header's `packet_max` (named `packet_limit`; over
  // it the body is malformed) and this build's `build_max` (named `build_limit`; over it the packet
  // is of a configuration this tool does not know, the list counted in `items`).
  bool count(const char* field, std::uint8_t& n, unsigned packet_max, const char* packet_limit,
             const char* items, std::size_t build_max, const char* build_limit) {
    const std::size_t at = offset();
    if (!u8(field, n)) return false;
    if (n > packet_max) {
      return malformed(at, field,
                       std::to_string(n) + " is over the packet's " + packet_limit + " " + std::to_string(packet_max));
    }
    if (n > build_max) {
      return fail(WarningKind::unknown_config, at, field,
                  std::to_string(n) + " " + items + " do not fit this build's " + build_limit + " " +
                      std::to_string(build_max));
    }
    return true;
  }

  // An unsigned LEB128 of at most 10 bytes: bits 0..63 in `low`, bits 64..69 in `high`.
  bool varint(const char* field, std::uint64_t& low, std::uint8_t& high) {
    const std::size_t at = offset();
    low = 0;
    high = 0;
    for (unsigned i = 0;; ++i) {
      if (i == 10) return malformed(at, field, "varint longer than 10 bytes");
      if (p_ == end_) return malformed(at, field, "the body ends inside this field");
      const std::uint8_t b = *p_++;
      const std::uint64_t group = b & 0x7Fu;
      const unsigned shift = 7 * i;
      if (shift < 64) low |= group << shift;
      if (shift + 7 > 64) high = static_cast<std::uint8_t>(high | (group >> (64 - shift)));
      if ((b & 0x80u) == 0) return true;
    }
  }

  // A `uv` of `bits` (16, 32 or 64) bits.
  template <class T>
  bool uv(const char* field, unsigned bits, T& v) {
    const std::size_t at = offset();
    std::uint64_t low = 0;
    std::uint8_t high = 0;
    if (!varint(field, low, high)) return false;
    if (high != 0 || (bits < 64 && (low >> bits) != 0)) {
      return malformed(at, field, "value over the field's " + std::to_string(bits) + " bits");
    }
    v = static_cast<T>(low);
    return true;
  }

  // An `sv` read as a signed value of `bits` (32 or 64) bits, returned modulo 2^64.
  bool sv(const char* field, unsigned bits, std::uint64_t& v) {
    const std::size_t at = offset();
    std::uint64_t z = 0;
    std::uint8_t high = 0;
    if (!varint(field, z, high)) return false;
    if (high != 0) return malformed(at, field, "value over 64 bits");
    // Zigzag: 0, 1, 2, 3 ... → 0, −1, 1, −2 ...
    const std::uint64_t n = (z >> 1) ^ (0 - (z & 1u));
    if (bits < 64) {
      const auto s = static_cast<std::int64_t>(n);
      if (s < std::numeric_limits<std::int32_t>::min() || s > std::numeric_limits<std::int32_t>::max()) {
        return malformed(at, field, "value over the field's signed 32 bits");
      }
    }
    v = n;
    return true;
  }

 private:
  const std::uint8_t* begin_;
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

// A decoder's way out on a fault: copies the cursor's first fault to the caller's `kind` and
// `what` and returns false (`return failed();`).
struct Failed {
  const Body& body;
  WarningKind& kind;
  std::string& what;
  bool operator()() const {
    kind = body.kind;
    what = body.what;
    return false;
  }
};

bool valid_capacity(unsigned value, unsigned max, bool power_of_two) noexcept {
  return value >= 1 && value <= max && (!power_of_two || (value & (value - 1)) == 0);
}

// A name of the string table: where its bytes are in the body.
struct Name {
  std::size_t at = 0;
  std::size_t length = 0;
  bool cut = false;
};

// The configuration byte (bits 0..2 defined), shared by every packet type.
// The configuration byte: bits 0..2 in every packet, bit 3 (stack evidence) in evidence packets
// (`evidence`).
bool read_configuration(Body& b, std::uint8_t& config, bool evidence = false) {
  const std::size_t at = b.offset();
  if (!b.u8("configuration", config)) return false;
  const unsigned known = evidence ? 7u | detail::kConfigurationStackEvidence : 7u;
  if ((config & ~known) != 0) {
    return b.fail(WarningKind::unknown_config, at, "configuration",
                  "byte " + std::to_string(config) + " has bits other than " +
                      (evidence ? "0 to 3" : "0, 1 and 2") + " set");
  }
  return true;
}

// The memory presence byte and one value per set bit, in bit order (version 2).
bool read_memory(Body& b, MemoryReading& memory) {
  std::uint8_t presence = 0;
  const std::size_t at = b.offset();
  if (!b.u8("memory presence", presence)) return false;
  if ((presence >> kMemoryValues) != 0) {
    return b.malformed(at, "memory presence", "bits other than 0.." + std::to_string(kMemoryValues - 1) + " set (" +
                                                  std::to_string(presence) + ")");
  }
  for (unsigned i = 0; i < kMemoryValues; ++i) {
    std::uint64_t value = 0;
    if ((presence & (1u << i)) == 0) continue;
    if (!b.uv("memory value", 64, value)) return false;
    memory.set(static_cast<MemoryValue>(i), value);
  }
  return true;
}

// The string table (count, then the names) into `text`, with `pointers` to each name
// (nullptr: an empty or null name). At least `minimum` names. Bounds first (every name takes
// at least one byte), then the storage.
bool read_strings(Body& b, const std::uint8_t* data, std::uint32_t minimum, std::vector<char>& text,
                  std::vector<const char*>& pointers) {
  std::uint32_t string_count = 0;
  const std::size_t at = b.offset();
  if (!b.uv("string count", 32, string_count)) return false;
  if (string_count < minimum) {
    return b.malformed(at, "string count", std::to_string(string_count) + " is less than " + std::to_string(minimum));
  }
  if (string_count > b.remaining()) {
    return b.malformed(at, "string count", "the body ends inside the string table (" + std::to_string(string_count) +
                                               " names cannot fit the " + std::to_string(b.remaining()) + " bytes left)");
  }
  std::vector<Name> names(string_count);
  std::size_t storage = 1;  // the qualifier's "" when it is empty
  for (Name& n : names) {
    std::uint32_t header = 0;
    const std::size_t where = b.offset();
    if (!b.uv("string length", 32, header)) return false;
    n.length = header >> 1;
    n.cut = (header & 1u) != 0;
    if (n.length > b.remaining()) {
      return b.malformed(where, "string", "the body ends inside this field (a name of " + std::to_string(n.length) +
                                              " bytes, " + std::to_string(b.remaining()) + " left)");
    }
    n.at = b.offset();
    if (std::memchr(b.here(), '\0', n.length) != nullptr) return b.malformed(n.at, "string", "a NUL byte inside a name");
    b.skip(n.length);
    storage += n.length + (n.cut ? 3 : 0) + 1;
  }
  text.assign(storage, '\0');
  pointers.assign(string_count, nullptr);
  std::size_t used = 1;  // text[0] is the empty qualifier
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Name& n = names[i];
    if (n.length == 0 && !n.cut) continue;
    char* s = text.data() + used;
    const char* name = reinterpret_cast<const char*>(data + n.at);
    const std::size_t kept = n.cut ? whole_characters(name, n.length) : n.length;
    std::memcpy(s, name, kept);
    if (n.cut) std::memcpy(s + kept, "...", 3);
    used += n.length + (n.cut ? 3 : 0) + 1;
    pointers[i] = s;
  }
  return true;
}

// A string index in [first, count).
bool string_index(Body& b, const char* field, std::uint64_t index, std::size_t where, std::size_t first,
                  std::size_t count) {
  if (index >= first && index < count) return true;
  return b.malformed(where, field,
                     "string index " + std::to_string(index) + " is not in " + std::to_string(first) + ".." +
                         std::to_string(count - 1));
}

// An enumeration's byte, at most `last`.
bool enumerated(Body& b, const char* field, std::uint8_t& value, std::uint8_t last) {
  const std::size_t at = b.offset();
  if (!b.u8(field, value)) return false;
  if (value > last) return b.malformed(at, field, std::to_string(value) + " is not one of 0.." + std::to_string(last));
  return true;
}

// A Phase byte: deadline_miss (3) from version 2 on.
bool read_phase(Body& b, const char* field, std::uint8_t version, Phase& phase) {
  std::uint8_t value = 0;
  const auto last = static_cast<std::uint8_t>(version >= 2 ? Phase::deadline_miss : Phase::final);
  if (!enumerated(b, field, value, last)) return false;
  phase = static_cast<Phase>(value);
  return true;
}

bool read_cause(Body& b, const char* field, Cause& cause) {
  std::uint8_t value = 0;
  if (!enumerated(b, field, value, static_cast<std::uint8_t>(Cause::starved))) return false;
  cause = static_cast<Cause>(value);
  return true;
}

// A presence or flags byte with bits 0..3 only.
bool four_bits(Body& b, const char* field, std::uint8_t& value) {
  const std::size_t at = b.offset();
  if (!b.u8(field, value)) return false;
  if ((value & ~15u) != 0) return b.malformed(at, field, "bits other than 0..3 set (" + std::to_string(value) + ")");
  return true;
}

// Reads one entry of a list of packet_fields.hpp: `&& (...)` after `true`, so a list expands to
// one condition that stops at the first fault. The scope names the body `b`, the record `r`, the
// packet's format `version` and, for `section` entries, an object `section` whose function of
// the entry's name reads that run.
#define LOOPCANARY_GET(name, codec, bits, since) &&(version < (since) || LOOPCANARY_GET_##codec(name, bits))
#define LOOPCANARY_GET_number(name, bits) b.uv(#name, bits, r.name)
#define LOOPCANARY_GET_byte(name, bits) b.u8(#name, r.name)
#define LOOPCANARY_GET_phase(name, bits) read_phase(b, #name, version, r.name)
#define LOOPCANARY_GET_cause(name, bits) read_cause(b, #name, r.name)
#define LOOPCANARY_GET_flags(name, bits) four_bits(b, #name, r.name)
#define LOOPCANARY_GET_memory(name, bits) read_memory(b, r.name)
#define LOOPCANARY_GET_section(name, bits) section.name()

}  // namespace

namespace {

// What a block decoder writes beside the record (DecodedRecord's storage): the string table's
// text, the event and the delaying event, the wait objects' holder loops, and the stack parts
// unwind_block reads.
struct RecordStorage {
  std::vector<char>& names;
  Event& event;
  Event& delayed_by;
  std::string* owner_loops;  // kWaitObjects of them
  std::vector<StackPart>& stack_parts;
  std::vector<std::uint8_t>& entry_stacks;
  std::vector<std::uint8_t>& sample_stacks;
  bool& wide;
};

bool read_name(Body& b, const char* field, std::string& out, std::size_t max = kPacketNameMax);

// A `str` of at most N - 1 bytes into a fixed array `to` (a wait's text or thread name); a cut
// one ends in "..." within them, after its last whole character.
template <std::size_t N>
bool fixed_text(Body& b, const char* field, char (&to)[N]) {
  std::string text;
  if (!read_name(b, field, text, N - 1)) return false;
  if (text.size() > N - 1) text.replace(whole_characters(text.data(), N - 4), std::string::npos, "...");
  std::memcpy(to, text.c_str(), text.size() + 1);
  return true;
}

// A stack part: presence, the interrupted registers (`wide`: 64-bit) and at most `stack_words`
// words by offset gap.
bool read_stack_part(Body& b, bool wide, unsigned stack_words, StackPart& part) {
  std::uint8_t presence = 0;
  std::size_t at = b.offset();
  if (!b.u8("stack presence", presence)) return false;
  if (presence != 0 && presence != 1 && presence != 3) {
    return b.malformed(at, "stack presence", std::to_string(presence) + " is not 0, 1 or 3");
  }
  if (presence == 0) return true;
  part.present = true;
  part.has_fp = presence == 3;
  const unsigned bits = wide ? 64 : 32;
  if (!b.uv("stack sp", bits, part.sp) || !b.uv("stack lr", bits, part.lr)) return false;
  if (part.has_fp && !b.uv("stack fp", bits, part.fp)) return false;
  std::uint8_t count = 0;
  if (!b.count("stack word count", count, stack_words, "stack words", "stack words", 255, "stack words")) return false;
  std::uint32_t next = 0;  // the lowest offset the next word may have
  for (unsigned i = 0; i < count; ++i) {
    std::uint32_t gap = 0;
    std::uint64_t value = 0;
    at = b.offset();
    if (!b.uv("stack word offset", 16, gap)) return false;
    if (next + gap > 0xFFFFu) return b.malformed(at, "stack word offset", "offset " + std::to_string(next + gap) + " is over 65535");
    if (!b.uv("stack word", bits, value)) return false;
    part.words.emplace_back(next + gap, value);
    next += gap + 1;
  }
  return true;
}

// The body of a block packet (decode_packet_body), section by section in the order
// docs/report-format.md gives them; each returns false with the fault in `b`.
class BlockDecoder {
 public:
  BlockDecoder(const std::uint8_t* data, std::size_t size, std::uint8_t version, DecodedRecord& out,
               RecordStorage storage)
      : b(data, size), data_(data), version_(version), out_(out), storage_(storage), r_(out.record) {}

  bool decode(bool previous_boot) {
    return (!previous_boot || reset_cause()) && known_version() && configuration() && scalars() && strings() &&
           stages() && top_entries() && samples() && wait_part() && at_end();
  }

  Body b;

 private:
  bool reset_cause() {
    std::uint8_t cause = 0;
    const std::size_t at = b.offset();
    if (!b.u8("reset cause", cause)) return false;
    if (cause > static_cast<std::uint8_t>(ResetCause::brown_out)) {
      return b.malformed(at, "reset cause", std::to_string(cause) + " is not one of 0..6");
    }
    out_.reset_cause = static_cast<ResetCause>(cause);
    return true;
  }

  bool known_version() {
    if (version_ >= kPacketVersionOldest && version_ <= kPacketVersionNewest) return true;
    b.fail(WarningKind::unknown_config, 0, "format version",
           std::to_string(version_) + " is not one this tool reads (" + std::to_string(kPacketVersionOldest) + ".." +
               std::to_string(kPacketVersionNewest) + ")");
    return false;
  }

  // The configuration byte and the capacities the device was built with.
  bool configuration() {
    std::size_t at = b.offset();
    if (!read_configuration(b, config_, true)) return false;
    if ((config_ & detail::kConfigurationStackEvidence) != 0 && version_ < 4) {
      return b.fail(WarningKind::unknown_config, at, "configuration",
                    "stack evidence (bit 3) in a version " + std::to_string(version_) + " packet (4 and later)");
    }
    const bool pc64 = (config_ & 1u) != 0;
    if (pc64 && sizeof(CoreFrame) < 8) {
      b.fail(WarningKind::unknown_config, at, "configuration", "64-bit program counters on a host with 32-bit pointers");
      return false;
    }
    pc_bits_ = pc64 ? 64 : 32;
    pc_mask_ = pc64 ? ~std::uint64_t{0} : 0xFFFFFFFFu;
    at = b.offset();
    if (!b.u8("max samples", max_samples_)) return false;
    if (!valid_capacity(max_samples_, 128, true)) {
      b.fail(WarningKind::unknown_config, at, "max samples", std::to_string(max_samples_) + " is not a power of two in 1..128");
      return false;
    }
    at = b.offset();
    if (!b.u8("max frames", max_frames_)) return false;
    if (!valid_capacity(max_frames_, 64, false)) {
      b.fail(WarningKind::unknown_config, at, "max frames", std::to_string(max_frames_) + " is not in 1..64");
      return false;
    }
    at = b.offset();
    if (!b.u8("top frames", top_frames_)) return false;
    if (!valid_capacity(top_frames_, 64, false)) {
      b.fail(WarningKind::unknown_config, at, "top frames", std::to_string(top_frames_) + " is not in 1..64");
      return false;
    }
    if (version_ < 2) return true;  // version 1 has neither stages nor memory values
    at = b.offset();
    if (!b.u8("max stages", max_stages_)) return false;
    if (max_stages_ > 16) {  // 0: a build without stages
      b.fail(WarningKind::unknown_config, at, "max stages", std::to_string(max_stages_) + " is not in 0..16");
      return false;
    }
    if ((config_ & detail::kConfigurationStackEvidence) == 0) return true;
    at = b.offset();
    if (!b.u8("stack words", stack_words_)) return false;
    if (stack_words_ == 0) return b.malformed(at, "stack words", "0 with stack evidence (1..255)");
    storage_.wide = pc64;
    return true;
  }

  // The scalars before the string table (LOOPCANARY_BLOCK_PACKET_FIELDS).
  bool scalars() {
    BlockRecord& r = r_;
    const std::uint8_t version = version_;
    BlockDecoder& section = *this;
    return true LOOPCANARY_BLOCK_PACKET_FIELDS(LOOPCANARY_GET);
  }

  // The end as its zigzag difference from start + duration_ticks; tick arithmetic modulo 2^32,
  // as on the device.
  bool end() {
    std::uint64_t adjust = 0;
    if (!b.sv("end adjustment", 32, adjust)) return false;
    r_.end = static_cast<tick_t>(r_.start + static_cast<std::uint32_t>(r_.duration_ticks) +
                                 static_cast<std::uint32_t>(adjust));
    return true;
  }

  // Version 2: the delaying dispatch of a deadline miss, and its event's string index (checked
  // against the string table below) when there is one.
  bool delayed_by() {
    const std::size_t at = b.offset();
    if (!b.uv("delayed_by_dispatch", 32, r_.delayed_by_dispatch)) return false;
    if (r_.delayed_by_dispatch != 0 && r_.phase != Phase::deadline_miss) {
      return b.malformed(at, "delayed_by_dispatch", std::to_string(r_.delayed_by_dispatch) + " on a " +
                                                        to_string(r_.phase) + " record (deadline_miss only)");
    }
    delayed_by_at_ = b.offset();
    return r_.delayed_by_dispatch == 0 || b.uv("delayed-by event", 32, delayed_by_index_);
  }

  // The presence byte, then each present CPU value.
  bool cpu() {
    std::uint8_t presence = 0;
    if (!four_bits(b, "presence", presence)) return false;
    r_.has_thread_cpu = (presence & 1u) != 0;
    r_.has_thread_wait = (presence & 2u) != 0;
    return (!r_.has_thread_cpu || b.uv("thread_cpu_us", 64, r_.thread_cpu_us)) &&
           (!r_.has_thread_wait || b.uv("thread_wait_us", 64, r_.thread_wait_us)) &&
           ((presence & 4u) == 0 || b.uv("system_busy_permille", 16, r_.system_busy_permille)) &&
           ((presence & 8u) == 0 || b.uv("process_permille", 16, r_.process_permille));
  }

  // The string table: qualifier, loop and event, then the delaying event's, the stages' and the
  // scopes' names the indices below refer to.
  bool strings() {
    std::vector<char>& text = storage_.names;
    if (!read_strings(b, data_, 3, text, pointers_)) return false;
    string_count_ = static_cast<std::uint32_t>(pointers_.size());
    r_.qualifier = pointers_[0] != nullptr ? pointers_[0] : text.data();
    r_.loop = pointers_[1];
    storage_.event = Event{pointers_[2], 0};
    r_.event = &storage_.event;
    if (r_.delayed_by_dispatch != 0) {
      if (!string_index(b, "delayed-by event", delayed_by_index_, delayed_by_at_, 2, string_count_)) return false;
      storage_.delayed_by = Event{pointers_[delayed_by_index_], 0};
      r_.delayed_by = &storage_.delayed_by;
    }
    return true;
  }

  bool scope_index(const char* field, std::uint64_t index, std::size_t where, CoreFrame& frame) {
    if (!string_index(b, field, index, where, 3, string_count_)) return false;
    frame = reinterpret_cast<CoreFrame>(pointers_[static_cast<std::size_t>(index)]);
    return true;
  }

  // Stages (version 2): a name index and the stage's ticks each.
  bool stages() {
    if (version_ < 2) return true;
    if (!b.count("stage_count", r_.stage_count, max_stages_, "max stages", "stages", kMaxStages,
                 "LOOPCANARY_MAX_STAGES")) {
      return false;
    }
    for (std::uint8_t i = 0; i < r_.stage_count; ++i) {
      std::uint32_t index = 0;
      const std::size_t at = b.offset();
      if (!b.uv("stage name", 32, index)) return false;
      if (!string_index(b, "stage name", index, at, 3, string_count_)) return false;
      r_.stages[i].name = pointers_[index];
      if (!b.uv("stage ticks", 32, r_.stages[i].ticks)) return false;
    }
    return true;
  }

  // A stack's frames (a top entry's, version 3, or a sample's): the counts, the scopes' string
  // indices, each PC as the zigzag difference from the one at its depth in `previous`.
  bool frames(std::uint8_t& scope_count, std::uint8_t& pc_count, CoreFrame* frames, std::uint8_t previous_scopes,
              std::uint8_t previous_pcs, const CoreFrame* previous) {
    std::size_t at = b.offset();
    if (!b.u8("scope_count", scope_count) || !b.u8("pc_count", pc_count)) return false;
    const unsigned count = unsigned{scope_count} + pc_count;
    if (count > max_frames_) {
      return b.malformed(at, "scope_count + pc_count",
                         std::to_string(count) + " frames are over the packet's max frames " + std::to_string(max_frames_));
    }
    if (count > kMaxFrames) {
      b.fail(WarningKind::unknown_config, at, "scope_count + pc_count",
             std::to_string(count) + " frames do not fit this build's LOOPCANARY_MAX_FRAMES " + std::to_string(kMaxFrames));
      return false;
    }
    for (std::uint8_t f = 0; f < scope_count; ++f) {
      std::uint32_t index = 0;
      at = b.offset();
      if (!b.uv("scope", 32, index) || !scope_index("scope", index, at, frames[f])) return false;
    }
    for (std::uint8_t f = 0; f < pc_count; ++f) {
      std::uint64_t delta_pc = 0;
      if (!b.sv("pc", pc_bits_, delta_pc)) return false;
      const std::uint64_t base = previous != nullptr && f < previous_pcs ? previous[previous_scopes + f] : 0;
      frames[scope_count + f] = static_cast<CoreFrame>((base + delta_pc) & pc_mask_);
    }
    return true;
  }

  // The stack table: the sample counters, then each entry.
  bool top_entries() {
    BlockRecord& r = r_;
    const std::uint8_t version = version_;
    if (!(true LOOPCANARY_BLOCK_PACKET_SAMPLE_FIELDS(LOOPCANARY_GET))) return false;
    if (!b.count("top_count", r_.top_count, top_frames_, "top frames", "entries", kTopFrames, "LOOPCANARY_TOP_FRAMES")) {
      return false;
    }
    if (!b.uv("top_other", 32, r_.top_other)) return false;
    if (stack_words_ != 0 && !stack_parts()) return false;
    for (std::uint8_t i = 0; i < r_.top_count; ++i) {
      if (!(version_ >= 3 ? top_entry(i) : innermost_entry(r_.top[i]))) return false;
    }
    out_.top_innermost = version_ < 3;
    return true;
  }

  // Version 3: count, frames, the range of the innermost PC.
  bool top_entry(std::uint8_t i) {
    CoreTopStack& t = r_.top[i];
    const CoreTopStack* before = i == 0 ? nullptr : &r_.top[i - 1];
    if (!b.uv("top count", 32, t.count)) return false;
    if (!frames(t.scope_count, t.pc_count, t.frames, before != nullptr ? before->scope_count : 0,
                before != nullptr ? before->pc_count : 0, before != nullptr ? before->frames : nullptr)) {
      return false;
    }
    t.leaf_high = 0;
    if (t.pc_count != 0) {
      std::uint64_t span = 0;
      const std::size_t at = b.offset();
      if (!b.uv("top leaf range", pc_bits_, span)) return false;
      const std::uint64_t low = t.frames[t.scope_count];
      if (span > (pc_mask_ - low)) {
        return b.malformed(at, "top leaf range", "the highest innermost PC is over " + std::to_string(pc_bits_) + " bits");
      }
      t.leaf_high = static_cast<CoreFrame>(low + span);
    }
    return stack_words_ == 0 || stack_slot("top stack", storage_.entry_stacks);
  }

  // With stack evidence: the count of stack parts (at most the top entries), then each part.
  bool stack_parts() {
    std::uint8_t count = 0;
    if (!b.count("stack count", count, r_.top_count, "top_count", "stack parts", 255, "top entries")) return false;
    storage_.stack_parts.resize(count);
    for (StackPart& part : storage_.stack_parts) {
      if (!read_stack_part(b, pc_bits_ == 64, stack_words_, part)) return false;
    }
    return true;
  }

  // With stack evidence: a top entry's or a sample's stack part (0: none; i: part i), into `to`.
  bool stack_slot(const char* field, std::vector<std::uint8_t>& to) {
    std::uint8_t slot = 0;
    const std::size_t at = b.offset();
    if (!b.u8(field, slot)) return false;
    if (slot > storage_.stack_parts.size()) {
      return b.malformed(at, field,
                         std::to_string(slot) + " is over the stack count " + std::to_string(storage_.stack_parts.size()));
    }
    to.push_back(slot);
    return true;
  }

  // Versions 1 and 2: the innermost frame only, key = (value << 1) | is_scope (65 bits for
  // 64-bit PCs), then the count.
  bool innermost_entry(CoreTopStack& t) {
    std::uint64_t low = 0;
    std::uint8_t high = 0;
    const std::size_t at = b.offset();
    if (!b.varint("top key", low, high)) return false;
    const std::uint64_t value = (low >> 1) | (static_cast<std::uint64_t>(high) << 63);
    if ((high >> 1) != 0 || (value & ~pc_mask_) != 0) {
      return b.malformed(at, "top key", "value over " + std::to_string(pc_bits_) + " bits");
    }
    const bool is_scope = (low & 1u) != 0;
    t.scope_count = is_scope ? 1 : 0;
    t.pc_count = is_scope ? 0 : 1;
    t.leaf_high = 0;
    if (is_scope) {
      if (!scope_index("top key", value, at, t.frames[0])) return false;
    } else {
      t.frames[0] = static_cast<CoreFrame>(value);
      t.leaf_high = t.frames[0];
    }
    return b.uv("top count", 32, t.count);
  }

  // The kept samples: time and sequence as differences, then the frames.
  bool samples() {
    if (!b.count("sample_count", r_.sample_count, max_samples_, "max samples", "samples", kMaxSamples,
                 "LOOPCANARY_MAX_SAMPLES")) {
      return false;
    }
    const std::uint32_t first_seq = 2 * r_.dispatch - 1;  // modulo 2^32
    tick_t at_tick = r_.start;
    for (std::uint8_t i = 0; i < r_.sample_count; ++i) {
      CoreSample& s = r_.samples[i];
      const CoreSample* previous = i == 0 ? nullptr : &r_.samples[i - 1];
      std::uint32_t delta = 0;
      std::uint64_t seq = 0;
      if (!b.uv("sample time", 32, delta) || !b.sv("sample sequence", 32, seq)) return false;
      at_tick = static_cast<tick_t>(at_tick + delta);
      s.at = at_tick;
      s.seq = static_cast<std::uint32_t>(first_seq + static_cast<std::uint32_t>(seq));
      if (!frames(s.scope_count, s.pc_count, s.frames, previous != nullptr ? previous->scope_count : 0,
                  previous != nullptr ? previous->pc_count : 0, previous != nullptr ? previous->frames : nullptr)) {
        return false;
      }
      if (stack_words_ != 0 && !stack_slot("sample stack", storage_.sample_stacks)) return false;
    }
    return true;
  }

  // Version 4: the wait part, when bytes follow the samples (a record that waited on nothing
  // named has none): the count, other, then each object (LOOPCANARY_WAIT_PACKET_FIELDS).
  bool wait_part() {
    if (version_ < 4 || b.remaining() == 0) return true;
    const std::size_t at = b.offset();
    std::uint8_t count = 0;
    if (!b.u8("wait count", count)) return false;
    if (count > kWaitObjects) {
      b.fail(WarningKind::unknown_config, at, "wait count",
             std::to_string(count) + " objects; this build holds " + std::to_string(kWaitObjects) +
                 " (LOOPCANARY_WAIT_OBJECTS)");
      return false;
    }
    if (!b.uv("wait other", 32, r_.wait.other)) return false;
    for (std::uint8_t i = 0; i < count; ++i) {
      if (!wait_object(r_.wait.objects[i], storage_.owner_loops[i])) return false;
      r_.wait.count = static_cast<std::uint8_t>(i + 1u);
    }
    return true;
  }

  // The `section` entries of LOOPCANARY_WAIT_PACKET_FIELDS, for one object `r`.
  struct WaitSections {
    BlockDecoder& d;
    WaitSeen& r;
    std::string& owner_loop;

    bool kind() {
      std::uint8_t value = 0;
      const std::size_t at = d.b.offset();
      if (!enumerated(d.b, "wait kind", value, static_cast<std::uint8_t>(WaitKind::syscall))) return false;
      if (value == 0) return d.b.malformed(at, "wait kind", "0 (none) is no wait object");
      r.object.kind = static_cast<WaitKind>(value);
      return true;
    }
    bool fd() {
      std::uint64_t fd = 0;
      if (!d.b.uv("wait fd", 32, fd)) return false;
      const std::size_t at = d.b.offset();
      if (fd > 0x8000'0000u) return d.b.malformed(at, "wait fd", std::to_string(fd - 1) + " is over 2^31 - 1");
      r.object.fd = fd == 0 ? -1 : static_cast<std::int32_t>(fd - 1);
      return true;
    }
    bool text() { return fixed_text(d.b, "wait text", r.object.text); }
    bool owner_names() {
      if (r.object.owner == 0) return true;
      if (!fixed_text(d.b, "wait owner name", r.object.owner_name) || !read_name(d.b, "wait owner loop", owner_loop)) {
        return false;
      }
      r.owner_loop = owner_loop.empty() ? nullptr : owner_loop.c_str();
      return true;
    }
    bool holder_frames() {
      if (!d.b.count("holder frames", r.holder_pc_count, d.max_frames_, "max frames", "frames", kMaxFrames,
                     "LOOPCANARY_MAX_FRAMES")) {
        return false;
      }
      for (std::uint8_t f = 0; f < r.holder_pc_count; ++f) {
        std::uint64_t pc = 0;
        if (!d.b.uv("holder frame", d.pc_bits_, pc)) return false;
        r.holder_frames[f] = static_cast<CoreFrame>(pc);
      }
      return true;
    }
    bool chain() {
      std::uint8_t head = 0;
      const std::size_t at = d.b.offset();
      if (!d.b.u8("wait chain", head)) return false;
      if ((head >> 1) > kWaitChainMax) {
        return d.b.malformed(at, "wait chain", std::to_string(head >> 1) + " hops, over " + std::to_string(kWaitChainMax));
      }
      r.chain_count = static_cast<std::uint8_t>(head >> 1);
      r.deadlock = (head & 1u) != 0;
      for (std::uint8_t h = 0; h < r.chain_count; ++h) {
        WaitHop& hop = r.chain[h];
        if (!d.b.uv("chain address", 64, hop.address) || !d.b.uv("chain owner", 32, hop.owner)) return false;
        if (hop.owner != 0 && !fixed_text(d.b, "chain owner name", hop.owner_name)) return false;
      }
      return true;
    }
  };

  bool wait_object(WaitSeen& r, std::string& owner_loop) {
    const std::uint8_t version = version_;
    WaitSections section{*this, r, owner_loop};
    return true LOOPCANARY_WAIT_PACKET_FIELDS(LOOPCANARY_GET);
  }

  bool at_end() {
    if (b.remaining() != 0) {
      return b.malformed(b.offset(), "end", std::to_string(b.remaining()) + " bytes after the last sample");
    }
    // Configuration bit 2: the device left the derived fields to the host; the default cause rule.
    if ((config_ & 4u) != 0) derive(r_, CauseRule{});
    return true;
  }

  const std::uint8_t* data_;
  const std::uint8_t version_;
  DecodedRecord& out_;
  RecordStorage storage_;
  BlockRecord& r_;
  std::uint8_t config_ = 0, max_samples_ = 0, max_frames_ = 0, top_frames_ = 0, max_stages_ = 0;
  std::uint8_t stack_words_ = 0;  // with configuration bit 3: 1..255
  unsigned pc_bits_ = 32;
  std::uint64_t pc_mask_ = 0xFFFFFFFFu;
  std::uint32_t delayed_by_index_ = 0;
  std::size_t delayed_by_at_ = 0;
  std::vector<const char*> pointers_;
  std::uint32_t string_count_ = 0;
};

// The `section` entries of LOOPCANARY_HEALTH_PACKET_FIELDS.
struct HealthSections {
  Body& b;
  HealthRecord& r;

  // The window: end is start + window, modulo 2^32 as on the device.
  bool end() {
    std::uint32_t window = 0;
    if (!b.uv("window", 32, window)) return false;
    r.end = static_cast<tick_t>(r.start + window);
    return true;
  }
  // idle_ticks + 1 (up to 2^32), or 0 without an idle reading.
  bool idle_ticks() {
    std::uint64_t idle = 0;
    if (!b.uv("idle", 33, idle)) return false;
    r.has_idle = idle != 0;
    r.idle_ticks = r.has_idle ? static_cast<tick_t>(idle - 1) : 0;
    return true;
  }
  // The non-zero buckets, increasing.
  bool histogram() {
    std::uint8_t buckets = 0;
    std::size_t at = b.offset();
    if (!b.u8("histogram count", buckets)) return false;
    if (buckets > kHistogramBuckets) {
      return b.malformed(at, "histogram count", std::to_string(buckets) + " is over " + std::to_string(kHistogramBuckets));
    }
    int previous = -1;
    for (std::uint8_t i = 0; i < buckets; ++i) {
      std::uint8_t bucket = 0;
      at = b.offset();
      if (!b.u8("histogram bucket", bucket)) return false;
      if (bucket >= kHistogramBuckets || static_cast<int>(bucket) <= previous) {
        return b.malformed(at, "histogram bucket",
                           std::to_string(bucket) + " is not in " + std::to_string(previous + 1) + ".." +
                               std::to_string(kHistogramBuckets - 1) + " (buckets increase)");
      }
      previous = bucket;
      if (!b.uv("histogram count", 32, r.histogram[bucket])) return false;
    }
    return true;
  }
};

// A health packet's scalars before its string table (LOOPCANARY_HEALTH_PACKET_FIELDS).
bool read_health_scalars(Body& b, std::uint8_t version, HealthRecord& r) {
  HealthSections section{b, r};
  return true LOOPCANARY_HEALTH_PACKET_FIELDS(LOOPCANARY_GET);
}

// One event's values after its name (LOOPCANARY_EVENT_HEALTH_PACKET_FIELDS).
bool read_event_health(Body& b, std::uint8_t version, EventHealthWindow& r) {
  return true LOOPCANARY_EVENT_HEALTH_PACKET_FIELDS(LOOPCANARY_GET);
}

}  // namespace

bool decode_packet_body(const std::uint8_t* data, std::size_t size, std::uint8_t version, bool previous_boot,
                        DecodedRecord& out, WarningKind& kind, std::string& what) {
  out.begin(false, previous_boot);
  out.record = BlockRecord{};
  DecodedRecord::Storage& storage = *out.storage_;
  storage.stack_parts.clear();
  storage.entry_stacks.clear();
  storage.sample_stacks.clear();
  storage.wide = false;
  BlockDecoder decoder(data, size, version, out,
                       RecordStorage{storage.names, storage.event, storage.delayed_by, storage.owner_loops,
                                     storage.stack_parts, storage.entry_stacks, storage.sample_stacks, storage.wide});
  if (decoder.decode(previous_boot)) return true;
  return Failed{decoder.b, kind, what}();
}

bool decode_health_body(const std::uint8_t* data, std::size_t size, std::uint8_t version, DecodedRecord& out,
                        WarningKind& kind, std::string& what) {
  Body b(data, size);
  const Failed failed{b, kind, what};
  out.begin(true, false);
  out.health = HealthRecord{};
  HealthRecord& h = out.health;
  if (version < 2) {  // health packets exist from version 2 on, unchanged since
    b.fail(WarningKind::unknown_config, 0, "format version",
           "health packets of version " + std::to_string(version) + " are not one this tool reads (2.." +
               std::to_string(kPacketVersionNewest) + ")");
    return failed();
  }
  std::uint8_t config = 0, max_events = 0;
  if (!read_configuration(b, config)) return failed();
  std::size_t at = b.offset();
  if (!b.u8("max health events", max_events)) return failed();
  if (max_events > 32) {
    b.fail(WarningKind::unknown_config, at, "max health events", std::to_string(max_events) + " is not in 0..32");
    return failed();
  }
  if (!read_health_scalars(b, version, h)) return failed();
  std::vector<char>& text = out.storage_->names;
  std::vector<const char*> pointers;
  if (!read_strings(b, data, 2, text, pointers)) return failed();
  h.qualifier = pointers[0] != nullptr ? pointers[0] : text.data();
  h.loop = pointers[1];
  if (!b.count("event_count", h.event_count, max_events, "max health events", "events", kHealthEvents,
               "LOOPCANARY_HEALTH_EVENTS")) {
    return failed();
  }
  std::vector<Event>& events = out.storage_->health_events;
  events.assign(h.event_count, Event{nullptr, 0});
  for (std::uint8_t i = 0; i < h.event_count; ++i) {
    EventHealthWindow& e = h.events[i];
    std::uint32_t index = 0;
    at = b.offset();
    if (!b.uv("event name", 32, index) || !string_index(b, "event name", index, at, 2, pointers.size())) return failed();
    events[i] = Event{pointers[index], 0};
    e.event = &events[i];
    if (!read_event_health(b, version, e)) return failed();
  }
  if (b.remaining() != 0) {
    b.malformed(b.offset(), "end", std::to_string(b.remaining()) + " bytes after the last event");
    return failed();
  }
  return true;
}

// ---- Evidence packets (docs/report-format.md, "Evidence packets").

struct EvidenceState {
  struct Watch {
    bool started = false;
    bool wide = false;            // 64-bit program counters (configuration bit 0)
    std::uint8_t max_frames = 0;  // the device's
    std::uint8_t stack_words = 0; // the device's LOOPCANARY_STACK_WORDS (configuration bit 3; else 0)
    WatchSamples samples{};
    UnwindSummary unwind;         // of its samples' stack evidence
  };
  std::shared_ptr<const StackUnwind> unwind;  // null: samples are not unwound
  std::map<std::uint8_t, Watch> watches;
  std::shared_ptr<EvidencePool> pool = std::make_shared<EvidencePool>();
  std::set<int> unwind_warned;  // ArmUnwindStatus values warned (once each)
  bool previous_boot = false;  // from a `boot` packet of kind 0 to the kind 1 of its boot number
  std::uint32_t until_boot = 0;
  ResetCause reset_cause = ResetCause::unknown;
};

std::shared_ptr<EvidenceState> make_evidence_state() { return std::make_shared<EvidenceState>(); }

namespace {

// The device's configuration and capacities that head `watch` and `observation` bodies; each
// capacity must fit this build's.
struct EvidenceConfig {
  std::uint8_t config = 0;
  std::uint8_t max_samples = 0;
  std::uint8_t max_frames = 0;
  std::uint8_t top_frames = 0;
  std::uint8_t max_stages = 0;
  std::uint8_t stack_words = 0;  // with configuration bit 3: 1..255
};

bool read_capacity(Body& b, const char* field, std::uint8_t& v, unsigned least, std::size_t build, const char* limit) {
  const std::size_t at = b.offset();
  if (!b.u8(field, v)) return false;
  if (v < least) return b.malformed(at, field, std::to_string(v) + " is less than " + std::to_string(least));
  if (v > build) {
    return b.fail(WarningKind::unknown_config, at, field,
                  std::to_string(v) + " is over this build's " + limit + " " + std::to_string(build));
  }
  return true;
}

bool read_evidence_config(Body& b, EvidenceConfig& c) {
  if (!(read_configuration(b, c.config, true) &&
        read_capacity(b, "max samples", c.max_samples, 1, kMaxSamples, "LOOPCANARY_MAX_SAMPLES") &&
        read_capacity(b, "max frames", c.max_frames, 1, kMaxFrames, "LOOPCANARY_MAX_FRAMES") &&
        read_capacity(b, "top frames", c.top_frames, 1, kTopFrames, "LOOPCANARY_TOP_FRAMES") &&
        read_capacity(b, "max stages", c.max_stages, 0, kMaxStages, "LOOPCANARY_MAX_STAGES"))) {
    return false;
  }
  if ((c.config & detail::kConfigurationStackEvidence) == 0) return true;
  // Any number of words: the decoder keeps none beyond the sample it reads.
  return read_capacity(b, "stack words", c.stack_words, 1, 255, "stack words");
}

// A `str` (uv (L << 1) | cut, then L bytes, L at most `max`; a cut name gets "...", after its
// last whole character).
bool read_name(Body& b, const char* field, std::string& out, std::size_t max) {
  std::uint32_t header = 0;
  const std::size_t at = b.offset();
  if (!b.uv(field, 32, header)) return false;
  const std::size_t length = header >> 1;
  if (length > max) {
    return b.malformed(at, field, "a name of " + std::to_string(length) + " bytes, over " + std::to_string(max));
  }
  if (length > b.remaining()) {
    return b.malformed(at, field, "the body ends inside this field (a name of " + std::to_string(length) + " bytes, " +
                                      std::to_string(b.remaining()) + " left)");
  }
  if (std::memchr(b.here(), '\0', length) != nullptr) return b.malformed(b.offset(), field, "a NUL byte inside a name");
  out.assign(reinterpret_cast<const char*>(b.here()), length);
  b.skip(length);
  if ((header & 1u) != 0) {
    out.resize(whole_characters(out.data(), length));
    out += "...";
  }
  return true;
}

bool read_cpu(Body& b, TimedCpuReading& r) {
  const std::size_t at = b.offset();
  if (!b.uv("cpu elapsed", 64, r.elapsed) || !b.u8("cpu presence", r.counters.valid)) return false;
  if ((r.counters.valid >> kCpuValues) != 0) {
    return b.malformed(at, "cpu presence", "bits other than 0.." + std::to_string(kCpuValues - 1) + " set");
  }
  for (unsigned i = 0; i < kCpuValues; ++i) {
    if (r.counters.has(static_cast<CpuValue>(i)) && !b.uv("cpu value", 64, r.counters.value[i])) return false;
  }
  return true;
}

bool rule_value(Body& b, const char* field, std::uint16_t& v) {
  const std::size_t at = b.offset();
  if (!b.uv(field, 16, v)) return false;
  if (v == 0 || v > 1000) return b.malformed(at, field, std::to_string(v) + " is not in 1..1000");
  return true;
}

}  // namespace

namespace {

// The end of an evidence packet's body: nothing may follow `after`.
bool at_end(Body& b, const char* after) {
  if (b.remaining() == 0) return true;
  return b.malformed(b.offset(), "end", std::to_string(b.remaining()) + " bytes after " + after);
}

// A warning of evidence for a watch that has not started.
void orphan(const char* what_packet, unsigned watch, WarningKind& kind, std::string& warning) {
  kind = WarningKind::orphan_evidence;
  warning = std::string(what_packet) + " for watch " + std::to_string(watch) +
            ", which has not started (its watch packet was lost or dropped)";
}

// A `boot` packet: where a boot's evidence starts, or where the previous boot's follows.
bool decode_boot(Body& b, EvidenceState& st, WarningKind& kind, std::string& warning) {
  std::uint8_t boot_kind = 0;
  std::uint8_t cause = 0;
  std::size_t at = b.offset();
  if (!b.u8("boot kind", boot_kind)) return false;
  if (boot_kind > 1) return b.malformed(at, "boot kind", std::to_string(boot_kind) + " is not 0 or 1");
  at = b.offset();
  if (!b.u8("reset cause", cause)) return false;
  if (cause > static_cast<std::uint8_t>(ResetCause::brown_out)) {
    return b.malformed(at, "reset cause", std::to_string(cause) + " is not one of 0..6");
  }
  std::uint32_t boot = 0;
  std::uint8_t discarded = 0;
  if (!b.uv("boot", 32, boot)) return false;
  at = b.offset();
  if (boot_kind == 1 && !b.u8("discarded", discarded)) return false;
  if (discarded > 1) return b.malformed(at, "discarded", std::to_string(discarded) + " is not 0 or 1");
  if (!at_end(b, "the boot packet")) return false;
  if (boot_kind == 0) {  // what follows was recorded before boot `boot`
    st.previous_boot = true;
    st.until_boot = boot;
    st.reset_cause = static_cast<ResetCause>(cause);
  } else {
    st.watches.clear();  // a boot starts: no watch has started
    if (st.previous_boot && boot == st.until_boot) st.previous_boot = false;  // the boot that sent them
    // After a power-on the board reported, no ring survives by design: nothing was lost.
    if (discarded != 0 && cause != static_cast<std::uint8_t>(ResetCause::power_on)) {
      kind = WarningKind::box_discarded;
      warning = "the device found no valid evidence ring at boot (power-on or damage): its contents discarded";
    }
  }
  return true;
}

// A `watch` packet: a watch starts on a long dispatch.
bool decode_watch(Body& b, EvidenceState& st) {
  EvidenceConfig c;
  std::uint8_t watch = 0;
  if (!read_evidence_config(b, c) || !b.u8("watch", watch) || !at_end(b, "the watch")) return false;
  EvidenceState::Watch& w = st.watches[watch];
  w.started = true;
  w.wide = (c.config & 1u) != 0;
  w.max_frames = c.max_frames;
  w.stack_words = c.stack_words;
  w.unwind = UnwindSummary{};
  watch_started(w.samples, c.max_samples, c.top_frames);
  return true;
}

// Counts `samples` samples' unwind outcome in `summary`; the first partial and the first
// pc_lr_only of a capture are warned with their reason (the records count every sample by reason).
void count_unwind(EvidenceState& st, UnwindSummary& summary, ArmUnwindStatus status, const std::string& reason,
                  std::uint32_t samples, WarningKind& kind, std::string& warning) {
  summary.add(status, reason, samples);
  if (status == ArmUnwindStatus::unwound || !st.unwind_warned.insert(static_cast<int>(status)).second) return;
  kind = WarningKind::not_unwound;
  warning = std::string("sample stacks left ") + (status == ArmUnwindStatus::partial ? "partial" : "as PC and LR") +
            ": " + reason + " (each record's \"unwind\" counts its samples by reason)";
}

// Why the stack parts of a capture cannot be unwound (`wide`: 64-bit program counters); empty
// when they can.
std::string cannot_unwind(const StackUnwind* unwind, bool wide) {
  if (unwind == nullptr || !unwind->cfi) {
    return unwind != nullptr ? unwind->missing : "no firmware ELF to unwind with (decode --elf)";
  }
  if (wide) return "64-bit program counters: the unwinder reads 32-bit Arm (Thumb) samples only";
  return {};
}

// Unwinds the stack whose innermost program counter is `pc` and whose evidence is `part`, with
// its LR (`lr`) and frame pointer (`fp`) where they are known to be this stack's: an evidence
// sample's own always; a block packet's entry's are its first sample's, LR the same for all of
// them only where the entry's callers hold it (two PCs or more), the frame pointer never.
ArmUnwindResult unwind_part(const ArmCfi& cfi, std::uint64_t pc, const StackPart& part, std::size_t max_frames,
                            bool lr = true, bool fp = true) {
  ArmSample a;
  a.pc = static_cast<std::uint32_t>(pc);
  a.lr = static_cast<std::uint32_t>(part.lr);
  a.has_lr = lr;
  a.sp = static_cast<std::uint32_t>(part.sp);
  a.has_r7 = fp && part.has_fp;
  a.r7 = static_cast<std::uint32_t>(part.fp);
  for (const auto& [offset, value] : part.words) a.stack.emplace_back(offset, static_cast<std::uint32_t>(value));
  return unwind_arm(cfi, a, max_frames);
}

// The program counters of a stack (scopes first, then `pc_count` PCs) replaced by an unwound
// chain (not for pc_lr_only: the device's PC and LR stay).
template <class Stack>
void take_chain(Stack& s, const ArmUnwindResult& r) {
  if (r.status == ArmUnwindStatus::pc_lr_only) return;
  s.pc_count = static_cast<std::uint8_t>(r.frames.size());
  for (std::size_t f = 0; f < r.frames.size(); ++f) s.frames[s.scope_count + f] = r.frames[f].pc;
}

// Unwinds a sample of `w` that carried stack evidence: its program counters become the chain the
// firmware's CFI finds (unwound, partial), or stay the PC and LR the device sent (pc_lr_only).
void unwind_sample(EvidenceState& st, EvidenceState::Watch& w, CoreSample& s, const StackPart& part,
                   WarningKind& kind, std::string& warning) {
  if (!part.present || s.pc_count == 0) return;
  const std::string why = cannot_unwind(st.unwind.get(), w.wide);
  if (!why.empty()) return count_unwind(st, w.unwind, ArmUnwindStatus::pc_lr_only, why, 1, kind, warning);
  const ArmUnwindResult r = unwind_part(*st.unwind->cfi, s.frames[s.scope_count], part, kMaxFrames - s.scope_count);
  take_chain(s, r);
  count_unwind(st, w.unwind, r.status, r.reason, 1, kind, warning);
}

// Program counters of an entry's innermost range unwound one by one at most: a wider range
// (samples in several functions, through a pointer) is not claimed.
constexpr std::uint64_t kEntryRangeMax = 4096;

// The one unwind that holds for every innermost program counter of top entry `t` (every even
// address of its range: each of its samples lay at one), with the entry's stack part; a
// pc_lr_only result with the reason when the addresses unwind differently.
ArmUnwindResult unwind_entry(const ArmCfi& cfi, const CoreTopStack& t, const StackPart& part) {
  const std::uint64_t low = t.frames[t.scope_count];
  const std::size_t max = kMaxFrames - t.scope_count;
  const bool lr = t.pc_count > 1;
  ArmUnwindResult first = unwind_part(cfi, low, part, max, lr, false);
  const auto differs = [&first](const ArmUnwindResult& other) {
    if (other.status != first.status || other.frames.size() != first.frames.size()) return true;
    for (std::size_t f = 1; f < first.frames.size(); ++f) {
      if (other.frames[f].pc != first.frames[f].pc) return true;
    }
    return false;
  };
  bool same = t.leaf_high - low <= kEntryRangeMax;
  for (std::uint64_t pc = low + 2; same && pc <= t.leaf_high; pc += 2) {
    same = !differs(unwind_part(cfi, pc, part, max, lr, false));
  }
  if (same) return first;
  ArmUnwindResult none;
  none.status = ArmUnwindStatus::pc_lr_only;
  none.reason = "a stack table entry's program counters unwind differently with its words";
  return none;
}

// Merges the top entries of `r` that unwinding made equal (the same scopes and callers: the key
// of TopStack), then puts them back in order, most samples first.
void merge_entries(BlockRecord& r) {
  std::uint8_t kept = 0;
  for (std::uint8_t i = 0; i < r.top_count; ++i) {
    const CoreTopStack& t = r.top[i];
    const std::size_t frames = std::size_t{t.scope_count} + t.pc_count;
    const std::size_t any_leaf = t.pc_count > 1 ? t.scope_count : frames;
    CoreTopStack* same = nullptr;
    for (std::uint8_t k = 0; k < kept && same == nullptr; ++k) {
      CoreTopStack& e = r.top[k];
      bool equal = e.scope_count == t.scope_count && e.pc_count == t.pc_count;
      for (std::size_t f = 0; equal && f < frames; ++f) equal = f == any_leaf || e.frames[f] == t.frames[f];
      if (equal) same = &e;
    }
    if (same == nullptr) {
      r.top[kept++] = t;
      continue;
    }
    same->count += t.count;
    if (t.pc_count != 0) {
      same->frames[same->scope_count] = std::min(same->frames[same->scope_count], t.frames[t.scope_count]);
      same->leaf_high = std::max(same->leaf_high, t.leaf_high);
    }
  }
  std::stable_sort(r.top, r.top + kept, [](const CoreTopStack& a, const CoreTopStack& b) { return a.count > b.count; });
  for (std::uint8_t k = kept; k < r.top_count; ++k) r.top[k] = CoreTopStack{};
  r.top_count = kept;
}

}  // namespace

void unwind_block(EvidenceState& st, DecodedRecord& out, WarningKind& kind, std::string& warning) {
  DecodedRecord::Storage& storage = *out.storage_;
  BlockRecord& r = out.record;
  if (storage.entry_stacks.size() != r.top_count) return;  // no stack evidence (or not decoded)
  const std::string why = cannot_unwind(st.unwind.get(), storage.wide);
  const ArmCfi* cfi = why.empty() ? st.unwind->cfi.get() : nullptr;
  const auto part_of = [&storage](std::uint8_t slot) -> const StackPart* {
    const StackPart* part = slot != 0 ? &storage.stack_parts[slot - 1u] : nullptr;
    return part != nullptr && part->present ? part : nullptr;
  };
  for (std::size_t i = 0; cfi != nullptr && i < storage.sample_stacks.size() && i < r.sample_count; ++i) {
    CoreSample& s = r.samples[i];
    const StackPart* part = part_of(storage.sample_stacks[i]);
    if (part == nullptr || s.pc_count == 0) continue;
    take_chain(s, unwind_part(*cfi, s.frames[s.scope_count], *part, kMaxFrames - s.scope_count, s.pc_count > 1, false));
  }
  for (std::uint8_t i = 0; i < r.top_count; ++i) {
    CoreTopStack& t = r.top[i];
    const StackPart* part = part_of(storage.entry_stacks[i]);
    if (part == nullptr || t.pc_count == 0) continue;
    if (cfi == nullptr) {
      count_unwind(st, out.unwind, ArmUnwindStatus::pc_lr_only, why, t.count, kind, warning);
      continue;
    }
    const ArmUnwindResult u = unwind_entry(*cfi, t, *part);
    take_chain(t, u);  // frame 0 is the lowest innermost PC; leaf_high stays
    count_unwind(st, out.unwind, u.status, u.reason, t.count, kind, warning);
  }
  merge_entries(r);
  storage.stack_parts.clear();
  storage.entry_stacks.clear();
  storage.sample_stacks.clear();
}

namespace {

// A `sample` packet: one stack sample of a watch. The rest of a sample of a watch that has not
// started is not read: its watch's configuration says whether a stack part follows.
bool decode_sample(Body& b, EvidenceState& st, WarningKind& kind, std::string& warning) {
  std::uint8_t watch = 0;
  CoreSample s;
  if (!b.u8("watch", watch) || !b.uv("at", 32, s.at) || !b.uv("seq", 32, s.seq)) return false;
  const auto found = st.watches.find(watch);
  const unsigned max_frames = found != st.watches.end() ? found->second.max_frames : kMaxFrames;
  const std::size_t at = b.offset();
  if (!b.u8("scope count", s.scope_count) || !b.u8("pc count", s.pc_count)) return false;
  if (s.scope_count + s.pc_count > max_frames) {
    return b.malformed(at, "frame counts",
                       std::to_string(s.scope_count + s.pc_count) + " frames are over the watch's max frames " +
                           std::to_string(max_frames));
  }
  std::string name;
  for (unsigned f = 0; f < s.scope_count; ++f) {
    if (!read_name(b, "scope", name)) return false;
    const char* interned = st.pool->name(name);
    s.frames[f] = reinterpret_cast<CoreFrame>(interned != nullptr ? interned : "");
  }
  const bool wide = found != st.watches.end() && found->second.wide;
  for (unsigned f = 0; f < s.pc_count; ++f) {
    std::uint64_t pc = 0;
    if (!b.uv("pc", wide ? 64 : 32, pc)) return false;
    s.frames[s.scope_count + f] = static_cast<CoreFrame>(pc);
  }
  if (found == st.watches.end() || !found->second.started) {
    orphan("sample", watch, kind, warning);
    return true;
  }
  EvidenceState::Watch& w = found->second;
  StackPart part;
  if (w.stack_words > 0 && !read_stack_part(b, w.wide, w.stack_words, part)) return false;
  if (!at_end(b, part.present ? "the last stack word" : "the last frame")) return false;
  if (s.scope_count + s.pc_count == 0) return b.malformed(at, "frame counts", "a sample without frames");
  unwind_sample(st, w, s, part, kind, warning);
  add_sample(w.samples, s);
  return true;
}

// The `section` entries of LOOPCANARY_OBSERVATION_PACKET_FIELDS.
struct ObservationSections {
  Body& b;
  Observation& r;
  std::string& delayer;  // the delaying event's name

  bool delayed_by() {
    if (!b.uv("delayed_by_dispatch", 32, r.delayed_by_dispatch)) return false;
    return r.delayed_by_dispatch == 0 || read_name(b, "delayed-by event", delayer);
  }
  // The first and last CPU readings of a watched dispatch.
  bool cpu() { return (r.flags & kFlagUnwatched) != 0 || (read_cpu(b, r.first) && read_cpu(b, r.last)); }
};

// An observation's scalars after the cause rule (LOOPCANARY_OBSERVATION_PACKET_FIELDS), the
// delaying event's name into `delayer`.
bool read_observation_scalars(Body& b, Observation& r, std::string& delayer) {
  const std::uint8_t version = kPacketVersionNewest;  // evidence bodies: unchanged since version 2
  ObservationSections section{b, r, delayer};
  return true LOOPCANARY_OBSERVATION_PACKET_FIELDS(LOOPCANARY_GET);
}

// An `observation` packet into `o` (its names interned in the state's pool), the device's cause
// rule and its qualifier.
bool read_observation(Body& b, EvidenceState& st, Observation& o, CauseRule& rule, const char*& qualifier_name) {
  EvidenceConfig c;
  std::string name;
  std::string delayer;
  if (!read_evidence_config(b, c) || !rule_value(b, "running permille", rule.running_permille) ||
      !rule_value(b, "starved busy permille", rule.starved_busy_permille) ||
      !rule_value(b, "starved wait permille", rule.starved_wait_permille) ||
      !read_observation_scalars(b, o, delayer)) {
    return false;
  }
  std::string qualifier;
  std::string loop;
  std::string event;
  if (!read_name(b, "qualifier", qualifier) || !read_name(b, "loop", loop) || !read_name(b, "event", event)) {
    return false;
  }
  std::uint8_t stages = 0;
  if (!b.count("stage count", stages, c.max_stages, "max stages", "stages", kMaxStages, "LOOPCANARY_MAX_STAGES")) {
    return false;
  }
  if constexpr (kMaxStages > 0) {
    o.note.stage_count = stages;
    for (unsigned i = 0; i < stages; ++i) {
      if (!read_name(b, "stage name", name) || !b.uv("stage start", 32, o.note.stages[i].start)) return false;
      o.note.stages[i].name = st.pool->name(name);
    }
  }
  if (!at_end(b, "the last stage")) return false;
  o.loop = st.pool->name(loop);
  o.note.event = st.pool->event(event);
  if (o.delayed_by_dispatch != 0) o.delayed_by = st.pool->event(delayer);
  qualifier_name = st.pool->name(qualifier);
  return true;
}

}  // namespace

bool decode_evidence(const std::uint8_t* data, std::size_t size, std::uint8_t type, EvidenceState& st,
                     DecodedRecord& out, bool& produced, WarningKind& kind, std::string& what, std::string& warning) {
  Body b(data, size);
  const Failed failed{b, kind, what};
  produced = false;
  warning.clear();
  if (type == static_cast<std::uint8_t>(PacketType::boot)) return decode_boot(b, st, kind, warning) || failed();
  if (type == static_cast<std::uint8_t>(PacketType::watch)) return decode_watch(b, st) || failed();
  if (type == static_cast<std::uint8_t>(PacketType::sample)) return decode_sample(b, st, kind, warning) || failed();

  // An observation: its record assembled from the watch's samples.
  Observation o{};
  CauseRule rule;
  const char* q = nullptr;
  if (!read_observation(b, st, o, rule, q)) return failed();
  const WatchSamples* samples = nullptr;
  const UnwindSummary* unwind = nullptr;
  if (o.watch != kNoWatch) {
    const auto found = st.watches.find(o.watch);
    if (found != st.watches.end() && found->second.started) {
      samples = &found->second.samples;
      unwind = &found->second.unwind;
    } else {
      orphan("observation", o.watch, kind, warning);
    }
  }
  out.begin(false, st.previous_boot);  // top_innermost false: assembled here, by stack
  out.storage_->pool = st.pool;
  if (st.previous_boot) out.reset_cause = st.reset_cause;
  if (unwind != nullptr) out.unwind = *unwind;
  assemble(o, samples, q != nullptr ? q : "", rule, out.record);
  produced = true;
  return true;
}

namespace {

// Formats into `line` with `format` (a core formatter) and `extension`, growing it when the form
// needs more.
template <class Record>
void format_into(FormatResult (*format)(const Record&, char*, std::size_t, const JsonExtension&) noexcept,
                 const Record& record, const JsonExtension& extension, std::string& line) {
  if (line.size() < 4096) line.resize(4096);
  FormatResult result = format(record, &line[0], line.size(), extension);
  if (result.truncated) {
    line.resize(result.needed + 1);
    result = format(record, &line[0], line.size(), extension);
  }
  line.resize(result.length);
  while (!line.empty() && line.back() == '\n') line.pop_back();
}

// "unwind":{"unwound":N,"partial":N,"pc_lr_only":N,"reasons":[{"reason":TEXT,"samples":N}...]}
void write_unwind(TextWriter& w, const UnwindSummary& u) noexcept {
  w.puts(",\"unwind\":{\"unwound\":");
  w.u64(u.unwound);
  w.puts(",\"partial\":");
  w.u64(u.partial);
  w.puts(",\"pc_lr_only\":");
  w.u64(u.pc_lr_only);
  w.puts(",\"reasons\":[");
  bool first = true;
  for (const auto& [reason, samples] : u.reasons) {
    w.puts(first ? "{\"reason\":" : ",{\"reason\":");
    w.json_string(reason.c_str());
    w.puts(",\"samples\":");
    w.u64(samples);
    w.puts("}");
    first = false;
  }
  w.puts("]}");
}

// The decoder's members of a block record: where the packet came from (a previous boot, kept in
// a crash box) and how to read its stack table (docs/tool.md).
void decoder_members(void* context, TextWriter& w) noexcept {
  const auto& decoded = *static_cast<const DecodedRecord*>(context);
  if (decoded.previous_boot) {
    w.puts(",\"previous_boot\":true,\"reset_cause\":");
    w.json_string(to_string(decoded.reset_cause));
  }
  if (decoded.top_innermost) w.puts(",\"top_innermost\":true");
  if (!decoded.unwind.empty()) write_unwind(w, decoded.unwind);
}

}  // namespace

void format_record_json(const DecodedRecord& decoded, std::string& line) {
  if (decoded.is_health) {
    format_into(format_health_json, decoded.health, JsonExtension{}, line);
    return;
  }
  format_into(format_json, decoded.record, JsonExtension{&decoder_members, const_cast<DecodedRecord*>(&decoded)}, line);
}

bool looks_like_capture(const std::uint8_t* data, std::size_t size) noexcept {
  size = std::min(size, kCaptureSniffBytes);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '{') return false;
    if (data[i] == kPacketMagic0 && i + 1 < size && data[i + 1] == kPacketMagic1) return true;
  }
  return false;
}

// ---- The scan (docs/report-format.md, "Reading a capture").

namespace {

constexpr std::size_t kPacketMin = kPacketHeaderBytes + kPacketTrailerBytes;  // 10: an empty body
constexpr std::size_t kPacketMax = kPacketMin + 0xFFFF;
constexpr std::size_t kChunk = std::size_t{1} << 16;

std::uint32_t le32(const std::uint8_t* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

bool crc_matches(const std::uint8_t* p, std::size_t length) noexcept {
  return crc32(p + 2, length - 6) == le32(p + length - 4);
}

// The first magic pair in [from, to), or `to`.
const std::uint8_t* find_magic(const std::uint8_t* from, const std::uint8_t* to) noexcept {
  while (to - from >= 2) {
    const auto* a = static_cast<const std::uint8_t*>(std::memchr(from, kPacketMagic0, static_cast<std::size_t>(to - from - 1)));
    if (a == nullptr) return to;
    if (a[1] == kPacketMagic1) return a;
    from = a + 1;
  }
  return to;
}

// The first whole packet (magic, length inside the data, CRC correct) in [from, to), or `to`.
const std::uint8_t* find_whole_packet(const std::uint8_t* from, const std::uint8_t* to) noexcept {
  for (const std::uint8_t* p = find_magic(from, to); p != to; p = find_magic(p + 1, to)) {
    if (to - p >= static_cast<std::ptrdiff_t>(kPacketMin)) {
      const std::size_t length = packet_size(p);
      if (static_cast<std::size_t>(to - p) >= length && crc_matches(p, length)) return p;
    }
  }
  return to;
}

// The bytes of one capture in a sliding window, addressed by capture offset.
class Window {
 public:
  Window(std::vector<std::uint8_t>& buffer, const CaptureReader::Fill& fill, std::uint64_t& bytes)
      : buffer_(buffer), fill_(fill), bytes_(bytes) {
    if (buffer_.size() < kPacketMax + kChunk) buffer_.resize(kPacketMax + kChunk);
  }
  int error = 0;

  // Makes [offset, offset + n) available (n ≤ kPacketMax), discarding what lies before offset.
  // false when the capture ends (or a read fails) first.
  bool ensure(std::uint64_t offset, std::size_t n) {
    while (end() < offset + n) {
      if (eof_) return false;
      if (offset > base_) {  // keep only what is still needed
        const auto drop = static_cast<std::size_t>(offset - base_);
        std::memmove(buffer_.data(), buffer_.data() + drop, size_ - drop);
        size_ -= drop;
        base_ = offset;
      }
      const long got = fill_(buffer_.data() + size_, std::min(kChunk, buffer_.size() - size_));
      if (got <= 0) {
        if (got < 0) error = errno == 0 ? EIO : errno;
        eof_ = true;
        return false;
      }
      size_ += static_cast<std::size_t>(got);
      bytes_ += static_cast<std::uint64_t>(got);
    }
    return true;
  }
  const std::uint8_t* at(std::uint64_t offset) const noexcept { return buffer_.data() + (offset - base_); }
  std::uint64_t end() const noexcept { return base_ + size_; }
  bool eof() const noexcept { return eof_; }

 private:
  std::vector<std::uint8_t>& buffer_;
  const CaptureReader::Fill& fill_;
  std::uint64_t& bytes_;
  std::uint64_t base_ = 0;  // capture offset of buffer_[0]
  std::size_t size_ = 0;
  bool eof_ = false;
};

// Turns the bytes the scan skips into warnings: a packet that failed its CRC covers the bytes
// its length claims (up to the next whole packet); other skipped bytes are garbage, one warning
// per run.
class Skipped {
 public:
  Skipped(const CaptureReader::OnProblem& on_problem, CaptureStats& stats) : on_problem_(on_problem), stats_(stats) {}

  std::uint64_t cursor = 0;  // the first byte not yet consumed or reported

  void crc_failure(std::uint64_t offset, std::uint64_t claimed_end) {
    if (open_ && offset < open_end_) return;  // inside the bytes of the failed packet before it
    if (open_) report_open(open_end_);
    open_ = true;
    open_at_ = offset;
    open_end_ = claimed_end;
  }
  // Everything skipped before `offset` (a whole packet there, or the end of the capture).
  void flush(std::uint64_t offset) {
    if (open_) report_open(std::min(open_end_, offset));
    garbage(offset);
  }
  void report(WarningKind kind, std::uint64_t offset, std::uint64_t length, const std::string& what) {
    stats_.skipped_bytes += length;
    if (on_problem_) on_problem_(kind, offset, what);
  }

 private:
  void garbage(std::uint64_t to) {
    if (to <= cursor) return;
    const std::uint64_t n = to - cursor;
    report(WarningKind::garbage, cursor, n, std::to_string(n) + (n == 1 ? " byte" : " bytes") + " of garbage skipped (no packet)");
    cursor = to;
  }
  void report_open(std::uint64_t to) {
    open_ = false;
    garbage(open_at_);
    report(WarningKind::crc_mismatch, open_at_, to - open_at_,
           "CRC mismatch: not a whole packet (a damaged or lost byte, or garbage): " + std::to_string(to - open_at_) +
               " bytes skipped");
    cursor = to;
  }
  const CaptureReader::OnProblem& on_problem_;
  CaptureStats& stats_;
  bool open_ = false;
  std::uint64_t open_at_ = 0;
  std::uint64_t open_end_ = 0;
};

// What one whole packet gave: read (a record in `record` when `produced`; evidence packets may
// produce none), with a warning in `what` when it is not empty; or not read (`kind`, `what`: the
// packet is skipped).
struct PacketOutcome {
  bool read = false;
  bool produced = false;
  bool evidence = false;
  WarningKind kind{};
  std::string what;
};

// Decodes the whole packet (CRC checked) of `length` bytes at `packet` by its version and type.
PacketOutcome decode_whole(const std::uint8_t* packet, std::size_t length, std::shared_ptr<EvidenceState>& evidence,
                           DecodedRecord& record) {
  PacketOutcome o;
  const std::uint8_t version = packet[2];
  const std::uint8_t type = packet[3];
  const std::uint8_t* body = packet + kPacketHeaderBytes;
  const std::size_t body_size = length - kPacketMin;
  if (version < kPacketVersionOldest || version > kPacketVersionNewest) {
    o.kind = WarningKind::unknown_version;
    o.what = "packet format version " + std::to_string(version) + " (this tool reads " +
             std::to_string(kPacketVersionOldest) + " to " + std::to_string(kPacketVersionNewest) +
             "): " + std::to_string(length) + "-byte packet skipped";
    return o;
  }
  if (version >= 2 && type >= static_cast<std::uint8_t>(PacketType::watch) &&
      type <= static_cast<std::uint8_t>(PacketType::boot)) {
    if (!evidence) evidence = make_evidence_state();
    std::string warning;
    o.evidence = true;
    o.read = decode_evidence(body, body_size, type, *evidence, record, o.produced, o.kind, o.what, warning);
    if (!o.read) o.what += ": packet skipped";
    else o.what = std::move(warning);
    return o;
  }
  const bool health = type == static_cast<std::uint8_t>(PacketType::health) && version >= 2;
  const bool previous_boot = type == static_cast<std::uint8_t>(PacketType::previous_boot);
  if (type != static_cast<std::uint8_t>(PacketType::block) && !previous_boot && !health) {
    o.kind = WarningKind::unknown_type;
    o.what = "unknown packet type " + std::to_string(type) +
             (version < 2 ? " in format version " + std::to_string(version) : "") + ": " + std::to_string(length) +
             "-byte packet skipped";
    return o;
  }
  o.read = health ? decode_health_body(body, body_size, version, record, o.kind, o.what)
                  : decode_packet_body(body, body_size, version, previous_boot, record, o.kind, o.what);
  if (!o.read) o.what += ": packet skipped";
  o.produced = o.read;
  if (o.read && !health) {  // its stack evidence, if any (a warning in `what`, as for evidence)
    if (!evidence) evidence = make_evidence_state();
    unwind_block(*evidence, record, o.kind, o.what);
  }
  return o;
}

}  // namespace

CaptureReader::CaptureReader() = default;

void CaptureReader::set_unwind(std::shared_ptr<const StackUnwind> unwind) {
  if (!evidence_) evidence_ = make_evidence_state();
  evidence_->unwind = std::move(unwind);
}

void UnwindSummary::add(ArmUnwindStatus status, const std::string& reason, std::uint32_t samples) {
  (status == ArmUnwindStatus::unwound ? unwound : status == ArmUnwindStatus::partial ? partial : pc_lr_only) += samples;
  if (reason.empty()) return;
  const bool room = reasons.size() < kMaxReasons || reasons.count(reason) != 0;
  reasons[room ? reason : kOtherReasons] += samples;
}

int CaptureReader::read(const Fill& fill, const OnRecord& on_record, const OnProblem& on_problem) {
  ++stats_.captures;
  Window w(window_, fill, stats_.bytes);
  Skipped skipped(on_problem, stats_);
  std::uint64_t scan = 0;
  std::uint64_t packet_ahead = 0;  // offset of a whole packet found after a torn candidate
  for (;;) {
    if (!w.ensure(scan, 2)) break;
    const std::uint8_t* from = w.at(scan);
    const std::uint8_t* to = w.at(w.end());
    const std::uint8_t* magic = find_magic(from, to);
    if (magic == to) {
      scan = w.end() - 1;  // the last byte may start a magic pair
      continue;
    }
    const std::uint64_t p = scan + static_cast<std::uint64_t>(magic - from);
    std::size_t length = kPacketMin;
    const bool header = w.ensure(p, kPacketMin);
    if (header) length = packet_size(w.at(p));
    if (!header || !w.ensure(p, length)) {
      // It passes the end of the capture: the torn tail, unless a whole packet follows (then
      // the magic was garbage, or the length is damaged).
      if (p >= packet_ahead) {
        const std::uint8_t* whole = find_whole_packet(w.at(p + 1), w.at(w.end()));
        if (whole != w.at(w.end())) packet_ahead = p + 1 + static_cast<std::uint64_t>(whole - w.at(p + 1));
      }
      if (p < packet_ahead) {
        scan = p + 1;
        continue;
      }
      skipped.flush(p);
      const std::uint64_t have = w.end() - p;
      skipped.report(WarningKind::torn_tail, p, have,
                     header ? "the capture ends inside a packet (" + std::to_string(have) + " of its " +
                                  std::to_string(length) + " bytes): torn last packet skipped"
                            : "the capture ends inside a packet header (" + std::to_string(have) +
                                  " bytes): torn last packet skipped");
      skipped.cursor = w.end();
      scan = w.end();
      break;
    }
    const std::uint8_t* packet = w.at(p);
    if (!crc_matches(packet, length)) {
      skipped.crc_failure(p, p + length);
      scan = p + 1;
      continue;
    }
    // A whole packet.
    skipped.flush(p);
    ++stats_.packets;
    const PacketOutcome outcome = decode_whole(packet, length, evidence_, record_);
    if (!outcome.read) {
      skipped.report(outcome.kind, p, length, outcome.what);
    } else {
      stats_.evidence += outcome.evidence ? 1u : 0u;
      ++stats_.decoded;
      stats_.decoded_bytes += length;
      if (!outcome.what.empty() && on_problem) on_problem(outcome.kind, p, outcome.what);
      if (outcome.produced) {
        record_.offset = p;
        if (on_record) on_record(record_);
      }
    }
    scan = p + length;
    skipped.cursor = scan;
  }
  skipped.flush(w.end());
  return w.error;
}

void CaptureReader::read(const std::uint8_t* data, std::size_t size, const OnRecord& on_record,
                         const OnProblem& on_problem) {
  std::size_t done = 0;
  read(
      [&](std::uint8_t* to, std::size_t n) -> long {
        n = std::min(n, size - done);
        if (n > 0) std::memcpy(to, data + done, n);
        done += n;
        return static_cast<long>(n);
      },
      on_record, on_problem);
}

}  // namespace loopcanary::tool
