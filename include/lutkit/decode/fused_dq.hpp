// lutkit — FusedDQP (Gemma3 on XDNA, §3.2.1): a dequant-based decode GEMV fused on small
// sub-blocks, on the SAME blob the LUT-GEMV reads. Per thread, for each 64-row tile and each
// K sub-block (256 activations, or the scale group if larger): level-1 + level-2 LUT
// dequantization into an L1-resident fp32 block, consumed at once by a dot with the
// activations (16-lane partial sums per (row, activation row), reduced at the tile's end).
// The driver is the decode family's; the dequantization (weight source), the dot (the kernel
// set's fdq) and the work queue are gemm/'s building blocks.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "../core/thread_pool.hpp"
#include "../gemm/dequant_gemm.hpp"
#include "../gemm/geometry.hpp"
#include "../gemm/targets.hpp"
#include "../gemm/weight_source.hpp"
#include "../gemm/work_queue.hpp"
#include "../quant/packed_weights.hpp"

namespace lutkit {

namespace detail {
inline constexpr std::size_t fdq_sub_block = 256;

// Tiles from q until it runs dry, of any weight source with values<float> (64 rows, k in
// [k0, k1)); g: the fp32 geometry with kc the sub-block; M: rows of the matrix.
template <class Src>
void fused_dq_tiles_src(const Src& src, const dq_kernel_set& ks, const dq_geometry& g, std::size_t M, const float* xp,
                        std::size_t ldxp, std::size_t N, dq_work_queue& q, std::size_t thread, std::size_t r0,
                        std::size_t r1, float* y, std::size_t ldy) {
  auto item = q.claim(thread);
  if (!item) return;
  dq_scratch s;
  s.init(g);
  std::vector<float> part(64 * N * 16);
  for (; item; item = q.claim(thread)) {
    const std::size_t t = item->t;
    std::fill(part.begin(), part.end(), 0.f);
    for (std::size_t k0 = 0; k0 < g.K_pad; k0 += g.kc) {
      const std::size_t k1 = std::min(g.K_pad, k0 + g.kc);
      std::size_t ld = 0;
      const float* W = src.template values<float>(t, k0, k1, s, ld);
      ks.fdq(fdq_dot_args{W, ld, 64, k1 - k0, xp + k0, ldxp, N, part.data()});
    }
    for (std::size_t r = 0; r < 64; ++r) {
      const std::size_t m = t * 64 + r;
      if (m < r0 || m >= r1 || m >= M) continue;
      for (std::size_t n = 0; n < N; ++n) {
        const float* p = part.data() + (r * N + n) * 16;
        float acc = 0.f;
        for (int i = 0; i < 16; ++i) acc += p[i];
        y[n * ldy + m] = acc;
      }
    }
  }
}

// Rows [r0, r1) of any weight source (g: its fp32 geometry, kc the sub-block), over the pool's
// threads by 64-row tiles from one work queue. The activations are padded with zeros to g.K_pad (per-channel blobs pad
// K to a block).
template <class Src>
void run_fused_dq_src(const Src& src, const dq_kernel_set& ks, const dq_geometry& g, std::size_t M, const float* x,
                      std::size_t N, std::size_t K, std::size_t ldx, float* y, std::size_t ldy, std::size_t r0,
                      std::size_t r1, thread_pool* pool) {
  const std::size_t ldxp = round_up(g.K_pad, 16) + 16;
  std::vector<float> xp(N * ldxp, 0.f);
  for (std::size_t n = 0; n < N; ++n) std::memcpy(xp.data() + n * ldxp, x + n * ldx, K * 4);
  if (r0 == r1) return;
  const std::size_t ta = r0 / 64, tb = (r1 + 63) / 64;
  const std::size_t parts = pool ? std::min(tb - ta, pool->size()) : 1;
  dq_work_queue q(ta, tb, 1, parts);
  if (parts <= 1) {
    fused_dq_tiles_src(src, ks, g, M, xp.data(), ldxp, N, q, 0, r0, r1, y, ldy);
    return;
  }
  pool->run(parts, [&](std::size_t i) { fused_dq_tiles_src(src, ks, g, M, xp.data(), ldxp, N, q, i, r0, r1, y, ldy); });
}

template <class P>
void run_fused_dq(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                  std::size_t ldx, std::size_t ldy, std::size_t r0, std::size_t r1, thread_pool* pool,
                  dq_backend backend) {
  check_dq_args(w, x, N, K, ldx, y, ldy, r0, r1);
  const auto& ks = dq_kernels_for_policy<P>(backend);
  require(ks.fdq != nullptr, "fused_dq_gemv: the ", ks.name, " kernels have no FusedDQP (use dequant_gemm)");
  const packed_layout& L = w.layout();
  dq_geometry g = make_dq_geometry<P>(L, N, act_type::fp32);
  g.kc = round_up(fdq_sub_block, g.flush_k);
  const lut_weight_source<P> src{w.data(), &L, &ks};
  run_fused_dq_src(src, ks, g, L.M, x, N, K, ldx, y, ldy, r0, r1, pool);
}
}  // namespace detail

// FusedDQP decode: y[n * ldy + m] = sum_k W[m][k] x[n][k] for N (small) activation rows.
template <class P>
void fused_dq_gemv(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                   std::size_t ldx = 0, std::size_t ldy = 0, thread_pool* pool = nullptr,
                   dq_backend backend = dq_backend::best) {
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  detail::run_fused_dq<P>(w, x, N, K, y, ldx, ldy, 0, w.M(), pool, backend);
}

// Rows [r0, r1) only, on the calling thread.
template <class P>
void fused_dq_gemv_rows(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                        std::size_t r0, std::size_t r1, std::size_t ldx = 0, std::size_t ldy = 0,
                        dq_backend backend = dq_backend::best) {
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  detail::run_fused_dq<P>(w, x, N, K, y, ldx, ldy, r0, r1, nullptr, backend);
}

}  // namespace lutkit
