// lutkit — autoregressive sampling of batched rows (Best-of-N / beam search at batch 1-16),
// each row with its own parameters: repetition / presence / frequency penalties over a token
// history, temperature (0: greedy), top-k, top-p, min-p, and seeded categorical sampling, in a
// configurable order (llama.cpp's and vLLM's are given). Top-k / top-p / min-p never sort the
// vocabulary: one streaming pass computes the row's maximum, the maxima of blocks of 256 values
// and (when a stage needs it) sum exp(beta (z - max)); the candidates are then collected from
// the few blocks whose maximum reaches a threshold, and only they are sorted.
// Semantics of every option: docs/sampling.md.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/prefetch.hpp"
#include "../core/target.hpp"
#include "../core/thread_pool.hpp"
#include "logits.hpp"
#include "microkernel.hpp"
#include "rng.hpp"
#include "row_reader.hpp"
#include "targets.hpp"

namespace lutkit {

enum class ar_stage : uint8_t { penalties, temperature, top_k, top_p, min_p };

struct ar_chain {
  ar_stage s[5];
  uint8_t n;
};
// llama.cpp's default sampler chain: penalties -> top-k -> top-p -> min-p -> temperature -> sample
constexpr ar_chain llama_cpp_chain{
    {ar_stage::penalties, ar_stage::top_k, ar_stage::top_p, ar_stage::min_p, ar_stage::temperature}, 5};
// vLLM's sampler: penalties -> temperature -> min-p -> top-k -> top-p -> sample
constexpr ar_chain vllm_chain{
    {ar_stage::penalties, ar_stage::temperature, ar_stage::min_p, ar_stage::top_k, ar_stage::top_p}, 5};

struct ar_params {
  float temperature = 1.f;  // 0: greedy (the argmax of the penalized logits)
  int32_t top_k = 0;        // 0: off (and k >= V keeps everything)
  float top_p = 1.f;        // 1: off; 0 keeps the top-1
  float min_p = 0.f;        // 0: off
  float repetition_penalty = 1.f;  // tokens in the history: z > 0 ? z / r : z * r
  float presence_penalty = 0.f;    // ... then z - (count * frequency + presence)
  float frequency_penalty = 0.f;
  const int32_t* history = nullptr;
  std::size_t history_len = 0;
  uint64_t seed = 0;  // the categorical draw: u = row_uniform(seed, row) (top-p's rejection draw: row_uniform_n)
  ar_chain chain = llama_cpp_chain;
};

namespace detail {

// the penalized logit of a token seen `count` > 0 times (the reference uses this same function)
inline float penalize(float l, uint32_t count, const ar_params& p) {
  float z = l;
  if (p.repetition_penalty != 1.f) z = z > 0.f ? z / p.repetition_penalty : z * p.repetition_penalty;
  return z - (float(count) * p.frequency_penalty + p.presence_penalty);
}

inline void check_ar(const logits_view& lv, const ar_params& p, std::size_t r) {
  require(std::isfinite(p.temperature) && p.temperature >= 0.f, "ar_sample: row ", r,
          ": temperature must be finite and >= 0 (got ", p.temperature, ")");
  require(p.temperature == 0.f || std::isfinite(1.f / p.temperature), "ar_sample: row ", r, ": temperature ",
          p.temperature, " is so small that 1 / T overflows (use 0 for greedy)");
  require(p.top_k >= 0, "ar_sample: row ", r, ": top_k must be >= 0 (got ", p.top_k, ")");
  require(p.top_p >= 0.f && p.top_p <= 1.f, "ar_sample: row ", r, ": top_p must be in [0, 1] (got ", p.top_p, ")");
  require(p.min_p >= 0.f && p.min_p <= 1.f, "ar_sample: row ", r, ": min_p must be in [0, 1] (got ", p.min_p, ")");
  require(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0.f, "ar_sample: row ", r,
          ": repetition_penalty must be finite and > 0 (got ", p.repetition_penalty, ")");
  require(std::isfinite(p.presence_penalty) && std::isfinite(p.frequency_penalty), "ar_sample: row ", r,
          ": presence / frequency penalties must be finite");
  require(p.history_len == 0 || p.history != nullptr, "ar_sample: row ", r, ": history_len > 0 with a null history");
  for (std::size_t i = 0; i < p.history_len; ++i)
    require(p.history[i] >= 0 && std::size_t(p.history[i]) < lv.vocab, "ar_sample: row ", r, ": history token ",
            p.history[i], " outside [0, V = ", lv.vocab, ")");
  require(p.chain.n <= 5, "ar_sample: row ", r, ": a chain has at most 5 stages");
  bool seen[5] = {};
  for (int i = 0; i < p.chain.n; ++i) {
    const int s = int(p.chain.s[i]);
    require(s >= 0 && s < 5, "ar_sample: row ", r, ": unknown stage in the chain");
    require(!seen[s], "ar_sample: row ", r, ": a stage appears twice in the chain");
    seen[s] = true;
    require(p.chain.s[i] != ar_stage::penalties || i == 0, "ar_sample: row ", r,
            ": penalties must be the first stage of the chain");
  }
  require(p.temperature > 0.f || seen[int(ar_stage::temperature)], "ar_sample: row ", r,
          ": temperature 0 (greedy) needs a temperature stage in the chain");
}

inline bool chain_has(const ar_chain& c, ar_stage s) {
  for (int i = 0; i < c.n; ++i)
    if (c.s[i] == s) return true;
  return false;
}
inline bool greedy(const ar_params& p) { return chain_has(p.chain, ar_stage::temperature) && p.temperature <= 0.f; }
inline bool stage_on(const ar_params& p, ar_stage s, std::size_t V) {
  switch (s) {
    case ar_stage::penalties:
      return p.history_len > 0 && (p.repetition_penalty != 1.f || p.presence_penalty != 0.f || p.frequency_penalty != 0.f);
    case ar_stage::temperature: return p.temperature != 1.f;
    case ar_stage::top_k: return p.top_k > 0 && std::size_t(p.top_k) < V;
    case ar_stage::top_p: return p.top_p < 1.f;
    case ar_stage::min_p: return p.min_p > 0.f;
  }
  return false;
}
// beta (1 / temperature) at which the streaming pass must sum exp: the first top-p when no
// truncation precedes it, or the final draw when nothing truncates; 0: no sum needed
inline float ar_sum_beta(const ar_params& p, std::size_t V) {
  if (greedy(p)) return 0.f;
  float beta = 1.f;
  for (int i = 0; i < p.chain.n; ++i) {
    const ar_stage s = p.chain.s[i];
    if (!stage_on(p, s, V)) continue;
    if (s == ar_stage::temperature) beta /= p.temperature;
    if (s == ar_stage::top_p) return beta;
    if (s == ar_stage::top_k || s == ar_stage::min_p) return 0.f;
  }
  return beta;
}

// penalties of a row as patches (sorted by token)
inline std::vector<token_patch> ar_patches(const logits_view& lv, std::size_t r, const ar_params& p) {
  std::vector<token_patch> out;
  if (!stage_on(p, ar_stage::penalties, lv.vocab)) return out;
  std::vector<int32_t> h(p.history, p.history + p.history_len);
  std::sort(h.begin(), h.end());
  for (std::size_t i = 0; i < h.size();) {
    std::size_t j = i;
    while (j < h.size() && h[j] == h[i]) ++j;
    const uint32_t t = uint32_t(h[i]);
    out.push_back({t, penalize(read_value(lv, r, t, {}), uint32_t(j - i), p)});
    i = j;
  }
  return out;
}

// the streaming pass over one chunk of a row: its maximum, and the sum s of exp(beta (x - ref))
// (ref: the chunk's maximum; in bounded rows, the chords' sum for a ref from the task's earlier
// chunks: max_sum_bound)
struct ar_part {
  max_state st;
  float s = 0.f, ref = 0.f;
};

struct ar_cand {
  uint32_t i;
  float z;
};
// (an object, not a function: std::sort and std::nth_element inline its calls)
struct ar_better_t {
  bool operator()(const ar_cand& a, const ar_cand& b) const { return a.z > b.z || (a.z == b.z && a.i < b.i); }
};
inline constexpr ar_better_t ar_better{};

// what the driver did with one row (for the tests: the final candidate set)
struct ar_trace {
  bool all = false;             // the draw was over the whole vocabulary
  std::vector<uint32_t> kept;   // else: the final candidates, ascending token
  double beta = 0.0;            // 1 / temperature of the draw (0: greedy)
  double u = 0.0;
};

struct ar_row_ctx {
  const logits_view* lv;
  const sampling_kernel_set* ks;
  std::size_t r, chunk;
  patch_list pl;
  const float* bmax;
  std::size_t nblocks;
  float* scratch;
  bool split = false;  // the row's pass ran as several tasks (part of it may be in another core's caches)
};

// the k-th largest (1 <= k <= n) of x[0..n) (no NaN). A row's block maxima (top-p's h: k = 32 of
// ~600; top-k's threshold) are bracketed by the kernels' counts against 8 thresholds a pass
// (count_ge), spread evenly over the values' order-preserving integer keys (-0 taken as +0, so
// that x >= t holds exactly when key(x) >= key(t)), until few values are left in the bracket; only
// those are collected and selected. The earlier scalar form (a histogram of 256 bins, then
// nth_element in one bin) took 1.5-1.9 us for k = 32 of 594: its loops are serial (a float
// minimum and maximum, the histogram's increments) in the driver's baseline code.
inline int32_t kth_key(float v) {
  v += 0.f;  // (-0 -> +0)
  int32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b ^ ((b >> 31) & 0x7FFFFFFF);
}
inline float kth_value(int32_t q) {
  const int32_t b = q ^ ((q >> 31) & 0x7FFFFFFF);
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
inline float kth_largest(const float* x, std::size_t n, std::size_t k, const sampling_kernel_set& ks) {
  constexpr int J = mass_thresholds;
  const float inf = std::numeric_limits<float>::infinity();
  if (n >= 128 && n < (std::size_t(1) << 24)) {
    float lo = inf, hi = -inf;  // the smallest value above -inf, the largest
    ks.count_ge(x, n, nullptr, nullptr, &lo, &hi);
    if (!(lo < inf)) return -inf;  // (all -inf)
    // keys: the answer's lies in [l, h]; a_l = the count of values >= l's, a_h = of those > h's,
    // a_l >= k > a_h (a_l once the first pass has counted it)
    int32_t l = kth_key(lo), h = kth_key(hi);
    std::size_t a_l = 0, a_h = 0;
    for (bool first = true; first || (a_l - a_h > 32 && int64_t(h) - int64_t(l) >= J); first = false) {
      int32_t tk[J];
      float t[J];
      uint32_t c[J] = {};
      for (int j = 0; j < J; ++j) {  // t[0] = l's value: the first pass counts a_l
        tk[j] = int32_t(int64_t(l) + (int64_t(h) - int64_t(l)) * j / J);
        t[j] = kth_value(tk[j]);
      }
      ks.count_ge(x, n, t, c, nullptr, nullptr);
      if (c[0] < k) return -inf;  // (first pass only: fewer than k values above -inf)
      int j = J - 1;
      while (c[j] < k) --j;
      l = tk[j], a_l = c[j];
      if (j + 1 < J) h = tk[j + 1] - 1, a_h = c[j + 1];
    }
    // the values with keys in [l, h] (the largest key is +inf's at most, so h + 1 is a number's or
    // +inf's key); the answer is the (k - a_h)-th largest of them
    std::vector<float> y(n);
    std::size_t m;
    if (h < kth_key(inf)) {
      m = ks.collect_range(x, nullptr, n, kth_value(l), kth_value(h + 1), y.data(), nullptr);
    } else {
      std::vector<uint32_t> iy(n);
      m = ks.collect_ge(x, n, 0, kth_value(l), iy.data(), y.data());
    }
    const std::size_t r = k - a_h;  // 1 <= r <= m
    (void)m;
    std::nth_element(y.begin(), y.begin() + std::ptrdiff_t(r - 1), y.begin() + std::ptrdiff_t(m), std::greater<float>());
    return y[r - 1] + 0.f;
  }
  std::vector<float> y(x, x + n);
  std::nth_element(y.begin(), y.begin() + std::ptrdiff_t(k - 1), y.end(), std::greater<float>());
  return y[k - 1];
}
// w sorted by ar_better (best first). Up to 128 candidates (a top-k's, a top-p's top) by rank: each
// one's rank is the count of better keys (the value's order-preserving key, then the inverted
// token: all distinct), a loop without branches the compiler vectorizes; std::sort's compares
// mispredicted on such sets (about 1.3 us a row for 40 candidates, Zen 5). No NaN in w.
inline void ar_sort_better(std::vector<ar_cand>& w) {
  constexpr std::size_t small = 128;
  const std::size_t n = w.size();
  if (n > small) {
    std::sort(w.begin(), w.end(), ar_better);
    return;
  }
  uint64_t key[small];
  ar_cand out[small];
  for (std::size_t i = 0; i < n; ++i)
    key[i] = uint64_t(uint32_t(kth_key(w[i].z)) ^ 0x80000000u) << 32 | uint32_t(~w[i].i);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t r = 0;
    for (std::size_t j = 0; j < n; ++j) r += key[j] > key[i];
    out[r] = w[i];
  }
  std::copy(out, out + n, w.begin());
}
// the top of a row for top-p: h = the 32nd largest block maximum (-inf: 64 blocks or fewer)
inline float ar_top_h(const float* bmax, std::size_t nb, const sampling_kernel_set& ks) {
  return nb > 64 ? kth_largest(bmax, nb, 32, ks) : -std::numeric_limits<float>::infinity();
}

// the values >= t of row r (NaN never), from the blocks whose maximum reaches t. In a row whose pass
// was split over the threads, each block's lines are requested four blocks ahead: part of the row
// is in another core's caches, and one block at a time would wait out each block's latency in turn
// (where the whole row is in this core's L2, the requests cost more than they save: 0.6-0.8 us of
// 1.2 for 32 blocks).
inline void ar_collect(const ar_row_ctx& c, float t, std::vector<ar_cand>& out) {
  out.clear();
  const std::size_t V = c.lv->vocab, nb = c.nblocks;
  // the blocks whose maximum reaches t, by the kernels' compress over the block maxima
  std::vector<uint32_t> blocks(nb + 16);
  std::vector<float> bv(nb + 16);
  const std::size_t nsel = c.ks->collect_ge(c.bmax, nb, 0, t, blocks.data(), bv.data());
  uint32_t idx[ar_block];
  float val[ar_block];
  std::size_t ahead = c.split ? 0 : nsel;
  auto request = [&] {
    if (ahead >= nsel) return;
    const std::size_t b0 = std::size_t(blocks[ahead]) * ar_block;
    const auto pf = chunk_bytes(*c.lv, c.r, b0, std::min(ar_block, V - b0));
    prefetch_span(pf.first, pf.second);
    ++ahead;
  };
  for (int i = 0; i < 4; ++i) request();
  for (std::size_t j = 0; j < nsel; ++j) {
    request();
    const std::size_t b0 = std::size_t(blocks[j]) * ar_block, n = std::min(ar_block, V - b0);
    const float* x = read_chunk(*c.lv, *c.ks, c.r, b0, n, c.scratch, c.pl);
    const std::size_t k = c.ks->collect_ge(x, n, uint32_t(b0), t, idx, val);
    const std::size_t o = out.size();
    out.resize(o + k);
    for (std::size_t i = 0; i < k; ++i) out[o + i] = {idx[i], val[i]};
  }
}

// The values of a row at or above a threshold, in token order, with the bitmap of their tokens:
// top-p on the whole vocabulary collects its candidates so, one compress a vector and no token
// index stored per value (the index of the drawn token is found in the bitmap). The kept set: the
// values > keep, and the values == keep up to v[last_tie] (of a cut between ties, the first in
// token order are kept).
struct ar_compact {
  bool active = false;
  reusable_bytes<sampling_buffer> mem;
  const float* v = nullptr;
  std::size_t n = 0;
  const uint8_t* bits = nullptr;  // ar_block / 8 bytes a block of the row; bit t % 8 of byte t / 8: token t is in v
  std::vector<uint32_t> start;    // per block of the row: the index in v of its first value; then n
  float keep = 0.f;
  std::size_t last_tie = 0;  // n: every value == keep is kept

  bool kept(std::size_t i) const { return v[i] > keep || (v[i] == keep && i <= last_tie); }
  std::size_t index(uint32_t t) const {  // the index in v of collected token t
    const std::size_t b = t / ar_block;
    std::size_t k = start[b];
    for (std::size_t wd = 0; wd < (t % ar_block) / 64; ++wd) {
      uint64_t x;
      std::memcpy(&x, bits + b * (ar_block / 8) + wd * 8, 8);
      k += std::size_t(__builtin_popcountll(x));
    }
    uint64_t x;
    std::memcpy(&x, bits + b * (ar_block / 8) + (t % ar_block) / 64 * 8, 8);
    return k + std::size_t(__builtin_popcountll(x & ((uint64_t(1) << (t % 64)) - 1)));
  }
  uint32_t token(std::size_t k) const {  // the token of v[k]
    const std::size_t b = std::size_t(std::upper_bound(start.begin(), start.end(), uint32_t(k)) - start.begin()) - 1;
    std::size_t r = k - start[b];
    for (std::size_t wd = 0; wd < ar_block / 64; ++wd) {
      uint64_t x;
      std::memcpy(&x, bits + b * (ar_block / 8) + wd * 8, 8);
      const std::size_t c = std::size_t(__builtin_popcountll(x));
      if (r < c) {
        for (; r; --r) x &= x - 1;
        return uint32_t(b * ar_block + wd * 64 + std::size_t(__builtin_ctzll(x)));
      }
      r -= c;
    }
    return no_index;  // (not reached: k < n)
  }
  // the kept set as (token, value) pairs, ascending token
  void materialize(std::vector<ar_cand>& w) const {
    w.clear();
    std::size_t k = 0;
    for (std::size_t b = 0; b + 1 < start.size(); ++b)
      for (std::size_t wd = 0; wd < ar_block / 64 && k < start[b + 1]; ++wd) {
        uint64_t x;
        std::memcpy(&x, bits + b * (ar_block / 8) + wd * 8, 8);
        for (; x; x &= x - 1, ++k)
          if (kept(k)) w.push_back({uint32_t(b * ar_block + wd * 64 + std::size_t(__builtin_ctzll(x))), v[k]});
      }
  }
};

// Top-p on the whole vocabulary without sorting it. With F(t) = the sum of exp(beta (z - M)) over
// z >= t and the target p S:
//  1. the top: h = the 32nd largest block maximum; the values >= h (few, from the blocks that
//     reach h) give F(h) exactly; if F(h) >= p S the cut lies among them (sorted, walked): w.
//  2. else an estimate of where F crosses p S (plus a quarter of the rest, as a safety margin)
//     from a sample of 1 in 32 values (16 of every other block of 256), F^(t) = F(h) + 32 F_sample([t, h)):
//     the threshold lo.
//  3. ONE pass over the row collects the values >= lo (token order, their bitmap: cp), checks
//     F(lo) >= p S (else collects the whole row), then brackets [lo, hi) with 8 thresholds per
//     pass (the first over all the collected values, below h; then over the band), until few
//     values are left in [lo, hi): those are sorted and walked from F(hi) to find the last kept
//     value.
//  4. the kept set = the collected values at least as good as the last kept one (cp.keep,
//     cp.last_tie).
inline void ar_top_p_all(const ar_row_ctx& c, double M, double beta, double target, double S, std::vector<ar_cand>& w,
                         ar_compact& cp) {
  constexpr int J = mass_thresholds;
  constexpr std::size_t few = 64;
  const float inf = std::numeric_limits<float>::infinity();
  const std::size_t V = c.lv->vocab, nb = c.nblocks;
  auto q = [&](float z) { return std::exp(beta * (double(z) - M)); };
  w.clear();
  float h = -inf;
  double Fh = 0.0;
  float lo = -inf;
  h = ar_top_h(c.bmax, nb, *c.ks);
  if (h > -inf) {
    std::vector<ar_cand> x;
    ar_collect(c, h, x);
    for (const auto& e : x) Fh += q(e.z);
    if (Fh >= target) {  // the cut lies among the values >= h
      ar_sort_better(x);
      double cum = 0.0;
      std::size_t n = 0;
      while (n < x.size()) {
        cum += q(x[n].z);
        ++n;
        if (cum >= target) break;
      }
      w.assign(x.begin(), x.begin() + std::ptrdiff_t(std::max<std::size_t>(n, 1)));
      std::sort(w.begin(), w.end(), [](const ar_cand& a, const ar_cand& b) { return a.i < b.i; });
      return;
    }
    // the sample: values [b0 + 32 (b % 8), + 16) of every other block b
    std::vector<float> smp;
    smp.reserve(nb * 8 + 16);
    for (std::size_t b = 0; b < nb; b += 2) {
      const std::size_t b0 = b * ar_block + 32 * ((b / 2) % 8);
      if (b0 >= V) continue;
      const std::size_t n = std::min<std::size_t>(16, V - b0);
      const float* x = read_chunk(*c.lv, *c.ks, c.r, b0, n, c.scratch, c.pl);
      smp.insert(smp.end(), x, x + n);
    }
    const double scale = double(V) / double(smp.size());
    const double goal = target + 0.25 * (S - target);
    const double cs[J] = {32, 16, 8, 4, 2, 1, 0.5, 0};
    float t[J];
    for (int j = 0; j < J; ++j) t[j] = float(double(h) - cs[j] / beta);
    double fs_h = 0.0;  // the sample's mass >= h
    bool first = true, found = false;
    for (int round = 0; round < 3; ++round) {
      double mass[J] = {};
      float vmax = -inf;
      c.ks->mass_ge(smp.data(), smp.size(), float(M), float(beta), t, mass, &vmax);
      if (first) fs_h = mass[J - 1], first = false;
      int js = -1;
      for (int j = 0; j < J; ++j)
        if (Fh + scale * (mass[j] - fs_h) >= goal) js = j;
      if (js < 0) break;  // (round 0: even h - 32 / beta holds too little: collect everything)
      lo = t[js], found = true;
      const float top = js + 1 < J ? t[js + 1] : h;
      if (!(lo < top)) break;
      for (int j = 0; j < J; ++j) t[j] = lo + (top - lo) * float(j) / float(J);
    }
    if (!found) lo = -inf;
  }
  // 3. collect, check, bracket
  const std::size_t map_bytes = nb * (ar_block / 8);
  cp.mem = reusable_bytes<sampling_buffer>(sampling_buffer::cand, 8 * (V + 16) + map_bytes);
  float* cv = reinterpret_cast<float*>(cp.mem.get());
  float* bv = cv + V + 16;
  uint8_t* bits = reinterpret_cast<uint8_t*>(bv + V + 16);
  cp.start.assign(nb + 1, 0);
  std::size_t n = 0, pn = 0;
  float hi = inf;
  double Fhi = 0.0;
  bool nhi = false;      // a value >= hi exists
  const float* pv = cv;  // the values searched: C, then the band
  auto start = [&] {     // C = the values >= lo, their bitmap and each block's first index
    n = 0;
    for (std::size_t b = 0; b < nb; ++b) {
      cp.start[b] = uint32_t(n);
      std::memset(bits + b * (ar_block / 8), 0, ar_block / 8);
      if (!(c.bmax[b] >= lo)) continue;
      const std::size_t b0 = b * ar_block, len = std::min(ar_block, V - b0);
      n += c.ks->select_ge(read_chunk(*c.lv, *c.ks, c.r, b0, len, c.scratch, c.pl), len, lo, cv + n,
                           bits + b * (ar_block / 8));
    }
    cp.start[nb] = uint32_t(n);
    pv = cv, pn = n, hi = inf, Fhi = 0.0, nhi = false;
  };
  start();
  for (int round = 0; round < 40; ++round) {
    // (the first round searches all of C, the values >= h too, with thresholds below h when the
    // top is known: F(h) < p S puts the cut there)
    const bool below_h = round == 0 && h > -inf && h > lo;
    const float top = below_h ? h : hi == inf ? std::nextafter(float(M), inf) : hi;
    float t[J];
    t[0] = lo;
    if (lo == -inf)
      for (int j = 1; j < J; ++j) t[j] = float(double(top) - double(1 << (J - j)) * 0.25 / beta);  // 32 .. 0.5
    else
      for (int j = 1; j < J; ++j) t[j] = lo + (top - lo) * float(j) / float(J);
    double mass[J] = {};
    float vmax = -inf;  // the largest searched value (>= t[0]): a value >= t[j] exists iff vmax >= t[j]
    c.ks->mass_ge(pv, pn, float(M), float(beta), t, mass, &vmax);
    if (round == 0 && Fhi + mass[0] < target && lo > -inf) {  // the estimate was too high: the whole row
      lo = -inf;
      start();
      --round;
      continue;
    }
    // the largest j with F(t_j) >= p S and a value >= t_j (so F(t_j+1) < p S); js = 0 also when F(lo) < p S, which
    // happens only with lo = -inf and p ~ 1 (the float sums round under p S): then all is kept
    int js = 0;
    for (int j = 1; j < J; ++j)
      if (Fhi + mass[j] >= target && (nhi || vmax >= t[j])) js = j;  // (p = 0: target 0, at least one)
    const float nlo = t[js], nhi_t = js + 1 < J ? t[js + 1] : below_h ? h : hi;
    if (js + 1 < J) {
      Fhi += mass[js + 1];
      nhi = nhi || vmax >= t[js + 1];
    } else if (below_h) {  // the cut in [t_J-1, h): the values >= h exist, F(h) is known
      Fhi = Fh, nhi = true;
    }
    const bool narrowed = nlo != lo || nhi_t != hi;
    lo = nlo, hi = nhi_t;
    // the band [lo, hi) of the searched values
    pn = c.ks->collect_range(pv, nullptr, pn, lo, hi, bv, nullptr);
    pv = bv;
    if (pn <= few || !narrowed || !(std::nextafter(lo, inf) < (hi == inf ? std::nextafter(float(M), inf) : hi))) break;
  }
  // sort the band, walk it from F(hi)
  std::sort(bv, bv + pn, std::greater<float>());
  double cum = Fhi;
  std::size_t m = 0;
  while (m < pn) {
    if ((nhi || m > 0) && cum >= target) break;
    cum += q(bv[m]);
    ++m;
  }
  // 4. the kept values: those >= hi and the m first of the band, i.e. the collected values at
  // least as good as the last kept one (of its ties, the first in token order)
  cp.v = cv, cp.n = n, cp.bits = bits, cp.active = true;
  cp.keep = m ? bv[m - 1] : hi;
  cp.last_tie = n;
  if (m && m < pn && bv[m] == cp.keep) {  // (sorted: ties not kept follow) the kept ties end at the k-th
    // (counted a block at a time by the kernels, the block holding the k-th walked)
    std::size_t k = std::size_t(std::count(bv, bv + m, cp.keep));
    const float above = std::nextafter(cp.keep, inf);
    for (std::size_t b0 = 0; b0 < n; b0 += ar_block) {
      const std::size_t len = std::min(ar_block, n - b0);
      const std::size_t e = c.ks->collect_range(cv + b0, nullptr, len, cp.keep, above, bv, nullptr);
      if (e < k) {
        k -= e;
        continue;
      }
      for (std::size_t i = b0;; ++i)
        if (cv[i] == cp.keep && --k == 0) {
          cp.last_tie = i;
          break;
        }
      break;
    }
  }
}

// The final draw: over candidates 0..n in ascending token order, inverse CDF of u, in double: the
// first token whose cumulative exp(beta (z - M)) reaches u times their sum. Many candidates (a
// top-p cut on the whole vocabulary): bs holds the kernels' float exp sums of the kept candidates
// of each block of ar_block, the crossing block is walked in double, and the token is taken only
// if the cumulative sum is clear of u * sum by far more than the float sums' error (2^-14 of the
// sum against ~2^-19); else (rarely), or with bs empty, the plain walk in double decides. The
// result is the plain walk's, bit for bit, either way. kept(i): candidate i is in the set; z(i):
// its value; token(i): its token. M: the largest kept value (the row's maximum: every stage keeps
// the top candidate).
template <class Kept, class Z, class Token>
inline uint32_t ar_draw_walk(std::size_t n, const std::vector<double>& bs, double M, double beta, double u, Kept kept,
                             Z z, Token token) {
  auto q = [&](std::size_t i) { return std::exp(beta * (double(z(i)) - M)); };
  if (!bs.empty()) {
    double tot = 0.0;
    for (double v : bs) tot += v;
    const double target = u * tot, tol = 0x1p-14 * tot;
    double cum = 0.0;
    std::size_t b = 0;
    while (b < bs.size() && cum + bs[b] < target - tol) cum += bs[b++];
    if (b < bs.size()) {
      for (std::size_t i = b * ar_block, e = std::min(n, i + ar_block); i < e; ++i) {
        if (!kept(i)) continue;
        const double qi = q(i);
        if (cum + qi >= target - tol) {
          if (cum < target - tol && cum + qi >= target + tol) return token(i);
          break;  // too close to call: the plain walk
        }
        cum += qi;
      }
    }
  }
  double total = 0.0;
  std::size_t last = n;
  for (std::size_t i = 0; i < n; ++i)
    if (kept(i)) {
      total += q(i);
      if (last == n) last = i;
    }
  const double target = u * total;
  double cum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!kept(i)) continue;
    const double qi = q(i);
    if (qi > 0.0) last = i;
    cum += qi;
    if (cum >= target && qi > 0.0) return token(i);
  }
  return token(last);
}

// the draw from an explicit candidate set (sorted by token here)
inline uint32_t ar_draw(std::vector<ar_cand>& w, double M, double beta, double u, const sampling_kernel_set& ks) {
  const auto by_token = [](const ar_cand& a, const ar_cand& b) { return a.i < b.i; };
  if (!std::is_sorted(w.begin(), w.end(), by_token)) std::sort(w.begin(), w.end(), by_token);
  const std::size_t n = w.size();
  std::vector<double> bs;
  if (n >= 1024) {
    std::vector<float> z(n);
    for (std::size_t i = 0; i < n; ++i) z[i] = w[i].z;
    for (std::size_t b0 = 0; b0 < n; b0 += ar_block)
      bs.push_back(double(ks.sum_exp(z.data() + b0, std::min(ar_block, n - b0), float(M), float(beta), nullptr, nullptr, 0)));
  }
  return ar_draw_walk(
      n, bs, M, beta, u, [](std::size_t) { return true; }, [&](std::size_t i) { return w[i].z; },
      [&](std::size_t i) { return w[i].i; });
}

// the draw over a compact kept set (ar_top_p_all's): the block sums over the collected values
// (those below the cut add nothing), the drawn value's token from the bitmap
inline uint32_t ar_draw_compact(const ar_compact& cp, double M, double beta, double u, const sampling_kernel_set& ks) {
  const float* v = cp.v;
  const std::size_t n = cp.n;
  // (the values from last_tie + 1 on: those > keep)
  const float above = std::nextafter(cp.keep, std::numeric_limits<float>::infinity());
  auto part = [&](std::size_t i, std::size_t e, float t) {
    return i < e ? double(ks.sum_exp_ge(v + i, e - i, float(M), float(beta), t)) : 0.0;
  };
  std::vector<double> bs;
  for (std::size_t b0 = 0; b0 < n; b0 += ar_block) {
    const std::size_t e = std::min(n, b0 + ar_block), cut = std::clamp(cp.last_tie + 1, b0, e);
    bs.push_back(part(b0, cut, cp.keep) + part(cut, e, above));
  }
  return ar_draw_walk(
      n, bs, M, beta, u, [&](std::size_t i) { return cp.kept(i); }, [&](std::size_t i) { return v[i]; },
      [&](std::size_t i) { return cp.token(i); });
}

// Top-p on the whole vocabulary draws by rejection when the chain allows it (ar_reject_plan_of:
// top-p is the first truncation, only min-p and temperatures follow it, and the draw's beta b is
// at least top-p's b_p, i.e. a temperature after top-p of at most 1) and the row has a small top
// (ar_reject_top: more than 64 blocks of ar_block tokens; h = the 32nd largest block maximum; at
// most ar_reject_top_max values >= h). With q(z) = exp(b_p (z - M)), S its sum over the row (in
// double, token order), X the values >= h and F_h their q sum, U(j) = row_uniform_n(seed, row, j),
// attempt k (of ar_reject_attempts):
//  1. proposes a token t with probability q(z_t) / S (ar_propose): from X if U(4k) S < F_h, by the
//     inverse CDF of U(4k + 1) F_h over X in token order; else from the rest (the values < h), by
//     uniform token indices i accepted when v q(h) < q(z_i) (ar_rest_uniform; after
//     ar_reject_tries the inverse CDF of U(4k + 3) over the rest, in double);
//  2. accepts t if U(4k + 2) < exp((b - b_p) (z_t - M)), t passes the min-p stage, and t is in
//     top-p's kept set.
// The accepted token is distributed exactly as the draw over the kept set at b (the proposal's
// density over it is exp((b - b_p) z) up to a constant, largest at M). After ar_reject_attempts
// rejections, the inverse-CDF draw over the kept set with U(4 ar_reject_attempts) decides; a row
// without a small top, or a chain not allowing it, draws so with row_uniform(seed, row). Most
// attempts need neither the whole row's exact sum nor the kept set's threshold: S's float error
// (~2^-19 of S) matters only when U(4k) S falls within 2^-14 S of F_h (then the exact sum
// decides), a proposal from X is placed in or out of the kept set by its exact mass above it, a
// proposal below h is out when F_h alone reaches p S (the cut lies in X), and only a proposal
// below h of a row whose cut lies below h, or one within 2^-14 S of the cut, makes the kept set
// exact (ar_top_p_all). docs/sampling.md, "Top-p's rejection draw".
constexpr int ar_reject_attempts = 8;
constexpr std::size_t ar_reject_top_max = 4096;
constexpr int ar_reject_tries = 4096;
struct ar_reject_plan {
  bool on = false;
  double bp = 1.0, bd = 1.0;  // beta at top-p, beta of the draw
  bool minp = false;          // a min-p stage after top-p: kept iff bm (z - M) >= lp
  double bm = 1.0, lp = 0.0;
};
inline ar_reject_plan ar_reject_plan_of(const ar_params& p, std::size_t V) {
  ar_reject_plan o;
  if (greedy(p)) return o;
  double beta = 1.0;
  bool top_p = false;
  for (int i = 0; i < p.chain.n; ++i) {
    const ar_stage s = p.chain.s[i];
    if (!stage_on(p, s, V)) continue;
    switch (s) {
      case ar_stage::penalties: break;  // (patches: every read)
      case ar_stage::temperature: beta /= double(p.temperature); break;
      case ar_stage::top_k: return o;
      case ar_stage::top_p:
        if (top_p) return o;
        top_p = true, o.bp = beta;
        break;
      case ar_stage::min_p:
        if (!top_p || o.minp) return o;
        o.minp = true, o.bm = beta, o.lp = std::log(double(p.min_p));
        break;
    }
  }
  o.bd = beta;
  o.on = top_p && o.bd >= o.bp;
  return o;
}
// The uniform of try j of attempt k's proposal from the rest: which = 0 the token index, 1 the test
inline double ar_rest_uniform(uint64_t seed, uint64_t row, uint64_t k, uint64_t j, uint64_t which) {
  const uint64_t key = mix64(mix64(seed ^ 0x70505E57ull) ^ mix64(row + 0x9E3779B97F4A7C15ull));
  return (double(mix64(key + ((k << 40) ^ (j << 1) ^ which)) >> 11) + 0.5) * 0x1p-53;
}

// S from a row's chunk sums s_c relative to references r_c ({s_c, r_c} = chunk_sum(c, part)),
// merged in chunk order as the pass does: the sum of s_c exp(beta (r_c - M)) in double
template <class ChunkSum>
inline double ar_merge_sums(const ar_part* parts, std::size_t nchunks, float beta, float M, ChunkSum chunk_sum) {
  double S = 0.0;
  if (beta != 0.f && std::isfinite(M))
    for (std::size_t q = 0; q < nchunks; ++q) {
      const std::pair<float, float> c = chunk_sum(q, parts[q]);
      if (c.first > 0.f) S += double(c.first) * std::exp(double(beta) * (double(c.second) - double(M)));
    }
  return S;
}

// The row's sum S (above) as the draw knows it. A row the rejection draw may serve has its pass
// sum exp_bound_term's chords (sampling/microkernel.hpp: five vector operations a value against
// the accurate sum's ten to twelve), which bound S; ar_sum_tighten narrows the bounds with the top's
// exact mass. A decision the bounds settle is the one the exact S gives; between them, get() makes
// S the accurate pass's sum (the value the pass gives every other row, the same bits) by a second
// pass over the row.
struct ar_sum {
  double lo = 0.0, hi = 0.0, S = 0.0;  // lo <= S <= hi; exact: lo = hi = S
  bool exact = true;
  double approx = 0.0;                 // (bounded rows) the chords' sum, chunk sums scaled as S's
  const ar_part* parts = nullptr;      // the row's chunks: their maxima m_c
  std::size_t nchunks = 0, chunk = 0;
  float beta = 0.f, M = 0.f;           // the pass's beta (float, as its sums), the row's maximum
  double get(const ar_row_ctx& c) {
    if (!exact) {
      const std::size_t V = c.lv->vocab;
      S = ar_merge_sums(parts, nchunks, beta, M, [&](std::size_t q, const ar_part& o) {
        if (!(o.st.i1 != no_index && o.st.m1 < std::numeric_limits<float>::infinity()))
          return std::pair<float, float>(0.f, o.st.m1);
        const std::size_t b = q * chunk, n = std::min(chunk, V - b);
        const float* x = read_chunk(*c.lv, *c.ks, c.r, b, n, c.scratch, c.pl);
        return std::pair<float, float>(c.ks->sum_exp(x, n, o.st.m1, beta, nullptr, nullptr, 0), o.st.m1);
      });
      lo = hi = S;
      exact = true;
    }
    return S;
  }
};

struct ar_top {
  bool ok = false;
  float h = -std::numeric_limits<float>::infinity();
  std::vector<ar_cand> x;  // the values >= h, token order
  std::vector<double> q;   // exp(b_p (z - M)) of each
  double Fh = 0.0;
};
// ar_sum's bounds from its chords' sum `approx` over the row, a of them (in double, scaled as S's
// chunk sums, each from its chunk's ref) over a set of known exact mass F (F = a = 0: the whole
// row). Each chord is within [1, 1.0615] of its term (2^-12 more for the roundings of beta, x - m,
// C and the fma; a value under 2^-126 becomes 2^-126: V 2^-126 in all); a chunk's float sum of n
// chords is within n 2^-24 of their exact sum (2^-23 taken).
inline void ar_sum_bounds(ar_sum& s, std::size_t V, double F, double a) {
  const double err = s.approx * double(s.chunk) * 0x1p-23, under = double(V) * 0x1p-126;
  const double rest = s.approx - a;
  s.lo = F + std::max(0.0, rest - err - under) / (1.0616 * (1.0 + 0x1p-12));
  s.hi = F + std::max(0.0, rest + err) / (1.0 - 0x1p-12);
}
inline ar_top ar_reject_top(const ar_row_ctx& c, double M, double bp) {
  ar_top o;
  o.h = ar_top_h(c.bmax, c.nblocks, *c.ks);
  if (!(o.h > -std::numeric_limits<float>::infinity())) return o;
  ar_collect(c, o.h, o.x);
  if (o.x.size() > ar_reject_top_max) return o;
  o.q.resize(o.x.size());
  for (std::size_t i = 0; i < o.x.size(); ++i) o.Fh += o.q[i] = std::exp(bp * (double(o.x[i].z) - M));  // (no NaN in X)
  o.ok = true;
  return o;
}

// the bounds with the top's exact mass: its chords (each as the pass computed it) leave the
// rest's, whose error is only the rest's
inline void ar_sum_tighten(ar_sum& s, const ar_top& tp, double M, std::size_t V) {
  if (s.exact) return;
  double a = 0.0;
  for (const auto& e : tp.x) {
    const float m = s.parts[e.i / s.chunk].ref;
    a += double(exp_bound_term(e.z, m, exp_bound_scale(s.beta))) * std::exp(double(s.beta) * (double(m) - M));
  }
  ar_sum_bounds(s, V, tp.Fh, a);
}

// attempt k's proposal (above): the token, with probability q(z) / S
inline uint32_t ar_propose(const ar_row_ctx& c, const ar_top& tp, double M, double bp, ar_sum& S, uint64_t seed,
                           uint64_t row, uint64_t k) {
  const std::size_t V = c.lv->vocab;
  auto q = [&](float z) { return z == z ? std::exp(bp * (double(z) - M)) : 0.0; };
  // the row's sum in double over the values below b (b = inf: all), token order
  auto exact_sum = [&](float b) {
    double t = 0.0;
    for (std::size_t b0 = 0; b0 < V; b0 += c.chunk) {
      const std::size_t n = std::min(c.chunk, V - b0);
      const float* x = read_chunk(*c.lv, *c.ks, c.r, b0, n, c.scratch, c.pl);
      for (std::size_t i = 0; i < n; ++i)
        if (x[i] < b) t += q(x[i]);
    }
    return t;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const double u = row_uniform_n(seed, row, 4 * k);
  bool top;
  if (!S.exact && u * S.hi < tp.Fh)
    top = true;
  else if (!S.exact && u * S.lo >= tp.Fh)
    top = false;
  else {
    const double s = S.get(c), tol = 0x1p-14 * s;
    top = u * s < tp.Fh - tol ? true : u * s >= tp.Fh + tol ? false : u * exact_sum(inf) < tp.Fh;
  }
  if (top) {
    const double target = row_uniform_n(seed, row, 4 * k + 1) * tp.Fh;
    double cum = 0.0;
    uint32_t last = no_index;
    for (std::size_t i = 0; i < tp.x.size(); ++i) {
      const double qi = tp.q[i];
      if (!(qi > 0.0)) continue;
      last = tp.x[i].i;
      cum += qi;
      if (cum >= target) break;
    }
    return last;
  }
  const double qh = q(tp.h);
  for (int j = 0; j < ar_reject_tries; ++j) {
    const auto i = uint32_t(ar_rest_uniform(seed, row, k, uint64_t(j), 0) * double(V));
    const float z = read_value(*c.lv, c.r, i, c.pl);
    if (z < tp.h && ar_rest_uniform(seed, row, k, uint64_t(j), 1) * qh < q(z)) return i;
  }
  // (rare: a rest of small mass against V q(h)) its inverse CDF in double
  const double target = row_uniform_n(seed, row, 4 * k + 3) * exact_sum(tp.h);
  double cum = 0.0;
  uint32_t last = no_index;
  for (std::size_t b0 = 0; b0 < V; b0 += c.chunk) {
    const std::size_t n = std::min(c.chunk, V - b0);
    const float* x = read_chunk(*c.lv, *c.ks, c.r, b0, n, c.scratch, c.pl);
    for (std::size_t i = 0; i < n; ++i) {
      const double qi = x[i] < tp.h ? q(x[i]) : 0.0;
      if (!(qi > 0.0)) continue;
      last = uint32_t(b0 + i);
      cum += qi;
      if (cum >= target) return last;
    }
  }
  return last;  // (U(4k) S >= F_h: the rest has mass)
}

// The attempts of the rejection draw (above); member(t, z): t is in top-p's kept set. Returns the
// accepted token, or no_index after ar_reject_attempts rejections.
template <class Member>
inline uint32_t ar_reject(const ar_row_ctx& c, const ar_params& p, const ar_reject_plan& rj, const ar_top& tp,
                          double M, ar_sum& S, uint64_t row, Member member) {
  for (uint64_t k = 0; k < uint64_t(ar_reject_attempts); ++k) {
    const uint32_t t = ar_propose(c, tp, M, rj.bp, S, p.seed, row, k);
    if (t == no_index) continue;  // (not reached with a finite S)
    const float z = read_value(*c.lv, c.r, t, c.pl);
    if (!(row_uniform_n(p.seed, row, 4 * k + 2) < std::exp((rj.bd - rj.bp) * (double(z) - M)))) continue;
    if (rj.minp && !(rj.bm * (double(z) - M) >= rj.lp)) continue;
    if (member(t, z)) return t;
  }
  return no_index;
}

// The mass of the values better than token t, of value z (q(z) = exp(beta (z - M))), for the
// membership of t in top-p's kept set (kept iff it is below p S): one pass over the blocks that
// reach z, mass_ge at z and just above it, in float over at most 1024 values a call (each call's
// sum within 2^-18 of it), summed in double. Ties of z before t in token order are better than t,
// those after it are not: the mass lies in [first, second] = [G(> z), G(>= z) - q(z)].
inline std::pair<double, double> ar_mass_better(const ar_row_ctx& c, double M, double beta, float z) {
  constexpr int J = mass_thresholds;
  const float inf = std::numeric_limits<float>::infinity();
  const std::size_t V = c.lv->vocab, nb = c.nblocks, per_call = 1024 / ar_block;
  float t[J];
  t[0] = z, t[1] = std::nextafter(z, inf);
  for (int j = 2; j < J; ++j) t[j] = inf;
  double mass[J] = {};
  float top = -inf;
  for (std::size_t b = 0; b < nb;) {
    if (!(c.bmax[b] >= z)) {
      ++b;
      continue;
    }
    std::size_t e = b + 1;  // a run of blocks that reach z, at most per_call
    while (e < nb && e - b < per_call && c.bmax[e] >= z) ++e;
    const std::size_t b0 = b * ar_block, n = std::min(e * ar_block, V) - b0;
    c.ks->mass_ge(read_chunk(*c.lv, *c.ks, c.r, b0, n, c.scratch, c.pl), n, float(M), float(beta), t, mass, &top);
    b = e;
  }
  return {mass[1], mass[0] - std::exp(beta * (double(z) - M))};
}

// The rejection draw without a trace: membership from the top's exact mass, else the kept set
// made exact once (ar_top_p_all)
inline uint32_t ar_reject_fast(const ar_row_ctx& c, const ar_params& p, const ar_reject_plan& rj, const ar_top& tp,
                               double M, ar_sum& S, uint64_t row) {
  const double pp = double(p.top_p);
  bool exact = false;
  std::vector<ar_cand> w;
  ar_compact cp;
  int passes = 0;  // membership passes of proposals below h (ar_mass_better) so far
  return ar_reject(c, p, rj, tp, M, S, row, [&](uint32_t t, float z) {
    if (!exact && z >= tp.h) {  // every value better than t is in X
      double G = 0.0;
      for (std::size_t i = 0; i < tp.x.size(); ++i)
        if (tp.x[i].z > z || (tp.x[i].z == z && tp.x[i].i < t)) G += tp.q[i];
      if (!S.exact && G < pp * S.lo) return true;
      if (!S.exact && G >= pp * S.hi) return false;
      const double target = pp * S.get(c), tol = 0x1p-14 * S.S;
      if (G < target - tol) return true;
      if (G >= target + tol) return false;
    } else if (!exact) {
      // below h: all of X is better than t, G >= F_h; where F_h reaches p S the cut lies in X.
      // Else G by a pass over the row (about a tenth of the exact kept set's cost; from a row's
      // third such proposal on, the kept set serves them all). Its float sums' error is far
      // under the margin 2^-14 S.
      if (tp.Fh >= (S.exact ? pp * S.S + 0x1p-14 * S.S : pp * S.hi)) return false;
      if (passes++ < 2) {
        const auto G = ar_mass_better(c, M, rj.bp, z);
        const double tol = 0x1p-14 * (S.exact ? S.S : S.hi);
        if (!S.exact && G.second < pp * S.lo - tol) return true;
        if (!S.exact && G.first >= pp * S.hi + tol) return false;
        const double target = pp * S.get(c);
        if (G.second < target - tol) return true;
        if (G.first >= target + tol) return false;
      } else {
        const double target = pp * S.get(c);
        if (tp.Fh >= target + 0x1p-14 * S.S) return false;
      }
    }
    if (!exact) {
      ar_top_p_all(c, M, rj.bp, pp * S.get(c), S.S, w, cp);
      exact = true;
    }
    if (cp.active) return z > cp.keep || (z == cp.keep && cp.index(t) <= cp.last_tie);
    return std::binary_search(w.begin(), w.end(), ar_cand{t, z},
                              [](const ar_cand& a, const ar_cand& b) { return a.i < b.i; });
  });
}

inline uint32_t ar_row(const ar_row_ctx& c, const ar_params& p, const max_state& st, ar_sum& sum, uint64_t row,
                       ar_trace* tr) {
  const std::size_t V = c.lv->vocab;
  require(st.i1 != no_index && std::isfinite(st.m1), "ar_sample: logits row ", c.r,
          " has no finite maximum (all NaN / -inf, or +inf)");
  if (greedy(p)) {
    if (tr) tr->kept = {st.i1};
    return st.i1;
  }
  const double M = st.m1;
  const ar_reject_plan rj = ar_reject_plan_of(p, V);
  ar_top top;
  const double Sb = sum.exact ? sum.S : sum.hi;
  if (rj.on && Sb > 0.0 && Sb < std::numeric_limits<double>::infinity()) top = ar_reject_top(c, M, rj.bp);
  if (top.ok && !tr) {
    ar_sum_tighten(sum, top, M, V);
    const uint32_t t = ar_reject_fast(c, p, rj, top, M, sum, row);
    if (t != no_index) return t;
  }
  double S = sum.get(c);
  double beta = 1.0;
  bool all = true;
  std::vector<ar_cand> w;
  ar_compact cp;  // top-p's kept set on the whole vocabulary, until a stage needs it explicit
  for (int s = 0; s < p.chain.n; ++s) {
    const ar_stage stg = p.chain.s[s];
    if (!stage_on(p, stg, V)) continue;
    switch (stg) {
      case ar_stage::penalties: break;  // applied as patches by every read
      case ar_stage::temperature: beta /= double(p.temperature); break;
      case ar_stage::top_k: {
        const std::size_t k = std::size_t(p.top_k);
        if (cp.active) {
          cp.materialize(w);
          cp.active = false;
        }
        if (all) {
          const float t = k <= c.nblocks ? kth_largest(c.bmax, c.nblocks, k, *c.ks) : -std::numeric_limits<float>::infinity();
          ar_collect(c, t, w);
          all = false;
        }
        if (w.size() > k) {
          if (w.size() <= 128)
            ar_sort_better(w);
          else
            std::nth_element(w.begin(), w.begin() + std::ptrdiff_t(k - 1), w.end(), ar_better);
          w.resize(k);
        }
        break;
      }
      case ar_stage::top_p: {
        const double pp = p.top_p;
        if (all) {
          ar_top_p_all(c, M, beta, pp * S, S, w, cp);
          all = false;
          break;
        }
        S = 0.0;
        ar_sort_better(w);
        for (const auto& e : w) S += std::exp(beta * (double(e.z) - M));
        double cum = 0.0;
        std::size_t n = 0;
        while (n < w.size()) {
          cum += std::exp(beta * (double(w[n].z) - M));
          ++n;
          if (cum >= pp * S) break;
        }
        w.resize(std::max<std::size_t>(n, 1));
        break;
      }
      case ar_stage::min_p: {
        const double lp = std::log(double(p.min_p));
        if (cp.active) {
          // the kept values also >= the smallest float z with beta (z - M) >= log(min_p)
          auto in = [&](float z) { return beta * (double(z) - M) >= lp; };
          const float ninf = -std::numeric_limits<float>::infinity();
          float t = float(M + lp / beta);
          while (!in(t)) t = std::nextafter(t, std::numeric_limits<float>::infinity());
          while (in(std::nextafter(t, ninf))) t = std::nextafter(t, ninf);
          if (t > cp.keep) {
            cp.keep = t;
            cp.last_tie = cp.n;
          }
          break;
        }
        if (all) {
          // collect below the exact bound by a margin, then filter exactly
          const float t = std::nextafter(float(M + lp / beta), -std::numeric_limits<float>::infinity());
          ar_collect(c, t - std::fabs(t) * 1e-6f, w);
          all = false;
        }
        w.erase(std::remove_if(w.begin(), w.end(),
                               [&](const ar_cand& e) { return !(beta * (double(e.z) - M) >= lp); }),
                w.end());
        break;
      }
    }
  }
  // (the rejection draw's last resort: the draw over the kept set with the next uniform)
  const double u = top.ok ? row_uniform_n(p.seed, row, 4 * uint64_t(ar_reject_attempts)) : row_uniform(p.seed, row);
  if (tr) {
    tr->beta = beta;
    tr->u = u;
    tr->all = all;
  }
  if (!all) {
    if (tr) {
      std::vector<ar_cand> kw;
      if (cp.active) cp.materialize(kw);
      const std::vector<ar_cand>& kv = cp.active ? kw : w;
      tr->kept.clear();
      for (const auto& e : kv) tr->kept.push_back(e.i);
      std::sort(tr->kept.begin(), tr->kept.end());
      if (top.ok) {  // the same attempts, membership from the kept set
        const uint32_t t = ar_reject(c, p, rj, top, M, sum, row, [&](uint32_t t, float) {
          return std::binary_search(tr->kept.begin(), tr->kept.end(), t);
        });
        if (t != no_index) return t;
      }
    }
    if (cp.active) return ar_draw_compact(cp, M, beta, u, *c.ks);
    return ar_draw(w, M, beta, u, *c.ks);
  }
  // the draw over the whole vocabulary: chunk sums in float, the crossing chunk in double
  const double target = u * S;
  double cum = 0.0;
  uint32_t last = st.i1;
  for (std::size_t b = 0; b < V; b += c.chunk) {
    const std::size_t n = std::min(c.chunk, V - b);
    const float* x = read_chunk(*c.lv, *c.ks, c.r, b, n, c.scratch, c.pl);
    const double s = c.ks->sum_exp(x, n, float(M), float(beta), nullptr, nullptr, 0);
    if (cum + s < target) {
      cum += s;
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double q = x[i] == x[i] ? std::exp(beta * (double(x[i]) - M)) : 0.0;
      if (q > 0.0) last = uint32_t(b + i);
      cum += q;
      if (cum >= target && q > 0.0) return uint32_t(b + i);
    }
  }
  return last;
}

inline void ar_sample_impl(const logits_view& lv, const ar_params* params, int32_t* tokens, thread_pool* pool,
                           sampling_backend be, const target_descriptor& tgt, ar_trace* traces) {
  check_logits(lv, "ar_sample");
  require(lv.rows > 0, "ar_sample: no rows");
  require(params && tokens, "ar_sample: params and tokens must not be null");
  require(!overlaps_logits(tokens, lv.rows * 4, lv) && !overlaps({tokens, lv.rows * 4}, {params, lv.rows * sizeof(ar_params)}),
          "ar_sample: tokens overlap the logits or the params");
  for (std::size_t r = 0; r < lv.rows; ++r) check_ar(lv, params[r], r);
  const auto& ks = sampling_kernels_for(be);
  const std::size_t V = lv.vocab, rows = lv.rows;
  const std::size_t chunk = std::min(sampling_chunk(tgt), (V + ar_block - 1) / ar_block * ar_block);
  const std::size_t nchunks = (V + chunk - 1) / chunk;
  const std::size_t nblocks = (V + ar_block - 1) / ar_block;
  const std::size_t threads = pool ? pool->size() : 1;
  // (split: one task per thread; a thread the OS holds back leaves its task to the caller's, which
  // takes it once its own is done: docs/sampling.md, "Design decisions")
  const bool split = ar_split_rows(rows, threads, V * lv.element_bytes());
  const std::size_t parts = split ? std::min(nchunks, (threads + rows - 1) / rows) : std::size_t(1);
  std::vector<std::vector<token_patch>> patches(rows);
  std::vector<float> sum_beta(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    patches[r] = ar_patches(lv, r, params[r]);
    sum_beta[r] = ar_sum_beta(params[r], V);
  }
  // rows the rejection draw may serve sum the chords (ar_sum; not with a trace, which needs S)
  std::vector<char> bounded(rows);
  for (std::size_t r = 0; r < rows; ++r)
    bounded[r] = !traces && sum_beta[r] != 0.f && ar_reject_plan_of(params[r], V).on;
  std::vector<float> bmax(rows * nblocks);
  // one result per chunk, merged in chunk order: the same bits for any split over threads
  std::vector<ar_part> part(rows * nchunks);
  auto pass = [&](std::size_t task) {
    const std::size_t r = task / parts, q = task % parts;
    reusable_bytes<sampling_buffer> buf(sampling_buffer::chunk, chunk * sizeof(float));
    float* scratch = reinterpret_cast<float*>(buf.get());
    const patch_list pl{patches[r].data(), patches[r].size()};
    const float beta = sum_beta[r];
    const float inf = std::numeric_limits<float>::infinity();
    float run = -inf;  // the maximum of this task's chunks so far (bounded rows: the chords' reference)
    for (std::size_t ci = nchunks * q / parts; ci < nchunks * (q + 1) / parts; ++ci) {
      ar_part& o = part[r * nchunks + ci];
      const std::size_t b = ci * chunk, n = std::min(chunk, V - b);
      const float* x = read_chunk(lv, ks, r, b, n, scratch, pl);
      // the next chunk (the next row's first after the last) is prefetched meanwhile: through the
      // one loop of a bounded row; else its first half during the maximum, the rest during the sum
      // when there is one (the DRAM stream runs through both loops: docs/sampling.md, "Design
      // decisions")
      const auto pf = ci + 1 < nchunks ? chunk_bytes(lv, r, b + n, chunk) : chunk_bytes(lv, r + 1, 0, chunk);
      float* bm = bmax.data() + r * nblocks + b / ar_block;
      if (bounded[r]) {
        // the maximum and the chords in one pass over the chunk (max_sum_bound)
        o.ref = run;
        const float s =
            ks.max_sum_bound(x, n, uint32_t(b), o.st, bm, o.ref, exp_bound_scale(beta), pf.first, pf.second);
        if (o.st.i1 != no_index && o.st.m1 < inf) {
          o.s = s;
          if (o.st.m1 > run) run = o.st.m1;
        }
        continue;
      }
      const bool sum = beta != 0.f;
      const std::size_t pf1 = sum ? pf.second / 128 * 64 : pf.second;
      ks.max_argmax(x, n, uint32_t(b), false, o.st, bm, pf.first, pf1);
      o.ref = o.st.m1;
      const void* pf2 = pf.first ? static_cast<const char*>(pf.first) + pf1 : nullptr;
      if (sum && o.st.i1 != no_index && o.st.m1 < inf)
        o.s = ks.sum_exp(x, n, o.st.m1, beta, nullptr, pf2, pf.second - pf1);
    }
  };
  auto finish = [&](std::size_t r) {
    max_state st;
    for (std::size_t q = 0; q < nchunks; ++q) merge_max(st, part[r * nchunks + q].st);
    reusable_bytes<sampling_buffer> buf(sampling_buffer::chunk, chunk * sizeof(float));
    const ar_row_ctx c{&lv, &ks, r, chunk, {patches[r].data(), patches[r].size()}, bmax.data() + r * nblocks, nblocks,
                       reinterpret_cast<float*>(buf.get()), parts > 1};
    // S from the chunks' sums (in bounded rows, the chords' sums: S's bounds, and S on demand)
    ar_sum sum;
    const double S = ar_merge_sums(part.data() + r * nchunks, nchunks, sum_beta[r], st.m1,
                                   [](std::size_t, const ar_part& o) { return std::pair<float, float>(o.s, o.ref); });
    if (bounded[r]) {
      sum.exact = false;
      sum.approx = S;
      sum.parts = part.data() + r * nchunks;
      sum.nchunks = nchunks;
      sum.chunk = chunk;
      sum.beta = sum_beta[r];
      sum.M = st.m1;
      ar_sum_bounds(sum, V, 0.0, 0.0);
    } else {
      sum.S = sum.lo = sum.hi = S;
    }
    tokens[r] = int32_t(ar_row(c, params[r], st, sum, r, traces ? traces + r : nullptr));
  };
  if (parts == 1 || pool == nullptr) {
    // a row's selection runs right after its pass, while the row is in this core's L2
    auto both = [&](std::size_t r) {
      pass(r);
      finish(r);
    };
    // (each thread a contiguous range of rows: its stream runs on from one row into the next, which
    // its pass prefetched; rows dealt one at a time left every row's start cold)
    if (pool && rows > 1) {
      const std::size_t tasks = std::min(rows, threads);
      pool->run(tasks, [&](std::size_t q) {
        for (std::size_t r = rows * q / tasks; r < rows * (q + 1) / tasks; ++r) both(r);
      });
    } else
      for (std::size_t r = 0; r < rows; ++r) both(r);
    return;
  }
  // several tasks per row: the last of a row's tasks to finish its pass runs the selection
  std::vector<std::atomic<std::size_t>> left(rows);
  for (auto& l : left) l.store(parts);
  pool->run(rows * parts, [&](std::size_t t) {
    pass(t);
    if (left[t / parts].fetch_sub(1, std::memory_order_acq_rel) == 1) finish(t / parts);
  });
}

}  // namespace detail

// One token per row of `logits` (rows x V), row r with params[r]. The categorical draw of row
// r uses u = row_uniform(params[r].seed, r), or for top-p on the whole vocabulary the rejection
// draw's uniforms row_uniform_n(params[r].seed, r, j) (ar_reject_plan): vary the seed per step. Results do not depend on
// the pool's size.
inline void ar_sample(const logits_view& logits, const ar_params* params, int32_t* tokens, thread_pool* pool = nullptr,
                      sampling_backend be = sampling_backend::best,
                      const target_descriptor& tgt = target::host::desc) {
  detail::ar_sample_impl(logits, params, tokens, pool, be, tgt, nullptr);
}

// A candidate of a row's draw: its token, its logit after the penalties (the value the chain
// ranked), and its probability in the distribution the token was drawn from.
struct ar_candidate {
  int32_t token;
  float logit;
  double prob;
};
// What an engine reports beside a sampled token: its log-probability in the distribution it was
// drawn from (after penalties, temperature and the filters; 0 for a greedy pick), its
// log-probability under the unprocessed logits (log-softmax at temperature 1, no penalty, no
// filter: vLLM's raw logprobs), and the most probable candidates of that distribution, most
// probable first (ties: lower token), at most max_candidates of its `support` tokens.
struct ar_choice {
  int32_t token = -1;
  double logprob = 0.0;
  double raw_logprob = 0.0;
  std::size_t support = 0;
  std::vector<ar_candidate> candidates;
};

// ar_sample, and per row the choice above (the same tokens as ar_sample for the same arguments).
// Costs two more streaming reads of each row than ar_sample (the unprocessed log-sum-exp, and
// the distribution's normalizer where no filter cut the vocabulary), in double precision.
inline void ar_sample_choices(const logits_view& logits, const ar_params* params, ar_choice* choices,
                              std::size_t max_candidates = 20, thread_pool* pool = nullptr,
                              sampling_backend be = sampling_backend::best,
                              const target_descriptor& tgt = target::host::desc) {
  using namespace detail;
  require(choices != nullptr, "ar_sample_choices: choices must not be null");
  check_logits(logits, "ar_sample_choices");
  const std::size_t rows = logits.rows, V = logits.vocab;
  std::vector<int32_t> tokens(rows);
  std::vector<ar_trace> traces(rows);
  ar_sample_impl(logits, params, tokens.data(), pool, be, tgt, traces.data());
  const auto& ks = sampling_kernels_for(be);
  constexpr std::size_t chunk = 4096;
  auto row = [&](std::size_t r) {
    const ar_params& p = params[r];
    const ar_trace& tr = traces[r];
    ar_choice& c = choices[r];
    const auto patches = ar_patches(logits, r, p);
    const patch_list pl{patches.data(), patches.size()};
    std::vector<float> buf(chunk);
    // the distribution's support and its (penalized) logits
    std::vector<ar_cand> sup;
    if (tr.all)
      for (std::size_t b = 0; b < V; b += chunk) {
        const std::size_t n = std::min(chunk, V - b);
        const float* x = read_chunk(logits, ks, r, b, n, buf.data(), pl);
        for (std::size_t i = 0; i < n; ++i)
          if (x[i] == x[i] && x[i] > -std::numeric_limits<float>::infinity()) sup.push_back({uint32_t(b + i), x[i]});
      }
    else
      for (uint32_t t : tr.kept) sup.push_back({t, read_value(logits, r, t, pl)});
    double M = -std::numeric_limits<double>::infinity();
    for (const auto& e : sup) M = std::max(M, double(e.z));
    const bool point = greedy(p) || sup.size() == 1;
    double total = 0.0;
    for (const auto& e : sup) total += point ? (e.i == uint32_t(tokens[r]) ? 1.0 : 0.0) : std::exp(tr.beta * (double(e.z) - M));
    auto prob = [&](const ar_cand& e) {
      return point ? (e.i == uint32_t(tokens[r]) ? 1.0 : 0.0) : std::exp(tr.beta * (double(e.z) - M)) / total;
    };
    c.token = tokens[r];
    c.support = point ? 1 : sup.size();
    c.logprob = 0.0;
    for (const auto& e : sup)
      if (e.i == uint32_t(c.token)) c.logprob = std::log(prob(e));
    const std::size_t k = std::min(max_candidates, c.support);
    if (point) sup.erase(std::remove_if(sup.begin(), sup.end(), [&](const ar_cand& e) { return e.i != uint32_t(c.token); }), sup.end());
    std::partial_sort(sup.begin(), sup.begin() + std::ptrdiff_t(k), sup.end(), ar_better);
    c.candidates.clear();
    for (std::size_t j = 0; j < k; ++j) c.candidates.push_back({int32_t(sup[j].i), sup[j].z, prob(sup[j])});
    // log-softmax of the unprocessed row (NaN never counts)
    double Mr = -std::numeric_limits<double>::infinity(), Sr = 0.0;
    for (std::size_t b = 0; b < V; b += chunk) {
      const std::size_t n = std::min(chunk, V - b);
      const float* x = read_chunk(logits, ks, r, b, n, buf.data(), patch_list{});
      for (std::size_t i = 0; i < n; ++i) {
        if (!(x[i] > -std::numeric_limits<float>::infinity())) continue;  // NaN, -inf: no mass
        if (double(x[i]) > Mr) {
          Sr = Sr * std::exp(Mr - double(x[i])) + 1.0;
          Mr = double(x[i]);
        } else {
          Sr += std::exp(double(x[i]) - Mr);
        }
      }
    }
    c.raw_logprob = double(read_value(logits, r, uint32_t(c.token), patch_list{})) - Mr - std::log(Sr);
  };
  if (pool && rows > 1)
    pool->run(rows, row);
  else
    for (std::size_t r = 0; r < rows; ++r) row(r);
}

}  // namespace lutkit
