// lutkit — the AVX-512 set's level 1 of the bit-plane layouts (packed bit planes -> codes): VBMI
// field extraction for any plane count, a GFNI bit transpose for 4 planes, into the step-major
// layout of the micro-kernels or, by 16 x 16 transposes, the row-major one of level 2. Whole codes
// are level1_whole_codes.hpp's; the fused int8 decode reuses the walk (decode_int8_avx512.hpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "../../../core/tiling.hpp"
#include "../../../gemm/microkernel.hpp"
#include "../features.hpp"
#include "isa_avx512.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx512 {

// Level 1 with vectors (VBMI): the codes of one step (64 rows x 4 activations) in the
// step-major layout out[step * 256 + r * 4 + i]. Per plane pair: nibbles -> pshufb spread into
// 2-bit fields -> the two planes merged -> vpermi2b gathers each row's packed byte -> vpmultishiftqb
// unpacks its fields into bytes. Which byte holds which row comes from the tiling spec.
struct level1_indices {
  alignas(64) uint8_t pair[4][64];     // output zmm o: data byte -> packed byte of its row
  alignas(64) uint8_t lone[2][4][64];  // step s of the pair, output zmm o
  alignas(64) uint8_t ctrl2[64];       // multishift: 2-bit field of activation i
  alignas(64) uint8_t ctrl1[64];       // multishift: bit i
};
inline const level1_indices& level1_index_tables() {
  static const level1_indices t = [] {
    level1_indices x{};
    for (int o = 0; o < 4; ++o)
      for (int b = 0; b < 64; ++b) {
        const int q = b / 8, bq = b % 8;
        if (bq >= 2) continue;
        const int R = 16 * o + 2 * q + bq;
        const int src = nibble_of_row(R) * 64;
        x.pair[o][b] = uint8_t(src + paired_byte_of_row(R % 32, 0));
        for (int s = 0; s < 2; ++s) x.lone[s][o][b] = uint8_t(src + 32 * s + lone_byte_of_row(R));
      }
    for (int b = 0; b < 64; ++b) {
      const int h = (b % 8) / 4, i = b % 4;
      x.ctrl2[b] = uint8_t(8 * h + 2 * i);
      x.ctrl1[b] = uint8_t(8 * h + i);
    }
    return x;
  }();
  return t;
}

// one output register of level 1: gather each row's packed byte, then unpack the field of each
// activation already at bit `shift` of the code (the multishift control is moved down by
// `shift`: it rotates its qword); the first field is masked, the next ones are merged with
// r | (e & mask) in one ternary-logic op
LUTKIT_AVX512_DQ inline __m512i l1_field(__m512i r, bool first, __m512i a, __m512i idx, __m512i b, __m512i ctrl,
                                         __m512i mask) {
  const __m512i e = _mm512_multishift_epi64_epi8(ctrl, _mm512_permutex2var_epi8(a, idx, b));
  return first ? _mm512_and_si512(e, mask) : _mm512_ternarylogic_epi32(r, e, mask, 0xF8);
}

// The k4 steps of [k0, k1) as level 1 walks them: the step's block in the blob, its step pair
// in the block, its half of the pair, and its 256 output bytes (step-major). The block's offset
// (two divisions in packed_layout) is computed once per block, not per step.
struct level1_step {
  const uint8_t* base;
  int spi, s;
  uint8_t* o;
};
template <class P>
class level1_walk {
 public:
  level1_walk(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, uint8_t* out)
      : data_(data), L_(L), t_(t), k0_(k0), out_(out) {}
  level1_step at(std::size_t step) {
    constexpr auto& S = P::spec;
    constexpr std::size_t spb = std::size_t(S.steps_per_block);
    const std::size_t blk = step / spb, in = step % spb;
    if (blk != blk_) {
      blk_ = blk;
      if (blk >= band_end_) {  // (steps only increase: a new band)
        const std::size_t b = L_.bands > 1 ? blk / std::size_t(S.band_blocks) : 0;
        panel_ = data_ + L_.panel_offset(t_, b);
        band_first_ = L_.band_first_block(b);
        band_end_ = L_.band_end_block(b);
      }
      base_ = panel_ + S.block_in_panel(blk - band_first_, band_first_ == 0);
    }
    return {base_, int(in / 2), int(in % 2), out_ ? out_ + (step - k0_ / 4) * 256 : nullptr};  // (fused kernels: no buffer)
  }
  // the parameters of group gi, in the band of the last step asked for (with groups)
  const uint8_t* params(std::size_t gi) const {
    constexpr auto& S = P::spec;
    static_assert(S.group_k > 0);
    return panel_ + S.params_in_panel(gi - band_first_ / std::size_t(S.group_k / S.block_k));
  }

 private:
  const uint8_t* data_;
  const packed_layout& L_;
  std::size_t t_, k0_;
  uint8_t* out_;
  std::size_t blk_ = std::size_t(-1), band_first_ = 0, band_end_ = 0;
  const uint8_t* panel_ = nullptr;
  const uint8_t* base_ = nullptr;
};

// Level 1 for 4 bit planes with GFNI: a bit-matrix transpose instead of field extraction. One
// vpermt2b gathers, into each qword, the 4 plane bytes of two row pairs (rows a, a + 32 in a
// byte's two nibbles, then a + 1, a + 33) with plane q of the first pair at byte 7 - q and of
// the second at byte 3 - q; vgf2p8affineqb with that qword as the matrix and byte j = 1 << j
// as the data transposes it: byte j of the result holds the 4 planes of activation j % 4 (row
// a for j < 4, a + 32 after), first pair in bits 0-3, second in 4-7. Two dword blends with
// shifted copies then put rows a, a + 1 (and a + 32, a + 33) side by side in the step-major
// layout. 2 byte permutes + 2 affine ops per step instead of 20 shuffles.
struct level1_gfni_indices {
  alignas(64) uint8_t gather[2][64];  // half T (rows 16 T..16 T + 15 and + 32): byte -> chunk-pair byte
};
inline const level1_gfni_indices& level1_gfni_tables() {
  static const level1_gfni_indices t = [] {
    level1_gfni_indices x{};
    for (int T = 0; T < 2; ++T)
      for (int m = 0; m < 8; ++m)
        for (int q = 0; q < 4; ++q)
          for (int second = 0; second < 2; ++second) {
            const int r = 16 * T + 2 * m + second;
            // rows below 32 in the low nibble, their partner r + 32 in the high one
            if (nibble_of_row(r) != 0 || nibble_of_row(r + 32) != 1 ||
                paired_byte_of_row(r, q % 2) != paired_byte_of_row(r + 32, q % 2))
              throw std::logic_error("level1_gfni_tables: the tiling spec no longer pairs rows r, r + 32");
            x.gather[T][8 * m + (second ? 3 : 7) - q] = uint8_t(64 * (q / 2) + paired_byte_of_row(r, q % 2));
          }
    return x;
  }();
  return t;
}
template <class P>
LUTKIT_AVX512_GFNI void codes_steps_gfni(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                         std::size_t k1, uint8_t* out) {
  constexpr auto& S = P::spec;
  static_assert(!S.ternary && S.planes == 4);
  const level1_gfni_indices& ix = level1_gfni_tables();
  const __m512i g0 = _mm512_load_si512(ix.gather[0]), g1 = _mm512_load_si512(ix.gather[1]);
  const __m512i unit = _mm512_set1_epi64(0x8040201008040201ll);
  const __m512i m0f = _mm512_set1_epi8(0x0F);
  const __mmask16 odd = 0xAAAA;
  level1_walk<P> walk(data, L, t, k0, out);
  for (std::size_t step = k0 / 4; step < k1 / 4; ++step) {
    const auto [base, spi, s, o] = walk.at(step);
    const __m512i c0 = _mm512_loadu_si512(base + S.paired_chunk_in_block(spi, s, 0));
    const __m512i c1 = _mm512_loadu_si512(base + S.paired_chunk_in_block(spi, s, 1));
#pragma GCC unroll 2
    for (int T = 0; T < 2; ++T) {
      const __m512i X = _mm512_gf2p8affine_epi64_epi8(unit, _mm512_permutex2var_epi8(c0, T ? g1 : g0, c1), 0);
      // rows 16 T + 2 m, + 1: dword 0 of qword m from the low nibbles of bytes 0-3, dword 1
      // from their high nibbles; rows + 32: the same from bytes 4-7
      const __m512i lo = _mm512_mask_blend_epi32(odd, X, _mm512_slli_epi64(X, 28));
      const __m512i hi = _mm512_mask_blend_epi32(odd, _mm512_srli_epi64(X, 32), _mm512_srli_epi64(X, 4));
      _mm512_storeu_si512(o + 64 * T, _mm512_and_si512(lo, m0f));
      _mm512_storeu_si512(o + 128 + 64 * T, _mm512_and_si512(hi, m0f));
    }
  }
}

// the VBMI field extraction (above) of [k0, k1), step-major
template <class P>
LUTKIT_AVX512_DQ void codes_steps_vbmi(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                       std::size_t k1, uint8_t* out) {
  constexpr auto& S = P::spec;
  const level1_indices& ix = level1_index_tables();
  const __m512i m0f = _mm512_set1_epi8(0x0F);
  // nibble -> its 4 bits at positions 0, 2, 4, 6
  alignas(64) static constexpr uint8_t spread_bytes[64] = {
      0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55,
      0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55,
      0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55,
      0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55};
  const __m512i spread = _mm512_load_si512(spread_bytes);
  const __m512i ctrl2 = _mm512_load_si512(ix.ctrl2), ctrl1 = _mm512_load_si512(ix.ctrl1);
  const __m512i ip0 = _mm512_load_si512(ix.pair[0]), ip1 = _mm512_load_si512(ix.pair[1]);
  const __m512i ip2 = _mm512_load_si512(ix.pair[2]), ip3 = _mm512_load_si512(ix.pair[3]);
  // plane pair p lands at bits 2p, 2p + 1 of the code, the lone plane at bit planes - 1
  __m512i cp[4], mp[4];
  for (int p = 0; p < S.planes / 2; ++p) {
    cp[p] = _mm512_sub_epi8(ctrl2, _mm512_set1_epi8(char(2 * p)));
    mp[p] = _mm512_set1_epi8(char(3 << (2 * p)));
  }
  const __m512i cl = _mm512_sub_epi8(ctrl1, _mm512_set1_epi8(char(S.planes - 1)));
  const __m512i ml = _mm512_set1_epi8(char(1 << (S.planes - 1)));
  level1_walk<P> walk(data, L, t, k0, out);
  for (std::size_t step = k0 / 4; step < k1 / 4; ++step) {
    const auto [base, spi, s, o] = walk.at(step);
    __m512i r0 = _mm512_setzero_si512(), r1 = r0, r2 = r0, r3 = r0;
#pragma GCC unroll 4
    for (int p = 0; p < S.planes / 2; ++p) {
      const __m512i c = _mm512_loadu_si512(base + S.paired_chunk_in_block(spi, s, p));
      const __m512i slo = _mm512_shuffle_epi8(spread, _mm512_and_si512(c, m0f));
      const __m512i shi = _mm512_shuffle_epi8(spread, _mm512_and_si512(_mm512_srli_epi16(c, 4), m0f));
      const __m512i plo = _mm512_or_si512(slo, _mm512_srli_epi16(slo, 7));
      const __m512i phi = _mm512_or_si512(shi, _mm512_srli_epi16(shi, 7));
      r0 = l1_field(r0, p == 0, plo, ip0, phi, cp[p], mp[p]);
      r1 = l1_field(r1, p == 0, plo, ip1, phi, cp[p], mp[p]);
      r2 = l1_field(r2, p == 0, plo, ip2, phi, cp[p], mp[p]);
      r3 = l1_field(r3, p == 0, plo, ip3, phi, cp[p], mp[p]);
    }
    if constexpr (S.planes % 2 == 1) {
      const __m512i c = _mm512_loadu_si512(base + S.lone_chunk_in_block(spi));
      const __m512i lo = _mm512_and_si512(c, m0f), hi = _mm512_and_si512(_mm512_srli_epi16(c, 4), m0f);
      const __m512i* lx = reinterpret_cast<const __m512i*>(ix.lone[s]);
      r0 = l1_field(r0, S.planes == 1, lo, _mm512_load_si512(lx + 0), hi, cl, ml);
      r1 = l1_field(r1, S.planes == 1, lo, _mm512_load_si512(lx + 1), hi, cl, ml);
      r2 = l1_field(r2, S.planes == 1, lo, _mm512_load_si512(lx + 2), hi, cl, ml);
      r3 = l1_field(r3, S.planes == 1, lo, _mm512_load_si512(lx + 3), hi, cl, ml);
    }
    _mm512_storeu_si512(o, r0);
    _mm512_storeu_si512(o + 64, r1);
    _mm512_storeu_si512(o + 128, r2);
    _mm512_storeu_si512(o + 192, r3);
  }
}

// the codes of [k0, k1), step-major: 4 planes by the GFNI transpose where the CPU has it, else by
// the VBMI field extraction
template <class P>
LUTKIT_AVX512_DQ void codes_steps(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                  std::size_t k1, uint8_t* out) {
  constexpr auto& S = P::spec;
  static_assert(!S.ternary, "ternary steps are 3 activations: the scalar unpacker serves them");
  static_assert(!S.whole_codes(), "whole codes are not bit planes: level1_whole_codes.hpp serves them");
  if constexpr (S.planes == 4) {
    if (host_features::gfni()) {
      codes_steps_gfni<P>(data, L, t, k0, k1, out);
      return;
    }
  }
  codes_steps_vbmi<P>(data, L, t, k0, k1, out);
}

// 16 x 16 transpose of 32-bit elements: r[i] lane j -> r[j] lane i
LUTKIT_AVX512_DQ inline void transpose16_epi32(__m512i r[16]) {
  __m512i t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512i a = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), b = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
    const __m512i a2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88), b2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_i32x4(a, a2, 0x88);
    r[8 + c] = _mm512_shuffle_i32x4(a, a2, 0xdd);
    r[4 + c] = _mm512_shuffle_i32x4(b, b2, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(b, b2, 0xdd);
  }
}

// Level 1 with vectors into the row-major layout of detail::unpack_codes (the level-2 input):
// 16 steps at a time in the step-major layout, then 16 x 16 transposes of 4-code dwords.
template <class P>
LUTKIT_AVX512_DQ void codes_rows(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                 std::size_t k1, uint8_t* out, std::size_t ldo) {
  alignas(64) uint8_t tmp[16 * 256];
  for (std::size_t kb = k0; kb < k1; kb += 64) {
    const std::size_t ke = std::min(k1, kb + 64), ns = (ke - kb) / 4;
    codes_steps<P>(data, L, t, kb, ke, tmp);
    const __mmask16 keep = __mmask16((1u << ns) - 1u);
    for (int rg = 0; rg < 4; ++rg) {
      __m512i r[16];
#pragma GCC unroll 16
      for (int s = 0; s < 16; ++s)
        r[s] = std::size_t(s) < ns ? _mm512_load_si512(tmp + s * 256 + rg * 64) : _mm512_setzero_si512();
      transpose16_epi32(r);
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) _mm512_mask_storeu_epi32(out + std::size_t(rg * 16 + j) * ldo + (kb - k0), keep, r[j]);
    }
  }
}

}  // namespace lutkit::detail::avx512
#include "../intrinsics_end.hpp"
#endif
