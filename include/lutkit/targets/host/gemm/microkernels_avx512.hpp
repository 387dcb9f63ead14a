// lutkit — the AVX-512 set's GEMM micro-kernels (gemm/microkernel.hpp): VNNI (vpdpbusd, u8 levels
// x s8 activations) for the int8 paradigm, the 64 x 3 tile in inline assembly, AVX512-BF16
// (vdpbf16ps) for bf16, FMA for fp32; the FusedDQP dot.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../../gemm/microkernel.hpp"
#include "isa_avx512.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx512 {

// dq_kernel_set::fold_levels: per 64-byte vector (16 rows), the even and odd bytes' levels times
// the rows' codes by vpmaddubsw (the other byte of each word zero), plus offset - zero * code, in
// 16-bit lanes, and the two halves put back together as bytes
LUTKIT_AVX512_DQ inline void fold_levels(const uint8_t* lv, std::size_t steps, const int8_t* cs, int zero, int offset,
                                         uint8_t* out) {
  __m512i c[4], k[4];
  for (int q = 0; q < 4; ++q) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(cs + 16 * q));
    c[q] = _mm512_mullo_epi32(_mm512_cvtepu8_epi32(b), _mm512_set1_epi32(0x01010101));  // code in every byte
    const __m512i kk = _mm512_sub_epi32(_mm512_set1_epi32(offset),
                                        _mm512_mullo_epi32(_mm512_cvtepi8_epi32(b), _mm512_set1_epi32(zero)));
    k[q] = _mm512_or_si512(_mm512_and_si512(kk, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(kk, 16));
  }
  const __m512i low = _mm512_set1_epi16(0x00FF);
  for (std::size_t s = 0; s < steps; ++s)
    for (int q = 0; q < 4; ++q) {
      const __m512i v = _mm512_loadu_si512(lv + s * 256 + 64 * q);
      const __m512i e = _mm512_add_epi16(_mm512_maddubs_epi16(_mm512_and_si512(v, low), c[q]), k[q]);
      const __m512i o = _mm512_add_epi16(_mm512_maddubs_epi16(_mm512_srli_epi16(v, 8), c[q]), k[q]);
      _mm512_storeu_si512(out + s * 256 + 64 * q, _mm512_or_si512(_mm512_and_si512(e, low), _mm512_slli_epi16(o, 8)));
    }
}

// The accumulators are named variables, not arrays: GCC keeps an array of 24 vectors in memory
// (it exceeds its scalar-replacement size limit), which makes the kernel far slower.
#define LUTKIT_DQ_COLS(X) X(0) X(1) X(2)
static_assert(mk_int8_cols == 3, "LUTKIT_DQ_COLS lists mk_int8_cols columns");

// fp32 accumulators of column n of a column-major 64-row tile: v##n##0..3 (rows 16q..16q+15),
// loaded from / stored to C + 64 n when n < NC (declared zero otherwise). Every kernel below uses
// these two.
#define LK_ACC_LOAD(v, n)                                                                          \
  __m512 v##n##0 = _mm512_setzero_ps(), v##n##1 = v##n##0, v##n##2 = v##n##0, v##n##3 = v##n##0;   \
  if constexpr (NC > n) {                                                                          \
    v##n##0 = _mm512_loadu_ps(a.C + n * 64);                                                       \
    v##n##1 = _mm512_loadu_ps(a.C + n * 64 + 16);                                                  \
    v##n##2 = _mm512_loadu_ps(a.C + n * 64 + 32);                                                  \
    v##n##3 = _mm512_loadu_ps(a.C + n * 64 + 48);                                                  \
  }
#define LK_ACC_STORE(v, n)                       \
  if constexpr (NC > n) {                        \
    _mm512_storeu_ps(a.C + n * 64, v##n##0);      \
    _mm512_storeu_ps(a.C + n * 64 + 16, v##n##1); \
    _mm512_storeu_ps(a.C + n * 64 + 32, v##n##2); \
    _mm512_storeu_ps(a.C + n * 64 + 48, v##n##3); \
  }
#define LK_LOAD_F(n) LK_ACC_LOAD(f, n)
#define LK_STORE_F(n) LK_ACC_STORE(f, n)
#define LK_LOAD_C(n) LK_ACC_LOAD(c, n)
#define LK_STORE_C(n) LK_ACC_STORE(c, n)

// int8: 64 rows (4 vectors of 16 rows, step-major levels) x NC columns (broadcast int8 quads).
// Per k4 step: 4 level loads, NC broadcasts, 4 * NC vpdpbusd. Per flush group: int32 -> fp32,
// weight scale and zero applied as row vectors. The 4 * NC int32 and 4 * NC fp32 accumulators
// stay in registers for the whole call. (A 6-column tile cannot hold both, and storing and
// reloading C every 16 steps of a g64 group was slow: docs/prefill.md, "The GEMM". And GCC 12
// copies accumulators around the loop of the intrinsics version; the full-width tile, NC = 3, is
// therefore written as inline assembly with its int32 sums in fixed registers zmm20..31.)
template <int NC>
LUTKIT_AVX512_DQ void mk_int8(const mk_int8_args& a) {
  const uint8_t* W = a.W;
  const int8_t* A = a.A;
  LUTKIT_DQ_COLS(LK_LOAD_F)
  for (std::size_t g = 0; g < a.groups; ++g) {
    // (with the zero folded in, the sums start at -z * sum(q) of the column)
#define LK_DECL(n)                                                                                 \
  __m512i c##n##0 = a.zsum && NC > n ? _mm512_set1_epi32(a.zsum[g * a.ldsum + n]) : _mm512_setzero_si512(), \
          c##n##1 = c##n##0, c##n##2 = c##n##0, c##n##3 = c##n##0;
    LUTKIT_DQ_COLS(LK_DECL)
#undef LK_DECL
    for (std::size_t s = 0; s < a.steps; ++s) {
      const uint8_t* ws = W + s * 256;
      const __m512i w0 = _mm512_loadu_si512(ws), w1 = _mm512_loadu_si512(ws + 64);
      const __m512i w2 = _mm512_loadu_si512(ws + 128), w3 = _mm512_loadu_si512(ws + 192);
      const int8_t* as = A + s * a.lda;
#define LK_COL(n)                                               \
  if constexpr (NC > n) {                                       \
    const __m512i x = _mm512_set1_epi32(panel_quad(as, n));     \
    c##n##0 = _mm512_dpbusd_epi32(c##n##0, w0, x);              \
    c##n##1 = _mm512_dpbusd_epi32(c##n##1, w1, x);              \
    c##n##2 = _mm512_dpbusd_epi32(c##n##2, w2, x);              \
    c##n##3 = _mm512_dpbusd_epi32(c##n##3, w3, x);              \
  }
      LUTKIT_DQ_COLS(LK_COL)
#undef LK_COL
    }
    A += a.steps * a.lda;
    W += 256 * a.steps;
    const float* sw = a.sw + g * 64;
    const float* swz = a.swz + g * 64;
    const float* sx = a.sumx + g * a.ldsum;
    const float* sa = a.sa ? a.sa + g * a.ldsum : nullptr;
#define LK_EPI(n, v)                                                                      \
  {                                                                                       \
    __m512 f = _mm512_cvtepi32_ps(c##n##v);                                               \
    if (sa) f = _mm512_mul_ps(f, ba);                                                     \
    f##n##v = _mm512_fmadd_ps(f, _mm512_loadu_ps(sw + 16 * v), f##n##v);                  \
    if (!a.zsum) f##n##v = _mm512_fnmadd_ps(_mm512_loadu_ps(swz + 16 * v), bx, f##n##v);  \
  }
#define LK_EPI_COL(n)                                                  \
  if constexpr (NC > n) {                                              \
    const __m512 bx = _mm512_set1_ps(sx[n]);                           \
    const __m512 ba = sa ? _mm512_set1_ps(sa[n]) : _mm512_set1_ps(1.f); \
    LK_EPI(n, 0) LK_EPI(n, 1) LK_EPI(n, 2) LK_EPI(n, 3)                \
  }
    LUTKIT_DQ_COLS(LK_EPI_COL)
#undef LK_EPI_COL
#undef LK_EPI
  }
  LUTKIT_DQ_COLS(LK_STORE_F)
}

// The NC = 3 tile in inline assembly: the whole call is one statement. Registers: fp32
// accumulators zmm0..11 (column n, rows 16v.. in zmm(4n + v)), int32 sums zmm20..31 (in
// zmm(20 + 4n + v)), levels zmm16..19, broadcast activations zmm13..15 (broadcasting inside
// vpdpbusd from memory, {1to16}, was slower on Zen 4). The pointers stay in registers from group
// to group: with one statement per group, GCC carried them through memory with vector
// instructions and every group's first loads waited on a store-to-load forward
// (docs/design_measurements.md, "Micro-kernels").
#define LK_ZERO(r) "vpxord %%zmm" #r ", %%zmm" #r ", %%zmm" #r "\n\t"
#define LK_DP(x, w, c) "vpdpbusd %%zmm" #x ", %%zmm" #w ", %%zmm" #c "\n\t"
#define LK_DP_COL(x, c0, c1, c2, c3) LK_DP(x, 16, c0) LK_DP(x, 17, c1) LK_DP(x, 18, c2) LK_DP(x, 19, c3)
#define LK_F4(op, n, a0, a1, a2, a3)                                                                     \
  op " " #n "*256(%[C]), %%zmm" #a0 "\n\t" op " " #n "*256+64(%[C]), %%zmm" #a1 "\n\t"                  \
  op " " #n "*256+128(%[C]), %%zmm" #a2 "\n\t" op " " #n "*256+192(%[C]), %%zmm" #a3 "\n\t"
#define LK_F4_STORE(n, a0, a1, a2, a3)                                                                   \
  "vmovups %%zmm" #a0 ", " #n "*256(%[C])\n\t" "vmovups %%zmm" #a1 ", " #n "*256+64(%[C])\n\t"          \
  "vmovups %%zmm" #a2 ", " #n "*256+128(%[C])\n\t" "vmovups %%zmm" #a3 ", " #n "*256+192(%[C])\n\t"
// the sums' starting values: zero, or (the zero folded in) the column's -z * sum(q), broadcast
// from the zsum row (in the sx register: the folded call reads no sumx)
#define LK_INIT_ZERO                                                                                     \
  LK_ZERO(20) LK_ZERO(21) LK_ZERO(22) LK_ZERO(23) LK_ZERO(24) LK_ZERO(25) LK_ZERO(26) LK_ZERO(27)        \
  LK_ZERO(28) LK_ZERO(29) LK_ZERO(30) LK_ZERO(31)
#define LK_BCAST(r, n) "vpbroadcastd " #n "*4(%[sx]), %%zmm" #r "\n\t"
#define LK_MOV(a, b) "vmovdqa64 %%zmm" #a ", %%zmm" #b "\n\t"
#define LK_INIT_ZSUM                                                                                     \
  LK_BCAST(20, 0) LK_BCAST(24, 1) LK_BCAST(28, 2) LK_MOV(20, 21) LK_MOV(20, 22) LK_MOV(20, 23)           \
  LK_MOV(24, 25) LK_MOV(24, 26) LK_MOV(24, 27) LK_MOV(28, 29) LK_MOV(28, 30) LK_MOV(28, 31)
#define LK_MAIN_LOOP(INIT)                                                                               \
  INIT                                                                                                   \
  "mov %[steps], %%r11\n\t"                                                                              \
  "1:\n\t"                                                                                               \
  "vmovdqu64 (%[W]), %%zmm16\n\t"                                                                        \
  "vmovdqu64 64(%[W]), %%zmm17\n\t"                                                                      \
  "vmovdqu64 128(%[W]), %%zmm18\n\t"                                                                     \
  "vmovdqu64 192(%[W]), %%zmm19\n\t"                                                                     \
  "vpbroadcastd 0(%[A]), %%zmm13\n\t"                                                                    \
  "vpbroadcastd 4(%[A]), %%zmm14\n\t"                                                                    \
  "vpbroadcastd 8(%[A]), %%zmm15\n\t"                                                                    \
  LK_DP_COL(13, 20, 21, 22, 23) LK_DP_COL(14, 24, 25, 26, 27) LK_DP_COL(15, 28, 29, 30, 31)              \
  "add $256, %[W]\n\t"                                                                                   \
  "add %[lda], %[A]\n\t"                                                                                 \
  "dec %%r11\n\t"                                                                                        \
  "jnz 1b\n\t"
// f += sw * float(c) - swz * sumx[n]   (zmm14 = sumx[n]; with sa: float(c) * sa[n] first, zmm13)
#define LK_EPI(c, off, f)                                                                                 \
  "vcvtdq2ps %%zmm" #c ", %%zmm16\n\t"                                                                   \
  "vfmadd231ps " #off "(%[sw]), %%zmm16, %%zmm" #f "\n\t"                                                \
  "vfnmadd231ps " #off "(%[swz]), %%zmm14, %%zmm" #f "\n\t"
#define LK_EPI_SA(c, off, f)                                                                              \
  "vcvtdq2ps %%zmm" #c ", %%zmm16\n\t"                                                                   \
  "vmulps %%zmm13, %%zmm16, %%zmm16\n\t"                                                                 \
  "vfmadd231ps " #off "(%[sw]), %%zmm16, %%zmm" #f "\n\t"                                                \
  "vfnmadd231ps " #off "(%[swz]), %%zmm14, %%zmm" #f "\n\t"
#define LK_EPI_COL(E, n, c0, c1, c2, c3, f0, f1, f2, f3)                                                  \
  "vbroadcastss " #n "*4(%[sx]), %%zmm14\n\t" E(c0, 0, f0) E(c1, 64, f1) E(c2, 128, f2) E(c3, 192, f3)
#define LK_EPI_COL_SA(n, c0, c1, c2, c3, f0, f1, f2, f3)                                                  \
  "vbroadcastss " #n "*4(%[sa]), %%zmm13\n\t" LK_EPI_COL(LK_EPI_SA, n, c0, c1, c2, c3, f0, f1, f2, f3)
// the zero folded in: f += sw * float(c) [* sa[n]]
#define LK_EPIF(c, off, f)                                                                                \
  "vcvtdq2ps %%zmm" #c ", %%zmm16\n\t"                                                                   \
  "vfmadd231ps " #off "(%[sw]), %%zmm16, %%zmm" #f "\n\t"
#define LK_EPIF_SA(c, off, f)                                                                             \
  "vcvtdq2ps %%zmm" #c ", %%zmm16\n\t"                                                                   \
  "vmulps %%zmm13, %%zmm16, %%zmm16\n\t"                                                                 \
  "vfmadd231ps " #off "(%[sw]), %%zmm16, %%zmm" #f "\n\t"
#define LK_EPIF_COL(E, c0, c1, c2, c3, f0, f1, f2, f3) E(c0, 0, f0) E(c1, 64, f1) E(c2, 128, f2) E(c3, 192, f3)
#define LK_EPIF_COL_SA(n, c0, c1, c2, c3, f0, f1, f2, f3)                                                 \
  "vbroadcastss " #n "*4(%[sa]), %%zmm13\n\t" LK_EPIF_COL(LK_EPIF_SA, c0, c1, c2, c3, f0, f1, f2, f3)
// to the next group: 64 row scales, 64 scale * zero, one row of the column sums
#define LK_NEXT "add $256, %[sw]\n\t" "add $256, %[swz]\n\t" "add %[ldsum4], %[sx]\n\t"
#define LK_CALL(INIT, EPILOGUE)                                                                          \
  LK_F4("vmovups", 0, 0, 1, 2, 3) LK_F4("vmovups", 1, 4, 5, 6, 7) LK_F4("vmovups", 2, 8, 9, 10, 11)      \
  "mov %[groups], %%r10\n\t"                                                                             \
  "2:\n\t" LK_MAIN_LOOP(INIT) EPILOGUE LK_NEXT                                                           \
  "dec %%r10\n\t"                                                                                        \
  "jnz 2b\n\t"                                                                                           \
  LK_F4_STORE(0, 0, 1, 2, 3) LK_F4_STORE(1, 4, 5, 6, 7) LK_F4_STORE(2, 8, 9, 10, 11)
#define LK_OPERANDS                                                                                      \
  : [W] "+r"(W), [A] "+r"(A), [sw] "+r"(sw), [swz] "+r"(swz), [sx] "+r"(sx), [sa] "+r"(sa)                \
  : [C] "r"(a.C), [steps] "r"(a.steps), [groups] "r"(a.groups), [lda] "r"(a.lda), [ldsum4] "r"(ldsum4)     \
  : "r10", "r11", "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9",          \
    "zmm10", "zmm11", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", "zmm21",     \
    "zmm22", "zmm23", "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30", "zmm31", "memory", "cc"

LUTKIT_AVX512_DQ inline void mk_int8_3(const mk_int8_args& a) {
  if (a.steps == 0 || a.groups == 0) return;
  const uint8_t* W = a.W;
  const int8_t* A = a.A;
  const float *sw = a.sw, *swz = a.swz, *sx = a.sumx, *sa = a.sa;
  const std::size_t ldsum4 = a.ldsum * sizeof(float);
  static_assert(sizeof(int32_t) == sizeof(float), "zsum rows step like sumx rows");
  if (a.zsum) {
    // the zero folded in: the sums start at zsum (read through the sx register), no fnmadd; swz
    // is not read (its register only advances)
    sx = reinterpret_cast<const float*>(a.zsum);
    if (sa) {
      asm volatile(LK_CALL(LK_INIT_ZSUM, LK_EPIF_COL_SA(0, 20, 21, 22, 23, 0, 1, 2, 3)
                                             LK_EPIF_COL_SA(1, 24, 25, 26, 27, 4, 5, 6, 7)
                                                 LK_EPIF_COL_SA(2, 28, 29, 30, 31, 8, 9, 10, 11)
                                                     "add %[ldsum4], %[sa]\n\t") LK_OPERANDS);
    } else {
      asm volatile(LK_CALL(LK_INIT_ZSUM, LK_EPIF_COL(LK_EPIF, 20, 21, 22, 23, 0, 1, 2, 3)
                                             LK_EPIF_COL(LK_EPIF, 24, 25, 26, 27, 4, 5, 6, 7)
                                                 LK_EPIF_COL(LK_EPIF, 28, 29, 30, 31, 8, 9, 10, 11)) LK_OPERANDS);
    }
  } else if (sa) {
    asm volatile(LK_CALL(LK_INIT_ZERO, LK_EPI_COL_SA(0, 20, 21, 22, 23, 0, 1, 2, 3)
                                           LK_EPI_COL_SA(1, 24, 25, 26, 27, 4, 5, 6, 7)
                                               LK_EPI_COL_SA(2, 28, 29, 30, 31, 8, 9, 10, 11)
                                                   "add %[ldsum4], %[sa]\n\t") LK_OPERANDS);
  } else {
    asm volatile(LK_CALL(LK_INIT_ZERO, LK_EPI_COL(LK_EPI, 0, 20, 21, 22, 23, 0, 1, 2, 3)
                                           LK_EPI_COL(LK_EPI, 1, 24, 25, 26, 27, 4, 5, 6, 7)
                                               LK_EPI_COL(LK_EPI, 2, 28, 29, 30, 31, 8, 9, 10, 11)) LK_OPERANDS);
  }
}
#undef LK_CALL
#undef LK_F4
#undef LK_F4_STORE
#undef LK_NEXT
#undef LK_OPERANDS
#undef LK_EPI_COL_SA
#undef LK_EPI_COL
#undef LK_EPI_SA
#undef LK_EPI
#undef LK_EPIF_COL_SA
#undef LK_EPIF_COL
#undef LK_EPIF_SA
#undef LK_EPIF
#undef LK_INIT_ZERO
#undef LK_INIT_ZSUM
#undef LK_BCAST
#undef LK_MOV
#undef LK_MAIN_LOOP
#undef LK_DP_COL
#undef LK_DP
#undef LK_ZERO
#undef LUTKIT_DQ_COLS

// bf16 (vdpbf16ps on bf16 pairs) or fp32 (FMA): 64 rows (4 vectors, step-major values) x NC
// broadcast columns, 4 * NC fp32 accumulators loaded from C once per call (no per-group
// epilogue: the scales are baked into the level-2 values).
#define LUTKIT_DQ_VCOLS(X) X(0) X(1) X(2) X(3) X(4) X(5)
static_assert(mk_val_cols == 6, "LUTKIT_DQ_VCOLS lists mk_val_cols columns");
template <bool BF, int NC>
LUTKIT_AVX512_DQ void mk_val(const mk_val_args& a) {
  LUTKIT_DQ_VCOLS(LK_LOAD_C)
  for (std::size_t s = 0; s < a.steps; ++s) {
    const uint32_t* ws = a.W + s * 64;
    const __m512i w0 = _mm512_loadu_si512(ws), w1 = _mm512_loadu_si512(ws + 16);
    const __m512i w2 = _mm512_loadu_si512(ws + 32), w3 = _mm512_loadu_si512(ws + 48);
    const uint32_t* as = a.A + s * a.lda;
#define LK_COL(n)                                                                                        \
  if constexpr (NC > n) {                                                                                \
    const __m512i x = _mm512_set1_epi32(int(as[n]));                                                     \
    if constexpr (BF) {                                                                                  \
      c##n##0 = _mm512_dpbf16_ps(c##n##0, (__m512bh)w0, (__m512bh)x);                                    \
      c##n##1 = _mm512_dpbf16_ps(c##n##1, (__m512bh)w1, (__m512bh)x);                                    \
      c##n##2 = _mm512_dpbf16_ps(c##n##2, (__m512bh)w2, (__m512bh)x);                                    \
      c##n##3 = _mm512_dpbf16_ps(c##n##3, (__m512bh)w3, (__m512bh)x);                                    \
    } else {                                                                                             \
      const __m512 xf = _mm512_castsi512_ps(x);                                                          \
      c##n##0 = _mm512_fmadd_ps(_mm512_castsi512_ps(w0), xf, c##n##0);                                   \
      c##n##1 = _mm512_fmadd_ps(_mm512_castsi512_ps(w1), xf, c##n##1);                                   \
      c##n##2 = _mm512_fmadd_ps(_mm512_castsi512_ps(w2), xf, c##n##2);                                   \
      c##n##3 = _mm512_fmadd_ps(_mm512_castsi512_ps(w3), xf, c##n##3);                                   \
    }                                                                                                    \
  }
    LUTKIT_DQ_VCOLS(LK_COL)
#undef LK_COL
  }
  LUTKIT_DQ_VCOLS(LK_STORE_C)
}
#undef LUTKIT_DQ_VCOLS
#undef LK_LOAD_F
#undef LK_STORE_F
#undef LK_LOAD_C
#undef LK_STORE_C
#undef LK_ACC_LOAD
#undef LK_ACC_STORE

// dq_kernel_set::mins (mk_mins_args): vpdpwssd of the rows' int16 minimum-code pairs by each
// column's broadcast pair of group sums into 4 int32 sums a column, then per super-group one
// conversion and one fma into C each. Three columns in assembly, as mk_int8_3 (GCC 12 copied the
// tied vpdpwssd accumulators between registers and reloaded the weights: the intrinsic form of
// this kernel made a Q2_K prefill 7 % slower than the fp32 route it replaces); 1 or 2 columns (the
// last call of a pass) by intrinsics.
template <int NC>
LUTKIT_AVX512_DQ void mk_mins(const mk_mins_args& a) {
  for (std::size_t s = 0; s < a.supers; ++s) {
    __m512i acc[NC][4];
    for (int n = 0; n < NC; ++n)
      for (int i = 0; i < 4; ++i) acc[n][i] = _mm512_setzero_si512();
    const uint32_t* M = a.M + s * a.pairs * 64;
    const uint32_t* S = a.S + s * a.pairs * a.lds;
    for (std::size_t p = 0; p < a.pairs; ++p)
      for (int n = 0; n < NC; ++n) {
        const __m512i x = _mm512_set1_epi32(int(S[p * a.lds + std::size_t(n)]));
        for (int i = 0; i < 4; ++i) acc[n][i] = _mm512_dpwssd_epi32(acc[n][i], _mm512_loadu_si512(M + p * 64 + 16 * i), x);
      }
    const float* d = a.dmin + s * 64;
    for (int n = 0; n < NC; ++n)
      for (int i = 0; i < 4; ++i) {
        float* c = a.C + n * 64 + 16 * i;
        _mm512_storeu_ps(c, _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[n][i]), _mm512_loadu_ps(d + 16 * i), _mm512_loadu_ps(c)));
      }
  }
}
#define LK_MZ(r) "vpxord %%zmm" #r ", %%zmm" #r ", %%zmm" #r "\n\t"
#define LK_MDP(x, a0, a1, a2, a3)                                                                        \
  "vpdpwssd %%zmm" #x ", %%zmm16, %%zmm" #a0 "\n\t" "vpdpwssd %%zmm" #x ", %%zmm17, %%zmm" #a1 "\n\t"      \
  "vpdpwssd %%zmm" #x ", %%zmm18, %%zmm" #a2 "\n\t" "vpdpwssd %%zmm" #x ", %%zmm19, %%zmm" #a3 "\n\t"
// C[off] += float(acc) * dmin[doff]
#define LK_MFL(acc, coff, doff)                                                                          \
  "vcvtdq2ps %%zmm" #acc ", %%zmm0\n\t" "vmovups " #coff "(%[C]), %%zmm1\n\t"                             \
  "vfmadd231ps " #doff "(%[d]), %%zmm0, %%zmm1\n\t" "vmovups %%zmm1, " #coff "(%[C])\n\t"
LUTKIT_AVX512_DQ inline void mk_mins_3(const mk_mins_args& a) {
  if (a.supers == 0 || a.pairs == 0) return;  // (nothing to add; the loops below run at least once)
  const uint32_t* M = a.M;
  const uint32_t* S = a.S;
  const float* d = a.dmin;
  const std::size_t lds4 = a.lds * 4;
  asm volatile(
      "mov %[supers], %%r10\n\t"
      "2:\n\t"
      LK_MZ(20) LK_MZ(21) LK_MZ(22) LK_MZ(23) LK_MZ(24) LK_MZ(25) LK_MZ(26) LK_MZ(27)
      LK_MZ(28) LK_MZ(29) LK_MZ(30) LK_MZ(31)
      "mov %[pairs], %%r11\n\t"
      "1:\n\t"
      "vmovdqu64 (%[M]), %%zmm16\n\t"
      "vmovdqu64 64(%[M]), %%zmm17\n\t"
      "vmovdqu64 128(%[M]), %%zmm18\n\t"
      "vmovdqu64 192(%[M]), %%zmm19\n\t"
      "vpbroadcastd 0(%[S]), %%zmm13\n\t"
      "vpbroadcastd 4(%[S]), %%zmm14\n\t"
      "vpbroadcastd 8(%[S]), %%zmm15\n\t"
      LK_MDP(13, 20, 21, 22, 23) LK_MDP(14, 24, 25, 26, 27) LK_MDP(15, 28, 29, 30, 31)
      "add $256, %[M]\n\t"
      "add %[lds4], %[S]\n\t"
      "dec %%r11\n\t"
      "jnz 1b\n\t"
      LK_MFL(20, 0, 0) LK_MFL(21, 64, 64) LK_MFL(22, 128, 128) LK_MFL(23, 192, 192)
      LK_MFL(24, 256, 0) LK_MFL(25, 320, 64) LK_MFL(26, 384, 128) LK_MFL(27, 448, 192)
      LK_MFL(28, 512, 0) LK_MFL(29, 576, 64) LK_MFL(30, 640, 128) LK_MFL(31, 704, 192)
      "add $256, %[d]\n\t"
      "dec %%r10\n\t"
      "jnz 2b\n\t"
      : [M] "+r"(M), [S] "+r"(S), [d] "+r"(d)
      : [C] "r"(a.C), [supers] "r"(a.supers), [pairs] "r"(a.pairs), [lds4] "r"(lds4)
      : "r10", "r11", "zmm0", "zmm1", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20",
        "zmm21", "zmm22", "zmm23", "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30", "zmm31",
        "memory", "cc");
}
#undef LK_MZ
#undef LK_MDP
#undef LK_MFL

// FusedDQP dot: 4 rows at a time share each activation load
LUTKIT_AVX512_DQ inline void fdq_dot(const fdq_dot_args& a) {
  std::size_t r = 0;
  for (; r + 4 <= a.rows; r += 4)
    for (std::size_t n = 0; n < a.N; ++n) {
      __m512 acc[4];
      #pragma GCC unroll 24
      for (int i = 0; i < 4; ++i) acc[i] = _mm512_loadu_ps(a.part + ((r + i) * a.N + n) * 16);
      const float* x = a.x + n * a.ldx;
      for (std::size_t k = 0; k < a.len; k += 16) {
        const __m512 xv = _mm512_loadu_ps(x + k);
        #pragma GCC unroll 24
        for (int i = 0; i < 4; ++i) acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(a.W + (r + i) * a.ldw + k), xv, acc[i]);
      }
      #pragma GCC unroll 24
      for (int i = 0; i < 4; ++i) _mm512_storeu_ps(a.part + ((r + i) * a.N + n) * 16, acc[i]);
    }
  for (; r < a.rows; ++r)
    for (std::size_t n = 0; n < a.N; ++n) {
      __m512 acc = _mm512_loadu_ps(a.part + (r * a.N + n) * 16);
      for (std::size_t k = 0; k < a.len; k += 16)
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(a.W + r * a.ldw + k), _mm512_loadu_ps(a.x + n * a.ldx + k), acc);
      _mm512_storeu_ps(a.part + (r * a.N + n) * 16, acc);
    }
}

}  // namespace lutkit::detail::avx512
#include "../intrinsics_end.hpp"
#endif
