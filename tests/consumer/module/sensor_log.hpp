// SPDX-License-Identifier: MIT
// A small firmware module: it samples a sensor, filters each reading, and flushes a page of
// readings to flash (a CRC over the page, then the flash program). Its handlers run on the
// simulator runtime (loopcanary::simrt): the board stands in for the hardware, so the same code
// runs in virtual time (each step costs what the test says) and in real time (the steps really
// compute and wait).
#pragma once

#include <cstdint>

#include "loopcanary/monitor.hpp"
#include "simrt/board.hpp"
#include "simrt/runtime.hpp"

namespace sensor_log {

namespace simrt = loopcanary::simrt;

/// Message types, indexing kTypes.
enum Type : simrt::TypeId { kSample, kFlush, kVerify, kTypeCount };

/// What each step costs, microseconds of board time.
struct Costs {
  std::uint32_t filter_us = 200;           ///< filtering one reading (CPU)
  std::uint32_t crc_us_per_reading = 10;   ///< the page CRC, per reading (CPU)
  std::uint32_t flash_program_us = 1'000;  ///< programming the page (off the CPU)
};

class Logger {
 public:
  /// `monitor`: the loop's, for the named scopes of the handlers.
  Logger(simrt::Board& board, loopcanary::Monitor& monitor, const Costs& costs) noexcept
      : board_(board), monitor_(monitor), costs_(costs) {}

  // Handlers (not inlined, so reports name them).
  /// One reading: filtered, then kept for the next flush.
  [[gnu::noinline]] void on_sample(std::uint32_t reading) noexcept;
  /// Writes the readings kept to flash: CRC, then program.
  [[gnu::noinline]] void on_flush() noexcept;
  /// Checks the last page: a CRC over a page of readings, `rounds` times. Plain computation
  /// (no board step): in real time it costs what the CPU takes, in virtual time nothing.
  [[gnu::noinline]] void on_verify(std::uint32_t rounds) noexcept;

  std::uint32_t pending() const noexcept { return pending_; }
  std::uint32_t pages() const noexcept { return pages_; }
  std::uint32_t crc() const noexcept { return crc_; }

 private:
  simrt::Board& board_;
  loopcanary::Monitor& monitor_;
  Costs costs_;
  std::uint32_t filtered_ = 0;
  std::uint32_t pending_ = 0;
  std::uint32_t pages_ = 0;
  std::uint32_t crc_ = 0;
  std::uint32_t page_[1024] = {};
};

/// The module's message types for simrt::Runtime (RuntimeConfig::types, app = the Logger).
extern const simrt::EventType kTypes[kTypeCount];

}  // namespace sensor_log
