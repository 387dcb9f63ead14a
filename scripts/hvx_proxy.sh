#!/usr/bin/env bash
# The HVX kernels' static performance proxy (qemu gives no timing): packets and HVX instructions per
# 128 bytes of packed weights in the inner loops, counted from the disassembly of the HVX suite
# (scripts/isa_proxy.py). docs/targets/hvx.md records these figures.
#   scripts/hvx_proxy.sh [build/hvx/tests/hvx/lutkit_hvx_tests]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/hvx/tests/hvx/lutkit_hvx_tests}
proxy() { python3 scripts/isa_proxy.py "$bin" "$@" | grep -v "instructions matching" | uniq; }
fn='hvx::detail::tile_rows<lutkit::hvx::spec_of<lutkit::fmt::'
# one LUT-GEMV inner-loop iteration (N = 1) reads one step pair: planes x 128 bytes (ternary: 128
# index bytes + 32 sign bytes)
proxy --func "${fn}uint_asym<1>, lutkit::group<32>.*, 1>" --mark vlut16 --bytes 128 --label "lut_gemv W1 "
proxy --func "${fn}uint_asym<2>, lutkit::group<64>, lutkit::table::lut4<signed char, false(, 0)?>>, 1>" --mark vlut16 --bytes 256 --label "lut_gemv W2 "
proxy --func "${fn}uint_asym<3>, lutkit::group<64>.*, 1>" --mark vlut16 --bytes 384 --label "lut_gemv W3 "
proxy --func "${fn}uint_asym<4>, lutkit::group<64>.*, 1>" --mark vlut16 --bytes 512 --label "lut_gemv W4 "
proxy --func "${fn}ternary, lutkit::per_tensor.*, 1>" --mark vlut16 --bytes 160 --label "lut_gemv ternary "
proxy --func "${fn}uint_asym<2>, lutkit::group<64>, lutkit::table::lut4<signed char, false(, 0)?>>, 2>" --mark vlut16 --bytes 256 --label "lut_gemv W2 (N=2 per pass) "
proxy --func "hvx::detail::build_table_vector<lutkit::hvx::spec_of<lutkit::fmt::uint_asym<2>, lutkit::group<64>, lutkit::table::lut4<signed char, false(, 0)?>" --mark vlut16 --label "table build, 4 steps (W2) "
proxy --func "hvx::detail::supergroup_lookup" --mark vlut16 --bytes 128 --label "dequant Q4_0, lookups "
proxy --func "hvx::detail::supergroup_tables" --mark . --bytes 128 --label "dequant Q4_0, tables "
# one loop iteration = one step of a step pair over a 128-row tile: the step's nibbles of 4 plane chunks
# (256 bytes of W4) -> 4 x 128 fp16 weights
proxy --func "hvx::detail::tman_step_pair<lutkit::hvx::spec_of<lutkit::fmt::uint_sym<4>, lutkit::group<32>" --mark vlut16 --bytes 256 --label "dequant T-MAN blob W4 "
proxy --func "hvx::detail::exp_gather64" --mark vgather --bytes 128 --label "exp, 64 fp16 "
