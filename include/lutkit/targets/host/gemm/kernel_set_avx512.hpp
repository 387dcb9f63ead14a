// lutkit — the AVX-512 dequant-GEMM kernel set (gemm/microkernel.hpp), for x86 CPUs with AVX-512
// VNNI, BF16 and VBMI (Zen 4, Sapphire Rapids): assembled here from the micro-kernels, level 1 and
// 2, the fused int8 decode and the tile-group kernels of targets/host/gemm/*_avx512.hpp (whole
// codes: level1_whole_codes.hpp), with AVX-512 instances of the driver's activation packing and
// tile write. Registered in gemm/targets.hpp.
#pragma once
#include "../../../core/compiler.hpp"
#include "../../../gemm/activations.hpp"
#include "../../../gemm/dequant.hpp"
#include "../../../gemm/microkernel.hpp"
#include "../features.hpp"
#include "decode_int8_avx512.hpp"
#include "isa_avx512.hpp"
#include "level1_avx512.hpp"
#include "level1_whole_codes.hpp"
#include "level2_avx512.hpp"
#include "microkernels_amx.hpp"
#include "microkernels_avx512.hpp"
#include "kernel_set_avx2.hpp"
#include "tile_group_avx512.hpp"

#if defined(LUTKIT_HOST_X86)
#define LUTKIT_HAVE_AVX512_DQ 1

namespace lutkit::detail::avx512 {

inline bool cpu_supported() { return host_features::avx512_vnni_bf16_vbmi(); }
// CPUs with AVX-512 VNNI and VBMI but no BF16 (Ice Lake): kernels_vnni() below
inline bool cpu_supported_vnni() { return host_features::avx512_vbmi_vnni(); }

// gemm/activations.hpp's activation packing and tile write, compiled for AVX-512 instead of the
// SSE2 baseline (docs/design_measurements.md, "Activation panel and prep")
LUTKIT_AVX512_DQ LUTKIT_VECTORIZE inline void prepare_rows(dq_activations& A, const float* x, std::size_t ldx,
                                                          std::size_t b0, std::size_t b1) {
  detail::prepare_rows(A, x, ldx, b0, b1);
}
LUTKIT_AVX512_DQ LUTKIT_VECTORIZE inline void write_tile(const dq_activations& A, const float* C, std::size_t n0,
                                                        std::size_t n1, std::size_t ma, std::size_t mb, float* y,
                                                        std::size_t ldy) {
  detail::write_tile(A, C, n0, n1, ma, mb, y, ldy);
}

// level 1 for policy P: whole codes' loads with the VNNI fused int8 decode, or this set's
// unpackers of the bit planes (ternary steps are 3 activations: the portable unpacker serves
// them) with the GFNI fused int8 decode where the CPU has GFNI
template <class P>
dq_level1_fns<P> level1_fns() {
  if constexpr (P::spec.whole_codes()) {
    return whole_codes::level1_fns<P>(int8_fused_kernel<P, 1>(), int8_fused_kernel<P, 2>());
  } else if constexpr (!P::spec.ternary) {
    // (the bit-plane formats' levels are their codes: the int8 route's levels are codes_steps')
    static_assert(levels_are_codes<P>());
    return {&codes_steps<P>, &codes_rows<P>, &codes_steps<P>, {int8_fused_kernel<P, 1>(), int8_fused_kernel<P, 2>()}};
  } else {
    return {};
  }
}

inline const dq_kernel_set& kernels() {
  static const dq_kernel_set k = [] {
    dq_kernel_set s{"avx512_vnni_bf16",
                    {&mk_int8<1>, &mk_int8<2>, &mk_int8_3},
                    {&mk_val<true, 1>, &mk_val<true, 2>, &mk_val<true, 3>, &mk_val<true, 4>,
                     &mk_val<true, 5>, &mk_val<true, 6>},
                    {&mk_val<false, 1>, &mk_val<false, 2>, &mk_val<false, 3>, &mk_val<false, 4>,
                     &mk_val<false, 5>, &mk_val<false, 6>},
                    &rows_to_steps,
                    &fdq_dot,
                    &halves_to_float,
                    &group16_f32,
                    &group16_bf16,
                    &tg_groups_bf16,
                    &tg_groups_f32,
                    {&group_tables_bf16<2>, &group_tables_bf16<4>, &group_tables_bf16<8>,
                     &group_tables_bf16<16>},
                    {&level2_steps_bf16<2>, &level2_steps_bf16<4>, &level2_steps_bf16<8>,
                     &level2_steps_bf16<16>},
                    &avx512::prepare_rows,
                    &avx512::write_tile,
                    {&tg_int8<1>, &tg_int8<2>, &tg_int8<3>, &tg_int8<4>},
                    /*int8_decode_first=*/true};
    s.bf16_codes_steps = &level2_codes_steps_bf16;
    s.int8_super_fold = true;
    s.fold_levels = &fold_levels;
    s.mins[0] = &mk_mins<1>;
    s.mins[1] = &mk_mins<2>;
    s.mins[2] = &mk_mins_3;
    return s;
  }();
  return k;
}

// The set for AVX-512 VNNI + VBMI CPUs without BF16 (Ice Lake): this set's int8 micro-kernels,
// int8 decodes, level 1, fp32 micro-kernels, level 2, activation packing and tile write — none of
// which executes a BF16 instruction (the attribute only allows them; bf16 rounding is integer
// code, and the tests run this set on such a CPU) — and the AVX2 set's bf16 route. Without it
// those CPUs ran the AVX2 int8 kernel (no VNNI) in prefill (docs/engine.md, "Beside llama.cpp");
// with the AVX2 set's activation packing (the SSE2 baseline's instance) it was 3 % of a Q6_K
// prefill's samples at N = 128.
inline const dq_kernel_set& kernels_vnni() {
  static const dq_kernel_set k = [] {
    dq_kernel_set s = kernels();
    const dq_kernel_set& a2 = avx2::kernels();
    s.name = "avx512_vnni";
    for (int i = 0; i < mk_val_cols; ++i) s.bf16[i] = a2.bf16[i];
    s.group16_bf16 = a2.group16_bf16;
    s.group_codes_bf16 = a2.group_codes_bf16;
    s.tg_groups_bf16 = a2.tg_groups_bf16;
    s.bf16_codes_steps = a2.bf16_codes_steps;
    for (int i = 0; i < 4; ++i) {
      s.bf16_tables[i] = a2.bf16_tables[i];
      s.bf16_steps[i] = a2.bf16_steps[i];
    }
    // decode_method::best keeps the LUT-GEMV first on these CPUs, as with the AVX2 set (the int8
    // decode's lead was measured on Zen 4 / 5 only)
    s.int8_decode_first = false;
    return s;
  }();
  return k;
}

// The set for CPUs with AMX (Sapphire Rapids and later): kernels() with the bf16 paradigm's
// prefill on AMX tiles (amx::mk_bf16_rows) from amx_min_cols columns on, and the int8 paradigm's
// (amx::mk_int8_rows) for flush groups of at least amx_int8_min_k (and the super-group fold's
// 256-k groups). Below those, and for the decode (N <= 2), the AVX-512 kernels. (16-k groups on
// tiles: a tile store and an epilogue per 16 k made Q6_K's GEMM 0.82-0.85x the VNNI kernel's;
// docs/prefill.md, "AMX".)
inline bool cpu_supported_amx() { return cpu_supported() && host_features::amx(); }
inline constexpr std::size_t amx_min_cols = 6, amx_int8_min_k = 32;
inline const dq_kernel_set& kernels_amx() {
  static const dq_kernel_set k = [] {
    host_features::amx();  // (the OS's leave for the tile state, asked once per process)
    dq_kernel_set s = kernels();
    s.name = "avx512_amx";
    s.int8_rows = &amx::mk_int8_rows;
    s.int8_rows_min = amx_min_cols;
    s.int8_rows_min_k = amx_int8_min_k;
    s.bf16_rows = &amx::mk_bf16_rows;
    s.tiles_save = &amx::save_tiles;
    s.tiles_done = &amx::restore_tiles;
    s.bf16_rows_min = amx_min_cols;
    return s;
  }();
  return k;
}

}  // namespace lutkit::detail::avx512
#endif
