// Q4NX (Gemma3 on XDNA §3.1.1): bf16 conversion, format hooks, import of hand-built blocks,
// quantizer error bound, bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <lutkit/quant/q4nx.hpp>
#include <lutkit/packing/pack.hpp>
#include <lutkit/gemm/dequant_gemm.hpp>
#include <lutkit/decode/fused_dq.hpp>

using namespace lutkit;

namespace {
float bits_to_f32(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
}  // namespace

TEST_CASE("bf16: round to nearest even, NaN, Inf, directed rounding", "[tilegroup][q4nx]") {
  CHECK(f32_to_bf16(1.0f) == 0x3F80);
  CHECK(f32_to_bf16(-2.0f) == 0xC000);
  CHECK(f32_to_bf16(0.0f) == 0x0000);
  CHECK(f32_to_bf16(-0.0f) == 0x8000);
  // halfway cases: ties to even
  CHECK(f32_to_bf16(bits_to_f32(0x3F808000u)) == 0x3F80);  // 1 + 2^-8: tie, even is 0x3F80
  CHECK(f32_to_bf16(bits_to_f32(0x3F818000u)) == 0x3F82);  // tie, odd below -> up
  CHECK(f32_to_bf16(bits_to_f32(0x3F808001u)) == 0x3F81);  // just above the tie -> up
  CHECK(f32_to_bf16(bits_to_f32(0x3F807FFFu)) == 0x3F80);  // just below -> down
  CHECK(f32_to_bf16(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(f32_to_bf16(-std::numeric_limits<float>::infinity()) == 0xFF80);
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // overflow rounds to Inf
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(bits_to_f32(0x7F800001u)))));  // signalling NaN stays NaN
  CHECK(f32_to_bf16(bits_to_f32(0x00010000u)) == 0x0001);                 // subnormal kept
  // every bf16 round-trips; directed rounding brackets every float
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = bf16_to_f32(uint16_t(b));
    if (std::isnan(f)) continue;
    REQUIRE(bf16_to_f32(f32_to_bf16(f)) == f);
  }
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint32_t> u32;
  for (int i = 0; i < 100000; ++i) {
    const float f = bits_to_f32(u32(rng));
    if (!std::isfinite(f) || std::fabs(f) > 1e38f) continue;
    const float lo = bf16_to_f32(f32_to_bf16_floor(f)), hi = bf16_to_f32(f32_to_bf16_ceil(f));
    const float rn = round_to_bf16(f);
    REQUIRE(lo <= f);
    REQUIRE(hi >= f);
    REQUIRE((rn == lo || rn == hi));
    REQUIRE(std::fabs(double(rn) - f) <= std::fabs(double(f) - (rn == lo ? hi : lo)));
  }
}

TEST_CASE("Q4NX format traits: min form, bf16 params, not LUT-GEMV capable", "[tilegroup][q4nx]") {
  using FT = format_traits<fmt::q4nx>;
  STATIC_REQUIRE(FT::bits == 4);
  STATIC_REQUIRE(FT::asymmetric);
  STATIC_REQUIRE(!FT::lut_gemv_capable);
  STATIC_REQUIRE(FT::min_form);
  STATIC_REQUIRE(FT::bf16_params);
  STATIC_REQUIRE(format_min_form_v<fmt::q4nx>);
  STATIC_REQUIRE(!format_min_form_v<fmt::uint_asym<4>>);
  STATIC_REQUIRE(FT::value(0.5f, -3.0f, 6) == 0.0f);
  STATIC_REQUIRE(q4nx_spec::block_bytes == 5120);
}

namespace {
// A hand-built Q4NX stream, written byte by byte from docs/q4nx.md (not through export_q4nx).
struct hand_built {
  std::size_t M = 64, K = 512;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> codes;             // M x K
  std::vector<uint16_t> scale_b, min_b;   // M x K/32 bf16 bit patterns
};
hand_built build_blocks(uint64_t seed) {
  hand_built h;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> code(0, 15);
  std::uniform_int_distribution<uint32_t> any16(0, 0xFFFF);
  const std::size_t G = h.K / 32;
  h.codes.resize(h.M * h.K);
  for (auto& c : h.codes) c = uint8_t(code(rng));
  h.scale_b.resize(h.M * G);
  h.min_b.resize(h.M * G);
  auto finite_bf16 = [&]() {
    for (;;) {
      const uint16_t b = uint16_t(any16(rng));
      if ((b & 0x7F80u) != 0x7F80u) return b;  // any finite bf16, subnormals and zeros included
    }
  };
  // any finite pair import accepts: the largest weight |scale| * 15 + |min| is a finite float
  // (pairs beyond that are refused at import, tests/test_robustness.cpp)
  for (std::size_t i = 0; i < h.scale_b.size(); ++i)
    for (;;) {
      h.scale_b[i] = finite_bf16();
      h.min_b[i] = finite_bf16();
      if (std::isfinite(std::fabs(bf16_to_f32(h.scale_b[i])) * 15.f + std::fabs(bf16_to_f32(h.min_b[i])))) break;
    }
  h.bytes.assign((h.M / 32) * (h.K / 256) * 5120, 0);
  for (std::size_t m = 0; m < h.M; ++m)
    for (std::size_t k = 0; k < h.K; ++k) {
      const std::size_t rb = m / 32, kb = k / 256, r = m % 32, g = (k % 256) / 32, i = k % 32;
      uint8_t* blk = h.bytes.data() + (rb * (h.K / 256) + kb) * 5120;
      blk[(r * 8 + g) * 16 + i % 16] |= uint8_t(h.codes[m * h.K + k] << (i < 16 ? 0 : 4));
      if (i == 0) {
        const uint16_t s = h.scale_b[m * G + k / 32], mn = h.min_b[m * G + k / 32];
        blk[4096 + 2 * (r * 8 + g)] = uint8_t(s & 0xFF);
        blk[4096 + 2 * (r * 8 + g) + 1] = uint8_t(s >> 8);
        blk[4608 + 2 * (r * 8 + g)] = uint8_t(mn & 0xFF);
        blk[4608 + 2 * (r * 8 + g) + 1] = uint8_t(mn >> 8);
      }
    }
  return h;
}
}  // namespace

TEST_CASE("Q4NX import of hand-built blocks: w = bf16(scale) * q + bf16(min), bit-exact", "[tilegroup][q4nx]") {
  const hand_built h = build_blocks(5);
  const q4nx_quantized q = import_q4nx(h.bytes.data(), h.bytes.size(), h.M, h.K);
  REQUIRE(q.codes == h.codes);
  const auto d = q.dequantize();
  for (std::size_t m = 0; m < h.M; ++m)
    for (std::size_t k = 0; k < h.K; ++k) {
      const float s = bf16_to_f32(h.scale_b[m * (h.K / 32) + k / 32]);
      const float mn = bf16_to_f32(h.min_b[m * (h.K / 32) + k / 32]);
      const volatile float prod = s * float(h.codes[m * h.K + k]);  // exact: 8 x 4 significant bits
      const float expect = prod + mn;
      const float got = d[m * h.K + k];
      if (std::isnan(expect)) {  // Inf * 0 or Inf - Inf cannot occur: inputs are finite
        FAIL("unexpected NaN");
      }
      uint32_t a, b;
      std::memcpy(&a, &expect, 4);
      std::memcpy(&b, &got, 4);
      INFO("m=" << m << " k=" << k);
      REQUIRE(a == b);
      REQUIRE(q.weight(m, k) == got);
    }
  // export reproduces the stream byte for byte
  CHECK(export_q4nx(q) == h.bytes);
}

TEST_CASE("Q4NX quantizer: every weight within scale/2, bf16 parameters", "[tilegroup][q4nx]") {
  const std::size_t M = 64, K = 512;
  std::mt19937_64 rng(17);
  std::student_t_distribution<double> td(3.0);
  std::uniform_real_distribution<double> off(-200.0, 200.0);
  std::vector<float> w(M * K);
  for (std::size_t m = 0; m < M; ++m) {
    // rows 0..15: narrow groups far from zero (where round-to-nearest bf16 mins would break the bound)
    const double o = m < 16 ? off(rng) : 0.0, s = m < 16 ? 1e-3 : 1.0;
    for (std::size_t k = 0; k < K; ++k) w[m * K + k] = float(o + s * td(rng));
  }
  for (std::size_t k = 0; k < 32; ++k) w[20 * K + k] = 1.25f;  // constant group
  const q4nx_quantized q = quantize_q4nx(w.data(), M, K);
  for (std::size_t i = 0; i < q.scales.size(); ++i) {
    REQUIRE(round_to_bf16(q.scales[i]) == q.scales[i]);
    REQUIRE(round_to_bf16(q.mins[i]) == q.mins[i]);
    REQUIRE(q.scales[i] >= 0.f);
  }
  double worst = 0;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) {
      const float s = q.scale(m, k / 32), wh = q.weight(m, k);
      const double err = std::fabs(double(wh) - double(w[m * K + k]));
      // scale/2, plus the one float rounding of scale*q + min
      const double bound = 0.5 * double(s) + 0.5 * std::ldexp(1.0, std::ilogb(std::fabs(wh) + 1e-30f) - 23);
      INFO("m=" << m << " k=" << k << " w=" << w[m * K + k] << " what=" << wh << " scale=" << s);
      REQUIRE(err <= bound);
      if (s > 0) worst = std::max(worst, err / double(s));
    }
  CHECK(worst <= 0.5 + 1e-3);
  CHECK(q.weight(20, 7) == 1.25f);
  // round trip through the byte format
  const auto bytes = export_q4nx(q);
  const auto u = import_q4nx(bytes.data(), bytes.size(), M, K);
  CHECK(u.codes == q.codes);
  CHECK(u.scales == q.scales);
  CHECK(u.mins == q.mins);
}

TEST_CASE("Q4NX bad input", "[tilegroup][q4nx]") {
  std::vector<float> w(64 * 512, 0.25f);
  CHECK_THROWS_AS(quantize_q4nx(nullptr, 64, 512), lutkit::error);
  CHECK_THROWS_WITH(quantize_q4nx(w.data(), 48, 512), Catch::Contains("multiple of 32"));
  CHECK_THROWS_WITH(quantize_q4nx(w.data(), 64, 320), Catch::Contains("multiple of 256"));
  w[100] = INFINITY;
  CHECK_THROWS_WITH(quantize_q4nx(w.data(), 64, 512), Catch::Contains("not finite"));
  w[100] = 0.f;
  w[0] = -3.0e38f;
  w[1] = 3.0e38f;
  CHECK_THROWS_WITH(quantize_q4nx(w.data(), 64, 512), Catch::Contains("beyond bf16"));

  hand_built h = build_blocks(9);
  CHECK_THROWS_AS(import_q4nx(nullptr, h.bytes.size(), h.M, h.K), lutkit::error);
  CHECK_THROWS_WITH(import_q4nx(h.bytes.data(), h.bytes.size() - 1, h.M, h.K), Catch::Contains("bytes, expected"));
  CHECK_THROWS_WITH(import_q4nx(h.bytes.data(), h.bytes.size(), h.M, h.K * 2), Catch::Contains("bytes, expected"));
  CHECK_THROWS_WITH(import_q4nx(h.bytes.data(), h.bytes.size(), 0, h.K), Catch::Contains("positive"));
  // a NaN scale in block (1, 1), row 3, group 2
  auto bad = h.bytes;
  uint8_t* blk = bad.data() + (1 * 2 + 1) * 5120;
  blk[4096 + 2 * (3 * 8 + 2)] = 0xC1;
  blk[4096 + 2 * (3 * 8 + 2) + 1] = 0x7F;
  CHECK_THROWS_WITH(import_q4nx(bad.data(), bad.size(), h.M, h.K), Catch::Contains("block (1, 1) row 3 group 2"));
  // an Inf min
  bad = h.bytes;
  bad[4608] = 0x80;
  bad[4609] = 0xFF;
  CHECK_THROWS_WITH(import_q4nx(bad.data(), bad.size(), h.M, h.K), Catch::Contains("not finite"));
  // export refuses inconsistent tensors and out-of-range codes
  q4nx_quantized q = import_q4nx(h.bytes.data(), h.bytes.size(), h.M, h.K);
  q.codes[5] = 16;
  CHECK_THROWS_WITH(export_q4nx(q), Catch::Contains("exceeds 15"));
  q.mins.pop_back();
  CHECK_THROWS_WITH(export_q4nx(q), Catch::Contains("inconsistent"));
}

// Q4NX in the lutkit blob: the dequant-GEMM, FusedDQP and dequantize read the bf16 scale and
// the bf16 minimum of each group from the packed blob (min form: w = scale * q + min).
TEST_CASE("Q4NX blob: pack/unpack identity, dequantize bit-exact, kernels, policy check", "[tilegroup][q4nx]") {
  using P = policy<fmt::q4nx, group<32>, table::lut4<int8_t, false>>;
  using A4 = policy<fmt::uint_asym<4>, group<32>, table::lut4<int8_t, false>>;
  STATIC_REQUIRE(P::spec.min_form);
  STATIC_REQUIRE(P::spec.bf16_params);
  CHECK(P::name().rfind("w4nx_g32_asym", 0) == 0);
  const hand_built h = build_blocks(23);
  const q4nx_quantized q = import_q4nx(h.bytes.data(), h.bytes.size(), h.M, h.K);
  const auto wp = pack<P>(from_q4nx<P>(q));
  // the blob holds the bf16 parameters exactly: unpack and export give the original stream back
  const auto u = unpack<P>(wp);
  CHECK(u.codes == q.codes);
  CHECK(u.scales == q.scales);
  CHECK(u.zeros == q.mins);
  CHECK(export_q4nx(to_q4nx(u)) == h.bytes);
  // level-1 + level-2 dequantization reproduces Q4NX's fp32 value bit for bit, on every backend
  const std::vector<float> ref = q.dequantize();
  std::vector<dq_backend> backends{dq_backend::portable};
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (detail::avx512::cpu_supported()) backends.push_back(dq_backend::avx512);
#endif
#if defined(LUTKIT_HAVE_AVX2_DQ)
  if (detail::avx2::cpu_supported()) backends.push_back(dq_backend::avx2);
#endif
  for (dq_backend be : backends) {
    std::vector<float> f(h.M * h.K);
    dequantize<P>(wp, f.data(), dq_type::f32, 0, nullptr, be);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < f.size(); ++i) bad += std::memcmp(&f[i], &ref[i], 4) != 0;
    CHECK(bad == 0);
  }
  // the kernels on the blob of quantize_q4nx (moderate weights), against the double reference
  const std::size_t M = 96, K = 768, N = 3;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> w(M * K), x(N * K);
  for (auto& v : w) v = 0.3f + nd(rng);
  for (auto& v : x) v = nd(rng);
  const auto qq = from_q4nx<P>(quantize_q4nx(w.data(), M, K));
  const auto bp = pack<P>(qq);
  // reference in double, and the error bound: fp32 accumulation of K products whose operands
  // are formed as scale * q and + min separately (magnitude (|s q| + |m| + |w|) |x|)
  std::vector<double> yr(N * M), bound(N * M), wabs(M, 0.0);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) wabs[m] += std::fabs(qq.weight(m, k));
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t m = 0; m < M; ++m) {
      double a = 0, mag = 0;
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t g = k / 32;
        const double xv = double(x[n * K + k]);
        a += qq.weight(m, k) * xv;
        mag += (std::fabs(double(qq.scale(m, g)) * qq.codes[m * K + k]) + std::fabs(double(qq.zero(m, g))) +
                std::fabs(qq.weight(m, k))) * std::fabs(xv);
      }
      yr[n * M + m] = a;
      bound[n * M + m] = (double(K) + 16.0) * 0x1p-24 * mag;
    }
  for (dq_backend be : backends) {
    std::vector<float> y(N * M), yf(N * M);
    dequant_gemm<P>(bp, x.data(), N, K, y.data(), act_type::fp32, 0, 0, nullptr, be);
    fused_dq_gemv<P>(bp, x.data(), N, K, yf.data(), 0, 0, nullptr, be);
    for (std::size_t i = 0; i < y.size(); ++i) {
      INFO("i=" << i << " backend " << int(be));
      REQUIRE(std::fabs(double(y[i]) - yr[i]) <= bound[i]);
      REQUIRE(std::fabs(double(yf[i]) - yr[i]) <= bound[i]);
    }
    // int8 activations: the activation quantization error dominates (|x| / 127 per element)
    std::vector<float> y8(N * M);
    dequant_gemm<P>(bp, x.data(), N, K, y8.data(), act_type::int8, 0, 0, nullptr, be);
    for (std::size_t n = 0; n < N; ++n) {
      float amax = 0;
      for (std::size_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(x[n * K + k]));
      for (std::size_t m = 0; m < M; ++m)
        REQUIRE(std::fabs(double(y8[n * M + m]) - yr[n * M + m]) <=
                0.5 * double(amax) / 127.0 * wabs[m] + bound[n * M + m]);
    }
  }
  // the same bytes are not a uint_asym<4> g32 blob (same bits and group, other parameters)
  CHECK_THROWS_AS(packed_weights<A4>::from_bytes(bp.bytes(), bp.size_bytes()), lutkit::error);
}
