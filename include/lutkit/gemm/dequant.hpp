// lutkit — two-level LUT dequantization of a packed blob (T-MAN §4.1, Fig. 7), shared by the
// prefill dequant-GEMM, FusedDQP and the public dequantize():
//   level 1  bit-repack tables turn the bit-serial planes of the LUT-GEMV layout into
//            bit-parallel codes: one lookup per (plane pair, row, step), no per-bit shift/and/or
//            (formats stored as whole codes, tiling_spec::whole_codes: a byte or nibble read);
//   level 2  a per-(row, group) code -> value table with the scale and zero baked in
//            (fp32 or bf16 entries), so dequantization is lookups with no per-element float math.
// Everything reads offsets from the tiling spec (packed_layout); nothing here computes a stride.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "../core/half.hpp"
#include "../core/policy.hpp"
#include "../core/tiling.hpp"
#include "../quant/packed_weights.hpp"

namespace lutkit {

namespace detail {

// ---------------------------------------------------------------- level 1: bit-repack tables
// pair[(lo plane nibble) | (hi plane nibble) << 4]: 4 code bytes (one per activation of the
// step), byte i = bit i of the lo plane | bit i of the hi plane << 1.
// lone[nibble]: byte i = bit i.   tern[index | sign << 4]: the 3 codes (t + 1) of a triple.
struct repack_tables {
  uint32_t pair[256];
  uint32_t lone[16];
  uint32_t tern[32];
};
constexpr repack_tables make_repack_tables() {
  repack_tables t{};
  for (int v = 0; v < 256; ++v) {
    uint32_t d = 0;
    for (int i = 0; i < 4; ++i) d |= uint32_t(((v >> i) & 1) | (((v >> (4 + i)) & 1) << 1)) << (8 * i);
    t.pair[v] = d;
  }
  for (int v = 0; v < 16; ++v) {
    uint32_t d = 0;
    for (int i = 0; i < 4; ++i) d |= uint32_t((v >> i) & 1) << (8 * i);
    t.lone[v] = d;
  }
  for (int v = 0; v < 32; ++v) {
    const int index = v & 15, sign = v >> 4;
    if (index > 13) continue;  // never produced by the packer
    const int w = sign ? 26 - index : index;  // inverse of ternary_encode
    t.tern[v] = uint32_t(w / 9) | uint32_t((w / 3) % 3) << 8 | uint32_t(w % 3) << 16;
  }
  return t;
}
inline constexpr repack_tables repack = make_repack_tables();

// Scale and zero of (tile t, group g, row r of the tile), as the packer stored them.
template <class P>
inline void group_params(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t g, int r,
                         float& s, float& z) {
  s = group_scale(L, data, t, g, std::size_t(r));
  z = group_zero(L, data, t, g, std::size_t(r));
}

// Level 1 for one tile: the codes of its 64 rows for k in [k0, k1) (multiples of block_k),
// written row-major: out[r * ldo + (k - k0)]. Rows need 4 bytes of slack after k1 - k0.
template <class P>
void unpack_codes(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, std::size_t k1,
                  uint8_t* out, std::size_t ldo) {
  constexpr auto& S = P::spec;
  constexpr int spb = S.step_pairs_per_block();
  // the dequant driver's tiles are 64 rows; a policy of a 128-row target is refused before this
  if constexpr (S.rows_per_tile != 64) throw error("dequant: 64-row tiles only, policy " + P::name());
  for (std::size_t blk = k0 / S.block_k; blk < k1 / S.block_k; ++blk) {
    const uint8_t* base = data + L.block_offset(t, blk, S);
    for (int spi = 0; spi < spb; ++spi) {
      for (int s = 0; s < 2; ++s) {
        const std::size_t step = blk * std::size_t(S.steps_per_block) + std::size_t(2 * spi + s);
        const std::size_t kk = step * std::size_t(S.k_per_step) - k0;
        if constexpr (S.whole_codes()) {
          const uint8_t* pair = base + spi * S.step_pair_bytes();
          constexpr unsigned mask = (1u << S.planes) - 1u;
          for (int r = 0; r < 64; ++r)
            for (int i = 0; i < 4; ++i)
              out[std::size_t(r) * ldo + kk + std::size_t(i)] =
                  uint8_t((pair[S.code_byte_in_step_pair(r, s, i)] >> S.code_shift(s)) & mask);
        } else if constexpr (S.plane_chunks()) {
          // plane orders (sve): the element map of the spec, one row at a time
          const uint8_t* pair = base + spi * S.step_pair_bytes();
          for (int r = 0; r < 64; ++r) {
            const int sh = S.index_shift(r, s);
            uint32_t v = 0;
            if constexpr (S.ternary) {
              const int bit = S.sign_bit_in_block(r, spi, s);
              const int sign = (base[bit / 8] >> (bit % 8)) & 1;
              v = repack.tern[((pair[S.index_byte_in_step_pair(r, 0, s)] >> sh) & 15) | sign << 4];
            } else {
              for (int p = 0; p < S.planes; ++p)
                v |= repack.lone[(pair[S.index_byte_in_step_pair(r, p, s)] >> sh) & 15] << p;
            }
            std::memcpy(out + std::size_t(r) * ldo + kk, &v, 4);
          }
        } else if constexpr (S.ternary) {
          const uint8_t* c = base + S.lone_chunk_in_block(spi) + 32 * s;
          const uint8_t* sg = base + S.sign_in_block(spi);
          for (int rp = 0; rp < 32; ++rp) {
            const int q = lone_byte_of_row(rp);
            const int b_lo = 32 * s + q, b_hi = 64 + 32 * s + q;
            const int sign_lo = (sg[b_lo / 8] >> (b_lo % 8)) & 1, sign_hi = (sg[b_hi / 8] >> (b_hi % 8)) & 1;
            const uint32_t lo = repack.tern[(c[q] & 15) | sign_lo << 4];
            const uint32_t hi = repack.tern[(c[q] >> 4) | sign_hi << 4];
            std::memcpy(out + std::size_t(rp) * ldo + kk, &lo, 4);
            std::memcpy(out + std::size_t(rp + 32) * ldo + kk, &hi, 4);
          }
        } else {
          uint32_t lo[32], hi[32];
          for (int rp = 0; rp < 32; ++rp) lo[rp] = hi[rp] = 0;
          for (int p = 0; p < S.planes / 2; ++p) {
            const uint8_t* c = base + S.paired_chunk_in_block(spi, s, p);
            for (int rp = 0; rp < 32; ++rp) {
              const unsigned b0 = c[2 * rp], b1 = c[2 * rp + 1];
              lo[rp] |= repack.pair[(b0 & 15u) | ((b1 & 15u) << 4)] << (2 * p);
              hi[rp] |= repack.pair[(b0 >> 4) | (b1 & 0xF0u)] << (2 * p);
            }
          }
          if constexpr (S.planes % 2 == 1) {
            const uint8_t* c = base + S.lone_chunk_in_block(spi) + 32 * s;
            for (int rp = 0; rp < 32; ++rp) {
              const unsigned b = c[lone_byte_of_row(rp)];
              lo[rp] |= repack.lone[b & 15u] << (S.planes - 1);
              hi[rp] |= repack.lone[b >> 4] << (S.planes - 1);
            }
          }
          for (int rp = 0; rp < 32; ++rp) {
            std::memcpy(out + std::size_t(rp) * ldo + kk, &lo[rp], 4);
            std::memcpy(out + std::size_t(rp + 32) * ldo + kk, &hi[rp], 4);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- level 2: code -> value
inline constexpr int max_codes = 256;
template <class P>
constexpr int code_count() {
  return format_traits<typename P::format>::max_code + 1;
}
// Codes whose level is not the code itself (codebooks) need a byte map before integer kernels.
template <class P>
constexpr bool levels_are_codes() {
  using FT = format_traits<typename P::format>;
  for (int c = 0; c <= FT::max_code; ++c)
    if (FT::level(c) != float(c)) return false;
  return true;
}

// Float codebooks (NF4) in the int8 decode ("split levels"): a level L in [-1, 1] becomes the
// fixed point Q = round(L * 2^13) + 2^13 in [0, 2^14] (|(Q - 2^13) * 2^-13 - L| <= 2^-14), held
// as two u8 levels hi = Q >> 7 (<= 128) and lo = Q & 127: per scale group the int32
// 128 * sum(hi * x) + sum(lo * x) is sum(Q * x) exactly (groups of at most 512 k), and the weight
// is s * (Q - 2^13) * 2^-13 (zero coefficient s). Symmetric 16-code books with zero 0 only.
inline constexpr int split_level_bits = 13;
template <class P>
constexpr bool split_levels() {
  using FT = format_traits<typename P::format>;
  constexpr auto& S = P::spec;
  if (FT::integer_levels || S.ternary || S.asymmetric || S.min_form || S.sym_zero != 0.f || FT::max_code != 15 ||
      S.planes != 4 || S.group_k == 0 || S.group_k > 512)
    return false;
  for (int c = 0; c <= FT::max_code; ++c)
    if (!(FT::level(c) >= -1.f && FT::level(c) <= 1.f)) return false;
  return true;
}
template <class P>
constexpr int split_level_q(int code) {
  const double v = double(format_traits<typename P::format>::level(code)) * double(1 << split_level_bits);
  const long r = v >= 0 ? long(v + 0.5) : -long(-v + 0.5);
  return int(r) + (1 << split_level_bits);
}

// Whole codes (tiling_spec::whole_codes: 8 bits, codebooks, Q4NX): a step's 64 rows are already
// in the step-major order, register o holding rows 8 o .. 8 o + 7 (a dword each) at byte
// code_byte_in_step_pair(8 o, s, 0) of the step pair: one load (4 bits: and a shift and mask).
template <class P>
constexpr bool whole_codes_step_major() {
  constexpr auto& S = P::spec;
  if (!S.whole_codes()) return false;
  for (int r = 0; r < 64; ++r)
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 4; ++i)
        if (S.code_byte_in_step_pair(r, s, i) != S.code_byte_in_step_pair(8 * (r / 8), s, 0) + 4 * (r % 8) + i ||
            S.code_byte_in_step_pair(8 * (r / 8), s, 0) % 32 != 0)
          return false;
  return true;
}
// The integer levels' range (0 for float codebooks: split levels)
template <class P>
constexpr int max_level() {
  using FT = format_traits<typename P::format>;
  if constexpr (!FT::integer_levels) return 0;  // (split levels)
  int m = 0;
  for (int c = 0; c <= FT::max_code; ++c) m = std::max(m, int(FT::level(c)));
  return m;
}
template <class P>
constexpr int min_level() {
  using FT = format_traits<typename P::format>;
  if constexpr (!FT::integer_levels) return 0;
  int m = 255;
  for (int c = 0; c <= FT::max_code; ++c) m = std::min(m, int(FT::level(c)));
  return m;
}
// A bound on the bytes the int8 paradigm's levels (lut_weight_source::levels) hold: the largest
// integer level, or 255 where a level is negative (it wraps to a byte of 128 or more) or not an
// integer
template <class P>
constexpr int int8_level_max() {
  if constexpr (!format_traits<typename P::format>::integer_levels) return 255;
  return min_level<P>() < 0 ? 255 : std::min(max_level<P>(), 255);
}
// The int8 prefill's super-group fold (per-row activations): a format whose traits name an
// int8_fold_offset o (Q2_K, Q3_K) has small scale codes c in llama.cpp's files, so that
// c * (level - zero) + o is a byte: the dot over a whole super-group is then one exact int32 sum of
// those bytes times the activations, flushed once per super-group (times the fp32 super-scale)
// instead of once per 16-k group. o, or -1 where the format has none. A chunk whose codes leave
// the byte (lutkit's own quantizer uses codes up to 127) takes the per-group route.
template <class P>
constexpr int int8_super_fold_offset() {
  using FT = format_traits<typename P::format>;
  if constexpr (requires { FT::int8_fold_offset; }) {
    if constexpr (P::spec.super_k > 0 && levels_are_codes<P>()) return FT::int8_fold_offset;
  }
  return -1;
}
// The fold in planes (Q4_K, Q5_K: 6-bit scale codes c times levels up to 31 leave the byte; Q6_K:
// 8-bit codes times levels -32..31): a format whose traits also name int8_fold_split b writes c as
// digits of base b, c = sum_j b^j d_j with d_j in [m, m + b) (m: the traits' int8_fold_digit_min,
// else 0), one level set d_j * (level - zero) + offset per digit, each a byte, whose dots the
// kernel adds as sum_j b^j (plane j) (exact int32). Q4_K / Q5_K: b = 8, digits 0..7, two planes;
// Q6_K: b = 8, digits -3..4, three planes (every int8 code), offset 128. Only a kernel set whose
// int8 kernel over row-major activations takes the planes (mk_int8_rows_args::planes: AMX) runs
// it: with the products on tiles, two or three times the products cost less than a flush per 16-
// or 32-k group. b (a power of two), or 0 where the format has none.
template <class P>
constexpr int int8_super_fold_split() {
  using FT = format_traits<typename P::format>;
  if constexpr (requires { FT::int8_fold_split; }) {
    if constexpr (int8_super_fold_offset<P>() >= 0) return FT::int8_fold_split;
  }
  return 0;
}
// the fold's planes (1 without a split; the AMX kernel's forms take up to three) and its
// digits' least value
template <class P>
constexpr int int8_super_fold_planes() {
  using FT = format_traits<typename P::format>;
  if constexpr (int8_super_fold_split<P>() == 0) {
    return 1;
  } else if constexpr (requires { FT::int8_fold_planes; }) {
    static_assert(FT::int8_fold_planes >= 2 && FT::int8_fold_planes <= 3, "the fold takes two or three planes");
    return FT::int8_fold_planes;
  } else {
    return 2;
  }
}
template <class P>
constexpr int int8_super_fold_digit_min() {
  using FT = format_traits<typename P::format>;
  if constexpr (int8_super_fold_split<P>() > 0 && requires { FT::int8_fold_digit_min; })
    return FT::int8_fold_digit_min;
  else
    return 0;
}
// the weight of the fold's offset in the planes' sum, sum_j b^j (the sums start at -offset times
// it times sum(q): dq_activations::super_offset)
template <class P>
constexpr int int8_super_fold_offset_weight() {
  int w = 0;
  for (int j = 0, p = 1; j < int8_super_fold_planes<P>(); ++j, p *= std::max(int8_super_fold_split<P>(), 1)) w += p;
  return w;
}
// The fused int8 decode of whole codes (targets/cpu): step-major codes whose levels are the codes,
// small integer levels (a byte map) or split levels (NF4)
template <class P>
constexpr bool whole_codes_int8_fused() {
  using FT = format_traits<typename P::format>;
  return whole_codes_step_major<P>() &&
         (levels_are_codes<P>() || (FT::integer_levels && FT::max_code < 16) || split_levels<P>());
}

// The fused int8 decode's byte maps of 4-bit whole codes (vpshufb tables, code -> u8): split
// levels (NF4) the high and low parts of Q (hi = Q >> 7, lo = Q & 127); codebooks with integer
// levels level - bias in hi (bias 128: signed levels, as a byte)
struct level_byte_maps {
  alignas(16) uint8_t hi[16];
  alignas(16) uint8_t lo[16];
};
template <class P>
constexpr level_byte_maps whole_code_level_maps(int bias) {
  using FT = format_traits<typename P::format>;
  level_byte_maps m{};
  if constexpr (split_levels<P>()) {
    for (int c = 0; c <= FT::max_code; ++c) {
      m.hi[c] = uint8_t(split_level_q<P>(c) >> 7);
      m.lo[c] = uint8_t(split_level_q<P>(c) & 127);
    }
  } else if constexpr (!levels_are_codes<P>() && FT::max_code < 16) {
    for (int c = 0; c <= FT::max_code; ++c) m.hi[c] = uint8_t(int(FT::level(c)) - bias);
  }
  return m;
}

// The level-2 value of one code of a (row, group): value(scale, zero, code), as T.
template <class P, class T>
inline T level2_value(float s, float z, int c) {
  const float v = format_traits<typename P::format>::value(s, z, c);
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return f32_to_bf16(v);
}
// The level-2 table of one (row, group): every code's value.
template <class P, class T>
inline void level2_table(float s, float z, T* tbl) {
  for (int c = 0; c < code_count<P>(); ++c) tbl[c] = level2_value<P, T>(s, z, c);
}
// The values of n codes of one (row, group) without a table (a group shorter than the table).
template <class P, class T>
inline void level2_values(float s, float z, const uint8_t* codes, std::size_t n, T* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = level2_value<P, T>(s, z, codes[i]);
}

// Portable level-2 lookups of n codes.
template <class T>
inline void lookup_values(const uint8_t* codes, std::size_t n, const T* tbl, T* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = tbl[codes[i]];
}

}  // namespace detail

// The element type of a dequantized matrix: fp32, or bf16 stored as its uint16_t bit pattern.
enum class dq_type { f32, bf16 };

}  // namespace lutkit
