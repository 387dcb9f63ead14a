#!/usr/bin/env bash
# lutkit's kernels beside llama.cpp's ggml_mul_mat, per llama.cpp type, on the same blocks in one
# process (kernels_bench.cpp): decode (N = 1) and prefill (N = 128) at 4096 x 14336, T = 1 and 2
# threads, REPS interleaved repetitions; prints the table of medians (kernels_table.py) with the
# ratio ggml time / lutkit time. docs/llama_formats.md, "Beside llama.cpp's kernels".
#
#   LLAMA_SRC=/path/to/ollama-extract benchmarks/llama_cpp/kernels.sh
#   TYPES="q4_0 q4_k" REPS=5 benchmarks/llama_cpp/kernels.sh
#
# LLAMA_SRC: as for compare.sh (llama.cpp's sources as ollama carries them at 632ff00)
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=benchmarks/llama_cpp
OUT=build/llama_cpp
if [ ! -f "$OUT/CMakeCache.txt" ]; then
  : "${LLAMA_SRC:?set LLAMA_SRC to the llama.cpp sources as ollama carries them (see compare.sh)}"
  cmake -S "$HERE" -B "$OUT" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_SRC="$LLAMA_SRC" >/dev/null
fi
cmake -S "$HERE" -B "$OUT" >/dev/null
cmake --build "$OUT" -j "${LUTKIT_JOBS:-2}" --target kernels_bench
TYPES=${TYPES:-"q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl q2_k q3_k q4_k q5_k q6_k tq1_0 tq2_0"}
REPS=${REPS:-3}
RES=$OUT/results/kernels-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RES"
echo "# cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus; results in $RES"
for t in $TYPES; do
  "$OUT/kernels_bench" --type "$t" --benchmark_repetitions="$REPS" --benchmark_enable_random_interleaving=true \
    --benchmark_min_time=0.3 --benchmark_out="$RES/$t.json" --benchmark_out_format=json >/dev/null 2>"$RES/$t.err" \
    || { cat "$RES/$t.err"; exit 1; }
  grep -v '^$' "$RES/$t.err" | grep -v "^\*\*\*" || true
done
python3 "$HERE/kernels_table.py" "$RES"/*.json | tee "$RES/table.md"
