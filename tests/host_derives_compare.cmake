# SPDX-License-Identifier: MIT
# Runs HOST (the scenario as a host builds the core), DEVICE (the same with
# LOOPCANARY_HOST_DERIVES=1, derive() applied as the decoder does) and STREAM (the evidence
# stream: packets decoded and assembled by the tool's reader) and requires the same records,
# field by field (tests/host_derives_scenario.cpp), apart from the first line naming the build.
# The records must show every cause, so that a comparison of records without one cannot pass.
#
#   cmake -DHOST=a -DDEVICE=b -DSTREAM=c -P host_derives_compare.cmake
foreach(program HOST DEVICE STREAM)
  execute_process(COMMAND ${${program}} OUTPUT_VARIABLE out_${program} RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${${program}} failed (${code}):\n${out_${program}}")
  endif()
  string(FIND "${out_${program}}" "\n" first_end)
  math(EXPR first_end "${first_end} + 1")
  string(SUBSTRING "${out_${program}}" ${first_end} -1 records_${program})
endforeach()
foreach(cause running waiting starved unknown)
  if(NOT records_HOST MATCHES " cause=${cause} ")
    message(FATAL_ERROR "no record with cause ${cause}:\n${records_HOST}")
  endif()
endforeach()
foreach(other DEVICE STREAM)
  if(NOT records_HOST STREQUAL records_${other})
    string(TOLOWER ${other} lower)
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/host_derives_host.txt "${records_HOST}")
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/host_derives_${lower}.txt "${records_${other}}")
    message(FATAL_ERROR "the records differ: diff ${CMAKE_CURRENT_BINARY_DIR}/host_derives_host.txt "
                        "${CMAKE_CURRENT_BINARY_DIR}/host_derives_${lower}.txt")
  endif()
endforeach()
string(REGEX MATCHALL "\nrecord " records "\n${records_HOST}")
list(LENGTH records count)
message("${count} records equal")
