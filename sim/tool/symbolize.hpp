// SPDX-License-Identifier: MIT
// The parts of `loopcanary symbolize` (docs/tool.md, "symbolize") that do not read records:
// what an ELF file says about itself (class, machine, GNU build-id, loadable segments), finding
// the file of a build-id under a debug directory, and running binutils' addr2line once per file
// over a batch of addresses. Private to the tool (tests include it); host code, one thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loopcanary::tool {

/// One PT_LOAD segment, as its program header says (ELF virtual addresses, bytes).
struct ElfSegment {
  std::uint64_t vaddr = 0;
  std::uint64_t memsz = 0;
  std::uint64_t offset = 0;  ///< p_offset: where its bytes start in the file
  bool executable = false;   ///< PF_X
};

/// What symbolize needs to know of an ELF file (ELF32 or ELF64, either byte order).
struct ElfInfo {
  bool is64 = false;
  bool big_endian = false;              ///< EI_DATA = ELFDATA2MSB
  std::uint16_t machine = 0;            ///< e_machine (EM_ARM = 40, EM_X86_64 = 62, ...)
  std::string build_id;                 ///< NT_GNU_BUILD_ID in lower-case hex, "" when none
  std::vector<ElfSegment> loads;        ///< PT_LOAD segments in file order
  /// True when `address` (an ELF virtual address) lies in a PT_LOAD segment, or when the file
  /// has no program headers (a relocatable object: nothing to check against).
  bool covers(std::uint64_t address) const noexcept;
};

/// Reads the ELF header, program headers and notes of `path` (only those parts: the file may be
/// large). The build-id comes from an SHT_NOTE section when the file has section headers (a
/// separate debug file keeps its notes there), else from PT_NOTE segments. Returns false with
/// a short reason in `error` ("not an ELF file", "cannot open: ...", "truncated program
/// headers", ...) for a file it cannot use; every offset is checked, a damaged file never
/// crashes the reader.
bool read_elf_info(const std::string& path, ElfInfo& out, std::string& error);

/// Reads the ELF header of `path` (as read_elf_info, into `info`) and the bytes of its section
/// named `name` (e.g. ".debug_frame") into `bytes`, found through the section-name string table
/// (extended section numbering and string-table index handled). Returns false with a short
/// reason in `error`: whatever read_elf_info reports, "no section headers", "no section NAME",
/// "section NAME has no bytes in the file" (SHT_NOBITS), "section NAME is truncated" (it runs
/// past the end of the file), "section NAME is too large" (over 256 MiB). Every offset is
/// checked; a damaged file never crashes the reader. `address`, when not null, gets the section's
/// address in the image (sh_addr).
bool read_elf_section(const std::string& path, const std::string& name, ElfInfo& info, std::vector<std::uint8_t>& bytes,
                      std::string& error, std::uint64_t* address = nullptr);

/// The addr2line program for an image of `machine`: "arm-none-eabi-addr2line" for EM_ARM
/// (device firmware), "addr2line" (the host's binutils) for anything else.
const char* addr2line_program(std::uint16_t machine) noexcept;

/// One source position of an address, as addr2line -f -C -i prints it.
struct SourceFrame {
  std::string function;   ///< demangled; "" when addr2line prints "??"
  std::string file;       ///< "" when unknown ("??")
  std::uint32_t line = 0; ///< 0 when unknown ("?" or 0)
};

/// The positions of one address, innermost first: with inlining, [0] is the inlined function
/// where the address lies and the last one the out-of-line function that contains it; without,
/// one entry. Empty when addr2line knew nothing (function, file and line all unknown).
using SourceChain = std::vector<SourceFrame>;

/// Runs `program -a -f -C -i -e elf` once with every address of `addresses` (ELF virtual
/// addresses, in the order given) on its standard input (from a temporary file, so a large
/// batch cannot deadlock on a pipe), and parses its output into `out` (same order, same
/// size). Returns false with a one-line reason in `error` when the program cannot be started,
/// fails, or prints something that does not parse; `out` is then empty.
bool run_addr2line(const std::string& program, const std::string& elf, const std::vector<std::uint64_t>& addresses,
                   std::vector<SourceChain>& out, std::string& error);

/// Parses addr2line's output for `-a -f -C -i` (groups: an address line "0x...", then pairs of
/// function line and file:line line) into `count` chains. False when the output does not have
/// exactly `count` groups or a group is malformed.
bool parse_addr2line_output(const std::string& text, std::size_t count, std::vector<SourceChain>& out);

/// Finds ELF files by GNU build-id under a debug directory DIR: first the GNU layout
/// DIR/.build-id/<first 2 hex digits>/<rest>.debug (then the same without ".debug"), then any
/// regular ELF file directly in DIR whose NT_GNU_BUILD_ID note matches (the directory is listed
/// once, on the first lookup the layout cannot answer). Each candidate's own build-id is read
/// and must match.
class DebugDirectory {
 public:
  explicit DebugDirectory(std::string directory) : directory_(std::move(directory)) {}
  /// The path of the file with `build_id` (lower-case hex, at least 2 digits), "" when none.
  std::string find(const std::string& build_id);

 private:
  std::string directory_;
  bool scanned_ = false;
  std::map<std::string, std::string> by_build_id_;  // from the plain listing
};

}  // namespace loopcanary::tool
