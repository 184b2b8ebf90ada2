# SPDX-License-Identifier: MIT
# Runs a device-test firmware under QEMU, requires exit code 0, and checks on the host the binary
# capture it wrote: decoded and symbolised by the host tool, as a user would read it.
#
#   cmake -DEMULATOR="qemu-system-arm|-M|mps2-an385|...|-kernel" -DFIRMWARE=block_test.elf
#         -DCAPTURE=/abs/dir/device.block.lcb [-DPACKETS=2]
#         [-DTOOL=loopcanary [-DEVENT=slow_handler -DPHASE=final -DCAUSE=running
#          -DFUNCTION=busy_compute -DMIN_PERCENT=80 [-DRESET_CAUSE=software]]
#          [-DRECORDS=n] [-DWARNINGS=n]] -P check_firmware.cmake
#
# EMULATOR is the command line with "|" between arguments (CTest would split a ";" list). QEMU
# runs in CAPTURE's directory: the firmware opens the capture by its file name (semihosting
# SYS_OPEN, relative to QEMU's working directory). A capture left by an earlier run is removed
# first. The firmware prints "lc-capture packets=<n> ..." after sending its records; with
# PACKETS, n must be PACKETS.
#
# With TOOL: `TOOL decode CAPTURE --elf FIRMWARE` must read every packet (n records, no byte
# skipped, no warning; an empty capture decodes to no record). With RECORDS (a capture of
# evidence packets, which the tool assembles into records: fewer records than packets), RECORDS
# records instead of n; with WARNINGS, that many warnings instead of none. With EVENT too: among the decoded
# records one of event EVENT in phase PHASE, with cause CAUSE and, with RESET_CAUSE, kept across a reset
# ("previous_boot":true) with that "reset_cause"; and of the kept samples of EVENT's records, at
# least MIN_PERCENT % must have an innermost PC that the tool's symbols (`symbols.frames`, from
# addr2line) place in FUNCTION.
#
# With CHAIN (function names root to leaf, "|" between them; with EVENT): in the PHASE record of
# EVENT, the samples of its stack table (every sample of the dispatch) whose symbolised stack
# (functions inlined into others are frames of their own) holds CHAIN as consecutive frames, read
# from the root, must be at least MIN_CHAIN_PERCENT %
# (default 95) of its samples taken. With CULPRIT: `TOOL report --event EVENT` of the decoded
# records names CULPRIT as the culprit of EVENT's block, of at least CULPRIT_PERCENT % (default
# 80) of its samples.

cmake_minimum_required(VERSION 3.25)

foreach(variable EMULATOR FIRMWARE CAPTURE)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "check_firmware.cmake: -D${variable}=... is required")
  endif()
endforeach()
if(DEFINED EVENT)
  foreach(variable TOOL PHASE CAUSE)
    if(NOT DEFINED ${variable})
      message(FATAL_ERROR "check_firmware.cmake: EVENT needs -D${variable}=...")
    endif()
  endforeach()
  if(NOT DEFINED FUNCTION AND NOT DEFINED CHAIN)
    message(FATAL_ERROR "check_firmware.cmake: EVENT needs -DFUNCTION=... or -DCHAIN=...")
  endif()
endif()
if(NOT DEFINED MIN_PERCENT)
  set(MIN_PERCENT 80)
endif()
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 60)
endif()

# The function addr2line names for each PC of `record` (symbols.frames), as function_of_<pc> in
# the caller's scope, and its logical frames, innermost first (the functions inlined at the PC,
# then the function), as the list frames_of_<pc>.
macro(map_functions record)
  string(JSON frame_count ERROR_VARIABLE no_symbols LENGTH "${record}" symbols frames)
  if(no_symbols)
    set(frame_count 0)
  endif()
  if(frame_count GREATER 0)
    math(EXPR last_frame "${frame_count} - 1")
    foreach(f RANGE ${last_frame})
      string(JSON pc GET "${record}" symbols frames ${f} pc)
      string(JSON function ERROR_VARIABLE no_function GET "${record}" symbols frames ${f} function)
      if(no_function)
        set(function "?")
      endif()
      set(function_of_${pc} "${function}")
      set(frames_of_${pc} "")
      string(JSON inlined_count ERROR_VARIABLE no_inlined LENGTH "${record}" symbols frames ${f} inlined)
      if(NOT no_inlined AND inlined_count GREATER 0)
        math(EXPR last_inlined "${inlined_count} - 1")
        foreach(k RANGE ${last_inlined})
          string(JSON inlined GET "${record}" symbols frames ${f} inlined ${k} function)
          list(APPEND frames_of_${pc} "${inlined}")
        endforeach()
      endif()
      list(APPEND frames_of_${pc} "${function}")
    endforeach()
  endif()
endmacro()

# True in `out` when `function` (as addr2line names it: maybe with parameters, a clone suffix)
# is `name`.
function(is_function function name out)
  set(${out} FALSE PARENT_SCOPE)
  if(function MATCHES "^(.*::)?${name}(\\(.*\\))?( \\[clone [.A-Za-z0-9_]+\\])*$")
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()

# CHAIN over the stack table of EVENT's PHASE record (see the header).
function(check_chain)
  if(NOT DEFINED MIN_CHAIN_PERCENT)
    set(MIN_CHAIN_PERCENT 95)
  endif()
  string(REPLACE "|" ";" chain "${CHAIN}")
  list(REVERSE chain)  # innermost first, as a stack's frames are
  list(LENGTH chain chain_length)
  foreach(record IN LISTS records)
    string(JSON event ERROR_VARIABLE no_event GET "${record}" event)
    string(JSON phase ERROR_VARIABLE no_phase GET "${record}" phase)
    if(no_event OR NOT event STREQUAL EVENT OR NOT phase STREQUAL PHASE)
      continue()
    endif()
    map_functions("${record}")
    string(JSON taken GET "${record}" samples taken)
    string(JSON unwind ERROR_VARIABLE no_unwind GET "${record}" unwind)
    string(JSON entries LENGTH "${record}" top)
    set(matching 0)
    set(table "")
    math(EXPR last_entry "${entries} - 1")
    foreach(e RANGE ${last_entry})
      string(JSON count GET "${record}" top ${e} count)
      string(JSON depth LENGTH "${record}" top ${e} pcs)
      set(functions "")
      if(depth GREATER 0)
        math(EXPR last_pc "${depth} - 1")
        foreach(i RANGE ${last_pc})
          string(JSON pc GET "${record}" top ${e} pcs ${i})
          if(DEFINED frames_of_${pc})
            list(APPEND functions ${frames_of_${pc}})  # a function inlined into another: a frame too
          else()
            list(APPEND functions "?")
          endif()
        endforeach()
      endif()
      # The chain's innermost function at some depth, the rest of the chain right after it.
      set(found FALSE)
      list(LENGTH functions frames)
      math(EXPR last_start "${frames} - ${chain_length}")
      if(last_start GREATER_EQUAL 0)
        foreach(start RANGE ${last_start})
          set(all TRUE)
          foreach(k RANGE 1 ${chain_length})
            math(EXPR at "${start} + ${k} - 1")
            math(EXPR ck "${k} - 1")
            list(GET functions ${at} function)
            list(GET chain ${ck} name)
            is_function("${function}" "${name}" same)
            if(NOT same)
              set(all FALSE)
              break()
            endif()
          endforeach()
          if(all)
            set(found TRUE)
            break()
          endif()
        endforeach()
      endif()
      if(found)
        math(EXPR matching "${matching} + ${count}")
      endif()
      string(REPLACE ";" " <- " shown "${functions}")
      string(APPEND table "  ${count} ${found}: ${shown}\n")
    endforeach()
    math(EXPR percent "100 * ${matching} / ${taken}")
    message("stack table of the ${PHASE} record of ${EVENT} (count, chain found, innermost first):\n${table}"
            "unwind: ${unwind}\n${matching} of ${taken} samples (${percent} %) hold the chain ${CHAIN}; "
            "required: ${MIN_CHAIN_PERCENT} %")
    math(EXPR scaled_matching "100 * ${matching}")
    math(EXPR scaled_required "${MIN_CHAIN_PERCENT} * ${taken}")
    if(taken EQUAL 0 OR scaled_matching LESS scaled_required)
      message(FATAL_ERROR "only ${percent} % of the samples of ${EVENT} hold the chain (required ${MIN_CHAIN_PERCENT} %)")
    endif()
    return()
  endforeach()
endfunction()

# CULPRIT: the culprit `TOOL report --event EVENT` names for EVENT's block (its group line), of
# at least CULPRIT_PERCENT % of its samples.
function(check_culprit)
  if(NOT DEFINED CULPRIT_PERCENT)
    set(CULPRIT_PERCENT 80)
  endif()
  set(decoded_file "${CAPTURE}.jsonl")
  file(WRITE "${decoded_file}" "${decoded}\n")
  execute_process(COMMAND ${TOOL} report "${decoded_file}" --event ${EVENT} OUTPUT_VARIABLE report
    RESULT_VARIABLE report_code)
  message("${TOOL} report:\n${report}")
  if(NOT report_code EQUAL 0 OR NOT report MATCHES "\n  ${CULPRIT}(\\([^)]*\\))? +1 +")
    message(FATAL_ERROR "${TOOL} report does not name ${CULPRIT} as the culprit of the block")
  endif()
  # Its share: the samples whose culprit it is, of all (those that never reach the user's code,
  # a library leaf with no caller known, have none).
  if(NOT report MATCHES "culprit share: ([0-9]+)/([0-9]+) samples")
    message(FATAL_ERROR "${TOOL} report prints no culprit share")
  endif()
  math(EXPR scaled_share "100 * ${CMAKE_MATCH_1}")
  math(EXPR scaled_required "${CULPRIT_PERCENT} * ${CMAKE_MATCH_2}")
  if(scaled_share LESS scaled_required)
    message(FATAL_ERROR "${CULPRIT} is the culprit of ${CMAKE_MATCH_1} of ${CMAKE_MATCH_2} samples only "
                        "(required ${CULPRIT_PERCENT} %)")
  endif()
endfunction()

get_filename_component(capture_dir "${CAPTURE}" DIRECTORY)
file(REMOVE "${CAPTURE}")
string(REPLACE "|" ";" emulator "${EMULATOR}")
execute_process(COMMAND ${emulator} ${FIRMWARE}
  WORKING_DIRECTORY "${capture_dir}"
  INPUT_FILE /dev/null
  OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE exit_code
  TIMEOUT ${TIMEOUT})
message("${output}")
if(errors)
  message("stderr:\n${errors}")
endif()
if(NOT exit_code EQUAL 0)
  message(FATAL_ERROR "firmware ${FIRMWARE} failed: exit code ${exit_code}")
endif()
if(NOT output MATCHES "lc-capture packets=([0-9]+)")
  message(FATAL_ERROR "no lc-capture line in the firmware output: it sent no capture")
endif()
set(sent ${CMAKE_MATCH_1})
if(DEFINED PACKETS AND NOT sent EQUAL PACKETS)
  message(FATAL_ERROR "the firmware sent ${sent} packets, not ${PACKETS}")
endif()
if(NOT EXISTS "${CAPTURE}")
  message(FATAL_ERROR "the firmware sent ${sent} packets, but there is no capture file ${CAPTURE}")
endif()
file(SIZE "${CAPTURE}" capture_bytes)
message("capture ${CAPTURE}: ${capture_bytes} bytes, ${sent} packets sent")
if(sent EQUAL 0 AND NOT capture_bytes EQUAL 0)
  message(FATAL_ERROR "the firmware sent no packet, but the capture holds ${capture_bytes} bytes")
endif()

if(NOT TOOL)
  return()
endif()

# ---- Decoded on the host -----------------------------------------------------------------------

execute_process(COMMAND ${TOOL} decode ${CAPTURE} --elf ${FIRMWARE}
  OUTPUT_VARIABLE decoded ERROR_VARIABLE summary RESULT_VARIABLE decode_code)
message("${TOOL} decode:\n${decoded}${summary}")
# Exit status 1 (nothing readable) is the answer for an empty capture (docs/tool.md), which the
# tool reads as an empty file: no "captures:" part in its summary.
if(NOT DEFINED RECORDS)
  set(RECORDS ${sent})
endif()
if(NOT DEFINED WARNINGS)
  set(WARNINGS 0)
endif()
set(expected_code 0)
if(RECORDS EQUAL 0)
  set(expected_code 1)
endif()
if(NOT decode_code EQUAL expected_code)
  message(FATAL_ERROR "${TOOL} decode: exit code ${decode_code}, not ${expected_code}")
endif()
if(NOT summary MATCHES
   "[0-9]+ records?( \\([0-9]+ health\\))?;( [0-9]+ captures?: ([0-9]+) packets? decoded, ([0-9]+) bytes? skipped;)? ([0-9]+) warnings?")
  message(FATAL_ERROR "no reading summary in the output of ${TOOL} decode")
endif()
set(decoded_packets 0)
set(skipped 0)
if(CMAKE_MATCH_2)
  set(decoded_packets ${CMAKE_MATCH_3})
  set(skipped ${CMAKE_MATCH_4})
endif()
set(warnings ${CMAKE_MATCH_5})
if(NOT decoded_packets EQUAL sent OR NOT skipped EQUAL 0 OR NOT warnings EQUAL WARNINGS)
  message(FATAL_ERROR "the firmware sent ${sent} packets; the host decoded ${decoded_packets}, skipped "
                      "${skipped} bytes, warned ${warnings} times (expected ${WARNINGS})")
endif()

# One JSON object per line (the core's format_json plus "symbols"); names and PCs hold no ';'.
string(REGEX REPLACE "\n$" "" decoded "${decoded}")
string(REPLACE "\n" ";" records "${decoded}")
list(LENGTH records record_count)
if(NOT record_count EQUAL RECORDS)
  message(FATAL_ERROR "${record_count} JSON records decoded, ${RECORDS} expected (${sent} packets sent)")
endif()
if(NOT DEFINED EVENT)
  return()
endif()

set(phase_found FALSE)
set(samples 0)
set(matching 0)
set(table "")
set(health_records 0)
foreach(record IN LISTS records)
  string(JSON kind ERROR_VARIABLE no_kind GET "${record}" kind)
  if(NOT no_kind AND kind STREQUAL "health")
    math(EXPR health_records "${health_records} + 1")
    continue()
  endif()
  string(JSON event GET "${record}" event)
  string(JSON phase GET "${record}" phase)
  if(NOT event STREQUAL EVENT)
    continue()
  endif()
  if(phase STREQUAL PHASE)
    set(phase_found TRUE)
    string(JSON cause GET "${record}" cause)
    if(NOT cause STREQUAL CAUSE)
      message(FATAL_ERROR "the decoded ${PHASE} record of ${EVENT} has cause ${cause}, not ${CAUSE}")
    endif()
    if(DEFINED RESET_CAUSE)
      string(JSON previous_boot ERROR_VARIABLE no_previous_boot GET "${record}" previous_boot)
      string(JSON reset_cause ERROR_VARIABLE no_reset_cause GET "${record}" reset_cause)
      if(no_previous_boot OR NOT previous_boot OR NOT reset_cause STREQUAL RESET_CAUSE)
        message(FATAL_ERROR "the decoded ${PHASE} record of ${EVENT} is not a previous_boot record "
                            "with reset cause ${RESET_CAUSE} (previous_boot: ${previous_boot}, "
                            "reset_cause: ${reset_cause})")
      endif()
    endif()
  endif()
  map_functions("${record}")  # the function of each symbolised PC
  # The innermost PC of each kept sample.
  string(JSON stack_count LENGTH "${record}" stacks)
  string(APPEND table "  ${event} ${phase}: ${stack_count} samples kept\n")
  if(stack_count EQUAL 0)
    continue()
  endif()
  math(EXPR last_stack "${stack_count} - 1")
  foreach(i RANGE ${last_stack})
    string(JSON pc_count LENGTH "${record}" stacks ${i} pcs)
    if(pc_count EQUAL 0)
      continue()  # a sample of scopes only: no PC to place
    endif()
    string(JSON pc GET "${record}" stacks ${i} pcs 0)
    set(function "?")
    if(DEFINED function_of_${pc})
      set(function "${function_of_${pc}}")
    endif()
    math(EXPR samples "${samples} + 1")
    # addr2line -C names "busy_compute" or "busy_compute(unsigned int)", maybe qualified, maybe
    # a compiler's clone of it ("... [clone .constprop.0]").
    is_function("${function}" "${FUNCTION}" same)
    if(same)
      math(EXPR matching "${matching} + 1")
    endif()
    string(APPEND table "    ${pc}  ${function}\n")
  endforeach()
endforeach()

if(NOT phase_found)
  message(FATAL_ERROR "no ${PHASE} record of ${EVENT} among the ${record_count} decoded records")
endif()
if(DEFINED CHAIN)
  check_chain()
endif()
if(DEFINED CULPRIT)
  check_culprit()
endif()
if(DEFINED MIN_HEALTH AND health_records LESS MIN_HEALTH)
  message(FATAL_ERROR "${health_records} health records decoded; at least ${MIN_HEALTH} expected")
endif()
if(samples EQUAL 0)
  message(FATAL_ERROR "the decoded records of ${EVENT} hold no PC samples")
endif()
if(NOT DEFINED FUNCTION)
  return()
endif()
math(EXPR percent "100 * ${matching} / ${samples}")
message("decoded samples of ${EVENT}, innermost PC and its function:\n${table}"
        "${matching} of ${samples} samples (${percent} %) in ${FUNCTION}; required: ${MIN_PERCENT} %")
math(EXPR scaled_matching "100 * ${matching}")
math(EXPR scaled_required "${MIN_PERCENT} * ${samples}")
if(scaled_matching LESS scaled_required)
  message(FATAL_ERROR "only ${percent} % of the decoded samples of ${EVENT} are in ${FUNCTION} "
                      "(required ${MIN_PERCENT} %)")
endif()
