# SPDX-License-Identifier: MIT
# Toolchain file: Linux on AArch64 with Debian's cross compiler, the programs run under QEMU's
# user-mode emulation on an x86-64 host.
#
#   cmake -B build/aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# CMAKE_CROSSCOMPILING_EMULATOR is `qemu-aarch64 -L /usr/aarch64-linux-gnu -E
# LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib`, so CTest runs each test program under emulation
# with the cross sysroot's loader and C library. Debian packages (the arm64 architecture added
# with `dpkg --add-architecture arm64`):
#   g++-aarch64-linux-gnu qemu-user libgtest-dev:arm64 libgmock-dev:arm64
# and for the libuv and GLib adapters libuv1-dev:arm64 libglib2.0-dev:arm64, which bring Debian's
# own arm64 C library (libc6:arm64) into /lib/aarch64-linux-gnu.
# On an AArch64 host none of this is needed: build natively.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Headers and libraries of the target: the cross sysroot, then Debian's multiarch folders.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config reads the target's .pc files only (libuv, GLib for the adapters: their arm64
# packages, libuv1-dev:arm64 and libglib2.0-dev:arm64); without them those adapters are not built.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} /)

# The sysroot's loader (QEMU's -L maps /lib/ld-linux-aarch64.so.1 to it) searches Debian's
# multiarch folders /lib/aarch64-linux-gnu and /usr/lib/aarch64-linux-gnu before its own /lib.
# Where libc6:arm64 is installed it would load that C library (another build of glibc than the
# loader: Debian 12's 2.36-9+deb12u14 against the cross toolchain's 2.36-8cross1), and a program
# that starts a thread hangs there, busy, making no further system call (docs/porting-linux.md,
# "Under emulation"). LD_LIBRARY_PATH, searched first, keeps the loader, libc, libm, libgcc_s and
# libstdc++ of one build; the libraries the sysroot lacks (libuv, GLib and theirs) still come
# from the multiarch folders.
find_program(LOOPCANARY_QEMU_AARCH64 qemu-aarch64)
if(LOOPCANARY_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LOOPCANARY_QEMU_AARCH64} -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
endif()
