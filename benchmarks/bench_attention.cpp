// Attention benchmarks (docs/attention.md, "Figures"). Measured side by side in one run:
//   attention_decode/...   lutkit's split-KV decode (batch 1: one sequence over the whole cache;
//                          batch 16: 16 sequences sharing the cache as prefix, 32 own keys each)
//   kv_read/...            a plain read of exactly the same K/V bytes over the same pool (the
//                          decode roofline, like stream_read)
//   attention_naive/...    the naive two-pass baseline: per query head, the scores matrix, a
//                          softmax, then P.V (plain loops the compiler vectorizes; heads over the pool)
//   attention_prefill/...  lutkit's prefill at the default precision (fp32); counter of_peak against
//                          peak/fp32_fma of the same run
//   attention_prefill_bf16/... the bf16 opt-in (attention_precision::bf16); of_peak against peak/bf16_dot
//   attention_prefill(_bf16)_avx512/... on a CPU with AMX (where `best` runs the AMX set): the same
//                          two with the AVX-512 set, for the ratio of the two sets in one run
// Names: <kernel>/d:<d>/hq:<Hq>/hkv:<Hkv>/kv:<L>/q:<Lq>/<causal|swa|full>/<f16|bf16|f32>/threads:<T>/<cold|warm>
// (q: queries per sequence for prefill; for decode the batch size). cold: rotating copies of the
// K/V beyond 4x the 32 MiB LLC; warm: one copy. Counters: KV_GBps (K/V bytes / time), GFLOPs
// (4 * d * query-key pairs: causal prefill Lq * L, every pair of the sweep; sliding window: the
// pairs inside the window; decode: every key of every sequence).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

struct kv_case {
  std::size_t d = 0, hkv = 0, L = 0;
  std::size_t bytes = 0;  // K + V bytes of one copy
  std::vector<detail::aligned_bytes> copies;  // K [hkv][L][d] then V, fp16
  kv_cache_view view(std::size_t i) const {
    kv_cache_view v;
    v.k = copies[i].get();
    v.v = copies[i].get() + bytes / 2;
    v.type = kv_type::f16;
    v.len = L;
    v.row_stride = std::ptrdiff_t(d);
    v.head_stride = std::ptrdiff_t(L * d);
    return v;
  }
};

kv_case& kv_data(std::size_t d, std::size_t hkv, std::size_t L, bool cold) {
  static std::unique_ptr<kv_case> cache;
  if (!cache || cache->d != d || cache->hkv != hkv || cache->L != L) {
    cache.reset();
    auto c = std::make_unique<kv_case>();
    c->d = d;
    c->hkv = hkv;
    c->L = L;
    c->bytes = 2 * hkv * L * d * 2;
    c->copies.push_back(detail::alloc_aligned(c->bytes));
    std::mt19937_64 rng(L);
    std::normal_distribution<float> nd;
    uint16_t* p = reinterpret_cast<uint16_t*>(c->copies[0].get());
    for (std::size_t i = 0; i < c->bytes / 2; ++i) p[i] = f32_to_f16(nd(rng));
    cache = std::move(c);
  }
  if (cold) {
    const std::size_t want = cold_count(cache->bytes);
    while (cache->copies.size() < want) {
      cache->copies.push_back(detail::alloc_aligned(cache->bytes));
      std::memcpy(cache->copies.back().get(), cache->copies[0].get(), cache->bytes);
    }
  }
  return *cache;
}

std::string tail(std::size_t d, std::size_t hq, std::size_t hkv, std::size_t L, std::size_t q, const char* mask,
                 int T, bool cold) {
  return "/d:" + std::to_string(d) + "/hq:" + std::to_string(hq) + "/hkv:" + std::to_string(hkv) + "/kv:" +
         std::to_string(L) + "/q:" + std::to_string(q) + "/" + mask + "/f16/threads:" + std::to_string(T) + "/" +
         (cold ? "cold" : "warm");
}

void set_kv_counters(benchmark::State& st, double bytes, double flops) {
  st.counters["KV_GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// the benchmarks' shape: d, query and KV heads, scale 1 / sqrt(d), causal
attention_options options(std::size_t d, std::size_t hq, std::size_t hkv) {
  attention_options o;
  o.heads_q = hq;
  o.heads_kv = hkv;
  o.head_dim = d;
  o.scale = float(1 / std::sqrt(double(d)));
  return o;
}

// ------------------------------------------------------------------ decode
void bm_decode(benchmark::State& st, std::size_t d, std::size_t hq, std::size_t hkv, std::size_t L, std::size_t batch,
               int T, bool cold) {
  auto& c = kv_data(d, hkv, L, cold);
  thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
  attention_options o = options(d, hq, hkv);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> nd;
  const std::size_t own = batch > 1 ? 32 : 0;
  std::vector<float> q(batch * hq * d), out(batch * hq * d), lse(batch * hq);
  for (auto& x : q) x = nd(rng);
  std::vector<uint16_t> ownkv(batch * 2 * hkv * own * d + 1);
  for (auto& x : ownkv) x = f32_to_f16(nd(rng));
  std::vector<decode_sequence> seqs(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    seqs[b].q = q.data() + b * hq * d;
    seqs[b].out = out.data() + b * hq * d;
    seqs[b].lse = lse.data() + b * hq;
    seqs[b].own.k = ownkv.data() + b * 2 * hkv * own * d;
    seqs[b].own.v = ownkv.data() + b * 2 * hkv * own * d + hkv * own * d;
    seqs[b].own.type = kv_type::f16;
    seqs[b].own.len = own;
    seqs[b].own.row_stride = std::ptrdiff_t(d);
    seqs[b].own.head_stride = std::ptrdiff_t(own * d);
  }
  const std::size_t n = cold ? c.copies.size() : 1;
  std::size_t i = 0;
  for (auto _ : st) {
    attention_decode(o, c.view(i++ % n), seqs, pool);
    benchmark::DoNotOptimize(out.data());
  }
  set_kv_counters(st, double(c.bytes + batch * 2 * hkv * own * d * 2), 4.0 * double(d) * double(hq) * double(L + own) * double(batch));
}

void bm_kv_read(benchmark::State& st, std::size_t d, std::size_t hkv, std::size_t L, int T, bool cold) {
  auto& c = kv_data(d, hkv, L, cold);
  thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
  const std::size_t n = cold ? c.copies.size() : 1;
  std::size_t i = 0;
  for (auto _ : st) {
    pooled_read(c.copies[i++ % n].get(), c.bytes, pool, T);
  }
  set_kv_counters(st, double(c.bytes), 0.0);
}

// ------------------------------------------------------------------ naive two-pass baseline
// One query head h, queries i in [0, nq) at positions pos0 + i: S = scale Q K^T (causal / window
// masked), row softmax, O = P V. fp16 K/V converted element by element.
__attribute__((target("avx2,fma,f16c"))) void naive_head(const float* q, std::size_t nq, std::size_t ldq, int64_t pos0,
                                                         const uint16_t* K, const uint16_t* V, std::size_t L,
                                                         std::size_t d, float scale, int64_t window, float* out,
                                                         std::size_t ldo, float* S) {
  for (std::size_t i = 0; i < nq; ++i) {
    const int64_t p = pos0 + int64_t(i);
    const std::size_t hi = std::min<std::size_t>(L, std::size_t(p + 1));
    const std::size_t lo = window > 0 ? std::size_t(std::max<int64_t>(0, p - window + 1)) : 0;
    float* s = S + i * L;
    const float* qi = q + i * ldq;
    float m = -INFINITY;
    for (std::size_t j = lo; j < hi; ++j) {
      float acc = 0;
      for (std::size_t c = 0; c < d; ++c) acc += qi[c] * _cvtsh_ss(K[j * d + c]);
      s[j] = acc * scale;
      m = std::max(m, s[j]);
    }
    float sum = 0;
    for (std::size_t j = lo; j < hi; ++j) {
      s[j] = std::exp(s[j] - m);
      sum += s[j];
    }
    float* o = out + i * ldo;
    for (std::size_t c = 0; c < d; ++c) o[c] = 0;
    for (std::size_t j = lo; j < hi; ++j) {
      const float w = s[j] / sum;
      for (std::size_t c = 0; c < d; ++c) o[c] += w * _cvtsh_ss(V[j * d + c]);
    }
  }
}

void bm_naive(benchmark::State& st, std::size_t d, std::size_t hq, std::size_t hkv, std::size_t L, std::size_t nq,
              int64_t window, int T, bool cold) {
  auto& c = kv_data(d, hkv, L, cold);
  thread_pool& pool = pool_for(T);
  std::mt19937_64 rng(2);
  std::normal_distribution<float> nd;
  std::vector<float> q(nq * hq * d), out(nq * hq * d);
  for (auto& x : q) x = nd(rng);
  std::vector<std::vector<float>> S(std::size_t(T), std::vector<float>(nq * L));
  const std::size_t n = cold ? c.copies.size() : 1;
  const int64_t pos0 = int64_t(L - nq);
  std::size_t it = 0;
  for (auto _ : st) {
    const auto& cp = c.copies[it++ % n];
    const uint16_t* K = reinterpret_cast<const uint16_t*>(cp.get());
    const uint16_t* V = K + hkv * L * d;
    pool.run(std::size_t(T), [&](std::size_t t) {
      for (std::size_t h = t; h < hq; h += std::size_t(T)) {
        const std::size_t g = h / (hq / hkv);
        naive_head(q.data() + h * d, nq, hq * d, pos0, K + g * L * d, V + g * L * d, L, d, float(1 / std::sqrt(double(d))),
                   window, out.data() + h * d, hq * d, S[t].data());
      }
    });
    benchmark::DoNotOptimize(out.data());
  }
  set_kv_counters(st, double(c.bytes), 4.0 * double(d) * double(hq) * double(L) * double(nq));
}

// ------------------------------------------------------------------ prefill
void bm_prefill(benchmark::State& st, std::size_t d, std::size_t hq, std::size_t hkv, std::size_t L, std::size_t nq,
                std::size_t window, int T, attention_precision prec, attention_backend be = attention_backend::best) {
  auto& c = kv_data(d, hkv, L, false);
  thread_pool* pool = T > 1 ? &pool_for(T) : nullptr;
  attention_options o = options(d, hq, hkv);
  o.precision = prec;
  o.backend = be;
  if (window) {
    o.mask = mask_kind::window;
    o.window = window;
  }
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> q(nq * hq * d), out(nq * hq * d);
  for (auto& x : q) x = nd(rng);
  for (auto _ : st) {
    attention_prefill(o, q.data(), nq, int64_t(L - nq), c.view(0), out.data(), nullptr, nullptr, 0, pool);
    benchmark::DoNotOptimize(out.data());
  }
  // causal: every query-key pair of the sweep, Lq x L (the causal diagonal's skipped half-block
  // included); sliding window: the pairs the window lets through (most of Lq x L are outside it)
  double pairs = double(L) * double(nq);
  if (window) {
    pairs = 0;
    for (std::size_t i = 0; i < nq; ++i) pairs += double(std::min<std::size_t>(L - nq + i + 1, window));
  }
  const double flops = 4.0 * double(d) * double(hq) * pairs;
  set_kv_counters(st, double(c.bytes), flops);
  const double pk = peak_gflops((prec == attention_precision::bf16 ? "bf16_dot/" : "fp32_fma/") + std::to_string(T));
  if (pk > 0) st.counters["of_peak"] = benchmark::Counter(flops * 1e-9 / pk, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

void register_attention() {
  // every attention row: wall-clock time (the kernels run on the pool) in the unit that suits it
  auto add = [](const std::string& name, auto fn, benchmark::TimeUnit unit) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->UseRealTime()->Unit(unit);
  };
  for (std::size_t L : {4096, 16384, 32768})
    for (std::size_t batch : {1, 16})
      for (int T : {1, 2}) {
        add("attention_decode" + tail(128, 32, 8, L, batch, "causal", T, true),
            [=](benchmark::State& st) { bm_decode(st, 128, 32, 8, L, batch, T, true); }, benchmark::kMicrosecond);
        if (batch == 1) {
          add("kv_read" + tail(128, 32, 8, L, batch, "causal", T, true),
              [=](benchmark::State& st) { bm_kv_read(st, 128, 8, L, T, true); }, benchmark::kMicrosecond);
          add("attention_naive" + tail(128, 32, 8, L, batch, "causal", T, true),
              [=](benchmark::State& st) { bm_naive(st, 128, 32, 8, L, 1, 0, T, true); }, benchmark::kMicrosecond);
        }
      }
  // warm (cache-resident K/V, 4096 keys = 16 MiB < LLC): the kernel's compute time alone
  for (int T : {1, 2})
    add("attention_decode" + tail(128, 32, 8, 4096, 1, "causal", T, false),
        [=](benchmark::State& st) { bm_decode(st, 128, 32, 8, 4096, 1, T, false); }, benchmark::kMicrosecond);
  for (int T : {1, 2}) {
    for (auto prec : {attention_precision::fp32, attention_precision::bf16})
      add(std::string(prec == attention_precision::bf16 ? "attention_prefill_bf16" : "attention_prefill") +
              tail(128, 32, 8, 4096, 512, "causal", T, false),
          [=](benchmark::State& st) { bm_prefill(st, 128, 32, 8, 4096, 512, 0, T, prec); }, benchmark::kMillisecond);
    if (detail::host_features::amx())
      for (auto prec : {attention_precision::fp32, attention_precision::bf16})
        add(
            std::string(prec == attention_precision::bf16 ? "attention_prefill_bf16_avx512"
                                                          : "attention_prefill_avx512") +
                tail(128, 32, 8, 4096, 512, "causal", T, false),
            [=](benchmark::State& st) { bm_prefill(st, 128, 32, 8, 4096, 512, 0, T, prec, attention_backend::avx512); },
            benchmark::kMillisecond);
    add("attention_naive" + tail(128, 32, 8, 4096, 512, "causal", T, false),
        [=](benchmark::State& st) { bm_naive(st, 128, 32, 8, 4096, 512, 0, T, false); }, benchmark::kMillisecond);
    // Gemma3-4B local layer: d 256, 8 query heads, 4 KV heads, window 1024, a 2048-token prompt
    for (auto prec : {attention_precision::fp32, attention_precision::bf16})
      add(std::string(prec == attention_precision::bf16 ? "attention_prefill_bf16" : "attention_prefill") +
              tail(256, 8, 4, 2048, 2048, "swa", T, false),
          [=](benchmark::State& st) { bm_prefill(st, 256, 8, 4, 2048, 2048, 1024, T, prec); }, benchmark::kMillisecond);
    add("attention_naive" + tail(256, 8, 4, 2048, 2048, "swa", T, false),
        [=](benchmark::State& st) { bm_naive(st, 256, 8, 4, 2048, 2048, 1024, T, false); }, benchmark::kMillisecond);
  }
}
}  // namespace lutkit_bench
