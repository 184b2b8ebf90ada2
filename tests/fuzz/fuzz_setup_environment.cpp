// SPDX-License-Identifier: MIT
// Fuzz target: the Linux port's environment reader (loopcanary/linux/setup.hpp, read_environment).
// The input is the environment, one "NAME=value" per line; a name may repeat (the last one counts)
// and any other name is ignored, as getenv would. Asserts: every variable set is either applied or
// refused and counted; a refusal's message is one line naming a LOOPCANARY_ variable; the
// configuration that results from a valid one is still valid (validate()), and its strings point
// into the reader's own copies.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "fuzz_check.hpp"
#include "loopcanary/linux/setup.hpp"

namespace lx = loopcanary::port_linux;

namespace {

const char* get(void* context, const char* name) {
  const auto& values = *static_cast<const std::map<std::string, std::string>*>(context);
  const auto it = values.find(name);
  return it == values.end() ? nullptr : it->second.c_str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> values;
  for (std::size_t at = 0; at < input.size();) {
    std::size_t nl = input.find('\n', at);
    if (nl == std::string::npos) nl = input.size();
    const std::string line = input.substr(at, nl - at);
    const std::size_t eq = line.find('=');
    // getenv values end at the first NUL.
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1).c_str();
    at = nl + 1;
  }
  std::uint32_t ours = 0;
  for (const auto& v : values) ours += v.first.rfind("LOOPCANARY_", 0) == 0 ? 1u : 0u;

  lx::SetupConfig config;
  lx::EnvironmentStrings strings;
  const lx::EnvironmentResult result = lx::read_environment(lx::EnvironmentSource{&get, &values}, config, strings);
  FUZZ_CHECK(result.applied + result.bad <= ours, "applied %u + bad %u > %u set", result.applied, result.bad, ours);
  const std::size_t length = std::strlen(result.message);
  FUZZ_CHECK(length < sizeof result.message, "message not terminated");
  if (result.bad != 0) {
    FUZZ_CHECK(std::strncmp(result.message, "LOOPCANARY_", 11) == 0, "message \"%s\"", result.message);
    FUZZ_CHECK(std::strchr(result.message, '\n') == nullptr, "message \"%s\" spans lines", result.message);
  } else {
    FUZZ_CHECK(length == 0, "message \"%s\" without a refusal", result.message);
  }
  char why[160];
  FUZZ_CHECK(lx::validate(config, why, sizeof why) == lx::SetupError::none, "invalid result: %s", why);
  FUZZ_CHECK(config.log_dir == nullptr || config.log_dir == strings.log_dir, "log_dir not copied");
  FUZZ_CHECK(config.qualifier[0] == '\0' || config.qualifier == strings.qualifier, "qualifier not copied");
  return 0;
}
