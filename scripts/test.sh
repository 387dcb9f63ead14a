#!/usr/bin/env bash
# Builds and runs every test, installing missing dependencies first:
#   host       the Release suites (kernels, layout rules, packaging, examples; the corpora are replayed
#              by the sanitizer, aarch64 and fuzz stages)
#   aie-model  (within the host run) target::aie: the AIE vector API model's checks, the kernels'
#              differential tests on it, the cycle and array models against published figures
#   host-asan  the same suites built by clang-19 under AddressSanitizer + UndefinedBehaviorSanitizer
#              (at -O0: a sixth of each randomized loop, every policy; the widest xsimd suite the CPU
#              runs; the corpus replay of the three parsers, blob, GGUF and streams: the fuzz stage
#              covers the rest)
#   aarch64    the suites cross-built by clang-19 for aarch64 and run under qemu-aarch64 -cpu max:
#              aarch64-neon (Highway's NEON target, the portable dequant kernels; a sixteenth of each
#              randomized loop, printed by the suite; the [statistics] studies run on the host only),
#              aarch64-sve256 (the LUT-GEMV, table and dequant-GEMM suites built for SVE2 at 256 bits,
#              Highway's SVE_256 target, run with 256-bit vectors; the SVE TBL check), sme128 / sme512
#              (target::sme at those SVLs)
#   hvx-v67    the HVX suite cross-built by clang-19 for Hexagon v67 (128-byte HVX, freestanding) and run
#              under qemu-hexagon against vectors the host build writes; the ISA checks (vlut16, vgather)
#              and the packet proxy (scripts/isa_proxy.py)
#   fuzz       every libFuzzer target for LUTKIT_FUZZ_SECONDS (default 26) each, the GGUF
#              reader to 1e6 executions
# Each build's tests run in one ctest, LUTKIT_JOBS (default 2) at a time (the emulated suites
# longest first), and the fuzz targets two at a time. The script closes with one line per target,
# "<target>: N passed, M failed" (N counts Catch2 test cases plus the other ctest tests; a suite
# for an ISA the CPU lacks is counted as skipped), then each stage's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
# the host build's packages first; the cross and fuzz packages (clang-19, qemu, the arm64 multiarch
# libraries: minutes of download and unpacking on a fresh machine) install in the background
# while the host stage builds, and the sanitizer stage (clang-19) waits for them
scripts/deps.sh
mkdir -p build
scripts/deps.sh fuzz arm hexagon >build/deps-cross.log 2>&1 &
deps_cross=$!
jobs="${LUTKIT_JOBS:-2}"
summary=()
# stage <name>: prints the stage heading and starts its clock (the closing lines give each stage's
# wall time: build and tests)
times=()
stage_name="deps"
stage_start=$SECONDS
stage() {
  times+=("$stage_name $(( (SECONDS - stage_start) / 60 )) min $(( (SECONDS - stage_start) % 60 )) s")
  stage_name=$1
  stage_start=$SECONDS
  shift
  echo "== $stage_name: $*"
}

# run_ctest <build dir> <label>=<test name regex>... [-- ctest args...]: one ctest run, $jobs tests
# at a time, then one summary line per label (scripts/ctest_summary.py): "<label>: N passed, 0 failed"
run_ctest() {
  local dir=$1 labels=()
  shift
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do labels+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" | tee "$dir/ctest.log"
  local lines
  lines=$(python3 scripts/ctest_summary.py "$dir" "$dir/ctest.log" "${labels[@]}") || { echo "$lines" >&2; return 1; }
  mapfile -t -O "${#summary[@]}" summary <<<"$lines"
}

stage host "Release build (tests, benchmarks built but not run, examples)"
# -O2 (the main job's Release build is -O3): a quarter less compile time for the same code paths;
# the benchmarks and the accuracy example, compiled here only to check that they build, at -O0
# (no corpus replays here: the fuzz stage starts every target from the whole corpus under ASan +
# UBSan, and the sanitizer build replays the parsers' corpora; the aarch64 build leaves them out too)
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DLUTKIT_COMPILE_CHECK_ONLY=ON -DLUTKIT_CORPUS_REPLAY=OFF >/dev/null
cmake --build build/test -j "$jobs"
run_ctest build/test host=. 'aie-model=^lutkit_aie'

# (clang-19 and its sanitizer runtimes, for the instrumented build: installed by now)
wait "$deps_cross" || { cat build/deps-cross.log >&2; echo "scripts/deps.sh fuzz arm hexagon failed" >&2; exit 1; }
stage host-asan "ASan + UBSan build (clang-19)"
# -O0, and Highway's AVX3 and AVX2 targets plus the scalar fallback (the Release suite above
# covers SSE4/SSSE3 too). clang-19 rather than GCC 12 (the Release suites' compiler): on a 2-core
# Zen 3 GCC took 9.2 min to build this at -O0, clang 2.2-3.8x less per file (e.g. test_layout.cpp
# 60 s against 27 s; its instrumented tests run about 1.4x longer); and the headers get a second
# compiler's checks. At -O1 the instrumented GCC build
# took 13.7 min on 2 cores and its tests 1.7; at -O0 5.0 and 4.5.
CXX=clang++-19 CC=clang-19 cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUTKIT_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELEASE="-O0" -DLUTKIT_BUILD_BENCHMARKS=OFF -DLUTKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest build/asan host-asan=.

stage aarch64 "clang-19 cross build, run under qemu-aarch64"
# (the SME kernels are in this build: compiled with target("sme"), chosen at run time; -O2 like the
# host suites: a test file compiled in 46 s instead of 53 s at -O3)
cmake -S . -B build/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux.cmake \
  -DLUTKIT_BUILD_BENCHMARKS=OFF -DLUTKIT_BUILD_EXAMPLES=OFF -DLUTKIT_CORPUS_REPLAY=OFF >/dev/null
cmake --build build/aarch64 -j "$jobs"
run_ctest build/aarch64 'aarch64-neon=^(?!.*@s[mv]e)' aarch64-sve256=@sve256 sme128=@sme128 sme512=@sme512
# the SME loops' static counts (docs/targets/arm.md), kept for the report (scripts/run.sh passes them on)
sme=build/aarch64/tests/lutkit_sme_tests
{ python3 scripts/isa_proxy.py "$sme" --func 'sme::mk_val_body<(false|true), 6>' --mark 'b?fmopa' --label 'SME fp32/bf16 micro-kernel '
  python3 scripts/isa_proxy.py "$sme" --func 'sme::group16_body' --mark tbl --label 'SME level 2 '
  python3 scripts/isa_proxy.py "$sme" --func 'sme_gemv::slice_body' --mark tbl --label 'SME LUT-GEMV '
} >build/aarch64/proxy.txt

stage hvx-v67 "clang-19 cross build for Hexagon v67 HVX-128, run under qemu-hexagon"
# the host Release build above wrote the vectors (target lutkit_hvx_vectors)
cmake -S . -B build/hvx -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/hexagon-v67-hvx128.cmake \
  -DLUTKIT_HVX_VECTORS="$PWD/build/test/hvx_vectors.bin" >/dev/null
cmake --build build/hvx -j "$jobs"
run_ctest build/hvx hvx-v67=.
scripts/hvx_proxy.sh build/hvx/tests/hvx/lutkit_hvx_tests | tee build/hvx/proxy.txt

stage fuzz "libFuzzer + ASan + UBSan, ${LUTKIT_FUZZ_SECONDS:-26} s per target"
scripts/fuzz.sh | tee build/fuzz-summary.log
summary+=("fuzz: $(grep -c 'no finding' build/fuzz-summary.log) passed, 0 failed")

stage end
echo
echo "== passed per target"
printf '%s\n' "${summary[@]}"
echo "== wall time per stage (build and tests), $(( SECONDS / 60 )) min in all"
printf '%s\n' "${times[@]}"
