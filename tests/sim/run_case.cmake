# SPDX-License-Identifier: MIT
# Runs loopcanary-sim once (or twice) and checks what it did. cmake -P with:
#   PROGRAM   the loopcanary-sim executable
#   CASE      a case file (written by tests/sim/CMakeLists.txt) setting:
#     ARGS              command-line arguments; @WORK_DIR@ stands for WORK_DIR
#     EXIT_CODE         the expected exit status
#     STDOUT, STDERR    regular expressions the output must match, each of them
#     STDOUT_NOT        regular expressions stdout must not match
#     STDERR_ONE_LINE   TRUE: stderr is exactly one line
#     FILE_GLOB         files (relative to WORK_DIR) whose concatenated contents must match
#     FILE_MATCHES      ... each of these regular expressions
#     SAME_TWICE        TRUE: run a second time; stdout and stderr must be identical
#   WORK_DIR  an empty directory for the case (recreated here)
cmake_minimum_required(VERSION 3.25)

include(${CASE})
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
list(TRANSFORM ARGS REPLACE "@WORK_DIR@" "${WORK_DIR}")

function(run_program out_var err_var code_var)
  execute_process(COMMAND ${PROGRAM} ${ARGS}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code TIMEOUT 300)
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
  set(${code_var} "${code}" PARENT_SCOPE)
endfunction()

run_program(out err code)
set(failures "")
if(NOT "${code}" STREQUAL "${EXIT_CODE}")
  string(APPEND failures "exit status ${code}, expected ${EXIT_CODE}\n")
endif()
foreach(regex IN LISTS STDOUT)
  if(NOT out MATCHES "${regex}")
    string(APPEND failures "stdout does not match: ${regex}\n")
  endif()
endforeach()
foreach(regex IN LISTS STDOUT_NOT)
  if(out MATCHES "${regex}")
    string(APPEND failures "stdout matches what it must not: ${regex}\n")
  endif()
endforeach()
foreach(regex IN LISTS STDERR)
  if(NOT err MATCHES "${regex}")
    string(APPEND failures "stderr does not match: ${regex}\n")
  endif()
endforeach()
if(STDERR_ONE_LINE AND NOT err MATCHES "^[^\n]+\n$")
  string(APPEND failures "stderr is not exactly one line\n")
endif()
if(FILE_GLOB)
  file(GLOB files ${WORK_DIR}/${FILE_GLOB})
  set(contents "")
  foreach(f IN LISTS files)
    file(READ ${f} text)
    string(APPEND contents "${text}")
  endforeach()
  if(NOT files)
    string(APPEND failures "no file matches ${FILE_GLOB}\n")
  endif()
  foreach(regex IN LISTS FILE_MATCHES)
    if(NOT contents MATCHES "${regex}")
      string(APPEND failures "${FILE_GLOB} does not match: ${regex}\n")
    endif()
  endforeach()
endif()
if(SAME_TWICE)
  run_program(out2 err2 code2)
  if(NOT out2 STREQUAL out)
    file(WRITE ${WORK_DIR}/first.stdout "${out}")
    file(WRITE ${WORK_DIR}/second.stdout "${out2}")
    string(APPEND failures "stdout differs between two runs: diff ${WORK_DIR}/first.stdout ${WORK_DIR}/second.stdout\n")
  endif()
  if(NOT err2 STREQUAL err)
    file(WRITE ${WORK_DIR}/first.stderr "${err}")
    file(WRITE ${WORK_DIR}/second.stderr "${err2}")
    string(APPEND failures "stderr differs between two runs: diff ${WORK_DIR}/first.stderr ${WORK_DIR}/second.stderr\n")
  endif()
endif()

if(failures)
  list(JOIN ARGS " " command)
  message(FATAL_ERROR "${PROGRAM} ${command}\n${failures}--- stdout ---\n${out}--- stderr ---\n${err}")
endif()
