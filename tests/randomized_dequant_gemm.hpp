// Differential fuzz of the prefill dequant-GEMM (every paradigm, every compiled kernel set)
// against the double reference, instantiated by test_dequant_gemm_{a,b}.cpp over slices of the
// dequant policy list.
#pragma once
#include <lutkit/gemm/dequant_gemm.hpp>
#include <lutkit/decode/fused_dq.hpp>

#include "common.hpp"
#include "policy_list.hpp"

namespace lutkit_test {

inline std::vector<lutkit::dq_backend> dq_backends() {
  std::vector<lutkit::dq_backend> b{lutkit::dq_backend::portable};
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (lutkit::detail::avx512::cpu_supported()) b.push_back(lutkit::dq_backend::avx512);
  if (lutkit::detail::avx512::cpu_supported_vnni()) b.push_back(lutkit::dq_backend::avx512_vnni);
  if (lutkit::detail::avx512::cpu_supported_amx()) b.push_back(lutkit::dq_backend::avx512_amx);
#endif
#if defined(LUTKIT_HAVE_AVX2_DQ)
  if (lutkit::detail::avx2::cpu_supported()) b.push_back(lutkit::dq_backend::avx2);
#endif
  return b;
}

// The effective operands of a paradigm, as the kernel is specified to see them:
//   weights  fp32: value(s, z, c); bf16: bf16(value); int8: value (scale/zero applied exactly
//            per group in the integer domain)
//   acts     fp32: x; bf16: bf16(x); int8: q * sa (quantize_act_int8, per row or per group)
// The bound: fp32 accumulation of K products plus a few roundings per scale group, against the
// magnitude sum_k |s| (|level| + |zero|) |x_k| (which dominates every partial sum the kernels form).
template <class P>
struct dq_expect {
  std::vector<double> y, bound;
  std::vector<bool> nan_row;
};

template <class P>
dq_expect<P> dq_reference(const lutkit::quantized<P>& q, const std::vector<float>& x, std::size_t N,
                          lutkit::act_type act, std::size_t flush_k, std::size_t flushes, bool split = false) {
  using namespace lutkit;
  using FT = format_traits<typename P::format>;
  const std::size_t M = q.M, K = q.K, G = q.group_k();
  std::vector<double> xe(N * K);
  dq_expect<P> e;
  e.nan_row.assign(N, false);
  for (std::size_t n = 0; n < N; ++n) {
    const float* xn = x.data() + n * K;
    if (act == act_type::int8 || act == act_type::int8_group) {
      std::vector<int8_t> qa(K);
      std::vector<float> sc(K / flush_k + 2);
      const bool fin = detail::quantize_act_int8(xn, K, act == act_type::int8_group ? flush_k : 0, qa.data(), sc.data());
      e.nan_row[n] = !fin;
      for (std::size_t k = 0; k < K; ++k)
        xe[n * K + k] = double(qa[k]) * double(sc[act == act_type::int8_group ? k / flush_k : 0]);
    } else {
      for (std::size_t k = 0; k < K; ++k) {
        xe[n * K + k] = act == act_type::bf16 ? double(round_to_bf16(xn[k])) : double(xn[k]);
        if (!std::isfinite(xn[k])) e.nan_row[n] = true;
      }
    }
  }
  e.y.assign(N * M, 0.0);
  e.bound.assign(N * M, 0.0);
  const double u = 0x1p-24;
  const double terms = double(K) + 4.0 * double(flushes) + 16.0;
  for (std::size_t m = 0; m < M; ++m) {
    std::vector<double> wv(K), wmag(K);
    for (std::size_t k = 0; k < K; ++k) {
      const std::size_t g = k / G;
      const float s = q.scale(m, g), z = q.zero(m, g);
      const int c = q.codes[m * K + k];
      const float v = FT::value(s, z, c);
      wv[k] = act == act_type::bf16 ? double(round_to_bf16(v)) : double(v);
      if constexpr (detail::split_levels<P>()) {
        if (split) {  // split levels (int8 decode of float codebooks): s * (Q - 2^13) * 2^-13, Q <= 2^14
          const double Q = double(detail::split_level_q<P>(c)), one = double(1 << detail::split_level_bits);
          wv[k] = double(s) * (Q - one) / one;
          wmag[k] = std::fabs(double(s)) * (Q / one + 1.0) + std::fabs(wv[k]);
          continue;
        }
      }
      // min form (z is the group minimum): the kernels form s * level and m separately
      wmag[k] = P::spec.min_form ? std::fabs(double(s)) * std::fabs(double(FT::level(c))) + std::fabs(double(z)) + std::fabs(wv[k])
                                 : std::fabs(double(s)) * (std::fabs(double(FT::level(c))) + std::fabs(double(z))) + std::fabs(wv[k]);
    }
    for (std::size_t n = 0; n < N; ++n) {
      double acc = 0, mag = 0;
      for (std::size_t k = 0; k < K; ++k) {
        acc += wv[k] * xe[n * K + k];
        mag += wmag[k] * std::fabs(xe[n * K + k]);
      }
      e.y[n * M + m] = acc;
      e.bound[n * M + m] = terms * u * mag + 1e-30 * double(K);
    }
  }
  return e;
}

template <class P>
std::string dq_compare(const dq_expect<P>& e, const float* y, std::size_t ldy, std::size_t N, std::size_t M) {
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t m = 0; m < M; ++m) {
      const float got = y[n * ldy + m];
      const double want = e.y[n * M + m];
      std::ostringstream os;
      if (e.nan_row[n] || !std::isfinite(want)) {
        if (std::isfinite(got)) {
          os << "n=" << n << " m=" << m << ": expected a non-finite result (non-finite input), got " << got;
          return os.str();
        }
        continue;
      }
      const double err = std::fabs(double(got) - want);
      if (!(err <= e.bound[n * M + m])) {
        os << "n=" << n << " m=" << m << " got " << got << " ref " << want << " err " << err << " > bound "
           << e.bound[n * M + m];
        return os.str();
      }
    }
  return {};
}

inline constexpr int dq_cases_per_policy = 24;

template <class P>
void fuzz_dq_policy(uint64_t seed_base) {
  using namespace lutkit;
  static thread_pool pool(2);
  const auto backends = dq_backends();
  constexpr bool int_ok = format_traits<typename P::format>::integer_levels;
  for (int c = 0; c < scaled_cases(dq_cases_per_policy); ++c) {
    const uint64_t seed = seed_base * 1000003ull + uint64_t(c);
    std::mt19937_64 rng(seed);
    const std::size_t M = std::uniform_int_distribution<std::size_t>(1, c % 5 == 0 ? 200 : 90)(rng);
    const std::size_t K = random_k<P>(rng, c % 6 == 0 ? 1100 : 520);
    const std::size_t N = c % 3 == 0 ? std::uniform_int_distribution<std::size_t>(17, 70)(rng)
                                     : std::uniform_int_distribution<std::size_t>(1, 20)(rng);
    act_kind kind = act_kind::gaussian;
    switch (c % 8) {
      case 2: kind = act_kind::zeros; break;
      case 4: kind = act_kind::extremes; break;
      case 5: kind = act_kind::sparse; break;
      case 7: kind = c % 16 == 7 ? act_kind::with_nan : act_kind::with_inf; break;
      default: break;
    }
    const act_type acts[4] = {act_type::int8, act_type::bf16, act_type::fp32, act_type::int8_group};
    act_type act = acts[c % 4];
    if (!int_ok && (act == act_type::int8 || act == act_type::int8_group)) act = act_type::bf16;
    const auto w = random_weights(rng, M * K);
    const auto x = random_activations(rng, N * K, kind);
    const auto q = quantize<P>(w.data(), M, K);
    const auto wp = pack<P>(q);
    const auto geo = detail::make_dq_geometry<P>(wp.layout(), N, act);
    const auto e = dq_reference<P>(q, x, N, act, geo.flush_k, geo.flushes());
    INFO("policy " << P::name() << " seed " << seed << " M=" << M << " K=" << K << " N=" << N << " act "
                   << act_name(act) << " case " << c);
    std::vector<float> first;
    for (const auto be : backends) {
      // (the AMX set differs from the AVX-512 one in its int8 and bf16 prefill kernels only)
      if (be == dq_backend::avx512_amx && act == act_type::fp32) continue;
      INFO("backend " << detail::dq_kernels_for(be).name);
      std::vector<float> y(N * M, -12345.f);
      dequant_gemm<P>(wp, x.data(), N, K, y.data(), act, 0, 0, nullptr, be);
      CHECK(dq_compare<P>(e, y.data(), M, N, M) == "");
      if (first.empty()) first = y;
    }
    {
      // FusedDQP on the same blob: fp32 activations, the decode sizes (N <= 16)
      const std::size_t Nf = std::min<std::size_t>(N, 16);
      const auto ef = dq_reference<P>(q, x, Nf, act_type::fp32, geo.flush_k, geo.flushes());
      for (const auto be : backends) {
        if (be == dq_backend::avx512_amx) continue;
        INFO("FusedDQP, N=" << Nf << ", backend " << detail::dq_kernels_for(be).name);
        const std::size_t ldy = M + 1;
        std::vector<float> y(Nf * ldy, -12345.f);
        fused_dq_gemv<P>(wp, x.data(), Nf, K, y.data(), 0, ldy, c % 2 ? &pool : nullptr, be);
        CHECK(dq_compare<P>(ef, y.data(), ldy, Nf, M) == "");
      }
    }
    if (c % 3 == 1) {
      const std::size_t r0 = std::uniform_int_distribution<std::size_t>(0, M)(rng);
      const std::size_t r1 = std::uniform_int_distribution<std::size_t>(r0, M)(rng);
      const std::size_t ldy = M + 5;
      std::vector<float> yp(N * ldy, 777.f), yt(N * M, -1.f);
      dequant_gemm_rows<P>(wp, x.data(), N, K, yp.data(), r0, r1, act, 0, ldy, backends.front());
      dequant_gemm<P>(wp, x.data(), N, K, yt.data(), act, 0, 0, &pool, backends.front());
      bool same = true, same_t = true;
      auto eq = [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); };
      for (std::size_t n = 0; n < N; ++n)
        for (std::size_t m = 0; m < ldy; ++m) {
          const float v = yp[n * ldy + m];
          same = same && ((m >= r0 && m < r1) ? eq(v, first[n * M + m]) : v == 777.f);
        }
      for (std::size_t i = 0; i < yt.size(); ++i) same_t = same_t && eq(yt[i], first[i]);
      INFO("rows [" << r0 << ", " << r1 << ") ldy " << ldy);
      CHECK(same);
      CHECK(same_t);
    }
  }
}

template <std::size_t Begin, std::size_t End>
void fuzz_dq_slice() {
  for_dq_policies<Begin, End>([]<class P>() { fuzz_dq_policy<P>(0xD0 + Begin * 131 + P::hash() % 977); });
}

}  // namespace lutkit_test
