// lutkit — the AIE cycle model: one kernel call's modelled cycles from the core's trace.
//
// Per loop region (a loop the kernel marked), per iteration:
//   II_res = max(load-port issues / 2, store issues, busiest bank's accesses, vector issues,
//                move issues, ALU issues)                     the busiest slot (and bank)
//   II_rec = max over accumulators of (mmuls into it) x (VMAC latency - its accumulator read
//            stage): 2 cycles for integer, 3 for float       the accumulator recurrence
//   II     = max(II_res, II_rec); a region costs iterations x II.
// The model assumes the compiler software-pipelines each region across its entries (the kernels'
// nested loops flattened, as the published kernels' single hardware loops are), so a kernel call
// adds ONE fill and drain: the load latency and the first mmul's, the last iteration's stores
// (nothing later hides them) and the return branch. Straight-line code outside the regions costs
// its busiest slot. Every figure it gives is modelled.
#pragma once
#include "../aie.hpp"

namespace lutkit::aie::model {

struct region_cycles {
  const char* name = nullptr;
  uint64_t entries = 0, iterations = 0, macs = 0;
  double ii = 0, ii_res = 0, ii_rec = 0;
  const char* bound = "";  // the slot (or "recurrence") that sets II
  double cycles = 0;
};

struct kernel_cycles {
  region_cycles regions[trace::max_regions];
  int n = 0;
  double loop_cycles = 0, straight_cycles = 0, fill_drain = 0, total = 0;
  uint64_t macs = 0, macs_float = 0, lookups = 0, dma_in = 0, dma_out = 0;
  const region_cycles* find(const char* name) const {
    for (int i = 0; i < n; ++i)
      if (regions[i].name == name || (regions[i].name && name && __builtin_strcmp(regions[i].name, name) == 0)) return &regions[i];
    return nullptr;
  }
};

template <class P>
kernel_cycles cycles(const trace& tr) {
  kernel_cycles k;
  double last_st = 0;
  bool any_float = false;
  for (int i = 0; i < tr.n; ++i) {
    const region_stats& R = tr.r[i];
    k.macs += R.macs;
    k.macs_float += R.macs_float;
    k.lookups += R.lookups;
    k.dma_in += R.dma_bytes_in;
    k.dma_out += R.dma_bytes_out;
    any_float = any_float || R.macs_float > 0;
    if (i == 0) {  // straight-line code: its busiest slot
      double m = double(R.ops[int(slot::ld)]) / 2;
      for (int s = 1; s < int(slot::count); ++s) m = double(R.ops[s]) > m ? double(R.ops[s]) : m;
      k.straight_cycles = m;
      continue;
    }
    if (R.iterations == 0) continue;
    region_cycles c;
    c.name = R.name;
    c.entries = R.entries;
    c.iterations = R.iterations;
    c.macs = R.macs;
    const double it = double(R.iterations);
    const double cand[] = {double(R.ops[int(slot::ld)]) / 2 / it, double(R.ops[int(slot::st)]) / it, double(R.bank_peak) / it,
                           double(R.ops[int(slot::vec)]) / it, double(R.ops[int(slot::mv)]) / it, double(R.ops[int(slot::alu)]) / it};
    const char* names[] = {"load ports", "store port", "bank", "vector", "move", "scalar"};
    int arg = 0;
    for (int s = 1; s < 6; ++s)
      if (cand[s] > cand[arg]) arg = s;
    c.ii_res = cand[arg];
    c.bound = names[arg];
    for (int a = 0; a < R.n_acc; ++a) {
      const double spacing = double((R.acc_float[a] ? P::lat_mac_float : P::lat_mac_int) - P::acc_read_stage);
      const double rec = double(R.acc_macs[a]) / it * spacing;
      c.ii_rec = rec > c.ii_rec ? rec : c.ii_rec;
    }
    c.ii = c.ii_res;
    if (c.ii_rec > c.ii) {
      c.ii = c.ii_rec;
      c.bound = "recurrence";
    }
    c.cycles = c.ii * it;
    k.loop_cycles += c.cycles;
    last_st = double(R.ops[int(slot::st)]) / it > last_st ? double(R.ops[int(slot::st)]) / it : last_st;
    k.regions[k.n++] = c;
  }
  k.fill_drain = double(P::lat_load) + double(any_float ? P::lat_mac_float : P::lat_mac_int) + last_st + double(P::lat_branch);
  k.total = k.loop_cycles + k.straight_cycles + k.fill_drain;
  return k;
}

// GFLOPS (2 flops per MAC) of `macs_per_call` MACs in `cycles` at the profile's clock
template <class P>
double gflops(double macs, double cycles) {
  return 2.0 * macs / cycles * P::clock_ghz;
}

// MACs per native mmul of each calibration kernel
inline constexpr double macs_bf16_4x8x4 = 4 * 8 * 4, macs_bfp16_8x8x8 = 8 * 8 * 8;

}  // namespace lutkit::aie::model
