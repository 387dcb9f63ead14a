// Fuzz target: attention_prefill and attention_decode with their shape, stride, offset, window,
// mask, softcap, scale and type arguments straight from the input (invalid enum values, zero and
// non-multiple head counts, negative offsets, windows of 0, fully masked rows, K / V / mask values
// with NaN, Inf and extremes), on buffers the harness sizes for the strides it passes (the
// caller's promise). What is accepted must, for each query row: give lse = -inf and an all-zero
// output when no key is visible; otherwise, with finite inputs (logits and the sum of the visible
// V values within float range), finite outputs inside the range of the visible values (the output
// is a convex combination of V rows).
#include <lutkit/attention/attention.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "fuzz_support.hpp"

namespace {
using namespace lutkit;
constexpr const char* kTarget = "attention";

struct kv_buf {
  std::vector<uint8_t> k, v;
  kv_cache_view view;
};

float kv_value(const kv_cache_view& kv, const void* base, std::size_t i, std::size_t h, std::size_t c) {
  const std::size_t e = i * std::size_t(kv.row_stride) + h * std::size_t(kv.head_stride) + c;
  if (kv.type == kv_type::f32) return static_cast<const float*>(base)[e];
  const uint16_t b = static_cast<const uint16_t*>(base)[e];
  return kv.type == kv_type::f16 ? f16_to_f32(b) : bf16_to_f32(b);
}

kv_buf make_kv(lutkit_fuzz::reader& r, kv_type t, std::size_t len, std::size_t hkv, std::size_t d, bool token_major) {
  kv_buf b;
  b.view.type = t;
  b.view.len = len;
  const std::size_t pad = r.u8() % 5;
  if (token_major) {
    b.view.row_stride = std::ptrdiff_t(hkv * d + pad);
    b.view.head_stride = std::ptrdiff_t(d);
  } else {
    b.view.row_stride = std::ptrdiff_t(d + pad);
    b.view.head_stride = std::ptrdiff_t((d + pad) * (len + 1));
  }
  const std::size_t eb = t == kv_type::f32 ? 4 : 2;
  const std::size_t n = len == 0 ? 1 : (len - 1) * std::size_t(b.view.row_stride) + (hkv - 1) * std::size_t(b.view.head_stride) + d;
  b.k.resize(n * eb);
  b.v.resize(n * eb);
  const bool wild = r.u8() % 4 == 0;  // raw bit patterns (NaN, Inf, huge) or small values
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t bits = wild ? r.u32() : 0;
    float kf = wild ? 0.f : float(int8_t(r.u8())) / 16.f, vf = wild ? 0.f : float(int8_t(r.u8())) / 16.f;
    if (wild) std::memcpy(&kf, &bits, 4), vf = r.f32();
    if (t == kv_type::f32) {
      std::memcpy(b.k.data() + 4 * i, &kf, 4);
      std::memcpy(b.v.data() + 4 * i, &vf, 4);
    } else {
      const uint16_t kh = t == kv_type::f16 ? f32_to_f16(kf) : f32_to_bf16(kf);
      const uint16_t vh = t == kv_type::f16 ? f32_to_f16(vf) : f32_to_bf16(vf);
      std::memcpy(b.k.data() + 2 * i, &kh, 2);
      std::memcpy(b.v.data() + 2 * i, &vh, 2);
    }
  }
  b.view.k = b.k.data();
  b.view.v = b.v.data();
  return b;
}

bool visible(const attention_options& o, int64_t pos, std::size_t j, const float* mask_row) {
  if (mask_row && mask_row[j] == -std::numeric_limits<float>::infinity()) return false;
  if (o.mask == mask_kind::none) return true;
  if (int64_t(j) > pos) return false;
  return o.mask == mask_kind::causal || uint64_t(pos - int64_t(j)) < uint64_t(o.window);  // p - w < j <= p
}

// one query row of one head: the checks of the file comment
void check_row(const attention_options& o, const kv_cache_view& kv, std::size_t h, int64_t pos, const float* mask_row,
               const float* out, const float* lse, bool finite_inputs) {
  const std::size_t hk = h / (o.heads_q / o.heads_kv);
  std::size_t seen = 0;
  double lo = INFINITY, hi = -INFINITY, vmax = 0;
  for (std::size_t j = 0; j < kv.len; ++j) {
    if (!visible(o, pos, j, mask_row)) continue;
    ++seen;
    for (std::size_t c = 0; c < o.head_dim; ++c) {
      const double v = kv_value(kv, kv.v, j, hk, c);
      vmax = std::max(vmax, std::fabs(v));
    }
  }
  if (seen == 0) {
    for (std::size_t c = 0; c < o.head_dim; ++c)
      if (out[c] != 0.f) lutkit_fuzz::fail(kTarget, "fully masked row with a non-zero output", out[c]);
    if (lse && *lse != -std::numeric_limits<float>::infinity()) lutkit_fuzz::fail(kTarget, "fully masked row with a finite lse", *lse);
    return;
  }
  // the unnormalized accumulation sums up to `seen` products of |v| <= vmax in fp32: past FLT_MAX
  // it is Inf, as the same arithmetic in float would be (V values near 1e38 are not model values)
  if (!finite_inputs || vmax * double(seen) > 1e37) return;
  for (std::size_t c = 0; c < o.head_dim; ++c) {
    lo = INFINITY, hi = -INFINITY;
    for (std::size_t j = 0; j < kv.len; ++j)
      if (visible(o, pos, j, mask_row)) {
        const double v = kv_value(kv, kv.v, j, hk, c);
        lo = std::min(lo, v), hi = std::max(hi, v);
      }
    const double tol = 0.05 * vmax + 1e-6;
    if (!std::isfinite(out[c]) || out[c] < lo - tol || out[c] > hi + tol)
      lutkit_fuzz::fail(kTarget, "output outside the visible values' range (out, lo, hi)", out[c], lo, hi);
  }
  if (lse && std::isnan(*lse)) lutkit_fuzz::fail(kTarget, "NaN lse with finite inputs");
}

bool all_finite_kv(const attention_options& o, const kv_cache_view& kv) {
  for (std::size_t j = 0; j < kv.len; ++j)
    for (std::size_t h = 0; h < o.heads_kv; ++h)
      for (std::size_t c = 0; c < o.head_dim; ++c)
        if (!std::isfinite(kv_value(kv, kv.k, j, h, c)) || !std::isfinite(kv_value(kv, kv.v, j, h, c))) return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  lutkit_fuzz::reader r{data, size};
  const uint8_t sel = r.u8();
  attention_options o;
  o.heads_kv = r.u8() % 4;                 // 0 is refused
  o.heads_q = o.heads_kv * (1 + r.u8() % 4) + (r.u8() % 8 == 0 ? 1 : 0);  // sometimes not a multiple
  static constexpr std::size_t dims[] = {64, 128, 256, 1, 3, 17, 96, 0, 2000};
  o.head_dim = dims[r.u8() % 9];
  o.scale = r.u8() % 8 == 0 ? r.f32() : 0.125f * float(1 + r.u8() % 8);
  o.softcap = r.u8() % 4 == 0 ? r.f32() : (r.u8() & 1 ? 0.f : 30.f);
  o.mask = mask_kind(r.u8() % 4);          // 3 is not a mask kind
  o.window = r.u8() & 0x80 ? std::size_t(r.u64()) : r.u8() % 12;
  o.exp = exp_kind(r.u8() % 3);            // 2 is not an exp kind
  // bits 1-3 of the selector: the tile's precision (fp32, bf16; 7: the invalid value 2)
  o.precision = attention_precision(((sel >> 1) & 7) == 7 ? 2 : (sel >> 1) & 1);
  const kv_type t = kv_type(r.u8() % 4);   // 3 is not a K/V type
  const std::size_t len = r.u8() % 40;
  const bool token_major = r.u8() & 1;
  if (o.heads_kv == 0 || o.head_dim == 0 || o.head_dim > 256 || o.heads_q == 0) {
    // shapes the harness cannot size buffers for: the call must refuse them before reading
    std::vector<float> q(64), out(64);
    kv_cache_view kv;
    try {
      attention_decode(o, q.data(), kv, out.data());
    } catch (const lutkit::error&) {
    }
    return 0;
  }
  const kv_buf kvb = make_kv(r, t == kv_type(3) ? kv_type::f16 : t, len, o.heads_kv, o.head_dim, token_major);
  kv_cache_view kv = kvb.view;
  kv.type = t;  // an invalid type must be refused
  const bool kv_finite = t != kv_type(3) && all_finite_kv(o, kvb.view);
  const std::size_t n_q = (sel & 1) ? 1 + r.u8() % 6 : 1;
  std::vector<float> q(n_q * o.heads_q * o.head_dim), out(q.size(), -7.f), lse(n_q * o.heads_q, -7.f);
  for (auto& v : q) v = r.u8() % 16 == 0 ? r.f32() : float(int8_t(r.u8())) / 32.f;
  bool finite = kv_finite;
  for (float v : q) finite = finite && std::isfinite(v);
  // logits that cannot overflow float: |scale| * d * max|q| * max|k| well inside the range
  double qmax = 0, kmax = 0;
  for (float v : q) qmax = std::max(qmax, double(std::fabs(v)));
  if (kv_finite)
    for (std::size_t j = 0; j < len; ++j)
      for (std::size_t h = 0; h < o.heads_kv; ++h)
        for (std::size_t c = 0; c < o.head_dim; ++c) kmax = std::max(kmax, std::fabs(double(kv_value(kvb.view, kvb.view.k, j, h, c))));
  // (the kernels scale the queries first: scale * q must be a float too)
  finite = finite && std::fabs(double(o.scale)) * double(o.head_dim) * qmax * kmax < 1e30 &&
           std::fabs(double(o.scale)) * qmax < 1e30;
  const bool with_mask = r.u8() % 3 == 0;
  const bool short_stride = r.u8() % 8 == 0 && len > 0;  // mask_stride < kv.len must be refused
  const std::size_t mask_stride = short_stride ? len - 1 : len + r.u8() % 3;
  std::vector<float> mask(n_q * (len + 3) + 1);
  for (auto& v : mask) {
    const uint8_t m = r.u8();
    v = m % 4 == 0 ? -std::numeric_limits<float>::infinity() : float(int8_t(m)) / 64.f;
  }
  if (std::getenv("LUTKIT_FUZZ_TRACE"))
    std::fprintf(stderr, "attention: %s hq %zu hkv %zu d %zu scale %g softcap %g mask %d window %zu exp %d type %d len %zu "
                 "n_q %zu mask %d stride %zu token_major %d\n", sel & 1 ? "prefill" : "decode", o.heads_q, o.heads_kv,
                 o.head_dim, double(o.scale), double(o.softcap), int(o.mask), o.window, int(o.exp), int(t), len, n_q,
                 int(with_mask), mask_stride, int(token_major));
  if (sel & 1) {
    const int64_t pos0 = (r.u8() % 8 == 0) ? -int64_t(r.u8()) : int64_t(r.u8() % (len + 2));
    try {
      attention_prefill(o, q.data(), n_q, pos0, kv, out.data(), lse.data(), with_mask ? mask.data() : nullptr,
                        mask_stride);
    } catch (const lutkit::error&) {
      return 0;
    }
    lutkit_fuzz::trace(kTarget, "prefill accepted");
    for (std::size_t i = 0; i < n_q; ++i)
      for (std::size_t h = 0; h < o.heads_q; ++h)
        check_row(o, kv, h, pos0 + int64_t(i), with_mask ? mask.data() + i * mask_stride : nullptr,
                  out.data() + (i * o.heads_q + h) * o.head_dim, lse.data() + i * o.heads_q + h, finite);
  } else {
    try {
      attention_decode(o, q.data(), kv, out.data(), lse.data());
    } catch (const lutkit::error&) {
      return 0;
    }
    lutkit_fuzz::trace(kTarget, "decode accepted");
    for (std::size_t h = 0; h < o.heads_q; ++h)
      check_row(o, kv, h, int64_t(len) - 1, nullptr, out.data() + h * o.head_dim, lse.data() + h, finite);
  }
  return 0;
}
