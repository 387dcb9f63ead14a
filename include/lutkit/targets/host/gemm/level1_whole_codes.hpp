// lutkit — level 1 of whole codes (tiling_spec::whole_codes: 8-bit codes, codebooks, Q4NX), the
// one both host kernel sets use: the codes are stored in the step-major layout, so a step's rows
// are loads (4 bits: the step pair's bytes, then a shift and a mask) and a codebook's u8 levels one
// vpshufb. Wider registers add nothing to a load: it is AVX2 code, which every AVX-512 CPU runs,
// on the AVX2 level 1's block walk and transposes to rows (level1_avx2.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../../../core/tiling.hpp"
#include "../../../gemm/dequant.hpp"
#include "../../../gemm/microkernel.hpp"
#include "level1_avx2.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::whole_codes {

// register o of step s of a step pair: rows 8 o .. 8 o + 7, a dword each
template <class P>
LUTKIT_AVX2_DQ inline __m256i step_reg(const uint8_t* pair, int s, int o) {
  constexpr auto& S = P::spec;
  static_assert(whole_codes_step_major<P>());
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + S.code_byte_in_step_pair(8 * o, s, 0)));
  if constexpr (S.planes == 8) return v;
  else return _mm256_and_si256(s ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0F));
}

// codes (MAP: the u8 levels of a 16-code codebook, one vpshufb) of [k0, k1), step-major
template <class P, bool MAP>
LUTKIT_AVX2_DQ void codes_steps(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                std::size_t k1, uint8_t* out) {
  static_assert(avx2::has_level1<P>() && whole_codes_step_major<P>());
  __m256i map = _mm256_setzero_si256();
  if constexpr (MAP) {
    using FT = format_traits<typename P::format>;
    static_assert(FT::max_code < 16 && FT::integer_levels, "a 16-entry byte map");
    alignas(16) uint8_t m[16] = {};
    for (int c = 0; c <= FT::max_code; ++c) m[c] = uint8_t(FT::level(c));
    map = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(m)));
  }
  avx2::level1_walk<P> walk(data, L, t);
  for (std::size_t step = k0 / 4; step < k1 / 4; ++step) {
    const auto [base, spi, s] = walk.at(step);
    __m256i r[8];
#pragma GCC unroll 8
    for (int o = 0; o < 8; ++o) r[o] = step_reg<P>(base + spi * P::spec.step_pair_bytes(), s, o);
    uint8_t* o = out + (step - k0 / 4) * 256;
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {
      if constexpr (MAP) r[v] = _mm256_shuffle_epi8(map, r[v]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32 * v), r[v]);
    }
  }
}

// Level 1 of policy P (dq_level1_fns): the codes step-major and row-major, the int8 route's u8
// levels (the codes, or a codebook's integer levels mapped), and the kernel set's fused int8
// decode for 1 and 2 columns (null: none)
template <class P>
dq_level1_fns<P> level1_fns(int8_fused_fn fused1, int8_fused_fn fused2) {
  if constexpr (!avx2::has_level1<P>() || !whole_codes_step_major<P>()) {
    return {};
  } else {
    using FT = format_traits<typename P::format>;
    dq_level1_fns<P> f{&codes_steps<P, false>, &avx2::codes_rows<P, &codes_steps<P, false>>, nullptr, {fused1, fused2}};
    if constexpr (levels_are_codes<P>() || (FT::integer_levels && FT::max_code < 16))
      f.levels_steps = &codes_steps<P, !levels_are_codes<P>()>;
    return f;
  }
}

}  // namespace lutkit::detail::whole_codes
#include "../intrinsics_end.hpp"
#endif
