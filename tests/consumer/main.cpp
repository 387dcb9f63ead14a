// A program outside the lutkit tree (tests/consumer/run.cmake builds it against an installed
// lutkit and through add_subdirectory): one packed blob, saved and reloaded as bytes, serves a
// decode LUT-GEMV and an fp32 prefill dequant-GEMM; both are checked against the double
// reference. Built with LUTKIT_CONSUMER_XSIMD (target lutkit::xsimd, AVX2 flags, xsimd::avx2), it also
// runs the xsimd backend's LUT-GEMV on the same blob and tables. Exit status 0 only if every
// output is within its bound.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <lutkit/lutkit.hpp>
#ifdef LUTKIT_CONSUMER_XSIMD
#include <lutkit/targets/xsimd/lut_gemv_xsimd.hpp>
#endif

using P = lutkit::policy<lutkit::fmt::uint_asym<4>, lutkit::group<64>, lutkit::table::lut4<int8_t, false>>;

int main() {
  const std::size_t M = 200, K = 512, N = 3;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> w(M * K), x(N * K);
  for (auto& e : w) e = nd(rng);
  for (auto& e : x) e = nd(rng);

  const auto q = lutkit::quantize<P>(w.data(), M, K);
  const auto packed = lutkit::pack<P>(q);
  const auto wp = lutkit::packed_weights<P>::from_bytes(packed.bytes(), packed.size_bytes());
  lutkit::thread_pool pool(2);

  std::vector<float> yd(N * M), yp(N * M);
  const auto t = lutkit::build_tables<P>(x.data(), N, K);
  lutkit::lut_gemv(wp, t, yd.data(), 0, &pool);
  lutkit::dequant_gemm(wp, x.data(), N, K, yp.data(), lutkit::act_type::fp32, 0, 0, &pool);
  std::vector<float> yx = yd;  // the xsimd backend's output where it is built, else a copy
#ifdef LUTKIT_CONSUMER_XSIMD
  if (!__builtin_cpu_supports("avx2")) {
    std::printf("lutkit consumer (xsimd): this CPU lacks AVX2, not run\n");
    return 0;
  }
  lutkit::xsimd_backend::lut_gemv<xsimd::avx2>(wp, t, yx.data());
#endif

  const auto ref = lutkit::ref::gemm<P>(q, x.data(), N);  // ref[n * M + m]
  const auto wd = lutkit::ref::dequantize<P>(q);
  std::size_t bad = 0;
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t m = 0; m < M; ++m) {
      const double r = ref[n * M + m];
      // decode: the provable LUT bound; prefill fp32: weights rounded once to fp32, K fp32 adds
      const double bd = lutkit::ref::lut_error_bound<P>(q, t, x.data(), n, m);
      double mag = 0;
      for (std::size_t k = 0; k < K; ++k) mag += std::fabs(wd[m * K + k] * x[n * K + k]);
      const double bp = double(K + 2) * std::ldexp(1.0, -24) * mag;
      if (!(std::fabs(yd[n * M + m] - r) <= bd) || !(std::fabs(yx[n * M + m] - r) <= bd) ||
          !(std::fabs(yp[n * M + m] - r) <= bp)) {
        if (bad++ < 5)
          std::printf("row %zu col %zu: lut_gemv %g, xsimd %g, dequant_gemm %g, reference %g\n", m, n,
                      yd[n * M + m], yx[n * M + m], yp[n * M + m], r);
      }
    }
#ifdef LUTKIT_CONSUMER_XSIMD
  const char* variant = "with the xsimd backend";
#else
  const char* variant = "run-time dispatch";
#endif
  std::printf("lutkit consumer, %s (%s, %zu B blob): %zu of %zu outputs outside their bounds\n", variant,
              P::name().c_str(), wp.size_bytes(), bad, N * M);
  return bad == 0 ? 0 : 1;
}
