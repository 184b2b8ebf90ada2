// SPDX-License-Identifier: MIT
// Host-side symbolisation: module + offset + build-id, and demangled function + offset for the
// executable (exported or not), shared objects and the vDSO; file:line from addr2line.
#include <gtest/gtest.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "loopcanary/linux/symbolizer.hpp"

namespace lx = loopcanary::port_linux;

namespace {

// Internal linkage: only in .symtab, never exported.
__attribute__((noinline)) int lc_test_hidden_function(int x) {
  asm volatile("" ::: "memory");
  return x * 7 + 1;
}

}  // namespace

namespace lc_test_ns {
__attribute__((noinline)) double overloaded(double x, int y) {
  asm volatile("" ::: "memory");
  return x * y;
}
}  // namespace lc_test_ns

TEST(LinuxSymbolizer, NonExportedFunctionOfTheExecutable) {
  lx::Symbolizer symbolizer;
  const auto pc = reinterpret_cast<std::uintptr_t>(&lc_test_hidden_function) + 2;
  lx::Symbol sym;
  ASSERT_TRUE(symbolizer.symbolize(pc, false, sym));
  ASSERT_TRUE(sym.has_function);
  EXPECT_TRUE(sym.exact);
  EXPECT_NE(std::strstr(sym.function, "lc_test_hidden_function(int)"), nullptr) << sym.function;
  EXPECT_EQ(sym.function_offset, 2u);
  char exe[256] = {};
  ASSERT_GT(readlink("/proc/self/exe", exe, sizeof exe - 1), 0);
  EXPECT_STREQ(sym.module_path, exe);
  EXPECT_EQ(sym.module, 0u) << "the executable is the first module";
  const lx::ModuleInfo module = symbolizer.module(sym.module);
  EXPECT_EQ(sym.module_offset, pc - module.bias);
  EXPECT_EQ(std::strlen(sym.build_id), 40u) << "gcc and clang on Debian link with --build-id";
}

TEST(LinuxSymbolizer, DemanglesNamespacesAndArguments) {
  lx::Symbolizer symbolizer;
  lx::Symbol sym;
  ASSERT_TRUE(symbolizer.symbolize(reinterpret_cast<std::uintptr_t>(&lc_test_ns::overloaded), false, sym));
  EXPECT_STREQ(sym.function, "lc_test_ns::overloaded(double, int)");
  EXPECT_EQ(sym.function_offset, 0u);
}

TEST(LinuxSymbolizer, ReturnAddressIsLookedUpAtTheCall) {
  // A return address one past the last byte of a function belongs to the call at its end.
  lx::Symbolizer symbolizer;
  const auto start = reinterpret_cast<std::uintptr_t>(&lc_test_hidden_function);
  lx::Symbol sym;
  ASSERT_TRUE(symbolizer.symbolize(start + 1, true, sym));
  EXPECT_NE(std::strstr(sym.function, "lc_test_hidden_function"), nullptr);
  EXPECT_EQ(sym.function_offset, 1u) << "the offset printed is the return address's own";
}

TEST(LinuxSymbolizer, SharedObjectFunction) {
  lx::Symbolizer symbolizer;
  lx::Symbol sym;
  ASSERT_TRUE(symbolizer.symbolize(reinterpret_cast<std::uintptr_t>(&getpid), false, sym));
  EXPECT_NE(std::strstr(sym.module_path, "libc.so"), nullptr) << sym.module_path;
  ASSERT_TRUE(sym.has_function);
  EXPECT_NE(std::strstr(sym.function, "getpid"), nullptr) << sym.function;
}

TEST(LinuxSymbolizer, VdsoIsReadFromMemory) {
  if (getauxval(AT_SYSINFO_EHDR) == 0) GTEST_SKIP() << "no vDSO";
  lx::Symbolizer symbolizer;
  bool found = false;
  for (std::size_t m = 0; m < symbolizer.module_count() && !found; ++m) {
    const lx::ModuleInfo module = symbolizer.module(m);
    if (std::strcmp(module.path, "[vdso]") != 0) continue;
    for (std::uintptr_t pc = module.low; pc < module.high && !found; pc += 4) {
      lx::Symbol sym;
      found = symbolizer.symbolize(pc, false, sym) && sym.exact && std::strstr(sym.function, "clock_gettime") != nullptr;
    }
  }
  EXPECT_TRUE(found);
}

TEST(LinuxSymbolizer, AddressOutsideEveryModule) {
  lx::Symbolizer symbolizer;
  lx::Symbol sym;
  EXPECT_FALSE(symbolizer.symbolize(16, false, sym));
  EXPECT_FALSE(sym.in_module);
  EXPECT_FALSE(sym.has_function);
  EXPECT_FALSE(symbolizer.locate(16, sym));
}

TEST(LinuxSymbolizer, FileAndLineFromAddr2line) {
  if (access("/usr/bin/addr2line", X_OK) != 0) GTEST_SKIP() << "binutils' addr2line is not installed";
  lx::Symbolizer symbolizer;
  lx::Symbol sym;
  ASSERT_TRUE(symbolizer.symbolize(reinterpret_cast<std::uintptr_t>(&lc_test_ns::overloaded) + 1, false, sym));
  char file_line[256];
  char function[256];
  ASSERT_TRUE(lx::Symbolizer::source_line(sym.module_path, sym.module_offset, file_line, sizeof file_line, function,
                                          sizeof function));
  EXPECT_NE(std::strstr(file_line, "symbolizer_test.cpp:"), nullptr) << file_line;
  EXPECT_NE(std::strstr(function, "overloaded"), nullptr) << function;
  EXPECT_FALSE(lx::Symbolizer::source_line("/nonexistent/module", 0x10, file_line, sizeof file_line));
  EXPECT_FALSE(lx::Symbolizer::source_line("[vdso]", 0x10, file_line, sizeof file_line));
}

TEST(LinuxSymbolizer, HexHelper) {
  const unsigned char bytes[] = {0x00, 0x9f, 0xa0, 0xff};
  char out[9];
  lx::to_hex(bytes, sizeof bytes, out);
  EXPECT_STREQ(out, "009fa0ff");
}
