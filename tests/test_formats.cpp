// Formats beyond the LUT-GEMV's: 4-bit codebooks (NF4, FP4 E2M1, IQ4_NL), 8-bit integers, and
// the llama.cpp block imports (Q4_0, Q8_0, IQ4_NL), all packed through the same tiling spec.
#include "hw_half.hpp"

#include <cstring>
#include <set>

#include "common.hpp"
#include "randomized_dequant_gemm.hpp"
#include "policy_list.hpp"

using namespace lutkit;
using namespace lutkit_test;

namespace {
using nf4_g64 = policy<fmt::codebook4<book::nf4>, group<64>, i8>;
using fp4_g32 = policy<fmt::codebook4<book::fp4_e2m1>, group<32>, i8>;
using iq4nl_g32 = policy<fmt::codebook4<book::iq4_nl>, group<32>, i8>;
using q8_0_p = policy<fmt::uint_sym<8>, group<32>, i8>;
using q4_0_p = policy<fmt::uint_sym<4>, group<32>, i8>;

// the new formats in more group shapes than dq_policy_list carries
using format_policies = std::tuple<
    nf4_g64, fp4_g32, iq4nl_g32, q8_0_p, q4_0_p,
    policy<fmt::codebook4<book::nf4>, per_channel, i16m>,
    policy<fmt::codebook4<book::fp4_e2m1>, per_tensor, i8>,
    policy<fmt::codebook4<book::iq4_nl>, group<256>, i8m>,
    policy<fmt::uint_asym<8>, group<64>, i8>,
    policy<fmt::uint_asym<8>, per_channel, i16>,
    policy<fmt::uint_sym<8>, per_tensor, i8>,
    policy<fmt::uint_sym<8>, group<128>, i8m>>;

// ggml converts fp16 with the hardware instruction where it can; use it too, so the import tests
// do not compare lutkit's converter with itself
float ggml_fp16_to_fp32(uint16_t h) { return hw_half_available() ? lutkit_test::hw_h2f(h) : f16_to_f32(h); }

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// an fp16 bit pattern: any finite half (normal or subnormal, either sign, +-0)
uint16_t random_finite_half(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> u(0, 0xFFFF), pick(0, 7);
  for (;;) {
    uint16_t h = uint16_t(u(rng));
    if (pick(rng) == 0) h &= 0x83FF;  // force a subnormal (or zero) a good share of the time
    if ((h & 0x7C00) != 0x7C00) return h;
  }
}

// random codes and fp16 scales (and zeros) through from_codes
template <class P>
quantized<P> random_quantized(std::mt19937_64& rng, std::size_t M, std::size_t K) {
  constexpr int maxq = format_traits<typename P::format>::max_code;
  std::uniform_int_distribution<int> code(0, maxq);
  std::normal_distribution<float> nd(0.f, 1.f);
  const std::size_t groups = P::spec.group_k > 0 ? K / std::size_t(P::spec.group_k) : 1;
  std::vector<uint8_t> codes(M * K);
  for (auto& c : codes) c = uint8_t(code(rng));
  std::vector<float> s(M * groups), z(M * groups);
  for (auto& v : s) v = 0.05f * nd(rng);
  for (auto& v : z) v = float(maxq) * std::fabs(nd(rng)) * 0.5f;
  if (P::spec.per_tensor) std::fill(s.begin(), s.end(), s[0]);
  return from_codes<P>(codes.data(), s.data(), z.data(), M, K);
}
}  // namespace

// ---------------------------------------------------------------- traits and names

TEST_CASE("codebook levels, values and scale divisors agree", "[formats]") {
  auto check_book = []<class Book>() {
    using FT = format_traits<fmt::codebook4<Book>>;
    INFO(Book::name);
    STATIC_REQUIRE(FT::bits == 4);
    STATIC_REQUIRE(FT::planes == 4);
    STATIC_REQUIRE(!FT::asymmetric);
    STATIC_REQUIRE(FT::is_codebook);
    STATIC_REQUIRE(!FT::lut_gemv_capable);
    for (int c = 0; c < 16; ++c) {
      CHECK(FT::level(c) - FT::sym_zero == Book::values[c] * Book::scale_divisor);
      // value(d / divisor, zero, c) is the book's d * values[c] (d an fp16 scale); == rather than
      // bits: FP4's -0 (code 8) dequantizes to +0
      const float d = round_to_f16(0.37f);
      CHECK(FT::value(d / Book::scale_divisor, FT::sym_zero, c) == d * Book::values[c]);
      if (FT::integer_levels) {
        CHECK(FT::level(c) == std::floor(FT::level(c)));
        CHECK(FT::level(c) >= 0.f);
        CHECK(FT::level(c) <= 255.f);
        CHECK(FT::sym_zero == std::floor(FT::sym_zero));
      }
    }
  };
  check_book.operator()<book::nf4>();
  check_book.operator()<book::fp4_e2m1>();
  check_book.operator()<book::iq4_nl>();
  STATIC_REQUIRE(!format_traits<fmt::codebook4<book::nf4>>::integer_levels);
  STATIC_REQUIRE(format_traits<fmt::codebook4<book::iq4_nl>>::integer_levels);
  STATIC_REQUIRE(format_traits<fmt::codebook4<book::fp4_e2m1>>::integer_levels);
  // the linear formats keep their hooks
  STATIC_REQUIRE(format_traits<fmt::uint_sym<4>>::lut_gemv_capable);
  STATIC_REQUIRE(!format_traits<fmt::uint_sym<4>>::is_codebook);
  STATIC_REQUIRE(format_traits<fmt::ternary>::lut_gemv_capable);
  STATIC_REQUIRE(!format_traits<fmt::uint_sym<8>>::lut_gemv_capable);
  STATIC_REQUIRE(!format_traits<fmt::uint_asym<8>>::lut_gemv_capable);
  STATIC_REQUIRE(format_traits<fmt::uint_sym<8>>::sym_zero == 128.f);
  STATIC_REQUIRE(format_traits<fmt::uint_sym<8>>::max_code == 255);
  STATIC_REQUIRE(format_traits<fmt::uint_sym<8>>::integer_levels);
}

TEST_CASE("canonical names of the new formats", "[formats]") {
  CHECK(nf4_g64::name().rfind("w4nf4_g64_sym_", 0) == 0);
  CHECK(fp4_g32::name().rfind("w4fp4_g32_sym_", 0) == 0);
  CHECK(iq4nl_g32::name().rfind("w4iq4nl_g32_sym_", 0) == 0);
  CHECK(q8_0_p::name().rfind("w8_g32_sym_", 0) == 0);
  CHECK(policy<fmt::uint_asym<8>, per_channel, i16>::name().rfind("w8_gch_asym_", 0) == 0);
  // unchanged for the existing formats (blob hashes stay valid)
  CHECK(q4_0_p::name() == "w4_g32_sym_lut4i8_host_b32");
  // every policy of the dequant list has its own name
  std::set<std::string> names;
  for_each_policy_in<dq_policy_list>([&]<class P>() { names.insert(P::name()); });
  CHECK(names.size() == dq_policy_count);
  CHECK(dq_policy_count == policy_count + 14);
  CHECK(policy<fmt::q3_k, group<16>>::name() == "w3q3k_g16_sym_lut4i8m_host_b16");
  CHECK(policy<fmt::q5_1, group<32>>::name() == "w5q51_g32_asym_lut4i16mt3_host_b32");
  CHECK(policy<fmt::q5_k, group<32>>::name() == "w5q5k_g32_asym_lut4i16mt3_host_b32");
  CHECK(policy<fmt::q2_k, group<16>>::name() == "w2q2k_g16_asym_lut4i8m_host_b16");
  CHECK(policy<fmt::uint_sym<5>, group<32>>::name() == "w5_g32_sym_lut4i16mt3_host_b32");
  CHECK(policy<fmt::q4_1, group<32>>::name() == "w4q41_g32_asym_notab_host_b32");
  CHECK(policy<fmt::q4_k, group<32>>::name() == "w4q4k_g32_asym_notab_host_b32");
  CHECK(policy<fmt::q6_k, group<16>>::name() == "w6q6k_g16_sym_lut4i8m_host_b16");
  // the default tables (table::default_for): int16 mirrored for the bit-plane formats, whole
  // entries for all but the lowest plane pair from 3 bits up; int8 mirrored for ternary and the
  // 16-weight-group K-quants
  CHECK(policy<fmt::uint_sym<4>, group<32>>::name() == "w4_g32_sym_lut4i16mt2_host_b32");
  CHECK(policy<fmt::uint_asym<3>, group<64>>::name() == "w3_g64_asym_lut4i16mt1_host_b64");
  CHECK(policy<fmt::uint_asym<2>, group<64>>::name() == "w2_g64_asym_lut4i16m_host_b64");
  // every plane whole is the plain int16 layout, one name
  CHECK(policy<fmt::uint_sym<4>, group<32>, table::lut4<int16_t, true, 4>>::name() == "w4_g32_sym_lut4i16m_host_b32");
  CHECK(policy<fmt::uint_sym<4>, group<32>, table::lut4<int16_t, true, 9>>::name() == "w4_g32_sym_lut4i16m_host_b32");
  CHECK(policy<fmt::ternary, per_channel>::name() == "tern_gch_sym_lut4i8_host_b96");
}

TEST_CASE("tiling spec of non-LUT formats: min(16, group/4) steps, no int16 bound", "[formats]") {
  STATIC_REQUIRE(!nf4_g64::spec.lut);
  STATIC_REQUIRE(nf4_g64::spec.steps_per_block == 16);
  STATIC_REQUIRE(fp4_g32::spec.steps_per_block == 8);
  STATIC_REQUIRE(iq4nl_g32::spec.block_k == 32);
  STATIC_REQUIRE(q8_0_p::spec.planes == 8);
  STATIC_REQUIRE(q8_0_p::spec.steps_per_block == 8);
  STATIC_REQUIRE(q8_0_p::spec.whole_codes());                       // codes whole, not bit planes
  STATIC_REQUIRE(q8_0_p::spec.code_chunks_per_step_pair() == 8);      // 64 rows x 8 codes of a byte
  STATIC_REQUIRE(q8_0_p::spec.paired_chunks_per_step_pair() == 0);
  STATIC_REQUIRE(q8_0_p::spec.lone_chunks_per_step_pair() == 0);
  STATIC_REQUIRE(q8_0_p::spec.code_byte_in_step_pair(5, 1, 3) == 256 + 4 * 5 + 3);
  STATIC_REQUIRE(nf4_g64::spec.whole_codes() && nf4_g64::spec.step_pair_bytes() == 256);
  STATIC_REQUIRE(nf4_g64::spec.code_byte_in_step_pair(5, 1, 3) == 4 * 5 + 3 && nf4_g64::spec.code_shift(1) == 4);
  STATIC_REQUIRE(q8_0_p::spec.step_pair_bytes() == 512);            // one byte per weight
  STATIC_REQUIRE(q8_0_p::spec.max_abs_acc16() > 32767);             // would overflow: not a LUT policy
  STATIC_REQUIRE(q8_0_p::spec.valid());
  STATIC_REQUIRE(policy<fmt::uint_sym<8>, per_channel, i16>::spec.steps_per_block == 16);
  STATIC_REQUIRE(policy<fmt::uint_sym<8>, group<256>, i8>::spec.steps_per_block == 16);
  // the LUT formats' spec is what it was
  STATIC_REQUIRE(q4_0_p::spec.lut);
  STATIC_REQUIRE(q4_0_p::spec.steps_per_block == 8);
  // (int16 tables: two signed bytes of at most 128, the int8 tables' steps; tiling_spec::table_qmax)
  STATIC_REQUIRE(policy<fmt::uint_asym<4>, group<128>, i16>::spec.steps_per_block == 16);
  // packed size: B bits per weight + 16 bits of scale per group (32 with zeros)
  const packed_layout L8(q8_0_p::spec, 64, 256);
  CHECK(L8.total_bytes == 64 * 256 + 64 * 2 * (256 / 32));
  const packed_layout L4(iq4nl_g32::spec, 128, 64);
  CHECK(L4.total_bytes == 128 * 64 / 2 + 128 * 2 * 2);
  const packed_layout La(policy<fmt::uint_asym<8>, group<64>, i8>::spec, 64, 128);
  CHECK(La.total_bytes == 64 * 128 + 64 * 4 * 2);
}

// ---------------------------------------------------------------- layout and packing

TEST_CASE("8 bit planes: every (row, k, plane) has its own bit and the bits fill the blocks", "[formats]") {
  auto check = []<class P>() {
    INFO(P::name());
    const std::size_t M = 70, K = P::spec.group_k > 0 ? 2 * std::size_t(P::spec.group_k) : 100;
    const packed_layout L(P::spec, M, K);
    std::vector<uint8_t> seen(L.total_bytes, 0);
    bool distinct = true, in_range = true;
    for (std::size_t m = 0; m < L.M_pad; ++m)
      for (std::size_t k = 0; k < L.K_pad; ++k)
        for (int b = 0; b < P::spec.planes; ++b) {
          const auto loc = L.index_location(m, k, b);
          in_range = in_range && loc.byte < L.total_bytes;
          if (!in_range) continue;
          distinct = distinct && !(seen[loc.byte] & (1u << loc.shift));
          seen[loc.byte] |= uint8_t(1u << loc.shift);
        }
    CHECK(in_range);
    CHECK(distinct);
    // every bit outside the scale/zero headers is used exactly once
    std::size_t bits_used = 0;
    for (auto v : seen) bits_used += std::size_t(__builtin_popcount(v));
    CHECK(bits_used == L.M_pad * L.K_pad * std::size_t(P::spec.planes));
    CHECK(bits_used / 8 + L.tiles * L.groups * std::size_t(P::spec.scale_bytes()) + L.tiles * L.supers * std::size_t(P::spec.super_bytes()) == L.total_bytes);
  };
  check.operator()<q8_0_p>();
  check.operator()<policy<fmt::uint_asym<8>, per_channel, i16>>();
  check.operator()<nf4_g64>();
}

TEST_CASE("pack/unpack identity for the new formats over seeded random shapes", "[formats]") {
  for_each_policy_in<format_policies>([]<class P>() {
    std::mt19937_64 rng(policy_hash(P::name()));
    for (int trial = 0; trial < 6; ++trial) {
      const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 150)(rng);
      const std::size_t K = random_k<P>(rng, 600);
      INFO(P::name() << " M=" << M << " K=" << K << " trial " << trial);
      const auto q = random_quantized<P>(rng, M, K);
      const auto w = pack<P>(q);
      const auto u = unpack<P>(w);
      CHECK(u.codes == q.codes);
      CHECK(u.scales == q.scales);
      CHECK(u.zeros == q.zeros);
      // the blob round-trips through bytes and names its policy
      const auto w2 = packed_weights<P>::from_bytes(w.bytes(), w.size_bytes());
      CHECK(std::memcmp(w2.bytes(), w.bytes(), w.size_bytes()) == 0);
      CHECK(std::string(w.header().policy_name) == P::name());
    }
  });
}

TEST_CASE("a blob of one codebook is refused by another", "[formats]") {
  std::mt19937_64 rng(5);
  const auto q = random_quantized<fp4_g32>(rng, 8, 64);
  const auto w = pack<fp4_g32>(q);
  CHECK_THROWS_AS(packed_weights<iq4nl_g32>::from_bytes(w.bytes(), w.size_bytes()), lutkit::error);
  CHECK_THROWS_AS(packed_weights<q4_0_p>::from_bytes(w.bytes(), w.size_bytes()), lutkit::error);
}

// ---------------------------------------------------------------- quantization and references

TEST_CASE("codebook quantize: every code is a nearest level of its group", "[formats]") {
  auto check = []<class P>() {
    using FT = format_traits<typename P::format>;
    std::mt19937_64 rng(policy_hash(P::name()) + 1);
    const std::size_t M = 23, K = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) * 4 : 200;
    auto w = random_weights(rng, M * K);
    for (std::size_t k = 0; k < K; ++k) w[3 * K + k] = 0.f;  // an all-zero row
    const auto q = quantize<P>(w.data(), M, K);
    bool nearest = true, finite = true;
    double err2 = 0, sig2 = 0;
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t g = k / q.group_k();
        const float s = q.scale(m, g);
        finite = finite && std::isfinite(s) && round_to_f16(s) == s;
        const double v = w[m * K + k];
        const double got = FT::value(s, q.zero(m, g), q.codes[m * K + k]);
        for (int c = 0; c < 16; ++c)
          nearest = nearest && std::fabs(v - got) <= std::fabs(v - double(FT::value(s, q.zero(m, g), c)));
        err2 += (v - got) * (v - got);
        sig2 += v * v;
      }
    INFO(P::name() << " relative MSE " << err2 / sig2);
    CHECK(nearest);
    CHECK(finite);
    if (P::spec.group_k > 0) {
      CHECK(err2 / sig2 < 0.03);  // a 4-bit book on grouped Gaussian data: about 1%
      // an all-zero group gets scale 0 (IQ4_NL has no zero level; per_tensor scales are shared)
      for (std::size_t k = 0; k < K; ++k) CHECK(q.weight(3, k) == 0.0);
    }
  };
  check.operator()<nf4_g64>();
  check.operator()<fp4_g32>();
  check.operator()<iq4nl_g32>();
  check.operator()<policy<fmt::codebook4<book::nf4>, per_channel, i8>>();
  check.operator()<policy<fmt::codebook4<book::iq4_nl>, per_tensor, i8>>();
}

TEST_CASE("codebook level search: the code of the scan over every level, ties to the lower code", "[formats]") {
  // detail::level_search (sorted levels, a binary search) against detail::nearest_level (the scan):
  // random and edge scales (either sign, subnormal, near the fp16 and fp32 limits) and weights
  // (every level's value, midpoints of two values, +-0, subnormals, far outside the range, +-Inf, NaN)
  auto check = []<class Book>() {
    using FT = format_traits<fmt::codebook4<Book>>;
    std::mt19937_64 rng(policy_hash(Book::name) + 7);
    std::vector<float> scales = {1.f, -1.f, 0.037f, -2.5e-3f, 1e-40f, -1e-44f, 6.1035156e-05f, 65504.f, -3e38f};
    std::uniform_real_distribution<float> u(-4.f, 4.f);
    for (int i = 0; i < 200; ++i) scales.push_back(std::ldexp(u(rng), int(u(rng) * 8)));
    int checked = 0, mismatched = 0;
    for (const float s : scales) {
      const detail::level_search<FT> levels(s);
      std::vector<float> ws = {0.f, -0.f, 1e-45f, -1e-45f, 1e-38f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN};
      for (int c = 0; c <= FT::max_code; ++c) {
        const float v = FT::value(s, FT::sym_zero, c);
        ws.push_back(v);
        ws.push_back(std::nextafter(v, INFINITY));
        ws.push_back(std::nextafter(v, -INFINITY));
        for (int d = 0; d <= FT::max_code; ++d) ws.push_back(float((double(v) + FT::value(s, FT::sym_zero, d)) / 2));
      }
      for (int i = 0; i < 300; ++i) ws.push_back(s * u(rng) * 40.f);
      for (const float w : ws) {
        ++checked;
        const int got = levels.nearest(w), want = detail::nearest_level<FT>(w, s);
        if (got != want) {
          if (++mismatched <= 5) WARN(Book::name << " s " << s << " w " << w << ": " << got << " against " << want);
        }
      }
    }
    INFO(Book::name << ": " << checked << " weights");
    CHECK(mismatched == 0);
    CHECK(checked > 50000);
  };
  check.operator()<book::nf4>();
  check.operator()<book::fp4_e2m1>();
  check.operator()<book::iq4_nl>();
}

TEST_CASE("8-bit round-to-nearest quantization", "[formats]") {
  auto check = []<class P>() {
    std::mt19937_64 rng(policy_hash(P::name()) + 2);
    const std::size_t M = 19, K = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) * 3 : 150;
    const auto w = random_weights(rng, M * K);
    const auto q = quantize<P>(w.data(), M, K);
    bool nearest = true;
    double err2 = 0, sig2 = 0;
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t g = k / q.group_k();
        const double v = w[m * K + k], got = q.weight(m, k), s = std::fabs(q.scale(m, g));
        // RTN to a grid of step |s|: within half a step (plus fp16/float slack) unless clamped
        const double c = double(q.codes[m * K + k]);
        const bool clamped = c == 0 || c == 255;
        nearest = nearest && (clamped || std::fabs(v - got) <= 0.5 * s * (1 + 1e-6) + 1e-9);
        err2 += (v - got) * (v - got);
        sig2 += v * v;
      }
    INFO(P::name() << " relative MSE " << err2 / sig2);
    CHECK(nearest);
    CHECK(err2 / sig2 < 1e-3);
  };
  check.operator()<q8_0_p>();
  check.operator()<policy<fmt::uint_asym<8>, group<64>, i8>>();
  check.operator()<policy<fmt::uint_sym<8>, per_channel, i8>>();
}

TEST_CASE("reference weights are format_traits::value, bit for bit", "[formats]") {
  for_each_policy_in<format_policies>([]<class P>() {
    using FT = format_traits<typename P::format>;
    std::mt19937_64 rng(policy_hash(P::name()) + 3);
    const std::size_t M = 33, K = random_k<P>(rng, 300);
    const auto q = random_quantized<P>(rng, M, K);
    const auto W = ref::dequantize(q);
    bool ok = true;
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t g = k / q.group_k();
        const float v = FT::value(q.scale(m, g), q.zero(m, g), q.codes[m * K + k]);
        if (!P::spec.asymmetric) ok = ok && same_bits(float(W[m * K + k]), v);
        // asymmetric: level - zero may round in float; the double reference is the exact value
        else ok = ok && std::fabs(W[m * K + k] - double(v)) <= 1e-6 * std::fabs(double(q.scale(m, g))) * 512;
      }
    INFO(P::name());
    CHECK(ok);
    // ref::gemv agrees with a float dot product of the value formula
    std::vector<float> x = random_activations(rng, K, act_kind::gaussian);
    const auto y = ref::gemv(q, x.data(), 1);
    for (std::size_t m = 0; m < M; ++m) {
      double acc = 0, mag = 0;
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t g = k / q.group_k();
        const double v = FT::value(q.scale(m, g), q.zero(m, g), q.codes[m * K + k]);
        acc += v * x[k];
        mag += std::fabs(v * x[k]);
      }
      CHECK(std::fabs(acc - y[m]) <= mag * 1e-6 + 1e-12);
    }
  });
}

// ---------------------------------------------------------------- llama.cpp imports

namespace {
// M x K/32 blocks of `block_bytes` with random fp16 d and random payload bytes
std::vector<unsigned char> random_blocks(std::mt19937_64& rng, std::size_t M, std::size_t K, std::size_t block_bytes) {
  std::vector<unsigned char> b(M * (K / 32) * block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t i = 0; i < M * (K / 32); ++i) {
    const uint16_t d = random_finite_half(rng);
    b[i * block_bytes] = uint8_t(d & 0xFF);
    b[i * block_bytes + 1] = uint8_t(d >> 8);
    for (std::size_t j = 2; j < block_bytes; ++j) b[i * block_bytes + j] = uint8_t(byte(rng));
  }
  return b;
}

constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// llama.cpp's dequantization of one block, written from its documented formulas in float
enum class ggml_block_kind { q4_0, q8_0, iq4_nl, q5_0 };
void ggml_dequant_block(ggml_block_kind t, const unsigned char* blk, float* y) {
  const float d = ggml_fp16_to_fp32(uint16_t(blk[0] | (blk[1] << 8)));
  const unsigned char* qs = blk + 2;
  for (int j = 0; j < 32; ++j) {
    switch (t) {
      case ggml_block_kind::q4_0: {
        const int q = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
        y[j] = d * float(q - 8);
        break;
      }
      case ggml_block_kind::q8_0: y[j] = d * float(int8_t(qs[j])); break;
      case ggml_block_kind::iq4_nl: {
        const int q = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
        y[j] = d * float(kvalues_iq4nl[q]);
        break;
      }
      case ggml_block_kind::q5_0: {  // 4 bytes qh (bit j: the fifth bit of weight j), then the nibbles
        const unsigned char* lo = blk + 6;
        const int nib = j < 16 ? (lo[j] & 0x0F) : (lo[j - 16] >> 4);
        const int hi = (qs[j / 8] >> (j % 8)) & 1;
        y[j] = d * float((nib | (hi << 4)) - 16);
        break;
      }
    }
  }
}

template <class P, class Import>
void check_ggml_import(ggml_block_kind type, std::size_t block_bytes, Import import) {
  using FT = format_traits<typename P::format>;
  std::mt19937_64 rng(policy_hash(P::name()) + 4);
  for (int trial = 0; trial < 5; ++trial) {
    const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 90)(rng);
    const std::size_t K = 32 * std::uniform_int_distribution<std::size_t>(1, 12)(rng);
    INFO(P::name() << " M=" << M << " K=" << K);
    const auto blocks = random_blocks(rng, M, K, block_bytes);
    const quantized<P> q = import(blocks.data(), M, K, blocks.size());
    const auto u = unpack<P>(pack<P>(q));
    REQUIRE(u.codes == q.codes);
    std::vector<float> y(32);
    bool exact = true;
    std::size_t bad = 0;
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t b = 0; b < K / 32; ++b) {
        ggml_dequant_block(type, blocks.data() + (m * (K / 32) + b) * block_bytes, y.data());
        for (std::size_t j = 0; j < 32; ++j) {
          const std::size_t k = b * 32 + j;
          const float v = FT::value(u.scale(m, b), u.zero(m, b), u.codes[m * K + k]);
          if (!same_bits(v, y[j]) && exact) {
            exact = false;
            bad = m * K + k;
          }
          // the double reference rounds to the same float
          exact = exact && same_bits(float(u.weight(m, k)), y[j]);
        }
      }
    INFO("first mismatch at weight " << bad);
    CHECK(exact);
  }
}
}  // namespace

TEST_CASE("import_q4_0 reproduces llama.cpp's dequantization bit for bit", "[formats]") {
  check_ggml_import<q4_0_p>(ggml_block_kind::q4_0, 18, [](const void* b, std::size_t M, std::size_t K, std::size_t n) {
    return import_q4_0<q4_0_p>(b, M, K, n);
  });
}

TEST_CASE("import_q8_0 reproduces llama.cpp's dequantization bit for bit", "[formats]") {
  check_ggml_import<q8_0_p>(ggml_block_kind::q8_0, 34, [](const void* b, std::size_t M, std::size_t K, std::size_t n) {
    return import_q8_0<q8_0_p>(b, M, K, n);
  });
}

TEST_CASE("import_q5_0 reproduces llama.cpp's dequantization bit for bit", "[formats]") {
  using Q50 = policy<fmt::uint_sym<5>, group<32>>;
  check_ggml_import<Q50>(ggml_block_kind::q5_0, 22, [](const void* b, std::size_t M, std::size_t K, std::size_t n) {
    return import_q5_0<Q50>(b, M, K, n);
  });
  // every code in every position, and io/ggml_blocks.hpp's row dequantizer agrees
  std::vector<uint8_t> b(22 * 32);
  for (int blk = 0; blk < 32; ++blk) {
    uint8_t* p = b.data() + 22 * blk;
    p[0] = uint8_t(0x00), p[1] = uint8_t(0x3C + (blk % 3));  // d = 1, 1.25, 1.5 (and negative below)
    if (blk % 4 == 3) p[1] |= 0x80;
    uint32_t qh = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = (j + blk) % 32;  // weight j of block blk: code (j + blk) mod 32
      qh |= uint32_t(q >> 4) << j;
      if (j < 16) p[6 + j] = uint8_t((p[6 + j] & 0xF0) | (q & 15));
      else p[6 + j - 16] = uint8_t((p[6 + j - 16] & 0x0F) | ((q & 15) << 4));
    }
    for (int i = 0; i < 4; ++i) p[2 + i] = uint8_t(qh >> (8 * i));
  }
  const auto q = import_q5_0<Q50>(b.data(), 4, 256, b.size());
  std::vector<float> y(256);
  for (std::size_t m = 0; m < 4; ++m) {
    lutkit::ggml::dequantize_row(lutkit::ggml_type::q5_0, b.data() + m * 8 * 22, 8 * 22, y.data(), 256);
    for (std::size_t k = 0; k < 256; ++k) {
      INFO("m=" << m << " k=" << k);
      REQUIRE(int(q.codes[m * 256 + k]) == int((k % 32 + m * 8 + k / 32) % 32));
      REQUIRE(same_bits(float(q.weight(m, k)), y[k]));
    }
  }
  CHECK_THROWS_WITH(import_q5_0<q4_0_p>(b.data(), 4, 256, b.size()), Catch::Contains("block's format"));
  CHECK_THROWS_WITH(pack_q5_0<Q50>(b.data(), 4, 256, b.size() - 1), Catch::Contains("fewer than"));
  b[22 * 5 + 1] = 0x7E;  // block 5 (row 0): d = NaN
  CHECK_THROWS_WITH(import_q5_0<Q50>(b.data(), 4, 256, b.size()), Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(pack_q5_0<Q50>(b.data(), 4, 256, b.size()), Catch::Contains("non-finite"));
}

TEST_CASE("import_iq4_nl reproduces llama.cpp's dequantization bit for bit", "[formats]") {
  check_ggml_import<iq4nl_g32>(ggml_block_kind::iq4_nl, 18, [](const void* b, std::size_t M, std::size_t K, std::size_t n) {
    return import_iq4_nl<iq4nl_g32>(b, M, K, n);
  });
}

// TQ2_0 / TQ1_0 super-blocks of random bytes with finite fp16 d, the importer's values against
// llama.cpp's dequantization written from its block definitions (ggml::dequantize_row), bit for bit
template <class Import>
void check_ternary_import(lutkit::ggml_type type, std::size_t block_bytes, std::size_t d_offset, Import import) {
  using P = policy<fmt::uint_asym<2>, group<256>, i8>;
  using FT = format_traits<P::format>;
  std::mt19937_64 rng(uint64_t(type) * 977 + 3);
  for (int trial = 0; trial < 6; ++trial) {
    const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 70)(rng);
    const std::size_t K = 256 * std::uniform_int_distribution<std::size_t>(1, 4)(rng);
    INFO(lutkit::ggml_info(type).name << " M=" << M << " K=" << K);
    std::vector<uint8_t> b(M * K / 256 * block_bytes);
    for (auto& v : b) v = uint8_t(rng());
    for (std::size_t i = 0; i < M * K / 256; ++i) {
      uint8_t& hi = b[i * block_bytes + d_offset + 1];
      if ((hi & 0x7C) == 0x7C) hi &= 0xFB;  // finite d
      if (trial == 0 && i % 5 == 0) b[i * block_bytes + d_offset] = 0, hi &= 0x80;  // d = +-0
      if (trial == 1 && i % 3 == 0) hi &= 0x83;                                       // subnormal d
    }
    const quantized<P> q = import(b.data(), M, K, b.size());
    const auto u = unpack<P>(pack<P>(q));
    REQUIRE(u.codes == q.codes);
    std::vector<float> y(K);
    bool exact = true;
    std::size_t bad_m = 0, bad_k = 0;
    for (std::size_t m = 0; m < M && exact; ++m) {
      lutkit::ggml::dequantize_row(type, b.data() + m * (K / 256) * block_bytes, K / 256 * block_bytes, y.data(), K);
      for (std::size_t k = 0; k < K && exact; ++k) {
        const float v = FT::value(u.scale(m, k / 256), u.zero(m, k / 256), u.codes[m * K + k]);
        exact = same_bits(v, y[k]) && same_bits(float(u.weight(m, k)), y[k]);
        bad_m = m, bad_k = k;
      }
    }
    INFO("first mismatch (if any): row " << bad_m << " k " << bad_k);
    CHECK(exact);
  }
}

TEST_CASE("import_tq2_0 / import_tq1_0 reproduce llama.cpp's dequantization bit for bit", "[formats]") {
  using P = policy<fmt::uint_asym<2>, group<256>, i8>;
  check_ternary_import(lutkit::ggml_type::tq2_0, 66, 64, [](const void* b, std::size_t M, std::size_t K, std::size_t n) {
    return import_tq2_0<P>(b, M, K, n);
  });
  check_ternary_import(lutkit::ggml_type::tq1_0, 54, 52, [](const void* b, std::size_t M, std::size_t K, std::size_t n) {
    return import_tq1_0<P>(b, M, K, n);
  });
  // the policy must be uint_asym<2> with group<256>; K a multiple of 256
  std::vector<uint8_t> b(66 * 4, 0);
  using G64 = policy<fmt::uint_asym<2>, group<64>>;
  CHECK_THROWS_WITH(import_tq2_0<G64>(b.data(), 4, 256, b.size()), Catch::Contains("group<256>"));
  CHECK_THROWS_WITH(import_tq2_0<P>(b.data(), 2, 384, b.size()), Catch::Contains("multiple of the block size 256"));
  CHECK_THROWS_WITH(import_tq1_0<P>(b.data(), 4, 256, 54 * 4 - 1), Catch::Contains("holds fewer than"));
  b[64 + 1] = 0x7C;  // block 0: d = +inf
  CHECK_THROWS_WITH(import_tq2_0<P>(b.data(), 4, 256, b.size()), Catch::Contains("non-finite scale"));
}

TEST_CASE("import_q4_1 reproduces llama.cpp's dequantization bit for bit", "[formats]") {
  using P = policy<fmt::q4_1, group<32>>;
  using FT = format_traits<P::format>;
  std::mt19937_64 rng(41);
  for (int trial = 0; trial < 6; ++trial) {
    const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 90)(rng);
    const std::size_t K = 32 * std::uniform_int_distribution<std::size_t>(1, 12)(rng);
    INFO("M=" << M << " K=" << K);
    std::vector<uint8_t> b(M * K / 32 * 20);
    for (auto& v : b) v = uint8_t(rng());
    for (std::size_t i = 0; i < M * K / 32; ++i)
      for (std::size_t o : {1, 3}) {  // finite d and m; zero and subnormal ones in the first trials
        uint8_t& hi = b[i * 20 + o];
        if ((hi & 0x7C) == 0x7C) hi &= 0xFB;
        if (trial == 0 && i % 4 == 0) b[i * 20 + o - 1] = 0, hi &= 0x80;
        if (trial == 1 && i % 3 == 0) hi &= 0x83;
      }
    const quantized<P> q = import_q4_1<P>(b.data(), M, K, b.size());
    const auto u = unpack<P>(pack<P>(q));
    REQUIRE(u.codes == q.codes);
    std::vector<float> y(K);
    bool exact = true;
    for (std::size_t m = 0; m < M && exact; ++m) {
      lutkit::ggml::dequantize_row(lutkit::ggml_type::q4_1, b.data() + m * (K / 32) * 20, K / 32 * 20, y.data(), K);
      for (std::size_t k = 0; k < K; ++k)
        exact = exact && same_bits(FT::value(u.scale(m, k / 32), u.zero(m, k / 32), u.codes[m * K + k]), y[k]) &&
                same_bits(float(u.weight(m, k)), y[k]);
    }
    CHECK(exact);
  }
  std::vector<uint8_t> b(20 * 2, 0);
  b[3] = 0x7E;  // block 0: m = NaN
  CHECK_THROWS_WITH(import_q4_1<P>(b.data(), 1, 64, b.size()), Catch::Contains("non-finite minimum"));
  CHECK_THROWS_WITH(pack_q4_1<P>(b.data(), 1, 64, b.size()), Catch::Contains("non-finite minimum"));
  // quantize with the Q4_1 rule: every weight within half a step of d q + m
  std::vector<float> w(4 * 64);
  std::normal_distribution<float> nd;
  for (auto& x : w) x = nd(rng);
  const auto qq = quantize<P>(w.data(), 4, 64);
  for (std::size_t m = 0; m < 4; ++m)
    for (std::size_t k = 0; k < 64; ++k)
      REQUIRE(std::fabs(qq.weight(m, k) - double(w[m * 64 + k])) <= 0.5 * double(qq.scale(m, k / 32)) * (1 + 1e-6));
}

TEST_CASE("llama.cpp block layout: nibble order and int8 sign", "[formats]") {
  // one q4_0 block: qs[0] = 0x1F -> weight 0 has q = 15, weight 16 has q = 1
  unsigned char blk[18] = {};
  const uint16_t one = f32_to_f16(1.0f);
  blk[0] = uint8_t(one & 0xFF);
  blk[1] = uint8_t(one >> 8);
  blk[2] = 0x1F;
  const auto q = import_q4_0<q4_0_p>(blk, 1, 32);
  CHECK(q.codes[0] == 15);
  CHECK(q.codes[16] == 1);
  CHECK(q.weight(0, 0) == 7.0);
  CHECK(q.weight(0, 16) == -7.0);
  CHECK(q.weight(0, 1) == -8.0);
  unsigned char b8[34] = {};
  b8[0] = blk[0];
  b8[1] = blk[1];
  b8[2] = 0x80;  // -128
  b8[3] = 0x7F;  // 127
  b8[4] = 0xFF;  // -1
  const auto q8 = import_q8_0<q8_0_p>(b8, 1, 32);
  CHECK(q8.codes[0] == 0);
  CHECK(q8.codes[1] == 255);
  CHECK(q8.weight(0, 0) == -128.0);
  CHECK(q8.weight(0, 1) == 127.0);
  CHECK(q8.weight(0, 2) == -1.0);
  CHECK(q8.weight(0, 3) == 0.0);
  blk[2] = 0xF0;
  const auto qi = import_iq4_nl<iq4nl_g32>(blk, 1, 32);
  CHECK(qi.weight(0, 0) == -127.0);
  CHECK(qi.weight(0, 16) == 113.0);
}

// ---------------------------------------------------------------- bad input

TEST_CASE("llama.cpp imports reject bad input", "[formats]") {
  std::mt19937_64 rng(9);
  auto blocks = random_blocks(rng, 4, 64, 34);
  CHECK_THROWS_AS(import_q4_0<q4_0_p>(nullptr, 4, 64), lutkit::error);
  CHECK_THROWS_AS(import_q4_0<q4_0_p>(blocks.data(), 4, 48), lutkit::error);  // K % 32
  CHECK_THROWS_AS(import_q4_0<q4_0_p>(blocks.data(), 0, 64), lutkit::error);
  CHECK_THROWS_AS(import_q8_0<q8_0_p>(blocks.data(), 4, 0), lutkit::error);
  CHECK_THROWS_AS(import_q8_0<q8_0_p>(blocks.data(), 4, 64, blocks.size() - 1), lutkit::error);  // short buffer
  CHECK_NOTHROW(import_q8_0<q8_0_p>(blocks.data(), 4, 64, blocks.size()));
  // wrong policy: format or group shape not the block's
  using sym4_g64 = policy<fmt::uint_sym<4>, group<64>, i8>;
  using asym4_g32 = policy<fmt::uint_asym<4>, group<32>, i8>;
  using sym4_gch = policy<fmt::uint_sym<4>, per_channel, i8>;
  CHECK_THROWS_WITH(import_q4_0<sym4_g64>(blocks.data(), 4, 64), Catch::Contains("group<32>"));
  CHECK_THROWS_AS(import_q4_0<asym4_g32>(blocks.data(), 4, 64), lutkit::error);
  CHECK_THROWS_AS(import_q8_0<q4_0_p>(blocks.data(), 4, 64), lutkit::error);
  CHECK_THROWS_AS(import_iq4_nl<q4_0_p>(blocks.data(), 4, 64), lutkit::error);
  CHECK_THROWS_AS(import_q4_0<iq4nl_g32>(blocks.data(), 4, 64), lutkit::error);
  CHECK_THROWS_AS(import_q4_0<sym4_gch>(blocks.data(), 4, 64), lutkit::error);
  // non-finite scale (fp16 Inf / NaN)
  blocks[34] = 0x00;
  blocks[35] = 0x7C;
  CHECK_THROWS_WITH(import_q8_0<q8_0_p>(blocks.data(), 4, 64), Catch::Contains("non-finite"));
  blocks[18] = 0x00;  // an 18-byte block 1 of IQ4_NL: d = fp16 NaN
  blocks[19] = 0xFE;
  CHECK_THROWS_AS(import_iq4_nl<iq4nl_g32>(blocks.data(), 4, 64), lutkit::error);
}

TEST_CASE("codebook and 8-bit policies reject bad input like the others", "[formats]") {
  std::vector<float> w(64 * 2, 0.5f);
  CHECK_THROWS_AS(quantize<nf4_g64>(nullptr, 2, 64), lutkit::error);
  CHECK_THROWS_AS(quantize<nf4_g64>(w.data(), 2, 63), lutkit::error);  // K % group
  w[5] = NAN;
  CHECK_THROWS_AS(quantize<fp4_g32>(w.data(), 2, 64), lutkit::error);
  std::vector<uint8_t> codes(64, 16);
  std::vector<float> s(2, 1.f);
  CHECK_THROWS_AS(from_codes<iq4nl_g32>(codes.data(), s.data(), nullptr, 1, 64), lutkit::error);  // code 16
  codes.assign(64, 255);
  CHECK_NOTHROW(from_codes<q8_0_p>(codes.data(), s.data(), nullptr, 1, 64));
  // the LUT-GEMV refuses these policies at compile time (require_lut_gemv_capable)
  STATIC_REQUIRE(!nf4_g64::lut_gemv_capable);
  STATIC_REQUIRE(!q8_0_p::lut_gemv_capable);
  STATIC_REQUIRE(q4_0_p::lut_gemv_capable);
}

// K-quant blocks with random bytes whose fp16 super-scales are finite; trial 0 puts zero and
// subnormal scales in, trial 1 the largest fp16 (65504) and its negative.
static std::vector<uint8_t> kquant_blocks(std::mt19937_64& rng, std::size_t nblocks, std::size_t bb,
                                          std::initializer_list<std::size_t> d_offsets, int trial) {
  std::vector<uint8_t> b(nblocks * bb);
  for (auto& v : b) v = uint8_t(rng());
  for (std::size_t i = 0; i < nblocks; ++i)
    for (std::size_t o : d_offsets) {
      uint8_t& lo = b[i * bb + o];
      uint8_t& hi = b[i * bb + o + 1];
      if ((hi & 0x7C) == 0x7C) hi &= 0xFB;
      if (trial == 0 && i % 4 == 0) lo = 0, hi &= 0x80;  // +-0
      if (trial == 0 && i % 4 == 1) hi &= 0x83;            // subnormal
      if (trial == 1 && i % 3 == 0) lo = 0xFF, hi = uint8_t(0x7B | (hi & 0x80));  // +-65504
    }
  return b;
}

TEST_CASE("K-quant policies: super-group parameters from quantize and from_codes, through pack and unpack", "[formats][kquant]") {
  // every group parameter an int8 multiple of its row's super-value for its 256 k (a ragged last
  // super-group included), the fitted range covered, and the blob giving back the same tensor
  auto check = []<class P>() {
    using FT = format_traits<typename P::format>;
    constexpr std::size_t G = P::spec.group_k, U = 256 / G;
    std::mt19937_64 rng(policy_hash(P::name()));
    for (int trial = 0; trial < 3; ++trial) {
      const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 90)(rng);
      const std::size_t K = 256 * std::size_t(trial) + G * std::uniform_int_distribution<std::size_t>(1, U)(rng);
      INFO(P::name() << " trial " << trial << " M=" << M << " K=" << K);
      auto w = random_weights(rng, M * K);
      if (trial == 1)  // rows of very different magnitudes, and an all-zero row
        for (std::size_t m = 0; m < M; ++m)
          for (std::size_t k = 0; k < K; ++k) w[m * K + k] *= m == 0 ? 0.f : std::ldexp(1.f, int(m % 40) - 20);
      const quantized<P> q = quantize<P>(w.data(), M, K);
      REQUIRE(q.supers_per_row == (K / G + U - 1) / U);
      std::size_t off_grid = 0, uncovered = 0;
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t g = 0; g < q.groups; ++g) {
          const float s = q.scale(m, g), d = q.super_scale(m, g);
          const float c = d != 0.f ? s / d : 0.f;
          off_grid += !(c == std::nearbyint(c) && std::fabs(c) <= 127.f && d * c == s);
          if constexpr (P::spec.min_form) {
            const float z = q.zero(m, g), dz = q.super_min(m, g);
            const float cz = dz != 0.f ? z / dz : 0.f;
            off_grid += !(cz == std::nearbyint(cz) && std::fabs(cz) <= 127.f && dz * cz == z);
            for (std::size_t k = g * G; k < (g + 1) * G; ++k) {
              const double v = w[m * K + k];
              uncovered += v < double(z) || v > double(z) + double(s) * FT::max_code * (1 + 1e-6);
              // (rounded to the nearest level: within half a step)
              uncovered += std::fabs(q.weight(m, k) - v) > 0.5 * double(s) * (1 + 1e-6);
            }
          }
        }
      CHECK(off_grid == 0);
      CHECK(uncovered == 0);
      const quantized<P> u = unpack<P>(pack<P>(q));
      CHECK(u.codes == q.codes);
      CHECK(u.scales == q.scales);
      CHECK(u.zeros == q.zeros);
      CHECK(u.supers == q.supers);
      CHECK(u.super_mins == q.super_mins);
      // from_codes of the same parameters: snapped to a super-value per super-group, the blob
      // of the result gives it back
      const quantized<P> f = from_codes<P>(q.codes.data(), q.scales.data(), q.zeros.data(), M, K);
      const quantized<P> fu = unpack<P>(pack<P>(f));
      CHECK(fu.scales == f.scales);
      CHECK(fu.zeros == f.zeros);
    }
  };
  check.operator()<policy<fmt::q4_k, group<32>>>();
  check.operator()<policy<fmt::q5_k, group<32>>>();
  check.operator()<policy<fmt::q2_k, group<16>>>();
  check.operator()<policy<fmt::q6_k, group<16>>>();
  check.operator()<policy<fmt::q3_k, group<16>>>();
}

TEST_CASE("import_q2_k ... import_q6_k, import_q5_1 reproduce llama.cpp's dequantization bit for bit", "[formats][kquant]") {
  using Q2K = policy<fmt::q2_k, group<16>>;
  using Q3K = policy<fmt::q3_k, group<16>>;
  using Q4K = policy<fmt::q4_k, group<32>>;
  using Q5K = policy<fmt::q5_k, group<32>>;
  using Q6K = policy<fmt::q6_k, group<16>>;
  using Q51 = policy<fmt::q5_1, group<32>>;
  // (E: the block's weights, 256 for the K-quants)
  auto check = [&]<class P, std::size_t E = 256>(ggml_type t, std::size_t bb, std::initializer_list<std::size_t> d_off,
                                                  auto import) {
    using FT = format_traits<typename P::format>;
    constexpr std::size_t G = P::spec.group_k;
    std::mt19937_64 rng(policy_hash(P::name()));
    for (int trial = 0; trial < 5; ++trial) {
      const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 70)(rng);
      const std::size_t K = 256 * std::uniform_int_distribution<std::size_t>(1, 4)(rng);
      INFO(P::name() << " trial " << trial << " M=" << M << " K=" << K);
      const auto b = kquant_blocks(rng, M * K / E, bb, d_off, trial);
      const quantized<P> q = import(b.data(), M, K, b.size());
      const auto u = unpack<P>(pack<P>(q));
      REQUIRE(u.codes == q.codes);
      std::vector<float> y(K);
      std::size_t bad = 0;
      for (std::size_t m = 0; m < M; ++m) {
        ggml::dequantize_row(t, b.data() + m * (K / E) * bb, K / E * bb, y.data(), K);
        for (std::size_t k = 0; k < K; ++k)
          bad += !same_bits(FT::value(u.scale(m, k / G), u.zero(m, k / G), u.codes[m * K + k]), y[k]) ||
                 !same_bits(float(u.weight(m, k)), y[k]);
      }
      CHECK(bad == 0);
    }
    // every code value, powers-of-two super-scales: 4 blocks of random bytes (every code appears)
    std::vector<uint8_t> b(bb * 1024 / E);
    for (auto& v : b) v = uint8_t(rng());
    for (std::size_t i = 0; i < 1024 / E; ++i)
      for (std::size_t o : d_off) b[i * bb + o] = 0x00, b[i * bb + o + 1] = uint8_t(0x2C + i % 4);  // d = 2^(-4 + i % 4)
    const auto q = import(b.data(), 1, 1024, b.size());
    std::set<int> codes(q.codes.begin(), q.codes.end());
    CHECK(int(codes.size()) == FT::max_code + 1);
    std::vector<float> y(1024);
    ggml::dequantize_row(t, b.data(), b.size(), y.data(), 1024);
    for (std::size_t k = 0; k < 1024; ++k)
      CHECK(same_bits(FT::value(q.scale(0, k / G), q.zero(0, k / G), q.codes[k]), y[k]));
  };
  check.operator()<Q4K>(ggml_type::q4_k, 144, {0, 2}, [](auto... a) { return import_q4_k<Q4K>(a...); });
  check.operator()<Q6K>(ggml_type::q6_k, 210, {208}, [](auto... a) { return import_q6_k<Q6K>(a...); });
  check.operator()<Q3K>(ggml_type::q3_k, 110, {108}, [](auto... a) { return import_q3_k<Q3K>(a...); });
  check.operator()<Q5K>(ggml_type::q5_k, 176, {0, 2}, [](auto... a) { return import_q5_k<Q5K>(a...); });
  check.operator()<Q2K>(ggml_type::q2_k, 84, {80, 82}, [](auto... a) { return import_q2_k<Q2K>(a...); });
  check.operator()<Q51, 32>(ggml_type::q5_1, 24, {0, 2}, [](auto... a) { return import_q5_1<Q51>(a...); });
  STATIC_REQUIRE(Q5K::spec.super_k == 256 && Q5K::spec.min_form && Q5K::spec.planes == 5 && Q5K::lut_gemv_capable);
  STATIC_REQUIRE(Q2K::spec.super_k == 256 && Q2K::spec.min_form && Q2K::spec.planes == 2 && Q2K::spec.block_k == 16);
  STATIC_REQUIRE(Q51::spec.super_k == 0 && Q51::spec.min_form && Q51::spec.planes == 5 && Q51::lut_gemv_capable);
  STATIC_REQUIRE(Q3K::spec.super_k == 256 && Q3K::spec.planes == 3 && Q3K::spec.block_k == 16 && Q3K::lut_gemv_capable);
  STATIC_REQUIRE(Q4K::spec.super_k == 256 && Q6K::spec.super_k == 256 && Q6K::spec.planes == 6 && Q6K::spec.block_k == 16);
  // int8 codes per group and row; an fp32 super-scale (and super-minimum) per 256 k and row
  STATIC_REQUIRE(Q4K::spec.scale_bytes() == 64 * 2 && Q6K::spec.scale_bytes() == 64);
  STATIC_REQUIRE(Q4K::spec.super_bytes() == 64 * 4 * 2 && Q6K::spec.super_bytes() == 64 * 4);
  STATIC_REQUIRE(Q4K::spec.groups_per_super() == 8 && Q6K::spec.groups_per_super() == 16);

  // errors: a non-finite super-scale names its block; the policy, K and the buffer are checked
  std::vector<uint8_t> b(144 * 2, 0);
  b[144 + 3] = 0x7C;  // block 1: dmin = +inf
  CHECK_THROWS_WITH(import_q4_k<Q4K>(b.data(), 1, 512, b.size()), Catch::Contains("block 1") && Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(pack_q4_k<Q4K>(b.data(), 1, 512, b.size()), Catch::Contains("block 1") && Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(import_q4_k<Q4K>(b.data(), 1, 512, b.size() - 1), Catch::Contains("holds fewer than"));
  CHECK_THROWS_WITH(import_q4_k<Q4K>(b.data(), 2, 128, b.size()), Catch::Contains("multiple of the super-block size 256"));
  using Q41 = policy<fmt::q4_1, group<32>>;
  CHECK_THROWS_WITH(import_q4_k<Q41>(b.data(), 1, 256, b.size()), Catch::Contains("Q4_K format"));
  CHECK_THROWS_WITH(import_q4_k<Q4K>(nullptr, 1, 256, 144), Catch::Contains("null"));
  std::vector<uint8_t> c(210, 0);
  c[209] = 0x7E;  // d = NaN
  CHECK_THROWS_WITH(import_q6_k<Q6K>(c.data(), 1, 256, c.size()), Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(pack_q6_k<Q6K>(c.data(), 1, 256, c.size()), Catch::Contains("non-finite"));
  using Q6Kg32 = policy<fmt::q6_k, group<32>>;
  CHECK_THROWS_WITH(import_q6_k<Q6Kg32>(c.data(), 1, 256, c.size()), Catch::Contains("group<16>"));
  std::vector<uint8_t> e(110 * 3, 0);
  e[110 * 2 + 109] = 0xFC;  // block 2: d = -inf
  CHECK_THROWS_WITH(import_q3_k<Q3K>(e.data(), 3, 256, e.size()), Catch::Contains("block 2") && Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(pack_q3_k<Q3K>(e.data(), 3, 256, e.size()), Catch::Contains("block 2") && Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(import_q3_k<Q3K>(e.data(), 3, 256, e.size() - 1), Catch::Contains("holds fewer than"));
  CHECK_THROWS_WITH(pack_q3_k<Q6K>(e.data(), 3, 256, e.size()), Catch::Contains("Q3_K format"));
  std::vector<uint8_t> f(84 * 2, 0), g(176, 0), h(24 * 8, 0);
  f[84 + 83] = 0x7E;  // Q2_K block 1: dmin = NaN
  CHECK_THROWS_WITH(import_q2_k<Q2K>(f.data(), 1, 512, f.size()), Catch::Contains("block 1") && Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(pack_q2_k<Q2K>(f.data(), 1, 512, f.size()), Catch::Contains("block 1") && Catch::Contains("non-finite"));
  g[1] = 0x7C;  // Q5_K: d = +inf
  CHECK_THROWS_WITH(import_q5_k<Q5K>(g.data(), 1, 256, g.size()), Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(pack_q5_k<Q5K>(g.data(), 1, 256, g.size()), Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(import_q5_k<Q4K>(g.data(), 1, 256, g.size()), Catch::Contains("Q5_K format"));
  CHECK_THROWS_WITH(import_q2_k<Q2K>(f.data(), 1, 300, f.size()), Catch::Contains("multiple of the super-block size 256"));
  h[24 * 3 + 3] = 0xFC;  // Q5_1 block 3: m = -inf
  CHECK_THROWS_WITH(import_q5_1<Q51>(h.data(), 1, 256, h.size()), Catch::Contains("block 3"));
  CHECK_THROWS_WITH(pack_q5_1<Q51>(h.data(), 1, 256, h.size()), Catch::Contains("block 3"));
  CHECK_THROWS_WITH(import_q5_1<Q51>(h.data(), 1, 256, h.size() - 1), Catch::Contains("fewer than"));
}

TEST_CASE(
    "int8 prefill: the super-group fold on llama.cpp's Q2_K / Q3_K (and, in planes, Q4_K / Q5_K / Q6_K) blocks, the "
    "per-group route on lutkit's codes",
    "[formats][kquant][dequant_gemm]") {
  // A blob imported from llama.cpp's blocks takes the fold in every chunk (its scale codes times
  // the levels stay within a byte; Q4_K's and Q5_K's codes 0..63 as two digits of base 8, each
  // times the levels a byte, on kernel sets whose int8 kernel over row-major activations takes
  // the second plane: AMX); lutkit's own quantizer's codes (up to 127) do not, and those chunks
  // keep the per-group flush. Q6_K's codes, every int8, fold in three planes of base-8 digits
  // -3..4 from either. Both against the double reference, every kernel set.
  using Q2K = policy<fmt::q2_k, group<16>>;
  using Q3K = policy<fmt::q3_k, group<16>>;
  using Q4K = policy<fmt::q4_k, group<32>>;
  using Q5K = policy<fmt::q5_k, group<32>>;
  STATIC_REQUIRE(detail::int8_super_fold_offset<Q2K>() == 0);
  STATIC_REQUIRE(detail::int8_super_fold_offset<Q3K>() == 124);
  using Q6K = policy<fmt::q6_k, group<16>>;
  STATIC_REQUIRE(detail::int8_super_fold_offset<Q6K>() == 128 && detail::int8_super_fold_split<Q6K>() == 8);
  STATIC_REQUIRE(detail::int8_super_fold_planes<Q6K>() == 3 && detail::int8_super_fold_offset_weight<Q6K>() == 73);
  STATIC_REQUIRE(detail::int8_super_fold_planes<Q4K>() == 2 && detail::int8_super_fold_planes<Q2K>() == 1);
  STATIC_REQUIRE(detail::int8_super_fold_offset<Q4K>() == 0 && detail::int8_super_fold_split<Q4K>() == 8);
  STATIC_REQUIRE(detail::int8_super_fold_offset<Q5K>() == 0 && detail::int8_super_fold_split<Q5K>() == 8);
  STATIC_REQUIRE(detail::int8_super_fold_split<Q2K>() == 0 && detail::int8_super_fold_split<Q3K>() == 0);
  auto check = [&]<class P>(std::size_t bb, std::initializer_list<std::size_t> d_off, auto import) {
    std::mt19937_64 rng(policy_hash(P::name()) + 11);
    for (int trial = 0; trial < 6; ++trial) {
      const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 150)(rng);
      const std::size_t K = 256 * std::uniform_int_distribution<std::size_t>(1, 5)(rng);
      const std::size_t N = std::uniform_int_distribution<std::size_t>(3, trial % 3 == 0 ? 60 : 20)(rng);
      const bool llama = trial % 2 == 0;
      INFO(P::name() << " trial " << trial << " M=" << M << " K=" << K << " N=" << N
                     << (llama ? " imported" : " quantized"));
      const auto b = kquant_blocks(rng, M * K / 256, bb, d_off, trial < 2 ? trial : 2);
      const auto w = random_weights(rng, M * K);
      const quantized<P> q = llama ? import(b.data(), M, K, b.size()) : quantize<P>(w.data(), M, K);
      const auto wp = pack<P>(q);
      const auto x = random_activations(rng, N * K, trial == 4 ? act_kind::extremes : act_kind::gaussian);
      const auto geo = detail::make_dq_geometry<P>(wp.layout(), N, act_type::int8);
      std::vector<float> y_avx512;  // the AVX-512 set's output (the VNNI kernel over the panel)
      for (const auto be : dq_backends()) {
        const auto& ks = detail::dq_kernels_for(be);
        INFO("backend " << ks.name);
        // a set with an int8 kernel over row-major activations (AMX) takes it from its column
        // count on: with the fold's 256-k super-groups as its flush groups
        const bool rows = ks.int8_rows && N >= ks.int8_rows_min;
        if (rows) CHECK(detail::uses_rows(ks, act_type::int8, geo, 256));
        constexpr bool planes = detail::int8_super_fold_split<P>() > 0;
        const detail::lut_weight_source<P> src{wp.data(), &wp.layout(), &ks};
        detail::dq_scratch s;
        s.init(geo);
        std::size_t folded = 0, chunks = 0;
        for (std::size_t t = 0; t < wp.layout().tiles; ++t)
          for (std::size_t k0 = 0; k0 < geo.K_pad; k0 += geo.kc, ++chunks)
            folded += src.super_levels(t, k0, std::min(geo.K_pad, k0 + geo.kc), s) != nullptr;
        constexpr bool every_code = detail::int8_super_fold_planes<P>() == 3;
        CHECK(folded == (llama || every_code ? chunks : 0));
        const auto ref = dq_reference<P>(q, x, N, act_type::int8, geo.flush_k, geo.flushes());
        std::vector<float> y(N * M, -1.f);
        dequant_gemm<P>(wp, x.data(), N, K, y.data(), act_type::int8, 0, 0, nullptr, be);
        CHECK(dq_compare<P>(ref, y.data(), M, N, M) == "");
        // the AMX kernel runs mk_int8's epilogue in its order: the same bits as the AVX-512 set,
        // folded chunk by folded chunk (a per-group route in either would round differently)
        if (be == dq_backend::avx512) y_avx512 = y;
        // (the two-plane fold runs on AMX only: against the AVX-512 set's per-group flush, the
        // reference bound above)
        if (!planes && rows && be == dq_backend::avx512_amx && !y_avx512.empty())
          CHECK(std::memcmp(y.data(), y_avx512.data(), y.size() * 4) == 0);
      }
    }
  };
  check.operator()<Q3K>(110, {108}, [](auto... a) { return import_q3_k<Q3K>(a...); });
  check.operator()<Q2K>(84, {80, 82}, [](auto... a) { return import_q2_k<Q2K>(a...); });
  check.operator()<Q4K>(144, {0, 2}, [](auto... a) { return import_q4_k<Q4K>(a...); });
  check.operator()<Q5K>(176, {0, 2}, [](auto... a) { return import_q5_k<Q5K>(a...); });
  check.operator()<Q6K>(210, {208}, [](auto... a) { return import_q6_k<Q6K>(a...); });
}
