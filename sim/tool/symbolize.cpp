// SPDX-License-Identifier: MIT
// `loopcanary symbolize` (docs/tool.md, "symbolize"): ELF headers and notes, the debug-directory
// lookup, batched addr2line, and the two passes over the logs (collect the addresses of every
// file, run addr2line once per file, then re-emit every record with what it found).
#include "symbolize.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <ostream>
#include <set>

#include "arm_unwind.hpp"
#include "commands.hpp"
#include "model.hpp"
#include "packet_reader.hpp"

extern char** environ;

namespace loopcanary::tool {

// ---------------------------------------------------------------------------------------------
// ELF

namespace {

constexpr std::uint32_t kPtLoad = 1;
constexpr std::uint32_t kPtNote = 4;
constexpr std::uint32_t kShtNote = 7;
constexpr std::uint32_t kPfX = 1;
constexpr std::uint32_t kNtGnuBuildId = 3;
constexpr std::uint16_t kEmArm = 40;
constexpr std::uint64_t kMaxNoteBytes = 1u << 20;  // a note area larger than this is not read

// Reads fixed-size pieces of a file and decodes integers in the file's byte order.
class ElfFile {
 public:
  bool open(const std::string& path, std::string& error) {
    in_.open(path, std::ios::binary);
    struct stat st {};
    if (!in_ || ::stat(path.c_str(), &st) != 0) {
      error = std::string("cannot open: ") + std::strerror(errno);
      return false;
    }
    if (!S_ISREG(st.st_mode)) {
      error = "not a regular file";
      return false;
    }
    // The size of the file opened, not of what the path names at stat(): the two differ when
    // the path is replaced meanwhile, or under QEMU's user mode, which opens the program itself
    // for /proc/self/exe but passes stat() through to the emulator's own file.
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    if (!in_ || end < 0) {
      error = "cannot read its size";
      return false;
    }
    size_ = static_cast<std::uint64_t>(end);
    return true;
  }
  std::uint64_t size() const noexcept { return size_; }
  bool read(std::uint64_t offset, std::size_t count, unsigned char* out) {
    if (offset > size_ || size_ - offset < count) return false;
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(count));
    return static_cast<std::size_t>(in_.gcount()) == count;
  }
  bool big_endian = false;
  std::uint64_t get(const unsigned char* p, std::size_t bytes) const noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) {
      const std::size_t shift = 8 * (big_endian ? bytes - 1 - i : i);
      v |= static_cast<std::uint64_t>(p[i]) << shift;
    }
    return v;
  }

 private:
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

// The GNU build-id in the notes [offset, offset + size) of the file; "" when none.
std::string find_build_id(ElfFile& f, std::uint64_t offset, std::uint64_t size, std::uint64_t align) {
  if (size == 0 || size > kMaxNoteBytes) return {};
  std::vector<unsigned char> notes(static_cast<std::size_t>(size));
  if (!f.read(offset, notes.size(), notes.data())) return {};
  const std::uint64_t a = align == 8 ? 8 : 4;
  const auto pad = [a](std::uint64_t n) { return (n + a - 1) / a * a; };
  std::uint64_t at = 0;
  while (size - at >= 12) {
    const std::uint64_t name_size = f.get(&notes[at], 4);
    const std::uint64_t desc_size = f.get(&notes[at + 4], 4);
    const std::uint64_t type = f.get(&notes[at + 8], 4);
    const std::uint64_t name_at = at + 12;
    if (pad(name_size) > size - name_at) return {};
    const std::uint64_t desc_at = name_at + pad(name_size);
    if (pad(desc_size) > size - desc_at) return {};
    if (type == kNtGnuBuildId && name_size == 4 && std::memcmp(&notes[name_at], "GNU", 4) == 0 && desc_size > 0) {
      static constexpr char kDigits[] = "0123456789abcdef";
      std::string hex;
      for (std::uint64_t i = 0; i < desc_size; ++i) {
        const unsigned char b = notes[desc_at + i];
        hex += kDigits[b >> 4];
        hex += kDigits[b & 0xFu];
      }
      return hex;
    }
    at = desc_at + pad(desc_size);
  }
  return {};
}

}  // namespace

bool ElfInfo::covers(std::uint64_t address) const noexcept {
  if (loads.empty()) return true;
  return std::any_of(loads.begin(), loads.end(), [address](const ElfSegment& s) {
    return address >= s.vaddr && address - s.vaddr < s.memsz;
  });
}

namespace {

// What read_elf_info and read_elf_section need of the ELF header.
struct ElfHeader {
  std::uint64_t phoff = 0;
  std::uint64_t shoff = 0;
  std::uint64_t phentsize = 0;
  std::uint64_t phnum = 0;
  std::uint64_t shentsize = 0;
  std::uint64_t shnum = 0;     // e_shnum as written (0: the count is in section header 0)
  std::uint64_t shstrndx = 0;  // e_shstrndx as written (0xffff: the index is in section header 0)
};

// Opens `path` and reads its ELF header into `out` (class, byte order, machine) and `h`.
bool read_elf_header(const std::string& path, ElfFile& f, ElfInfo& out, ElfHeader& h, std::string& error) {
  out = ElfInfo{};
  if (!f.open(path, error)) return false;
  unsigned char eh[64] = {};
  if (!f.read(0, 52, eh) || std::memcmp(eh, "\x7f" "ELF", 4) != 0 || (eh[4] != 1 && eh[4] != 2) ||
      (eh[5] != 1 && eh[5] != 2)) {
    error = "not an ELF file";
    return false;
  }
  out.is64 = eh[4] == 2;
  out.big_endian = eh[5] == 2;
  f.big_endian = out.big_endian;
  if (out.is64 && !f.read(0, 64, eh)) {
    error = "truncated ELF header";
    return false;
  }
  out.machine = static_cast<std::uint16_t>(f.get(eh + 18, 2));
  h.phoff = out.is64 ? f.get(eh + 32, 8) : f.get(eh + 28, 4);
  h.shoff = out.is64 ? f.get(eh + 40, 8) : f.get(eh + 32, 4);
  h.phentsize = f.get(eh + (out.is64 ? 54 : 42), 2);
  h.phnum = f.get(eh + (out.is64 ? 56 : 44), 2);
  h.shentsize = f.get(eh + (out.is64 ? 58 : 46), 2);
  h.shnum = f.get(eh + (out.is64 ? 60 : 48), 2);
  h.shstrndx = f.get(eh + (out.is64 ? 62 : 50), 2);
  return true;
}

}  // namespace

bool read_elf_info(const std::string& path, ElfInfo& out, std::string& error) {
  ElfFile f;
  ElfHeader h;
  if (!read_elf_header(path, f, out, h, error)) return false;
  const std::uint64_t phoff = h.phoff;
  const std::uint64_t shoff = h.shoff;
  const std::uint64_t phentsize = h.phentsize;
  const std::uint64_t phnum = h.phnum;
  const std::uint64_t shentsize = h.shentsize;
  std::uint64_t shnum = h.shnum;
  const std::size_t ph_size = out.is64 ? 56 : 32;
  const std::size_t sh_size = out.is64 ? 64 : 40;

  std::vector<std::pair<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>>> note_segments;
  if (phoff != 0 && phnum != 0) {
    if (phentsize < ph_size) {
      error = "bad program header size";
      return false;
    }
    for (std::uint64_t i = 0; i < phnum; ++i) {
      unsigned char ph[56];
      if (!f.read(phoff + i * phentsize, ph_size, ph)) {
        error = "truncated program headers";
        return false;
      }
      const std::uint64_t type = f.get(ph, 4);
      ElfSegment s;
      std::uint64_t filesz = 0;
      std::uint64_t align = 0;
      if (out.is64) {
        s.executable = (f.get(ph + 4, 4) & kPfX) != 0;
        s.offset = f.get(ph + 8, 8);
        s.vaddr = f.get(ph + 16, 8);
        filesz = f.get(ph + 32, 8);
        s.memsz = f.get(ph + 40, 8);
        align = f.get(ph + 48, 8);
      } else {
        s.offset = f.get(ph + 4, 4);
        s.vaddr = f.get(ph + 8, 4);
        filesz = f.get(ph + 16, 4);
        s.memsz = f.get(ph + 20, 4);
        s.executable = (f.get(ph + 24, 4) & kPfX) != 0;
        align = f.get(ph + 28, 4);
      }
      if (type == kPtLoad) out.loads.push_back(s);
      if (type == kPtNote) note_segments.push_back({s.offset, {filesz, align}});
    }
  }
  if (shoff != 0 && shentsize >= sh_size) {
    unsigned char sh[64];
    if (shnum == 0 && f.read(shoff, sh_size, sh)) shnum = out.is64 ? f.get(sh + 32, 8) : f.get(sh + 20, 4);
    shnum = std::min<std::uint64_t>(shnum, 1u << 16);
    for (std::uint64_t i = 0; i < shnum && out.build_id.empty(); ++i) {
      if (!f.read(shoff + i * shentsize, sh_size, sh)) break;
      if (f.get(sh + 4, 4) != kShtNote) continue;
      const std::uint64_t offset = out.is64 ? f.get(sh + 24, 8) : f.get(sh + 16, 4);
      const std::uint64_t size = out.is64 ? f.get(sh + 32, 8) : f.get(sh + 20, 4);
      const std::uint64_t align = out.is64 ? f.get(sh + 48, 8) : f.get(sh + 32, 4);
      out.build_id = find_build_id(f, offset, size, align);
    }
  }
  for (const auto& n : note_segments) {
    if (!out.build_id.empty()) break;
    out.build_id = find_build_id(f, n.first, n.second.first, n.second.second);
  }
  return true;
}

bool read_elf_section(const std::string& path, const std::string& name, ElfInfo& info, std::vector<std::uint8_t>& bytes,
                      std::string& error, std::uint64_t* address) {
  bytes.clear();
  ElfFile f;
  ElfHeader h;
  if (!read_elf_header(path, f, info, h, error)) return false;
  const std::size_t sh_size = info.is64 ? 64 : 40;
  if (h.shoff == 0 || h.shentsize < sh_size) {
    error = "no section headers";
    return false;
  }
  // One section header: type, file offset and size.
  struct Section {
    std::uint64_t name = 0;
    std::uint64_t type = 0;
    std::uint64_t addr = 0;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    std::uint64_t link = 0;
  };
  const auto section = [&](std::uint64_t index, Section& s) {
    unsigned char sh[64];
    if (index > (f.size() - std::min(f.size(), h.shoff)) / h.shentsize) return false;
    if (!f.read(h.shoff + index * h.shentsize, sh_size, sh)) return false;
    s.name = f.get(sh, 4);
    s.type = f.get(sh + 4, 4);
    s.addr = info.is64 ? f.get(sh + 16, 8) : f.get(sh + 12, 4);
    s.offset = info.is64 ? f.get(sh + 24, 8) : f.get(sh + 16, 4);
    s.size = info.is64 ? f.get(sh + 32, 8) : f.get(sh + 20, 4);
    s.link = info.is64 ? f.get(sh + 40, 4) : f.get(sh + 24, 4);
    return true;
  };
  Section first;
  if (!section(0, first)) {
    error = "truncated section headers";
    return false;
  }
  const std::uint64_t shnum = std::min<std::uint64_t>(h.shnum != 0 ? h.shnum : first.size, 1u << 20);
  const std::uint64_t strndx = h.shstrndx == 0xffff ? first.link : h.shstrndx;
  Section strings;
  constexpr std::uint64_t kMaxNames = 16u << 20;
  if (strndx == 0 || strndx >= shnum || !section(strndx, strings) || strings.size > kMaxNames) {
    error = "no section-name string table";
    return false;
  }
  std::vector<unsigned char> names(static_cast<std::size_t>(strings.size));
  if (!f.read(strings.offset, names.size(), names.data())) {
    error = "truncated section-name string table";
    return false;
  }
  for (std::uint64_t i = 1; i < shnum; ++i) {
    Section s;
    if (!section(i, s)) {
      error = "truncated section headers";
      return false;
    }
    if (s.name >= names.size()) continue;
    const auto* begin = reinterpret_cast<const char*>(names.data()) + s.name;
    const std::size_t room = names.size() - static_cast<std::size_t>(s.name);
    if (::strnlen(begin, room) != name.size() || name.compare(0, name.size(), begin, name.size()) != 0) continue;
    constexpr std::uint64_t kShtNobits = 8;
    constexpr std::uint64_t kMaxSection = 256u << 20;
    if (s.type == kShtNobits) {
      error = "section " + name + " has no bytes in the file";
      return false;
    }
    if (s.size > kMaxSection) {
      error = "section " + name + " is too large";
      return false;
    }
    bytes.resize(static_cast<std::size_t>(s.size));
    if (!f.read(s.offset, bytes.size(), bytes.data())) {
      bytes.clear();
      error = "section " + name + " is truncated";
      return false;
    }
    if (address != nullptr) *address = s.addr;
    return true;
  }
  error = "no section " + name;
  return false;
}

const char* addr2line_program(std::uint16_t machine) noexcept {
  return machine == kEmArm ? "arm-none-eabi-addr2line" : "addr2line";
}

// ---------------------------------------------------------------------------------------------
// addr2line

namespace {

bool is_address_line(const std::string& line) {
  if (line.size() < 3 || line[0] != '0' || line[1] != 'x') return false;
  return std::all_of(line.begin() + 2, line.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// "file:line", "file:line (discriminator N)", "file:?", "??:0", "??:?".
SourceFrame parse_position(const std::string& function, std::string position) {
  SourceFrame s;
  if (function != "??") s.function = function;
  const std::size_t discriminator = position.find(" (discriminator ");
  if (discriminator != std::string::npos) position.resize(discriminator);
  const std::size_t colon = position.rfind(':');
  std::string file = colon == std::string::npos ? position : position.substr(0, colon);
  if (file != "??") s.file = std::move(file);
  if (colon != std::string::npos) {
    const std::string digits = position.substr(colon + 1);
    if (!digits.empty() && digits.size() <= 9 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      s.line = static_cast<std::uint32_t>(std::strtoul(digits.c_str(), nullptr, 10));
    }
  }
  if (s.file.empty()) s.line = 0;
  return s;
}

// A temporary file, removed when this goes out of scope.
struct TempFile {
  std::string path;
  int fd = -1;
  bool create() {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + "/loopcanary-symbolize.XXXXXX";
    fd = ::mkstemp(path.data());
    return fd >= 0;
  }
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (fd >= 0 || !path.empty()) ::unlink(path.c_str());
  }
};

std::string first_line_of(int fd) {
  char text[512];
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string s(text, n > 0 ? static_cast<std::size_t>(n) : 0u);
  const std::size_t newline = s.find('\n');
  if (newline != std::string::npos) s.resize(newline);
  return s;
}

}  // namespace

bool parse_addr2line_output(const std::string& text, std::size_t count, std::vector<SourceChain>& out) {
  out.clear();
  std::vector<std::string> lines;
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(from, end - from));
    from = end + 1;
  }
  std::size_t i = 0;
  while (i < lines.size()) {
    if (!is_address_line(lines[i])) return false;
    ++i;
    SourceChain chain;
    while (i < lines.size() && !is_address_line(lines[i])) {
      if (i + 1 >= lines.size()) return false;  // a function line without its position
      SourceFrame s = parse_position(lines[i], lines[i + 1]);
      if (!s.function.empty() || !s.file.empty()) chain.push_back(std::move(s));
      i += 2;
    }
    out.push_back(std::move(chain));
  }
  if (out.size() != count) {
    out.clear();
    return false;
  }
  return true;
}

bool run_addr2line(const std::string& program, const std::string& elf, const std::vector<std::uint64_t>& addresses,
                   std::vector<SourceChain>& out, std::string& error) {
  out.clear();
  TempFile input;
  TempFile errors;
  if (!input.create() || !errors.create()) {
    error = std::string("cannot create a temporary file: ") + std::strerror(errno);
    return false;
  }
  std::string list;
  char hex[24];
  for (const std::uint64_t a : addresses) {
    std::snprintf(hex, sizeof hex, "0x%llx\n", static_cast<unsigned long long>(a));
    list += hex;
  }
  for (std::size_t done = 0; done < list.size();) {
    const ssize_t n = ::write(input.fd, list.data() + done, list.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = std::string("cannot write a temporary file: ") + std::strerror(errno);
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, input.path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, errors.fd, STDERR_FILENO);
  std::vector<std::string> args = {program, "-a", "-f", "-C", "-i", "-e", elf};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  const int spawned = ::posix_spawnp(&child, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  std::string text;
  if (spawned == 0) {
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::read(pipe_fds[0], chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(chunk, static_cast<std::size_t>(n));
    }
  }
  ::close(pipe_fds[0]);
  if (spawned != 0) {
    error = "cannot run " + program + ": " + std::strerror(spawned);
    return false;
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string why = first_line_of(errors.fd);
    error = program + " failed on " + elf + (why.empty() ? std::string() : ": " + why);
    return false;
  }
  if (!parse_addr2line_output(text, addresses.size(), out)) {
    error = program + " printed output that does not parse (for " + elf + ")";
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Debug directory

std::string DebugDirectory::find(const std::string& build_id) {
  if (build_id.size() < 3) return {};
  ElfInfo info;
  std::string error;
  const std::string base = directory_ + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2);
  for (const std::string& candidate : {base + ".debug", base}) {
    if (read_elf_info(candidate, info, error) && info.build_id == build_id) return candidate;
  }
  if (!scanned_) {
    scanned_ = true;
    if (DIR* dir = ::opendir(directory_.c_str())) {
      while (const dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] == '.') continue;
        const std::string path = directory_ + "/" + entry->d_name;
        if (read_elf_info(path, info, error) && !info.build_id.empty()) by_build_id_.emplace(info.build_id, path);
      }
      ::closedir(dir);
    }
  }
  const auto it = by_build_id_.find(build_id);
  return it != by_build_id_.end() ? it->second : std::string();
}

// ---------------------------------------------------------------------------------------------
// The command

namespace {

void append_hex(std::string& out, std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "\"0x%llx\"", static_cast<unsigned long long>(value));
  out += text;
}

// --- A minimal JSON walker over a line the reader has accepted (so well-formed), for splicing:
// positions only, no values built. Every step is bounds-checked all the same.

std::size_t skip_space(const std::string& s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
  return i;
}

// The position after the value at `i`; npos when it does not parse.
std::size_t skip_value(const std::string& s, std::size_t i, int depth = 0) {
  i = skip_space(s, i);
  if (i >= s.size() || depth > kMaxJsonDepth) return std::string::npos;
  const char c = s[i];
  if (c == '"') {
    for (++i; i < s.size(); ++i) {
      if (s[i] == '\\') {
        ++i;
      } else if (s[i] == '"') {
        return i + 1;
      }
    }
    return std::string::npos;
  }
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    i = skip_space(s, i + 1);
    if (i < s.size() && s[i] == close) return i + 1;
    for (;;) {
      if (c == '{') {
        i = skip_value(s, i, depth + 1);  // the key
        i = skip_space(s, i);
        if (i >= s.size() || s[i] != ':') return std::string::npos;
        ++i;
      }
      i = skip_value(s, i, depth + 1);
      i = skip_space(s, i);
      if (i >= s.size()) return std::string::npos;
      if (s[i] == close) return i + 1;
      if (s[i] != ',') return std::string::npos;
      ++i;
    }
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ') ++i;
  return i;
}

// In the object at `object` ('{'), the position of the value of member `key` (compared as it is
// written, without unescaping); npos when absent.
std::size_t find_member(const std::string& s, std::size_t object, const char* key) {
  std::size_t i = skip_space(s, object);
  if (i >= s.size() || s[i] != '{') return std::string::npos;
  const std::size_t key_length = std::strlen(key);
  i = skip_space(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    const std::size_t key_end = skip_value(s, i);
    if (key_end == std::string::npos) return std::string::npos;
    const bool match = key_end - i == key_length + 2 && s.compare(i + 1, key_length, key) == 0;
    i = skip_space(s, key_end);
    if (i >= s.size() || s[i] != ':') return std::string::npos;
    const std::size_t value = skip_space(s, i + 1);
    if (match) return value;
    i = skip_space(s, skip_value(s, value));
    if (i >= s.size() || s[i] != ',') return std::string::npos;
    i = skip_space(s, i + 1);
  }
  return std::string::npos;
}

bool parse_hex_string(const std::string& s, std::size_t at, std::uint64_t& value) {
  if (at == std::string::npos || s.compare(at, 3, "\"0x") != 0) return false;
  value = 0;
  std::size_t i = at + 3;
  for (; i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i])) != 0; ++i) {
    const char c = s[i];
    value = value * 16u + static_cast<std::uint64_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return i < s.size() && s[i] == '"';
}

// --- The two passes.

struct Target {
  std::string path;
  ElfInfo info;
  std::set<std::uint64_t> addresses;         // to look up
  std::map<std::uint64_t, SourceChain> found;  // after addr2line
  bool failed = false;
};

// Where the source of one PC of one record is looked up.
struct Lookup {
  int target = -1;             // index into Symbolizer::targets_, -1: no file
  std::uint64_t address = 0;   // ELF virtual address given to addr2line
};

struct Counts {
  std::uint64_t frames = 0;        // PC frames (distinct per record) considered
  std::uint64_t with_line = 0;     // got file:line
  std::uint64_t function_only = 0; // got a function, no line
  std::uint64_t unknown = 0;       // addr2line knew nothing, or its file could not be read
  std::uint64_t no_file = 0;       // no file found for the module (or no --elf for a device PC)
  std::uint64_t outside = 0;       // the address lies in no PT_LOAD of the file found: not its file
};

class Symbolizer {
 public:
  Symbolizer(const Options& options, std::ostream& err) : options_(options), err_(err) {}

  // false with a one-line error for a bad --elf / --debug-dir.
  bool prepare(std::string& error) {
    if (!options_.elf.empty()) {
      Target t;
      std::string why;
      if (!read_elf_info(options_.elf, t.info, why)) {
        error = "--elf " + options_.elf + ": " + why;
        return false;
      }
      t.path = options_.elf;
      elf_target_ = add_target(std::move(t));
    }
    if (!options_.debug_dir.empty()) {
      struct stat st {};
      if (::stat(options_.debug_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        error = "--debug-dir " + options_.debug_dir + ": not a directory";
        return false;
      }
      debug_dir_ = std::make_unique<DebugDirectory>(options_.debug_dir);
    }
    return true;
  }

  // Pass 1: every lookup of the record, queued on its file.
  void collect(const LogRecord& record) {
    lookups(record, [this](std::uint64_t, const Lookup& l) {
      if (l.target >= 0) targets_[static_cast<std::size_t>(l.target)].addresses.insert(l.address);
    });
  }

  // Between the passes: one addr2line run per file.
  void resolve() {
    for (Target& t : targets_) {
      if (t.addresses.empty()) continue;
      const std::vector<std::uint64_t> addresses(t.addresses.begin(), t.addresses.end());
      std::vector<SourceChain> chains;
      std::string error;
      if (!run_addr2line(addr2line_program(t.info.machine), t.path, addresses, chains, error)) {
        err_ << prefix() << error << '\n';
        t.failed = true;
        continue;
      }
      for (std::size_t i = 0; i < addresses.size(); ++i) t.found.emplace(addresses[i], std::move(chains[i]));
    }
  }

  // Pass 2: `line` (the record's JSON, no newline) with the sources filled in, into `out`.
  void emit(const LogRecord& record, const std::string& line, std::string& out) {
    std::map<std::uint64_t, Lookup> by_pc;
    lookups(record, [&by_pc](std::uint64_t pc, const Lookup& l) { by_pc.emplace(pc, l); });
    out.clear();
    if (record.has_linux) {
      emit_linux(line, by_pc, out);
    } else {
      emit_device(line, by_pc, out);
    }
    out += '\n';
  }

  // "loopcanary <command>: " (symbolize or decode), before each message.
  std::string prefix() const { return "loopcanary " + options_.command + ": "; }

  void print_summary() const {
    err_ << "symbolize: " << counts_.frames << " frames: " << counts_.with_line << " with file:line, "
         << counts_.function_only << " function only, " << counts_.unknown << " unknown to addr2line, "
         << counts_.no_file << " without a file to read, " << counts_.outside << " outside the file found\n";
  }

 private:
  int add_target(Target t) {
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      if (targets_[i].path == t.path) return static_cast<int>(i);
    }
    targets_.push_back(std::move(t));
    return static_cast<int>(targets_.size() - 1);
  }

  // The file to read for a module of a record (cached per module and build-id); -1 when none.
  int target_for(const std::string& module, const std::string& build_id) {
    const auto key = std::make_pair(module, build_id);
    const auto cached = modules_.find(key);
    if (cached != modules_.end()) return cached->second;
    int found = -1;
    Target t;
    std::string why;
    if (elf_target_ >= 0 && !build_id.empty() &&
        targets_[static_cast<std::size_t>(elf_target_)].info.build_id == build_id) {
      found = elf_target_;
    }
    if (found < 0 && debug_dir_ && !build_id.empty()) {
      t.path = debug_dir_->find(build_id);
      if (!t.path.empty() && read_elf_info(t.path, t.info, why)) found = add_target(std::move(t));
    }
    // The module itself, when it is still there and is the same build.
    if (found < 0 && !module.empty() && module[0] != '[' && read_elf_info(module, t.info, why) &&
        (build_id.empty() || t.info.build_id == build_id)) {
      t.path = module;
      found = add_target(std::move(t));
    }
    if (found < 0) {
      err_ << prefix() << "no file for module " << module
           << (build_id.empty() ? std::string() : " (build-id " + build_id + ")")
           << (debug_dir_ ? std::string() : "; give --debug-dir DIR") << '\n';
    }
    modules_.emplace(key, found);
    return found;
  }

  // Calls on(pc, lookup) once per distinct PC of the record's stacks, top and wait holders'
  // stacks (in that order), counting. The first PC of a stack is the interrupted instruction;
  // the others are return addresses, looked up at address - 1 (the call). A PC that is both is
  // taken as exact.
  template <class On>
  void lookups(const LogRecord& record, On on) {
    std::map<std::uint64_t, std::pair<const Frame*, bool>> pcs;  // pc -> (frame, exact)
    const auto add = [&pcs](const Frame& f, bool exact) {
      auto [it, inserted] = pcs.emplace(f.pc, std::make_pair(&f, exact));
      if (!inserted && exact) it->second.second = true;
    };
    for (const Sample& s : record.stacks) {
      bool first = true;
      for (const Frame& f : s.frames) {
        if (f.is_scope()) continue;
        add(f, first);
        first = false;
      }
    }
    for (const TopEntry& t : record.top) {
      bool first = true;
      for (const Frame& f : t.frames) {
        if (f.is_scope()) continue;
        add(f, first);
        first = false;
      }
      if (t.leaf() < t.frames.size()) add(t.leaf_high, true);
    }
    for (const WaitEntry& o : record.wait.objects) {
      if (!o.owner) continue;
      bool first = true;
      for (const Frame& f : o.owner->frames) {
        if (f.is_scope()) continue;
        add(f, first);
        first = false;
      }
    }
    for (const auto& [pc, entry] : pcs) {
      const Frame& f = *entry.first;
      Lookup l;
      std::uint64_t address = pc;
      if (f.has_module()) {
        l.target = target_for(f.module, f.build_id);
        address = f.module_offset;  // the ELF virtual address (docs/porting-linux.md)
      } else if (!record.has_linux) {
        l.target = elf_target_;
        if (l.target < 0 && !warned_no_elf_) {
          warned_no_elf_ = true;
          err_ << prefix() << record.file << (record.from_capture ? ": offset " : ":") << record.line
               << ": program counters without module information (device records) need --elf FILE\n";
        }
      }
      if (l.target >= 0) {
        const ElfInfo& info = targets_[static_cast<std::size_t>(l.target)].info;
        if (info.machine == kEmArm) address &= ~std::uint64_t{1};  // the Thumb bit
        if (!entry.second && address > 0) --address;
        if (!info.covers(address)) l.target = -2;
      }
      l.address = address;
      on(pc, l);
    }
  }

  // The addr2line result of a lookup, counted; null when there is none.
  const SourceChain* result(const Lookup& l) {
    ++counts_.frames;
    if (l.target == -2) {
      ++counts_.outside;
      return nullptr;
    }
    if (l.target < 0) {
      ++counts_.no_file;
      return nullptr;
    }
    const Target& t = targets_[static_cast<std::size_t>(l.target)];
    const auto it = t.found.find(l.address);
    if (t.failed || it == t.found.end() || it->second.empty()) {
      ++counts_.unknown;
      return nullptr;
    }
    const SourceFrame& outer = it->second.back();
    ++(outer.file.empty() ? counts_.function_only : counts_.with_line);
    return &it->second;
  }

  // `,"function":F` (unless `has_function`), `,"file":P,"line":N`, `,"inlined":[...]`.
  static void append_source(std::string& out, const SourceChain& chain, bool has_function) {
    const SourceFrame& outer = chain.back();
    if (!has_function && !outer.function.empty()) {
      out += ",\"function\":";
      out += json_string(outer.function);
    }
    if (!outer.file.empty()) {
      out += ",\"file\":";
      out += json_string(outer.file);
      if (outer.line != 0) out += ",\"line\":" + std::to_string(outer.line);
    }
    if (chain.size() > 1) {
      out += ",\"inlined\":[";
      for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        if (i != 0) out += ',';
        out += "{\"function\":";
        out += json_string(chain[i].function);
        if (!chain[i].file.empty()) {
          out += ",\"file\":";
          out += json_string(chain[i].file);
          if (chain[i].line != 0) out += ",\"line\":" + std::to_string(chain[i].line);
        }
        out += '}';
      }
      out += ']';
    }
  }

  // Fills the entries of "linux"."frames" in place: new members before each entry's '}'.
  void emit_linux(const std::string& line, const std::map<std::uint64_t, Lookup>& by_pc, std::string& out) {
    const std::size_t linux_at = find_member(line, 0, "linux");
    const std::size_t frames_at = linux_at == std::string::npos ? linux_at : find_member(line, linux_at, "frames");
    std::size_t copied = 0;
    if (frames_at != std::string::npos && line[frames_at] == '[') {
      std::size_t i = skip_space(line, frames_at + 1);
      while (i < line.size() && line[i] == '{') {
        const std::size_t end = skip_value(line, i);
        if (end == std::string::npos) break;
        std::uint64_t pc = 0;
        const auto it = parse_hex_string(line, find_member(line, i, "pc"), pc) ? by_pc.find(pc) : by_pc.end();
        if (it != by_pc.end() && find_member(line, i, "file") == std::string::npos) {
          if (const SourceChain* chain = result(it->second)) {
            out.append(line, copied, end - 1 - copied);
            append_source(out, *chain, find_member(line, i, "function") != std::string::npos);
            copied = end - 1;
          }
        }
        i = skip_space(line, end);
        if (i < line.size() && line[i] == ',') i = skip_space(line, i + 1);
      }
    }
    out.append(line, copied, std::string::npos);
  }

  // A device record: a member "symbols" with one entry per PC, as "linux"."frames" has them
  // (none when no PC has a file to look it up in: the record stays as it is).
  void emit_device(const std::string& line, const std::map<std::uint64_t, Lookup>& by_pc, std::string& out) {
    std::string frames;
    const bool any = std::any_of(by_pc.begin(), by_pc.end(), [](const auto& e) { return e.second.target >= 0; });
    for (const auto& [pc, l] : by_pc) {
      const SourceChain* chain = result(l);
      if (!frames.empty()) frames += ',';
      frames += "{\"pc\":";
      append_hex(frames, pc);
      if (l.target >= 0) {
        const Target& t = targets_[static_cast<std::size_t>(l.target)];
        frames += ",\"module\":";
        frames += json_string(t.path);
        frames += ",\"build_id\":";
        frames += json_string(t.info.build_id);
        frames += ",\"offset\":";
        append_hex(frames, pc);
      }
      if (chain != nullptr) append_source(frames, *chain, false);
      frames += '}';
    }
    std::size_t close = line.find_last_not_of(" \t\r");
    if (!any || close == std::string::npos || line[close] != '}') {
      out = line;
      return;
    }
    out.append(line, 0, close);
    out += ",\"symbols\":{\"frames\":[" + frames + "]}";
    out.append(line, close, std::string::npos);
  }

  const Options& options_;
  std::ostream& err_;
  std::vector<Target> targets_;
  int elf_target_ = -1;
  std::unique_ptr<DebugDirectory> debug_dir_;
  std::map<std::pair<std::string, std::string>, int> modules_;
  bool warned_no_elf_ = false;
  Counts counts_;
};

// The call-frame information of the firmware ELF `path`, or why there is none.
std::shared_ptr<const StackUnwind> load_unwind(const std::string& path) {
  auto unwind = std::make_shared<StackUnwind>();
  auto cfi = std::make_shared<ArmCfi>();
  std::string error;
  if (read_arm_cfi(path, *cfi, error)) {
    unwind->cfi = std::move(cfi);
  } else {
    unwind->missing = "--elf " + path + ": " + error;
  }
  return unwind;
}

// symbolize and decode: every record the reader accepts from `options.paths` (logs and binary
// captures), in input order, as a JSON line; with `symbolize`, its program counters looked up
// first (two passes: the addresses of every record, one addr2line run per file, then the output).
int write_records(const Options& options, bool symbolize, std::ostream& out, std::ostream& err) {
  const std::string prefix = "loopcanary " + options.command + ": ";
  Symbolizer symbolizer(options, err);
  std::string error;
  if (!symbolizer.prepare(error)) {
    err << prefix << error << '\n';
    return 2;
  }
  std::ofstream file;
  std::ostream* sink = &out;
  if (!options.output.empty()) {
    file.open(options.output, std::ios::binary | std::ios::trunc);
    if (!file) {
      err << prefix << "-o " << options.output << ": cannot create: " << std::strerror(errno) << '\n';
      return 2;
    }
    sink = &file;
  }

  // Pass 1 (symbolize): read (warnings and counts come from here) and queue the addresses. With
  // --elf, device samples' stack evidence is unwound with the ELF's call-frame information.
  ReaderOptions reader_options;
  if (!options.elf.empty()) reader_options.unwind = load_unwind(options.elf);
  Reader reader(err, reader_options);
  if (symbolize) {
    for (const std::string& path : options.paths) {
      reader.read_path(path, [&symbolizer](const LogRecord& r) { symbolizer.collect(r); });
    }
    symbolizer.resolve();
  }

  // The output: the same files, every record again (its warnings already given by pass 1).
  std::ostream no_warnings(nullptr);
  Reader writer(symbolize ? no_warnings : err, reader_options);
  std::string line;
  std::string text;
  // Health records carry no program counters: written as read (a packet: its JSON line).
  writer.set_health_callback([&](HealthLog&) {
    text.assign(writer.current_line().data(), writer.current_line().size());
    text += '\n';
    sink->write(text.data(), static_cast<std::streamsize>(text.size()));
  });
  for (const std::string& path : options.paths) {
    writer.read_path(path, [&](const LogRecord& record) {
      if (symbolize) {
        line.assign(writer.current_line().data(), writer.current_line().size());
        symbolizer.emit(record, line, text);
      } else {
        text.assign(writer.current_line().data(), writer.current_line().size());
        text += '\n';
      }
      sink->write(text.data(), static_cast<std::streamsize>(text.size()));
    });
  }
  sink->flush();
  const ReadStats& stats = symbolize ? reader.stats() : writer.stats();
  print_summary(err, stats);
  if (symbolize) symbolizer.print_summary();
  if (!*sink) {
    err << prefix << "writing the output failed\n";
    return 1;
  }
  return stats.records > 0 ? 0 : 1;
}

}  // namespace

int run_symbolize(const Options& options, std::ostream& out, std::ostream& err) {
  return write_records(options, true, out, err);
}

int run_decode(const Options& options, std::ostream& out, std::ostream& err) {
  return write_records(options, !options.elf.empty(), out, err);
}

}  // namespace loopcanary::tool
