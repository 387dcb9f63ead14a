// The kernels of every policy in the test lists are compiled once, in tests/instances_*.cpp
// (LUTKIT_INSTANTIATE_*); every other test translation unit sees them declared extern here and
// compiles only its own test code. Policies are named by their index in the lists.
#pragma once
#include <tuple>

#include <lutkit/instances.hpp>

#include "policy_list.hpp"

#define LUTKIT_TEST_LUT_P(i) std::tuple_element_t<i, lutkit_test::policy_list>
#define LUTKIT_TEST_DQ_P(i) std::tuple_element_t<i, lutkit_test::dq_policy_list>

// every index of each list, in order
#define LUTKIT_TEST_LUT_INDICES(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19)
#define LUTKIT_TEST_DQ_ONLY_INDICES(X) \
  X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32) X(33)
static_assert(lutkit_test::policy_count == 20 && lutkit_test::dq_policy_count == 34,
              "a policy was added to tests/policy_list.hpp: list its index here and in tests/instances_*.cpp");

#define LUTKIT_TEST_EXTERN_LUT(i) LUTKIT_EXTERN_LUT(LUTKIT_TEST_LUT_P(i)) LUTKIT_EXTERN_DQ(LUTKIT_TEST_LUT_P(i))
#define LUTKIT_TEST_EXTERN_DQ(i) LUTKIT_EXTERN_DQ(LUTKIT_TEST_DQ_P(i))
LUTKIT_TEST_LUT_INDICES(LUTKIT_TEST_EXTERN_LUT)
LUTKIT_TEST_DQ_ONLY_INDICES(LUTKIT_TEST_EXTERN_DQ)

#define LUTKIT_TEST_INSTANTIATE_LUT(i) LUTKIT_INSTANTIATE_LUT(LUTKIT_TEST_LUT_P(i))
#define LUTKIT_TEST_INSTANTIATE_DQ(i) LUTKIT_INSTANTIATE_DQ(LUTKIT_TEST_DQ_P(i))
