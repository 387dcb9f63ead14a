// lutkit — the host's calibration loops for plan/ (plan/calibrate.hpp): each runs one instruction
// the kernels are built on at its peak (independent accumulator chains in registers, no memory
// operand), or streams a buffer with full-width loads, and returns the operations it did. The
// functions are compiled with their own target attribute and called only where
// host_features says the CPU has the instructions (plan/targets.hpp chooses).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../features.hpp"
#include "../gemm/microkernels_amx.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::host_plan {

// Keeps a vector value opaque to the optimizer: the loops below cannot be folded to constants.
#define LUTKIT_PLAN_OPAQUE(v) __asm__ volatile("" : "+v"(v))

// vpdpbusd (AVX-512 VNNI): 64 u8 x s8 multiply-adds per instruction, 12 chains
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline double int8_dot_vnni(std::size_t iters, int64_t* sink) {
  __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(-1);
  LUTKIT_PLAN_OPAQUE(a);
  LUTKIT_PLAN_OPAQUE(b);
  __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0,
          c10 = c0, c11 = c0;
  for (std::size_t i = 0; i < iters; ++i) {
    c0 = _mm512_dpbusd_epi32(c0, a, b);
    c1 = _mm512_dpbusd_epi32(c1, a, b);
    c2 = _mm512_dpbusd_epi32(c2, a, b);
    c3 = _mm512_dpbusd_epi32(c3, a, b);
    c4 = _mm512_dpbusd_epi32(c4, a, b);
    c5 = _mm512_dpbusd_epi32(c5, a, b);
    c6 = _mm512_dpbusd_epi32(c6, a, b);
    c7 = _mm512_dpbusd_epi32(c7, a, b);
    c8 = _mm512_dpbusd_epi32(c8, a, b);
    c9 = _mm512_dpbusd_epi32(c9, a, b);
    c10 = _mm512_dpbusd_epi32(c10, a, b);
    c11 = _mm512_dpbusd_epi32(c11, a, b);
  }
  __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3)),
                               _mm512_add_epi32(_mm512_add_epi32(c4, c5), _mm512_add_epi32(c6, c7)));
  s = _mm512_add_epi32(s, _mm512_add_epi32(_mm512_add_epi32(c8, c9), _mm512_add_epi32(c10, c11)));
  *sink += _mm512_reduce_add_epi32(s);
  return double(iters) * 12 * 64;
}

// vpmaddubsw + vpmaddwd + vpaddd (AVX2): the int8 dot of the AVX2 kernel set, 32 multiply-adds
// per triple, 8 chains
__attribute__((target("avx2"))) inline double int8_dot_avx2(std::size_t iters, int64_t* sink) {
  __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(-1), one = _mm256_set1_epi16(1);
  LUTKIT_PLAN_OPAQUE(a);
  LUTKIT_PLAN_OPAQUE(b);
  LUTKIT_PLAN_OPAQUE(one);
  __m256i c[8];
  for (auto& v : c) v = _mm256_setzero_si256();
  for (std::size_t i = 0; i < iters; ++i)
    for (int j = 0; j < 8; ++j) c[j] = _mm256_add_epi32(c[j], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
  __m256i s = c[0];
  for (int j = 1; j < 8; ++j) s = _mm256_add_epi32(s, c[j]);
  alignas(32) int32_t o[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(o), s);
  for (int32_t v : o) *sink += v;
  return double(iters) * 8 * 32;
}

// vfmadd (AVX-512): 16 fp32 multiply-adds per instruction, 12 chains
__attribute__((target("avx512f"))) inline double fp32_fma_avx512(std::size_t iters, double* sink) {
  __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-7f);
  LUTKIT_PLAN_OPAQUE(a);
  LUTKIT_PLAN_OPAQUE(b);
  __m512 c[12];
  for (auto& v : c) v = _mm512_set1_ps(1.f);
  for (std::size_t i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) c[j] = _mm512_fmadd_ps(c[j], a, b);
  __m512 s = c[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, c[j]);
  *sink += _mm512_reduce_add_ps(s);
  return double(iters) * 12 * 16;
}

// vfmadd (AVX2 + FMA): 8 fp32 multiply-adds per instruction, 12 chains
__attribute__((target("avx2,fma"))) inline double fp32_fma_avx2(std::size_t iters, double* sink) {
  __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-7f);
  LUTKIT_PLAN_OPAQUE(a);
  LUTKIT_PLAN_OPAQUE(b);
  __m256 c[12];
  for (auto& v : c) v = _mm256_set1_ps(1.f);
  for (std::size_t i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) c[j] = _mm256_fmadd_ps(c[j], a, b);
  __m256 s = c[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, c[j]);
  alignas(32) float o[8];
  _mm256_store_ps(o, s);
  for (float v : o) *sink += double(v);
  return double(iters) * 12 * 8;
}

// vdpbf16ps (AVX-512 BF16): 32 bf16 multiply-adds per instruction, 12 chains
__attribute__((target("avx512f,avx512bf16"))) inline double bf16_dot_avx512(std::size_t iters, double* sink) {
  __m512i ai = _mm512_set1_epi16(0x3F80), bi = _mm512_set1_epi16(0x3380);  // 1.0, ~6e-8
  LUTKIT_PLAN_OPAQUE(ai);
  LUTKIT_PLAN_OPAQUE(bi);
  const __m512bh a = (__m512bh)ai, b = (__m512bh)bi;
  __m512 c[12];
  for (auto& v : c) v = _mm512_setzero_ps();
  for (std::size_t i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) c[j] = _mm512_dpbf16_ps(c[j], a, b);
  __m512 s = c[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, c[j]);
  *sink += _mm512_reduce_add_ps(s);
  return double(iters) * 12 * 32;
}

// tdpbf16ps (AMX-BF16): 16 x 16 x 32 bf16 multiply-adds per instruction, 4 sum tiles over 2 x 2
// operand tiles in the tiles (the bf16 prefill of the AMX kernel set); called only where
// host_features::amx() granted the tile state
__attribute__((target("amx-tile,amx-bf16"))) inline double bf16_dot_amx(std::size_t iters, double* sink) {
  lutkit::detail::amx::tile_config cfg;
  for (int i = 0; i < 8; ++i) cfg.rows[i] = 16, cfg.colsb[i] = 64;
  alignas(64) static const uint16_t ops[16 * 32] = {};  // (zeros: the sums stay finite)
  alignas(64) float out[16 * 16];
  _tile_loadconfig(&cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ops, 64);
  _tile_loadd(5, ops, 64);
  _tile_loadd(6, ops, 64);
  _tile_loadd(7, ops, 64);
  for (std::size_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  *sink += double(out[0]);
  return double(iters) * 4 * 16 * 16 * 32;
}

// vpermb (AVX-512 VBMI): 64 byte lookups per instruction (the LUT-GEMV's AVX-512 Ops), 12 chains
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline double lookup_vbmi(std::size_t iters, int64_t* sink) {
  __m512i t = _mm512_set1_epi8(3);
  LUTKIT_PLAN_OPAQUE(t);
  __m512i c[12];
  for (int j = 0; j < 12; ++j) c[j] = _mm512_set1_epi8(char(j));
  for (std::size_t i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) c[j] = _mm512_permutexvar_epi8(c[j], t);
  __m512i s = c[0];
  for (int j = 1; j < 12; ++j) s = _mm512_xor_si512(s, c[j]);
  *sink += _mm512_reduce_add_epi32(s);
  return double(iters) * 12 * 64;
}

// vpshufb (AVX2): 32 byte lookups per instruction (Highway's AVX2 LUT-GEMV Ops), 12 chains
__attribute__((target("avx2"))) inline double lookup_avx2(std::size_t iters, int64_t* sink) {
  __m256i t = _mm256_set1_epi8(3);
  LUTKIT_PLAN_OPAQUE(t);
  __m256i c[12];
  for (int j = 0; j < 12; ++j) c[j] = _mm256_set1_epi8(char(j));
  for (std::size_t i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) c[j] = _mm256_shuffle_epi8(t, c[j]);
  __m256i s = c[0];
  for (int j = 1; j < 12; ++j) s = _mm256_xor_si256(s, c[j]);
  alignas(32) int32_t o[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(o), s);
  for (int32_t v : o) *sink += v;
  return double(iters) * 12 * 32;
}

// a streaming read of [p, p + n) with 64-byte loads (n a multiple of 256), folded into *sink
__attribute__((target("avx2"))) inline void read_avx2(const uint8_t* p, std::size_t n, int64_t* sink) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i + 256 <= n; i += 256) {
    a0 = _mm256_xor_si256(a0, _mm256_or_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)),
                                              _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32))));
    a1 = _mm256_xor_si256(a1, _mm256_or_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)),
                                              _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96))));
    a2 = _mm256_xor_si256(a2, _mm256_or_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 128)),
                                              _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 160))));
    a3 = _mm256_xor_si256(a3, _mm256_or_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 192)),
                                              _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 224))));
  }
  const __m256i s = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  alignas(32) int64_t o[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(o), s);
  *sink += o[0] ^ o[1] ^ o[2] ^ o[3];
}

#undef LUTKIT_PLAN_OPAQUE
}  // namespace lutkit::detail::host_plan

#include "../intrinsics_end.hpp"
#endif
