// The host's registration points refuse a target::aie policy by name (a policy never runs another
// target's code): the LUT-GEMV, the dequant-GEMM and FusedDQP entries, with an AIE blob.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <lutkit/gemm/dequant_gemm.hpp>
#include <lutkit/decode/fused_dq.hpp>
#include <lutkit/gemv/lut_gemv.hpp>
#include <lutkit/quant/packed_weights.hpp>

TEST_CASE("aie: the host entry points refuse target::aie policies by name", "[aie_kernels]") {
  using P = lutkit::policy<lutkit::fmt::uint_sym<4>, lutkit::group<32>, lutkit::table::lut4<int8_t, true>, lutkit::target::aie>;
  std::vector<float> w(64 * 64, 0.5f), x(64, 1.f), y(64);
  const auto b = lutkit::detail::pack_by_element_map<P>(lutkit::quantize<P>(w.data(), 64, 64));
  CHECK_THROWS_WITH(lutkit::build_tables<P>(x.data(), 1, 64), Catch::Contains("targets aie"));
  CHECK_THROWS_WITH(lutkit::dequant_gemm<P>(b, x.data(), 1, 64, y.data()), Catch::Contains("targets aie"));
  CHECK_THROWS_WITH(lutkit::fused_dq_gemv<P>(b, x.data(), 1, 64, y.data()), Catch::Contains("targets aie"));
}
