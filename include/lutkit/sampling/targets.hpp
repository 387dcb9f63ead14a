// lutkit — the sampling family's registration point: the ONE place the family reaches a target
// folder. It lists the kernel sets this build compiled and picks one per call.
#pragma once
#include "../core/error.hpp"
#include "microkernel.hpp"
#include "portable_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../targets/cpu/sampling_avx512.hpp"
#endif

namespace lutkit {

// Which micro-kernels run: the best the CPU has, the portable C++ ones, or AVX-512 (an error if
// the CPU or the build lacks it).
enum class sampling_backend { best, portable, avx512 };

namespace detail {
inline const sampling_kernel_set& sampling_kernels_for(sampling_backend b) {
#if defined(LUTKIT_HAVE_AVX512_SAMPLING)
  if (b == sampling_backend::avx512) {
    require(avx512_sampling::cpu_supported(), "sampling: this CPU lacks AVX-512 F/BW/DQ/VL");
    return avx512_sampling::kernels();
  }
  if (b == sampling_backend::best && avx512_sampling::cpu_supported()) return avx512_sampling::kernels();
#else
  require(b != sampling_backend::avx512, "sampling: AVX-512 kernels are not compiled for this target");
#endif
  return portable_sampling_kernels();
}
}  // namespace detail
}  // namespace lutkit
