// lutkit — the planner (plan/) on the AIE array model (targets/aie/model/array.hpp: an XDNA 2 array of
// 8 columns x 4 compute tiles, executed on the host): the same cost model and chooser as the
// host's, with the array's constants, for two of the Gemma 3 paper's mapping choices
// (docs/plan.md, "On the AIE array model"):
//   plan_fused_dqp_columns  how many columns the decode projections (FusedDQP, Q4NX) take: a
//                           "core" of target_costs is one column, its own read its shim DMA;
//                           choose_threads (least modelled time, ties to fewer) picks the count
//   plan_megatile           the prefill GEMM's megatile (output block m x n, k step), the least
//                           modelled latency (gemm_latency: Eq. 5's DRAM reads, the shim DMA, the
//                           tiles' compute and input streams) among the shapes whose k step fits
//                           the memory tiles, double-buffered
// Not planned here: FlowKV's columns (its split is one KV head per tile pair, which the host's
// attention workload does not describe).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "../../../plan/cost_model.hpp"
#include "../model/array.hpp"

namespace lutkit::plan {

// The array's constants as target_costs, per column (4 tiles): DRAM the array's read; a column's
// own read its shim DMA (2 channels x 4 B a cycle); its L1 the tiles' two 512-bit load ports; its
// multiply-adds the tiles' bf16 vector rate (FusedDQP's dot); the FusedDQP kernel's own rate from
// the core model's cycles per weight (kernel key "decode.fused_dq.q4nx"). No fork / join: the
// mapping is resident (the per-layer dispatch is the array model's separate fitted term).
inline target_costs aie_costs(const aie::model::npu& a, const aie::model::kernel_rates& r) {
  const double f = a.clock_ghz * 1e9;
  target_costs c;
  c.name = "aie (xdna2, " + std::to_string(a.columns) + " columns)";
  c.cores = a.columns;
  c.dram_bps = a.dram_gbs * 1e9;
  c.core_read_bps = a.shim_bytes_per_cycle * f;
  c.l1_bps = a.rows * 2 * 64 * f;
  c.l2_bps = a.rows * 2 * a.tile_in_bytes_per_cycle * f;
  c.fp32_fmas_per_s = a.rows * a.tile_macs_per_cycle_bf16 * f;
  c.bf16_macs_per_s = c.fp32_fmas_per_s;
  c.parallel_compute = a.columns;
  if (r.w4a8_cycles_per_weight > 0) c.kernels[kernel_key(decode_method::fused_dq, "q4nx")] = {a.rows * f / r.w4a8_cycles_per_weight, 0};
  return c;
}

// A Q4NX weight set of `weights` (K = k rows of 32 x 256 blocks: 0.625 bytes a weight) as the
// decode's matmul: row tiles of 32 (the block's rows), split over columns
inline matmul_op q4nx_matmul(double weights, std::size_t K) {
  matmul_op op;
  op.kind = op_kind::gemv;
  op.policy = "q4nx";
  op.K = K;
  op.M = std::size_t(weights / double(K));
  op.N = 1;
  op.blob_bytes = std::size_t(double(op.M) * double(K) * 0.625);
  op.tiles = (op.M + 31) / 32;
  return op;
}

// The columns FusedDQP takes for one layer's projections of model g (its Q4NX weights), and the
// modelled time at each count (index: columns - 1).
struct columns_plan {
  int columns = 0;
  std::vector<double> modelled_s;
};
inline columns_plan plan_fused_dqp_columns(const aie::model::npu& a, const aie::model::kernel_rates& r,
                                           const aie::model::gemma3& g) {
  const target_costs c = aie_costs(a, r);
  const matmul_op op = q4nx_matmul(g.layer_weights(), std::size_t(g.D));
  columns_plan p;
  p.columns = choose_threads(c, op, decode_method::fused_dq);
  for (int t = 1; t <= c.cores; ++t) p.modelled_s.push_back(model_decode(c, op, decode_method::fused_dq, t).total_s);
  return p;
}

// The megatile of least modelled latency for an M x K x N bf16 GEMM: m in 64 .. 512, k and n in
// 256 and 512 (multiples of the 64 x 64 tile kernel and of the supertile), the k step's A and B
// tiles double-buffered within the memory tiles. Ties (Eq. 5's traffic does not depend on k) go
// to the smaller memory-tile footprint.
struct megatile_plan {
  aie::model::megatile t{};
  double modelled_s = 0;
};
inline megatile_plan plan_megatile(const aie::model::npu& a, aie::model::gemm_shape s) {
  megatile_plan best;
  double best_bytes = 0;
  bool any = false;
  for (double m : {64.0, 128.0, 256.0, 512.0})
    for (double k : {256.0, 512.0})
      for (double n : {256.0, 512.0}) {
        const aie::model::megatile t{m, k, n};
        const auto w = aie::model::walk_megatiles(s, t);
        if (w.mt_bytes_peak > aie::model::memory_tile_bytes_xdna2) continue;
        const double lat = aie::model::gemm_latency(a, s, t).latency();
        if (!any || lat < best.modelled_s || (lat == best.modelled_s && w.mt_bytes_peak < best_bytes)) {
          best = {t, lat};
          best_bytes = w.mt_bytes_peak;
          any = true;
        }
      }
  lutkit::detail::require(any, "plan: no megatile fits the memory tiles");
  return best;
}

}  // namespace lutkit::plan
