// lutkit — the dequant-GEMM's activations: the int8 quantizer, the activation panel of one call
// in the micro-kernels' layout (gemm/geometry.hpp), and the tile write. prepare_rows and
// write_tile are written once here; each kernel set carries an instance compiled for its target.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/compiler.hpp"
#include "../core/memory.hpp"
#include "../core/thread_pool.hpp"
#include "geometry.hpp"
#include "microkernel.hpp"

namespace lutkit::detail {

// Per-row (group == 0) or per-group symmetric int8 quantization of one activation row of length
// K: q = round(x / s), s = absmax / 127. Returns false if the row holds a non-finite value (the
// kernel then makes every output of that row NaN). THE activation quantizer: kernels and the
// tests' references both call it. Always inlined: each kernel set's prepare_rows compiles it for
// its instruction set (the baseline, AVX-512), and all must give the same bytes --
// hence x / s (a division cannot be contracted into an FMA, x * (1 / s) + c could be).
LUTKIT_ALWAYS_INLINE inline bool quantize_act_int8(const float* __restrict x, std::size_t K, std::size_t group, int8_t* __restrict q,
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
    // (the rounded value is an integer-valued float, so clamping its int32 conversion gives the
    // bytes clamping the float gave: integer min / max vectorize, the float ones with their NaN
    // rule kept this loop scalar: the hottest lines of a Q6_K prefill's activation packing)
    auto round_clamp = [d](float xv) {
      const int32_t v = int32_t((xv / d + 12582912.f) - 12582912.f);
      return int8_t(std::clamp(v, -127, 127));
    };
    if (g1 - g0 == 16) {  // (the K-quants' 16-k groups: a fixed trip count vectorizes whole)
      for (std::size_t j = 0; j < 16; ++j) q[g0 + j] = round_clamp(x[g0 + j]);
    } else {
      for (std::size_t k = g0; k < g1; ++k) q[k] = round_clamp(x[k]);
    }
    scales[gi] = s;
  }
  return true;
}

// An array of one call's activations in the calling thread's reusable buffer of its slot
// (reusable_bytes): no fresh pages per call. At N = 128, K = 14336 the sums of every 16-k flush
// group (sumx, zsum) are 0.9 MB a call; as fresh zero-filled pages they cost a Q6_K int8 GEMM
// about 14 % of its time (docs/design_measurements.md, "Reusable working buffers").
template <class T>
class dq_array {
 public:
  // n elements, their values whatever the buffer held (the caller writes every one it reads)
  void reset(dq_slot slot, std::size_t n) {
    buf_ = reusable_bytes<dq_slot>(slot, std::max<std::size_t>(n, 1) * sizeof(T));
    n_ = n;
  }
  void assign(dq_slot slot, std::size_t n, T v) {
    reset(slot, n);
    std::fill_n(data(), n, v);
  }
  T* data() { return reinterpret_cast<T*>(buf_.get()); }
  const T* data() const { return reinterpret_cast<const T*>(buf_.get()); }
  bool empty() const { return n_ == 0; }
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }

 private:
  reusable_bytes<dq_slot> buf_;
  std::size_t n_ = 0;
};

// Activations of one call in the micro-kernels' panel layout (column blocks, see dq_geometry).
struct dq_activations {
  act_type act = act_type::fp32;
  dq_geometry geo;
  reusable_bytes<dq_slot> data;       // the panel (dq_geometry::panel_index), NP * K_pad int8 | bf16 | fp32
  dq_array<float> row_scale;  // int8: [NP] per-row scale (1 for int8_group)
  dq_array<float> sa;         // int8_group: [flushes][ldsum] per-group scale (dq_geometry::ldsum)
  dq_array<float> sumx;       // int8: [flushes][ldsum] sum of the group's int8 values (x scale for int8_group)
  dq_array<float> nan_mul;    // [NP]: 1, or NaN for a row with a non-finite activation (int8)
  // int8 with a format whose zero is one integer for every row and group (int8_zero_folds):
  // zsum[f * ldsum + n] = -zero * (the sum of the group's int8 values), the micro-kernels' starting
  // sums (mk_int8_args::zsum)
  bool fold_zero = false;
  int32_t zero = 0;
  dq_array<int32_t> zsum;
  // int8 per row with the super-group fold (gemm/dequant.hpp, int8_super_fold_offset): super_k
  // > 0, and super_zsum[j * ldsum + n] = -super_offset * (the sum of super-group j's int8
  // values), the starting sums of the folded levels' dot (super_offset: the fold's offset times
  // its weight in the planes' sum, int8_super_fold_offset_weight)
  std::size_t super_k = 0;
  int32_t super_offset = 0;
  dq_array<int32_t> super_zsum;
  // with the fold, for a min-form format whose minimums take the kernel set's integer kernel
  // (int8_super_int_mins): min_pairs, and sum_pairs[p * ldsum + n] = the int16 sums of flush
  // groups 2p (low half) and 2p + 1 (high half) of column n (mk_mins_args::S)
  bool min_pairs = false;
  dq_array<uint32_t> sum_pairs;
  // int8 or bf16 with a kernel set whose kernels over row-major activations take this call
  // (dq_kernel_set::int8_rows / bf16_rows, uses_rows below): the values row-major instead of the
  // panel, column n's K_pad values from row_i8(n) / row_bf16(n), NP columns (those past N zero);
  // empty otherwise
  aligned_bytes rows;
  const int8_t* row_i8(std::size_t n) const { return reinterpret_cast<const int8_t*>(rows.get()) + n * geo.K_pad; }
  const uint16_t* row_bf16(std::size_t n) const {
    return reinterpret_cast<const uint16_t*>(rows.get()) + n * geo.K_pad;
  }
};

// whether kernel set ks takes the activations of geometry g row-major (dq_activations::rows);
// super_k: the super-group fold's groups (dq_activations::super_k, 0 without the fold), which the
// int8 kernel then sums instead of the flush groups
inline bool uses_rows(const dq_kernel_set& ks, act_type act, const dq_geometry& g, std::size_t super_k = 0) {
  if (act == act_type::int8 || act == act_type::int8_group)
    return ks.int8_rows && g.N >= ks.int8_rows_min && std::max(g.flush_k, super_k) >= ks.int8_rows_min_k;
  return act == act_type::bf16 && ks.bf16_rows && g.N >= ks.bf16_rows_min;
}

// Row blocks [b0, b1) of 16 activation rows: each row is converted / quantized into a
// contiguous buffer, then the block is interleaved into the panel. Everything here is integer
// work, copies or quantize_act_int8: the same bytes whatever instruction set the compiler
// vectorizes it for (tests/test_dequant.cpp checks the instances of every kernel set against each other).
LUTKIT_ALWAYS_INLINE inline void prepare_rows(dq_activations& A, const float* x, std::size_t ldx, std::size_t b0,
                                              std::size_t b1) {
  const dq_geometry& g = A.geo;
  const std::size_t LS = g.ldsum(), F = g.flushes();
  constexpr std::size_t BN = 16;
  // only the buffer of this call's paradigm, of the rows of a block (the first block is the
  // largest: a single row at N = 1, where 16 rows' zeros were most of a small call's set-up)
  const std::size_t BR = std::min(BN, g.N - std::min(g.N, b0 * BN));
  // (the thread's reusable row buffer: each row's values are written up to K, its padding up to
  // K_pad cleared below)
  const std::size_t esize = A.act == act_type::fp32 ? 4 : A.act == act_type::bf16 ? 2 : 1;
  reusable_bytes<dq_slot> rb(dq_slot::row_buf, BR * g.K_pad * esize + g.K_pad / 16 * 4 + 64);
  float* const xb = reinterpret_cast<float*>(rb.get());
  uint16_t* const hb = reinterpret_cast<uint16_t*>(rb.get());
  int8_t* const qb = reinterpret_cast<int8_t*>(rb.get());
  int32_t* const s16 = reinterpret_cast<int32_t*>(rb.get() + round_up(BR * g.K_pad * esize, 64));  // int8
  std::vector<float> sc(F + 1);
  for (std::size_t blk = b0; blk < b1; ++blk) {
    const std::size_t n0 = blk * BN, nb = std::min(BN, g.N - n0);
    for (std::size_t i = 0; i < nb; ++i) {
      const std::size_t n = n0 + i;
      const float* xn = x + n * ldx;
      std::memset(rb.get() + (i * g.K_pad + g.K) * esize, 0, (g.K_pad - g.K) * esize);
      if (A.act == act_type::fp32) {
        std::memcpy(xb + i * g.K_pad, xn, g.K * 4);
      } else if (A.act == act_type::bf16) {
        for (std::size_t k = 0; k < g.K; ++k) hb[i * g.K_pad + k] = f32_to_bf16(xn[k]);
      } else {
        const bool per_group = A.act == act_type::int8_group;
        int8_t* q = qb + i * g.K_pad;
        const bool finite = quantize_act_int8(xn, g.K, per_group ? g.flush_k : 0, q, sc.data());
        A.row_scale[n] = per_group ? 1.f : sc[0];
        if (!finite) A.nan_mul[n] = NAN;
        // the sums of the groups: of 16-value blocks first, each a loop of 16 the compiler
        // vectorizes (a scalar loop over each group measured a third of this function), then of
        // the blocks of each group (the row's padding up to K_pad holds zeros; a last flush group
        // may end past K_pad)
        const bool by16 = g.flush_k % 16 == 0 && A.super_k % 16 == 0 && g.K_pad % 16 == 0;
        if (by16)
          for (std::size_t b = 0; b < g.K_pad / 16; ++b) {
            int32_t sum = 0;
            for (std::size_t j = 0; j < 16; ++j) sum += q[16 * b + j];
            s16[b] = sum;
          }
        const auto group_sum = [&](std::size_t k0, std::size_t len) {
          int32_t sum = 0;
          if (by16)
            for (std::size_t b = k0 / 16; b < std::min(g.K_pad, k0 + len) / 16; ++b) sum += s16[b];
          else
            for (std::size_t k = k0; k < std::min(g.K, k0 + len); ++k) sum += q[k];
          return sum;
        };
        int32_t prev = 0;
        for (std::size_t f = 0; f < F; ++f) {
          const int32_t sum = group_sum(f * g.flush_k, g.flush_k);
          if (A.min_pairs && f % 2 == 1)
            A.sum_pairs[f / 2 * LS + n] = uint32_t(uint16_t(int16_t(prev))) | uint32_t(uint16_t(int16_t(sum))) << 16;
          prev = sum;
          A.sumx[f * LS + n] = per_group ? float(sum) * sc[f] : float(sum);
          if (per_group) A.sa[f * LS + n] = sc[f];
          if (A.fold_zero) A.zsum[f * LS + n] = -A.zero * sum;
        }
        for (std::size_t j = 0; A.super_k && j < g.K_pad / A.super_k; ++j)
          A.super_zsum[j * LS + n] = -A.super_offset * group_sum(j * A.super_k, A.super_k);
      }
    }
    if (A.rows) {  // the row-major values instead of the panel
      const bool bf = A.act == act_type::bf16;
      const std::size_t bytes = g.K_pad * (bf ? 2 : 1);
      for (std::size_t i = 0; i < nb; ++i)
        std::memcpy(A.rows.get() + (n0 + i) * bytes,
                    bf ? static_cast<const void*>(hb + i * g.K_pad) : static_cast<const void*>(qb + i * g.K_pad),
                    bytes);
      continue;
    }
    // column n of the panel, chunk by chunk: element (n, s) at panel_index(n, chunk start) + (s - start) * cb
    const std::size_t cb = g.cb;
    // (every step up to psteps: the zeros of the padded K too; prepare_activations clears only
    // the padding columns)
    if (A.act == act_type::fp32) {
      float* d = reinterpret_cast<float*>(A.data.get());
      for (std::size_t i = 0; i < nb; ++i) {
        const float* src = xb + i * g.K_pad;
        for (std::size_t s0 = 0; s0 < g.psteps; s0 += g.kcs) {
          float* col = d + g.panel_index(n0 + i, s0);
          for (std::size_t k = s0; k < std::min(g.psteps, s0 + g.kcs); ++k) col[(k - s0) * cb] = src[k];
        }
      }
    } else {
      uint32_t* d = reinterpret_cast<uint32_t*>(A.data.get());
      const bool bf = A.act == act_type::bf16;
      for (std::size_t i = 0; i < nb; ++i) {
        const uint8_t* src = bf ? reinterpret_cast<const uint8_t*>(hb + i * g.K_pad)
                                : reinterpret_cast<const uint8_t*>(qb + i * g.K_pad);
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

// The rows in the caller's instruction set, with the loop vectorizer on at -O2 as well
// (docs/design_measurements.md, "Vectorizer at -O2").
LUTKIT_VECTORIZE inline void prepare_rows_baseline(dq_activations& A, const float* x, std::size_t ldx, std::size_t b0,
                                                   std::size_t b1) {
  prepare_rows(A, x, ldx, b0, b1);
}


// Allocates the panel and the per-row arrays, then fills them over the pool with the kernel
// set's instance of prepare_rows.
inline void prepare_activations(dq_activations& A, const float* x, std::size_t ldx, thread_pool* pool,
                                const dq_kernel_set& ks) {
  const dq_geometry& g = A.geo;
  const std::size_t NP = g.NP, F = g.flushes();
  // 32-bit elements (4 int8 | 2 bf16 | 1 fp32), psteps per column; prepare_rows writes every
  // element of the real columns, the padding columns of the last column block, [N, N rounded up
  // to cb), are cleared here. The blocks past it are never read (the drivers call the micro-kernels
  // on the blocks holding real columns only), so they are left as they are: clearing all of
  // [N, NP) costs strided stores every step at N = 1, and a memset of the whole panel a serial
  // pass over it (docs/llama_formats.md, the NF4 decode's panel).
  const bool int8 = A.act == act_type::int8 || A.act == act_type::int8_group;
  if (uses_rows(ks, A.act, g, A.super_k)) {
    const std::size_t bytes = g.K_pad * (A.act == act_type::bf16 ? 2 : 1);
    A.rows = alloc_aligned(NP * bytes);
    std::memset(A.rows.get() + g.N * bytes, 0, (NP - g.N) * bytes);
  } else {
    A.data = reusable_bytes<dq_slot>(dq_slot::panel, g.psteps * NP * 4);
    uint32_t* panel = reinterpret_cast<uint32_t*>(A.data.get());
    for (std::size_t s0 = 0; s0 < g.psteps; s0 += g.kcs)
      for (std::size_t n = g.N; n < g.read_cols(); ++n) {
        uint32_t* col = panel + g.panel_index(n, s0);
        for (std::size_t st = s0; st < std::min(g.psteps, s0 + g.kcs); ++st) col[(st - s0) * g.cb] = 0;
      }
  }
  if (int8) {
    // (prepare_rows writes the real columns [0, N) of every row of the sums; the padding columns
    // up to ldsum, which the micro-kernels read and whose outputs are discarded, are cleared here)
    const std::size_t LS = g.ldsum(), SF = A.super_k ? g.K_pad / A.super_k : 0;
    A.row_scale.assign(dq_slot::row_scale, NP, 0.f);
    A.nan_mul.assign(dq_slot::nan_mul, NP, 1.f);
    A.sumx.reset(dq_slot::sumx, F * LS);
    if (A.act == act_type::int8_group) A.sa.reset(dq_slot::sa, F * LS);
    if (A.fold_zero) A.zsum.reset(dq_slot::zsum, F * LS);
    if (A.super_k) A.super_zsum.reset(dq_slot::super_zsum, SF * LS);
    if (A.min_pairs) A.sum_pairs.reset(dq_slot::sum_pairs, F / 2 * LS);
    for (std::size_t f = 0; f < F && g.N < LS; ++f) {
      std::fill(A.sumx.data() + f * LS + g.N, A.sumx.data() + (f + 1) * LS, 0.f);
      if (!A.sa.empty()) std::fill(A.sa.data() + f * LS + g.N, A.sa.data() + (f + 1) * LS, 0.f);
      if (A.fold_zero) std::fill(A.zsum.data() + f * LS + g.N, A.zsum.data() + (f + 1) * LS, 0);
    }
    for (std::size_t j = 0; j < SF && g.N < LS; ++j)
      std::fill(A.super_zsum.data() + j * LS + g.N, A.super_zsum.data() + (j + 1) * LS, 0);
    for (std::size_t p = 0; A.min_pairs && p < F / 2 && g.N < LS; ++p)
      std::fill(A.sum_pairs.data() + p * LS + g.N, A.sum_pairs.data() + (p + 1) * LS, 0u);
  }
  const std::size_t blocks = (g.N + 15) / 16;
  const std::size_t parts = pool ? std::min(pool->size(), blocks) : 1;
  auto rows = [&](std::size_t b0, std::size_t b1) { ks.prepare_rows(A, x, ldx, b0, b1); };
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

}  // namespace lutkit::detail
