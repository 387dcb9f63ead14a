// lutkit — the LUT-GEMV's registration point: the ONE place the family reaches a target folder.
// A target provides gemv_entry functions (gemv/microkernel.hpp) per policy; this header picks
// the entry for a call: the best one the CPU runs, or the one the caller names.
// (The xsimd backend is opt-in and has its own public entry: targets/xsimd/lut_gemv_xsimd.hpp.)
#pragma once
#include <cstdint>
#include <type_traits>

#include "../core/error.hpp"
#include "../core/target.hpp"
#include "microkernel.hpp"
#include "../targets/host/gemv/lut_gemv_hwy.hpp"
#if defined(__aarch64__) && defined(__clang__) && defined(LUTKIT_ENABLE_SME)
#include "../targets/sme/lut_gemv_sme.hpp"
#endif

namespace lutkit::detail {

// A policy runs its own target's kernels or gets an error: never another target's code.
template <class P>
void require_gemv_target() {
  using T = typename P::target_type;
  if constexpr (std::is_same_v<T, lutkit::target::host>) return;
#if defined(LUTKIT_HAVE_SME_GEMV)
  if constexpr (std::is_same_v<T, lutkit::target::sme>) {
    require(sme_gemv::cpu_supported(), "lut_gemv: policy ", P::name(), " targets SME, which this CPU lacks");
    return;
  }
#endif
  throw error("lut_gemv: policy " + P::name() + " targets " + T::desc.name +
              ", whose LUT-GEMV kernels this build does not contain (a policy never runs another target's code)");
}

// target 0: the best compiled target the CPU supports; else a target of hwy_backend::available_targets()
// (a policy for another target takes that target's kernels, and names no host target)
template <class P>
gemv_entry gemv_entry_for(int64_t target) {
  require_gemv_target<P>();
  using T = typename P::target_type;
  if constexpr (std::is_same_v<T, lutkit::target::host>) {
    return target ? hwy_backend::entry_for<P>(target) : hwy_backend::best_entry<P>();
  } else {
    require(target == 0, "lut_gemv: policy ", P::name(), " targets ", T::desc.name,
            ": a host target cannot be named for it");
#if defined(LUTKIT_HAVE_SME_GEMV)
    if constexpr (std::is_same_v<T, lutkit::target::sme>) return &sme_gemv::gemv<P>;
#endif
    return nullptr;  // not reached: require_gemv_target refused the policy
  }
}

// the precompute of one activation row, on the policy's target
template <class P>
tables_entry best_tables_entry() {
  require_gemv_target<P>();
  using T = typename P::target_type;
  if constexpr (std::is_same_v<T, lutkit::target::host>) {
    return hwy_backend::best_tables_entry<P>();
  } else {
#if defined(LUTKIT_HAVE_SME_GEMV)
    if constexpr (std::is_same_v<T, lutkit::target::sme>) return &sme_gemv::build_tables<P>;
#endif
    return nullptr;  // not reached: require_gemv_target refused the policy
  }
}

}  // namespace lutkit::detail
