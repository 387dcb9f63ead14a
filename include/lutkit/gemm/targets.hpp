// lutkit — the dequant-GEMM's registration point: the ONE place the family reaches a target
// folder. It lists the kernel sets this build compiled (gemm/microkernel.hpp), picks one per
// call, and gives the policy-dependent level-1 entries of a set. A new target adds its include
// and its set here.
#pragma once
#include <type_traits>

#include "../core/error.hpp"
#include "../core/target.hpp"
#include "dequant.hpp"
#include "portable_kernels.hpp"
#include "microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "../targets/host/gemm/kernel_set_avx2.hpp"
#include "../targets/host/gemm/kernel_set_avx512.hpp"
#endif
#if defined(__aarch64__) && defined(__clang__) && defined(LUTKIT_ENABLE_SME)
#include "../targets/sme/gemm_sme.hpp"
#endif

namespace lutkit {

// Which micro-kernels run: the best the CPU has (AVX-512 with AMX, else AVX-512, else AVX-512
// without BF16, else AVX2, else the portable ones), the portable C++ ones, AVX-512 (an error if
// the CPU lacks VNNI / BF16), AVX-512 VNNI without BF16 (its int8 and fp32 kernels, AVX2's bf16
// ones: an error if the CPU lacks VNNI / VBMI), AVX2 (an error if it lacks AVX2 / FMA / F16C) or
// AVX-512 with the bf16 prefill (and the int8 one of groups >= 128 k) on AMX tiles (an error if
// the CPU or the OS lacks AMX-TILE / INT8 / BF16).
enum class dq_backend { best, portable, avx512, avx2, avx512_vnni, avx512_amx };

namespace detail {

inline const dq_kernel_set& dq_kernels_for(dq_backend b) {
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (b == dq_backend::avx512_amx) {
    require(avx512::cpu_supported_amx(), "dequant-GEMM: this CPU (or its OS) lacks AMX (tiles, int8, bf16) with AVX-512 VNNI/BF16");
    return avx512::kernels_amx();
  }
  if (b == dq_backend::best && avx512::cpu_supported_amx()) return avx512::kernels_amx();
  if (b == dq_backend::avx512) {
    require(avx512::cpu_supported(), "dequant-GEMM: this CPU lacks AVX-512 VNNI/BF16");
    return avx512::kernels();
  }
  if (b == dq_backend::best && avx512::cpu_supported()) return avx512::kernels();
  if (b == dq_backend::avx512_vnni) {
    require(avx512::cpu_supported_vnni(), "dequant-GEMM: this CPU lacks AVX-512 VNNI/VBMI");
    return avx512::kernels_vnni();
  }
  if (b == dq_backend::best && avx512::cpu_supported_vnni()) return avx512::kernels_vnni();
#else
  require(b != dq_backend::avx512 && b != dq_backend::avx512_vnni && b != dq_backend::avx512_amx,
          "dequant-GEMM: AVX-512 kernels are not compiled for this target");
#endif
#if defined(LUTKIT_HAVE_AVX2_DQ)
  if (b == dq_backend::avx2) {
    require(avx2::cpu_supported(), "dequant-GEMM: this CPU lacks AVX2/FMA/F16C");
    return avx2::kernels();
  }
  if (b == dq_backend::best && avx2::cpu_supported()) return avx2::kernels();
#else
  require(b != dq_backend::avx2, "dequant-GEMM: AVX2 kernels are not compiled for this target");
#endif
  return portable_dq_kernels();
}

// The kernel set of policy P: a portable policy takes the host's (dq_kernels_for); a policy for
// another target takes that target's set, or an error if this build does not contain it — a
// policy never runs another target's code.
template <class P>
const dq_kernel_set& dq_kernels_for_policy(dq_backend b) {
  using T = typename P::target_type;
  if constexpr (std::is_same_v<T, lutkit::target::host>) {
    return dq_kernels_for(b);
  } else {
    require(b == dq_backend::best, "dequant-GEMM: policy ", P::name(), " targets ", T::desc.name,
            ": a host backend cannot be named for it");
#if defined(LUTKIT_HAVE_SME_DQ)
    if constexpr (std::is_same_v<T, lutkit::target::sme>) {
      require(sme::cpu_supported(), "dequant-GEMM: policy ", P::name(), " targets SME, which this CPU lacks");
      return sme::kernels();
    }
#endif
    throw error("dequant-GEMM: policy " + P::name() + " targets " + T::desc.name +
                ", whose kernels this build does not contain (a policy never runs another target's code)");
  }
}

// The level-1 unpackers of kernel set ks for policy P (null entries: the portable unpacker).
template <class P>
dq_level1_fns<P> dq_level1_for_host([[maybe_unused]] const dq_kernel_set& ks) {
#if defined(LUTKIT_HAVE_AVX512_DQ)
  if (&ks == &avx512::kernels() || &ks == &avx512::kernels_vnni() || &ks == &avx512::kernels_amx())
    return avx512::level1_fns<P>();
#endif
#if defined(LUTKIT_HAVE_AVX2_DQ)
  if (&ks == &avx2::kernels()) return avx2::level1_fns<P>();
#endif
  return {};
}
// (a policy for another target never reaches the host's unpackers: dq_kernels_for_policy refuses
// it by name, and they are not instantiated for its layout)
template <class P>
dq_level1_fns<P> dq_level1_for(const dq_kernel_set& ks) {
  if constexpr (std::is_same_v<typename P::target_type, lutkit::target::host>) return dq_level1_for_host<P>(ks);
  else return {};
}

}  // namespace detail
}  // namespace lutkit
