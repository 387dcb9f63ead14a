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
// B = 1..4 serve the LUT-GEMV, and symmetric B = 5 (llama.cpp Q5_0: five bit planes, never
// widened to a byte); B = 8 (8 bit planes, e.g. llama.cpp Q8_0: code = q + 128) is for the
// dequant kernels only (lut_gemv_capable is false). Asymmetric 5 bits and 6 or 7 bits are not
// offered (fmt::q6_k is llama.cpp's 6 bits).
template <int B>
struct uint_asym {
  static_assert((B >= 1 && B <= 4) || B == 8, "lutkit: asymmetric integer formats have 1..4 or 8 bits");
  static constexpr int bits = B;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = true;
};
template <int B>
struct uint_sym {
  static_assert((B >= 1 && B <= 5) || B == 8, "lutkit: symmetric integer formats have 1..5 or 8 bits");
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
// 4-bit codebook: code q in [0, 16) stands for Book::levels[q]; weight = scale * (level - zero)
// with the book's constant zero (always symmetric: one fp16 scale per group). The codes are
// packed as 4 bit planes through the same tiling spec as uint_sym<4>, but the value is not
// linear in the bits, so codebooks are for the dequant kernels only (no LUT-GEMV). A new book
// is one more struct in lutkit::book (see below), nothing else.
template <class Book>
struct codebook4 {
  using book = Book;
  static constexpr int bits = 4;
  static constexpr bool is_ternary = false;
  static constexpr bool asymmetric = false;
};
}  // namespace fmt

// ---------------------------------------------------------------- codebooks
// A book: `name` (its token in the canonical policy name, after "w4"), `levels[16]` (what
// format_traits::level(code) returns), `zero` (the constant zero point), `integer_levels`
// (every level an integer in [0, 255]), `values[16]` (the book's published values) and
// `scale_divisor`: values[q] * scale_divisor == levels[q] - zero exactly, so a weight written
// as d * values[q] by its authors is stored with the scale d / scale_divisor.
namespace book {
// QLoRA NormalFloat4: quantiles of N(0, 1) scaled to [-1, 1], exact zero at code 7. The levels
// are not integers, so an int8 kernel cannot multiply raw codes (integer_levels = false).
struct nf4 {
  static constexpr const char* name = "nf4";
  static constexpr float zero = 0.0f;
  static constexpr bool integer_levels = false;
  static constexpr float scale_divisor = 1.0f;
  static constexpr float values[16] = {
      -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
      -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
      0.07958029955625534f, 0.16093020141124725f, 0.24611230731010437f, 0.33791524171829224f,
      0.44070982933044006f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};
  static constexpr const float* levels = values;
};
// FP4 E2M1 (sign, 2 exponent bits, 1 mantissa bit; OCP MX element): code s|e e|m, values
// +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}. Every 2 * value is an integer, so the stored level is
// 2 * value + 12 (in [0, 24]) with zero 12 and the STORED SCALE IS HALF the e2m1 scale:
// weight = (d / 2) * (level - 12) = d * value. (Halving an fp16 scale is exact unless it is
// subnormal; quantize<P> fits the stored scale directly.)
struct fp4_e2m1 {
  static constexpr const char* name = "fp4";
  static constexpr float zero = 12.0f;
  static constexpr bool integer_levels = true;
  static constexpr float scale_divisor = 2.0f;
  static constexpr float values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                       -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  static constexpr float levels[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
};
// llama.cpp IQ4_NL: 16 non-uniform int8 values. The stored level is value + 128 (in [1, 241]),
// zero 128, so weight = d * (level - 128) = d * value exactly in float.
struct iq4_nl {
  static constexpr const char* name = "iq4nl";
  static constexpr float zero = 128.0f;
  static constexpr bool integer_levels = true;
  static constexpr float scale_divisor = 1.0f;
  static constexpr float values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                       1,    13,   25,  38,  53,  69,  89,  113};
  static constexpr float levels[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                       129, 141, 153, 166, 181, 197, 217, 241};
};
}  // namespace book

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
  // LUT-GEMV needs weights linear in the code bits (bit-serial tables); a codebook does not,
  // and 8-bit codes would overflow the int16 block accumulators.
  static constexpr bool lut_gemv_capable = bits <= 5;
  // codebook formats: their book's name token (nullptr for the linear formats)
  static constexpr bool is_codebook = false;
  static constexpr const char* book_name = nullptr;
  // Group parameters. `min_form`: the second per-group parameter is an additive minimum m and
  // value(scale, m, code) = scale * level(code) + m (Q4NX); otherwise it is the zero above.
  // `bf16_params`: the packed blob stores scale and zero/min as bf16 instead of fp16.
  // `super_params`: super-group parameter slots (the K-quants): a group's slot holds an int8
  // sub-scale code (and an int8 minimum code), and every super-group of 256 k of a row an fp32
  // super-scale (and super-minimum); the group's scale is their product, exact in fp32.
  static constexpr bool min_form = false;
  static constexpr bool bf16_params = false;
  static constexpr bool super_params = false;
};

// Codebooks: the 4-bit plane structure of uint_sym<4> with the book's levels and zero.
template <class Book>
struct format_traits<fmt::codebook4<Book>> : format_traits<fmt::uint_sym<4>> {
  using book = Book;
  static constexpr bool is_codebook = true;
  static constexpr const char* book_name = Book::name;
  static constexpr float sym_zero = Book::zero;
  static constexpr bool integer_levels = Book::integer_levels;
  static constexpr float level(int code) { return Book::levels[code]; }
  static constexpr float value(float scale, float zero, int code) { return scale * (level(code) - zero); }
  static constexpr bool lut_gemv_capable = false;
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
  static_assert(G >= 16 && G <= 256 && (G & (G - 1)) == 0,
                "lutkit: group<G> needs G a power of two in [16, 256] (16: llama.cpp's Q6_K sub-blocks)");
  static constexpr int group_k = G;
  static constexpr bool tensor = false;
};

// ---------------------------------------------------------------- table layouts
namespace table {
// lut4<Entry, Mirror, WholePlanes>: 4 activations per index -> 16 entries of type Entry (int8_t or
// int16_t). Mirror: entries hold sum((bit_i - 1/2) x_i) (sign-symmetric, half the range, one more
// bit of table precision); the kernel adds the -1/2 sum(x) bias once per group, not once per plane.
// WholePlanes (int16 entries; 0: every plane): the kernel sums both bytes of an entry (hi, lo:
// tiling_spec::table_qmax) for the top WholePlanes bit planes only, and the high byte alone, an
// int8 table at 256 times the int16 step, for the planes below, whose weights 2^p make their
// rounding count for little: lookups of the low bytes saved, error between int16's and int8's
// (docs/llama_formats.md, "Accuracy"). The planes below must fill whole plane pairs (planes -
// WholePlanes even) where the layout pairs planes (pshufb order).
template <class Entry, bool Mirror, int WholePlanes = 0>
struct lut4 {
  static_assert(std::is_same_v<Entry, int8_t> || std::is_same_v<Entry, int16_t>,
                "lutkit: table entries are int8_t or int16_t");
  static_assert(WholePlanes >= 0 && (WholePlanes == 0 || std::is_same_v<Entry, int16_t>),
                "lutkit: WholePlanes chooses among the two bytes of int16 entries");
  using entry_type = Entry;
  static constexpr int entry_bits = int(sizeof(Entry) * 8);
  static constexpr bool mirror = Mirror;
  static constexpr int index_bits = 4;
  static constexpr int whole_planes = WholePlanes;
};
}  // namespace table

}  // namespace lutkit
