// SPDX-License-Identifier: MIT
// The wrap reruns of the Linux timing tests (CTest `wrap.*`, tests/linux/CMakeLists.txt): the
// same test sources, linked to the port built with the tick offset hook
// (LOOPCANARY_LINUX_TICK_OFFSET_HOOK), run by tick_wrap_main.cpp, which starts every test with
// Clock::now() a little before 2^32 and fails the test unless the counter crossed 2^32 in it.
#pragma once

#include "loopcanary/loopcanary.hpp"
#include "loopcanary/port/linux.hpp"

namespace lctest::wrap {

#if LOOPCANARY_LINUX_TICK_OFFSET_HOOK
/// Called with every record a test rig's collector receives (any thread). A test that produced
/// records passes the wrap check only if one of them spans the wrap (start > end as numbers).
void witness(const loopcanary::BlockRecord& record) noexcept;
#endif

}  // namespace lctest::wrap
