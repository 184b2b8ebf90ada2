// SPDX-License-Identifier: MIT
// The Cortex-M unwinder (arm_unwind.hpp): the `.debug_frame` parser, the DW_CFA evaluator and the
// unwind of one sample.
#include "arm_unwind.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>

#include "symbolize.hpp"

namespace loopcanary::tool {

namespace {

constexpr std::uint16_t kEmArm = 40;
constexpr std::uint32_t kCieId = 0xffffffffu;
constexpr std::size_t kCoreRegisters = 16;
constexpr std::uint32_t kSp = 13;
constexpr std::uint32_t kLr = 14;
constexpr std::size_t kMaxRememberDepth = 16;

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(value));
  return text;
}

std::string at_offset(std::uint64_t offset, const std::string& what) {
  return "debug_frame offset " + hex(offset) + ": " + what;
}

std::uint32_t get_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// A bounds-checked reader over bytes whose first byte lies at section offset `base`.
class Cursor {
 public:
  Cursor(const std::uint8_t* data, std::size_t size, std::uint64_t base) : data_(data), size_(size), base_(base) {}
  bool done() const noexcept { return at_ == size_; }
  std::uint64_t offset() const noexcept { return base_ + at_; }
  std::size_t position() const noexcept { return at_; }
  bool u8(std::uint8_t& v) {
    if (size_ - at_ < 1) return false;
    v = data_[at_++];
    return true;
  }
  bool u16(std::uint32_t& v) {
    if (size_ - at_ < 2) return false;
    v = static_cast<std::uint32_t>(data_[at_]) | static_cast<std::uint32_t>(data_[at_ + 1]) << 8;
    at_ += 2;
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (size_ - at_ < 4) return false;
    v = get_u32(data_ + at_);
    at_ += 4;
    return true;
  }
  // Unsigned LEB128 of at most 10 bytes whose value fits 64 bits.
  bool uleb(std::uint64_t& v) {
    v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      std::uint8_t b = 0;
      if (!u8(b)) return false;
      const std::uint64_t part = b & 0x7fu;
      if (shift == 63 && part > 1) return false;
      v |= part << shift;
      if ((b & 0x80u) == 0) return true;
    }
    return false;
  }
  // Signed LEB128 of at most 10 bytes (the value taken modulo 2^64).
  bool sleb(std::int64_t& v) {
    std::uint64_t u = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      std::uint8_t b = 0;
      if (!u8(b)) return false;
      u |= static_cast<std::uint64_t>(b & 0x7fu) << shift;
      if ((b & 0x80u) == 0) {
        if (shift + 7 < 64 && (b & 0x40u) != 0) u |= ~std::uint64_t{0} << (shift + 7);
        v = static_cast<std::int64_t>(u);
        return true;
      }
    }
    return false;
  }
  bool skip(std::uint64_t count) {
    if (count > size_ - at_) return false;
    at_ += static_cast<std::size_t>(count);
    return true;
  }
  const std::uint8_t* here() const noexcept { return data_ + at_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::uint64_t base_;
  std::size_t at_ = 0;
};

// The rule of one register at a code location.
enum class RuleKind : std::uint8_t { same_value, undefined, offset, in_register, unsupported };
struct Rule {
  RuleKind kind = RuleKind::same_value;
  std::int64_t offset = 0;  // offset: the value is saved at CFA + offset
  std::uint32_t reg = 0;    // in_register: the value is in this register
  const char* why = "";     // unsupported: the instruction's name
};

// The CFA rule and the core registers' rules at a code location.
struct Row {
  bool cfa_defined = false;
  const char* cfa_unsupported = nullptr;  // the instruction that set an unsupported CFA rule
  std::uint32_t cfa_reg = kSp;
  std::int64_t cfa_offset = 0;
  std::array<Rule, kCoreRegisters> regs{};
};

// What one call frame instruction does to the location or the row.
enum class CfaAction : std::uint8_t {
  none,                // DW_CFA_nop, DW_CFA_GNU_args_size
  set_loc,             // location = `amount`
  advance,             // location += `amount` * code alignment factor
  set_rule,            // regs[reg] = `rule`
  restore,             // regs[reg] = the CIE's rule
  remember_state,      // pushes the row
  restore_state,       // pops the row
  def_cfa,             // CFA = reg + `offset`
  def_cfa_register,    // CFA register = reg
  def_cfa_offset,      // CFA offset = `offset`
  def_cfa_expression,  // CFA by a DWARF expression (unsupported)
};

// One decoded call frame instruction.
struct CfaInstruction {
  CfaAction action = CfaAction::none;
  const char* name = "";     // its name where an error text gives one (the advance_loc family: DW_CFA_advance_loc)
  std::uint64_t at = 0;      // section offset of the opcode
  std::uint64_t reg = 0;     // set_rule, restore, def_cfa, def_cfa_register (set_rule, restore: >= 16 not tracked)
  std::uint64_t amount = 0;  // set_loc: the address (bit 0 clear); advance: the delta in code alignment units
  std::int64_t offset = 0;   // def_cfa, def_cfa_offset: the CFA offset in bytes
  Rule rule;                 // set_rule
};

// How decoding one call frame instruction went.
enum class Decoded : std::uint8_t { ok, bad_operand, unknown };

// Reads a ULEB128 operand (at most INT64_MAX; negated when `negate`) times the data alignment factor into `out`.
bool uleb_factored(Cursor& c, bool negate, std::int64_t data_alignment, std::int64_t& out) {
  std::uint64_t u = 0;
  return c.uleb(u) && u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) &&
         !__builtin_mul_overflow(negate ? -static_cast<std::int64_t>(u) : static_cast<std::int64_t>(u), data_alignment,
                                 &out);
}

// Reads an SLEB128 operand times the data alignment factor into `out`.
bool sleb_factored(Cursor& c, std::int64_t data_alignment, std::int64_t& out) {
  std::int64_t s = 0;
  return c.sleb(s) && !__builtin_mul_overflow(s, data_alignment, &out);
}

// Skips a block operand (ULEB128 length, then the bytes).
bool skip_block(Cursor& c) {
  std::uint64_t n = 0;
  return c.uleb(n) && c.skip(n);
}

// Decodes the operands of the register-rule instruction `op` (extended forms) into `in`; unknown for other opcodes.
Decoded decode_rule_op(std::uint8_t op, Cursor& c, std::int64_t data_alignment, CfaInstruction& in) {
  std::uint64_t u = 0;
  std::int64_t s = 0;
  bool ok = false;
  in.action = CfaAction::set_rule;
  switch (op) {
    case 0x05:  // DW_CFA_offset_extended
    case 0x2f:  // DW_CFA_GNU_negative_offset_extended
      ok = c.uleb(in.reg) && uleb_factored(c, op == 0x2f, data_alignment, in.rule.offset);
      in.rule.kind = RuleKind::offset;
      break;
    case 0x06:  // DW_CFA_restore_extended
      ok = c.uleb(in.reg);
      in.action = CfaAction::restore;
      in.name = "DW_CFA_restore_extended";
      break;
    case 0x07:  // DW_CFA_undefined
    case 0x08:  // DW_CFA_same_value
      ok = c.uleb(in.reg);
      in.rule.kind = op == 0x07 ? RuleKind::undefined : RuleKind::same_value;
      break;
    case 0x09:  // DW_CFA_register
      ok = c.uleb(in.reg) && c.uleb(u);
      in.rule.kind = u < kCoreRegisters ? RuleKind::in_register : RuleKind::unsupported;
      in.rule.reg = static_cast<std::uint32_t>(u < kCoreRegisters ? u : 0);
      in.rule.why = "DW_CFA_register to a non-core register";
      break;
    case 0x10:  // DW_CFA_expression
    case 0x16:  // DW_CFA_val_expression
      ok = c.uleb(in.reg) && skip_block(c);
      in.rule.kind = RuleKind::unsupported;
      in.rule.why = op == 0x10 ? "DW_CFA_expression" : "DW_CFA_val_expression";
      break;
    case 0x11:  // DW_CFA_offset_extended_sf
      ok = c.uleb(in.reg) && sleb_factored(c, data_alignment, in.rule.offset);
      in.rule.kind = RuleKind::offset;
      break;
    case 0x14:  // DW_CFA_val_offset
    case 0x15:  // DW_CFA_val_offset_sf
      ok = c.uleb(in.reg) && (op == 0x14 ? c.uleb(u) : c.sleb(s));
      in.rule.kind = RuleKind::unsupported;
      in.rule.why = op == 0x14 ? "DW_CFA_val_offset" : "DW_CFA_val_offset_sf";
      break;
    default:
      in.action = CfaAction::none;
      return Decoded::unknown;
  }
  return ok ? Decoded::ok : Decoded::bad_operand;
}

// Decodes the operands of the CFA-defining instruction `op` into `in`; unknown for other opcodes.
Decoded decode_cfa_op(std::uint8_t op, Cursor& c, std::int64_t data_alignment, CfaInstruction& in) {
  std::uint64_t u = 0;
  bool ok = false;
  switch (op) {
    case 0x0c:  // DW_CFA_def_cfa
      ok = c.uleb(in.reg) && c.uleb(u) && u <= 0xffffffffu;
      in.offset = static_cast<std::int64_t>(u);
      in.action = CfaAction::def_cfa;
      in.name = "DW_CFA_def_cfa";
      break;
    case 0x0d:  // DW_CFA_def_cfa_register
      ok = c.uleb(in.reg);
      in.action = CfaAction::def_cfa_register;
      in.name = "DW_CFA_def_cfa_register";
      break;
    case 0x0e:  // DW_CFA_def_cfa_offset
      ok = c.uleb(u) && u <= 0xffffffffu;
      in.offset = static_cast<std::int64_t>(u);
      in.action = CfaAction::def_cfa_offset;
      break;
    case 0x0f:  // DW_CFA_def_cfa_expression
      ok = skip_block(c);
      in.action = CfaAction::def_cfa_expression;
      in.name = "DW_CFA_def_cfa_expression";
      break;
    case 0x12:  // DW_CFA_def_cfa_sf
      ok = c.uleb(in.reg) && sleb_factored(c, data_alignment, in.offset);
      in.action = CfaAction::def_cfa;
      in.name = "DW_CFA_def_cfa_sf";
      break;
    case 0x13:  // DW_CFA_def_cfa_offset_sf
      ok = sleb_factored(c, data_alignment, in.offset);
      in.action = CfaAction::def_cfa_offset;
      break;
    default:
      return Decoded::unknown;
  }
  return ok ? Decoded::ok : Decoded::bad_operand;
}

// Decodes the call frame instruction at `c` into `in`; false with `error` when it is unknown, truncated, has an
// out-of-range operand or defines the CFA by a register other than r0-r15.
bool decode_cfa(Cursor& c, std::int64_t data_alignment, CfaInstruction& in, std::string& error) {
  in = CfaInstruction{};
  in.at = c.offset();
  std::uint8_t op = 0;
  c.u8(op);
  Decoded decoded = Decoded::ok;
  if ((op & 0xc0u) == 0x40) {  // DW_CFA_advance_loc
    in.action = CfaAction::advance;
    in.name = "DW_CFA_advance_loc";
    in.amount = op & 0x3fu;
  } else if ((op & 0xc0u) == 0x80) {  // DW_CFA_offset
    in.reg = op & 0x3fu;
    in.action = CfaAction::set_rule;
    in.rule.kind = RuleKind::offset;
    if (!uleb_factored(c, false, data_alignment, in.rule.offset)) decoded = Decoded::bad_operand;
  } else if ((op & 0xc0u) == 0xc0) {  // DW_CFA_restore
    in.reg = op & 0x3fu;
    in.action = CfaAction::restore;
    in.name = "DW_CFA_restore";
  } else if (op == 0x01) {  // DW_CFA_set_loc
    std::uint32_t a = 0;
    if (!c.u32(a)) decoded = Decoded::bad_operand;
    in.amount = a & ~1u;
    in.action = CfaAction::set_loc;
    in.name = "DW_CFA_set_loc";
  } else if (op >= 0x02 && op <= 0x04) {  // DW_CFA_advance_loc1, 2, 4
    std::uint8_t d8 = 0;
    std::uint32_t d = 0;
    const bool ok = op == 0x02 ? c.u8(d8) : op == 0x03 ? c.u16(d) : c.u32(d);
    if (!ok) decoded = Decoded::bad_operand;
    in.amount = op == 0x02 ? d8 : d;
    in.action = CfaAction::advance;
    in.name = "DW_CFA_advance_loc";
  } else if (op == 0x0a || op == 0x0b) {  // DW_CFA_remember_state, DW_CFA_restore_state
    in.action = op == 0x0a ? CfaAction::remember_state : CfaAction::restore_state;
  } else if (op == 0x2e) {  // DW_CFA_GNU_args_size: no effect on the CFA or the saved registers
    std::uint64_t size = 0;
    if (!c.uleb(size)) decoded = Decoded::bad_operand;
  } else if (op != 0x00) {  // DW_CFA_nop has no operands; the rest are register-rule and CFA instructions
    decoded = decode_rule_op(op, c, data_alignment, in);
    if (decoded == Decoded::unknown) decoded = decode_cfa_op(op, c, data_alignment, in);
  }
  if (decoded == Decoded::unknown) {
    error = at_offset(in.at, "unknown call frame instruction " + hex(op));
    return false;
  }
  if (decoded == Decoded::bad_operand) {
    error = at_offset(in.at, "truncated or out-of-range operand of call frame instruction " + hex(op));
    return false;
  }
  if ((in.action == CfaAction::def_cfa || in.action == CfaAction::def_cfa_register) && in.reg >= kCoreRegisters) {
    error = at_offset(in.at, std::string(in.name) + ": register " + std::to_string(in.reg) + " is not a core register");
    return false;
  }
  return true;
}

// Where a location instruction leaves the location.
enum class Move : std::uint8_t { moved, past_target, backwards };

// Moves `loc` as the location instruction `in` (set_loc or advance) says, unless that passes `target` (the row for
// `target` is then complete) or a set_loc goes below `loc`.
Move move_location(const CfaInstruction& in, std::uint64_t code_alignment, std::uint64_t target, std::uint64_t& loc) {
  if (in.action == CfaAction::set_loc) {
    if (in.amount < loc) return Move::backwards;
    if (in.amount > target) return Move::past_target;
    loc = in.amount;
    return Move::moved;
  }
  std::uint64_t delta = 0;
  if (__builtin_mul_overflow(in.amount, code_alignment, &delta) || delta > target - loc) return Move::past_target;
  loc += delta;
  return Move::moved;
}

// Applies the row instruction `in` to `row`; `initial` is the CIE's row (for restore; not null), `remembered` the
// DW_CFA_remember_state stack. False with `error` when that stack is full (push) or empty (pop).
bool apply_to_row(const CfaInstruction& in, const Row* initial, Row& row, std::vector<Row>& remembered,
                  std::string& error) {
  switch (in.action) {
    case CfaAction::none:
    case CfaAction::set_loc:
    case CfaAction::advance:
      break;
    case CfaAction::set_rule:
      if (in.reg < kCoreRegisters) row.regs[in.reg] = in.rule;
      break;
    case CfaAction::restore:
      if (in.reg < kCoreRegisters) row.regs[in.reg] = initial->regs[in.reg];
      break;
    case CfaAction::remember_state:
      if (remembered.size() >= kMaxRememberDepth) {
        error = at_offset(in.at, "DW_CFA_remember_state nested deeper than 16");
        return false;
      }
      remembered.push_back(row);
      break;
    case CfaAction::restore_state:
      if (remembered.empty()) {
        error = at_offset(in.at, "DW_CFA_restore_state without DW_CFA_remember_state");
        return false;
      }
      row = remembered.back();
      remembered.pop_back();
      break;
    case CfaAction::def_cfa:
      row.cfa_defined = true;
      row.cfa_unsupported = nullptr;
      row.cfa_reg = static_cast<std::uint32_t>(in.reg);
      row.cfa_offset = in.offset;
      break;
    case CfaAction::def_cfa_register:
      row.cfa_reg = static_cast<std::uint32_t>(in.reg);
      break;
    case CfaAction::def_cfa_offset:
      row.cfa_offset = in.offset;
      break;
    case CfaAction::def_cfa_expression:
      row.cfa_defined = true;
      row.cfa_unsupported = in.name;
      break;
  }
  return true;
}

// Runs the instructions [data, data + size) (section offset `base`) on `row`, from location
// `loc`, up to and including the row for `target`. `initial` is the CIE's row (for restore); null
// while the CIE's own instructions run (a location or restore instruction is then an error).
bool run_cfa(const std::uint8_t* data, std::size_t size, std::uint64_t base, const ArmCie& cie, const Row* initial,
             std::uint64_t loc, std::uint64_t target, Row& row, std::string& error) {
  Cursor c(data, size, base);
  std::vector<Row> remembered;
  CfaInstruction in;
  while (!c.done()) {
    if (!decode_cfa(c, cie.data_alignment, in, error)) return false;
    const bool moves = in.action == CfaAction::set_loc || in.action == CfaAction::advance;
    if (initial == nullptr && (moves || in.action == CfaAction::restore)) {
      error = at_offset(in.at, std::string(in.name) + " in a CIE's initial instructions");
      return false;
    }
    if (!moves) {
      if (!apply_to_row(in, initial, row, remembered, error)) return false;
      continue;
    }
    const Move move = move_location(in, cie.code_alignment, target, loc);
    if (move == Move::past_target) return true;
    if (move == Move::backwards) {
      error = at_offset(in.at, "DW_CFA_set_loc moves backwards");
      return false;
    }
  }
  return true;
}

// Runs the initial instructions of `cie` on `row`.
bool run_cie(const ArmCie& cie, Row& row, std::string& error) {
  return run_cfa(cie.instructions.data(), cie.instructions.size(), cie.instructions_offset, cie, nullptr, 0, 0, row,
                 error);
}

// The rules of `fde` at `address` (CIE initial instructions, then the FDE's up to `address`).
bool evaluate(const ArmCfi& cfi, const ArmFde& fde, std::uint64_t address, Row& row, std::string& error) {
  const ArmCie& cie = cfi.cies[fde.cie];
  row = Row{};
  if (!run_cie(cie, row, error)) return false;
  const Row initial = row;
  return run_cfa(fde.instructions.data(), fde.instructions.size(), fde.instructions_offset, cie, &initial, fde.begin,
                 address, row, error);
}

// The augmentation string as printable text.
std::string printable(const std::uint8_t* p, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n && i < 32; ++i) s += (p[i] >= 0x20 && p[i] < 0x7f) ? static_cast<char>(p[i]) : '?';
  return n > 32 ? s + "..." : s;
}

// An FDE of the section, its CIE not yet looked up.
struct PendingFde {
  std::uint32_t offset;
  std::uint32_t cie_pointer;
  std::size_t body;  // after the CIE pointer
  std::size_t end;
};

// Parses the CIE whose length field is at section offset `at` and whose entry ends at `end` (its CIE id checked)
// into `cie`, and runs its initial instructions to check them.
bool parse_cie(const std::uint8_t* data, std::size_t at, std::size_t end, ArmCie& cie, std::string& error) {
  const auto fail = [&](const std::string& what) {
    error = at_offset(at, what);
    return false;
  };
  cie.offset = static_cast<std::uint32_t>(at);
  Cursor c(data + at + 8, end - at - 8, at + 8);
  const auto truncated = [&]() { return fail("CIE truncated at offset " + hex(c.offset())); };
  if (!c.u8(cie.version)) return truncated();
  if (cie.version != 1 && cie.version != 3 && cie.version != 4) {
    return fail("CIE version " + std::to_string(cie.version) + " is not supported (1, 3, 4)");
  }
  const std::uint8_t* augmentation = c.here();
  std::size_t augmentation_size = 0;
  for (std::uint8_t ch = 1; ch != 0; ++augmentation_size) {
    if (!c.u8(ch)) return truncated();
  }
  if (augmentation_size > 1) {
    return fail("CIE augmentation \"" + printable(augmentation, augmentation_size - 1) +
                "\" is not supported (only \"\")");
  }
  if (cie.version == 4) {
    std::uint8_t address_size = 0;
    std::uint8_t segment_size = 0;
    if (!c.u8(address_size) || !c.u8(segment_size)) return truncated();
    if (address_size != 4) return fail("CIE address size " + std::to_string(address_size) + " is not 4");
    if (segment_size != 0) return fail("CIE segment selector size " + std::to_string(segment_size) + " is not 0");
  }
  std::uint64_t ra = 0;
  if (!c.uleb(cie.code_alignment) || !c.sleb(cie.data_alignment)) return truncated();
  if (cie.version == 1) {
    std::uint8_t r = 0;
    if (!c.u8(r)) return truncated();
    ra = r;
  } else if (!c.uleb(ra)) {
    return truncated();
  }
  if (ra >= kCoreRegisters) return fail("CIE return address column " + std::to_string(ra) + " is not r0-r15");
  if (cie.code_alignment == 0) return fail("CIE code alignment factor 0");
  cie.return_column = static_cast<std::uint32_t>(ra);
  cie.instructions_offset = static_cast<std::uint32_t>(c.offset());
  cie.instructions.assign(c.here(), data + end);
  Row row;
  return run_cie(cie, row, error);
}

// Parses the FDE `p` into `fde` (its CIE looked up among the CIEs of `cfi`, which are in section order), and runs its
// instructions to check them.
bool parse_fde(const std::uint8_t* data, const PendingFde& p, const ArmCfi& cfi, ArmFde& fde, std::string& error) {
  const auto cie = std::lower_bound(cfi.cies.begin(), cfi.cies.end(), p.cie_pointer,
                                    [](const ArmCie& c, std::uint32_t offset) { return c.offset < offset; });
  if (cie == cfi.cies.end() || cie->offset != p.cie_pointer) {
    error = at_offset(p.offset, "FDE points at no CIE (" + hex(p.cie_pointer) + ")");
    return false;
  }
  if (p.end - p.body < 8) {
    error = at_offset(p.offset, "FDE truncated: no initial location and address range");
    return false;
  }
  fde.offset = p.offset;
  fde.cie = static_cast<std::size_t>(cie - cfi.cies.begin());
  fde.begin = get_u32(data + p.body) & ~1u;
  fde.end = std::uint64_t{fde.begin} + get_u32(data + p.body + 4);
  fde.instructions_offset = static_cast<std::uint32_t>(p.body + 8);
  fde.instructions.assign(data + p.body + 8, data + p.end);
  Row row;
  return evaluate(cfi, fde, std::numeric_limits<std::uint64_t>::max(), row, error);
}

// The sample's stack words, sorted by offset (for a repeated offset, the first pair counts).
class StackWords {
 public:
  explicit StackWords(const ArmSample& sample) : sp_(sample.sp), words_(sample.stack) {
    std::stable_sort(words_.begin(), words_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  // The sample's word at byte address `address`; false when it is not among the sample's words.
  bool at(std::int64_t address, std::uint32_t& v) const {
    if (address < std::int64_t{sp_}) return false;  // below the sample's SP (and no overflow below)
    const std::int64_t delta = address - std::int64_t{sp_};
    if (delta % 4 != 0 || delta / 4 > 0xffffffffLL) return false;
    const auto offset = static_cast<std::uint32_t>(delta / 4);
    const auto it = std::lower_bound(words_.begin(), words_.end(), offset,
                                     [](const auto& w, std::uint32_t o) { return w.first < o; });
    if (it == words_.end() || it->first != offset) return false;
    v = it->second;
    return true;
  }

 private:
  std::uint32_t sp_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> words_;
};

// The core registers of a frame during the unwind: their values, which are known, and which hold a return address
// of the sample (LR as captured or a stack word; SP and r7 as captured are not return addresses).
struct Registers {
  std::array<std::uint32_t, kCoreRegisters> value{};
  std::array<bool, kCoreRegisters> known{};
  std::array<bool, kCoreRegisters> return_source{};
};

// The registers of frame 0: SP and LR as captured, r7 when captured.
Registers sample_registers(const ArmSample& sample) {
  Registers regs;
  regs.value[kSp] = sample.sp;
  regs.known[kSp] = true;
  regs.value[kLr] = sample.lr;
  regs.known[kLr] = true;
  regs.return_source[kLr] = sample.has_lr;
  if (sample.has_r7) {
    regs.value[7] = sample.r7;
    regs.known[7] = true;
  }
  return regs;
}

// LR's value out of reset (ARMv6-M and ARMv7-M): the return address the reset handler's frame holds.
constexpr std::uint32_t kLrResetValue = 0xffffffffu;

// True for an EXC_RETURN value (0xFFFFFFxx), not LR's reset value.
bool is_exc_return(std::uint32_t v) { return (v & 0xffffff00u) == 0xffffff00u && v != kLrResetValue; }

// True when `v` is a 32-bit address.
bool fits_u32(std::int64_t v) { return v >= 0 && v <= 0xffffffffLL; }

// Ends the chain with `status` and `reason`; returns false (the chain does not go on).
bool end_chain(ArmUnwindResult& result, ArmUnwindStatus status, std::string reason) {
  result.status = status;
  result.reason = std::move(reason);
  return false;
}

// The chain when frame 0 has no usable CFI (`why`): the PC and LR as captured, LR left out when 0, an EXC_RETURN
// value (flagged) or beyond `max_frames`. Returns false (the chain ends).
bool pc_lr_only(const ArmSample& sample, std::size_t max_frames, std::string why, ArmUnwindResult& result) {
  if (sample.has_lr && sample.lr != 0 && sample.lr != kLrResetValue && !is_exc_return(sample.lr) && max_frames > 1) {
    result.frames.push_back({sample.lr & ~1u, 0, true});
  }
  result.exception_return = sample.has_lr && is_exc_return(sample.lr);
  return end_chain(result, ArmUnwindStatus::pc_lr_only, std::move(why));
}

// The rules `row` of the frame at `pc` (FDE lookup at `lookup`) and its return address column; false with `why` when
// there are none to unwind by: no FDE, CFI that does not evaluate, no CFA rule or an unsupported one.
bool frame_rules(const ArmCfi& cfi, std::uint32_t pc, std::uint32_t lookup, Row& row, std::uint32_t& ra_column,
                 std::string& why) {
  const ArmFde* fde = cfi.find(lookup);
  if (fde == nullptr) {
    why = "no CFI for " + hex32(pc);
  } else if (!evaluate(cfi, *fde, lookup, row, why)) {
    why = "CFI of " + hex32(pc) + ": " + why;
  } else if (!row.cfa_defined) {
    why = "no CFA rule for " + hex32(pc);
  } else if (row.cfa_unsupported != nullptr) {
    why = std::string("CFA rule of ") + hex32(pc) + " uses " + row.cfa_unsupported + " (unsupported)";
  } else {
    ra_column = cfi.cies[fde->cie].return_column;
    return true;
  }
  return false;
}

// `base` + `offset` (an address computed by a rule); -1, an address no stack word has, when the
// sum leaves the 64-bit range (the factored offsets of damaged CFI may come near its ends).
std::int64_t rule_address(std::int64_t base, std::int64_t offset) {
  std::int64_t sum = 0;
  return __builtin_add_overflow(base, offset, &sum) ? -1 : sum;
}

// The CFA by the rule of `row` with the registers `regs`; false when its register is unknown.
bool cfa_of(const Row& row, const Registers& regs, std::int64_t& cfa) {
  if (!regs.known[row.cfa_reg]) return false;
  cfa = rule_address(std::int64_t{regs.value[row.cfa_reg]}, row.cfa_offset);
  return true;
}

// The return address of the frame at `pc` by its rule `ra_rule` (column `ra_column`; not undefined): LR as captured,
// or a stack word of the sample at `cfa` + n. False with `why` when it is neither.
bool return_address(const Rule& ra_rule, std::uint32_t ra_column, std::uint32_t pc, std::int64_t cfa,
                    const Registers& regs, const StackWords& words, std::uint32_t& ra, bool& from_lr,
                    std::string& why) {
  switch (ra_rule.kind) {
    case RuleKind::undefined:  // the caller ends the chain at an undefined rule
    case RuleKind::same_value:
    case RuleKind::in_register: {
      const std::uint32_t source = ra_rule.kind == RuleKind::in_register ? ra_rule.reg : ra_column;
      if (!regs.known[source]) {
        why = "return address of " + hex32(pc) + " is in r" + std::to_string(source) +
              (source == kLr ? " (not saved), known only in the innermost frame" : ", unknown");
        return false;
      }
      if (!regs.return_source[source]) {
        why = "return address of " + hex32(pc) + " is in r" + std::to_string(source) +
              ", which holds no return address of the sample";
        return false;
      }
      ra = regs.value[source];
      from_lr = source == kLr;
      return true;
    }
    case RuleKind::offset:
      if (const std::int64_t address = rule_address(cfa, ra_rule.offset); !words.at(address, ra)) {
        why = "return address of " + hex32(pc) + " at " +
              (fits_u32(address) ? hex32(static_cast<std::uint32_t>(address)) : std::string("(out of range)")) +
              " is not among the sample's stack words";
        return false;
      }
      return true;
    case RuleKind::unsupported:
      why = "return address rule of " + hex32(pc) + " uses " + ra_rule.why + " (unsupported)";
      return false;
  }
  return false;
}

// The caller's registers: those of `regs` with the rules of `row` applied (a saved register restored where the
// sample has its word), SP the frame's `cfa`, and the return address column unknown (the caller's own return address
// is not what it holds).
Registers caller_registers(const Row& row, std::uint32_t ra_column, std::int64_t cfa, const StackWords& words,
                           const Registers& regs) {
  Registers next = regs;
  for (std::size_t r = 0; r < kCoreRegisters; ++r) {
    const Rule& rule = row.regs[r];
    switch (rule.kind) {
      case RuleKind::same_value:
        break;
      case RuleKind::undefined:
      case RuleKind::unsupported:
        next.known[r] = false;
        next.return_source[r] = false;
        break;
      case RuleKind::in_register:
        next.value[r] = regs.value[rule.reg];
        next.known[r] = regs.known[rule.reg];
        next.return_source[r] = regs.return_source[rule.reg];
        break;
      case RuleKind::offset:
        next.known[r] = words.at(rule_address(cfa, rule.offset), next.value[r]);
        next.return_source[r] = next.known[r];
        break;
    }
  }
  next.value[kSp] = static_cast<std::uint32_t>(cfa);
  next.known[kSp] = true;
  next.return_source[kSp] = false;
  next.known[ra_column] = false;
  return next;
}

// Makes the return address `ra` (found by the frame at `pc`) the next frame, unless the chain ends there: at 0 or
// at LR's reset value 0xFFFFFFFF (the outermost frame: the reset handler saved the LR it started with), an
// EXC_RETURN value, `max_frames` or an address below the code. False when it ends.
bool next_frame(std::uint32_t ra, bool from_lr, std::uint32_t pc, std::size_t max_frames, ArmUnwindResult& result) {
  if (ra == 0 || ra == kLrResetValue) return end_chain(result, ArmUnwindStatus::unwound, "");
  if (is_exc_return(ra)) {
    result.exception_return = true;
    return end_chain(result, ArmUnwindStatus::partial,
                     "EXC_RETURN " + hex32(ra) + " after " + hex32(pc) + ": an exception frame, not unwound across");
  }
  if (result.frames.size() >= max_frames) {
    return end_chain(result, ArmUnwindStatus::partial, "max_frames (" + std::to_string(max_frames) + ") reached");
  }
  result.frames.push_back({ra & ~1u, 0, from_lr});
  if ((ra & ~1u) < 2) {
    return end_chain(result, ArmUnwindStatus::partial, "return address " + hex32(ra) + " below the code");
  }
  return true;
}

// One step of the unwind: the rules of the last frame of `result` (registers `regs`) give its CFA and return
// address, which becomes the next frame, with `regs` becoming the caller's. False when the chain ends there.
bool unwind_step(const ArmCfi& cfi, const ArmSample& sample, const StackWords& words, std::size_t max_frames,
                 Registers& regs, ArmUnwindResult& result) {
  const bool innermost = result.frames.size() == 1;
  const std::uint32_t pc = result.frames.back().pc;
  if (innermost && cfi.returns_at(pc)) {  // `bx lr`: the frame is gone; the caller resumes at LR with this SP
    result.frames.back().cfa = regs.value[kSp];
    regs.known[kLr] = false;
    regs.return_source[kLr] = false;
    if (!sample.has_lr) {
      return end_chain(result, ArmUnwindStatus::partial,
                       "return address of " + hex32(pc) + " is in r14, which holds no return address of the sample");
    }
    return next_frame(sample.lr, true, pc, max_frames, result);
  }
  Row row;
  std::uint32_t ra_column = 0;
  std::string why;
  // Frame 0's PC is where it stopped; a caller's is a return address: its call is at PC - 2 (Thumb).
  if (!frame_rules(cfi, pc, innermost ? pc : pc - 2, row, ra_column, why)) {
    if (innermost) return pc_lr_only(sample, max_frames, std::move(why), result);
    return end_chain(result, ArmUnwindStatus::partial, std::move(why));
  }
  std::int64_t cfa = 0;
  const Rule& ra_rule = row.regs[ra_column];
  if (ra_rule.kind == RuleKind::undefined) {  // the outermost frame: its CFA does not matter
    if (cfa_of(row, regs, cfa) && fits_u32(cfa)) result.frames.back().cfa = static_cast<std::uint32_t>(cfa);
    return end_chain(result, ArmUnwindStatus::unwound, "");
  }
  if (!cfa_of(row, regs, cfa)) {
    return end_chain(result, ArmUnwindStatus::partial,
                     "CFA register r" + std::to_string(row.cfa_reg) + " unknown at " + hex32(pc));
  }
  if (!fits_u32(cfa)) return end_chain(result, ArmUnwindStatus::partial, "CFA out of range at " + hex32(pc));
  if (innermost ? cfa < regs.value[kSp] : cfa <= regs.value[kSp]) {
    return end_chain(result, ArmUnwindStatus::partial,
                     "CFA does not grow at " + hex32(pc) + " (CFA " + hex32(static_cast<std::uint32_t>(cfa)) +
                         ", SP " + hex32(regs.value[kSp]) + ")");
  }
  result.frames.back().cfa = static_cast<std::uint32_t>(cfa);
  std::uint32_t ra = 0;
  bool from_lr = false;
  if (!return_address(ra_rule, ra_column, pc, cfa, regs, words, ra, from_lr, why)) {
    return end_chain(result, ArmUnwindStatus::partial, std::move(why));
  }
  regs = caller_registers(row, ra_column, cfa, words, regs);
  return next_frame(ra, from_lr, pc, max_frames, result);
}

}  // namespace

bool ArmCfi::returns_at(std::uint32_t address) const noexcept {
  constexpr std::uint16_t kBxLr = 0x4770;
  if (address < code_address || address - code_address > code.size() || code.size() - (address - code_address) < 2) {
    return false;
  }
  const std::size_t at = address - code_address;
  return static_cast<std::uint16_t>(code[at] | code[at + 1] << 8) == kBxLr;
}

const ArmFde* ArmCfi::find(std::uint32_t address) const noexcept {
  auto it =
      std::upper_bound(fdes.begin(), fdes.end(), address, [](std::uint32_t a, const ArmFde& f) { return a < f.begin; });
  for (auto i = static_cast<std::size_t>(it - fdes.begin()); i > 0; --i) {
    if (i - 1 < reach.size() && reach[i - 1] <= address) return nullptr;  // no FDE with a lower begin reaches it
    if (address < fdes[i - 1].end) return &fdes[i - 1];
  }
  return nullptr;
}

bool parse_debug_frame(const std::uint8_t* data, std::size_t size, ArmCfi& out, std::string& error) {
  out = ArmCfi{};
  const auto failed = [&]() {
    out = ArmCfi{};
    return false;
  };
  const auto fail = [&](std::uint64_t offset, const std::string& what) {
    error = at_offset(offset, what);
    return failed();
  };
  if (size > 0xffffffffu) return fail(0, "section larger than 4 GiB");
  std::vector<PendingFde> pending;
  std::size_t at = 0;
  while (at < size) {
    if (size - at < 4) return fail(at, "truncated length field (" + std::to_string(size - at) + " bytes left)");
    const std::uint32_t length = get_u32(data + at);
    if (length == 0xffffffffu) return fail(at, "64-bit DWARF entry (length 0xffffffff) is not supported");
    if (length >= 0xfffffff0u) return fail(at, "reserved length value " + hex(length));
    if (length == 0) {
      at += 4;
      continue;
    }
    if (length > size - at - 4) {
      return fail(at, "length " + hex(length) + " runs past the end of the section (" + hex(size) + " bytes)");
    }
    if (length < 4) return fail(at, "entry of " + std::to_string(length) + " bytes has no CIE id");
    const std::size_t body = at + 4;
    const std::size_t end = body + length;
    const std::uint32_t id = get_u32(data + body);
    if (id != kCieId) {
      pending.push_back({static_cast<std::uint32_t>(at), id, body + 4, end});
    } else {
      ArmCie cie;
      if (!parse_cie(data, at, end, cie, error)) return failed();
      out.cies.push_back(std::move(cie));
    }
    at = end;
  }
  for (const PendingFde& p : pending) {
    ArmFde fde;
    if (!parse_fde(data, p, out, fde, error)) return failed();
    out.fdes.push_back(std::move(fde));
  }
  std::stable_sort(out.fdes.begin(), out.fdes.end(),
                   [](const ArmFde& a, const ArmFde& b) { return a.begin < b.begin; });
  std::uint64_t reach = 0;
  for (const ArmFde& f : out.fdes) {
    reach = std::max(reach, f.end);
    out.reach.push_back(reach);
  }
  return true;
}

bool read_arm_cfi(const std::string& elf_path, ArmCfi& out, std::string& error) {
  out = ArmCfi{};
  ElfInfo info;
  std::vector<std::uint8_t> bytes;
  if (!read_elf_section(elf_path, ".debug_frame", info, bytes, error)) {
    if (!error.empty() && error.rfind("no section", 0) == 0 &&
        (info.is64 || info.big_endian || info.machine != kEmArm)) {
      error = "not an ELF32 little-endian ARM file";
    }
    return false;
  }
  if (info.is64 || info.big_endian || info.machine != kEmArm) {
    error = "not an ELF32 little-endian ARM file";
    return false;
  }
  if (!parse_debug_frame(bytes.data(), bytes.size(), out, error)) return false;
  std::uint64_t address = 0;
  std::string no_text;
  if (read_elf_section(elf_path, ".text", info, out.code, no_text, &address) && address <= 0xffffffffu) {
    out.code_address = static_cast<std::uint32_t>(address);
  } else {
    out.code.clear();  // no return instruction recognised
  }
  return true;
}

ArmUnwindResult unwind_arm(const ArmCfi& cfi, const ArmSample& sample, std::size_t max_frames) {
  ArmUnwindResult result;
  max_frames = std::max<std::size_t>(max_frames, 1);
  const StackWords words(sample);
  Registers regs = sample_registers(sample);
  result.frames.push_back({sample.pc & ~1u, 0, false});
  while (unwind_step(cfi, sample, words, max_frames, regs, result)) {
  }
  return result;
}

}  // namespace loopcanary::tool
