// lutkit — the host target's AVX-512 VBMI LUT-GEMV: the shared kernel body (gemv/body.inl)
// with Ops that take the body's gathered lone path: one vpermb puts a lone chunk's two steps of
// a row side by side (tiling spec, lone_pair_source) and one vpermb of the two steps' tables
// (index: nibble | 16 in odd bytes, one vpternlogd) looks both up. Paired chunks, two forms:
// - Ops: the lane-local vpshufb on masked nibbles. On Zen 5 a vpermb beside vpmaddubsw costs
//   more than vpshufb + and (docs/design_measurements.md, "LUT-GEMV at one thread").
// - OpsPermb (Zen 4, host_features::zen4): vpermb on the unmasked byte and on the byte shifted
//   right by 4 within its 16-bit lane. The 16-byte table is broadcast to all four lanes, so index
//   bits 4 and 5 select a copy of the same entry and bits 6 and 7 are ignored: two ands fewer per
//   chunk, where vpermb and vpshufb have the same throughput (Zen 4).
// Highway 1.0.3 compiles AVX3_DL only on request, so this path is compiled with GCC's target
// pragma and chosen at run time (targets/host/gemv/lut_gemv_hwy.hpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../../../core/policy.hpp"
#include "../../../core/tiling.hpp"
#include "../../../gemv/microkernel.hpp"
#include "../features.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LUTKIT_HAVE_VBMI_GEMV 1
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vnni,fma,f16c")
namespace lutkit::vbmi_backend {

struct Ops {
  using V = __m512i;
  using W = __m512i;
  using F = __m512;
  struct V2 {  // lone-chunk table: step j in the low 256 bits, step j + 1 in the high
    __m512i t;
  };
  static V load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static std::size_t prefetch_bytes(int spec) { return detail::host_features::gemv_prefetch_bytes(spec); }
  static V lo_nibbles(V v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0F)); }
  static V hi_nibbles(V v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F)); }
  static V shr4(V v) { return _mm512_srli_epi16(v, 4); }
  static V table1(const int8_t* t) { return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t))); }
  static V2 table2(const int8_t* a, const int8_t* b) {
    const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
    const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    return V2{_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)};
  }
  static V lookup(V t, V i) { return _mm512_shuffle_epi8(t, i); }
  static V lookup(V2 t, V i) { return _mm512_shuffle_epi8(t.t, _mm512_and_si512(i, _mm512_set1_epi8(0x0F))); }
  // gathered lone chunks: step j's table in bytes 0..15, step j + 1's in 16..31; an index's
  // low nibble, plus 16 in odd bytes (ternary logic: (i & 0x0F) | 0x10 at odd bytes)
  struct TP {
    __m512i t;
  };
  static V permute(V idx, V v) { return _mm512_permutexvar_epi8(idx, v); }
  static TP table_pair(const int8_t* a, const int8_t* b) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    return TP{_mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1))};
  }
  static TP table_pair_adjacent(const int8_t* a) {
    return TP{_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)))};
  }
  static V lookup_pair(TP t, V i) {
    return _mm512_permutexvar_epi8(_mm512_ternarylogic_epi32(i, _mm512_set1_epi8(0x0F), _mm512_set1_epi16(0x1000), 0xEA), t.t);
  }
  static V negate_if(V v, const uint8_t* bits) {
    uint64_t m;
    std::memcpy(&m, bits, 8);
    return _mm512_mask_sub_epi8(v, __mmask64(m), _mm512_setzero_si512(), v);
  }
  static V negate_mask(V v, uint64_t m) { return _mm512_mask_sub_epi8(v, __mmask64(m), _mm512_setzero_si512(), v); }
  static W madd(V u, V s) { return _mm512_maddubs_epi16(u, s); }
  static W zero16() { return _mm512_setzero_si512(); }
  static W add16(W a, W b) { return _mm512_add_epi16(a, b); }
  static void store16(int16_t* d, W w) { _mm512_storeu_si512(d, w); }
  static void f16_to_f32(const uint16_t* src, float* dst, int n) {
    for (int i = 0; i < n; i += 16)
      _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  }
  static F loadf16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F loadi8f(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static F setf(float x) { return _mm512_set1_ps(x); }
  static F loadf(const float* p) { return _mm512_loadu_ps(p); }
  static void storef(float* p, F f) { _mm512_storeu_ps(p, f); }
  static F addf(F a, F b) { return _mm512_add_ps(a, b); }
  static F mulf(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fmaf(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static void widen(W w, F& lo, F& hi) {
    lo = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(w)));
    hi = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(w, 1)));
  }
};

// Zen 4's paired-chunk lookup (see the top of this file) and the body's quad lone path (W1,
// ternary; docs/design_measurements.md, "LUT-GEMV at one thread: Zen 4"): two lone
// chunks permuted (vpermi2b) into row quads, the four steps' 64 bytes of tables looked up by one
// vpermb (index: nibble | 16 * step, one vpternlogd), summed by vpdpbusd. Everything else is Ops'.
struct OpsPermb : Ops {
  using Ops::lookup;  // the table2 form (it masks its index itself)
  static V lo_nibbles(V v) { return v; }
  static V hi_nibbles(V v) { return _mm512_srli_epi16(v, 4); }
  static V lookup(V t, V i) { return _mm512_permutexvar_epi8(i, t); }
  using D = __m512i;
  struct TQ {
    __m512i t;
  };
  static V permute2(V idx, V a, V b) { return _mm512_permutex2var_epi8(a, idx, b); }
  static TQ table_quad(const int8_t* t) { return TQ{_mm512_loadu_si512(t)}; }
  static V lookup_steps(TQ t, V i, V steps) {
    return _mm512_permutexvar_epi8(_mm512_ternarylogic_epi32(i, _mm512_set1_epi8(0x0F), steps, 0xEA), t.t);
  }
  static D zero32() { return _mm512_setzero_si512(); }
  static D dot4(D acc, V u, V s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static F widen32(D d) { return _mm512_cvtepi32_ps(d); }
};

// the block's step-pair loop unrolled by 2, not fully: fully unrolled, GCC re-associated the
// step pairs' int16 adds into trees whose partial sums spilled to the stack
#define LUTKIT_GEMV_STEP_PAIR_UNROLL 2
#include "../../../gemv/body.inl"
#undef LUTKIT_GEMV_STEP_PAIR_UNROLL

template <class P>
void entry(const detail::gemv_args& a) {
  lut_gemv_rows<Ops, P>(a);
}
template <class P>
void entry_permb(const detail::gemv_args& a) {
  lut_gemv_rows<OpsPermb, P>(a);
}

}  // namespace lutkit::vbmi_backend
#pragma GCC pop_options

namespace lutkit::vbmi_backend {
inline bool cpu_supported() { return detail::host_features::avx512_vbmi_vnni(); }
}  // namespace lutkit::vbmi_backend
#endif
