// The differential fuzz driver, instantiated by test_lut_gemv_{a,b,c}.cpp over slices of the
// policy list (so the three translation units build in parallel).
#pragma once
#include "common.hpp"
#include "policy_list.hpp"

#include <cstring>

namespace lutkit_test {

inline constexpr int cases_per_policy = 60;

template <class P>
void fuzz_policy(uint64_t seed_base) {
  using namespace lutkit;
  const auto targets = hwy_backend::available_targets();
  REQUIRE(!targets.empty());
  static thread_pool pool(2);
  for (int c = 0; c < scaled_cases(cases_per_policy); ++c) {
    const uint64_t seed = seed_base * 1000003ull + uint64_t(c);
    std::mt19937_64 rng(seed);
    const std::size_t M = std::uniform_int_distribution<std::size_t>(1, c % 7 == 0 ? 300 : 150)(rng);
    const std::size_t K = random_k<P>(rng, 640);
    const std::size_t N = std::uniform_int_distribution<std::size_t>(1, 16)(rng);
    act_kind kind = act_kind::gaussian;
    switch (c % 10) {
      case 3: kind = act_kind::zeros; break;
      case 5: kind = act_kind::extremes; break;
      case 6: kind = act_kind::sparse; break;
      case 7: kind = c % 20 == 7 ? act_kind::with_nan : act_kind::with_inf; break;
      default: break;
    }
    const auto w = random_weights(rng, M * K);
    const auto x = random_activations(rng, N * K, kind);
    const auto q = quantize<P>(w.data(), M, K);
    const auto wp = pack<P>(q);
    const auto t = build_tables<P>(x.data(), N, K);
    const auto yref = ref::gemv<P>(q, x.data(), N);
    INFO("policy " << P::name() << " seed " << seed << " M=" << M << " K=" << K << " N=" << N
                   << " case " << c);
    std::vector<float> first, vbmi[2];
    for (const int64_t tg : targets) {
      INFO("target " << hwy_backend::target_name(tg));
      std::vector<float> y(N * M, -12345.f);
      lut_gemv<P>(wp, t, y.data(), 0, nullptr, tg);
      const std::string msg = compare_to_ref<P>(q, t, x, yref, y.data(), M, 0, M);
      CHECK(msg == "");
      if (first.empty()) first = y;
      if (tg == hwy_backend::target_avx512_vbmi) vbmi[0] = y;
      if (tg == hwy_backend::target_avx512_vbmi_permb) vbmi[1] = y;
    }
    // the VBMI kernel's two lookup forms: the same integer sums in the same order, the same bits
    if (!vbmi[0].empty() && !vbmi[1].empty())
      CHECK(std::memcmp(vbmi[0].data(), vbmi[1].data(), vbmi[0].size() * sizeof(float)) == 0);
    if (c % 4 == 0) {
      // portion: rows [r0, r1) equal the same rows of the full run; other rows untouched
      const std::size_t r0 = std::uniform_int_distribution<std::size_t>(0, M)(rng);
      const std::size_t r1 = std::uniform_int_distribution<std::size_t>(r0, M)(rng);
      const std::size_t ldy = M + 3;
      std::vector<float> yp(N * ldy, 777.f);
      lut_gemv_rows<P>(wp, t, yp.data(), r0, r1, ldy, targets.front());
      bool same = true;
      for (std::size_t n = 0; n < N; ++n)
        for (std::size_t m = 0; m < ldy; ++m) {
          const float v = yp[n * ldy + m];
          if (m >= r0 && m < r1) {
            const float f = first[n * M + m];
            same = same && (v == f || (std::isnan(v) && std::isnan(f)));
          } else {
            same = same && v == 777.f;
          }
        }
      INFO("rows [" << r0 << ", " << r1 << ") ldy " << ldy);
      CHECK(same);
      // the thread pool splits tiles; the result is bit-identical to one thread
      std::vector<float> yt(N * M, -1.f);
      lut_gemv<P>(wp, t, yt.data(), 0, &pool, targets.front());
      bool same_t = true;
      for (std::size_t i = 0; i < yt.size(); ++i)
        same_t = same_t && (yt[i] == first[i] || (std::isnan(yt[i]) && std::isnan(first[i])));
      CHECK(same_t);
    }
  }
}

template <std::size_t Begin, std::size_t End>
void fuzz_slice() {
  for_policies<Begin, End>([]<class P>() {
    SECTION(P::name()) { fuzz_policy<P>(lutkit::policy_hash(P::name()) & 0xFFFFFF); }
  });
}

}  // namespace lutkit_test
