// lutkit — the Hexagon HVX target (v67+, 128-byte vectors, integer HVX): what its kernels share.
//
// Freestanding: these headers include no hosted header and throw nothing; they compile with
// `-ffreestanding -fno-exceptions` into a DSP library (docs/targets/hvx.md). Errors are returned
// as a `status`, never thrown; a kernel that returns anything but status::ok has written nothing.
//
// A kernel is instantiated for a *spec carrier*: any type with `static constexpr tiling_spec spec`
// laid out for target::hvx — a lutkit::policy<..., target::hvx> in a hosted build, or
// hvx::spec_of<Fmt, Group, Table> where policy.hpp (Boost.PFR, <string>) is not available. A
// carrier for another target is a compile-time error: an hvx kernel never reads a host blob.
#pragma once
#if !defined(__hexagon__) || !defined(__HVX__)
#error "lutkit/targets/hvx: compile for Hexagon with HVX (-mv67 -mhvx -mhvx-length=128b)"
#endif
#include <hexagon_types.h>
#include <hvx_hexagon_protos.h>

#include <cstddef>
#include <cstdint>

#include "../../core/half.hpp"
#include "../../core/tiling_spec.hpp"

namespace lutkit::hvx {

inline constexpr int vector_bytes = 128;

enum class status : int {
  ok = 0,
  null_pointer,      // a required pointer is null
  bad_shape,         // M, K or N is 0, K is not a multiple of the group, or a row range is empty / past M
  bad_stride,        // ldx < K or ldy < M
  bad_alignment,     // packed data, tables or a vector buffer not 128-byte aligned
  buffer_too_small,  // the caller's buffer is smaller than the *_bytes function asks for
};

constexpr const char* status_name(status s) {
  switch (s) {
    case status::ok: return "ok";
    case status::null_pointer: return "null pointer";
    case status::bad_shape: return "bad shape";
    case status::bad_stride: return "bad stride";
    case status::bad_alignment: return "buffer not 128-byte aligned";
    case status::buffer_too_small: return "buffer too small";
  }
  return "unknown status";
}

// The spec carrier for builds without policy.hpp: the same spec policy<Fmt, Group, Table,
// target::hvx>::spec holds.
template <class Fmt, class Group, class Table>
struct spec_of {
  static constexpr tiling_spec spec = make_tiling_spec<Fmt, Group, Table, target::hvx>();
  static_assert(spec.valid(), "lutkit: tiling spec violates its constraints");
};

template <class P>
constexpr void require_hvx_spec() {
  static_assert(P::spec.vlut16() && P::spec.rows_per_tile == 128,
                "lutkit::hvx: this policy's blob is laid out for another target (the policy must name target::hvx)");
}

// K is whole groups (group_k 0: any K)
template <int G>
constexpr bool k_fits_groups(std::size_t K) {
  if constexpr (G > 0) return K % std::size_t(G) == 0;
  return true;
}

namespace detail {
// Vector loads and stores of memory also read or written as scalars (the blob's bytes, tables
// staged by the scalar unit, accumulators read back): a may_alias vector type, so the compiler's
// type-based alias analysis cannot reorder them against the scalar accesses.
typedef long __attribute__((__vector_size__(128), __may_alias__)) vector_alias;
typedef long __attribute__((__vector_size__(128), __may_alias__, __aligned__(1))) vector_alias_u;
inline HVX_Vector vload(const void* p) { return *static_cast<const vector_alias*>(p); }
inline HVX_Vector vloadu(const void* p) { return *static_cast<const vector_alias_u*>(p); }
inline void vstore(void* p, HVX_Vector v) { *static_cast<vector_alias*>(p) = v; }
inline void vstoreu(void* p, HVX_Vector v) { *static_cast<vector_alias_u*>(p) = v; }
inline bool aligned128(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 127u) == 0; }
inline HVX_Vector splat_h(int v) { return Q6_Vh_vsplat_R(v & 0xFFFF); }
inline HVX_Vector splat_b(int v) { return Q6_Vb_vsplat_R(v & 0xFF); }
inline bool finite(float f) {
  std::uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return (u & 0x7F800000u) != 0x7F800000u;
}
inline float fabs_(float f) { return f < 0.f ? -f : f; }
// round half away from zero (the tables' error bound allows any rounding within half a step)
inline int round_i(float v) { return int(v < 0.f ? v - 0.5f : v + 0.5f); }
inline float nan_() { return __builtin_nanf(""); }
}  // namespace detail

}  // namespace lutkit::hvx
