// Attention tests: data, the run of a case through lutkit, and the comparison with the double
// reference under the error bound derived below.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>

#include "scaled_cases.hpp"

namespace att_test {
using namespace lutkit;

constexpr double u = 1.0 / 16777216.0;  // fp32 unit roundoff 2^-24
constexpr double ub = 1.0 / 512.0;      // bf16 unit roundoff 2^-9
constexpr double uh = 1.0 / 2048.0;     // fp16 unit roundoff 2^-11 (the table exp's input)
constexpr double eps_poly = 4 * u;      // exp_poly's relative error, asserted by "attention exp"

inline bool avx512_available() {
  try {
    (void)detail::att_kernels_for(attention_backend::avx512);
    return true;
  } catch (const lutkit::error&) {
    return false;
  }
}

inline bool avx2_available() {
  try {
    (void)detail::att_kernels_for(attention_backend::avx2);
    return true;
  } catch (const lutkit::error&) {
    return false;
  }
}

inline bool amx_available() {
  try {
    (void)detail::att_kernels_for(attention_backend::amx);
    return true;
  } catch (const lutkit::error&) {
    return false;
  }
}

// The SIMD backend of randomized iteration `it`: `best` (AMX or AVX-512 where the CPU has them),
// every other iteration the AVX2 step where the CPU has AVX2 (on an AVX2-only CPU both are the
// AVX2 step), and on an AMX CPU every fourth the AVX-512 set (which `best` no longer picks there).
inline attention_backend simd_backend(int it) {
  if (it % 2 == 1 && avx2_available()) return attention_backend::avx2;
  if (it % 4 == 2 && amx_available()) return attention_backend::avx512;
  return attention_backend::best;
}
// Every backend this CPU runs: the portable one, the best, the AVX2 step, and on an AMX CPU the
// AVX-512 set beside `best` (AMX).
inline std::vector<attention_backend> all_backends() {
  std::vector<attention_backend> b{attention_backend::portable, attention_backend::best};
  if (avx2_available()) b.push_back(attention_backend::avx2);
  if (amx_available()) b.push_back(attention_backend::avx512);
  return b;
}
// whether a backend runs the packed bf16 tile when asked for (AVX-512 BF16 or AMX)
inline bool has_bf16_tile(attention_backend be) {
  return (be == attention_backend::best || be == attention_backend::avx512 || be == attention_backend::amx) &&
         avx512_available();
}

// A KV cache in storage type t, head-major or token-major, with padding in its strides.
struct kv_store {
  kv_type type;
  std::vector<uint16_t> h;  // f16 / bf16
  std::vector<float> f;
  kv_cache_view view;
  std::vector<uint16_t> hv;
  std::vector<float> fv;
};
inline uint16_t to_storage(kv_type t, float x) { return t == kv_type::f16 ? f32_to_f16(x) : f32_to_bf16(x); }

inline void make_kv(kv_store& s, std::mt19937_64& rng, kv_type t, std::size_t len, std::size_t hkv, std::size_t d,
                    bool token_major, float kscale = 1.f, bool bf16_exact = false) {
  std::uniform_int_distribution<int> pad(0, 3);
  const std::size_t padr = std::size_t(pad(rng)) * 8, padh = std::size_t(pad(rng)) * 16;
  std::ptrdiff_t rs, hs;
  std::size_t total;
  if (token_major) {
    rs = std::ptrdiff_t(hkv * d + padr);
    hs = std::ptrdiff_t(d);
    total = std::max<std::size_t>(1, len) * std::size_t(rs);
  } else {
    rs = std::ptrdiff_t(d + padr);
    hs = std::ptrdiff_t((len + 3) * std::size_t(rs) + padh);
    total = hkv * std::size_t(hs);
  }
  std::normal_distribution<float> nd(0.f, 1.f);
  s.type = t;
  auto gen = [&](float sc) {
    float x = nd(rng) * sc;
    if (bf16_exact) x = round_to_bf16(x);
    return x;
  };
  if (t == kv_type::f32) {
    s.f.resize(total);
    s.fv.resize(total);
    for (auto& x : s.f) x = gen(kscale);
    for (auto& x : s.fv) x = gen(1.f);
  } else {
    s.h.resize(total);
    s.hv.resize(total);
    for (auto& x : s.h) x = to_storage(t, gen(kscale));
    for (auto& x : s.hv) x = to_storage(t, gen(1.f));
  }
  s.view.k = t == kv_type::f32 ? static_cast<const void*>(s.f.data()) : s.h.data();
  s.view.v = t == kv_type::f32 ? static_cast<const void*>(s.fv.data()) : s.hv.data();
  s.view.type = t;
  s.view.len = len;
  s.view.row_stride = rs;
  s.view.head_stride = hs;
}

// The error bound of one output row (docs/attention.md, "Error bound"). Per-weight relative
// error eta (of weight w_j = exp(s_j - m) after normalization), first order:
//   logits: fp32 dot of d terms after the fp32 scaling of q: (d + 4) u * A, A = scale sum|q k|;
//           bf16 path: q and k rounded to bf16: + 2 ub * A (the products are exact in fp32);
//           softcap: tanh from exp_poly: + 12 u * cap; additive mask: + u (A + |mask|max);
//   exp:    poly: eps_poly per exp factor; a weight carries its own factor and one alpha per
//           change of the running max (<= chunks), each rescale rounding u; the rounding of the
//           exp argument x = s - m (u |x|) telescopes over the factors to 2 u (m - s_j);
//           table: the fp16 rounding of each factor's argument, uh |x| + u, telescopes to
//           (uh + u)(m - s_j) + chunks * 2 u;
//           weighted by w_j these gap terms give (.) * mean_gap;
//   bf16 path: P rounded to bf16 (the row sum of the rounded weights): + ub.
// A relative perturbation eta_j of the weights moves the output by
//   |sum_j w_j eta_j (v_j - O)| / (1 - eta) <= 2 maxv eta / (1 - eta);
// then the fp32 sums: sum_j p_j v_j and sum_j p_j over n visible keys: 2 gamma_n maxv; the
// bf16 rounding of V (f16 / f32 V on the bf16 path): ub maxv; the final division: u maxv.
struct bound_in {
  bool bf16 = false;
  bool table = false;
  double softcap = 0;
  double mask_max = -1;  // < 0: no additive mask
  std::size_t chunks = 1;
  kv_type type = kv_type::f32;
};
inline double row_eta(const ref::attention_row& r, std::size_t d, const bound_in& b) {
  double dot = (double(d) + 4) * u + (b.bf16 ? 2 * ub + ub * ub : 0.0);
  double eta = dot * r.max_dot_abs;
  if (b.softcap > 0) eta += 12 * u * b.softcap;
  if (b.mask_max >= 0) eta += u * (r.max_dot_abs + b.mask_max);
  if (b.table) eta += (uh + u) * r.mean_gap + double(b.chunks) * 2 * u;
  else eta += double(b.chunks) * (eps_poly + u) + 2 * u * r.mean_gap;
  if (b.bf16) eta += ub;
  return eta;
}
inline double row_bound(const ref::attention_row& r, std::size_t d, const bound_in& b) {
  const double eta = row_eta(r, d, b);
  const double n = double(r.visible + 2);
  double e = 2 * r.max_abs_v * eta / std::max(1e-3, 1 - eta) + 2 * n * u / (1 - n * u) * r.max_abs_v + u * r.max_abs_v;
  if (b.bf16 && b.type != kv_type::bf16) e += ub * r.max_abs_v;
  return e;
}

// compares one row; returns the worst error / bound
inline double check_row(const ref::attention_row& r, const float* out, const float* lse, std::size_t d,
                        const bound_in& b, const std::string& what) {
  double worst = 0;
  if (r.lse == -std::numeric_limits<double>::infinity()) {
    for (std::size_t c = 0; c < d; ++c) {
      INFO(what << " fully masked row, channel " << c);
      REQUIRE(out[c] == 0.f);
    }
    if (lse) {
      INFO(what << " fully masked lse");
      REQUIRE((std::isinf(*lse) && *lse < 0));
    }
    return 0;
  }
  const double bound = row_bound(r, d, b);
  for (std::size_t c = 0; c < d; ++c) {
    const double err = std::fabs(double(out[c]) - r.out[c]);
    INFO(what << " channel " << c << " got " << out[c] << " want " << r.out[c] << " bound " << bound);
    REQUIRE(std::isfinite(out[c]));
    REQUIRE(err <= bound);
    worst = std::max(worst, err / std::max(bound, 1e-300));
  }
  if (lse) {
    const double eta = row_eta(r, d, b);
    const double lb = eta / std::max(1e-3, 1 - eta) + double(r.visible + 2) * u + 2 * u * std::fabs(r.lse);
    INFO(what << " lse got " << *lse << " want " << r.lse << " bound " << lb);
    REQUIRE(std::fabs(double(*lse) - r.lse) <= lb);
  }
  return worst;
}

inline std::vector<float> randn(std::mt19937_64& rng, std::size_t n, float sc = 1.f, bool bf16_exact = false) {
  std::normal_distribution<float> nd(0.f, sc);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = nd(rng);
    if (bf16_exact) x = round_to_bf16(x);
  }
  return v;
}

}  // namespace att_test
