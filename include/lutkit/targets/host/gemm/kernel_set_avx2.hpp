// lutkit — the AVX2 dequant-GEMM kernel set (gemm/microkernel.hpp), for x86 CPUs without the
// AVX-512 set (Zen 2 / Zen 3, Haswell .. Alder Lake): assembled here from the micro-kernels,
// level 1 and 2, the fused int8 decode and the tile-group kernels of targets/host/gemm/*_avx2.hpp
// (whole codes: level1_whole_codes.hpp). The entries it does not vectorise (the step-major bf16
// level 2, the activation packing and tile write) are the portable kernels. Registered in
// gemm/targets.hpp.
#pragma once
#include <utility>

#include "../../../gemm/dequant.hpp"
#include "../../../gemm/microkernel.hpp"
#include "../../../gemm/portable_kernels.hpp"
#include "../features.hpp"
#include "decode_int8_avx2.hpp"
#include "level1_avx2.hpp"
#include "level1_whole_codes.hpp"
#include "level2_avx2.hpp"
#include "microkernels_avx2.hpp"
#include "tile_group_avx2.hpp"

#if defined(LUTKIT_HOST_X86)
#define LUTKIT_HAVE_AVX2_DQ 1

namespace lutkit::detail::avx2 {

inline bool cpu_supported() { return host_features::avx2(); }

// level 1 for policy P: whole codes' loads, or this set's unpackers of the bit planes (ternary
// steps are 3 activations, other tile shapes and orders: the portable unpacker serves them), and
// the fused int8 decode where it serves P
template <class P>
dq_level1_fns<P> level1_fns() {
  if constexpr (P::spec.whole_codes()) {
    return whole_codes::level1_fns<P>(int8_fused_kernel<P, 1>(), int8_fused_kernel<P, 2>());
  } else if constexpr (has_level1<P>()) {
    // (the bit-plane formats' levels are their codes: the int8 route's levels are codes_steps')
    static_assert(levels_are_codes<P>());
    return {&codes_steps<P>, &codes_rows<P>, &codes_steps<P>, {int8_fused_kernel<P, 1>(), int8_fused_kernel<P, 2>()}};
  } else {
    return {};
  }
}

inline const dq_kernel_set& kernels() {
  static const dq_kernel_set k = [] {
    dq_kernel_set s = portable_dq_kernels();
    s.name = "avx2";
    s.int8[0] = &mk_int8<1>;
    s.int8[1] = &mk_int8<2>;
    s.int8[2] = &mk_int8<3>;
    [&]<int... I>(std::integer_sequence<int, I...>) {
      ((s.bf16[I] = &mk_val<true, I + 1>, s.f32[I] = &mk_val<false, I + 1>), ...);
    }(std::make_integer_sequence<int, mk_val_cols>{});
    s.halves = &avx2::halves_to_float;
    s.rows_to_steps = &avx2::rows_to_steps;
    s.fdq = &avx2::fdq_dot;
    s.group16_f32 = &avx2::group16_f32;
    s.group16_bf16 = &avx2::group16_bf16;
    s.group_codes_f32 = &avx2::group_codes<float>;
    s.group_codes_bf16 = &avx2::group_codes<uint16_t>;
    s.tg_groups_bf16 = &avx2::tg_groups_bf16;
    s.tg_groups_f32 = &avx2::tg_groups_f32;
    s.tg_int8[0] = &tg_int8<1>;
    s.tg_int8[1] = &tg_int8<2>;
    s.tg_int8[2] = &tg_int8<3>;
    s.tg_int8[3] = &tg_int8<4>;
    return s;
  }();
  return k;
}

}  // namespace lutkit::detail::avx2
#endif
