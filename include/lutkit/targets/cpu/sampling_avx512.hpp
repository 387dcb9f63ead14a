// lutkit — AVX-512 micro-kernels of the sampling family (sampling/microkernel.hpp): fused
// max / argmax / second max, exp sums (range reduction + degree-7 polynomial + vscalefps),
// Gumbel-max with the counter-based hash computed in vector lanes, compress-store selection and
// the bf16 / fp16 / MXFP8 decoders. Compiled with function target attributes, chosen at run
// time and registered in sampling/targets.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../sampling/logits.hpp"
#include "../../sampling/microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define LUTKIT_HAVE_AVX512_SAMPLING 1
#define LUTKIT_AVX512_SMP __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))

namespace lutkit::detail::avx512_sampling {

inline bool cpu_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

LUTKIT_AVX512_SMP inline __mmask16 tail_mask(std::size_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
}

// exp(d) for d <= 0 (d >= -200 after the clamp): d = n ln2 + r, |r| <= ln2 / 2, Taylor degree 7
// (truncation < 6e-9 relative), 2^n by vscalefps (0 below the float range)
LUTKIT_AVX512_SMP inline __m512 exp_neg(__m512 d) {
  d = _mm512_max_ps(d, _mm512_set1_ps(-200.f));  // NaN (first operand) -> -200
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(d, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), d);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.f / 5040.f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

// log(x) for normal x > 0: x = 2^e m, m in [0.75, 1.5), log(m) = 2 atanh(f / (2 + f)), f = m - 1
LUTKIT_AVX512_SMP inline __m512 log_pos(__m512 x) {
  const __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_zero);
  const __m512 e = _mm512_getexp_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.f / 0.75f)));
  const __m512 f = _mm512_sub_ps(m, _mm512_set1_ps(1.f));
  const __m512 s = _mm512_div_ps(f, _mm512_add_ps(f, _mm512_set1_ps(2.f)));
  const __m512 s2 = _mm512_mul_ps(s, s);
  __m512 p = _mm512_set1_ps(2.f / 11.f);
  p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(2.f / 9.f));
  p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(2.f / 7.f));
  p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(2.f / 5.f));
  p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(2.f / 3.f));
  p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(2.f));
  return _mm512_fmadd_ps(e, _mm512_set1_ps(0.693147180559945309f), _mm512_mul_ps(p, s));
}

LUTKIT_AVX512_SMP inline __m512i hash32(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x7FEB352D));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(int(0x846CA68Bu)));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  return x;
}

LUTKIT_AVX512_SMP inline __m512i iota() {
  return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// horizontal: the largest value, lowest index among the lanes holding it
LUTKIT_AVX512_SMP inline void reduce_argmax(__m512 vm, __m512i vi, float& m, uint32_t& i) {
  const float best = _mm512_reduce_max_ps(vm);
  const __mmask16 at = _mm512_cmp_ps_mask(vm, _mm512_set1_ps(best), _CMP_EQ_OQ);
  m = best;
  i = at ? uint32_t(_mm512_mask_reduce_min_epu32(at, vi)) : no_index;
}

template <bool Top2>
LUTKIT_AVX512_SMP inline void max_block(const float* x, std::size_t n, uint32_t base, __m512& vm, __m512i& vi,
                                        __m512& v2, __m512& bm) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(int(base)), iota());
  const __m512i step = _mm512_set1_epi32(16);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __mmask16 gt = _mm512_cmp_ps_mask(v, vm, _CMP_GT_OQ);
    if constexpr (Top2) {
      const __m512 vc = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), ninf, v);
      v2 = _mm512_max_ps(v2, _mm512_min_ps(vc, vm));
    }
    vm = _mm512_max_ps(v, vm);  // NaN in v: vm kept
    bm = _mm512_max_ps(v, bm);
    vi = _mm512_mask_blend_epi32(gt, vi, idx);
    idx = _mm512_add_epi32(idx, step);
  }
  if (i < n) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 v = _mm512_mask_loadu_ps(ninf, k, x + i);
    const __mmask16 gt = _mm512_cmp_ps_mask(v, vm, _CMP_GT_OQ);
    if constexpr (Top2) {
      const __m512 vc = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), ninf, v);
      v2 = _mm512_max_ps(v2, _mm512_min_ps(vc, vm));
    }
    vm = _mm512_max_ps(v, vm);
    bm = _mm512_max_ps(v, bm);
    vi = _mm512_mask_blend_epi32(gt, vi, idx);
  }
}

LUTKIT_AVX512_SMP inline void max_argmax(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                         float* bmax) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 vm = ninf, v2 = ninf;
  __m512i vi = _mm512_set1_epi32(-1);
  const std::size_t blk = bmax ? ar_block : n;
  for (std::size_t b0 = 0; b0 < n; b0 += blk) {
    const std::size_t len = b0 + blk < n ? blk : n - b0;
    __m512 bm = ninf;
    if (top2)
      max_block<true>(x + b0, len, base + uint32_t(b0), vm, vi, v2, bm);
    else
      max_block<false>(x + b0, len, base + uint32_t(b0), vm, vi, v2, bm);
    if (bmax) bmax[b0 / ar_block] = _mm512_reduce_max_ps(bm);
  }
  max_state c;
  reduce_argmax(vm, vi, c.m1, c.i1);
  if (c.i1 == no_index) c.m1 = -__builtin_inff();
  if (top2) {
    // second largest: the best of every lane's second, and of the lanes' maxima but the winner's
    const __mmask16 win = _mm512_cmp_epi32_mask(vi, _mm512_set1_epi32(int(c.i1)), _MM_CMPINT_EQ);
    const __m512 others = _mm512_mask_blend_ps(win, vm, ninf);
    c.m2 = _mm512_reduce_max_ps(_mm512_max_ps(v2, others));
  }
  merge_max(st, c);
}

LUTKIT_AVX512_SMP inline float sum_exp(const float* x, std::size_t n, float m, float beta, float* ent) {
  const __m512 vm = _mm512_set1_ps(m), vb = _mm512_set1_ps(beta);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, t0 = s0, t1 = s0;
  std::size_t i = 0;
  if (ent) {
    for (; i + 32 <= n; i += 32) {
      __m512 d0 = _mm512_max_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vb), _mm512_set1_ps(-200.f));
      __m512 d1 = _mm512_max_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm), vb), _mm512_set1_ps(-200.f));
      const __m512 e0 = exp_neg(d0), e1 = exp_neg(d1);
      s0 = _mm512_add_ps(s0, e0);
      s1 = _mm512_add_ps(s1, e1);
      t0 = _mm512_fmadd_ps(e0, d0, t0);
      t1 = _mm512_fmadd_ps(e1, d1, t1);
    }
  } else {
    for (; i + 32 <= n; i += 32) {
      s0 = _mm512_add_ps(s0, exp_neg(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm), vb)));
      s1 = _mm512_add_ps(s1, exp_neg(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm), vb)));
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), k, x + i);
    const __m512 d = _mm512_max_ps(_mm512_mul_ps(_mm512_sub_ps(v, vm), vb), _mm512_set1_ps(-200.f));
    const __m512 e = exp_neg(d);
    s0 = _mm512_add_ps(s0, e);
    t0 = _mm512_fmadd_ps(e, d, t0);
  }
  if (ent) *ent += _mm512_reduce_add_ps(_mm512_add_ps(t0, t1));
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

LUTKIT_AVX512_SMP inline void gumbel_argmax(const float* x, std::size_t n, uint32_t base, rng_key key, float beta,
                                            float& best_y, uint32_t& best_i) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 vm = ninf;
  __m512i vi = _mm512_set1_epi32(-1);
  __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(int(base)), iota());
  const __m512i klo = _mm512_set1_epi32(int(key.lo)), khi = _mm512_set1_epi32(int(key.hi));
  const __m512 vb = _mm512_set1_ps(beta);
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 v = _mm512_mask_loadu_ps(ninf, k, x + i);
    __m512i h = _mm512_xor_si512(_mm512_mullo_epi32(idx, _mm512_set1_epi32(int(0x9E3779B9u))), klo);
    h = hash32(_mm512_add_epi32(hash32(h), khi));
    const __m512 u = _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(h, 9)), _mm512_set1_ps(0.5f)),
                                   _mm512_set1_ps(0x1p-23f));
    const __m512 w = _mm512_sub_ps(_mm512_setzero_ps(), log_pos(u));  // -log(u) in (0, 16.7]
    const __m512 g = _mm512_sub_ps(_mm512_setzero_ps(), log_pos(w));
    const __m512 y = _mm512_fmadd_ps(v, vb, g);
    const __mmask16 gt = _mm512_cmp_ps_mask(y, vm, _CMP_GT_OQ);
    vm = _mm512_max_ps(y, vm);
    vi = _mm512_mask_blend_epi32(gt, vi, idx);
    idx = _mm512_add_epi32(idx, _mm512_set1_epi32(16));
  }
  float m;
  uint32_t bi;
  reduce_argmax(vm, vi, m, bi);
  if (bi != no_index && m > best_y) {
    best_y = m;
    best_i = bi;
  }
}

LUTKIT_AVX512_SMP inline std::size_t collect_ge(const float* x, std::size_t n, uint32_t base, float t, uint32_t* idx,
                                                float* val) {
  const __m512 vt = _mm512_set1_ps(t);
  __m512i ix = _mm512_add_epi32(_mm512_set1_epi32(int(base)), iota());
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    const __mmask16 ge = _mm512_mask_cmp_ps_mask(k, v, vt, _CMP_GE_OQ);
    if (ge) {
      _mm512_mask_compressstoreu_ps(val + c, ge, v);
      _mm512_mask_compressstoreu_epi32(idx + c, ge, ix);
      c += std::size_t(__builtin_popcount(ge));
    }
    ix = _mm512_add_epi32(ix, _mm512_set1_epi32(16));
  }
  return c;
}

LUTKIT_AVX512_SMP inline void decode_bf16(const uint16_t* s, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, s + i));
    _mm512_mask_storeu_ps(out + i, k, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}
LUTKIT_AVX512_SMP inline void decode_f16(const uint16_t* s, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, k, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, s + i)));
  }
}
// E4M3 -> float by bit arithmetic: normal codes rebias the exponent (7 -> 127) and shift the
// mantissa, subnormals are m * 2^-9, S.1111.111 is NaN; then the exact product with 2^(e - 127)
LUTKIT_AVX512_SMP inline void decode_mxfp8(const uint8_t* codes, const uint8_t* scales, std::size_t n, float* out) {
  const __m512 nan = _mm512_set1_ps(__builtin_nanf(""));
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512i c = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, codes + i));
    const __m512i mag = _mm512_and_si512(c, _mm512_set1_epi32(0x7F));
    const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(c, _mm512_set1_epi32(0x80)), 24);
    const __m512 normal = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(mag, 20), _mm512_set1_epi32(120 << 23)));
    const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_set1_ps(0x1p-9f));
    const __mmask16 is_sub = _mm512_cmp_epi32_mask(mag, _mm512_set1_epi32(8), _MM_CMPINT_LT);
    __m512 v = _mm512_mask_blend_ps(is_sub, normal, sub);
    v = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(v), sign));
    v = _mm512_mask_blend_ps(_mm512_cmp_epi32_mask(mag, _mm512_set1_epi32(0x7F), _MM_CMPINT_EQ), v, nan);
    // the 16 values lie in one MX block (i is a multiple of 16, blocks are 32)
    const uint8_t e = scales[i / mx_block];
    float sc;
    if (e == 0xFF) {
      sc = __builtin_nanf("");
    } else {
      const uint32_t bits = e == 0 ? 0x00400000u : uint32_t(e) << 23;
      __builtin_memcpy(&sc, &bits, 4);
    }
    _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(v, _mm512_set1_ps(sc)));
  }
}

inline const sampling_kernel_set& kernels() {
  static const sampling_kernel_set ks{"avx512", max_argmax, sum_exp, gumbel_argmax, collect_ge,
                                      decode_bf16, decode_f16, decode_mxfp8};
  return ks;
}

}  // namespace lutkit::detail::avx512_sampling

#pragma GCC diagnostic pop
#endif
