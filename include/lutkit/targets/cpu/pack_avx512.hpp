// lutkit — the packer's micro-kernel on AVX-512 + GFNI: the bit planes of a row pair's 64 codes.
// One GF2P8AFFINEQB per row turns 8 codes (a qword) into their 8 plane bytes, an 8 x 8 bit
// transpose, instead of a multiply per plane and step pair (packing/portable_kernel.hpp). Chosen
// at run time by packing/targets.hpp (row_pair_planes); the portable kernel gives the same bytes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../quant/quant.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "intrinsics_begin.hpp"
#define LUTKIT_HAVE_PACK_AVX512 1
#define LUTKIT_PACK_AVX512 __attribute__((target("avx512f,avx512bw,gfni")))

namespace lutkit::detail::avx512 {

inline bool cpu_has_pack_kernel() {
  static const bool ok =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("gfni");
  return ok;
}

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

// p0, p1: the codes of rows r and r + 32 at k0 .. k0 + 63 in form F (p1 null: a padded row, all
// zero). out[s][8 j + p]: plane p of step 2 j + s, row r in the low nibble, row r + 32 in the
// high one (bit i of a nibble: code 4 (2 j + s) + i).
template <code_form F>
LUTKIT_PACK_AVX512 inline void row_pair_planes(const uint8_t* p0, const uint8_t* p1, std::size_t stride,
                                               uint8_t (*out)[64]) {
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
  const __m512i s0 = _mm512_ternarylogic_epi64(lo, t0, _mm512_slli_epi16(t1, 4), 0xCA);  // lo ? t0 : t1 << 4
  const __m512i s1 = _mm512_ternarylogic_epi64(lo, _mm512_srli_epi16(t0, 4), t1, 0xCA);
  _mm512_storeu_si512(out[0], s0);
  _mm512_storeu_si512(out[1], s1);
}

}  // namespace lutkit::detail::avx512
#include "intrinsics_end.hpp"
#endif
