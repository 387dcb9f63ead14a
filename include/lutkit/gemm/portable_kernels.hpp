// lutkit — the portable C++ implementation of the dequant-GEMM's micro-kernel interface
// (gemm/microkernel.hpp), auto-vectorized for the build's baseline instruction set. Every target
// falls back to it, and it is the specification the target kernels are tested against.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../core/bf16.hpp"
#include "../core/half.hpp"
#include "activations.hpp"
#include "microkernel.hpp"

namespace lutkit::detail {

namespace portable {
template <int NC>
void mk_int8(const mk_int8_args& a) {
  const uint8_t* W = a.W;
  const int8_t* A = a.A;
  for (std::size_t g = 0; g < a.groups; ++g) {
    int32_t acc[NC][64] = {};
    if (a.zsum)  // the zero folded in: the sums start at -z * sum(q)
      for (int n = 0; n < NC; ++n)
        for (int r = 0; r < 64; ++r) acc[n][r] = a.zsum[g * a.ldsum + n];
    for (std::size_t s = 0; s < a.steps; ++s) {
      const int8_t* as = A + s * a.lda;
      const uint8_t* ws = W + s * 256;
      for (int n = 0; n < NC; ++n)
        for (int r = 0; r < 64; ++r)
          acc[n][r] += int32_t(ws[4 * r]) * as[4 * n] + int32_t(ws[4 * r + 1]) * as[4 * n + 1] +
                       int32_t(ws[4 * r + 2]) * as[4 * n + 2] + int32_t(ws[4 * r + 3]) * as[4 * n + 3];
    }
    A += a.steps * a.lda;
    W += 256 * a.steps;
    const float* sw = a.sw + g * 64;
    const float* swz = a.swz + g * 64;
    for (int n = 0; n < NC; ++n) {
      const float sx = a.sumx[g * a.ldsum + n];
      float* c = a.C + n * 64;
      for (int r = 0; r < 64; ++r) {
        float f = float(acc[n][r]);
        if (a.sa) f *= a.sa[g * a.ldsum + n];
        c[r] = std::fma(f, sw[r], c[r]);
        if (!a.zsum) c[r] = std::fma(-sx, swz[r], c[r]);
      }
    }
  }
}

// mk_int8 on row-major activations (mk_int8_rows_args): the specification of the AMX kernel
inline void mk_int8_rows(const mk_int8_rows_args& a) {
  for (std::size_t g = 0; g < a.groups; ++g) {
    const std::size_t k0 = g * a.steps * 4;
    const uint8_t* W = a.W + k0 * 64;
    for (std::size_t n = 0; n < a.cols; ++n) {
      const int8_t* x = a.X + n * a.ldx + k0;
      const float sx = a.sumx[g * a.ldsum + n];
      float* c = a.C + n * 64;
      for (int r = 0; r < 64; ++r) {
        int32_t acc = a.zsum ? a.zsum[g * a.ldsum + n] : 0;
        for (int j = 0; j < a.planes; ++j) {
          const uint8_t* Wj = W + std::size_t(j) * a.plane_bytes;
          int32_t p = 0;
          for (std::size_t k = 0; k < 4 * a.steps; ++k) p += int32_t(Wj[(k / 4) * 256 + 4 * r + k % 4]) * x[k];
          acc += p * (int32_t(1) << (j * a.plane_shift));
        }
        float f = float(acc);
        if (a.sa) f *= a.sa[g * a.ldsum + n];
        c[r] = std::fma(f, a.sw[g * 64 + r], c[r]);
        if (!a.zsum) c[r] = std::fma(-sx, a.swz[g * 64 + r], c[r]);
      }
    }
  }
}

// Row-major levels (64 rows, stride ld, `len` a multiple of 4) -> the step-major layout of mk_int8.
inline void levels_to_step_major(const uint8_t* in, std::size_t ld, std::size_t len, uint8_t* out) {
  for (std::size_t s = 0; s < len / 4; ++s)
    for (int r = 0; r < 64; ++r) std::memcpy(out + s * 256 + 4 * r, in + r * ld + 4 * s, 4);
}

// bf16 (BF) or fp32 dot of the rows-in-lanes tile
template <bool BF, int NC>
void mk_val(const mk_val_args& a) {
  float acc[NC][64];
  for (int n = 0; n < NC; ++n)
    for (int r = 0; r < 64; ++r) acc[n][r] = a.C[n * 64 + r];
  auto lo = [](uint32_t v) { return BF ? bf16_to_f32(uint16_t(v & 0xFFFF)) : 0.f; };
  auto hi = [](uint32_t v) { return bf16_to_f32(uint16_t(v >> 16)); };
  for (std::size_t s = 0; s < a.steps; ++s) {
    const uint32_t* ws = a.W + s * 64;
    const uint32_t* as = a.A + s * a.lda;
    for (int n = 0; n < NC; ++n)
      for (int r = 0; r < 64; ++r) {
        if constexpr (BF) {
          acc[n][r] = std::fma(lo(ws[r]), lo(as[n]), acc[n][r]);
          acc[n][r] = std::fma(hi(ws[r]), hi(as[n]), acc[n][r]);
        } else {
          float w, x;
          std::memcpy(&w, ws + r, 4);
          std::memcpy(&x, as + n, 4);
          acc[n][r] = std::fma(w, x, acc[n][r]);
        }
      }
  }
  for (int n = 0; n < NC; ++n)
    for (int r = 0; r < 64; ++r) a.C[n * 64 + r] = acc[n][r];
}

// Row-major 32-bit elements (64 rows, stride ld, len per row) -> step-major [len][64].
inline void rows_to_steps(const uint32_t* in, std::size_t ld, std::size_t len, uint32_t* out) {
  for (std::size_t j = 0; j < len; ++j)
    for (int r = 0; r < 64; ++r) out[j * 64 + r] = in[r * ld + j];
}

inline void fdq_dot(const fdq_dot_args& a) {
  for (std::size_t r = 0; r < a.rows; ++r)
    for (std::size_t n = 0; n < a.N; ++n) {
      float acc[16];
      float* p = a.part + (r * a.N + n) * 16;
      for (int i = 0; i < 16; ++i) acc[i] = p[i];
      const float* w = a.W + r * a.ldw;
      const float* x = a.x + n * a.ldx;
      for (std::size_t k = 0; k < a.len; k += 16)
        for (int i = 0; i < 16; ++i) acc[i] = std::fma(w[k + i], x[k + i], acc[i]);
      for (int i = 0; i < 16; ++i) p[i] = acc[i];
    }
}

inline void halves_to_float(const uint16_t* h, std::size_t n, float* f) {
  for (std::size_t i = 0; i < n; ++i) f[i] = f16_to_f32(h[i]);
}

// value = sc * (level - zz), or sc * level + zz for min-form formats (zz the group minimum)
template <class T>
void group16(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz, bool min_form,
             std::size_t len, T* out, std::size_t ldo) {
  for (int r = 0; r < 64; ++r) {
    T t[16];
    for (int c = 0; c < 16; ++c) {
      const float v = min_form ? sc[r] * lv[c] + zz[r] : sc[r] * (lv[c] - zz[r]);
      if constexpr (sizeof(T) == 4) t[c] = v; else t[c] = f32_to_bf16(v);
    }
    for (std::size_t i = 0; i < len; ++i) out[r * ldo + i] = t[codes[r * ldc + i]];
  }
}

// value = sc * (code - zz), or sc * code + zz for min-form formats: format_traits::value of a
// format whose levels are its codes (dq_kernel_set::group_codes_f32 / group_codes_bf16)
template <class T>
void group_codes(const uint8_t* codes, std::size_t ldc, const float*, const float* sc, const float* zz, bool min_form,
                 std::size_t len, T* out, std::size_t ldo) {
  for (int r = 0; r < 64; ++r)
    for (std::size_t i = 0; i < len; ++i) {
      const float c = float(codes[r * ldc + i]);
      const float v = min_form ? sc[r] * c + zz[r] : sc[r] * (c - zz[r]);
      if constexpr (sizeof(T) == 4) out[r * ldo + i] = v; else out[r * ldo + i] = f32_to_bf16(v);
    }
}

// element j of group i: s * (code - z)
inline float tg_value(const tg_groups_args& a, std::size_t i, int j) {
  const float c = float((a.codes[i][j] >> a.shift[i]) & ((1u << a.bits) - 1u));
  return a.s[i] * (c - a.z[i]);
}
inline void tg_groups_bf16(const tg_groups_args& a) {
  for (std::size_t i = 0; i < a.n; ++i)
    for (int j = 0; j < 32; ++j) a.out[32 * i + std::size_t(j)] = f32_to_bf16(tg_value(a, i, j));
}

// The same in fp32 for the fp32 micro-kernel, whose step is one k: group i = 4 * st + q (k-pair
// step st, vector q) writes its k column to out[128 * st + 16 * q + r] and its k + 1 column 64
// floats further.
inline void tg_groups_f32(const tg_groups_args& a, float* out) {
  for (std::size_t i = 0; i < a.n; ++i) {
    float* o = out + 128 * (i / 4) + 16 * (i % 4);
    for (int j = 0; j < 32; ++j) o[(j & 1) * 64 + j / 2] = tg_value(a, i, j);
  }
}

// Tile groups, int8 decode (the contract of tg_int8_args, gemm/microkernel.hpp), for nc columns.
// The AVX-512 kernel does the same operations in the same order: the same bits.
template <int NC>
void tg_int8(const tg_int8_args& a) {
  const unsigned mask = (1u << a.bits) - 1u;
  float zacc[NC][8] = {};
  float odd[NC][32] = {};  // the odd k pairs' chain (two chains: half the FMA latency per super-group)
  for (std::size_t s = 0; s < a.n_sg; ++s) {
    const uint8_t* p = a.sg + s * a.sg_bytes;
    float sc[8], zz[8], A[NC][8];
    for (int g = 0; g < 8; ++g) {
      uint16_t h;
      std::memcpy(&h, p + a.soff[g], 2);
      sc[g] = f16_to_f32(h);
      if (a.zoff[0] < 0) {
        zz[g] = a.zsym;
      } else {
        std::memcpy(&h, p + a.zoff[g], 2);
        zz[g] = f16_to_f32(h);
      }
    }
    for (int n = 0; n < NC; ++n) {
      const float xa = a.xa[std::size_t(n) * a.lda + s / 4];
      for (int g = 0; g < 8; ++g) {
        A[n][g] = sc[g] * xa;
        zacc[n][g] = std::fma(sc[g] * zz[g], a.xp[std::size_t(n) * a.ldp + 4 * s + std::size_t(g / 2)], zacc[n][g]);
      }
    }
    for (int q = 0; q < 4; ++q) {
      uint8_t c[64];
      for (int i = 0; i < 64; ++i) c[i] = uint8_t((p[a.qbyte[q] + i] >> a.qshift[q]) & mask);
      for (int n = 0; n < NC; ++n) {
        const int8_t* x2 = a.xq + std::size_t(n) * a.ldq + 8 * s + std::size_t(2 * q);
        float* acc = q % 2 ? odd[n] : a.acc + 32 * n;
        for (int r = 0; r < 32; ++r) {
          const int d = int(c[2 * r]) * x2[0] + int(c[2 * r + 1]) * x2[1];
          acc[r] = std::fma(float(d), A[n][2 * q + r / 16], acc[r]);
        }
      }
    }
  }
  for (int n = 0; n < NC; ++n) {
    const float z0 = ((zacc[n][0] + zacc[n][2]) + zacc[n][4]) + zacc[n][6];
    const float z1 = ((zacc[n][1] + zacc[n][3]) + zacc[n][5]) + zacc[n][7];
    for (int r = 0; r < 32; ++r) a.acc[32 * n + r] = (a.acc[32 * n + r] + odd[n][r]) - (r < 16 ? z0 : z1);
  }
}

// dq_kernel_set::mins: exact int32 sums per super-group, one fma each into C
template <int NC>
void mk_mins(const mk_mins_args& a) {
  for (std::size_t s = 0; s < a.supers; ++s)
    for (int n = 0; n < NC; ++n)
      for (int r = 0; r < 64; ++r) {
        int32_t acc = 0;
        for (std::size_t p = 0; p < a.pairs; ++p) {
          const uint32_t m = a.M[(s * a.pairs + p) * 64 + r], x = a.S[(s * a.pairs + p) * a.lds + std::size_t(n)];
          acc += int32_t(int16_t(m & 0xFFFF)) * int32_t(int16_t(x & 0xFFFF)) +
                 int32_t(int16_t(m >> 16)) * int32_t(int16_t(x >> 16));
        }
        float& c = a.C[n * 64 + r];
        c = std::fma(float(acc), a.dmin[s * 64 + r], c);
      }
}

// dq_kernel_set::fold_levels
inline void fold_levels(const uint8_t* lv, std::size_t steps, const int8_t* cs, int zero, int offset, uint8_t* out) {
  for (std::size_t s = 0; s < steps; ++s)
    for (int j = 0; j < 256; ++j) out[s * 256 + j] = uint8_t(cs[j / 4] * (lv[s * 256 + j] - zero) + offset);
}

}  // namespace portable

inline const dq_kernel_set& portable_dq_kernels() {
  static const dq_kernel_set k = [] {
    dq_kernel_set s{"portable",
                    {&portable::mk_int8<1>, &portable::mk_int8<2>, &portable::mk_int8<3>},
                    {&portable::mk_val<true, 1>, &portable::mk_val<true, 2>, &portable::mk_val<true, 3>,
                     &portable::mk_val<true, 4>, &portable::mk_val<true, 5>, &portable::mk_val<true, 6>},
                    {&portable::mk_val<false, 1>, &portable::mk_val<false, 2>, &portable::mk_val<false, 3>,
                     &portable::mk_val<false, 4>, &portable::mk_val<false, 5>, &portable::mk_val<false, 6>},
                    &portable::rows_to_steps,
                    &portable::fdq_dot,
                    &portable::halves_to_float,
                    &portable::group16<float>,
                    &portable::group16<uint16_t>,
                    &portable::tg_groups_bf16,
                    &portable::tg_groups_f32,
                    {},
                    {},
                    &prepare_rows_baseline,
                    &write_tile,
                    {&portable::tg_int8<1>, &portable::tg_int8<2>, &portable::tg_int8<3>, &portable::tg_int8<4>}};
    s.int8_super_fold = true;  // (mk_int8 takes any level byte)
    s.mins[0] = &portable::mk_mins<1>;
    s.mins[1] = &portable::mk_mins<2>;
    s.mins[2] = &portable::mk_mins<3>;
    return s;
  }();
  return k;
}

}  // namespace lutkit::detail
