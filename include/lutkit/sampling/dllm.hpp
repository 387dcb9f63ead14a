// lutkit — diffusion-LLM sampling (LLaDA / Dream / Fast-dLLM semantics) on logits [B x L x V]:
//   dllm_sample    per position: x0 (argmax, or Gumbel-max at temperature > 0) and its
//                  confidence, in ONE streaming pass over the vocabulary (max, argmax and
//                  sum exp(l - max) together, chunk by chunk, the chunk sized from the target's L1);
//   dllm_select    per batch row: which masked positions to unmask (top-k of confidence, or
//                  Fast-dLLM's threshold mode);
//   dllm_update    the masked update x <- x0 where selected (and the EOS rule);
//   dllm_step      the three in a row; unmask_schedule: LLaDA's number of tokens per step.
// Semantics of every option: docs/sampling.md.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/target.hpp"
#include "../core/thread_pool.hpp"
#include "logits.hpp"
#include "microkernel.hpp"
#include "rng.hpp"
#include "row_reader.hpp"
#include "targets.hpp"

namespace lutkit {

enum class dllm_confidence : uint8_t {
  probability,  // softmax probability of x0 (LLaDA's "low_confidence" remasking)
  margin,       // top-1 minus top-2 probability (Dream's "margin")
  neg_entropy   // sum p log p (Dream's "entropy": the negative entropy)
};
enum class dllm_eos : uint8_t {
  none,      // EOS is a token like any other
  suppress,  // EOS is never sampled (its logit counts as -inf)
  stop       // after an update, masked positions after a row's first EOS become EOS
};

struct dllm_params {
  int32_t mask_id = 126336;  // LLaDA's [MASK]
  float temperature = 0.f;   // 0: x0 = argmax; > 0: Gumbel-max argmax(l / T + g)
  uint64_t seed = 0;         // with (batch row, position, token): the Gumbel noise
  dllm_confidence confidence = dllm_confidence::probability;
  std::size_t block_begin = 0;  // active block [begin, end) of the L positions
  std::size_t block_end = std::size_t(-1);  // (-1: to L)
  bool threshold_mode = false;  // Fast-dLLM: top-1 and every other with confidence >= threshold
  float threshold = 0.9f;
  int32_t eos_id = -1;
  dllm_eos eos = dllm_eos::none;
  bool suppress_mask_token = false;  // never sample mask_id itself
};

// LLaDA's get_num_transfer_tokens: `masked` tokens over `steps` steps, floor(masked / steps)
// each, the first masked % steps steps one more.
inline std::vector<std::size_t> unmask_schedule(std::size_t masked, std::size_t steps) {
  detail::require(steps > 0, "unmask_schedule: steps must be > 0");
  std::vector<std::size_t> k(steps, masked / steps);
  for (std::size_t i = 0; i < masked % steps; ++i) ++k[i];
  return k;
}

namespace detail {

inline void check_dllm(const logits_view& lv, std::size_t B, std::size_t L, const dllm_params& p, const char* who) {
  check_logits(lv, who);
  require(B > 0 && L > 0, who, ": B and L must be > 0 (got B=", B, ", L=", L, ")");
  checked_elements(B, L, who, "B x L");
  require(lv.rows == B * L, who, ": logits have ", lv.rows, " rows, expected B*L = ", B * L);
  require(p.confidence == dllm_confidence::probability || p.confidence == dllm_confidence::margin ||
              p.confidence == dllm_confidence::neg_entropy,
          who, ": unknown dllm_confidence ", int(p.confidence));
  require(p.eos == dllm_eos::none || p.eos == dllm_eos::suppress || p.eos == dllm_eos::stop, who,
          ": unknown dllm_eos ", int(p.eos));
  require(std::isfinite(p.temperature) && p.temperature >= 0.f, who, ": temperature must be finite and >= 0 (got ",
          p.temperature, ")");
  require(p.temperature == 0.f || std::isfinite(1.f / p.temperature), who, ": temperature ", p.temperature,
          " is so small that 1 / T overflows (use 0 for the argmax)");
  require(p.block_begin < std::min(p.block_end, L), who, ": active block [",
          p.block_begin, ", ", p.block_end, ") is empty or starts beyond L = ", L);
  require(p.eos == dllm_eos::none || (p.eos_id >= 0 && std::size_t(p.eos_id) < lv.vocab), who,
          ": EOS handling needs an eos_id in [0, V) (got ", p.eos_id, ")");
  require(p.mask_id >= 0 && std::size_t(p.mask_id) < lv.vocab, who, ": mask_id ", p.mask_id, " outside [0, V = ",
          lv.vocab, ")");
  require(!std::isnan(p.threshold), who, ": threshold is NaN");
}

struct dllm_pos_out {
  uint32_t x0;
  float conf;
};

// one position (row r of the logits): the single streaming pass
inline dllm_pos_out dllm_position(const logits_view& lv, const sampling_kernel_set& ks, std::size_t r, std::size_t chunk,
                                  float* scratch, patch_list pl, const dllm_params& p, rng_key key) {
  const std::size_t V = lv.vocab;
  const bool margin = p.confidence == dllm_confidence::margin;
  const bool ent = p.confidence == dllm_confidence::neg_entropy;
  const bool gumbel = p.temperature > 0.f;
  const float beta = gumbel ? 1.f / p.temperature : 1.f;
  max_state st;
  double S = 0.0, E = 0.0;
  float M = -std::numeric_limits<float>::infinity();
  float gy = -std::numeric_limits<float>::infinity();
  uint32_t gi = no_index;
  for (std::size_t b = 0; b < V; b += chunk) {
    const std::size_t n = std::min(chunk, V - b);
    // (after the first chunk, without Gumbel noise, bf16 / fp16 elements are read in place by
    // the fused pass, not decoded into the scratch first)
    const bool in_place = !gumbel && M > -std::numeric_limits<float>::infinity() && max_sum_in_place(lv, ks, b, n, pl);
    const float* x = in_place ? nullptr : read_chunk(lv, ks, r, b, n, scratch, pl);
    // prefetch the next chunk (the next row's first one after the last: positions run in order)
    const auto pf = chunk_bytes(lv, b + n < V ? r : r + 1, b + n < V ? b + n : 0, chunk);
    if (gumbel) ks.gumbel_argmax(x, n, uint32_t(b), key, beta, gy, gi);
    float e = 0.f, s;
    if (M > -std::numeric_limits<float>::infinity()) {
      // one pass: max and sum exp(x - M) relative to the running maximum M
      s = in_place ? max_sum_exp_in_place(lv, ks, r, b, n, margin, st, M, 1.f, ent ? &e : nullptr, pf.first, pf.second)
                   : ks.max_sum_exp(x, n, uint32_t(b), margin, st, M, 1.f, ent ? &e : nullptr, pf.first, pf.second);
      if (!(st.m1 < std::numeric_limits<float>::infinity())) break;  // +inf: reported below
      if (st.m1 > M + 64.f) {  // terms up to e^64 in float would lose the small ones: redo
        if (in_place) x = read_chunk(lv, ks, r, b, n, scratch, pl);
        e = 0.f;
        const float m = st.m1;
        s = ks.sum_exp(x, n, m, 1.f, ent ? &e : nullptr, nullptr, 0);
        const double c = std::exp(double(M) - double(m));
        E = c * (E + (double(M) - double(m)) * S);
        S *= c;
        M = m;
      }
    } else {
      // no finite maximum yet: the chunk's own maximum first
      ks.max_argmax(x, n, uint32_t(b), margin, st, nullptr, pf.first, pf.second);
      if (st.i1 == no_index) continue;  // nothing but NaN / -inf so far
      if (!(st.m1 < std::numeric_limits<float>::infinity())) break;
      M = st.m1;
      s = ks.sum_exp(x, n, M, 1.f, ent ? &e : nullptr, pf.first, pf.second);
    }
    S += s;
    E += e;
    if (st.m1 > M) {  // rescale the running sums (relative to M) to the new maximum
      const double d = double(M) - double(st.m1), c = std::exp(d);
      E = c * (E + d * S);
      S *= c;
      M = st.m1;
    }
  }
  require(st.i1 != no_index && std::isfinite(st.m1), "dllm_sample: logits row ", r,
          " has no finite maximum (all NaN / -inf, or +inf)");
  require(!gumbel || gi != no_index, "dllm_sample: logits row ", r, ": no finite l / T + g at temperature ",
          p.temperature, " (use 0 for the argmax)");
  dllm_pos_out o;
  o.x0 = gumbel ? gi : st.i1;
  switch (p.confidence) {
    case dllm_confidence::probability:
      o.conf = gumbel ? float(std::exp(double(read_value(lv, r, o.x0, pl)) - double(M)) / S) : float(1.0 / S);
      break;
    case dllm_confidence::margin:
      o.conf = float((1.0 - std::exp(double(st.m2) - double(st.m1))) / S);
      break;
    case dllm_confidence::neg_entropy:
      o.conf = float(E / S - std::log(S));
      break;
  }
  return o;
}

}  // namespace detail

// Per position b * L + l: x0 and its confidence where x is the mask token inside the active
// block; elsewhere x0 = x and confidence -inf. logits: B * L rows of V.
inline void dllm_sample(const logits_view& logits, std::size_t B, std::size_t L, const int32_t* x,
                        const dllm_params& p, int32_t* x0, float* conf, thread_pool* pool = nullptr,
                        sampling_backend be = sampling_backend::best,
                        const target_descriptor& tgt = target::host::desc) {
  detail::check_dllm(logits, B, L, p, "dllm_sample");
  detail::require(x && x0 && conf, "dllm_sample: x, x0 and conf must not be null");
  {
    using detail::overlaps;
    const std::size_t n = B * L * 4;
    detail::require(!detail::overlaps_logits(x0, n, logits) && !detail::overlaps_logits(conf, n, logits),
                    "dllm_sample: x0 or conf overlaps the logits");
    detail::require(!overlaps({x0, n}, {x, n}) && !overlaps({conf, n}, {x, n}) && !overlaps({x0, n}, {conf, n}),
                    "dllm_sample: x0, conf and x must be three separate buffers");
  }
  const auto& ks = detail::sampling_kernels_for(be);
  const std::size_t end = std::min(p.block_end, L);
  std::vector<uint32_t> act;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t l = 0; l < L; ++l) {
      const std::size_t i = b * L + l;
      x0[i] = x[i];
      conf[i] = -std::numeric_limits<float>::infinity();
      if (l >= p.block_begin && l < end && x[i] == p.mask_id) act.push_back(uint32_t(i));
    }
  detail::token_patch pt[2];
  std::size_t np = 0;
  if (p.eos == dllm_eos::suppress) pt[np++] = {uint32_t(p.eos_id), -std::numeric_limits<float>::infinity()};
  if (p.suppress_mask_token && !(np && pt[0].token == uint32_t(p.mask_id)))
    pt[np++] = {uint32_t(p.mask_id), -std::numeric_limits<float>::infinity()};
  if (np == 2 && pt[1].token < pt[0].token) std::swap(pt[0], pt[1]);
  const detail::patch_list pl{pt, np};
  const std::size_t chunk = std::min(sampling_chunk(tgt), (logits.vocab + 31) / 32 * 32);
  const std::size_t threads = pool ? pool->size() : 1;
  const std::size_t tasks = std::min(act.size(), threads * 4);
  auto work = [&](std::size_t t) {
    detail::reusable_bytes<detail::sampling_buffer> buf(detail::sampling_buffer::chunk, chunk * sizeof(float));
    float* scratch = reinterpret_cast<float*>(buf.get());
    const std::size_t a = act.size() * t / tasks, e = act.size() * (t + 1) / tasks;
    for (std::size_t j = a; j < e; ++j) {
      const std::size_t i = act[j];
      const auto key = detail::make_key(p.seed, i / L, i % L);
      const auto o = detail::dllm_position(logits, ks, i, chunk, scratch, pl, p, key);
      x0[i] = int32_t(o.x0);
      conf[i] = o.conf;
    }
  };
  if (pool && tasks > 1)
    pool->run(tasks, work);
  else
    for (std::size_t t = 0; t < tasks; ++t) work(t);
}

// Per batch row: transfer[b * L + l] = 1 for the positions to unmask. Candidates are the
// positions with confidence > -inf; top-k mode takes the k[b] most confident (ties: lower
// position first; k larger than the candidates is clamped), threshold mode the most confident
// one and every other with confidence >= p.threshold. Returns the number selected.
inline std::size_t dllm_select(const float* conf, std::size_t B, std::size_t L, const std::size_t* k,
                               const dllm_params& p, uint8_t* transfer) {
  detail::require(conf && transfer, "dllm_select: conf and transfer must not be null");
  detail::checked_elements(B, L, "dllm_select", "B x L");
  detail::require(!detail::overlaps({conf, B * L * 4}, {transfer, B * L}), "dllm_select: transfer overlaps conf");
  detail::require(p.threshold_mode || !detail::overlaps({k, B * sizeof(std::size_t)}, {transfer, B * L}),
                  "dllm_select: transfer overlaps k");
  detail::require(p.threshold_mode || k, "dllm_select: top-k mode needs k per batch row");
  detail::require(!std::isnan(p.threshold), "dllm_select: threshold is NaN");
  std::size_t total = 0;
  std::vector<uint32_t> cand;
  for (std::size_t b = 0; b < B; ++b) {
    const float* c = conf + b * L;
    uint8_t* tr = transfer + b * L;
    cand.clear();
    for (std::size_t l = 0; l < L; ++l) {
      tr[l] = 0;
      if (c[l] > -std::numeric_limits<float>::infinity()) cand.push_back(uint32_t(l));
    }
    if (cand.empty()) continue;
    const auto better = [&](uint32_t a, uint32_t d) { return c[a] > c[d] || (c[a] == c[d] && a < d); };
    if (p.threshold_mode) {
      const uint32_t top = *std::min_element(cand.begin(), cand.end(), better);
      for (uint32_t l : cand)
        if (l == top || c[l] >= p.threshold) tr[l] = 1, ++total;
    } else {
      const std::size_t kk = std::min(k[b], cand.size());
      std::partial_sort(cand.begin(), cand.begin() + std::ptrdiff_t(kk), cand.end(), better);
      for (std::size_t j = 0; j < kk; ++j) tr[cand[j]] = 1;
      total += kk;
    }
  }
  return total;
}

// x <- x0 where transfer; then, with eos == stop, every mask token after a row's first EOS
// becomes EOS.
inline void dllm_update(int32_t* x, const int32_t* x0, const uint8_t* transfer, std::size_t B, std::size_t L,
                        const dllm_params& p) {
  detail::require(x && x0 && transfer, "dllm_update: x, x0 and transfer must not be null");
  detail::checked_elements(B, L, "dllm_update", "B x L");
  detail::require(!detail::overlaps({x, B * L * 4}, {x0, B * L * 4}) && !detail::overlaps({x, B * L * 4}, {transfer, B * L}),
                  "dllm_update: x overlaps x0 or transfer");
  for (std::size_t i = 0; i < B * L; ++i)
    if (transfer[i]) x[i] = x0[i];
  if (p.eos == dllm_eos::stop)
    for (std::size_t b = 0; b < B; ++b) {
      int32_t* r = x + b * L;
      std::size_t l = 0;
      while (l < L && r[l] != p.eos_id) ++l;
      for (++l; l < L; ++l)
        if (r[l] == p.mask_id) r[l] = p.eos_id;
    }
}

// One denoising step: sample, select (k: tokens to unmask per batch row, e.g. this step's
// entry of unmask_schedule; ignored in threshold mode), update x in place. Returns the number
// of positions unmasked.
inline std::size_t dllm_step(const logits_view& logits, std::size_t B, std::size_t L, int32_t* x,
                             const std::size_t* k, const dllm_params& p, thread_pool* pool = nullptr,
                             sampling_backend be = sampling_backend::best) {
  std::vector<int32_t> x0(B * L);
  std::vector<float> conf(B * L);
  std::vector<uint8_t> tr(B * L);
  dllm_sample(logits, B, L, x, p, x0.data(), conf.data(), pool, be);
  const std::size_t n = dllm_select(conf.data(), B, L, k, p, tr.data());
  dllm_update(x, x0.data(), tr.data(), B, L, p);
  return n;
}

}  // namespace lutkit
