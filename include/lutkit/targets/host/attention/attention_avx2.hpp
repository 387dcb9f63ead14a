// lutkit — AVX2 micro-kernel of the attention family (attention/microkernel.hpp): the fp32
// online-softmax step (K/V rows converted exactly to fp32 with F16C / shifts, FMA dots, 4 rows x
// 16 channels value tiles), head dims 64, 128, 256. It serves decode, and prefill on CPUs
// without the AVX-512 packed tile (the driver runs the step over chunks). Same softmax update as
// attention/portable_kernels.hpp with the exp policies of attention/exp.hpp evaluated lane-wise
// (same bits per element; the dot products and sums are ordered by lanes). Compiled with
// function target attributes, chosen at run time; registered in attention/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "../../../attention/exp.hpp"
#include "../../../attention/portable_kernels.hpp"
#include "../../../attention/microkernel.hpp"
#include "../avx2_reduce.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX2_ATT 1
#define LUTKIT_AVX2_ATT __attribute__((target("avx2,fma,f16c")))

namespace lutkit::detail::avx2_att {

using avx2::hmax8;
using avx2::hsum8;

inline bool cpu_supported() { return host_features::avx2(); }

// ------------------------------------------------------------------ exp, softcap (lane-wise)
// 2^n p as std::ldexp: p 2^(n + 64) is exact (n >= -150 after the clamp, so the exponent stays
// normal), the multiply by 2^-64 rounds once, also into the subnormals.
LUTKIT_AVX2_ATT inline __m256 exp_poly8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(exp_clamp));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(exp_log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(exp_ln2_hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(exp_ln2_lo), r);
  __m256 p = _mm256_set1_ps(exp_c7);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_c6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_c5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_c4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_c3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_c2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127 + 64)), 23);
  return _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(0x1p-64f));
}
LUTKIT_AVX2_ATT inline __m256 exp_table8(const float* table, __m256 x) {
  const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i idx = _mm256_and_si256(_mm256_cvtepu16_epi32(h), _mm256_set1_epi32(0x7FFF));
  return _mm256_i32gather_ps(table, idx, 4);
}
LUTKIT_AVX2_ATT inline __m256 exp8(exp_kind e, const float* table, __m256 x) {
  return e == exp_kind::table ? exp_table8(table, x) : exp_poly8(x);
}
LUTKIT_AVX2_ATT inline __m256 softcap8(__m256 s, float cap) {
  const __m256 c = _mm256_set1_ps(cap);
  const __m256 y = _mm256_div_ps(s, c);
  const __m256 sign = _mm256_set1_ps(-0.f);
  const __m256 ay = _mm256_andnot_ps(sign, y);
  const __m256 e = exp_poly8(_mm256_mul_ps(_mm256_set1_ps(-2.f), ay));
  const __m256 one = _mm256_set1_ps(1.f);
  __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  t = _mm256_or_ps(t, _mm256_and_ps(y, sign));
  return _mm256_mul_ps(t, c);
}

// 8 elements of a K/V row as fp32 (exact)
template <kv_type T>
LUTKIT_AVX2_ATT inline __m256 load8(const void* base, std::ptrdiff_t i) {
  if constexpr (T == kv_type::f16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i)));
  } else if constexpr (T == kv_type::bf16) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  } else {
    return _mm256_loadu_ps(static_cast<const float*>(base) + i);
  }
}

// Masks, softcap and the online-softmax update of one row's logits s[0, n) (keys k0 .. k0+n-1, n a
// multiple of 8): keys outside [b, e) get -inf. Writes the weights p back to s, returns alpha (1
// and p = 0 if no key is visible).
LUTKIT_AVX2_ATT inline float row_softmax(float* s, std::size_t n, int64_t b, int64_t e, int64_t k0, const float* mrow,
                                          std::size_t mask_base, float softcap, exp_kind ek, const float* table,
                                          float& m, float& l) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const bool full = b <= k0 && e >= k0 + int64_t(n);
  const __m256i vb = _mm256_set1_epi32(int(b) - 1), ve = _mm256_set1_epi32(int(e));
  __m256 vmax = ninf;
  for (std::size_t j = 0; j < n; j += 8) {
    __m256 x = _mm256_loadu_ps(s + j);
    if (softcap > 0.f) x = softcap8(x, softcap);
    const __m256i kidx = _mm256_add_epi32(iota, _mm256_set1_epi32(int(k0 + int64_t(j))));
    // visible: b <= key < e
    const __m256 vis = full ? _mm256_castsi256_ps(_mm256_set1_epi32(-1))
                            : _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(kidx, vb), _mm256_cmpgt_epi32(ve, kidx)));
    if (mrow) x = _mm256_add_ps(x, _mm256_maskload_ps(mrow + mask_base + k0 + int64_t(j), _mm256_castps_si256(vis)));
    x = _mm256_blendv_ps(ninf, x, vis);
    _mm256_storeu_ps(s + j, x);
    vmax = _mm256_max_ps(vmax, x);
  }
  const float cm = hmax8(vmax);
  if (cm == -std::numeric_limits<float>::infinity()) {
    for (std::size_t j = 0; j < n; j += 8) _mm256_storeu_ps(s + j, _mm256_setzero_ps());
    return 1.f;
  }
  const float mn = std::max(m, cm);
  const float alpha = m == -std::numeric_limits<float>::infinity()
                          ? 0.f
                          : _mm256_cvtss_f32(exp8(ek, table, _mm256_set1_ps(m - mn)));
  const __m256 vm = _mm256_set1_ps(mn);
  __m256 vs = _mm256_setzero_ps();
  for (std::size_t j = 0; j < n; j += 8) {
    const __m256 p = exp8(ek, table, _mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
    _mm256_storeu_ps(s + j, p);
    vs = _mm256_add_ps(vs, p);
  }
  l = l * alpha + hsum8(vs);
  m = mn;
  return alpha;
}

// ------------------------------------------------------------------ decode step (fp32)
template <int D, kv_type T>
LUTKIT_AVX2_ATT void step(const att_step_args& a) {
  constexpr int NV = D / 8;
  const std::size_t R = a.rows.R;
  // the keys any row sees in [k0, k1), rounded out to 16
  int64_t B = int64_t(a.k1), E = int64_t(a.k0);
  for (std::size_t r = 0; r < R; ++r) {
    int64_t lo, hi;
    visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
    lo = std::max<int64_t>(lo, int64_t(a.k0));
    hi = std::min<int64_t>(hi, int64_t(a.k1));
    if (lo < hi) {
      B = std::min(B, lo);
      E = std::max(E, hi);
    }
  }
  if (B >= E) return;
  const std::size_t n = std::size_t(E - B), n16 = (n + 15) / 16 * 16;
  float* S = a.scratch;  // [R][n16]
  const std::ptrdiff_t rs = a.row_stride;
  constexpr std::ptrdiff_t eb = T == kv_type::f32 ? 4 : 2;
  constexpr std::ptrdiff_t PD = 16;
  // score stage: keys in groups of 4 taken two at a time, rows in groups of 4 (the last group
  // repeats its last row): per channel vector, 4 query loads and 2 key conversions feed 8 FMAs
  // into 8 accumulators (one per row and key); per key, the 4 rows' partial sums are reduced by
  // horizontal adds into one 4-lane vector (lane i: row i), and a 4 x 4 transpose turns the 4
  // keys' vectors into rows
  for (std::size_t r0 = 0; r0 < R; r0 += 4) {
    const float* qr[4];
    for (int i = 0; i < 4; ++i) qr[i] = a.rows.q + std::min(r0 + std::size_t(i), R - 1) * D;
    for (std::size_t j = 0; j < n; j += 4) {
      __m128 u[4];
#pragma GCC unroll 2
      for (int jp = 0; jp < 2; ++jp) {
        std::ptrdiff_t kb[2];
        for (int t = 0; t < 2; ++t) {
          const std::ptrdiff_t key = B + std::ptrdiff_t(std::min(j + std::size_t(2 * jp + t), n - 1));
          kb[t] = key * rs;
          if (r0 == 0) {
            // memory kept busy through both stages: the score stage fetches this chunk's V rows
            // (16 keys ahead of the K it reads), the value stage the next chunk's K rows
            const char* pv = static_cast<const char*>(a.v) + (kb[t] + PD * rs) * eb;
#pragma GCC unroll 8
            for (int c = 0; c < D * int(eb); c += 64) _mm_prefetch(pv + c, _MM_HINT_T0);
          }
        }
        __m256 x0[4], x1[4];
        {
          const __m256 ka = load8<T>(a.k, kb[0]), kc = load8<T>(a.k, kb[1]);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) {
            const __m256 q = _mm256_loadu_ps(qr[i]);
            x0[i] = _mm256_mul_ps(q, ka);
            x1[i] = _mm256_mul_ps(q, kc);
          }
        }
#pragma GCC unroll 32
        for (int v = 1; v < NV; ++v) {
          const __m256 ka = load8<T>(a.k, kb[0] + 8 * v), kc = load8<T>(a.k, kb[1] + 8 * v);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) {
            const __m256 q = _mm256_loadu_ps(qr[i] + 8 * v);
            x0[i] = _mm256_fmadd_ps(q, ka, x0[i]);
            x1[i] = _mm256_fmadd_ps(q, kc, x1[i]);
          }
        }
        const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(x0[0], x0[1]), _mm256_hadd_ps(x0[2], x0[3]));
        const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(x1[0], x1[1]), _mm256_hadd_ps(x1[2], x1[3]));
        u[2 * jp] = _mm_add_ps(_mm256_castps256_ps128(h0), _mm256_extractf128_ps(h0, 1));
        u[2 * jp + 1] = _mm_add_ps(_mm256_castps256_ps128(h1), _mm256_extractf128_ps(h1, 1));
      }
      _MM_TRANSPOSE4_PS(u[0], u[1], u[2], u[3]);
      for (int i = 0; i < 4 && r0 + std::size_t(i) < R; ++i) _mm_storeu_ps(S + (r0 + std::size_t(i)) * n16 + j, u[i]);
    }
  }
  // softmax stage (padding lanes j >= n are outside [b, e): -inf, weight 0)
  for (std::size_t r = 0; r < R; ++r) {
    float* s = S + r * n16;
    for (std::size_t j = n; j < n16; ++j) s[j] = 0.f;
    int64_t lo, hi;
    visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
    lo = std::max<int64_t>(lo, B);
    hi = std::min<int64_t>(hi, E);
    const float* mrow = a.rows.mask ? a.rows.mask[r] : nullptr;
    const float alpha = row_softmax(s, n16, lo, hi, B, mrow, a.mask_base, a.softcap, a.exp, a.exp_table,
                                    a.rows.m[r], a.rows.l[r]);
    if (alpha != 1.f) {
      float* o = a.rows.acc + r * D;
      const __m256 va = _mm256_set1_ps(alpha);
      for (int v = 0; v < NV; ++v) _mm256_storeu_ps(o + 8 * v, _mm256_mul_ps(_mm256_loadu_ps(o + 8 * v), va));
    }
  }
  // value stage: 4 rows x 16 channels of accumulators over the chunk's V rows (8 accumulators,
  // 4 weights, 2 value vectors: 14 of the 16 registers)
  std::size_t r = 0;
  for (; r + 4 <= R; r += 4) {
    for (int c0 = 0; c0 < D; c0 += 16) {
      __m256 acc[4][2];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 2
        for (int v = 0; v < 2; ++v) acc[i][v] = _mm256_loadu_ps(a.rows.acc + (r + i) * D + c0 + 8 * v);
      for (std::size_t j = 0; j < n; ++j) {
        const std::ptrdiff_t vb = (B + std::ptrdiff_t(j)) * rs + c0;
        if (r == 0 && c0 == 0) {
          const char* pk = static_cast<const char*>(a.k) + ((B + std::ptrdiff_t(j + n)) * rs) * eb;
#pragma GCC unroll 8
          for (int c = 0; c < D * int(eb); c += 64) _mm_prefetch(pk + c, _MM_HINT_T0);
        }
        const __m256 v0 = load8<T>(a.v, vb), v1 = load8<T>(a.v, vb + 8);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m256 p = _mm256_broadcast_ss(S + (r + i) * n16 + j);
          acc[i][0] = _mm256_fmadd_ps(p, v0, acc[i][0]);
          acc[i][1] = _mm256_fmadd_ps(p, v1, acc[i][1]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 2
        for (int v = 0; v < 2; ++v) _mm256_storeu_ps(a.rows.acc + (r + i) * D + c0 + 8 * v, acc[i][v]);
    }
  }
  for (; r < R; ++r) {
    for (int c0 = 0; c0 < D; c0 += 32) {
      __m256 acc[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[v] = _mm256_loadu_ps(a.rows.acc + r * D + c0 + 8 * v);
      for (std::size_t j = 0; j < n; ++j) {
        const std::ptrdiff_t vb = (B + std::ptrdiff_t(j)) * rs + c0;
        const __m256 p = _mm256_broadcast_ss(S + r * n16 + j);
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) acc[v] = _mm256_fmadd_ps(p, load8<T>(a.v, vb + 8 * v), acc[v]);
      }
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) _mm256_storeu_ps(a.rows.acc + r * D + c0 + 8 * v, acc[v]);
    }
  }
}

template <int D>
LUTKIT_AVX2_ATT void step_d(const att_step_args& a) {
  switch (a.type) {
    case kv_type::f16: step<D, kv_type::f16>(a); break;
    case kv_type::bf16: step<D, kv_type::bf16>(a); break;
    default: step<D, kv_type::f32>(a); break;
  }
}
inline void step_entry(const att_step_args& a) {
  switch (a.d) {
    case 64: step_d<64>(a); break;
    case 128: step_d<128>(a); break;
    default: step_d<256>(a); break;
  }
}
inline bool dims_supported(std::size_t d) { return d == 64 || d == 128 || d == 256; }

inline const att_kernel_set& kernels() {
  static const att_kernel_set ks{"avx2", &dims_supported, &step_entry, nullptr, nullptr, nullptr};
  return ks;
}

}  // namespace lutkit::detail::avx2_att

#include "../intrinsics_end.hpp"
#endif
