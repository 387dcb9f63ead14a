// lutkit — the attention family's fp32 online-softmax step (att_kernel_set::step), written ONCE
// against a vector of W float lanes and compiled per instruction set: K/V rows converted exactly
// to fp32, FMA dots (4 query rows x 4 keys per score tile), the masks, softcap and softmax
// update of attention/portable_kernels.hpp with the exp policies of attention/exp.hpp evaluated
// lane-wise (the same bits per element; dot products and sums ordered by lanes), then
// 4 rows x (VT W) channels value tiles. Head dims 64, 128, 256.
// No include guard: a target includes it once per instruction set, inside that set's namespace,
// after attention/exp.hpp and attention/microkernel.hpp, with
//   using Ops = ...;        the vector-width primitives listed in sampling/body.inl, and
//     U f16_bits(F x)                the fp16 codes of x (nearest even), zero-extended
//     F gather(const float* t, U i)  t[i] in each lane
//     KP                    keys per pass of the score tile (its accumulators: 4 KP vectors)
//     VT                    vectors per row of the value tile
//     QV, PV                key vectors of the fp32 prefill's score tile, channel vectors of its
//                           value tile (6 rows each)
//     Fold fold_key(const F x[4])    four rows' dot vectors of one key, summed as far as one key
//                                    allows (lane order the Ops' own)
//     void store_scores(Fold u[4], float* s, size_t ld, size_t rows)
//                                    the 4 keys' folds -> rows 0 .. rows-1's 4 scores at s + i ld
//     F round_bf16(F p, uint16_t* out)   (only for row_softmax<true>) p rounded to bf16, stored
//   #define LUTKIT_OPS_FN   the function attributes of that set
// (targets/host/attention/attention_avx2.hpp and attention_avx512.hpp).

using F = Ops::F;
using U = Ops::U;
using M = Ops::M;
constexpr int W = Ops::W;

// ------------------------------------------------------------------ exp, softcap (lane-wise)
// p 2^n, n <= 0 here (the arguments are <= 0)
template <class O = Ops>
LUTKIT_OPS_FN inline F scale2_nonpos(F p, F n) {
  if constexpr (requires { O::scale2_nonpos(p, n); })
    return O::scale2_nonpos(p, n);
  else
    return O::scale2(p, n);
}
LUTKIT_OPS_FN inline F exp_poly(F x) {
  x = Ops::max(x, Ops::set1(exp_clamp));
  const F n = Ops::round(x * Ops::set1(exp_log2e));
  F r = Ops::fma(n, Ops::set1(-exp_ln2_hi), x);
  r = Ops::fma(n, Ops::set1(-exp_ln2_lo), r);
  F p = Ops::set1(exp_c7);
  p = Ops::fma(p, r, Ops::set1(exp_c6));
  p = Ops::fma(p, r, Ops::set1(exp_c5));
  p = Ops::fma(p, r, Ops::set1(exp_c4));
  p = Ops::fma(p, r, Ops::set1(exp_c3));
  p = Ops::fma(p, r, Ops::set1(exp_c2));
  p = Ops::fma(p, r, Ops::set1(1.f));
  p = Ops::fma(p, r, Ops::set1(1.f));
  return scale2_nonpos(p, n);  // as std::ldexp: one rounding, into the subnormals too
}
LUTKIT_OPS_FN inline F exp_lanes(exp_kind e, const float* table, F x) {
  return e == exp_kind::table ? Ops::gather(table, Ops::f16_bits(x) & 0x7FFFu) : exp_poly(x);
}
LUTKIT_OPS_FN inline F softcap_lanes(F s, float cap) {
  const F c = Ops::set1(cap);
  const F y = s / c;
  const F ay = F(U(y) & 0x7FFFFFFFu);
  const F e = exp_poly(Ops::set1(-2.f) * ay);
  const F one = Ops::set1(1.f);
  const F t = (one - e) / (one + e);
  return F(U(t) | (U(y) & 0x80000000u)) * c;
}

// W elements of a K/V row as fp32 (exact)
template <kv_type T>
LUTKIT_OPS_FN inline F load_kv(const void* base, std::ptrdiff_t i) {
  if constexpr (T == kv_type::f16) {
    return Ops::load_f16(static_cast<const uint16_t*>(base) + i);
  } else if constexpr (T == kv_type::bf16) {
    return F(Ops::load_u16(static_cast<const uint16_t*>(base) + i) << 16);
  } else {
    return Ops::load(static_cast<const float*>(base) + i);
  }
}

// Masks, softcap and the online-softmax update of one row's logits s[0, n) (keys k0 .. k0+n-1, n a
// multiple of W): keys outside [b, e) get -inf. Writes the weights p back to s (ToBf16: rounded
// to bf16 into pb instead), returns alpha (1 and p = 0 if no key is visible).
// Non-finite inputs (docs/attention.md, "Non-finite values"): a visible key whose logit q.k is
// not finite (a NaN or infinite q or K element, or an overflow), or becomes +inf or NaN with the
// additive mask, makes the row NaN: m = l = NaN, and alpha = NaN scales its output to NaN. A row
// already NaN adds nothing more.
template <bool ToBf16, class O = Ops>  // (O: round_bf16 is looked up only where ToBf16)
LUTKIT_OPS_FN inline float row_softmax(float* s, std::size_t n, int64_t b, int64_t e, int64_t k0, const float* mrow,
                                       std::size_t mask_base, float softcap, exp_kind ek, const float* table, float& m,
                                       float& l, uint16_t* pb) {
  auto no_weights = [&] {
    if constexpr (ToBf16)
      std::memset(pb, 0, n * sizeof(uint16_t));
    else
      std::memset(s, 0, n * sizeof(float));
  };
  if (m != m) {
    no_weights();
    return 1.f;
  }
  const F ninf = Ops::set1(-std::numeric_limits<float>::infinity());
  const F pinf = Ops::set1(std::numeric_limits<float>::infinity());
  const bool full = b <= k0 && e >= k0 + int64_t(n);
  const M all = Ops::tail(W);
  const U vb = Ops::set1u(uint32_t(b - 1)), ve = Ops::set1u(uint32_t(e));
  F vmax = ninf;
  F zr = Ops::zero();  // the visible lanes' q.k - q.k: 0 unless one of them is not finite
  unsigned bad = 0;    // a visible lane the additive mask made +inf or NaN
  for (std::size_t j = 0; j < n; j += W) {
    F x = Ops::load(s + j);
    const U kidx = Ops::iota() + Ops::set1u(uint32_t(k0 + int64_t(j)));
    const M vis = full ? all : Ops::both(Ops::less(vb, kidx), Ops::less(kidx, ve));  // b <= key < e
    F d = x - x;  // 0 unless q.k is not finite
    if (softcap > 0.f) x = softcap_lanes(x, softcap);
    if (mrow) {
      // a key the caller masks with -inf is not reached, whatever its logit
      const F mv = Ops::loadz(mrow + mask_base + k0 + int64_t(j), vis);
      const M cut = Ops::eq(mv, ninf);
      d = Ops::select(cut, d, Ops::zero());
      x = Ops::select(cut, x + mv, ninf);
      bad |= Ops::bits(vis) & ~Ops::bits(Ops::gt(pinf, x));
    }
    zr = Ops::add_if(vis, zr, d);
    x = Ops::select(vis, ninf, x);
    Ops::store(s + j, x);
    vmax = Ops::max(vmax, x);
  }
  if (bad || !(Ops::hsum(zr) == 0.f)) {
    no_weights();
    m = l = std::numeric_limits<float>::quiet_NaN();
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float cm = Ops::hmax(vmax);
  if (cm == -std::numeric_limits<float>::infinity()) {
    no_weights();
    return 1.f;
  }
  const float mn = std::max(m, cm);
  const float alpha = m == -std::numeric_limits<float>::infinity() ? 0.f : exp_lanes(ek, table, Ops::set1(m - mn))[0];
  const F vm = Ops::set1(mn);
  F vs = Ops::zero();
  for (std::size_t j = 0; j < n; j += W) {
    F p = exp_lanes(ek, table, Ops::load(s + j) - vm);
    if constexpr (ToBf16)
      p = O::round_bf16(p, pb + j);
    else
      Ops::store(s + j, p);
    vs = vs + p;
  }
  l = l * alpha + Ops::hsum(vs);
  m = mn;
  return alpha;
}

// acc[0, D) *= alpha
template <int D>
LUTKIT_OPS_FN inline void scale_row(float* o, float alpha) {
  const F va = Ops::set1(alpha);
  for (int v = 0; v < D / W; ++v) Ops::store(o + W * v, Ops::load(o + W * v) * va);
}

// f(0), .., f(N - 1) as straight-line code (integral constants): over the score tile's keys, GCC 12
// kept the AVX2 accumulators in registers only so (an unrolled loop over them spilled half)
template <int N, class Fn>
LUTKIT_OPS_FN inline void each_key(Fn&& f) {
  [&]<int... t>(std::integer_sequence<int, t...>) LUTKIT_OPS_FN { (f(std::integral_constant<int, t>{}), ...); }(std::make_integer_sequence<int, N>{});
}

// the value stage of the step: rows' acc += S[r][j] V[B + j] over j < n (V element (i, c) at
// vsrc + i * rs + c); prefetches the K rows of the next chunk (k, nk keys ahead; null: none)
template <int D, kv_type T>
LUTKIT_OPS_FN void value_stage(const att_rows& rows, const float* S, std::size_t n16, std::size_t n, const void* vsrc,
                               std::ptrdiff_t rs, std::ptrdiff_t B, const void* k, std::size_t nk) {
  constexpr int VT = Ops::VT;
  constexpr std::ptrdiff_t eb = T == kv_type::f32 ? 4 : 2;
  const std::size_t R = rows.R;
  std::size_t r = 0;
  for (; r + 4 <= R; r += 4) {
    for (int c0 = 0; c0 < D; c0 += VT * W) {
      F acc[4][VT];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < VT; ++v) acc[i][v] = Ops::load(rows.acc + (r + i) * D + c0 + W * v);
      for (std::size_t j = 0; j < n; ++j) {
        const std::ptrdiff_t vb = (B + std::ptrdiff_t(j)) * rs + c0;
        if (k && r == 0 && c0 == 0) {
          const char* pk = static_cast<const char*>(k) + ((B + std::ptrdiff_t(j + nk)) * rs) * eb;
#pragma GCC unroll 8
          for (int c = 0; c < D * int(eb); c += 64) __builtin_prefetch(pk + c, 0, 3);
        }
        F vv[VT];
#pragma GCC unroll 4
        for (int v = 0; v < VT; ++v) vv[v] = load_kv<T>(vsrc, vb + W * v);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const F p = Ops::set1(S[(r + i) * n16 + j]);
#pragma GCC unroll 4
          for (int v = 0; v < VT; ++v) acc[i][v] = Ops::fma(p, vv[v], acc[i][v]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < VT; ++v) Ops::store(rows.acc + (r + i) * D + c0 + W * v, acc[i][v]);
    }
  }
  for (; r < R; ++r) {
    for (int c0 = 0; c0 < D; c0 += 4 * W) {
      F acc[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[v] = Ops::load(rows.acc + r * D + c0 + W * v);
      for (std::size_t j = 0; j < n; ++j) {
        const std::ptrdiff_t vb = (B + std::ptrdiff_t(j)) * rs + c0;
        const F p = Ops::set1(S[r * n16 + j]);
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) acc[v] = Ops::fma(p, load_kv<T>(vsrc, vb + W * v), acc[v]);
      }
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) Ops::store(rows.acc + r * D + c0 + W * v, acc[v]);
    }
  }
}

// ------------------------------------------------------------------ the step
template <int D, kv_type T>
LUTKIT_OPS_FN void step(const att_step_args& a) {
  constexpr int NV = D / W, KP = Ops::KP;
  const std::size_t R = a.rows.R;
  // the keys any row sees in [k0, k1), rounded out to 16
  int64_t B = int64_t(a.k1), E = int64_t(a.k0);
  for (std::size_t r = 0; r < R; ++r) {
    int64_t lo, hi;
    visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
    lo = std::max<int64_t>(lo, int64_t(a.k0));
    hi = std::min<int64_t>(hi, int64_t(a.k1));
    if (lo < hi) {
      B = std::min(B, lo);
      E = std::max(E, hi);
    }
  }
  if (B >= E) return;
  // every row sees every key of [B, E), unmasked: no V element can reach a row that does not see it
  bool uniform = a.rows.mask == nullptr;
  for (std::size_t r = 0; r < R && uniform; ++r) {
    int64_t lo, hi;
    visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
    uniform = lo <= B && hi >= E;
  }
  const std::size_t n = std::size_t(E - B), n16 = (n + 15) / 16 * 16;
  float* S = a.scratch;  // [R][n16]
  const std::ptrdiff_t rs = a.row_stride;
  constexpr std::ptrdiff_t eb = T == kv_type::f32 ? 4 : 2;
  constexpr std::ptrdiff_t PD = 16;
  // score stage: keys in groups of 4 taken KP at a time, rows in groups of 4 (the last group
  // repeats its last row): per channel vector, 4 query loads and KP key conversions feed 4 KP
  // FMAs into 4 KP accumulators (one per row and key); each key's 4 rows are folded, and the
  // 4 keys' folds stored as rows
  for (std::size_t r0 = 0; r0 < R; r0 += 4) {
    const float* qr[4];
    for (int i = 0; i < 4; ++i) qr[i] = a.rows.q + std::min(r0 + std::size_t(i), R - 1) * D;
    for (std::size_t j = 0; j < n; j += 4) {
      typename Ops::Fold u[4];
#pragma GCC unroll 4
      for (int jp = 0; jp < 4 / KP; ++jp) {
        std::ptrdiff_t kb[KP];
#pragma GCC unroll 4
        for (int t = 0; t < KP; ++t) {
          const std::ptrdiff_t key = B + std::ptrdiff_t(std::min(j + std::size_t(KP * jp + t), n - 1));
          kb[t] = key * rs;
          if (r0 == 0) {
            // memory kept busy through both stages: the score stage fetches this chunk's V rows
            // (16 keys ahead of the K it reads), the value stage the next chunk's K rows
            const char* pv = static_cast<const char*>(a.v) + (kb[t] + PD * rs) * eb;
#pragma GCC unroll 8
            for (int c = 0; c < D * int(eb); c += 64) __builtin_prefetch(pv + c, 0, 3);
          }
        }
        F x[KP][4];
        {
          F k[KP];
          each_key<KP>([&](auto t) LUTKIT_OPS_FN { k[t] = load_kv<T>(a.k, kb[t]); });
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) {
            const F q = Ops::load(qr[i]);
            each_key<KP>([&](auto t) LUTKIT_OPS_FN { x[t][i] = q * k[t]; });
          }
        }
#pragma GCC unroll 32
        for (int v = 1; v < NV; ++v) {
          F k[KP];
          each_key<KP>([&](auto t) LUTKIT_OPS_FN { k[t] = load_kv<T>(a.k, kb[t] + W * v); });
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) {
            const F q = Ops::load(qr[i] + W * v);
            each_key<KP>([&](auto t) LUTKIT_OPS_FN { x[t][i] = Ops::fma(q, k[t], x[t][i]); });
          }
        }
#pragma GCC unroll 4
        for (int t = 0; t < KP; ++t) u[KP * jp + t] = Ops::fold_key(x[t]);
      }
      Ops::store_scores(u, S + r0 * n16 + j, n16, std::min<std::size_t>(4, R - r0));
    }
  }
  // softmax stage (padding lanes j >= n are outside [b, e): -inf, weight 0)
  for (std::size_t r = 0; r < R; ++r) {
    float* s = S + r * n16;
    for (std::size_t j = n; j < n16; ++j) s[j] = 0.f;
    int64_t lo, hi;
    visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
    lo = std::max<int64_t>(lo, B);
    hi = std::min<int64_t>(hi, E);
    const float* mrow = a.rows.mask ? a.rows.mask[r] : nullptr;
    const float alpha = row_softmax<false>(s, n16, lo, hi, B, mrow, a.mask_base, a.softcap, a.exp, a.exp_table,
                                           a.rows.m[r], a.rows.l[r], nullptr);
    if (alpha != 1.f) scale_row<D>(a.rows.acc + r * D, alpha);
  }
  // value stage: 4 rows x VT vectors of accumulators over the chunk's V rows. Where rows see
  // different keys and V holds a non-finite value: over a copy of V without it, then
  // att_add_nonfinite (attention/microkernel.hpp)
  if (!uniform) {
    F z = Ops::zero();
    for (std::size_t j = 0; j < n; ++j)
      for (int v = 0; v < NV; ++v) {
        const F x = load_kv<T>(a.v, (B + std::ptrdiff_t(j)) * rs + W * v);
        z = z + (x - x);  // 0 unless x is NaN or infinite
      }
    if (!(Ops::hsum(z) == 0.f)) {
      std::vector<float> clean(n * D);
      std::vector<att_bad_v> bad;
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t c = 0; c < std::size_t(D); ++c) {
          const float x = kv_load(a.v, T, (B + std::ptrdiff_t(j)) * rs + std::ptrdiff_t(c));
          if (std::isfinite(x)) {
            clean[j * D + c] = x;
          } else {
            clean[j * D + c] = 0.f;
            bad.push_back({j, c, x});
          }
        }
      value_stage<D, kv_type::f32>(a.rows, S, n16, n, clean.data(), D, 0, nullptr, 0);
      att_add_nonfinite(a, a.rows, D, a.pos0, a.n_kv, a.mask_base, std::size_t(B), bad,
                        [&](std::size_t r, std::size_t j) { return S[r * n16 + j]; });
      return;
    }
  }
  value_stage<D, T>(a.rows, S, n16, n, a.v, rs, B, a.k, n);
}

// f.template operator()<D, T>() for a head dim of 64, 128 or 256 and a KV type
template <class Fn>
inline void by_dim_and_type(std::size_t d, kv_type t, Fn&& f) {
  auto by_type = [&]<int D>() {
    switch (t) {
      case kv_type::f16: f.template operator()<D, kv_type::f16>(); break;
      case kv_type::bf16: f.template operator()<D, kv_type::bf16>(); break;
      default: f.template operator()<D, kv_type::f32>(); break;
    }
  };
  switch (d) {
    case 64: by_type.template operator()<64>(); break;
    case 128: by_type.template operator()<128>(); break;
    default: by_type.template operator()<256>(); break;
  }
}
inline void step_entry(const att_step_args& a) {
  by_dim_and_type(a.d, a.type, [&]<int D, kv_type T>() { step<D, T>(a); });
}
inline bool dims_supported(std::size_t d) { return d == 64 || d == 128 || d == 256; }

// ------------------------------------------------------------------ the fp32 prefill tile
// The default precision of the prefill (attention_precision::fp32): q, K, V and the weights P in
// fp32, the step's softmax update (row_softmax), and two register-blocked outer-product kernels
// over packed fp32 panels (attention/microkernel.hpp, att_pack_args): S = q K^T in 6 rows x
// (QV W) keys tiles (a broadcast q element times QV key vectors per channel), acc += P V in
// 6 rows x (PV W) channels tiles (a broadcast weight times PV value vectors per key). The Ops
// give QV and PV (6 QV + QV + 1 and 6 PV + PV + 1 of the vector registers).

// keys [k0, k1) of one KV head to the fp32 panels (16-key blocks; keys >= n_kv: zeros)
template <int D, kv_type T>
LUTKIT_OPS_FN void pack_f32(const att_pack_args& a) {
  alignas(64) float t[W];
  for (std::size_t k0 = a.k0; k0 < a.k1; k0 += 16) {
    float* kb = a.kpf + (k0 - a.k0) * D;
    float* vb = a.vpf + (k0 - a.k0) * D;
    F chk = Ops::zero();
    for (int j = 0; j < 16; ++j) {
      const std::size_t key = k0 + std::size_t(j);
      const bool in = key < a.n_kv;
      const std::ptrdiff_t base = std::ptrdiff_t(key) * a.row_stride;
      for (int c = 0; c < D; c += W) {
        Ops::store(t, in ? load_kv<T>(a.k, base + c) : Ops::zero());
        for (int i = 0; i < W; ++i) kb[(c + i) * 16 + j] = t[i];
        const F x = in ? load_kv<T>(a.v, base + c) : Ops::zero();
        Ops::store(vb + std::size_t(j) * D + c, x);
        chk = chk + (x - x);  // 0 unless x is NaN or infinite
      }
    }
    if (a.vbad) a.vbad[(k0 - a.k0) / 16] = !(Ops::hsum(chk) == 0.f);
  }
}
inline void pack_f32_entry(const att_pack_args& a) {
  by_dim_and_type(a.d, a.type, [&]<int D, kv_type T>() { pack_f32<D, T>(a); });
}

// S[NR rows][QV W keys] = q . K, the keys from the panel at kp (a 16-key block boundary)
template <int D, int NR>
LUTKIT_OPS_FN inline void qk_f32(const float* q, const float* kp, float* S, std::size_t lds) {
  constexpr int QV = Ops::QV;
  F c[NR][QV];
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < QV; ++v) c[i][v] = Ops::zero();
#pragma GCC unroll 2
  for (int ch = 0; ch < D; ++ch) {
    F k[QV];
#pragma GCC unroll 4
    for (int v = 0; v < QV; ++v) k[v] = Ops::load(kp + ((v * W) / 16) * 16 * D + ch * 16 + (v * W) % 16);
#pragma GCC unroll 6
    for (int i = 0; i < NR; ++i) {
      const F qq = Ops::set1(q[i * D + ch]);
#pragma GCC unroll 4
      for (int v = 0; v < QV; ++v) c[i][v] = Ops::fma(qq, k[v], c[i][v]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < QV; ++v) Ops::store(S + i * lds + W * v, c[i][v]);
}
template <int D, int NR>
LUTKIT_OPS_FN inline void qk_rows_f32(const float* q, const float* kp, float* S, std::size_t C) {
  for (std::size_t kg = 0; kg < C; kg += std::size_t(Ops::QV * W)) qk_f32<D, NR>(q, kp + kg * D, S + kg, C);
}
template <int D>
LUTKIT_OPS_FN void qk_all_f32(const float* q, const float* kp, float* S, std::size_t C, std::size_t R) {
  std::size_t r = 0;
  for (; r + 6 <= R; r += 6) qk_rows_f32<D, 6>(q + r * D, kp, S + r * C, C);
  switch (R - r) {
    case 5: qk_rows_f32<D, 5>(q + r * D, kp, S + r * C, C); break;
    case 4: qk_rows_f32<D, 4>(q + r * D, kp, S + r * C, C); break;
    case 3: qk_rows_f32<D, 3>(q + r * D, kp, S + r * C, C); break;
    case 2: qk_rows_f32<D, 2>(q + r * D, kp, S + r * C, C); break;
    case 1: qk_rows_f32<D, 1>(q + r * D, kp, S + r * C, C); break;
    default: break;
  }
}

// acc[NR rows][PV W channels from c0] += P . V over the chunk's n keys
template <int D, int NR>
LUTKIT_OPS_FN inline void pv_f32(const float* P, std::size_t ldp, const float* vp, std::size_t n, float* acc, int c0) {
  constexpr int PV = Ops::PV;
  F c[NR][PV];
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < PV; ++v) c[i][v] = Ops::load(acc + i * D + c0 + W * v);
  for (std::size_t j = 0; j < n; ++j) {
    F w[PV];
#pragma GCC unroll 4
    for (int v = 0; v < PV; ++v) w[v] = Ops::load(vp + j * D + c0 + W * v);
#pragma GCC unroll 6
    for (int i = 0; i < NR; ++i) {
      const F pp = Ops::set1(P[i * ldp + j]);
#pragma GCC unroll 4
      for (int v = 0; v < PV; ++v) c[i][v] = Ops::fma(pp, w[v], c[i][v]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < PV; ++v) Ops::store(acc + i * D + c0 + W * v, c[i][v]);
}
template <int D, int NR>
LUTKIT_OPS_FN inline void pv_rows_f32(const float* P, std::size_t C, const float* vp, float* acc) {
  for (int c0 = 0; c0 < D; c0 += Ops::PV * W) pv_f32<D, NR>(P, C, vp, C, acc, c0);
}
template <int D>
LUTKIT_OPS_FN void pv_all_f32(const float* P, std::size_t C, const float* vp, float* acc, std::size_t R) {
  std::size_t r = 0;
  for (; r + 6 <= R; r += 6) pv_rows_f32<D, 6>(P + r * C, C, vp, acc + r * D);
  switch (R - r) {
    case 5: pv_rows_f32<D, 5>(P + r * C, C, vp, acc + r * D); break;
    case 4: pv_rows_f32<D, 4>(P + r * C, C, vp, acc + r * D); break;
    case 3: pv_rows_f32<D, 3>(P + r * C, C, vp, acc + r * D); break;
    case 2: pv_rows_f32<D, 2>(P + r * C, C, vp, acc + r * D); break;
    case 1: pv_rows_f32<D, 1>(P + r * C, C, vp, acc + r * D); break;
    default: break;
  }
}

template <int D>
LUTKIT_OPS_FN void tile_f32(const att_tile_args& a) {
  const std::size_t R = a.rows.R, C = a.chunk;
  float* S = a.scratch;
  for (std::size_t k0 = a.k0; k0 < a.k1; k0 += C) {
    bool any = false;
    for (std::size_t r = 0; r < R && !any; ++r) {
      int64_t lo, hi;
      visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
      any = std::max<int64_t>(lo, int64_t(k0)) < std::min<int64_t>(hi, int64_t(k0 + C));
    }
    if (!any) continue;  // a block wholly outside the mask: skipped
    const float* kp = a.kpf + (k0 - a.kbase) * D;
    const float* vp = a.vpf + (k0 - a.kbase) * D;
    qk_all_f32<D>(a.rows.q, kp, S, C, R);
    for (std::size_t r = 0; r < R; ++r) {
      int64_t lo, hi;
      visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
      const float* mrow = a.rows.mask ? a.rows.mask[r] : nullptr;
      const float alpha = row_softmax<false>(S + r * C, C, lo, hi, int64_t(k0), mrow, a.mask_base, a.softcap, a.exp,
                                             a.exp_table, a.rows.m[r], a.rows.l[r], nullptr);
      if (alpha != 1.f) scale_row<D>(a.rows.acc + r * D, alpha);
    }
    if (att_chunk_vbad(a, k0, C)) {  // a non-finite V: attention/microkernel.hpp, att_add_nonfinite
      std::vector<float> clean(vp, vp + C * D);
      std::vector<att_bad_v> bad;
      for (std::size_t i = 0; i < C * D; ++i)
        if (!std::isfinite(clean[i])) {
          bad.push_back({i / D, i % D, clean[i]});
          clean[i] = 0.f;
        }
      pv_all_f32<D>(S, C, clean.data(), a.rows.acc, R);
      att_add_nonfinite(a, a.rows, D, a.pos0, a.n_kv, a.mask_base, k0, bad,
                        [&](std::size_t r, std::size_t j) { return S[r * C + j]; });
    } else {
      pv_all_f32<D>(S, C, vp, a.rows.acc, R);
    }
  }
}
inline void tile_f32_entry(const att_tile_args& a) {
  switch (a.d) {
    case 64: tile_f32<64>(a); break;
    case 128: tile_f32<128>(a); break;
    default: tile_f32<256>(a); break;
  }
}
