// lutkit — the LUT-GEMV lookup kernel, written ONCE against a small "register tile" interface
// and compiled per target. No include guard: targets/host/gemv/lut_gemv_hwy-inl.h includes it once per
// Highway target (inside HWY_NAMESPACE, so it compiles with that target's attributes);
// targets/host/gemv/lut_gemv_vbmi.hpp and targets/xsimd/lut_gemv_xsimd.hpp include it once each. The
// target passes its `Ops` as a template argument.
//
// Ops works on virtual 64-byte vectors (one chunk of the tiling spec), whatever the native
// width, so every backend reads the same packed blob:
//   V  load(const uint8_t*)                  64 bytes
//   V  lo_nibbles(V), hi_nibbles(V)          4-bit indices
//   V  table1(const int8_t* t)               one 16-byte table in all four 128-bit blocks
//   T2 table2(const int8_t* a, const int8_t* b)   blocks 0,1 <- a; blocks 2,3 <- b (V, or an
//                                            Ops type of its own)
//   V  lookup(V table, V idx)                byte lookup of a table1 table by lo_/hi_nibbles
//   V  lookup(T2 table, V idx)               per-128-bit-block lookup (pshufb semantics)
//   (lo_nibbles / hi_nibbles may leave bits above the nibble set if both lookups ignore them)
//   V  negate_if(V v, const uint8_t* bits)   byte i negated where bit i of the 64-bit mask is set
// Optional (Ops that have them take the gathered lone path below):
//   V  permute(V idx, V v)                   byte i <- v[idx[i]] (64-byte permute)
//   TP table_pair(const int8_t* a, const int8_t* b)  the two steps' tables side by side
//   V  lookup_pair(TP t, V idx)              even bytes look up a, odd bytes b, by idx's low nibble
//   V  shr4(V v)                             16-bit lanes shifted right by 4 (the high nibbles'
//                                            bits in each byte's low nibble)
//   V  negate_mask(V v, uint64_t m)          byte i negated where bit i of m is set
// and, optionally on top of those (Ops that have them take the quad lone path below for
// policies with lone chunks only and int8 tables: W1, ternary):
//   V  permute2(V idx, V a, V b)             byte i <- (a, b)[idx[i]] (128-byte permute)
//   TQ table_quad(const int8_t* t)           four steps' adjacent 16-byte tables
//   V  lookup_steps(TQ t, V idx, V steps)    byte i looks up step steps[i] / 16's table by idx's
//                                            low nibble (steps: 0, 16, 32 or 48 in each byte)
//   D  zero32(); D dot4(D acc, V u, V s)     int32 lane w += sum of u[4w + i] * s[4w + i], u
//                                            unsigned, s signed (vpdpbusd)
//   F  widen32(D d)                          int32 -> float
// or (Ops that have them, and not the above, take the side-by-side lone path below):
//   V  steps_side_by_side(V k)               byte b of k's first 32 bytes and byte b of its last
//                                            32 in one 16-bit lane (lane order the Ops' own)
//   void widen_steps(W w, F& even, F& odd)   a madd over steps_side_by_side as floats: lanes of
//                                            even b = 0, 2, .., 30 and of odd b, each in order of b
//   W  madd(V u, V s)                        int16 lane w = u[2w]*s[2w] + u[2w+1]*s[2w+1],
//                                            u unsigned, s signed (pmaddubsw)
//   W  zero16(), add16(W, W); void store16(int16_t*, W)
//   void f16_to_f32(const uint16_t* src, float* dst, int n)   n a multiple of 16
//   F  16 floats: setf, loadf, storef, addf, mulf, fmaf(a, b, c) = a*b + c;
//   void widen(W w, F& lanes0_15, F& lanes16_31)          int16 -> float
// Nothing here computes a packed offset: every address comes from packed_layout.

#include "../core/compiler.hpp"

// GCC 12 flags its own _mm512_undefined_* helpers (`__Y = __Y`) wherever these functions'
// intrinsics are inlined; every includer gets the same silence
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

template <class Ops, class P, int NB>
static void lut_gemv_tile(const detail::gemv_args& a, const int8_t* const* E, const float* const* TS,
                          const float* const* XS, std::size_t t, std::size_t blk0, std::size_t blk1,
                          float* acc /* [NB][64] */) {
  constexpr tiling_spec S = P::spec;
  constexpr int PP = S.paired_chunks_per_step_pair() / 2;  // plane pairs
  constexpr bool LONE = S.lone_chunks_per_step_pair() > 0;
  constexpr bool I16 = S.entry_bits == 16;
  constexpr int SETS = I16 ? 2 : 1;
  constexpr int TB = S.table_bytes_per_step();
  constexpr int R = 64;
  static_assert(!(S.ternary && I16), "ternary policies use int8 tables");
  static_assert(!I16 || S.plane_whole(S.planes - 1), "int16 tables: the lone (top) plane sums whole entries");
  // int16 tables: the plane pairs that read the high bytes alone (table::lut4's WholePlanes)
  constexpr int PW = I16 && S.whole_planes > 0 ? (S.planes - S.whole_planes) / 2 : 0;
  static_assert(PW == 0 || (!S.plane_whole(2 * PW - 1) && S.plane_whole(2 * PW)), "whole planes: whole pairs");
  static_assert(S.max_abs_acc16() <= 32767, "int16 accumulation bound");
  using V = typename Ops::V;
  using W = typename Ops::W;
  const packed_layout& L = *a.layout;

  // plane weights: paired chunk p -> bytes (2^(2p), 2^(2p+1)); lone -> (2^b, 0) and (0, 2^b);
  // compile-time tables, so a call (one tile, one K chunk) sets up nothing but registers
  constexpr int NCB = (PP > 0 ? PP : 1) + 2;
  struct plane_bytes {
    alignas(64) uint8_t b[NCB][64];
  };
  alignas(64) static constexpr plane_bytes cbytes = [] {
    constexpr tiling_spec S = P::spec;
    plane_bytes c{};
    for (int p = 0; p < PP; ++p)
      for (int i = 0; i < 64; ++i) c.b[p][i] = uint8_t(1u << (2 * p + (i & 1)));
    const int lone_plane = S.ternary ? 0 : S.planes - 1;
    for (int i = 0; i < 64; ++i) {
      c.b[NCB - 2][i] = (i & 1) ? 0 : uint8_t(1u << lone_plane);
      c.b[NCB - 1][i] = (i & 1) ? uint8_t(1u << lone_plane) : 0;
    }
    return c;
  }();
  V cw[PP > 0 ? PP : 1];
  for (int p = 0; p < PP; ++p) cw[p] = Ops::load(cbytes.b[p]);
  const V ce = Ops::load(cbytes.b[NCB - 2]);
  const V co = Ops::load(cbytes.b[NCB - 1]);
  // Gathered lone path: one permute puts a row's two steps side by side (tiling spec,
  // lone_pair_source), so one madd by the lone plane's weight sums both steps into the paired
  // accumulators' row order: 2 lookups, 2 madds, 2 adds per lone chunk instead of 2, 4, 4.
  // Quad lone path: two step pairs' lone chunks permuted into row quads (tiling spec,
  // lone_quad_source), a row's four steps in one 32-bit lane; one lookup in the four steps'
  // adjacent tables and one dot4 by the lone plane's weight per vector: per two lone chunks 2
  // permutes, 4 lookups and 4 dot4 instead of 2 permutes, 4 lookups, 4 madds and 4 adds, and the
  // int32 sums go to float without widening. Exact as the int16 form: the same integer sums.
  // Ternary looks up and negates in the chunks' own order (the signs' order) and permutes the
  // signed values into row quads: no scalar sign swizzle. Lone-only policies (W1, ternary): W3,
  // whose lone plane is a third of its chunks, gained nothing in L3 and measured lower cold
  // (docs/design_measurements.md, "LUT-GEMV at one thread: Zen 4").
  constexpr bool QUAD = LONE && PP == 0 && !I16 && TB == 16 && S.step_pairs_per_block() % 2 == 0 &&
                        requires(V v, const int8_t* e) { Ops::widen32(Ops::dot4(Ops::zero32(), v, Ops::lookup_steps(Ops::table_quad(e), Ops::shr4(Ops::permute2(v, v, v)), v))); };
  constexpr bool GATHER = LONE && !QUAD && requires(V v, const int8_t* e) { Ops::negate_mask(Ops::lookup_pair(Ops::table_pair(e, e), Ops::shr4(Ops::permute(v, v))), 0); };
  struct gather_bytes {
    alignas(64) uint8_t idx[64];
    alignas(64) uint8_t weight[64];
    alignas(64) uint8_t quad[2][64];
    alignas(64) uint8_t quad_steps[3][64];  // row quads; chunk A as stored; chunk B as stored
  };
  alignas(64) static constexpr gather_bytes gb = [] {
    constexpr tiling_spec S = P::spec;
    gather_bytes g{};
    for (int o = 0; o < 64; ++o) {
      g.idx[o] = uint8_t(lone_pair_source(o));
      g.weight[o] = uint8_t(1u << (S.ternary ? 0 : S.planes - 1));
      for (int v = 0; v < 2; ++v) g.quad[v][o] = uint8_t(lone_quad_source(v, o));
      g.quad_steps[0][o] = uint8_t(16 * (o % 4));
      g.quad_steps[1][o] = uint8_t(16 * (o / 32));  // a lone chunk's half is its step
      g.quad_steps[2][o] = uint8_t(32 + 16 * (o / 32));
    }
    return g;
  }();
  // a ternary sign mask in gathered order: the map swaps bits 0 and 5 of a byte position
  static_assert([] {
    for (int o = 0; o < 64; ++o)
      if (lone_pair_source(o) != ((o & ~33) | ((o & 1) << 5) | ((o >> 5) & 1))) return false;
    return true;
  }(), "lone_pair_source is no longer the bit 0 <-> bit 5 swap that gathered_signs implements");
  [[maybe_unused]] auto gathered_signs = [](const uint8_t* bits) {
    uint64_t m;
    std::memcpy(&m, bits, 8);
    const uint64_t d = (m ^ (m >> 31)) & 0x00000000AAAAAAAAull;
    return m ^ d ^ (d << 31);
  };
  // Side-by-side lone path: the lone chunk looked up as before (bytes 0..31 step j, 32..63 step
  // j + 1), then a row's two steps put in one 16-bit lane, one madd by the lone plane's weight:
  // 2 madds and 2 adds per lone chunk instead of 4 and 4, 2 accumulators instead of 4. Even lone
  // bytes hold rows 0..15, odd bytes rows 16..31 (lo nibbles; hi nibbles 32..63): widen_steps's
  // even and odd floats are rows in order.
  constexpr bool STEPS = LONE && !GATHER && !QUAD && requires(V v, W w, typename Ops::F f) { Ops::widen_steps(Ops::madd(v, Ops::steps_side_by_side(v)), f, f); };
  static_assert([] {
    for (int r = 0; r < 32; ++r)
      if (lone_byte_of_row(r) != (r < 16 ? 2 * r : 2 * (r - 16) + 1)) return false;
    return true;
  }(), "lone_byte_of_row no longer puts rows 0..15 in even bytes and 16..31 in odd bytes");
  [[maybe_unused]] const V gidx = Ops::load(gb.idx);
  [[maybe_unused]] const V gw = Ops::load(gb.weight);
  [[maybe_unused]] V qidx[2], qsteps[3];
  if constexpr (QUAD) {
    for (int v = 0; v < 2; ++v) qidx[v] = Ops::load(gb.quad[v]);
    for (int v = 0; v < 3; ++v) qsteps[v] = Ops::load(gb.quad_steps[v]);
  }

  // int16 accumulators per block: paired [lo-nibble rows 0..31, hi-nibble rows 32..63];
  // lone [E_lo, O_lo, E_hi, O_hi]: row 16q+l at lanes l and 16+l of vector q.
  using F = typename Ops::F;
  static_assert(S.super_k == 0 || S.min_form || !S.asymmetric, "super-group formats: min-form or symmetric");
  alignas(64) float s32[R] = {}, z32[R] = {};
  // Ops with a one-register F and a 16-lane f16 load keep a small tile's outputs in registers for
  // the call and the block's scales (and zeros) in registers: the block epilogue then has no
  // stores, and the buffered form's store and reload per group is gone (W1 g64: 42 -> 22
  // epilogue instructions per block of 8 step pairs)
  // (super-group formats: int8 codes converted and multiplied by the fp32 super-values at use)
  constexpr bool F16_AT_USE = requires(const uint16_t* h) { requires std::is_same_v<decltype(Ops::loadf16(h)), F>; };
  constexpr bool OUT_REGS = F16_AT_USE && NB <= 2;
  // Ops without that load (AVX2: an F of two registers) but with loads of 16 int8 codes or fp16
  // values as an F form the scales (and zeros or minima) in the epilogue too: a super-group
  // format's from its super-values and codes as stored, and, where a group is one block, the
  // fp16 values; no per-block buffer of 64 scales written and read back
  constexpr bool SUPER_AT_USE =
      !F16_AT_USE && S.super_k > 0 && requires(const int8_t* c) { requires std::is_same_v<decltype(Ops::loadi8f(c)), F>; };
  constexpr bool HALF_AT_USE = !F16_AT_USE && S.super_k == 0 && S.group_k == S.block_k &&
                               requires(const uint16_t* h) { requires std::is_same_v<decltype(Ops::loadh(h)), F>; };
  F outv[OUT_REGS ? NB : 1][4], sreg[4], zreg[4];
  if constexpr (OUT_REGS)
    for (int n = 0; n < NB; ++n)
      for (int q = 0; q < 4; ++q) outv[n][q] = Ops::loadf(acc + n * R + 16 * q);
  // Super-group formats with one activation row: the blocks of a super-group add code x value
  // into their own sums, which take the fp32 super-values once, when the super-group ends (its
  // table entries change): per block and 16 rows a product fewer for the scale and for the
  // minimum (docs/llama_formats.md, "Decode")
  constexpr bool SUPER_SUMS = OUT_REGS && NB == 1 && S.super_k > 0;
  [[maybe_unused]] F ssum[SUPER_SUMS ? 4 : 1], zsum[SUPER_SUMS ? 4 : 1];
  [[maybe_unused]] const float *sum_s = nullptr, *sum_m = nullptr;  // the super-values ssum / zsum await
  auto flush_super = [&]() LUTKIT_ALWAYS_INLINE {
    if constexpr (SUPER_SUMS) {
      if (!sum_s) return;
      for (int q = 0; q < 4; ++q) {
        outv[0][q] = Ops::fmaf(Ops::loadf(sum_s + 16 * q), ssum[q], outv[0][q]);
        if constexpr (S.min_form) outv[0][q] = Ops::fmaf(Ops::loadf(sum_m + 16 * q), zsum[q], outv[0][q]);
        ssum[q] = zsum[q] = Ops::setf(0.f);
      }
    }
  };
  if constexpr (SUPER_SUMS)
    for (int q = 0; q < 4; ++q) ssum[q] = zsum[q] = Ops::setf(0.f);
  constexpr float c_mirror = S.mirror ? 0.5f * float(S.plane_weight_sum) : 0.f;
  // symmetric formats: one bias for every row (ternary: none)
  constexpr float z_sym = S.ternary ? 0.f : c_mirror - S.sym_zero;

  // the Ops may tune the prefetch distance to the CPU (targets/host/features.hpp)
  std::size_t pf_bytes = std::size_t(S.prefetch_bytes);
  if constexpr (requires { Ops::prefetch_bytes(0); }) pf_bytes = Ops::prefetch_bytes(S.prefetch_bytes);
  [[maybe_unused]] const float *sup_s = nullptr, *sup_m = nullptr;
  [[maybe_unused]] const int8_t *code_s = nullptr, *code_m = nullptr;
  [[maybe_unused]] const uint16_t *half_s = nullptr, *half_z = nullptr;
  // (blocks [blk0, blk1) lie in one band: the cursor walks them by additions)
  for (auto cur = L.cursor(t, blk0); cur.blk < blk1; cur.next()) {
    const std::size_t blk = cur.blk;
    if constexpr (F16_AT_USE) {
      // at the block's start, as the buffered form: converted where the epilogue uses them, the
      // loads' latency would be exposed there
      auto param = [&](std::size_t off, int q) {
        return Ops::loadf16(reinterpret_cast<const uint16_t*>(a.data + off) + 16 * q);
      };
      if constexpr (S.super_k > 0) {  // int8 codes times the super-group's fp32 values
        const float* sp = reinterpret_cast<const float*>(a.data + cur.super);
        const float* spm = reinterpret_cast<const float*>(a.data + cur.super_mins());
        auto codes = [&](std::size_t off, int q) { return Ops::loadi8f(reinterpret_cast<const int8_t*>(a.data + off) + 16 * q); };
        if constexpr (SUPER_SUMS) {  // the codes alone; the super-values when the super-group ends
          if (sp != sum_s) {
            flush_super();
            sum_s = sp;
            sum_m = spm;
          }
          for (int q = 0; q < 4; ++q) sreg[q] = codes(cur.params, q);
          if constexpr (S.min_form)
            for (int q = 0; q < 4; ++q) zreg[q] = codes(cur.zeros(), q);
        } else {
          for (int q = 0; q < 4; ++q) sreg[q] = Ops::mulf(Ops::loadf(sp + 16 * q), codes(cur.params, q));
          if constexpr (S.min_form)
            for (int q = 0; q < 4; ++q) zreg[q] = Ops::mulf(Ops::loadf(spm + 16 * q), codes(cur.zeros(), q));
        }
      } else {
        for (int q = 0; q < 4; ++q) sreg[q] = param(cur.params, q);
        if constexpr (S.min_form) {
          for (int q = 0; q < 4; ++q) zreg[q] = param(cur.zeros(), q);  // the minimum, as it is
        } else if constexpr (S.asymmetric) {
          // c_mirror - z in one rounding, as the buffered form's subtraction
          for (int q = 0; q < 4; ++q) zreg[q] = Ops::fmaf(param(cur.zeros(), q), Ops::setf(-1.f), Ops::setf(c_mirror));
        }
      }
    } else if constexpr (SUPER_AT_USE) {
      sup_s = reinterpret_cast<const float*>(a.data + cur.super);
      code_s = reinterpret_cast<const int8_t*>(a.data + cur.params);
      if constexpr (S.min_form) {
        sup_m = reinterpret_cast<const float*>(a.data + cur.super_mins());
        code_m = reinterpret_cast<const int8_t*>(a.data + cur.zeros());
      }
    } else if constexpr (HALF_AT_USE) {
      half_s = reinterpret_cast<const uint16_t*>(a.data + cur.params);
      if constexpr (S.asymmetric) half_z = reinterpret_cast<const uint16_t*>(a.data + cur.zeros());
    } else if (blk == blk0 || cur.in_group == 0) {
      if constexpr (S.super_k > 0) {  // int8 codes times the super-group's fp32 values
        const uint8_t* sp = a.data + cur.super;
        const int8_t* cs = reinterpret_cast<const int8_t*>(a.data + cur.params);
        for (int r = 0; r < R; ++r) s32[r] = detail::load_f32(sp + 4 * r) * float(cs[r]);
        if constexpr (S.min_form) {
          const uint8_t* spm = a.data + cur.super_mins();
          const int8_t* cz = reinterpret_cast<const int8_t*>(a.data + cur.zeros());
          for (int r = 0; r < R; ++r) z32[r] = detail::load_f32(spm + 4 * r) * float(cz[r]);
        }
      } else {
        Ops::f16_to_f32(reinterpret_cast<const uint16_t*>(a.data + cur.params), s32, R);
        if constexpr (S.asymmetric) {
          Ops::f16_to_f32(reinterpret_cast<const uint16_t*>(a.data + cur.zeros()), z32, R);
          if constexpr (!S.min_form)
            for (int r = 0; r < R; ++r) z32[r] = c_mirror - z32[r];
        }
      }
    }
    W accP[NB][SETS][2];
    W accL[NB][SETS][STEPS ? 2 : 4];
    // quad lone path: [rows 0..15, 16..31, 32..47, 48..63]
    using QD = decltype([] {
      if constexpr (QUAD)
        return Ops::zero32();
      else
        return 0;
    }());
    [[maybe_unused]] QD accQ[NB][4];
    if constexpr (QUAD)
      for (int n = 0; n < NB; ++n)
        for (int i = 0; i < 4; ++i) accQ[n][i] = Ops::zero32();
    for (int n = 0; n < NB; ++n)
      for (int s = 0; s < SETS; ++s) {
        for (int i = 0; i < 2; ++i) accP[n][s][i] = Ops::zero16();
        for (int i = 0; i < (STEPS ? 2 : 4); ++i) accL[n][s][i] = Ops::zero16();
      }
    const uint8_t* bp = a.data + cur.block;
    const std::size_t sp0 = blk * std::size_t(S.step_pairs_per_block());
    // the quad path (lone chunks only) works on odd step pairs, each with the one before it
#if defined(LUTKIT_GEMV_STEP_PAIR_UNROLL)
    LUTKIT_PRAGMA_UNROLL(LUTKIT_GEMV_STEP_PAIR_UNROLL)
#endif
    for (int spi = QUAD ? 1 : 0; spi < S.step_pairs_per_block(); spi += QUAD ? 2 : 1) {
      const std::size_t j = 2 * (sp0 + std::size_t(spi));  // first step of the pair
      // stream ahead into L1: the CPU analogue of T-MAN's DMA stage (a tile's bytes are contiguous)
      if constexpr (S.prefetch_bytes > 0)
        if (pf_bytes > 0)
          for (int c = 0; c < (QUAD ? 2 : 1) * S.step_pair_bytes(); c += 64)
            __builtin_prefetch(bp + S.paired_chunk_in_block(QUAD ? spi - 1 : spi, 0, 0) + pf_bytes + c, 0, 3);
      // plane pair p's two chunks; Whole: the entries' low bytes too (int8 tables: the entries).
      // int16 tables: the pairs below table::lut4's WholePlanes read the high bytes alone (pairs
      // are whole or not as a pair: tiling_spec::valid); two loops, not a test per pair: with the
      // test GCC -O3 compiled Q5_1's hybrid 12 % slower than every plane whole
      auto paired = [&]<bool Whole>(int p) LUTKIT_ALWAYS_INLINE {
        for (int s = 0; s < 2; ++s) {
          const V raw = Ops::load(bp + S.paired_chunk_in_block(spi, s, p));
          const V lo = Ops::lo_nibbles(raw), hi = Ops::hi_nibbles(raw);
          for (int n = 0; n < NB; ++n) {
            const int8_t* tp = E[n] + (j + std::size_t(s)) * TB;
            if constexpr (Whole) {
              const V tb = Ops::table1(tp);
              accP[n][0][0] = Ops::add16(accP[n][0][0], Ops::madd(cw[p], Ops::lookup(tb, lo)));
              accP[n][0][1] = Ops::add16(accP[n][0][1], Ops::madd(cw[p], Ops::lookup(tb, hi)));
            }
            if constexpr (I16) {  // the high bytes: signed lookups as the low ones (tiling_spec::table_qmax)
              const V th = Ops::table1(tp + 16);
              accP[n][SETS - 1][0] = Ops::add16(accP[n][SETS - 1][0], Ops::madd(cw[p], Ops::lookup(th, lo)));
              accP[n][SETS - 1][1] = Ops::add16(accP[n][SETS - 1][1], Ops::madd(cw[p], Ops::lookup(th, hi)));
            }
          }
        }
      };
      for (int p = 0; p < PW; ++p) paired.template operator()<false>(p);
      for (int p = PW; p < PP; ++p) paired.template operator()<true>(p);
      if constexpr (QUAD) {
        {  // this step pair's lone chunk and the previous one's: steps j - 2 .. j + 1
          const V ca = Ops::load(bp + S.lone_chunk_in_block(spi - 1)), cb = Ops::load(bp + S.lone_chunk_in_block(spi));
          if constexpr (S.ternary) {
            const V ha = Ops::shr4(ca), hb = Ops::shr4(cb);
            const uint8_t* sa = bp + S.sign_in_block(spi - 1);
            const uint8_t* sb = bp + S.sign_in_block(spi);
            for (int n = 0; n < NB; ++n) {
              const auto tq = Ops::table_quad(E[n] + (j - 2) * TB);
              const V al = Ops::negate_if(Ops::lookup_steps(tq, ca, qsteps[1]), sa);
              const V ah = Ops::negate_if(Ops::lookup_steps(tq, ha, qsteps[1]), sa + 8);
              const V bl = Ops::negate_if(Ops::lookup_steps(tq, cb, qsteps[2]), sb);
              const V bh = Ops::negate_if(Ops::lookup_steps(tq, hb, qsteps[2]), sb + 8);
              accQ[n][0] = Ops::dot4(accQ[n][0], gw, Ops::permute2(qidx[0], al, bl));
              accQ[n][1] = Ops::dot4(accQ[n][1], gw, Ops::permute2(qidx[1], al, bl));
              accQ[n][2] = Ops::dot4(accQ[n][2], gw, Ops::permute2(qidx[0], ah, bh));
              accQ[n][3] = Ops::dot4(accQ[n][3], gw, Ops::permute2(qidx[1], ah, bh));
            }
          } else {
            const V x0 = Ops::permute2(qidx[0], ca, cb), x1 = Ops::permute2(qidx[1], ca, cb);
            const V y0 = Ops::shr4(x0), y1 = Ops::shr4(x1);
            for (int n = 0; n < NB; ++n) {
              const auto tq = Ops::table_quad(E[n] + (j - 2) * TB);
              accQ[n][0] = Ops::dot4(accQ[n][0], gw, Ops::lookup_steps(tq, x0, qsteps[0]));
              accQ[n][1] = Ops::dot4(accQ[n][1], gw, Ops::lookup_steps(tq, x1, qsteps[0]));
              accQ[n][2] = Ops::dot4(accQ[n][2], gw, Ops::lookup_steps(tq, y0, qsteps[0]));
              accQ[n][3] = Ops::dot4(accQ[n][3], gw, Ops::lookup_steps(tq, y1, qsteps[0]));
            }
          }
        }
      } else if constexpr (GATHER) {
        const V lo = Ops::permute(gidx, Ops::load(bp + S.lone_chunk_in_block(spi))), hi = Ops::shr4(lo);
        [[maybe_unused]] uint64_t sgn[2] = {};
        if constexpr (S.ternary) {
          sgn[0] = gathered_signs(bp + S.sign_in_block(spi));
          sgn[1] = gathered_signs(bp + S.sign_in_block(spi) + 8);
        }
        for (int n = 0; n < NB; ++n) {
          const int8_t* tp = E[n] + j * TB;
          // the two steps' tables, adjacent when a step's table is 16 bytes: one load
          const auto tb = [&] {
            if constexpr (TB == 16 && requires { Ops::table_pair_adjacent(tp); })
              return Ops::table_pair_adjacent(tp);
            else
              return Ops::table_pair(tp, tp + TB);
          }();
          V kl = Ops::lookup_pair(tb, lo), kh = Ops::lookup_pair(tb, hi);
          if constexpr (S.ternary) {
            kl = Ops::negate_mask(kl, sgn[0]);
            kh = Ops::negate_mask(kh, sgn[1]);
          }
          accP[n][0][0] = Ops::add16(accP[n][0][0], Ops::madd(gw, kl));
          accP[n][0][1] = Ops::add16(accP[n][0][1], Ops::madd(gw, kh));
          if constexpr (I16) {
            const auto th = Ops::table_pair(tp + 16, tp + TB + 16);
            accP[n][SETS - 1][0] = Ops::add16(accP[n][SETS - 1][0], Ops::madd(gw, Ops::lookup_pair(th, lo)));
            accP[n][SETS - 1][1] = Ops::add16(accP[n][SETS - 1][1], Ops::madd(gw, Ops::lookup_pair(th, hi)));
          }
        }
      } else if constexpr (STEPS) {
        const V raw = Ops::load(bp + S.lone_chunk_in_block(spi));
        const V lo = Ops::lo_nibbles(raw), hi = Ops::hi_nibbles(raw);
        const uint8_t* sg = bp + S.sign_in_block(spi);
        for (int n = 0; n < NB; ++n) {
          const int8_t* tp = E[n] + j * TB;
          const auto tb = Ops::table2(tp, tp + TB);
          V kl = Ops::lookup(tb, lo), kh = Ops::lookup(tb, hi);
          if constexpr (S.ternary) {
            kl = Ops::negate_if(kl, sg);
            kh = Ops::negate_if(kh, sg + 8);
          }
          accL[n][0][0] = Ops::add16(accL[n][0][0], Ops::madd(gw, Ops::steps_side_by_side(kl)));
          accL[n][0][1] = Ops::add16(accL[n][0][1], Ops::madd(gw, Ops::steps_side_by_side(kh)));
          if constexpr (I16) {
            const auto th = Ops::table2(tp + 16, tp + TB + 16);
            accL[n][SETS - 1][0] = Ops::add16(accL[n][SETS - 1][0], Ops::madd(gw, Ops::steps_side_by_side(Ops::lookup(th, lo))));
            accL[n][SETS - 1][1] = Ops::add16(accL[n][SETS - 1][1], Ops::madd(gw, Ops::steps_side_by_side(Ops::lookup(th, hi))));
          }
        }
      } else if constexpr (LONE) {
        const V raw = Ops::load(bp + S.lone_chunk_in_block(spi));
        const V lo = Ops::lo_nibbles(raw), hi = Ops::hi_nibbles(raw);
        const uint8_t* sg = bp + S.sign_in_block(spi);
        for (int n = 0; n < NB; ++n) {
          const int8_t* tp = E[n] + j * TB;
          const auto tb = Ops::table2(tp, tp + TB);  // Ops may give lone tables their own type
          V kl = Ops::lookup(tb, lo), kh = Ops::lookup(tb, hi);
          if constexpr (S.ternary) {
            kl = Ops::negate_if(kl, sg);
            kh = Ops::negate_if(kh, sg + 8);
          }
          accL[n][0][0] = Ops::add16(accL[n][0][0], Ops::madd(ce, kl));
          accL[n][0][1] = Ops::add16(accL[n][0][1], Ops::madd(co, kl));
          accL[n][0][2] = Ops::add16(accL[n][0][2], Ops::madd(ce, kh));
          accL[n][0][3] = Ops::add16(accL[n][0][3], Ops::madd(co, kh));
          if constexpr (I16) {
            const auto th = Ops::table2(tp + 16, tp + TB + 16);
            const V ql = Ops::lookup(th, lo), qh = Ops::lookup(th, hi);
            accL[n][SETS - 1][0] = Ops::add16(accL[n][SETS - 1][0], Ops::madd(ce, ql));
            accL[n][SETS - 1][1] = Ops::add16(accL[n][SETS - 1][1], Ops::madd(co, ql));
            accL[n][SETS - 1][2] = Ops::add16(accL[n][SETS - 1][2], Ops::madd(ce, qh));
            accL[n][SETS - 1][3] = Ops::add16(accL[n][SETS - 1][3], Ops::madd(co, qh));
          }
        }
      }
    }
    // ---- block epilogue: int16 -> float (exact: every partial sum is < 2^24), table scale,
    // weight scale, zero/mirror bias; 16 rows per float vector, rows in order. The gathered lone
    // path adds into the paired accumulators (exact in int16: a row's sum over the block, all
    // planes, is within max_abs_acc16 <= 32767).
    constexpr bool HAS_P = PP > 0 || GATHER;
    // One half (h: lo-nibble rows 0..31, hi-nibble rows 32..63) at a time, in named locals: arrays
    // of multi-part F made GCC copy AVX2 halves through general registers.
    // The half is a template argument (not a loop variable): with a variable index into accP / accL
    // GCC kept W1's lone accumulators on the stack, a store-to-load chain per step pair.
    for (int n = 0; n < NB; ++n) {
      const F ts = Ops::setf(TS[n][blk]), sx = Ops::setf(XS[n][blk]);
      float* an = acc + n * R;
      auto half = [&]<int h>() LUTKIT_ALWAYS_INLINE {
        F r0 = Ops::setf(0.f), r1 = Ops::setf(0.f);  // rows 32h + 0..15, 32h + 16..31
        for (int s = 0; s < SETS; ++s) {
          F p0 = Ops::setf(0.f), p1 = Ops::setf(0.f);
          if constexpr (HAS_P) Ops::widen(accP[n][s][h], p0, p1);
          if constexpr (QUAD) {  // two exact integers below 2^24: the float sum is exact
            p0 = HAS_P ? Ops::addf(p0, Ops::widen32(accQ[n][2 * h])) : Ops::widen32(accQ[n][2 * h]);
            p1 = HAS_P ? Ops::addf(p1, Ops::widen32(accQ[n][2 * h + 1])) : Ops::widen32(accQ[n][2 * h + 1]);
          } else if constexpr (STEPS) {
            F even, odd;
            Ops::widen_steps(accL[n][s][h], even, odd);
            p0 = Ops::addf(p0, even);
            p1 = Ops::addf(p1, odd);
          } else if constexpr (LONE && !GATHER && !QUAD) {  // lanes 0..15 and 16..31: the same rows, two steps
            F lo, hi;
            Ops::widen(accL[n][s][2 * h], lo, hi);
            p0 = Ops::addf(p0, Ops::addf(lo, hi));
            Ops::widen(accL[n][s][2 * h + 1], lo, hi);
            p1 = Ops::addf(p1, Ops::addf(lo, hi));
          }
          if (s == 0) {
            r0 = p0;
            r1 = p1;
          } else {  // int16 entries: the high-byte set weighs 256
            const F wgt = Ops::setf(256.f);
            r0 = Ops::fmaf(p0, wgt, r0);
            r1 = Ops::fmaf(p1, wgt, r1);
          }
        }
        for (int i = 0; i < 2; ++i) {
          const int q = 2 * h + i;
          F zq = Ops::setf(0.f), sq;
          if constexpr (F16_AT_USE) {
            zq = zreg[q];
            sq = sreg[q];
          } else if constexpr (SUPER_AT_USE) {
            sq = Ops::mulf(Ops::loadf(sup_s + 16 * q), Ops::loadi8f(code_s + 16 * q));
            if constexpr (S.min_form) zq = Ops::mulf(Ops::loadf(sup_m + 16 * q), Ops::loadi8f(code_m + 16 * q));
          } else if constexpr (HALF_AT_USE) {
            sq = Ops::loadh(half_s + 16 * q);
            if constexpr (S.min_form) {
              zq = Ops::loadh(half_z + 16 * q);  // the minimum, as it is
            } else if constexpr (S.asymmetric) {
              // c_mirror - z in one rounding, as the buffered form's subtraction
              zq = Ops::fmaf(Ops::loadh(half_z + 16 * q), Ops::setf(-1.f), Ops::setf(c_mirror));
            }
          } else {
            if constexpr (S.asymmetric) zq = Ops::loadf(z32 + 16 * q);
            sq = Ops::loadf(s32 + 16 * q);
          }
          // min-form (w = s q + m): s (acc ts + c_mirror sum(x)) + m sum(x); otherwise
          // s (acc ts + (c_mirror - z) sum(x))
          const F bias = S.min_form     ? Ops::setf(c_mirror * XS[n][blk])
                         : S.asymmetric ? Ops::mulf(zq, sx)
                                        : Ops::setf(z_sym * XS[n][blk]);
          const F val = Ops::fmaf(i == 0 ? r0 : r1, ts, bias);
          if constexpr (SUPER_SUMS) {
            ssum[q] = Ops::fmaf(sq, val, ssum[q]);
            if constexpr (S.min_form) zsum[q] = Ops::fmaf(zq, sx, zsum[q]);
          } else {
            F o = OUT_REGS ? outv[n][q] : Ops::loadf(an + 16 * q);
            o = Ops::fmaf(sq, val, o);
            if constexpr (S.min_form) o = Ops::fmaf(zq, sx, o);
            if constexpr (OUT_REGS)
              outv[n][q] = o;
            else
              Ops::storef(an + 16 * q, o);
          }
        }
      };
      half.template operator()<0>();
      half.template operator()<1>();
    }
  }
  flush_super();
  if constexpr (OUT_REGS)
    for (int n = 0; n < NB; ++n)
      for (int q = 0; q < 4; ++q) Ops::storef(acc + n * R + 16 * q, outv[n][q]);
}

// Rows [row_begin, row_end) of y = W x for N activation rows.
template <class Ops, class P>
static void lut_gemv_rows(const detail::gemv_args& a) {
  constexpr tiling_spec S = P::spec;
  constexpr int regs_per_n = (S.entry_bits == 16 ? 2 : 1) *
                             ((S.paired_chunks_per_step_pair() > 0 ? 2 : 0) + (S.lone_chunks_per_step_pair() > 0 ? 4 : 0));
  constexpr int NBMAX = regs_per_n <= 2 ? 8 : (regs_per_n <= 4 ? 4 : 2);
  const packed_layout& L = *a.layout;
  constexpr std::size_t R = 64;
  // Band after band (tiling spec: a K band's panels, one per tile, lie in order, so the walk reads
  // the weights as one stream while the band's tables stay in L1), each band tile after tile; a
  // tile's outputs accumulate across the bands. Within a panel, K chunks of blocks per pass so
  // the chunk of weights stays in L1 across the n passes (one pass over the n: the whole panel).
  const bool one_pass = a.N == 1 || a.N == 2 || (a.N == 4 && NBMAX >= 4) || (a.N == 8 && NBMAX >= 8);
  const std::size_t chunk_blocks =
      one_pass ? L.band_blocks : std::max<std::size_t>(1, std::size_t(16384) / std::size_t(S.block_bytes()));
  const std::size_t t0 = a.row_begin / R, t1 = (a.row_end + R - 1) / R;
  std::vector<float> acc((t1 - t0) * a.N * R, 0.f);  // [tile][n][row]
  for (std::size_t band = 0; band < L.bands; ++band) {
    const std::size_t bb0 = L.band_first_block(band), bb1 = L.band_end_block(band);
    for (std::size_t t = t0; t < t1; ++t) {
      float* at = acc.data() + (t - t0) * a.N * R;
      for (std::size_t b0 = bb0; b0 < bb1; b0 += chunk_blocks) {
        const std::size_t b1 = std::min(bb1, b0 + chunk_blocks);
        std::size_t n0 = 0;
        auto run = [&](auto nb_tag) {
          constexpr int NB = decltype(nb_tag)::value;
          const int8_t* E[NB];
          const float* TS[NB];
          const float* XS[NB];
          for (int i = 0; i < NB; ++i) {
            E[i] = a.entries + (n0 + std::size_t(i)) * a.entries_stride;
            TS[i] = a.tscale + (n0 + std::size_t(i)) * a.blocks;
            XS[i] = a.xsum + (n0 + std::size_t(i)) * a.blocks;
          }
          lut_gemv_tile<Ops, P, NB>(a, E, TS, XS, t, b0, b1, at + n0 * R);
          n0 += NB;
        };
        while (a.N - n0 >= 8 && NBMAX >= 8) run(std::integral_constant<int, (NBMAX >= 8 ? 8 : 1)>{});
        while (a.N - n0 >= 4 && NBMAX >= 4) run(std::integral_constant<int, (NBMAX >= 4 ? 4 : 1)>{});
        while (a.N - n0 >= 2) run(std::integral_constant<int, 2>{});
        while (a.N - n0 >= 1) run(std::integral_constant<int, 1>{});
      }
    }
  }
  for (std::size_t t = t0; t < t1; ++t) {
    const float* at = acc.data() + (t - t0) * a.N * R;
    const std::size_t r_lo = std::max(a.row_begin, t * R), r_hi = std::min(a.row_end, (t + 1) * R);
    for (std::size_t n = 0; n < a.N; ++n)
      for (std::size_t m = r_lo; m < r_hi; ++m) a.y[n * a.ldy + m] = at[n * R + (m - t * R)];
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
