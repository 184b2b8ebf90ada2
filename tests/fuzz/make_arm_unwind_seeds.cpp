// SPDX-License-Identifier: MIT
// Seeds for fuzz_arm_unwind (its input format is described there): hand-built .debug_frame
// sections (CIE versions 1 and 4; FDEs with push/sub prologues, a frame-pointer CFA in r7, a
// remembered state, an outermost function) and samples that unwind through them.
//
//   loopcanary_fuzz_make_arm_unwind_seeds DIR
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t>;

void u32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// An entry: its length, then `body`.
void entry(Bytes& out, const Bytes& body) {
  u32(out, static_cast<std::uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
}

Bytes cie(std::uint8_t version) {
  Bytes b;
  u32(b, 0xffffffffu);
  b.push_back(version);
  b.push_back(0);  // augmentation ""
  if (version == 4) {
    b.push_back(4);  // address size
    b.push_back(0);  // segment selector size
  }
  b.push_back(2);                    // code alignment 2
  b.push_back(0x7c);                 // data alignment -4
  b.push_back(14);                   // return address column lr
  b.insert(b.end(), {0x0c, 13, 0});  // def_cfa sp, 0
  return b;
}

Bytes fde(std::uint32_t begin, std::uint32_t range, const Bytes& instructions) {
  Bytes b;
  u32(b, 0);  // the CIE at offset 0
  u32(b, begin);
  u32(b, range);
  b.insert(b.end(), instructions.begin(), instructions.end());
  return b;
}

// A seed: the section, then the sample (pc, lr, sp, r7, flags) and its stack words.
Bytes seed(const Bytes& section, std::uint32_t pc, std::uint32_t lr, std::uint32_t sp, std::uint32_t r7,
           std::uint8_t flags, const std::vector<std::pair<std::uint8_t, std::uint32_t>>& words) {
  Bytes b = {static_cast<std::uint8_t>(section.size()), static_cast<std::uint8_t>(section.size() >> 8)};
  b.insert(b.end(), section.begin(), section.end());
  u32(b, pc);
  u32(b, lr);
  u32(b, sp);
  u32(b, r7);
  b.push_back(flags);
  for (const auto& [offset, value] : words) {
    b.push_back(offset);
    u32(b, value);
  }
  return b;
}

bool write(const std::string& path, const Bytes& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  for (const std::uint8_t version : {std::uint8_t{1}, std::uint8_t{4}}) {
    Bytes section;
    entry(section, cie(version));
    // 0x1000: push {r4, lr}; sub sp, #16 (remember, early exit, restore).
    entry(section,
          fde(0x1000, 0x40,
              {0x41, 0x0e, 8, 0x84, 2, 0x8e, 1, 0x41, 0x0e, 24, 0x44, 0x0a, 0x0e, 0, 0xc4, 0xce, 0x41, 0x0b, 0x00}));
    // 0x2000: push {r7, lr}; sub sp, #8; mov r7, sp (CFA r7 + 16).
    entry(section, fde(0x2000, 0x20, {0x41, 0x0e, 8, 0x87, 2, 0x8e, 1, 0x41, 0x0e, 16, 0x41, 0x0d, 7}));
    // 0x3000: the outermost function.
    entry(section, fde(0x3000, 0x10, {0x07, 14, 0x41, 0x0e, 8}));
    const std::string v = std::to_string(version);
    // In 0x1000's body at 0x1008 (CFA sp+24, lr at word 5), called from 0x2000 (r7 = sp + 24; lr at
    // r7 + 12 = word 9), called from 0x3000.
    if (!write(dir + "/chain_v" + v, seed(section, 0x1009, 0x2011, 0x20000000, 0x20000018, 1 | (16 << 1),
                                          {{5, 0x2011}, {9, 0x3005}, {2, 0x1001}})) ||
        !write(dir + "/leaf_v" + v, seed(section, 0x1001, 0x2009, 0x20000000, 0, 8 << 1, {{3, 0x3009}}))) {
      std::perror(dir.c_str());
      return 1;
    }
  }
  return 0;
}
