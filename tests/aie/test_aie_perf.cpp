// The cycle model (targets/aie/model/cycles.hpp) and the array model (model/array.hpp) against the
// published figures: the two single-tile calibration kernels (instruction counts, GFLOPS), the
// Gemma 3 paper's GEMM megatile points, decode tokens/s and prefill time to first token. The
// bands are docs/targets/aie.md's; what is fitted and what is predicted is said beside each check.
#include "aie_test_common.hpp"

#include <cstdio>

#include <lutkit/targets/aie/gemm.hpp>
#include <lutkit/targets/aie/model/array.hpp>
#include <lutkit/targets/aie/model/cycles.hpp>
#include <lutkit/targets/aie/model/rates.hpp>
#include <lutkit/targets/aie/plan/costs.hpp>

using namespace aie_test;
namespace lk = lutkit;
namespace mdl = lutkit::aie::model;

namespace {

// a calibration kernel on random operands: its result against double, and its modelled cycles
template <class P>
struct calib_run {
  bool correct = false;
  uint64_t macs = 0;
  mdl::kernel_cycles k;
};
template <class P>
calib_run<P> run_calibration(fault f, bool one_bank) {
  constexpr bool p2 = std::is_same_v<P, aie::aie2p>;
  constexpr int BM = p2 ? 8 : 4, BN = p2 ? 8 : 4, M = p2 ? 64 : 32, K = p2 ? 96 : 32, N = p2 ? 64 : 32;
  auto c = make_core<P>(f);
  // in0 and in1 in banks (groups) of their own, the output over the next two (the published layouts)
  const uint32_t a = 0, b = one_bank ? uint32_t(M * K * 2) : uint32_t(P::bank_bytes * P::conflict_banks);
  const uint32_t cc = uint32_t(2 * P::bank_bytes * P::conflict_banks);
  std::mt19937_64 rng(9);
  std::vector<float> A(M * K), B(K * N);
  for (auto& x : A) x = lk::round_to_bf16(gaussian(rng, 1)[0]);
  for (auto& x : B) x = lk::round_to_bf16(gaussian(rng, 1)[0]);
  if constexpr (p2) {  // bfp16-representable operands (the model's conversion, per 8-value block of k;
    auto conv = make_core<P>();  // done before the kernel, on another core: not in its trace)
    for (int i = 0; i < M * K; i += 8) {
      aie::vec<aie::bf16, 64> v;
      for (int j = 0; j < 8; ++j) v.v[j] = lk::f32_to_bf16(A[std::size_t(i + j)]);
      const auto w = aie::to_bfp16(*conv, v);
      for (int j = 0; j < 8; ++j) A[std::size_t(i + j)] = lk::bf16_to_f32(w.v[j]);
    }
  }
  // tiles: A [m1][k1] BM x 8, B [k1][n1] 8 x BN (row-major), C [m1][n1] BM x BN fp32 zero
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) {
      const uint16_t v = lk::f32_to_bf16(A[std::size_t(m * K + k)]);
      std::memcpy(c->dm + a + ((m / BM) * (K / 8) + k / 8) * BM * 8 * 2 + ((m % BM) * 8 + k % 8) * 2, &v, 2);
    }
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) {
      const uint16_t v = lk::f32_to_bf16(B[std::size_t(k * N + n)]);
      std::memcpy(c->dm + b + ((k / 8) * (N / BN) + n / BN) * 8 * BN * 2 + ((k % 8) * BN + n % BN) * 2, &v, 2);
    }
  calib_run<P> r;
  r.macs = aie::calibration_kernel(*c, a, b, cc);
  r.k = mdl::cycles<P>(c->tr);
  r.correct = c->st == aie::status::ok;
  for (int m = 0; m < M && r.correct; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0, sa = 0;
      for (int k = 0; k < K; ++k) s += double(A[std::size_t(m * K + k)]) * B[std::size_t(k * N + n)], sa += std::fabs(double(A[std::size_t(m * K + k)]) * B[std::size_t(k * N + n)]);
      float got;
      std::memcpy(&got, c->dm + cc + ((m / BM) * (N / BN) + n / BN) * BM * BN * 4 + ((m % BM) * BN + n % BN) * 4, 4);
      if (!(std::fabs(got - s) <= double(K) * 0x1p-23 * sa + 1e-30)) r.correct = false;
    }
  return r;
}

double rel(double model, double published) { return model / published - 1.0; }

}  // namespace

TEST_CASE("aie cycle model: II from the busiest slot, the accumulator recurrence and the banks", "[aie_perf]") {
  auto c = make_core<aie::aie2>();
  aie::vec<aie::bf16, 32> x, y;
  aie::accum<aie::acc_kind::accfloat, 16> a0, a1, a2, a3;
  c->loop_begin("one chain");  // one accumulator: a float mmul every 3 cycles
  for (int i = 0; i < 10; ++i) {
    c->iteration();
    aie::mmul_mac<4, 8, 4, aie::bf16, aie::bf16>(*c, a0, x, y);
  }
  c->loop_end();
  c->loop_begin("four chains");  // four accumulators: one mmul a cycle
  for (int i = 0; i < 10; ++i) {
    c->iteration();
    aie::mmul_mac<4, 8, 4, aie::bf16, aie::bf16>(*c, a0, x, y);
    aie::mmul_mac<4, 8, 4, aie::bf16, aie::bf16>(*c, a1, x, y);
    aie::mmul_mac<4, 8, 4, aie::bf16, aie::bf16>(*c, a2, x, y);
    aie::mmul_mac<4, 8, 4, aie::bf16, aie::bf16>(*c, a3, x, y);
  }
  c->loop_end();
  c->loop_begin("loads");  // 6 loads of 256 bits: 3 cycles on two ports
  for (int i = 0; i < 10; ++i) {
    c->iteration();
    for (int j = 0; j < 6; ++j) (void)aie::load<int8_t, 32>(*c, uint32_t(j * 8192));
  }
  c->loop_end();
  const auto k = mdl::cycles<aie::aie2>(c->tr);
  CHECK(k.find("one chain")->ii == Approx(3.0));
  CHECK(std::string(k.find("one chain")->bound) == "recurrence");
  CHECK(k.find("four chains")->ii == Approx(4.0));
  CHECK(std::string(k.find("four chains")->bound) == "vector");
  CHECK(k.find("loads")->ii == Approx(3.0));
  CHECK(k.fill_drain == Approx(7 + 6 + 0 + 6));
}

TEST_CASE("aie cycle model: the calibration kernels' instruction counts and GFLOPS", "[aie_perf]") {
  // XDNA 1 (scalable-analyses/xdna xdna1_kernel.rst): 288 instructions, 256 with a VMAC, 398 GFLOPS
  const auto x1 = run_calibration<aie::aie2>(fault::none, false);
  CHECK(x1.correct);
  CHECK(x1.macs == 256);
  CHECK(x1.k.find("calib.block")->ii == Approx(32.0));  // loads: 64 per block on 2 ports; 32 VMACs
  CHECK(x1.k.total == Approx(288).margin(8));
  const double g1 = mdl::gflops<aie::aie2>(double(x1.macs) * mdl::macs_bf16_4x8x4, x1.k.total);
  CHECK(std::fabs(rel(g1, 398)) <= 0.10);
  // XDNA 2 (xdna2_kernel.rst): 800 instructions, 768 with a VMAC, 1760 GFLOPS measured
  const auto x2 = run_calibration<aie::aie2p>(fault::none, false);
  CHECK(x2.correct);
  CHECK(x2.macs == 768);
  CHECK(x2.k.find("calib.block")->ii == Approx(48.0));
  CHECK(x2.k.total == Approx(800).margin(8));
  const double g2 = mdl::gflops<aie::aie2p>(double(x2.macs) * mdl::macs_bfp16_8x8x8, x2.k.total);
  CHECK(std::fabs(rel(g2, 1760)) <= 0.10);
  for (int i = 0; i < x2.k.n; ++i)
    std::printf("  aie2p region %s: II %.2f (%s), rec %.2f, iterations %llu\n", x2.k.regions[i].name, x2.k.regions[i].ii,
                x2.k.regions[i].bound, x2.k.regions[i].ii_rec, (unsigned long long)x2.k.regions[i].iterations);
  std::printf("calibration: aie2 %.0f cycles (published 288), %.0f GFLOPS (398); aie2p %.0f cycles (800), %.0f GFLOPS (1760)\n",
              x1.k.total, g1, x2.k.total, g2);
  // in0 and in1 in one bank: 48 accesses a block on one single-ported bank, II 48 (aie2)
  const auto same = run_calibration<aie::aie2>(fault::none, true);
  CHECK(same.k.find("calib.block")->ii == Approx(48.0));
  CHECK(std::string(same.k.find("calib.block")->bound) == "bank");
}

TEST_CASE("aie cycle model: a planted fault in the bank accounting fails its check", "[aie_perf]") {
  const auto same = run_calibration<aie::aie2>(fault::load_bank, true);
  CHECK_FALSE(same.k.find("calib.block")->ii == Approx(48.0));
}

TEST_CASE("aie array model: the GEMM megatile points (one fitted, two predicted)", "[aie_perf]") {
  const mdl::npu a = mdl::xdna2();
  CHECK(mdl::fit_dram_gbs() == Approx(mdl::dram_read_gbs_fitted).margin(0.05));
  const mdl::gemm_shape s{2048, 2048, 2048};
  double prev = 0;
  for (const auto& p : mdl::gemma3_gemm_points) {
    // Eq. 5 is the explicit megatile walk's DRAM traffic, and a k step fits the memory tiles
    const auto w = mdl::walk_megatiles(s, p.t);
    CHECK(w.dram_bytes == Approx(mdl::gemm_dram_bytes(s, p.t)));
    CHECK(w.mt_bytes_peak <= mdl::memory_tile_bytes_xdna2);
    const mdl::eq1 e = mdl::gemm_latency(a, s, p.t);
    const double t = mdl::tops(s, e.latency());
    std::printf("GEMM 2048^3 megatile %gx%gx%g: modelled %.1f TOPS (published %.1f, %+.0f %%), bound by %s\n", p.t.m, p.t.k,
                p.t.n, t, p.tops, 100 * rel(t, p.tops), e.bound());
    CHECK(t > prev);  // the ordering
    prev = t;
    if (p.t.m == 512) CHECK(std::fabs(rel(t, p.tops)) < 0.01);   // the fitted point
    if (p.t.m == 128) CHECK(std::fabs(rel(t, p.tops)) <= 0.15);  // predicted, within the band
    const double need = mdl::implied_dram_gbs(s, p.t, p.tops);
    std::printf("  Eq. 5 traffic %.0f MiB; the published figure needs %.1f GB/s of DRAM reads\n", mdl::gemm_dram_bytes(s, p.t) / 1048576, need);
    if (p.t.m == 256) {
      // predicted, OUTSIDE the +-15 % band (docs): the published point needs 25 % more bandwidth
      // than the fitted one under Eq. 5; a further bound (every other term is slower than DRAM
      // here) can only lower the model, so the miss is pinned, with its cause
      CHECK(rel(t, p.tops) < -0.15);
      CHECK(rel(t, p.tops) > -0.30);
      CHECK(need > 1.2 * mdl::dram_read_gbs_fitted);
      for (int i = 0; i < e.n; ++i)
        if (std::string(e.t[i].name) != "DRAM") CHECK(e.t[i].seconds < e.latency());
    }
  }
}

TEST_CASE("aie array model: Gemma 3 decode and prefill against the paper's tables", "[aie_perf]") {
  const mdl::npu a = mdl::xdna2();
  const mdl::kernel_rates r = mdl::measure_rates();
  REQUIRE(r.w4a8_cycles_per_weight > 0);
  REQUIRE(r.att_score_cycles_per_key > 0);
  std::printf("rates: W4A8 %.3f cycles / weight (aie2p), FlowKV score %.1f / value %.1f cycles per key, FlowQKV %.2f cycles per pair\n",
              r.w4a8_cycles_per_weight, r.att_score_cycles_per_key, r.att_value_cycles_per_key, r.att_prefill_cycles_per_pair);
  const double ovh = mdl::fit_layer_overhead(a, r, mdl::gemma3_1b, 1024, 34.3);
  CHECK(ovh * 1e3 == Approx(mdl::layer_overhead_ms_fitted).margin(0.005));
  auto decode = [&](const mdl::gemma3& g, const mdl::published_point* pts, std::size_t n, std::size_t in_band) {
    double prev = 1e30;
    for (std::size_t i = 0; i < n; ++i) {
      const auto d = mdl::decode_token(a, r, g, pts[i].x, ovh);
      std::printf("%s decode at %6.0f: modelled %5.1f tok/s (published %5.1f, %+4.0f %%), projections %s, attention %s\n", g.name,
                  pts[i].x, d.tok_s(), pts[i].y, 100 * rel(d.tok_s(), pts[i].y), d.proj_bound, d.attn_bound);
      CHECK(d.tok_s() < prev);  // the trend: slower with context
      prev = d.tok_s();
      if (i < in_band) CHECK(std::fabs(rel(d.tok_s(), pts[i].y)) <= 0.25);
      else CHECK(d.tok_s() < pts[i].y);  // beyond the band: below the paper (the KV-read inconsistency)
    }
  };
  decode(mdl::gemma3_1b, mdl::gemma3_1b_decode, 6, 6);
  decode(mdl::gemma3_4b, mdl::gemma3_4b_decode, 8, 8);
  // prefill: the two prefill constants fitted on the 1B's end points; everything else predicted
  const mdl::prefill_fixed fx = mdl::fit_prefill(a, r, mdl::gemma3_1b, 1024, 1.02, 32768, 21.0);
  CHECK(fx.layer_s * 1e3 == Approx(mdl::prefill_layer_fixed_ms_fitted).margin(0.05));
  CHECK(fx.nonlinear_s_per_elem * 1.8e9 == Approx(mdl::prefill_nonlinear_cycles_per_elem_fitted).margin(0.005));
  CHECK(fx.nonlinear_s_per_elem * 1.8e9 > mdl::nonlinear_stream_cycles_per_elem);  // above the stream floor
  const mdl::prefill_fixed pf = mdl::prefill_fitted();
  std::printf("prefill constants: %.2f ms per layer fixed, %.2f cycles per nonlinear element on one tile (stream floor %.1f)\n",
              pf.layer_s * 1e3, pf.nonlinear_s_per_elem * 1.8e9, mdl::nonlinear_stream_cycles_per_elem);
  auto prefill = [&](const mdl::gemma3& g, const mdl::published_point* pts, std::size_t n) {
    double prev = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto p = mdl::prefill(a, r, g, pts[i].x, pf);
      std::printf("%s prefill %6.0f: modelled %6.2f s (published %5.2f, %+4.0f %%): GEMM %.2f, dequant %.3f, attention %.2f, "
                  "nonlinear %.2f, fixed %.2f\n",
                  g.name, pts[i].x, p.total_s, pts[i].y, 100 * rel(p.total_s, pts[i].y), p.gemm_s, p.dequant_s, p.attn_s,
                  p.nonlinear_s, p.fixed_s);
      CHECK(p.total_s > prev);
      prev = p.total_s;
      CHECK(std::fabs(rel(p.total_s, pts[i].y)) <= 0.30);  // fitted (1B 1k, 32k) or predicted within the band
    }
  };
  prefill(mdl::gemma3_1b, mdl::gemma3_1b_prefill, 6);
  prefill(mdl::gemma3_4b, mdl::gemma3_4b_prefill, 6);
}

TEST_CASE("aie array model: every constant has a source", "[aie_perf]") {
  int fitted = 0;
  for (const auto& c : mdl::constants) {
    CHECK(std::string(c.source).size() > 5);
    fitted += c.fitted ? 1 : 0;
  }
  CHECK(fitted == 4);  // one per mechanism: DRAM bandwidth, decode dispatch, prefill fixed cost, prefill nonlinear tile
}

// targets/aie/plan/costs.hpp: the host's planner (cost model, choose_threads) with the array's constants makes
// two of the Gemma 3 paper's mapping choices (docs/plan.md, "On the AIE array model")
TEST_CASE("plan on the AIE array model: FusedDQP's columns and the prefill megatile", "[aie_perf]") {
  mdl::npu a = mdl::xdna2();
  const mdl::kernel_rates r = mdl::measure_rates();
  for (const mdl::gemma3* g : {&mdl::gemma3_1b, &mdl::gemma3_4b}) {
    INFO(g->name);
    // the fitted DRAM read (53.5 GB/s): four columns' shim DMA (57.6 GB/s) is the first count
    // beyond it, the paper's four columns
    const auto p = lutkit::plan::plan_fused_dqp_columns(a, r, *g);
    CHECK(p.columns == 4);
    // the time falls to the DRAM bound at 4 and stays there: the same as the array model's FusedDQP
    CHECK(p.modelled_s[2] > p.modelled_s[3] * 1.1);
    for (std::size_t t = 4; t < p.modelled_s.size(); ++t) CHECK(p.modelled_s[t] == Approx(p.modelled_s[3]).epsilon(1e-9));
    CHECK(p.modelled_s[3] == Approx(mdl::fused_dqp_latency(a, r, g->layer_weights()).latency()).epsilon(1e-6));
    // at the paper's stated 40 GB/s three columns (43.2 GB/s) already pass it
    mdl::npu b = a;
    b.dram_gbs = mdl::dram_read_gbs_stated;
    CHECK(lutkit::plan::plan_fused_dqp_columns(b, r, *g).columns == 3);
  }
  // megatiles: the widest output block for long prompts (DRAM-bound: Eq. 5's reads fall with m
  // and n; k does not enter them, and the smaller k step is kept), the prompt's own m for a short one
  for (double L : {512.0, 2048.0, 8192.0}) {
    const auto m = lutkit::plan::plan_megatile(a, {L, 2048, 2048});
    CHECK(m.t.m == 512);
    CHECK(m.t.n == 512);
    CHECK(m.t.k == 256);
  }
  CHECK(lutkit::plan::plan_megatile(a, {128, 2048, 2048}).t.m == 128);
  const auto big = lutkit::plan::plan_megatile(a, {2048, 2048, 2048});
  CHECK(mdl::tops({2048, 2048, 2048}, big.modelled_s) == Approx(13.7).epsilon(0.01));  // the fitted point
}
