// lutkit — what both SME kernel families share (included by gemm_sme.hpp and lut_gemv_sme.hpp
// when LUTKIT_ENABLE_SME is set on aarch64 with clang): the run-time check for SME and the
// attribute of the functions that enter streaming mode.
#pragma once
#if defined(__aarch64__) && defined(__clang__) && defined(LUTKIT_ENABLE_SME)
#include <sys/auxv.h>

#ifndef LUTKIT_SME_FN
#define LUTKIT_SME_FN __attribute__((target("sme")))
#endif

namespace lutkit::detail {
// the kernel's HWCAP2 bit (Linux): the CPU and the kernel support SME
inline bool sme_cpu_supported() {
#ifndef HWCAP2_SME
#define HWCAP2_SME (1UL << 23)
#endif
  return (getauxval(AT_HWCAP2) & HWCAP2_SME) != 0;
}
}  // namespace lutkit::detail
#endif
