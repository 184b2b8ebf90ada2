// SPDX-License-Identifier: MIT
// Fuzz target: the evidence ring's open() on arbitrary ring memory, then drain(), the bytes sent
// read by the host tool's decoder (sim/tool/packet_reader.hpp). The input is the memory of a
// StaticEvidenceRing<1024> as a board finds it at boot (shorter inputs end in zeros; a byte
// beyond the memory, if any, is the board's reset cause). Each input is opened twice: as given
// (a header that fails its checks discards the ring), and with the header made valid, so that
// whatever bytes it holds are sent. Asserts: open() keeps exactly the unread span and says so;
// drain() sends every byte it kept, after a `boot` packet marking them when there are any, and
// this boot's own `boot` packet last (pushed by open(), or sent by drain() when the kept bytes
// left no room for it), in at most three sink calls of at least one byte (four when drain()
// sends this boot's packet); the decoder reads the capture (never a crash) and finds both boot
// packets whatever lies between them; a drained ring sends nothing more and opens empty.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "crash_box_memory.hpp"
#include "fuzz_check.hpp"
#include "loopcanary/evidence.hpp"
#include "packet_reader.hpp"

namespace {

namespace lc = loopcanary;
namespace lt = loopcanary::tool;
using Bytes = std::vector<std::uint8_t>;

struct Sent {
  Bytes stream;
  std::size_t calls = 0;
};

void collect(void* context, const std::uint8_t* bytes, std::size_t size) {
  Sent& sent = *static_cast<Sent*>(context);
  FUZZ_CHECK(size != 0, "an empty sink call");
  sent.stream.insert(sent.stream.end(), bytes, bytes + size);
  ++sent.calls;
}

void open_and_drain(lc::fuzz::EvidenceRingMemory& memory, lc::ResetCause board_cause) {
  lc::fuzz::FuzzEvidenceRing& ring = memory.ring();
  const lc::CrashBoxStatus status = ring.open(board_cause);
  const lc::EvidenceRingStats opened = ring.stats();
  FUZZ_CHECK((status == lc::CrashBoxStatus::discarded) == (opened.boxes_discarded == 1), "status %d, discarded %u",
             static_cast<int>(status), opened.boxes_discarded);
  FUZZ_CHECK((status == lc::CrashBoxStatus::kept) == (opened.carried_bytes != 0), "status %d, carried %u bytes",
             static_cast<int>(status), opened.carried_bytes);
  FUZZ_CHECK(opened.carried_bytes <= lc::fuzz::kEvidenceRingBytes, "carried %u bytes", opened.carried_bytes);
  // This boot's boot packet (at most 18 bytes) is pushed unless the kept bytes leave no room.
  FUZZ_CHECK(opened.pushed == 1 || opened.carried_bytes + 18u > lc::fuzz::kEvidenceRingBytes,
             "this boot's boot packet not pushed with %u bytes kept", opened.carried_bytes);

  Sent sent;
  const std::uint32_t bytes = ring.drain({&collect, &sent});
  FUZZ_CHECK(bytes == sent.stream.size(), "drain() returned %u after sending %zu bytes", bytes, sent.stream.size());
  FUZZ_CHECK(sent.calls <= 3u + (opened.pushed == 0 ? 1u : 0u), "%zu sink calls", sent.calls);
  FUZZ_CHECK(bytes >= opened.carried_bytes, "%u bytes kept, %u sent", opened.carried_bytes, bytes);
  FUZZ_CHECK(ring.stats().sent_bytes == bytes, "sent_bytes %u, %u sent", ring.stats().sent_bytes, bytes);

  // The decoder never crashes, and finds the marker (first) and this boot's packet (last) as
  // whole packets whatever lies between them.
  lt::CaptureReader reader;
  reader.read(sent.stream.data(), sent.stream.size(), nullptr, [](lt::WarningKind, std::uint64_t, const std::string&) {});
  const std::uint64_t marker = opened.carried_bytes != 0 ? 1u : 0u;
  FUZZ_CHECK(reader.stats().packets >= 1u + marker, "%llu whole packets, at least %llu expected",
             static_cast<unsigned long long>(reader.stats().packets), static_cast<unsigned long long>(1u + marker));
  // The last packet is this boot's `boot` packet of kind 1 (14..18 bytes).
  bool own_last = false;
  for (std::size_t size = 14; size <= 18 && size <= sent.stream.size() && !own_last; ++size) {
    const std::uint8_t* last = sent.stream.data() + sent.stream.size() - size;
    own_last = last[0] == lc::kPacketMagic0 && last[3] == static_cast<std::uint8_t>(lc::PacketType::boot) &&
               lc::packet_size(last) == size && last[lc::kPacketHeaderBytes] == 1;
  }
  FUZZ_CHECK(own_last, "the capture does not end with this boot's boot packet");
  if (marker != 0) {
    FUZZ_CHECK(sent.stream.size() >= lc::kPacketHeaderBytes && sent.stream[0] == lc::kPacketMagic0 &&
                   sent.stream[3] == static_cast<std::uint8_t>(lc::PacketType::boot) &&
                   sent.stream[lc::kPacketHeaderBytes] == 0,
               "the kept bytes are not preceded by a boot packet of kind 0");
  }

  Sent again;
  FUZZ_CHECK(ring.drain({&collect, &again}) == 0 && again.calls == 0, "a drained ring sent %zu bytes more",
             again.stream.size());
  FUZZ_CHECK(ring.open(lc::ResetCause::unknown) == lc::CrashBoxStatus::empty, "a drained ring does not open empty");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static lc::fuzz::EvidenceRingMemory memory;
  lc::fuzz::open_as_found_and_made_valid(memory, data, size, &open_and_drain);
  return 0;
}
