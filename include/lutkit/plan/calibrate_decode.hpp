// lutkit — the decode kernels' own rates on this host (target_costs::kernels): for a policy P,
// each valid decode method timed on one core with its weights in L2 (best of a few calls) at two
// row counts; the slope is the kernel's weights per second, the intercept its fixed cost per
// call, kept per activation. A few milliseconds per method. The model then takes the slower of
// this rate and the units' peaks as the core's compute (plan/cost_model.hpp).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <random>
#include <vector>

#include "../core/error.hpp"
#include "../decode/decode_gemv.hpp"
#include "../packing/pack.hpp"
#include "../quant/quant.hpp"
#include "calibrate.hpp"
#include "chooser.hpp"
#include "cost_model.hpp"

namespace lutkit::plan {

struct decode_calibration_options {
  std::size_t K = 2048;                    // activations (a multiple of P's group)
  std::size_t rows_small = 128, rows_large = 512;  // the two row counts (multiples of 64)
  int reps = 15;                           // best of this many calls at each row count
};

// Times decode_gemv<P> by every method valid at N = 1 and stores the rates in c.kernels.
template <class P>
void calibrate_decode(target_costs& c, const decode_calibration_options& o = {}) {
  lutkit::detail::require(o.rows_small > 0 && o.rows_large > o.rows_small && o.reps >= 1,
                          "calibrate_decode: need 0 < rows_small < rows_large and reps >= 1");
  const std::size_t K = o.K;
  std::mt19937_64 rng(0x9e3779b9);
  std::normal_distribution<float> nd(0.f, 0.02f);
  std::vector<float> x(K);
  for (auto& v : x) v = nd(rng) * 50.f;
  auto blob = [&](std::size_t M) {
    std::vector<float> w(M * K);
    for (auto& v : w) v = nd(rng);
    return pack<P>(quantize<P>(w.data(), M, K));
  };
  const auto small = blob(o.rows_small), large = blob(o.rows_large);
  std::vector<float> y(o.rows_large);
  auto best_time = [&](const packed_weights<P>& w, decode_method m) {
    decode_gemv<P>(w, x.data(), 1, K, y.data(), m);  // warm: the blob into L2, the scratch allocated
    double best = 1e30;
    for (int r = 0; r < o.reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      decode_gemv<P>(w, x.data(), 1, K, y.data(), m);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  for (decode_method m : valid_decode_methods<P>(1)) {
    const double t1 = best_time(small, m), t2 = best_time(large, m);
    const double dw = double(o.rows_large - o.rows_small) * double(K);
    // (a noisy pair whose large case ran no slower: the large case's mean rate, no fixed cost)
    const double rate = t2 > t1 ? dw / (t2 - t1) : double(o.rows_large) * double(K) / t2;
    const double fixed = std::max(0.0, t1 - double(o.rows_small) * double(K) / rate);
    c.kernels[kernel_key(m, P::name())] = kernel_rate{rate, fixed / double(K)};
  }
}

}  // namespace lutkit::plan
