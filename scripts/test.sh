#!/usr/bin/env bash
# Builds and runs every test, installing missing dependencies first:
#   host       the Release suites (kernels, fuzz corpus replay, layout rules, packaging, examples)
#   host-asan  the same suites under AddressSanitizer + UndefinedBehaviorSanitizer
#   aarch64    the suites cross-built by clang-19 for aarch64 and run under qemu-aarch64 -cpu max:
#              aarch64-neon (Highway's NEON target, the portable dequant kernels; a quarter of each
#              randomized loop, printed by the suite; the [statistics] studies run on the host only),
#              aarch64-sve256 (the LUT-GEMV, table and dequant-GEMM suites built for SVE2 at 256 bits,
#              Highway's SVE_256 target, run with 256-bit vectors; the SVE TBL check), sme128 / sme512
#              (target::sme at those SVLs)
#   hvx-v67    the HVX suite cross-built by clang-19 for Hexagon v67 (128-byte HVX, freestanding) and run
#              under qemu-hexagon against vectors the host build writes; the ISA checks (vlut16, vgather)
#              and the packet proxy (scripts/isa_proxy.py)
#   fuzz       every libFuzzer target for LUTKIT_FUZZ_SECONDS (default 60) each
# and closes with one line per target: "<target>: N passed, M failed" (N counts Catch2 test cases
# plus the other ctest tests; a suite for an ISA the CPU lacks is counted as skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh fuzz arm hexagon
jobs="${LUTKIT_JOBS:-2}"
summary=()

# run_ctest <label> <build dir> [ctest args...]: runs, then records "<label>: N passed, 0 failed"
run_ctest() {
  local label=$1 dir=$2
  shift 2
  ctest --test-dir "$dir" --output-on-failure "$@" | tee "$dir/ctest-$label.log"
  local log="$dir/Testing/Temporary/LastTest.log"
  local cases suites total skipped
  cases=$(grep -o 'in [0-9]* test cases' "$log" | awk '{s += $2} END {print s + 0}')
  suites=$(grep -c 'in [0-9]* test cases' "$log" || true)
  total=$(grep -o 'out of [0-9]*' "$dir/ctest-$label.log" | tail -1 | awk '{print $3}')
  # a suite built for an ISA this CPU lacks (lutkit_xsimd_avx512_tests) reports Skipped
  skipped=$(grep -c '(Skipped)' "$dir/ctest-$label.log" || true)
  local line="$label: $((cases + total - suites - skipped)) passed, 0 failed"
  if [ "$skipped" -gt 0 ]; then line+=", $skipped skipped (ISA not on this CPU)"; fi
  summary+=("$line")
}

echo "== host: Release build (tests, benchmarks built but not run, examples)"
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/test -j "$jobs"
run_ctest host build/test

echo "== host-asan: ASan + UBSan build"
# -O1, and Highway's AVX3 and AVX2 targets plus the scalar fallback (the Release suite above
# covers SSE4/SSSE3 too): keeps the instrumented build within a few minutes on 2 cores.
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUTKIT_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1" -DLUTKIT_BUILD_BENCHMARKS=OFF -DLUTKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest host-asan build/asan

echo "== aarch64: clang-19 cross build, run under qemu-aarch64"
# (the SME kernels are in this build: compiled with target("sme"), chosen at run time)
cmake -S . -B build/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux.cmake \
  -DLUTKIT_BUILD_BENCHMARKS=OFF -DLUTKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/aarch64 -j "$jobs"
run_ctest aarch64-neon build/aarch64 -E '@sme|@sve'
run_ctest aarch64-sve256 build/aarch64 -R '@sve256'
run_ctest sme128 build/aarch64 -R '@sme128'
run_ctest sme512 build/aarch64 -R '@sme512'

echo "== hvx-v67: clang-19 cross build for Hexagon v67 HVX-128, run under qemu-hexagon"
# the host Release build above wrote the vectors (target lutkit_hvx_vectors)
cmake -S . -B build/hvx -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/hexagon-v67-hvx128.cmake \
  -DLUTKIT_HVX_VECTORS="$PWD/build/test/hvx_vectors.bin" >/dev/null
cmake --build build/hvx -j "$jobs"
run_ctest hvx-v67 build/hvx
scripts/hvx_proxy.sh build/hvx/tests/hvx/lutkit_hvx_tests

echo "== fuzz: libFuzzer + ASan + UBSan, ${LUTKIT_FUZZ_SECONDS:-60} s per target"
scripts/fuzz.sh | tee build/fuzz-summary.log
summary+=("fuzz: $(grep -c 'no finding' build/fuzz-summary.log) passed, 0 failed")

echo
echo "== passed per target"
printf '%s\n' "${summary[@]}"
