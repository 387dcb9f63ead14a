// lutkit — prefill: LUT dequant-GEMM on the SAME packed blob the LUT-GEMV reads (T-MAN §4.1–4.2).
//
//   y[n * ldy + m] = sum_k W[m][k] x[n][k],  N from 1 to thousands.
//
// Per thread, for each 64-row tile of W and each K-chunk (kc, a multiple of the scale group):
//   1. level-1 bit-repack lookups turn the bit-serial planes into codes (detail/unpack_codes);
//   2. int8 paradigm: the codes (levels) are multiplied as u8 by int8 activations (VNNI), the
//      scale and zero applied once per group from integer sums;  fp32 / bf16 paradigms: level-2
//      tables (scale and zero baked in) turn codes into values;
//   3. a register-blocked micro-kernel (the 64 weight rows in vector lanes, step-major, x 3 or 6
//      broadcast activation columns) accumulates into a column-major 64 x N fp32 tile.
// The dequantized chunk (<= 64 KiB) is consumed from L1/L2 right after it is produced, which is
// the CPU analogue of T-MAN's DMA -> vector -> matrix pipeline: the next chunk's weight bytes are
// streamed in by the hardware prefetcher while the micro-kernel works on the current one.
//
// Activation paradigms (Dolphium): fp32, bf16 (AVX512-BF16 dot where present), int8 quantized per
// row (`int8`) or per scale group (`int8_group`) with a VNNI dot where present.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <concepts>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "../dequant.hpp"
#include "../detail/dq_kernels.hpp"
#include "../detail/prefetch.hpp"
#include "../pack.hpp"
#include "../thread_pool.hpp"
#include "dq_kernels_avx512.hpp"

// for functions compiled into each caller's instruction set (prepare_rows, quantize_act_int8)
#if defined(__GNUC__) || defined(__clang__)
#define LUTKIT_ALWAYS_INLINE __attribute__((always_inline))
#else
#define LUTKIT_ALWAYS_INLINE
#endif
// The AVX-512 instance of prepare_rows relies on the loop vectorizer, which GCC 12 runs at -O2
// only with its very-cheap cost model: an engine built at -O2 (RelWithDebInfo) got scalar loops,
// 7.2 ms instead of 1.0 ms for N = 128, K = 14336 int8 activations, 15% of that GEMM.
#if defined(__GNUC__) && !defined(__clang__)
#define LUTKIT_VECTORIZE __attribute__((optimize("tree-vectorize")))
#else
#define LUTKIT_VECTORIZE
#endif

namespace lutkit {

enum class act_type { fp32, bf16, int8, int8_group };
inline const char* act_name(act_type a) {
  switch (a) {
    case act_type::fp32: return "fp32";
    case act_type::bf16: return "bf16";
    case act_type::int8: return "int8";
    case act_type::int8_group: return "int8g";
  }
  return "?";
}
// Which micro-kernels run: the best the CPU has, the portable C++ ones, or AVX-512 (an error
// if the CPU lacks VNNI / BF16).
enum class dq_backend { best, generic, avx512 };

namespace detail {

inline const dq_kernel_set& dq_kernels_for(dq_backend b) {
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (b == dq_backend::avx512) {
    require(avx512::cpu_supported(), "dequant-GEMM: this CPU lacks AVX-512 VNNI/BF16");
    return avx512::kernels();
  }
  if (b == dq_backend::best && avx512::cpu_supported()) return avx512::kernels();
#else
  require(b != dq_backend::avx512, "dequant-GEMM: AVX-512 kernels are not compiled for this target");
#endif
  return generic_kernels();
}

inline std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

// The K-direction geometry of one call: flush groups (scale groups, or 256-ish chunks for
// whole-K scales) and the chunk length kc every buffer is sized for.
struct dq_geometry {
  std::size_t K = 0, K_pad = 0;
  std::size_t flush_k = 0;  // k per int8 flush group (= the scale group, or a block multiple)
  std::size_t kc = 0;       // k per chunk: a multiple of flush_k
  std::size_t N = 0, NP = 0;  // NP: N rounded up to 48 (whole column blocks of every kernel)
  // the activation panel: 32-bit elements (4 int8 | 2 bf16 | 1 fp32 of one column), chunk-major:
  // for each chunk of kcs steps (one kc of k), the column blocks of cb columns (the micro-kernel's
  // NC) one after the other, each [step][cb]. The calls of one chunk then read one sequential
  // stream, which the hardware prefetcher follows from L3; with each block's steps over the whole
  // K, every call started on lines 40+ KB away from the last one's and waited for L3.
  std::size_t cb = 0, psteps = 0, kcs = 0;
  std::size_t panel_index(std::size_t n, std::size_t s) const {
    const std::size_t s0 = s / kcs * kcs, len = std::min(kcs, psteps - s0);
    return s0 * NP + (n / cb) * len * cb + (s - s0) * cb + n % cb;
  }
  std::size_t flushes() const { return (K_pad + flush_k - 1) / flush_k; }
  // the chunk after chunk (t, [k0, k1)): the next one of tile t, else the first of tile next_t
  // (no_tile: there is none)
  struct chunk {
    std::size_t t, k0, k1;
  };
  static constexpr std::size_t no_tile = ~std::size_t(0);
  chunk next_chunk(std::size_t t, std::size_t k1, std::size_t next_t) const {
    const bool last = k1 >= K_pad;
    const std::size_t nk0 = last ? 0 : k1;
    return {last ? next_t : t, nk0, std::min(K_pad, nk0 + kc)};
  }
  std::size_t chunks() const { return (K_pad + kc - 1) / kc; }
  // columns per pass of the GEMM: all of them up to 768, else 768 (a multiple of 48)
  std::size_t n_block() const { return NP <= 768 ? NP : 768; }
};

// K, the padded K of the weights, and the int8 flush group (a divisor of K_pad)
inline dq_geometry make_dq_geometry_k(std::size_t K, std::size_t K_pad, std::size_t flush_k, std::size_t N,
                                      act_type act) {
  dq_geometry g;
  g.K = K;
  g.K_pad = K_pad;
  g.flush_k = flush_k;
  // k per chunk: fp32 64, int8 512, bf16 1024 for N >= 48 and 256 below.
  // int8 at 4096 x 14336, N = 128, 2 threads, medians of 3: 512 gave +5-7% over 256 (half the
  // calls, each loading and storing its 12 accumulators once); 1024 was not better.
  // bf16 (session 7, interleaved rounds, 2 threads, W4): 1024 over 256 gave +2-3% at N = 128 and
  // +10-20% at N = 512 (a call's fixed cost, its 24 accumulators loaded and stored, is spread
  // over 4x the steps; the 128 KiB chunk of bf16 weights is re-read from L2 by every call), but
  // -4% at N = 16, where the dequantization dominates and a 32 KiB chunk stays in L1.
  const std::size_t base = act == act_type::fp32 ? 64 : act == act_type::bf16 ? (N >= 48 ? 1024 : 256) : 512;
  g.kc = round_up(base, g.flush_k);
  g.N = N;
  g.NP = round_up(N, 48);
  g.cb = act == act_type::int8 || act == act_type::int8_group ? std::size_t(mk_int8_cols) : std::size_t(mk_val_cols);
  const std::size_t per_step = act == act_type::fp32 ? 1 : act == act_type::bf16 ? 2 : 4;  // k per element
  g.psteps = g.K_pad / per_step;
  g.kcs = g.kc / per_step;
  return g;
}
template <class P>
dq_geometry make_dq_geometry(const packed_layout& L, std::size_t N, act_type act) {
  constexpr auto& S = P::spec;
  return make_dq_geometry_k(L.K, L.K_pad, S.group_k > 0 ? std::size_t(S.group_k) : round_up(256, std::size_t(S.block_k)),
                            N, act);
}

// Per-row (group == 0) or per-group symmetric int8 quantization of one activation row of length
// K: q = round(x / s), s = absmax / 127. Returns false if the row holds a non-finite value (the
// kernel then makes every output of that row NaN). THE activation quantizer: kernels and the
// tests' references both call it. Always inlined: prepare_activations compiles it once for the
// build's baseline and once inside an AVX-512 function, and both must give the same bytes --
// hence x / s (a division cannot be contracted into an FMA, x * (1 / s) + c could be).
LUTKIT_ALWAYS_INLINE inline bool quantize_act_int8(const float* x, std::size_t K, std::size_t group, int8_t* q,
                                                   float* scales) {
  if (group == 0) group = K;
  // written so the compiler vectorizes every loop: bit test for finiteness, round to nearest
  // even by the 1.5 * 2^23 trick (exact for |v| <= 2^22; here |v| <= 127)
  uint32_t bad = 0;
  for (std::size_t k = 0; k < K; ++k) {
    uint32_t b;
    std::memcpy(&b, x + k, 4);
    bad |= uint32_t((b & 0x7F800000u) == 0x7F800000u);
  }
  if (bad) {
    std::memset(q, 0, K);
    for (std::size_t g0 = 0, gi = 0; g0 < K; g0 += group, ++gi) scales[gi] = 0.f;
    return false;
  }
  for (std::size_t g0 = 0, gi = 0; g0 < K; g0 += group, ++gi) {
    const std::size_t g1 = std::min(K, g0 + group);
    // |x| compared as bit patterns (all finite here): a max the compiler vectorizes, unlike
    // std::max on floats, whose NaN rule kept this loop scalar and made it a serial chain
    uint32_t abits = 0;
    for (std::size_t k = g0; k < g1; ++k) {
      uint32_t b;
      std::memcpy(&b, x + k, 4);
      abits = std::max(abits, b & 0x7FFFFFFFu);
    }
    float amax;
    std::memcpy(&amax, &abits, 4);
    const float s = amax / 127.f;
    const float d = s > 0.f ? s : 1.f;  // an all-zero group: x / 1 = 0
    for (std::size_t k = g0; k < g1; ++k) {
      float v = (x[k] / d + 12582912.f) - 12582912.f;
      v = std::max(-127.f, std::min(127.f, v));
      q[k] = int8_t(v);
    }
    scales[gi] = s;
  }
  return true;
}

// Activations of one call in the micro-kernels' panel layout (column blocks, see dq_geometry).
struct dq_activations {
  act_type act = act_type::fp32;
  dq_geometry geo;
  reusable_bytes data;         // the panel (dq_geometry::panel_index), NP * K_pad int8 | bf16 | fp32
  std::vector<float> row_scale;  // int8: [NP] per-row scale (1 for int8_group)
  std::vector<float> sa;         // int8_group: [flushes][NP] per-group scale
  std::vector<float> sumx;       // int8: [flushes][NP] sum of the group's int8 values (x scale for int8_group)
  std::vector<float> nan_mul;    // [NP]: 1, or NaN for a row with a non-finite activation (int8)
};

// Row blocks [b0, b1) of 16 activation rows: each row is converted / quantized into a
// contiguous buffer, then the block is interleaved into the panel. Everything here is integer
// work, copies or quantize_act_int8: the same bytes whatever instruction set the compiler
// vectorizes it for (tested against the AVX-512 instance below: test_dequant_gemm_a.cpp).
LUTKIT_ALWAYS_INLINE inline void prepare_rows(dq_activations& A, const float* x, std::size_t ldx, std::size_t b0,
                                              std::size_t b1) {
  const dq_geometry& g = A.geo;
  const std::size_t NP = g.NP, F = g.flushes();
  constexpr std::size_t BN = 16;
  // only the buffer of this call's paradigm
  std::vector<float> xb(A.act == act_type::fp32 ? BN * g.K_pad : 0, 0.f);
  std::vector<uint16_t> hb(A.act == act_type::bf16 ? BN * g.K_pad : 0, 0);
  std::vector<int8_t> qb(A.act == act_type::int8 || A.act == act_type::int8_group ? BN * g.K_pad : 0, 0);
  std::vector<float> sc(F + 1);
  for (std::size_t blk = b0; blk < b1; ++blk) {
    const std::size_t n0 = blk * BN, nb = std::min(BN, g.N - n0);
    for (std::size_t i = 0; i < nb; ++i) {
      const std::size_t n = n0 + i;
      const float* xn = x + n * ldx;
      if (A.act == act_type::fp32) {
        std::memcpy(xb.data() + i * g.K_pad, xn, g.K * 4);
      } else if (A.act == act_type::bf16) {
        for (std::size_t k = 0; k < g.K; ++k) hb[i * g.K_pad + k] = f32_to_bf16(xn[k]);
      } else {
        const bool per_group = A.act == act_type::int8_group;
        int8_t* q = qb.data() + i * g.K_pad;
        const bool finite = quantize_act_int8(xn, g.K, per_group ? g.flush_k : 0, q, sc.data());
        A.row_scale[n] = per_group ? 1.f : sc[0];
        if (!finite) A.nan_mul[n] = NAN;
        for (std::size_t f = 0; f < F; ++f) {
          int32_t sum = 0;
          for (std::size_t k = f * g.flush_k; k < std::min(g.K, (f + 1) * g.flush_k); ++k) sum += q[k];
          A.sumx[f * NP + n] = per_group ? float(sum) * sc[f] : float(sum);
          if (per_group) A.sa[f * NP + n] = sc[f];
        }
      }
    }
    // column n of the panel, chunk by chunk: element (n, s) at panel_index(n, chunk start) + (s - start) * cb
    const std::size_t cb = g.cb;
    // (every step up to psteps: the zeros of the padded K too; prepare_activations clears only
    // the padding columns)
    if (A.act == act_type::fp32) {
      float* d = reinterpret_cast<float*>(A.data.get());
      for (std::size_t i = 0; i < nb; ++i) {
        const float* src = xb.data() + i * g.K_pad;
        for (std::size_t s0 = 0; s0 < g.psteps; s0 += g.kcs) {
          float* col = d + g.panel_index(n0 + i, s0);
          for (std::size_t k = s0; k < std::min(g.psteps, s0 + g.kcs); ++k) col[(k - s0) * cb] = src[k];
        }
      }
    } else {
      uint32_t* d = reinterpret_cast<uint32_t*>(A.data.get());
      const bool bf = A.act == act_type::bf16;
      for (std::size_t i = 0; i < nb; ++i) {
        const uint8_t* src = bf ? reinterpret_cast<const uint8_t*>(hb.data() + i * g.K_pad)
                                : reinterpret_cast<const uint8_t*>(qb.data() + i * g.K_pad);
        for (std::size_t s0 = 0; s0 < g.psteps; s0 += g.kcs) {
          uint32_t* col = d + g.panel_index(n0 + i, s0);
          for (std::size_t st = s0; st < std::min(g.psteps, s0 + g.kcs); ++st) {
            uint32_t v;
            std::memcpy(&v, src + 4 * st, 4);
            col[(st - s0) * cb] = v;
          }
        }
      }
    }
  }
}

// The rows in the caller's instruction set, with the loop vectorizer on at -O2 as well (GCC 12 at
// -O2: 7.9 ms for int8 N = 128, K = 14336; at -O3 and with this, 2.2 ms).
LUTKIT_VECTORIZE inline void prepare_rows_baseline(dq_activations& A, const float* x, std::size_t ldx, std::size_t b0,
                                                   std::size_t b1) {
  prepare_rows(A, x, ldx, b0, b1);
}

#if defined(LUTKIT_HAVE_AVX512_DQ)
namespace avx512 {
// the same rows, compiled for AVX-512 (3x faster than the SSE2 baseline at N = 128, K = 14336)
LUTKIT_AVX512_DQ LUTKIT_VECTORIZE inline void prepare_rows(dq_activations& A, const float* x, std::size_t ldx,
                                                          std::size_t b0, std::size_t b1) {
  detail::prepare_rows(A, x, ldx, b0, b1);
}
}  // namespace avx512
#endif

// Allocates the panel and the per-row arrays, then fills them over the pool; simd: the
// AVX-512 instance of prepare_rows (the kernel set's simd_level1 backends).
inline void prepare_activations(dq_activations& A, const float* x, std::size_t ldx, thread_pool* pool,
                                bool simd = false) {
  const dq_geometry& g = A.geo;
  const std::size_t NP = g.NP, F = g.flushes();
  // 32-bit elements (4 int8 | 2 bf16 | 1 fp32), psteps per column; prepare_rows writes every
  // element of the real columns, the padding columns [N, NP) are cleared here (a memset of the
  // whole panel was a serial 4 MB pass at N = 128, K = 14336)
  A.data = reusable_bytes(scratch_slot::panel, g.psteps * NP * 4);
  uint32_t* panel = reinterpret_cast<uint32_t*>(A.data.get());
  for (std::size_t s0 = 0; s0 < g.psteps; s0 += g.kcs)
    for (std::size_t n = g.N; n < NP; ++n) {
      uint32_t* col = panel + g.panel_index(n, s0);
      for (std::size_t st = s0; st < std::min(g.psteps, s0 + g.kcs); ++st) col[(st - s0) * g.cb] = 0;
    }
  if (A.act == act_type::int8 || A.act == act_type::int8_group) {
    A.row_scale.assign(NP, 0.f);
    A.sumx.assign(F * NP, 0.f);
    A.nan_mul.assign(NP, 1.f);
    if (A.act == act_type::int8_group) A.sa.assign(F * NP, 0.f);
  }
  const std::size_t blocks = (g.N + 15) / 16;
  const std::size_t parts = pool ? std::min(pool->size(), blocks) : 1;
  auto rows = [&](std::size_t b0, std::size_t b1) {
#if defined(LUTKIT_HAVE_AVX512_DQ)
    if (simd) return avx512::prepare_rows(A, x, ldx, b0, b1);
#endif
    prepare_rows_baseline(A, x, ldx, b0, b1);
  };
  if (parts <= 1) {
    rows(0, blocks);
  } else {
    pool->run(parts, [&](std::size_t i) { rows(blocks * i / parts, blocks * (i + 1) / parts); });
  }
}

// The outputs of one item: y[n * ldy + m] = C[(n - n0) * 64 + m] * (int8: the row's scale, or NaN
// for a row with a non-finite activation; else 1), columns [n0, n1), rows [ma, mb) (C: the
// column-major tile, offset so that m indexes it).
LUTKIT_ALWAYS_INLINE inline void write_tile(const dq_activations& A, const float* C, std::size_t n0, std::size_t n1,
                                            std::size_t ma, std::size_t mb, float* y, std::size_t ldy) {
  const bool int8 = A.act == act_type::int8 || A.act == act_type::int8_group;
  for (std::size_t n = n0; n < n1; ++n) {
    const float mul = int8 ? A.row_scale[n] * A.nan_mul[n] : 1.f;
    float* yn = y + n * ldy;
    const float* c = C + (n - n0) * 64;
    for (std::size_t m = ma; m < mb; ++m) yn[m] = c[m] * mul;
  }
}
#if defined(LUTKIT_HAVE_AVX512_DQ)
namespace avx512 {
// the same, compiled for AVX-512 (the baseline's 16 SSE multiplies per column were 0.7% of the
// W4 bf16 GEMM at N = 128)
LUTKIT_AVX512_DQ LUTKIT_VECTORIZE inline void write_tile(const dq_activations& A, const float* C, std::size_t n0,
                                                        std::size_t n1, std::size_t ma, std::size_t mb, float* y,
                                                        std::size_t ldy) {
  detail::write_tile(A, C, n0, n1, ma, mb, y, ldy);
}
}  // namespace avx512
#endif

// Per-thread buffers.
struct dq_scratch {
  reusable_bytes codes;  // [64][ldc] level-1 output
  reusable_bytes values; // [64][ldv] level-2 output (fp32 or bf16)
  reusable_bytes steps;  // bf16 / fp32: the values in the step-major layout of the micro-kernel
  reusable_bytes acc;    // [NB][64] fp32 accumulators of the tile (column-major)
  std::vector<float> sw, swz;  // [flush group in chunk][64]
  std::size_t ldc = 0, ldv = 0;
  void init(const dq_geometry& g) {
    ldc = g.kc + 64;
    ldv = g.kc + 32;
    codes = reusable_bytes(scratch_slot::codes, 64 * ldc);
    std::memset(codes.get(), 0, 64 * ldc);
    values = reusable_bytes(scratch_slot::values, 64 * ldv * 4);
    steps = reusable_bytes(scratch_slot::steps, 64 * g.kc * 4);
    acc = reusable_bytes(scratch_slot::acc, 64 * g.n_block() * 4);
    sw.assign((g.kc / g.flush_k + 1) * 64, 0.f);
    swz.assign(sw.size(), 0.f);
  }
};

// Row-major fp32 / bf16 values of rows 0..63 (stride ld elements, k1 - k0 per row) -> the
// step-major 32-bit elements of the bf16 / fp32 micro-kernels, in s.steps.
template <class T>
const uint32_t* values_to_steps(const T* v, std::size_t ld, std::size_t len, dq_scratch& s, const dq_kernel_set& ks) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4);
  constexpr std::size_t per = 4 / sizeof(T);
  uint32_t* out = reinterpret_cast<uint32_t*>(s.steps.get());
  ks.rows_to_steps(reinterpret_cast<const uint32_t*>(v), ld / per, len / per, out);
  return out;
}

// The weight source of the dequant-GEMM built from a packed blob: level-1 + level-2 LUT
// dequantization. (Benchmarks plug in other sources — per-element conversion, pre-dequantized
// weights — through the same interface to compare the dequantization methods alone.)
template <class P>
struct lut_weight_source {
  const uint8_t* data;
  const packed_layout* L;
  const dq_kernel_set* ks;

  // int8: levels of rows 0..63 for k in [k0, k1) in the step-major layout of mk_int8
  // (k4 step s, row r at [s * 256 + 4 * r])
  const uint8_t* levels(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
#if defined(LUTKIT_HAVE_AVX512_DQ)
    if constexpr (!P::spec.ternary && levels_are_codes<P>()) {
      if (ks->simd_level1) {
        avx512::unpack_levels_steps<P>(data, *L, t, k0, k1, s.codes.get());
        return s.codes.get();
      }
    }
#endif
    codes_rows(t, k0, k1, s);
    if constexpr (!levels_are_codes<P>()) {
      using FT = format_traits<typename P::format>;
      uint8_t map[max_codes];
      for (int c = 0; c < code_count<P>(); ++c) map[c] = uint8_t(FT::level(c));
      for (int r = 0; r < 64; ++r)
        for (std::size_t k = 0; k < k1 - k0; ++k) s.codes[r * s.ldc + k] = map[s.codes[r * s.ldc + k]];
    }
    generic::levels_to_step_major(s.codes.get(), s.ldc, k1 - k0, s.values.get());
    return s.values.get();
  }
  // Prefetch interface of a weight source (optional; the GEMM uses it when present): chunk
  // [k0, k1) of tile t reads plan.lines cache lines of packed bytes (its blocks and the scales
  // and zeros of the groups starting in it, one contiguous range here:
  // packed_layout::k_range_bytes); prefetch_lines<To>(plan, l0, l1) requests lines [l0, l1) of them.
  // The plan is made once per chunk, so the calls that spread the requests do no shape arithmetic.
  struct prefetch_plan_t {
    const uint8_t* p;
    std::size_t lines;
  };
  prefetch_plan_t prefetch_plan(std::size_t t, std::size_t k0, std::size_t k1) const {
    const auto [lo, hi] = L->k_range_bytes(t, k0, k1);
    return {data + lo, (hi - lo + 63) / 64};
  }
  template <prefetch_to To>
  void prefetch_lines(const prefetch_plan_t& plan, std::size_t l0, std::size_t l1) const {
    for (std::size_t l = l0; l < l1; ++l) prefetch_line<To>(plan.p + 64 * l);
  }
  // level 1 into the row-major code buffer (SIMD where the backend has it)
  void codes_rows(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
#if defined(LUTKIT_HAVE_AVX512_DQ)
    if constexpr (!P::spec.ternary) {
      if (ks->simd_level1) {
        avx512::unpack_codes_rows<P>(data, *L, t, k0, k1, s.codes.get(), s.ldc);
        return;
      }
    }
#endif
    unpack_codes<P>(data, *L, t, k0, k1, s.codes.get(), s.ldc);
  }
  // scale and zero (min, for min-form formats) of the 64 rows of tile t in scale group g (fp16
  // or bf16 in the blob; the format's fixed zero for symmetric formats)
  void scale_zero_rows(std::size_t t, std::size_t g, float* sc, float* zz) const {
    uint16_t h[64];
    auto decode = [&](float* out) {
      if constexpr (P::spec.bf16_params) {
        for (int r = 0; r < 64; ++r) out[r] = decode_param(P::spec, h[r]);
      } else {
        ks->halves(h, 64, out);
      }
    };
    std::memcpy(h, data + L->scale_offset(t, g), 128);
    decode(sc);
    if constexpr (P::spec.asymmetric) {
      std::memcpy(h, data + L->zero_offset(t, g), 128);
      decode(zz);
    } else {
      for (int r = 0; r < 64; ++r) zz[r] = P::spec.sym_zero;
    }
  }
  // int8: the scale of each row for the flush group starting at k, and the coefficient of the
  // group's activation sum it subtracts: scale * zero (w = s * (level - z)), or -min for
  // min-form formats (w = s * level + m)
  void group_scales(std::size_t t, std::size_t k, float* sw, float* swz) const {
    scale_zero_rows(t, L->group_of_k(k), sw, swz);
    for (int r = 0; r < 64; ++r) swz[r] = P::spec.min_form ? -swz[r] : swz[r] * sw[r];
  }
  // the same in the step-major layout of the micro-kernels
  template <class T>
  const uint32_t* value_steps(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
#if defined(LUTKIT_HAVE_AVX512_DQ)
    // bf16 with SIMD level 1: level 2 reads level 1's step-major codes and writes the kernel's
    // layout directly (avx512::level2_steps_bf16)
    constexpr int E = code_count<P>();
    if constexpr (std::is_same_v<T, uint16_t> && !P::spec.ternary && (E == 2 || E == 4 || E == 8 || E == 16)) {
      if (ks->simd_level1) return bf16_steps_direct<E>(t, k0, k1, s);
    }
#endif
    std::size_t ld = 0;
    const T* v = values<T>(t, k0, k1, s, ld);
    return values_to_steps(v, ld, k1 - k0, s, *ks);
  }
#if defined(LUTKIT_HAVE_AVX512_DQ)
  template <int E>
  const uint32_t* bf16_steps_direct(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
    avx512::unpack_levels_steps<P>(data, *L, t, k0, k1, s.codes.get());
    uint32_t* out = reinterpret_cast<uint32_t*>(s.steps.get());
    const std::size_t G = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) : L->K_pad;
    using FT = format_traits<typename P::format>;
    alignas(64) uint16_t tab[64 * E];
    alignas(64) float sc[64], zz[64], lv[16] = {};
    for (int c = 0; c < E; ++c) lv[c] = FT::level(c);
    for (std::size_t g0 = k0; g0 < k1;) {
      const std::size_t g1 = std::min(k1, (g0 / G + 1) * G);
      scale_zero_rows(t, L->group_of_k(g0), sc, zz);
      avx512::group_tables_bf16<E>(lv, sc, zz, P::spec.min_form, tab);
      avx512::level2_steps_bf16<E>(s.codes.get() + (g0 - k0) * 64, (g1 - g0) / 4, tab, out + (g0 - k0) / 2 * 64);
      g0 = g1;
    }
    return out;
  }
#endif
  // fp32 / bf16 values of rows 0..63 for k in [k0, k1)
  template <class T>
  const T* values(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s, std::size_t& ld) const {
    codes_rows(t, k0, k1, s);
    T* out = reinterpret_cast<T*>(s.values.get());
    const std::size_t G = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) : L->K_pad;
    using FT = format_traits<typename P::format>;
    alignas(64) T tbl[max_codes];
    alignas(64) float sc[64], zz[64], lv[16] = {};
    for (int c = 0; c < code_count<P>() && c < 16; ++c) lv[c] = FT::level(c);
    for (std::size_t g0 = k0; g0 < k1;) {
      const std::size_t g1 = std::min(k1, (g0 / G + 1) * G);
      scale_zero_rows(t, L->group_of_k(g0), sc, zz);
      const uint8_t* c = s.codes.get() + (g0 - k0);
      T* o = out + (g0 - k0);
      if constexpr (code_count<P>() <= 16) {
        if constexpr (std::is_same_v<T, float>)
          ks->group16_f32(c, s.ldc, lv, sc, zz, P::spec.min_form, g1 - g0, o, s.ldv);
        else
          ks->group16_bf16(c, s.ldc, lv, sc, zz, P::spec.min_form, g1 - g0, o, s.ldv);
      } else {
        for (int r = 0; r < 64; ++r) {
          level2_table<P, T>(sc[r], zz[r], tbl);
          lookup_values(c + r * s.ldc, g1 - g0, tbl, o + r * s.ldv);
        }
      }
      g0 = g1;
    }
    ld = s.ldv;
    return out;
  }
};

// Does the weight source have the prefetch interface (prefetch_plan, prefetch_lines)?
template <class Src>
concept prefetching_source = requires(const Src& src, std::size_t n) {
  src.template prefetch_lines<prefetch_to::l1>(src.prefetch_plan(n, n, n), n, n);
  src.template prefetch_lines<prefetch_to::l2>(src.prefetch_plan(n, n, n), n, n);
  { src.prefetch_plan(n, n, n).lines } -> std::convertible_to<std::size_t>;
};
// All lines of chunk c into L2, if the source can prefetch and c is a chunk (c.t != no_tile).
template <class Src>
void prefetch_chunk(const Src& src, const dq_geometry::chunk& c) {
  if constexpr (prefetching_source<Src>) {
    if (c.t != dq_geometry::no_tile) {
      const auto plan = src.prefetch_plan(c.t, c.k0, c.k1);
      src.template prefetch_lines<prefetch_to::l2>(plan, 0, plan.lines);
    }
  }
}
// A chunk's lines requested a part per call (the GEMM's micro-kernel calls of the chunk before)
template <class Src>
struct spread_prefetch {
  const Src& src;
  decltype(std::declval<const Src&>().prefetch_plan(0, 0, 0)) plan{};
  std::size_t next = 0, per_call = 0;
  spread_prefetch(const Src& s, const dq_geometry::chunk& c, std::size_t calls) : src(s) {
    if (c.t != dq_geometry::no_tile) {
      plan = src.prefetch_plan(c.t, c.k0, c.k1);
      per_call = (plan.lines + calls - 1) / std::max<std::size_t>(calls, 1);
    }
  }
  void step() {
    const std::size_t l1 = std::min(plan.lines, next + per_call);
    if (next < l1) src.template prefetch_lines<prefetch_to::l1>(plan, next, l1);
    next = l1;
  }
};

// The work of one GEMM, (column pass, 64-row tile) items handed out one at a time from a shared
// counter, pass by pass. Threads of unequal speed (big and little cores, a vCPU its host takes
// away for a while) then finish together, which a fixed split of the tiles cannot do; and the
// threads of one pass read the same activation block.
class dq_work_queue {
 public:
  struct item {
    std::size_t t, pass;
  };
  dq_work_queue(std::size_t t0, std::size_t t1, std::size_t passes)
      : t0_(t0), tiles_(t1 - t0), count_((t1 - t0) * passes) {}
  std::optional<item> claim() {
    const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= count_) return std::nullopt;
    return item{t0_ + i % tiles_, i / tiles_};
  }
  std::size_t size() const { return count_; }

 private:
  std::size_t t0_, tiles_, count_;
  std::atomic<std::size_t> next_{0};
};

inline std::size_t dq_passes(const dq_geometry& g) { return (g.NP + g.n_block() - 1) / g.n_block(); }

// One thread's walk over a queue: the current item, and the next one, claimed when the current
// item's last chunk starts so that its first chunk can be prefetched (claimed any earlier, it
// could sit waiting while another thread runs out of work).
class dq_worker {
 public:
  explicit dq_worker(dq_work_queue& q) : q_(q), cur_(q.claim()) {}
  const std::optional<dq_work_queue::item>& current() const { return cur_; }
  // the chunk after chunk [.., k1) of the current item (dq_geometry::next_chunk, the next tile
  // being the next item's; no_tile after the last item)
  dq_geometry::chunk next_chunk(const dq_geometry& g, std::size_t k1) {
    if (k1 >= g.K_pad && !claimed_) {
      next_ = q_.claim();
      claimed_ = true;
    }
    return g.next_chunk(cur_->t, k1, next_ ? next_->t : dq_geometry::no_tile);
  }
  // on to the next item; false when the queue is dry
  bool advance() {
    if (!claimed_) next_ = q_.claim();
    cur_ = next_;
    next_.reset();
    claimed_ = false;
    return cur_.has_value();
  }

 private:
  dq_work_queue& q_;
  std::optional<dq_work_queue::item> cur_, next_;
  bool claimed_ = false;
};

// Items from q until it runs dry, on the calling thread; rows outside [r0, r1) are not written.
template <class Src>
void dq_gemm_tiles(const Src& src, const dq_activations& A, const dq_kernel_set& ks, dq_work_queue& q,
                   std::size_t M, std::size_t r0, std::size_t r1, float* y, std::size_t ldy) {
  const dq_geometry& g = A.geo;
  dq_worker w(q);
  if (!w.current()) return;
  dq_scratch s;
  s.init(g);
  const std::size_t NP = g.NP;
  float* C = reinterpret_cast<float*>(s.acc.get());
  // columns in passes of at most NB (the 64 x NB accumulator tile and the activation chunk stay
  // in L2 for N in the thousands; the weight tile is dequantized once per pass)
  const std::size_t NB = g.n_block();
  do {
    const std::size_t t = w.current()->t, nb0 = w.current()->pass * NB;
    const std::size_t nbw = std::min(NB, NP - nb0);
    std::memset(C, 0, 64 * NB * 4);
    for (std::size_t k0 = 0; k0 < g.K_pad; k0 += g.kc) {
      const std::size_t k1 = std::min(g.K_pad, k0 + g.kc);
      // The packed bytes of the next chunk (of this tile, else of the next one) into the caches, a few
      // lines before each micro-kernel call below: level 1 reads each chunk once, and the
      // hardware prefetchers restart at every 4 KiB page of it. (A whole chunk's lines requested
      // at once filled the miss queue and stalled.)
      const dq_geometry::chunk nc = w.next_chunk(g, k1);
      const std::size_t calls = (std::min(nbw, g.N - nb0) + g.cb - 1) / g.cb;
      auto pf = [&] {
        if constexpr (prefetching_source<Src>)
          return spread_prefetch<Src>(src, nc, calls);
        else
          return 0;
      }();
      auto prefetch_next = [&] {
        if constexpr (prefetching_source<Src>) pf.step();
      };
      if (A.act == act_type::int8 || A.act == act_type::int8_group) {
        const uint8_t* W = src.levels(t, k0, k1, s);
        const std::size_t nf = (k1 - k0 + g.flush_k - 1) / g.flush_k;
        for (std::size_t f = 0; f < nf; ++f) src.group_scales(t, k0 + f * g.flush_k, &s.sw[f * 64], &s.swz[f * 64]);
        const std::size_t full = (k1 - k0) / g.flush_k, tail = (k1 - k0) % g.flush_k;
        const std::size_t f0 = k0 / g.flush_k, fsteps = g.flush_k / 4;
        const int8_t* Ad = reinterpret_cast<const int8_t*>(A.data.get());
        // only the real columns: the padding up to NP holds zeros
        const std::size_t ncols = std::min(nbw, g.N - nb0);
        for (std::size_t n0 = 0; n0 < ncols; n0 += mk_int8_cols) {
          const std::size_t nc = std::min<std::size_t>(mk_int8_cols, ncols - n0);
          prefetch_next();
          mk_int8_args a{W, Ad + 4 * g.panel_index(nb0 + n0, k0 / 4), 4 * g.cb, fsteps, full, C + n0 * 64,
                         s.sw.data(), s.swz.data(),
                         A.sumx.data() + f0 * NP + nb0 + n0,
                         A.sa.empty() ? nullptr : A.sa.data() + f0 * NP + nb0 + n0, NP};
          if (full) ks.int8[nc - 1](a);
          if (tail) {
            a.W += full * fsteps * 256;
            a.A += full * fsteps * a.lda;
            a.steps = tail / 4;
            a.groups = 1;
            a.sw += full * 64;
            a.swz += full * 64;
            a.sumx += full * NP;
            if (a.sa) a.sa += full * NP;
            ks.int8[nc - 1](a);
          }
        }
      } else {
        // bf16 / fp32: values in the step-major layout (32-bit elements: bf16 pairs or fp32)
        const bool bf = A.act == act_type::bf16;
        const uint32_t* Ws = bf ? src.template value_steps<uint16_t>(t, k0, k1, s)
                                : src.template value_steps<float>(t, k0, k1, s);
        const std::size_t steps = bf ? (k1 - k0) / 2 : k1 - k0;
        const uint32_t* Ad = reinterpret_cast<const uint32_t*>(A.data.get());
        const std::size_t ncols = std::min(nbw, g.N - nb0);
        for (std::size_t n0 = 0; n0 < ncols; n0 += mk_val_cols) {
          const std::size_t nc = std::min<std::size_t>(mk_val_cols, ncols - n0);
          prefetch_next();
          (bf ? ks.bf16 : ks.f32)[nc - 1](
              mk_val_args{Ws, Ad + g.panel_index(nb0 + n0, bf ? k0 / 2 : k0), g.cb, steps, C + n0 * 64});
        }
      }
    }
    const std::size_t ma = std::max(r0, t * 64), mb = std::min({r1, M, t * 64 + 64});
    const std::size_t n1 = std::min(g.N, nb0 + nbw);
#if defined(LUTKIT_HAVE_AVX512_DQ)
    if (ks.simd_level1)
      avx512::write_tile(A, C - t * 64, nb0, n1, ma, mb, y, ldy);
    else
#endif
      write_tile(A, C - t * 64, nb0, n1, ma, mb, y, ldy);
  } while (w.advance());
}

// The tiles covering rows [r0, r1), on the pool's threads through one work queue.
template <class Src>
void run_dq_gemm(const Src& src, const dq_activations& A, const dq_kernel_set& ks, std::size_t M, std::size_t r0,
                 std::size_t r1, float* y, std::size_t ldy, thread_pool* pool) {
  if (r0 == r1) return;
  dq_work_queue q(r0 / 64, (r1 + 63) / 64, dq_passes(A.geo));
  const std::size_t parts = pool ? std::min(q.size(), pool->size()) : 1;
  if (parts <= 1) {
    dq_gemm_tiles(src, A, ks, q, M, r0, r1, y, ldy);
    return;
  }
  pool->run(parts, [&](std::size_t) { dq_gemm_tiles(src, A, ks, q, M, r0, r1, y, ldy); });
}

template <class P>
void check_dq_args(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, std::size_t ldx,
                   const float* y, std::size_t ldy, std::size_t r0, std::size_t r1) {
  w.validate();
  require(x != nullptr && y != nullptr, "dequant_gemm: null activation or output pointer");
  require(N > 0, "dequant_gemm: N must be positive");
  require(K == w.K(), "dequant_gemm: activations have K = ", K, " but the weights have K = ", w.K());
  require(ldx >= K, "dequant_gemm: activation stride ldx (", ldx, ") is smaller than K (", K, ")");
  require(ldy >= w.M(), "dequant_gemm: output stride ldy (", ldy, ") is smaller than M (", w.M(), ")");
  require(r0 <= r1 && r1 <= w.M(), "dequant_gemm: row range [", r0, ", ", r1, ") is outside [0, M = ", w.M(), ")");
}

}  // namespace detail

namespace detail {
// checks, activation packing and the tile split shared by dequant_gemm and dequant_gemm_rows
template <class P>
void dequant_gemm_impl(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                       std::size_t r0, std::size_t r1, act_type act, std::size_t ldx, std::size_t ldy,
                       thread_pool* pool, dq_backend backend) {
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  check_dq_args(w, x, N, K, ldx, y, ldy, r0, r1);
  if (act == act_type::int8 || act == act_type::int8_group)
    require(format_traits<typename P::format>::integer_levels,
            "dequant_gemm: the int8 paradigm needs integer levels; policy ", P::name(),
            " has a float codebook (use act_type::bf16 or fp32)");
  const auto& ks = dq_kernels_for(backend);
  dq_activations A;
  A.act = act;
  A.geo = make_dq_geometry<P>(w.layout(), N, act);
  prepare_activations(A, x, ldx, pool, ks.simd_level1);
  const lut_weight_source<P> src{w.data(), &w.layout(), &ks};
  static_assert(prefetching_source<lut_weight_source<P>>, "the LUT weight source prefetches its next chunk");
  run_dq_gemm(src, A, ks, w.M(), r0, r1, y, ldy, pool);
}
}  // namespace detail

// Prefill GEMM: y[n * ldy + m] = sum_k W[m][k] x[n][k] for x of N rows of K activations (row
// stride ldx), with the weights dequantized on the fly from the LUT-GEMV blob.
template <class P>
void dequant_gemm(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                  act_type act = act_type::int8, std::size_t ldx = 0, std::size_t ldy = 0,
                  thread_pool* pool = nullptr, dq_backend backend = dq_backend::best) {
  detail::dequant_gemm_impl<P>(w, x, N, K, y, 0, w.M(), act, ldx, ldy, pool, backend);
}

// Rows [r0, r1) only, on the calling thread (an engine's own threads split M with this).
template <class P>
void dequant_gemm_rows(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                       std::size_t r0, std::size_t r1, act_type act = act_type::int8, std::size_t ldx = 0,
                       std::size_t ldy = 0, dq_backend backend = dq_backend::best) {
  detail::dequant_gemm_impl<P>(w, x, N, K, y, r0, r1, act, ldx, ldy, nullptr, backend);
}

// The whole matrix dequantized through the two LUT levels: out[m * ldo + k], k < K, as fp32 or
// bf16 (uint16_t bit patterns; `out` then points to uint16_t storage).
template <class P>
void dequantize(const packed_weights<P>& w, void* out, dq_type type, std::size_t ldo = 0,
                thread_pool* pool = nullptr, dq_backend backend = dq_backend::best) {
  w.validate();
  detail::require(out != nullptr, "dequantize: null output");
  if (ldo == 0) ldo = w.K();
  detail::require(ldo >= w.K(), "dequantize: ldo is smaller than K");
  const auto& ks = detail::dq_kernels_for(backend);
  const packed_layout& L = w.layout();
  const detail::dq_geometry g =
      detail::make_dq_geometry<P>(L, 1, type == dq_type::f32 ? act_type::fp32 : act_type::bf16);
  detail::lut_weight_source<P> src{w.data(), &L, &ks};
  detail::dq_work_queue q(0, L.tiles, 1);
  auto tiles = [&] {
    detail::dq_worker wk(q);
    if (!wk.current()) return;
    detail::dq_scratch s;
    s.init(g);
    do {
      const std::size_t t = wk.current()->t;
      for (std::size_t k0 = 0; k0 < L.K_pad; k0 += g.kc) {
        const std::size_t k1 = std::min(L.K_pad, k0 + g.kc), kn = std::min(k1, L.K) - std::min(k0, L.K);
        const detail::dq_geometry::chunk nc = wk.next_chunk(g, k1);
        if (kn == 0) continue;
        prefetch_chunk(src, nc);
        std::size_t ld = 0;
        const std::size_t rows = std::min<std::size_t>(64, L.M - t * 64);
        if (type == dq_type::f32) {
          const float* v = src.template values<float>(t, k0, k1, s, ld);
          for (std::size_t r = 0; r < rows; ++r)
            std::memcpy(static_cast<float*>(out) + (t * 64 + r) * ldo + k0, v + r * ld, kn * 4);
        } else {
          const uint16_t* v = src.template values<uint16_t>(t, k0, k1, s, ld);
          for (std::size_t r = 0; r < rows; ++r)
            std::memcpy(static_cast<uint16_t*>(out) + (t * 64 + r) * ldo + k0, v + r * ld, kn * 2);
        }
      }
    } while (wk.advance());
  };
  const std::size_t parts = pool ? std::min(pool->size(), q.size()) : 1;
  if (parts <= 1) {
    tiles();
  } else {
    pool->run(parts, [&](std::size_t) { tiles(); });
  }
}

}  // namespace lutkit
