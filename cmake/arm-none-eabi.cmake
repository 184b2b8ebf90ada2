# SPDX-License-Identifier: MIT
# Toolchain file: bare-metal Cortex-M with the Debian arm-none-eabi toolchain (gcc, newlib-nano),
# firmware run under QEMU's mps2 machines.
#
#   cmake -B build/cm3 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/arm-none-eabi.cmake \
#         -DLOOPCANARY_CORTEX_M_CPU=cortex-m3        # or cortex-m4f, cortex-m0plus, cortex-m7
#
# The CPU picks the compile flags and the QEMU machine. CMAKE_CROSSCOMPILING_EMULATOR is the QEMU
# command line ending in `-kernel`, so `add_test(NAME x COMMAND <firmware-target>)` runs the
# firmware under QEMU and its semihosting exit code is the test's result. Debian packages:
#   gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-dev qemu-system-arm
# (libstdc++-arm-none-eabi-dev is headers only: nothing here links libstdc++).

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(LOOPCANARY_CORTEX_M_CPU "cortex-m3" CACHE STRING "Target CPU: cortex-m3, cortex-m4f, cortex-m0plus or cortex-m7")
set_property(CACHE LOOPCANARY_CORTEX_M_CPU PROPERTY STRINGS cortex-m3 cortex-m4f cortex-m0plus cortex-m7)
set(LOOPCANARY_QEMU_ICOUNT_SHIFT 5 CACHE STRING
  "QEMU -icount shift: virtual time = instructions x 2^shift ns (5: 32 ns, about a 31 MHz core)")
# try_compile() re-reads this file; give it the same CPU.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LOOPCANARY_CORTEX_M_CPU LOOPCANARY_QEMU_ICOUNT_SHIFT)

# CPU -> compiler flags and the QEMU machine that runs it (none: build and link only).
if(LOOPCANARY_CORTEX_M_CPU STREQUAL "cortex-m3")
  set(_lc_cpu_flags -mcpu=cortex-m3 -mthumb -mfloat-abi=soft)
  set(_lc_machine mps2-an385)
elseif(LOOPCANARY_CORTEX_M_CPU STREQUAL "cortex-m4f")
  set(_lc_cpu_flags -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16)
  set(_lc_machine mps2-an386)
elseif(LOOPCANARY_CORTEX_M_CPU STREQUAL "cortex-m0plus")
  set(_lc_cpu_flags -mcpu=cortex-m0plus -mthumb -mfloat-abi=soft)
  set(_lc_machine "")
elseif(LOOPCANARY_CORTEX_M_CPU STREQUAL "cortex-m7")
  set(_lc_cpu_flags -mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16)
  set(_lc_machine mps2-an500)
else()
  message(FATAL_ERROR "LOOPCANARY_CORTEX_M_CPU='${LOOPCANARY_CORTEX_M_CPU}': use cortex-m3, cortex-m4f, cortex-m0plus or cortex-m7")
endif()

set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
find_program(CMAKE_OBJDUMP arm-none-eabi-objdump)
find_program(CMAKE_SIZE arm-none-eabi-size)
find_program(CMAKE_ADDR2LINE arm-none-eabi-addr2line)
# No linkable C++ runtime (headers only): test the compiler by building a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# Compile: no exceptions, no RTTI, no guard variables or atexit for statics, one section per
# function and object so the linker drops what is unused. -g costs no flash and lets the host
# symbolise sampled program counters.
list(JOIN _lc_cpu_flags " " _lc_cpu_flags_string)
set(CMAKE_CXX_FLAGS_INIT "${_lc_cpu_flags_string} -g -fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-use-cxa-atexit -ffunction-sections -fdata-sections")
set(CMAKE_C_FLAGS_INIT "${_lc_cpu_flags_string} -g -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${_lc_cpu_flags_string}")
# Link: the board brings its own startup code and linker script; no libstdc++ (the g++ driver
# would add -lstdc++, which is not installed), newlib-nano and libgcc only.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-nostartfiles -nodefaultlibs -Wl,--gc-sections")
set(CMAKE_CXX_STANDARD_LIBRARIES "-Wl,--start-group -lc_nano -lgcc -Wl,--end-group")
set(CMAKE_C_STANDARD_LIBRARIES "-Wl,--start-group -lc_nano -lgcc -Wl,--end-group")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# QEMU. Console output is semihosting SYS_WRITE0 into a chardev on stdout (`-nographic` and
# `-chardev stdio` fail when stdin is closed, as in CI; append=on keeps QEMU from truncating a
# file that stdout is redirected to); the exit code is SYS_EXIT_EXTENDED's.
# LOOPCANARY_QEMU:        the command without timing options and without -kernel;
# LOOPCANARY_QEMU_ICOUNT: the options for deterministic virtual time (SysTick and PC samples
#                         exact and reproducible under host load; idle waits skipped).
if(_lc_machine)
  find_program(LOOPCANARY_QEMU_EXECUTABLE qemu-system-arm)
  if(NOT LOOPCANARY_QEMU_EXECUTABLE)
    set(LOOPCANARY_QEMU_EXECUTABLE qemu-system-arm)
  endif()
  set(LOOPCANARY_QEMU_MACHINE ${_lc_machine})
  set(LOOPCANARY_QEMU
    ${LOOPCANARY_QEMU_EXECUTABLE} -M ${_lc_machine} -display none -serial null -monitor none
    -chardev file,id=semi,path=/dev/stdout,append=on
    -semihosting-config enable=on,target=native,chardev=semi)
  set(LOOPCANARY_QEMU_ICOUNT -icount shift=${LOOPCANARY_QEMU_ICOUNT_SHIFT},sleep=off)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LOOPCANARY_QEMU} ${LOOPCANARY_QEMU_ICOUNT} -kernel)
else()
  set(LOOPCANARY_QEMU_MACHINE "")
  set(LOOPCANARY_QEMU "")
  set(LOOPCANARY_QEMU_ICOUNT "")
endif()
