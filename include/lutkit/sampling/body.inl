// lutkit — the sampling micro-kernels (sampling/microkernel.hpp), written ONCE against a vector of
// W float lanes and compiled per instruction set: fused max / argmax / second max, exp sums
// (range reduction + degree-5 minimax polynomial + 2^k) and their bounding chord sums, Gumbel-max
// with the counter-based hash in vector lanes, threshold masses and selection, the bf16 / fp16 /
// MXFP8 decoders. No include guard: a target includes it once per instruction set, inside that
// set's namespace, after including sampling/logits.hpp and sampling/microkernel.hpp, with
//   using Ops = ...;        the vector-width primitives (below)
//   #define LUTKIT_OPS_FN   the function attributes of that set (e.g. its target attribute)
// (targets/host/sampling/sampling_avx2.hpp and sampling_avx512.hpp).
//
// Ops (all static; F: W floats, U: W uint32 lanes, both GCC/clang vector types, so + - * / and, on
// U, ^ & | << >> and casts between F and U are written as operators; M: a lane mask):
//   W; F set1(float), zero(), load(const float*); void store(float*, F); U set1u(uint32_t), iota()
//   M tail(size_t left)                lanes [0, left); F loadz(p, M), load_or(p, M, F fill):
//                                      masked loads that touch no lane outside the mask
//   F fma(a, b, c) = a b + c (one rounding), max(a, b), min(a, b) (b where either is NaN),
//     round(x) (nearest even), to_float(U) (as int32); U round_int(F) (nearest even, as int32)
//   M gt(F, F), ge(F, F), eq(F, F) (ordered: false on NaN), ordered(F), eq(U, U), less(U, U)
//     (as int32), both(M, M); unsigned bits(M) (lane i at bit i); F select(M, F no, F yes),
//     U select(M, U no, U yes); F add_if(M, F acc, F x), U inc_if(M, U c)
//   float hmax(F), hsum(F); int64_t hsum(U); uint32_t hmin(M, U) (unsigned, over the lanes of M)
//   F scale2(F p, F k)                 p 2^k rounded once (k integral, -150 <= k <= 127)
//     (optional, with a native scale2: F reduce(x) = x - round(x), 0 for +-inf)
//     (optional: scale2_nonpos(p, k), the same for k <= 0, where an Ops has a cheaper form)
//   void mant_exp(F x, F& m, F& e)     x = 2^e m, m in [0.75, 1.5) (x normal, > 0)
//   F load_f16(p) (exact); U load_u16(p), load_u8(p) (zero-extended), load_s8(p) (sign-extended)
//                                      W elements
//   optional: void bf16_pair(const uint16_t* p, F& v0, F& v1)  2W bf16 elements as floats, in
//     order (where that is cheaper than two load_u16 and shifts)
//   optional: size_t compress(M, F v, U ix, float* val, uint32_t* idx)  the lanes of M, in order
//     (called for whole vectors only: it may write all W lanes from val / idx);
//     size_t compress_values(M, F v, float* val), the same without the indices
// (attention/body.inl uses these and a few more). Only sums depend on the Ops (their order: W
// lanes, then its horizontal reduction); maxima, indices, selections and decoded values do not.

using F = Ops::F;
using U = Ops::U;
using M = Ops::M;
constexpr int W = Ops::W;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;

LUTKIT_OPS_FN inline F ninf() { return Ops::set1(-__builtin_inff()); }
LUTKIT_OPS_FN inline U lane_index(uint32_t base) { return Ops::set1u(base) + Ops::iota(); }

// 2^y for -150 <= y <= 95 (the caller clamps y >= -150: NaN and -inf give 0, as 2^-150 rounds to
// 0): y = k + f, k = round(y), |f| <= 1/2, 2^f = 1 + f q(f) with q of degree 4, fitted minimax in
// relative error (2^0 = 1 exactly; with float coefficients and FMA Horner steps within 1.6e-7 of
// 2^f, the degree-6 Taylor series it replaced 2.1e-7), then p 2^k in one rounding. With a
// one-instruction p 2^k (Ops::scale2_native: AVX-512's vscalefps) k comes from a rounding
// instruction; else from a conversion to int32 (nearest), shifted into an exponent field biased
// by 32 so that the product with 2^-32 is the one rounding.
// 2^f for |f| <= 1/2 (the polynomial above)
LUTKIT_OPS_FN inline F exp2_frac(F f) {
  F p = Ops::set1(1.326472614891827e-3f);
  p = Ops::fma(p, f, Ops::set1(9.671512991189957e-3f));
  p = Ops::fma(p, f, Ops::set1(5.550733581185341e-2f));
  p = Ops::fma(p, f, Ops::set1(2.4022242426872253e-1f));
  p = Ops::fma(p, f, Ops::set1(6.931470036506653e-1f));
  return Ops::fma(p, f, Ops::set1(1.f));
}
LUTKIT_OPS_FN inline F exp2_poly(F y) {
  if constexpr (Ops::scale2_native) {
    const F k = Ops::round(y);
    return Ops::scale2(exp2_frac(y - k), k);
  } else {
    const U ki = Ops::round_int(y);
    return exp2_frac(y - Ops::to_float(ki)) * (F)((ki + Ops::set1u(127 + 32)) << 23) * Ops::set1(0x1p-32f);
  }
}
// 2^y for every y but NaN, unclamped (-inf gives 0, +inf gives +inf), where the Ops have
// reduce(y) = y - round(y) (0 for +-inf) and a native scale2 (2^-inf = 0): AVX-512's vreduceps and
// vscalefps. It saves the clamp before exp2_poly (the exp-sum pass 1.08x, docs/sampling.md
// "Design decisions"), but a NaN y gives NaN: the passes that use it redo a chunk whose sum comes
// out NaN (a NaN logit) with the clamp. (Not for entropy sums: there 2^-inf -inf is NaN.)
template <class O = Ops>
constexpr bool exp2_unclamped() {
  if constexpr (O::scale2_native)
    return requires(typename O::F y) { O::reduce(y); };
  else
    return false;
}
template <class O = Ops>
LUTKIT_OPS_FN inline F exp2_any(F y) {
  if constexpr (exp2_unclamped<O>())
    return O::scale2(exp2_frac(O::reduce(y)), O::round(y));
  else
    return exp2_poly(O::max(y, O::set1(-150.f)));  // (unused: such Ops take the clamped passes)
}

// y = beta log2(e) (x - m) in log2 units, clamped at -150 (NaN, the first operand of the max, and
// -inf also give -150), for a reference m. With c = beta log2(e) and r = fl(m c), where |r| <= 2^20
// it is ONE operation, fma(x, c, -r): rounded once, as (x - m) c was, but every term's y is off by
// the same d = m c - r (exact by an fma; |d| <= 2^-4), so a sum S' of the terms 2^y is scaled back
// once, S = 2^-d S' (fix), and a sum E' of 2^y y gives E = 2^-d E' - d S (fix_ent). One vector
// operation fewer a logit (the exp-sum passes 1.1x, docs/sampling.md "Design decisions"); beyond
// 2^20 (logits near 7e5 / beta), (x - m) c.
struct log2_units {
  F vc, vb;  // c, and -r (fold) or m
  float d = 0.f, scale = 1.f;
  bool fold;
  LUTKIT_OPS_FN log2_units(float m, float beta) {
    const float c = beta * kLog2e, r = m * c;
    fold = __builtin_fabsf(r) <= 0x1p20f;  // (false for NaN and +-inf)
    vc = Ops::set1(c);
    vb = Ops::set1(fold ? -r : m);
    if (fold) {
      d = __builtin_fmaf(m, c, -r);
      scale = float(__builtin_exp2(-double(d)));
    }
  }
  LUTKIT_OPS_FN F raw(F x) const { return fold ? Ops::fma(x, vc, vb) : (x - vb) * vc; }  // (unclamped)
  LUTKIT_OPS_FN F operator()(F x) const { return Ops::max(raw(x), Ops::set1(-150.f)); }
  LUTKIT_OPS_FN float fix(float s) const { return s * scale; }
  LUTKIT_OPS_FN float fix_ent(float e, float s_fixed) const { return e * scale - d * s_fixed; }
};

// log(x) for normal x > 0: x = 2^e m, m in [0.75, 1.5), log(m) = 2 atanh(f / (2 + f)), f = m - 1
LUTKIT_OPS_FN inline F log_pos(F x) {
  F m, e;
  Ops::mant_exp(x, m, e);
  const F f = m - Ops::set1(1.f);
  const F s = f / (f + Ops::set1(2.f));
  const F s2 = s * s;
  F p = Ops::set1(2.f / 11.f);
  p = Ops::fma(p, s2, Ops::set1(2.f / 9.f));
  p = Ops::fma(p, s2, Ops::set1(2.f / 7.f));
  p = Ops::fma(p, s2, Ops::set1(2.f / 5.f));
  p = Ops::fma(p, s2, Ops::set1(2.f / 3.f));
  p = Ops::fma(p, s2, Ops::set1(2.f));
  return Ops::fma(e, Ops::set1(0.693147180559945309f), p * s);
}

LUTKIT_OPS_FN inline U hash32(U x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

// horizontal: the largest value, lowest index among the lanes holding it
LUTKIT_OPS_FN inline void reduce_argmax(F vm, U vi, float& m, uint32_t& i) {
  const float best = Ops::hmax(vm);
  const M at = Ops::eq(vm, Ops::set1(best));
  m = best;
  i = Ops::bits(at) ? Ops::hmin(at, vi) : no_index;
}
// the second largest: the best of every lane's second, and of the lanes' maxima but the winner's
LUTKIT_OPS_FN inline float reduce_second(F vm, U vi, F v2, uint32_t winner) {
  return Ops::hmax(Ops::max(v2, Ops::select(Ops::eq(vi, Ops::set1u(winner)), vm, ninf())));
}

// the prefetch of [pc, pc + bytes) spread over a loop: at most `step` bytes per iteration, into
// L2 (locality 1), measured faster than into L1 (docs/sampling.md, "Design decisions")
struct prefetcher {
  const char* pc;
  std::size_t done = 0, bytes, step;
  prefetcher(const void* pf, std::size_t pf_bytes, std::size_t n, std::size_t per_iter)
      : pc(static_cast<const char*>(pf)), bytes(pf ? pf_bytes : 0), step(n ? (pf_bytes * per_iter + n - 1) / n : 0) {}
  void run() {
    for (const std::size_t e = std::min(done + step, bytes); done < e; done += 64) __builtin_prefetch(pc + done, 0, 1);
  }
};

// one vector of the running max / argmax / second max (v: -inf in lanes past the end)
template <bool Top2>
LUTKIT_OPS_FN inline void max_lanes(F v, U idx, F& vm, U& vi, F& v2) {
  const M gt = Ops::gt(v, vm);
  if constexpr (Top2) v2 = Ops::max(v2, Ops::min(Ops::select(Ops::ordered(v), ninf(), v), vm));
  vm = Ops::max(v, vm);  // NaN in v: vm kept
  vi = Ops::select(gt, vi, idx);
}

template <bool Top2>
LUTKIT_OPS_FN inline void max_block(const float* x, std::size_t n, uint32_t base, F& vm, U& vi, F& v2, F& bm,
                                    prefetcher& pf) {
  U idx = lane_index(base);
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    if ((i & 31) == 0) pf.run();
    const F v = Ops::load(x + i);
    max_lanes<Top2>(v, idx, vm, vi, v2);
    bm = Ops::max(v, bm);
    idx += W;
  }
  if (i < n) {
    const F v = Ops::load_or(x + i, Ops::tail(n - i), ninf());
    max_lanes<Top2>(v, idx, vm, vi, v2);
    bm = Ops::max(v, bm);
  }
}

// ---- the fused max / exp-sum pass over a chunk, reading its values from a source: the
// chunk's floats (fp32 logits, or a chunk the decoders below wrote), or the logits' own bf16 /
// fp16 elements converted in registers (MXFP8 is decoded first: in registers its decoding
// measured as slow as through the chunk, its extra operations being the bound). A source gives
// the same values as the decoders, and the pass takes them in the same order, so a chunk read in
// place gives the same bits as the chunk decoded first. Source: pair(i, v0, v1): the vectors at
// i and i + W (i + 2W <= n, i a multiple of 2W); last(i, left): the vector at i with lanes from
// `left` on at -inf. (Their members are always inlined: a call per pair, its vectors through
// memory, made such a pass 1.6x slower than decoding first.)
#define LUTKIT_SRC_FN LUTKIT_OPS_FN __attribute__((always_inline))
struct src_f32 {
  const float* x;
  LUTKIT_SRC_FN void pair(std::size_t i, F& v0, F& v1) const {
    v0 = Ops::load(x + i);
    v1 = Ops::load(x + i + W);
  }
  LUTKIT_SRC_FN F last(std::size_t i, std::size_t left) const {
    return Ops::load_or(x + i, Ops::tail(left), ninf());
  }
};
// a partial vector of 16-bit elements: through a zero-padded copy, as decode_row
template <class Conv>
LUTKIT_OPS_FN inline F last16(const uint16_t* x, std::size_t left, Conv conv) {
  if (left >= std::size_t(W)) return conv(x);
  uint16_t in[W] = {};
  __builtin_memcpy(in, x, left * sizeof(uint16_t));
  return Ops::select(Ops::tail(left), ninf(), conv(in));
}
struct src_bf16 {
  const uint16_t* x;
  LUTKIT_SRC_FN static F conv(const uint16_t* p) { return F(Ops::load_u16(p) << 16); }
  template <class O = Ops>  // (a template: the branch of an Ops without bf16_pair is discarded)
  LUTKIT_SRC_FN void pair(std::size_t i, F& v0, F& v1) const {
    if constexpr (requires { O::bf16_pair(x, v0, v1); }) {
      O::bf16_pair(x + i, v0, v1);
    } else {
      v0 = conv(x + i);
      v1 = conv(x + i + W);
    }
  }
  LUTKIT_SRC_FN F last(std::size_t i, std::size_t left) const {
    return last16(x + i, left, conv);
  }
};
struct src_f16 {
  const uint16_t* x;
  LUTKIT_SRC_FN static F conv(const uint16_t* p) { return Ops::load_f16(p); }
  LUTKIT_SRC_FN void pair(std::size_t i, F& v0, F& v1) const {
    v0 = conv(x + i);
    v1 = conv(x + i + W);
  }
  LUTKIT_SRC_FN F last(std::size_t i, std::size_t left) const {
    return last16(x + i, left, conv);
  }
};
// the index of the first value == m among the source's n (m one of them; no_index if none)
template <class Src>
LUTKIT_OPS_FN inline uint32_t find_first_src(const Src& src, std::size_t n, float m) {
  const F vb = Ops::set1(m);
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    F v0, v1;
    src.pair(i, v0, v1);
    const unsigned e0 = Ops::bits(Ops::eq(v0, vb)), e1 = Ops::bits(Ops::eq(v1, vb));
    if (e0) return uint32_t(i) + uint32_t(__builtin_ctz(e0));
    if (e1) return uint32_t(i + W) + uint32_t(__builtin_ctz(e1));
  }
  for (; i < n; i += W) {
    const unsigned e = Ops::bits(Ops::eq(src.last(i, n - i), vb));
    if (e) return uint32_t(i) + uint32_t(__builtin_ctz(e));
  }
  return no_index;
}

// the index of the first x[j] == m (m a value of x)
LUTKIT_OPS_FN inline uint32_t find_first(const float* x, std::size_t n, float m) {
  return find_first_src(src_f32{x}, n, m);
}
#undef LUTKIT_SRC_FN

// the maximum of N accumulators, in adjacent pairs: max(max(m0, m1), max(m2, m3)) for 4
template <int N>
LUTKIT_OPS_FN inline F max_tree(const F* m) {
  if constexpr (N == 1)
    return m[0];
  else
    return Ops::max(max_tree<N / 2>(m), max_tree<N / 2>(m + N / 2));
}

// exp_bound_term(x, m, C) (sampling/microkernel.hpp) in W lanes, k = 127 2^23, lo = 2^23
LUTKIT_OPS_FN inline F exp_chord(F x, F vm, F vC, F vk, F lo) {
  return (F)Ops::round_int(Ops::max(Ops::fma(x - vm, vC, vk), lo));
}

// The block maxima only (one max per vector, bmax: one a block of ar_block values) and st <-
// max(st, x) without the second largest: the index is searched in the block holding a new running
// maximum, which is rare after the first blocks (the prefetch: a share per block). With Chords,
// the same loop also sums the chords exp_chord(x) from ref (max_sum_bound); else it returns 0.
template <bool Chords>
LUTKIT_OPS_FN inline float block_maxima(const float* x, std::size_t n, uint32_t base, max_state& st, float* bmax,
                                        const void* pf, std::size_t pf_bytes, float ref, float C) {
  prefetcher pfr(pf, pf_bytes, n, ar_block);
  constexpr int NA = 32 / W;
  const F vm = Ops::set1(ref), vC = Ops::set1(C), vk = Ops::set1(127.f * 0x1p23f), lo = Ops::set1(0x1p23f);
  F s0 = Ops::zero(), s1 = s0;
  float run = st.m1;
  bool found = false;
  std::size_t at_b = 0;
  for (std::size_t b0 = 0; b0 < n; b0 += ar_block) {
    const std::size_t len = b0 + ar_block < n ? ar_block : n - b0;
    pfr.run();
    F m[NA];
#pragma GCC unroll 4
    for (int u = 0; u < NA; ++u) m[u] = ninf();
    std::size_t i = 0;
    for (; i + 32 <= len; i += 32)
#pragma GCC unroll 4
      for (int u = 0; u < NA; ++u) {
        const F v = Ops::load(x + b0 + i + std::size_t(u * W));
        m[u] = Ops::max(v, m[u]);
        if constexpr (Chords) {
          if (u % 2)
            s1 = s1 + exp_chord(v, vm, vC, vk, lo);
          else
            s0 = s0 + exp_chord(v, vm, vC, vk, lo);
        }
      }
    for (; i < len; i += W) {
      const M t = Ops::tail(len - i);
      const F v = Ops::load_or(x + b0 + i, t, ninf());
      m[0] = Ops::max(v, m[0]);
      if constexpr (Chords) s0 = Ops::add_if(t, s0, exp_chord(v, vm, vC, vk, lo));
    }
    const float bm = Ops::hmax(max_tree<NA>(m));
    bmax[b0 / ar_block] = bm;
    if (bm > run) {
      run = bm;
      found = true;
      at_b = b0;
    }
  }
  if (found) {
    const std::size_t len = at_b + ar_block < n ? ar_block : n - at_b;
    st.m1 = run;
    st.i1 = base + uint32_t(at_b) + find_first(x + at_b, len, run);
  }
  return Chords ? Ops::hsum(s0 + s1) : 0.f;
}

LUTKIT_OPS_FN inline void max_argmax(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                     float* bmax, const void* pf, std::size_t pf_bytes) {
  if (bmax && !top2) {
    block_maxima<false>(x, n, base, st, bmax, pf, pf_bytes, 0.f, 0.f);
    return;
  }
  prefetcher p(pf, pf_bytes, n, 32);
  F vm = ninf(), v2 = ninf();
  U vi = Ops::set1u(no_index);
  const std::size_t blk = bmax ? ar_block : n;
  for (std::size_t b0 = 0; b0 < n; b0 += blk) {
    const std::size_t len = b0 + blk < n ? blk : n - b0;
    F bm = ninf();
    if (top2)
      max_block<true>(x + b0, len, base + uint32_t(b0), vm, vi, v2, bm, p);
    else
      max_block<false>(x + b0, len, base + uint32_t(b0), vm, vi, v2, bm, p);
    if (bmax) bmax[b0 / ar_block] = Ops::hmax(bm);
  }
  max_state c;
  reduce_argmax(vm, vi, c.m1, c.i1);
  if (c.i1 == no_index) c.m1 = -__builtin_inff();
  if (top2) c.m2 = reduce_second(vm, vi, v2, c.i1);
  merge_max(st, c);
}

// Raw: the unclamped exp (exp2_any; no entropy sum), NaN for a chunk with a NaN logit
template <bool Ent, bool Raw = false>
LUTKIT_OPS_FN inline float sum_exp_body(const float* x, std::size_t n, float m, float beta, float* ent,
                                        prefetcher& p_state) {
  static_assert(!(Raw && Ent), "the entropy sum needs the clamp");
  prefetcher p = p_state;  // (a local, as in max_sum_body)
  const log2_units lu(m, beta);
  F s0 = Ops::zero(), s1 = s0, t0 = s0, t1 = s0;
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    p.run();
    if constexpr (Raw) {
      s0 = s0 + exp2_any(lu.raw(Ops::load(x + i)));
      s1 = s1 + exp2_any(lu.raw(Ops::load(x + i + W)));
      continue;
    }
    const F y0 = lu(Ops::load(x + i));
    const F y1 = lu(Ops::load(x + i + W));
    const F e0 = exp2_poly(y0), e1 = exp2_poly(y1);
    s0 = s0 + e0;
    s1 = s1 + e1;
    if constexpr (Ent) {
      t0 = Ops::fma(e0, y0, t0);
      t1 = Ops::fma(e1, y1, t1);
    }
  }
  for (; i < n; i += W) {
    const F y = lu(Ops::load_or(x + i, Ops::tail(n - i), ninf()));
    const F e = exp2_poly(y);
    s0 = s0 + e;
    if constexpr (Ent) t0 = Ops::fma(e, y, t0);
  }
  p_state = p;
  const float s = lu.fix(Ops::hsum(s0 + s1));
  if constexpr (Ent) *ent += kLn2 * lu.fix_ent(Ops::hsum(t0 + t1), s);
  return s;
}

LUTKIT_OPS_FN inline float sum_exp(const float* x, std::size_t n, float m, float beta, float* ent, const void* pf,
                                   std::size_t pf_bytes) {
  prefetcher p(pf, pf_bytes, n, 2 * W);
  if (ent) return sum_exp_body<true>(x, n, m, beta, ent, p);
  if constexpr (exp2_unclamped()) {
    const float s = sum_exp_body<false, true>(x, n, m, beta, ent, p);
    if (s == s) return s;  // (else a NaN logit: again with the clamp)
  }
  return sum_exp_body<false>(x, n, m, beta, ent, p);
}

// their sum: a subtraction, an fma, a max, a conversion, an add
LUTKIT_OPS_FN inline float sum_exp_bound(const float* x, std::size_t n, float m, float C, const void* pf,
                                         std::size_t pf_bytes) {
  prefetcher p(pf, pf_bytes, n, 2 * W);
  const F vm = Ops::set1(m), vC = Ops::set1(C), vk = Ops::set1(127.f * 0x1p23f), lo = Ops::set1(0x1p23f);
  F s0 = Ops::zero(), s1 = s0;
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    p.run();
    s0 = s0 + exp_chord(Ops::load(x + i), vm, vC, vk, lo);
    s1 = s1 + exp_chord(Ops::load(x + i + W), vm, vC, vk, lo);
  }
  for (; i < n; i += W) {
    const M t = Ops::tail(n - i);
    s0 = Ops::add_if(t, s0, exp_chord(Ops::loadz(x + i, t), vm, vC, vk, lo));
  }
  return Ops::hsum(s0 + s1);
}

// max_argmax's block maxima and sum_exp_bound's chords in one pass: the chunk's values come from
// DRAM once (the two loops after one another left the chords' arithmetic outside the stream's
// time: docs/sampling.md, "Design decisions"); the reference is the caller's, checked afterwards
LUTKIT_OPS_FN inline float max_sum_bound(const float* x, std::size_t n, uint32_t base, max_state& st, float* bmax,
                                         float& ref, float C, const void* pf, std::size_t pf_bytes) {
  max_state c;
  if (!(ref > -__builtin_inff() && ref < __builtin_inff())) {  // no reference: the maximum first
    max_argmax(x, n, base, false, c, bmax, pf, pf_bytes);
    ref = c.m1;
    merge_max(st, c);
    return sum_exp_bound(x, n, ref, C, nullptr, 0);
  }
  const float s = block_maxima<true>(x, n, base, c, bmax, pf, pf_bytes, ref, C);
  merge_max(st, c);
  if (exp_bound_ref_ok(c.m1, ref, C)) return s;
  ref = c.m1;  // (a maximum far above the reference: the chords from it, x now in L1)
  return sum_exp_bound(x, n, ref, C, nullptr, 0);
}

// Gumbel-max. The lanes start at the best (y, index) of the previous chunks; g <= 16.64 for every
// u <= 1 - 2^-24 (and the computed g stays below 17), so a vector whose every lane has
// beta x + 17 <= that lane's running maximum cannot change anything: its hash and logs are
// skipped (exact; most of the vocabulary at low temperatures).
LUTKIT_OPS_FN inline void gumbel_argmax(const float* x, std::size_t n, uint32_t base, rng_key key, float beta,
                                        float& best_y, uint32_t& best_i) {
  F vm = Ops::set1(best_y);
  U vi = Ops::set1u(best_i);
  U idx = lane_index(base);
  const U klo = Ops::set1u(key.lo), khi = Ops::set1u(key.hi);
  const F vb = Ops::set1(beta), gmax = Ops::set1(17.f), one = Ops::set1(1.f);
  const F vbs = Ops::set1(beta * 0x1p-20f), vC = Ops::set1(kLog2e * 0x1p23f), vk = Ops::set1(127.f * 0x1p23f),
          lo = Ops::set1(0x1p23f);
  // A lane can beat the best y so far, gb, only if g = -log(w), w = -log(u), reaches t = gb - beta v,
  // that is w <= e^-t; as w >= 1 - u, only if 1 - u <= e^-t. A vector none of whose lanes passes
  // that test (with e^-t bounded from above by exp_chord, t lowered by a slack d = 1e-3 + 2^-20
  // (|gb| + |beta v|) that covers the float errors of g and y) cannot change the result, and its two
  // logs are skipped: after a row's first vectors nearly every one (the Gumbel pass 2.6x in L1,
  // docs/sampling.md "Design decisions"). The vectors that pass compute y exactly as before, so
  // the results are the same bits.
  float gb = best_y;
  F vgb = Ops::set1(gb), vd = Ops::set1(1e-3f + 0x1p-20f * __builtin_fabsf(gb));
  for (std::size_t i = 0; i < n; i += W) {
    const F v = i + W <= n ? Ops::load(x + i) : Ops::load_or(x + i, Ops::tail(n - i), ninf());
    if (Ops::bits(Ops::gt(Ops::fma(v, vb, gmax), vgb)) == 0) {  // (g < 16.7: no lane can reach gb)
      idx += W;
      continue;
    }
    const U h = hash32(hash32((idx * 0x9E3779B9u) ^ klo) + khi);
    const F u = (Ops::to_float(h >> 9) + Ops::set1(0.5f)) * Ops::set1(0x1p-23f);
    if (gb > -__builtin_inff()) {
      const F d = Ops::fma(F(U(v) & 0x7FFFFFFFu), vbs, vd);
      const F z = Ops::min(Ops::fma(v, vb, d) - vgb, one);  // -(t - d), at most 1 (then e^-t > 1 - u)
      const F bound = exp_chord(z, Ops::zero(), vC, vk, lo);  // >= e^z (NaN z: 2^-126)
      if (Ops::bits(Ops::ge(bound, one - u)) == 0) {
        idx += W;
        continue;
      }
    }
    const F w = Ops::zero() - log_pos(u);  // -log(u) in (0, 16.7]
    const F g = Ops::zero() - log_pos(w);
    const F y = Ops::fma(v, vb, g);
    const M gt = Ops::gt(y, vm);
    vm = Ops::max(y, vm);
    vi = Ops::select(gt, vi, idx);
    idx += W;
    const float top = Ops::hmax(vm);
    if (top > gb) {
      gb = top;
      vgb = Ops::set1(gb);
      vd = Ops::set1(1e-3f + 0x1p-20f * __builtin_fabsf(gb));
    }
  }
  float m;
  uint32_t bi;
  reduce_argmax(vm, vi, m, bi);
  if (bi != no_index && m > best_y) {
    best_y = m;
    best_i = bi;
  }
}

// (the thresholds above t[0] are compared from memory: with 8 sums, 8 counts, 8 thresholds and
// the exp's constants in registers, AVX2's 16 spilled the sums at every vector, 1.6x slower)
LUTKIT_OPS_FN inline void mass_ge(const float* x, std::size_t n, float m, float beta, const float* t, double* mass,
                                  float* top) {
  constexpr int J = mass_thresholds;
  alignas(64) float tb[J][W];
  F ms[J];
  for (int j = 0; j < J; ++j) {
    Ops::store(tb[j], Ops::set1(t[j]));
    ms[j] = Ops::zero();
  }
  const log2_units lu(m, beta);
  const F t0 = Ops::set1(t[0]);
  F vtop = ninf();
  auto one = [&](F v) LUTKIT_OPS_FN {  // (v: -inf in lanes past the end)
    const M g0 = Ops::ge(v, t0);
    if (!Ops::bits(g0)) return;
    vtop = Ops::max(Ops::select(g0, ninf(), v), vtop);
    const F e = exp2_poly(lu(v));
    ms[0] = Ops::add_if(g0, ms[0], e);
#pragma GCC unroll 8
    for (int j = 1; j < J; ++j) ms[j] = Ops::add_if(Ops::ge(v, Ops::load(tb[j])), ms[j], e);
  };
  std::size_t i = 0;
  for (; i + W <= n; i += W) one(Ops::load(x + i));
  if (i < n) one(Ops::load_or(x + i, Ops::tail(n - i), ninf()));
  for (int j = 0; j < J; ++j) mass[j] += double(lu.fix(Ops::hsum(ms[j])));
  const float tv = Ops::hmax(vtop);
  if (tv > *top) *top = tv;
}

LUTKIT_OPS_FN inline void count_ge(const float* x, std::size_t n, const float* t, uint32_t* count, float* lo,
                                   float* hi) {
  if (!t) {  // the range: the largest value, and the largest of -x over x above -inf
    F top = ninf(), neg = ninf();
    auto range = [&](F v) LUTKIT_OPS_FN {  // (v: -inf in lanes past the end)
      top = Ops::max(v, top);  // (NaN in v: top kept)
      neg = Ops::max(Ops::select(Ops::gt(v, ninf()), ninf(), Ops::zero() - v), neg);
    };
    std::size_t i = 0;
    for (; i + W <= n; i += W) range(Ops::load(x + i));
    if (i < n) range(Ops::load_or(x + i, Ops::tail(n - i), ninf()));
    const float a = -Ops::hmax(neg), b = Ops::hmax(top);
    if (a < *lo) *lo = a;
    if (b > *hi) *hi = b;
    return;
  }
  constexpr int J = mass_thresholds;
  alignas(64) float tb[J][W];
  F c[J];
  for (int j = 0; j < J; ++j) {
    Ops::store(tb[j], Ops::set1(t[j]));
    c[j] = Ops::zero();
  }
  const F one = Ops::set1(1.f);
  auto one_vector = [&](F v) LUTKIT_OPS_FN {  // (v: -inf in lanes past the end, below every t[j])
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) c[j] = Ops::add_if(Ops::ge(v, Ops::load(tb[j])), c[j], one);
  };
  std::size_t i = 0;
  for (; i + W <= n; i += W) one_vector(Ops::load(x + i));
  if (i < n) one_vector(Ops::load_or(x + i, Ops::tail(n - i), ninf()));
  for (int j = 0; j < J; ++j) count[j] += uint32_t(Ops::hsum(c[j]));  // (each lane's count < 2^24: exact)
}

// the lanes >= t of the vector at x + i (W values, or the n - i left) appended at idx / val + c
template <class O>
LUTKIT_OPS_FN inline std::size_t collect_ge_vector(const float* x, std::size_t i, std::size_t n, uint32_t base, F vt,
                                                   uint32_t* idx, float* val, std::size_t c) {
  const bool full = i + W <= n;
  const M k = full ? M{} : Ops::tail(n - i);
  const F v = full ? Ops::load(x + i) : Ops::loadz(x + i, k);
  const M ge = full ? Ops::ge(v, vt) : Ops::both(k, Ops::ge(v, vt));
  if constexpr (requires { O::compress(ge, v, U{}, val, idx); }) {
    // (a whole vector: a compress may store W lanes from c <= i, inside the caller's n)
    if (full) return O::compress(ge, v, lane_index(base + uint32_t(i)), val + c, idx + c);
  }
  // (the tail, or an Ops without compress) stored one by one
  std::size_t o = 0;
  for (unsigned b = Ops::bits(ge); b; b &= b - 1, ++o) {
    const unsigned l = unsigned(__builtin_ctz(b));
    idx[c + o] = base + uint32_t(i) + l;
    val[c + o] = x[i + l];
  }
  return o;
}

// The values >= t, in order, with their indices. 16 vectors at a time: first their tests, into a
// mask of the vectors holding one (no branch: a test per vector mispredicted on every block of a
// top's collect, which holds one or two hits in 16 vectors, and the loads after it waited), then
// those vectors alone (most vectors: the compress and its two stores cost ~8x the test).
template <class O = Ops>  // (a template: the branch of an Ops without compress is discarded)
LUTKIT_OPS_FN inline std::size_t collect_ge(const float* x, std::size_t n, uint32_t base, float t, uint32_t* idx,
                                            float* val) {
  constexpr std::size_t G = 16;
  const F vt = Ops::set1(t);
  std::size_t c = 0, i = 0;
  for (; i + G * W <= n; i += G * W) {
    unsigned hv = 0;
#pragma GCC unroll 16
    for (std::size_t g = 0; g < G; ++g) hv |= unsigned(Ops::bits(Ops::ge(Ops::load(x + i + g * W), vt)) != 0) << g;
    for (; hv; hv &= hv - 1)
      c += collect_ge_vector<O>(x, i + std::size_t(__builtin_ctz(hv)) * W, n, base, vt, idx, val, c);
  }
  for (; i < n; i += W) c += collect_ge_vector<O>(x, i, n, base, vt, idx, val, c);
  return c;
}

template <class O, bool Ix>
LUTKIT_OPS_FN inline std::size_t collect_range_body(const float* v, const uint32_t* ix, std::size_t n, float lo,
                                                    float hi, float* ov, uint32_t* oi) {
  const F vlo = Ops::set1(lo), vhi = Ops::set1(hi);
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; i += W) {
    const bool full = i + W <= n;
    const M k = full ? M{} : Ops::tail(n - i);
    const F x = full ? Ops::load(v + i) : Ops::loadz(v + i, k);
    const M r = Ops::both(Ops::ge(x, vlo), Ops::gt(vhi, x));
    const M in = full ? r : Ops::both(k, r);
    // (in place: the lanes are in registers before the stores, which end at or before i + W: a
    // whole vector's compress may store W lanes from c <= i)
    if constexpr (Ix && requires { O::compress(in, x, U{}, ov, oi); }) {
      if (full) {
        c += O::compress(in, x, U(Ops::load(reinterpret_cast<const float*>(ix + i))), ov + c, oi + c);  // (token bits)
        continue;
      }
    }
    if constexpr (!Ix && requires { O::compress_values(in, x, ov); }) {
      if (full) {
        c += O::compress_values(in, x, ov + c);
        continue;
      }
    }
    for (unsigned b = Ops::bits(in); b; b &= b - 1) {
      const unsigned l = unsigned(__builtin_ctz(b));
      const float z = v[i + l];
      if constexpr (Ix) oi[c] = ix[i + l];
      ov[c++] = z;
    }
  }
  return c;
}
template <class O = Ops>
LUTKIT_OPS_FN inline std::size_t collect_range(const float* v, const uint32_t* ix, std::size_t n, float lo, float hi,
                                               float* ov, uint32_t* oi) {
  return ix ? collect_range_body<O, true>(v, ix, n, lo, hi, ov, oi) : collect_range_body<O, false>(v, ix, n, lo, hi, ov, oi);
}

// the values >= t (NaN never) to val, in order, and their bitmap: bit i of byte i / 8 of bits for x[i]
// (bits zero on entry: a whole vector's W / 8 bytes are stored, the tail's bits or-ed in); returns the count
template <class O = Ops>
LUTKIT_OPS_FN inline std::size_t select_ge(const float* x, std::size_t n, float t, float* val, uint8_t* bits) {
  static_assert(W % 8 == 0, "a vector's mask is whole bytes");
  const F vt = Ops::set1(t);
  std::size_t c = 0, i = 0;
  for (; i + W <= n; i += W) {
    const F v = Ops::load(x + i);
    const M ge = Ops::ge(v, vt);
    const unsigned b = Ops::bits(ge);
    if constexpr (W == 16) {
      const uint16_t b16 = uint16_t(b);
      __builtin_memcpy(bits + i / 8, &b16, 2);
    } else {
      for (int j = 0; j < W / 8; ++j) bits[i / 8 + std::size_t(j)] = uint8_t(b >> (8 * j));
    }
    if constexpr (requires { O::compress_values(ge, v, val); }) {
      c += O::compress_values(ge, v, val + c);
    } else {
      for (unsigned m = b; m; m &= m - 1) val[c++] = x[i + unsigned(__builtin_ctz(m))];
    }
  }
  for (; i < n; ++i)
    if (x[i] >= t) {
      bits[i / 8] = uint8_t(bits[i / 8] | (1u << (i % 8)));
      val[c++] = x[i];
    }
  return c;
}

// the sum of exp(beta (x - m)) over the x >= t (NaN never; -inf values add 0)
LUTKIT_OPS_FN inline float sum_exp_ge(const float* x, std::size_t n, float m, float beta, float t) {
  const log2_units lu(m, beta);
  const F vt = Ops::set1(t);
  F s0 = Ops::zero(), s1 = s0;
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const F x0 = Ops::load(x + i), x1 = Ops::load(x + i + W);
    s0 = Ops::add_if(Ops::ge(x0, vt), s0, exp2_poly(lu(x0)));
    s1 = Ops::add_if(Ops::ge(x1, vt), s1, exp2_poly(lu(x1)));
  }
  for (; i < n; i += W) {
    const F v = Ops::load_or(x + i, Ops::tail(n - i), ninf());
    s0 = Ops::add_if(Ops::ge(v, vt), s0, exp2_poly(lu(v)));
  }
  return lu.fix(Ops::hsum(s0 + s1));
}

// n elements of a row converted by `conv` (W at a time; the tail through a zero-padded copy)
template <class T, class Conv>
LUTKIT_OPS_FN inline void decode_row(const T* s, std::size_t n, float* out, Conv conv) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) Ops::store(out + i, conv(s + i, i));
  if (i < n) {
    T in[W] = {};
    float o[W];
    __builtin_memcpy(in, s + i, (n - i) * sizeof(T));
    Ops::store(o, conv(in, i));
    __builtin_memcpy(out + i, o, (n - i) * sizeof(float));
  }
}
LUTKIT_OPS_FN inline void decode_bf16(const uint16_t* s, std::size_t n, float* out) {
  decode_row(s, n, out, [&](const uint16_t* p, std::size_t) LUTKIT_OPS_FN { return src_bf16::conv(p); });
}
LUTKIT_OPS_FN inline void decode_f16(const uint16_t* s, std::size_t n, float* out) {
  decode_row(s, n, out, [&](const uint16_t* p, std::size_t) LUTKIT_OPS_FN { return src_f16::conv(p); });
}
// E4M3 -> float by bit arithmetic: the code's sign, exponent and mantissa placed in a float's
// (bits 31, 23-26, 20-22) make a float of the code's value times 2^-120, subnormal codes included
// (they become float subnormals); times 2^120 (exact) gives the value; S.1111.111 is NaN. Then the
// exact product with the block's 2^(e - 127).
LUTKIT_OPS_FN inline F e4m3_lanes(const uint8_t* p) {
  const U c = Ops::load_u8(p);
  const U mag = c & 0x7Fu;
  const F v = F((mag << 20) | ((c & 0x80u) << 24)) * Ops::set1(0x1p120f);
  return Ops::select(Ops::eq(mag, Ops::set1u(0x7F)), v, Ops::set1(__builtin_nanf("")));
}
// The same float of value times 2^-120 in two operations for codes known not to be NaN: the code
// sign-extended to 32 bits and shifted left by 20 has its exponent and mantissa in bits 20-26 and
// copies of its sign in bits 27-31; clearing bits 27-30 leaves the sign in bit 31.
LUTKIT_OPS_FN inline F e4m3_raw(const uint8_t* p) { return F((Ops::load_s8(p) << 20) & Ops::set1u(0x87F00000u)); }
// whether one of the 32 codes at p is NaN (low 7 bits all set), 8 bytes at a time: a byte's low
// 7 bits plus 1 reach its bit 7 only from 0x7F, and never carry into the next byte
inline bool mx_block_has_nan(const uint8_t* p) {
  uint64_t hit = 0;
  for (int w = 0; w < 4; ++w) {
    uint64_t x;
    __builtin_memcpy(&x, p + 8 * w, 8);
    hit |= (x & 0x7F7F7F7F7F7F7F7Full) + 0x0101010101010101ull;
  }
  return (hit & 0x8080808080808080ull) != 0;
}
// nb <= mx_piece whole blocks whose codes hold no NaN and whose exponents are all <= 134, each
// as e4m3_raw times its exact 2^(e - 7) (below); false, and nothing written, otherwise. The NaN
// test runs over the piece's codes 4W bytes a vector (the byte trick of mx_block_has_nan in 32-bit
// lanes), the powers of two are made before the loop: the per-block scalar tests and scale
// made this decoder twice as slow (1.9 against 0.9 TSC cycles per 16 codes, AMD EPYC Zen 5).
constexpr std::size_t mx_piece = 64;
LUTKIT_OPS_FN inline bool decode_mx_piece(const uint8_t* codes, const uint8_t* scales, std::size_t nb, float* out) {
  const std::size_t bytes = nb * mx_block;
  U hit = Ops::set1u(0);
  std::size_t i = 0;
  for (; i + 4 * W <= bytes; i += 4 * W) {
    U w;
    __builtin_memcpy(&w, codes + i, sizeof w);
    hit |= (w & 0x7F7F7F7Fu) + 0x01010101u;
  }
  bool nan = Ops::bits(Ops::eq(hit & 0x80808080u, Ops::set1u(0))) != Ops::bits(Ops::tail(W));
  for (; i < bytes; i += mx_block) nan = nan || mx_block_has_nan(codes + i);
  if (nan) return false;
  alignas(64) uint32_t k[mx_piece];  // 2^(e - 7), normal floats
  unsigned big = 0;
  std::size_t b = 0;
  for (; b + W <= nb; b += W) {
    const U e = Ops::load_u8(scales + b);
    big |= Ops::bits(Ops::less(Ops::set1u(134), e));
    const U kb = (e + 120u) << 23;
    __builtin_memcpy(k + b, &kb, sizeof kb);
  }
  for (; b < nb; ++b) {
    big |= unsigned(scales[b] > 134);
    k[b] = (uint32_t(scales[b]) + 120u) << 23;
  }
  if (big) return false;
  for (b = 0; b < nb; ++b) {
    float kb;
    __builtin_memcpy(&kb, k + b, 4);
    const F vk = Ops::set1(kb);
    const uint8_t* c = codes + b * mx_block;
    float* o = out + b * mx_block;
#pragma GCC unroll 4
    for (std::size_t j = 0; j < mx_block; j += W) Ops::store(o + j, e4m3_raw(c + j) * vk);
  }
  return true;
}
// pieces of whole blocks by decode_mx_piece; else (a NaN code or a large exponent in the piece),
// and for the row's last blocks, a block of 32 at a time (the tail through a padded copy): a
// block without NaN codes in e4m3_raw times one exact power of two, 2^(e - 7) = 2^120 2^(e - 127)
// (for e <= 134, where it is a float; else the two factors one after the other, as its rounding
// is then the product's); a block with one through e4m3_lanes
LUTKIT_OPS_FN inline void decode_mxfp8(const uint8_t* codes, const uint8_t* scales, std::size_t n, float* out) {
  static_assert(mx_block % W == 0, "a vector lies in one MX block");
  std::size_t i = 0, piece_end = 0;
  for (; i + mx_block <= n; i += mx_block) {
    if (i == piece_end) {  // the next piece: in one go where it can
      const std::size_t nb = std::min(mx_piece, (n - i) / mx_block);
      piece_end = i + nb * mx_block;
      if (decode_mx_piece(codes + i, scales + i / mx_block, nb, out + i)) {
        i = piece_end - mx_block;
        continue;
      }
    }
    const uint8_t e = scales[i / mx_block];
    if (mx_block_has_nan(codes + i)) {
      const F sc = Ops::set1(e8m0_to_f32(e));
#pragma GCC unroll 4
      for (std::size_t j = 0; j < mx_block; j += W) Ops::store(out + i + j, e4m3_lanes(codes + i + j) * sc);
    } else if (e <= 134) {
      uint32_t bits = (uint32_t(e) + 120u) << 23;  // 2^(e - 7), a normal float
      float k;
      __builtin_memcpy(&k, &bits, 4);
      const F vk = Ops::set1(k);
#pragma GCC unroll 4
      for (std::size_t j = 0; j < mx_block; j += W) Ops::store(out + i + j, e4m3_raw(codes + i + j) * vk);
    } else {
      const F sc = Ops::set1(e8m0_to_f32(e));  // (NaN for 0xFF)
#pragma GCC unroll 4
      for (std::size_t j = 0; j < mx_block; j += W)
        Ops::store(out + i + j, e4m3_raw(codes + i + j) * Ops::set1(0x1p120f) * sc);
    }
  }
  if (i < n) {
    uint8_t in[mx_block] = {};
    float o[mx_block];
    __builtin_memcpy(in, codes + i, n - i);
    const F sc = Ops::set1(e8m0_to_f32(scales[i / mx_block]));
    for (std::size_t j = 0; j < mx_block; j += W) Ops::store(o + j, e4m3_lanes(in + j) * sc);
    __builtin_memcpy(out + i, o, (n - i) * sizeof(float));
  }
}

// Fused pass over a chunk: the running maximum (as max_argmax) and the sum of exp(beta (x - ref))
// for a reference ref (the caller's running maximum: values above it give terms > 1, which the
// caller rescales; it recomputes the chunk if the maximum exceeds ref by more than 64 / beta).
// (Raw: as sum_exp_body's)
template <bool Top2, bool Ent, bool Raw, class Src>
LUTKIT_OPS_FN inline float max_sum_body(const Src& src, std::size_t n, uint32_t base, max_state& st, float ref,
                                        float beta, float* ent, prefetcher& pf_state) {
  static_assert(!(Raw && Ent), "the entropy sum needs the clamp");
  prefetcher pf = pf_state;  // (a local: in the caller's object its cursor went through memory
                             // every iteration, docs/sampling.md "Design decisions")
  F vm = ninf(), v2 = ninf();
  U vi = Ops::set1u(no_index);
  U idx = lane_index(base);
  const log2_units lu(ref, beta);
  F s0 = Ops::zero(), s1 = s0, t0 = s0, t1 = s0;
  // Without Top2 only the lanes' maxima are tracked; the index is found afterwards, in the rare
  // chunk whose maximum beats the running one (a scan of the chunk in L1).
  auto one = [&](F v, F& s, F& t) LUTKIT_OPS_FN {
    if constexpr (Top2) {
      max_lanes<true>(v, idx, vm, vi, v2);
      idx += W;
    } else {
      vm = Ops::max(v, vm);
    }
    if constexpr (Raw) {
      s = s + exp2_any(lu.raw(v));
    } else {
      const F y = lu(v);
      const F e = exp2_poly(y);
      s = s + e;
      if constexpr (Ent) t = Ops::fma(e, y, t);
    }
  };
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    pf.run();
    F v0, v1;
    src.pair(i, v0, v1);
    one(v0, s0, t0);
    one(v1, s1, t1);
  }
  for (; i < n; i += W) one(src.last(i, n - i), s0, t0);
  pf_state = pf;
  max_state c;
  if constexpr (!Top2) {
    c.m1 = Ops::hmax(vm);
    // a new maximum (NaN never; ties keep the earlier index)
    if (c.m1 > st.m1) c.i1 = base + find_first_src(src, n, c.m1);
    if (c.i1 == no_index) c.m1 = -__builtin_inff();
  } else {
    reduce_argmax(vm, vi, c.m1, c.i1);
    if (c.i1 == no_index) c.m1 = -__builtin_inff();
    c.m2 = reduce_second(vm, vi, v2, c.i1);
  }
  merge_max(st, c);
  const float s = lu.fix(Ops::hsum(s0 + s1));
  if constexpr (Ent) *ent += kLn2 * lu.fix_ent(Ops::hsum(t0 + t1), s);
  return s;
}

template <class Src>
LUTKIT_OPS_FN inline float max_sum_src(const Src& src, std::size_t n, uint32_t base, bool top2, max_state& st,
                                       float ref, float beta, float* ent, const void* pf, std::size_t pf_bytes) {
  prefetcher p(pf, pf_bytes, n, 2 * W);
  if constexpr (exp2_unclamped()) {
    if (!ent) {
      const max_state before = st;
      const float s = top2 ? max_sum_body<true, false, true>(src, n, base, st, ref, beta, ent, p)
                           : max_sum_body<false, false, true>(src, n, base, st, ref, beta, ent, p);
      if (s == s) return s;
      st = before;  // a NaN logit: again with the clamp
    }
  }
  if (top2) return ent ? max_sum_body<true, true, false>(src, n, base, st, ref, beta, ent, p)
                       : max_sum_body<true, false, false>(src, n, base, st, ref, beta, ent, p);
  return ent ? max_sum_body<false, true, false>(src, n, base, st, ref, beta, ent, p)
             : max_sum_body<false, false, false>(src, n, base, st, ref, beta, ent, p);
}
LUTKIT_OPS_FN inline float max_sum_exp(const float* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                       float ref, float beta, float* ent, const void* pf, std::size_t pf_bytes) {
  return max_sum_src(src_f32{x}, n, base, top2, st, ref, beta, ent, pf, pf_bytes);
}
LUTKIT_OPS_FN inline float max_sum_exp_bf16(const uint16_t* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                            float ref, float beta, float* ent, const void* pf, std::size_t pf_bytes) {
  return max_sum_src(src_bf16{x}, n, base, top2, st, ref, beta, ent, pf, pf_bytes);
}
LUTKIT_OPS_FN inline float max_sum_exp_f16(const uint16_t* x, std::size_t n, uint32_t base, bool top2, max_state& st,
                                           float ref, float beta, float* ent, const void* pf, std::size_t pf_bytes) {
  return max_sum_src(src_f16{x}, n, base, top2, st, ref, beta, ent, pf, pf_bytes);
}
inline sampling_kernel_set kernel_set(const char* name) {
  return {name,         max_argmax,  sum_exp,     max_sum_exp, gumbel_argmax, mass_ge,     count_ge,    collect_ge<>,
          collect_range<>, select_ge<>, sum_exp_ge, sum_exp_bound, max_sum_bound, decode_bf16, decode_f16,
          decode_mxfp8, max_sum_exp_bf16, max_sum_exp_f16};
}
