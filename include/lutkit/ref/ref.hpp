// lutkit — scalar references. They accumulate in double and know nothing of the packed layout:
// they read quantized<P> (codes + scales) directly, so a packing or kernel bug cannot hide in
// them. lut_error_bound() gives the provable tolerance of a LUT kernel against gemv().
#pragma once
#include <cmath>
#include <cstddef>
#include <vector>

#include "../quant.hpp"
#include "../tables.hpp"

namespace lutkit::ref {

// M x K dequantized weights, row-major, in double: quantized<P>::weight, i.e.
// format_traits::value's scale * (level(code) - zero) evaluated in double. value() itself is
// the float formula the kernels use; for symmetric formats (codebooks included) the two agree
// after rounding to float, bit for bit (tests/test_formats.cpp).
template <class P>
std::vector<double> dequantize(const quantized<P>& q) {
  std::vector<double> w(q.M * q.K);
  for (std::size_t m = 0; m < q.M; ++m)
    for (std::size_t k = 0; k < q.K; ++k) w[m * q.K + k] = q.weight(m, k);
  return w;
}

// y[n][m] = sum_k W[m][k] * x[n][k], double accumulation; x is N x K row-major (stride ldx).
template <class P>
std::vector<double> gemv(const quantized<P>& q, const float* x, std::size_t N, std::size_t ldx = 0) {
  if (ldx == 0) ldx = q.K;
  std::vector<double> y(N * q.M, 0.0);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t m = 0; m < q.M; ++m) {
      double acc = 0;
      for (std::size_t k = 0; k < q.K; ++k) acc += q.weight(m, k) * double(x[n * ldx + k]);
      y[n * q.M + m] = acc;
    }
  return y;
}

// Float GEMM on dequantized weights: the same contract for any N.
template <class P>
std::vector<double> gemm(const quantized<P>& q, const float* x, std::size_t N, std::size_t ldx = 0) {
  return gemv(q, x, N, ldx);
}

// Bound on |lut_gemv - gemv| for output (n, m): each table entry is off by at most half a table
// step, each lookup is weighted by 2^plane and the weight scale; float32 rounding of the block
// epilogue adds a few ulps of the magnitudes it sums.
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
    const double qmax = S.entry_bits == 8 ? 127.0 : 32767.0;
    const double c = S.ternary ? 0.0 : std::fabs(c_mirror - q.zero(m, g));
    table_err += s * steps * pws * ts * 0.5;
    magnitude += s * (ts * qmax * steps * pws + c * xabs * (1.0 + double(S.block_k) * 0x1p-23));
  }
  return table_err + magnitude * double(L.blocks() + 16) * 0x1p-22 + 1e-30;
}

}  // namespace lutkit::ref
