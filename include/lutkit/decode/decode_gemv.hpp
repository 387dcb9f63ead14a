// lutkit — decode (N small), public entry points: decode_gemv runs one of the decode methods on
// the blob every kernel reads, chosen by the caller or by best_decode_method. The methods are
// the LUT-GEMV (gemv/), FusedDQP (decode/fused_dq.hpp), the int8 decode
// (decode/int8_decode.hpp) and the dequant-GEMM's bf16 route (gemm/); the family holds the
// choice and the drivers, and uses gemv/'s and gemm/'s kernel sets (it has none of its own).
#pragma once
#include <cstddef>
#include <type_traits>

#include "../core/error.hpp"
#include "../core/policy.hpp"
#include "../core/target.hpp"
#include "../core/thread_pool.hpp"
#include "../gemm/dequant.hpp"
#include "../gemm/dequant_gemm.hpp"
#include "../gemm/targets.hpp"
#include "../gemv/lut_gemv.hpp"
#include "../gemv/tables.hpp"
#include "../quant/packed_weights.hpp"
#include "fused_dq.hpp"
#include "int8_decode.hpp"

namespace lutkit {

// The decode kernel as a policy choice, on one blob:
//   lut_gemv  bit-serial table lookups (formats linear in their bits, bits <= 4);
//   fused_dq  FusedDQP: fp32 level-2 dequantization of sub-blocks, fp32 dots (any format);
//   int8      the int8 paradigm of the dequant-GEMM with activations quantized per scale group
//             (act_type::int8_group): codes as u8 levels times int8 activations (VNNI), scale
//             and zero once per group; for 1 or 2 activation rows level 1 runs fused into the
//             micro-kernel where the target has it. Formats with integer levels; float
//             codebooks (NF4) for N <= 2 on AVX-512 VNNI + GFNI or AVX2 CPUs, their levels as 15-bit
//             fixed point in two u8 parts (detail::split_levels, error <= 2^-14 per level).
//   bf16      the dequant-GEMM's bf16 route (any format, float codebooks too).
//   best      the fastest correct one for the policy (docs/llama_formats.md, "Decode"); on
//             target::sme the LUT-GEMV, or bf16 for formats it cannot serve.
enum class decode_method { lut_gemv, fused_dq, int8, bf16, best };

// the method's name, as the benchmarks' rows and the planner's tables print it
constexpr const char* decode_method_name(decode_method m) {
  switch (m) {
    case decode_method::lut_gemv: return "lut_gemv";
    case decode_method::fused_dq: return "fused_dq";
    case decode_method::int8: return "int8";
    case decode_method::bf16: return "bf16";
    default: return "best";
  }
}

namespace detail {
// 2-bit linear codes with one scale per group wider than 32 on the host (W2 g64 and up: the
// engine's TQ2_0 / TQ1_0 policy, w2_g256_asym): their int8 decode is best_decode_method<P>().
// On an AVX-512 CPU (an Intel Xeon with AMX) it measured faster than the LUT-GEMV with the default
// int16 tables at one row (0.99 / 0.87 of the plain read at 1 / 2 threads against 0.90 / 0.80);
// elsewhere (dq_kernel_set::int8_decode_first false) the LUT-GEMV runs them, if its tables are
// as accurate (int8_decode_for_accuracy).
template <class P>
constexpr bool wide_two_plane() {
  using FT = format_traits<typename P::format>;
  return std::is_same_v<typename P::target_type, target::host> && FT::integer_levels && !FT::is_ternary &&
         FT::planes == 2 && !P::spec.min_form && P::group_shape::group_k > 32;
}
// The same with int8 tables (an opt-in: the default tables are int16, table::default_for): on
// ternary weights (codes 0, 1, 2, as TQ2_0 / TQ1_0 hold them) and activations without outlier
// channels the LUT-GEMV's int8 tables, whose entries sum four activations, measured 1.25x the
// error of llama.cpp's own arithmetic (q8_K activations), the int8 decode (q8_0's grid) 0.77x; so
// the int8 decode is their default on every CPU (docs/llama_formats.md, "Accuracy")
template <class P>
constexpr bool int8_decode_for_accuracy() {
  return wide_two_plane<P>() && P::spec.entry_bits == 8;
}
}  // namespace detail

template <class P>
constexpr decode_method best_decode_method() {
  using FT = format_traits<typename P::format>;
  // SME: its LUT-GEMV, else its bf16 dequant-GEMM (it has no int8 paradigm and no FusedDQP)
  if constexpr (std::is_same_v<typename P::target_type, target::sme>)
    return FT::lut_gemv_capable ? decode_method::lut_gemv : decode_method::bf16;
  // int8 where its level 1 is a 4-plane transpose (4 and 8 bits), the LUT-GEMV below 4 bits, bf16
  // for float codebooks (NF4): the faster of each pair (docs/llama_formats.md, "Decode")
  if constexpr (FT::integer_levels && !FT::is_ternary && (FT::planes == 4 || FT::planes == 8))
    return decode_method::int8;
  else if constexpr (detail::wide_two_plane<P>())
    return decode_method::int8;
  else if constexpr (FT::lut_gemv_capable)
    return decode_method::lut_gemv;
  else
    return decode_method::bf16;
}

// The 4-bit linear formats whose LUT-GEMV is at least as accurate as the int8 decode (activations
// on llama.cpp's q8_0 grid): int16 tables (the default, table::default_for; 0.00-0.01x its error).
// int8 tables are not: mirrored ones with a table scale per 32 activations measured 0.67x on
// activations with outlier channels but 1.23x without them (docs/llama_formats.md, "Accuracy").
template <class P>
constexpr bool lut_gemv_as_accurate_as_int8() {
  return format_traits<typename P::format>::lut_gemv_capable && P::spec.entry_bits == 16;
}

// The method decode_method::best runs for N activation rows on this CPU: best_decode_method<P>(),
// except that float codebooks with split levels (NF4) take the int8 decode for N <= 2 where the
// CPU has its fused kernel (AVX-512 VNNI + GFNI, AVX2), and that the formats the LUT-GEMV also
// serves take it where the CPU's int8 decode is the slower of the two
// (dq_kernel_set::int8_decode_first false: every kernel set but AVX-512's) unless its tables are
// the less accurate (int8_decode_for_accuracy), and on AVX-512 for one activation row the 4-bit
// ones where it is as accurate (lut_gemv_as_accurate_as_int8) and was faster (Q4_0 on AMD EPYC;
// level on an Intel Xeon; docs/llama_formats.md, "Decode").
template <class P>
decode_method best_decode_method(std::size_t N) {
  if constexpr (detail::split_levels<P>())
    if (detail::split_int8_decode_available<P>(N, detail::dq_kernels_for_policy<P>(dq_backend::best)))
      return decode_method::int8;
  constexpr decode_method m = best_decode_method<P>();
  if constexpr (m == decode_method::int8 && format_traits<typename P::format>::lut_gemv_capable &&
                !detail::int8_decode_for_accuracy<P>()) {
    if (!detail::dq_kernels_for_policy<P>(dq_backend::best).int8_decode_first) return decode_method::lut_gemv;
    if constexpr (lut_gemv_as_accurate_as_int8<P>() && format_traits<typename P::format>::planes == 4)
      if (N == 1) return decode_method::lut_gemv;
  }
  return m;
}

namespace detail {
// rows [r0, r1) by one method, over the pool's threads (shared by decode_gemv and decode_gemv_rows)
template <class P>
void decode_gemv_impl(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                      std::size_t r0, std::size_t r1, decode_method method, std::size_t ldx, std::size_t ldy,
                      thread_pool* pool) {
  using FT = format_traits<typename P::format>;
  if (method == decode_method::best) method = best_decode_method<P>(N);
  if (method == decode_method::bf16) {
    dequant_gemm_impl<P>(w, x, N, K, y, r0, r1, act_type::bf16, ldx, ldy, pool, dq_backend::best);
    return;
  }
  if (method == decode_method::int8) {
    run_int8_decode<P>(w, x, N, K, y, r0, r1, ldx, ldy, pool);
    return;
  }
  if constexpr (FT::lut_gemv_capable) {
    if (method == decode_method::lut_gemv) {
      if (ldx == 0) ldx = K;
      const auto t = build_tables<P>(x, N, K, ldx);
      if (r0 == 0 && r1 == w.M())
        lut_gemv<P>(w, t, y, ldy, pool);
      else
        lut_gemv_rows<P>(w, t, y, r0, r1, ldy);
      return;
    }
  } else {
    require(method == decode_method::fused_dq, "decode_gemv: policy ", P::name(),
            " is not linear in its bits; LUT-GEMV cannot serve it (use decode_method::fused_dq, int8 or best)");
  }
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  run_fused_dq<P>(w, x, N, K, y, ldx, ldy, r0, r1, pool, dq_backend::best);
}
}  // namespace detail

// Decode: y[n * ldy + m] = sum_k W[m][k] x[n][k] for N (small) activation rows, by `method`.
template <class P>
void decode_gemv(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                 decode_method method = decode_method::best, std::size_t ldx = 0, std::size_t ldy = 0,
                 thread_pool* pool = nullptr) {
  detail::decode_gemv_impl<P>(w, x, N, K, y, 0, w.M(), method, ldx, ldy, pool);
}

// Rows [r0, r1) only, on the calling thread (an engine's own threads split M with this); the
// same bits as those rows of decode_gemv by the same method.
template <class P>
void decode_gemv_rows(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                      std::size_t r0, std::size_t r1, decode_method method = decode_method::best,
                      std::size_t ldx = 0, std::size_t ldy = 0) {
  detail::decode_gemv_impl<P>(w, x, N, K, y, r0, r1, method, ldx, ldy, nullptr);
}

}  // namespace lutkit
