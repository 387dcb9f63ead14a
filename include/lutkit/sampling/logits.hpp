// lutkit — the logits the sampling kernels read: a view of rows x V values in fp32, bf16, fp16
// or MXFP8 (OCP microscaling: E4M3 elements, one shared E8M0 exponent per 32 consecutive
// elements of a row), and the exact decoding of each format.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/half.hpp"

namespace lutkit {

enum class logit_type : uint8_t { f32, bf16, f16, mxfp8 };

inline const char* logit_type_name(logit_type t) {
  switch (t) {
    case logit_type::f32: return "fp32";
    case logit_type::bf16: return "bf16";
    case logit_type::f16: return "fp16";
    case logit_type::mxfp8: return "mxfp8";
  }
  return "?";
}

// MXFP8: a row of V logits is ceil(V / 32) blocks; block j holds elements [32 j, 32 j + 32) as
// E4M3 codes (row-major, `data`) and one E8M0 exponent (`scales`, ceil(V / 32) per row).
constexpr std::size_t mx_block = 32;

// rows x vocab logits. Row r starts at element r * vocab (f32 / bf16 / f16: that many values;
// mxfp8: that many E4M3 bytes, and its exponents at scales + r * ceil(vocab / 32)).
struct logits_view {
  logit_type type = logit_type::f32;
  const void* data = nullptr;
  const uint8_t* scales = nullptr;  // mxfp8 only
  std::size_t rows = 0, vocab = 0;

  static logits_view f32(const float* p, std::size_t rows, std::size_t vocab) {
    return {logit_type::f32, p, nullptr, rows, vocab};
  }
  static logits_view bf16(const uint16_t* p, std::size_t rows, std::size_t vocab) {
    return {logit_type::bf16, p, nullptr, rows, vocab};
  }
  static logits_view f16(const uint16_t* p, std::size_t rows, std::size_t vocab) {
    return {logit_type::f16, p, nullptr, rows, vocab};
  }
  static logits_view mxfp8(const uint8_t* codes, const uint8_t* scales, std::size_t rows, std::size_t vocab) {
    return {logit_type::mxfp8, codes, scales, rows, vocab};
  }
  std::size_t blocks_per_row() const { return (vocab + mx_block - 1) / mx_block; }
  std::size_t element_bytes() const { return type == logit_type::f32 ? 4 : type == logit_type::mxfp8 ? 1 : 2; }
  // bytes a full read of the logits touches (elements + MX exponents)
  std::size_t bytes() const {
    return rows * vocab * element_bytes() + (type == logit_type::mxfp8 ? rows * blocks_per_row() : 0);
  }
};

namespace detail {
inline void check_logits(const logits_view& lv, const char* who) {
  require(lv.type == logit_type::f32 || lv.type == logit_type::bf16 || lv.type == logit_type::f16 ||
              lv.type == logit_type::mxfp8,
          who, ": unknown logit_type ", int(lv.type));
  require(lv.data != nullptr, who, ": logits data is null");
  require(lv.vocab > 0, who, ": vocabulary size is 0");
  require(lv.vocab <= std::size_t(std::numeric_limits<int32_t>::max()), who, ": vocabulary size ", lv.vocab,
          " exceeds the int32 token range");
  require(lv.type != logit_type::mxfp8 || lv.scales != nullptr, who, ": MXFP8 logits without their scales");
  checked_elements(lv.rows, lv.vocab, who, "logit rows x vocabulary");  // bytes() cannot wrap after this
}
// the caller's bytes the logits occupy (elements, and MXFP8's exponents)
inline byte_range logits_data(const logits_view& lv) { return {lv.data, lv.rows * lv.vocab * lv.element_bytes()}; }
inline byte_range logits_scales(const logits_view& lv) {
  return {lv.type == logit_type::mxfp8 ? lv.scales : nullptr, lv.rows * lv.blocks_per_row()};
}
// an output of n bytes at p overlaps the logits
inline bool overlaps_logits(const void* p, std::size_t n, const logits_view& lv) {
  return overlaps({p, n}, logits_data(lv)) || overlaps({p, n}, logits_scales(lv));
}
}  // namespace detail

// ---- MXFP8 element and scale decoding (OCP MX v1.0: E4M3 "FN": bias 7, no infinities,
// S.1111.111 is NaN, max 448, subnormals m/8 * 2^-6; E8M0: 2^(e - 127), 0xFF is NaN).

// exact value of an E4M3 code
inline float e4m3_to_f32(uint8_t c) {
  const uint32_t s = c >> 7, e = (c >> 3) & 0xFu, m = c & 7u;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  float v = e == 0 ? float(m) * 0x1p-9f : std::ldexp(float(8 + m), int(e) - 10);
  return s ? -v : v;
}
// exact value of an E8M0 scale (NaN for 0xFF); 2^-127 is a float subnormal, still exact
inline float e8m0_to_f32(uint8_t e) {
  if (e == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  uint32_t bits = e == 0 ? 0x00400000u : uint32_t(e) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// The decoded element: code value x scale, rounded to float. The product is exact unless it
// exceeds float's range (448 x 2^127 > FLT_MAX): then +-inf.
inline float mxfp8_decode(uint8_t code, uint8_t scale) { return e4m3_to_f32(code) * e8m0_to_f32(scale); }

// Encoding (for tests, benchmarks and engines that produce MX logits): the block exponent is
// the one that maps the block's largest magnitude into E4M3's range (OCP's rule:
// floor(log2(amax)) - 8), the elements are rounded to nearest even and saturate at 448;
// NaN encodes as S.1111.111.
inline uint8_t f32_to_e4m3(float v) {
  if (std::isnan(v)) return 0x7F;
  const uint8_t s = std::signbit(v) ? 0x80 : 0;
  const float a = std::fabs(v);
  if (!(a < 464.f)) return uint8_t(s | 0x7E);  // 464 = 448 + half a step: saturate
  if (a < 0x1p-6f) {                             // subnormal quantum 2^-9 (q = 8 is 2^-6, code 0x08)
    return uint8_t(s | uint8_t(std::nearbyint(a * 512.f)));
  }
  const int e = std::ilogb(a);                   // in [-6, 8]
  const int q = int(std::nearbyint(std::ldexp(a, 3 - e)));  // in [8, 16], ties to even
  const int code = ((e + 7) << 3) + (q - 8);     // q = 16 carries into the next exponent
  return uint8_t(s | uint8_t(code > 0x7E ? 0x7E : code));
}
inline void mxfp8_encode_block(const float* x, std::size_t n, uint8_t* codes, uint8_t* scale) {
  float amax = 0.f;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) amax = std::fmax(amax, std::fabs(x[i]));
  int e = 127;
  if (amax > 0.f) e = std::ilogb(amax) - 8 + 127;
  e = e < 0 ? 0 : e > 254 ? 254 : e;
  *scale = uint8_t(e);
  const float inv = 1.f / e8m0_to_f32(uint8_t(e));
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isinf(x[i])) {
      codes[i] = x[i] > 0 ? 0x7E : 0xFE;  // saturate (E4M3 has no infinity)
      continue;
    }
    codes[i] = f32_to_e4m3(float(double(x[i]) * double(inv)));
  }
}

}  // namespace lutkit
