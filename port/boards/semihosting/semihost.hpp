// SPDX-License-Identifier: MIT
// Semihosting for the boards (private to their libraries): the operations every board shares
// (semihosting.cpp: console, host files) over the one call each board makes its own way (Arm:
// `bkpt 0xAB`; RISC-V: `ebreak` between two marker instructions).
#pragma once

#include <cstdint>

namespace loopcanary::board::detail {

inline constexpr std::uint32_t kSysOpen = 0x01;   // open a host file: {name, mode, name length}
inline constexpr std::uint32_t kSysClose = 0x02;  // close it: {handle}
inline constexpr std::uint32_t kSysWrite0 = 0x04;  // write a NUL-terminated string
inline constexpr std::uint32_t kSysWrite = 0x05;  // write to a file: {handle, data, size}
inline constexpr std::uint32_t kModeWriteBinary = 5;  // SYS_OPEN mode of fopen's "wb"

/// One semihosting call: `operation` with the argument block (or string) at `argument`; returns
/// the host's result. Defined by each board. Any context; stops the CPU while the host works.
std::uint32_t semihost(std::uint32_t operation, const void* argument) noexcept;

}  // namespace loopcanary::board::detail
