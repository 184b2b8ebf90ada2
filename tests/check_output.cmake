# SPDX-License-Identifier: MIT
# The output checks shared by the scripts that run a program as a test (tests/sim/run_case.cmake,
# tests/tool/run_tool_case.cmake), on the case variables they both read:
#   EXIT_CODE        the expected exit status
#   STDOUT           regexes stdout must match
#   STDOUT_NOT       regexes stdout must not match
#   STDERR           regexes stderr must match
#   STDERR_ONE_LINE  stderr must be exactly one line
# check_output(<out> <err> <code> <failures-var>) appends one line per failed check to the
# variable named <failures-var>.
function(check_output out err code failures_var)
  set(failures "${${failures_var}}")
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
  set(${failures_var} "${failures}" PARENT_SCOPE)
endfunction()
