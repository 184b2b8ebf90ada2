# SPDX-License-Identifier: MIT
# Toolchain file: bare-metal RISC-V rv32imac/ilp32 with Debian's riscv64-unknown-elf toolchain
# (GCC 12, picolibc), firmware run under QEMU's `virt` machine (qemu-system-riscv32).
#
#   cmake -B build/riscv32 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/riscv32-unknown-elf.cmake
#
# Debian packages: gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf
# libstdc++-12-dev-riscv64-cross qemu-system-misc.
#
# C++ standard headers: the bare-metal toolchain ships none. The ones of
# libstdc++-12-dev-riscv64-cross (libstdc++ for riscv64 Linux, the same GCC release) serve: the
# library and the device ports use only freestanding parts of them (<atomic>, <cstdint>,
# <cstddef>, <cstring>, <type_traits>, <new>, ...), which do not depend on the target's word
# size or OS, and nothing links libstdc++. Their bits/os_defines.h includes glibc's <features.h>
# for __GLIBC_PREREQ; cmake/riscv32/features.h stands in for it (every glibc version test false).
# The three folders come before picolibc's headers (-isystem), so libstdc++'s <cstdlib> and
# friends find picolibc's C headers with #include_next. No other RISC-V C++ library headers are
# packaged for Debian 12.
#
# The multilib is chosen from -march: rv32imac/ilp32 (picolibc's and libgcc's rv32 libraries).
# GCC 12 follows the 2019 ISA spec, where the CSR instructions belong to Zicsr, and
# -march=rv32imac_zicsr matches no multilib: -misa-spec=2.2 keeps them in the base ISA.
# -fno-omit-frame-pointer: the port's stack sample walks the frame-pointer chain (s0).
#
# CMAKE_CROSSCOMPILING_EMULATOR is the QEMU command line ending in `-kernel`, so
# `add_test(NAME x COMMAND <firmware-target>)` runs the firmware under QEMU; the board ends the
# run through virt's test device with the firmware's exit code.

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)

set(LOOPCANARY_QEMU_ICOUNT_SHIFT 5 CACHE STRING
  "QEMU -icount shift: virtual time = instructions x 2^shift ns (5: 32 ns, about a 31 MHz core)")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LOOPCANARY_QEMU_ICOUNT_SHIFT)

set(CMAKE_CXX_COMPILER riscv64-unknown-elf-g++)
set(CMAKE_C_COMPILER riscv64-unknown-elf-gcc)
set(CMAKE_ASM_COMPILER riscv64-unknown-elf-gcc)
find_program(CMAKE_OBJDUMP riscv64-unknown-elf-objdump)
find_program(CMAKE_SIZE riscv64-unknown-elf-size)
find_program(CMAKE_ADDR2LINE riscv64-unknown-elf-addr2line)
find_program(CMAKE_NM riscv64-unknown-elf-nm)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# libstdc++'s headers (see above).
set(LOOPCANARY_RISCV_CXX_INCLUDE /usr/riscv64-linux-gnu/include/c++/12 CACHE PATH
  "libstdc++ headers (Debian: libstdc++-12-dev-riscv64-cross)")
if(NOT EXISTS ${LOOPCANARY_RISCV_CXX_INCLUDE}/atomic)
  message(FATAL_ERROR "LOOPCANARY_RISCV_CXX_INCLUDE='${LOOPCANARY_RISCV_CXX_INCLUDE}' holds no C++ headers: "
                      "install libstdc++-12-dev-riscv64-cross or set it to a libstdc++ 12 include folder")
endif()
set(_lc_cxx_includes
  "-isystem ${LOOPCANARY_RISCV_CXX_INCLUDE} -isystem ${LOOPCANARY_RISCV_CXX_INCLUDE}/riscv64-linux-gnu -isystem ${CMAKE_CURRENT_LIST_DIR}/riscv32")

set(_lc_cpu_flags "-march=rv32imac -mabi=ilp32 -misa-spec=2.2 -mcmodel=medany --specs=picolibc.specs")
set(CMAKE_CXX_FLAGS_INIT "${_lc_cpu_flags} ${_lc_cxx_includes} -g -fno-omit-frame-pointer -fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-use-cxa-atexit -ffunction-sections -fdata-sections")
set(CMAKE_C_FLAGS_INIT "${_lc_cpu_flags} -g -fno-omit-frame-pointer -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${_lc_cpu_flags}")
# Link: the board brings its start-up code and linker script; picolibc and libgcc only.
# (CMake links with the compile flags too: -march, -mabi and picolibc's specs come from there.)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-nostartfiles -nodefaultlibs -Wl,--gc-sections")
set(CMAKE_CXX_STANDARD_LIBRARIES "-Wl,--start-group -lc -lgcc -Wl,--end-group")
set(CMAKE_C_STANDARD_LIBRARIES "-Wl,--start-group -lc -lgcc -Wl,--end-group")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# QEMU `virt` (rv32): the ELF loaded and started at 0x80000000 (-bios none), console output over
# semihosting into a chardev on stdout (append=on keeps QEMU from truncating a file stdout is
# redirected to), no serial, no display. LOOPCANARY_QEMU: the command without timing options and
# without -kernel; LOOPCANARY_QEMU_ICOUNT: deterministic virtual time.
find_program(LOOPCANARY_QEMU_EXECUTABLE qemu-system-riscv32)
if(NOT LOOPCANARY_QEMU_EXECUTABLE)
  set(LOOPCANARY_QEMU_EXECUTABLE qemu-system-riscv32)
endif()
set(LOOPCANARY_QEMU_MACHINE virt)
set(LOOPCANARY_QEMU
  ${LOOPCANARY_QEMU_EXECUTABLE} -M virt -bios none -display none -serial null -monitor none
  -chardev file,id=semi,path=/dev/stdout,append=on
  -semihosting-config enable=on,target=native,chardev=semi)
set(LOOPCANARY_QEMU_ICOUNT -icount shift=${LOOPCANARY_QEMU_ICOUNT_SHIFT},sleep=off)
set(CMAKE_CROSSCOMPILING_EMULATOR ${LOOPCANARY_QEMU} ${LOOPCANARY_QEMU_ICOUNT} -kernel)
