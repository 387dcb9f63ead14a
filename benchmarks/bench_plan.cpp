// plan/: the cost model's time of each operator against the measured one, with a calibration of
// this host (plan::calibrate, and the kernels' own rates: plan::calibrate_decode and
// plan::calibrate_ops) taken at the start of the same run (docs/plan.md, "Validation").
//   plan_decode/<method>/<policy>/<M>x<K>/n:1/threads:<T>/cold   decode_gemv by that method
//   plan_read/<policy>/<M>x<K>/threads:<T>/cold                  a plain read of the same bytes
//   plan_prefill/<act>/<policy>/<M>x<K>/n:128/threads:<T>/warm   dequant_gemm by that paradigm
//   plan_attention/decode/ctx:<C>/threads:<T>/cold               attention_decode, 32 / 8 heads of 64
//   plan_attention/prefill/q:<n>/ctx:<C>/threads:<T>             attention_prefill of n queries
//   plan_sampling/ar/B:<B>/V:<V>/<chain>/<pass>/threads:<T>/cold ar_sample of B rows by a chain
//   plan_sampling/dllm/B:<B>/L:<L>/V:<V>/<type>/threads:<T>/cold dllm_sample of B x L positions
// Counters: modelled_us (the model's time), model_ratio (modelled / measured). At exit, a table of
// the same (medians where --benchmark_repetitions > 1), then the plan the model and the measured
// errors choose per shape for a few error budgets. Nothing here asserts.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>
#include <lutkit/plan/calibrate.hpp>
#include <lutkit/plan/calibrate_decode.hpp>
#include <lutkit/plan/calibrate_ops.hpp>
#include <lutkit/plan/chooser.hpp>

#include "bench_common.hpp"

namespace {
using namespace lutkit;
using i8 = table::lut4<int8_t, false>;
using Q4_0 = policy<fmt::uint_sym<4>, group<32>, i8>;  // the suite's Q4_0 (benchmarks/bench_decode.cpp)
using W2 = policy<fmt::uint_asym<2>, group<64>, i8>;   // a LUT policy (2 bits: the LUT-GEMV's home)

plan::calibration g_cal;
std::map<std::string, double> g_modelled;  // benchmark name -> modelled seconds

thread_pool& pool_for(int threads) {
  static std::map<int, std::unique_ptr<thread_pool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<thread_pool>(std::size_t(threads));
  return *p;
}

template <class P>
packed_weights<P> random_blob(std::size_t M, std::size_t K, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 0.02f);
  std::vector<float> w(M * K);
  for (auto& v : w) v = nd(rng);
  return pack<P>(quantize<P>(w.data(), M, K));
}

// the cold rotation of a blob (bench_common.hpp), as the suite's cold decode benchmarks
template <class P>
std::vector<packed_weights<P>>& copies(std::size_t M, std::size_t K) {
  static std::unique_ptr<packed_weights<P>> first;
  static std::size_t m0 = 0, k0 = 0;
  if (!first || m0 != M || k0 != K) {
    first = std::make_unique<packed_weights<P>>(random_blob<P>(M, K, M * 7 + K));
    m0 = M;
    k0 = K;
  }
  return lutkit_bench::cold_blobs("plan", *first);
}

void set_model(benchmark::State& st, const std::string& name) {
  const double s = g_modelled[name];
  st.counters["modelled_us"] = s * 1e6;
  st.counters["model_ratio"] = benchmark::Counter(s, benchmark::Counter::kIsIterationInvariantRate);
}

template <class P>
void bm_decode(benchmark::State& st, const std::string& name, decode_method m, std::size_t M, std::size_t K, int T) {
  auto& cs = copies<P>(M, K);
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> x(K), y(M);
  for (auto& v : x) v = nd(rng);
  thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
  std::size_t i = 0;
  for (auto _ : st) {
    decode_gemv<P>(cs[i++ % cs.size()], x.data(), 1, K, y.data(), m, 0, 0, pool);
    benchmark::DoNotOptimize(y.data());
  }
  set_model(st, name);
}

template <class P>
void bm_read(benchmark::State& st, const std::string& name, std::size_t M, std::size_t K, int T) {
  auto& cs = copies<P>(M, K);
  const auto loops = plan::detail::host_calibration_loops();
  thread_pool& pool = pool_for(T);
  std::vector<int64_t> sink(std::size_t(T) * 8);
  std::size_t i = 0;
  for (auto _ : st) {
    const auto& w = cs[i++ % cs.size()];
    const std::size_t part = w.size_bytes() / std::size_t(T) / 256 * 256;
    pool.run(std::size_t(T), [&](std::size_t t) { loops.read(w.bytes() + t * part, part, &sink[t * 8]); });
    benchmark::DoNotOptimize(sink.data());
  }
  set_model(st, name);
}

template <class P>
void register_policy(std::size_t M, std::size_t K) {
  const plan::matmul_op op = plan::describe_matmul<P>(M, K, 1);
  const std::string shape = "/" + std::to_string(M) + "x" + std::to_string(K);
  for (int T : {1, 2}) {
    if (T > g_cal.costs.cores) continue;
    const std::string th = "/threads:" + std::to_string(T) + "/cold";
    const std::string rn = "plan_read/" + P::name() + shape + th;
    // the read alone: the DRAM terms of Eq. 1 (shared sum, the core's own read)
    plan::workload rw;
    const std::size_t Tn = std::size_t(T);
    for (std::size_t t = 0; t < Tn; ++t) {
      plan::core_work cw;
      cw[plan::resource::dram] = cw[plan::resource::core_read] = double(op.blob_bytes) / double(T);
      rw.cores.push_back(cw);
    }
    rw.overhead_s = T > 1 ? g_cal.costs.fork_join_s : 0;
    g_modelled[rn] = plan::evaluate(g_cal.costs, rw).total_s;
    benchmark::RegisterBenchmark(rn.c_str(), [=](benchmark::State& st) { bm_read<P>(st, rn, M, K, T); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    for (decode_method m : plan::valid_decode_methods<P>(1)) {
      const std::string name = "plan_decode/" + std::string(decode_method_name(m)) + "/" + P::name() + shape + "/n:1" + th;
      g_modelled[name] = plan::model_decode(g_cal.costs, op, m, T).total_s;
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { bm_decode<P>(st, name, m, M, K, T); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}

// prefill GEMM: N = 128 rows, weights warm (one blob), by paradigm
template <class P>
void register_prefill(std::size_t M, std::size_t K, act_type act) {
  constexpr std::size_t N = 128;
  const plan::matmul_op op = plan::describe_matmul<P>(M, K, N);
  for (int T : {1, 2}) {
    if (T > g_cal.costs.cores) continue;
    const std::string name = "plan_prefill/" + std::string(act_name(act)) + "/" + P::name() + "/" + std::to_string(M) + "x" +
                             std::to_string(K) + "/n:128/threads:" + std::to_string(T) + "/warm";
    g_modelled[name] = plan::model_prefill(g_cal.costs, op, act, T).total_s;
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
      const auto w = random_blob<P>(M, K, M * 7 + K);
      std::mt19937_64 rng(5);
      std::normal_distribution<float> nd;
      std::vector<float> x(N * K), y(N * M);
      for (auto& v : x) v = nd(rng);
      thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
      for (auto _ : st) {
        dequant_gemm<P>(w, x.data(), N, K, y.data(), act, 0, 0, pool);
        benchmark::DoNotOptimize(y.data());
      }
      set_model(st, name);
    })->Unit(benchmark::kMicrosecond)->UseRealTime();
  }
}

// attention over a Llama-3.2-1B-shaped layer (32 / 8 heads of 64, fp16 K / V): decode at a
// context (rotating copies of the cache beyond the LLC), prefill of n queries ending it
void register_attention(std::size_t queries, std::size_t ctx) {
  constexpr std::size_t hq = 32, hkv = 8, d = 64;
  plan::attention_op a;
  a.heads = hq, a.kv_heads = hkv, a.head_dim = d, a.context = ctx, a.queries = queries;
  for (int T : {1, 2}) {
    if (T > g_cal.costs.cores) continue;
    const std::string name = queries == 1 ? "plan_attention/decode/ctx:" + std::to_string(ctx) + "/threads:" + std::to_string(T) + "/cold"
                                          : "plan_attention/prefill/q:" + std::to_string(queries) + "/ctx:" + std::to_string(ctx) +
                                                "/threads:" + std::to_string(T);
    g_modelled[name] = plan::model_attention(g_cal.costs, a, T).total_s;
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
      attention_options o;
      o.heads_q = hq, o.heads_kv = hkv, o.head_dim = d, o.scale = 0.125f;
      std::mt19937_64 rng(9);
      std::normal_distribution<float> nd;
      const std::size_t n = 2 * hkv * ctx * d;
      std::vector<std::vector<uint16_t>> cs(queries == 1 ? lutkit_bench::cold_count(2 * n) : 1);
      cs[0].resize(n);
      for (auto& v : cs[0]) v = f32_to_f16(nd(rng));
      for (std::size_t i = 1; i < cs.size(); ++i) cs[i] = cs[0];
      std::vector<float> q(queries * hq * d), out(queries * hq * d);
      for (auto& v : q) v = nd(rng);
      thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
      std::size_t i = 0;
      for (auto _ : st) {
        const auto& c = cs[i++ % cs.size()];
        kv_cache_view v;
        v.k = c.data();
        v.v = c.data() + hkv * ctx * d;
        v.type = kv_type::f16;
        v.len = ctx;
        v.row_stride = std::ptrdiff_t(d);
        v.head_stride = std::ptrdiff_t(ctx * d);
        if (queries == 1) attention_decode(o, q.data(), v, out.data(), nullptr, pool);
        else attention_prefill(o, q.data(), queries, int64_t(ctx - queries), v, out.data(), nullptr, nullptr, 0, pool);
        benchmark::DoNotOptimize(out.data());
      }
      set_model(st, name);
    })->Unit(benchmark::kMicrosecond)->UseRealTime();
  }
}

// the sampling shapes of the suite (benchmarks/bench_sampling.cpp), cold: ar_sample of B rows
// of V logits by a chain, dllm_sample of B x L positions of V logits of a type
void register_ar(std::size_t B, std::size_t V, const char* chain_name, int top_k, int T) {
  ar_params p;
  p.temperature = 0.8f;
  p.top_k = top_k;
  p.top_p = 0.95f;
  const plan::sampling_op s = plan::describe_ar_sampling(p, V, B);
  const std::string name = "plan_sampling/ar/B:" + std::to_string(B) + "/V:" + std::to_string(V) + "/" + chain_name +
                           "/" + plan::sampling_pass_name(s.pass) + "/threads:" + std::to_string(T) + "/cold";
  g_modelled[name] = plan::model_sampling(g_cal.costs, s, T).total_s;
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
    const std::vector<float> row = plan::detail::peaked_logits(V, 13);
    const auto rot = plan::detail::make_logit_rotation(logit_type::f32, row, cold_bytes());
    thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
    std::vector<ar_params> ps(B, p);
    std::vector<int32_t> tok(B);
    std::size_t i = 0;
    for (auto _ : st) {
      for (auto& q : ps) q.seed = i;
      ar_sample(rot.view_rows(i, B), ps.data(), tok.data(), pool);
      i += B;
      benchmark::DoNotOptimize(tok.data());
    }
    set_model(st, name);
  })->Unit(benchmark::kMicrosecond)->UseRealTime();
}
void register_dllm(std::size_t B, std::size_t L, std::size_t V, logit_type type, int T) {
  dllm_params p;
  p.mask_id = int32_t(V - 1);
  const plan::sampling_op s = plan::describe_dllm_sampling(p, B * L, V, type);
  const std::string name = "plan_sampling/dllm/B:" + std::to_string(B) + "/L:" + std::to_string(L) + "/V:" +
                           std::to_string(V) + "/" + logit_type_name(type) + "/threads:" + std::to_string(T) + "/cold";
  g_modelled[name] = plan::model_sampling(g_cal.costs, s, T).total_s;
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
    const std::vector<float> row = plan::detail::peaked_logits(V, 17);
    const auto rot = plan::detail::make_logit_rotation(type, row, cold_bytes());
    thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
    std::vector<int32_t> x(B * L), x0(B * L);
    std::vector<float> conf(B * L);
    dllm_params q = p;
    std::size_t i = 0;
    for (auto _ : st) {
      std::fill(x.begin(), x.end(), p.mask_id);
      q.seed = i;
      dllm_sample(rot.view_rows(i, B * L), B, L, x.data(), q, x0.data(), conf.data(), pool);
      i += B * L;
      benchmark::DoNotOptimize(conf.data());
    }
    set_model(st, name);
  })->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// the plan per shape: errors measured on one activation row against the double reference
template <class P>
void print_plans(std::size_t M, std::size_t K) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> nd;
  std::vector<float> x(K);
  for (auto& v : x) v = nd(rng);
  for (std::size_t i = 0; i < K; i += 97) x[i] *= 20;  // outlier channels, as LLM hidden states have
  const auto w = random_blob<P>(M, K, M * 7 + K);
  for (double budget : {1e-3, 1e-2, 3e-2}) {
    try {
      const plan::decode_plan p = plan::plan_decode<P>(g_cal.costs, w, x.data(), 1, budget);
      std::printf("%-16s %5zux%-5zu budget %.0e: %-8s threads %d, modelled %8.1f us, error %.2e   (", P::name().c_str(), M,
                  K, budget, decode_method_name(p.chosen.method), p.chosen.threads, p.chosen.modelled_s * 1e6, p.chosen.error);
      for (const auto& c : p.candidates)
        std::printf(" %s %.1f us %.2e", decode_method_name(c.method), c.modelled_s * 1e6, c.error);
      std::printf(" )\n");
    } catch (const lutkit::error& e) {
      std::printf("%-16s %5zux%-5zu budget %.0e: %s\n", P::name().c_str(), M, K, budget, e.what());
    }
  }
}

// keeps each benchmark's real time (the median aggregate with repetitions) for the closing table
class collecting_reporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> measured_s;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const bool agg = r.run_type == Run::RT_Aggregate;
      if (agg && r.aggregate_name != "median") continue;
      if (!agg && r.repetitions > 1) continue;
      measured_s[r.run_name.function_name] = r.GetAdjustedRealTime() * 1e-6;  // microseconds
    }
    ConsoleReporter::ReportRuns(runs);
  }
};
}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  g_cal = plan::calibrate();
  const auto t1 = std::chrono::steady_clock::now();
  plan::calibrate_decode<Q4_0>(g_cal.costs);
  plan::calibrate_decode<W2>(g_cal.costs);
  const auto t2 = std::chrono::steady_clock::now();
  for (act_type a : {act_type::int8_group, act_type::int8}) plan::calibrate_prefill<Q4_0>(g_cal.costs, a);
  plan::calibrate_attention(g_cal.costs);
  plan::calibrate_sampling(g_cal.costs);
  const auto t3 = std::chrono::steady_clock::now();
  std::printf("%s", plan::to_text(g_cal).c_str());
  std::printf("# calibrate: %.0f ms; calibrate_decode (2 policies): %.0f ms; calibrate_prefill (2 paradigms), "
              "calibrate_attention, calibrate_sampling: %.0f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(), std::chrono::duration<double, std::milli>(t2 - t1).count(),
              std::chrono::duration<double, std::milli>(t3 - t2).count());
  for (auto [M, K] : {std::pair<std::size_t, std::size_t>{4096, 4096}, {4096, 14336}}) {
    register_policy<Q4_0>(M, K);
    register_policy<W2>(M, K);
  }
  for (act_type a : {act_type::int8_group, act_type::int8}) {
    register_prefill<Q4_0>(4096, 4096, a);
    register_prefill<Q4_0>(2048, 8192, a);
  }
  register_attention(1, 512);
  register_attention(1, 4096);
  register_attention(128, 512);
  register_attention(512, 512);
  for (int T : {1, 2}) {
    for (std::size_t B : {std::size_t(1), std::size_t(16)}) {
      register_ar(B, 151936, "topk40_topp0.95_T0.8", 40, T);
      register_ar(B, 151936, "topp0.95_T0.8", 0, T);
    }
    for (logit_type t : {logit_type::f32, logit_type::bf16, logit_type::mxfp8}) register_dllm(16, 32, 126464, t, T);
  }
  collecting_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  std::printf("\n%-64s %12s %12s %8s\n", "benchmark", "measured us", "modelled us", "ratio");
  for (const auto& [name, s] : rep.measured_s) {
    const auto it = g_modelled.find(name);
    if (it == g_modelled.end()) continue;
    std::printf("%-64s %12.1f %12.1f %8.2f\n", name.c_str(), s * 1e6, it->second * 1e6, it->second / s);
  }
  std::printf("\n");
  for (auto [M, K] : {std::pair<std::size_t, std::size_t>{4096, 4096}, {4096, 14336}}) {
    print_plans<Q4_0>(M, K);
    print_plans<W2>(M, K);
  }
  benchmark::Shutdown();
  return 0;
}
