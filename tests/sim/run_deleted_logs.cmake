# SPDX-License-Identifier: MIT
# Runs loopcanary-sim in real time with --log-dir WORK_DIR/logs and deletes that directory (as a
# tmp cleaner would) as soon as the first record is in it; the run goes on for seconds after
# that. Checks that the run ends with status 1 and a message saying how many records are not
# in the directory, and that the sink recreated the directory for the records after it.
# cmake -P with PROGRAM (loopcanary-sim) and WORK_DIR (recreated here). The same script is the
# deleter when DELETE_WHEN_WRITTEN names the file to wait for. EMULATOR (optional): what runs a
# cross build's programs, "|" between its arguments (tests/CMakeLists.txt, LOOPCANARY_TEST_EMULATOR).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")

if(DEFINED DELETE_WHEN_WRITTEN)
  # Waits (up to 120 s) for the first record in the file, then removes its directory.
  foreach(attempt RANGE 6000)
    if(EXISTS ${DELETE_WHEN_WRITTEN})
      file(SIZE ${DELETE_WHEN_WRITTEN} size)
      if(size GREATER 0)
        get_filename_component(directory ${DELETE_WHEN_WRITTEN} DIRECTORY)
        file(REMOVE_RECURSE ${directory})
        return()
      endif()
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 0.02)
  endforeach()
  message(FATAL_ERROR "no record appeared in ${DELETE_WHEN_WRITTEN}")
endif()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(logs ${WORK_DIR}/logs)
set(jsonl ${logs}/loopcanary-thermostat-2.3.1.jsonl)
# A pipeline runs both at once; the deleter's (empty) output is the program's input.
execute_process(
  COMMAND ${CMAKE_COMMAND} -DDELETE_WHEN_WRITTEN=${jsonl} -P ${CMAKE_CURRENT_LIST_FILE}
  COMMAND ${EMULATOR} ${PROGRAM} --time real --log-dir ${logs}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULTS_VARIABLE codes TIMEOUT 300)
list(GET codes 0 deleter)
list(GET codes 1 code)
set(failures "")
if(NOT deleter STREQUAL "0")
  string(APPEND failures "the deleter failed (${deleter})\n")
endif()
if(NOT code STREQUAL "1")
  string(APPEND failures "exit status ${code}, expected 1\n")
endif()
if(NOT err MATCHES "\nloopcanary-sim: [1-9][0-9]* of [1-9][0-9]* records are not in --log-dir \\([1-9][0-9]* written into a file that was deleted\\); last error: check '[^']*/logs': directory deleted, ")
  string(APPEND failures "stderr does not say how many records are not in --log-dir\n")
endif()
if(NOT out MATCHES "blocks [4-9][0-9]*, hangs 1")  # a loaded machine may starve a dispatch past the threshold
  string(APPEND failures "stdout: the run did not complete\n")
endif()
if(EXISTS ${jsonl})
  file(READ ${jsonl} recreated)
  if(NOT recreated MATCHES "\"phase\":\"final\",[^\n]*\"event\":\"cloud_sync\"")
    string(APPEND failures "the recreated ${jsonl} does not hold the last block's final record\n")
  endif()
else()
  string(APPEND failures "the sink did not recreate ${jsonl}\n")
endif()
if(failures)
  message(FATAL_ERROR "${failures}--- stdout ---\n${out}--- stderr ---\n${err}")
endif()
