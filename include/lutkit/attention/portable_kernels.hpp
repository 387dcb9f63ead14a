// lutkit — the portable attention kernel: the fp32 online-softmax step of attention/microkernel.hpp
// in plain C++, for any head dimension and KV type. Every target's fallback and the specification
// the SIMD kernels are tested against (same operations, same order of the softmax update).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "../core/bf16.hpp"
#include "../core/half.hpp"
#include "exp.hpp"
#include "microkernel.hpp"

namespace lutkit::detail {


inline float att_exp(exp_kind e, const float* table, float x) {
  return e == exp_kind::table ? exp_by_table(table, x) : exp_poly(x);
}

// The online-softmax update of one row from the logits s[0, n) of keys k0 .. k0 + n - 1 (masked
// keys hold -inf): returns false if every logit is -inf (the state is unchanged). On return
// s holds the weights p (rounded by round_p), *alpha the factor the old output must be scaled by.
template <class RoundP>
inline bool softmax_update(float* s, std::size_t n, float& m, float& l, float& alpha, exp_kind e, const float* table,
                           RoundP round_p) {
  float cm = -std::numeric_limits<float>::infinity();
  for (std::size_t j = 0; j < n; ++j) cm = std::max(cm, s[j]);
  if (cm == -std::numeric_limits<float>::infinity()) return false;
  const float mn = std::max(m, cm);  // finite
  alpha = m == -std::numeric_limits<float>::infinity() ? 0.f : att_exp(e, table, m - mn);
  float sum = 0.f;
  for (std::size_t j = 0; j < n; ++j) {
    const float p = round_p(att_exp(e, table, s[j] - mn));  // s[j] = -inf: exp -> 0
    s[j] = p;
    sum += p;
  }
  l = l * alpha + sum;
  m = mn;
  return true;
}

inline void portable_step(const att_step_args& a) {
  const std::size_t d = a.d;
  float* s = a.scratch;
  for (std::size_t r = 0; r < a.rows.R; ++r) {
    int64_t lo, hi;
    visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
    const int64_t b = std::max<int64_t>(lo, int64_t(a.k0)), e = std::min<int64_t>(hi, int64_t(a.k1));
    if (b >= e || a.rows.m[r] != a.rows.m[r]) continue;  // no key, or already NaN
    const float* q = a.rows.q + r * d;
    const float* mrow = a.rows.mask ? a.rows.mask[r] : nullptr;
    const std::size_t n = std::size_t(e - b);
    bool bad = false;  // a non-finite logit (docs/attention.md, "Non-finite values")
    for (std::size_t j = 0; j < n; ++j) {
      const std::ptrdiff_t key = std::ptrdiff_t(b) + std::ptrdiff_t(j);
      // a key the caller masks with -inf is not reached, whatever its logit
      const float mk = mrow ? mrow[a.mask_base + std::size_t(key)] : 0.f;
      if (mk == -std::numeric_limits<float>::infinity()) {
        s[j] = mk;
        continue;
      }
      float acc = 0.f;
      for (std::size_t c = 0; c < d; ++c) acc = std::fma(q[c], kv_load(a.k, a.type, key * a.row_stride + std::ptrdiff_t(c)), acc);
      bad = bad || !std::isfinite(acc);
      if (a.softcap > 0.f) acc = softcap_apply(acc, a.softcap);
      acc += mk;
      bad = bad || acc != acc || acc == std::numeric_limits<float>::infinity();
      s[j] = acc;
    }
    float* o = a.rows.acc + r * d;
    if (bad) {
      a.rows.m[r] = a.rows.l[r] = std::numeric_limits<float>::quiet_NaN();
      for (std::size_t c = 0; c < d; ++c) o[c] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    float alpha = 1.f;
    if (!softmax_update(s, n, a.rows.m[r], a.rows.l[r], alpha, a.exp, a.exp_table, [](float p) { return p; })) continue;
    for (std::size_t c = 0; c < d; ++c) o[c] *= alpha;
    for (std::size_t j = 0; j < n; ++j) {
      const std::ptrdiff_t key = std::ptrdiff_t(b) + std::ptrdiff_t(j);
      // a key masked by -inf is not reached: its V (NaN perhaps) is not read
      if (mrow && mrow[a.mask_base + std::size_t(key)] == -std::numeric_limits<float>::infinity()) continue;
      const float p = s[j];
      for (std::size_t c = 0; c < d; ++c) o[c] = std::fma(p, kv_load(a.v, a.type, key * a.row_stride + std::ptrdiff_t(c)), o[c]);
    }
  }
}

inline bool portable_supports(std::size_t) { return true; }

inline const att_kernel_set& portable_att_kernels() {
  static const att_kernel_set ks{"portable", &portable_supports, &portable_step, nullptr, nullptr, nullptr};
  return ks;
}

}  // namespace lutkit::detail
