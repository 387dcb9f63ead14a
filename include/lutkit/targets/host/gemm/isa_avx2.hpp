// lutkit — the instruction set of the AVX2 dequant-GEMM kernels (targets/host/gemm/*_avx2.hpp): the
// function target attribute every kernel of the set is compiled with. The set is chosen at run time
// on CPUs that have these features (host_features::avx2()), not by the compiler's flags.
#pragma once
#include "../features.hpp"

#if defined(LUTKIT_HOST_X86)
#define LUTKIT_AVX2_DQ __attribute__((target("avx2,fma,f16c")))
#endif
