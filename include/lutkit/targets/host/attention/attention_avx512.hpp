// lutkit — the AVX-512 kernels of the attention family (attention/microkernel.hpp):
//   step: the fp32 online-softmax step of attention/body.inl in 16 lanes (targets/host/
//         ops_avx512.hpp), one key per pass of the score tile (16 dot vectors reduced together
//         by a transpose-add), 4 rows x 64 channels value tiles;
//   pack_f32 + tile_f32: the default (fp32) prefill of attention/body.inl, 6 rows x 64 keys score
//         tiles and 6 rows x 64 channels value tiles;
//   pack + tile: the bf16 prefill (attention_precision::bf16) over packed bf16 panels, QK^T and P.V by vdpbf16ps with fp32
//         accumulation (6 rows x 64 keys score tiles, 3 rows x 128 channels value tiles), the
//         softmax update of the step with the weights rounded to bf16. Head dims 64, 128, 256.
// Chosen at run time; registered in attention/targets.hpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "../../../attention/exp.hpp"
#include "../../../attention/microkernel.hpp"
#include "../ops_avx512.hpp"

#if defined(LUTKIT_HAVE_AVX512_OPS)
#include "../features.hpp"
#include "../intrinsics_begin.hpp"
#define LUTKIT_HAVE_AVX512_ATT 1
#define LUTKIT_AVX512_ATT __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,f16c")))

namespace lutkit::detail::avx512_att {

inline bool cpu_supported() { return host_features::avx512_bf16(); }

struct Ops : avx512_ops {
  static constexpr int KP = 1, VT = 4, QV = 4, PV = 4;
  using Fold = __m512;
  // a key's 4 rows: halves of rows (0, 1) and (2, 3), then 128-bit blocks: block b = row b's 4
  // partial sums
  LUTKIT_AVX512_OP Fold fold_key(const F* x) {
    const __m512 t01 = _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], 0x44), _mm512_shuffle_f32x4(x[0], x[1], 0xEE));
    const __m512 t23 = _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], 0x44), _mm512_shuffle_f32x4(x[2], x[3], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_f32x4(t01, t23, 0x88), _mm512_shuffle_f32x4(t01, t23, 0xDD));
  }
  // within each block: 4 keys' 4 partial sums -> [key 0, key 1, key 2, key 3] totals
  LUTKIT_AVX512_OP void store_scores(Fold* u, float* s, std::size_t ld, std::size_t rows) {
    const __m512 p = _mm512_add_ps(_mm512_unpacklo_ps(u[0], u[1]), _mm512_unpackhi_ps(u[0], u[1]));
    const __m512 q = _mm512_add_ps(_mm512_unpacklo_ps(u[2], u[3]), _mm512_unpackhi_ps(u[2], u[3]));
    alignas(64) float tmp[16];
    _mm512_store_ps(tmp, _mm512_add_ps(_mm512_shuffle_ps(p, q, 0x44), _mm512_shuffle_ps(p, q, 0xEE)));
    for (int i = 0; i < 4; ++i)
      if (std::size_t(i) < rows) std::memcpy(s + i * ld, tmp + 4 * i, 16);
  }
  // the weights of the bf16 P.V tile: p rounded to bf16 (nearest even) into out, and as fp32
  LUTKIT_AVX512_ATT __attribute__((always_inline)) static F round_bf16(F p, uint16_t* out) {
    const __m256bh h = _mm512_cvtneps_pbh(p);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), (__m256i)h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)h), 16));
  }
};
#define LUTKIT_OPS_FN LUTKIT_AVX512_ATT
#include "../../../attention/body.inl"
#undef LUTKIT_OPS_FN

// ------------------------------------------------------------------ prefill: packing
// 16 elements of a K/V row as 16 bf16 (round to nearest even)
template <kv_type T>
LUTKIT_AVX512_ATT inline __m256i bf16x16(const void* base, std::ptrdiff_t i) {
  if constexpr (T == kv_type::bf16) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i));
  } else {
    return (__m256i)_mm512_cvtneps_pbh(load_kv<T>(base, i));
  }
}

template <int D, kv_type T>
LUTKIT_AVX512_ATT void pack(const att_pack_args& a) {
  alignas(64) uint16_t tmp[16 * D];
  const __m512i ilv = _mm512_setr_epi32(0x00100000, 0x00110001, 0x00120002, 0x00130003, 0x00140004, 0x00150005,
                                        0x00160006, 0x00170007, 0x00180008, 0x00190009, 0x001A000A, 0x001B000B,
                                        0x001C000C, 0x001D000D, 0x001E000E, 0x001F000F);
  for (std::size_t k0 = a.k0; k0 < a.k1; k0 += 16) {
    // K: 16 rows to bf16, then the (step, key) word transpose
    for (int j = 0; j < 16; ++j) {
      const std::size_t key = k0 + std::size_t(j);
      for (int c = 0; c < D; c += 16) {
        const __m256i h = key < a.n_kv ? bf16x16<T>(a.k, std::ptrdiff_t(key) * a.row_stride + c) : _mm256_setzero_si256();
        _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + j * D + c), h);
      }
    }
    uint32_t* kp = reinterpret_cast<uint32_t*>(a.kp + (k0 - a.k0) * D);
    const uint32_t* t32 = reinterpret_cast<const uint32_t*>(tmp);
    const __m512i gidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(D / 2));
    for (int s = 0; s < D / 2; ++s)
      _mm512_storeu_si512(kp + s * 16, _mm512_i32gather_epi32(gidx, t32 + s, 4));
    // V: key pairs interleaved per channel (and whether the block holds a non-finite V)
    if (a.vbad) {
      __m512 chk = _mm512_setzero_ps();
      for (int t = 0; t < 16 && k0 + std::size_t(t) < a.n_kv; ++t)
        for (int c = 0; c < D; c += 16) {
          const __m512 x = load_kv<T>(a.v, std::ptrdiff_t(k0 + std::size_t(t)) * a.row_stride + c);
          chk = _mm512_add_ps(chk, _mm512_sub_ps(x, x));
        }
      a.vbad[(k0 - a.k0) / 16] = !(_mm512_reduce_add_ps(chk) == 0.f);
    }
    for (int t = 0; t < 16; t += 2) {
      const std::size_t ka = k0 + std::size_t(t), kb = ka + 1;
      uint16_t* vp = a.vp + (k0 - a.k0 + std::size_t(t)) * D;
      for (int c = 0; c < D; c += 16) {
        const __m256i x = ka < a.n_kv ? bf16x16<T>(a.v, std::ptrdiff_t(ka) * a.row_stride + c) : _mm256_setzero_si256();
        const __m256i y = kb < a.n_kv ? bf16x16<T>(a.v, std::ptrdiff_t(kb) * a.row_stride + c) : _mm256_setzero_si256();
        const __m512i xy = _mm512_inserti64x4(_mm512_castsi256_si512(x), y, 1);
        _mm512_storeu_si512(vp + 2 * c, _mm512_permutexvar_epi16(ilv, xy));
      }
    }
  }
}
inline void pack_entry(const att_pack_args& a) {
  by_dim_and_type(a.d, a.type, [&]<int D, kv_type T>() { pack<D, T>(a); });
}

// ------------------------------------------------------------------ prefill: tiles
// S[NR rows][64 keys] = q . K for keys of the 4 16-key blocks at kp
template <int D, int NR>
LUTKIT_AVX512_ATT inline void qk_tile(const uint16_t* qb, const uint16_t* kp, float* S, std::size_t lds) {
  __m512 c[NR][4];
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) c[i][v] = _mm512_setzero_ps();
  const uint32_t* q32 = reinterpret_cast<const uint32_t*>(qb);
#pragma GCC unroll 2
  for (int s = 0; s < D / 2; ++s) {
    __m512i k[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) k[v] = _mm512_loadu_si512(kp + (v * D / 2 + s) * 32);
#pragma GCC unroll 6
    for (int i = 0; i < NR; ++i) {
      const __m512i qq = _mm512_set1_epi32(int(q32[i * D / 2 + s]));
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) c[i][v] = _mm512_dpbf16_ps(c[i][v], (__m512bh)k[v], (__m512bh)qq);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(S + i * lds + 16 * v, c[i][v]);
}

// acc[NR rows][NV*16 channels from c0] += P . V over the chunk's key pairs
template <int D, int NR, int NV>
LUTKIT_AVX512_ATT inline void pv_tile(const uint16_t* P, std::size_t ldp, const uint16_t* vp, std::size_t pairs,
                                      float* acc, int c0) {
  __m512 c[NR][NV];
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) c[i][v] = _mm512_loadu_ps(acc + i * D + c0 + 16 * v);
  for (std::size_t t = 0; t < pairs; ++t) {
    __m512i w[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) w[v] = _mm512_loadu_si512(vp + t * 2 * D + 2 * (c0 + 16 * v));
#pragma GCC unroll 6
    for (int i = 0; i < NR; ++i) {
      uint32_t pw;
      std::memcpy(&pw, P + i * ldp + 2 * t, 4);
      const __m512i pp = _mm512_set1_epi32(int(pw));
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) c[i][v] = _mm512_dpbf16_ps(c[i][v], (__m512bh)w[v], (__m512bh)pp);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < NR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(acc + i * D + c0 + 16 * v, c[i][v]);
}

template <int D, int NR>
LUTKIT_AVX512_ATT inline void qk_rows(const uint16_t* qb, const uint16_t* kp, float* S, std::size_t C, std::size_t R,
                                      std::size_t r0) {
  for (std::size_t kg = 0; kg < C; kg += 64) qk_tile<D, NR>(qb + r0 * D, kp + kg * D, S + r0 * C + kg, C);
  (void)R;
}
template <int D>
LUTKIT_AVX512_ATT void qk_all(const uint16_t* qb, const uint16_t* kp, float* S, std::size_t C, std::size_t R) {
  std::size_t r = 0;
  for (; r + 6 <= R; r += 6) qk_rows<D, 6>(qb, kp, S, C, R, r);
  switch (R - r) {
    case 5: qk_rows<D, 5>(qb, kp, S, C, R, r); break;
    case 4: qk_rows<D, 4>(qb, kp, S, C, R, r); break;
    case 3: qk_rows<D, 3>(qb, kp, S, C, R, r); break;
    case 2: qk_rows<D, 2>(qb, kp, S, C, R, r); break;
    case 1: qk_rows<D, 1>(qb, kp, S, C, R, r); break;
    default: break;
  }
}
template <int D>
LUTKIT_AVX512_ATT void pv_all(const uint16_t* P, std::size_t C, const uint16_t* vp, float* acc, std::size_t R) {
  constexpr int NV = D >= 128 ? 8 : 4;
  constexpr int NRF = D >= 128 ? 3 : 6;
  std::size_t r = 0;
  for (; r + NRF <= R; r += NRF)
    for (int c0 = 0; c0 < D; c0 += NV * 16) pv_tile<D, NRF, NV>(P + r * C, C, vp, C / 2, acc + r * D, c0);
  for (; r < R; ++r)
    for (int c0 = 0; c0 < D; c0 += NV * 16) pv_tile<D, 1, NV>(P + r * C, C, vp, C / 2, acc + r * D, c0);
}

template <int D>
LUTKIT_AVX512_ATT void tile(const att_tile_args& a) {
  const std::size_t R = a.rows.R, C = a.chunk;
  float* S = a.scratch;
  uint16_t* P = reinterpret_cast<uint16_t*>(S + R * C);
  for (std::size_t k0 = a.k0; k0 < a.k1; k0 += C) {
    bool any = false;
    for (std::size_t r = 0; r < R && !any; ++r) {
      int64_t lo, hi;
      visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
      any = std::max<int64_t>(lo, int64_t(k0)) < std::min<int64_t>(hi, int64_t(k0 + C));
    }
    if (!any) continue;  // a block wholly outside the mask: skipped
    const uint16_t* kp = a.kp + (k0 - a.kbase) * D;
    const uint16_t* vp = a.vp + (k0 - a.kbase) * D;
    qk_all<D>(a.qb, kp, S, C, R);
    for (std::size_t r = 0; r < R; ++r) {
      int64_t lo, hi;
      visible_keys(a.mask, a.window, a.rows.pos[r], a.pos0, a.n_kv, lo, hi);
      const float* mrow = a.rows.mask ? a.rows.mask[r] : nullptr;
      const float alpha = row_softmax<true>(S + r * C, C, lo, hi, int64_t(k0), mrow, a.mask_base, a.softcap, a.exp,
                                            a.exp_table, a.rows.m[r], a.rows.l[r], P + r * C);
      if (alpha != 1.f) scale_row<D>(a.rows.acc + r * D, alpha);
    }
    if (att_chunk_vbad(a, k0, C)) {  // a non-finite V: attention/microkernel.hpp, att_add_nonfinite
      std::vector<uint16_t> clean(vp, vp + C * D);
      std::vector<att_bad_v> bad;
      for (std::size_t i = 0; i < C * D; ++i)
        if ((clean[i] & 0x7F80u) == 0x7F80u) {  // bf16 inf / NaN; element (key 2t + h, c) at 2tD + 2c + h
          bad.push_back({2 * (i / (2 * D)) + i % 2, (i % (2 * D)) / 2, bf16_to_f32(clean[i])});
          clean[i] = 0;
        }
      pv_all<D>(P, C, clean.data(), a.rows.acc, R);
      att_add_nonfinite(a, a.rows, D, a.pos0, a.n_kv, a.mask_base, k0, bad,
                        [&](std::size_t r, std::size_t j) { return bf16_to_f32(P[r * C + j]); });
    } else {
      pv_all<D>(P, C, vp, a.rows.acc, R);
    }
  }
}
inline void tile_entry(const att_tile_args& a) {
  switch (a.d) {
    case 64: tile<64>(a); break;
    case 128: tile<128>(a); break;
    default: tile<256>(a); break;
  }
}

inline const att_kernel_set& kernels() {
  static const att_kernel_set ks{"avx512",     &dims_supported, &step_entry,     &dims_supported,
                                 &pack_entry,  &tile_entry,     &pack_f32_entry, &tile_f32_entry};
  return ks;
}

}  // namespace lutkit::detail::avx512_att

#include "../intrinsics_end.hpp"
#endif
