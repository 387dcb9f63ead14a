// lutkit — the AVX2 set's GEMM micro-kernels (gemm/microkernel.hpp): the int8 paradigm's (u8 levels
// x s8 activations, exact in int32) with its epilogue, which the fused int8 decode shares; the bf16
// and fp32 ones (FMA); the FusedDQP dot. Each is the portable kernel's arithmetic in its order.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../../core/compiler.hpp"
#include "../../../gemm/microkernel.hpp"
#include "isa_avx2.hpp"

namespace lutkit::detail::avx2 {
// the most k4 steps a call (all its flush groups) may have for mk_int8 to buffer its widened
// activations (below; declared on every target: the tests name it)
inline constexpr std::size_t int8_bcast_steps = 128;
}  // namespace lutkit::detail::avx2

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx2 {

// portable::mk_int8's epilogue for 8 rows of one activation column, in its order:
// c = fma(float(sum) [* sa], sw, c); c = fma(-sumx, swz, c) (not with the zero folded into sum)
LUTKIT_AVX2_DQ inline void int8_epilogue8(__m256i sum, bool use_sa, __m256 sa, bool folded, __m256 sumx,
                                          const float* sw, const float* swz, float* c) {
  __m256 f = _mm256_cvtepi32_ps(sum);
  if (use_sa) f = _mm256_mul_ps(f, sa);
  __m256 cv = _mm256_fmadd_ps(f, _mm256_loadu_ps(sw), _mm256_loadu_ps(c));
  if (!folded) cv = _mm256_fnmadd_ps(_mm256_loadu_ps(swz), sumx, cv);
  _mm256_storeu_ps(c, cv);
}

// int8: 64 rows x NC columns, exact. With levels of 128 or more (8-bit codes, codebooks; below,
// mk_int8_narrow above) vpmaddubsw would saturate (two u8 levels up to 255 times s8 activations
// exceed int16), so the levels are widened to int16 and the activations to int16 quads (sign
// extended, broadcast), and vpmaddwd gives each row's two pair sums of a k4 step in adjacent int32
// lanes: 2 accumulators of 8 lanes per 8 rows and column. The widening is an in-lane vpunpck{l,h}bw
// with zero of one 32-byte load (rows 0, 1 | 4, 5 and 2, 3 | 6, 7), not two vpmovzxbw (a
// lane-crossing op of three cycles on Zen 3's shuffle pipes, which bound the step), so that per
// flush group one vphaddd puts the 8 rows' sums in row order (the int32 sum of the 4 products of
// every step, as portable::mk_int8 forms it: integer sums are exact, any order),
// then the fp32 epilogue of portable::mk_int8 with the same operations in the same order:
// c = fma(float(acc) [* sa], sw, c); c = fma(-sumx, swz, c). The 16 ymm registers hold RB row
// blocks of 8 rows at a time (RB = 4 / 2 / 1 for NC = 1 / 2 / 3: 8, 8, 6 accumulators), each
// pass over the group's steps re-reading the step-major levels from the buffer (L1 / L2).
// The group's activation quads are widened and broadcast once, into a buffer the 8 / RB passes
// load (a plain load each; up to int8_bcast_steps steps a group): widening them in every pass
// took 3 shuffle-port operations per column and step, and the kernel was shuffle-bound (Zen 3,
// Q4_0 N = 128: 84 % of the prefill's samples in mk_int8<3>, docs/prefill.md, "The GEMM").
LUTKIT_AVX2_DQ inline __m256i int8_quad16(const int8_t* as, int n) {
  return _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(_mm_cvtsi32_si128(panel_quad(as, n))));
}
// one k4 step of a pass: RB row blocks' levels (ws: the step's first block) against the NC
// activation quads x, into the pass's accumulators
template <int NC, int RB>
LUTKIT_AVX2_DQ LUTKIT_ALWAYS_INLINE inline void int8_step(const uint8_t* ws, const __m256i* x, __m256i (&acc)[NC][RB][2]) {
#pragma GCC unroll 4
  for (int b = 0; b < RB; ++b) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ws + 32 * b));
    const __m256i w0 = _mm256_unpacklo_epi8(raw, _mm256_setzero_si256());  // rows 0, 1 | 4, 5
    const __m256i w1 = _mm256_unpackhi_epi8(raw, _mm256_setzero_si256());  // rows 2, 3 | 6, 7
#pragma GCC unroll 4
    for (int n = 0; n < NC; ++n) {
      add_epi32_into(acc[n][b][0], _mm256_madd_epi16(w0, x[n]));
      add_epi32_into(acc[n][b][1], _mm256_madd_epi16(w1, x[n]));
    }
  }
}
// flush group g's operands of an int8 call: levels, activations, row scales, scale * zero, the
// activation sums and scales (or null)
struct int8_group {
  const uint8_t* W;
  const int8_t* A;
  const float *sw, *swz, *sx, *sa;
};
inline int8_group int8_group_operands(const mk_int8_args& a, std::size_t g) {
  return {a.W + 256 * a.steps * g, a.A + a.lda * a.steps * g, a.sw + g * 64, a.swz + g * 64, a.sumx + g * a.ldsum,
          a.sa ? a.sa + g * a.ldsum : nullptr};
}

// int8 with levels below 128 (a.level_max: the 1- to 7-bit codes, the K-quants, ternary): vpmaddubsw
// multiplies the u8 levels by the s8 activations in pairs, 32 products an instruction against
// vpmaddwd's 16, and its int16 pair sums cannot saturate (|2 * 127 * -128| < 2^15). Up to
// int8_narrow_depth(level_max) steps of pair sums add in int16 (their sum stays within
// int16: level_max 15 -> 8 steps, 31 -> 4, 63 -> 2, 3 -> 42; a run's first step is its sums, not
// added to zeros), then one vpmaddwd by 1 widens each row's two pair sums to its int32 step sum,
// in row order (no lane shuffle before the epilogue). The integer sums are exact, so the
// epilogue's inputs and operations are portable::mk_int8's, group after group: the same bits.
// Per pass RB row blocks of 8 rows x NC columns (RB = 4 / 2 / 2 for NC = 1 / 2 / 3), the step's NC
// activation quads broadcast from the panel (a load each) and shared by the RB blocks.
// Groups of one int16 run (ONE: steps <= depth; Q2_K, Q3_K, Q4_K, Q4_1, W4) go row blocks outside
// and up to narrow_block_steps steps of groups inside, the block's outputs kept in registers across
// its groups (the 16 registers hold them with the int16 sums, not with int32 ones too), so the
// outputs are loaded and stored once a block, not once a group; the block's levels stay in L1
// for the next pass (Zen 3, the kernel alone: Q2_K 42 -> 58 G products/s, Q3_K 48 -> 67, Q4_K
// 67 -> 70; docs/prefill.md, "The GEMM"). Groups of several runs (Q5_K, Q6_K, Q5_0) keep the int32
// sums in registers and the outputs in memory, group after group.
inline std::size_t int8_narrow_depth(int level_max) {
  const int d = 32767 / (256 * (level_max < 1 ? 1 : level_max));
  return std::size_t(d < 1 ? 1 : d > 64 ? 64 : d);
}
inline constexpr std::size_t narrow_block_steps = 16;
template <int NC, bool SA, bool FOLDED, bool ONE>
LUTKIT_AVX2_DQ void mk_int8_narrow_body(const mk_int8_args& a) {
  constexpr int RB = NC == 1 ? 4 : 2;
  const std::size_t depth = ONE ? a.steps : int8_narrow_depth(a.level_max);
  const std::size_t steps = a.steps, groups = a.groups, lda = a.lda, ldsum = a.ldsum;
  const uint8_t* const W0 = a.W;
  const int8_t* const A0 = a.A;
  const float *const sw0 = a.sw, *const swz0 = a.swz, *const sumx = a.sumx, *const sa = a.sa;
  const int32_t* const zsum = a.zsum;
  float* const C = a.C;
  const __m256i ones = _mm256_set1_epi16(1);
  const std::size_t gblock = ONE && steps > 0 && steps < narrow_block_steps ? narrow_block_steps / steps : 1;
  for (std::size_t gb0 = 0; gb0 < groups; gb0 += gblock) {
    const std::size_t gb1 = gb0 + gblock < groups ? gb0 + gblock : groups;
    for (int o0 = 0; o0 < 8; o0 += RB) {
      __m256 c[NC][RB];
      if constexpr (ONE)
#pragma GCC unroll 4
        for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
          for (int b = 0; b < RB; ++b) c[n][b] = _mm256_loadu_ps(C + 64 * n + 8 * (o0 + b));
      for (std::size_t g = gb0; g < gb1; ++g) {
        const uint8_t* W = W0 + 256 * steps * g + 32 * o0;
        const int8_t* A = A0 + steps * g * lda;
        __m256i acc[NC][RB];
#pragma GCC unroll 4
        for (int n = 0; n < NC; ++n) {
          // the zero folded in: the sums start at -z * sum(q)
          const __m256i z0 = FOLDED ? _mm256_set1_epi32(zsum[g * ldsum + n]) : _mm256_setzero_si256();
#pragma GCC unroll 4
          for (int b = 0; b < RB; ++b) acc[n][b] = z0;
        }
        for (std::size_t s0 = 0; s0 < steps; s0 += depth) {
          const std::size_t s1 = s0 + depth < steps ? s0 + depth : steps;
          __m256i h[NC][RB];
          {  // the run's first step
            __m256i x[NC];
#pragma GCC unroll 4
            for (int n = 0; n < NC; ++n) x[n] = _mm256_set1_epi32(panel_quad(A + s0 * lda, n));
#pragma GCC unroll 4
            for (int b = 0; b < RB; ++b) {
              const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(W + s0 * 256 + 32 * b));
#pragma GCC unroll 4
              for (int n = 0; n < NC; ++n) h[n][b] = _mm256_maddubs_epi16(w, x[n]);
            }
          }
          for (std::size_t s = s0 + 1; s < s1; ++s) {
            __m256i x[NC];
#pragma GCC unroll 4
            for (int n = 0; n < NC; ++n) x[n] = _mm256_set1_epi32(panel_quad(A + s * lda, n));
#pragma GCC unroll 4
            for (int b = 0; b < RB; ++b) {
              const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(W + s * 256 + 32 * b));
#pragma GCC unroll 4
              for (int n = 0; n < NC; ++n) add_epi16_into(h[n][b], _mm256_maddubs_epi16(w, x[n]));
            }
          }
#pragma GCC unroll 4
          for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
            for (int b = 0; b < RB; ++b) add_epi32_into(acc[n][b], _mm256_madd_epi16(h[n][b], ones));
        }
        const float* sw = sw0 + g * 64 + 8 * o0;
        const float* swz = swz0 + g * 64 + 8 * o0;
#pragma GCC unroll 4
        for (int n = 0; n < NC; ++n) {
#pragma GCC unroll 4
          for (int b = 0; b < RB; ++b) {
            __m256 f = _mm256_cvtepi32_ps(acc[n][b]);
            if constexpr (SA) f = _mm256_mul_ps(f, _mm256_set1_ps(sa[g * ldsum + n]));
            float* co = C + 64 * n + 8 * (o0 + b);
            __m256 cv = ONE ? c[n][b] : _mm256_loadu_ps(co);
            cv = _mm256_fmadd_ps(f, _mm256_loadu_ps(sw + 8 * b), cv);
            if constexpr (!FOLDED)
              cv = _mm256_fnmadd_ps(_mm256_loadu_ps(swz + 8 * b), _mm256_set1_ps(sumx[g * ldsum + n]), cv);
            if constexpr (ONE)
              c[n][b] = cv;
            else
              _mm256_storeu_ps(co, cv);
          }
        }
      }
      if constexpr (ONE)
#pragma GCC unroll 4
        for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
          for (int b = 0; b < RB; ++b) _mm256_storeu_ps(C + 64 * n + 8 * (o0 + b), c[n][b]);
    }
  }
}
template <int NC, bool SA, bool FOLDED>
LUTKIT_AVX2_DQ void mk_int8_narrow_runs(const mk_int8_args& a) {
  if (a.steps <= int8_narrow_depth(a.level_max)) return mk_int8_narrow_body<NC, SA, FOLDED, true>(a);
  return mk_int8_narrow_body<NC, SA, FOLDED, false>(a);
}
template <int NC>
LUTKIT_AVX2_DQ void mk_int8_narrow(const mk_int8_args& a) {
  const bool sa = a.sa != nullptr, folded = a.zsum != nullptr;
  if (sa && folded) return mk_int8_narrow_runs<NC, true, true>(a);
  if (sa) return mk_int8_narrow_runs<NC, true, false>(a);
  if (folded) return mk_int8_narrow_runs<NC, false, true>(a);
  return mk_int8_narrow_runs<NC, false, false>(a);
}

// The wide kernel's body for one combination of the epilogue's options (SA: activation scales per
// group; FOLDED: the zero folded into the sums), the loops row blocks outside, flush groups inside:
// a row block's NC x RB x 8 outputs stay in registers across the call's groups (loaded and
// stored once, not per group; GCC had also reloaded the argument struct's fields after every store
// to C, which could alias them). The epilogue's operations and their order per output are
// portable::mk_int8's, group after group: the same bits.
template <int NC, bool SA, bool FOLDED>
LUTKIT_AVX2_DQ void mk_int8_wide(const mk_int8_args& a) {
  constexpr int RB = NC == 1 ? 4 : NC == 2 ? 2 : 1;
  // every step's activation quads widened and broadcast once, when the call's steps fit
  __m256i xb[int8_bcast_steps * NC];
  const std::size_t steps = a.steps;
  const bool buffered = steps * a.groups <= int8_bcast_steps;
  if (buffered)
    for (std::size_t s = 0; s < steps * a.groups; ++s)
#pragma GCC unroll 4
      for (int n = 0; n < NC; ++n) xb[s * NC + n] = int8_quad16(a.A + s * a.lda, n);
  for (int o0 = 0; o0 < 8; o0 += RB) {
    __m256 c[NC][RB];
#pragma GCC unroll 4
    for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
      for (int b = 0; b < RB; ++b) c[n][b] = _mm256_loadu_ps(a.C + 64 * n + 8 * (o0 + b));
    for (std::size_t g = 0; g < a.groups; ++g) {
      const auto [W, A, sw, swz, sx, sa] = int8_group_operands(a, g);
      __m256i acc[NC][RB][2];
#pragma GCC unroll 4
      for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
        for (int b = 0; b < RB; ++b) acc[n][b][0] = acc[n][b][1] = _mm256_setzero_si256();
      if (buffered) {
        const __m256i* x = xb + steps * g * NC;
        for (std::size_t s = 0; s < steps; ++s) int8_step<NC, RB>(W + s * 256 + 32 * o0, x + s * NC, acc);
      } else {
        for (std::size_t s = 0; s < steps; ++s) {
          __m256i x[NC];
#pragma GCC unroll 4
          for (int n = 0; n < NC; ++n) x[n] = int8_quad16(A + s * a.lda, n);
          int8_step<NC, RB>(W + s * 256 + 32 * o0, x, acc);
        }
      }
#pragma GCC unroll 4
      for (int n = 0; n < NC; ++n) {
#pragma GCC unroll 4
        for (int b = 0; b < RB; ++b) {
          const int r = 8 * (o0 + b);
          // pair sums [r0 r0 r1 r1 | r4 r4 r5 r5] and [r2 r2 r3 r3 | r6 r6 r7 r7] -> [r0 .. r7]
          __m256i sum = _mm256_hadd_epi32(acc[n][b][0], acc[n][b][1]);
          // the zero folded in: the exact sums plus -z * sum(q)
          if constexpr (FOLDED) sum = _mm256_add_epi32(sum, _mm256_set1_epi32(a.zsum[g * a.ldsum + n]));
          __m256 f = _mm256_cvtepi32_ps(sum);
          if constexpr (SA) f = _mm256_mul_ps(f, _mm256_set1_ps(sa[n]));
          c[n][b] = _mm256_fmadd_ps(f, _mm256_loadu_ps(sw + r), c[n][b]);
          if constexpr (!FOLDED) c[n][b] = _mm256_fnmadd_ps(_mm256_loadu_ps(swz + r), _mm256_set1_ps(sx[n]), c[n][b]);
        }
      }
    }
#pragma GCC unroll 4
    for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
      for (int b = 0; b < RB; ++b) _mm256_storeu_ps(a.C + 64 * n + 8 * (o0 + b), c[n][b]);
  }
}

template <int NC>
LUTKIT_AVX2_DQ void mk_int8(const mk_int8_args& a) {
  static_assert(NC >= 1 && NC <= 3);
  if (a.level_max < 128) return mk_int8_narrow<NC>(a);
  const bool sa = a.sa != nullptr, folded = a.zsum != nullptr;
  if (sa && folded) return mk_int8_wide<NC, true, true>(a);
  if (sa) return mk_int8_wide<NC, true, false>(a);
  if (folded) return mk_int8_wide<NC, false, true>(a);
  return mk_int8_wide<NC, false, false>(a);
}

// bf16 / fp32: 64 rows x NC columns, portable::mk_val's operations in its order (bf16: per step
// the FMA of the low halves of the pair, then the high ones; a bf16 is widened exactly by a shift
// or a mask), so the same bits. The 16 ymm registers hold RB vectors of 8 rows x NC columns (RB = 8
// / 4 / 2 for NC = 1 / 2-3 / 4-6), each pass over the steps re-reading W from L1 / L2.
template <bool BF, int NC>
LUTKIT_AVX2_DQ void mk_val(const mk_val_args& a) {
  static_assert(NC >= 1 && NC <= mk_val_cols);
  constexpr int RB = NC == 1 ? 8 : NC <= 3 ? 4 : 2;
  const __m256i hi_mask = _mm256_set1_epi32(int(0xFFFF0000u));
  for (int o0 = 0; o0 < 8; o0 += RB) {
    __m256 acc[NC][RB];
#pragma GCC unroll 6
    for (int n = 0; n < NC; ++n)
#pragma GCC unroll 8
      for (int b = 0; b < RB; ++b) acc[n][b] = _mm256_loadu_ps(a.C + 64 * n + 8 * (o0 + b));
    for (std::size_t s = 0; s < a.steps; ++s) {
      const uint32_t* ws = a.W + s * 64 + 8 * o0;
      const uint32_t* as = a.A + s * a.lda;
#pragma GCC unroll 8
      for (int b = 0; b < RB; ++b) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ws + 8 * b));
        if constexpr (BF) {
          const __m256 wl = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
          const __m256 wh = _mm256_castsi256_ps(_mm256_and_si256(w, hi_mask));
#pragma GCC unroll 6
          for (int n = 0; n < NC; ++n) {
            const __m256i x = _mm256_set1_epi32(int(as[n]));
            acc[n][b] = _mm256_fmadd_ps(wl, _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)), acc[n][b]);
            acc[n][b] = _mm256_fmadd_ps(wh, _mm256_castsi256_ps(_mm256_and_si256(x, hi_mask)), acc[n][b]);
          }
        } else {
          const __m256 wf = _mm256_castsi256_ps(w);
#pragma GCC unroll 6
          for (int n = 0; n < NC; ++n)
            acc[n][b] = _mm256_fmadd_ps(wf, _mm256_castsi256_ps(_mm256_set1_epi32(int(as[n]))), acc[n][b]);
        }
      }
    }
#pragma GCC unroll 6
    for (int n = 0; n < NC; ++n)
#pragma GCC unroll 8
      for (int b = 0; b < RB; ++b) _mm256_storeu_ps(a.C + 64 * n + 8 * (o0 + b), acc[n][b]);
  }
}

// FusedDQP dot (fdq_dot_args): portable::fdq_dot's 16 per-lane FMA chains as two 8-lane halves,
// 4 rows at a time sharing each activation load (8 chains: two FMAs per cycle at a latency of 4).
LUTKIT_AVX2_DQ inline void fdq_dot(const fdq_dot_args& a) {
  std::size_t r = 0;
  for (; r + 4 <= a.rows; r += 4)
    for (std::size_t n = 0; n < a.N; ++n) {
      __m256 acc[4][2];
      const float* w[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const float* p = a.part + ((r + std::size_t(i)) * a.N + n) * 16;
        acc[i][0] = _mm256_loadu_ps(p);
        acc[i][1] = _mm256_loadu_ps(p + 8);
        w[i] = a.W + (r + std::size_t(i)) * a.ldw;
      }
      const float* x = a.x + n * a.ldx;
      for (std::size_t k = 0; k < a.len; k += 16) {
        const __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(w[i] + k), x0, acc[i][0]);
          acc[i][1] = _mm256_fmadd_ps(_mm256_loadu_ps(w[i] + k + 8), x1, acc[i][1]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        float* p = a.part + ((r + std::size_t(i)) * a.N + n) * 16;
        _mm256_storeu_ps(p, acc[i][0]);
        _mm256_storeu_ps(p + 8, acc[i][1]);
      }
    }
  for (; r < a.rows; ++r)
    for (std::size_t n = 0; n < a.N; ++n) {
      float* p = a.part + (r * a.N + n) * 16;
      __m256 c0 = _mm256_loadu_ps(p), c1 = _mm256_loadu_ps(p + 8);
      const float* w = a.W + r * a.ldw;
      const float* x = a.x + n * a.ldx;
      for (std::size_t k = 0; k < a.len; k += 16) {
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(x + k), c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k + 8), _mm256_loadu_ps(x + k + 8), c1);
      }
      _mm256_storeu_ps(p, c0);
      _mm256_storeu_ps(p + 8, c1);
    }
}

}  // namespace lutkit::detail::avx2
#include "../intrinsics_end.hpp"
#endif
