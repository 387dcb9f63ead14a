// lutkit — the LUT-GEMV's registration point: the ONE place the family reaches a target folder.
// A target provides gemv_entry functions (gemv/microkernel.hpp) per policy; this header picks
// the entry for a call: the best one the CPU runs, or the one the caller names.
// (The xsimd backend is opt-in and has its own public entry: targets/xsimd/lut_gemv.hpp.)
#pragma once
#include <cstdint>

#include "microkernel.hpp"
#include "../targets/cpu/lut_gemv_hwy.hpp"

namespace lutkit::detail {

// target 0: the best compiled target the CPU supports; else a target of portable::available_targets()
template <class P>
gemv_entry gemv_entry_for(int64_t target) {
  return target ? portable::entry_for<P>(target) : portable::best_entry<P>();
}

// the precompute of one activation row, on the best target
template <class P>
tables_entry best_tables_entry() {
  return portable::best_tables_entry<P>();
}

}  // namespace lutkit::detail
