// SPDX-License-Identifier: MIT
#include "thermostat.hpp"

#include <array>
#include <cstddef>
#include <cstdio>

#include "loopcanary/instrument.hpp"

namespace thermostat {
namespace {

// The OTA image as it sits in the download slot of the external flash.
constexpr std::size_t kImageSize = 64 * 1024;
constexpr std::size_t kCrcChunk = 4096;
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
  control_timer_ = rt_.add_timer(kControlTick, 100'000);
  display_timer_ = rt_.add_timer(kDisplayTick, 250'000);
  relay_timer_ = rt_.add_timer(kRelayCheck, 0);
  if (sensor < 0 || radio < 0 || keypad < 0 || control_timer_ < 0 || display_timer_ < 0 || relay_timer_ < 0) {
    return false;
  }
  lines.sensor = static_cast<std::uint8_t>(sensor);
  lines.radio = static_cast<std::uint8_t>(radio);
  lines.keypad = static_cast<std::uint8_t>(keypad);
  return true;
}

void Firmware::start(const Workload& workload) noexcept {
  work_ = workload;
  rt_.start_timer(static_cast<simrt::TimerId>(control_timer_), 100'000);
  rt_.start_timer(static_cast<simrt::TimerId>(display_timer_), 250'000);
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
  fw.rt_.board().wait_us(250);  // I2C read of the sample
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
  busy(fw.rt_, 300, state);
  const std::int32_t error = fw.setpoint_mc_ - fw.temperature_mc_;
  fw.integral_ += error / 10;
  const bool want_heat = error + fw.integral_ / 50 > 0;
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
  busy(fw.rt_, 1200, state);
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
  for (std::uint32_t page = 0; page < fw.work_.flash_pages; ++page) {
    flash_program_page(fw.rt_, page, fw.work_.flash_page_us);
  }
  fw.log_entries_ = 0;
}

void Firmware::on_schedule_update(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  // The seed's case: 780 ms in a(), then 30 ms in b().
  fw.schedule_hash_ = a(fw.rt_, fw.work_.seed_a_us);
  fw.schedule_hash_ ^= b(fw.rt_, fw.work_.seed_b_us);
}

void Firmware::on_cloud_sync(void* self, const simrt::Message&) noexcept {
  auto& fw = *static_cast<Firmware*>(self);
  radio_exchange(fw.rt_);
  ++fw.syncs_;
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

__attribute__((noinline)) void flash_program_page(simrt::Runtime& rt, std::uint32_t page, std::uint32_t program_us) noexcept {
  LOOPCANARY_SCOPE(rt.monitor(), "flash.program");
  static_cast<void>(page);          // the page address goes to the flash controller
  rt.board().wait_us(program_us);   // the controller programs it; the loop waits
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
  rt.board().acquire(kRadioBus);  // waits while the radio holds the link
  rt.board().wait_us(400);        // request and response
  rt.board().release(kRadioBus);
}

}  // namespace thermostat
