// SPDX-License-Identifier: MIT
// Fuzz target: the command line of the demo loopcanary-sim (sim/demo/options.cpp,
// parse_options). The input is the arguments, one per line (argv[0] is the program's name).
// Asserts: a refused command line has a one-line error; an accepted one (without --help) has
// its values in their documented ranges and its run length resolved.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args{thermostat::kProgram};
  for (std::size_t at = 0; at < input.size();) {
    std::size_t nl = input.find('\n', at);
    if (nl == std::string::npos) nl = input.size();
    args.push_back(input.substr(at, nl - at));
    at = nl + 1;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);

  thermostat::Options options;
  std::string error;
  if (thermostat::parse_options(static_cast<int>(args.size()), argv.data(), options, error)) {
    if (!options.help) {
      FUZZ_CHECK(options.threshold_ms >= 1 && options.threshold_ms <= 10'000, "threshold %u", options.threshold_ms);
      FUZZ_CHECK(options.hang_ms >= options.threshold_ms && options.hang_ms <= 600'000, "hang %u (threshold %u)",
                 options.hang_ms, options.threshold_ms);
      FUZZ_CHECK(options.duration_ms <= 604'800'000, "duration %llu ms",
                 static_cast<unsigned long long>(options.duration_ms));
      FUZZ_CHECK(options.run_us != 0, "run length not resolved");
      FUZZ_CHECK(!options.scenario_names.empty(), "no scenario selected");
    }
  } else {
    FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos, "error \"%s\"", error.c_str());
  }
  return 0;
}
