# SPDX-License-Identifier: MIT
# Runs RECORDS (the scenario's records as its StaticWatchdog builds them) and STREAM (its
# evidence stream: packets decoded and assembled by the tool's reader) and requires the same
# records, field by field (tests/evidence_stream_scenario.cpp), apart from the first line naming
# the build. The records must show every cause, so that a comparison of records without one
# cannot pass.
#
#   cmake -DRECORDS=a -DSTREAM=b [-DEMULATOR=qemu-aarch64|-L|...] -P evidence_stream_compare.cmake
# EMULATOR: what runs a cross build's programs, "|" between its arguments (tests/CMakeLists.txt,
# LOOPCANARY_TEST_EMULATOR); empty in a native build.
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")
foreach(program RECORDS STREAM)
  execute_process(COMMAND ${EMULATOR} ${${program}} OUTPUT_VARIABLE out_${program} RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${${program}} failed (${code}):\n${out_${program}}")
  endif()
  string(FIND "${out_${program}}" "\n" first_end)
  math(EXPR first_end "${first_end} + 1")
  string(SUBSTRING "${out_${program}}" ${first_end} -1 records_${program})
endforeach()
foreach(cause running waiting starved unknown)
  if(NOT records_RECORDS MATCHES " cause=${cause} ")
    message(FATAL_ERROR "no record with cause ${cause}:\n${records_RECORDS}")
  endif()
endforeach()
foreach(other STREAM)
  if(NOT records_RECORDS STREQUAL records_${other})
    string(TOLOWER ${other} lower)
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/evidence_stream_records.txt "${records_RECORDS}")
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/evidence_stream_${lower}.txt "${records_${other}}")
    message(FATAL_ERROR "the records differ: diff ${CMAKE_CURRENT_BINARY_DIR}/evidence_stream_records.txt "
                        "${CMAKE_CURRENT_BINARY_DIR}/evidence_stream_${lower}.txt")
  endif()
endforeach()
string(REGEX MATCHALL "\nrecord " records "\n${records_RECORDS}")
list(LENGTH records count)
message("${count} records equal")
