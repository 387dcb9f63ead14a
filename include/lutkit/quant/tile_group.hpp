// lutkit — tile-group quantization ([TTS-NPU] §5.1.1-5.1.2, docs/references.md).
//
// Round-to-nearest quantization whose groups are `group` consecutive weights of the order a
// matrix-unit kernel reads (quant/tile_group_layout.hpp): with the HMX geometry a group is 2 k x
// 16 output rows, a super-group 8 groups = 256 weights. The pipeline of the paper: permute W
// into the read order, quantize group by group in that order, then lay the groups out as
// super-groups (codes of 256 weights in one 128-byte vector, then the 8 scales).
//
// Each group is fitted by exactly the same rule as lutkit::quantize (detail::fit_group /
// code_of): symmetric = q4_0-style (largest |w| onto the most negative level), asymmetric =
// min/max; scales and zeros are fp16-representable. So the tile-group vs conventional MSE
// comparison (tile_group_vs_conventional) differs only in which weights share a group.
//
// Formats: fmt::uint_sym<B>, fmt::uint_asym<B>, B = 2..4 (the paper uses Q4_0, i.e. sym 4-bit).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../core/half.hpp"
#include "tile_group_layout.hpp"
#include "quant.hpp"

namespace lutkit {

namespace detail {
// the policy whose fitting rule the tile-group quantizer borrows (the group size is irrelevant:
// fit_group receives the group length explicitly)
template <class Fmt>
using tile_group_fit_policy = policy<Fmt, group<32>, table::lut4<int8_t, false>>;
}  // namespace detail

template <class Fmt>
struct tile_group_quantized {
  using traits = format_traits<Fmt>;
  static_assert(!traits::is_ternary && traits::bits >= 2 && traits::bits <= 4,
                "tile-group quantization: integer formats with 2..4 bits");

  tile_group_layout layout{};
  std::vector<uint8_t> codes;   // size() codes, in READ order (index = layout.position(m, k))
  std::vector<float> scales;    // one per group (group g = read positions [g*G, (g+1)*G)), fp16 values
  std::vector<float> zeros;     // one per group, asymmetric formats only, fp16 values

  std::size_t M() const { return layout.M; }
  std::size_t K() const { return layout.K; }
  float group_scale(std::size_t g) const { return scales[g]; }
  float group_zero(std::size_t g) const { return traits::asymmetric ? zeros[g] : traits::sym_zero; }
  // element access by matrix coordinates (row m = output channel, k = reduction index)
  uint8_t code(std::size_t m, std::size_t k) const { return codes[layout.position(m, k)]; }
  float scale(std::size_t m, std::size_t k) const { return group_scale(layout.group_of(m, k)); }
  float zero(std::size_t m, std::size_t k) const { return group_zero(layout.group_of(m, k)); }
  // THE dequantized value: format_traits<Fmt>::value(scale, zero, code), in float
  float weight(std::size_t m, std::size_t k) const {
    const std::size_t p = layout.position(m, k), g = p / std::size_t(layout.geo.group);
    return traits::value(group_scale(g), group_zero(g), codes[p]);
  }
  // all weights, row-major M x K
  std::vector<float> dequantize() const {
    std::vector<float> out(layout.size());
    const std::size_t G = std::size_t(layout.geo.group);
    for (std::size_t p = 0; p < layout.size(); ++p) {
      std::size_t m, k;
      layout.coords(p, m, k);
      out[m * layout.K + k] = traits::value(group_scale(p / G), group_zero(p / G), codes[p]);
    }
    return out;
  }
};

// Tile-group RTN quantization of row-major M x K float weights (M, K multiples of geo.tile).
template <class Fmt>
tile_group_quantized<Fmt> quantize_tile_group(const float* w, std::size_t M, std::size_t K,
                                              tile_group_geometry geo = hmx_fp16_tile_groups) {
  using P = detail::tile_group_fit_policy<Fmt>;
  detail::require(w != nullptr, "quantize_tile_group: null weight pointer");
  tile_group_quantized<Fmt> q;
  q.layout = tile_group_layout(M, K, geo);
  for (std::size_t i = 0; i < M * K; ++i)
    detail::require(std::isfinite(w[i]), "quantize_tile_group: weight ", i, " is not finite");
  // 1. permute into the read order; 2. quantize consecutive groups of that order
  const std::vector<float> perm = permute_to_tile_order(w, q.layout);
  const std::size_t G = std::size_t(geo.group), groups = q.layout.groups();
  detail::assign_bulk(q.codes, q.layout.size(), uint8_t(0));
  detail::assign_bulk(q.scales, groups, 0.f);
  if (format_traits<Fmt>::asymmetric) detail::assign_bulk(q.zeros, groups, 0.f);
  for (std::size_t g = 0; g < groups; ++g) {
    const float* wg = perm.data() + g * G;
    float s = 0, z = 0;
    detail::fit_group<P>(wg, G, 1, s, z);
    q.scales[g] = s;
    if (format_traits<Fmt>::asymmetric) q.zeros[g] = z;
    detail::codes_of<P>(wg, G, s, z, &q.codes[g * G]);
  }
  return q;
}

// ---------------------------------------------------------------- super-group storage (Fig. 7)
// One super-group = super_groups consecutive groups (E = 256 weights with the HMX geometry):
//   codes   E*B/8 bytes: byte i holds read positions i + j*(E*B/8) at bit j*B, j = 0 .. 8/B-1
//           (4-bit: low nibble = weight i, high nibble = weight i+128 of the super-group — one
//           mask or shift yields 128 consecutive weights, the vlut16 index register)
//   scales  super_groups fp16 values (group order)
//   zeros   super_groups fp16 values (asymmetric formats only)
// Super-groups follow each other in read order (array of structures, as in the paper).
template <class Fmt>
constexpr std::size_t super_group_bytes(const tile_group_geometry& geo) {
  return std::size_t(geo.super_group_elems()) * format_traits<Fmt>::bits / 8 +
         std::size_t(geo.super_groups) * 2 * (format_traits<Fmt>::asymmetric ? 2 : 1);
}
// Byte offsets inside one super-group (the only place they are computed): read position i of
// the super-group (0 .. E-1) is bits [shift, shift + B) of byte code_byte(i); the fp16 scale and
// zero of its group gi (0 .. super_groups-1).
template <class Fmt>
struct super_group_map {
  static constexpr int B = format_traits<Fmt>::bits;
  std::size_t E, cb, SG;
  explicit constexpr super_group_map(const tile_group_geometry& geo)
      : E(std::size_t(geo.super_group_elems())), cb(E * B / 8), SG(std::size_t(geo.super_groups)) {}
  constexpr std::size_t code_byte(std::size_t i) const { return i % cb; }
  constexpr int code_shift(std::size_t i) const { return int(i / cb) * B; }
  constexpr std::size_t scale_offset(std::size_t gi) const { return cb + 2 * gi; }
  constexpr std::size_t zero_offset(std::size_t gi) const { return cb + 2 * SG + 2 * gi; }
};

template <class Fmt>
std::vector<uint8_t> pack_super_groups(const tile_group_quantized<Fmt>& q) {
  constexpr int B = format_traits<Fmt>::bits;
  static_assert(8 % B == 0, "super-group packing: 2- or 4-bit codes");
  const tile_group_geometry& geo = q.layout.geo;
  const super_group_map<Fmt> map(geo);
  const std::size_t E = map.E, SG = map.SG;
  const std::size_t per = super_group_bytes<Fmt>(geo);
  detail::require(q.codes.size() == q.layout.size(), "pack_super_groups: inconsistent codes");
  std::vector<uint8_t> out(q.layout.super_groups() * per, 0);
  for (std::size_t s = 0; s < q.layout.super_groups(); ++s) {
    uint8_t* d = out.data() + s * per;
    for (std::size_t i = 0; i < E; ++i) d[map.code_byte(i)] |= uint8_t(q.codes[s * E + i] << map.code_shift(i));
    for (std::size_t g = 0; g < SG; ++g) {
      const uint16_t h = f32_to_f16(q.scales[s * SG + g]);
      std::memcpy(d + map.scale_offset(g), &h, 2);
      if (format_traits<Fmt>::asymmetric) {
        const uint16_t z = f32_to_f16(q.zeros[s * SG + g]);
        std::memcpy(d + map.zero_offset(g), &z, 2);
      }
    }
  }
  (void)B;
  return out;
}

template <class Fmt>
tile_group_quantized<Fmt> unpack_super_groups(const uint8_t* bytes, std::size_t n, std::size_t M, std::size_t K,
                                              tile_group_geometry geo = hmx_fp16_tile_groups) {
  constexpr int B = format_traits<Fmt>::bits;
  static_assert(8 % B == 0, "super-group packing: 2- or 4-bit codes");
  detail::require(bytes != nullptr, "unpack_super_groups: null pointer");
  tile_group_quantized<Fmt> q;
  q.layout = tile_group_layout(M, K, geo);
  const super_group_map<Fmt> map(geo);
  const std::size_t E = map.E, SG = map.SG;
  const std::size_t per = super_group_bytes<Fmt>(geo);
  detail::require(n == q.layout.super_groups() * per, "unpack_super_groups: ", n, " bytes, expected ",
                  q.layout.super_groups() * per, " for ", M, " x ", K);
  detail::assign_bulk(q.codes, q.layout.size(), uint8_t(0));
  detail::assign_bulk(q.scales, q.layout.groups(), 0.f);
  if (format_traits<Fmt>::asymmetric) detail::assign_bulk(q.zeros, q.layout.groups(), 0.f);
  for (std::size_t s = 0; s < q.layout.super_groups(); ++s) {
    const uint8_t* d = bytes + s * per;
    for (std::size_t i = 0; i < E; ++i)
      q.codes[s * E + i] = uint8_t((d[map.code_byte(i)] >> map.code_shift(i)) & ((1u << B) - 1u));
    for (std::size_t g = 0; g < SG; ++g) {
      uint16_t h;
      std::memcpy(&h, d + map.scale_offset(g), 2);
      q.scales[s * SG + g] = f16_to_f32(h);
      detail::require(std::isfinite(q.scales[s * SG + g]), "unpack_super_groups: scale is not finite (super-group ", s,
                      ", group ", g, ")");
      if (format_traits<Fmt>::asymmetric) {
        std::memcpy(&h, d + map.zero_offset(g), 2);
        q.zeros[s * SG + g] = f16_to_f32(h);
        detail::require(std::isfinite(q.zeros[s * SG + g]), "unpack_super_groups: zero is not finite (super-group ", s,
                        ", group ", g, ")");
      }
    }
  }
  return q;
}

// ---------------------------------------------------------------- comparison with group<G>
inline double reconstruction_mse(const float* w, const float* w_hat, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = double(w[i]) - double(w_hat[i]);
    s += d * d;
  }
  return n ? s / double(n) : 0.0;
}

// Conventional grouping: lutkit::quantize with group<G> (G consecutive k of one row), dequantized
// through the same value hook; row-major M x K.
template <class Fmt, int G>
std::vector<float> conventional_reconstruction(const float* w, std::size_t M, std::size_t K) {
  using P = policy<Fmt, group<G>, table::lut4<int8_t, false>>;
  const quantized<P> q = quantize<P>(w, M, K);
  std::vector<float> out(M * K);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) {
      const std::size_t g = k / std::size_t(G);
      out[m * K + k] = format_traits<Fmt>::value(q.scale(m, g), q.zero(m, g), q.codes[m * K + k]);
    }
  return out;
}

struct grouping_mse {
  double tile_group = 0;     // tile-group quantization, groups of geo.group weights
  double conventional = 0;   // group<geo.group> along K
  double ratio() const { return conventional > 0 ? tile_group / conventional : 1.0; }
};

// Reconstruction MSE of both groupings on the same weights, same number of weights per group.
template <class Fmt>
grouping_mse tile_group_vs_conventional(const float* w, std::size_t M, std::size_t K,
                                        tile_group_geometry geo = hmx_fp16_tile_groups) {
  grouping_mse r;
  const auto tg = quantize_tile_group<Fmt>(w, M, K, geo).dequantize();
  r.tile_group = reconstruction_mse(w, tg.data(), M * K);
  std::vector<float> cv;
  switch (geo.group) {
    case 32: cv = conventional_reconstruction<Fmt, 32>(w, M, K); break;
    case 64: cv = conventional_reconstruction<Fmt, 64>(w, M, K); break;
    case 128: cv = conventional_reconstruction<Fmt, 128>(w, M, K); break;
    case 256: cv = conventional_reconstruction<Fmt, 256>(w, M, K); break;
    default: detail::require(false, "tile_group_vs_conventional: group size ", geo.group, " has no group<G> policy");
  }
  r.conventional = reconstruction_mse(w, cv.data(), M * K);
  return r;
}

}  // namespace lutkit
