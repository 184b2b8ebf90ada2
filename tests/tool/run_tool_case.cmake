# SPDX-License-Identifier: MIT
# Runs one command of a tool test and checks it. cmake -P with:
#   CASE      a case file (written by tests/tool/CMakeLists.txt) setting:
#     COMMAND           the program and its arguments
#     EXIT_CODE         the expected exit status
#     STDOUT, STDERR    regular expressions the output must match, each of them
#     STDOUT_NOT        regular expressions stdout must not match
#     STDERR_ONE_LINE   TRUE: stderr is exactly one line
#     CLEAN_DIR         a directory to recreate empty before the command (optional)
#   EMULATOR  optional: what runs a cross build's programs, "|" between its arguments
#             (tests/CMakeLists.txt, LOOPCANARY_TEST_EMULATOR); empty in a native build
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")
include(${CMAKE_CURRENT_LIST_DIR}/../check_output.cmake)

include(${CASE})
if(CLEAN_DIR)
  file(REMOVE_RECURSE ${CLEAN_DIR})
  file(MAKE_DIRECTORY ${CLEAN_DIR})
endif()
execute_process(COMMAND ${EMULATOR} ${COMMAND} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code TIMEOUT 300)
set(failures "")
check_output("${out}" "${err}" "${code}" failures)
if(failures)
  message(FATAL_ERROR "${failures}--- command ---\n${COMMAND}\n--- stdout ---\n${out}--- stderr ---\n${err}")
endif()
