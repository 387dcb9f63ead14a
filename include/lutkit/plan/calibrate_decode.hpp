// lutkit — the decode kernels' own rates on this host (target_costs::kernels): for a policy P,
// each valid decode method timed on one core at two row counts (the medians of calls alternating
// between the two); the slope is the kernel's weights per second, the intercept its fixed cost
// per call, kept per activation. Cold by default: the calls rotate over copies of the blob beyond
// the LLC, so the rate is the one the kernel keeps while its weights stream from DRAM (a warm
// rate, weights in L2, leaves out the stalls a compute-bound kernel does not hide; docs/plan.md,
// "Validation").
// Hundreds of milliseconds per policy, most of it making the copies. The model takes the slower
// of this rate and the units' peaks as the core's compute (plan/cost_model.hpp). With more than
// one core (target_costs::cores) each method is timed again at every core, the same two row
// counts over the same copies: its rate there is kernel_parallel_key's entry.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <random>
#include <vector>

#include "../core/error.hpp"
#include "../core/thread_pool.hpp"
#include "../decode/decode_gemv.hpp"
#include "../packing/pack.hpp"
#include "../quant/quant.hpp"
#include "calibrate.hpp"
#include "chooser.hpp"
#include "cost_model.hpp"

namespace lutkit::plan {

struct decode_calibration_options {
  std::size_t K = 4096;                             // activations (a multiple of P's group)
  std::size_t rows_small = 256, rows_large = 1024;  // the two row counts (multiples of 64)
  int reps = 25;                                    // the median of this many calls at each row count
  std::size_t cold_bytes = lutkit::cold_bytes();   // copies rotated through, per row count (0: one warm copy)
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
  auto copies = [&](std::size_t M) {
    std::vector<packed_weights<P>> c;
    c.push_back(blob(M));
    const std::size_t want = o.cold_bytes == 0 ? 1 : std::max<std::size_t>(2, o.cold_bytes / c[0].size_bytes() + 1);
    while (c.size() < want) c.push_back(packed_weights<P>::from_bytes(c[0].bytes(), c[0].size_bytes()));
    // one untimed read of every copy (on an AMD EPYC Zen 5 VM the first reads of fresh copies
    // ran up to 30x slower than the later ones, all the calls of a method at one row count)
    volatile uint8_t sink = 0;
    for (const auto& w : c)
      for (std::size_t i = 0; i < w.size_bytes(); i += 64) sink = uint8_t(sink + w.bytes()[i]);
    return c;
  };
  const auto small = copies(o.rows_small), large = copies(o.rows_large);
  std::vector<float> y(o.rows_large);
  std::size_t next = 0;
  // the median times of the two row counts, their calls alternating (a slow stretch of the
  // machine then weighs on both: timed one after the other, the median of one size's calls on an
  // AMD EPYC Zen 5 VM ran 3-30x its steady time now and then, and the fit's slope or intercept
  // took it, e.g. a 1.4 ms fixed cost for a 45 us call); two untimed calls of each first. (The
  // fastest call instead modelled the decode rows at 0.59-1.14 of their benchmarks on Zen 3,
  // docs/plan.md, "On an AVX2-only CPU".)
  auto medians = [&](decode_method m, thread_pool* pool) {
    std::vector<double> ts, tl;
    auto call = [&](const std::vector<packed_weights<P>>& ws, std::vector<double>* t) {
      const auto& w = ws[next++ % ws.size()];
      const auto t0 = std::chrono::steady_clock::now();
      decode_gemv<P>(w, x.data(), 1, K, y.data(), m, 0, 0, pool);
      if (t) t->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    };
    for (int r = 0; r < 2; ++r) call(small, nullptr), call(large, nullptr);
    for (int r = 0; r < o.reps; ++r) call(small, &ts), call(large, &tl);
    std::sort(ts.begin(), ts.end());
    std::sort(tl.begin(), tl.end());
    return std::pair{ts[ts.size() / 2], tl[tl.size() / 2]};
  };
  // the slope between the two row counts and the intercept, at one core or over `pool`
  auto measure = [&](decode_method m, thread_pool* pool) {
    const auto [t1, t2] = medians(m, pool);
    const double dw = double(o.rows_large - o.rows_small) * double(K);
    // (a noisy pair: the large case's mean rate and no fixed cost where the large case ran no
    // slower, or the small one took over twice the large one's time per row: most calls of a size
    // fell in a slow stretch, which the fit would take for a fixed cost)
    const bool noisy = t2 <= t1 || t1 * double(o.rows_large) > 2 * t2 * double(o.rows_small);
    const double rate = noisy ? double(o.rows_large) * double(K) / t2 : dw / (t2 - t1);
    const double fixed = noisy ? 0.0 : std::max(0.0, t1 - double(o.rows_small) * double(K) / rate);
    return kernel_rate{rate, fixed / double(K)};
  };
  // with more than one core, also the rate at every core (kernel_parallel_key: the kernel's own
  // share of the cores, plan/cost_model.hpp, kernel_parallel_factor)
  for (decode_method m : valid_decode_methods<P>(1))
    store_kernel_rates(c, kernel_key(m, P::name()), [&](thread_pool* pool) { return measure(m, pool); });
}

}  // namespace lutkit::plan
