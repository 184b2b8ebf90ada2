// SPDX-License-Identifier: MIT
#include "device_report.hpp"

#include "device_test.hpp"
#include "loopcanary/board.hpp"
#include "loopcanary/format.hpp"
#include "loopcanary/packet.hpp"
#include "device_port.hpp"

namespace loopcanary::device_report {
namespace {

using device_test::print;
using device_test::print_u64;

std::uint32_t g_failures = 0;
char g_text[2048];  // one formatted record (static: this may run in the SysTick interrupt)

// The boot count, in no-init RAM: start-up code leaves it, so it survives a reset.
constexpr std::uint32_t kBootMagic = 0x426F6F74u;  // "Boot"
struct BootCount {
  std::uint32_t magic;
  std::uint32_t boots;
};
LOOPCANARY_BOARD_NOINIT BootCount g_boot_count;

}  // namespace

void start(const char* firmware) noexcept {
  device_test::set_output(&board::write);
  print(firmware);
  print(" on ");
  print(board::name());
  print("\n");
}

void check(bool passed, const char* what) noexcept {
  print(passed ? "check ok: " : "check FAILED: ");
  print(what);
  print("\n");
  if (!passed) ++g_failures;
}

bool failed() noexcept { return g_failures != 0; }

std::uint32_t count_boot() noexcept {
  if (g_boot_count.magic != kBootMagic) g_boot_count = {kBootMagic, 0};
  ++g_boot_count.boots;
  print("lc-boot ");
  print_u64(g_boot_count.boots);
  print("\n");
  return g_boot_count.boots;
}

void init_port(tick_t start) noexcept {
#if defined(__riscv)
  riscv::Config port;
  port.timer_hz = board::kTimerHz;
  port.stack.stack_top = board::stack_top();
  port.stack.code_begin = board::code_begin();  // the stack sample: this firmware's code only
  port.stack.code_end = board::code_end();
  port.poll_hz = 1000;
  port.start = start;
  check(riscv::init(port) == riscv::PortStatus::ok, "port init");
#else
  cortex_m::Config port;
  port.core_hz = board::kCoreHz;
  port.poll_hz = 1000;
  port.start = start;
  port.stack_words.code_begin = board::code_begin();  // stack evidence: this firmware's code only
  port.stack_words.code_end = board::code_end();
  check(cortex_m::init(port) == cortex_m::PortStatus::ok, "port init");
#endif
}

MonitorConfig loop_config(std::uint32_t threshold_us) noexcept {
  MonitorConfig config;
  config.name = "main";
  config.tick_hz = device_port::tick_hz();
  config.threshold_us = threshold_us;
  return config;
}

void watch(Watchdog& watchdog, Monitor& monitor, Interceptor on_report) noexcept {
  check(watchdog.add(monitor) == Status::ok, "watchdog add");
  check(watchdog.add_interceptor(on_report, nullptr) == Status::ok, "interceptor");
  device_port::attach(&watchdog);
}

void print_record(const BlockRecord& record) noexcept {
  const FormatResult result = format_text(record, g_text, sizeof g_text);
  print(g_text);
  if (result.truncated) print("(record text truncated)\n");
}

namespace {

board::HostFile g_capture;  // static storage: a capture may be sent from an interrupt

void open_capture(const char* path) noexcept {
  check(board::open_host_file(g_capture, path), "capture file opened on the host");
}

// Closes the capture, checks that nothing was refused or lost, prints the lc-capture line.
std::uint32_t close_capture(std::uint32_t sent, std::uint32_t refused) noexcept {
  check(board::close_host_file(g_capture), "capture file closed");
  check(refused == 0, "no packet refused");
  check(g_capture.bytes_lost == 0, "no capture byte lost");
  print("lc-capture packets=");
  print_u64(sent);
  print(" refused=");
  print_u64(refused);
  print(" bytes=");
  print_u64(g_capture.bytes_written);
  print(" lost=");
  print_u64(g_capture.bytes_lost);
  print("\n");
  return sent;
}

}  // namespace

std::uint32_t send_capture(Watchdog& watchdog, const char* path) noexcept {
  static std::uint8_t packet[kMaxPacketBytes];  // static: this may run in an interrupt
  open_capture(path);
  const std::uint32_t refused_before = device_port::stats().packets_refused;
  const PacketSink sink = board::host_file_sink(g_capture);
  std::uint32_t sent = device_port::drain(watchdog, sink, packet, sizeof packet);
  static std::uint8_t health_packet[kMaxHealthPacketBytes];
  sent += device_port::drain_health(watchdog, sink, health_packet, sizeof health_packet);
  return close_capture(sent, device_port::stats().packets_refused - refused_before);
}

std::uint32_t send_capture(CrashBox& box, const char* path) noexcept {
  open_capture(path);
  return close_capture(box.drain(board::host_file_sink(g_capture)), 0);
}

namespace {

// Passes a packet stream written in pieces (EvidenceRing::drain splits it where the ring wraps)
// on to `next`, counting its packets by their headers (packet_size).
struct PacketCounter {
  PacketSink next;
  std::uint32_t packets = 0;
  std::uint8_t header[kPacketHeaderBytes] = {};
  std::size_t header_seen = 0;  // bytes of the current packet's header seen
  std::size_t left = 0;         // bytes of the current packet after its header still to come

  static void write(void* self, const std::uint8_t* bytes, std::size_t size) {
    PacketCounter& c = *static_cast<PacketCounter*>(self);
    c.next.write(c.next.context, bytes, size);
    for (std::size_t i = 0; i < size; ++i) {
      if (c.header_seen < kPacketHeaderBytes) {
        c.header[c.header_seen++] = bytes[i];
        if (c.header_seen == kPacketHeaderBytes) {
          c.left = packet_size(c.header) - kPacketHeaderBytes;
          ++c.packets;
        }
      } else if (--c.left == 0) {
        c.header_seen = 0;
      }
    }
  }
};

PacketCounter g_counter;  // static storage: a capture may be sent from an interrupt

}  // namespace

std::uint32_t send_capture(EvidenceRing& ring, const char* path) noexcept {
  open_capture(path);
  g_counter = PacketCounter{board::host_file_sink(g_capture)};
  const std::uint32_t bytes = ring.drain(PacketSink{&PacketCounter::write, &g_counter});
  check(bytes == g_capture.bytes_written + g_capture.bytes_lost, "every byte drained went to the capture");
  check(g_counter.header_seen == 0, "the capture ends with a whole packet");
  return close_capture(g_counter.packets, 0);
}

void print_port_stats() noexcept {
  const device_port::PortStats s = device_port::stats();
  print("port: ticks=");
  print_u64(s.ticks);
  print(" polls=");
  print_u64(s.polls);
  print(" captures=");
  print_u64(s.captures);
#if defined(__riscv)
  print(" chain_frames=");
  print_u64(s.chain_frames);
  print(" chain_stops=");
  print_u64(s.chain_stops);
#else
  print(" refused_handler=");
  print_u64(s.refused_handler);
#endif
  print(" refused_stack=");
  print_u64(s.refused_stack);
  print(" poll_ticks_max=");
  print_u64(s.poll_ticks_max);
  print(" poll_ticks_mean=");
  print_u64(s.polls != 0 ? s.poll_ticks_total / s.polls : 0);
  print(" idle_waits=");
  print_u64(s.idle_waits);
  print("\n");
}

int finish() noexcept {
  if (g_failures == 0) {
    print("verdict: PASS\n");
    return 0;
  }
  print("verdict: FAIL (");
  print_u64(g_failures);
  print(" checks)\n");
  return 1;
}

}  // namespace loopcanary::device_report
