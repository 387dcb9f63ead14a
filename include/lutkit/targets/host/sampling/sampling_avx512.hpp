// lutkit — AVX-512 micro-kernels of the sampling family (sampling/microkernel.hpp): fused
// max / argmax / second max, exp sums (range reduction + degree-7 polynomial + vscalefps),
// Gumbel-max with the counter-based hash computed in vector lanes, compress-store selection and
// the bf16 / fp16 / MXFP8 decoders. Compiled with function target attributes, chosen at run
// time and registered in sampling/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../../sampling/logits.hpp"
#include "../../../sampling/microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX512_SAMPLING 1
#define LUTKIT_AVX512_SMP __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))

namespace lutkit::detail::avx512_sampling {

inline bool cpu_supported() { return host_features::avx512(); }

LUTKIT_AVX512_SMP inline __mmask16 tail_mask(std::size_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
}

// 2^y for y <= 127 (the caller clamps y >= -150: NaN and -inf give 0): y = k + f, |f| <= 1/2,
// 2^f by its Taylor series to degree 6 (truncation < 1.2e-7 relative, Horner rounding < 2u),
// 2^k by vscalefps (0 below the float range)
LUTKIT_AVX512_SMP inline __m512 exp2_poly(__m512 y) {
  const __m512 k = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(y, k);
  __m512 p = _mm512_set1_ps(1.5403530393381606e-4f);  // ln2^6 / 6!
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));  // ln2^5 / 5!
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));  // ln2^4 / 4!
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));  // ln2^3 / 3!
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));  // ln2^2 / 2
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));  // ln2
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, k);
}
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;

// y = (x - m) c in log2 units, clamped at -150 (NaN, first operand of max, also -> -150)
LUTKIT_AVX512_SMP inline __m512 log2_units(__m512 x, __m512 vm, __m512 vc) {
  return _mm512_max_ps(_mm512_mul_ps(_mm512_sub_ps(x, vm), vc), _mm512_set1_ps(-150.f));
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

// the prefetch of [pc, pc + bytes) spread over a loop: at most `step` bytes per iteration
struct prefetcher {
  const char* pc;
  std::size_t done = 0, bytes, step;
  prefetcher(const void* pf, std::size_t pf_bytes, std::size_t n, std::size_t per_iter)
      : pc(static_cast<const char*>(pf)), bytes(pf ? pf_bytes : 0), step(n ? (pf_bytes * per_iter + n - 1) / n : 0) {}
  LUTKIT_AVX512_SMP void run() {
    for (const std::size_t e = std::min(done + step, bytes); done < e; done += 64) _mm_prefetch(pc + done, _MM_HINT_T0);
  }
};

template <bool Top2>
LUTKIT_AVX512_SMP inline void max_block(const float* x, std::size_t n, uint32_t base, __m512& vm, __m512i& vi,
                                        __m512& v2, __m512& bm, prefetcher& pf) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(int(base)), iota());
  const __m512i step = _mm512_set1_epi32(16);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if ((i & 31) == 0) pf.run();
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

// the index of the first x[j] == m (m a value of x)
LUTKIT_AVX512_SMP inline uint32_t find_first(const float* x, std::size_t n, float m) {
  const __m512 vb = _mm512_set1_ps(m);
  for (std::size_t j = 0; j < n; j += 16) {
    const __mmask16 k = tail_mask(n - j);
    const __mmask16 eq = _mm512_mask_cmp_ps_mask(k, _mm512_maskz_loadu_ps(k, x + j), vb, _CMP_EQ_OQ);
    if (eq) return uint32_t(j) + uint32_t(__builtin_ctz(eq));
  }
  return no_index;
}

LUTKIT_AVX512_SMP inline void max_argmax(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                         float* bmax, const void* pf, std::size_t pf_bytes) {
  if (bmax && !top2 && !pf) {
    // block maxima only (one max per vector); the index is searched in the block holding a new
    // running maximum, which is rare after the first blocks
    float run = st.m1;
    uint32_t at = no_index;
    std::size_t at_b = 0;
    for (std::size_t b0 = 0; b0 < n; b0 += ar_block) {
      const std::size_t len = b0 + ar_block < n ? ar_block : n - b0;
      __m512 m0 = _mm512_set1_ps(-__builtin_inff()), m1 = m0;
      std::size_t i = 0;
      for (; i + 32 <= len; i += 32) {
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + b0 + i), m0);
        m1 = _mm512_max_ps(_mm512_loadu_ps(x + b0 + i + 16), m1);
      }
      for (; i < len; i += 16)
        m0 = _mm512_max_ps(_mm512_mask_loadu_ps(m0, tail_mask(len - i), x + b0 + i), m0);
      const float bm = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
      bmax[b0 / ar_block] = bm;
      if (bm > run) {
        run = bm;
        at = 1;
        at_b = b0;
      }
    }
    if (at != no_index) {
      const std::size_t len = at_b + ar_block < n ? ar_block : n - at_b;
      st.m1 = run;
      st.i1 = base + uint32_t(at_b) + find_first(x + at_b, len, run);
    }
    return;
  }
  prefetcher p(pf, pf_bytes, n, 32);
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 vm = ninf, v2 = ninf;
  __m512i vi = _mm512_set1_epi32(-1);
  const std::size_t blk = bmax ? ar_block : n;
  for (std::size_t b0 = 0; b0 < n; b0 += blk) {
    const std::size_t len = b0 + blk < n ? blk : n - b0;
    __m512 bm = ninf;
    if (top2)
      max_block<true>(x + b0, len, base + uint32_t(b0), vm, vi, v2, bm, p);
    else
      max_block<false>(x + b0, len, base + uint32_t(b0), vm, vi, v2, bm, p);
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

// Fused pass over a chunk: the running maximum (as max_argmax) and the sum of exp(beta (x - ref))
// for a reference ref (the caller's running maximum: values above it give terms > 1, which the
// caller rescales; it recomputes the chunk if the maximum exceeds ref by more than 64 / beta).
template <bool Top2, bool Ent>
LUTKIT_AVX512_SMP inline float max_sum_body(const float* x, std::size_t n, uint32_t base, max_state& st, float ref,
                                            float beta, float* ent, prefetcher& pf) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 vm = ninf, v2 = ninf;
  __m512i vi = _mm512_set1_epi32(-1);
  __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(int(base)), iota());
  const __m512 vr = _mm512_set1_ps(ref), vc = _mm512_set1_ps(beta * kLog2e);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, t0 = s0, t1 = s0;
  // Without Top2 only the lanes' maxima are tracked; the index is found afterwards, in the rare
  // chunk whose maximum beats the running one (a scan of the chunk in L1).
  auto one = [&](__m512 v, __m512& s, __m512& t) LUTKIT_AVX512_SMP {
    if constexpr (Top2) {
      const __mmask16 gt = _mm512_cmp_ps_mask(v, vm, _CMP_GT_OQ);
      const __m512 vc2 = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), ninf, v);
      v2 = _mm512_max_ps(v2, _mm512_min_ps(vc2, vm));
      vi = _mm512_mask_blend_epi32(gt, vi, idx);
      idx = _mm512_add_epi32(idx, _mm512_set1_epi32(16));
    }
    vm = _mm512_max_ps(v, vm);
    const __m512 y = log2_units(v, vr, vc);
    const __m512 e = exp2_poly(y);
    s = _mm512_add_ps(s, e);
    if constexpr (Ent) t = _mm512_fmadd_ps(e, y, t);
  };
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    pf.run();
    one(_mm512_loadu_ps(x + i), s0, t0);
    one(_mm512_loadu_ps(x + i + 16), s1, t1);
  }
  for (; i < n; i += 16) one(_mm512_mask_loadu_ps(ninf, tail_mask(n - i), x + i), s0, t0);
  max_state c;
  if constexpr (!Top2) {
    c.m1 = _mm512_reduce_max_ps(vm);
    if (c.m1 > st.m1) c.i1 = base + find_first(x, n, c.m1);  // a new maximum (NaN never; ties keep the earlier index)
    if (c.i1 == no_index) c.m1 = -__builtin_inff();
  } else {
    reduce_argmax(vm, vi, c.m1, c.i1);
    if (c.i1 == no_index) c.m1 = -__builtin_inff();
  }
  if constexpr (Top2) {
    const __mmask16 win = _mm512_cmp_epi32_mask(vi, _mm512_set1_epi32(int(c.i1)), _MM_CMPINT_EQ);
    c.m2 = _mm512_reduce_max_ps(_mm512_max_ps(v2, _mm512_mask_blend_ps(win, vm, ninf)));
  }
  merge_max(st, c);
  if constexpr (Ent) *ent += kLn2 * _mm512_reduce_add_ps(_mm512_add_ps(t0, t1));
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

LUTKIT_AVX512_SMP inline float max_sum_exp(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                           float ref, float beta, float* ent, const void* pf, std::size_t pf_bytes) {
  prefetcher p(pf, pf_bytes, n, 32);
  if (top2) return ent ? max_sum_body<true, true>(x, n, base, st, ref, beta, ent, p)
                       : max_sum_body<true, false>(x, n, base, st, ref, beta, ent, p);
  return ent ? max_sum_body<false, true>(x, n, base, st, ref, beta, ent, p)
             : max_sum_body<false, false>(x, n, base, st, ref, beta, ent, p);
}

LUTKIT_AVX512_SMP inline float sum_exp(const float* x, std::size_t n, float m, float beta, float* ent, const void* pf,
                                       std::size_t pf_bytes) {
  const __m512 vm = _mm512_set1_ps(m), vc = _mm512_set1_ps(beta * kLog2e);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, t0 = s0, t1 = s0;
  prefetcher p(pf, pf_bytes, n, 32);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    p.run();
    const __m512 y0 = log2_units(_mm512_loadu_ps(x + i), vm, vc);
    const __m512 y1 = log2_units(_mm512_loadu_ps(x + i + 16), vm, vc);
    const __m512 e0 = exp2_poly(y0), e1 = exp2_poly(y1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
    if (ent) {
      t0 = _mm512_fmadd_ps(e0, y0, t0);
      t1 = _mm512_fmadd_ps(e1, y1, t1);
    }
  }
  for (; i < n; i += 16) {
    const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), tail_mask(n - i), x + i);
    const __m512 y = log2_units(v, vm, vc);
    const __m512 e = exp2_poly(y);
    s0 = _mm512_add_ps(s0, e);
    t0 = _mm512_fmadd_ps(e, y, t0);
  }
  if (ent) *ent += kLn2 * _mm512_reduce_add_ps(_mm512_add_ps(t0, t1));
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

// Gumbel-max. The lanes start at the best (y, index) of the previous chunks; g <= 16.64 for every
// u <= 1 - 2^-24 (and the computed g stays below 17), so a vector whose every lane has
// beta x + 17 <= that lane's running maximum cannot change anything: its hash and logs are
// skipped (exact; most of the vocabulary at low temperatures).
LUTKIT_AVX512_SMP inline void gumbel_argmax(const float* x, std::size_t n, uint32_t base, rng_key key, float beta,
                                            float& best_y, uint32_t& best_i) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 vm = _mm512_set1_ps(best_y);
  __m512i vi = _mm512_set1_epi32(int(best_i));
  __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(int(base)), iota());
  const __m512i klo = _mm512_set1_epi32(int(key.lo)), khi = _mm512_set1_epi32(int(key.hi));
  const __m512 vb = _mm512_set1_ps(beta), gmax = _mm512_set1_ps(17.f);
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 v = _mm512_mask_loadu_ps(ninf, k, x + i);
    if (_mm512_cmp_ps_mask(_mm512_fmadd_ps(v, vb, gmax), vm, _CMP_GT_OQ) == 0) {
      idx = _mm512_add_epi32(idx, _mm512_set1_epi32(16));
      continue;
    }
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

LUTKIT_AVX512_SMP inline void mass_ge(const float* x, std::size_t n, float m, float beta, const float* t, double* mass,
                                      uint64_t* count) {
  constexpr int J = mass_thresholds;
  __m512 vt[J], ms[J];
  __m512i cs[J];
  for (int j = 0; j < J; ++j) {
    vt[j] = _mm512_set1_ps(t[j]);
    ms[j] = _mm512_setzero_ps();
    cs[j] = _mm512_setzero_si512();
  }
  const __m512 vm = _mm512_set1_ps(m), vc = _mm512_set1_ps(beta * kLog2e);
  const __m512i one = _mm512_set1_epi32(1);
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    const __mmask16 any = _mm512_mask_cmp_ps_mask(k, v, vt[0], _CMP_GE_OQ);
    if (!any) continue;
    const __m512 e = exp2_poly(log2_units(v, vm, vc));
    for (int j = 0; j < J; ++j) {
      const __mmask16 g = _mm512_mask_cmp_ps_mask(k, v, vt[j], _CMP_GE_OQ);
      ms[j] = _mm512_mask_add_ps(ms[j], g, ms[j], e);
      cs[j] = _mm512_mask_add_epi32(cs[j], g, cs[j], one);
    }
  }
  for (int j = 0; j < J; ++j) {
    mass[j] += double(_mm512_reduce_add_ps(ms[j]));
    count[j] += uint64_t(_mm512_reduce_add_epi32(cs[j]));
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
  static const sampling_kernel_set ks{"avx512", max_argmax, sum_exp, max_sum_exp, gumbel_argmax, mass_ge, collect_ge,
                                      decode_bf16, decode_f16, decode_mxfp8};
  return ks;
}

}  // namespace lutkit::detail::avx512_sampling

#include "../intrinsics_end.hpp"
#endif
