// lutkit — the AVX2 set's level 2 (codes -> values of the bf16 / fp32 routes): vpermps / vpshufb
// tables of 16 codes, 8-bit codes widened without a table, the row-to-step transposition of the
// values, and the F16C conversion of the group parameters. Each is the portable kernel's
// arithmetic in its order: the same bits.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../../core/bf16.hpp"
#include "../../../core/half.hpp"
#include "isa_avx2.hpp"
#include "level1_avx2.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx2 {

// A row's 16 level-2 entries in two halves: sc * (lv - zz), or sc * lv + zz for min-form formats,
// as portable::group16 rounds them (the empty asm keeps the product rounded: GCC would otherwise
// contract the multiply and add into an FMA under FMA's target attribute)
LUTKIT_AVX2_DQ inline void group16_table(const __m256 l[2], float sc, float zz, bool min_form, __m256 t[2]) {
  const __m256 s = _mm256_set1_ps(sc), z = _mm256_set1_ps(zz);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    if (min_form) {
      __m256 p = _mm256_mul_ps(s, l[h]);
      __asm__("" : "+x"(p));
      t[h] = _mm256_add_ps(p, z);
    } else {
      t[h] = _mm256_mul_ps(s, _mm256_sub_ps(l[h], z));
    }
  }
}

// level 2 of one scale group into fp32 (group16_f32 of dq_kernel_set): per 8 codes two vpermps of
// the row's table halves, chosen by bit 3 of the code (vblendvps on the code shifted to the sign)
LUTKIT_AVX2_DQ inline void group16_f32(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc,
                                       const float* zz, bool min_form, std::size_t len, float* out, std::size_t ldo) {
  const __m256 l[2] = {_mm256_loadu_ps(lv), _mm256_loadu_ps(lv + 8)};
  for (int r = 0; r < 64; ++r) {
    __m256 t[2];
    group16_table(l, sc[r], zz[r], min_form, t);
    const uint8_t* c = codes + std::size_t(r) * ldc;
    float* o = out + std::size_t(r) * ldo;
    std::size_t i = 0;
    for (; i + 8 <= len; i += 8) {
      const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c + i)));
      _mm256_storeu_ps(o + i, _mm256_blendv_ps(_mm256_permutevar8x32_ps(t[0], idx), _mm256_permutevar8x32_ps(t[1], idx),
                                               _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28))));
    }
    if (i < len) {
      alignas(32) float tb[16];
      _mm256_store_ps(tb, t[0]);
      _mm256_store_ps(tb + 8, t[1]);
      for (; i < len; ++i) o[i] = tb[c[i]];
    }
  }
}

// fp32 -> bf16 in the low half of each 32-bit lane, f32_to_bf16's rounding (nearest even; a NaN
// stays NaN, quiet, sign kept)
LUTKIT_AVX2_DQ inline __m256i bf16_of(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb)), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x0040));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

// level 2 of one scale group into bf16 (group16_bf16 of dq_kernel_set): the row's 16 bf16 entries
// as two 16-byte vpshufb tables, low bytes and high bytes, in both lanes; per 32 codes two vpshufb
// and two byte interleaves (then a lane exchange to restore the code order)
LUTKIT_AVX2_DQ inline void group16_bf16(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc,
                                        const float* zz, bool min_form, std::size_t len, uint16_t* out,
                                        std::size_t ldo) {
  const __m256 l[2] = {_mm256_loadu_ps(lv), _mm256_loadu_ps(lv + 8)};
  // per lane: the 8 entries' low bytes, then their high bytes
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,  //
                                         0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (int r = 0; r < 64; ++r) {
    __m256 t[2];
    group16_table(l, sc[r], zz[r], min_form, t);
    // entries 0 .. 15 as words in order, then lane 0 = entries 0 .. 7, lane 1 = 8 .. 15, split
    const __m256i w = _mm256_shuffle_epi8(
        _mm256_permute4x64_epi64(_mm256_packus_epi32(bf16_of(t[0]), bf16_of(t[1])), 0xD8), split);
    const __m128i w0 = _mm256_castsi256_si128(w), w1 = _mm256_extracti128_si256(w, 1);
    const __m128i lo128 = _mm_unpacklo_epi64(w0, w1), hi128 = _mm_unpackhi_epi64(w0, w1);
    const __m256i tlo = _mm256_broadcastsi128_si256(lo128), thi = _mm256_broadcastsi128_si256(hi128);
    const uint8_t* c = codes + std::size_t(r) * ldc;
    uint16_t* o = out + std::size_t(r) * ldo;
    std::size_t i = 0;
    for (; i + 32 <= len; i += 32) {
      const __m256i cv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + i));
      const __m256i lo = _mm256_shuffle_epi8(tlo, cv), hi = _mm256_shuffle_epi8(thi, cv);
      const __m256i a = _mm256_unpacklo_epi8(lo, hi), b = _mm256_unpackhi_epi8(lo, hi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_permute2x128_si256(a, b, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i + 16), _mm256_permute2x128_si256(a, b, 0x31));
    }
    if (i + 16 <= len) {
      const __m128i cv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i));
      const __m128i lo = _mm_shuffle_epi8(lo128, cv), hi = _mm_shuffle_epi8(hi128, cv);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), _mm_unpacklo_epi8(lo, hi));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i + 8), _mm_unpackhi_epi8(lo, hi));
      i += 16;
    }
    if (i < len) {
      alignas(16) uint8_t blo[16], bhi[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(blo), lo128);
      _mm_store_si128(reinterpret_cast<__m128i*>(bhi), hi128);
      for (; i < len; ++i) o[i] = uint16_t(blo[c[i]] | (bhi[c[i]] << 8));
    }
  }
}

// level 2 of formats whose levels are their codes (8-bit; group_codes_f32 / group_codes_bf16 of
// dq_kernel_set): 8 codes widened to fp32 at a time, portable::group_codes's arithmetic (the
// product kept rounded before the min form's add, as group16_table)
LUTKIT_AVX2_DQ inline __m256 codes_value(__m256 c, __m256 s, __m256 z, bool min_form) {
  if (!min_form) return _mm256_mul_ps(s, _mm256_sub_ps(c, z));
  __m256 p = _mm256_mul_ps(s, c);
  __asm__("" : "+x"(p));
  return _mm256_add_ps(p, z);
}
LUTKIT_AVX2_DQ inline __m256 codes8(const uint8_t* c) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c))));
}
template <class T>
LUTKIT_AVX2_DQ void group_codes(const uint8_t* codes, std::size_t ldc, const float*, const float* sc, const float* zz,
                                bool min_form, std::size_t len, T* out, std::size_t ldo) {
  for (int r = 0; r < 64; ++r) {
    const __m256 s = _mm256_set1_ps(sc[r]), z = _mm256_set1_ps(zz[r]);
    const uint8_t* c = codes + std::size_t(r) * ldc;
    T* o = out + std::size_t(r) * ldo;
    std::size_t i = 0;
    if constexpr (sizeof(T) == 4) {
      for (; i + 8 <= len; i += 8) _mm256_storeu_ps(o + i, codes_value(codes8(c + i), s, z, min_form));
    } else {
      for (; i + 16 <= len; i += 16) {
        const __m256i h = _mm256_packus_epi32(bf16_of(codes_value(codes8(c + i), s, z, min_form)),
                                              bf16_of(codes_value(codes8(c + i + 8), s, z, min_form)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_permute4x64_epi64(h, 0xD8));
      }
    }
    if (i < len) {  // the last codes through the same vector arithmetic
      alignas(32) uint8_t cb[16] = {};
      alignas(32) float v[16];
      for (std::size_t j = i; j < len; ++j) cb[j - i] = c[j];
      _mm256_store_ps(v, codes_value(codes8(cb), s, z, min_form));
      _mm256_store_ps(v + 8, codes_value(codes8(cb + 8), s, z, min_form));
      for (std::size_t j = i; j < len; ++j) {
        if constexpr (sizeof(T) == 4)
          o[j] = v[j - i];
        else
          o[j] = f32_to_bf16(v[j - i]);
      }
    }
  }
}

// Row-major 32-bit elements (64 rows, stride ld, len per row) -> step-major [len][64] (the bf16 /
// fp32 micro-kernels' layout), by 8 x 8 transposes
LUTKIT_AVX2_DQ inline void rows_to_steps(const uint32_t* in, std::size_t ld, std::size_t len, uint32_t* out) {
  std::size_t j0 = 0;
  for (; j0 + 8 <= len; j0 += 8)
    for (int rg = 0; rg < 8; ++rg) {
      __m256i r[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + std::size_t(8 * rg + i) * ld + j0));
      transpose8_epi32(r);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (j0 + std::size_t(j)) * 64 + 8 * rg), r[j]);
    }
  for (; j0 < len; ++j0)
    for (int r = 0; r < 64; ++r) out[j0 * 64 + std::size_t(r)] = in[std::size_t(r) * ld + j0];
}

// fp16 -> fp32 of n halves (the group scales and zeros of every chunk): vcvtph2ps, 8 at a time.
// It quiets signaling NaNs, which portable::halves_to_float (f16_to_f32) keeps: a block of 8 with
// one of them converts by f16_to_f32, so the floats are the portable ones for all 65536 halves.
// (The portable conversion was a hot spot of the Q8_0 int8 decode: docs/benchmarks.md, "On an
// AVX2-only CPU".)
LUTKIT_AVX2_DQ inline void halves_to_float(const uint16_t* h, std::size_t n, float* f) {
  const __m128i expm = _mm_set1_epi16(0x7C00), mant = _mm_set1_epi16(0x03FF), quiet = _mm_set1_epi16(0x0200);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i));
    const __m128i m = _mm_and_si128(v, mant);
    // exponent all ones, mantissa in [1, 0x1FF] (non-zero, quiet bit clear)
    const __m128i snan = _mm_and_si128(_mm_cmpeq_epi16(_mm_and_si128(v, expm), expm),
                                       _mm_and_si128(_mm_cmpgt_epi16(m, _mm_setzero_si128()), _mm_cmpgt_epi16(quiet, m)));
    if (_mm_movemask_epi8(snan)) [[unlikely]] {
      for (std::size_t j = i; j < i + 8; ++j) f[j] = f16_to_f32(h[j]);
    } else {
      _mm256_storeu_ps(f + i, _mm256_cvtph_ps(v));
    }
  }
  for (; i < n; ++i) f[i] = f16_to_f32(h[i]);
}

}  // namespace lutkit::detail::avx2
#include "../intrinsics_end.hpp"
#endif
