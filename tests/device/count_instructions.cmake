# SPDX-License-Identifier: MIT
# Prints the disassembly of FUNCTIONS ("a|b") in FIRMWARE and the number of instructions in each
# (static count: every instruction of the function body, taken paths or not; literal-pool words
# are not instructions and are not counted).
#
#   cmake -DOBJDUMP=arm-none-eabi-objdump -DFIRMWARE=fw.elf -DFUNCTIONS=lc_bench_begin_end
#         -P count_instructions.cmake

cmake_minimum_required(VERSION 3.25)
foreach(variable OBJDUMP FIRMWARE FUNCTIONS)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "count_instructions.cmake: -D${variable}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" functions "${FUNCTIONS}")
foreach(function IN LISTS functions)
  execute_process(COMMAND ${OBJDUMP} -d --no-show-raw-insn --disassemble=${function} ${FIRMWARE}
    OUTPUT_VARIABLE listing RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} failed on ${FIRMWARE}")
  endif()
  # Instruction lines: "  address:<tab>mnemonic ..." (no indent for 8-digit addresses); data words
  # show as ".word".
  string(REGEX MATCHALL "\n *[0-9a-f]+:\t[a-z][^\n]*" lines "${listing}")
  set(count 0)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "\t\\.(word|short|byte)")
      math(EXPR count "${count} + 1")
    endif()
  endforeach()
  if(count EQUAL 0)
    message(FATAL_ERROR "no instructions found for ${function} in ${FIRMWARE}")
  endif()
  string(REGEX REPLACE "^.*\n([0-9a-f]+ <${function}>:)" "\\1" body "${listing}")
  message("${body}\nstatic instruction count of ${function}: ${count}\n")
endforeach()
