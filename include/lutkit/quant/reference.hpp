// lutkit — the double-precision meaning of a quantized matrix: its dequantized weights and the
// product W x. They know nothing of the packed layout: they read quantized<P> (codes + scales)
// directly, so a packing or kernel bug cannot hide in them. Every kernel family's reference
// (gemv/reference.hpp, gemm/reference.hpp) is built on these.
#pragma once
#include <cmath>
#include <cstddef>
#include <vector>

#include "quant.hpp"

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

}  // namespace lutkit::ref
