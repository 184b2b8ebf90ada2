// SPDX-License-Identifier: MIT
#include "thermostat.hpp"

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "loopcanary/instrument.hpp"

namespace thermostat {
namespace {

// The OTA image as it sits in the download slot of the external flash.
constexpr std::size_t kImageSize = 64 * 1024;
constexpr std::size_t kCrcChunk = 4096;
constexpr std::size_t kChunkSize = 512;  // an OTA download chunk (kImageSize is a multiple)
// A log page as the firmware wrote it, and as the flash reads it back (the same: the flash works).
std::uint8_t g_log_page[256];
std::uint8_t g_page_read_back[256];
std::uint8_t g_image[kImageSize];

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = make_crc_table();

// Short CPU work of the normal handlers (conversions, PID, drawing), in microseconds.
void busy(simrt::Runtime& rt, std::uint32_t us, std::uint32_t& state) noexcept {
  for (simrt::Burn burn(us); rt.board().compute(burn);) {
    for (int i = 0; i < 64; ++i) state = state * 1664525u + 1013904223u;
  }
}

}  // namespace

const simrt::EventType Firmware::kTypes[kEventCount] = {
    {{"sensor_drdy"}, &Firmware::on_sensor_drdy},
    {{"control_tick"}, &Firmware::on_control_tick},
    {{"relay_check"}, &Firmware::on_relay_check},
    {{"display_tick"}, &Firmware::on_display_tick},
    {{"radio_rx"}, &Firmware::on_radio_rx},
    {{"button"}, &Firmware::on_button},
    {{"ota_verify"}, &Firmware::on_ota_verify},
    {{"log_flush"}, &Firmware::on_log_flush},
    // The seed's case keeps the seed's threshold: 800 ms (a dispatch longer than that blocks).
    {{"schedule_update", 800'000}, &Firmware::on_schedule_update},
    {{"cloud_sync"}, &Firmware::on_cloud_sync},
    {{"ota_chunk"}, &Firmware::on_ota_chunk},
};

Firmware::Firmware(simrt::Runtime& runtime) noexcept : rt_(runtime) {
  std::uint32_t x = 0x1234567u;
  for (std::uint8_t& byte : g_image) {
    x = x * 1103515245u + 12345u;
    byte = static_cast<std::uint8_t>(x >> 16);
  }
}

bool Firmware::init(Lines& lines) noexcept {
  const int sensor = rt_.add_irq_line(kSensorDrdy);
  const int radio = rt_.add_irq_line(kRadioRx);
  const int keypad = rt_.add_irq_line(kButton);
  control_timer_ = rt_.add_timer(kControlTick, kControlPeriodUs);
  display_timer_ = rt_.add_timer(kDisplayTick, kDisplayPeriodUs);
  relay_timer_ = rt_.add_timer(kRelayCheck, 0);
  if (sensor < 0 || radio < 0 || keypad < 0 || control_timer_ < 0 || display_timer_ < 0 || relay_timer_ < 0) {
    return false;
  }
  // Their messages' post stamps are their due times: the core counts each tick's lateness,
  // the periods it missed and the ticks later than the deadline.
  if (rt_.init_event(kControlTick, loopcanary::EventHealthConfig{kControlPeriodUs, kControlDeadlineUs}) !=
          loopcanary::Status::ok ||
      rt_.init_event(kDisplayTick, loopcanary::EventHealthConfig{kDisplayPeriodUs, kDisplayDeadlineUs}) !=
          loopcanary::Status::ok) {
    return false;
  }
  lines.sensor = static_cast<std::uint8_t>(sensor);
  lines.radio = static_cast<std::uint8_t>(radio);
  lines.keypad = static_cast<std::uint8_t>(keypad);
  return true;
}

void Firmware::start(const Workload& workload) noexcept {
  work_ = workload;
  rt_.start_timer(static_cast<simrt::TimerId>(control_timer_), kControlPeriodUs);
  rt_.start_timer(static_cast<simrt::TimerId>(display_timer_), kDisplayPeriodUs);
}

void Firmware::on_record(void* self, const loopcanary::BlockRecord& record) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  if (record.phase != loopcanary::Phase::hang) return;
  if (record.event == &fw.rt_.event(kCloudSync)) {
    std::fprintf(stderr, "[thermostat] supervisor: cloud_sync hangs on the radio's SPI link: resetting the radio\n");
    fw.rt_.board().reset_hold(kRadioBus);
  } else {
    std::fprintf(stderr, "[thermostat] supervisor: %s hangs; no recovery for it\n", record.event->name);
  }
}

// ---- Handlers ------------------------------------------------------------------------------

void Firmware::on_sensor_drdy(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  LOOPCANARY_SCOPE(fw.rt_.monitor(), "sensor.read");
  LOOPCANARY_STAGE(fw.rt_, "read");
  fw.rt_.board().wait_us(250);  // I2C read of the sample
  LOOPCANARY_STAGE(fw.rt_, "filter");
  std::uint32_t noise = static_cast<std::uint32_t>(fw.temperature_mc_);
  busy(fw.rt_, 80, noise);
  // The room warms while the heater is on and cools otherwise; a first-order filter.
  const std::int32_t raw = fw.temperature_mc_ + (fw.heater_on_ ? 40 : -25) + static_cast<std::int32_t>(noise % 21u) - 10;
  fw.temperature_mc_ += (raw - fw.temperature_mc_) / 4;
}

void Firmware::on_control_tick(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  LOOPCANARY_SCOPE(fw.rt_.monitor(), "control.pid");
  std::uint32_t state = static_cast<std::uint32_t>(fw.integral_);
  LOOPCANARY_STAGE(fw.rt_, "input");  // the filtered temperature and the relay's state
  busy(fw.rt_, 50, state);
  const std::int32_t error = fw.setpoint_mc_ - fw.temperature_mc_;
  LOOPCANARY_STAGE(fw.rt_, "compute");
  busy(fw.rt_, 200, state);
  fw.integral_ += error / 100;
  const bool want_heat = error + fw.integral_ / 50 > 0;
  LOOPCANARY_STAGE(fw.rt_, "output");  // the relay drive
  busy(fw.rt_, 50, state);
  if (want_heat != fw.heater_on_) {
    fw.heater_on_ = want_heat;
    ++fw.log_entries_;
    fw.rt_.start_timer(static_cast<simrt::TimerId>(fw.relay_timer_), 200'000);
  }
}

void Firmware::on_relay_check(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  std::uint32_t state = fw.log_entries_;
  busy(fw.rt_, 50, state);
}

void Firmware::on_display_tick(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  LOOPCANARY_SCOPE(fw.rt_.monitor(), "display.render");
  std::uint32_t state = fw.frames_drawn_;
  LOOPCANARY_STAGE(fw.rt_, "render");
  busy(fw.rt_, 1000, state);
  LOOPCANARY_STAGE(fw.rt_, "flush");  // the frame to the display driver over SPI
  fw.rt_.board().wait_us(200);
  ++fw.frames_drawn_;
}

void Firmware::on_radio_rx(void* self, const simrt::Message& m) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  LOOPCANARY_SCOPE(fw.rt_.monitor(), "radio.rx");
  std::uint32_t state = m.arg;
  busy(fw.rt_, 150, state);
  switch (m.arg) {
    case kRxSetpoint: fw.setpoint_mc_ = fw.setpoint_mc_ == 21'000 ? 21'500 : 21'000; break;
    case kRxVerifyImage: fw.rt_.post(kOtaVerify, 0); break;
    case kRxFlushLog: fw.rt_.post(kLogFlush, 0); break;
    case kRxNewSchedule: fw.rt_.post(kScheduleUpdate, 0); break;
    case kRxImageChunk: fw.rt_.post(kOtaChunk, 0); break;
    default: break;
  }
}

void Firmware::on_button(void* self, const simrt::Message& m) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  std::uint32_t state = m.arg;
  busy(fw.rt_, 50, state);
  switch (m.arg) {
    case kButtonUp: fw.setpoint_mc_ += 500; break;
    case kButtonDown: fw.setpoint_mc_ -= 500; break;
    case kButtonSync: fw.rt_.post(kCloudSync, 0); break;
    default: break;
  }
}

void Firmware::on_ota_verify(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  LOOPCANARY_SCOPE(fw.rt_.monitor(), "ota.verify");
  fw.image_crc_ = ota_crc32_image(fw.rt_, fw.work_.ota_crc_us);
}

void Firmware::on_log_flush(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  LOOPCANARY_SCOPE(fw.rt_.monitor(), "log.flush");
  LOOPCANARY_STAGE(fw.rt_, "erase");
  flash_erase_sector(fw.rt_, fw.work_.flash_erase_us);
  LOOPCANARY_STAGE(fw.rt_, "program");
  for (std::uint32_t page = 0; page < fw.work_.flash_pages; ++page) {
    flash_program_page(fw.rt_, page, fw.work_.flash_page_us);
  }
  LOOPCANARY_STAGE(fw.rt_, "verify");
  if (flash_verify(fw.rt_, fw.work_.flash_pages, fw.work_.flash_verify_us) == 0) fw.log_entries_ = 0;
}

void Firmware::on_schedule_update(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  // The seed's case: 780 ms in a(), then 30 ms in b(); a stage each.
  LOOPCANARY_STAGE(fw.rt_, "a");
  fw.schedule_hash_ = a(fw.rt_, fw.work_.seed_a_us);
  LOOPCANARY_STAGE(fw.rt_, "b");
  fw.schedule_hash_ ^= b(fw.rt_, fw.work_.seed_b_us);
}

void Firmware::on_cloud_sync(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  radio_exchange(fw.rt_);
  ++fw.syncs_;
}

void Firmware::on_ota_chunk(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  LOOPCANARY_SCOPE(fw.rt_.monitor(), "ota.chunk");
  const std::size_t offset = fw.chunks_stored_ * kChunkSize % kImageSize;
  LOOPCANARY_STAGE(fw.rt_, "store");
  fw.rt_.board().wait_us(fw.work_.chunk_store_us);  // the flash controller programs the chunk
  LOOPCANARY_STAGE(fw.rt_, "hash");
  for (simrt::Burn burn(fw.work_.chunk_hash_us); fw.rt_.board().compute(burn);) {
    for (std::size_t i = 0; i < kChunkSize; ++i) {
      fw.download_crc_ = kCrcTable[(fw.download_crc_ ^ g_image[offset + i]) & 0xFFu] ^ (fw.download_crc_ >> 8);
    }
  }
  ++fw.chunks_stored_;
}

// ---- Drivers -------------------------------------------------------------------------------

__attribute__((noinline)) std::uint32_t ota_crc32_image(simrt::Runtime& rt, std::uint32_t budget_us) noexcept {
  LOOPCANARY_SCOPE(rt.monitor(), "ota.crc32");
  std::uint32_t crc = 0xFFFFFFFFu;
  std::size_t offset = 0;
  for (simrt::Burn burn(budget_us); rt.board().compute(burn);) {
    for (std::size_t i = 0; i < kCrcChunk; ++i) crc = kCrcTable[(crc ^ g_image[offset + i]) & 0xFFu] ^ (crc >> 8);
    offset = (offset + kCrcChunk) % kImageSize;
  }
  return ~crc;
}

__attribute__((noinline)) void flash_erase_sector(simrt::Runtime& rt, std::uint32_t erase_us) noexcept {
  LOOPCANARY_SCOPE(rt.monitor(), "flash.erase");
  rt.board().wait_us(erase_us);  // the controller erases the sector; the loop waits
}

__attribute__((noinline)) void flash_program_page(simrt::Runtime& rt, std::uint32_t page, std::uint32_t program_us) noexcept {
  LOOPCANARY_SCOPE(rt.monitor(), "flash.program");
  static_cast<void>(page);          // the page address goes to the flash controller
  rt.board().wait_us(program_us);   // the controller programs it; the loop waits
}

__attribute__((noinline)) std::uint32_t flash_verify(simrt::Runtime& rt, std::uint32_t pages, std::uint32_t us) noexcept {
  LOOPCANARY_SCOPE(rt.monitor(), "flash.verify");
  std::uint32_t differences = 0;
  for (simrt::Burn burn(us); rt.board().compute(burn);) {
    for (std::uint32_t page = 0; page < pages; ++page) {
      differences += std::memcmp(g_log_page, g_page_read_back, sizeof g_log_page) != 0 ? 1u : 0u;
    }
  }
  return differences;
}

__attribute__((noinline)) std::uint32_t a(simrt::Runtime& rt, std::uint32_t us) noexcept {
  LOOPCANARY_SCOPE(rt.monitor(), "a");
  std::uint32_t x = 0xA5A5A5A5u;
  for (simrt::Burn burn(us); rt.board().compute(burn);) {
    for (int i = 0; i < 256; ++i) x = x * 1664525u + 1013904223u;
  }
  return x;
}

__attribute__((noinline)) std::uint32_t b(simrt::Runtime& rt, std::uint32_t us) noexcept {
  LOOPCANARY_SCOPE(rt.monitor(), "b");
  std::uint32_t x = 0x5A5A5A5Au;
  for (simrt::Burn burn(us); rt.board().compute(burn);) {
    for (int i = 0; i < 256; ++i) x = x * 22695477u + 1u;
  }
  return x;
}

__attribute__((noinline)) void radio_exchange(simrt::Runtime& rt) noexcept {
  LOOPCANARY_SCOPE(rt.monitor(), "radio.spi");
  LOOPCANARY_STAGE(rt, "bus");
  rt.board().acquire(kRadioBus);  // waits while the radio holds the link
  LOOPCANARY_STAGE(rt, "transfer");
  rt.board().wait_us(400);        // request and response
  rt.board().release(kRadioBus);
}

}  // namespace thermostat
