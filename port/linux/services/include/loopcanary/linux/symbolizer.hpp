// SPDX-License-Identifier: MIT
// Host-side symbolisation of the program counters in block records.
//
// A program counter becomes module + offset (the ELF virtual address inside the executable or
// shared object, stable across runs and ASLR) plus the module's GNU build-id, which is what a
// log keeps so it can be symbolised later, on another machine. In-process, the Symbolizer also
// names the function (demangled) + offset from the module's own ELF symbol table: .symtab when
// present (non-exported functions too), else .dynsym; a separate debug file found by build-id
// under /usr/lib/debug/.build-id/ is preferred when installed. The vDSO is read from memory.
// source_line() adds file:line by running binutils' addr2line (no library dependency).
//
// Not for signal context (it allocates, maps files and takes a lock). Thread-safe.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace loopcanary::port_linux {

/// One loaded module.
struct ModuleInfo {
  char path[PATH_MAX] = {};   ///< file path, whole (up to PATH_MAX); "[vdso]" for the vDSO
  char build_id[41] = {};     ///< NT_GNU_BUILD_ID as hex, "" when the module has none
  std::uintptr_t bias = 0;    ///< load bias: run-time address = bias + ELF virtual address
  std::uintptr_t low = 0;     ///< span of its loaded segments, [low, high)
  std::uintptr_t high = 0;
};

/// What a program counter resolves to.
struct Symbol {
  bool in_module = false;            ///< the address lies in a loaded module
  std::size_t module = 0;            ///< index for Symbolizer::module()
  const char* module_path = "";      ///< valid while the Symbolizer lives (and until refresh())
  const char* build_id = "";
  std::uint64_t module_offset = 0;   ///< ELF virtual address of the program counter
  bool has_function = false;         ///< a function symbol was found
  bool exact = false;                ///< inside the symbol's size (false: nearest one below)
  char function[256] = {};           ///< demangled name, cut with "..." when longer
  std::uint64_t function_offset = 0; ///< program counter - function start
};

class Symbolizer {
 public:
  /// Takes a snapshot of the loaded modules.
  Symbolizer() noexcept;
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  /// Re-reads the list of loaded modules (after dlopen/dlclose). Symbol tables load lazily.
  void refresh() noexcept;

  /// Resolves `pc`. `return_address`: `pc` is a return address (every frame of a sample but
  /// the first), so the function is looked up at pc - 1, the call instruction. False when `pc`
  /// is in no loaded module (`out` still says so).
  bool symbolize(std::uintptr_t pc, bool return_address, Symbol& out) noexcept;

  /// Module + offset only (no symbol table), cheaper than symbolize().
  bool locate(std::uintptr_t pc, Symbol& out) noexcept;

  std::size_t module_count() const noexcept;
  /// A copy of module `index` (< module_count()).
  ModuleInfo module(std::size_t index) const noexcept;

  /// "file:line" (and the function, when `function` is not null) of `offset` in the ELF file
  /// `module_path`, from `addr2line -f -C -e`. False when addr2line is missing, fails, or
  /// knows no line ("??:0"). Blocks while addr2line runs.
  static bool source_line(const char* module_path, std::uint64_t offset, char* file_line, std::size_t size,
                          char* function = nullptr, std::size_t function_size = 0) noexcept;

 private:
  struct Table;
  struct Module;

  void scan_modules() noexcept;
  const Table* table_for(Module& module) noexcept;
  int find_module(std::uintptr_t pc) const noexcept;
  bool locate_locked(std::uintptr_t pc, Symbol& out) const noexcept;

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Module>> modules_;
};

/// Writes `bytes` as lower-case hex into `out` (2 * count + 1 characters). Any context.
void to_hex(const unsigned char* bytes, std::size_t count, char* out) noexcept;

}  // namespace loopcanary::port_linux
