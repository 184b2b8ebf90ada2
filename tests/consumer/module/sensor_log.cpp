// SPDX-License-Identifier: MIT
#include "sensor_log.hpp"

#include "loopcanary/instrument.hpp"

namespace sensor_log {

void Logger::on_sample(std::uint32_t reading) noexcept {
  LOOPCANARY_SCOPE(monitor_, "filter");
  for (simrt::Burn burn(costs_.filter_us); board_.compute(burn);) filtered_ = (filtered_ * 7u + reading) / 8u;
  ++pending_;
}

void Logger::on_flush() noexcept {
  {
    LOOPCANARY_SCOPE(monitor_, "crc");
    for (simrt::Burn burn(costs_.crc_us_per_reading * pending_); board_.compute(burn);) {
      crc_ = (crc_ >> 1) ^ (0xEDB88320u & (0u - ((crc_ ^ filtered_) & 1u)));
    }
  }
  {
    LOOPCANARY_SCOPE(monitor_, "flash");
    board_.wait_us(costs_.flash_program_us);
  }
  pending_ = 0;
  ++pages_;
}

void Logger::on_verify(std::uint32_t rounds) noexcept {
  LOOPCANARY_SCOPE(monitor_, "verify");
  std::uint32_t crc = crc_;
  for (std::uint32_t round = 0; round < rounds; ++round) {
    for (std::uint32_t word : page_) {
      crc ^= word + round;
      for (int bit = 0; bit < 32; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
  }
  crc_ = crc;
}

namespace {
void sample(void* app, const simrt::Message& message) { static_cast<Logger*>(app)->on_sample(message.arg); }
void flush(void* app, const simrt::Message&) { static_cast<Logger*>(app)->on_flush(); }
void verify(void* app, const simrt::Message& message) { static_cast<Logger*>(app)->on_verify(message.arg); }
}  // namespace

// Flash writes are slow by design: the flush has a threshold of its own, 20 ms.
const simrt::EventType kTypes[kTypeCount] = {
    {loopcanary::Event{"sample"}, &sample},
    {loopcanary::Event{"flush", 20'000}, &flush},
    {loopcanary::Event{"verify"}, &verify},
};

}  // namespace sensor_log
