// lutkit — bfloat16 conversion (round to nearest even, NaN kept quiet) for the bf16 paradigm
// of the dequant-GEMM, its level-2 tables and the references that reproduce them.
#pragma once
#include <cstdint>
#include <cstring>

namespace lutkit {

inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7FFFu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}
inline float bf16_to_f32(uint16_t h) {
  const uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

}  // namespace lutkit
