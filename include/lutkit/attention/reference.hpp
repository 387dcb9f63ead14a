// lutkit — the attention reference in double: plain softmax(scale * Q K^T (+ softcap, + mask)) V
// over the visible keys, two passes, every K/V element read from its storage type. Also the
// quantities the error bound of docs/attention.md is built from.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "driver.hpp"
#include "portable_kernels.hpp"

namespace lutkit::ref {

// One row's reference: a query at position p (fp32 q, d values) against keys of `kv` head g.
struct attention_row {
  std::vector<double> out;  // d values (0 if fully masked)
  double lse = -std::numeric_limits<double>::infinity();
  // for the error bound (all over visible keys, weights w = softmax):
  double max_abs_v = 0;    // max |v| over visible keys and channels
  double mean_gap = 0;     // sum_j w_j (m - s_j): the table exp's error grows with it
  double max_dot_abs = 0;  // max_j scale * sum_c |q_c k_jc|
  std::size_t visible = 0;
};

inline attention_row attention_one(const attention_options& o, const float* q, int64_t p, const kv_cache_view& kv,
                                   std::size_t g, const float* mask_row, const kv_cache_view* prefix = nullptr) {
  const std::size_t d = o.head_dim;
  attention_row res;
  res.out.assign(d, 0.0);
  // keys: optional prefix (positions 0..) then kv (positions after the prefix)
  struct key {
    const kv_cache_view* v;
    std::size_t i;
    std::size_t mi;
  };
  std::vector<key> keys;
  const std::size_t plen = prefix ? prefix->len : 0;
  for (std::size_t i = 0; i < plen + kv.len; ++i) {
    const int64_t kp = int64_t(i);
    bool vis = true;
    if (o.mask != mask_kind::none) vis = kp <= p && (o.mask != mask_kind::window || kp > p - int64_t(o.window));
    if (vis) keys.push_back(i < plen ? key{prefix, i, i} : key{&kv, i - plen, i});
  }
  std::vector<double> s(keys.size());
  auto elem = [&](const kv_cache_view& v, const void* base, std::size_t i, std::size_t c) {
    return double(detail::kv_load(base, v.type, std::ptrdiff_t(i) * v.row_stride + std::ptrdiff_t(g) * v.head_stride + std::ptrdiff_t(c)));
  };
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < keys.size(); ++j) {
    double dot = 0, dabs = 0;
    for (std::size_t c = 0; c < d; ++c) {
      const double kc = elem(*keys[j].v, keys[j].v->k, keys[j].i, c);
      dot += double(q[c]) * kc;
      dabs += std::fabs(double(q[c]) * kc);
    }
    double x = dot * double(o.scale);
    res.max_dot_abs = std::max(res.max_dot_abs, dabs * std::fabs(double(o.scale)));
    if (o.softcap > 0) x = double(o.softcap) * std::tanh(x / double(o.softcap));
    if (mask_row) x += double(mask_row[keys[j].mi]);
    s[j] = x;
    m = std::max(m, x);
  }
  if (keys.empty() || m == -std::numeric_limits<double>::infinity()) return res;
  double sum = 0;
  for (std::size_t j = 0; j < keys.size(); ++j) sum += std::exp(s[j] - m);
  for (std::size_t j = 0; j < keys.size(); ++j) {
    const double w = std::exp(s[j] - m) / sum;
    if (w == 0) continue;
    res.visible++;
    res.mean_gap += w * (m - s[j]);
    for (std::size_t c = 0; c < d; ++c) {
      const double vc = elem(*keys[j].v, keys[j].v->v, keys[j].i, c);
      res.out[c] += w * vc;
      res.max_abs_v = std::max(res.max_abs_v, std::fabs(vc));
    }
  }
  res.lse = m + std::log(sum);
  return res;
}

}  // namespace lutkit::ref
