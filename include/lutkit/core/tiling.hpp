// lutkit — the tiling spec's hosted half: the checked packed_layout every hosted caller
// constructs, and the 2-byte group parameter codec. The spec itself, its element map and every
// offset are in tiling_spec.hpp (freestanding, shared with the Hexagon kernels).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <utility>

#include "bf16.hpp"
#include "error.hpp"
#include "half.hpp"
#include "limits.hpp"
#include "tiling_spec.hpp"

namespace lutkit {

// The group parameters (scale; zero or min) of a packed blob: fp16 slots, bf16 for formats with
// bf16_params (decode_param / encode_param, load_param / store_param: slot i of the array at p);
// for the super-group formats (super_params: the K-quants) an int8 code per group and row times
// the row's fp32 super-scale (super-minimum) of the group's super-group. Every reader and writer
// of a blob's parameters goes through group_scale / group_zero and store_group_params.
inline float decode_param(const tiling_spec& s, uint16_t bits) { return s.bf16_params ? bf16_to_f32(bits) : f16_to_f32(bits); }
inline uint16_t encode_param(const tiling_spec& s, float v) { return s.bf16_params ? f32_to_bf16(v) : f32_to_f16(v); }
inline float load_param(const tiling_spec& s, const uint8_t* p, std::size_t i = 0) {
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return decode_param(s, h);
}
inline void store_param(const tiling_spec& s, uint8_t* p, std::size_t i, float v) {
  const uint16_t h = encode_param(s, v);
  std::memcpy(p + 2 * i, &h, 2);
}
// v as the blob stores it: rounded to fp16 / bf16 (super-group formats: exact, or refused when packed)
inline float round_param(const tiling_spec& s, float v) { return s.super_k > 0 ? v : decode_param(s, encode_param(s, v)); }

namespace detail {
inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}
// super-group formats: the int8 code c with sup * c == v (exactly; v = 0: code 0, or +-1 when sup
// is a zero, keeping v's sign as llama.cpp's product d * sc does), else an error
inline int8_t super_code(float v, float sup, const char* what) {
  if (v == 0.f) return sup != 0.f ? 0 : (std::signbit(v) != std::signbit(sup) ? -1 : 1);
  const float c = v / sup;
  require(std::isfinite(c) && c == std::nearbyint(c) && c >= -128.f && c <= 127.f && sup * c == v, what, " ", v,
          " is not its super-group's ", sup, " times an int8 code");
  return int8_t(c);
}
}  // namespace detail

// row r of tile t: its scale and its zero (the minimum for min-form formats; the format's zero for
// symmetric ones) in group g, as every kernel reads them
inline float group_scale(const layout_geometry& L, const uint8_t* data, std::size_t t, std::size_t g, std::size_t r) {
  const tiling_spec& s = L.spec;
  if (s.super_k > 0)
    return detail::load_f32(data + L.super_offset(t, g) + 4 * r) * float(int8_t(data[L.scale_offset(t, g) + r]));
  return load_param(s, data + L.scale_offset(t, g), r);
}
inline float group_zero(const layout_geometry& L, const uint8_t* data, std::size_t t, std::size_t g, std::size_t r) {
  const tiling_spec& s = L.spec;
  if (!s.asymmetric) return s.sym_zero;
  if (s.super_k > 0)
    return detail::load_f32(data + L.super_min_offset(t, g) + 4 * r) * float(int8_t(data[L.zero_offset(t, g) + r]));
  return load_param(s, data + L.zero_offset(t, g), r);
}
// stores row r of tile t's scale and zero of group g; super-group formats: with the row's super-
// scale sup and super-minimum sup_min of the group's super-group, of which they must be int8
// multiples
inline void store_group_params(const layout_geometry& L, uint8_t* data, std::size_t t, std::size_t g, std::size_t r,
                               float scale, float zero, float sup = 0.f, float sup_min = 0.f) {
  const tiling_spec& s = L.spec;
  if (s.super_k > 0) {
    data[L.scale_offset(t, g) + r] = uint8_t(detail::super_code(scale, sup, "a group scale"));
    std::memcpy(data + L.super_offset(t, g) + 4 * r, &sup, 4);
    if (s.asymmetric) {
      data[L.zero_offset(t, g) + r] = uint8_t(detail::super_code(zero, sup_min, "a group minimum"));
      std::memcpy(data + L.super_min_offset(t, g) + 4 * r, &sup_min, 4);
    }
    return;
  }
  store_param(s, data + L.scale_offset(t, g), r, scale);
  if (s.asymmetric) store_param(s, data + L.zero_offset(t, g), r, zero);
}

// Every offset of a packed blob of M x K weights (layout_geometry), for a shape checked here:
// within the size limits, K a multiple of the group.
struct packed_layout : layout_geometry {
  packed_layout() = default;
  packed_layout(const tiling_spec& s, std::size_t m, std::size_t k) : layout_geometry(checked(s, m, k), m, k) {}

  // [first, last) bytes of k range [k0, k1) of tile t (k0, k1 on block boundaries, inside one K
  // band: k1 <= band_end_k(k0)): its blocks and the scales and zeros of every group that starts
  // inside it, one contiguous range (a panel holds its blocks in k order, each group's parameters
  // first). The parameters of a group begun before k0 are not in it.
  std::pair<std::size_t, std::size_t> k_range_bytes(std::size_t t, std::size_t k0, std::size_t k1) const {
    const std::size_t b0 = k0 / std::size_t(spec.block_k), b1 = (k1 + spec.block_k - 1) / std::size_t(spec.block_k);
    const std::size_t lo = b0 % blocks_per_group == 0 ? scale_offset(t, group_of_block(b0)) : block_offset(t, b0);
    return {lo, block_offset(t, b1 - 1) + std::size_t(spec.block_bytes())};
  }
  // the end (in k) of the K band holding activation k0: a k range crossing it is two byte ranges
  std::size_t band_end_k(std::size_t k0) const {
    return band_end_block(band_of_block(k0 / std::size_t(spec.block_k))) * std::size_t(spec.block_k);
  }
 private:
  static const tiling_spec& checked(const tiling_spec& s, std::size_t m, std::size_t k) {
    detail::check_matrix_shape(m, k, "packed layout");
    if (s.group_k > 0)
      detail::require(k % std::size_t(s.group_k) == 0,
                      "K (", k, ") is not a multiple of the group size (", s.group_k, ")");
    return s;
  }
};

}  // namespace lutkit
