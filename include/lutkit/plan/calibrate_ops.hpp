// lutkit — the prefill GEMM's, attention's and sampling's own rates on this host
// (target_costs::kernels, the counterpart of calibrate_decode.hpp for the other operators of
// plan/cost_model.hpp): each kernel timed on one core at two sizes (the median of a few calls);
// the slope is its rate in the operator's work units a second, the intercept its fixed cost
// (each size's fastest call of a few, the two sizes alternating).
//   calibrate_prefill<P>(c, act)  dequant_gemm<P>, N = 128, 256 and 1024 rows of K = 4096
//                                 ("prefill.<act>.<policy>": weights x rows a second; intercept
//                                 per activation; with more than one core also at every core,
//                                 "prefill.<act>.<policy>.parallel")
//   calibrate_attention(c)        attention_decode at contexts 512 and 4096, attention_prefill of
//                                 prompts of 128 and 512 positions; 32 / 8 heads of 64, fp16
//                                 K / V ("attention.decode" / "attention.prefill": score
//                                 multiply-adds a second; intercept per query row and head)
//   calibrate_sampling(c)         ar_sample's passes (sampling_pass) and dllm_sample's over one
//                                 row of 32000 and of 128256 logits ("sampling.<pass>.<type>":
//                                 logits a second; intercept per row)
// Weights warm (the prefill GEMM is compute-bound: each weight serves 128 rows), a prompt's K / V
// warm; the decode's K / V and the logits in rotating copies beyond the LLC, as the decode
// calibration's blobs. A few hundred ms each.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "../attention/attention.hpp"
#include "../core/error.hpp"
#include "../core/half.hpp"
#include "../gemm/dequant_gemm.hpp"
#include "../packing/pack.hpp"
#include "../quant/quant.hpp"
#include "../sampling/autoregressive.hpp"
#include "../sampling/dllm.hpp"
#include "cost_model.hpp"

namespace lutkit::plan {

struct ops_calibration_options {
  int reps = 7;                                    // the fastest of this many calls per size
  std::size_t cold_bytes = lutkit::cold_bytes();  // K / V and logits copies rotated through
};

namespace detail {
// the fastest of `reps` calls of a and of b, the two alternating; call(i) is the i-th call. The
// best, not the median: on a shared machine a slow minute only adds time, and a calibration
// taken in one (the first second of a process, every figure divided by it) shifted every
// modelled time of a run by the same factor, 1.3-1.8x (docs/plan.md, "Validation")
template <class A, class B>
std::pair<double, double> fastest_seconds2(int reps, A&& a, B&& b) {
  a(0), b(0);  // (scratch allocated, code paged in)
  std::vector<double> ta, tb;
  auto time = [](auto&& f, std::size_t i) {
    const auto t0 = std::chrono::steady_clock::now();
    f(i);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int r = 0; r < reps; ++r) {
    ta.push_back(time(a, std::size_t(r) + 1));
    tb.push_back(time(b, std::size_t(r) + 1));
  }
  return {*std::min_element(ta.begin(), ta.end()), *std::min_element(tb.begin(), tb.end())};
}
// the rate and intercept of two timings: t1 for u1 units, t2 for u2 > u1 (a noisy pair whose
// larger case ran no slower: the larger case's mean rate, no fixed cost); `per` the count the
// fixed cost is kept per
inline kernel_rate two_point_rate(double u1, double t1, double u2, double t2, double per) {
  const double rate = t2 > t1 ? (u2 - u1) / (t2 - t1) : u2 / t2;
  return kernel_rate{rate, std::max(0.0, t1 - u1 / rate) / per};
}
}  // namespace detail

// dequant_gemm<P> by paradigm `act` on one core: N = 128 rows of K = 4096 against 256 and 1024
// weight rows; with more than one core the same at every core (kernel_parallel_key: the kernel's
// own share of the cores, plan/cost_model.hpp, kernel_parallel_factor).
template <class P>
void calibrate_prefill(target_costs& c, act_type act, const ops_calibration_options& o = {}) {
  constexpr std::size_t K = 4096, N = 128, Ms = 256, Ml = 1024;
  std::mt19937_64 rng(0x51ed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(N * K), y(N * Ml), w(Ml * K);
  for (auto& v : x) v = nd(rng);
  for (auto& v : w) v = 0.02f * nd(rng);
  const auto small = pack<P>(quantize<P>(w.data(), Ms, K)), large = pack<P>(quantize<P>(w.data(), Ml, K));
  auto measure = [&](thread_pool* pool) {
    const auto [ts, tl] = detail::fastest_seconds2(
        o.reps, [&](std::size_t) { dequant_gemm<P>(small, x.data(), N, K, y.data(), act, 0, 0, pool); },
        [&](std::size_t) { dequant_gemm<P>(large, x.data(), N, K, y.data(), act, 0, 0, pool); });
    return detail::two_point_rate(double(Ms * K * N), ts, double(Ml * K * N), tl, double(K * N));
  };
  store_kernel_rates(c, prefill_kernel_key(act, P::name()), measure);
}

// attention_decode and attention_prefill on one core, 32 query heads over 8 K / V heads of 64,
// fp16 K / V.
inline void calibrate_attention(target_costs& c, const ops_calibration_options& o = {}) {
  constexpr std::size_t hq = 32, hkv = 8, d = 64;
  attention_options opt;
  opt.heads_q = hq;
  opt.heads_kv = hkv;
  opt.head_dim = d;
  opt.scale = 0.125f;
  std::mt19937_64 rng(0xa77);
  std::normal_distribution<float> nd(0.f, 1.f);
  // copies of a K / V cache of `len` positions ([head][pos][d], K then V)
  // (cold: copies beyond the LLC, for the decode, which streams a cache written long before; a
  // prompt's keys were written just before its attention: one copy)
  auto caches = [&](std::size_t len, bool cold) {
    const std::size_t n = 2 * hkv * len * d;
    std::vector<std::vector<uint16_t>> cs(cold ? std::max<std::size_t>(2, o.cold_bytes / (2 * n) + 1) : 1);
    cs[0].resize(n);
    for (auto& v : cs[0]) v = f32_to_f16(nd(rng));
    for (std::size_t i = 1; i < cs.size(); ++i) cs[i] = cs[0];
    return cs;
  };
  auto view = [&](const std::vector<uint16_t>& kv, std::size_t len) {
    kv_cache_view v;
    v.k = kv.data();
    v.v = kv.data() + hkv * len * d;
    v.type = kv_type::f16;
    v.len = len;
    v.row_stride = std::ptrdiff_t(d);
    v.head_stride = std::ptrdiff_t(len * d);
    return v;
  };
  std::vector<float> q(128 * hq * d), out(128 * hq * d);
  for (auto& v : q) v = nd(rng);
  const auto c1 = caches(512, true), c2 = caches(4096, true);
  auto decode = [&](const std::vector<std::vector<uint16_t>>& cs, std::size_t len) {
    return [&, cp = &cs, len](std::size_t i) {
      attention_decode(opt, q.data(), view((*cp)[i % cp->size()], len), out.data());
    };
  };
  const auto [t1, t2] = detail::fastest_seconds2(4 * o.reps, decode(c1, 512), decode(c2, 4096));
  attention_op a;
  a.heads = hq, a.kv_heads = hkv, a.head_dim = d, a.queries = 1;
  a.context = 512;
  const double u1 = attention_score_macs(a);
  a.context = 4096;
  const double u2 = attention_score_macs(a);
  c.kernels["attention.decode"] = detail::two_point_rate(u1, t1, u2, t2, double(hq));
  // prefill: prompts of 128 and of 512 positions (every query of the context: a prompt's chunk)
  std::vector<float> q2(512 * hq * d), out2(512 * hq * d);
  for (auto& v : q2) v = nd(rng);
  const auto p128 = caches(128, false), p512 = caches(512, false);
  auto prompt = [&](const std::vector<std::vector<uint16_t>>& cs, std::size_t len) {
    return [&, cp = &cs, len](std::size_t i) {
      attention_prefill(opt, q2.data(), len, 0, view((*cp)[i % cp->size()], len), out2.data());
    };
  };
  const auto [s1, s2] = detail::fastest_seconds2(o.reps, prompt(p128, 128), prompt(p512, 512));
  a.queries = a.context = 128;
  const double p1 = attention_score_macs(a);
  a.queries = a.context = 512;
  const double p2 = attention_score_macs(a);
  // (the intercept per query row and head: of the 128-query prompt)
  c.kernels["attention.prefill"] = detail::two_point_rate(p1, s1, p2, s2, 128.0 * double(hq));
}

namespace detail {
// rows of V logits of one type, copies of one row laid end to end over about `bytes` (MXFP8's
// exponents likewise in their own array): view(i, n), the first n logits of copy i % count (n a
// multiple of 32); a copy not read in the last `bytes` of reads is cold
struct logit_rotation {
  logit_type type = logit_type::f32;
  std::size_t V = 0, count = 0, row_bytes = 0, row_scales = 0;
  lutkit::detail::aligned_bytes data, scales;
  logits_view view(std::size_t i, std::size_t n) const {
    const std::size_t r = i % count;
    return {type, data.get() + r * row_bytes, scales ? scales.get() + r * row_scales : nullptr, 1, std::min(n, V)};
  }
  // `rows` consecutive copies from copy i % (count - rows + 1): rows x V logits (V * the element
  // bytes a multiple of 64: the copies then lie back to back)
  logits_view view_rows(std::size_t i, std::size_t rows) const {
    lutkit::detail::require(rows <= count && row_bytes == V * logits_view{type, nullptr, nullptr, 1, V}.element_bytes(),
                            "logit_rotation: ", rows, " rows of ", V, " logits are not back to back");
    const std::size_t r = i % (count - rows + 1);
    return {type, data.get() + r * row_bytes, scales ? scales.get() + r * row_scales : nullptr, rows, V};
  }
};
inline logit_rotation make_logit_rotation(logit_type t, const std::vector<float>& row, std::size_t bytes) {
  logit_rotation o;
  o.type = t, o.V = row.size();
  const logits_view one{t, nullptr, nullptr, 1, o.V};
  o.row_bytes = (o.V * one.element_bytes() + 63) / 64 * 64;
  o.row_scales = t == logit_type::mxfp8 ? one.blocks_per_row() : 0;
  o.count = std::max<std::size_t>(2, bytes / o.row_bytes + 1);
  o.data = lutkit::detail::alloc_aligned(o.count * o.row_bytes);
  if (o.row_scales) o.scales = lutkit::detail::alloc_aligned(o.count * o.row_scales);
  uint8_t* d = o.data.get();
  for (std::size_t i = 0; i < o.V; ++i) {
    if (t == logit_type::f32) std::memcpy(d + 4 * i, &row[i], 4);
    if (t == logit_type::bf16 || t == logit_type::f16) {
      const uint16_t h = t == logit_type::bf16 ? f32_to_bf16(row[i]) : f32_to_f16(row[i]);
      std::memcpy(d + 2 * i, &h, 2);
    }
  }
  if (t == logit_type::mxfp8)
    for (std::size_t j = 0; j < o.row_scales; ++j)
      mxfp8_encode_block(row.data() + 32 * j, std::min<std::size_t>(32, o.V - 32 * j), d + 32 * j, o.scales.get() + j);
  for (std::size_t r = 1; r < o.count; ++r) {
    std::memcpy(d + r * o.row_bytes, d, o.row_bytes);
    if (o.row_scales) std::memcpy(o.scales.get() + r * o.row_scales, o.scales.get(), o.row_scales);
  }
  return o;
}
// A row of V logits as a decode step gives them: a normal bulk (standard deviation 2) and eight
// tokens far above it (8 to 15, among the first `spread` tokens), as the suite's sampling
// benchmarks. The selections' cost depends on the kept set: flat rows (thousands of tokens in
// top-p's kept set) cost more than this.
inline std::vector<float> peaked_logits(std::size_t V, uint64_t seed, std::size_t spread = 0) {
  if (spread == 0 || spread > V) spread = V;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> row(V);
  for (auto& v : row) v = nd(rng);
  for (int k = 0; k < 8 && V > 0; ++k) row[rng() % spread] = 8.f + float(k);
  return row;
}
}  // namespace detail

// Sampling on one core, one row of 32000 and one of 128256 logits (peaked_logits), cold: each
// pass of sampling_pass on the logit types it is calibrated for, "sampling.<pass>.<type>"
// (sampling_kernel_key):
//   maxima  ar_sample, top-k 40, top-p 0.95, temperature 0.8      fp32
//   chords  ar_sample, top-p 0.95, temperature 0.8                fp32
//   exps    ar_sample, temperature 0.8                            fp32
//   dllm    dllm_sample of one position, temperature 0            fp32, bf16, fp16, MXFP8
//   dllm_gumbel  the same at temperature 1                        fp32
// Other pairs are modelled from sampling_flops. With more than one core, each ar_sample pass is
// also timed on one row over every core: the time beyond the model's is the split's own cost per
// row (sampling_split_key).
inline void calibrate_sampling(target_costs& c, const ops_calibration_options& o = {}) {
  const std::size_t V1 = 32000, V2 = 128256;
  const std::vector<float> row = detail::peaked_logits(V2, 0x5a3, V1);  // (both rows peaked)
  int32_t tok = 0;
  // the rows of 32000 are the first 32000 logits of the rows of 128256 (one rotation a type).
  // Every call takes the next copy, over all passes: a copy another call read moments before
  // (another size, another pass) would come from the cache.
  detail::logit_rotation rot = detail::make_logit_rotation(logit_type::f32, row, o.cold_bytes);
  std::size_t next = 0;
  auto fresh = [&](std::size_t V) { return rot.view(next++, V); };
  auto rate = [&](sampling_pass pass, auto&& call) {
    const auto [t1, t2] = detail::fastest_seconds2(
        4 * o.reps, [&](std::size_t) { call(fresh(V1)); }, [&](std::size_t) { call(fresh(V2)); });
    c.kernels[sampling_kernel_key(pass, rot.type)] =
        detail::two_point_rate(double(V1), t1, double(V2), t2, 1.0);
  };
  ar_params p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  for (sampling_pass pass : {sampling_pass::maxima, sampling_pass::chords, sampling_pass::exps}) {
    if (pass == sampling_pass::chords) p.top_k = 0;
    if (pass == sampling_pass::exps) p.top_p = 1.f;
    lutkit::detail::require(describe_ar_sampling(p, V1).pass == pass && describe_ar_sampling(p, V2).pass == pass,
                            "calibrate_sampling: the chain of pass ", sampling_pass_name(pass), " takes another pass");
    std::size_t seed = 0;
    rate(pass, [&](const logits_view& lv) {
      p.seed = seed++;
      ar_sample(lv, &p, &tok);
    });
    // a row over every core: what the split costs beyond the model's parts (the selection reads
    // blocks the other cores streamed; parts start without a prefetched chunk), per row
    if (c.cores > 1) {
      thread_pool pool(std::size_t(c.cores));
      c.kernels.erase(sampling_split_key(pass, rot.type));  // (a calibration's again: the model without it)
      const double modelled = model_sampling(c, describe_ar_sampling(p, V2), c.cores).total_s;
      // (the split row alone: the pair's second call is empty)
      const double t = detail::fastest_seconds2(
                           4 * o.reps,
                           [&](std::size_t i) {
                             p.seed = i;
                             ar_sample(fresh(V2), &p, &tok, &pool);
                           },
                           [](std::size_t) {})
                           .first;
      c.kernels[sampling_split_key(pass, rot.type)] = kernel_rate{double(V2) / t, std::max(0.0, t - modelled)};
    }
  }
  int32_t x = 0, x0 = 0;
  float conf = 0;
  for (logit_type t : {logit_type::f32, logit_type::bf16, logit_type::f16, logit_type::mxfp8})
    for (float temperature : {0.f, 1.f}) {
      if (temperature > 0.f && t != logit_type::f32) continue;
      if (rot.type != t) {  // (its first copies, written first, are the coldest)
        rot = {};
        rot = detail::make_logit_rotation(t, row, o.cold_bytes);
        next = 0;
      }
      dllm_params dp;
      dp.temperature = temperature;
      rate(describe_dllm_sampling(dp, 1, V1, t).pass, [&](const logits_view& lv) {
        dp.mask_id = x = int32_t(lv.vocab - 1);
        ++dp.seed;
        dllm_sample(lv, 1, 1, &x, dp, &x0, &conf);
      });
    }
}

}  // namespace lutkit::plan
