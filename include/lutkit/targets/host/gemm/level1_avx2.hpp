// lutkit — the AVX2 set's level 1 of the bit-plane layouts (packed bit planes -> codes): vpshufb
// and bit tests for any plane count, a bit-matrix transpose for 4 planes, into the step-major
// layout of the micro-kernels or, by 8 x 8 transposes, the row-major one of level 2. Whole codes
// are level1_whole_codes.hpp's; the fused int8 decode reuses the walk and the transpose
// (decode_int8_avx2.hpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "../../../core/tiling.hpp"
#include "../../../gemm/microkernel.hpp"
#include "isa_avx2.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx2 {

// The bit-plane layout (pshufb order, core/tiling_spec.hpp): a paired chunk holds planes 2p, 2p + 1
// of one step, row r's plane-h nibble in byte paired_byte_of_row(r % 32, h), nibble_of_row(r);
// bit i of the nibble is activation i of the step. Output register o holds rows 8 o .. 8 o + 7 of
// the step-major layout, one dword per row, one code per byte. Per plane pair and register the
// 16-byte window of the chunk that holds the 8 rows' bytes is broadcast to both lanes, one vpshufb
// per plane copies each row's plane byte into its dword's 4 bytes, and byte i tests bit i (i + 4
// for rows 32 .. 63: the high nibble) with vpand + vpcmpeqb; the all-ones result, masked to the
// plane's bit of the code, is or-ed in. The lone chunk of an odd plane count the same way from
// its 32 bytes of the step. Which byte holds which row comes from the tiling spec (tables below,
// checked when built).
struct level1_indices {
  alignas(32) uint8_t pair[4][2][32];  // register o % 4, plane h of the pair: window byte of row, per output byte
  int pair_win[4];                     // the window's first byte in the chunk
  alignas(32) uint8_t lone[4][32];
  int lone_win[4];  // in the step's 32 lone bytes
};
inline const level1_indices& level1_index_tables() {
  static const level1_indices t = [] {
    level1_indices x{};
    auto window = [](auto byte_of) {
      const int w = byte_of(0) / 16 * 16;
      for (int j = 0; j < 8; ++j)
        if (byte_of(j) / 16 * 16 != w)
          throw std::logic_error("avx2 level1 tables: the tiling spec no longer keeps 8 rows in 16 bytes");
      return w;
    };
    for (int o = 0; o < 4; ++o) {
      for (int j = 0; j < 8; ++j) {
        const int r = 8 * o + j;
        if (nibble_of_row(r) != 0 || nibble_of_row(r + 32) != 1 || lone_byte_of_row(r) != lone_byte_of_row(r + 32) ||
            paired_byte_of_row(r, 0) != paired_byte_of_row(r + 32, 0) ||
            paired_byte_of_row(r, 1) != paired_byte_of_row(r + 32, 1))
          throw std::logic_error("avx2 level1 tables: the tiling spec no longer pairs rows r, r + 32");
      }
      x.pair_win[o] = window([&](int j) { return paired_byte_of_row(8 * o + j, 0); });
      if (window([&](int j) { return paired_byte_of_row(8 * o + j, 1); }) != x.pair_win[o])
        throw std::logic_error("avx2 level1 tables: a row's two plane bytes in different windows");
      x.lone_win[o] = window([&](int j) { return lone_byte_of_row(8 * o + j); });
      for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 4; ++i) {
          const int b = 16 * (j / 4) + 4 * (j % 4) + i;  // lane j / 4, dword j % 4, byte i
          for (int h = 0; h < 2; ++h) x.pair[o][h][b] = uint8_t(paired_byte_of_row(8 * o + j, h) - x.pair_win[o]);
          x.lone[o][b] = uint8_t(lone_byte_of_row(8 * o + j) - x.lone_win[o]);
        }
    }
    return x;
  }();
  return t;
}

// The k4 steps of [k0, k1) as level 1 walks them: the step's block in the blob, its step pair in
// the block and its half of the pair; the block's offset is computed once per block.
template <class P>
class level1_walk {
 public:
  level1_walk(const uint8_t* data, const packed_layout& L, std::size_t t) : data_(data), L_(L), t_(t) {}
  struct step_at {
    const uint8_t* base;
    int spi, s;
  };
  step_at at(std::size_t step) {
    constexpr std::size_t spb = std::size_t(P::spec.steps_per_block);
    const std::size_t blk = step / spb, in = step % spb;
    if (blk != blk_) {
      blk_ = blk;
      base_ = data_ + L_.block_offset(t_, blk, P::spec);
    }
    return {base_, int(in / 2), int(in % 2)};
  }

 private:
  const uint8_t* data_;
  const packed_layout& L_;
  std::size_t t_;
  std::size_t blk_ = std::size_t(-1);
  const uint8_t* base_ = nullptr;
};

// bit b of each byte where the bytes of v have the bit of m set
LUTKIT_AVX2_DQ inline __m256i bit_of(__m256i v, __m256i m, int b) {
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, m), m), _mm256_set1_epi8(char(1 << b)));
}
// the 8 registers of one step's codes (rows 8 o .. 8 o + 7 in register o)
template <class P>
LUTKIT_AVX2_DQ inline void step_codes(const uint8_t* base, int spi, int s, const level1_indices& ix, __m256i r[8]) {
  constexpr auto& S = P::spec;
  const __m256i mlo = _mm256_set1_epi32(0x08040201), mhi = _mm256_set1_epi32(int(0x80402010u));
#pragma GCC unroll 8
  for (int o = 0; o < 8; ++o) r[o] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int p = 0; p < S.planes / 2; ++p) {
    const uint8_t* c = base + S.paired_chunk_in_block(spi, s, p);
#pragma GCC unroll 4
    for (int o = 0; o < 4; ++o) {
      const __m256i win = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + ix.pair_win[o])));
      const __m256i x0 = _mm256_shuffle_epi8(win, _mm256_load_si256(reinterpret_cast<const __m256i*>(ix.pair[o][0])));
      const __m256i x1 = _mm256_shuffle_epi8(win, _mm256_load_si256(reinterpret_cast<const __m256i*>(ix.pair[o][1])));
      r[o] = _mm256_or_si256(r[o], _mm256_or_si256(bit_of(x0, mlo, 2 * p), bit_of(x1, mlo, 2 * p + 1)));
      r[o + 4] = _mm256_or_si256(r[o + 4], _mm256_or_si256(bit_of(x0, mhi, 2 * p), bit_of(x1, mhi, 2 * p + 1)));
    }
  }
  if constexpr (S.planes % 2 == 1) {
    const uint8_t* c = base + S.lone_chunk_in_block(spi) + 32 * s;
#pragma GCC unroll 4
    for (int o = 0; o < 4; ++o) {
      const __m256i win = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + ix.lone_win[o])));
      const __m256i x = _mm256_shuffle_epi8(win, _mm256_load_si256(reinterpret_cast<const __m256i*>(ix.lone[o])));
      r[o] = _mm256_or_si256(r[o], bit_of(x, mlo, S.planes - 1));
      r[o + 4] = _mm256_or_si256(r[o + 4], bit_of(x, mhi, S.planes - 1));
    }
  }
}

// 4 planes (W4 and the other 4-bit formats the LUT-GEMV also runs): a bit-matrix transpose per
// row pair instead of bit tests. The paired chunks keep row r's plane bytes at 2 r + h (r < 32),
// the low nibble row r, the high nibble row r + 32 (checked against the tiling spec below), so one
// vpunpcklwd / vpunpckhwd of two chunks gives each row pair its 4 plane bytes in a dword. Read as a
// bit matrix (byte q = plane q, bit j = activation j of row r for j < 4, of row r + 32 after), its
// transpose has in byte j the code of that activation, one bit per plane: two delta swaps
// transpose the two 4 x 4 blocks of the dword in place (row r's 4 codes in the low nibbles, row
// r + 32's in the high ones). A vpermq of each chunk half first puts rows 8 i .. 8 i + 7 in one
// register. 64 rows of a step: ~70 instructions, the bit tests ~150. (8-bit formats and codebooks
// are stored as whole codes: level1_whole_codes.hpp.)
template <class P>
constexpr bool has_transpose() {
  constexpr auto& S = P::spec;
  if (S.ternary || S.plane_chunks() || S.whole_codes() || S.rows_per_tile != 64 || S.planes != 4) return false;
  for (int r = 0; r < 32; ++r)
    if (paired_byte_of_row(r, 0) != 2 * r || paired_byte_of_row(r, 1) != 2 * r + 1 || nibble_of_row(r) != 0 ||
        nibble_of_row(r + 32) != 1 || paired_byte_of_row(r + 32, 0) != 2 * r || paired_byte_of_row(r + 32, 1) != 2 * r + 1)
      return false;
  return true;
}
// x ^= swap of the bits of mask m with those delta higher, per 32- (D32) or 64-bit lane
template <bool D32, int delta>
LUTKIT_AVX2_DQ inline __m256i delta_swap(__m256i x, __m256i m) {
  if constexpr (D32) {
    const __m256i t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi32(x, delta)), m);
    return _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi32(t, delta)));
  } else {
    const __m256i t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, delta)), m);
    return _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, delta)));
  }
}
// the codes of quarter (h, i) of one step: r[0] rows 16 h + 8 i .. + 7, r[1] the same rows + 32
template <class P>
LUTKIT_AVX2_DQ inline void step_quarter_transposed(const uint8_t* base, int spi, int s, int h, int i, __m256i r[2]) {
  constexpr auto& S = P::spec;
  static_assert(has_transpose<P>());
  __m256i c[S.planes / 2];
#pragma GCC unroll 4
  for (int p = 0; p < S.planes / 2; ++p)
    c[p] = _mm256_permute4x64_epi64(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + S.paired_chunk_in_block(spi, s, p) + 32 * h)), 0xD8);
  const __m256i m0f = _mm256_set1_epi8(0x0F);
  const __m256i m1 = _mm256_set1_epi32(0x00AA00AA), m2 = _mm256_set1_epi32(0x0000CCCC);
  __m256i x = i ? _mm256_unpackhi_epi16(c[0], c[1]) : _mm256_unpacklo_epi16(c[0], c[1]);
  x = delta_swap<true, 14>(delta_swap<true, 7>(x, m1), m2);
  r[0] = _mm256_and_si256(x, m0f);
  r[1] = _mm256_and_si256(_mm256_srli_epi16(x, 4), m0f);
}

// Level 1 of the policies the AVX2 set serves: 64-row tiles of the pshufb order, not ternary (bit
// planes here, whole codes in level1_whole_codes.hpp).
template <class P>
constexpr bool has_level1() {
  constexpr auto& S = P::spec;
  return !S.ternary && !S.plane_chunks() && S.rows_per_tile == 64;
}

// the codes of [k0, k1), step-major
template <class P>
LUTKIT_AVX2_DQ void codes_steps(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                std::size_t k1, uint8_t* out) {
  static_assert(has_level1<P>() && !P::spec.whole_codes());
  const level1_indices& ix = level1_index_tables();
  level1_walk<P> walk(data, L, t);
  for (std::size_t step = k0 / 4; step < k1 / 4; ++step) {
    const auto [base, spi, s] = walk.at(step);
    __m256i r[8];
    if constexpr (has_transpose<P>()) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        __m256i x[2];
        step_quarter_transposed<P>(base, spi, s, q / 2, q % 2, x);
        r[q] = x[0];
        r[q + 4] = x[1];
      }
    } else {
      step_codes<P>(base, spi, s, ix, r);
    }
    uint8_t* o = out + (step - k0 / 4) * 256;
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32 * v), r[v]);
  }
}

// 8 x 8 transpose of 32-bit elements: r[i] lane j -> r[j] lane i
LUTKIT_AVX2_DQ inline void transpose8_epi32(__m256i r[8]) {
  __m256i t[8], u[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x20);
    r[4 + c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x31);
  }
}

// Level 1 into the row-major layout of detail::unpack_codes (the level-2 input): 8 steps at a
// time in the step-major layout (STEPS: this file's codes_steps, or whole codes'), then 8 x 8
// transposes of 4-code dwords.
using codes_steps_fn = void (*)(const uint8_t*, const packed_layout&, std::size_t, std::size_t, std::size_t, uint8_t*);
template <class P, codes_steps_fn STEPS = &codes_steps<P>>
LUTKIT_AVX2_DQ void codes_rows(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                               std::size_t k1, uint8_t* out, std::size_t ldo) {
  alignas(32) uint8_t tmp[8 * 256];
  for (std::size_t kb = k0; kb < k1; kb += 32) {
    const std::size_t ke = std::min(k1, kb + 32), ns = (ke - kb) / 4;
    STEPS(data, L, t, kb, ke, tmp);
    alignas(32) static constexpr int32_t lanes[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(ns)), _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes)));
    for (int o = 0; o < 8; ++o) {
      __m256i r[8];
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s)
        r[s] = std::size_t(s) < ns ? _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp + s * 256 + o * 32))
                                   : _mm256_setzero_si256();
      transpose8_epi32(r);
      // (vpmaskmovd stores only for a partial block: on every block they slowed level 1 down on Zen 3;
      // docs/design_measurements.md, "Level 1")
      if (ns == 8) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + std::size_t(8 * o + j) * ldo + (kb - k0)), r[j]);
      } else {
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j)
          _mm256_maskstore_epi32(reinterpret_cast<int*>(out + std::size_t(8 * o + j) * ldo + (kb - k0)), keep, r[j]);
      }
    }
  }
}

}  // namespace lutkit::detail::avx2
#include "../intrinsics_end.hpp"
#endif
