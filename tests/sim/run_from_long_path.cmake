# SPDX-License-Identifier: MIT
# Runs a copy of loopcanary-sim from a directory whose path is longer than 255 bytes (the
# seed scenario, virtual time) and checks that the summary still names the culprit function:
# the symbolizer and the culprit finder keep module paths whole.
# cmake -P with PROGRAM (loopcanary-sim) and WORK_DIR (recreated here).
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE ${WORK_DIR})
string(REPEAT "a" 200 first)
string(REPEAT "b" 100 second)
set(directory ${WORK_DIR}/${first}/${second})
file(MAKE_DIRECTORY ${directory})
file(COPY ${PROGRAM} DESTINATION ${directory})
get_filename_component(name ${PROGRAM} NAME)
execute_process(COMMAND ${directory}/${name} --time virtual --scenario seed
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code TIMEOUT 300)
if(NOT code STREQUAL "0" OR NOT out MATCHES "\n  schedule_update +1 +810\\.0 +running +no +a \\([0-9]+/[0-9]+\\) +thermostat::a ")
  message(FATAL_ERROR "exit status ${code}; expected the culprit thermostat::a\n--- stdout ---\n${out}--- stderr ---\n${err}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
