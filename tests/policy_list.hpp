// The policy list every differential test (and the benchmark's correctness spot check) walks.
// It covers every bit width, both symmetries, every group shape and every table layout.
#pragma once
#include <cstdint>
#include <tuple>
#include <utility>

#include <lutkit/core/concepts.hpp>
#include <lutkit/core/policy.hpp>
#include <lutkit/quant/kquant.hpp>
#include <lutkit/quant/q4nx.hpp>

namespace lutkit_test {
using namespace lutkit;
using i8 = table::lut4<int8_t, false>;
using i8m = table::lut4<int8_t, true>;
using i16 = table::lut4<int16_t, false>;
using i16m = table::lut4<int16_t, true>;
// int16 tables with whole entries for the top planes only (the default from 3 bits: table::default_for)
using i16t1 = table::lut4<int16_t, false, 1>;
using i16mt2 = table::lut4<int16_t, true, 2>;

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
    policy<fmt::uint_sym<3>, group<64>, i16t1>,
    policy<fmt::uint_asym<4>, group<64>, i8>,
    policy<fmt::uint_sym<4>, group<32>, i8m>,
    policy<fmt::uint_asym<4>, group<128>, i16>,
    policy<fmt::uint_asym<4>, group<64>, i16mt2>,
    policy<fmt::uint_sym<4>, per_channel, i8>,
    policy<fmt::ternary, per_tensor, i8>,
    policy<fmt::ternary, per_channel, i8>>;

inline constexpr std::size_t policy_count = std::tuple_size_v<policy_list>;

// The dequant kernels' list: every LUT policy above plus the formats only they run (codebooks,
// 8 bits, Q4NX's min form with bf16 parameters) and the llama.cpp block shapes (whose bit-plane
// formats the decode tests also run through the LUT-GEMV: Q5_0, Q6_K, Q3_K, and the min-form
// Q5_1, Q5_K, Q2_K). The table layout is irrelevant to the formats the LUT-GEMV cannot run but
// part of the policy type (i8 there); Q5_0 and Q5_K have their default int16 tables
// (table::default_for: whole entries for the top three planes), Q5_1 the int8 opt-in.
template <class... Extra>
struct append_policies;
template <class... P, class... Extra>
struct append_policies<std::tuple<P...>, Extra...> {
  using type = std::tuple<P..., Extra...>;
};
using dq_policy_list = append_policies<
    policy_list, policy<fmt::codebook4<book::nf4>, group<64>, i8>,
    policy<fmt::codebook4<book::fp4_e2m1>, group<32>, i8>,
    policy<fmt::codebook4<book::iq4_nl>, group<32>, i8>,  // llama.cpp IQ4_NL blocks
    policy<fmt::uint_sym<8>, group<32>, i8>,              // llama.cpp Q8_0 blocks
    policy<fmt::uint_sym<4>, group<32>, i8>,              // llama.cpp Q4_0 blocks
    policy<fmt::q4nx, group<32>, i8>,                     // Q4NX: bf16 scale and min per 32
    policy<fmt::q4_1, group<32>, i8>,                     // llama.cpp Q4_1 blocks: fp16 scale and min per 32
    policy<fmt::q4_k, group<32>, i8>,                     // llama.cpp Q4_K: fp32 scale and min per 32
    policy<fmt::q6_k, group<16>, i8m>,                    // llama.cpp Q6_K: 6 bit planes, fp32 scale per 16
    policy<fmt::uint_sym<5>, group<32>>,                  // llama.cpp Q5_0 blocks: 5 bit planes, fp16 scale per 32
    policy<fmt::q3_k, group<16>, i8m>,                    // llama.cpp Q3_K: 3 bit planes, fp32 scale per 16
    policy<fmt::q5_1, group<32>, i8m>,                    // llama.cpp Q5_1: 5 bit planes, fp16 scale and min per 32
    policy<fmt::q5_k, group<32>>,                         // llama.cpp Q5_K: 5 bit planes, fp32 scale and min per 32
    policy<fmt::q2_k, group<16>, i8m>>::type;             // llama.cpp Q2_K: 2 bit planes, fp32 scale and min per 16
inline constexpr std::size_t dq_policy_count = std::tuple_size_v<dq_policy_list>;

// The policies of a list with their target replaced (the layout tests run every target's layout).
template <class List, class Target>
struct retarget;
template <class... P, class Target>
struct retarget<std::tuple<P...>, Target> {
  using type = std::tuple<policy<typename P::format, typename P::group_shape, typename P::table_layout, Target>...>;
};
template <class List, class Target>
using retargeted = typename retarget<List, Target>::type;

// Calls f.template operator()<P>() for the policies with index in [Begin, End).
template <std::size_t Begin, std::size_t End, class F>
void for_policies(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f.template operator()<std::tuple_element_t<Begin + I, policy_list>>(), ...);
  }(std::make_index_sequence<End - Begin>{});
}

// Calls f.template operator()<P>() for the dq_policy_list policies with index in [Begin, End).
template <std::size_t Begin, std::size_t End, class F>
void for_dq_policies(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f.template operator()<std::tuple_element_t<Begin + I, dq_policy_list>>(), ...);
  }(std::make_index_sequence<End - Begin>{});
}

// Calls f.template operator()<P>() for every policy of a tuple type (e.g. dq_policy_list).
template <class List, class F>
void for_each_policy_in(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f.template operator()<std::tuple_element_t<I, List>>(), ...);
  }(std::make_index_sequence<std::tuple_size_v<List>>{});
}
}  // namespace lutkit_test
