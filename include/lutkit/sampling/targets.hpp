// lutkit — the sampling family's registration point: the ONE place the family reaches a target
// folder. It lists the kernel sets this build compiled and picks one per call.
#pragma once
#include "../core/error.hpp"
#include "microkernel.hpp"
#include "portable_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../targets/host/sampling/sampling_avx2.hpp"
#include "../targets/host/sampling/sampling_avx512.hpp"
#endif

namespace lutkit {

// Which micro-kernels run: the best the CPU has (AVX-512, else AVX2, else the portable ones), the
// portable C++ ones, AVX-512 or AVX2 (an error if the CPU or the build lacks it).
enum class sampling_backend { best, portable, avx512, avx2 };

namespace detail {
inline const sampling_kernel_set& sampling_kernels_for(sampling_backend b) {
  require(b == sampling_backend::best || b == sampling_backend::portable || b == sampling_backend::avx512 ||
              b == sampling_backend::avx2,
          "sampling: unknown sampling_backend ", int(b));
#if defined(LUTKIT_HAVE_AVX512_SAMPLING)
  if (b == sampling_backend::avx512) {
    require(avx512_sampling::cpu_supported(), "sampling: this CPU lacks AVX-512 F/BW/DQ/VL");
    return avx512_sampling::kernels();
  }
  if (b == sampling_backend::best && avx512_sampling::cpu_supported()) return avx512_sampling::kernels();
#else
  require(b != sampling_backend::avx512, "sampling: AVX-512 kernels are not compiled for this target");
#endif
#if defined(LUTKIT_HAVE_AVX2_SAMPLING)
  if (b == sampling_backend::avx2) {
    require(avx2_sampling::cpu_supported(), "sampling: this CPU lacks AVX2 / FMA / F16C");
    return avx2_sampling::kernels();
  }
  if (b == sampling_backend::best && avx2_sampling::cpu_supported()) return avx2_sampling::kernels();
#else
  require(b != sampling_backend::avx2, "sampling: AVX2 kernels are not compiled for this target");
#endif
  return portable_sampling_kernels();
}
}  // namespace detail
}  // namespace lutkit
