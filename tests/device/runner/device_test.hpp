// SPDX-License-Identifier: MIT
// A small self-contained test runner for firmware: no heap, no stdio, no exceptions. Output goes
// through one write function (semihosting on the mps2 board), the verdict through the exit code.
//
//   DT_TEST(Watchdog, hang_reported) {
//     DT_ASSERT_EQ(monitor.init(config), loopcanary::Status::ok);  // stops this test on failure
//     DT_EXPECT(stats.hangs == 1);                                  // records and goes on
//   }
//   int main() { return loopcanary::device_test::run_all(&loopcanary::board::write); }
//
// Tests register themselves through static constructors (the board's startup runs
// init_array) and run in definition order. The output mimics GoogleTest's, so a failure in a
// CTest log reads the same on the host and on the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace loopcanary::device_test {

using WriteFunction = void (*)(const char* text);

/// One registered test.
struct TestCase {
  const char* name;
  void (*function)();
  TestCase* next;
};

/// Registers `test` (static storage) at the end of the list.
void add(TestCase& test) noexcept;

/// Runs every registered test, writing progress and failures through `write`. Returns the
/// number of failed tests (0: all passed), ready to be the exit code.
int run_all(WriteFunction write) noexcept;

/// Output helpers for tests and firmware (through the function given to run_all or set_output).
void set_output(WriteFunction write) noexcept;
void print(const char* text) noexcept;
void print_u64(std::uint64_t value) noexcept;
void print_i64(std::int64_t value) noexcept;
void print_hex(std::uintptr_t value) noexcept;

/// A value printed in a failed comparison.
struct Printable {
  enum class Kind : std::uint8_t { unsigned_value, signed_value, pointer } kind;
  std::uint64_t bits;
};
template <class T>
Printable printable(const T& value) noexcept {
  if constexpr (std::is_pointer_v<T> || std::is_null_pointer_v<T>) {
    return {Printable::Kind::pointer, reinterpret_cast<std::uintptr_t>(value)};
  } else if constexpr (std::is_enum_v<T>) {
    return printable(static_cast<std::underlying_type_t<T>>(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    return {Printable::Kind::unsigned_value, value ? 1u : 0u};
  } else if constexpr (std::is_signed_v<T>) {
    return {Printable::Kind::signed_value, static_cast<std::uint64_t>(static_cast<std::int64_t>(value))};
  } else {
    return {Printable::Kind::unsigned_value, static_cast<std::uint64_t>(value)};
  }
}

/// Records a failure of the running test at file:line.
void fail(const char* file, int line, const char* expression) noexcept;
void fail_compare(const char* file, int line, const char* expression, const Printable& a,
                  const Printable& b) noexcept;

/// Registers a test in its constructor.
struct Registrar {
  Registrar(TestCase& test) noexcept { add(test); }
};

}  // namespace loopcanary::device_test

#define DT_TEST(group, name)                                                                  \
  static void dt_test_##group##_##name();                                                     \
  static ::loopcanary::device_test::TestCase dt_case_##group##_##name{#group "." #name,       \
                                                                      &dt_test_##group##_##name, \
                                                                      nullptr};               \
  static const ::loopcanary::device_test::Registrar dt_registrar_##group##_##name{           \
      dt_case_##group##_##name};                                                              \
  static void dt_test_##group##_##name()

#define DT_STRINGIFY_(x) #x
#define DT_STRINGIFY(x) DT_STRINGIFY_(x)

/// Non-fatal checks: record the failure and continue.
#define DT_EXPECT(condition)                                                           \
  do {                                                                                 \
    if (!(condition)) ::loopcanary::device_test::fail(__FILE__, __LINE__, #condition); \
  } while (false)

#define DT_EXPECT_CMP_(a, op, b, on_failure)                                                  \
  do {                                                                                        \
    const auto& dt_a_ = (a);                                                                  \
    const auto& dt_b_ = (b);                                                                  \
    if (!(dt_a_ op dt_b_)) {                                                                  \
      ::loopcanary::device_test::fail_compare(__FILE__, __LINE__, #a " " #op " " #b,          \
                                              ::loopcanary::device_test::printable(dt_a_),    \
                                              ::loopcanary::device_test::printable(dt_b_));   \
      on_failure;                                                                             \
    }                                                                                         \
  } while (false)

#define DT_EXPECT_EQ(a, b) DT_EXPECT_CMP_(a, ==, b, (void)0)
#define DT_EXPECT_NE(a, b) DT_EXPECT_CMP_(a, !=, b, (void)0)
#define DT_EXPECT_LT(a, b) DT_EXPECT_CMP_(a, <, b, (void)0)
#define DT_EXPECT_LE(a, b) DT_EXPECT_CMP_(a, <=, b, (void)0)
#define DT_EXPECT_GT(a, b) DT_EXPECT_CMP_(a, >, b, (void)0)
#define DT_EXPECT_GE(a, b) DT_EXPECT_CMP_(a, >=, b, (void)0)

/// Fatal checks: record the failure and return from the test function.
#define DT_ASSERT(condition)                                                         \
  do {                                                                               \
    if (!(condition)) {                                                              \
      ::loopcanary::device_test::fail(__FILE__, __LINE__, #condition);               \
      return;                                                                        \
    }                                                                                \
  } while (false)
#define DT_ASSERT_EQ(a, b) DT_EXPECT_CMP_(a, ==, b, return)
#define DT_ASSERT_NE(a, b) DT_EXPECT_CMP_(a, !=, b, return)
#define DT_ASSERT_LT(a, b) DT_EXPECT_CMP_(a, <, b, return)
#define DT_ASSERT_LE(a, b) DT_EXPECT_CMP_(a, <=, b, return)
#define DT_ASSERT_GT(a, b) DT_EXPECT_CMP_(a, >, b, return)
#define DT_ASSERT_GE(a, b) DT_EXPECT_CMP_(a, >=, b, return)
