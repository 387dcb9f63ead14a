// lutkit — the sampling drivers' access to a row of logits: a chunk of it as floats (the fp32
// source itself, or decoded into the caller's L1-sized scratch), with per-token overrides
// ("patches": suppressed tokens, penalized logits) applied on the way.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "../core/error.hpp"
#include "logits.hpp"
#include "microkernel.hpp"

namespace lutkit {
namespace detail {

struct token_patch {
  uint32_t token;
  float value;
};
// patches of one row, sorted by token, unique
struct patch_list {
  const token_patch* p = nullptr;
  std::size_t n = 0;
  const token_patch* lower(uint32_t t) const {
    return std::lower_bound(p, p + n, t, [](const token_patch& a, uint32_t b) { return a.token < b; });
  }
};

// chunk: a decoded chunk of a row; cand: the AR top-p candidates of a row (values, tokens)
enum class sampling_buffer { chunk, cand, count };

// the first patch at or after token `begin`, if it lies before begin + n (else null)
inline const token_patch* first_patch(patch_list pl, std::size_t begin, std::size_t n) {
  const token_patch* pb = pl.n ? pl.lower(uint32_t(begin)) : nullptr;
  return pb && pb != pl.p + pl.n && pb->token < begin + n ? pb : nullptr;
}

// values [begin, begin + n) of row r as floats; begin is a multiple of 32 (MX blocks)
inline const float* read_chunk(const logits_view& lv, const sampling_kernel_set& ks, std::size_t r,
                               std::size_t begin, std::size_t n, float* scratch, patch_list pl) {
  const std::size_t off = r * lv.vocab + begin;
  const token_patch* pb = first_patch(pl, begin, n);
  const bool patched = pb != nullptr;
  switch (lv.type) {
    case logit_type::f32: {
      const float* src = static_cast<const float*>(lv.data) + off;
      if (!patched) return src;
      std::memcpy(scratch, src, n * sizeof(float));
      break;
    }
    case logit_type::bf16:
      ks.decode_bf16(static_cast<const uint16_t*>(lv.data) + off, n, scratch);
      break;
    case logit_type::f16:
      ks.decode_f16(static_cast<const uint16_t*>(lv.data) + off, n, scratch);
      break;
    case logit_type::mxfp8:
      ks.decode_mxfp8(static_cast<const uint8_t*>(lv.data) + off, lv.scales + r * lv.blocks_per_row() + begin / mx_block,
                      n, scratch);
      break;
  }
  if (patched)
    for (const token_patch* q = pb; q != pl.p + pl.n && q->token < begin + n; ++q) scratch[q->token - begin] = q->value;
  return scratch;
}

// Whether ks reads values [begin, begin + n) of a row of lv's type in place in max_sum_exp
// (bf16, fp16 without a patch there; fp32 needs no decoding anyway, MXFP8 is decoded first), and
// that call: the same results as max_sum_exp over read_chunk's floats.
inline bool max_sum_in_place(const logits_view& lv, const sampling_kernel_set& ks, std::size_t begin,
                             std::size_t n, patch_list pl) {
  const bool has = lv.type == logit_type::bf16  ? ks.max_sum_exp_bf16 != nullptr
                   : lv.type == logit_type::f16 ? ks.max_sum_exp_f16 != nullptr
                                                : false;
  return has && !first_patch(pl, begin, n);
}
inline float max_sum_exp_in_place(const logits_view& lv, const sampling_kernel_set& ks, std::size_t r,
                                  std::size_t begin, std::size_t n, bool top2, max_state& st, float ref, float beta,
                                  float* ent, const void* pf, std::size_t pf_bytes) {
  const std::size_t off = r * lv.vocab + begin;
  const uint32_t base = uint32_t(begin);
  switch (lv.type) {
    case logit_type::bf16:
      return ks.max_sum_exp_bf16(static_cast<const uint16_t*>(lv.data) + off, n, base, top2, st, ref, beta, ent, pf,
                                 pf_bytes);
    case logit_type::f16:
      return ks.max_sum_exp_f16(static_cast<const uint16_t*>(lv.data) + off, n, base, top2, st, ref, beta, ent, pf,
                                pf_bytes);
    case logit_type::f32:
    case logit_type::mxfp8:
      break;
  }
  require(false, "sampling: max_sum_exp_in_place on ", logit_type_name(lv.type), " logits");
  return 0.f;
}

// the source bytes of values [begin, begin + n) of row r (the elements; MX exponents aside),
// clamped to the logits: what a prefetch of that chunk covers
inline std::pair<const void*, std::size_t> chunk_bytes(const logits_view& lv, std::size_t r, std::size_t begin,
                                                       std::size_t n) {
  const std::size_t eb = lv.type == logit_type::f32 ? 4 : lv.type == logit_type::mxfp8 ? 1 : 2;
  const std::size_t total = lv.rows * lv.vocab, off = r * lv.vocab + begin;
  if (off >= total) return {nullptr, 0};
  return {static_cast<const char*>(lv.data) + off * eb, std::min(n, total - off) * eb};
}

// one value of row r (patched)
inline float read_value(const logits_view& lv, std::size_t r, uint32_t t, patch_list pl) {
  if (pl.n) {
    const token_patch* q = pl.lower(t);
    if (q != pl.p + pl.n && q->token == t) return q->value;
  }
  const std::size_t off = r * lv.vocab + t;
  switch (lv.type) {
    case logit_type::f32: return static_cast<const float*>(lv.data)[off];
    case logit_type::bf16: return bf16_to_f32(static_cast<const uint16_t*>(lv.data)[off]);
    case logit_type::f16: return f16_to_f32(static_cast<const uint16_t*>(lv.data)[off]);
    case logit_type::mxfp8:
      return mxfp8_decode(static_cast<const uint8_t*>(lv.data)[off], lv.scales[r * lv.blocks_per_row() + t / mx_block]);
  }
  return 0.f;
}

}  // namespace detail
}  // namespace lutkit
