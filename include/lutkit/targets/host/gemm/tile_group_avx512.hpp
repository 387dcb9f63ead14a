// lutkit — the AVX-512 set's tile-group kernels (gemm/tile_group_gemm.hpp): a tile group's codes
// to bf16 / fp32 values, and the int8 decode (tg_int8_args, vpdpbusd).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../../gemm/microkernel.hpp"
#include "isa_avx512.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx512 {

// tile groups: group i's 32 codes (one 256-bit load, shift, mask) -> (c - z) * s as two vectors
// of 16 floats, read-order elements 0..15 and 16..31 (the arithmetic of portable::tg_value)
LUTKIT_AVX512_DQ inline void tg_group_floats(const tg_groups_args& a, std::size_t i, __m256i mask, __m512& lo,
                                             __m512& hi) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.codes[i]));
  const __m256i c = _mm256_and_si256(_mm256_srl_epi16(raw, _mm_cvtsi32_si128(a.shift[i])), mask);
  const __m512 s = _mm512_set1_ps(a.s[i]), z = _mm512_set1_ps(a.z[i]);
  lo = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(c))), z), s);
  hi = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(c, 1))), z), s);
}
// -> bf16, vcvtne2ps2bf16 (round to nearest even): 64 bytes per group
LUTKIT_AVX512_DQ inline void tg_groups_bf16(const tg_groups_args& a) {
  const __m256i mask = _mm256_set1_epi8(char((1u << a.bits) - 1u));
  for (std::size_t i = 0; i < a.n; ++i) {
    __m512 lo, hi;
    tg_group_floats(a, i, mask, lo, hi);
    _mm512_storeu_si512(a.out + 32 * i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}
// -> fp32, the group's k and k + 1 columns deinterleaved into two steps
LUTKIT_AVX512_DQ inline void tg_groups_f32(const tg_groups_args& a, float* out) {
  const __m256i mask = _mm256_set1_epi8(char((1u << a.bits) - 1u));
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (std::size_t i = 0; i < a.n; ++i) {
    __m512 lo, hi;
    tg_group_floats(a, i, mask, lo, hi);
    float* o = out + 128 * (i / 4) + 16 * (i % 4);
    _mm512_storeu_ps(o, _mm512_permutex2var_ps(lo, even, hi));
    _mm512_storeu_ps(o + 64, _mm512_permutex2var_ps(lo, odd, hi));
  }
}

// Tile groups, int8 decode (tg_int8_args): per super-group and k pair one 64-byte load of the 32
// rows' code pairs, one shift, and two masks that keep the even rows' and the odd rows' code pairs
// (a dword holds rows 2 j and 2 j + 1), then per column two vpdpbusd with the broadcast int8
// activation pair: lane j of the two int32 dots is row 2 j's and row 2 j + 1's pair dot (exact),
// converted to fp32 and multiplied-added with the group's s * xa (lanes 0..7 are rows 0..15, the
// first group; 8..15 rows 16..31, the second: one factor vector per k pair and column, A[2 q] in
// lanes 0..7, A[2 q + 1] in 8..15). The accumulators hold the even rows and the odd rows and are
// loaded and stored through that permutation. The zero terms are summed per group (one FMA of 8
// lanes per super-group) and subtracted at the end. Even and odd k pairs accumulate in two chains
// (r, o; added at the end of the call), and the stream is prefetched tg_prefetch_ahead bytes ahead.
// portable::tg_int8 is the same arithmetic in the same order (fma(float(dot), s * xa, acc): the
// same bits). Accumulators are named variables (microkernels_avx512.hpp says why). Faster than the
// vpmaddubsw form it replaced (one int16 dot per row, widened by two unpacks with zero to 2^16 dot
// and multiplied by s * xa * 2^-16 while that stayed normal, else by sign extension), at one
// thread (docs/tile_group.md).
inline constexpr std::size_t tg_prefetch_ahead = 8192;
// B: the code bits where the call's k pairs sit where super_group_map puts them (tg_int8_layout_is:
// constant offsets, and the low codes take no shift), 0 for any layout (the call's qbyte / qshift).
template <int NC, int B>
LUTKIT_AVX512_DQ void tg_int8_b(const tg_int8_args& a) {
  const __m512i mask = _mm512_set1_epi8(char((1u << (B > 0 ? B : a.bits)) - 1u));
  const __m512i mask_e = _mm512_and_si512(mask, _mm512_set1_epi32(0x0000FFFF));
  const __m512i mask_o = _mm512_and_si512(mask, _mm512_set1_epi32(int(0xFFFF0000u)));
  const __m256i pair_idx = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const bool sym = a.zoff[0] < 0;
  const __m256 zsym = _mm256_set1_ps(a.zsym);
  const __m512i zero = _mm512_setzero_si512();
  // rows (the pair of vectors rows 0..15 | 16..31) <-> even rows | odd rows
  const __m512i to_e = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i to_o = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i from_e0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i from_e1 = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
#define LK_TG_ACC(n)                                                                           \
  __m512 r##n##0 = _mm512_setzero_ps(), r##n##1 = r##n##0, o##n##0 = r##n##0, o##n##1 = r##n##0; \
  __m256 z##n = _mm256_setzero_ps();                                                           \
  if constexpr (n < NC) {                                                                      \
    const __m512 t0 = _mm512_loadu_ps(a.acc + 32 * n), t1 = _mm512_loadu_ps(a.acc + 32 * n + 16); \
    r##n##0 = _mm512_permutex2var_ps(t0, to_e, t1);                                            \
    r##n##1 = _mm512_permutex2var_ps(t0, to_o, t1);                                            \
  }
  LK_TG_ACC(0) LK_TG_ACC(1) LK_TG_ACC(2) LK_TG_ACC(3)
#undef LK_TG_ACC
  static_assert(tg_int8_cols == 4, "LK_TG_ACC lists tg_int8_cols columns");
  __m512 AW[4][4];  // column n, k pair q: A[n][2 q] x 8, A[n][2 q + 1] x 8
  const __m512i aw_idx[4] = {
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
      _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3),
      _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5),
      _mm512_setr_epi32(6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)};
  // k pair q of super-group s into accumulators R (r: even pairs, o: odd pairs)
#define LK_TG_COL(n, q, R)                                                                             \
  if constexpr (n < NC) {                                                                              \
    int16_t xw;                                                                                        \
    std::memcpy(&xw, a.xq + std::size_t(n) * a.ldq + 8 * s + std::size_t(2 * (q)), 2);                 \
    const __m512i xv = _mm512_set1_epi16(xw);                                                          \
    const __m512i de = _mm512_dpbusd_epi32(zero, ce, xv), dd = _mm512_dpbusd_epi32(zero, co, xv);      \
    R##n##0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(de), AW[n][q], R##n##0);                              \
    R##n##1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dd), AW[n][q], R##n##1);                              \
  }
#define LK_TG_PAIR(q, R)                                                                                      \
  {                                                                                                           \
    __m512i c;                                                                                                \
    if constexpr (B > 0) {                                                                                    \
      c = _mm512_loadu_si512(p + 64 * (q) % (32 * B));                                                       \
      if constexpr (64 * (q) / (32 * B) != 0) c = _mm512_srli_epi16(c, 64 * (q) / (32 * B) * B);             \
    } else {                                                                                                  \
      c = _mm512_srl_epi16(_mm512_loadu_si512(p + a.qbyte[q]), _mm_cvtsi32_si128(a.qshift[q]));               \
    }                                                                                                         \
    const __m512i ce = _mm512_and_si512(c, mask_e), co = _mm512_and_si512(c, mask_o);                         \
    LK_TG_COL(0, q, R) LK_TG_COL(1, q, R) LK_TG_COL(2, q, R) LK_TG_COL(3, q, R)                               \
  }
  for (std::size_t s = 0; s < a.n_sg; ++s) {
    const uint8_t* p = a.sg + s * a.sg_bytes;
    const __m256 sc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + a.soff[0])));
    const __m256 zz = sym ? zsym : _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + a.zoff[0])));
    const __m256 sz = _mm256_mul_ps(sc, zz);
#define LK_TG_PARAMS(n)                                                                                  \
  if constexpr (n < NC) {                                                                                \
    const __m256 av = _mm256_mul_ps(sc, _mm256_set1_ps(a.xa[std::size_t(n) * a.lda + s / 4]));          \
    AW[n][0] = _mm512_permutexvar_ps(aw_idx[0], _mm512_castps256_ps512(av));                             \
    AW[n][1] = _mm512_permutexvar_ps(aw_idx[1], _mm512_castps256_ps512(av));                             \
    AW[n][2] = _mm512_permutexvar_ps(aw_idx[2], _mm512_castps256_ps512(av));                             \
    AW[n][3] = _mm512_permutexvar_ps(aw_idx[3], _mm512_castps256_ps512(av));                             \
    const __m256 xp = _mm256_permutevar8x32_ps(                                                          \
        _mm256_castps128_ps256(_mm_loadu_ps(a.xp + std::size_t(n) * a.ldp + 4 * s)), pair_idx);         \
    z##n = _mm256_fmadd_ps(sz, xp, z##n);                                                                \
  }
    LK_TG_PARAMS(0) LK_TG_PARAMS(1) LK_TG_PARAMS(2) LK_TG_PARAMS(3)
#undef LK_TG_PARAMS
    _mm_prefetch(reinterpret_cast<const char*>(p) + tg_prefetch_ahead, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p) + tg_prefetch_ahead + 64, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p) + tg_prefetch_ahead + 128, _MM_HINT_T0);
    LK_TG_PAIR(0, r)
    LK_TG_PAIR(1, o)
    LK_TG_PAIR(2, r)
    LK_TG_PAIR(3, o)
  }
#undef LK_TG_PAIR
#undef LK_TG_COL
#define LK_TG_STORE(n)                                                                       \
  if constexpr (n < NC) {                                                                    \
    alignas(32) float z[8];                                                                  \
    _mm256_store_ps(z, z##n);                                                                \
    const float z0 = ((z[0] + z[2]) + z[4]) + z[6], z1 = ((z[1] + z[3]) + z[5]) + z[7];      \
    const __m512 ve = _mm512_add_ps(r##n##0, o##n##0), vo = _mm512_add_ps(r##n##1, o##n##1); \
    const __m512 v0 = _mm512_permutex2var_ps(ve, from_e0, vo);                               \
    const __m512 v1 = _mm512_permutex2var_ps(ve, from_e1, vo);                               \
    _mm512_storeu_ps(a.acc + 32 * n, _mm512_sub_ps(v0, _mm512_set1_ps(z0)));                 \
    _mm512_storeu_ps(a.acc + 32 * n + 16, _mm512_sub_ps(v1, _mm512_set1_ps(z1)));            \
  }
  LK_TG_STORE(0) LK_TG_STORE(1) LK_TG_STORE(2) LK_TG_STORE(3)
#undef LK_TG_STORE
}
template <int NC>
void tg_int8(const tg_int8_args& a) {
  if (tg_int8_layout_is(a, 4)) tg_int8_b<NC, 4>(a);
  else if (tg_int8_layout_is(a, 2)) tg_int8_b<NC, 2>(a);
  else tg_int8_b<NC, 0>(a);
}

}  // namespace lutkit::detail::avx512
#include "../intrinsics_end.hpp"
#endif
