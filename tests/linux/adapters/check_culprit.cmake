# SPDX-License-Identifier: MIT
# Runs an adapter's example (its one slow callback is a lambda) with a log directory, then
# `loopcanary report` on it: the culprit is the user's code, the lambda, never the event-loop library's own frames (Asio's asio::detail::, libuv, GLib) or
# the C++ library's (docs/tool.md, "Culprit").
# cmake -P with EXAMPLE, TOOL, WORK_DIR (recreated here) and CULPRIT (a regular expression the
# report's one culprit must match in full); EMULATOR (optional): what runs a cross build's
# programs, "|" between its arguments (tests/CMakeLists.txt, LOOPCANARY_TEST_EMULATOR).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(ENV{LOOPCANARY_THRESHOLD_MS} 100)
set(ENV{LOOPCANARY_LOG_DIR} ${WORK_DIR})
set(ENV{LOOPCANARY_STDERR} 0)
execute_process(COMMAND ${EMULATOR} ${EXAMPLE} RESULT_VARIABLE code TIMEOUT 120)
if(NOT code STREQUAL "0")
  message(FATAL_ERROR "${EXAMPLE}: exit status ${code}")
endif()
execute_process(COMMAND ${EMULATOR} ${TOOL} report ${WORK_DIR} --format json OUTPUT_VARIABLE report RESULT_VARIABLE code TIMEOUT 120)
if(NOT code STREQUAL "0")
  message(FATAL_ERROR "loopcanary report: exit status ${code}")
endif()
string(JSON groups LENGTH "${report}" groups)
if(NOT groups EQUAL 1)
  message(FATAL_ERROR "${groups} culprit groups, want the one block's:\n${report}")
endif()
string(JSON culprit GET "${report}" groups 0 key)
if(NOT culprit MATCHES "^${CULPRIT}$")
  message(FATAL_ERROR "the culprit is '${culprit}', want one matching ${CULPRIT}")
endif()
message(STATUS "culprit: ${culprit}")
file(REMOVE_RECURSE ${WORK_DIR})
