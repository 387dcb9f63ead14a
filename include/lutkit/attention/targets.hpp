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
#include "../targets/host/attention/attention_amx.hpp"
#endif

namespace lutkit {

// Which kernels run: the best the CPU has (AMX, else AVX-512, else AVX2, else the portable C++
// ones), the portable ones, AVX-512 (an error if the CPU lacks AVX-512 F/BW/BF16 or F16C), AVX2
// (the decode step; an error if the CPU lacks AVX2 / FMA / F16C) or AMX (the prefill tile's
// products on AMX tiles, the rest AVX-512's; an error if the CPU or the OS lacks AMX).
enum class attention_backend { best, portable, avx512, avx2, amx };

namespace detail {
inline const att_kernel_set& att_kernels_for(attention_backend b) {
  require(b == attention_backend::best || b == attention_backend::portable || b == attention_backend::avx512 ||
              b == attention_backend::avx2 || b == attention_backend::amx,
          "attention: unknown attention_backend ", int(b));
#if defined(LUTKIT_HAVE_AMX_ATT)
  if (b == attention_backend::amx) {
    require(amx_att::cpu_supported(), "attention: this CPU (or its OS) lacks AMX tiles with bf16");
    return amx_att::kernels();
  }
  if (b == attention_backend::best && amx_att::cpu_supported()) return amx_att::kernels();
#else
  require(b != attention_backend::amx, "attention: AMX kernels are not compiled for this target");
#endif
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
