# SPDX-License-Identifier: MIT
# Footprint of core + port: the sizes (arm-none-eabi-size, Berkeley format) of the same minimal
# firmware without loopcanary (BASE), with it as a device sends its records, as binary packets
# with a crash box (NOFORMAT: core, port, packet encoder, crash box), and with the report
# formatter too (FULL; optional: a port without a text drain has no such firmware), and the
# differences. The differences include the libgcc helpers the
# library pulls in (64-bit division) and its few lines in the firmware's main(); .bss includes
# the firmware's own Monitor and StaticWatchdog<1, 4> objects.
#
# With NM given, also the flash (.text + .rodata) of the full firmware by owner, from the
# symbol sizes: core (loopcanary::), port (loopcanary::cortex_m:: and the SysTick entry, or
# loopcanary::riscv:: and the machine timer entry), the
# runtime helpers the library pulls in (libgcc's 64-bit division, ...), the rest. Symbols do
# not see code inlined into another owner's function (the hot path in main, or everything
# under LTO).
#
# With OBJDUMP, ADDR2LINE and SOURCE_DIR given, also the code of NOFORMAT by source: every
# instruction (and literal-pool word) of .text goes to the innermost frame of its inline chain
# (DWARF, addr2line -i) that is in SOURCE_DIR: core/ is core, port/ (but not the board) is
# port, and of core the encoder (packet.cpp, packet.hpp, evidence.cpp, evidence.hpp) and the
# crash box (crash_box.cpp, crash_box.hpp, evidence_ring.cpp) are counted apart, and of core the
# watchdog's (any frame of the chain in watchdog.cpp) apart from the loop's side. Code the
# compiler inlined anywhere counts for the source it came from, so this holds for an LTO build
# too. The library's read-only data objects in flash (objdump -t: objects in .text named
# loopcanary::, the board's aside) have no line information and are added to the figure by
# symbol size.
#
# With EVIDENCE (the same minimal firmware as a device sends its evidence: a
# StaticEvidenceWatchdog, its evidence ring as the crash box), the code of that firmware by
# source too: core + port + encoder + crash box of EVIDENCE is the figure the 4 KiB target is
# held against (the line "flash by source, core + port + encoder + crash box: N B"); without
# EVIDENCE, that of NOFORMAT.
#
# With MAX_CODE, fails when that figure exceeds MAX_CODE bytes; with MAX_CORE_PORT, when
# core + port alone does.
#
#   cmake -DSIZE=arm-none-eabi-size [-DNM=arm-none-eabi-nm] [-DOBJDUMP=... -DADDR2LINE=...
#         -DSOURCE_DIR=repo [-DMAX_CODE=bytes] [-DMAX_CORE_PORT=bytes] [-DEVIDENCE=d.elf]]
#         -DLABEL=text -DBASE=a.elf -DNOFORMAT=b.elf [-DFULL=c.elf] -P footprint.cmake

cmake_minimum_required(VERSION 3.25)
foreach(variable SIZE BASE NOFORMAT)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "footprint.cmake: -D${variable}=... is required")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/elf_sizes.cmake)

sizes_of(${BASE} base)
sizes_of(${NOFORMAT} noformat)
foreach(section text data bss)
  math(EXPR core_${section} "${noformat_${section}} - ${base_${section}}")
endforeach()
set(format_lines "")
if(FULL)
  sizes_of(${FULL} full)
  foreach(section text data bss)
    math(EXPR format_${section} "${full_${section}} - ${noformat_${section}}")
    math(EXPR all_${section} "${full_${section}} - ${base_${section}}")
  endforeach()
  string(CONCAT format_lines "\n+ report formatter (format_json)    ${format_text}\t${format_data}\t${format_bss}\n"
    "= all of it                         ${all_text}\t${all_data}\t${all_bss}")
endif()
message("${LABEL}\nfootprint (bytes)                      .text   .data    .bss\n"
        "firmware without loopcanary         ${base_text}\t${base_data}\t${base_bss}\n"
        "+ core + port + packets, crash box  ${core_text}\t${core_data}\t${core_bss}${format_lines}")

# Code of `file` by source (see the top of this file), under `title`; with `held`, the line of the
# device figure and its budgets.
function(code_by_source file title held)
  execute_process(COMMAND ${OBJDUMP} -d --no-show-raw-insn -j .text ${file} OUTPUT_VARIABLE listing
    RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} ${file} failed")
  endif()
  # Instruction and literal-pool lines: "  address:<tab>...". A step of more than 4 bytes to the
  # next line is data objects in .text (the vector table, constant tables): not code.
  string(REGEX MATCHALL "\n *[0-9a-f]+:\t" heads "${listing}")
  set(addresses "")
  set(sizes "")
  set(previous "")
  foreach(head IN LISTS heads)
    string(REGEX MATCH "[0-9a-f]+" hex "${head}")
    math(EXPR address "0x${hex}")
    if(NOT previous STREQUAL "")
      math(EXPR step "${address} - ${previous}")
      if(step GREATER 0 AND step LESS_EQUAL 4)
        list(APPEND addresses "0x${previous_hex}")
        list(APPEND sizes ${step})
      endif()
    endif()
    set(previous ${address})
    set(previous_hex ${hex})
  endforeach()
  string(REPLACE ";" "\n" input "${addresses}")
  # One file per firmware path: figures.footprint and figures.footprint_lto run in the same
  # directory, in parallel, on firmware of the same names.
  get_filename_component(name ${file} NAME)
  string(MD5 path_hash "${file}")
  set(address_file ${CMAKE_CURRENT_BINARY_DIR}/${name}.${path_hash}.addresses)
  file(WRITE ${address_file} "${input}\n")
  execute_process(COMMAND ${ADDR2LINE} -i -a -e ${file} INPUT_FILE ${address_file}
    OUTPUT_VARIABLE chains RESULT_VARIABLE code)
  file(REMOVE ${address_file})
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${ADDR2LINE} ${file} failed")
  endif()
  # One entry per address: "0x...\n<innermost file:line>\n<its caller>...".
  string(REGEX REPLACE "\n(0x[0-9a-f]+\n)" ";\\1" chains "${chains}")
  list(LENGTH sizes expected)
  list(LENGTH chains got)
  if(NOT got EQUAL expected)
    message(FATAL_ERROR "${ADDR2LINE}: ${got} answers for ${expected} addresses")
  endif()
  foreach(owner core port encoder crash_box firmware other watchdog)
    set(${owner} 0)
  endforeach()
  set(index 0)
  foreach(chain IN LISTS chains)
    list(GET sizes ${index} bytes)
    math(EXPR index "${index} + 1")
    set(owner other)
    if(chain MATCHES "\n${SOURCE_DIR}/([^\n:]*):")
      set(path ${CMAKE_MATCH_1})
      if(path MATCHES "^core/(src|include/loopcanary)/(packet|evidence)\\.")
        set(owner encoder)
      elseif(path MATCHES "^core/(src|include/loopcanary)/(crash_box\\.|evidence_ring\\.)")
        set(owner crash_box)
      elseif(path MATCHES "^core/")
        set(owner core)
        if(chain MATCHES "\n${SOURCE_DIR}/core/src/watchdog\\.cpp:")  # the watchdog's, inlined code too
          math(EXPR watchdog "${watchdog} + ${bytes}")
        endif()
      elseif(path MATCHES "^port/" AND NOT path MATCHES "/boards/")
        set(owner port)
      else()
        set(owner firmware)
      endif()
    endif()
    math(EXPR ${owner} "${${owner}} + ${bytes}")
  endforeach()
  # The library's read-only data objects in flash (constant tables, the evidence sink's function
  # table), by symbol (objdump -t: flag O, section .text): the instruction pass above cannot
  # attribute them (no line information).
  execute_process(COMMAND ${OBJDUMP} -t -C ${file} OUTPUT_VARIABLE symbols RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} -t ${file} failed")
  endif()
  set(constants 0)
  string(REGEX MATCHALL "\n[0-9a-f]+ [^\n]* O \\.text\t[0-9a-f]+ loopcanary::[^\n]*" objects "${symbols}")
  foreach(object IN LISTS objects)
    if(object MATCHES "loopcanary::(board|device_)")  # the board's and the firmware's
      continue()
    endif()
    if(object MATCHES "\t([0-9a-f]+) loopcanary::")
      math(EXPR constants "${constants} + 0x${CMAKE_MATCH_1}")
    endif()
  endforeach()
  math(EXPR both "${core} + ${port}")
  math(EXPR device "${both} + ${encoder} + ${crash_box} + ${constants}")
  math(EXPR loop_side "${core} - ${watchdog}")
  message("code by source (DWARF inline chains), ${title}: core ${core} + port ${port} = ${both}, "
          "+ encoder ${encoder} + crash box ${crash_box} + read-only data ${constants} = ${device}\n"
          "  (of core: the watchdog's ${watchdog}, the loop's side ${loop_side})\n"
          "  (firmware and board ${firmware}, runtime and unattributed ${other})")
  if(NOT held)
    return()
  endif()
  message("flash by source, core + port + encoder + crash box: ${device} B")
  if(MAX_CODE AND device GREATER MAX_CODE)
    message(FATAL_ERROR "core + port + encoder + crash box code ${device} B exceeds the budget of ${MAX_CODE} B")
  endif()
  if(MAX_CORE_PORT AND both GREATER MAX_CORE_PORT)
    message(FATAL_ERROR "core + port code ${both} B exceeds the budget of ${MAX_CORE_PORT} B")
  endif()
endfunction()
if(OBJDUMP AND ADDR2LINE AND SOURCE_DIR)
  if(EVIDENCE)
    code_by_source(${NOFORMAT} "records as packets (StaticWatchdog, record encoder, crash box of records)" OFF)
    code_by_source(${EVIDENCE} "evidence as packets (StaticEvidenceWatchdog, evidence ring)" ON)
  else()
    code_by_source(${NOFORMAT} "no formatter" ON)
  endif()
endif()

if(NOT NM)
  return()
endif()
# Symbols of one firmware by owner: "<address> <size> <type> <demangled name>".
function(owners_of file label)
  execute_process(COMMAND ${NM} -S -C --size-sort ${file} OUTPUT_VARIABLE out RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${NM} ${file} failed")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  foreach(owner core port runtime other)
    set(${owner}_flash 0)
    set(${owner}_ram 0)
    set(${owner}_top "")
  endforeach()
  set(seen "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^([0-9a-f]+) ([0-9a-f]+) ([A-Za-z]) (.*)$")
      continue()
    endif()
    set(address ${CMAKE_MATCH_1})
    set(type ${CMAKE_MATCH_3})
    set(name "${CMAKE_MATCH_4}")
    math(EXPR bytes "0x${CMAKE_MATCH_2}")
    if(address IN_LIST seen)  # aliases (complete and base constructors): count once
      continue()
    endif()
    list(APPEND seen ${address})
    if(name MATCHES "^loopcanary::(cortex_m|riscv)::|^loopcanary_(cortex_m|riscv)_|^SysTick_Handler")
      set(owner port)
    elseif(name MATCHES "^loopcanary::(board|device_)" OR name MATCHES "^loopcanary_board")
      set(owner other)
    elseif(name MATCHES "^loopcanary::")
      set(owner core)
    elseif(name MATCHES "^__|^mem|^str")
      set(owner runtime)
    else()
      set(owner other)
    endif()
    if(type MATCHES "^[tTwWrR]$")
      math(EXPR ${owner}_flash "${${owner}_flash} + ${bytes}")
      if(bytes GREATER_EQUAL 120 AND NOT owner STREQUAL "other")
        string(APPEND ${owner}_top "    ${bytes}\t${name}\n")
      endif()
    elseif(type MATCHES "^[dDbB]$")
      math(EXPR ${owner}_ram "${${owner}_ram} + ${bytes}")
    endif()
  endforeach()
  message("${label}: flash (.text + .rodata) and RAM (.data + .bss) by owner, from symbol sizes\n"
          "(memcpy and memset are shared with the startup code)\n"
          "  core (loopcanary::)        ${core_flash}\t${core_ram}\n${core_top}"
          "  port (and its timer entry) ${port_flash}\t${port_ram}\n${port_top}"
          "  runtime (libgcc, libc)     ${runtime_flash}\t${runtime_ram}\n${runtime_top}"
          "  firmware and board         ${other_flash}\t${other_ram}")
endfunction()
owners_of(${NOFORMAT} "core + port + encoder + crash box, without the formatter")
if(FULL)
  owners_of(${FULL} "core + port + formatter")
endif()
