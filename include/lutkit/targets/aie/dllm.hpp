// lutkit — the diffusion-LLM sampling step's streaming pass on the AIE model: over one position's
// vocabulary, streamed through the data memory in chunks of V_chunk logits (ping-pong), the
// fused max, argmax (ties: the lower index) and sum of exp(l - max) (the stable-max confidence
// x0_p = 1 / sum). 16 fp32 lanes each keep a running max, its first index and a running sum. Per
// chunk, two passes over the data memory: the lanes' maxima and indices, then the sums of
// exp(l - max) (exp by the table, exp.hpp), the running sums rescaled once per chunk; the lanes
// are merged at the end. NaN logits are skipped (as -inf), as the host's reference skips them.
#pragma once
#include "exp.hpp"

namespace lutkit::aie {

struct dllm_step {
  float max = 0.f;
  uint32_t argmax = 0;
  float sumexp = 0.f;  // sum over the vocabulary of exp(l - max)
};

template <class P>
status dllm_max_argmax_sumexp(core<P>& c, const float* logits, std::size_t V, std::size_t vchunk, dllm_step& r) {
  if (logits == nullptr) return status::null_pointer;
  if (V == 0 || vchunk == 0 || vchunk % 16 != 0 || vchunk > 4096) return status::bad_shape;
  c.reset_memory();
  const exp_lut E = make_exp_lut(c);
  const uint32_t buf[2] = {c.alloc(vchunk * 4, 64), c.alloc(vchunk * 4, 64)};
  if (c.st != status::ok) return c.st;
  const float ninf = -__builtin_inff();
  auto m = acc_broadcast<acc_kind::accfloat, 16>(c, ninf);
  auto s = acc_broadcast<acc_kind::accfloat, 16>(c, 0.f);
  vec<int32_t, 16> idx;
  const bool tie_high = c.faulty(fault::dllm_argmax_tie);
  for (std::size_t v0 = 0, ch = 0; v0 < V; v0 += vchunk, ++ch) {
    const std::size_t n = V - v0 < vchunk ? V - v0 : vchunk;
    // (the DMA brings the chunk; padding lanes are -inf)
    float stage[4096];
    for (std::size_t i = 0; i < vchunk; ++i) stage[i] = i < n ? logits[v0 + i] : ninf;
    c.dma_in(buf[ch % 2], stage, vchunk * 4);
    // pass 1: each lane's running max and its first index over the chunk
    c.loop_begin("dllm.max");
    const auto mprev = m;
    for (std::size_t i = 0; i < vchunk; i += 16) {
      c.iteration();
      auto x = load_acc<acc_kind::accfloat, 16>(c, buf[ch % 2] + uint32_t(4 * i));
      c.issue(slot::vec, 2);  // NaN -> -inf (compare, select)
      for (int l = 0; l < 16; ++l)
        if (!(x.v[l] == x.v[l])) x.v[l] = ninf;
      c.issue(slot::vec, 3);  // x > m (>= under the planted fault), the lanes' indices, the index select
      for (int l = 0; l < 16; ++l)
        if (tie_high ? x.v[l] >= m.v[l] && x.v[l] != ninf : x.v[l] > m.v[l]) idx.v[l] = int32_t(v0 + i + std::size_t(l));
      m = fmax(c, m, x);
    }
    c.loop_end();
    // the running sums rescaled to the chunk's new maxima, once per chunk
    accum<acc_kind::accfloat, 16> dm;
    c.issue(slot::vec, 2);
    for (int l = 0; l < 16; ++l) dm.v[l] = mprev.v[l] == ninf || m.v[l] == ninf ? ninf : mprev.v[l] - m.v[l];
    if (!c.faulty(fault::dllm_sum_rescale)) s = fmul(c, s, from_bf16(c, exp_bf16(c, E, dm)));
    // pass 2: the sums of exp(x - m) (the chunk is read from the data memory again)
    const auto negm = [&] {
      accum<acc_kind::accfloat, 16> r;
      for (int l = 0; l < 16; ++l) r.v[l] = m.v[l] == ninf ? 0.f : -m.v[l];
      return r;
    }();
    c.issue(slot::vec, 2);
    c.loop_begin("dllm.sum");
    for (std::size_t i = 0; i < vchunk; i += 16) {
      c.iteration();
      auto x = load_acc<acc_kind::accfloat, 16>(c, buf[ch % 2] + uint32_t(4 * i));
      c.issue(slot::vec, 2);  // NaN -> -inf
      for (int l = 0; l < 16; ++l)
        if (!(x.v[l] == x.v[l])) x.v[l] = ninf;
      s = fadd(c, s, from_bf16(c, exp_bf16(c, E, fadd(c, x, negm))));
    }
    c.loop_end();
  }
  // merge the lanes: the largest max, the lowest index reaching it, the sums rescaled to it
  c.loop_begin("dllm.merge");
  c.iteration();
  float M = ninf;
  for (int l = 0; l < 16; ++l) M = m.v[l] > M ? m.v[l] : M;
  uint32_t best = 0xFFFFFFFFu;
  for (int l = 0; l < 16; ++l)
    if (m.v[l] == M && M != ninf && uint32_t(idx.v[l]) < best) best = uint32_t(idx.v[l]);
  c.issue(slot::vec, 8);  // the max and the index: log2(16) shuffle + compare steps each
  accum<acc_kind::accfloat, 16> dm;
  for (int l = 0; l < 16; ++l) dm.v[l] = m.v[l] == ninf ? ninf : m.v[l] - M;
  const auto w = fmul(c, s, from_bf16(c, exp_bf16(c, E, dm)));
  float S = 0.f;
  for (int l = 0; l < 16; ++l) S += w.v[l];
  c.issue(slot::vec, 4);
  c.loop_end();
  r.max = M;
  r.argmax = best == 0xFFFFFFFFu ? 0 : best;
  r.sumexp = S;
  return M == ninf ? status::bad_shape : c.st;
}

}  // namespace lutkit::aie
