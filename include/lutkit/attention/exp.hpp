// lutkit — the exp policies of the online softmax, scalar forms (the portable kernels use them;
// the SIMD kernels compute the same functions lane-wise). Arguments are always <= 0 (a logit
// minus a running max that includes it) or -inf (a masked key); neither form ever sees NaN from
// -inf - (-inf), which the kernels never compute.
//   poly:  exp(x) = 2^n * P(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2], P a
//          degree-7 polynomial (Taylor terms to r^7/5040, Horner, FMA); x clamped to -104
//          (exp(-104) < the smallest fp32 subnormal), so exp(-inf) = 0.
//   table: [TTS-NPU] §5.2.1's fp16 table (docs/references.md): x is rounded to fp16 and its 15 magnitude bits index a
//          32768-entry table of exp(-|h|) (fp32 entries here: a gather of 32-bit lanes; the
//          table is 128 KiB, L2-resident). -inf and values below -65504 map to 0.
// Errors against std::exp: docs/attention.md, "exp" (measured by the test "attention exp").
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../core/half.hpp"

namespace lutkit::detail {

inline constexpr float exp_clamp = -104.f;
inline constexpr float exp_log2e = 1.44269504088896341f;
inline constexpr float exp_ln2_hi = 0.693359375f;       // 8 significant bits: n * hi exact
inline constexpr float exp_ln2_lo = -2.12194440e-4f;     // ln 2 - hi
// 1/k! for k = 7..2
inline constexpr float exp_c7 = 1.f / 5040.f, exp_c6 = 1.f / 720.f, exp_c5 = 1.f / 120.f, exp_c4 = 1.f / 24.f,
                       exp_c3 = 1.f / 6.f, exp_c2 = 0.5f;

inline float exp_poly(float x) {
  if (std::isnan(x)) return x;  // (a NaN logit: NaN out, without converting NaN to an exponent)
  x = x < exp_clamp ? exp_clamp : x;  // also maps -inf
  const float n = std::nearbyint(x * exp_log2e);
  float r = std::fma(n, -exp_ln2_hi, x);
  r = std::fma(n, -exp_ln2_lo, r);
  float p = exp_c7;
  p = std::fma(p, r, exp_c6);
  p = std::fma(p, r, exp_c5);
  p = std::fma(p, r, exp_c4);
  p = std::fma(p, r, exp_c3);
  p = std::fma(p, r, exp_c2);
  p = std::fma(p, r, 1.f);
  p = std::fma(p, r, 1.f);
  return std::ldexp(p, int(n));
}

// the table: entry i = exp(value of the fp16 code 0x8000 | i), 0 for -inf and NaN codes
inline const float* exp_table() {
  static const std::vector<float> t = [] {
    std::vector<float> v(32768);
    for (uint32_t i = 0; i < 32768; ++i) {
      const float x = f16_to_f32(uint16_t(0x8000u | i));
      v[i] = std::isfinite(x) ? float(std::exp(double(x))) : 0.f;
    }
    return v;
  }();
  return t.data();
}

inline float exp_by_table(const float* table, float x) {
  return table[f32_to_f16(x) & 0x7FFFu];  // x <= 0: the sign bit is the code's top bit
}

// The logit softcap c * tanh(s / c), tanh from the poly exp: tanh|y| = (1 - e) / (1 + e),
// e = exp(-2|y|). Absolute error <= 4 * 2^-24 * c (docs/attention.md).
inline float softcap_apply(float s, float cap) {
  const float y = s / cap;
  const float e = exp_poly(-2.f * std::fabs(y));
  const float t = (1.f - e) / (1.f + e);
  return std::copysign(t, y) * cap;
}

}  // namespace lutkit::detail
