// lutkit — xsimd backend of the LUT-GEMV, for engines that already build with xsimd.
// It runs the same kernel body as the Highway backend on the same packed blob; only the Ops
// differ. xsimd 8.1 has no runtime byte lookup, so the lookup, pmaddubsw and the fp16
// conversion are our own overloads per arch tag on the batch's native register. The arch is
// a template argument (xsimd::avx512bw, xsimd::avx2, xsimd::ssse3); the translation unit must
// be compiled with that arch enabled (e.g. -mavx512bw).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>
#include <xsimd/xsimd.hpp>

#include "../../core/half.hpp"
#include "../../gemv/driver.hpp"

namespace lutkit::xsimd_backend {

namespace arch_ops {
// ---- per-arch primitives on native registers (x86; other arches add overloads here)
#if defined(__AVX512BW__)
inline __m512i lookup(xsimd::avx512bw, __m512i t, __m512i i) { return _mm512_shuffle_epi8(t, i); }
inline __m512i madd(xsimd::avx512bw, __m512i u, __m512i s) { return _mm512_maddubs_epi16(u, s); }
inline __m512i dup128(xsimd::avx512bw, const void* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}
inline __m512i dup128x2(xsimd::avx512bw, const void* a, const void* b) {
  const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(a)));
  const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(b)));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
inline __m512 fmadd(xsimd::avx512bw, __m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
inline void widen16(xsimd::avx512bw, __m512i w, __m512& lo, __m512& hi) {
  lo = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(w)));
  hi = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(w, 1)));
}
inline __m512i negate_if(xsimd::avx512bw, __m512i v, const uint8_t* bits) {
  uint64_t m;
  std::memcpy(&m, bits, 8);
  return _mm512_mask_sub_epi8(v, __mmask64(m), _mm512_setzero_si512(), v);
}
#endif
#if defined(__AVX2__)
inline __m256i lookup(xsimd::avx2, __m256i t, __m256i i) { return _mm256_shuffle_epi8(t, i); }
inline __m256i madd(xsimd::avx2, __m256i u, __m256i s) { return _mm256_maddubs_epi16(u, s); }
inline __m256i dup128(xsimd::avx2, const void* p) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}
#if defined(__FMA__)
inline __m256 fmadd(xsimd::avx2, __m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
#endif
inline void widen16(xsimd::avx2, __m256i w, __m256& lo, __m256& hi) {
  lo = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(w)));
  hi = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(w, 1)));
}
inline __m256i negate_if(xsimd::avx2, __m256i v, const uint8_t* bits) {
  uint32_t m;
  std::memcpy(&m, bits, 4);
  // byte i <- bit i of m, as 0x00 / 0xFF
  const __m256i rep = _mm256_shuffle_epi8(_mm256_set1_epi32(int(m)),
                                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                                           2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i sel = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
  const __m256i mask = _mm256_cmpeq_epi8(_mm256_and_si256(rep, sel), sel);
  return _mm256_sub_epi8(_mm256_xor_si256(v, mask), mask);  // (v ^ -1) + 1 = -v
}
#endif
#if defined(__SSSE3__)
inline __m128i lookup(xsimd::ssse3, __m128i t, __m128i i) { return _mm_shuffle_epi8(t, i); }
inline __m128i madd(xsimd::ssse3, __m128i u, __m128i s) { return _mm_maddubs_epi16(u, s); }
inline __m128i dup128(xsimd::ssse3, const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline __m128 fmadd(xsimd::ssse3, __m128 a, __m128 b, __m128 c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
inline void widen16(xsimd::ssse3, __m128i w, __m128& lo, __m128& hi) {
  lo = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpacklo_epi16(w, w), 16));
  hi = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpackhi_epi16(w, w), 16));
}
inline __m128i negate_if(xsimd::ssse3, __m128i v, const uint8_t* bits) {
  uint16_t m;
  std::memcpy(&m, bits, 2);
  const __m128i rep = _mm_shuffle_epi8(_mm_set1_epi16(short(m)), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const __m128i sel = _mm_set1_epi64x(int64_t(0x8040201008040201ull));
  const __m128i mask = _mm_cmpeq_epi8(_mm_and_si128(rep, sel), sel);
  return _mm_sub_epi8(_mm_xor_si128(v, mask), mask);
}
#endif
}  // namespace arch_ops

template <class Arch>
struct XsimdOps {
  using B8 = xsimd::batch<uint8_t, Arch>;
  using B16 = xsimd::batch<int16_t, Arch>;
  static constexpr std::size_t kPartBytes = B8::size;
  static constexpr int kParts = int(64 / kPartBytes);
  static_assert(kPartBytes >= 16 && 64 % kPartBytes == 0, "xsimd backend: 128/256/512-bit arches");
  struct V {
    B8 p[kParts];
  };
  struct W {
    B16 p[kParts];
  };
  using BF = xsimd::batch<float, Arch>;
  static constexpr std::size_t kFL = BF::size;
  struct F {
    BF p[kParts];
  };
  static F setf(float x) {
    F f;
    for (int i = 0; i < kParts; ++i) f.p[i] = BF(x);
    return f;
  }
  static F loadf(const float* ptr) {
    F f;
    for (int i = 0; i < kParts; ++i) f.p[i] = BF::load_unaligned(ptr + i * kFL);
    return f;
  }
  static void storef(float* ptr, const F& f) {
    for (int i = 0; i < kParts; ++i) f.p[i].store_unaligned(ptr + i * kFL);
  }
  static F addf(F a, const F& b) {
    for (int i = 0; i < kParts; ++i) a.p[i] = a.p[i] + b.p[i];
    return a;
  }
  static F mulf(F a, const F& b) {
    for (int i = 0; i < kParts; ++i) a.p[i] = a.p[i] * b.p[i];
    return a;
  }
  static F fmaf(const F& a, const F& b, F c) {
    for (int i = 0; i < kParts; ++i) c.p[i] = BF(arch_ops::fmadd(Arch{}, a.p[i], b.p[i], c.p[i]));
    return c;
  }
  // int16 lanes 0..15 -> lo, 16..31 -> hi
  static void widen(const W& w, F& lo, F& hi) {
    for (int i = 0; i < kParts; ++i) {
      typename BF::register_type a, b;
      arch_ops::widen16(Arch{}, w.p[i], a, b);
      F& dst = (2 * i < kParts) ? lo : hi;
      const int k = (2 * i) % kParts;
      dst.p[k] = BF(a);
      if (kParts == 1) hi.p[0] = BF(b);
      else dst.p[k + 1] = BF(b);
    }
  }

  static V load(const uint8_t* ptr) {
    V v;
    for (int i = 0; i < kParts; ++i) v.p[i] = B8::load_unaligned(ptr + i * kPartBytes);
    return v;
  }
  static V lo_nibbles(V v) {
    for (int i = 0; i < kParts; ++i) v.p[i] = v.p[i] & B8(uint8_t(0x0F));
    return v;
  }
  static V hi_nibbles(V v) {
    for (int i = 0; i < kParts; ++i) {
      const auto w = xsimd::bitwise_cast<xsimd::batch<uint16_t, Arch>>(v.p[i]) >> 4;
      v.p[i] = xsimd::bitwise_cast<B8>(w) & B8(uint8_t(0x0F));
    }
    return v;
  }
  static V table1(const int8_t* t) {
    V v;
    const B8 x(arch_ops::dup128(Arch{}, t));
    for (int i = 0; i < kParts; ++i) v.p[i] = x;
    return v;
  }
  static V table2(const int8_t* a, const int8_t* b) {
    V v;
#if defined(__AVX512BW__)
    if constexpr (kParts == 1) {  // one 512-bit part: only avx512bw (dup128x2 exists only there)
      v.p[0] = B8(arch_ops::dup128x2(Arch{}, a, b));
      return v;
    }
#endif
    for (int i = 0; i < kParts; ++i) v.p[i] = B8(arch_ops::dup128(Arch{}, i < kParts / 2 ? a : b));
    return v;
  }
  static V lookup(const V& tb, const V& idx) {
    V v;
    for (int i = 0; i < kParts; ++i) v.p[i] = B8(arch_ops::lookup(Arch{}, tb.p[i], idx.p[i]));
    return v;
  }
  static V negate_if(V v, const uint8_t* bits) {
    for (int i = 0; i < kParts; ++i) v.p[i] = B8(arch_ops::negate_if(Arch{}, v.p[i], bits + i * (kPartBytes / 8)));
    return v;
  }
  static W madd(const V& u, const V& s) {
    W w;
    for (int i = 0; i < kParts; ++i) w.p[i] = B16(arch_ops::madd(Arch{}, u.p[i], s.p[i]));
    return w;
  }
  static W zero16() {
    W w;
    for (int i = 0; i < kParts; ++i) w.p[i] = B16(int16_t(0));
    return w;
  }
  static W add16(W a, const W& b) {
    for (int i = 0; i < kParts; ++i) a.p[i] = a.p[i] + b.p[i];
    return a;
  }
  static void store16(int16_t* dst, const W& w) {
    for (int i = 0; i < kParts; ++i) w.p[i].store_unaligned(dst + i * (kPartBytes / 2));
  }
  static void f16_to_f32(const uint16_t* src, float* dst, int n) {
#if defined(__AVX512F__)
    for (int i = 0; i < n; i += 16)
      _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#elif defined(__F16C__)
    for (int i = 0; i < n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#else
    for (int i = 0; i < n; ++i) dst[i] = ::lutkit::f16_to_f32(src[i]);
#endif
  }
};

#include "../../gemv/body.inl"

template <class Arch, class P>
void lut_gemv_entry(const detail::gemv_args& a) {
  lut_gemv_rows<XsimdOps<Arch>, P>(a);
}

// Same contract as lutkit::lut_gemv, on the xsimd arch `Arch` (default: xsimd's best enabled).
template <class Arch = xsimd::default_arch, class P>
void lut_gemv(const packed_weights<P>& w, const lut_tables<P>& t, float* y, std::size_t ldy = 0,
              thread_pool* pool = nullptr) {
  detail::require_lut_gemv_capable<P>();
  const auto a = detail::make_gemv_args(w, t, y, ldy, 0, w.M());
  detail::run_gemv(&lut_gemv_entry<Arch, P>, a, pool);
}

template <class Arch = xsimd::default_arch, class P>
void lut_gemv_rows(const packed_weights<P>& w, const lut_tables<P>& t, float* y, std::size_t r0,
                   std::size_t r1, std::size_t ldy = 0) {
  detail::require_lut_gemv_capable<P>();
  const auto a = detail::make_gemv_args(w, t, y, ldy, r0, r1);
  detail::run_gemv(&lut_gemv_entry<Arch, P>, a, nullptr);
}

}  // namespace lutkit::xsimd_backend
