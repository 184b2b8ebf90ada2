# SPDX-License-Identifier: MIT
# Runs HOST (the scenario as a host builds the core) and DEVICE (the same with
# LOOPCANARY_HOST_DERIVES=1, derive() applied as the decoder does) and requires the same records,
# field by field (tests/host_derives_scenario.cpp), apart from the first line naming the build.
# The records must show every cause, so that a comparison of records without one cannot pass.
#
#   cmake -DHOST=a -DDEVICE=b -P host_derives_compare.cmake
foreach(program HOST DEVICE)
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
if(NOT records_HOST STREQUAL records_DEVICE)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/host_derives_host.txt "${records_HOST}")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/host_derives_device.txt "${records_DEVICE}")
  message(FATAL_ERROR "the records differ: diff ${CMAKE_CURRENT_BINARY_DIR}/host_derives_host.txt "
                      "${CMAKE_CURRENT_BINARY_DIR}/host_derives_device.txt")
endif()
string(REGEX MATCHALL "\nrecord " records "\n${records_HOST}")
list(LENGTH records count)
message("${count} records equal")
