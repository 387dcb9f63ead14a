// lutkit — the packing family's portable micro-kernel: a row pair's bit planes, one plane_byte
// multiply per plane and step pair (targets/host/packing/pack_avx512.hpp gives the same bytes with GFNI).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../quant/packed_weights.hpp"
#include "../quant/quant.hpp"

namespace lutkit::detail {

// The planes of a row pair's 64 codes: p0, p1 the codes of rows r and r + 32 at k0 .. k0 + 63
// in form F (quant.hpp, code_form; p1 null: a padded row, all zero); out[s][8 j + p] is plane p
// of step 2 j + s (plane_byte's nibble s), row r in the low nibble, row r + 32 in the high one.
// (packing/targets.hpp picks this or the AVX-512 + GFNI kernel; the same bytes.)
template <code_form F>
void row_pair_planes_scalar(const uint8_t* p0, const uint8_t* p1, std::size_t stride, uint8_t (*out)[64]) {
  auto codes8 = [&](const uint8_t* p, int j) -> uint64_t {
    if (p == nullptr) return 0;
    if constexpr (F == code_form::bytes) return load_codes8(p, std::size_t(8 * j), std::size_t(64));
    else if constexpr (F == code_form::ggml_nibbles) return ggml_q4_0::codes8(p + (j / 4) * stride, unsigned(8 * j % 32));
    else return ggml_q8_0::codes8(p + (j / 4) * stride, unsigned(8 * j % 32));
  };
  for (int j = 0; j < 8; ++j) {
    const uint64_t x0 = codes8(p0, j), x1 = codes8(p1, j);
    for (int p = 0; p < 8; ++p) {
      const unsigned b0 = plane_byte(x0, p), b1 = plane_byte(x1, p);
      out[0][8 * j + p] = uint8_t((b0 & 0x0Fu) | ((b1 << 4) & 0xF0u));
      out[1][8 * j + p] = uint8_t((b0 >> 4) | (b1 & 0xF0u));
    }
  }
}

// A tile's 32 row pairs over 64 codes to the 8 step pairs they fill, in a host layout whose planes
// 2 q and 2 q + 1 of step s sit as one 16-bit word per row pair in a 64-byte chunk (row pair r's
// word at byte 2 r, low byte plane 2 q), and an odd PL's last plane as one byte per row pair
// (row pairs r and r + 16 at bytes 2 r and 2 r + 1 of its chunk, r < 16): p0[r], p1[r] the
// codes of rows r and r + 32 at k0 (p1[r] null: a padded row); chunk (q, s) of step pair j is
// at dst[j] + off[2 q + s]. Row pair by row pair, each one's planes from planes_of (a
// row_pair_planes kernel).
template <code_form F, int PL, class Planes>
void row_pairs_step_pairs8_by_rows(const uint8_t* const* p0, const uint8_t* const* p1, std::size_t stride,
                                   uint8_t* const* dst, const int* off, Planes planes_of) {
  static_assert(PL >= 1 && PL <= 8, "row_pairs_step_pairs8: 1 to 8 planes");
  uint8_t planes[2][64];
  for (int r = 0; r < 32; ++r) {
    planes_of(p0[r], p1[r], stride, planes);
    for (int j = 0; j < 8; ++j)
      for (int s = 0; s < 2; ++s) {
        for (int q = 0; q < PL / 2; ++q) std::memcpy(dst[j] + off[2 * q + s] + 2 * r, &planes[s][8 * j + 2 * q], 2);
        if constexpr (PL % 2 == 1) dst[j][off[PL - 1 + s] + 2 * (r % 16) + r / 16] = planes[s][8 * j + PL - 1];
      }
  }
}
// the portable twin of the AVX-512 kernel (targets/host/packing/pack_avx512.hpp)
template <code_form F, int PL>
void row_pairs_step_pairs8_scalar(const uint8_t* const* p0, const uint8_t* const* p1, std::size_t stride,
                                  uint8_t* const* dst, const int* off) {
  row_pairs_step_pairs8_by_rows<F, PL>(p0, p1, stride, dst, off, row_pair_planes_scalar<F>);
}

// Whole codes (4 or 8 bits a code, 4 bytes per row and step): 8 rows' 64 codes to the 8 step
// pairs they fill, p[i] the codes of row r0 + i at k0 in form F; step pair j's dwords of the 8
// rows are 32 bytes at dst[j] + o0 (4 bits: step 2 j's code i in the low nibble of byte i, step
// 2 j + 1's in the high one; 8 bits: step 2 j's codes there, step 2 j + 1's at dst[j] + o1).
template <code_form F, int PL>
void whole_codes_rows8_scalar(const uint8_t* const* p, std::size_t stride, uint8_t* const* dst, int o0, int o1) {
  static_assert(PL == 4 || PL == 8, "whole codes: 4 or 8 bits");
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      uint64_t x;
      if constexpr (F == code_form::bytes) x = load_codes8(p[i], std::size_t(8 * j), std::size_t(64));
      else if constexpr (F == code_form::ggml_nibbles) x = ggml_q4_0::codes8(p[i] + (j / 4) * stride, unsigned(8 * j % 32));
      else x = ggml_q8_0::codes8(p[i] + (j / 4) * stride, unsigned(8 * j % 32));
      if constexpr (PL == 8) {
        const uint32_t lo = uint32_t(x), hi = uint32_t(x >> 32);
        std::memcpy(dst[j] + o0 + 4 * i, &lo, 4);
        std::memcpy(dst[j] + o1 + 4 * i, &hi, 4);
      } else {
        const uint32_t v = (uint32_t(x) & 0x0F0F0F0Fu) | ((uint32_t(x >> 32) & 0x0F0F0F0Fu) << 4);
        std::memcpy(dst[j] + o0 + 4 * i, &v, 4);
      }
    }
}

// The codes of a tile kernel's 32 row pairs two calls ahead (the same rows' next 64 codes but
// one), for the SIMD tile kernels: 64 rows read 36-68 bytes each per call are more streams than
// the hardware prefetcher follows (docs/design_measurements.md, "Packer prefetch").
template <code_form F>
inline void prefetch_tile_codes(const uint8_t* const* p0, const uint8_t* const* p1, std::size_t stride) {
  const std::size_t span = F == code_form::bytes ? 64 : 2 * stride, ahead = 2 * span;
  for (int r = 0; r < 32; ++r)
    for (std::size_t o = 0; o < span; o += 64) {
      __builtin_prefetch(p0[r] + ahead + o);
      if (p1[r]) __builtin_prefetch(p1[r] + ahead + o);
    }
}

// the portable twin of f16_strided (packing/targets.hpp)
inline void f16_strided_scalar(const float* s, std::size_t stride, std::size_t n, uint8_t* out) {
  for (std::size_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_f16(s[i * stride]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

}  // namespace lutkit::detail
