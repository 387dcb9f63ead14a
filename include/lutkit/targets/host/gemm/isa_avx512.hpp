// lutkit — the instruction set of the AVX-512 dequant-GEMM kernels (targets/host/gemm/*_avx512.hpp):
// the function target attribute every kernel of the set is compiled with, and the one of the
// kernels that also use GFNI. The set is chosen at run time on CPUs that have these features
// (host_features::avx512_vnni_bf16_vbmi(), GFNI by host_features::gfni()), not by the compiler's
// flags (Highway 1.0.3 has no target with VNNI + BF16 together).
#pragma once
#include "../features.hpp"

#if defined(LUTKIT_HOST_X86)
#define LUTKIT_AVX512_DQ \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx512vbmi,fma,f16c")))
#define LUTKIT_AVX512_GFNI \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx512vbmi,fma,f16c,gfni")))
#endif
