// lutkit — the attention family's registration point: the ONE place the family reaches a target
// folder. It lists the kernel sets this build compiled (attention/microkernel.hpp) and picks one
// per call. A new target adds its include and its branch here.
#pragma once
#include "../core/error.hpp"
#include "portable_kernels.hpp"
#include "microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../targets/host/attention/attention_avx2.hpp"
#include "../targets/host/attention/attention_avx512.hpp"
#endif

namespace lutkit {

// Which kernels run: the best the CPU has (AVX-512, else AVX2, else the portable C++ ones), the
// portable ones, AVX-512 (an error if the CPU lacks AVX-512 F/BW/BF16 or F16C) or AVX2 (the
// decode step; an error if the CPU lacks AVX2 / FMA / F16C).
enum class attention_backend { best, portable, avx512, avx2 };

namespace detail {
inline const att_kernel_set& att_kernels_for(attention_backend b) {
  require(b == attention_backend::best || b == attention_backend::portable || b == attention_backend::avx512 ||
              b == attention_backend::avx2,
          "attention: unknown attention_backend ", int(b));
#if defined(LUTKIT_HAVE_AVX512_ATT)
  if (b == attention_backend::avx512) {
    require(avx512_att::cpu_supported(), "attention: this CPU lacks AVX-512 BF16 / F16C");
    return avx512_att::kernels();
  }
  if (b == attention_backend::best && avx512_att::cpu_supported()) return avx512_att::kernels();
#else
  require(b != attention_backend::avx512, "attention: AVX-512 kernels are not compiled for this target");
#endif
#if defined(LUTKIT_HAVE_AVX2_ATT)
  if (b == attention_backend::avx2) {
    require(avx2_att::cpu_supported(), "attention: this CPU lacks AVX2 / FMA / F16C");
    return avx2_att::kernels();
  }
  if (b == attention_backend::best && avx2_att::cpu_supported()) return avx2_att::kernels();
#else
  require(b != attention_backend::avx2, "attention: AVX2 kernels are not compiled for this target");
#endif
  return portable_att_kernels();
}
}  // namespace detail
}  // namespace lutkit
