// lutkit — the AIE array model: a kernel's latency on the NPU in the structure of Dolphium's Eq. 1,
//   lat = max( max over shared resources u of sum over cores of lat(u, core),
//              max over private resources u of lat(u) ),
// memory time = bytes / bandwidth, compute time = modelled cycles / clock. Shared resources:
// DRAM reads, the shim DMA of the columns a kernel uses; private: each tile's compute (the cycle
// model of its kernel on the core model) and its DMA input streams. The mappings are the Gemma 3
// paper's: FusedDQP on 4 columns, FlowKV on 2 columns (4 tile pairs, one KV head per pair, K on
// the first tile, V on the second), the megatile / supertile GEMM on all columns (Eq. 4, 5).
// Every figure is modelled; docs/targets/aie.md compares them with the published ones.
#pragma once
#include <cstddef>

#include "constants.hpp"

namespace lutkit::aie::model {

struct eq1 {
  struct term {
    const char* name;
    double seconds;
    bool shared;
  };
  term t[12];
  int n = 0;
  void add(const char* name, double s, bool shared) {
    if (n < 12) t[n++] = {name, s, shared};
  }
  double latency() const {
    double m = 0;
    for (int i = 0; i < n; ++i) m = t[i].seconds > m ? t[i].seconds : m;
    return m;
  }
  const char* bound() const {
    const char* b = "";
    double m = -1;
    for (int i = 0; i < n; ++i)
      if (t[i].seconds > m) m = t[i].seconds, b = t[i].name;
    return b;
  }
};

struct npu {
  int columns = 8, rows = 4;
  double clock_ghz = 1.8;
  double dram_gbs = dram_read_gbs_fitted;
  double shim_bytes_per_cycle = 2 * 4;      // per column: 2 channels x 32 bits
  double tile_in_bytes_per_cycle = 4;       // per S2MM channel (2 per tile)
  double tile_macs_per_cycle_bf16 = 512.0 * 768.0 / 803.0;  // the bfp16 calibration kernel's modelled rate (aie2p)
};
inline npu xdna2() { return npu{}; }

// ---------------------------------------------------------------------------------- GEMM (prefill)
// An M x K x N bf16 GEMM with megatiles of mt_m x mt_k x mt_n (output block mt_m x mt_n): the
// supertile of 8 m x 4 n tiles on the array, a tiles broadcast along columns, b tiles along rows,
// the megatile staged in the memory tiles. DRAM reads by Eq. 5: (N / mt_n) size(A) + (M / mt_m)
// size(B), on padded shapes.
struct gemm_shape {
  double M, K, N;
};
struct megatile {
  double m, k, n;
};
inline double ceil_to(double x, double q) {
  const double r = double(static_cast<long long>((x + q - 1) / q));
  return r * q;
}
inline double gemm_dram_bytes(gemm_shape s, megatile t) {
  const double M = ceil_to(s.M, t.m), N = ceil_to(s.N, t.n), K = ceil_to(s.K, 64);
  return (N / t.n) * M * K * 2 + (M / t.m) * K * N * 2;
}
// The schedule Eq. 5 summarizes, walked explicitly: megatile by megatile (output blocks mt_m x
// mt_n), the memory tiles take the megatile's A rows (mt_m x K) and B columns (K x mt_n) from
// DRAM once, k tile by k tile (mt_k), and feed the supertiles (8 m x 4 n tiles of the array) from
// there. Returns the DRAM bytes read and the largest memory-tile footprint of one k step (A and B
// k tiles, bf16, double-buffered).
struct schedule_traffic {
  double dram_bytes = 0, mt_bytes_peak = 0;
};
inline schedule_traffic walk_megatiles(gemm_shape s, megatile t) {
  schedule_traffic r;
  const double M = ceil_to(s.M, t.m), N = ceil_to(s.N, t.n), K = ceil_to(s.K, 64);
  for (double m0 = 0; m0 < M; m0 += t.m)
    for (double n0 = 0; n0 < N; n0 += t.n)
      for (double k0 = 0; k0 < K; k0 += t.k) {
        const double kk = K - k0 < t.k ? K - k0 : t.k;
        const double step = (t.m * kk + kk * t.n) * 2;
        r.dram_bytes += step;
        r.mt_bytes_peak = 2 * step > r.mt_bytes_peak ? 2 * step : r.mt_bytes_peak;
      }
  return r;
}
inline constexpr double memory_tile_bytes_xdna2 = 8.0 * 512 * 1024;

inline eq1 gemm_latency(const npu& a, gemm_shape s, megatile t) {
  eq1 e;
  const double M = ceil_to(s.M, t.m), N = ceil_to(s.N, t.n), K = ceil_to(s.K, 64);
  const double bytes = gemm_dram_bytes(s, t);
  const double f = a.clock_ghz * 1e9;
  e.add("DRAM", bytes / (a.dram_gbs * 1e9), true);
  e.add("shim DMA", bytes / (a.columns * a.shim_bytes_per_cycle * f), true);
  const int tiles = a.columns * a.rows;
  e.add("tile compute", M * K * N / tiles / a.tile_macs_per_cycle_bf16 / f, false);
  // a tile receives an m x k a tile and a k x n b tile per k step on its two input channels
  // for each of its m x n output tiles (m = n = 64, mm.cc's tile): M N K / tiles (1/m + 1/n) bf16
  const double per_tile_in = M * N * K / tiles * (1.0 / 64 + 1.0 / 64) * 2;
  e.add("tile DMA in", per_tile_in / (2 * a.tile_in_bytes_per_cycle * f), false);
  return e;
}
inline double tops(gemm_shape s, double seconds) { return 2 * s.M * s.K * s.N / seconds / 1e12; }
// the one DRAM constant, fitted: the bandwidth at which Eq. 5's reads of the 2048^3 GEMM with the
// 512 x 512 x 512 megatile take the time of its published 13.7 TOPS
inline double fit_dram_gbs() {
  const gemm_shape s{2048, 2048, 2048};
  return gemm_dram_bytes(s, {512, 512, 512}) / (2 * s.M * s.K * s.N / 13.7e12) / 1e9;
}

// the DRAM bandwidth a published point needs if Eq. 5's reads were its only bound (the three
// points need 55 / 67 / 53.5 GB/s: not one bandwidth; docs/targets/aie.md, inconsistency 4)
inline double implied_dram_gbs(gemm_shape s, megatile t, double published_tops) {
  return gemm_dram_bytes(s, t) / (2 * s.M * s.K * s.N / (published_tops * 1e12)) / 1e9;
}

// ---------------------------------------------------------------------------------- Gemma 3 decode
struct gemma3 {
  const char* name;
  double D, layers, heads, kv_heads, head_dim, ffn, vocab, window;
  double global_layers() const { return double(static_cast<long long>(layers / 6)); }  // 5 local : 1 global
  double local_layers() const { return layers - global_layers(); }
  double layer_weights() const {
    return D * heads * head_dim * 2 + 2 * D * kv_heads * head_dim + 3 * D * ffn;
  }
};
inline constexpr gemma3 gemma3_1b{"Gemma3-1B", 1152, 26, 4, 1, 256, 6912, 262144, 1024};
inline constexpr gemma3 gemma3_4b{"Gemma3-4B", 2560, 34, 8, 4, 256, 10240, 262144, 1024};

// per-kernel cycles the core model gives (measured by running the kernels on the model)
struct kernel_rates {
  double w4a8_cycles_per_weight = 0;    // FusedDQP tile, decode GEMV
  double att_score_cycles_per_key = 0;  // FlowKV CT0 (one KV head, its GQA rows)
  double att_value_cycles_per_key = 0;  // FlowKV CT1
  double att_prefill_cycles_per_pair = 0;  // FlowQKV: per (query, key) pair of one head
};

struct decode_breakdown {
  double proj_s = 0, attn_s = 0, head_s = 0, overhead_s = 0, total_s = 0;
  const char* proj_bound = "";
  const char* attn_bound = "";
  double tok_s() const { return 1.0 / total_s; }
};

// one projection set (the layer's or the LM head) on FusedDQP's 4 columns, Q4NX weights
inline eq1 fused_dqp_latency(const npu& a, const kernel_rates& r, double weights) {
  eq1 e;
  const double f = a.clock_ghz * 1e9, bytes = weights * 0.625;
  const int cols = 4, tiles = cols * a.rows;
  e.add("DRAM", bytes / (a.dram_gbs * 1e9), true);
  e.add("shim DMA (4 columns)", bytes / (cols * a.shim_bytes_per_cycle * f), true);
  e.add("tile compute", weights / tiles * r.w4a8_cycles_per_weight / f, false);
  e.add("tile DMA in", bytes / tiles / (2 * a.tile_in_bytes_per_cycle * f), false);
  return e;
}
// FlowKV over `len` keys of every KV head of one layer: 2 columns, 4 tile pairs
inline eq1 flowkv_latency(const npu& a, const kernel_rates& r, const gemma3& g, double len) {
  eq1 e;
  const double f = a.clock_ghz * 1e9;
  const double kv_bytes = 2 * g.kv_heads * g.head_dim * len * 2;  // K and V, bf16
  // KV heads per tile pair: ceil(kv_heads / 4), one for the 4B (the paper: "one KV head (a group)
  // mapped to each CT pair"), one for the 1B (its single KV head; three pairs idle)
  const double pairs = 4;
  const double hpp = double(static_cast<long long>((g.kv_heads + pairs - 1) / pairs));
  e.add("DRAM", kv_bytes / (a.dram_gbs * 1e9), true);
  // The K and V streams enter through the shim DMA of every column, not only FlowKV's two: the
  // paper (Sec. 5) gives FlowKV a sustained read requirement above 60 GB/s at 1.8 GHz, which two
  // columns' shim DMA (2 x 8 B / cycle = 28.8 GB/s) could not carry; a layer's kernels run one
  // after another, so the projections' columns' shims are idle while attention runs, and the
  // stream switch routes any shim to any tile (AM020; Sec. 2.1.2). The pair's own input channels
  // stay the private bound (the K stream term below).
  e.add("shim DMA (all columns)", kv_bytes / (a.columns * a.shim_bytes_per_cycle * f), true);
  // a pair: K on the first tile's input channel, V on the second's
  e.add("tile DMA in (K stream)", hpp * g.head_dim * len * 2 / (a.tile_in_bytes_per_cycle * f), false);
  e.add("score stage", hpp * len * r.att_score_cycles_per_key / f, false);
  e.add("value stage", hpp * len * r.att_value_cycles_per_key / f, false);
  return e;
}
inline decode_breakdown decode_token(const npu& a, const kernel_rates& r, const gemma3& g, double context,
                                     double layer_overhead_s) {
  decode_breakdown d;
  const eq1 p = fused_dqp_latency(a, r, g.layer_weights());
  d.proj_s = p.latency() * g.layers;
  d.proj_bound = p.bound();
  const eq1 ag = flowkv_latency(a, r, g, context);
  const eq1 al = flowkv_latency(a, r, g, context < g.window ? context : g.window);
  d.attn_s = ag.latency() * g.global_layers() + al.latency() * g.local_layers();
  d.attn_bound = ag.bound();
  d.head_s = fused_dqp_latency(a, r, g.vocab * g.D).latency();
  d.overhead_s = layer_overhead_s * g.layers;
  d.total_s = d.proj_s + d.attn_s + d.head_s + d.overhead_s;
  return d;
}
// the per-layer dispatch overhead that makes the model meet one published decode point
inline double fit_layer_overhead(const npu& a, const kernel_rates& r, const gemma3& g, double context, double tok_s) {
  const decode_breakdown d = decode_token(a, r, g, context, 0.0);
  return (1.0 / tok_s - d.total_s) / g.layers;
}

// ---------------------------------------------------------------------------------- Gemma 3 prefill
// Prefill = per layer: the dequantization engine (Sec. 3.1.1: each Q4NX block read, dequantized on
// a CT and its bf16 written back to DDR), the seven projection GEMMs on the whole array (Eq. 5
// traffic, megatile 512 x 512 x 512 or the smallest 128-multiple megatile for short prompts), the
// FlowQKV attention (visible pairs at the attention kernel's modelled cycles, over all tiles), and
// two mechanisms the decode mapping does not have:
//  - the nonlinear ops (RoPE and QK-norm on q and k, four RMSNorms with the residual adds, GeLU x
//    MUL; Fig. 4, Sec. 2.2.6), each on ONE tile as in the paper's mapping (Sec. 3.2.3). In decode
//    they see one vector per layer and are negligible (the paper says so); in prefill they see L
//    rows and serialize with the GEMMs. Their per-element cost is fitted (no RoPE / RMSNorm / GeLU
//    kernel runs on the core model); its floor is the tile's stream (0.5 cycle per bf16 element on
//    a 32-bit channel);
//  - a fixed cost per layer: each prefill kernel occupies the whole array (the 8 x 4 supertile, the
//    8 FlowQKV columns, every CT for the dequantization), so the array is reconfigured between them
//    within each layer, which the resident decode mapping avoids. Fitted.
struct prefill_fixed {
  double layer_s = 0;               // fixed cost per layer (reconfiguration, dispatch)
  double nonlinear_s_per_elem = 0;  // one tile's time per nonlinear element
};
// elements the nonlinear tiles stream per token and layer: 4 RMSNorms of D, QK-norm and RoPE on
// q (heads x head_dim) and k (kv_heads x head_dim), GeLU x MUL over ffn
inline double nonlinear_elements(const gemma3& g) {
  return 4 * g.D + 2 * (g.heads + g.kv_heads) * g.head_dim + g.ffn;
}
struct prefill_breakdown {
  double gemm_s = 0, dequant_s = 0, attn_s = 0, nonlinear_s = 0, fixed_s = 0, total_s = 0;
};
inline prefill_breakdown prefill(const npu& a, const kernel_rates& r, const gemma3& g, double L, prefill_fixed fx) {
  prefill_breakdown p;
  const megatile mt{L >= 512 ? 512.0 : ceil_to(L, 128), 512, 512};
  const double hd = g.heads * g.head_dim, kvd = g.kv_heads * g.head_dim;
  const gemm_shape shapes[] = {{L, g.D, hd}, {L, g.D, kvd}, {L, g.D, kvd}, {L, hd, g.D}, {L, g.D, g.ffn}, {L, g.D, g.ffn}, {L, g.ffn, g.D}};
  double t = 0;
  for (const auto& s : shapes) t += gemm_latency(a, s, mt).latency();
  p.gemm_s = t * g.layers;
  // the dequantization engine: every Q4NX weight read once and its bf16 written back to DDR
  // (Sec. 3.1.1); writes counted at the read bandwidth (the paper gives no write figure)
  p.dequant_s = g.layer_weights() * g.layers * (0.625 + 2.0) / (a.dram_gbs * 1e9);
  // FlowQKV: visible (query, key) pairs per head, causal; local layers within the window
  const double global_pairs = L * (L + 1) / 2;
  const double w = g.window < L ? g.window : L;
  const double local_pairs = L * w - w * (w - 1) / 2;
  const double pairs = g.heads * (global_pairs * g.global_layers() + local_pairs * g.local_layers());
  const int tiles = a.columns * a.rows;
  p.attn_s = pairs * r.att_prefill_cycles_per_pair / tiles / (a.clock_ghz * 1e9);
  p.nonlinear_s = L * nonlinear_elements(g) * g.layers * fx.nonlinear_s_per_elem;
  p.fixed_s = fx.layer_s * g.layers;
  p.total_s = p.gemm_s + p.dequant_s + p.attn_s + p.nonlinear_s + p.fixed_s;
  return p;
}
// The two prefill constants, fitted on Gemma3-1B's two end points (1k: the fixed cost dominates;
// 32k: the per-token terms dominate), solved together since both terms appear in both points.
inline prefill_fixed fit_prefill(const npu& a, const kernel_rates& r, const gemma3& g, double L1, double t1, double L2,
                                 double t2) {
  const prefill_breakdown b1 = prefill(a, r, g, L1, {}), b2 = prefill(a, r, g, L2, {});
  const double n = g.layers, e1 = L1 * nonlinear_elements(g) * n, e2 = L2 * nonlinear_elements(g) * n;
  const double c1 = t1 - b1.total_s, c2 = t2 - b2.total_s;
  prefill_fixed f;
  f.nonlinear_s_per_elem = (c2 - c1) / (e2 - e1);
  f.layer_s = (c1 - e1 * f.nonlinear_s_per_elem) / n;
  return f;
}
inline prefill_fixed prefill_fitted() {
  return {prefill_layer_fixed_ms_fitted * 1e-3, prefill_nonlinear_cycles_per_elem_fitted / 1.8e9};
}

// ---------------------------------------------------------------------------------- published figures
struct published_point {
  double x, y;
};
inline constexpr published_point gemma3_1b_decode[] = {{1024, 34.3}, {2048, 33.7}, {4096, 32.6}, {8192, 31.4}, {16384, 28.3}, {32768, 23.1}};
inline constexpr published_point gemma3_4b_decode[] = {{1024, 14.4},  {2048, 14.4},  {4096, 14.1},  {8192, 13.7},
                                                        {16384, 13.0}, {32768, 11.9}, {65536, 10.8}, {131072, 9.2}};
inline constexpr published_point gemma3_1b_prefill[] = {{1024, 1.02}, {2048, 1.64}, {4096, 2.7}, {8192, 4.9}, {16384, 9.74}, {32768, 21}};
inline constexpr published_point gemma3_4b_prefill[] = {{1024, 1.98}, {2048, 3.27}, {4096, 5.82}, {8192, 11.1}, {16384, 22.9}, {32768, 50.9}};
struct published_gemm {
  megatile t;
  double tops;
};
inline constexpr published_gemm gemma3_gemm_points[] = {{{128, 512, 512}, 5.9}, {{256, 256, 512}, 12.0}, {{512, 512, 512}, 13.7}};

}  // namespace lutkit::aie::model
