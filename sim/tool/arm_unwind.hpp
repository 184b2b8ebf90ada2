// SPDX-License-Identifier: MIT
// A host-side unwinder for Cortex-M (Thumb, ELF32 little-endian EM_ARM) stack samples, driven by
// the firmware ELF's `.debug_frame` call-frame information (DWARF CFI, CIE versions 1, 3 and 4,
// 32-bit DWARF, augmentation "" only).
//
// A device sample carries the interrupted PC, LR and SP (and optionally r7, the Thumb frame
// pointer), plus some of the 32-bit words above SP: those whose value lies in the firmware's code
// range, each with its word offset from SP (a return address can only be such a word). The
// unwinder evaluates the CFI rules of each frame's PC to find its canonical frame address (CFA)
// and where its return address is: in LR (innermost frame only, where the prologue has not saved
// it yet) or in a stack word at CFA + n, which must be among the sample's words. It never
// invents a frame: every frame after the first is a return address read from the sample by a
// rule. Where the information ends (no CFI for a PC, a word not in the sample, a rule this
// unwinder does not evaluate), the chain ends as partial with the reason.
//
// Not supported: DWARF expressions (DW_CFA_def_cfa_expression, DW_CFA_expression,
// DW_CFA_val_expression) and value rules (DW_CFA_val_offset(_sf)): a frame whose CFA or return
// address needs one ends the chain as partial; `.eh_frame` and the ARM EHABI tables
// (`.ARM.exidx`/`.ARM.extab`); unwinding across an exception frame (an EXC_RETURN value ends the
// chain, flagged). Private to the tool (tests and fuzz targets include it); host code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loopcanary::tool {

/// One Common Information Entry of `.debug_frame`.
struct ArmCie {
  std::uint32_t offset = 0;                ///< section offset of the entry's length field
  std::uint8_t version = 0;                ///< 1, 3 or 4
  std::uint64_t code_alignment = 1;        ///< code alignment factor (bytes; ARM GCC: 2)
  std::int64_t data_alignment = 1;         ///< data alignment factor (bytes; ARM GCC: -4)
  std::uint32_t return_column = 14;        ///< DWARF register of the return address, 0..15 (lr = 14)
  std::uint32_t instructions_offset = 0;   ///< section offset of `instructions`
  std::vector<std::uint8_t> instructions;  ///< the initial instructions
};

/// One Frame Description Entry of `.debug_frame`: the code [begin, end) and its rules.
struct ArmFde {
  std::uint32_t offset = 0;                ///< section offset of the entry's length field
  std::uint32_t begin = 0;                 ///< initial location (ELF virtual address, bit 0 clear)
  std::uint64_t end = 0;                   ///< begin + address range (exclusive; up to 2^33)
  std::size_t cie = 0;                     ///< index into ArmCfi::cies
  std::uint32_t instructions_offset = 0;   ///< section offset of `instructions`
  std::vector<std::uint8_t> instructions;  ///< the FDE's instructions
};

/// The call-frame information of a firmware image.
struct ArmCfi {
  std::vector<ArmCie> cies;  ///< in section order
  std::vector<ArmFde> fdes;  ///< sorted by `begin` (ties: section order)
  /// reach[i]: the highest `end` among fdes[0..i] (set by parse_debug_frame; lets find() look
  /// back past overlapping FDEs, e.g. those a linker left at address 0 for discarded code).
  std::vector<std::uint64_t> reach;
  /// The firmware's instructions (its `.text` section at `code_address`; read_arm_cfi), to see
  /// where frame 0 stopped on a return instruction; empty: not known.
  std::uint32_t code_address = 0;
  std::vector<std::uint8_t> code;
  /// True when the instruction at `address` is `bx lr` (a return: the function's frame is gone,
  /// whatever its CFI says there); false when it is not or the code is not known there.
  bool returns_at(std::uint32_t address) const noexcept;
  /// The FDE whose [begin, end) holds `address`, the one with the highest begin when several
  /// do (binary search, then back over FDEs that still reach `address`); null when none does.
  const ArmFde* find(std::uint32_t address) const noexcept;
};

/// Parses `size` bytes of a `.debug_frame` section at `data` (null allowed when `size` is 0) into
/// `out` (replaced). Every instruction list is decoded once to check that it is well formed.
/// Returns false with one line in `error` naming the section offset of what is wrong, e.g.
/// "debug_frame offset 0x1a4: FDE points at no CIE (0x40)": 64-bit DWARF, a length past the end
/// of the section, a CIE version other than 1, 3, 4, an augmentation other than "" (named), an
/// address size other than 4, a segment selector, a return-address column above 15, a truncated
/// or unknown DW_CFA instruction, restore_state without remember_state, remember_state nested
/// deeper than 16. Zero length fields (padding) are skipped. `out` is empty after a failure.
bool parse_debug_frame(const std::uint8_t* data, std::size_t size, ArmCfi& out, std::string& error);

/// Reads the `.debug_frame` section of the ELF file `elf_path` (ELF32, little-endian, EM_ARM)
/// and parses it with parse_debug_frame; its `.text` section into ArmCfi::code (none when the
/// file has no `.text`: then no return instruction is recognised). False with a reason in `error`: the ELF reader's
/// (symbolize.hpp read_elf_section), "not an ELF32 little-endian ARM file", "no section
/// .debug_frame" (build with -g), or the parser's.
bool read_arm_cfi(const std::string& elf_path, ArmCfi& out, std::string& error);

/// One stack sample of a Cortex-M device.
struct ArmSample {
  std::uint32_t pc = 0;  ///< the interrupted PC (bit 0 ignored)
  std::uint32_t lr = 0;  ///< LR at the interrupt (Thumb return addresses have bit 0 set), valid when `has_lr`
  /// False when LR is not known to hold this sample's return address (a device's stack table
  /// entry whose samples had different LR values): a frame whose return address is in LR ends
  /// the chain as partial, and pc_lr_only gives the PC alone.
  bool has_lr = true;
  std::uint32_t sp = 0;  ///< SP at the interrupt (bytes, word aligned on a sane device)
  bool has_r7 = false;   ///< true when `r7` was captured
  std::uint32_t r7 = 0;  ///< r7 (the Thumb frame pointer), valid when `has_r7`
  /// The known words above SP: (word offset from SP, value); the word at byte address
  /// sp + 4 * offset. Any order; for a repeated offset, the first pair counts.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> stack;
};

/// How far an unwind got.
enum class ArmUnwindStatus {
  unwound,     ///< reached the outermost frame (its return-address rule is undefined, or RA 0)
  partial,     ///< some frames; `reason` says why the chain ends there
  pc_lr_only,  ///< no usable CFI for the PC: the frames are the PC and LR as captured (LR left
               ///< out when 0, LR's reset value 0xFFFFFFFF, an EXC_RETURN value, or beyond max_frames)
};

/// One frame of an unwound chain.
struct ArmFrame {
  std::uint32_t pc = 0;   ///< frame 0: the sample's PC; others: the return address (bit 0 clear)
  std::uint32_t cfa = 0;  ///< the frame's CFA; 0 when not computed (pc_lr_only; a frame whose
                          ///< rules or registers ended the chain before its CFA was known)
  bool from_lr = false;   ///< the return address that made this frame came from LR (frame 1 only)
};

/// The result of unwind_arm.
struct ArmUnwindResult {
  ArmUnwindStatus status = ArmUnwindStatus::partial;
  std::vector<ArmFrame> frames;   ///< innermost first; never empty
  std::string reason;             ///< why the chain ends, for partial and pc_lr_only ("" when unwound)
  bool exception_return = false;  ///< the chain ends at an EXC_RETURN value (0xFFFFFFxx but 0xFFFFFFFF)
};

/// Unwinds `sample` with `cfi` into at most `max_frames` frames (0 is taken as 1). Frame 0 is
/// the sample's PC; each further frame's PC is the return address the previous frame's rules
/// locate (FDE lookup at return address - 2, inside the Thumb call). The CFA register must be
/// known: SP always, r7 when captured or restored from the stack, others when restored. A return
/// address comes only from LR as captured (frame 0, where the rules say LR is not saved yet, or
/// where it stopped on `bx lr`: the frame is gone, the caller's SP is SP, whatever the CFI says
/// there, which the compiler's own helpers get wrong at that instruction) or from one of the
/// sample's stack words. The chain stops at: a return address of 0 or of LR's
/// reset value 0xFFFFFFFF, which the reset handler's frame holds (unwound),
/// an EXC_RETURN value (partial, flagged), a PC without FDE ("no CFI for 0x..."; pc_lr_only for
/// frame 0, as for unusable CFI there), a return address not among the sample's words, a CFA
/// below SP (frame 0) or not above it (further frames: "CFA does not grow"), an unsupported rule,
/// or `max_frames` (partial).
ArmUnwindResult unwind_arm(const ArmCfi& cfi, const ArmSample& sample, std::size_t max_frames);

}  // namespace loopcanary::tool
