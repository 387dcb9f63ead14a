// The xsimd backend in the same benchmark binary: the same policies, shapes and blob layout as
// lut_gemv/, run through lutkit::xsimd_backend on xsimd::avx2. This translation unit alone is
// compiled with the AVX2 flags xsimd needs (AVX2 rather than AVX-512: an inline function the
// linker keeps from this unit must run on every x86-64 machine the benchmark runs on); it
// registers nothing on CPUs without AVX2.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>
#include <lutkit/targets/xsimd/lut_gemv_xsimd.hpp>

#include "bench_common.hpp"
#include "bench_xsimd.hpp"

namespace {
using namespace lutkit;

template <class P>
void bm(benchmark::State& st, std::size_t M, std::size_t K, std::size_t N, int T, bool cold, double dram_bps) {
  static std::unique_ptr<packed_weights<P>> first;
  static std::size_t cM = 0, cK = 0;
  if (!first || cM != M || cK != K) {
    first.reset();
    std::mt19937_64 rng(M * 31 + K);
    constexpr int maxq = format_traits<typename P::format>::max_code;
    std::uniform_int_distribution<int> cd(0, maxq);
    std::vector<uint8_t> codes(M * K);
    for (auto& v : codes) v = uint8_t(cd(rng));
    const std::size_t groups = P::spec.group_k > 0 ? K / P::spec.group_k : 1;
    std::vector<float> s(M * groups, 0.02f), z(M * groups, 1.f);
    first = std::make_unique<packed_weights<P>>(pack<P>(from_codes<P>(codes.data(), s.data(), z.data(), M, K)));
    cM = M;
    cK = K;
  }
  const std::size_t bytes = first->size_bytes();
  std::vector<packed_weights<P>>* cold_set = nullptr;
  if (cold)
    cold_set = &lutkit_bench::cold_blobs("lut_gemv_xsimd", *first);
  std::vector<float> x(N * K, 0.5f), y(N * M);
  static thread_pool pool2(2);
  thread_pool* pool = T > 1 ? &pool2 : nullptr;
  std::size_t i = 0;
  for (auto _ : st) {
    const auto t = build_tables<P>(x.data(), N, K);
    xsimd_backend::lut_gemv<xsimd::avx2>(cold_set ? (*cold_set)[i++ % cold_set->size()] : *first, t, y.data(), 0, pool);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["weight_GBps"] = benchmark::Counter(double(bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOPs"] = benchmark::Counter(2e-9 * double(M) * K * N, benchmark::Counter::kIsIterationInvariantRate);
  if (dram_bps > 0)
    st.counters["roofline"] = benchmark::Counter(double(bytes) / dram_bps, benchmark::Counter::kIsIterationInvariantRate);
}

template <class P>
void reg(std::size_t M, std::size_t K, std::size_t N, int T, bool cold, const double* dram_bps) {
  const std::string name = "lut_gemv_xsimd/" + P::name() + "/" + std::to_string(M) + "x" + std::to_string(K) +
                           "/n:" + std::to_string(N) + "/threads:" + std::to_string(T) + (cold ? "/cold" : "/warm");
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { bm<P>(st, M, K, N, T, cold, *dram_bps); })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}
}  // namespace

namespace lutkit_bench {
void register_xsimd(std::size_t M, std::size_t K, std::size_t N, int T, bool cold, const double* dram_bps) {
  if (!__builtin_cpu_supports("avx2")) return;
  using i8 = table::lut4<int8_t, false>;
  reg<policy<fmt::uint_asym<2>, group<64>, i8>>(M, K, N, T, cold, dram_bps);
  reg<policy<fmt::ternary, per_tensor, i8>>(M, K, N, T, cold, dram_bps);
}
}  // namespace lutkit_bench
