// lutkit — the packer's micro-kernel on AVX-512 + GFNI: the bit planes of a row pair's 64 codes.
// One GF2P8AFFINEQB per row turns 8 codes (a qword) into their 8 plane bytes, an 8 x 8 bit
// transpose, instead of a multiply per plane and step pair (packing/portable_kernels.hpp). Chosen
// at run time by packing/targets.hpp (row_pair_planes); the portable kernel gives the same bytes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../../packing/portable_kernels.hpp"
#include "../../../quant/quant.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_PACK_AVX512 1
#define LUTKIT_PACK_AVX512 __attribute__((target("avx512f,avx512bw,gfni")))

namespace lutkit::detail::avx512 {

inline bool cpu_has_pack_kernel() { return host_features::avx512_gfni_pack(); }

// 64 codes (byte i: the code of k0 + i) stored at p in form F (quant.hpp, code_form)
template <code_form F>
LUTKIT_PACK_AVX512 inline __m512i load_codes64(const uint8_t* p, std::size_t stride) {
  if constexpr (F == code_form::bytes) {
    return _mm512_loadu_si512(p);
  } else if constexpr (F == code_form::ggml_nibbles) {
    // each block's 16 bytes twice: the low nibbles give its codes 0..15, the high ones 16..31
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + stride));
    __m512i v = _mm512_inserti32x4(_mm512_castsi128_si512(a), a, 1);
    v = _mm512_inserti32x4(_mm512_inserti32x4(v, b, 2), b, 3);
    return _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0F));
  } else {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + stride));
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1), _mm512_set1_epi8(char(0x80)));
  }
}

// The planes of a row pair's 64 codes, p0 and p1 the codes of rows r and r + 32 at k0 .. k0 + 63
// in form F (p1 null: a padded row, all zero): s[st] byte 8 j + p is plane p of step 2 j + st,
// row r in the low nibble, row r + 32 in the high one (bit i of a nibble: code 4 (2 j + st) + i).
template <code_form F>
LUTKIT_PACK_AVX512 inline void row_pair_planes_v(const uint8_t* p0, const uint8_t* p1, std::size_t stride,
                                                 __m512i& s0, __m512i& s1) {
  // reverse the bytes of every qword: the affine product below reads the matrix rows backwards
  const __m512i rev = _mm512_set_epi8(8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,  //
                                      8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,  //
                                      8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,  //
                                      8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  // byte p of every qword is 1 << p: result byte p, bit b = bit p of code b
  const __m512i sel = _mm512_set1_epi64(0x8040201008040201ll);
  const __m512i lo = _mm512_set1_epi8(0x0F);
  const __m512i a = _mm512_shuffle_epi8(load_codes64<F>(p0, stride), rev);
  const __m512i b = p1 ? _mm512_shuffle_epi8(load_codes64<F>(p1, stride), rev) : _mm512_setzero_si512();
  const __m512i t0 = _mm512_gf2p8affine_epi64_epi8(sel, a, 0);
  const __m512i t1 = _mm512_gf2p8affine_epi64_epi8(sel, b, 0);
  // step 0 (bits 0..3): row r low, row r + 32 high; step 1 (bits 4..7) likewise
  s0 = _mm512_ternarylogic_epi64(lo, t0, _mm512_slli_epi16(t1, 4), 0xCA);  // lo ? t0 : t1 << 4
  s1 = _mm512_ternarylogic_epi64(lo, _mm512_srli_epi16(t0, 4), t1, 0xCA);
}

// out[s][8 j + p]: plane p of step 2 j + s (row_pair_planes_v)
template <code_form F>
LUTKIT_PACK_AVX512 inline void row_pair_planes(const uint8_t* p0, const uint8_t* p1, std::size_t stride,
                                               uint8_t (*out)[64]) {
  __m512i s0, s1;
  row_pair_planes_v<F>(p0, p1, stride, s0, s1);
  _mm512_storeu_si512(out[0], s0);
  _mm512_storeu_si512(out[1], s1);
}

// v[c] word r = v[r] word c before: a 32 x 32 transpose of 16-bit words, as 2 x 2 block swaps
// at the scales 1, 2, 4, 8, 16 words (each scale exchanges one bit of the row and column index)
LUTKIT_PACK_AVX512 inline void transpose32_epi16(__m512i (&v)[32]) {
#pragma GCC unroll 16
  for (int i = 0; i < 32; i += 2) {
    const __m512i a = v[i], b = v[i + 1];
    v[i] = _mm512_mask_blend_epi16(0xAAAAAAAAu, a, _mm512_slli_epi32(b, 16));
    v[i + 1] = _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_srli_epi32(a, 16), b);
  }
#pragma GCC unroll 16
  for (int h = 0; h < 16; ++h) {
    const int i = (h & 1) | ((h >> 1) << 2);
    const __m512i a = v[i], b = v[i + 2];
    v[i] = _mm512_mask_blend_epi32(0xAAAA, a, _mm512_slli_epi64(b, 32));
    v[i + 2] = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(a, 32), b);
  }
#pragma GCC unroll 16
  for (int h = 0; h < 16; ++h) {
    const int i = (h & 3) | ((h >> 2) << 3);
    const __m512i a = v[i], b = v[i + 4];
    v[i] = _mm512_unpacklo_epi64(a, b);
    v[i + 4] = _mm512_unpackhi_epi64(a, b);
  }
  const __m512i lo8 = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), hi8 = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
#pragma GCC unroll 16
  for (int h = 0; h < 16; ++h) {
    const int i = (h & 7) | ((h >> 3) << 4);
    const __m512i a = v[i], b = v[i + 8];
    v[i] = _mm512_permutex2var_epi64(a, lo8, b);
    v[i + 8] = _mm512_permutex2var_epi64(a, hi8, b);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const __m512i a = v[i], b = v[i + 16];
    v[i] = _mm512_shuffle_i64x2(a, b, 0x44);
    v[i + 16] = _mm512_shuffle_i64x2(a, b, 0xEE);
  }
}

// A tile's 32 row pairs over 64 codes to the 8 step pairs they fill, for host layouts of PL planes
// (PL even, at most 8) whose planes 2 q and 2 q + 1 of step s sit as one 16-bit word per row pair
// in a 64-byte chunk (row pair r's word at byte 2 r): p0[r], p1[r] the codes of rows r and r + 32
// at k0 (p1[r] null: a padded row); chunk (q, s) of step pair j goes to dst[j] + off[2 q + s].
// Each row pair's planes (row_pair_planes_v) are one row of 32 words per two plane pairs, (j, s,
// q mod 2), both steps in one vector; one 32 x 32 word transpose turns them into whole chunks,
// stored with one 64-byte store each: one transpose for plane pairs 0 and 1, a second for 2 and 3
// when PL > 4 (the chunks of plane pairs beyond PL / 2 are not stored). With `prefetch`, the rows'
// codes two calls ahead are prefetched (codes read in place; not for a buffer the caller filled).
template <code_form F, int PL, bool prefetch = true>
LUTKIT_PACK_AVX512 inline void row_pairs_step_pairs8(const uint8_t* const* p0, const uint8_t* const* p1,
                                                     std::size_t stride, uint8_t* const* dst, const int* off) {
  static_assert(PL % 2 == 0 && PL <= 8, "row_pairs_step_pairs8: planes in pairs, at most 8");
  if constexpr (prefetch) prefetch_tile_codes<F>(p0, p1, stride);
  __m512i v[32], u[PL > 4 ? 32 : 1];
  // qword j of v: step 0's plane pairs 0, 1, then step 1's (u: plane pairs 2, 3)
#pragma GCC unroll 4
  for (int r = 0; r < 32; ++r) {
    __m512i s0, s1;
    row_pair_planes_v<F>(p0[r], p1[r], stride, s0, s1);
    v[r] = _mm512_mask_blend_epi32(0xAAAA, s0, _mm512_slli_epi64(s1, 32));
    if constexpr (PL > 4) u[r] = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(s0, 32), s1);
  }
  // word c of a row: step pair c / 4, step c % 4 / 2, plane pair c % 2 (+ 2 in u)
  transpose32_epi16(v);
#pragma GCC unroll 32
  for (int c = 0; c < 32; ++c)
    if (c % 2 < PL / 2) _mm512_storeu_si512(dst[c / 4] + off[c % 4 % 2 * 2 + c % 4 / 2], v[c]);
  if constexpr (PL > 4) {
    transpose32_epi16(u);
#pragma GCC unroll 32
    for (int c = 0; c < 32; ++c)
      if (2 + c % 2 < PL / 2) _mm512_storeu_si512(dst[c / 4] + off[4 + c % 4 % 2 * 2 + c % 4 / 2], u[c]);
  }
}

// fp16 encodings of n floats s[0], s[stride], ... (a group's parameter of consecutive rows) to
// out, 2 bytes each: 16 at a time by one gather and one vcvtps2ph (round to nearest even, as
// f32_to_f16); 16 holding a NaN take f32_to_f16, whose NaN is the canonical 0x7E00
LUTKIT_PACK_AVX512 inline void f16_strided(const float* s, std::size_t stride, std::size_t n, uint8_t* out) {
  std::size_t i = 0;
  if (stride <= (std::size_t(1) << 26)) {
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(int(stride)));
    for (; i + 16 <= n; i += 16) {
      const __m512 v = _mm512_i32gather_ps(idx, s + i * stride, 4);
      if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0) {
        for (std::size_t j = i; j < i + 16; ++j) {
          const uint16_t h = f32_to_f16(s[j * stride]);
          std::memcpy(out + 2 * j, &h, 2);
        }
        continue;
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i),
                          _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  }
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16(s[i * stride]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

}  // namespace lutkit::detail::avx512
#include "../intrinsics_end.hpp"
#endif
