// SPDX-License-Identifier: MIT
// Console, host files and exit code over Arm semihosting (QEMU: -semihosting-config
// enable=on,...).
// A semihosting call on M-profile is `bkpt 0xAB` with the operation in r0 and a pointer to its
// argument block in r1; the result comes back in r0. Without a host (no debugger, QEMU without
// semihosting) the breakpoint faults: this board is for QEMU and debug probes.
#include <cstddef>
#include <cstdint>

#include "loopcanary/board.hpp"

namespace loopcanary::board {
namespace {

constexpr std::uint32_t kSysOpen = 0x01;           // open a host file: {name, mode, name length}
constexpr std::uint32_t kSysClose = 0x02;          // close it: {handle}
constexpr std::uint32_t kSysWrite0 = 0x04;         // write a NUL-terminated string
constexpr std::uint32_t kSysWrite = 0x05;          // write to a file: {handle, data, size}
constexpr std::uint32_t kModeWriteBinary = 5;      // SYS_OPEN mode of fopen's "wb"
constexpr std::uint32_t kSysExitExtended = 0x20;   // exit with a reason and a status
constexpr std::uint32_t kApplicationExit = 0x20026;  // ADP_Stopped_ApplicationExit

std::uint32_t semihost(std::uint32_t operation, const void* argument) noexcept {
  register std::uint32_t r0 __asm__("r0") = operation;
  register const void* r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

}  // namespace

const char* name() noexcept {
#if defined(__ARM_ARCH_7EM__) && defined(__ARM_FP) && (__ARM_FP & 8)
  return "mps2-an500 cortex-m7";
#elif defined(__ARM_ARCH_7EM__)
  return "mps2-an386 cortex-m4f";
#elif defined(__ARM_ARCH_7M__)
  return "mps2-an385 cortex-m3";
#else
  return "mps2 (link check only)";
#endif
}

void write(const char* text) noexcept { semihost(kSysWrite0, text); }

// SYS_OPEN returns a nonzero handle or -1 (QEMU numbers handles from 1); SYS_WRITE the number of
// bytes it did not write; SYS_CLOSE 0 or -1.
bool open_host_file(HostFile& file, const char* path) noexcept {
  if (file.handle != 0) close_host_file(file);
  file = HostFile{};
  std::uint32_t length = 0;
  while (path[length] != '\0') ++length;
  const std::uint32_t block[3] = {reinterpret_cast<std::uintptr_t>(path), kModeWriteBinary, length};
  const std::uint32_t handle = semihost(kSysOpen, block);
  if (handle == 0xFFFFFFFFu) return false;
  file.handle = handle;
  return true;
}

void write_host_file(HostFile& file, const std::uint8_t* data, std::size_t size) noexcept {
  const auto bytes = static_cast<std::uint32_t>(size);
  std::uint32_t unwritten = bytes;
  if (file.handle != 0 && bytes != 0) {
    const std::uint32_t block[3] = {file.handle, reinterpret_cast<std::uintptr_t>(data), bytes};
    unwritten = semihost(kSysWrite, block);
    if (unwritten > bytes) unwritten = bytes;  // -1, some hosts' error return: nothing written
  }
  file.bytes_written += bytes - unwritten;
  file.bytes_lost += unwritten;
}

bool close_host_file(HostFile& file) noexcept {
  if (file.handle == 0) return false;
  const std::uint32_t block[1] = {file.handle};
  file.handle = 0;
  return semihost(kSysClose, block) == 0;
}

PacketSink host_file_sink(HostFile& file) noexcept {
  return PacketSink{[](void* context, const std::uint8_t* packet, std::size_t size) {
                      write_host_file(*static_cast<HostFile*>(context), packet, size);
                    },
                    &file};
}

void exit(int code) noexcept {
  const std::uint32_t block[2] = {kApplicationExit, static_cast<std::uint32_t>(code)};
  for (;;) semihost(kSysExitExtended, block);
}

}  // namespace loopcanary::board
