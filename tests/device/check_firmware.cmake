# SPDX-License-Identifier: MIT
# Runs a device-test firmware under QEMU, requires exit code 0, and optionally checks where its
# PC samples landed by symbolising them on the host.
#
#   cmake -DEMULATOR="qemu-system-arm|-M|mps2-an385|...|-kernel" -DFIRMWARE=block_test.elf
#         [-DADDR2LINE=arm-none-eabi-addr2line -DFUNCTION=busy_compute -DMIN_PERCENT=80]
#         -P check_firmware.cmake
#
# EMULATOR is the command line with "|" between arguments (CTest would split a ";" list). The
# firmware prints its sampled program counters as "lc-pc 0x<pc> <count>" lines and
# "lc-pc-other <count>" (samples it could not tabulate, counted as misses); each PC is
# symbolised with `addr2line -f -C`, and the samples whose function is FUNCTION must be at least
# MIN_PERCENT % of all samples.

cmake_minimum_required(VERSION 3.25)

foreach(variable EMULATOR FIRMWARE)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "check_firmware.cmake: -D${variable}=... is required")
  endif()
endforeach()
if(NOT DEFINED MIN_PERCENT)
  set(MIN_PERCENT 80)
endif()
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 60)
endif()

string(REPLACE "|" ";" emulator "${EMULATOR}")
execute_process(COMMAND ${emulator} ${FIRMWARE}
  INPUT_FILE /dev/null
  OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE exit_code
  TIMEOUT ${TIMEOUT})
message("${output}")
if(errors)
  message("stderr:\n${errors}")
endif()
if(NOT exit_code EQUAL 0)
  message(FATAL_ERROR "firmware ${FIRMWARE} failed: exit code ${exit_code}")
endif()

if(NOT FUNCTION)
  return()
endif()
if(NOT ADDR2LINE)
  message(FATAL_ERROR "check_firmware.cmake: FUNCTION needs -DADDR2LINE=<arm-none-eabi-addr2line>")
endif()

string(REGEX MATCHALL "lc-pc 0x[0-9a-f]+ [0-9]+" pc_lines "${output}")
set(other 0)
if(output MATCHES "lc-pc-other ([0-9]+)")
  set(other ${CMAKE_MATCH_1})
endif()
set(addresses)
set(counts)
foreach(line IN LISTS pc_lines)
  string(REGEX REPLACE "lc-pc (0x[0-9a-f]+) ([0-9]+)" "\\1;\\2" fields "${line}")
  list(GET fields 0 address)
  list(GET fields 1 count)
  list(APPEND addresses ${address})
  list(APPEND counts ${count})
endforeach()
list(LENGTH addresses entries)
if(entries EQUAL 0)
  message(FATAL_ERROR "no lc-pc lines in the firmware output: no PC samples to check")
endif()

execute_process(COMMAND ${ADDR2LINE} -f -C -e ${FIRMWARE} ${addresses}
  OUTPUT_VARIABLE symbols RESULT_VARIABLE addr2line_code)
if(NOT addr2line_code EQUAL 0)
  message(FATAL_ERROR "${ADDR2LINE} failed (${addr2line_code})")
endif()
string(REGEX REPLACE "\n$" "" symbols "${symbols}")
string(REPLACE "\n" ";" symbol_lines "${symbols}")

set(total ${other})
set(matching 0)
set(table "")
math(EXPR last "${entries} - 1")
foreach(i RANGE ${last})
  list(GET addresses ${i} address)
  list(GET counts ${i} count)
  math(EXPR function_line "2 * ${i}")
  math(EXPR location_line "2 * ${i} + 1")
  list(GET symbol_lines ${function_line} function)
  list(GET symbol_lines ${location_line} location)
  math(EXPR total "${total} + ${count}")
  # `addr2line -f -C` prints "busy_compute" or "busy_compute(unsigned int)", maybe qualified.
  if(function MATCHES "^(.*::)?${FUNCTION}(\\(.*\\))?$")
    math(EXPR matching "${matching} + ${count}")
  endif()
  string(APPEND table "  ${address} ${count} samples  ${function}  ${location}\n")
endforeach()
math(EXPR percent "100 * ${matching} / ${total}")
message("PC samples symbolised with addr2line:\n${table}  (${other} samples not tabulated)\n"
        "${matching} of ${total} samples (${percent} %) in ${FUNCTION}; required: ${MIN_PERCENT} %")
math(EXPR scaled_matching "100 * ${matching}")
math(EXPR scaled_required "${MIN_PERCENT} * ${total}")
if(scaled_matching LESS scaled_required)
  message(FATAL_ERROR "only ${percent} % of the PC samples are in ${FUNCTION} (required ${MIN_PERCENT} %)")
endif()
