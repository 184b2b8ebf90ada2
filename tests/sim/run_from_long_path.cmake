# SPDX-License-Identifier: MIT
# Runs a copy of loopcanary-sim from a directory whose path is longer than 255 bytes (the
# seed scenario, virtual time) and checks that the summary still names the culprit, and that
# the log names the culprit's function in the program at its whole path: the symbolizer keeps
# module paths whole.
# cmake -P with PROGRAM (loopcanary-sim) and WORK_DIR (recreated here); EMULATOR (optional): what
# runs a cross build's programs, "|" between its arguments (tests/CMakeLists.txt,
# LOOPCANARY_TEST_EMULATOR).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")

file(REMOVE_RECURSE ${WORK_DIR})
string(REPEAT "a" 200 first)
string(REPEAT "b" 100 second)
set(directory ${WORK_DIR}/${first}/${second})
file(MAKE_DIRECTORY ${directory})
file(COPY ${PROGRAM} DESTINATION ${directory})
get_filename_component(name ${PROGRAM} NAME)
execute_process(COMMAND ${EMULATOR} ${directory}/${name} --time virtual --scenario seed --log-dir ${WORK_DIR}/logs
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code TIMEOUT 300)
if(NOT code STREQUAL "0" OR NOT out MATCHES "\n  schedule_update +1 +810\\.0 +running +no +a \\([0-9]+/[0-9]+\\) ")
  message(FATAL_ERROR "exit status ${code}; expected the culprit a\n--- stdout ---\n${out}--- stderr ---\n${err}")
endif()
file(GLOB logs ${WORK_DIR}/logs/*.jsonl)
set(log "")
foreach(file IN LISTS logs)
  file(READ ${file} text)
  string(APPEND log "${text}")
endforeach()
if(NOT log MATCHES "\"module\":\"${directory}/${name}\"" OR NOT log MATCHES "\"function\":\"thermostat::a\\(")
  message(FATAL_ERROR "the log does not name thermostat::a in ${directory}/${name}:\n${log}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
