#!/usr/bin/env bash
# lutkit's example engine beside llama.cpp (libllama + ggml-cpu, ollama 632ff00 = f63eea3^) on the
# same GGUF files: pp512 (prompt-processing tok/s) and decode tok/s at context ~512, T = 1 and 2
# threads, the two engines run alternately REPS times each; prints a table of medians and
# best-of (summarize.py; it re-reads any raw log). docs/engine.md, "Beside llama.cpp".
#
#   LLAMA_SRC=/path/to/ollama-extract benchmarks/llama_cpp/compare.sh
#   MODELS="a.gguf b.gguf" THREADS="2" REPS=5 LLAMA_FA=0 benchmarks/llama_cpp/compare.sh
#
# LLAMA_SRC: llama.cpp's sources as ollama carries them (llama/llama.cpp, ml/backend/ggml/ggml),
#   e.g. `git archive 632ff00798e207e97db6733a66acc387b46248d6 llama/llama.cpp ml/backend/ggml/ggml`
#   of github.com/ollama/ollama; built once into build/llama_cpp
# LUTKIT: the lutkit_llm binary (default build/release/examples/lutkit_llm, built or brought up to date)
# MODELS: default: random-weight Llama-3.2-1B-shaped Q4_0 and Q8_0 files written by lutkit_llm
# LLAMA_FA: flash attention for llama.cpp: 0 (default, off), 1, or auto
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=benchmarks/llama_cpp
OUT=build/llama_cpp
LUTKIT=${LUTKIT:-build/release/examples/lutkit_llm}
LLAMA=${LLAMA:-$OUT/llama_bench_min}
if [ ! -x "$LLAMA" ]; then
  : "${LLAMA_SRC:?set LLAMA_SRC to the llama.cpp sources as ollama carries them (see the header)}"
  cmake -S "$HERE" -B "$OUT" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_SRC="$LLAMA_SRC" >/dev/null
  cmake --build "$OUT" -j "${LUTKIT_JOBS:-2}"
fi
if [ "$LUTKIT" = build/release/examples/lutkit_llm ]; then
  # (every time: a binary built before a header change would be timed as it is; a no-op when current)
  [ -f build/release/CMakeCache.txt ] ||
    cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUTKIT_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release -j "${LUTKIT_JOBS:-2}" --target lutkit_llm
fi
if [ -z "${MODELS:-}" ]; then
  MODELS=""
  for t in q4_0 q8_0; do
    m=build/release/llama-3.2-1b-$t.gguf
    [ -f "$m" ] || "$LUTKIT" --write-model "$m" --shape llama-3.2-1b --type "$t"
    MODELS="$MODELS $m"
  done
fi
THREADS=${THREADS:-"1 2"}
REPS=${REPS:-3}
LLAMA_FA=${LLAMA_FA:-0}
mkdir -p "$OUT/results"
RAW=$OUT/results/raw-$(date +%Y%m%d-%H%M%S).log

{
  echo "# $(date -Is)  host $(hostname)"
  echo "# cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cpus; flags avx512f/vnni/bf16: $(grep -o -w -e avx512f -e avx512_vnni -e avx512_bf16 /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "# lutkit: $LUTKIT"
  echo "# llama:  $LLAMA (fa=$LLAMA_FA, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset})"
} | tee "$RAW"

for m in $MODELS; do
  for t in $THREADS; do
    for r in $(seq 1 "$REPS"); do
      echo "## $(basename "$m") T=$t rep $r  load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RAW"
      out=$(/usr/bin/time -f "time: cpu %P elapsed %es" "$LUTKIT" --model "$m" --random-prompt 512 -n 65 --threads "$t" --quiet 2>&1 || true)
      echo "$out" | sed 's/^/lutkit| /' >> "$RAW"
      lp=$(echo "$out" | sed -n 's/.*prefill \([0-9.]*\) tok\/s.*/\1/p' | head -1)
      ld=$(echo "$out" | sed -n 's/.*| decode [0-9]* tokens[^:]*: \([0-9.]*\) tok\/s.*/\1/p' | head -1)
      lu=$(echo "$out" | sed -n 's/^time: \(.*\)/\1/p')
      out=$(/usr/bin/time -f "time: cpu %P elapsed %es" "$LLAMA" "$m" "$t" "$LLAMA_FA" 512 64 2>&1 || true)
      echo "$out" | sed 's/^/llama | /' >> "$RAW"
      cp_=$(echo "$out" | sed -n 's/^pp512 \([0-9.]*\) tg \([0-9.]*\)$/\1/p')
      cg=$(echo "$out" | sed -n 's/^pp512 \([0-9.]*\) tg \([0-9.]*\)$/\2/p')
      cu=$(echo "$out" | sed -n 's/^time: \(.*\)/\1/p')
      echo "   lutkit pp ${lp:-?} decode ${ld:-?} ($lu) | llama.cpp pp ${cp_:-?} tg ${cg:-?} ($cu)" | tee -a "$RAW"
    done
  done
done

python3 "$HERE/summarize.py" "$RAW" | tee -a "$RAW.table"
echo "raw log: $RAW"
