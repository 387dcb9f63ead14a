// Two-level LUT dequantization (exact against the value formula), one blob serving LUT-GEMV and
// dequant-GEMM, and bad input of the dequant-GEMM.
#include <array>
#include <bit>
#include <chrono>
#include <atomic>
#include <thread>

#include <lutkit/gemm/dequant_gemm.hpp>
#include <lutkit/decode/decode_gemv.hpp>
#include <lutkit/decode/fused_dq.hpp>

#include "common.hpp"
#include "randomized_dequant_gemm.hpp"
#include "policy_list.hpp"

using namespace lutkit;
using namespace lutkit_test;

TEST_CASE("LUT dequantization reproduces value(scale, zero, code) exactly", "[dequant]") {
  thread_pool pool(2);  // odd cases: the tiles over two threads
  for_dq_policies<0, dq_policy_count>([&]<class P>() {
    using FT = format_traits<typename P::format>;
    // (reduced runs: cases 0 and 1, one thread and two)
    for (int c = 0; c < (case_divisor() > 1 ? 2 : 4); ++c) {
      std::mt19937_64 rng(P::hash() + uint64_t(c));
      const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 130)(rng);
      const std::size_t K = random_k<P>(rng, 700);
      const auto w = random_weights(rng, M * K);
      const auto q = quantize<P>(w.data(), M, K);
      const auto wp = pack<P>(q);
      for (const auto be : dq_backends()) {
        INFO(P::name() << " M=" << M << " K=" << K << " backend " << detail::dq_kernels_for(be).name
                       << (c % 2 ? ", 2 threads" : ""));
        const std::size_t ldo = K + 3;
        std::vector<float> f(M * ldo, 1.f);
        std::vector<uint16_t> b(M * ldo, 1);
        dequantize<P>(wp, f.data(), dq_type::f32, ldo, c % 2 ? &pool : nullptr, be);
        dequantize<P>(wp, b.data(), dq_type::bf16, ldo, c % 2 ? &pool : nullptr, be);
        std::size_t bad = 0;
        for (std::size_t m = 0; m < M; ++m)
          for (std::size_t k = 0; k < K; ++k) {
            const std::size_t g = k / q.group_k();
            const float v = FT::value(q.scale(m, g), q.zero(m, g), q.codes[m * K + k]);
            bad += std::memcmp(&f[m * ldo + k], &v, 4) != 0;
            bad += b[m * ldo + k] != f32_to_bf16(v);
          }
        for (std::size_t m = 0; m < M; ++m)
          for (std::size_t k = K; k < ldo; ++k) bad += f[m * ldo + k] != 1.f || b[m * ldo + k] != 1;
        CHECK(bad == 0);
      }
    }
  });
}

TEST_CASE("one blob: LUT-GEMV and dequant-GEMM N=1 agree with the reference", "[dequant_gemm][same_blob]") {
  // the LUT list and the llama.cpp bit-plane formats the LUT-GEMV also serves (K-quants with
  // super-group parameters among them)
  for_dq_policies<0, dq_policy_count>([]<class P>() {
    if constexpr (P::lut_gemv_capable) {
      std::mt19937_64 rng(P::hash() ^ 0x5A5A);
      const std::size_t M = 150, K = random_k<P>(rng, 600);
      const auto w = random_weights(rng, M * K);
      const auto x = random_activations(rng, K, act_kind::gaussian);
      const auto q = quantize<P>(w.data(), M, K);
      const auto wp = pack<P>(q);
      const auto t = build_tables<P>(x.data(), 1, K);
      std::vector<float> ylut(M), ydq(M), yfd(M), ydec(M);
      lut_gemv<P>(wp, t, ylut.data());
      dequant_gemm<P>(wp, x.data(), 1, K, ydq.data(), act_type::fp32);
      fused_dq_gemv<P>(wp, x.data(), 1, K, yfd.data());
      decode_gemv<P>(wp, x.data(), 1, K, ydec.data(), decode_method::lut_gemv);
      const auto yref = ref::gemv<P>(q, x.data(), 1);
      const auto geo = detail::make_dq_geometry<P>(wp.layout(), 1, act_type::fp32);
      const auto e = dq_reference<P>(q, x, 1, act_type::fp32, geo.flush_k, geo.flushes());
      INFO(P::name() << " K=" << K);
      CHECK(compare_to_ref<P>(q, t, x, yref, ylut.data(), M, 0, M) == "");
      CHECK(dq_compare<P>(e, ydq.data(), M, 1, M) == "");
      CHECK(dq_compare<P>(e, yfd.data(), M, 1, M) == "");
      CHECK(ylut == ydec);  // decode_gemv(lut_gemv) is the LUT-GEMV
    }
  });
}

TEST_CASE("decode_gemv: codebook formats decode through FusedDQP only", "[fused_dq][bad_input]") {
  using NF4 = policy<fmt::codebook4<book::nf4>, group<64>, table::lut4<int8_t, false>>;
  std::mt19937_64 rng(9);
  const std::size_t M = 65, K = 256;
  const auto w = random_weights(rng, M * K);
  const auto x = random_activations(rng, 2 * K, act_kind::gaussian);
  const auto q = quantize<NF4>(w.data(), M, K);
  const auto wp = pack<NF4>(q);
  std::vector<float> y(2 * M), y2(2 * M);
  CHECK_THROWS_WITH(decode_gemv<NF4>(wp, x.data(), 2, K, y.data(), decode_method::lut_gemv),
                    Catch::Contains("fused_dq"));
  CHECK_THROWS_WITH(dequant_gemm<NF4>(wp, x.data(), 2, K, y.data(), act_type::int8), Catch::Contains("integer levels"));
  decode_gemv<NF4>(wp, x.data(), 2, K, y.data(), decode_method::fused_dq);
  fused_dq_gemv<NF4>(wp, x.data(), 2, K, y2.data());
  CHECK(y == y2);
  CHECK_THROWS_WITH(fused_dq_gemv<NF4>(wp, x.data(), 2, K - 64, y.data()), Catch::Contains("K = 192"));
}

TEST_CASE("dequant_gemm rejects bad input with a clear error", "[dequant_gemm][bad_input]") {
  using P = policy<fmt::uint_asym<2>, group<64>, table::lut4<int8_t, false>>;
  using Q = policy<fmt::uint_asym<4>, group<64>, table::lut4<int8_t, false>>;
  std::mt19937_64 rng(7);
  const std::size_t M = 70, K = 128, N = 3;
  const auto w = random_weights(rng, M * K);
  const auto x = random_activations(rng, N * K, act_kind::gaussian);
  const auto wp = pack<P>(quantize<P>(w.data(), M, K));
  std::vector<float> y(N * M);
  CHECK_THROWS_WITH(dequant_gemm<P>(wp, x.data(), N, 64, y.data()), Catch::Contains("K = 64"));
  CHECK_THROWS_WITH(dequant_gemm<P>(wp, nullptr, N, K, y.data()), Catch::Contains("null"));
  CHECK_THROWS_WITH(dequant_gemm<P>(wp, x.data(), N, K, nullptr), Catch::Contains("null"));
  CHECK_THROWS_WITH(dequant_gemm<P>(wp, x.data(), 0, K, y.data()), Catch::Contains("N must be positive"));
  CHECK_THROWS_WITH(dequant_gemm<P>(wp, x.data(), N, K, y.data(), act_type::int8, K - 1), Catch::Contains("ldx"));
  CHECK_THROWS_WITH(dequant_gemm<P>(wp, x.data(), N, K, y.data(), act_type::int8, 0, M - 1), Catch::Contains("ldy"));
  CHECK_THROWS_WITH(dequant_gemm_rows<P>(wp, x.data(), N, K, y.data(), 10, M + 1), Catch::Contains("row range"));
  // a blob packed for another policy
  const auto wq = pack<Q>(quantize<Q>(w.data(), M, K));
  const auto foreign = packed_weights<P>::from_bytes;
  CHECK_THROWS_WITH(foreign(wq.bytes(), wq.size_bytes()), Catch::Contains("packed for policy"));
  // an empty blob
  packed_weights<P> empty;
  CHECK_THROWS_WITH(dequant_gemm<P>(empty, x.data(), N, K, y.data()), Catch::Contains("empty"));
  std::vector<float> big(M * K);
  CHECK_THROWS_WITH(dequantize<P>(wp, big.data(), dq_type::f32, K - 1), Catch::Contains("ldo"));
}

#if defined(LUTKIT_HAVE_AVX512_DQ)
// (bit planes only: whole codes take level1_whole_codes.hpp's level 1, a load, tested below)
TEST_CASE("SIMD level 1 (VBMI fields, GFNI transpose) equals the scalar bit-repack lookups", "[dequant][level1]") {
  if (!detail::avx512::cpu_supported()) return;
  for_dq_policies<0, dq_policy_count>([]<class P>() {
    if constexpr (!P::spec.ternary && !P::spec.whole_codes()) {
      std::mt19937_64 rng(P::hash() ^ 0x11);
      const std::size_t M = 70, K = random_k<P>(rng, 900);
      const auto w = random_weights(rng, M * K);
      const auto wp = pack<P>(quantize<P>(w.data(), M, K));
      const packed_layout& L = wp.layout();
      const std::size_t ld = L.K_pad + 64;
      std::vector<uint8_t> a(64 * ld, 0), b(64 * ld, 0), st(L.K_pad / 4 * 256 + 64, 0), sv(st);
      std::size_t bad = 0;
      for (std::size_t t = 0; t < L.tiles; ++t) {
        detail::unpack_codes<P>(wp.data(), L, t, 0, L.K_pad, a.data(), ld);
        detail::avx512::codes_rows<P>(wp.data(), L, t, 0, L.K_pad, b.data(), ld);
        detail::avx512::codes_steps<P>(wp.data(), L, t, 0, L.K_pad, st.data());
        // and the VBMI field extraction where GFNI would be chosen (4 planes)
        detail::avx512::codes_steps_vbmi<P>(wp.data(), L, t, 0, L.K_pad, sv.data());
        for (std::size_t r = 0; r < 64; ++r)
          for (std::size_t k = 0; k < L.K_pad; ++k) {
            bad += a[r * ld + k] != b[r * ld + k];
            bad += a[r * ld + k] != st[(k / 4) * 256 + r * 4 + k % 4];
            bad += a[r * ld + k] != sv[(k / 4) * 256 + r * 4 + k % 4];
          }
      }
      INFO(P::name() << " K=" << K);
      CHECK(bad == 0);
    }
  });
}

#if defined(LUTKIT_HAVE_AVX2_DQ)
// The AVX2 level 1 (vpshufb + vpcmpeqb bit tests) against the scalar bit-repack lookups, every
// policy it serves, whole tiles and sub-ranges [k0, k1) of whole blocks, partial tiles; the
// levels against format_traits::level of the scalar codes.
TEST_CASE("AVX2 level 1 equals the scalar bit-repack lookups", "[dequant][level1]") {
  if (!detail::avx2::cpu_supported()) return;
  std::size_t ranges = 0;
  for_dq_policies<0, dq_policy_count>([&]<class P>() {
    if constexpr (detail::avx2::has_level1<P>()) {
      using FT = format_traits<typename P::format>;
      std::mt19937_64 rng(P::hash() ^ 0xA2);
      for (int c = 0; c < 2; ++c) {
        const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 150)(rng), K = random_k<P>(rng, 1500);
        const auto w = random_weights(rng, M * K);
        const auto wp = pack<P>(quantize<P>(w.data(), M, K));
        const packed_layout& L = wp.layout();
        const auto f = detail::avx2::level1_fns<P>();
        REQUIRE(f.codes_steps != nullptr);
        REQUIRE(f.codes_rows != nullptr);
        const std::size_t ld = L.K_pad + 64, bk = std::size_t(P::spec.block_k), nblk = L.K_pad / bk;
        std::vector<uint8_t> a(64 * ld, 0), b(64 * ld, 0), st(L.K_pad / 4 * 256 + 64, 0), lv(st);
        std::size_t bad = 0;
        for (std::size_t t = 0; t < L.tiles; ++t) {
          detail::unpack_codes<P>(wp.data(), L, t, 0, L.K_pad, a.data(), ld);
          // [0, K_pad), then a random sub-range of whole blocks
          const std::size_t b0 = std::uniform_int_distribution<std::size_t>(0, nblk - 1)(rng);
          const std::size_t b1 = std::uniform_int_distribution<std::size_t>(b0 + 1, nblk)(rng);
          for (auto [k0, k1] : {std::pair{std::size_t(0), L.K_pad}, std::pair{b0 * bk, b1 * bk}}) {
            std::fill(b.begin(), b.end(), uint8_t(0xEE));
            f.codes_rows(wp.data(), L, t, k0, k1, b.data(), ld);
            f.codes_steps(wp.data(), L, t, k0, k1, st.data());
            if (f.levels_steps) f.levels_steps(wp.data(), L, t, k0, k1, lv.data());
            for (std::size_t r = 0; r < 64; ++r) {
              for (std::size_t k = k0; k < k1; ++k) {
                const uint8_t code = a[r * ld + k];
                const std::size_t j = ((k - k0) / 4) * 256 + r * 4 + k % 4;
                bad += code != b[r * ld + (k - k0)];
                bad += code != st[j];
                if (f.levels_steps) bad += uint8_t(FT::level(code)) != lv[j];
              }
              bad += b[r * ld + (k1 - k0)] != 0xEE;  // nothing written past the range
            }
            ++ranges;
          }
        }
        INFO(P::name() << " M=" << M << " K=" << K);
        CHECK(bad == 0);
      }
    }
  });
  CHECK(ranges > 100);
}

namespace {
// One random case of a fused int8 decode kernel f.int8_fused[NC - 1] (NC columns, flush groups of `flush` k; 0:
// the scale group): per tile, start group (0 and half way) and activation scale (per row, per
// group) the kernel's outputs against expect(wp, t, codes, a, c), which adds what the kernel is
// specified to add for the call a (its C unused) to c; bit for bit. Returns the calls checked.
template <class P, int NC, class Expect>
std::size_t check_fused_case(std::mt19937_64& rng, std::size_t flush, const detail::dq_level1_fns<P>& f,
                             const Expect& expect) {
  std::normal_distribution<float> nd(0.f, 1.f);
  const std::size_t G = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) : 256;
  if (flush == 0) flush = G;
  const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 150)(rng);
  const std::size_t K = G * std::uniform_int_distribution<std::size_t>(1, 6)(rng);
  const auto w = random_weights(rng, M * K);
  const auto wp = pack<P>(quantize<P>(w.data(), M, K));
  const packed_layout& L = wp.layout();
  REQUIRE(f.int8_fused[NC - 1] != nullptr);
  const std::size_t nfl = L.K_pad / flush;
  std::vector<int8_t> A(NC * L.K_pad);  // [-127, 127]: the activation packing's range
  for (auto& v : A) v = int8_t(int(rng() % 255) - 127);
  std::vector<float> sumx(NC * nfl), sa(NC * nfl);
  for (auto& v : sumx) v = 50.f * nd(rng);
  for (auto& v : sa) v = nd(rng);
  std::vector<uint8_t> codes(64 * L.K_pad + 64);
  std::size_t calls = 0;
  for (std::size_t t = 0; t < L.tiles; ++t) {
    detail::unpack_codes<P>(wp.data(), L, t, 0, L.K_pad, codes.data(), L.K_pad);
    for (std::size_t g0 : {std::size_t(0), nfl / 2})
      for (int use_sa = 0; use_sa < 2; ++use_sa) {
        std::vector<float> c0(64 * NC), c1;
        for (auto& v : c0) v = nd(rng);
        c1 = c0;
        const std::size_t k0 = g0 * flush;
        const detail::mk_int8_args a{nullptr, A.data() + k0 * NC, 4 * NC, flush / 4, nfl - g0, c1.data(),
                                     nullptr, nullptr, sumx.data() + NC * g0,
                                     use_sa ? sa.data() + NC * g0 : nullptr, NC};
        expect(wp, t, codes, a, c0.data());
        f.int8_fused[NC - 1](wp.data(), L, t, k0, a);
        INFO(P::name() << " NC=" << NC << " M=" << M << " K=" << K << " tile " << t << " k0=" << k0);
        CHECK(std::memcmp(c0.data(), c1.data(), c0.size() * sizeof(float)) == 0);
        ++calls;
      }
  }
  return calls;
}
// The fused int8 decode kernels of policy P: the AVX2 set's, and the AVX-512 set's where the CPU
// has it (whole codes: the VNNI kernel; bit planes: the GFNI one, tested below)
template <class P>
std::vector<detail::dq_level1_fns<P>> fused_sets() {
  std::vector<detail::dq_level1_fns<P>> v{detail::avx2::level1_fns<P>()};
  if constexpr (P::spec.whole_codes())
    if (detail::avx512::cpu_supported()) {
      v.push_back(detail::dq_level1_for<P>(detail::avx512::kernels()));
      REQUIRE(v.back().int8_fused[0] != v.front().int8_fused[0]);
    }
  return v;
}
// the first k of call a (its activation panel's offset in the case's panel)
inline std::size_t fused_call_k0(const detail::mk_int8_args& a, std::size_t K_pad) {
  return K_pad - a.groups * a.steps * 4;
}
}  // namespace

// The fused level 1 + int8 micro-kernels (decode, 1 and 2 columns; AVX2, and AVX-512 VNNI for whole codes) against the buffered
// route (the portable unpacker's levels, lut_weight_source::group_scales, portable::mk_int8), bit
// for bit: every policy it serves (levels up to 127 unsigned, larger ones signed), partial tiles,
// whole K and a later start k0, per-row and per-group activation scales.
TEST_CASE("fused int8 decode kernels (AVX2, AVX-512 VNNI) equal the buffered route", "[dequant_gemm][int8_kernel]") {
  if (!detail::avx2::cpu_supported()) return;
  std::size_t calls = 0;
  for_dq_policies<0, dq_policy_count>([&]<class P>() {
    if constexpr (detail::avx2::has_int8_fused<P>() && !detail::split_levels<P>()) {
      std::mt19937_64 rng(P::hash() ^ 0xF5);
      auto buffered = [&]<int NC>(const packed_weights<P>& wp, std::size_t t, const std::vector<uint8_t>& codes,
                                  const detail::mk_int8_args& a, float* c) {
        using FT = format_traits<typename P::format>;
        const packed_layout& L = wp.layout();
        const detail::lut_weight_source<P> src{wp.data(), &L, &detail::avx2::kernels()};
        const std::size_t k0 = fused_call_k0(a, L.K_pad), flush = 4 * a.steps;
        std::vector<uint8_t> lev(64 * L.K_pad + 64);
        for (std::size_t r = 0; r < 64; ++r)
          for (std::size_t k = 0; k < L.K_pad; ++k)
            lev[(k / 4) * 256 + 4 * r + k % 4] = uint8_t(FT::level(codes[r * L.K_pad + k]));
        std::vector<float> sw(64 * a.groups), swz(64 * a.groups);
        for (std::size_t g = 0; g < a.groups; ++g)
          src.group_scales(t, k0 + g * flush, sw.data() + 64 * g, swz.data() + 64 * g);
        detail::mk_int8_args b = a;
        b.W = lev.data() + k0 * 64;
        b.sw = sw.data();
        b.swz = swz.data();
        b.C = c;
        detail::portable::mk_int8<NC>(b);
      };
      for (const auto& f : fused_sets<P>()) {
        calls += check_fused_case<P, 1>(rng, 0, f, [&](auto&&... v) { buffered.template operator()<1>(v...); });
        calls += check_fused_case<P, 2>(rng, 0, f, [&](auto&&... v) { buffered.template operator()<2>(v...); });
      }
    }
  });
  CHECK(calls > 50);
}

// The fused int8 decode kernels (AVX2, AVX-512 VNNI) on float codebooks with split levels (NF4; no buffered route):
// against its contract computed here, bit for bit: per flush group the exact int32 sum of the
// fixed-point levels Q times the activations, then mk_int8's epilogue with weight scale s 2^-13 and
// zero coefficient s (c = fma(float(sum) [* sa], s 2^-13, c); c = fma(-sumx, s, c)).
TEST_CASE("fused int8 decode kernels (AVX2, AVX-512 VNNI) on split levels equal their integer contract", "[dequant_gemm][int8_kernel]") {
  if (!detail::avx2::cpu_supported()) return;
  std::size_t calls = 0;
  for_dq_policies<0, dq_policy_count>([&]<class P>() {
    if constexpr (detail::avx2::has_int8_fused<P>() && detail::split_levels<P>()) {
      std::mt19937_64 rng(P::hash() ^ 0x5917);
      auto contract = [&]<int NC>(const packed_weights<P>& wp, std::size_t t, const std::vector<uint8_t>& codes,
                                  const detail::mk_int8_args& a, float* c0) {
        const packed_layout& L = wp.layout();
        const detail::lut_weight_source<P> src{wp.data(), &L, &detail::avx2::kernels()};
        const std::size_t k0 = fused_call_k0(a, L.K_pad), flush = 4 * a.steps;
        std::vector<float> sw(64), swz(64);
        for (std::size_t g = 0; g < a.groups; ++g) {
          src.group_scales(t, k0 + g * flush, sw.data(), swz.data());
          for (int n = 0; n < NC; ++n)
            for (std::size_t r = 0; r < 64; ++r) {
              int32_t sum = 0;
              for (std::size_t kl = g * flush; kl < (g + 1) * flush; ++kl)  // (step-major panel)
                sum += detail::split_level_q<P>(codes[r * L.K_pad + k0 + kl]) *
                       int32_t(a.A[(kl / 4) * a.lda + 4 * std::size_t(n) + kl % 4]);
              float x = float(sum);
              if (a.sa) x = x * a.sa[g * a.ldsum + std::size_t(n)];
              float& c = c0[std::size_t(n) * 64 + r];
              c = std::fma(x, sw[r] * (1.f / float(1 << detail::split_level_bits)), c);
              c = std::fma(-a.sumx[g * a.ldsum + std::size_t(n)], sw[r], c);
            }
        }
      };
      for (int rep = 0; rep < 3; ++rep) {
        for (const auto& f : fused_sets<P>()) {
          calls += check_fused_case<P, 1>(rng, 32, f, [&](auto&&... v) { contract.template operator()<1>(v...); });
          calls += check_fused_case<P, 2>(rng, 32, f, [&](auto&&... v) { contract.template operator()<2>(v...); });
        }
      }
    }
  });
  CHECK(calls >= 24);
}

// The AVX2 fp16 -> fp32 conversion (vcvtph2ps, signaling NaNs by f16_to_f32) against the
// portable one for all 65536 halves, at every alignment, and blocks mixing signaling NaNs with
// ordinary values.
TEST_CASE("AVX2 halves_to_float equals the portable conversion for every half", "[dequant][halves]") {
  if (!detail::avx2::cpu_supported()) return;
  std::vector<uint16_t> h(65536 + 7);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i);
  std::vector<float> a(h.size()), b(h.size());
  for (std::size_t off = 0; off < 4; ++off) {
    detail::portable::halves_to_float(h.data() + off, h.size() - off, a.data());
    detail::avx2::kernels().halves(h.data() + off, h.size() - off, b.data());
    CHECK(std::memcmp(a.data(), b.data(), (h.size() - off) * sizeof(float)) == 0);
  }
  const uint16_t mixed[16] = {0x7C01, 0x3C00, 0xFC01, 0x7E00, 0x7D00, 0x0001, 0x8001, 0x7C00,
                              0x3555, 0x7DFF, 0x0400, 0xFE01, 0x8000, 0x7BFF, 0xFDFF, 0x03FF};
  float x[16], y[16];
  detail::portable::halves_to_float(mixed, 16, x);
  detail::avx2::kernels().halves(mixed, 16, y);
  CHECK(std::memcmp(x, y, sizeof(x)) == 0);
}

// The AVX2 and AVX-512 int8 micro-kernels against portable::mk_int8, bit for bit: random and
// extreme operands (levels at their bound, up to 255, with activations -128: the AVX2 set takes
// vpmaddubsw with int16 sums below 128, vpmaddwd above, where vpmaddubsw would saturate), per-row
// and per-group activation scales, the zero subtracted (swz * sumx) or folded into the sums'
// starting values (zsum), several flush groups per call, column blocks wider than the call.
TEST_CASE("the super-group fold's levels (fold_levels) of every kernel set equal the portable loop",
          "[dequant_gemm][int8_kernel]") {
  // every level and code the fold takes (Q3_K: zero 4, offset 124, codes -32..31; Q2_K: zero 0,
  // offset 0, codes 0..15 and levels 0..3), against the portable loop and the arithmetic itself
  std::mt19937_64 rng(0xF01D);
  std::vector<const detail::dq_kernel_set*> sets{&detail::portable_dq_kernels()};
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (detail::avx512::cpu_supported_vnni()) sets.push_back(&detail::avx512::kernels_vnni());
#endif
  for (auto [zero, offset, clo, chi, lmax] :
       {std::array<int, 5>{4, 124, -32, 31, 7}, std::array<int, 5>{0, 0, 0, 15, 3}})
    for (const auto* ks : sets) {
      if (!ks->int8_super_fold) continue;
      const auto fold = ks->fold_levels ? ks->fold_levels : &detail::portable::fold_levels;
      for (int it = 0; it < 20; ++it) {
        const std::size_t steps = 1 + rng() % 8;
        std::vector<uint8_t> lv(steps * 256), out(steps * 256, 0xEE);
        int8_t cs[64];
        for (auto& v : lv) v = uint8_t(rng() % (lmax + 1));
        for (int r = 0; r < 64; ++r) cs[r] = int8_t(it == 0 ? (r % 2 ? clo : chi) : clo + int(rng() % (chi - clo + 1)));
        fold(lv.data(), steps, cs, zero, offset, out.data());
        std::size_t bad = 0;
        for (std::size_t j = 0; j < lv.size(); ++j) bad += out[j] != cs[j % 256 / 4] * (lv[j] - zero) + offset;
        INFO(ks->name << " zero " << zero << " steps " << steps);
        CHECK(bad == 0);
      }
    }
}

TEST_CASE("the super-group fold's integer minimums (mins) of every kernel set: exact sums, one fma a super-group",
          "[dequant_gemm][int8_kernel]") {
  // minimum codes over the whole int8 range (sign-extended to int16) and group sums at the int16
  // extremes a group of 255 int8 values reaches, every column count, 1-3 super-groups of 1-8
  // pairs; each set against the arithmetic itself (int64 sums, then the fma) bit for bit
  std::mt19937_64 rng(0x3135);
  std::vector<const detail::dq_kernel_set*> sets{&detail::portable_dq_kernels()};
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (detail::avx512::cpu_supported_vnni()) sets.push_back(&detail::avx512::kernels_vnni());
  if (detail::avx512::cpu_supported()) sets.push_back(&detail::avx512::kernels());
#endif
  std::normal_distribution<float> nd(0.f, 1.f);
  std::size_t runs = 0;
  for (const auto* ks : sets)
    for (int nc = 1; nc <= detail::mk_int8_cols; ++nc) {
      REQUIRE(ks->mins[nc - 1] != nullptr);
      for (int it = 0; it < 12; ++it) {
        const std::size_t pairs = 1 + rng() % 8, supers = 1 + rng() % 3, lds = std::size_t(nc) + rng() % 5;
        std::vector<uint32_t> M(supers * pairs * 64), S(supers * pairs * lds);
        std::vector<float> dmin(supers * 64), C(std::size_t(nc) * 64), want(C.size());
        const auto i16 = [&](int lo, int hi) { return uint32_t(uint16_t(int16_t(lo + int(rng() % uint64_t(hi - lo + 1))))); };
        for (auto& m : M) m = it == 0 ? (uint32_t(uint16_t(int16_t(-128))) | uint32_t(uint16_t(int16_t(127))) << 16)
                                      : i16(-128, 127) | i16(-128, 127) << 16;
        for (auto& x : S) x = it == 0 ? (uint32_t(uint16_t(int16_t(-32385))) | uint32_t(uint16_t(int16_t(32385))) << 16)
                                      : i16(-32385, 32385) | i16(-32385, 32385) << 16;
        for (auto& d : dmin) d = nd(rng) * 1e-3f;
        for (auto& c : C) c = nd(rng);
        want = C;
        for (std::size_t sg = 0; sg < supers; ++sg)
          for (int n = 0; n < nc; ++n)
            for (int r = 0; r < 64; ++r) {
              int64_t acc = 0;
              for (std::size_t q = 0; q < pairs; ++q) {
                const uint32_t m = M[(sg * pairs + q) * 64 + std::size_t(r)], x = S[(sg * pairs + q) * lds + std::size_t(n)];
                acc += int64_t(int16_t(m & 0xFFFF)) * int16_t(x & 0xFFFF) + int64_t(int16_t(m >> 16)) * int16_t(x >> 16);
              }
              REQUIRE(std::llabs(acc) < (int64_t(1) << 31));
              float& w = want[std::size_t(n) * 64 + std::size_t(r)];
              w = std::fma(float(acc), dmin[sg * 64 + std::size_t(r)], w);
            }
        ks->mins[nc - 1](detail::mk_mins_args{M.data(), dmin.data(), S.data(), lds, pairs, supers, C.data()});
        INFO(ks->name << " nc " << nc << " pairs " << pairs << " supers " << supers);
        CHECK(std::memcmp(C.data(), want.data(), C.size() * sizeof(float)) == 0);
        ++runs;
      }
    }
  CHECK(runs >= 12 * detail::mk_int8_cols);
}

TEST_CASE("AVX2 and AVX-512 int8 micro-kernels equal the portable one bit for bit", "[dequant_gemm][int8_kernel]") {
  std::vector<std::pair<const char*, const detail::dq_kernel_set*>> sets;
  if (detail::avx2::cpu_supported()) sets.push_back({"avx2", &detail::avx2::kernels()});
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (detail::avx512::cpu_supported_vnni()) sets.push_back({"avx512_vnni", &detail::avx512::kernels_vnni()});
#endif
  if (sets.empty()) return;
  std::mt19937_64 rng(0xA2A2);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::size_t folded = 0;
  auto run = [&]<int NC>() {
    for (int it = 0; it < 90; ++it) {
      // (every 15th: more steps a group than the AVX2 kernel's activation buffer holds)
      const std::size_t steps = it % 15 == 7 ? detail::avx2::int8_bcast_steps + 1 + rng() % 12 : 1 + rng() % 40;
      // (every 5th: up to 6 groups, so that a call's steps may exceed the buffer while a group's fit)
      const std::size_t groups = 1 + rng() % (it % 5 == 4 ? 6 : 3), cols = NC + rng() % 3, lda = 4 * cols;
      std::vector<uint8_t> W(256 * steps * groups);
      std::vector<int8_t> A(lda * steps * groups);
      const bool extreme = it % 3 == 0;
      // the levels' bound (mk_int8_args::level_max; below 128 the AVX2 set's vpmaddubsw kernel, its
      // int16 sums over int8_narrow_depth steps at their extremes)
      constexpr int bounds[] = {255, 1, 2, 3, 7, 15, 31, 63, 127};
      const int lmax = bounds[(it / 3) % 9];
      for (auto& v : W) v = extreme ? uint8_t(lmax - int(rng() % 2)) : uint8_t(rng() % (lmax + 1));
      for (auto& v : A) v = extreme ? int8_t(-128 + int(rng() % 2)) : int8_t(rng());
      std::vector<float> sw(64 * groups), swz(64 * groups), sumx(cols * groups), sa(cols * groups), c0(64 * NC);
      for (auto* v : {&sw, &swz, &sa, &c0})
        for (auto& e : *v) e = nd(rng);
      for (auto& e : sumx) e = 100.f * nd(rng);
      // folded: -z * sum(q) of each column and group, z up to 128 (IQ4_NL's, Q8_0's zero)
      const bool fold = it % 4 >= 2;
      std::vector<int32_t> zsum(cols * groups);
      for (std::size_t g = 0; g < groups; ++g)
        for (std::size_t n = 0; n < cols; ++n) {
          int32_t q = 0;
          for (std::size_t s = 0; s < steps; ++s)
            for (int i = 0; i < 4; ++i) q += A[(g * steps + s) * lda + 4 * n + i];
          zsum[g * cols + n] = -int32_t(extreme ? 128 : 1 + rng() % 128) * q;
        }
      folded += fold;
      const std::vector<float> start = c0;
      detail::mk_int8_args args{W.data(), A.data(), lda, steps, groups, c0.data(), sw.data(), swz.data(),
                                sumx.data(), it % 2 ? sa.data() : nullptr, cols, fold ? zsum.data() : nullptr};
      args.level_max = lmax;
      detail::portable::mk_int8<NC>(args);
      // the folded sums are the exact sum((level - z) q): against the subtracted form in double
      if (fold && !extreme)
        for (int n = 0; n < NC; ++n)
          for (int r = 0; r < 64; ++r) {
            double want = start[64 * n + r], mag = std::fabs(want);
            for (std::size_t g = 0; g < groups; ++g) {
              int64_t d = zsum[g * cols + n];
              for (std::size_t s = 0; s < steps; ++s)
                for (int i = 0; i < 4; ++i)
                  d += int64_t(W[(g * steps + s) * 256 + 4 * r + i]) * A[(g * steps + s) * lda + 4 * n + i];
              const double term = double(d) * (it % 2 ? sa[g * cols + n] : 1.f) * sw[64 * g + r];
              want += term;
              mag += std::fabs(term);
            }
            // float(d) is exact (|d| < 2^24); per group one rounding of the product with sa and one
            // of the fma, each within 2^-24 of a value at most the magnitudes summed so far
            REQUIRE(std::fabs(c0[64 * n + r] - want) <= std::ldexp(2.0 * double(groups), -24) * mag);
          }
      for (const auto& [name, ks] : sets) {
        std::vector<float> c1 = start;
        args.C = c1.data();
        ks->int8[NC - 1](args);
        INFO(name << " NC=" << NC << " steps=" << steps << " groups=" << groups << " extreme=" << extreme
                  << " folded=" << fold << " level_max=" << lmax);
        CHECK(std::memcmp(c0.data(), c1.data(), c0.size() * sizeof(float)) == 0);
      }
      args.C = c0.data();
    }
  };
  run.template operator()<1>();
  run.template operator()<2>();
  run.template operator()<3>();
  CHECK(folded > 60);
}

// The int8 kernel over row-major activations (mk_int8_rows_args): its portable specification
// equals portable::mk_int8 on the same values in the panel layout, and the AMX kernel (where the
// CPU and the OS have AMX-INT8) equals the specification bit for bit. Groups of 8 to 256 k
// (tile products of 8 to 64 k, 40 for an 80-k group), 1 to 16 columns (the rows past `cols`
// hold other values, whose sums must be discarded), the zero subtracted or folded, per-row and
// per-group activation scales, levels and activations at their extremes.
TEST_CASE("the int8 kernel over row-major activations equals mk_int8; AMX equals it bit for bit",
          "[dequant_gemm][int8_kernel][amx]") {
  std::mt19937_64 rng(0xA3A3);
  std::normal_distribution<float> nd(0.f, 1.f);
  const bool amx = [] {
#if defined(LUTKIT_HAVE_AVX512_DQ)
    return detail::avx512::cpu_supported_amx();
#else
    return false;
#endif
  }();
  const std::size_t steps_of[] = {4, 8, 16, 64, 12, 20, 2};
  std::size_t amx_cases = 0;
  for (int it = 0; it < 140; ++it) {
    const std::size_t steps = steps_of[it % 7], groups = 1 + rng() % 4, cols = 1 + rng() % 16;
    const std::size_t K = 4 * steps * groups, ldx = K + 64 * (it % 3);
    const bool extreme = it % 5 == 0, fold = it % 4 >= 2, per_group = it % 2 == 1;
    std::vector<uint8_t> W(256 * steps * groups);
    std::vector<int8_t> X(16 * ldx);  // all 16 rows the AMX tile reads
    for (auto& v : W) v = extreme ? uint8_t(255 - rng() % 2) : uint8_t(rng());
    for (auto& v : X) v = extreme ? int8_t(-128 + int(rng() % 2)) : int8_t(rng());
    std::vector<float> sw(64 * groups), swz(64 * groups), sumx(16 * groups), sa(16 * groups), c0(64 * 16);
    for (auto* v : {&sw, &swz, &sa, &c0})
      for (auto& e : *v) e = nd(rng);
    for (auto& e : sumx) e = 100.f * nd(rng);
    std::vector<int32_t> zsum(16 * groups);
    for (auto& e : zsum) e = -int32_t(rng() % 129) * int32_t(rng() % 4096);
    const std::vector<float> start = c0;
    detail::mk_int8_rows_args a{W.data(), X.data(), ldx, cols, steps, groups, c0.data(), sw.data(), swz.data(),
                                sumx.data(), per_group ? sa.data() : nullptr, 16, fold ? zsum.data() : nullptr};
    // the forms in planes (the super-group fold of Q4_K / Q5_K, two, and Q6_K, three): more sets of
    // levels after W, plane j's sums counting 8^j times
    const int planes = it % 7 == 5 || it % 9 == 4 ? 2 + it % 2 : 1;
    std::vector<uint8_t> Wp(W.size() * std::size_t(planes));
    std::copy(W.begin(), W.end(), Wp.begin());
    for (auto it2 = Wp.begin() + std::ptrdiff_t(W.size()); it2 != Wp.end(); ++it2)
      *it2 = extreme ? uint8_t(255 - rng() % 2) : uint8_t(rng());
    if (planes > 1) {
      a.W = Wp.data();
      a.planes = planes;
      a.plane_bytes = W.size();
      a.plane_shift = 3;
    }
    detail::portable::mk_int8_rows(a);
    INFO("steps=" << steps << " groups=" << groups << " cols=" << cols << " fold=" << fold << " extreme=" << extreme
                  << " planes=" << planes);
    if (planes > 1) {  // the specification's sums against a direct int64 sum of the planes
      std::vector<float> c3 = start;
      for (std::size_t g = 0; g < groups; ++g)
        for (std::size_t n = 0; n < cols; ++n)
          for (int r = 0; r < 64; ++r) {
            int64_t acc = fold ? zsum[g * 16 + n] : 0;
            for (std::size_t k = 4 * steps * g; k < 4 * steps * (g + 1); ++k) {
              const std::size_t i = (k / 4) * 256 + 4 * std::size_t(r) + k % 4;
              int64_t w = 0;
              for (int j = planes - 1; j >= 0; --j) w = 8 * w + int64_t(Wp[std::size_t(j) * W.size() + i]);
              acc += w * X[n * ldx + k];
            }
            float f = float(acc);
            if (per_group) f *= sa[g * 16 + n];
            float& c = c3[n * 64 + std::size_t(r)];
            c = std::fma(f, sw[g * 64 + std::size_t(r)], c);
            if (!fold) c = std::fma(-sumx[g * 16 + n], swz[g * 64 + std::size_t(r)], c);
          }
      CHECK(std::memcmp(c0.data(), c3.data(), c0.size() * sizeof(float)) == 0);
    }
    // the panel form: column blocks of up to 3, [step][column][4]
    std::vector<float> c1 = start;
    for (std::size_t n0 = 0; n0 < cols; n0 += 3) {
      const std::size_t nc = std::min<std::size_t>(3, cols - n0);
      std::vector<int8_t> panel(K * nc);
      for (std::size_t s = 0; s < K / 4; ++s)
        for (std::size_t n = 0; n < nc; ++n)
          for (int i = 0; i < 4; ++i) panel[s * 4 * nc + 4 * n + i] = X[(n0 + n) * ldx + 4 * s + i];
      detail::mk_int8_args p{W.data(), panel.data(), 4 * nc, steps, groups, c1.data() + 64 * n0, sw.data(), swz.data(),
                             sumx.data() + n0, per_group ? sa.data() + n0 : nullptr, 16,
                             fold ? zsum.data() + n0 : nullptr};
      (nc == 1 ? detail::portable::mk_int8<1> : nc == 2 ? detail::portable::mk_int8<2> : detail::portable::mk_int8<3>)(p);
    }
    if (planes == 1) CHECK(std::memcmp(c0.data(), c1.data(), c0.size() * sizeof(float)) == 0);
    if (!amx) continue;
#if defined(LUTKIT_HAVE_AVX512_DQ)
    std::vector<float> c2 = start;
    a.C = c2.data();
    detail::avx512::kernels_amx().int8_rows(a);
    CHECK(std::memcmp(c0.data(), c2.data(), c0.size() * sizeof(float)) == 0);
    ++amx_cases;
#endif
  }
  CHECK((amx ? amx_cases == 140 : amx_cases == 0));
}

// The AMX kernels leave their tiles configured between calls; the dequant-GEMM puts back each
// thread's own state when its share is done (dq_kernel_set::tiles_save / tiles_done): released on
// the calling thread and the pool's where none was loaded, and another library's configuration
// on the calling thread in place again, for the int8 and bf16 paradigms (the int8 outputs equal
// the AVX-512 set's). A kernel called after another configuration loads its own: the test above
// calls the int8 kernel directly with tile shapes changing from case to case and compares every
// output bit.
TEST_CASE("AMX: tiles configured between kernel calls, the thread's own state back after each GEMM",
          "[dequant_gemm][amx]") {
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (!detail::avx512::cpu_supported_amx()) return;
  using P = policy<fmt::uint_sym<4>, group<32>>;
  std::mt19937_64 rng(0x711E);
  const std::size_t M = 200, K = 512, N = 40;
  const auto w = random_weights(rng, M * K);
  const auto x = random_activations(rng, N * K, act_kind::gaussian);
  const auto wp = pack<P>(quantize<P>(w.data(), M, K));
  // (the tests above call the kernels directly and leave this thread's tiles configured; a thread
  // starts with its creator's tile state, so this comes before the pool)
  const detail::dq_tile_state none{};
  detail::avx512::kernels_amx().tiles_done(none);
  REQUIRE_FALSE(detail::amx::tiles_configured());
  thread_pool pool(2);
  std::atomic<int> configured{0};
  for (const act_type act : {act_type::int8, act_type::bf16, act_type::int8_group}) {
    INFO("act " << int(act));
    std::vector<float> y(N * M), y_ref(N * M);
    dequant_gemm<P>(wp, x.data(), N, K, y_ref.data(), act, 0, 0, nullptr, dq_backend::avx512);
    for (thread_pool* p : {static_cast<thread_pool*>(nullptr), &pool}) {
      dequant_gemm<P>(wp, x.data(), N, K, y.data(), act, 0, 0, p, dq_backend::avx512_amx);
      if (act != act_type::bf16) CHECK(std::memcmp(y.data(), y_ref.data(), y.size() * 4) == 0);
      CHECK_FALSE(detail::amx::tiles_configured());
      if (p) {
        configured = 0;
        p->run(2, [&](std::size_t) { configured += detail::amx::tiles_configured(); });
        CHECK(configured == 0);
      }
    }
  }
  // a configuration another library loaded on the calling thread (ggml loads its own once per
  // thread and runs its tile code on it from then on) is in place again after each GEMM
  detail::amx::tile_config other;
  for (int t = 0; t < 8; ++t) {
    other.rows[t] = uint8_t(4 + t);
    other.colsb[t] = uint16_t(32 + 4 * t);
  }
  for (const act_type act : {act_type::int8, act_type::bf16, act_type::int8_group})
    for (thread_pool* p : {static_cast<thread_pool*>(nullptr), &pool}) {
      INFO("act " << int(act) << (p ? ", pool" : ""));
      detail::amx::use_config(other);
      std::vector<float> y(N * M);
      dequant_gemm<P>(wp, x.data(), N, K, y.data(), act, 0, 0, p, dq_backend::avx512_amx);
      detail::dq_tile_state now;
      detail::amx::save_tiles(now);
      CHECK(std::memcmp(now.bytes, &other, sizeof now.bytes) == 0);
    }
  detail::avx512::kernels_amx().tiles_done(none);
  CHECK_FALSE(detail::amx::tiles_configured());
  // a direct kernel call leaves its configuration; tiles_done with the state saved before it
  // (none loaded) releases it
  alignas(64) uint8_t W[256 * 16] = {};
  alignas(64) int8_t X[16 * 64] = {};
  float C[64 * 16] = {}, sw[64] = {}, sumx[16] = {};
  detail::mk_int8_rows_args a{W, X, 64, 16, 16, 1, C, sw, sw, sumx, nullptr, 16};
  const auto& ks = detail::avx512::kernels_amx();
  detail::dq_tile_state before;
  ks.tiles_save(before);
  ks.int8_rows(a);
  CHECK(detail::amx::tiles_configured());
  ks.tiles_done(before);
  CHECK_FALSE(detail::amx::tiles_configured());
#endif
}

// The AMX bf16 kernel over row-major activations (mk_bf16_rows_args) against the double
// products of the same bf16 values: fp32 accumulation (the tile unit's order, not mk_val's), so
// within 2^-23 per pair of k of the magnitude; 1 to 16 columns and pair counts with and without a
// remainder of 16, C's columns past `cols` untouched.
TEST_CASE("the AMX bf16 kernel over row-major activations", "[dequant_gemm][val_kernel][amx]") {
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (!detail::avx512::cpu_supported_amx()) return;
  std::mt19937_64 rng(0xB16B);
  std::normal_distribution<float> nd(0.f, 1.f);
  const std::size_t steps_of[] = {16, 32, 512, 7, 40, 1, 100};
  for (int it = 0; it < 70; ++it) {
    const std::size_t steps = steps_of[it % 7], cols = 1 + rng() % 16, ldx = 2 * steps + 32 * (it % 3);
    std::vector<uint32_t> W(64 * steps);
    std::vector<uint16_t> X(16 * ldx, 0x7FC0);  // (NaN past the columns read)
    for (auto& v : W) v = uint32_t(f32_to_bf16(nd(rng))) | uint32_t(f32_to_bf16(nd(rng))) << 16;
    for (std::size_t n = 0; n < cols; ++n)
      for (std::size_t k = 0; k < 2 * steps; ++k) X[n * ldx + k] = f32_to_bf16(nd(rng));
    std::vector<float> C(64 * 16);
    for (auto& e : C) e = nd(rng);
    const std::vector<float> start = C;
    detail::avx512::kernels_amx().bf16_rows({W.data(), X.data(), ldx, cols, steps, C.data()});
    INFO("steps=" << steps << " cols=" << cols);
    double worst = 0.0;
    for (std::size_t n = 0; n < 16; ++n)
      for (int r = 0; r < 64; ++r) {
        if (n >= cols) {
          REQUIRE(std::memcmp(&C[n * 64 + r], &start[n * 64 + r], 4) == 0);
          continue;
        }
        double want = start[n * 64 + r], mag = std::fabs(want);
        for (std::size_t s = 0; s < steps; ++s)
          for (int i = 0; i < 2; ++i) {
            const double p = double(bf16_to_f32(uint16_t(W[s * 64 + r] >> (16 * i)))) *
                             double(bf16_to_f32(X[n * ldx + 2 * s + i]));
            want += p;
            mag += std::fabs(p);
          }
        worst = std::max(worst, std::fabs(C[n * 64 + r] - want) / (std::ldexp(double(steps + 2), -23) * mag));
      }
    CHECK(worst <= 1.0);
  }
#endif
}

// The AVX2 bf16 and fp32 micro-kernels against portable::mk_val, bit for bit, for every column
// count: random values (bf16 pairs and fp32 bits with normal magnitudes), values spanning 2^-30 ..
// 2^30 (cancellation and rounding differ with any other order), infinities and NaNs.
TEST_CASE("AVX2 bf16 and fp32 micro-kernels equal the portable ones bit for bit", "[dequant_gemm][val_kernel]") {
  if (!detail::avx2::cpu_supported()) return;
  std::mt19937_64 rng(0xB2F3);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto value = [&](int kind) {
    float v = nd(rng);
    if (kind == 1) v = std::ldexp(v, int(rng() % 61) - 30);
    if (kind == 2 && rng() % 50 == 0)
      v = rng() % 2 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
    return v;
  };
  auto word = [&](bool bf, int kind) {
    if (!bf) return std::bit_cast<uint32_t>(value(kind));
    return uint32_t(f32_to_bf16(value(kind))) | (uint32_t(f32_to_bf16(value(kind))) << 16);
  };
  auto run = [&]<bool BF, int NC>() {
    for (int it = 0; it < 30; ++it) {
      const int kind = it % 3;
      const std::size_t steps = 1 + rng() % 70, cols = NC + rng() % 3;
      std::vector<uint32_t> W(64 * steps), A(cols * steps);
      for (auto& v : W) v = word(BF, kind);
      for (auto& v : A) v = word(BF, kind);
      std::vector<float> c0(64 * NC);
      for (auto& e : c0) e = value(kind);
      std::vector<float> c1 = c0;
      detail::mk_val_args args{W.data(), A.data(), cols, steps, c0.data()};
      detail::portable::mk_val<BF, NC>(args);
      args.C = c1.data();
      (BF ? detail::avx2::kernels().bf16 : detail::avx2::kernels().f32)[NC - 1](args);
      INFO("bf16=" << BF << " NC=" << NC << " steps=" << steps << " kind=" << kind);
      bool same = true;
      for (std::size_t i = 0; i < c0.size(); ++i)
        same = same && (std::bit_cast<uint32_t>(c0[i]) == std::bit_cast<uint32_t>(c1[i]) ||
                        (std::isnan(c0[i]) && std::isnan(c1[i])));
      CHECK(same);
    }
  };
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (run.template operator()<true, I + 1>(), ...);
    (run.template operator()<false, I + 1>(), ...);
  }(std::make_integer_sequence<int, detail::mk_val_cols>{});
}

#endif

// portable::group_codes (level 2 of the 8-bit formats) is format_traits::value of each code, as
// the level-2 table would hold it (level2_value), in fp32 and bf16.
TEST_CASE("level 2 of 8-bit codes without a table equals the format's values", "[dequant][level2]") {
  using P = policy<fmt::uint_sym<8>, group<32>>;
  std::mt19937_64 rng(0x8C0D);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint8_t> codes(64 * 256);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = uint8_t(i % 256 == 0 ? rng() : i);
  float sc[64], zz[64];
  for (int r = 0; r < 64; ++r) {
    sc[r] = std::ldexp(nd(rng), int(rng() % 41) - 20);
    zz[r] = P::spec.sym_zero;
  }
  std::vector<float> f(64 * 256);
  std::vector<uint16_t> h(64 * 256);
  detail::portable::group_codes<float>(codes.data(), 256, nullptr, sc, zz, false, 256, f.data(), 256);
  detail::portable::group_codes<uint16_t>(codes.data(), 256, nullptr, sc, zz, false, 256, h.data(), 256);
  bool same = true;
  for (int r = 0; r < 64; ++r)
    for (int i = 0; i < 256; ++i) {
      const uint8_t c = codes[std::size_t(r) * 256 + std::size_t(i)];
      same = same &&
             std::bit_cast<uint32_t>(f[std::size_t(r) * 256 + std::size_t(i)]) ==
                 std::bit_cast<uint32_t>(detail::level2_value<P, float>(sc[r], zz[r], c)) &&
             h[std::size_t(r) * 256 + std::size_t(i)] == detail::level2_value<P, uint16_t>(sc[r], zz[r], c);
    }
  CHECK(same);
}

#if defined(LUTKIT_HAVE_AVX2_DQ)
// The AVX2 level 2 (group16_f32, group16_bf16, group_codes_f32 / _bf16, tile groups),
// rows_to_steps and FusedDQP dot against the portable kernels, bit for bit (NaN: any NaN): tables
// of 2 .. 16 entries with integer and float levels, 8-bit codes, both zero forms, scales and zeros
// from 2^-30 to 2^30 with infinities and NaNs, every length 1 .. 200 (the vector loops' tails),
// padded strides.
TEST_CASE("AVX2 level 2, tile groups, rows_to_steps and FusedDQP dot equal the portable ones bit for bit", "[dequant_gemm][level2]") {
  if (!detail::avx2::cpu_supported()) return;
  const detail::dq_kernel_set& ks = detail::avx2::kernels();
  std::mt19937_64 rng(0x12F2);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto value = [&](int kind) {
    float v = nd(rng);
    if (kind >= 1) v = std::ldexp(v, int(rng() % 61) - 30);
    if (kind == 2 && rng() % 40 == 0)
      v = rng() % 3 == 0 ? std::numeric_limits<float>::quiet_NaN()
                         : (rng() % 2 ? 1.f : -1.f) * std::numeric_limits<float>::infinity();
    return v;
  };
  auto same_f = [](float a, float b) {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
  };
  auto same_h = [](uint16_t a, uint16_t b) {
    return a == b || (std::isnan(bf16_to_f32(a)) && std::isnan(bf16_to_f32(b)));
  };
  using l2_f32 = decltype(detail::dq_kernel_set::group16_f32);
  using l2_bf16 = decltype(detail::dq_kernel_set::group16_bf16);
  for (int it = 0; it < 240; ++it) {
    const int kind = it % 3, E = 2 << (it % 4);
    const bool min_form = (it / 4) % 2 == 1, int_levels = (it / 8) % 2 == 0;
    const std::size_t len = 1 + rng() % 200, ldc = len + rng() % 70, ldo = len + rng() % 40;
    std::vector<uint8_t> codes(64 * ldc);
    for (auto& c : codes) c = uint8_t(rng() % unsigned(E));
    alignas(32) float lv[16] = {}, sc[64], zz[64];
    for (int c = 0; c < E; ++c) lv[c] = int_levels ? float(int(rng() % 256) - (min_form ? 0 : 128)) : nd(rng);
    for (int r = 0; r < 64; ++r) {
      sc[r] = value(kind);
      zz[r] = value(kind);
    }
    INFO("E=" << E << " min_form=" << min_form << " int_levels=" << int_levels << " kind=" << kind << " len=" << len);
    // one level-2 contract on both sets, fp32 and bf16: the fp32 values of the AVX2 kernel returned
    auto check_level2 = [&](const std::vector<uint8_t>& cv, const float* levels, l2_f32 gf, l2_f32 vf, l2_bf16 gh,
                            l2_bf16 vh) {
      std::vector<float> f0(64 * ldo, -1.f), f1 = f0;
      std::vector<uint16_t> h0(64 * ldo, 0x1234), h1 = h0;
      gf(cv.data(), ldc, levels, sc, zz, min_form, len, f0.data(), ldo);
      vf(cv.data(), ldc, levels, sc, zz, min_form, len, f1.data(), ldo);
      gh(cv.data(), ldc, levels, sc, zz, min_form, len, h0.data(), ldo);
      vh(cv.data(), ldc, levels, sc, zz, min_form, len, h1.data(), ldo);
      bool sf = true, sh = true;
      for (std::size_t i = 0; i < f0.size(); ++i) {
        sf = sf && same_f(f0[i], f1[i]);
        sh = sh && same_h(h0[i], h1[i]);
      }
      CHECK(sf);
      CHECK(sh);
      return f1;
    };
    const std::vector<float> f1 = check_level2(codes, lv, &detail::portable::group16<float>, ks.group16_f32,
                                               &detail::portable::group16<uint16_t>, ks.group16_bf16);
    // 8-bit codes (levels = codes): group_codes, the same lengths and strides
    std::vector<uint8_t> codes8(64 * ldc);
    for (auto& c : codes8) c = uint8_t(rng());
    check_level2(codes8, nullptr, &detail::portable::group_codes<float>, ks.group_codes_f32,
                 &detail::portable::group_codes<uint16_t>, ks.group_codes_bf16);
    // rows_to_steps of the fp32 values written above (stride ldo)
    std::vector<uint32_t> s0(64 * len, 7u), s1 = s0;
    detail::portable::rows_to_steps(reinterpret_cast<const uint32_t*>(f1.data()), ldo, len, s0.data());
    ks.rows_to_steps(reinterpret_cast<const uint32_t*>(f1.data()), ldo, len, s1.data());
    CHECK(s0 == s1);
    // tile groups: 1 .. 24 groups of 2 .. 8-bit codes at every shift that fits in the byte
    {
      const int bits = 2 + int(rng() % 7);
      const std::size_t n = 1 + rng() % 24;
      std::vector<std::array<uint8_t, 32>> cb(n);
      std::vector<const uint8_t*> cp(n);
      std::vector<int> shift(n);
      std::vector<float> ts(n), tz(n);
      for (std::size_t i = 0; i < n; ++i) {
        for (auto& b : cb[i]) b = uint8_t(rng());
        cp[i] = cb[i].data();
        shift[i] = int(rng() % unsigned(9 - bits));
        ts[i] = value(kind);
        tz[i] = kind == 0 ? float(rng() % (1u << bits)) : value(kind);
      }
      const std::size_t outn = 128 * ((n + 3) / 4);
      std::vector<uint16_t> tb0(outn, 0x1234), tb1 = tb0;
      std::vector<float> tf0(outn, -2.f), tf1 = tf0;
      detail::tg_groups_args ta{cp.data(), shift.data(), ts.data(), tz.data(), n, bits, tb0.data()};
      detail::portable::tg_groups_bf16(ta);
      detail::portable::tg_groups_f32(ta, tf0.data());
      ta.out = tb1.data();
      ks.tg_groups_bf16(ta);
      ks.tg_groups_f32(ta, tf1.data());
      bool tsame = true;
      for (std::size_t i = 0; i < outn; ++i) tsame = tsame && same_h(tb0[i], tb1[i]) && same_f(tf0[i], tf1[i]);
      INFO("tile groups: bits=" << bits << " n=" << n);
      CHECK(tsame);
    }
    // FusedDQP dot: rows 1 .. 9 (the 4-row blocks and the tail), 1 .. 4 activation rows
    const std::size_t rows = 1 + rng() % 9, N = 1 + rng() % 4, flen = 16 * (1 + rng() % 20);
    const std::size_t ldw = flen + 16 * (rng() % 2), ldx = flen + 16 * (rng() % 2);
    std::vector<float> W(rows * ldw), x(N * ldx), p0(rows * N * 16);
    for (auto* v : {&W, &x, &p0})
      for (auto& e : *v) e = value(kind);
    std::vector<float> p1 = p0;
    detail::portable::fdq_dot({W.data(), ldw, rows, flen, x.data(), ldx, N, p0.data()});
    ks.fdq({W.data(), ldw, rows, flen, x.data(), ldx, N, p1.data()});
    bool sd = true;
    for (std::size_t i = 0; i < p0.size(); ++i) sd = sd && same_f(p0[i], p1[i]);
    INFO("rows=" << rows << " N=" << N << " flen=" << flen);
    CHECK(sd);
  }
}
#endif

// bf16 level 2 with the AVX-512 kernel set reads level 1's step-major codes and writes the
// micro-kernel's layout directly; the row-major route (group16_bf16, then rows_to_steps) must give
// the same bits, for every format with 2, 4, 8 or 16 codes, every tile and chunk, including
// partial tiles, several groups per chunk and whole-K groups.
TEST_CASE("bf16 level 2 into the step-major layout (tables, and computed values past 16 codes) equals the row-major route", "[dequant_gemm][level2]") {
  if (!detail::avx512::cpu_supported()) return;
  std::size_t chunks = 0;
  for_dq_policies<0, dq_policy_count>([&]<class P>() {
    constexpr int E = detail::code_count<P>();
    if constexpr (!P::spec.ternary &&
                  (E == 2 || E == 4 || E == 8 || E == 16 || (E > 16 && detail::levels_are_codes<P>()))) {
      std::mt19937_64 rng(P::hash() ^ 0xB16);
      for (int c = 0; c < 3; ++c) {
        const std::size_t M = std::uniform_int_distribution<std::size_t>(1, 150)(rng);
        const std::size_t K = random_k<P>(rng, 1300);
        const auto w = random_weights(rng, M * K);
        const auto wp = pack<P>(quantize<P>(w.data(), M, K));
        const packed_layout& L = wp.layout();
        const detail::dq_kernel_set& ks = detail::avx512::kernels();
        const detail::lut_weight_source<P> src{wp.data(), &L, &ks};
        const detail::dq_geometry g = detail::make_dq_geometry<P>(L, 8, act_type::bf16);
        detail::dq_scratch direct, rows;
        direct.init(g);
        rows.init(g);
        for (std::size_t t = 0; t < L.tiles; ++t)
          for (std::size_t k0 = 0; k0 < L.K_pad; k0 += g.kc) {
            const std::size_t k1 = std::min(L.K_pad, k0 + g.kc);
            const uint32_t* a = src.template value_steps<uint16_t>(t, k0, k1, direct);
            std::size_t ld = 0;
            const uint16_t* v = src.template values<uint16_t>(t, k0, k1, rows, ld);
            const uint32_t* b = detail::values_to_steps(v, ld, k1 - k0, rows, ks);
            INFO(P::name() << " M=" << M << " K=" << K << " tile " << t << " k0=" << k0);
            REQUIRE(a != b);
            CHECK(std::memcmp(a, b, (k1 - k0) / 2 * 64 * 4) == 0);
            ++chunks;
          }
      }
    }
  });
  CHECK(chunks > 100);
}

// prepare_activations runs prepare_rows compiled for the baseline or, with the AVX-512 kernel
// set, inside an AVX-512 function: both must write the same bytes (panel, scales, sums, NaN
// flags) for every paradigm, including rounding ties, non-finite rows and strided input.
TEST_CASE("AVX-512 activation preparation writes the baseline's bytes", "[dequant_gemm][prepare]") {
  if (!detail::avx512::cpu_supported()) return;
  std::mt19937_64 rng(0x5EED);
  const act_kind kinds[] = {act_kind::gaussian, act_kind::zeros, act_kind::extremes, act_kind::sparse,
                            act_kind::with_nan, act_kind::with_inf};
  std::size_t cases = 0;
  for (int c = 0; c < scaled_cases(24); ++c) {
    const std::size_t N = std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    const std::size_t K = 64 * std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    const std::size_t ldx = K + (c % 3 == 0 ? 7 : 0);
    auto x = random_activations(rng, N * ldx, kinds[c % 6]);
    if (c % 4 == 1)  // exact ties: every group's |x|max is 127, so s = 1 and x / s = x
      for (std::size_t n = 0; n < N; ++n)
        for (std::size_t k = 0; k < K; ++k)
          x[n * ldx + k] = k % 64 == 0 ? 127.f : float(int(k % 37) - 18) + 0.5f;
    for (act_type act : {act_type::int8, act_type::int8_group, act_type::bf16, act_type::fp32}) {
      detail::dq_activations A[2];
      for (int simd = 0; simd < 2; ++simd) {
        A[simd].act = act;
        A[simd].geo = detail::make_dq_geometry_k(K, K, 64, N, act);
        // the zero fold's starting sums too (on every other case: Q6_K's zero, then none)
        A[simd].fold_zero = (act == act_type::int8 || act == act_type::int8_group) && c % 2 == 0;
        A[simd].zero = 32;
        detail::prepare_activations(A[simd], x.data(), ldx, nullptr,
                                      simd == 1 ? detail::avx512::kernels() : detail::portable_dq_kernels());
      }
      const detail::dq_geometry& g = A[0].geo;
      // bitwise (NaN == NaN). A[0]'s arrays are the thread's reusable buffers, holding the last
      // case's values; A[1]'s, allocated while A[0] holds them, are its own
      auto same = [](const auto& a, const auto& b) {
        return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
      };
      INFO("case " << c << " act " << act_name(act) << " N=" << N << " K=" << K << " ldx=" << ldx);
      // the columns the micro-kernels read (the blocks past them are never read, nor cleared)
      bool panel_same = true;
      for (std::size_t s0 = 0; s0 < g.psteps; s0 += g.kcs)
        for (std::size_t n = 0; n < g.read_cols(); ++n)
          for (std::size_t st = s0; st < std::min(g.psteps, s0 + g.kcs); ++st) {
            const std::size_t e = (g.panel_index(n, s0) + (st - s0) * g.cb) * 4;
            panel_same = panel_same && std::memcmp(A[0].data.get() + e, A[1].data.get() + e, 4) == 0;
          }
      CHECK(g.read_cols() >= N);
      CHECK(panel_same);
      CHECK(same(A[0].row_scale, A[1].row_scale));
      CHECK(same(A[0].sumx, A[1].sumx));
      CHECK(same(A[0].sa, A[1].sa));
      CHECK(same(A[0].zsum, A[1].zsum));
      CHECK(A[0].zsum.size() == (A[0].fold_zero ? A[0].sumx.size() : 0));
      // the starting sums: -zero x the group's int8 sum (sumx: that sum, scaled for int8_group)
      if (A[0].fold_zero && act == act_type::int8)
        for (std::size_t i = 0; i < A[0].zsum.size(); ++i) REQUIRE(float(A[0].zsum[i]) == -32.f * A[0].sumx[i]);
      CHECK(same(A[0].nan_mul, A[1].nan_mul));
      ++cases;
    }
  }
  CHECK(cases == 4 * std::size_t(scaled_cases(24)));
}
#endif

TEST_CASE("dequant_gemm with N in the thousands (several column passes)", "[dequant_gemm][large_n]") {
  using P = policy<fmt::uint_asym<4>, group<64>, table::lut4<int8_t, false>>;
  std::mt19937_64 rng(77);
  const std::size_t M = 70, K = 192, N = 1601;
  const auto w = random_weights(rng, M * K);
  const auto x = random_activations(rng, N * K, act_kind::gaussian);
  const auto q = quantize<P>(w.data(), M, K);
  const auto wp = pack<P>(q);
  thread_pool pool(2);
  for (const auto act : {act_type::int8, act_type::bf16}) {
    const auto geo = detail::make_dq_geometry<P>(wp.layout(), N, act);
    REQUIRE(geo.n_block() < geo.NP);
    const auto e = dq_reference<P>(q, x, N, act, geo.flush_k, geo.flushes());
    for (const auto be : dq_backends()) {
      std::vector<float> y(N * M, -1.f);
      dequant_gemm<P>(wp, x.data(), N, K, y.data(), act, 0, 0, &pool, be);
      INFO(act_name(act) << " backend " << detail::dq_kernels_for(be).name);
      CHECK(dq_compare<P>(e, y.data(), M, N, M) == "");
    }
  }
}

TEST_CASE("the GEMM's work queue hands out every (pass, tile) item exactly once", "[dequant_gemm][queue]") {
  // tiles [3, 11), 4 column passes, claimed by 4 threads at once
  detail::dq_work_queue q(3, 11, 4);
  REQUIRE(q.size() == 32);
  std::vector<std::atomic<int>> seen(32);
  std::atomic<int> outside{0};  // (Catch's assertions are not thread-safe: count, check after)
  std::vector<std::thread> th;
  for (int i = 0; i < 4; ++i)
    th.emplace_back([&] {
      while (const auto it = q.claim()) {
        if (it->t < 3 || it->t >= 11 || it->pass >= 4)
          outside.fetch_add(1);
        else
          seen[it->pass * 8 + (it->t - 3)].fetch_add(1);
      }
    });
  for (auto& t : th) t.join();
  CHECK(outside.load() == 0);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    INFO("item " << i);
    CHECK(seen[i].load() == 1);
  }
  CHECK_FALSE(q.claim().has_value());
  // pass-major order: the first items are pass 0's tiles in order
  detail::dq_work_queue r(0, 2, 2);
  const auto a = r.claim(), b = r.claim(), c = r.claim();
  CHECK((a->t == 0 && a->pass == 0 && b->t == 1 && b->pass == 0 && c->t == 0 && c->pass == 1));
}

TEST_CASE("the one-pass work queue deals contiguous ranges, steals from the fullest, hands out every tile once",
          "[dequant_gemm][queue]") {
  // a thread's own range from its front, in order
  {
    detail::dq_work_queue q(5, 15, 1, 3);  // ranges [5, 8), [8, 11), [11, 15)
    CHECK(q.claim(1)->t == 8);
    CHECK(q.claim(1)->t == 9);
    CHECK(q.claim(0)->t == 5);
    CHECK(q.claim(2)->t == 11);
    CHECK(q.claim(1)->t == 10);
    // range 1 is empty: the last tile of the fullest (range 2: 12, 13, 14 left)
    const auto s = q.claim(1);
    CHECK((s->t == 14 && s->pass == 0));
    CHECK(q.claim(2)->t == 12);
  }
  // several passes: the shared counter, pass-major, whatever the parts
  {
    detail::dq_work_queue q(0, 2, 2, 2);
    const auto a = q.claim(1), b = q.claim(0), c = q.claim(1);
    CHECK((a->t == 0 && a->pass == 0 && b->t == 1 && b->pass == 0 && c->t == 0 && c->pass == 1));
  }
  // threads at once, seeded sizes: every tile exactly once
  std::mt19937_64 rng(77);
  for (int c = 0; c < 40; ++c) {
    const std::size_t t0 = rng() % 5, tiles = 1 + rng() % 200, parts = 1 + rng() % std::min<std::size_t>(tiles, 6);
    detail::dq_work_queue q(t0, t0 + tiles, 1, parts);
    std::vector<std::atomic<int>> seen(tiles);
    std::atomic<int> outside{0};
    std::vector<std::thread> th;
    for (std::size_t i = 0; i < parts; ++i)
      th.emplace_back([&, i] {
        while (const auto it = q.claim(i)) {
          if (it->t < t0 || it->t >= t0 + tiles || it->pass != 0)
            outside.fetch_add(1);
          else
            seen[it->t - t0].fetch_add(1);
          if (i == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));  // (slow: the others steal)
        }
      });
    for (auto& t : th) t.join();
    INFO("case " << c << " tiles " << tiles << " parts " << parts);
    CHECK(outside.load() == 0);
    int once = 0;
    for (auto& v : seen) once += v.load() == 1;
    CHECK(once == int(tiles));
    CHECK_FALSE(q.claim(0).has_value());
  }
}
