// lutkit — the planner (plan/) on an Arm SME core (target::sme): its constants as a target_costs,
// filled by hand from the static proxy of lutkit's SME LUT-GEMV (docs/targets/arm.md, "Static
// proxy": instructions of the inner loop per slice of a packed chunk, counted in the disassembly;
// there is no Arm device here and no published anchor for SME). The clock, the instruction rate
// in streaming mode, the bandwidths and the number of streaming units are the caller's; the
// defaults are ASSUMPTIONS, not measurements (docs/plan.md, "On the SME static proxy").
// A "core" of target_costs is one streaming unit running the LUT-GEMV.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../core/target.hpp"
#include "../../../plan/cost_model.hpp"

namespace lutkit::plan {

struct sme_cpu {
  int svl_bits = 512;                // the streaming vector length (the proxy's counts hold for any; 128..2048)
  // ASSUMPTIONS (no published figure here): the caller should give its device's
  double clock_ghz = 2.0;            // the streaming unit's clock
  double instructions_per_cycle = 1; // streaming-SVE instructions a cycle (the proxy counts instructions)
  int units = 1;                     // streaming units the LUT-GEMV's threads run on
  double dram_gbs = 50;              // the units' DRAM read together
  double unit_read_gbs = 50;         // one unit's own streaming read
  double fork_join_s = 0;            // a call on more than one unit: the threads' fork / join (streaming-mode entry included)
  double table_s_per_activation = 0; // the table build (not in the static proxy)
};

// The static proxy of the SME LUT-GEMV (docs/targets/arm.md): instructions of the inner loop per
// slice of one packed chunk (a slice: min(SVL, 512) bits of a 64-byte chunk, every row at its
// byte), by bit width: W1 g64 218 per 8 slices, W2 g64 302 per 16, W3 g64 382 per 24 (the whole
// unrolled block with its epilogue), W4 g64 / per-channel 43 per step pair of 4 chunk slices;
// ternary 32 per step pair (one index chunk slice with its sign compare and negate). 0: no proxy.
inline double sme_lut_gemv_instructions_per_slice(int bits, bool ternary) {
  if (ternary) return 32.0;
  switch (bits) {
    case 1: return 218.0 / 8.0;
    case 2: return 302.0 / 16.0;
    case 3: return 382.0 / 24.0;
    case 4: return 43.0 / 4.0;
    default: return 0;
  }
}
// weights per slice: slice bytes x 8 bits over the bit planes (ternary's index chunk: two steps of
// 4 weights in a byte's nibbles, 8 weights a byte)
inline double sme_slice_bytes(int svl_bits) { return double(std::min(svl_bits, 512)) / 8.0; }
inline double sme_weights_per_slice(int svl_bits, int planes, bool ternary) {
  return sme_slice_bytes(svl_bits) * 8.0 / (ternary ? 1.0 : double(planes));
}

struct sme_lut_gemv_kernel_desc {
  std::string policy;
  int planes = 0;
  bool ternary = false;
};
template <class P>
sme_lut_gemv_kernel_desc sme_lut_gemv_kernel() {
  static_assert(std::is_same_v<typename P::target_type, target::sme>, "sme_costs: the policy must target target::sme");
  return {P::name(), P::spec.planes, std::is_same_v<typename P::format, fmt::ternary>};
}
// one unit's LUT-GEMV rate (weights / s): weights per slice over the slice's instructions, at
// instructions_per_cycle x clock
inline double sme_lut_gemv_weights_per_s(const sme_cpu& a, const sme_lut_gemv_kernel_desc& k) {
  const double ins = sme_lut_gemv_instructions_per_slice(k.planes, k.ternary);
  lutkit::detail::require(ins > 0, "sme_costs: no static proxy for ", k.planes, "-plane policy ", k.policy);
  return sme_weights_per_slice(a.svl_bits, k.planes, k.ternary) / ins * a.instructions_per_cycle * a.clock_ghz * 1e9;
}

// The core's constants as target_costs, per streaming unit: DRAM and a unit's own read the
// caller's bandwidths; the byte lookups one TBL of SVL / 8 bytes an instruction; L1 one vector
// load of SVL / 8 bytes an instruction; each LUT-GEMV kernel's own rate from the static proxy
// (key kernel_key(lut_gemv, policy)); the table build per activation and the fork / join the
// caller's (0 by default: not counted). No int8 / fp32 / bf16 rates: the SME decode is the
// LUT-GEMV (FusedDQP and the int8 decode are refused on target::sme, docs/targets/arm.md), and
// the model refuses a method it has no rate for.
inline target_costs sme_costs(const sme_cpu& a, const std::vector<sme_lut_gemv_kernel_desc>& kernels) {
  lutkit::detail::require(a.svl_bits >= 128 && a.svl_bits <= 2048 && a.svl_bits % 128 == 0,
                          "sme_costs: SVL must be a multiple of 128 in 128..2048 (got ", a.svl_bits, ")");
  lutkit::detail::require(a.clock_ghz > 0 && a.instructions_per_cycle > 0 && a.units >= 1 && a.dram_gbs > 0 &&
                              a.unit_read_gbs > 0 && a.fork_join_s >= 0 && a.table_s_per_activation >= 0,
                          "sme_costs: clock, instruction rate, units and bandwidths must be > 0, overheads >= 0");
  const double ips = a.instructions_per_cycle * a.clock_ghz * 1e9;
  target_costs c;
  c.name = "sme (SVL " + std::to_string(a.svl_bits) + ", " + std::to_string(a.units) + " units, assumed rates)";
  c.cores = a.units;
  c.dram_bps = a.dram_gbs * 1e9;
  c.core_read_bps = a.unit_read_gbs * 1e9;
  c.l1_bps = double(a.svl_bits) / 8.0 * ips;
  c.lookups_per_s = double(a.svl_bits) / 8.0 * ips;
  c.fork_join_s = a.fork_join_s;
  c.parallel_compute = a.units;
  for (const auto& k : kernels)
    c.kernels[kernel_key(decode_method::lut_gemv, k.policy)] = {sme_lut_gemv_weights_per_s(a, k), a.table_s_per_activation};
  return c;
}

}  // namespace lutkit::plan
