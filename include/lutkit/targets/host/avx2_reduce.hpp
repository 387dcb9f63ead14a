// lutkit — horizontal reductions of 8-lane AVX2 registers, shared by the AVX2 micro-kernels of
// targets/cpu (attention, sampling): maximum and sum of 8 floats, minimum of 8 unsigned lanes,
// sum of 8 int32 lanes. Function target attributes: callable from the kernels' AVX2 functions,
// compiled without -mavx2.
#pragma once
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "intrinsics_begin.hpp"
#define LUTKIT_AVX2_REDUCE __attribute__((target("avx2")))

namespace lutkit::detail::avx2 {

LUTKIT_AVX2_REDUCE inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
LUTKIT_AVX2_REDUCE inline float hsum8(__m256 v) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
LUTKIT_AVX2_REDUCE inline uint32_t hmin_u32(__m256i v) {
  __m128i m = _mm_min_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_min_epu32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _mm_min_epu32(m, _mm_shuffle_epi32(m, 0xB1));
  return uint32_t(_mm_cvtsi128_si32(m));
}
LUTKIT_AVX2_REDUCE inline int64_t hsum_i32(__m256i v) {
  __m128i m = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0xB1));
  return int64_t(int32_t(_mm_cvtsi128_si32(m)));
}

}  // namespace lutkit::detail::avx2

#undef LUTKIT_AVX2_REDUCE
#include "intrinsics_end.hpp"
#endif
