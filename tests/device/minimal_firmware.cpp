// SPDX-License-Identifier: MIT
// A minimal monitored firmware: an event queue filled by the SysTick-driven clock, a super-loop
// that dispatches and sleeps, the watchdog in the SysTick interrupt, records drained to the
// board console. Three uses:
//   - footprint: built with LC_WITH_LOOPCANARY=0 (the same loop, no loopcanary) and =1, with
//     and without LC_WITH_FORMAT (the report formatter); footprint.cmake subtracts the sizes.
//     LC_WITH_PACKET (default 1) is the device's output: the hang and final records go to a
//     crash box in no-init RAM (sent at the next boot), and without the formatter the records
//     are drained as binary packets (the port's drain()) to a byte sink. On RISC-V (no text
//     drain in that port) without LC_WITH_FORMAT only.
//   - link check: built for Cortex-M0+ and M7 in the cortex-m3 workflow, so a 64-bit atomic, a
//     read-modify-write atomic (no __atomic_* library here: the link fails) or an instruction the
//     core does not have breaks the build. Everything of the hot path and the watchdog is used.
//   - smoke test: run under QEMU on M3/M4F, one block is reported and drained.
//   - loop-health footprint: each LC_WITH_<feature> (default 0) adds one feature to the packet
//     build, for the flash it adds (health_footprint.cmake): LC_WITH_LATENCY the queue stamps
//     each event's post time and the loop records its queue latency (begin with the stamp,
//     EventHealth storage per event type); LC_WITH_INIT_EVENT that and a period and deadline
//     per event type (Monitor::init_event); LC_WITH_STAGES two named stages per dispatch;
//     LC_WITH_MEMORY the memory context: the stack painted at init and read into every record
//     (cortex_m::init_memory, Hal::read_memory).
#include <cstddef>
#include <cstdint>

#include "loopcanary/board.hpp"

#ifndef LC_WITH_LOOPCANARY
#define LC_WITH_LOOPCANARY 1
#endif
#ifndef LC_WITH_FORMAT
#define LC_WITH_FORMAT 1
#endif
#ifndef LC_WITH_PACKET
#define LC_WITH_PACKET 1
#endif
#ifndef LC_WITH_EVIDENCE
#define LC_WITH_EVIDENCE 0
#endif
#ifndef LC_WITH_INIT_EVENT
#define LC_WITH_INIT_EVENT 0
#endif
#ifndef LC_WITH_LATENCY
#define LC_WITH_LATENCY LC_WITH_INIT_EVENT
#endif
#ifndef LC_WITH_STAGES
#define LC_WITH_STAGES 0
#endif
#ifndef LC_WITH_MEMORY
#define LC_WITH_MEMORY 0
#endif

#if LC_WITH_LOOPCANARY
#include "device_port.hpp"
#include "loopcanary/loopcanary.hpp"
#if LC_WITH_PACKET
#include "loopcanary/crash_box.hpp"
#include "loopcanary/packet.hpp"
#endif
#if LC_WITH_EVIDENCE
#include "loopcanary/evidence.hpp"
#endif
#if LC_WITH_MEMORY
#include "loopcanary/port/cortex_m/stack.hpp"
#endif
#endif

namespace {

// The application: an event queue of small integers and a handler per event.
volatile std::uint32_t g_queue[8];
volatile std::uint32_t g_head = 0;
volatile std::uint32_t g_tail = 0;
volatile std::uint32_t g_sink = 0;
#if LC_WITH_LOOPCANARY && LC_WITH_LATENCY
volatile std::uint32_t g_posted[8];  // each queued event's post time (port clock, ticks)
#endif

void handle(std::uint32_t event) {
  std::uint32_t spins = event == 3 ? 400'000u : 2'000u;  // event 3 is slow
  while (spins-- != 0) g_sink = g_sink + spins;
}

bool pop(std::uint32_t& event) {
  if (g_tail == g_head) return false;
  event = g_queue[g_tail % 8u];
  g_tail = g_tail + 1u;
  return true;
}

void push(std::uint32_t event) {
#if LC_WITH_LOOPCANARY && LC_WITH_LATENCY
  g_posted[g_head % 8u] = loopcanary::device_port::Clock::now();  // the queue stamps the post time
#endif
  g_queue[g_head % 8u] = event;
  g_head = g_head + 1u;
}

#if LC_WITH_LOOPCANARY
namespace lc = loopcanary;
namespace dp = loopcanary::device_port;

#if LC_WITH_LATENCY
lc::EventHealth g_health[4];
constexpr lc::Event kEvents[] = {
    {"sensor", 0, &g_health[0]}, {"button", 0, &g_health[1]}, {"radio", 0, &g_health[2]}, {"flash_write", 0, &g_health[3]}};
#else
constexpr lc::Event kEvents[] = {{"sensor"}, {"button"}, {"radio"}, {"flash_write"}};
#endif
#if LC_WITH_EVIDENCE
lc::StaticEvidenceWatchdog<1> g_watchdog;
#else
lc::StaticWatchdog<1, 4> g_watchdog;
#endif
dp::PortMonitor g_monitor;

#if LC_WITH_FORMAT
char g_text[1024];
void write_record(void* /*context*/, const char* text) { loopcanary::board::write(text); }
#endif
#if LC_WITH_PACKET
#if LC_WITH_EVIDENCE
LOOPCANARY_BOARD_NOINIT lc::StaticEvidenceRing<1024> g_box;
#else
LOOPCANARY_BOARD_NOINIT lc::StaticCrashBox<512> g_box;
#endif
// The byte sink: a UART's transmit register on a real board; here the console, in hex.
void send_packet(void* /*context*/, const std::uint8_t* packet, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char hex[3] = {};
  loopcanary::board::write("lc-packet ");
  for (std::size_t i = 0; i < size; ++i) {
    hex[0] = kDigits[packet[i] >> 4];
    hex[1] = kDigits[packet[i] & 0xFu];
    loopcanary::board::write(hex);
  }
  loopcanary::board::write("\n");
}
#if !LC_WITH_EVIDENCE && !LC_WITH_FORMAT
std::uint8_t g_packet[lc::kMaxPacketBytes];
#endif
#endif
#endif

#if LC_WITH_MEMORY
constexpr std::uintptr_t kStackBytes = 8 * 1024;  // the loop's stack: the top 8 KiB of RAM
#endif

}  // namespace

#if LC_WITH_MEMORY
extern "C" std::uint32_t __stack_top[];  // mps2.ld: the main stack's top
#endif

int main() {
#if LC_WITH_LOOPCANARY
  dp::Config port;
#if defined(__riscv)
  port.timer_hz = loopcanary::board::kTimerHz;
  port.stack.code_begin = loopcanary::board::code_begin();
  port.stack.code_end = loopcanary::board::code_end();
  port.stack.stack_top = loopcanary::board::stack_top();
#else
  port.core_hz = loopcanary::board::kCoreHz;
#endif
  if (dp::init(port) != dp::PortStatus::ok) return 2;
  lc::MonitorConfig config;
  config.name = "main";
  config.tick_hz = dp::tick_hz();
  config.threshold_us = 10'000;
  config.sample_interval_us = 1'000;
  config.hang_limit_us = 1'000'000;
  if (g_monitor.init(config) != lc::Status::ok) return 3;
#if LC_WITH_INIT_EVENT
  for (const lc::Event& e : kEvents) {
    if (g_monitor.init_event(e, {20'000, 5'000}) != lc::Status::ok) return 7;
  }
#endif
  lc::Hal hal = dp::make_hal();
#if LC_WITH_MEMORY
  const auto top = reinterpret_cast<std::uintptr_t>(__stack_top);
  loopcanary::cortex_m::MemoryConfig memory;  // Cortex-M only: the RISC-V port has no memory context
  memory.stack = loopcanary::cortex_m::StackBounds{top - kStackBytes, top};
  if (loopcanary::cortex_m::init_memory(memory) != loopcanary::cortex_m::MemoryStatus::ok) return 8;
  hal.read_memory = &loopcanary::cortex_m::read_memory;
#endif
#if LC_WITH_EVIDENCE
  const lc::PacketSink sink{&send_packet, nullptr};
  g_box.open(loopcanary::board::reset_cause());
  g_box.drain(sink);  // the previous boot's evidence
  if (g_watchdog.init(lc::WatchdogConfig{}, hal, g_box) != lc::Status::ok) return 4;
#else
  if (g_watchdog.init(lc::WatchdogConfig{}, hal) != lc::Status::ok) return 4;
#endif
  if (g_watchdog.add(g_monitor) != lc::Status::ok) return 5;
#if LC_WITH_PACKET && !LC_WITH_EVIDENCE
  const lc::PacketSink sink{&send_packet, nullptr};
  g_box.open(loopcanary::board::reset_cause());
  g_box.drain(sink);  // the previous boot's records
  if (g_watchdog.add_interceptor(&lc::CrashBox::intercept, &g_box) != lc::Status::ok) return 6;
#endif
  dp::attach(&g_watchdog);
#endif
  for (std::uint32_t i = 0; i < 8; ++i) push(i % 4u);
  std::uint32_t event = 0;
  while (pop(event)) {
#if LC_WITH_LOOPCANARY && LC_WITH_LATENCY
    g_monitor.begin(kEvents[event], g_posted[(g_tail - 1u) % 8u]);  // with the post stamp
#endif
    {
#if LC_WITH_LOOPCANARY && !LC_WITH_LATENCY
      LOOPCANARY_DISPATCH(g_monitor, kEvents[event]);
#endif
#if LC_WITH_LOOPCANARY
      LOOPCANARY_SCOPE(g_monitor, "handle");
#endif
#if LC_WITH_LOOPCANARY && LC_WITH_STAGES
      LOOPCANARY_STAGE(g_monitor, "input");
      g_sink = g_sink + event;
      LOOPCANARY_STAGE(g_monitor, "compute");
#endif
      handle(event);
    }
#if LC_WITH_LOOPCANARY && LC_WITH_LATENCY
    g_monitor.end();
#endif
  }
#if LC_WITH_LOOPCANARY
  for (int i = 0; i < 5; ++i) dp::idle_wait();  // the watchdog finalises the last block
  dp::attach(nullptr);
  const lc::LoopStats stats = g_monitor.stats();
#if LC_WITH_EVIDENCE
  g_box.drain(sink);
#elif LC_WITH_FORMAT
  const dp::Sink text_sink{&write_record, nullptr};
  dp::drain(g_watchdog, text_sink, dp::Format::json, g_text, sizeof g_text);
#elif LC_WITH_PACKET
  dp::drain(g_watchdog, sink, g_packet, sizeof g_packet);
#else
  lc::BlockRecord record;
  while (g_watchdog.pop(record)) {
  }
#endif
  loopcanary::board::write(stats.blocks == 2 && stats.dispatches == 8 ? "minimal firmware: ok\n"
                                                                      : "minimal firmware: unexpected stats\n");
  return stats.blocks == 2 && stats.dispatches == 8 ? 0 : 1;
#else
  loopcanary::board::write("minimal firmware: ok\n");
  return 0;
#endif
}
