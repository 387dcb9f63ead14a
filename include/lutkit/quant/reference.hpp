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

// llama.cpp's CPU product for the same weights: its activations rounded to 8 bits per block of
// `block` along K, then the exact dot with the dequantized weights (ggml's integer block dot
// d_w d_x sum(q_w q_x) is this sum, grouped). block = 32: q8_0 (d = amax / 127 stored as fp16,
// q = round(x / d), as quantize_row_q8_0 does), the activations of Q4_0, Q8_0 and IQ4_NL;
// block = 256: q8_K (a float d), the activations of the K-quants. What lutkit's accuracy is
// compared against (docs/llama_formats.md, "Accuracy").
template <class P>
std::vector<double> gemv_llama_activations(const quantized<P>& q, const float* x, std::size_t N, std::size_t ldx = 0,
                                           std::size_t block = 32) {
  if (ldx == 0) ldx = q.K;
  std::vector<float> xq(N * q.K);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k0 = 0; k0 < q.K; k0 += block) {
      const std::size_t k1 = k0 + block < q.K ? k0 + block : q.K;
      float amax = 0.f;
      for (std::size_t k = k0; k < k1; ++k) amax = std::fmax(amax, std::fabs(x[n * ldx + k]));
      const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
      const float ds = block == 32 ? f16_to_f32(f32_to_f16(d)) : d;
      for (std::size_t k = k0; k < k1; ++k) xq[n * q.K + k] = ds * std::round(x[n * ldx + k] * id);
    }
  return gemv(q, xq.data(), N, q.K);
}

}  // namespace lutkit::ref
