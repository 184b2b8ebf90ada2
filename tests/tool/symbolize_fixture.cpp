// SPDX-License-Identifier: MIT
// A program for symbolize_test: built with -O0 -g, then stripped of its debug information
// (tests/tool/CMakeLists.txt). The test looks up addresses inside these two functions and checks
// the file:line it gets back lies between their markers.
#include <cstdio>

// fixture:inner:begin
__attribute__((noinline)) int fixture_inner(int x) {
  int sum = 0;
  for (int i = 0; i < x; ++i) sum += i * i;
  return sum;
}
// fixture:inner:end

// fixture:outer:begin
__attribute__((noinline)) int fixture_outer(int x) {
  const int a = fixture_inner(x);
  const int b = fixture_inner(x + 1);
  return a + b;
}
// fixture:outer:end

int main(int argc, char**) {
  std::printf("%d\n", fixture_outer(argc));
  return 0;
}
