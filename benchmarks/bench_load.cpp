// Load benchmarks: what an engine pays to bring a tensor in. A Q4_0 4096 x 14336 tensor, as
// llama.cpp blocks, imported (import_q4_0) and packed (pack), beside a memcpy of the packed blob's
// bytes into a buffer already touched (the floor: load_memcpy). Rows: load_memcpy/<policy>/<shape>,
// pack/<policy>/<shape>/threads:T (from the imported codes), import_pack/q4_0/<shape>/threads:T
// (import_q4_0, then pack), pack_q4_0/<shape>/threads:T (blocks straight to a new blob),
// pack_q4_0_into/<shape>/threads:T (the same over a blob already touched, as the memcpy's),
// pack_q8_0/<shape>/threads:T and pack_q8_0_into (Q8_0 blocks, beside load_memcpy of their blob),
// load_pages/<shape> (a new blob's allocation and first touch: the page-fault floor of any load
// into new memory). scripts/summary.py, table "load".
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include <lutkit/lutkit.hpp>

#include "bench_common.hpp"

namespace lutkit_bench {
namespace {
using namespace lutkit;
using Q4 = policy<fmt::uint_sym<4>, group<32>>;
using Q8 = policy<fmt::uint_sym<8>, group<32>>;

struct load_data {
  std::size_t M = 0, K = 0;
  std::vector<uint8_t> blocks;
  std::unique_ptr<quantized<Q4>> q;
  std::size_t blob_bytes = 0;
  std::vector<uint8_t> blocks8;  // the same tensor's shape as Q8_0 blocks
  std::size_t blob8_bytes = 0;
};
load_data& data_for(std::size_t M, std::size_t K) {
  static load_data d;
  if (d.M != M || d.K != K) {
    d.M = M;
    d.K = K;
    d.blocks.assign(M * K / 32 * 18, 0);
    std::mt19937_64 rng(5);
    for (std::size_t b = 0; b < M * K / 32; ++b) {
      const uint16_t s = f32_to_f16(0.01f + float(rng() % 100) * 1e-4f);
      std::memcpy(&d.blocks[b * 18], &s, 2);
      for (int j = 0; j < 16; ++j) d.blocks[b * 18 + 2 + j] = uint8_t(rng());
    }
    d.q = std::make_unique<quantized<Q4>>(import_q4_0<Q4>(d.blocks.data(), M, K, d.blocks.size()));
    d.blob_bytes = pack<Q4>(*d.q).size_bytes();
    d.blocks8.assign(M * K / 32 * 34, 0);
    for (std::size_t b = 0; b < M * K / 32; ++b) {
      const uint16_t s = f32_to_f16(0.01f + float(rng() % 100) * 1e-4f);
      std::memcpy(&d.blocks8[b * 34], &s, 2);
      for (int j = 0; j < 32; ++j) d.blocks8[b * 34 + 2 + j] = uint8_t(rng());
    }
    d.blob8_bytes = pack_q8_0<Q8>(d.blocks8.data(), M, K, d.blocks8.size()).size_bytes();
  }
  return d;
}

std::string shape(std::size_t M, std::size_t K) { return std::to_string(M) + "x" + std::to_string(K); }

template <class P>
void bm_memcpy(benchmark::State& st, std::size_t M, std::size_t K) {
  auto& d = data_for(M, K);
  const auto blob = [&] {
    if constexpr (std::is_same_v<P, Q8>) return pack_q8_0<Q8>(d.blocks8.data(), M, K, d.blocks8.size());
    else return pack<Q4>(*d.q);
  }();
  std::vector<uint8_t> dst(blob.size_bytes(), 1);  // touched: no page faults in the loop
  for (auto _ : st) {
    std::memcpy(dst.data(), blob.bytes(), blob.size_bytes());
    benchmark::DoNotOptimize(dst.data());
  }
  st.counters["blob_GBps"] = benchmark::Counter(double(blob.size_bytes()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

enum class load_path { pack, import_pack, direct, direct_into, direct8, direct8_into };
void bm_pack(benchmark::State& st, std::size_t M, std::size_t K, int threads, load_path path) {
  auto& d = data_for(M, K);
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  packed_weights<Q4> into(M, K);
  packed_weights<Q8> into8 = path == load_path::direct8_into ? packed_weights<Q8>(M, K) : packed_weights<Q8>();
  const bool q8 = path == load_path::direct8 || path == load_path::direct8_into;
  // the direct packers of one block type: over the touched blob `over`, or into a new blob
  auto direct = [&](auto& over, const std::vector<uint8_t>& blocks, auto pack_new, auto pack_over, bool reuse) {
    if (reuse) {
      pack_over(over, blocks.data(), M, K, blocks.size(), pool);
      benchmark::DoNotOptimize(over.data());
    } else {
      auto w = pack_new(blocks.data(), M, K, blocks.size(), pool);
      benchmark::DoNotOptimize(w.data());
    }
  };
  for (auto _ : st) {
    if (q8) {
      direct(into8, d.blocks8, &pack_q8_0<Q8>, &pack_q8_0_into<Q8>, path == load_path::direct8_into);
    } else if (path == load_path::direct || path == load_path::direct_into) {
      direct(into, d.blocks, &pack_q4_0<Q4>, &pack_q4_0_into<Q4>, path == load_path::direct_into);
    } else if (path == load_path::import_pack) {
      const auto q = import_q4_0<Q4>(d.blocks.data(), M, K, d.blocks.size(), pool);
      auto w = pack<Q4>(q, pool);
      benchmark::DoNotOptimize(w.data());
    } else {
      auto w = pack<Q4>(*d.q, pool);
      benchmark::DoNotOptimize(w.data());
    }
  }
  st.counters["blob_GBps"] =
      benchmark::Counter(double(q8 ? d.blob8_bytes : d.blob_bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void bm_pages(benchmark::State& st, std::size_t M, std::size_t K) {
  for (auto _ : st) {
    packed_weights<Q4> w(M, K, detail::data_uninitialized_t{});
    for (std::size_t i = 0; i < w.size_bytes(); i += 4096) w.bytes()[i] = 1;
    benchmark::DoNotOptimize(w.data());
  }
}
}  // namespace

void register_load() {
  const std::size_t M = 4096, K = 14336;
  benchmark::RegisterBenchmark(("load_memcpy/" + Q4::name() + "/" + shape(M, K)).c_str(),
                               [=](benchmark::State& st) { bm_memcpy<Q4>(st, M, K); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("load_memcpy/" + Q8::name() + "/" + shape(M, K)).c_str(),
                               [=](benchmark::State& st) { bm_memcpy<Q8>(st, M, K); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("load_pages/" + shape(M, K)).c_str(), [=](benchmark::State& st) { bm_pages(st, M, K); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  // the load paths by row-name prefix
  const std::pair<std::string, load_path> paths[] = {
      {"pack/" + Q4::name(), load_path::pack},     {"import_pack/q4_0", load_path::import_pack},
      {"pack_q4_0", load_path::direct},            {"pack_q4_0_into", load_path::direct_into},
      {"pack_q8_0", load_path::direct8},           {"pack_q8_0_into", load_path::direct8_into}};
  for (int T : {1, 2})
    for (const auto& [prefix, path] : paths)
      benchmark::RegisterBenchmark((prefix + "/" + shape(M, K) + "/threads:" + std::to_string(T)).c_str(),
                                   [=, path = path](benchmark::State& st) { bm_pack(st, M, K, T, path); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
}
}  // namespace lutkit_bench
