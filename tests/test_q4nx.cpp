// Q4NX (Gemma3 on XDNA §3.1.1): bf16 conversion, format hooks, import of hand-built blocks,
// quantizer error bound, bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <lutkit/formats/q4nx.hpp>

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
  for (auto& s : h.scale_b) s = finite_bf16();
  for (auto& m : h.min_b) m = finite_bf16();
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
