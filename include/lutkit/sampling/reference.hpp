// lutkit — the sampling family's reference in double: straightforward softmax, std::sort with
// the tie rule (value descending, then lower index), no streaming, no chunks. The tests compare
// the kernels against it (tests/test_sampling*.cpp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "../core/error.hpp"
#include "autoregressive.hpp"
#include "dllm.hpp"
#include "logits.hpp"
#include "rng.hpp"
#include "row_reader.hpp"

namespace lutkit::reference {

// row r of the logits as doubles (the exact decoded values; NaN kept)
inline std::vector<double> logits_row(const logits_view& lv, std::size_t r) {
  std::vector<double> v(lv.vocab);
  for (std::size_t i = 0; i < lv.vocab; ++i) v[i] = double(detail::read_value(lv, r, uint32_t(i), {}));
  return v;
}

// (value, index) of the non-NaN entries, sorted by value descending, then lower index
inline std::vector<std::pair<double, uint32_t>> sorted_desc(const std::vector<double>& v) {
  std::vector<std::pair<double, uint32_t>> s;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isnan(v[i])) s.push_back({v[i], uint32_t(i)});
  std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  return s;
}

// Gumbel-perturbed scores v_i / T + g_i of one position (NaN stays NaN)
inline std::vector<double> gumbel_scores(const std::vector<double>& v, double T, detail::rng_key key) {
  std::vector<double> y(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) y[i] = v[i] / T - std::log(-std::log(detail::token_uniform_d(key, uint32_t(i))));
  return y;
}

struct dllm_position_ref {
  int32_t x0;
  double conf;
};

inline dllm_position_ref dllm_position(std::vector<double> v, const dllm_params& p, detail::rng_key key) {
  const double inf = std::numeric_limits<double>::infinity();
  if (p.eos == dllm_eos::suppress) v[std::size_t(p.eos_id)] = -inf;
  if (p.suppress_mask_token) v[std::size_t(p.mask_id)] = -inf;
  const auto s = sorted_desc(v);
  detail::require(!s.empty() && std::isfinite(s[0].first), "reference dllm: no finite maximum");
  const double M = s[0].first;
  double S = 0.0;
  for (const auto& e : s) S += std::exp(e.first - M);
  dllm_position_ref o{int32_t(s[0].second), 0.0};
  if (p.temperature > 0.f) {
    const auto ys = sorted_desc(gumbel_scores(v, double(p.temperature), key));
    o.x0 = int32_t(ys[0].second);
  }
  switch (p.confidence) {
    case dllm_confidence::probability: o.conf = std::exp(v[std::size_t(o.x0)] - M) / S; break;
    case dllm_confidence::margin:
      o.conf = (1.0 - (s.size() > 1 ? std::exp(s[1].first - M) : 0.0)) / S;
      break;
    case dllm_confidence::neg_entropy: {
      double h = 0.0;
      for (const auto& e : s) {
        const double q = std::exp(e.first - M) / S;
        if (q > 0.0) h += q * std::log(q);
      }
      o.conf = h;
      break;
    }
  }
  return o;
}

// dllm_sample's reference: x0 and confidence per position (confidence -inf where not sampled)
inline void dllm_sample(const logits_view& lv, std::size_t B, std::size_t L, const int32_t* x, const dllm_params& p,
                        int32_t* x0, double* conf) {
  const std::size_t end = std::min(p.block_end, L);
  for (std::size_t i = 0; i < B * L; ++i) {
    const std::size_t l = i % L;
    x0[i] = x[i];
    conf[i] = -std::numeric_limits<double>::infinity();
    if (l < p.block_begin || l >= end || x[i] != p.mask_id) continue;
    const auto o = dllm_position(logits_row(lv, i), p, detail::make_key(p.seed, i / L, l));
    x0[i] = o.x0;
    conf[i] = o.conf;
  }
}

// dllm_select's reference: std::sort of the candidates of each row with the tie rule
template <class C>
std::size_t dllm_select(const C* conf, std::size_t B, std::size_t L, const std::size_t* k, const dllm_params& p,
                        uint8_t* transfer) {
  std::size_t total = 0;
  for (std::size_t b = 0; b < B; ++b) {
    std::vector<std::pair<C, uint32_t>> c;
    for (std::size_t l = 0; l < L; ++l) {
      transfer[b * L + l] = 0;
      if (conf[b * L + l] > -std::numeric_limits<C>::infinity()) c.push_back({conf[b * L + l], uint32_t(l)});
    }
    std::sort(c.begin(), c.end(), [](const auto& a, const auto& d) { return a.first > d.first || (a.first == d.first && a.second < d.second); });
    for (std::size_t j = 0; j < c.size(); ++j) {
      const bool take = p.threshold_mode ? (j == 0 || c[j].first >= C(p.threshold)) : j < k[b];
      if (take) transfer[b * L + c[j].second] = 1, ++total;
    }
  }
  return total;
}

struct ar_result {
  int32_t token;
  std::vector<uint32_t> kept;      // final candidates, ascending token
  std::vector<double> prob;        // their probabilities in the draw
  double beta = 0.0, u = 0.0;
};

// ar_sample's reference for row r: the penalized logits, every stage on the sorted list
inline ar_result ar_row(const logits_view& lv, std::size_t r, const ar_params& p) {
  std::vector<double> z = logits_row(lv, r);
  if (detail::stage_on(p, ar_stage::penalties, lv.vocab)) {
    std::vector<uint32_t> count(lv.vocab, 0);
    for (std::size_t i = 0; i < p.history_len; ++i) ++count[std::size_t(p.history[i])];
    for (std::size_t t = 0; t < lv.vocab; ++t)
      if (count[t]) z[t] = double(detail::penalize(float(z[t]), count[t], p));
  }
  auto s = sorted_desc(z);
  detail::require(!s.empty() && std::isfinite(s[0].first), "reference ar: no finite maximum");
  ar_result o;
  const double M = s[0].first;
  if (detail::greedy(p)) {
    o.token = int32_t(s[0].second);
    o.kept = {s[0].second};
    o.prob = {1.0};
    return o;
  }
  double beta = 1.0;
  for (int i = 0; i < p.chain.n; ++i) {
    const ar_stage st = p.chain.s[i];
    if (!detail::stage_on(p, st, lv.vocab)) continue;
    if (st == ar_stage::temperature) beta /= double(p.temperature);
    if (st == ar_stage::top_k && s.size() > std::size_t(p.top_k)) s.resize(std::size_t(p.top_k));
    if (st == ar_stage::top_p) {
      double total = 0.0;
      for (const auto& e : s) total += std::exp(beta * (e.first - M));
      double cum = 0.0;
      std::size_t n = 0;
      while (n < s.size()) {
        cum += std::exp(beta * (s[n].first - M));
        ++n;
        if (cum >= double(p.top_p) * total) break;
      }
      s.resize(std::max<std::size_t>(n, 1));
    }
    if (st == ar_stage::min_p) {
      const double lp = std::log(double(p.min_p));
      s.erase(std::remove_if(s.begin(), s.end(), [&](const auto& e) { return !(beta * (e.first - M) >= lp); }), s.end());
    }
  }
  std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  double total = 0.0;
  for (const auto& e : s) total += std::exp(beta * (e.first - M));
  o.beta = beta;
  o.u = detail::row_uniform(p.seed, r);
  // top-p on the whole vocabulary by rejection (autoregressive.hpp, ar_reject_plan): proposals
  // at top-p's beta, from the top X (the values >= h) or, by uniform indices, from the rest;
  // accepted with probability exp((beta - b_p) (z - M)) when kept; after the last attempt the
  // inverse CDF over the kept set with the next uniform
  const auto rj = detail::ar_reject_plan_of(p, lv.vocab);
  int32_t accepted = -1;
  if (rj.on) {
    const std::size_t V = lv.vocab, blk = detail::ar_block;
    std::vector<float> bm;
    for (std::size_t b0 = 0; b0 < V; b0 += blk) {
      float m = -std::numeric_limits<float>::infinity();
      for (std::size_t i = b0; i < std::min(V, b0 + blk); ++i)
        if (float(z[i]) > m) m = float(z[i]);
      bm.push_back(m);
    }
    const float h = detail::ar_top_h(bm.data(), bm.size(), detail::portable_sampling_kernels());
    std::vector<uint32_t> X;
    if (h > -std::numeric_limits<float>::infinity())
      for (std::size_t i = 0; i < V; ++i)
        if (z[i] >= double(h)) X.push_back(uint32_t(i));
    if (h > -std::numeric_limits<float>::infinity() && X.size() <= detail::ar_reject_top_max) {
      auto q = [&](double v) { return v == v ? std::exp(rj.bp * (v - M)) : 0.0; };
      auto U = [&](uint64_t j) { return detail::row_uniform_n(p.seed, r, j); };
      double Fh = 0.0, S = 0.0, R = 0.0;
      for (uint32_t i : X) Fh += q(z[i]);
      for (double v : z) S += q(v);
      for (double v : z)
        if (v < double(h)) R += q(v);
      // the first token of `ids` (in order) whose cumulative q reaches target, among those with q > 0
      auto walk = [&](auto&& ids, double target) {
        double cum = 0.0;
        std::size_t last = V;
        for (std::size_t i : ids) {
          if (!(q(z[i]) > 0.0)) continue;
          last = i;
          cum += q(z[i]);
          if (cum >= target) break;
        }
        return last;
      };
      for (uint64_t k = 0; k < uint64_t(detail::ar_reject_attempts) && accepted < 0; ++k) {
        std::size_t t = V;
        if (U(4 * k) * S < Fh) {
          t = walk(X, U(4 * k + 1) * Fh);
        } else {
          for (int j = 0; j < detail::ar_reject_tries && t == V; ++j) {
            const auto i = std::size_t(detail::ar_rest_uniform(p.seed, r, k, uint64_t(j), 0) * double(V));
            if (z[i] < double(h) && detail::ar_rest_uniform(p.seed, r, k, uint64_t(j), 1) * q(double(h)) < q(z[i])) t = i;
          }
          if (t == V) {
            std::vector<std::size_t> rest;
            for (std::size_t i = 0; i < V; ++i)
              if (z[i] < double(h)) rest.push_back(i);
            t = walk(rest, U(4 * k + 3) * R);
          }
        }
        if (t == V || !(U(4 * k + 2) < std::exp((rj.bd - rj.bp) * (z[t] - M)))) continue;
        if (std::binary_search(s.begin(), s.end(), std::pair<double, uint32_t>(0.0, uint32_t(t)),
                               [](const auto& a, const auto& b) { return a.second < b.second; }))
          accepted = int32_t(t);
      }
      o.u = U(4 * uint64_t(detail::ar_reject_attempts));
    }
  }
  // inverse CDF in ascending token order, unnormalized (the kernel's arithmetic, so equal sets
  // give equal tokens)
  const double target = o.u * total;
  double cum = 0.0;
  o.token = -1;
  for (const auto& e : s) {
    const double q = std::exp(beta * (e.first - M));
    o.kept.push_back(e.second);
    o.prob.push_back(q / total);
    cum += q;
    if (o.token < 0 && cum >= target && q > 0.0) o.token = int32_t(e.second);
  }
  if (o.token < 0)
    for (std::size_t j = s.size(); j-- > 0;)
      if (o.prob[j] > 0.0) {
        o.token = int32_t(s[j].second);
        break;
      }
  if (accepted >= 0) o.token = accepted;
  return o;
}

}  // namespace lutkit::reference
