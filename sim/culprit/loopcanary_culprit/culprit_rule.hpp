// SPDX-License-Identifier: MIT
// The culprit rule (docs/tool.md, "Culprit"), in one place for every reader of a record: the
// host tool (report, show, the exports), the simulator runtime's live lines and summary (the
// demo) and the test helper's failure messages. Each reader symbolises its frames its own way
// (the tool from the record's symbols, the runtime in its own process) and hands the rule what
// it read of each frame; the rule names a stack's culprit frame and a block's culprit over its
// stack table, every sample of the dispatch.
//
// Host only, header-only (standard library): compiled into the tool and the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loopcanary::culprit {

/// What the rule reads of one frame. A frame is a scope (its name non-empty: the firmware's own
/// label) or a program counter with what is known of it.
struct FrameFacts {
  std::string_view scope;           ///< non-empty exactly for a scope frame
  std::string_view function;        ///< the symbolised function, "" when unknown
  std::string_view nearest_symbol;  ///< the nearest symbol below the PC when not inside a sized one
  std::string_view module;          ///< the module path, "" when unknown
};

namespace detail {

inline bool starts_with(std::string_view text, std::string_view prefix) noexcept {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

inline bool opens(char c) noexcept { return c == '<' || c == '(' || c == '[' || c == '{'; }
inline bool closes(char c) noexcept { return c == '>' || c == ')' || c == ']' || c == '}'; }

inline std::string_view base_name(std::string_view path) noexcept {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Modules of the C and C++ runtimes, the dynamic loader and the vDSO, and of the event-loop
// libraries the adapters watch (base-name prefixes).
inline constexpr std::string_view kRuntimeModules[] = {
    "libc.so", "libc-", "libm.so", "libm-", "libstdc++", "libgcc_s", "libpthread", "ld-linux", "ld.so", "ld64.so",
    "linux-vdso", "linux-gate", "[vdso]", "libuv.so", "libglib-2.0.so", "libgio-2.0.so", "libgobject-2.0.so"};
// Functions of loopcanary (the simulator runtime loopcanary::simrt included), of the C++ library
// (its std::function trampolines among them), of Asio, whose code is in the program itself (a
// header-only library; no user code is in its namespace), and of the sanitizers' runtimes that
// clang links into the program. (An interceptor that the symbol table names by the libc
// function it replaces, "nanosleep" in a ThreadSanitizer build, cannot be told from the user's
// code by its name.)
inline constexpr std::string_view kRuntimeFunctions[] = {
    "loopcanary::", "std::",    "__gnu_cxx::", "__cxa",    "__cxxabiv1::", "asio::",       "boost::asio::",
    "__interceptor_", "__asan_", "__asan::",   "__tsan_",  "__tsan::",     "__ubsan_",     "__ubsan::",
    "__lsan::",     "__sanitizer_", "__sanitizer::", "__interception::",
    // The compiler's run-time helpers a firmware links statically (libgcc; the Arm run-time ABI):
    // 64-bit division, soft floating point, switch tables.
    "__aeabi_",     "__gnu_",       "__udivmod",     "__divmod",   "__udivdi3",    "__divdi3",     "__umoddi3",
    "__moddi3",     "__udivsi3",    "__divsi3",      "__umodsi3",  "__modsi3"};
// Functions of the C library that a statically linked program (a firmware) has in its own image,
// where no module says they are the library's: whole names, not prefixes.
inline constexpr std::string_view kRuntimeExactFunctions[] = {
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strcmp", "strncmp", "strcpy", "strncpy", "strchr"};

// The name of a symbolised function without its parameter list: "memcpy(void*, ...)" -> "memcpy".
inline std::string_view bare_name(std::string_view name) noexcept {
  const std::size_t paren = name.find('(');
  return paren == std::string_view::npos ? name : name.substr(0, paren);
}

}  // namespace detail

/// A demangled function's qualified name, without the return type that the name of a function
/// template starts with: "void std::this_thread::sleep_for<long>(...)" -> "std::this_thread::
/// sleep_for<long>(...)". The name after the last space outside <>, (), [] and {} before the
/// parameter list; the whole name when there is none.
inline std::string_view qualified_name(std::string_view function) noexcept {
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < function.size(); ++i) {
    const char c = function[i];
    if (c == '(' && depth == 0) break;  // the parameter list (or "(anonymous namespace)")
    if (detail::opens(c)) {
      ++depth;
    } else if (detail::closes(c) && depth > 0) {
      --depth;
    } else if (c == ' ' && depth == 0) {
      start = i + 1;
    }
  }
  return function.substr(start);
}

/// True when a prefix of `prefixes` matches the frame: its scope name, function name, module
/// path or module base name starts with it (BlockCanary's concern packages).
inline bool matches(const FrameFacts& f, const std::vector<std::string>& prefixes) {
  for (const std::string& p : prefixes) {
    if (p.empty()) continue;
    if (!f.scope.empty()) {
      if (detail::starts_with(f.scope, p)) return true;
      continue;
    }
    if (!f.function.empty() && (detail::starts_with(f.function, p) || detail::starts_with(qualified_name(f.function), p))) {
      return true;
    }
    if (!f.module.empty() && (detail::starts_with(f.module, p) || detail::starts_with(detail::base_name(f.module), p))) {
      return true;
    }
  }
  return false;
}

/// The default rule's "not the user's code": a frame in a runtime module (the C and C++
/// libraries, the dynamic loader, the vDSO, libuv, GLib) or a runtime function (loopcanary::,
/// std::, __gnu_cxx::, __cxa, asio::, the compiler's helpers such as __aeabi_uldivmod, and the
/// C library's memcpy, memset, str* ... that a firmware links into its own image). A scope frame is the user's code (the firmware
/// names it), and so is a PC with neither module nor function (a device record before it is
/// symbolised).
inline bool is_runtime(const FrameFacts& f) {
  if (!f.scope.empty()) return false;
  if (!f.module.empty()) {
    const std::string_view base = detail::base_name(f.module);
    for (const std::string_view m : detail::kRuntimeModules) {
      if (detail::starts_with(base, m)) return true;
    }
  }
  const std::string_view function = qualified_name(f.function);
  const std::string_view nearest = qualified_name(f.nearest_symbol);
  for (const std::string_view fn : detail::kRuntimeFunctions) {
    if (detail::starts_with(function, fn) || detail::starts_with(nearest, fn)) return true;
  }
  for (const std::string_view fn : detail::kRuntimeExactFunctions) {
    if (detail::bare_name(function) == fn || detail::bare_name(nearest) == fn) return true;
  }
  return false;
}

namespace detail {

// Where a closure type's name starts in `name`: GCC's "{lambda(" or the "$_" of clang's
// "$_<n>"; npos when there is none.
inline std::size_t closure_marker(std::string_view name) noexcept {
  const std::size_t gcc = name.find("{lambda(");
  std::size_t clang = name.find("::$_");
  while (clang != std::string_view::npos &&
         (clang + 4 >= name.size() || name[clang + 4] < '0' || name[clang + 4] > '9')) {
    clang = name.find("::$_", clang + 1);
  }
  if (clang != std::string_view::npos) clang += 2;
  return gcc < clang ? gcc : clang;
}

}  // namespace detail

/// The lambda a runtime frame runs inline, by its demangled name: a member of a class template
/// of the runtime (Asio's handler wrappers, std::function's trampoline) instantiated on a
/// lambda's closure type, where the compiler inlined the lambda into it, as GCC does with
/// asio::detail::wait_handler<main::{lambda(std::error_code const&)#1}, ...>::do_complete or
/// std::_Function_handler<void (), app::arm()::{lambda()#1}>::_M_invoke. Returns the closure's
/// name, the whole template argument that holds it ("main::{lambda(std::error_code
/// const&)#1}", clang's "main::$_0"); "" for any other frame (a frame that is not runtime code
/// is the user's own, named by its function).
inline std::string_view inlined_lambda(const FrameFacts& f) {
  if (!f.scope.empty() || f.function.empty() || !is_runtime(f)) return {};
  const std::string_view name = qualified_name(f.function);
  // The class: the name up to its last "::" outside brackets, before the parameter list.
  int depth = 0;
  std::size_t member = std::string_view::npos;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '(' && depth == 0) break;
    if (detail::opens(c)) {
      ++depth;
    } else if (detail::closes(c) && depth > 0) {
      --depth;
    } else if (c == ':' && depth == 0 && i + 1 < name.size() && name[i + 1] == ':') {
      member = i++;
    }
  }
  if (member == std::string_view::npos || member == 0 || name[member - 1] != '>') return {};
  const std::string_view owner = name.substr(0, member);
  const std::size_t marker = detail::closure_marker(owner);
  if (marker == std::string_view::npos) return {};
  // The template argument around the marker: back to its '<' or ',' and on to its ',' or '>'.
  std::size_t begin = marker;
  for (int d = 0; begin > 0; --begin) {
    const char c = owner[begin - 1];
    if (detail::closes(c)) ++d;
    if (detail::opens(c) && d-- == 0) break;
    if (c == ',' && d == 0) break;
  }
  while (begin < marker && owner[begin] == ' ') ++begin;
  std::size_t end = marker;
  for (int d = 0; end < owner.size(); ++end) {
    const char c = owner[end];
    if (detail::opens(c)) ++d;
    if (detail::closes(c) && d-- == 0) break;
    if (c == ',' && d == 0) break;
  }
  if (begin >= marker || end <= marker) return {};  // a closure of no name (not an argument)
  return owner.substr(begin, end - begin);
}

/// The name a culprit frame goes by: the lambda it runs inline (inlined_lambda) when it runs
/// one, else `label`, the frame's label as its reader makes it (function, scope, module+offset
/// or PC).
inline std::string_view culprit_name(const FrameFacts& f, std::string_view label) {
  const std::string_view lambda = inlined_lambda(f);
  return lambda.empty() ? label : lambda;
}

/// The rule on one stack of `count` frames, innermost first (`facts(i)` gives frame i): with
/// `concern` prefixes the first frame one matches, without the first frame that is not runtime
/// code or runs a lambda of the user's inline (inlined_lambda). Frame `unknown` (any index >= count for none) is skipped: a frame not known to be on
/// every stack of a stack-table entry. std::nullopt when no frame qualifies.
template <class Facts>
std::optional<std::size_t> first(std::size_t count, std::size_t unknown, const std::vector<std::string>& concern,
                                 Facts&& facts) {
  for (std::size_t i = 0; i < count; ++i) {
    if (i == unknown) continue;
    const FrameFacts f = facts(i);
    if (concern.empty() ? !is_runtime(f) || !inlined_lambda(f).empty() : matches(f, concern)) return i;
  }
  return std::nullopt;
}

/// Whether every innermost PC of a stack-table entry (loopcanary::TopStack) is known to lie in
/// one function: its lowest and highest are one PC, or both have the same known function.
inline bool leaf_known(bool one_pc, const FrameFacts& low, const FrameFacts& high) {
  return one_pc || (!low.function.empty() && low.function == high.function && low.module == high.module);
}

/// A block's culprit over its stack table: each entry, in table order (most frequent first),
/// gives its samples to its stack's culprit label; the culprit is the label with the most,
/// a tie going to the one an earlier entry named.
class Tally {
 public:
  /// Entry `entry` of the table: `samples` samples whose culprit is `label`.
  void add(std::string_view label, std::uint64_t samples, std::size_t entry) {
    for (Count& c : counts_) {
      if (c.label == label) {
        c.samples += samples;
        return;
      }
    }
    counts_.push_back(Count{std::string(label), samples, entry});
  }
  /// The winner: its label ("" when no entry named one), samples, and the first entry naming it.
  bool known() const { return best() != nullptr; }
  std::string label() const { return best() != nullptr ? best()->label : std::string(); }
  std::uint64_t samples() const { return best() != nullptr ? best()->samples : 0u; }
  std::size_t entry() const { return best() != nullptr ? best()->entry : 0u; }

 private:
  struct Count {
    std::string label;
    std::uint64_t samples;
    std::size_t entry;
  };
  const Count* best() const {
    const Count* top = nullptr;
    for (const Count& c : counts_) {
      if (top == nullptr || c.samples > top->samples) top = &c;
    }
    return top;
  }
  std::vector<Count> counts_;
};

}  // namespace loopcanary::culprit
