// lutkit — portable LUT-GEMV: Highway dynamic dispatch of the policy-templated kernel.
// Highway 1.0.3 has no HWY_EXPORT_T for templates, so each policy gets a table of per-target
// instantiations laid out like Highway's own dispatch table and indexed by its chosen target.
#pragma once

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lutkit/portable/lut_gemv-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "lutkit/portable/lut_gemv-inl.h"

#if HWY_ONCE
#ifndef LUTKIT_PORTABLE_LUT_GEMV_HPP_
#define LUTKIT_PORTABLE_LUT_GEMV_HPP_
#include <cstdint>
#include <string>
#include <vector>

#include "lutkit/detail/gemv_driver.hpp"
#include "lutkit/portable/lut_gemv_vbmi.hpp"

namespace lutkit {
namespace portable {

template <class P>
const detail::gemv_entry* dispatch_table() {
  static const detail::gemv_entry table[HWY_MAX_DYNAMIC_TARGETS + 2] = {
      HWY_CHOOSE_FALLBACK(LutGemvEntry<P>), HWY_CHOOSE_TARGET_LIST(LutGemvEntry<P>),
      HWY_CHOOSE_FALLBACK(LutGemvEntry<P>)};
  return table;
}

// Index in the dispatch table of a Highway target bit (HWY_AVX3, HWY_AVX2, HWY_EMU128, ...).
inline std::size_t target_index(int64_t target) {
  if (target == HWY_EMU128 || target == HWY_SCALAR) return HWY_MAX_DYNAMIC_TARGETS + 1;
  return hwy::Num0BitsBelowLS1Bit_Nonzero64(uint64_t(HWY_CHOSEN_TARGET_SHIFT(target)));
}

// lutkit's own AVX-512 VBMI kernel (lut_gemv_vbmi.hpp), as a target value next to Highway's bits.
inline constexpr int64_t target_avx512_vbmi = INT64_MIN;
inline bool vbmi_available() {
#if defined(LUTKIT_HAVE_VBMI_GEMV)
  return vbmi_backend::cpu_supported();
#else
  return false;
#endif
}
inline const char* target_name(int64_t target) {
  return target == target_avx512_vbmi ? "AVX512_VBMI (lutkit)" : hwy::TargetName(target);
}

// The targets this translation unit compiled that the CPU supports, best first.
inline std::vector<int64_t> available_targets() {
  std::vector<int64_t> t = hwy::SupportedAndGeneratedTargets();
  if (vbmi_available()) t.insert(t.begin(), target_avx512_vbmi);
  return t;
}

template <class P>
detail::gemv_entry entry_for(int64_t target) {
  if (target == target_avx512_vbmi) {
    detail::require(vbmi_available(), "portable LUT-GEMV: this CPU lacks AVX-512 VBMI");
#if defined(LUTKIT_HAVE_VBMI_GEMV)
    return &vbmi_backend::entry<P>;
#endif
  }
  const detail::gemv_entry e = dispatch_table<P>()[target_index(target)];
  detail::require(e != nullptr, std::string("portable LUT-GEMV: target ") + hwy::TargetName(target) +
                                    " was not compiled");
  return e;
}

using tables_entry = void (*)(const float*, std::size_t, int8_t*, float*, float*, std::size_t);
template <class P>
tables_entry best_tables_entry() {
  static const tables_entry table[HWY_MAX_DYNAMIC_TARGETS + 2] = {
      HWY_CHOOSE_FALLBACK(BuildTablesEntry<P>), HWY_CHOOSE_TARGET_LIST(BuildTablesEntry<P>),
      HWY_CHOOSE_FALLBACK(BuildTablesEntry<P>)};
  static const std::size_t index = [] {
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    return hwy::GetChosenTarget().GetIndex();
  }();
  return table[index];
}

template <class P>
detail::gemv_entry best_entry() {
#if defined(LUTKIT_HAVE_VBMI_GEMV)
  if (vbmi_available()) return &vbmi_backend::entry<P>;
#endif
  static const std::size_t index = [] {
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    return hwy::GetChosenTarget().GetIndex();
  }();
  return dispatch_table<P>()[index];
}

}  // namespace portable

// Precompute: the tables of N activation rows (row-major N x K, row stride ldx >= K), built
// once per input and shared by every GEMV reading that input (Q/K/V, gate/up).
template <class P>
lut_tables<P> build_tables(const float* x, std::size_t N, std::size_t K, std::size_t ldx = 0) {
  detail::require_lut_gemv_capable<P>();
  if (ldx == 0) ldx = K;
  detail::check_table_args(x, N, K, ldx);
  lut_tables<P> t(N, K);
  const auto fn = portable::best_tables_entry<P>();
  for (std::size_t n = 0; n < N; ++n) fn(x + n * ldx, K, t.entries(n), t.tscale(n), t.xsum(n), t.layout().blocks());
  return t;
}

// y[n * ldy + m] = sum_k W[m][k] x[n][k] for every row m, with tables built from x.
// target = 0 picks the best compiled target the CPU supports.
template <class P>
void lut_gemv(const packed_weights<P>& w, const lut_tables<P>& t, float* y, std::size_t ldy = 0,
              thread_pool* pool = nullptr, int64_t target = 0) {
  detail::require_lut_gemv_capable<P>();
  const auto a = detail::make_gemv_args(w, t, y, ldy, 0, w.M());
  detail::run_gemv(target ? portable::entry_for<P>(target) : portable::best_entry<P>(), a, pool);
}

// Rows [r0, r1) only: an engine splits a GEMV over its own threads with this. Rows outside the
// range are not written.
template <class P>
void lut_gemv_rows(const packed_weights<P>& w, const lut_tables<P>& t, float* y, std::size_t r0,
                   std::size_t r1, std::size_t ldy = 0, int64_t target = 0) {
  detail::require_lut_gemv_capable<P>();
  const auto a = detail::make_gemv_args(w, t, y, ldy, r0, r1);
  detail::run_gemv(target ? portable::entry_for<P>(target) : portable::best_entry<P>(), a, nullptr);
}

}  // namespace lutkit
#endif  // LUTKIT_PORTABLE_LUT_GEMV_HPP_
#endif  // HWY_ONCE
