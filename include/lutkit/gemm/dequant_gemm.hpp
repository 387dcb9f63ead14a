// lutkit — prefill: LUT dequant-GEMM on the SAME packed blob the LUT-GEMV reads (T-MAN §4.1–4.2).
//
//   y[n * ldy + m] = sum_k W[m][k] x[n][k],  N from 1 to thousands.
//
// Per thread, for each 64-row tile of W and each K-chunk (kc, a multiple of the scale group):
//   1. level-1 bit-repack lookups turn the bit-serial planes into codes (gemm/dequant.hpp, or
//      the kernel set's SIMD unpacker);
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
//
// Files of the family: geometry.hpp (chunking, panel layout), activations.hpp (the panel),
// weight_source.hpp (dequantization, prefetch), work_queue.hpp (items over threads),
// microkernel.hpp (the interface targets implement), targets.hpp (the registration point).
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../core/error.hpp"
#include "../core/thread_pool.hpp"
#include "../quant/packed_weights.hpp"
#include "activations.hpp"
#include "dequant.hpp"
#include "geometry.hpp"
#include "targets.hpp"
#include "weight_source.hpp"
#include "work_queue.hpp"

namespace lutkit {
namespace detail {

// The int8 arguments of a call (mk_int8_args, mk_int8_rows_args) moved past its `full` flush
// groups of fsteps k4-steps to the last, partial group of `tail` k (the activations' pointer is
// the caller's to move: the layouts differ)
template <class Args>
void to_tail_group(Args& a, std::size_t full, std::size_t fsteps, std::size_t tail, std::size_t ldsum) {
  if (a.W) a.W += full * fsteps * 256;  // (null for the fused kernels, which read the blob)
  a.steps = tail / 4;
  a.groups = 1;
  if (a.sw) a.sw += full * 64;  // (null for the fused kernels, which read the scales themselves)
  if (a.swz) a.swz += full * 64;
  a.sumx += full * ldsum;
  if (a.sa) a.sa += full * ldsum;
  if (a.zsum) a.zsum += full * ldsum;
}

// The int8 calls of a chunk with the super-group fold: Wf, the chunk's folded levels (whole
// super-groups, lut_weight_source::super_levels), s.sw its super-scales [super][64] and, for a
// min-form format, s.swz the groups' minimums [group][64]. One flush per super-group from the
// sums started at -offset * sum(q) (dq_activations::super_zsum); the minimums times the groups'
// activation sums added by the fp32 micro-kernel (steps: the groups), as the per-group epilogue adds them.
template <class Src, class Prefetch>
void dq_super_chunk(const uint8_t* Wf, const dq_activations& A, const dq_kernel_set& ks, const dq_scratch& s,
                    float* C, std::size_t nb0, std::size_t ncols, std::size_t k0, std::size_t k1,
                    Prefetch&& prefetch_next) {
  const dq_geometry& g = A.geo;
  const std::size_t LS = g.ldsum(), SK = A.super_k, f0 = k0 / g.flush_k;
  if (A.rows) {  // the kernel over row-major activations (AMX), super-groups as its flush groups
    using SP = typename Src::policy;
    for (std::size_t n0 = 0; n0 < ncols; n0 += mk_rows_cols) {
      prefetch_next();
      const std::size_t n = nb0 + n0;
      ks.int8_rows(mk_int8_rows_args{Wf, A.row_i8(n) + k0, g.K_pad, std::min(mk_rows_cols, ncols - n0), SK / 4,
                                     (k1 - k0) / SK, C + n0 * 64, s.sw.data(), s.sw.data(), A.sumx.data() + f0 * LS + n,
                                     nullptr, LS, A.super_zsum.data() + k0 / SK * LS + n, int8_super_fold_planes<SP>(),
                                     64 * (k1 - k0), std::countr_zero(unsigned(int8_super_fold_split<SP>()))});
    }
  }
  const int8_t* Ad = reinterpret_cast<const int8_t*>(A.data.get());
  for (std::size_t n0 = 0; !A.rows && n0 < ncols; n0 += mk_int8_cols) {
    const std::size_t nc = std::min<std::size_t>(mk_int8_cols, ncols - n0);
    prefetch_next();
    mk_int8_args a{Wf, Ad + 4 * g.panel_index(nb0 + n0, k0 / 4), 4 * g.cb, SK / 4, (k1 - k0) / SK, C + n0 * 64,
                   s.sw.data(), s.sw.data(), A.sumx.data() + f0 * LS + nb0 + n0, nullptr, LS,
                   A.super_zsum.data() + k0 / SK * LS + nb0 + n0};
    ks.int8[nc - 1](a);
  }
  if constexpr (Src::policy::spec.min_form) {
    if (A.min_pairs) {  // (super_levels made s.mins and s.dmin instead of s.swz: the integer route)
      const std::size_t G = std::size_t(Src::policy::spec.group_k);
      for (std::size_t n0 = 0; n0 < ncols; n0 += mk_int8_cols) {
        const std::size_t nc = std::min<std::size_t>(mk_int8_cols, ncols - n0);
        ks.mins[nc - 1](mk_mins_args{s.mins.data(), s.dmin.data(), A.sum_pairs.data() + f0 / 2 * LS + nb0 + n0, LS,
                                     SK / G / 2, (k1 - k0) / SK, C + n0 * 64});
      }
      return;
    }
    for (std::size_t n0 = 0; n0 < ncols; n0 += mk_val_cols) {
      const std::size_t nc = std::min<std::size_t>(mk_val_cols, ncols - n0);
      ks.f32[nc - 1](mk_val_args{reinterpret_cast<const uint32_t*>(s.swz.data()),
                                 reinterpret_cast<const uint32_t*>(A.sumx.data() + f0 * LS + nb0 + n0), LS,
                                 (k1 - k0) / g.flush_k, C + n0 * 64});
    }
  }
}

// Whether every chunk of a call runs src's fused int8 decode kernel (dq_gemm_chunk's choice: int8
// activations in the panel, N <= 2 columns in one pass, a kernel for N)
template <class Src>
bool dq_int8_all_fused(const Src& src, const dq_activations& A) {
  if constexpr (requires { src.int8_fused(std::size_t(1)); }) {
    const bool int8 = A.act == act_type::int8 || A.act == act_type::int8_group;
    return int8 && !A.rows && A.geo.N <= 2 && src.int8_fused(A.geo.N) != nullptr;
  } else {
    return false;
  }
}

// Chunk [k0, k1) of tile t, columns [nb0, nb0 + nbw) of the pass, into the tile's accumulators C
// ([column][64] fp32); nc, the chunk after it, is prefetched a part per micro-kernel call.
template <class Src>
void dq_gemm_chunk(const Src& src, const dq_activations& A, const dq_kernel_set& ks, dq_scratch& s, float* C,
                   std::size_t t, std::size_t nb0, std::size_t nbw, std::size_t k0, std::size_t k1,
                   const dq_geometry::chunk& nc) {
  const dq_geometry& g = A.geo;
  const std::size_t LS = g.ldsum();
  const std::size_t per_call = A.rows ? mk_rows_cols : g.cb;
  const std::size_t calls = (std::min(nbw, g.N - nb0) + per_call - 1) / per_call;
  const bool int8 = A.act == act_type::int8 || A.act == act_type::int8_group;
  // decode (1 or 2 columns): level 1 fused into the micro-kernel where the source has it
  // (only the real columns: the padding up to NP holds zeros)
  const std::size_t ncols = std::min(nbw, g.N - nb0);
  constexpr bool can_fuse = requires { src.int8_fused(std::size_t(1)); };
  const int8_fused_fn fused = [&]() -> int8_fused_fn {
    if constexpr (can_fuse)
      return int8 && ncols <= 2 ? src.int8_fused(ncols) : nullptr;
    else
      return nullptr;
  }();
  // the next chunk's prefetch plan (layout arithmetic: a few hundred cycles), not made for the
  // fused kernels, which stream their bytes themselves (it was 4 % of a 2-thread Q4_0 decode)
  auto pf = [&] {
    if constexpr (prefetching_source<Src>)
      return spread_prefetch<Src>(src, fused ? dq_geometry::chunk{dq_geometry::no_tile, 0, 0} : nc, calls);
    else
      return 0;
  }();
  auto prefetch_next = [&] {
    if constexpr (prefetching_source<Src>) pf.step();
  };
  if (int8) {
    if constexpr (requires { src.super_levels(t, k0, k1, s); }) {
      if (A.super_k && !fused) {
        if (const uint8_t* Wf = src.super_levels(t, k0, k1, s)) {
          dq_super_chunk<Src>(Wf, A, ks, s, C, nb0, ncols, k0, k1, prefetch_next);
          return;
        }
      }
    }
    const uint8_t* W = fused ? nullptr : src.levels(t, k0, k1, s);
    const std::size_t nf = (k1 - k0 + g.flush_k - 1) / g.flush_k;
    if (!fused)  // (the fused kernels read the scales themselves)
      for (std::size_t f = 0; f < nf; ++f) src.group_scales(t, k0 + f * g.flush_k, &s.sw[f * 64], &s.swz[f * 64]);
    const std::size_t full = (k1 - k0) / g.flush_k, tail = (k1 - k0) % g.flush_k;
    const std::size_t f0 = k0 / g.flush_k, fsteps = g.flush_k / 4;
    if (A.rows) {  // the kernel over row-major activations, mk_rows_cols columns a call
      for (std::size_t n0 = 0; n0 < ncols; n0 += mk_rows_cols) {
        prefetch_next();
        const std::size_t n = nb0 + n0;
        mk_int8_rows_args a{W, A.row_i8(n) + k0, g.K_pad, std::min(mk_rows_cols, ncols - n0), fsteps, full,
                            C + n0 * 64, s.sw.data(), s.swz.data(), A.sumx.data() + f0 * LS + n,
                            A.sa.empty() ? nullptr : A.sa.data() + f0 * LS + n, LS,
                            A.fold_zero ? A.zsum.data() + f0 * LS + n : nullptr};
        if (full) ks.int8_rows(a);
        if (tail) {
          a.X += full * g.flush_k;
          to_tail_group(a, full, fsteps, tail, LS);
          ks.int8_rows(a);
        }
      }
      return;
    }
    const int8_t* Ad = reinterpret_cast<const int8_t*>(A.data.get());
    for (std::size_t n0 = 0; n0 < ncols; n0 += mk_int8_cols) {
      const std::size_t nc = std::min<std::size_t>(mk_int8_cols, ncols - n0);
      if (!fused) prefetch_next();  // (the fused kernels stream their bytes themselves)
      // (the fused kernels take the zero as scale * zero and the activation sums)
      mk_int8_args a{W, Ad + 4 * g.panel_index(nb0 + n0, k0 / 4), 4 * g.cb, fsteps, full, C + n0 * 64,
                     s.sw.data(), s.swz.data(),
                     A.sumx.data() + f0 * LS + nb0 + n0,
                     A.sa.empty() ? nullptr : A.sa.data() + f0 * LS + nb0 + n0, LS,
                     A.fold_zero && !fused ? A.zsum.data() + f0 * LS + nb0 + n0 : nullptr};
      if constexpr (requires { Src::int8_level_max; }) a.level_max = Src::int8_level_max;
      const auto call = [&](std::size_t kstart) {
        if constexpr (can_fuse) {
          if (fused) return src.run_int8_fused(fused, t, kstart, a);
        }
        ks.int8[nc - 1](a);
      };
      if (full) call(k0);
      if (tail) {
        a.A += full * fsteps * a.lda;
        to_tail_group(a, full, fsteps, tail, LS);
        call(k0 + full * g.flush_k);
      }
    }
  } else {
    // bf16 / fp32: values in the step-major layout (32-bit elements: bf16 pairs or fp32)
    const bool bf = A.act == act_type::bf16;
    const uint32_t* Ws = bf ? src.template value_steps<uint16_t>(t, k0, k1, s)
                            : src.template value_steps<float>(t, k0, k1, s);
    const std::size_t steps = bf ? (k1 - k0) / 2 : k1 - k0;
    if (A.rows) {  // (bf16 only: uses_rows) the kernel over row-major activations
      for (std::size_t n0 = 0; n0 < ncols; n0 += mk_rows_cols) {
        prefetch_next();
        ks.bf16_rows(mk_bf16_rows_args{Ws, A.row_bf16(nb0 + n0) + k0, g.K_pad,
                                       std::min(mk_rows_cols, ncols - n0), steps, C + n0 * 64});
      }
      return;
    }
    const uint32_t* Ad = reinterpret_cast<const uint32_t*>(A.data.get());
    for (std::size_t n0 = 0; n0 < ncols; n0 += mk_val_cols) {
      const std::size_t nc = std::min<std::size_t>(mk_val_cols, ncols - n0);
      prefetch_next();
      (bf ? ks.bf16 : ks.f32)[nc - 1](
          mk_val_args{Ws, Ad + g.panel_index(nb0 + n0, bf ? k0 / 2 : k0), g.cb, steps, C + n0 * 64});
    }
  }
}

// Saves the thread's matrix-unit state where the kernel set keeps one (tiles_save) and puts it
// back when the thread's share of a GEMM ends, or throws (tiles_done)
struct dq_tiles_guard {
  const dq_kernel_set& ks;
  dq_tile_state saved;
  explicit dq_tiles_guard(const dq_kernel_set& k) : ks(k) {
    if (ks.tiles_save) ks.tiles_save(saved);
  }
  dq_tiles_guard(const dq_tiles_guard&) = delete;
  dq_tiles_guard& operator=(const dq_tiles_guard&) = delete;
  ~dq_tiles_guard() {
    if (ks.tiles_done) ks.tiles_done(saved);
  }
};

// Items from q until it runs dry, on the calling thread; rows outside [r0, r1) are not written.
template <class Src>
void dq_gemm_tiles(const Src& src, const dq_activations& A, const dq_kernel_set& ks, dq_work_queue& q, std::size_t part,
                   std::size_t M, std::size_t r0, std::size_t r1, float* y, std::size_t ldy) {
  const dq_geometry& g = A.geo;
  dq_worker w(q, part);
  if (!w.current()) return;
  const dq_tiles_guard tiles{ks};
  dq_scratch s;
  s.init(g, dq_int8_all_fused(src, A));
  const std::size_t NP = g.NP;
  float* C = reinterpret_cast<float*>(s.acc.get());
  // columns in passes of at most NB (the 64 x NB accumulator tile and the activation chunk stay
  // in L2 for N in the thousands; the weight tile is dequantized once per pass)
  const std::size_t NB = g.n_block();
  do {
    const std::size_t t = w.current()->t, nb0 = w.current()->pass * NB;
    const std::size_t nbw = std::min(NB, NP - nb0);
    // the accumulators of the column blocks this pass calls (all NB columns: a 12 KiB memset per
    // tile at N = 1)
    std::memset(C, 0, 64 * std::min(NB, round_up(std::min(nbw, g.N - nb0), g.cb)) * 4);
    for (std::size_t k0 = 0; k0 < g.K_pad; k0 += g.kc) {
      const std::size_t k1 = std::min(g.K_pad, k0 + g.kc);
      dq_gemm_chunk(src, A, ks, s, C, t, nb0, nbw, k0, k1, w.next_chunk(g, k1));
    }
    const std::size_t ma = std::max(r0, t * 64), mb = std::min({r1, M, t * 64 + 64});
    const std::size_t n1 = std::min(g.N, nb0 + nbw);
    ks.write_tile(A, C - t * 64, nb0, n1, ma, mb, y, ldy);
  } while (w.advance());
}

// Small N (one column pass, N <= 16: decode and small batches) on a blob in K bands (tiling
// spec): tiles [ta, tb) on the calling thread, band after band, each band tile after tile, so the
// weights are read as one stream rather than a jump per band's panel (docs/tiling.md, "K bands").
// The tiles' accumulators persist across the bands.
template <class Src>
void dq_gemm_bands(const Src& src, const dq_activations& A, const dq_kernel_set& ks, std::size_t ta,
                   std::size_t tb, std::size_t M, std::size_t r0, std::size_t r1, float* y, std::size_t ldy) {
  const dq_geometry& g = A.geo;
  const packed_layout& L = *src.L;
  const dq_tiles_guard tiles{ks};
  dq_scratch s;
  s.init(g, dq_int8_all_fused(src, A));
  const std::size_t NP = g.NP, nbw = std::min(g.n_block(), NP);
  const std::size_t cols = std::min(nbw, round_up(g.N, g.cb));
  const aligned_bytes acc = alloc_aligned((tb - ta) * 64 * cols * 4);
  float* C0 = reinterpret_cast<float*>(acc.get());
  std::memset(C0, 0, (tb - ta) * 64 * cols * 4);
  const std::size_t bk = std::size_t(L.spec.block_k);
  // chunks end at band ends and at multiples of kc (the activation panel's chunks: a band end is
  // a multiple of the flush group, not always of kc)
  auto end_of = [&](std::size_t k0, std::size_t khi) { return std::min(khi, (k0 / g.kc + 1) * g.kc); };
  for (std::size_t b = 0; b < L.bands; ++b) {
    const std::size_t klo = L.band_first_block(b) * bk, khi = L.band_end_block(b) * bk;
    for (std::size_t t = ta; t < tb; ++t)
      for (std::size_t k0 = klo, k1; k0 < khi; k0 = k1) {
        k1 = end_of(k0, khi);
        // the next chunk: this panel's, the next tile's first of the band, the next band's first
        dq_geometry::chunk nc{dq_geometry::no_tile, 0, 0};
        if (k1 < khi) nc = {t, k1, end_of(k1, khi)};
        else if (t + 1 < tb) nc = {t + 1, klo, end_of(klo, khi)};
        else if (b + 1 < L.bands) nc = {ta, khi, end_of(khi, L.band_end_block(b + 1) * bk)};
        dq_gemm_chunk(src, A, ks, s, C0 + (t - ta) * 64 * cols, t, 0, nbw, k0, k1, nc);
      }
  }
  for (std::size_t t = ta; t < tb; ++t) {
    const std::size_t ma = std::max(r0, t * 64), mb = std::min({r1, M, t * 64 + 64});
    ks.write_tile(A, C0 + (t - ta) * 64 * cols - t * 64, 0, std::min(g.N, nbw), ma, mb, y, ldy);
  }
}

// The tiles covering rows [r0, r1), on the pool's threads through one work queue.
template <class Src>
void run_dq_gemm(const Src& src, const dq_activations& A, const dq_kernel_set& ks, std::size_t M, std::size_t r0,
                 std::size_t r1, float* y, std::size_t ldy, thread_pool* pool) {
  if (r0 == r1) return;
  // N <= 16 on a blob in K bands: a fixed split of the tiles, each thread band after band
  if constexpr (requires { src.L->bands; }) {
    if (dq_passes(A.geo) == 1 && A.geo.N <= 16 && src.L->bands > 1) {
      const std::size_t t0 = r0 / 64, t1 = (r1 + 63) / 64;
      const std::size_t parts = pool ? std::min(t1 - t0, pool->size()) : 1;
      auto part = [&](std::size_t i) {
        dq_gemm_bands(src, A, ks, t0 + (t1 - t0) * i / parts, t0 + (t1 - t0) * (i + 1) / parts, M, r0, r1, y, ldy);
      };
      if (parts <= 1) part(0);
      else pool->run(parts, part);
      return;
    }
  }
  const std::size_t ta = r0 / 64, tb = (r1 + 63) / 64, passes = dq_passes(A.geo);
  const std::size_t parts = pool ? std::min((tb - ta) * passes, pool->size()) : 1;
  dq_work_queue q(ta, tb, passes, parts);
  if (parts <= 1) {
    dq_gemm_tiles(src, A, ks, q, 0, M, r0, r1, y, ldy);
    return;
  }
  pool->run(parts, [&](std::size_t i) { dq_gemm_tiles(src, A, ks, q, i, M, r0, r1, y, ldy); });
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
  check_strided(N, K, ldx, "dequant_gemm", "ldx");
  check_strided(N, w.M(), ldy, "dequant_gemm", "ldy");
}

// The int8 paradigm folds the weights' zero into the integer dot where it is one integer z for
// every row and group (symmetric formats: Q4_0, Q5_0, Q8_0, IQ4_NL, Q3_K, Q6_K, ternary): the sums
// start at -z * sum(q), so the exact int32 dot is sum((level - z) q) and the per-group epilogue
// loses its fnmadd (c -= s z * sum(q)). Asymmetric and min-form formats keep it: their zero
// differs per row and group. (AVX-512, Ice Lake server, the 64 x 3 tile alone in L1, 43 calls of
// 512 k, per-group activation scales: g16 244 -> 298 GFLOP/s, g32 347 -> 408, g64 433 -> 483;
// docs/prefill.md, "The GEMM".)
template <class P>
constexpr bool int8_zero_folds() {
  constexpr auto& S = P::spec;
  return format_traits<typename P::format>::integer_levels && !S.asymmetric && !S.min_form &&
         S.sym_zero == float(int32_t(S.sym_zero));
}

// Sets the int8 folds of an activation panel for policy P's blob (before prepare_activations):
// the zero folded into the sums where int8_zero_folds<P>, and for per-row activations the
// super-group fold (gemm/dequant.hpp, int8_super_fold_offset) where the kernel set has it and its
// kernels read the panel
template <class P>
void int8_folds_for(dq_activations& A, const dq_kernel_set& ks, bool fold) {
  if constexpr (int8_zero_folds<P>()) {
    A.fold_zero = fold && (A.act == act_type::int8 || A.act == act_type::int8_group);
    A.zero = int32_t(P::spec.sym_zero);
  }
  if constexpr (int8_super_fold_offset<P>() >= 0) {
    // (the fold in planes only with a kernel over row-major activations that takes them)
    const bool planes_ok = int8_super_fold_split<P>() == 0 || uses_rows(ks, A.act, A.geo, std::size_t(P::spec.super_k));
    if (fold && A.act == act_type::int8 && ks.int8_super_fold && planes_ok &&
        A.geo.K_pad % std::size_t(P::spec.super_k) == 0) {
      A.super_k = std::size_t(P::spec.super_k);
      A.super_offset = int8_super_fold_offset<P>() * int8_super_fold_offset_weight<P>();
      // (the same test as super_levels', which then makes the codes' pairs: one decision; the
      // fold's flush groups are the scale groups, make_dq_geometry)
      A.min_pairs = int8_super_int_mins<P>(ks);
      // two or three planes of a 512-k chunk's levels are 64 or 96 KiB, past L1, and every
      // 16-column call of the AMX kernel reads them again: chunks of one super-group (Q4_K int8
      // on an AMX Xeon, 2 threads: 0.61 of the VNNI peak against 0.57-0.58, docs/prefill.md "AMX")
      if constexpr (int8_super_fold_split<P>() > 0) A.geo.set_chunk(A.super_k);
    }
  }
}

// Rows [r0, r1) of a checked call: the activation panel (geometry geo), the blob's weight source,
// the driver. Shared by dequant_gemm and the decode family's int8 route (decode/int8_decode.hpp).
// fold: the zero folded into the int8 sums where int8_zero_folds<P>, and the super-group fold
// (dequant_gemm). The decode keeps the subtracted form: its fused kernels (N <= 2) take it, and
// its buffered route (N >= 3) gives their bits.
template <class P>
void run_dq_gemm_blob(const packed_weights<P>& w, const float* x, std::size_t ldx, act_type act,
                      const dq_geometry& geo, const dq_kernel_set& ks, std::size_t r0, std::size_t r1, float* y,
                      std::size_t ldy, thread_pool* pool, bool fold) {
  dq_activations A;
  A.act = act;
  A.geo = geo;
  int8_folds_for<P>(A, ks, fold);
  prepare_activations(A, x, ldx, pool, ks);
  const lut_weight_source<P> src{w.data(), &w.layout(), &ks};
  static_assert(prefetching_source<lut_weight_source<P>>, "the LUT weight source prefetches its next chunk");
  run_dq_gemm(src, A, ks, w.M(), r0, r1, y, ldy, pool);
}

// checks, activation packing and the tile split shared by dequant_gemm and dequant_gemm_rows
template <class P>
void dequant_gemm_impl(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                       std::size_t r0, std::size_t r1, act_type act, std::size_t ldx, std::size_t ldy,
                       thread_pool* pool, dq_backend backend) {
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  check_dq_args(w, x, N, K, ldx, y, ldy, r0, r1);
  const auto& ks = dq_kernels_for_policy<P>(backend);
  const bool int8 = act == act_type::int8 || act == act_type::int8_group;
  require(format_traits<typename P::format>::integer_levels || !int8,
          "dequant_gemm: the int8 paradigm needs integer levels; policy ", P::name(),
          " has a float codebook (use act_type::bf16 or fp32)");
  require(ks.int8[0] != nullptr || !int8, "dequant_gemm: the ", ks.name,
          " kernels have no int8 paradigm (use act_type::fp32 or bf16)");
  run_dq_gemm_blob<P>(w, x, ldx, act, make_dq_geometry<P>(w.layout(), N, act), ks, r0, r1, y, ldy, pool,
                      /*fold=*/true);
}
}  // namespace detail

// The default activation paradigm: int8 per scale group where the levels are integers (the
// accuracy of llama.cpp's q8_0 activations at the int8 speed; per-row int8 is 4.5x its error on
// activations with outlier channels, docs/llama_formats.md "Accuracy"), bf16 for float codebooks.
template <class P>
constexpr act_type default_act() {
  return format_traits<typename P::format>::integer_levels ? act_type::int8_group : act_type::bf16;
}

// Prefill GEMM: y[n * ldy + m] = sum_k W[m][k] x[n][k] for x of N rows of K activations (row
// stride ldx), with the weights dequantized on the fly from the LUT-GEMV blob.
template <class P>
void dequant_gemm(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                  act_type act = default_act<P>(), std::size_t ldx = 0, std::size_t ldy = 0,
                  thread_pool* pool = nullptr, dq_backend backend = dq_backend::best) {
  detail::dequant_gemm_impl<P>(w, x, N, K, y, 0, w.M(), act, ldx, ldy, pool, backend);
}

// Rows [r0, r1) only, on the calling thread (an engine's own threads split M with this).
template <class P>
void dequant_gemm_rows(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                       std::size_t r0, std::size_t r1, act_type act = default_act<P>(), std::size_t ldx = 0,
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
  detail::check_strided(w.M(), w.K(), ldo, "dequantize", "ldo");
  const auto& ks = detail::dq_kernels_for_policy<P>(backend);
  const packed_layout& L = w.layout();
  const detail::dq_geometry g =
      detail::make_dq_geometry<P>(L, 1, type == dq_type::f32 ? act_type::fp32 : act_type::bf16);
  detail::lut_weight_source<P> src{w.data(), &L, &ks};
  const std::size_t parts = pool ? std::min(pool->size(), L.tiles) : 1;
  detail::dq_work_queue q(0, L.tiles, 1, parts);
  auto tiles = [&](std::size_t part) {
    detail::dq_worker wk(q, part);
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
  if (parts <= 1) {
    tiles(0);
  } else {
    pool->run(parts, [&](std::size_t i) { tiles(i); });
  }
}

}  // namespace lutkit
