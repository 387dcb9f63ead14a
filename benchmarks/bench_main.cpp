// lutkit benchmark suite (Google Benchmark, one binary). Everything is measured side by side
// in one run: the DRAM read bandwidth (the roofline), lutkit's LUT-GEMV (tables built inside
// the timed region), and our own baselines on the same shapes: a float GEMV on dequantized
// weights and a dequantize-then-dot low-bit GEMV (T-MAN's ConvertDQ).
//
// Names: <kernel>/<policy>/<M>x<K>/n:<N>/threads:<T>/<cold|warm>
//   cold: rotate over enough weight copies to exceed twice the last-level cache (cold_count)
//   warm: one matrix, cache-resident when it fits
// Counters: weight_GBps (packed bytes read / time), GFLOPs (2*M*K*N / time), roofline
// (bytes / measured DRAM bandwidth at the same thread count / time; 1.0 = at the limit).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>

#include "baselines.hpp"
#include "bench_common.hpp"
#ifndef LUTKIT_BENCH_NO_XSIMD
#include "bench_xsimd.hpp"
#endif

lutkit::thread_pool& lutkit_bench::pool_for(int threads) {
  static std::map<int, std::unique_ptr<lutkit::thread_pool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<lutkit::thread_pool>(std::size_t(threads));
  return *p;
}

namespace {
using namespace lutkit;
using i8 = table::lut4<int8_t, false>;

std::map<int, double> g_dram_bps;  // threads -> best measured read bandwidth (bytes/s)

using lutkit_bench::pool_for;

using lutkit_bench::cold_count;

void set_counters(benchmark::State& st, double bytes, double flops, int threads) {
  st.counters["weight_GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double bw = g_dram_bps.count(threads) ? g_dram_bps[threads] : 0.0;
  // roofline fraction = (bytes / bw) / time_per_iter, i.e. a rate of (bytes/bw) "seconds"
  if (bw > 0) st.counters["roofline"] = benchmark::Counter(bytes / bw, benchmark::Counter::kIsIterationInvariantRate);
}

// ------------------------------------------------------------------ DRAM roofline
void bm_dram_read(benchmark::State& st, int threads) {
  // the best of plain streaming and streaming with a non-temporal prefetch 16 KiB ahead (the
  // kernel's own method), over a huge-page buffer like the packed weights
  const std::size_t bytes = std::size_t(1) << 30;
  auto mem = detail::alloc_aligned(bytes);
  uint64_t* buf = reinterpret_cast<uint64_t*>(mem.get());
  const std::size_t words = bytes / 8;
  for (std::size_t i = 0; i < words; ++i) buf[i] = i * 0x9E3779B97F4A7C15ull;
  thread_pool& pool = pool_for(threads);
  double best = 0;
  int iter = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t sink[8] = {};
    const std::size_t pf = (iter++ % 2) ? 16384 : 0;
    pool.run(std::size_t(threads), [&](std::size_t i) {
      const std::size_t n = words / std::size_t(threads);
      sink[i] = lutkit_bench::read_bandwidth(buf + i * n, n, pf);
    });
    benchmark::DoNotOptimize(sink);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(bytes) / s);
  }
  g_dram_bps[threads] = best;
  st.counters["weight_GBps"] = best * 1e-9;
  st.SetLabel("best-of-iterations read bandwidth");
}

// ------------------------------------------------------------------ lutkit LUT-GEMV
template <class P>
struct lut_case {
  std::size_t M, K;
  std::unique_ptr<packed_weights<P>> first;
  std::vector<packed_weights<P>>* cold = nullptr;  // the process's cold rotation (bench_common.hpp)
};

template <class P>
lut_case<P>& lut_data(std::size_t M, std::size_t K, bool cold) {
  static std::unique_ptr<lut_case<P>> cache;  // one shape at a time keeps memory bounded
  if (!cache || cache->M != M || cache->K != K) {
    cache.reset();
    auto c = std::make_unique<lut_case<P>>();
    c->M = M;
    c->K = K;
    c->first = std::make_unique<packed_weights<P>>(pack<P>(lutkit_bench::random_quantized<P>(M, K, M * 31 + K)));
    cache = std::move(c);
  }
  cache->cold = nullptr;
  if (cold) {
    const auto& f = *cache->first;
    cache->cold = &lutkit_bench::cold_blobs("lut_gemv", f);
  }
  return *cache;
}

template <class P>
void bm_lut_gemv(benchmark::State& st, std::size_t M, std::size_t K, std::size_t N, int threads, bool cold) {
  auto& c = lut_data<P>(M, K, cold);
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> x(N * K), y(N * M);
  for (auto& v : x) v = nd(rng);
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  std::size_t i = 0;
  for (auto _ : st) {
    const auto& w = cold ? (*c.cold)[i++ % c.cold->size()] : *c.first;
    const auto t = build_tables<P>(x.data(), N, K);
    lut_gemv<P>(w, t, y.data(), 0, pool);
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(st, double(c.first->size_bytes()), 2.0 * double(M) * K * N, threads);
}

// The practical roofline of one cold GEMV: a plain streaming read (no compute) of exactly the
// bytes of the same cold weight copies, split over the same pool the way the kernel splits its
// rows. A one-shot read of a few tens of MB runs below the 1 GiB dram_read figure (thread
// wake-up, the ramp of the hardware prefetcher at every page and tile start), and this is the
// time the LUT-GEMV is compared against in the summary ("vs stream").
// stream_read_dot: the same read with the least work a decode does per byte (pooled_read's dot).
template <class P>
void bm_stream_read(benchmark::State& st, std::size_t M, std::size_t K, int threads, bool dot) {
  auto& c = lut_data<P>(M, K, true);
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  std::size_t i = 0;
  for (auto _ : st) {
    const auto& w = (*c.cold)[i++ % c.cold->size()];
    lutkit_bench::pooled_read(w.bytes(), w.size_bytes(), pool, threads, dot);
  }
  set_counters(st, double(c.first->size_bytes()), 0.0, threads);
}

template <class P>
void bm_lut_precompute(benchmark::State& st, std::size_t K, std::size_t N) {
  std::vector<float> x(N * K, 0.5f);
  for (auto _ : st) {
    auto t = build_tables<P>(x.data(), N, K);
    benchmark::DoNotOptimize(t.entries(0));
  }
}

// ------------------------------------------------------------------ baselines
struct dense_case {
  std::size_t M = 0, K = 0;
  std::vector<std::vector<float>> copies;
};
void bm_float_gemv(benchmark::State& st, std::size_t M, std::size_t K, std::size_t N, int threads, bool cold) {
  static dense_case c;
  if (c.M != M || c.K != K) {
    c = dense_case{};
    c.M = M;
    c.K = K;
  }
  const std::size_t bytes = M * K * 4;
  const std::size_t want = cold ? cold_count(bytes) : 1;
  while (c.copies.size() < want) c.copies.emplace_back(M * K, 0.01f);
  std::vector<float> x(N * K, 1.f), y(N * M);
  thread_pool& pool = pool_for(threads);
  std::size_t i = 0;
  for (auto _ : st) {
    const float* W = c.copies[i++ % want].data();
    pool.run(std::size_t(threads), [&](std::size_t p) {
      lutkit_bench::float_gemv(W, x.data(), y.data(), M, K, N, M * p / threads, M * (p + 1) / threads);
    });
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(st, double(bytes), 2.0 * double(M) * K * N, threads);
}

void bm_convert_dq(benchmark::State& st, int bits, std::size_t M, std::size_t K, std::size_t N, int threads, bool cold) {
  const std::size_t G = 64;
  const std::size_t bytes = M * K * bits / 8 + M * (K / G) * 4;
  const std::size_t want = cold ? cold_count(bytes) : 1;
  std::vector<std::vector<uint8_t>> codes(want, std::vector<uint8_t>(M * K * bits / 8, 0x5A));
  std::vector<std::vector<uint16_t>> sz(want, std::vector<uint16_t>(M * (K / G) * 2, f32_to_f16(0.01f)));
  std::vector<float> x(N * K, 1.f), y(N * M);
  thread_pool& pool = pool_for(threads);
  std::size_t i = 0;
  for (auto _ : st) {
    const std::size_t j = i++ % want;
    pool.run(std::size_t(threads), [&](std::size_t p) {
      lutkit_bench::convert_dq_gemv(bits, codes[j].data(), sz[j].data(), x.data(), y.data(), M, K, G, N,
                                    M * p / threads, M * (p + 1) / threads);
    });
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(st, double(bytes), 2.0 * double(M) * K * N, threads);
}

std::string shape_name(std::size_t M, std::size_t K) { return std::to_string(M) + "x" + std::to_string(K); }
std::string tail(std::size_t M, std::size_t K, std::size_t N, int T, bool cold) {
  return shape_name(M, K) + "/n:" + std::to_string(N) + "/threads:" + std::to_string(T) + (cold ? "/cold" : "/warm");
}

template <class P>
void register_lut(std::size_t M, std::size_t K, std::size_t N, int T, bool cold) {
  benchmark::RegisterBenchmark(("lut_gemv/" + P::name() + "/" + tail(M, K, N, T, cold)).c_str(),
                               [=](benchmark::State& st) { bm_lut_gemv<P>(st, M, K, N, T, cold); })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  if (cold && N == 1)  // right after its GEMV: the same cached cold copies
    for (bool dot : {false, true})
      benchmark::RegisterBenchmark(((dot ? "stream_read_dot/" : "stream_read/") + P::name() + "/" + tail(M, K, N, T, cold)).c_str(),
                                   [=](benchmark::State& st) { bm_stream_read<P>(st, M, K, T, dot); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
}

using W1 = policy<fmt::uint_sym<1>, group<64>, i8>;
using W2 = policy<fmt::uint_asym<2>, group<64>, i8>;
using W3 = policy<fmt::uint_asym<3>, group<64>, i8>;
using W4 = policy<fmt::uint_asym<4>, group<64>, i8>;
using TERN = policy<fmt::ternary, per_tensor, i8>;

void register_all() {
  for (int T : {1, 2})
    benchmark::RegisterBenchmark(("dram_read/bytes:1GiB/threads:" + std::to_string(T)).c_str(),
                                 [T](benchmark::State& st) { bm_dram_read(st, T); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(8);
  const std::pair<std::size_t, std::size_t> shapes[] = {{4096, 14336}, {4096, 4096}, {14336, 4096}, {2560, 6912}};
  for (auto [M, K] : shapes)
    for (std::size_t N : {1, 4, 16})
      for (int T : {1, 2})
        for (bool cold : {true, false}) {
          register_lut<W2>(M, K, N, T, cold);
          register_lut<TERN>(M, K, N, T, cold);
          register_lut<W4>(M, K, N, T, cold);
          register_lut<W1>(M, K, N, T, cold);
          register_lut<W3>(M, K, N, T, cold);
#ifndef LUTKIT_BENCH_NO_XSIMD
          lutkit_bench::register_xsimd(M, K, N, T, cold, &g_dram_bps[T]);
#endif
          for (int bits : {2, 4})
            benchmark::RegisterBenchmark(
                ("convert_dq/w" + std::to_string(bits) + "_g64_asym_rowmajor/" + tail(M, K, N, T, cold)).c_str(),
                [=](benchmark::State& st) { bm_convert_dq(st, bits, M, K, N, T, cold); })
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
          if (cold)
            benchmark::RegisterBenchmark(("float_gemv/f32_dense/" + tail(M, K, N, T, cold)).c_str(),
                                         [=](benchmark::State& st) { bm_float_gemv(st, M, K, N, T, cold); })
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
        }
  for (std::size_t N : {1, 16}) {
    benchmark::RegisterBenchmark(("lut_precompute/" + W2::name() + "/k:14336/n:" + std::to_string(N)).c_str(),
                                 [=](benchmark::State& st) { bm_lut_precompute<W2>(st, 14336, N); })
        ->Unit(benchmark::kMicrosecond);
  }
}
}  // namespace

int main(int argc, char** argv) {
  register_all();
  lutkit_bench::register_prefill();
  lutkit_bench::register_decode();
  lutkit_bench::register_attention();
  lutkit_bench::register_sampling();
  lutkit_bench::register_load();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
