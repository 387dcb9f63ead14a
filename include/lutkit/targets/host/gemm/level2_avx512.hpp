// lutkit — the AVX-512 set's level 2 (codes -> values of the bf16 / fp32 routes): vpermps / vpermw
// lookups of 16-entry tables, the bf16 tables and lookups straight into the step-major layout
// (vpermt2w), the row-to-step transposition of the values, and the fp16 conversion of the group
// parameters.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "isa_avx512.hpp"
#include "level1_avx512.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx512 {

// level 2 of one scale group, 64 rows: the 16-entry table of a row lives in one register
// (vcvtneps2bf16 rounds to nearest even like f32_to_bf16; the values are never fp32-subnormal)
// (the row's table: sc * (lv - zz), or sc * lv + zz for min-form formats, as portable::group16)
LUTKIT_AVX512_DQ inline __m512 group16_table(__m512 l, __m512 s, __m512 z, bool min_form) {
  return min_form ? _mm512_add_ps(_mm512_mul_ps(s, l), z) : _mm512_mul_ps(s, _mm512_sub_ps(l, z));
}
LUTKIT_AVX512_DQ inline __m512 group16_table(__m512 l, float sc, float zz, bool min_form) {
  return group16_table(l, _mm512_set1_ps(sc), _mm512_set1_ps(zz), min_form);
}
LUTKIT_AVX512_DQ inline void group16_f32(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc,
                                         const float* zz, bool min_form, std::size_t len, float* out, std::size_t ldo) {
  const __m512 l = _mm512_loadu_ps(lv);
  for (int r = 0; r < 64; ++r) {
    const __m512 t = group16_table(l, sc[r], zz[r], min_form);
    const uint8_t* c = codes + r * ldc;
    float* o = out + r * ldo;
    std::size_t i = 0;
    for (; i + 16 <= len; i += 16)
      _mm512_storeu_ps(o + i, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i))), t));
    if (i < len) {
      const __mmask16 m = __mmask16((1u << (len - i)) - 1u);
      _mm512_mask_storeu_ps(o + i, m, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, c + i)), t));
    }
  }
}
LUTKIT_AVX512_DQ inline void group16_bf16(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc,
                                          const float* zz, bool min_form, std::size_t len, uint16_t* out,
                                          std::size_t ldo) {
  const __m512 l = _mm512_loadu_ps(lv);
  for (int r = 0; r < 64; ++r) {
    const __m512 v = group16_table(l, sc[r], zz[r], min_form);
    const __m512i t = _mm512_zextsi256_si512((__m256i)_mm512_cvtneps_pbh(v));
    const uint8_t* c = codes + r * ldc;
    uint16_t* o = out + r * ldo;
    std::size_t i = 0;
    for (; i + 32 <= len; i += 32)
      _mm512_storeu_si512(o + i, _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + i))), t));
    if (i < len) {
      const __mmask32 m = __mmask32((1ull << (len - i)) - 1u);
      _mm512_mask_storeu_epi16(o + i, m, _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, c + i)), t));
    }
  }
}

// Level 2 straight into the bf16 step-major layout of mk_val, from level 1's step-major codes:
// no row-major pass and no transposition (the row-major route, group16_bf16 + rows_to_steps,
// serves the fp32 paradigm and the portable kernels). A group's tables, E entries per row
// (E = the format's code count: 2, 4, 8 or 16), lie end to end, tab[r * E + c], and are read as
// register pairs of 64 entries, so one vpermt2w looks up 64 / E rows. A 16-row output register
// (16 rows x 2 k) takes max(1, E / 4) lookups chained with merge masking: the lanes of a later
// pair keep their index until their pair's lookup writes them. Same values, bit for bit, as
// group16_bf16: the same group16_table arithmetic and the same rounding (vcvtneps2bf16).
template <int E>
LUTKIT_AVX512_DQ void group_tables_bf16(const float* lv, const float* sc, const float* zz, bool min_form,
                                        uint16_t* tab) {
  static_assert(E == 2 || E == 4 || E == 8 || E == 16);
  constexpr int LOG = E == 2 ? 1 : E == 4 ? 2 : E == 8 ? 3 : 4;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  // register z holds entries 16 z + j: row 16 z / E + j / E, code j % E
  const __m512i code = _mm512_and_si512(iota, _mm512_set1_epi32(E - 1));
  const __m512 l = _mm512_permutexvar_ps(code, _mm512_loadu_ps(lv));
  if constexpr (E == 16) {
    // one row per 16 entries: broadcast scale and zero, two rows per conversion and store
    for (int r = 0; r < 64; r += 2)
      _mm512_store_si512(tab + 16 * r, (__m512i)_mm512_cvtne2ps_pbh(group16_table(l, sc[r + 1], zz[r + 1], min_form),
                                                                    group16_table(l, sc[r], zz[r], min_form)));
    return;
  }
  for (int z = 0; z < 4 * E; ++z) {
    const int r0 = 16 * z / E;
    const __m512i row = _mm512_srli_epi32(iota, LOG);  // + r0 % 16 below
    const __m512i ri = _mm512_add_epi32(row, _mm512_set1_epi32(r0 % 16));
    const __m512 s = _mm512_permutexvar_ps(ri, _mm512_loadu_ps(sc + (r0 - r0 % 16)));
    const __m512 zv = _mm512_permutexvar_ps(ri, _mm512_loadu_ps(zz + (r0 - r0 % 16)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(tab + 16 * z),
                       (__m256i)_mm512_cvtneps_pbh(group16_table(l, s, zv, min_form)));
  }
}
// steps4 k4-steps of step-major codes (level 1: codes[s * 256 + 4 r + i]) -> 2 * steps4 steps of
// bf16 pairs (out[step * 64 + r]), with one group's tables
template <int E>
LUTKIT_AVX512_DQ void level2_steps_bf16(const uint8_t* codes, std::size_t steps4, const uint16_t* tab,
                                        uint32_t* out) {
  constexpr int NP = E < 4 ? 1 : E / 4;  // lookups per output register
  constexpr int RPP = 64 / E;            // rows per register pair
  // byte permutation: word w = 2 l + h of the output takes code 4 l + 2 half + h (low byte)
  alignas(64) uint8_t bidx[2][64];
  for (int half = 0; half < 2; ++half)
    for (int b = 0; b < 64; ++b) bidx[half][b] = uint8_t(4 * (b / 4) + 2 * half + (b / 2) % 2);
  const __m512i bi0 = _mm512_load_si512(bidx[0]), bi1 = _mm512_load_si512(bidx[1]);
  const __mmask64 even = 0x5555555555555555ull;
  for (int q = 0; q < 4; ++q) {
    // lane w (row 16 q + w / 2): the row's first entry inside its register pair
    alignas(64) uint16_t off[32];
    for (int w = 0; w < 32; ++w) off[w] = uint16_t(((16 * q + w / 2) * E) % 64);
    const __m512i rowoff = _mm512_load_si512(off);
    const int p0 = 16 * q / RPP;  // first register pair of the quarter
    // (the unroll pragmas: at -O2, GCC 12 kept these arrays in memory; docs/design_measurements.md, "Vectorizer at -O2")
    __m512i ta[NP], tb[NP];
    __mmask32 km[NP];
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) {
      ta[j] = _mm512_load_si512(tab + 64 * (p0 + j));
      tb[j] = _mm512_load_si512(tab + 64 * (p0 + j) + 32);
      km[j] = NP == 1 ? __mmask32(0xFFFFFFFFu) : __mmask32(((1ull << (2 * RPP)) - 1) << (2 * RPP * j));
    }
    for (std::size_t s = 0; s < steps4; ++s) {
      const __m512i c = _mm512_load_si512(codes + s * 256 + 64 * q);
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        __m512i r = _mm512_or_si512(_mm512_maskz_permutexvar_epi8(even, half ? bi1 : bi0, c), rowoff);
#pragma GCC unroll 4
        for (int j = 0; j < NP; ++j) r = _mm512_mask2_permutex2var_epi16(ta[j], r, km[j], tb[j]);
        _mm512_store_si512(out + (2 * s + half) * 64 + 16 * q, r);
      }
    }
  }
}

// The same layout for formats whose levels are their codes and whose tables would outgrow a
// register pair (5 to 8 bits: Q5_0, Q5_1, Q5_K, Q6_K, 8-bit codes): each value computed, bf16 of
// sc * (code - zz) or sc * code + zz (group16_table's arithmetic, then vcvtne2ps2bf16: the bits of
// group_codes<uint16_t>). One group: steps4 k4-steps of step-major codes -> 2 * steps4 pair steps.
LUTKIT_AVX512_DQ inline void level2_codes_steps_bf16(const uint8_t* codes, std::size_t steps4, const float* sc,
                                                     const float* zz, bool min_form, uint32_t* out) {
  // word w = 2 i + j of an output register (row 16 q + i, k 4 s + 2 half + j) takes code byte
  // 4 i + 2 half + j of the quarter's 64; its fp32 half p (words 16 p ..) rows 16 q + 8 p + w / 2
  alignas(64) uint8_t bidx[2][64];
  for (int half = 0; half < 2; ++half)
    for (int b = 0; b < 64; ++b) bidx[half][b] = uint8_t(4 * ((b % 32) / 2) + 2 * half + b % 2);
  const __m512i bi0 = _mm512_load_si512(bidx[0]), bi1 = _mm512_load_si512(bidx[1]);
  const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m512i dup8 = _mm512_add_epi32(dup, _mm512_set1_epi32(8));
  for (int q = 0; q < 4; ++q) {
    const __m512 s16 = _mm512_loadu_ps(sc + 16 * q), z16 = _mm512_loadu_ps(zz + 16 * q);
    const __m512 s0 = _mm512_permutexvar_ps(dup, s16), s1 = _mm512_permutexvar_ps(dup8, s16);
    const __m512 z0 = _mm512_permutexvar_ps(dup, z16), z1 = _mm512_permutexvar_ps(dup8, z16);
    for (std::size_t st = 0; st < steps4; ++st) {
      const __m512i c = _mm512_load_si512(codes + st * 256 + 64 * q);
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const __m512i b = _mm512_permutexvar_epi8(half ? bi1 : bi0, c);
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(b)));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(b, 1)));
        const __m512bh v = _mm512_cvtne2ps_pbh(group16_table(hi, s1, z1, min_form), group16_table(lo, s0, z0, min_form));
        _mm512_store_si512(out + (2 * st + half) * 64 + 16 * q, (__m512i)v);
      }
    }
  }
}

// Row-major 32-bit elements (64 rows, stride ld, len per row) -> step-major [len][64], by
// 16 x 16 transposes
LUTKIT_AVX512_DQ inline void rows_to_steps(const uint32_t* in, std::size_t ld, std::size_t len, uint32_t* out) {
  for (std::size_t j0 = 0; j0 < len; j0 += 16) {
    const std::size_t n = std::min<std::size_t>(16, len - j0);
    const __mmask16 keep = __mmask16((1u << n) - 1u);
    for (int rg = 0; rg < 4; ++rg) {
      __m512i r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) r[i] = _mm512_maskz_loadu_epi32(keep, in + std::size_t(rg * 16 + i) * ld + j0);
      transpose16_epi32(r);
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j)
        if (std::size_t(j) < n) _mm512_storeu_si512(out + (j0 + std::size_t(j)) * 64 + rg * 16, r[j]);
    }
  }
}

// fp16 -> fp32 of n halves
LUTKIT_AVX512_DQ inline void halves_to_float(const uint16_t* h, std::size_t n, float* f) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(f + i, _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
  for (; i < n; ++i) f[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h[i])));
}

}  // namespace lutkit::detail::avx512
#include "../intrinsics_end.hpp"
#endif
