// Emulated runs (qemu) scale the randomized loops down: LUTKIT_TEST_CASE_DIVISOR = d runs
// ceil(n / d) cases of each, and the suite says so once in its output.
#pragma once
#include <cstdio>
#include <cstdlib>

namespace lutkit_test {
inline int case_divisor() {
  static const int d = [] {
    const char* e = std::getenv("LUTKIT_TEST_CASE_DIVISOR");
    const int v = e ? std::atoi(e) : 1;
    if (v > 1) std::printf("lutkit tests: reduced case count, 1/%d of each randomized loop (LUTKIT_TEST_CASE_DIVISOR)\n", v);
    return v < 1 ? 1 : v;
  }();
  return d;
}
inline int scaled_cases(int n) { return (n + case_divisor() - 1) / case_divisor(); }
}  // namespace lutkit_test
