// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>
TEST(Placeholder, rings) { SUCCEED(); }
