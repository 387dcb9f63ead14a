// target::sme, at the SVL qemu gives (ctest runs this suite at SVL 512 and 128), on the blobs the host
// packs for target::sme (sve order):
//   - the dequant-GEMM's SME kernels (FMOPA / BFMOPA into ZA, TBL level 2) against the double
//     reference: every bit width, ternary, codebooks, 8 bits and Q4NX; ragged M and K; N up to 512;
//     fp32 and bf16 activations;
//   - the LUT-GEMV's SME kernels (streaming-SVE table build, TBL lookups) against the double
//     reference and, to the bit, against the host's Highway kernels on the same weights: every
//     policy of tests/policy_list.hpp, ragged M and K, N = 1..16, row ranges, the thread pool.
#include "randomized_dequant_gemm.hpp"

#include <arm_sme.h>

using namespace lutkit;
using namespace lutkit_test;

namespace {
template <class P>
using on_sme = policy<typename P::format, typename P::group_shape, typename P::table_layout, target::sme>;
// the same format and group on the host (int16 tables: outside the suites' extern instance list, so
// this suite compiles its own host instances; the table layout does not change dequantized values)
template <class P>
using on_host = policy<typename P::format, typename P::group_shape, i16, target::host>;

using sme_policies = std::tuple<
    on_sme<policy<fmt::uint_asym<1>, group<32>, i8>>, on_sme<policy<fmt::uint_asym<2>, group<64>, i8>>,
    on_sme<policy<fmt::uint_asym<3>, group<64>, i8m>>, on_sme<policy<fmt::uint_sym<4>, group<32>, i8>>,
    on_sme<policy<fmt::ternary, per_channel, i8>>, on_sme<policy<fmt::uint_sym<8>, group<32>, i8>>,
    on_sme<policy<fmt::codebook4<book::nf4>, group<64>, i8>>, on_sme<policy<fmt::codebook4<book::iq4_nl>, group<32>, i8>>,
    on_sme<policy<fmt::q4nx, group<32>, i8>>>;

__attribute__((target("sme"))) int svl_bits() { return int(svcntsb()) * 8; }

template <class P>
void sme_policy_cases(int& cases_fp32, int& cases_bf16) {
  // 12 weight sets per policy, each multiplied by fp32 and by bf16 activations: 216 GEMMs, >= 100
  // per kernel over the 9 policies. (Under qemu the random weights and their quantization, not the
  // GEMMs, took most of this case's time when each GEMM had its own weights.)
  const int sets = 12;
  for (int c = 0; c < sets; ++c) {
    const uint64_t seed = P::hash() % 100003 * 1009 + uint64_t(c);
    std::mt19937_64 rng(seed);
    const std::size_t M = std::uniform_int_distribution<std::size_t>(1, c % 4 == 0 ? 200 : 100)(rng);
    const std::size_t K = random_k<P>(rng, c % 5 == 0 ? 700 : 300);
    const auto w = random_weights(rng, M * K);
    const auto q = quantize<P>(w.data(), M, K);
    const auto wp = pack<P>(q);
    for (const act_type act : {act_type::fp32, act_type::bf16}) {
      const int ca = 2 * c + (act == act_type::bf16);  // the GEMM's index within the policy
      // (two GEMMs a policy with N past 256: several column passes; the rest the small N of decode
      // and short prompts)
      const std::size_t N = ca % 12 == 11 ? std::uniform_int_distribution<std::size_t>(257, 384)(rng)
                                          : std::uniform_int_distribution<std::size_t>(1, 40)(rng);
      const auto x = random_activations(rng, N * K, ca % 7 == 3 ? act_kind::extremes : act_kind::gaussian);
      const auto geo = detail::make_dq_geometry<P>(wp.layout(), N, act);
      const auto e = dq_reference<P>(q, x, N, act, geo.flush_k, geo.flushes());
      INFO("policy " << P::name() << " SVL " << svl_bits() << " seed " << seed << " M=" << M << " K=" << K << " N=" << N
                     << " act " << act_name(act));
      const std::size_t ldy = M + (ca % 3);
      std::vector<float> y(N * ldy, -12345.f);
      dequant_gemm<P>(wp, x.data(), N, K, y.data(), act, 0, ldy);
      CHECK(dq_compare<P>(e, y.data(), ldy, N, M) == "");
      (act == act_type::bf16 ? cases_bf16 : cases_fp32)++;
    }
    // level 2 alone: dequantize (fp32 and bf16) is bit-identical to the host's portable code
    if (c % 3 == 0) {
      using H = on_host<P>;
      const auto wh = pack<H>(quantized<H>{q.M, q.K, q.groups, q.codes, q.scales, q.zeros});
      std::vector<float> ds(M * K), dh(M * K);
      dequantize<P>(wp, ds.data(), dq_type::f32);
      dequantize<H>(wh, dh.data(), dq_type::f32, 0, nullptr, dq_backend::portable);
      CHECK(std::memcmp(ds.data(), dh.data(), ds.size() * 4) == 0);
      std::vector<uint16_t> bs(M * K), bh(M * K);
      dequantize<P>(wp, bs.data(), dq_type::bf16);
      dequantize<H>(wh, bh.data(), dq_type::bf16, 0, nullptr, dq_backend::portable);
      CHECK(bs == bh);
    }
  }
}
}  // namespace

TEST_CASE("SME dequant-GEMM: FMOPA / BFMOPA against the double reference", "[sme]") {
  REQUIRE(detail::sme::cpu_supported());
  int fp32 = 0, bf16 = 0;
  for_each_policy_in<sme_policies>([&]<class P>() { sme_policy_cases<P>(fp32, bf16); });
  std::printf("SME at SVL %d: %d fp32 and %d bf16 random dequant-GEMM cases\n", svl_bits(), fp32, bf16);
  CHECK(fp32 + bf16 > 0);
}

namespace {
// The host's Highway kernels for the same format, group and table layout (called through the
// dispatch tables: the public entry points of the list's host policies are compiled in the other suite)
template <class H>
lut_tables<H> host_tables(const std::vector<float>& x, std::size_t N, std::size_t K) {
  lut_tables<H> t(N, K);
  const auto fn = hwy_backend::best_tables_entry<H>();
  for (std::size_t n = 0; n < N; ++n) fn(x.data() + n * K, K, t.entries(n), t.tscale(n), t.xsum(n), t.layout().blocks());
  return t;
}

bool same_floats(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

template <class P>
void sme_gemv_cases(int& cases) {
  using H = policy<typename P::format, typename P::group_shape, typename P::table_layout, target::host>;
  static thread_pool pool(2);
  for (int c = 0; c < 6; ++c) {  // 6 per policy x 18 policies: >= 100 per SVL
    const uint64_t seed = P::hash() % 100003 * 1013 + uint64_t(c);
    std::mt19937_64 rng(seed);
    const std::size_t M = std::uniform_int_distribution<std::size_t>(1, c % 3 == 0 ? 300 : 130)(rng);
    const std::size_t K = random_k<P>(rng, 640);
    const std::size_t N = std::uniform_int_distribution<std::size_t>(1, 16)(rng);
    const auto w = random_weights(rng, M * K);
    const auto x = random_activations(rng, N * K, c == 4 ? act_kind::extremes : (c == 5 ? act_kind::with_nan : act_kind::gaussian));
    const auto q = quantize<P>(w.data(), M, K);
    const auto wp = pack<P>(q);
    INFO("policy " << P::name() << " SVL " << svl_bits() << " seed " << seed << " M=" << M << " K=" << K << " N=" << N);
    const auto t = build_tables<P>(x.data(), N, K);
    std::vector<float> y(N * M, -12345.f);
    lut_gemv<P>(wp, t, y.data());
    CHECK(compare_to_ref<P>(q, t, x, ref::gemv<P>(q, x.data(), N), y.data(), M, 0, M) == "");
    // the host's kernels on the host's blob of the same codes: the same tables, the same outputs
    const auto qh = quantized<H>{q.M, q.K, q.groups, q.codes, q.scales, q.zeros};
    const auto wh = pack<H>(qh);
    const auto th = host_tables<H>(x, N, K);
    const std::size_t tb = t.layout().steps() * P::spec.table_bytes_per_step();
    bool same_tables = true;
    for (std::size_t n = 0; n < N; ++n)
      same_tables = same_tables && std::memcmp(t.entries(n), th.entries(n), tb) == 0 &&
                    same_floats(t.tscale(n), th.tscale(n), t.layout().blocks()) &&
                    same_floats(t.xsum(n), th.xsum(n), t.layout().blocks());
    CHECK(same_tables);
    std::vector<float> yh(N * M, -1.f);
    const auto ah = detail::make_gemv_args(wh, th, yh.data(), M, 0, M);
    hwy_backend::best_entry<H>()(ah);
    CHECK(same_floats(y.data(), yh.data(), y.size()));
    // rows [r0, r1) with a padded stride (other rows untouched), and over the pool: the same bits
    const std::size_t r0 = std::uniform_int_distribution<std::size_t>(0, M)(rng);
    const std::size_t r1 = std::uniform_int_distribution<std::size_t>(r0, M)(rng);
    const std::size_t ldy = M + 5;
    std::vector<float> yp(N * ldy, 777.f);
    lut_gemv_rows<P>(wp, t, yp.data(), r0, r1, ldy);
    bool rows_ok = true;
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t m = 0; m < ldy; ++m)
        rows_ok = rows_ok && (m >= r0 && m < r1 ? same_floats(&yp[n * ldy + m], &y[n * M + m], 1) : yp[n * ldy + m] == 777.f);
    INFO("rows [" << r0 << ", " << r1 << ")");
    CHECK(rows_ok);
    std::vector<float> yt(N * M, -1.f);
    lut_gemv<P>(wp, t, yt.data(), 0, &pool);
    CHECK(same_floats(y.data(), yt.data(), y.size()));
    if (c == 0) {  // decode_gemv's best method on SME is this LUT-GEMV
      std::vector<float> yd(N * M, -1.f);
      decode_gemv<P>(wp, x.data(), N, K, yd.data());
      CHECK(same_floats(y.data(), yd.data(), y.size()));
    }
    ++cases;
  }
}
}  // namespace

TEST_CASE("SME LUT-GEMV: streaming-SVE tables and TBL lookups against the double reference and the host", "[sme]") {
  REQUIRE(detail::sme_gemv::cpu_supported());
  int cases = 0;
  for_each_policy_in<retargeted<policy_list, target::sme>>([&]<class P>() { sme_gemv_cases<P>(cases); });
  std::printf("SME at SVL %d: %d random LUT-GEMV cases\n", svl_bits(), cases);
  CHECK(cases >= 100);
}

TEST_CASE("SME policies refuse what the SME kernels do not provide, by name", "[sme]") {
  using P = on_sme<policy<fmt::uint_asym<2>, group<64>, i8>>;
  std::mt19937_64 rng(3);
  const auto w = random_weights(rng, 64 * 128);
  const auto x = random_activations(rng, 128, act_kind::gaussian);
  const auto wp = pack<P>(quantize<P>(w.data(), 64, 128));
  std::vector<float> y(64);
  CHECK_THROWS_WITH(dequant_gemm<P>(wp, x.data(), 1, 128, y.data(), act_type::int8), Catch::Contains("sme kernels have no int8"));
  CHECK_THROWS_WITH(fused_dq_gemv<P>(wp, x.data(), 1, 128, y.data()), Catch::Contains("sme kernels have no FusedDQP"));
  CHECK_THROWS_WITH(lut_gemv<P>(wp, build_tables<P>(x.data(), 1, 128), y.data(), 0, nullptr, 1),
                    Catch::Contains("a host target cannot be named"));
  CHECK_THROWS_WITH(dequant_gemm<P>(wp, x.data(), 1, 128, y.data(), act_type::fp32, 0, 0, nullptr, dq_backend::portable),
                    Catch::Contains("a host backend cannot be named"));
}
