# SPDX-License-Identifier: MIT
# The device tests of the RISC-V port (port/riscv) on QEMU's virt board, included by
# CMakeLists.txt with its functions: the scenario firmware shared with Cortex-M (block, hang,
# crash box, evidence stream), the frame-chain test, the hot path, the footprint and the minimal
# device profile. The clock is mtime at 10 MHz (board::kTimerHz), so the wrap variants start
# 350000 ticks (block, 35 ms) and 500000 ticks (hang, 50 ms) before 2^32.

set(block EVENT slow_handler PHASE final CAUSE running FUNCTION busy_compute)
set(hang EVENT wait_for_ack PHASE hang CAUSE running FUNCTION stuck_forever)
loopcanary_device_capture_test(block block_test.cpp ${block})
loopcanary_device_capture_test(block_wrap block_test.cpp ${block}
  DEFINITIONS LC_TEST_START=0xFFFAA8D0u)  # 2^32 - 350000 ticks (35 ms at 10 MHz)
loopcanary_device_capture_test(hang hang_test.cpp ${hang})
loopcanary_device_capture_test(hang_wrap hang_test.cpp ${hang}
  DEFINITIONS LC_TEST_START=0xFFF85EE0u)  # 2^32 - 500000 ticks (50 ms at 10 MHz)

# Crash box: a hang kept in no-init RAM across the reset that ends it (two boots per run) and
# sent at the next boot as one previous_boot packet; a damaged box: discarded, nothing sent.
loopcanary_device_capture_test(crash_box crash_box_test.cpp ${hang} RESET_CAUSE software PACKETS 1)
loopcanary_device_capture_test(crash_box_damaged crash_box_test.cpp PACKETS 0
  DEFINITIONS LC_TEST_CORRUPT=1)

# Whole chains from the frame-pointer chain the port walks (frame_chain_test.cpp): >= 95 % of
# the block's samples hold the seven user functions, at -Os (the workflow's build type) and at
# -O2; the culprit is the innermost of them, not the division helper it calls. Two records:
# in progress and final.
set(frame_chain EVENT slow_handler PHASE final CAUSE running RECORDS 2
  CHAIN lc_unwind_handler lc_chain_1 lc_chain_2 lc_chain_3 lc_chain_4 lc_chain_5 lc_chain_6 CULPRIT lc_chain_6)
loopcanary_device_capture_test(frame_chain frame_chain_test.cpp ${frame_chain})
loopcanary_device_capture_test(frame_chain_o2 frame_chain_test.cpp ${frame_chain} OPTIONS -O2)

# The evidence stream (a StaticEvidenceWatchdog, its evidence ring in no-init RAM): the host tool
# assembles the records from the evidence packets (evidence_test.cpp); as in CMakeLists.txt, one
# warning each: the decoder's "crash box discarded" for the boot that found no valid ring.
# A build without CPU readings (the minimal profile) has no cause for its records: `unknown`.
set(evidence_block ${block})
set(evidence_hang ${hang})
if(NOT LOOPCANARY_CPU_READINGS)
  set(evidence_block EVENT slow_handler PHASE final CAUSE unknown FUNCTION busy_compute)
  set(evidence_hang EVENT wait_for_ack PHASE hang CAUSE unknown FUNCTION stuck_forever)
endif()
loopcanary_device_capture_test(evidence_block evidence_test.cpp ${evidence_block} RECORDS 2 WARNINGS 1
  DEFINITIONS LC_SCENARIO=1)
loopcanary_device_capture_test(evidence_hang evidence_test.cpp ${evidence_hang} RECORDS 2 WARNINGS 1
  DEFINITIONS LC_SCENARIO=2)
loopcanary_device_capture_test(evidence_crash_box evidence_test.cpp ${evidence_hang} RESET_CAUSE software RECORDS 2
  WARNINGS 1 DEFINITIONS LC_SCENARIO=3)
loopcanary_device_capture_test(evidence_crash_box_damaged evidence_test.cpp PACKETS 1 RECORDS 0 WARNINGS 1
  DEFINITIONS LC_SCENARIO=4)

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

# The minimal super-loop without loopcanary, with it as a device sends its records (packets,
# crash box) and as it sends evidence: the differences are the footprint of core + port +
# encoder + crash box (footprint.cmake; no formatter build: the port drains packets only).
# device.minimal runs the packet build; figures.footprint fails when the evidence build's code
# by source exceeds 9100 B (8956 B measured).
loopcanary_device_firmware(loopcanary_device_minimal_base
  SOURCES minimal_firmware.cpp DEFINITIONS LC_WITH_LOOPCANARY=0)
loopcanary_device_firmware(loopcanary_device_minimal_noformat
  SOURCES minimal_firmware.cpp LIBS loopcanary::port_riscv DEFINITIONS LC_WITH_FORMAT=0)
loopcanary_device_firmware(loopcanary_device_minimal_evidence
  SOURCES minimal_firmware.cpp LIBS loopcanary::port_riscv DEFINITIONS LC_WITH_FORMAT=0 LC_WITH_EVIDENCE=1)
loopcanary_device_test(device.minimal loopcanary_device_minimal_noformat)
if(CMAKE_INTERPROCEDURAL_OPTIMIZATION)
  set(lto_label "LTO")
else()
  set(lto_label "no LTO")
endif()
add_test(NAME figures.footprint
  COMMAND ${CMAKE_COMMAND} -DSIZE=${CMAKE_SIZE} -DOBJDUMP=${CMAKE_OBJDUMP} -DADDR2LINE=${CMAKE_ADDR2LINE}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DNM=${CMAKE_NM}
    "-DLABEL=${device_cpu}, ${CMAKE_BUILD_TYPE}, ${lto_label}, LOOPCANARY_PROFILE=${LOOPCANARY_PROFILE}"
    -DBASE=$<TARGET_FILE:loopcanary_device_minimal_base>
    -DNOFORMAT=$<TARGET_FILE:loopcanary_device_minimal_noformat>
    -DEVIDENCE=$<TARGET_FILE:loopcanary_device_minimal_evidence> -DMAX_CODE=9100
    -P ${CMAKE_CURRENT_SOURCE_DIR}/footprint.cmake)
set_tests_properties(figures.footprint PROPERTIES LABELS figures)

# The minimal device profile (LOOPCANARY_PROFILE=minimal): this build's toolchain, build type and
# capacities with the profile's feature switches, in its own configuration. Its evidence
# firmware runs the block, hang and crash box tests there (device.minimal_profile: the captures
# decoded by this build's host tool, the cause `unknown` without CPU readings), and
# figures.footprint_minimal fails when its flash by source exceeds 8100 B (7972 B measured).
option(LOOPCANARY_DEVICE_PROFILES "Build and test the minimal device profile too (an ExternalProject)" ON)
if(LOOPCANARY_DEVICE_PROFILES AND NOT LOOPCANARY_PROFILE STREQUAL "minimal")
  include(ExternalProject)
  set(minimal_dir ${CMAKE_BINARY_DIR}/profile-minimal)
  ExternalProject_Add(loopcanary_profile_minimal
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${minimal_dir}
    CMAKE_ARGS
      -DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE}
      -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
      -DLOOPCANARY_PROFILE=minimal
      -DLOOPCANARY_SINGLE_CORE=${LOOPCANARY_SINGLE_CORE}
      -DLOOPCANARY_MAX_SAMPLES=${LOOPCANARY_MAX_SAMPLES}
      -DLOOPCANARY_MAX_FRAMES=${LOOPCANARY_MAX_FRAMES}
      -DLOOPCANARY_STACK_WORDS=${LOOPCANARY_STACK_WORDS}
      -DLOOPCANARY_WERROR=${LOOPCANARY_WERROR}
      -DLOOPCANARY_HOST_TOOL=${host_tool}
      -DLOOPCANARY_INSTALL=OFF
      -DLOOPCANARY_DEVICE_PROFILES=OFF
    BUILD_COMMAND ${CMAKE_COMMAND} --build <BINARY_DIR> --target loopcanary_device_minimal_base
      loopcanary_device_minimal_noformat loopcanary_device_minimal_evidence
      loopcanary_device_evidence_block loopcanary_device_evidence_hang loopcanary_device_evidence_crash_box
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON)
  if(TARGET loopcanary_host_tool)
    add_dependencies(loopcanary_profile_minimal loopcanary_host_tool)
  endif()
  add_test(NAME device.minimal_profile
    COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${minimal_dir} --output-on-failure --no-tests=error
      -R "^device\\.(evidence_block|evidence_hang|evidence_crash_box)$")
  set_tests_properties(device.minimal_profile PROPERTIES LABELS device TIMEOUT 300)
  set(minimal_firmware ${minimal_dir}/tests/device/loopcanary_device_minimal)
  add_test(NAME figures.footprint_minimal
    COMMAND ${CMAKE_COMMAND} -DSIZE=${CMAKE_SIZE} -DOBJDUMP=${CMAKE_OBJDUMP} -DADDR2LINE=${CMAKE_ADDR2LINE}
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DNM=${CMAKE_NM}
      "-DLABEL=${device_cpu}, ${CMAKE_BUILD_TYPE}, ${lto_label}, LOOPCANARY_PROFILE=minimal"
      -DBASE=${minimal_firmware}_base.elf -DNOFORMAT=${minimal_firmware}_noformat.elf
      -DEVIDENCE=${minimal_firmware}_evidence.elf -DMAX_CODE=8100
      -P ${CMAKE_CURRENT_SOURCE_DIR}/footprint.cmake)
  set_tests_properties(figures.footprint_minimal PROPERTIES LABELS figures)
endif()

# No firmware links an allocator (no_heap.cmake): every image built above.
get_property(all_firmware GLOBAL PROPERTY loopcanary_device_firmware)
add_test(NAME device.no_heap
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} "-DFIRMWARE=${all_firmware}" -P ${CMAKE_CURRENT_SOURCE_DIR}/no_heap.cmake)
set_tests_properties(device.no_heap PROPERTIES LABELS device)
