// lutkit — the per-kernel rates the array model takes from the core model: each kernel run once on
// synthetic data (a fixed xorshift stream; the cycle counts do not depend on the values) and its
// trace turned into cycles by the cycle model. Freestanding: static buffers, no allocation.
#pragma once
#include "../attention.hpp"
#include "../gemv.hpp"
#include "array.hpp"
#include "cycles.hpp"

namespace lutkit::aie::model {

namespace detail {
struct xorshift {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  float uniform() { return float(next() >> 40) / float(1 << 24) * 2.f - 1.f; }  // [-1, 1)
};
}  // namespace detail

// the W4A8 GEMV (FusedDQP's tile) on profile P: modelled cycles per weight at M x K, N = 1
template <class P>
double w4a8_cycles_per_weight(std::size_t M = 128, std::size_t K = 2560) {
  using S = spec_of<fmt::uint_asym<4>, group<32>>;
  static uint8_t blob[128 * 2560 / 2 + 128 * 2560 / 8];
  static float x[2560], y[128];
  static core<P> c;
  detail::xorshift r;
  const layout_geometry L(S::spec, M, K);
  if (M > 128 || K > 2560 || L.total_bytes > sizeof(blob)) return 0;
  for (auto& b : blob) b = uint8_t(r.next());
  for (std::size_t i = 0; i < K; ++i) x[i] = r.uniform();
  for (std::size_t i = 0; i < L.tiles * L.groups; ++i) {  // finite scales (fp16 1.0) and zeros (8.0)
    const std::size_t t = i / L.groups, g = i % L.groups;
    for (int rr = 0; rr < 64; ++rr) {
      const uint16_t one = 0x3C00, eight = 0x4800;
      __builtin_memcpy(blob + L.scale_offset(t, g) + 2 * std::size_t(rr), &one, 2);
      __builtin_memcpy(blob + L.zero_offset(t, g) + 2 * std::size_t(rr), &eight, 2);
    }
  }
  c = core<P>{};
  if (gemv_w4a8<S>(c, blob, M, K, x, 1, y) != status::ok) return 0;
  return cycles<P>(c.tr).total / double(M * K);
}

struct attention_rates {
  double score_per_key = 0, value_per_key = 0, total_per_pair = 0;
};
// the attention kernel (aie2) on n_q query rows of head dim d against L keys: decode (every row
// at the last position, a GQA group) or a prefill chunk (causal, the chunk's positions)
inline attention_rates attention_cycles(std::size_t n_q, std::size_t d, std::size_t L, bool decode) {
  static uint16_t K[1024 * 256], V[1024 * 256], Q[64 * 256];
  static float out[64 * 256];
  static int64_t pos[64];
  static core<aie2> c;
  attention_rates r;
  if (n_q > 64 || d > 256 || L > 1024) return r;
  detail::xorshift g;
  for (std::size_t i = 0; i < L * d; ++i) K[i] = f32_to_bf16(g.uniform()), V[i] = f32_to_bf16(g.uniform());
  for (std::size_t i = 0; i < n_q * d; ++i) Q[i] = f32_to_bf16(g.uniform());
  for (std::size_t i = 0; i < n_q; ++i) pos[i] = decode ? int64_t(L) - 1 : int64_t(L - n_q + i);
  att_args a;
  a.q = Q;
  a.k = K;
  a.v = V;
  a.qpos = pos;
  a.n_q = n_q;
  a.d = d;
  a.L = L;
  a.scale = 0.0625f;
  a.out = out;
  c = core<aie2>{};
  if (attention(c, a) != status::ok) return r;
  const kernel_cycles k = cycles<aie2>(c.tr);
  double score = 0, value = 0;
  for (int i = 0; i < k.n; ++i) {
    const char* nm = k.regions[i].name;
    if (__builtin_strcmp(nm, "att.value") == 0)
      value += k.regions[i].cycles;
    else
      score += k.regions[i].cycles;  // score mmuls, softmax, exp, output
  }
  const double blocks = double((n_q + 3) / 4);
  r.score_per_key = score / blocks / double(L);
  r.value_per_key = value / blocks / double(L);
  double pairs = 0;
  for (std::size_t i = 0; i < n_q; ++i) pairs += double(pos[i] + 1);
  r.total_per_pair = k.total / pairs;
  return r;
}

// every rate the Gemma 3 mappings take
inline kernel_rates measure_rates() {
  kernel_rates r;
  r.w4a8_cycles_per_weight = w4a8_cycles_per_weight<aie2p>();
  const attention_rates dec = attention_cycles(2, 256, 1024, true);  // Gemma3-4B: 2 query heads per KV head
  r.att_score_cycles_per_key = dec.score_per_key;
  r.att_value_cycles_per_key = dec.value_per_key;
  r.att_prefill_cycles_per_pair = attention_cycles(64, 256, 1024, false).total_per_pair;
  return r;
}

}  // namespace lutkit::aie::model
