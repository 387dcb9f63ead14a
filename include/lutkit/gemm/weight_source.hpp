// lutkit — the dequant-GEMM's weight sources: the per-thread working buffers, the LUT weight
// source (level-1 + level-2 dequantization of a packed blob through the chosen kernel set) and
// the chunk prefetch any source with the prefetch interface gets.
#pragma once
#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/memory.hpp"
#include "../core/prefetch.hpp"
#include "../quant/packed_weights.hpp"
#include "dequant.hpp"
#include "geometry.hpp"
#include "microkernel.hpp"
#include "targets.hpp"

namespace lutkit::detail {

// Whether the 64 int8 values at p all lie in [lo, hi], 16 at a time in vectors of bytes (the
// scale codes' range check of the super-group fold; a scalar loop over the rows was 3.7 % of a
// Q2_K prefill's samples)
template <int lo, int hi>
inline bool int8_within(const int8_t* p) {
  typedef uint8_t v16 __attribute__((vector_size(16)));
  v16 out = {};
  for (int i = 0; i < 64; i += 16) {
    v16 v;
    std::memcpy(&v, p + i, 16);
    out |= (v16)((v16)(v - uint8_t(lo)) > uint8_t(hi - lo));  // (c - lo, unsigned, past hi - lo)
  }
  uint64_t a, b;
  std::memcpy(&a, &out, 8);
  std::memcpy(&b, reinterpret_cast<const char*>(&out) + 8, 8);
  return (a | b) == 0;
}

// Whether the super-group fold (gemm/dequant.hpp, int8_super_fold_offset) adds policy P's
// minimums through kernel set ks's integer kernel (mk_mins_args): a min-form format with an even
// number of groups a super-group whose groups' sums of int8 activations fit int16
template <class P>
bool int8_super_int_mins(const dq_kernel_set& ks) {
  constexpr auto& S = P::spec;
  if constexpr (S.min_form && S.super_k > 0 && int8_super_fold_offset<P>() >= 0) {
    constexpr std::size_t G = std::size_t(S.group_k), groups = std::size_t(S.super_k) / G;
    return groups % 2 == 0 && G * 128 <= 32767 && ks.mins[0] != nullptr;
  } else {
    return false;
  }
}

// Per-thread buffers.
struct dq_scratch {
  reusable_bytes<dq_slot> codes;  // [64][ldc] level-1 output
  reusable_bytes<dq_slot> values; // [64][ldv] level-2 output (fp32 or bf16)
  reusable_bytes<dq_slot> steps;  // bf16 / fp32: the values in the step-major layout of the micro-kernel
  reusable_bytes<dq_slot> acc;    // [NB][64] fp32 accumulators of the tile (column-major)
  std::vector<float> sw, swz;  // [flush group in chunk][64]
  // the super-group fold's integer minimums (int8_super_int_mins): mins [group pair][64] (two
  // int16 codes a row), dmin [super-group][64]
  std::vector<uint32_t> mins;
  std::vector<float> dmin;
  std::size_t ldc = 0, ldv = 0;
  // fused_only: every chunk of the call runs a fused int8 decode kernel (dq_int8_all_fused),
  // which reads the blob and writes the accumulators only: the level buffers and the group
  // scales are not set up (their clearing was a fifth of a 64 x 2048 Q4_K decode call)
  void init(const dq_geometry& g, bool fused_only = false) {
    acc = reusable_bytes<dq_slot>(dq_slot::acc, 64 * g.n_block() * 4);
    if (fused_only) return;
    ldc = g.kc + 64;
    ldv = g.kc + 32;
    codes = reusable_bytes<dq_slot>(dq_slot::codes, 64 * ldc);
    std::memset(codes.get(), 0, 64 * ldc);
    values = reusable_bytes<dq_slot>(dq_slot::values, 64 * ldv * 4);
    steps = reusable_bytes<dq_slot>(dq_slot::steps, 64 * g.kc * 4);
    sw.assign((g.kc / g.flush_k + 1) * 64, 0.f);
    swz.assign(sw.size(), 0.f);
  }
};

// Row-major fp32 / bf16 values of rows 0..63 (stride ld elements, k1 - k0 per row) -> the
// step-major 32-bit elements of the bf16 / fp32 micro-kernels, in s.steps.
template <class T>
const uint32_t* values_to_steps(const T* v, std::size_t ld, std::size_t len, dq_scratch& s, const dq_kernel_set& ks) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4);
  constexpr std::size_t per = 4 / sizeof(T);
  uint32_t* out = reinterpret_cast<uint32_t*>(s.steps.get());
  ks.rows_to_steps(reinterpret_cast<const uint32_t*>(v), ld / per, len / per, out);
  return out;
}

// The weight source of the dequant-GEMM built from a packed blob: level-1 + level-2 LUT
// dequantization. (Benchmarks plug in other sources — per-element conversion, pre-dequantized
// weights — through the same interface to compare the dequantization methods alone.)
template <class P>
struct lut_weight_source {
  using policy = P;
  const uint8_t* data;
  const packed_layout* L;
  const dq_kernel_set* ks;
  dq_level1_fns<P> l1 = dq_level1_for<P>(*ks);  // the set's level-1 unpackers for P

  // int8: levels of rows 0..63 for k in [k0, k1) in the step-major layout of mk_int8
  // (k4 step s, row r at [s * 256 + 4 * r])
  const uint8_t* levels(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
    if (l1.levels_steps) {
      l1.levels_steps(data, *L, t, k0, k1, s.codes.get());
      return s.codes.get();
    }
    codes_rows(t, k0, k1, s);
    if constexpr (!levels_are_codes<P>()) {
      using FT = format_traits<typename P::format>;
      uint8_t map[max_codes];
      for (int c = 0; c < code_count<P>(); ++c) map[c] = uint8_t(FT::level(c));
      for (int r = 0; r < 64; ++r)
        for (std::size_t k = 0; k < k1 - k0; ++k) s.codes[r * s.ldc + k] = map[s.codes[r * s.ldc + k]];
    }
    portable::levels_to_step_major(s.codes.get(), s.ldc, k1 - k0, s.values.get());
    return s.values.get();
  }
  // int8 with the super-group fold (gemm/dequant.hpp, int8_super_fold_offset): the levels of
  // rows 0..63 for k in [k0, k1), whole super-groups, each times its group's scale code c plus
  // the offset o, c * (level - zero) + o, in levels()' layout (planes, int8_super_fold_planes: the
  // codes' digits d_j times the levels, plane j at + 64 (k1 - k0) j); s.sw: the super-scales
  // [super][64], s.swz (min-form formats): the groups' minimums [group][64]. Null where the chunk
  // is not whole super-groups or a code's product leaves the byte: then the per-group route.
  const uint8_t* super_levels(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const
    requires(int8_super_fold_offset<P>() >= 0)
  {
    constexpr auto& S = P::spec;
    constexpr std::size_t G = std::size_t(S.group_k), SK = std::size_t(S.super_k);
    constexpr int off = int8_super_fold_offset<P>(), z = S.min_form ? 0 : int(S.sym_zero);
    constexpr int dlo = min_level<P>() - z, dhi = max_level<P>() - z;
    if (k0 % SK != 0 || (k1 - k0) % SK != 0) return nullptr;
    const std::size_t groups = (k1 - k0) / G, g0 = L->group_of_k(k0, S);
    // every scale code c must keep c * (level - zero) + off a byte for every level: c in [cmin, cmax]
    constexpr auto fits = [](int c) { return c * dlo >= -off && c * dlo <= 255 - off && c * dhi >= -off && c * dhi <= 255 - off; };
    // (planes, int8_super_fold_split b: the codes c = sum_j b^j d_j, every digit d_j in [m, m + b)
    // fits, and the codes from m W to (m + b - 1) W, W = sum_j b^j, are written so)
    constexpr int split = int8_super_fold_split<P>(), planes = int8_super_fold_planes<P>();
    constexpr int dmin = int8_super_fold_digit_min<P>(), W = int8_super_fold_offset_weight<P>();
    static_assert(split == 0 || (fits(dmin) && fits(dmin + split - 1)), "a plane's digit leaves the byte");
    constexpr int cmin = split ? std::max(-128, dmin * W) : [&] {
      int c = -128;
      while (c <= 127 && !fits(c)) ++c;
      return c;
    }();
    constexpr int cmax = split ? std::min(127, (dmin + split - 1) * W) : [&] {
      int c = 127;
      while (c >= -128 && !fits(c)) --c;
      return c;
    }();
    if constexpr (cmin > cmax) {
      return nullptr;
    } else if constexpr (cmin > -128 || cmax < 127) {
      for (std::size_t g = 0; g < groups; ++g)
        if (!int8_within<cmin, cmax>(reinterpret_cast<const int8_t*>(data + L->scale_offset(t, g0 + g, S)))) return nullptr;
    }
    const uint8_t* lv = levels(t, k0, k1, s);
    uint8_t* out = s.steps.get();
    const auto fold = ks->fold_levels ? ks->fold_levels : &portable::fold_levels;
    for (std::size_t g = 0; g < groups; ++g) {
      const int8_t* cs = reinterpret_cast<const int8_t*>(data + L->scale_offset(t, g0 + g, S));
      if constexpr (split > 0) {  // plane j (the digits d_j) at out + 64 (k1 - k0) j
        // (d_j = (c - m) mod b + m, c <- (c - d_j) / b; in int16 lanes, which the compiler vectorizes)
        constexpr int shift = std::countr_zero(unsigned(split));
        alignas(64) int8_t dg[planes][64];
        alignas(64) int16_t c[64];
        for (int r = 0; r < 64; ++r) c[r] = cs[r];
        for (int j = 0; j < planes; ++j)
          for (int r = 0; r < 64; ++r) {
            const int16_t d = int16_t(((c[r] - dmin) & (split - 1)) + dmin);
            dg[j][r] = int8_t(d);
            c[r] = int16_t((c[r] - d) >> shift);
          }
        for (int j = 0; j < planes; ++j)
          fold(lv + g * G * 64, G / 4, dg[j], z, off, out + 64 * (k1 - k0) * j + g * G * 64);
      } else {
        fold(lv + g * G * 64, G / 4, cs, z, off, out + g * G * 64);
      }
    }
    for (std::size_t j = 0; j < (k1 - k0) / SK; ++j) {
      const std::size_t g = g0 + j * (SK / G);
      const uint8_t* sup = data + L->super_offset(t, g, S);
      for (int r = 0; r < 64; ++r) s.sw[j * 64 + r] = detail::load_f32(sup + 4 * r);
    }
    if constexpr (S.min_form) {
      if (int8_super_int_mins<P>(*ks)) {
        // the minimum codes as int16 pairs of groups, and each super-group's fp32 minimum scales
        const std::size_t supers = (k1 - k0) / SK;
        if (s.mins.size() < groups / 2 * 64) s.mins.resize(groups / 2 * 64);
        if (s.dmin.size() < supers * 64) s.dmin.resize(supers * 64);
        for (std::size_t p = 0; p < groups / 2; ++p) {
          const int8_t* c0 = reinterpret_cast<const int8_t*>(data + L->zero_offset(t, g0 + 2 * p, S));
          const int8_t* c1 = reinterpret_cast<const int8_t*>(data + L->zero_offset(t, g0 + 2 * p + 1, S));
          uint32_t* m = s.mins.data() + p * 64;
          for (int r = 0; r < 64; ++r) m[r] = uint32_t(uint16_t(int16_t(c0[r]))) | uint32_t(uint16_t(int16_t(c1[r]))) << 16;
        }
        for (std::size_t j = 0; j < supers; ++j) {
          const uint8_t* supm = data + L->super_min_offset(t, g0 + j * (SK / G), S);
          for (int r = 0; r < 64; ++r) s.dmin[j * 64 + r] = detail::load_f32(supm + 4 * r);
        }
      } else {
        alignas(64) float sc[64];
        for (std::size_t g = 0; g < groups; ++g) scale_zero_rows(t, g0 + g, sc, &s.swz[g * 64]);
      }
    }
    return out;
  }
  // int8: the largest level byte levels() gives (mk_int8_args::level_max)
  static constexpr int int8_level_max = detail::int8_level_max<P>();
  // int8, 1 or 2 columns: level 1 fused into the micro-kernel, or null (then levels() above)
  int8_fused_fn int8_fused(std::size_t nc) const { return nc >= 1 && nc <= 2 ? l1.int8_fused[nc - 1] : nullptr; }
  void run_int8_fused(int8_fused_fn f, std::size_t t, std::size_t k0, const mk_int8_args& a) const { f(data, *L, t, k0, a); }
  // Prefetch interface of a weight source (optional; the GEMM uses it when present): chunk
  // [k0, k1) of tile t reads plan.lines cache lines of packed bytes (its blocks and the scales
  // and zeros of the groups starting in it: one contiguous range per K band it touches,
  // packed_layout::k_range_bytes); prefetch_lines<To>(plan, l0, l1) requests lines [l0, l1) of
  // them. The plan is made once per chunk, so the calls that spread the requests do no shape
  // arithmetic.
  struct prefetch_plan_t {
    static constexpr int max_ranges = 4;
    const uint8_t* p[max_ranges];
    std::size_t end[max_ranges];  // lines of ranges 0..i
    int ranges;
    std::size_t lines;
  };
  prefetch_plan_t prefetch_plan(std::size_t t, std::size_t k0, std::size_t k1) const {
    prefetch_plan_t plan{{}, {}, 0, 0};
    for (std::size_t k = k0; k < k1 && plan.ranges < prefetch_plan_t::max_ranges;) {
      const std::size_t ke = std::min(k1, L->band_end_k(k));
      const auto [lo, hi] = L->k_range_bytes(t, k, ke);
      plan.p[plan.ranges] = data + lo;
      plan.lines += (hi - lo + 63) / 64;
      plan.end[plan.ranges++] = plan.lines;
      k = ke;
    }
    return plan;
  }
  template <prefetch_to To>
  void prefetch_lines(const prefetch_plan_t& plan, std::size_t l0, std::size_t l1) const {
    int r = 0;
    for (std::size_t l = l0; l < l1; ++l) {
      while (l >= plan.end[r]) ++r;
      prefetch_line<To>(plan.p[r] + 64 * (l - (r > 0 ? plan.end[r - 1] : 0)));
    }
  }
  // level 1 into the row-major code buffer (SIMD where the backend has it)
  void codes_rows(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
    if (l1.codes_rows) {
      l1.codes_rows(data, *L, t, k0, k1, s.codes.get(), s.ldc);
      return;
    }
    unpack_codes<P>(data, *L, t, k0, k1, s.codes.get(), s.ldc);
  }
  // scale and zero (min, for min-form formats) of the 64 rows of tile t in scale group g (fp16
  // or bf16 in the blob; the format's fixed zero for symmetric formats)
  void scale_zero_rows(std::size_t t, std::size_t g, float* sc, float* zz) const {
    uint16_t h[64];
    if constexpr (P::spec.super_k > 0) {  // int8 codes times the super-group's fp32 values
      const uint8_t* sup = data + L->super_offset(t, g, P::spec);
      const int8_t* cs = reinterpret_cast<const int8_t*>(data + L->scale_offset(t, g, P::spec));
      for (int r = 0; r < 64; ++r) sc[r] = detail::load_f32(sup + 4 * r) * float(cs[r]);
      if constexpr (P::spec.asymmetric) {
        const uint8_t* supm = data + L->super_min_offset(t, g, P::spec);
        const int8_t* cz = reinterpret_cast<const int8_t*>(data + L->zero_offset(t, g, P::spec));
        for (int r = 0; r < 64; ++r) zz[r] = detail::load_f32(supm + 4 * r) * float(cz[r]);
      } else {
        for (int r = 0; r < 64; ++r) zz[r] = P::spec.sym_zero;
      }
      return;
    }
    auto decode = [&](const uint8_t* p, float* out) {
      if constexpr (P::spec.bf16_params) {
        std::memcpy(h, p, 128);
        for (int r = 0; r < 64; ++r) out[r] = decode_param(P::spec, h[r]);
      } else {
        std::memcpy(h, p, 128);
        ks->halves(h, 64, out);
      }
    };
    decode(data + L->scale_offset(t, g, P::spec), sc);
    if constexpr (P::spec.asymmetric) {
      decode(data + L->zero_offset(t, g, P::spec), zz);
    } else {
      for (int r = 0; r < 64; ++r) zz[r] = P::spec.sym_zero;
    }
  }
  // int8: the scale of each row for the flush group starting at k, and the coefficient of the
  // group's activation sum it subtracts: scale * zero (w = s * (level - z)), or -min for
  // min-form formats (w = s * level + m)
  void group_scales(std::size_t t, std::size_t k, float* sw, float* swz) const {
    scale_zero_rows(t, L->group_of_k(k, P::spec), sw, swz);
    for (int r = 0; r < 64; ++r) swz[r] = P::spec.min_form ? -swz[r] : swz[r] * sw[r];
  }
  // the same in the step-major layout of the micro-kernels
  template <class T>
  const uint32_t* value_steps(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
    // bf16 where the set has step-major level 1 and level 2 for this code count: level 2 reads
    // level 1's step-major codes and writes the kernel's layout directly
    constexpr int E = code_count<P>();
    if constexpr (std::is_same_v<T, uint16_t> && (E == 2 || E == 4 || E == 8 || E == 16)) {
      constexpr int e = E == 2 ? 0 : E == 4 ? 1 : E == 8 ? 2 : 3;
      if (l1.codes_steps && ks->bf16_tables[e] && ks->bf16_steps[e]) return bf16_steps_direct<e>(t, k0, k1, s);
    }
    if constexpr (std::is_same_v<T, uint16_t> && E > 16 && levels_are_codes<P>()) {
      if (l1.codes_steps && ks->bf16_codes_steps) {
        l1.codes_steps(data, *L, t, k0, k1, s.codes.get());
        uint32_t* out = reinterpret_cast<uint32_t*>(s.steps.get());
        const std::size_t G = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) : L->K_pad;
        alignas(64) float sc[64], zz[64];
        for (std::size_t g0 = k0; g0 < k1;) {
          const std::size_t g1 = std::min(k1, (g0 / G + 1) * G);
          scale_zero_rows(t, L->group_of_k(g0), sc, zz);
          ks->bf16_codes_steps(s.codes.get() + (g0 - k0) * 64, (g1 - g0) / 4, sc, zz, P::spec.min_form,
                               out + (g0 - k0) / 2 * 64);
          g0 = g1;
        }
        return out;
      }
    }
    std::size_t ld = 0;
    const T* v = values<T>(t, k0, k1, s, ld);
    return values_to_steps(v, ld, k1 - k0, s, *ks);
  }
  // (e: log2 of the code count - 1)
  template <int e>
  const uint32_t* bf16_steps_direct(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s) const {
    constexpr int E = 2 << e;
    l1.codes_steps(data, *L, t, k0, k1, s.codes.get());
    uint32_t* out = reinterpret_cast<uint32_t*>(s.steps.get());
    const std::size_t G = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) : L->K_pad;
    using FT = format_traits<typename P::format>;
    alignas(64) uint16_t tab[64 * E];
    alignas(64) float sc[64], zz[64], lv[16] = {};
    for (int c = 0; c < E; ++c) lv[c] = FT::level(c);
    for (std::size_t g0 = k0; g0 < k1;) {
      const std::size_t g1 = std::min(k1, (g0 / G + 1) * G);
      scale_zero_rows(t, L->group_of_k(g0), sc, zz);
      ks->bf16_tables[e](lv, sc, zz, P::spec.min_form, tab);
      ks->bf16_steps[e](s.codes.get() + (g0 - k0) * 64, (g1 - g0) / 4, tab, out + (g0 - k0) / 2 * 64);
      g0 = g1;
    }
    return out;
  }
  // fp32 / bf16 values of rows 0..63 for k in [k0, k1)
  template <class T>
  const T* values(std::size_t t, std::size_t k0, std::size_t k1, dq_scratch& s, std::size_t& ld) const {
    codes_rows(t, k0, k1, s);
    T* out = reinterpret_cast<T*>(s.values.get());
    const std::size_t G = P::spec.group_k > 0 ? std::size_t(P::spec.group_k) : L->K_pad;
    using FT = format_traits<typename P::format>;
    alignas(64) T tbl[max_codes];
    alignas(64) float sc[64], zz[64], lv[16] = {};
    for (int c = 0; c < code_count<P>() && c < 16; ++c) lv[c] = FT::level(c);
    for (std::size_t g0 = k0; g0 < k1;) {
      const std::size_t g1 = std::min(k1, (g0 / G + 1) * G);
      scale_zero_rows(t, L->group_of_k(g0), sc, zz);
      const uint8_t* c = s.codes.get() + (g0 - k0);
      T* o = out + (g0 - k0);
      if constexpr (code_count<P>() <= 16) {
        if constexpr (std::is_same_v<T, float>)
          ks->group16_f32(c, s.ldc, lv, sc, zz, P::spec.min_form, g1 - g0, o, s.ldv);
        else
          ks->group16_bf16(c, s.ldc, lv, sc, zz, P::spec.min_form, g1 - g0, o, s.ldv);
      } else if constexpr (levels_are_codes<P>()) {
        if constexpr (std::is_same_v<T, float>)
          (ks->group_codes_f32 ? ks->group_codes_f32 : &portable::group_codes<float>)(
              c, s.ldc, lv, sc, zz, P::spec.min_form, g1 - g0, o, s.ldv);
        else
          (ks->group_codes_bf16 ? ks->group_codes_bf16 : &portable::group_codes<uint16_t>)(
              c, s.ldc, lv, sc, zz, P::spec.min_form, g1 - g0, o, s.ldv);
      } else if (g1 - g0 < std::size_t(code_count<P>())) {
        // a group shorter than its table (8-bit codes, groups of 32 or 64): each value on its own,
        // the table's arithmetic (level2_table) without the unused entries
        for (int r = 0; r < 64; ++r) level2_values<P, T>(sc[r], zz[r], c + r * s.ldc, g1 - g0, o + r * s.ldv);
      } else {
        for (int r = 0; r < 64; ++r) {
          level2_table<P, T>(sc[r], zz[r], tbl);
          lookup_values(c + r * s.ldc, g1 - g0, tbl, o + r * s.ldv);
        }
      }
      g0 = g1;
    }
    ld = s.ldv;
    return out;
  }
};

// Does the weight source have the prefetch interface (prefetch_plan, prefetch_lines)?
template <class Src>
concept prefetching_source = requires(const Src& src, std::size_t n) {
  src.template prefetch_lines<prefetch_to::l1>(src.prefetch_plan(n, n, n), n, n);
  src.template prefetch_lines<prefetch_to::l2>(src.prefetch_plan(n, n, n), n, n);
  { src.prefetch_plan(n, n, n).lines } -> std::convertible_to<std::size_t>;
};
// All lines of chunk c into L2, if the source can prefetch and c is a chunk (c.t != no_tile).
template <class Src>
void prefetch_chunk(const Src& src, const dq_geometry::chunk& c) {
  if constexpr (prefetching_source<Src>) {
    if (c.t != dq_geometry::no_tile) {
      const auto plan = src.prefetch_plan(c.t, c.k0, c.k1);
      src.template prefetch_lines<prefetch_to::l2>(plan, 0, plan.lines);
    }
  }
}
// A chunk's lines requested a part per call (the GEMM's micro-kernel calls of the chunk before)
template <class Src>
struct spread_prefetch {
  const Src& src;
  decltype(std::declval<const Src&>().prefetch_plan(0, 0, 0)) plan{};
  std::size_t next = 0, per_call = 0;
  spread_prefetch(const Src& s, const dq_geometry::chunk& c, std::size_t calls) : src(s) {
    if (c.t != dq_geometry::no_tile) {
      plan = src.prefetch_plan(c.t, c.k0, c.k1);
      per_call = (plan.lines + calls - 1) / std::max<std::size_t>(calls, 1);
    }
  }
  void step() {
    const std::size_t l1 = std::min(plan.lines, next + per_call);
    if (next < l1) src.template prefetch_lines<prefetch_to::l1>(plan, next, l1);
    next = l1;
  }
};

}  // namespace lutkit::detail
