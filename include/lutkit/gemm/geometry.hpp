// lutkit — the dequant-GEMM's per-call geometry: the activation paradigm, the K chunking every
// buffer is sized for, the activation panel's element map, and the working-buffer slots.
#pragma once
#include <algorithm>
#include <cstddef>

#include "../core/tiling.hpp"
#include "microkernel.hpp"

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
namespace detail {

// the per-thread working buffers of the dequant kernels (core/memory.hpp): the activations'
// panel and per-column arrays (dq_activations), a worker's row buffer (prepare_rows), the
// weight source's scratch (dq_scratch)
enum class dq_slot {
  panel, row_scale, nan_mul, sumx, sa, zsum, super_zsum, sum_pairs, row_buf,  // activations
  codes, values, steps, acc,                                        // weight source
  count
};

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
  // the chunk length changed to k (a multiple of flush_k), the panel's steps per chunk with it
  void set_chunk(std::size_t k) {
    kcs = k / (kc / kcs);
    kc = k;
  }
  std::size_t flushes() const { return (K_pad + flush_k - 1) / flush_k; }
  // the panel columns the micro-kernels read: the column blocks holding real columns (the last
  // one's padding cleared); the blocks past them up to NP are never read nor written
  std::size_t read_cols() const { return std::min(NP, round_up(N, cb)); }
  // the stride of the per-flush-group column arrays (dq_activations: sumx, sa, zsum, super_zsum):
  // the columns the micro-kernels read. At N = 1 (int8: cb = 1) that is 1 where NP is 48: each
  // call fills 1/48 of the entries (K = 2048, 64 flush groups: 256 bytes an array, not 12 KiB).
  std::size_t ldsum() const { return read_cols(); }
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
  // k per chunk: fp32 64, int8 512 (the super-group fold in planes: one super-group,
  // int8_folds_for), bf16 1024 for N >= 48 and 256 below.
  // int8 at 4096 x 14336, N = 128, 2 threads, medians of 3: 512 gave +5-7% over 256 (half the
  // calls, each loading and storing its 12 accumulators once); 1024 was not better.
  // bf16 (interleaved rounds, 2 threads, W4): 1024 over 256 gave +2-3% at N = 128 and
  // +10-20% at N = 512 (a call's fixed cost, its 24 accumulators loaded and stored, is spread
  // over 4x the steps; the 128 KiB chunk of bf16 weights is re-read from L2 by every call), but
  // -4% at N = 16, where the dequantization dominates and a 32 KiB chunk stays in L1.
  const std::size_t base = act == act_type::fp32 ? 64 : act == act_type::bf16 ? (N >= 48 ? 1024 : 256) : 512;
  g.kc = round_up(base, g.flush_k);
  g.N = N;
  g.NP = round_up(N, 48);
  // (int8 with N = 1 or 2: blocks of N columns, every one real: no padding column to clear per
  // call, the activation sums' stride ldsum() N, a row's quads stored one after the other)
  const bool int8 = act == act_type::int8 || act == act_type::int8_group;
  g.cb = int8 ? std::min(std::max<std::size_t>(N, 1), std::size_t(mk_int8_cols)) : std::size_t(mk_val_cols);
  const std::size_t per_step = act == act_type::fp32 ? 1 : act == act_type::bf16 ? 2 : 4;  // k per element
  g.psteps = g.K_pad / per_step;
  g.kcs = g.kc / per_step;
  return g;
}
// The flush group: the scale group (whole-K scales: whole_k_flush_blocks, ~256 k). With decode set
// (decode_gemv's int8 method), int8_group activations take at most 32 k per scale: llama.cpp's
// q8_0 granularity however wide the weight groups (g64: 1.55e-02 -> 1.14e-02 relative error,
// docs/llama_formats.md "Accuracy"; a weight group then spans several flushes with the same
// weight scale). Not for prefill: twice the epilogues cost W4 g64 at N = 128 a fifth of its speed.
inline constexpr std::size_t int8_decode_act_group = 32;
template <class P>
dq_geometry make_dq_geometry(const packed_layout& L, std::size_t N, act_type act, bool decode = false) {
  constexpr auto& S = P::spec;
  std::size_t flush = std::size_t(S.group_k > 0 ? S.group_k : S.whole_k_flush_blocks() * S.block_k);
  if (decode && act == act_type::int8_group && S.group_k > 0 && flush > int8_decode_act_group &&
      flush % int8_decode_act_group == 0)
    flush = int8_decode_act_group;
  return make_dq_geometry_k(L.K, L.K_pad, flush, N, act);
}

}  // namespace detail
}  // namespace lutkit
