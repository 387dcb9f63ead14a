// The vectorized table builder agrees with the scalar specification (same block scales and
// sums; entries within one rounding step), for every policy.
#include <array>

#include "common.hpp"
#include "policy_list.hpp"

using namespace lutkit;
using namespace lutkit_test;

TEST_CASE("vectorized table build matches the scalar builder", "[tables]") {
  for_policies<0, policy_count>([]<class P>() {
    std::mt19937_64 rng(policy_hash(P::name()) ^ 99);
    for (int c = 0; c < 6; ++c) {
      const std::size_t K = random_k<P>(rng, 700), N = 1 + c % 3;
      // sparse: zeros in the sums; extremes (3e4 and 1e-30 in one block) and case 3 (below): sums
      // inexact in double, where xsum must still be the scalar order's
      const act_kind kind = c == 4 ? act_kind::with_nan : c == 2 ? act_kind::sparse : c == 5 ? act_kind::extremes : act_kind::gaussian;
      auto x = random_activations(rng, N * K, kind);
      if (c == 3) {  // cancellation: 2^60 + 1 - 2^60 is 0 or 1 by the order of the double sum
        std::uniform_int_distribution<int> pick(0, 4);
        for (auto& v : x) v = std::array<float, 5>{0x1p60f, -0x1p60f, 1.f, 3.f, 0.5f}[std::size_t(pick(rng))];
      }
      const auto fast = build_tables<P>(x.data(), N, K);
      const auto slow = detail::build_tables_scalar<P>(x.data(), N, K);
      INFO(P::name() << " K=" << K << " N=" << N << " case " << c);
      const std::size_t steps = fast.layout().steps(), tb = P::spec.table_bytes_per_step();
      bool entries_close = true, scales_close = true;
      for (std::size_t n = 0; n < N; ++n) {
        for (std::size_t b = 0; b < fast.layout().blocks(); ++b) {
          const float a = fast.tscale(n)[b], s = slow.tscale(n)[b];
          scales_close = scales_close && ((std::isnan(a) && std::isnan(s)) || std::fabs(a - s) <= 1e-6f * std::fabs(s));
          const float xa = fast.xsum(n)[b], xs = slow.xsum(n)[b];
          scales_close = scales_close && ((std::isnan(xa) && std::isnan(xs)) || xa == xs);
        }
        for (std::size_t i = 0; i < steps * tb; i += tb)
          for (int e = 0; e < 16; ++e) {
            int va = fast.entries(n)[i + e], vs = slow.entries(n)[i + e];
            if (P::spec.entry_bits == 16) {
              va = int(fast.entries(n)[i + 16 + e]) * 256 + int(uint8_t(fast.entries(n)[i + e]));
              vs = int(slow.entries(n)[i + 16 + e]) * 256 + int(uint8_t(slow.entries(n)[i + e]));
            }
            entries_close = entries_close && std::abs(va - vs) <= 1;
          }
      }
      CHECK(scales_close);
      CHECK(entries_close);
    }
  });
}
