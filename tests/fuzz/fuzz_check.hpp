// SPDX-License-Identifier: MIT
// FUZZ_CHECK(condition, what...): a property a fuzz target asserts of the reader it drives. When it
// fails, the message goes to stderr and the target aborts, which libFuzzer reports as a crash
// and saves the input (-artifact_prefix).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, ...)                                                              \
  do {                                                                                          \
    if (!(condition)) {                                                                         \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, __LINE__, #condition);   \
      std::fprintf(stderr, __VA_ARGS__);                                                        \
      std::fprintf(stderr, "\n");                                                               \
      std::abort();                                                                             \
    }                                                                                           \
  } while (false)
