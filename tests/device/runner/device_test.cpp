// SPDX-License-Identifier: MIT
#include "device_test.hpp"

namespace loopcanary::device_test {
namespace {

TestCase* g_first = nullptr;
TestCase* g_last = nullptr;
WriteFunction g_write = nullptr;
const TestCase* g_running = nullptr;
bool g_failed = false;

// Digits of `value` in `base`, most significant first, into `out` (at least 21 chars + NUL).
void format_unsigned(std::uint64_t value, unsigned base, char* out) noexcept {
  char reversed[24];
  std::size_t n = 0;
  do {
    const auto digit = static_cast<unsigned>(value % base);
    reversed[n++] = static_cast<char>(digit < 10 ? '0' + digit : 'a' + (digit - 10));
    value /= base;
  } while (value != 0);
  std::size_t i = 0;
  while (n > 0) out[i++] = reversed[--n];
  out[i] = '\0';
}

void print_value(const Printable& value) noexcept {
  switch (value.kind) {
    case Printable::Kind::signed_value: print_i64(static_cast<std::int64_t>(value.bits)); break;
    case Printable::Kind::pointer: print_hex(static_cast<std::uintptr_t>(value.bits)); break;
    case Printable::Kind::unsigned_value:
      print_u64(value.bits);
      if (value.bits > 9) {
        print(" (");
        print_hex(static_cast<std::uintptr_t>(value.bits));
        print(")");
      }
      break;
  }
}

void print_location(const char* file, int line) noexcept {
  print(file);
  print(":");
  print_i64(line);
  print(": Failure\n");
}

}  // namespace

void add(TestCase& test) noexcept {
  test.next = nullptr;
  if (g_last == nullptr) {
    g_first = &test;
  } else {
    g_last->next = &test;
  }
  g_last = &test;
}

void set_output(WriteFunction write) noexcept { g_write = write; }

void print(const char* text) noexcept {
  if (g_write != nullptr) g_write(text);
}

void print_u64(std::uint64_t value) noexcept {
  char digits[24];
  format_unsigned(value, 10, digits);
  print(digits);
}

void print_i64(std::int64_t value) noexcept {
  if (value < 0) {
    print("-");
    print_u64(0u - static_cast<std::uint64_t>(value));
  } else {
    print_u64(static_cast<std::uint64_t>(value));
  }
}

void print_hex(std::uintptr_t value) noexcept {
  char digits[24];
  format_unsigned(value, 16, digits);
  print("0x");
  print(digits);
}

void fail(const char* file, int line, const char* expression) noexcept {
  g_failed = true;
  print_location(file, line);
  print("  expected true: ");
  print(expression);
  print("\n");
}

void fail_compare(const char* file, int line, const char* expression, const Printable& a,
                  const Printable& b) noexcept {
  g_failed = true;
  print_location(file, line);
  print("  expected: ");
  print(expression);
  print("\n  left:  ");
  print_value(a);
  print("\n  right: ");
  print_value(b);
  print("\n");
}

int run_all(WriteFunction write) noexcept {
  set_output(write);
  std::uint32_t total = 0;
  for (const TestCase* t = g_first; t != nullptr; t = t->next) ++total;
  print("[==========] Running ");
  print_u64(total);
  print(" tests.\n");
  int failed = 0;
  for (const TestCase* t = g_first; t != nullptr; t = t->next) {
    g_running = t;
    g_failed = false;
    print("[ RUN      ] ");
    print(t->name);
    print("\n");
    t->function();
    print(g_failed ? "[  FAILED  ] " : "[       OK ] ");
    print(t->name);
    print("\n");
    if (g_failed) ++failed;
  }
  g_running = nullptr;
  print("[==========] ");
  print_u64(total);
  print(" tests ran.\n");
  if (failed == 0) {
    print("[  PASSED  ] all tests.\n");
  } else {
    print("[  FAILED  ] ");
    print_i64(failed);
    print(" tests failed.\n");
  }
  return failed;
}

}  // namespace loopcanary::device_test
