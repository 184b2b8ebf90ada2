# SPDX-License-Identifier: MIT
# sizes_of(file prefix): the .text, .data and .bss bytes of the ELF `file`, read with ${SIZE}
# (arm-none-eabi-size, Berkeley format), set in the caller's scope as <prefix>_text,
# <prefix>_data and <prefix>_bss. Stops the script (FATAL_ERROR) when ${SIZE} fails or prints
# something else. Included by the footprint scripts (footprint.cmake, health_footprint.cmake).

function(sizes_of file prefix)
  execute_process(COMMAND ${SIZE} ${file} OUTPUT_VARIABLE out RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${SIZE} ${file} failed")
  endif()
  if(NOT out MATCHES "\n *([0-9]+)[ \t]+([0-9]+)[ \t]+([0-9]+)")
    message(FATAL_ERROR "unexpected ${SIZE} output:\n${out}")
  endif()
  set(${prefix}_text ${CMAKE_MATCH_1} PARENT_SCOPE)
  set(${prefix}_data ${CMAKE_MATCH_2} PARENT_SCOPE)
  set(${prefix}_bss ${CMAKE_MATCH_3} PARENT_SCOPE)
endfunction()
