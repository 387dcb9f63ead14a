// lutkit — AVX2 micro-kernels of the sampling family (sampling/microkernel.hpp), for CPUs without
// AVX-512: the same algorithms as targets/host/sampling/sampling_avx512.hpp in 8 lanes — fused max / argmax
// / second max, exp sums (range reduction + degree-6 polynomial, 2^k as two exact exponent
// factors), Gumbel-max with the counter-based hash in vector lanes, selection by lane masks and
// the bf16 / fp16 / MXFP8 decoders. Tails are read by masked loads (vmaskmovps) with the
// lanes past the end filled as the AVX-512 kernels' masked loads fill them. Compiled with function
// target attributes, chosen at run time and registered in sampling/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../../core/bf16.hpp"
#include "../../../core/half.hpp"
#include "../../../sampling/logits.hpp"
#include "../../../sampling/microkernel.hpp"
#include "../avx2_reduce.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX2_SAMPLING 1
#define LUTKIT_AVX2_SMP __attribute__((target("avx2,fma,f16c")))

namespace lutkit::detail::avx2_sampling {

using avx2::hmax8;
using avx2::hmin_u32;
using avx2::hsum8;
using avx2::hsum_i32;

inline bool cpu_supported() { return host_features::avx2(); }

// lanes [0, left) set (left >= 8: all)
LUTKIT_AVX2_SMP inline __m256i tail_mask(std::size_t left) {
  const int l = left >= 8 ? 8 : int(left);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(l), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// x[0, 8) where the mask is set, `fill` elsewhere (no read past the mask)
LUTKIT_AVX2_SMP inline __m256 load_or(const float* x, __m256i k, __m256 fill) {
  return _mm256_blendv_ps(fill, _mm256_maskload_ps(x, k), _mm256_castsi256_ps(k));
}
LUTKIT_AVX2_SMP inline __m256 ninf8() { return _mm256_set1_ps(-__builtin_inff()); }

LUTKIT_AVX2_SMP inline int movemask(__m256 m) { return _mm256_movemask_ps(m); }

// 2^y for y in [-150, 127] (the caller clamps y >= -150: NaN and -inf give 0): y = k + f,
// |f| <= 1/2, 2^f by its Taylor series to degree 6 (the AVX-512 kernel's polynomial), 2^k as
// 2^k1 * 2^k2 (k1 = floor(k / 2), both factors normal): the first product is exact, the second
// rounds once, as vscalefps does (subnormal or 0 below the float range).
LUTKIT_AVX2_SMP inline __m256 exp2_poly(__m256 y) {
  const __m256 k = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(y, k);
  __m256 p = _mm256_set1_ps(1.5403530393381606e-4f);  // ln2^6 / 6!
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443e-3f));  // ln2^5 / 5!
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076284772e-3f));  // ln2^4 / 4!
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108664821580e-2f));  // ln2^3 / 3!
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022650695910071e-1f));  // ln2^2 / 2
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718055994531e-1f));  // ln2
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.f));
  const __m256i ki = _mm256_cvtps_epi32(k);
  const __m256i k1 = _mm256_srai_epi32(ki, 1), k2 = _mm256_sub_epi32(ki, k1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;

// y = (x - m) c in log2 units, clamped at -150 (NaN, first operand of max, also -> -150)
LUTKIT_AVX2_SMP inline __m256 log2_units(__m256 x, __m256 vm, __m256 vc) {
  return _mm256_max_ps(_mm256_mul_ps(_mm256_sub_ps(x, vm), vc), _mm256_set1_ps(-150.f));
}

// log(x) for normal x > 0: x = 2^e m, m in [0.75, 1.5) (the significand 1.f, halved with e + 1
// when 1.f >= 1.5: what vgetmantps / vgetexpps give the AVX-512 kernel), then the same series:
// log(m) = 2 atanh(f / (2 + f)), f = m - 1
LUTKIT_AVX2_SMP inline __m256 log_pos(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i frac = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFF));
  const __m256i big = _mm256_cmpgt_epi32(frac, _mm256_set1_epi32(0x3FFFFF));  // 1.f >= 1.5
  // significand with exponent 0 (1.f) or -1 (1.f / 2)
  const __m256i mbits = _mm256_or_si256(frac, _mm256_sub_epi32(_mm256_set1_epi32(0x3F800000),
                                                               _mm256_and_si256(big, _mm256_set1_epi32(0x00800000))));
  const __m256 m = _mm256_castsi256_ps(mbits);
  const __m256i ei = _mm256_sub_epi32(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)), big);
  const __m256 e = _mm256_cvtepi32_ps(ei);
  const __m256 f = _mm256_sub_ps(m, _mm256_set1_ps(1.f));
  const __m256 s = _mm256_div_ps(f, _mm256_add_ps(f, _mm256_set1_ps(2.f)));
  const __m256 s2 = _mm256_mul_ps(s, s);
  __m256 p = _mm256_set1_ps(2.f / 11.f);
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(2.f / 9.f));
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(2.f / 7.f));
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(2.f / 5.f));
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(2.f / 3.f));
  p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(2.f));
  return _mm256_fmadd_ps(e, _mm256_set1_ps(0.693147180559945309f), _mm256_mul_ps(p, s));
}

LUTKIT_AVX2_SMP inline __m256i hash32(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x7FEB352D));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(int(0x846CA68Bu)));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  return x;
}

LUTKIT_AVX2_SMP inline __m256i iota() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }

// horizontal: the largest value, lowest index among the lanes holding it
LUTKIT_AVX2_SMP inline void reduce_argmax(__m256 vm, __m256i vi, float& m, uint32_t& i) {
  const float best = hmax8(vm);
  const __m256 at = _mm256_cmp_ps(vm, _mm256_set1_ps(best), _CMP_EQ_OQ);
  m = best;
  i = movemask(at) ? hmin_u32(_mm256_blendv_epi8(_mm256_set1_epi32(-1), vi, _mm256_castps_si256(at))) : no_index;
}
// the second largest: the best of every lane's second, and of the lanes' maxima but the winner's
LUTKIT_AVX2_SMP inline float reduce_second(__m256 vm, __m256i vi, __m256 v2, uint32_t winner) {
  const __m256 win = _mm256_castsi256_ps(_mm256_cmpeq_epi32(vi, _mm256_set1_epi32(int(winner))));
  return hmax8(_mm256_max_ps(v2, _mm256_blendv_ps(vm, ninf8(), win)));
}

// the prefetch of [pc, pc + bytes) spread over a loop: at most `step` bytes per iteration
struct prefetcher {
  const char* pc;
  std::size_t done = 0, bytes, step;
  prefetcher(const void* pf, std::size_t pf_bytes, std::size_t n, std::size_t per_iter)
      : pc(static_cast<const char*>(pf)), bytes(pf ? pf_bytes : 0), step(n ? (pf_bytes * per_iter + n - 1) / n : 0) {}
  LUTKIT_AVX2_SMP void run() {
    for (const std::size_t e = std::min(done + step, bytes); done < e; done += 64) _mm_prefetch(pc + done, _MM_HINT_T0);
  }
};

// one vector of the running max / argmax / second max (v: -inf in lanes past the end)
template <bool Top2>
LUTKIT_AVX2_SMP inline void max_lanes(__m256 v, __m256i idx, __m256& vm, __m256i& vi, __m256& v2) {
  const __m256 gt = _mm256_cmp_ps(v, vm, _CMP_GT_OQ);
  if constexpr (Top2) {
    const __m256 vc = _mm256_blendv_ps(ninf8(), v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
    v2 = _mm256_max_ps(v2, _mm256_min_ps(vc, vm));
  }
  vm = _mm256_max_ps(v, vm);  // NaN in v: vm kept
  vi = _mm256_blendv_epi8(vi, idx, _mm256_castps_si256(gt));
}

template <bool Top2>
LUTKIT_AVX2_SMP inline void max_block(const float* x, std::size_t n, uint32_t base, __m256& vm, __m256i& vi,
                                      __m256& v2, __m256& bm, prefetcher& pf) {
  __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(int(base)), iota());
  const __m256i step = _mm256_set1_epi32(8);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if ((i & 31) == 0) pf.run();
    const __m256 v = _mm256_loadu_ps(x + i);
    max_lanes<Top2>(v, idx, vm, vi, v2);
    bm = _mm256_max_ps(v, bm);
    idx = _mm256_add_epi32(idx, step);
  }
  if (i < n) {
    const __m256 v = load_or(x + i, tail_mask(n - i), ninf8());
    max_lanes<Top2>(v, idx, vm, vi, v2);
    bm = _mm256_max_ps(v, bm);
  }
}

// the index of the first x[j] == m (m a value of x)
LUTKIT_AVX2_SMP inline uint32_t find_first(const float* x, std::size_t n, float m) {
  const __m256 vb = _mm256_set1_ps(m);
  for (std::size_t j = 0; j < n; j += 8) {
    const __m256i k = tail_mask(n - j);
    const int eq = movemask(_mm256_and_ps(_mm256_cmp_ps(_mm256_maskload_ps(x + j, k), vb, _CMP_EQ_OQ), _mm256_castsi256_ps(k)));
    if (eq) return uint32_t(j) + uint32_t(__builtin_ctz(unsigned(eq)));
  }
  return no_index;
}

LUTKIT_AVX2_SMP inline void max_argmax(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                       float* bmax, const void* pf, std::size_t pf_bytes) {
  if (bmax && !top2 && !pf) {
    // block maxima only (one max per vector); the index is searched in the block holding a new
    // running maximum, which is rare after the first blocks
    float run = st.m1;
    bool found = false;
    std::size_t at_b = 0;
    for (std::size_t b0 = 0; b0 < n; b0 += ar_block) {
      const std::size_t len = b0 + ar_block < n ? ar_block : n - b0;
      __m256 m0 = ninf8(), m1 = m0, m2 = m0, m3 = m0;
      std::size_t i = 0;
      for (; i + 32 <= len; i += 32) {
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + b0 + i), m0);
        m1 = _mm256_max_ps(_mm256_loadu_ps(x + b0 + i + 8), m1);
        m2 = _mm256_max_ps(_mm256_loadu_ps(x + b0 + i + 16), m2);
        m3 = _mm256_max_ps(_mm256_loadu_ps(x + b0 + i + 24), m3);
      }
      for (; i < len; i += 8) m0 = _mm256_max_ps(load_or(x + b0 + i, tail_mask(len - i), ninf8()), m0);
      const float bm = hmax8(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
      bmax[b0 / ar_block] = bm;
      if (bm > run) {
        run = bm;
        found = true;
        at_b = b0;
      }
    }
    if (found) {
      const std::size_t len = at_b + ar_block < n ? ar_block : n - at_b;
      st.m1 = run;
      st.i1 = base + uint32_t(at_b) + find_first(x + at_b, len, run);
    }
    return;
  }
  prefetcher p(pf, pf_bytes, n, 32);
  __m256 vm = ninf8(), v2 = ninf8();
  __m256i vi = _mm256_set1_epi32(-1);
  const std::size_t blk = bmax ? ar_block : n;
  for (std::size_t b0 = 0; b0 < n; b0 += blk) {
    const std::size_t len = b0 + blk < n ? blk : n - b0;
    __m256 bm = ninf8();
    if (top2)
      max_block<true>(x + b0, len, base + uint32_t(b0), vm, vi, v2, bm, p);
    else
      max_block<false>(x + b0, len, base + uint32_t(b0), vm, vi, v2, bm, p);
    if (bmax) bmax[b0 / ar_block] = hmax8(bm);
  }
  max_state c;
  reduce_argmax(vm, vi, c.m1, c.i1);
  if (c.i1 == no_index) c.m1 = -__builtin_inff();
  if (top2) c.m2 = reduce_second(vm, vi, v2, c.i1);
  merge_max(st, c);
}

// Fused pass over a chunk: the running maximum (as max_argmax) and the sum of exp(beta (x - ref))
// for a reference ref (the caller's running maximum: values above it give terms > 1, which the
// caller rescales; it recomputes the chunk if the maximum exceeds ref by more than 64 / beta).
template <bool Top2, bool Ent>
LUTKIT_AVX2_SMP inline float max_sum_body(const float* x, std::size_t n, uint32_t base, max_state& st, float ref,
                                          float beta, float* ent, prefetcher& pf) {
  __m256 vm = ninf8(), v2 = ninf8();
  __m256i vi = _mm256_set1_epi32(-1);
  __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(int(base)), iota());
  const __m256 vr = _mm256_set1_ps(ref), vc = _mm256_set1_ps(beta * kLog2e);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, t0 = s0, t1 = s0;
  // Without Top2 only the lanes' maxima are tracked; the index is found afterwards, in the rare
  // chunk whose maximum beats the running one (a scan of the chunk in L1).
  auto one = [&](__m256 v, __m256& s, __m256& t) LUTKIT_AVX2_SMP {
    if constexpr (Top2) {
      max_lanes<true>(v, idx, vm, vi, v2);
      idx = _mm256_add_epi32(idx, _mm256_set1_epi32(8));
    } else {
      vm = _mm256_max_ps(v, vm);
    }
    const __m256 y = log2_units(v, vr, vc);
    const __m256 e = exp2_poly(y);
    s = _mm256_add_ps(s, e);
    if constexpr (Ent) t = _mm256_fmadd_ps(e, y, t);
  };
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    pf.run();
    one(_mm256_loadu_ps(x + i), s0, t0);
    one(_mm256_loadu_ps(x + i + 8), s1, t1);
  }
  for (; i < n; i += 8) one(load_or(x + i, tail_mask(n - i), ninf8()), s0, t0);
  max_state c;
  if constexpr (!Top2) {
    c.m1 = hmax8(vm);
    if (c.m1 > st.m1) c.i1 = base + find_first(x, n, c.m1);  // a new maximum (NaN never; ties keep the earlier index)
    if (c.i1 == no_index) c.m1 = -__builtin_inff();
  } else {
    reduce_argmax(vm, vi, c.m1, c.i1);
    if (c.i1 == no_index) c.m1 = -__builtin_inff();
    c.m2 = reduce_second(vm, vi, v2, c.i1);
  }
  merge_max(st, c);
  if constexpr (Ent) *ent += kLn2 * hsum8(_mm256_add_ps(t0, t1));
  return hsum8(_mm256_add_ps(s0, s1));
}

LUTKIT_AVX2_SMP inline float max_sum_exp(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                         float ref, float beta, float* ent, const void* pf, std::size_t pf_bytes) {
  prefetcher p(pf, pf_bytes, n, 16);
  if (top2) return ent ? max_sum_body<true, true>(x, n, base, st, ref, beta, ent, p)
                       : max_sum_body<true, false>(x, n, base, st, ref, beta, ent, p);
  return ent ? max_sum_body<false, true>(x, n, base, st, ref, beta, ent, p)
             : max_sum_body<false, false>(x, n, base, st, ref, beta, ent, p);
}

LUTKIT_AVX2_SMP inline float sum_exp(const float* x, std::size_t n, float m, float beta, float* ent, const void* pf,
                                     std::size_t pf_bytes) {
  const __m256 vm = _mm256_set1_ps(m), vc = _mm256_set1_ps(beta * kLog2e);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, t0 = s0, t1 = s0;
  prefetcher p(pf, pf_bytes, n, 16);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    p.run();
    const __m256 y0 = log2_units(_mm256_loadu_ps(x + i), vm, vc);
    const __m256 y1 = log2_units(_mm256_loadu_ps(x + i + 8), vm, vc);
    const __m256 e0 = exp2_poly(y0), e1 = exp2_poly(y1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
    if (ent) {
      t0 = _mm256_fmadd_ps(e0, y0, t0);
      t1 = _mm256_fmadd_ps(e1, y1, t1);
    }
  }
  for (; i < n; i += 8) {
    const __m256 y = log2_units(load_or(x + i, tail_mask(n - i), ninf8()), vm, vc);
    const __m256 e = exp2_poly(y);
    s0 = _mm256_add_ps(s0, e);
    t0 = _mm256_fmadd_ps(e, y, t0);
  }
  if (ent) *ent += kLn2 * hsum8(_mm256_add_ps(t0, t1));
  return hsum8(_mm256_add_ps(s0, s1));
}

// Gumbel-max. The lanes start at the best (y, index) of the previous chunks; g <= 16.64 for every
// u <= 1 - 2^-24 (and the computed g stays below 17), so a vector whose every lane has
// beta x + 17 <= that lane's running maximum cannot change anything: its hash and logs are
// skipped (exact; most of the vocabulary at low temperatures).
LUTKIT_AVX2_SMP inline void gumbel_argmax(const float* x, std::size_t n, uint32_t base, rng_key key, float beta,
                                          float& best_y, uint32_t& best_i) {
  __m256 vm = _mm256_set1_ps(best_y);
  __m256i vi = _mm256_set1_epi32(int(best_i));
  __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(int(base)), iota());
  const __m256i klo = _mm256_set1_epi32(int(key.lo)), khi = _mm256_set1_epi32(int(key.hi));
  const __m256 vb = _mm256_set1_ps(beta), gmax = _mm256_set1_ps(17.f);
  for (std::size_t i = 0; i < n; i += 8) {
    const __m256 v = i + 8 <= n ? _mm256_loadu_ps(x + i) : load_or(x + i, tail_mask(n - i), ninf8());
    if (movemask(_mm256_cmp_ps(_mm256_fmadd_ps(v, vb, gmax), vm, _CMP_GT_OQ)) == 0) {
      idx = _mm256_add_epi32(idx, _mm256_set1_epi32(8));
      continue;
    }
    __m256i h = _mm256_xor_si256(_mm256_mullo_epi32(idx, _mm256_set1_epi32(int(0x9E3779B9u))), klo);
    h = hash32(_mm256_add_epi32(hash32(h), khi));
    const __m256 u = _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(h, 9)), _mm256_set1_ps(0.5f)),
                                   _mm256_set1_ps(0x1p-23f));
    const __m256 w = _mm256_sub_ps(_mm256_setzero_ps(), log_pos(u));  // -log(u) in (0, 16.7]
    const __m256 g = _mm256_sub_ps(_mm256_setzero_ps(), log_pos(w));
    const __m256 y = _mm256_fmadd_ps(v, vb, g);
    const __m256 gt = _mm256_cmp_ps(y, vm, _CMP_GT_OQ);
    vm = _mm256_max_ps(y, vm);
    vi = _mm256_blendv_epi8(vi, idx, _mm256_castps_si256(gt));
    idx = _mm256_add_epi32(idx, _mm256_set1_epi32(8));
  }
  float m;
  uint32_t bi;
  reduce_argmax(vm, vi, m, bi);
  if (bi != no_index && m > best_y) {
    best_y = m;
    best_i = bi;
  }
}

LUTKIT_AVX2_SMP inline void mass_ge(const float* x, std::size_t n, float m, float beta, const float* t, double* mass,
                                    uint64_t* count) {
  constexpr int J = mass_thresholds;
  __m256 ms[J];
  __m256i cs[J];
  for (int j = 0; j < J; ++j) {
    ms[j] = _mm256_setzero_ps();
    cs[j] = _mm256_setzero_si256();
  }
  const __m256 vm = _mm256_set1_ps(m), vc = _mm256_set1_ps(beta * kLog2e), t0 = _mm256_set1_ps(t[0]);
  for (std::size_t i = 0; i < n; i += 8) {
    const __m256 k = _mm256_castsi256_ps(tail_mask(n - i));
    const __m256 v = _mm256_maskload_ps(x + i, _mm256_castps_si256(k));
    if (movemask(_mm256_and_ps(k, _mm256_cmp_ps(v, t0, _CMP_GE_OQ))) == 0) continue;
    const __m256 e = exp2_poly(log2_units(v, vm, vc));
    for (int j = 0; j < J; ++j) {
      const __m256 g = _mm256_and_ps(k, _mm256_cmp_ps(v, _mm256_broadcast_ss(t + j), _CMP_GE_OQ));
      ms[j] = _mm256_add_ps(ms[j], _mm256_and_ps(g, e));
      cs[j] = _mm256_sub_epi32(cs[j], _mm256_castps_si256(g));  // g lanes are -1
    }
  }
  for (int j = 0; j < J; ++j) {
    mass[j] += double(hsum8(ms[j]));
    count[j] += uint64_t(hsum_i32(cs[j]));
  }
}

LUTKIT_AVX2_SMP inline std::size_t collect_ge(const float* x, std::size_t n, uint32_t base, float t, uint32_t* idx,
                                              float* val) {
  const __m256 vt = _mm256_set1_ps(t);
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, k);
    unsigned ge = unsigned(movemask(_mm256_and_ps(_mm256_castsi256_ps(k), _mm256_cmp_ps(v, vt, _CMP_GE_OQ))));
    // few lanes pass (the selection's threshold keeps a top-k's worth): stored one by one
    while (ge) {
      const unsigned b = unsigned(__builtin_ctz(ge));
      idx[c] = base + uint32_t(i) + b;
      val[c++] = x[i + b];
      ge &= ge - 1;
    }
  }
  return c;
}

LUTKIT_AVX2_SMP inline void decode_bf16(const uint16_t* s, std::size_t n, float* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) out[i] = bf16_to_f32(s[i]);
}
LUTKIT_AVX2_SMP inline void decode_f16(const uint16_t* s, std::size_t n, float* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) out[i] = f16_to_f32(s[i]);
}
// E4M3 -> float by bit arithmetic: normal codes rebias the exponent (7 -> 127) and shift the
// mantissa, subnormals are m * 2^-9, S.1111.111 is NaN; then the exact product with 2^(e - 127)
LUTKIT_AVX2_SMP inline void decode_mxfp8(const uint8_t* codes, const uint8_t* scales, std::size_t n, float* out) {
  const __m256 nan = _mm256_set1_ps(__builtin_nanf(""));
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i)));
    const __m256i mag = _mm256_and_si256(c, _mm256_set1_epi32(0x7F));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24);
    const __m256 normal = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(mag, 20), _mm256_set1_epi32(120 << 23)));
    const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(0x1p-9f));
    const __m256 is_sub = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), mag));
    __m256 v = _mm256_blendv_ps(normal, sub, is_sub);
    v = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(v), sign));
    v = _mm256_blendv_ps(v, nan, _mm256_castsi256_ps(_mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7F))));
    // the 8 values lie in one MX block (i is a multiple of 8, blocks are 32)
    const uint8_t e = scales[i / mx_block];
    float sc;
    if (e == 0xFF) {
      sc = __builtin_nanf("");
    } else {
      const uint32_t bits = e == 0 ? 0x00400000u : uint32_t(e) << 23;
      __builtin_memcpy(&sc, &bits, 4);
    }
    _mm256_storeu_ps(out + i, _mm256_mul_ps(v, _mm256_set1_ps(sc)));
  }
  for (; i < n; ++i) out[i] = mxfp8_decode(codes[i], scales[i / mx_block]);
}

inline const sampling_kernel_set& kernels() {
  static const sampling_kernel_set ks{"avx2", max_argmax, sum_exp, max_sum_exp, gumbel_argmax, mass_ge, collect_ge,
                                      decode_bf16, decode_f16, decode_mxfp8};
  return ks;
}

}  // namespace lutkit::detail::avx2_sampling

#include "../intrinsics_end.hpp"
#endif
