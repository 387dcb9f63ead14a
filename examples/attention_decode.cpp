// lutkit example: one decode step of a Llama-style attention block, written the way an engine
// would with lutkit alone:
//   x ─build_tables (once)─▶ Q, K, V = LUT-GEMV on 2-bit weights sharing the tables
//     ─▶ RoPE on q and k at the token's position ─▶ append k, v to the fp16 KV cache
//     ─▶ attention_decode (GQA, split-KV over the pool) ─▶ output projection (LUT-GEMV) ─▶ y
// Each stage is checked against the double reference on the stage's own inputs, under that
// stage's derived error bound (gemv/reference.hpp, docs/attention.md "Error bound").
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <lutkit/lutkit.hpp>

using P = lutkit::policy<lutkit::fmt::uint_asym<2>, lutkit::group<64>>;  // mirrored int16 tables (the default)

namespace {
// rotate-half RoPE (Llama): channel pairs (i, i + d/2) rotated by pos * base^(-2i/d)
void rope(float* v, std::size_t d, std::size_t pos) {
  for (std::size_t i = 0; i < d / 2; ++i) {
    const double th = double(pos) * std::pow(10000.0, -2.0 * double(i) / double(d));
    const float c = float(std::cos(th)), s = float(std::sin(th));
    const float a = v[i], b = v[i + d / 2];
    v[i] = a * c - b * s;
    v[i + d / 2] = a * s + b * c;
  }
}
}  // namespace

int main() {
  // a 2048-wide block: 16 query heads, 4 KV heads, head dim 128; 700 tokens already cached
  const std::size_t D = 2048, hq = 16, hkv = 4, d = 128, QD = hq * d, KD = hkv * d, cap = 1024, past = 700;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd(0.f, 0.02f), n1(0.f, 1.f);
  auto rand_vec = [&](std::size_t n, std::normal_distribution<float>& dist) {
    std::vector<float> v(n);
    for (auto& e : v) e = dist(rng);
    return v;
  };
  const auto wq = rand_vec(QD * D, nd), wk = rand_vec(KD * D, nd), wv = rand_vec(KD * D, nd), wo = rand_vec(D * QD, nd);
  const auto x = rand_vec(D, n1);

  // offline: quantize and pack once
  const auto qq = lutkit::quantize<P>(wq.data(), QD, D), qk = lutkit::quantize<P>(wk.data(), KD, D),
             qv = lutkit::quantize<P>(wv.data(), KD, D), qo = lutkit::quantize<P>(wo.data(), D, QD);
  const auto pq = lutkit::pack<P>(qq), pk = lutkit::pack<P>(qk), pv = lutkit::pack<P>(qv), po = lutkit::pack<P>(qo);

  // the engine's KV cache: fp16, head-major [head][capacity][d], `past` tokens filled
  std::vector<uint16_t> kc(hkv * cap * d), vc(hkv * cap * d);
  for (std::size_t h = 0; h < hkv; ++h)
    for (std::size_t t = 0; t < past; ++t)
      for (std::size_t c = 0; c < d; ++c) {
        kc[(h * cap + t) * d + c] = lutkit::f32_to_f16(n1(rng));
        vc[(h * cap + t) * d + c] = lutkit::f32_to_f16(n1(rng));
      }

  lutkit::thread_pool pool(2);
  lutkit::attention_options ao;
  ao.heads_q = hq;
  ao.heads_kv = hkv;
  ao.head_dim = d;
  ao.scale = float(1 / std::sqrt(double(d)));

  // ---- the decode step
  const auto t0 = std::chrono::steady_clock::now();
  const auto tables = lutkit::build_tables<P>(x.data(), 1, D);
  std::vector<float> q(QD), k(KD), v(KD);
  lutkit::lut_gemv(pq, tables, q.data(), 0, &pool);
  lutkit::lut_gemv(pk, tables, k.data(), 0, &pool);
  lutkit::lut_gemv(pv, tables, v.data(), 0, &pool);
  const std::vector<float> q_proj = q, k_proj = k;
  for (std::size_t h = 0; h < hq; ++h) rope(q.data() + h * d, d, past);
  for (std::size_t h = 0; h < hkv; ++h) rope(k.data() + h * d, d, past);
  for (std::size_t h = 0; h < hkv; ++h)
    for (std::size_t c = 0; c < d; ++c) {
      kc[(h * cap + past) * d + c] = lutkit::f32_to_f16(k[h * d + c]);
      vc[(h * cap + past) * d + c] = lutkit::f32_to_f16(v[h * d + c]);
    }
  const lutkit::kv_cache_view kv{kc.data(), vc.data(), lutkit::kv_type::f16, past + 1, std::ptrdiff_t(d),
                                 std::ptrdiff_t(cap * d)};
  std::vector<float> att(QD);
  lutkit::attention_decode(ao, q.data(), kv, att.data(), nullptr, &pool);
  const auto otables = lutkit::build_tables<P>(att.data(), 1, QD);
  std::vector<float> y(D);
  lutkit::lut_gemv(po, otables, y.data(), 0, &pool);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();

  // ---- checks, stage by stage
  double worst = 0;
  bool within = true;
  auto check_gemv = [&](const lutkit::quantized<P>& qw, const lutkit::lut_tables<P>& t, const float* in,
                        const std::vector<float>& out) {
    const auto ref = lutkit::ref::gemv<P>(qw, in, 1);
    for (std::size_t m = 0; m < qw.M; ++m) {
      const double err = std::fabs(out[m] - ref[m]);
      const double bound = lutkit::ref::lut_error_bound<P>(qw, t, in, 0, m);
      worst = std::max(worst, err / bound);
      within = within && err <= bound;
    }
  };
  check_gemv(qq, tables, x.data(), q_proj);
  check_gemv(qk, tables, x.data(), k_proj);
  check_gemv(qv, tables, x.data(), v);
  // attention (fp32 decode path): per-weight relative error eta = (d + 4) u A (the fp32 dot) +
  // chunks (eps_exp + u) (the exp factors, eps_exp = 4u) + 2 u gap (the exp arguments' rounding);
  // output error <= 2 maxv eta / (1 - eta) + 2 (n + 2) u maxv (the fp32 sums) + u maxv (division)
  const double u = 1.0 / 16777216.0;
  for (std::size_t h = 0; h < hq; ++h) {
    const auto r = lutkit::ref::attention_one(ao, q.data() + h * d, int64_t(past), kv, h / (hq / hkv), nullptr);
    const double eta = (double(d) + 4) * u * r.max_dot_abs + double(past / 16 + 2) * 5 * u + 2 * u * r.mean_gap;
    const double n = double(r.visible + 2);
    const double bound = 2 * r.max_abs_v * eta / (1 - eta) + 2 * n * u / (1 - n * u) * r.max_abs_v + u * r.max_abs_v;
    for (std::size_t c = 0; c < d; ++c) {
      const double err = std::fabs(att[h * d + c] - r.out[c]);
      worst = std::max(worst, err / bound);
      within = within && err <= bound;
    }
  }
  check_gemv(qo, otables, att.data(), y);

  std::printf("attention block decode step: d_model %zu, %zu query heads / %zu KV heads, head dim %zu, %zu cached tokens\n",
              D, hq, hkv, d, past);
  std::printf("policy %s; step (tables, Q/K/V, RoPE, append, attention, output projection, 2 threads): %.1f us\n",
              P::name().c_str(), us);
  std::printf("max |lutkit - reference| / derived error bound over all stages = %.3f (%s)\n", worst,
              within ? "within bound" : "EXCEEDS BOUND");
  return within ? 0 : 1;
}
