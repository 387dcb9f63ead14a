// lutkit — the 8-lane AVX2 (+ FMA, F16C) primitives that the family bodies written once against a
// vector width (sampling/body.inl, attention/body.inl) are compiled with. The interface is listed
// at the top of sampling/body.inl; lane masks are vectors here (all-ones lanes), mask registers in
// ops_avx512.hpp. Function target attributes: callable from AVX2 functions of a build without -mavx2.
#pragma once
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX2_OPS 1
#define LUTKIT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LUTKIT_AVX2_OP LUTKIT_AVX2 __attribute__((always_inline)) static

namespace lutkit::detail {

// avx2_ops::compress's permutations: for each 8-lane mask, the indices of its set lanes in order
// (one byte each, the unset lanes' after them)
struct avx2_compress_table {
  uint64_t perm[256];
  constexpr avx2_compress_table() : perm{} {
    for (unsigned m = 0; m < 256; ++m) {
      uint64_t p = 0;
      int o = 0;
      for (int pass = 0; pass < 2; ++pass)
        for (unsigned l = 0; l < 8; ++l)
          if (((m >> l) & 1u) == (pass == 0 ? 1u : 0u)) p |= uint64_t(l) << (8 * o++);
      perm[m] = p;
    }
  }
};
inline constexpr avx2_compress_table avx2_compress_perm{};

struct avx2_ops {
  typedef uint32_t U __attribute__((vector_size(32)));
  using F = __m256;
  using M = __m256;  // lanes all ones or all zeros
  static constexpr int W = 8;

  LUTKIT_AVX2_OP F set1(float x) { return _mm256_set1_ps(x); }
  LUTKIT_AVX2_OP U set1u(uint32_t x) { return (U)_mm256_set1_epi32(int(x)); }
  LUTKIT_AVX2_OP F zero() { return _mm256_setzero_ps(); }
  LUTKIT_AVX2_OP U iota() { return (U)_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  LUTKIT_AVX2_OP F load(const float* p) { return _mm256_loadu_ps(p); }
  LUTKIT_AVX2_OP void store(float* p, F v) { _mm256_storeu_ps(p, v); }

  // lanes [0, left) (left >= 8: all); vmaskmovps reads none of the others (no fault past an end)
  LUTKIT_AVX2_OP M tail(std::size_t left) {
    const int l = left >= 8 ? 8 : int(left);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(l), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  }
  LUTKIT_AVX2_OP F loadz(const float* p, M m) { return _mm256_maskload_ps(p, _mm256_castps_si256(m)); }
  LUTKIT_AVX2_OP F load_or(const float* p, M m, F fill) { return _mm256_blendv_ps(fill, loadz(p, m), m); }

  LUTKIT_AVX2_OP F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  // vmaxps / vminps: the second operand where either is NaN (the bodies rely on it)
  LUTKIT_AVX2_OP F max(F a, F b) { return _mm256_max_ps(a, b); }
  LUTKIT_AVX2_OP F min(F a, F b) { return _mm256_min_ps(a, b); }
  LUTKIT_AVX2_OP F round(F x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  LUTKIT_AVX2_OP F to_float(U i) { return _mm256_cvtepi32_ps(__m256i(i)); }
  LUTKIT_AVX2_OP U round_int(F x) { return (U)_mm256_cvtps_epi32(x); }  // (MXCSR's nearest even)

  LUTKIT_AVX2_OP M gt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  LUTKIT_AVX2_OP M ge(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  LUTKIT_AVX2_OP M eq(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  LUTKIT_AVX2_OP M ordered(F a) { return _mm256_cmp_ps(a, a, _CMP_ORD_Q); }
  LUTKIT_AVX2_OP M eq(U a, U b) { return _mm256_castsi256_ps(_mm256_cmpeq_epi32(__m256i(a), __m256i(b))); }
  LUTKIT_AVX2_OP M less(U a, U b) { return _mm256_castsi256_ps(_mm256_cmpgt_epi32(__m256i(b), __m256i(a))); }  // signed
  LUTKIT_AVX2_OP M both(M a, M b) { return _mm256_and_ps(a, b); }
  LUTKIT_AVX2_OP unsigned bits(M m) { return unsigned(_mm256_movemask_ps(m)); }
  LUTKIT_AVX2_OP F select(M m, F no, F yes) { return _mm256_blendv_ps(no, yes, m); }
  LUTKIT_AVX2_OP U select(M m, U no, U yes) { return (U)_mm256_blendv_epi8(__m256i(no), __m256i(yes), _mm256_castps_si256(m)); }
  // acc + x in the lanes of m (+0 elsewhere: acc must not be -0)
  LUTKIT_AVX2_OP F add_if(M m, F acc, F x) { return _mm256_add_ps(acc, _mm256_and_ps(m, x)); }
  LUTKIT_AVX2_OP U inc_if(M m, U c) { return c - (U)_mm256_castps_si256(m); }

  LUTKIT_AVX2_OP float hmax(F v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  LUTKIT_AVX2_OP float hsum(F v) {
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  LUTKIT_AVX2_OP int64_t hsum(U v) {
    __m128i m = _mm_add_epi32(_mm256_castsi256_si128(__m256i(v)), _mm256_extracti128_si256(__m256i(v), 1));
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0xB1));
    return int64_t(int32_t(_mm_cvtsi128_si32(m)));
  }
  // the smallest of the lanes of m (m not empty)
  LUTKIT_AVX2_OP uint32_t hmin(M m, U v) {
    const __m256i x = _mm256_blendv_epi8(_mm256_set1_epi32(-1), __m256i(v), _mm256_castps_si256(m));
    __m128i r = _mm_min_epu32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
    r = _mm_min_epu32(r, _mm_shuffle_epi32(r, 0x4E));
    r = _mm_min_epu32(r, _mm_shuffle_epi32(r, 0xB1));
    return uint32_t(_mm_cvtsi128_si32(r));
  }

  // the lanes of m, in order, to val / idx; returns their number. Whole-vector stores: all 8 lanes
  // from val / idx are written (those past the count with the other lanes), so the caller has
  // room for 8 there (sampling/body.inl: vectors wholly inside the input, whose output never
  // runs past the input's count). A permutation per mask (vpermps), no branch per lane: with
  // about half the vectors holding a lane of the selection, the branches of a lane-by-lane store
  // were mispredicted at every vector (top-p, Zen 3).
  LUTKIT_AVX2_OP std::size_t compress(M m, F v, U ix, float* val, uint32_t* idx) {
    const unsigned b = bits(m);
    const __m256i p = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(avx2_compress_perm.perm[b])));
    _mm256_storeu_ps(val, _mm256_permutevar8x32_ps(v, p));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx), _mm256_permutevar8x32_epi32(__m256i(ix), p));
    return std::size_t(__builtin_popcount(b));
  }
  LUTKIT_AVX2_OP std::size_t compress_values(M m, F v, float* val) {  // compress without the indices
    const unsigned b = bits(m);
    const __m256i p = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(avx2_compress_perm.perm[b])));
    _mm256_storeu_ps(val, _mm256_permutevar8x32_ps(v, p));
    return std::size_t(__builtin_popcount(b));
  }

  // p 2^k, k integral in [-150, 127], rounded once as vscalefps: 2^k = 2^k1 2^k2 with both
  // factors normal (k1 = floor(k / 2)); p 2^k1 is exact, the second product rounds (subnormals too)
  static constexpr bool scale2_native = false;  // (sampling/body.inl, exp2_poly)
  LUTKIT_AVX2_OP F scale2(F p, F k) {
    const __m256i ki = _mm256_cvtps_epi32(k);
    const __m256i k1 = _mm256_srai_epi32(ki, 1), k2 = _mm256_sub_epi32(ki, k1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  }
  // the same for k <= 0 in half the integer work: p 2^(k + 64) is exact, the product with 2^-64 rounds
  LUTKIT_AVX2_OP F scale2_nonpos(F p, F k) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127 + 64)), 23);
    return _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(0x1p-64f));
  }
  // x = 2^e m for normal x > 0, m in [0.75, 1.5) (what vgetmantps / vgetexpps give): the
  // significand 1.f, halved (e + 1) where 1.f >= 1.5
  LUTKIT_AVX2_OP void mant_exp(F x, F& m, F& e) {
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i frac = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFF));
    const __m256i big = _mm256_cmpgt_epi32(frac, _mm256_set1_epi32(0x3FFFFF));
    m = _mm256_castsi256_ps(_mm256_or_si256(frac, _mm256_sub_epi32(_mm256_set1_epi32(0x3F800000),
                                                                   _mm256_and_si256(big, _mm256_set1_epi32(0x00800000)))));
    e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)), big));
  }

  // 8 fp16 as fp32 (exact); 8 16-bit or 8-bit elements zero-extended
  LUTKIT_AVX2_OP F load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  LUTKIT_AVX2_OP U load_u16(const uint16_t* p) { return (U)_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  LUTKIT_AVX2_OP U load_u8(const uint8_t* p) { return (U)_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  LUTKIT_AVX2_OP U load_s8(const uint8_t* p) { return (U)_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  // the fp16 codes of x (nearest even), zero-extended; table[idx]
  LUTKIT_AVX2_OP U f16_bits(F x) { return (U)_mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
  LUTKIT_AVX2_OP F gather(const float* table, U idx) { return _mm256_i32gather_ps(table, __m256i(idx), 4); }
};

}  // namespace lutkit::detail

#include "intrinsics_end.hpp"
#endif
