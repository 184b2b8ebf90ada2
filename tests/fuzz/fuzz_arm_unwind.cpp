// SPDX-License-Identifier: MIT
// Fuzz target: the host tool's Cortex-M unwinder (sim/tool/arm_unwind.hpp): parse_debug_frame on
// arbitrary section bytes, then unwind_arm of an arbitrary sample with what it parsed. The input:
//   u16 n (little-endian) | n bytes of .debug_frame (fewer when the input ends) |
//   u32 pc, lr, sp, r7 | u8 flags (bit 0: r7 captured; bits 1-5: max_frames) |
//   stack words of 5 bytes each: u8 word offset from SP, u32 value.
// The section is copied into a buffer of exactly its size (AddressSanitizer sees a read past it).
// Asserts: a failed parse names a section offset within the section and leaves nothing parsed;
// a parsed section's FDEs are sorted, each with its CIE, and found by their own start; an unwind
// has 1 to max_frames frames, frame 0 is the PC, every further frame is LR (frame 1 only) or a
// stack word of the sample (never invented), and its reason is empty exactly when it unwound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "arm_unwind.hpp"
#include "fuzz_check.hpp"

namespace {

namespace lt = loopcanary::tool;

std::uint32_t u32_at(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::size_t n = static_cast<std::size_t>(data[0]) | static_cast<std::size_t>(data[1]) << 8;
  if (n > size - 2) n = size - 2;
  const std::unique_ptr<std::uint8_t[]> section(new std::uint8_t[n == 0 ? 1 : n]);
  if (n > 0) std::memcpy(section.get(), data + 2, n);
  lt::ArmCfi cfi;
  std::string error;
  if (!lt::parse_debug_frame(n == 0 ? nullptr : section.get(), n, cfi, error)) {
    const std::string prefix = "debug_frame offset 0x";
    FUZZ_CHECK(error.rfind(prefix, 0) == 0, "error without an offset: %s", error.c_str());
    const unsigned long long offset = std::strtoull(error.c_str() + prefix.size(), nullptr, 16);
    FUZZ_CHECK(offset < n, "error offset 0x%llx outside the section (%zu bytes): %s", offset, n, error.c_str());
    FUZZ_CHECK(cfi.cies.empty() && cfi.fdes.empty(), "a failed parse left entries");
    return 0;
  }
  for (std::size_t i = 0; i < cfi.fdes.size(); ++i) {
    const lt::ArmFde& f = cfi.fdes[i];
    FUZZ_CHECK(f.cie < cfi.cies.size(), "FDE at 0x%x without its CIE", static_cast<unsigned>(f.offset));
    FUZZ_CHECK(i == 0 || cfi.fdes[i - 1].begin <= f.begin, "FDEs not sorted");
    if (f.end > f.begin)
      FUZZ_CHECK(cfi.find(f.begin) != nullptr, "FDE at 0x%x not found", static_cast<unsigned>(f.offset));
  }

  const std::uint8_t* rest = data + 2 + n;
  std::size_t left = size - 2 - n;
  std::uint8_t head[17] = {};
  std::memcpy(head, rest, left < sizeof head ? left : sizeof head);
  rest += left < sizeof head ? left : sizeof head;
  left -= left < sizeof head ? left : sizeof head;
  lt::ArmSample sample;
  sample.pc = u32_at(head);
  sample.lr = u32_at(head + 4);
  sample.sp = u32_at(head + 8);
  sample.r7 = u32_at(head + 12);
  sample.has_r7 = (head[16] & 1) != 0;
  const std::size_t max_frames = static_cast<std::size_t>((head[16] >> 1) & 0x1f);
  for (; left >= 5; rest += 5, left -= 5) sample.stack.emplace_back(rest[0], u32_at(rest + 1));

  const lt::ArmUnwindResult r = lt::unwind_arm(cfi, sample, max_frames);
  const std::size_t limit = max_frames == 0 ? 1 : max_frames;
  FUZZ_CHECK(!r.frames.empty() && r.frames.size() <= limit &&
                 (r.status != lt::ArmUnwindStatus::pc_lr_only || r.frames.size() <= 2),
             "%zu frames (max_frames %zu)", r.frames.size(), max_frames);
  FUZZ_CHECK(r.frames[0].pc == (sample.pc & ~1u), "frame 0 is not the PC");
  FUZZ_CHECK((r.status == lt::ArmUnwindStatus::unwound) == r.reason.empty(), "reason \"%s\"", r.reason.c_str());
  for (std::size_t i = 1; i < r.frames.size(); ++i) {
    const std::uint32_t pc = r.frames[i].pc;
    bool found = i == 1 && r.frames[i].from_lr && pc == (sample.lr & ~1u);
    for (const auto& word : sample.stack) found = found || (word.second & ~1u) == pc;
    FUZZ_CHECK(found, "frame %zu (0x%08x) is neither LR nor a stack word", i, static_cast<unsigned>(pc));
  }
  return 0;
}
