// Differential fuzz of the dequant-GEMM, second half of the dequant policy list.
#include "randomized_dequant_gemm.hpp"

TEST_CASE("dequant_gemm matches the reference within the bound (b)", "[dequant_gemm][fuzz]") {
  lutkit_test::fuzz_dq_slice<lutkit_test::dq_policy_count / 2, lutkit_test::dq_policy_count>();
}
