// lutkit — the 16-lane AVX-512 (F/BW/DQ/VL + FMA, F16C) primitives that the family bodies written
// once against a vector width (sampling/body.inl, attention/body.inl) are compiled with; the
// interface is listed at the top of sampling/body.inl. Masks are mask registers: masked loads and
// adds, vscalefps, vgetmantps / vgetexpps and compress stores are single instructions here.
// Function target attributes: callable from AVX-512 functions of a build without -mavx512f.
#pragma once
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX512_OPS 1
#define LUTKIT_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))
#define LUTKIT_AVX512_OP LUTKIT_AVX512 __attribute__((always_inline)) static

namespace lutkit::detail {

struct avx512_ops {
  static constexpr int W = 16;
  using M = __mmask16;
  using F = __m512;
  typedef uint32_t U __attribute__((vector_size(64)));

  LUTKIT_AVX512_OP M tail(std::size_t left) { return left >= 16 ? M(0xFFFF) : M((1u << left) - 1u); }
  LUTKIT_AVX512_OP F loadz(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  LUTKIT_AVX512_OP F load_or(const float* p, M m, F fill) { return _mm512_mask_loadu_ps(fill, m, p); }
  LUTKIT_AVX512_OP F load(const float* p) { return _mm512_loadu_ps(p); }
  LUTKIT_AVX512_OP void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  LUTKIT_AVX512_OP F set1(float x) { return _mm512_set1_ps(x); }
  LUTKIT_AVX512_OP U set1u(uint32_t x) { return (U)_mm512_set1_epi32(int(x)); }
  LUTKIT_AVX512_OP F zero() { return _mm512_setzero_ps(); }
  LUTKIT_AVX512_OP U iota() { return (U)_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }

  LUTKIT_AVX512_OP M ordered(F a) { return _mm512_cmp_ps_mask(a, a, _CMP_ORD_Q); }
  LUTKIT_AVX512_OP M gt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  LUTKIT_AVX512_OP M ge(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  LUTKIT_AVX512_OP M eq(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  LUTKIT_AVX512_OP M eq(U a, U b) { return _mm512_cmpeq_epi32_mask(__m512i(a), __m512i(b)); }
  LUTKIT_AVX512_OP M less(U a, U b) { return _mm512_cmplt_epi32_mask(__m512i(a), __m512i(b)); }  // signed
  LUTKIT_AVX512_OP M both(M a, M b) { return M(a & b); }
  LUTKIT_AVX512_OP unsigned bits(M m) { return m; }
  LUTKIT_AVX512_OP F select(M m, F no, F yes) { return _mm512_mask_blend_ps(m, no, yes); }
  LUTKIT_AVX512_OP U select(M m, U no, U yes) { return (U)_mm512_mask_blend_epi32(m, __m512i(no), __m512i(yes)); }
  LUTKIT_AVX512_OP F add_if(M m, F acc, F x) { return _mm512_mask_add_ps(acc, m, acc, x); }
  LUTKIT_AVX512_OP U inc_if(M m, U c) { return (U)_mm512_mask_add_epi32(__m512i(c), m, __m512i(c), _mm512_set1_epi32(1)); }

  // vmaxps / vminps: the second operand where either is NaN (the bodies rely on it)
  LUTKIT_AVX512_OP F max(F a, F b) { return _mm512_max_ps(a, b); }
  LUTKIT_AVX512_OP F min(F a, F b) { return _mm512_min_ps(a, b); }
  LUTKIT_AVX512_OP F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  LUTKIT_AVX512_OP F round(F x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // x - round(x), 0 for +-inf (vreduceps; with vscalefps, whose 2^-inf is 0: sampling/body.inl, exp2_any)
  LUTKIT_AVX512_OP F reduce(F x) { return _mm512_reduce_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  LUTKIT_AVX512_OP F to_float(U i) { return _mm512_cvtepi32_ps(__m512i(i)); }
  LUTKIT_AVX512_OP U round_int(F x) { return (U)_mm512_cvtps_epi32(x); }  // (MXCSR's nearest even)
  static constexpr bool scale2_native = true;  // (sampling/body.inl, exp2_poly)
  LUTKIT_AVX512_OP F scale2(F p, F k) { return _mm512_scalef_ps(p, k); }  // p 2^k, one rounding
  LUTKIT_AVX512_OP void mant_exp(F x, F& m, F& e) {  // x = 2^e m, m in [0.75, 1.5)
    m = _mm512_getmant_ps(x, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_zero);
    e = _mm512_getexp_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.f / 0.75f)));
  }

  LUTKIT_AVX512_OP float hmax(F v) { return _mm512_reduce_max_ps(v); }
  LUTKIT_AVX512_OP float hsum(F v) { return _mm512_reduce_add_ps(v); }
  LUTKIT_AVX512_OP int64_t hsum(U v) { return _mm512_reduce_add_epi32(__m512i(v)); }
  LUTKIT_AVX512_OP uint32_t hmin(M m, U v) { return uint32_t(_mm512_mask_reduce_min_epu32(m, __m512i(v))); }
  // the lanes of m, in order, to val / idx; returns their number
  // (compressed in a register, then a masked store of the first lanes: a compress straight to
  // memory is microcoded and several times slower on AMD Zen 4 / Zen 5)
  LUTKIT_AVX512_OP std::size_t compress(M m, F v, U ix, float* val, uint32_t* idx) {
    const unsigned c = unsigned(__builtin_popcount(m));
    const __mmask16 first = __mmask16((1u << c) - 1u);
    _mm512_mask_storeu_ps(val, first, _mm512_maskz_compress_ps(m, v));
    _mm512_mask_storeu_epi32(idx, first, _mm512_maskz_compress_epi32(m, __m512i(ix)));
    return std::size_t(c);
  }
  LUTKIT_AVX512_OP std::size_t compress_values(M m, F v, float* val) {  // compress without the indices
    const unsigned c = unsigned(__builtin_popcount(m));
    _mm512_mask_storeu_ps(val, __mmask16((1u << c) - 1u), _mm512_maskz_compress_ps(m, v));
    return std::size_t(c);
  }

  LUTKIT_AVX512_OP F load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  // 32 bf16 elements as two vectors of floats in order: each from one 64-byte load by a vpermw
  // that puts element j in the high half of lane j and zeroes the low halves (two zero-extending
  // loads and shifts cost one operation more a vector: the bf16 exp-sum pass 1.1x slower)
  LUTKIT_AVX512_OP void bf16_pair(const uint16_t* p, F& v0, F& v1) {
    const __m512i w = _mm512_loadu_si512(p);
    const __m512i lo = _mm512_set_epi16(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8, 7, 7, 6, 6, 5, 5,
                                        4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    v0 = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(__mmask32(0xAAAAAAAAu), lo, w));
    v1 = _mm512_castsi512_ps(
        _mm512_maskz_permutexvar_epi16(__mmask32(0xAAAAAAAAu), _mm512_add_epi16(lo, _mm512_set1_epi16(16)), w));
  }
  LUTKIT_AVX512_OP U load_u16(const uint16_t* p) { return (U)_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  LUTKIT_AVX512_OP U load_u8(const uint8_t* p) { return (U)_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  LUTKIT_AVX512_OP U load_s8(const uint8_t* p) { return (U)_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  LUTKIT_AVX512_OP U f16_bits(F x) { return (U)_mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
  LUTKIT_AVX512_OP F gather(const float* table, U idx) { return _mm512_i32gather_ps(__m512i(idx), table, 4); }
};

}  // namespace lutkit::detail

#include "intrinsics_end.hpp"
#endif
