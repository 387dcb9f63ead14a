// lutkit — the AVX-512 set's fused int8 decode (dq_level1_fns::int8_fused): level 1 inside the
// VNNI micro-kernel for 1 or 2 activation columns, from bit planes (GFNI transpose per row pair)
// or from whole codes (loaded as stored), with the group scales and zeros read from the blob.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "../../../core/prefetch.hpp"
#include "../../../core/tiling.hpp"
#include "../../../gemm/dequant.hpp"
#include "../../../gemm/geometry.hpp"
#include "../../../gemm/microkernel.hpp"
#include "../features.hpp"
#include "isa_avx512.hpp"
#include "level1_avx512.hpp"

#if defined(LUTKIT_HOST_X86)
#include "../intrinsics_begin.hpp"

namespace lutkit::detail::avx512 {

// Level 1 fused into the int8 micro-kernel (decode, 1 or 2 activation columns): each k4 step's
// 64 x 4 levels come out of a GFNI transpose in four registers (rows 0-15, 16-31, 32-47,
// 48-63: the step-major layout mk_int8 reads) and go straight into vpdpbusd, so the packed
// bytes are read once and no level buffer is written or re-read. Integer sums and the fp32
// epilogue are those of mk_int8<NC>: the same bits. It serves the 1- to 4-bit formats the LUT-GEMV
// also runs (Q4_0, W4, W3, W2, W1: bit planes, the planes a format lacks masked to zero before the
// transpose); 8-bit formats and codebooks are stored as whole codes and take mk_int8_whole below,
// a load per register.
template <class P>
constexpr bool has_int8_fused() {
  constexpr auto& S = P::spec;
  using FT = format_traits<typename P::format>;
  return !S.ternary && !S.whole_codes() && !S.plane_chunks() && FT::integer_levels && S.planes >= 1 &&
         S.planes <= 4 && levels_are_codes<P>();
}
// The fused kernel's level 1 works per row pair: register T of a step holds row pairs 8 T .. 8 T + 7
// (rows r and r + 32), qword m the codes of r = 8 T + m, dword 0 row r's 4 codes, dword 1 row
// r + 32's, one per byte. One zero-masked vpermt2b puts the row pair's plane bytes in the high
// half of its qword (plane q at byte 7 - q), and vgf2p8affineqb with that qword as the matrix and
// byte j = 1 << j as the data transposes it: byte j gets bit j of every plane byte, i.e. the code
// of activation j % 4 of row r (j < 4) or r + 32, already one per byte (high nibble 0).
// 1 permute + 1 affine op per register where the step-major order above took
// 8; the accumulators are in this row-pair order, and the epilogue's scale vectors and the
// output tile are permuted to it and back (pair_order below).
// PLANES (1 to 4) bit planes: the paired chunks (planes 0-1, 2-3) hold a step's row r in the low
// nibble and r + 32 in the high one of one byte; a lone chunk (the last plane of 1 or 3) holds both
// steps of the pair, step s in its bytes 32 s .. 32 s + 31, with the same row pairing. Sources:
// chunk 0 (bytes 0-63) is the first paired chunk (the lone one for 1 plane), chunk 1 (64-127) the
// second paired chunk (4 planes) or the lone one (3 planes).
struct level1_row_pair_indices {
  alignas(64) uint8_t gather[2][4][64];  // [step s of the pair][register T]: byte -> byte of (chunk 0, 1)
};
template <int PLANES>
const level1_row_pair_indices& level1_row_pair_tables() {
  static_assert(PLANES >= 1 && PLANES <= 4);
  static const level1_row_pair_indices t = [] {
    level1_row_pair_indices x{};
    constexpr int paired = PLANES / 2 * 2;
    for (int s = 0; s < 2; ++s)
      for (int T = 0; T < 4; ++T)
        for (int m = 0; m < 8; ++m)
          for (int q = 0; q < PLANES; ++q) {
            const int r = 8 * T + m;
            const bool lone = q >= paired;
            if (nibble_of_row(r) != 0 || nibble_of_row(r + 32) != 1 ||
                (lone ? lone_byte_of_row(r) != lone_byte_of_row(r + 32)
                      : paired_byte_of_row(r, q % 2) != paired_byte_of_row(r + 32, q % 2)))
              throw std::logic_error("level1_row_pair_tables: the tiling spec no longer pairs rows r, r + 32");
            x.gather[s][T][8 * m + 7 - q] = uint8_t(lone ? 64 * (paired / 2) + 32 * s + lone_byte_of_row(r)
                                                         : 64 * (q / 2) + paired_byte_of_row(r, q % 2));
          }
    return x;
  }();
  return t;
}
// the 4 code registers of step s of a pair (row-pair order) from its chunks c[0], c[1] (above):
// the bytes of the planes a format lacks are masked to zero, so the transposed byte holds the code
template <int PLANES>
LUTKIT_AVX512_GFNI inline void gfni_row_pairs(const uint8_t* const* c, const level1_row_pair_indices& ix, int s,
                                              __m512i w[4]) {
  static_assert(PLANES >= 1 && PLANES <= 4);
  constexpr uint64_t keep = 0x0101010101010101ull * uint64_t((0xFF00u >> PLANES) & 0xFFu);
  const __m512i unit = _mm512_set1_epi64(0x8040201008040201ll);
  const __m512i c0 = _mm512_loadu_si512(c[0]);
#pragma GCC unroll 4
  for (int T = 0; T < 4; ++T) {
    // (an even number of planes: one index set for both steps, loop-invariant: the step's set
    // made W4 g64 slower; docs/llama_formats.md, "Decode")
    const __m512i idx = _mm512_load_si512(ix.gather[PLANES % 2 ? s : 0][T]);
    const __m512i X = PLANES >= 3 ? _mm512_maskz_permutex2var_epi8(keep, c0, idx, _mm512_loadu_si512(c[1]))
                                  : _mm512_maskz_permutexvar_epi8(keep, idx, c0);
    w[T] = _mm512_gf2p8affine_epi64_epi8(unit, X, 0);
  }
}
// Row order (vector v: rows 16 v .. 16 v + 15) to row-pair order (vector T: rows 8 T + m, 8 T + m + 32
// in lanes 2 m, 2 m + 1) and back
LUTKIT_AVX512_GFNI inline __m512 to_pair_order(const float* rows, int T) {
  const __m512i even = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i odd = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  return _mm512_permutex2var_ps(_mm512_loadu_ps(rows + 16 * (T / 2)), T % 2 ? odd : even,
                                _mm512_loadu_ps(rows + 32 + 16 * (T / 2)));
}
LUTKIT_AVX512_GFNI inline void from_pair_order(const __m512 f[4], float* rows) {
  const __m512i lo = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i hi = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v)
    _mm512_storeu_ps(rows + 16 * v, _mm512_permutex2var_ps(f[2 * (v % 2)], v < 2 ? lo : hi, f[2 * (v % 2) + 1]));
}
// register T's 16 fp16 / bf16 group parameters -> fp32 (exact), in row-pair order: p holds the
// 64 rows' parameters (rows 8 T + m and 8 T + m + 32 to lanes 2 m, 2 m + 1)
template <bool BF16>
LUTKIT_AVX512_GFNI inline __m512 fused_param16(const uint8_t* p, int T) {
  alignas(64) static constexpr uint16_t idx[4][32] = {
      {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39},
      {8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47},
      {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55},
      {24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63}};
  const __m256i h = _mm512_castsi512_si256(_mm512_permutex2var_epi16(
      _mm512_loadu_si512(p), _mm512_load_si512(idx[T]), _mm512_loadu_si512(p + 64)));
  if constexpr (BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  else return _mm512_cvtph_ps(h);
}
// the 64 rows' super-group parameters (int8 codes at p times the fp32 values at sup), in row order
LUTKIT_AVX512_GFNI inline void super_params64(const uint8_t* p, const uint8_t* sup, float* rows) {
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v)
    _mm512_store_ps(rows + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(reinterpret_cast<const float*>(sup) + 16 * v),
                                                 _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                                                     reinterpret_cast<const __m128i*>(p + 16 * v))))));
}
// the 64 rows' weight scales sw and zero coefficients swz of group gi in row-pair order (as
// lut_weight_source::group_scales computes them: exact fp16 / bf16 decode, or the super-group
// formats' code times super-value, then zero * scale or -min in fp32). ps: the group's slots,
// sup, supm: its super-group's super-scales and super-minimums (super-group formats: the K-quants'
// bit planes, Q3_K, Q2_K)
template <class P>
LUTKIT_AVX512_GFNI inline void fused_group_scales(const uint8_t* ps, const uint8_t* sup, const uint8_t* supm, __m512 sw[4],
                                                  __m512 swz[4]) {
  constexpr auto& S = P::spec;
  [[maybe_unused]] alignas(64) float sr[64], zr[64];
  if constexpr (S.super_k > 0) {
    super_params64(ps, sup, sr);
    if constexpr (S.asymmetric) super_params64(ps + S.param_bytes() * S.rows_per_tile, supm, zr);
  }
  // (no lambda returning __m512: clang rejects one inside a target-attributed function)
#pragma GCC unroll 4
  for (int T = 0; T < 4; ++T) {
    __m512 sc;
    if constexpr (S.super_k > 0) sc = to_pair_order(sr, T);
    else sc = fused_param16<S.bf16_params>(ps, T);
    __m512 zc;
    if constexpr (S.asymmetric) {
      __m512 zz;
      if constexpr (S.super_k > 0) zz = to_pair_order(zr, T);
      else zz = fused_param16<S.bf16_params>(ps + S.param_bytes() * S.rows_per_tile, T);
      zc = S.min_form ? _mm512_xor_ps(zz, _mm512_set1_ps(-0.f)) : _mm512_mul_ps(zz, sc);
    } else {
      zc = _mm512_mul_ps(_mm512_set1_ps(S.sym_zero), sc);
    }
    sw[T] = sc;
    swz[T] = zc;
  }
}
// the epilogue of mk_int8 for one 16-row vector (row-pair order): f += sw * float(c) [* sa] - swz * sumx
LUTKIT_AVX512_GFNI inline void fused_epi(bool sa, __m512 sw, __m512 swz, __m512i c, __m512 ba, __m512 bx, __m512& f) {
  __m512 x = _mm512_cvtepi32_ps(c);
  if (sa) x = _mm512_mul_ps(x, ba);
  f = _mm512_fmadd_ps(x, sw, f);
  f = _mm512_fnmadd_ps(swz, bx, f);
}
// the epilogue of activation column n (its 4 accumulators c, outputs f)
LUTKIT_AVX512_GFNI inline void fused_epi_col(const float* sa, const __m512 sw[4], const __m512 swz[4], const float* sx,
                                             int n, const __m512i c[4], __m512 f[4]) {
  const __m512 bx = _mm512_set1_ps(sx[n]);
  const __m512 ba = sa ? _mm512_set1_ps(sa[n]) : _mm512_set1_ps(1.f);
#pragma GCC unroll 4
  for (int T = 0; T < 4; ++T) fused_epi(sa != nullptr, sw[T], swz[T], c[T], ba, bx, f[T]);
}
template <class P, int NC>
LUTKIT_AVX512_GFNI void mk_int8_fused(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                      const mk_int8_args& a) {
  static_assert(NC == 1 || NC == 2);
  static_assert(has_int8_fused<P>());
  constexpr auto& S = P::spec;
  const level1_row_pair_indices& ix = level1_row_pair_tables<S.planes>();
  level1_walk<P> walk(data, L, t, k0, nullptr);
  // software prefetch of the packed stream 4 KiB ahead, 2 KiB on Intel (a band's panels are
  // contiguous, and the bands follow each other): on bands the best of the distances tried
  // (docs/llama_formats.md, "Decode"; host_features::int8_fused_prefetch_bytes)
  const long PFD = host_features::int8_fused_prefetch_bytes();
  std::size_t step = k0 / 4;
  const int8_t* A = a.A;
  // the outputs in row-pair order (gfni_row_pairs), column n at f[n]
  __m512 f[2][4];
#pragma GCC unroll 4
  for (int T = 0; T < 4; ++T) {
    f[0][T] = to_pair_order(a.C, T);
    f[1][T] = NC == 2 ? to_pair_order(a.C + 64, T) : _mm512_setzero_ps();
  }
  __m512 vw[4]{}, vz[4]{};  // (set at the first group; zeroed so that GCC sees them set)
  std::size_t gw = std::size_t(-1);
  for (std::size_t g = 0; g < a.groups; ++g) {
    __m512i c[2][4];
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T) c[0][T] = c[1][T] = _mm512_setzero_si512();
    for (std::size_t s = 0; s < a.steps; ++s) {
      const level1_step st = walk.at(step++);
      // chunk 0, 1 of gfni_row_pairs: the paired chunks, then the lone one
      const uint8_t* ch[2] = {nullptr, nullptr};
      int nch = 0;
#pragma GCC unroll 2
      for (int p = 0; p < S.planes / 2; ++p) ch[nch++] = st.base + S.paired_chunk_in_block(st.spi, st.s, p);
      if constexpr (S.planes % 2 == 1) ch[nch++] = st.base + S.lone_chunk_in_block(st.spi);
#pragma GCC unroll 2
      for (int p = 0; p < nch; ++p) _mm_prefetch(reinterpret_cast<const char*>(ch[p]) + PFD, _MM_HINT_T0);
      __m512i w[4];
      gfni_row_pairs<S.planes>(ch, ix, st.s, w);
      const int8_t* as = A + s * a.lda;
      __m512i x[2];
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n) {
        x[n] = _mm512_set1_epi32(panel_quad(as, n));
      }
#pragma GCC unroll 4
      for (int T = 0; T < 4; ++T)
#pragma GCC unroll 2
        for (int n = 0; n < NC; ++n) c[n][T] = _mm512_dpbusd_epi32(c[n][T], w[T], x[n]);
    }
    A += a.steps * a.lda;
    // the group's scales and zeros straight from the blob, once per weight group (a flush
    // group of int8_group activations can be a part of it)
    const std::size_t gi = L.group_of_k((step - a.steps) * 4, S);
    if (gi != gw) {
      gw = gi;
      const uint8_t* sup = S.super_k > 0 ? data + L.super_offset(t, gi, S) : nullptr;
      const uint8_t* supm = S.super_k > 0 && S.asymmetric ? data + L.super_min_offset(t, gi, S) : nullptr;
      if constexpr (S.group_k > 0) fused_group_scales<P>(walk.params(gi), sup, supm, vw, vz);
      else fused_group_scales<P>(data + L.scale_offset(t, gi, S), sup, supm, vw, vz);
    }
    const float* sx = a.sumx + g * a.ldsum;
    const float* sa = a.sa ? a.sa + g * a.ldsum : nullptr;
#pragma GCC unroll 2
    for (int n = 0; n < NC; ++n) fused_epi_col(sa, vw, vz, sx, n, c[n], f[n]);
  }
  from_pair_order(f[0], a.C);
  if constexpr (NC == 2) from_pair_order(f[1], a.C + 64);
}

// Whole codes (8 bits, codebooks, Q4NX), the fused int8 decode with VNNI: the step-major codes as
// stored (whole_codes_step_major; a 64-byte load holds rows 16 T .. 16 T + 15 of a step, 4-bit
// codes both steps of the pair, low and high nibbles), the level map by one vpshufb, and vpdpbusd
// of the u8 levels with the s8 activations: every level of 0..255 goes in as it is (no sign trick,
// no activation-sum correction), split levels (NF4) as two dots into two accumulators joined per
// flush group as 128 hi + lo (sum(Q x), exact). The integer sums are mk_int8's; the epilogue is
// portable::mk_int8's in its order (c = fma(float(sum) [* sa], sw, c); c = fma(-sumx, swz, c)) with
// the group's scales and zeros decoded from the blob as lut_weight_source::group_scales does
// (the same bits as the buffered route). The outputs stay in registers for the call. The group's
// scales are decoded before its dots: decoded after them, the epilogue waited on their lines. The
// stream is prefetched 4 KiB ahead into L2, spread over the step pairs (below; on an AMX Xeon 2 or
// 1 KiB was slower: Q4_1 0.93 -> 0.85 / 0.76 of the plain read, Q8_0 0.95 -> 0.91 / 0.84). Faster
// than the AVX2 kernel on the same CPU for NF4 and Q4NX (docs/llama_formats.md, "Decode").
template <class P>
constexpr bool whole_codes_in_registers() {
  constexpr auto& S = P::spec;
  if (!whole_codes_int8_fused<P>()) return false;
  for (int o = 0; o < 8; ++o)
    for (int s = 0; s < 2; ++s)
      if (S.code_byte_in_step_pair(8 * o, s, 0) != 32 * o + (S.planes == 8 ? 256 * s : 0)) return false;
  return S.code_shift(1) == (S.planes == 8 ? 0 : 4);
}
// the group parameters of rows 16 T .. 16 T + 15 -> fp32 (exact): fp16 / bf16 slots at p, or
// (super-group formats) int8 codes at p times the super-group's fp32 values at sup
template <const auto& S>
LUTKIT_AVX512_DQ inline __m512 param16(const uint8_t* p, const uint8_t* sup, int T) {
  if constexpr (S.super_k > 0)
    return _mm512_mul_ps(_mm512_loadu_ps(reinterpret_cast<const float*>(sup) + 16 * T),
                         _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * T)))));
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * T));
  if constexpr (S.bf16_params) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  else return _mm512_cvtph_ps(h);
}
template <class P, int NC>
LUTKIT_AVX512_DQ void mk_int8_whole(const uint8_t* data, const packed_layout& L, std::size_t t, std::size_t k0,
                                    const mk_int8_args& a) {
  static_assert(NC == 1 || NC == 2);
  static_assert(whole_codes_in_registers<P>());
  constexpr auto& S = P::spec;
  constexpr bool MAP = !levels_are_codes<P>();
  constexpr bool SPLIT = split_levels<P>();
  constexpr bool B8 = S.planes == 8;
  static_assert(!(B8 && MAP), "8-bit codes are their levels");
  constexpr std::size_t SPB = std::size_t(S.step_pair_bytes());
  constexpr std::size_t spb = std::size_t(S.steps_per_block);
  // a group's code bytes, and the prefetch distance (bytes)
  constexpr std::size_t GB = S.group_k > 0 ? std::size_t(S.group_k / S.block_k) * std::size_t(S.block_bytes()) : 0;
  constexpr std::size_t PFD = 4096;
  // per step pair, the lines of a whole group (its parameters and codes) over the step pairs of
  // the shortest flush group a call has (int8_decode_act_group k, or the group), rounded up: a
  // compile-time count, so the prefetches unroll without a bound check (a counted loop of one
  // prefetch, an add, a compare and a branch was a quarter of the Q4_K kernel's instructions).
  // Longer flush groups prefetch further into the next group's lines, harmless.
  constexpr std::size_t flush_pairs =
      S.group_k > 0 ? std::min<std::size_t>(std::size_t(S.group_k), int8_decode_act_group) / 8 : 1;
  constexpr std::size_t pf_per_pair =
      S.group_k > 0 ? ((std::size_t(S.scale_bytes()) + GB + 63) / 64 + flush_pairs - 1) / flush_pairs : 0;
  static constexpr level_byte_maps lm = whole_code_level_maps<P>(0);
  [[maybe_unused]] const __m512i map = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(lm.hi)));
  [[maybe_unused]] const __m512i map_lo = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(lm.lo)));
  const __m512i m0f = _mm512_set1_epi8(0x0F);
  __m512 f[NC][4];
#pragma GCC unroll 2
  for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T) f[n][T] = _mm512_loadu_ps(a.C + 64 * n + 16 * T);
  std::size_t step0 = k0 / 4;
  const int8_t* A = a.A;
  const std::size_t pairs = a.steps / 2;
  for (std::size_t g = 0; g < a.groups; ++g, step0 += a.steps, A += a.steps * a.lda) {
    // the flush group's first step pair (its steps are whole step pairs of one scale group, whose
    // blocks are contiguous)
    const uint8_t* p = data + L.block_offset(t, step0 / spb, S) + (step0 % spb) / 2 * SPB;
    // the group's scales and zeros from the blob (lut_weight_source::group_scales' arithmetic),
    // first: their lines' misses overlap the codes' (loaded after the dots, the epilogue waited on
    // them)
    const std::size_t gi = L.group_of_k(step0 * 4, S);
    const uint8_t* ps = data + L.scale_offset(t, gi, S);
    [[maybe_unused]] const uint8_t* sup = S.super_k > 0 ? data + L.super_offset(t, gi, S) : nullptr;
    [[maybe_unused]] const uint8_t* supm =
        S.super_k > 0 && S.asymmetric ? data + L.super_min_offset(t, gi, S) : nullptr;
    // software prefetch of the tile's stream (one panel: every group's parameters, then its
    // codes) PFD bytes ahead, a group's bytes per group: the hardware prefetcher alone left the
    // parameter lines' misses exposed. Spread over the group's step pairs, into L2: a burst of a
    // whole group's lines into L1 (34 for NF4's 64-k groups) stalled on the line fill buffers
    // (Emerald Rapids, 1 / 2 threads, of the plain read, two runs each: NF4 0.71 / 0.64 -> 0.79 /
    // 0.80, IQ4_NL 0.80 / 0.80 -> 0.74 / 0.90, Q8_0 0.87 / 0.88 -> 0.93 / 0.92).
    [[maybe_unused]] const char* pf = reinterpret_cast<const char*>(ps) + PFD;
    alignas(64) float sw[64], swz[64];
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T) {
      __m512 sc = param16<S>(ps, sup, T), zc;
      if constexpr (S.asymmetric) {
        const __m512 zz = param16<S>(data + L.zero_offset(t, gi, S), supm, T);
        zc = S.min_form ? _mm512_xor_ps(zz, _mm512_set1_ps(-0.f)) : _mm512_mul_ps(zz, sc);
      } else {
        zc = _mm512_mul_ps(_mm512_set1_ps(S.sym_zero), sc);
      }
      if constexpr (SPLIT) {  // w = s (Q - 2^13) 2^-13: scale s 2^-13, zero coefficient s
        zc = sc;
        sc = _mm512_mul_ps(sc, _mm512_set1_ps(1.f / float(1 << split_level_bits)));
      }
      _mm512_store_ps(sw + 16 * T, sc);
      _mm512_store_ps(swz + 16 * T, zc);
    }
    __m512i c[NC][4], cl[NC][4];
#pragma GCC unroll 2
    for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
      for (int T = 0; T < 4; ++T) c[n][T] = cl[n][T] = _mm512_setzero_si512();
    const int8_t* as = A;
    for (std::size_t sp = 0; sp < pairs; ++sp, p += SPB, as += 2 * a.lda) {
      if constexpr (S.group_k > 0) {
#pragma GCC unroll 16
        for (std::size_t j = 0; j < pf_per_pair; ++j) _mm_prefetch(pf + 64 * j, _MM_HINT_T1);
        pf += 64 * pf_per_pair;
      }
      __m512i x[2][NC];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
        for (int n = 0; n < NC; ++n) x[h][n] = _mm512_set1_epi32(panel_quad(as + h * a.lda, n));
      __m512i w[2][4];
#pragma GCC unroll 4
      for (int T = 0; T < 4; ++T) {
        if constexpr (B8) {
          w[0][T] = _mm512_loadu_si512(p + 64 * T);
        } else {
          const __m512i v = _mm512_loadu_si512(p + 64 * T);
          w[0][T] = _mm512_and_si512(v, m0f);
          w[1][T] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
        }
      }
      if constexpr (B8)
#pragma GCC unroll 4
        for (int T = 0; T < 4; ++T) w[1][T] = _mm512_loadu_si512(p + 256 + 64 * T);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
#pragma GCC unroll 4
        for (int T = 0; T < 4; ++T) {
          __m512i wl = w[h][T];
          if constexpr (SPLIT) wl = _mm512_shuffle_epi8(map_lo, w[h][T]);
          const __m512i wv = MAP ? _mm512_shuffle_epi8(map, w[h][T]) : w[h][T];
#pragma GCC unroll 2
          for (int n = 0; n < NC; ++n) {
            c[n][T] = _mm512_dpbusd_epi32(c[n][T], wv, x[h][n]);
            if constexpr (SPLIT) cl[n][T] = _mm512_dpbusd_epi32(cl[n][T], wl, x[h][n]);
          }
        }
    }
    const float* sx = a.sumx + g * a.ldsum;
    const float* sa = a.sa ? a.sa + g * a.ldsum : nullptr;
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T)
#pragma GCC unroll 2
      for (int n = 0; n < NC; ++n) {
        __m512i sum = c[n][T];
        if constexpr (SPLIT) sum = _mm512_add_epi32(_mm512_slli_epi32(sum, 7), cl[n][T]);
        __m512 v = _mm512_cvtepi32_ps(sum);
        if (sa) v = _mm512_mul_ps(v, _mm512_set1_ps(sa[n]));
        f[n][T] = _mm512_fmadd_ps(v, _mm512_load_ps(sw + 16 * T), f[n][T]);
        f[n][T] = _mm512_fnmadd_ps(_mm512_load_ps(swz + 16 * T), _mm512_set1_ps(sx[n]), f[n][T]);
      }
  }
#pragma GCC unroll 2
  for (int n = 0; n < NC; ++n)
#pragma GCC unroll 4
    for (int T = 0; T < 4; ++T) _mm512_storeu_ps(a.C + 64 * n + 16 * T, f[n][T]);
}

// the fused int8 decode that serves P for NC columns (dq_level1_fns::int8_fused), or null: whole
// codes the VNNI kernel, bit planes the GFNI one where the CPU has GFNI
template <class P, int NC>
int8_fused_fn int8_fused_kernel() {
  if constexpr (whole_codes_in_registers<P>()) return &mk_int8_whole<P, NC>;
  else if constexpr (has_int8_fused<P>()) return host_features::gfni() ? &mk_int8_fused<P, NC> : nullptr;
  else return nullptr;
}

}  // namespace lutkit::detail::avx512
#include "../intrinsics_end.hpp"
#endif
