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
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <hwy/highway.h>

#include "lutkit/core/policy.hpp"
#include "lutkit/core/tiling.hpp"
#include "lutkit/gemv/microkernel.hpp"
#include "lutkit/gemv/portable_kernels.hpp"
#include "lutkit/targets/host/features.hpp"

HWY_BEFORE_NAMESPACE();
namespace lutkit {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
// One-lane vectors cannot express byte lookups: HWY_SCALAR runs the plain C++ Ops.
using Ops = detail::PortableOps;
#else

struct HwyOps {
#if HWY_HAVE_SCALABLE && defined(__ARM_FEATURE_SVE_BITS) && __ARM_FEATURE_SVE_BITS == 256
  // SVE built for 256-bit vectors (-msve-vector-bits=256, Highway's SVE_256 target): a part is
  // one whole register, held in the tile's arrays as an ACLE fixed-length type (sizeless SVE
  // types cannot be array elements) and converted back at each operation (rd below)
  static constexpr std::size_t kPartBytes = 32;
  typedef svuint8_t SP __attribute__((arm_sve_vector_bits(256)));
  typedef svint16_t SW __attribute__((arm_sve_vector_bits(256)));
  typedef svfloat32_t SF __attribute__((arm_sve_vector_bits(256)));
#elif HWY_HAVE_SCALABLE
  static_assert(HWY_HAVE_SCALABLE == 0, "the LUT-GEMV Ops need fixed-length vectors: build SVE with -msve-vector-bits=256");
#else
  static constexpr std::size_t kPartBytes = HWY_MAX_BYTES >= 64 ? 64 : HWY_MAX_BYTES;
#endif
  static constexpr int kParts = int(64 / kPartBytes);
  static std::size_t prefetch_bytes(int spec) { return detail::host_features::gemv_prefetch_bytes(spec); }
  using D = hn::CappedTag<uint8_t, kPartBytes>;
  using DW = hn::Repartition<int16_t, D>;
  using VP = hn::Vec<D>;
  using WP = hn::Vec<DW>;
  using DF = hn::CappedTag<float, kPartBytes / 4>;
  using FP = hn::Vec<DF>;
#if !HWY_HAVE_SCALABLE
  using SP = VP;
  using SW = WP;
  using SF = FP;
#endif
  // a stored part as Highway's vector type (a copy, or the fixed-length -> sizeless conversion)
  static HWY_INLINE VP rd(const SP& x) { return VP(x); }
  static HWY_INLINE WP rd(const SW& x) { return WP(x); }
  static HWY_INLINE FP rd(const SF& x) { return FP(x); }
  struct V {
    SP p[kParts];
  };
  struct W {
    SW p[kParts];
  };
  struct F {
    SF p[kParts];
  };
  static HWY_INLINE F setf(float x) {
    F f;
    for (int i = 0; i < kParts; ++i) f.p[i] = hn::Set(DF(), x);
    return f;
  }
  static HWY_INLINE F loadf(const float* ptr) {
    F f;
    for (int i = 0; i < kParts; ++i) f.p[i] = hn::LoadU(DF(), ptr + i * (kPartBytes / 4));
    return f;
  }
  static HWY_INLINE void storef(float* ptr, const F& f) {
    for (int i = 0; i < kParts; ++i) hn::StoreU(rd(f.p[i]), DF(), ptr + i * (kPartBytes / 4));
  }
  static HWY_INLINE F addf(F a, const F& b) {
    for (int i = 0; i < kParts; ++i) a.p[i] = hn::Add(rd(a.p[i]), rd(b.p[i]));
    return a;
  }
  static HWY_INLINE F mulf(F a, const F& b) {
    for (int i = 0; i < kParts; ++i) a.p[i] = hn::Mul(rd(a.p[i]), rd(b.p[i]));
    return a;
  }
  static HWY_INLINE F fmaf(const F& a, const F& b, F c) {
    for (int i = 0; i < kParts; ++i) c.p[i] = hn::MulAdd(rd(a.p[i]), rd(b.p[i]), rd(c.p[i]));
    return c;
  }
  // int16 lanes 0..15 -> lo, 16..31 -> hi; each W part widens into two float parts
  static HWY_INLINE void widen(const W& w, F& lo, F& hi) {
    const hn::Half<DW> dwh;
    const hn::Rebind<int32_t, DF> di32;
    for (int f = 0; f < 2 * kParts; ++f) {
      const auto half = (f % 2 == 0) ? hn::LowerHalf(dwh, rd(w.p[f / 2])) : hn::UpperHalf(dwh, rd(w.p[f / 2]));
      const FP v = hn::ConvertTo(DF(), hn::PromoteTo(di32, half));
      if (f < kParts) lo.p[f] = v;
      else hi.p[f - kParts] = v;
    }
  }

  static HWY_INLINE V load(const uint8_t* ptr) {
    V v;
    for (int i = 0; i < kParts; ++i) v.p[i] = hn::LoadU(D(), ptr + i * kPartBytes);
    return v;
  }
  static HWY_INLINE V lo_nibbles(V v) {
    const auto m = hn::Set(D(), uint8_t(0x0F));
    for (int i = 0; i < kParts; ++i) v.p[i] = hn::And(rd(v.p[i]), m);
    return v;
  }
  static HWY_INLINE V hi_nibbles(V v) {
    const auto m = hn::Set(D(), uint8_t(0x0F));
    for (int i = 0; i < kParts; ++i) v.p[i] = hn::And(hn::ShiftRight<4>(rd(v.p[i])), m);
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
    for (int i = 0; i < kParts; ++i) v.p[i] = hn::TableLookupBytes(rd(tb.p[i]), rd(idx.p[i]));
    return v;
  }
#if HWY_TARGET == HWY_AVX2
  // Lone chunks side by side (the body's optional steps_side_by_side / widen_steps): byte b of
  // the first 32 bytes (step j) and byte b of the last 32 (step j + 1) share one 16-bit lane, so
  // one madd sums a row's two steps. vpunpck{l,h}bw order: part 0 holds bytes 0..7 | 16..23,
  // part 1 bytes 8..15 | 24..31 (per 128-bit lane).
  static HWY_INLINE V steps_side_by_side(const V& k) {
    V v;
    v.p[0] = VP{_mm256_unpacklo_epi8(k.p[0].raw, k.p[1].raw)};
    v.p[1] = VP{_mm256_unpackhi_epi8(k.p[0].raw, k.p[1].raw)};
    return v;
  }
  // int16 lanes of a madd over steps_side_by_side, as floats of even bytes b = 0, 2, .., 30
  // and of odd bytes b = 1, 3, .., 31, each in order of b
  static HWY_INLINE void widen_steps(const W& w, F& even, F& odd) {
    const __m256i a = w.p[0].raw, b = w.p[1].raw;
    const __m256i ea = _mm256_srai_epi32(_mm256_slli_epi32(a, 16), 16);
    const __m256i eb = _mm256_srai_epi32(_mm256_slli_epi32(b, 16), 16);
    const __m256i oa = _mm256_srai_epi32(a, 16), ob = _mm256_srai_epi32(b, 16);
    even.p[0] = FP{_mm256_cvtepi32_ps(_mm256_permute2x128_si256(ea, eb, 0x20))};
    even.p[1] = FP{_mm256_cvtepi32_ps(_mm256_permute2x128_si256(ea, eb, 0x31))};
    odd.p[0] = FP{_mm256_cvtepi32_ps(_mm256_permute2x128_si256(oa, ob, 0x20))};
    odd.p[1] = FP{_mm256_cvtepi32_ps(_mm256_permute2x128_si256(oa, ob, 0x31))};
  }
#endif
#if HWY_TARGET == HWY_AVX2
  // byte i's mask bit t = bits[i / 8] & (1 << i % 8); t + 0x7F is negative exactly when it is
  // set, so one vpsignb negates (4 ops a part; the mask, then subtract and blend, take 6)
  static HWY_INLINE V negate_if(V v, const uint8_t* bits) {
    const __m256i rep = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                         3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    const __m256i bias = _mm256_set1_epi8(0x7F);
    for (int i = 0; i < kParts; ++i) {
      uint32_t m;
      std::memcpy(&m, bits + 4 * i, 4);
      const __m256i t = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(int(m)), rep), bit);
      v.p[i] = VP{_mm256_sign_epi8(v.p[i].raw, _mm256_add_epi8(t, bias))};
    }
    return v;
  }
#else
  static HWY_INLINE V negate_if(V v, const uint8_t* bits) {
    for (int i = 0; i < kParts; ++i) {
      const auto m = hn::LoadMaskBits(D(), bits + i * (kPartBytes / 8));
      v.p[i] = hn::IfThenElse(m, hn::Sub(hn::Zero(D()), rd(v.p[i])), rd(v.p[i]));
    }
    return v;
  }
#endif
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
    for (int i = 0; i < kParts; ++i) w.p[i] = madd_part(rd(u.p[i]), rd(s.p[i]));
    return w;
  }
  static HWY_INLINE W zero16() {
    W w;
    for (int i = 0; i < kParts; ++i) w.p[i] = hn::Zero(DW());
    return w;
  }
  static HWY_INLINE W add16(W a, const W& b) {
    for (int i = 0; i < kParts; ++i) a.p[i] = hn::Add(rd(a.p[i]), rd(b.p[i]));
    return a;
  }
  static HWY_INLINE void store16(int16_t* dst, const W& w) {
    for (int i = 0; i < kParts; ++i) hn::StoreU(rd(w.p[i]), DW(), dst + i * (kPartBytes / 2));
  }
  static HWY_INLINE void f16_to_f32(const uint16_t* src, float* dst, int n) {
    for (int i = 0; i < n; i += 16) storef(dst + i, loadh(src + i));
  }
  // 16 fp16 values as floats (a group's scales or zeros, read where the epilogue uses them)
  static HWY_INLINE F loadh(const uint16_t* p) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto* s = reinterpret_cast<const hwy::float16_t*>(p);
    F f;
    for (int i = 0; i < kParts; ++i) f.p[i] = hn::PromoteTo(DF(), hn::LoadU(dh, s + i * (kPartBytes / 4)));
    return f;
  }
  // 16 int8 codes as floats (the super-group formats' sub-block codes, read where the epilogue
  // uses them)
  static HWY_INLINE F loadi8f(const int8_t* p) {
    const hn::Rebind<int32_t, DF> di32;
    const hn::Rebind<int8_t, DF> di8;
    F f;
    for (int i = 0; i < kParts; ++i)
      f.p[i] = hn::ConvertTo(DF(), hn::PromoteTo(di32, hn::LoadU(di8, p + i * (kPartBytes / 4))));
    return f;
  }
};

using Ops = HwyOps;

#endif  // HWY_TARGET == HWY_SCALAR

#include "lutkit/gemv/body.inl"

// ---- precompute: the tables of one activation row, vectorized over the 16 entries of a step.
// Entry j of a step = sum_i x_i * coef_i[j]: coef_i[j] = bit i of j (minus 1/2 with mirror) for
// bit planes, digit i of j minus 1 for ternary (entries 14, 15 zero). Rounding is half to even
// like detail::build_tables_scalar, but the float sums are formed in another order, so an
// entry may differ from the scalar builder's by one table step (tests check exactly that).
template <class P>
void BuildTablesRow(const float* x, std::size_t K, int8_t* E, float* tscale, float* xsum, std::size_t blocks) {
  constexpr tiling_spec S = P::spec;
  const hn::CappedTag<float, 16> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const std::size_t L = hn::Lanes(df);
  constexpr int KPS = S.k_per_step;
  constexpr float qmax = float(S.table_qmax());
  alignas(64) float coef[4][16];
  for (int j = 0; j < 16; ++j)
    for (int i = 0; i < 4; ++i) {
      if constexpr (S.ternary) {
        const int d = i == 0 ? j / 9 : (i == 1 ? (j / 3) % 3 : j % 3);
        coef[i][j] = (j < 14 && i < 3) ? float(d - 1) : 0.f;
      } else {
        coef[i][j] = float((j >> i) & 1) - (S.mirror ? 0.5f : 0.f);
      }
    }
  alignas(64) float xb[S.block_k];
  alignas(64) float T[S.steps_per_block * 16];
  static_assert(S.block_k % 16 == 0, "a block is whole vectors of up to 16 floats");
  for (std::size_t blk = 0; blk < blocks; ++blk) {
    // the block's activations: in place, or copied with zeros past K
    const float* xs = x + blk * S.block_k;
    if ((blk + 1) * S.block_k > K) {
      for (int i = 0; i < S.block_k; ++i) {
        const std::size_t k = blk * S.block_k + std::size_t(i);
        xb[i] = k < K ? x[k] : 0.f;
      }
      xs = xb;
    }
    // finite, and the sum in double, the scalar builder's: in any order when every partial sum is
    // exact in double (largest |x| below 2^23 x the smallest nonzero one: block_k <= 128 sums of
    // multiples of the smallest ulp need at most 23 + 7 + 23 bits), else in the scalar order
    bool finite = true;
    auto amx = hn::Zero(df), amn = hn::Set(df, HUGE_VALF);
    for (std::size_t i = 0; i < std::size_t(S.block_k); i += L) {
      const auto a = hn::Abs(hn::LoadU(df, xs + i));
      finite = finite && hn::AllTrue(df, hn::Le(a, hn::Set(df, FLT_MAX)));
      amx = hn::Max(amx, a);
      amn = hn::Min(amn, hn::IfThenElse(hn::Eq(a, hn::Zero(df)), hn::Set(df, HUGE_VALF), a));
    }
    double sum = 0;
    if (finite) {
      const float mx = hn::GetLane(hn::MaxOfLanes(df, amx)), mn = hn::GetLane(hn::MinOfLanes(df, amn));
      static_assert(S.block_k <= 128);
#if HWY_HAVE_FLOAT64
      if (double(mx) < double(mn) * 0x1p23) {
        const hn::CappedTag<double, 8> dd;
        const hn::Rebind<float, decltype(dd)> dh;
        auto vs = hn::Zero(dd);
        for (std::size_t i = 0; i < std::size_t(S.block_k); i += hn::Lanes(dd))
          vs = hn::Add(vs, hn::PromoteTo(dd, hn::LoadU(dh, xs + i)));
        sum = hn::GetLane(hn::SumOfLanes(dd, vs));
      } else
#endif
      {
        for (int i = 0; i < S.block_k; ++i) sum += xs[i];
      }
    }
    int8_t* Eb = E + blk * S.steps_per_block * S.table_bytes_per_step();
    if (!finite) {
      tscale[blk] = std::numeric_limits<float>::quiet_NaN();
      xsum[blk] = std::numeric_limits<float>::quiet_NaN();
      std::memset(Eb, 0, std::size_t(S.steps_per_block) * S.table_bytes_per_step());
      continue;
    }
    auto vmax = hn::Zero(df);
    for (int s = 0; s < S.steps_per_block; ++s)
      for (std::size_t j = 0; j < 16; j += L) {
        auto v = hn::Zero(df);
        for (int i = 0; i < KPS; ++i) v = hn::MulAdd(hn::Set(df, xs[s * KPS + i]), hn::Load(df, coef[i] + j), v);
        hn::Store(v, df, T + s * 16 + j);
        vmax = hn::Max(vmax, hn::Abs(v));
      }
    const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
    tscale[blk] = amax / qmax;
    xsum[blk] = float(sum);
    const auto inv = hn::Set(df, amax > 0.f ? qmax / amax : 0.f);
    const auto lim = hn::Set(di, int32_t(qmax));
    for (int s = 0; s < S.steps_per_block; ++s) {
      int8_t* e = Eb + s * S.table_bytes_per_step();
      for (std::size_t j = 0; j < 16; j += L) {
        auto q = hn::NearestInt(hn::Mul(hn::Load(df, T + s * 16 + j), inv));
        q = hn::Min(hn::Max(q, hn::Neg(lim)), lim);
        if constexpr (S.entry_bits == 8) {
          hn::StoreU(hn::DemoteTo(di8, q), di8, e + j);
        } else {
          // q = 256 hi + lo, both signed bytes (tiling_spec::table_qmax): lo is q's low byte
          const auto hi = hn::ShiftRight<8>(hn::Add(q, hn::Set(di, 128)));
          hn::StoreU(hn::DemoteTo(di8, hn::Sub(q, hn::ShiftLeft<8>(hi))), di8, e + j);
          hn::StoreU(hn::DemoteTo(di8, hi), di8, e + 16 + j);
        }
      }
    }
  }
}

// The per-target entry the dispatcher's table points at.
template <class P>
void LutGemvEntry(const detail::gemv_args& a) {
  lut_gemv_rows<Ops, P>(a);
}
template <class P>
void BuildTablesEntry(const float* x, std::size_t K, int8_t* E, float* tscale, float* xsum, std::size_t blocks) {
  BuildTablesRow<P>(x, K, E, tscale, xsum, blocks);
}

}  // namespace HWY_NAMESPACE
}  // namespace lutkit
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
