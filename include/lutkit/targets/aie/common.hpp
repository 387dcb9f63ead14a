// lutkit — what the AIE kernels share: the spec carrier, shape checks, the activation quantizer
// of the W4A8 paths and the float helpers the kernels' scalar set-up uses (freestanding).
#pragma once
#include "../../core/tiling_spec.hpp"
#include "aie.hpp"

namespace lutkit::aie {

// The spec carrier for builds without policy.hpp (the same spec policy<Fmt, Group, Table,
// target::aie>::spec holds). A carrier for another target is a compile-time error.
template <class Fmt, class Group, class Table = table::lut4<int8_t, true>>
struct spec_of {
  static constexpr tiling_spec spec = make_tiling_spec<Fmt, Group, Table, target::aie>();
  static_assert(spec.valid(), "lutkit: tiling spec violates its constraints");
};
template <class S>
constexpr void require_aie_spec() {
  static_assert(S::spec.mmul() && S::spec.rows_per_tile == 64 && S::spec.whole_codes(),
                "lutkit::aie: this policy's blob is laid out for another target (the policy must name target::aie)");
}

namespace detail {
inline float fabs_(float f) { return f < 0.f ? -f : f; }
inline bool finite_(float f) { return (f32_bits(f) & 0x7F800000u) != 0x7F800000u; }
// round half away from zero (C's roundf), exact for every float
inline float round_away(float v) {
  const float a = fabs_(v);
  if (!(a < 8388608.f)) return v;  // already an integer (or NaN)
  float t = float(int32_t(a));
  if (a - t >= 0.5f) t += 1.f;
  return v < 0.f ? -t : t;
}
// exp on the scalar set-up path (table building), double precision: 2^n * e^r, |r| <= ln2 / 2
inline double exp_d(double x) {
  if (x < -745.0) return 0.0;
  if (x > 709.0) return __builtin_inf();
  const double ln2 = 0.69314718055994530942;
  const double nf = x / ln2;
  const int n = int(nf < 0 ? nf - 0.5 : nf + 0.5);
  const double r = x - n * ln2;
  double term = 1.0, s = 1.0;
  for (int i = 1; i < 22; ++i) {
    term *= r / i;
    s += term;
  }
  double p = 1.0;
  const double two = n < 0 ? 0.5 : 2.0;
  for (int i = 0; i < (n < 0 ? -n : n); ++i) p *= two;
  return s * p;
}
// the group parameters of row r (0..63) of the group at `gp` (the group's first byte in L1)
template <class S>
inline void group_params(const uint8_t* gp, int r, float& s, float& z) {
  constexpr tiling_spec T = S::spec;
  uint16_t sb, zb = 0;
  __builtin_memcpy(&sb, gp + 2 * r, 2);
  if (T.asymmetric) __builtin_memcpy(&zb, gp + 2 * T.rows_per_tile + 2 * r, 2);
  s = T.bf16_params ? bf16_to_f32(sb) : f16_to_f32(sb);
  z = T.asymmetric ? (T.bf16_params ? bf16_to_f32(zb) : f16_to_f32(zb)) : T.sym_zero;
}
}  // namespace detail

// The W4A8 activations of N rows (<= 4: the rows of the int8 x int4 mmul's A operand), quantized
// as llama.cpp's q8_0 (ref::gemv_llama_activations, block 32): d = amax / 127 rounded to fp16,
// q = round(x / d); the kernels read q, d and each 32-block's sum of q from the data memory.
// Laid out as the mmul's A operand: per 16 k, a 4 x 16 int8 block (rows N..3 zero).
struct w4a8_acts {
  uint32_t a = 0;      // K / 16 blocks of 64 bytes
  uint32_t d = 0;      // float [K / 32][4]
  uint32_t qsum = 0;   // int32 [K / 32][4]
  std::size_t K = 0, N = 0;
};
template <class P>
status quantize_w4a8(core<P>& c, const float* x, std::size_t N, std::size_t K, std::size_t ldx, w4a8_acts& out) {
  if (N == 0 || N > 4 || K == 0 || K % 32 != 0) return status::bad_shape;
  out.K = K;
  out.N = N;
  out.a = c.alloc(K / 16 * 64, 64);
  out.d = c.alloc(K / 32 * 16, 64);
  out.qsum = c.alloc(K / 32 * 16, 64);
  if (c.st != status::ok) return c.st;
  int8_t* A = reinterpret_cast<int8_t*>(c.ptr(out.a));
  float* D = reinterpret_cast<float*>(c.ptr(out.d));
  int32_t* Q = reinterpret_cast<int32_t*>(c.ptr(out.qsum));
  c.loop_begin("w4a8.quantize");
  for (std::size_t b = 0; b < K / 32; ++b) {
    c.iteration();
    for (std::size_t n = 0; n < 4; ++n) {
      float amax = 0.f;
      const float* xr = x + n * ldx + b * 32;
      if (n < N)
        for (int i = 0; i < 32; ++i) amax = detail::fabs_(xr[i]) > amax ? detail::fabs_(xr[i]) : amax;
      const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
      D[b * 4 + n] = n < N ? f16_to_f32(f32_to_f16(d)) : 0.f;
      int32_t s = 0;
      for (int i = 0; i < 32; ++i) {
        const int8_t q = n < N ? int8_t(detail::round_away(xr[i] * id)) : int8_t(0);
        A[(b * 2 + std::size_t(i / 16)) * 64 + n * 16 + std::size_t(i % 16)] = q;
        s += q;
      }
      Q[b * 4 + n] = s;
    }
    // the vector work per 32-block of 4 rows (128 fp32): loads, |x| max, the emulated multiply
    // by 1/d, float -> int, SRS to int8, the block sum, stores
    c.issue(slot::ld, uint64_t(4 * 128 * 32 / P::load_bits));
    c.issue(slot::vec, 4 * (2 + 3 + 1 + 1 + 1));
    c.issue(slot::st, 2);
  }
  c.loop_end();
  return status::ok;
}

// T-MAN tables of one group of G activations (G / 4 steps, 16 entries each): the table scale
// ts = amax / 127 (amax: the largest |exact entry| of the group) and the int8 entries
// round(exact / ts) (half away from zero), mirrored or not. Shared by the kernel and the tests'
// integer reference, so both round the same float.
inline float lut_group_tables(const float* x, int G, bool mirror, int16_t* entries) {
  float amax = 0.f;
  for (int st = 0; st < G / 4; ++st) {
    const float* s = x + 4 * st;
    float a;
    if (mirror) {
      a = 0.5f * (detail::fabs_(s[0]) + detail::fabs_(s[1]) + detail::fabs_(s[2]) + detail::fabs_(s[3]));
    } else {
      float pos = 0.f, neg = 0.f;
      for (int b = 0; b < 4; ++b) (s[b] > 0.f ? pos : neg) += detail::fabs_(s[b]);
      a = pos > neg ? pos : neg;
    }
    amax = a > amax ? a : amax;
  }
  const float inv = amax > 0.f ? 127.f / amax : 0.f;
  for (int st = 0; st < G / 4; ++st)
    for (int i = 0; i < 16; ++i) {
      float e = 0.f;
      for (int b = 0; b < 4; ++b) {
        const float bit = float((i >> b) & 1);
        e += (mirror ? bit - 0.5f : bit) * x[4 * st + b];
      }
      float q = detail::round_away(e * inv);
      q = q > 127.f ? 127.f : (q < -127.f ? -127.f : q);
      entries[16 * st + i] = int16_t(q);
    }
  return amax / 127.f;
}

}  // namespace lutkit::aie
