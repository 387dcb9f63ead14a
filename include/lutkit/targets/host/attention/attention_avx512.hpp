// lutkit — AVX-512 micro-kernels of the attention family (attention/microkernel.hpp):
//   step: the fp32 online-softmax step of decode (K/V rows converted exactly to fp32 with F16C /
//         shifts, FMA dots, 4 rows x 64 channels value tiles), head dims 64, 128, 256;
//   pack + tile: the prefill over packed bf16 panels, QK^T and P.V by vdpbf16ps with fp32
//         accumulation (6 rows x 64 keys score tiles, 3 rows x 128 channels value tiles),
//         head dims 64, 128, 256.
// Both compute the same softmax update as attention/portable_kernels.hpp with the exp policies of
// attention/exp.hpp evaluated lane-wise (the same operations: same bits per element).
// Compiled with function target attributes, chosen at run time; registered in attention/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "../../../attention/exp.hpp"
#include "../../../attention/portable_kernels.hpp"
#include "../../../attention/microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX512_ATT 1
#define LUTKIT_AVX512_ATT __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,f16c")))

namespace lutkit::detail::avx512_att {

inline bool cpu_supported() { return host_features::avx512_bf16(); }

// ------------------------------------------------------------------ exp, softcap (lane-wise)
LUTKIT_AVX512_ATT inline __m512 exp_poly16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(exp_clamp));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(exp_log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(exp_ln2_hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(exp_ln2_lo), r);
  __m512 p = _mm512_set1_ps(exp_c7);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_c6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_c5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_c4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_c3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(exp_c2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}
LUTKIT_AVX512_ATT inline __m512 exp_table16(const float* table, __m512 x) {
  const __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i idx = _mm512_and_si512(_mm512_cvtepu16_epi32(h), _mm512_set1_epi32(0x7FFF));
  return _mm512_i32gather_ps(idx, table, 4);
}
LUTKIT_AVX512_ATT inline __m512 exp16(exp_kind e, const float* table, __m512 x) {
  return e == exp_kind::table ? exp_table16(table, x) : exp_poly16(x);
}
LUTKIT_AVX512_ATT inline __m512 softcap16(__m512 s, float cap) {
  const __m512 c = _mm512_set1_ps(cap);
  const __m512 y = _mm512_div_ps(s, c);
  const __m512 ay = _mm512_abs_ps(y);
  const __m512 e = exp_poly16(_mm512_mul_ps(_mm512_set1_ps(-2.f), ay));
  const __m512 one = _mm512_set1_ps(1.f);
  __m512 t = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32(int(0x80000000u)));
  t = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
  return _mm512_mul_ps(t, c);
}

// 16 elements of a K/V row as fp32 (exact)
template <kv_type T>
LUTKIT_AVX512_ATT inline __m512 load16(const void* base, std::ptrdiff_t i) {
  if constexpr (T == kv_type::f16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i)));
  } else if constexpr (T == kv_type::bf16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  } else {
    return _mm512_loadu_ps(static_cast<const float*>(base) + i);
  }
}

// Masks, softcap and the online-softmax update of one row's logits s[0, n) (keys k0 .. k0+n-1):
// keys outside [b, e) get -inf. Writes the weights p back to s (fp32, or rounded to bf16 into pb
// when pb != null), returns alpha (1 and p = 0 if no key is visible).
LUTKIT_AVX512_ATT inline float row_softmax(float* s, std::size_t n, int64_t b, int64_t e, int64_t k0, const float* mrow,
                                            std::size_t mask_base, float softcap, exp_kind ek, const float* table,
                                            float& m, float& l, uint16_t* pb) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const bool full = b <= k0 && e >= k0 + int64_t(n);
  __m512 vmax = ninf;
  for (std::size_t j = 0; j < n; j += 16) {
    __m512 x = _mm512_loadu_ps(s + j);
    if (softcap > 0.f) x = softcap16(x, softcap);
    const __m512i kidx = _mm512_add_epi32(iota, _mm512_set1_epi32(int(k0 + int64_t(j))));
    const __mmask16 vis = full ? __mmask16(0xFFFF)
                               : __mmask16(_mm512_cmpge_epi32_mask(kidx, _mm512_set1_epi32(int(b))) &
                                           _mm512_cmplt_epi32_mask(kidx, _mm512_set1_epi32(int(e))));
    if (mrow) x = _mm512_mask_add_ps(x, vis, x, _mm512_maskz_loadu_ps(vis, mrow + mask_base + k0 + int64_t(j) - 0));
    x = _mm512_mask_blend_ps(vis, ninf, x);
    _mm512_storeu_ps(s + j, x);
    vmax = _mm512_max_ps(vmax, x);
  }
  const float cm = _mm512_reduce_max_ps(vmax);
  if (cm == -std::numeric_limits<float>::infinity()) {
    for (std::size_t j = 0; j < n; j += 16) {
      if (pb) _mm256_storeu_si256(reinterpret_cast<__m256i*>(pb + j), _mm256_setzero_si256());
      else _mm512_storeu_ps(s + j, _mm512_setzero_ps());
    }
    return 1.f;
  }
  const float mn = std::max(m, cm);
  const float alpha = m == -std::numeric_limits<float>::infinity()
                          ? 0.f
                          : _mm512_cvtss_f32(exp16(ek, table, _mm512_set1_ps(m - mn)));
  const __m512 vm = _mm512_set1_ps(mn);
  __m512 vs = _mm512_setzero_ps();
  for (std::size_t j = 0; j < n; j += 16) {
    __m512 p = exp16(ek, table, _mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
    if (pb) {
      const __m256bh h = _mm512_cvtneps_pbh(p);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pb + j), (__m256i)h);
      p = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)h), 16));
    } else {
      _mm512_storeu_ps(s + j, p);
    }
    vs = _mm512_add_ps(vs, p);
  }
  l = l * alpha + _mm512_reduce_add_ps(vs);
  m = mn;
  return alpha;
}

// ------------------------------------------------------------------ decode step (fp32)
template <int D, kv_type T>
LUTKIT_AVX512_ATT void step(const att_step_args& a) {
  constexpr int NV = D / 16;
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
  // score stage: keys in groups of 4, rows in groups of 4 (the last group repeats its last row):
  // 16 dot vectors reduced together by a transpose-add (lane i of block b: row b, key i)
  for (std::size_t r0 = 0; r0 < R; r0 += 4) {
    const float* qr[4];
    for (int i = 0; i < 4; ++i) qr[i] = a.rows.q + std::min(r0 + std::size_t(i), R - 1) * D;
    for (std::size_t j = 0; j < n; j += 4) {
      __m512 u[4];
#pragma GCC unroll 4
      for (int jj = 0; jj < 4; ++jj) {
        const std::ptrdiff_t key = B + std::ptrdiff_t(std::min(j + std::size_t(jj), n - 1));
        const std::ptrdiff_t kb = key * rs;
        if (r0 == 0) {
          // memory kept busy through both stages: the score stage fetches this chunk's V rows
          // (16 keys ahead of the K it reads), the value stage the next chunk's K rows
          const char* pv = static_cast<const char*>(a.v) + (kb + PD * rs) * eb;
#pragma GCC unroll 8
          for (int c = 0; c < D * int(eb); c += 64) _mm_prefetch(pv + c, _MM_HINT_T0);
        }
        __m512 x[4];
        {
          const __m512 k0 = load16<T>(a.k, kb);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) x[i] = _mm512_mul_ps(_mm512_loadu_ps(qr[i]), k0);
        }
#pragma GCC unroll 16
        for (int v = 1; v < NV; ++v) {
          const __m512 kv = load16<T>(a.k, kb + 16 * v);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) x[i] = _mm512_fmadd_ps(_mm512_loadu_ps(qr[i] + 16 * v), kv, x[i]);
        }
        // rows (0, 1) and (2, 3) halves, then 128-bit blocks: block b = row b's 4 partial sums
        const __m512 t01 = _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], 0x44), _mm512_shuffle_f32x4(x[0], x[1], 0xEE));
        const __m512 t23 = _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], 0x44), _mm512_shuffle_f32x4(x[2], x[3], 0xEE));
        u[jj] = _mm512_add_ps(_mm512_shuffle_f32x4(t01, t23, 0x88), _mm512_shuffle_f32x4(t01, t23, 0xDD));
      }
      // within each block: 4 keys' 4 partial sums -> [key 0, key 1, key 2, key 3] totals
      const __m512 p = _mm512_add_ps(_mm512_unpacklo_ps(u[0], u[1]), _mm512_unpackhi_ps(u[0], u[1]));
      const __m512 q = _mm512_add_ps(_mm512_unpacklo_ps(u[2], u[3]), _mm512_unpackhi_ps(u[2], u[3]));
      const __m512 res = _mm512_add_ps(_mm512_shuffle_ps(p, q, 0x44), _mm512_shuffle_ps(p, q, 0xEE));
      alignas(64) float tmp[16];
      _mm512_store_ps(tmp, res);
      for (int i = 0; i < 4 && r0 + std::size_t(i) < R; ++i)
        std::memcpy(S + (r0 + std::size_t(i)) * n16 + j, tmp + 4 * i, 16);
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
                                    a.rows.m[r], a.rows.l[r], nullptr);
    if (alpha != 1.f) {
      float* o = a.rows.acc + r * D;
      const __m512 va = _mm512_set1_ps(alpha);
      for (int v = 0; v < NV; ++v) _mm512_storeu_ps(o + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(o + 16 * v), va));
    }
  }
  // value stage: 4 rows x 64 channels of accumulators over the chunk's V rows
  std::size_t r = 0;
  for (; r + 4 <= R; r += 4) {
    for (int c0 = 0; c0 < D; c0 += 64) {
      __m512 acc[4][4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) acc[i][v] = _mm512_loadu_ps(a.rows.acc + (r + i) * D + c0 + 16 * v);
      for (std::size_t j = 0; j < n; ++j) {
        const std::ptrdiff_t vb = (B + std::ptrdiff_t(j)) * rs + c0;
        if (r == 0 && c0 == 0) {
          const char* pk = static_cast<const char*>(a.k) + ((B + std::ptrdiff_t(j + n)) * rs) * eb;
#pragma GCC unroll 8
          for (int c = 0; c < D * int(eb); c += 64) _mm_prefetch(pk + c, _MM_HINT_T0);
        }
        __m512 vv[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) vv[v] = load16<T>(a.v, vb + 16 * v);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m512 p = _mm512_set1_ps(S[(r + i) * n16 + j]);
#pragma GCC unroll 4
          for (int v = 0; v < 4; ++v) acc[i][v] = _mm512_fmadd_ps(p, vv[v], acc[i][v]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) _mm512_storeu_ps(a.rows.acc + (r + i) * D + c0 + 16 * v, acc[i][v]);
    }
  }
  for (; r < R; ++r) {
    for (int c0 = 0; c0 < D; c0 += 64) {
      __m512 acc[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[v] = _mm512_loadu_ps(a.rows.acc + r * D + c0 + 16 * v);
      for (std::size_t j = 0; j < n; ++j) {
        const std::ptrdiff_t vb = (B + std::ptrdiff_t(j)) * rs + c0;
        const __m512 p = _mm512_set1_ps(S[r * n16 + j]);
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) acc[v] = _mm512_fmadd_ps(p, load16<T>(a.v, vb + 16 * v), acc[v]);
      }
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) _mm512_storeu_ps(a.rows.acc + r * D + c0 + 16 * v, acc[v]);
    }
  }
}

template <int D>
LUTKIT_AVX512_ATT void step_d(const att_step_args& a) {
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

// ------------------------------------------------------------------ prefill: packing
// 16 elements of a K/V row as 16 bf16 (round to nearest even)
template <kv_type T>
LUTKIT_AVX512_ATT inline __m256i bf16x16(const void* base, std::ptrdiff_t i) {
  if constexpr (T == kv_type::bf16) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i));
  } else {
    return (__m256i)_mm512_cvtneps_pbh(load16<T>(base, i));
  }
}

template <int D, kv_type T>
LUTKIT_AVX512_ATT void pack(const att_pack_args& a) {
  alignas(64) uint16_t tmp[16 * D];
  const __m512i ilv = _mm512_setr_epi32(0x00100000, 0x00110001, 0x00120002, 0x00130003, 0x00140004, 0x00150005,
                                        0x00160006, 0x00170007, 0x00180008, 0x00190009, 0x001A000A, 0x001B000B,
                                        0x001C000C, 0x001D000D, 0x001E000E, 0x001F000F);
  for (std::size_t k0 = a.k0; k0 < a.k1; k0 += 16) {
    // K: 16 rows to bf16, then the (step, key) word transpose
    for (int j = 0; j < 16; ++j) {
      const std::size_t key = k0 + std::size_t(j);
      for (int c = 0; c < D; c += 16) {
        const __m256i h = key < a.n_kv ? bf16x16<T>(a.k, std::ptrdiff_t(key) * a.row_stride + c) : _mm256_setzero_si256();
        _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + j * D + c), h);
      }
    }
    uint32_t* kp = reinterpret_cast<uint32_t*>(a.kp + (k0 - a.k0) * D);
    const uint32_t* t32 = reinterpret_cast<const uint32_t*>(tmp);
    const __m512i gidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(D / 2));
    for (int s = 0; s < D / 2; ++s)
      _mm512_storeu_si512(kp + s * 16, _mm512_i32gather_epi32(gidx, t32 + s, 4));
    // V: key pairs interleaved per channel
    for (int t = 0; t < 16; t += 2) {
      const std::size_t ka = k0 + std::size_t(t), kb = ka + 1;
      uint16_t* vp = a.vp + (k0 - a.k0 + std::size_t(t)) * D;
      for (int c = 0; c < D; c += 16) {
        const __m256i x = ka < a.n_kv ? bf16x16<T>(a.v, std::ptrdiff_t(ka) * a.row_stride + c) : _mm256_setzero_si256();
        const __m256i y = kb < a.n_kv ? bf16x16<T>(a.v, std::ptrdiff_t(kb) * a.row_stride + c) : _mm256_setzero_si256();
        const __m512i xy = _mm512_inserti64x4(_mm512_castsi256_si512(x), y, 1);
        _mm512_storeu_si512(vp + 2 * c, _mm512_permutexvar_epi16(ilv, xy));
      }
    }
  }
}
template <int D>
LUTKIT_AVX512_ATT void pack_d(const att_pack_args& a) {
  switch (a.type) {
    case kv_type::f16: pack<D, kv_type::f16>(a); break;
    case kv_type::bf16: pack<D, kv_type::bf16>(a); break;
    default: pack<D, kv_type::f32>(a); break;
  }
}
inline void pack_entry(const att_pack_args& a) {
  switch (a.d) {
    case 64: pack_d<64>(a); break;
    case 128: pack_d<128>(a); break;
    default: pack_d<256>(a); break;
  }
}

// ------------------------------------------------------------------ prefill: tiles
// S[NR rows][64 keys] = q . K for keys of the 4 16-key blocks at kp
template <int D, int NR>
LUTKIT_AVX512_ATT inline void qk_tile(const uint16_t* qb, const uint16_t* kp, float* S, std::size_t lds) {
  __m512 c[NR][4];
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) c[i][v] = _mm512_setzero_ps();
  const uint32_t* q32 = reinterpret_cast<const uint32_t*>(qb);
#pragma GCC unroll 2
  for (int s = 0; s < D / 2; ++s) {
    __m512i k[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) k[v] = _mm512_loadu_si512(kp + (v * D / 2 + s) * 32);
#pragma GCC unroll 6
    for (int i = 0; i < NR; ++i) {
      const __m512i qq = _mm512_set1_epi32(int(q32[i * D / 2 + s]));
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) c[i][v] = _mm512_dpbf16_ps(c[i][v], (__m512bh)k[v], (__m512bh)qq);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(S + i * lds + 16 * v, c[i][v]);
}

// acc[NR rows][NV*16 channels from c0] += P . V over the chunk's key pairs
template <int D, int NR, int NV>
LUTKIT_AVX512_ATT inline void pv_tile(const uint16_t* P, std::size_t ldp, const uint16_t* vp, std::size_t pairs,
                                      float* acc, int c0) {
  __m512 c[NR][NV];
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) c[i][v] = _mm512_loadu_ps(acc + i * D + c0 + 16 * v);
  for (std::size_t t = 0; t < pairs; ++t) {
    __m512i w[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) w[v] = _mm512_loadu_si512(vp + t * 2 * D + 2 * (c0 + 16 * v));
#pragma GCC unroll 6
    for (int i = 0; i < NR; ++i) {
      uint32_t pw;
      std::memcpy(&pw, P + i * ldp + 2 * t, 4);
      const __m512i pp = _mm512_set1_epi32(int(pw));
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) c[i][v] = _mm512_dpbf16_ps(c[i][v], (__m512bh)w[v], (__m512bh)pp);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(acc + i * D + c0 + 16 * v, c[i][v]);
}

template <int D, int NR>
LUTKIT_AVX512_ATT inline void qk_rows(const uint16_t* qb, const uint16_t* kp, float* S, std::size_t C, std::size_t R,
                                      std::size_t r0) {
  for (std::size_t kg = 0; kg < C; kg += 64) qk_tile<D, NR>(qb + r0 * D, kp + kg * D, S + r0 * C + kg, C);
  (void)R;
}
template <int D>
LUTKIT_AVX512_ATT void qk_all(const uint16_t* qb, const uint16_t* kp, float* S, std::size_t C, std::size_t R) {
  std::size_t r = 0;
  for (; r + 6 <= R; r += 6) qk_rows<D, 6>(qb, kp, S, C, R, r);
  switch (R - r) {
    case 5: qk_rows<D, 5>(qb, kp, S, C, R, r); break;
    case 4: qk_rows<D, 4>(qb, kp, S, C, R, r); break;
    case 3: qk_rows<D, 3>(qb, kp, S, C, R, r); break;
    case 2: qk_rows<D, 2>(qb, kp, S, C, R, r); break;
    case 1: qk_rows<D, 1>(qb, kp, S, C, R, r); break;
    default: break;
  }
}
template <int D>
LUTKIT_AVX512_ATT void pv_all(const uint16_t* P, std::size_t C, const uint16_t* vp, float* acc, std::size_t R) {
  constexpr int NV = D >= 128 ? 8 : 4;
  constexpr int NRF = D >= 128 ? 3 : 6;
  std::size_t r = 0;
  for (; r + NRF <= R; r += NRF)
    for (int c0 = 0; c0 < D; c0 += NV * 16) pv_tile<D, NRF, NV>(P + r * C, C, vp, C / 2, acc + r * D, c0);
  for (; r < R; ++r)
    for (int c0 = 0; c0 < D; c0 += NV * 16) pv_tile<D, 1, NV>(P + r * C, C, vp, C / 2, acc + r * D, c0);
}

template <int D>
LUTKIT_AVX512_ATT void tile(const att_tile_args& a) {
  const std::size_t R = a.rows.R, C = a.chunk;
  float* S = a.scratch;
  uint16_t* P = reinterpret_cast<uint16_t*>(S + R * C);
  for (std::size_t k0 = a.k0; k0 < a.k1; k0 += C) {
    bool any = false;
    for (std::size_t r = 0; r < R && !any; ++r) {
      int64_t lo, hi;
      visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
      any = std::max<int64_t>(lo, int64_t(k0)) < std::min<int64_t>(hi, int64_t(k0 + C));
    }
    if (!any) continue;  // a block wholly outside the mask: skipped
    const uint16_t* kp = a.kp + (k0 - a.kbase) * D;
    const uint16_t* vp = a.vp + (k0 - a.kbase) * D;
    qk_all<D>(a.qb, kp, S, C, R);
    for (std::size_t r = 0; r < R; ++r) {
      int64_t lo, hi;
      visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
      const float* mrow = a.rows.mask ? a.rows.mask[r] : nullptr;
      const float alpha = row_softmax(S + r * C, C, lo, hi, int64_t(k0), mrow, a.mask_base, a.softcap, a.exp,
                                      a.exp_table, a.rows.m[r], a.rows.l[r], P + r * C);
      if (alpha != 1.f) {
        float* o = a.rows.acc + r * D;
        const __m512 va = _mm512_set1_ps(alpha);
        for (int v = 0; v < D / 16; ++v) _mm512_storeu_ps(o + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(o + 16 * v), va));
      }
    }
    pv_all<D>(P, C, vp, a.rows.acc, R);
  }
}
inline void tile_entry(const att_tile_args& a) {
  switch (a.d) {
    case 64: tile<64>(a); break;
    case 128: tile<128>(a); break;
    default: tile<256>(a); break;
  }
}

inline const att_kernel_set& kernels() {
  static const att_kernel_set ks{"avx512", &dims_supported, &step_entry, &dims_supported, &pack_entry, &tile_entry};
  return ks;
}

}  // namespace lutkit::detail::avx512_att

#include "../intrinsics_end.hpp"
#endif
