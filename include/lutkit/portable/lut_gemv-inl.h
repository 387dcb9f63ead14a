// lutkit — portable (Highway) LUT-GEMV: the Ops of the shared kernel body for each Highway
// target, compiled once per target by hwy/foreach_target.h (see lut_gemv.hpp).
// Per-target include guard, toggled like Highway's own -inl.h files.
#if defined(LUTKIT_PORTABLE_LUT_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LUTKIT_PORTABLE_LUT_GEMV_INL_H_
#undef LUTKIT_PORTABLE_LUT_GEMV_INL_H_
#else
#define LUTKIT_PORTABLE_LUT_GEMV_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <hwy/highway.h>

#include "lutkit/core/policy.hpp"
#include "lutkit/core/tiling.hpp"
#include "lutkit/detail/gemv_args.hpp"
#include "lutkit/detail/scalar_ops.hpp"

HWY_BEFORE_NAMESPACE();
namespace lutkit {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
// One-lane vectors cannot express byte lookups: HWY_SCALAR runs the plain C++ Ops.
using Ops = detail::ScalarOps;
#else

struct HwyOps {
#if HWY_HAVE_SCALABLE
  static constexpr std::size_t kPartBytes = 16;
#else
  static constexpr std::size_t kPartBytes = HWY_MAX_BYTES >= 64 ? 64 : HWY_MAX_BYTES;
#endif
  static constexpr int kParts = int(64 / kPartBytes);
  using D = hn::CappedTag<uint8_t, kPartBytes>;
  using DW = hn::Repartition<int16_t, D>;
  using VP = hn::Vec<D>;
  using WP = hn::Vec<DW>;
  struct V {
    VP p[kParts];
  };
  struct W {
    WP p[kParts];
  };

  static HWY_INLINE V load(const uint8_t* ptr) {
    V v;
    for (int i = 0; i < kParts; ++i) v.p[i] = hn::LoadU(D(), ptr + i * kPartBytes);
    return v;
  }
  static HWY_INLINE V lo_nibbles(V v) {
    const auto m = hn::Set(D(), uint8_t(0x0F));
    for (int i = 0; i < kParts; ++i) v.p[i] = hn::And(v.p[i], m);
    return v;
  }
  static HWY_INLINE V hi_nibbles(V v) {
    const auto m = hn::Set(D(), uint8_t(0x0F));
    for (int i = 0; i < kParts; ++i) v.p[i] = hn::And(hn::ShiftRight<4>(v.p[i]), m);
    return v;
  }
  static HWY_INLINE V table1(const int8_t* t) {
    V v;
    const VP x = hn::LoadDup128(D(), reinterpret_cast<const uint8_t*>(t));
    for (int i = 0; i < kParts; ++i) v.p[i] = x;
    return v;
  }
  static HWY_INLINE V table2(const int8_t* a, const int8_t* b) {
    V v;
    const auto* pa = reinterpret_cast<const uint8_t*>(a);
    const auto* pb = reinterpret_cast<const uint8_t*>(b);
    if constexpr (kParts == 1) {
      const hn::Half<D> dh;
      v.p[0] = hn::Combine(D(), hn::LoadDup128(dh, pb), hn::LoadDup128(dh, pa));
    } else {
      for (int i = 0; i < kParts; ++i) v.p[i] = hn::LoadDup128(D(), i < kParts / 2 ? pa : pb);
    }
    return v;
  }
  static HWY_INLINE V lookup(const V& tb, const V& idx) {
    V v;
    for (int i = 0; i < kParts; ++i) v.p[i] = hn::TableLookupBytes(tb.p[i], idx.p[i]);
    return v;
  }
  static HWY_INLINE V negate_if(V v, const uint8_t* bits) {
    for (int i = 0; i < kParts; ++i) {
      const auto m = hn::LoadMaskBits(D(), bits + i * (kPartBytes / 8));
      v.p[i] = hn::IfThenElse(m, hn::Sub(hn::Zero(D()), v.p[i]), v.p[i]);
    }
    return v;
  }
  static HWY_INLINE WP madd_part(VP u, VP s) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    return WP{_mm512_maddubs_epi16(u.raw, s.raw)};
#elif HWY_TARGET == HWY_AVX2
    return WP{_mm256_maddubs_epi16(u.raw, s.raw)};
#elif HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
    return WP{_mm_maddubs_epi16(u.raw, s.raw)};
#else
    // generic: even/odd byte products (never saturates for lutkit's operand ranges)
    const DW dw;
    const hn::Repartition<uint16_t, D> du;
    const auto u16 = hn::BitCast(du, u);
    const auto ue = hn::BitCast(dw, hn::And(u16, hn::Set(du, uint16_t(0x00FF))));
    const auto uo = hn::BitCast(dw, hn::ShiftRight<8>(u16));
    const auto s16 = hn::BitCast(dw, s);
    const auto se = hn::ShiftRight<8>(hn::ShiftLeft<8>(s16));
    const auto so = hn::ShiftRight<8>(s16);
    return hn::Add(hn::Mul(ue, se), hn::Mul(uo, so));
#endif
  }
  static HWY_INLINE W madd(const V& u, const V& s) {
    W w;
    for (int i = 0; i < kParts; ++i) w.p[i] = madd_part(u.p[i], s.p[i]);
    return w;
  }
  static HWY_INLINE W zero16() {
    W w;
    for (int i = 0; i < kParts; ++i) w.p[i] = hn::Zero(DW());
    return w;
  }
  static HWY_INLINE W add16(W a, const W& b) {
    for (int i = 0; i < kParts; ++i) a.p[i] = hn::Add(a.p[i], b.p[i]);
    return a;
  }
  static HWY_INLINE void store16(int16_t* dst, const W& w) {
    for (int i = 0; i < kParts; ++i) hn::StoreU(w.p[i], DW(), dst + i * (kPartBytes / 2));
  }
  static HWY_INLINE void f16_to_f32(const uint16_t* src, float* dst, int n) {
    const hn::CappedTag<float, 16> df;
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const auto* s = reinterpret_cast<const hwy::float16_t*>(src);
    for (int i = 0; i < n; i += int(hn::Lanes(df))) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, s + i)), df, dst + i);
  }
};

using Ops = HwyOps;

#endif  // HWY_TARGET == HWY_SCALAR

#include "lutkit/detail/lut_gemv_body.inl"

// The per-target entry the dispatcher's table points at.
template <class P>
void LutGemvEntry(const detail::gemv_args& a) {
  lut_gemv_rows<Ops, P>(a);
}

}  // namespace HWY_NAMESPACE
}  // namespace lutkit
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
