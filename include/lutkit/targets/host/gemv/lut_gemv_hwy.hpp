// lutkit — the host target's LUT-GEMV glue: Highway dynamic dispatch of the policy-templated
// kernel (targets/host/gemv/lut_gemv_hwy-inl.h, compiled once per Highway target) plus lutkit's own
// AVX-512 VBMI instance (targets/host/gemv/lut_gemv_vbmi.hpp), as gemv_entry pointers.
// Highway 1.0.3 has no HWY_EXPORT_T for templates, so each policy gets a table of per-target
// instantiations laid out like Highway's own dispatch table and indexed by its chosen target.
#pragma once

// Highway 1.0.3 tests whether AVX3_DL is in the baseline before it has computed the baseline, so
// a build whose baseline is AVX3_DL (-march=native on Zen 4/5 or Ice Lake server and later) stops
// in detect_targets.h unless AVX3_DL is opted in. Opt in exactly then (no extra target otherwise).
// An engine that includes Highway before lutkit defines HWY_WANT_AVX3_DL itself.
#if !defined(HWY_WANT_AVX3_DL) && defined(__AVX512F__) && defined(__AVX512VBMI__) && defined(__AVX512VBMI2__) && \
    defined(__AVX512VPOPCNTDQ__) && defined(__AVX512BITALG__) && defined(__VAES__) && defined(__VPCLMULQDQ__) && \
    defined(__AVXVNNI__)
#define HWY_WANT_AVX3_DL 1
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lutkit/targets/host/gemv/lut_gemv_hwy-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "lutkit/targets/host/gemv/lut_gemv_hwy-inl.h"

#if HWY_ONCE
#ifndef LUTKIT_TARGETS_CPU_LUT_GEMV_HWY_HPP_
#define LUTKIT_TARGETS_CPU_LUT_GEMV_HWY_HPP_
#include <cstdint>
#include <string>
#include <vector>

#include "lutkit/core/error.hpp"
#include "lutkit/core/prefetch.hpp"
#include "lutkit/gemv/microkernel.hpp"
#include "lutkit/targets/host/gemv/lut_gemv_vbmi.hpp"

namespace lutkit {
namespace hwy_backend {

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

// lutkit's own AVX-512 VBMI kernel (lut_gemv_vbmi.hpp) in its two forms, as target values next to
// Highway's bits: paired chunks looked up by vpshufb, or by vpermb (the form Zen 4 runs).
inline constexpr int64_t target_avx512_vbmi = INT64_MIN;
inline constexpr int64_t target_avx512_vbmi_permb = INT64_MIN + 1;
inline bool vbmi_available() {
#if defined(LUTKIT_HAVE_VBMI_GEMV)
  return vbmi_backend::cpu_supported();
#else
  return false;
#endif
}
inline const char* target_name(int64_t target) {
  if (target == target_avx512_vbmi) return "AVX512_VBMI (lutkit)";
  if (target == target_avx512_vbmi_permb) return "AVX512_VBMI vpermb (lutkit)";
  return hwy::TargetName(target);
}
// the VBMI form best_entry runs on this host
inline int64_t best_vbmi_target() { return detail::host_features::zen4() ? target_avx512_vbmi_permb : target_avx512_vbmi; }

// The targets this translation unit compiled that the CPU supports, best first.
inline std::vector<int64_t> available_targets() {
  std::vector<int64_t> t = hwy::SupportedAndGeneratedTargets();
  if (vbmi_available()) {
    t.insert(t.begin(), best_vbmi_target() == target_avx512_vbmi ? target_avx512_vbmi_permb : target_avx512_vbmi);
    t.insert(t.begin(), best_vbmi_target());
  }
  return t;
}

template <class P>
detail::gemv_entry entry_for(int64_t target) {
  if (target == target_avx512_vbmi || target == target_avx512_vbmi_permb) {
    detail::require(vbmi_available(), "portable LUT-GEMV: this CPU lacks AVX-512 VBMI");
#if defined(LUTKIT_HAVE_VBMI_GEMV)
    return target == target_avx512_vbmi ? &vbmi_backend::entry<P> : &vbmi_backend::entry_permb<P>;
#endif
  }
  const detail::gemv_entry e = dispatch_table<P>()[target_index(target)];
  detail::require(e != nullptr, std::string("portable LUT-GEMV: target ") + hwy::TargetName(target) +
                                    " was not compiled");
  return e;
}

template <class P>
detail::tables_entry best_tables_entry() {
  static const detail::tables_entry table[HWY_MAX_DYNAMIC_TARGETS + 2] = {
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
  if (vbmi_available())
    return best_vbmi_target() == target_avx512_vbmi ? &vbmi_backend::entry<P> : &vbmi_backend::entry_permb<P>;
#endif
  static const std::size_t index = [] {
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    return hwy::GetChosenTarget().GetIndex();
  }();
  return dispatch_table<P>()[index];
}

}  // namespace hwy_backend

}  // namespace lutkit
#endif  // LUTKIT_TARGETS_CPU_LUT_GEMV_HWY_HPP_
#endif  // HWY_ONCE
