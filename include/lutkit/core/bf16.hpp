// lutkit — bfloat16 conversion (1 sign, 8 exponent, 7 mantissa bits: the top half of a float),
// used by the bf16 paradigm of the dequant-GEMM (level-2 tables, activations) and by
// bf16-parameter formats (Q4NX scales and mins), their references and tests.
#pragma once
#include <cstdint>
// (no <cstring>: the freestanding HVX build includes this header)

namespace lutkit {

inline float bf16_to_f32(uint16_t b) {
  const uint32_t x = uint32_t(b) << 16;
  float f;
  __builtin_memcpy(&f, &x, 4);
  return f;
}

// float -> bf16, round to nearest even. NaN stays NaN (quiet, sign kept); overflow rounds to Inf;
// subnormals round like any other value (bf16 keeps float's exponent range).
inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  __builtin_memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x0040u);
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7FFFu + lsb;
  return uint16_t(x >> 16);
}

// The value a float takes after a round trip through bf16 (round to nearest even).
inline float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

namespace detail {
// the neighbour of a finite bf16 value toward +Inf (up) or -Inf (down)
inline uint16_t bf16_next(uint16_t b, bool up) {
  const bool neg = (b & 0x8000u) != 0;
  const bool zero = (b & 0x7FFFu) == 0;
  if (zero) return up ? uint16_t(0x0001u) : uint16_t(0x8001u);
  return (neg == up) ? uint16_t(b - 1u) : uint16_t(b + 1u);
}
}  // namespace detail

// Directed rounding of a finite float to bf16: the largest bf16 <= f (floor) or the smallest
// bf16 >= f (ceil). Used where a quantizer needs a guarantee (the grid must cover the group).
inline uint16_t f32_to_bf16_floor(float f) {
  uint16_t b = f32_to_bf16(f);
  if (bf16_to_f32(b) > f) b = detail::bf16_next(b, false);
  return b;
}
inline uint16_t f32_to_bf16_ceil(float f) {
  uint16_t b = f32_to_bf16(f);
  if (bf16_to_f32(b) < f) b = detail::bf16_next(b, true);
  return b;
}

}  // namespace lutkit
