// Shared by the benchmark translation units: one thread pool per thread count.
#pragma once
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include <lutkit/quant/quant.hpp>
#include <lutkit/core/thread_pool.hpp>

namespace lutkit_bench {
// Uniform random codes with positive random scales (and zeros) for policy P: benchmark weights
// (timings do not depend on the values, only the layouts need to be real).
template <class P>
lutkit::quantized<P> random_quantized(std::size_t M, std::size_t K, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::size_t G = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) : K;
  constexpr int maxq = lutkit::format_traits<typename P::format>::max_code;
  std::uniform_int_distribution<int> cd(0, maxq);
  std::vector<uint8_t> codes(M * K);
  for (auto& v : codes) v = uint8_t(cd(rng));
  std::normal_distribution<float> nd(0.f, 0.02f);
  std::vector<float> s(M * (K / G)), z(M * (K / G));
  const float s0 = std::fabs(nd(rng)) + 0.01f;
  for (auto& v : s) v = P::spec.per_tensor ? s0 : std::fabs(nd(rng)) + 0.01f;
  for (auto& v : z) v = float(cd(rng));
  return lutkit::from_codes<P>(codes.data(), s.data(), P::spec.asymmetric ? z.data() : nullptr, M, K);
}

lutkit::thread_pool& pool_for(int threads);
void register_prefill();
void register_attention();
// the peak measured by peak/<kind>/threads:T in this run ("bf16_dot/2"), 0 if not yet measured
double peak_gflops(const std::string& key);
void register_sampling();
void register_decode();
void register_load();
}  // namespace lutkit_bench
