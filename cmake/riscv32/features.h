/* SPDX-License-Identifier: MIT */
/* Stand-in for glibc's <features.h>, for bare-metal RISC-V builds that take libstdc++'s headers
   from Debian's libstdc++-12-dev-riscv64-cross (cmake/riscv32-unknown-elf.cmake). Those headers
   are configured for riscv64 Linux: their bits/os_defines.h includes <features.h> and tests
   glibc's version with __GLIBC_PREREQ. There is no glibc here: every such test is false. */
#pragma once
#define __GLIBC_PREREQ(maj, min) 0
