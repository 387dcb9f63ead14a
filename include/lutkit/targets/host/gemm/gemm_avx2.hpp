// lutkit — AVX2 micro-kernels of the dequant-GEMM, for x86 CPUs without AVX-512 (Zen 2 / Zen 3,
// Haswell .. Alder Lake): the int8 paradigm's micro-kernel (u8 levels x s8 activations, exact in
// int32), the bf16 and fp32 micro-kernels (FMA, the portable kernels' order), SIMD level 1 of the bit-plane layout (step-major codes and levels, row-major codes; fused
// into the int8 decode), the tile groups' int8 decode and values, level 2 (16-code tables, 8-bit
// codes without a table), rows_to_steps, the FusedDQP dot and the F16C conversion of the group parameters.
// Compiled with function target attributes and chosen at run time, like the AVX-512 set; the
// entries it does not vectorise are the portable kernels (gemm/portable_kernels.hpp). The kernel
// set of gemm/microkernel.hpp, registered in gemm/targets.hpp.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "../../../core/half.hpp"
#include "../../../core/tiling.hpp"
#include "../../../gemm/dequant.hpp"
#include "../../../gemm/portable_kernels.hpp"
#include "../../../gemm/microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX2_DQ 1
#define LUTKIT_AVX2_DQ __attribute__((target("avx2,fma,f16c")))

namespace lutkit::detail::avx2 {

inline bool cpu_supported() { return host_features::avx2(); }

// portable::mk_int8's epilogue for 8 rows of one activation column, in its order:
// c = fma(float(sum) [* sa], sw, c); c = fma(-sumx, swz, c)
LUTKIT_AVX2_DQ inline void int8_epilogue8(__m256i sum, bool use_sa, __m256 sa, __m256 sumx, const float* sw,
                                          const float* swz, float* c) {
  __m256 f = _mm256_cvtepi32_ps(sum);
  if (use_sa) f = _mm256_mul_ps(f, sa);
  __m256 cv = _mm256_fmadd_ps(f, _mm256_loadu_ps(sw), _mm256_loadu_ps(c));
  cv = _mm256_fnmadd_ps(_mm256_loadu_ps(swz), sumx, cv);
  _mm256_storeu_ps(c, cv);
}

// int8: 64 rows x NC columns, exact. vpmaddubsw would saturate (two u8 levels up to 255 times
// s8 activations exceed int16), so the levels are widened to int16 (vpmovzxbw) and the
// activations to int16 quads (sign extended, broadcast), and vpmaddwd gives each row's two pair
// sums of a k4 step in adjacent int32 lanes: 2 accumulators of 8 lanes per 8 rows and column.
// Per flush group one vphaddd + vpermq puts the 8 rows' sums in row order (the int32 sum of the
// 4 products of every step, as portable::mk_int8 forms it: integer sums are exact, any order),
// then the fp32 epilogue of portable::mk_int8 with the same operations in the same order:
// c = fma(float(acc) [* sa], sw, c); c = fma(-sumx, swz, c). The 16 ymm registers hold RB row
// blocks of 8 rows at a time (RB = 4 / 2 / 1 for NC = 1 / 2 / 3: 8, 8, 6 accumulators), each
// pass over the group's steps re-reading the step-major levels from the buffer (L1 / L2).
template <int NC>
LUTKIT_AVX2_DQ void mk_int8(const mk_int8_args& a) {
  static_assert(NC >= 1 && NC <= 3);
  constexpr int RB = NC == 1 ? 4 : NC == 2 ? 2 : 1;
  for (std::size_t g = 0; g < a.groups; ++g) {
    const uint8_t* W = a.W + 256 * a.steps * g;
    const int8_t* A = a.A + a.lda * a.steps * g;
    const float* sw = a.sw + g * 64;
    const float* swz = a.swz + g * 64;
    const float* sx = a.sumx + g * a.ldsum;
    const float* sa = a.sa ? a.sa + g * a.ldsum : nullptr;
    for (int o0 = 0; o0 < 8; o0 += RB) {
      __m256i acc[NC][RB][2];
#pragma GCC unroll 4
      for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
        for (int b = 0; b < RB; ++b) acc[n][b][0] = acc[n][b][1] = _mm256_setzero_si256();
      for (std::size_t s = 0; s < a.steps; ++s) {
        const uint8_t* ws = W + s * 256 + 32 * o0;
        const int8_t* as = A + s * a.lda;
        __m256i x[NC];
#pragma GCC unroll 4
        for (int n = 0; n < NC; ++n) {
          x[n] = _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(_mm_cvtsi32_si128(panel_quad(as, n))));
        }
#pragma GCC unroll 4
        for (int b = 0; b < RB; ++b) {
          const __m256i w0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ws + 32 * b)));
          const __m256i w1 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ws + 32 * b + 16)));
#pragma GCC unroll 4
          for (int n = 0; n < NC; ++n) {
            acc[n][b][0] = _mm256_add_epi32(acc[n][b][0], _mm256_madd_epi16(w0, x[n]));
            acc[n][b][1] = _mm256_add_epi32(acc[n][b][1], _mm256_madd_epi16(w1, x[n]));
          }
        }
      }
#pragma GCC unroll 4
      for (int n = 0; n < NC; ++n) {
        const __m256 bx = _mm256_set1_ps(sx[n]);
        const __m256 ba = _mm256_set1_ps(sa ? sa[n] : 1.f);
#pragma GCC unroll 4
        for (int b = 0; b < RB; ++b) {
          const int r = 8 * (o0 + b);
          // lanes [r0 r1 r4 r5 | r2 r3 r6 r7] -> [r0 .. r7]
          const __m256i sum = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[n][b][0], acc[n][b][1]), 0xD8);
          int8_epilogue8(sum, sa != nullptr, ba, bx, sw + r, swz + r, a.C + 64 * n + r);
        }
      }
    }
  }
}

// bf16 / fp32: 64 rows x NC columns, portable::mk_val's operations in its order (bf16: per step
// the FMA of the low halves of the pair, then the high ones; a bf16 is widened exactly by a shift
// or a mask), so the same bits. The 16 ymm registers hold RB vectors of 8 rows x NC columns (RB = 8
// / 4 / 2 for NC = 1 / 2-3 / 4-6), each pass over the steps re-reading W from L1 / L2.
template <bool BF, int NC>
LUTKIT_AVX2_DQ void mk_val(const mk_val_args& a) {
  static_assert(NC >= 1 && NC <= mk_val_cols);
  constexpr int RB = NC == 1 ? 8 : NC <= 3 ? 4 : 2;
  const __m256i hi_mask = _mm256_set1_epi32(int(0xFFFF0000u));
  for (int o0 = 0; o0 < 8; o0 += RB) {
    __m256 acc[NC][RB];
#pragma GCC unroll 6
    for (int n = 0; n < NC; ++n)
#pragma GCC unroll 8
      for (int b = 0; b < RB; ++b) acc[n][b] = _mm256_loadu_ps(a.C + 64 * n + 8 * (o0 + b));
    for (std::size_t s = 0; s < a.steps; ++s) {
      const uint32_t* ws = a.W + s * 64 + 8 * o0;
      const uint32_t* as = a.A + s * a.lda;
#pragma GCC unroll 8
      for (int b = 0; b < RB; ++b) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ws + 8 * b));
        if constexpr (BF) {
          const __m256 wl = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
          const __m256 wh = _mm256_castsi256_ps(_mm256_and_si256(w, hi_mask));
#pragma GCC unroll 6
          for (int n = 0; n < NC; ++n) {
            const __m256i x = _mm256_set1_epi32(int(as[n]));
            acc[n][b] = _mm256_fmadd_ps(wl, _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)), acc[n][b]);
            acc[n][b] = _mm256_fmadd_ps(wh, _mm256_castsi256_ps(_mm256_and_si256(x, hi_mask)), acc[n][b]);
          }
        } else {
          const __m256 wf = _mm256_castsi256_ps(w);
#pragma GCC unroll 6
          for (int n = 0; n < NC; ++n)
            acc[n][b] = _mm256_fmadd_ps(wf, _mm256_castsi256_ps(_mm256_set1_epi32(int(as[n]))), acc[n][b]);
        }
      }
    }
#pragma GCC unroll 6
    for (int n = 0; n < NC; ++n)
#pragma GCC unroll 8
      for (int b = 0; b < RB; ++b) _mm256_storeu_ps(a.C + 64 * n + 8 * (o0 + b), acc[n][b]);
  }
}

// fp16 -> fp32 of n halves (the group scales and zeros of every chunk): vcvtph2ps, 8 at a time.
// It quiets signaling NaNs, which portable::halves_to_float (f16_to_f32) keeps: a block of 8 with
// one of them converts by f16_to_f32, so the floats are the portable ones for all 65536 halves.
// (The portable conversion was 19% of the Q8_0 int8 decode's kernel samples at one thread.)
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

// ---------------------------------------------------------------- level 1
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
// are stored as whole codes: no transpose, below.)
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

template <class P>
LUTKIT_AVX2_DQ inline __m256i whole_step_reg(const uint8_t* pair, int s, int o) {
  constexpr auto& S = P::spec;
  static_assert(whole_codes_step_major<P>());
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + S.code_byte_in_step_pair(8 * o, s, 0)));
  if constexpr (S.planes == 8) return v;
  else return _mm256_and_si256(s ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0F));
}
// Level 1 of the policies it serves: 64-row tiles of the pshufb order, not ternary.
template <class P>
constexpr bool has_level1() {
  constexpr auto& S = P::spec;
  return !S.ternary && !S.plane_chunks() && S.rows_per_tile == 64;
}

// codes (MAP: the u8 levels of a 16-code codebook, one vpshufb) of [k0, k1), step-major
template <class P, bool MAP>
LUTKIT_AVX2_DQ void unpack_steps(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                 std::size_t k1, uint8_t* out) {
  static_assert(has_level1<P>());
  const level1_indices& ix = level1_index_tables();
  __m256i map = _mm256_setzero_si256();
  if constexpr (MAP) {
    using FT = format_traits<typename P::format>;
    static_assert(FT::max_code < 16 && FT::integer_levels, "a 16-entry byte map");
    alignas(16) uint8_t m[16] = {};
    for (int c = 0; c <= FT::max_code; ++c) m[c] = uint8_t(FT::level(c));
    map = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(m)));
  }
  level1_walk<P> walk(data, L, t);
  for (std::size_t step = k0 / 4; step < k1 / 4; ++step) {
    const auto [base, spi, s] = walk.at(step);
    __m256i r[8];
    if constexpr (P::spec.whole_codes()) {
#pragma GCC unroll 8
      for (int o = 0; o < 8; ++o) r[o] = whole_step_reg<P>(base + spi * P::spec.step_pair_bytes(), s, o);
    } else if constexpr (has_transpose<P>()) {
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
    for (int v = 0; v < 8; ++v) {
      if constexpr (MAP) r[v] = _mm256_shuffle_epi8(map, r[v]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32 * v), r[v]);
    }
  }
}
template <class P>
void codes_steps(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, std::size_t k1,
                 uint8_t* out) {
  unpack_steps<P, false>(data, L, t, k0, k1, out);
}
// the int8 route's u8 levels: the codes, or for a codebook with integer levels (IQ4_NL, FP4) each
// code mapped to its level
template <class P>
void levels_steps(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, std::size_t k1,
                  uint8_t* out) {
  unpack_steps<P, !levels_are_codes<P>()>(data, L, t, k0, k1, out);
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
// time in the step-major layout, then 8 x 8 transposes of 4-code dwords.
template <class P>
LUTKIT_AVX2_DQ void codes_rows(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                               std::size_t k1, uint8_t* out, std::size_t ldo) {
  alignas(32) uint8_t tmp[8 * 256];
  for (std::size_t kb = k0; kb < k1; kb += 32) {
    const std::size_t ke = std::min(k1, kb + 32), ns = (ke - kb) / 4;
    unpack_steps<P, false>(data, L, t, kb, ke, tmp);
    alignas(32) static constexpr int32_t lanes[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(ns)), _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes)));
    for (int o = 0; o < 8; ++o) {
      __m256i r[8];
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s)
        r[s] = std::size_t(s) < ns ? _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp + s * 256 + o * 32))
                                   : _mm256_setzero_si256();
      transpose8_epi32(r);
      // (vpmaskmovd stores only for a partial block: on Zen 3 they made level 1 1.8x slower)
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
// prefetches 8 KiB ahead. Measured at one thread (4096 x 14336, thread CPU time, Zen 3): W4 g32
// 3.8 ms fused, 4.5 ms buffered (level 1 + mk_int8). Whole codes: mk_int8_whole below, every
// level form above.
template <class P>
constexpr bool has_int8_fused() {
  using FT = format_traits<typename P::format>;
  return (has_transpose<P>() &&
          (levels_are_codes<P>() || (FT::integer_levels && FT::max_code < 16) || split_levels<P>())) ||
         whole_codes_int8_fused<P>();
}
// 8 fp16 / bf16 group parameters -> fp32 (exact)
template <bool BF16>
LUTKIT_AVX2_DQ inline __m256 fused_param8(const uint8_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  else return _mm256_cvtph_ps(h);
}
template <class P>
LUTKIT_AVX2_DQ inline void fused_group_scales(const uint8_t* data, const packed_layout& L, std::size_t t,
                                              std::size_t gi, float* sw, float* swz) {
  constexpr auto& S = P::spec;
  const uint8_t* ps = data + L.scale_offset(t, gi, S);
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) {
    __m256 sc = fused_param8<S.bf16_params>(ps + 16 * v);
    __m256 zc;
    if constexpr (S.asymmetric) {
      const __m256 zz = fused_param8<S.bf16_params>(data + L.zero_offset(t, gi, S) + 16 * v);
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
            acc[n][j] = _mm256_add_epi32(acc[n][j], _mm256_madd_epi16(_mm256_maddubs_epi16(r[j], x[n]), ones));
      }
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n) {
        const __m256 bx = _mm256_set1_ps(sx[n]);
        const __m256 ba = _mm256_set1_ps(sa ? sa[n] : 1.f);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int row = 16 * q + 8 * (j / 2) + 32 * (j % 2);
          int8_epilogue8(acc[n][j], sa != nullptr, ba, bx, sw + row, swz + row, a.C + 64 * n + row);
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
// of them to L1, and still one pass beat two passes of 4 without spills: 1 thread, 4096 x 14336,
// cold, two runs alternating the builds, Q8_0 0.79 / 0.73 of the plain read against 0.76 / 0.73,
// Q4NX 0.68 / 0.76 against 0.54 / 0.70, IQ4_NL 0.57 / 0.64 against 0.43 / 0.54; two passes walk
// the stream in strides). Two columns: two passes of 4 (Q8_0 N = 2, 1 / 2 threads, two runs:
// 0.60 / 0.67 and 0.72 / 0.75 against 0.50 / 0.53 and 0.59 / 0.59 with four passes of 2). The first
// pass prefetches the stream 8 KiB ahead (without it: 0.44-0.67 of the read).
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
                  acc[n][b] = _mm256_add_epi32(
                      acc[n][b], _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w, x[h][n]), s128),
                                                  _mm256_madd_epi16(_mm256_maddubs_epi16(wl, x[h][n]), ones)));
                else
                  acc[n][b] = _mm256_add_epi32(acc[n][b], _mm256_madd_epi16(_mm256_maddubs_epi16(w, x[h][n]), ones));
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
          int8_epilogue8(sum, sa != nullptr, ba, bx, sw + row, swz + row, a.C + 64 * n + row);
        }
      }
    }
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
// not a shuffle), and the low codes take no shift. Against the runtime-shift, sign-extending form
// (4096 x 14336, N = 1, cold, two runs alternating the builds, vs the plain read): 1 thread
// 0.66 / 0.67 against 0.50 / 0.45, 2 threads 0.70 / 0.66 against 0.58 / 0.57.
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

// ---------------------------------------------------------------- level 2, FusedDQP
// The kernels of the bf16 / fp32 routes after level 1, each the portable kernel's arithmetic in
// its order: the same bits.

// FusedDQP dot (fdq_dot_args): portable::fdq_dot's 16 per-lane FMA chains as two 8-lane halves,
// 4 rows at a time sharing each activation load (8 chains: two FMAs per cycle at a latency of 4).
LUTKIT_AVX2_DQ inline void fdq_dot(const fdq_dot_args& a) {
  std::size_t r = 0;
  for (; r + 4 <= a.rows; r += 4)
    for (std::size_t n = 0; n < a.N; ++n) {
      __m256 acc[4][2];
      const float* w[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const float* p = a.part + ((r + std::size_t(i)) * a.N + n) * 16;
        acc[i][0] = _mm256_loadu_ps(p);
        acc[i][1] = _mm256_loadu_ps(p + 8);
        w[i] = a.W + (r + std::size_t(i)) * a.ldw;
      }
      const float* x = a.x + n * a.ldx;
      for (std::size_t k = 0; k < a.len; k += 16) {
        const __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(w[i] + k), x0, acc[i][0]);
          acc[i][1] = _mm256_fmadd_ps(_mm256_loadu_ps(w[i] + k + 8), x1, acc[i][1]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        float* p = a.part + ((r + std::size_t(i)) * a.N + n) * 16;
        _mm256_storeu_ps(p, acc[i][0]);
        _mm256_storeu_ps(p + 8, acc[i][1]);
      }
    }
  for (; r < a.rows; ++r)
    for (std::size_t n = 0; n < a.N; ++n) {
      float* p = a.part + (r * a.N + n) * 16;
      __m256 c0 = _mm256_loadu_ps(p), c1 = _mm256_loadu_ps(p + 8);
      const float* w = a.W + r * a.ldw;
      const float* x = a.x + n * a.ldx;
      for (std::size_t k = 0; k < a.len; k += 16) {
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(x + k), c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k + 8), _mm256_loadu_ps(x + k + 8), c1);
      }
      _mm256_storeu_ps(p, c0);
      _mm256_storeu_ps(p + 8, c1);
    }
}

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

template <class P>
dq_level1_fns<P> level1_fns() {
  if constexpr (!has_level1<P>()) {
    return {};
  } else {
    dq_level1_fns<P> f{&codes_steps<P>, &codes_rows<P>};
    using FT = format_traits<typename P::format>;
    if constexpr (levels_are_codes<P>() || (FT::integer_levels && FT::max_code < 16)) f.levels_steps = &levels_steps<P>;
    if constexpr (has_int8_fused<P>() && P::spec.whole_codes()) {
      f.int8_fused[0] = &mk_int8_whole<P, 1>;
      f.int8_fused[1] = &mk_int8_whole<P, 2>;
    } else if constexpr (has_int8_fused<P>()) {
      f.int8_fused[0] = &mk_int8_fused<P, 1>;
      f.int8_fused[1] = &mk_int8_fused<P, 2>;
    }
    return f;
  }
}

inline const dq_kernel_set& kernels() {
  static const dq_kernel_set k = [] {
    dq_kernel_set s = portable_dq_kernels();
    s.name = "avx2";
    s.int8[0] = &mk_int8<1>;
    s.int8[1] = &mk_int8<2>;
    s.int8[2] = &mk_int8<3>;
    [&]<int... I>(std::integer_sequence<int, I...>) {
      ((s.bf16[I] = &mk_val<true, I + 1>, s.f32[I] = &mk_val<false, I + 1>), ...);
    }(std::make_integer_sequence<int, mk_val_cols>{});
    s.halves = &avx2::halves_to_float;
    s.rows_to_steps = &avx2::rows_to_steps;
    s.fdq = &avx2::fdq_dot;
    s.group16_f32 = &avx2::group16_f32;
    s.group16_bf16 = &avx2::group16_bf16;
    s.group_codes_f32 = &avx2::group_codes<float>;
    s.group_codes_bf16 = &avx2::group_codes<uint16_t>;
    s.tg_groups_bf16 = &avx2::tg_groups_bf16;
    s.tg_groups_f32 = &avx2::tg_groups_f32;
    s.tg_int8[0] = &tg_int8<1>;
    s.tg_int8[1] = &tg_int8<2>;
    s.tg_int8[2] = &tg_int8<3>;
    s.tg_int8[3] = &tg_int8<4>;
    return s;
  }();
  return k;
}

}  // namespace lutkit::detail::avx2
#include "../intrinsics_end.hpp"
#endif
