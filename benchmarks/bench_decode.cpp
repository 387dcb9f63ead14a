// Decode GEMV (y = W x, N activation rows) through each decode_method on imported-format blobs,
// beside a plain read of the same cold weight bytes (the practical roofline).
//   decode_gemv/<method>/<policy>/4096x14336/n:<N>/threads:<T>/cold
//   decode_read/<policy>/4096x14336/threads:<T>/cold   a plain read of the same copies, same pool
//   decode_read_dot/...  the same read with the least work a decode does per byte (pooled_read's
//                        dot): the rate a stream keeps when the core also computes
// Tile-group weights (W4 asym, HMX geometry) run tile_group_gemv under the same names, policy
// w4_g32_asym_tilegroup_hmx (methods int8 and fused_dq).
// cold: rotating copies of the blob beyond twice the LLC (bench_common.hpp, cold_count). Counter
// weight_GBps: blob bytes / time. The summary's "vs read" column divides the read's time by the kernel's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>

#include "baselines.hpp"
#include "bench_common.hpp"

namespace lutkit_bench {
namespace {
using namespace lutkit;
using i8 = table::lut4<int8_t, false>;
using Q4_0 = policy<fmt::uint_sym<4>, group<32>, i8>;
using Q8_0 = policy<fmt::uint_sym<8>, group<32>, i8>;
using IQ4NL = policy<fmt::codebook4<book::iq4_nl>, group<32>, i8>;
using NF4 = policy<fmt::codebook4<book::nf4>, group<64>, i8>;
using Q4NX = policy<fmt::q4nx, group<32>, i8>;
using W4 = policy<fmt::uint_asym<4>, group<64>, i8>;
using W2 = policy<fmt::uint_asym<2>, group<64>, i8>;
// the other llama.cpp types (Q4_1, Q5_0, Q5_1, Q2_K ... Q6_K, and TQ2_0 / TQ1_0's policy), default tables
// (table::default_for: int16 mirrored but for Q2_K, Q3_K, Q6_K); Q4_0 with its default tables too, and
// Q4_0, Q5_1 and TQ with the faster int8 opt-in (mirrored) beside them
using Q4_1 = policy<fmt::q4_1, group<32>>;
using Q5_0 = policy<fmt::uint_sym<5>, group<32>>;
using Q4K = policy<fmt::q4_k, group<32>>;
using Q6K = policy<fmt::q6_k, group<16>>;
using Q3K = policy<fmt::q3_k, group<16>>;
using Q5_1 = policy<fmt::q5_1, group<32>>;
using Q5K = policy<fmt::q5_k, group<32>>;
using Q2K = policy<fmt::q2_k, group<16>>;
using TQ = policy<fmt::uint_asym<2>, group<256>>;
using Q4_0d = policy<fmt::uint_sym<4>, group<32>>;
using Q4_0i8 = policy<fmt::uint_sym<4>, group<32>, table::lut4<int8_t, true>>;
using Q5_1i8 = policy<fmt::q5_1, group<32>, table::lut4<int8_t, true>>;
using TQi8 = policy<fmt::uint_asym<2>, group<256>, table::lut4<int8_t, true>>;

// the policy's blob per shape (kept: packing is the slow part) and its cold rotation
template <class P>
const packed_weights<P>& decode_blob(std::size_t M, std::size_t K) {
  static std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<packed_weights<P>>> blobs;
  auto& b = blobs[{M, K}];
  if (!b) b = std::make_unique<packed_weights<P>>(pack<P>(random_quantized<P>(M, K, M * 7 + K)));
  return *b;
}
template <class P>
std::vector<packed_weights<P>>& decode_copies(std::size_t M, std::size_t K) {
  const auto& b = decode_blob<P>(M, K);
  return lutkit_bench::cold_blobs("decode", b);
}

// the timed loop of a decode kernel over rotating cold copies: run(copy, x, y, pool)
template <class Copies, class Run>
void decode_loop(benchmark::State& st, const Copies& copies, std::size_t M, std::size_t K, std::size_t N, int T, Run run) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> x(N * K), y(N * M);
  for (auto& v : x) v = nd(rng);
  thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
  std::size_t i = 0;
  for (auto _ : st) {
    run(copies[i++ % copies.size()], x.data(), y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["weight_GBps"] = benchmark::Counter(double(copies[0].size_bytes()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

template <class P>
void bm_decode(benchmark::State& st, decode_method method, std::size_t M, std::size_t K, std::size_t N, int T) {
  decode_loop(st, decode_copies<P>(M, K), M, K, N, T, [&](const packed_weights<P>& w, const float* x, float* y, thread_pool* pool) {
    decode_gemv<P>(w, x, N, K, y, method, 0, 0, pool);
  });
}

template <class P>
void bm_decode_read(benchmark::State& st, std::size_t M, std::size_t K, int T, bool dot) {
  auto& copies = decode_copies<P>(M, K);
  thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
  std::size_t i = 0;
  for (auto _ : st) {
    const auto& w = copies[i++ % copies.size()];
    pooled_read(w.bytes(), w.size_bytes(), pool, T, dot);
  }
  st.counters["weight_GBps"] = benchmark::Counter(double(copies[0].size_bytes()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

template <class P>
void register_policy(std::size_t M, std::size_t K) {
  const std::string shape = "/" + std::to_string(M) + "x" + std::to_string(K);
  for (int T : {1, 2}) {
    const std::string th = "/threads:" + std::to_string(T) + "/cold";
    for (bool dot : {false, true})
      benchmark::RegisterBenchmark(((dot ? "decode_read_dot/" : "decode_read/") + P::name() + shape + th).c_str(),
                                   [=](benchmark::State& st) { bm_decode_read<P>(st, M, K, T, dot); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    std::vector<decode_method> ms = {decode_method::fused_dq, decode_method::bf16};
    if constexpr (format_traits<typename P::format>::integer_levels || detail::split_levels<P>())
      ms.push_back(decode_method::int8);  // (split levels: N <= 2 on AVX-512 VNNI + GFNI and AVX2 CPUs)
    if constexpr (format_traits<typename P::format>::lut_gemv_capable) ms.push_back(decode_method::lut_gemv);
    for (std::size_t N : {1, 2, 16})
      for (decode_method m : ms) {
        if (N > 1 && (m == decode_method::fused_dq || m == decode_method::bf16)) continue;
        if (m == decode_method::int8 && !format_traits<typename P::format>::integer_levels &&
            !detail::split_int8_decode_available<P>(N, detail::dq_kernels_for_policy<P>(dq_backend::best)))
          continue;
        benchmark::RegisterBenchmark(
            ("decode_gemv/" + std::string(decode_method_name(m)) + "/" + P::name() + shape + "/n:" + std::to_string(N) + th).c_str(),
            [=](benchmark::State& st) { bm_decode<P>(st, m, M, K, N, T); })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
  }
}
// The LUT-GEMV on each kernel target this CPU runs (hwy_backend::available_targets(): the VBMI
// kernels, AVX3, AVX2, ...), one thread, N = 1, cold: what an AVX2-only CPU's kernel costs per
// table layout, measured beside the plain read (decode_read rows) on a wider CPU. Rows
// "decode_gemv_target/<target>/<policy>/...": scripts/summary.py reads them as decode rows.
template <class P>
void register_targets(std::size_t M, std::size_t K) {
  const std::string shape = "/" + std::to_string(M) + "x" + std::to_string(K);
  for (const int64_t tg : hwy_backend::available_targets()) {
    if (tg == HWY_SCALAR || tg == HWY_EMU128 || tg == HWY_SSSE3 || tg == HWY_SSE4) continue;  // (minutes a row)
    std::string tname = hwy_backend::target_name(tg);  // "AVX2", "AVX512_VBMI vpermb (lutkit)"
    if (const auto p = tname.find(" (lutkit)"); p != std::string::npos) tname.erase(p);
    for (auto& c : tname)
      if (c == ' ') c = '_';
    benchmark::RegisterBenchmark(
        ("decode_gemv_target/" + tname + "/" + P::name() + shape + "/n:1/threads:1/cold").c_str(),
        [=](benchmark::State& st) {
          std::vector<float> x(K);
          std::mt19937_64 rng(5);
          std::normal_distribution<float> nd;
          for (auto& v : x) v = nd(rng);
          decode_loop(st, decode_copies<P>(M, K), M, K, 1, 1,
                      [&](const packed_weights<P>& w, const float* xx, float* y, thread_pool*) {
                        lut_gemv(w, build_tables<P>(xx, 1, K), y, 0, nullptr, tg);
                      });
        })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
}
// A small matrix (a 1B model's K / V projection, 512 x 2048) warm in the cache, one thread: the
// call's fixed cost (activations quantized, buffers set up) is a quarter of it, where it is a
// percent of the cold 4096 x 14336 call. Beside a plain read of the same warm bytes.
template <class P>
void register_small(decode_method m, std::size_t M, std::size_t K) {
  const std::string shape = "/" + std::to_string(M) + "x" + std::to_string(K);
  benchmark::RegisterBenchmark(("decode_read/" + P::name() + shape + "/threads:1/warm").c_str(),
                               [=](benchmark::State& st) {
                                 const auto& w = decode_blob<P>(M, K);
                                 for (auto _ : st) pooled_read(w.bytes(), w.size_bytes(), nullptr, 1, false);
                                 st.counters["weight_GBps"] = benchmark::Counter(
                                     double(w.size_bytes()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
                               })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(
      ("decode_gemv/" + std::string(decode_method_name(m)) + "/" + P::name() + shape + "/n:1/threads:1/warm").c_str(),
      [=](benchmark::State& st) {
        const auto& w = decode_blob<P>(M, K);
        std::mt19937_64 rng(5);
        std::normal_distribution<float> nd;
        std::vector<float> x(K), y(M);
        for (auto& v : x) v = nd(rng);
        for (auto _ : st) {
          decode_gemv<P>(w, x.data(), 1, K, y.data(), m, 0, 0, nullptr);
          benchmark::DoNotOptimize(y.data());
        }
        st.counters["weight_GBps"] =
            benchmark::Counter(double(w.size_bytes()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

// tile-group weights: rotating copies of one quantized tensor, read and decoded like the blobs above
using TGF = fmt::uint_asym<4>;
const std::string tg_name = "w4_g32_asym_tilegroup_hmx";

std::vector<tile_group_weights<TGF>>& tile_group_copies(std::size_t M, std::size_t K) {
  static std::unique_ptr<tile_group_weights<TGF>> first;
  static std::size_t m0 = 0, k0 = 0;
  if (!first || m0 != M || k0 != K) {
    std::mt19937_64 rng(M * 7 + K);
    std::normal_distribution<float> nd(0.f, 0.02f);
    std::vector<float> w(M * K);
    for (auto& v : w) v = nd(rng);
    first = std::make_unique<tile_group_weights<TGF>>(quantize_tile_group<TGF>(w.data(), M, K));
    m0 = M;
    k0 = K;
  }
  return rotation<std::vector<tile_group_weights<TGF>>>(tg_name + "/" + std::to_string(M) + "x" + std::to_string(K), [&] {
    return std::vector<tile_group_weights<TGF>>(cold_count(first->size_bytes()), *first);
  });
}

void register_tile_group(std::size_t M, std::size_t K) {
  const std::string shape = "/" + std::to_string(M) + "x" + std::to_string(K);
  for (int T : {1, 2}) {
    const std::string th = "/threads:" + std::to_string(T) + "/cold";
    for (bool dot : {false, true})
      benchmark::RegisterBenchmark(((dot ? "decode_read_dot/" : "decode_read/") + tg_name + shape + th).c_str(),
                                   [=](benchmark::State& st) {
                                     auto& copies = tile_group_copies(M, K);
                                     thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
                                     std::size_t i = 0;
                                     for (auto _ : st) {
                                       const auto& w = copies[i++ % copies.size()];
                                       pooled_read(w.data(), w.size_bytes(), pool, T, dot);
                                     }
                                     st.counters["weight_GBps"] =
                                         benchmark::Counter(double(copies[0].size_bytes()) * 1e-9,
                                                            benchmark::Counter::kIsIterationInvariantRate);
                                   })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    for (std::size_t N : {1, 2, 16})
      for (decode_method m : {decode_method::int8, decode_method::fused_dq}) {
        if (N > 1 && m == decode_method::fused_dq) continue;
        benchmark::RegisterBenchmark(
            ("decode_gemv/" + std::string(decode_method_name(m)) + "/" + tg_name + shape + "/n:" + std::to_string(N) + th).c_str(),
            [=](benchmark::State& st) {
              decode_loop(st, tile_group_copies(M, K), M, K, N, T,
                          [&](const tile_group_weights<TGF>& w, const float* x, float* y, thread_pool* pool) {
                            tile_group_gemv(w, x, N, K, y, 0, 0, pool, dq_backend::best, m);
                          });
            })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
  }
}
}  // namespace

void register_decode() {
  register_tile_group(4096, 14336);
  register_policy<Q8_0>(4096, 14336);
  register_policy<IQ4NL>(4096, 14336);
  register_policy<NF4>(4096, 14336);
  register_policy<Q4NX>(4096, 14336);
  register_policy<Q4_0>(4096, 14336);
  register_policy<W4>(4096, 14336);
  register_policy<W2>(4096, 14336);
  register_policy<Q4_1>(4096, 14336);
  register_policy<Q5_0>(4096, 14336);
  register_policy<Q4K>(4096, 14336);
  register_policy<Q6K>(4096, 14336);
  register_policy<Q3K>(4096, 14336);
  register_policy<Q5_1>(4096, 14336);
  register_policy<Q5K>(4096, 14336);
  register_policy<Q2K>(4096, 14336);
  register_policy<TQ>(4096, 14336);
  register_policy<Q4_0d>(4096, 14336);
  register_policy<Q4_0i8>(4096, 14336);
  register_policy<Q5_1i8>(4096, 14336);
  register_policy<TQi8>(4096, 14336);
  register_targets<Q4_0d>(4096, 14336);
  register_targets<Q4_0i8>(4096, 14336);
  register_targets<Q5_1>(4096, 14336);
  register_targets<Q5_1i8>(4096, 14336);
  register_small<Q4_0>(decode_method::int8, 512, 2048);
  register_small<Q8_0>(decode_method::int8, 512, 2048);
  register_small<Q4K>(decode_method::int8, 512, 2048);
}
}  // namespace lutkit_bench
