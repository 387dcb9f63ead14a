// lutkit — the planner (plan/) on a Hexagon HVX NPU (target::hvx, Snapdragon 8 Gen 3 as in
// [T-MAN], docs/references.md): its constants as a target_costs, filled by hand from the paper's
// figures and from the static proxy of lutkit's own HVX LUT-GEMV (docs/targets/hvx.md, "Static
// proxy": packets per 128 bytes of packed weights, counted in the disassembly; no timing exists).
// A "core" of target_costs is one HVX context (a hardware thread with its own vector registers).
// docs/plan.md, "On the HVX static proxy", lists every constant with its source.
//
// This header is host code (it runs the planner, not the kernels): it is not part of the
// freestanding HVX headers beside it.
#pragma once
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../core/target.hpp"
#include "../../../plan/chooser.hpp"
#include "../../../plan/cost_model.hpp"

namespace lutkit::plan {

// The NPU's figures. Every default is [T-MAN]'s except where marked; the clock has no default:
// the paper gives none and no public figure for the 8 Gen 3's Hexagon clock was found to cite,
// so the caller supplies it (the modelled decode is DMA-bound above a break-even clock,
// hvx_break_even_clock_ghz).
struct hvx_npu {
  double clock_ghz = 0;          // the caller's: [T-MAN] gives no clock
  int contexts = 4;              // [T-MAN] §2: "4 to 6 contexts"; Table 2 runs HVX_THREADS = 4
  double dma_gbs = 59;           // [T-MAN] Table 2: DMA DDR -> TCM, 59 GB/s at 1 and at 4 threads
  double vlut16_cpi = 0.5;       // [T-MAN] Table 1: VLUT16 at 0.5 cycles an instruction
  double vlut16_lookups = 128;   // [T-MAN] Table 1: 128 lookups of 16-bit entries (lutkit's tables)
  std::size_t tcm_bytes = std::size_t(8) << 20;  // [T-MAN] §2: 8 MB TCM (= target::hvx's onchip_bytes)
  // assumptions of the static proxy (docs/targets/hvx.md), not measured:
  double packets_per_cycle = 1;  // each context issues one VLIW packet a cycle
  double vector_load_bytes = 128;  // one 128-byte vector load a packet (the tables' reads)
  double fork_join_s = 0;        // the contexts' dispatch: no figure; 0
};

// The static proxy of lutkit's HVX LUT-GEMV inner loop (N = 1), docs/targets/hvx.md: packets per
// 128 bytes of packed weights by bit width (the policies scripts/hvx_proxy.sh counts: uint_asym<1>
// g32, uint_asym<2..4> g64); ternary: 12 packets per 128 B of its 160 B per step pair (index +
// signs). 0: no proxy for that width.
inline double hvx_lut_gemv_packets_per_128B(int bits, bool ternary) {
  if (ternary) return 12.0;
  switch (bits) {
    case 1: return 7.0;
    case 2: return 6.5;
    case 3: return 6.0;
    case 4: return 5.5;
    default: return 0;
  }
}
// weights whose codes fill 128 bytes of the packed blob: 1024 bits over `planes` bit planes;
// ternary: a step pair of a 128-row tile (2 x 4 activations x 128 rows = 1024 weights) is 160 B
inline double hvx_weights_per_128B(int planes, bool ternary) {
  return ternary ? 1024.0 * 128.0 / 160.0 : 1024.0 / double(planes);
}
// the table build: 16 packets per table vector of 4 steps (4 activations a step): 1 packet an activation
inline constexpr double hvx_table_packets_per_activation = 16.0 / 16.0;

// One LUT-GEMV policy the descriptor fills a kernel rate for: its name (P::name()), bit planes,
// ternary or not. hvx_lut_gemv_kernel<P>() builds it from the policy.
struct hvx_lut_gemv_kernel_desc {
  std::string policy;
  int planes = 0;
  bool ternary = false;
};
template <class P>
hvx_lut_gemv_kernel_desc hvx_lut_gemv_kernel() {
  static_assert(std::is_same_v<typename P::target_type, target::hvx>, "hvx_costs: the policy must target target::hvx");
  return {P::name(), P::spec.planes, std::is_same_v<typename P::format, fmt::ternary>};
}

// one context's LUT-GEMV rate (weights / s) for a kernel of that width: the proxy's packets at
// packets_per_cycle x clock
inline double hvx_lut_gemv_weights_per_s(const hvx_npu& a, const hvx_lut_gemv_kernel_desc& k) {
  const double p = hvx_lut_gemv_packets_per_128B(k.planes, k.ternary);
  lutkit::detail::require(p > 0, "hvx_costs: no static proxy for ", k.planes, "-plane policy ", k.policy);
  return hvx_weights_per_128B(k.planes, k.ternary) / p * a.packets_per_cycle * a.clock_ghz * 1e9;
}

// The NPU's constants as target_costs, per HVX context: DRAM the DMA engine's read into TCM
// (Table 2: the same at 1 and 4 threads, so one context's own read is the whole of it); the
// lookups vlut16's rate; L1 (the tables in TCM / registers) one vector load a packet; each
// LUT-GEMV kernel's own rate from the static proxy (key kernel_key(lut_gemv, policy)), its fixed
// cost per activation the table build's packets. No int8 / fp32 / bf16 rate: lutkit has no other
// decode on HVX (docs/targets/hvx.md), so the model refuses those methods and a policy without a
// proxied kernel (the LUT-GEMV's table preparation then needs an fp32 rate).
inline target_costs hvx_costs(const hvx_npu& a, const std::vector<hvx_lut_gemv_kernel_desc>& kernels) {
  lutkit::detail::require(a.clock_ghz > 0, "hvx_costs: the clock is the caller's (no figure in [T-MAN]); got ", a.clock_ghz);
  lutkit::detail::require(a.contexts >= 1 && a.dma_gbs > 0 && a.vlut16_cpi > 0 && a.packets_per_cycle > 0,
                          "hvx_costs: contexts, DMA bandwidth, vlut16 CPI and packets a cycle must be > 0");
  const double f = a.clock_ghz * 1e9;
  target_costs c;
  c.name = "hvx (" + std::to_string(a.contexts) + " contexts, " + std::to_string(a.clock_ghz) + " GHz)";
  c.cores = a.contexts;
  c.dram_bps = a.dma_gbs * 1e9;
  c.core_read_bps = a.dma_gbs * 1e9;
  c.l1_bps = a.vector_load_bytes * a.packets_per_cycle * f;
  c.lookups_per_s = a.vlut16_lookups / a.vlut16_cpi * f;
  c.fork_join_s = a.fork_join_s;
  c.parallel_compute = a.contexts;
  for (const auto& k : kernels)
    c.kernels[kernel_key(decode_method::lut_gemv, k.policy)] = {hvx_lut_gemv_weights_per_s(a, k),
                                                                hvx_table_packets_per_activation / (a.packets_per_cycle * f)};
  return c;
}

// The clock (GHz) above which `contexts` contexts of kernel k outrun the DMA read of its blob
// (bytes_per_weight: the blob's bytes a weight): below it the modelled LUT-GEMV is compute-bound
inline double hvx_break_even_clock_ghz(const hvx_npu& a, const hvx_lut_gemv_kernel_desc& k, double bytes_per_weight,
                                       int contexts) {
  hvx_npu one = a;
  one.clock_ghz = 1;
  const double per_ghz = hvx_lut_gemv_weights_per_s(one, k);  // a context's weights / s at 1 GHz
  return a.dma_gbs * 1e9 / bytes_per_weight / (per_ghz * double(contexts));
}

// The decode plan of one weight matrix on HVX: the LUT-GEMV is lutkit's one HVX decode method,
// with `lut_gemv_error` (the caller's, e.g. measure_decode_error on the host policy of the same
// format: the HVX kernel's error bound is docs/targets/hvx.md's) at the context count of least
// modelled time (choose_threads: ties to fewer); choose() applies the budget.
inline decode_plan plan_decode_hvx(const target_costs& c, const matmul_op& op, double lut_gemv_error, double budget) {
  candidate cand;
  cand.method = decode_method::lut_gemv;
  cand.error = lut_gemv_error;
  cand.threads = choose_threads(c, op, decode_method::lut_gemv);
  cand.modelled_s = model_decode(c, op, decode_method::lut_gemv, cand.threads).total_s;
  return choose({cand}, budget);
}

}  // namespace lutkit::plan
