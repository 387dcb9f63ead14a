// lutkit — the dequant-GEMM's SME kernel set (target::sme): streaming SVE + the ZA array, for any
// streaming vector length (SVL 128 to 2048 bits). Registered in gemm/targets.hpp; compiled on
// aarch64 with clang when the engine defines LUTKIT_ENABLE_SME (its toolchain then provides the SME
// ABI support routines; docs/targets/arm.md). The functions carry target("sme"): the rest of the
// build stays baseline aarch64, and the set is chosen at run time only where the CPU has SME.
//
//   level 2   a scale group's 16-entry value table per row (sc * (level - zero), as the portable
//             kernels compute it) looked up with TBL on the codes in streaming-SVE registers:
//             ceil(16 / lanes) table registers, out-of-range TBL lanes give 0, OR-combined
//   fp32      FMOPA: per k step, the 64 rows' weights (step-major: contiguous) times the block's
//             activation columns, accumulated in up to 4 ZA32 tiles of (SVL/32)^2 floats
//   bf16      BFMOPA (widening, pairs of k): the same with the step-major bf16 pairs
// The accumulators enter and leave ZA as vertical slices: column j of the 64 x NC block is
// contiguous in C (column-major), and a vertical ZA slice holds one activation column.
// Not provided (gemm/targets.hpp reports it): the int8 paradigm and FusedDQP.
#pragma once

#if defined(__aarch64__) && defined(__clang__) && defined(LUTKIT_ENABLE_SME)
#include <arm_sme.h>
#include "cpu.hpp"

#include <cstddef>
#include <cstdint>

#include "../../core/bf16.hpp"
#include "../../gemm/portable_kernels.hpp"
#include "../../gemm/microkernel.hpp"

#define LUTKIT_HAVE_SME_DQ 1

namespace lutkit::detail::sme {

inline bool cpu_supported() { return sme_cpu_supported(); }

// rows [r0, r0 + lanes) of the 64, as a 32-bit predicate (all false past row 64)
LUTKIT_SME_FN inline svbool_t rows_b32(int r0) __arm_streaming { return svwhilelt_b32(r0, 64); }

// One ZA tile's share of a 64 x nc block: tile T holds rows rb + T * vl ...
template <int T>
LUTKIT_SME_FN inline void load_tile(const float* C, int rb, int vl, int cb, int nc) __arm_streaming __arm_inout("za") {
  const svbool_t pr = rows_b32(rb + T * vl);
  for (int j = 0; j < nc; ++j) svld1_ver_za32(T, uint32_t(j), pr, C + (cb + j) * 64 + rb + T * vl);
}
template <int T>
LUTKIT_SME_FN inline void store_tile(float* C, int rb, int vl, int cb, int nc) __arm_streaming __arm_inout("za") {
  const svbool_t pr = rows_b32(rb + T * vl);
  for (int j = 0; j < nc; ++j) svst1_ver_za32(T, uint32_t(j), pr, C + (cb + j) * 64 + rb + T * vl);
}

// The micro-kernel of mk_val_args (gemm/microkernel.hpp) for NC columns: BF selects bf16 pairs.
// Per k step: one load of the step's activation columns, then per tile one predicated load of its
// rows' weights and one outer product (rows past 64 are predicated off at wide SVL).
template <bool BF, int NC>
LUTKIT_SME_FN void mk_val_body(const mk_val_args& a) __arm_streaming __arm_inout("za") {
  const int vl = int(svcntw());
  for (int rb = 0; rb < 64; rb += 4 * vl) {
    const svbool_t p0 = rows_b32(rb), p1 = rows_b32(rb + vl), p2 = rows_b32(rb + 2 * vl), p3 = rows_b32(rb + 3 * vl);
    // bf16 pairs: lanes 2i, 2i + 1 of a 16-bit predicate are row i
    const svbool_t h0 = svwhilelt_b16(2 * rb, 128), h1 = svwhilelt_b16(2 * (rb + vl), 128),
                   h2 = svwhilelt_b16(2 * (rb + 2 * vl), 128), h3 = svwhilelt_b16(2 * (rb + 3 * vl), 128);
    for (int cb = 0; cb < NC; cb += vl) {
      const int nc = NC - cb < vl ? NC - cb : vl;
      const svbool_t pc = svwhilelt_b32(0, nc);
      const svbool_t pc16 = svwhilelt_b16(0, 2 * nc);
      load_tile<0>(a.C, rb, vl, cb, nc);
      load_tile<1>(a.C, rb, vl, cb, nc);
      load_tile<2>(a.C, rb, vl, cb, nc);
      load_tile<3>(a.C, rb, vl, cb, nc);
      const uint32_t* w = a.W + rb;
      const uint32_t* x = a.A + cb;
      for (std::size_t s = 0; s < a.steps; ++s, w += 64, x += a.lda) {
        if constexpr (BF) {
          const svbfloat16_t zm = svreinterpret_bf16_u32(svld1_u32(pc, x));
          svmopa_za32_bf16_m(0, h0, pc16, svreinterpret_bf16_u32(svld1_u32(p0, w)), zm);
          svmopa_za32_bf16_m(1, h1, pc16, svreinterpret_bf16_u32(svld1_u32(p1, w + vl)), zm);
          svmopa_za32_bf16_m(2, h2, pc16, svreinterpret_bf16_u32(svld1_u32(p2, w + 2 * vl)), zm);
          svmopa_za32_bf16_m(3, h3, pc16, svreinterpret_bf16_u32(svld1_u32(p3, w + 3 * vl)), zm);
        } else {
          const float* wf = reinterpret_cast<const float*>(w);
          const svfloat32_t zm = svld1_f32(pc, reinterpret_cast<const float*>(x));
          svmopa_za32_f32_m(0, p0, pc, svld1_f32(p0, wf), zm);
          svmopa_za32_f32_m(1, p1, pc, svld1_f32(p1, wf + vl), zm);
          svmopa_za32_f32_m(2, p2, pc, svld1_f32(p2, wf + 2 * vl), zm);
          svmopa_za32_f32_m(3, p3, pc, svld1_f32(p3, wf + 3 * vl), zm);
        }
      }
      store_tile<0>(a.C, rb, vl, cb, nc);
      store_tile<1>(a.C, rb, vl, cb, nc);
      store_tile<2>(a.C, rb, vl, cb, nc);
      store_tile<3>(a.C, rb, vl, cb, nc);
    }
  }
}

// The entry points are plain functions that call a streaming body (the compiler switches mode
// around the call) rather than __arm_locally_streaming ones: clang 19 emits, in a locally streaming
// leaf function, a call that clobbers a link register it never saved.
template <bool BF, int NC>
LUTKIT_SME_FN __arm_new("za") void mk_val(const mk_val_args& a) {
  mk_val_body<BF, NC>(a);
}

// Level 2 of one scale group (the contract of dq_kernel_set::group16_f32 / group16_bf16): the 64
// rows' tables computed as the portable kernel computes them (outside streaming mode), the lookups
// by TBL over `len` codes per row in streaming mode.
template <class T>
LUTKIT_SME_FN void group16_body(const uint8_t* codes, std::size_t ldc, const T* tabs, std::size_t len, T* out,
                                std::size_t ldo) __arm_streaming {
  constexpr bool F32 = sizeof(T) == 4;
  const std::size_t lanes = F32 ? svcntw() : svcnth();
  for (int r = 0; r < 64; ++r) {
    const uint8_t* cr = codes + r * ldc;
    T* o = out + r * ldo;
    if constexpr (F32) {
      const uint32_t* tb = reinterpret_cast<const uint32_t*>(tabs + 16 * r);
      // table register q holds entries [q * lanes, (q + 1) * lanes): 4 at SVL 128, 2 at 256, 1 above
      const svuint32_t t0 = svld1_u32(svwhilelt_b32(0, 16), tb);
      const svuint32_t t1 = svld1_u32(svwhilelt_b32(int(lanes), 16), tb + (lanes < 16 ? lanes : 0));
      const svuint32_t t2 = svld1_u32(svwhilelt_b32(int(2 * lanes), 16), tb + (2 * lanes < 16 ? 2 * lanes : 0));
      const svuint32_t t3 = svld1_u32(svwhilelt_b32(int(3 * lanes), 16), tb + (3 * lanes < 16 ? 3 * lanes : 0));
      for (std::size_t i = 0; i < len; i += lanes) {
        const svbool_t pg = svwhilelt_b32(uint64_t(i), uint64_t(len));
        const svuint32_t idx = svld1ub_u32(pg, cr + i);
        // TBL gives 0 for an index past its register: the registers' lookups OR together
        svuint32_t v = svtbl_u32(t0, idx);
        if (lanes < 16) {
          v = svorr_u32_x(pg, v, svtbl_u32(t1, svsub_n_u32_x(pg, idx, uint32_t(lanes))));
          if (2 * lanes < 16) {
            v = svorr_u32_x(pg, v, svtbl_u32(t2, svsub_n_u32_x(pg, idx, uint32_t(2 * lanes))));
            v = svorr_u32_x(pg, v, svtbl_u32(t3, svsub_n_u32_x(pg, idx, uint32_t(3 * lanes))));
          }
        }
        svst1_u32(pg, reinterpret_cast<uint32_t*>(o) + i, v);
      }
    } else {
      const uint16_t* tb = reinterpret_cast<const uint16_t*>(tabs + 16 * r);
      const svuint16_t t0 = svld1_u16(svwhilelt_b16(0, 16), tb);
      const svuint16_t t1 = svld1_u16(svwhilelt_b16(int(lanes), 16), tb + (lanes < 16 ? lanes : 0));
      for (std::size_t i = 0; i < len; i += lanes) {
        const svbool_t pg = svwhilelt_b16(uint64_t(i), uint64_t(len));
        const svuint16_t idx = svld1ub_u16(pg, cr + i);
        svuint16_t v = svtbl_u16(t0, idx);
        if (lanes < 16) v = svorr_u16_x(pg, v, svtbl_u16(t1, svsub_n_u16_x(pg, idx, uint16_t(lanes))));
        svst1_u16(pg, reinterpret_cast<uint16_t*>(o) + i, v);
      }
    }
  }
}

template <class T>
LUTKIT_SME_FN void group16(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz,
                           bool min_form, std::size_t len, T* out, std::size_t ldo) {
  alignas(64) T tabs[64 * 16];
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 16; ++c) {
      const float v = min_form ? sc[r] * lv[c] + zz[r] : sc[r] * (lv[c] - zz[r]);
      if constexpr (sizeof(T) == 4) tabs[16 * r + c] = v; else tabs[16 * r + c] = f32_to_bf16(v);
    }
  group16_body<T>(codes, ldc, tabs, len, out, ldo);
}

// The set: SME for level 2 and the products; the driver's glue (activation packing, the tile
// write, row-to-step transposes, fp16 parameter conversion) is the portable code compiled for
// this target. No int8 paradigm, no FusedDQP (null: the entry points refuse them by name).
inline const dq_kernel_set& kernels() {
  static const dq_kernel_set k{"sme",
                               {nullptr, nullptr, nullptr},
                               {&mk_val<true, 1>, &mk_val<true, 2>, &mk_val<true, 3>, &mk_val<true, 4>,
                                &mk_val<true, 5>, &mk_val<true, 6>},
                               {&mk_val<false, 1>, &mk_val<false, 2>, &mk_val<false, 3>, &mk_val<false, 4>,
                                &mk_val<false, 5>, &mk_val<false, 6>},
                               &portable::rows_to_steps,
                               nullptr,
                               &portable::halves_to_float,
                               &group16<float>,
                               &group16<uint16_t>,
                               &portable::tg_groups_bf16,
                               &portable::tg_groups_f32,
                               {},
                               {},
                               &prepare_rows_baseline,
                               &write_tile};
  return k;
}

}  // namespace lutkit::detail::sme
#endif
