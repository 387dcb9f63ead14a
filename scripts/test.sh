#!/usr/bin/env bash
# Builds and runs every test: the Release suite, then the same suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, then every fuzz target for a bounded time
# (LUTKIT_FUZZ_SECONDS each, default 60). Installs missing dependencies first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs="${LUTKIT_JOBS:-2}"

echo "== Release build: tests, benchmarks (built, not run), example"
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/test -j "$jobs"
ctest --test-dir build/test --output-on-failure

echo "== ASan + UBSan build"
# -O1, and Highway's AVX3 and AVX2 targets plus the scalar fallback (the Release suite above
# covers SSE4/SSSE3 too): keeps the instrumented build within a few minutes on 2 cores.
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUTKIT_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1" -DLUTKIT_BUILD_BENCHMARKS=OFF -DLUTKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure

echo "== fuzz (libFuzzer + ASan + UBSan, ${LUTKIT_FUZZ_SECONDS:-60} s per target)"
scripts/fuzz.sh
