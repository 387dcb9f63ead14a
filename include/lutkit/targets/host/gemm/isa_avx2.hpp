// lutkit — the instruction set of the AVX2 dequant-GEMM kernels (targets/host/gemm/*_avx2.hpp): the
// function target attribute every kernel of the set is compiled with. The set is chosen at run time
// on CPUs that have these features (host_features::avx2()), not by the compiler's flags.
#pragma once
#include "../features.hpp"

#if defined(LUTKIT_HOST_X86)
#define LUTKIT_AVX2_DQ __attribute__((target("avx2,fma,f16c")))
#endif

#if defined(LUTKIT_HOST_X86)
#include "../../../core/compiler.hpp"
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx2 {
// acc += p in acc's own register (int32 / int16 lanes). For a loop-carried accumulator GCC 12 adds
// into the product's register and copies the sum back at every step: 6 vmovdqa beside the 17
// other instructions of mk_int8's step (3 columns), which made the loop dispatch-bound on Zen 3.
LUTKIT_AVX2_DQ LUTKIT_ALWAYS_INLINE inline void add_epi32_into(__m256i& acc, __m256i p) {
  __asm__("vpaddd %1, %0, %0" : "+x"(acc) : "x"(p));
}
LUTKIT_AVX2_DQ LUTKIT_ALWAYS_INLINE inline void add_epi16_into(__m256i& acc, __m256i p) {
  __asm__("vpaddw %1, %0, %0" : "+x"(acc) : "x"(p));
}
}  // namespace lutkit::detail::avx2
#include "../intrinsics_end.hpp"
#endif
