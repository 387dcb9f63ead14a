// lutkit — decode GEMV on the AIE model, two kernels over ONE blob (target::aie, mmul order):
//
// gemv_w4a8   FusedDQP's mapping on the int8 x int4 mmul: the weights' 4-bit codes are the B
//             operand as stored (8 k x 8 rows per 32-byte atom; aie2's 4 x 16 x 8 reads two
//             atoms, aie2p's 4 x 16 x 16 zips four), each nibble's bit 3 flipped so that the
//             signed int4 is code - 8; the activations, q8_0-quantized (common.hpp), are the A
//             operand (N <= 4 rows). Per group and row: y += d_x s ((dot + (8 - z) sum q) (zero
//             form), or d_x (s (dot + 8 sum q) + m sum q) (min form, Q4NX). Integer dots exact.
// lut_gemv    T-MAN's bit-serial LUT-GEMV on parallel_lookup: per activation row, a table of 16
//             int8 entries (stored as int16) per 4 activations, table scale per group; indices
//             of plane p built in registers from the codes (bit p of 4 consecutive k); the
//             lookups summed in int16 lanes over a block (the spec's bound), widened per block,
//             per group y += s (ts acc + (c_mirror - z) sum x).
//
// Both take the packed data of a blob packed on the host for a target::aie policy (the packer
// by the element map; docs/targets/aie.md) and read it through a DMA into ping-pong buffers.
#pragma once
#include "common.hpp"

namespace lutkit::aie {

namespace detail {
template <class S>
constexpr bool w4_codes() {
  return S::spec.whole_codes() && S::spec.mmul() && S::spec.planes <= 4 && !S::spec.ternary;
}
}  // namespace detail

// y[n * ldy + m] = sum_k W[m][k] x[n][k] for N <= 4 activation rows. `dots` (optional): the
// integer mmul sums [n][m][k / 32] (the bit-exact part, for the tests).
template <class S, class P>
status gemv_w4a8(core<P>& c, const uint8_t* data, std::size_t M, std::size_t K, const float* x, std::size_t N,
                 float* y, std::size_t ldx = 0, std::size_t ldy = 0, int32_t* dots = nullptr) {
  require_aie_spec<S>();
  static_assert(detail::w4_codes<S>() && (S::spec.lut || S::spec.min_form),
                "aie::gemv_w4a8: linear 1-4-bit codes (integer formats, Q4NX) in the mmul order; not codebooks");
  constexpr tiling_spec T = S::spec;
  static_assert(T.group_k >= 32, "aie::gemv_w4a8: groups of 32 k or more (the activations' q8_0 blocks)");
  static_assert(T.super_k == 0, "aie::gemv_w4a8: 2-byte group parameters (no super-group formats)");
  if (data == nullptr || x == nullptr || y == nullptr) return status::null_pointer;
  if (M == 0 || K == 0 || N == 0 || N > 4 || K % std::size_t(T.group_k) != 0) return status::bad_shape;
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = M;
  if (ldx < K || ldy < M) return status::bad_stride;
  c.reset_memory();
  w4a8_acts acts;
  if (status s = quantize_w4a8(c, x, N, K, ldx, acts); s != status::ok) return s;
  const layout_geometry L(T, M, K);
  constexpr int G = T.group_k;
  constexpr bool p2 = std::is_same_v<P, aie2p>;
  constexpr int cols = p2 ? 16 : 8;  // weight rows per mmul (its N)
  const std::size_t gbytes = L.group_bytes;
  // the groups' ping-pong buffers in banks of their own (the activations fill the first banks)
  const bool fits = gbytes <= P::bank_bytes;  // (groups of 256 k span two banks: placed linearly)
  const uint32_t buf[2] = {c.alloc(gbytes, 64, fits ? lut_bank_cd<P> : -1), c.alloc(gbytes, 64, fits ? lut_bank_ab<P> : -1)};
  if (c.st != status::ok) return c.st;
  const float* D = reinterpret_cast<const float*>(c.ptr(acts.d));
  const int32_t* Q = reinterpret_cast<const int32_t*>(c.ptr(acts.qsum));
  const auto flip = broadcast<uint8_t, 8 * cols>(c, uint8_t(0x88));
  for (std::size_t t = 0; t < L.tiles; ++t) {
    accum<acc_kind::accfloat, 16> yacc[64 * 4 / 16];  // [chunk of 16 lanes]: lane = n * cols + col of octet o
    for (std::size_t g = 0; g < L.groups; ++g) {
      const uint32_t gb = buf[g % 2];
      c.dma_in(gb, data + L.scale_offset(t, g), gbytes);  // ping-pong: the next group's DMA overlaps
      const uint8_t* gp = c.ptr(gb);
      const uint32_t codes = gb + uint32_t(T.scale_bytes());  // the group's blocks follow its parameters
      for (int o = 0; o < 64 / cols; ++o) {
        for (int b = 0; b < G / 32; ++b) {  // q8_0 blocks of the group: one activation scale each
          const std::size_t qb = g * G / 32 + std::size_t(b);
          const std::size_t qd = c.faulty(fault::gemv_group_scale) && qb + 1 < K / 32 ? qb + 1 : qb;
          accum<acc_kind::acc32, 4 * cols> acc;
          c.loop_begin("w4a8.mac");
          for (int j = 2 * b; j < 2 * b + 2; ++j) {
            c.iteration();
            const auto A = load<int8_t, 64>(c, acts.a + uint32_t((g * G / 16 + std::size_t(j)) * 64));
            // step pairs 2 j and 2 j + 1 of the group: the atoms of octet(s) o
            const uint32_t sp0 = codes + uint32_t(2 * j * T.step_pair_bytes()), sp1 = sp0 + uint32_t(T.step_pair_bytes());
            vec<uint8_t, 8 * cols> braw;
            if constexpr (!p2) {
              braw = concat(load<uint8_t, 32>(c, sp0 + uint32_t(32 * o)), load<uint8_t, 32>(c, sp1 + uint32_t(32 * o)));
            } else {
              // octets 2 o, 2 o + 1 of each step pair (64 bytes, one load): B row k = 4 bytes of each
              const auto a0 = load<uint32_t, 16>(c, sp0 + uint32_t(64 * o));
              const auto a1 = load<uint32_t, 16>(c, sp1 + uint32_t(64 * o));
              const auto r0 = shuffle(c, half(a0, 0), half(a0, 1), shuffle_mode::zip_lo);
              const auto r1 = shuffle(c, half(a0, 0), half(a0, 1), shuffle_mode::zip_hi);
              const auto r2 = shuffle(c, half(a1, 0), half(a1, 1), shuffle_mode::zip_lo);
              const auto r3 = shuffle(c, half(a1, 0), half(a1, 1), shuffle_mode::zip_hi);
              braw = as<uint8_t, 128>(concat(concat(r0, r1), concat(r2, r3)));
            }
            const auto bf = c.faulty(fault::gemv_nibble) ? braw : bxor(c, braw, flip);
            mmul_mac<4, 16, cols, int8_t, i4>(c, acc, A, as<i4, 16 * cols>(bf));
            scalar_op(c, 1);  // pointer increments (the loop itself: a zero-overhead hardware loop)
          }
          c.loop_end();
          // the block's epilogue: lane n * cols + col = (activation row n, weight row octet * cols + col)
          c.loop_begin("w4a8.epilogue");
          c.iteration();
          for (int h = 0; h < 4 * cols / 16; ++h) {
            if (std::size_t(16 * h / cols) >= N) break;  // lanes of activation rows past N: nothing to add
            accum<acc_kind::acc32, 16> a16;
            accum<acc_kind::accfloat, 16> s1, s2, qf;
            for (int i = 0; i < 16; ++i) {
              const int lane = 16 * h + i, n = lane / cols, r = o * cols + lane % cols;
              a16.v[i] = acc.v[lane];
              float s, z;
              detail::group_params<S>(gp, r, s, z);
              const float dx = D[qd * 4 + std::size_t(n)];
              s1.v[i] = dx * s;
              s2.v[i] = T.min_form ? dx * (8.f * s + z) : dx * (s * (8.f - z));
              qf.v[i] = float(Q[qb * 4 + std::size_t(n)]);
              if (dots != nullptr && std::size_t(n) < N && t * 64 + std::size_t(r) < M)
                dots[(std::size_t(n) * M + t * 64 + std::size_t(r)) * (K / 32) + qb] = int32_t(acc.v[lane]);
            }
            // the lanes' scales (fp16 -> fp32 by bit manipulation: 4 issues; bf16 parameters: 1) and
            // d, their product (an emulated fp32 multiply); the zero / minimum term only where the
            // format has one (4-bit symmetric codes: code - 8 is the level, s2 = 0)
            constexpr bool zero_term = T.asymmetric || T.min_form || T.sym_zero != 8.f;
            c.issue(slot::ld, zero_term ? 3 : 2);
            c.issue(slot::vec, (T.bf16_params ? 1 : 4) * (zero_term ? 2 : 1) + 3 * (zero_term ? 2 : 1) + (zero_term ? 1 : 0));
            const auto f = to_float(c, a16);
            const auto tsum = zero_term ? fadd(c, fmul(c, s1, f), fmul(c, s2, qf)) : fmul(c, s1, f);
            const int chunk = o * (4 * cols / 16) + h;
            yacc[chunk] = g == 0 && b == 0 ? tsum : fadd(c, yacc[chunk], tsum);
            c.issue(slot::ld, 64 / (P::load_bits / 8));  // y_acc lives in the data memory
            c.issue(slot::st, 64 / (P::store_bits / 8));
          }
          c.loop_end();
        }
      }
    }
    for (int chunk = 0; chunk < 64 * 4 / 16; ++chunk)
      for (int i = 0; i < 16; ++i) {
        const int o = chunk / (4 * cols / 16), lane = (chunk % (4 * cols / 16)) * 16 + i;
        const std::size_t n = std::size_t(lane / cols), m = t * 64 + std::size_t(o * cols + lane % cols);
        if (n < N && m < M) y[n * ldy + m] = yacc[chunk].v[i];
      }
  }
  return c.st;
}

// The LUT-GEMV: y[n * ldy + m] for N activation rows (any N, one row at a time). `sums`
// (optional): the integer block sums sum_p 2^p sum lookups, [n][m][block] (for the tests).
template <class S, class P>
status lut_gemv(core<P>& c, const uint8_t* data, std::size_t M, std::size_t K, const float* x, std::size_t N,
                float* y, std::size_t ldx = 0, std::size_t ldy = 0, int32_t* sums = nullptr) {
  require_aie_spec<S>();
  static_assert(detail::w4_codes<S>() && S::spec.lut && !S::spec.min_form && S::spec.entry_bits == 8,
                "aie::lut_gemv: linear 1-4-bit formats with int8 tables (lut4<int8_t, mirror>)");
  constexpr tiling_spec T = S::spec;
  static_assert(T.group_k > 0, "aie::lut_gemv: group<G> (the table scale is per group)");
  static_assert(T.super_k == 0, "aie::lut_gemv: 2-byte group parameters (no super-group formats)");
  if (data == nullptr || x == nullptr || y == nullptr) return status::null_pointer;
  if (M == 0 || K == 0 || N == 0 || K % std::size_t(T.group_k) != 0) return status::bad_shape;
  if (ldx == 0) ldx = K;
  if (ldy == 0) ldy = M;
  if (ldx < K || ldy < M) return status::bad_stride;
  constexpr int G = T.group_k, steps = G / 4, PL = T.planes;
  constexpr int spb = T.steps_per_block;  // steps per int16 accumulation interval
  c.reset_memory();
  const layout_geometry L(T, M, K);
  const bool fits = L.group_bytes <= P::bank_bytes;  // (groups of 256 k span two banks: placed linearly)
  const uint32_t buf[2] = {c.alloc(L.group_bytes, 64, fits ? 2 : -1), c.alloc(L.group_bytes, 64, fits ? 3 : -1)};
  lut16 tab = make_lut(c, nullptr, 16 * steps, lut_bank_ab<P>, lut_bank_cd<P>);  // the group's tables
  if (c.st != status::ok) return c.st;
  int16_t entries[16 * 64];  // (G <= 256: 64 steps)
  const float c_mirror = T.mirror ? 0.5f * float(T.plane_weight_sum) : 0.f;
  const auto one = broadcast<uint8_t, 128>(c, uint8_t(1));
  for (std::size_t n = 0; n < N; ++n) {
    const float* xr = x + n * ldx;
    for (std::size_t t = 0; t < L.tiles; ++t) {
      float yacc[64] = {};
      for (std::size_t g = 0; g < L.groups; ++g) {
        // the group's tables (built by the vector unit: per 2 steps, the 4 activations'
        // subset sums, the scale, the rounding; written in the replicated layout)
        c.loop_begin("lut.tables");
        c.iteration();
        const float ts = lut_group_tables(xr + g * G, G, T.mirror, entries);
        float xsum = 0.f;
        for (int k = 0; k < G; ++k) xsum += xr[g * G + std::size_t(k)];
        c.issue(slot::ld, uint64_t(G * 32 / P::load_bits));
        c.issue(slot::vec, uint64_t(steps / 2 * 10 + 4));
        lut_fill(c, tab, entries);
        c.loop_end();
        const uint32_t gb = buf[g % 2];
        c.dma_in(gb, data + L.scale_offset(t, g), L.group_bytes);
        const uint32_t codes = gb + uint32_t(T.scale_bytes());
        vec<int16_t, 64> acc16[2];  // int16 sums of rows 0..63 (one per step parity... summed below)
        accum<acc_kind::acc32, 32> acc32[2];
        int32_t blk_sum[64];
        for (int sp = 0; sp < steps / 2; ++sp) {
          if (sp % (spb / 2) == 0) {
            for (auto& a : acc16) a = vec<int16_t, 64>{};
            c.issue(slot::vec, 2);
          }
          c.loop_begin("lut.step_pair");
          c.iteration();
          // the step pair's 8 atoms as two 4-atom halves of 2 loads each
          vec<uint64_t, 8> idx[2];
          vec<uint8_t, 128> cod[4];
          for (int q = 0; q < 4; ++q)
            cod[q] = unpack(c, load<u4, 128>(c, codes + uint32_t(sp * T.step_pair_bytes() + 64 * q)));
          for (int p = 0; p < PL; ++p) {
            for (int hlf = 0; hlf < 2; ++hlf) {
              vec<uint64_t, 8> t1[2];
              for (int pr = 0; pr < 2; ++pr) {
                const auto bits = band(c, shr(c, cod[2 * hlf + pr], p), one);  // atoms 2 pr, 2 pr + 1
                const auto b64 = as<uint64_t, 16>(bits);
                const auto fe = shuffle(c, half(b64, 0), half(b64, 1), shuffle_mode::filter_even);
                const auto fo = shuffle(c, half(b64, 0), half(b64, 1), shuffle_mode::filter_odd);
                t1[pr] = add(c, fe, shl(c, fo, 1));
              }
              const auto fe = shuffle(c, t1[0], t1[1], shuffle_mode::filter_even);
              const auto fo = shuffle(c, t1[0], t1[1], shuffle_mode::filter_odd);
              idx[hlf] = add(c, fe, shl(c, fo, 2));  // [atom a: step 0, step 1, atom b: ...] of 4 atoms
            }
            for (int s = 0; s < 2; ++s) {
              const auto rows = as<uint8_t, 64>(shuffle(c, idx[0], idx[1], s ? shuffle_mode::filter_odd : shuffle_mode::filter_even));
              const int step = 2 * sp + s;
              const auto v = parallel_lookup(c, tab, rows, 0, 16 * step);
              const int pw = c.faulty(fault::lut_plane_weight) && p == 1 ? 0 : p;
              acc16[s] = add(c, acc16[s], pw ? shl(c, v, pw) : v);
            }
          }
          scalar_op(c, 2);
          c.loop_end();
          if ((sp + 1) % (spb / 2) == 0 || sp + 1 == steps / 2) {
            // block end: widen the int16 sums (both step parities) into int32
            c.loop_begin("lut.block");
            c.iteration();
            const auto tot = add(c, acc16[0], acc16[1]);
            for (int h = 0; h < 2; ++h) {
              acc32[h] = ups<acc_kind::acc32>(c, half(tot, h), 0);
              for (int i = 0; i < 32; ++i) blk_sum[32 * h + i] = int32_t(acc32[h].v[i]);
            }
            const std::size_t blk = (g * G + std::size_t(2 * sp + 2) * 4 - 1) / std::size_t(T.block_k);
            for (int r = 0; r < 64; ++r) {
              const std::size_t m = t * 64 + std::size_t(r);
              if (sums != nullptr && m < M) sums[(n * M + m) * L.blocks() + blk] = blk_sum[r];
            }
            // y += s (ts acc + (c_mirror - z) sum x): per block, the acc part in fp32 lanes
            for (int h = 0; h < 2; ++h) {
              const auto f = to_float(c, half_acc(acc32[h], 0));
              const auto f2 = to_float(c, half_acc(acc32[h], 1));
              c.issue(slot::vec, 2 * 3 * 2 + 2 * 2);  // s ts products and the adds into y_acc (emulated multiplies)
              for (int i = 0; i < 32; ++i) {
                const int r = 32 * h + i;
                float sc, z;
                detail::group_params<S>(c.ptr(gb), r, sc, z);
                yacc[r] += sc * (ts * (i < 16 ? f.v[i] : f2.v[i - 16]));
              }
            }
            c.loop_end();
          }
        }
        // the group's zero-point term, once per group
        c.issue(slot::vec, 4 * 3 + 4);
        if (!c.faulty(fault::lut_zero_term))
          for (int r = 0; r < 64; ++r) {
            float sc, z;
            detail::group_params<S>(c.ptr(gb), r, sc, z);
            yacc[r] += sc * ((c_mirror - z) * xsum);
          }
      }
      for (int r = 0; r < 64; ++r)
        if (t * 64 + std::size_t(r) < M) y[n * ldy + t * 64 + std::size_t(r)] = yacc[r];
    }
  }
  return c.st;
}

}  // namespace lutkit::aie
