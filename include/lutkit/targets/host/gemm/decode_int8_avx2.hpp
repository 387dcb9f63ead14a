// lutkit — the AVX2 set's fused int8 decode (dq_level1_fns::int8_fused): level 1 inside the int8
// micro-kernel for 1 or 2 activation columns, from bit planes (4 planes, transposed in registers)
// or from whole codes (loaded as stored), with the group scales and zeros read from the blob.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../../core/prefetch.hpp"
#include "../../../core/tiling.hpp"
#include "../../../gemm/dequant.hpp"
#include "../../../gemm/microkernel.hpp"
#include "isa_avx2.hpp"
#include "level1_avx2.hpp"
#include "microkernels_avx2.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx2 {

// Level 1 fused into the int8 micro-kernel (decode, 1 or 2 columns): the codes of half of the step
// (rows 16 h .. 16 h + 15 and the same + 32, four registers: transposed from the bit planes of
// W4, loaded as they are from whole codes) go straight into the dot products, so the packed bytes
// are read once and no level buffer is written or re-read.
// Levels of at most 127 (4-bit codes, FP4, Q4NX): vpmaddubsw of the u8 levels and the s8
// activations is exact (two products of at most 127 x 128), vpmaddwd with ones makes the row sums.
// Larger levels (8-bit codes, IQ4_NL) go in signed, level - 128 (a vpxor of 0x80, or the codebook's
// vpshufb map holding level - 128): vpmaddubsw(|level - 128|, sign(x, level - 128)) is exact for
// activations in [-127, 127] (what the activation packing makes: products of at most 128 x 127),
// and the u8-level sum is restored exactly in int32 by adding 128 times the step's activation sum
// (vpmaddubsw of ones, vpmaddwd of ones). Float codebooks with split levels (NF4, gemm/dequant.hpp)
// map the codes to the two u8 parts of their fixed-point levels with two vpshufb, hi <= 128 and
// lo <= 127 (both exact in vpmaddubsw), run two chains and join them per group as 128 hi + lo in
// int32, then the same epilogue with scale s 2^-13 and zero coefficient s (the AVX-512 kernel's
// arithmetic; no buffered route). The scales and zeros come from the blob (the exact fp16 / bf16
// decode of lut_weight_source::group_scales, then zero * scale or -min), and the epilogue is
// portable::mk_int8's in the same order: the same bits as the buffered route.
// Bit planes (W4, Q4_0: mk_int8_fused): codes up to 15, one pass over the flush group's steps per
// half (4 x NC accumulators); the passes read disjoint parts of every chunk, the first one
// prefetches 8 KiB ahead. Faster than the buffered route (level 1, then mk_int8; docs/
// llama_formats.md, "Decode"). Whole codes: mk_int8_whole below, every level form above.
template <class P>
constexpr bool has_int8_fused() {
  using FT = format_traits<typename P::format>;
  return (has_transpose<P>() &&
          (levels_are_codes<P>() || (FT::integer_levels && FT::max_code < 16) || split_levels<P>())) ||
         whole_codes_int8_fused<P>();
}
// the group parameters of rows 8 v .. 8 v + 7 -> fp32 (exact): fp16 / bf16 slots at p, or
// (super-group formats) int8 codes at p times the super-group's fp32 values at sup
template <const auto& S>
LUTKIT_AVX2_DQ inline __m256 fused_param8(const uint8_t* p, const uint8_t* sup, int v) {
  if constexpr (S.super_k > 0)
    return _mm256_mul_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(sup) + 8 * v),
                         _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * v)))));
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * v));
  if constexpr (S.bf16_params) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  else return _mm256_cvtph_ps(h);
}
template <class P>
LUTKIT_AVX2_DQ inline void fused_group_scales(const uint8_t* data, const packed_layout& L, std::size_t t,
                                              std::size_t gi, float* sw, float* swz) {
  constexpr auto& S = P::spec;
  const uint8_t* ps = data + L.scale_offset(t, gi, S);
  [[maybe_unused]] const uint8_t* sup = S.super_k > 0 ? data + L.super_offset(t, gi, S) : nullptr;
  [[maybe_unused]] const uint8_t* supm = S.super_k > 0 && S.asymmetric ? data + L.super_min_offset(t, gi, S) : nullptr;
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) {
    __m256 sc = fused_param8<S>(ps, sup, v);
    __m256 zc;
    if constexpr (S.asymmetric) {
      const __m256 zz = fused_param8<S>(data + L.zero_offset(t, gi, S), supm, v);
      zc = S.min_form ? _mm256_xor_ps(zz, _mm256_set1_ps(-0.f)) : _mm256_mul_ps(zz, sc);
    } else {
      zc = _mm256_mul_ps(_mm256_set1_ps(S.sym_zero), sc);
    }
    if constexpr (split_levels<P>()) {  // w = s (Q - 2^13) 2^-13: scale s 2^-13, zero coefficient s
      zc = sc;
      sc = _mm256_mul_ps(sc, _mm256_set1_ps(1.f / float(1 << split_level_bits)));
    }
    _mm256_store_ps(sw + 8 * v, sc);
    _mm256_store_ps(swz + 8 * v, zc);
  }
}
template <class P, int NC>
LUTKIT_AVX2_DQ void mk_int8_fused(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                  const mk_int8_args& a) {
  static_assert(NC == 1 || NC == 2);
  static_assert(has_int8_fused<P>() && has_transpose<P>() && levels_are_codes<P>() && max_level<P>() <= 127);
  constexpr auto& S = P::spec;
  const __m256i ones = _mm256_set1_epi16(1);
  constexpr long PFD = 8192;
  level1_walk<P> walk(data, L, t);
  std::size_t step0 = k0 / 4;
  const int8_t* A = a.A;
  for (std::size_t g = 0; g < a.groups; ++g, step0 += a.steps, A += a.steps * a.lda) {
    alignas(32) float sw[64], swz[64];
    fused_group_scales<P>(data, L, t, L.group_of_k(step0 * 4, P::spec), sw, swz);
    const float* sx = a.sumx + g * a.ldsum;
    const float* sa = a.sa ? a.sa + g * a.ldsum : nullptr;
    // pass q: quarters 2 q, 2 q + 1 (a half, 4 registers)
    for (int q = 0; q < 2; ++q) {
      __m256i acc[NC][4];
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[n][j] = _mm256_setzero_si256();
      for (std::size_t s = 0; s < a.steps; ++s) {
        const auto [base, spi, hs] = walk.at(step0 + s);
        if (q == 0)
#pragma GCC unroll 4
          for (int p = 0; p < S.planes / 2; ++p)
            _mm_prefetch(reinterpret_cast<const char*>(base + S.paired_chunk_in_block(spi, hs, p)) + PFD, _MM_HINT_T0);
        __m256i r[4];
        step_quarter_transposed<P>(base, spi, hs, q, 0, r);
        step_quarter_transposed<P>(base, spi, hs, q, 1, r + 2);
        const int8_t* as = A + s * a.lda;
        __m256i x[NC];
#pragma GCC unroll 2
        for (int n = 0; n < NC; ++n) {
          x[n] = _mm256_set1_epi32(panel_quad(as, n));
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j)
#pragma GCC unroll 2
          for (int n = 0; n < NC; ++n)
            add_epi32_into(acc[n][j], _mm256_madd_epi16(_mm256_maddubs_epi16(r[j], x[n]), ones));
      }
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n) {
        const __m256 bx = _mm256_set1_ps(sx[n]);
        const __m256 ba = _mm256_set1_ps(sa ? sa[n] : 1.f);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int row = 16 * q + 8 * (j / 2) + 32 * (j % 2);
          int8_epilogue8(acc[n][j], sa != nullptr, ba, false, bx, sw + row, swz + row, a.C + 64 * n + row);
        }
      }
    }
  }
}

// Whole codes (8 bits, codebooks, Q4NX): the fused int8 decode reads the step-major codes as they
// are stored. Per step and register of 8 rows one load (4 bits: the step pair's bytes, then a
// mask and a shift), the level map and the dot products of mk_int8_fused above (u8 levels up to
// 127 by vpmaddubsw; larger ones signed with the sign trick, the 128 x activation sum restored per
// flush group; split levels as two dots), with constant offsets: the flush group's step pairs are
// contiguous in the blob (the blocks of a scale group are), so the kernel walks one pointer.
// RB registers per pass (8 rows each), the step pair's two steps one after the other; split levels
// (NF4) add 128 x the high parts' dot and the low parts' dot into one accumulator (the integer
// sum(Q x), exact). One column: all 64 rows in one pass (8 accumulators; GCC spills two or three
// of them to L1, and still one pass beat two passes of 4 without spills, which walk the stream in
// strides). Two columns: two passes of 4, faster than four of 2. The first pass prefetches the
// stream 8 KiB ahead. (docs/llama_formats.md, "Decode".)
template <class P, int NC>
LUTKIT_AVX2_DQ void mk_int8_whole(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                  const mk_int8_args& a) {
  static_assert(NC == 1 || NC == 2);
  static_assert(has_int8_fused<P>() && whole_codes_step_major<P>());
  constexpr auto& S = P::spec;
  constexpr bool MAP = !levels_are_codes<P>();
  constexpr bool SPLIT = split_levels<P>();
  constexpr bool SIGNED = max_level<P>() > 127;
  // signed levels within [-127, 127] (IQ4_NL): the activations' signs move to the levels,
  // vpmaddubsw(|x|, sign(level - 128, x)), |x| once per step for all registers (a level of -128,
  // possible in 8-bit codes, would not survive vpsignb)
  constexpr bool XABS = SIGNED && MAP && min_level<P>() >= 1;
  constexpr bool B8 = S.planes == 8;
  constexpr int RB = NC == 1 ? 8 : 4;
  constexpr std::size_t SPB = std::size_t(S.step_pair_bytes());
  static_assert(S.code_byte_in_step_pair(0, 1, 0) == (B8 ? 256 : 0) && S.code_shift(1) == (B8 ? 0 : 4));
  static constexpr level_byte_maps lm = whole_code_level_maps<P>(SIGNED ? 128 : 0);
  [[maybe_unused]] const __m256i map = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(lm.hi)));
  [[maybe_unused]] const __m256i map_lo =
      _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(lm.lo)));
  const __m256i ones = _mm256_set1_epi16(1);
  [[maybe_unused]] const __m256i ones8 = _mm256_set1_epi8(1), bias = _mm256_set1_epi8(char(0x80)),
                                 m0f = _mm256_set1_epi8(0x0F), s128 = _mm256_set1_epi16(128);
  constexpr long PFD = 8192;
  constexpr std::size_t spb = std::size_t(S.steps_per_block);
  std::size_t step0 = k0 / 4;
  const int8_t* A = a.A;
  const std::size_t pairs = a.steps / 2;
  for (std::size_t g = 0; g < a.groups; ++g, step0 += a.steps, A += a.steps * a.lda) {
    alignas(32) float sw[64], swz[64];
    fused_group_scales<P>(data, L, t, L.group_of_k(step0 * 4, P::spec), sw, swz);
    const float* sx = a.sumx + g * a.ldsum;
    const float* sa = a.sa ? a.sa + g * a.ldsum : nullptr;
    // the flush group's first step pair (its steps are whole step pairs of one scale group)
    const uint8_t* p0 = data + L.block_offset(t, step0 / spb, P::spec) + (step0 % spb) / 2 * SPB;
    // SIGNED: the activation sums of the steps, per dword
    __m256i xsum[NC];
#pragma GCC unroll 2
    for (int n = 0; n < NC; ++n) xsum[n] = _mm256_setzero_si256();
    if constexpr (SIGNED) {
      for (std::size_t s = 0; s < a.steps; ++s)
#pragma GCC unroll 2
        for (int n = 0; n < NC; ++n) {
          const __m256i xq = _mm256_set1_epi32(panel_quad(A + s * a.lda, n));
          xsum[n] = _mm256_add_epi32(xsum[n], _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, xq), ones));
        }
    }
    for (int pass = 0; pass < 8 / RB; ++pass) {
      __m256i acc[NC][RB];
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n)
#pragma GCC unroll 8
        for (int b = 0; b < RB; ++b) acc[n][b] = _mm256_setzero_si256();
      const uint8_t* p = p0 + 32 * RB * pass;
      const int8_t* as = A;
      for (std::size_t sp = 0; sp < pairs; ++sp, p += SPB, as += 2 * a.lda) {
        if (pass == 0)
#pragma GCC unroll 8
          for (std::size_t l = 0; l < SPB / 64; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(p + 64 * l) + PFD, _MM_HINT_T0);
        __m256i x[2][NC], ax[2][NC];
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
          for (int n = 0; n < NC; ++n) {
            x[h][n] = _mm256_set1_epi32(panel_quad(as + h * a.lda, n));
            if constexpr (XABS) ax[h][n] = _mm256_abs_epi8(x[h][n]);
          }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h)
#pragma GCC unroll 8
          for (int b = 0; b < RB; ++b) {
            // step j + h of register b's 8 rows: its own load (4 bits: the pair's bytes, one nibble)
            __m256i w, wl;
            if constexpr (B8) {
              w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 256 * h + 32 * b));
            } else {
              const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * b));
              w = _mm256_and_si256(h ? _mm256_srli_epi16(v, 4) : v, m0f);
            }
            if constexpr (SPLIT) wl = _mm256_shuffle_epi8(map_lo, w);
            if constexpr (MAP) w = _mm256_shuffle_epi8(map, w);
            else if constexpr (SIGNED) w = _mm256_xor_si256(w, bias);
            if constexpr (XABS) {
#pragma GCC unroll 2
              for (int n = 0; n < NC; ++n)
                acc[n][b] = _mm256_add_epi32(
                    acc[n][b], _mm256_madd_epi16(_mm256_maddubs_epi16(ax[h][n], _mm256_sign_epi8(w, x[h][n])), ones));
            } else if constexpr (SIGNED) {
              const __m256i wa = _mm256_abs_epi8(w);
#pragma GCC unroll 2
              for (int n = 0; n < NC; ++n)
                acc[n][b] = _mm256_add_epi32(
                    acc[n][b], _mm256_madd_epi16(_mm256_maddubs_epi16(wa, _mm256_sign_epi8(x[h][n], w)), ones));
            } else {
#pragma GCC unroll 2
              for (int n = 0; n < NC; ++n) {
                if constexpr (SPLIT)  // 128 x (high parts' dot) + (low parts' dot): sum(Q x), exact
                  add_epi32_into(acc[n][b], _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w, x[h][n]), s128),
                                                             _mm256_madd_epi16(_mm256_maddubs_epi16(wl, x[h][n]), ones)));
                else
                  add_epi32_into(acc[n][b], _mm256_madd_epi16(_mm256_maddubs_epi16(w, x[h][n]), ones));
              }
            }
          }
      }
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n) {
        const __m256 bx = _mm256_set1_ps(sx[n]);
        const __m256 ba = _mm256_set1_ps(sa ? sa[n] : 1.f);
#pragma GCC unroll 8
        for (int b = 0; b < RB; ++b) {
          const int row = 8 * (RB * pass + b);
          __m256i sum = acc[n][b];
          if constexpr (SIGNED) sum = _mm256_add_epi32(sum, _mm256_slli_epi32(xsum[n], 7));  // the u8 levels' sum
          int8_epilogue8(sum, sa != nullptr, ba, false, bx, sw + row, swz + row, a.C + 64 * n + row);
        }
      }
    }
  }
}

// the fused int8 decode that serves P for NC columns (dq_level1_fns::int8_fused), or null
template <class P, int NC>
constexpr int8_fused_fn int8_fused_kernel() {
  if constexpr (!has_int8_fused<P>()) return nullptr;
  else if constexpr (P::spec.whole_codes()) return &mk_int8_whole<P, NC>;
  else return &mk_int8_fused<P, NC>;
}

}  // namespace lutkit::detail::avx2
#include "../intrinsics_end.hpp"
#endif
