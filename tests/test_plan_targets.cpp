// plan/ on the static descriptors of target::hvx and target::sme (targets/hvx/plan/costs.hpp,
// targets/sme/plan/costs.hpp): their arithmetic against hand-computed values, the context count
// the chooser takes on HVX, and the modelled BitNet-2B decode step against [T-MAN]'s 49.1 tokens/s
// (docs/plan.md, "On the HVX static proxy").
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <lutkit/plan/chooser.hpp>
#include <lutkit/plan/cost_model.hpp>
#include <lutkit/plan/operator.hpp>
#include <lutkit/targets/hvx/plan/costs.hpp>
#include <lutkit/targets/sme/plan/costs.hpp>

using namespace lutkit;
using namespace lutkit::plan;

namespace {
using i8 = table::lut4<int8_t, false>;
using H2 = policy<fmt::uint_asym<2>, group<64>, i8, target::hvx>;  // scripts/hvx_proxy.sh's W2
using H4 = policy<fmt::uint_asym<4>, group<64>, i8, target::hvx>;
using HT = policy<fmt::ternary, per_tensor, i8, target::hvx>;
using H2T = policy<fmt::uint_asym<2>, per_tensor, i8, target::hvx>;  // [T-MAN]'s BitNet: ternary as 2-bit, per tensor
using S2 = policy<fmt::uint_asym<2>, group<64>, i8, target::sme>;
using S4 = policy<fmt::uint_asym<4>, group<64>, i8, target::sme>;
using ST = policy<fmt::ternary, per_tensor, i8, target::sme>;

hvx_npu npu_at(double ghz, int contexts = 4) {
  hvx_npu a;
  a.clock_ghz = ghz;
  a.contexts = contexts;
  return a;
}
}  // namespace

TEST_CASE("plan on HVX: the descriptor's constants, hand-computed", "[plan]") {
  const target_costs c = hvx_costs(npu_at(1.0), {hvx_lut_gemv_kernel<H2>(), hvx_lut_gemv_kernel<H4>(), hvx_lut_gemv_kernel<HT>()});
  CHECK(c.cores == 4);
  CHECK(c.dram_bps == 59e9);
  CHECK(c.core_read_bps == 59e9);
  CHECK(c.lookups_per_s == Approx(256e9));  // 128 lookups / 0.5 cycles at 1 GHz
  CHECK(c.l1_bps == Approx(128e9));
  CHECK(c.int8_macs_per_s == 0);
  CHECK(c.fp32_fmas_per_s == 0);
  // 128 B of W2 hold 512 weights, 6.5 packets; W4 256 weights, 5.5 packets; ternary 819.2 weights
  // (1024 per 160 B), 12 packets; one packet a cycle at 1 GHz
  REQUIRE(c.kernels.size() == 3);
  CHECK(c.kernels.at(kernel_key(decode_method::lut_gemv, H2::name())).weights_per_s == Approx(512.0 / 6.5 * 1e9));
  CHECK(c.kernels.at(kernel_key(decode_method::lut_gemv, H4::name())).weights_per_s == Approx(256.0 / 5.5 * 1e9));
  CHECK(c.kernels.at(kernel_key(decode_method::lut_gemv, HT::name())).weights_per_s == Approx(819.2 / 12.0 * 1e9));
  // the table build: 16 packets per 16 activations
  CHECK(c.kernels.at(kernel_key(decode_method::lut_gemv, H2::name())).s_per_activation == Approx(1e-9));
  // the rates scale with the clock and the packets a cycle
  hvx_npu half = npu_at(2.0);
  half.packets_per_cycle = 0.5;
  CHECK(hvx_costs(half, {hvx_lut_gemv_kernel<H2>()}).kernels.begin()->second.weights_per_s == Approx(512.0 / 6.5 * 1e9));
  // the TCM is the target descriptor's on-chip memory
  CHECK(hvx_npu{}.tcm_bytes == target::hvx::desc.onchip_bytes);
  // no clock, no width without a proxy: refused
  CHECK_THROWS_WITH(hvx_costs(hvx_npu{}, {}), Catch::Contains("clock is the caller's"));
  CHECK_THROWS_WITH(hvx_costs(npu_at(1.0), {{"w5", 5, false}}), Catch::Contains("no static proxy"));
}

TEST_CASE("plan on HVX: the modelled LUT-GEMV and the context count the chooser takes", "[plan]") {
  const std::size_t M = 4096, K = 4096;
  const matmul_op op = describe_matmul<H2>(M, K, 1);
  REQUIRE(op.tiles == 32);  // 128-row tiles
  const double W = double(M) * double(K), dma_s = double(op.blob_bytes) / 59e9, table_s = double(K) * 1e-9;
  const target_costs c = hvx_costs(npu_at(1.0), {hvx_lut_gemv_kernel<H2>()});
  const double ctx_wps = 512.0 / 6.5 * 1e9;
  // 1 and 2 contexts: the kernel's rate bounds it (213 and 107 us against the DMA's 89 us)
  CHECK(model_decode(c, op, decode_method::lut_gemv, 1).total_s == Approx(W / ctx_wps + table_s).epsilon(1e-9));
  CHECK(model_decode(c, op, decode_method::lut_gemv, 2).total_s == Approx(W / 2 / ctx_wps + table_s).epsilon(1e-9));
  // 3 contexts (11 of the 32 tiles on the first: 73 us) are under the DMA read: the DMA bounds it
  CHECK(W * 11 / 32 / ctx_wps < dma_s);
  CHECK(model_decode(c, op, decode_method::lut_gemv, 3).total_s == Approx(dma_s + table_s).epsilon(1e-9));
  CHECK(model_decode(c, op, decode_method::lut_gemv, 3).bottleneck == resource::dram);
  // the chooser: the LUT-GEMV within the budget, at 3 contexts (4 ties at the DMA bound: fewer)
  const decode_plan p = plan_decode_hvx(c, op, 0.02, 0.03);
  CHECK(p.chosen.method == decode_method::lut_gemv);
  CHECK(p.chosen.threads == 3);
  CHECK(p.chosen.modelled_s == Approx(dma_s + table_s).epsilon(1e-9));
  CHECK_THROWS_WITH(plan_decode_hvx(c, op, 0.02, 0.01), Catch::Contains("no candidate within the error budget"));
  // the break-even clock of 3 contexts: below it compute-bound, above it DMA-bound
  const double be3 = hvx_break_even_clock_ghz(npu_at(1.0), hvx_lut_gemv_kernel<H2>(), op.bytes_per_weight(), 3);
  CHECK(be3 == Approx(59e9 / op.bytes_per_weight() / (3 * 512.0 / 6.5 * 1e9)));
  // a slow clock (0.25 GHz): compute-bound at every count, every context taken; a fast one (4 GHz):
  // one context outruns the DMA read; never more than the contexts
  for (int ctx : {4, 6}) {
    CHECK(plan_decode_hvx(hvx_costs(npu_at(0.25, ctx), {hvx_lut_gemv_kernel<H2>()}), op, 0.02, 0.03).chosen.threads == ctx);
    CHECK(plan_decode_hvx(hvx_costs(npu_at(4.0, ctx), {hvx_lut_gemv_kernel<H2>()}), op, 0.02, 0.03).chosen.threads == 1);
  }
  // lutkit has no other decode on HVX: the model has no rate for them and refuses them; a policy
  // without a proxied kernel cannot be costed either (its table build needs an fp32 rate)
  CHECK_THROWS_WITH(model_decode(c, op, decode_method::int8, 1), Catch::Contains("no fp32 rate"));
  CHECK_THROWS_WITH(model_decode(c, op, decode_method::fused_dq, 1), Catch::Contains("no rate for resource fp32_fma"));
  CHECK_THROWS_WITH(model_decode(c, describe_matmul<H4>(M, K, 1), decode_method::lut_gemv, 1), Catch::Contains("fp32"));
}

// [T-MAN] §6.3: 49.1 tokens/s decoding BitNet-2B on Snapdragon 8 Gen 3 (W_INT2 A_INT16, ternary as
// 2-bit, per tensor). The step's weight GEMVs from the model's published configuration (30 layers,
// hidden 2560, FFN 6912, 20 query / 5 KV heads of 128), the LM head, attention and norms left out.
// The clock is the caller's ([T-MAN] gives none): 1 and 2 GHz are test values, and the DMA read is
// the floor any clock approaches.
TEST_CASE("plan on HVX: a BitNet-2B decode step against T-MAN's tokens/s (modelled)", "[plan]") {
  const std::size_t D = 2560, F = 6912, KV = 5 * 128, layers = 30;
  const std::vector<std::pair<std::size_t, std::size_t>> shapes = {{D, D}, {KV, D}, {KV, D}, {D, D}, {F, D}, {F, D}, {D, F}};
  auto step_s = [&](double ghz) {
    const target_costs c = hvx_costs(npu_at(ghz), {hvx_lut_gemv_kernel<H2T>()});
    double s = 0;
    for (auto [M, K] : shapes) {
      const matmul_op op = describe_matmul<H2T>(M, K, 1);
      s += model_decode(c, op, decode_method::lut_gemv, choose_threads(c, op, decode_method::lut_gemv)).total_s;
    }
    return s * double(layers);
  };
  double bytes = 0, weights = 0;
  for (auto [M, K] : shapes) {
    const matmul_op op = describe_matmul<H2T>(M, K, 1);
    bytes += double(op.blob_bytes);
    weights += double(M) * double(K);
  }
  bytes *= double(layers);
  weights *= double(layers);
  CHECK(weights == Approx(2.084e9).epsilon(1e-3));
  // the weights' read at the DMA rate is the step's floor (8.88 ms); at 1 GHz the table builds
  // (1 ns an activation, one per product: 0.67 ms) and the K / V products (5 tiles over 4 contexts:
  // compute-bound) add to it
  const double dma = bytes / 59e9;
  CHECK(dma * 1e3 == Approx(8.88).margin(0.01));
  const double s1 = step_s(1.0), s2 = step_s(2.0);
  CHECK(s1 > dma * 1.05);
  // the figures of docs/plan.md: 9.63 ms at 1 GHz (103.9 tokens/s, 2.12x [T-MAN]'s 49.1), 9.21 ms
  // at 2 GHz (2.21x), the DMA floor 2.29x
  CHECK(s1 * 1e3 == Approx(9.63).margin(0.01));
  CHECK(1.0 / s1 / 49.1 == Approx(2.12).margin(0.005));
  CHECK(s2 * 1e3 == Approx(9.21).margin(0.01));
  CHECK(1.0 / s2 / 49.1 == Approx(2.21).margin(0.005));
  CHECK(1.0 / dma / 49.1 == Approx(2.29).margin(0.005));
  // a faster clock only approaches the floor
  CHECK(step_s(1000.0) == Approx(dma).epsilon(1e-3));
}

TEST_CASE("plan on SME: the descriptor's constants, hand-computed (assumed clock and bandwidths)", "[plan]") {
  sme_cpu a;  // SVL 512, 2 GHz, 1 instruction a cycle, 1 unit, 50 GB/s: the assumed defaults
  const target_costs c = sme_costs(a, {sme_lut_gemv_kernel<S2>(), sme_lut_gemv_kernel<S4>(), sme_lut_gemv_kernel<ST>()});
  CHECK(c.cores == 1);
  CHECK(c.dram_bps == 50e9);
  CHECK(c.lookups_per_s == Approx(64 * 2e9));  // one TBL of 64 bytes an instruction
  // a 64-byte slice: W2 256 weights in 302 / 16 instructions, W4 128 in 43 / 4, ternary 512 in 32
  CHECK(c.kernels.at(kernel_key(decode_method::lut_gemv, S2::name())).weights_per_s == Approx(256.0 / (302.0 / 16) * 2e9));
  CHECK(c.kernels.at(kernel_key(decode_method::lut_gemv, S4::name())).weights_per_s == Approx(128.0 / 10.75 * 2e9));
  CHECK(c.kernels.at(kernel_key(decode_method::lut_gemv, ST::name())).weights_per_s == Approx(512.0 / 32 * 2e9));
  // SVL 128: a slice is 16 bytes, the loop's instructions the same: a quarter of the rate; SVL 1024
  // predicates the lanes past byte 64 off: the SVL 512 rate
  a.svl_bits = 128;
  CHECK(sme_costs(a, {sme_lut_gemv_kernel<S4>()}).kernels.begin()->second.weights_per_s == Approx(32.0 / 10.75 * 2e9));
  a.svl_bits = 1024;
  CHECK(sme_costs(a, {sme_lut_gemv_kernel<S4>()}).kernels.begin()->second.weights_per_s == Approx(128.0 / 10.75 * 2e9));
  a.svl_bits = 200;
  CHECK_THROWS_WITH(sme_costs(a, {}), Catch::Contains("SVL"));
  // the model on it: W4 4096 x 4096 on one unit, the kernel's rate (8.3 GB/s of blob) under the
  // assumed 50 GB/s read: compute-bound
  const target_costs c4 = sme_costs(sme_cpu{}, {sme_lut_gemv_kernel<S4>()});
  const matmul_op op = describe_matmul<S4>(4096, 4096, 1);
  const auto b = model_decode(c4, op, decode_method::lut_gemv, 1);
  CHECK(b.bottleneck == resource::kernel);
  CHECK(b.total_s == Approx(4096.0 * 4096 / (128.0 / 10.75 * 2e9)).epsilon(1e-9));
  CHECK_THROWS_WITH(model_decode(c4, op, decode_method::bf16, 1), Catch::Contains("no fp32 rate"));
}
