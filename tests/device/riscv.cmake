# SPDX-License-Identifier: MIT
# The device tests of the RISC-V port (port/riscv) on QEMU's virt board, included by
# CMakeLists.txt with its functions: the scenario firmware shared with Cortex-M (block, hang,
# crash box, evidence stream). The clock is mtime at 10 MHz
# (board::kTimerHz), so the wrap variants start 350000 ticks (block, 35 ms) and 500000 ticks
# (hang, 50 ms) before 2^32.

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

# The evidence stream (a StaticEvidenceWatchdog, its evidence ring in no-init RAM): the host tool
# assembles the records from the evidence packets (evidence_test.cpp); as in CMakeLists.txt, one
# warning each: the decoder's "crash box discarded" for the boot that found no valid ring.
loopcanary_device_capture_test(evidence_block evidence_test.cpp ${block} RECORDS 2 WARNINGS 1
  DEFINITIONS LC_SCENARIO=1)
loopcanary_device_capture_test(evidence_hang evidence_test.cpp ${hang} RECORDS 2 WARNINGS 1
  DEFINITIONS LC_SCENARIO=2)
loopcanary_device_capture_test(evidence_crash_box evidence_test.cpp ${hang} RESET_CAUSE software RECORDS 2
  WARNINGS 1 DEFINITIONS LC_SCENARIO=3)
loopcanary_device_capture_test(evidence_crash_box_damaged evidence_test.cpp PACKETS 1 RECORDS 0 WARNINGS 1
  DEFINITIONS LC_SCENARIO=4)

# No firmware links an allocator (no_heap.cmake): every image built above.
get_property(all_firmware GLOBAL PROPERTY loopcanary_device_firmware)
add_test(NAME device.no_heap
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} "-DFIRMWARE=${all_firmware}" -P ${CMAKE_CURRENT_SOURCE_DIR}/no_heap.cmake)
set_tests_properties(device.no_heap PROPERTIES LABELS device)
