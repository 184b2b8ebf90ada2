// SPDX-License-Identifier: MIT
// Writes the binary capture the tool's command-line cases read (tests/tool/CMakeLists.txt),
// built by the test-side packet builder: 6 bytes of boot text, a final record of `ota_verify`
// in scope `ota.crc32`, a packet with a damaged byte, and a hang record of `cloud_sync` in scope
// `radio.spi` sent from the previous boot after a software reset.
//
// usage: loopcanary_capture_fixture FILE
#include <cstdio>
#include <fstream>

#include "packet_builder.hpp"

int main(int argc, char** argv) {
  namespace t = loopcanary::tool::test;
  using t::operator+;
  if (argc != 2) {
    std::fprintf(stderr, "usage: loopcanary_capture_fixture FILE\n");
    return 2;
  }
  t::BodySpec ota;
  ota.report = 1;
  ota.dispatch = 3;
  ota.strings = {{"fw-2.0", false}, {"main", false}, {"ota_verify", false}, {"ota.crc32", false}};
  t::BodySpec damaged = ota;
  damaged.report = 5;
  t::BodySpec hang;
  hang.reset_cause = 3;  // software request
  hang.report = 2;
  hang.dispatch = 9;
  hang.phase = 1;
  hang.cause = 2;
  hang.flags = 1;
  hang.duration = 1200000;
  hang.strings = {{"fw-2.0", false}, {"main", false}, {"cloud_sync", false}, {"radio.spi", false}};
  t::Bytes bad = t::make_packet(damaged);
  bad[bad.size() / 2] ^= 0x01;
  const t::Bytes capture = t::bytes_of("boot\r\n") + t::make_packet(ota) + bad + t::make_packet(hang);
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(capture.data()), static_cast<std::streamsize>(capture.size()));
  return out ? 0 : 1;
}
