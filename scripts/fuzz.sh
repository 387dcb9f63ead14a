#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.cpp) with clang-19, ASan and UBSan, and runs each
# for a bounded time from its seed corpus; fails on any finding. Inputs that crash are written to
# build/fuzz/crashes/<target>/: add them to tests/fuzz/corpus/<target>/ so the normal suite replays them.
#   scripts/fuzz.sh                 every target, LUTKIT_FUZZ_SECONDS (default 26) each; gguf to 1e6
#                                   executions (at most max(300 s, 4 x LUTKIT_FUZZ_SECONDS): on a
#                                   2.8 GHz Ice Lake server 1e6 took 186 s, on a Zen 3 133 s, while
#                                   the other five ran one after another on the second core, 5 x 26 s)
#   scripts/fuzz.sh blob -runs=N    one target, extra libFuzzer flags
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh fuzz
seconds="${LUTKIT_FUZZ_SECONDS:-26}"
targets=(gguf blob import streams attention sampling)  # (the longest first)
extra=()
if [ $# -gt 0 ]; then targets=("$1"); shift; extra=("$@"); fi

cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUTKIT_FUZZ=ON \
  -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_CXX_FLAGS_RELEASE="-O1" >/dev/null
cmake --build build/fuzz -j "${LUTKIT_JOBS:-2}"

# fuzz_one <target>: one libFuzzer run; prints its line, returns 1 on a finding
fuzz_one() {
  local t=$1 work=build/fuzz/corpus/$1 log=build/fuzz/$1.log
  rm -rf "$work" "build/fuzz/crashes/$t"
  mkdir -p "$work" "build/fuzz/crashes/$t"
  # -rss_limit_mb / -malloc_limit_mb: a hostile shape must never turn into a huge allocation
  # new inputs go to $work; the committed corpus and the fresh seeds are read
  # the GGUF reader (hostile model files) runs to 1e6 executions (at most max(300 s, 4 x the time of
  # the others))
  local limit=(-max_total_time="$seconds") cap=$((4 * seconds > 300 ? 4 * seconds : 300))
  [ "$t" = gguf ] && [ ${#extra[@]} -eq 0 ] && limit=(-max_total_time="$cap" -runs=1000000)
  if ./build/fuzz/tests/fuzz/lutkit_fuzz_$t "$work" "${limit[@]}" -rss_limit_mb=2048 \
       -malloc_limit_mb=1024 -timeout=20 -print_final_stats=1 -artifact_prefix="build/fuzz/crashes/$t/" \
       "${extra[@]}" "tests/fuzz/corpus/$t" "build/fuzz/seeds/$t" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz $t: $runs executions, no finding"
  else
    echo "fuzz $t: FINDING (log: $log, input in build/fuzz/crashes/$t/)"
    tail -40 "$log"
    return 1
  fi
}

# the targets run LUTKIT_JOBS (default 2) at a time, each for its full time on a core of its own
./build/fuzz/tests/fuzz/lutkit_fuzz_make_seeds build/fuzz/seeds >/dev/null
parallel="${LUTKIT_JOBS:-2}"
status=0
pids=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do sleep 1; done
  fuzz_one "$t" >"build/fuzz/$t.result" 2>&1 &
  pids+=($!)
done
for i in "${!targets[@]}"; do
  wait "${pids[$i]}" || status=1
  cat "build/fuzz/${targets[$i]}.result"
done
exit $status
