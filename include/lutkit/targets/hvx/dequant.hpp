// lutkit — INT4 -> fp16 dequantization on Hexagon HVX by vlut16 ([TTS-NPU] §5.2.2, docs/references.md), on the Q4_0
// super-group layout (tiling_spec.hpp: q4_0_supergroup). The scale is baked into each group's
// 16-entry table (entry c = fp16(d * (c - 8)), rounded once, as the host's dequantization rounds
// to fp16), so the lookup's output IS the fp16 weight: no unpack, convert or multiply, and no
// HVX float (v67 has none; before v79 it would compute in qfloat). The tables themselves are
// built by HVX integer ops, 128 entries (8 groups) per super-group. One 128-byte vector of codes is
// 256 weights of 8 groups; each pass (low nibbles: groups 0..3, high: 4..7) ORs four match-mode
// vlut16 lookups, the index byte's upper nibble naming its group.
#pragma once
#include "hvx.hpp"

namespace lutkit::hvx {

namespace detail {
struct sg_consts {
  alignas(128) std::uint8_t gid[128];        // byte b's group within a nibble pass: (2 (b mod 2) + b / 64) << 4
  alignas(128) std::uint8_t scale_idx[128];  // table lane -> its group's scale (match selectors 1 and 3)
  alignas(128) std::int16_t kabs[64];        // table lane -> |c - 8|
  alignas(128) std::int16_t kneg[64];        // table lane -> sign bit of c - 8
};
constexpr sg_consts make_sg_consts() {
  sg_consts c{};
  for (int b = 0; b < 128; ++b) c.gid[b] = std::uint8_t((2 * (b % 2) + b / 64) << 4);
  for (int hw = 0; hw < 64; ++hw) {
    // group m of a table vector answers match selector m: word 16 (m mod 2) + code, halfword m / 2
    const int word = hw / 2, m = 2 * (hw % 2) + word / 16, code = word % 16;
    c.kabs[hw] = std::int16_t(code < 8 ? 8 - code : code - 8);
    c.kneg[hw] = std::int16_t(code < 8 ? -32768 : 0);
    // scale g sits in halfword 56 + g of the vector loaded at record + 16: word 28 + g / 2,
    // halfword g mod 2, i.e. selector 1 (even g) or 3 (odd g), index 12 + g / 2. Even bytes feed
    // the low output (groups 0..3), odd bytes the high one (groups 4..7).
    for (int half = 0; half < 2; ++half) {
      const int g = 4 * half + m;
      c.scale_idx[2 * hw + half] = std::uint8_t(((g % 2) ? 0x30 : 0x10) | (12 + g / 2));
    }
  }
  return c;
}
inline constexpr sg_consts sg_consts_v = make_sg_consts();

// fp16(d * k) per lane, rounded to nearest even, from the fp16 bits of d and k = +-kabs, in
// integer HVX (v67 has no HVX float): d = M 2^(E-25) with an 11-bit M, so M |k| (< 2^14) is exact
// and only its renormalization to 11 bits rounds. Finite d only (the importer and
// pack_q4_0_supergroups refuse the others).
inline HVX_Vector scaled_codes_f16(HVX_Vector d, HVX_Vector kabs, HVX_Vector kneg) {
  const HVX_Vector zero = Q6_V_vzero(), one = splat_h(1);
  const HVX_Vector sign = Q6_V_vxor_VV(Q6_V_vand_VV(d, splat_h(0x8000)), kneg);
  const HVX_Vector ed = Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(d, 10), splat_h(0x1F));
  const HVX_Vector md = Q6_V_vand_VV(d, splat_h(0x3FF));
  const HVX_VectorPred normal_d = Q6_Q_vcmp_gt_VhVh(ed, zero);
  const HVX_Vector M = Q6_V_vmux_QVV(normal_d, Q6_V_vor_VV(md, splat_h(0x400)), md);
  const HVX_Vector E = Q6_V_vmux_QVV(normal_d, ed, one);
  const HVX_Vector P = Q6_Vh_vmpyi_VhVh(M, kabs);               // value = P 2^(E-25)
  const HVX_Vector L = Q6_Vh_vsub_VhVh(splat_h(15), Q6_Vuh_vcl0_Vuh(P));  // leading bit of P
  // normal result: 11-bit mantissa of P (left shift exact, right shift by s <= 3 rounded to even)
  const HVX_Vector t = Q6_Vh_vsub_VhVh(splat_h(10), L);
  const HVX_Vector tl = Q6_Vh_vmax_VhVh(t, zero), sr = Q6_Vh_vmax_VhVh(Q6_Vh_vsub_VhVh(zero, t), zero);
  const HVX_Vector Pl = Q6_Vh_vasl_VhVh(P, tl);
  const HVX_Vector r = Q6_Vh_vlsr_VhVh(Pl, sr);
  const HVX_Vector h2 = Q6_Vh_vasl_VhVh(one, sr);
  const HVX_Vector rem2 = Q6_Vh_vasl_VhR(Q6_V_vand_VV(Pl, Q6_Vh_vsub_VhVh(h2, one)), 1);
  const HVX_VectorPred up = Q6_Q_or_QQ(Q6_Q_vcmp_gt_VhVh(rem2, h2),
                                       Q6_Q_and_QQ(Q6_Q_vcmp_eq_VhVh(rem2, h2), Q6_Q_vcmp_eq_VhVh(Q6_V_vand_VV(r, one), one)));
  const HVX_Vector mant = Q6_Vh_vadd_VhVh(r, Q6_V_vmux_QVV(up, one, zero));  // in [2^10, 2^11]
  // (biased exponent - 1) * 1024 + mant: a mantissa rounded up to 2^11 carries into the exponent
  const HVX_Vector expo = Q6_Vh_vadd_VhVh(L, Q6_Vh_vsub_VhVh(E, splat_h(11)));
  const HVX_Vector nbits = Q6_Vuh_vmin_VuhVuh(Q6_Vh_vadd_VhVh(Q6_Vh_vasl_VhR(expo, 10), mant), splat_h(0x7C00));
  // subnormal result (biased exponent <= 0): exactly P 2^(E-1) units of 2^-24
  const HVX_Vector sbits = Q6_Vh_vasl_VhVh(P, Q6_Vh_vsub_VhVh(E, one));
  const HVX_VectorPred normal_r = Q6_Q_vcmp_gt_VhVh(Q6_Vh_vadd_VhVh(L, E), splat_h(10));
  HVX_Vector bits = Q6_V_vmux_QVV(normal_r, nbits, sbits);
  bits = Q6_V_vmux_QVV(Q6_Q_vcmp_eq_VhVh(P, zero), zero, bits);
  return Q6_V_vor_VV(bits, sign);
}

// The per-group tables of one super-group, built by HVX: its 8 scales broadcast to their table
// lanes by one match-mode vlut16 pair ([TTS-NPU] §5.2.2's scale broadcast), then fp16(d (c - 8))
// per lane; groups 0..3 in `lo`, 4..7 in `hi`.
__attribute__((noinline)) inline void supergroup_tables(const std::uint8_t* rec, HVX_Vector* lo, HVX_Vector* hi) {
  const HVX_Vector sc = vloadu(rec + q4_0_supergroup::scale_offset(0) - 112);  // scales in halfwords 56..63
  const HVX_Vector idx = vload(sg_consts_v.scale_idx);
  HVX_VectorPair d = Q6_Wh_vlut16_VbVhR(idx, sc, 1);
  d = Q6_Wh_vlut16or_WhVbVhR(d, idx, sc, 3);
  const HVX_Vector kabs = vload(sg_consts_v.kabs), kneg = vload(sg_consts_v.kneg);
  *lo = scaled_codes_f16(Q6_V_lo_W(d), kabs, kneg);
  *hi = scaled_codes_f16(Q6_V_hi_W(d), kabs, kneg);
}

__attribute__((noinline)) inline void supergroup_lookup(HVX_Vector codes, HVX_Vector tlo, HVX_Vector thi, HVX_Vector* out) {
  const HVX_Vector low4 = splat_b(0x0F);
  const HVX_Vector gid = vload(sg_consts_v.gid);
  const HVX_Vector il = Q6_V_vor_VV(Q6_V_vand_VV(codes, low4), gid);
  const HVX_Vector ih = Q6_V_vor_VV(Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(codes, 4), low4), gid);
  HVX_VectorPair a = Q6_Wh_vlut16_VbVhR(il, tlo, 0);
  a = Q6_Wh_vlut16or_WhVbVhR(a, il, tlo, 1);
  a = Q6_Wh_vlut16or_WhVbVhR(a, il, tlo, 2);
  a = Q6_Wh_vlut16or_WhVbVhR(a, il, tlo, 3);
  HVX_VectorPair b = Q6_Wh_vlut16_VbVhR(ih, thi, 0);
  b = Q6_Wh_vlut16or_WhVbVhR(b, ih, thi, 1);
  b = Q6_Wh_vlut16or_WhVbVhR(b, ih, thi, 2);
  b = Q6_Wh_vlut16or_WhVbVhR(b, ih, thi, 3);
  out[0] = Q6_V_lo_W(a);  // weights 0..63
  out[1] = Q6_V_hi_W(a);  // 64..127
  out[2] = Q6_V_lo_W(b);  // 128..191
  out[3] = Q6_V_hi_W(b);  // 192..255
}
}  // namespace detail

// fp16 bit patterns of the M x K weights stored as Q4_0 super-groups at `src` (K a multiple of 32),
// row m to out[m * ldo ...]; ldo = 0: K.
inline status dequant_q4_0_supergroups(const std::uint8_t* src, std::size_t M, std::size_t K, std::uint16_t* out,
                                       std::size_t ldo = 0) {
  if (src == nullptr || out == nullptr) return status::null_pointer;
  if (M == 0 || K == 0 || K % q4_0_supergroup::group_k != 0) return status::bad_shape;
  if (ldo == 0) ldo = K;
  if (ldo < K) return status::bad_stride;
  alignas(128) HVX_Vector w[4];
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k0 = 0; k0 < K; k0 += q4_0_supergroup::weights) {
      const std::uint8_t* rec = src + q4_0_supergroup::record_offset(K, m, k0);
      HVX_Vector tlo, thi;
      detail::supergroup_tables(rec, &tlo, &thi);
      const HVX_Vector codes = detail::vloadu(rec);  // records are 144 bytes apart
      detail::supergroup_lookup(codes, tlo, thi, w);
      const std::size_t n = K - k0 < 256 ? K - k0 : 256;
      std::uint16_t* o = out + m * ldo + k0;
      if (n == 256) {
        for (int i = 0; i < 4; ++i) detail::vstoreu(o + 64 * i, w[i]);
      } else {
        __builtin_memcpy(o, w, n * 2);
      }
    }
  return status::ok;
}

// ---------------------------------------------------------------------------------------------
// The T-MAN blob (the W-bit blob packed for target::hvx, vlut16 order) -> fp16, T-MAN §4.3's two
// levels on HVX: level 1 joins the bit planes with vlut16 (each plane's nibble looked up in a
// "spread" table that puts bit i at bit 4 i + plane, the planes OR-ed: one halfword per row holds
// the codes of the step's 4 activations); level 2 turns code c into fp16(scale (c - zero)) for every
// row at once, the row's scale being its lane (the blob stores a group's 128 scales row-ordered,
// which is the lanes' order). Symmetric integer formats with B >= 2 bits, whose c - zero is an
// integer (uint_sym<2..4>, the llama.cpp Q4_0 import): the product is exact before its one rounding,
// so the result is bit-exact with the host's dequantization.

namespace detail {
struct spread_consts {
  alignas(128) std::int16_t table[64];  // nomatch selector p: nibble n -> sum_i bit_i(n) << (4 i + p)
};
constexpr spread_consts make_spread_consts() {
  spread_consts c{};
  for (int p = 0; p < 4; ++p)
    for (int n = 0; n < 16; ++n) {
      int v = 0;
      for (int i = 0; i < 4; ++i) v |= ((n >> i) & 1) << (4 * i + p);
      c.table[2 * (16 * (p % 2) + n) + p / 2] = std::int16_t(v);
    }
  return c;
}
inline constexpr spread_consts spread_consts_v = make_spread_consts();

// fp16 of the rows' weights at activation k = 4 j + i for the codes packed in h (nibble i), rows
// in lanes; d: the rows' fp16 scales
inline HVX_Vector code_column_f16(HVX_Vector h, int i, HVX_Vector d, int zero) {
  const HVX_Vector c = Q6_V_vand_VV(Q6_Vuh_vlsr_VuhR(h, 4 * i), splat_h(15));
  const HVX_Vector diff = Q6_Vh_vsub_VhVh(c, splat_h(zero));
  return scaled_codes_f16(d, Q6_Vh_vabs_Vh(diff), Q6_V_vand_VV(diff, splat_h(0x8000)));
}

template <class P>
__attribute__((noinline)) void tman_step_pair(const std::uint8_t* bp, int spi, const std::uint8_t* scales, std::size_t k0,
                                              std::size_t K, std::size_t rows, std::uint16_t* out, std::size_t ldo) {
  constexpr tiling_spec S = P::spec;
  constexpr int zero = 1 << (S.bits - 1);
  const HVX_Vector spread = vload(spread_consts_v.table);
  const HVX_Vector d0 = vload(scales), d1 = vload(scales + 128);  // rows 0..63, 64..127
  for (int s = 0; s < 2; ++s) {
    HVX_VectorPair h = Q6_W_vcombine_VV(Q6_V_vzero(), Q6_V_vzero());
    for (int p = 0; p < S.planes; ++p) {  // level 1: join the planes
      HVX_Vector v = vload(bp + S.plane_chunk_in_block(spi, p));
      if (s) v = Q6_Vuh_vlsr_VuhR(v, 4);
      const HVX_VectorPair l = Q6_Wh_vlut16_VbVhR_nomatch(v, spread, p);
      h = Q6_W_vcombine_VV(Q6_V_vor_VV(Q6_V_hi_W(h), Q6_V_hi_W(l)), Q6_V_vor_VV(Q6_V_lo_W(h), Q6_V_lo_W(l)));
    }
    for (int i = 0; i < 4; ++i) {  // level 2: one activation's column of 128 rows
      const std::size_t k = k0 + std::size_t(4 * s + i);
      if (k >= K) return;
      std::uint16_t* o = out + k * ldo;
      const HVX_Vector lo = code_column_f16(Q6_V_lo_W(h), i, d0, zero);
      const HVX_Vector hi = code_column_f16(Q6_V_hi_W(h), i, d1, zero);
      if (rows == 128) {
        vstoreu(o, lo);
        vstoreu(o + 64, hi);
      } else {
        alignas(128) HVX_Vector col[2] = {lo, hi};
        __builtin_memcpy(o, col, rows * 2);
      }
    }
  }
}
}  // namespace detail

// The fp16 bit patterns of the M x K weights of a blob packed for P (target::hvx), stored
// transposed: out[k * ldo + m] (ldo = 0: M), the k-major order a matrix unit takes its B operand
// in. `data` is the blob's packed data, 128-byte aligned.
template <class P>
status dequant_fp16(const std::uint8_t* data, std::size_t M, std::size_t K, std::uint16_t* out, std::size_t ldo = 0) {
  require_hvx_spec<P>();
  constexpr tiling_spec S = P::spec;
  static_assert(!S.ternary && !S.asymmetric && S.bits >= 2 && S.bits <= 4 && !S.bf16_params && S.lut,
                "lutkit::hvx::dequant_fp16: symmetric integer formats of 2-4 bits (uint_sym<B>)");
  if (data == nullptr || out == nullptr) return status::null_pointer;
  if (M == 0 || K == 0 || !k_fits_groups<S.group_k>(K)) return status::bad_shape;
  if (ldo == 0) ldo = M;
  if (ldo < M) return status::bad_stride;
  if (!detail::aligned128(data)) return status::bad_alignment;
  const layout_geometry L(S, M, K);
  const std::size_t spb = std::size_t(S.step_pairs_per_block());
  for (std::size_t t = 0; t < L.tiles; ++t) {
    const std::size_t rows = M - t * 128 < 128 ? M - t * 128 : 128;
    for (std::size_t sp = 0; sp < L.step_pairs(); ++sp) {
      const std::size_t blk = sp / spb, k0 = sp * 2 * std::size_t(S.k_per_step);
      if (k0 >= K) break;
      detail::tman_step_pair<P>(data + L.block_offset(t, blk), int(sp % spb),
                                data + L.scale_offset(t, L.group_of_block(blk)), k0, K, rows, out + t * 128, ldo);
    }
  }
  return status::ok;
}

}  // namespace lutkit::hvx
