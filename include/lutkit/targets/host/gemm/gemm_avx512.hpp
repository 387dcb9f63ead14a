// lutkit — AVX-512 micro-kernels of the dequant-GEMM: VNNI (vpdpbusd, u8 levels x s8
// activations) for the int8 paradigm, AVX512-BF16 (vdpbf16ps) for bf16, FMA for fp32, and
// vpermps / vpermw level-2 lookups, SIMD level 1 (VBMI, GFNI). Compiled with function target
// attributes and chosen at run time (Highway 1.0.3 has no target with VNNI + BF16 together):
// the kernel set of gemm/microkernel.hpp, registered in gemm/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../../core/compiler.hpp"
#include "../../../core/tiling.hpp"
#include "../../../gemm/activations.hpp"
#include "../../../gemm/dequant.hpp"
#include "../../../gemm/microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX512_DQ 1
#define LUTKIT_AVX512_DQ \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx512vbmi,fma,f16c")))

namespace lutkit::detail::avx512 {

// The accumulators are named variables, not arrays: GCC keeps an array of 24 vectors in memory
// (it exceeds its scalar-replacement size limit), which halves the kernel's speed.
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
// stay in registers for the whole call. (A 6-column tile cannot hold both: storing and reloading
// C every 16 steps of a g64 group cost a third of the time. And GCC 12 copies accumulators
// around the loop of the intrinsics version; the full-width tile, NC = 3, is therefore written
// as inline assembly with its int32 sums in fixed registers zmm20..31.)
template <int NC>
LUTKIT_AVX512_DQ void mk_int8(const mk_int8_args& a) {
  const uint8_t* W = a.W;
  const int8_t* A = a.A;
  LUTKIT_DQ_COLS(LK_LOAD_F)
  for (std::size_t g = 0; g < a.groups; ++g) {
#define LK_DECL(n) __m512i c##n##0 = _mm512_setzero_si512(), c##n##1 = c##n##0, c##n##2 = c##n##0, c##n##3 = c##n##0;
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
    f##n##v = _mm512_fnmadd_ps(_mm512_loadu_ps(swz + 16 * v), bx, f##n##v);               \
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
// vpdpbusd from memory, {1to16}, ran at half speed on Zen 4). The pointers stay in registers
// from group to group: with one statement per group, GCC carried them through memory with vector
// instructions and every group's first loads waited on a store-to-load forward (the isolated
// tile ran at 343 instead of 405 GFLOP/s per thread; docs/benchmarks.md, "int8 micro-kernel").
#define LK_ZERO(r) "vpxord %%zmm" #r ", %%zmm" #r ", %%zmm" #r "\n\t"
#define LK_DP(x, w, c) "vpdpbusd %%zmm" #x ", %%zmm" #w ", %%zmm" #c "\n\t"
#define LK_DP_COL(x, c0, c1, c2, c3) LK_DP(x, 16, c0) LK_DP(x, 17, c1) LK_DP(x, 18, c2) LK_DP(x, 19, c3)
#define LK_F4(op, n, a0, a1, a2, a3)                                                                     \
  op " " #n "*256(%[C]), %%zmm" #a0 "\n\t" op " " #n "*256+64(%[C]), %%zmm" #a1 "\n\t"                  \
  op " " #n "*256+128(%[C]), %%zmm" #a2 "\n\t" op " " #n "*256+192(%[C]), %%zmm" #a3 "\n\t"
#define LK_F4_STORE(n, a0, a1, a2, a3)                                                                   \
  "vmovups %%zmm" #a0 ", " #n "*256(%[C])\n\t" "vmovups %%zmm" #a1 ", " #n "*256+64(%[C])\n\t"          \
  "vmovups %%zmm" #a2 ", " #n "*256+128(%[C])\n\t" "vmovups %%zmm" #a3 ", " #n "*256+192(%[C])\n\t"
#define LK_MAIN_LOOP                                                                                     \
  LK_ZERO(20) LK_ZERO(21) LK_ZERO(22) LK_ZERO(23) LK_ZERO(24) LK_ZERO(25) LK_ZERO(26) LK_ZERO(27)        \
  LK_ZERO(28) LK_ZERO(29) LK_ZERO(30) LK_ZERO(31)                                                        \
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
// to the next group: 64 row scales, 64 scale * zero, one row of the column sums
#define LK_NEXT "add $256, %[sw]\n\t" "add $256, %[swz]\n\t" "add %[ldsum4], %[sx]\n\t"
#define LK_CALL(EPILOGUE)                                                                                \
  LK_F4("vmovups", 0, 0, 1, 2, 3) LK_F4("vmovups", 1, 4, 5, 6, 7) LK_F4("vmovups", 2, 8, 9, 10, 11)      \
  "mov %[groups], %%r10\n\t"                                                                             \
  "2:\n\t" LK_MAIN_LOOP EPILOGUE LK_NEXT                                                                 \
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
  if (sa) {
    asm volatile(LK_CALL(LK_EPI_COL_SA(0, 20, 21, 22, 23, 0, 1, 2, 3) LK_EPI_COL_SA(1, 24, 25, 26, 27, 4, 5, 6, 7)
                             LK_EPI_COL_SA(2, 28, 29, 30, 31, 8, 9, 10, 11) "add %[ldsum4], %[sa]\n\t")
                     LK_OPERANDS);
  } else {
    asm volatile(LK_CALL(LK_EPI_COL(LK_EPI, 0, 20, 21, 22, 23, 0, 1, 2, 3)
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

// Level 1 with vectors (VBMI): the codes of one step (64 rows x 4 activations) in the
// step-major layout out[step * 256 + r * 4 + i]. Per plane pair: nibbles -> pshufb spread into
// 2-bit fields -> the two planes merged -> vpermi2b gathers each row's packed byte -> vpmultishiftqb
// unpacks its fields into bytes. Which byte holds which row comes from the tiling spec.
struct level1_indices {
  alignas(64) uint8_t pair[4][64];     // output zmm o: data byte -> packed byte of its row
  alignas(64) uint8_t lone[2][4][64];  // step s of the pair, output zmm o
  alignas(64) uint8_t ctrl2[64];       // multishift: 2-bit field of activation i
  alignas(64) uint8_t ctrl1[64];       // multishift: bit i
};
inline const level1_indices& level1_index_tables() {
  static const level1_indices t = [] {
    level1_indices x{};
    for (int o = 0; o < 4; ++o)
      for (int b = 0; b < 64; ++b) {
        const int q = b / 8, bq = b % 8;
        if (bq >= 2) continue;
        const int R = 16 * o + 2 * q + bq;
        const int src = nibble_of_row(R) * 64;
        x.pair[o][b] = uint8_t(src + paired_byte_of_row(R % 32, 0));
        for (int s = 0; s < 2; ++s) x.lone[s][o][b] = uint8_t(src + 32 * s + lone_byte_of_row(R));
      }
    for (int b = 0; b < 64; ++b) {
      const int h = (b % 8) / 4, i = b % 4;
      x.ctrl2[b] = uint8_t(8 * h + 2 * i);
      x.ctrl1[b] = uint8_t(8 * h + i);
    }
    return x;
  }();
  return t;
}

// one output register of level 1: gather each row's packed byte, then unpack the field of each
// activation already at bit `shift` of the code (the multishift control is moved down by
// `shift`: it rotates its qword); the first field is masked, the next ones are merged with
// r | (e & mask) in one ternary-logic op
LUTKIT_AVX512_DQ inline __m512i l1_field(__m512i r, bool first, __m512i a, __m512i idx, __m512i b, __m512i ctrl,
                                         __m512i mask) {
  const __m512i e = _mm512_multishift_epi64_epi8(ctrl, _mm512_permutex2var_epi8(a, idx, b));
  return first ? _mm512_and_si512(e, mask) : _mm512_ternarylogic_epi32(r, e, mask, 0xF8);
}

// The k4 steps of [k0, k1) as level 1 walks them: the step's block in the blob, its step pair
// in the block, its half of the pair, and its 256 output bytes (step-major). The block's offset
// (two divisions in packed_layout) is computed once per block, not per step.
struct level1_step {
  const uint8_t* base;
  int spi, s;
  uint8_t* o;
};
template <class P>
class level1_walk {
 public:
  level1_walk(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, uint8_t* out)
      : data_(data), L_(L), t_(t), k0_(k0), out_(out) {}
  level1_step at(std::size_t step) {
    constexpr auto& S = P::spec;
    constexpr std::size_t spb = std::size_t(S.steps_per_block);
    const std::size_t blk = step / spb, in = step % spb;
    if (blk != blk_) {
      blk_ = blk;
      if (blk >= band_end_) {  // (steps only increase: a new band)
        const std::size_t b = L_.bands > 1 ? blk / std::size_t(S.band_blocks) : 0;
        panel_ = data_ + L_.panel_offset(t_, b);
        band_first_ = L_.band_first_block(b);
        band_end_ = L_.band_end_block(b);
      }
      base_ = panel_ + S.block_in_panel(blk - band_first_, band_first_ == 0);
    }
    return {base_, int(in / 2), int(in % 2), out_ ? out_ + (step - k0_ / 4) * 256 : nullptr};  // (fused kernels: no buffer)
  }
  // the parameters of group gi, in the band of the last step asked for (with groups)
  const uint8_t* params(std::size_t gi) const {
    constexpr auto& S = P::spec;
    static_assert(S.group_k > 0);
    return panel_ + S.params_in_panel(gi - band_first_ / std::size_t(S.group_k / S.block_k));
  }

 private:
  const uint8_t* data_;
  const packed_layout& L_;
  std::size_t t_, k0_;
  uint8_t* out_;
  std::size_t blk_ = std::size_t(-1), band_first_ = 0, band_end_ = 0;
  const uint8_t* panel_ = nullptr;
  const uint8_t* base_ = nullptr;
};

// Level 1 for 4 bit planes with GFNI: a bit-matrix transpose instead of field extraction. One
// vpermt2b gathers, into each qword, the 4 plane bytes of two row pairs (rows a, a + 32 in a
// byte's two nibbles, then a + 1, a + 33) with plane q of the first pair at byte 7 - q and of
// the second at byte 3 - q; vgf2p8affineqb with that qword as the matrix and byte j = 1 << j
// as the data transposes it: byte j of the result holds the 4 planes of activation j % 4 (row
// a for j < 4, a + 32 after), first pair in bits 0-3, second in 4-7. Two dword blends with
// shifted copies then put rows a, a + 1 (and a + 32, a + 33) side by side in the step-major
// layout. 2 byte permutes + 2 affine ops per step instead of 20 shuffles.
#define LUTKIT_AVX512_GFNI \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx512vbmi,fma,f16c,gfni")))
struct level1_gfni_indices {
  alignas(64) uint8_t gather[2][64];  // half T (rows 16 T..16 T + 15 and + 32): byte -> chunk-pair byte
};
inline const level1_gfni_indices& level1_gfni_tables() {
  static const level1_gfni_indices t = [] {
    level1_gfni_indices x{};
    for (int T = 0; T < 2; ++T)
      for (int m = 0; m < 8; ++m)
        for (int q = 0; q < 4; ++q)
          for (int second = 0; second < 2; ++second) {
            const int r = 16 * T + 2 * m + second;
            // rows below 32 in the low nibble, their partner r + 32 in the high one
            if (nibble_of_row(r) != 0 || nibble_of_row(r + 32) != 1 ||
                paired_byte_of_row(r, q % 2) != paired_byte_of_row(r + 32, q % 2))
              throw std::logic_error("level1_gfni_tables: the tiling spec no longer pairs rows r, r + 32");
            x.gather[T][8 * m + (second ? 3 : 7) - q] = uint8_t(64 * (q / 2) + paired_byte_of_row(r, q % 2));
          }
    return x;
  }();
  return t;
}
inline bool cpu_has_gfni() { return host_features::gfni(); }
template <class P>
LUTKIT_AVX512_GFNI void unpack_levels_steps_gfni(const uint8_t* data, const packed_layout& L, std::size_t t,
                                                 std::size_t k0, std::size_t k1, uint8_t* out) {
  constexpr auto& S = P::spec;
  static_assert(!S.ternary && S.planes == 4);
  const level1_gfni_indices& ix = level1_gfni_tables();
  const __m512i g0 = _mm512_load_si512(ix.gather[0]), g1 = _mm512_load_si512(ix.gather[1]);
  const __m512i unit = _mm512_set1_epi64(0x8040201008040201ll);
  const __m512i m0f = _mm512_set1_epi8(0x0F);
  const __mmask16 odd = 0xAAAA;
  level1_walk<P> walk(data, L, t, k0, out);
  for (std::size_t step = k0 / 4; step < k1 / 4; ++step) {
    const auto [base, spi, s, o] = walk.at(step);
    const __m512i c0 = _mm512_loadu_si512(base + S.paired_chunk_in_block(spi, s, 0));
    const __m512i c1 = _mm512_loadu_si512(base + S.paired_chunk_in_block(spi, s, 1));
#pragma GCC unroll 2
    for (int T = 0; T < 2; ++T) {
      const __m512i X = _mm512_gf2p8affine_epi64_epi8(unit, _mm512_permutex2var_epi8(c0, T ? g1 : g0, c1), 0);
      // rows 16 T + 2 m, + 1: dword 0 of qword m from the low nibbles of bytes 0-3, dword 1
      // from their high nibbles; rows + 32: the same from bytes 4-7
      const __m512i lo = _mm512_mask_blend_epi32(odd, X, _mm512_slli_epi64(X, 28));
      const __m512i hi = _mm512_mask_blend_epi32(odd, _mm512_srli_epi64(X, 32), _mm512_srli_epi64(X, 4));
      _mm512_storeu_si512(o + 64 * T, _mm512_and_si512(lo, m0f));
      _mm512_storeu_si512(o + 128 + 64 * T, _mm512_and_si512(hi, m0f));
    }
  }
}

// Level 1 fused into the int8 micro-kernel (decode, 1 or 2 activation columns): each k4 step's
// 64 x 4 levels come out of the GFNI transpose above in four registers (rows 0-15, 16-31, 32-47,
// 48-63: the step-major layout mk_int8 reads) and go straight into vpdpbusd, so the packed
// bytes are read once and no level buffer is written or re-read. Integer sums and the fp32
// epilogue are those of mk_int8<NC>: the same bits. It serves the 1- to 4-bit formats the LUT-GEMV
// also runs (Q4_0, W4, W3, W2, W1: bit planes, the planes a format lacks masked to zero before the
// transpose); 8-bit formats and codebooks are stored as whole codes and take the
// AVX2 set's fused kernel, a load per register (gemm/targets.hpp, targets/host/gemm/gemm_avx2.hpp).
template <class P>
constexpr bool has_int8_fused() {
  constexpr auto& S = P::spec;
  using FT = format_traits<typename P::format>;
  return !S.ternary && !S.whole_codes() && !S.plane_chunks() && FT::integer_levels && S.planes >= 1 &&
         S.planes <= 4 && levels_are_codes<P>();
}
// The fused kernel's level 1 works per row pair: register T of a step holds row pairs 8 T .. 8 T + 7
// (rows r and r + 32), qword m the codes of r = 8 T + m, dword 0 row r's 4 codes, dword 1 row
// r + 32's, one per byte. One zero-masked vpermt2b puts the row pair's plane bytes in the high
// half of its qword (plane q at byte 7 - q), and vgf2p8affineqb with that qword as the matrix and
// byte j = 1 << j as the data transposes it: byte j gets bit j of every plane byte, i.e. the code
// of activation j % 4 of row r (j < 4) or r + 32, already one per byte (high nibble 0).
// 1 permute + 1 affine op per register where the step-major order above took
// 8; the accumulators are in this row-pair order, and the epilogue's scale vectors and the
// output tile are permuted to it and back (pair_order below).
// PLANES (1 to 4) bit planes: the paired chunks (planes 0-1, 2-3) hold a step's row r in the low
// nibble and r + 32 in the high one of one byte; a lone chunk (the last plane of 1 or 3) holds both
// steps of the pair, step s in its bytes 32 s .. 32 s + 31, with the same row pairing. Sources:
// chunk 0 (bytes 0-63) is the first paired chunk (the lone one for 1 plane), chunk 1 (64-127) the
// second paired chunk (4 planes) or the lone one (3 planes).
struct level1_row_pair_indices {
  alignas(64) uint8_t gather[2][4][64];  // [step s of the pair][register T]: byte -> byte of (chunk 0, 1)
};
template <int PLANES>
const level1_row_pair_indices& level1_row_pair_tables() {
  static_assert(PLANES >= 1 && PLANES <= 4);
  static const level1_row_pair_indices t = [] {
    level1_row_pair_indices x{};
    constexpr int paired = PLANES / 2 * 2;
    for (int s = 0; s < 2; ++s)
      for (int T = 0; T < 4; ++T)
        for (int m = 0; m < 8; ++m)
          for (int q = 0; q < PLANES; ++q) {
            const int r = 8 * T + m;
            const bool lone = q >= paired;
            if (nibble_of_row(r) != 0 || nibble_of_row(r + 32) != 1 ||
                (lone ? lone_byte_of_row(r) != lone_byte_of_row(r + 32)
                      : paired_byte_of_row(r, q % 2) != paired_byte_of_row(r + 32, q % 2)))
              throw std::logic_error("level1_row_pair_tables: the tiling spec no longer pairs rows r, r + 32");
            x.gather[s][T][8 * m + 7 - q] = uint8_t(lone ? 64 * (paired / 2) + 32 * s + lone_byte_of_row(r)
                                                         : 64 * (q / 2) + paired_byte_of_row(r, q % 2));
          }
    return x;
  }();
  return t;
}
// the 4 code registers of step s of a pair (row-pair order) from its chunks c[0], c[1] (above):
// the bytes of the planes a format lacks are masked to zero, so the transposed byte holds the code
template <int PLANES>
LUTKIT_AVX512_GFNI inline void gfni_row_pairs(const uint8_t* const* c, const level1_row_pair_indices& ix, int s,
                                              __m512i w[4]) {
  static_assert(PLANES >= 1 && PLANES <= 4);
  constexpr uint64_t keep = 0x0101010101010101ull * uint64_t((0xFF00u >> PLANES) & 0xFFu);
  const __m512i unit = _mm512_set1_epi64(0x8040201008040201ll);
  const __m512i c0 = _mm512_loadu_si512(c[0]);
#pragma GCC unroll 4
  for (int T = 0; T < 4; ++T) {
    // (an even number of planes: one index set for both steps, loop-invariant: with the step's
    // set W4 g64 fell from 0.74-0.76 to 0.63-0.69 of the plain read at 1 thread)
    const __m512i idx = _mm512_load_si512(ix.gather[PLANES % 2 ? s : 0][T]);
    const __m512i X = PLANES >= 3 ? _mm512_maskz_permutex2var_epi8(keep, c0, idx, _mm512_loadu_si512(c[1]))
                                  : _mm512_maskz_permutexvar_epi8(keep, idx, c0);
    w[T] = _mm512_gf2p8affine_epi64_epi8(unit, X, 0);
  }
}
// Row order (vector v: rows 16 v .. 16 v + 15) to row-pair order (vector T: rows 8 T + m, 8 T + m + 32
// in lanes 2 m, 2 m + 1) and back
LUTKIT_AVX512_GFNI inline __m512 to_pair_order(const float* rows, int T) {
  const __m512i even = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i odd = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  return _mm512_permutex2var_ps(_mm512_loadu_ps(rows + 16 * (T / 2)), T % 2 ? odd : even,
                                _mm512_loadu_ps(rows + 32 + 16 * (T / 2)));
}
LUTKIT_AVX512_GFNI inline void from_pair_order(const __m512 f[4], float* rows) {
  const __m512i lo = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i hi = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v)
    _mm512_storeu_ps(rows + 16 * v, _mm512_permutex2var_ps(f[2 * (v % 2)], v < 2 ? lo : hi, f[2 * (v % 2) + 1]));
}
// register T's 16 fp16 / bf16 group parameters -> fp32 (exact), in row-pair order: p holds the
// 64 rows' parameters (rows 8 T + m and 8 T + m + 32 to lanes 2 m, 2 m + 1)
template <bool BF16>
LUTKIT_AVX512_GFNI inline __m512 fused_param16(const uint8_t* p, int T) {
  alignas(64) static constexpr uint16_t idx[4][32] = {
      {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39},
      {8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47},
      {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55},
      {24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63}};
  const __m256i h = _mm512_castsi512_si256(_mm512_permutex2var_epi16(
      _mm512_loadu_si512(p), _mm512_load_si512(idx[T]), _mm512_loadu_si512(p + 64)));
  if constexpr (BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  else return _mm512_cvtph_ps(h);
}
// the 64 rows' weight scales sw and zero coefficients swz of group gi in row-pair order (as
// lut_weight_source::group_scales computes them: exact fp16 / bf16 decode, then zero * scale or
// -min in fp32)
template <class P>
LUTKIT_AVX512_GFNI inline void fused_group_scales(const uint8_t* ps, __m512 sw[4], __m512 swz[4]) {
  constexpr auto& S = P::spec;
#pragma GCC unroll 4
  for (int T = 0; T < 4; ++T) {
    __m512 sc = fused_param16<S.bf16_params>(ps, T);
    __m512 zc;
    if constexpr (S.asymmetric) {
      const __m512 zz = fused_param16<S.bf16_params>(ps + 2 * S.rows_per_tile, T);
      zc = S.min_form ? _mm512_xor_ps(zz, _mm512_set1_ps(-0.f)) : _mm512_mul_ps(zz, sc);
    } else {
      zc = _mm512_mul_ps(_mm512_set1_ps(S.sym_zero), sc);
    }
    sw[T] = sc;
    swz[T] = zc;
  }
}
// the epilogue of mk_int8 for one 16-row vector (row-pair order): f += sw * float(c) [* sa] - swz * sumx
LUTKIT_AVX512_GFNI inline void fused_epi(bool sa, __m512 sw, __m512 swz, __m512i c, __m512 ba, __m512 bx, __m512& f) {
  __m512 x = _mm512_cvtepi32_ps(c);
  if (sa) x = _mm512_mul_ps(x, ba);
  f = _mm512_fmadd_ps(x, sw, f);
  f = _mm512_fnmadd_ps(swz, bx, f);
}
// the epilogue of activation column n (its 4 accumulators c, outputs f)
LUTKIT_AVX512_GFNI inline void fused_epi_col(const float* sa, const __m512 sw[4], const __m512 swz[4], const float* sx,
                                             int n, const __m512i c[4], __m512 f[4]) {
  const __m512 bx = _mm512_set1_ps(sx[n]);
  const __m512 ba = sa ? _mm512_set1_ps(sa[n]) : _mm512_set1_ps(1.f);
#pragma GCC unroll 4
  for (int T = 0; T < 4; ++T) fused_epi(sa != nullptr, sw[T], swz[T], c[T], ba, bx, f[T]);
}
template <class P, int NC>
LUTKIT_AVX512_GFNI void mk_int8_fused(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                      const mk_int8_args& a) {
  static_assert(NC == 1 || NC == 2);
  static_assert(has_int8_fused<P>());
  constexpr auto& S = P::spec;
  const level1_row_pair_indices& ix = level1_row_pair_tables<S.planes>();
  level1_walk<P> walk(data, L, t, k0, nullptr);
  // software prefetch of the packed stream 4 KiB ahead (a band's panels are contiguous, and the
  // bands follow each other). W4 g64 / W8 g32, 4096 x 14336, N = 1, cold, vs the plain read, tile
  // after tile (layout version 2): none 0.58 / 0.41 at 1 thread, 2 KiB 0.70, 4 KiB 0.76-0.83 /
  // 0.87, 8 KiB 0.82 / 0.93. On bands (two runs of 3 interleaved rounds per build, 1 thread):
  // W4 g64 4 KiB 0.75-0.83 against 0.68-0.76 at 8 KiB and 0.52-0.68 at 16 KiB, Q4_0 0.81-0.86
  // against 0.76-0.80 (docs/llama_formats.md, "Decode").
  constexpr long PFD = 4096;
  std::size_t step = k0 / 4;
  const int8_t* A = a.A;
  // the outputs in row-pair order (gfni_row_pairs), column n at f[n]
  __m512 f[2][4];
#pragma GCC unroll 4
  for (int T = 0; T < 4; ++T) {
    f[0][T] = to_pair_order(a.C, T);
    f[1][T] = NC == 2 ? to_pair_order(a.C + 64, T) : _mm512_setzero_ps();
  }
  __m512 vw[4], vz[4];
  std::size_t gw = std::size_t(-1);
  for (std::size_t g = 0; g < a.groups; ++g) {
    __m512i c[2][4];
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T) c[0][T] = c[1][T] = _mm512_setzero_si512();
    for (std::size_t s = 0; s < a.steps; ++s) {
      const level1_step st = walk.at(step++);
      // chunk 0, 1 of gfni_row_pairs: the paired chunks, then the lone one
      const uint8_t* ch[2] = {nullptr, nullptr};
      int nch = 0;
#pragma GCC unroll 2
      for (int p = 0; p < S.planes / 2; ++p) ch[nch++] = st.base + S.paired_chunk_in_block(st.spi, st.s, p);
      if constexpr (S.planes % 2 == 1) ch[nch++] = st.base + S.lone_chunk_in_block(st.spi);
#pragma GCC unroll 2
      for (int p = 0; p < nch; ++p) _mm_prefetch(reinterpret_cast<const char*>(ch[p]) + PFD, _MM_HINT_T0);
      __m512i w[4];
      gfni_row_pairs<S.planes>(ch, ix, st.s, w);
      const int8_t* as = A + s * a.lda;
      __m512i x[2];
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n) {
        x[n] = _mm512_set1_epi32(panel_quad(as, n));
      }
#pragma GCC unroll 4
      for (int T = 0; T < 4; ++T)
#pragma GCC unroll 2
        for (int n = 0; n < NC; ++n) c[n][T] = _mm512_dpbusd_epi32(c[n][T], w[T], x[n]);
    }
    A += a.steps * a.lda;
    // the group's scales and zeros straight from the blob, once per weight group (a flush
    // group of int8_group activations can be a part of it)
    const std::size_t gi = L.group_of_k((step - a.steps) * 4, S);
    if (gi != gw) {
      gw = gi;
      if constexpr (S.group_k > 0) fused_group_scales<P>(walk.params(gi), vw, vz);
      else fused_group_scales<P>(data + L.scale_offset(t, gi, S), vw, vz);
    }
    const float* sx = a.sumx + g * a.ldsum;
    const float* sa = a.sa ? a.sa + g * a.ldsum : nullptr;
#pragma GCC unroll 2
    for (int n = 0; n < NC; ++n) fused_epi_col(sa, vw, vz, sx, n, c[n], f[n]);
  }
  from_pair_order(f[0], a.C);
  if constexpr (NC == 2) from_pair_order(f[1], a.C + 64);
}

// Whole codes (8 bits, codebooks, Q4NX), the fused int8 decode with VNNI: the step-major codes as
// stored (whole_codes_step_major; a 64-byte load holds rows 16 T .. 16 T + 15 of a step, 4-bit
// codes both steps of the pair, low and high nibbles), the level map by one vpshufb, and vpdpbusd
// of the u8 levels with the s8 activations: every level of 0..255 goes in as it is (no sign trick,
// no activation-sum correction), split levels (NF4) as two dots into two accumulators joined per
// flush group as 128 hi + lo (sum(Q x), exact). The integer sums are mk_int8's; the epilogue is
// portable::mk_int8's in its order (c = fma(float(sum) [* sa], sw, c); c = fma(-sumx, swz, c)) with
// the group's scales and zeros decoded from the blob as lut_weight_source::group_scales does
// (the same bits as the buffered route). The outputs stay in registers for the call. The group's
// scales are decoded before its dots: decoded after them, the epilogue waited on their lines
// (Q4NX 1 thread 0.67 against 0.79-0.82 of the plain read). No software prefetch: on Zen 4 the
// hardware prefetcher keeps up with the one sequential stream, and prefetching 4 or 8 KiB ahead
// (per step pair, or every line of the stream by a cursor) made Q8_0 slower (1 thread 0.61-0.70
// against 0.75 without). Against the AVX2 kernel on Zen 4 (4096 x 14336, N = 1, cold, 1 thread,
// three runs alternating the builds, vs the plain read): NF4 0.63-0.70 against 0.44-0.50, Q4NX
// 0.71-0.81 against 0.62-0.74, IQ4_NL 0.51-0.73 against 0.58-0.60, Q8_0 0.78-0.82 against 0.73-0.89.
template <class P>
constexpr bool whole_codes_in_registers() {
  constexpr auto& S = P::spec;
  if (!whole_codes_int8_fused<P>()) return false;
  for (int o = 0; o < 8; ++o)
    for (int s = 0; s < 2; ++s)
      if (S.code_byte_in_step_pair(8 * o, s, 0) != 32 * o + (S.planes == 8 ? 256 * s : 0)) return false;
  return S.code_shift(1) == (S.planes == 8 ? 0 : 4);
}
// 16 fp16 / bf16 group parameters (rows in order) -> fp32 (exact)
template <bool BF16>
LUTKIT_AVX512_DQ inline __m512 param16(const uint8_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  else return _mm512_cvtph_ps(h);
}
template <class P, int NC>
LUTKIT_AVX512_DQ void mk_int8_whole(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                    const mk_int8_args& a) {
  static_assert(NC == 1 || NC == 2);
  static_assert(whole_codes_in_registers<P>());
  constexpr auto& S = P::spec;
  constexpr bool MAP = !levels_are_codes<P>();
  constexpr bool SPLIT = split_levels<P>();
  constexpr bool B8 = S.planes == 8;
  static_assert(!(B8 && MAP), "8-bit codes are their levels");
  constexpr std::size_t SPB = std::size_t(S.step_pair_bytes());
  constexpr std::size_t spb = std::size_t(S.steps_per_block);
  static constexpr level_byte_maps lm = whole_code_level_maps<P>(0);
  [[maybe_unused]] const __m512i map = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(lm.hi)));
  [[maybe_unused]] const __m512i map_lo = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(lm.lo)));
  const __m512i m0f = _mm512_set1_epi8(0x0F);
  __m512 f[NC][4];
#pragma GCC unroll 2
  for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T) f[n][T] = _mm512_loadu_ps(a.C + 64 * n + 16 * T);
  std::size_t step0 = k0 / 4;
  const int8_t* A = a.A;
  const std::size_t pairs = a.steps / 2;
  for (std::size_t g = 0; g < a.groups; ++g, step0 += a.steps, A += a.steps * a.lda) {
    // the flush group's first step pair (its steps are whole step pairs of one scale group, whose
    // blocks are contiguous)
    const uint8_t* p = data + L.block_offset(t, step0 / spb, S) + (step0 % spb) / 2 * SPB;
    // the group's scales and zeros from the blob (lut_weight_source::group_scales' arithmetic),
    // first: their lines' misses overlap the codes' (loaded after the dots, the epilogue waited on
    // them)
    const std::size_t gi = L.group_of_k(step0 * 4, S);
    const uint8_t* ps = data + L.scale_offset(t, gi, S);
    alignas(64) float sw[64], swz[64];
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T) {
      __m512 sc = param16<S.bf16_params>(ps + 32 * T), zc;
      if constexpr (S.asymmetric) {
        const __m512 zz = param16<S.bf16_params>(data + L.zero_offset(t, gi, S) + 32 * T);
        zc = S.min_form ? _mm512_xor_ps(zz, _mm512_set1_ps(-0.f)) : _mm512_mul_ps(zz, sc);
      } else {
        zc = _mm512_mul_ps(_mm512_set1_ps(S.sym_zero), sc);
      }
      if constexpr (SPLIT) {  // w = s (Q - 2^13) 2^-13: scale s 2^-13, zero coefficient s
        zc = sc;
        sc = _mm512_mul_ps(sc, _mm512_set1_ps(1.f / float(1 << split_level_bits)));
      }
      _mm512_store_ps(sw + 16 * T, sc);
      _mm512_store_ps(swz + 16 * T, zc);
    }
    __m512i c[NC][4], cl[NC][4];
#pragma GCC unroll 2
    for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
      for (int T = 0; T < 4; ++T) c[n][T] = cl[n][T] = _mm512_setzero_si512();
    const int8_t* as = A;
    for (std::size_t sp = 0; sp < pairs; ++sp, p += SPB, as += 2 * a.lda) {
      __m512i x[2][NC];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
        for (int n = 0; n < NC; ++n) x[h][n] = _mm512_set1_epi32(panel_quad(as + h * a.lda, n));
      __m512i w[2][4];
#pragma GCC unroll 4
      for (int T = 0; T < 4; ++T) {
        if constexpr (B8) {
          w[0][T] = _mm512_loadu_si512(p + 64 * T);
        } else {
          const __m512i v = _mm512_loadu_si512(p + 64 * T);
          w[0][T] = _mm512_and_si512(v, m0f);
          w[1][T] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
        }
      }
      if constexpr (B8)
#pragma GCC unroll 4
        for (int T = 0; T < 4; ++T) w[1][T] = _mm512_loadu_si512(p + 256 + 64 * T);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
#pragma GCC unroll 4
        for (int T = 0; T < 4; ++T) {
          __m512i wl = w[h][T];
          if constexpr (SPLIT) wl = _mm512_shuffle_epi8(map_lo, w[h][T]);
          const __m512i wv = MAP ? _mm512_shuffle_epi8(map, w[h][T]) : w[h][T];
#pragma GCC unroll 2
          for (int n = 0; n < NC; ++n) {
            c[n][T] = _mm512_dpbusd_epi32(c[n][T], wv, x[h][n]);
            if constexpr (SPLIT) cl[n][T] = _mm512_dpbusd_epi32(cl[n][T], wl, x[h][n]);
          }
        }
    }
    const float* sx = a.sumx + g * a.ldsum;
    const float* sa = a.sa ? a.sa + g * a.ldsum : nullptr;
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T)
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n) {
        __m512i sum = c[n][T];
        if constexpr (SPLIT) sum = _mm512_add_epi32(_mm512_slli_epi32(sum, 7), cl[n][T]);
        __m512 v = _mm512_cvtepi32_ps(sum);
        if (sa) v = _mm512_mul_ps(v, _mm512_set1_ps(sa[n]));
        f[n][T] = _mm512_fmadd_ps(v, _mm512_load_ps(sw + 16 * T), f[n][T]);
        f[n][T] = _mm512_fnmadd_ps(_mm512_load_ps(swz + 16 * T), _mm512_set1_ps(sx[n]), f[n][T]);
      }
  }
#pragma GCC unroll 2
  for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T) _mm512_storeu_ps(a.C + 64 * n + 16 * T, f[n][T]);
}

template <class P>
LUTKIT_AVX512_DQ void unpack_levels_steps(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                          std::size_t k1, uint8_t* out, bool allow_gfni = true) {
  constexpr auto& S = P::spec;
  static_assert(!S.ternary, "ternary steps are 3 activations: the scalar unpacker serves them");
  static_assert(!S.whole_codes(), "whole codes are not bit planes: the AVX2 set's level 1 (a load) serves them");
  if constexpr (S.planes == 4) {
    if (allow_gfni && cpu_has_gfni()) {
      unpack_levels_steps_gfni<P>(data, L, t, k0, k1, out);
      return;
    }
  }
  const level1_indices& ix = level1_index_tables();
  const __m512i m0f = _mm512_set1_epi8(0x0F);
  // nibble -> its 4 bits at positions 0, 2, 4, 6
  alignas(64) static constexpr uint8_t spread_bytes[64] = {
      0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55,
      0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55,
      0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55,
      0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51, 0x54, 0x55};
  const __m512i spread = _mm512_load_si512(spread_bytes);
  const __m512i ctrl2 = _mm512_load_si512(ix.ctrl2), ctrl1 = _mm512_load_si512(ix.ctrl1);
  const __m512i ip0 = _mm512_load_si512(ix.pair[0]), ip1 = _mm512_load_si512(ix.pair[1]);
  const __m512i ip2 = _mm512_load_si512(ix.pair[2]), ip3 = _mm512_load_si512(ix.pair[3]);
  // plane pair p lands at bits 2p, 2p + 1 of the code, the lone plane at bit planes - 1
  __m512i cp[4], mp[4];
  for (int p = 0; p < S.planes / 2; ++p) {
    cp[p] = _mm512_sub_epi8(ctrl2, _mm512_set1_epi8(char(2 * p)));
    mp[p] = _mm512_set1_epi8(char(3 << (2 * p)));
  }
  const __m512i cl = _mm512_sub_epi8(ctrl1, _mm512_set1_epi8(char(S.planes - 1)));
  const __m512i ml = _mm512_set1_epi8(char(1 << (S.planes - 1)));
  level1_walk<P> walk(data, L, t, k0, out);
  for (std::size_t step = k0 / 4; step < k1 / 4; ++step) {
    const auto [base, spi, s, o] = walk.at(step);
    __m512i r0 = _mm512_setzero_si512(), r1 = r0, r2 = r0, r3 = r0;
#pragma GCC unroll 4
    for (int p = 0; p < S.planes / 2; ++p) {
      const __m512i c = _mm512_loadu_si512(base + S.paired_chunk_in_block(spi, s, p));
      const __m512i slo = _mm512_shuffle_epi8(spread, _mm512_and_si512(c, m0f));
      const __m512i shi = _mm512_shuffle_epi8(spread, _mm512_and_si512(_mm512_srli_epi16(c, 4), m0f));
      const __m512i plo = _mm512_or_si512(slo, _mm512_srli_epi16(slo, 7));
      const __m512i phi = _mm512_or_si512(shi, _mm512_srli_epi16(shi, 7));
      r0 = l1_field(r0, p == 0, plo, ip0, phi, cp[p], mp[p]);
      r1 = l1_field(r1, p == 0, plo, ip1, phi, cp[p], mp[p]);
      r2 = l1_field(r2, p == 0, plo, ip2, phi, cp[p], mp[p]);
      r3 = l1_field(r3, p == 0, plo, ip3, phi, cp[p], mp[p]);
    }
    if constexpr (S.planes % 2 == 1) {
      const __m512i c = _mm512_loadu_si512(base + S.lone_chunk_in_block(spi));
      const __m512i lo = _mm512_and_si512(c, m0f), hi = _mm512_and_si512(_mm512_srli_epi16(c, 4), m0f);
      const __m512i* lx = reinterpret_cast<const __m512i*>(ix.lone[s]);
      r0 = l1_field(r0, S.planes == 1, lo, _mm512_load_si512(lx + 0), hi, cl, ml);
      r1 = l1_field(r1, S.planes == 1, lo, _mm512_load_si512(lx + 1), hi, cl, ml);
      r2 = l1_field(r2, S.planes == 1, lo, _mm512_load_si512(lx + 2), hi, cl, ml);
      r3 = l1_field(r3, S.planes == 1, lo, _mm512_load_si512(lx + 3), hi, cl, ml);
    }
    _mm512_storeu_si512(o, r0);
    _mm512_storeu_si512(o + 64, r1);
    _mm512_storeu_si512(o + 128, r2);
    _mm512_storeu_si512(o + 192, r3);
  }
}

// 16 x 16 transpose of 32-bit elements: r[i] lane j -> r[j] lane i
LUTKIT_AVX512_DQ inline void transpose16_epi32(__m512i r[16]) {
  __m512i t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512i a = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), b = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
    const __m512i a2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88), b2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_i32x4(a, a2, 0x88);
    r[8 + c] = _mm512_shuffle_i32x4(a, a2, 0xdd);
    r[4 + c] = _mm512_shuffle_i32x4(b, b2, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(b, b2, 0xdd);
  }
}

// Level 1 with vectors into the row-major layout of detail::unpack_codes (the level-2 input):
// 16 steps at a time in the step-major layout, then 16 x 16 transposes of 4-code dwords.
template <class P>
LUTKIT_AVX512_DQ void unpack_codes_rows(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                        std::size_t k1, uint8_t* out, std::size_t ldo) {
  alignas(64) uint8_t tmp[16 * 256];
  for (std::size_t kb = k0; kb < k1; kb += 64) {
    const std::size_t ke = std::min(k1, kb + 64), ns = (ke - kb) / 4;
    unpack_levels_steps<P>(data, L, t, kb, ke, tmp);
    const __mmask16 keep = __mmask16((1u << ns) - 1u);
    for (int rg = 0; rg < 4; ++rg) {
      __m512i r[16];
#pragma GCC unroll 16
      for (int s = 0; s < 16; ++s)
        r[s] = std::size_t(s) < ns ? _mm512_load_si512(tmp + s * 256 + rg * 64) : _mm512_setzero_si512();
      transpose16_epi32(r);
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) _mm512_mask_storeu_epi32(out + std::size_t(rg * 16 + j) * ldo + (kb - k0), keep, r[j]);
    }
  }
}

// Row-major 32-bit elements (64 rows, stride ld, len per row) -> step-major [len][64], by
// 16 x 16 transposes
LUTKIT_AVX512_DQ inline void rows_to_steps(const uint32_t* in, std::size_t ld, std::size_t len, uint32_t* out) {
  for (std::size_t j0 = 0; j0 < len; j0 += 16) {
    const std::size_t n = std::min<std::size_t>(16, len - j0);
    const __mmask16 keep = __mmask16((1u << n) - 1u);
    for (int rg = 0; rg < 4; ++rg) {
      __m512i r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) r[i] = _mm512_maskz_loadu_epi32(keep, in + std::size_t(rg * 16 + i) * ld + j0);
      transpose16_epi32(r);
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j)
        if (std::size_t(j) < n) _mm512_storeu_si512(out + (j0 + std::size_t(j)) * 64 + rg * 16, r[j]);
    }
  }
}

// level 2 of one scale group, 64 rows: the 16-entry table of a row lives in one register
// (vcvtneps2bf16 rounds to nearest even like f32_to_bf16; the values are never fp32-subnormal)
// (the row's table: sc * (lv - zz), or sc * lv + zz for min-form formats, as portable::group16)
LUTKIT_AVX512_DQ inline __m512 group16_table(__m512 l, __m512 s, __m512 z, bool min_form) {
  return min_form ? _mm512_add_ps(_mm512_mul_ps(s, l), z) : _mm512_mul_ps(s, _mm512_sub_ps(l, z));
}
LUTKIT_AVX512_DQ inline __m512 group16_table(__m512 l, float sc, float zz, bool min_form) {
  return group16_table(l, _mm512_set1_ps(sc), _mm512_set1_ps(zz), min_form);
}
LUTKIT_AVX512_DQ inline void group16_f32(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc,
                                         const float* zz, bool min_form, std::size_t len, float* out, std::size_t ldo) {
  const __m512 l = _mm512_loadu_ps(lv);
  for (int r = 0; r < 64; ++r) {
    const __m512 t = group16_table(l, sc[r], zz[r], min_form);
    const uint8_t* c = codes + r * ldc;
    float* o = out + r * ldo;
    std::size_t i = 0;
    for (; i + 16 <= len; i += 16)
      _mm512_storeu_ps(o + i, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i))), t));
    if (i < len) {
      const __mmask16 m = __mmask16((1u << (len - i)) - 1u);
      _mm512_mask_storeu_ps(o + i, m, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, c + i)), t));
    }
  }
}
LUTKIT_AVX512_DQ inline void group16_bf16(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc,
                                          const float* zz, bool min_form, std::size_t len, uint16_t* out,
                                          std::size_t ldo) {
  const __m512 l = _mm512_loadu_ps(lv);
  for (int r = 0; r < 64; ++r) {
    const __m512 v = group16_table(l, sc[r], zz[r], min_form);
    const __m512i t = _mm512_zextsi256_si512((__m256i)_mm512_cvtneps_pbh(v));
    const uint8_t* c = codes + r * ldc;
    uint16_t* o = out + r * ldo;
    std::size_t i = 0;
    for (; i + 32 <= len; i += 32)
      _mm512_storeu_si512(o + i, _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + i))), t));
    if (i < len) {
      const __mmask32 m = __mmask32((1ull << (len - i)) - 1u);
      _mm512_mask_storeu_epi16(o + i, m, _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, c + i)), t));
    }
  }
}

// Level 2 straight into the bf16 step-major layout of mk_val, from level 1's step-major codes:
// no row-major pass and no transposition (the row-major route, group16_bf16 + rows_to_steps,
// serves the fp32 paradigm and the portable kernels). A group's tables, E entries per row
// (E = the format's code count: 2, 4, 8 or 16), lie end to end, tab[r * E + c], and are read as
// register pairs of 64 entries, so one vpermt2w looks up 64 / E rows. A 16-row output register
// (16 rows x 2 k) takes max(1, E / 4) lookups chained with merge masking: the lanes of a later
// pair keep their index until their pair's lookup writes them. Same values, bit for bit, as
// group16_bf16: the same group16_table arithmetic and the same rounding (vcvtneps2bf16).
template <int E>
LUTKIT_AVX512_DQ void group_tables_bf16(const float* lv, const float* sc, const float* zz, bool min_form,
                                        uint16_t* tab) {
  static_assert(E == 2 || E == 4 || E == 8 || E == 16);
  constexpr int LOG = E == 2 ? 1 : E == 4 ? 2 : E == 8 ? 3 : 4;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  // register z holds entries 16 z + j: row 16 z / E + j / E, code j % E
  const __m512i code = _mm512_and_si512(iota, _mm512_set1_epi32(E - 1));
  const __m512 l = _mm512_permutexvar_ps(code, _mm512_loadu_ps(lv));
  if constexpr (E == 16) {
    // one row per 16 entries: broadcast scale and zero, two rows per conversion and store
    for (int r = 0; r < 64; r += 2)
      _mm512_store_si512(tab + 16 * r, (__m512i)_mm512_cvtne2ps_pbh(group16_table(l, sc[r + 1], zz[r + 1], min_form),
                                                                    group16_table(l, sc[r], zz[r], min_form)));
    return;
  }
  for (int z = 0; z < 4 * E; ++z) {
    const int r0 = 16 * z / E;
    const __m512i row = _mm512_srli_epi32(iota, LOG);  // + r0 % 16 below
    const __m512i ri = _mm512_add_epi32(row, _mm512_set1_epi32(r0 % 16));
    const __m512 s = _mm512_permutexvar_ps(ri, _mm512_loadu_ps(sc + (r0 - r0 % 16)));
    const __m512 zv = _mm512_permutexvar_ps(ri, _mm512_loadu_ps(zz + (r0 - r0 % 16)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(tab + 16 * z),
                       (__m256i)_mm512_cvtneps_pbh(group16_table(l, s, zv, min_form)));
  }
}
// steps4 k4-steps of step-major codes (level 1: codes[s * 256 + 4 r + i]) -> 2 * steps4 steps of
// bf16 pairs (out[step * 64 + r]), with one group's tables
template <int E>
LUTKIT_AVX512_DQ void level2_steps_bf16(const uint8_t* codes, std::size_t steps4, const uint16_t* tab,
                                        uint32_t* out) {
  constexpr int NP = E < 4 ? 1 : E / 4;  // lookups per output register
  constexpr int RPP = 64 / E;            // rows per register pair
  // byte permutation: word w = 2 l + h of the output takes code 4 l + 2 half + h (low byte)
  alignas(64) uint8_t bidx[2][64];
  for (int half = 0; half < 2; ++half)
    for (int b = 0; b < 64; ++b) bidx[half][b] = uint8_t(4 * (b / 4) + 2 * half + (b / 2) % 2);
  const __m512i bi0 = _mm512_load_si512(bidx[0]), bi1 = _mm512_load_si512(bidx[1]);
  const __mmask64 even = 0x5555555555555555ull;
  for (int q = 0; q < 4; ++q) {
    // lane w (row 16 q + w / 2): the row's first entry inside its register pair
    alignas(64) uint16_t off[32];
    for (int w = 0; w < 32; ++w) off[w] = uint16_t(((16 * q + w / 2) * E) % 64);
    const __m512i rowoff = _mm512_load_si512(off);
    const int p0 = 16 * q / RPP;  // first register pair of the quarter
    // (the unroll pragmas: at -O2, GCC 12 kept these arrays in memory and level 2 ran 2.7x slower)
    __m512i ta[NP], tb[NP];
    __mmask32 km[NP];
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) {
      ta[j] = _mm512_load_si512(tab + 64 * (p0 + j));
      tb[j] = _mm512_load_si512(tab + 64 * (p0 + j) + 32);
      km[j] = NP == 1 ? __mmask32(0xFFFFFFFFu) : __mmask32(((1ull << (2 * RPP)) - 1) << (2 * RPP * j));
    }
    for (std::size_t s = 0; s < steps4; ++s) {
      const __m512i c = _mm512_load_si512(codes + s * 256 + 64 * q);
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        __m512i r = _mm512_or_si512(_mm512_maskz_permutexvar_epi8(even, half ? bi1 : bi0, c), rowoff);
#pragma GCC unroll 4
        for (int j = 0; j < NP; ++j) r = _mm512_mask2_permutex2var_epi16(ta[j], r, km[j], tb[j]);
        _mm512_store_si512(out + (2 * s + half) * 64 + 16 * q, r);
      }
    }
  }
}

// fp16 -> fp32 of n halves
LUTKIT_AVX512_DQ inline void halves_to_float(const uint16_t* h, std::size_t n, float* f) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(f + i, _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
  for (; i < n; ++i) f[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h[i])));
}

inline bool cpu_supported() { return host_features::avx512_vnni_bf16_vbmi(); }

// tile groups: group i's 32 codes (one 256-bit load, shift, mask) -> (c - z) * s as two vectors
// of 16 floats, read-order elements 0..15 and 16..31 (the arithmetic of portable::tg_value)
LUTKIT_AVX512_DQ inline void tg_group_floats(const tg_groups_args& a, std::size_t i, __m256i mask, __m512& lo,
                                             __m512& hi) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.codes[i]));
  const __m256i c = _mm256_and_si256(_mm256_srl_epi16(raw, _mm_cvtsi32_si128(a.shift[i])), mask);
  const __m512 s = _mm512_set1_ps(a.s[i]), z = _mm512_set1_ps(a.z[i]);
  lo = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(c))), z), s);
  hi = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(c, 1))), z), s);
}
// -> bf16, vcvtne2ps2bf16 (round to nearest even): 64 bytes per group
LUTKIT_AVX512_DQ inline void tg_groups_bf16(const tg_groups_args& a) {
  const __m256i mask = _mm256_set1_epi8(char((1u << a.bits) - 1u));
  for (std::size_t i = 0; i < a.n; ++i) {
    __m512 lo, hi;
    tg_group_floats(a, i, mask, lo, hi);
    _mm512_storeu_si512(a.out + 32 * i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}
// -> fp32, the group's k and k + 1 columns deinterleaved into two steps
LUTKIT_AVX512_DQ inline void tg_groups_f32(const tg_groups_args& a, float* out) {
  const __m256i mask = _mm256_set1_epi8(char((1u << a.bits) - 1u));
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (std::size_t i = 0; i < a.n; ++i) {
    __m512 lo, hi;
    tg_group_floats(a, i, mask, lo, hi);
    float* o = out + 128 * (i / 4) + 16 * (i % 4);
    _mm512_storeu_ps(o, _mm512_permutex2var_ps(lo, even, hi));
    _mm512_storeu_ps(o + 64, _mm512_permutex2var_ps(lo, odd, hi));
  }
}

// Tile groups, int8 decode (tg_int8_args): per super-group and k pair one 64-byte load of the 32
// rows' code pairs, one shift, and two masks that keep the even rows' and the odd rows' code pairs
// (a dword holds rows 2 j and 2 j + 1), then per column two vpdpbusd with the broadcast int8
// activation pair: lane j of the two int32 dots is row 2 j's and row 2 j + 1's pair dot (exact),
// converted to fp32 and multiplied-added with the group's s * xa (lanes 0..7 are rows 0..15, the
// first group; 8..15 rows 16..31, the second: one factor vector per k pair and column, A[2 q] in
// lanes 0..7, A[2 q + 1] in 8..15). The accumulators hold the even rows and the odd rows and are
// loaded and stored through that permutation. The zero terms are summed per group (one FMA of 8
// lanes per super-group) and subtracted at the end. Even and odd k pairs accumulate in two chains
// (r, o; added at the end of the call), and the stream is prefetched tg_prefetch_ahead bytes ahead.
// portable::tg_int8 is the same arithmetic in the same order (fma(float(dot), s * xa, acc): the
// same bits). Accumulators are named variables (see above).
// Against the vpmaddubsw form it replaced (one int16 dot per row, widened by two unpacks with zero
// to 2^16 dot and multiplied by s * xa * 2^-16 while that stayed normal, else by sign extension),
// on Zen 4 (4096 x 14336, cold, one run of 3 medians of 3 interleaved rounds, vs the plain read):
// N = 1, 1 thread 0.58-0.79 against 0.58-0.63, 2 threads 0.87-0.88 against 0.75-0.96; N = 2,
// 1 thread 0.42-0.48 against 0.37-0.40 (docs/tile_group.md).
inline constexpr std::size_t tg_prefetch_ahead = 8192;
// B: the code bits where the call's k pairs sit where super_group_map puts them (tg_int8_layout_is:
// constant offsets, and the low codes take no shift), 0 for any layout (the call's qbyte / qshift).
template <int NC, int B>
LUTKIT_AVX512_DQ void tg_int8_b(const tg_int8_args& a) {
  const __m512i mask = _mm512_set1_epi8(char((1u << (B > 0 ? B : a.bits)) - 1u));
  const __m512i mask_e = _mm512_and_si512(mask, _mm512_set1_epi32(0x0000FFFF));
  const __m512i mask_o = _mm512_and_si512(mask, _mm512_set1_epi32(int(0xFFFF0000u)));
  const __m256i pair_idx = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const bool sym = a.zoff[0] < 0;
  const __m256 zsym = _mm256_set1_ps(a.zsym);
  const __m512i zero = _mm512_setzero_si512();
  // rows (the pair of vectors rows 0..15 | 16..31) <-> even rows | odd rows
  const __m512i to_e = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i to_o = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i from_e0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i from_e1 = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
#define LK_TG_ACC(n)                                                                           \
  __m512 r##n##0 = _mm512_setzero_ps(), r##n##1 = r##n##0, o##n##0 = r##n##0, o##n##1 = r##n##0; \
  __m256 z##n = _mm256_setzero_ps();                                                           \
  if constexpr (n < NC) {                                                                      \
    const __m512 t0 = _mm512_loadu_ps(a.acc + 32 * n), t1 = _mm512_loadu_ps(a.acc + 32 * n + 16); \
    r##n##0 = _mm512_permutex2var_ps(t0, to_e, t1);                                            \
    r##n##1 = _mm512_permutex2var_ps(t0, to_o, t1);                                            \
  }
  LK_TG_ACC(0) LK_TG_ACC(1) LK_TG_ACC(2) LK_TG_ACC(3)
#undef LK_TG_ACC
  static_assert(tg_int8_cols == 4, "LK_TG_ACC lists tg_int8_cols columns");
  __m512 AW[4][4];  // column n, k pair q: A[n][2 q] x 8, A[n][2 q + 1] x 8
  const __m512i aw_idx[4] = {
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
      _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3),
      _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5),
      _mm512_setr_epi32(6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)};
  // k pair q of super-group s into accumulators R (r: even pairs, o: odd pairs)
#define LK_TG_COL(n, q, R)                                                                             \
  if constexpr (n < NC) {                                                                              \
    int16_t xw;                                                                                        \
    std::memcpy(&xw, a.xq + std::size_t(n) * a.ldq + 8 * s + std::size_t(2 * (q)), 2);                 \
    const __m512i xv = _mm512_set1_epi16(xw);                                                          \
    const __m512i de = _mm512_dpbusd_epi32(zero, ce, xv), dd = _mm512_dpbusd_epi32(zero, co, xv);      \
    R##n##0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(de), AW[n][q], R##n##0);                              \
    R##n##1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dd), AW[n][q], R##n##1);                              \
  }
#define LK_TG_PAIR(q, R)                                                                                      \
  {                                                                                                           \
    __m512i c;                                                                                                \
    if constexpr (B > 0) {                                                                                    \
      c = _mm512_loadu_si512(p + 64 * (q) % (32 * B));                                                       \
      if constexpr (64 * (q) / (32 * B) != 0) c = _mm512_srli_epi16(c, 64 * (q) / (32 * B) * B);             \
    } else {                                                                                                  \
      c = _mm512_srl_epi16(_mm512_loadu_si512(p + a.qbyte[q]), _mm_cvtsi32_si128(a.qshift[q]));               \
    }                                                                                                         \
    const __m512i ce = _mm512_and_si512(c, mask_e), co = _mm512_and_si512(c, mask_o);                         \
    LK_TG_COL(0, q, R) LK_TG_COL(1, q, R) LK_TG_COL(2, q, R) LK_TG_COL(3, q, R)                               \
  }
  for (std::size_t s = 0; s < a.n_sg; ++s) {
    const uint8_t* p = a.sg + s * a.sg_bytes;
    const __m256 sc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + a.soff[0])));
    const __m256 zz = sym ? zsym : _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + a.zoff[0])));
    const __m256 sz = _mm256_mul_ps(sc, zz);
#define LK_TG_PARAMS(n)                                                                                  \
  if constexpr (n < NC) {                                                                                \
    const __m256 av = _mm256_mul_ps(sc, _mm256_set1_ps(a.xa[std::size_t(n) * a.lda + s / 4]));          \
    AW[n][0] = _mm512_permutexvar_ps(aw_idx[0], _mm512_castps256_ps512(av));                             \
    AW[n][1] = _mm512_permutexvar_ps(aw_idx[1], _mm512_castps256_ps512(av));                             \
    AW[n][2] = _mm512_permutexvar_ps(aw_idx[2], _mm512_castps256_ps512(av));                             \
    AW[n][3] = _mm512_permutexvar_ps(aw_idx[3], _mm512_castps256_ps512(av));                             \
    const __m256 xp = _mm256_permutevar8x32_ps(                                                          \
        _mm256_castps128_ps256(_mm_loadu_ps(a.xp + std::size_t(n) * a.ldp + 4 * s)), pair_idx);         \
    z##n = _mm256_fmadd_ps(sz, xp, z##n);                                                                \
  }
    LK_TG_PARAMS(0) LK_TG_PARAMS(1) LK_TG_PARAMS(2) LK_TG_PARAMS(3)
#undef LK_TG_PARAMS
    _mm_prefetch(reinterpret_cast<const char*>(p) + tg_prefetch_ahead, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p) + tg_prefetch_ahead + 64, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p) + tg_prefetch_ahead + 128, _MM_HINT_T0);
    LK_TG_PAIR(0, r)
    LK_TG_PAIR(1, o)
    LK_TG_PAIR(2, r)
    LK_TG_PAIR(3, o)
  }
#undef LK_TG_PAIR
#undef LK_TG_COL
#define LK_TG_STORE(n)                                                                       \
  if constexpr (n < NC) {                                                                    \
    alignas(32) float z[8];                                                                  \
    _mm256_store_ps(z, z##n);                                                                \
    const float z0 = ((z[0] + z[2]) + z[4]) + z[6], z1 = ((z[1] + z[3]) + z[5]) + z[7];      \
    const __m512 ve = _mm512_add_ps(r##n##0, o##n##0), vo = _mm512_add_ps(r##n##1, o##n##1); \
    const __m512 v0 = _mm512_permutex2var_ps(ve, from_e0, vo);                               \
    const __m512 v1 = _mm512_permutex2var_ps(ve, from_e1, vo);                               \
    _mm512_storeu_ps(a.acc + 32 * n, _mm512_sub_ps(v0, _mm512_set1_ps(z0)));                 \
    _mm512_storeu_ps(a.acc + 32 * n + 16, _mm512_sub_ps(v1, _mm512_set1_ps(z1)));            \
  }
  LK_TG_STORE(0) LK_TG_STORE(1) LK_TG_STORE(2) LK_TG_STORE(3)
#undef LK_TG_STORE
}
template <int NC>
void tg_int8(const tg_int8_args& a) {
  if (tg_int8_layout_is(a, 4)) tg_int8_b<NC, 4>(a);
  else if (tg_int8_layout_is(a, 2)) tg_int8_b<NC, 2>(a);
  else tg_int8_b<NC, 0>(a);
}

// the driver's activation packing and tile write (gemm/activations.hpp), compiled for AVX-512:
// prepare_rows 3x faster than the SSE2 baseline at N = 128, K = 14336; the baseline's tile write
// (16 SSE multiplies per column) was 0.7% of the W4 bf16 GEMM at N = 128
LUTKIT_AVX512_DQ LUTKIT_VECTORIZE inline void prepare_rows(dq_activations& A, const float* x, std::size_t ldx,
                                                          std::size_t b0, std::size_t b1) {
  detail::prepare_rows(A, x, ldx, b0, b1);
}
LUTKIT_AVX512_DQ LUTKIT_VECTORIZE inline void write_tile(const dq_activations& A, const float* C, std::size_t n0,
                                                        std::size_t n1, std::size_t ma, std::size_t mb, float* y,
                                                        std::size_t ldy) {
  detail::write_tile(A, C, n0, n1, ma, mb, y, ldy);
}

// level 1 for policy P: SIMD unpackers for every bit-plane layout (ternary steps are 3
// activations: the portable unpacker serves them)
template <class P>
void codes_steps(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, std::size_t k1,
                 uint8_t* out) {
  unpack_levels_steps<P>(data, L, t, k0, k1, out);
}
template <class P>
dq_level1_fns<P> level1_fns() {
  // (whole codes: gemm/targets.hpp gives the AVX2 set's level 1, a load; this one reads bit planes)
  if constexpr (P::spec.ternary || P::spec.whole_codes()) {
    return {};
  } else {
    // (the bit-plane formats' levels are their codes: the int8 route's levels are codes_steps')
    static_assert(levels_are_codes<P>());
    dq_level1_fns<P> f{&codes_steps<P>, &unpack_codes_rows<P>};
    f.levels_steps = &codes_steps<P>;
    if constexpr (has_int8_fused<P>()) {
      if (cpu_has_gfni()) {
        f.int8_fused[0] = &mk_int8_fused<P, 1>;
        f.int8_fused[1] = &mk_int8_fused<P, 2>;
      }
    }
    return f;
  }
}

inline const dq_kernel_set& kernels() {
  static const dq_kernel_set k{"avx512_vnni_bf16",
                               {&mk_int8<1>, &mk_int8<2>, &mk_int8_3},
                               {&mk_val<true, 1>, &mk_val<true, 2>, &mk_val<true, 3>, &mk_val<true, 4>,
                                &mk_val<true, 5>, &mk_val<true, 6>},
                               {&mk_val<false, 1>, &mk_val<false, 2>, &mk_val<false, 3>, &mk_val<false, 4>,
                                &mk_val<false, 5>, &mk_val<false, 6>},
                               &rows_to_steps,
                               &fdq_dot,
                               &halves_to_float,
                               &group16_f32,
                               &group16_bf16,
                               &tg_groups_bf16,
                               &tg_groups_f32,
                               {&group_tables_bf16<2>, &group_tables_bf16<4>, &group_tables_bf16<8>,
                                &group_tables_bf16<16>},
                               {&level2_steps_bf16<2>, &level2_steps_bf16<4>, &level2_steps_bf16<8>,
                                &level2_steps_bf16<16>},
                               &avx512::prepare_rows,
                               &avx512::write_tile,
                               {&tg_int8<1>, &tg_int8<2>, &tg_int8<3>, &tg_int8<4>},
                               /*int8_decode_first=*/true};
  return k;
}

}  // namespace lutkit::detail::avx512
#include "../intrinsics_end.hpp"
#endif
