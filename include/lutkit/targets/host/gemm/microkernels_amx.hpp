// lutkit — the dequant-GEMM's micro-kernels on AMX tiles (Sapphire Rapids and later), 64 weight
// rows x 16 activation columns per call (gemm/microkernel.hpp: mk_int8_rows_args,
// mk_bf16_rows_args). The step-major levels (k4 step s of 16 rows: 64 bytes at W + 256 s + 64 j)
// and bf16 pairs are already the B operand's layout, so they are loaded as they are, 256 bytes
// apart; the activations are the A operand, row-major (dq_activations::rows).
//   int8: per flush group, tdpbsud (s8 activations x u8 levels) into int32 tiles, stored, then
//         mk_int8's fp32 epilogue with AVX-512 in its order (the same bits);
//   bf16: tdpbf16ps into fp32 tiles that hold C for the whole call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../../gemm/microkernel.hpp"
#include "isa_avx512.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

#define LUTKIT_AMX_DQ                                                                                               \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx512vbmi,fma,f16c,amx-tile," \
                        "amx-int8,amx-bf16")))

namespace lutkit::detail::amx {

struct alignas(64) tile_config {  // ldtilecfg's operand, palette 1
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Loads cfg where the tile unit's configuration (sttilecfg: zeros after a release) differs: the
// kernels leave their tiles configured between calls, and the driver puts back the thread's own
// state once its share of a GEMM is done (dq_kernel_set::tiles_save / tiles_done). A release and
// an ldtilecfg per call cost about 176 TSC cycles, a quarter of a 256-k call of 16 products (Intel
// Xeon with AMX, a scratch program timing the kernel alone).
LUTKIT_AMX_DQ inline void use_config(const tile_config& cfg) {
  tile_config cur;
  _tile_storeconfig(&cur);
  if (std::memcmp(&cur, &cfg, sizeof cfg) != 0) _tile_loadconfig(&cfg);
}
// dq_kernel_set::tiles_save: the thread's configuration before a GEMM's share
LUTKIT_AMX_DQ inline void save_tiles(dq_tile_state& s) { _tile_storeconfig(s.bytes); }
// dq_kernel_set::tiles_done: the saved configuration back where it differs (another library's on
// the thread, e.g. ggml's, which loads its own once per thread and expects it to stay: its tile
// data is not kept, its configuration is), or the tiles released where none was loaded
LUTKIT_AMX_DQ inline void restore_tiles(const dq_tile_state& s) {
  if (s.bytes[0] == 0) {
    _tile_release();
    return;
  }
  dq_tile_state cur;
  _tile_storeconfig(cur.bytes);
  if (std::memcmp(cur.bytes, s.bytes, sizeof cur.bytes) != 0) _tile_loadconfig(s.bytes);
}
// the calling thread's tile state saved for a scope and put back at its end, exceptions included
// (the attention's AMX tile; the dequant-GEMM's driver does the same through its kernel set,
// dq_tiles_guard)
struct tiles_scope {
  dq_tile_state saved;
  LUTKIT_AMX_DQ tiles_scope() { save_tiles(saved); }
  LUTKIT_AMX_DQ ~tiles_scope() { restore_tiles(saved); }
  tiles_scope(const tiles_scope&) = delete;
  tiles_scope& operator=(const tiles_scope&) = delete;
};
// whether the calling thread's tiles are configured (a palette loaded and not released)
LUTKIT_AMX_DQ inline bool tiles_configured() {
  tile_config cur;
  _tile_storeconfig(&cur);
  return cur.palette != 0;
}

// k per tile product: the largest multiple of 4 up to 64 that divides the group's k
inline std::size_t tile_k(std::size_t group_k) {
  for (std::size_t kt = 64; kt > 4; kt -= 4)
    if (group_k % kt == 0) return kt;
  return 4;
}

// One half of the tile (32 rows, from row 32 h) over every group of the call, software-pipelined:
// the products of group g + 1 go to the other pair of sum tiles while group g's epilogue runs.
// Tiles: 2 S and 2 S + 1 the int32 sums of set S (16 columns x 16 rows each), 4 + S the
// activations of set S (16 columns x kt bytes), 6 and 7 the levels of the two 16-row blocks
// (kt / 4 steps x 16 rows x 4 bytes).
// (the tile numbers of GCC's tile intrinsics are spelled into their assembly: literal numbers,
// hence one function per set, written by a macro)
#define LK_AMX_GROUP(S, C0, C1, AT)                                                                       \
  LUTKIT_AMX_DQ inline void amx_group_##S(const mk_int8_rows_args& a, std::size_t g, std::size_t h,     \
                                          std::size_t gk, std::size_t kt) {                             \
    _tile_zero(C0);                                                                                     \
    _tile_zero(C1);                                                                                     \
    for (std::size_t k = g * gk; k < (g + 1) * gk; k += kt) {                                           \
      const uint8_t* w = a.W + k * 64 + 128 * h; /* (step k / 4, 256 bytes a step) */                   \
      _tile_loadd(AT, a.X + k, a.ldx);                                                                  \
      _tile_loadd(6, w, 256);                                                                           \
      _tile_dpbsud(C0, AT, 6);                                                                          \
      _tile_loadd(7, w + 64, 256);                                                                      \
      _tile_dpbsud(C1, AT, 7);                                                                          \
    }                                                                                                   \
  }                                                                                                     \
  LUTKIT_AMX_DQ inline void amx_store_##S(int32_t(*sums)[16][16]) {                                     \
    _tile_stored(C0, sums[0], 64);                                                                      \
    _tile_stored(C1, sums[1], 64);                                                                      \
  }
LK_AMX_GROUP(0, 0, 1, 4)
LK_AMX_GROUP(1, 2, 3, 5)
#undef LK_AMX_GROUP

// the fp32 epilogue of group g for rows r0 .. r0 + 16 RB - 1: mk_int8's operations in its order.
// sums[p * RB + b]: plane p's int32 sums of the b-th 16-row block ([column][row]), the planes
// added first (plane p shifted by p a.plane_shift: exact int32). SA: per-group activation scales
// (a.sa); Z: the zero folded into the sums (a.zsum), else the minimum's term. The group's weight
// scales are loaded once, the column's scalars broadcast from memory, and the arguments read into
// locals (stores to C may alias a.*, as far as the compiler knows: it reloaded them, and tested
// a.sa and a.zsum, in every column).
template <bool SA, bool Z, int P, int RB>
LUTKIT_AMX_DQ inline void amx_epilogue(const mk_int8_rows_args& a, std::size_t g, std::size_t r0,
                                       const int32_t (*sums)[16][16]) {
  __m512 w[RB], m[RB];
  for (int b = 0; b < RB; ++b) {
    w[b] = _mm512_loadu_ps(a.sw + g * 64 + r0 + 16 * b);
    m[b] = Z ? _mm512_setzero_ps() : _mm512_loadu_ps(a.swz + g * 64 + r0 + 16 * b);
  }
  const std::size_t e0 = g * a.ldsum, cols = a.cols;
  const int32_t* const zs = Z ? a.zsum + e0 : nullptr;
  const float* const sas = SA ? a.sa + e0 : nullptr;
  const float* const sxs = a.sumx + e0;
  float* const C = a.C + r0;
  __m128i shift[P > 1 ? P : 1];
  for (int p = 0; p < P; ++p) shift[p] = _mm_cvtsi32_si128(p * a.plane_shift);
  for (std::size_t n = 0; n < cols; ++n) {
    float* c = C + n * 64;
    for (int b = 0; b < RB; ++b) {
      __m512i s = _mm512_load_si512(sums[b][n]);
      for (int p = 1; p < P; ++p)
        s = _mm512_add_epi32(s, _mm512_sll_epi32(_mm512_load_si512(sums[p * RB + b][n]), shift[p]));
      if constexpr (Z) s = _mm512_add_epi32(s, _mm512_set1_epi32(zs[n]));
      __m512 f = _mm512_cvtepi32_ps(s);
      if constexpr (SA) f = _mm512_mul_ps(f, _mm512_set1_ps(sas[n]));
      __m512 v = _mm512_fmadd_ps(f, w[b], _mm512_loadu_ps(c + 16 * b));
      if constexpr (!Z) v = _mm512_fmadd_ps(_mm512_set1_ps(-sxs[n]), m[b], v);
      _mm512_storeu_ps(c + 16 * b, v);
    }
  }
}

template <bool SA, bool Z>
LUTKIT_AMX_DQ inline void amx_int8_halves(const mk_int8_rows_args& a, std::size_t gk, std::size_t kt) {
  // group g's sums are stored while group g + 1's products run, and read by the epilogue one
  // group later (a load of bytes a tile store has just written waits for the store)
  alignas(64) int32_t sums[2][2][16][16];
  for (std::size_t h = 0; h < 2; ++h) {
    amx_group_0(a, 0, h, gk, kt);
    for (std::size_t g = 0; g < a.groups; ++g) {
      if (g + 1 < a.groups) {
        if (g % 2) amx_group_0(a, g + 1, h, gk, kt);
        else amx_group_1(a, g + 1, h, gk, kt);
      }
      if (g % 2)
        amx_store_1(sums[1]);
      else
        amx_store_0(sums[0]);
      if (g > 0) amx_epilogue<SA, Z, 1, 2>(a, g - 1, 32 * h, sums[(g - 1) % 2]);
    }
    amx_epilogue<SA, Z, 1, 2>(a, a.groups - 1, 32 * h, sums[(a.groups - 1) % 2]);
  }
}

// The fold in planes (a.planes P = 2 or 3, the super-group fold's 256-k groups, whose products
// outweigh an epilogue): a group at a time, one plane at a time over the four 16-row blocks (four
// independent sums in tiles 0-3), the activations in 4, the levels in 5, 6 and 7 in turn; every
// plane's sums stored, then one epilogue for the 64 rows.
template <bool SA, bool Z, int P>
LUTKIT_AMX_DQ inline void amx_int8_planes(const mk_int8_rows_args& a, std::size_t gk, std::size_t kt) {
  alignas(64) int32_t pl[P * 4][16][16];
  for (std::size_t g = 0; g < a.groups; ++g) {
    for (int p = 0; p < P; ++p) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (std::size_t k = g * gk; k < (g + 1) * gk; k += kt) {
        const uint8_t* w = a.W + k * 64 + std::size_t(p) * a.plane_bytes;
        _tile_loadd(4, a.X + k, a.ldx);
        _tile_loadd(5, w, 256);
        _tile_dpbsud(0, 4, 5);
        _tile_loadd(6, w + 64, 256);
        _tile_dpbsud(1, 4, 6);
        _tile_loadd(7, w + 128, 256);
        _tile_dpbsud(2, 4, 7);
        _tile_loadd(5, w + 192, 256);
        _tile_dpbsud(3, 4, 5);
      }
      _tile_stored(0, pl[4 * p], 64);
      _tile_stored(1, pl[4 * p + 1], 64);
      _tile_stored(2, pl[4 * p + 2], 64);
      _tile_stored(3, pl[4 * p + 3], 64);
    }
    amx_epilogue<SA, Z, P, 4>(a, g, 0, pl);
  }
}

// the kernel of a's form: its planes, activation scales or not, folded zero or not
template <int Planes>
LUTKIT_AMX_DQ inline void amx_int8_forms(const mk_int8_rows_args& a, std::size_t gk, std::size_t kt) {
  constexpr auto run = []<bool SA, bool Z>(const mk_int8_rows_args& b, std::size_t k, std::size_t t) {
    if constexpr (Planes > 1)
      amx_int8_planes<SA, Z, Planes>(b, k, t);
    else
      amx_int8_halves<SA, Z>(b, k, t);
  };
  if (a.sa)
    a.zsum ? run.template operator()<true, true>(a, gk, kt) : run.template operator()<true, false>(a, gk, kt);
  else
    a.zsum ? run.template operator()<false, true>(a, gk, kt) : run.template operator()<false, false>(a, gk, kt);
}

LUTKIT_AMX_DQ inline void mk_int8_rows(const mk_int8_rows_args& a) {
  const std::size_t gk = 4 * a.steps, kt = tile_k(gk);
  // the form's tiles: its sums (16 columns x 16 rows of int32), then its activations (16 columns
  // x kt bytes), then its levels (kt / 4 steps x 64 bytes): amx_int8_halves 0-3, 4-5, 6-7;
  // amx_int8_planes 0-3, 4, 5-7
  const int sums = 4, acts = a.planes == 1 ? 2 : 1;
  tile_config cfg;
  for (int i = 0; i < 8; ++i) {
    cfg.rows[i] = uint8_t(i < sums + acts ? 16 : kt / 4);
    cfg.colsb[i] = uint16_t(i < sums || i >= sums + acts ? 64 : kt);
  }
  use_config(cfg);
  if (a.planes == 3)
    amx_int8_forms<3>(a, gk, kt);
  else if (a.planes == 2)
    amx_int8_forms<2>(a, gk, kt);
  else
    amx_int8_forms<1>(a, gk, kt);
}

// bf16: the four 16-row blocks' fp32 sums stay in tiles 0-3 for the whole call (loaded from C
// and stored back once: no epilogue), the activations in tiles 4 and 6 and the pairs of levels
// in 5 and 7 alternately, 16 k pairs a product; the last steps % 16 pairs with tiles 6 and 7
// configured to their size.
#define LK_AMX_BF16_STEP(TA, TB)                                                                       \
  LUTKIT_AMX_DQ inline void amx_bf16_step_##TA(const mk_bf16_rows_args& a, std::size_t s) {          \
    const uint32_t* w = a.W + s * 64; /* (pair step s: 64 rows of 4 bytes) */                        \
    _tile_loadd(TA, a.X + 2 * s, a.ldx * 2);                                                         \
    _tile_loadd(TB, w, 256);                                                                         \
    _tile_dpbf16ps(0, TA, TB);                                                                       \
    _tile_loadd(TB, w + 16, 256);                                                                    \
    _tile_dpbf16ps(1, TA, TB);                                                                       \
    _tile_loadd(TB, w + 32, 256);                                                                    \
    _tile_dpbf16ps(2, TA, TB);                                                                       \
    _tile_loadd(TB, w + 48, 256);                                                                    \
    _tile_dpbf16ps(3, TA, TB);                                                                       \
  }
LK_AMX_BF16_STEP(4, 5)
LK_AMX_BF16_STEP(6, 7)
#undef LK_AMX_BF16_STEP
LUTKIT_AMX_DQ inline void amx_bf16_config(std::size_t cols, std::size_t rem) {
  tile_config cfg;
  for (int i = 0; i < 4; ++i) cfg.rows[i] = uint8_t(cols), cfg.colsb[i] = 64;
  const std::size_t k6 = rem ? rem : 16;  // (tiles 6 and 7: the remainder's pairs, else 16)
  cfg.rows[4] = uint8_t(cols), cfg.colsb[4] = 64;
  cfg.rows[5] = 16, cfg.colsb[5] = 64;
  cfg.rows[6] = uint8_t(cols), cfg.colsb[6] = uint16_t(4 * k6);
  cfg.rows[7] = uint8_t(k6), cfg.colsb[7] = 64;
  use_config(cfg);
}
LUTKIT_AMX_DQ inline void mk_bf16_rows(const mk_bf16_rows_args& a) {
  const std::size_t full = a.steps / 16, rem = a.steps % 16;
  amx_bf16_config(a.cols, rem);
  _tile_loadd(0, a.C, 256);  // (C: 64 floats a column)
  _tile_loadd(1, a.C + 16, 256);
  _tile_loadd(2, a.C + 32, 256);
  _tile_loadd(3, a.C + 48, 256);
  std::size_t b = 0;
  if (rem == 0)  // tiles 6 and 7 hold 16 pairs: alternate
    for (; b + 2 <= full; b += 2) {
      amx_bf16_step_4(a, 16 * b);
      amx_bf16_step_6(a, 16 * b + 16);
    }
  for (; b < full; ++b) amx_bf16_step_4(a, 16 * b);
  if (rem) amx_bf16_step_6(a, 16 * full);
  _tile_stored(0, a.C, 256);
  _tile_stored(1, a.C + 16, 256);
  _tile_stored(2, a.C + 32, 256);
  _tile_stored(3, a.C + 48, 256);
}

}  // namespace lutkit::detail::amx

#include "../intrinsics_end.hpp"
#endif
