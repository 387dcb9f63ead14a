// lutkit — the tiling spec's hosted half: the checked packed_layout every hosted caller
// constructs, and the 2-byte group parameter codec. The spec itself, its element map and every
// offset are in tiling_spec.hpp (freestanding, shared with the Hexagon kernels).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "bf16.hpp"
#include "error.hpp"
#include "half.hpp"
#include "limits.hpp"
#include "tiling_spec.hpp"

namespace lutkit {

// The group parameters (scale; zero or min) of a packed blob: fp16, bf16 for formats with
// bf16_params, fp32 for formats with f32_params (spec.param_bytes() bytes a slot). Every reader
// and writer of those slots goes through load_param and store_param; decode_param and
// encode_param are their 2-byte halves.
inline float decode_param(const tiling_spec& s, uint16_t bits) { return s.bf16_params ? bf16_to_f32(bits) : f16_to_f32(bits); }
inline uint16_t encode_param(const tiling_spec& s, float v) { return s.bf16_params ? f32_to_bf16(v) : f32_to_f16(v); }
// the value slot i of the parameter array at p holds
inline float load_param(const tiling_spec& s, const uint8_t* p, std::size_t i = 0) {
  if (s.f32_params) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return decode_param(s, h);
}
// v as slot i of the parameter array at p stores it (rounded to fp16 / bf16 for 2-byte slots)
inline void store_param(const tiling_spec& s, uint8_t* p, std::size_t i, float v) {
  if (s.f32_params) {
    std::memcpy(p + 4 * i, &v, 4);
    return;
  }
  const uint16_t h = encode_param(s, v);
  std::memcpy(p + 2 * i, &h, 2);
}
// v as the slot stores it
inline float round_param(const tiling_spec& s, float v) { return s.f32_params ? v : decode_param(s, encode_param(s, v)); }

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
