# SPDX-License-Identifier: MIT
# device.no_heap: no firmware image links an allocator. The core and the Cortex-M port never
# allocate (the watchdog in the SysTick interrupt, the packet drain, the crash box); this check
# fails when one of them, or anything a firmware links, pulls in the C library's heap or C++'s
# operator new.
#
#   cmake -DNM=arm-none-eabi-nm -DFIRMWARE="a.elf;b.elf" -P no_heap.cmake
if(NOT NM OR NOT FIRMWARE)
  message(FATAL_ERROR "no_heap.cmake: NM and FIRMWARE are required")
endif()
# newlib's allocator entry points (with their reentrant _r forms and the _sbrk they need),
# operator new and delete in every form (Itanium names: _Znw*, _Zna*, _Zdl*, _Zda*).
set(allocator "^(malloc|calloc|realloc|free|memalign|aligned_alloc|posix_memalign|_malloc_r|_calloc_r|_realloc_r|_free_r|_memalign_r|_sbrk|_sbrk_r|_Zn[wa].*|_Zd[la].*)$")
set(found)
foreach(file IN LISTS FIRMWARE)
  execute_process(COMMAND ${NM} -j ${file} OUTPUT_VARIABLE out RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${NM} ${file} failed")
  endif()
  string(REPLACE "\n" ";" symbols "${out}")
  foreach(symbol IN LISTS symbols)
    if(symbol MATCHES "${allocator}")
      list(APPEND found "${file}: ${symbol}")
    endif()
  endforeach()
endforeach()
list(LENGTH FIRMWARE count)
if(found)
  list(JOIN found "\n  " text)
  message(FATAL_ERROR "allocator symbols linked into firmware:\n  ${text}")
endif()
message("no allocator in ${count} firmware images")
