// lutkit — the AMX kernels of the attention family (attention/microkernel.hpp), on CPUs with AMX
// tiles (Sapphire Rapids and later): the prefill tile's two products, S = q K^T and O = P V, run
// by tdpbf16ps on 16 rows x 16 columns fp32 tiles; the softmax update between them is the
// AVX-512 set's (row_softmax of attention/body.inl), and the decode step is the AVX-512 one.
//   tile (attention_precision::bf16): the AVX-512 set's packed bf16 panels, which are already
//         the B operand's layout (a 16-key block of K: 16 rows of 16 (2 bf16) words, one row per
//         channel pair; a key pair of V: one row of channel pairs); q and P rounded to bf16 as
//         the AVX-512 bf16 tile rounds them.
//   tile_f32 (attention_precision::fp32, the default): every operand split into bf16 parts that
//         sum to it exactly: q and P (fp32, 24 significant bits) into three, an fp16 K or V
//         (11 bits) into two, a bf16 one into one (pack_parts writes the hi and lo panels in the
//         fp32 panels' space). The products of the parts are exact in fp32; all pairs are
//         summed but (lowest q or P part) x (lo K or V part), under 2^-26 of the product. Each
//         tile first sums the correction products, then the hi x hi ones, from zero: the
//         corrections' rounding is that of numbers 2^8 times smaller, so the sum's error is that
//         of an fp32 dot (docs/attention.md, "Precision"). fp32 K / V (24 bits, three parts)
//         run the AVX-512 fp32 tile.
// Rows in groups of 16 (the tiles' rows); a group that sees no key of a chunk skips it. The
// calling thread's tile state is put back after each call (targets/host/gemm/microkernels_amx.hpp,
// tiles_scope). Head dims 64, 128, 256. Registered in attention/targets.hpp.
#pragma once
#include "attention_avx512.hpp"

#if defined(LUTKIT_HAVE_AVX512_ATT)
#include "../gemm/microkernels_amx.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AMX_ATT 1
#define LUTKIT_AMX_ATT                                                                                \
  __attribute__((                                                                                     \
      target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx512vbmi,fma,f16c,amx-tile," \
             "amx-int8,amx-bf16")))

namespace lutkit::detail::amx_att {

using avx512_att::F;
using avx512_att::W;

inline bool cpu_supported() { return host_features::amx() && avx512_att::cpu_supported(); }

// ------------------------------------------------------------------ exact bf16 parts
// x = hi + mid + lo exactly (x fp32); the parts as bf16 (nearest even at each step)
LUTKIT_AMX_ATT __attribute__((always_inline)) inline __m256i bf16_of(__m512 x) {
  return (__m256i)_mm512_cvtneps_pbh(x);
}
LUTKIT_AMX_ATT __attribute__((always_inline)) inline __m512 f32_of(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
LUTKIT_AMX_ATT inline void split3(__m512 x, uint16_t* hi, uint16_t* mid, uint16_t* lo) {
  const __m256i h = bf16_of(x);
  const __m512 r = _mm512_sub_ps(x, f32_of(h));
  const __m256i m = bf16_of(r);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi), h);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(mid), m);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo), bf16_of(_mm512_sub_ps(r, f32_of(m))));
}

// ------------------------------------------------------------------ packing (the fp32 tile)
// K: per block of 16 keys, the hi panel (the bf16 tile's K layout) then the lo panel: 32 D bf16
// a block. V: per key pair, the hi row (the bf16 tile's V layout: 2 D bf16) then the lo row.
// Both 4 bytes an element, the fp32 panels' size (att_pack_args::kpf / vpf). lo = x - hi,
// exact for fp16 and bf16 elements (0 for bf16).
template <kv_type T>
LUTKIT_AMX_ATT __attribute__((always_inline)) inline void kv_parts(const att_pack_args& a, const void* base,
                                                                   std::size_t key, int c, __m256i& h, __m256i& l) {
  if (key >= a.n_kv) {
    h = l = _mm256_setzero_si256();
    return;
  }
  const __m512 x = avx512_att::load_kv<T>(base, std::ptrdiff_t(key) * a.row_stride + c);
  h = bf16_of(x);
  l = bf16_of(_mm512_sub_ps(x, f32_of(h)));
}
template <int D, kv_type T>
LUTKIT_AMX_ATT void pack_parts(const att_pack_args& a) {
  alignas(64) uint16_t th[16 * D], tl[16 * D];
  const __m512i ilv =
      _mm512_setr_epi32(0x00100000, 0x00110001, 0x00120002, 0x00130003, 0x00140004, 0x00150005, 0x00160006, 0x00170007,
                        0x00180008, 0x00190009, 0x001A000A, 0x001B000B, 0x001C000C, 0x001D000D, 0x001E000E, 0x001F000F);
  const __m512i gidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(D / 2));
  uint16_t* kbase = reinterpret_cast<uint16_t*>(a.kpf);
  uint16_t* vbase = reinterpret_cast<uint16_t*>(a.vpf);
  for (std::size_t k0 = a.k0; k0 < a.k1; k0 += 16) {
    for (int j = 0; j < 16; ++j)
      for (int c = 0; c < D; c += 16) {
        __m256i h, l;
        kv_parts<T>(a, a.k, k0 + std::size_t(j), c, h, l);
        _mm256_store_si256(reinterpret_cast<__m256i*>(th + j * D + c), h);
        _mm256_store_si256(reinterpret_cast<__m256i*>(tl + j * D + c), l);
      }
    uint32_t* kh = reinterpret_cast<uint32_t*>(kbase + (k0 - a.k0) * 2 * D);
    uint32_t* kl = kh + 8 * D;
    for (int s = 0; s < D / 2; ++s) {
      _mm512_storeu_si512(kh + s * 16, _mm512_i32gather_epi32(gidx, reinterpret_cast<const uint32_t*>(th) + s, 4));
      _mm512_storeu_si512(kl + s * 16, _mm512_i32gather_epi32(gidx, reinterpret_cast<const uint32_t*>(tl) + s, 4));
    }
    if (a.vbad) {
      __m512 chk = _mm512_setzero_ps();
      for (int t = 0; t < 16 && k0 + std::size_t(t) < a.n_kv; ++t)
        for (int c = 0; c < D; c += 16) {
          const __m512 x = avx512_att::load_kv<T>(a.v, std::ptrdiff_t(k0 + std::size_t(t)) * a.row_stride + c);
          chk = _mm512_add_ps(chk, _mm512_sub_ps(x, x));
        }
      a.vbad[(k0 - a.k0) / 16] = !(_mm512_reduce_add_ps(chk) == 0.f);
    }
    for (int t = 0; t < 16; t += 2) {
      uint16_t* vh = vbase + (k0 - a.k0 + std::size_t(t)) * 2 * D;
      uint16_t* vl = vh + 2 * D;
      for (int c = 0; c < D; c += 16) {
        __m256i xh, xl, yh, yl;
        kv_parts<T>(a, a.v, k0 + std::size_t(t), c, xh, xl);
        kv_parts<T>(a, a.v, k0 + std::size_t(t) + 1, c, yh, yl);
        _mm512_storeu_si512(vh + 2 * c,
                            _mm512_permutexvar_epi16(ilv, _mm512_inserti64x4(_mm512_castsi256_si512(xh), yh, 1)));
        _mm512_storeu_si512(vl + 2 * c,
                            _mm512_permutexvar_epi16(ilv, _mm512_inserti64x4(_mm512_castsi256_si512(xl), yl, 1)));
      }
    }
  }
}
inline void pack_f32_entry(const att_pack_args& a) {
  if (a.type == kv_type::f32) return avx512_att::pack_f32_entry(a);  // (three parts: the AVX-512 fp32 tile)
  avx512_att::by_dim_and_type(a.d, a.type, [&]<int D, kv_type T>() {
    if constexpr (T != kv_type::f32) pack_parts<D, T>(a);
  });
}

// ------------------------------------------------------------------ tile products
// Every tile: 16 rows x 64 bytes (palette 1). 0-3: fp32 sums; 4, 7: A; 5, 6: B.
LUTKIT_AMX_ATT inline void configure() {
  amx::tile_config cfg;
  for (int i = 0; i < 8; ++i) cfg.rows[i] = 16, cfg.colsb[i] = 64;
  amx::use_config(cfg);
}
LUTKIT_AMX_ATT __attribute__((always_inline)) inline void zero4() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}
LUTKIT_AMX_ATT __attribute__((always_inline)) inline void store4(float* o, std::size_t ld) {
  _tile_stored(0, o, ld * 4);
  _tile_stored(1, o + 16, ld * 4);
  _tile_stored(2, o + 32, ld * 4);
  _tile_stored(3, o + 48, ld * 4);
}
// tiles 0-3 += A (16 rows x 16 pairs at a, row stride lda bytes; in tile TA) x the four B
// tiles at b + j * bstep (16 rows of 64 bytes, row stride ldb bytes; in tiles 5 and 6)
// (the tile intrinsics take their tile numbers as literals: a macro)
#define LK_AMX_DP4(TA, a, lda, b, bstep, ldb) \
  do {                                        \
    const uint16_t* b_ = (b);                 \
    _tile_loadd(TA, (a), (lda));              \
    _tile_loadd(5, b_, (ldb));                \
    _tile_dpbf16ps(0, TA, 5);                 \
    _tile_loadd(6, b_ + (bstep), (ldb));      \
    _tile_dpbf16ps(1, TA, 6);                 \
    _tile_loadd(5, b_ + 2 * (bstep), (ldb));  \
    _tile_dpbf16ps(2, TA, 5);                 \
    _tile_loadd(6, b_ + 3 * (bstep), (ldb));  \
    _tile_dpbf16ps(3, TA, 6);                 \
  } while (0)

// One pair of parts of S = q K^T for 16 rows x 64 keys (four 16-key blocks at kb, block stride
// kstride bf16): q part rows at q (D bf16 apart), K part blocks at kb. (The A operand alternates
// between tiles 4 and 7; one A tile measured the same.)
template <int D>
LUTKIT_AMX_ATT inline void qk_pass(const uint16_t* q, const uint16_t* kb, std::size_t kstride) {
  for (int s = 0; s < D / 2; s += 32) {
    LK_AMX_DP4(4, q + 2 * s, 2 * D, kb + s * 32, kstride, 64);
    LK_AMX_DP4(7, q + 2 * s + 32, 2 * D, kb + (s + 16) * 32, kstride, 64);
  }
}
// One pair of parts of O = P V for 16 rows x 64 channels from c0: P part rows at p (C bf16
// apart), V part rows (key pairs) at v (pstride bf16 apart); C a multiple of 64
template <int D>
LUTKIT_AMX_ATT inline void pv_pass(const uint16_t* p, std::size_t C, const uint16_t* v, std::size_t pstride, int c0) {
  for (std::size_t t = 0; t < C / 2; t += 32) {
    LK_AMX_DP4(4, p + 2 * t, 2 * C, v + t * pstride + 2 * c0, 16 * 2, pstride * 2);
    LK_AMX_DP4(7, p + 2 * t + 32, 2 * C, v + (t + 16) * pstride + 2 * c0, 16 * 2, pstride * 2);
  }
}

#undef LK_AMX_DP4

// per-thread buffers of a tile call: q parts (3 x the call's rows rounded up to 16 x D), S (16 x C
// fp32), P parts (3 x 16 x C), O (16 x D fp32)
struct tile_buffers {
  std::vector<uint16_t> q;
  std::vector<float> s, o;
  std::vector<uint16_t> p;
};
inline tile_buffers& buffers(std::size_t R, std::size_t D, std::size_t C) {
  thread_local tile_buffers b;
  const std::size_t rp = (R + 15) / 16 * 16;
  if (b.q.size() < 3 * rp * D + 32) b.q.assign(3 * rp * D + 32, 0);
  if (b.s.size() < 16 * C + 16) b.s.assign(16 * C + 16, 0.f);
  if (b.o.size() < 16 * D + 16) b.o.assign(16 * D + 16, 0.f);
  if (b.p.size() < 3 * 16 * C + 32) b.p.assign(3 * 16 * C + 32, 0);
  return b;
}

// The tile (Exact: the fp32 one over hi / lo panels, NK parts of K and V; else the bf16 one).
template <int D, bool Exact, int NK>
LUTKIT_AMX_ATT void tile_rows(const att_tile_args& a) {
  const std::size_t R = a.rows.R, C = a.chunk, rp = (R + 15) / 16 * 16;
  tile_buffers& tb = buffers(R, D, C);
  // q rows (fp32, already scaled) to bf16 parts; padding rows 0
  uint16_t* qh = tb.q.data();
  uint16_t* qm = qh + rp * D;
  uint16_t* ql = qm + rp * D;
  for (std::size_t r = 0; r < rp; ++r)
    for (int c = 0; c < D; c += 16) {
      const __m512 x = r < R ? _mm512_loadu_ps(a.rows.q + r * D + c) : _mm512_setzero_ps();
      if constexpr (Exact) {
        split3(x, qh + r * D + c, qm + r * D + c, ql + r * D + c);
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qh + r * D + c), bf16_of(x));
      }
    }
  float* S = tb.s.data();
  float* O = tb.o.data();
  uint16_t* ph = tb.p.data();
  uint16_t* pm = ph + 16 * C;
  uint16_t* pl = pm + 16 * C;
  // panels: K block stride, V key-pair stride (bf16), the lo panels' offsets
  const uint16_t* kpan = Exact ? reinterpret_cast<const uint16_t*>(a.kpf) : a.kp;
  const uint16_t* vpan = Exact ? reinterpret_cast<const uint16_t*>(a.vpf) : a.vp;
  constexpr std::size_t kstride = Exact ? 32 * D : 16 * D, klo = 16 * D;
  constexpr std::size_t pstride = Exact ? 4 * D : 2 * D, vlo = 2 * D;
  const amx::tiles_scope keep;  // the thread's tile state back at the end
  configure();
  std::vector<uint16_t> clean;
  std::vector<att_bad_v> bad;
  for (std::size_t k0 = a.k0; k0 < a.k1; k0 += C) {
    const uint16_t* kp = kpan + (k0 - a.kbase) / 16 * kstride;
    const uint16_t* vp = vpan + (k0 - a.kbase) / 2 * pstride;
    // a non-finite V: the products run on a copy without it (attention/microkernel.hpp,
    // att_add_nonfinite); element (key 2t + h, channel c) of a part row at t pstride + 2c + h
    const bool vb = att_chunk_vbad(a, k0, C);
    if (vb) {
      clean.assign(vp, vp + C / 2 * pstride);
      bad.clear();
      for (std::size_t t = 0; t < C / 2; ++t)
        for (std::size_t i = 0; i < 2 * D; ++i) {
          uint16_t& h = clean[t * pstride + i];
          if ((h & 0x7F80u) != 0x7F80u) continue;  // bf16 inf / NaN
          bad.push_back({2 * t + i % 2, i / 2, bf16_to_f32(h)});
          h = 0;
          if constexpr (Exact) clean[t * pstride + vlo + i] = 0;
        }
      vp = clean.data();
    }
    for (std::size_t r0 = 0; r0 < R; r0 += 16) {
      const std::size_t nr = std::min<std::size_t>(16, R - r0);
      att_rows rows = a.rows;
      rows.R = nr;
      rows.q += r0 * D;
      rows.pos += r0;
      if (rows.mask) rows.mask += r0;
      rows.m += r0;
      rows.l += r0;
      rows.acc += r0 * D;
      bool any = false;
      for (std::size_t r = 0; r < nr && !any; ++r) {
        int64_t lo, hi;
        visible_keys(a.mask, a.window, rows.pos[r], a.pos0, a.n_kv, lo, hi);
        any = std::max<int64_t>(lo, int64_t(k0)) < std::min<int64_t>(hi, int64_t(k0 + C));
      }
      if (!any) continue;  // no row of the group sees the chunk
      const uint16_t* q0 = qh + r0 * D;
      const uint16_t* q1 = qm + r0 * D;
      const uint16_t* q2 = ql + r0 * D;
      // S = q K^T, 64 keys a pass (corrections first, then hi x hi)
      for (std::size_t kg = 0; kg < C; kg += 64) {
        const uint16_t* kb = kp + kg / 16 * kstride;
        zero4();
        if constexpr (Exact) {
          if constexpr (NK == 2) {
            qk_pass<D>(q0, kb + klo, kstride);
            qk_pass<D>(q1, kb + klo, kstride);
          }
          qk_pass<D>(q1, kb, kstride);
          qk_pass<D>(q2, kb, kstride);
        }
        qk_pass<D>(q0, kb, kstride);
        store4(S + kg, C);
      }
      // the softmax update of each row; P to bf16 (parts)
      for (std::size_t r = 0; r < nr; ++r) {
        int64_t lo, hi;
        visible_keys(a.mask, a.window, rows.pos[r], a.pos0, a.n_kv, lo, hi);
        const float* mrow = rows.mask ? rows.mask[r] : nullptr;
        float* s = S + r * C;
        float alpha;
        if constexpr (Exact) {
          alpha = avx512_att::row_softmax<false>(s, C, lo, hi, int64_t(k0), mrow, a.mask_base, a.softcap, a.exp,
                                                 a.exp_table, rows.m[r], rows.l[r], nullptr);
          for (std::size_t j = 0; j < C; j += 16)
            split3(_mm512_loadu_ps(s + j), ph + r * C + j, pm + r * C + j, pl + r * C + j);
        } else {
          alpha = avx512_att::row_softmax<true>(s, C, lo, hi, int64_t(k0), mrow, a.mask_base, a.softcap, a.exp,
                                                a.exp_table, rows.m[r], rows.l[r], ph + r * C);
        }
        if (alpha != 1.f) avx512_att::scale_row<D>(rows.acc + r * D, alpha);
      }
      // O = P V, 64 channels a pass (corrections first, then hi x hi)
      for (int c0 = 0; c0 < D; c0 += 64) {
        zero4();
        if constexpr (Exact) {
          if constexpr (NK == 2) {
            pv_pass<D>(ph, C, vp + vlo, pstride, c0);
            pv_pass<D>(pm, C, vp + vlo, pstride, c0);
          }
          pv_pass<D>(pm, C, vp, pstride, c0);
          pv_pass<D>(pl, C, vp, pstride, c0);
        }
        pv_pass<D>(ph, C, vp, pstride, c0);
        store4(O + c0, D);
      }
      for (std::size_t r = 0; r < nr; ++r)
        for (int c = 0; c < D; c += 16) {
          float* o = rows.acc + r * D + c;
          _mm512_storeu_ps(o, _mm512_add_ps(_mm512_loadu_ps(o), _mm512_loadu_ps(O + r * D + c)));
        }
      if (vb) {
        if constexpr (Exact)
          att_add_nonfinite(a, rows, D, a.pos0, a.n_kv, a.mask_base, k0, bad,
                            [&](std::size_t r, std::size_t j) { return S[r * C + j]; });
        else
          att_add_nonfinite(a, rows, D, a.pos0, a.n_kv, a.mask_base, k0, bad,
                            [&](std::size_t r, std::size_t j) { return bf16_to_f32(ph[r * C + j]); });
      }
    }
  }
}

inline void tile_entry(const att_tile_args& a) {
  switch (a.d) {
    case 64: tile_rows<64, false, 1>(a); break;
    case 128: tile_rows<128, false, 1>(a); break;
    default: tile_rows<256, false, 1>(a); break;
  }
}
inline void tile_f32_entry(const att_tile_args& a) {
  if (a.type == kv_type::f32) return avx512_att::tile_f32_entry(a);
  const bool two = a.type == kv_type::f16;
  switch (a.d) {
    case 64: two ? tile_rows<64, true, 2>(a) : tile_rows<64, true, 1>(a); break;
    case 128: two ? tile_rows<128, true, 2>(a) : tile_rows<128, true, 1>(a); break;
    default: two ? tile_rows<256, true, 2>(a) : tile_rows<256, true, 1>(a); break;
  }
}

inline const att_kernel_set& kernels() {
  static const att_kernel_set ks{"amx",
                                 &avx512_att::dims_supported,
                                 &avx512_att::step_entry,
                                 &avx512_att::dims_supported,
                                 &avx512_att::pack_entry,
                                 &tile_entry,
                                 &pack_f32_entry,
                                 &tile_f32_entry};
  return ks;
}

}  // namespace lutkit::detail::amx_att

#include "../intrinsics_end.hpp"
#endif
