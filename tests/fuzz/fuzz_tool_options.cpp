// SPDX-License-Identifier: MIT
// Fuzz target: the host tool's command line and config file (sim/tool/commands.hpp,
// parse_command_line and apply_config_file in options.cpp). The input is text: the arguments
// one per line, then, after a line `----`, the config file's content. The config file is
// written to `c.conf` in a directory of its own under /tmp, read with apply_config_file, and
// the arguments parsed with parse_command_line; in them, `c.conf` stands for that file's path
// (`--config c.conf`). Inputs with an argument holding '/' are skipped: the parser opens the
// file --config names, and a path could name a device (/dev/zero).
// Asserts: a refused config file names `<path>:<line>: `; a refused command line has a
// one-line error; an accepted one has a known subcommand and a path (or asks for --help).
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "commands.hpp"
#include "fuzz_check.hpp"

namespace {

namespace lt = loopcanary::tool;

constexpr char kConfig[] = "c.conf";
std::string directory;
std::string config_path;

void remove_directory() {
  std::remove(config_path.c_str());
  rmdir(directory.c_str());
}

// The config file's path, in a directory made for it at the first call.
const std::string& own_config_path() {
  if (config_path.empty()) {
    char name[] = "/tmp/loopcanary-fuzz-options-XXXXXX";
    FUZZ_CHECK(mkdtemp(name) != nullptr, "cannot make a directory for the config file");
    directory = name;
    config_path = directory + "/" + kConfig;
    std::atexit(remove_directory);
  }
  return config_path;
}

bool starts_with_where(const std::string& error) {
  const std::string prefix = config_path + ":";
  if (error.compare(0, prefix.size(), prefix) != 0) return false;
  std::size_t at = prefix.size();
  while (at < error.size() && error[at] >= '0' && error[at] <= '9') ++at;
  return at > prefix.size() && error.compare(at, 2, ": ") == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = own_config_path();
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  std::string config;
  for (std::size_t at = 0; at < input.size();) {
    std::size_t nl = input.find('\n', at);
    if (nl == std::string::npos) nl = input.size();
    std::string line = input.substr(at, nl - at);
    at = nl + 1;
    if (line == "----") {
      config = at < input.size() ? input.substr(at) : std::string();
      break;
    }
    if (line.find('/') != std::string::npos) return 0;
    for (std::size_t c = line.find(kConfig); c != std::string::npos; c = line.find(kConfig, c + path.size())) {
      line.replace(c, sizeof kConfig - 1, path);
    }
    args.push_back(std::move(line));
  }
  std::FILE* file = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(file != nullptr && std::fwrite(config.data(), 1, config.size(), file) == config.size() &&
                 std::fclose(file) == 0,
             "cannot write %s", path.c_str());

  lt::Options from_file;
  std::string error;
  if (!lt::apply_config_file(path, from_file, error)) {
    FUZZ_CHECK(starts_with_where(error), "a config file error that names no line: %s", error.c_str());
  }

  lt::Options options;
  bool help = false;
  error.clear();
  if (lt::parse_command_line(args, options, help, error)) {
    if (!help) {
      FUZZ_CHECK(options.command == "report" || options.command == "show" || options.command == "export" ||
                     options.command == "symbolize" || options.command == "decode" || options.command == "health",
                 "accepted subcommand \"%s\"", options.command.c_str());
      FUZZ_CHECK(!options.paths.empty(), "accepted without a path");
    }
  } else {
    FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos, "error \"%s\"", error.c_str());
  }
  return 0;
}
