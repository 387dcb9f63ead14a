// lutkit — llama.cpp's K-quants as policy formats: Q2_K, Q3_K, Q4_K, Q5_K and Q6_K.
//
// A K-quant super-block of 256 weights holds fp16 super-scales and 6- or 8-bit sub-block scales
// (and minimums); the scale of a sub-block is their product, d * sc, which fp32 holds exactly (an
// 11-bit significand times a 6- or 8-bit integer) and no 16-bit type does. The blob keeps them as
// the file does (format_traits::super_params; the tiling spec's super-groups): an int8 code per
// sub-block (the group) and row, and an fp32 super-scale per 256 k and row; every kernel forms
// the product, the exact value llama.cpp's dequantization multiplies by.
//   Q4_K  fmt::q4_k, group<32>: min-form 4-bit whole codes (as Q4_1), scale d * sc, minimum
//         -dmin * m; the int8 decode, FusedDQP and the dequant-GEMM serve it.
//   Q6_K  fmt::q6_k, group<16>: 6-bit codes q in bit planes (6 planes: never widened to 8 bits),
//         zero 32, scale d * sc (sc int8, so scales can be negative); the LUT-GEMV (16-k
//         blocks keep its int16 sums in range) and the dequant-GEMM serve it.
//   Q3_K  fmt::q3_k, group<16>: 3-bit codes q = low 2 bits + 4 x the hmask bit in 3 bit planes,
//         zero 4, scale d * (s - 32) (s 6 bits: negative scales too); served as Q6_K.
//   Q5_K  fmt::q5_k, group<32>: Q4_K's scales and minimums with 5-bit codes (the fifth bit from
//         qh) in 5 bit planes; the LUT-GEMV (adding min * sum(x) per group) and the dequant
//         kernels serve it.
//   Q2_K  fmt::q2_k, group<16>: 2-bit codes in 2 bit planes, scale d * (sc & 15), minimum
//         -dmin * (sc >> 4); served as Q5_K.
// The importers give, for every weight, the float llama.cpp's dequantize_row_q2_K ... _q6_K gives.
// lutkit::quantize fits a super-group at a time (detail::fit_super): super-scales of
// super_sig_bits significant bits, so that super-scale x code x level is exact in fp32.
// The block decoding here is written apart from io/ggml_blocks.hpp's row dequantizers (quant/
// includes only core/), and tests/test_formats.cpp checks the two against each other.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../core/half.hpp"
#include "quant.hpp"

namespace lutkit {

namespace fmt {
struct q4_k {
  static constexpr int bits = 4;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = true;
};
struct q6_k {
  static constexpr int bits = 6;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = false;
};
struct q3_k {
  static constexpr int bits = 3;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = false;
};
struct q5_k {
  static constexpr int bits = 5;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = true;
};
struct q2_k {
  static constexpr int bits = 2;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = true;
};
}  // namespace fmt


template <>
struct format_traits<fmt::q4_k> : detail::min_form4_traits {
  static constexpr bool bf16_params = false;
  static constexpr bool super_params = true;
  static constexpr const char* book_name = "q4k";  // policy names read w4q4k_g32_asym_...
  static constexpr int super_sig_bits = 13;  // x 7-bit codes x 4-bit levels: 24 bits
  // the int8 prefill's fold in two planes (detail::int8_super_fold_split): llama.cpp's codes
  // 0..63 = 8 h + l, h and l times levels 0..15 each a byte
  static constexpr int int8_fold_offset = 0, int8_fold_split = 8;
};
template <>
struct format_traits<fmt::q5_k> : detail::min_form_traits<5, true> {
  static constexpr bool bf16_params = false;
  static constexpr bool super_params = true;
  static constexpr const char* book_name = "q5k";  // policy names read w5q5k_g32_asym_...
  static constexpr int super_sig_bits = 12;  // x 7-bit codes x 5-bit levels
  // as Q4_K's: codes 0..63 = 8 h + l, h and l (up to 7) times levels 0..31 (up to 217) each a byte
  static constexpr int int8_fold_offset = 0, int8_fold_split = 8;
};
template <>
struct format_traits<fmt::q2_k> : detail::min_form_traits<2, true> {
  static constexpr bool bf16_params = false;
  static constexpr bool super_params = true;
  static constexpr const char* book_name = "q2k";  // policy names read w2q2k_g16_asym_...
  static constexpr int super_sig_bits = 15;  // x 7-bit codes x 2-bit levels
  // the int8 prefill multiplies each level by its group's scale code before the dot
  // (detail::int8_super_fold_offset): llama.cpp's codes 0..15 x levels 0..3 stay within a byte
  static constexpr int int8_fold_offset = 0;
};

namespace detail {
// The symmetric K-quants: B bit planes, weight = scale * (q - 2^(B-1)), super-group parameters. The
// LUT-GEMV runs them (weights linear in the bits); at up to 6 planes the int16 bound allows 4-step
// (16-k) blocks with int8 tables, one block a group.
template <int B>
struct kquant_planes_traits {
  static constexpr bool is_ternary = false;
  static constexpr int bits = B;
  static constexpr bool asymmetric = false;
  static constexpr int planes = B;
  static constexpr int k_per_step = 4;
  static constexpr int max_code = (1 << B) - 1;
  static constexpr float sym_zero = float(1 << (B - 1));
  static constexpr int plane_weight_sum = (1 << B) - 1;
  static constexpr bool integer_levels = true;
  static constexpr float level(int code) { return float(code); }
  static constexpr float value(float scale, float zero, int code) { return scale * (level(code) - zero); }
  static constexpr bool lut_gemv_capable = true;
  static constexpr bool is_codebook = false;
  static constexpr bool min_form = false;
  static constexpr bool bf16_params = false;
  static constexpr bool super_params = true;
};
}  // namespace detail
template <>
struct format_traits<fmt::q6_k> : detail::kquant_planes_traits<6> {
  static constexpr const char* book_name = "q6k";  // policy names read w6q6k_g16_...
  static constexpr int super_sig_bits = 11;  // x 7-bit codes x |q - 32| <= 32: 24 bits
  // the int8 prefill's fold in three planes (detail::int8_super_fold_split): every code -128..127 as
  // three digits -3..4 of base 8, a digit times q - 32 plus 128 a byte (0..252)
  static constexpr int int8_fold_offset = 128, int8_fold_split = 8, int8_fold_planes = 3, int8_fold_digit_min = -3;
};
template <>
struct format_traits<fmt::q3_k> : detail::kquant_planes_traits<3> {
  static constexpr const char* book_name = "q3k";  // policy names read w3q3k_g16_...
  static constexpr int super_sig_bits = 14;  // x 7-bit codes x |q - 4| <= 4
  // as Q2_K's: llama.cpp's codes -32..31 x (q - 4) in -4..3 lie in [-124, 128], a byte from -124
  static constexpr int int8_fold_offset = 124;
};

namespace detail {
// a block's little-endian fp16 field as fp32
inline float kq_f16(const unsigned char* p) { return f16_to_f32(uint16_t(p[0] | (unsigned(p[1]) << 8))); }
// Q4_K's 6-bit scale and minimum of sub-block j (0..7) from its 12 scale bytes s: sub-blocks 0-3
// in the low 6 bits of bytes j (scale) and j + 4 (minimum); sub-blocks 4-7 in the low and high
// nibbles of byte j + 4, their top two bits in the top bits of bytes j - 4 and j
inline void kq_scale_min(const unsigned char* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}
// whether a block's fp16 field is finite (from its bits: exponent not all ones)
inline bool kq_finite(const unsigned char* p) { return (p[1] & 0x7Cu) != 0x7Cu; }
// whether a block's fp16 field is +-0 (from its bits)
inline bool kq_zero(const unsigned char* p) { return ((p[0] | (unsigned(p[1]) << 8)) & 0x7FFFu) == 0; }

// A K-quant super-block type as the importer and the direct packer read it: its format, weights
// and bytes per block, the weights per sub-block (the policy's group), and of a block b: finite()
// (its fp16 super-scales are), sup(b) and sup_min(b) (d and -dmin; 0 for the symmetric types),
// scale(b, j) and minimum(b, j) of sub-block j (the fp32 values llama.cpp forms: int8 multiples
// of sup and sup_min), codes8(b, e0) (codes e0 .. e0 + 7, e0 a multiple of 8; byte i: e0 + i:
// formed in a 64-bit word; codes64_by8 in quant.hpp takes 64 at a time).
// scale_code(b, j) and min_code(b, j) are the sub-block's integer factors themselves (scale =
// sup x scale_code exactly: an fp16 times a code of at most 8 bits), and sup_zero(b) /
// sup_min_zero(b) say whether sup / sup_min is +-0 (then the packer's code keeps the product's sign
// instead, detail::super_code).
struct ggml_q4_k {
  using format = fmt::q4_k;
  static constexpr std::size_t block_elems = 256, block_bytes = 144, sub = 32;
  static constexpr const char* name = "Q4_K";
  static bool finite(const unsigned char* b) { return kq_finite(b) && kq_finite(b + 2); }
  static float sup(const unsigned char* b) { return kq_f16(b); }
  static float sup_min(const unsigned char* b) { return -kq_f16(b + 2); }
  static float scale(const unsigned char* b, int j) { return sup(b) * float(scale_code(b, j)); }
  // w = (d sc) q - dmin m = scale * q + minimum
  static float minimum(const unsigned char* b, int j) { return sup_min(b) * float(min_code(b, j)); }
  static int scale_code(const unsigned char* b, int j) {
    int sc, m;
    kq_scale_min(b + 4, j, sc, m);
    return sc;
  }
  static int min_code(const unsigned char* b, int j) {
    int sc, m;
    kq_scale_min(b + 4, j, sc, m);
    return m;
  }
  static bool sup_zero(const unsigned char* b) { return kq_zero(b); }
  static bool sup_min_zero(const unsigned char* b) { return kq_zero(b + 2); }
  // sub-blocks 2c and 2c + 1 share qs[32 c .. 32 c + 31]: low nibbles, then high
  static uint64_t codes8(const unsigned char* b, unsigned e0) {
    const unsigned c = e0 / 64, l = e0 % 64, sh = l < 32 ? 0 : 4;
    uint64_t x;
    std::memcpy(&x, b + 16 + 32 * c + l % 32, 8);
    return (x >> sh) & 0x0F0F0F0F0F0F0F0Full;
  }
};
struct ggml_q6_k {
  using format = fmt::q6_k;
  static constexpr std::size_t block_elems = 256, block_bytes = 210, sub = 16;
  static constexpr const char* name = "Q6_K";
  static bool finite(const unsigned char* b) { return kq_finite(b + 208); }
  static float sup(const unsigned char* b) { return kq_f16(b + 208); }
  static float sup_min(const unsigned char*) { return 0.f; }
  static float scale(const unsigned char* b, int j) { return sup(b) * float(scale_code(b, j)); }
  // (symmetric: no minimum; the in-place source's zero slots, which clang instantiates with it)
  static float minimum(const unsigned char*, int) { return 0.f; }
  static int scale_code(const unsigned char* b, int j) { return int8_t(b[192 + j]); }
  static int min_code(const unsigned char*, int) { return 0; }
  static bool sup_zero(const unsigned char* b) { return kq_zero(b + 208); }
  static bool sup_min_zero(const unsigned char*) { return true; }
  // weight e = 128 h + 32 c + l: low 4 bits from ql[64 h + 32 (c & 1) + l] (low nibble for
  // c < 2), top 2 bits from bits 2c, 2c + 1 of qh[32 h + l]
  static uint64_t codes8(const unsigned char* b, unsigned e0) {
    const unsigned h = e0 / 128, c = (e0 / 32) % 4, l = e0 % 32;
    uint64_t lo, hi;
    std::memcpy(&lo, b + 64 * h + 32 * (c & 1) + l, 8);
    std::memcpy(&hi, b + 128 + 32 * h + l, 8);
    lo = (lo >> (c < 2 ? 0 : 4)) & 0x0F0F0F0F0F0F0F0Full;
    hi = (hi >> (2 * c)) & 0x0303030303030303ull;
    return lo | (hi << 4);
  }
};

// Q5_K (176 bytes: Q4_K's d, dmin and scales, qh[32] at 16, qs[128] at 48): sub-block j's scale
// and minimum as Q4_K's; code = Q4_K's nibble + 16 x bit j of qh[e % 32]
struct ggml_q5_k {
  using format = fmt::q5_k;
  static constexpr std::size_t block_elems = 256, block_bytes = 176, sub = 32;
  static constexpr const char* name = "Q5_K";
  static bool finite(const unsigned char* b) { return ggml_q4_k::finite(b); }
  static float sup(const unsigned char* b) { return ggml_q4_k::sup(b); }
  static float sup_min(const unsigned char* b) { return ggml_q4_k::sup_min(b); }
  static float scale(const unsigned char* b, int j) { return ggml_q4_k::scale(b, j); }
  static float minimum(const unsigned char* b, int j) { return ggml_q4_k::minimum(b, j); }
  static int scale_code(const unsigned char* b, int j) { return ggml_q4_k::scale_code(b, j); }
  static int min_code(const unsigned char* b, int j) { return ggml_q4_k::min_code(b, j); }
  static bool sup_zero(const unsigned char* b) { return ggml_q4_k::sup_zero(b); }
  static bool sup_min_zero(const unsigned char* b) { return ggml_q4_k::sup_min_zero(b); }
  static uint64_t codes8(const unsigned char* b, unsigned e0) {
    const unsigned c = e0 / 64, l = e0 % 64, sh = l < 32 ? 0 : 4, j = e0 / 32;
    uint64_t lo, hi;
    std::memcpy(&lo, b + 48 + 32 * c + l % 32, 8);
    std::memcpy(&hi, b + 16 + l % 32, 8);
    return ((lo >> sh) & 0x0F0F0F0F0F0F0F0Full) | (((hi >> j) & 0x0101010101010101ull) << 4);
  }
};
// Q2_K (84 bytes: scales[16], qs[64] at 16, fp16 d at 80, dmin at 82). Sub-block i: scale
// d * (scales[i] & 15), minimum -(dmin * (scales[i] >> 4)); weight e = 128 h + 32 j + l: bits
// 2j, 2j + 1 of qs[32 h + l] (Q3_K's low bits), sub-block e / 16.
struct ggml_q2_k {
  using format = fmt::q2_k;
  static constexpr std::size_t block_elems = 256, block_bytes = 84, sub = 16;
  static constexpr const char* name = "Q2_K";
  static bool finite(const unsigned char* b) { return kq_finite(b + 80) && kq_finite(b + 82); }
  static float sup(const unsigned char* b) { return kq_f16(b + 80); }
  static float sup_min(const unsigned char* b) { return -kq_f16(b + 82); }
  static float scale(const unsigned char* b, int i) { return sup(b) * float(scale_code(b, i)); }
  static float minimum(const unsigned char* b, int i) { return sup_min(b) * float(min_code(b, i)); }
  static int scale_code(const unsigned char* b, int i) { return b[i] & 0xF; }
  static int min_code(const unsigned char* b, int i) { return b[i] >> 4; }
  static bool sup_zero(const unsigned char* b) { return kq_zero(b + 80); }
  static bool sup_min_zero(const unsigned char* b) { return kq_zero(b + 82); }
  static uint64_t codes8(const unsigned char* b, unsigned e0) {
    const unsigned h = e0 / 128, j = (e0 / 32) % 4, l = e0 % 32;
    uint64_t lo;
    std::memcpy(&lo, b + 16 + 32 * h + l, 8);
    return (lo >> (2 * j)) & 0x0303030303030303ull;
  }
};
// Q3_K (110 bytes: hmask[32], qs[64], 12 bytes of 6-bit scales, fp16 d). Weight e = 128 h + 32 j + l
// (j = 0..3, l < 32): low 2 bits from bits 2j, 2j + 1 of qs[32 h + l], the third from bit 4 h + j of
// hmask[l]; w = d (s - 32) (q - 4), sub-block e / 16. Scale s of sub-block i: its low 4 bits in
// byte i (i < 8, low nibble) or i - 8 (high nibble), its top 2 bits at bit 2 (i / 4) of byte 8 + i % 4.
struct ggml_q3_k {
  using format = fmt::q3_k;
  static constexpr std::size_t block_elems = 256, block_bytes = 110, sub = 16;
  static constexpr const char* name = "Q3_K";
  static bool finite(const unsigned char* b) { return kq_finite(b + 108); }
  static float sup(const unsigned char* b) { return kq_f16(b + 108); }
  static float sup_min(const unsigned char*) { return 0.f; }
  static int scale_code(const unsigned char* b, int i) {
    const unsigned char* s = b + 96;
    const int lo = i < 8 ? (s[i] & 0xF) : (s[i - 8] >> 4);
    const int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (lo | (hi << 4)) - 32;
  }
  static float scale(const unsigned char* b, int i) { return sup(b) * float(scale_code(b, i)); }
  static float minimum(const unsigned char*, int) { return 0.f; }
  static int min_code(const unsigned char*, int) { return 0; }
  static bool sup_zero(const unsigned char* b) { return kq_zero(b + 108); }
  static bool sup_min_zero(const unsigned char*) { return true; }
  static uint64_t codes8(const unsigned char* b, unsigned e0) {
    const unsigned h = e0 / 128, j = (e0 / 32) % 4, l = e0 % 32;
    uint64_t lo, hi;
    std::memcpy(&lo, b + 32 + 32 * h + l, 8);
    std::memcpy(&hi, b + l, 8);
    lo = (lo >> (2 * j)) & 0x0303030303030303ull;
    hi = (hi >> (4 * h + j)) & 0x0101010101010101ull;
    return lo | (hi << 2);
  }
};

// the checks of every reader of a K-quant tensor: the policy holds the block's format with
// group<sub>, K a multiple of the super-block, the buffer large enough
template <class P, class Block>
void check_ggml_superblocks(const char* what, const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes) {
  constexpr std::size_t E = Block::block_elems;
  constexpr bool policy_ok = std::is_same_v<typename P::format, typename Block::format> &&
                             P::spec.group_k == int(Block::sub) && !P::spec.per_tensor;
  require(policy_ok, what, ": the policy must have the ", Block::name, " format and group<", Block::sub, ">, got ",
          P::name());
  require(blocks != nullptr, what, ": null block pointer");
  check_matrix_shape(M, K, what);
  require(K % E == 0, what, ": K (", K, ") is not a multiple of the super-block size ", E);
  const std::size_t nblocks = M * (K / E);
  require(nbytes == unknown_size || nbytes >= nblocks * Block::block_bytes, what, ": buffer of ", nbytes,
          " bytes holds fewer than ", nblocks, " blocks of ", Block::block_bytes, " bytes");
}
template <class Block>
void check_superblock_finite(const char* what, const unsigned char* b, std::size_t i, std::size_t K) {
  // (the row is formed only for the message: a division per block was a measurable part of a load)
  if (!Block::finite(b)) [[unlikely]]
    require(false, what, ": block ", i, " (row ", i / (K / Block::block_elems), ") has a non-finite super-block scale");
}

template <class P, class Block>
quantized<P> import_ggml_superblocks(const char* what, const void* blocks, std::size_t M, std::size_t K,
                                     std::size_t nbytes, thread_pool* pool) {
  check_ggml_superblocks<P, Block>(what, blocks, M, K, nbytes);
  constexpr std::size_t E = Block::block_elems, G = E / Block::sub;
  quantized<P> q = make_quantized<P>(M, K);
  // super-block i is groups G i .. G i + G - 1 of the scales (row i / (K / E))
  auto part = [&](std::size_t i0, std::size_t i1) {
    const auto* b = static_cast<const unsigned char*>(blocks) + i0 * Block::block_bytes;
    for (std::size_t i = i0; i < i1; ++i, b += Block::block_bytes) {
      check_superblock_finite<Block>(what, b, i, K);
      q.supers[i] = Block::sup(b);  // (a row's super-blocks are its super-groups: supers_per_row = K / E)
      if constexpr (P::spec.asymmetric) q.super_mins[i] = Block::sup_min(b);
      for (std::size_t j = 0; j < G; ++j) {
        q.scales[G * i + j] = Block::scale(b, int(j));
        if constexpr (P::spec.asymmetric) q.zeros[G * i + j] = Block::minimum(b, int(j));
      }
      for (unsigned e = 0; e < E; e += 8) {
        const uint64_t x = Block::codes8(b, e);
        std::memcpy(q.codes.data() + E * i + e, &x, 8);
      }
    }
  };
  split_block_rows(pool, M, K / E, part);
  return q;
}
}  // namespace detail

// block_q4_k (144 bytes: fp16 d, fp16 dmin, 12 bytes of 6-bit sub-block scales and minimums, 128
// bytes of nibbles): w = (d sc) q - dmin m per 32-weight sub-block. Policy: fmt::q4_k, group<32>
// (scale d sc, minimum -(dmin m), both fp32). To a blob: pack_q4_k.
template <class P>
quantized<P> import_q4_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_superblocks<P, detail::ggml_q4_k>("import_q4_k", blocks, M, K, nbytes, pool);
}
// block_q6_k (210 bytes: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 sub-block
// scales, fp16 d): w = (d sc) (q - 32) per 16-weight sub-block. Policy: fmt::q6_k, group<16>
// (code q, scale d sc in fp32). To a blob: pack_q6_k.
template <class P>
quantized<P> import_q6_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_superblocks<P, detail::ggml_q6_k>("import_q6_k", blocks, M, K, nbytes, pool);
}

// block_q5_k (176 bytes: Q4_K's fields with 32 bytes of fifth code bits): w = (d sc) q - dmin m per
// 32-weight sub-block, q 5 bits. Policy: fmt::q5_k, group<32> (scale d sc, minimum -(dmin m), both
// fp32). To a blob: pack_q5_k.
template <class P>
quantized<P> import_q5_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_superblocks<P, detail::ggml_q5_k>("import_q5_k", blocks, M, K, nbytes, pool);
}
// block_q2_k (84 bytes: 16 bytes of 4-bit scales and minimums, 64 bytes of 2-bit codes, fp16 d
// and dmin): w = (d sc) q - dmin m per 16-weight sub-block. Policy: fmt::q2_k, group<16> (scale
// d sc, minimum -(dmin m), both fp32). To a blob: pack_q2_k.
template <class P>
quantized<P> import_q2_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_superblocks<P, detail::ggml_q2_k>("import_q2_k", blocks, M, K, nbytes, pool);
}
// block_q3_k (110 bytes: 32 bytes of high code bits, 64 bytes of 2-bit codes, 12 bytes of 6-bit
// sub-block scales, fp16 d): w = d (s - 32) (q - 4) per 16-weight sub-block. Policy: fmt::q3_k,
// group<16> (code q, scale d (s - 32) in fp32). To a blob: pack_q3_k.
template <class P>
quantized<P> import_q3_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_superblocks<P, detail::ggml_q3_k>("import_q3_k", blocks, M, K, nbytes, pool);
}

}  // namespace lutkit
