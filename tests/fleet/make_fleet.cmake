# SPDX-License-Identifier: MIT
# The fleet the fleet tests read (docs/fleet.md): three firmware versions, each a demo run in
# virtual time with its own scenarios and threshold (so one culprit, ota.crc32, leads by blocks
# and by samples, and groups hold several durations), rolled out over DEVICES units and DAYS
# days by loopcanary_tool_corpus --fleet.
#   cmake -DSIM=loopcanary-sim -DCORPUS=loopcanary_tool_corpus -DDIR=<work> -DDEVICES=N -DDAYS=D -P make_fleet.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR}/seeds)
set(versions "")
foreach(spec "thermostat-2.3.0|cpu,flash,seed,hang|100" "thermostat-2.3.1|cpu,flash|120" "thermostat-2.4.0|cpu|150")
  string(REPLACE "|" ";" spec "${spec}")
  list(GET spec 0 version)
  list(GET spec 1 scenarios)
  list(GET spec 2 threshold)
  execute_process(COMMAND ${SIM} --time virtual --scenario ${scenarios} --threshold-ms ${threshold}
      --log-dir ${DIR}/seeds/${version}
    RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE error)
  file(GLOB seed ${DIR}/seeds/${version}/*.jsonl)
  if(NOT status EQUAL 0 OR NOT seed)
    message(FATAL_ERROR "loopcanary-sim for ${version} failed (${status}): ${error}")
  endif()
  list(APPEND versions "${version}=${seed}")
endforeach()
execute_process(COMMAND ${CORPUS} --fleet ${DIR}/logs ${DEVICES} ${DAYS} ${versions} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "loopcanary_tool_corpus --fleet failed (${status})")
endif()
file(GLOB logs ${DIR}/logs/*.jsonl)
list(LENGTH logs count)
message(STATUS "fleet: ${count} log files in ${DIR}/logs")
