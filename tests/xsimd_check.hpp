// (included by test_xsimd_{a,b,c}.cpp, one slice of the policy list each)
// The xsimd backend: same blob, same tables, checked against the double reference and against
// the Highway backend, for every policy and the avx512bw (lutkit_xsimd_avx512_tests) or the avx2
// and ssse3 arch tags (lutkit_xsimd_tests).
#pragma once
#include <lutkit/targets/xsimd/lut_gemv_xsimd.hpp>

#include "common.hpp"
#include "policy_list.hpp"


namespace lutkit_test {
template <class Arch, class P>
void check_arch(const char* arch_name, int64_t hwy_target) {
  for (int c = 0; c < 12; ++c) {
    const uint64_t seed = (policy_hash(P::name()) & 0xFFFF) * 131 + uint64_t(c);
    std::mt19937_64 rng(seed);
    const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 200)(rng);
    const std::size_t K = random_k<P>(rng, 512);
    const std::size_t N = std::uniform_int_distribution<std::size_t>(1, 16)(rng);
    const auto w = random_weights(rng, M * K);
    const auto x = random_activations(rng, N * K, c == 5 ? act_kind::with_nan : act_kind::gaussian);
    const auto q = quantize<P>(w.data(), M, K);
    const auto wp = pack<P>(q);
    const auto t = build_tables<P>(x.data(), N, K);
    const auto yref = ref::gemv<P>(q, x.data(), N);
    INFO(arch_name << " " << P::name() << " seed " << seed << " M=" << M << " K=" << K << " N=" << N);
    std::vector<float> y(N * M), yh(N * M);
    xsimd_backend::lut_gemv<Arch>(wp, t, y.data());
    CHECK(compare_to_ref<P>(q, t, x, yref, y.data(), M, 0, M) == "");
    // identical integer arithmetic and epilogue: the Highway result for the same ISA is bit-identical
    // (ssse3 has no FMA; this TU is built with -mfma, so the compiler may contract its
    // mul+add: there the check is the error bound alone)
    if (hwy_target != 0) {
      lut_gemv<P>(wp, t, yh.data(), 0, nullptr, hwy_target);
      bool same = true;
      for (std::size_t i = 0; i < y.size(); ++i) same = same && (y[i] == yh[i] || (std::isnan(y[i]) && std::isnan(yh[i])));
      CHECK(same);
    }
    // row range
    const std::size_t r0 = M / 3, r1 = M - M / 4;
    std::vector<float> yp(N * M, 5.f);
    xsimd_backend::lut_gemv_rows<Arch>(wp, t, yp.data(), r0, r1);
    bool part = true;
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t m = 0; m < M; ++m) {
        const float v = yp[n * M + m], f = y[n * M + m];
        part = part && ((m >= r0 && m < r1) ? (v == f || (std::isnan(v) && std::isnan(f))) : v == 5.f);
      }
    CHECK(part);
  }
}
template <std::size_t Begin, std::size_t End>
void xsimd_slice() {
  for_policies<Begin, End>([]<class P>() {
#if defined(__AVX512BW__)
    // lutkit_xsimd_avx512_tests: ctest runs it only where the CPU has AVX-512BW
    REQUIRE(__builtin_cpu_supports("avx512bw"));
    check_arch<xsimd::avx512bw, P>("avx512bw", HWY_AVX3);
#else
    // lutkit_xsimd_tests, built for AVX2
    REQUIRE(__builtin_cpu_supports("avx2"));
    check_arch<xsimd::avx2, P>("avx2", HWY_AVX2);
    check_arch<xsimd::ssse3, P>("ssse3", 0);
#endif
  });
}
}  // namespace lutkit_test
