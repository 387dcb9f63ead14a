// lutkit — quantization: round-to-nearest per group (symmetric, asymmetric), ternary absmean,
// and import of already-quantized codes + scales (+ zeros), plain or as GPTQ int32 tensors.
// A quantized<P> holds unpacked codes (one byte per weight) and fp32 copies of fp16 values.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/compiler.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/half.hpp"
#include "../core/limits.hpp"
#include "../core/thread_pool.hpp"
#include "../core/policy.hpp"

namespace lutkit {

// llama.cpp's Q4_1 as a policy format: 4-bit codes q, an fp16 scale d and an fp16 minimum m per
// group, w = d * q + m (min-form, like Q4NX but with fp16 parameters). Whole codes (no LUT-GEMV);
// the int8 decode, FusedDQP and the dequant-GEMM serve it.
// llama.cpp's Q5_1: the same with 5-bit codes, stored as 5 bit planes (never widened to 8 bits):
// the LUT-GEMV serves it (adding m * sum(x) per group), and the dequant kernels.
namespace fmt {
struct q4_1 {
  static constexpr int bits = 4;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = true;
};
struct q5_1 {
  static constexpr int bits = 5;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = true;
};
}  // namespace fmt

namespace detail {
// the fp16 value next to the fp16 value v, toward +inf (up) or -inf
inline float f16_step(float v, bool up) {
  const uint16_t h = f32_to_f16(v);
  if ((h & 0x7FFFu) == 0) return up ? f16_to_f32(0x0001) : f16_to_f32(0x8001);
  const bool neg = (h & 0x8000u) != 0;
  return f16_to_f32(uint16_t(up != neg ? h + 1 : h - 1));
}
}  // namespace detail

namespace detail {
// What the min-form formats share: codes 0..2^B - 1, level = code, weight = scale * code + min,
// the code of a weight rounded to nearest and clamped. Planes = false: whole codes, no LUT-GEMV
// (Q4_1, Q4NX, Q4_K); true: B bit planes, the LUT-GEMV adds min * sum(x) per group (Q5_1, Q5_K,
// Q2_K). Each format adds its parameter type (bf16_params, super_params), its name and its group fit.
template <int B, bool Planes>
struct min_form_traits {
  static constexpr bool is_ternary = false;
  static constexpr int bits = B;
  static constexpr bool asymmetric = true;
  static constexpr int planes = B;
  static constexpr int k_per_step = 4;
  static constexpr int max_code = (1 << B) - 1;
  static constexpr float sym_zero = 0.0f;  // unused: every group stores its own minimum
  static constexpr int plane_weight_sum = (1 << B) - 1;
  static constexpr bool integer_levels = true;
  static constexpr float level(int code) { return float(code); }
  // min-form: the second argument is the group minimum m, weight = scale * level + m
  static constexpr bool min_form = true;
  static constexpr float value(float scale, float min, int code) { return scale * level(code) + min; }
  static constexpr bool lut_gemv_capable = Planes;
  static constexpr bool is_codebook = false;
  static constexpr bool super_params = false;  // (the K-quants: super-group slots)
  // q = round((w - min) / scale) clamped to 0..max_code (0 for a zero scale: a constant group)
  static uint8_t code_of(float w, float scale, float min) {
    if (!(scale > 0)) return 0;
    const double t = std::nearbyint((double(w) - double(min)) / double(scale));
    return uint8_t(t < 0 ? 0 : (t > max_code ? max_code : int(t)));
  }
};
using min_form4_traits = min_form_traits<4, false>;

// The group fits of the min-form formats with fp16 parameters (Q4_1, Q5_1): min = the largest
// fp16 <= min(w), scale = the smallest fp16 >= (max(w) - min) / max_code: every weight within
// scale / 2 of d q + m. False when they are not finite in fp16.
template <int MaxCode>
bool fit_min_form_f16(const float* w, std::size_t n, std::size_t stride, float& scale, float& min) {
  float lo = w[0], hi = w[0];
  for (std::size_t i = 1; i < n; ++i) {
    lo = std::min(lo, w[i * stride]);
    hi = std::max(hi, w[i * stride]);
  }
  float mn = round_to_f16(lo);
  if (mn > lo) mn = f16_step(mn, false);
  const double range = double(hi) - double(mn);
  float d = round_to_f16(float(range / double(MaxCode)));
  if (double(d) * MaxCode < range) d = f16_step(d, true);
  scale = d;
  min = mn;
  return std::isfinite(mn) && std::isfinite(d) && std::isfinite(d * float(MaxCode) + mn);
}
}  // namespace detail

template <>
struct format_traits<fmt::q4_1> : detail::min_form4_traits {
  static constexpr bool bf16_params = false;
  static constexpr const char* book_name = "q41";  // policy names read w4q41_g32_asym_...
  static bool fit_group(const float* w, std::size_t n, std::size_t stride, float& scale, float& min) {
    return detail::fit_min_form_f16<15>(w, n, stride, scale, min);
  }
};
template <>
struct format_traits<fmt::q5_1> : detail::min_form_traits<5, true> {
  static constexpr bool bf16_params = false;
  static constexpr const char* book_name = "q51";  // policy names read w5q51_g32_asym_...
  static bool fit_group(const float* w, std::size_t n, std::size_t stride, float& scale, float& min) {
    return detail::fit_min_form_f16<31>(w, n, stride, scale, min);
  }
};

template <class P>
struct quantized {
  std::size_t M = 0, K = 0;
  std::size_t groups = 0;          // scale groups per row (1 for per_channel / per_tensor)
  std::vector<uint8_t> codes;      // M x K, code in [0, max_code]; ternary: t + 1
  std::vector<float> scales;       // M x groups, fp16-representable
  std::vector<float> zeros;        // M x groups (asymmetric formats only), fp16-representable
  // super-group formats (super_params: the K-quants): per row and super-group of 256 k, the fp32
  // super-scale (and super-minimum, min-form) of which every group's scale (minimum) is an int8
  // multiple; `scales` and `zeros` hold the products
  std::size_t supers_per_row = 0;
  std::vector<float> supers, super_mins;  // M x supers_per_row
  float super_scale(std::size_t m, std::size_t g) const {
    return supers[m * supers_per_row + g / std::size_t(P::spec.groups_per_super())];
  }
  float super_min(std::size_t m, std::size_t g) const {
    return P::spec.asymmetric ? super_mins[m * supers_per_row + g / std::size_t(P::spec.groups_per_super())] : 0.f;
  }

  std::size_t group_k() const { return P::spec.group_k > 0 ? std::size_t(P::spec.group_k) : K; }
  float zero(std::size_t m, std::size_t g) const {
    return P::spec.asymmetric ? zeros[m * groups + g] : P::spec.sym_zero;
  }
  float scale(std::size_t m, std::size_t g) const { return scales[m * groups + g]; }
  // the value a code stands for (what every kernel must reproduce): format_traits::value's
  // formula scale * (level(code) - zero) in double. For symmetric formats level - zero is exact
  // in float and the product exact in double, so float(weight) == format_traits::value bit for bit.
  // Min-form formats (zero() is the group minimum m): scale * level(code) + m.
  double weight(std::size_t m, std::size_t k) const {
    const std::size_t g = k / group_k();
    using FT = format_traits<typename P::format>;
    if constexpr (P::spec.min_form)
      return double(scale(m, g)) * double(FT::level(codes[m * K + k])) + double(zero(m, g));
    else
      return double(scale(m, g)) * (double(FT::level(codes[m * K + k])) - double(zero(m, g)));
  }
};

// The same tensor under another policy of its format and group shape (another table layout or
// target): every code and parameter as it is, for pack<P2> to lay out as P2 does.
template <class P2, class P>
quantized<P2> with_policy(const quantized<P>& q) {
  static_assert(std::is_same_v<typename P2::format, typename P::format> &&
                    std::is_same_v<typename P2::group_shape, typename P::group_shape>,
                "lutkit: with_policy changes the table layout or target, not the format or group");
  quantized<P2> r;
  r.M = q.M, r.K = q.K, r.groups = q.groups;
  r.codes = q.codes, r.scales = q.scales, r.zeros = q.zeros;
  r.supers_per_row = q.supers_per_row, r.supers = q.supers, r.super_mins = q.super_mins;
  return r;
}

namespace detail {
template <class P>
quantized<P> make_quantized(std::size_t M, std::size_t K) {
  check_matrix_shape(M, K, "quantized tensor");
  if (P::spec.group_k > 0)
    require(K % std::size_t(P::spec.group_k) == 0,
            "K (", K, ") is not a multiple of the group size (", P::spec.group_k, ")");
  quantized<P> q;
  q.M = M;
  q.K = K;
  q.groups = P::spec.group_k > 0 ? K / std::size_t(P::spec.group_k) : 1;
  detail::assign_bulk(q.codes, M * K, uint8_t(0));
  detail::assign_bulk(q.scales, M * q.groups, 0.f);
  if (P::spec.asymmetric) detail::assign_bulk(q.zeros, M * q.groups, 0.f);
  if constexpr (P::spec.super_k > 0) {
    q.supers_per_row = (q.groups + std::size_t(P::spec.groups_per_super()) - 1) / std::size_t(P::spec.groups_per_super());
    detail::assign_bulk(q.supers, M * q.supers_per_row, 0.f);
    if (P::spec.asymmetric) detail::assign_bulk(q.super_mins, M * q.supers_per_row, 0.f);
  }
  return q;
}

inline int clamp_code(double v, int maxq) {
  const double r = std::nearbyint(v);
  return r < 0 ? 0 : (r > maxq ? maxq : int(r));
}

// Codebooks: the code of the level nearest to w (ties: the lower code) for the stored scale s.
template <class FT>
uint8_t nearest_level(float w, float s) {
  int best = 0;
  double best_err = 0;
  for (int c = 0; c <= FT::max_code; ++c) {
    // with s == 0 every level is worth 0: pick the level nearest the zero point instead
    const double err = s == 0.f ? std::fabs(double(FT::level(c)) - double(FT::sym_zero))
                                : std::fabs(double(w) - double(FT::value(s, FT::sym_zero, c)));
    if (c == 0 || err < best_err) {
      best = c;
      best_err = err;
    }
  }
  return uint8_t(best);
}
// Codebooks: the levels' values for one scale s != 0 in ascending order (of equal values, e.g.
// FP4's +0 and -0, only the lowest code), so that a weight's level is found by counting the values
// below it and a few comparisons instead of a scan of every level. The same code as
// nearest_level: its error, the double |w - value|, does not shrink away from w, so the smallest
// error is at one of the two values around w, and the values tied with it (when the difference
// rounds, e.g. w = 3e38 against levels near 1) extend outward from there; of those the lowest
// code. Unused slots hold +inf.
template <class FT>
struct level_search {
  static constexpr int L = FT::max_code + 1;
  double v[L];
  uint8_t c[L];
  int n = 0;
  float s;
  bool scan = false;  // a value overflows to +-Inf (|s| near the fp32 limit): nearest_level itself
  explicit level_search(float s_) : s(s_) {
    std::pair<double, int> p[L];
    for (int k = 0; k < L; ++k) p[k] = {double(FT::value(s, FT::sym_zero, k)), k};
    for (int k = 0; k < L; ++k) scan = scan || !std::isfinite(p[k].first);
    std::sort(p, p + L);
    for (int k = 0; k < L; ++k)
      if (n == 0 || p[k].first != v[n - 1]) v[n] = p[k].first, c[n++] = uint8_t(p[k].second);
    for (int k = n; k < L; ++k) v[k] = HUGE_VAL, c[k] = 0xFF;
  }
  uint8_t nearest(float w) const {
    if (scan) return nearest_level<FT>(w, s);
    const double x = w;
    int i = 0;  // the values below w: a count over all L (vectorized), not a branching search
    for (int k = 0; k < L; ++k) i += v[k] < x;
    const double lo = i > 0 ? std::fabs(x - v[i - 1]) : HUGE_VAL, hi = i < n ? std::fabs(x - v[i]) : HUGE_VAL;
    const double best = std::min(lo, hi);
    uint8_t code = 0xFF;
    for (int j = i - 1; j >= 0 && std::fabs(x - v[j]) == best; --j) code = std::min(code, c[j]);
    for (int j = i; j < n && std::fabs(x - v[j]) == best; ++j) code = std::min(code, c[j]);
    return code == 0xFF ? 0 : code;  // (a NaN w: code 0, as the scan gives)
  }
};

// Codebooks: the fp16 scale of one group. The largest-magnitude weight m lands on the most
// negative or on the most positive signed level (m / lo or m / hi, like q4_0's m / -8), and a
// few shrunk candidates of each are tried; the smallest squared error of nearest-level codes wins.
// The first weight of largest magnitude, sign kept (0 for an all-zero group). Two passes, a max
// reduction and a search: clang 19 at -O3 for aarch64 vectorizes the one-pass form (m = w where
// |w| > |m|) wrongly, dropping the first element in some inlining contexts (a W8 group of
// tests/test_formats.cpp got the scale of its second-largest weight under qemu).
inline float signed_absmax(const float* w, std::size_t n, std::size_t stride) {
  float amax = 0.f;
  for (std::size_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(w[i * stride]));
  for (std::size_t i = 0; i < n; ++i)
    if (std::fabs(w[i * stride]) == amax) return w[i * stride];
  return 0.f;
}

template <class FT>
float fit_codebook_scale(const float* w, std::size_t n, std::size_t stride) {
  const float m = signed_absmax(w, n, stride);
  if (m == 0.f) return 0.f;
  float lo = 0.f, hi = 0.f;
  for (int c = 0; c <= FT::max_code; ++c) {
    lo = std::min(lo, FT::level(c) - FT::sym_zero);
    hi = std::max(hi, FT::level(c) - FT::sym_zero);
  }
  float best_s = 0.f;
  double best_err = -1;
  for (const float edge : {lo, hi}) {
    if (edge == 0.f) continue;
    for (int t = 0; t <= 8; ++t) {
      const float s = round_to_f16(m / edge * (1.0f - 0.025f * float(t)));
      if (!std::isfinite(s) || s == 0.f) continue;
      const level_search<FT> levels(s);
      double err = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const float v = w[i * stride];
        const double d = double(v) - double(FT::value(s, FT::sym_zero, levels.nearest(v)));
        err += d * d;
      }
      if (best_err < 0 || err < best_err) {
        best_err = err;
        best_s = s;
      }
    }
  }
  // no finite candidate (|m| beyond the fp16 range): the plain absmax fit, Inf if it overflows
  return best_err < 0 ? round_to_f16(m / (lo != 0.f ? lo : hi)) : best_s;
}

// (scale, zero) of one group of weights for a non-ternary format
// a group parameter as the blob stores it (fp16; bf16 for bf16_params formats; super-group formats: as it is)
template <class P>
float round_param(float v) {
  return round_param(P::spec, v);
}

template <class P>
void fit_group(const float* w, std::size_t n, std::size_t stride, float& s, float& z) {
  constexpr int B = P::spec.bits;
  constexpr int maxq = (1 << B) - 1;
  if constexpr (P::spec.min_form) {
    // the format's own rule (scale and minimum, e.g. Q4NX's bf16 grid that covers every weight)
    require(format_traits<typename P::format>::fit_group(w, n, stride, s, z),
            "quantize: a group's range exceeds what the format's scale can represent");
  } else if constexpr (format_traits<typename P::format>::is_codebook) {
    s = fit_codebook_scale<format_traits<typename P::format>>(w, n, stride);
    z = P::spec.sym_zero;
  } else if constexpr (P::spec.asymmetric) {
    float mn = w[0], mx = w[0];
    for (std::size_t i = 0; i < n; ++i) {
      mn = std::min(mn, w[i * stride]);
      mx = std::max(mx, w[i * stride]);
    }
    float sc = (mx - mn) / float(maxq);
    if (!(sc > 0)) sc = 1.f;
    s = round_to_f16(sc);
    if (s == 0.f) s = round_to_f16(6.1035156e-05f);  // smallest normal fp16
    z = round_to_f16(-mn / s);
  } else if constexpr (B == 1) {
    double a = 0;
    for (std::size_t i = 0; i < n; ++i) a += std::fabs(w[i * stride]);
    s = round_to_f16(float(2.0 * a / double(n)));
    z = P::spec.sym_zero;
  } else {
    // like q4_0: the largest-magnitude weight maps exactly onto the most negative level
    const float m = signed_absmax(w, n, stride);
    s = round_to_f16(m / -float(1 << (B - 1)));
    z = P::spec.sym_zero;
  }
}

template <class P>
uint8_t code_of(float w, float s, float z) {
  constexpr int maxq = format_traits<typename P::format>::max_code;
  if constexpr (P::spec.min_form) {
    return format_traits<typename P::format>::code_of(w, s, z);
  } else if constexpr (format_traits<typename P::format>::is_codebook) {
    (void)z;
    return nearest_level<format_traits<typename P::format>>(w, s);
  } else if constexpr (P::spec.bits == 1 && !P::spec.asymmetric && !P::spec.ternary) {
    return w >= 0.f ? (s >= 0.f ? 1 : 0) : (s >= 0.f ? 0 : 1);
  } else {
    if (s == 0.f) return uint8_t(clamp_code(z, maxq));
    return uint8_t(clamp_code(double(w) / double(s) + double(z), maxq));
  }
}
// The codes of n weights of one group (scale s, zero z): code_of each, a codebook's levels sorted
// once for the group
template <class P>
void codes_of(const float* w, std::size_t n, float s, float z, uint8_t* out) {
  using FT = format_traits<typename P::format>;
  if constexpr (FT::is_codebook && !P::spec.min_form) {
    if (s != 0.f) {
      const level_search<FT> levels(s);
      for (std::size_t i = 0; i < n; ++i) out[i] = levels.nearest(w[i]);
      return;
    }
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = code_of<P>(w[i], s, z);
}
// Super-group formats (super_params): x >= 0 rounded up to `bits` significant bits
inline double round_up_sig(double x, int bits) {
  if (!(x > 0)) return 0;
  int e = 0;
  const double f = std::frexp(x, &e);
  return std::ldexp(std::ceil(std::ldexp(f, bits)), e - bits);
}
// Super-group formats: the fp32 super-value v and int8 codes c of n group parameters p (of row m,
// super-group u) with |v c_i| >= |p_i| (`up`: each code rounded away from zero, so a fitted range
// stays covered) or v c_i nearest p_i; v has the format's super_sig_bits significant bits, so
// v c times any level is exact in fp32. False when v is not finite.
template <class P>
bool super_split(const double* p, std::size_t n, bool up, float& v, int* c) {
  double amax = 0;
  for (std::size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(p[i]));
  v = float(round_up_sig(amax / 127.0, format_traits<typename P::format>::super_sig_bits));
  if (!std::isfinite(v)) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = v > 0 ? p[i] / double(v) : 0.0;
    c[i] = int(up ? (r < 0 ? -std::ceil(-r) : std::ceil(r)) : std::nearbyint(r));
    c[i] = std::clamp(c[i], -127, 127);
  }
  return true;
}
// Super-group formats: the groups [g0, g1) of row m (weights w of the row) fitted as one super-
// group: min-form, each group's minimum rounded down to an int8 multiple of the super-minimum,
// then its scale up to one of the super-scale, covering the group's range; symmetric, the
// scale of the q4_0-like fit (largest magnitude on the most negative level) rounded away from
// zero. Then the codes, rounded to nearest for those parameters.
template <class P>
void fit_super(const float* w, std::size_t m, std::size_t g0, std::size_t g1, quantized<P>& q) {
  using FT = format_traits<typename P::format>;
  const std::size_t G = q.group_k(), n = g1 - g0, u = g0 / std::size_t(P::spec.groups_per_super());
  double sc[16], mn[16];
  int cs[16], cm[16];
  float vs = 0, vm = 0;
  bool ok = true;
  if constexpr (P::spec.min_form) {
    double hi[16];
    for (std::size_t i = 0; i < n; ++i) {
      const float* wg = w + (g0 + i) * G;
      float a = wg[0], b = wg[0];
      for (std::size_t j = 1; j < G; ++j) a = std::min(a, wg[j]), b = std::max(b, wg[j]);
      mn[i] = a;
      hi[i] = b;
    }
    // minimums: rounded down (toward -inf) to the super-minimum's grid
    double amax = 0;
    for (std::size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(mn[i]));
    vm = float(round_up_sig(amax / 127.0, FT::super_sig_bits));
    ok = std::isfinite(vm);
    for (std::size_t i = 0; i < n && ok; ++i) {
      cm[i] = vm > 0 ? std::clamp(int(std::floor(mn[i] / double(vm))), -127, 127) : 0;
      mn[i] = double(vm) * cm[i];
      sc[i] = (hi[i] - mn[i]) / double(FT::max_code);
    }
    ok = ok && super_split<P>(sc, n, true, vs, cs);
  } else {
    constexpr int B = P::spec.bits;
    for (std::size_t i = 0; i < n; ++i) sc[i] = double(signed_absmax(w + (g0 + i) * G, G, 1)) / -double(1 << (B - 1));
    ok = super_split<P>(sc, n, true, vs, cs);
  }
  require(ok, "quantize: row ", m, ", super-group ", u, ": the range exceeds what the format's fp32 super-scale can hold");
  q.supers[m * q.supers_per_row + u] = vs;
  if constexpr (P::spec.asymmetric) q.super_mins[m * q.supers_per_row + u] = vm;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t g = g0 + i;
    const float s = vs * float(cs[i]);
    const float z = P::spec.min_form ? vm * float(cm[i]) : P::spec.sym_zero;
    q.scales[m * q.groups + g] = s;
    if constexpr (P::spec.asymmetric) q.zeros[m * q.groups + g] = z;
    for (std::size_t j = 0; j < G; ++j) q.codes[m * q.K + g * G + j] = code_of<P>(w[g * G + j], s, z);
  }
}
// Super-group formats: parameters given per group (from_codes) made int8 multiples of a super-
// value per row and super-group, each rounded to the nearest (as 2-byte formats round to fp16)
template <class P>
void snap_supers(quantized<P>& q) {
  constexpr std::size_t U = std::size_t(P::spec.groups_per_super());
  for (std::size_t m = 0; m < q.M; ++m)
    for (std::size_t u = 0; u < q.supers_per_row; ++u) {
      const std::size_t g0 = u * U, n = std::min(q.groups, g0 + U) - g0;
      for (int which = 0; which < (P::spec.asymmetric ? 2 : 1); ++which) {
        float* v = (which == 0 ? q.scales.data() : q.zeros.data()) + m * q.groups + g0;
        double p[16];
        int c[16];
        for (std::size_t i = 0; i < n; ++i) p[i] = v[i];
        float sv = 0;
        require(super_split<P>(p, n, false, sv, c), "from_codes: row ", m, ", super-group ", u,
                ": the parameters exceed what the format's fp32 super-scale can hold");
        for (std::size_t i = 0; i < n; ++i) v[i] = sv * float(c[i]);
        (which == 0 ? q.supers : q.super_mins)[m * q.supers_per_row + u] = sv;
      }
    }
}
}  // namespace detail

// Round-to-nearest quantization of row-major M x K float weights. Non-finite weights are an error.
template <class P>
quantized<P> quantize(const float* w, std::size_t M, std::size_t K) {
  detail::require(w != nullptr, "quantize: null weight pointer");
  quantized<P> q = detail::make_quantized<P>(M, K);
  for (std::size_t i = 0; i < M * K; ++i)
    detail::require(std::isfinite(w[i]), "quantize: weight ", i, " is not finite");
  const std::size_t G = q.group_k();
  if constexpr (P::spec.ternary) {
    // absmean (BitNet b1.58): s = mean |w| over the tensor (per_tensor) or the row (per_channel)
    auto absmean = [&](std::size_t m0, std::size_t m1) {
      double a = 0;
      for (std::size_t i = m0 * K; i < m1 * K; ++i) a += std::fabs(w[i]);
      return round_to_f16(float(a / double((m1 - m0) * K)));
    };
    const float st = P::spec.per_tensor ? absmean(0, M) : 0.f;
    for (std::size_t m = 0; m < M; ++m) {
      const float s = P::spec.per_tensor ? st : absmean(m, m + 1);
      q.scales[m] = s;
      for (std::size_t k = 0; k < K; ++k) {
        const float v = w[m * K + k];
        const double t = s > 0 ? std::nearbyint(double(v) / s) : 0.0;
        q.codes[m * K + k] = uint8_t((t < -1 ? -1 : (t > 1 ? 1 : int(t))) + 1);
      }
    }
    return q;
  } else {
    if constexpr (P::spec.super_k > 0) {
      constexpr std::size_t U = std::size_t(P::spec.groups_per_super());
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t g0 = 0; g0 < q.groups; g0 += U) detail::fit_super<P>(w + m * K, m, g0, std::min(q.groups, g0 + U), q);
    } else {
      float st = 0, zt = 0;
      if (P::spec.per_tensor) detail::fit_group<P>(w, M * K, 1, st, zt);
      for (std::size_t m = 0; m < M; ++m) {
        for (std::size_t g = 0; g < q.groups; ++g) {
          const float* wg = w + m * K + g * G;
          float s = st, z = zt;
          if (!P::spec.per_tensor) detail::fit_group<P>(wg, G, 1, s, z);
          q.scales[m * q.groups + g] = s;
          if (P::spec.asymmetric) q.zeros[m * q.groups + g] = z;
          detail::codes_of<P>(wg, G, s, z, &q.codes[m * K + g * G]);
        }
      }
    }
    return q;
  }
}

// Import codes (M x K bytes), scales (M x groups) and, for asymmetric formats, zeros (M x groups),
// e.g. from another quantizer. Scales and zeros must be finite; they are rounded to fp16 (bf16
// for bf16_params formats; for min-form formats `zeros` are the group minima).
template <class P>
quantized<P> from_codes(const uint8_t* codes, const float* scales, const float* zeros, std::size_t M,
                        std::size_t K) {
  quantized<P> q = detail::make_quantized<P>(M, K);
  detail::require(codes && scales, "from_codes: null codes or scales");
  detail::require(!P::spec.asymmetric || zeros, "from_codes: asymmetric format needs zeros");
  constexpr int maxq = format_traits<typename P::format>::max_code;
  for (std::size_t i = 0; i < M * K; ++i) {
    detail::require(codes[i] <= maxq, "from_codes: code ", int(codes[i]), " at index ", i, " exceeds ", maxq);
    q.codes[i] = codes[i];
  }
  // a scale or zero must be finite, and stay finite once rounded to the blob's 2-byte parameter
  // (fp16 overflows above 65504): a value that cannot be stored is refused here, with its
  // position, rather than turned into an infinite weight that the kernels would spread as NaN
  for (std::size_t i = 0; i < M * q.groups; ++i) {
    const std::size_t row = i / q.groups, grp = i % q.groups;
    detail::require(std::isfinite(scales[i]), "from_codes: scale is not finite at row ", row, ", group ", grp);
    q.scales[i] = detail::round_param<P>(scales[i]);
    detail::require(std::isfinite(q.scales[i]), "from_codes: scale ", scales[i], " at row ", row, ", group ", grp,
                    " overflows the blob's ", P::spec.bf16_params ? "bf16" : "fp16", " parameter");
    if (P::spec.asymmetric) {
      detail::require(std::isfinite(zeros[i]), "from_codes: zero is not finite at row ", row, ", group ", grp);
      q.zeros[i] = detail::round_param<P>(zeros[i]);
      detail::require(std::isfinite(q.zeros[i]), "from_codes: zero ", zeros[i], " at row ", row, ", group ", grp,
                      " overflows the blob's ", P::spec.bf16_params ? "bf16" : "fp16", " parameter");
    }
  }
  if (P::spec.per_tensor)
    for (std::size_t m = 1; m < M; ++m)
      detail::require(q.scales[m] == q.scales[0], "from_codes: per_tensor policy needs equal scales");
  if constexpr (P::spec.super_k > 0) detail::snap_supers(q);
  return q;
}

// Import GPTQ tensors (AutoGPTQ layout): qweight int32 [K*B/32][M] packed along K, scales fp16
// [groups][M], qzeros int32 [groups][M*B/32] packed along M. `zeros_minus_one`: GPTQ v1 stores
// zero-1. Bits 2 and 4 (GPTQ's 3-bit packing straddles words and is not supported).
template <class P>
quantized<P> import_gptq(const int32_t* qweight, const uint16_t* scales_f16, const int32_t* qzeros,
                         std::size_t M, std::size_t K, bool zeros_minus_one = true) {
  constexpr int B = P::spec.bits;
  static_assert(P::spec.asymmetric && (B == 2 || B == 4), "import_gptq: asymmetric 2- or 4-bit policies");
  detail::require(qweight && scales_f16 && qzeros, "import_gptq: null tensor");
  detail::check_matrix_shape(M, K, "import_gptq");
  quantized<P> q = detail::make_quantized<P>(M, K);
  constexpr int per_word = 32 / B;
  detail::require(K % per_word == 0 && M % per_word == 0,
                  "import_gptq: M and K must be multiples of ", per_word);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t m = 0; m < M; ++m) {
      const uint32_t word = uint32_t(qweight[(k / per_word) * M + m]);
      q.codes[m * K + k] = uint8_t((word >> ((k % per_word) * B)) & ((1u << B) - 1));
    }
  for (std::size_t g = 0; g < q.groups; ++g)
    for (std::size_t m = 0; m < M; ++m) {
      const float s = f16_to_f32(scales_f16[g * M + m]);
      detail::require(std::isfinite(s), "import_gptq: scales[", g, "][", m, "] (group ", g, ", row ", m,
                      ") is not finite");
      q.scales[m * q.groups + g] = s;
      const uint32_t word = uint32_t(qzeros[g * (M / per_word) + m / per_word]);
      const uint32_t z = (word >> ((m % per_word) * B)) & ((1u << B) - 1);
      q.zeros[m * q.groups + g] = float(z) + (zeros_minus_one ? 1.f : 0.f);
    }
  return q;
}

// ---------------------------------------------------------------- llama.cpp (GGUF) blocks
// Byte layouts: docs/llama_formats.md. A tensor of M rows x K columns is M * K/E blocks of E
// weights (E = 32; 256 for TQ1_0 / TQ2_0), the K/E blocks of a row consecutive; each block holds
// one fp16 scale d (little-endian) at d_offset and its codes from qs_offset.
// The decoded codes reproduce llama.cpp's dequantization bit for bit through
// format_traits::value (tests/test_formats.cpp). `nbytes` is the size of the caller's buffer,
// which must hold all M * K/32 blocks; left out (unknown_size), the caller promises that it does.
// Pass it whenever the bytes come from a file. Each block type is one traits struct (its bytes,
// its format, its codes) read by both the importers below and the direct packers (pack.hpp,
// pack_q4_0 ...).
namespace detail {
// How 64 consecutive codes of a row are stored where the packer reads them: one code per byte,
// or in two consecutive llama.cpp blocks (`stride` bytes apart) as nibbles or as int8; or
// `assembled`: the block type puts each code together from two places (Q5_0: a nibble and a bit
// of qh), so the packer reads them through its codes8 / codes32 only (no in-place fast path)
enum class code_form { bytes, ggml_nibbles, ggml_int8, assembled };

// Codes e0 .. e0 + 63 of a block (e0 a multiple of 64, inside the block) to out, eight at a time
// as Block::codes8 forms them in a 64-bit word. e0's low bits are cleared for the compiler: with
// them known zero, codes8's index arithmetic folds to constants per eight. (Byte loops with a
// shift by the sub-block's bit position were left scalar by GCC: x86 has no byte shifts.)
template <class Block>
inline void codes64_by8(const unsigned char* b, unsigned e0, uint8_t* out) {
  e0 &= ~63u;
#pragma GCC unroll 8
  for (unsigned i = 0; i < 64; i += 8) {
    const uint64_t x = Block::codes8(b, e0 + i);
    std::memcpy(out + i, &x, 8);
  }
}

// What every block type gives: its weights (block_elems), bytes, where d and the codes start, the
// zero of asymmetric policies, codes8 (8 codes from a multiple of 8) and codes_block (all of them)
struct ggml_block_32 {
  static constexpr std::size_t block_elems = 32, d_offset = 0, qs_offset = 2;
  static constexpr float zero = 0.f;  // (symmetric formats: the policy's own zero)
  static constexpr bool has_min = false;  // true: an fp16 minimum per block at m_offset (Q4_1)
  static constexpr std::size_t m_offset = 0;
};
// 16 bytes of nibbles: weight j < 16 is the low nibble of byte j, weight j >= 16 the high
// nibble of byte j - 16 (q4_0, iq4_nl)
struct ggml_nibble_codes : ggml_block_32 {
  static constexpr std::size_t block_bytes = 18;
  static constexpr code_form form = code_form::ggml_nibbles;
  // the 8 codes of weights j0 .. j0 + 7 (j0 a multiple of 8), byte i the code of j0 + i
  static uint64_t codes8(const unsigned char* qs, unsigned j0) {
    uint64_t x;
    std::memcpy(&x, qs + (j0 & 15u), 8);
    return (j0 < 16 ? x : x >> 4) & 0x0F0F0F0F0F0F0F0Full;
  }
  // all 32 codes of the block
  LUTKIT_VECTORIZE static void codes32(const unsigned char* qs, uint8_t* out) {
    for (int j = 0; j < 16; ++j) {
      out[j] = uint8_t(qs[j] & 0x0Fu);
      out[j + 16] = uint8_t(qs[j] >> 4);
    }
  }
  static void codes_block(const unsigned char* qs, uint8_t* out) { codes32(qs, out); }
};
struct ggml_q4_0 : ggml_nibble_codes {
  using format = fmt::uint_sym<4>;  // code = q, zero 8: w = d * (q - 8)
  static constexpr const char* name = "q4_0";
};
struct ggml_iq4_nl : ggml_nibble_codes {
  using format = fmt::codebook4<book::iq4_nl>;  // code = q, level kvalues[q] + 128, zero 128
  static constexpr const char* name = "iq4_nl";
};
struct ggml_q4_1 : ggml_nibble_codes {  // 20 bytes: fp16 d, fp16 m, 16 bytes of nibbles
  using format = fmt::q4_1;             // code = q: w = d * q + m
  static constexpr const char* name = "q4_1";
  static constexpr std::size_t block_bytes = 20, qs_offset = 4, m_offset = 2;
  static constexpr bool has_min = true;
};
// Q5_0 (22 bytes: fp16 d, 4 bytes qh, 16 bytes of nibbles like q4_0): code = nibble | bit j of
// the little-endian qh << 4, w = d * (q - 16). The codes pointer is qs; qh is the 4 bytes before.
struct ggml_q5_0 : ggml_block_32 {
  using format = fmt::uint_sym<5>;  // code = q, zero 16: w = d * (q - 16)
  static constexpr const char* name = "q5_0";
  static constexpr std::size_t block_bytes = 22, qs_offset = 6;
  static constexpr code_form form = code_form::assembled;
  static uint32_t high_bits(const unsigned char* qs) {
    return uint32_t(qs[-4]) | (uint32_t(qs[-3]) << 8) | (uint32_t(qs[-2]) << 16) | (uint32_t(qs[-1]) << 24);
  }
  // bits 0..7 of h as bit 4 of bytes 0..7: the byte copied to every byte, byte i's bit i kept,
  // then + 0x7F carries a set bit to bit 7 (a 64-bit word: no shift per byte, which x86 lacks)
  static uint64_t bit4_bytes(uint32_t h) {
    const uint64_t t = (uint64_t(h & 0xFFu) * 0x0101010101010101ull) & 0x8040201008040201ull;
    return ((t + 0x7F7F7F7F7F7F7F7Full) >> 3) & 0x1010101010101010ull;
  }
  static uint64_t codes8(const unsigned char* qs, unsigned j0) {
    return ggml_nibble_codes::codes8(qs, j0) | bit4_bytes(high_bits(qs) >> j0);
  }
  static void codes32(const unsigned char* qs, uint8_t* out) {
    for (unsigned j = 0; j < 32; j += 8) {
      const uint64_t x = codes8(qs, j);
      std::memcpy(out + j, &x, 8);
    }
  }
  static void codes_block(const unsigned char* qs, uint8_t* out) { codes32(qs, out); }
};
// Q5_1 (24 bytes: fp16 d, fp16 m, then Q5_0's qh and nibbles): code = q, w = d * q + m
struct ggml_q5_1 : ggml_q5_0 {
  using format = fmt::q5_1;
  static constexpr const char* name = "q5_1";
  static constexpr std::size_t block_bytes = 24, qs_offset = 8, m_offset = 2;
  static constexpr bool has_min = true;
};
struct ggml_q8_0 : ggml_block_32 {
  using format = fmt::uint_sym<8>;  // code = q + 128, zero 128: w = d * q
  static constexpr const char* name = "q8_0";
  static constexpr std::size_t block_bytes = 34;
  static constexpr code_form form = code_form::ggml_int8;
  static uint64_t codes8(const unsigned char* qs, unsigned j0) {
    uint64_t x;
    std::memcpy(&x, qs + j0, 8);
    return x ^ 0x8080808080808080ull;  // int8 q -> q + 128
  }
  LUTKIT_VECTORIZE static void codes32(const unsigned char* qs, uint8_t* out) {
    for (int j = 0; j < 32; ++j) out[j] = uint8_t(qs[j] ^ 0x80u);
  }
  static void codes_block(const unsigned char* qs, uint8_t* out) { codes32(qs, out); }
};
// The ternary super-blocks of 256 (BitNet b1.58), as uint_asym<2> with group<256> and zero 1:
// w = d * (code - 1), the code 0..2 (TQ2_0: 0..3). Exact: d * (code - 1) is llama.cpp's value.
struct ggml_ternary_256 {
  using format = fmt::uint_asym<2>;
  static constexpr std::size_t block_elems = 256, qs_offset = 0;
  static constexpr float zero = 1.f;
  static constexpr bool has_min = false;
  static constexpr std::size_t m_offset = 0;
  static constexpr code_form form = code_form::bytes;  // (no 64-code fast path: codes8 per 8)
};
// TQ2_0 (66 bytes: 64 bytes of 2-bit codes, fp16 d): weight 128 g + 32 p + m is bits 2p..2p+1 of
// qs[32 g + m]
struct ggml_tq2_0 : ggml_ternary_256 {
  static constexpr const char* name = "tq2_0";
  static constexpr std::size_t block_bytes = 66, d_offset = 64;
  static uint64_t codes8(const unsigned char* qs, unsigned j0) {
    uint64_t x;
    std::memcpy(&x, qs + 32 * (j0 / 128) + j0 % 32, 8);
    return (x >> (2 * ((j0 % 128) / 32))) & 0x0303030303030303ull;
  }
  static void codes_block(const unsigned char* qs, uint8_t* out) {
    for (unsigned j = 0; j < 256; ++j) out[j] = uint8_t((qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3u);
  }
};
// TQ1_0 (54 bytes: 48 bytes of 5 base-3 digits each, 4 bytes of 4, fp16 d): digit n of byte x is
// ((x * 3^n mod 256) * 3) >> 8; weights 0..159: digit n = j / 32 of qs[j % 32]; 160..239: digit
// (j - 160) / 16 of qs[32 + j % 16]; 240..255: digit (j - 240) / 4 of qs[48 + j % 4]
struct ggml_tq1_0 : ggml_ternary_256 {
  static constexpr const char* name = "tq1_0";
  static constexpr std::size_t block_bytes = 54, d_offset = 52;
  // digit n of each of the 8 bytes of x, ((x * 3^n mod 256) * 3) >> 8, in the 16-bit lanes of a
  // 64-bit word (even bytes, then odd ones; the products stay below 2^16 in their lanes)
  static uint64_t digits8(uint64_t x, unsigned n) {
    static constexpr uint64_t pow3[5] = {1, 3, 9, 27, 81};
    constexpr uint64_t lo = 0x00FF00FF00FF00FFull;
    const uint64_t e = (((((x & lo) * pow3[n]) & lo) * 3) >> 8) & lo;
    const uint64_t o = ((((((x >> 8) & lo) * pow3[n]) & lo) * 3) >> 8) & lo;
    return e | (o << 8);
  }
  // codes j0 .. j0 + 7 (j0 a multiple of 8): one digit of 8 consecutive bytes, but for the last 8
  // weights (240 + 4 n + i: digit n of byte 48 + i), two digits of 4 bytes
  static uint64_t codes8(const unsigned char* qs, unsigned j0) {
    uint64_t x;
    if (j0 < 240) {
      std::memcpy(&x, qs + (j0 < 160 ? j0 % 32 : 32 + (j0 - 160) % 16), 8);
      return digits8(x, j0 < 160 ? j0 / 32 : (j0 - 160) / 16);
    }
    uint32_t w;
    std::memcpy(&w, qs + 48, 4);
    x = uint64_t(w) | (uint64_t(w) << 32);
    const unsigned n = (j0 - 240) / 4;
    return (digits8(x, n) & 0xFFFFFFFFull) | (digits8(x, n + 1) & 0xFFFFFFFF00000000ull);
  }
  static void codes_block(const unsigned char* qs, uint8_t* out) {
    for (unsigned j = 0; j < 256; j += 8) {
      const uint64_t x = codes8(qs, j);
      std::memcpy(out + j, &x, 8);
    }
  }
};

// The checks every reader of a block tensor makes before touching it: the policy holds the
// block's format with group<E> (E the block's weights), K a multiple of E, the buffer large enough.
template <class P, class Block>
void check_ggml_tensor(const char* what, const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes) {
  constexpr std::size_t E = Block::block_elems;
  constexpr bool policy_ok =
      std::is_same_v<typename P::format, typename Block::format> && P::spec.group_k == int(E) && !P::spec.per_tensor;
  require(policy_ok, what, ": the policy must have the block's format and group<", E, ">, got ", P::name());
  require(blocks != nullptr, what, ": null block pointer");
  check_matrix_shape(M, K, what);
  require(K % E == 0, what, ": K (", K, ") is not a multiple of the block size ", E);
  const std::size_t nblocks = M * (K / E);
  require(nbytes == unknown_size || nbytes >= nblocks * Block::block_bytes, what, ": buffer of ", nbytes,
          " bytes holds fewer than ", nblocks, " blocks of ", Block::block_bytes, " bytes");
}
// block i's scale d (its fp16 at d_offset of the block at b), checked finite
template <class Block>
float ggml_block_scale(const char* what, const unsigned char* b, std::size_t i, std::size_t K) {
  b += Block::d_offset;
  const float d = f16_to_f32(uint16_t(b[0] | (unsigned(b[1]) << 8)));
  require(std::isfinite(d), what, ": block ", i, " (row ", i / (K / Block::block_elems), ") has a non-finite scale");
  return d;
}
// block i's minimum m (Q4_1), checked finite
template <class Block>
float ggml_block_min(const char* what, const unsigned char* b, std::size_t i, std::size_t K) {
  b += Block::m_offset;
  const float m = f16_to_f32(uint16_t(b[0] | (unsigned(b[1]) << 8)));
  require(std::isfinite(m), what, ": block ", i, " (row ", i / (K / Block::block_elems), ") has a non-finite minimum");
  return m;
}

// part(i0, i1) over blocks [0, nblocks) of a tensor of M rows, bpr blocks a row: whole rows to each
// of the pool's threads (a bad block throws from its thread: the pool rethrows it)
template <class Part>
void split_block_rows(thread_pool* pool, std::size_t M, std::size_t bpr, Part&& part) {
  if (pool == nullptr || pool->size() <= 1 || M <= 1) {
    part(std::size_t(0), M * bpr);
  } else {
    const std::size_t parts = std::min(pool->size(), M);
    pool->run(parts, [&](std::size_t i) { part(M * i / parts * bpr, M * (i + 1) / parts * bpr); });
  }
}

template <class P, class Block>
quantized<P> import_ggml_blocks(const char* what, const void* blocks, std::size_t M, std::size_t K,
                                std::size_t nbytes, thread_pool* pool) {
  check_ggml_tensor<P, Block>(what, blocks, M, K, nbytes);
  constexpr std::size_t E = Block::block_elems;
  quantized<P> q = make_quantized<P>(M, K);
  // blocks [i0, i1), rows split over the pool's threads (a bad block throws from its thread: the
  // pool rethrows it)
  auto part = [&](std::size_t i0, std::size_t i1) {
    const auto* b = static_cast<const unsigned char*>(blocks) + i0 * Block::block_bytes;
    for (std::size_t i = i0; i < i1; ++i, b += Block::block_bytes) {
      q.scales[i] = ggml_block_scale<Block>(what, b, i, K);  // block i is group i % (K/E) of row i / (K/E)
      if constexpr (Block::has_min) q.zeros[i] = ggml_block_min<Block>(what, b, i, K);
      else if constexpr (P::spec.asymmetric) q.zeros[i] = Block::zero;
      Block::codes_block(b + Block::qs_offset, q.codes.data() + i * E);
    }
  };
  split_block_rows(pool, M, K / E, part);
  return q;
}
}  // namespace detail

// block_q4_0 (18 bytes: fp16 d, 16 bytes of nibbles q): w = d * (q - 8). Policy: uint_sym<4>,
// group<32> (code = q, zero 8). To pack at once, without the per-weight codes: pack_q4_0.
template <class P>
quantized<P> import_q4_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_blocks<P, detail::ggml_q4_0>("import_q4_0", blocks, M, K, nbytes, pool);
}

// block_q8_0 (34 bytes: fp16 d, 32 int8 q): w = d * q. Policy: uint_sym<8>, group<32>
// (code = q + 128, zero 128). Direct to a blob: pack_q8_0.
template <class P>
quantized<P> import_q8_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_blocks<P, detail::ggml_q8_0>("import_q8_0", blocks, M, K, nbytes, pool);
}

// block_iq4_nl (18 bytes: fp16 d, 16 bytes of nibbles like q4_0): w = d * kvalues[q].
// Policy: codebook4<book::iq4_nl>, group<32> (code = q, level kvalues[q] + 128, zero 128).
// Direct to a blob: pack_iq4_nl.
template <class P>
quantized<P> import_iq4_nl(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                           thread_pool* pool = nullptr) {
  return detail::import_ggml_blocks<P, detail::ggml_iq4_nl>("import_iq4_nl", blocks, M, K, nbytes, pool);
}

// block_q5_0 (22 bytes: fp16 d, 32 high bits qh, 16 bytes of low nibbles like q4_0):
// w = d * (q - 16). Policy: uint_sym<5>, group<32> (code = q, zero 16: five bit planes, which the
// LUT-GEMV and the dequant kernels read as they are). Direct to a blob: pack_q5_0.
template <class P>
quantized<P> import_q5_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_blocks<P, detail::ggml_q5_0>("import_q5_0", blocks, M, K, nbytes, pool);
}

// block_q4_1 (20 bytes: fp16 d, fp16 m, 16 bytes of nibbles like q4_0): w = d * q + m. Policy:
// fmt::q4_1, group<32> (code = q, the minimum in the zero slot). Direct to a blob: pack_q4_1.
template <class P>
quantized<P> import_q4_1(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_blocks<P, detail::ggml_q4_1>("import_q4_1", blocks, M, K, nbytes, pool);
}
// block_q5_1 (24 bytes: fp16 d, fp16 m, 4 bytes qh, 16 bytes of nibbles): w = d * q + m, q 5 bits
// (as Q5_0's). Policy: fmt::q5_1, group<32> (code = q, the minimum in the zero slot). Direct to a
// blob: pack_q5_1.
template <class P>
quantized<P> import_q5_1(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                         thread_pool* pool = nullptr) {
  return detail::import_ggml_blocks<P, detail::ggml_q5_1>("import_q5_1", blocks, M, K, nbytes, pool);
}

// block_tq2_0 (66 bytes: 256 2-bit codes q, fp16 d) and block_tq1_0 (54 bytes: 256 base-3 digits
// t, fp16 d), BitNet b1.58's ternary weights: w = d * (q - 1). Policy: uint_asym<2>, group<256>
// (code = q, zero 1), which every kernel serves (the LUT-GEMV included). Direct to a blob:
// pack_tq2_0, pack_tq1_0.
template <class P>
quantized<P> import_tq2_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                          thread_pool* pool = nullptr) {
  return detail::import_ggml_blocks<P, detail::ggml_tq2_0>("import_tq2_0", blocks, M, K, nbytes, pool);
}
template <class P>
quantized<P> import_tq1_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                          thread_pool* pool = nullptr) {
  return detail::import_ggml_blocks<P, detail::ggml_tq1_0>("import_tq1_0", blocks, M, K, nbytes, pool);
}

}  // namespace lutkit
