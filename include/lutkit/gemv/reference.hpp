// lutkit — the LUT-GEMV's reference: ref::gemv (quant/reference.hpp) in double, and the provable
// bound of the LUT kernel's error against it.
#pragma once
#include <cmath>
#include <cstddef>

#include "../quant/reference.hpp"
#include "tables.hpp"

namespace lutkit::ref {

// Bound on |lut_gemv - gemv| for output (n, m): each table entry is off by at most half a table
// step (int16 tables' planes below table::lut4's WholePlanes, which read the high byte alone: 128
// steps more), each lookup is weighted by 2^plane and the weight scale; float32 rounding of the
// block epilogue adds a few ulps of the magnitudes it sums.
template <class P>
double lut_error_bound(const quantized<P>& q, const lut_tables<P>& t, const float* x, std::size_t n,
                       std::size_t m, std::size_t ldx = 0) {
  if (ldx == 0) ldx = q.K;
  constexpr auto& S = P::spec;
  const packed_layout& L = t.layout();
  const std::size_t G = q.group_k();
  const double steps = S.steps_per_block, pws = S.plane_weight_sum;
  const double c_mirror = S.mirror ? 0.5 * pws : 0.0;
  double table_err = 0, magnitude = 0;
  for (std::size_t blk = 0; blk < L.blocks(); ++blk) {
    const std::size_t k0 = blk * S.block_k;
    const std::size_t g = k0 < q.K ? k0 / G : q.groups - 1;
    const double s = std::fabs(q.scale(m, g));
    const double ts = t.tscale(n)[blk];
    double xabs = 0;
    for (std::size_t k = k0; k < k0 + S.block_k && k < q.K; ++k) xabs += std::fabs(x[n * ldx + k]);
    const double qmax = S.table_qmax();
    // the bias per unit of sum(x): s |c_mirror - z|, or for min-form formats s c_mirror + |m|
    const double c = S.ternary    ? 0.0
                     : S.min_form ? s * c_mirror + std::fabs(q.zero(m, g))
                                  : s * std::fabs(c_mirror - q.zero(m, g));
    table_err += s * steps * ts * (pws * 0.5 + double(S.high_only_weight_sum()) * 128.0);
    magnitude += s * ts * qmax * steps * pws + c * xabs * (1.0 + double(S.block_k) * 0x1p-23);
  }
  return table_err + magnitude * double(L.blocks() + 16) * 0x1p-22 + 1e-30;
}

}  // namespace lutkit::ref
