// SPDX-License-Identifier: MIT
// The demo firmware: a connected room thermostat on an event loop, as it would run on an MCU.
//
//   sensor      I2C temperature sensor, data-ready interrupt at 20 Hz   -> sensor_drdy
//   control     PID loop every 10 ms (periodic, deadline 5 ms), drives  -> control_tick
//               the heater relay and checks its feedback 200 ms after a switch -> relay_check
//   display     segment display refresh at 20 per second (periodic,    -> display_tick
//               deadline 25 ms)
//   radio       Wi-Fi coprocessor on an SPI link: cloud messages        -> radio_rx
//               (set-point updates; commands: verify OTA image, flush log, new schedule;
//               OTA image chunks)
//   keypad      up / down / sync buttons                                -> button
//   work posted by handlers: ota_verify, log_flush, schedule_update, cloud_sync, ota_chunk
//
// The drivers that block in the demo's scenarios are functions of their own, each with a named
// scope, so loopcanary names them both from sampled program counters and from the scopes.
// Handlers made of steps mark them as stages (LOOPCANARY_STAGE): a block record carries the
// time of each (control_tick: input / compute / output; log_flush: erase / program / verify).
#pragma once

#include <cstdint>

#include "simrt/runtime.hpp"

namespace thermostat {

namespace simrt = loopcanary::simrt;

inline constexpr const char* kFirmware = "thermostat 2.3.1";
/// WatchdogConfig::qualifier: what BlockCanary calls the qualifier (firmware and version).
inline constexpr const char* kQualifier = "thermostat-2.3.1";

/// Message types, indexing Firmware::kTypes.
enum Ev : simrt::TypeId {
  kSensorDrdy,
  kControlTick,
  kRelayCheck,
  kDisplayTick,
  kRadioRx,
  kButton,
  kOtaVerify,
  kLogFlush,
  kScheduleUpdate,
  kCloudSync,
  kOtaChunk,
  kEventCount,
};

/// radio_rx argument: what the cloud sent.
enum RadioMessage : std::uint32_t {
  kRxSetpoint = 1,     ///< a new set-point (normal traffic)
  kRxVerifyImage = 2,  ///< an OTA image arrived: verify its CRC
  kRxFlushLog = 3,     ///< upload requested: flush the event log to flash first
  kRxNewSchedule = 4,  ///< a new weekly schedule: recompute it
  kRxImageChunk = 5,   ///< one chunk of an OTA image download: store it
};

/// The periodic events' timing (Monitor::init_event through Runtime::init_event), microseconds.
/// A deadline is half the period: a tick later than that runs nearer the next tick's slot than
/// its own (the PID's sampling interval is off by more than half; the display's frames are
/// visibly uneven), which the firmware counts as a miss.
inline constexpr std::uint32_t kControlPeriodUs = 10'000;
inline constexpr std::uint32_t kControlDeadlineUs = 5'000;
inline constexpr std::uint32_t kDisplayPeriodUs = 50'000;  ///< 20 frames per second
inline constexpr std::uint32_t kDisplayDeadlineUs = 25'000;

/// button argument.
enum ButtonCode : std::uint32_t { kButtonUp = 1, kButtonDown = 2, kButtonSync = 3 };

/// The SPI link to the radio coprocessor, shared by the loop and the radio.
inline constexpr simrt::BusId kRadioBus = 0;

/// How long the blocking work takes on the target, microseconds (the scenarios set them).
struct Workload {
  std::uint32_t ota_crc_us = 400'000;     ///< CRC over the OTA image
  std::uint32_t flash_erase_us = 40'000;  ///< erasing the log's flash sector (waiting)
  std::uint32_t flash_page_us = 60'000;   ///< programming one flash page (waiting)
  std::uint32_t flash_pages = 4;          ///< pages per log flush
  std::uint32_t flash_verify_us = 40'000; ///< reading the pages back and comparing (CPU)
  std::uint32_t chunk_store_us = 3'000;   ///< writing one OTA image chunk to flash (waiting)
  std::uint32_t chunk_hash_us = 1'800;    ///< the image hash over one chunk (CPU)
  std::uint32_t seed_a_us = 780'000;      ///< the seed's a()
  std::uint32_t seed_b_us = 30'000;       ///< the seed's b()
};

/// The interrupt lines the firmware registered (Action::target of the peripherals).
struct Lines {
  std::uint8_t sensor = 0;
  std::uint8_t radio = 0;
  std::uint8_t keypad = 0;
};

class Firmware {
 public:
  /// The message table; schedule_update carries the seed's own 800 ms threshold.
  static const simrt::EventType kTypes[kEventCount];

  explicit Firmware(simrt::Runtime& runtime) noexcept;

  /// Registers the interrupt lines and timers with the runtime (before the board starts).
  bool init(Lines& lines) noexcept;
  /// Takes the scenarios' workload and starts the periodic timers (after the board started, on
  /// the loop thread).
  void start(const Workload& workload) noexcept;

  /// The supervisor's policy for loopcanary reports (a simrt::Sink): a hang means the
  /// radio coprocessor wedged the SPI link, so reset it. Watchdog context.
  static void on_record(void* self, const loopcanary::BlockRecord& record) noexcept;

 private:
  static void on_sensor_drdy(void* self, const simrt::Message& m) noexcept;
  static void on_control_tick(void* self, const simrt::Message& m) noexcept;
  static void on_relay_check(void* self, const simrt::Message& m) noexcept;
  static void on_display_tick(void* self, const simrt::Message& m) noexcept;
  static void on_radio_rx(void* self, const simrt::Message& m) noexcept;
  static void on_button(void* self, const simrt::Message& m) noexcept;
  static void on_ota_verify(void* self, const simrt::Message& m) noexcept;
  static void on_log_flush(void* self, const simrt::Message& m) noexcept;
  static void on_schedule_update(void* self, const simrt::Message& m) noexcept;
  static void on_cloud_sync(void* self, const simrt::Message& m) noexcept;
  static void on_ota_chunk(void* self, const simrt::Message& m) noexcept;

  simrt::Runtime& rt_;
  Workload work_;
  int control_timer_ = -1;
  int relay_timer_ = -1;
  int display_timer_ = -1;

  // Product state.
  std::int32_t temperature_mc_ = 20'000;  ///< filtered temperature, milli-degrees C
  std::int32_t setpoint_mc_ = 21'000;
  std::int32_t integral_ = 0;
  bool heater_on_ = false;
  std::uint32_t log_entries_ = 0;
  std::uint32_t image_crc_ = 0;
  std::uint32_t chunks_stored_ = 0;
  std::uint32_t download_crc_ = 0xFFFFFFFFu;  ///< running CRC of the image being downloaded
  std::uint32_t schedule_hash_ = 0;
  std::uint32_t frames_drawn_ = 0;
  std::uint32_t syncs_ = 0;
};

// The drivers that block in the scenarios. Not inlined: each is a frame the samples name.

/// CRC-32 over the OTA image, for `budget_us` of CPU (the image is large on the target).
std::uint32_t ota_crc32_image(simrt::Runtime& rt, std::uint32_t budget_us) noexcept;
/// Erases the log's flash sector: the loop waits for the flash (off the CPU).
void flash_erase_sector(simrt::Runtime& rt, std::uint32_t erase_us) noexcept;
/// Programs one flash page: the loop waits for the flash (off the CPU).
void flash_program_page(simrt::Runtime& rt, std::uint32_t page, std::uint32_t program_us) noexcept;
/// Reads `pages` back and compares them, for `us` of CPU.
std::uint32_t flash_verify(simrt::Runtime& rt, std::uint32_t pages, std::uint32_t us) noexcept;
/// The seed's a() and b(): schedule recomputation, CPU-bound.
std::uint32_t a(simrt::Runtime& rt, std::uint32_t us) noexcept;
std::uint32_t b(simrt::Runtime& rt, std::uint32_t us) noexcept;
/// One request/response with the radio over the SPI link (waits while the radio holds it).
void radio_exchange(simrt::Runtime& rt) noexcept;

}  // namespace thermostat
