// The AIE decode GEMVs (targets/aie/gemv.hpp) and the INT4 -> bf16 dequant-GEMM (targets/aie/gemm.hpp)
// against the host's double references over seeded random shapes, their integer stages bit for
// bit, and a planted fault in each kernel failing its check.
#include "aie_test_common.hpp"

#include <lutkit/targets/aie/gemm.hpp>
#include <lutkit/targets/aie/gemv.hpp>
#include <lutkit/targets/aie/model/cycles.hpp>

using namespace aie_test;
namespace lk = lutkit;

namespace {

template <class F, class G, class T = lk::table::lut4<int8_t, true>>
using AP = lk::policy<F, G, T, lk::target::aie>;

using Q4_0 = AP<lk::fmt::uint_sym<4>, lk::group<32>>;
using W4A64 = AP<lk::fmt::uint_asym<4>, lk::group<64>>;
using Q4NX = AP<lk::fmt::q4nx, lk::group<32>>;
using W4S128 = AP<lk::fmt::uint_sym<4>, lk::group<128>, lk::table::lut4<int8_t, false>>;
using W2A64 = AP<lk::fmt::uint_asym<2>, lk::group<64>>;
using W3S32 = AP<lk::fmt::uint_sym<3>, lk::group<32>, lk::table::lut4<int8_t, false>>;
using W1A64 = AP<lk::fmt::uint_asym<1>, lk::group<64>>;
using W4A256 = AP<lk::fmt::uint_asym<4>, lk::group<256>, lk::table::lut4<int8_t, false>>;
using W2S32 = AP<lk::fmt::uint_sym<2>, lk::group<32>>;

struct shape {
  std::size_t M, K, N;
};
template <class P>
shape random_shape(std::mt19937_64& rng, std::size_t nmax) {
  const std::size_t G = std::size_t(P::spec.group_k);
  std::uniform_int_distribution<std::size_t> dm(1, 150), dk(1, 512 / G + 1), dn(1, nmax);
  std::size_t M = dm(rng);
  if constexpr (std::is_same_v<typename P::format, lk::fmt::q4nx>) M = (M + 31) / 32 * 32;
  std::size_t K = dk(rng) * G;
  if constexpr (std::is_same_v<typename P::format, lk::fmt::q4nx>) K = (K + 255) / 256 * 256;
  return {M, K, dn(rng)};
}

// ---- W4A8 on the int8 x int4 mmul
// the q8_0 activations the reference uses (ref::gemv_llama_activations): q and d per 32-block
struct q8 {
  std::vector<int> q;
  std::vector<double> d;
};
inline q8 q8_0(const float* x, std::size_t K) {
  q8 r;
  r.q.resize(K);
  r.d.resize(K / 32);
  for (std::size_t b = 0; b < K / 32; ++b) {
    float amax = 0.f;
    for (std::size_t k = 32 * b; k < 32 * b + 32; ++k) amax = std::fmax(amax, std::fabs(x[k]));
    const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
    r.d[b] = lk::f16_to_f32(lk::f32_to_f16(d));
    for (std::size_t k = 32 * b; k < 32 * b + 32; ++k) r.q[k] = int(std::round(x[k] * id));
  }
  return r;
}

template <class P, class Prof>
bool check_w4a8(uint64_t seed, fault f, int cases) {
  std::mt19937_64 rng(seed);
  bool all = true;
  for (int cs = 0; cs < cases; ++cs) {
    const shape sh = random_shape<P>(rng, 4);
    const auto w = gaussian(rng, sh.M * sh.K);
    auto x = gaussian(rng, sh.N * sh.K, cs % 3 == 2 ? 1e4f : 1.f);  // (every third case: large activations)
    if (cs % 4 == 1)  // a zero activation block
      for (std::size_t k = 0; k < 32; ++k) x[k] = 0.f;
    const auto q = quantize_any<P>(w, sh.M, sh.K);
    const auto blob = pack_aie<P>(q);
    std::vector<float> y(sh.N * sh.M, -1.f);
    std::vector<int32_t> dots(sh.N * sh.M * (sh.K / 32), 0);
    auto c = make_core<Prof>(f);
    const auto st = aie::gemv_w4a8<P>(*c, blob.data(), sh.M, sh.K, x.data(), sh.N, y.data(), 0, 0, dots.data());
    if (st != aie::status::ok) {
      INFO(case_name(P::name(), seed) << " status " << aie::status_name(st));
      return false;
    }
    const auto ref = lk::ref::gemv_llama_activations(q, x.data(), sh.N, sh.K, 32);
    bool ok = true;
    for (std::size_t n = 0; n < sh.N && ok; ++n) {
      const q8 a = q8_0(x.data() + n * sh.K, sh.K);
      for (std::size_t m = 0; m < sh.M && ok; ++m) {
        double mag = 0;
        for (std::size_t b = 0; b < sh.K / 32; ++b) {
          long dot = 0, qs = 0;
          for (std::size_t k = 32 * b; k < 32 * b + 32; ++k) {
            dot += long(q.codes[m * sh.K + k]) * 1 * a.q[k] - 8L * a.q[k];
            qs += a.q[k];
          }
          // the integer stage: exact
          ok = ok && dots[(n * sh.M + m) * (sh.K / 32) + b] == int32_t(dot);
          const std::size_t g = 32 * b / std::size_t(P::spec.group_k);
          const double s = q.scale(m, g), z = q.zero(m, g);
          mag += std::fabs(a.d[b]) * (std::fabs(s * double(dot)) + (std::fabs(s * (8 - z)) + std::fabs(8 * s + z)) * std::fabs(double(qs)));
        }
        // the float epilogue: a few roundings per 32-block term, one per addition into y
        const double bound = mag * (double(sh.K / 32) + 8) * 0x1p-22 + 1e-30;
        const double err = std::fabs(double(y[n * sh.M + m]) - ref[n * sh.M + m]);
        if (!(err <= bound)) {
          if (f == fault::none)
            UNSCOPED_INFO(case_name(P::name(), seed) << " M " << sh.M << " K " << sh.K << " n " << n << " m " << m << " y "
                                                     << y[n * sh.M + m] << " ref " << ref[n * sh.M + m] << " bound " << bound);
          ok = false;
        }
      }
    }
    all = all && ok;
    if (!all) return false;
  }
  return all;
}

// ---- LUT-GEMV on parallel_lookup
template <class P, class Prof>
bool check_lut(uint64_t seed, fault f, int cases) {
  std::mt19937_64 rng(seed);
  constexpr auto& S = P::spec;
  const std::size_t G = std::size_t(S.group_k);
  for (int cs = 0; cs < cases; ++cs) {
    const shape sh = random_shape<P>(rng, 3);
    const auto w = gaussian(rng, sh.M * sh.K);
    const auto x = gaussian(rng, sh.N * sh.K);
    const auto q = quantize_any<P>(w, sh.M, sh.K);
    const auto blob = pack_aie<P>(q);
    const std::size_t blocks = sh.K / std::size_t(S.block_k);
    std::vector<float> y(sh.N * sh.M, -1.f);
    std::vector<int32_t> sums(sh.N * sh.M * blocks, 0);
    auto c = make_core<Prof>(f);
    const auto st = aie::lut_gemv<P>(*c, blob.data(), sh.M, sh.K, x.data(), sh.N, y.data(), 0, 0, sums.data());
    if (st != aie::status::ok) return false;
    const auto ref = lk::ref::gemv(q, x.data(), sh.N);
    std::vector<int16_t> e(16 * G / 4);
    for (std::size_t n = 0; n < sh.N; ++n)
      for (std::size_t g = 0; g < sh.K / G; ++g) {
        const float* xg = x.data() + n * sh.K + g * G;
        const double ts = aie::lut_group_tables(xg, int(G), S.mirror, e.data());
        for (std::size_t m = 0; m < sh.M; ++m) {
          // the integer stage: sum over planes and steps of 2^p entry[index], exact
          for (std::size_t blk = g * G / S.block_k; blk < (g + 1) * G / S.block_k; ++blk) {
            long s = 0;
            for (std::size_t st4 = blk * S.block_k / 4; st4 < (blk + 1) * S.block_k / 4; ++st4)
              for (int p = 0; p < S.planes; ++p) {
                int idx = 0;
                for (int i = 0; i < 4; ++i) idx |= ((q.codes[m * sh.K + 4 * st4 + std::size_t(i)] >> p) & 1) << i;
                s += long(e[16 * (st4 - g * G / 4) + std::size_t(idx)]) << p;
              }
            if (sums[(n * sh.M + m) * blocks + blk] != int32_t(s)) return false;
          }
        }
        (void)ts;
      }
    // the float result against the double reference: half a table step per lookup
    for (std::size_t n = 0; n < sh.N; ++n)
      for (std::size_t m = 0; m < sh.M; ++m) {
        double bound = 0, mag = 0;
        for (std::size_t g = 0; g < sh.K / G; ++g) {
          const float* xg = x.data() + n * sh.K + g * G;
          const double ts = aie::lut_group_tables(xg, int(G), S.mirror, e.data());
          const double s = std::fabs(q.scale(m, g));
          double xs = 0;
          for (std::size_t k = 0; k < G; ++k) xs += std::fabs(xg[k]);
          bound += s * 0.5 * ts * double(S.plane_weight_sum) * double(G / 4);
          mag += s * (ts * 127.0 * S.plane_weight_sum * double(G / 4) + std::fabs(q.zero(m, g) + 8) * xs);
        }
        bound += mag * double(sh.K / G + 16) * 0x1p-22 + 1e-30;
        if (!(std::fabs(double(y[n * sh.M + m]) - ref[n * sh.M + m]) <= bound)) {
          if (f == fault::none)
            UNSCOPED_INFO(case_name(P::name(), seed) << " m " << m << " y " << y[n * sh.M + m] << " ref " << ref[n * sh.M + m]
                                                     << " bound " << bound);
          return false;
        }
      }
  }
  return true;
}

}  // namespace

TEMPLATE_TEST_CASE("aie kernels: W4A8 GEMV on the int8 x int4 mmul equals the q8_0 reference", "[aie_kernels]", aie::aie2,
                   aie::aie2p) {
  CHECK(check_w4a8<Q4_0, TestType>(11, fault::none, 6));
  CHECK(check_w4a8<W4A64, TestType>(12, fault::none, 4));
  CHECK(check_w4a8<Q4NX, TestType>(13, fault::none, 3));
  CHECK(check_w4a8<W4S128, TestType>(14, fault::none, 3));
  CHECK(check_w4a8<W2A64, TestType>(15, fault::none, 3));
  CHECK(check_w4a8<W1A64, TestType>(16, fault::none, 3));
  CHECK(check_w4a8<W3S32, TestType>(17, fault::none, 3));
  CHECK(check_w4a8<W2S32, TestType>(18, fault::none, 3));
  CHECK(check_w4a8<W4A256, TestType>(19, fault::none, 2));
}

TEMPLATE_TEST_CASE("aie kernels: LUT-GEMV on parallel_lookup equals the double reference", "[aie_kernels]", aie::aie2,
                   aie::aie2p) {
  CHECK(check_lut<Q4_0, TestType>(21, fault::none, 3));
  CHECK(check_lut<W4S128, TestType>(22, fault::none, 2));
  CHECK(check_lut<W2A64, TestType>(23, fault::none, 3));
  CHECK(check_lut<W3S32, TestType>(24, fault::none, 3));
  CHECK(check_lut<W1A64, TestType>(25, fault::none, 3));
  CHECK(check_lut<W4A256, TestType>(26, fault::none, 2));
  CHECK(check_lut<W2S32, TestType>(27, fault::none, 3));
}

TEST_CASE("aie kernels: the GEMVs refuse bad arguments with a status", "[aie_kernels]") {
  auto c = make_core<aie::aie2>();
  float x[64] = {}, y[64] = {};
  uint8_t d[64] = {};
  CHECK(aie::gemv_w4a8<Q4_0>(*c, nullptr, 64, 64, x, 1, y) == aie::status::null_pointer);
  CHECK(aie::gemv_w4a8<Q4_0>(*c, d, 64, 48, x, 1, y) == aie::status::bad_shape);
  CHECK(aie::gemv_w4a8<Q4_0>(*c, d, 64, 64, x, 5, y) == aie::status::bad_shape);
  CHECK(aie::gemv_w4a8<Q4_0>(*c, d, 64, 64, x, 1, y, 32) == aie::status::bad_stride);
  CHECK(aie::lut_gemv<Q4_0>(*c, d, 0, 64, x, 1, y) == aie::status::bad_shape);
  // a K whose activations do not fit the data memory
  std::vector<float> big(40000, 0.f);
  CHECK(aie::gemv_w4a8<Q4_0>(*c, d, 1, 16384, big.data(), 4, y) == aie::status::out_of_memory);
}

TEST_CASE("aie kernels: planted faults in the GEMVs fail their checks", "[aie_kernels]") {
  CHECK_FALSE(check_w4a8<Q4_0, aie::aie2>(11, fault::gemv_group_scale, 2));
  CHECK_FALSE(check_w4a8<Q4_0, aie::aie2>(11, fault::gemv_nibble, 2));
  CHECK_FALSE(check_w4a8<Q4_0, aie::aie2>(11, fault::mmul_last_k, 2));
  CHECK_FALSE(check_w4a8<Q4_0, aie::aie2p>(11, fault::shuffle_order, 2));
  CHECK_FALSE(check_lut<Q4_0, aie::aie2>(21, fault::lut_plane_weight, 2));
  CHECK_FALSE(check_lut<W2A64, aie::aie2>(23, fault::lut_zero_term, 2));
  CHECK_FALSE(check_lut<Q4_0, aie::aie2>(21, fault::lookup_index, 2));
  CHECK_FALSE(check_lut<Q4_0, aie::aie2>(21, fault::broadcast_lane, 1));
}

// ---- INT4 -> bf16 dequant + bf16 mmul GEMM (aie2)
namespace {
template <class P>
bool check_dq_gemm(uint64_t seed, fault f, int cases) {
  std::mt19937_64 rng(seed);
  for (int cs = 0; cs < cases; ++cs) {
    shape sh = random_shape<P>(rng, 40);
    const auto w = gaussian(rng, sh.M * sh.K);
    const auto xf = gaussian(rng, sh.N * sh.K);
    std::vector<uint16_t> xb(xf.size());
    std::vector<float> xr(xf.size());
    for (std::size_t i = 0; i < xf.size(); ++i) xb[i] = lk::f32_to_bf16(xf[i]), xr[i] = lk::bf16_to_f32(xb[i]);
    const auto q = quantize_any<P>(w, sh.M, sh.K);
    const auto blob = pack_aie<P>(q);
    std::vector<float> y(sh.N * sh.M, -1.f);
    auto c = make_core<aie::aie2>(f);
    if (aie::dequant_gemm<P>(*c, blob.data(), sh.M, sh.K, xb.data(), sh.N, y.data()) != aie::status::ok) return false;
    const auto ref = lk::ref::gemv(q, xr.data(), sh.N);
    const auto wd = lk::ref::dequantize(q);
    for (std::size_t n = 0; n < sh.N; ++n)
      for (std::size_t m = 0; m < sh.M; ++m) {
        double mag = 0, smag = 0;
        for (std::size_t k = 0; k < sh.K; ++k) {
          mag += std::fabs(wd[m * sh.K + k] * xr[n * sh.K + k]);
          const std::size_t g = k / std::size_t(P::spec.group_k);
          smag += std::fabs(q.scale(m, g) * xr[n * sh.K + k]) * (std::fabs(q.zero(m, g)) + 136.0);
        }
        // bf16 weights (half an ulp of 2^-8), the scale rounded to bf16 (fp16 parameters), the
        // bias's fp32 rounding, fp32 accumulation over K
        const double bound = mag * (0x1p-8 + 0x1p-8 + double(sh.K + 8) * 0x1p-23) + smag * 0x1p-22 + 1e-30;
        if (!(std::fabs(double(y[n * sh.M + m]) - ref[n * sh.M + m]) <= bound)) {
          if (f == fault::none)
            UNSCOPED_INFO(case_name(P::name(), seed) << " M " << sh.M << " K " << sh.K << " N " << sh.N << " n " << n << " m "
                                                     << m << " y " << y[n * sh.M + m] << " ref " << ref[n * sh.M + m]);
          return false;
        }
      }
  }
  return true;
}
}  // namespace

TEST_CASE("aie kernels: INT4 -> bf16 dequant + bf16 mmul GEMM equals the double reference", "[aie_kernels]") {
  CHECK(check_dq_gemm<Q4NX>(31, fault::none, 3));
  CHECK(check_dq_gemm<Q4_0>(32, fault::none, 4));
  CHECK(check_dq_gemm<W4A64>(33, fault::none, 3));
  CHECK(check_dq_gemm<W2A64>(34, fault::none, 2));
  CHECK(check_dq_gemm<W3S32>(35, fault::none, 2));
  CHECK(check_dq_gemm<W1A64>(36, fault::none, 2));
  CHECK(check_dq_gemm<W4S128>(37, fault::none, 2));
  auto c = make_core<aie::aie2p>();
  float y[4];
  uint16_t x[64] = {};
  uint8_t d[64] = {};
  CHECK(aie::dequant_gemm<Q4_0>(*c, d, 64, 64, x, 1, y) == aie::status::unsupported);
}

TEST_CASE("aie kernels: the dequant-GEMM's supertile schedule on a 4 x 4 array equals one core's result", "[aie_kernels]") {
  std::mt19937_64 rng(38);
  const std::size_t M = 64 * 6, K = 256, N = 32 * 5;  // 5 x 6 output tiles: more than one supertile
  const auto w = gaussian(rng, M * K);
  const auto xf = gaussian(rng, N * K);
  std::vector<uint16_t> xb(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) xb[i] = lk::f32_to_bf16(xf[i]);
  const auto blob = pack_aie<Q4NX>(quantize_any<Q4NX>(w, M, K));
  std::vector<float> y1(N * M), y16(N * M, -1.f);
  auto one = make_core<aie::aie2>();
  REQUIRE(aie::dequant_gemm<Q4NX>(*one, blob.data(), M, K, xb.data(), N, y1.data()) == aie::status::ok);
  auto cores = std::make_unique<aie::core<aie::aie2>[]>(16);
  REQUIRE(aie::dequant_gemm_array<Q4NX>(cores.get(), 4, 4, blob.data(), M, K, xb.data(), N, y16.data()) == aie::status::ok);
  CHECK(y16 == y1);  // the same arithmetic per output tile, bit for bit
  // every core computed its tiles: (rb mod 4, t mod 4) of 5 x 6 tiles
  uint64_t total = 0;
  for (int cc = 0; cc < 4; ++cc)
    for (int rr = 0; rr < 4; ++rr) {
      const auto k = lutkit::aie::model::cycles<aie::aie2>(cores[cc * 4 + rr].tr);
      const std::size_t tiles = std::size_t((5 - cc + 3) / 4) * std::size_t((6 - rr + 3) / 4);
      CHECK(k.macs == tiles * (32 / 4) * (64 / 4) * (K / 8));
      total += k.macs;
    }
  CHECK(total == lutkit::aie::model::cycles<aie::aie2>(one->tr).macs);
}

TEST_CASE("aie kernels: planted faults in the dequant-GEMM fail its check", "[aie_kernels]") {
  CHECK_FALSE(check_dq_gemm<Q4NX>(31, fault::dq_min, 2));
  CHECK_FALSE(check_dq_gemm<Q4_0>(32, fault::dq_k_tile, 2));
  CHECK_FALSE(check_dq_gemm<Q4_0>(32, fault::bf16_round, 2));
  CHECK_FALSE(check_dq_gemm<Q4_0>(32, fault::mmul_acc, 2));
}

// ---- the target::aie layout (tiling spec, mmul order): pack / unpack round trip, the element map
// in the int8 x int4 mmul's B-operand atoms, every bit of the blob used at most once
namespace {
template <class P>
void check_aie_layout(std::size_t M, std::size_t K) {
  std::mt19937_64 rng(M * 131 + K);
  const auto w = gaussian(rng, M * K);
  const auto q = quantize_any<P>(w, M, K);
  const auto blob = pack_aie<P>(q);
  const auto u = lk::unpack(blob);
  INFO(P::name());
  CHECK(u.codes == q.codes);
  CHECK(u.scales == q.scales);
  if (P::spec.asymmetric) CHECK(u.zeros == q.zeros);
  constexpr auto& S = P::spec;
  const lk::layout_geometry& L = blob.layout();
  std::vector<uint8_t> used(L.total_bytes * 8, 0);
  bool map_ok = true, unique = true;
  for (std::size_t m = 0; m < L.M_pad; ++m)
    for (std::size_t k = 0; k < L.K_pad; ++k) {
      const std::size_t t = m / 64, r = m % 64, sp = k / 8, kk = k % 8;
      const std::size_t blk = sp / std::size_t(S.step_pairs_per_block());
      const std::size_t pair = L.block_offset(t, blk) + (sp % std::size_t(S.step_pairs_per_block())) * std::size_t(S.step_pair_bytes());
      const std::size_t want = S.planes == 8 ? pair + 64 * (r / 8) + 8 * kk + r % 8 : pair + 32 * (r / 8) + 4 * kk + (r % 8) / 2;
      const int want_shift = S.planes == 8 ? 0 : 4 * int(r % 2);
      for (int p = 0; p < S.planes; ++p) {
        const auto loc = L.index_location(m, k, p);
        map_ok = map_ok && loc.byte == want && loc.shift == want_shift + p;
        const std::size_t bit = loc.byte * 8 + std::size_t(loc.shift);
        unique = unique && used[bit] == 0;
        used[bit] = 1;
      }
    }
  CHECK(map_ok);
  CHECK(unique);
}
}  // namespace

TEST_CASE("aie layout: the mmul order of target::aie blobs", "[aie_kernels]") {
  check_aie_layout<Q4_0>(130, 96);
  check_aie_layout<W4A64>(64, 192);
  check_aie_layout<Q4NX>(64, 256);
  check_aie_layout<W2A64>(70, 128);
  check_aie_layout<W3S32>(9, 64);
  check_aie_layout<W1A64>(65, 64);
  check_aie_layout<AP<lk::fmt::uint_asym<8>, lk::group<64>>>(66, 128);
  check_aie_layout<AP<lk::fmt::uint_sym<4>, lk::per_channel>>(64, 100);
  check_aie_layout<AP<lk::fmt::codebook4<lk::book::nf4>, lk::group<64>>>(64, 128);
  // ternary has no mmul layout: target::aie refuses it at compile time
  STATIC_REQUIRE_FALSE(lk::make_tiling_spec<lk::fmt::ternary, lk::per_channel, lk::table::lut4<int8_t, false>, lk::target::aie>().valid());
  STATIC_REQUIRE(Q4_0::spec.step_pair_bytes() == 256);
  STATIC_REQUIRE(W2A64::spec.step_pair_bytes() == 256);  // 2-bit codes stored as nibbles
}
