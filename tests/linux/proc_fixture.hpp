// SPDX-License-Identifier: MIT
// A /proc fixture file (tests/linux/fixtures) read into a stack buffer with the port's own reader
// (read_small_file), as the port reads /proc; for the parser tests.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "loopcanary/port/linux/proc.hpp"

namespace loopcanary::port_linux::test {

/// The fixture `name` (a file name in LOOPCANARY_LINUX_FIXTURES): its first `length` bytes in
/// `text`. A failed read is a test failure (EXPECT) naming the path; `length` stays 0.
struct Fixture {
  char text[4096];
  std::size_t length = 0;
  explicit Fixture(const char* name) {
    const std::string path = std::string(LOOPCANARY_LINUX_FIXTURES) + "/" + name;
    const int error = read_small_file(path.c_str(), text, sizeof text, length);
    EXPECT_EQ(error, 0) << path;
  }
};

}  // namespace loopcanary::port_linux::test
