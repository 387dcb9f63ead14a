// The HVX suite's policy list and test-vector file format, shared by the host generator
// (make_hvx_vectors.cpp) and the Hexagon runner (test_hvx.cpp). Freestanding.
#pragma once
#include <cstddef>
#include <cstdint>

#include <lutkit/core/concepts.hpp>

namespace lutkit_hvx_test {
using namespace lutkit;

template <class F, class G, class T>
struct entry {
  using fmt = F;
  using group = G;
  using table = T;
};
template <class... E>
struct list {
  static constexpr int size = int(sizeof...(E));
};

using i8 = table::lut4<int8_t, false>;
using i8m = table::lut4<int8_t, true>;
// every bit width 1-4 and ternary, both symmetries, groups 32..256, per-channel and per-tensor,
// plain and mirrored tables (the HVX LUT-GEMV takes int8-table policies)
using gemv_policies = list<entry<fmt::uint_asym<1>, group<32>, i8>,       //
                           entry<fmt::uint_sym<1>, per_channel, i8m>,     //
                           entry<fmt::uint_asym<2>, group<64>, i8>,       //
                           entry<fmt::uint_asym<2>, group<64>, i8m>,      //
                           entry<fmt::uint_sym<2>, group<128>, i8m>,      //
                           entry<fmt::uint_asym<3>, group<64>, i8m>,      //
                           entry<fmt::uint_sym<3>, group<256>, i8>,       //
                           entry<fmt::uint_asym<4>, group<64>, i8>,       //
                           entry<fmt::uint_sym<4>, group<32>, i8m>,       //
                           entry<fmt::uint_sym<4>, per_channel, i8>,      //
                           entry<fmt::ternary, per_tensor, i8>,           //
                           entry<fmt::ternary, per_channel, i8m>>;

// The entries the T-MAN blob dequantizer takes (hvx::dequant_fp16): symmetric integer, 2-4 bits.
template <class E>
constexpr bool tman_dequant_entry = !format_traits<typename E::fmt>::is_ternary &&
                                    !format_traits<typename E::fmt>::asymmetric && format_traits<typename E::fmt>::bits >= 2;

// Calls f.template operator()<E>() for entry i of the list; false if there is none.
template <class... E, class F>
bool with_entry(list<E...>, int i, F&& f) {
  int j = 0;
  bool hit = false;
  ((j++ == i ? (f.template operator()<E>(), hit = true) : false), ...);
  return hit;
}

// The file: records, each 128-byte aligned, the last of kind end. A record is a 128-byte header
// and sections each padded to 128 bytes:
//   gemv   [packed data][x: N * ldx floats][ref: N * M floats][bound: N * M floats]
//          [model: N * M floats][model bound: N * M floats]  (make_hvx_vectors.cpp: hvx_model)
//   q4_0   [super-groups: M * row_bytes(K)][expected fp16: M * K]
//   exp    [table: 32768 fp16][inputs: N fp16][expected: N fp16]      (M = K = 0)
//   tman   [packed data][expected fp16, transposed: K x M]               (policy: gemv_policies)
enum kind : uint32_t { k_end = 0, k_gemv = 1, k_q4_0 = 2, k_exp = 3, k_tman = 4 };
struct record {
  uint32_t kind, policy, M, K, N, row_begin, row_end, ldx;
  uint32_t section[6];  // section byte sizes before padding
  uint32_t total;       // record bytes, header included
  uint32_t seed;
  uint32_t pad[16];
};
static_assert(sizeof(record) == 128);
constexpr uint32_t pad128(uint32_t n) { return (n + 127u) & ~127u; }

}  // namespace lutkit_hvx_test
