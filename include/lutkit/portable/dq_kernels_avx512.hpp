// lutkit — AVX-512 micro-kernels of the dequant-GEMM: VNNI (vpdpbusd, u8 levels x s8
// activations) for the int8 paradigm, AVX512-BF16 (vdpbf16ps) for bf16, FMA for fp32, and
// vpermps / vpermw level-2 lookups. Compiled with function target attributes and chosen at run
// time (Highway 1.0.3 has no target with VNNI + BF16 together), same contracts as
// detail/dq_kernels.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../detail/dq_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
// GCC 12 flags its own _mm512_undefined_* helpers inside the intrinsics headers
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define LUTKIT_HAVE_AVX512_DQ 1
#define LUTKIT_AVX512_DQ \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,fma,f16c")))

namespace lutkit::detail::avx512 {

template <int MR, int NV>
LUTKIT_AVX512_DQ void mk_int8(const mk_int8_args& a) {
  const uint8_t* W = a.W;
  const int8_t* A = a.A;
  for (std::size_t g = 0; g < a.groups; ++g) {
    __m512i acc[MR][NV];
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_si512();
    for (std::size_t s = 0; s < a.steps; ++s) {
      __m512i x[NV];
      for (int v = 0; v < NV; ++v) x[v] = _mm512_loadu_si512(A + s * a.lda + 64 * v);
      for (int r = 0; r < MR; ++r) {
        int32_t wd;
        __builtin_memcpy(&wd, W + std::size_t(r) * a.ldw + 4 * s, 4);
        const __m512i w = _mm512_set1_epi32(wd);
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], w, x[v]);
      }
    }
    A += a.steps * a.lda;
    W += 4 * a.steps;
    for (int v = 0; v < NV; ++v) {
      const __m512 sx = _mm512_loadu_ps(a.sumx + g * a.ldsum + 16 * v);
      const __m512 sa = a.sa ? _mm512_loadu_ps(a.sa + g * a.ldsum + 16 * v) : _mm512_set1_ps(1.f);
      for (int r = 0; r < MR; ++r) {
        float* c = a.C + std::size_t(r) * a.ldc + 16 * v;
        __m512 f = _mm512_cvtepi32_ps(acc[r][v]);
        if (a.sa) f = _mm512_mul_ps(f, sa);
        __m512 cv = _mm512_fmadd_ps(f, _mm512_set1_ps(a.sw[g * a.lds + r]), _mm512_loadu_ps(c));
        cv = _mm512_fnmadd_ps(sx, _mm512_set1_ps(a.swz[g * a.lds + r]), cv);
        _mm512_storeu_ps(c, cv);
      }
    }
  }
}

template <int MR, int NV>
LUTKIT_AVX512_DQ void mk_bf16(const mk_bf16_args& a) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_loadu_ps(a.C + std::size_t(r) * a.ldc + 16 * v);
  for (std::size_t s = 0; s < a.steps; ++s) {
    __m512bh x[NV];
    for (int v = 0; v < NV; ++v) x[v] = (__m512bh)_mm512_loadu_si512(a.A + s * a.lda + 32 * v);
    for (int r = 0; r < MR; ++r) {
      int32_t wd;
      __builtin_memcpy(&wd, a.W + std::size_t(r) * a.ldw + 2 * s, 4);
      const __m512bh w = (__m512bh)_mm512_set1_epi32(wd);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], x[v], w);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(a.C + std::size_t(r) * a.ldc + 16 * v, acc[r][v]);
}

template <int MR, int NV>
LUTKIT_AVX512_DQ void mk_f32(const mk_f32_args& a) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_loadu_ps(a.C + std::size_t(r) * a.ldc + 16 * v);
  for (std::size_t s = 0; s < a.steps; ++s) {
    __m512 x[NV];
    for (int v = 0; v < NV; ++v) x[v] = _mm512_loadu_ps(a.A + s * a.lda + 16 * v);
    for (int r = 0; r < MR; ++r) {
      const __m512 w = _mm512_set1_ps(a.W[std::size_t(r) * a.ldw + s]);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(x[v], w, acc[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(a.C + std::size_t(r) * a.ldc + 16 * v, acc[r][v]);
}

// level 2 with a 16-entry table held in one register: one permute per 16 (fp32) / 32 (bf16) codes
LUTKIT_AVX512_DQ inline void level2_f32(const uint8_t* codes, std::size_t n, const float* tbl, float* out) {
  const __m512 t = _mm512_loadu_ps(tbl);
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i c = _mm512_loadu_si512(codes + i);
    _mm512_storeu_ps(out + i, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(c)), t));
    _mm512_storeu_ps(out + i + 16, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(c, 1)), t));
    _mm512_storeu_ps(out + i + 32, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(c, 2)), t));
    _mm512_storeu_ps(out + i + 48, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(c, 3)), t));
  }
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(
                                                        reinterpret_cast<const __m128i*>(codes + i))), t));
  for (; i < n; ++i) out[i] = tbl[codes[i]];
}
LUTKIT_AVX512_DQ inline void level2_bf16(const uint8_t* codes, std::size_t n, const uint16_t* tbl, uint16_t* out) {
  const __m512i t = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tbl)));
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i c = _mm512_loadu_si512(codes + i);
    _mm512_storeu_si512(out + i, _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(c)), t));
    _mm512_storeu_si512(out + i + 32,
                        _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(c, 1)), t));
  }
  for (; i + 32 <= n; i += 32)
    _mm512_storeu_si512(out + i, _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm256_loadu_si256(
                                                              reinterpret_cast<const __m256i*>(codes + i))), t));
  for (; i < n; ++i) out[i] = tbl[codes[i]];
}

inline bool cpu_supported() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16");
  return ok;
}

inline const dq_kernel_set& kernels() {
  static const dq_kernel_set k{"avx512_vnni_bf16",
                               {&mk_int8<mk_rows, 1>, &mk_int8<mk_rows, 2>, &mk_int8<mk_rows, 3>},
                               {&mk_bf16<mk_rows, 1>, &mk_bf16<mk_rows, 2>, &mk_bf16<mk_rows, 3>},
                               {&mk_f32<mk_rows, 1>, &mk_f32<mk_rows, 2>, &mk_f32<mk_rows, 3>},
                               &level2_f32,
                               &level2_bf16};
  return k;
}

}  // namespace lutkit::detail::avx512
#pragma GCC diagnostic pop
#endif
