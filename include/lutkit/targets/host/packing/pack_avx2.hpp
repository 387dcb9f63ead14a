// lutkit — the packer's micro-kernels on AVX2 (CPUs without AVX-512 + GFNI): the bit planes of
// a row pair's 64 codes and the strided fp16 encoding. A row pair's codes are regrouped so that
// each qword holds the 4 codes of one step of row r (bytes 0..3) and of row r + 32 (bytes 4..7);
// an 8 x 8 bit transpose of that qword (three shift / xor / mask rounds, 4 qwords per vector)
// is then the 8 plane bytes of the step, already in the layout's nibble order. Chosen at run time
// by packing/targets.hpp; the portable kernel (packing/portable_kernels.hpp) gives the same bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../../core/half.hpp"
#include "../../../packing/portable_kernels.hpp"
#include "../../../quant/quant.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_PACK_AVX2 1
#define LUTKIT_PACK_AVX2 __attribute__((target("avx2,f16c")))

namespace lutkit::detail::avx2_pack {

inline bool cpu_has_pack_kernel() { return host_features::avx2(); }

// 64 codes (byte i of c0: code i, of c1: code 32 + i) stored at p in form F (quant.hpp, code_form)
template <code_form F>
LUTKIT_PACK_AVX2 inline void load_codes64(const uint8_t* p, std::size_t stride, __m256i& c0, __m256i& c1) {
  if constexpr (F == code_form::bytes) {
    c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  } else if constexpr (F == code_form::ggml_nibbles) {
    // a block's 16 bytes: the low nibbles are its codes 0..15, the high ones 16..31
    const __m128i lo = _mm_set1_epi8(0x0F);
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + stride));
    c0 = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(a, 4), lo), _mm_and_si128(a, lo));
    c1 = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), lo), _mm_and_si128(b, lo));
  } else {
    const __m256i flip = _mm256_set1_epi8(char(0x80));
    c0 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), flip);
    c1 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + stride)), flip);
  }
}

// every qword x as an 8 x 8 bit matrix (byte = row, bit = column), transposed: byte p, bit i of
// the result = bit p of byte i (2 x 2, 4 x 4 and 8 x 8 block swaps)
LUTKIT_PACK_AVX2 inline __m256i transpose_bits8x8(__m256i x) {
  __m256i t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 7)), _mm256_set1_epi64x(0x00AA00AA00AA00AAll));
  x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 7)));
  t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 14)), _mm256_set1_epi64x(0x0000CCCC0000CCCCll));
  x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 14)));
  t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 28)), _mm256_set1_epi64x(0x00000000F0F0F0F0ll));
  return _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 28)));
}

// The planes of a row pair's 64 codes, p0 and p1 the codes of rows r and r + 32 at k0 .. k0 + 63
// in form F (p1 null: a padded row, all zero): out[s][8 j + p] is plane p of step 2 j + s, row r
// in the low nibble, row r + 32 in the high one (bit i of a nibble: code 4 (2 j + s) + i).
// (as registers: s[st][h] holds out[st][32 h .. 32 h + 31])
template <code_form F>
LUTKIT_PACK_AVX2 inline void row_pair_planes_v(const uint8_t* p0, const uint8_t* p1, std::size_t stride,
                                               __m256i (&s)[2][2]) {
  __m256i a[2], b[2];
  load_codes64<F>(p0, stride, a[0], a[1]);
  if (p1) load_codes64<F>(p1, stride, b[0], b[1]);
  else b[0] = b[1] = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    // dword d of a[h] holds row r's codes of step 8 h + d: qwords (row r, row r + 32) of steps
    // (0, 1 | 4, 5) and (2, 3 | 6, 7) of this half, then even steps (s = 0) and odd ones apart
    const __m256i lo = _mm256_unpacklo_epi32(a[h], b[h]), hi = _mm256_unpackhi_epi32(a[h], b[h]);
    s[0][h] = transpose_bits8x8(_mm256_unpacklo_epi64(lo, hi));
    s[1][h] = transpose_bits8x8(_mm256_unpackhi_epi64(lo, hi));
  }
}
template <code_form F>
LUTKIT_PACK_AVX2 inline void row_pair_planes(const uint8_t* p0, const uint8_t* p1, std::size_t stride,
                                             uint8_t (*out)[64]) {
  __m256i s[2][2];
  row_pair_planes_v<F>(p0, p1, stride, s);
  for (int st = 0; st < 2; ++st)
    for (int h = 0; h < 2; ++h) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[st] + 32 * h), s[st][h]);
}

// A 16 x 16 transpose of 16-bit words: v[i] word j -> word i of the register holding column j,
// which is v[(j & 8) | bit-reversed (j & 7)] (16-, 32-, 64-bit unpacks, then 128-bit lane swaps)
LUTKIT_PACK_AVX2 __attribute__((always_inline)) inline void transpose16_epi16(__m256i (&v)[16]) {
  __m256i a[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm256_unpacklo_epi16(v[2 * i], v[2 * i + 1]);
    a[2 * i + 1] = _mm256_unpackhi_epi16(v[2 * i], v[2 * i + 1]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    const int b = 4 * (i / 2) + i % 2;
    v[b] = _mm256_unpacklo_epi32(a[b], a[b + 2]);
    v[b + 2] = _mm256_unpackhi_epi32(a[b], a[b + 2]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    const int b = 8 * (i / 4) + i % 4;
    a[b] = _mm256_unpacklo_epi64(v[b], v[b + 4]);
    a[b + 4] = _mm256_unpackhi_epi64(v[b], v[b + 4]);
  }
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) {
    v[k] = _mm256_permute2x128_si256(a[k], a[k + 8], 0x20);
    v[k + 8] = _mm256_permute2x128_si256(a[k], a[k + 8], 0x31);
  }
}
constexpr int column_register(int j) { return (j & 8) | ((j & 1) << 2) | (j & 2) | ((j & 4) >> 2); }
// v = rows[0..15] transposed (column j in v[column_register(j)])
LUTKIT_PACK_AVX2 __attribute__((always_inline)) inline void transposed16(const __m256i* rows, __m256i (&v)[16]) {
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) v[i] = rows[i];
  transpose16_epi16(v);
}

// A tile's 32 row pairs over 64 codes to the 8 step pairs they fill, for host layouts of 2 to 6
// planes whose planes 2 q and 2 q + 1 of step s sit as one 16-bit word per row pair in a 64-byte
// chunk (row pair r's word at byte 2 r), and an odd count's last plane as one byte per row pair
// (row pairs r and r + 16 at bytes 2 r and 2 r + 1 of its chunk, r < 16): p0[r], p1[r] the codes
// of rows r and r + 32 at k0 (p1[r] null: a padded row); chunk (q, s) of step pair j goes to
// dst[j] + off[2 q + s]. Each row pair's planes are rows of 16-bit words, the 32 x 32 (4 planes)
// or 32 x 16 (a plane pair, or the last plane with a zero partner) word matrices are transposed
// as 16 x 16 blocks, and each column (a half chunk: 16 row pairs) is stored with one 32-byte
// store (the last plane's two halves as the low and high bytes of one). (8-bit formats are
// stored as whole codes, not bit planes.)
template <code_form F, int PL, bool prefetch = true>
LUTKIT_PACK_AVX2 inline void row_pairs_step_pairs8(const uint8_t* const* p0, const uint8_t* const* p1,
                                                   std::size_t stride, uint8_t* const* dst, const int* off) {
  static_assert(PL >= 2 && PL <= 6, "row_pairs_step_pairs8: 2 to 6 planes");
  if constexpr (prefetch) prefetch_tile_codes<F>(p0, p1, stride);
  if constexpr (PL == 4) {
    __m256i m[2][32];  // [column half][row pair]
    for (int r = 0; r < 32; ++r) {
      __m256i s[2][2];
      row_pair_planes_v<F>(p0[r], p1[r], stride, s);
      // planes 4..7 of 4-bit codes are zero: step 1's two words move into their place
      for (int h = 0; h < 2; ++h) m[h][r] = _mm256_blend_epi32(s[0][h], _mm256_slli_epi64(s[1][h], 32), 0xAA);
    }
    for (int h = 0; h < 2; ++h)
      for (int a = 0; a < 2; ++a) {
        __m256i v[16];
        transposed16(&m[h][16 * a], v);
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          const int c = 16 * h + j;  // word c of a row: step pair c / 4, then (s, q)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[c / 4] + off[c % 4 % 2 * 2 + c % 4 / 2] + 32 * a),
                              v[column_register(j)]);
        }
      }
  } else {
    // plane pair q of a row pair: word 2 j + s = planes 2 q, 2 q + 1 of step s of step pair j
    // (an odd PL's last plane: q = PL / 2, with plane PL, all zero, for its high byte)
    constexpr int Q = (PL + 1) / 2;
    __m256i m[Q][32];  // [plane pair][row pair]
    const __m256i word = _mm256_set1_epi64x(0xFFFF);
    const __m256i even_dwords = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    for (int r = 0; r < 32; ++r) {
      __m256i s[2][2];  // qword j of s[st][h]: step pair 4 h + j, step st, plane p in byte p
      row_pair_planes_v<F>(p0[r], p1[r], stride, s);
#pragma GCC unroll 3
      for (int q = 0; q < Q; ++q) {
        __m256i y[2];
        for (int h = 0; h < 2; ++h) {
          const __m256i w0 = _mm256_and_si256(_mm256_srli_epi64(s[0][h], 16 * q), word);
          const __m256i w1 = _mm256_and_si256(_mm256_srli_epi64(s[1][h], 16 * q), word);
          y[h] = _mm256_permutevar8x32_epi32(_mm256_or_si256(w0, _mm256_slli_epi64(w1, 16)), even_dwords);
        }
        m[q][r] = _mm256_permute2x128_si256(y[0], y[1], 0x20);
      }
    }
    for (int q = 0; q < PL / 2; ++q)
      for (int a = 0; a < 2; ++a) {
        __m256i v[16];
        transposed16(&m[q][16 * a], v);
#pragma GCC unroll 16
        for (int c = 0; c < 16; ++c)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[c / 2] + off[2 * q + c % 2] + 32 * a),
                              v[column_register(c)]);
      }
    if constexpr (PL % 2 == 1) {
      __m256i v[2][16];
      for (int a = 0; a < 2; ++a) transposed16(&m[Q - 1][16 * a], v[a]);
      // row pairs i and 16 + i of a column (words with a zero high byte) to bytes 2 i, 2 i + 1
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[c / 2] + off[PL - 1 + c % 2]),
                            _mm256_or_si256(v[0][column_register(c)], _mm256_slli_epi16(v[1][column_register(c)], 8)));
    }
  }
}

// v[i] dword j to dst[j] + o + 4 i: the 8 x 8 dword matrix transposed, one 32-byte store a column
LUTKIT_PACK_AVX2 inline void transpose8_epi32_store(const __m256i (&v)[8], uint8_t* const* dst, int o) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i)
    for (int h = 0; h < 2; ++h) {
      u[4 * i + h] = _mm256_unpacklo_epi64(t[4 * i + h], t[4 * i + h + 2]);
      u[4 * i + h + 2] = _mm256_unpackhi_epi64(t[4 * i + h], t[4 * i + h + 2]);
    }
  // u[0..3]: rows 0..3 of columns (0, 2, 1, 3) in the low lane, (4, 6, 5, 7) in the high one;
  // u[4..7] the same for rows 4..7
  constexpr int col[4] = {0, 2, 1, 3};
  for (int c = 0; c < 4; ++c) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[col[c]] + o), _mm256_permute2x128_si256(u[c], u[4 + c], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[4 + col[c]] + o), _mm256_permute2x128_si256(u[c], u[4 + c], 0x31));
  }
}

// Whole codes: 8 rows' 64 codes to the 8 step pairs they fill (the portable twin,
// whole_codes_rows8_scalar, says where). Each row's step pairs become one register of dwords
// (4 bits: the two steps' nibbles merged in each qword; 8 bits: the two steps apart), and the 8 x 8
// dword matrix is transposed so that a step pair's 8 rows are one 32-byte store.
template <code_form F, int PL>
LUTKIT_PACK_AVX2 inline void whole_codes_rows8(const uint8_t* const* p, std::size_t stride, uint8_t* const* dst, int o0, int o1) {
  static_assert(PL == 4 || PL == 8, "whole codes: 4 or 8 bits");
  const __m256i even_dwords = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  __m256i lo[8], hi[8];  // row i: dword j = step pair j (8 bits: lo step 2 j, hi step 2 j + 1)
  for (int i = 0; i < 8; ++i) {
    __m256i c0, c1;  // qword j of c0: step pair j, of c1: step pair 4 + j
    load_codes64<F>(p[i], stride, c0, c1);
    if constexpr (PL == 4) {
      const __m256i l4 = _mm256_set1_epi32(0x0F0F0F0F), h4 = _mm256_set1_epi32(int(0xF0F0F0F0u));
      c0 = _mm256_or_si256(_mm256_and_si256(c0, l4), _mm256_and_si256(_mm256_srli_epi64(c0, 28), h4));
      c1 = _mm256_or_si256(_mm256_and_si256(c1, l4), _mm256_and_si256(_mm256_srli_epi64(c1, 28), h4));
    }
    const __m256i a = _mm256_permutevar8x32_epi32(c0, even_dwords), b = _mm256_permutevar8x32_epi32(c1, even_dwords);
    lo[i] = _mm256_permute2x128_si256(a, b, 0x20);
    if constexpr (PL == 8) hi[i] = _mm256_permute2x128_si256(a, b, 0x31);
  }
  transpose8_epi32_store(lo, dst, o0);
  if constexpr (PL == 8) transpose8_epi32_store(hi, dst, o1);
}

// fp16 encodings of n floats s[0], s[stride], ... (a group's parameter of consecutive rows) to
// out, 2 bytes each: 8 at a time by one gather and one vcvtps2ph (round to nearest even, as
// f32_to_f16); 8 holding a NaN take f32_to_f16, whose NaN is the canonical 0x7E00
LUTKIT_PACK_AVX2 inline void f16_strided(const float* s, std::size_t stride, std::size_t n, uint8_t* out) {
  std::size_t i = 0;
  if (stride <= (std::size_t(1) << 27)) {
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int(stride)));
    for (; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_i32gather_ps(s + i * stride, idx, 4);
      if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
        for (std::size_t j = i; j < i + 8; ++j) {
          const uint16_t h = f32_to_f16(s[j * stride]);
          std::memcpy(out + 2 * j, &h, 2);
        }
        continue;
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  }
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16(s[i * stride]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

}  // namespace lutkit::detail::avx2_pack
#include "../intrinsics_end.hpp"
#endif
