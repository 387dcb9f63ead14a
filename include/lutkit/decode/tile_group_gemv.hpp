// lutkit — the decode GEMV on tile-group weights (gemm/tile_group_gemm.hpp: the weights, their
// weight source, the prefill GEMM): the int8 decode of the super-group stream, or FusedDQP.
//
// The int8 decode sums pairs of k with vpmaddubsw (a group's 2 k), not quads with VNNI: a VNNI
// step of 4 k would straddle two groups with different scales.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "../core/error.hpp"
#include "../core/thread_pool.hpp"
#include "../gemm/activations.hpp"
#include "../gemm/geometry.hpp"
#include "../gemm/microkernel.hpp"
#include "../gemm/targets.hpp"
#include "../gemm/tile_group_gemm.hpp"
#include "../quant/tile_group.hpp"
#include "decode_gemv.hpp"
#include "fused_dq.hpp"

namespace lutkit {

namespace detail {
// The int8 decode: activations quantized once per call to int8 per 32 k (quantize_act_int8, the
// granularity of llama.cpp's q8_0), then per 32-row block the super-groups of its K in chunks that
// stay in L1 while up to tg_int8_cols activation rows read them (tg_int8_args). Blocks are split
// over the pool; a row's figures do not depend on the split.
template <class Fmt>
void run_tg_int8(const tile_group_weights<Fmt>& w, const float* x, std::size_t N, std::size_t K, std::size_t ldx,
                 float* y, std::size_t ldy, thread_pool* pool, const dq_kernel_set& ks) {
  constexpr int KA = 32;  // activation scale granule
  const tile_group_geometry& geo = w.layout().geo;
  const super_group_map<Fmt> map(geo);
  const std::size_t sg_bytes = super_group_bytes<Fmt>(geo);
  const std::size_t sg_per_block = K / 8;  // a super-group is 8 k x 32 rows
  std::vector<int8_t> xq(N * K);
  std::vector<float> xa(N * (K / KA)), xp(N * (K / 2));
  std::vector<char> finite(N);
  for (std::size_t n = 0; n < N; ++n) {
    finite[n] = quantize_act_int8(x + n * ldx, K, KA, xq.data() + n * K, xa.data() + n * (K / KA));
    for (std::size_t kp = 0; kp < K / 2; ++kp)
      xp[n * (K / 2) + kp] = xa[n * (K / KA) + 2 * kp / KA] * float(int(xq[n * K + 2 * kp]) + int(xq[n * K + 2 * kp + 1]));
  }
  tg_int8_args base{};
  base.sg_bytes = sg_bytes;
  base.bits = format_traits<Fmt>::bits;
  for (int q = 0; q < 4; ++q) {  // k pair q of a super-group: read positions 64 q .. 64 q + 63
    base.qbyte[q] = int(map.code_byte(std::size_t(64 * q)));
    base.qshift[q] = map.code_shift(std::size_t(64 * q));
    require(map.code_byte(std::size_t(64 * q + 63)) == std::size_t(base.qbyte[q] + 63) &&
                map.code_shift(std::size_t(64 * q + 63)) == base.qshift[q],
            "tile_group_gemv: a k pair's codes are not consecutive bytes");
  }
  for (int g = 0; g < 8; ++g) {
    base.soff[g] = int(map.scale_offset(std::size_t(g)));
    base.zoff[g] = format_traits<Fmt>::asymmetric ? int(map.zero_offset(std::size_t(g))) : -1;
    require(base.soff[g] == base.soff[0] + 2 * g && (base.zoff[g] < 0 || base.zoff[g] == base.zoff[0] + 2 * g),
            "tile_group_gemv: a super-group's parameters are not consecutive");
  }
  base.zsym = format_traits<Fmt>::sym_zero;
  base.ldq = K;
  base.lda = K / KA;
  base.ldp = K / 2;
  const std::size_t blocks = w.M() / 32;
  const std::size_t chunk = 64;  // super-groups per pass: 9 KiB of W4 codes and parameters
  auto run_blocks = [&](std::size_t b0, std::size_t b1) {
    std::vector<float> acc(N * 32);
    for (std::size_t b = b0; b < b1; ++b) {
      std::fill(acc.begin(), acc.end(), 0.f);
      for (std::size_t s0 = 0; s0 < sg_per_block; s0 += chunk) {
        const std::size_t ns = std::min(chunk, sg_per_block - s0);
        for (std::size_t n0 = 0; n0 < N; n0 += tg_int8_cols) {
          const int nc = int(std::min<std::size_t>(tg_int8_cols, N - n0));
          tg_int8_args a = base;
          a.sg = w.data() + (b * sg_per_block + s0) * sg_bytes;
          a.n_sg = ns;
          a.xq = xq.data() + n0 * K + 8 * s0;
          a.xa = xa.data() + n0 * (K / KA) + 8 * s0 / KA;
          a.xp = xp.data() + n0 * (K / 2) + 4 * s0;
          a.acc = acc.data() + n0 * 32;
          const tg_int8_fn fn = ks.tg_int8[nc - 1] ? ks.tg_int8[nc - 1] : portable_dq_kernels().tg_int8[nc - 1];
          fn(a);
        }
      }
      for (std::size_t n = 0; n < N; ++n)
        for (std::size_t r = 0; r < 32; ++r)
          y[n * ldy + b * 32 + r] = finite[n] ? acc[n * 32 + r] : std::numeric_limits<float>::quiet_NaN();
    }
  };
  const std::size_t parts = pool ? std::min(blocks, pool->size()) : 1;
  if (parts <= 1) {
    run_blocks(0, blocks);
  } else {
    pool->run(parts, [&](std::size_t i) { run_blocks(blocks * i / parts, blocks * (i + 1) / parts); });
  }
}
}  // namespace detail

// Decode GEMV on tile-group weights, N small. method:
//   int8 (best)  activations int8 per 32 k, per group and row an exact int16 pair dot times
//                scale * activation scale (run_tg_int8): memory-bound
//   fused_dq     FusedDQP: fp32 groups dequantized into an L1-resident block and consumed at once by
//                the dot (fp32 activations)
template <class Fmt>
void tile_group_gemv(const tile_group_weights<Fmt>& w, const float* x, std::size_t N, std::size_t K, float* y,
                     std::size_t ldx = 0, std::size_t ldy = 0, thread_pool* pool = nullptr,
                     dq_backend backend = dq_backend::best, decode_method method = decode_method::best) {
  detail::check_tile_group_args(w, x, N, K, ldx, y, ldy, "tile_group_gemv");
  detail::require(method == decode_method::best || method == decode_method::int8 || method == decode_method::fused_dq,
                  "tile_group_gemv: tile groups decode with decode_method::int8 or fused_dq (or best)");
  const auto& ks = detail::dq_kernels_for(backend);
  if (method != decode_method::fused_dq) {
    detail::run_tg_int8(w, x, N, K, ldx, y, ldy, pool, ks);
    return;
  }
  detail::dq_geometry g = detail::make_dq_geometry_k(K, K, std::size_t(w.layout().geo.group), N, act_type::fp32);
  g.kc = detail::fdq_sub_block;
  const detail::tile_group_source<Fmt> src{w.data(), &w.layout(), &ks};
  detail::run_fused_dq_src(src, ks, g, w.M(), x, N, K, ldx, y, ldy, 0, w.M(), pool);
}

}  // namespace lutkit
