// lutkit — register-blocked micro-kernels of the dequant-GEMM, written once per paradigm in
// portable C++ (auto-vectorized for the build's baseline ISA). The AVX-512 VNNI / BF16 versions
// in portable/dq_kernels_avx512.hpp implement the same contracts with intrinsics.
//
// bf16 / fp32 register tile: MR weight rows (broadcast) x NV*16 activation columns (lanes).
//   W   row-major, MR rows of the dequantized tile (stride ldw elements)
//   A   activation panel, column-interleaved: for each k-step, NP columns x (2 bf16 | 1 fp32)
//       consecutive activations of one column; lda elements between k-steps
//   C   MR rows x NV*16 fp32 accumulators (stride ldc), accumulated in place
// int8 register tile ("rows in lanes"): the 64 weight rows of the tile in 4 vectors x NC
// activation columns (broadcast), so the step-major levels are read with 4 full-width loads per
// k4 step and the group scales and zeros are row vectors.
//   W   step-major levels: k4 step s, row r at W[s * 256 + 4 * r] (4 bytes)
//   A   the same column-interleaved panel: step s, column j at A[s * lda + 4 * j] (4 int8)
//   C   column-major: column j, row r at C[j * 64 + r]
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../core/bf16.hpp"
#include "../core/half.hpp"

namespace lutkit::detail {

struct mk_int8_args {
  const uint8_t* W;    // step-major levels of the 64 rows, at the first step of the call
  const int8_t* A;     // activation panel at the first column and step of the call
  std::size_t lda;     // bytes between k4 steps of the panel (NP * 4)
  std::size_t steps;   // k4 steps per flush group
  std::size_t groups;  // flush groups in this call
  float* C;            // column-major accumulators of the call's first column
  const float* sw;     // [group][64]: weight scale of each row
  const float* swz;    // [group][64]: scale * zero of each row
  const float* sumx;  // [group][ldsum]: sum of the (scaled, if sa) int8 activations of the group
  const float* sa;    // [group][ldsum] activation scale per group, or null (per-row scale, applied later)
  std::size_t ldsum;
};
struct mk_bf16_args {
  const uint16_t* W;
  std::size_t ldw;
  const uint16_t* A;  // [k2 step][NP][2]
  std::size_t lda;    // uint16 elements between k2 steps (NP * 2)
  std::size_t steps;  // k2 steps
  float* C;
  std::size_t ldc;
};
struct mk_f32_args {
  const float* W;
  std::size_t ldw;
  const float* A;  // [k][NP]
  std::size_t lda;
  std::size_t steps;  // k
  float* C;
  std::size_t ldc;
};
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
using mk_bf16_fn = void (*)(const mk_bf16_args&);
using mk_f32_fn = void (*)(const mk_f32_args&);

inline constexpr int mk_rows = 8;  // bf16 / fp32 MR: the dequantized tile (64 rows) is 8 register tiles
inline constexpr int mk_int8_cols = 3;  // int8: at most 3 columns x 64 rows per call

namespace generic {
template <int NC>
void mk_int8(const mk_int8_args& a) {
  const uint8_t* W = a.W;
  const int8_t* A = a.A;
  for (std::size_t g = 0; g < a.groups; ++g) {
    int32_t acc[NC][64] = {};
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
        c[r] = std::fma(-sx, swz[r], c[r]);
      }
    }
  }
}

// Row-major levels (64 rows, stride ld, `len` a multiple of 4) -> the step-major layout of mk_int8.
inline void levels_to_step_major(const uint8_t* in, std::size_t ld, std::size_t len, uint8_t* out) {
  for (std::size_t s = 0; s < len / 4; ++s)
    for (int r = 0; r < 64; ++r) std::memcpy(out + s * 256 + 4 * r, in + r * ld + 4 * s, 4);
}

template <int MR, int NC>
void load_acc(float (&acc)[MR][NC], const float* C, std::size_t ldc) {
  for (int r = 0; r < MR; ++r)
    for (int n = 0; n < NC; ++n) acc[r][n] = C[std::size_t(r) * ldc + n];
}
template <int MR, int NC>
void store_acc(const float (&acc)[MR][NC], float* C, std::size_t ldc) {
  for (int r = 0; r < MR; ++r)
    for (int n = 0; n < NC; ++n) C[std::size_t(r) * ldc + n] = acc[r][n];
}

template <int MR, int NV>
void mk_bf16(const mk_bf16_args& a) {
  constexpr int NC = NV * 16;
  float acc[MR][NC];
  load_acc<MR, NC>(acc, a.C, a.ldc);
  for (std::size_t s = 0; s < a.steps; ++s) {
    const uint16_t* as = a.A + s * a.lda;
    for (int r = 0; r < MR; ++r) {
      const float w0 = bf16_to_f32(a.W[std::size_t(r) * a.ldw + 2 * s]);
      const float w1 = bf16_to_f32(a.W[std::size_t(r) * a.ldw + 2 * s + 1]);
      for (int n = 0; n < NC; ++n) {
        acc[r][n] = std::fma(w0, bf16_to_f32(as[2 * n]), acc[r][n]);
        acc[r][n] = std::fma(w1, bf16_to_f32(as[2 * n + 1]), acc[r][n]);
      }
    }
  }
  store_acc<MR, NC>(acc, a.C, a.ldc);
}

template <int MR, int NV>
void mk_f32(const mk_f32_args& a) {
  constexpr int NC = NV * 16;
  float acc[MR][NC];
  load_acc<MR, NC>(acc, a.C, a.ldc);
  for (std::size_t s = 0; s < a.steps; ++s) {
    const float* as = a.A + s * a.lda;
    for (int r = 0; r < MR; ++r) {
      const float w = a.W[std::size_t(r) * a.ldw + s];
      for (int n = 0; n < NC; ++n) acc[r][n] = std::fma(w, as[n], acc[r][n]);
    }
  }
  store_acc<MR, NC>(acc, a.C, a.ldc);
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

template <class T>
void group16(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz, std::size_t len,
             T* out, std::size_t ldo) {
  for (int r = 0; r < 64; ++r) {
    T t[16];
    for (int c = 0; c < 16; ++c) {
      const float v = sc[r] * (lv[c] - zz[r]);
      if constexpr (sizeof(T) == 4) t[c] = v; else t[c] = f32_to_bf16(v);
    }
    for (std::size_t i = 0; i < len; ++i) out[r * ldo + i] = t[codes[r * ldc + i]];
  }
}

}  // namespace generic

// One backend's kernel set: int8 micro-kernels by NC, bf16 / fp32 by NV (index NC - 1 / NV - 1), level-2 lookups of 16-entry
// tables (wider tables always use the portable lookup), FusedDQP dot, conversions.
struct dq_kernel_set {
  const char* name;
  mk_int8_fn int8[mk_int8_cols];  // by NC - 1
  mk_bf16_fn bf16[3];
  mk_f32_fn f32[3];
  fdq_dot_fn fdq;
  void (*halves)(const uint16_t*, std::size_t, float*);  // fp16 -> fp32 (group scales, zeros)
  // level 2 of one scale group for the 64 rows of a tile (16-entry tables): per row r,
  // tbl[c] = sc[r] * (lv[c] - zz[r]) (fp32, or rounded to bf16), out[r * ldo + i] = tbl[codes[r * ldc + i]]
  void (*group16_f32)(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz,
                      std::size_t len, float* out, std::size_t ldo);
  void (*group16_bf16)(const uint8_t* codes, std::size_t ldc, const float* lv, const float* sc, const float* zz,
                       std::size_t len, uint16_t* out, std::size_t ldo);
  bool simd_level1;  // the backend has a SIMD level-1 unpacker to the step-major layout
};

inline const dq_kernel_set& generic_kernels() {
  static const dq_kernel_set k{"generic",
                               {&generic::mk_int8<1>, &generic::mk_int8<2>, &generic::mk_int8<3>},
                               {&generic::mk_bf16<mk_rows, 1>, &generic::mk_bf16<mk_rows, 2>, &generic::mk_bf16<mk_rows, 3>},
                               {&generic::mk_f32<mk_rows, 1>, &generic::mk_f32<mk_rows, 2>, &generic::mk_f32<mk_rows, 3>},
                               &generic::fdq_dot,
                               &generic::halves_to_float,
                               &generic::group16<float>,
                               &generic::group16<uint16_t>,
                               false};
  return k;
}

}  // namespace lutkit::detail
