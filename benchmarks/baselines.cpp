#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "baselines-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "baselines-inl.h"

#if HWY_ONCE
#include "baselines.hpp"
namespace lutkit_bench {
HWY_EXPORT(FloatGemv);
HWY_EXPORT(ConvertDQGemv2);
HWY_EXPORT(ConvertDQGemv4);
HWY_EXPORT(ReadBandwidth);
HWY_EXPORT(ReadDot);
HWY_EXPORT(ConvertDQRows);
HWY_EXPORT(ConvertDQRowsBF16);
HWY_EXPORT(ConvertDQRowsCodes);
void convert_dq_rows(int bits, const uint8_t* codes, const uint16_t* sz, std::size_t K, std::size_t G, std::size_t m0,
                     std::size_t rows, std::size_t k0, std::size_t k1, float* out, std::size_t ldo) {
  HWY_DYNAMIC_DISPATCH(ConvertDQRows)(bits, codes, sz, K, G, m0, rows, k0, k1, out, ldo);
}
void convert_dq_rows_bf16(int bits, const uint8_t* codes, const uint16_t* sz, std::size_t K, std::size_t G,
                          std::size_t m0, std::size_t rows, std::size_t k0, std::size_t k1, uint16_t* out,
                          std::size_t ldo) {
  HWY_DYNAMIC_DISPATCH(ConvertDQRowsBF16)(bits, codes, sz, K, G, m0, rows, k0, k1, out, ldo);
}
void convert_dq_rows_codes(int bits, const uint8_t* codes, std::size_t K, std::size_t m0, std::size_t rows,
                           std::size_t k0, std::size_t k1, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(ConvertDQRowsCodes)(bits, codes, K, m0, rows, k0, k1, out);
}
void float_gemv(const float* W, const float* x, float* y, std::size_t M, std::size_t K, std::size_t N,
                std::size_t r0, std::size_t r1) {
  HWY_DYNAMIC_DISPATCH(FloatGemv)(W, x, y, M, K, N, r0, r1);
}
void convert_dq_gemv(int bits, const uint8_t* codes, const uint16_t* sz, const float* x, float* y, std::size_t M,
                     std::size_t K, std::size_t G, std::size_t N, std::size_t r0, std::size_t r1) {
  if (bits == 2) HWY_DYNAMIC_DISPATCH(ConvertDQGemv2)(codes, sz, x, y, M, K, G, N, r0, r1);
  else HWY_DYNAMIC_DISPATCH(ConvertDQGemv4)(codes, sz, x, y, M, K, G, N, r0, r1);
}
uint64_t read_bandwidth(const uint64_t* p, std::size_t n, std::size_t prefetch_bytes) {
  return HWY_DYNAMIC_DISPATCH(ReadBandwidth)(p, n, prefetch_bytes);
}
void pooled_read(const void* p, std::size_t bytes, lutkit::thread_pool* pool, int T, bool dot) {
  const uint64_t* w = static_cast<const uint64_t*>(p);
  const std::size_t words = bytes / 8;
  uint64_t sink[64] = {};
  const auto part = [&](std::size_t a, std::size_t b) {
    return dot ? HWY_DYNAMIC_DISPATCH(ReadDot)(w + a, b - a) : read_bandwidth(w + a, b - a, 0);
  };
  if (pool && T > 1) {
    pool->run(std::size_t(T), [&](std::size_t t) {
      sink[t % 64] = part(words * t / std::size_t(T), words * (t + 1) / std::size_t(T));
    });
  } else {
    sink[0] = part(0, words);
  }
  volatile uint64_t keep = 0;
  for (uint64_t v : sink) keep = keep + v;
}
}  // namespace lutkit_bench
#endif
