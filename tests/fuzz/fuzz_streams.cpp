// Fuzz target: the Q4NX stream import and the tile-group super-group stream, on fuzzed shapes and
// bytes. Byte 0 picks the stream, then M and K, then the stream bytes. An accepted stream must
// export back to the same bytes (every byte of both formats is meaningful) and run through its
// kernel within the error bound of the double reference.
#include <lutkit/lutkit.hpp>
#include <lutkit/quant/q4nx.hpp>
#include <lutkit/quant/tile_group.hpp>
#include <lutkit/decode/tile_group_gemv.hpp>
#include <lutkit/gemm/tile_group_gemm.hpp>

#include "fuzz_support.hpp"

namespace {
using namespace lutkit;
using NX = policy<fmt::q4nx, group<32>, table::lut4<int8_t, false>>;
using TG = fmt::uint_asym<4>;
constexpr const char* kTarget = "streams";

void q4nx_case(const uint8_t* d, std::size_t n, std::size_t M, std::size_t K, uint64_t seed) {
  q4nx_quantized q;
  try {
    q = import_q4nx(d, n, M, K);
  } catch (const lutkit::error&) {
    return;
  }
  lutkit_fuzz::trace(kTarget, "q4nx accepted");
  const auto back = export_q4nx(q);
  if (back.size() != n || std::memcmp(back.data(), d, n) != 0) lutkit_fuzz::fail(kTarget, "Q4NX export differs from the import");
  const quantized<NX> qp = from_q4nx<NX>(q);
  const auto w = pack<NX>(qp);
  const auto x = lutkit_fuzz::activations(K, seed);
  std::vector<double> want, bound;
  lutkit_fuzz::reference(qp, x, 1, want, bound);
  std::vector<float> y(M);
  fused_dq_gemv<NX>(w, x.data(), 1, K, y.data());
  lutkit_fuzz::check_close(kTarget, "fused_dq_gemv on Q4NX", y.data(), want.data(), bound.data(), M);
}

void tile_group_case(const uint8_t* d, std::size_t n, std::size_t M, std::size_t K, uint64_t seed) {
  tile_group_weights<TG> w;
  try {
    w = tile_group_weights<TG>::from_bytes(d, n, M, K);
  } catch (const lutkit::error&) {
    return;
  }
  if (w.size_bytes() != n || std::memcmp(w.data(), d, n) != 0) lutkit_fuzz::fail(kTarget, "tile-group repack differs");
  lutkit_fuzz::trace(kTarget, "tile group accepted");
  const auto q = unpack_super_groups<TG>(d, n, M, K);
  const auto x = lutkit_fuzz::activations(K, seed);
  std::vector<double> want(M, 0.0), bound(M, 0.0);
  for (std::size_t m = 0; m < M; ++m) {
    double mag = 0;
    for (std::size_t k = 0; k < K; ++k) {
      want[m] += double(q.weight(m, k)) * double(x[k]);
      mag += (std::fabs(double(q.scale(m, k))) * (15.0 + std::fabs(double(q.zero(m, k))))) * std::fabs(double(x[k]));
    }
    bound[m] = (double(K) + 64.0) * 0x1p-23 * mag + 1e-30;
  }
  std::vector<float> y(M);
  tile_group_gemv<TG>(w, x.data(), 1, K, y.data(), 0, 0, nullptr, dq_backend::best, decode_method::fused_dq);
  lutkit_fuzz::check_close(kTarget, "tile_group_gemv", y.data(), want.data(), bound.data(), M);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  lutkit_fuzz::reader r{data, size};
  const int which = r.u8() % 2;
  const uint64_t seed = uint64_t(size) * 0x9E3779B97F4A7C15ull + uint64_t(which);
  const std::size_t M = r.u8() & 0x80 ? std::size_t(r.u64()) : std::size_t(r.u8()),
                    K = r.u8() & 0x80 ? std::size_t(r.u64()) : std::size_t(r.u16());
  if (which == 0)
    q4nx_case(r.p, r.n, M, K, seed);
  else
    tile_group_case(r.p, r.n, M, K, seed);
  return 0;
}
