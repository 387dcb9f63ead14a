// Shared test helpers: seeded data, shapes a policy accepts, and the differential check.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <lutkit/lutkit.hpp>

#include "instances.hpp"
#include "scaled_cases.hpp"

namespace lutkit_test {


// Weights: Gaussian, with a heavy-tailed minority so groups see outliers.
inline std::vector<float> random_weights(std::mt19937_64& rng, std::size_t n) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::student_t_distribution<float> td(2.5f);
  std::uniform_int_distribution<int> pick(0, 9);
  std::vector<float> w(n);
  for (auto& v : w) v = pick(rng) == 0 ? td(rng) : nd(rng);
  return w;
}

enum class act_kind { gaussian, zeros, extremes, sparse, with_nan, with_inf };

inline std::vector<float> random_activations(std::mt19937_64& rng, std::size_t n, act_kind kind) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_int_distribution<int> pick(0, 15);
  std::vector<float> x(n);
  for (auto& v : x) {
    switch (kind) {
      case act_kind::zeros: v = 0.f; break;
      case act_kind::extremes: v = (pick(rng) & 1 ? 1.f : -1.f) * (pick(rng) < 8 ? 3.0e4f : 1e-30f); break;
      case act_kind::sparse: v = pick(rng) == 0 ? 10.f * nd(rng) : 0.f; break;
      default: v = nd(rng);
    }
  }
  if (kind == act_kind::with_nan && n) x[std::uniform_int_distribution<std::size_t>(0, n - 1)(rng)] = NAN;
  if (kind == act_kind::with_inf && n) x[std::uniform_int_distribution<std::size_t>(0, n - 1)(rng)] = -INFINITY;
  return x;
}

// A K the policy accepts: a multiple of its group, or anything for whole-K scales.
template <class P>
std::size_t random_k(std::mt19937_64& rng, std::size_t kmax) {
  if (P::spec.group_k > 0) {
    const std::size_t g = P::spec.group_k;
    return g * std::uniform_int_distribution<std::size_t>(1, std::max<std::size_t>(1, kmax / g))(rng);
  }
  return std::uniform_int_distribution<std::size_t>(1, kmax)(rng);
}

// Which activation rows contain a non-finite value (their outputs must be NaN).
inline std::vector<bool> nonfinite_rows(const std::vector<float>& x, std::size_t N, std::size_t K) {
  std::vector<bool> r(N, false);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k) r[n] = r[n] || !std::isfinite(x[n * K + k]);
  return r;
}

// Compares a LUT-GEMV result against the double reference within the derived error bound.
// Returns an empty string on success, else a description of the first failure.
template <class P>
std::string compare_to_ref(const lutkit::quantized<P>& q, const lutkit::lut_tables<P>& t,
                           const std::vector<float>& x, const std::vector<double>& yref,
                           const float* y, std::size_t ldy, std::size_t r0, std::size_t r1) {
  const std::size_t N = t.N(), M = q.M;
  const auto bad_rows = nonfinite_rows(x, N, q.K);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t m = r0; m < r1; ++m) {
      const float got = y[n * ldy + m];
      if (bad_rows[n]) {
        if (!std::isnan(got)) {
          std::ostringstream os;
          os << "row n=" << n << " has a non-finite activation, expected NaN at m=" << m << ", got " << got;
          return os.str();
        }
        continue;
      }
      const double bound = lutkit::ref::lut_error_bound<P>(q, t, x.data(), n, m);
      const double err = std::fabs(double(got) - yref[n * M + m]);
      if (!(err <= bound)) {
        std::ostringstream os;
        os << "n=" << n << " m=" << m << " got " << got << " ref " << yref[n * M + m] << " err " << err
           << " > bound " << bound;
        return os.str();
      }
    }
  return {};
}

}  // namespace lutkit_test
