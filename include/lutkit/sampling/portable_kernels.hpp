// lutkit — the plain C++ implementation of the sampling micro-kernel interface: every target's
// fallback and the specification the target kernels are tested against.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "../core/bf16.hpp"
#include "../core/half.hpp"
#include "logits.hpp"
#include "microkernel.hpp"

namespace lutkit {
namespace detail {
namespace portable_sampling {

inline void max_argmax(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st, float* bmax,
                       const void* = nullptr, std::size_t = 0) {
  for (std::size_t b0 = 0; b0 < n; b0 += ar_block) {
    const std::size_t b1 = b0 + ar_block < n ? b0 + ar_block : n;
    float bm = -std::numeric_limits<float>::infinity();
    for (std::size_t i = b0; i < b1; ++i) {
      const float v = x[i];
      if (!(v == v)) continue;  // NaN
      if (v > bm) bm = v;
      if (top2) {
        const float lo = v < st.m1 ? v : st.m1;
        if (lo > st.m2) st.m2 = lo;
      }
      if (v > st.m1) {
        st.m1 = v;
        st.i1 = base + uint32_t(i);
      }
    }
    if (bmax) bmax[b0 / ar_block] = bm;
  }
}

inline float sum_exp(const float* x, std::size_t n, float m, float beta, float* ent, const void*, std::size_t) {
  // 16 partial sums (like a 16-lane vector): each value passes through n / 16 + 4 additions
  float s[16] = {}, t[16] = {};
  for (std::size_t i = 0; i < n; ++i) {
    float d = (x[i] - m) * beta;
    if (!(d >= -200.f)) d = -200.f;  // NaN and -inf: exp underflows to 0
    const float e = std::exp(d);
    s[i % 16] += e;
    t[i % 16] += e * d;
  }
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) {
      s[l] += s[l + w];
      t[l] += t[l + w];
    }
  if (ent) *ent += t[0];
  return s[0];
}

inline float max_sum_exp(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st, float ref,
                         float beta, float* ent, const void*, std::size_t) {
  max_argmax(x, n, base, top2, st, nullptr);
  return sum_exp(x, n, ref, beta, ent, nullptr, 0);
}

inline float gumbel(rng_key key, uint32_t tok) {
  const float u = token_uniform(key, tok);
  return -std::log(-std::log(u));
}

inline void gumbel_argmax(const float* x, std::size_t n, uint32_t base, rng_key key, float beta, float& best_y,
                          uint32_t& best_i) {
  for (std::size_t i = 0; i < n; ++i) {
    const float y = x[i] * beta + gumbel(key, base + uint32_t(i));
    if (y > best_y) {
      best_y = y;
      best_i = base + uint32_t(i);
    }
  }
}

inline void mass_ge(const float* x, std::size_t n, float m, float beta, const float* t, double* mass, float* top) {
  float ms[mass_thresholds] = {};
  for (std::size_t i = 0; i < n; ++i) {
    if (!(x[i] >= t[0])) continue;
    float d = (x[i] - m) * beta;
    if (!(d >= -200.f)) d = -200.f;
    const float e = std::exp(d);
    if (x[i] > *top) *top = x[i];
    for (int j = 0; j < mass_thresholds; ++j)
      if (x[i] >= t[j]) ms[j] += e;
  }
  for (int j = 0; j < mass_thresholds; ++j) mass[j] += double(ms[j]);
}

inline void count_ge(const float* x, std::size_t n, const float* t, uint32_t* count, float* lo, float* hi) {
  if (!t) {
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] > -std::numeric_limits<float>::infinity() && x[i] < *lo) *lo = x[i];
      if (x[i] > *hi) *hi = x[i];
    }
    return;
  }
  for (int j = 0; j < mass_thresholds; ++j) {
    uint32_t c = 0;
    for (std::size_t i = 0; i < n; ++i) c += uint32_t(x[i] >= t[j]);
    count[j] += c;
  }
}

inline std::size_t collect_ge(const float* x, std::size_t n, uint32_t base, float t, uint32_t* idx, float* val) {
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] >= t) {
      idx[c] = base + uint32_t(i);
      val[c++] = x[i];
    }
  return c;
}

inline std::size_t collect_range(const float* v, const uint32_t* ix, std::size_t n, float lo, float hi, float* ov,
                                 uint32_t* oi) {
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (v[i] >= lo && v[i] < hi) {
      const float z = v[i];
      if (ix) oi[c] = ix[i];
      ov[c++] = z;
    }
  return c;
}

inline std::size_t select_ge(const float* x, std::size_t n, float t, float* val, uint8_t* bits) {
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] >= t) {
      bits[i / 8] = uint8_t(bits[i / 8] | (1u << (i % 8)));
      val[c++] = x[i];
    }
  return c;
}

inline float sum_exp_ge(const float* x, std::size_t n, float m, float beta, float t) {
  float s[16] = {};  // (16 partial sums, as sum_exp)
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] >= t) s[i % 16] += std::exp((x[i] - m) * beta);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) s[l] += s[l + w];
  return s[0];
}

inline float sum_exp_bound(const float* x, std::size_t n, float m, float C, const void*, std::size_t) {
  float s[16] = {};  // (16 partial sums, as sum_exp)
  for (std::size_t i = 0; i < n; ++i) s[i % 16] += exp_bound_term(x[i], m, C);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) s[l] += s[l + w];
  return s[0];
}

inline float max_sum_bound(const float* x, std::size_t n, uint32_t base, max_state& st, float* bmax, float& ref,
                           float C, const void*, std::size_t) {
  max_state c;
  max_argmax(x, n, base, false, c, bmax);
  if (!exp_bound_ref_ok(c.m1, ref, C)) ref = c.m1;
  merge_max(st, c);
  return sum_exp_bound(x, n, ref, C, nullptr, 0);
}

inline void decode_bf16(const uint16_t* s, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(s[i]);
}
inline void decode_f16(const uint16_t* s, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = f16_to_f32(s[i]);
}
inline void decode_mxfp8(const uint8_t* codes, const uint8_t* scales, std::size_t n, float* out) {
  static const auto table = [] {
    struct t {
      float v[256];
    } r;
    for (int c = 0; c < 256; ++c) r.v[c] = e4m3_to_f32(uint8_t(c));
    return r;
  }();
  for (std::size_t i = 0; i < n; ++i) out[i] = table.v[codes[i]] * e8m0_to_f32(scales[i / mx_block]);
}

}  // namespace portable_sampling

inline const sampling_kernel_set& portable_sampling_kernels() {
  static const sampling_kernel_set ks{"portable",
                                      portable_sampling::max_argmax,
                                      portable_sampling::sum_exp,
                                      portable_sampling::max_sum_exp,
                                      portable_sampling::gumbel_argmax,
                                      portable_sampling::mass_ge,
                                      portable_sampling::count_ge,
                                      portable_sampling::collect_ge,
                                      portable_sampling::collect_range,
                                      portable_sampling::select_ge,
                                      portable_sampling::sum_exp_ge,
                                      portable_sampling::sum_exp_bound,
                                      portable_sampling::max_sum_bound,
                                      portable_sampling::decode_bf16,
                                      portable_sampling::decode_f16,
                                      portable_sampling::decode_mxfp8};
  return ks;
}

}  // namespace detail
}  // namespace lutkit
