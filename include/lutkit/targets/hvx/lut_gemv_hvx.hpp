// lutkit — the LUT-GEMV on Hexagon HVX (T-MAN §4.1–4.2 on vlut16): tables built by HVX from the
// activations, bit-plane lookups of the blob packed for target::hvx (vlut16 order, tiling_spec.hpp),
// int16 accumulation within a block (the spec's overflow bound), widening to int32 once per block,
// planes combined by shifts, per-group scale and zero applied by the scalar unit.
//
// Tables. Per activation row, K is cut into table granules (the group; 4 blocks for per-channel
// and per-tensor weights); a granule's entries share one scale ts = amax / 127, amax the largest
// |exact entry| of the granule. The scalar unit turns each activation into xf = round(x / ts * 64)
// (|xf| <= 8129, int16); HVX forms the 16 (ternary: 14, and their negations) entries of each step
// from them — one vlut16 per activation of the step gathers xf into table order, masks add the
// subsets — and rounds entry = round(sum / 64) (mirror: round((2 sum - all) / 128)), clamped to
// +-127. |entry - exact / ts| <= 1/2 + 4 * (1/2) / 64 < 0.5625 (hvx_lut_error_bound, the tests).
// One 128-byte vector holds the tables of 4 steps (vlut16 nomatch selectors 0..3: words 0-15 /
// 16-31, halfword 0 / 1) or, for ternary, of 2 steps with their negations (match selectors: the
// upper nibble of an index byte is 2 s + sign).
#pragma once
#include "hvx.hpp"

namespace lutkit::hvx {

// The activation tables of N rows (views into the caller's buffer, filled by build_tables).
struct tables {
  const HVX_Vector* entries = nullptr;  // [N][vectors]
  const float* tscale = nullptr;        // [N][granules]
  const float* xsum = nullptr;          // [N][granules]
  std::size_t N = 0, K = 0, vectors = 0, granules = 0;
};

namespace detail {

template <class P>
struct gemv_geometry {
  static constexpr tiling_spec S = P::spec;
  static constexpr int steps_per_vector = S.ternary ? 2 : 4;
  static constexpr std::size_t granule_k = S.group_k > 0 ? std::size_t(S.group_k) : 4 * std::size_t(S.block_k);
  layout_geometry L;
  std::size_t vectors = 0, granules = 0;
  explicit gemv_geometry(std::size_t K) : L(S, 1, K) {
    vectors = (L.steps() + steps_per_vector - 1) / steps_per_vector;
    granules = (L.K_pad + granule_k - 1) / granule_k;
  }
  std::size_t entry_bytes(std::size_t N) const { return N * vectors * vector_bytes; }
  std::size_t bytes(std::size_t N) const { return entry_bytes(N) + ((2 * N * granules * sizeof(float) + 127) & ~std::size_t(127)); }
};

// Constant vectors of the table build: per activation b of a step, the vlut16 index that gathers
// xf into table order, and the lanes whose entry adds (and, ternary, subtracts) it.
struct build_consts {
  alignas(128) std::uint8_t idx[4][128];
  alignas(128) std::int16_t add[4][64];
  alignas(128) std::int16_t sub[4][64];
};
template <bool Ternary>
constexpr build_consts make_build_consts() {
  build_consts c{};
  for (int hw = 0; hw < 64; ++hw) {
    const int word = hw / 2, half = hw % 2;
    for (int b = 0; b < 4; ++b) {
      if (!Ternary) {
        const int step = 2 * half + word / 16, i = word % 16;  // vlut16 nomatch selector = step
        c.idx[b][2 * hw] = std::uint8_t(4 * step + b);
        c.add[b][hw] = ((i >> b) & 1) ? -1 : 0;
      } else if (b < 3) {
        const int i = word % 16;
        const int sign = word >= 16 ? -1 : 1;  // words 16..31: the negated table
        const int digit = b == 0 ? i / 9 : (b == 1 ? (i / 3) % 3 : i % 3);
        const int coef = i < 14 ? sign * (digit - 1) : 0;
        c.idx[b][2 * hw] = std::uint8_t(3 * half + b);  // halfword = step
        c.add[b][hw] = coef > 0 ? -1 : 0;
        c.sub[b][hw] = coef < 0 ? -1 : 0;
      }
    }
  }
  return c;
}
template <bool Ternary>
inline constexpr build_consts build_consts_v = make_build_consts<Ternary>();

// Largest |exact entry| of one step, from its activations.
template <class P>
float step_amax(const float* x) {
  constexpr tiling_spec S = P::spec;
  if constexpr (S.ternary) {
    return fabs_(x[0]) + fabs_(x[1]) + fabs_(x[2]);
  } else if constexpr (S.mirror) {
    return 0.5f * (fabs_(x[0]) + fabs_(x[1]) + fabs_(x[2]) + fabs_(x[3]));
  } else {
    float pos = 0.f, neg = 0.f;
    for (int b = 0; b < 4; ++b) (x[b] > 0.f ? pos : neg) += fabs_(x[b]);
    return pos > neg ? pos : neg;
  }
}

// One table vector (steps_per_vector steps) from its scaled activations xf (int16, halfword 0 of
// words 0..15).
template <class P>
__attribute__((noinline)) HVX_Vector build_table_vector(HVX_Vector xf) {
  constexpr tiling_spec S = P::spec;
  constexpr const build_consts& c = build_consts_v<S.ternary>;
  constexpr int acts = S.ternary ? 3 : 4;
  HVX_Vector sum = Q6_V_vzero(), all = Q6_V_vzero();
  for (int b = 0; b < acts; ++b) {
    const HVX_Vector xb = Q6_V_lo_W(Q6_Wh_vlut16_VbVhR_nomatch(vload(c.idx[b]), xf, 0));
    sum = Q6_Vh_vadd_VhVh(sum, Q6_V_vand_VV(xb, vload(c.add[b])));
    if constexpr (S.ternary) sum = Q6_Vh_vsub_VhVh(sum, Q6_V_vand_VV(xb, vload(c.sub[b])));
    if constexpr (S.mirror && !S.ternary) all = Q6_Vh_vadd_VhVh(all, xb);
  }
  HVX_Vector e;
  if constexpr (S.mirror && !S.ternary)  // (2 sum - all) / 128, rounded
    e = Q6_Vh_vasr_VhR(Q6_Vh_vadd_VhVh(Q6_Vh_vsub_VhVh(Q6_Vh_vadd_VhVh(sum, sum), all), splat_h(64)), 7);
  else
    e = Q6_Vh_vasr_VhR(Q6_Vh_vadd_VhVh(sum, splat_h(32)), 6);
  return Q6_Vh_vmin_VhVh(Q6_Vh_vmax_VhVh(e, splat_h(-127)), splat_h(127));
}

}  // namespace detail

// Bytes of the buffer build_tables needs for N rows of K activations (128-byte aligned).
template <class P>
std::size_t table_bytes(std::size_t N, std::size_t K) {
  require_hvx_spec<P>();
  return detail::gemv_geometry<P>(K).bytes(N);
}

// Tables of N activation rows x[n * ldx + k] (ldx = 0: K). Non-finite activations make their
// granule's tscale and xsum NaN: every output of that row is then NaN, as on the host.
template <class P>
status build_tables(const float* x, std::size_t N, std::size_t K, std::size_t ldx, void* buf, std::size_t buf_bytes,
                    tables& out) {
  require_hvx_spec<P>();
  constexpr tiling_spec S = P::spec;
  if (x == nullptr || buf == nullptr) return status::null_pointer;
  if (N == 0 || K == 0 || !k_fits_groups<S.group_k>(K)) return status::bad_shape;
  if (ldx == 0) ldx = K;
  if (ldx < K) return status::bad_stride;
  if (!detail::aligned128(buf)) return status::bad_alignment;
  const detail::gemv_geometry<P> G(K);
  if (buf_bytes < G.bytes(N)) return status::buffer_too_small;
  using GT = detail::gemv_geometry<P>;
  constexpr int kps = S.k_per_step, spv = GT::steps_per_vector;
  HVX_Vector* E = static_cast<HVX_Vector*>(buf);
  float* ts = reinterpret_cast<float*>(static_cast<std::uint8_t*>(buf) + G.entry_bytes(N));
  float* xs = ts + N * G.granules;
  alignas(128) std::int16_t xf[64];
  for (std::size_t n = 0; n < N; ++n) {
    const float* xr = x + n * ldx;
    auto act = [&](std::size_t k) { return k < K ? xr[k] : 0.f; };
    for (std::size_t g = 0; g < G.granules; ++g) {
      const std::size_t k0 = g * GT::granule_k, k1 = k0 + GT::granule_k < G.L.K_pad ? k0 + GT::granule_k : G.L.K_pad;
      float amax = 0.f, sum = 0.f;
      bool fin = true;
      for (std::size_t k = k0; k < k1; k += kps) {
        float s[4] = {0.f, 0.f, 0.f, 0.f};
        for (int b = 0; b < kps; ++b) {
          s[b] = act(k + b);
          fin = fin && detail::finite(s[b]);
          sum += s[b];
        }
        const float a = detail::step_amax<P>(s);
        amax = a > amax ? a : amax;
      }
      ts[n * G.granules + g] = fin ? amax / 127.f : detail::nan_();
      xs[n * G.granules + g] = fin ? sum : detail::nan_();
      const float inv64 = fin && amax > 0.f ? 127.f / amax * 64.f : 0.f;
      // the granule's table vectors (granules hold whole vectors: granule_k is a multiple of 16)
      for (std::size_t v = k0 / kps / spv; v < (k1 / kps + spv - 1) / spv; ++v) {
        for (int i = 0; i < 64; ++i) xf[i] = 0;
        for (int st = 0; st < spv; ++st)
          for (int b = 0; b < kps; ++b) {
            const std::size_t k = (v * spv + std::size_t(st)) * kps + std::size_t(b);
            xf[2 * (kps * st + b)] = std::int16_t(k < k1 ? detail::round_i(act(k) * inv64) : 0);
          }
        E[n * G.vectors + v] = detail::build_table_vector<P>(detail::vload(xf));
      }
    }
  }
  out.entries = E;
  out.tscale = ts;
  out.xsum = xs;
  out.N = N;
  out.K = K;
  out.vectors = G.vectors;
  out.granules = G.granules;
  return status::ok;
}

namespace detail {

// One block's lookups for NB activation rows: int16 sums of rows 0..63 (lo) and 64..127 (hi).
template <class P, int NB>
__attribute__((always_inline)) inline void block_lookups(const std::uint8_t* bp, std::size_t sp0, const HVX_Vector* const* E,
                                                         HVX_Vector (&lo)[NB], HVX_Vector (&hi)[NB]) {
  constexpr tiling_spec S = P::spec;
  const HVX_Vector low4 = splat_b(0x0F), bit0 = splat_b(0x01), step1 = splat_b(0x20);
  for (int n = 0; n < NB; ++n) lo[n] = hi[n] = Q6_V_vzero();
#pragma clang loop unroll(disable) pipeline(disable)
  for (int spi = 0; spi < S.step_pairs_per_block(); ++spi) {
    const std::size_t sp = sp0 + std::size_t(spi);
    if constexpr (S.ternary) {
      const HVX_Vector v = vload(bp + S.plane_chunk_in_block(spi, 0));
      const HVX_Vector sg = vload(bp + S.sign_in_block(spi));
      // index byte = nibble | (2 s + sign) << 4: the match selector picks the table and its sign
      const HVX_Vector s0 = Q6_Vh_vasl_VhR(Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(sg, S.sign_bit_in_byte(spi, 0)), bit0), 4);
      const HVX_Vector s1 = Q6_Vh_vasl_VhR(Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(sg, S.sign_bit_in_byte(spi, 1)), bit0), 4);
      const HVX_Vector i0 = Q6_V_vor_VV(Q6_V_vand_VV(v, low4), s0);
      const HVX_Vector i1 = Q6_V_vor_VV(Q6_V_vor_VV(Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(v, 4), low4), s1), step1);
      for (int n = 0; n < NB; ++n) {
        const HVX_Vector T = E[n][sp];
        HVX_VectorPair p0 = Q6_Wh_vlut16_VbVhR(i0, T, 0);
        p0 = Q6_Wh_vlut16or_WhVbVhR(p0, i0, T, 1);
        HVX_VectorPair p1 = Q6_Wh_vlut16_VbVhR(i1, T, 2);
        p1 = Q6_Wh_vlut16or_WhVbVhR(p1, i1, T, 3);
        lo[n] = Q6_Vh_vadd_VhVh(lo[n], Q6_Vh_vadd_VhVh(Q6_V_lo_W(p0), Q6_V_lo_W(p1)));
        hi[n] = Q6_Vh_vadd_VhVh(hi[n], Q6_Vh_vadd_VhVh(Q6_V_hi_W(p0), Q6_V_hi_W(p1)));
      }
    } else {
      const int rt = 2 * int(sp % 2);  // nomatch selectors of steps 2 sp, 2 sp + 1 in vector sp / 2
      HVX_Vector plo[NB], phi[NB];
      for (int p = 0; p < S.planes; ++p) {
        const HVX_Vector v = vload(bp + S.plane_chunk_in_block(spi, p));
        const HVX_Vector h = Q6_Vuh_vlsr_VuhR(v, 4);  // nomatch ignores the upper nibble
        for (int n = 0; n < NB; ++n) {
          const HVX_Vector T = E[n][sp / 2];
          const HVX_VectorPair p0 = Q6_Wh_vlut16_VbVhR_nomatch(v, T, rt);
          const HVX_VectorPair p1 = Q6_Wh_vlut16_VbVhR_nomatch(h, T, rt + 1);
          const HVX_Vector l = Q6_Vh_vadd_VhVh(Q6_V_lo_W(p0), Q6_V_lo_W(p1));
          const HVX_Vector u = Q6_Vh_vadd_VhVh(Q6_V_hi_W(p0), Q6_V_hi_W(p1));
          if (p == 0) {
            plo[n] = l;
            phi[n] = u;
          } else {  // plane p weighs 2^p: (planes above) * 2 + this one, from the top plane down
            plo[n] = Q6_Vh_vadd_VhVh(plo[n], Q6_Vh_vasl_VhR(l, p));
            phi[n] = Q6_Vh_vadd_VhVh(phi[n], Q6_Vh_vasl_VhR(u, p));
          }
        }
      }
      for (int n = 0; n < NB; ++n) {
        lo[n] = Q6_Vh_vadd_VhVh(lo[n], plo[n]);
        hi[n] = Q6_Vh_vadd_VhVh(hi[n], phi[n]);
      }
    }
  }
}

// Rows of tile t for activation rows [n0, n0 + NB): y_acc[n][r] over the whole K.
template <class P, int NB>
__attribute__((noinline)) void tile_rows(const std::uint8_t* data, const layout_geometry& L, const tables& tb, std::size_t t,
                                         std::size_t n0, float (*y_acc)[128]) {
  constexpr tiling_spec S = P::spec;
  using GT = gemv_geometry<P>;
  const HVX_Vector* E[NB];
  for (int n = 0; n < NB; ++n) E[n] = tb.entries + (n0 + std::size_t(n)) * tb.vectors;
  alignas(128) std::int32_t acc32[NB][128];
  const float c_mirror = S.mirror && !S.ternary ? 0.5f * float(S.plane_weight_sum) : 0.f;
  const std::size_t blocks_per_granule = GT::granule_k / std::size_t(S.block_k);
  for (int n = 0; n < NB; ++n)
    for (int r = 0; r < 128; ++r) y_acc[n][r] = 0.f;
  for (std::size_t g = 0; g < tb.granules; ++g) {
    HVX_VectorPair a0[NB], a1[NB];  // int32: rows 0..63 (even, odd), rows 64..127 (even, odd)
    for (int n = 0; n < NB; ++n) a0[n] = a1[n] = Q6_W_vcombine_VV(Q6_V_vzero(), Q6_V_vzero());
    const std::size_t b0 = g * blocks_per_granule;
    const std::size_t b1 = b0 + blocks_per_granule < L.blocks() ? b0 + blocks_per_granule : L.blocks();
    for (std::size_t blk = b0; blk < b1; ++blk) {
      HVX_Vector lo[NB], hi[NB];
      block_lookups<P, NB>(data + L.block_offset(t, blk), blk * std::size_t(S.step_pairs_per_block()), E, lo, hi);
      for (int n = 0; n < NB; ++n) {  // widen once per block (the spec bounds the int16 sums)
        a0[n] = Q6_Ww_vmpyacc_WwVhRh(a0[n], lo[n], 0x00010001);
        a1[n] = Q6_Ww_vmpyacc_WwVhRh(a1[n], hi[n], 0x00010001);
      }
    }
    // epilogue on the scalar unit: y += s * (ts * acc + (c_mirror - zero) * xsum)
    const std::size_t grp = S.group_k > 0 ? g : 0;
    const std::uint16_t* sc = reinterpret_cast<const std::uint16_t*>(data + L.scale_offset(t, grp));
    const std::uint16_t* zc = reinterpret_cast<const std::uint16_t*>(data + L.zero_offset(t, grp));
    for (int n = 0; n < NB; ++n) {
      vstore(acc32[n], Q6_V_lo_W(a0[n]));
      vstore(acc32[n] + 32, Q6_V_hi_W(a0[n]));
      vstore(acc32[n] + 64, Q6_V_lo_W(a1[n]));
      vstore(acc32[n] + 96, Q6_V_hi_W(a1[n]));
      const float ts = tb.tscale[(n0 + std::size_t(n)) * tb.granules + g];
      const float xs = tb.xsum[(n0 + std::size_t(n)) * tb.granules + g];
      for (int r = 0; r < 128; ++r) {
        const int lane = (r / 64) * 64 + (r % 2) * 32 + (r % 64) / 2;  // vmpy's even/odd split
        const float s = f16_to_f32(sc[r]);
        const float z = S.ternary ? 0.f : (S.asymmetric ? c_mirror - f16_to_f32(zc[r]) : c_mirror - S.sym_zero);
        y_acc[n][r] += s * (ts * float(acc32[n][lane]) + z * xs);
      }
    }
  }
}

}  // namespace detail

// y[n * ldy + m] for rows m in [row_begin, row_end) of the M x K blob `data` (the packed data of a
// blob for P, 128-byte aligned), all N rows of the tables; ldy = 0: M.
template <class P>
status lut_gemv_rows(const std::uint8_t* data, std::size_t M, std::size_t K, const tables& tb, float* y, std::size_t ldy,
                     std::size_t row_begin, std::size_t row_end) {
  require_hvx_spec<P>();
  constexpr tiling_spec S = P::spec;
  static_assert(S.lut && S.entry_bits == 8,
                "lutkit::hvx::lut_gemv: int8-table LUT formats (lut4<int8_t, ...>; bits 1-4 or ternary)");
  static_assert(!S.min_form && S.super_k == 0,
                "lutkit::hvx::lut_gemv: fp16 scales and zeros (no min-form or fp32-parameter formats)");
  if (data == nullptr || y == nullptr || tb.entries == nullptr) return status::null_pointer;
  if (M == 0 || K == 0 || tb.K != K || tb.N == 0 || !k_fits_groups<S.group_k>(K) ||
      row_begin >= row_end || row_end > M)
    return status::bad_shape;
  if (ldy == 0) ldy = M;
  if (ldy < M) return status::bad_stride;
  if (!detail::aligned128(data) || !detail::aligned128(tb.entries)) return status::bad_alignment;
  const layout_geometry L(S, M, K);
  float y_acc[2][128];
  for (std::size_t t = row_begin / 128; t * 128 < row_end; ++t) {
    const std::size_t r0 = row_begin > t * 128 ? row_begin - t * 128 : 0;
    const std::size_t r1 = row_end < (t + 1) * 128 ? row_end - t * 128 : 128;
    std::size_t n = 0;
    auto emit = [&](int nb) {
      for (int i = 0; i < nb; ++i)
        for (std::size_t r = r0; r < r1; ++r) y[(n + std::size_t(i)) * ldy + t * 128 + r] = y_acc[i][r];
      n += std::size_t(nb);
    };
    while (tb.N - n >= 2) {
      detail::tile_rows<P, 2>(data, L, tb, t, n, y_acc);
      emit(2);
    }
    if (n < tb.N) {
      detail::tile_rows<P, 1>(data, L, tb, t, n, y_acc);
      emit(1);
    }
  }
  return status::ok;
}

template <class P>
status lut_gemv(const std::uint8_t* data, std::size_t M, std::size_t K, const tables& tb, float* y, std::size_t ldy = 0) {
  return lut_gemv_rows<P>(data, M, K, tb, y, ldy, 0, M);
}

}  // namespace lutkit::hvx
