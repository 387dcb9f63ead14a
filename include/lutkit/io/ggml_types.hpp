// lutkit — the tensor types of llama.cpp's ggml library, as GGUF files number them: the type id, its
// name, and the block geometry (elements per block, bytes per block) from which a tensor's byte
// size follows. Ids that ggml has retired (4, 5, 31-33, 36-38) and ids past the table are unknown.
// Used by the GGUF reader and writer (io/gguf.hpp, io/gguf_writer.hpp) and the block
// dequantizers (io/ggml_blocks.hpp); docs/gguf.md lists the table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lutkit {

// The ggml type id of a tensor (the uint32 in a GGUF tensor info).
enum class ggml_type : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq2_xxs = 16,
  iq2_xs = 17,
  iq3_xxs = 18,
  iq1_s = 19,
  iq4_nl = 20,
  iq3_s = 21,
  iq2_s = 22,
  iq4_xs = 23,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  iq1_m = 29,
  bf16 = 30,
  tq1_0 = 34,
  tq2_0 = 35,
  mxfp4 = 39,
  nvfp4 = 40,
  q1_0 = 41,
  q2_0 = 42,
};

// A type's block: `block_elems` consecutive elements of a row stored in `block_bytes` bytes.
// Plain types (F32, F16, BF16, I8...) have blocks of one element.
struct ggml_type_info {
  ggml_type type;
  std::string_view name;  // llama.cpp's spelling ("q4_K", "iq4_nl", "bf16")
  uint32_t block_elems;
  uint32_t block_bytes;
};

namespace detail {
inline constexpr ggml_type_info ggml_type_table[] = {
    {ggml_type::f32, "f32", 1, 4},          {ggml_type::f16, "f16", 1, 2},
    {ggml_type::q4_0, "q4_0", 32, 18},      {ggml_type::q4_1, "q4_1", 32, 20},
    {ggml_type::q5_0, "q5_0", 32, 22},      {ggml_type::q5_1, "q5_1", 32, 24},
    {ggml_type::q8_0, "q8_0", 32, 34},      {ggml_type::q8_1, "q8_1", 32, 36},
    {ggml_type::q2_k, "q2_K", 256, 84},     {ggml_type::q3_k, "q3_K", 256, 110},
    {ggml_type::q4_k, "q4_K", 256, 144},    {ggml_type::q5_k, "q5_K", 256, 176},
    {ggml_type::q6_k, "q6_K", 256, 210},    {ggml_type::q8_k, "q8_K", 256, 292},
    {ggml_type::iq2_xxs, "iq2_xxs", 256, 66}, {ggml_type::iq2_xs, "iq2_xs", 256, 74},
    {ggml_type::iq3_xxs, "iq3_xxs", 256, 98}, {ggml_type::iq1_s, "iq1_s", 256, 50},
    {ggml_type::iq4_nl, "iq4_nl", 32, 18},  {ggml_type::iq3_s, "iq3_s", 256, 110},
    {ggml_type::iq2_s, "iq2_s", 256, 82},   {ggml_type::iq4_xs, "iq4_xs", 256, 136},
    {ggml_type::i8, "i8", 1, 1},            {ggml_type::i16, "i16", 1, 2},
    {ggml_type::i32, "i32", 1, 4},          {ggml_type::i64, "i64", 1, 8},
    {ggml_type::f64, "f64", 1, 8},          {ggml_type::iq1_m, "iq1_m", 256, 56},
    {ggml_type::bf16, "bf16", 1, 2},        {ggml_type::tq1_0, "tq1_0", 256, 54},
    {ggml_type::tq2_0, "tq2_0", 256, 66},   {ggml_type::mxfp4, "mxfp4", 32, 17},
    {ggml_type::nvfp4, "nvfp4", 64, 36},    {ggml_type::q1_0, "q1_0", 128, 18},
    {ggml_type::q2_0, "q2_0", 64, 18},
};
}  // namespace detail

// The type with id `id`, or nothing for an id ggml does not define (retired or unknown).
constexpr std::optional<ggml_type_info> ggml_type_by_id(uint32_t id) {
  for (const auto& t : detail::ggml_type_table)
    if (uint32_t(t.type) == id) return t;
  return std::nullopt;
}
// The block geometry of a known type (an unknown enumerator gives block_elems = 0).
constexpr ggml_type_info ggml_info(ggml_type t) {
  const auto i = ggml_type_by_id(uint32_t(t));
  return i ? *i : ggml_type_info{t, "unknown", 0, 0};
}
constexpr std::string_view ggml_type_name(ggml_type t) { return ggml_info(t).name; }
// Every known type, in id order.
constexpr const auto& ggml_types() { return detail::ggml_type_table; }

}  // namespace lutkit
