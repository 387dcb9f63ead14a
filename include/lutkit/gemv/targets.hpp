// lutkit — the LUT-GEMV's registration point: the ONE place the family reaches a target folder.
// A target provides gemv_entry functions (gemv/microkernel.hpp) per policy; this header picks
// the entry for a call: the best one the CPU runs, or the one the caller names.
// (The xsimd backend is opt-in and has its own public entry: targets/xsimd/lut_gemv.hpp.)
#pragma once
#include <cstdint>
#include <type_traits>

#include "../core/error.hpp"
#include "../core/target.hpp"
#include "microkernel.hpp"
#include "../targets/cpu/lut_gemv_hwy.hpp"

namespace lutkit::detail {

// A policy runs its own target's kernels or gets an error: never another target's code.
template <class P>
void require_gemv_target() {
  if constexpr (!std::is_same_v<typename P::target_type, lutkit::target::portable>)
    throw error("lut_gemv: policy " + P::name() + " targets " + P::target_type::desc.name +
                ", whose LUT-GEMV kernels this build does not contain (a policy never runs another target's code)");
}

// target 0: the best compiled target the CPU supports; else a target of portable::available_targets()
template <class P>
gemv_entry gemv_entry_for(int64_t target) {
  require_gemv_target<P>();
  return target ? portable::entry_for<P>(target) : portable::best_entry<P>();
}

// the precompute of one activation row, on the best target
template <class P>
tables_entry best_tables_entry() {
  require_gemv_target<P>();
  return portable::best_tables_entry<P>();
}

}  // namespace lutkit::detail
