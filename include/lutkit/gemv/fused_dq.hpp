// lutkit — FusedDQP (Gemma3 on XDNA, §3.2.1): a dequant-based decode GEMV fused on small
// sub-blocks, on the SAME blob the LUT-GEMV reads. Per thread, for each 64-row tile and each
// K sub-block (256 activations, or the scale group if larger): level-1 + level-2 LUT
// dequantization into an L1-resident fp32 block, consumed at once by a dot with the
// activations (16-lane partial sums per (row, activation row), reduced at the tile's end).
//
// decode_gemv() makes the decode kernel a policy choice: LUT-GEMV (tables, bit-serial lookups)
// or FusedDQP, so both can be compared on one blob; formats whose levels are not linear in their
// bits (codebooks, 8-bit) decode only through FusedDQP.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../gemm/dequant_gemm.hpp"
#include "lut_gemv.hpp"

namespace lutkit {

namespace detail {
inline constexpr std::size_t fdq_sub_block = 256;

// Tiles from q until it runs dry, of any weight source with values<float> (64 rows, k in
// [k0, k1)); g: the fp32 geometry with kc the sub-block; M: rows of the matrix.
template <class Src>
void fused_dq_tiles_src(const Src& src, const dq_kernel_set& ks, const dq_geometry& g, std::size_t M, const float* xp,
                        std::size_t ldxp, std::size_t N, dq_work_queue& q, std::size_t r0, std::size_t r1, float* y,
                        std::size_t ldy) {
  auto item = q.claim();
  if (!item) return;
  dq_scratch s;
  s.init(g);
  std::vector<float> part(64 * N * 16);
  for (; item; item = q.claim()) {
    const std::size_t t = item->t;
    std::fill(part.begin(), part.end(), 0.f);
    for (std::size_t k0 = 0; k0 < g.K_pad; k0 += g.kc) {
      const std::size_t k1 = std::min(g.K_pad, k0 + g.kc);
      std::size_t ld = 0;
      const float* W = src.template values<float>(t, k0, k1, s, ld);
      ks.fdq(fdq_dot_args{W, ld, 64, k1 - k0, xp + k0, ldxp, N, part.data()});
    }
    for (std::size_t r = 0; r < 64; ++r) {
      const std::size_t m = t * 64 + r;
      if (m < r0 || m >= r1 || m >= M) continue;
      for (std::size_t n = 0; n < N; ++n) {
        const float* p = part.data() + (r * N + n) * 16;
        float acc = 0.f;
        for (int i = 0; i < 16; ++i) acc += p[i];
        y[n * ldy + m] = acc;
      }
    }
  }
}

// Rows [r0, r1) of any weight source (g: its fp32 geometry, kc the sub-block), over the pool's
// threads by 64-row tiles from one work queue. The activations are padded with zeros to g.K_pad (per-channel blobs pad
// K to a block).
template <class Src>
void run_fused_dq_src(const Src& src, const dq_kernel_set& ks, const dq_geometry& g, std::size_t M, const float* x,
                      std::size_t N, std::size_t K, std::size_t ldx, float* y, std::size_t ldy, std::size_t r0,
                      std::size_t r1, thread_pool* pool) {
  const std::size_t ldxp = round_up(g.K_pad, 16) + 16;
  std::vector<float> xp(N * ldxp, 0.f);
  for (std::size_t n = 0; n < N; ++n) std::memcpy(xp.data() + n * ldxp, x + n * ldx, K * 4);
  if (r0 == r1) return;
  dq_work_queue q(r0 / 64, (r1 + 63) / 64, 1);
  const std::size_t parts = pool ? std::min(q.size(), pool->size()) : 1;
  if (parts <= 1) {
    fused_dq_tiles_src(src, ks, g, M, xp.data(), ldxp, N, q, r0, r1, y, ldy);
    return;
  }
  pool->run(parts, [&](std::size_t) { fused_dq_tiles_src(src, ks, g, M, xp.data(), ldxp, N, q, r0, r1, y, ldy); });
}

template <class P>
void run_fused_dq(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                  std::size_t ldx, std::size_t ldy, std::size_t r0, std::size_t r1, thread_pool* pool,
                  dq_backend backend) {
  check_dq_args(w, x, N, K, ldx, y, ldy, r0, r1);
  const auto& ks = dq_kernels_for_policy<P>(backend);
  require(ks.fdq != nullptr, "fused_dq_gemv: the ", ks.name, " kernels have no FusedDQP (use dequant_gemm)");
  const packed_layout& L = w.layout();
  dq_geometry g = make_dq_geometry<P>(L, N, act_type::fp32);
  g.kc = round_up(fdq_sub_block, g.flush_k);
  const lut_weight_source<P> src{w.data(), &L, &ks};
  run_fused_dq_src(src, ks, g, L.M, x, N, K, ldx, y, ldy, r0, r1, pool);
}
}  // namespace detail

// FusedDQP decode: y[n * ldy + m] = sum_k W[m][k] x[n][k] for N (small) activation rows.
template <class P>
void fused_dq_gemv(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                   std::size_t ldx = 0, std::size_t ldy = 0, thread_pool* pool = nullptr,
                   dq_backend backend = dq_backend::best) {
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  detail::run_fused_dq<P>(w, x, N, K, y, ldx, ldy, 0, w.M(), pool, backend);
}

// Rows [r0, r1) only, on the calling thread.
template <class P>
void fused_dq_gemv_rows(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                        std::size_t r0, std::size_t r1, std::size_t ldx = 0, std::size_t ldy = 0,
                        dq_backend backend = dq_backend::best) {
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = w.M();
  detail::run_fused_dq<P>(w, x, N, K, y, ldx, ldy, r0, r1, nullptr, backend);
}

// The decode kernel as a policy choice, on one blob:
//   lut_gemv  bit-serial table lookups (formats linear in their bits, bits <= 4);
//   fused_dq  FusedDQP: fp32 level-2 dequantization of sub-blocks, fp32 dots (any format);
//   int8      the int8 paradigm of the dequant-GEMM with activations quantized per scale group
//             (act_type::int8_group): codes as u8 levels times int8 activations (VNNI), scale
//             and zero once per group; for 1 or 2 activation rows level 1 runs fused into the
//             micro-kernel where the target has it. Formats with integer levels; float
//             codebooks (NF4) for N <= 2 on AVX-512 VNNI + GFNI or AVX2 CPUs, their levels as 15-bit
//             fixed point in two u8 parts (detail::split_levels, error <= 2^-14 per level).
//   best      the fastest correct one for the policy (docs/llama_formats.md, "Decode"); on
//             target::sme the LUT-GEMV, or bf16 for formats it cannot serve.
enum class decode_method { lut_gemv, fused_dq, int8, bf16, best };

template <class P>
constexpr decode_method best_decode_method() {
  using FT = format_traits<typename P::format>;
  // SME: its LUT-GEMV, else its bf16 dequant-GEMM (it has no int8 paradigm and no FusedDQP)
  if constexpr (std::is_same_v<typename P::target_type, target::sme>)
    return FT::lut_gemv_capable ? decode_method::lut_gemv : decode_method::bf16;
  // int8 where its level 1 is a 4-plane transpose (4 and 8 bits: 0.82-0.93 of the plain read at
  // 1 thread against 0.46 for the W4 LUT-GEMV); LUT-GEMV below 4 bits (W2: 0.76 against 0.30)
  if constexpr (FT::integer_levels && !FT::is_ternary && (FT::planes == 4 || FT::planes == 8))
    return decode_method::int8;
  else if constexpr (FT::lut_gemv_capable)
    return decode_method::lut_gemv;
  else  // float codebooks (NF4): the bf16 route, 1.5x FusedDQP (docs/llama_formats.md, "Decode")
    return decode_method::bf16;
}

// The 4-bit linear formats whose LUT-GEMV is at least as accurate as the int8 decode (activations
// on llama.cpp's q8_0 grid): mirrored int8 tables with one table scale per 32 activations or fewer
// (Q4_0: 7.57e-03 against 1.13e-02, docs/llama_formats.md "Accuracy"). With 64 (W4 g64: 1.33e-02
// against 1.14e-02) or plain int8 tables (2.03e-02) the int8 decode stays the default.
template <class P>
constexpr bool lut_gemv_as_accurate_as_int8() {
  constexpr auto& S = P::spec;
  return format_traits<typename P::format>::lut_gemv_capable && S.entry_bits == 8 && S.mirror && S.block_k <= 32;
}

// The method decode_method::best runs for N activation rows on this CPU: best_decode_method<P>(),
// except that float codebooks with split levels (NF4) take the int8 decode for N <= 2 where the
// CPU has its fused kernel (AVX-512 VNNI + GFNI, AVX2; docs/llama_formats.md, "Decode"), and that the
// formats the LUT-GEMV also serves take it where the CPU's int8 decode is the slower of the two
// (dq_kernel_set::int8_decode_first false: every kernel set but AVX-512's), and on AVX-512 for one
// activation row where it is as accurate (lut_gemv_as_accurate_as_int8): Q4_0 at 1 / 2 threads,
// 0.90-1.03 / 0.99-1.10 of the plain read against 0.70-0.79 / 0.90-0.95 (N = 2: the same; N = 16:
// 0.09-0.12 against 0.13-0.20).
template <class P>
decode_method best_decode_method(std::size_t N) {
  if constexpr (detail::split_levels<P>())
    if (detail::split_int8_decode_available<P>(N, detail::dq_kernels_for_policy<P>(dq_backend::best)))
      return decode_method::int8;
  constexpr decode_method m = best_decode_method<P>();
  if constexpr (m == decode_method::int8 && format_traits<typename P::format>::lut_gemv_capable) {
    if (!detail::dq_kernels_for_policy<P>(dq_backend::best).int8_decode_first) return decode_method::lut_gemv;
    if constexpr (lut_gemv_as_accurate_as_int8<P>())
      if (N == 1) return decode_method::lut_gemv;
  }
  return m;
}

template <class P>
void decode_gemv(const packed_weights<P>& w, const float* x, std::size_t N, std::size_t K, float* y,
                 decode_method method = decode_method::best, std::size_t ldx = 0, std::size_t ldy = 0,
                 thread_pool* pool = nullptr) {
  using FT = format_traits<typename P::format>;
  if (method == decode_method::best) method = best_decode_method<P>(N);
  if (method == decode_method::bf16) {  // the dequant-GEMM's bf16 route: any format, float codebooks too
    dequant_gemm<P>(w, x, N, K, y, act_type::bf16, ldx, ldy, pool);
    return;
  }
  if (method == decode_method::int8) {
    detail::require(FT::integer_levels ||
                        detail::split_int8_decode_available<P>(N, detail::dq_kernels_for_policy<P>(dq_backend::best)),
                    "decode_gemv: policy ", P::name(),
                    " has a float codebook; decode_method::int8 needs integer levels, or for N <= 2 a CPU with "
                    "AVX-512 VNNI and GFNI, or AVX2 (use bf16, fused_dq or best)");
    detail::dequant_gemm_impl<P>(w, x, N, K, y, 0, w.M(), act_type::int8_group, ldx, ldy, pool, dq_backend::best,
                                 true);
    return;
  }
  if constexpr (FT::lut_gemv_capable) {
    if (method == decode_method::lut_gemv) {
      if (ldx == 0) ldx = K;
      const auto t = build_tables<P>(x, N, K, ldx);
      lut_gemv<P>(w, t, y, ldy, pool);
      return;
    }
  } else {
    detail::require(method == decode_method::fused_dq, "decode_gemv: policy ", P::name(),
                    " is not linear in its bits; LUT-GEMV cannot serve it (use decode_method::fused_dq, int8 or best)");
  }
  fused_dq_gemv<P>(w, x, N, K, y, ldx, ldy, pool);
}

}  // namespace lutkit
