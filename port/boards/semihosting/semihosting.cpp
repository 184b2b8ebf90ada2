// SPDX-License-Identifier: MIT
// Console and host files over semihosting, for every board that has it (loopcanary/board.hpp):
// the operations only; the call itself is the board's (semihost.hpp).
#include <cstddef>
#include <cstdint>

#include "loopcanary/board.hpp"
#include "semihost.hpp"

namespace loopcanary::board {

using detail::semihost;

void write(const char* text) noexcept { semihost(detail::kSysWrite0, text); }

// SYS_OPEN returns a nonzero handle or -1 (QEMU numbers handles from 1); SYS_WRITE the number of
// bytes it did not write; SYS_CLOSE 0 or -1.
bool open_host_file(HostFile& file, const char* path) noexcept {
  if (file.handle != 0) close_host_file(file);
  file = HostFile{};
  std::uint32_t length = 0;
  while (path[length] != '\0') ++length;
  const std::uint32_t block[3] = {reinterpret_cast<std::uintptr_t>(path), detail::kModeWriteBinary, length};
  const std::uint32_t handle = semihost(detail::kSysOpen, block);
  if (handle == 0xFFFFFFFFu) return false;
  file.handle = handle;
  return true;
}

void write_host_file(HostFile& file, const std::uint8_t* data, std::size_t size) noexcept {
  const auto bytes = static_cast<std::uint32_t>(size);
  std::uint32_t unwritten = bytes;
  if (file.handle != 0 && bytes != 0) {
    const std::uint32_t block[3] = {file.handle, reinterpret_cast<std::uintptr_t>(data), bytes};
    unwritten = semihost(detail::kSysWrite, block);
    if (unwritten > bytes) unwritten = bytes;  // -1, some hosts' error return: nothing written
  }
  file.bytes_written += bytes - unwritten;
  file.bytes_lost += unwritten;
}

bool close_host_file(HostFile& file) noexcept {
  if (file.handle == 0) return false;
  const std::uint32_t block[1] = {file.handle};
  file.handle = 0;
  return semihost(detail::kSysClose, block) == 0;
}

PacketSink host_file_sink(HostFile& file) noexcept {
  return PacketSink{[](void* context, const std::uint8_t* packet, std::size_t size) {
                      write_host_file(*static_cast<HostFile*>(context), packet, size);
                    },
                    &file};
}

}  // namespace loopcanary::board
