// Shared by the benchmark translation units: one thread pool per thread count, benchmark weights,
// and the cold rotations.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <lutkit/core/memory.hpp>
#include <lutkit/quant/packed_weights.hpp>
#include <lutkit/io/ggml_blocks.hpp>
#include <lutkit/quant/kquant.hpp>
#include <lutkit/quant/quant.hpp>
#include <lutkit/core/thread_pool.hpp>

namespace lutkit_bench {
// ---- cold operands (docs/benchmarks.md, "Cold"). A cold benchmark rotates over copies of its
// operand whose total exceeds lutkit::cold_bytes() (twice the last-level cache), so that every
// call reads its copy from DRAM, as a decode step reads weights last touched a step before.

// How many copies of an operand of `bytes` a cold rotation holds (at least 2).
inline std::size_t cold_count(std::size_t bytes) {
  return std::max<std::size_t>(2, lutkit::cold_bytes() / std::max<std::size_t>(bytes, 1) + 1);
}

// The process's one cold rotation: rotation<Set>(key, make) returns the set make() built for key,
// building it (and freeing the set alive before, first) when another key asks, so a run over many
// policies holds one rotation (2x the LLC: 600 MB on a 300 MB-LLC machine) at a time. The
// reference is valid until a call with another key; a benchmark uses one key.
struct rotation_slot {
  std::string key;
  std::shared_ptr<void> set;
};
inline rotation_slot& the_rotation() {
  static rotation_slot s;
  return s;
}
template <class Set, class Make>
Set& rotation(const std::string& key, Make make) {
  rotation_slot& s = the_rotation();
  const std::string k = std::string(typeid(Set).name()) + "|" + key;
  if (!s.set || s.key != k) {
    s.set.reset();
    s.key.clear();
    s.set = std::make_shared<Set>(make());
    s.key = k;
  }
  return *static_cast<Set*>(s.set.get());
}
// n copies of a packed blob (the bytes copied as they are: the source was validated when made)
template <class P>
std::vector<lutkit::packed_weights<P>> blob_copies(const lutkit::packed_weights<P>& first, std::size_t n) {
  std::vector<lutkit::packed_weights<P>> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    v.emplace_back(first.M(), first.K(), lutkit::detail::data_uninitialized_t{});
    std::memcpy(v.back().bytes(), first.bytes(), first.size_bytes());
  }
  return v;
}

// The cold rotation of a packed blob: copies of `first` beyond cold_bytes(), the rotation's key
// "<tag>/<policy>/<M>x<K>"
template <class P>
std::vector<lutkit::packed_weights<P>>& cold_blobs(const std::string& tag, const lutkit::packed_weights<P>& first) {
  return rotation<std::vector<lutkit::packed_weights<P>>>(
      tag + "/" + P::name() + "/" + std::to_string(first.M()) + "x" + std::to_string(first.K()),
      [&] { return blob_copies(first, cold_count(first.size_bytes())); });
}

// Uniform random codes with positive random scales (and zeros) for policy P: benchmark weights
// (timings do not depend on the values, only the layouts need to be real). The K-quants as
// llama.cpp's files hold them: random blocks, imported (their sub-block scale codes keep the
// files' ranges, which the int8 prefill's super-group fold depends on: gemm/dequant.hpp).
template <class P>
lutkit::quantized<P> random_quantized(std::size_t M, std::size_t K, uint64_t seed) {
  using F = typename P::format;
  using lutkit::ggml_type;
  const auto blocks = [&](ggml_type t) { return lutkit::ggml::random_blocks(t, M * K, seed); };
  if constexpr (std::is_same_v<F, lutkit::fmt::q2_k>)
    return lutkit::import_q2_k<P>(blocks(ggml_type::q2_k).data(), M, K);
  if constexpr (std::is_same_v<F, lutkit::fmt::q3_k>)
    return lutkit::import_q3_k<P>(blocks(ggml_type::q3_k).data(), M, K);
  if constexpr (std::is_same_v<F, lutkit::fmt::q4_k>)
    return lutkit::import_q4_k<P>(blocks(ggml_type::q4_k).data(), M, K);
  if constexpr (std::is_same_v<F, lutkit::fmt::q5_k>)
    return lutkit::import_q5_k<P>(blocks(ggml_type::q5_k).data(), M, K);
  if constexpr (std::is_same_v<F, lutkit::fmt::q6_k>)
    return lutkit::import_q6_k<P>(blocks(ggml_type::q6_k).data(), M, K);
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
