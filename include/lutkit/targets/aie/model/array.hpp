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
  const double pairs = 4, heads_per_pair = (g.kv_heads + pairs - 1) / pairs;
  const double hpp = double(static_cast<long long>(heads_per_pair + 0.999));
  e.add("DRAM", kv_bytes / (a.dram_gbs * 1e9), true);
  e.add("shim DMA (2 columns)", kv_bytes / (2 * a.shim_bytes_per_cycle * f), true);
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
struct prefill_breakdown {
  double gemm_s = 0, dequant_s = 0, attn_s = 0, overhead_s = 0, total_s = 0;
};
inline prefill_breakdown prefill(const npu& a, const kernel_rates& r, const gemma3& g, double L, double layer_overhead_s) {
  prefill_breakdown p;
  const megatile mt{L >= 512 ? 512.0 : ceil_to(L, 128), 512, 512};
  const double hd = g.heads * g.head_dim, kvd = g.kv_heads * g.head_dim;
  const gemm_shape shapes[] = {{L, g.D, hd}, {L, g.D, kvd}, {L, g.D, kvd}, {L, hd, g.D}, {L, g.D, g.ffn}, {L, g.D, g.ffn}, {L, g.ffn, g.D}};
  double t = 0;
  for (const auto& s : shapes) t += gemm_latency(a, s, mt).latency();
  p.gemm_s = t * g.layers;
  // the dequantization engine: every Q4NX weight read once, its bf16 written (reads counted)
  p.dequant_s = g.layer_weights() * g.layers * 0.625 / (a.dram_gbs * 1e9);
  // FlowQKV: visible (query, key) pairs per head, causal; local layers within the window
  const double global_pairs = L * (L + 1) / 2;
  const double w = g.window < L ? g.window : L;
  const double local_pairs = L * w - w * (w - 1) / 2;
  const double pairs = g.heads * (global_pairs * g.global_layers() + local_pairs * g.local_layers());
  const int tiles = a.columns * a.rows;
  p.attn_s = pairs * r.att_prefill_cycles_per_pair / tiles / (a.clock_ghz * 1e9);
  p.overhead_s = layer_overhead_s * g.layers;
  p.total_s = p.gemm_s + p.dequant_s + p.attn_s + p.overhead_s;
  return p;
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
