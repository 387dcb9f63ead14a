// lutkit — the fp16 exp table of [TTS-NPU] §5.2.1 on Hexagon HVX: exp of a non-positive fp16 input
// (safe softmax: inputs are x - max <= 0) is entry (code & 0x7FFF) of a 32768-entry fp16 table
// (64 KiB, in VTCM on a device), read by vgather — 64 halfword lookups per instruction, the
// sign bit dropped and the code doubled into a byte offset. The table is the host's table exp
// (attention/exp.hpp) rounded to fp16: lutkit::exp_table_f16 builds it (hosted), or the engine
// ships it.
#pragma once
#include "hvx.hpp"

namespace lutkit::hvx {

inline constexpr std::size_t exp_table_entries = 32768;

namespace detail {
// 64 codes: drop the sign, double into byte offsets, gather from the table
__attribute__((noinline)) inline void exp_gather64(const void* in, HVX_Vector* out, const std::uint16_t* table) {
  const HVX_Vector off = Q6_Vh_vasl_VhR(Q6_V_vand_VV(vload(in), splat_h(0x7FFF)), 1);
  Q6_vgather_ARMVh(out, reinterpret_cast<std::uintptr_t>(table), int(exp_table_entries * 2 - 1), off);
}
}  // namespace detail

// out[i] = table[in[i] & 0x7FFF] for n fp16 codes; in, out and table 128-byte aligned, n any.
inline status exp_by_table(const std::uint16_t* in, std::uint16_t* out, std::size_t n, const std::uint16_t* table) {
  if (in == nullptr || out == nullptr || table == nullptr) return status::null_pointer;
  if (!detail::aligned128(in) || !detail::aligned128(out) || !detail::aligned128(table)) return status::bad_alignment;
  alignas(128) std::uint16_t tail_in[64], tail_out[64];
  for (std::size_t i = 0; i < n; i += 64) {
    const bool full = n - i >= 64;
    const std::uint16_t* src = in + i;
    if (!full) {
      for (std::size_t j = 0; j < 64; ++j) tail_in[j] = i + j < n ? in[i + j] : 0;
      src = tail_in;
    }
    HVX_Vector* dst = full ? reinterpret_cast<HVX_Vector*>(out + i) : reinterpret_cast<HVX_Vector*>(tail_out);
    detail::exp_gather64(src, dst, table);
    if (!full)
      for (std::size_t j = 0; i + j < n; ++j) out[i + j] = tail_out[j];
  }
  return status::ok;
}

}  // namespace lutkit::hvx
