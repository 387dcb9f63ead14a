// lutkit — Q4NX (Gemma3 on XDNA, §3.1.1): 4-bit codes q in 0..15, one bf16 scale d and one bf16
// minimum m per group of 32 consecutive k of a row, weight w = d * q + m (Eq. 3). Stored in
// blocks of 32 rows x 256 k: 4096 code bytes + 256 bf16 scales + 256 bf16 mins = 5120 bytes.
// docs/q4nx.md gives the byte layout assumed by import_q4nx / export_q4nx.
//
// Format hooks (format_traits<fmt::q4nx>):
//   min_form = true   value(scale, zero, code) reads its second argument as the group's additive
//                     MINIMUM: value = scale * level(code) + min (NOT scale * (level - zero)).
//                     Code that evaluates weights generically must check format_min_form_v<F>.
//   bf16_params = true   scale and min are bf16 values (not fp16).
//   lut_gemv_capable = false   (the bit-serial LUT-GEMV blob stores fp16 scale/zero; see docs).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/concepts.hpp"
#include "../core/error.hpp"
#include "../core/memory.hpp"
#include "../core/limits.hpp"
#include "quant.hpp"

namespace lutkit {

namespace fmt {
struct q4nx {
  static constexpr int bits = 4;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = true;
};
}  // namespace fmt

template <>
struct format_traits<fmt::q4nx> : detail::min_form4_traits {  // (quant/quant.hpp)
  static constexpr bool bf16_params = true;
  static constexpr const char* book_name = "nx";  // policy names read w4nx_g32_asym_...
  // The group fit of quantize_q4nx (and of lutkit::quantize for Q4NX policies):
  //   min   = the largest bf16 <= min(w)              (rounded down: the grid starts below every w)
  //   scale = the smallest bf16 >= (max(w) - min)/15  (rounded up: the grid ends above every w)
  // so every weight is within scale/2 of d*q + m (plus one float rounding of the sum). Plain
  // round-to-nearest of min and scale would not guarantee this: bf16 keeps 8 significant bits,
  // so rounding the min moves it by up to 2^-9 |min|, more than scale/2 for a narrow group far
  // from 0. False when scale * 15 is not finite in float (the top codes would be Inf).
  static bool fit_group(const float* w, std::size_t n, std::size_t stride, float& scale, float& min) {
    float lo = w[0], hi = w[0];
    for (std::size_t i = 1; i < n; ++i) {
      lo = std::min(lo, w[i * stride]);
      hi = std::max(hi, w[i * stride]);
    }
    const float mn = bf16_to_f32(f32_to_bf16_floor(lo));
    const double range = double(hi) - double(mn);
    float d = bf16_to_f32(f32_to_bf16_ceil(float(range / 15.0)));
    if (double(d) * 15.0 < range) d = bf16_to_f32(detail::bf16_next(f32_to_bf16(d), true));
    scale = d;
    min = mn;
    return std::isfinite(mn) && std::isfinite(d) && std::isfinite(d * 15.0f);
  }
};

// format_min_form_v<F>: true when format_traits<F>::value takes (scale, min, code) and computes
// scale * level + min (the traits hook `min_form`, false for every other format).
template <class F>
inline constexpr bool format_min_form_v = format_traits<F>::min_form;

// ---------------------------------------------------------------- geometry of the block format
struct q4nx_spec {
  static constexpr int group = 32;            // weights per (scale, min), consecutive k of one row
  static constexpr int block_rows = 32;       // rows per block
  static constexpr int block_k = 256;         // k per block
  static constexpr int groups_per_block_row = block_k / group;                     // 8
  static constexpr int block_groups = block_rows * groups_per_block_row;          // 256
  static constexpr std::size_t code_bytes = std::size_t(block_rows) * block_k / 2;  // 4096
  static constexpr std::size_t scale_offset = code_bytes;                          // 4096
  static constexpr std::size_t min_offset = scale_offset + 2 * block_groups;       // 4608
  static constexpr std::size_t block_bytes = min_offset + 2 * block_groups;        // 5120
  // byte offset inside a block of the 16 code bytes of (row r, group g), and of its scale / min
  static constexpr std::size_t group_code_offset(int r, int g) {
    return std::size_t(r * groups_per_block_row + g) * (group / 2);
  }
  static constexpr std::size_t group_scale_offset(int r, int g) {
    return scale_offset + 2 * std::size_t(r * groups_per_block_row + g);
  }
  static constexpr std::size_t group_min_offset(int r, int g) {
    return min_offset + 2 * std::size_t(r * groups_per_block_row + g);
  }
  // element i (0..31) of a group: byte i % 16 of the group's 16 bytes, low nibble for i < 16
  static constexpr std::size_t elem_byte(int i) { return std::size_t(i % 16); }
  static constexpr int elem_shift(int i) { return i < 16 ? 0 : 4; }
  // blocks are stored row-block major: block (rb, kb) at index rb * (K / 256) + kb
  static std::size_t block_index(std::size_t rb, std::size_t kb, std::size_t K) {
    return rb * (K / std::size_t(block_k)) + kb;
  }
};
static_assert(q4nx_spec::block_bytes == 5120, "Q4NX block: 5.0 KB");

// ---------------------------------------------------------------- the unpacked representation
struct q4nx_quantized {
  using traits = format_traits<fmt::q4nx>;
  std::size_t M = 0, K = 0, groups = 0;  // groups per row = K / 32
  std::vector<uint8_t> codes;            // M x K, 0..15
  std::vector<float> scales;             // M x groups, bf16-representable
  std::vector<float> mins;               // M x groups, bf16-representable

  float scale(std::size_t m, std::size_t g) const { return scales[m * groups + g]; }
  float min(std::size_t m, std::size_t g) const { return mins[m * groups + g]; }
  // THE value: bf16(scale) * q + bf16(min), in float
  float weight(std::size_t m, std::size_t k) const {
    const std::size_t g = k / q4nx_spec::group;
    return traits::value(scale(m, g), min(m, g), codes[m * K + k]);
  }
  std::vector<float> dequantize() const {
    std::vector<float> out(M * K);
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t k = 0; k < K; ++k) out[m * K + k] = weight(m, k);
    return out;
  }
};

namespace detail {
inline void check_q4nx_shape(std::size_t M, std::size_t K, const char* who) {
  check_matrix_shape(M, K, who);
  require(M % q4nx_spec::block_rows == 0 && K % q4nx_spec::block_k == 0, who, ": M (", M,
          ") must be a multiple of 32 and K (", K, ") a multiple of 256 (Q4NX blocks are 32 x 256)");
}
inline q4nx_quantized make_q4nx(std::size_t M, std::size_t K, const char* who) {
  check_q4nx_shape(M, K, who);
  q4nx_quantized q;
  q.M = M;
  q.K = K;
  q.groups = K / q4nx_spec::group;
  detail::assign_bulk(q.codes, M * K, uint8_t(0));
  detail::assign_bulk(q.scales, M * q.groups, 0.f);
  detail::assign_bulk(q.mins, M * q.groups, 0.f);
  return q;
}
}  // namespace detail

// Quantize row-major M x K float weights to Q4NX: per group of 32, the traits' fit_group and
// code_of (min rounded down and scale rounded up to bf16, q = round((w - min) / scale)).
inline q4nx_quantized quantize_q4nx(const float* w, std::size_t M, std::size_t K) {
  using FT = format_traits<fmt::q4nx>;
  detail::require(w != nullptr, "quantize_q4nx: null weight pointer");
  q4nx_quantized q = detail::make_q4nx(M, K, "quantize_q4nx");
  for (std::size_t i = 0; i < M * K; ++i)
    detail::require(std::isfinite(w[i]), "quantize_q4nx: weight ", i, " is not finite");
  constexpr std::size_t G = q4nx_spec::group;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t g = 0; g < q.groups; ++g) {
      const float* wg = w + m * K + g * G;
      float d = 0, mn = 0;
      detail::require(FT::fit_group(wg, G, 1, d, mn), "quantize_q4nx: group (", m, ", ", g,
                      ") has a range beyond bf16 / float (scale * 15 overflows)");
      q.scales[m * q.groups + g] = d;
      q.mins[m * q.groups + g] = mn;
      for (std::size_t i = 0; i < G; ++i) q.codes[m * K + g * G + i] = FT::code_of(wg[i], d, mn);
    }
  return q;
}

// Import Q4NX blocks (docs/q4nx.md): `n` bytes holding (M/32) * (K/256) blocks of 5120 bytes.
// Scales and mins must be finite bf16 values (else lutkit::error naming the block and group).
inline q4nx_quantized import_q4nx(const uint8_t* bytes, std::size_t n, std::size_t M, std::size_t K) {
  detail::require(bytes != nullptr, "import_q4nx: null pointer");
  detail::check_q4nx_shape(M, K, "import_q4nx");
  const std::size_t rbs = M / q4nx_spec::block_rows, kbs = K / q4nx_spec::block_k;
  detail::require(n == rbs * kbs * q4nx_spec::block_bytes, "import_q4nx: ", n, " bytes, expected ",
                  rbs * kbs * q4nx_spec::block_bytes, " for ", M, " x ", K, " (", rbs * kbs, " blocks of 5120)");
  q4nx_quantized q = detail::make_q4nx(M, K, "import_q4nx");  // allocated once the bytes are known to be there
  for (std::size_t rb = 0; rb < rbs; ++rb)
    for (std::size_t kb = 0; kb < kbs; ++kb) {
      const uint8_t* blk = bytes + q4nx_spec::block_index(rb, kb, K) * q4nx_spec::block_bytes;
      for (int r = 0; r < q4nx_spec::block_rows; ++r)
        for (int g = 0; g < q4nx_spec::groups_per_block_row; ++g) {
          const std::size_t m = rb * q4nx_spec::block_rows + std::size_t(r);
          const std::size_t gg = kb * q4nx_spec::groups_per_block_row + std::size_t(g);
          uint16_t s, mn;
          std::memcpy(&s, blk + q4nx_spec::group_scale_offset(r, g), 2);
          std::memcpy(&mn, blk + q4nx_spec::group_min_offset(r, g), 2);
          const float sf = bf16_to_f32(s), mf = bf16_to_f32(mn);
          detail::require(std::isfinite(sf) && std::isfinite(mf), "import_q4nx: block (", rb, ", ", kb,
                          ") row ", r, " group ", g, ": scale or min is not finite");
          // the largest weight, |scale| * 15 + |min|, must be a finite float
          detail::require(std::isfinite(std::fabs(sf) * 15.f + std::fabs(mf)), "import_q4nx: block (", rb, ", ", kb,
                          ") row ", r, " group ", g, ": scale ", sf, " and min ", mf, " overflow float weights");
          q.scales[m * q.groups + gg] = sf;
          q.mins[m * q.groups + gg] = mf;
          const uint8_t* c = blk + q4nx_spec::group_code_offset(r, g);
          for (int i = 0; i < q4nx_spec::group; ++i)
            q.codes[m * K + gg * q4nx_spec::group + std::size_t(i)] =
                uint8_t((c[q4nx_spec::elem_byte(i)] >> q4nx_spec::elem_shift(i)) & 15u);
        }
    }
  return q;
}

// The inverse of import_q4nx: the Q4NX byte stream of q.
inline std::vector<uint8_t> export_q4nx(const q4nx_quantized& q) {
  detail::require(q.M > 0 && q.K > 0 && q.M % q4nx_spec::block_rows == 0 && q.K % q4nx_spec::block_k == 0 &&
                      q.codes.size() == q.M * q.K && q.scales.size() == q.M * q.groups && q.mins.size() == q.scales.size(),
                  "export_q4nx: inconsistent Q4NX tensor");
  const std::size_t rbs = q.M / q4nx_spec::block_rows, kbs = q.K / q4nx_spec::block_k;
  std::vector<uint8_t> out(rbs * kbs * q4nx_spec::block_bytes, 0);
  for (std::size_t rb = 0; rb < rbs; ++rb)
    for (std::size_t kb = 0; kb < kbs; ++kb) {
      uint8_t* blk = out.data() + q4nx_spec::block_index(rb, kb, q.K) * q4nx_spec::block_bytes;
      for (int r = 0; r < q4nx_spec::block_rows; ++r)
        for (int g = 0; g < q4nx_spec::groups_per_block_row; ++g) {
          const std::size_t m = rb * q4nx_spec::block_rows + std::size_t(r);
          const std::size_t gg = kb * q4nx_spec::groups_per_block_row + std::size_t(g);
          const uint16_t s = f32_to_bf16(q.scales[m * q.groups + gg]);
          const uint16_t mn = f32_to_bf16(q.mins[m * q.groups + gg]);
          std::memcpy(blk + q4nx_spec::group_scale_offset(r, g), &s, 2);
          std::memcpy(blk + q4nx_spec::group_min_offset(r, g), &mn, 2);
          uint8_t* c = blk + q4nx_spec::group_code_offset(r, g);
          for (int i = 0; i < q4nx_spec::group; ++i) {
            const unsigned code = q.codes[m * q.K + gg * q4nx_spec::group + std::size_t(i)];
            detail::require(code <= 15u, "export_q4nx: code ", code, " exceeds 15");
            c[q4nx_spec::elem_byte(i)] |= uint8_t(code << q4nx_spec::elem_shift(i));
          }
        }
    }
  return out;
}

// Q4NX weights as the quantized tensor of a lutkit policy over fmt::q4nx with group<32>
// (codes, bf16 scales, bf16 minima unchanged), e.g. pack<P>(from_q4nx<P>(import_q4nx(...))):
// the packed blob that dequant_gemm and fused_dq_gemv read. to_q4nx is the inverse.
template <class P>
quantized<P> from_q4nx(const q4nx_quantized& q) {
  static_assert(std::is_same_v<typename P::format, fmt::q4nx> && P::spec.group_k == q4nx_spec::group,
                "from_q4nx: the policy must be policy<fmt::q4nx, group<32>, ...>");
  detail::require(q.codes.size() == q.M * q.K && q.scales.size() == q.M * q.groups && q.mins.size() == q.scales.size(),
                  "from_q4nx: inconsistent Q4NX tensor");
  quantized<P> out = detail::make_quantized<P>(q.M, q.K);
  out.codes = q.codes;
  out.scales = q.scales;
  out.zeros = q.mins;
  return out;
}
template <class P>
q4nx_quantized to_q4nx(const quantized<P>& q) {
  static_assert(std::is_same_v<typename P::format, fmt::q4nx> && P::spec.group_k == q4nx_spec::group,
                "to_q4nx: the policy must be policy<fmt::q4nx, group<32>, ...>");
  q4nx_quantized out = detail::make_q4nx(q.M, q.K, "to_q4nx");
  out.codes = q.codes;
  out.scales = q.scales;
  out.mins = q.zeros;
  return out;
}

}  // namespace lutkit
