// plan/: the cost model's decode GEMV time against the measured one, with a calibration of this
// host (plan::calibrate, and the kernels' own rates: plan::calibrate_decode) taken at the start
// of the same run (docs/plan.md, "Validation").
//   plan_decode/<method>/<policy>/<M>x<K>/n:1/threads:<T>/cold   decode_gemv by that method
//   plan_read/<policy>/<M>x<K>/threads:<T>/cold                  a plain read of the same bytes
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
#include <lutkit/plan/chooser.hpp>

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

// rotating copies beyond 4x a 32 MiB LLC, as the suite's cold decode benchmarks
template <class P>
std::vector<packed_weights<P>>& copies(std::size_t M, std::size_t K) {
  static std::vector<packed_weights<P>> c;
  static std::size_t m0 = 0, k0 = 0;
  if (c.empty() || m0 != M || k0 != K) {
    c.clear();
    c.push_back(random_blob<P>(M, K, M * 7 + K));
    m0 = M;
    k0 = K;
    const std::size_t want = std::max<std::size_t>(2, (std::size_t(128) << 20) / c[0].size_bytes() + 2);
    while (c.size() < want) c.push_back(packed_weights<P>::from_bytes(c[0].bytes(), c[0].size_bytes()));
  }
  return c;
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
  std::printf("%s", plan::to_text(g_cal).c_str());
  std::printf("# calibrate: %.0f ms; calibrate_decode (2 policies): %.0f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(), std::chrono::duration<double, std::milli>(t2 - t1).count());
  for (auto [M, K] : {std::pair<std::size_t, std::size_t>{4096, 4096}, {4096, 14336}}) {
    register_policy<Q4_0>(M, K);
    register_policy<W2>(M, K);
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
