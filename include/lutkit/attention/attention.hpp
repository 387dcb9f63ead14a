// lutkit — attention: one chunked online-softmax kernel with two entries.
//   attention_prefill: many queries (a prompt, or a prompt chunk appended to a KV cache at
//     position q_pos0), query blocks x KV chunks, blocks outside the mask skipped;
//   attention_decode: one query per sequence, 1..64 sequences sharing a prefix whose K/V is read
//     once for all of them; the keys split across threads, partials merged by log-sum-exp.
// GQA / MQA: query head h reads KV head h / (heads_q / heads_kv); all query heads of a KV head are
// processed together. K/V fp16, bf16 or fp32 with the caller's strides; queries, outputs, lse
// fp32. Fully masked rows give 0 and lse = -inf. Same bits for any thread count.
// Dataflow, mask conventions, errors: docs/attention.md.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "driver.hpp"

namespace lutkit {

namespace detail {
// query heads: no model has more than a few hundred; the bound keeps every scratch size of the
// drivers (rows x head_dim x splits) far from wrapping and within what a machine can allocate
inline constexpr std::size_t max_heads = 4096;
// a call's scratch (decode partials, prefill panels): refused above 2^36 bytes (64 GiB)
inline constexpr std::size_t max_att_scratch_bytes = std::size_t(1) << 36;
inline void check_options(const attention_options& o) {
  require(o.heads_kv > 0 && o.heads_q > 0, "attention: heads_q and heads_kv must be > 0 (got ", o.heads_q, ", ",
          o.heads_kv, ")");
  require(o.heads_q % o.heads_kv == 0, "attention: heads_q (", o.heads_q, ") is not a multiple of heads_kv (",
          o.heads_kv, ")");
  require(o.head_dim >= 1 && o.head_dim <= 1024, "attention: unsupported head_dim ", o.head_dim, " (1 .. 1024)");
  require(std::isfinite(o.scale) && o.scale != 0.f, "attention: scale must be finite and non-zero");
  require(std::isfinite(o.softcap) && o.softcap >= 0.f, "attention: softcap must be >= 0 (0: none)");
  require(o.mask == mask_kind::causal || o.mask == mask_kind::window || o.mask == mask_kind::none,
          "attention: mask kind ", int(o.mask), " is not causal, window or none");
  require(o.exp == exp_kind::poly || o.exp == exp_kind::table, "attention: exp kind ", int(o.exp), " is not poly or table");
  require(o.mask != mask_kind::window || o.window > 0, "attention: mask_kind::window needs window > 0");
  // positions and windows are dimensions (core/limits.hpp): at most 2^31, so p - window cannot wrap
  check_dim(o.window, "attention", "window");
  require(o.heads_q <= max_heads, "attention: heads_q = ", o.heads_q, " exceeds ", max_heads);
  require(o.backend == attention_backend::best || o.backend == attention_backend::portable ||
              o.backend == attention_backend::avx512 || o.backend == attention_backend::avx2 ||
              o.backend == attention_backend::amx,
          "attention: unknown attention_backend ", int(o.backend));
  require(o.mask == mask_kind::window || o.window == 0, "attention: window given without mask_kind::window");
  require(o.precision == attention_precision::fp32 || o.precision == attention_precision::bf16,
          "attention: precision ", int(o.precision), " is not fp32 or bf16");
}
// the bytes a view's K (or V) spans
// (after check_view: every factor a checked dimension, the sum within 2^63)
inline byte_range kv_extent(const attention_options& o, const kv_cache_view& kv, const void* base) {
  if (kv.len == 0) return {base, 0};
  const std::size_t last = (kv.len - 1) * std::size_t(kv.row_stride) + (o.heads_kv - 1) * std::size_t(kv.head_stride) + o.head_dim;
  return {base, last * kv_type_bytes(kv.type)};
}
inline void check_view(const attention_options& o, const kv_cache_view& kv, const char* what) {
  if (kv.len == 0) return;
  check_dim(kv.len, "attention", "kv.len");
  require(kv.row_stride <= std::ptrdiff_t(max_dim) && kv.head_stride <= std::ptrdiff_t(max_dim), "attention: ", what,
          " strides exceed 2^31 elements");
  require(kv.k && kv.v, "attention: null K or V of ", what);
  require(kv.row_stride > 0 && kv.head_stride >= 0, "attention: ", what, " strides must be row_stride > 0, head_stride >= 0");
  require(o.heads_kv == 1 || kv.head_stride > 0, "attention: ", what, " head_stride must be > 0 with several KV heads");
  require(kv.type == kv_type::f16 || kv.type == kv_type::bf16 || kv.type == kv_type::f32, "attention: bad kv_type of ", what);
  // the elements K (or V) spans: each term a product of checked dimensions (< 2^63 in all)
  const std::size_t last = (kv.len - 1) * std::size_t(kv.row_stride) + (o.heads_kv - 1) * std::size_t(kv.head_stride) +
                           o.head_dim;
  require(last <= max_elements, "attention: ", what, " spans ", last,
          " elements (kv.len x row_stride), more than the largest tensor lutkit accepts (2^40)");
}
}  // namespace detail

// Prefill: q [n_q][heads_q][head_dim] (query i at position q_pos0 + i), keys at positions
// 0 .. kv.len - 1; out [n_q][heads_q][head_dim]; lse (optional) [n_q][heads_q], natural log, in
// logit units; add_mask (optional) [n_q][mask_stride] fp32 added to the logit of key j at
// add_mask[i * mask_stride + j] (finite or -inf), shared by all heads.
inline void attention_prefill(const attention_options& o, const float* q, std::size_t n_q, int64_t q_pos0,
                              const kv_cache_view& kv, float* out, float* lse = nullptr,
                              const float* add_mask = nullptr, std::size_t mask_stride = 0,
                              thread_pool* pool = nullptr) {
  using namespace detail;
  check_options(o);
  require(q_pos0 >= 0, "attention_prefill: negative query position offset ", q_pos0);
  check_dim(std::size_t(q_pos0), "attention_prefill", "q_pos0");
  check_dim(n_q, "attention_prefill", "n_q");
  check_dim(mask_stride, "attention_prefill", "mask_stride");
  if (n_q == 0) return;
  require(q && out, "attention_prefill: null q or out");
  check_view(o, kv, "the KV cache");
  require(!add_mask || mask_stride >= kv.len, "attention_prefill: mask_stride ", mask_stride, " < kv.len ", kv.len);
  const std::size_t qn = checked_elements(n_q, o.heads_q * o.head_dim, "attention_prefill", "n_q x heads_q x head_dim") * 4;
  // the driver's panels of every KV head's keys and values (fp32: 8 bytes per key and channel)
  require(o.heads_kv * kv.len * o.head_dim * 8 <= max_att_scratch_bytes, "attention_prefill: kv.len = ", kv.len,
          " x heads_kv = ", o.heads_kv, " x head_dim = ", o.head_dim, " needs more than 2^36 bytes of panels");
  const byte_range ro{out, qn}, rl{lse, lse ? n_q * o.heads_q * 4 : 0};
  require(!overlaps(ro, {q, qn}) && !overlaps(ro, kv_extent(o, kv, kv.k)) && !overlaps(ro, kv_extent(o, kv, kv.v)) &&
              !overlaps(rl, ro) && !overlaps(rl, {q, qn}) && !overlaps(rl, kv_extent(o, kv, kv.k)) &&
              !overlaps(rl, kv_extent(o, kv, kv.v)),
          "attention_prefill: out / lse overlap an input or each other");
  if (add_mask) {
    const byte_range rm{add_mask, ((n_q - 1) * mask_stride + kv.len) * 4};
    require(!overlaps(ro, rm) && !overlaps(rl, rm), "attention_prefill: out / lse overlap the mask");
  }
  run_prefill(o, q, n_q, q_pos0, kv, out, lse, add_mask, mask_stride, pool);
}

// Batched decode: every sequence sees the shared prefix (positions 0 .. prefix.len - 1), then its
// own keys (decode_sequence). One sequence over a whole cache: prefix = the cache, own empty.
inline void attention_decode(const attention_options& o, const kv_cache_view& prefix,
                             std::span<const decode_sequence> seqs, thread_pool* pool = nullptr) {
  using namespace detail;
  check_options(o);
  require(!seqs.empty() && seqs.size() <= 64, "attention_decode: 1 .. 64 sequences (got ", seqs.size(), ")");
  check_view(o, prefix, "the shared prefix");
  const std::size_t qn = o.heads_q * o.head_dim * 4;
  // the driver's partial results: (splits of the prefix + sequences) x rows x (head_dim + 2) floats
  const std::size_t rows_all = seqs.size() * o.heads_q, splits = max_decode_splits + seqs.size();
  require(splits * rows_all * (o.head_dim + 2) * 4 <= max_att_scratch_bytes, "attention_decode: heads_q = ", o.heads_q,
          " x ", seqs.size(), " sequences x head_dim = ", o.head_dim, " needs more than 2^36 bytes of partial results");
  for (std::size_t b = 0; b < seqs.size(); ++b) {
    const decode_sequence& s = seqs[b];
    require(s.q && s.out, "attention_decode: null q or out of sequence ", b);
    check_view(o, s.own, "a sequence's own keys");
    const byte_range ro{s.out, qn}, rl{s.lse, s.lse ? o.heads_q * 4 : 0};
    bool bad = overlaps(ro, rl);
    for (const decode_sequence& t : seqs) {
      bad = bad || overlaps(ro, {t.q, qn}) || overlaps(rl, {t.q, qn}) || overlaps(ro, kv_extent(o, t.own, t.own.k)) ||
            overlaps(ro, kv_extent(o, t.own, t.own.v)) || overlaps(rl, kv_extent(o, t.own, t.own.k)) ||
            overlaps(rl, kv_extent(o, t.own, t.own.v));
      if (&t != &s) bad = bad || overlaps(ro, {t.out, qn}) || overlaps(rl, {t.out, qn}) || overlaps(ro, {t.lse, t.lse ? o.heads_q * 4 : 0});
      if (t.add_mask) bad = bad || overlaps(ro, {t.add_mask, (prefix.len + t.own.len) * 4});
    }
    bad = bad || overlaps(ro, kv_extent(o, prefix, prefix.k)) || overlaps(ro, kv_extent(o, prefix, prefix.v)) ||
          overlaps(rl, kv_extent(o, prefix, prefix.k)) || overlaps(rl, kv_extent(o, prefix, prefix.v));
    require(!bad, "attention_decode: out / lse of sequence ", b, " overlap an input or another output");
  }
  run_decode(o, prefix, seqs.data(), seqs.size(), pool);
}

// One sequence, one query: q [heads_q][head_dim] at position kv.len - 1.
inline void attention_decode(const attention_options& o, const float* q, const kv_cache_view& kv, float* out,
                             float* lse = nullptr, thread_pool* pool = nullptr) {
  decode_sequence s;
  s.q = q;
  s.out = out;
  s.lse = lse;
  s.own.type = kv.type;
  attention_decode(o, kv, std::span<const decode_sequence>(&s, 1), pool);
}

}  // namespace lutkit
