# SPDX-License-Identifier: MIT
# Footprint of core + port: the sizes (arm-none-eabi-size, Berkeley format) of the same minimal
# firmware without loopcanary (BASE), with it but without the report formatter (NOFORMAT) and
# with everything (FULL), and the differences. The differences include the libgcc helpers the
# library pulls in (64-bit division) and its few lines in the firmware's main(); .bss includes
# the firmware's own Monitor and StaticWatchdog<1, 4> objects.
#
# With NM given, also the flash (.text + .rodata) of the full firmware by owner, from the
# symbol sizes: core (loopcanary::), port (loopcanary::cortex_m::, the SysTick entry), the
# runtime helpers the library pulls in (libgcc's 64-bit division, ...), the rest.
#
#   cmake -DSIZE=arm-none-eabi-size -DNM=arm-none-eabi-nm -DBASE=a.elf -DNOFORMAT=b.elf -DFULL=c.elf
#         -P footprint.cmake

cmake_minimum_required(VERSION 3.25)
foreach(variable SIZE BASE NOFORMAT FULL)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "footprint.cmake: -D${variable}=... is required")
  endif()
endforeach()

function(sizes_of file prefix)
  execute_process(COMMAND ${SIZE} ${file} OUTPUT_VARIABLE out RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${SIZE} ${file} failed")
  endif()
  if(NOT out MATCHES "\n *([0-9]+)[ \t]+([0-9]+)[ \t]+([0-9]+)")
    message(FATAL_ERROR "unexpected ${SIZE} output:\n${out}")
  endif()
  set(${prefix}_text ${CMAKE_MATCH_1} PARENT_SCOPE)
  set(${prefix}_data ${CMAKE_MATCH_2} PARENT_SCOPE)
  set(${prefix}_bss ${CMAKE_MATCH_3} PARENT_SCOPE)
endfunction()

sizes_of(${BASE} base)
sizes_of(${NOFORMAT} noformat)
sizes_of(${FULL} full)
foreach(section text data bss)
  math(EXPR core_${section} "${noformat_${section}} - ${base_${section}}")
  math(EXPR format_${section} "${full_${section}} - ${noformat_${section}}")
  math(EXPR all_${section} "${full_${section}} - ${base_${section}}")
endforeach()
message("footprint (bytes)                      .text   .data    .bss\n"
        "firmware without loopcanary         ${base_text}\t${base_data}\t${base_bss}\n"
        "+ core + port (no formatter)        ${core_text}\t${core_data}\t${core_bss}\n"
        "+ report formatter (format_json)    ${format_text}\t${format_data}\t${format_bss}\n"
        "= core + port + formatter           ${all_text}\t${all_data}\t${all_bss}")

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
    if(name MATCHES "^loopcanary::cortex_m::|^loopcanary_cortex_m_|^SysTick_Handler")
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
          "  port (cortex_m, SysTick)   ${port_flash}\t${port_ram}\n${port_top}"
          "  runtime (libgcc, libc)     ${runtime_flash}\t${runtime_ram}\n${runtime_top}"
          "  firmware and board         ${other_flash}\t${other_ram}")
endfunction()
owners_of(${NOFORMAT} "core + port without the formatter")
owners_of(${FULL} "core + port + formatter")
