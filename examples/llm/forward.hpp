// lutkit example engine — the forward pass of a decoder-only transformer on lutkit's kernels:
//
//   x = embed(tokens)                                            (the file's rows, dequantized)
//   per layer:  h = RMSNorm(x) * attn_norm
//               q, k, v = Wq h, Wk h, Wv h  (+ bias: qwen2)      matrix::apply: decode_gemv for a
//               q, k = RMSNorm per head * q_norm, k_norm (qwen3)   few rows, dequant-GEMM for more;
//                                                 (apply_same_input: one set of LUT tables for Q, K, V)
//               RoPE(q, k) at each token's position
//               K, V appended to the fp16 cache
//               a = attention_prefill (a chunk) / attention_decode (one token)
//                   (gemma3's local layers: a sliding window, and their own RoPE base)
//               x += Wo a                       (gemma3: x += RMSNorm(Wo a) * post_attn_norm)
//               h = RMSNorm(x) * ffn_norm;  x += W_down (SiLU(W_gate h) * W_up h)  (one set for gate, up)
//                                               (gemma3: GELU-tanh, and the post-FFN norm)
//   logits = W_out (RMSNorm(x_last) * output_norm)
//
// One pass (the buffers and this loop) serves both callers: a session, which holds the KV cache
// (fp16, head-major per layer, sized from the context length) and takes a chunk of tokens at the
// cache's end (forward() returns the logits of its last token), and a batch, which takes one
// token of each of B sequences that continue a shared prompt.
#pragma once
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model.hpp"

namespace llm {

inline void rms_norm(const float* x, const float* w, float* y, std::size_t n, float eps) {
  double s4[4] = {};  // four chains of additions, not one
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t j = 0; j < 4; ++j) s4[j] += double(x[i + j]) * double(x[i + j]);
  double ss = (s4[0] + s4[1]) + (s4[2] + s4[3]);
  for (; i < n; ++i) ss += double(x[i]) * double(x[i]);
  const float r = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
  for (std::size_t j = 0; j < n; ++j) y[j] = x[j] * r * w[j];
}

// RoPE of one head (d values) at position pos: n_rot dimensions rotated, as pairs (2i, 2i + 1)
// or halves (i, i + n_rot / 2), angle pos * base^(-2i / n_rot)
inline void rope(float* v, std::size_t n_rot, rope_style st, const float* cs, const float* sn) {
  const std::size_t h = n_rot / 2;
  for (std::size_t i = 0; i < h; ++i) {
    const std::size_t a = st == rope_style::pairs ? 2 * i : i, b = st == rope_style::pairs ? 2 * i + 1 : i + h;
    const float x0 = v[a], x1 = v[b];
    v[a] = x0 * cs[i] - x1 * sn[i];
    v[b] = x0 * sn[i] + x1 * cs[i];
  }
}

// e^x for x in [-87, 88] (the callers clamp): the attention's exp polynomial
// (lutkit/attention/exp.hpp: its constants, 2^k p(r), k = round(x log2 e), r = x - k ln 2 in two
// parts, p the degree-7 Taylor polynomial, relative error about 1e-7) without its branches and
// library calls: k by adding 1.5 * 2^23, whose low mantissa bits are then k, and 2^k placed in
// the exponent field. Straight-line code, so that the loops calling it vectorize.
inline float exp_clamped(float x) {
  namespace d = lutkit::detail;
  constexpr float magic = 0x1.8p23f;
  const float t = x * d::exp_log2e + magic;
  const float k = t - magic;
  float r = x - k * d::exp_ln2_hi;  // ln 2's first 8 significant bits: k * that is exact
  r = r - k * d::exp_ln2_lo;        // the rest of ln 2
  float p = d::exp_c7;
  p = p * r + d::exp_c6;
  p = p * r + d::exp_c5;
  p = p * r + d::exp_c4;
  p = p * r + d::exp_c3;
  p = p * r + d::exp_c2;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const int32_t e = (std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(magic) + 127) << 23;  // 2^k, k in [-126, 127]
  return p * std::bit_cast<float>(e);
}

// g = act(g) * u over n values: SiLU(g) = g / (1 + e^-g), or Gemma's GELU-tanh,
// 0.5 g (1 + tanh(z)) = g / (1 + e^-2z) with z = sqrt(2 / pi) (g + 0.044715 g^3). The exponent is
// clamped to [-87, 88] (e^88 is finite: a large negative g gives about 0, a large positive one g;
// NaN stays NaN). One clone per x86 ISA level, chosen when the program loads: the loop is
// vectorized at the CPU's widest.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LLM_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("tree-vectorize")))
#else
#define LLM_CLONES
#endif
LLM_CLONES inline void gated_activation(float* g, const float* u, std::size_t n, bool gelu) {
  if (gelu)
    for (std::size_t i = 0; i < n; ++i) {
      const float x = g[i], a = -1.5957691216f * (x + 0.044715f * x * x * x);
      g[i] = x / (1.f + exp_clamped(std::min(std::max(a, -87.f), 88.f))) * u[i];
    }
  else
    for (std::size_t i = 0; i < n; ++i) {
      const float x = g[i];
      g[i] = x / (1.f + exp_clamped(std::min(std::max(-x, -87.f), 88.f))) * u[i];
    }
}

// The measured time of each stage (model.hpp) and of the whole passes, over the passes run with it
struct step_profile {
  double stage_s[stages] = {};
  double passes_s = 0;  // the passes' time: the stages and the rest
  std::size_t passes = 0;
};

// The buffers of a forward pass over n rows and its layer loop. Row t is at position
// `position(t)`; `append(l, t, hh, k, v)` stores row t's K and V of KV head hh in layer l (head_dim
// floats each); `attend(l, ao, q, att)` runs layer l's attention of the n query rows (the options
// carry the layer's mask). Leaves the rows' final hidden states in x.
struct pass {
  std::vector<float> x, h, q, k, v, att, o, g, u, cs, sn, csl, snl;
  step_profile* prof = nullptr;  // when set, each stage's time is added to it

  template <class F>
  void timed(stage st, F&& f) {
    if (!prof) return f();
    const auto a = std::chrono::steady_clock::now();
    f();
    prof->stage_s[std::size_t(st)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  }

  template <class Position, class Append, class Attend>
  void run(const model& m, const int32_t* tokens, std::size_t n, Position position, Append append, Attend attend,
           lutkit::thread_pool* pool) {
    const hparams& hp = m.hp;
    const std::size_t E = hp.n_embd, QD = hp.q_dim(), KD = hp.kv_dim(), hd = hp.head_dim, F = hp.n_ff;
    x.resize(n * E), h.resize(n * E), q.resize(n * QD), k.resize(n * KD), v.resize(n * KD), att.resize(n * QD);
    o.resize(n * E), g.resize(n * F), u.resize(n * F);
    for (std::size_t t = 0; t < n; ++t) m.embed(tokens[t], x.data() + t * E);
    // the rotation of every row's position (global layers; gemma3's local ones: csl, snl)
    const std::size_t hr = hp.n_rot / 2;
    auto angles = [&](std::vector<float>& c, std::vector<float>& s_, double base, double scale) {
      c.resize(n * hr), s_.resize(n * hr);
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t i = 0; i < hr; ++i) {
          const double th = double(position(t)) / scale * std::pow(base, -2.0 * double(i) / double(hp.n_rot));
          c[t * hr + i] = float(std::cos(th));
          s_[t * hr + i] = float(std::sin(th));
        }
    };
    angles(cs, sn, double(hp.rope_base), double(hp.rope_scale));
    if (hp.swa_pattern) angles(csl, snl, double(hp.rope_base_local), 1.0);
    lutkit::attention_options ao;
    ao.heads_q = hp.n_head;
    ao.heads_kv = hp.n_head_kv;
    ao.head_dim = hd;
    ao.scale = float(1.0 / std::sqrt(double(hd)));
    auto norm_rows = [&](const float* in, const std::vector<float>& w, float* out) {
      for (std::size_t t = 0; t < n; ++t) rms_norm(in + t * E, w.data(), out + t * E, E, hp.rms_eps);
    };
    for (std::size_t l = 0; l < hp.n_layer; ++l) {
      const layer& L = m.layers[l];
      const bool local = hp.local(l);
      const float* rc = local ? csl.data() : cs.data();
      const float* rs = local ? snl.data() : sn.data();
      ao.mask = local ? lutkit::mask_kind::window : lutkit::mask_kind::causal;
      ao.window = local ? hp.window : 0;
      norm_rows(x.data(), L.attn_norm, h.data());
      timed(stage::qkv, [&] {
        apply_same_input({{&L.wq, q.data()}, {&L.wk, k.data()}, {&L.wv, v.data()}}, h.data(), n, pool);
      });
      for (std::size_t t = 0; t < n; ++t) {
        if (hp.qkv_bias) {
          for (std::size_t i = 0; i < QD; ++i) q[t * QD + i] += L.bq[i];
          for (std::size_t i = 0; i < KD; ++i) k[t * KD + i] += L.bk[i], v[t * KD + i] += L.bv[i];
        }
        for (std::size_t hh = 0; hh < hp.n_head; ++hh) {
          float* qh = q.data() + t * QD + hh * hd;
          if (hp.qk_norm) rms_norm(qh, L.q_norm.data(), qh, hd, hp.rms_eps);
          rope(qh, hp.n_rot, hp.rope, rc + t * hr, rs + t * hr);
        }
        for (std::size_t hh = 0; hh < hp.n_head_kv; ++hh) {
          float* kh = k.data() + t * KD + hh * hd;
          if (hp.qk_norm) rms_norm(kh, L.k_norm.data(), kh, hd, hp.rms_eps);
          rope(kh, hp.n_rot, hp.rope, rc + t * hr, rs + t * hr);
          append(l, t, hh, kh, v.data() + t * KD + hh * hd);
        }
      }
      timed(stage::attention, [&] { attend(l, ao, q.data(), att.data()); });
      timed(stage::o, [&] { L.wo.apply(att.data(), n, o.data(), pool); });
      if (hp.post_norms) norm_rows(o.data(), L.post_attn_norm, o.data());
      for (std::size_t i = 0; i < n * E; ++i) x[i] += o[i];
      norm_rows(x.data(), L.ffn_norm, h.data());
      timed(stage::gate_up, [&] { apply_same_input({{&L.w_gate, g.data()}, {&L.w_up, u.data()}}, h.data(), n, pool); });
      gated_activation(g.data(), u.data(), n * F, hp.gelu);
      timed(stage::down, [&] { L.w_down.apply(g.data(), n, o.data(), pool); });
      if (hp.post_norms) norm_rows(o.data(), L.post_ffn_norm, o.data());
      for (std::size_t i = 0; i < n * E; ++i) x[i] += o[i];
    }
  }
  // the logits of rows [r0, r0 + nr) into out ([nr][n_vocab])
  void logits(const model& m, std::size_t r0, std::size_t nr, float* out, lutkit::thread_pool* pool) {
    const std::size_t E = m.hp.n_embd;
    for (std::size_t t = 0; t < nr; ++t)
      rms_norm(x.data() + (r0 + t) * E, m.out_norm.data(), h.data() + t * E, E, m.hp.rms_eps);
    timed(stage::output, [&] { m.output.apply(h.data(), nr, out, pool); });
  }
};

struct session {
  const model& m;
  std::size_t n_ctx;
  lutkit::kv_type kv = lutkit::kv_type::f16;
  std::size_t pos = 0;  // tokens in the cache
  std::vector<std::vector<uint16_t>> kc, vc;  // per layer: [head][n_ctx][head_dim]
  std::vector<float> logits;
  pass work;

  session(const model& mdl, std::size_t ctx, lutkit::kv_type t = lutkit::kv_type::f16) : m(mdl), n_ctx(ctx), kv(t) {
    llm::require(t == lutkit::kv_type::f16 || t == lutkit::kv_type::bf16, "llm: the KV cache is fp16 or bf16");
    const hparams& hp = m.hp;
    kc.assign(hp.n_layer, std::vector<uint16_t>(hp.n_head_kv * n_ctx * hp.head_dim));
    vc.assign(hp.n_layer, std::vector<uint16_t>(hp.n_head_kv * n_ctx * hp.head_dim));
    logits.resize(hp.n_vocab);
  }
  // bytes of K and V a decode step at `len` cached tokens reads
  std::size_t kv_bytes(std::size_t len) const { return 2 * m.hp.n_layer * m.hp.n_head_kv * len * m.hp.head_dim * 2; }

  uint16_t to_kv(float f) const { return kv == lutkit::kv_type::f16 ? lutkit::f32_to_f16(f) : lutkit::f32_to_bf16(f); }
  // a K and V row (head_dim floats each) into the caches kd, vd at element `at`, in the cache type
  void store(std::vector<uint16_t>& kd, std::vector<uint16_t>& vd, std::size_t at, const float* k, const float* v) const {
    for (std::size_t c = 0; c < m.hp.head_dim; ++c) kd[at + c] = to_kv(k[c]), vd[at + c] = to_kv(v[c]);
  }

  // n tokens at positions pos .. pos + n - 1; returns the logits of the last one
  const std::vector<float>& forward(const int32_t* tokens, std::size_t n, lutkit::thread_pool* pool) {
    llm::require(n > 0 && pos + n <= n_ctx, "llm: ", pos, " + ", n, " tokens exceed the context of ", n_ctx);
    const std::size_t hd = m.hp.head_dim;
    const auto start = std::chrono::steady_clock::now();
    work.run(
        m, tokens, n, [&](std::size_t t) { return pos + t; },
        [&](std::size_t l, std::size_t t, std::size_t hh, const float* k, const float* v) {
          store(kc[l], vc[l], (hh * n_ctx + pos + t) * hd, k, v);
        },
        [&](std::size_t l, const lutkit::attention_options& ao, const float* q, float* att) {
          const lutkit::kv_cache_view view{kc[l].data(), vc[l].data(), kv, pos + n, std::ptrdiff_t(hd),
                                           std::ptrdiff_t(n_ctx * hd)};
          if (n == 1)
            lutkit::attention_decode(ao, q, view, att, nullptr, pool);
          else
            lutkit::attention_prefill(ao, q, n, int64_t(pos), view, att, nullptr, nullptr, 0, pool);
        },
        pool);
    work.logits(m, n - 1, 1, logits.data(), pool);
    pos += n;
    if (work.prof) {
      work.prof->passes_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++work.prof->passes;
    }
    return logits;
  }

  // a prompt in chunks of `chunk` tokens; the logits of its last token
  const std::vector<float>& prefill(const std::vector<int32_t>& prompt, std::size_t chunk, lutkit::thread_pool* pool) {
    llm::require(!prompt.empty(), "llm: empty prompt");
    for (std::size_t i = 0; i < prompt.size(); i += chunk)
      forward(prompt.data() + i, std::min(chunk, prompt.size() - i), pool);
    return logits;
  }
};

// Best-of-N: B sequences that share a prompt (its K/V in `prefix`, a session that ran the
// prefill) and continue on their own. A step takes one token per sequence: the projections run
// at N = B, and attention_decode reads the shared prefix's K/V once for all B sequences (the
// batched decode), each sequence's own K/V (its tokens after the prompt) on its own.
struct batch {
  const session& prefix;
  std::size_t B, cap;  // sequences, own tokens each can hold
  std::size_t len = 0;  // own tokens so far (the same for every sequence)
  std::vector<std::vector<uint16_t>> kc, vc;  // per layer: [B][head][cap][head_dim]
  std::vector<float> logits;
  std::vector<lutkit::decode_sequence> seqs;
  pass work;

  batch(const session& pre, std::size_t b, std::size_t own_cap) : prefix(pre), B(b), cap(own_cap) {
    const hparams& hp = pre.m.hp;
    llm::require(B >= 1 && B <= 64, "llm: a batch holds 1 .. 64 sequences");
    kc.assign(hp.n_layer, std::vector<uint16_t>(B * hp.n_head_kv * cap * hp.head_dim));
    vc.assign(hp.n_layer, std::vector<uint16_t>(B * hp.n_head_kv * cap * hp.head_dim));
    logits.resize(B * hp.n_vocab);
    seqs.resize(B);
  }

  // one token per sequence (tokens[b]); returns the logits, [B][n_vocab]
  const std::vector<float>& step(const int32_t* tokens, lutkit::thread_pool* pool) {
    const model& m = prefix.m;
    const hparams& hp = m.hp;
    llm::require(len < cap, "llm: the batch's own caches are full (", cap, " tokens)");
    const std::size_t hd = hp.head_dim, QD = hp.q_dim(), P = prefix.pos;
    work.run(
        m, tokens, B, [&](std::size_t) { return P + len; },
        [&](std::size_t l, std::size_t b, std::size_t hh, const float* k, const float* v) {
          prefix.store(kc[l], vc[l], ((b * hp.n_head_kv + hh) * cap + len) * hd, k, v);
        },
        [&](std::size_t l, const lutkit::attention_options& ao, const float* q, float* att) {
          for (std::size_t b = 0; b < B; ++b) {
            seqs[b].q = q + b * QD;
            seqs[b].out = att + b * QD;
            seqs[b].own = {kc[l].data() + b * hp.n_head_kv * cap * hd, vc[l].data() + b * hp.n_head_kv * cap * hd,
                           prefix.kv, len + 1, std::ptrdiff_t(hd), std::ptrdiff_t(cap * hd)};
          }
          const lutkit::kv_cache_view pv{prefix.kc[l].data(), prefix.vc[l].data(), prefix.kv, P, std::ptrdiff_t(hd),
                                         std::ptrdiff_t(prefix.n_ctx * hd)};
          lutkit::attention_decode(ao, pv, std::span<const lutkit::decode_sequence>(seqs), pool);
        },
        pool);
    work.logits(m, 0, B, logits.data(), pool);
    ++len;
    return logits;
  }
};

}  // namespace llm
