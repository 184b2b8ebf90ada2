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

// Runs the instructions [data, data + size) (section offset `base`) on `row`, from location
// `loc`, up to and including the row for `target`. `initial` is the CIE's row (for restore); null
// while the CIE's own instructions run (a location instruction is then an error).
bool run_cfa(const std::uint8_t* data, std::size_t size, std::uint64_t base, const ArmCie& cie, const Row* initial,
             std::uint64_t loc, std::uint64_t target, Row& row, std::string& error) {
  Cursor c(data, size, base);
  std::vector<Row> remembered;
  const auto fail = [&](std::uint64_t offset, const std::string& what) {
    error = at_offset(offset, what);
    return false;
  };
  const auto factored = [&](std::int64_t n, std::int64_t& out) {
    return !__builtin_mul_overflow(n, cie.data_alignment, &out);
  };
  while (!c.done()) {
    const std::uint64_t op_at = c.offset();
    std::uint8_t op = 0;
    c.u8(op);
    const std::uint8_t high = op & 0xc0u;
    const std::uint8_t low = op & 0x3fu;
    std::uint64_t advance = 0;
    bool is_advance = false;
    std::uint64_t reg = 0;
    std::uint64_t u = 0;
    std::int64_t s = 0;
    bool ok = true;
    // The rule to set: register and rule (reg >= 16: accepted, not tracked).
    bool set_rule = false;
    Rule rule;
    if (high == 0x40) {  // DW_CFA_advance_loc
      is_advance = true;
      advance = low;
    } else if (high == 0x80) {  // DW_CFA_offset
      reg = low;
      std::int64_t off = 0;
      ok = c.uleb(u) && u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) &&
           factored(static_cast<std::int64_t>(u), off);
      rule.kind = RuleKind::offset;
      rule.offset = off;
      set_rule = true;
    } else if (high == 0xc0) {  // DW_CFA_restore
      if (initial == nullptr) return fail(op_at, "DW_CFA_restore in a CIE's initial instructions");
      if (low < kCoreRegisters) row.regs[low] = initial->regs[low];
    } else {
      switch (op) {
        case 0x00:  // DW_CFA_nop
          break;
        case 0x01: {  // DW_CFA_set_loc
          std::uint32_t a = 0;
          ok = c.u32(a);
          if (ok) {
            if (initial == nullptr) return fail(op_at, "DW_CFA_set_loc in a CIE's initial instructions");
            if ((a & ~1u) < loc) return fail(op_at, "DW_CFA_set_loc moves backwards");
            if ((a & ~1u) > target) return true;
            loc = a & ~1u;
          }
          break;
        }
        case 0x02: {  // DW_CFA_advance_loc1
          std::uint8_t d = 0;
          ok = c.u8(d);
          is_advance = true;
          advance = d;
          break;
        }
        case 0x03: {  // DW_CFA_advance_loc2
          std::uint32_t d = 0;
          ok = c.u16(d);
          is_advance = true;
          advance = d;
          break;
        }
        case 0x04: {  // DW_CFA_advance_loc4
          std::uint32_t d = 0;
          ok = c.u32(d);
          is_advance = true;
          advance = d;
          break;
        }
        case 0x05:    // DW_CFA_offset_extended
        case 0x2f: {  // DW_CFA_GNU_negative_offset_extended
          std::int64_t off = 0;
          ok = c.uleb(reg) && c.uleb(u) && u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) &&
               factored(op == 0x05 ? static_cast<std::int64_t>(u) : -static_cast<std::int64_t>(u), off);
          rule.kind = RuleKind::offset;
          rule.offset = off;
          set_rule = true;
          break;
        }
        case 0x06:  // DW_CFA_restore_extended
          ok = c.uleb(reg);
          if (ok && initial == nullptr) return fail(op_at, "DW_CFA_restore_extended in a CIE's initial instructions");
          if (ok && reg < kCoreRegisters) row.regs[reg] = initial->regs[reg];
          break;
        case 0x07:  // DW_CFA_undefined
          ok = c.uleb(reg);
          rule.kind = RuleKind::undefined;
          set_rule = true;
          break;
        case 0x08:  // DW_CFA_same_value
          ok = c.uleb(reg);
          set_rule = true;
          break;
        case 0x09:  // DW_CFA_register
          ok = c.uleb(reg) && c.uleb(u);
          rule.kind = u < kCoreRegisters ? RuleKind::in_register : RuleKind::unsupported;
          rule.reg = static_cast<std::uint32_t>(u < kCoreRegisters ? u : 0);
          rule.why = "DW_CFA_register to a non-core register";
          set_rule = true;
          break;
        case 0x0a:  // DW_CFA_remember_state
          if (remembered.size() >= kMaxRememberDepth) return fail(op_at, "DW_CFA_remember_state nested deeper than 16");
          remembered.push_back(row);
          break;
        case 0x0b:  // DW_CFA_restore_state
          if (remembered.empty()) return fail(op_at, "DW_CFA_restore_state without DW_CFA_remember_state");
          row = remembered.back();
          remembered.pop_back();
          break;
        case 0x0c:  // DW_CFA_def_cfa
          ok = c.uleb(reg) && c.uleb(u) && u <= 0xffffffffu;
          if (ok && reg >= kCoreRegisters)
            return fail(op_at, "DW_CFA_def_cfa: register " + std::to_string(reg) + " is not a core register");
          if (ok) {
            row.cfa_defined = true;
            row.cfa_unsupported = nullptr;
            row.cfa_reg = static_cast<std::uint32_t>(reg);
            row.cfa_offset = static_cast<std::int64_t>(u);
          }
          break;
        case 0x0d:  // DW_CFA_def_cfa_register
          ok = c.uleb(reg);
          if (ok && reg >= kCoreRegisters)
            return fail(op_at, "DW_CFA_def_cfa_register: register " + std::to_string(reg) + " is not a core register");
          if (ok) row.cfa_reg = static_cast<std::uint32_t>(reg);
          break;
        case 0x0e:  // DW_CFA_def_cfa_offset
          ok = c.uleb(u) && u <= 0xffffffffu;
          if (ok) row.cfa_offset = static_cast<std::int64_t>(u);
          break;
        case 0x0f:  // DW_CFA_def_cfa_expression
          ok = c.uleb(u) && c.skip(u);
          row.cfa_defined = true;
          row.cfa_unsupported = "DW_CFA_def_cfa_expression";
          break;
        case 0x10:  // DW_CFA_expression
          ok = c.uleb(reg) && c.uleb(u) && c.skip(u);
          rule.kind = RuleKind::unsupported;
          rule.why = "DW_CFA_expression";
          set_rule = true;
          break;
        case 0x11: {  // DW_CFA_offset_extended_sf
          std::int64_t off = 0;
          ok = c.uleb(reg) && c.sleb(s) && factored(s, off);
          rule.kind = RuleKind::offset;
          rule.offset = off;
          set_rule = true;
          break;
        }
        case 0x12:    // DW_CFA_def_cfa_sf
        case 0x13: {  // DW_CFA_def_cfa_offset_sf
          std::int64_t off = 0;
          ok = (op == 0x13 || c.uleb(reg)) && c.sleb(s) && factored(s, off);
          if (ok && op == 0x12 && reg >= kCoreRegisters)
            return fail(op_at, "DW_CFA_def_cfa_sf: register " + std::to_string(reg) + " is not a core register");
          if (ok) {
            if (op == 0x12) {
              row.cfa_defined = true;
              row.cfa_unsupported = nullptr;
              row.cfa_reg = static_cast<std::uint32_t>(reg);
            }
            row.cfa_offset = off;
          }
          break;
        }
        case 0x14:  // DW_CFA_val_offset
        case 0x15:  // DW_CFA_val_offset_sf
          ok = c.uleb(reg) && (op == 0x14 ? c.uleb(u) : c.sleb(s));
          rule.kind = RuleKind::unsupported;
          rule.why = op == 0x14 ? "DW_CFA_val_offset" : "DW_CFA_val_offset_sf";
          set_rule = true;
          break;
        case 0x16:  // DW_CFA_val_expression
          ok = c.uleb(reg) && c.uleb(u) && c.skip(u);
          rule.kind = RuleKind::unsupported;
          rule.why = "DW_CFA_val_expression";
          set_rule = true;
          break;
        case 0x2e:  // DW_CFA_GNU_args_size: no effect on the CFA or the saved registers
          ok = c.uleb(u);
          break;
        default:
          return fail(op_at, "unknown call frame instruction " + hex(op));
      }
    }
    if (!ok) return fail(op_at, "truncated or out-of-range operand of call frame instruction " + hex(op));
    if (set_rule && reg < kCoreRegisters) row.regs[reg] = rule;
    if (is_advance) {
      if (initial == nullptr) return fail(op_at, "DW_CFA_advance_loc in a CIE's initial instructions");
      std::uint64_t delta = 0;
      if (__builtin_mul_overflow(advance, cie.code_alignment, &delta) || delta > target - loc) return true;
      loc += delta;
    }
  }
  return true;
}

// The rules of `fde` at `address` (CIE initial instructions, then the FDE's up to `address`).
bool evaluate(const ArmCfi& cfi, const ArmFde& fde, std::uint64_t address, Row& row, std::string& error) {
  const ArmCie& cie = cfi.cies[fde.cie];
  row = Row{};
  if (!run_cfa(cie.instructions.data(), cie.instructions.size(), cie.instructions_offset, cie, nullptr, 0, 0, row,
               error)) {
    return false;
  }
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

}  // namespace

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
  struct PendingFde {
    std::uint32_t offset;
    std::uint32_t cie_pointer;
    std::size_t body;  // after the CIE pointer
    std::size_t end;
  };
  std::vector<PendingFde> pending;
  const auto fail = [&](std::uint64_t offset, const std::string& what) {
    error = at_offset(offset, what);
    out = ArmCfi{};
    return false;
  };
  if (size > 0xffffffffu) return fail(0, "section larger than 4 GiB");
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
      at = end;
      continue;
    }
    ArmCie cie;
    cie.offset = static_cast<std::uint32_t>(at);
    Cursor c(data + body + 4, length - 4, body + 4);
    const auto truncated = [&]() { return fail(at, "CIE truncated at offset " + hex(c.offset())); };
    if (!c.u8(cie.version)) return truncated();
    if (cie.version != 1 && cie.version != 3 && cie.version != 4) {
      return fail(at, "CIE version " + std::to_string(cie.version) + " is not supported (1, 3, 4)");
    }
    const std::uint8_t* augmentation = c.here();
    std::size_t augmentation_size = 0;
    for (std::uint8_t ch = 1; ch != 0; ++augmentation_size) {
      if (!c.u8(ch)) return truncated();
    }
    if (augmentation_size > 1) {
      return fail(at, "CIE augmentation \"" + printable(augmentation, augmentation_size - 1) +
                          "\" is not supported (only \"\")");
    }
    if (cie.version == 4) {
      std::uint8_t address_size = 0;
      std::uint8_t segment_size = 0;
      if (!c.u8(address_size) || !c.u8(segment_size)) return truncated();
      if (address_size != 4) return fail(at, "CIE address size " + std::to_string(address_size) + " is not 4");
      if (segment_size != 0) return fail(at, "CIE segment selector size " + std::to_string(segment_size) + " is not 0");
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
    if (ra >= kCoreRegisters) return fail(at, "CIE return address column " + std::to_string(ra) + " is not r0-r15");
    if (cie.code_alignment == 0) return fail(at, "CIE code alignment factor 0");
    cie.return_column = static_cast<std::uint32_t>(ra);
    cie.instructions_offset = static_cast<std::uint32_t>(c.offset());
    cie.instructions.assign(c.here(), data + end);
    Row row;
    if (!run_cfa(cie.instructions.data(), cie.instructions.size(), cie.instructions_offset, cie, nullptr, 0, 0, row,
                 error)) {
      out = ArmCfi{};
      return false;
    }
    out.cies.push_back(std::move(cie));
    at = end;
  }
  for (const PendingFde& p : pending) {
    // The CIEs are in section order: sorted by offset.
    const auto cie = std::lower_bound(out.cies.begin(), out.cies.end(), p.cie_pointer,
                                      [](const ArmCie& c, std::uint32_t offset) { return c.offset < offset; });
    if (cie == out.cies.end() || cie->offset != p.cie_pointer)
      return fail(p.offset, "FDE points at no CIE (" + hex(p.cie_pointer) + ")");
    if (p.end - p.body < 8) return fail(p.offset, "FDE truncated: no initial location and address range");
    ArmFde fde;
    fde.offset = p.offset;
    fde.cie = static_cast<std::size_t>(cie - out.cies.begin());
    fde.begin = get_u32(data + p.body) & ~1u;
    fde.end = std::uint64_t{fde.begin} + get_u32(data + p.body + 4);
    fde.instructions_offset = static_cast<std::uint32_t>(p.body + 8);
    fde.instructions.assign(data + p.body + 8, data + p.end);
    out.fdes.push_back(std::move(fde));
    Row row;
    if (!evaluate(out, out.fdes.back(), std::numeric_limits<std::uint64_t>::max(), row, error)) {
      out = ArmCfi{};
      return false;
    }
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
  return parse_debug_frame(bytes.data(), bytes.size(), out, error);
}

ArmUnwindResult unwind_arm(const ArmCfi& cfi, const ArmSample& sample, std::size_t max_frames) {
  ArmUnwindResult result;
  max_frames = std::max<std::size_t>(max_frames, 1);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> words(sample.stack);
  std::stable_sort(words.begin(), words.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  std::array<std::uint32_t, kCoreRegisters> value{};
  std::array<bool, kCoreRegisters> known{};
  value[kSp] = sample.sp;
  known[kSp] = true;
  value[kLr] = sample.lr;
  known[kLr] = true;
  // Registers whose value is LR as captured or a stack word: the only places a return address
  // may come from (SP and r7 as captured are not return addresses).
  std::array<bool, kCoreRegisters> return_source{};
  return_source[kLr] = true;
  if (sample.has_r7) {
    value[7] = sample.r7;
    known[7] = true;
  }
  // The sample's word at byte address `address`; false when it is not among the sample's words.
  const auto word_at = [&](std::int64_t address, std::uint32_t& v) {
    const std::int64_t delta = address - std::int64_t{sample.sp};
    if (delta < 0 || delta % 4 != 0 || delta / 4 > 0xffffffffLL) return false;
    const auto offset = static_cast<std::uint32_t>(delta / 4);
    const auto it = std::lower_bound(words.begin(), words.end(), offset,
                                     [](const auto& w, std::uint32_t o) { return w.first < o; });
    if (it == words.end() || it->first != offset) return false;
    v = it->second;
    return true;
  };
  const auto is_exc_return = [](std::uint32_t v) { return (v & 0xffffff00u) == 0xffffff00u; };
  const auto stop = [&result](ArmUnwindStatus status, std::string reason) {
    result.status = status;
    result.reason = std::move(reason);
    return result;
  };

  std::uint32_t pc = sample.pc & ~1u;
  std::uint32_t lookup = pc;
  result.frames.push_back({pc, 0, false});
  for (;;) {
    const bool innermost = result.frames.size() == 1;
    const ArmFde* fde = cfi.find(lookup);
    Row row;
    std::string why;
    if (fde == nullptr) {
      why = "no CFI for " + hex32(pc);
    } else if (!evaluate(cfi, *fde, lookup, row, why)) {
      why = "CFI of " + hex32(pc) + ": " + why;
    } else if (!row.cfa_defined) {
      why = "no CFA rule for " + hex32(pc);
    } else if (row.cfa_unsupported != nullptr) {
      why = std::string("CFA rule of ") + hex32(pc) + " uses " + row.cfa_unsupported + " (unsupported)";
    }
    if (!why.empty()) {
      if (!innermost) return stop(ArmUnwindStatus::partial, why);
      if (sample.lr != 0 && !is_exc_return(sample.lr) && max_frames > 1) {
        result.frames.push_back({sample.lr & ~1u, 0, true});
      }
      result.exception_return = is_exc_return(sample.lr);
      return stop(ArmUnwindStatus::pc_lr_only, why);
    }
    const std::uint32_t ra_column = cfi.cies[fde->cie].return_column;
    const Rule& ra_rule = row.regs[ra_column];
    if (ra_rule.kind == RuleKind::undefined) {  // the outermost frame: its CFA does not matter
      if (known[row.cfa_reg]) {
        const std::int64_t cfa = std::int64_t{value[row.cfa_reg]} + row.cfa_offset;
        if (cfa >= 0 && cfa <= 0xffffffffLL) result.frames.back().cfa = static_cast<std::uint32_t>(cfa);
      }
      result.status = ArmUnwindStatus::unwound;
      return result;
    }
    if (!known[row.cfa_reg]) {
      return stop(ArmUnwindStatus::partial,
                  "CFA register r" + std::to_string(row.cfa_reg) + " unknown at " + hex32(pc));
    }
    const std::int64_t cfa = std::int64_t{value[row.cfa_reg]} + row.cfa_offset;
    if (cfa < 0 || cfa > 0xffffffffLL) return stop(ArmUnwindStatus::partial, "CFA out of range at " + hex32(pc));
    if (innermost ? cfa < value[kSp] : cfa <= value[kSp]) {
      return stop(ArmUnwindStatus::partial, "CFA does not grow at " + hex32(pc) + " (CFA " +
                                                hex32(static_cast<std::uint32_t>(cfa)) + ", SP " + hex32(value[kSp]) +
                                                ")");
    }
    result.frames.back().cfa = static_cast<std::uint32_t>(cfa);

    // The return address.
    std::uint32_t ra = 0;
    bool from_lr = false;
    switch (ra_rule.kind) {
      case RuleKind::undefined:  // handled above
      case RuleKind::same_value:
      case RuleKind::in_register: {
        const std::uint32_t source = ra_rule.kind == RuleKind::in_register ? ra_rule.reg : ra_column;
        if (!known[source]) {
          return stop(ArmUnwindStatus::partial,
                      "return address of " + hex32(pc) + " is in r" + std::to_string(source) +
                          (source == kLr ? " (not saved), known only in the innermost frame" : ", unknown"));
        }
        if (!return_source[source]) {
          return stop(ArmUnwindStatus::partial, "return address of " + hex32(pc) + " is in r" + std::to_string(source) +
                                                    ", which holds no return address of the sample");
        }
        ra = value[source];
        from_lr = source == kLr;
        break;
      }
      case RuleKind::offset:
        if (!word_at(cfa + ra_rule.offset, ra)) {
          const std::int64_t address = cfa + ra_rule.offset;
          return stop(ArmUnwindStatus::partial,
                      "return address of " + hex32(pc) + " at " +
                          (address >= 0 && address <= 0xffffffffLL ? hex32(static_cast<std::uint32_t>(address))
                                                                   : std::string("(out of range)")) +
                          " is not among the sample's stack words");
        }
        break;
      case RuleKind::unsupported:
        return stop(ArmUnwindStatus::partial,
                    "return address rule of " + hex32(pc) + " uses " + ra_rule.why + " (unsupported)");
    }

    // The caller's registers: restored where the rules say and the sample has the word.
    std::array<std::uint32_t, kCoreRegisters> next = value;
    std::array<bool, kCoreRegisters> next_known = known;
    std::array<bool, kCoreRegisters> next_source = return_source;
    for (std::size_t r = 0; r < kCoreRegisters; ++r) {
      const Rule& rule = row.regs[r];
      switch (rule.kind) {
        case RuleKind::same_value:
          break;
        case RuleKind::undefined:
        case RuleKind::unsupported:
          next_known[r] = false;
          next_source[r] = false;
          break;
        case RuleKind::in_register:
          next[r] = value[rule.reg];
          next_known[r] = known[rule.reg];
          next_source[r] = return_source[rule.reg];
          break;
        case RuleKind::offset:
          next_known[r] = word_at(cfa + rule.offset, next[r]);
          next_source[r] = next_known[r];
          break;
      }
    }
    next[kSp] = static_cast<std::uint32_t>(cfa);
    next_known[kSp] = true;
    next_source[kSp] = false;
    next_known[ra_column] = false;  // the caller's own return address is not what it holds
    value = next;
    known = next_known;
    return_source = next_source;

    if (ra == 0) {
      result.status = ArmUnwindStatus::unwound;
      return result;
    }
    if (is_exc_return(ra)) {
      result.exception_return = true;
      return stop(ArmUnwindStatus::partial,
                  "EXC_RETURN " + hex32(ra) + " after " + hex32(pc) + ": an exception frame, not unwound across");
    }
    if (result.frames.size() >= max_frames) {
      return stop(ArmUnwindStatus::partial, "max_frames (" + std::to_string(max_frames) + ") reached");
    }
    pc = ra & ~1u;
    result.frames.push_back({pc, 0, from_lr});
    if (pc < 2) return stop(ArmUnwindStatus::partial, "return address " + hex32(ra) + " below the code");
    lookup = pc - 2;
  }
}

}  // namespace loopcanary::tool
