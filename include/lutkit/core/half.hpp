// lutkit — IEEE binary16 conversion used by the packer, the references and the tests.
// (Kernels convert with the target's own instructions.)
#pragma once
#include <cstdint>
// (no <cstring>: the freestanding HVX build includes this header)

namespace lutkit {

// float -> binary16, round to nearest even; NaN stays NaN, overflow becomes Inf.
inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  __builtin_memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) return uint16_t(sign | (absx > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (absx >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to >= 65520: Inf
  if (absx < 0x38800000u) {                                   // subnormal or zero in fp16
    if (absx < 0x33000000u) return uint16_t(sign);            // < half of the smallest subnormal
    // value = m * 2^(e-150); the fp16 subnormal unit is 2^-24, so the code is m >> (126 - e).
    const uint32_t e = absx >> 23;
    const uint32_t m = (absx & 0x7FFFFFu) | 0x800000u;
    const uint32_t sh = 126u - e;  // bits to drop, in [14, 24]
    uint32_t r = m >> sh;
    const uint32_t rem = m & ((1u << sh) - 1u);
    const uint32_t halfway = 1u << (sh - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = ((absx - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rem = absx & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return uint16_t(sign | r);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x3FFu;
  uint32_t x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: m * 2^-24
      float f = float(m) * (1.0f / 16777216.0f);
      __builtin_memcpy(&x, &f, 4);
      x |= sign;
    }
  } else if (e == 31) {
    x = sign | 0x7F800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  __builtin_memcpy(&f, &x, 4);
  return f;
}

// The value a float takes after a round trip through binary16.
inline float round_to_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

}  // namespace lutkit
