// The policy list every differential test (and the benchmark's correctness spot check) walks.
// It covers every bit width, both symmetries, every group shape and every table layout.
#pragma once
#include <cstdint>
#include <tuple>
#include <utility>

#include <lutkit/core/concepts.hpp>
#include <lutkit/core/policy.hpp>

namespace lutkit_test {
using namespace lutkit;
using i8 = table::lut4<int8_t, false>;
using i8m = table::lut4<int8_t, true>;
using i16 = table::lut4<int16_t, false>;
using i16m = table::lut4<int16_t, true>;

using policy_list = std::tuple<
    policy<fmt::uint_asym<2>, group<64>, i8>,  // the decode workhorse (W2 g64 asym)
    policy<fmt::uint_asym<2>, group<64>, i8m>,
    policy<fmt::uint_sym<2>, group<128>, i8m>,
    policy<fmt::uint_asym<2>, group<256>, i8>,
    policy<fmt::uint_sym<2>, per_tensor, i16m>,
    policy<fmt::uint_asym<1>, group<32>, i8>,
    policy<fmt::uint_sym<1>, per_channel, i8m>,
    policy<fmt::uint_sym<1>, group<64>, i8>,
    policy<fmt::uint_asym<1>, group<256>, i16m>,
    policy<fmt::uint_asym<3>, group<64>, i8m>,
    policy<fmt::uint_sym<3>, group<256>, i8>,
    policy<fmt::uint_asym<3>, per_channel, i16>,
    policy<fmt::uint_asym<4>, group<64>, i8>,
    policy<fmt::uint_sym<4>, group<32>, i8m>,
    policy<fmt::uint_asym<4>, group<128>, i16>,
    policy<fmt::uint_sym<4>, per_channel, i8>,
    policy<fmt::ternary, per_tensor, i8>,
    policy<fmt::ternary, per_channel, i8>>;

inline constexpr std::size_t policy_count = std::tuple_size_v<policy_list>;

// Calls f.template operator()<P>() for the policies with index in [Begin, End).
template <std::size_t Begin, std::size_t End, class F>
void for_policies(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f.template operator()<std::tuple_element_t<Begin + I, policy_list>>(), ...);
  }(std::make_index_sequence<End - Begin>{});
}

// The dequant-GEMM / FusedDQP policy list: every LUT-GEMV policy (same blobs) plus formats only
// the dequantizing kernels serve.
using dq_policy_list = policy_list;
inline constexpr std::size_t dq_policy_count = std::tuple_size_v<dq_policy_list>;

template <std::size_t Begin, std::size_t End, class F>
void for_dq_policies(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f.template operator()<std::tuple_element_t<Begin + I, dq_policy_list>>(), ...);
  }(std::make_index_sequence<End - Begin>{});
}
}  // namespace lutkit_test
