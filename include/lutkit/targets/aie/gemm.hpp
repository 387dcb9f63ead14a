// lutkit — prefill GEMM on the AIE model: INT4 -> bf16 dequantization of the target::aie blob
// feeding the bf16 mmul (aie2: native 4 x 8 x 4), one compute tile's share of the megatile /
// supertile schedule (model/array.hpp distributes the tiles and counts Eq. 4 / 5 traffic).
//
// Per output tile (32 activation rows x 64 weight rows, one blob tile) and k tile (128 k, whole groups):
// the DMA brings the activations (bf16) and the group (codes + parameters) into ping-pong
// buffers; the vector unit dequantizes the group's atoms: u4 -> u8 -> u16 unpack, OR 0x4300 (the
// bf16 bits of 128 + c), a bf16 multiply by the row's scale into fp32 lanes, plus the row's bias
// (m - 128 s, or -s (z + 128)), rounded to bf16, then split into the mmul's 8 k x 4 n B blocks
// by 64-bit filters; then the mm.cc loop: 2 x 2 output blocks in accumulators, per k step two A
// and two B blocks loaded and four mmuls issued. Scales stored as fp16 are rounded to bf16 (the
// mmul's type); Q4NX's bf16 parameters are exact.
//
// calibration_kernel: the two published single-tile kernels (bf16 4 x 8 x 4 on aie2, bfp16 8 x 8 x 8
// on aie2p), for the cycle model's check against their instruction counts and GFLOPS.
#pragma once
#include "common.hpp"

namespace lutkit::aie {

struct gemm_tiles {
  static constexpr int m = 32;  // activation rows per output tile (4-row mmul blocks, 2 x 2 blocking)
  static constexpr int n = 64;  // weight rows per output tile (one blob tile)
};

// Which output tiles (activation row block rb of 32 rows, weight tile t of 64 rows) a core
// computes: all of them, or those `take` accepts (the array schedule below).
using tile_filter = bool (*)(std::size_t rb, std::size_t t, const void* ctx);

// Y[r * ldy + m] = sum_k X[r][k] W[m][k] for N activation rows X (bf16 bits, row-major, ldx).
template <class S, class P>
status dequant_gemm(core<P>& c, const uint8_t* data, std::size_t M, std::size_t K, const uint16_t* X, std::size_t N,
                    float* Y, std::size_t ldx = 0, std::size_t ldy = 0, tile_filter take = nullptr,
                    const void* take_ctx = nullptr) {
  require_aie_spec<S>();
  constexpr tiling_spec T = S::spec;
  static_assert(T.super_k == 0, "aie::gemm: 2-byte group parameters (no super-group formats)");
  static_assert(T.planes <= 4 && T.group_k >= 32 && T.group_k <= 128 && (T.lut || T.min_form),
                "aie::dequant_gemm: linear 1-4-bit codes (integer formats, Q4NX) in groups of 32-128 k; not codebooks");
  if constexpr (!std::is_same_v<P, aie2>) {
    (void)c, (void)data, (void)M, (void)K, (void)X, (void)N, (void)Y, (void)ldx, (void)ldy, (void)take, (void)take_ctx;
    return status::unsupported;  // bf16 mmul is emulated on aie2p (bfp16); not modelled for this kernel
  } else {
    if (data == nullptr || X == nullptr || Y == nullptr) return status::null_pointer;
    if (M == 0 || K == 0 || N == 0 || K % std::size_t(T.group_k) != 0) return status::bad_shape;
    if (ldx == 0) ldx = K;
    if (ldy == 0) ldy = M;
    if (ldx < K || ldy < M) return status::bad_stride;
    constexpr int G = T.group_k, TM = gemm_tiles::m;
    constexpr int KT = G > 128 ? G : 128;  // k per tile: whole groups, at least 128
    constexpr int GPT = KT / G;            // groups per k tile
    c.reset_memory();
    const layout_geometry L(T, M, K);
    // placement: A ping / pong in banks 0 / 1, the bf16 B tile in banks 2-3, C in bank 4, the
    // groups' codes ping / pong in banks 5 / 6: the mmul loop reads A, B and C from different banks
    const uint32_t abuf[2] = {c.alloc(std::size_t(TM) * KT * 2, 8192), c.alloc(std::size_t(TM) * KT * 2, 8192)};
    const uint32_t btile = c.alloc(std::size_t(KT) * 64 * 2, 8192);  // [k / 8][n / 4] blocks of 8 x 4 bf16
    const uint32_t cbuf = c.alloc(std::size_t(TM) * 64 * 4, 64, 4);   // fp32 C, [row block][col block] 4 x 4
    const uint32_t wbuf[2] = {c.alloc(GPT * L.group_bytes, 64, 5), c.alloc(GPT * L.group_bytes, 64, 6)};
    if (c.st != status::ok) return c.st;
    const auto magic = broadcast<uint16_t, 32>(c, uint16_t(0x4300));
    uint16_t stage[TM * KT];  // the DMA's re-layout of the activation tile
    const std::size_t ktiles = (L.groups + GPT - 1) / GPT;
    for (std::size_t r0 = 0; r0 < N; r0 += TM) {
      for (std::size_t t = 0; t < L.tiles; ++t) {
        if (take != nullptr && !take(r0 / TM, t, take_ctx)) continue;
        for (std::size_t i = 0; i < std::size_t(TM) * 64 * 4; ++i) c.dm[cbuf + i] = 0;
        const std::size_t kt_end = c.faulty(fault::dq_k_tile) && ktiles > 1 ? ktiles - 1 : ktiles;
        for (std::size_t kt = 0; kt < kt_end; ++kt) {
          const std::size_t g0 = kt * GPT, ng = L.groups - g0 < std::size_t(GPT) ? L.groups - g0 : std::size_t(GPT);
          const int ksteps = int(ng) * G / 8;  // k steps of 8 in this tile
          // DMA: the activation tile, re-laid into 4 x 8 A blocks [row block][k / 8], and the groups
          for (int rb = 0; rb < TM / 4; ++rb)
            for (int kb = 0; kb < KT / 8; ++kb)
              for (int i = 0; i < 4; ++i)
                for (int k = 0; k < 8; ++k) {
                  const std::size_t r = r0 + std::size_t(rb * 4 + i), kk = g0 * G + std::size_t(kb * 8 + k);
                  stage[(rb * (KT / 8) + kb) * 32 + i * 8 + k] = r < N && kb < ksteps ? X[r * ldx + kk] : uint16_t(0);
                }
          const uint32_t ab = abuf[kt % 2], wb = wbuf[kt % 2];
          c.dma_in(ab, stage, std::size_t(TM) * KT * 2);
          for (std::size_t gi = 0; gi < ng; ++gi) c.dma_in(wb + uint32_t(gi * L.group_bytes), data + L.scale_offset(t, g0 + gi), L.group_bytes);
          // dequantize the tile's groups: per group and row octet, its scale and bias lanes (lane = k * 8 + n)
          c.loop_begin("dq.dequant");
          for (std::size_t gi = 0; gi < ng; ++gi) {
            const uint8_t* gp = c.ptr(wb + uint32_t(gi * L.group_bytes));
            const uint32_t codes = wb + uint32_t(gi * L.group_bytes) + uint32_t(T.scale_bytes());
            for (int o = 0; o < 8; ++o) {
              vec<bf16, 32> sc;
              accum<acc_kind::accfloat, 32> bias;
              for (int i = 0; i < 32; ++i) {
                float sv, z;
                detail::group_params<S>(gp, 8 * o + i % 8, sv, z);
                const uint16_t sb = to_bf16_scalar(c, sv);
                const float sbf = bf16_to_f32(sb);
                sc.v[i] = sb;
                bias.v[i] = T.min_form ? (c.faulty(fault::dq_min) ? 0.f : z) - 128.f * sbf : -sbf * (z + 128.f);
              }
              c.issue(slot::ld, 2);  // the octet's scales and biases (set up once per group)
              c.issue(slot::vec, 4);
              for (int sp = 0; sp < G / 8; ++sp) {
                c.iteration();
                const auto c4 = load<u4, 64>(c, codes + uint32_t(sp * T.step_pair_bytes() + 32 * o));
                const auto c16 = unpack(c, unpack(c, c4));  // lanes k * 8 + n, 0..15
                vec<bf16, 32> hb[2];
                for (int h = 0; h < 2; ++h) {
                  const auto v = as<bf16, 32>(bor(c, half(c16, h), magic));  // 128 + c
                  hb[h] = to_bf16(c, fadd(c, mul_bf16(c, v, sc), bias));
                }
                const auto a64 = as<uint64_t, 8>(hb[0]), b64 = as<uint64_t, 8>(hb[1]);
                // B blocks (8 k x 4 n): columns 0-3 and 4-7 of the octet
                const auto lo = shuffle(c, a64, b64, shuffle_mode::filter_even);
                const auto hi = shuffle(c, a64, b64, shuffle_mode::filter_odd);
                const int kb = int(gi) * (G / 8) + sp;
                store(c, btile + uint32_t((kb * 16 + 2 * o) * 64), lo);
                store(c, btile + uint32_t((kb * 16 + 2 * o + 1) * 64), hi);
              }
            }
          }
          c.loop_end();
          // the mm.cc loop: per pass a 2 x 2 block of 4 x 4 outputs (C loaded, updated over the
          // tile's k steps, stored: the next pass's C traffic overlaps this one's mmuls)
          c.loop_begin("dq.mmul");
          for (int rb = 0; rb < TM / 4; rb += 2)
            for (int cb = 0; cb < 16; cb += 2) {
              c.iteration();
              accum<acc_kind::accfloat, 16> acc[2][2];
              for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j)
                  acc[i][j] = load_acc<acc_kind::accfloat, 16>(c, cbuf + uint32_t(((rb + i) * 16 + cb + j) * 64));
              for (int kb = 0; kb < ksteps; ++kb) {
                const auto a0 = load<bf16, 32>(c, ab + uint32_t(((rb + 0) * (KT / 8) + kb) * 64));
                const auto b0 = load<bf16, 32>(c, btile + uint32_t((kb * 16 + cb + 0) * 64));
                const auto a1 = load<bf16, 32>(c, ab + uint32_t(((rb + 1) * (KT / 8) + kb) * 64));
                const auto b1 = load<bf16, 32>(c, btile + uint32_t((kb * 16 + cb + 1) * 64));
                mmul_mac<4, 8, 4, bf16, bf16>(c, acc[0][0], a0, b0);
                mmul_mac<4, 8, 4, bf16, bf16>(c, acc[0][1], a0, b1);
                mmul_mac<4, 8, 4, bf16, bf16>(c, acc[1][0], a1, b0);
                mmul_mac<4, 8, 4, bf16, bf16>(c, acc[1][1], a1, b1);
              }
              for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) store_acc(c, cbuf + uint32_t(((rb + i) * 16 + cb + j) * 64), acc[i][j]);
            }
          c.loop_end();
        }
        // C out: block (rb, cb) lane i * 4 + j = row 4 rb + i, weight row 4 cb + j
        const float* C = reinterpret_cast<const float*>(c.ptr(cbuf));
        for (int rb = 0; rb < TM / 4; ++rb)
          for (int cb = 0; cb < 16; ++cb)
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) {
                const std::size_t r = r0 + std::size_t(4 * rb + i), m = t * 64 + std::size_t(4 * cb + j);
                if (r < N && m < M) Y[r * ldy + m] = C[(rb * 16 + cb) * 16 + i * 4 + j];
              }
        c.tr.cur().dma_bytes_out += std::size_t(TM) * 64 * 4;
      }
    }
    return c.st;
  }
}

// The supertile schedule on an array of `columns` x `rows` cores (the Gemma 3 paper's Fig. 6: a
// column's cores share an activation tile, a row's share a weight tile): the core in column cc and
// row rr computes the output tiles (rb, t) with rb mod columns = cc and t mod rows = rr, so one
// supertile (columns activation blocks x rows weight tiles) keeps every core busy once. cores[cc *
// rows + rr]; each core's trace and DMA counters hold its share.
template <class S, class P>
status dequant_gemm_array(core<P>* cores, int columns, int rows, const uint8_t* data, std::size_t M, std::size_t K,
                          const uint16_t* X, std::size_t N, float* Y, std::size_t ldx = 0, std::size_t ldy = 0) {
  if (cores == nullptr) return status::null_pointer;
  if (columns <= 0 || rows <= 0) return status::bad_shape;
  struct pos {
    std::size_t cc, rr, columns, rows;
  };
  for (int cc = 0; cc < columns; ++cc)
    for (int rr = 0; rr < rows; ++rr) {
      const pos p{std::size_t(cc), std::size_t(rr), std::size_t(columns), std::size_t(rows)};
      const status s = dequant_gemm<S>(cores[cc * rows + rr], data, M, K, X, N, Y, ldx, ldy,
                                       [](std::size_t rb, std::size_t t, const void* ctx) {
                                         const pos& q = *static_cast<const pos*>(ctx);
                                         return rb % q.columns == q.cc && t % q.rows == q.rr;
                                       },
                                       &p);
      if (s != status::ok) return s;
    }
  return status::ok;
}

// The two published single-tile calibration kernels (FACTS.md; scalable-analyses/xdna), written
// on the model with their data layouts and register blocking, one loop iteration per block of
// output tiles (the C tiles loaded and stored inside the iteration, as the published kernels
// overlap them with the previous / next block's mmuls):
//   aie2   bf16 4 x 8 x 4, C (32 x 32) = A (32 x 32) B (32 x 32), 2 x 4 blocking, k linear (4 steps):
//          8 blocks of 32 mmuls
//   aie2p  bfp16 8 x 8 x 8, C (64 x 64) = A (64 x 96) B (96 x 64), 2 x 2 blocking, k linear (12
//          steps): 16 blocks of 48 mmuls; a bfp16 tile (64 mantissas + 8 exponents, 72 bytes) is
//          one load-port issue (a pop of the load pipeline); the model keeps its values as bf16.
// Operands: A tiles [m1][k1] (BM x 8, row-major), B tiles [k1][n1] (8 x BN, row-major), C tiles
// [m1][n1] (BM x BN fp32), at data-memory offsets a, b, cc. Returns the mmul count.
template <class P>
uint64_t calibration_kernel(core<P>& c, uint32_t a, uint32_t b, uint32_t cc) {
  constexpr bool p2 = std::is_same_v<P, aie2p>;
  constexpr int BM = p2 ? 8 : 4, BK = 8, BN = p2 ? 8 : 4;
  constexpr int M1 = p2 ? 8 : 8, K1 = p2 ? 12 : 4, N1 = p2 ? 8 : 8;  // tiles per dimension
  constexpr int RM = 2, RN = p2 ? 2 : 4;                               // register blocking
  using TA = std::conditional_t<p2, bfp16, bf16>;
  constexpr uint32_t at = BM * BK * 2, bt = BK * BN * 2, ct = BM * BN * 4;  // model bytes per tile
  uint64_t macs = 0;
  c.loop_begin("calib.block");
  for (int mb = 0; mb < M1; mb += RM)
    for (int nb = 0; nb < N1; nb += RN) {
      c.iteration();
      accum<acc_kind::accfloat, BM * BN> acc[RM][RN];
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) acc[i][j] = load_acc<acc_kind::accfloat, BM * BN>(c, cc + uint32_t((mb + i) * N1 + nb + j) * ct);
      for (int k = 0; k < K1; ++k) {
        vec<bf16, BM * BK> A[RM];
        vec<bf16, BK * BN> B[RN];
        for (int i = 0; i < RM; ++i) {
          const uint32_t off = a + uint32_t((mb + i) * K1 + k) * at;
          if constexpr (p2) {
            A[i] = load_bfp16<BM * BK>(c, off);
          } else {
            A[i] = load<bf16, BM * BK>(c, off);
          }
        }
        for (int j = 0; j < RN; ++j) {
          const uint32_t off = b + uint32_t(k * N1 + nb + j) * bt;
          if constexpr (p2) {
            B[j] = load_bfp16<BK * BN>(c, off);
          } else {
            B[j] = load<bf16, BK * BN>(c, off);
          }
        }
        for (int i = 0; i < RM; ++i)
          for (int j = 0; j < RN; ++j) {
            mmul_mac<BM, BK, BN, TA, TA>(c, acc[i][j], A[i], B[j]);
            ++macs;
          }
      }
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) store_acc(c, cc + uint32_t((mb + i) * N1 + nb + j) * ct, acc[i][j]);
    }
  c.loop_end();
  return macs;
}

}  // namespace lutkit::aie
