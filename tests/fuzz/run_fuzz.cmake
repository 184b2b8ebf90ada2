# SPDX-License-Identifier: MIT
# Runs one fuzz target as a CTest test (tests/fuzz/CMakeLists.txt):
#   cmake -DFUZZER=<exe> -DSEEDS=<dir;...> -DCORPUS=<dir> -DCRASHES=<dir> -DSECONDS=<n> -P run_fuzz.cmake
# CORPUS is emptied and filled with a copy of the SEEDS directories' files, then the target runs
# on it for SECONDS (the corpus grows there; the seeds stay as they are). An input that crashes
# the target, or that runs over 25 s, is saved in CRASHES and fails the test.
foreach(var FUZZER SEEDS CORPUS CRASHES SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzz.cmake: ${var} not set")
  endif()
endforeach()
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS} ${CRASHES})
foreach(dir IN LISTS SEEDS)
  if(NOT IS_DIRECTORY ${dir})
    message(FATAL_ERROR "run_fuzz.cmake: no seed directory ${dir}")
  endif()
  file(COPY ${dir}/ DESTINATION ${CORPUS})
endforeach()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix=${CRASHES}/ ${CORPUS}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${result}); the input is in ${CRASHES}")
endif()
