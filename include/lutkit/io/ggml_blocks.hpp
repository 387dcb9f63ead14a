// lutkit — llama.cpp's weight blocks, written from the published block layouts, and the
// dequantization of a row of blocks to float for each type lutkit reads:
//   Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL   blocks of 32 weights, one fp16 scale (and fp16 minimum)
//   Q2_K Q3_K Q4_K Q5_K Q6_K          super-blocks of 256: fp16 super-scales times 4-, 6- or 8-bit
//                                     sub-block scales (and minimums)
//   TQ1_0 TQ2_0                       ternary super-blocks of 256 (base-3 digits / 2-bit codes)
//   F16 BF16 F32                      plain
//
// Exactness: each function gives, for every weight, the float bits llama.cpp's
// `dequantize_row_<type>` gives (ggml's portable build, as on x86-64): the same fp32 operations in
// the same order — Q4_K is (d * sc) * q - (dmin * m), Q6_K is (d * sc) * q, Q4_1 is q * d + m —
// and fp16 scales widened as ggml widens them (a NaN comes out quiet, its payload kept). Every
// product these formats form before an add is exact in fp32 (at most 22 significant bits), so a
// compiler that fuses the multiply-add cannot change a finite result; blocks whose scales are Inf
// or NaN take a path that keeps each product rounded on its own and, where two NaNs meet in an add,
// keeps the left operand's as x86 does, so NaN payloads match too (on x86-64; other CPUs make
// their own default NaN, as ggml's build there does).
// docs/gguf.md says how this is checked against ggml itself.
//
// Blocks are read as bytes (no alignment needed; the structs below are all uint8_t fields and
// document the layout, their offsets are the format's).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "lutkit/core/bf16.hpp"
#include "lutkit/core/error.hpp"
#include "lutkit/core/half.hpp"
#include "lutkit/io/ggml_types.hpp"

namespace lutkit::ggml {

// ------------------------------------------------------------------ block layouts (byte order)
// fp16 fields are little-endian binary16; "qs" are the low bits of the codes, "qh" high bits.
struct block_q4_0 {  // w = d * (q - 8), q 4 bits: weight j < 16 in the low nibble of qs[j], j >= 16 high
  uint8_t d[2];
  uint8_t qs[16];
};
struct block_q4_1 {  // w = d * q + m
  uint8_t d[2];
  uint8_t m[2];
  uint8_t qs[16];
};
struct block_q5_0 {  // w = d * (q - 16), bit 4 of weight j is bit j of the little-endian qh
  uint8_t d[2];
  uint8_t qh[4];
  uint8_t qs[16];
};
struct block_q5_1 {  // w = d * q + m
  uint8_t d[2];
  uint8_t m[2];
  uint8_t qh[4];
  uint8_t qs[16];
};
struct block_q8_0 {  // w = d * q, q int8
  uint8_t d[2];
  uint8_t qs[32];
};
struct block_iq4_nl {  // w = d * kvalues[q], q 4 bits packed as Q4_0
  uint8_t d[2];
  uint8_t qs[16];
};
struct block_q2_k {  // 16 sub-blocks of 16: w = (d * (sc & 15)) * q - dmin * (sc >> 4), q 2 bits
  uint8_t scales[16];
  uint8_t qs[64];
  uint8_t d[2];
  uint8_t dmin[2];
};
struct block_q3_k {  // 16 sub-blocks of 16: w = (d * (s - 32)) * (q - 4 * !hbit), s 6 bits, q 2 bits
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint8_t d[2];
};
struct block_q4_k {  // 8 sub-blocks of 32: w = (d * sc) * q - dmin * m, sc and m 6 bits
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];
  uint8_t qs[128];
};
struct block_q5_k {  // as Q4_K with a fifth code bit in qh
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
struct block_q6_k {  // 16 sub-blocks of 16: w = (d * sc) * (q - 32), sc int8, q 6 bits
  uint8_t ql[128];
  uint8_t qh[64];
  uint8_t scales[16];
  uint8_t d[2];
};
struct block_tq1_0 {  // w = d * (t - 1), t a base-3 digit: 5 per byte of qs, 4 per byte of qh
  uint8_t qs[48];
  uint8_t qh[4];
  uint8_t d[2];
};
struct block_tq2_0 {  // w = d * (q - 1), q 2 bits
  uint8_t qs[64];
  uint8_t d[2];
};
static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22 &&
              sizeof(block_q5_1) == 24 && sizeof(block_q8_0) == 34 && sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_q2_k) == 84 && sizeof(block_q3_k) == 110 && sizeof(block_q4_k) == 144 &&
              sizeof(block_q5_k) == 176 && sizeof(block_q6_k) == 210);
static_assert(sizeof(block_tq1_0) == 54 && sizeof(block_tq2_0) == 66);

// IQ4_NL's 16 levels
inline constexpr int8_t iq4_nl_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};

// Where a block keeps its fp16 scale fields (d, then dmin / m where the type has one): byte
// offsets inside the block. Tests and seed writers use it to set edge scales.
struct scale_fields {
  int count;
  uint32_t offset[2];
};
constexpr scale_fields fp16_scale_fields(ggml_type t) {
  switch (t) {
    case ggml_type::q4_0: case ggml_type::q5_0: case ggml_type::q8_0: case ggml_type::iq4_nl: return {1, {0, 0}};
    case ggml_type::q4_1: case ggml_type::q5_1: case ggml_type::q4_k: case ggml_type::q5_k: return {2, {0, 2}};
    case ggml_type::q2_k: return {2, {80, 82}};
    case ggml_type::q3_k: return {1, {108, 0}};
    case ggml_type::q6_k: return {1, {208, 0}};
    case ggml_type::tq1_0: return {1, {52, 0}};
    case ggml_type::tq2_0: return {1, {64, 0}};
    default: return {0, {0, 0}};
  }
}

// The types dequantize_row reads.
constexpr bool can_dequantize(ggml_type t) {
  switch (t) {
    case ggml_type::q4_0: case ggml_type::q4_1: case ggml_type::q5_0: case ggml_type::q5_1: case ggml_type::q8_0:
    case ggml_type::iq4_nl: case ggml_type::q2_k: case ggml_type::q3_k: case ggml_type::q4_k: case ggml_type::q5_k:
    case ggml_type::q6_k: case ggml_type::tq1_0: case ggml_type::tq2_0: case ggml_type::f16: case ggml_type::bf16:
    case ggml_type::f32:
      return true;
    default:
      return false;
  }
}

// ------------------------------------------------------------------ scalars
// fp16 -> fp32 as ggml widens it: exact for every finite value and infinity; a NaN comes out
// quiet (quiet bit set, payload and sign kept), as ggml's multiply by 2^-112 leaves it.
inline float f16_to_f32(uint16_t h) {
  float f = lutkit::f16_to_f32(h);
  if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    x |= 0x00400000u;
    std::memcpy(&f, &x, 4);
  }
  return f;
}

namespace detail {
inline float load_f16(const uint8_t* p) { return f16_to_f32(uint16_t(p[0] | (unsigned(p[1]) << 8))); }
inline bool finite_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return (x & 0x7F800000u) != 0x7F800000u;
}
// x, kept as a rounded fp32 value: the compiler cannot fuse the operation that made it into the
// next one (used on blocks whose scales are Inf or NaN, where fusing could change a NaN's payload).
inline float rounded(float x) {
#if defined(__GNUC__) && (defined(__x86_64__) || (defined(__i386__) && defined(__SSE__)))
  __asm__("" : "+x"(x));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(x));
#else
  volatile float v = x;
  x = v;
#endif
  return x;
}
template <bool Keep>
inline float prod(float a, float b) {
  if constexpr (Keep) return rounded(a * b);
  else return a * b;
}
// a + b and a - b on blocks with non-finite scales, in ggml's operand order: when both are NaN the
// result is a's (quieted), as x86's addss / subss give for the expression as written — a compiler
// may otherwise swap the operands of an add or turn a - b into a + (-b), changing which NaN survives.
inline bool is_nan_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return (x & 0x7FFFFFFFu) > 0x7F800000u;
}
inline float quieted(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x |= 0x00400000u;
  std::memcpy(&f, &x, 4);
  return f;
}
template <bool Keep>
inline float add(float a, float b) {
  if constexpr (Keep) {
    if (is_nan_bits(a)) return quieted(a);
    if (is_nan_bits(b)) return quieted(b);
    return rounded(a + b);
  } else {
    return a + b;
  }
}
template <bool Keep>
inline float sub(float a, float b) {
  if constexpr (Keep) {
    if (is_nan_bits(a)) return quieted(a);
    if (is_nan_bits(b)) return quieted(b);
    return rounded(a - b);
  } else {
    return a - b;
  }
}

// Q4_K / Q5_K: the 6-bit scale and minimum of sub-block s (0..7) from the 12 scale bytes:
// sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (minimums); sub-blocks 4-7 in
// the nibbles of bytes 8-11, their top two bits in the top bits of bytes 0-3 / 4-7.
inline void k_scale_min(const uint8_t* s, int j, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = uint8_t((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    m = uint8_t((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}
// Q3_K: the 6-bit scale of sub-block s (0..15), as a signed value s - 32: low 4 bits in the
// nibbles of bytes 0-7 (sub-blocks 0-7 low nibbles, 8-15 high), top 2 bits in bytes 8-11.
inline int q3_k_scale(const uint8_t* s, int j) {
  const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
  return (lo | (hi << 4)) - 32;
}

inline void check_row(std::size_t k, std::size_t block, const char* type) {
  lutkit::detail::require(k % block == 0, "dequantize_row_", type, ": k = ", k, " is not a multiple of the block (",
                          block, " elements)");
}
}  // namespace detail

// ------------------------------------------------------------------ rows
// Each function reads k / block consecutive blocks at `src` and writes k floats to `y`
// (k a multiple of the block size, else lutkit::error).

inline void dequantize_row_q4_0(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 32, "q4_0");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 32; ++i, b += sizeof(block_q4_0), y += 32) {
    const float d = detail::load_f16(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
      y[j] = float((qs[j] & 0xF) - 8) * d;
      y[j + 16] = float((qs[j] >> 4) - 8) * d;
    }
  }
}

inline void dequantize_row_iq4_nl(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 32, "iq4_nl");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 32; ++i, b += sizeof(block_iq4_nl), y += 32) {
    const float d = detail::load_f16(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
      y[j] = d * float(iq4_nl_levels[qs[j] & 0xF]);
      y[j + 16] = d * float(iq4_nl_levels[qs[j] >> 4]);
    }
  }
}

inline void dequantize_row_q8_0(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 32, "q8_0");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 32; ++i, b += sizeof(block_q8_0), y += 32) {
    const float d = detail::load_f16(b);
    for (int j = 0; j < 32; ++j) y[j] = float(int8_t(b[2 + j])) * d;
  }
}

namespace detail {
template <bool Keep>
inline void q4_1_block(const uint8_t* b, float* y) {
  const float d = load_f16(b), m = load_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = add<Keep>(prod<Keep>(float(qs[j] & 0xF), d), m);
    y[j + 16] = add<Keep>(prod<Keep>(float(qs[j] >> 4), d), m);
  }
}
inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
template <bool Keep>
inline void q5_1_block(const uint8_t* b, float* y) {
  const float d = load_f16(b), m = load_f16(b + 2);
  const uint32_t qh = load_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int q0 = (qs[j] & 0xF) | int(((qh >> j) & 1u) << 4);
    const int q1 = (qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
    y[j] = add<Keep>(prod<Keep>(float(q0), d), m);
    y[j + 16] = add<Keep>(prod<Keep>(float(q1), d), m);
  }
}
}  // namespace detail

inline void dequantize_row_q4_1(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 32, "q4_1");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 32; ++i, b += sizeof(block_q4_1), y += 32) {
    if (detail::finite_bits(detail::load_f16(b)) && detail::finite_bits(detail::load_f16(b + 2)))
      detail::q4_1_block<false>(b, y);
    else
      detail::q4_1_block<true>(b, y);
  }
}

inline void dequantize_row_q5_0(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 32, "q5_0");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 32; ++i, b += sizeof(block_q5_0), y += 32) {
    const float d = detail::load_f16(b);
    const uint32_t qh = detail::load_u32(b + 2);
    const uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
      const int q0 = (qs[j] & 0xF) | int(((qh >> j) & 1u) << 4);
      const int q1 = (qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
      y[j] = float(q0 - 16) * d;
      y[j + 16] = float(q1 - 16) * d;
    }
  }
}

inline void dequantize_row_q5_1(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 32, "q5_1");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 32; ++i, b += sizeof(block_q5_1), y += 32) {
    if (detail::finite_bits(detail::load_f16(b)) && detail::finite_bits(detail::load_f16(b + 2)))
      detail::q5_1_block<false>(b, y);
    else
      detail::q5_1_block<true>(b, y);
  }
}

namespace detail {
// Q2_K: weight e = 128 h + 32 j + l (h half, j 2-bit position, l < 32) is bits 2j..2j+1 of
// qs[32 h + l]; its sub-block (16 weights) is 8 h + 2 j + l / 16.
template <bool Keep>
inline void q2_k_block(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = load_f16(b + 80), dmin = load_f16(b + 82);
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 4; ++j)
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = scales[8 * h + 2 * j + half];
        const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
        const uint8_t* q = qs + 32 * h + 16 * half;
        float* o = y + 128 * h + 32 * j + 16 * half;
        for (int l = 0; l < 16; ++l) o[l] = sub<Keep>(prod<Keep>(dl, float((q[l] >> (2 * j)) & 3)), ml);
      }
}
// Q4_K / Q5_K: sub-block s = 2 p + hi (p = 0..3) holds weights 64 p + 32 hi + l, the low (hi = 0)
// or high (hi = 1) nibble of qs[32 p + l]; Q5_K's fifth bit is bit s of qh[l].
template <bool Keep, bool Five>
inline void q45_k_block(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + (Five ? 48 : 16);
  for (int s = 0; s < 8; ++s) {
    uint8_t sc, m;
    k_scale_min(scales, s, sc, m);
    const float d1 = d * float(sc), m1 = dmin * float(m);
    const uint8_t* q = qs + 32 * (s / 2);
    const int shift = 4 * (s & 1);
    float* o = y + 32 * s;
    for (int l = 0; l < 32; ++l) {
      int v = (q[l] >> shift) & 0xF;
      if constexpr (Five) v += ((qh[l] >> s) & 1) ? 16 : 0;
      o[l] = sub<Keep>(prod<Keep>(d1, float(v)), m1);
    }
  }
}
}  // namespace detail

inline void dequantize_row_q2_k(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 256, "q2_K");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 256; ++i, b += sizeof(block_q2_k), y += 256) {
    if (detail::finite_bits(detail::load_f16(b + 80)) && detail::finite_bits(detail::load_f16(b + 82)))
      detail::q2_k_block<false>(b, y);
    else
      detail::q2_k_block<true>(b, y);
  }
}

// Q3_K: weight e = 128 h + 32 j + l is bits 2j..2j+1 of qs[32 h + l] minus 4 unless bit 4 h + j of
// hmask[l] is set; its sub-block is 8 h + 2 j + l / 16.
inline void dequantize_row_q3_k(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 256, "q3_K");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 256; ++i, b += sizeof(block_q3_k), y += 256) {
    const uint8_t* hmask = b;
    const uint8_t* qs = b + 32;
    const uint8_t* scales = b + 96;
    const float d = detail::load_f16(b + 108);
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j)
        for (int half = 0; half < 2; ++half) {
          const float dl = d * float(detail::q3_k_scale(scales, 8 * h + 2 * j + half));
          const uint8_t* q = qs + 32 * h + 16 * half;
          const uint8_t* hm = hmask + 16 * half;
          const int bit = 4 * h + j;
          float* o = y + 128 * h + 32 * j + 16 * half;
          for (int l = 0; l < 16; ++l) {
            const int v = ((q[l] >> (2 * j)) & 3) - (((hm[l] >> bit) & 1) ? 0 : 4);
            o[l] = dl * float(v);
          }
        }
  }
}

inline void dequantize_row_q4_k(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 256, "q4_K");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 256; ++i, b += sizeof(block_q4_k), y += 256) {
    if (detail::finite_bits(detail::load_f16(b)) && detail::finite_bits(detail::load_f16(b + 2)))
      detail::q45_k_block<false, false>(b, y);
    else
      detail::q45_k_block<true, false>(b, y);
  }
}

inline void dequantize_row_q5_k(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 256, "q5_K");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 256; ++i, b += sizeof(block_q5_k), y += 256) {
    if (detail::finite_bits(detail::load_f16(b)) && detail::finite_bits(detail::load_f16(b + 2)))
      detail::q45_k_block<false, true>(b, y);
    else
      detail::q45_k_block<true, true>(b, y);
  }
}

// Q6_K: weight e = 128 h + 32 c + l (c = 0..3, l < 32): low 4 bits from ql[64 h + 32 (c & 1) + l]
// (low nibble for c < 2, high for c >= 2), top 2 bits from bits 2c..2c+1 of qh[32 h + l]; its
// scale is scales[8 h + 2 c + l / 16].
inline void dequantize_row_q6_k(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 256, "q6_K");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 256; ++i, b += sizeof(block_q6_k), y += 256) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const uint8_t* scales = b + 192;
    const float d = detail::load_f16(b + 208);
    for (int h = 0; h < 2; ++h)
      for (int c = 0; c < 4; ++c)
        for (int half = 0; half < 2; ++half) {
          const float ds = d * float(int8_t(scales[8 * h + 2 * c + half]));
          const uint8_t* lo = ql + 64 * h + 32 * (c & 1) + 16 * half;
          const uint8_t* hi = qh + 32 * h + 16 * half;
          const int shift = c < 2 ? 0 : 4;
          float* o = y + 128 * h + 32 * c + 16 * half;
          for (int l = 0; l < 16; ++l) {
            const int v = (((lo[l] >> shift) & 0xF) | (((hi[l] >> (2 * c)) & 3) << 4)) - 32;
            o[l] = ds * float(v);
          }
        }
  }
}

// TQ1_0: base-3 digits. A byte x holds a 5-digit base-3 number v (most significant digit first)
// as x = ceil(256 v / 243), a fixed-point fraction; digit n is floor(3 * ((x * 3^n) mod 256) / 256). qs[0..32) give weights n * 32 + m,
// qs[32..48) weights 160 + n * 16 + m (n = 0..4), qh[0..4) weights 240 + n * 4 + m (n = 0..3).
inline void dequantize_row_tq1_0(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 256, "tq1_0");
  static constexpr uint8_t pow3[5] = {1, 3, 9, 27, 81};
  const auto digit = [](uint8_t x, int n) {
    const uint8_t q = uint8_t(x * pow3[n]);
    return int((unsigned(q) * 3u) >> 8) - 1;
  };
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 256; ++i, b += sizeof(block_tq1_0), y += 256) {
    const float d = detail::load_f16(b + 52);
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < 32; ++m) y[n * 32 + m] = float(digit(b[m], n)) * d;
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < 16; ++m) y[160 + n * 16 + m] = float(digit(b[32 + m], n)) * d;
    for (int n = 0; n < 4; ++n)
      for (int m = 0; m < 4; ++m) y[240 + n * 4 + m] = float(digit(b[48 + m], n)) * d;
  }
}

// TQ2_0: weight 128 g + 32 p + m is bits 2p..2p+1 of qs[32 g + m], minus 1.
inline void dequantize_row_tq2_0(const void* src, float* y, std::size_t k) {
  detail::check_row(k, 256, "tq2_0");
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k / 256; ++i, b += sizeof(block_tq2_0), y += 256) {
    const float d = detail::load_f16(b + 64);
    for (int g = 0; g < 2; ++g)
      for (int p = 0; p < 4; ++p)
        for (int m = 0; m < 32; ++m) y[128 * g + 32 * p + m] = float(((b[32 * g + m] >> (2 * p)) & 3) - 1) * d;
  }
}

inline void dequantize_row_f16(const void* src, float* y, std::size_t k) {
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k; ++i) y[i] = detail::load_f16(b + 2 * i);
}
inline void dequantize_row_bf16(const void* src, float* y, std::size_t k) {
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k; ++i) y[i] = bf16_to_f32(uint16_t(b[2 * i] | (unsigned(b[2 * i + 1]) << 8)));
}
inline void dequantize_row_f32(const void* src, float* y, std::size_t k) {
  const auto* b = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < k; ++i) {
    const uint32_t x = detail::load_u32(b + 4 * i);
    std::memcpy(y + i, &x, 4);
  }
}

// A row of `k` weights of type t from `src` (which holds `src_bytes` bytes) into y[0, k). Refused
// (lutkit::error): a type not listed above, k not a multiple of the block, src too short.
inline void dequantize_row(ggml_type t, const void* src, std::size_t src_bytes, float* y, std::size_t k) {
  const ggml_type_info ti = ggml_info(t);
  lutkit::detail::require(can_dequantize(t), "dequantize_row: ggml type ", ti.name, " (id ", uint32_t(t),
                          ") is not one lutkit dequantizes");
  lutkit::detail::require(k % ti.block_elems == 0, "dequantize_row: k = ", k, " is not a multiple of the ", ti.name,
                          " block (", ti.block_elems, " elements)");
  const std::size_t need = k / ti.block_elems * ti.block_bytes;
  lutkit::detail::require(src_bytes >= need, "dequantize_row: ", k, " ", ti.name, " weights need ", need,
                          " bytes, the source holds ", src_bytes);
  lutkit::detail::require(k == 0 || (src != nullptr && y != nullptr), "dequantize_row: null pointer");
  if (k == 0) return;
  switch (t) {
    case ggml_type::q4_0: return dequantize_row_q4_0(src, y, k);
    case ggml_type::q4_1: return dequantize_row_q4_1(src, y, k);
    case ggml_type::q5_0: return dequantize_row_q5_0(src, y, k);
    case ggml_type::q5_1: return dequantize_row_q5_1(src, y, k);
    case ggml_type::q8_0: return dequantize_row_q8_0(src, y, k);
    case ggml_type::iq4_nl: return dequantize_row_iq4_nl(src, y, k);
    case ggml_type::q2_k: return dequantize_row_q2_k(src, y, k);
    case ggml_type::q3_k: return dequantize_row_q3_k(src, y, k);
    case ggml_type::q4_k: return dequantize_row_q4_k(src, y, k);
    case ggml_type::q5_k: return dequantize_row_q5_k(src, y, k);
    case ggml_type::q6_k: return dequantize_row_q6_k(src, y, k);
    case ggml_type::tq1_0: return dequantize_row_tq1_0(src, y, k);
    case ggml_type::tq2_0: return dequantize_row_tq2_0(src, y, k);
    case ggml_type::f16: return dequantize_row_f16(src, y, k);
    case ggml_type::bf16: return dequantize_row_bf16(src, y, k);
    case ggml_type::f32: return dequantize_row_f32(src, y, k);
    default: return;
  }
}
inline void dequantize_row(ggml_type t, std::span<const uint8_t> src, std::span<float> y) {
  dequantize_row(t, src.data(), src.size(), y.data(), y.size());
}

// ------------------------------------------------------------------ random blocks
// Valid blocks of type t for n weights (n a multiple of the block) with random codes and fp16
// scales that give weights of roughly +-`scale`: test and benchmark data, not a quantizer.
// F32 / F16 / BF16 get values 1 + uniform(-scale, scale) (norm-like); other types are refused.
inline std::vector<uint8_t> random_blocks(ggml_type t, std::size_t n, uint64_t seed, float scale = 0.05f) {
  const ggml_type_info ti = ggml_info(t);
  lutkit::detail::require(can_dequantize(t), "random_blocks: ggml type ", ti.name, " is not one lutkit dequantizes");
  lutkit::detail::require(n % ti.block_elems == 0, "random_blocks: n = ", n, " is not a multiple of the ", ti.name,
                          " block (", ti.block_elems, ")");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  std::vector<uint8_t> out(n / ti.block_elems * ti.block_bytes);
  const auto put16 = [&](std::size_t at, uint16_t v) {
    out[at] = uint8_t(v);
    out[at + 1] = uint8_t(v >> 8);
  };
  if (t == ggml_type::f32 || t == ggml_type::f16 || t == ggml_type::bf16) {
    std::uniform_real_distribution<float> w(1.f - scale, 1.f + scale);
    for (std::size_t i = 0; i < n; ++i) {
      const float v = w(rng);
      if (t == ggml_type::f32) {
        uint32_t x;
        std::memcpy(&x, &v, 4);
        for (int b = 0; b < 4; ++b) out[4 * i + b] = uint8_t(x >> (8 * b));
      } else {
        put16(2 * i, t == ggml_type::f16 ? f32_to_f16(v) : f32_to_bf16(v));
      }
    }
    return out;
  }
  for (auto& b : out) b = uint8_t(rng());
  // the largest code magnitude of each type, so that d * code spans about +-scale
  float qmax = 8.f;
  switch (t) {
    case ggml_type::q8_0: qmax = 128.f; break;
    case ggml_type::iq4_nl: qmax = 127.f; break;
    case ggml_type::q5_0: case ggml_type::q5_1: qmax = 16.f; break;
    case ggml_type::q4_1: qmax = 8.f; break;
    case ggml_type::q2_k: qmax = 2.f * 8.f; break;    // 2-bit codes x 4-bit scales
    case ggml_type::q3_k: qmax = 4.f * 16.f; break;   // 3-bit codes x 6-bit scales
    case ggml_type::q4_k: qmax = 8.f * 32.f; break;   // 4-bit codes x 6-bit scales
    case ggml_type::q5_k: qmax = 16.f * 32.f; break;
    case ggml_type::q6_k: qmax = 32.f * 64.f; break;  // 6-bit codes x int8 scales
    case ggml_type::tq1_0: case ggml_type::tq2_0: qmax = 1.f; break;
    default: break;
  }
  const scale_fields f = fp16_scale_fields(t);
  for (std::size_t blk = 0; blk < out.size() / ti.block_bytes; ++blk) {
    const std::size_t at = blk * ti.block_bytes;
    const float d = scale * u(rng) / qmax;
    put16(at + f.offset[0], f32_to_f16(d));
    // the minimum of the asymmetric types centres the codes: m = -d * (mid code) (Q4_1, Q5_1);
    // the K-quants' dmin times a 4- or 6-bit minimum code
    if (f.count == 2) {
      const bool k_quant = t == ggml_type::q2_k || t == ggml_type::q4_k || t == ggml_type::q5_k;
      const float m = k_quant ? d * (t == ggml_type::q2_k ? 1.f : 0.5f) : -d * (t == ggml_type::q4_1 ? 8.f : 16.f);
      put16(at + f.offset[1], f32_to_f16(m));
    }
    if (t == ggml_type::tq1_0) {
      // ternary digits t in {0, 1, 2} (weights d * (t - 1)), encoded as the quantizer does:
      // 5 digits per byte, 4 (and a zero digit) per qh byte
      for (int b = 0; b < 52; ++b) {
        unsigned v = 0;
        for (int digit = 0; digit < 5; ++digit) v = v * 3 + (digit == 4 && b >= 48 ? 0u : unsigned(rng() % 3));
        out[at + b] = uint8_t((v * 256 + 242) / 243);
      }
    }
    if (t == ggml_type::tq2_0) {  // 2-bit codes 0..2 only
      for (int b = 0; b < 64; ++b) {
        unsigned v = 0;
        for (int p = 0; p < 4; ++p) v |= unsigned(rng() % 3) << (2 * p);
        out[at + b] = uint8_t(v);
      }
    }
  }
  return out;
}

}  // namespace lutkit::ggml
