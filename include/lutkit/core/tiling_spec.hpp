// lutkit — THE tiling spec: the single source of truth for the packed weight layout.
//
// The packer, the unpacker, the LUT-GEMV kernels (Highway, xsimd, HVX), the dequant kernels, the
// table builder, the references' error bounds and the tests take every offset from here; nothing
// else computes a stride. docs/tiling.md describes the same layout in prose. This header is
// freestanding (no hosted header, no exceptions): the Hexagon kernels include it; tiling.hpp adds
// the checked packed_layout the hosted code constructs.
//
// The target descriptor gives rows per tile (= bytes per chunk) and the lookup order.
// Vocabulary (see docs/tiling.md for the byte-level picture):
//   tile        rows_per_tile output rows (64; 128 for vlut16 targets). M is padded to a
//               multiple with zero-code rows.
//   step        k_per_step consecutive activations that form one 4-bit table index
//               (4 for bit-plane formats -> 16 entries; 3 for ternary -> 14 mirrored entries).
//   chunk       one byte per row of the tile, read by one register load (64 bytes = one 512-bit
//               load, or two 256-bit / four 128-bit loads; 128 bytes = one HVX vector).
//   pshufb order (64-row tiles):
//     paired chunk  (step j, planes 2p and 2p+1): byte 2*(r%32)+h, nibble r/32 holds the index of
//                   row r, plane 2p+h. pmaddubs with weights (2^2p, 2^(2p+1)) combines the planes.
//     lone chunk    (steps j, j+1, one plane; ternary: the mirrored index): bytes 32*s + q(r),
//                   nibble r/32, for step j+s, where q(r) = 2*(r%16) + (r%32)/16.
//     step pair     [paired chunks: for plane pair p: step j, step j+1] [lone chunk]
//                   [ternary: 16 sign bytes, bit 64*nib + 32*s + q(r)].
//   plane orders: vlut16 (128-row tiles) and sve (64-row tiles):
//     plane chunk   (steps j, j+1, plane p; ternary: the mirrored index): byte b(r), nibble s holds
//                   step j+s. vlut16: b(r) = 2*(r%64) + r/64 (vlut16 sends byte 2i to lane i of its
//                   low output vector and byte 2i+1 to lane i of the high one: rows 0..63 and
//                   64..127, in order). sve: b(r) = r (TBL keeps lanes in place, so a vector of any
//                   length reads whole rows).
//     step pair     [plane 0 chunk] ... [plane planes-1 chunk]
//     ternary signs one chunk per 4 step pairs after the block's index chunks: bit 2*(spi%4) + s
//                   of row r's byte b(r).
//   whole codes (formats the LUT-GEMV never runs: 8 bits, codebooks, Q4NX; pshufb order): a step
//               pair holds every row's 8 codes whole, as the int8 kernels read them. 8 bits:
//               byte 256 s + 4 r + i = row r's code of activation i of step j + s; 4 bits: byte
//               4 r + i, nibble s (low nibble step j). planes x 64 bytes, as the bit planes'.
//   mmul order (target::aie, every non-ternary format as whole codes): a step pair (8 k) of a
//               64-row tile is 8 atoms, one per row octet o = r / 8, in the B-operand order of
//               the AIE int8 x int4 / int8 x int8 mmul: element (k, n = r mod 8) of atom o at
//               nibble 8 k + n (4-bit codes, 32-byte atoms: byte 32 o + 4 k + n / 2, nibble
//               n mod 2; formats of 1-3 bits are stored as 4-bit codes) or byte 64 o + 8 k + n
//               (8 bits, 64-byte atoms), k = 4 s + i. 256 (512) bytes per step pair.
//   block       block_k activations: the table-quantization granule and the int16 accumulation
//               interval; its length is bounded at compile time so int16 sums cannot overflow.
//   group       group_k activations sharing a scale (and zero): [fp16 scale x rows]
//               [fp16 zero x rows, asymmetric only] [blocks ...]; bf16 slots for the formats
//               with bf16_params (param_bytes); int8 codes for super-group formats (below).
//   super-group super_k = 256 activations of the formats with super_params (the K-quants): a
//               group's slots hold int8 codes (scale code, then minimum code), and each super-
//               group of a tile has an entry [fp32 super-scale x rows][fp32 super-minimum x
//               rows, min-form only] in the panel, before the super-group's first group (in the
//               stream a kernel reads: no access outside it). Scale = super-scale x scale code,
//               minimum = super-minimum x minimum code, both exact in fp32 (llama.cpp's d sc and
//               -(dmin m)).
//   band        band_blocks consecutive blocks of K (whole groups, whole super-groups for the
//               K-quants, or whole int8 flush groups without groups; at most band_k_max
//               activations, band_table_bytes of tables and band_panel_bytes per panel, at least
//               one group); a tile's part of a band is its panel: the band's groups (or, where a
//               group spans several bands, its blocks; the group's parameters in the panel of its
//               first block), in k order.
//   packed      [band 0: tile 0's panel, tile 1's panel, ...][band 1: ...] ... ; per_channel /
//               per_tensor have one group spanning the padded K. Whole-code formats have one band.
#pragma once
#include <cstddef>
#include <cstdint>

#include "compiler.hpp"
#include "concepts.hpp"
#include "target.hpp"

namespace lutkit {

struct tiling_spec {
  // ---- from the format, group shape and table layout
  int bits = 0;
  bool ternary = false;
  bool asymmetric = false;
  bool per_tensor = false;
  int planes = 0;
  int k_per_step = 0;
  int group_k = 0;        // 0: one group spanning the padded K
  int entry_bits = 8;     // table entries: 8 or 16 bits
  int whole_planes = 0;   // int16 entries: the top planes that sum both bytes (0: every plane; table::lut4)
  bool mirror = false;
  int plane_weight_sum = 0;
  float sym_zero = 0;
  bool lut = true;        // format_traits::lut_gemv_capable: the int16 bound applies
  bool min_form = false;     // format_traits::min_form: the zero slot holds an additive minimum
  bool bf16_params = false;  // format_traits::bf16_params: scale and zero/min slots are bf16
  int super_k = 0;           // format_traits::super_params: 256 (int8 group codes, fp32 super-scales)
  // ---- tunables / derived
  int rows_per_tile = 64;   // from the target descriptor (tile_rows); a chunk has one byte per row
  int chunk_bytes = 64;
  lookup_order order = lookup_order::pshufb;  // from the target descriptor
  int steps_per_block = 0;
  int block_k = 0;
  int band_blocks = 0;  // blocks per K band (0: one band spanning the padded K)
  // software prefetch distance of the LUT-GEMV's weight stream, in bytes, into L1 (0: off).
  // 8 KiB, as the AVX2 int8 decode's; off on Zen 4 and 2 KiB on Intel (gemv_prefetch_bytes in
  // targets/host/features.hpp): docs/design_measurements.md, "LUT-GEMV at one thread".
  int prefetch_bytes = 8192;

  // ------------------------------------------------------------------ derived sizes
  constexpr bool vlut16() const { return order == lookup_order::vlut16; }
  constexpr bool sve() const { return order == lookup_order::sve; }
  // pshufb order: plane pairs in paired chunks, an odd plane in a lone chunk. The plane orders
  // (vlut16, sve): every plane (and the ternary index) in a chunk of its own, both steps of the
  // pair in its two nibbles.
  constexpr bool plane_chunks() const { return order == lookup_order::vlut16 || order == lookup_order::sve; }
  constexpr bool mmul() const { return order == lookup_order::mmul; }
  // whole codes instead of bit planes: formats without LUT-GEMV in the pshufb order (above), and
  // every non-ternary format in the mmul order
  constexpr bool whole_codes() const {
    return !ternary && ((!lut && order == lookup_order::pshufb) || order == lookup_order::mmul);
  }
  constexpr int paired_chunks_per_step_pair() const {
    return ternary || plane_chunks() || whole_codes() ? 0 : (planes / 2) * 2;
  }
  constexpr int lone_chunks_per_step_pair() const {
    return ternary ? 1 : (plane_chunks() ? planes : whole_codes() ? 0 : planes % 2);
  }
  // whole codes: the step pair's planes x chunk bytes of codes
  constexpr int code_chunks_per_step_pair() const { return whole_codes() ? (mmul() && planes < 4 ? 4 : planes) : 0; }
  constexpr int sign_bytes_per_step_pair() const { return ternary && !plane_chunks() ? 16 : 0; }
  LUTKIT_ALWAYS_INLINE constexpr int step_pair_bytes() const {
    return (paired_chunks_per_step_pair() + lone_chunks_per_step_pair() + code_chunks_per_step_pair()) *
               chunk_bytes +
           sign_bytes_per_step_pair();
  }
  constexpr int step_pairs_per_block() const { return steps_per_block / 2; }
  // plane-order ternary: the signs of 4 step pairs share one chunk (bit 2 (spi mod 4) + step of a
  // row's byte), placed after the block's index chunks
  constexpr int sign_chunks_per_block() const { return ternary && plane_chunks() ? step_pairs_per_block() / 4 : 0; }
  LUTKIT_ALWAYS_INLINE constexpr int block_bytes() const {
    return step_pairs_per_block() * step_pair_bytes() + sign_chunks_per_block() * chunk_bytes;
  }
  // inside a panel (from its first byte; layout_geometry): block j of the band, and the
  // parameters of the band's group gj (with groups: a band holds whole groups, each its
  // parameters first; without: `lead`, band 0, whose panels begin with the whole-K parameters)
  // Super-group formats: a band holds whole super-groups (make_tiling_spec), and each super-group
  // of a panel begins with its entry (super_bytes), then its groups: super_in_panel(gj) is the
  // entry of the band's group gj's super-group.
  constexpr std::size_t block_in_panel(std::size_t j, bool lead) const {
    const std::size_t bb = std::size_t(block_bytes()), sb = std::size_t(scale_bytes());
    if (group_k == 0) return j * bb + (lead ? sb : 0);
    const std::size_t gj = j / std::size_t(group_k / block_k);
    return j * bb + (gj + 1) * sb +
           (super_k > 0 ? (gj / std::size_t(groups_per_super()) + 1) * std::size_t(super_bytes()) : 0);
  }
  LUTKIT_ALWAYS_INLINE constexpr std::size_t params_in_panel(std::size_t gj) const {
    return gj * (std::size_t(group_k / block_k) * std::size_t(block_bytes()) + std::size_t(scale_bytes())) +
           (super_k > 0 ? (gj / std::size_t(groups_per_super()) + 1) * std::size_t(super_bytes()) : 0);
  }
  LUTKIT_ALWAYS_INLINE constexpr std::size_t super_in_panel(std::size_t gj) const {
    const std::size_t first = gj - gj % std::size_t(groups_per_super());
    return params_in_panel(first) - std::size_t(super_bytes());
  }
  // whole-K scales (per channel, per tensor): the int8 paradigm quantizes activations in flush
  // groups of about 256 k, whole blocks (gemm/geometry.hpp)
  constexpr int whole_k_flush_blocks() const { return (256 + block_k - 1) / block_k; }
  // one group parameter of one row: 2 bytes (fp16, bf16) or 1 (a super-group format's int8 code)
  LUTKIT_ALWAYS_INLINE constexpr int param_bytes() const { return super_k > 0 ? 1 : 2; }
  LUTKIT_ALWAYS_INLINE constexpr int scale_bytes() const {
    return rows_per_tile * param_bytes() * (asymmetric ? 2 : 1);
  }
  // super-group formats: groups per super-group, and a tile's super-group entry (fp32 super-scale,
  // and super-minimum for asymmetric formats, per row)
  constexpr int groups_per_super() const { return super_k > 0 ? super_k / group_k : 1; }
  constexpr int super_bytes() const { return super_k > 0 ? rows_per_tile * 4 * (asymmetric ? 2 : 1) : 0; }
  // offsets inside a block (compile-time for a compile-time spec): kernels add these to
  // packed_layout::block_offset so the inner loop does no shape arithmetic
  constexpr int paired_chunk_in_block(int spi, int s, int p) const {
    return spi * step_pair_bytes() + (p * 2 + s) * chunk_bytes;
  }
  constexpr int lone_chunk_in_block(int spi) const {
    return spi * step_pair_bytes() + paired_chunks_per_step_pair() * chunk_bytes;
  }
  // plane orders: the chunk of plane p (ternary: p = 0, the mirrored index)
  constexpr int plane_chunk_in_block(int spi, int p) const { return lone_chunk_in_block(spi) + p * chunk_bytes; }
  constexpr int sign_in_block(int spi) const {
    return plane_chunks() ? step_pairs_per_block() * step_pair_bytes() + (spi / 4) * chunk_bytes
                          : lone_chunk_in_block(spi) + chunk_bytes;
  }
  // whole codes: the byte (from the step pair's first byte) holding row r's code of activation i
  // of step s of the pair, and the code's lowest bit in it
  constexpr int code_byte_in_step_pair(int r, int s, int i) const {
    if (mmul()) return planes == 8 ? 64 * (r / 8) + 8 * (4 * s + i) + r % 8 : 32 * (r / 8) + 4 * (4 * s + i) + (r % 8) / 2;
    return planes == 8 ? 256 * s + 4 * r + i : 4 * r + i;
  }
  constexpr int code_shift(int s) const { return planes == 8 ? 0 : 4 * s; }
  // the code's lowest bit for row r, step s of the pair (the mmul order's nibble is the row's parity)
  constexpr int code_shift_of(int r, int s) const { return mmul() ? (planes == 8 ? 0 : 4 * (r % 2)) : code_shift(s); }
  // whole codes: bytes of one step's (8 bits) or one step pair's (4 bits) codes of the tile
  static constexpr int code_stride = 256;
  // plane orders: row r's byte in every chunk of its tile
  constexpr int byte_of_row(int r) const;
  // plane-order ternary: the bit of a row's sign byte that holds step s of step pair spi
  constexpr int sign_bit_in_byte(int spi, int s) const { return 2 * (spi % 4) + s; }
  // The element map inside one step pair of the bit-plane orders: the byte (from the step pair's first byte) holding row
  // r's index of plane p (ternary: p = 0, the mirrored index) for step s of the pair, and the
  // index's shift.
  constexpr int index_byte_in_step_pair(int r, int p, int s) const;
  constexpr int index_shift(int r, int s) const;
  // Ternary: the sign of row r, step s of step pair spi, as a bit of the block: byte (from the
  // block's first byte) * 8 + bit.
  constexpr int sign_bit_in_block(int r, int spi, int s) const;
  // table bytes per step for one activation row: 16 entries (int16: low-byte and high-byte tables)
  constexpr int table_bytes_per_step() const { return 16 * (entry_bits / 8); }

  // ------------------------------------------------------------------ overflow bound
  // Largest |table entry| the table builder produces (table_qmax): int8 -> 127; int16 -> 32639
  // (127 * 256 + 127), split into two signed bytes looked up separately, hi = (q + 128) >> 8 and
  // lo = q - 256 hi (the low byte of q read as signed), both in -128..127: the kernels sum both sets
  // as signed lookups, so a block's int16 sums are bounded by 128 per lookup (an unsigned low byte,
  // 0..255, halved the steps a block of 5-bit codes may hold: 16 activations instead of 32).
  constexpr int table_qmax() const { return entry_bits == 8 ? 127 : 127 * 256 + 127; }
  constexpr long max_abs_lookup_hi() const { return entry_bits == 8 ? 127 : 128; }
  constexpr long max_abs_lookup_lo() const { return entry_bits == 8 ? 0 : 128; }
  // int16 entries: whether plane p's lookups sum the low bytes too (table::lut4's WholePlanes); the
  // planes that do not read the high byte alone, |q - 256 hi| <= 128 steps from the entry
  constexpr bool plane_whole(int p) const {
    return entry_bits == 16 && (whole_planes == 0 || p >= planes - whole_planes);
  }
  // the sum of the plane weights 2^p of the planes that read high bytes alone
  constexpr long high_only_weight_sum() const {
    return entry_bits == 16 && whole_planes > 0 ? (1L << (planes - whole_planes)) - 1 : 0;
  }
  // Largest |int16 accumulator| within a block: every lookup of the block, weighted by 2^plane.
  constexpr long max_abs_acc16() const {
    const long m = max_abs_lookup_hi() > max_abs_lookup_lo() ? max_abs_lookup_hi() : max_abs_lookup_lo();
    return long(steps_per_block) * plane_weight_sum * m;
  }
  constexpr bool valid() const {
    return planes >= 1 && steps_per_block >= 2 && steps_per_block % 2 == 0 && block_k == steps_per_block * k_per_step &&
           (!lut || max_abs_acc16() <= 32767) &&
           (!whole_codes() || ((planes == 4 || planes == 8 || mmul()) && rows_per_tile == 64)) &&
           (!mmul() || (!ternary && rows_per_tile == 64)) && (group_k == 0 || group_k % block_k == 0) &&
           rows_per_tile == chunk_bytes && band_blocks >= 0 &&
           (whole_planes == 0 || (entry_bits == 16 && !ternary && whole_planes < planes &&
                                  (plane_chunks() || (planes - whole_planes) % 2 == 0))) &&
           (super_k == 0 || (group_k > 0 && super_k % group_k == 0 && super_k / group_k <= 16)) &&
           (group_k == 0 || band_blocks % (group_k / block_k) == 0) &&
           (plane_chunks() ? rows_per_tile == (vlut16() ? 128 : 64) && (!ternary || step_pairs_per_block() % 4 == 0)
                           : rows_per_tile == 64);
  }
};

// vlut16 order: row r of a 128-row tile -> its byte in every chunk (the nibble is the step).
constexpr int vlut16_byte_of_row(int r) { return 2 * (r % 64) + r / 64; }

// pshufb order: row r of a tile (0..63) -> position inside a lone chunk's 32-byte half.
constexpr int lone_byte_of_row(int r) { return 2 * (r % 16) + (r % 32) / 16; }
constexpr int nibble_of_row(int r) { return r / 32; }
constexpr int paired_byte_of_row(int r, int h) { return 2 * (r % 32) + h; }
// pshufb order, a lone chunk gathered into row pairs (the paired chunks' row order): byte o of
// the gathered chunk holds, in its low nibble, row o / 2's step o % 2 (its high nibble: row
// 32 + o / 2's) and comes from lone byte lone_pair_source(o). The same map permutes the 64 sign
// bits of a ternary nibble.
constexpr int lone_pair_source(int o) { return 32 * (o % 2) + lone_byte_of_row(o / 2); }
// pshufb order, two step pairs' lone chunks A and B gathered into row quads: byte o of gathered
// vector v (0 or 1) holds, in its low nibble, row 16 v + o / 4's step o % 4 of the four (its high
// nibble: row 32 + 16 v + o / 4's) and comes from byte lone_quad_source(v, o) of A (0..63) or
// B (64..127).
constexpr int lone_quad_source(int v, int o) { return 64 * (o % 4 / 2) + 32 * (o % 2) + lone_byte_of_row(16 * v + o / 4); }

constexpr int tiling_spec::byte_of_row(int r) const { return vlut16() ? vlut16_byte_of_row(r) : r; }

constexpr int tiling_spec::index_byte_in_step_pair(int r, int p, int s) const {
  if (plane_chunks()) return plane_chunk_in_block(0, p) + byte_of_row(r);
  if (p < paired_chunks_per_step_pair()) return paired_chunk_in_block(0, s, p / 2) + paired_byte_of_row(r, p % 2);
  return lone_chunk_in_block(0) + 32 * s + lone_byte_of_row(r);
}
constexpr int tiling_spec::index_shift(int r, int s) const { return plane_chunks() ? 4 * s : 4 * nibble_of_row(r); }
constexpr int tiling_spec::sign_bit_in_block(int r, int spi, int s) const {
  if (plane_chunks()) return (sign_in_block(spi) + byte_of_row(r)) * 8 + sign_bit_in_byte(spi, s);
  return sign_in_block(spi) * 8 + 64 * nibble_of_row(r) + 32 * s + lone_byte_of_row(r);
}

// K bands of the LUT formats (bit planes, ternary). A kernel that walks band after band, every
// tile's panel of it, reads the weights as one stream while the band's tables stay in L1. The
// limits (k, table bytes per activation row, panel bytes) are the measured best (docs/tiling.md,
// "K bands").
inline constexpr long band_k_max = 1024, band_table_bytes = 6144, band_panel_bytes = 20480;

namespace detail {
constexpr int largest_pow2_le(long v) {
  int p = 1;
  while (long(p) * 2 <= v) p *= 2;
  return p;
}
}  // namespace detail

template <class Fmt, class Group, class Table, class Target = target::host>
constexpr tiling_spec make_tiling_spec() {
  using FT = format_traits<Fmt>;
  tiling_spec s{};
  s.bits = FT::bits;
  s.ternary = FT::is_ternary;
  s.asymmetric = FT::asymmetric;
  s.per_tensor = Group::tensor;
  s.planes = FT::planes;
  s.k_per_step = FT::k_per_step;
  s.group_k = Group::group_k;
  s.entry_bits = Table::entry_bits;
  // (every plane whole: the plain int16 layout, one name)
  s.whole_planes = !FT::lut_gemv_capable || Table::whole_planes >= FT::planes ? 0 : Table::whole_planes;
  s.mirror = Table::mirror && !FT::is_ternary;  // ternary indices are mirrored by construction
  s.plane_weight_sum = FT::plane_weight_sum;
  s.sym_zero = FT::sym_zero;
  s.lut = FT::lut_gemv_capable;
  s.min_form = FT::min_form;
  s.bf16_params = FT::bf16_params;
  s.super_k = FT::super_params ? 256 : 0;
  // Block length: as many steps as the int16 bound allows, at most 16 (64 activations) for
  // bit planes — a power of two dividing the group — and 32 steps (96 activations) for ternary.
  // Formats the LUT-GEMV cannot run have no int16 bound: min(16, group / 4) steps.
  const long m = s.max_abs_lookup_hi() > s.max_abs_lookup_lo() ? s.max_abs_lookup_hi() : s.max_abs_lookup_lo();
  const long max_steps = 32767 / (long(FT::plane_weight_sum) * m);
  if (!FT::lut_gemv_capable) {
    // no LUT accumulators to bound (codebooks, 8 bits): min(16, group / 4) steps
    const long cap = Group::group_k > 0 && Group::group_k / 4 < 16 ? Group::group_k / 4 : 16;
    s.steps_per_block = detail::largest_pow2_le(cap);
  } else if (FT::is_ternary) {
    s.steps_per_block = max_steps >= 32 ? 32 : detail::largest_pow2_le(max_steps);
  } else {
    long cap = 16;
    if (Group::group_k > 0 && Group::group_k / 4 < cap) cap = Group::group_k / 4;
    if (max_steps < cap) cap = max_steps;
    s.steps_per_block = detail::largest_pow2_le(cap);
  }
  s.block_k = s.steps_per_block * s.k_per_step;
  s.rows_per_tile = s.chunk_bytes = Target::desc.tile_rows;
  s.order = Target::desc.order;
  // K bands (LUT formats; the whole-code formats' kernels keep all of K's activations in L1): as
  // many units (whole groups; without groups, whole int8 flush groups, so those do not straddle
  // two bands) as band_k_max, band_table_bytes and band_panel_bytes allow, at least one
  if (FT::lut_gemv_capable || FT::is_ternary) {
    // (super-group formats: whole super-groups, each with its entry, so a band's panel holds the
    // super-values of every group in it)
    const int unit_groups = s.super_k > 0 ? s.groups_per_super() : 1;
    const int unit_blocks = Group::group_k > 0 ? unit_groups * (Group::group_k / s.block_k) : s.whole_k_flush_blocks();
    const long unit_k = long(unit_blocks) * s.block_k;
    const long unit_tables = unit_k / s.k_per_step * s.table_bytes_per_step();
    const long unit_panel = long(unit_blocks) * s.block_bytes() +
                            (Group::group_k > 0 ? long(unit_groups) * s.scale_bytes() : 0) + s.super_bytes();
    long n = 1;
    while ((n + 1) * unit_k <= band_k_max && (n + 1) * unit_tables <= band_table_bytes &&
           (n + 1) * unit_panel <= band_panel_bytes)
      ++n;
    s.band_blocks = int(n) * unit_blocks;
  }
  return s;
}

// The shape-dependent part: every offset of a packed blob of M x K weights. No checks here (the
// freestanding kernels use it on shapes already checked): packed_layout (tiling.hpp) is the
// checked form every hosted caller constructs.
struct layout_geometry {
  tiling_spec spec{};
  std::size_t M = 0, K = 0;
  std::size_t M_pad = 0, K_pad = 0;
  std::size_t tiles = 0, groups = 0, blocks_per_group = 0;
  std::size_t group_bytes = 0, total_bytes = 0;

  constexpr layout_geometry() = default;
  constexpr layout_geometry(const tiling_spec& s, std::size_t m, std::size_t k) : spec(s), M(m), K(k) {
    if (s.group_k > 0) {
      K_pad = k;
    } else {
      K_pad = (k + s.block_k - 1) / s.block_k * s.block_k;
    }
    M_pad = (m + s.rows_per_tile - 1) / s.rows_per_tile * s.rows_per_tile;
    tiles = M_pad / s.rows_per_tile;
    groups = s.group_k > 0 ? K_pad / s.group_k : 1;
    blocks_per_group = (s.group_k > 0 ? std::size_t(s.group_k) : K_pad) / s.block_k;
    group_bytes = std::size_t(s.scale_bytes()) + blocks_per_group * s.block_bytes();
    band_blocks = s.band_blocks > 0 && std::size_t(s.band_blocks) < blocks() ? std::size_t(s.band_blocks) : blocks();
    if (band_blocks == 0) band_blocks = 1;  // (K = 0: no blocks, one empty band)
    bands = (blocks() + band_blocks - 1) / band_blocks;
    total_bytes = tiles * groups * group_bytes;
    if (s.super_k > 0) {  // an entry per super-group in the panels
      supers = (groups + std::size_t(s.groups_per_super()) - 1) / std::size_t(s.groups_per_super());
      total_bytes += supers * tiles * std::size_t(s.super_bytes());
    }
    const std::size_t bb = std::size_t(s.block_bytes()), sb = std::size_t(s.scale_bytes());
    const std::size_t last_blocks = blocks() - (bands > 0 ? (bands - 1) * band_blocks : 0);
    if (s.group_k > 0) {  // (a band holds whole groups; super-group formats: whole super-groups)
      band_groups = band_blocks / blocks_per_group;
      const std::size_t last_groups = last_blocks / blocks_per_group, gps = std::size_t(s.groups_per_super());
      band_bytes = band_blocks * bb + band_groups * sb;
      last_band_bytes = last_blocks * bb + last_groups * sb;
      if (s.super_k > 0) {
        band_bytes += (band_groups + gps - 1) / gps * std::size_t(s.super_bytes());
        last_band_bytes += (last_groups + gps - 1) / gps * std::size_t(s.super_bytes());
      }
    } else {
      band_bytes = band_blocks * bb;
      last_band_bytes = last_blocks * bb;
      lead_bytes = sb;
    }
  }

  // super-group formats: super-groups per row
  std::size_t supers = 0;

  constexpr std::size_t steps() const { return K_pad / spec.k_per_step; }
  constexpr std::size_t step_pairs() const { return steps() / 2; }
  constexpr std::size_t blocks() const { return K_pad / spec.block_k; }
  constexpr std::size_t group_of_block(std::size_t blk) const { return blk / blocks_per_group; }
  constexpr std::size_t group_of_k(std::size_t k) const { return spec.group_k > 0 ? k / spec.group_k : 0; }

  // ---- byte offsets from the start of the packed data. Band b's panels (one per tile, all the
  // same size) follow every panel of bands 0..b-1; in a panel, blocks in k order, each group's
  // parameters before its first block.
  std::size_t band_blocks = 0, bands = 0;  // (band_blocks: spec.band_blocks, or every block)
  // a full band's panel bytes, the last band's, and the whole-K parameters in band 0's panels
  // (without groups); groups per full band (with groups)
  std::size_t band_bytes = 0, last_band_bytes = 0, lead_bytes = 0, band_groups = 0;
  constexpr std::size_t band_of_block(std::size_t blk) const { return bands > 1 ? blk / band_blocks : 0; }
  constexpr std::size_t band_first_block(std::size_t b) const { return b * band_blocks; }
  constexpr std::size_t band_end_block(std::size_t b) const {
    return (b + 1) * band_blocks < blocks() ? (b + 1) * band_blocks : blocks();
  }
  constexpr std::size_t panel_bytes(std::size_t b) const {
    return (b + 1 == bands ? last_band_bytes : band_bytes) + (b == 0 ? lead_bytes : 0);
  }
  constexpr std::size_t panel_offset(std::size_t t, std::size_t b) const {
    return tiles * (b * band_bytes + (b > 0 ? lead_bytes : 0)) + t * panel_bytes(b);
  }
  // Each offset also takes the spec as an argument: a kernel passes its policy's constexpr spec
  // (P::spec), and once inlined the divisions by the spec's quantities become multiplications
  // (the int8 decode asks once per 32-k flush group, where run-time divisions cost it a fifth).
  // Only the band of a banded blob divides at run time. The group's offsets and the spec's sizes
  // they use are always inlined: GCC 12 left them out of line in the larger kernels (the Q4_K
  // int8 decode, with its super-group parameters), three divisions and a call per group
  // (docs/design_measurements.md, "The int8 decode's group offsets inlined").
  LUTKIT_ALWAYS_INLINE constexpr std::size_t group_offset(std::size_t t, std::size_t g, const tiling_spec& S) const {
    if (S.group_k == 0) return panel_offset(t, 0);
    const std::size_t b = bands > 1 ? g / std::size_t(S.band_blocks / (S.group_k / S.block_k)) : 0;
    return panel_offset(t, b) + S.params_in_panel(g - b * band_groups);
  }
  LUTKIT_ALWAYS_INLINE constexpr std::size_t scale_offset(std::size_t t, std::size_t g, const tiling_spec& S) const {
    return group_offset(t, g, S);
  }
  LUTKIT_ALWAYS_INLINE constexpr std::size_t zero_offset(std::size_t t, std::size_t g, const tiling_spec& S) const {
    return group_offset(t, g, S) + std::size_t(S.rows_per_tile) * std::size_t(S.param_bytes());
  }
  // super-group formats: the fp32 super-scales of the 64 (128) rows of tile t for group g, in the
  // panel before the first group of g's super-group; their super-minimums follow (super_min_offset)
  LUTKIT_ALWAYS_INLINE constexpr std::size_t super_offset(std::size_t t, std::size_t g, const tiling_spec& S) const {
    const std::size_t b = bands > 1 ? g / std::size_t(S.band_blocks / (S.group_k / S.block_k)) : 0;
    return panel_offset(t, b) + S.super_in_panel(g - b * band_groups);
  }
  LUTKIT_ALWAYS_INLINE constexpr std::size_t super_min_offset(std::size_t t, std::size_t g,
                                                              const tiling_spec& S) const {
    return super_offset(t, g, S) + 4 * std::size_t(S.rows_per_tile);
  }
  constexpr std::size_t block_offset(std::size_t t, std::size_t blk, const tiling_spec& S) const {
    // (bands > 1: band_blocks is the spec's)
    const std::size_t b = bands > 1 ? blk / std::size_t(S.band_blocks) : 0;
    return panel_offset(t, b) + S.block_in_panel(blk - b * band_blocks, b == 0);
  }
  constexpr std::size_t group_of_block(std::size_t blk, const tiling_spec& S) const {
    return S.group_k > 0 ? blk / std::size_t(S.group_k / S.block_k) : 0;
  }
  constexpr std::size_t group_of_k(std::size_t k, const tiling_spec& S) const {
    return S.group_k > 0 ? k / std::size_t(S.group_k) : 0;
  }
  constexpr std::size_t group_offset(std::size_t t, std::size_t g) const { return group_offset(t, g, spec); }
  constexpr std::size_t scale_offset(std::size_t t, std::size_t g) const { return group_offset(t, g, spec); }
  constexpr std::size_t zero_offset(std::size_t t, std::size_t g) const { return zero_offset(t, g, spec); }
  constexpr std::size_t super_offset(std::size_t t, std::size_t g) const { return super_offset(t, g, spec); }
  constexpr std::size_t super_min_offset(std::size_t t, std::size_t g) const { return super_min_offset(t, g, spec); }
  constexpr std::size_t block_offset(std::size_t t, std::size_t blk) const { return block_offset(t, blk, spec); }
  // Blocks of one band of tile t in order, as a kernel walks them: the block's offset and its
  // group's parameters' offset, advanced by additions (block_offset divides)
  // (super-group formats: `super`, the offset of the group's super-group entry; a band holds whole
  // super-groups, so the walk of a band meets every entry it needs before its groups)
  struct panel_cursor {
    std::size_t blk, group, block, params, super;  // block index, its group, their offsets (params: scales)
    std::size_t in_group, per_group, block_bytes, scale_bytes, zero_shift, per_super, super_bytes;
    constexpr std::size_t zeros() const { return params + zero_shift; }  // (asymmetric formats)
    constexpr std::size_t super_mins() const { return super + super_bytes / 2; }  // (min-form super-group formats)
    constexpr void next() {
      ++blk;
      block += block_bytes;
      if (++in_group == per_group) {  // [a super-group's entry,] a group's parameters, then its first block
        in_group = 0;
        ++group;
        if (super_bytes > 0 && group % per_super == 0) {
          super = block;
          block += super_bytes;
        }
        params = block;
        block += scale_bytes;
      }
    }
  };
  constexpr panel_cursor cursor(std::size_t t, std::size_t blk) const {
    const std::size_t g = group_of_block(blk);
    return {blk,
            g,
            block_offset(t, blk),
            scale_offset(t, g),
            spec.super_k > 0 ? super_offset(t, g) : 0,
            blk % blocks_per_group,
            blocks_per_group,
            std::size_t(spec.block_bytes()),
            std::size_t(spec.scale_bytes()),
            zero_offset(0, 0) - scale_offset(0, 0),
            std::size_t(spec.groups_per_super()),
            std::size_t(spec.super_bytes())};
  }
  // paired chunk of plane pair p for step 2*sp + s
  constexpr std::size_t paired_chunk_offset(std::size_t t, std::size_t sp, int s, int p) const {
    const int per = spec.step_pairs_per_block();
    return block_offset(t, sp / per) + std::size_t(spec.paired_chunk_in_block(int(sp % per), s, p));
  }
  constexpr std::size_t lone_chunk_offset(std::size_t t, std::size_t sp) const {
    const int per = spec.step_pairs_per_block();
    return block_offset(t, sp / per) + std::size_t(spec.lone_chunk_in_block(int(sp % per)));
  }
  constexpr std::size_t sign_offset(std::size_t t, std::size_t sp) const {
    const int per = spec.step_pairs_per_block();
    return block_offset(t, sp / per) + std::size_t(spec.sign_in_block(int(sp % per)));
  }

  // ---- the element map: where the bit of (row, k, plane) lives. For ternary, `plane` is
  // ignored and the location is that of the 4-bit mirrored index of the triple holding k
  // (shift is the nibble's low bit); see ternary_sign_location for its sign bit.
  struct bit_location {
    std::size_t byte;
    int shift;
  };
  constexpr bit_location index_location(std::size_t row, std::size_t k, int plane) const {
    const std::size_t t = row / spec.rows_per_tile;
    const int r = int(row % spec.rows_per_tile);
    const std::size_t step = k / spec.k_per_step;
    const int i = spec.ternary ? 0 : int(k % spec.k_per_step);
    const std::size_t sp = step / 2;
    const int s = int(step % 2);
    const int per = spec.step_pairs_per_block();
    const std::size_t pair = block_offset(t, sp / per) + std::size_t(int(sp % per) * spec.step_pair_bytes());
    if (spec.whole_codes()) return {pair + std::size_t(spec.code_byte_in_step_pair(r, s, i)), spec.code_shift_of(r, s) + plane};
    // (ternary: the mirrored index sits where plane 0 would, in its lone chunk)
    return {pair + std::size_t(spec.index_byte_in_step_pair(r, spec.ternary ? 0 : plane, s)), spec.index_shift(r, s) + i};
  }
  constexpr bit_location ternary_sign_location(std::size_t row, std::size_t step) const {
    const std::size_t t = row / spec.rows_per_tile;
    const int r = int(row % spec.rows_per_tile);
    const int per = spec.step_pairs_per_block();
    const std::size_t sp = step / 2;
    const int bit = spec.sign_bit_in_block(r, int(sp % per), int(step % 2));
    return {block_offset(t, sp / per) + std::size_t(bit / 8), bit % 8};
  }
};

// Q4_0 super-groups ([TTS-NPU] §5.1.2, docs/references.md), the HVX dequantizer's layout: 8 consecutive 32-weight
// groups of one row (256 weights) in one record, [128 code bytes][8 fp16 scales]; a row is
// ceil(K / 256) records (a ragged tail: its missing groups have code 0 and scale 0). Codes sit so
// that vlut16 returns them in order: weight w's 4-bit code is nibble w / 128 of byte
// 2 (w mod 64) + (w / 64) mod 2 (low nibbles: weights 0..127, high nibbles: 128..255).
struct q4_0_supergroup {
  static constexpr int weights = 256, groups = 8, group_k = 32;
  static constexpr int code_bytes = 128, bytes = code_bytes + 2 * groups;
  static constexpr int byte_of(int w) { return 2 * (w % 64) + (w / 64) % 2; }
  static constexpr int shift_of(int w) { return 4 * (w / 128); }
  static constexpr int scale_offset(int g) { return code_bytes + 2 * g; }
  static constexpr std::size_t records_per_row(std::size_t K) { return (K + weights - 1) / weights; }
  static constexpr std::size_t row_bytes(std::size_t K) { return records_per_row(K) * std::size_t(bytes); }
  static constexpr std::size_t record_offset(std::size_t K, std::size_t m, std::size_t k) {
    return m * row_bytes(K) + (k / weights) * std::size_t(bytes);
  }
};

}  // namespace lutkit
