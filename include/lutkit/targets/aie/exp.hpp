// lutkit — exp on the AIE model by a lookup table (parallel_lookup), for arguments <= 0 (the
// online softmax's): t = x * 128 log2(e) (fp32, the emulated multiply), q = floor(t) (the native
// float -> int32 conversion), n = q >> 7, f = q & 127; the table holds the bf16 bits of
// 2^(f / 128) (128 entries, exponent 127), and n << 7 added to those bits scales by 2^n; lanes with
// n < -126 are 0. The table's entries are taken at the middle of their step, 2^((f + 1/2) / 128),
// so the result, in bf16, is exp(x) (1 + e) with |e| < 0.0067 (half the step, 2^(1/256) - 1,
// and half a bf16 ulp, 2^-8): the bound the attention and sampling tests use. exp(0) is exactly 1
// (2^(1/256) rounds to 1 in bf16), so a running sum whose maximum did not move is not rescaled.
#pragma once
#include "aie.hpp"
#include "common.hpp"

namespace lutkit::aie {

inline constexpr double exp_lut_rel = 0.0067;

// the table and the constant vectors the exp keeps in registers (set up once)
struct exp_lut {
  lut16 t;
  accum<acc_kind::accfloat, 16> k;  // 128 / ln 2
  vec<int32_t, 16> lo, mask;        // -127, 127
  vec<int16_t, 16> under;           // -126
};
// the table, both copies carved from the last two bank groups
template <class P>
exp_lut make_exp_lut(core<P>& c) {
  int16_t v[128];
  const double step = c.faulty(fault::exp_table) ? 64.0 : 128.0;  // (the planted fault: the wrong step)
  for (int i = 0; i < 128; ++i)
    v[i] = int16_t(f32_to_bf16(float(detail::exp_d((double(i) + 0.5) / step * 0.69314718055994530942))));
  exp_lut e;
  e.t = make_lut(c, v, 128, lut_bank_ab<P>, lut_bank_cd<P>);
  e.k = acc_broadcast<acc_kind::accfloat, 16>(c, 184.66496523378731f);
  e.lo = broadcast<int32_t, 16>(c, -127);
  e.mask = broadcast<int32_t, 16>(c, 127);
  e.under = broadcast<int16_t, 16>(c, -126);
  return e;
}

// exp of 16 fp32 lanes (each <= 0, or -inf) as bf16
template <class P>
vec<bf16, 16> exp_bf16(core<P>& c, const exp_lut& e, const accum<acc_kind::accfloat, 16>& x) {
  const auto q = float_to_int_floor(c, fmul(c, x, e.k));
  const auto n = max(c, shr(c, q, 7), e.lo);
  const auto f = narrow<int16_t>(c, band(c, q, e.mask));
  const auto val = parallel_lookup(c, e.t, f);
  const auto n16 = narrow<int16_t>(c, n);
  const auto bits = add(c, val, shl(c, n16, 7));
  const auto under = gt(c, e.under, n16);
  return as<bf16, 16>(select(c, under, vec<int16_t, 16>{}, bits));
}

}  // namespace lutkit::aie
