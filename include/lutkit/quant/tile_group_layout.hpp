// lutkit — tile-group layout: the order in which a matrix-unit kernel reads an M x K weight
// matrix, and the quantization groups / super-groups defined on that order.
//
// Source: [TTS-NPU] §5.1, Fig. 4, 6, 7 (docs/references.md). The Hexagon HMX fp16 unit works
// on 32 x 32 tiles; a weight tile is a [32 k] x [32 output rows] slice of W^T, stored so that
// every 2 consecutive k-rows are interleaved (the 2 x 32 sub-matrix is stored transposed, i.e.
// the 2 k values of one output row are adjacent). Weight tiles are stored "column-major" over
// the tile grid: for one block of 32 output rows, its K/32 tiles are consecutive (the unit does
// tile-level inner products along K).
//
// A quantization group is `group` CONSECUTIVE weights of that read order (32: 2 k x 16 output
// rows, not 32 consecutive k of one row), and a super-group is `super_groups` consecutive groups
// (8 x 32 = 256 weights: 8 k x 32 rows; 4-bit codes = 128 bytes = one HVX register).
//
// lutkit's matrix is row-major M x K, row m = output channel. This header is the single source
// of the (m, k) <-> read-position arithmetic; the tile-group quantizer (quant/tile_group.hpp)
// and its tests take every index from here. docs/tile_group.md describes it in prose and
// explains why it is NOT a row/column permutation of the existing group<G> packing.
#pragma once
#include <cstddef>
#include <vector>

#include "../core/error.hpp"
#include "../core/limits.hpp"

namespace lutkit {

struct tile_group_geometry {
  int tile = 32;          // matrix-unit tile edge (HMX fp16: 32 x 32, 2 KiB)
  int interleave = 2;     // k-rows interleaved inside a tile (HMX: pairs of rows)
  int group = 32;         // weights per quantization group, consecutive in read order
  int super_groups = 8;   // groups per super-group (8 x 32 = 256 weights)

  constexpr int tile_elems() const { return tile * tile; }
  constexpr int stripe_elems() const { return tile * interleave; }     // one interleaved k-stripe
  constexpr int group_rows() const { return group / interleave; }      // output rows per group
  constexpr int super_group_elems() const { return group * super_groups; }
  constexpr bool valid() const {
    return tile > 0 && interleave > 0 && tile % interleave == 0 && group % interleave == 0 &&
           tile % group_rows() == 0 && super_groups > 0 && tile_elems() % super_group_elems() == 0;
  }
};

// The geometry of the paper: HMX fp16 tiles, 2-row interleave, groups of 32, super-groups of 8.
inline constexpr tile_group_geometry hmx_fp16_tile_groups{};
static_assert(hmx_fp16_tile_groups.valid() && hmx_fp16_tile_groups.group_rows() == 16 &&
              hmx_fp16_tile_groups.super_group_elems() == 256);

// The shape-dependent part: read position of every (m, k) of an M x K matrix.
struct tile_group_layout {
  tile_group_geometry geo{};
  std::size_t M = 0, K = 0;
  std::size_t row_tiles = 0, k_tiles = 0;

  tile_group_layout() = default;
  tile_group_layout(std::size_t m, std::size_t k, tile_group_geometry g = hmx_fp16_tile_groups)
      : geo(g), M(m), K(k) {
    detail::require(g.valid(), "tile_group_layout: invalid geometry");
    detail::check_matrix_shape(m, k, "tile_group_layout");
    detail::require(m % std::size_t(g.tile) == 0 && k % std::size_t(g.tile) == 0, "tile_group_layout: M (", m,
                    ") and K (", k, ") must be multiples of the tile edge (", g.tile, ")");
    row_tiles = m / std::size_t(g.tile);
    k_tiles = k / std::size_t(g.tile);
  }

  std::size_t size() const { return M * K; }
  std::size_t groups() const { return size() / std::size_t(geo.group); }
  std::size_t super_groups() const { return size() / std::size_t(geo.super_group_elems()); }

  // (m, k) -> position in the kernel's read order.
  //   tile  = (m / T) * (K / T) + k / T              (K-tiles of a row block are consecutive)
  //   inner = (kk / I) * (T * I) + mm * I + kk % I   (kk = k % T, mm = m % T, I = interleave)
  std::size_t position(std::size_t m, std::size_t k) const {
    const std::size_t T = std::size_t(geo.tile), I = std::size_t(geo.interleave);
    const std::size_t tile = (m / T) * k_tiles + k / T;
    const std::size_t kk = k % T, mm = m % T;
    return tile * T * T + (kk / I) * (T * I) + mm * I + kk % I;
  }
  // the inverse of position()
  void coords(std::size_t p, std::size_t& m, std::size_t& k) const {
    const std::size_t T = std::size_t(geo.tile), I = std::size_t(geo.interleave);
    const std::size_t tile = p / (T * T), inner = p % (T * T);
    const std::size_t stripe = inner / (T * I), within = inner % (T * I);
    m = (tile / k_tiles) * T + within / I;
    k = (tile % k_tiles) * T + stripe * I + within % I;
  }
  std::size_t group_of(std::size_t m, std::size_t k) const { return position(m, k) / std::size_t(geo.group); }
  std::size_t super_group_of(std::size_t m, std::size_t k) const {
    return position(m, k) / std::size_t(geo.super_group_elems());
  }
};

// out[position(m, k)] = w[m*K + k]: W (row-major M x K) in the kernel's read order.
template <class T>
std::vector<T> permute_to_tile_order(const T* w, const tile_group_layout& L) {
  detail::require(w != nullptr, "permute_to_tile_order: null pointer");
  std::vector<T> out(L.size());
  for (std::size_t m = 0; m < L.M; ++m)
    for (std::size_t k = 0; k < L.K; ++k) out[L.position(m, k)] = w[m * L.K + k];
  return out;
}
// the inverse: read order -> row-major M x K
template <class T>
std::vector<T> permute_from_tile_order(const T* p, const tile_group_layout& L) {
  detail::require(p != nullptr, "permute_from_tile_order: null pointer");
  std::vector<T> out(L.size());
  for (std::size_t i = 0; i < L.size(); ++i) {
    std::size_t m, k;
    L.coords(i, m, k);
    out[m * L.K + k] = p[i];
  }
  return out;
}

}  // namespace lutkit
