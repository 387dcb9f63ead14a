// lutkit — the compile-time vocabulary of a policy: formats, group shapes, table layouts.
// Each is a tiny tag type carrying constexpr traits; kernels and the tiling spec read only the
// traits, so a new format is one more specialization here, not a change in a kernel.
#pragma once
#include <cstdint>
#include <type_traits>

namespace lutkit {

// ---------------------------------------------------------------- formats
namespace fmt {
// Unsigned codes u in [0, 2^B), weight = scale * (u - zero).
//   uint_asym<B>: scale and zero per group (zero stored as fp16, GPTQ integer zeros are exact).
//   uint_sym<B>:  zero is the constant 2^(B-1) (B >= 2) or 1/2 (B == 1, weights +-scale/2).
template <int B>
struct uint_asym {
  static_assert(B >= 1 && B <= 4, "lutkit: integer formats have 1..4 bits");
  static constexpr int bits = B;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = true;
};
template <int B>
struct uint_sym {
  static_assert(B >= 1 && B <= 4, "lutkit: integer formats have 1..4 bits");
  static constexpr int bits = B;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = false;
};
// Ternary (1.58 bit): weight = scale * t, t in {-1, 0, +1}. Packed 3 weights per 5 bits
// (a 4-bit mirrored index into 14 table entries plus a sign bit), i.e. 1.67 bits per weight.
struct ternary {
  static constexpr int bits = 2;  // code range 0..2 (t + 1)
  static constexpr bool is_ternary = true;
  static constexpr bool asymmetric = false;
};
}  // namespace fmt

template <class F>
struct format_traits {
  static constexpr bool is_ternary = F::is_ternary;
  static constexpr int bits = F::bits;
  static constexpr bool asymmetric = F::asymmetric;
  // number of bit planes the LUT kernel looks up (ternary: one mirrored index stream)
  static constexpr int planes = is_ternary ? 1 : bits;
  // activations per table index: 4 (16 entries) for bit planes, 3 (27 -> 14 mirrored) for ternary
  static constexpr int k_per_step = is_ternary ? 3 : 4;
  static constexpr int max_code = is_ternary ? 2 : (1 << bits) - 1;
  // the implicit zero of symmetric formats (code - zero is the signed level)
  static constexpr float sym_zero = is_ternary ? 1.0f : (bits == 1 ? 0.5f : float(1 << (bits - 1)));
  // sum over planes of the plane weight 2^b (ternary: one lookup of weight 1)
  static constexpr int plane_weight_sum = is_ternary ? 1 : (1 << bits) - 1;
  // The level a code stands for: weight = scale * (level(code) - zero). Linear integer formats
  // (and ternary, whose code is t + 1) use the code itself; a codebook format specializes this
  // (NF4, FP4, IQ4_NL: level-2 dequantization tables are built from it, so a new codebook is a
  // table swap). `integer_levels`: every level is an integer in [0, 255], so the int8-activation
  // dequant-GEMM may multiply raw codes (VNNI u8 x s8) and apply scale and zero per group.
  static constexpr bool integer_levels = true;
  static constexpr float level(int code) { return float(code); }
  // The fp32 value of a code given its group's (scale, zero) — THE formula every dequantizer
  // (level-2 tables, references, llama.cpp import tests) evaluates, in float, in this order.
  static constexpr float value(float scale, float zero, int code) { return scale * (level(code) - zero); }
  // LUT-GEMV needs weights linear in the code bits (bit-serial tables); a codebook does not.
  static constexpr bool lut_gemv_capable = true;
};

// ---------------------------------------------------------------- group shapes
struct per_tensor {
  static constexpr int group_k = 0;  // 0: the whole K (scales equal for every row)
  static constexpr bool tensor = true;
};
struct per_channel {
  static constexpr int group_k = 0;  // 0: the whole K, one scale per output row
  static constexpr bool tensor = false;
};
template <int G>
struct group {
  static_assert(G >= 32 && G <= 256 && (G & (G - 1)) == 0,
                "lutkit: group<G> needs G a power of two in [32, 256]");
  static constexpr int group_k = G;
  static constexpr bool tensor = false;
};

// ---------------------------------------------------------------- table layouts
namespace table {
// lut4<Entry, Mirror>: 4 activations per index -> 16 entries of type Entry (int8_t or int16_t).
// Mirror: entries hold sum((bit_i - 1/2) x_i) (sign-symmetric, half the range, one more bit of
// table precision); the kernel adds the -1/2 sum(x) bias once per group, not once per plane.
template <class Entry, bool Mirror>
struct lut4 {
  static_assert(std::is_same_v<Entry, int8_t> || std::is_same_v<Entry, int16_t>,
                "lutkit: table entries are int8_t or int16_t");
  using entry_type = Entry;
  static constexpr int entry_bits = int(sizeof(Entry) * 8);
  static constexpr bool mirror = Mirror;
  static constexpr int index_bits = 4;
};
}  // namespace table

}  // namespace lutkit
