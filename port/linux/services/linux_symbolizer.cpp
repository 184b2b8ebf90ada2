// SPDX-License-Identifier: MIT
#include "loopcanary/linux/symbolizer.hpp"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace loopcanary::port_linux {

// A function symbol table, sorted by address. Names point into `mapping` (or into the vDSO).
struct Symbolizer::Table {
  struct Entry {
    std::uint64_t address;
    std::uint64_t size;
    const char* name;
  };
  std::vector<Entry> entries;
  void* mapping = nullptr;
  std::size_t mapping_size = 0;

  Table() = default;
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  ~Table() {
    if (mapping != nullptr) munmap(mapping, mapping_size);
  }
};

struct Symbolizer::Module {
  ModuleInfo info;
  const unsigned char* image = nullptr;  // in-memory ELF image (the vDSO), else null
  bool table_tried = false;
  std::unique_ptr<Table> table;
};

namespace {

void copy_text(char* out, std::size_t size, const char* text) noexcept {
  if (size == 0) return;
  std::size_t n = std::strlen(text);
  if (n >= size) {
    n = size - 1;
    if (n >= 3) std::memcpy(out + n - 3, "...", 3);  // mark the cut
    std::memcpy(out, text, n - (n >= 3 ? 3 : 0));
  } else {
    std::memcpy(out, text, n);
  }
  out[n] = '\0';
}

template <class T>
bool read_struct(const unsigned char* data, std::size_t size, std::uint64_t offset, T& out) noexcept {
  if (offset > size || size - offset < sizeof(T)) return false;
  std::memcpy(&out, data + offset, sizeof(T));
  return true;
}

// Function symbols of the ELF image [data, data + size): .symtab when present, else .dynsym.
// Every offset is checked against `size`: a damaged file yields no symbols, never a crash.
bool parse_symbols(const unsigned char* data, std::size_t size,
                   std::vector<std::pair<std::uint64_t, std::pair<std::uint64_t, const char*>>>& out) noexcept {
  Elf64_Ehdr eh;
  if (!read_struct(data, size, 0, eh)) return false;
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0) {
    return false;
  }
  const std::uint64_t shnum = eh.e_shnum;
  if (eh.e_shoff > size || (size - eh.e_shoff) / sizeof(Elf64_Shdr) < shnum) return false;
  auto section = [&](std::uint64_t i, Elf64_Shdr& sh) {
    return read_struct(data, size, eh.e_shoff + i * sizeof(Elf64_Shdr), sh);
  };
  for (const std::uint32_t wanted : {static_cast<std::uint32_t>(SHT_SYMTAB), static_cast<std::uint32_t>(SHT_DYNSYM)}) {
    for (std::uint64_t i = 0; i < shnum; ++i) {
      Elf64_Shdr symtab;
      Elf64_Shdr strtab;
      if (!section(i, symtab) || symtab.sh_type != wanted || symtab.sh_entsize != sizeof(Elf64_Sym)) continue;
      if (symtab.sh_link >= shnum || !section(symtab.sh_link, strtab) || strtab.sh_type != SHT_STRTAB) continue;
      if (symtab.sh_offset > size || size - symtab.sh_offset < symtab.sh_size) continue;
      if (strtab.sh_offset > size || size - strtab.sh_offset < strtab.sh_size || strtab.sh_size == 0) continue;
      const char* strings = reinterpret_cast<const char*>(data + strtab.sh_offset);
      const std::uint64_t count = symtab.sh_size / sizeof(Elf64_Sym);
      const std::size_t before = out.size();
      for (std::uint64_t k = 0; k < count; ++k) {
        Elf64_Sym sym;
        if (!read_struct(data, size, symtab.sh_offset + k * sizeof(Elf64_Sym), sym)) break;
        const unsigned type = ELF64_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
        if (sym.st_name >= strtab.sh_size ||
            std::memchr(strings + sym.st_name, '\0', strtab.sh_size - sym.st_name) == nullptr) {
          continue;
        }
        out.push_back({sym.st_value, {sym.st_size, strings + sym.st_name}});
      }
      if (out.size() > before) return true;
    }
  }
  return false;
}

// Maps `path` read-only; null on failure.
void* map_file(const char* path, std::size_t& size) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* mapping = nullptr;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    size = static_cast<std::size_t>(st.st_size);
    mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) mapping = nullptr;
  }
  ::close(fd);
  return mapping;
}

// The GNU build-id from the module's PT_NOTE segments, in memory.
void read_build_id(const dl_phdr_info* info, char* out) noexcept {
  out[0] = '\0';
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    std::size_t left = ph.p_memsz;
    while (left >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const std::size_t name_size = (note.n_namesz + 3u) & ~std::size_t{3};
      const std::size_t desc_size = (note.n_descsz + 3u) & ~std::size_t{3};
      if (left - sizeof note < name_size || left - sizeof note - name_size < desc_size) break;
      const unsigned char* name = p + sizeof note;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        const std::size_t bytes = note.n_descsz < 20 ? note.n_descsz : 20;
        to_hex(name + name_size, bytes, out);
        return;
      }
      p += sizeof note + name_size + desc_size;
      left -= sizeof note + name_size + desc_size;
    }
  }
}

}  // namespace

void to_hex(const unsigned char* bytes, std::size_t count, char* out) noexcept {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (std::size_t i = 0; i < count; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xFu];
  }
  out[2 * count] = '\0';
}

Symbolizer::Symbolizer() noexcept { refresh(); }
Symbolizer::~Symbolizer() = default;

void Symbolizer::refresh() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  scan_modules();
}

void Symbolizer::scan_modules() noexcept {
  struct Context {
    std::vector<std::unique_ptr<Module>>* modules;
    std::uintptr_t vdso;
    bool first;
  };
  modules_.clear();
  Context context{&modules_, static_cast<std::uintptr_t>(getauxval(AT_SYSINFO_EHDR)), true};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto* c = static_cast<Context*>(data);
        auto module = std::make_unique<Module>();
        ModuleInfo& m = module->info;
        m.bias = info->dlpi_addr;
        m.low = ~std::uintptr_t{0};
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          m.low = std::min<std::uintptr_t>(m.low, info->dlpi_addr + ph.p_vaddr);
          m.high = std::max<std::uintptr_t>(m.high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        const bool first = c->first;
        c->first = false;
        if (m.high == 0) return 0;
        read_build_id(info, m.build_id);
        if (c->vdso != 0 && m.low == c->vdso) {
          copy_text(m.path, sizeof m.path, "[vdso]");
          module->image = reinterpret_cast<const unsigned char*>(c->vdso);
        } else if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          copy_text(m.path, sizeof m.path, info->dlpi_name);
        } else if (first) {
          const ssize_t n = readlink("/proc/self/exe", m.path, sizeof m.path - 1);
          m.path[n > 0 ? n : 0] = '\0';
        }
        c->modules->push_back(std::move(module));
        return 0;
      },
      &context);
}

int Symbolizer::find_module(std::uintptr_t pc) const noexcept {
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    if (pc >= modules_[i]->info.low && pc < modules_[i]->info.high) return static_cast<int>(i);
  }
  return -1;
}

const Symbolizer::Table* Symbolizer::table_for(Module& module) noexcept {
  if (module.table_tried) return module.table.get();
  module.table_tried = true;
  auto table = std::make_unique<Table>();
  std::vector<std::pair<std::uint64_t, std::pair<std::uint64_t, const char*>>> found;
  bool ok = false;
  if (module.image != nullptr) {
    // The image is mapped in whole pages; its section headers may lie past the last segment.
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t span = (module.info.high - module.info.low + page - 1) / page * page;
    ok = parse_symbols(module.image, span, found);
  } else {
    // A separate debug file, found by build-id, has the full .symtab of a stripped library.
    if (module.info.build_id[0] != '\0' && module.info.build_id[1] != '\0') {
      char debug_path[128];
      std::snprintf(debug_path, sizeof debug_path, "/usr/lib/debug/.build-id/%.2s/%s.debug", module.info.build_id,
                    module.info.build_id + 2);
      table->mapping = map_file(debug_path, table->mapping_size);
      if (table->mapping != nullptr) {
        ok = parse_symbols(static_cast<const unsigned char*>(table->mapping), table->mapping_size, found);
        if (!ok) {
          munmap(table->mapping, table->mapping_size);
          table->mapping = nullptr;
        }
      }
    }
    if (!ok && module.info.path[0] != '\0') {
      table->mapping = map_file(module.info.path, table->mapping_size);
      if (table->mapping != nullptr) {
        ok = parse_symbols(static_cast<const unsigned char*>(table->mapping), table->mapping_size, found);
      }
    }
  }
  if (!ok) return nullptr;
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.first > b.second.first;  // larger size first
  });
  table->entries.reserve(found.size());
  for (const auto& f : found) {
    if (!table->entries.empty() && table->entries.back().address == f.first) continue;  // an alias
    table->entries.push_back(Table::Entry{f.first, f.second.first, f.second.second});
  }
  module.table = std::move(table);
  return module.table.get();
}

bool Symbolizer::locate_locked(std::uintptr_t pc, Symbol& out) const noexcept {
  out = Symbol{};
  const int index = find_module(pc);
  if (index < 0) return false;
  const Module& m = *modules_[static_cast<std::size_t>(index)];
  out.in_module = true;
  out.module = static_cast<std::size_t>(index);
  out.module_path = m.info.path;
  out.build_id = m.info.build_id;
  out.module_offset = pc - m.info.bias;
  return true;
}

bool Symbolizer::locate(std::uintptr_t pc, Symbol& out) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return locate_locked(pc, out);
}

bool Symbolizer::symbolize(std::uintptr_t pc, bool return_address, Symbol& out) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!locate_locked(pc, out)) return false;
  Module& m = *modules_[out.module];
  const Table* table = table_for(m);
  if (table == nullptr || table->entries.empty()) return true;
  const std::uint64_t address = out.module_offset - (return_address && out.module_offset > 0 ? 1u : 0u);
  auto it = std::upper_bound(table->entries.begin(), table->entries.end(), address,
                             [](std::uint64_t a, const Table::Entry& e) { return a < e.address; });
  if (it == table->entries.begin()) return true;
  --it;
  out.has_function = true;
  out.exact = it->size != 0 && address < it->address + it->size;
  out.function_offset = out.module_offset - it->address;
  int status = 0;
  char* demangled = abi::__cxa_demangle(it->name, nullptr, nullptr, &status);
  copy_text(out.function, sizeof out.function, status == 0 && demangled != nullptr ? demangled : it->name);
  std::free(demangled);
  return true;
}

std::size_t Symbolizer::module_count() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return modules_.size();
}

ModuleInfo Symbolizer::module(std::size_t index) const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return index < modules_.size() ? modules_[index]->info : ModuleInfo{};
}

bool Symbolizer::source_line(const char* module_path, std::uint64_t offset, char* file_line, std::size_t size,
                             char* function, std::size_t function_size) noexcept {
  if (module_path == nullptr || module_path[0] == '\0' || module_path[0] == '[' || size == 0) return false;
  file_line[0] = '\0';
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  char address[24];
  std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(offset));
  char arg0[] = "addr2line";
  char arg1[] = "-f";
  char arg2[] = "-C";
  char arg3[] = "-e";
  std::vector<char> path(module_path, module_path + std::strlen(module_path) + 1);
  char* argv[] = {arg0, arg1, arg2, arg3, path.data(), address, nullptr};
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, "addr2line", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  char output[1024];
  std::size_t length = 0;
  if (spawned == 0) {
    for (;;) {
      const ssize_t n = ::read(pipe_fds[0], output + length, sizeof output - 1 - length);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      length += static_cast<std::size_t>(n);
      if (length == sizeof output - 1) break;
    }
  }
  ::close(pipe_fds[0]);
  if (spawned != 0) return false;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  output[length] = '\0';
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
  // Two lines: the function, then file:line.
  char* newline = std::strchr(output, '\n');
  if (newline == nullptr) return false;
  *newline = '\0';
  char* second = newline + 1;
  char* end = std::strchr(second, '\n');
  if (end != nullptr) *end = '\0';
  if (function != nullptr && function_size > 0) copy_text(function, function_size, output);
  // "??:0" or "file:?" when addr2line knows no line.
  const std::size_t second_length = std::strlen(second);
  if (std::strncmp(second, "??", 2) == 0 || std::strstr(second, ":?") != nullptr ||
      (second_length >= 2 && std::strcmp(second + second_length - 2, ":0") == 0)) {
    return false;
  }
  copy_text(file_line, size, second);
  return true;
}

}  // namespace loopcanary::port_linux
