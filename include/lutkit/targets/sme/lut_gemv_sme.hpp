// lutkit — the LUT-GEMV's SME kernels (target::sme): the table precompute and the lookup GEMV in
// streaming SVE, for any streaming vector length (SVL 128 to 2048 bits). Registered in
// gemv/targets.hpp; compiled on aarch64 with clang when the engine defines LUTKIT_ENABLE_SME, chosen
// only where the CPU has SME (docs/targets/arm.md).
//
// The blob is the one the host packs for target::sme: 64-row tiles in sve order (core/tiling_spec.hpp),
// every plane in a chunk of its own, row r in byte r, step j + s in nibble s. A streaming vector
// therefore reads whole rows: the kernel walks a tile in slices of min(SVL, 512) bits (16 rows at
// SVL 128, all 64 from SVL 512; wider vectors leave the lanes past byte 64 predicated off).
//
//   tables    per block: entry j of a step = sum_i x_i coef_i[j] in fp32 (the fused multiply-add
//             order of the host's Highway builder), |entries| scaled to 127 (int8) or 32639 (int16),
//             rounded half to even, stored by truncating byte stores
//   lookups   per step pair and plane: one load of the slice, the two nibbles (AND, LSR), one TBL
//             per step on a 16-byte table register, and SMLALB / SMLALT by the plane weight 2^p into
//             int16 sums of the even and odd rows (ternary: the looked-up value negated where the
//             row's sign bit is set). int16 tables: a second TBL per step on the high bytes, the
//             low and high bytes both signed (tiling_spec::table_qmax), the high sums weighed by
//             256 in the epilogue
//   epilogue  per block: int16 sums -> fp32 (exact), then the host's fused order:
//             acc += scale * (sum * table_scale + (mirror_offset - zero) * block_activation_sum),
//             the even and odd rows back in order by LD2W / ST2W
// The int16 sums of a block stay within the spec's bound (tiling_spec::max_abs_acc16), so every
// figure is the host kernel's to the bit when the tables are (tests/test_sme.cpp checks both).
#pragma once

#if defined(__aarch64__) && defined(__clang__) && defined(LUTKIT_ENABLE_SME)
#include <arm_sme.h>
#include "cpu.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "../../core/policy.hpp"
#include "../../core/tiling.hpp"
#include "../../gemv/microkernel.hpp"

#define LUTKIT_HAVE_SME_GEMV 1

namespace lutkit::detail::sme_gemv {

inline bool cpu_supported() { return sme_cpu_supported(); }

// coef[i][j]: the weight of activation i of a step in table entry j (bit i of j, minus 1/2 with a
// mirrored table; ternary: digit i of j minus 1, entries 14 and 15 zero)
template <class P>
struct table_coefs {
  alignas(64) float c[4][16];
  constexpr table_coefs() : c{} {
    constexpr tiling_spec S = P::spec;
    for (int j = 0; j < 16; ++j)
      for (int i = 0; i < 4; ++i) {
        if (S.ternary) {
          const int d = i == 0 ? j / 9 : (i == 1 ? (j / 3) % 3 : j % 3);
          c[i][j] = (j < 14 && i < 3) ? float(d - 1) : 0.f;
        } else {
          c[i][j] = float((j >> i) & 1) - (S.mirror ? 0.5f : 0.f);
        }
      }
  }
};
template <class P>
inline constexpr table_coefs<P> coefs{};

// The tables of one activation row (the contract of tables_entry, gemv/microkernel.hpp).
template <class P>
LUTKIT_SME_FN void build_tables_body(const float* x, std::size_t K, int8_t* E, float* tscale, float* xsum,
                                     std::size_t blocks) __arm_streaming {
  constexpr tiling_spec S = P::spec;
  constexpr int KPS = S.k_per_step;
  constexpr float qmax = float(S.table_qmax());
  const int lanes = int(svcntw());
  float xb[S.block_k];
  float T[S.steps_per_block * 16];
  for (std::size_t blk = 0; blk < blocks; ++blk) {
    bool finite = true;
    double sum = 0;
    for (int i = 0; i < S.block_k; ++i) {
      const std::size_t k = blk * S.block_k + std::size_t(i);
      xb[i] = k < K ? x[k] : 0.f;
      finite = finite && std::isfinite(xb[i]);
      sum += xb[i];
    }
    int8_t* Eb = E + blk * S.steps_per_block * S.table_bytes_per_step();
    if (!finite) {
      tscale[blk] = std::numeric_limits<float>::quiet_NaN();
      xsum[blk] = std::numeric_limits<float>::quiet_NaN();
      // (SVE stores: a zeroing loop would become a call to the streaming memset, which the SME ABI
      // support of a static link need not provide)
      constexpr int nb = S.steps_per_block * S.table_bytes_per_step();
      for (int i = 0; i < nb; i += int(svcntb())) svst1_s8(svwhilelt_b8(i, nb), Eb + i, svdup_n_s8(0));
      continue;
    }
    svfloat32_t vmax = svdup_n_f32(0.f);
    for (int s = 0; s < S.steps_per_block; ++s)
      for (int j = 0; j < 16; j += lanes) {
        const svbool_t pj = svwhilelt_b32(j, 16);
        svfloat32_t v = svdup_n_f32(0.f);
        for (int i = 0; i < KPS; ++i) v = svmla_n_f32_x(pj, v, svld1_f32(pj, coefs<P>.c[i] + j), xb[s * KPS + i]);
        svst1_f32(pj, T + s * 16 + j, v);
        vmax = svmax_f32_m(pj, vmax, svabs_f32_x(pj, v));
      }
    const float amax = svmaxv_f32(svptrue_b32(), vmax);
    tscale[blk] = amax / qmax;
    xsum[blk] = float(sum);
    const float inv = amax > 0.f ? qmax / amax : 0.f;
    for (int s = 0; s < S.steps_per_block; ++s) {
      int8_t* e = Eb + s * S.table_bytes_per_step();
      for (int j = 0; j < 16; j += lanes) {
        const svbool_t pj = svwhilelt_b32(j, 16);
        const svfloat32_t r = svrintn_f32_x(pj, svmul_n_f32_x(pj, svld1_f32(pj, T + s * 16 + j), inv));
        svint32_t q = svcvt_s32_f32_x(pj, r);
        q = svmin_n_s32_x(pj, svmax_n_s32_x(pj, q, -int32_t(qmax)), int32_t(qmax));
        if constexpr (S.entry_bits == 8) {
          svst1b_s32(pj, e + j, q);
        } else {  // q = 256 hi + lo, both signed bytes (tiling_spec::table_qmax): lo is q's low
                  // byte (the byte store truncates), hi = (q + 128) >> 8
          svst1b_s32(pj, e + j, q);
          svst1b_s32(pj, e + 16 + j, svasr_n_s32_x(pj, svadd_n_s32_x(pj, q, 128), 8));
        }
      }
    }
  }
}

template <class P>
LUTKIT_SME_FN void build_tables(const float* x, std::size_t K, int8_t* E, float* tscale, float* xsum,
                                std::size_t blocks) {
  build_tables_body<P>(x, K, E, tscale, xsum, blocks);
}

// Per-row parameters of the 64 rows of tile t, group g: scale and the bias factor
// (mirror offset - zero), which multiplies the block's activation sum.
template <class P>
LUTKIT_SME_FN inline void group_rows(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t g,
                                     float* s32, float* z32) __arm_streaming {
  constexpr tiling_spec S = P::spec;
  const float c_mirror = S.mirror ? 0.5f * float(S.plane_weight_sum) : 0.f;
  const auto* sc = reinterpret_cast<const uint16_t*>(data + L.scale_offset(t, g));
  const auto* zc = reinterpret_cast<const uint16_t*>(data + L.zero_offset(t, g));
  const int lanes = int(svcntw());
  for (int r = 0; r < 64; r += lanes) {
    const svbool_t pr = svwhilelt_b32(r, 64);
    // FCVT reads the low half of each 32-bit lane
    svst1_f32(pr, s32 + r, svcvt_f32_f16_x(pr, svreinterpret_f16_u32(svld1uh_u32(pr, sc + r))));
    if constexpr (S.asymmetric) {
      const svfloat32_t z = svcvt_f32_f16_x(pr, svreinterpret_f16_u32(svld1uh_u32(pr, zc + r)));
      svst1_f32(pr, z32 + r, svsubr_n_f32_x(pr, z, c_mirror));
    } else {
      svst1_f32(pr, z32 + r, svdup_n_f32(S.ternary ? 0.f : c_mirror - S.sym_zero));
    }
  }
}

// One slice (rows [x, x + VB) of tile t, VB = min(SVL bytes, 64)) for activation row n over blocks
// [b0, b1): acc[r] += the slice rows' dot products.
template <class P>
LUTKIT_SME_FN void slice_body(const gemv_args& a, std::size_t t, int x, std::size_t n, std::size_t b0,
                              std::size_t b1, float* acc, float* s32, float* z32) __arm_streaming {
  constexpr tiling_spec S = P::spec;
  constexpr bool I16 = S.entry_bits == 16;
  constexpr int TB = S.table_bytes_per_step();
  constexpr int SPB = S.step_pairs_per_block();
  static_assert(S.sve() && S.rows_per_tile == 64, "the SME LUT-GEMV reads the sve-order layout");
  static_assert(S.max_abs_acc16() <= 32767, "int16 accumulation bound");
  static_assert(!S.min_form && S.super_k == 0,
                "the SME LUT-GEMV reads fp16 scales and zeros (no min-form or fp32-parameter formats)");
  const packed_layout& L = *a.layout;
  const int VL = int(svcntb());
  const int VB = VL < 64 ? VL : 64;
  const svbool_t pb = svwhilelt_b8(0, VB);
  const svbool_t p16 = svwhilelt_b8(0, 16);
  // fp32 halves of the even/odd int16 sums: lanes [0, VL/4) and [VL/4, VL/2)
  const int q = VL / 4;
  const svbool_t pf0 = svwhilelt_b32(0, VB / 2), pf1 = svwhilelt_b32(q, VB / 2);
  const int8_t* En = a.entries + n * a.entries_stride;
  const float* TS = a.tscale + n * a.blocks;
  const float* XS = a.xsum + n * a.blocks;
  // the block's place in its group, advanced per block
  std::size_t g = L.group_of_block(b0), in_group = b0 % L.blocks_per_group;
  group_rows<P>(a.data, L, t, g, s32, z32);
  for (std::size_t blk = b0; blk < b1; ++blk, ++in_group) {
    if (in_group == L.blocks_per_group) {
      in_group = 0;
      group_rows<P>(a.data, L, t, ++g, s32, z32);
    }
    const uint8_t* bp = a.data + L.block_offset(t, blk) + x;  // (K bands: blocks are not one run)
    svint16_t he = svdup_n_s16(0), ho = svdup_n_s16(0);  // signed (int8 entries, or their high bytes)
    svint16_t le = svdup_n_s16(0), lo = svdup_n_s16(0);  // int16 entries: the low bytes
    const std::size_t j0 = blk * std::size_t(S.steps_per_block);
    for (int spi = 0; spi < SPB; ++spi) {
      const int8_t* tp = En + (j0 + std::size_t(2 * spi)) * TB;
      const svint8_t t0 = svld1_s8(p16, tp), t1 = svld1_s8(p16, tp + TB);
      svbool_t neg0 = svpfalse(), neg1 = svpfalse();
      if constexpr (S.ternary) {
        const svuint8_t sg = svld1_u8(pb, bp + S.sign_in_block(spi));
        neg0 = svcmpne_n_u8(pb, svand_n_u8_x(pb, sg, uint8_t(1u << S.sign_bit_in_byte(spi, 0))), 0);
        neg1 = svcmpne_n_u8(pb, svand_n_u8_x(pb, sg, uint8_t(1u << S.sign_bit_in_byte(spi, 1))), 0);
      }
      for (int p = 0; p < (S.ternary ? 1 : S.planes); ++p) {
        const svuint8_t raw = svld1_u8(pb, bp + S.plane_chunk_in_block(spi, p));
        const svuint8_t i0 = svand_n_u8_x(pb, raw, 15), i1 = svlsr_n_u8_x(pb, raw, 4);
        svint8_t v0 = svtbl_s8(t0, i0), v1 = svtbl_s8(t1, i1);
        if constexpr (S.ternary) {
          v0 = svneg_s8_m(v0, neg0, v0);
          v1 = svneg_s8_m(v1, neg1, v1);
        }
        const int8_t w = int8_t(1 << p);
        if constexpr (I16) {
          if (S.plane_whole(p)) {  // (the low bytes for whole planes only: table::lut4's WholePlanes)
            le = svmlalb_n_s16(le, v0, w);
            lo = svmlalt_n_s16(lo, v0, w);
            le = svmlalb_n_s16(le, v1, w);
            lo = svmlalt_n_s16(lo, v1, w);
          }
          const svint8_t g0 = svtbl_s8(svld1_s8(p16, tp + 16), i0), g1 = svtbl_s8(svld1_s8(p16, tp + TB + 16), i1);
          he = svmlalb_n_s16(he, g0, w);
          ho = svmlalt_n_s16(ho, g0, w);
          he = svmlalb_n_s16(he, g1, w);
          ho = svmlalt_n_s16(ho, g1, w);
        } else {
          he = svmlalb_n_s16(he, v0, w);
          ho = svmlalt_n_s16(ho, v0, w);
          he = svmlalb_n_s16(he, v1, w);
          ho = svmlalt_n_s16(ho, v1, w);
        }
      }
    }
    // epilogue: rows x + 2i (even sums) and x + 2i + 1 (odd sums); half h holds i in [hq, hq + q)
    const float ts = TS[blk], sx = XS[blk];
    for (int h = 0; h < 2; ++h) {
      const int r0 = x + 2 * h * q;
      if (r0 >= x + VB) break;
      const svbool_t pg = h ? pf1 : pf0;
      svfloat32_t re, ro;
      if constexpr (I16) {
        const svfloat32_t ue = svcvt_f32_s32_x(pg, h ? svunpkhi_s32(le) : svunpklo_s32(le));
        const svfloat32_t uo = svcvt_f32_s32_x(pg, h ? svunpkhi_s32(lo) : svunpklo_s32(lo));
        re = svmla_n_f32_x(pg, ue, svcvt_f32_s32_x(pg, h ? svunpkhi_s32(he) : svunpklo_s32(he)), 256.f);
        ro = svmla_n_f32_x(pg, uo, svcvt_f32_s32_x(pg, h ? svunpkhi_s32(ho) : svunpklo_s32(ho)), 256.f);
      } else {
        re = svcvt_f32_s32_x(pg, h ? svunpkhi_s32(he) : svunpklo_s32(he));
        ro = svcvt_f32_s32_x(pg, h ? svunpkhi_s32(ho) : svunpklo_s32(ho));
      }
      const svfloat32x2_t sc = svld2_f32(pg, s32 + r0), zz = svld2_f32(pg, z32 + r0), ac = svld2_f32(pg, acc + r0);
      const svfloat32_t ve = svmla_n_f32_x(pg, svmul_n_f32_x(pg, svget2_f32(zz, 0), sx), re, ts);
      const svfloat32_t vo = svmla_n_f32_x(pg, svmul_n_f32_x(pg, svget2_f32(zz, 1), sx), ro, ts);
      const svfloat32_t ae = svmla_f32_x(pg, svget2_f32(ac, 0), svget2_f32(sc, 0), ve);
      const svfloat32_t ao = svmla_f32_x(pg, svget2_f32(ac, 1), svget2_f32(sc, 1), vo);
      svst2_f32(pg, acc + r0, svcreate2_f32(ae, ao));
    }
  }
}

// Rows [row_begin, row_end) of y for every activation row, in one streaming session: per tile,
// K in chunks of ~16 KiB of weights (re-read from L1 by each activation row), slice by slice.
template <class P>
LUTKIT_SME_FN void gemv_rows_body(const gemv_args& a, float* acc /* [N][64] */) __arm_streaming {
  constexpr tiling_spec S = P::spec;
  const packed_layout& L = *a.layout;
  const std::size_t chunk_blocks = std::size_t(16384) / std::size_t(S.block_bytes()) > 0
                                       ? std::size_t(16384) / std::size_t(S.block_bytes())
                                       : std::size_t(1);
  const int VL = int(svcntb());
  const int VB = VL < 64 ? VL : 64;
  alignas(64) float s32[64], z32[64];
  const std::size_t t0 = a.row_begin / 64, t1 = (a.row_end + 63) / 64;
  for (std::size_t t = t0; t < t1; ++t) {
    // zeroing and the copy out by SVE loads and stores (loops would become streaming memset / memcpy calls)
    for (std::size_t i = 0; i < a.N * 64; i += svcntw()) svst1_f32(svwhilelt_b32(i, a.N * 64), acc + i, svdup_n_f32(0.f));
    for (std::size_t b0 = 0; b0 < L.blocks(); b0 += chunk_blocks) {
      const std::size_t b1 = b0 + chunk_blocks < L.blocks() ? b0 + chunk_blocks : L.blocks();
      for (int x = 0; x < 64; x += VB)
        for (std::size_t n = 0; n < a.N; ++n) slice_body<P>(a, t, x, n, b0, b1, acc + n * 64, s32, z32);
    }
    const std::size_t r_lo = a.row_begin > t * 64 ? a.row_begin : t * 64;
    const std::size_t r_hi = a.row_end < (t + 1) * 64 ? a.row_end : (t + 1) * 64;
    for (std::size_t n = 0; n < a.N; ++n)
      for (std::size_t m = r_lo; m < r_hi; m += svcntw()) {
        const svbool_t pm = svwhilelt_b32(m, r_hi);
        svst1_f32(pm, a.y + n * a.ldy + m, svld1_f32(pm, acc + n * 64 + (m - t * 64)));
      }
  }
}

// The entry (gemv_entry): a plain function calling the streaming body, so the compiler switches
// modes once per call (see gemm_sme.hpp on locally streaming functions).
template <class P>
LUTKIT_SME_FN void gemv(const gemv_args& a) {
  std::vector<float> acc(a.N * 64);
  gemv_rows_body<P>(a, acc.data());
}

}  // namespace lutkit::detail::sme_gemv
#endif
