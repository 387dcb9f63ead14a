// Fuzz target: packed_weights<P>::from_bytes on arbitrary bytes, for six policies (byte 0 picks
// one: W2, ternary, IQ4_NL, Q4NX, and the K-quants' Q4_K and Q6_K with fp32 parameters), then every kernel on what it accepted — LUT-GEMV, dequant-GEMM (fp32 and int8 paradigms),
// FusedDQP — each compared with the double reference on the unpacked blob. Anything accepted must
// run within its bounds and give the reference's answer within the kernel's error bound.
#include <lutkit/lutkit.hpp>
#include <lutkit/gemv/reference.hpp>

#include "fuzz_support.hpp"

namespace {
using namespace lutkit;
using W2 = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, true>>;
using T3 = policy<fmt::ternary, per_channel, table::lut4<int8_t, false>>;
using NL = policy<fmt::codebook4<book::iq4_nl>, group<32>, table::lut4<int8_t, false>>;
using NX = policy<fmt::q4nx, group<32>, table::lut4<int8_t, false>>;
using K4 = policy<fmt::q4_k, group<32>>;
using K6 = policy<fmt::q6_k, group<16>>;
constexpr const char* kTarget = "blob";

template <class P>
void blob_case(const uint8_t* d, std::size_t n, uint64_t seed) {
  packed_weights<P> w;
  try {
    w = packed_weights<P>::from_bytes(d, n);
  } catch (const lutkit::error&) {
    return;  // refused, with a message: the contract
  }
  lutkit_fuzz::trace(kTarget, P::name().c_str());
  const std::size_t M = w.M(), K = w.K(), N = 1 + seed % 3;
  const quantized<P> q = unpack(w);  // must not throw on an accepted blob
  const auto x = lutkit_fuzz::activations(N * K, seed);
  std::vector<double> want, bound;
  lutkit_fuzz::reference(q, x, N, want, bound);
  std::vector<float> y(N * M);
  if constexpr (format_traits<typename P::format>::lut_gemv_capable) {
    const auto t = build_tables<P>(x.data(), N, K);
    lut_gemv<P>(w, t, y.data());
    std::vector<double> lb(N * M);
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t m = 0; m < M; ++m) lb[i * M + m] = ref::lut_error_bound(q, t, x.data(), i, m);
    lutkit_fuzz::check_close(kTarget, "lut_gemv", y.data(), want.data(), lb.data(), N * M);
  }
  dequant_gemm<P>(w, x.data(), N, K, y.data(), act_type::fp32);
  lutkit_fuzz::check_close(kTarget, "dequant_gemm fp32", y.data(), want.data(), bound.data(), N * M);
  if constexpr (format_traits<typename P::format>::integer_levels) {
    dequant_gemm<P>(w, x.data(), N, K, y.data(), act_type::int8);  // bounds only: int8 activations differ
    for (float v : y)
      if (std::isnan(v)) lutkit_fuzz::fail(kTarget, "dequant_gemm int8 returned NaN on finite input");
  }
  fused_dq_gemv<P>(w, x.data(), N, K, y.data());
  lutkit_fuzz::check_close(kTarget, "fused_dq_gemv", y.data(), want.data(), bound.data(), N * M);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const uint8_t pick = data[0];
  const uint8_t* blob = data + 1;
  const std::size_t n = size - 1;
  const uint64_t seed = uint64_t(size) * 0x9E3779B97F4A7C15ull + pick;
  switch (pick % 6) {
    case 0: blob_case<W2>(blob, n, seed); break;
    case 1: blob_case<T3>(blob, n, seed); break;
    case 2: blob_case<NL>(blob, n, seed); break;
    case 3: blob_case<NX>(blob, n, seed); break;
    case 4: blob_case<K4>(blob, n, seed); break;
    default: blob_case<K6>(blob, n, seed); break;
  }
  return 0;
}
