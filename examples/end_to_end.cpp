// lutkit end to end: one decode step of an attention block's projections with 2-bit weights.
// Q, K and V share one activation input, so the LUT tables are built once and read by all
// three GEMVs (T-MAN's precompute/lookup split). The result is checked against the double
// reference and timed against a float GEMV on the dequantized weights.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <lutkit/lutkit.hpp>

using P = lutkit::policy<lutkit::fmt::uint_asym<2>, lutkit::group<64>>;  // mirrored int16 tables (the default)

int main() {
  const std::size_t D = 4096, KV = 1024, N = 1;  // Llama-3-8B: q 4096x4096, k/v 1024x4096 (GQA)
  std::mt19937_64 rng(42);
  std::normal_distribution<float> nd(0.f, 0.02f);
  auto rand_vec = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& e : v) e = nd(rng);
    return v;
  };
  const auto wq = rand_vec(D * D), wk = rand_vec(KV * D), wv = rand_vec(KV * D);
  std::vector<float> x(N * D);
  for (auto& e : x) e = std::normal_distribution<float>(0.f, 1.f)(rng);

  // offline: quantize and pack once
  const auto qq = lutkit::quantize<P>(wq.data(), D, D), qk = lutkit::quantize<P>(wk.data(), KV, D),
             qv = lutkit::quantize<P>(wv.data(), KV, D);
  const auto pq = lutkit::pack<P>(qq), pk = lutkit::pack<P>(qk), pv = lutkit::pack<P>(qv);

  // decode step: one table build, three lookups
  lutkit::thread_pool pool(2);
  std::vector<float> q(N * D), k(N * KV), v(N * KV);
  const auto t0 = std::chrono::steady_clock::now();
  const int iters = 200;
  for (int i = 0; i < iters; ++i) {
    const auto tables = lutkit::build_tables<P>(x.data(), N, D);
    lutkit::lut_gemv(pq, tables, q.data(), 0, &pool);
    lutkit::lut_gemv(pk, tables, k.data(), 0, &pool);
    lutkit::lut_gemv(pv, tables, v.data(), 0, &pool);
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;

  // check against the double reference on the same quantized weights
  const auto tables = lutkit::build_tables<P>(x.data(), N, D);
  double worst = 0;
  bool within = true;
  auto check = [&](const lutkit::quantized<P>& qw, const std::vector<float>& y) {
    const auto ref = lutkit::ref::gemv<P>(qw, x.data(), N);
    for (std::size_t m = 0; m < qw.M; ++m) {
      const double err = std::fabs(y[m] - ref[m]);
      const double bound = lutkit::ref::lut_error_bound<P>(qw, tables, x.data(), 0, m);
      worst = std::max(worst, err / bound);
      within = within && err <= bound;
    }
  };
  check(qq, q);
  check(qk, k);
  check(qv, v);
  const double bytes = double(pq.size_bytes() + pk.size_bytes() + pv.size_bytes());
  std::printf("policy %s\n", P::name().c_str());
  std::printf("QKV decode step (tables once + 3 LUT-GEMVs, 2 threads): %.1f us, %.1f GB/s of packed weights\n", us,
              bytes / us * 1e-3);
  std::printf("max |lutkit - reference| / derived error bound = %.3f (%s)\n", worst, within ? "within bound" : "EXCEEDS BOUND");
  return within ? 0 : 1;
}
