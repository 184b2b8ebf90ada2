// SPDX-License-Identifier: MIT
// Fuzz target: the crash box's open() on arbitrary box memory, then drain(). The input is the
// memory of a StaticCrashBox<1024> as a board finds it at boot (shorter inputs end in zeros; a
// byte beyond the memory, if any, is the board's reset cause). Each input is opened twice: as
// given (a header that fails its checks discards the box), and with the header made valid, so
// that the packet bytes are checked. Asserts: every record open() keeps is drained, one whole
// `previous_boot` packet per sink call that the host tool's decoder (sim/tool/packet_reader.hpp)
// reads without a warning; a drained box opens empty.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "crash_box_memory.hpp"
#include "fuzz_check.hpp"
#include "loopcanary/crash_box.hpp"
#include "packet_reader.hpp"

namespace {

namespace lc = loopcanary;
namespace lt = loopcanary::tool;
using Bytes = std::vector<std::uint8_t>;

void collect(void* calls, const std::uint8_t* packet, std::size_t size) {
  static_cast<std::vector<Bytes>*>(calls)->emplace_back(packet, packet + size);
}

void open_and_drain(lc::fuzz::CrashBoxMemory& memory, lc::ResetCause board_cause) {
  lc::fuzz::FuzzCrashBox& box = memory.box();
  const lc::CrashBoxStatus status = box.open(board_cause);
  const lc::CrashBoxStats opened = box.stats();
  FUZZ_CHECK((status == lc::CrashBoxStatus::kept) == (opened.kept != 0), "status %d, kept %u",
             static_cast<int>(status), opened.kept);
  std::vector<Bytes> calls;
  const std::uint32_t sent = box.drain({&collect, &calls});
  FUZZ_CHECK(sent == calls.size(), "drain() returned %u after %zu sink calls", sent, calls.size());
  FUZZ_CHECK(sent == opened.kept, "open() kept %u records, drain() sent %u", opened.kept, sent);
  for (const Bytes& call : calls) {
    std::size_t records = 0;
    bool previous_boot = false;
    lt::CaptureReader reader;
    reader.read(
        call.data(), call.size(),
        [&](lt::DecodedRecord& decoded) {
          ++records;
          previous_boot = decoded.previous_boot;
        },
        [&](lt::WarningKind kind, std::uint64_t offset, const std::string& what) {
          FUZZ_CHECK(false, "a drained packet of %zu bytes does not decode: %s at offset %llu: %s", call.size(),
                     lt::to_string(kind), static_cast<unsigned long long>(offset), what.c_str());
        });
    FUZZ_CHECK(records == 1 && previous_boot, "a sink call of %zu bytes: %zu records, previous_boot %d",
               call.size(), records, previous_boot);
  }
  FUZZ_CHECK(box.open(lc::ResetCause::unknown) == lc::CrashBoxStatus::empty, "a drained box does not open empty");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static lc::fuzz::CrashBoxMemory memory;
  lc::fuzz::open_as_found_and_made_valid(memory, data, size, &open_and_drain);
  return 0;
}
