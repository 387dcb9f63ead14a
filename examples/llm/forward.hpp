// lutkit example engine — the forward pass of a decoder-only transformer on lutkit's kernels:
//
//   x = embed(tokens)                                            (the file's rows, dequantized)
//   per layer:  h = RMSNorm(x) * attn_norm
//               q, k, v = Wq h, Wk h, Wv h  (+ bias: qwen2)      matrix::apply: decode_gemv for a
//               q, k = RMSNorm per head * q_norm, k_norm (qwen3)   few rows, dequant-GEMM for more
//               RoPE(q, k) at each token's position
//               K, V appended to the fp16 cache
//               a = attention_prefill (a chunk) / attention_decode (one token)
//                   (gemma3's local layers: a sliding window, and their own RoPE base)
//               x += Wo a                       (gemma3: x += RMSNorm(Wo a) * post_attn_norm)
//               h = RMSNorm(x) * ffn_norm;  x += W_down (SiLU(W_gate h) * W_up h)
//                                               (gemma3: GELU-tanh, and the post-FFN norm)
//   logits = W_out (RMSNorm(x_last) * output_norm)
//
// A session holds the KV cache (fp16, head-major per layer, sized from the context length) and
// the working buffers; forward() takes a chunk of tokens at the cache's end and returns the
// logits of its last token.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model.hpp"

namespace llm {

inline void rms_norm(const float* x, const float* w, float* y, std::size_t n, float eps) {
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
  const float r = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * r * w[i];
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

// GELU, tanh approximation (Gemma's gelu_pytorch_tanh)
inline float gelu_tanh(float x) {
  return 0.5f * x * (1.f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

struct session {
  const model& m;
  std::size_t n_ctx;
  lutkit::kv_type kv = lutkit::kv_type::f16;
  std::size_t pos = 0;  // tokens in the cache
  std::vector<std::vector<uint16_t>> kc, vc;  // per layer: [head][n_ctx][head_dim]
  std::vector<float> x, h, q, k, v, att, o, g, u, logits, cs, sn, csl, snl;

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

  // n tokens at positions pos .. pos + n - 1; returns the logits of the last one
  const std::vector<float>& forward(const int32_t* tokens, std::size_t n, lutkit::thread_pool* pool) {
    const hparams& hp = m.hp;
    llm::require(n > 0 && pos + n <= n_ctx, "llm: ", pos, " + ", n, " tokens exceed the context of ", n_ctx);
    const std::size_t E = hp.n_embd, QD = hp.q_dim(), KD = hp.kv_dim(), hd = hp.head_dim, F = hp.n_ff;
    x.resize(n * E), h.resize(n * E), q.resize(n * QD), k.resize(n * KD), v.resize(n * KD), att.resize(n * QD);
    o.resize(n * E), g.resize(n * F), u.resize(n * F);
    for (std::size_t t = 0; t < n; ++t) m.embed(tokens[t], x.data() + t * E);
    // the rotation of every position of the chunk (global layers; gemma3's local ones: csl, snl)
    const std::size_t hr = hp.n_rot / 2;
    auto angles = [&](std::vector<float>& c, std::vector<float>& s_, double base, double scale) {
      c.resize(n * hr), s_.resize(n * hr);
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t i = 0; i < hr; ++i) {
          const double th = double(pos + t) / scale * std::pow(base, -2.0 * double(i) / double(hp.n_rot));
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
    for (std::size_t l = 0; l < hp.n_layer; ++l) {
      const layer& L = m.layers[l];
      const bool local = hp.local(l);
      const float* rc = local ? csl.data() : cs.data();
      const float* rs = local ? snl.data() : sn.data();
      ao.mask = local ? lutkit::mask_kind::window : lutkit::mask_kind::causal;
      ao.window = local ? hp.window : 0;
      for (std::size_t t = 0; t < n; ++t) rms_norm(x.data() + t * E, L.attn_norm.data(), h.data() + t * E, E, hp.rms_eps);
      L.wq.apply(h.data(), n, q.data(), pool);
      L.wk.apply(h.data(), n, k.data(), pool);
      L.wv.apply(h.data(), n, v.data(), pool);
      for (std::size_t t = 0; t < n; ++t) {
        if (hp.qkv_bias) {
          for (std::size_t i = 0; i < QD; ++i) q[t * QD + i] += L.bq[i];
          for (std::size_t i = 0; i < KD; ++i) k[t * KD + i] += L.bk[i];
          for (std::size_t i = 0; i < KD; ++i) v[t * KD + i] += L.bv[i];
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
          // append to the cache: head-major [head][n_ctx][hd]
          uint16_t* kd = kc[l].data() + (hh * n_ctx + pos + t) * hd;
          uint16_t* vd = vc[l].data() + (hh * n_ctx + pos + t) * hd;
          for (std::size_t c = 0; c < hd; ++c) {
            kd[c] = to_kv(kh[c]);
            vd[c] = to_kv(v[t * KD + hh * hd + c]);
          }
        }
      }
      const lutkit::kv_cache_view view{kc[l].data(), vc[l].data(), kv, pos + n, std::ptrdiff_t(hd),
                                       std::ptrdiff_t(n_ctx * hd)};
      if (n == 1)
        lutkit::attention_decode(ao, q.data(), view, att.data(), nullptr, pool);
      else
        lutkit::attention_prefill(ao, q.data(), n, int64_t(pos), view, att.data(), nullptr, nullptr, 0, pool);
      L.wo.apply(att.data(), n, o.data(), pool);
      if (hp.post_norms)
        for (std::size_t t = 0; t < n; ++t) rms_norm(o.data() + t * E, L.post_attn_norm.data(), o.data() + t * E, E, hp.rms_eps);
      for (std::size_t i = 0; i < n * E; ++i) x[i] += o[i];
      for (std::size_t t = 0; t < n; ++t) rms_norm(x.data() + t * E, L.ffn_norm.data(), h.data() + t * E, E, hp.rms_eps);
      L.w_gate.apply(h.data(), n, g.data(), pool);
      L.w_up.apply(h.data(), n, u.data(), pool);
      if (hp.gelu)
        for (std::size_t i = 0; i < n * F; ++i) g[i] = gelu_tanh(g[i]) * u[i];
      else
        for (std::size_t i = 0; i < n * F; ++i) g[i] = g[i] / (1.f + std::exp(-g[i])) * u[i];  // SiLU(gate) * up
      L.w_down.apply(g.data(), n, o.data(), pool);
      if (hp.post_norms)
        for (std::size_t t = 0; t < n; ++t) rms_norm(o.data() + t * E, L.post_ffn_norm.data(), o.data() + t * E, E, hp.rms_eps);
      for (std::size_t i = 0; i < n * E; ++i) x[i] += o[i];
    }
    rms_norm(x.data() + (n - 1) * E, m.out_norm.data(), h.data(), E, hp.rms_eps);
    m.output.apply(h.data(), 1, logits.data(), pool);
    pos += n;
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
  std::vector<float> x, h, q, k, v, att, o, g, u, logits, cs, sn;

  batch(const session& pre, std::size_t b, std::size_t own_cap) : prefix(pre), B(b), cap(own_cap) {
    const hparams& hp = pre.m.hp;
    llm::require(B >= 1 && B <= 64, "llm: a batch holds 1 .. 64 sequences");
    kc.assign(hp.n_layer, std::vector<uint16_t>(B * hp.n_head_kv * cap * hp.head_dim));
    vc.assign(hp.n_layer, std::vector<uint16_t>(B * hp.n_head_kv * cap * hp.head_dim));
    logits.resize(B * hp.n_vocab);
  }

  // one token per sequence (tokens[b]); returns the logits, [B][n_vocab]
  const std::vector<float>& step(const int32_t* tokens, lutkit::thread_pool* pool) {
    const model& m = prefix.m;
    const hparams& hp = m.hp;
    llm::require(len < cap, "llm: the batch's own caches are full (", cap, " tokens)");
    const std::size_t E = hp.n_embd, QD = hp.q_dim(), KD = hp.kv_dim(), hd = hp.head_dim, F = hp.n_ff;
    const std::size_t P = prefix.pos, p = P + len, hr = hp.n_rot / 2;
    x.resize(B * E), h.resize(B * E), q.resize(B * QD), k.resize(B * KD), v.resize(B * KD), att.resize(B * QD);
    o.resize(B * E), g.resize(B * F), u.resize(B * F), cs.resize(2 * hr), sn.resize(2 * hr);
    for (std::size_t b = 0; b < B; ++b) m.embed(tokens[b], x.data() + b * E);
    for (std::size_t i = 0; i < hr; ++i) {  // [0, hr): global layers, [hr, 2 hr): local ones
      const double e = -2.0 * double(i) / double(hp.n_rot);
      const double tg = double(p) / double(hp.rope_scale) * std::pow(double(hp.rope_base), e);
      const double tl = double(p) * std::pow(double(hp.rope_base_local), e);
      cs[i] = float(std::cos(tg)), sn[i] = float(std::sin(tg));
      cs[hr + i] = float(std::cos(tl)), sn[hr + i] = float(std::sin(tl));
    }
    lutkit::attention_options ao;
    ao.heads_q = hp.n_head;
    ao.heads_kv = hp.n_head_kv;
    ao.head_dim = hd;
    ao.scale = float(1.0 / std::sqrt(double(hd)));
    std::vector<lutkit::decode_sequence> seqs(B);
    for (std::size_t l = 0; l < hp.n_layer; ++l) {
      const layer& L = m.layers[l];
      const bool local = hp.local(l);
      const float* rc = cs.data() + (local ? hr : 0);
      const float* rs = sn.data() + (local ? hr : 0);
      ao.mask = local ? lutkit::mask_kind::window : lutkit::mask_kind::causal;
      ao.window = local ? hp.window : 0;
      for (std::size_t b = 0; b < B; ++b) rms_norm(x.data() + b * E, L.attn_norm.data(), h.data() + b * E, E, hp.rms_eps);
      L.wq.apply(h.data(), B, q.data(), pool);
      L.wk.apply(h.data(), B, k.data(), pool);
      L.wv.apply(h.data(), B, v.data(), pool);
      for (std::size_t b = 0; b < B; ++b) {
        if (hp.qkv_bias) {
          for (std::size_t i = 0; i < QD; ++i) q[b * QD + i] += L.bq[i];
          for (std::size_t i = 0; i < KD; ++i) k[b * KD + i] += L.bk[i], v[b * KD + i] += L.bv[i];
        }
        for (std::size_t hh = 0; hh < hp.n_head; ++hh) {
          float* qh = q.data() + b * QD + hh * hd;
          if (hp.qk_norm) rms_norm(qh, L.q_norm.data(), qh, hd, hp.rms_eps);
          rope(qh, hp.n_rot, hp.rope, rc, rs);
        }
        for (std::size_t hh = 0; hh < hp.n_head_kv; ++hh) {
          float* kh = k.data() + b * KD + hh * hd;
          if (hp.qk_norm) rms_norm(kh, L.k_norm.data(), kh, hd, hp.rms_eps);
          rope(kh, hp.n_rot, hp.rope, rc, rs);
          uint16_t* kd = kc[l].data() + ((b * hp.n_head_kv + hh) * cap + len) * hd;
          uint16_t* vd = vc[l].data() + ((b * hp.n_head_kv + hh) * cap + len) * hd;
          for (std::size_t c = 0; c < hd; ++c) kd[c] = prefix.to_kv(kh[c]), vd[c] = prefix.to_kv(v[b * KD + hh * hd + c]);
        }
        lutkit::decode_sequence& sq = seqs[b];
        sq.q = q.data() + b * QD;
        sq.out = att.data() + b * QD;
        sq.own = {kc[l].data() + b * hp.n_head_kv * cap * hd, vc[l].data() + b * hp.n_head_kv * cap * hd, prefix.kv,
                  len + 1, std::ptrdiff_t(hd), std::ptrdiff_t(cap * hd)};
      }
      const lutkit::kv_cache_view pv{prefix.kc[l].data(), prefix.vc[l].data(), prefix.kv, P, std::ptrdiff_t(hd),
                                     std::ptrdiff_t(prefix.n_ctx * hd)};
      lutkit::attention_decode(ao, pv, std::span<const lutkit::decode_sequence>(seqs), pool);
      L.wo.apply(att.data(), B, o.data(), pool);
      if (hp.post_norms)
        for (std::size_t b = 0; b < B; ++b) rms_norm(o.data() + b * E, L.post_attn_norm.data(), o.data() + b * E, E, hp.rms_eps);
      for (std::size_t i = 0; i < B * E; ++i) x[i] += o[i];
      for (std::size_t b = 0; b < B; ++b) rms_norm(x.data() + b * E, L.ffn_norm.data(), h.data() + b * E, E, hp.rms_eps);
      L.w_gate.apply(h.data(), B, g.data(), pool);
      L.w_up.apply(h.data(), B, u.data(), pool);
      for (std::size_t i = 0; i < B * F; ++i)
        g[i] = (hp.gelu ? gelu_tanh(g[i]) : g[i] / (1.f + std::exp(-g[i]))) * u[i];
      L.w_down.apply(g.data(), B, o.data(), pool);
      if (hp.post_norms)
        for (std::size_t b = 0; b < B; ++b) rms_norm(o.data() + b * E, L.post_ffn_norm.data(), o.data() + b * E, E, hp.rms_eps);
      for (std::size_t i = 0; i < B * E; ++i) x[i] += o[i];
    }
    for (std::size_t b = 0; b < B; ++b) rms_norm(x.data() + b * E, m.out_norm.data(), h.data() + b * E, E, hp.rms_eps);
    m.output.apply(h.data(), B, logits.data(), pool);
    ++len;
    return logits;
  }
};

}  // namespace llm
