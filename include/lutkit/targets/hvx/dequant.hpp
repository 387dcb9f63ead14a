// lutkit — INT4 -> fp16 dequantization on Hexagon HVX by vlut16 (paper 001 §5.2.2), on the Q4_0
// super-group layout (tiling_spec.hpp: q4_0_supergroup). The scale is baked into each group's
// 16-entry table (entry c = fp16(d * (c - 8)), rounded once, as the host's dequantization rounds
// to fp16), so the lookup's output IS the fp16 weight: no unpack, convert or multiply, and no
// HVX float (v67 has none; before v79 it would compute in qfloat). One 128-byte vector of codes is
// 256 weights of 8 groups; each pass (low nibbles: groups 0..3, high: 4..7) ORs four match-mode
// vlut16 lookups, the index byte's upper nibble naming its group.
#pragma once
#include "hvx.hpp"

namespace lutkit::hvx {

namespace detail {
// byte b's group within a nibble pass, in the upper nibble: 2 (b mod 2) + b / 64
struct sg_consts {
  alignas(128) std::uint8_t gid[128];
};
constexpr sg_consts make_sg_consts() {
  sg_consts c{};
  for (int b = 0; b < 128; ++b) c.gid[b] = std::uint8_t((2 * (b % 2) + b / 64) << 4);
  return c;
}
inline constexpr sg_consts sg_consts_v = make_sg_consts();

// The per-group tables of one super-group: groups 0..3 in `lo`, 4..7 in `hi`; group m of a
// vector answers the match selector m: word 16 (m mod 2) + c, halfword m / 2.
__attribute__((noinline)) inline void supergroup_tables(const std::uint8_t* rec, std::int16_t* lo, std::int16_t* hi) {
  for (int g = 0; g < q4_0_supergroup::groups; ++g) {
    std::uint16_t db;
    __builtin_memcpy(&db, rec + q4_0_supergroup::scale_offset(g), 2);
    const float d = f16_to_f32(db);
    std::int16_t* t = g < 4 ? lo : hi;
    const int m = g % 4;
    for (int c = 0; c < 16; ++c) t[2 * (16 * (m % 2) + c) + m / 2] = std::int16_t(f32_to_f16(d * float(c - 8)));
  }
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
  alignas(128) std::int16_t tlo[64], thi[64];
  alignas(128) HVX_Vector w[4];
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k0 = 0; k0 < K; k0 += q4_0_supergroup::weights) {
      const std::uint8_t* rec = src + q4_0_supergroup::record_offset(K, m, k0);
      detail::supergroup_tables(rec, tlo, thi);
      const HVX_Vector codes = detail::vloadu(rec);  // records are 144 bytes apart
      detail::supergroup_lookup(codes, detail::vload(tlo), detail::vload(thi), w);
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

}  // namespace lutkit::hvx
