// Bad input gets a clear lutkit::error, never a crash or a silent wrong answer.
#include "common.hpp"

using namespace lutkit;
using namespace lutkit_test;

using W2 = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, false>>;
using W2m = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, true>>;
using W4 = policy<fmt::uint_asym<4>, group<64>, table::lut4<int8_t, false>>;

namespace {
struct fixture {
  std::size_t M = 96, K = 256, N = 2;
  std::vector<float> w, x;
  fixture() {
    std::mt19937_64 rng(7);
    w = random_weights(rng, M * K);
    x = random_activations(rng, N * K, act_kind::gaussian);
  }
};
}  // namespace

TEST_CASE("a blob packed for another policy is refused", "[bad_input]") {
  fixture f;
  const auto wp = pack<W2>(quantize<W2>(f.w.data(), f.M, f.K));
  // same bytes, read as another policy's blob (e.g. after a file round trip)
  REQUIRE_THROWS_WITH(packed_weights<W2m>::from_bytes(wp.bytes(), wp.size_bytes()),
                      Catch::Contains("packed for policy 'w2_g64_asym_lut4i8_host_b64'") &&
                          Catch::Contains("w2_g64_asym_lut4i8m_host_b64"));
  REQUIRE_THROWS_AS(packed_weights<W4>::from_bytes(wp.bytes(), wp.size_bytes()), lutkit::error);
  // the right policy round-trips
  const auto back = packed_weights<W2>::from_bytes(wp.bytes(), wp.size_bytes());
  CHECK(std::memcmp(back.bytes(), wp.bytes(), wp.size_bytes()) == 0);
}

TEST_CASE("corrupted or truncated blobs are refused", "[bad_input]") {
  fixture f;
  auto wp = pack<W2>(quantize<W2>(f.w.data(), f.M, f.K));
  std::vector<uint8_t> bytes(wp.bytes(), wp.bytes() + wp.size_bytes());
  REQUIRE_THROWS_WITH(packed_weights<W2>::from_bytes(bytes.data(), bytes.size() - 1), Catch::Contains("size"));
  REQUIRE_THROWS_WITH(packed_weights<W2>::from_bytes(bytes.data(), 10), Catch::Contains("too short"));
  REQUIRE_THROWS_AS(packed_weights<W2>::from_bytes(nullptr, 100), lutkit::error);
  auto bad = bytes;
  bad[0] = 'X';
  REQUIRE_THROWS_WITH(packed_weights<W2>::from_bytes(bad.data(), bad.size()), Catch::Contains("magic"));
  bad = bytes;
  bad[8] = 99;  // version
  REQUIRE_THROWS_WITH(packed_weights<W2>::from_bytes(bad.data(), bad.size()), Catch::Contains("version"));
  // a header edited in place is caught by the kernel's own validation
  const auto t = build_tables<W2>(f.x.data(), f.N, f.K);
  std::vector<float> y(f.N * f.M);
  reinterpret_cast<blob_header*>(wp.bytes())->K = 512;
  REQUIRE_THROWS_AS(lut_gemv<W2>(wp, t, y.data()), lutkit::error);
}

TEST_CASE("shape mismatches are refused", "[bad_input]") {
  fixture f;
  const auto wp = pack<W2>(quantize<W2>(f.w.data(), f.M, f.K));
  const auto t_other_k = build_tables<W2>(f.x.data(), 1, 192);
  std::vector<float> y(f.N * f.M + 64);
  REQUIRE_THROWS_WITH(lut_gemv<W2>(wp, t_other_k, y.data()), Catch::Contains("K = 192"));
  const auto t = build_tables<W2>(f.x.data(), f.N, f.K);
  REQUIRE_THROWS_WITH(lut_gemv<W2>(wp, t, y.data(), f.M - 1), Catch::Contains("ldy"));
  REQUIRE_THROWS_WITH(lut_gemv_rows<W2>(wp, t, y.data(), 10, f.M + 1), Catch::Contains("row range"));
  REQUIRE_THROWS_WITH(lut_gemv_rows<W2>(wp, t, y.data(), 20, 10), Catch::Contains("row range"));
  REQUIRE_THROWS_AS(lut_gemv<W2>(wp, lut_tables<W2>{}, y.data()), lutkit::error);
  REQUIRE_THROWS_AS(lut_gemv<W2>(packed_weights<W2>{}, t, y.data()), lutkit::error);
}

TEST_CASE("K not a multiple of the group is refused", "[bad_input]") {
  fixture f;
  REQUIRE_THROWS_WITH(quantize<W2>(f.w.data(), 3, 100), Catch::Contains("not a multiple of the group size (64)"));
  REQUIRE_THROWS_WITH(build_tables<W2>(f.x.data(), 1, 100), Catch::Contains("multiple of the group"));
  REQUIRE_THROWS_AS(detail::make_quantized<W2>(4, 65), lutkit::error);
}

TEST_CASE("null pointers are refused", "[bad_input]") {
  fixture f;
  const auto wp = pack<W2>(quantize<W2>(f.w.data(), f.M, f.K));
  const auto t = build_tables<W2>(f.x.data(), f.N, f.K);
  REQUIRE_THROWS_WITH(lut_gemv<W2>(wp, t, nullptr), Catch::Contains("null output"));
  REQUIRE_THROWS_WITH(build_tables<W2>(nullptr, 1, f.K), Catch::Contains("null activation"));
  REQUIRE_THROWS_WITH(quantize<W2>(nullptr, 1, f.K), Catch::Contains("null weight"));
  REQUIRE_THROWS_AS(build_tables<W2>(f.x.data(), 0, f.K), lutkit::error);
}

TEST_CASE("bad quantized inputs are refused", "[bad_input]") {
  fixture f;
  auto w = f.w;
  w[5] = NAN;
  REQUIRE_THROWS_WITH(quantize<W2>(w.data(), f.M, f.K), Catch::Contains("not finite"));
  std::vector<uint8_t> codes(4 * 64, 1);
  std::vector<float> s(4, 1.f), z(4, 1.f);
  codes[3] = 4;  // 2-bit codes stop at 3
  REQUIRE_THROWS_WITH(from_codes<W2>(codes.data(), s.data(), z.data(), 4, 64), Catch::Contains("exceeds 3"));
  codes[3] = 3;
  REQUIRE_THROWS_WITH(from_codes<W2>(codes.data(), s.data(), nullptr, 4, 64), Catch::Contains("needs zeros"));
  s[2] = INFINITY;
  REQUIRE_THROWS_WITH(from_codes<W2>(codes.data(), s.data(), z.data(), 4, 64), Catch::Contains("scale is not finite"));
}

TEST_CASE("non-finite activations give NaN rows, finite rows stay exact", "[bad_input]") {
  fixture f;
  const auto q = quantize<W2>(f.w.data(), f.M, f.K);
  const auto wp = pack<W2>(q);
  auto x = f.x;
  x[f.K + 17] = INFINITY;  // row 1 only
  const auto t = build_tables<W2>(x.data(), f.N, f.K);
  std::vector<float> y(f.N * f.M);
  lut_gemv<W2>(wp, t, y.data());
  const auto yref = ref::gemv<W2>(q, x.data(), f.N);
  CHECK(compare_to_ref<W2>(q, t, x, yref, y.data(), f.M, 0, f.M) == "");
  for (std::size_t m = 0; m < f.M; ++m) {
    CHECK(std::isfinite(y[m]));
    CHECK(std::isnan(y[f.M + m]));
  }
}

TEST_CASE("no alignment is required of caller buffers", "[bad_input]") {
  // kernels use unaligned loads for activations and outputs; packed blobs own aligned storage
  fixture f;
  const auto q = quantize<W2>(f.w.data(), f.M, f.K);
  const auto wp = pack<W2>(q);
  std::vector<float> xs(f.N * f.K + 3), ys(f.N * f.M + 3);
  std::copy(f.x.begin(), f.x.end(), xs.begin() + 1);  // 4-byte offset: misaligned for SIMD
  const auto t = build_tables<W2>(xs.data() + 1, f.N, f.K);
  lut_gemv<W2>(wp, t, ys.data() + 3);
  const auto yref = ref::gemv<W2>(q, f.x.data(), f.N);
  CHECK(compare_to_ref<W2>(q, t, f.x, yref, ys.data() + 3, f.M, 0, f.M) == "");
}
