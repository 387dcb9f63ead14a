// lutkit — the dequant-GEMM's registration point: the ONE place the family reaches a target
// folder. It lists the kernel sets this build compiled (gemm/microkernel.hpp), picks one per
// call, and gives the policy-dependent level-1 entries of a set. A new target adds its include
// and its set here.
#pragma once
#include "../core/error.hpp"
#include "dequant.hpp"
#include "generic_kernels.hpp"
#include "microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../targets/cpu/gemm_avx512.hpp"
#endif

namespace lutkit {

// Which micro-kernels run: the best the CPU has, the portable C++ ones, or AVX-512 (an error
// if the CPU lacks VNNI / BF16).
enum class dq_backend { best, generic, avx512 };

namespace detail {

inline const dq_kernel_set& dq_kernels_for(dq_backend b) {
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (b == dq_backend::avx512) {
    require(avx512::cpu_supported(), "dequant-GEMM: this CPU lacks AVX-512 VNNI/BF16");
    return avx512::kernels();
  }
  if (b == dq_backend::best && avx512::cpu_supported()) return avx512::kernels();
#else
  require(b != dq_backend::avx512, "dequant-GEMM: AVX-512 kernels are not compiled for this target");
#endif
  return generic_kernels();
}

// The level-1 unpackers of kernel set ks for policy P (null entries: the portable unpacker).
template <class P>
dq_level1_fns<P> dq_level1_for([[maybe_unused]] const dq_kernel_set& ks) {
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (&ks == &avx512::kernels()) return avx512::level1_fns<P>();
#endif
  return {};
}

}  // namespace detail
}  // namespace lutkit
