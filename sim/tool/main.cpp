// SPDX-License-Identifier: MIT
// `loopcanary`: the host tool that reads block reports and health records (docs/tool.md).
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

int main(int argc, char** argv) {
  using namespace loopcanary::tool;
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  Options options;
  bool help = false;
  std::string error;
  if (!parse_command_line(args, options, help, error)) {
    std::cerr << "loopcanary: " << error << '\n';
    return 2;
  }
  if (help) {
    std::cout << usage();
    return 0;
  }
  int status = 2;
  if (options.command == "report") {
    status = run_report(options, std::cout, std::cerr);
  } else if (options.command == "show") {
    status = run_show(options, std::cout, std::cerr);
  } else if (options.command == "export") {
    status = run_export(options, std::cout, std::cerr);
  } else if (options.command == "health") {
    status = run_health(options, std::cout, std::cerr);
  } else if (options.command == "decode") {
    status = run_decode(options, std::cout, std::cerr);
  } else {
    status = run_symbolize(options, std::cout, std::cerr);
  }
  std::cout.flush();
  return status;
}
