// Sampling benchmarks: lutkit's diffusion-LLM step and autoregressive sampler beside baselines
// in the same binary, on the same logits bytes:
//   dllm_sample/B:<B>/L:<L>/V:<V>/<fp32|bf16|mxfp8>/threads:<T>   one dLLM step (sample: x0 and
//        confidence by one streaming pass per position; top-k of confidence per row; update),
//        T = 0 (argmax), probability confidence, every position masked, 4 unmasked per row
//   dllm_sample_gumbel/...          the same at temperature 1 (Gumbel-max noise per token)
//   dllm_multipass/.../fp32/...     the multi-pass step: softmax materialized (max, exp + sum,
//        normalize), argmax over the probabilities, std::sort of the confidences
//   dllm_read/...                   a plain read of the same logits bytes (the roofline)
//   ar_sample/B:<B>/V:<V>/<chain>/threads:<T>   lutkit's AR sampler, every row the same chain
//   ar_partial_sort/...             llama.cpp-style: (logit, id) pairs, std::partial_sort top-k,
//        softmax over the k, top-p, temperature, draw (a row per task over the pool)
//   ar_full_sort/...                std::sort of the whole vocabulary, softmax, top-p, draw
//   ar_read/B:<B>/V:<V>/threads:<T> a plain read of the same rows
// Every case rotates over copies of its logits totalling more than twice the LLC (cold_count in
// bench_common.hpp), the dLLM's too: each call reads its logits from DRAM, as on a machine whose
// LLC is far below the dLLM's 65-311 MB. Logits: normal(0, 2) noise plus 8 peaked tokens (+8 ..
// +15).
// Counters: logits_GBps (logits bytes / time) and of_read (the plain read's mean time / this
// time, when the read of the same case has run before in the same process; scripts/summary.py
// computes the ratio from the reported times, the medians with repetitions).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <lutkit/sampling/autoregressive.hpp>
#include <lutkit/sampling/dllm.hpp>

#include "baselines.hpp"
#include "bench_common.hpp"

namespace {
using namespace lutkit;
using lutkit_bench::cold_count;
using lutkit_bench::pool_for;
using lutkit_bench::rotation;

std::map<std::string, double> g_read_s;  // case key -> seconds of the plain read

// cheap reproducible logits: normal-ish noise (sum of 4 uniforms) and a few peaks per row
void fill_logits(float* x, std::size_t rows, std::size_t V, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = x + r * V;
    for (std::size_t i = 0; i < V; ++i) {
      const uint64_t a = next();
      const float u = float(a & 0xFFFF) + float((a >> 16) & 0xFFFF) + float((a >> 32) & 0xFFFF) + float(a >> 48);
      row[i] = (u * (1.f / 65536.f) - 2.f) * 3.46f;  // variance 4
    }
    for (int k = 0; k < 8; ++k) row[next() % V] = 8.f + float(k);
  }
}

struct logits_buf {
  logit_type type;
  std::size_t rows, V;
  detail::aligned_bytes data, scales;
  logits_view view() const {
    switch (type) {
      case logit_type::f32: return logits_view::f32(reinterpret_cast<const float*>(data.get()), rows, V);
      case logit_type::bf16: return logits_view::bf16(reinterpret_cast<const uint16_t*>(data.get()), rows, V);
      case logit_type::f16: return logits_view::f16(reinterpret_cast<const uint16_t*>(data.get()), rows, V);
      case logit_type::mxfp8: return logits_view::mxfp8(data.get(), scales.get(), rows, V);
    }
    return {};
  }
};

std::unique_ptr<logits_buf> make_logits(logit_type type, std::size_t rows, std::size_t V, uint64_t seed) {
  auto b = std::make_unique<logits_buf>();
  b->type = type;
  b->rows = rows;
  b->V = V;
  const std::size_t n = rows * V;
  std::vector<float> tmp(V);
  const std::size_t eb = type == logit_type::f32 ? 4 : type == logit_type::mxfp8 ? 1 : 2;
  b->data = detail::alloc_aligned(n * eb);
  const std::size_t nb = (V + 31) / 32;
  if (type == logit_type::mxfp8) b->scales = detail::alloc_aligned(rows * nb);
  for (std::size_t r = 0; r < rows; ++r) {
    fill_logits(tmp.data(), 1, V, seed * 1000003 + r);
    switch (type) {
      case logit_type::f32: std::memcpy(b->data.get() + r * V * 4, tmp.data(), V * 4); break;
      case logit_type::bf16:
      case logit_type::f16: {
        auto* o = reinterpret_cast<uint16_t*>(b->data.get()) + r * V;
        for (std::size_t i = 0; i < V; ++i) o[i] = type == logit_type::bf16 ? f32_to_bf16(tmp[i]) : f32_to_f16(tmp[i]);
        break;
      }
      case logit_type::mxfp8:
        for (std::size_t j = 0; j < nb; ++j)
          mxfp8_encode_block(tmp.data() + 32 * j, std::min<std::size_t>(32, V - 32 * j), b->data.get() + r * V + 32 * j,
                             b->scales.get() + r * nb + j);
        break;
    }
  }
  return b;
}

// a plain multi-threaded read of [p, p + bytes)
void plain_read(thread_pool& pool, int threads, const uint8_t* p, std::size_t bytes, uint64_t* sink) {
  const std::size_t words = bytes / 8;
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  auto f = [&](std::size_t t) {
    const std::size_t a = words * t / std::size_t(threads), b = words * (t + 1) / std::size_t(threads);
    sink[t] ^= lutkit_bench::read_bandwidth(w + a, b - a, 0);
  };
  if (threads > 1)
    pool.run(std::size_t(threads), f);
  else
    f(0);
}

void set_counters(benchmark::State& st, double bytes, const std::string& key) {
  st.counters["logits_GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  auto it = g_read_s.find(key);
  if (it != g_read_s.end())
    st.counters["of_read"] = benchmark::Counter(it->second, benchmark::Counter::kIsIterationInvariantRate);
}

// a copy of b's bytes
std::unique_ptr<logits_buf> copy_logits(const logits_buf& b) {
  auto c = std::make_unique<logits_buf>();
  c->type = b.type;
  c->rows = b.rows;
  c->V = b.V;
  const auto lv = b.view();
  const std::size_t sb = b.type == logit_type::mxfp8 ? lv.rows * lv.blocks_per_row() : 0;
  c->data = detail::alloc_aligned(lv.bytes() - sb);
  std::memcpy(c->data.get(), b.data.get(), lv.bytes() - sb);
  if (sb) {
    c->scales = detail::alloc_aligned(sb);
    std::memcpy(c->scales.get(), b.scales.get(), sb);
  }
  return c;
}

// ------------------------------------------------------------------ dLLM
// the cold rotation of one case's logits (the first generated, the others its copies)
using logits_set = std::vector<std::unique_ptr<logits_buf>>;
logits_set& dllm_data(logit_type type, std::size_t rows, std::size_t V) {
  return rotation<logits_set>(std::string("dllm/") + logit_type_name(type) + "/" + std::to_string(rows) + "/" +
                                  std::to_string(V),
                              [&] {
                                logits_set s;
                                s.push_back(make_logits(type, rows, V, 17));
                                const std::size_t n = cold_count(s[0]->view().bytes());
                                while (s.size() < n) s.push_back(copy_logits(*s[0]));
                                return s;
                              });
}

std::string dllm_key(std::size_t B, std::size_t L, std::size_t V, logit_type t, int T) {
  return "B:" + std::to_string(B) + "/L:" + std::to_string(L) + "/V:" + std::to_string(V) + "/" + logit_type_name(t) +
         "/threads:" + std::to_string(T);
}

void bm_dllm(benchmark::State& st, std::size_t B, std::size_t L, std::size_t V, logit_type type, int threads,
             float temperature) {
  auto& ds = dllm_data(type, B * L, V);
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  dllm_params p;
  p.mask_id = int32_t(V - 1);
  p.temperature = temperature;
  p.seed = 1;
  std::vector<int32_t> x(B * L);
  const std::vector<std::size_t> k(B, 4);
  std::size_t i = 0;
  for (auto _ : st) {
    std::fill(x.begin(), x.end(), p.mask_id);
    benchmark::DoNotOptimize(dllm_step(ds[i++ % ds.size()]->view(), B, L, x.data(), k.data(), p, pool));
  }
  set_counters(st, double(ds[0]->view().bytes()), dllm_key(B, L, V, type, threads));
}

void bm_dllm_read(benchmark::State& st, std::size_t B, std::size_t L, std::size_t V, logit_type type, int threads) {
  auto& ds = dllm_data(type, B * L, V);
  thread_pool& pool = pool_for(threads);
  const auto lv = ds[0]->view();
  const std::size_t eb = lv.bytes() - (type == logit_type::mxfp8 ? lv.rows * lv.blocks_per_row() : 0);
  uint64_t sink[8] = {};
  std::vector<double> ts;
  std::size_t i = 0;
  for (auto _ : st) {
    const logits_buf& d = *ds[i++ % ds.size()];
    const auto t0 = std::chrono::steady_clock::now();
    plain_read(pool, threads, d.data.get(), eb, sink);
    if (type == logit_type::mxfp8) plain_read(pool, threads, d.scales.get(), lv.bytes() - eb, sink);
    benchmark::DoNotOptimize(sink);
    ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // the mean, like the time Google Benchmark reports
  if (!ts.empty()) g_read_s[dllm_key(B, L, V, type, threads)] = std::accumulate(ts.begin(), ts.end(), 0.0) / double(ts.size());
  set_counters(st, double(lv.bytes()), "");
}

// softmax materialized, argmax over it, gather, std::sort of the confidences
void bm_dllm_multipass(benchmark::State& st, std::size_t B, std::size_t L, std::size_t V, int threads) {
  auto& ds = dllm_data(logit_type::f32, B * L, V);
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  static std::vector<float> probs;
  probs.resize(B * L * V);
  std::vector<int32_t> x0(B * L);
  std::vector<float> conf(B * L);
  std::size_t it = 0;
  for (auto _ : st) {
    const float* lg = reinterpret_cast<const float*>(ds[it++ % ds.size()]->data.get());
    auto pos = [&](std::size_t i) {
      const float* l = lg + i * V;
      float* p = probs.data() + i * V;
      float m = -INFINITY;
      for (std::size_t j = 0; j < V; ++j) m = std::max(m, l[j]);
      float s = 0.f;
      for (std::size_t j = 0; j < V; ++j) s += p[j] = std::exp(l[j] - m);
      const float inv = 1.f / s;
      for (std::size_t j = 0; j < V; ++j) p[j] *= inv;
      const std::size_t a = std::size_t(std::max_element(p, p + V) - p);
      x0[i] = int32_t(a);
      conf[i] = p[a];
    };
    if (pool)
      pool->run(B * L, pos);
    else
      for (std::size_t i = 0; i < B * L; ++i) pos(i);
    for (std::size_t b = 0; b < B; ++b) {
      std::vector<uint32_t> idx(L);
      std::iota(idx.begin(), idx.end(), 0u);
      std::sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t c) {
        return conf[b * L + a] > conf[b * L + c] || (conf[b * L + a] == conf[b * L + c] && a < c);
      });
      benchmark::DoNotOptimize(idx.data());
    }
  }
  set_counters(st, double(ds[0]->view().bytes()), dllm_key(B, L, V, logit_type::f32, threads));
}

// ------------------------------------------------------------------ autoregressive
struct ar_copies {
  std::vector<std::unique_ptr<logits_buf>> c;
};
// distinct logits in the first 128 MiB of the rotation, copies of them beyond
ar_copies& ar_data(std::size_t B, std::size_t V) {
  return rotation<ar_copies>("ar/" + std::to_string(B) + "/" + std::to_string(V), [&] {
    ar_copies a;
    const std::size_t bytes = B * V * 4, n = cold_count(bytes);
    const std::size_t distinct = std::min(n, std::max<std::size_t>(2, (std::size_t(128) << 20) / bytes + 1));
    for (std::size_t i = 0; i < n; ++i)
      a.c.push_back(i < distinct ? make_logits(logit_type::f32, B, V, 1000 + i) : copy_logits(*a.c[i % distinct]));
    return a;
  });
}

struct chain_cfg {
  const char* name;
  int top_k;
  float top_p, T;
};
const chain_cfg kChains[] = {{"topk40_topp0.95_T0.8", 40, 0.95f, 0.8f}, {"topp0.95_T0.8", 0, 0.95f, 0.8f}};

std::string ar_key(std::size_t B, std::size_t V, int T, bool cold) {
  return "B:" + std::to_string(B) + "/V:" + std::to_string(V) + "/threads:" + std::to_string(T) + (cold ? "/cold" : "/warm");
}

void bm_ar(benchmark::State& st, std::size_t B, std::size_t V, chain_cfg c, int threads, bool cold) {
  auto& a = ar_data(B, V);
  const std::size_t ncopies = cold ? a.c.size() : 1;
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  std::vector<ar_params> ps(B);
  for (std::size_t r = 0; r < B; ++r) {
    ps[r].top_k = c.top_k;
    ps[r].top_p = c.top_p;
    ps[r].temperature = c.T;
  }
  std::vector<int32_t> tok(B);
  std::size_t i = 0;
  for (auto _ : st) {
    for (auto& p : ps) p.seed = i;
    ar_sample(a.c[i++ % ncopies]->view(), ps.data(), tok.data(), pool);
    benchmark::DoNotOptimize(tok.data());
  }
  set_counters(st, double(B * V * 4), ar_key(B, V, threads, cold));
}

void bm_ar_read(benchmark::State& st, std::size_t B, std::size_t V, int threads, bool cold) {
  auto& a = ar_data(B, V);
  const std::size_t ncopies = cold ? a.c.size() : 1;
  thread_pool& pool = pool_for(threads);
  uint64_t sink[8] = {};
  std::size_t i = 0;
  std::vector<double> ts;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    plain_read(pool, threads, a.c[i++ % ncopies]->data.get(), B * V * 4, sink);
    benchmark::DoNotOptimize(sink);
    ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (!ts.empty()) g_read_s[ar_key(B, V, threads, cold)] = std::accumulate(ts.begin(), ts.end(), 0.0) / double(ts.size());
  set_counters(st, double(B * V * 4), "");
}

// llama.cpp-style baselines: (logit, id) candidates, then partial or full sort
uint32_t sort_sample_row(const float* l, std::size_t V, const chain_cfg& c, uint64_t seed, bool full,
                         std::vector<std::pair<float, uint32_t>>& cand) {
  cand.resize(V);
  for (std::size_t j = 0; j < V; ++j) cand[j] = {l[j], uint32_t(j)};
  auto gt = [](const std::pair<float, uint32_t>& a, const std::pair<float, uint32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  std::size_t n = V;
  if (!full && c.top_k > 0) {
    n = std::size_t(c.top_k);
    std::partial_sort(cand.begin(), cand.begin() + std::ptrdiff_t(n), cand.end(), gt);
  } else {
    std::sort(cand.begin(), cand.end(), gt);
    if (c.top_k > 0) n = std::size_t(c.top_k);
  }
  // softmax over the n (at temperature 1), top-p cut, then temperature and draw
  const float m = cand[0].first;
  double s = 0;
  std::vector<double> p(n);
  for (std::size_t j = 0; j < n; ++j) s += p[j] = std::exp(double(cand[j].first - m));
  double cum = 0;
  std::size_t keep = n;
  for (std::size_t j = 0; j < n; ++j) {
    cum += p[j] / s;
    if (cum >= c.top_p) {
      keep = j + 1;
      break;
    }
  }
  double t = 0;
  for (std::size_t j = 0; j < keep; ++j) t += p[j] = std::exp(double(cand[j].first - m) / c.T);
  const double u = detail::row_uniform(seed, 0) * t;
  cum = 0;
  for (std::size_t j = 0; j < keep; ++j)
    if ((cum += p[j]) >= u) return cand[j].second;
  return cand[keep - 1].second;
}

void bm_ar_sort(benchmark::State& st, std::size_t B, std::size_t V, chain_cfg c, int threads, bool full, bool cold) {
  auto& a = ar_data(B, V);
  const std::size_t ncopies = cold ? a.c.size() : 1;
  thread_pool* pool = threads > 1 ? &pool_for(threads) : nullptr;
  std::vector<int32_t> tok(B);
  std::vector<std::vector<std::pair<float, uint32_t>>> cand(B);
  std::size_t i = 0;
  for (auto _ : st) {
    const float* lg = reinterpret_cast<const float*>(a.c[i % ncopies]->data.get());
    auto row = [&](std::size_t r) { tok[r] = int32_t(sort_sample_row(lg + r * V, V, c, i, full, cand[r])); };
    if (pool && B > 1)
      pool->run(B, row);
    else
      for (std::size_t r = 0; r < B; ++r) row(r);
    ++i;
    benchmark::DoNotOptimize(tok.data());
  }
  set_counters(st, double(B * V * 4), ar_key(B, V, threads, cold));
}

}  // namespace

namespace lutkit_bench {
void register_sampling() {
  for (int T : {1, 2}) {
    const std::size_t B = 16, L = 32;
    for (std::size_t V : {std::size_t(126464), std::size_t(151936)})
      for (logit_type t : {logit_type::f32, logit_type::bf16, logit_type::mxfp8}) {
        if (V == 151936 && t != logit_type::f32) continue;
        const std::string k = dllm_key(B, L, V, t, T);
        benchmark::RegisterBenchmark(("dllm_read/" + k).c_str(),
                                     [=](benchmark::State& st) { bm_dllm_read(st, B, L, V, t, T); })
            ->Unit(benchmark::kMillisecond)->UseRealTime();
        benchmark::RegisterBenchmark(("dllm_sample/" + k).c_str(),
                                     [=](benchmark::State& st) { bm_dllm(st, B, L, V, t, T, 0.f); })
            ->Unit(benchmark::kMillisecond)->UseRealTime();
        if (V == 126464 && t == logit_type::f32) {
          benchmark::RegisterBenchmark(("dllm_sample_gumbel/" + k).c_str(),
                                       [=](benchmark::State& st) { bm_dllm(st, B, L, V, t, T, 1.f); })
              ->Unit(benchmark::kMillisecond)->UseRealTime();
          benchmark::RegisterBenchmark(("dllm_multipass/" + k).c_str(),
                                       [=](benchmark::State& st) { bm_dllm_multipass(st, B, L, V, T); })
              ->Unit(benchmark::kMillisecond)->UseRealTime();
        }
      }
    for (std::size_t V : {std::size_t(151936), std::size_t(262144)})
      for (std::size_t B : {std::size_t(1), std::size_t(16)})
        for (bool cold : {true, false}) {
          const std::string mode = cold ? "/cold" : "/warm";
          benchmark::RegisterBenchmark(("ar_read/" + ar_key(B, V, T, cold)).c_str(),
                                       [=](benchmark::State& st) { bm_ar_read(st, B, V, T, cold); })
              ->Unit(benchmark::kMicrosecond)->UseRealTime();
          for (const auto& c : kChains) {
            const std::string k = "B:" + std::to_string(B) + "/V:" + std::to_string(V) + "/" + c.name +
                                  "/threads:" + std::to_string(T) + mode;
            benchmark::RegisterBenchmark(("ar_sample/" + k).c_str(),
                                         [=](benchmark::State& st) { bm_ar(st, B, V, c, T, cold); })
                ->Unit(benchmark::kMicrosecond)->UseRealTime();
            if (c.top_k > 0)
              benchmark::RegisterBenchmark(("ar_partial_sort/" + k).c_str(),
                                           [=](benchmark::State& st) { bm_ar_sort(st, B, V, c, T, false, cold); })
                  ->Unit(benchmark::kMicrosecond)->UseRealTime();
            else
              benchmark::RegisterBenchmark(("ar_full_sort/" + k).c_str(),
                                           [=](benchmark::State& st) { bm_ar_sort(st, B, V, c, T, true, cold); })
                  ->Unit(benchmark::kMicrosecond)->UseRealTime();
          }
        }
  }
}
}  // namespace lutkit_bench
