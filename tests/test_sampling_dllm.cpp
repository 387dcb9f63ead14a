// Diffusion-LLM sampling against the double reference: x0 and confidences in every format and
// backend (tolerances derived below), Gumbel statistics, selection, update, schedule, EOS,
// NaN / -inf rules, MXFP8 decoding, thread independence, bad input.
#include <cstring>

#include "scaled_cases.hpp"
#include "sampling_common.hpp"

using namespace lutkit;
using namespace sampling_test;

namespace {

// An independent E4M3 decoder from the format's definition (sign, 4-bit exponent bias 7,
// 3-bit mantissa, subnormals at exponent 0, S.1111.111 NaN) and E8M0 (2^(e-127), 0xFF NaN).
double e4m3_def(uint8_t c) {
  const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return std::nan("");
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -v : v;
}
double mx_def(uint8_t c, uint8_t e) {
  if (e == 0xFF) return std::nan("");
  return e4m3_def(c) * std::ldexp(1.0, int(e) - 127);
}

// Relative error bound of the kernel's S = sum exp(x - max) (u = 2^-24): each chunk is summed
// in float over 16 (or 32) lanes, so a term passes through at most chunk/16 + 8 additions; each
// exp is within 4u (AVX-512 / AVX2: 2^y with 2^f = 1 + f q(f), q of degree 4 fitted minimax,
// 1.5u, 2.6u with its float coefficients and Horner roundings; portable: std::exp, 1u); the
// argument y = (x - max) beta log2(e) is rounded three times (difference, product, constant:
// relative 3u), which moves exp by 3 |d| u relatively, d = x - max: 3 u sum e_i |d_i| in total;
// chunks are merged in double (u per chunk, with the float rounding of each chunk sum). So
//   |dS| / S <= u (chunk/16 + 12 + 2 nchunks) + 3 u A1 / S,   A1 = sum e_i |d_i|.
struct bounds {
  double S = 0, A1 = 0, A2 = 0, E = 0;
};
bounds row_bounds(const std::vector<double>& v) {
  bounds b;
  double M = -INFINITY;
  for (double x : v)
    if (!std::isnan(x)) M = std::max(M, x);
  for (double x : v) {
    if (std::isnan(x) || x == -INFINITY) continue;
    const double e = std::exp(x - M), d = std::fabs(x - M);
    b.S += e;
    b.A1 += e * d;
    b.A2 += e * d * d;
    b.E -= e * d;
  }
  return b;
}

struct dcase {
  std::size_t B, L, V;
  logit_type type;
  dllm_params p;
  std::size_t chunk;
};

void check_case(std::mt19937_64& rng, const dcase& c, thread_pool* pool) {
  const auto d = random_logits(rng, c.type, c.B * c.L, c.V);
  const auto lv = d.view();
  std::vector<int32_t> x(c.B * c.L);
  for (auto& t : x) t = rng() % 3 ? c.p.mask_id : int32_t(rng() % c.V);
  if (c.p.eos == dllm_eos::suppress) {  // the EOS must not be a row's only finite value
    for (std::size_t i = 0; i < c.B * c.L; ++i) {
      const auto row = reference::logits_row(lv, i);
      std::size_t fin = 0;
      for (std::size_t t = 0; t < c.V; ++t) fin += std::isfinite(row[t]) && t != std::size_t(c.p.eos_id);
      if (fin == 0) x[i] = 0;
    }
  }
  std::vector<int32_t> x0r(x.size());
  std::vector<double> cr(x.size());
  reference::dllm_sample(lv, c.B, c.L, x.data(), c.p, x0r.data(), cr.data());
  const std::size_t nchunks = (c.V + c.chunk - 1) / c.chunk;
  for (const auto be : backends()) {
    INFO("backend " << backend_name(be) << " type " << logit_type_name(c.type) << " B=" << c.B << " L=" << c.L
                    << " V=" << c.V << " T=" << c.p.temperature << " conf " << int(c.p.confidence) << " chunk "
                    << c.chunk << " block [" << c.p.block_begin << ", " << c.p.block_end << ")");
    std::vector<int32_t> x0(x.size());
    std::vector<float> cf(x.size());
    dllm_sample(lv, c.B, c.L, x.data(), c.p, x0.data(), cf.data(), pool, be, chunk_target(c.chunk));
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO("position " << i);
      if (cr[i] == -INFINITY) {
        REQUIRE(cf[i] == -INFINITY);
        REQUIRE(x0[i] == x[i]);
        continue;
      }
      auto row = reference::logits_row(lv, i);
      if (c.p.suppress_mask_token) row[std::size_t(c.p.mask_id)] = -INFINITY;
      if (c.p.eos == dllm_eos::suppress) row[std::size_t(c.p.eos_id)] = -INFINITY;
      REQUIRE(x0[i] >= 0);
      REQUIRE(std::size_t(x0[i]) < c.V);
      REQUIRE(!std::isnan(row[std::size_t(x0[i])]));  // NaN never selected
      if (c.p.temperature == 0.f) {
        REQUIRE(x0[i] == x0r[i]);  // exact: decoded values are exact, ties to the lower index
      } else {
        // Gumbel-max: the kernel's y = x / T + g carries |x / T| 2u (beta = 1/T and the product
        // rounded) + 8u (1 + |g|) (two logs, each within 4u, the inner one's relative error passing
        // through the outer log as an absolute one) + u |y| (the sum): the chosen token's exact
        // score is within those bounds of the reference's winner.
        const double T = c.p.temperature;
        const auto key = detail::make_key(c.p.seed, i / c.L, i % c.L);
        const auto y = reference::gumbel_scores(row, T, key);
        auto eps = [&](std::size_t t) {
          const double g = y[t] - row[t] / T;
          return u24 * (2 * std::fabs(row[t] / T) + 8 * (1 + std::fabs(g)) + std::fabs(y[t]));
        };
        const std::size_t a = std::size_t(x0[i]), r = std::size_t(x0r[i]);
        REQUIRE(y[a] >= y[r] - eps(a) - eps(r));
      }
      const bounds b = row_bounds(row);
      const double relS = u24 * (double(c.chunk) / 16 + 12 + 2 * double(nchunks)) + 3 * u24 * b.A1 / b.S;
      double tol;
      if (c.p.confidence == dllm_confidence::neg_entropy) {
        // E = sum e_i d_i in float: the summation (chunk/16 + 13) u A1, each term's e_i (3 |d_i| + 4) u
        // and d_i's 3u, the final ln 2 product u: u ((chunk/16 + 21 + 2 nchunks) A1 + 3 A2); then
        // E / S - log S
        const double dE = u24 * ((double(c.chunk) / 16 + 21 + 2 * double(nchunks)) * b.A1 + 3 * b.A2);
        tol = dE / b.S + (std::fabs(b.E) / b.S + 1) * relS + u24 * (std::fabs(cr[i]) + 1);
      } else {
        tol = (relS + 2 * u24) * std::fabs(cr[i]) + 1e-300;
      }
      if (c.p.temperature > 0.f && x0[i] != x0r[i] && c.p.confidence == dllm_confidence::probability) {
        // a near-tie of the Gumbel scores picked another token: its own probability
        const double M = *std::max_element(row.begin(), row.end(), [](double p, double q) {
          return std::isnan(p) || (!std::isnan(q) && p < q);
        });
        const double want = std::exp(row[std::size_t(x0[i])] - M) / b.S;
        REQUIRE(std::fabs(double(cf[i]) - want) <= (relS + 2 * u24) * want);
      } else {
        REQUIRE(std::fabs(double(cf[i]) - cr[i]) <= tol);
      }
    }
  }
}

}  // namespace

// Each term of the kernels' exp sums against exp in double: within the 4u of the bound above
// (the polynomial, its Horner roundings and the final one) plus the argument's three roundings
// (3u relative in the log2-unit argument, so 3 |y| u in the result with y = beta (x - m) in
// natural units), for single values (a sum of one term: the kernels' tail path) with the
// log2-unit argument in [-120, 0], and one value per lane of a whole vector with m the lanes'
// maximum.
TEST_CASE("sampling exp: every term within 4u + the argument's roundings", "[sampling]") {
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> ud(0.0, 1.0);
  const double u = std::ldexp(1.0, -24);
  for (const auto be : backends()) {
    const auto& ks = detail::sampling_kernels_for(be);
    double worst = 0.0;
    for (int i = 0; i < 20000; ++i) {
      const float m = float(ud(rng) * 40.0 - 20.0), beta = float(0.25 + 2.0 * ud(rng));
      const float x = float(double(m) - ud(rng) * 120.0 / (double(beta) * 1.4426950408889634));
      const double y = double(beta) * (double(x) - double(m));  // natural units
      const double ref = std::exp(y);
      const double got = double(ks.sum_exp(&x, 1, m, beta, nullptr, nullptr, 0));
      const double err = std::fabs(got - ref) / ref, tol = (4.0 + 3.0 * std::fabs(y)) * u;
      worst = std::max(worst, err / tol);
      if (err > tol) FAIL_CHECK("backend " << ks.name << ": exp(" << y << ") = " << got << ", error " << err);
    }
    float xs[16];
    for (int i = 0; i < 2000; ++i) {
      const float beta = float(0.25 + 2.0 * ud(rng));
      float m = -INFINITY;
      for (float& v : xs) m = std::max(m, v = float(ud(rng) * 30.0 - 15.0));
      double ref = 0.0, tol = 0.0;
      for (float v : xs) {
        const double y = double(beta) * (double(v) - double(m));
        ref += std::exp(y);
        tol += std::exp(y) * (4.0 + 3.0 * std::fabs(y) + 16.0) * u;  // (+ the float sum's 16 additions)
      }
      const double got = double(ks.sum_exp(xs, 16, m, beta, nullptr, nullptr, 0));
      CHECK(std::fabs(got - ref) <= tol);
    }
    INFO(ks.name << ": the worst single term at " << worst << " of its tolerance");
    CHECK(worst <= 1.0);
  }
}

TEST_CASE("MXFP8 decoding is bit-exact: every code and every scale (0, 254, NaN included); subnormals",
          "[sampling][mxfp8]") {
  // (blocks 3 and 7 hold the NaN codes 0x7F and 0xFF, the others none: the decoders' two paths;
  // scales up to 134 and above it: one factor 2^(e - 7), or 2^120 and 2^(e - 127))
  std::vector<uint8_t> codes(256);
  for (int i = 0; i < 256; ++i) codes[std::size_t(i)] = uint8_t(i);
  for (const auto be : backends()) {
    INFO("backend " << backend_name(be));
    const auto& ks = detail::sampling_kernels_for(be);
    for (int es = 0; es < 256; ++es) {
      const uint8_t e = uint8_t(es);
      // 8 blocks of 32 codes, all with exponent e
      std::vector<uint8_t> sc(8, e);
      std::vector<float> out(256);
      ks.decode_mxfp8(codes.data(), sc.data(), 256, out.data());
      for (int c = 0; c < 256; ++c) {
        INFO("code " << c << " scale " << int(e));
        const double want = mx_def(uint8_t(c), e);
        if (std::isnan(want)) {
          REQUIRE(std::isnan(out[std::size_t(c)]));
        } else if (std::fabs(want) > double(std::numeric_limits<float>::max())) {
          REQUIRE(out[std::size_t(c)] == float(want > 0 ? INFINITY : -INFINITY));  // beyond float: +-inf
        } else {
          REQUIRE(double(out[std::size_t(c)]) == want);  // exact (subnormal floats included)
          REQUIRE(std::signbit(out[std::size_t(c)]) == bool(c & 0x80));
        }
        const float one = mxfp8_decode(uint8_t(c), e);
        REQUIRE((std::memcmp(&one, &out[std::size_t(c)], 4) == 0 || (std::isnan(one) && std::isnan(out[std::size_t(c)]))));
      }
    }
    // hand-built values
    const uint8_t blk[32] = {0x01, 0x07, 0x08, 0x7E, 0x7F, 0xFF, 0x80, 0x38, 0xB8, 0x00};
    uint8_t s127 = 127, s0 = 0;
    float o[32];
    ks.decode_mxfp8(blk, &s127, 32, o);
    CHECK(o[0] == 0x1p-9f);           // smallest subnormal
    CHECK(o[1] == 7 * 0x1p-9f);       // largest subnormal
    CHECK(o[2] == 0x1p-6f);           // smallest normal
    CHECK(o[3] == 448.f);             // largest finite
    CHECK(std::isnan(o[4]));          // S.1111.111
    CHECK(std::isnan(o[5]));
    CHECK((o[6] == 0.f && std::signbit(o[6])));
    CHECK(o[7] == 1.f);
    CHECK(o[8] == -1.f);
    CHECK(o[9] == 0.f);
    ks.decode_mxfp8(blk, &s0, 32, o);
    CHECK(o[0] == 0x1p-136f);         // 2^-9 x 2^-127: a float subnormal, exact
    CHECK(o[3] == 448.f * 0x1p-127f);
  }
  // encoding: every finite code round-trips, values round to nearest even, saturate at 448
  for (int c = 0; c < 256; ++c)
    if ((c & 0x7F) != 0x7F) REQUIRE(f32_to_e4m3(e4m3_to_f32(uint8_t(c))) == c);
  CHECK(f32_to_e4m3(1.0625f) == 0x38);  // halfway between 1 and 1.125: even mantissa
  CHECK(f32_to_e4m3(1.1875f) == 0x3A);  // halfway between 1.125 and 1.25: even (1.25)
  CHECK(f32_to_e4m3(1000.f) == 0x7E);
  CHECK(f32_to_e4m3(-1000.f) == 0xFE);
  CHECK(f32_to_e4m3(NAN) == 0x7F);
  CHECK(f32_to_e4m3(0x1p-10f) == 0x00);  // half the smallest subnormal: ties to even (0)
  CHECK(f32_to_e4m3(3 * 0x1p-10f) == 0x02);
}

TEST_CASE("MXFP8 decoder over long rows: pieces with and without NaN codes or large exponents, ragged ends",
          "[sampling][mxfp8]") {
  // The decoders take whole pieces of blocks at once where no code is NaN and no exponent exceeds
  // 134, and block by block elsewhere: rows of up to 160 blocks (several pieces), each piece
  // clean or holding one NaN code or one large exponent at a random block, every value against
  // mxfp8_decode bit for bit.
  std::mt19937_64 rng(20261203);
  for (const auto be : backends()) {
    INFO("backend " << backend_name(be));
    const auto& ks = detail::sampling_kernels_for(be);
    for (int it = 0; it < lutkit_test::scaled_cases(60); ++it) {
      const std::size_t n = 1 + rng() % 5120, nb = (n + 31) / 32;
      std::vector<uint8_t> codes(n), sc(nb);
      for (auto& c : codes) {
        c = uint8_t(rng());
        if ((c & 0x7F) == 0x7F) c ^= 1;  // no NaN code unless placed below
      }
      for (auto& e : sc) e = uint8_t(100 + rng() % 35);  // 100..134
      for (std::size_t p0 = 0; p0 < nb; p0 += 64) {
        const std::size_t b = p0 + rng() % std::min<std::size_t>(64, nb - p0);
        switch ((it + p0 / 64) % 3) {
          case 1: codes[std::min(n - 1, b * 32 + rng() % 32)] |= 0x7F; break;  // NaN code
          case 2: sc[b] = uint8_t(135 + rng() % 121); break;                  // 135..255
          default: break;
        }
      }
      std::vector<float> out(n);
      ks.decode_mxfp8(codes.data(), sc.data(), n, out.data());
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const float w = mxfp8_decode(codes[i], sc[i / 32]);
        bad += !(std::memcmp(&w, &out[i], 4) == 0 || (std::isnan(w) && std::isnan(out[i])));
      }
      INFO("it " << it << " n " << n);
      REQUIRE(bad == 0);
    }
  }
}

TEST_CASE("bf16 / fp16 decoders match the core conversions on every code", "[sampling]") {
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[std::size_t(i)] = uint16_t(i);
  std::vector<float> o(65536);
  for (const auto be : backends()) {
    INFO("backend " << backend_name(be));
    const auto& ks = detail::sampling_kernels_for(be);
    ks.decode_bf16(all.data(), 65535, o.data());
    std::size_t bad = 0;
    for (int i = 0; i < 65535; ++i) {
      const float w = bf16_to_f32(uint16_t(i));
      bad += !(std::memcmp(&w, &o[std::size_t(i)], 4) == 0 || (std::isnan(w) && std::isnan(o[std::size_t(i)])));
    }
    ks.decode_f16(all.data(), 65535, o.data());
    for (int i = 0; i < 65535; ++i) {
      const float w = f16_to_f32(uint16_t(i));
      bad += !(std::memcmp(&w, &o[std::size_t(i)], 4) == 0 || (std::isnan(w) && std::isnan(o[std::size_t(i)])));
    }
    REQUIRE(bad == 0);
  }
}

TEST_CASE("max_sum_exp on bf16 / fp16 read in place: the bits of the decoded chunk's", "[sampling][dllm]") {
  // random lengths (tails of every size), references below, at and above the maximum, both the
  // top-2 and the entropy forms, a running state the chunk does or does not beat; values with
  // NaN, +-inf, subnormals and repeated maxima
  std::mt19937_64 rng(20261202);
  std::normal_distribution<float> nd(0.f, 4.f);
  for (const auto be : backends()) {
    const auto& ks = detail::sampling_kernels_for(be);
    if (!ks.max_sum_exp_bf16) continue;
    INFO("backend " << backend_name(be));
    REQUIRE(ks.max_sum_exp_f16);
    for (int it = 0; it < 400; ++it) {
      const bool f16 = it % 2;
      const std::size_t n = 1 + rng() % (it % 5 == 0 ? 3000 : 200);
      std::vector<uint16_t> h(n);
      for (auto& v : h) {
        const unsigned k = unsigned(rng() % 40);
        const float x = k == 0 ? NAN : k == 1 ? -INFINITY : k == 2 ? 7.5f : k == 3 ? 1e-40f : nd(rng);
        v = f16 ? f32_to_f16(x) : f32_to_bf16(x);
      }
      std::vector<float> dec(n);
      (f16 ? ks.decode_f16 : ks.decode_bf16)(h.data(), n, dec.data());
      const bool top2 = rng() % 2, ent = rng() % 2;
      const float ref = it % 3 == 0 ? 7.5f : it % 3 == 1 ? 2.f : 12.f;
      const float beta = it % 4 ? 1.f : 0.6f;
      detail::max_state a, b;
      if (it % 3 == 1) a.m1 = b.m1 = 3.f, a.i1 = b.i1 = 5, a.m2 = b.m2 = 1.f;  // beaten by 7.5
      if (it % 3 == 2) a.m1 = b.m1 = 12.f, a.i1 = b.i1 = 5, a.m2 = b.m2 = 9.f;  // not beaten
      float ea = 0.f, eb = 0.f;
      const uint32_t base = uint32_t(rng() % 100000);
      const float sa = (f16 ? ks.max_sum_exp_f16 : ks.max_sum_exp_bf16)(h.data(), n, base, top2, a, ref, beta,
                                                                          ent ? &ea : nullptr, nullptr, 0);
      const float sb = ks.max_sum_exp(dec.data(), n, base, top2, b, ref, beta, ent ? &eb : nullptr, nullptr, 0);
      INFO("it " << it << " n " << n << " top2 " << top2 << " ent " << ent);
      REQUIRE(std::memcmp(&sa, &sb, 4) == 0);
      REQUIRE(std::memcmp(&ea, &eb, 4) == 0);
      REQUIRE(std::memcmp(&a.m1, &b.m1, 4) == 0);
      REQUIRE(a.i1 == b.i1);
      REQUIRE(std::memcmp(&a.m2, &b.m2, 4) == 0);
    }
  }
}

TEST_CASE("dllm_sample matches the reference: formats, confidences, temperatures, chunks, blocks", "[sampling][dllm]") {
  std::mt19937_64 rng(20261123);
  thread_pool pool(2);
  const logit_type types[] = {logit_type::f32, logit_type::bf16, logit_type::f16, logit_type::mxfp8};
  for (int it = 0; it < 48; ++it) {
    dcase c;
    c.B = 1 + rng() % 3;
    c.L = 1 + rng() % 7;
    c.V = 1 + rng() % (it % 4 == 0 ? 5000 : 700);
    c.type = types[it % 4];
    c.chunk = (it % 3 == 0) ? 256 : (it % 3 == 1) ? 1024 : sampling_chunk(target::host::desc);
    c.p.mask_id = int32_t(rng() % c.V);
    c.p.confidence = dllm_confidence(rng() % 3);
    const float temps[] = {0.f, 0.6f, 1.7f, 0.15f};  // 0.15: most vectors skip the Gumbel noise
    c.p.temperature = temps[(it / 4) % 4];
    c.p.seed = rng();
    c.p.block_begin = rng() % c.L;
    c.p.block_end = rng() % 2 ? std::size_t(-1) : c.p.block_begin + 1 + rng() % (c.L - c.p.block_begin);
    if (it % 5 == 0) {
      c.p.eos = dllm_eos::suppress;
      c.p.eos_id = int32_t(rng() % c.V);
    }
    c.p.suppress_mask_token = it % 7 == 0 && c.V > 1;
    if (c.p.suppress_mask_token && c.p.eos == dllm_eos::suppress && c.V < 3) c.p.eos = dllm_eos::none;
    check_case(rng, c, it % 2 ? &pool : nullptr);
  }
}

TEST_CASE("dllm: NaN is never selected, an all-NaN / all -inf / +inf row is an error", "[sampling][dllm]") {
  const std::size_t V = 600;
  for (const auto be : backends()) {
    INFO("backend " << backend_name(be));
    std::vector<float> lg(V, 0.f);
    lg[10] = NAN;
    lg[20] = 5.f;
    lg[30] = NAN;
    int32_t x = 0, x0 = -1;
    float cf = 0;
    dllm_params p;
    p.mask_id = 0;
    dllm_sample(logits_view::f32(lg.data(), 1, V), 1, 1, &x, p, &x0, &cf, nullptr, be);
    CHECK(x0 == 20);
    const double S = 1.0 + (V - 3) * std::exp(-5.0);
    CHECK(std::fabs(cf - 1.0 / S) <= 1e-6 / S);
    p.temperature = 1.f;
    for (uint64_t s = 0; s < 50; ++s) {
      p.seed = s;
      dllm_sample(logits_view::f32(lg.data(), 1, V), 1, 1, &x, p, &x0, &cf, nullptr, be);
      CHECK((x0 != 10 && x0 != 30));
    }
    p.temperature = 0.f;
    std::fill(lg.begin(), lg.end(), NAN);
    REQUIRE_THROWS_AS(dllm_sample(logits_view::f32(lg.data(), 1, V), 1, 1, &x, p, &x0, &cf, nullptr, be), lutkit::error);
    std::fill(lg.begin(), lg.end(), -INFINITY);
    REQUIRE_THROWS_AS(dllm_sample(logits_view::f32(lg.data(), 1, V), 1, 1, &x, p, &x0, &cf, nullptr, be), lutkit::error);
    lg[3] = INFINITY;
    REQUIRE_THROWS_AS(dllm_sample(logits_view::f32(lg.data(), 1, V), 1, 1, &x, p, &x0, &cf, nullptr, be), lutkit::error);
    // all equal: the lowest index, confidence 1/V
    std::fill(lg.begin(), lg.end(), 2.5f);
    dllm_sample(logits_view::f32(lg.data(), 1, V), 1, 1, &x, p, &x0, &cf, nullptr, be);
    CHECK(x0 == 0);
    CHECK(std::fabs(cf - 1.0 / V) <= 1e-6 / V);
    p.confidence = dllm_confidence::margin;
    dllm_sample(logits_view::f32(lg.data(), 1, V), 1, 1, &x, p, &x0, &cf, nullptr, be);
    CHECK(cf == 0.f);  // top-1 and top-2 tie
  }
}

TEST_CASE("dllm: Gumbel-max draws follow softmax(l / T) (chi-square, false-alarm rate 0.001)", "[sampling][dllm][stats]") {
  const float l[6] = {0.f, 0.5f, 1.f, 1.5f, -1.f, 2.f};
  const std::size_t V = 6, N = 12000;
  std::vector<float> lg(N * V);
  for (std::size_t i = 0; i < N; ++i) std::copy(l, l + V, lg.begin() + std::ptrdiff_t(i * V));
  std::vector<int32_t> x(N, 0), x0(N);
  std::vector<float> cf(N);
  for (float T : {1.f, 0.7f, 2.5f})
    for (const auto be : backends()) {
      INFO("backend " << backend_name(be) << " T " << T);
      dllm_params p;
      p.mask_id = 0;
      p.temperature = T;
      p.seed = 7;
      // B = 4 rows of L = N / 4 positions: every (row, position) has its own noise
      dllm_sample(logits_view::f32(lg.data(), N, V), 4, N / 4, x.data(), p, x0.data(), cf.data(), nullptr, be);
      std::vector<std::size_t> cnt(V, 0);
      for (auto t : x0) ++cnt[std::size_t(t)];
      std::vector<double> pr(V);
      double s = 0;
      for (std::size_t i = 0; i < V; ++i) s += pr[i] = std::exp(double(l[i]) / T);
      for (auto& q : pr) q /= s;
      CHECK(chi2(cnt, pr, N) < chi2_crit_001(V - 1));
    }
}

TEST_CASE("dllm: the same bits on 1 and 2 threads", "[sampling][dllm]") {
  std::mt19937_64 rng(99);
  const std::size_t B = 3, L = 11, V = 3000;
  const auto d = random_logits(rng, logit_type::bf16, B * L, V, false);
  std::vector<int32_t> x(B * L, 5);
  thread_pool pool(2);
  for (const auto be : backends())
    for (float T : {0.f, 0.9f}) {
      dllm_params p;
      p.mask_id = 5;
      p.temperature = T;
      p.seed = 3;
      p.confidence = dllm_confidence::neg_entropy;
      std::vector<int32_t> a(B * L), b(B * L);
      std::vector<float> ca(B * L), cb(B * L);
      dllm_sample(d.view(), B, L, x.data(), p, a.data(), ca.data(), nullptr, be, chunk_target(512));
      dllm_sample(d.view(), B, L, x.data(), p, b.data(), cb.data(), &pool, be, chunk_target(512));
      REQUIRE(a == b);
      REQUIRE(std::memcmp(ca.data(), cb.data(), ca.size() * 4) == 0);
    }
}

TEST_CASE("dllm_select and dllm_update: top-k with ties and clamping, threshold mode, none left", "[sampling][dllm]") {
  std::mt19937_64 rng(5);
  for (int it = 0; it < 200; ++it) {
    const std::size_t B = 1 + rng() % 4, L = 1 + rng() % 40;
    std::vector<float> conf(B * L);
    for (auto& c : conf) {
      const int k = int(rng() % 4);
      c = k == 0 ? -INFINITY : float(rng() % 5) / 4.f;  // ties
    }
    std::vector<std::size_t> k(B);
    for (auto& v : k) v = rng() % (L + 3);  // 0 .. beyond the candidates
    dllm_params p;
    p.threshold_mode = it % 3 == 0;
    p.threshold = float(rng() % 5) / 4.f;
    std::vector<uint8_t> t(B * L), tr(B * L);
    const std::size_t n = dllm_select(conf.data(), B, L, k.data(), p, t.data());
    const std::size_t nr = reference::dllm_select(conf.data(), B, L, k.data(), p, tr.data());
    REQUIRE(n == nr);
    REQUIRE(t == tr);
    std::vector<int32_t> x(B * L, 9), x0(B * L);
    for (std::size_t i = 0; i < B * L; ++i) x0[i] = int32_t(i);
    dllm_update(x.data(), x0.data(), t.data(), B, L, p);
    for (std::size_t i = 0; i < B * L; ++i) REQUIRE(x[i] == (t[i] ? int32_t(i) : 9));
  }
  // no masked position left: nothing selected, x unchanged
  std::vector<float> none(8, -INFINITY);
  std::vector<uint8_t> t(8, 7);
  std::size_t k1 = 3;
  dllm_params p;
  CHECK(dllm_select(none.data(), 1, 8, &k1, p, t.data()) == 0);
  CHECK(std::count(t.begin(), t.end(), 0) == 8);
  p.threshold_mode = true;
  CHECK(dllm_select(none.data(), 1, 8, &k1, p, t.data()) == 0);
  std::vector<float> lg(8 * 16, 0.f);
  std::vector<int32_t> x(8, 3);
  p.mask_id = 1;
  CHECK(dllm_step(logits_view::f32(lg.data(), 8, 16), 1, 8, x.data(), &k1, p) == 0);
  CHECK(std::count(x.begin(), x.end(), 3) == 8);
}

TEST_CASE("dllm: LLaDA's schedule, a denoising block to the end, EOS rules", "[sampling][dllm]") {
  CHECK(unmask_schedule(10, 4) == std::vector<std::size_t>{3, 3, 2, 2});
  CHECK(unmask_schedule(3, 5) == std::vector<std::size_t>{1, 1, 1, 0, 0});
  CHECK(unmask_schedule(0, 2) == std::vector<std::size_t>{0, 0});
  CHECK_THROWS_AS(unmask_schedule(4, 0), lutkit::error);
  // a block of 8 masked positions over 3 steps unmasks 3, 3, 2 and ends with none masked
  std::mt19937_64 rng(1);
  const std::size_t L = 8, V = 50;
  const auto d = random_logits(rng, logit_type::f32, L, V, false);
  std::vector<int32_t> x(L, 49);
  dllm_params p;
  p.mask_id = 49;
  p.suppress_mask_token = true;
  const auto sch = unmask_schedule(L, 3);
  for (std::size_t s = 0; s < 3; ++s) {
    const std::size_t before = std::size_t(std::count(x.begin(), x.end(), 49));
    CHECK(dllm_step(d.view(), 1, L, x.data(), &sch[s], p) == sch[s]);
    CHECK(std::size_t(std::count(x.begin(), x.end(), 49)) == before - sch[s]);
  }
  CHECK(std::count(x.begin(), x.end(), 49) == 0);
  // EOS suppress: the EOS is the argmax everywhere but never sampled
  std::vector<float> lg(4 * 10, 0.f);
  for (int i = 0; i < 4; ++i) lg[std::size_t(i) * 10 + 2] = 9.f, lg[std::size_t(i) * 10 + 4 + std::size_t(i)] = 1.f;
  std::vector<int32_t> xx(4, 0), x0(4);
  std::vector<float> cf(4);
  p = dllm_params{};
  p.mask_id = 0;
  p.eos_id = 2;
  p.eos = dllm_eos::suppress;
  dllm_sample(logits_view::f32(lg.data(), 4, 10), 1, 4, xx.data(), p, x0.data(), cf.data());
  for (int i = 0; i < 4; ++i) CHECK(x0[std::size_t(i)] == 4 + i);
  // EOS stop: masked positions after the first EOS become EOS
  p.eos = dllm_eos::stop;
  std::vector<int32_t> y = {5, 0, 2, 0, 7, 0}, y0 = {5, 2, 2, 0, 7, 0};
  std::vector<uint8_t> tr = {0, 0, 0, 0, 0, 0};
  dllm_update(y.data(), y0.data(), tr.data(), 1, 6, p);
  CHECK(y == std::vector<int32_t>{5, 0, 2, 2, 7, 2});
}

TEST_CASE("dllm: bad parameters are clear errors", "[sampling][dllm]") {
  std::vector<float> lg(4 * 10, 0.f);
  std::vector<int32_t> x(4, 0), x0(4);
  std::vector<float> cf(4);
  const auto lv = logits_view::f32(lg.data(), 4, 10);
  auto run = [&](const dllm_params& p, std::size_t B, std::size_t L, logits_view v) {
    dllm_sample(v, B, L, x.data(), p, x0.data(), cf.data());
  };
  dllm_params p;
  p.mask_id = 0;
  REQUIRE_NOTHROW(run(p, 1, 4, lv));
  CHECK_THROWS_WITH(run(p, 1, 3, lv), Catch::Contains("expected B*L"));
  auto q = p;
  q.temperature = -1.f;
  CHECK_THROWS_WITH(run(q, 1, 4, lv), Catch::Contains("temperature"));
  q = p;
  q.temperature = NAN;
  CHECK_THROWS_WITH(run(q, 1, 4, lv), Catch::Contains("temperature"));
  q = p;
  q.mask_id = 10;
  CHECK_THROWS_WITH(run(q, 1, 4, lv), Catch::Contains("mask_id"));
  q = p;
  q.block_begin = 4;
  CHECK_THROWS_WITH(run(q, 1, 4, lv), Catch::Contains("active block"));
  q = p;
  q.eos = dllm_eos::stop;
  CHECK_THROWS_WITH(run(q, 1, 4, lv), Catch::Contains("eos_id"));
  CHECK_THROWS_WITH(run(p, 1, 4, logits_view::mxfp8(nullptr, nullptr, 4, 10)), Catch::Contains("null"));
  std::vector<uint8_t> codes(40);
  CHECK_THROWS_WITH(run(p, 1, 4, logits_view::mxfp8(codes.data(), nullptr, 4, 10)), Catch::Contains("scales"));
  CHECK_THROWS_WITH(run(p, 1, 4, logits_view::f32(lg.data(), 4, 0)), Catch::Contains("vocabulary"));
  CHECK_THROWS_AS(dllm_select(cf.data(), 1, 4, nullptr, p, nullptr), lutkit::error);
  // enum values outside their lists (before: confidence 7 left conf uninitialized, eos 9 ran as none)
  q = p;
  q.confidence = dllm_confidence(7);
  CHECK_THROWS_WITH(run(q, 1, 4, lv), Catch::Contains("dllm_confidence"));
  q = p;
  q.eos = dllm_eos(9);
  q.eos_id = 1;
  CHECK_THROWS_WITH(run(q, 1, 4, lv), Catch::Contains("dllm_eos"));
  logits_view bad_type = lv;
  bad_type.type = logit_type(7);
  CHECK_THROWS_WITH(run(p, 1, 4, bad_type), Catch::Contains("logit_type"));
  CHECK_THROWS_WITH(dllm_sample(lv, 1, 4, x.data(), p, x0.data(), cf.data(), nullptr, sampling_backend(9)),
                    Catch::Contains("sampling_backend"));
  // B x L that wraps: before, B = L = 2^32 passed the row check as 0 and overran the buffers
  const std::size_t big = std::size_t(1) << 32;
  CHECK_THROWS_AS(dllm_sample(logits_view::f32(lg.data(), 0, 10), big, big, x.data(), p, x0.data(), cf.data()),
                  lutkit::error);
  std::vector<uint8_t> tr(4);
  std::size_t kk[1] = {1};
  CHECK_THROWS_AS(dllm_select(cf.data(), big, big, kk, p, tr.data()), lutkit::error);
  CHECK_THROWS_AS(dllm_update(x.data(), x0.data(), tr.data(), big, big, p), lutkit::error);
  // outputs that alias an input or each other
  CHECK_THROWS_WITH(dllm_sample(lv, 1, 4, x.data(), p, x0.data(), lg.data() + 8), Catch::Contains("overlaps the logits"));
  CHECK_THROWS_WITH(dllm_sample(lv, 1, 4, x.data(), p, reinterpret_cast<int32_t*>(lg.data()) + 12, cf.data()),
                    Catch::Contains("overlaps the logits"));
  CHECK_THROWS_WITH(dllm_sample(lv, 1, 4, x.data(), p, x.data(), cf.data()), Catch::Contains("separate"));
  CHECK_THROWS_WITH(dllm_sample(lv, 1, 4, x.data(), p, x0.data(), reinterpret_cast<float*>(x0.data()) + 2),
                    Catch::Contains("separate"));
  CHECK_THROWS_AS(dllm_select(cf.data(), 1, 4, kk, p, reinterpret_cast<uint8_t*>(cf.data())), lutkit::error);
  CHECK_THROWS_AS(dllm_update(x.data(), x.data(), tr.data(), 1, 4, p), lutkit::error);
}

TEST_CASE("dllm: a later chunk's maximum far above the running one (the chunk is summed again)", "[sampling][dllm]") {
  const std::size_t V = 1000;
  std::vector<float> lg(V);
  for (std::size_t i = 0; i < V; ++i) lg[i] = float(i % 13) * 0.25f;
  lg[700] = 90.f;  // chunk 2 of 256-value chunks: 88 above the first chunks' maximum
  lg[900] = 89.5f;
  // the same values (exact) as bf16 and fp16: chunks read in place, the redone one decoded
  std::vector<uint16_t> lb(V), lh(V);
  for (std::size_t i = 0; i < V; ++i) lb[i] = f32_to_bf16(lg[i]), lh[i] = f32_to_f16(lg[i]);
  int32_t x = 0;
  for (const auto be : backends())
    for (int conf = 0; conf < 9; ++conf) {
      INFO("backend " << backend_name(be) << " confidence " << conf % 3 << " format " << conf / 3);
      const logits_view lv = conf / 3 == 0   ? logits_view::f32(lg.data(), 1, V)
                             : conf / 3 == 1 ? logits_view::bf16(lb.data(), 1, V)
                                             : logits_view::f16(lh.data(), 1, V);
      dllm_params p;
      p.mask_id = 0;
      p.confidence = dllm_confidence(conf % 3);
      int32_t x0;
      float cf;
      double cr;
      int32_t x0r;
      dllm_sample(lv, 1, 1, &x, p, &x0, &cf, nullptr, be, chunk_target(256));
      reference::dllm_sample(logits_view::f32(lg.data(), 1, V), 1, 1, &x, p, &x0r, &cr);
      CHECK(x0 == 700);
      CHECK(x0r == 700);
      // S = 1 + e^-0.5 + tiny: the bound of the fuzz test with chunk 256 (A1 <= 1, A2 <= 1)
      CHECK(std::fabs(double(cf) - cr) <= 200 * u24 * (std::fabs(cr) + 1));
    }
}
