# SPDX-License-Identifier: MIT
# The device tests of the RISC-V port (port/riscv) on QEMU's virt board, included by
# CMakeLists.txt with its functions: the scenario firmware shared with Cortex-M (block, hang,
# crash box, evidence stream), the frame-chain test, the hot path, the footprint and the minimal
# device profile. The clock is mtime at 10 MHz (board::kTimerHz), so the wrap variants start
# 350000 ticks (block, 35 ms) and 500000 ticks (hang, 50 ms) before 2^32.

loopcanary_device_block_hang_tests(
  BLOCK_WRAP_START 0xFFFAA8D0u  # 2^32 - 350000 ticks (35 ms at 10 MHz)
  HANG_WRAP_START 0xFFF85EE0u)  # 2^32 - 500000 ticks (50 ms at 10 MHz)
loopcanary_device_crash_box_tests()

# Whole chains from the frame-pointer chain the port walks (frame_chain_test.cpp): >= 95 % of
# the block's samples hold the seven user functions, at -Os (the workflow's build type) and at
# -O2; the culprit is the innermost of them, not the division helper it calls. Two records:
# in progress and final.
set(frame_chain SOURCES call_chain.cpp EVENT slow_handler PHASE final CAUSE running RECORDS 2
  CHAIN lc_unwind_handler lc_chain_1 lc_chain_2 lc_chain_3 lc_chain_4 lc_chain_5 lc_chain_6 CULPRIT lc_chain_6)
loopcanary_device_capture_test(frame_chain frame_chain_test.cpp ${frame_chain})
loopcanary_device_capture_test(frame_chain_o2 frame_chain_test.cpp ${frame_chain} OPTIONS -O2)

# The evidence stream (loopcanary_device_evidence_tests): without stack evidence on this port,
# no chain for the crash box.
loopcanary_device_evidence_tests()

# ---- Figures: hot-path instructions, footprint ------------------------------------------------

# Hot path: instructions per begin+end pair and per back-to-back dispatch (counted under
# -icount), the mtime and mcycle reads, and the static disassembly.
loopcanary_device_firmware(loopcanary_device_hotpath_test
  SOURCES hotpath_test.cpp
  LIBS loopcanary::port_riscv loopcanary_device_runner
  DEFINITIONS LC_ICOUNT_SHIFT=${LOOPCANARY_QEMU_ICOUNT_SHIFT})
add_test(NAME figures.hotpath COMMAND loopcanary_device_hotpath_test)
set_tests_properties(figures.hotpath PROPERTIES LABELS "device;figures" TIMEOUT 60)
add_test(NAME figures.hotpath.disassembly
  COMMAND ${CMAKE_COMMAND} -DOBJDUMP=${CMAKE_OBJDUMP} -DFIRMWARE=$<TARGET_FILE:loopcanary_device_hotpath_test>
    -DFUNCTIONS=lc_bench_begin_end|lc_bench_next -P ${CMAKE_CURRENT_SOURCE_DIR}/count_instructions.cmake)
set_tests_properties(figures.hotpath.disassembly PROPERTIES LABELS figures)

# The minimal firmware's footprint (loopcanary_device_minimal_tests; no formatter build: the port
# drains packets only, so device.minimal runs the packet build): figures.footprint fails when the
# evidence build's code by source exceeds 9100 B (8956 B measured).
loopcanary_device_minimal_tests(MAX_CODE 9100)

# The minimal device profile (loopcanary_device_minimal_profile): figures.footprint_minimal fails
# when its flash by source exceeds 8100 B (7972 B measured).
option(LOOPCANARY_DEVICE_PROFILES "Build and test the minimal device profile too (an ExternalProject)" ON)
if(LOOPCANARY_DEVICE_PROFILES AND NOT LOOPCANARY_PROFILE STREQUAL "minimal")
  loopcanary_device_minimal_profile(${CMAKE_BINARY_DIR}/profile-minimal MAX_CODE 8100
    CMAKE_ARGS -DLOOPCANARY_DEVICE_PROFILES=OFF)
endif()
