// SPDX-License-Identifier: MIT
// loopcanary_emulation_probe PREMISE: the run-time probe of emulation.hpp for the test scripts
// that run programs (tests/sim/run_case.cmake), run as those programs are (under the emulator in
// a cross build). Exit status 0 when PREMISE holds here; 1, with what the probe saw on stdout,
// when it does not (under QEMU's user-mode emulation); 2 for a name that is no premise.
#include <cstdio>
#include <string>

#include "emulation.hpp"

int main(int argc, char** argv) {
  lctest::Premise premise{};
  if (argc != 2 || !lctest::premise_named(argv[1], premise)) {
    std::fprintf(stderr, "usage: loopcanary_emulation_probe PREMISE (proc_syscall, process_vm_readv, proc_signals or "
                         "exec_self)\n");
    return 2;
  }
  const std::string& why = lctest::broken_premise(premise);
  if (why.empty()) return 0;
  std::printf("%s\n", why.c_str());
  return 1;
}
