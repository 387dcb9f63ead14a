// lutkit — the dequant-GEMM's micro-kernel interface: the argument blocks and the kernel set a
// target provides (the rule for every target: the family's driver calls a target only through
// this set, chosen in gemm/targets.hpp). The portable C++ implementation of every entry is in
// gemm/portable_kernels.hpp; targets/host/gemm/kernel_set_avx512.hpp and kernel_set_avx2.hpp
// assemble the same contracts implemented with intrinsics.
//
// Register tile ("rows in lanes"): the 64 weight rows of the tile in 4 vectors x NC activation
// columns (broadcast), so the step-major weights are read with 4 full-width loads per step and
// (int8) the group scales and zeros are row vectors.
//   W   step-major levels: k4 step s, row r at W[s * 256 + 4 * r] (4 bytes)
//   A   activation panel, a block of columns: step s, column j at A[s * lda + 4 * j] (4 int8)
//   C   column-major: column j, row r at C[j * 64 + r]
// bf16 / fp32: the same with 32-bit elements: a step is a pair of bf16 (k2) or one fp32 (k);
//   W   step-major values: step s, row r at W[s * 64 + r];  A  step s, column j at A[s * lda + j]
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "../core/tiling.hpp"

namespace lutkit::detail {

// The int8 panel's k4 step of column n (the A layout above: 4 int8 at step[4 n]) as one dword,
// the form every int8 micro-kernel broadcasts
inline int32_t panel_quad(const int8_t* step, int n) {
  int32_t q;
  __builtin_memcpy(&q, step + 4 * n, 4);
  return q;
}

struct mk_int8_args {
  const uint8_t* W;    // step-major levels of the 64 rows, at the first step of the call
  const int8_t* A;     // activation panel at the first column and step of the call
  std::size_t lda;     // bytes between k4 steps of the panel (4 * the column block)
  std::size_t steps;   // k4 steps per flush group
  std::size_t groups;  // flush groups in this call
  float* C;            // column-major accumulators of the call's first column
  const float* sw;     // [group][64]: weight scale of each row
  const float* swz;    // [group][64]: scale * zero of each row
  const float* sumx;  // [group][ldsum]: sum of the (scaled, if sa) int8 activations of the group
  const float* sa;    // [group][ldsum] activation scale per group, or null (per-row scale, applied later)
  std::size_t ldsum;
  // [group][ldsum]: the int32 sums' starting values -z * sum(q) of a format whose zero is one
  // integer z for every row and group (the zero folded into the integer dot: the epilogue is then
  // c += sw * float(acc) [* sa], and swz and sumx are not read), or null
  const int32_t* zsum = nullptr;
  // every level in W is at most this (the source's int8_level_max): a kernel may multiply levels
  // below 128 as u8 x s8 pairs whose int16 sums cannot saturate (the AVX2 set's vpmaddubsw)
  int level_max = 255;
};
// The int8 micro-kernel over row-major activations (a matrix unit's form, AMX): the 64 rows of
// mk_int8_args' W and epilogue, for `cols` <= mk_rows_cols activation columns whose int8
// values are rows of X (column j, k-th value of the call at X[j * ldx + k]; the rows up to
// mk_rows_cols are read, those past `cols` must exist and their sums are discarded). The
// scales, sums and zero sums as in mk_int8_args, column j at [g * ldsum + j]; C column j at C + 64 j.
// The same bits as mk_int8 on the same values: exact int32 sums per group, then the same epilogue.
// planes (the super-group fold in planes, gemm/dequant.hpp int8_super_fold_planes): `planes` sets
// of levels in W's layout, plane j at W + j plane_bytes, whose sums count 2^(j plane_shift) times:
// the group's sum is sum_j 2^(j plane_shift) sum(W_j x) (exact int32); 1: one plane.
struct mk_int8_rows_args {
  const uint8_t* W;
  const int8_t* X;
  std::size_t ldx;
  std::size_t cols;
  std::size_t steps;
  std::size_t groups;
  float* C;
  const float* sw;
  const float* swz;
  const float* sumx;
  const float* sa;
  std::size_t ldsum;
  const int32_t* zsum = nullptr;
  int planes = 1;
  std::size_t plane_bytes = 0;
  int plane_shift = 0;
};
inline constexpr std::size_t mk_rows_cols = 16;
// The bf16 micro-kernel over row-major activations (AMX): mk_val_args' W (bf16 pairs) and C for
// `cols` <= mk_rows_cols activation columns of bf16 values, column j's k-th value of the
// call at X[j * ldx + k], over `steps` k pairs. Only the `cols` rows of X and columns of C are
// touched.
struct mk_bf16_rows_args {
  const uint32_t* W;
  const uint16_t* X;
  std::size_t ldx;
  std::size_t cols;
  std::size_t steps;
  float* C;
};

struct mk_val_args {
  const uint32_t* W;  // step-major values (bf16 pairs or fp32 bits) of the 64 rows
  const uint32_t* A;  // activation panel at the call's first column and step
  std::size_t lda;    // 32-bit elements between steps of the panel (the column block)
  std::size_t steps;
  float* C;  // column-major accumulators of the call's first column
};
// The minimums of a min-form format's super-groups in integers (the super-group fold,
// dq_super_chunk): for each of `supers` super-groups s of `pairs` pairs of groups and each of NC
// columns j, C[j * 64 + r] += dmin[s * 64 + r] * float(sum over pairs p of the int16 dot of
// M[(s * pairs + p) * 64 + r] and S[(s * pairs + p) * lds + j]): M holds row r's two minimum codes
// (groups 2p and 2p + 1, low half first), S column j's two group sums of int8 activations, so the
// sum is exact and rounded once per super-group, where the fp32 route (mk_val over the groups'
// minimums) rounds once per group and does twice the multiply-adds.
struct mk_mins_args {
  const uint32_t* M;
  const float* dmin;
  const uint32_t* S;
  std::size_t lds;  // 32-bit elements between the pairs of S
  std::size_t pairs;
  std::size_t supers;
  float* C;
};
using mk_mins_fn = void (*)(const mk_mins_args&);

// FusedDQP dot: for each of `rows` dequantized rows and each of N activation rows, 16-lane
// partial sums of W[r][0:len] * x[n][0:len] added into part[(r * N + n) * 16 + lane].
struct fdq_dot_args {
  const float* W;
  std::size_t ldw;
  std::size_t rows;
  std::size_t len;  // a multiple of 16
  const float* x;
  std::size_t ldx;
  std::size_t N;
  float* part;
};
using fdq_dot_fn = void (*)(const fdq_dot_args&);
using mk_int8_fn = void (*)(const mk_int8_args&);
using mk_val_fn = void (*)(const mk_val_args&);
using mk_int8_rows_fn = void (*)(const mk_int8_rows_args&);
using mk_bf16_rows_fn = void (*)(const mk_bf16_rows_args&);

inline constexpr int mk_int8_cols = 3;  // int8: at most 3 columns x 64 rows per call
inline constexpr int mk_val_cols = 6;   // bf16 / fp32: at most 6 columns x 64 rows per call

// Tile groups (gemm/tile_group_gemm.hpp): n groups of 32 codes of `bits` bits, group i's
// codes at bits [shift[i], shift[i] + bits) of bytes codes[i][0..31] (unsigned, level = code),
// value = s[i] * (code - z[i]) rounded to bf16, written to out[32 * i + j].
struct tg_groups_args {
  const uint8_t* const* codes;
  const int* shift;
  const float* s;
  const float* z;
  std::size_t n;
  int bits;
  uint16_t* out;
};

// Tile groups, int8 decode (tile_group_gemv's int8 method): super-groups [0, n_sg) of one 32-row
// block (super-group s: k = 8 s .. 8 s + 7 from the range's first k, groups g = 2 q + h: k pair q,
// rows 16 h .. 16 h + 15). The 64 codes of k pair q are bytes qbyte[q] .. qbyte[q] + 63 of a
// super-group at bits [qshift[q], qshift[q] + bits), byte 2 r + i = row r, k 8 s + 2 q + i; group
// g's fp16 scale and zero at byte offsets soff[g], zoff[g] (zoff[0] < 0: symmetric, zero = zsym).
// Activations: int8 xq[n * ldq + k], scale xa[n * lda + k / 32] (per 32 k), and per k pair
// xp[n * ldp + k / 2] = xa * (xq_k + xq_k+1). For every n < nc:
//   acc[32 n + r] += sum over k of s_g * xa * (code - zero) * xq   (weights s (code - z))
// in fp32: per (group, row) the exact int16 pair dot times s_g * xa, the zero terms summed per
// group and subtracted at the end of the call.
struct tg_int8_args {
  const uint8_t* sg;
  std::size_t n_sg, sg_bytes;
  int bits;
  int qbyte[4], qshift[4];
  int soff[8], zoff[8];
  float zsym;
  const int8_t* xq;
  std::size_t ldq;
  const float* xa;
  std::size_t lda;
  const float* xp;
  std::size_t ldp;
  float* acc;
};
inline constexpr int tg_int8_cols = 4;  // columns per call
// whether the call's k pairs sit where super_group_map puts B-bit codes (pair q: byte 64 q % 32 B,
// shift 64 q / 32 B * B), and whether every activation scale keeps s * xa * 2^-16 normal
inline bool tg_int8_layout_is(const tg_int8_args& a, int B) {
  if (a.bits != B) return false;
  for (int q = 0; q < 4; ++q)
    if (a.qbyte[q] != 64 * q % (32 * B) || a.qshift[q] != 64 * q / (32 * B) * B) return false;
  return true;
}
inline bool tg_int8_wide_exact(const tg_int8_args& a, int nc) {
  for (int n = 0; n < nc; ++n)
    for (std::size_t i = 0; i < (a.n_sg + 3) / 4; ++i) {
      const float v = a.xa[std::size_t(n) * a.lda + i];
      if (v != 0.f && !(std::fabs(v) >= 0x1p-86f)) return false;
    }
  return true;
}
using tg_int8_fn = void (*)(const tg_int8_args&);

struct dq_activations;  // gemm/activations.hpp

// A thread's matrix-unit state as a kernel set saves it around a GEMM's share (AMX: the 64-byte
// tile configuration, palette 0 when none is loaded)
struct alignas(64) dq_tile_state {
  uint8_t bytes[64];
};

// One target's kernel set: int8 micro-kernels by NC, bf16 / fp32 by NV (index NC - 1 / NV - 1),
// level-2 lookups of 16-entry tables (wider tables always use the portable lookup), FusedDQP dot,
// conversions, and the target's instances of the driver's activation packing and tile write.
struct dq_kernel_set {
  const char* name;
  mk_int8_fn int8[mk_int8_cols];  // by NC - 1
  mk_val_fn bf16[mk_val_cols];  // by NC - 1
  mk_val_fn f32[mk_val_cols];
  void (*rows_to_steps)(const uint32_t*, std::size_t, std::size_t, uint32_t*);
  fdq_dot_fn fdq;
  void (*halves)(const uint16_t*, std::size_t, float*);  // fp16 -> fp32 (group scales, zeros)
  // level 2 of one scale group for the 64 rows of a tile (16-entry tables): per row r,
  // tbl[c] = sc[r] * (lv[c] - zz[r]) (fp32, or rounded to bf16), out[r * ldo + i] = tbl[codes[r * ldc + i]]
  void (*group16_f32)(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz,
                      bool min_form, std::size_t len, float* out, std::size_t ldo);
  void (*group16_bf16)(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz,
                       bool min_form, std::size_t len, uint16_t* out, std::size_t ldo);
  void (*tg_groups_bf16)(const tg_groups_args&);  // tile groups -> bf16 (one vector each)
  void (*tg_groups_f32)(const tg_groups_args&, float*);  // tile groups -> fp32 (two steps each)
  // bf16 level 2 from level 1's step-major codes straight into mk_val's step-major layout, for
  // E = 2, 4, 8, 16 codes (index log2(E) - 1; null: the row-major route, group16_bf16 +
  // rows_to_steps). tables: a group's 64 rows of E bf16 entries end to end, tab[r * E + c] =
  // value of code c (group16's arithmetic); steps: steps4 k4-steps of codes (codes[s * 256 + 4 r
  // + i]) -> 2 * steps4 steps of bf16 pairs (out[step * 64 + r]).
  void (*bf16_tables[4])(const float* lv, const float* sc, const float* zz, bool min_form, uint16_t* tab);
  void (*bf16_steps[4])(const uint8_t* codes, std::size_t steps4, const uint16_t* tab, uint32_t* out);
  // The driver's activation packing of row blocks [b0, b1) and its tile write (gemm/activations.hpp),
  // compiled for the target's instruction set: same bytes as the portable instances.
  void (*prepare_rows)(dq_activations& A, const float* x, std::size_t ldx, std::size_t b0, std::size_t b1);
  void (*write_tile)(const dq_activations& A, const float* C, std::size_t n0, std::size_t n1, std::size_t ma,
                     std::size_t mb, float* y, std::size_t ldy);
  // tile groups, int8 decode, by nc - 1 (null: the portable kernel)
  tg_int8_fn tg_int8[tg_int8_cols] = {nullptr, nullptr, nullptr, nullptr};
  // decode_method::best takes this set's int8 decode over the LUT-GEMV for the 4- and 8-plane
  // formats both serve (decode/decode_gemv.hpp): true where the int8 decode is the faster of the two
  // (AVX-512 VNNI; not AVX2, where the LUT-GEMV is: docs/llama_formats.md, "Decode")
  bool int8_decode_first = false;
  // level 2 of one scale group for formats whose levels are their codes and whose tables would
  // outgrow a register (8-bit codes): group16's contract with value = sc * (code - zz), or
  // sc * code + zz for min-form formats, computed per element (lv unused). Null: the portable kernel.
  void (*group_codes_f32)(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz,
                          bool min_form, std::size_t len, float* out, std::size_t ldo) = nullptr;
  void (*group_codes_bf16)(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz,
                           bool min_form, std::size_t len, uint16_t* out, std::size_t ldo) = nullptr;
  // the int8 paradigm's kernel over row-major activations (mk_int8_rows_args), for column blocks
  // of at least int8_rows_min columns; null: mk_int8 on the panel only. With it the driver also
  // keeps the activations row-major (dq_activations::rows).
  mk_int8_rows_fn int8_rows = nullptr;
  std::size_t int8_rows_min = 0;
  // and for the int8 paradigm the smallest flush group (k) it takes (smaller groups: mk_int8)
  std::size_t int8_rows_min_k = 0;
  // the bf16 paradigm's kernel over row-major activations (mk_bf16_rows_args), from bf16_rows_min
  // columns on; null: mk_val on the panel only
  mk_bf16_rows_fn bf16_rows = nullptr;
  std::size_t bf16_rows_min = 0;
  // where int8_rows / bf16_rows leave state behind them (AMX: the tiles stay configured between
  // calls), each thread of a GEMM saves the thread's state before its share (tiles_save) and
  // puts it back after (tiles_done): a configuration another library loaded on the thread is
  // restored, none is released; or null
  void (*tiles_save)(dq_tile_state&) = nullptr;
  void (*tiles_done)(const dq_tile_state&) = nullptr;
  // bf16 level 2 from level 1's step-major codes into mk_val's step-major layout for formats whose
  // levels are their codes, computed per value (group_codes' arithmetic) where a table would not
  // fit a register pair (more than 16 codes): one group of steps4 k4-steps; null: the row-major route
  void (*bf16_codes_steps)(const uint8_t* codes, std::size_t steps4, const float* sc, const float* zz,
                           bool min_form, uint32_t* out) = nullptr;
  // the int8 paradigm's super-group fold (gemm/dequant.hpp, int8_super_fold_offset) on this set:
  // its int8 micro-kernels take every level byte at full speed (VNNI, portable); the AVX2 set's
  // vpmaddubsw pairs keep levels below 128 (mk_int8_args::level_max) and folded levels reach 252
  bool int8_super_fold = false;
  // the super-group fold's levels of one group (lut_weight_source::super_levels): `steps` k4-steps
  // of u8 levels in mk_int8's layout (lv[s * 256 + 4 r + i]) -> out = cs[r] * (level - zero) +
  // offset for row r (the caller has checked that every result is a byte); null: the portable loop
  void (*fold_levels)(const uint8_t* lv, std::size_t steps, const int8_t* cs, int zero, int offset,
                      uint8_t* out) = nullptr;
  // the super-group fold's minimums in integers (mk_mins_args) by NC - 1, up to mk_int8_cols
  // columns; null: the fp32 route (f32 over the groups' minimums)
  mk_mins_fn mins[mk_int8_cols] = {};
};

// Level 1 of one policy's bit layout on a target: codes of the 64 rows of tile t for k in [k0, k1)
// (multiples of 4), in the step-major layout of mk_int8 (codes_steps: codes[s * 256 + 4 r + i]) or
// row-major (codes_rows: out[r * ldo + k - k0]). Null: the portable unpacker (gemm/dequant.hpp).
using int8_fused_fn = void (*)(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                               const mk_int8_args& a);
template <class P>
struct dq_level1_fns {
  void (*codes_steps)(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, std::size_t k1,
                      uint8_t* out) = nullptr;
  void (*codes_rows)(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, std::size_t k1,
                     uint8_t* out, std::size_t ldo) = nullptr;
  // the int8 route's u8 levels (format_traits::level of each code) in codes_steps' layout; null:
  // the portable unpacker and byte map
  void (*levels_steps)(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0, std::size_t k1,
                       uint8_t* out) = nullptr;
  // Level 1 fused into the int8 micro-kernel for 1 or 2 columns (decode): int8_fused[nc - 1]
  // computes what int8[nc - 1] computes on the levels of tile t from step k0 / 4 on (a.W, a.sw and
  // a.swz unused: the kernel reads the codes, scales and zeros from the blob), bit for bit, with
  // the levels made in registers instead of read from a buffer. Null: the
  // buffered route (codes_steps / the portable unpacker, then int8[nc - 1]).
  int8_fused_fn int8_fused[2] = {nullptr, nullptr};
};

}  // namespace lutkit::detail
