// Quantization, fp16 conversion and imports.
#include "common.hpp"
#include "hw_half.hpp"
#include "policy_list.hpp"

using namespace lutkit;
using namespace lutkit_test;

TEST_CASE("fp16 conversion agrees with the hardware (F16C, FCVT) on every half and on random floats", "[quant]") {
  if (!hw_half_available()) return;
  bool ok = true;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = f16_to_f32(uint16_t(h));
    const float b = hw_h2f(uint16_t(h));
    ok = ok && ((std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0);
  }
  CHECK(ok);
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  bool ok2 = true;
  for (int i = 0; i < 1000000; ++i) {
    uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, 4);
    const uint16_t a = f32_to_f16(f), b = hw_f2h(f);
    ok2 = ok2 && (std::isnan(f) ? (a & 0x7C00) == 0x7C00 && (a & 0x3FF) : a == b);
  }
  CHECK(ok2);
}

// RTN: every code is a nearest representable level of its group (ties either way).
template <class P>
void check_rtn() {
  std::mt19937_64 rng(policy_hash(P::name()));
  const std::size_t M = 37, K = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) * 3 : 250;
  const auto w = random_weights(rng, M * K);
  const auto q = quantize<P>(w.data(), M, K);
  constexpr int maxq = format_traits<typename P::format>::max_code;
  bool nearest = true;
  double err2 = 0, sig2 = 0;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) {
      const double v = w[m * K + k], got = q.weight(m, k);
      err2 += (v - got) * (v - got);
      sig2 += v * v;
      const std::size_t g = k / q.group_k();
      for (int c = 0; c <= maxq; ++c) {
        const double alt = double(q.scale(m, g)) * (c - double(q.zero(m, g)));
        nearest = nearest && std::fabs(v - got) <= std::fabs(v - alt) + 1e-6 * std::fabs(v) + 1e-9;
      }
    }
  INFO(P::name() << " relative MSE " << err2 / sig2);
  CHECK(nearest);
  CHECK(std::isfinite(err2));
}

TEST_CASE("round-to-nearest quantization, every policy", "[quant]") {
  for_policies<0, policy_count>([]<class P>() { check_rtn<P>(); });
}

TEST_CASE("import_gptq decodes AutoGPTQ int32 tensors", "[quant]") {
  using P = policy<fmt::uint_asym<4>, group<64>, table::lut4<int8_t, false>>;
  const std::size_t M = 16, K = 128, G = 64, groups = K / G;
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> code(0, 15);
  std::vector<uint8_t> codes(M * K);
  for (auto& c : codes) c = uint8_t(code(rng));
  std::vector<int32_t> qweight(K / 8 * M, 0), qzeros(groups * M / 8, 0);
  std::vector<uint16_t> scales(groups * M);
  std::vector<int> zeros(groups * M);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t m = 0; m < M; ++m)
      qweight[(k / 8) * M + m] = int32_t(uint32_t(qweight[(k / 8) * M + m]) | (uint32_t(codes[m * K + k]) << (4 * (k % 8))));
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t m = 0; m < M; ++m) {
      scales[g * M + m] = f32_to_f16(0.01f * float(1 + code(rng)));
      zeros[g * M + m] = 1 + code(rng) % 15;
      const uint32_t stored = uint32_t(zeros[g * M + m] - 1) & 15u;  // v1 stores zero - 1
      qzeros[g * (M / 8) + m / 8] = int32_t(uint32_t(qzeros[g * (M / 8) + m / 8]) | (stored << (4 * (m % 8))));
    }
  const auto q = import_gptq<P>(qweight.data(), scales.data(), qzeros.data(), M, K);
  CHECK(q.codes == codes);
  bool ok = true;
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t m = 0; m < M; ++m) {
      ok = ok && q.scale(m, g) == f16_to_f32(scales[g * M + m]);
      ok = ok && q.zero(m, g) == float(zeros[g * M + m]);
    }
  CHECK(ok);
}

TEST_CASE("from_codes keeps codes and rounds scales to fp16", "[quant]") {
  using P = policy<fmt::uint_sym<3>, per_channel, table::lut4<int8_t, false>>;
  std::vector<uint8_t> codes = {0, 1, 2, 3, 4, 5, 6, 7, 7, 6, 5, 4, 3, 2, 1, 0};
  std::vector<float> s = {0.1f, -0.2f};
  const auto q = from_codes<P>(codes.data(), s.data(), nullptr, 2, 8);
  CHECK(q.codes == codes);
  CHECK(q.scale(1, 0) == round_to_f16(-0.2f));
  CHECK(q.weight(0, 0) == Approx(double(round_to_f16(0.1f)) * -4.0));
}
