// lutkit — the AVX2 set's tile-group kernels (gemm/tile_group_gemm.hpp): a tile group's codes to
// bf16 / fp32 values, and the int8 decode (tg_int8_args).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../../gemm/microkernel.hpp"
#include "../../../gemm/portable_kernels.hpp"
#include "isa_avx2.hpp"
#include "level2_avx2.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx2 {

// Tile groups to values (tg_groups_args): a group's 32 codes by one load, shift and mask, widened
// 8 at a time to fp32, s * (code - z) as portable::tg_value. bf16: the 32 values in order; fp32:
// the even codes (column k) and the odd ones (k + 1), separated by one vpshufb + vpermq.
LUTKIT_AVX2_DQ inline __m256i tg_group_codes(const tg_groups_args& a, std::size_t i, __m256i mask) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.codes[i]));
  return _mm256_and_si256(_mm256_srl_epi16(raw, _mm_cvtsi32_si128(a.shift[i])), mask);
}
LUTKIT_AVX2_DQ inline __m256 tg_value8(__m128i c8, __m256 s, __m256 z) {
  return _mm256_mul_ps(s, _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(c8)), z));
}
LUTKIT_AVX2_DQ inline void tg_groups_bf16(const tg_groups_args& a) {
  const __m256i mask = _mm256_set1_epi8(char((1u << a.bits) - 1u));
  for (std::size_t i = 0; i < a.n; ++i) {
    const __m256i c = tg_group_codes(a, i, mask);
    const __m256 s = _mm256_set1_ps(a.s[i]), z = _mm256_set1_ps(a.z[i]);
    const __m128i c0 = _mm256_castsi256_si128(c), c1 = _mm256_extracti128_si256(c, 1);
    const __m256i h0 = _mm256_packus_epi32(bf16_of(tg_value8(c0, s, z)), bf16_of(tg_value8(_mm_srli_si128(c0, 8), s, z)));
    const __m256i h1 = _mm256_packus_epi32(bf16_of(tg_value8(c1, s, z)), bf16_of(tg_value8(_mm_srli_si128(c1, 8), s, z)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.out + 32 * i), _mm256_permute4x64_epi64(h0, 0xD8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.out + 32 * i + 16), _mm256_permute4x64_epi64(h1, 0xD8));
  }
}
LUTKIT_AVX2_DQ inline void tg_groups_f32(const tg_groups_args& a, float* out) {
  const __m256i mask = _mm256_set1_epi8(char((1u << a.bits) - 1u));
  // per lane: its 8 even bytes, then its 8 odd ones; vpermq then gives evens 0..15 | odds 0..15
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,  //
                                         0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (std::size_t i = 0; i < a.n; ++i) {
    const __m256i c = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(tg_group_codes(a, i, mask), split), 0xD8);
    const __m256 s = _mm256_set1_ps(a.s[i]), z = _mm256_set1_ps(a.z[i]);
    const __m128i ev = _mm256_castsi256_si128(c), od = _mm256_extracti128_si256(c, 1);
    float* o = out + 128 * (i / 4) + 16 * (i % 4);
    _mm256_storeu_ps(o, tg_value8(ev, s, z));
    _mm256_storeu_ps(o + 8, tg_value8(_mm_srli_si128(ev, 8), s, z));
    _mm256_storeu_ps(o + 64, tg_value8(od, s, z));
    _mm256_storeu_ps(o + 72, tg_value8(_mm_srli_si128(od, 8), s, z));
  }
}

// Tile groups, int8 decode (tg_int8_args): per super-group and k pair two 32-byte loads of the 32
// rows' code pairs (rows 0 .. 15, 16 .. 31), a mask (and a shift unless the pair's codes are the
// low bits), one vpmaddubsw per half with the broadcast int8 activation pair (int16 lane r = row
// r's pair dot, exact for codes of at most 4 bits), widened to fp32 in four 8-row parts and four
// FMAs with the group's s * xa (the two halves are two groups). Even and odd k pairs accumulate in
// two chains, the zero terms per group in one 8-lane FMA per super-group, subtracted at the end:
// portable::tg_int8's arithmetic in its order, the same bits. One column at a time (8 accumulators;
// the call's chunk of super-groups stays in L1 for the next column), the first column prefetching
// the stream 8 KiB ahead. B: the code bits, whose k pairs sit where super_group_map puts them
// (checked by tg_int8 below). WIDE: each int16 dot d widens by one unpack with zero to the int32
// 2^16 d (exact in fp32: |d| < 2^12) and the group factor is s * xa * 2^-16, so the product and
// the FMA are the same as float(d) * (s * xa); exact while s * xa * 2^-16 is a normal float, which
// holds for every activation scale xa of 0 or at least 2^-86 (fp16 scales are at least 2^-24).
// The unpacks leave rows 0..3, 8..11 in one register and 4..7, 12..15 in the next (per half);
// the accumulators are loaded and stored through that permutation. Otherwise the sign-extending
// widening (two vpmovsxwd and an extract per dot). The scales are broadcast from memory (a load,
// not a shuffle), and the low codes take no shift: faster than the runtime-shift, sign-extending
// form (docs/tile_group.md).
template <int NC, int B, bool WIDE>
LUTKIT_AVX2_DQ void tg_int8_b(const tg_int8_args& a) {
  constexpr std::size_t ahead = 8192;
  constexpr int cb = 32 * B;  // code bytes of a super-group
  const __m256i mask = _mm256_set1_epi8(char((1u << B) - 1u));
  const __m256i zero = _mm256_setzero_si256();
  const __m256i pair_idx = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const bool sym = a.zoff[0] < 0;
  const __m256 zsym = _mm256_set1_ps(a.zsym);
  const __m256 unit = _mm256_set1_ps(WIDE ? 0x1p-16f : 1.f);
  alignas(32) float Ab[8];
  for (int n = 0; n < NC; ++n) {
    float* out = a.acc + 32 * n;
    const int8_t* xq = a.xq + std::size_t(n) * a.ldq;
    const float* xa = a.xa + std::size_t(n) * a.lda;
    const float* xp = a.xp + std::size_t(n) * a.ldp;
    __m256 r0 = _mm256_loadu_ps(out), r1 = _mm256_loadu_ps(out + 8), r2 = _mm256_loadu_ps(out + 16),
           r3 = _mm256_loadu_ps(out + 24);
    if constexpr (WIDE) {  // rows 0..3, 8..11 | 4..7, 12..15 | 16..19, 24..27 | 20..23, 28..31
      const __m256 t0 = r0, t2 = r2;
      r0 = _mm256_permute2f128_ps(t0, r1, 0x20);
      r1 = _mm256_permute2f128_ps(t0, r1, 0x31);
      r2 = _mm256_permute2f128_ps(t2, r3, 0x20);
      r3 = _mm256_permute2f128_ps(t2, r3, 0x31);
    }
    __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0, z = o0;
    for (std::size_t s = 0; s < a.n_sg; ++s) {
      const uint8_t* p = a.sg + s * a.sg_bytes;
      if (n == 0) {
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead + 64, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p) + ahead + 128, _MM_HINT_T0);
      }
      const __m256 sc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + a.soff[0])));
      const __m256 zz = sym ? zsym : _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + a.zoff[0])));
      // group g: s_g * xa (times 2^-16 when WIDE: exact, see above)
      _mm256_store_ps(Ab, _mm256_mul_ps(_mm256_mul_ps(sc, _mm256_set1_ps(xa[s / 4])), unit));
      const __m256 xpv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(xp + 4 * s)), pair_idx);
      z = _mm256_fmadd_ps(_mm256_mul_ps(sc, zz), xpv, z);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        constexpr int qb[4] = {64 * 0 % cb, 64 * 1 % cb, 64 * 2 % cb, 64 * 3 % cb};
        int16_t xw;
        __builtin_memcpy(&xw, xq + 8 * s + std::size_t(2 * q), 2);
        const __m256i x = _mm256_set1_epi16(xw);
        __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + qb[q]));
        __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + qb[q] + 32));
        if (64 * q / cb != 0) {  // (a constant after unrolling)
          c0 = _mm256_srli_epi16(c0, 64 * q / cb * B);
          c1 = _mm256_srli_epi16(c1, 64 * q / cb * B);
        }
        const __m256i d0 = _mm256_maddubs_epi16(_mm256_and_si256(c0, mask), x);
        const __m256i d1 = _mm256_maddubs_epi16(_mm256_and_si256(c1, mask), x);
        const __m256 alo = _mm256_broadcast_ss(Ab + 2 * q), ahi = _mm256_broadcast_ss(Ab + 2 * q + 1);
        __m256 f0, f1, f2, f3;
        if constexpr (WIDE) {
          f0 = _mm256_cvtepi32_ps(_mm256_unpacklo_epi16(zero, d0));
          f1 = _mm256_cvtepi32_ps(_mm256_unpackhi_epi16(zero, d0));
          f2 = _mm256_cvtepi32_ps(_mm256_unpacklo_epi16(zero, d1));
          f3 = _mm256_cvtepi32_ps(_mm256_unpackhi_epi16(zero, d1));
        } else {
          f0 = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(d0)));
          f1 = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(d0, 1)));
          f2 = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(d1)));
          f3 = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(d1, 1)));
        }
        if (q % 2 == 0) {
          r0 = _mm256_fmadd_ps(f0, alo, r0);
          r1 = _mm256_fmadd_ps(f1, alo, r1);
          r2 = _mm256_fmadd_ps(f2, ahi, r2);
          r3 = _mm256_fmadd_ps(f3, ahi, r3);
        } else {
          o0 = _mm256_fmadd_ps(f0, alo, o0);
          o1 = _mm256_fmadd_ps(f1, alo, o1);
          o2 = _mm256_fmadd_ps(f2, ahi, o2);
          o3 = _mm256_fmadd_ps(f3, ahi, o3);
        }
      }
    }
    alignas(32) float zl[8];
    _mm256_store_ps(zl, z);
    const __m256 z0 = _mm256_set1_ps(((zl[0] + zl[2]) + zl[4]) + zl[6]);
    const __m256 z1 = _mm256_set1_ps(((zl[1] + zl[3]) + zl[5]) + zl[7]);
    r0 = _mm256_sub_ps(_mm256_add_ps(r0, o0), z0);
    r1 = _mm256_sub_ps(_mm256_add_ps(r1, o1), z0);
    r2 = _mm256_sub_ps(_mm256_add_ps(r2, o2), z1);
    r3 = _mm256_sub_ps(_mm256_add_ps(r3, o3), z1);
    if constexpr (WIDE) {  // back to rows 0..7 | 8..15 | 16..23 | 24..31
      const __m256 t0 = r0, t2 = r2;
      r0 = _mm256_permute2f128_ps(t0, r1, 0x20);
      r1 = _mm256_permute2f128_ps(t0, r1, 0x31);
      r2 = _mm256_permute2f128_ps(t2, r3, 0x20);
      r3 = _mm256_permute2f128_ps(t2, r3, 0x31);
    }
    _mm256_storeu_ps(out, r0);
    _mm256_storeu_ps(out + 8, r1);
    _mm256_storeu_ps(out + 16, r2);
    _mm256_storeu_ps(out + 24, r3);
  }
}
template <int NC>
void tg_int8(const tg_int8_args& a) {
  const bool wide = tg_int8_wide_exact(a, NC);
  if (tg_int8_layout_is(a, 4)) wide ? tg_int8_b<NC, 4, true>(a) : tg_int8_b<NC, 4, false>(a);
  else if (tg_int8_layout_is(a, 2)) wide ? tg_int8_b<NC, 2, true>(a) : tg_int8_b<NC, 2, false>(a);
  else portable::tg_int8<NC>(a);
}

}  // namespace lutkit::detail::avx2
#include "../intrinsics_end.hpp"
#endif
