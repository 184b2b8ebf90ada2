// SPDX-License-Identifier: MIT
// Fuzz target: the host tool's binary capture reader (sim/tool/packet_reader.hpp). The input is
// a capture. It is read three ways: whole from memory; through the streaming Fill in reads of
// 1 to 300 bytes; and, when it starts with a packet header, that packet's body (as long as its
// length field says, cut at the input's end) is given to decode_packet_body (decode_health_body
// for a type 3 header, decode_evidence with a fresh state for types 4 to 7) with its CRC not
// checked, so that mutated bodies reach the decoder. The reads unwind samples that carry stack
// evidence with a small CFI (arm_cfi_fixture.hpp). Asserts: a record's unwound samples are
// among its samples taken; every problem names a byte offset
// inside the capture; the decoded packets and the skipped bytes add up to the capture, and the
// records' packets are among the decoded ones (evidence packets make no record of their own); split
// reads give the same records, problems and counts as the whole read; a record that decodes
// formats into a JSON line the tool's JSON Lines parser (parse_line) reads back, into the same
// model, field by field, as the record taken into it directly (block_log_from, health_log_from).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "arm_cfi_fixture.hpp"
#include "fuzz_check.hpp"
#include "model.hpp"
#include "packet_reader.hpp"
#include "same_record.hpp"

namespace {

namespace lc = loopcanary;
namespace lt = loopcanary::tool;

struct Problem {
  lt::WarningKind kind;
  std::uint64_t offset;
  std::string what;
  bool operator==(const Problem& o) const { return kind == o.kind && offset == o.offset && what == o.what; }
};

struct Result {
  std::vector<std::string> lines;  // the records' JSON lines, with their offsets
  std::vector<Problem> problems;
  std::uint64_t packet_bytes = 0;  // bytes of the decoded packets
  lt::CaptureStats stats;
};

// The decoded record's JSON line must read back as a record (block or health), the same as the
// record taken into the model directly.
void check_reads_back(const lt::DecodedRecord& decoded, const std::string& line) {
  static lt::LogRecord record;
  static lt::HealthLog health;
  static lt::LogRecord direct;
  static lt::HealthLog direct_health;
  lt::LineKind which{};
  lt::WarningKind kind{};
  std::string what;
  FUZZ_CHECK(lt::parse_line(line.data(), line.size(), record, health, which, kind, what),
             "a decoded packet's JSON line does not read back (%s: %s): %s", lt::to_string(kind), what.c_str(),
             line.c_str());
  FUZZ_CHECK((which == lt::LineKind::health) == decoded.is_health, "a packet's record reads back as another kind: %s",
             line.c_str());
  std::string difference;
  if (decoded.is_health) {
    lt::health_log_from(decoded.health, direct_health);
    difference = lt::test::first_difference(direct_health, health);
  } else {
    lt::block_log_from(decoded.record, decoded.top_innermost, direct);
    difference = lt::test::first_difference(direct, record);
  }
  FUZZ_CHECK(difference.empty(), "the record taken into the model directly and its JSON line differ in %s: %s",
             difference.c_str(), line.c_str());
}

template <class Read>
Result read_with(const std::uint8_t* data, std::size_t size, Read&& read) {
  // The seeds' chains unwind with it (make_seeds.cpp, stack_evidence).
  static const std::shared_ptr<const lt::StackUnwind> unwind = lt::test::two_functions();
  Result r;
  std::string line;
  lt::CaptureReader reader;
  reader.set_unwind(unwind);
  read(
      reader,
      [&](lt::DecodedRecord& decoded) {
        FUZZ_CHECK(decoded.offset + lc::kPacketHeaderBytes <= size, "record at offset %llu of %zu bytes",
                   static_cast<unsigned long long>(decoded.offset), size);
        const std::uint8_t* p = data + decoded.offset;
        r.packet_bytes += lc::packet_size(p);
        const lt::UnwindSummary& u = decoded.unwind;
        FUZZ_CHECK(std::uint64_t{u.unwound} + u.partial + u.pc_lr_only <= decoded.record.samples_taken,
                   "%u samples unwound, partial or PC and LR only, of %u taken", u.unwound + u.partial + u.pc_lr_only,
                   decoded.record.samples_taken);
        lt::format_record_json(decoded, line);
        check_reads_back(decoded, line);
        r.lines.push_back(std::to_string(decoded.offset) + " " + line);
      },
      [&](lt::WarningKind kind, std::uint64_t offset, const std::string& what) {
        FUZZ_CHECK(offset < size, "%s at offset %llu of a %zu-byte capture", lt::to_string(kind),
                   static_cast<unsigned long long>(offset), size);
        FUZZ_CHECK(!what.empty(), "%s without text", lt::to_string(kind));
        r.problems.push_back({kind, offset, what});
      });
  r.stats = reader.stats();
  FUZZ_CHECK(r.stats.bytes == size, "read %llu of %zu bytes", static_cast<unsigned long long>(r.stats.bytes), size);
  FUZZ_CHECK(r.stats.decoded_bytes + r.stats.skipped_bytes == size,
             "decoded packets (%llu bytes) and skipped bytes (%llu) do not add up to the capture (%zu bytes)",
             static_cast<unsigned long long>(r.stats.decoded_bytes),
             static_cast<unsigned long long>(r.stats.skipped_bytes), size);
  FUZZ_CHECK(r.packet_bytes <= r.stats.decoded_bytes, "the records' packets (%llu bytes) are not all decoded (%llu)",
             static_cast<unsigned long long>(r.packet_bytes), static_cast<unsigned long long>(r.stats.decoded_bytes));
  return r;
}

void decode_first_body(const std::uint8_t* data, std::size_t size) {
  if (size < lc::kPacketHeaderBytes || data[0] != lc::kPacketMagic0 || data[1] != lc::kPacketMagic1) return;
  const std::size_t claimed = lc::packet_size(data) - lc::kPacketHeaderBytes - lc::kPacketTrailerBytes;
  // A copy of exactly the body's size, so that AddressSanitizer sees any read past it.
  const std::vector<std::uint8_t> body(data + lc::kPacketHeaderBytes,
                                       data + lc::kPacketHeaderBytes + std::min(claimed, size - lc::kPacketHeaderBytes));
  static lt::DecodedRecord decoded;
  lt::WarningKind kind{};
  std::string what;
  const bool previous_boot = data[3] == static_cast<std::uint8_t>(lc::PacketType::previous_boot);
  const bool health = data[3] == static_cast<std::uint8_t>(lc::PacketType::health);
  if (data[3] >= static_cast<std::uint8_t>(lc::PacketType::watch) &&
      data[3] <= static_cast<std::uint8_t>(lc::PacketType::boot)) {
    const auto state = lt::make_evidence_state();
    bool produced = false;
    std::string warning;
    if (lt::decode_evidence(body.data(), body.size(), data[3], *state, decoded, produced, kind, what, warning)) {
      if (produced) {
        std::string line;
        lt::format_record_json(decoded, line);
        check_reads_back(decoded, line);
      }
    } else {
      FUZZ_CHECK(kind == lt::WarningKind::malformed_packet || kind == lt::WarningKind::unknown_config,
                 "decode_evidence failed with %s", lt::to_string(kind));
      FUZZ_CHECK(!what.empty(), "decode_evidence failed without text");
    }
    return;
  }
  if (health ? lt::decode_health_body(body.data(), body.size(), data[2], decoded, kind, what)
             : lt::decode_packet_body(body.data(), body.size(), data[2], previous_boot, decoded, kind, what)) {
    std::string line;
    lt::format_record_json(decoded, line);
    check_reads_back(decoded, line);
  } else {
    FUZZ_CHECK(kind == lt::WarningKind::malformed_packet || kind == lt::WarningKind::unknown_config,
               "decode_packet_body failed with %s", lt::to_string(kind));
    FUZZ_CHECK(!what.empty(), "decode_packet_body failed without text");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Result whole = read_with(data, size, [&](lt::CaptureReader& reader, const auto& on_record, const auto& on_problem) {
    reader.read(data, size, on_record, on_problem);
  });
  std::uint32_t random = static_cast<std::uint32_t>(size) * 2654435761u + 1u;
  std::size_t done = 0;
  const Result split = read_with(data, size, [&](lt::CaptureReader& reader, const auto& on_record, const auto& on_problem) {
    const int error = reader.read(
        [&](std::uint8_t* to, std::size_t n) -> long {
          random ^= random << 13;
          random ^= random >> 17;
          random ^= random << 5;
          n = std::min({n, size - done, std::size_t{1} + random % 300u});
          if (n != 0) std::memcpy(to, data + done, n);
          done += n;
          return static_cast<long>(n);
        },
        on_record, on_problem);
    FUZZ_CHECK(error == 0, "read error %d", error);
  });
  FUZZ_CHECK(split.lines == whole.lines, "split reads: %zu records, whole: %zu", split.lines.size(), whole.lines.size());
  FUZZ_CHECK(split.problems == whole.problems, "split reads: %zu problems, whole: %zu", split.problems.size(),
             whole.problems.size());
  FUZZ_CHECK(split.stats.packets == whole.stats.packets && split.stats.decoded == whole.stats.decoded &&
                 split.stats.skipped_bytes == whole.stats.skipped_bytes &&
                 split.stats.decoded_bytes == whole.stats.decoded_bytes,
             "split reads count differently");
  decode_first_body(data, size);
  return 0;
}
