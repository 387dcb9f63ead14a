// Helpers of the AIE suite: seeded data, the host-side packing of target::aie blobs, a core per
// call (the 64 KiB model lives on the heap), and the fault runner.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <lutkit/core/policy.hpp>
#include <lutkit/quant/packed_weights.hpp>
#include <lutkit/quant/q4nx.hpp>
#include <lutkit/quant/quant.hpp>
#include <lutkit/quant/reference.hpp>
#include <lutkit/targets/aie/aie.hpp>

namespace aie_test {

namespace aie = lutkit::aie;
using aie::fault;

template <class P>
std::unique_ptr<aie::core<P>> make_core(fault f = fault::none) {
  auto c = std::make_unique<aie::core<P>>();
  c->flt = f;
  return c;
}

inline std::vector<float> gaussian(std::mt19937_64& rng, std::size_t n, float sd = 1.f) {
  std::normal_distribution<float> nd(0.f, sd);
  std::uniform_int_distribution<int> pick(0, 19);
  std::vector<float> v(n);
  for (auto& x : v) x = pick(rng) == 0 ? 4.f * nd(rng) : nd(rng);
  return v;
}

// the quantized weights of policy P (Q4NX through its own quantizer)
template <class P>
lutkit::quantized<P> quantize_any(const std::vector<float>& w, std::size_t M, std::size_t K) {
  if constexpr (std::is_same_v<typename P::format, lutkit::fmt::q4nx>)
    return lutkit::from_q4nx<P>(lutkit::quantize_q4nx(w.data(), M, K));
  else
    return lutkit::quantize<P>(w.data(), M, K);
}

// a target::aie blob: the packer by the element map (the host's fast packer walks the host
// layouts only), checked against unpack
template <class P>
lutkit::packed_weights<P> pack_aie(const lutkit::quantized<P>& q) {
  static_assert(P::spec.mmul(), "an AIE policy");
  return lutkit::detail::pack_by_element_map<P>(q);
}

inline std::string case_name(const std::string& policy, uint64_t seed) {
  return policy + " seed " + std::to_string(seed);
}

}  // namespace aie_test
