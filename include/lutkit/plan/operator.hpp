// lutkit — the planner's operator descriptions: what an operator moves and computes, the input
// of the cost model (plan/cost_model.hpp). A weight product (GEMV for decode, GEMM for prefill)
// carries its blob's bytes as the tiling spec lays them out (packed_layout: the same number
// packed_weights<P>::size_bytes() gives), never a stride computed here.
#pragma once
#include <cmath>
#include <cstddef>
#include <string>

#include "../core/concepts.hpp"
#include "../core/error.hpp"
#include "../core/tiling.hpp"
#include "../quant/packed_weights.hpp"
#include "../sampling/autoregressive.hpp"
#include "../sampling/dllm.hpp"
#include "../sampling/logits.hpp"

namespace lutkit::plan {

enum class op_kind { gemv, gemm, attention, sampling };

// y = W x for N activation rows: W is M x K weights of one policy. gemv: N small (decode),
// gemm: N large (prefill); the description is the same.
struct matmul_op {
  op_kind kind = op_kind::gemv;
  std::string policy;          // P::name()
  std::size_t M = 0, K = 0, N = 0;
  std::size_t blob_bytes = 0;  // header + packed data (codes and group parameters), from the tiling spec
  std::size_t tiles = 0;       // row tiles of the layout (the unit the drivers split over threads)
  int planes = 0;              // bit planes a code is stored in (the LUT-GEMV's lookups per 4 weights per row)
  int k_per_step = 4;          // activations per table step of the LUT-GEMV
  int table_bytes_per_step = 0;  // one activation row's table bytes per step
  bool lut_gemv_capable = false;
  // blob bytes per weight (codes and parameters)
  double bytes_per_weight() const { return double(blob_bytes) / (double(M) * double(K)); }
};

// The description of M x K weights of policy P for N activation rows; the layout's checks apply
// (K a multiple of the group, the shape limits).
template <class P>
matmul_op describe_matmul(std::size_t M, std::size_t K, std::size_t N) {
  lutkit::detail::require(N > 0, "plan: a matmul needs N >= 1 activation rows (got 0)");
  const packed_layout l(P::spec, M, K);
  matmul_op op;
  op.kind = N <= 16 ? op_kind::gemv : op_kind::gemm;
  op.policy = P::name();
  op.M = M;
  op.K = K;
  op.N = N;
  op.blob_bytes = sizeof(blob_header) + l.total_bytes;
  op.tiles = l.tiles;
  op.planes = P::spec.planes;
  op.k_per_step = P::spec.k_per_step;
  op.table_bytes_per_step = P::spec.table_bytes_per_step();
  op.lut_gemv_capable = format_traits<typename P::format>::lut_gemv_capable;
  return op;
}

// Attention over a context: `queries` query rows (1 for decode) per head, `heads` query heads
// sharing `kv_heads` key / value heads, head dimension `head_dim`, `context` keys, keys and values
// stored with `kv_bytes` bytes an element (2: bf16 / fp16).
struct attention_op {
  std::size_t heads = 0, kv_heads = 0, head_dim = 0, context = 0, queries = 1;
  int kv_bytes = 2;
  bool causal = true;
  std::size_t kv_cache_bytes() const { return 2 * kv_heads * context * head_dim * std::size_t(kv_bytes); }
};

// Sampling over a vocabulary: `rows` rows of `vocab` logits of type `type`, each streamed once by
// a pass whose work per logit `pass` names (the drivers' own rules: describe_ar_sampling).
//   maxima  ar_sample with nothing to sum (a top-k or min-p in front, greedy): the block maxima
//   chords  ar_sample's rejection draw (top-p over the whole vocabulary): maxima and chord sums
//   exps    ar_sample summing exp per logit (a draw over every token, top-p the draw cannot serve)
//   dllm         dllm_sample at temperature 0: a position a row, its argmax and exp sum (the confidence)
//   dllm_gumbel  dllm_sample above it: the same with Gumbel noise drawn per token
enum class sampling_pass { maxima, chords, exps, dllm, dllm_gumbel };
inline const char* sampling_pass_name(sampling_pass p) {
  switch (p) {
    case sampling_pass::maxima: return "maxima";
    case sampling_pass::chords: return "chords";
    case sampling_pass::exps: return "exps";
    case sampling_pass::dllm: return "dllm";
    case sampling_pass::dllm_gumbel: return "dllm_gumbel";
  }
  return "?";
}
struct sampling_op {
  std::size_t vocab = 0, rows = 1;
  logit_type type = logit_type::f32;
  sampling_pass pass = sampling_pass::maxima;
  // the logits' bytes (MXFP8: a code a logit and an exponent per 32)
  std::size_t logits_bytes() const {
    return logits_view{type, nullptr, nullptr, rows, vocab}.bytes();
  }
};

// a sampling_op's enums and sizes (an unknown pass or logit type is an error, not a guess)
inline void check_sampling_op(const sampling_op& s) {
  lutkit::detail::require(s.vocab > 0 && s.rows > 0, "plan: sampling needs vocab, rows > 0 (got ", s.vocab, ", ",
                          s.rows, ")");
  lutkit::detail::require(s.type == logit_type::f32 || s.type == logit_type::bf16 || s.type == logit_type::f16 ||
                              s.type == logit_type::mxfp8,
                          "plan: unknown logit_type ", int(s.type));
  lutkit::detail::require(int(s.pass) >= 0 && int(s.pass) <= int(sampling_pass::dllm_gumbel),
                          "plan: unknown sampling_pass ", int(s.pass));
  lutkit::detail::checked_elements(s.rows, s.vocab, "plan", "sampling rows x vocab");
}

// ar_sample over `rows` rows of `vocab` logits with params p (every row's, checked as ar_sample
// checks them): the pass the driver makes (autoregressive.hpp: ar_sum_beta, ar_reject_plan_of).
inline sampling_op describe_ar_sampling(const ar_params& p, std::size_t vocab, std::size_t rows = 1,
                                        logit_type type = logit_type::f32) {
  lutkit::detail::check_ar(logits_view{type, nullptr, nullptr, rows, vocab}, p, 0);
  sampling_op s;
  s.vocab = vocab, s.rows = rows, s.type = type;
  s.pass = lutkit::detail::ar_sum_beta(p, vocab) == 0.f                    ? sampling_pass::maxima
           : lutkit::detail::ar_reject_plan_of(p, vocab).on ? sampling_pass::chords
                                                            : sampling_pass::exps;
  check_sampling_op(s);
  return s;
}
// dllm_sample over `positions` masked positions of `vocab` logits of type `type` with params p:
// at temperature 0 the pass `dllm`, above it `dllm_gumbel` (Gumbel noise per token)
inline sampling_op describe_dllm_sampling(const dllm_params& p, std::size_t positions, std::size_t vocab,
                                          logit_type type = logit_type::f32) {
  lutkit::detail::require(std::isfinite(p.temperature) && p.temperature >= 0.f,
                          "plan: dllm temperature must be finite and >= 0 (got ", p.temperature, ")");
  sampling_op s;
  s.vocab = vocab, s.rows = positions, s.type = type;
  s.pass = p.temperature > 0.f ? sampling_pass::dllm_gumbel : sampling_pass::dllm;
  check_sampling_op(s);
  return s;
}

}  // namespace lutkit::plan
