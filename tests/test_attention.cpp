// Attention family tests: differential against the double reference (attention/reference.hpp)
// over seeded random shapes, every mask kind, GQA ratios, head dims, KV types and layouts, both
// backends; exp accuracy; window edges; fully masked rows; large logits; split-KV merge; thread
// determinism; batched decode with a shared prefix; bad input.
#include <atomic>
#include <cstring>
#include <functional>

#include "attention_check.hpp"

using namespace att_test;

namespace {

struct prefill_case {
  std::size_t hq, hkv, d, n_q, len;
  int64_t pos0;
  kv_type type;
  mask_kind mask;
  std::size_t window;
  bool token_major;
  float softcap;
  bool add_mask;
  exp_kind exp;
  attention_backend backend;
  attention_precision precision = attention_precision::fp32;
};

std::string describe(const prefill_case& c) {
  std::ostringstream os;
  os << "hq " << c.hq << " hkv " << c.hkv << " d " << c.d << " n_q " << c.n_q << " len " << c.len << " pos0 " << c.pos0
     << " type " << int(c.type) << " mask " << int(c.mask) << " window " << c.window << " token_major " << c.token_major
     << " softcap " << c.softcap << " add_mask " << c.add_mask << " exp " << int(c.exp) << " backend " << int(c.backend)
     << " precision " << int(c.precision);
  return os.str();
}

attention_options opts_of(const prefill_case& c) {
  attention_options o;
  o.heads_q = c.hq;
  o.heads_kv = c.hkv;
  o.head_dim = c.d;
  o.scale = float(1.0 / std::sqrt(double(c.d)));
  o.softcap = c.softcap;
  o.mask = c.mask;
  o.window = c.mask == mask_kind::window ? c.window : 0;
  o.exp = c.exp;
  o.backend = c.backend;
  o.precision = c.precision;
  return o;
}

// the bf16 tile runs where it is asked for and the AVX-512 set has it (else the fp32 tile or step)
bool uses_bf16(const prefill_case& c) {
  const bool dims = c.d == 64 || c.d == 128 || c.d == 256;
  return c.precision == attention_precision::bf16 && has_bf16_tile(c.backend) && dims && c.len > 0;
}

double run_prefill_case(const prefill_case& c, uint64_t seed, thread_pool* pool = nullptr,
                        std::vector<float>* out_copy = nullptr, float qscale = 1.f, bool exact = false) {
  std::mt19937_64 rng(seed);
  kv_store kv;
  make_kv(kv, rng, c.type, c.len, c.hkv, c.d, c.token_major, 1.f, exact);
  const auto q = randn(rng, c.n_q * c.hq * c.d, qscale, exact);
  std::vector<float> mask;
  const std::size_t mstride = c.len + 5;
  float mask_max = 0;
  if (c.add_mask) {
    mask = randn(rng, c.n_q * mstride, 1.f);
    std::uniform_int_distribution<int> pick(0, 7);
    for (auto& x : mask) {
      if (pick(rng) == 0) x = -std::numeric_limits<float>::infinity();
      else mask_max = std::max(mask_max, std::fabs(x));
    }
    // one row wholly masked by the caller
    for (std::size_t j = 0; j < mstride; ++j) mask[(c.n_q / 2) * mstride + j] = -std::numeric_limits<float>::infinity();
  }
  const attention_options o = opts_of(c);
  std::vector<float> out(c.n_q * c.hq * c.d, 7.f), lse(c.n_q * c.hq, 7.f);
  attention_prefill(o, q.data(), c.n_q, c.pos0, kv.view, out.data(), lse.data(), c.add_mask ? mask.data() : nullptr,
                    mstride, pool);
  if (out_copy) *out_copy = out;
  bound_in b;
  b.bf16 = uses_bf16(c);
  b.table = c.exp == exp_kind::table;
  b.softcap = c.softcap;
  b.mask_max = c.add_mask ? mask_max : -1;
  b.chunks = c.len / 16 + 2;
  b.type = c.type;
  double worst = 0;
  const std::size_t G = c.hq / c.hkv;
  for (std::size_t i = 0; i < c.n_q; ++i)
    for (std::size_t h = 0; h < c.hq; ++h) {
      std::vector<float> qs(q.begin() + std::ptrdiff_t((i * c.hq + h) * c.d), q.begin() + std::ptrdiff_t((i * c.hq + h + 1) * c.d));
      const auto r = ref::attention_one(o, qs.data(), c.pos0 + int64_t(i), kv.view, h / G,
                                        c.add_mask ? mask.data() + i * mstride : nullptr);
      std::ostringstream w;
      w << describe(c) << " seed " << seed << " query " << i << " head " << h;
      worst = std::max(worst, check_row(r, out.data() + (i * c.hq + h) * c.d, lse.data() + i * c.hq + h, c.d, b, w.str()));
    }
  return worst;
}

prefill_case random_case(std::mt19937_64& rng, attention_backend be) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  prefill_case c{};
  const std::size_t ratios[4] = {1, 2, 4, 8};
  c.hkv = std::size_t(1 + pick(2));
  c.hq = c.hkv * ratios[pick(4)];
  const std::size_t dims[7] = {64, 128, 256, 64, 128, 40, 96};
  c.d = dims[pick(7)];
  c.n_q = std::size_t(1 + pick(40));
  c.mask = mask_kind(pick(3));
  c.pos0 = pick(3) == 0 ? 0 : pick(200);
  c.len = c.mask == mask_kind::none ? std::size_t(1 + pick(300)) : std::size_t(c.pos0) + c.n_q + std::size_t(pick(3) == 0 ? pick(20) : 0);
  if (pick(8) == 0) c.len = std::size_t(pick(int(c.len) + 1));  // queries past the cache end
  c.window = std::size_t(1 + pick(120));
  c.type = kv_type(pick(3));
  c.token_major = pick(2) == 0;
  c.softcap = pick(4) == 0 ? 5.f + float(pick(40)) : 0.f;
  c.add_mask = pick(4) == 0;
  c.exp = exp_kind(pick(2));
  c.backend = be;
  c.precision = pick(3) == 0 ? attention_precision::bf16 : attention_precision::fp32;
  return c;
}

}  // namespace

TEST_CASE("attention exp: poly and table against std::exp", "[attention]") {
  double worst_poly = 0, worst_table = 0;
  const float* table = detail::exp_table();
  for (int i = 0; i <= 1 << 20; i += lutkit_test::case_divisor()) {
    const float x = -87.f * float(i) / float(1 << 20);
    const double e = std::exp(double(x));
    worst_poly = std::max(worst_poly, std::fabs(double(detail::exp_poly(x)) - e) / e);
    // the table's error: the fp16 rounding of x (relative uh) plus the fp32 entry (u)
    const double t = double(detail::exp_by_table(table, x));
    const double te = std::fabs(t - e) / e;
    const double tb = std::expm1(uh * std::fabs(double(x))) + u;
    INFO("x " << x << " table " << t << " exp " << e);
    REQUIRE(te <= tb * 1.0000001);
    worst_table = std::max(worst_table, te);
  }
  WARN("exp_poly max relative error " << worst_poly / u << " ulp(2^-24); table " << worst_table);
  REQUIRE(worst_poly <= eps_poly);
  REQUIRE(detail::exp_poly(-std::numeric_limits<float>::infinity()) == 0.f);
  REQUIRE(detail::exp_by_table(table, -std::numeric_limits<float>::infinity()) == 0.f);
  REQUIRE(detail::exp_poly(0.f) == 1.f);
  REQUIRE(detail::exp_by_table(table, 0.f) == 1.f);
  REQUIRE(detail::exp_by_table(table, -70000.f) == 0.f);
}

TEST_CASE("attention prefill: random shapes, both backends, against the reference", "[attention]") {
  std::mt19937_64 rng(20261123);
  double worst = 0;
  for (int it = 0; it < lutkit_test::scaled_cases(120); ++it) {
    const attention_backend be = it % 3 == 0 ? attention_backend::portable : simd_backend(it / 3);
    const prefill_case c = random_case(rng, be);
    worst = std::max(worst, run_prefill_case(c, 1000 + uint64_t(it)));
  }
  WARN("prefill: worst error / bound " << worst);
}

TEST_CASE("attention prefill: window edges p - w and p - w + 1", "[attention]") {
  // K = 0: every visible key has the same weight; V[k] = position k in every channel: the output
  // is the mean of the visible positions, (max(0, p - w + 1) + p) / 2 exactly.
  for (auto be : all_backends())
    for (std::size_t w : {1, 2, 7, 64, 65}) {
      const std::size_t d = 64, len = 200, n_q = 50;
      const int64_t pos0 = 150;
      std::vector<float> K(len * d, 0.f), V(len * d);
      for (std::size_t k = 0; k < len; ++k)
        for (std::size_t c = 0; c < d; ++c) V[k * d + c] = float(k);
      kv_cache_view kv{K.data(), V.data(), kv_type::f32, len, std::ptrdiff_t(d), 0};
      attention_options o;
      o.heads_q = o.heads_kv = 1;
      o.head_dim = d;
      o.scale = 1.f;
      o.mask = mask_kind::window;
      o.window = w;
      o.backend = be;
      std::vector<float> q(n_q * d, 1.f), out(n_q * d);
      attention_prefill(o, q.data(), n_q, pos0, kv, out.data());
      for (std::size_t i = 0; i < n_q; ++i) {
        const int64_t p = pos0 + int64_t(i);
        const double want = (double(std::max<int64_t>(0, p - int64_t(w) + 1)) + double(p)) / 2;
        // bf16 path: V rounded to bf16 (positions < 256 are exact), P = 1 exact; fp32 sums of <= 65 terms
        INFO("window " << w << " query " << p << " got " << out[i * d] << " want " << want);
        REQUIRE(std::fabs(out[i * d] - want) <= want * 70 * u);
      }
    }
}

TEST_CASE("attention: fully masked rows give 0 and lse -inf", "[attention]") {
  for (auto be : all_backends()) {
    const std::size_t d = 128, n_q = 4;
    std::mt19937_64 rng(3);
    kv_store kv;
    make_kv(kv, rng, kv_type::f16, 100, 1, d, false);
    attention_options o;
    o.heads_q = o.heads_kv = 1;
    o.head_dim = d;
    o.scale = 0.1f;
    o.backend = be;
    const auto q = randn(rng, n_q * d);
    std::vector<float> out(n_q * d, 5.f), lse(n_q, 5.f);
    // queries past an empty cache
    kv_cache_view empty = kv.view;
    empty.len = 0;
    attention_prefill(o, q.data(), n_q, 0, empty, out.data(), lse.data());
    for (float x : out) REQUIRE(x == 0.f);
    for (float x : lse) REQUIRE((std::isinf(x) && x < 0));
    // a caller mask of -inf everywhere
    std::vector<float> mask(n_q * 100, -std::numeric_limits<float>::infinity());
    std::fill(out.begin(), out.end(), 5.f);
    o.mask = mask_kind::none;
    attention_prefill(o, q.data(), n_q, 0, kv.view, out.data(), lse.data(), mask.data(), 100);
    for (float x : out) REQUIRE(x == 0.f);
    for (float x : lse) REQUIRE((std::isinf(x) && x < 0));
    // decode over an empty cache
    std::vector<float> o1(d, 5.f);
    float l1 = 5.f;
    attention_decode(o, q.data(), empty, o1.data(), &l1);
    for (float x : o1) REQUIRE(x == 0.f);
    REQUIRE((std::isinf(l1) && l1 < 0));
  }
}

TEST_CASE("attention: large logits (|q.k| ~ 1e4 before scale)", "[attention]") {
  // q and K exact in bf16 and a power-of-two scale: the bf16 path's inputs are exact, so the
  // bound is the accumulation's, not the inputs' rounding
  double worst = 0;
  for (int it = 0; it < lutkit_test::scaled_cases(12); ++it) {
    prefill_case c{8, 2, it % 2 ? 128u : 64u, 17, 300, 250, kv_type(it % 3), mask_kind(it % 3), 100, it % 2 == 0, 0.f,
                   false, exp_kind(it / 6), it % 4 == 3 ? attention_backend::portable : simd_backend(it)};
    c.len = c.mask == mask_kind::none ? 300 : 267;
    c.precision = (it / 3) % 2 ? attention_precision::bf16 : attention_precision::fp32;
    worst = std::max(worst, run_prefill_case(c, 77 + uint64_t(it), nullptr, nullptr, 900.f, true));
  }
  WARN("large logits: worst error / bound " << worst);
}

TEST_CASE("attention: 1 and 2 threads give the same bits", "[attention]") {
  thread_pool pool(2);
  std::mt19937_64 rng(11);
  for (int it = 0; it < lutkit_test::scaled_cases(6); ++it) {
    prefill_case c = random_case(rng, attention_backend::best);
    c.n_q = 70;
    c.len = std::max<std::size_t>(c.len, 300) + std::size_t(c.pos0) + c.n_q;
    std::vector<float> a, b;
    run_prefill_case(c, 500 + uint64_t(it), nullptr, &a);
    run_prefill_case(c, 500 + uint64_t(it), &pool, &b);
    REQUIRE(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
  }
  // decode: many splits (reduced runs: the two shorter caches)
  for (std::size_t len : {100, 3000, 9000}) {
    if (len == 9000 && lutkit_test::case_divisor() > 1) continue;
    kv_store kv;
    make_kv(kv, rng, kv_type::f16, len, 2, 128, true);
    attention_options o;
    o.heads_q = 8;
    o.heads_kv = 2;
    o.head_dim = 128;
    o.scale = 0.088f;
    const auto q = randn(rng, 8 * 128);
    std::vector<float> a(8 * 128), b(8 * 128), la(8), lb(8);
    attention_decode(o, q.data(), kv.view, a.data(), la.data(), nullptr);
    attention_decode(o, q.data(), kv.view, b.data(), lb.data(), &pool);
    REQUIRE(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
    REQUIRE(std::memcmp(la.data(), lb.data(), la.size() * 4) == 0);
  }
  // decode at a short context (one split, fewer units than twice the threads): the KV heads
  // divided among the threads, in groups of equal and of unequal sizes (3 heads on 2 and 3
  // threads, 8 heads on 2 and 3 threads: 2 and 1-2 heads a group)
  thread_pool pool3(3);
  for (std::size_t hkv : {3, 8})
    for (std::size_t len : {1, 100}) {
      kv_store kv;
      make_kv(kv, rng, kv_type::f16, len, hkv, 64, true);
      attention_options o;
      o.heads_kv = hkv;
      o.heads_q = 4 * hkv;
      o.head_dim = 64;
      o.scale = 0.125f;
      const auto q = randn(rng, o.heads_q * 64);
      std::vector<float> a(o.heads_q * 64), la(o.heads_q);
      attention_decode(o, q.data(), kv.view, a.data(), la.data(), nullptr);
      for (thread_pool* p : {&pool, &pool3}) {
        INFO(hkv << " KV heads, " << len << " keys, " << p->size() << " threads");
        std::vector<float> b(a.size(), -1.f), lb(la.size(), -1.f);
        attention_decode(o, q.data(), kv.view, b.data(), lb.data(), p);
        REQUIRE(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
        REQUIRE(std::memcmp(la.data(), lb.data(), la.size() * 4) == 0);
      }
    }
}

TEST_CASE("attention: batched decode, 1 and 2 threads give the same bits", "[attention]") {
  thread_pool pool(2);
  std::mt19937_64 rng(12);
  // 8 rows (fp32 step) and 32 rows (packed bf16 tile) per KV head; a prefix of 2500 keys (5
  // splits) and of 100 (one split: the KV heads divided among the threads)
  for (const auto& [n_seq, pre_len] : {std::pair<std::size_t, std::size_t>{2, 2500}, {8, 2500}, {2, 100}, {8, 100}}) {
    kv_store pre;
    make_kv(pre, rng, kv_type::f16, pre_len, 2, 128, false);
    std::vector<kv_store> own(n_seq);
    std::vector<std::vector<float>> q(n_seq), a(n_seq), b(n_seq);
    std::vector<decode_sequence> sa(n_seq), sb(n_seq);
    attention_options o;
    o.heads_q = 8;
    o.heads_kv = 2;
    o.head_dim = 128;
    o.scale = 0.09f;
    for (std::size_t i = 0; i < n_seq; ++i) {
      make_kv(own[i], rng, kv_type::f16, 3 + i, 2, 128, true);
      q[i] = randn(rng, 8 * 128);
      a[i].assign(8 * 128, 0.f);
      b[i].assign(8 * 128, 0.f);
      sa[i].q = sb[i].q = q[i].data();
      sa[i].own = sb[i].own = own[i].view;
      sa[i].out = a[i].data();
      sb[i].out = b[i].data();
    }
    attention_decode(o, pre.view, sa, nullptr);
    attention_decode(o, pre.view, sb, &pool);
    for (std::size_t i = 0; i < n_seq; ++i) REQUIRE(std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) == 0);
  }
}

TEST_CASE("attention decode: split-KV merge against the reference and the unsplit result", "[attention]") {
  std::mt19937_64 rng(21);
  for (int it = 0; it < lutkit_test::scaled_cases(16); ++it) {
    const std::size_t ratios[4] = {1, 2, 4, 8};
    const std::size_t hkv = 1 + std::size_t(it % 2), hq = hkv * ratios[it % 4];
    const std::size_t dims[5] = {64, 128, 256, 80, 128};
    const std::size_t d = dims[it % 5];
    const std::size_t len = it < 4 ? std::size_t(1 + it * 7) : std::size_t(500 + 700 * it);
    const kv_type t = kv_type(it % 3);
    kv_store kv;
    make_kv(kv, rng, t, len, hkv, d, it % 2 == 0);
    attention_options o;
    o.heads_q = hq;
    o.heads_kv = hkv;
    o.head_dim = d;
    o.scale = float(1 / std::sqrt(double(d)));
    o.exp = exp_kind(it % 2);
    o.softcap = it % 5 == 0 ? 30.f : 0.f;
    if (it % 3 == 1) {
      o.mask = mask_kind::window;
      o.window = 1 + len / 3;
    }
    o.backend = it % 4 == 2 ? attention_backend::portable : simd_backend(it);
    const auto q = randn(rng, hq * d);
    std::vector<float> out(hq * d), lse(hq);
    attention_decode(o, q.data(), kv.view, out.data(), lse.data());
    // unsplit: the portable prefill (one query at position len - 1, one sweep over the keys)
    attention_options og = o;
    og.backend = attention_backend::portable;
    std::vector<float> out1(hq * d), lse1(hq);
    attention_prefill(og, q.data(), 1, int64_t(len) - 1, kv.view, out1.data(), lse1.data());
    bound_in b;
    b.table = o.exp == exp_kind::table;
    b.softcap = o.softcap;
    b.chunks = len / 16 + 2;
    b.type = t;
    for (std::size_t h = 0; h < hq; ++h) {
      const auto r = ref::attention_one(o, q.data() + h * d, int64_t(len) - 1, kv.view, h / (hq / hkv), nullptr);
      std::ostringstream w;
      w << "decode it " << it << " len " << len << " head " << h;
      check_row(r, out.data() + h * d, lse.data() + h, d, b, w.str());
      check_row(r, out1.data() + h * d, lse1.data() + h, d, b, w.str() + " (unsplit)");
      // split vs unsplit: within the sum of both bounds
      const double bd = 2 * row_bound(r, d, b);
      for (std::size_t c = 0; c < d; ++c) REQUIRE(std::fabs(double(out[h * d + c]) - double(out1[h * d + c])) <= bd);
    }
    // merging two halves by their lse (the caller's merge) gives the whole
    if (len >= 2 && o.mask == mask_kind::causal && o.softcap == 0.f) {
      const std::size_t half = len / 2;
      kv_cache_view a = kv.view, bb = kv.view;
      a.len = half;
      std::vector<float> oa(hq * d), ob(hq * d), la(hq), lb(hq);
      attention_options on = o;
      on.mask = mask_kind::none;
      attention_decode(on, q.data(), a, oa.data(), la.data());
      bb.k = static_cast<const uint8_t*>(kv.view.k) + std::ptrdiff_t(half) * kv.view.row_stride * std::ptrdiff_t(kv_type_bytes(t));
      bb.v = static_cast<const uint8_t*>(kv.view.v) + std::ptrdiff_t(half) * kv.view.row_stride * std::ptrdiff_t(kv_type_bytes(t));
      bb.len = len - half;
      attention_decode(on, q.data(), bb, ob.data(), lb.data());
      for (std::size_t h = 0; h < hq; ++h) {
        const auto r = ref::attention_one(o, q.data() + h * d, int64_t(len) - 1, kv.view, h / (hq / hkv), nullptr);
        const double M = std::max(la[h], lb[h]);
        const double wa = std::exp(la[h] - M), wb = std::exp(lb[h] - M);
        const double bd = 2 * row_bound(r, d, b);
        for (std::size_t c = 0; c < d; ++c) {
          const double m = (wa * oa[h * d + c] + wb * ob[h * d + c]) / (wa + wb);
          REQUIRE(std::fabs(m - r.out[c]) <= bd);
        }
      }
    }
  }
}

TEST_CASE("attention decode: batched sequences sharing a prefix", "[attention]") {
  std::mt19937_64 rng(31);
  for (int it = 0; it < lutkit_test::scaled_cases(10); ++it) {
    const std::size_t n_seq = std::size_t(1 + (it * 5) % 16), hkv = 2, hq = 8, d = it % 3 == 2 ? 64 : 128;
    const kv_type t = kv_type(it % 3);
    kv_store pre;
    make_kv(pre, rng, t, std::size_t(700 + it * 300), hkv, d, it % 2 == 0);
    std::vector<kv_store> own(n_seq);
    std::vector<std::vector<float>> q(n_seq), out(n_seq), lse(n_seq), mask(n_seq);
    std::vector<decode_sequence> seqs(n_seq);
    attention_options o;
    o.heads_q = hq;
    o.heads_kv = hkv;
    o.head_dim = d;
    o.scale = 0.1f;
    o.exp = exp_kind(it % 2);
    if (it % 4 == 3) {
      o.mask = mask_kind::window;
      o.window = 300;
    }
    o.backend = it % 5 == 4 ? attention_backend::portable : simd_backend(it);
    o.precision = (it / 2) % 2 ? attention_precision::bf16 : attention_precision::fp32;
    for (std::size_t b = 0; b < n_seq; ++b) {
      make_kv(own[b], rng, t, (b * 7) % 40, hkv, d, b % 2 == 0);
      q[b] = randn(rng, hq * d);
      out[b].assign(hq * d, 9.f);
      lse[b].assign(hq, 9.f);
      seqs[b].q = q[b].data();
      seqs[b].own = own[b].view;
      seqs[b].out = out[b].data();
      seqs[b].lse = lse[b].data();
      if (it % 3 == 1) {
        mask[b] = randn(rng, pre.view.len + own[b].view.len, 0.5f);
        seqs[b].add_mask = mask[b].data();
      }
    }
    attention_decode(o, pre.view, seqs);
    bound_in bd;
    bd.table = o.exp == exp_kind::table;
    bd.chunks = (pre.view.len + 40) / 16 + 2;
    bd.type = t;
    bd.mask_max = it % 3 == 1 ? 3.0 : -1;  // |N(0, 0.5)| < 3 for these seeds (checked below)
    // 16 or more rows per KV head: the prefix runs the packed bf16 tile (attention/driver.hpp)
    bd.bf16 = o.precision == attention_precision::bf16 && has_bf16_tile(o.backend) && n_seq * (hq / hkv) >= 16;
    for (std::size_t b = 0; b < n_seq; ++b) {
      for (float x : mask[b]) REQUIRE(std::fabs(x) < 3.f);
      const int64_t p = int64_t(pre.view.len + own[b].view.len) - 1;
      for (std::size_t h = 0; h < hq; ++h) {
        const auto r = ref::attention_one(o, q[b].data() + h * d, p, own[b].view, h / (hq / hkv),
                                          seqs[b].add_mask, &pre.view);
        std::ostringstream w;
        w << "batched it " << it << " seq " << b << " head " << h;
        check_row(r, out[b].data() + h * d, lse[b].data() + h, d, bd, w.str());
      }
    }
  }
}

TEST_CASE("attention: bad input gives a clear error", "[attention]") {
  const std::size_t d = 64;
  std::vector<float> K(16 * d, 0.f), V(16 * d, 0.f), q(4 * d, 0.f), out(4 * d);
  kv_cache_view kv{K.data(), V.data(), kv_type::f32, 16, std::ptrdiff_t(d), std::ptrdiff_t(16 * d)};
  attention_options o;
  o.heads_q = 2;
  o.heads_kv = 1;
  o.head_dim = d;
  o.scale = 0.125f;
  auto err = [&](attention_options oo, const float* qq, float* oo_out, int64_t pos, const char* what) {
    INFO(what);
    REQUIRE_THROWS_AS(attention_prefill(oo, qq, 2, pos, kv, oo_out), lutkit::error);
  };
  REQUIRE_NOTHROW(attention_prefill(o, q.data(), 2, 3, kv, out.data()));
  auto o1 = o;
  o1.heads_q = 3;
  o1.heads_kv = 2;
  err(o1, q.data(), out.data(), 0, "Hq not a multiple of Hkv");
  auto o2 = o;
  o2.head_dim = 0;
  err(o2, q.data(), out.data(), 0, "head dim 0");
  o2.head_dim = 4096;
  err(o2, q.data(), out.data(), 0, "head dim too large");
  err(o, nullptr, out.data(), 0, "null q");
  err(o, q.data(), nullptr, 0, "null out");
  err(o, q.data(), q.data() + 8, 0, "out overlaps q");
  err(o, q.data(), K.data(), 0, "out overlaps K");
  err(o, q.data(), out.data(), -1, "negative offset");
  auto o3 = o;
  o3.mask = mask_kind::window;
  o3.window = 0;
  err(o3, q.data(), out.data(), 0, "window 0");
  auto o4 = o;
  o4.scale = std::numeric_limits<float>::quiet_NaN();
  err(o4, q.data(), out.data(), 0, "NaN scale");
  auto o5 = o;
  o5.softcap = -1.f;
  err(o5, q.data(), out.data(), 0, "negative softcap");
  kv_cache_view bad = kv;
  bad.k = nullptr;
  REQUIRE_THROWS_AS(attention_prefill(o, q.data(), 2, 0, bad, out.data()), lutkit::error);
  bad = kv;
  bad.row_stride = 0;
  REQUIRE_THROWS_AS(attention_prefill(o, q.data(), 2, 0, bad, out.data()), lutkit::error);
  std::vector<float> mask(2 * 8);
  REQUIRE_THROWS_AS(attention_prefill(o, q.data(), 2, 0, kv, out.data(), nullptr, mask.data(), 8), lutkit::error);
  // decode
  REQUIRE_THROWS_AS(attention_decode(o1, q.data(), kv, out.data()), lutkit::error);
  REQUIRE_THROWS_AS(attention_decode(o, q.data(), kv, q.data()), lutkit::error);
  REQUIRE_THROWS_AS(attention_decode(o, q.data(), kv, out.data(), out.data() + 3), lutkit::error);
  REQUIRE_THROWS_AS(attention_decode(o, kv, std::span<const decode_sequence>()), lutkit::error);
  decode_sequence s[2];
  s[0].q = s[1].q = q.data();
  s[0].out = out.data();
  s[1].out = out.data() + 64;  // overlaps sequence 0's output
  REQUIRE_THROWS_AS(attention_decode(o, kv, std::span<const decode_sequence>(s, 2)), lutkit::error);
  s[1].out = nullptr;
  REQUIRE_THROWS_AS(attention_decode(o, kv, std::span<const decode_sequence>(s, 2)), lutkit::error);
  // shapes whose byte counts would wrap, or whose scratch no machine holds (refused before any
  // allocation; before these checks prefill wrapped its overlap check to 0 and asked for 22 TB)
  {
    auto big = o;
    big.heads_q = std::size_t(1) << 31;
    big.heads_kv = 1;
    big.head_dim = 1024;
    CHECK_THROWS_WITH(attention_prefill(big, q.data(), std::size_t(1) << 31, 0, kv, out.data()), Catch::Contains("heads_q"));
    CHECK_THROWS_WITH(attention_decode(big, q.data(), kv, out.data()), Catch::Contains("heads_q"));
    big.heads_q = 4096;
    CHECK_THROWS_WITH(attention_prefill(big, q.data(), std::size_t(1) << 31, 0, kv, out.data()),
                      Catch::Contains("n_q x heads_q x head_dim"));
    kv_cache_view longkv = kv;
    longkv.len = std::size_t(1) << 31;
    longkv.row_stride = std::ptrdiff_t(1) << 31;
    CHECK_THROWS_WITH(attention_prefill(o, q.data(), 2, 0, longkv, out.data()), Catch::Contains("spans"));
    decode_sequence many[64];
    for (auto& s : many) s.q = q.data();
    std::vector<float> outs(64 * 8);
    for (int b = 0; b < 64; ++b) many[b].out = outs.data() + b * 8;
    big.heads_q = 4096;
    big.heads_kv = 4096;
    CHECK_THROWS_WITH(attention_decode(big, kv, std::span<const decode_sequence>(many, 64)), Catch::Contains("2^36"));
  }
  // enum values outside their lists
  {
    auto oe = o;
    oe.backend = attention_backend(9);
    CHECK_THROWS_WITH(attention_prefill(oe, q.data(), 2, 3, kv, out.data()), Catch::Contains("attention_backend"));
    CHECK_THROWS_WITH(attention_decode(oe, q.data(), kv, out.data()), Catch::Contains("attention_backend"));
    oe = o;
    oe.mask = mask_kind(7);
    CHECK_THROWS_AS(attention_prefill(oe, q.data(), 2, 3, kv, out.data()), lutkit::error);
    oe = o;
    oe.exp = exp_kind(7);
    CHECK_THROWS_AS(attention_prefill(oe, q.data(), 2, 3, kv, out.data()), lutkit::error);
    oe = o;
    oe.precision = attention_precision(5);
    CHECK_THROWS_WITH(attention_prefill(oe, q.data(), 2, 3, kv, out.data()), Catch::Contains("precision"));
    CHECK_THROWS_WITH(attention_decode(oe, q.data(), kv, out.data()), Catch::Contains("precision"));
    kv_cache_view bt = kv;
    bt.type = kv_type(9);
    CHECK_THROWS_AS(attention_prefill(o, q.data(), 2, 3, bt, out.data()), lutkit::error);
  }
  if (!avx512_available()) {
    auto o6 = o;
    o6.backend = attention_backend::avx512;
    REQUIRE_THROWS_AS(attention_prefill(o6, q.data(), 2, 3, kv, out.data()), lutkit::error);
  }
  if (!amx_available()) {
    auto o8 = o;
    o8.backend = attention_backend::amx;
    REQUIRE_THROWS_AS(attention_prefill(o8, q.data(), 2, 3, kv, out.data()), lutkit::error);
  }
  if (!avx2_available()) {
    auto o7 = o;
    o7.backend = attention_backend::avx2;
    REQUIRE_THROWS_AS(attention_decode(o7, q.data(), kv, out.data()), lutkit::error);
  }
}

// ------------------------------------------------------------------ non-finite values
namespace {
// 1 where x is not finite
bool nonfinite(float x) { return !std::isfinite(x); }
const attention_precision both_precisions[2] = {attention_precision::fp32, attention_precision::bf16};
}  // namespace

TEST_CASE("attention prefill: a non-finite q, K or V value reaches exactly the rows that see it", "[attention]") {
  // causal, 2 KV heads of 2 query heads each, 130 queries at positions 0 .. 129 (3 chunks of 64
  // keys: the bad key sits in the first one, which later rows also read). Pokes, one per run:
  //   V[key 5, head 0, channel 3] = NaN or +inf: rows (i >= 5, heads 0, 1): channel 3 non-finite;
  //   K[key 70, head 1, channel 9] = NaN: rows (i >= 70, heads 2, 3): every channel and lse NaN;
  //   q[query 3, head 0, channel 0] = +inf: that row NaN;
  //   the additive mask +inf at (query 40, key 4): query 40's rows NaN;
  //   the additive mask -inf at (query 90, key 5) with V[5] = NaN: row 90 does not reach key 5.
  // Every other row: the bits of the clean run.
  // (reduced runs: each backend x precision pair on one of the two head sizes, in turn; `pair`
  // counts the d iterations, so pair / 2 is the pair's index)
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  int pair = 0;
  for (auto be : all_backends())
    for (auto prec : both_precisions)
      for (std::size_t d : {64, 128}) {
        if (lutkit_test::case_divisor() > 1 && (pair++ / 2 + (d == 128)) % 2 == 1) continue;
        const std::size_t n = 130, hq = 4, hkv = 2, G = 2;
        std::mt19937_64 rng(41 + d);
        attention_options o;
        o.heads_q = hq;
        o.heads_kv = hkv;
        o.head_dim = d;
        o.scale = float(1.0 / std::sqrt(double(d)));
        o.backend = be;
        o.precision = prec;
        for (int poke = 0; poke < 6; ++poke) {
          kv_store kv;
          make_kv(kv, rng, kv_type::f16, n, hkv, d, poke % 2 == 0);
          auto q = randn(rng, n * hq * d);
          std::vector<float> mask(n * n, 0.f);
          const bool use_mask = poke >= 4;
          std::vector<float> out0(n * hq * d), lse0(n * hq), out(n * hq * d), lse(n * hq);
          attention_prefill(o, q.data(), n, 0, kv.view, out0.data(), lse0.data(), use_mask ? mask.data() : nullptr, n);
          auto set_kv = [&](std::vector<uint16_t>& h, std::size_t key, std::size_t g, std::size_t c, float x) {
            h[std::size_t(std::ptrdiff_t(key) * kv.view.row_stride + std::ptrdiff_t(g) * kv.view.head_stride) + c] = f32_to_f16(x);
          };
          // expect(i, head): 0 clean, 1 channel 3 non-finite, 2 whole row NaN
          std::function<int(std::size_t, std::size_t)> expect;
          switch (poke) {
            case 0:
            case 1:
              set_kv(kv.hv, 5, 0, 3, poke == 0 ? nan : inf);
              expect = [](std::size_t i, std::size_t h) { return i >= 5 && h < 2 ? 1 : 0; };
              break;
            case 2:
              set_kv(kv.h, 70, 1, 9, nan);
              expect = [](std::size_t i, std::size_t h) { return i >= 70 && h >= 2 ? 2 : 0; };
              break;
            case 3:
              q[(3 * hq + 0) * d + 0] = inf;
              expect = [](std::size_t i, std::size_t h) { return i == 3 && h == 0 ? 2 : 0; };
              break;
            case 4:
              mask[40 * n + 4] = inf;
              expect = [](std::size_t i, std::size_t) { return i == 40 ? 2 : 0; };
              break;
            default:
              mask[90 * n + 5] = -inf;
              attention_prefill(o, q.data(), n, 0, kv.view, out0.data(), lse0.data(), mask.data(), n);
              set_kv(kv.hv, 5, 0, 3, nan);
              expect = [](std::size_t i, std::size_t h) { return i >= 5 && i != 90 && h < 2 ? 1 : 0; };
              break;
          }
          attention_prefill(o, q.data(), n, 0, kv.view, out.data(), lse.data(), use_mask ? mask.data() : nullptr, n);
          for (std::size_t i = 0; i < n; ++i)
            for (std::size_t h = 0; h < hq; ++h) {
              const std::size_t row = i * hq + h;
              const int e = expect(i, h);
              INFO("backend " << int(be) << " precision " << int(prec) << " d " << d << " poke " << poke << " query " << i
                              << " head " << h << " expect " << e << " (G " << G << ")");
              if (e == 2) {
                for (std::size_t c = 0; c < d; ++c) REQUIRE(std::isnan(out[row * d + c]));
                REQUIRE(std::isnan(lse[row]));
              } else if (e == 1) {
                REQUIRE(nonfinite(out[row * d + 3]));
                for (std::size_t c = 0; c < d; ++c)
                  if (c != 3) REQUIRE(std::memcmp(&out[row * d + c], &out0[row * d + c], 4) == 0);
                REQUIRE(std::memcmp(&lse[row], &lse0[row], 4) == 0);
              } else {
                REQUIRE(std::memcmp(&out[row * d], &out0[row * d], d * 4) == 0);
                REQUIRE(std::memcmp(&lse[row], &lse0[row], 4) == 0);
              }
            }
        }
      }
}

TEST_CASE("attention: overflowing logits give NaN rows", "[attention]") {
  // K = 1 everywhere, q = 1e37 in every channel of one row: q.k overflows float (64e37)
  for (auto be : all_backends())
    for (auto prec : both_precisions) {
      const std::size_t d = 64, n = 20;
      std::vector<uint16_t> K(n * d, f32_to_f16(1.f)), V(n * d, f32_to_f16(0.5f));
      kv_cache_view kv{K.data(), V.data(), kv_type::f16, n, std::ptrdiff_t(d), 0};
      attention_options o;
      o.heads_q = o.heads_kv = 1;
      o.head_dim = d;
      o.scale = 1.f;
      o.backend = be;
      o.precision = prec;
      std::vector<float> q(n * d, 0.01f), out(n * d), lse(n);
      for (std::size_t c = 0; c < d; ++c) q[7 * d + c] = 1e37f;
      attention_prefill(o, q.data(), n, 0, kv, out.data(), lse.data());
      for (std::size_t i = 0; i < n; ++i) {
        INFO("backend " << int(be) << " precision " << int(prec) << " query " << i);
        REQUIRE(std::isnan(lse[i]) == (i == 7));
        REQUIRE(std::isnan(out[i * d]) == (i == 7));
      }
      std::vector<float> o1(d);
      float l1 = 0;
      attention_decode(o, q.data() + 7 * d, kv, o1.data(), &l1);
      REQUIRE(std::isnan(l1));
      REQUIRE(std::isnan(o1[0]));
    }
}

TEST_CASE("attention decode: a non-finite K or V value reaches exactly the sequences that see it", "[attention]") {
  // 4 sequences x 4 query heads per KV head (16 rows: the packed tile where the set has it) over a
  // 700-key prefix: V[key 300, head 1, channel 2] = NaN; sequence 0 masks key 300 with -inf, so
  // only sequences 1 .. 3 (heads 4 .. 7) are non-finite in channel 2. Then K[key 10, head 0] = NaN:
  // every sequence's heads 0 .. 3 NaN; and q of sequence 2, head 6 = NaN: that row NaN.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (auto be : all_backends())
    for (auto prec : both_precisions) {
      const std::size_t d = 128, hq = 8, hkv = 2, n_seq = 4, L = 700;
      std::mt19937_64 rng(97);
      kv_store pre;
      make_kv(pre, rng, kv_type::f16, L, hkv, d, false);
      std::vector<kv_store> own(n_seq);
      std::vector<std::vector<float>> q(n_seq), out(n_seq), out0(n_seq), lse(n_seq), mask(n_seq);
      std::vector<decode_sequence> seqs(n_seq);
      attention_options o;
      o.heads_q = hq;
      o.heads_kv = hkv;
      o.head_dim = d;
      o.scale = 0.1f;
      o.backend = be;
      o.precision = prec;
      for (std::size_t b = 0; b < n_seq; ++b) {
        make_kv(own[b], rng, kv_type::f16, 3, hkv, d, false);
        q[b] = randn(rng, hq * d);
        out[b].assign(hq * d, 0.f);
        lse[b].assign(hq, 0.f);
        mask[b].assign(L + 3, 0.f);
        seqs[b].q = q[b].data();
        seqs[b].own = own[b].view;
        seqs[b].out = out[b].data();
        seqs[b].lse = lse[b].data();
        seqs[b].add_mask = mask[b].data();
      }
      mask[0][300] = -inf;
      attention_decode(o, pre.view, seqs);
      for (std::size_t b = 0; b < n_seq; ++b) out0[b] = out[b];
      auto at = [&](std::vector<uint16_t>& h, std::size_t key, std::size_t g, std::size_t c) -> uint16_t& {
        return h[std::size_t(std::ptrdiff_t(key) * pre.view.row_stride + std::ptrdiff_t(g) * pre.view.head_stride) + c];
      };
      at(pre.hv, 300, 1, 2) = f32_to_f16(nan);
      attention_decode(o, pre.view, seqs);
      for (std::size_t b = 0; b < n_seq; ++b)
        for (std::size_t h = 0; h < hq; ++h)
          for (std::size_t c = 0; c < d; ++c) {
            INFO("V poke: backend " << int(be) << " precision " << int(prec) << " seq " << b << " head " << h << " ch " << c);
            if (b > 0 && h >= 4 && c == 2)
              REQUIRE(std::isnan(out[b][h * d + c]));
            else
              REQUIRE(std::memcmp(&out[b][h * d + c], &out0[b][h * d + c], 4) == 0);
          }
      at(pre.h, 10, 0, 5) = f32_to_f16(nan);
      q[2][6 * d + 1] = nan;
      attention_decode(o, pre.view, seqs);
      for (std::size_t b = 0; b < n_seq; ++b)
        for (std::size_t h = 0; h < hq; ++h) {
          INFO("K / q poke: backend " << int(be) << " precision " << int(prec) << " seq " << b << " head " << h);
          const bool row_nan = h < 4 || (b == 2 && h == 6);
          REQUIRE(std::isnan(lse[b][h]) == row_nan);
          if (row_nan)
            for (std::size_t c = 0; c < d; ++c) REQUIRE(std::isnan(out[b][h * d + c]));
        }
    }
}

// ------------------------------------------------------------------ precision
namespace {
// a plain fp32 online softmax, key by key (the yardstick of the default precision): fp32 dot of
// the scaled query, std::exp in float, one rescale per key
void plain_fp32_row(const attention_options& o, const float* q, int64_t p, const kv_cache_view& kv, std::size_t g,
                    float* out) {
  const std::size_t d = o.head_dim;
  float m = -std::numeric_limits<float>::infinity(), l = 0.f;
  std::vector<float> acc(d, 0.f), qs(d);
  for (std::size_t c = 0; c < d; ++c) qs[c] = q[c] * o.scale;
  for (std::size_t j = 0; j < kv.len && int64_t(j) <= p; ++j) {
    const std::ptrdiff_t base = std::ptrdiff_t(j) * kv.row_stride + std::ptrdiff_t(g) * kv.head_stride;
    float s = 0.f;
    for (std::size_t c = 0; c < d; ++c) s = std::fma(qs[c], detail::kv_load(kv.k, kv.type, base + std::ptrdiff_t(c)), s);
    const float mn = std::max(m, s), a = std::exp(m - mn), w = std::exp(s - mn);
    for (std::size_t c = 0; c < d; ++c) acc[c] = acc[c] * a + w * detail::kv_load(kv.v, kv.type, base + std::ptrdiff_t(c));
    l = l * a + w;
    m = mn;
  }
  for (std::size_t c = 0; c < d; ++c) out[c] = acc[c] / l;
}
}  // namespace

TEST_CASE("attention prefill: the default precision is within 2x a plain fp32 online softmax", "[attention]") {
  // fp32 queries, fp16 K / V with V in [-1, 1]: random logits (q ~ N(0, 1)) and a sharp softmax
  // (logits of std ~ 8); the worst absolute error over every output against the double reference
  // (reduced runs: the last 32 of the 96 queries, the double reference's cost)
  for (auto be : all_backends())
    for (int sharp = 0; sharp < 2; ++sharp) {
      const std::size_t d = 128, hq = 4, hkv = 2, L = 600, n = lutkit_test::case_divisor() > 1 ? 32 : 96;
      const int64_t pos0 = int64_t(L - n);
      std::mt19937_64 rng(5150 + uint64_t(sharp));
      kv_store kv;
      make_kv(kv, rng, kv_type::f16, L, hkv, d, true);
      for (auto& x : kv.hv) x = f32_to_f16(std::tanh(f16_to_f32(x)));  // V in [-1, 1]
      const auto q = randn(rng, n * hq * d, sharp ? 8.f : 1.f);
      attention_options o;
      o.heads_q = hq;
      o.heads_kv = hkv;
      o.head_dim = d;
      o.scale = float(1.0 / std::sqrt(double(d)));
      o.backend = be;
      std::vector<float> out(n * hq * d), out16(n * hq * d), plain(d);
      attention_prefill(o, q.data(), n, pos0, kv.view, out.data());
      auto o16 = o;  // the bf16 opt-in, for the table of docs/attention.md (no bound asserted here)
      o16.precision = attention_precision::bf16;
      attention_prefill(o16, q.data(), n, pos0, kv.view, out16.data());
      double e_lut = 0, e_plain = 0, e_bf16 = 0;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t h = 0; h < hq; ++h) {
          const float* qr = q.data() + (i * hq + h) * d;
          const auto r = ref::attention_one(o, qr, pos0 + int64_t(i), kv.view, h / (hq / hkv), nullptr);
          plain_fp32_row(o, qr, pos0 + int64_t(i), kv.view, h / (hq / hkv), plain.data());
          for (std::size_t c = 0; c < d; ++c) {
            e_lut = std::max(e_lut, std::fabs(double(out[(i * hq + h) * d + c]) - r.out[c]));
            e_plain = std::max(e_plain, std::fabs(double(plain[c]) - r.out[c]));
            e_bf16 = std::max(e_bf16, std::fabs(double(out16[(i * hq + h) * d + c]) - r.out[c]));
          }
        }
      INFO("backend " << int(be) << (sharp ? " sharp" : " random") << ": lutkit " << e_lut << ", plain fp32 " << e_plain);
      WARN("attention precision, backend " << int(be) << (sharp ? " sharp" : " random") << ": default "
                                           << e_lut << ", plain fp32 online softmax " << e_plain << ", bf16 opt-in "
                                           << e_bf16);
      REQUIRE(e_plain > 0);
      REQUIRE(e_lut <= 2 * e_plain);
    }
  // one visible key: the output is that key's V, exactly
  for (auto be : all_backends()) {
    const std::size_t d = 64;
    std::mt19937_64 rng(8);
    kv_store kv;
    make_kv(kv, rng, kv_type::f16, 1, 1, d, false);
    attention_options o;
    o.heads_q = o.heads_kv = 1;
    o.head_dim = d;
    o.scale = 0.125f;
    o.backend = be;
    const auto q = randn(rng, d);
    std::vector<float> out(d);
    attention_prefill(o, q.data(), 1, 0, kv.view, out.data());
    for (std::size_t c = 0; c < d; ++c) REQUIRE(out[c] == detail::kv_load(kv.view.v, kv_type::f16, std::ptrdiff_t(c)));
  }
}

TEST_CASE("attention AMX: the calling thread's tile state is back after each prefill", "[attention][amx]") {
#if defined(LUTKIT_HAVE_AMX_ATT)
  if (!amx_available()) return;
  // (other tests leave this thread's tiles configured by direct kernel calls; a thread starts with
  // its creator's tile state, so they are released before the pool is made)
  detail::amx::restore_tiles(detail::dq_tile_state{});  // (released)
  REQUIRE_FALSE(detail::amx::tiles_configured());
  thread_pool pool(2);
  const std::size_t d = 128, hq = 8, hkv = 2, n_q = 40, len = 300;
  std::mt19937_64 rng(0xA77);
  kv_store kv;
  make_kv(kv, rng, kv_type::f16, len, hkv, d, false);
  const auto q = randn(rng, n_q * hq * d);
  attention_options o;
  o.heads_q = hq;
  o.heads_kv = hkv;
  o.head_dim = d;
  o.scale = 0.09f;
  o.backend = attention_backend::amx;
  detail::amx::tile_config other;  // a configuration another library (e.g. ggml) keeps loaded
  for (int t = 0; t < 8; ++t) {
    other.rows[t] = uint8_t(4 + t);
    other.colsb[t] = uint16_t(32 + 4 * t);
  }
  std::atomic<int> configured{0};
  for (auto prec : {attention_precision::fp32, attention_precision::bf16})
    for (thread_pool* p : {static_cast<thread_pool*>(nullptr), &pool})
      for (bool loaded : {false, true}) {
        INFO("precision " << int(prec) << (p ? ", pool" : "") << (loaded ? ", configuration loaded" : ""));
        o.precision = prec;
        if (loaded) detail::amx::use_config(other);
        std::vector<float> out(n_q * hq * d);
        attention_prefill(o, q.data(), n_q, int64_t(len - n_q), kv.view, out.data(), nullptr, nullptr, 0, p);
        detail::dq_tile_state now;
        detail::amx::save_tiles(now);
        if (loaded) {
          CHECK(std::memcmp(now.bytes, &other, sizeof now.bytes) == 0);
          detail::amx::restore_tiles(detail::dq_tile_state{});  // (released)
        } else {
          CHECK_FALSE(detail::amx::tiles_configured());
        }
        if (p) {
          configured = 0;
          p->run(2, [&](std::size_t) { configured += detail::amx::tiles_configured(); });
          CHECK(configured == 0);
        }
      }
#endif
}

TEST_CASE("attention: a non-finite query whose keys the caller masks with -inf sees no key", "[attention]") {
  // (fuzz finding: the non-finite check read the logits of keys the additive mask had removed)
  const float inf = std::numeric_limits<float>::infinity();
  for (auto be : all_backends())
    for (auto prec : both_precisions) {
      const std::size_t d = 64, n = 40;
      std::mt19937_64 rng(5);
      kv_store kv;
      make_kv(kv, rng, kv_type::f16, n, 1, d, false);
      attention_options o;
      o.heads_q = o.heads_kv = 1;
      o.head_dim = d;
      o.scale = 0.125f;
      o.backend = be;
      o.precision = prec;
      auto q = randn(rng, n * d);
      std::vector<float> mask(n * n, 0.f), out(n * d), lse(n);
      for (std::size_t j = 0; j < n; ++j) mask[7 * n + j] = -inf;  // row 7: every key masked
      for (std::size_t j = 0; j < n; ++j) mask[9 * n + j] = j == 2 ? 0.f : -inf;  // row 9: key 2 only
      q[7 * d] = inf;
      q[9 * d + 1] = std::numeric_limits<float>::quiet_NaN();
      attention_prefill(o, q.data(), n, 0, kv.view, out.data(), lse.data(), mask.data(), n);
      INFO("backend " << int(be) << " precision " << int(prec));
      for (std::size_t c = 0; c < d; ++c) REQUIRE(out[7 * d + c] == 0.f);
      REQUIRE((std::isinf(lse[7]) && lse[7] < 0));
      REQUIRE(std::isnan(lse[9]));  // row 9 reaches key 2 with a NaN query
      for (std::size_t i = 0; i < n; ++i)
        if (i != 7 && i != 9) REQUIRE(std::isfinite(lse[i]));
    }
}
