// lutkit — the packing family's registration point: the ONE place the packer reaches a target
// folder. row_pair_planes runs the AVX-512 + GFNI kernel where the build and the CPU have it,
// else the AVX2 one, else the portable one (portable_kernel.hpp); all give the same bytes
// (tests/test_layout.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../quant/quant.hpp"
#include "portable_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../targets/host/packing/pack_avx2.hpp"
#include "../targets/host/packing/pack_avx512.hpp"
#endif

namespace lutkit::detail {

template <code_form F>
void row_pair_planes(const uint8_t* p0, const uint8_t* p1, std::size_t stride, uint8_t (*out)[64]) {
#if defined(LUTKIT_HAVE_PACK_AVX512)
  if (avx512::cpu_has_pack_kernel()) return avx512::row_pair_planes<F>(p0, p1, stride, out);
#endif
#if defined(LUTKIT_HAVE_PACK_AVX2)
  if (avx2_pack::cpu_has_pack_kernel()) return avx2_pack::row_pair_planes<F>(p0, p1, stride, out);
#endif
  row_pair_planes_scalar<F>(p0, p1, stride, out);
}

// row_pairs_step_pairs8 (portable_kernel.hpp): the AVX-512 kernel (any even PL up to 8) or the
// AVX2 one (2 to 6 planes), else row pair by row pair through row_pair_planes above (each row pair's
// planes by GFNI or AVX2 where the CPU has it, stored 16 bits at a time). `prefetch`: the SIMD
// kernels prefetch the rows' codes two calls ahead (false for codes the caller assembled).
template <code_form F, int PL, bool prefetch = true>
void row_pairs_step_pairs8(const uint8_t* const* p0, const uint8_t* const* p1, std::size_t stride,
                           uint8_t* const* dst, const int* off) {
#if defined(LUTKIT_HAVE_PACK_AVX512)
  if constexpr (PL % 2 == 0)
    if (avx512::cpu_has_pack_kernel()) return avx512::row_pairs_step_pairs8<F, PL, prefetch>(p0, p1, stride, dst, off);
#endif
#if defined(LUTKIT_HAVE_PACK_AVX2)
  if constexpr (PL >= 2 && PL <= 6)
    if (avx2_pack::cpu_has_pack_kernel())
      return avx2_pack::row_pairs_step_pairs8<F, PL, prefetch>(p0, p1, stride, dst, off);
#endif
  row_pairs_step_pairs8_by_rows<F, PL>(p0, p1, stride, dst, off, row_pair_planes<F>);
}

// whole_codes_rows8 (portable_kernels.hpp): the AVX2 kernel where the CPU has it, else the twin
template <code_form F, int PL>
void whole_codes_rows8(const uint8_t* const* p, std::size_t stride, uint8_t* const* dst, int o0, int o1) {
#if defined(LUTKIT_HAVE_PACK_AVX2)
  if (avx2_pack::cpu_has_pack_kernel()) return avx2_pack::whole_codes_rows8<F, PL>(p, stride, dst, o0, o1);
#endif
  whole_codes_rows8_scalar<F, PL>(p, stride, dst, o0, o1);
}

// fp16 encodings of s[0], s[stride], ..., s[(n - 1) stride] to out (2 bytes each): the AVX-512
// or AVX2 gather + vcvtps2ph where the CPU has it, else f32_to_f16 one by one; the same bits
inline void f16_strided(const float* s, std::size_t stride, std::size_t n, uint8_t* out) {
#if defined(LUTKIT_HAVE_PACK_AVX512)
  if (avx512::cpu_has_pack_kernel()) return avx512::f16_strided(s, stride, n, out);
#endif
#if defined(LUTKIT_HAVE_PACK_AVX2)
  if (avx2_pack::cpu_has_pack_kernel()) return avx2_pack::f16_strided(s, stride, n, out);
#endif
  f16_strided_scalar(s, stride, n, out);
}

}  // namespace lutkit::detail
