#!/usr/bin/env bash
# The main job: installs missing dependencies, builds Release, runs the end-to-end example and
# a benchmark selection (or the full sweep with --full), then prints a summary table and writes the
# report (build/report/index.html: figures beside the same summary; scripts/report.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs="${LUTKIT_JOBS:-2}"
# the commit the programs are built from (the report's label, even if the tree moves during the run)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "unknown commit")
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUTKIT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$jobs"

echo "== end-to-end example"
./build/release/examples/lutkit_example

echo "== accuracy on llama.cpp formats (docs/llama_formats.md, \"Accuracy\")"
./build/release/examples/lutkit_accuracy

echo "== engine (examples/llm, docs/engine.md): random-weight GGUF files of Llama-3.2-1B's shape in Q4_0"
echo "   and in Q4_K_M's mix, and of BitNet-2B's in TQ2_0 (written once into build/release/)"
# the result lines, each under its header and command, also go to build/release/engine.txt (the report's input)
engine=build/release/engine.txt
: >"$engine"
for m in llama-3.2-1b:q4_0 llama-3.2-1b:q4_k_m bitnet-2b:tq2_0; do
  shape=${m%%:*} type=${m##*:}
  model=build/release/$shape-$type.gguf
  [ -f "$model" ] || ./build/release/examples/lutkit_llm --write-model "$model" --shape "$shape" --type "$type"
  for t in 1 2; do
    echo "$shape $type, $t thread(s):" | tee -a "$engine"
    for args in "--random-prompt 512" "--fill 4095"; do
      cmd="./build/release/examples/lutkit_llm --model $model $args -n 65 --threads $t --quiet"
      echo "\$ $cmd" >>"$engine"
      $cmd | tail -1 | tee -a "$engine"
    done
  done
done

filter='dram_read|/4096x14336/n:1/|/2560x6912/n:1/|w2_g64_asym.*/4096x14336/n:(4|16)/|convert_dq/w2.*/4096x14336/n:(4|16)/|lut_precompute|peak/|_gemm/.*/4096x14336/n:128/threads:2/|^dequant/.*/threads:2/|^dllm_[a-z_]*/B:16/L:32/V:126464/.*/threads:2|^ar_[a-z_]*/B:(1|16)/V:151936/.*threads:2/|^(attention_(decode|prefill|prefill_bf16|naive)|kv_read)/.*/threads:2/|^decode_read/.*/4096x14336/|^(load_memcpy|load_pages|pack|import_pack|pack_q4_0|pack_q4_0_into|pack_q8_0|pack_q8_0_into)/|^aie/'
min_time=0.3
if [ "${1:-}" = "--full" ]; then filter='.*'; min_time=0.5; fi
echo "== benchmarks (filter: $filter)"
out=build/release/bench.json
bench=(./build/release/benchmarks/lutkit_bench --benchmark_filter="$filter" --benchmark_min_time="$min_time"
       --benchmark_out="$out" --benchmark_out_format=json)
"${bench[@]}"
echo
echo "== summary"
python3 scripts/summary.py "$out"
echo
echo "== report"
# the static proxies, where scripts/test.sh left them in this tree
proxies=()
for p in build/hvx/proxy.txt build/aarch64/proxy.txt; do if [ -f "$p" ]; then proxies+=(--proxy "$p"); fi; done
python3 scripts/report.py "$out" --engine "$engine" "${proxies[@]}" --out build/report --commit "$commit" \
  --bench-cmd "${bench[0]} --benchmark_filter='$filter' --benchmark_min_time=$min_time --benchmark_out=$out --benchmark_out_format=json"
echo "open $PWD/build/report/index.html"
