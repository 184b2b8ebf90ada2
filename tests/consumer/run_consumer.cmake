# SPDX-License-Identifier: MIT
# Configures, builds and runs a CMake project outside the source tree, as a user would
# (cmake -P). Variables:
#   SOURCE        the project's folder
#   BINARY        its build folder (emptied first)
#   GENERATOR     CMake generator
#   ARGS          configure arguments, separated by '|'
#   RUN           optional: the program to run after the build, relative to BINARY; its exit
#                 status decides
#   EMULATOR      optional: command that runs RUN, separated by '|' (QEMU for firmware)
#   EXPECT_ERROR  optional: the configure step must fail with output matching this regex
#                 (nothing is built)
#   CTEST         optional: run the project's own tests (ctest) after the build; they decide
cmake_minimum_required(VERSION 3.25)

foreach(var SOURCE BINARY GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_consumer.cmake: ${var} is not set")
  endif()
endforeach()
string(REPLACE "|" ";" ARGS "${ARGS}")
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")

file(REMOVE_RECURSE ${BINARY})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR} ${ARGS}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(DEFINED EXPECT_ERROR)
  if(status EQUAL 0)
    message(FATAL_ERROR "configure of ${SOURCE} succeeded; expected it to fail matching '${EXPECT_ERROR}':\n${out}")
  endif()
  if(NOT out MATCHES "${EXPECT_ERROR}")
    message(FATAL_ERROR "configure of ${SOURCE} failed without '${EXPECT_ERROR}':\n${out}")
  endif()
  message(STATUS "configure refused, as expected:\n${out}")
  return()
endif()
if(NOT status EQUAL 0)
  message(FATAL_ERROR "configure of ${SOURCE} failed (${status}):\n${out}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "build of ${SOURCE} failed (${status}):\n${out}")
endif()

if(DEFINED RUN)
  execute_process(COMMAND ${EMULATOR} ${BINARY}/${RUN} WORKING_DIRECTORY ${BINARY}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "${RUN}:\n${out}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${RUN} exited with ${status}")
  endif()
endif()

if(CTEST)
  execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${BINARY} --output-on-failure
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "ctest in ${BINARY}:\n${out}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "the tests of ${SOURCE} failed (${status})")
  endif()
endif()
