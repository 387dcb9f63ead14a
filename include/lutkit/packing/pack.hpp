// lutkit — the packing family: quantized tensors and llama.cpp block tensors to packed blobs
// (quant/packed_weights.hpp: the blob), through the tiling spec. A code source (a quantized<P>, or blocks
// read in place) is walked tile by tile over a thread pool; a row pair's bit planes come from the
// family's micro-kernel (targets.hpp). The reference: detail::pack_by_element_map (quant/packed_weights.hpp).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/prefetch.hpp"
#include "../core/thread_pool.hpp"
#include "../core/tiling.hpp"
#include "../quant/packed_weights.hpp"
#include "../quant/kquant.hpp"
#include "../quant/quant.hpp"
#include "targets.hpp"

namespace lutkit {

namespace detail {
// What the bit-plane packer reads, a code source: M(), K(), scale_bits(m, g), zero_bits(m, g) (the
// blob's parameter slots, encode_param) and their _rows forms (a group's slots of consecutive
// rows), and row(m), a cursor whose codes8(k0) holds the 8 codes of k0 .. k0 + 7 (byte i:
// k0 + i; zeros beyond K), at(k0) where codes64 would read them in its form, whole64(k0).
// Two sources: a quantized<P> (per-weight codes) and a llama.cpp block tensor, read in place.
template <class P>
struct quantized_source {
  const quantized<P>& q;
  struct row_cursor {
    const uint8_t* c;
    std::size_t K;
    uint64_t codes8(std::size_t k0) const { return load_codes8(c, k0, K); }
    static constexpr code_form form = code_form::bytes;
    static constexpr std::size_t stride = 0;
    // the 64 codes from k0 in `form` when all are inside the row, else codes64
    bool whole64(std::size_t k0) const { return k0 + 64 <= K; }
    const uint8_t* at(std::size_t k0) const { return c + k0; }
    // 64 codes from k0 (zeros beyond K)
    void codes64(std::size_t k0, uint8_t* out) const {
      if (k0 + 64 <= K) {
        std::memcpy(out, c + k0, 64);
      } else {
        for (std::size_t j = 0; j < 8; ++j) {
          const uint64_t x = codes8(k0 + 8 * j);
          std::memcpy(out + 8 * j, &x, 8);
        }
      }
    }
  };
  std::size_t M() const { return q.M; }
  std::size_t K() const { return q.K; }
  uint16_t scale_bits(std::size_t m, std::size_t g) const { return encode_param(P::spec, q.scale(m, g)); }
  uint16_t zero_bits(std::size_t m, std::size_t g) const { return encode_param(P::spec, q.zero(m, g)); }
  // scale_bits / zero_bits of rows m0 .. m0 + n - 1 of group g, to out (param_bytes each)
  void scale_bits_rows(std::size_t m0, std::size_t n, std::size_t g, uint8_t* out) const {
    params_rows(q.scales.data(), q.supers.data(), m0, n, g, out);
  }
  void zero_bits_rows(std::size_t m0, std::size_t n, std::size_t g, uint8_t* out) const {
    params_rows(q.zeros.data(), q.super_mins.data(), m0, n, g, out);
  }
  // super-group formats: the super-scales (super-minimums) of rows m0 .. m0 + n - 1 for group g
  void super_rows(std::size_t m0, std::size_t n, std::size_t g, float* sup, float* sup_min) const {
    for (std::size_t i = 0; i < n; ++i) {
      sup[i] = q.super_scale(m0 + i, g);
      if (P::spec.asymmetric) sup_min[i] = q.super_min(m0 + i, g);
    }
  }
  void params_rows(const float* v, const float* sv, std::size_t m0, std::size_t n, std::size_t g, uint8_t* out) const {
    const float* s = v + m0 * q.groups + g;
    // (the rows' values 16 groups ahead: a stream per row, too many for the hardware prefetcher)
    if (g % 16 == 0 && g + 16 < q.groups)
      for (std::size_t i = 0; i < n; ++i) prefetch_line(s + i * q.groups + 16);
    if constexpr (P::spec.super_k > 0) {
      const std::size_t u = g / std::size_t(P::spec.groups_per_super());
      for (std::size_t i = 0; i < n; ++i, s += q.groups)
        out[i] = uint8_t(super_code(*s, sv[(m0 + i) * q.supers_per_row + u], "pack: a group parameter"));
    } else if constexpr (!P::spec.bf16_params) {
      f16_strided(s, q.groups, n, out);
    } else {
      for (std::size_t i = 0; i < n; ++i, s += q.groups) {
        const uint16_t h = encode_param(P::spec, *s);
        std::memcpy(out + 2 * i, &h, 2);
      }
    }
  }
  row_cursor row(std::size_t m) const { return {q.codes.data() + m * q.K, q.K}; }
  // the codes of rows [m0, m1): one contiguous run (what the packer prefetches a tile ahead)
  std::pair<const uint8_t*, std::size_t> rows_bytes(std::size_t m0, std::size_t m1) const {
    return {q.codes.data() + m0 * q.K, (m1 - m0) * q.K};
  }
};
template <class P, class Block>
struct ggml_source {
  // (check_ggml_tensor has refused any policy but the block's format with group<E>)
  static_assert(P::spec.super_k == 0, "the 32-weight block types carry 2-byte parameters");
  static constexpr std::size_t E = Block::block_elems;
  const char* what;
  const unsigned char* blocks;
  std::size_t M_, K_;
  struct row_cursor {
    const unsigned char* b;  // the row's first block
    std::size_t K;
    uint64_t codes8(std::size_t k0) const {
      return Block::codes8(b + (k0 / E) * Block::block_bytes + Block::qs_offset, unsigned(k0 % E));
    }
    static constexpr code_form form = Block::form;
    static constexpr std::size_t stride = Block::block_bytes;
    // the 64-code fast path reads two 32-weight blocks in their own form
    bool whole64(std::size_t k0) const { return E == 32 && k0 + 64 <= K; }  // (assembled forms: never asked)
    const uint8_t* at(std::size_t k0) const { return b + (k0 / E) * Block::block_bytes + Block::qs_offset; }
    // 64 codes from k0 (a multiple of 32, as K is: a row may end half way)
    void codes64(std::size_t k0, uint8_t* out) const {
      if constexpr (E == 32) {
        const unsigned char* blk = b + (k0 / 32) * Block::block_bytes + Block::qs_offset;
        Block::codes32(blk, out);
        if (k0 + 64 <= K) Block::codes32(blk + Block::block_bytes, out + 32);
        else std::memset(out + 32, 0, 32);
      } else {  // (K a multiple of E >= 64: the 64 codes lie in one block)
        codes64_by8<Block>(b + (k0 / E) * Block::block_bytes + Block::qs_offset, unsigned(k0 % E), out);
      }
    }
  };
  std::size_t M() const { return M_; }
  std::size_t K() const { return K_; }
  // the block's fp16 d, checked finite, as the blob's fp16 slot holds it (the same bits)
  uint16_t scale_bits(std::size_t m, std::size_t g) const {
    const std::size_t i = m * (K_ / E) + g;
    const unsigned char* b = blocks + i * Block::block_bytes;
    const uint16_t h = uint16_t(b[Block::d_offset] | (unsigned(b[Block::d_offset + 1]) << 8));
    if ((h & 0x7C00u) == 0x7C00u) ggml_block_scale<Block>(what, b, i, K_);  // throws: not finite
    if constexpr (P::spec.bf16_params) return encode_param(P::spec, f16_to_f32(h));
    else return h;
  }
  // the zero slot: the block's minimum (Q4_1), the block type's zero for asymmetric policies
  // (TQ: 1), else the format's
  uint16_t zero_bits(std::size_t m, std::size_t g) const {
    if constexpr (Block::has_min) {
      const std::size_t i = m * (K_ / E) + g;
      const unsigned char* b = blocks + i * Block::block_bytes;
      return encode_param(P::spec, ggml_block_min<Block>(what, b, i, K_));
    } else {
      (void)m, (void)g;
      return encode_param(P::spec, P::spec.asymmetric ? Block::zero : P::spec.sym_zero);
    }
  }
  void zero_bits_rows(std::size_t m0, std::size_t n, std::size_t g, uint8_t* out) const {
    if constexpr (Block::has_min) {
      for (std::size_t i = 0; i < n; ++i) {
        const uint16_t z = zero_bits(m0 + i, g);
        std::memcpy(out + 2 * i, &z, 2);
      }
    } else {  // one zero for every row
      const uint16_t z = zero_bits(0, 0);
      for (std::size_t i = 0; i < n; ++i) std::memcpy(out + 2 * i, &z, 2);
    }
  }
  // scale_bits of rows m0 .. m0 + n - 1 of group g, to out (2 bytes each)
  void scale_bits_rows(std::size_t m0, std::size_t n, std::size_t g, uint8_t* out) const {
    if constexpr (P::spec.bf16_params) {
      for (std::size_t i = 0; i < n; ++i) {
        const uint16_t h = scale_bits(m0 + i, g);
        std::memcpy(out + 2 * i, &h, 2);
      }
    } else {
      const std::size_t row_bytes = (K_ / E) * Block::block_bytes;
      const unsigned char* b = blocks + m0 * row_bytes + g * Block::block_bytes + Block::d_offset;
      unsigned inf = 0;  // the exponents or-ed: a non-finite one is looked for once
      for (std::size_t i = 0; i < n; ++i, b += row_bytes) {
        uint16_t h;
        std::memcpy(&h, b, 2);
        inf |= ((h & 0x7C00u) == 0x7C00u);
        std::memcpy(out + 2 * i, &h, 2);
      }
      if (inf)
        for (std::size_t i = 0; i < n; ++i) scale_bits(m0 + i, g);  // throws, naming the block
    }
  }
  row_cursor row(std::size_t m) const { return {blocks + m * (K_ / E) * Block::block_bytes, K_}; }
  // the blocks of rows [m0, m1): one contiguous run (what the packer prefetches a tile ahead)
  std::pair<const uint8_t*, std::size_t> rows_bytes(std::size_t m0, std::size_t m1) const {
    const std::size_t row = (K_ / E) * Block::block_bytes;
    return {blocks + m0 * row, (m1 - m0) * row};
  }
};

// A K-quant tensor (quant/kquant.hpp) read in place: each sub-block's int8 scale (and minimum)
// code, the super-block's d (and -dmin), and its codes decoded from the super-block as the
// packer asks for them.
template <class P, class Block>
struct ggml_superblock_source {
  static constexpr std::size_t E = Block::block_elems, G = E / Block::sub;
  const char* what;
  const unsigned char* blocks;
  std::size_t M_, K_;
  struct row_cursor {
    const unsigned char* b;  // the row's first block
    std::size_t K;
    uint64_t codes8(std::size_t k0) const {
      return k0 < K ? Block::codes8(b + (k0 / E) * Block::block_bytes, unsigned(k0 % E)) : 0;
    }
    static constexpr code_form form = code_form::bytes;
    static constexpr std::size_t stride = 0;
    bool whole64(std::size_t) const { return false; }  // (codes are not stored one a byte)
    const uint8_t* at(std::size_t) const { return nullptr; }
    // (K is a multiple of E = 256: the 64 codes of a multiple of 64 lie in one block)
    void codes64(std::size_t k0, uint8_t* out) const {
      if (k0 % 64 == 0 && k0 < K) return codes64_by8<Block>(b + (k0 / E) * Block::block_bytes, unsigned(k0 % E), out);
      for (std::size_t j = 0; j < 8; ++j) {
        const uint64_t x = codes8(k0 + 8 * j);
        std::memcpy(out + 8 * j, &x, 8);
      }
    }
  };
  std::size_t M() const { return M_; }
  std::size_t K() const { return K_; }
  // a block of row m, group g (the finiteness check is codes_rows')
  const unsigned char* block_in(std::size_t m, std::size_t g) const {
    return blocks + (m * (K_ / E) + g / G) * Block::block_bytes;
  }
  // The int8 code slots of rows m0 .. m0 + n - 1 for every sub-block of super-block u: sc[ld j + i]
  // the scale codes of sub-block j, mn[ld j + i] the minimum codes (asymmetric types). A code is
  // the sub-block's scale / minimum over the super-block's d / -dmin: its sc / m, read as the
  // integer it is; a zero d or dmin goes through super_code, which keeps the product's sign. One
  // pass over the rows' blocks per super-block (the packer copies a group's slots from sc / mn):
  // per group and row, the block's address and its zero and finiteness tests were 12-19 % of a
  // K-quant load's samples (perf record).
  void codes_rows(std::size_t m0, std::size_t n, std::size_t u, std::size_t ld, uint8_t* sc, uint8_t* mn) const {
    const std::size_t per_row = K_ / E, row_bytes = per_row * Block::block_bytes;
    // the rows' blocks two super-blocks on: the packer reads 64 rows at once, more streams than
    // the hardware prefetcher follows, and waited on every row's first line of a block without this
    if (u + 2 < per_row)
      for (std::size_t i = 0; i < n; ++i) {
        const unsigned char* p = blocks + (m0 + i) * row_bytes + (u + 2) * Block::block_bytes;
        for (std::size_t o = 0; o < Block::block_bytes; o += 64) prefetch_line(p + o);
        prefetch_line(p + Block::block_bytes - 1);
      }
    const unsigned char* b = blocks + m0 * row_bytes + u * Block::block_bytes;
    for (std::size_t i = 0; i < n; ++i, b += row_bytes) {
      check_superblock_finite<Block>(what, b, (m0 + i) * per_row + u, K_);
      if (Block::sup_zero(b)) [[unlikely]] {
        for (std::size_t j = 0; j < G; ++j) sc[ld * j + i] = uint8_t(super_code(Block::scale(b, int(j)), Block::sup(b), what));
      } else {
        for (std::size_t j = 0; j < G; ++j) sc[ld * j + i] = uint8_t(int8_t(Block::scale_code(b, int(j))));
      }
      if constexpr (P::spec.asymmetric) {
        if (Block::sup_min_zero(b)) [[unlikely]] {
          for (std::size_t j = 0; j < G; ++j)
            mn[ld * j + i] = uint8_t(super_code(Block::minimum(b, int(j)), Block::sup_min(b), what));
        } else {
          for (std::size_t j = 0; j < G; ++j) mn[ld * j + i] = uint8_t(int8_t(Block::min_code(b, int(j))));
        }
      }
    }
  }
  // (after codes_rows of the super-block, which checked the blocks finite)
  void super_rows(std::size_t m0, std::size_t n, std::size_t g, float* sup, float* sup_min) const {
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned char* b = block_in(m0 + i, g);
      sup[i] = Block::sup(b);
      if (P::spec.asymmetric) sup_min[i] = Block::sup_min(b);
    }
  }
  row_cursor row(std::size_t m) const { return {blocks + m * (K_ / E) * Block::block_bytes, K_}; }
  // the blocks of rows [m0, m1): one contiguous run (what the packer prefetches a tile ahead)
  std::pair<const uint8_t*, std::size_t> rows_bytes(std::size_t m0, std::size_t m1) const {
    const std::size_t row = (K_ / E) * Block::block_bytes;
    return {blocks + m0 * row, (m1 - m0) * row};
  }
};

// Planes 2 q and 2 q + 1 of a row's step sit in adjacent bytes (pshufb order's paired chunks):
// the packer stores them as one 16-bit word
template <class P>
constexpr bool planes_side_by_side() {
  constexpr auto& S = P::spec;
  for (int r = 0; r < S.rows_per_tile; ++r)
    for (int p = 0; p + 1 < S.planes; p += 2)
      for (int s = 0; s < 2; ++s)
        if (S.index_byte_in_step_pair(r, p + 1, s) != S.index_byte_in_step_pair(r, p, s) + 1) return false;
  return true;
}

// Host layouts whose planes 2 q and 2 q + 1 of step s sit as one 16-bit word per row pair r
// (r and r + 32) at byte 2 r of a 64-byte chunk of the step pair, and an odd count's last plane
// as one byte per row pair in a 32-byte chunk: row pairs r and r + 16 (r < 16) at bytes 2 r and
// 2 r + 1 (row_pairs_step_pairs8)
template <class P>
constexpr bool paired_plane_chunks() {
  constexpr auto& S = P::spec;
  if (S.plane_chunks() || S.rows_per_tile != 64 || S.planes > 8) return false;
  for (int q = 0; 2 * q < S.planes; ++q)
    for (int s = 0; s < 2; ++s) {
      const int base = S.index_byte_in_step_pair(0, 2 * q, s);
      const bool single = 2 * q + 1 == S.planes;
      if (base % (single ? 32 : 64) != 0) return false;
      for (int r = 0; r < 32; ++r)
        if (single ? S.index_byte_in_step_pair(r, 2 * q, s) != base + 2 * (r % 16) + r / 16
                   : S.index_byte_in_step_pair(r, 2 * q, s) != base + 2 * r ||
                         S.index_byte_in_step_pair(r, 2 * q + 1, s) != base + 2 * r + 1)
          return false;
    }
  return true;
}

// Whole-code layouts whose rows' 4 bytes of a step sit side by side (row r at byte 4 r of the
// step's chunk, 8 rows a 32-byte run: whole_codes_rows8)
template <class P>
constexpr bool whole_code_rows_side_by_side() {
  constexpr auto& S = P::spec;
  if (!S.whole_codes() || S.ternary || (S.planes != 4 && S.planes != 8) || S.rows_per_tile % 8 != 0) return false;
  const int b0 = S.code_byte_in_step_pair(0, 0, 0), b1 = S.code_byte_in_step_pair(0, 1, 0);
  for (int r = 0; r < S.rows_per_tile; ++r)
    if (S.code_byte_in_step_pair(r, 0, 0) != b0 + 4 * r || (S.planes == 8 && S.code_byte_in_step_pair(r, 1, 0) != b1 + 4 * r))
      return false;
  return true;
}

// The layouts whose walk below stores every byte of a tile's blocks whole (no or-ing into
// zeros): the plane orders and the host layouts' row pairs
template <class P>
constexpr bool pack_writes_whole_bytes() {
  return !P::spec.ternary && (P::spec.plane_chunks() || P::spec.whole_codes() || rows_share_bytes_by_nibble<P>());
}

// The next tile's source bytes, prefetched to L2 a slice per step of the current tile's walk: a
// tile reads 64 rows a few dozen bytes at a time, more streams than the hardware prefetcher
// follows, and the packer waited on the source (a load from a model file reads it from DRAM).
struct tile_source_prefetch {
  const uint8_t* p = nullptr;
  const uint8_t* end = nullptr;
  std::size_t per = 0;  // bytes a step
  void start(std::pair<const uint8_t*, std::size_t> run, std::size_t steps) {
    p = run.first;
    end = run.first + run.second;
    per = (run.second / std::max<std::size_t>(1, steps) + 127) / 64 * 64;
  }
  void step() {
    for (const uint8_t* e = std::min(end, p + per); p < e; p += 64) __builtin_prefetch(p, 0, 2);
  }
};

// Tiles [t0, t1) of a bit-plane format: the parameters, then per row (or row pair) a sequential
// walk of its codes, a step pair (8 codes) at a time, each plane's two step indices made at once
// (plane_byte) and stored where tiling_spec::index_byte_in_step_pair puts them (offsets computed
// once per row):
//   plane orders (sve, vlut16): a row's byte of a plane holds both steps: one store;
//   whole codes: a row's 8 codes stored as they are (8 bits: two 4-byte stores; 4 bits: step j's
//                code in the low nibble, j + 1's in the high one, one 4-byte store);
//   host layouts: rows r and r + 32 walked together, each byte stored whole (low nibble row r);
//   any other layout: each step's index or-ed into its byte.
// A tile is one thread's: the rows sharing a byte are in it. (One code at a time per plane, the
// earlier walk, took 1.6-2x the time of this one; docs/llama_formats.md, "Load".)
template <class P, class Src>
void pack_tiles(const Src& src, uint8_t* d, const packed_layout& L, std::size_t t0, std::size_t t1) {
  constexpr auto& S = P::spec;
  constexpr int R = S.rows_per_tile, PL = S.planes;
  static_assert(!S.ternary && S.k_per_step == 4, "pack_tiles: bit-plane formats");
  const std::size_t M = src.M(), K = src.K();
  const std::size_t per = std::size_t(S.step_pairs_per_block()), pair_bytes = std::size_t(S.step_pair_bytes());
  const std::size_t pairs = (K + 7) / 8;
  // The tile is walked in k chunks of `chunk` step pairs (at most 16 KiB of output, which stays
  // in L1 while every row of the tile writes into it), all rows per chunk.
  // A multiple of 8 step pairs too: the walks take a row's codes 64 at a time from multiples of 64.
  const std::size_t unit = std::lcm(per, std::size_t(8));
  const std::size_t chunk = std::max<std::size_t>(unit, std::size_t(16384) / pair_bytes / unit * unit);
  // the first byte of each block of the chunk being walked (block_offset divides: once per
  // chunk, not per row)
  std::vector<uint8_t*> chunk_blocks(chunk / per + 1);
  // whole codes: the first byte of each step pair of the chunk
  std::vector<uint8_t*> pair_ptrs(S.whole_codes() ? chunk : 0);
  // walks the step pairs [sp0, sp1) of the chunk (sp0 its first): f(the step pair's first byte,
  // its first k)
  auto walk = [&](std::size_t, std::size_t sp0, std::size_t sp1, auto&& f) {
    std::size_t blk = 0, spi = 0;
    uint8_t* pair = chunk_blocks[0];
    for (std::size_t sp = sp0; sp < sp1; ++sp) {
      f(pair, 8 * sp);
      if (++spi == per) {
        spi = 0;
        pair = chunk_blocks[++blk];
      } else {
        pair += pair_bytes;
      }
    }
  };
  auto row_offsets = [&](int r, int (&off)[PL][2]) {
    for (int p = 0; p < PL; ++p)
      for (int s = 0; s < 2; ++s) off[p][s] = S.index_byte_in_step_pair(r, p, s);
  };
  // rows [r0, r1) of tile t (those inside the tensor): the scale and zero slots of groups [g0, g1)
  // sources with codes_rows (K-quants): a super-block's code slots for the tile's rows, formed at
  // its first group (which the walks below always reach before its others) and copied per group
  constexpr bool super_codes = requires(const Src& s, uint8_t* p) { s.codes_rows(0, 0, 0, 0, p, p); };
  constexpr std::size_t GS = std::size_t(S.groups_per_super());
  std::vector<uint8_t> sub_codes(super_codes ? 2 * GS * std::size_t(R) : 0);
  auto params = [&](std::size_t t, int r0, int r1, std::size_t g0, std::size_t g1) {
    r1 = int(std::min<std::size_t>(std::size_t(r1), M - std::min(M, t * std::size_t(R))));
    for (std::size_t g = g0; g < g1; ++g) {
      if constexpr (super_codes) {
        if (r1 > r0) {
          const std::size_t n = std::size_t(r1 - r0), m0 = t * std::size_t(R) + std::size_t(r0), j = g % GS;
          uint8_t* sc = sub_codes.data();
          uint8_t* mn = sc + GS * std::size_t(R);
          if (j == 0) src.codes_rows(m0, n, g / GS, std::size_t(R), sc, mn);
          std::memcpy(d + L.scale_offset(t, g) + std::size_t(r0), sc + j * std::size_t(R), n);
          if constexpr (S.asymmetric) std::memcpy(d + L.zero_offset(t, g) + std::size_t(r0), mn + j * std::size_t(R), n);
        }
      } else {
        if (r1 > r0) src.scale_bits_rows(t * std::size_t(R) + std::size_t(r0), std::size_t(r1 - r0), g, d + L.scale_offset(t, g) + std::size_t(S.param_bytes()) * std::size_t(r0));
        if constexpr (S.asymmetric)
          if (r1 > r0) src.zero_bits_rows(t * std::size_t(R) + std::size_t(r0), std::size_t(r1 - r0), g, d + L.zero_offset(t, g) + std::size_t(S.param_bytes()) * std::size_t(r0));
      }
      if constexpr (S.super_k > 0)  // the super-group's entry, at its first group
        if (r1 > r0 && g % std::size_t(S.groups_per_super()) == 0) {
          alignas(64) float sup[R], sup_min[R];
          src.super_rows(t * std::size_t(R) + std::size_t(r0), std::size_t(r1 - r0), g, sup, sup_min);
          std::memcpy(d + L.super_offset(t, g) + 4 * std::size_t(r0), sup, 4 * std::size_t(r1 - r0));
          if constexpr (S.asymmetric)
            std::memcpy(d + L.super_min_offset(t, g) + 4 * std::size_t(r0), sup_min, 4 * std::size_t(r1 - r0));
        }
    }
  };
  // the groups that begin in [k0, k1)
  const std::size_t gk = std::size_t(S.group_k);
  auto groups_from = [&](std::size_t k0) { return gk ? (k0 + gk - 1) / gk : (k0 == 0 ? 0 : 1); };
  constexpr bool host_walk = !S.plane_chunks() && !S.whole_codes() && rows_share_bytes_by_nibble<P>();
  constexpr bool whole_rows8 = whole_code_rows_side_by_side<P>();
  // the host walk's state: the tile's row cursors, a row pair's codes and planes
  using cursor = decltype(src.row(0));
  std::vector<cursor> cursors(host_walk ? 64 : 0);
  alignas(64) uint8_t c0[64], c1[64], planes[2][64];
  // the tile's 64 rows x 64 codes when the source assembles them (the paired-chunk walk below)
  const aligned_bytes tile_codes = alloc_aligned(host_walk ? 64 * 64 : 64);
  // where each 64-byte chunk (q, s) of planes 2 q, 2 q + 1 of step s begins in a step pair, when
  // the layout has them (paired_chunks: row pair r's word at byte 2 r)
  constexpr bool paired_chunks = host_walk && paired_plane_chunks<P>();
  constexpr auto chunk_off = [] {
    std::array<int, 8> o{};
    for (int q = 0; 2 * q < PL; ++q)
      for (int s = 0; s < 2; ++s) o[std::size_t(2 * q + s)] = S.index_byte_in_step_pair(0, 2 * q, s);
    return o;
  }();
  tile_source_prefetch pf;
  for (std::size_t t = t0; t < t1; ++t) {
    // the next tile's source, a slice per step of this tile's walk (steps: one per 8 step pairs in
    // the host walk, else one per row and chunk)
    pf = {};
    if (t + 1 < t1 && (t + 1) * std::size_t(R) < M) {
      const std::size_t m0 = (t + 1) * std::size_t(R), m1 = std::min(M, m0 + std::size_t(R));
      pf.start(src.rows_bytes(m0, m1), host_walk ? (pairs + 7) / 8 : std::size_t(R) * ((pairs + chunk - 1) / chunk));
    }
    // (padded rows: code 0, scale 0, zero 0, the cleared tile; the host walk writes the
    // parameters beside the codes of the same k)
    if constexpr (!host_walk) params(t, 0, R, 0, L.groups);
    for (std::size_t sp0 = 0; sp0 < pairs; sp0 += chunk) {
    const std::size_t sp1 = std::min(pairs, sp0 + chunk);
    for (std::size_t b = 0; b < chunk_blocks.size(); ++b)
      chunk_blocks[b] = sp0 / per + b < L.blocks() ? d + L.block_offset(t, sp0 / per + b) : nullptr;
    if constexpr (S.whole_codes()) {
      static_assert(S.code_byte_in_step_pair(1, 0, 1) == 5 && S.code_shift(0) == 0, "whole codes: 4 bytes per row and step");
      // the chunk's step pairs' first bytes (the same for every row), then per row its codes 64
      // at a time (codes64: vectorised where the source's form allows) to 8 step pairs
      walk(t, sp0, sp1, [&](uint8_t* pair, std::size_t k0) { pair_ptrs[k0 / 8 - sp0] = pair; });
      // blocks of 8 rows over whole units of 8 step pairs: whole_codes_rows8 (the rows' dwords of a
      // step pair side by side); the rest row by row below
      const std::size_t rows = std::min<std::size_t>(std::size_t(R), M - t * std::size_t(R));
      std::size_t rows8 = 0, sp_rest = sp0;
      if constexpr (whole_rows8) {
        rows8 = rows / 8 * 8;
        sp_rest = sp0 + (sp1 - sp0) / 8 * 8;
        alignas(64) uint8_t buf8[8][64];
        for (std::size_t r0 = 0; r0 < rows8; r0 += 8) {
          cursor cs[8];
          for (std::size_t i = 0; i < 8; ++i) {
            pf.step();
            cs[i] = src.row(t * std::size_t(R) + r0 + i);
          }
          const int o0 = S.code_byte_in_step_pair(int(r0), 0, 0), o1 = S.code_byte_in_step_pair(int(r0), 1, 0);
          for (std::size_t sp = sp0; sp < sp_rest; sp += 8) {
            const uint8_t* p[8];
            bool in_place = false;  // (assembled codes have no in-place form)
            if constexpr (cursor::form != code_form::assembled) {
              in_place = cs[0].whole64(8 * sp);
              if (in_place) {
                for (std::size_t i = 0; i < 8; ++i) p[i] = cs[i].at(8 * sp);
                whole_codes_rows8<cursor::form, PL>(p, cursor::stride, &pair_ptrs[sp - sp0], o0, o1);
              }
            }
            if (!in_place) {
              for (std::size_t i = 0; i < 8; ++i) {
                cs[i].codes64(8 * sp, buf8[i]);
                p[i] = buf8[i];
              }
              whole_codes_rows8<code_form::bytes, PL>(p, 0, &pair_ptrs[sp - sp0], o0, o1);
            }
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        const std::size_t m = t * std::size_t(R) + std::size_t(r);
        if (m >= M) break;
        if (std::size_t(r) >= rows8) pf.step();
        const auto c = src.row(m);
        const int o0 = S.code_byte_in_step_pair(r, 0, 0), o1 = S.code_byte_in_step_pair(r, 1, 0);
        alignas(64) uint8_t buf[64];  // the row's 64 codes from a multiple of 64
        for (std::size_t sp = std::size_t(r) < rows8 ? sp_rest : sp0; sp < sp1;) {
          const std::size_t base = sp - sp % 8, e = std::min(sp1, base + 8);
          c.codes64(8 * base, buf);
          for (; sp < e; ++sp) {
            uint64_t x;
            std::memcpy(&x, buf + 8 * (sp - base), 8);
            uint8_t* pair = pair_ptrs[sp - sp0];
            if constexpr (PL == 8) {
              const uint32_t lo = uint32_t(x), hi = uint32_t(x >> 32);
              std::memcpy(pair + o0, &lo, 4);
              std::memcpy(pair + o1, &hi, 4);
            } else {
              // code i of step j (byte i) and of step j + 1 (byte 4 + i) -> byte i, nibbles 0 and 1
              const uint32_t v = (uint32_t(x) & 0x0F0F0F0Fu) | ((uint32_t(x >> 32) & 0x0F0F0F0Fu) << 4);
              std::memcpy(pair + o0, &v, 4);
            }
          }
        }
      }
    } else if constexpr (S.plane_chunks()) {
      static_assert(S.index_shift(0, 0) == 0 && S.index_shift(0, 1) == 4, "plane orders: a byte holds a row's step pair");
      for (int r = 0; r < R; ++r) {
        const std::size_t m = t * std::size_t(R) + std::size_t(r);
        if (m >= M) break;
        int off[PL][2];
        row_offsets(r, off);
        pf.step();
        const auto c = src.row(m);
        walk(t, sp0, sp1, [&](uint8_t* pair, std::size_t k0) {
          const uint64_t x = c.codes8(k0);
          for (int p = 0; p < PL; ++p) pair[off[p][0]] = uint8_t(plane_byte(x, p));
        });
      }
    } else if constexpr (rows_share_bytes_by_nibble<P>()) {
      // 8 step pairs of the tile at a time (64 codes of each row), after the parameters of the
      // groups beginning there: the 32 row pairs' planes by row_pairs_step_pairs8 (whole 64-byte
      // chunks) where the layout pairs the planes, all rows are there and the 64 codes are inside
      // K; else per row pair, its planes (row_pair_planes) stored byte by byte, two planes at once
      // where the spec puts them side by side (pshufb order's paired chunks)
      const std::size_t rows = std::min<std::size_t>(64, M - t * 64);
      for (std::size_t r = 0; r < rows; ++r) cursors[r] = src.row(t * 64 + r);
      std::size_t blk = 0, spi = 0;
      for (std::size_t sp8 = sp0; sp8 < sp1; sp8 += 8) {
        const std::size_t n8 = std::min<std::size_t>(8, sp1 - sp8);
        const std::size_t k0 = 8 * sp8;
        pf.step();
        params(t, 0, 64, groups_from(k0), std::min(L.groups, groups_from(k0 + 64)));
        uint8_t* pair[8];
        for (std::size_t j = 0; j < n8; ++j) {
          pair[j] = chunk_blocks[blk] + spi * pair_bytes;
          if (++spi == per) {
            spi = 0;
            ++blk;
          }
        }
        if constexpr (paired_chunks && cursor::form != code_form::assembled) {
          if (n8 == 8 && rows >= 32 && cursors[0].whole64(k0)) {
            const uint8_t *a[32], *b[32];
            for (std::size_t r = 0; r < 32; ++r) {
              a[r] = cursors[r].at(k0);
              b[r] = r + 32 < rows ? cursors[r + 32].at(k0) : nullptr;
            }
            row_pairs_step_pairs8<cursor::form, PL>(a, b, cursor::stride, pair, chunk_off.data());
            continue;
          }
        }
        if constexpr (paired_chunks) {
          // codes not stored one a byte in place (K-quants, assembled forms): the source's codes64
          // of every row into a buffer, then the same tile kernel on it
          if (n8 == 8 && rows >= 32) {
            const uint8_t *a[32], *b[32];
            for (std::size_t r = 0; r < rows; ++r) cursors[r].codes64(k0, tile_codes.get() + 64 * r);
            for (std::size_t r = 0; r < 32; ++r) {
              a[r] = tile_codes.get() + 64 * r;
              b[r] = r + 32 < rows ? tile_codes.get() + 64 * (r + 32) : nullptr;
            }
            row_pairs_step_pairs8<code_form::bytes, PL, false>(a, b, 0, pair, chunk_off.data());
            continue;
          }
        }
        for (std::size_t r = 0; r < 32 && r < rows; ++r) {
          int off[PL][2];
          row_offsets(int(r), off);
          const cursor& r0 = cursors[r];
          const cursor* r1 = r + 32 < rows ? &cursors[r + 32] : nullptr;
          bool in_place = false;  // (assembled codes have no in-place form)
          if constexpr (cursor::form != code_form::assembled) {
            in_place = r0.whole64(k0);
            if (in_place) row_pair_planes<cursor::form>(r0.at(k0), r1 ? r1->at(k0) : nullptr, cursor::stride, planes);
          }
          if (!in_place) {
            r0.codes64(k0, c0);
            if (r1) r1->codes64(k0, c1);
            row_pair_planes<code_form::bytes>(c0, r1 ? c1 : nullptr, 0, planes);
          }
          for (std::size_t j = 0; j < n8; ++j) {
            const uint8_t* b = planes[0] + 8 * j;
            for (int s2 = 0; s2 < 2; ++s2, b += 64) {
              if constexpr (planes_side_by_side<P>()) {
                for (int p = 0; p + 1 < PL; p += 2) std::memcpy(pair[j] + off[p][s2], b + p, 2);
                if constexpr (PL % 2 == 1) pair[j][off[PL - 1][s2]] = b[PL - 1];
              } else {
                for (int p = 0; p < PL; ++p) pair[j][off[p][s2]] = b[p];
              }
            }
          }
        }
      }
    } else {
      for (int r = 0; r < R; ++r) {
        const std::size_t m = t * std::size_t(R) + std::size_t(r);
        if (m >= M) break;
        int off[PL][2];
        row_offsets(r, off);
        const int sh0 = S.index_shift(r, 0), sh1 = S.index_shift(r, 1);
        pf.step();
        const auto c = src.row(m);
        walk(t, sp0, sp1, [&](uint8_t* pair, std::size_t k0) {
          const uint64_t x = c.codes8(k0);
          for (int p = 0; p < PL; ++p) {
            const unsigned b = plane_byte(x, p);
            pair[off[p][0]] |= uint8_t((b & 0x0Fu) << sh0);
            pair[off[p][1]] |= uint8_t((b >> 4) << sh1);
          }
        });
      }
    }
    }
  }
}

// The blob of a code source, tile by tile over `pool`'s threads, into `out` (a blob of the
// source's shape: its storage is overwritten). Each thread clears the tiles its walk does not
// store whole (padded rows, padded K, or-ed layouts) and packs them.
template <class P, class Src>
void pack_source_into(packed_weights<P>& out, const Src& src, thread_pool* pool) {
  require(!out.empty() && out.M() == src.M() && out.K() == src.K(), "pack into a blob: the blob is ",
          out.empty() ? std::string("empty") : std::to_string(out.M()) + " x " + std::to_string(out.K()),
          ", the tensor ", src.M(), " x ", src.K());
  const packed_layout& L = out.layout();
  uint8_t* d = out.data();
  constexpr std::size_t R = std::size_t(P::spec.rows_per_tile);
  const bool whole_k = (src.K() + 7) / 8 == L.step_pairs();
  auto tiles = [&](std::size_t t0, std::size_t t1) {
    for (std::size_t t = t0; t < t1; ++t)
      if (!(pack_writes_whole_bytes<P>() && whole_k && (t + 1) * R <= src.M()))
        for (std::size_t b = 0; b < L.bands; ++b) std::memset(d + L.panel_offset(t, b), 0, L.panel_bytes(b));
    if constexpr (P::spec.super_k > 0)  // (the super table: padded rows' entries 0)
      for (std::size_t t = t0; t < t1; ++t)
        for (std::size_t u = 0; u < L.supers; ++u)
          std::memset(d + L.super_offset(t, u * std::size_t(P::spec.groups_per_super())), 0, std::size_t(P::spec.super_bytes()));
    if constexpr (P::spec.ternary) pack_ternary_tiles(src.q, d, L, t0, t1);
    else pack_tiles<P>(src, d, L, t0, t1);
  };
  if (pool == nullptr || pool->size() <= 1 || L.tiles <= 1) {
    tiles(0, L.tiles);
  } else {
    const std::size_t parts = std::min(pool->size(), L.tiles);
    pool->run(parts, [&](std::size_t i) { tiles(L.tiles * i / parts, L.tiles * (i + 1) / parts); });
  }
}
template <class P, class Src>
packed_weights<P> pack_source(const Src& src, thread_pool* pool) {
  // (the pages are first touched by the threads that pack them)
  packed_weights<P> out(src.M(), src.K(), data_uninitialized_t{});
  pack_source_into(out, src, pool);
  return out;
}

template <class P, class Block>
ggml_source<P, Block> ggml_tensor(const char* what, const void* blocks, std::size_t M, std::size_t K,
                                  std::size_t nbytes) {
  check_ggml_tensor<P, Block>(what, blocks, M, K, nbytes);
  return {what, static_cast<const unsigned char*>(blocks), M, K};
}
template <class P, class Block>
ggml_superblock_source<P, Block> ggml_superblock_tensor(const char* what, const void* blocks, std::size_t M,
                                                        std::size_t K, std::size_t nbytes) {
  check_ggml_superblocks<P, Block>(what, blocks, M, K, nbytes);
  return {what, static_cast<const unsigned char*>(blocks), M, K};
}
}  // namespace detail

// The blob of q for P, tile by tile (over `pool`'s threads when given): the bytes the element map
// defines (tests/test_layout.cpp compares them with detail::pack_by_element_map).
template <class P>
packed_weights<P> pack(const quantized<P>& q, thread_pool* pool = nullptr) {
  detail::require(q.M > 0 && q.K > 0 && q.codes.size() == q.M * q.K, "pack: quantized tensor is empty or inconsistent");
  return detail::pack_source<P>(detail::quantized_source<P>{q}, pool);
}
// The same bytes written over `out`, a blob of q's shape (an engine's buffer reused: no new pages)
template <class P>
void pack_into(packed_weights<P>& out, const quantized<P>& q, thread_pool* pool = nullptr) {
  detail::require(q.M > 0 && q.K > 0 && q.codes.size() == q.M * q.K, "pack: quantized tensor is empty or inconsistent");
  detail::pack_source_into(out, detail::quantized_source<P>{q}, pool);
}

// llama.cpp block tensors straight to a blob, the blocks read in place (no per-weight codes):
// the same bytes as pack(import_q4_0<P>(...)) and the same checks and errors as the importers
// (quant.hpp), with "pack_q4_0" ... naming the call. The _into forms write over `out`, a blob of
// the tensor's shape.
template <class P>
packed_weights<P> pack_q4_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_q4_0>("pack_q4_0", blocks, M, K, nbytes), pool);
}
template <class P>
packed_weights<P> pack_q8_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_q8_0>("pack_q8_0", blocks, M, K, nbytes), pool);
}
template <class P>
packed_weights<P> pack_iq4_nl(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                              thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_iq4_nl>("pack_iq4_nl", blocks, M, K, nbytes),
                                pool);
}
template <class P>
packed_weights<P> pack_q4_1(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_q4_1>("pack_q4_1", blocks, M, K, nbytes), pool);
}
template <class P>
packed_weights<P> pack_q5_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_q5_0>("pack_q5_0", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_q5_0_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_q5_0>("pack_q5_0", blocks, M, K, nbytes), pool);
}
template <class P>
packed_weights<P> pack_q5_1(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_q5_1>("pack_q5_1", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_q5_1_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_q5_1>("pack_q5_1", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_q4_1_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_q4_1>("pack_q4_1", blocks, M, K, nbytes), pool);
}
template <class P>
packed_weights<P> pack_tq2_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                             thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_tq2_0>("pack_tq2_0", blocks, M, K, nbytes), pool);
}
template <class P>
packed_weights<P> pack_tq1_0(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                             thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_tensor<P, detail::ggml_tq1_0>("pack_tq1_0", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_tq2_0_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                     std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_tq2_0>("pack_tq2_0", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_tq1_0_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                     std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_tq1_0>("pack_tq1_0", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_q4_0_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_q4_0>("pack_q4_0", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_q8_0_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_q8_0>("pack_q8_0", blocks, M, K, nbytes), pool);
}
template <class P>
void pack_iq4_nl_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                      std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_tensor<P, detail::ggml_iq4_nl>("pack_iq4_nl", blocks, M, K, nbytes),
                           pool);
}

// llama.cpp K-quant tensors (quant/kquant.hpp) straight to a blob, the super-blocks read in
// place: the same bytes as pack(import_q4_k<P>(...)), the same checks and errors.
template <class P>
packed_weights<P> pack_q4_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_superblock_tensor<P, detail::ggml_q4_k>("pack_q4_k", blocks, M, K, nbytes),
                                pool);
}
template <class P>
void pack_q4_k_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_superblock_tensor<P, detail::ggml_q4_k>("pack_q4_k", blocks, M, K, nbytes),
                           pool);
}
template <class P>
packed_weights<P> pack_q6_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_superblock_tensor<P, detail::ggml_q6_k>("pack_q6_k", blocks, M, K, nbytes),
                                pool);
}
template <class P>
void pack_q6_k_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_superblock_tensor<P, detail::ggml_q6_k>("pack_q6_k", blocks, M, K, nbytes),
                           pool);
}
template <class P>
packed_weights<P> pack_q3_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_superblock_tensor<P, detail::ggml_q3_k>("pack_q3_k", blocks, M, K, nbytes),
                                pool);
}
template <class P>
void pack_q3_k_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_superblock_tensor<P, detail::ggml_q3_k>("pack_q3_k", blocks, M, K, nbytes),
                           pool);
}
template <class P>
packed_weights<P> pack_q5_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_superblock_tensor<P, detail::ggml_q5_k>("pack_q5_k", blocks, M, K, nbytes),
                                pool);
}
template <class P>
void pack_q5_k_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_superblock_tensor<P, detail::ggml_q5_k>("pack_q5_k", blocks, M, K, nbytes),
                           pool);
}
template <class P>
packed_weights<P> pack_q2_k(const void* blocks, std::size_t M, std::size_t K, std::size_t nbytes = unknown_size,
                            thread_pool* pool = nullptr) {
  return detail::pack_source<P>(detail::ggml_superblock_tensor<P, detail::ggml_q2_k>("pack_q2_k", blocks, M, K, nbytes),
                                pool);
}
template <class P>
void pack_q2_k_into(packed_weights<P>& out, const void* blocks, std::size_t M, std::size_t K,
                    std::size_t nbytes = unknown_size, thread_pool* pool = nullptr) {
  detail::pack_source_into(out, detail::ggml_superblock_tensor<P, detail::ggml_q2_k>("pack_q2_k", blocks, M, K, nbytes),
                           pool);
}

}  // namespace lutkit
