// lutkit — the sampling family's micro-kernel interface: the streaming reductions a target
// provides over a chunk of decoded (float) logits, and the decoders that fill such a chunk.
// The driver (dllm.hpp, autoregressive.hpp) walks each row in chunks of sampling_chunk() values
// and merges the per-chunk results; a target implements this set (portable_kernels.hpp is the
// plain C++ one every target is tested against).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "../core/target.hpp"
#include "rng.hpp"

namespace lutkit {
namespace detail {

constexpr uint32_t no_index = 0xFFFFFFFFu;
// block of the AR driver's block maxima (the coarse level of its top-k / threshold selection)
constexpr std::size_t ar_block = 256;
// thresholds of one mass_ge pass (the top-p threshold search)
constexpr int mass_thresholds = 8;
// The AR driver's rule for splitting a row's pass over the threads: fewer rows than threads and
// at least 256 KiB of logits a row (below, the pass takes about as long as a second thread's
// hand-over: docs/sampling.md, "design decisions"). The planner's cost model uses it too.
inline bool ar_split_rows(std::size_t rows, std::size_t threads, std::size_t row_bytes) {
  return rows < threads && row_bytes >= (std::size_t(256) << 10);
}

// running maximum of a row: largest value, its (lowest) index, second largest value.
// NaN is never a candidate; -inf never becomes the argmax (index stays no_index).
struct max_state {
  float m1 = -std::numeric_limits<float>::infinity();
  uint32_t i1 = no_index;
  float m2 = -std::numeric_limits<float>::infinity();
};
inline void merge_max(max_state& a, const max_state& b) {  // b covers later indices than a
  const float lo = a.m1 < b.m1 ? a.m1 : b.m1;
  float m2 = a.m2 > b.m2 ? a.m2 : b.m2;
  if (lo > m2) m2 = lo;
  if (b.m1 > a.m1) {
    a.m1 = b.m1;
    a.i1 = b.i1;
  }
  a.m2 = m2;
}

// A cheap upper estimate of exp(beta (x - m)) with bounded error, for the sums whose exact value
// is needed only near a decision (top-p's rejection draw: autoregressive.hpp, ar_sum). With
// C = beta log2(e) 2^23 (exp_bound_scale), t = max(fma(x - m, C, 127 2^23), 2^23) is an
// integer-valued float, and its value as int32 read as a float's bits is 2^floor(y) (1 + y -
// floor(y)) for y = t / 2^23 - 127: the chord of 2^y between integers, within [1, 1.0615] of 2^y
// (largest at y - floor(y) = 1 / ln 2 - 1), y >= -126 (NaN and -inf give 2^-126). The roundings
// of x - m, C and the fma move y by at most |y| 2^-23 + 2^-16 for any m. Five vector operations
// a value against the accurate sum's ten (AVX-512) to twelve.
inline float exp_bound_scale(float beta) { return beta * 1.44269504088896341f * 0x1p23f; }
// A reference m below some x gives terms above 1: up to y = exp_bound_headroom (2^65 a term, no
// float sum of a chunk near overflow). exp_bound_ref_ok(cm, m, C): every x <= cm stays within it.
constexpr float exp_bound_headroom = 64.f;
inline bool exp_bound_ref_ok(float cm, float m, float C) {
  return m > -std::numeric_limits<float>::infinity() && m < std::numeric_limits<float>::infinity() &&
         !(std::fma(cm - m, C, 127.f * 0x1p23f) > (127.f + exp_bound_headroom) * 0x1p23f);
}
inline float exp_bound_term(float x, float m, float C) {
  float t = std::fma(x - m, C, 127.f * 0x1p23f);
  if (!(t > 0x1p23f)) t = 0x1p23f;  // (NaN too)
  // (x above m beyond the headroom: outside the contract, no overflow)
  if (t > (127.f + exp_bound_headroom) * 0x1p23f) t = (127.f + exp_bound_headroom) * 0x1p23f;
  const int32_t k = int32_t(t);       // (an integer below 2^31: exact)
  float r;
  std::memcpy(&r, &k, sizeof r);
  return r;
}

struct sampling_kernel_set {
  const char* name;
  // state <- max(state, x[0..n)) with indices base + i; with top2 also the second largest;
  // bmax (if not null): the maximum of each ar_block values (ceil(n / ar_block) outputs)
  // (prefetching [pf, pf + pf_bytes) meanwhile, as sum_exp)
  void (*max_argmax)(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st, float* bmax,
                     const void* pf, std::size_t pf_bytes);
  // sum of exp(beta (x - m)) over x[0..n) (NaN and -inf add 0); ent (if not null) += the sum of
  // exp(beta (x - m)) * beta (x - m). While it computes, it prefetches [pf, pf + pf_bytes) (the
  // next chunk of the stream: its DRAM reads overlap this chunk's arithmetic; pf may be null).
  float (*sum_exp)(const float* x, std::size_t n, float m, float beta, float* ent, const void* pf,
                   std::size_t pf_bytes);
  // the two above fused in one pass over x: state <- max(state, x), returns the sum of
  // exp(beta (x - ref)) for a given ref (the caller's running maximum; terms above it are > 1)
  float (*max_sum_exp)(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st, float ref, float beta,
                       float* ent, const void* pf, std::size_t pf_bytes);
  // Gumbel-max: y_i = beta x_i + g_i, g_i = -log(-log(u_i)), u_i = token_uniform(key, base + i);
  // (best_y, best_i) <- the largest y (lowest index on ties; NaN never)
  void (*gumbel_argmax)(const float* x, std::size_t n, uint32_t base, rng_key key, float beta, float& best_y,
                        uint32_t& best_i);
  // for the 8 ascending thresholds t[j]: mass[j] += the sum of exp(beta (x - m)) over x >= t[j];
  // *top = the largest x >= t[0] if it exceeds *top (NaN never counts)
  void (*mass_ge)(const float* x, std::size_t n, float m, float beta, const float* t, double* mass, float* top);
  // for the 8 ascending thresholds t[j] (none -inf): count[j] += the number of x >= t[j] (NaN never
  // counts; n < 2^24); t null: *lo <- the smallest value above -inf if smaller, *hi <- the largest
  // if larger (NaN never)
  void (*count_ge)(const float* x, std::size_t n, const float* t, uint32_t* count, float* lo, float* hi);
  // the values >= t (NaN never) with their indices base + i; returns their count (<= n)
  std::size_t (*collect_ge)(const float* x, std::size_t n, uint32_t base, float t, uint32_t* idx, float* val);
  // the pairs (v[i], ix[i]) with lo <= v[i] < hi, in order, into (ov, oi); returns their count.
  // ov / oi may be v / ix (in place). ix null: the values alone (oi unused).
  std::size_t (*collect_range)(const float* v, const uint32_t* ix, std::size_t n, float lo, float hi, float* ov,
                               uint32_t* oi);
  // the values >= t (NaN never) into val, in order, and bit i of the bitmap `bits` (byte i / 8,
  // bit i % 8) for each x[i] >= t; the bitmap's bytes over [0, n) are zero on entry, n = a
  // multiple of 8 or the end of the row (only bytes under [0, n) are written); returns the count
  std::size_t (*select_ge)(const float* x, std::size_t n, float t, float* val, uint8_t* bits);
  // the sum of exp(beta (x - m)) over the x[0..n) >= t (NaN never; -inf values add 0)
  float (*sum_exp_ge)(const float* x, std::size_t n, float m, float beta, float t);
  // the sum of exp_bound_term(x[i], m, C) over x[0..n) (above), prefetching as sum_exp
  float (*sum_exp_bound)(const float* x, std::size_t n, float m, float C, const void* pf, std::size_t pf_bytes);
  // max_argmax without top2 (bmax not null) and sum_exp_bound in one pass over x: returns the sum of
  // exp_bound_term(x[i], ref, C) for ref as given (the caller's running maximum: the chunk's
  // values stream once, its maximum unknown before) where exp_bound_ref_ok(the chunk's maximum,
  // ref, C), else for ref <- the chunk's maximum (then x is read again, from L1)
  float (*max_sum_bound)(const float* x, std::size_t n, uint32_t base, max_state& st, float* bmax, float& ref,
                         float C, const void* pf, std::size_t pf_bytes);
  // decoders into floats: n values
  void (*decode_bf16)(const uint16_t* s, std::size_t n, float* out);
  void (*decode_f16)(const uint16_t* s, std::size_t n, float* out);
  // n values from ceil(n / 32) MX blocks (codes, one exponent per 32)
  void (*decode_mxfp8)(const uint8_t* codes, const uint8_t* scales, std::size_t n, float* out);
  // max_sum_exp reading bf16 / fp16 elements in place: the same results as the elements decoded
  // by the decoders above, then max_sum_exp. Null where a set has none (the driver then decodes
  // first).
  float (*max_sum_exp_bf16)(const uint16_t* x, std::size_t n, uint32_t base, bool top2, max_state& st, float ref,
                            float beta, float* ent, const void* pf, std::size_t pf_bytes) = nullptr;
  float (*max_sum_exp_f16)(const uint16_t* x, std::size_t n, uint32_t base, bool top2, max_state& st, float ref,
                           float beta, float* ent, const void* pf, std::size_t pf_bytes) = nullptr;
};

}  // namespace detail

// The chunk of the vocabulary a row is streamed in: half the L1 data cache in floats (the other
// half holds the prefetched stream and the small state), a multiple of the AR block; targets
// whose vector loads bypass L1 use their on-chip memory.
constexpr std::size_t sampling_chunk(const target_descriptor& t) {
  const std::size_t bytes = t.l1_bytes ? t.l1_bytes / 2 : t.onchip_bytes / 4;
  std::size_t n = bytes / sizeof(float) / detail::ar_block * detail::ar_block;
  return n < detail::ar_block ? detail::ar_block : n;
}

}  // namespace lutkit
