# SPDX-License-Identifier: MIT
# The demo and the host tool read the same record the same way: for every block of the demo
# (virtual time), the culprit and its share in loopcanary-sim's summary equal those of
# `loopcanary report` on the logs it wrote (docs/tool.md, "Culprit": one rule, in one place).
# cmake -P with SIM (loopcanary-sim), TOOL (loopcanary) and WORK_DIR (recreated here); EMULATOR
# (optional): what runs a cross build's programs, "|" between its arguments (tests/CMakeLists.txt,
# LOOPCANARY_TEST_EMULATOR).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")

file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${EMULATOR} ${SIM} --time virtual --scenario cpu,flash,seed,hang --format json --log-dir ${WORK_DIR}
  OUTPUT_VARIABLE demo RESULT_VARIABLE code TIMEOUT 300)
if(NOT code STREQUAL "0")
  message(FATAL_ERROR "loopcanary-sim: exit status ${code}")
endif()
execute_process(COMMAND ${EMULATOR} ${TOOL} report ${WORK_DIR} --by event --format json
  OUTPUT_VARIABLE report RESULT_VARIABLE code TIMEOUT 300)
if(NOT code STREQUAL "0")
  message(FATAL_ERROR "loopcanary report: exit status ${code}")
endif()

string(JSON blocks LENGTH "${demo}" blocks)
string(JSON groups LENGTH "${report}" groups)
if(NOT blocks EQUAL 4 OR NOT groups EQUAL 4)
  message(FATAL_ERROR "the demo has ${blocks} blocks and the report ${groups} groups, want 4 each")
endif()
math(EXPR last_block "${blocks} - 1")
math(EXPR last_group "${groups} - 1")
set(failures "")
foreach(i RANGE ${last_block})
  string(JSON event GET "${demo}" blocks ${i} event)
  string(JSON culprit GET "${demo}" blocks ${i} culprit)
  string(JSON share GET "${demo}" blocks ${i} culprit_samples)
  string(JSON of GET "${demo}" blocks ${i} samples)
  set(found FALSE)
  foreach(j RANGE ${last_group})
    string(JSON key GET "${report}" groups ${j} key)
    if(key STREQUAL event)
      set(found TRUE)
      string(JSON tool_culprit MEMBER "${report}" groups ${j} culprits 0)
      string(JSON tool_share GET "${report}" groups ${j} culprit_samples)
      string(JSON tool_of GET "${report}" groups ${j} samples)
      if(NOT culprit STREQUAL tool_culprit OR NOT share EQUAL tool_share OR NOT of EQUAL tool_of)
        string(APPEND failures "${event}: the demo names ${culprit} (${share}/${of}), the report ${tool_culprit} (${tool_share}/${tool_of})\n")
      else()
        message(STATUS "${event}: ${culprit} (${share}/${of}) in both")
      endif()
    endif()
  endforeach()
  if(NOT found)
    string(APPEND failures "${event}: not in the report\n")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
