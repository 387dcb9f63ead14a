// Autoregressive sampling against the double reference: the final candidate set and token for
// random chains (llama.cpp's and vLLM's orders), penalties, every format and backend; k / p
// edge values, NaN / -inf, all-equal rows; categorical statistics; thread independence; errors.
#include <cstring>
#include <set>

#include "scaled_cases.hpp"

#include "sampling_common.hpp"

using namespace lutkit;
using namespace sampling_test;

namespace {

bool subset(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {  // both ascending
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

ar_params random_params(std::mt19937_64& rng, std::size_t V, std::vector<int32_t>& hist) {
  ar_params p;
  const float temps[] = {0.f, 0.5f, 1.f, 1.7f};
  p.temperature = temps[rng() % 4];
  const int32_t ks[] = {0, 1, int32_t(1 + rng() % 64), int32_t(V), int32_t(V) + 5, int32_t(1 + rng() % V)};
  p.top_k = ks[rng() % 6];
  const float ps[] = {0.f, 0.5f, 0.9f, 0.95f, 1.f, float(rng() % 1000) / 1000.f};
  p.top_p = ps[rng() % 6];
  p.min_p = rng() % 3 == 0 ? float(rng() % 100) / 400.f : 0.f;
  if (rng() % 3 == 0) {
    hist.resize(rng() % 40);
    for (auto& t : hist) t = int32_t(rng() % V);
    p.history = hist.data();
    p.history_len = hist.size();
    p.repetition_penalty = rng() % 2 ? 1.3f : 0.8f;
    p.presence_penalty = rng() % 2 ? 0.5f : -0.25f;
    p.frequency_penalty = rng() % 2 ? 0.1f : 0.f;
  }
  p.chain = rng() % 2 ? llama_cpp_chain : vllm_chain;
  p.seed = rng();
  return p;
}

// the first truncating stage is top-p on the whole vocabulary: the kernel's sum S there is the
// streaming pass's (relative error bound as in the dLLM test: u (chunk/16 + 12 + 2 nchunks) plus
// u sum e_i |d_i| / S, at most u (V + 1) with the crude bound e |d| <= 1/e)
bool top_p_first(const ar_params& p, std::size_t V) {
  if (detail::greedy(p)) return false;
  for (int i = 0; i < p.chain.n; ++i) {
    const ar_stage s = p.chain.s[i];
    if (!detail::stage_on(p, s, V)) continue;
    if (s == ar_stage::top_p) return true;
    if (s == ar_stage::top_k || s == ar_stage::min_p) return false;
  }
  return false;
}

}  // namespace

TEST_CASE("ar_sample matches the reference: chains, penalties, formats, chunks, batch rows", "[sampling][ar]") {
  std::mt19937_64 rng(4242);
  thread_pool pool(2);
  const logit_type types[] = {logit_type::f32, logit_type::bf16, logit_type::f16, logit_type::mxfp8};
  std::size_t compared = 0, same_set = 0;
  for (int it = 0; it < 60; ++it) {
    const std::size_t rows = 1 + rng() % 5;
    const std::size_t V = 1 + rng() % (it % 4 == 0 ? 6000 : 900);
    const std::size_t chunk = it % 3 == 0 ? 256 : it % 3 == 1 ? 1024 : sampling_chunk(target::host::desc);
    const auto d = random_logits(rng, types[it % 4], rows, V);
    std::vector<std::vector<int32_t>> hist(rows);
    std::vector<ar_params> ps(rows);
    for (std::size_t r = 0; r < rows; ++r) ps[r] = random_params(rng, V, hist[r]);
    std::vector<reference::ar_result> ref;
    for (std::size_t r = 0; r < rows; ++r) ref.push_back(reference::ar_row(d.view(), r, ps[r]));
    for (const auto be : backends()) {
      std::vector<int32_t> tok(rows);
      std::vector<detail::ar_trace> tr(rows);
      detail::ar_sample_impl(d.view(), ps.data(), tok.data(), it % 2 ? &pool : nullptr, be, chunk_target(chunk), tr.data());
      for (std::size_t r = 0; r < rows; ++r) {
        const auto& p = ps[r];
        INFO("backend " << backend_name(be) << " type " << logit_type_name(d.type) << " V=" << V << " row " << r
                        << " T=" << p.temperature << " k=" << p.top_k << " p=" << p.top_p << " min_p=" << p.min_p
                        << " hist " << p.history_len << " chain " << (p.chain.s[1] == ar_stage::top_k ? "llama.cpp" : "vLLM"));
        const auto row = reference::logits_row(d.view(), r);
        REQUIRE(tok[r] >= 0);
        REQUIRE(std::size_t(tok[r]) < V);
        REQUIRE(!std::isnan(row[std::size_t(tok[r])]));  // NaN never selected
        if (detail::greedy(p)) {
          REQUIRE(tok[r] == ref[r].token);
          continue;
        }
        ++compared;
        std::vector<uint32_t> kept = tr[r].kept;
        if (tr[r].all) {
          kept.clear();
          for (std::size_t t = 0; t < V; ++t)
            if (!std::isnan(row[t])) kept.push_back(uint32_t(t));
        }
        if (kept == ref[r].kept) {
          ++same_set;
          if (!tr[r].all) {
            REQUIRE(tok[r] == ref[r].token);  // same set, same arithmetic: the same token
          } else {
            // the whole-vocabulary draw compares u S with float chunk sums: the token's cumulative
            // interval in the reference contains u within S's relative error bound
            const std::size_t nch = (V + chunk - 1) / chunk;
            const double rel = u24 * (double(chunk) / 16 + 12 + 2 * double(nch) + double(V) + 1);
            double lo = 0, hi = 0;
            for (std::size_t j = 0; j < kept.size(); ++j) {
              if (kept[j] == uint32_t(tok[r])) {
                hi = lo + ref[r].prob[j];
                break;
              }
              lo += ref[r].prob[j];
            }
            REQUIRE(hi > lo);
            REQUIRE(ref[r].u >= lo - 2 * rel);
            REQUIRE(ref[r].u <= hi + 2 * rel);
          }
        } else {
          // only top-p on the whole vocabulary may cut elsewhere, within S's error bound: the set
          // lies between the reference's at p (1 - tol) and at p (1 + tol)
          REQUIRE(top_p_first(p, V));
          const std::size_t nch = (V + chunk - 1) / chunk;
          const double rel = u24 * (double(chunk) / 16 + 12 + 2 * double(nch) + double(V) + 1);
          auto lo = p, hi = p;
          lo.top_p = float(double(p.top_p) * (1 - 4 * rel));
          hi.top_p = std::min(1.f, float(double(p.top_p) * (1 + 4 * rel)));
          const auto rl = reference::ar_row(d.view(), r, lo), rh = reference::ar_row(d.view(), r, hi);
          REQUIRE(subset(rl.kept, kept));
          REQUIRE(subset(kept, rh.kept));
        }
        REQUIRE(std::binary_search(kept.begin(), kept.end(), uint32_t(tok[r])));
      }
    }
  }
  CHECK(same_set * 10 >= compared * 9);  // boundary cases are rare
}

// Top-p as the first truncation on rows of 16k-80k tokens (the threshold estimate from a sample,
// one collect pass, the bracketing of the collected values): both chains and a top-k after
// top-p, with and without peaked tokens, ties (values on a grid of 1/2, all equal), NaN / -inf,
// every format and backend; the kept set equals the reference's, or lies within the streamed
// sum's error bound of it.
constexpr ar_chain top_p_then_top_k{{ar_stage::temperature, ar_stage::top_p, ar_stage::top_k}, 3};
TEST_CASE("ar: top-p alone on large rows matches the reference (both chains, ties, peaks)", "[sampling][ar]") {
  std::mt19937_64 rng(9090);
  thread_pool pool(2);
  const logit_type types[] = {logit_type::f32, logit_type::bf16, logit_type::f16, logit_type::mxfp8};
  const float ps[] = {0.f, 0.2f, 0.5f, 0.8f, 0.9f, 0.95f, 0.99f, 0.999f};
  const float Ts[] = {0.5f, 0.8f, 1.f, 1.7f};
  std::size_t compared = 0, same_set = 0, rejection_rows = 0;
  for (int it = 0; it < 36; ++it) {
    const std::size_t rows = 1 + rng() % 3;
    const std::size_t V = 16385 + rng() % 64000;
    const auto d = random_logits(rng, types[it % 4], rows, V, true, it % 3 == 0 ? 8 : 0);
    std::vector<ar_params> pr(rows);
    for (auto& p : pr) {
      p.top_p = rng() % 3 == 0 ? float(rng() % 1000) / 1000.f : ps[rng() % 8];
      p.temperature = Ts[rng() % 4];
      const int ch = int(rng() % 5);
      p.chain = ch < 2 ? llama_cpp_chain : ch < 4 ? vllm_chain : top_p_then_top_k;
      p.min_p = rng() % 4 == 0 && p.chain.s[1] == ar_stage::top_k ? 0.05f : 0.f;  // after top-p (llama.cpp order)
      if (ch == 4) p.top_k = int32_t(1 + rng() % 3000);  // a top-k after top-p
      p.seed = rng();
    }
    std::vector<reference::ar_result> ref;
    for (std::size_t r = 0; r < rows; ++r) ref.push_back(reference::ar_row(d.view(), r, pr[r]));
    const std::size_t chunk = sampling_chunk(target::host::desc);
    for (const auto be : backends()) {
      std::vector<int32_t> tok(rows), fast(rows);
      std::vector<detail::ar_trace> tr(rows);
      detail::ar_sample_impl(d.view(), pr.data(), tok.data(), it % 2 ? &pool : nullptr, be, target::host::desc, tr.data());
      // without a trace the rejection draw decides membership from the top's mass, and makes the
      // kept set exact only when it must: the same tokens
      detail::ar_sample_impl(d.view(), pr.data(), fast.data(), it % 2 ? nullptr : &pool, be, target::host::desc, nullptr);
      for (std::size_t r = 0; r < rows; ++r) {
        const auto& p = pr[r];
        INFO("backend " << backend_name(be) << " type " << logit_type_name(d.type) << " V=" << V << " row " << r
                        << " T=" << p.temperature << " p=" << p.top_p << " min_p=" << p.min_p << " k=" << p.top_k
                        << " chain " << (p.chain.n == 3 ? "top-p, top-k" : p.chain.s[1] == ar_stage::top_k ? "llama.cpp" : "vLLM"));
        REQUIRE(fast[r] == tok[r]);
        if (detail::ar_reject_plan_of(p, V).on) ++rejection_rows;
        REQUIRE(top_p_first(p, V) == (p.top_p < 1.f));
        REQUIRE(!tr[r].all);
        const auto& kept = tr[r].kept;
        ++compared;
        if (kept == ref[r].kept) {
          ++same_set;
          REQUIRE(tok[r] == ref[r].token);
        } else {
          const std::size_t nch = (V + chunk - 1) / chunk;
          const double rel = u24 * (double(chunk) / 16 + 12 + 2 * double(nch) + double(V) + 1);
          auto lo = p, hi = p;
          lo.top_p = float(double(p.top_p) * (1 - 4 * rel));
          hi.top_p = std::min(1.f, float(double(p.top_p) * (1 + 4 * rel)));
          const auto rl = reference::ar_row(d.view(), r, lo), rh = reference::ar_row(d.view(), r, hi);
          REQUIRE(subset(rl.kept, kept));
          REQUIRE(subset(kept, rh.kept));
          REQUIRE(std::binary_search(kept.begin(), kept.end(), uint32_t(tok[r])));
        }
      }
    }
  }
  CHECK(same_set * 10 >= compared * 9);
  CHECK(rejection_rows * 3 >= compared);  // the rejection draw's chains are a good part of the cases
}

// The rejection draw of top-p (temperature after it, llama.cpp's order; or before it, vLLM's) is
// exact in distribution: the tokens of 24000 seeds against the kept set's probabilities (the
// double reference), chi-square over bins of the kept set (every token of probability >= 1/200,
// the rest in token order in bins of about 1/40). Drawing from the proposal without the
// acceptance test, or with the min-p stage ignored, gives chi-square values in the thousands.
TEST_CASE("ar: top-p's rejection draw is exact in distribution", "[sampling][ar][stats]") {
  // (sanitized and emulated runs, where a draw costs 100x: 600 draws, a check of the code paths
  // more than of the distribution)
  const std::size_t V = 40000, N = lutkit_test::case_divisor() > 1 ? 600 : 24000;
  struct cfg {
    ar_chain chain;
    float T, p, min_p;
  };
  const cfg cs[] = {{llama_cpp_chain, 0.7f, 0.9f, 0.f}, {vllm_chain, 1.3f, 0.8f, 0.f}, {llama_cpp_chain, 0.9f, 0.95f, 0.00035f}};
  std::vector<float> x(V);
  std::mt19937_64 rng(5150);
  std::normal_distribution<float> nd(0.f, 1.5f);
  for (auto& v : x) v = nd(rng);
  for (int k = 0; k < 12; ++k) x[rng() % V] = 6.f + 0.5f * float(k);  // a top of a few tokens above the bulk
  const auto lv = logits_view::f32(x.data(), 1, V);
  for (const auto& c : cs) {
    ar_params p;
    p.chain = c.chain, p.temperature = c.T, p.top_p = c.p, p.min_p = c.min_p;
    INFO("T " << c.T << " p " << c.p << " min_p " << c.min_p);
    REQUIRE(detail::ar_reject_plan_of(p, V).on);
    const auto ref = reference::ar_row(lv, 0, p);
    REQUIRE(ref.kept.size() > 200);
    std::vector<int> bin(V, -1);
    int nb = 0;
    double acc = 0.0;
    std::vector<double> pb;
    for (std::size_t j = 0; j < ref.kept.size(); ++j)
      if (ref.prob[j] >= 1.0 / 200) bin[ref.kept[j]] = nb++, pb.push_back(ref.prob[j]);
    for (std::size_t j = 0; j < ref.kept.size(); ++j) {
      if (bin[ref.kept[j]] >= 0) continue;
      if (acc == 0.0) pb.push_back(0.0), ++nb;
      bin[ref.kept[j]] = nb - 1;
      pb.back() += ref.prob[j];
      acc += ref.prob[j];
      if (acc >= 1.0 / 40) acc = 0.0;
    }
    std::vector<std::size_t> count(std::size_t(nb), 0);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < N; ++i) {
      p.seed = 1000 + i;
      int32_t t = -1;
      ar_sample(lv, &p, &t);
      REQUIRE(t >= 0);
      REQUIRE(bin[std::size_t(t)] >= 0);  // a kept token
      ++count[std::size_t(bin[std::size_t(t)])];
      // the first draws also with a trace, whose S and kept set are exact: the same token (the
      // draw without it decides from the chords' bracket on S where that settles it)
      if (i < N / 24) {
        detail::ar_trace tr;
        int32_t tt = -1;
        detail::ar_sample_impl(lv, &p, &tt, nullptr, sampling_backend::best, target::host::desc, &tr);
        differ += tt != t;
      }
    }
    CHECK(differ == 0);
    // (df = nb - 1: 7, 37 and 10 here; df + 6 sqrt(2 df) is the 1.2e-4, 4e-6 and 6e-5 upper quantile)
    const double df = double(nb - 1), x2 = chi2(count, pb, N);
    INFO("bins " << nb << " chi2 " << x2);
    CHECK(x2 < df + 6.0 * std::sqrt(2.0 * df));
  }
}

TEST_CASE("ar_sample_choices: log-probs and candidates against the double reference", "[sampling][ar]") {
  std::mt19937_64 rng(777);
  thread_pool pool(2);
  const logit_type types[] = {logit_type::f32, logit_type::bf16, logit_type::f16, logit_type::mxfp8};
  std::size_t compared = 0;
  for (int it = 0; it < 40; ++it) {
    const std::size_t rows = 1 + rng() % 4;
    const std::size_t V = 1 + rng() % (it % 4 == 0 ? 5000 : 700);
    const auto d = random_logits(rng, types[it % 4], rows, V);
    std::vector<std::vector<int32_t>> hist(rows);
    std::vector<ar_params> ps(rows);
    for (std::size_t r = 0; r < rows; ++r) ps[r] = random_params(rng, V, hist[r]);
    const std::size_t maxc = 1 + rng() % 30;
    for (const auto be : backends()) {
      std::vector<ar_choice> ch(rows);
      std::vector<int32_t> tok(rows);
      ar_sample(d.view(), ps.data(), tok.data(), nullptr, be);
      ar_sample_choices(d.view(), ps.data(), ch.data(), maxc, it % 2 ? &pool : nullptr, be);
      for (std::size_t r = 0; r < rows; ++r) {
        INFO("backend " << backend_name(be) << " type " << logit_type_name(d.type) << " V=" << V << " row " << r
                        << " T=" << ps[r].temperature << " k=" << ps[r].top_k << " p=" << ps[r].top_p);
        const auto& c = ch[r];
        REQUIRE(c.token == tok[r]);  // the same draw as ar_sample
        // log-softmax of the unprocessed row, in double
        const auto row = reference::logits_row(d.view(), r);
        double M = -INFINITY, S = 0;
        for (double z : row)
          if (z > -INFINITY) M = std::max(M, z);
        for (double z : row)
          if (z > -INFINITY) S += std::exp(z - M);
        REQUIRE(c.raw_logprob == Approx(row[std::size_t(c.token)] - M - std::log(S)).margin(1e-9));
        // candidates: most probable first, probabilities of the draw's distribution, summing to <= 1
        REQUIRE(!c.candidates.empty());
        REQUIRE(c.candidates.size() == std::min(maxc, c.support));
        for (std::size_t j = 1; j < c.candidates.size(); ++j) REQUIRE(c.candidates[j - 1].prob >= c.candidates[j].prob);
        const auto ref = reference::ar_row(d.view(), r, ps[r]);
        if (detail::greedy(ps[r])) {
          REQUIRE(c.logprob == 0.0);
          REQUIRE(c.support == 1);
          REQUIRE(c.candidates[0].token == c.token);
          continue;
        }
        std::size_t ref_support = 0;  // the reference keeps -inf entries (probability 0) where nothing cut them
        for (uint32_t t : ref.kept) ref_support += row[t] > -INFINITY;
        if (c.support != ref_support) continue;  // a top-p boundary case (the ar_sample test bounds it)
        ++compared;
        for (const auto& e : c.candidates) {
          const auto at = std::lower_bound(ref.kept.begin(), ref.kept.end(), uint32_t(e.token));
          REQUIRE(at != ref.kept.end());
          REQUIRE(*at == uint32_t(e.token));
          const double pr = ref.prob[std::size_t(at - ref.kept.begin())];
          REQUIRE(e.prob == Approx(pr).epsilon(1e-9).margin(1e-300));
        }
        const auto at = std::lower_bound(ref.kept.begin(), ref.kept.end(), uint32_t(c.token));
        REQUIRE(c.logprob == Approx(std::log(ref.prob[std::size_t(at - ref.kept.begin())])).margin(1e-9));
      }
    }
  }
  CHECK(compared > 20);
}

TEST_CASE("ar: k = 0 / 1 / V, p = 0 / 1, all-equal rows, -inf and NaN entries", "[sampling][ar]") {
  const std::size_t V = 1000;
  std::mt19937_64 rng(3);
  std::vector<float> lg(V);
  std::normal_distribution<float> nd(0.f, 2.f);
  for (auto& v : lg) v = nd(rng);
  lg[17] = 20.f;  // a clear argmax
  const auto lv = logits_view::f32(lg.data(), 1, V);
  for (const auto be : backends()) {
    INFO("backend " << backend_name(be));
    auto run = [&](const ar_params& p) {
      int32_t t = -1;
      detail::ar_trace tr;
      detail::ar_sample_impl(lv, &p, &t, nullptr, be, target::host::desc, &tr);
      return std::make_pair(t, tr);
    };
    ar_params p;
    p.top_k = 1;
    for (uint64_t s = 0; s < 20; ++s) {
      p.seed = s;
      CHECK(run(p).first == 17);
    }
    p.top_k = 0;  // off: the whole vocabulary
    CHECK(run(p).second.all);
    p.top_k = int32_t(V);
    CHECK(run(p).second.all);
    p.top_k = 0;
    p.top_p = 0.f;  // the top-1 only
    CHECK(run(p).first == 17);
    CHECK(run(p).second.kept == std::vector<uint32_t>{17});
    p.top_p = 1.f;
    CHECK(run(p).second.all);
    p.temperature = 0.f;
    CHECK(run(p).first == 17);
  }
  // all equal: top-k keeps the k lowest indices; greedy takes index 0
  std::vector<float> eq(V, 0.5f);
  const auto le = logits_view::f32(eq.data(), 1, V);
  for (const auto be : backends()) {
    ar_params p;
    p.top_k = 7;
    int32_t t;
    detail::ar_trace tr;
    detail::ar_sample_impl(le, &p, &t, nullptr, be, target::host::desc, &tr);
    CHECK(tr.kept == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6});
    p.temperature = 0.f;
    ar_sample(le, &p, &t, nullptr, be);
    CHECK(t == 0);
  }
  // NaN and -inf never drawn; an all-NaN row is an error
  std::vector<float> nn(V, NAN);
  for (std::size_t i = 0; i < V; i += 3) nn[i] = i % 2 ? -INFINITY : float(i % 7) * 0.1f;
  const auto ln = logits_view::f32(nn.data(), 1, V);
  for (const auto be : backends())
    for (uint64_t s = 0; s < 30; ++s) {
      ar_params p;
      p.seed = s;
      p.top_p = s % 2 ? 0.9f : 1.f;
      int32_t t;
      ar_sample(ln, &p, &t, nullptr, be);
      REQUIRE(std::isfinite(nn[std::size_t(t)]));
    }
  std::vector<float> allnan(V, NAN);
  ar_params p;
  int32_t t;
  for (const auto be : backends())
    CHECK_THROWS_WITH(ar_sample(logits_view::f32(allnan.data(), 1, V), &p, &t, nullptr, be),
                      Catch::Contains("no finite maximum"));
}

TEST_CASE("ar: categorical draws follow the truncated softmax (chi-square, false-alarm rate 0.001)", "[sampling][ar][stats]") {
  const float l[8] = {1.f, 0.2f, -0.5f, 2.f, 1.5f, 0.f, -2.f, 0.7f};
  const std::size_t V = 8, N = 10000;
  std::vector<float> lg(N * V);
  for (std::size_t i = 0; i < N; ++i) std::copy(l, l + V, lg.begin() + std::ptrdiff_t(i * V));
  const auto lv = logits_view::f32(lg.data(), N, V);
  struct cfg {
    float T;
    int k;
    float p, mp;
  } cfgs[] = {{1.f, 0, 1.f, 0.f}, {0.7f, 5, 1.f, 0.f}, {1.3f, 0, 0.8f, 0.f}, {1.f, 6, 0.9f, 0.1f}};
  for (const auto& c : cfgs)
    for (const auto be : backends()) {
      INFO("backend " << backend_name(be) << " T " << c.T << " k " << c.k << " p " << c.p << " min_p " << c.mp);
      std::vector<ar_params> ps(N);
      for (auto& p : ps) p.temperature = c.T, p.top_k = c.k, p.top_p = c.p, p.min_p = c.mp, p.seed = 11;
      std::vector<int32_t> tok(N);
      ar_sample(lv, ps.data(), tok.data(), nullptr, be);
      const auto ref = reference::ar_row(lv, 0, ps[0]);
      std::vector<std::size_t> cnt(ref.kept.size(), 0);
      for (auto t : tok) {
        const auto at = std::find(ref.kept.begin(), ref.kept.end(), uint32_t(t));
        REQUIRE(at != ref.kept.end());  // never outside the truncated set
        ++cnt[std::size_t(at - ref.kept.begin())];
      }
      if (ref.kept.size() > 1) CHECK(chi2(cnt, ref.prob, N) < chi2_crit_001(ref.kept.size() - 1));
    }
}

TEST_CASE("ar: the same bits on 1 and 2 threads (a row split over both)", "[sampling][ar]") {
  std::mt19937_64 rng(8);
  // a single row of 2.4 MB or of 256 KiB (the smallest that is split) is split over the threads
  for (const auto& [rows, V] : {std::pair<std::size_t, std::size_t>{1, 600000}, {1, 65536}, {3, 20000}}) {
    const auto d = random_logits(rng, logit_type::f32, rows, V, false);
    thread_pool pool(2);
    for (const auto be : backends())
      for (int c = 0; c < 3; ++c) {
        std::vector<ar_params> ps(rows);
        for (std::size_t r = 0; r < rows; ++r) {
          ps[r].seed = 100 + r + uint64_t(c);
          ps[r].top_p = c == 0 ? 0.9f : 1.f;           // top-p on the whole vocabulary
          ps[r].top_k = c == 2 ? 40 : 0;                // or top-k, or nothing
          ps[r].temperature = 0.8f;
        }
        std::vector<int32_t> a(rows), b(rows);
        std::vector<detail::ar_trace> ta(rows), tb(rows);
        const auto tgt = chunk_target(rows == 1 ? 8192 : 1024);
        detail::ar_sample_impl(d.view(), ps.data(), a.data(), nullptr, be, tgt, ta.data());
        detail::ar_sample_impl(d.view(), ps.data(), b.data(), &pool, be, tgt, tb.data());
        REQUIRE(a == b);
        for (std::size_t r = 0; r < rows; ++r) REQUIRE(ta[r].kept == tb[r].kept);
      }
  }
}

TEST_CASE("ar: bad parameters are clear errors", "[sampling][ar]") {
  std::vector<float> lg(2 * 10, 0.f);
  const auto lv = logits_view::f32(lg.data(), 2, 10);
  std::vector<ar_params> ps(2);
  std::vector<int32_t> t(2);
  auto run = [&]() { ar_sample(lv, ps.data(), t.data()); };
  REQUIRE_NOTHROW(run());
  auto bad = [&](auto set, const char* msg) {
    ps.assign(2, ar_params{});
    set(ps[1]);
    CHECK_THROWS_WITH(run(), Catch::Contains(msg) && Catch::Contains("row 1"));
  };
  bad([](ar_params& p) { p.temperature = -0.5f; }, "temperature");
  bad([](ar_params& p) { p.temperature = INFINITY; }, "temperature");
  bad([](ar_params& p) { p.top_k = -1; }, "top_k");
  bad([](ar_params& p) { p.top_p = 1.5f; }, "top_p");
  bad([](ar_params& p) { p.top_p = NAN; }, "top_p");
  bad([](ar_params& p) { p.min_p = -0.1f; }, "min_p");
  bad([](ar_params& p) { p.repetition_penalty = 0.f; }, "repetition_penalty");
  static const int32_t h[] = {3, 10};
  bad([](ar_params& p) { p.history = h; p.history_len = 2; }, "history token 10");
  bad([](ar_params& p) { p.history_len = 2; }, "null history");
  bad([](ar_params& p) { p.chain = ar_chain{{ar_stage::top_k, ar_stage::penalties}, 2}; }, "penalties must be the first");
  bad([](ar_params& p) { p.chain = ar_chain{{ar_stage::top_k, ar_stage::top_k}, 2}; }, "twice");
  bad([](ar_params& p) { p.chain = ar_chain{{ar_stage::top_k}, 1}; p.temperature = 0.f; }, "greedy");
  ps.assign(2, ar_params{});
  CHECK_THROWS_WITH(ar_sample(lv, ps.data(), nullptr), Catch::Contains("null"));
  CHECK_THROWS_WITH(ar_sample(logits_view::f32(lg.data(), 0, 10), ps.data(), t.data()), Catch::Contains("no rows"));
  // an unknown logit type (before: token 0 for every row, from an unfilled scratch buffer) or backend
  logits_view bt = lv;
  bt.type = logit_type(7);
  CHECK_THROWS_WITH(ar_sample(bt, ps.data(), t.data()), Catch::Contains("logit_type"));
  CHECK_THROWS_WITH(ar_sample(lv, ps.data(), t.data(), nullptr, sampling_backend(9)), Catch::Contains("sampling_backend"));
  // tokens over the logits (row 1) or over the params: refused, not computed into
  CHECK_THROWS_WITH(ar_sample(lv, ps.data(), reinterpret_cast<int32_t*>(lg.data()) + 10), Catch::Contains("overlap"));
  CHECK_THROWS_WITH(ar_sample(lv, ps.data(), reinterpret_cast<int32_t*>(ps.data())), Catch::Contains("overlap"));
  // rows x vocabulary that wraps
  CHECK_THROWS_AS(ar_sample(logits_view::f32(lg.data(), std::size_t(1) << 40, std::size_t(1) << 30), ps.data(), t.data()),
                  lutkit::error);
}

TEST_CASE("ar: kth_largest against nth_element (ties, -inf, orders, outliers, zeros, subnormals), every set",
          "[sampling][ar]") {
  std::mt19937_64 rng(20261202);
  for (int it = 0; it < 6000; ++it) {
    const auto& ks = detail::sampling_kernels_for(backends()[std::size_t(it) % backends().size()]);
    const std::size_t n = 1 + rng() % (it % 9 == 0 ? 5000 : 700), k = 1 + rng() % std::min<std::size_t>(n, it % 3 ? 70 : n);
    std::vector<float> x(n);
    std::normal_distribution<float> nd(0.f, 3.f);
    for (auto& v : x) v = nd(rng);
    if (it % 23 == 9)  // signed zeros among few values (the integer keys take -0 as +0)
      for (auto& v : x) v = rng() % 3 == 0 ? 0.f : rng() % 2 ? -0.f : float(int(rng() % 5) - 2);
    if (it % 29 == 10)  // subnormals and zeros: keys close together
      for (auto& v : x) v = std::ldexp(float(int(rng() % 9) - 4), -140);
    if (it % 31 == 11) x[rng() % n] = std::numeric_limits<float>::infinity();
    if (it % 5 == 1)
      for (auto& v : x) v = std::round(v);  // ties
    if (it % 7 == 2)
      for (std::size_t i = 0; i < n; i += 3) x[i] = -std::numeric_limits<float>::infinity();
    if (it % 11 == 3) std::sort(x.begin(), x.end());
    if (it % 11 == 4) std::sort(x.begin(), x.end(), std::greater<float>());
    if (it % 13 == 5) x.assign(n, 2.5f);  // all equal
    if (it % 13 == 6) {                   // -inf but one value
      x.assign(n, -std::numeric_limits<float>::infinity());
      x[rng() % n] = 1.f;
    }
    if (it % 17 == 7) x[rng() % n] = 1e30f;  // one far above: the others share a few bins
    if (it % 19 == 8) x[rng() % n] = 3e38f, x[rng() % n] = -3e38f;  // a range that overflows
    std::vector<float> y = x;
    std::nth_element(y.begin(), y.begin() + std::ptrdiff_t(k - 1), y.end(), std::greater<float>());
    INFO("it " << it << " n " << n << " k " << k);
    INFO("set " << ks.name);
    CHECK(detail::kth_largest(x.data(), n, k, ks) == y[k - 1]);
  }
}

// The candidates' sort by rank (ar_sort_better) against std::sort by ar_better: ties of values
// (token order breaks them), signed zeros, subnormals, +-inf, up to and beyond its 128 limit.
TEST_CASE("ar: ar_sort_better orders as std::sort by ar_better", "[sampling][ar]") {
  std::mt19937_64 rng(41);
  for (int it = 0; it < 3000; ++it) {
    const std::size_t n = rng() % (it % 10 == 0 ? 300 : 130);
    std::vector<detail::ar_cand> w(n);
    std::set<uint32_t> used;
    for (auto& e : w) {
      e.i = uint32_t(rng() % (it % 2 ? 1000 : 4000000000u));
      while (!used.insert(e.i).second) e.i = uint32_t(rng() % (it % 2 ? 1000 : 4000000000u));  // distinct tokens
      const int kind = int(rng() % 8);
      e.z = kind == 0   ? 0.f
            : kind == 1 ? -0.f
            : kind == 2 ? std::ldexp(float(rng() % 7) - 3.f, -140)
            : kind == 3 ? (rng() % 2 ? INFINITY : -INFINITY)
            : kind == 4 ? float(int(rng() % 5) - 2)
                        : std::normal_distribution<float>(0.f, 4.f)(rng);
    }
    auto ref = w;
    std::sort(ref.begin(), ref.end(), detail::ar_better);
    detail::ar_sort_better(w);
    INFO("it " << it << " n " << n);
    REQUIRE(w.size() == ref.size());
    for (std::size_t j = 0; j < n; ++j) {
      REQUIRE(w[j].i == ref[j].i);
      REQUIRE(std::memcmp(&w[j].z, &ref[j].z, 4) == 0);
    }
  }
}

// The rejection draw places a proposal below h in or out of top-p's kept set by the mass of the
// values better than it (ar_mass_better): its range holds the exact mass (double, token order
// breaking ties) within 2^-18 of the row's sum, and is exact where no value ties the token's; every
// format and kernel set, rows with ties, NaN / -inf and spikes, chunk and block boundaries.
TEST_CASE("ar: the mass better than a token brackets the exact one, every set", "[sampling][ar]") {
  std::mt19937_64 rng(20261204);
  const logit_type types[] = {logit_type::f32, logit_type::bf16, logit_type::f16, logit_type::mxfp8};
  std::size_t tried = 0, checked = 0, tied = 0;
  for (int it = 0; it < 48; ++it) {
    const std::size_t V = 1 + rng() % (it % 4 == 0 ? 70000 : 9000);
    const auto d = random_logits(rng, types[it % 4], 1, V, true, it % 3 == 0 ? 4 : 0);
    const auto lv = d.view();
    const auto z = reference::logits_row(lv, 0);
    double M = -INFINITY;
    for (double v : z)
      if (v == v && v > M) M = v;
    if (!std::isfinite(M)) continue;
    const std::size_t nb = (V + detail::ar_block - 1) / detail::ar_block;
    std::vector<float> bmax(nb, -INFINITY);
    for (std::size_t i = 0; i < V; ++i)
      if (float(z[i]) > bmax[i / detail::ar_block]) bmax[i / detail::ar_block] = float(z[i]);
    const double beta = 0.5 + double(rng() % 8) / 4;
    double S = 0.0;
    for (double v : z) S += v == v ? std::exp(beta * (v - M)) : 0.0;
    for (const auto be : backends()) {
      const auto& ks = detail::sampling_kernels_for(be);
      const std::size_t chunk = sampling_chunk(target::host::desc);
      std::vector<float> scratch(chunk);
      const detail::ar_row_ctx c{&lv, &ks, 0, chunk, {}, bmax.data(), nb, scratch.data(), false};
      for (int k = 0; k < 6; ++k) {
        const uint32_t t = uint32_t(rng() % V);
        ++tried;
        if (!(z[t] > -INFINITY)) continue;  // (a NaN or -inf token is never proposed)
        double G = 0.0;
        std::size_t ties = 0;
        for (std::size_t i = 0; i < V; ++i) {
          if (z[i] == z[t]) ++ties;
          if (z[i] > z[t] || (z[i] == z[t] && i < t)) G += std::exp(beta * (z[i] - M));
        }
        const auto g = detail::ar_mass_better(c, M, beta, float(z[t]));
        INFO("set " << ks.name << " type " << logit_type_name(d.type) << " V " << V << " token " << t << " ties "
                    << ties);
        const double tol = 0x1p-18 * S;
        CHECK(g.first <= G + tol);
        CHECK(G <= g.second + tol);
        if (ties == 1) CHECK(std::fabs(g.second - g.first) <= tol);
        ++checked;
        tied += ties > 1;
      }
    }
  }
  // (the number of kernel sets differs between targets: the counts relative to the tokens tried)
  CHECK(checked * 4 > tried * 3);  // most tokens finite
  CHECK(tied * 20 > tried);        // ties (the grid rows, bf16's and MXFP8's coarse values) are covered
}

// the double sum of the chords exp_bound_term(x[i], m, C), each checked against exp(beta (x - m))
// in double: within [1, 1.0616] of it (2^-12 more for the roundings), or 2^-126 where it is below
// 2^-126; lo / hi: the extreme ratios seen
static double checked_chords(const std::vector<float>& x, float m, float beta, float C, double& lo, double& hi) {
  double chords = 0.0;
  for (const float v : x) {
    const double a = detail::exp_bound_term(v, m, C);
    chords += a;
    const double t = v == v ? std::exp(double(beta) * (double(v) - double(m))) : 0.0;
    if (a == 0x1p-126) {
      CHECK(t <= 0x1p-126 * (1.0 + 0x1p-12));
      continue;
    }
    CHECK(a >= t * (1.0 - 0x1p-12));
    CHECK(a <= t * 1.0616 * (1.0 + 0x1p-12));
    hi = std::max(hi, a / t);
    lo = std::min(lo, a / t);
  }
  return chords;
}

TEST_CASE("sampling kernels: the chords' sum bounds the exp sum (sum_exp_bound, every set)", "[sampling]") {
  // each chord is within [1, 1.0615] of exp(beta (x - m)) (2^-12 more for the roundings), or 2^-126
  // below 2^-126; every set's sum of n chords within n 2^-24 of their double sum, as
  // autoregressive.hpp's ar_sum_bounds assumes; the tail lanes add nothing (a row of equal values
  // sums n chords of 1)
  std::mt19937_64 rng(20261201);
  std::uniform_real_distribution<float> ud(0.f, 1.f);
  double worst_hi = 0.0, worst_lo = 2.0;
  for (const auto be : backends()) {
    const auto& ks = detail::sampling_kernels_for(be);
    INFO("backend " << ks.name);
    for (int it = 0; it < lutkit_test::scaled_cases(300); ++it) {
      const std::size_t n = 1 + rng() % (it % 4 == 0 ? 40 : 1300);
      const auto d = random_logits(rng, logit_type::f32, 1, n);
      std::vector<float> x = d.f;
      if (it % 7 == 0) x[rng() % n] = -1e30f;  // far below: the 2^-126 floor
      if (it % 11 == 0)
        for (auto& v : x) v = v * 1e3f + 1e6f;  // large logits: m C far beyond 2^31 (an addend -m C loses y)
      INFO("it " << it << " n " << n);
      float mx = -std::numeric_limits<float>::infinity();
      for (float v : x)
        if (v == v && v > mx) mx = v;
      if (mx == -std::numeric_limits<float>::infinity()) continue;
      const float beta = it % 3 == 0 ? 1.f : 0.05f + 3.f * ud(rng);
      const float C = detail::exp_bound_scale(beta);
      const double chords = checked_chords(x, mx, beta, C, worst_lo, worst_hi);
      const double s = ks.sum_exp_bound(x.data(), n, mx, C, x.data(), n * sizeof(float));
      CHECK(std::fabs(s - chords) <= double(n) * 0x1p-24 * chords);
      // equal values: n chords of exp(0)
      std::vector<float> e(n, mx);
      const double se = ks.sum_exp_bound(e.data(), n, mx, C, nullptr, 0);
      const double one = detail::exp_bound_term(mx, mx, C);
      CHECK(std::fabs(one - 1.0) <= 0x1p-12);
      CHECK(std::fabs(se - double(n) * one) <= double(n) * 0x1p-24 * se);
    }
  }
  // the chord's range is used, not just allowed: its extremes 1 and 1.0615 are reached
  CHECK(worst_hi > 1.06);
  CHECK(worst_lo < 1.0 + 1e-3);
}

TEST_CASE("sampling kernels: max_sum_bound is max_argmax and the chords' sum from the caller's reference, every set",
          "[sampling]") {
  // the state and block maxima of max_argmax (the same bits); the reference kept where the chunk's
  // maximum stays within the headroom above it, else the chunk's maximum (-inf / inf: always);
  // the sum within n 2^-24 of the double sum of exp_bound_term from that reference, whose terms
  // above 1 (values above a reference from earlier chunks) bound exp(beta (x - ref)) as below it
  std::mt19937_64 rng(20261202);
  std::uniform_real_distribution<float> ud(0.f, 1.f);
  const float inf = std::numeric_limits<float>::infinity();
  int kept_above = 0, replaced = 0, cases = 0;
  for (const auto be : backends()) {
    const auto& ks = detail::sampling_kernels_for(be);
    INFO("backend " << ks.name);
    for (int it = 0; it < lutkit_test::scaled_cases(400); ++it) {
      ++cases;
      const std::size_t n = 1 + rng() % (it % 4 == 0 ? 40 : 1300);
      const uint32_t base = uint32_t(rng() % 100000);
      const auto d = random_logits(rng, logit_type::f32, 1, n);
      std::vector<float> x = d.f;
      if (it % 7 == 0) x[rng() % n] = -1e30f;
      if (it % 13 == 0) x[rng() % n] = x[rng() % n];  // (ties of the maximum, maybe)
      const float beta = it % 3 == 0 ? 1.f : 0.05f + 3.f * ud(rng);
      const float C = detail::exp_bound_scale(beta);
      detail::max_state want;
      if (it % 5 == 1) want.m1 = 1.f, want.i1 = 3;  // an earlier chunk's state
      detail::max_state got = want;
      std::vector<float> bw((n + detail::ar_block - 1) / detail::ar_block), bg(bw.size(), 7.f);
      detail::portable_sampling_kernels().max_argmax(x.data(), n, base, false, want, bw.data(), nullptr, 0);
      float cm = -inf;
      for (float v : x)
        if (v == v && v > cm) cm = v;
      // the reference: none, below the maximum (within the headroom or far), above it, +inf
      const float span = 60.f / (beta * 1.4427f);
      const float refs[] = {-inf, cm - span * ud(rng), cm - 3.f * span, cm + 5.f * ud(rng), inf};
      float ref = refs[it % 5];
      const float ref_in = ref;
      INFO("it " << it << " n " << n << " ref " << ref_in << " max " << cm);
      const double s = ks.max_sum_bound(x.data(), n, base, got, bg.data(), ref, C, x.data(), n * sizeof(float));
      CHECK(got.m1 == want.m1);
      CHECK(got.i1 == want.i1);
      for (std::size_t b = 0; b < bw.size(); ++b) CHECK((bg[b] == bw[b] || (bg[b] != bg[b] && bw[b] != bw[b])));
      if (std::isfinite(ref_in) && (cm == -inf || std::fma(cm - ref_in, C, 127.f * 0x1p23f) <= 191.f * 0x1p23f)) {
        CHECK(ref == ref_in);
        if (cm > ref_in) ++kept_above;
      } else {
        CHECK(ref == cm);
        if (std::isfinite(ref_in)) ++replaced;
      }
      if (!std::isfinite(ref)) continue;  // (a chunk of +inf, or of no finite value: no sum asked)
      double lo = 2.0, hi = 0.0;
      const double chords = checked_chords(x, ref, beta, C, lo, hi);
      CHECK(std::fabs(s - chords) <= double(n) * 0x1p-24 * chords);
    }
  }
  // references below the maximum are kept, and far ones replaced (each about a fifth of the cases)
  CHECK(kept_above > cases / 8);
  CHECK(replaced > cases / 8);
}

TEST_CASE("sampling kernels: every SIMD set against the portable one, ragged lengths, NaN / -inf / ties", "[sampling]") {
  // max / argmax / second max, selections and counts: the same values and indices; exp sums
  // within the polynomial's and the summation order's error (relative 2e-6 here: a vector sum of
  // n / 8 + 3 terms per lane against the portable 16 partial sums, both of positive terms; the
  // portable threshold masses are single running sums, count * u more);
  // Gumbel-max: an index whose portable y is within 1e-5 (absolute, |y| < 200) of the best
  const auto& ref = detail::portable_sampling_kernels();
  std::mt19937_64 rng(20261125);
  for (const auto be : backends()) {
    if (be == sampling_backend::portable) continue;
    const auto& ks = detail::sampling_kernels_for(be);
    INFO("backend " << ks.name);
    for (int it = 0; it < lutkit_test::scaled_cases(400); ++it) {
      const std::size_t n = 1 + rng() % (it % 4 == 0 ? 40 : 1300);
      const uint32_t base = uint32_t(rng() % 100000);
      const auto d = random_logits(rng, logit_type::f32, 1, n);
      const float* x = d.f.data();
      INFO("it " << it << " n " << n);
      float mx = -std::numeric_limits<float>::infinity();
      for (std::size_t i = 0; i < n; ++i)
        if (x[i] == x[i] && x[i] > mx) mx = x[i];
      // max / argmax / second max, from a fresh state and from one with an earlier maximum
      for (int mode = 0; mode < 4; ++mode) {
        const bool top2 = mode & 1, with_b = mode & 2;
        detail::max_state a, b;
        if (it % 3 == 0) a.m1 = b.m1 = a.m2 = b.m2 = 0.5f, a.i1 = b.i1 = 7;
        std::vector<float> ba((n + detail::ar_block - 1) / detail::ar_block + 1, 1.f), bb = ba;
        ref.max_argmax(x, n, base, top2, a, with_b ? ba.data() : nullptr, nullptr, 0);
        ks.max_argmax(x, n, base, top2, b, with_b ? bb.data() : nullptr, nullptr, 0);
        CHECK(a.m1 == b.m1);
        CHECK(a.i1 == b.i1);
        if (top2) CHECK(a.m2 == b.m2);
        if (with_b) CHECK(ba == bb);
      }
      if (mx == -std::numeric_limits<float>::infinity()) continue;
      const float beta = it % 2 ? 1.f : 0.37f;
      float ea = 0.f, eb = 0.f;
      const float sa = ref.sum_exp(x, n, mx, beta, &ea, nullptr, 0);
      const float sb = ks.sum_exp(x, n, mx, beta, &eb, x, n * sizeof(float));
      CHECK(std::fabs(double(sa) - double(sb)) <= 2e-6 * double(sa));
      CHECK(std::fabs(double(ea) - double(eb)) <= 2e-6 * std::fabs(double(ea)) + 1e-30);
      {
        detail::max_state a, b;
        const float fa = ref.max_sum_exp(x, n, base, it % 2 == 0, a, mx, beta, nullptr, nullptr, 0);
        const float fb = ks.max_sum_exp(x, n, base, it % 2 == 0, b, mx, beta, nullptr, x, n * sizeof(float));
        CHECK(std::fabs(double(fa) - double(fb)) <= 2e-6 * double(fa));
        CHECK(a.m1 == b.m1);
        CHECK(a.i1 == b.i1);
        if (it % 2 == 0) CHECK(a.m2 == b.m2);
      }
      {
        const detail::rng_key key{uint32_t(rng()), uint32_t(rng())};
        float ya = -std::numeric_limits<float>::infinity(), yb = ya;
        uint32_t ia = detail::no_index, ib = ia;
        ref.gumbel_argmax(x, n, base, key, beta, ya, ia);
        ks.gumbel_argmax(x, n, base, key, beta, yb, ib);
        REQUIRE(ib != detail::no_index);
        REQUIRE(ib >= base);
        REQUIRE(ib < base + n);
        const float yi = x[ib - base] * beta + detail::portable_sampling::gumbel(key, ib);
        CHECK(yi >= ya - 1e-5f);
        CHECK(std::fabs(yb - ya) <= 1e-5f);
      }
      {
        float t[detail::mass_thresholds];
        for (auto& v : t) v = x[rng() % n] == x[rng() % n] ? mx - float(rng() % 8) : mx - 6.f;
        for (auto& v : t)
          if (!(v == v)) v = mx;
        std::sort(t, t + detail::mass_thresholds);
        double ma[detail::mass_thresholds] = {}, mb[detail::mass_thresholds] = {};
        float ta = -INFINITY, tb = -INFINITY;
        ref.mass_ge(x, n, mx, beta, t, ma, &ta);
        ks.mass_ge(x, n, mx, beta, t, mb, &tb);
        float top = -INFINITY;  // the largest value >= t[0]
        for (std::size_t i = 0; i < n; ++i)
          if (x[i] >= t[0] && x[i] > top) top = x[i];
        CHECK(ta == top);
        CHECK(tb == top);
        uint32_t ca[detail::mass_thresholds], cb[detail::mass_thresholds];
        for (int j = 0; j < detail::mass_thresholds; ++j) ca[j] = cb[j] = uint32_t(j);  // (count_ge adds)
        ref.count_ge(x, n, t, ca, nullptr, nullptr);
        ks.count_ge(x, n, t, cb, nullptr, nullptr);
        float loa = INFINITY, hia = -INFINITY, lob = INFINITY, hib = -INFINITY, lo = INFINITY, hi = -INFINITY;
        ref.count_ge(x, n, nullptr, nullptr, &loa, &hia);
        ks.count_ge(x, n, nullptr, nullptr, &lob, &hib);
        for (std::size_t i = 0; i < n; ++i) {
          if (x[i] > -INFINITY && x[i] < lo) lo = x[i];
          if (x[i] > hi) hi = x[i];
        }
        CHECK(loa == lo);
        CHECK(lob == lo);
        CHECK(hia == hi);
        CHECK(hib == hi);
        for (int j = 0; j < detail::mass_thresholds; ++j) {
          std::size_t cnt = 0;
          for (std::size_t i = 0; i < n; ++i) cnt += x[i] >= t[j] ? 1 : 0;
          // (the portable mass is one running float sum: (count - 1) u of it on top)
          CHECK(std::fabs(ma[j] - mb[j]) <= (2e-6 + double(cnt) * u24) * ma[j]);
          CHECK(ca[j] == cnt + std::size_t(j));
          CHECK(cb[j] == cnt + std::size_t(j));
        }
        std::vector<uint32_t> ixa(n), ixb(n);
        std::vector<float> va(n), vb(n);
        const std::size_t na = ref.collect_ge(x, n, base, t[3], ixa.data(), va.data());
        const std::size_t nb = ks.collect_ge(x, n, base, t[3], ixb.data(), vb.data());
        REQUIRE(na == nb);
        ixa.resize(na), ixb.resize(nb), va.resize(na), vb.resize(nb);
        CHECK(ixa == ixb);
        CHECK(va == vb);
        // the band [t[2], t[5]) of those pairs, to other arrays and in place
        std::vector<uint32_t> ra(na), rb(na);
        std::vector<float> wa(na), wb(na);
        const std::size_t ka = ref.collect_range(va.data(), ixa.data(), na, t[2], t[5], wa.data(), ra.data());
        const std::size_t kb = ks.collect_range(vb.data(), ixb.data(), na, t[2], t[5], vb.data(), ixb.data());
        REQUIRE(ka == kb);
        for (std::size_t i = 0; i < ka; ++i) {
          CHECK(wa[i] == vb[i]);
          CHECK(ra[i] == ixb[i]);
        }
        // the values alone (no indices), in place
        std::vector<float> vc(va);
        const std::size_t kc = ks.collect_range(vc.data(), nullptr, na, t[2], t[5], vc.data(), nullptr);
        REQUIRE(kc == ka);
        for (std::size_t i = 0; i < kc; ++i) CHECK(vc[i] == wa[i]);
      }
      {
        // select_ge: the values >= t and their bitmap, from a dirty output and a zeroed bitmap
        // (n not a multiple of 8 only at the row's end: here the whole x), and a stretch at an
        // offset of 8 into the same bitmap
        const float t = it % 5 == 0 ? -INFINITY : x[rng() % n];
        std::vector<float> va(n + 16, 7.f), vb(n + 16, 7.f);
        std::vector<uint8_t> ba(n / 8 + 8, 0), bb(n / 8 + 8, 0);
        const std::size_t ca = ref.select_ge(x, n, t, va.data(), ba.data());
        const std::size_t cb = ks.select_ge(x, n, t, vb.data(), bb.data());
        std::size_t cnt = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const bool in = x[i] >= t;
          CHECK(bool(ba[i / 8] >> (i % 8) & 1) == in);
          if (in) CHECK(va[cnt++] == x[i]);
        }
        CHECK(ca == cnt);
        REQUIRE(cb == ca);
        CHECK(ba == bb);
        for (std::size_t i = 0; i < ca; ++i) CHECK(vb[i] == va[i]);
        if (n > 8) {
          std::vector<uint8_t> bc(n / 8 + 8, 0);
          std::vector<float> vc(n + 16);
          const std::size_t cc = ks.select_ge(x + 8, n - 8, t, vc.data(), bc.data() + 1);
          CHECK(bc[0] == 0);
          for (std::size_t i = 8; i < n; ++i) CHECK(bool(bc[i / 8] >> (i % 8) & 1) == bool(ba[i / 8] >> (i % 8) & 1));
          CHECK(cc == ca - std::size_t(__builtin_popcount(ba[0])));
        }
        // sum_exp_ge: the exp sum over the values >= t, against the double sum
        if (t > -INFINITY) {
          double sd = 0.0;
          for (std::size_t i = 0; i < n; ++i)
            if (x[i] >= t) sd += std::exp(double(beta) * (double(x[i]) - double(mx)));
          const double sa = ref.sum_exp_ge(x, n, mx, beta, t), sb = ks.sum_exp_ge(x, n, mx, beta, t);
          CHECK(std::fabs(sa - sd) <= 2e-6 * sd + 1e-30);
          CHECK(std::fabs(sb - sd) <= 2e-6 * sd + 1e-30);
        }
      }
    }
  }
}

TEST_CASE("sampling kernels: exp sums of logits far from 0 against the double sums (the one-fma exponent, its fallback)",
          "[sampling]") {
  // Logits around offsets from 0 to 1e30 and several beta: where |beta log2(e) m| <= 2^20 the sets
  // compute the exponent as one fma and correct the sums by 2^-d once (sampling/body.inl,
  // log2_units); beyond it, as (x - m) c. Every exp sum (sum_exp with its entropy sum,
  // max_sum_exp from the maximum and from a reference below it, sum_exp_ge, mass_ge) against the
  // double sums of the same floats: relative 2e-6, the entropy sum 2e-6 of the sum of its terms'
  // magnitudes.
  std::mt19937_64 rng(20261203);
  const float offsets[] = {0.f, -2500.f, 3000.f, 6.5e5f, 2e6f, 1e30f, -1e30f};
  const float betas[] = {1.f, 0.37f, 40.f};
  for (const auto be : backends()) {
    const auto& ks = detail::sampling_kernels_for(be);
    INFO("backend " << ks.name);
    for (int it = 0; it < lutkit_test::scaled_cases(140); ++it) {
      const float off = offsets[it % 7], beta = betas[(it / 7) % 3];
      const std::size_t n = 1 + rng() % 900;
      std::normal_distribution<float> nd(0.f, 3.f / beta);
      std::vector<float> x(n);
      for (auto& v : x) v = off + nd(rng);
      INFO("it " << it << " n " << n << " offset " << off << " beta " << beta);
      const float mx = *std::max_element(x.begin(), x.end());
      for (const float ref : {mx, mx - 2.f / beta}) {
        double sd = 0.0, ed = 0.0, em = 0.0;
        for (float v : x) {
          const double y = double(beta) * (double(v) - double(ref)), e = std::exp(y);
          sd += e, ed += e * y, em += std::fabs(e * y);
        }
        float ent = 0.f;
        const float s = ks.sum_exp(x.data(), n, ref, beta, &ent, nullptr, 0);
        CHECK(std::fabs(double(s) - sd) <= 2e-6 * sd);
        CHECK(std::fabs(double(ent) - ed) <= 2e-6 * em + 1e-30);
        detail::max_state st;
        float ent2 = 0.f;
        const float f = ks.max_sum_exp(x.data(), n, 0, it % 2 == 0, st, ref, beta, &ent2, nullptr, 0);
        CHECK(std::fabs(double(f) - sd) <= 2e-6 * sd);
        CHECK(std::fabs(double(ent2) - ed) <= 2e-6 * em + 1e-30);
        CHECK(st.m1 == mx);
      }
      const float t = x[rng() % n];
      double sg = 0.0;
      for (float v : x)
        if (v >= t) sg += std::exp(double(beta) * (double(v) - double(mx)));
      CHECK(std::fabs(double(ks.sum_exp_ge(x.data(), n, mx, beta, t)) - sg) <= 2e-6 * sg);
      float th[detail::mass_thresholds];
      for (auto& v : th) v = x[rng() % n];
      std::sort(th, th + detail::mass_thresholds);
      double mass[detail::mass_thresholds] = {};
      float top = -INFINITY;
      ks.mass_ge(x.data(), n, mx, beta, th, mass, &top);
      for (int j = 0; j < detail::mass_thresholds; ++j) {
        double md = 0.0;
        std::size_t cnt = 0;
        for (float v : x)
          if (v >= th[j]) md += std::exp(double(beta) * (double(v) - double(mx))), ++cnt;
        // (the portable mass is one running float sum: count u of it on top)
        CHECK(std::fabs(mass[j] - md) <= (2e-6 + double(cnt) * u24) * md);
      }
    }
  }
}

TEST_CASE("sampling kernels: Gumbel-max over a row is the maximum of its tokens' own y, bit for bit (skipped vectors)",
          "[sampling]") {
  // gumbel_argmax skips the logs of a vector none of whose lanes can beat the best y so far; the
  // result must be the one of computing every token: each token's y from a call on it alone
  // (nothing to skip), the row's result from calls over chunks carrying the best along.
  std::mt19937_64 rng(20261204);
  for (const auto be : backends()) {
    const auto& ks = detail::sampling_kernels_for(be);
    INFO("backend " << ks.name);
    for (int it = 0; it < lutkit_test::scaled_cases(40); ++it) {
      const std::size_t n = 1 + rng() % 3000;
      const float beta = it % 3 == 0 ? 1.f : it % 3 == 1 ? 0.25f : 8.f;
      const float off = it % 4 == 3 ? 5e4f : 0.f;
      std::normal_distribution<float> nd(0.f, it % 2 ? 3.f : 0.3f);
      std::vector<float> x(n);
      for (auto& v : x) v = it % 6 == 5 ? off : off + nd(rng);  // (constant rows: the noise alone decides)
      if (it % 5 == 4) x[rng() % n] = -INFINITY;
      const detail::rng_key key{uint32_t(rng()), uint32_t(rng())};
      const uint32_t base = uint32_t(rng() % 1000);
      float want = -INFINITY;
      uint32_t wi = detail::no_index;
      for (std::size_t i = 0; i < n; ++i) {
        float y = -INFINITY;
        uint32_t yi = detail::no_index;
        ks.gumbel_argmax(x.data() + i, 1, base + uint32_t(i), key, beta, y, yi);
        if (yi != detail::no_index && y > want) want = y, wi = yi;
      }
      float got = -INFINITY;
      uint32_t gi = detail::no_index;
      const std::size_t chunk = 1 + rng() % 1024;
      for (std::size_t b = 0; b < n; b += chunk)
        ks.gumbel_argmax(x.data() + b, std::min(chunk, n - b), base + uint32_t(b), key, beta, got, gi);
      INFO("it " << it << " n " << n << " chunk " << chunk);
      CHECK(gi == wi);
      CHECK(std::memcmp(&got, &want, 4) == 0);
    }
  }
}
