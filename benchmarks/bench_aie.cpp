// target::aie rows of the benchmark suite: "aie/<kernel>/<profile>/<shape>". No AIE hardware or
// simulator runs here (docs/targets/aie.md): every counter named aie_modelled_* is a figure of the
// cycle and array models (targets/aie/model/), computed once when the row is set up; the row's
// TIME is the host's measured time of the same kernel on the same shape (lutkit's host kernels),
// or, for the rows marked "model only" in their label, of evaluating the model. published_* are
// the papers' figures the model is checked against.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>
#include <lutkit/quant/packed_weights.hpp>
#include <lutkit/targets/aie/attention.hpp>
#include <lutkit/targets/aie/dllm.hpp>
#include <lutkit/targets/aie/gemm.hpp>
#include <lutkit/targets/aie/gemv.hpp>
#include <lutkit/targets/aie/model/array.hpp>
#include <lutkit/targets/aie/model/cycles.hpp>
#include <lutkit/targets/aie/model/rates.hpp>

#include "bench_common.hpp"

namespace {
using namespace lutkit;
namespace mdl = lutkit::aie::model;

template <class Prof>
std::unique_ptr<aie::core<Prof>> new_core() {
  return std::make_unique<aie::core<Prof>>();
}
std::vector<float> randn(std::size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// ---- decode GEMV: the AIE W4A8 (mmul) and LUT-GEMV (parallel_lookup) kernels on one FusedDQP tile's
// share (M / 16 rows), the array model for the whole matrix; timed: the host's kernel
template <class Prof, bool Lut>
void bm_gemv(benchmark::State& st, std::size_t M, std::size_t K) {
  using HP = policy<fmt::uint_sym<4>, group<32>>;
  using AP = policy<fmt::uint_sym<4>, group<32>, table::lut4<int8_t, true>, target::aie>;
  const std::size_t Mt = M / 16;  // one tile's rows (FusedDQP: 16 tiles)
  const auto qa = lutkit_bench::random_quantized<AP>(Mt, K, 1);
  const auto blob = detail::pack_by_element_map<AP>(qa);
  const auto x = randn(K, 2);
  std::vector<float> y(M);
  auto c = new_core<Prof>();
  const auto s = Lut ? aie::lut_gemv<AP>(*c, blob.data(), Mt, K, x.data(), 1, y.data())
                     : aie::gemv_w4a8<AP>(*c, blob.data(), Mt, K, x.data(), 1, y.data());
  if (s != aie::status::ok) {
    st.SkipWithError(aie::status_name(s));
    return;
  }
  const auto k = mdl::cycles<Prof>(c->tr);
  mdl::npu a = mdl::xdna2();
  a.clock_ghz = Prof::clock_ghz;
  mdl::kernel_rates r;
  r.w4a8_cycles_per_weight = k.total / double(Mt * K);
  const mdl::eq1 e = mdl::fused_dqp_latency(a, r, double(M) * double(K));
  // the host's kernel on the whole matrix
  const auto wh = pack<HP>(lutkit_bench::random_quantized<HP>(M, K, 3));
  for (auto _ : st) {
    if constexpr (Lut) {
      const auto t = build_tables<HP>(x.data(), 1, K);
      lut_gemv(wh, t, y.data());
    } else {
      fused_dq_gemv<HP>(wh, x.data(), 1, K, y.data());
    }
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["aie_modelled_tile_cycles"] = k.total;
  st.counters["aie_modelled_cycles_per_weight"] = k.total / double(Mt * K);
  st.counters["aie_modelled_lookups_per_cycle"] = k.lookups ? double(k.lookups) / k.total : 0;
  st.counters["aie_modelled_array_us"] = e.latency() * 1e6;
  st.SetLabel(std::string("host time; AIE modelled on ") + Prof::name + " (one of 16 tiles; array bound: " + e.bound() + ")");
}

// ---- prefill: the INT4 -> bf16 dequant + bf16 mmul GEMM (aie2) on a 32 x 64 output tile over K;
// timed: the host's dequant-GEMM (bf16 activations) on N x M x K
void bm_dq_gemm(benchmark::State& st, std::size_t M, std::size_t K, std::size_t N) {
  using HP = policy<fmt::q4nx, group<32>>;
  using AP = policy<fmt::q4nx, group<32>, table::lut4<int8_t, true>, target::aie>;
  const auto qa = lutkit_bench::random_quantized<AP>(64, K, 1);
  const auto blob = detail::pack_by_element_map<AP>(qa);
  const auto x = randn(32 * K, 2);
  std::vector<uint16_t> xb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xb[i] = f32_to_bf16(x[i]);
  std::vector<float> yt(32 * 64);
  auto c = new_core<aie::aie2>();
  if (aie::dequant_gemm<AP>(*c, blob.data(), 64, K, xb.data(), 32, yt.data()) != aie::status::ok) {
    st.SkipWithError("aie dequant_gemm");
    return;
  }
  const auto k = mdl::cycles<aie::aie2>(c->tr);
  const double macs = 32.0 * 64.0 * double(K);
  const auto wh = pack<HP>(lutkit_bench::random_quantized<HP>(M, K, 3));
  const auto xh = randn(N * K, 4);
  std::vector<float> y(N * M);
  for (auto _ : st) {
    dequant_gemm<HP>(wh, xh.data(), N, K, y.data(), act_type::bf16);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["aie_modelled_tile_cycles"] = k.total;
  st.counters["aie_modelled_mmul_util"] = double(k.macs) / k.total;
  st.counters["aie_modelled_tile_GFLOPs"] = mdl::gflops<aie::aie2>(macs, k.total);
  st.SetLabel("host time; AIE modelled on aie2, one 32 x 64 output tile (dequant + mmul)");
}

// ---- the calibration kernels: model only (their published figures beside)
template <class Prof>
void bm_calibration(benchmark::State& st) {
  constexpr bool p2 = std::is_same_v<Prof, aie::aie2p>;
  auto run = [] {
    auto c = new_core<Prof>();
    const uint64_t macs = aie::calibration_kernel(*c, 0, uint32_t(Prof::bank_bytes * Prof::conflict_banks),
                                                  uint32_t(2 * Prof::bank_bytes * Prof::conflict_banks));
    return std::pair<uint64_t, double>(macs, mdl::cycles<Prof>(c->tr).total);
  };
  const auto [macs, total] = run();
  for (auto _ : st) {
    const auto r = run();
    benchmark::DoNotOptimize(r.first);
  }
  st.counters["aie_modelled_cycles"] = total;
  st.counters["aie_modelled_vmacs"] = double(macs);
  st.counters["aie_modelled_GFLOPs"] = mdl::gflops<Prof>(double(macs) * (p2 ? mdl::macs_bfp16_8x8x8 : mdl::macs_bf16_4x8x4), total);
  st.counters["published_instructions"] = p2 ? 800 : 288;
  st.counters["published_vmacs"] = p2 ? 768 : 256;
  st.counters["published_GFLOPs"] = p2 ? 1760 : 398;
  st.SetLabel("model only (time: running the model)");
}

// ---- attention decode (FlowKV, aie2) for one KV head: timed the host's attention_decode
void bm_attention(benchmark::State& st, std::size_t d, std::size_t L, std::size_t hq) {
  std::vector<uint16_t> K(L * d), V(L * d), Q(hq * d);
  const auto r = randn(L * d * 2 + hq * d, 5);
  for (std::size_t i = 0; i < L * d; ++i) K[i] = f32_to_bf16(r[i]), V[i] = f32_to_bf16(r[L * d + i]);
  std::vector<float> qf(hq * d), out(hq * d);
  for (std::size_t i = 0; i < hq * d; ++i) Q[i] = f32_to_bf16(r[2 * L * d + i]), qf[i] = bf16_to_f32(Q[i]);
  std::vector<int64_t> pos(hq, int64_t(L) - 1);
  aie::att_args a;
  a.q = Q.data();
  a.k = K.data();
  a.v = V.data();
  a.qpos = pos.data();
  a.n_q = hq;
  a.d = d;
  a.L = L;
  a.scale = 1.f / std::sqrt(float(d));
  a.out = out.data();
  auto c = new_core<aie::aie2>();
  if (aie::attention(*c, a) != aie::status::ok) {
    st.SkipWithError("aie attention");
    return;
  }
  const auto k = mdl::cycles<aie::aie2>(c->tr);
  attention_options o;
  o.heads_q = hq;
  o.heads_kv = 1;
  o.head_dim = d;
  o.scale = a.scale;
  kv_cache_view kv{K.data(), V.data(), kv_type::bf16, L, std::ptrdiff_t(d), 0};
  for (auto _ : st) {
    attention_decode(o, qf.data(), kv, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["aie_modelled_cycles"] = k.total;
  st.counters["aie_modelled_cycles_per_key"] = k.total / double(L);
  st.counters["aie_modelled_us"] = k.total / aie::aie2::clock_ghz / 1e3;
  st.SetLabel("host time; AIE modelled on aie2, score and value stages on one tile");
}

// ---- the dLLM step's fused max / argmax / sum-exp over one position's vocabulary
template <class Prof>
void bm_dllm(benchmark::State& st, std::size_t V) {
  const auto lg = randn(V, 6);
  auto c = new_core<Prof>();
  aie::dllm_step r;
  if (aie::dllm_max_argmax_sumexp(*c, lg.data(), V, 4096, r) != aie::status::ok) {
    st.SkipWithError("aie dllm");
    return;
  }
  const auto k = mdl::cycles<Prof>(c->tr);
  dllm_params p;
  p.mask_id = 0;
  const int32_t x = 0;
  int32_t x0 = 0;
  float conf = 0;
  const auto lv = logits_view::f32(lg.data(), 1, V);
  for (auto _ : st) {
    dllm_sample(lv, 1, 1, &x, p, &x0, &conf);
    benchmark::DoNotOptimize(conf);
  }
  st.counters["aie_modelled_cycles"] = k.total;
  st.counters["aie_modelled_logits_per_cycle"] = double(V) / k.total;
  st.counters["aie_modelled_dma_GBps"] = double(V) * 4 / (k.total / Prof::clock_ghz);
  st.SetLabel(std::string("host time (dllm_sample, B = L = 1); AIE modelled on ") + Prof::name);
}

// ---- the Gemma 3 paper's figures: model only
void bm_gemm_point(benchmark::State& st, mdl::published_gemm p) {
  const mdl::npu a = mdl::xdna2();
  const mdl::gemm_shape s{2048, 2048, 2048};
  double t = 0;
  for (auto _ : st) {
    t = mdl::tops(s, mdl::gemm_latency(a, s, p.t).latency());
    benchmark::DoNotOptimize(t);
  }
  st.counters["aie_modelled_TOPS"] = t;
  st.counters["published_TOPS"] = p.tops;
  st.SetLabel(std::string("model only; ") + (p.t.m == 512 ? "FITTED point" : "predicted") + "; bound: " +
              mdl::gemm_latency(a, s, p.t).bound());
}
const mdl::kernel_rates& rates() {
  static const mdl::kernel_rates r = mdl::measure_rates();
  return r;
}
void bm_gemma(benchmark::State& st, const mdl::gemma3* g, double ctx, double published, bool decode) {
  const mdl::npu a = mdl::xdna2();
  const double ovh = mdl::layer_overhead_ms_fitted * 1e-3;
  double v = 0;
  for (auto _ : st) {
    v = decode ? mdl::decode_token(a, rates(), *g, ctx, ovh).tok_s() : mdl::prefill(a, rates(), *g, ctx, mdl::prefill_fitted()).total_s;
    benchmark::DoNotOptimize(v);
  }
  st.counters[decode ? "aie_modelled_tok_s" : "aie_modelled_ttft_s"] = v;
  st.counters[decode ? "published_tok_s" : "published_ttft_s"] = published;
  st.counters["aie_modelled_over_published"] = v / published;
  const bool fitted = g == &mdl::gemma3_1b && (decode ? ctx == 1024 : (ctx == 1024 || ctx == 32768));
  st.SetLabel(!fitted ? "model only; predicted"
              : decode ? "model only; FITTED point (layer dispatch)"
                       : "model only; FITTED point (prefill layer fixed cost, nonlinear tile)");
}

template <class Prof>
void register_profile() {
  const std::string pn = Prof::name;
  for (auto mk : {std::pair<std::size_t, std::size_t>{2048, 2560}, {10240, 2560}}) {
    const std::string shape = std::to_string(mk.first) + "x" + std::to_string(mk.second);
    benchmark::RegisterBenchmark(("aie/w4a8_gemv/" + pn + "/w4_g32_sym/" + shape).c_str(),
                                 [=](benchmark::State& st) { bm_gemv<Prof, false>(st, mk.first, mk.second); })
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("aie/lut_gemv/" + pn + "/w4_g32_sym/" + shape).c_str(),
                                 [=](benchmark::State& st) { bm_gemv<Prof, true>(st, mk.first, mk.second); })
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark(("aie/calibration/" + pn).c_str(), bm_calibration<Prof>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("aie/dllm_step/" + pn + "/V:262144").c_str(),
                               [](benchmark::State& st) { bm_dllm<Prof>(st, 262144); })
      ->Unit(benchmark::kMicrosecond);
}

[[maybe_unused]] const bool registered = [] {
  register_profile<aie::aie2>();
  register_profile<aie::aie2p>();
  benchmark::RegisterBenchmark("aie/dequant_gemm/aie2/w4nx_g32/2560x2560/n:128",
                               [](benchmark::State& st) { bm_dq_gemm(st, 2560, 2560, 128); })
      ->Unit(benchmark::kMillisecond);
  for (std::size_t L : {1024, 4096})
    benchmark::RegisterBenchmark(("aie/attention_decode/aie2/d:256/hq:2/kv:" + std::to_string(L)).c_str(),
                                 [=](benchmark::State& st) { bm_attention(st, 256, L, 2); })
        ->Unit(benchmark::kMicrosecond);
  for (const auto& p : mdl::gemma3_gemm_points) {
    const std::string n = "aie/gemm_megatile/aie2p/2048x2048x2048/mt:" + std::to_string(int(p.t.m)) + "x" +
                          std::to_string(int(p.t.k)) + "x" + std::to_string(int(p.t.n));
    benchmark::RegisterBenchmark(n.c_str(), [=](benchmark::State& st) { bm_gemm_point(st, p); });
  }
  auto gemma = [](const mdl::gemma3* g, const mdl::published_point* pts, std::size_t n, bool decode) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::string name = std::string("aie/gemma3_") + (decode ? "decode/" : "prefill/") + g->name + "/ctx:" +
                               std::to_string(int(pts[i].x));
      const auto pt = pts[i];
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { bm_gemma(st, g, pt.x, pt.y, decode); });
    }
  };
  gemma(&mdl::gemma3_1b, mdl::gemma3_1b_decode, 6, true);
  gemma(&mdl::gemma3_4b, mdl::gemma3_4b_decode, 8, true);
  gemma(&mdl::gemma3_1b, mdl::gemma3_1b_prefill, 6, false);
  gemma(&mdl::gemma3_4b, mdl::gemma3_4b_prefill, 6, false);
  return true;
}();

}  // namespace
