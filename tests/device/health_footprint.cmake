# SPDX-License-Identifier: MIT
# The flash and RAM each loop-health feature adds: the sizes (arm-none-eabi-size, Berkeley format)
# of the minimal firmware's packet build (REFERENCE) and of the same firmware with one feature
# each (WITH_<feature>, minimal_firmware.cpp's LC_WITH_<feature>), and the differences. What a
# feature adds: the code its calls inline at their sites, the out-of-line code they pull in
# (whatever the reference already links, such as the watchdog's stage and memory plumbing, costs
# nothing more here), and its data (.bss: the EventHealth storage of the four event types, the
# post stamps of the queue's eight entries). Fails when a feature adds more than MAX_TEXT bytes of
# .text (default 1024): a loose bound against regressions, far above the figures.
#
#   cmake -DSIZE=arm-none-eabi-size -DLABEL=text -DFEATURES="LATENCY;INIT_EVENT;..."
#         -DREFERENCE=a.elf -DWITH_LATENCY=b.elf ... [-DMAX_TEXT=bytes] -P health_footprint.cmake

cmake_minimum_required(VERSION 3.25)
foreach(variable SIZE REFERENCE FEATURES)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "health_footprint.cmake: -D${variable}=... is required")
  endif()
endforeach()
if(NOT DEFINED MAX_TEXT)
  set(MAX_TEXT 1024)
endif()

include(${CMAKE_CURRENT_LIST_DIR}/elf_sizes.cmake)

sizes_of(${REFERENCE} reference)
string(CONCAT table "${LABEL}\nloop-health feature footprint (bytes)  .text\t.data\t.bss\n"
       "packet build (reference)               ${reference_text}\t${reference_data}\t${reference_bss}\n")
set(failures "")
foreach(feature IN LISTS FEATURES)
  if(NOT DEFINED WITH_${feature})
    message(FATAL_ERROR "health_footprint.cmake: -DWITH_${feature}=... is required")
  endif()
  sizes_of(${WITH_${feature}} with)
  foreach(section text data bss)
    math(EXPR delta_${section} "${with_${section}} - ${reference_${section}}")
  endforeach()
  string(TOLOWER "+ ${feature}                                        " name)
  string(SUBSTRING "${name}" 0 39 name)
  string(APPEND table "${name}${delta_text}\t${delta_data}\t${delta_bss}\n")
  if(delta_text GREATER MAX_TEXT)
    string(APPEND failures "${feature} adds ${delta_text} B of .text, more than ${MAX_TEXT} B\n")
  endif()
endforeach()
message("${table}")
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
