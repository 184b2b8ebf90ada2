# SPDX-License-Identifier: MIT
# Runs loopcanary-sim once (or twice), or reads what another case's run wrote, and checks what it
# did. cmake -P with:
#   PROGRAM   the loopcanary-sim executable
#   CASE      a case file (written by tests/sim/CMakeLists.txt) setting:
#     FROM              instead of running the program: the WORK_DIR of another case, whose run
#                       left its stdout, stderr and exit status there (run.stdout, run.stderr,
#                       run.status: every case leaves them)
#     PREMISE           a premise of tests/linux/emulation.hpp the case needs: where PROBE says
#                       it does not hold (under user-mode emulation), nothing is run or checked
#                       and the script prints "premise <PREMISE> does not hold (...)" with what
#                       the probe saw (the test's SKIP_REGULAR_EXPRESSION: CTest reports it
#                       skipped)
#     ARGS              command-line arguments; @WORK_DIR@ stands for WORK_DIR
#     EXIT_CODE         the expected exit status
#     STDOUT, STDERR    regular expressions the output must match, each of them
#     STDOUT_NOT        regular expressions stdout must not match
#     STDERR_ONE_LINE   TRUE: stderr is exactly one line
#     FILE_GLOB         files (relative to WORK_DIR) whose concatenated contents must match
#     FILE_MATCHES      ... each of these regular expressions
#     SAME_TWICE        TRUE: run a second time; stdout and stderr must be identical
#     RATE_REGEX        a regular expression whose first group is a count in stdout; with
#     RATE_ARGS         the arguments of a reference run: the count per second of run (the
#                       summary's "ran S s") must be the same in both runs, within 1 %
#   PROBE     loopcanary_emulation_probe (tests/linux/emulation_probe.cpp), for PREMISE
#   WORK_DIR  an empty directory for the case (recreated here)
#   EMULATOR  optional: what runs a cross build's programs, "|" between its arguments
#             (tests/CMakeLists.txt, LOOPCANARY_TEST_EMULATOR); empty in a native build
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")
include(${CMAKE_CURRENT_LIST_DIR}/../check_output.cmake)

include(${CASE})
if(PREMISE)
  execute_process(COMMAND ${EMULATOR} ${PROBE} ${PREMISE} OUTPUT_VARIABLE why RESULT_VARIABLE probe_code TIMEOUT 60)
  string(STRIP "${why}" why)
  if(probe_code STREQUAL "1")
    message("premise ${PREMISE} does not hold (user-mode emulation breaks it; docs/porting-linux.md, "
      "'Under emulation'): ${why}")
    return()
  elseif(NOT probe_code STREQUAL "0")
    message(FATAL_ERROR "the probe of premise ${PREMISE} failed (${probe_code}): ${why}")
  endif()
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
list(TRANSFORM ARGS REPLACE "@WORK_DIR@" "${WORK_DIR}")
set(CASE_ARGS ${ARGS})

function(run_program out_var err_var code_var)
  execute_process(COMMAND ${EMULATOR} ${PROGRAM} ${ARGS}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code TIMEOUT 300)
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
  set(${code_var} "${code}" PARENT_SCOPE)
endfunction()

if(FROM)
  foreach(part stdout stderr status)
    if(NOT EXISTS ${FROM}/run.${part})
      message(FATAL_ERROR "${FROM}/run.${part} is missing: its case did not run")
    endif()
  endforeach()
  file(READ ${FROM}/run.stdout out)
  file(READ ${FROM}/run.stderr err)
  file(READ ${FROM}/run.status code)
else()
  run_program(out err code)
  file(WRITE ${WORK_DIR}/run.stdout "${out}")
  file(WRITE ${WORK_DIR}/run.stderr "${err}")
  file(WRITE ${WORK_DIR}/run.status "${code}")
endif()
set(failures "")
check_output("${out}" "${err}" "${code}" failures)
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

# The count of RATE_REGEX in `text` and the run's length in ms ("ran S s"), into out_count
# and out_ms; empty when either is missing.
function(count_and_length text out_count out_ms)
  set(count "")
  set(length "")
  if(text MATCHES "${RATE_REGEX}")
    set(count "${CMAKE_MATCH_1}")
  endif()
  if(text MATCHES "ran ([0-9]+)\\.([0-9][0-9][0-9]) s")
    math(EXPR length "${CMAKE_MATCH_1} * 1000 + ${CMAKE_MATCH_2}")
  endif()
  set(${out_count} "${count}" PARENT_SCOPE)
  set(${out_ms} "${length}" PARENT_SCOPE)
endfunction()
if(RATE_REGEX)
  count_and_length("${out}" count length_ms)
  set(ARGS ${RATE_ARGS})
  list(TRANSFORM ARGS REPLACE "@WORK_DIR@" "${WORK_DIR}")
  run_program(ref_out ref_err ref_code)
  count_and_length("${ref_out}" ref_count ref_length_ms)
  if(NOT "${ref_code}" STREQUAL "0")
    string(APPEND failures "the reference run exited with ${ref_code}\n")
  endif()
  if(count STREQUAL "" OR length_ms STREQUAL "" OR ref_count STREQUAL "" OR ref_length_ms STREQUAL "")
    string(APPEND failures "RATE_REGEX or \"ran S s\" missing: count '${count}' in ${length_ms} ms, reference '${ref_count}' in ${ref_length_ms} ms\n--- reference stdout ---\n${ref_out}")
  elseif(ref_count EQUAL 0)
    string(APPEND failures "the reference run counted 0\n")
  else()
    # count / length == ref_count / ref_length within 1 %, in integers (64-bit in CMake).
    math(EXPR lhs "${count} * ${ref_length_ms}")
    math(EXPR rhs "${ref_count} * ${length_ms}")
    math(EXPR diff "${lhs} - ${rhs}")
    if(diff LESS 0)
      math(EXPR diff "0 - ${diff}")
    endif()
    math(EXPR diff_x100 "${diff} * 100")
    if(diff_x100 GREATER rhs)
      string(APPEND failures "rate differs by more than 1 %: ${count} in ${length_ms} ms, reference ${ref_count} in ${ref_length_ms} ms\n")
    endif()
  endif()
  list(JOIN RATE_ARGS " " reference)
  message(STATUS "rate: ${count} in ${length_ms} ms; reference (${reference}): ${ref_count} in ${ref_length_ms} ms")
  set(ARGS ${CASE_ARGS})
endif()

if(failures)
  list(JOIN ARGS " " command)
  message(FATAL_ERROR "${PROGRAM} ${command}\n${failures}--- stdout ---\n${out}--- stderr ---\n${err}")
endif()
