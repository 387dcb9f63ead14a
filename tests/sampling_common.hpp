// Shared by the sampling tests: backends, random logits in every format (with ties, -inf, NaN,
// all-equal rows), chi-square critical values.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <lutkit/sampling/autoregressive.hpp>
#include <lutkit/sampling/dllm.hpp>
#include <lutkit/sampling/reference.hpp>

namespace sampling_test {
using namespace lutkit;

// the portable kernels, the best the CPU has, and the AVX2 ones where they are not the best
inline std::vector<sampling_backend> backends() {
  std::vector<sampling_backend> b{sampling_backend::portable};
  const auto* best = &detail::sampling_kernels_for(sampling_backend::best);
  if (best != &detail::portable_sampling_kernels()) b.push_back(sampling_backend::best);
#if defined(LUTKIT_HAVE_AVX2_SAMPLING)
  if (detail::avx2_sampling::cpu_supported() && best != &detail::avx2_sampling::kernels())
    b.push_back(sampling_backend::avx2);
#endif
  return b;
}
inline const char* backend_name(sampling_backend b) { return detail::sampling_kernels_for(b).name; }

// A target whose chunk is `n` values (n a multiple of 256): exercises the merging of chunks.
inline target_descriptor chunk_target(std::size_t n) {
  target_descriptor t = target::host::desc;
  t.l1_bytes = n * 2 * sizeof(float);
  return t;
}

// rows x V logits in one format, kept alive with their view
struct logits_data {
  logit_type type = logit_type::f32;
  std::size_t rows = 0, V = 0;
  std::vector<float> f;
  std::vector<uint16_t> h;
  std::vector<uint8_t> codes, scales;
  logits_view view() const {
    switch (type) {
      case logit_type::f32: return logits_view::f32(f.data(), rows, V);
      case logit_type::bf16: return logits_view::bf16(h.data(), rows, V);
      case logit_type::f16: return logits_view::f16(h.data(), rows, V);
      case logit_type::mxfp8: return logits_view::mxfp8(codes.data(), scales.data(), rows, V);
    }
    return {};
  }
};

// Random logits: normal with a random spread; some rows snapped to a coarse grid (ties),
// sprinkled with -inf and NaN, or all equal (`specials` off: finite values only).
// spikes: that many tokens per row set 6 .. 6 + 2 spikes above the row's largest (the peaked
// tokens of a real LM head; they hold most of the mass)
inline logits_data random_logits(std::mt19937_64& rng, logit_type type, std::size_t rows, std::size_t V,
                                 bool specials = true, int spikes = 0) {
  logits_data d;
  d.type = type;
  d.rows = rows;
  d.V = V;
  std::vector<float> f(rows * V);
  std::uniform_real_distribution<float> ud(0.f, 1.f);
  for (std::size_t r = 0; r < rows; ++r) {
    const int kind = int(rng() % 6);
    const float sd = 0.5f + 4.f * ud(rng);
    std::normal_distribution<float> nd(ud(rng) * 4.f - 2.f, sd);
    for (std::size_t i = 0; i < V; ++i) {
      float v = nd(rng);
      if (kind == 1) v = std::round(v * 2.f) / 2.f;  // many ties
      if (kind == 2) v = 1.25f;                      // all equal
      if (specials && kind == 3) {
        const float u = ud(rng);
        if (u < 0.1f) v = -std::numeric_limits<float>::infinity();
        else if (u < 0.2f) v = std::numeric_limits<float>::quiet_NaN();
      }
      f[r * V + i] = v;
    }
    if (specials && kind == 3) f[r * V + rng() % V] = 3.f;  // at least one finite value
    if (spikes > 0) {
      float top = -std::numeric_limits<float>::infinity();
      for (std::size_t i = 0; i < V; ++i)
        if (f[r * V + i] > top) top = f[r * V + i];
      if (!std::isfinite(top)) top = 0.f;
      for (int k = 0; k < spikes; ++k) f[r * V + rng() % V] = top + 6.f + 2.f * float(k);
    }
  }
  switch (type) {
    case logit_type::f32: d.f = f; break;
    case logit_type::bf16:
      for (float v : f) d.h.push_back(f32_to_bf16(v));
      break;
    case logit_type::f16:
      for (float v : f) d.h.push_back(f32_to_f16(v));
      break;
    case logit_type::mxfp8: {
      const std::size_t nb = (V + 31) / 32;
      d.codes.resize(rows * V);
      d.scales.resize(rows * nb);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t b = 0; b < nb; ++b) {
          const std::size_t n = std::min<std::size_t>(32, V - 32 * b);
          mxfp8_encode_block(f.data() + r * V + 32 * b, n, d.codes.data() + r * V + 32 * b, &d.scales[r * nb + b]);
        }
      break;
    }
  }
  return d;
}

// chi-square critical values at a false-alarm rate of 0.001, degrees of freedom 1..10
inline double chi2_crit_001(std::size_t df) {
  static const double t[] = {10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877, 29.588};
  REQUIRE(df >= 1);
  REQUIRE(df <= 10);
  return t[df - 1];
}
inline double chi2(const std::vector<std::size_t>& count, const std::vector<double>& p, std::size_t n) {
  double x = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * double(n);
    x += (double(count[i]) - e) * (double(count[i]) - e) / e;
  }
  return x;
}

constexpr double u24 = 0x1p-24;  // float's unit roundoff
}  // namespace sampling_test
