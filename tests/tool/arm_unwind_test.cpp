// SPDX-License-Identifier: MIT
// The Cortex-M unwinder (sim/tool/arm_unwind.hpp): the .debug_frame parser on hand-built sections
// (each DW_CFA instruction, malformed entries and the offsets their errors name), unwinds of
// synthetic samples, and, when arm-none-eabi-g++ was found at configure time, the Thumb fixture
// (fixtures/arm/: chain.S with hand-written CFI, chain.cpp compiled by GCC at -O2 and -Os) read
// from its ELF, with samples whose stacks are built from what each function's prologue does
// (the CFI written by hand; for GCC's code, its push/sub instructions decoded here).
#include "arm_unwind.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "symbolize.hpp"

namespace lt = loopcanary::tool;

namespace {

using Bytes = std::vector<std::uint8_t>;

void put_u32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_uleb(Bytes& b, std::uint64_t v) {
  do {
    std::uint8_t byte = v & 0x7f;
    v >>= 7;
    if (v != 0) byte |= 0x80;
    b.push_back(byte);
  } while (v != 0);
}
void put_sleb(Bytes& b, std::int64_t v) {
  for (;;) {
    const auto byte = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) & 0x7f);
    v >>= 7;  // arithmetic shift (gcc, clang)
    if ((v == 0 && (byte & 0x40) == 0) || (v == -1 && (byte & 0x40) != 0)) {
      b.push_back(byte);
      return;
    }
    b.push_back(static_cast<std::uint8_t>(byte | 0x80));
  }
}

// A CIE: code alignment 2, data alignment -4 (ARM GCC's), return column `ra`.
Bytes cie(const Bytes& instructions, std::uint8_t version = 1, const std::string& augmentation = "",
          std::uint8_t address_size = 4, std::uint32_t ra = 14) {
  Bytes body;
  put_u32(body, 0xffffffffu);
  body.push_back(version);
  body.insert(body.end(), augmentation.begin(), augmentation.end());
  body.push_back(0);
  if (version == 4) {
    body.push_back(address_size);
    body.push_back(0);
  }
  put_uleb(body, 2);
  put_sleb(body, -4);
  if (version == 1) {
    body.push_back(static_cast<std::uint8_t>(ra));
  } else {
    put_uleb(body, ra);
  }
  body.insert(body.end(), instructions.begin(), instructions.end());
  Bytes out;
  put_u32(out, static_cast<std::uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Bytes fde(std::uint32_t cie_offset, std::uint32_t begin, std::uint32_t range, const Bytes& instructions) {
  Bytes body;
  put_u32(body, cie_offset);
  put_u32(body, begin);
  put_u32(body, range);
  body.insert(body.end(), instructions.begin(), instructions.end());
  Bytes out;
  put_u32(out, static_cast<std::uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const Bytes kCieInit = {0x0c, 13, 0};  // DW_CFA_def_cfa r13 ofs 0
constexpr std::uint32_t kFn = 0x1000;  // the FDE under test: [0x1000, 0x1100)
constexpr std::uint32_t kSp = 0x20000000;

// A section of one CIE (kCieInit) and one FDE for [kFn, kFn + 0x100) with `instructions`.
Bytes section(const Bytes& instructions) {
  const Bytes c = cie(kCieInit);
  return cat({c, fde(0, kFn, 0x100, instructions)});
}

lt::ArmCfi parse_ok(const Bytes& bytes) {
  lt::ArmCfi cfi;
  std::string error;
  EXPECT_TRUE(lt::parse_debug_frame(bytes.data(), bytes.size(), cfi, error)) << error;
  return cfi;
}

std::string parse_error(const Bytes& bytes) {
  lt::ArmCfi cfi;
  std::string error;
  EXPECT_FALSE(lt::parse_debug_frame(bytes.data(), bytes.size(), cfi, error));
  EXPECT_TRUE(cfi.fdes.empty() && cfi.cies.empty());
  return error;
}

// A sample at `pc` with SP kSp, LR 0x5001, and 32 stack words: word i holds 0x3001 + 0x10 * i
// (code without CFI: the unwind of the frame it names ends there).
lt::ArmSample sample_at(std::uint32_t pc) {
  lt::ArmSample s;
  s.pc = pc;
  s.lr = 0x5001;
  s.sp = kSp;
  for (std::uint32_t i = 0; i < 32; ++i) s.stack.emplace_back(i, 0x3001 + 0x10 * i);
  return s;
}
constexpr std::uint32_t word(std::uint32_t i) { return 0x3000 + 0x10 * i; }  // frame pc of word i

lt::ArmUnwindResult unwind(const Bytes& instructions, std::uint32_t pc, lt::ArmSample s) {
  const lt::ArmCfi cfi = parse_ok(section(instructions));
  s.pc = pc;
  return lt::unwind_arm(cfi, s, 16);
}

lt::ArmUnwindResult unwind(const Bytes& instructions, std::uint32_t pc) {
  return unwind(instructions, pc, sample_at(pc));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The parser

TEST(ArmCfiParse, CieAndFdeAndLookup) {
  const lt::ArmCfi cfi = parse_ok(cat({cie(kCieInit), fde(0, 0x2000, 0x10, {}), fde(0, kFn, 0x20, {0x41, 0x0e, 8})}));
  ASSERT_EQ(cfi.cies.size(), 1u);
  EXPECT_EQ(cfi.cies[0].version, 1);
  EXPECT_EQ(cfi.cies[0].code_alignment, 2u);
  EXPECT_EQ(cfi.cies[0].data_alignment, -4);
  EXPECT_EQ(cfi.cies[0].return_column, 14u);
  ASSERT_EQ(cfi.fdes.size(), 2u);
  EXPECT_EQ(cfi.fdes[0].begin, kFn);  // sorted by initial location
  EXPECT_EQ(cfi.fdes[0].end, kFn + 0x20u);
  EXPECT_EQ(cfi.fdes[0].offset, 0x20u);
  EXPECT_EQ(cfi.fdes[1].begin, 0x2000u);
  EXPECT_EQ(cfi.find(kFn), &cfi.fdes[0]);
  EXPECT_EQ(cfi.find(kFn + 0x1f), &cfi.fdes[0]);
  EXPECT_EQ(cfi.find(kFn + 0x20), nullptr);
  EXPECT_EQ(cfi.find(kFn - 1), nullptr);
  EXPECT_EQ(cfi.find(0x200f), &cfi.fdes[1]);
  EXPECT_EQ(cfi.find(0x2010), nullptr);
}

TEST(ArmCfiParse, OverlappingFdes) {
  // Two FDEs a linker left at 0 (discarded code) over a real function at 0x100.
  const lt::ArmCfi cfi =
      parse_ok(cat({cie(kCieInit), fde(0, 0, 0x400, {}), fde(0, 0x100, 0x20, {}), fde(0, 0, 0x10, {})}));
  ASSERT_EQ(cfi.fdes.size(), 3u);
  ASSERT_NE(cfi.find(0x110), nullptr);
  EXPECT_EQ(cfi.find(0x110)->begin, 0x100u);
  ASSERT_NE(cfi.find(0x120), nullptr);  // past the real function: the wide one at 0
  EXPECT_EQ(cfi.find(0x120)->end, 0x400u);
  ASSERT_NE(cfi.find(0x8), nullptr);
  EXPECT_EQ(cfi.find(0x400), nullptr);
}

TEST(ArmCfiParse, VersionsThreeAndFourAndPadding) {
  const Bytes v3 = cie(kCieInit, 3);
  lt::ArmCfi cfi = parse_ok(cat({v3, Bytes{0, 0, 0, 0}, fde(0, kFn, 8, {})}));
  EXPECT_EQ(cfi.cies[0].version, 3);
  ASSERT_EQ(cfi.fdes.size(), 1u);
  cfi = parse_ok(cat({cie(kCieInit, 4), fde(0, kFn, 8, {})}));
  EXPECT_EQ(cfi.cies[0].version, 4);
  EXPECT_EQ(cfi.cies[0].return_column, 14u);
  // A CIE after the FDE that uses it.
  const Bytes f = fde(0x10, kFn, 8, {});
  cfi = parse_ok(cat({f, cie(kCieInit)}));
  EXPECT_EQ(cfi.fdes.size(), 1u);
  EXPECT_EQ(parse_ok({}).fdes.size(), 0u);
}

TEST(ArmCfiParse, ErrorsNameTheOffset) {
  const Bytes c = cie(kCieInit);  // 0x10 bytes
  ASSERT_EQ(c.size(), 0x10u);
  EXPECT_EQ(parse_error(cat({c, fde(0x40, kFn, 8, {})})), "debug_frame offset 0x10: FDE points at no CIE (0x40)");
  EXPECT_EQ(parse_error(cat({c, Bytes{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}})),
            "debug_frame offset 0x10: 64-bit DWARF entry (length 0xffffffff) is not supported");
  EXPECT_EQ(parse_error(cat({c, Bytes{0x40, 0, 0, 0, 1, 2}})),
            "debug_frame offset 0x10: length 0x40 runs past the end of the section (0x16 bytes)");
  EXPECT_EQ(parse_error(cat({c, Bytes{7, 0}})), "debug_frame offset 0x10: truncated length field (2 bytes left)");
  EXPECT_EQ(parse_error(cat({c, Bytes{2, 0, 0, 0, 0, 0}})), "debug_frame offset 0x10: entry of 2 bytes has no CIE id");
  EXPECT_EQ(parse_error(cat({c, cie(kCieInit, 1, "zR")})),
            "debug_frame offset 0x10: CIE augmentation \"zR\" is not supported (only \"\")");
  EXPECT_EQ(parse_error(cie(kCieInit, 2)), "debug_frame offset 0x0: CIE version 2 is not supported (1, 3, 4)");
  EXPECT_EQ(parse_error(cie(kCieInit, 4, "", 8)), "debug_frame offset 0x0: CIE address size 8 is not 4");
  EXPECT_EQ(parse_error(cie(kCieInit, 3, "", 4, 16)),
            "debug_frame offset 0x0: CIE return address column 16 is not r0-r15");
  // An FDE too short for its location and range.
  Bytes short_fde = {8, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0};
  EXPECT_EQ(parse_error(cat({c, short_fde})),
            "debug_frame offset 0x10: FDE truncated: no initial location and address range");
}

TEST(ArmCfiParse, BadInstructionsNameTheirOffset) {
  // The FDE's instructions start at 0x10 + 16 = 0x20.
  EXPECT_EQ(parse_error(section({0x00, 0x0c, 13})),
            "debug_frame offset 0x21: truncated or out-of-range operand of call frame instruction 0xc");
  EXPECT_EQ(parse_error(section({0x3f})), "debug_frame offset 0x20: unknown call frame instruction 0x3f");
  EXPECT_EQ(parse_error(section({0x0b})),
            "debug_frame offset 0x20: DW_CFA_restore_state without DW_CFA_remember_state");
  EXPECT_EQ(parse_error(section({0x0c, 16, 0})),
            "debug_frame offset 0x20: DW_CFA_def_cfa: register 16 is not a core register");
  EXPECT_EQ(parse_error(section({0x0f, 5, 1, 2})),  // an expression block longer than the entry
            "debug_frame offset 0x20: truncated or out-of-range operand of call frame instruction 0xf");
  Bytes deep(17, 0x0a);
  EXPECT_EQ(parse_error(section(deep)), "debug_frame offset 0x30: DW_CFA_remember_state nested deeper than 16");
  EXPECT_NE(parse_error(section({0x05, 14, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}))
                .find("offset 0x20: truncated or out-of-range operand"),
            std::string::npos);
  // Location instructions in a CIE's initial instructions.
  EXPECT_EQ(parse_error(cie({0x0c, 13, 0, 0x41})),
            "debug_frame offset 0x10: DW_CFA_advance_loc in a CIE's initial instructions");
}

TEST(ArmCfiParse, EveryTruncationFailsWithAnOffsetOrStopsAtAnEntry) {
  const Bytes full = cat({cie({0x0c, 13, 0}, 4), fde(0, kFn, 0x40, {0x41, 0x0e, 8, 0x84, 2, 0x8e, 1, 0x0a, 0x42, 0x0b}),
                          fde(0, 0x2000, 0x10, {0x02, 3, 0x12, 13, 0x7e})});
  std::vector<std::size_t> boundaries = {0};
  for (std::size_t at = 0; at < full.size();) {
    at += 4 + (static_cast<std::size_t>(full[at]) | static_cast<std::size_t>(full[at + 1]) << 8);
    boundaries.push_back(at);
  }
  for (std::size_t n = 0; n <= full.size(); ++n) {
    lt::ArmCfi cfi;
    std::string error;
    const bool ok = lt::parse_debug_frame(full.data(), n, cfi, error);
    const bool boundary = std::find(boundaries.begin(), boundaries.end(), n) != boundaries.end();
    EXPECT_EQ(ok, boundary) << n << ": " << error;
    if (!ok) {
      EXPECT_EQ(error.rfind("debug_frame offset 0x", 0), 0u) << error;
    }
  }
  // Single-byte damage anywhere: never a crash; an error always names an offset.
  for (std::size_t i = 0; i < full.size(); ++i) {
    for (const std::uint8_t v : {std::uint8_t{0x00}, std::uint8_t{0xff}, std::uint8_t{0x80}, std::uint8_t{0x0b}}) {
      Bytes damaged = full;
      damaged[i] = v;
      lt::ArmCfi cfi;
      std::string error;
      if (!lt::parse_debug_frame(damaged.data(), damaged.size(), cfi, error)) {
        EXPECT_EQ(error.rfind("debug_frame offset 0x", 0), 0u) << error;
      } else {
        (void)lt::unwind_arm(cfi, sample_at(kFn + 4), 8);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Rules, one instruction at a time, through unwinds

TEST(ArmUnwindRules, LeafReturnAddressInLr) {
  const lt::ArmUnwindResult r = unwind({}, kFn + 6);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[0].pc, kFn + 6);
  EXPECT_EQ(r.frames[0].cfa, kSp);
  EXPECT_EQ(r.frames[1].pc, 0x5000u);  // LR without its Thumb bit
  EXPECT_TRUE(r.frames[1].from_lr);
  EXPECT_EQ(r.reason, "no CFI for 0x00005000");
}

TEST(ArmUnwindRules, AdvanceLocOffsetAndDefCfaOffset) {
  // advance 2 bytes; def_cfa_offset 8; r4 at CFA-8; lr at CFA-4 (push {r4, lr}).
  const Bytes ins = {0x41, 0x0e, 8, 0x84, 2, 0x8e, 1};
  lt::ArmUnwindResult r = unwind(ins, kFn);  // before the push: LR
  ASSERT_GE(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[1].pc, 0x5000u);
  r = unwind(ins, kFn + 2);
  ASSERT_GE(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[0].cfa, kSp + 8);
  EXPECT_EQ(r.frames[1].pc, word(1));
  EXPECT_FALSE(r.frames[1].from_lr);
}

TEST(ArmUnwindRules, AdvanceLocForms) {
  // advance_loc1 3 (6 bytes), def_cfa_offset 8; advance_loc2 2 (+4), def_cfa_offset 12;
  // advance_loc4 1 (+2), def_cfa_offset 16; set_loc kFn + 0x20, def_cfa_offset 20. RA at CFA-4.
  const Bytes ins = {0x8e, 1, 0x02, 3,    0x0e, 8,    0x03, 2,    0, 0x0e, 12,   0x04, 1,
                     0,    0, 0,    0x0e, 16,   0x01, 0x20, 0x10, 0, 0,    0x0e, 20};
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> expected = {
      {kFn + 4, 0}, {kFn + 6, 8}, {kFn + 9, 8}, {kFn + 10, 12}, {kFn + 12, 16}, {kFn + 0x1e, 16}, {kFn + 0x20, 20}};
  for (const auto& [pc, offset] : expected) {
    const lt::ArmUnwindResult r = unwind(ins, pc);
    if (offset == 0) {
      EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
      EXPECT_EQ(r.reason, "return address of 0x00001004 at 0x1ffffffc is not among the sample's stack words");
      continue;
    }
    ASSERT_GE(r.frames.size(), 2u) << std::hex << pc << ": " << r.reason;
    EXPECT_EQ(r.frames[0].cfa, kSp + offset) << std::hex << pc;
    EXPECT_EQ(r.frames[1].pc, word(offset / 4 - 1)) << std::hex << pc;
  }
}

TEST(ArmUnwindRules, DefCfaForms) {
  // def_cfa r13 16; lr at CFA-4 -> word 3.
  lt::ArmUnwindResult r = unwind({0x0c, 13, 16, 0x8e, 1}, kFn);
  EXPECT_EQ(r.frames[0].cfa, kSp + 16);
  EXPECT_EQ(r.frames[1].pc, word(3));
  // def_cfa_sf r13, -3 * -4 = 12.
  r = unwind({0x12, 13, 0x7d, 0x8e, 1}, kFn);
  EXPECT_EQ(r.frames[0].cfa, kSp + 12);
  EXPECT_EQ(r.frames[1].pc, word(2));
  // def_cfa_offset_sf -5 * -4 = 20.
  r = unwind({0x13, 0x7b, 0x8e, 1}, kFn);
  EXPECT_EQ(r.frames[0].cfa, kSp + 20);
  EXPECT_EQ(r.frames[1].pc, word(4));
  // def_cfa_register r7 (offset 8 kept): r7 = SP + 16 -> CFA SP + 24.
  lt::ArmSample s = sample_at(kFn);
  s.has_r7 = true;
  s.r7 = kSp + 16;
  r = unwind({0x0e, 8, 0x0d, 7, 0x8e, 1}, kFn, s);
  EXPECT_EQ(r.frames[0].cfa, kSp + 24);
  EXPECT_EQ(r.frames[1].pc, word(5));
  // Without r7 the CFA is unknown: no frame past the first.
  r = unwind({0x0e, 8, 0x0d, 7, 0x8e, 1}, kFn);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.reason, "CFA register r7 unknown at 0x00001000");
}

// Offsets at the ends of the 64-bit range (damaged CFI): the CFA and the saved-register
// addresses they give are out of range, never a signed overflow (UBSan checks it in the
// sanitizer build), and no frame comes from them.
TEST(ArmUnwindRules, OffsetsAtTheEndsOfTheRangeGiveNoFrame) {
  Bytes huge_cfa = {0x12, 13};  // def_cfa_sf r13, -(2^61 - 1) * -4 = 2^63 - 4: SP + that leaves the range
  put_sleb(huge_cfa, -0x1fff'ffff'ffff'ffffll);
  huge_cfa.insert(huge_cfa.end(), {0x8e, 1});
  lt::ArmUnwindResult r = unwind(huge_cfa, kFn);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial) << r.reason;
  EXPECT_EQ(r.frames.size(), 1u);
  Bytes huge_rule = {0x0c, 13, 16, 0x11, 14};  // def_cfa r13 16; offset_extended_sf lr, -(2^61 - 1) * -4
  put_sleb(huge_rule, -0x1fff'ffff'ffff'ffffll);
  r = unwind(huge_rule, kFn);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial) << r.reason;
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_NE(r.reason.find("is not among the sample's stack words"), std::string::npos) << r.reason;
}

TEST(ArmUnwindRules, OffsetExtendedForms) {
  lt::ArmUnwindResult r = unwind({0x0e, 16, 0x05, 14, 3}, kFn);  // lr at CFA-12
  EXPECT_EQ(r.frames[1].pc, word(1));
  r = unwind({0x0e, 16, 0x11, 14, 2}, kFn);  // sf: 2 * -4 = -8
  EXPECT_EQ(r.frames[1].pc, word(2));
  r = unwind({0x0e, 16, 0x11, 14, 0x7f}, kFn);  // sf: -1 * -4 = +4: above the CFA
  EXPECT_EQ(r.frames[1].pc, word(5));
  r = unwind({0x0e, 16, 0x2f, 14, 1}, kFn);  // GNU negative: -(1) * -4 = +4
  EXPECT_EQ(r.frames[1].pc, word(5));
}

TEST(ArmUnwindRules, RestoreSameValueUndefinedRegister) {
  // Saved, then restored (compact and extended forms) or same_value: LR again.
  for (const Bytes& ins : {Bytes{0x0e, 8, 0x8e, 1, 0x41, 0xce}, Bytes{0x0e, 8, 0x8e, 1, 0x41, 0x06, 14},
                           Bytes{0x0e, 8, 0x8e, 1, 0x41, 0x08, 14}}) {
    lt::ArmUnwindResult r = unwind(ins, kFn);
    EXPECT_EQ(r.frames[1].pc, word(1));
    r = unwind(ins, kFn + 2);
    EXPECT_EQ(r.frames[1].pc, 0x5000u);
    EXPECT_TRUE(r.frames[1].from_lr);
  }
  // undefined: the outermost frame.
  lt::ArmUnwindResult r = unwind({0x07, 14}, kFn);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::unwound);
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.reason, "");
  // register: the return address in LR itself.
  r = unwind({0x09, 14, 14}, kFn);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[1].pc, 0x5000u);
  EXPECT_TRUE(r.frames[1].from_lr);
  // ... but not r7 as captured (a frame pointer, not a return address), nor an unknown r4.
  lt::ArmSample s = sample_at(kFn);
  s.has_r7 = true;
  s.r7 = 0x7771;
  r = unwind({0x09, 14, 7}, kFn, s);
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.reason, "return address of 0x00001000 is in r7, which holds no return address of the sample");
  r = unwind({0x09, 14, 4}, kFn);
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.reason, "return address of 0x00001000 is in r4, unknown");
}

TEST(ArmUnwindRules, RememberAndRestoreState) {
  // push {lr} (CFA 8... lr at CFA-4); remember; early exit: CFA 0, lr restored; restore_state.
  const Bytes ins = {0x0e, 8, 0x8e, 1, 0x41, 0x0a, 0x0e, 0, 0xce, 0x41, 0x0b, 0x00};
  lt::ArmUnwindResult r = unwind(ins, kFn);
  EXPECT_EQ(r.frames[0].cfa, kSp + 8);
  EXPECT_EQ(r.frames[1].pc, word(1));
  r = unwind(ins, kFn + 2);
  EXPECT_EQ(r.frames[0].cfa, kSp);
  EXPECT_EQ(r.frames[1].pc, 0x5000u);
  r = unwind(ins, kFn + 4);
  EXPECT_EQ(r.frames[0].cfa, kSp + 8);
  EXPECT_EQ(r.frames[1].pc, word(1));
}

TEST(ArmUnwindRules, UnsupportedRulesEndThePartialChainWithAReason) {
  lt::ArmUnwindResult r = unwind({0x0e, 8, 0x14, 14, 1}, kFn);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.reason, "return address rule of 0x00001000 uses DW_CFA_val_offset (unsupported)");
  r = unwind({0x10, 14, 1, 0x50}, kFn);
  EXPECT_EQ(r.reason, "return address rule of 0x00001000 uses DW_CFA_expression (unsupported)");
  r = unwind({0x16, 14, 1, 0x50}, kFn);
  EXPECT_EQ(r.reason, "return address rule of 0x00001000 uses DW_CFA_val_expression (unsupported)");
  // An expression for another register does not matter.
  r = unwind({0x10, 4, 1, 0x50}, kFn);
  EXPECT_EQ(r.frames.size(), 2u);
  // A CFA expression: no CFI usable for the PC: PC and LR.
  r = unwind({0x0f, 1, 0x50}, kFn);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::pc_lr_only);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[1].pc, 0x5000u);
  EXPECT_EQ(r.reason, "CFA rule of 0x00001000 uses DW_CFA_def_cfa_expression (unsupported)");
}

// ---------------------------------------------------------------------------------------------
// Unwinds across frames

namespace {

// Three functions: A [0x1000, 0x1100) push {r4, lr} (CFA sp+8 from 0x1002), B [0x2000, 0x2010)
// push {lr}; sub sp, #8 (CFA sp+12 from 0x2004), C [0x3000, 0x3010) lr undefined (outermost),
// D [0x4000, 0x4010) push {r4, r5} (CFA sp+8, lr not saved).
lt::ArmCfi three_functions() {
  return parse_ok(cat({cie(kCieInit), fde(0, 0x1000, 0x100, {0x41, 0x0e, 8, 0x84, 2, 0x8e, 1}),
                       fde(0, 0x2000, 0x10, {0x41, 0x0e, 4, 0x8e, 1, 0x41, 0x0e, 12}), fde(0, 0x3000, 0x10, {0x07, 14}),
                       fde(0, 0x4000, 0x10, {0x0e, 8})}));
}

}  // namespace

TEST(ArmUnwind, ChainToTheOutermostFrame) {
  const lt::ArmCfi cfi = three_functions();
  lt::ArmSample s;
  s.pc = 0x1011;  // bit 0 ignored
  s.lr = 0x9999;  // stale: A has saved its LR at this PC
  s.sp = kSp;
  // A: r4 at +0, lr at +4 -> B's return 0x200f (a call ending at the end of B: lookup at 0x200c).
  // B: CFA = SP_B + 12 = kSp + 20; lr at CFA - 4 = kSp + 16 (word 4) -> C's 0x3005.
  s.stack = {{4, 0x3005}, {1, 0x2011}, {0, 0x1041}, {2, 0x3001}};
  const lt::ArmUnwindResult r = lt::unwind_arm(cfi, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::unwound) << r.reason;
  ASSERT_EQ(r.frames.size(), 3u);
  EXPECT_EQ(r.frames[0].pc, 0x1010u);
  EXPECT_EQ(r.frames[0].cfa, kSp + 8);
  EXPECT_EQ(r.frames[1].pc, 0x2010u);
  EXPECT_EQ(r.frames[1].cfa, kSp + 20);
  EXPECT_EQ(r.frames[2].pc, 0x3004u);
  EXPECT_EQ(r.frames[2].cfa, kSp + 20);
  EXPECT_FALSE(r.frames[1].from_lr);
  // max_frames.
  const lt::ArmUnwindResult cut = lt::unwind_arm(cfi, s, 2);
  EXPECT_EQ(cut.status, lt::ArmUnwindStatus::partial);
  EXPECT_EQ(cut.frames.size(), 2u);
  EXPECT_EQ(cut.reason, "max_frames (2) reached");
  // A missing word ends the chain there.
  lt::ArmSample missing = s;
  missing.stack.erase(missing.stack.begin());
  const lt::ArmUnwindResult m = lt::unwind_arm(cfi, missing, 16);
  EXPECT_EQ(m.status, lt::ArmUnwindStatus::partial);
  EXPECT_EQ(m.frames.size(), 2u);
  EXPECT_EQ(m.reason, "return address of 0x00002010 at 0x20000010 is not among the sample's stack words");
}

TEST(ArmUnwind, StopsAtZeroExcReturnNoCfiAndNoProgress) {
  const lt::ArmCfi cfi = three_functions();
  lt::ArmSample s;
  s.pc = 0x1004;
  s.sp = kSp;
  s.stack = {{1, 0}};
  lt::ArmUnwindResult r = lt::unwind_arm(cfi, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::unwound);
  EXPECT_EQ(r.frames.size(), 1u);
  s.stack = {{1, 0xfffffff9}};
  r = lt::unwind_arm(cfi, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
  EXPECT_TRUE(r.exception_return);
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_NE(r.reason.find("EXC_RETURN 0xfffffff9"), std::string::npos) << r.reason;
  // LR's reset value, which the reset handler saves: the outermost frame, not an exception frame.
  s.stack = {{1, 0xffffffff}};
  r = lt::unwind_arm(cfi, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::unwound);
  EXPECT_FALSE(r.exception_return);
  EXPECT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.reason, "");
  // A leaf (B before its push) whose LR is EXC_RETURN.
  s.pc = 0x2000;
  s.lr = 0xfffffffd;
  r = lt::unwind_arm(cfi, s, 16);
  EXPECT_TRUE(r.exception_return);
  EXPECT_EQ(r.frames.size(), 1u);
  // No CFI for the PC: PC and LR.
  s.pc = 0x8001;
  s.lr = 0x1235;
  r = lt::unwind_arm(cfi, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::pc_lr_only);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[0].pc, 0x8000u);
  EXPECT_EQ(r.frames[1].pc, 0x1234u);
  EXPECT_EQ(r.reason, "no CFI for 0x00008000");
  // A frame past the first whose CFA does not grow: B before its push, reached through LR...
  // then B's caller at 0x2001 again (B before its push: CFA = SP, not above it).
  s.pc = 0x2000;
  s.lr = 0x2003;
  r = lt::unwind_arm(cfi, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
  EXPECT_EQ(r.frames.size(), 2u);
  EXPECT_NE(r.reason.find("CFA does not grow at 0x00002002"), std::string::npos) << r.reason;
}

TEST(ArmUnwind, LrOnlyInTheInnermostFrame) {
  // A before its push: its return address is in LR, into D, whose rules leave LR unsaved; the
  // captured LR is A's return address, not D's, so D's frame ends the chain.
  lt::ArmSample s;
  s.pc = 0x1000;
  s.lr = 0x4005;
  s.sp = kSp;
  s.stack = {{0, 0x1001}, {1, 0x1003}, {2, 0x1005}};
  const lt::ArmUnwindResult r = lt::unwind_arm(three_functions(), s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[1].pc, 0x4004u);
  EXPECT_EQ(r.frames[1].cfa, kSp + 8);
  EXPECT_EQ(r.reason, "return address of 0x00004004 is in r14 (not saved), known only in the innermost frame");
}

// Frame 0 stopped on `bx lr` after its epilogue gave back the stack (libgcc's __aeabi_uldivmod:
// `add sp, #16; bx lr`, whose CFI still says CFA = SP + 16 there): the frame is gone, the caller
// resumes at LR with this SP. Without the code the CFI's stale rule is followed (here its word is
// missing: partial, never a frame read from the wrong slot).
TEST(ArmUnwind, AReturnInstructionEndsTheFrameWhateverItsCfiSays) {
  lt::ArmCfi cfi = three_functions();
  lt::ArmSample s;
  s.pc = 0x200e;  // in B, CFA = SP + 12 by its rules
  s.lr = 0x3005;  // into C, the outermost
  s.sp = kSp;
  s.stack = {{5, 0x1001}};  // a stale code word where the stale rule would look (SP + 12 - 4 + ...)
  lt::ArmUnwindResult r = lt::unwind_arm(cfi, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial) << r.reason;
  cfi.code_address = 0x2000;
  cfi.code.assign(16, 0);
  cfi.code[14] = 0x70;  // 0x4770: bx lr at 0x200e
  cfi.code[15] = 0x47;
  EXPECT_TRUE(cfi.returns_at(0x200e));
  EXPECT_FALSE(cfi.returns_at(0x200c));
  EXPECT_FALSE(cfi.returns_at(0x200f));  // the last byte: no whole instruction there
  EXPECT_FALSE(cfi.returns_at(0x1ffe));
  r = lt::unwind_arm(cfi, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::unwound) << r.reason;
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[0].cfa, kSp);
  EXPECT_EQ(r.frames[1].pc, 0x3004u);
  EXPECT_TRUE(r.frames[1].from_lr);
}

TEST(ArmCfiRead, RefusesOtherFiles) {
  lt::ArmCfi cfi;
  std::string error;
  EXPECT_FALSE(lt::read_arm_cfi("/proc/self/exe", cfi, error));
  EXPECT_EQ(error, "not an ELF32 little-endian ARM file");
  EXPECT_FALSE(lt::read_arm_cfi(__FILE__, cfi, error));
  EXPECT_EQ(error, "not an ELF file");
  EXPECT_FALSE(lt::read_arm_cfi("/nonexistent/firmware.elf", cfi, error));
  EXPECT_EQ(error.rfind("cannot open", 0), 0u) << error;
}

// ---------------------------------------------------------------------------------------------
// The Thumb fixture

#ifdef LOOPCANARY_ARM_FIXTURE_O2

namespace {

struct ElfSymbol {
  std::uint32_t value = 0;  // bit 0 clear
  std::uint32_t size = 0;
  bool function = false;
};

// .symtab and .strtab read with the tool's section reader and decoded here (ELF32 LE).
std::map<std::string, ElfSymbol> symbols_of(const std::string& path) {
  std::map<std::string, ElfSymbol> out;
  lt::ElfInfo info;
  Bytes symtab;
  Bytes strtab;
  std::string error;
  EXPECT_TRUE(lt::read_elf_section(path, ".symtab", info, symtab, error)) << error;
  EXPECT_TRUE(lt::read_elf_section(path, ".strtab", info, strtab, error)) << error;
  const auto u32 = [](const std::uint8_t* p) {
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
  };
  for (std::size_t at = 16; at + 16 <= symtab.size(); at += 16) {
    const std::uint32_t name = u32(&symtab[at]);
    if (name >= strtab.size()) continue;
    const std::string text(reinterpret_cast<const char*>(&strtab[name]));
    ElfSymbol s;
    s.value = u32(&symtab[at + 4]) & ~1u;
    s.size = u32(&symtab[at + 8]);
    s.function = (symtab[at + 12] & 0xf) == 2;  // STT_FUNC
    if (!text.empty()) out[text] = s;
  }
  return out;
}

Bytes section_bytes(const std::string& path, const std::string& name) {
  lt::ElfInfo info;
  Bytes bytes;
  std::string error;
  EXPECT_TRUE(lt::read_elf_section(path, name, info, bytes, error)) << error;
  return bytes;
}

class ArmFixture : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = GetParam();
    std::string error;
    ASSERT_TRUE(lt::read_arm_cfi(path_, cfi_, error)) << path_ << ": " << error;
    symbols_ = symbols_of(path_);
    ASSERT_FALSE(symbols_.empty());
  }
  std::uint32_t at(const std::string& name) {
    const auto it = symbols_.find(name);
    EXPECT_NE(it, symbols_.end()) << name;
    return it == symbols_.end() ? 0 : it->second.value;
  }
  std::string path_;
  lt::ArmCfi cfi_;
  std::map<std::string, ElfSymbol> symbols_;
};

}  // namespace

TEST_P(ArmFixture, EveryFunctionHasItsFde) {
  EXPECT_FALSE(cfi_.cies.empty());
  std::size_t functions = 0;
  for (const auto& [name, s] : symbols_) {
    if (!s.function || s.size == 0) continue;
    ++functions;
    const lt::ArmFde* first = cfi_.find(s.value);
    const lt::ArmFde* last = cfi_.find(s.value + s.size - 1);
    ASSERT_NE(first, nullptr) << name;
    EXPECT_EQ(first, last) << name;
    EXPECT_EQ(first->begin, s.value) << name;
    EXPECT_EQ(first->end, std::uint64_t{s.value} + s.size) << name;
  }
  EXPECT_EQ(functions, 12u);  // gcc_f1..gcc_f6, gcc_start, asm_outer, asm_a, asm_b, asm_c, asm_leaf
  EXPECT_EQ(cfi_.fdes.size(), functions);
}

// The hand-written chain (chain.S's comment gives each frame's layout). A sample in asm_leaf's
// body, SP = S: asm_c pushed r4-r6, lr at S..S+12 (lr: word 3); asm_b pushed r7, lr at
// S+24, S+28 below its 8 bytes of locals at S+16 (r7 = S+16; lr: word 7); asm_a pushed r4, lr
// at S+48, S+52 above 16 bytes of locals at S+32 (lr: word 13); asm_outer pushed r4, r5 at
// S+56, S+60.
TEST_P(ArmFixture, HandWrittenChain) {
  constexpr std::uint32_t S = 0x20001000;
  const std::uint32_t decoy = at("gcc_f3") + 9;  // code-range values in the other slots
  lt::ArmSample s;
  s.pc = at("asm_leaf_body") | 1;
  s.lr = at("asm_c_ret") | 1;
  s.sp = S;
  s.has_r7 = true;
  s.r7 = S + 16;
  s.stack = {{0, decoy}, {2, decoy},  {3, at("asm_b_ret") | 1},      {5, decoy},  {7, at("asm_a_ret") | 1},
             {9, decoy}, {12, decoy}, {13, at("asm_outer_ret") | 1}, {14, decoy}, {15, decoy}};
  lt::ArmUnwindResult r = lt::unwind_arm(cfi_, s, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::unwound) << r.reason;
  const std::vector<std::uint32_t> pcs = {at("asm_leaf_body"), at("asm_c_ret"), at("asm_b_ret"), at("asm_a_ret"),
                                          at("asm_outer_ret")};
  const std::vector<std::uint32_t> cfas = {S, S + 16, S + 32, S + 56, S + 64};
  ASSERT_EQ(r.frames.size(), pcs.size()) << r.reason;
  for (std::size_t i = 0; i < pcs.size(); ++i) {
    EXPECT_EQ(r.frames[i].pc, pcs[i]) << i;
    EXPECT_EQ(r.frames[i].cfa, cfas[i]) << i;
  }
  EXPECT_TRUE(r.frames[1].from_lr);
  EXPECT_FALSE(r.frames[2].from_lr);

  // Without r7, asm_b's CFA is unknown.
  lt::ArmSample no_r7 = s;
  no_r7.has_r7 = false;
  r = lt::unwind_arm(cfi_, no_r7, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
  EXPECT_EQ(r.frames.size(), 3u);
  EXPECT_NE(r.reason.find("CFA register r7 unknown"), std::string::npos) << r.reason;

  // asm_c at its early exit (after the pop: CFA = SP, the return address in LR), called from
  // asm_b: SP = S + 16 there.
  lt::ArmSample early = s;
  early.pc = at("asm_c_early");
  early.lr = at("asm_b_ret") | 1;
  early.sp = S + 16;
  early.stack.clear();
  for (const auto& [offset, value] : s.stack) {
    if (offset >= 4) early.stack.emplace_back(offset - 4, value);
  }
  r = lt::unwind_arm(cfi_, early, 16);
  EXPECT_EQ(r.status, lt::ArmUnwindStatus::unwound) << r.reason;
  ASSERT_EQ(r.frames.size(), 4u) << r.reason;
  EXPECT_EQ(r.frames[0].cfa, S + 16);
  EXPECT_EQ(r.frames[1].pc, at("asm_b_ret"));
  EXPECT_EQ(r.frames[3].pc, at("asm_outer_ret"));
}

namespace {

// What a GCC Thumb-2 prologue does before a call, decoded from its instructions: the bytes it
// pushes and subtracts from SP, and where among them it pushed LR (bytes below the entry SP).
struct Prologue {
  std::uint32_t frame = 0;     // bytes from the entry SP down to the SP at the call
  std::uint32_t lr_below = 0;  // LR saved at entry SP - lr_below (0: not saved)
};

Prologue decode_prologue(const Bytes& text, std::uint32_t text_addr, std::uint32_t from, std::uint32_t to) {
  Prologue p;
  for (std::uint32_t a = from; a < to;) {
    const std::size_t i = a - text_addr;
    const auto hw = static_cast<std::uint32_t>(text[i] | text[i + 1] << 8);
    if ((hw & 0xfe00) == 0xb400) {  // push {list[, lr]}
      const auto count = static_cast<std::uint32_t>(__builtin_popcount(hw & 0x1ff));
      if ((hw & 0x100) != 0) p.lr_below = p.frame + 4;
      p.frame += 4 * count;
    } else if ((hw & 0xff80) == 0xb080) {  // sub sp, #imm7 * 4
      p.frame += 4 * (hw & 0x7f);
    }
    a += (hw >> 11) >= 0x1d ? 4 : 2;  // 32-bit encodings start 0b11101, 0b11110, 0b11111
  }
  return p;
}

// The address of the BL in [from, to) that calls `target`; 0 when none.
std::uint32_t find_bl(const Bytes& text, std::uint32_t text_addr, std::uint32_t from, std::uint32_t to,
                      std::uint32_t target) {
  for (std::uint32_t a = from; a + 4 <= to;) {
    const std::size_t i = a - text_addr;
    const auto h1 = static_cast<std::uint32_t>(text[i] | text[i + 1] << 8);
    if ((h1 >> 11) < 0x1d) {
      a += 2;
      continue;
    }
    const auto h2 = static_cast<std::uint32_t>(text[i + 2] | text[i + 3] << 8);
    if ((h1 >> 11) == 0x1e && (h2 & 0xd000) == 0xd000) {
      const std::uint32_t s = (h1 >> 10) & 1;
      const std::uint32_t i1 = ~(((h2 >> 13) & 1) ^ s) & 1;
      const std::uint32_t i2 = ~(((h2 >> 11) & 1) ^ s) & 1;
      std::uint32_t offset = (s << 24) | (i1 << 23) | (i2 << 22) | ((h1 & 0x3ff) << 12) | ((h2 & 0x7ff) << 1);
      if (s != 0) offset |= 0xfe000000u;
      if (a + 4 + offset == target) return a;
    }
    a += 4;
  }
  return 0;
}

}  // namespace

// GCC's chain gcc_start -> gcc_f6 -> ... -> gcc_f1, sampled at gcc_f1's first instruction and at
// gcc_f3's call: the stack image is built from the decoded prologues (every other word a
// code-range decoy), the expected frames are the BL return addresses.
TEST_P(ArmFixture, CompilerGeneratedChain) {
  const Bytes text = section_bytes(path_, ".text");
  constexpr std::uint32_t text_addr = 0x08000000;  // -Ttext (tests/tool/CMakeLists.txt)
  const std::vector<std::string> chain = {"gcc_start", "gcc_f6", "gcc_f5", "gcc_f4", "gcc_f3", "gcc_f2", "gcc_f1"};
  constexpr std::uint32_t kTop = 0x20008000;  // gcc_start's entry SP
  const std::uint32_t decoy = at("asm_leaf") | 1;
  std::map<std::uint32_t, std::uint32_t> memory;  // address -> word, the stack below kTop
  std::uint32_t sp = kTop;
  std::vector<std::uint32_t> returns;  // return address into chain[k] from chain[k + 1]
  std::vector<std::uint32_t> sp_at_call;
  for (std::size_t k = 0; k + 1 < chain.size(); ++k) {
    const ElfSymbol& f = symbols_[chain[k]];
    ASSERT_TRUE(f.value >= text_addr && f.value + f.size <= text_addr + text.size()) << chain[k];
    const std::uint32_t bl = find_bl(text, text_addr, f.value, f.value + f.size, at(chain[k + 1]));
    ASSERT_NE(bl, 0u) << chain[k] << " calls " << chain[k + 1] << " with BL";
    const Prologue p = decode_prologue(text, text_addr, f.value, bl);
    ASSERT_NE(p.lr_below, 0u) << chain[k] << ": no push of LR before its call";
    for (std::uint32_t a = sp - p.frame; a < sp; a += 4) memory[a] = decoy;
    memory[sp - p.lr_below] = k == 0 ? 0x12345678u : returns.back() | 1;  // gcc_start's: not code
    sp -= p.frame;
    returns.push_back(bl + 4);
    sp_at_call.push_back(sp);
  }
  // The sample's words: those in the code range (the device's filter), as offsets from `at_sp`.
  const auto sample_words = [&](std::uint32_t at_sp) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> words;
    for (const auto& [address, value] : memory) {
      if (address >= at_sp && (value & ~1u) >= text_addr && (value & ~1u) < text_addr + text.size()) {
        words.emplace_back((address - at_sp) / 4, value);
      }
    }
    return words;
  };
  const auto expect_chain = [&](const lt::ArmUnwindResult& r, std::uint32_t pc0, std::size_t first_return) {
    EXPECT_EQ(r.status, lt::ArmUnwindStatus::partial);
    EXPECT_NE(r.reason.find("not among the sample's stack words"), std::string::npos) << r.reason;
    std::vector<std::uint32_t> expected = {pc0};
    for (std::size_t k = first_return + 1; k-- > 0;) expected.push_back(returns[k]);
    std::vector<std::uint32_t> got;
    for (const lt::ArmFrame& f : r.frames) got.push_back(f.pc);
    EXPECT_EQ(got, expected);
  };

  // gcc_f1 at its first instruction: the return address still in LR.
  lt::ArmSample s;
  s.pc = at("gcc_f1") | 1;
  s.lr = returns.back() | 1;
  s.sp = sp;
  s.stack = sample_words(sp);
  expect_chain(lt::unwind_arm(cfi_, s, 32), at("gcc_f1"), returns.size() - 1);
  EXPECT_TRUE(lt::unwind_arm(cfi_, s, 32).frames[1].from_lr);

  // gcc_f3 at its BL to gcc_f2 (LR stale: a return address into gcc_f1's caller... not used).
  const std::size_t k3 = 4;  // chain[4] = gcc_f3
  s.pc = returns[k3] - 4;
  s.lr = decoy;
  s.sp = sp_at_call[k3];
  s.stack = sample_words(s.sp);
  expect_chain(lt::unwind_arm(cfi_, s, 32), returns[k3] - 4, k3 - 1);
}

INSTANTIATE_TEST_SUITE_P(O2AndOs, ArmFixture, ::testing::Values(LOOPCANARY_ARM_FIXTURE_O2, LOOPCANARY_ARM_FIXTURE_OS),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.index == 0 ? "O2" : "Os");
                         });

// A damaged copy of the fixture: every cut of its .debug_frame fails with an offset or parses.
TEST(ArmFixtureDamaged, TruncatedDebugFrame) {
  const Bytes frame = section_bytes(LOOPCANARY_ARM_FIXTURE_OS, ".debug_frame");
  ASSERT_GT(frame.size(), 64u);
  for (std::size_t n = 0; n < frame.size(); n += 3) {
    lt::ArmCfi cfi;
    std::string error;
    if (!lt::parse_debug_frame(frame.data(), n, cfi, error)) {
      EXPECT_EQ(error.rfind("debug_frame offset 0x", 0), 0u) << error;
    }
  }
}

// Truncated copies of the fixture's file: read_arm_cfi fails with a reason (the section headers
// sit at the end of the file) and never crashes; a missing section is named.
TEST(ArmFixtureDamaged, TruncatedFile) {
  std::ifstream in(LOOPCANARY_ARM_FIXTURE_O2, std::ios::binary | std::ios::ate);
  std::string image(static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  in.read(image.data(), static_cast<std::streamsize>(image.size()));
  ASSERT_GT(image.size(), 1024u);
  const std::string path = ::testing::TempDir() + "arm_unwind_truncated.elf";
  for (const std::size_t n : {std::size_t{0}, std::size_t{16}, std::size_t{52}, image.size() / 2, image.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(image.data(), static_cast<std::streamsize>(n));
    lt::ArmCfi cfi;
    std::string error;
    EXPECT_FALSE(lt::read_arm_cfi(path, cfi, error)) << n;
    EXPECT_FALSE(error.empty()) << n;
    EXPECT_TRUE(cfi.fdes.empty()) << n;
  }
  std::remove(path.c_str());
  lt::ElfInfo info;
  Bytes bytes;
  std::string error;
  EXPECT_FALSE(lt::read_elf_section(LOOPCANARY_ARM_FIXTURE_O2, ".eh_frame", info, bytes, error));
  EXPECT_EQ(error, "no section .eh_frame");
}

#endif  // LOOPCANARY_ARM_FIXTURE_O2
